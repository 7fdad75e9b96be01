//! The host daemon's synchronous core: a state machine that packs tuples,
//! sends them as UDP frames through the network model to the card's wire
//! port, keeps per-sender windows, retransmits, takes the card's acks off
//! the wire and its record frames off the host port, and merges spills and
//! the final flush — all in the card's device time, through the card's two
//! seams only (registers and frames, [`Card`]).
//!
//! The daemon owns the simulated world around the card: worker endpoints
//! `0..workers` (each a host with its own MAC, IP and UDP port,
//! [`crate::card::addr::worker`]) and the card's wire port (endpoint
//! `workers`), joined by a [`Network`] that loses, duplicates, reorders and
//! delays frames in both directions: data frames on their way to the card
//! and acks on their way back, as on a real network. Record frames come to
//! the collector on the card's host port ([`crate::card::addr::host`]),
//! which loses nothing; a gap in their sequence numbers fails the job.
//!
//! Time: the card's cycle counter ([`FramePorts::cycles`]) is the clock.
//! Each [`Daemon::step`] delivers the network's due frames, lets the
//! senders transmit, and advances the card to the next event (a network
//! arrival, a retransmission deadline) or by [`JobOptions::quantum`] cycles
//! while the card is busy. While the daemon has nothing to do, no simulated
//! time passes.

use super::pack::{Packer, Placement};
use super::recovery::{DelayWindow, Recovery};
use super::{JobOptions, KvError, Result, Stats};
use crate::card::{addr, Card};
use std::collections::{BTreeMap, HashMap};
use weft_driver::{Device, FramePorts, Port, RegisterAccess};
use weft_model::kv_agg::packet::{self, AckStatus, Header};
use weft_model::kv_agg::{Config, WINDOW};
use weft_model::net::Network;
use weft_model::wire::{self, build_frame, parse_built, Endpoint};
use weft_regs::{kv, net};

/// What one [`Daemon::step`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Work is in progress: call `step` again.
    Busy,
    /// Nothing to do until more tuples are pushed or the job finishes:
    /// every packet sent is acknowledged and no full packet is waiting.
    Idle,
}

/// The job's result: exact per-key sums and what it took.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// Per-key sums, exact as `i64`.
    pub sums: HashMap<u32, i64>,
    /// Statistics.
    pub stats: Stats,
}

/// A packet sent and not yet acknowledged.
#[derive(Debug)]
struct Unacked {
    /// The whole frame (the worker's addresses and the packet).
    frame: Vec<u8>,
    /// Transmissions so far.
    tries: u32,
    /// When it was last transmitted.
    sent_at: u64,
    /// When it was transmitted before that.
    prev_sent: Option<u64>,
}

/// One worker's sending side.
#[derive(Debug)]
struct Sender {
    me: Endpoint,
    packer: Packer,
    next_seq: u32,
    unacked: BTreeMap<u32, Unacked>,
    recovery: Recovery,
    /// How many packets it keeps in flight.
    cwnd: DelayWindow,
    /// The retransmission timer: when it fires, while packets are
    /// outstanding.
    timer: Option<u64>,
}

/// Full frames per sender of queue each sender's delay window allows above
/// its smallest round trip ([`DelayWindow`]): measured on the main
/// command's stream, 8 keeps the lossless rate of a full sequence window
/// while round trips, and so loss recovery, stay short.
const HEADROOM_FRAMES: u64 = 8;

/// Whether `s` could send a new packet now: a packet's worth of tuples
/// (or the rest, once input is closed) and room in its window. A sender
/// that cannot will not elicit the acks RACK needs to find its losses.
fn can_send(s: &Sender, finishing: bool, max_tuples: usize, window: u32) -> bool {
    let pending = s.packer.pending();
    pending > 0
        && (pending >= max_tuples || finishing)
        && s.next_seq.wrapping_sub(s.base()) < window
        && (s.unacked.len() as u32) < s.cwnd.packets()
}

impl Sender {
    /// Lowest sequence number not yet acknowledged (the window's base).
    fn base(&self) -> u32 {
        self.unacked.keys().next().copied().unwrap_or(self.next_seq)
    }
}

