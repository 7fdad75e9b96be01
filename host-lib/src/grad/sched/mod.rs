//! The multi-job scheduler: training jobs sharing the card, simulated in
//! device time (stream cycles at 250 MHz).
//!
//! Each job iterates: a compute phase, then every worker streams its
//! gradient tensor in chunks (one DATA packet of 64 values, 5 beats at 512
//! bits, per chunk) into the card's single input stream. The stream takes
//! one beat per cycle and is shared by every job; a packet is picked from
//! the workers with something to send in round-robin order, so workers are
//! interleaved fairly. A worker sends chunk `i` only once chunk
//! `i - window` is complete (SwitchML's pool of in-flight chunks). A chunk
//! completes on the card (a RESULT packet) or on the host fallback, which
//! merges EVICT and FALLBACK packets after its modelled cost
//! ([`super::host`]). The iteration ends when all its chunks are complete;
//! the job's completion time is its last iteration's end minus its arrival.
//!
//! Priorities come from weft-fw's policy and are written to the engine's
//! `PRIO_LO`/`PRIO_HI` registers through its register port: once for
//! `fifo` (all equal: no preemption) and `static`, and for `dsa` and `rank`
//! whenever a job arrives or leaves and every control window, grouped or
//! ranked by communication intensity from the jobs' observed rates (bytes sent per compute cycle
//! over their completed iterations), or their declared profile before they
//! have completed one.
//!
//! Split chunks (some contributions at the host, the rest in a slot a
//! later packet claimed) are completed by the host asking exactly the
//! workers it holds to send again ([`super::host`]).
//!
//! Reliability: with `loss` the network drops DATA packets; a worker sends
//! a chunk again when it has not completed within a timeout of its last
//! send, and the card's worker bitmap drops the copies it has already
//! summed. The timeout is the file's `timeout` or the smoothed completion
//! time plus four deviations (RFC 6298), whichever is larger, randomised
//! over [t, 1.5 t), doubled at each timeout of the chunk, and stopped once
//! the host acknowledged holding the contribution. Loss is detected long
//! before that by RACK (RFC 8985): workers send in order and a chunk
//! completes with its last packet, so a chunk still incomplete when one
//! sent after it completes has lost a packet, unless the host holds part
//! of it (its acknowledgement names the chunk to every worker of the job,
//! and the host's own resend requests complete it: first to the workers
//! it holds, then once to all). Its timer is brought forward to the
//! reordering window (a quarter of the smoothed completion time, at least
//! the host's round), doubled with each copy. After a worker's last chunk
//! of an iteration no later completion can reveal a loss, so its chunks
//! outstanding then time out at the tail-loss probe timeout (twice the
//! smoothed completion time at least; each completion re-arms it). The
//! engine drops a copy of the chunk a slot completed last (its done mark),
//! and a newer chunk of a job evicts an older one of its own, so a
//! copy that arrives late rarely holds a slot; the host still flushes the
//! card once no job is streaming whenever copies that could have claimed
//! one were sent since the last flush (every slot held then is a leftover,
//! and the host skims the EVICTs), and the report counts slots still held
//! at the end.
//!
//! Every completed chunk, from the card or the host, is compared with the
//! exact `i64` sum of the workers' fixed-point values.
//!
//! The workers' side (iterations, picking and sending packets, timeouts)
//! is in `workers`; the card's outputs and the host fallback in `outputs`.

mod outputs;
mod workers;

use super::card::GradSession;
use super::host::HostQueue;
use super::jobs::{JobSpec, JobsFile};
use super::report::{CardCounters, JobReport, PriorityPolicy, RunOptions, RunReport, Values};
use super::GradError;
use crate::card::Card;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::time::Instant;
use weft_fw::grad::{self as fw, JobObs, JobProfile};
use weft_model::grad_agg::host::HostMerge;
use weft_model::grad_agg::model::{counter, OutPacket};
use weft_model::grad_agg::packet::{Geometry, Kind};
use weft_model::net::Network;
use weft_regs::grad as regs;

/// Most doublings of a chunk's retransmission timeout.
const MAX_BACKOFF: u8 = 5;

