//! A gradient job's roles on a real network: workers on any hosts, the
//! host fallback on the card's host.
//!
//! **The fallback** ([`fallback`]) configures the card through its
//! registers (its addresses, the fallback's own address, the job's
//! priority), waits until every worker has said `JOIN` — with the MAC, IP
//! and UDP port it listens on — writes those into the card's worker table
//! (`net.WT_*`) and answers `START` with the card's slot count and chunk
//! shape. It then merges every EVICT and FALLBACK partial the card sends it
//! (`weft_model::grad_agg::host::HostMerge`); a chunk it completes goes to
//! every worker as a RESULT, as the card's own would. Once every worker said
//! `DONE` it flushes the card and reports its counters.
//!
//! **A worker** ([`worker`]) streams its tensor, chunk by chunk, to the
//! card's gradient port, at most the card's slot count of chunks in flight
//! (so a chunk never meets its own job's previous occupant of its slot),
//! and takes each chunk's RESULT — from the card, or from the fallback —
//! checking it against the exact sum. A DATA packet unanswered past its
//! retransmission timeout (RFC 6298, [`crate::kv::recovery::Recovery`], in
//! microseconds of wall time) is sent again: the card drops a worker's
//! duplicate by the slot's bitmap. Values are generated from a seed, so
//! every worker knows every other worker's values and so the exact result:
//! the job is exact or it fails.
//!
//! The control messages (`JOIN`, `START`, `DONE`) are 24-byte UDP payloads
//! to and from the fallback's port, described in `docs/transports.md`.

use super::report::CardCounters;
use super::{headroom, GradError};
use crate::card::Card;
use crate::kv::recovery::Recovery;
use crate::udp;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, UdpSocket};
use std::time::{Duration, Instant};
use weft_driver::RegisterAccess;
use weft_model::grad_agg::host::HostMerge;
use weft_model::grad_agg::model::counter;
use weft_model::grad_agg::packet::{self, flags, Geometry, Header};
use weft_model::wire::{self, Endpoint, Mac};
use weft_regs::{grad as regs, net};

/// `JOIN` (worker to fallback); with [`FLAG_ACK`], `START` (the answer).
pub const FLAG_JOIN: u8 = 0x40;
/// `DONE` (worker to fallback); with [`FLAG_ACK`], its answer.
pub const FLAG_DONE: u8 = 0x20;
/// `WANT` (worker to fallback, and fallback to the other workers): a
/// worker lacks chunk `a`'s RESULT after retransmitting its DATA.
pub const FLAG_WANT: u8 = 0x10;
/// The answer bit.
pub const FLAG_ACK: u8 = 0x02;
/// Bytes of a control message.
pub const CONTROL_BYTES: usize = 24;

/// A control message between a worker and the fallback.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Control {
    /// [`FLAG_JOIN`] or [`FLAG_DONE`], with [`FLAG_ACK`] on answers.
    pub flags: u8,
    /// Job id.
    pub job: u16,
    /// Worker id.
    pub worker: u8,
    /// Workers of the job.
    pub workers: u8,
    /// JOIN: the worker's UDP port; START: the card's slots; DONE: chunks;
    /// WANT: the chunk.
    pub a: u32,
    /// START: lanes << 8 | value beats; otherwise 0.
    pub b: u32,
    /// JOIN: the worker's MAC.
    pub mac: Mac,
}

impl Control {
    /// Encode.
    pub fn encode(&self) -> Vec<u8> {
        let mut v = vec![0u8; CONTROL_BYTES];
        v[0] = packet::VERSION;
        v[1] = self.flags;
        v[4..6].copy_from_slice(&self.job.to_le_bytes());
        v[6] = self.worker;
        v[7] = self.workers;
        v[8..12].copy_from_slice(&self.a.to_le_bytes());
        v[12..16].copy_from_slice(&self.b.to_le_bytes());
        v[16..22].copy_from_slice(&self.mac);
        v
    }