/// The host daemon of one aggregation job.
pub struct Daemon {
    opts: JobOptions,
    cfg: Config,
    window: u32,
    max_tuples: usize,
    senders: Vec<Sender>,
    net: Network,
    card_port: usize,
    card_ep: Endpoint,
    collector: Endpoint,
    finishing: bool,
    flush_done: bool,
    next_record_seq: u32,
    sums: HashMap<u32, i64>,
    stats: Stats,
    start_cycles: u64,
}

/// The cycles a flush may take before the daemon gives up: generous, since
/// the card's flush walks every slot row and the records then queue for
/// the host port.
fn flush_budget(cfg: &Config) -> u64 {
    64 * (1u64 << cfg.slot_bits) + 200_000
}

fn regs_err(e: weft_driver::Error) -> KvError {
    KvError::Card(e)
}

/// Configure the card for a key-value job: its own addresses, the
/// collector on its host port, record packing, engines on.
pub fn configure(card: &Card, collector: &Endpoint) -> Result<()> {
    let dev = card.regs();
    let w = |r: &weft_regs::Register, v: u32| dev.write_reg(r, v).map_err(regs_err);
    card.set_address().map_err(regs_err)?;
    let (hi, lo) = wire::mac_regs(&collector.mac);
    w(&net::KV_MAC_HI, hi)?;
    w(&net::KV_MAC_LO, lo)?;
    w(&net::KV_IP, u32::from(collector.ip))?;
    w(&net::KV_PORT, collector.port as u32)?;
    w(&net::PACK_MAX, wire::KV_DEFAULT_RECORDS as u32)?;
    w(&net::PACK_WAIT, addr::PACK_WAIT)?;
    w(&net::PACK_SEQ, 0)?;
    card.enable_engines().map_err(regs_err)
}

/// The card's key-value geometry from its `kv.GEOMETRY` register.
pub fn geometry(dev: &dyn Device) -> Result<(Config, u32)> {
    let geo = dev.read_reg(&kv::GEOMETRY).map_err(regs_err)?;
    let cfg = Config {
        lanes: kv::GEOMETRY_LANES.get(geo) as usize,
        slot_bits: kv::GEOMETRY_SLOT_BITS.get(geo),
        senders: kv::GEOMETRY_SENDERS.get(geo) as usize,
    };
    let window = kv::GEOMETRY_WINDOW.get(geo);
    if cfg.lanes == 0 || cfg.lanes > 16 || cfg.slot_bits == 0 || cfg.slot_bits > 20 || window == 0 {
        return Err(KvError::Geometry(format!(
            "GEOMETRY register reads {geo:#010x}: {} lanes, 2^{} slots per bank, {} senders, window {window}",
            cfg.lanes, cfg.slot_bits, cfg.senders
        )));
    }
    Ok((cfg, window))
}

