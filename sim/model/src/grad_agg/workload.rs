//! Multi-job training traffic for the engine, and the end-to-end check
//! that every chunk's sum, completed on the card or by the host fallback,
//! is exact.
//!
//! A [`Workload`] is a script: each job's workers send every chunk once,
//! interleaved at random, with some workers far behind the others; near
//! duplicates (a retransmission a few packets later), malformed copies,
//! priority changes (inversions mid-job), flushes and counter resets
//! sprinkled in, and a final flush so every partial reaches the host.

use super::driver::Step;
use super::host::{ChunkId, HostMerge, MergeError};
use super::model::OutPacket;
use super::packet::{self, Geometry, Header, Kind, JOBS, MAX_WORKERS};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, VecDeque};
use weft_regs::grad;

/// Knobs of a generated workload.
#[derive(Clone, Debug)]
pub struct Gen {
    /// Jobs (at most [`JOBS`]).
    pub jobs: usize,
    /// Most workers of a job (at most [`MAX_WORKERS`]); each job draws 1..=this.
    pub max_workers: u8,
    /// Chunks per job.
    pub chunks: u32,
    /// Probability a packet is followed, a few packets later, by a copy.
    pub p_dup: f64,
    /// Probability a malformed copy of a packet is added.
    pub p_malformed: f64,
    /// Probability of a priority change before a packet.
    pub p_prio: f64,
    /// Probability of a flush before a packet.
    pub p_flush: f64,
    /// Probability of a counter reset before a packet.
    pub p_reset: f64,
    /// Probability a job has one worker far behind (it starts after the
    /// others have sent `behind` packets).
    pub p_behind: f64,
    /// How far behind.
    pub behind: usize,
    /// Probability a value is extreme (`i32::MAX`, `i32::MIN`, ...): sums
    /// then wrap, and must still be exact modulo 2^32.
    pub p_extreme: f64,
    /// Probability a DATA header carries junk in its bitmap and reserved
    /// bytes (ignored by the card, forwarded verbatim by FALLBACK).
    pub p_junk: f64,
}

impl Gen {
    /// A bit of everything.
    pub fn mixed() -> Self {
        Gen {
            jobs: 3,
            max_workers: 4,
            chunks: 5,
            p_dup: 0.08,
            p_malformed: 0.08,
            p_prio: 0.05,
            p_flush: 0.03,
            p_reset: 0.02,
            p_behind: 0.5,
            behind: 12,
            p_extreme: 0.05,
            p_junk: 0.2,
        }
    }

    /// Clean traffic: no duplicates, malformed packets, flushes or resets.
    pub fn clean(jobs: usize, max_workers: u8, chunks: u32) -> Self {
        Gen {
            jobs,
            max_workers,
            chunks,
            p_dup: 0.0,
            p_malformed: 0.0,
            p_prio: 0.0,
            p_flush: 0.0,
            p_reset: 0.0,
            p_behind: 0.0,
            behind: 0,
            p_extreme: 0.0,
            p_junk: 0.0,
        }
    }
}

/// One job of a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// Job id.
    pub job: u16,
    /// Workers.
    pub workers: u8,
    /// First chunk index (chunks are `first..first + chunks`).
    pub first: u32,
    /// Chunks.
    pub chunks: u32,
}

/// A generated workload: the script and what every chunk must sum to.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The packet geometry.
    pub geo: Geometry,
    /// The jobs.
    pub jobs: Vec<JobSpec>,
    /// The script.
    pub steps: Vec<Step>,
    /// Every chunk's exact sum over its workers (64-bit, never wraps).
    pub want: BTreeMap<ChunkId, Vec<i64>>,
    /// Duplicate DATA packets in the script.
    pub duplicates: usize,
}

/// The priority register write giving `job` priority `p`, on top of `prio`.
pub fn prio_write(prio: &mut [u32; 2], job: usize, p: u8) -> Step {
    let (r, f) = grad::prio_of(job);
    let i = job / grad::JOBS_PER_PRIO_REG;
    prio[i] = f.set(prio[i], p as u32);
    Step::Write {
        addr: r.addr,
        data: prio[i],
        strb: 0xf,
    }
}

fn value(rng: &mut ChaCha8Rng, p_extreme: f64) -> i32 {
    if rng.gen_bool(p_extreme) {
        match rng.gen_range(0..4) {
            0 => i32::MAX,
            1 => i32::MIN,
            2 => i32::MAX - rng.gen_range(0..8),
            _ => i32::MIN + rng.gen_range(0..8),
        }
    } else {
        rng.gen_range(-1000..=1000)
    }
}