    /// Decode; `None` if `b` is not a control message.
    pub fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != CONTROL_BYTES || b[0] != packet::VERSION {
            return None;
        }
        let kind = b[1] & !FLAG_ACK;
        if kind != FLAG_JOIN && kind != FLAG_DONE && kind != FLAG_WANT {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Some(Self {
            flags: b[1],
            job: u16::from_le_bytes([b[4], b[5]]),
            worker: b[6],
            workers: b[7],
            a: u32_at(8),
            b: u32_at(12),
            mac: b[16..22].try_into().ok()?,
        })
    }
}

/// Worker `worker`'s fixed-point value `i` of `chunk` in a job of
/// `workers` workers seeded `seed`: a hash, spread over the whole range
/// [`headroom`] allows, so the card's 32-bit sums are exercised to their
/// limit and still exact.
pub fn value(seed: u64, worker: u8, workers: u8, chunk: u32, i: usize) -> i32 {
    let mut h = seed
        ^ (worker as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (chunk as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
        ^ (i as u64).wrapping_mul(0x1656_67b1_9e37_79f9);
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    let span = 2 * headroom(workers) as u64 + 1;
    ((h % span) as i64 - headroom(workers) as i64) as i32
}

/// The exact sum of `chunk` over every worker (fits an `i32` by
/// [`headroom`]).
pub fn exact(seed: u64, workers: u8, chunk: u32, values: usize) -> Vec<i32> {
    (0..values)
        .map(|i| {
            (0..workers)
                .map(|w| value(seed, w, workers, chunk, i) as i64)
                .sum::<i64>() as i32
        })
        .collect()
}

fn io(what: impl std::fmt::Display, e: std::io::Error) -> GradError {
    GradError::Unsupported(format!("{what}: {e}"))
}

/// How a worker runs.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// The card's gradient port (`IP:22343`).
    pub card: SocketAddr,
    /// The job's fallback on the card's host.
    pub fallback: SocketAddr,
    /// Where to bind (`0.0.0.0:0`: any).
    pub bind: SocketAddr,
    /// Job id (0..16).
    pub job: u16,
    /// This worker's id.
    pub worker: u8,
    /// Workers of the job.
    pub workers: u8,
    /// Values per iteration's tensor.
    pub values: usize,
    /// Iterations: one tensor each.
    pub iterations: u32,
    /// Seed of every worker's values.
    pub seed: u64,
    /// Chunks in flight at most (also bounded by the card's slots).
    pub window: u32,
    /// Retransmission timer floor.
    pub min_rto: Duration,
    /// Its ceiling and first value.
    pub max_rto: Duration,
    /// Transmissions of one chunk before giving up.
    pub max_tries: u32,
    /// Give up when the fallback does not answer for this long.
    pub timeout: Duration,
    /// Traffic class of the worker's packets (0..=7, DSCP CS`class`): the
    /// strict-priority queue a switch in front of the card serves them
    /// from, as `srpt` ranks jobs (`weft_fw::grad::Policy::traffic_classes`).
    /// 0 by default, the best-effort class.
    pub class: u8,
}

impl WorkerOptions {
    /// Defaults for `worker` of `workers` in `job`.
    pub fn new(card: SocketAddr, fallback: SocketAddr, job: u16, worker: u8, workers: u8) -> Self {
        Self {
            card,
            fallback,
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            job,
            worker,
            workers,
            values: 4096,
            iterations: 4,
            seed: 1,
            window: 64,
            min_rto: Duration::from_micros(500),
            max_rto: Duration::from_secs(1),
            max_tries: 200,
            timeout: Duration::from_secs(60),
            class: 0,
        }
    }
}

/// What a worker did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WorkerStats {
    /// Chunks completed (all iterations).
    pub chunks: u64,
    /// DATA packets sent, retransmissions included.
    pub transmissions: u64,
    /// Retransmissions.
    pub retransmissions: u64,
    /// Chunks whose RESULT came from the card.
    pub from_card: u64,
    /// Chunks whose RESULT came from the host fallback.
    pub from_host: u64,
    /// RESULTs for chunks already complete (ignored).
    pub late_results: u64,
    /// WANTs sent (chunks whose RESULT a peer was asked for).
    pub wants: u64,
    /// Peers' WANTs this worker answered.
    pub answered: u64,
    /// NACKs from the card naming a chunk of this worker's as missing.
    pub nacks: u64,
    /// Smoothed round trip, microseconds.
    pub srtt_us: u64,
    /// Wall time from START to the last RESULT, seconds.
    pub seconds: f64,
}