impl Daemon {
    /// Open a job on `card`: read the card's geometry, configure its
    /// addresses, set the job id, retire whatever an earlier job left on
    /// the card, set the replacement policy and reset the windows and
    /// counters.
    ///
    /// The order matters: the new job id goes in first, so stale packets of
    /// an earlier job still queued at the card are dropped as malformed
    /// instead of being aggregated; then a flush drains (and discards) any
    /// table contents an aborted job left; then the reset clears the
    /// windows and the counters those steps touched.
    pub fn open(card: &Card, opts: JobOptions) -> Result<Self> {
        opts.validate()?;
        let dev = card.regs();
        let frames = card.frames().map_err(KvError::from_card)?;
        let (cfg, window) = geometry(dev)?;
        if opts.workers > cfg.senders {
            return Err(KvError::Options(format!(
                "{} workers, but the card keeps sequence windows for {} senders",
                opts.workers, cfg.senders
            )));
        }
        if opts.workers > addr::MAX_WORKERS {
            return Err(KvError::Options(format!(
                "{} workers: the simulated network has addresses for {}",
                opts.workers,
                addr::MAX_WORKERS
            )));
        }
        let window = window.min(WINDOW);
        let max_tuples = opts.max_tuples();
        let collector = Endpoint {
            port: addr::KV_COLLECTOR_PORT,
            ..addr::host()
        };
        configure(card, &collector)?;

        let w = |r: &weft_regs::Register, v: u32| dev.write_reg(r, v).map_err(regs_err);
        w(&kv::JOB, opts.job as u32)?;
        let budget = flush_budget(&cfg);
        // Drain what an earlier job left at the card's input.
        let start = frames.cycles();
        while frames.busy() {
            frames.advance(opts.quantum).map_err(regs_err)?;
            if frames.cycles() - start > budget {
                return Err(KvError::Drain {
                    cycles: frames.cycles() - start,
                });
            }
        }
        frames.advance(4 * opts.quantum).map_err(regs_err)?;
        w(&kv::CMD, kv::CMD_FLUSH.set(0, 1))?;
        wait_fin(frames, opts.quantum, budget, |_| {})?;
        w(&kv::CTRL, kv::CTRL_REPLACE.set(0, opts.replace as u32))?;
        w(&kv::CMD, kv::CMD_RESET.set(0, 1))?;
        w(&net::PACK_SEQ, 0)?;

        // The slowest acknowledgement: a frame's longest network delay
        // there and back, the card's input queued with every sender's
        // window (twice, for duplicates and retransmissions queued with
        // them), the record frames queued on the way, and the step
        // granularity. A timeout above it never fires for a packet that is
        // merely queued, so retransmissions cannot snowball.
        let beats_per_frame =
            (wire::HEADERS + packet::HEADER_BYTES + max_tuples * packet::TUPLE_BYTES).div_ceil(64)
                as u64;
        let rto = opts.rto.unwrap_or(
            4 * opts.net.max_delay()
                + 3 * opts.workers as u64 * window as u64 * beats_per_frame
                + 4 * opts.quantum
                + 512,
        );
        let placement = Placement::new(&cfg, max_tuples);
        let senders = (0..opts.workers)
            .map(|i| Sender {
                me: addr::worker(i),
                packer: Packer::new(placement.clone()),
                next_seq: 0,
                unacked: BTreeMap::new(),
                recovery: Recovery::new(2 * opts.quantum, rto),
                cwnd: DelayWindow::new(
                    window,
                    HEADROOM_FRAMES * opts.workers as u64 * beats_per_frame,
                ),
                timer: None,
            })
            .collect();
        let net = Network::new(opts.net, opts.seed)?;
        let stats = Stats {
            card: card.name(),
            workers: opts.workers,
            slots: cfg.slots(),
            replace: opts.replace,
            rto,
            ..Stats::default()
        };
        Ok(Self {
            card_port: opts.workers,
            card_ep: Endpoint {
                port: wire::KV_PORT,
                ..addr::card()
            },
            collector,
            opts,
            cfg,
            window,
            max_tuples,
            senders,
            net,
            finishing: false,
            flush_done: false,
            next_record_seq: 0,
            sums: HashMap::new(),
            stats,
            start_cycles: frames.cycles(),
        })
    }

    /// The card geometry the job runs on.
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// Queue one tuple of `worker`.
    pub fn push(&mut self, worker: usize, key: u32, value: i32) -> Result<()> {
        let workers = self.senders.len();
        let s = self
            .senders
            .get_mut(worker)
            .ok_or(KvError::Worker { worker, workers })?;
        s.packer.push(key, value);
        self.stats.tuples += 1;
        Ok(())
    }

    /// Whether the daemon should take more input before it lets device
    /// time pass: some sender lacks a full packet, none holds a whole
    /// window's worth of tuples, and input is still open. A front that
    /// takes input exactly when this says so makes a job's course in
    /// device time depend on its input and seed alone, not on how fast the
    /// producer happens to run.
    pub fn wants_input(&self) -> bool {
        let bound = self.window as usize * self.max_tuples;
        let pending = || self.senders.iter().map(|s| s.packer.pending());
        !self.finishing && pending().any(|p| p < self.max_tuples) && pending().all(|p| p < bound)
    }

    /// No more tuples will come: from now on partly filled packets are sent
    /// too, instead of waiting to fill up.
    pub fn close_input(&mut self) {
        self.finishing = true;
    }

