//! What a run reports, how it is asked for, and where the workers' values
//! come from.

use super::GradError;
use serde::Serialize;
use weft_model::grad_agg::model::counter;

/// Which weft-fw policy sets the job priorities.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PriorityPolicy {
    /// Every job the same priority: first come, first served, no preemption.
    Fifo,
    /// The priorities given in JOBS.toml.
    Static,
    /// Communication-intensive jobs first (after DSA), jobs of like
    /// intensity (within a factor 2) at one level.
    Dsa,
    /// The previous DSA: one level per distinct intensity.
    Rank,
    /// Shortest remaining work first, on the card's priorities and the
    /// switch's traffic classes (`weft_fw::grad::Policy::Srpt`).
    Srpt,
}

impl PriorityPolicy {
    /// Whether the policy ranks from observations (re-evaluated as jobs
    /// come and go and every control window).
    pub fn observes(self) -> bool {
        matches!(
            self,
            PriorityPolicy::Dsa | PriorityPolicy::Rank | PriorityPolicy::Srpt
        )
    }
}

impl std::str::FromStr for PriorityPolicy {
    type Err = GradError;
    fn from_str(s: &str) -> Result<Self, GradError> {
        match s {
            "fifo" => Ok(PriorityPolicy::Fifo),
            "static" => Ok(PriorityPolicy::Static),
            "dsa" => Ok(PriorityPolicy::Dsa),
            "rank" => Ok(PriorityPolicy::Rank),
            "srpt" => Ok(PriorityPolicy::Srpt),
            o => Err(GradError::Options(format!(
                "unknown policy {o:?} (fifo, static, dsa, rank or srpt)"
            ))),
        }
    }
}

impl std::fmt::Display for PriorityPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PriorityPolicy::Fifo => "fifo",
            PriorityPolicy::Static => "static",
            PriorityPolicy::Dsa => "dsa",
            PriorityPolicy::Rank => "rank",
            PriorityPolicy::Srpt => "srpt",
        })
    }
}

/// The longest a reordered DATA packet is held back, in cycles: the
/// network model's (`weft_model::net::NetConfig::IDEAL`), 8 us at 250 MHz.
pub const REORDER_DELAY: u64 = weft_model::net::NetConfig::IDEAL.reorder_delay;

/// How a run goes.
#[derive(Clone, Debug)]
pub struct RunOptions {
    /// The priority policy.
    pub policy: PriorityPolicy,
    /// Probability the network drops a worker's DATA packet.
    pub loss: f64,
    /// Probability that a DATA packet which got through arrives twice (the
    /// copy right behind it).
    pub dup: f64,
    /// Probability that a DATA packet is held back in the network for a
    /// uniform 1 to [`REORDER_DELAY`] cycles, so packets sent after it
    /// overtake it.
    pub reorder: f64,
    /// Seed of the workers' compute jitter, the losses and the timeouts'
    /// randomisation (the values are seeded apart: [`Seeded`]).
    pub seed: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            policy: PriorityPolicy::Fifo,
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            seed: 1,
        }
    }
}

impl RunOptions {
    /// The network between the workers and the card's wire port, as the
    /// network model takes it: duplication and reordering (a held-back
    /// packet waits up to [`REORDER_DELAY`] cycles), no delay of its own
    /// (the scheduler's wire is the delay). Loss is drawn apart, with the
    /// compute jitter, so runs with and without the others lose the same
    /// packets.
    pub fn network(&self) -> weft_model::net::NetConfig {
        weft_model::net::NetConfig {
            loss: 0.0,
            dup: self.dup,
            reorder: self.reorder,
            delay: 0,
            jitter: 0,
            reorder_delay: REORDER_DELAY,
        }
    }

    /// Check the options.
    pub fn validate(&self) -> Result<(), GradError> {
        if !(0.0..1.0).contains(&self.loss) {
            return Err(GradError::Options(format!(
                "loss {} must be in 0..1 (a probability below 1)",
                self.loss
            )));
        }
        self.network()
            .validate()
            .map_err(|e| GradError::Options(e.to_string()))?;
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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
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

impl CardCounters {
    /// From the engine's counters in register order.
    pub fn from_counts(v: &[u64; counter::N]) -> Self {
        Self {
            packets: v[counter::PKTS],
            aggregated: v[counter::AGGREGATED],
            completed: v[counter::COMPLETED],
            preempted: v[counter::PREEMPTED],
            fallbacks: v[counter::FALLBACKS],
            duplicates: v[counter::DUPLICATES],
            malformed: v[counter::MALFORMED],
            flushed: v[counter::FLUSHED],
        }
    }
}

/// A run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The card that ran the job: `sim:verilator`, `sim:rust-hdl` or `sim:model`.
    pub card: String,
    /// Aggregator slots.
    pub slots: usize,
    /// Values per chunk.
    pub chunk_values: usize,
    /// The policy.
    pub policy: PriorityPolicy,
    /// Network loss.
    pub loss: f64,
    /// Network duplication.
    pub dup: f64,
    /// Network reordering.
    pub reorder: f64,
    /// DATA packets the network delivered twice.
    pub duplicated: u64,
    /// DATA packets the network held back (reordered).
    pub reordered: u64,
    /// DATA packets still in the network (held back, or a duplicate) when
    /// the last job finished: they never reached the card.
    pub undelivered: u64,
    /// NACKs the card sent: a copy met its chunk's slot with its own
    /// contribution already in, and the NACK went to the workers missing.
    pub nacks: u64,
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
    /// Packets the host only read the header of (copies, chunks already
    /// complete).
    pub host_skimmed: u64,
    /// Host core cycles spent merging.
    pub host_busy_cycles: u64,
    /// Most packets queued at the host at once.
    pub host_max_queue: usize,
    /// EVICT and FALLBACK packets the host dropped as stale (a chunk
    /// already complete or of a past iteration, flushed leftovers).
    pub host_stale: u64,
    /// RESULT packets of chunks already complete (the host had completed
    /// them first).
    pub stale_results: u64,
    /// EVICTs of stale claims outside flushes: late copies of completed
    /// chunks that held a slot until a newer chunk of their job took it
    /// (the card counts them with its preemptions).
    pub stale_evictions: u64,
    /// Packets the host's merge dropped as adding no worker (copies).
    pub host_duplicates: u64,
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