struct InFlight {
    sent_at: u64,
    prev_sent: Option<u64>,
    tries: u32,
}

/// Answer a peer's WANT, relayed by the fallback, with the RESULT this
/// worker holds (to the fallback, which forwards it).
fn answer_want(
    sock: &UdpSocket,
    c: &Control,
    results: &HashMap<u32, Vec<i32>>,
    answered: &mut u64,
    me: &Control,
    geo: Geometry,
    opts: &WorkerOptions,
) -> Result<(), GradError> {
    if c.flags != FLAG_WANT || c.job != opts.job || c.worker == me.worker {
        return Ok(());
    }
    let Some(sums) = results.get(&c.a) else {
        return Ok(());
    };
    *answered += 1;
    let p = result_packet(geo, opts.job, opts.workers, c.a, sums)?;
    sock.send_to(&p, opts.fallback)
        .map(|_| ())
        .map_err(|e| io(format!("udp to {}", opts.fallback), e))
}

/// A RESULT packet of `chunk`, as the card sends it.
fn result_packet(
    geo: Geometry,
    job: u16,
    workers: u8,
    chunk: u32,
    sums: &[i32],
) -> Result<Vec<u8>, GradError> {
    let h = Header {
        version: packet::VERSION,
        flags: flags::RESULT,
        count: geo.chunk_values() as u16,
        job,
        worker: workers,
        workers,
        chunk,
        bitmap: if workers >= 32 {
            u32::MAX
        } else {
            (1 << workers) - 1
        },
    };
    packet::encode(geo, &h, sums).map_err(|e| GradError::Card(e.to_string()))
}

/// The MAC of the interface this host reaches `to` through.
fn my_mac(bind: SocketAddr, to: SocketAddr) -> Result<(Mac, Ipv4Addr), GradError> {
    let probe = UdpSocket::bind(SocketAddr::new(bind.ip(), 0)).map_err(|e| io("udp", e))?;
    probe
        .connect(to)
        .map_err(|e| io(format!("no route to {to}"), e))?;
    let ip = match probe.local_addr().map_err(|e| io("udp", e))?.ip() {
        std::net::IpAddr::V4(ip) => ip,
        std::net::IpAddr::V6(_) => {
            return Err(GradError::Options(format!("{to}: IPv4 only")));
        }
    };
    let iface = udp::interface_of(ip)
        .ok_or_else(|| GradError::Options(format!("no interface holds {ip}")))?;
    let mac = udp::mac_of(&iface)
        .ok_or_else(|| GradError::Options(format!("interface {iface} has no MAC address")))?;
    Ok((mac, ip))
}