    /// Can `s` form a packet now?
    fn ready(&self, s: &Sender) -> bool {
        let pending = s.packer.pending();
        pending > 0 && (pending >= self.max_tuples || self.finishing)
    }

    /// Transmit: due retransmissions first, then new packets while the
    /// window allows.
    fn transmit(&mut self, now: u64) -> Result<()> {
        for (id, s) in self.senders.iter_mut().enumerate() {
            let fired = s.timer.is_some_and(|t| t <= now);
            let base = s.unacked.keys().next().copied();
            for (&seq, u) in s.unacked.iter_mut() {
                let lost = s.recovery.lost(u.sent_at, now);
                // The timer resends the oldest packet; RACK any it deems lost.
                let timeout = fired && Some(seq) == base;
                if !timeout && !lost {
                    continue;
                }
                if u.tries >= self.opts.max_tries {
                    return Err(KvError::Stalled {
                        sender: id,
                        seq,
                        tries: u.tries,
                    });
                }
                if lost {
                    self.stats.fast_retransmissions += 1;
                } else {
                    self.stats.timeouts += 1;
                }
                u.tries += 1;
                u.prev_sent = Some(u.sent_at);
                u.sent_at = now;
                self.stats.retransmissions += 1;
                self.stats.transmissions += 1;
                self.net.send(now, id, self.card_port, u.frame.clone());
            }
            if fired {
                s.recovery.on_timeout();
                let tail = !can_send(s, self.finishing, self.max_tuples, self.window);
                s.timer = Some(now + s.recovery.timer(tail));
            }
        }
        for id in 0..self.senders.len() {
            while self.ready(&self.senders[id]) {
                let s = &mut self.senders[id];
                if s.next_seq.wrapping_sub(s.base()) >= self.window
                    || s.unacked.len() as u32 >= s.cwnd.packets()
                {
                    break;
                }
                let (tuples, misplaced) = s.packer.take(self.max_tuples);
                let seq = s.next_seq;
                s.next_seq = s.next_seq.wrapping_add(1);
                // `tuples.len() <= max_tuples <= packet::MAX_TUPLES`, which
                // fits the u16 count (checked by `JobOptions::validate`).
                let h = Header::data(self.opts.job, id as u16, seq, tuples.len() as u16);
                let frame = build_frame(&s.me, &self.card_ep, &packet::encode(&h, &tuples));
                s.unacked.insert(
                    seq,
                    Unacked {
                        frame: frame.clone(),
                        tries: 1,
                        sent_at: now,
                        prev_sent: None,
                    },
                );
                let tail = !can_send(s, self.finishing, self.max_tuples, self.window);
                s.timer.get_or_insert(now + s.recovery.timer(tail));
                self.stats.packets += 1;
                self.stats.transmissions += 1;
                self.stats.misplaced += misplaced as u64;
                self.net.send(now, id, self.card_port, frame);
            }
        }
        Ok(())
    }

    /// An ack frame reached worker `id` at `now`: it retires the packet it
    /// names, and its round trip feeds the sender's recovery.
    fn ack(&mut self, id: usize, frame: &[u8], now: u64) {
        let Some(p) = parse_built(frame).filter(|p| p.src == self.card_ep) else {
            return;
        };
        let b = &p.payload;
        if b.len() < 16 || b[1] != wire::KV_FLAG_ACK {
            return;
        }
        let sender = u16::from_le_bytes([b[6], b[7]]) as usize;
        let seq = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        self.stats.acks += 1;
        if b[12] == AckStatus::Duplicate as u8 {
            self.stats.duplicate_acks += 1;
        }
        // Matched by (sender, seq): an ack for a packet already retired
        // (a duplicate's, or a retransmission's) finds nothing.
        if sender == id {
            if let Some(s) = self.senders.get_mut(id) {
                if let Some(u) = s.unacked.remove(&seq) {
                    let clean = s.recovery.on_ack(now, u.sent_at, u.prev_sent, u.tries);
                    if let (Some(rtt), Some(min), Some(srtt)) =
                        (clean, s.recovery.min_rtt(), s.recovery.srtt())
                    {
                        s.cwnd.on_sample(now, rtt, min, srtt);
                    }
                    // Progress restarts the timer (RFC 6298 §5.3).
                    let tail = !can_send(s, self.finishing, self.max_tuples, self.window);
                    s.timer = (!s.unacked.is_empty()).then(|| now + s.recovery.timer(tail));
                }
            }
        }
    }

