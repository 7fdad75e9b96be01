//! `weft bench grad`: the shipped multi-job workload under `fifo` and
//! `dsa`, on fresh cards of the same device, for several seeds (the seed
//! draws the workers' compute jitter, and under `fifo` the run's fate
//! hangs on it: see `docs/grad-aggregation.md`): the average job
//! completion time of each policy and their ratio, values summed per cycle,
//! and where the chunks were completed.
//!
//! A benchmark, not a test: it prints figures and fails only when a run
//! fails or a sum is not exact.

use super::jobs::{self, JobsFile};
use super::report::{PriorityPolicy, RunOptions, RunReport, Seeded};
use super::sched::run;
use super::GradError;
use crate::card::Card;
use serde::Serialize;

/// The shipped workload (`examples/grad/jobs.toml`): six jobs of different
/// communication intensity arriving over time on a card whose 256 slots
/// are scarce.
pub const WORKLOAD: &str = include_str!("../../../examples/grad/jobs.toml");

/// The shipped workload, parsed for `chunk_values` values per chunk.
pub fn workload(chunk_values: usize) -> Result<JobsFile, GradError> {
    jobs::parse(WORKLOAD, chunk_values)
}

/// Both policies with one seed.
#[derive(Clone, Debug, Serialize)]
pub struct SeedRuns {
    /// The seed.
    pub seed: u64,
    /// `fifo.average_jct / dsa.average_jct`.
    pub jct_ratio: f64,
    /// The fifo run.
    pub fifo: RunReport,
    /// The dsa run.
    pub dsa: RunReport,
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

/// The comparison.
#[derive(Clone, Debug, Serialize)]
pub struct GradBench {
    /// What ran the engine.
    pub card: String,
    /// Aggregator slots.
    pub slots: usize,
    /// Job names, in file order.
    pub jobs: Vec<String>,
    /// Each job's declared intensity (gradient bytes per compute cycle).
    pub intensity: Vec<f64>,
    /// fifo, averaged over the seeds.
    pub fifo: PolicyMeans,
    /// dsa, averaged over the seeds.
    pub dsa: PolicyMeans,
    /// `fifo.average_jct / dsa.average_jct` (of the means).
    pub jct_ratio: f64,
    /// Smallest and largest per-seed ratio.
    pub jct_ratio_range: (f64, f64),
    /// Median per-seed ratio.
    pub jct_ratio_median: f64,
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

/// Run `file` under fifo then dsa for each of `seeds`, each run on a fresh
/// card from `open`.
pub fn bench(
    open: &dyn Fn() -> Result<Card, GradError>,
    file: &JobsFile,
    seeds: &[u64],
    progress: Option<&dyn Fn(&str)>,
) -> Result<GradBench, GradError> {
    if seeds.is_empty() {
        return Err(GradError::Options("at least one seed".into()));
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
                loss: 0.0,
                seed,
            };
            let rep = run(&card, file, &Seeded(seed), &opts)?;
            if let Some(d) = &rep.first_difference {
                return Err(GradError::Mismatch(format!("{policy}, seed {seed}: {d}")));
            }
            Ok(rep)
        };
        let fifo = one(PriorityPolicy::Fifo)?;
        let dsa = one(PriorityPolicy::Dsa)?;
        runs.push(SeedRuns {
            seed,
            jct_ratio: fifo.average_jct / dsa.average_jct.max(1.0),
            fifo,
            dsa,
        });
    }
    let fifo = means(&runs.iter().map(|r| &r.fifo).collect::<Vec<_>>());
    let dsa = means(&runs.iter().map(|r| &r.dsa).collect::<Vec<_>>());
    let mut ratios: Vec<f64> = runs.iter().map(|r| r.jct_ratio).collect();
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = if n % 2 == 1 {
        ratios[n / 2]
    } else {
        (ratios[n / 2 - 1] + ratios[n / 2]) / 2.0
    };
    let first = &runs[0].fifo;
    Ok(GradBench {
        card: first.card.clone(),
        slots: first.slots,
        jobs: first.jobs.iter().map(|j| j.name.clone()).collect(),
        intensity: first.jobs.iter().map(|j| j.intensity).collect(),
        jct_ratio: fifo.average_jct / dsa.average_jct.max(1.0),
        jct_ratio_range: (ratios[0], ratios[n - 1]),
        jct_ratio_median: median,
        fifo,
        dsa,
        runs,
    })
}