/// Run one worker to the end of its job (see the module docs).
pub fn worker(opts: &WorkerOptions) -> Result<WorkerStats, GradError> {
    if opts.workers == 0 || opts.worker >= opts.workers || opts.workers > packet::MAX_WORKERS {
        return Err(GradError::Options(format!(
            "worker {} of {}: workers are 1..={} and ids 0..workers",
            opts.worker,
            opts.workers,
            packet::MAX_WORKERS
        )));
    }
    if opts.values == 0 || opts.iterations == 0 || opts.window == 0 || opts.max_tries == 0 {
        return Err(GradError::Options(
            "values, iterations, window and max_tries must be positive".into(),
        ));
    }
    let (mac, ip) = my_mac(opts.bind, opts.card)?;
    let sock = udp::bind(SocketAddr::new(ip.into(), opts.bind.port()))
        .map_err(|e| io(format!("udp {ip}"), e))?;
    udp::set_traffic_class(&sock, opts.class)
        .map_err(|e| GradError::Options(format!("traffic class {}: {e}", opts.class)))?;
    let port = sock.local_addr().map_err(|e| io("udp", e))?.port();
    let mut buf = vec![0u8; 65536];

    // JOIN until START.
    let join = Control {
        flags: FLAG_JOIN,
        job: opts.job,
        worker: opts.worker,
        workers: opts.workers,
        a: port as u32,
        b: 0,
        mac,
    };
    let give_up = Instant::now() + opts.timeout;
    let start = 'join: loop {
        if Instant::now() >= give_up {
            return Err(GradError::Unsupported(format!(
                "worker {}: the fallback at {} did not START job {} within {:?} (is `weft grad fallback` running, and have all {} workers joined?)",
                opts.worker, opts.fallback, opts.job, opts.timeout, opts.workers
            )));
        }
        sock.send_to(&join.encode(), opts.fallback)
            .map_err(|e| io(format!("udp to {}", opts.fallback), e))?;
        let wait = Instant::now() + Duration::from_millis(200);
        while let Some((n, from)) =
            udp::recv_until(&sock, &mut buf, wait).map_err(|e| io("udp", e))?
        {
            if let Some(c) = Control::decode(&buf[..n]) {
                if from == opts.fallback && c.flags == FLAG_JOIN | FLAG_ACK && c.job == opts.job {
                    break 'join c;
                }
            }
        }
    };
    let slots = start.a.max(1);
    let geo = Geometry {
        lanes: (start.b >> 8) as usize,
        value_beats: (start.b & 0xff) as usize,
    };
    let cv = geo.chunk_values();
    if cv == 0 || geo.lanes == 0 {
        return Err(GradError::Card(format!(
            "START gave a chunk shape of {:#x}",
            start.b
        )));
    }
    let per_iter = opts.values.div_ceil(cv) as u32;
    let total = per_iter
        .checked_mul(opts.iterations)
        .ok_or_else(|| GradError::Options("too many chunks".into()))?;
    let window = opts.window.min(slots);
    let t0 = Instant::now();
    let now = || t0.elapsed().as_micros() as u64;
    let us = |d: Duration| d.as_micros() as u64;
    let mut rec = Recovery::new(us(opts.min_rto), us(opts.max_rto));
    let mut inflight: BTreeMap<u32, InFlight> = BTreeMap::new();
    // Every chunk's sum, kept: the job's output, and what a peer whose
    // RESULT copy was lost asks for.
    let mut results: HashMap<u32, Vec<i32>> = HashMap::new();
    let mut next = 0u32;
    let mut completed = 0u32;
    let mut st = WorkerStats::default();
    let data = |c: u32| -> Result<Vec<u8>, GradError> {
        let h = Header::data(geo, opts.job, c, opts.worker, opts.workers);
        // The tensor's tail beyond `values` is zero in every worker.
        let k = (c % per_iter) as usize * cv;
        let vals: Vec<i32> = (0..cv)
            .map(|i| {
                if k + i < opts.values {
                    value(opts.seed, opts.worker, opts.workers, c, i)
                } else {
                    0
                }
            })
            .collect();
        packet::encode(geo, &h, &vals).map_err(|e| GradError::Card(e.to_string()))
    };
    let want = |c: u32| -> Vec<i32> {
        let k = (c % per_iter) as usize * cv;
        let mut e = exact(opts.seed, opts.workers, c, cv);
        for (i, x) in e.iter_mut().enumerate() {
            if k + i >= opts.values {
                *x = 0;
            }
        }
        e
    };
    let send = |c: u32, st: &mut WorkerStats| -> Result<(), GradError> {
        st.transmissions += 1;
        sock.send_to(&data(c)?, opts.card)
            .map(|_| ())
            .map_err(|e| io(format!("udp to {}", opts.card), e))
    };
    let mut last_progress = Instant::now();
    while completed < total {
        while next < total && (inflight.len() as u32) < window {
            send(next, &mut st)?;
            inflight.insert(
                next,
                InFlight {
                    sent_at: now(),
                    prev_sent: None,
                    tries: 1,
                },
            );
            next += 1;
        }
        // Loss detection as the key-value flow has it: RACK (a chunk sent
        // before one that has completed, and overdue by a round trip and
        // the reordering window, or passed by three) and one RFC 6298
        // timer, on the oldest chunk in flight. A chunk completes only once
        // every worker's DATA is in, so a slow peer delays every chunk at
        // once, and per-chunk timers would resend the whole window for it.
        let t = now();
        let oldest = inflight.keys().next().copied();
        let fired = inflight
            .values()
            .next()
            .is_some_and(|f| f.sent_at + rec.rto() <= t);
        let mut again = vec![];
        for (&c, f) in inflight.iter() {
            if rec.lost(f.sent_at, t) || (fired && Some(c) == oldest) {
                again.push(c);
            }
        }
        if fired {
            rec.on_timeout();
        }
        for c in again {
            let Some(f) = inflight.get_mut(&c) else {
                continue;
            };
            if f.tries >= opts.max_tries {
                return Err(GradError::Unsupported(format!(
                    "worker {}: chunk {c} unanswered after {} transmissions (is the network losing everything?)",
                    opts.worker, f.tries
                )));
            }
            f.tries += 1;
            f.prev_sent = Some(f.sent_at);
            f.sent_at = t;
            st.retransmissions += 1;
            send(c, &mut st)?;
            // Either this worker's DATA was lost, and the copy completes
            // the chunk on the card, or the chunk completed and this
            // worker's RESULT copy was lost (the card has freed the
            // slot): then a peer that has the sum can say.
            st.wants += 1;
            let w = Control {
                flags: FLAG_WANT,
                a: c,
                ..join
            };
            sock.send_to(&w.encode(), opts.fallback)
                .map_err(|e| io(format!("udp to {}", opts.fallback), e))?;
        }
        let due = inflight
            .values()
            .filter_map(|f| rec.lost_at(f.sent_at))
            .chain(inflight.values().next().map(|f| f.sent_at + rec.rto()))
            .min()
            .unwrap_or(t + 1000);
        let deadline = t0 + Duration::from_micros(due.max(t + 50));
        let mut first = true;
        loop {
            let d = if first { deadline } else { Instant::now() };
            first = false;
            let Some((n, from)) = udp::recv_until(&sock, &mut buf, d).map_err(|e| io("udp", e))?
            else {
                break;
            };
            let b = &buf[..n];
            if from == opts.fallback {
                if let Some(c) = Control::decode(b) {
                    answer_want(&sock, &c, &results, &mut st.answered, &join, geo, opts)?;
                    continue;
                }
            }
            let Ok(p) = packet::decode(geo, b) else {
                continue;
            };
            let h = p.header;
            if h.flags == flags::RESULT | flags::NACK && h.job == opts.job && from == opts.card {
                // The card's slot for the chunk waits on this worker: its
                // DATA was lost (or is still on its way: not within the
                // reordering window). Send it again at once, not at a
                // timeout, and only this worker does.
                if h.bitmap & 1 << opts.worker != 0 {
                    continue;
                }
                st.nacks += 1;
                let t = now();
                if let Some(f) = inflight.get_mut(&h.chunk) {
                    if t >= f.sent_at + rec.reordering_window() && f.tries < opts.max_tries {
                        f.tries += 1;
                        f.prev_sent = Some(f.sent_at);
                        f.sent_at = t;
                        st.retransmissions += 1;
                        send(h.chunk, &mut st)?;
                    }
                }
                continue;
            }
            if h.flags != flags::RESULT || h.job != opts.job || h.chunk >= total {
                continue;
            }
            if from != opts.card && from != opts.fallback {
                continue;
            }
            if results.contains_key(&h.chunk) {
                st.late_results += 1;
                continue;
            }
            let e = want(h.chunk);
            if p.values != e {
                let i = p
                    .values
                    .iter()
                    .zip(&e)
                    .position(|(a, b)| a != b)
                    .unwrap_or(0);
                return Err(GradError::Mismatch(format!(
                    "worker {}: chunk {} value {i}: RESULT {} from {from}, exact {}",
                    opts.worker,
                    h.chunk,
                    p.values.get(i).copied().unwrap_or(0),
                    e[i]
                )));
            }
            results.insert(h.chunk, p.values);
            completed += 1;
            last_progress = Instant::now();
            if from == opts.card {
                st.from_card += 1;
            } else {
                st.from_host += 1;
            }
            if let Some(f) = inflight.remove(&h.chunk) {
                rec.on_ack(now(), f.sent_at, f.prev_sent, f.tries);
            }
        }
        if last_progress.elapsed() > opts.timeout {
            return Err(GradError::Unsupported(format!(
                "worker {}: no RESULT for {:?}",
                opts.worker, opts.timeout
            )));
        }
    }
    st.chunks = completed as u64;
    st.seconds = t0.elapsed().as_secs_f64();
    st.srtt_us = rec.srtt().unwrap_or(0);
    // DONE until answered.
    let msg = Control {
        flags: FLAG_DONE,
        a: total,
        ..join
    };
    let give_up = Instant::now() + opts.timeout;
    loop {
        if Instant::now() >= give_up {
            return Err(GradError::Unsupported(format!(
                "worker {}: the fallback did not answer DONE within {:?}",
                opts.worker, opts.timeout
            )));
        }
        sock.send_to(&msg.encode(), opts.fallback)
            .map_err(|e| io(format!("udp to {}", opts.fallback), e))?;
        let wait = Instant::now() + Duration::from_millis(200);
        while let Some((n, from)) =
            udp::recv_until(&sock, &mut buf, wait).map_err(|e| io("udp", e))?
        {
            let Some(c) = Control::decode(&buf[..n]).filter(|_| from == opts.fallback) else {
                continue;
            };
            // The fallback answers DONE once every worker is done; until
            // then this worker still serves its peers' WANTs.
            if c.flags == FLAG_DONE | FLAG_ACK {
                return Ok(st);
            }
            answer_want(&sock, &c, &results, &mut st.answered, &join, geo, opts)?;
        }
    }
}

