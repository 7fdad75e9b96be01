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
//! `fifo` (all equal: no preemption) and `static`, and for `dsa` whenever a
//! job arrives or leaves and every control window, ranked by communication
//! intensity from the jobs' observed rates (bytes sent per compute cycle
//! over their completed iterations), or their declared profile before they
//! have completed one.
//!
//! Reliability: with `loss` the network drops DATA packets; a worker sends
//! a chunk again when it is not complete `timeout` cycles after its last
//! send, and the card's worker bitmap drops the copies it has already
//! summed. The engine keeps no memory of completed chunks, so a copy that
//! arrives after its chunk completed claims a slot nobody will finish; the
//! host flushes the card once no job is streaming whenever copies have been
//! sent since the last flush (every slot held then is such a leftover, and
//! the host drops the EVICTs).
//!
//! Every completed chunk, from the card or the host, is compared with the
//! exact `i64` sum of the workers' fixed-point values.

use super::card::GradCard;
use super::host::HostQueue;
use super::jobs::{JobSpec, JobsFile};
use super::GradError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::time::Instant;
use weft_fw::grad::{self as fw, JobObs, JobProfile};
use weft_model::grad_agg::host::{HostMerge, MergeError};
use weft_model::grad_agg::model::{counter, OutPacket};
use weft_model::grad_agg::packet::{self, Geometry, Header, Kind};
use weft_regs::grad as regs;

/// Which weft-fw policy sets the job priorities.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyKind {
    /// Every job the same priority: first come, first served, no preemption.
    Fifo,
    /// The priorities given in JOBS.toml.
    Static,
    /// Communication-intensive jobs first (after DSA).
    Dsa,
}

impl std::str::FromStr for PolicyKind {
    type Err = GradError;
    fn from_str(s: &str) -> Result<Self, GradError> {
        match s {
            "fifo" => Ok(PolicyKind::Fifo),
            "static" => Ok(PolicyKind::Static),
            "dsa" => Ok(PolicyKind::Dsa),
            o => Err(GradError::Options(format!(
                "unknown policy {o:?} (fifo, static or dsa)"
            ))),
        }
    }
}

impl std::fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PolicyKind::Fifo => "fifo",
            PolicyKind::Static => "static",
            PolicyKind::Dsa => "dsa",
        })
    }
}

/// How a run goes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The priority policy.
    pub policy: PolicyKind,
    /// Probability the network drops a worker's DATA packet.
    pub loss: f64,
    /// Seed of the values, the workers' compute jitter and the losses.
    pub seed: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            policy: PolicyKind::Fifo,
            loss: 0.0,
            seed: 1,
        }
    }
}

impl RunOptions {
    /// Check the options.
    pub fn validate(&self) -> Result<(), GradError> {
        if !(0.0..1.0).contains(&self.loss) {
            return Err(GradError::Options(format!(
                "loss {} must be in 0..1 (a probability below 1)",
                self.loss
            )));
        }
        Ok(())
    }
}

/// The workers' fixed-point values: value `idx` of `worker`'s tensor in
/// iteration `iter` of job `job` (indices past the tensor's end are never
/// asked for; chunks are padded with 0).
pub trait Values: Sync {
    /// The value.
    fn value(&self, job: usize, worker: usize, iter: u32, idx: u64) -> i32;
}

/// Seeded gradients: the fixed-point images (scale 2^16) of values drawn
/// uniformly from [-1, 1), a pure function of the seed and the position,
/// so they are regenerated for retransmissions and the reference instead
/// of stored.
#[derive(Copy, Clone, Debug)]
pub struct Seeded(pub u64);

fn mix(mut z: u64) -> u64 {
    // splitmix64's finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Values for Seeded {
    fn value(&self, job: usize, worker: usize, iter: u32, idx: u64) -> i32 {
        let mut h = mix(self.0 ^ 0x9e37_79b9_7f4a_7c15);
        for x in [job as u64, worker as u64, iter as u64, idx] {
            h = mix(h ^ x);
        }
        // 17 bits: [-65536, 65536).
        (h >> 47) as i32 - 65536
    }
}

