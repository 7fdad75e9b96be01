//! `weft bench grad`: a multi-job workload under `fifo` and another policy
//! (`dsa` by default), on fresh cards of the same device, for several seeds
//! (the seed draws the workers' compute jitter, and under `fifo` the run's
//! fate hangs on it: see `docs/grad-aggregation.md`): the average job
//! completion time of each policy, the distribution of their per-seed
//! ratio (mean, median, worst seed), values summed per cycle, and where the
//! chunks were completed.
//!
//! A benchmark, not a test: it prints figures and fails only when a run
//! fails or a sum is not exact.

use super::jobs::{self, JobsFile};
use super::report::{PriorityPolicy, RunOptions, RunReport, Seeded};
use super::sched::run;
use super::GradError;
use crate::card::Card;
use serde::Serialize;

/// The shipped default workload (`examples/grad/jobs.toml`): six jobs of
/// different communication intensity arriving over time on a card whose
/// 256 slots are scarce, with stragglers.
pub const WORKLOAD: &str = include_str!("../../../examples/grad/jobs.toml");

/// Every shipped workload, by file name under `examples/grad/`: scarce
/// slots with stragglers (`jobs.toml`), jobs of equal intensity
/// (`equal.toml`: a policy should tie fifo) and many short jobs beside two
/// long ones (`short-long.toml`).
pub const WORKLOADS: [(&str, &str); 3] = [
    ("jobs.toml", WORKLOAD),
    (
        "equal.toml",
        include_str!("../../../examples/grad/equal.toml"),
    ),
    (
        "short-long.toml",
        include_str!("../../../examples/grad/short-long.toml"),
    ),
];

/// The shipped default workload, parsed for `chunk_values` values per chunk.
pub fn workload(chunk_values: usize) -> Result<JobsFile, GradError> {
    jobs::parse(WORKLOAD, chunk_values)
}

/// Every shipped workload, parsed: (file name, jobs).
pub fn workloads(chunk_values: usize) -> Result<Vec<(&'static str, JobsFile)>, GradError> {
    WORKLOADS
        .iter()
        .map(|(name, text)| {
            jobs::parse(text, chunk_values)
                .map(|f| (*name, f))
                .map_err(|e| GradError::Jobs(format!("{name}: {e}")))
        })
        .collect()
}

/// Both policies with one seed.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRuns {
    /// The seed.
    pub seed: u64,
    /// `fifo.average_jct / policy.average_jct` (above 1: the policy wins).
    pub jct_ratio: f64,
    /// The fifo run.
    pub fifo: RunReport,
    /// The run under the compared policy.
    pub policy: RunReport,
}

/// One policy's figures, averaged over the seeds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PolicyMeans {
    /// Average JCT, cycles.
    pub average_jct: f64,
    /// Makespan, cycles.
    pub makespan: f64,
    /// Values summed per cycle of makespan.
    pub values_per_cycle: f64,
    /// Chunks completed on the card.
    pub on_card: f64,
    /// Chunks completed by the host fallback.
    pub by_host: f64,
    /// Preemptions (card counter).
    pub preemptions: f64,
    /// Packets forwarded to the host (card counter).
    pub fallback_packets: f64,
    /// Each job's JCT, in file order.
    pub job_jct: Vec<f64>,
}

/// The distribution of the per-seed ratio `fifo average JCT / policy
/// average JCT` (above 1: the policy's jobs complete sooner).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RatioStats {
    /// Seeds.
    pub seeds: usize,
    /// The mean of the per-seed ratios.
    pub mean_of_ratios: f64,
    /// The ratio of the two policies' mean average JCTs.
    pub ratio_of_means: f64,
    /// The median per-seed ratio.
    pub median: f64,
    /// The smallest per-seed ratio (the policy's worst seed against fifo).
    pub worst: f64,
    /// The seed of [`RatioStats::worst`] (the first, on a tie).
    pub worst_seed: u64,
    /// The largest per-seed ratio.
    pub best: f64,
    /// The seed of [`RatioStats::best`] (the first, on a tie).
    pub best_seed: u64,
    /// Seeds where the policy's average JCT is more than 2% above fifo's
    /// (ratio below 1 / 1.02).
    pub seeds_lost_beyond_2pct: usize,
}