/// How the fallback runs.
#[derive(Clone, Debug)]
pub struct FallbackOptions {
    /// Job id (0..16).
    pub job: u16,
    /// Workers of the job.
    pub workers: u8,
    /// The fallback's address on the card's host.
    pub listen: SocketAddrV4,
    /// The MAC the card sends EVICT and FALLBACK to; `None`: the MAC of the
    /// interface that holds `listen`'s IP.
    pub host_mac: Option<Mac>,
    /// The card's MAC.
    pub card_mac: Mac,
    /// The card's IPv4 address.
    pub card_ip: Ipv4Addr,
    /// The job's priority (`grad.PRIO`, 0..=15).
    pub priority: u8,
    /// Give up when nothing arrives for this long.
    pub idle_timeout: Duration,
}

/// What the fallback did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FallbackStats {
    /// Chunks the fallback completed and sent to the workers.
    pub completed_on_host: u64,
    /// Partials merged (EVICT and FALLBACK).
    pub partials: u64,
    /// Partials that overlapped merged ones inseparably (the chunk then
    /// completes on the card from the workers' retransmissions).
    pub conflicts: u64,
    /// The card's gradient counters at the end.
    pub card: CardCounters,
    /// WANTs workers sent (a RESULT copy lost, or slow).
    pub wants: u64,
    /// RESULTs relayed from a worker that had one to one that asked.
    pub relayed: u64,
    /// Wall time from START to the last DONE, seconds.
    pub seconds: f64,
}

