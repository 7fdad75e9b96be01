//! `weft bench grad`: the shipped multi-job workload under `fifo` and
//! `dsa` in one run, on fresh cards of the same device, with the same seed:
//! the average job completion time of each and their ratio, values summed
//! per cycle, and where the chunks were completed.
//!
//! A benchmark, not a test: it prints figures and fails only when a run
//! fails or a sum is not exact.

use super::card::OpenedCard;
use super::jobs::{self, JobsFile};
use super::sched::{run, PolicyKind, RunOptions, RunReport, Seeded};
use super::GradError;
use serde::Serialize;

/// The shipped workload (`examples/grad/jobs.toml`): six jobs of different
/// communication intensity arriving over time on a card whose 256 slots
/// are scarce.
pub const WORKLOAD: &str = include_str!("../../../examples/grad/jobs.toml");

/// The shipped workload, parsed for `chunk_values` values per chunk.
pub fn workload(chunk_values: usize) -> Result<JobsFile, GradError> {
    jobs::parse(WORKLOAD, chunk_values)
}

/// Both runs and their comparison.
#[derive(Clone, Debug, Serialize)]
pub struct GradBench {
    /// What ran the engine.
    pub card: String,
    /// Aggregator slots.
    pub slots: usize,
    /// Seed of both runs.
    pub seed: u64,
    /// Average JCT under fifo, cycles.
    pub fifo_average_jct: f64,
    /// Average JCT under dsa, cycles.
    pub dsa_average_jct: f64,
    /// `fifo_average_jct / dsa_average_jct`: above 1, dsa is faster.
    pub jct_ratio: f64,
    /// The fifo run.
    pub fifo: RunReport,
    /// The dsa run.
    pub dsa: RunReport,
}

/// Run `file` under fifo then dsa, each on a fresh card from `open`.
pub fn bench(
    open: &dyn Fn() -> Result<OpenedCard, GradError>,
    file: &JobsFile,
    seed: u64,
    progress: Option<&dyn Fn(&str)>,
) -> Result<GradBench, GradError> {
    let mut reports = vec![];
    for policy in [PolicyKind::Fifo, PolicyKind::Dsa] {
        if let Some(p) = progress {
            p(&format!("{} jobs under {policy}", file.jobs.len()));
        }
        let mut card = open()?;
        let opts = RunOptions {
            policy,
            loss: 0.0,
            seed,
        };
        let rep = run(card.card.as_mut(), file, &Seeded(seed), &opts)?;
        if let Some(d) = &rep.first_difference {
            return Err(GradError::Mismatch(format!("{policy}: {d}")));
        }
        reports.push(rep);
    }
    let dsa = reports.pop().ok_or_else(|| GradError::Options("no dsa run".into()))?;
    let fifo = reports.pop().ok_or_else(|| GradError::Options("no fifo run".into()))?;
    Ok(GradBench {
        card: fifo.card.clone(),
        slots: fifo.slots,
        seed,
        fifo_average_jct: fifo.average_jct,
        dsa_average_jct: dsa.average_jct,
        jct_ratio: fifo.average_jct / dsa.average_jct.max(1.0),
        fifo,
        dsa,
    })
}