impl RatioStats {
    /// The statistics of `(seed, fifo average JCT, policy average JCT)`;
    /// `None` for no seeds.
    pub fn of(runs: &[(u64, f64, f64)]) -> Option<Self> {
        if runs.is_empty() {
            return None;
        }
        let ratio = |f: f64, p: f64| f / p.max(1.0);
        let n = runs.len();
        let rs: Vec<(f64, u64)> = runs.iter().map(|&(s, f, p)| (ratio(f, p), s)).collect();
        let mean_of_ratios = rs.iter().map(|r| r.0).sum::<f64>() / n as f64;
        let fifo = runs.iter().map(|r| r.1).sum::<f64>() / n as f64;
        let pol = runs.iter().map(|r| r.2).sum::<f64>() / n as f64;
        // The first seed of the smallest and of the largest ratio.
        let (mut worst, mut best) = (rs[0], rs[0]);
        for &r in &rs[1..] {
            if r.0 < worst.0 {
                worst = r;
            }
            if r.0 > best.0 {
                best = r;
            }
        }
        let mut sorted: Vec<f64> = rs.iter().map(|r| r.0).collect();
        sorted.sort_by(f64::total_cmp);
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(RatioStats {
            seeds: n,
            mean_of_ratios,
            ratio_of_means: ratio(fifo, pol),
            median,
            worst: worst.0,
            worst_seed: worst.1,
            best: best.0,
            best_seed: best.1,
            seeds_lost_beyond_2pct: rs.iter().filter(|r| r.0 * 1.02 < 1.0).count(),
        })
    }
}

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct GradBench {
    /// What ran the engine.
    pub card: String,
    /// Aggregator slots.
    pub slots: usize,
    /// The policy compared with fifo.
    pub policy: PriorityPolicy,
    /// Job names, in file order.
    pub jobs: Vec<String>,
    /// Each job's declared intensity (gradient bytes per compute cycle).
    pub intensity: Vec<f64>,
    /// fifo, averaged over the seeds.
    pub fifo: PolicyMeans,
    /// The compared policy, averaged over the seeds.
    pub other: PolicyMeans,
    /// The per-seed ratios' distribution.
    pub ratio: RatioStats,
    /// Every run.
    pub runs: Vec<SeedRuns>,
}

fn means(rs: &[&RunReport]) -> PolicyMeans {
    let n = rs.len().max(1) as f64;
    let avg = |f: &dyn Fn(&RunReport) -> f64| rs.iter().map(|r| f(r)).sum::<f64>() / n;
    let jobs = rs.first().map_or(0, |r| r.jobs.len());
    PolicyMeans {
        average_jct: avg(&|r| r.average_jct),
        makespan: avg(&|r| r.makespan as f64),
        values_per_cycle: avg(&|r| r.values_per_cycle),
        on_card: avg(&|r| r.on_card as f64),
        by_host: avg(&|r| r.by_host as f64),
        preemptions: avg(&|r| r.counters.preempted as f64),
        fallback_packets: avg(&|r| r.counters.fallbacks as f64),
        job_jct: (0..jobs)
            .map(|j| avg(&|r| r.jobs.get(j).map_or(0.0, |x| x.jct as f64)))
            .collect(),
    }
}