/// One job's figures.
#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    /// Name.
    pub name: String,
    /// Job id on the card.
    pub id: u16,
    /// Workers.
    pub workers: u8,
    /// Tensor length in values.
    pub values: u64,
    /// Chunks per iteration.
    pub chunks_per_iteration: u64,
    /// Iterations.
    pub iterations: u32,
    /// Compute cycles per iteration (declared).
    pub compute: u64,
    /// Declared communication intensity: gradient bytes per compute cycle.
    pub intensity: f64,
    /// Arrival cycle.
    pub arrival: u64,
    /// Cycle its last chunk completed.
    pub finish: u64,
    /// Job completion time: finish - arrival.
    pub jct: u64,
    /// Chunks completed on the card.
    pub on_card: u64,
    /// Chunks completed by the host fallback.
    pub by_host: u64,
    /// Its partial sums evicted by a higher-priority job.
    pub preempted: u64,
    /// Its DATA packets the card forwarded to the host.
    pub fallback_packets: u64,
    /// DATA packets its workers sent (copies included).
    pub packets: u64,
    /// Copies sent after a timeout.
    pub retransmissions: u64,
    /// Copies sent at the host's request (split chunks).
    pub host_resends: u64,
    /// Packets the network dropped.
    pub lost: u64,
    /// Lowest priority the policy gave it while it ran.
    pub priority_min: u8,
    /// Highest priority the policy gave it while it ran (with `dsa`, ranks
    /// move as jobs arrive and leave).
    pub priority_max: u8,
}

/// Counters read from the engine's registers at the end of a run.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CardCounters {
    /// Packets in.
    pub packets: u64,
    /// Packets summed on the card.
    pub aggregated: u64,
    /// Chunks completed on the card.
    pub completed: u64,
    /// Preemptions.
    pub preempted: u64,
    /// Packets forwarded to the host.
    pub fallbacks: u64,
    /// Duplicates dropped.
    pub duplicates: u64,
    /// Malformed packets dropped.
    pub malformed: u64,
    /// Slots evicted by a flush.
    pub flushed: u64,
}

/// A run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// What ran the engine: `model`, `rtl:rust-hdl` or `rtl:verilator`.
    pub card: String,
    /// Aggregator slots.
    pub slots: usize,
    /// Values per chunk.
    pub chunk_values: usize,
    /// The policy.
    pub policy: PolicyKind,
    /// Network loss.
    pub loss: f64,
    /// Seed.
    pub seed: u64,
    /// Chunks in flight per worker.
    pub window: u32,
    /// Per job.
    pub jobs: Vec<JobReport>,
    /// Mean job completion time, cycles.
    pub average_jct: f64,
    /// First arrival to last finish, cycles.
    pub makespan: u64,
    /// Chunks completed (every job, every iteration).
    pub chunks: u64,
    /// Of them on the card.
    pub on_card: u64,
    /// Of them by the host fallback.
    pub by_host: u64,
    /// Every completed chunk equals the exact `i64` sum of its workers'
    /// values.
    pub exact: bool,
    /// Chunks compared with the exact sum.
    pub checked: u64,
    /// The first difference, if any.
    pub first_difference: Option<String>,
    /// Gradient values the workers contributed: sum of workers x values x
    /// iterations.
    pub values: u64,
    /// `values / makespan`.
    pub values_per_cycle: f64,
    /// Input beats the engine took.
    pub beats: u64,
    /// `beats / makespan`: how busy the input stream was.
    pub stream_utilisation: f64,
    /// Packets the host fallback merged.
    pub host_packets: u64,
    /// Host core cycles spent merging.
    pub host_busy_cycles: u64,
    /// Most packets queued at the host at once.
    pub host_max_queue: usize,
    /// Card outputs the host dropped as stale (a chunk already complete
    /// or of a past iteration, flushed leftovers).
    pub host_stale: u64,
    /// Flushes to clear leftover slots during the run.
    pub flushes: u64,
    /// Slots still held once every job had finished (copies that arrived
    /// after their chunk completed, never reclaimed): found by a last flush.
    pub leftover_slots: u64,
    /// Priority register writes.
    pub priority_writes: u64,
    /// The engine's counters.
    pub counters: CardCounters,
    /// Wall-clock seconds of the simulation (informational).
    pub wall_seconds: f64,
}