/// A malformed copy of a DATA packet.
pub fn corrupt(geo: Geometry, rng: &mut ChaCha8Rng, mut p: Vec<u8>) -> Vec<u8> {
    match rng.gen_range(0..8) {
        0 => p[0] = packet::VERSION + 1 + rng.gen_range(0..3),
        1 => {
            p[1] = [
                0,
                packet::flags::RESULT,
                packet::flags::DATA | packet::flags::EVICT,
            ][rng.gen_range(0..3)]
        }
        2 => p[2] = p[2].wrapping_add(rng.gen_range(1..4)),
        3 => p[4] = JOBS as u8 + rng.gen_range(0..4),
        4 => p[7] = [0, MAX_WORKERS + 1, 255][rng.gen_range(0..3)],
        5 => p[6] = p[7].saturating_add(rng.gen_range(0..3)),
        6 => {
            let cut = rng.gen_range(1..=geo.beat_bytes().min(p.len()));
            p.truncate(p.len() - cut);
        }
        _ => p.extend(std::iter::repeat_n(
            0u8,
            rng.gen_range(1..=geo.beat_bytes()),
        )),
    }
    p
}

/// Generate a workload for `geo`, seeded.
pub fn generate(geo: Geometry, seed: u64, g: &Gen) -> Workload {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut jobs = vec![];
    let mut ids: Vec<u16> = (0..JOBS as u16).collect();
    for i in 0..g.jobs.clamp(1, JOBS) {
        let j = rng.gen_range(i..JOBS);
        ids.swap(i, j);
        jobs.push(JobSpec {
            job: ids[i],
            workers: rng.gen_range(1..=g.max_workers.clamp(1, MAX_WORKERS)),
            first: rng.gen_range(0..4) * 1000 + rng.gen_range(0..8),
            chunks: g.chunks,
        });
    }
    let mut prio = [0u32; 2];
    let mut steps = vec![];
    for j in &jobs {
        let p = rng.gen_range(0..=grad::PRIO_MAX);
        steps.push(prio_write(&mut prio, j.job as usize, p));
    }
    // One queue per (job, worker): its chunks in order.
    let mut want: BTreeMap<ChunkId, Vec<i64>> = BTreeMap::new();
    let mut queues: Vec<(usize, VecDeque<Vec<u8>>)> = vec![];
    for j in &jobs {
        let behind = if j.workers > 1 && rng.gen_bool(g.p_behind) {
            Some(rng.gen_range(0..j.workers))
        } else {
            None
        };
        for w in 0..j.workers {
            let mut q = VecDeque::new();
            for c in j.first..j.first + j.chunks {
                let vals: Vec<i32> = (0..geo.chunk_values())
                    .map(|_| value(&mut rng, g.p_extreme))
                    .collect();
                let sum = want
                    .entry((j.job, c))
                    .or_insert_with(|| vec![0; geo.chunk_values()]);
                for (s, v) in sum.iter_mut().zip(&vals) {
                    *s += *v as i64;
                }
                let mut h = Header::data(geo, j.job, c, w, j.workers);
                if rng.gen_bool(g.p_junk) {
                    h.bitmap = rng.gen();
                }
                // Encoding a chunk of the geometry's size cannot fail.
                let mut p = packet::encode(geo, &h, &vals).unwrap_or_default();
                if rng.gen_bool(g.p_junk) {
                    for b in &mut p[packet::HEADER_BYTES..geo.beat_bytes()] {
                        *b = rng.gen();
                    }
                }
                q.push_back(p);
            }
            let delay = if behind == Some(w) { g.behind } else { 0 };
            queues.push((delay, q));
        }
    }
    let mut stream: Vec<Vec<u8>> = vec![];
    let mut sent = 0usize;
    let mut dups: Vec<(usize, Vec<u8>)> = vec![];
    let mut duplicates = 0;
    loop {
        let ready: Vec<usize> = (0..queues.len())
            .filter(|&i| !queues[i].1.is_empty() && queues[i].0 <= sent)
            .collect();
        let qi = if ready.is_empty() {
            // Only workers still behind are left: let them go.
            match (0..queues.len()).find(|&i| !queues[i].1.is_empty()) {
                Some(i) => i,
                None => break,
            }
        } else {
            ready[rng.gen_range(0..ready.len())]
        };
        let Some(p) = queues[qi].1.pop_front() else {
            break;
        };
        if rng.gen_bool(g.p_dup) {
            dups.push((sent + rng.gen_range(1..6), p.clone()));
        }
        if rng.gen_bool(g.p_malformed) {
            let bad = corrupt(geo, &mut rng, p.clone());
            stream.push(bad);
        }
        stream.push(p);
        sent += 1;
        let (due, later): (Vec<_>, Vec<_>) = dups.into_iter().partition(|(at, _)| *at <= sent);
        dups = later;
        for (_, d) in due {
            stream.push(d);
            duplicates += 1;
        }
    }
    for (_, d) in dups {
        stream.push(d);
        duplicates += 1;
    }
    for p in stream {
        if rng.gen_bool(g.p_prio) {
            let j = &jobs[rng.gen_range(0..jobs.len())];
            let p = rng.gen_range(0..=grad::PRIO_MAX);
            steps.push(prio_write(&mut prio, j.job as usize, p));
        }
        if rng.gen_bool(g.p_flush) {
            steps.push(Step::Flush);
        }
        if rng.gen_bool(g.p_reset) {
            steps.push(Step::Write {
                addr: grad::CMD.addr,
                data: grad::CMD_RESET.set(0, 1),
                strb: 1,
            });
        }
        steps.push(Step::Packet(p));
    }
    steps.push(Step::Flush);
    Workload {
        geo,
        jobs,
        steps,
        want,
        duplicates,
    }
}