/// Run `file` under fifo then `policy` for each of `seeds`, each run on a
/// fresh card from `open`.
pub fn bench(
    open: &dyn Fn() -> Result<Card, GradError>,
    file: &JobsFile,
    policy: PriorityPolicy,
    seeds: &[u64],
    progress: Option<&dyn Fn(&str)>,
) -> Result<GradBench, GradError> {
    if seeds.is_empty() {
        return Err(GradError::Options("at least one seed".into()));
    }
    if policy == PriorityPolicy::Fifo {
        return Err(GradError::Options(
            "compare fifo with another policy (srpt, dsa, rank or static)".into(),
        ));
    }
    let mut runs = vec![];
    for &seed in seeds {
        let one = |policy: PriorityPolicy| -> Result<RunReport, GradError> {
            if let Some(p) = progress {
                p(&format!(
                    "{} jobs under {policy}, seed {seed}",
                    file.jobs.len()
                ));
            }
            let card = open()?;
            let opts = RunOptions {
                policy,
                seed,
                ..RunOptions::default()
            };
            let rep = run(&card, file, &Seeded(seed), &opts)?;
            if let Some(d) = &rep.first_difference {
                return Err(GradError::Mismatch(format!("{policy}, seed {seed}: {d}")));
            }
            Ok(rep)
        };
        let fifo = one(PriorityPolicy::Fifo)?;
        let other = one(policy)?;
        runs.push(SeedRuns {
            seed,
            jct_ratio: fifo.average_jct / other.average_jct.max(1.0),
            fifo,
            policy: other,
        });
    }
    let fifo = means(&runs.iter().map(|r| &r.fifo).collect::<Vec<_>>());
    let other = means(&runs.iter().map(|r| &r.policy).collect::<Vec<_>>());
    let triples: Vec<(u64, f64, f64)> = runs
        .iter()
        .map(|r| (r.seed, r.fifo.average_jct, r.policy.average_jct))
        .collect();
    let ratio =
        RatioStats::of(&triples).ok_or_else(|| GradError::Options("at least one seed".into()))?;
    let first = &runs[0].fifo;
    Ok(GradBench {
        card: first.card.clone(),
        slots: first.slots,
        policy,
        jobs: first.jobs.iter().map(|j| j.name.clone()).collect(),
        intensity: first.jobs.iter().map(|j| j.intensity).collect(),
        fifo,
        other,
        ratio,
        runs,
    })
}

/// Average job completion time at one loss rate, over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct LossPoint {
    /// Probability a worker's DATA packet is lost.
    pub p: f64,
    /// Average JCT per seed, cycles.
    pub average_jct: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// `mean` over the lossless mean.
    pub ratio: f64,
    /// Issue 16's bound on the ratio: `1.2 / (1 - p)`.
    pub bound: f64,
    /// Whether `ratio` is within `bound`.
    pub meets_bound: bool,
    /// Retransmissions per lost packet (every worker of a chunk resends it
    /// when its RESULT is late: only the card knows whose packet is
    /// missing); 0 without losses.
    pub copies_per_loss: f64,
    /// Worker retransmissions, summed over the seeds.
    pub retransmissions: u64,
    /// DATA packets the network lost, summed over the seeds.
    pub lost: u64,
    /// Copies the host fallback asked for (split chunks), summed.
    pub host_resends: u64,
}

/// The gradient side of `weft bench goodput`: `file` under `policy` at
/// 0, 1% and 5% DATA loss, duplication and reordering (each at that rate,
/// as the key-value side) for each of `seeds`, each run on a fresh card;
/// the mean average JCT against the lossless one. Fails when a sum is not
/// exact.
pub fn loss(
    open: &dyn Fn() -> Result<Card, GradError>,
    file: &JobsFile,
    policy: PriorityPolicy,
    seeds: &[u64],
) -> Result<Vec<LossPoint>, GradError> {
    if seeds.is_empty() {
        return Err(GradError::Options("at least one seed".into()));
    }
    let mut out: Vec<LossPoint> = vec![];
    for p in [0.0, 0.01, 0.05] {
        let (mut jct, mut rtx, mut lost, mut host) = (vec![], 0, 0, 0);
        for &seed in seeds {
            let card = open()?;
            let opts = RunOptions {
                policy,
                loss: p,
                dup: p,
                reorder: p,
                seed,
            };
            let rep = run(&card, file, &Seeded(seed), &opts)?;
            if let Some(d) = &rep.first_difference {
                return Err(GradError::Mismatch(format!("loss {p}, seed {seed}: {d}")));
            }
            rtx += rep.jobs.iter().map(|j| j.retransmissions).sum::<u64>();
            lost += rep.jobs.iter().map(|j| j.lost).sum::<u64>();
            host += rep.jobs.iter().map(|j| j.host_resends).sum::<u64>();
            jct.push(rep.average_jct);
        }
        let mean = jct.iter().sum::<f64>() / jct.len() as f64;
        let lossless = out.first().map_or(mean, |l| l.mean);
        let ratio = mean / lossless.max(1.0);
        let bound = 1.2 / (1.0 - p);
        out.push(LossPoint {
            p,
            average_jct: jct,
            mean,
            ratio,
            bound,
            meets_bound: ratio <= bound,
            copies_per_loss: if lost == 0 {
                0.0
            } else {
                rtx as f64 / lost as f64
            },
            retransmissions: rtx,
            lost,
            host_resends: host,
        });
    }
    Ok(out)
}