/// Give up when nothing completes for this many timeouts: the run cannot
/// progress (a card that stopped answering, or every packet lost).
const STALL_TIMEOUTS: u64 = 50;

#[derive(Clone, Debug)]
struct Worker {
    /// The cycle this iteration's compute is done.
    ready_at: u64,
    /// Next chunk of the iteration never sent.
    next: u32,
    /// Chunks to send again, oldest request first.
    resend: VecDeque<u32>,
    /// When each chunk in the window was last sent, at `chunk % window`.
    last_sent: Vec<u64>,
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
    iter_start: u64,
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
    /// Observed over completed iterations: bytes sent, compute cycles.
    obs: JobObs,
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
    /// Every iteration's sums, when collected (the `weft::grad` API).
    result: Option<Vec<i32>>,
}

/// A run in progress.
struct Run<'a> {
    card: &'a mut dyn GradCard,
    vals: &'a dyn Values,
    file: &'a JobsFile,
    opts: &'a RunOptions,
    geo: Geometry,
    window: u32,
    now: u64,
    rng: ChaCha8Rng,
    jobs: Vec<Job>,
    /// (job, worker) in round-robin order.
    flat: Vec<(usize, usize)>,
    rr: usize,
    host: HostQueue,
    timers: BinaryHeap<Reverse<(u64, usize, u32, u32)>>,
    next_rto: Option<u64>,
    next_control: u64,
    prio_dirty: bool,
    prio_regs: Option<[u32; 2]>,
    priority_writes: u64,
    /// Copies sent since the last flush: each may leave a leftover slot.
    suspects: u64,
    hold: bool,
    flush_written: bool,
    flushes: u64,
    host_stale: u64,
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
    card: &mut dyn GradCard,
    file: &JobsFile,
    vals: &dyn Values,
    opts: &RunOptions,
) -> Result<RunReport, GradError> {
    run_collect(card, file, vals, opts, false).map(|(r, _)| r)
}