/// Give up when nothing completes for this many timeouts: the run cannot
/// progress (a card that stopped answering, or a network that loses nearly
/// everything). Far above the longest backed-off timeout (1.5 x 2^5), so
/// that a run with heavy loss, slow as it is, is not cut short.
const STALL_TIMEOUTS: u64 = 1000;

#[derive(Clone, Debug)]
struct Worker {
    /// The cycle this iteration's compute is done.
    ready_at: u64,
    /// Next chunk of the iteration never sent.
    next: u32,
    /// Chunks to send again, oldest request first, each marked when the
    /// copy may arrive after its chunk completed (a timeout's guess, not
    /// the host's exact request).
    resend: VecDeque<(u32, bool)>,
    /// When each chunk in the window times out, at `chunk % window`.
    deadline: Vec<u64>,
    /// Timeouts of each chunk in the window so far (its backoff).
    tries: Vec<u8>,
    /// When each chunk in the window was first sent, and whether a copy
    /// followed (then its completion time is no sample: Karn's rule).
    sent: Vec<(u64, bool)>,
    /// The host acknowledged holding this worker's contribution to each
    /// chunk in the window: no timeout runs for it (the host asks again
    /// itself if the chunk stays incomplete).
    acked: Vec<bool>,
    /// When each chunk in the window was last sent (first send or copy):
    /// RACK marks a chunk lost only from completions of chunks sent after
    /// it, so a copy is not marked again until it had its chance.
    xmit: Vec<u64>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum State {
    Waiting,
    Running,
    Done,
}

struct Job {
    spec: JobSpec,
    id: u16,
    chunks: u32,
    state: State,
    iter: u32,
    complete: Vec<bool>,
    done: u32,
    /// Lowest chunk not complete.
    low: u32,
    workers: Vec<Worker>,
    merge: HostMerge,
    /// Workers whose contributions the host holds, per incomplete chunk.
    host_have: HashMap<u32, u32>,
    /// When the host asks for a split chunk again.
    resend_at: HashMap<u32, u64>,
    /// Chunks the host acknowledged contributions of (this iteration):
    /// its acknowledgement names the chunk to all of the job's workers, so
    /// those whose contribution it does not hold know the chunk is split
    /// (their packet is in a card slot the host's own resend requests will
    /// complete) or lost (their timeout recovers it), and RACK leaves it.
    at_host: HashSet<u32>,
    /// Rounds of the host's resend requests per split chunk.
    host_rounds: HashMap<u32, u32>,
    /// Observed over completed iterations: bytes sent, compute cycles.
    obs: JobObs,
    /// Smoothed time from a chunk's first send to its completion, and its
    /// variation (RFC 6298), for the retransmission timeout.
    srtt: f64,
    rttvar: f64,
    iter_bytes: u64,
    iter_compute: u64,
    finish: u64,
    /// Lowest and highest priority while running (`None` before any).
    priority: Option<(u8, u8)>,
    on_card: u64,
    by_host: u64,
    preempted: u64,
    fallbacks: u64,
    packets: u64,
    retransmissions: u64,
    host_resends: u64,
    lost: u64,
    /// The sums (of the iteration in progress, then of the last one), when
    /// collected (the `weft::grad` API).
    result: Option<Vec<i32>>,
}

impl Job {
    /// Gradient bytes still to aggregate, as the job's framework reports
    /// its progress: the iterations to come, and the chunks of this one its
    /// workers have not sent yet.
    fn remaining_bytes(&self) -> u64 {
        if self.state != State::Running {
            return 0;
        }
        let per_iter = self.spec.bytes_per_iter();
        let to_come = self.spec.iterations.saturating_sub(self.iter + 1) as u64 * per_iter;
        let unsent: u64 = self
            .workers
            .iter()
            .map(|w| self.chunks.saturating_sub(w.next) as u64)
            .sum();
        let per_chunk = per_iter / (self.chunks as u64 * self.workers.len() as u64).max(1);
        to_come + unsent * per_chunk
    }
}

/// A run in progress.
struct Run<'a> {
    card: GradSession<'a>,
    /// Device time the run started at (after the opening flush and reset).
    t0: u64,
    vals: &'a dyn Values,
    file: &'a JobsFile,
    opts: &'a RunOptions,
    geo: Geometry,
    window: u32,
    now: u64,
    rng: ChaCha8Rng,
    /// Timeout jitter (apart from `rng`, so the timeouts do not move the
    /// compute jitter and losses).
    rto_rng: ChaCha8Rng,
    /// The network's duplication and reordering (`weft_model::net`, its
    /// random stream apart from `rng`, so runs without them draw the same
    /// compute jitter and losses).
    net: Network,
    /// DATA packets the network delivered, waiting for the card's wire
    /// (ahead of new ones).
    arrived: VecDeque<Vec<u8>>,
    /// NACKs from the card.
    nacks: u64,
    jobs: Vec<Job>,
    /// (job, worker) in round-robin order.
    flat: Vec<(usize, usize)>,
    rr: usize,
    host: HostQueue,
    timers: BinaryHeap<Reverse<(u64, usize, u32, u32)>>,
    /// Acknowledgements on their way from the host to workers: (arrival,
    /// job, iteration, chunk, workers).
    acks: VecDeque<(u64, usize, u32, u32, u32)>,
    next_rto: Option<u64>,
    next_control: u64,
    prio_dirty: bool,
    prio_regs: Option<[u32; 2]>,
    /// The policy's last decision (`srpt`'s hysteresis).
    prio_levels: fw::Priorities,
    /// Each job's traffic class at the switch port in front of the card
    /// (modelled: a strict-priority egress queue per class; all 0 unless
    /// the policy uses classes).
    classes: [u8; fw::JOBS],
    priority_writes: u64,
    /// Copies sent since the last flush that may have arrived after their
    /// chunk completed, each leaving a leftover slot.
    suspects: u64,
    hold: bool,
    flush_written: bool,
    flushes: u64,
    host_stale: u64,
    stale_results: u64,
    stale_evictions: u64,
    /// Merge drops of finished iterations (the current ones' are in their
    /// merges).
    host_duplicates: u64,
    checked: u64,
    first_difference: Option<String>,
    last_progress: u64,
    out: Vec<OutPacket>,
}