    /// A frame reached the collector on the card's host port: records
    /// merge; the flush's FIN frame ends the job's flush.
    fn record_frame(&mut self, frame: &[u8]) -> Result<()> {
        let Some(p) = parse_built(frame) else {
            return Ok(());
        };
        if p.src != self.card_ep || p.dst != self.collector {
            return Ok(());
        }
        let b = &p.payload;
        if b.len() < 16 || b[1] & wire::KV_FLAG_RECORDS == 0 {
            return Ok(());
        }
        let seq = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if seq != self.next_record_seq {
            return Err(KvError::RecordsLost {
                expected: self.next_record_seq,
                got: seq,
            });
        }
        self.next_record_seq = seq.wrapping_add(1);
        let flush = b[1] & wire::KV_FLAG_FLUSH != 0;
        for r in b[16..].chunks_exact(8) {
            let k = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let v = i32::from_le_bytes([r[4], r[5], r[6], r[7]]);
            *self.sums.entry(k).or_insert(0) += v as i64;
            self.stats.host_records += 1;
            if flush {
                self.stats.flush_records += 1;
            } else {
                self.stats.spill_records += 1;
            }
        }
        self.stats.record_frames += 1;
        if b[1] & wire::KV_FLAG_FIN != 0 {
            self.flush_done = true;
        }
        Ok(())
    }

    /// Take what the card sent: acks into the network back to their
    /// workers, record frames to the collector.
    fn absorb(&mut self, frames: &dyn FramePorts) -> Result<()> {
        let now = frames.cycles();
        for f in frames.recv().map_err(regs_err)? {
            match f.port {
                Port::Wire => {
                    // An ack goes back over the network to its worker.
                    let to = (0..self.senders.len())
                        .find(|&i| f.bytes.get(0..6) == Some(&self.senders[i].me.mac[..]));
                    if let Some(to) = to {
                        self.net.send(now, self.card_port, to, f.bytes);
                    }
                }
                Port::Host => self.record_frame(&f.bytes)?,
            }
        }
        Ok(())
    }

    /// One step of the job: deliver due frames (to the card, or acks to
    /// their workers), transmit, and advance the card to the next event.
    pub fn step(&mut self, card: &Card) -> Result<Poll> {
        let frames = card.frames().map_err(KvError::from_card)?;
        let now = frames.cycles();
        for d in self.net.deliver_due(now) {
            if d.dst == self.card_port {
                self.stats.beats += d.payload.len().div_ceil(64) as u64;
                frames.send(Port::Wire, &d.payload).map_err(regs_err)?;
            } else {
                self.ack(d.dst, &d.payload, now);
            }
        }
        self.transmit(now)?;
        // With nothing unacknowledged, transmit found nothing ready (an
        // empty window never blocks it). Copies still in the network then
        // belong to acknowledged packets, are duplicates, and need not be
        // waited for.
        let unacked = self.senders.iter().any(|s| !s.unacked.is_empty());
        if !unacked && !frames.busy() {
            return Ok(Poll::Idle);
        }
        let next_event = self
            .senders
            .iter()
            .flat_map(|s| {
                s.unacked
                    .values()
                    .filter_map(|u| s.recovery.lost_at(u.sent_at))
                    .chain(s.timer)
            })
            .chain(self.net.next_due())
            .min();
        let q = self.opts.quantum;
        let cycles = match next_event {
            // While the card works, step in quanta so acks come back
            // promptly and free window space.
            Some(e) if frames.busy() => e.saturating_sub(now).clamp(1, q),
            None => q,
            Some(e) => e.saturating_sub(now).clamp(1, 4 * q),
        };
        frames.advance(cycles).map_err(regs_err)?;
        self.absorb(frames)?;
        Ok(Poll::Busy)
    }