/// Run the fallback of one job on `card` (see the module docs). `ready` is
/// called once the card is configured and the socket listens.
pub fn fallback(
    card: &Card,
    opts: &FallbackOptions,
    ready: impl FnOnce(),
) -> Result<FallbackStats, GradError> {
    let dev = card.regs();
    let (cfg, max_workers) = super::card::geometry(card)?;
    if opts.workers == 0 || opts.workers as usize > max_workers {
        return Err(GradError::Options(format!(
            "{} workers: the card takes 1 to {max_workers} per job",
            opts.workers
        )));
    }
    if opts.job as usize >= super::card::MAX_JOBS || opts.priority > regs::PRIO_MAX {
        return Err(GradError::Options(format!(
            "job {} priority {}: jobs are 0..{} and priorities 0..={}",
            opts.job,
            opts.priority,
            super::card::MAX_JOBS,
            regs::PRIO_MAX
        )));
    }
    let geo = Geometry {
        lanes: cfg.lanes,
        value_beats: cfg.value_beats,
    };
    let ip = *opts.listen.ip();
    let host_mac = match opts.host_mac {
        Some(m) => m,
        None => udp::interface_of(ip)
            .and_then(|i| udp::mac_of(&i))
            .ok_or_else(|| {
                GradError::Options(format!(
                    "no interface here has {ip} with a MAC: listen on the card's host netdev, or give --host-mac"
                ))
            })?,
    };
    let sock = udp::bind(SocketAddr::V4(opts.listen))
        .map_err(|e| io(format!("udp {}", opts.listen), e))?;
    let w = |r: &weft_regs::Register, v: u32| dev.write_reg(r, v).map_err(GradError::Device);
    card.set_address_to(&Endpoint {
        mac: opts.card_mac,
        ip: opts.card_ip,
        port: 0,
    })
    .map_err(GradError::Device)?;
    let (hi, lo) = wire::mac_regs(&host_mac);
    w(&net::GRAD_MAC_HI, hi)?;
    w(&net::GRAD_MAC_LO, lo)?;
    w(&net::GRAD_IP, u32::from(ip))?;
    w(&net::GRAD_PORT, opts.listen.port() as u32)?;
    let (preg, pfield) = regs::prio_of(opts.job as usize);
    let pv = dev.read_reg(&preg).map_err(GradError::Device)?;
    w(&preg, pfield.set(pv, opts.priority as u32))?;
    // Evict what an earlier job left, then clear the counters.
    w(&regs::CMD, regs::CMD_FLUSH.set(0, 1))?;
    wait_flush(dev, opts.idle_timeout)?;
    w(&regs::CMD, regs::CMD_RESET.set(0, 1))?;
    card.enable_engines().map_err(GradError::Device)?;
    ready();

    let card_from = SocketAddr::from((opts.card_ip, wire::GRAD_PORT));
    let mut buf = vec![0u8; 65536];
    let mut joined: HashMap<u8, (SocketAddr, Mac)> = HashMap::new();
    let mut started = false;
    let mut done: BTreeMap<u8, u32> = BTreeMap::new();
    let mut merge = HostMerge::new(geo);
    let mut st = FallbackStats::default();
    let slots = 1u32 << cfg.slot_bits;
    let shape = (geo.lanes as u32) << 8 | geo.value_beats as u32;
    // Workers waiting for a chunk's RESULT they asked their peers for.
    let mut wants: HashMap<u32, Vec<SocketAddr>> = HashMap::new();
    let mut t0 = Instant::now();
    let mut last = Instant::now();
    // Once every worker is done, keep answering for a short while: a DONE
    // answer lost on the way makes its worker ask again.
    let linger = Duration::from_secs(1);
    let mut finished: Option<Instant> = None;
    loop {
        if finished.is_some_and(|f| f.elapsed() >= linger) {
            break;
        }
        let until = match finished {
            Some(f) => f + linger,
            None => last + opts.idle_timeout,
        };
        let Some((n, from)) = udp::recv_until(&sock, &mut buf, until).map_err(|e| io("udp", e))?
        else {
            if finished.is_some() {
                break;
            }
            let missing: Vec<u8> = (0..opts.workers)
                .filter(|w| {
                    if started {
                        !done.contains_key(w)
                    } else {
                        !joined.contains_key(w)
                    }
                })
                .collect();
            return Err(GradError::Unsupported(format!(
                "nothing arrived for {:?}: workers {missing:?} never {}",
                opts.idle_timeout,
                if started { "said DONE" } else { "joined" }
            )));
        };
        last = Instant::now();
        let b = &buf[..n];
        if from == card_from {
            st.partials += 1;
            match merge.accept(b) {
                Ok(Some(c)) if !c.on_card => {
                    st.completed_on_host += 1;
                    let p = result_packet(geo, c.id.0, opts.workers, c.id.1, &c.sums)?;
                    for (to, _) in joined.values() {
                        sock.send_to(&p, to)
                            .map_err(|e| io(format!("udp to {to}"), e))?;
                    }
                }
                Ok(_) => {}
                Err(weft_model::grad_agg::host::MergeError::Conflict { .. }) => st.conflicts += 1,
                Err(e) => return Err(e.into()),
            }
            continue;
        }
        if let Ok(p) = packet::decode(geo, b) {
            // A worker's answer to a relayed WANT: the RESULT it holds.
            let is_worker = joined.values().any(|(a, _)| *a == from);
            if is_worker && p.header.flags == flags::RESULT && p.header.job == opts.job {
                for to in wants.remove(&p.header.chunk).unwrap_or_default() {
                    st.relayed += 1;
                    sock.send_to(b, to)
                        .map_err(|e| io(format!("udp to {to}"), e))?;
                }
            }
            continue;
        }
        let Some(c) = Control::decode(b).filter(|c| c.job == opts.job && c.worker < opts.workers)
        else {
            continue;
        };
        if c.flags == FLAG_JOIN {
            let addr = SocketAddr::new(from.ip(), c.a as u16);
            joined.insert(c.worker, (addr, c.mac));
            if !started && joined.len() == opts.workers as usize {
                for (&wk, (to, mac)) in &joined {
                    let SocketAddr::V4(to) = to else { continue };
                    let (hi, lo) = wire::mac_regs(mac);
                    w(&net::WT_SEL, (opts.job as u32) << 8 | wk as u32)?;
                    w(&net::WT_MAC_HI, net::WT_VALID.set(hi, 1))?;
                    w(&net::WT_MAC_LO, lo)?;
                    w(&net::WT_IP, u32::from(*to.ip()))?;
                    w(&net::WT_PORT, to.port() as u32)?;
                    w(&net::WT_CMD, net::WT_CMD_WRITE.set(0, 1))?;
                }
                started = true;
                t0 = Instant::now();
            }
            if started {
                let answer = Control {
                    flags: FLAG_JOIN | FLAG_ACK,
                    a: slots,
                    b: shape,
                    ..c
                };
                sock.send_to(&answer.encode(), from)
                    .map_err(|e| io("udp", e))?;
            }
        } else if c.flags == FLAG_WANT && started {
            // Relay to every other worker; the first answer is forwarded.
            let Some((to, _)) = joined.get(&c.worker).copied() else {
                continue;
            };
            st.wants += 1;
            let list = wants.entry(c.a).or_default();
            if !list.contains(&to) {
                list.push(to);
            }
            for (&wk, (peer, _)) in &joined {
                if wk != c.worker {
                    sock.send_to(&b[..CONTROL_BYTES], peer)
                        .map_err(|e| io(format!("udp to {peer}"), e))?;
                }
            }
        } else if c.flags == FLAG_DONE && started {
            done.insert(c.worker, c.a);
            // DONE is answered once every worker is done: until then the
            // done ones still answer their peers' WANTs.
            if done.len() == opts.workers as usize {
                if finished.is_none() {
                    st.seconds = t0.elapsed().as_secs_f64();
                    finished = Some(Instant::now());
                }
                for (&wk, (peer, _)) in &joined {
                    let answer = Control {
                        flags: FLAG_DONE | FLAG_ACK,
                        worker: wk,
                        ..c
                    };
                    sock.send_to(&answer.encode(), peer)
                        .map_err(|e| io(format!("udp to {peer}"), e))?;
                }
            }
        }
    }
    w(&regs::CMD, regs::CMD_FLUSH.set(0, 1))?;
    wait_flush(dev, opts.idle_timeout)?;
    let mut v = [0u64; counter::N];
    for (i, c) in v.iter_mut().enumerate() {
        let lo = dev
            .read_reg(&regs::COUNTERS[2 * i])
            .map_err(GradError::Device)? as u64;
        let hi = dev
            .read_reg(&regs::COUNTERS[2 * i + 1])
            .map_err(GradError::Device)? as u64;
        *c = hi << 32 | lo;
    }
    st.card = CardCounters::from_counts(&v);
    Ok(st)
}

fn wait_flush(dev: &dyn weft_driver::Device, timeout: Duration) -> Result<(), GradError> {
    let until = Instant::now() + timeout;
    while regs::STATUS_FLUSHING.get(dev.read_reg(&regs::STATUS).map_err(GradError::Device)?) != 0 {
        if Instant::now() >= until {
            return Err(GradError::Card(format!(
                "the flush did not finish within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(())
}