/// Run the jobs of `file` on `card` with the values of `vals`.
///
/// Fails on a card output that cannot be decoded or merged, or when the run
/// cannot progress; a completed chunk that differs from its exact sum is
/// reported in [`RunReport::exact`] and [`RunReport::first_difference`].
pub fn run(
    card: &Card,
    file: &JobsFile,
    vals: &dyn Values,
    opts: &RunOptions,
) -> Result<RunReport, GradError> {
    run_collect(card, file, vals, opts, false).map(|(r, _)| r)
}

/// A job's collected sums (of its last iteration), when asked for.
pub(crate) type Sums = Option<Vec<i32>>;

/// [`run`], also returning each job's sums (of its last iteration) when
/// `collect` is set.
pub(crate) fn run_collect(
    card: &Card,
    file: &JobsFile,
    vals: &dyn Values,
    opts: &RunOptions,
    collect: bool,
) -> Result<(RunReport, Vec<Sums>), GradError> {
    opts.validate()?;
    let workers: Vec<u8> = file.jobs.iter().map(|j| j.workers).collect();
    let mut card = GradSession::open(card, &workers)?;
    let cfg = card.config();
    let geo = cfg.geometry();
    file.check(geo.chunk_values())?;
    // A card that ran before may hold leftover slots (chunks nobody will
    // finish) whose job ids and chunk indices this run reuses, and its
    // counters: flush, then clear the counters, so the run starts from an
    // empty table and its counters are its own. Device time starts after.
    let mut dropped = vec![];
    for cmd in [regs::CMD_FLUSH.set(0, 1), regs::CMD_RESET.set(0, 1)] {
        command(&mut card, cmd, &mut dropped)?;
    }
    let t0 = Instant::now();
    let jobs = file
        .jobs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let chunks = s.chunks(geo.chunk_values()) as u32;
            Job {
                spec: s.clone(),
                id: i as u16,
                chunks,
                state: State::Waiting,
                iter: 0,
                complete: vec![false; chunks as usize],
                done: 0,
                low: 0,
                workers: vec![
                    Worker {
                        ready_at: 0,
                        next: 0,
                        resend: VecDeque::new(),
                        deadline: vec![0; file.window as usize],
                        tries: vec![0; file.window as usize],
                        sent: vec![(0, false); file.window as usize],
                        acked: vec![false; file.window as usize],
                        xmit: vec![0; file.window as usize],
                    };
                    s.workers as usize
                ],
                merge: HostMerge::new(geo),
                host_have: HashMap::new(),
                resend_at: HashMap::new(),
                at_host: HashSet::new(),
                host_rounds: HashMap::new(),
                obs: JobObs::default(),
                srtt: 0.0,
                rttvar: 0.0,
                iter_bytes: 0,
                iter_compute: 0,
                finish: 0,
                priority: None,
                on_card: 0,
                by_host: 0,
                preempted: 0,
                fallbacks: 0,
                packets: 0,
                retransmissions: 0,
                host_resends: 0,
                lost: 0,
                result: collect.then(|| vec![0; chunks as usize * geo.chunk_values()]),
            }
        })
        .collect::<Vec<_>>();
    let flat = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| (0..job.workers.len()).map(move |w| (j, w)))
        .collect();
    let net = Network::new(opts.network(), opts.seed ^ 0x6e65_7400)
        .map_err(|e| GradError::Options(e.to_string()))?;
    let start = card.cycles();
    let mut r = Run {
        card,
        t0: start,
        vals,
        file,
        opts,
        geo,
        window: file.window,
        now: 0,
        rng: ChaCha8Rng::seed_from_u64(opts.seed ^ 0x6772_6164),
        rto_rng: ChaCha8Rng::seed_from_u64(opts.seed ^ 0x7274_6f00),
        net,
        arrived: VecDeque::new(),
        nacks: 0,
        jobs,
        flat,
        rr: 0,
        host: HostQueue::new(file.host, geo.chunk_values()),
        timers: BinaryHeap::new(),
        acks: VecDeque::new(),
        next_rto: None,
        next_control: file.control_window,
        prio_dirty: true,
        prio_regs: None,
        prio_levels: fw::fifo(),
        classes: [0; fw::JOBS],
        priority_writes: 0,
        suspects: 0,
        hold: false,
        flush_written: false,
        flushes: 0,
        host_stale: 0,
        stale_results: 0,
        stale_evictions: 0,
        host_duplicates: 0,
        checked: 0,
        first_difference: None,
        last_progress: 0,
        out: vec![],
    };
    r.main_loop()?;
    let leftover = r.final_flush()?;
    let mut counters = r.read_counters()?;
    counters.flushed -= leftover.min(counters.flushed);
    let mut rep = r.report(counters, t0.elapsed().as_secs_f64());
    rep.leftover_slots = leftover;
    let sums = r.jobs.iter_mut().map(|j| j.result.take()).collect();
    Ok((rep, sums))
}