    /// Finish the job: send what is left, wait until every packet is
    /// acknowledged, flush the table, collect record frames until the
    /// flush's FIN, and return the sums.
    pub fn finish(mut self, card: &Card) -> Result<JobOutput> {
        self.close_input();
        let frames = card.frames().map_err(KvError::from_card)?;
        let dev = card.regs();
        let budget = flush_budget(&self.cfg);
        let mut acked_at = None;
        while self.step(card)? == Poll::Busy {
            if self.senders.iter().all(|s| s.unacked.is_empty()) {
                let t0 = *acked_at.get_or_insert(frames.cycles());
                if frames.cycles() - t0 > budget {
                    return Err(KvError::Drain {
                        cycles: frames.cycles() - t0,
                    });
                }
            } else {
                acked_at = None;
            }
        }
        // Every packet is acknowledged, so every tuple has entered the
        // engine; the flush command follows all their spills.
        dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1))
            .map_err(regs_err)?;
        let start = frames.cycles();
        while !self.flush_done {
            frames.advance(self.opts.quantum).map_err(regs_err)?;
            self.absorb(frames)?;
            if frames.cycles() - start > budget {
                return Err(KvError::FlushTimeout {
                    cycles: frames.cycles() - start,
                });
            }
        }
        self.read_counters(dev)?;
        let st = &mut self.stats;
        st.cycles = frames.cycles() - self.start_cycles;
        st.keys = self.sums.len() as u64;
        let net = self.net.stats();
        st.net_lost = net.lost;
        st.net_duplicated = net.duplicated;
        st.net_reordered = net.reordered;
        let srtts: Vec<u64> = self
            .senders
            .iter()
            .filter_map(|s| s.recovery.srtt())
            .collect();
        st.srtt = srtts.iter().sum::<u64>() / (srtts.len() as u64).max(1);
        st.finish_ratios();
        Ok(JobOutput {
            sums: self.sums,
            stats: self.stats,
        })
    }

    /// Read the engine's counters (LO first: it latches HI).
    fn read_counters(&mut self, dev: &dyn Device) -> Result<()> {
        let mut c = [0u64; 9];
        for (i, v) in c.iter_mut().enumerate() {
            let lo = dev.read_reg(&kv::COUNTERS[2 * i]).map_err(regs_err)? as u64;
            let hi = dev.read_reg(&kv::COUNTERS[2 * i + 1]).map_err(regs_err)? as u64;
            *v = hi << 32 | lo;
        }
        let st = &mut self.stats;
        st.accepted_packets = c[0];
        st.tuples_in = c[1];
        st.aggregated_on_nic = c[2];
        st.spilled = c[3];
        st.evicted = c[4];
        st.overflows = c[5];
        st.duplicates_dropped = c[6];
        st.malformed = c[7];
        st.window_drops = c[8];
        Ok(())
    }
}

/// Advance the card until a record frame with FIN arrives on its host
/// port, handing every frame to `sink`.
fn wait_fin(
    frames: &dyn FramePorts,
    quantum: u64,
    budget: u64,
    mut sink: impl FnMut(&[u8]),
) -> Result<()> {
    let start = frames.cycles();
    loop {
        frames.advance(quantum).map_err(regs_err)?;
        for f in frames.recv().map_err(regs_err)? {
            sink(&f.bytes);
            let fin = f.port == Port::Host
                && parse_built(&f.bytes).is_some_and(|p| {
                    p.src.port == wire::KV_PORT
                        && p.payload.len() >= 16
                        && p.payload[1] & wire::KV_FLAG_FIN != 0
                });
            if fin {
                return Ok(());
            }
        }
        if frames.cycles() - start > budget {
            return Err(KvError::FlushTimeout {
                cycles: frames.cycles() - start,
            });
        }
    }
}

/// Run a whole job synchronously: open, push every `(worker, key, value)`,
/// finish.
pub fn run(
    card: &Card,
    opts: JobOptions,
    tuples: impl IntoIterator<Item = (usize, u32, i32)>,
) -> Result<JobOutput> {
    let mut d = Daemon::open(card, opts)?;
    for (w, k, v) in tuples {
        d.push(w, k, v)?;
    }
    d.finish(card)
}