/// How a workload's chunks were completed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Chunks completed on the card.
    pub on_card: usize,
    /// Chunks completed by the host fallback.
    pub by_host: usize,
    /// Chunks the host could not complete because duplicates overlapped
    /// merged partials (only possible when the script has duplicates).
    pub conflicts: usize,
    /// Packets the host dropped as adding nothing.
    pub dropped: u64,
    /// Output packets.
    pub packets: usize,
    /// NACKs (duplicates answered with the slot's bitmap).
    pub nacks: usize,
}

/// Feed the card's output packets to the host merge and check every chunk:
/// completed exactly (modulo 2^32, as the card's sums wrap), or, only when
/// the script holds duplicates, reported as a conflict. Returns what
/// happened, or the first chunk that went wrong.
pub fn check(w: &Workload, packets: &[OutPacket]) -> Result<Report, String> {
    let mut host = HostMerge::new(w.geo);
    let mut rep = Report {
        packets: packets.len(),
        ..Report::default()
    };
    let mut conflicted = std::collections::BTreeSet::new();
    for p in packets {
        if let Some(h) = Header::decode(&p.bytes).filter(|h| h.kind() == Some(Kind::Nack)) {
            // A NACK names who is in a slot still waiting for someone: some
            // but not all of the chunk's workers. It carries no sums.
            let all = u32::MAX >> (32 - u32::from(h.workers.clamp(1, 32)));
            if h.bitmap == 0 || h.bitmap & !all != 0 || h.bitmap == all {
                return Err(format!(
                    "job {} chunk {}: a NACK with bitmap {:#x} of {} workers",
                    h.job, h.chunk, h.bitmap, h.workers
                ));
            }
            rep.nacks += 1;
            continue;
        }
        match host.accept(&p.bytes) {
            Ok(_) => {}
            Err(MergeError::Conflict { job, chunk, .. }) if w.duplicates > 0 => {
                conflicted.insert((job, chunk));
            }
            Err(e) => return Err(format!("host merge: {e} ({:?} packet)", p.kind)),
        }
    }
    for (id, sums) in &w.want {
        let exact: Vec<i32> = sums.iter().map(|s| *s as i32).collect();
        match host.result(*id) {
            Some(c) if c.sums == exact => {
                if c.on_card {
                    rep.on_card += 1;
                } else {
                    rep.by_host += 1;
                }
            }
            Some(c) => {
                return Err(format!(
                    "job {} chunk {}: sum {:?} (on card: {}), exact {:?}",
                    id.0, id.1, c.sums, c.on_card, exact
                ))
            }
            None if conflicted.contains(id) => rep.conflicts += 1,
            None => {
                let have = host.incomplete().find(|(c, _)| c == id).map(|(_, b)| b);
                return Err(format!(
                    "job {} chunk {}: never completed (workers merged: {:?})",
                    id.0, id.1, have
                ));
            }
        }
    }
    if let Some(c) = host.completed().find(|c| !w.want.contains_key(&c.id)) {
        return Err(format!("chunk {:?} completed but never sent", c.id));
    }
    rep.dropped = host.dropped;
    Ok(rep)
}