/// Write `CMD` and run the card until it is idle again (a flush walks every
/// slot), collecting what it sends in `out`; an error if it never settles.
fn command(card: &mut GradSession, cmd: u32, out: &mut Vec<OutPacket>) -> Result<(), GradError> {
    // Anything queued drains first: a flush waits for the packet in
    // progress, and every slot takes 1 + value_beats cycles.
    let cfg = card.config();
    let limit = (cfg.slots() * (1 + cfg.value_beats)) as u64 * 2 + 1000;
    card.write_reg(&regs::CMD, cmd)?;
    for _ in 0..limit {
        if card.idle()? {
            return Ok(());
        }
        card.step(out)?;
    }
    Err(GradError::Card(format!(
        "the engine did not finish command {cmd:#x} within {limit} cycles"
    )))
}

impl Run<'_> {
    fn main_loop(&mut self) -> Result<(), GradError> {
        loop {
            self.events()?;
            if self.jobs.iter().all(|j| j.state == State::Done) {
                return Ok(());
            }
            self.watchdog()?;
            self.flush_step()?;
            // One frame waits behind the one streaming in, so the card's
            // input runs back to back (a frame is offered whole, and the
            // next would otherwise start a cycle after the last beat).
            if !self.hold && self.card.queued() < 2 {
                if let Some(p) = self.due_from_network() {
                    self.card.deliver(p)?;
                }
            }
            if !self.hold && self.card.queued() < 2 {
                // A lost packet costs the stream nothing: pick another.
                for _ in 0..64 {
                    match self.pick() {
                        Some(Some(p)) => {
                            self.card.deliver(p)?;
                            break;
                        }
                        Some(None) => continue,
                        None => break,
                    }
                }
            }
            if !self.hold && self.card.queued() == 0 && self.card.idle()? {
                match self.next_event() {
                    Some(t) if t > self.now => {
                        self.card.skip(t - self.now, &mut self.out)?;
                        self.now = self.card.cycles() - self.t0;
                        self.drain_out()?;
                        continue;
                    }
                    Some(_) => {}
                    None => return Err(self.stalled("nothing left to send or wait for")),
                }
            }
            self.card.step(&mut self.out)?;
            // Register accesses let device time pass too.
            self.now = self.card.cycles() - self.t0;
            self.drain_out()?;
        }
    }

    /// Fail when nothing has completed for [`STALL_TIMEOUTS`] timeouts
    /// while some worker had finished computing (compute phases are not
    /// stalls, however long).
    fn watchdog(&mut self) -> Result<(), GradError> {
        let limit = STALL_TIMEOUTS * self.file.timeout.max(self.file.host.resend_after);
        if self.now - self.last_progress <= limit {
            return Ok(());
        }
        let computed = self
            .jobs
            .iter()
            .filter(|j| j.state == State::Running)
            .flat_map(|j| j.workers.iter().map(|w| w.ready_at))
            .filter(|&t| t <= self.now)
            .max()
            .unwrap_or(0);
        self.last_progress = self.last_progress.max(computed);
        if self.now - self.last_progress > limit {
            return Err(self.stalled(&format!("no chunk completed in {limit} cycles")));
        }
        Ok(())
    }

    fn stalled(&self, why: &str) -> GradError {
        let waiting: Vec<String> = self
            .jobs
            .iter()
            .filter(|j| j.state != State::Done)
            .map(|j| {
                format!(
                    "{} iteration {} at {}/{} chunks",
                    j.spec.name, j.iter, j.done, j.chunks
                )
            })
            .collect();
        GradError::Stalled {
            cycle: self.now,
            why: format!("{why}; {}", waiting.join(", ")),
        }
    }

    fn drain_out(&mut self) -> Result<(), GradError> {
        let out = std::mem::take(&mut self.out);
        for p in &out {
            self.card_output(p)?;
        }
        self.out = out;
        self.out.clear();
        Ok(())
    }

    /// Flush when copies may have left slots behind and no job is streaming
    /// (every slot held then is a leftover): stop feeding, wait for the
    /// engine to drain, write `CMD.FLUSH`, wait for `STATUS` to clear.
    fn flush_step(&mut self) -> Result<(), GradError> {
        if !self.hold && self.suspects == 0 {
            return Ok(());
        }
        if !self.hold {
            let streaming = self.jobs.iter().any(|j| {
                j.state == State::Running && j.workers.iter().any(|w| w.ready_at <= self.now)
            });
            // Not while a job streams: the flush would evict its partials
            // in progress too, and each comes back as a split chunk.
            // Randomised timeouts keep leftovers rare, and the report counts
            // any still held at the end.
            if streaming {
                return Ok(());
            }
            self.hold = true;
        }
        if !self.flush_written {
            if self.card.queued() == 0 && self.card.idle()? {
                self.card.write_reg(&regs::CMD, regs::CMD_FLUSH.set(0, 1))?;
                self.flush_written = true;
            }
        } else if self.card.idle()? {
            self.hold = false;
            self.flush_written = false;
            self.suspects = 0;
            self.flushes += 1;
        }
        Ok(())
    }

    fn events(&mut self) -> Result<(), GradError> {
        let now = self.now;
        for j in 0..self.jobs.len() {
            if self.jobs[j].state == State::Waiting && self.jobs[j].spec.arrival <= now {
                self.jobs[j].state = State::Running;
                self.last_progress = now;
                self.start_iteration(j);
                self.prio_dirty = true;
            }
        }
        loop {
            if let Some(p) = self.host.pop_done(now) {
                self.host_merge(p)?;
            }
            let Some(useful) = self.host.startable(now).map(|p| self.useful(p)) else {
                break;
            };
            self.host.start(now, useful);
        }
        while let Some(&Reverse((t, j, iter, c))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            self.host_timer(t, j, iter, c);
        }
        while self.acks.front().is_some_and(|a| a.0 <= now) {
            if let Some((_, j, iter, c, bits)) = self.acks.pop_front() {
                self.ack(j, iter, c, bits);
            }
        }
        if self.next_rto.is_some_and(|t| t <= now) {
            self.scan_timeouts();
        }
        if now >= self.next_control {
            self.next_control = now + self.file.control_window;
            if self.opts.policy.observes() {
                self.prio_dirty = true;
            }
        }
        if self.prio_dirty {
            self.prio_dirty = false;
            self.apply_priorities()?;
        }
        Ok(())
    }

    fn next_event(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mut at = |x: u64| t = Some(t.map_or(x, |y| y.min(x)));
        for j in &self.jobs {
            match j.state {
                State::Waiting => at(j.spec.arrival),
                State::Running => {
                    for w in &j.workers {
                        if w.ready_at > self.now {
                            at(w.ready_at);
                        }
                    }
                }
                State::Done => {}
            }
        }
        if let Some(d) = self.host.next_event() {
            at(d);
        }
        if let Some(Reverse((d, ..))) = self.timers.peek() {
            at(*d);
        }
        if !self.arrived.is_empty() {
            at(self.now);
        }
        if let Some(d) = self.net.next_due() {
            at(d);
        }
        if let Some(d) = self.next_rto {
            at(d);
        }
        if self.opts.policy.observes() {
            at(self.next_control);
        }
        t
    }

    fn apply_priorities(&mut self) -> Result<(), GradError> {
        let mut profiles = [JobProfile::default(); fw::JOBS];
        let mut obs = [JobObs::default(); fw::JOBS];
        let mut fixed = [0u8; fw::JOBS];
        for (i, j) in self.jobs.iter().enumerate() {
            profiles[i] = JobProfile {
                active: j.state == State::Running,
                bytes_per_iter: j.spec.bytes_per_iter(),
                compute_per_iter: j.spec.compute,
                remaining_bytes: j.remaining_bytes(),
            };
            obs[i] = j.obs;
            fixed[i] = j.spec.priority.unwrap_or(0);
        }
        let policy = match self.opts.policy {
            PriorityPolicy::Fifo => fw::Policy::Fifo,
            PriorityPolicy::Static => fw::Policy::Static(fixed),
            PriorityPolicy::Dsa => fw::Policy::Dsa,
            PriorityPolicy::Rank => fw::Policy::Rank,
            PriorityPolicy::Srpt => fw::Policy::Srpt(self.prio_levels),
        };
        let p = policy.priorities(&profiles, Some(&obs));
        self.prio_levels = p;
        self.classes = policy.traffic_classes(&profiles, &p);
        for (i, j) in self.jobs.iter_mut().enumerate() {
            if j.state == State::Running {
                let v = p.get(i);
                j.priority = Some(j.priority.map_or((v, v), |(lo, hi)| (lo.min(v), hi.max(v))));
            }
        }
        let r = p.registers();
        let old = self.prio_regs;
        for (k, reg) in [regs::PRIO_LO, regs::PRIO_HI].iter().enumerate() {
            if old.is_none_or(|o| o[k] != r[k]) {
                self.card.write_reg(reg, r[k])?;
                self.priority_writes += 1;
            }
        }
        self.prio_regs = Some(r);
        Ok(())
    }

    /// After the last job: flush and count the slots still held (the
    /// report's figures are taken before, so this costs the run nothing).
    fn final_flush(&mut self) -> Result<u64, GradError> {
        let mut out = std::mem::take(&mut self.out);
        command(&mut self.card, regs::CMD_FLUSH.set(0, 1), &mut out)?;
        let n = out.iter().filter(|p| p.kind == Kind::Evict).count() as u64;
        out.clear();
        self.out = out;
        Ok(n)
    }

    fn read_counters(&mut self) -> Result<CardCounters, GradError> {
        let mut v = [0u64; counter::N];
        for (i, c) in v.iter_mut().enumerate() {
            let lo = self.card.read_reg(&regs::COUNTERS[2 * i], &mut self.out)?;
            let hi = self
                .card
                .read_reg(&regs::COUNTERS[2 * i + 1], &mut self.out)?;
            *c = lo as u64 | (hi as u64) << 32;
        }
        self.drain_out()?;
        Ok(CardCounters::from_counts(&v))
    }

    fn report(&self, counters: CardCounters, wall: f64) -> RunReport {
        let cv = self.geo.chunk_values();
        let jobs: Vec<JobReport> = self
            .jobs
            .iter()
            .map(|j| JobReport {
                name: j.spec.name.clone(),
                id: j.id,
                workers: j.spec.workers,
                values: j.spec.values,
                chunks_per_iteration: j.chunks as u64,
                iterations: j.spec.iterations,
                compute: j.spec.compute,
                intensity: j.spec.bytes_per_iter() as f64 / j.spec.compute.max(1) as f64,
                arrival: j.spec.arrival,
                finish: j.finish,
                jct: j.finish.saturating_sub(j.spec.arrival),
                on_card: j.on_card,
                by_host: j.by_host,
                preempted: j.preempted,
                fallback_packets: j.fallbacks,
                packets: j.packets,
                retransmissions: j.retransmissions,
                host_resends: j.host_resends,
                lost: j.lost,
                priority_min: j.priority.map_or(0, |p| p.0),
                priority_max: j.priority.map_or(0, |p| p.1),
            })
            .collect();
        let first = jobs.iter().map(|j| j.arrival).min().unwrap_or(0);
        let last = jobs.iter().map(|j| j.finish).max().unwrap_or(0);
        let makespan = last.saturating_sub(first).max(1);
        let values = self.file.total_values();
        let beats = self.card.beats();
        let ratio = |a: u64, b: u64| a as f64 / b.max(1) as f64;
        RunReport {
            card: self.card.kind(),
            slots: self.card.config().slots(),
            chunk_values: cv,
            policy: self.opts.policy,
            loss: self.opts.loss,
            dup: self.opts.dup,
            reorder: self.opts.reorder,
            duplicated: self.net.stats().duplicated,
            reordered: self.net.stats().reordered,
            undelivered: (self.net.in_flight() + self.arrived.len()) as u64,
            nacks: self.nacks,
            seed: self.opts.seed,
            window: self.window,
            average_jct: jobs.iter().map(|j| j.jct as f64).sum::<f64>() / jobs.len().max(1) as f64,
            makespan,
            chunks: jobs.iter().map(|j| j.on_card + j.by_host).sum(),
            on_card: jobs.iter().map(|j| j.on_card).sum(),
            by_host: jobs.iter().map(|j| j.by_host).sum(),
            exact: self.first_difference.is_none(),
            checked: self.checked,
            first_difference: self.first_difference.clone(),
            values,
            values_per_cycle: ratio(values, makespan),
            beats,
            stream_utilisation: ratio(beats, makespan),
            host_packets: self.host.served,
            host_skimmed: self.host.skimmed,
            host_busy_cycles: self.host.busy,
            host_max_queue: self.host.max_queue,
            host_stale: self.host_stale,
            stale_results: self.stale_results,
            stale_evictions: self.stale_evictions,
            host_duplicates: self.host_duplicates
                + self.jobs.iter().map(|j| j.merge.dropped).sum::<u64>(),
            flushes: self.flushes,
            leftover_slots: 0,
            priority_writes: self.priority_writes,
            counters,
            wall_seconds: wall,
            jobs,
        }
    }
}