/// [`run`], also returning each job's sums (of its last iteration) when
/// `collect` is set.
pub(crate) fn run_collect(
    card: &mut dyn GradCard,
    file: &JobsFile,
    vals: &dyn Values,
    opts: &RunOptions,
    collect: bool,
) -> Result<(RunReport, Vec<Option<Vec<i32>>>), GradError> {
    opts.validate()?;
    let cfg = card.config();
    let geo = cfg.geometry();
    file.check(geo.chunk_values())?;
    // A card that ran before may hold leftover slots (chunks nobody will
    // finish) whose job ids and chunk indices this run reuses, and its
    // counters: flush, then clear the counters, so the run starts from an
    // empty table and its counters are its own. Device time starts after.
    let mut dropped = vec![];
    for cmd in [regs::CMD_FLUSH.set(0, 1), regs::CMD_RESET.set(0, 1)] {
        card.write_reg(&regs::CMD, cmd);
        while !card.idle() {
            card.step(&mut dropped);
        }
    }
    let t0 = Instant::now();
    let start = 0;
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
                iter_start: 0,
                complete: vec![false; chunks as usize],
                done: 0,
                low: 0,
                workers: vec![
                    Worker {
                        ready_at: 0,
                        next: 0,
                        resend: VecDeque::new(),
                        last_sent: vec![0; file.window as usize],
                    };
                    s.workers as usize
                ],
                merge: HostMerge::new(geo),
                host_have: HashMap::new(),
                resend_at: HashMap::new(),
                obs: JobObs::default(),
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
    let mut r = Run {
        card,
        vals,
        file,
        opts,
        geo,
        window: file.window,
        now: start,
        rng: ChaCha8Rng::seed_from_u64(opts.seed ^ 0x6772_6164),
        jobs,
        flat,
        rr: 0,
        host: HostQueue::new(file.host),
        timers: BinaryHeap::new(),
        next_rto: None,
        next_control: start + file.control_window,
        prio_dirty: true,
        prio_regs: None,
        priority_writes: 0,
        suspects: 0,
        hold: false,
        flush_written: false,
        flushes: 0,
        host_stale: 0,
        checked: 0,
        first_difference: None,
        last_progress: start,
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

impl Run<'_> {
    fn main_loop(&mut self) -> Result<(), GradError> {
        loop {
            self.events()?;
            if self.jobs.iter().all(|j| j.state == State::Done) {
                return Ok(());
            }
            self.watchdog()?;
            self.flush_step();
            if !self.hold && self.card.queued() == 0 {
                // A lost packet costs the stream nothing: pick another.
                for _ in 0..64 {
                    match self.pick() {
                        Some(Some(p)) => {
                            self.card.deliver(p);
                            break;
                        }
                        Some(None) => continue,
                        None => break,
                    }
                }
            }
            if self.card.idle() && self.card.queued() == 0 && !self.hold {
                match self.next_event() {
                    Some(t) if t > self.now => {
                        self.card.skip(t - self.now);
                        self.now = t;
                        continue;
                    }
                    Some(_) => {}
                    None => return Err(self.stalled("nothing left to send or wait for")),
                }
            }
            self.card.step(&mut self.out);
            self.now += 1;
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
            self.from_card(p)?;
        }
        self.out = out;
        self.out.clear();
        Ok(())
    }

    /// Flush when copies may have left slots behind and no job is streaming
    /// (every slot held then is a leftover): stop feeding, wait for the
    /// engine to drain, write `CMD.FLUSH`, wait for `STATUS` to clear.
    fn flush_step(&mut self) {
        if !self.hold && self.suspects == 0 {
            return;
        }
        if !self.hold {
            let streaming = self.jobs.iter().any(|j| {
                j.state == State::Running && j.workers.iter().any(|w| w.ready_at <= self.now)
            });
            if self.suspects > 0 && !streaming {
                self.hold = true;
            } else {
                return;
            }
        }
        if !self.flush_written {
            if self.card.idle() && self.card.queued() == 0 {
                self.card
                    .write_reg(&regs::CMD, regs::CMD_FLUSH.set(0, 1));
                self.flush_written = true;
            }
        } else if self.card.idle() {
            self.hold = false;
            self.flush_written = false;
            self.suspects = 0;
            self.flushes += 1;
        }
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
        while let Some(p) = self.host.pop_due(now) {
            self.host_merge(p)?;
        }
        while let Some(&Reverse((t, j, iter, c))) = self.timers.peek() {
            if t > now || self.host.backlog(now) {
                break;
            }
            self.timers.pop();
            self.host_timer(t, j, iter, c);
        }
        if self.next_rto.is_some_and(|t| t <= now) {
            self.scan_timeouts();
        }
        if now >= self.next_control {
            self.next_control = now + self.file.control_window;
            if self.opts.policy == PolicyKind::Dsa {
                self.prio_dirty = true;
            }
        }
        if self.prio_dirty {
            self.prio_dirty = false;
            self.apply_priorities();
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
        if let Some(d) = self.host.next_due() {
            at(d);
        }
        // Timers wait while the host has merges to do; its next merge
        // wakes the run then.
        if let Some(Reverse((d, ..))) = self.timers.peek() {
            if !self.host.backlog(self.now) {
                at(*d);
            }
        }
        if let Some(d) = self.next_rto {
            at(d);
        }
        if self.opts.policy == PolicyKind::Dsa {
            at(self.next_control);
        }
        t
    }

    fn start_iteration(&mut self, j: usize) {
        let now = self.now;
        let jitter = self.file.jitter;
        let job = &mut self.jobs[j];
        job.iter_start = now;
        job.complete.fill(false);
        job.done = 0;
        job.low = 0;
        job.merge = HostMerge::new(self.geo);
        job.host_have.clear();
        job.resend_at.clear();
        job.iter_bytes = 0;
        let compute = job.spec.compute;
        let mut total = 0u64;
        for w in &mut job.workers {
            let extra = (compute as f64 * jitter * self.rng.gen::<f64>()) as u64;
            w.ready_at = now + compute + extra;
            w.next = 0;
            w.resend.clear();
            total += compute + extra;
        }
        job.iter_compute = total / job.workers.len() as u64;
    }

    /// The next packet for the stream, round-robin over the workers:
    /// `Some(Some(bytes))` to deliver, `Some(None)` when the network lost
    /// it, `None` when no worker has anything to send.
    fn pick(&mut self) -> Option<Option<Vec<u8>>> {
        let n = self.flat.len();
        let now = self.now;
        for k in 0..n {
            let idx = (self.rr + k) % n;
            let (j, w) = self.flat[idx];
            let job = &mut self.jobs[j];
            if job.state != State::Running {
                continue;
            }
            let low = job.low;
            let chunks = job.chunks;
            let wk = &mut job.workers[w];
            while wk
                .resend
                .front()
                .is_some_and(|&c| job.complete[c as usize])
            {
                wk.resend.pop_front();
            }
            let (c, copy) = if let Some(c) = wk.resend.pop_front() {
                (c, true)
            } else if wk.ready_at <= now && wk.next < chunks && wk.next < low + self.window {
                wk.next += 1;
                (wk.next - 1, false)
            } else {
                continue;
            };
            self.rr = idx + 1;
            return Some(self.send(j, w, c, copy));
        }
        None
    }

    fn send(&mut self, j: usize, w: usize, c: u32, copy: bool) -> Option<Vec<u8>> {
        let cv = self.geo.chunk_values();
        let job = &mut self.jobs[j];
        let slot = (c % self.window) as usize;
        job.workers[w].last_sent[slot] = self.now;
        let deadline = self.now + self.file.timeout;
        self.next_rto = Some(self.next_rto.map_or(deadline, |t| t.min(deadline)));
        job.packets += 1;
        job.iter_bytes += (cv * packet::VALUE_BYTES) as u64;
        if copy {
            self.suspects += 1;
        }
        if self.opts.loss > 0.0 && self.rng.gen_bool(self.opts.loss) {
            job.lost += 1;
            return None;
        }
        let h = Header::data(
            self.geo,
            job.id,
            job.iter * job.chunks + c,
            w as u8,
            job.spec.workers,
        );
        let len = job.spec.values;
        let vals: Vec<i32> = (0..cv as u64)
            .map(|k| {
                let idx = c as u64 * cv as u64 + k;
                if idx < len {
                    self.vals.value(j, w, job.iter, idx)
                } else {
                    0
                }
            })
            .collect();
        // A header of this geometry with a full chunk of values always
        // encodes.
        packet::encode(self.geo, &h, &vals).ok()
    }

    fn scan_timeouts(&mut self) {
        let now = self.now;
        let timeout = self.file.timeout;
        let window = self.window;
        let mut next: Option<u64> = None;
        for job in &mut self.jobs {
            if job.state != State::Running {
                continue;
            }
            for w in &mut job.workers {
                for c in job.low..w.next {
                    if job.complete[c as usize] || w.resend.contains(&c) {
                        continue;
                    }
                    let due = w.last_sent[(c % window) as usize] + timeout;
                    if due <= now {
                        w.resend.push_back(c);
                        job.retransmissions += 1;
                    } else {
                        next = Some(next.map_or(due, |t| t.min(due)));
                    }
                }
            }
        }
        self.next_rto = next;
    }

    fn host_timer(&mut self, t: u64, j: usize, iter: u32, c: u32) {
        let now = self.now;
        let resend_after = self.file.host.resend_after;
        let job = &mut self.jobs[j];
        if job.state != State::Running
            || job.iter != iter
            || job.complete[c as usize]
            || job.resend_at.get(&c) != Some(&t)
        {
            return;
        }
        let have = job.host_have.get(&c).copied().unwrap_or(0);
        for (w, wk) in job.workers.iter_mut().enumerate() {
            if have & (1 << w) != 0 && !wk.resend.contains(&c) {
                wk.resend.push_back(c);
                job.host_resends += 1;
            }
        }
        let d = now + resend_after;
        job.resend_at.insert(c, d);
        self.timers.push(Reverse((d, j, iter, c)));
    }

    /// Where a card output belongs: (job, chunk of the current iteration),
    /// or `None` when it is stale.
    fn locate(&self, h: &Header) -> Result<Option<(usize, u32)>, GradError> {
        let j = h.job as usize;
        let job = self.jobs.get(j).ok_or_else(|| {
            GradError::Card(format!(
                "a packet of job {} which is not running (chunk {})",
                h.job, h.chunk
            ))
        })?;
        let (iter, c) = (h.chunk / job.chunks, h.chunk % job.chunks);
        let live = job.state == State::Running && iter == job.iter && !job.complete[c as usize];
        Ok(live.then_some((j, c)))
    }

    fn from_card(&mut self, p: &OutPacket) -> Result<(), GradError> {
        let pk = packet::decode(self.geo, &p.bytes)
            .map_err(|e| GradError::Card(format!("undecodable {:?} packet: {e}", p.kind)))?;
        let h = pk.header;
        if h.job as usize >= self.jobs.len() {
            return Err(GradError::Card(format!(
                "a {:?} packet of job {}, which does not exist",
                p.kind, h.job
            )));
        }
        match p.kind {
            Kind::Result => match self.locate(&h)? {
                Some((j, c)) => self.complete(j, c, true, &pk.values),
                None => self.host_stale += 1,
            },
            Kind::Evict | Kind::Fallback => {
                let job = &mut self.jobs[h.job as usize];
                if p.kind == Kind::Fallback {
                    job.fallbacks += 1;
                } else if !self.flush_written {
                    // Flushes are written only with the engine drained, so
                    // an EVICT outside one is a preemption.
                    job.preempted += 1;
                }
                self.host
                    .push(self.now, p.clone(), self.geo.chunk_values());
            }
            Kind::Data => {
                return Err(GradError::Card(
                    "the card sent a DATA packet out".into(),
                ))
            }
        }
        Ok(())
    }

    fn host_merge(&mut self, p: OutPacket) -> Result<(), GradError> {
        let Some(h) = Header::decode(&p.bytes) else {
            return Err(GradError::Card("a short packet reached the host".into()));
        };
        let Some((j, c)) = self.locate(&h)? else {
            self.host_stale += 1;
            return Ok(());
        };
        let job = &mut self.jobs[j];
        match job.merge.accept(&p.bytes) {
            Ok(Some(done)) => {
                let sums = done.sums;
                self.complete(j, c, false, &sums);
            }
            Ok(None) => {
                let bits = match p.kind {
                    Kind::Fallback => 1u32.checked_shl(h.worker as u32).unwrap_or(0),
                    _ => h.bitmap,
                };
                *job.host_have.entry(c).or_default() |= bits;
                self.arm(j, c);
            }
            Err(MergeError::Conflict { .. }) => {
                // The host's partials and this one overlap in a way sums
                // cannot separate (copies after losses): every worker sends
                // the chunk to the card again, where it completes whole.
                for wk in &mut job.workers {
                    if !wk.resend.contains(&c) {
                        wk.resend.push_back(c);
                        job.host_resends += 1;
                    }
                }
                self.arm(j, c);
            }
            Err(e) => return Err(GradError::Merge(e)),
        }
        Ok(())
    }

    fn arm(&mut self, j: usize, c: u32) {
        let d = self.now + self.file.host.resend_after;
        let job = &mut self.jobs[j];
        job.resend_at.insert(c, d);
        self.timers.push(Reverse((d, j, job.iter, c)));
    }

    fn complete(&mut self, j: usize, c: u32, on_card: bool, sums: &[i32]) {
        self.last_progress = self.now;
        let cv = self.geo.chunk_values();
        let job = &mut self.jobs[j];
        let base = c as u64 * cv as u64;
        for (k, &got) in sums.iter().enumerate().take(cv) {
            let idx = base + k as u64;
            let want: i64 = if idx < job.spec.values {
                (0..job.workers.len())
                    .map(|w| self.vals.value(j, w, job.iter, idx) as i64)
                    .sum()
            } else {
                0
            };
            if got as i64 != want && self.first_difference.is_none() {
                self.first_difference = Some(format!(
                    "job {} iteration {} value {idx}: {} {got}, exact {want}",
                    job.spec.name,
                    job.iter,
                    if on_card { "card" } else { "host" }
                ));
            }
        }
        self.checked += 1;
        if let Some(r) = &mut job.result {
            let end = (base as usize + cv).min(r.len());
            r[base as usize..end].copy_from_slice(&sums[..end - base as usize]);
        }
        job.complete[c as usize] = true;
        job.done += 1;
        if on_card {
            job.on_card += 1;
        } else {
            job.by_host += 1;
        }
        job.host_have.remove(&c);
        job.resend_at.remove(&c);
        while job.low < job.chunks && job.complete[job.low as usize] {
            job.low += 1;
        }
        if job.done == job.chunks {
            job.obs.bytes += job.iter_bytes;
            job.obs.compute += job.iter_compute;
            job.iter += 1;
            if job.iter == job.spec.iterations {
                job.state = State::Done;
                job.finish = self.now;
                self.prio_dirty = true;
            } else {
                self.start_iteration(j);
            }
        }
    }

    fn apply_priorities(&mut self) {
        let mut profiles = [JobProfile::default(); fw::JOBS];
        let mut obs = [JobObs::default(); fw::JOBS];
        let mut fixed = [0u8; fw::JOBS];
        for (i, j) in self.jobs.iter().enumerate() {
            profiles[i] = JobProfile {
                active: j.state == State::Running,
                bytes_per_iter: j.spec.bytes_per_iter(),
                compute_per_iter: j.spec.compute,
            };
            obs[i] = j.obs;
            fixed[i] = j.spec.priority.unwrap_or(0);
        }
        let policy = match self.opts.policy {
            PolicyKind::Fifo => fw::Policy::Fifo,
            PolicyKind::Static => fw::Policy::Static(fixed),
            PolicyKind::Dsa => fw::Policy::Dsa,
        };
        let p = policy.priorities(&profiles, Some(&obs));
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
                self.card.write_reg(reg, r[k]);
                self.priority_writes += 1;
            }
        }
        self.prio_regs = Some(r);
    }

    /// After the last job: flush and count the slots still held (the
    /// report's figures are taken before, so this costs the run nothing).
    fn final_flush(&mut self) -> Result<u64, GradError> {
        self.card.write_reg(&regs::CMD, regs::CMD_FLUSH.set(0, 1));
        let mut n = 0;
        loop {
            self.card.step(&mut self.out);
            n += self.out.iter().filter(|p| p.kind == Kind::Evict).count() as u64;
            self.out.clear();
            if self.card.idle() {
                return Ok(n);
            }
        }
    }

    fn read_counters(&mut self) -> Result<CardCounters, GradError> {
        let mut v = [0u64; counter::N];
        for (i, c) in v.iter_mut().enumerate() {
            let lo = self.card.read_reg(&regs::COUNTERS[2 * i], &mut self.out);
            let hi = self.card.read_reg(&regs::COUNTERS[2 * i + 1], &mut self.out);
            *c = lo as u64 | (hi as u64) << 32;
        }
        self.drain_out()?;
        Ok(CardCounters {
            packets: v[counter::PKTS],
            aggregated: v[counter::AGGREGATED],
            completed: v[counter::COMPLETED],
            preempted: v[counter::PREEMPTED],
            fallbacks: v[counter::FALLBACKS],
            duplicates: v[counter::DUPLICATES],
            malformed: v[counter::MALFORMED],
            flushed: v[counter::FLUSHED],
        })
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
            card: self.card.kind().into(),
            slots: self.card.config().slots(),
            chunk_values: cv,
            policy: self.opts.policy,
            loss: self.opts.loss,
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
            host_busy_cycles: self.host.busy,
            host_max_queue: self.host.max_queue,
            host_stale: self.host_stale,
            flushes: self.flushes,
            leftover_slots: 0,
            priority_writes: self.priority_writes,
            counters,
            wall_seconds: wall,
            jobs,
        }
    }
}
