//! Gradient aggregation on the card (after SwitchML, ATP and DSA): the host
//! side of the `grad_agg` engine.
//!
//! Workers stream 32-bit fixed-point gradient chunks through the card's
//! pool of aggregator slots; a chunk completes on the card when every
//! worker of its job has contributed, or on the host fallback when its
//! partial sum was preempted by a higher-priority job or its packets were
//! forwarded because the slot was taken. Either way the sum is exact.
//!
//! ```no_run
//! # fn demo() -> Result<(), weft::grad::GradError> {
//! use weft::{grad::{GradJob, JobOptions}, Card};
//! let card = Card::open("sim").map_err(weft::grad::GradError::from_card)?;
//! let mut job = GradJob::open(card, JobOptions { workers: 2, len: 3, ..JobOptions::default() })?;
//! job.submit(0, &[0.5, -1.25, 3.0])?;
//! job.submit(1, &[0.25, 1.0, -3.0])?;
//! let summed = job.finish()?;
//! assert_eq!(summed.tensor, vec![0.75, -0.25, 0.0]);
//! # Ok(()) }
//! ```
//!
//! Layers, bottom up:
//! - [`card`]: the engine reached through the card's registers and frame
//!   ports ([`GradSession`]): DATA frames from each worker's address on the
//!   wire, RESULT copies to every worker, partials to the host fallback;
//! - [`host`]: the modelled cost of the host fallback (its merge is the
//!   model crate's exact `HostMerge`);
//! - [`sched`]: jobs sharing the card in device time: compute phases,
//!   windowed streaming, loss and retransmission, priorities from weft-fw's
//!   policies written to the engine's registers ([`run`]);
//! - [`jobs`]: the JOBS.toml format of `weft agg grad`;
//! - [`GradJob`]: one job's tensors in, the summed tensor out;
//! - [`bench`](mod@bench): `weft bench grad`, fifo against another policy on the shipped
//!   workloads ([`bench::WORKLOADS`]).
//!
//! `docs/grad-aggregation.md` describes the packet format, the engine, the
//! host model and the scheduler.

pub mod bench;
pub mod card;
pub mod host;
mod job;
pub mod jobs;
pub mod report;
pub mod sched;
pub mod udp;

pub use card::GradSession;
pub use host::HostModel;
pub use job::{GradJob, JobOptions, Summed};
pub use jobs::{parse, JobSpec, JobsFile};
pub use report::{
    CardCounters, JobReport, PriorityPolicy, RunOptions, RunReport, Seeded, Values, REORDER_DELAY,
};
pub use sched::run;

use weft_model::grad_agg::host::MergeError;

/// What can go wrong with gradient aggregation.
#[derive(Debug, thiserror::Error)]
pub enum GradError {
    /// A bad JOBS.toml: the message names the field.
    #[error("jobs file: {0}")]
    Jobs(String),
    /// Options or a job that cannot work.
    #[error("{0}")]
    Options(String),
    /// A worker id outside the job.
    #[error("worker {worker} is not in this job (workers 0..{workers})")]
    Worker {
        /// The worker given.
        worker: usize,
        /// Workers in the job.
        workers: usize,
    },
    /// A tensor of the wrong length.
    #[error("worker {worker}: tensor of {got} values, the job's is {want}")]
    Length {
        /// The worker.
        worker: usize,
        /// Values given.
        got: usize,
        /// The job's tensor length.
        want: usize,
    },
    /// A value does not fit the fixed-point range at the job's scale.
    #[error("worker {worker} value {index} ({value}): does not fit the fixed-point range at scale {scale} (|value x scale| must be at most {limit}, so that the sum over {workers} workers fits in 32 bits)")]
    Overflow {
        /// The worker.
        worker: usize,
        /// Index in the tensor.
        index: usize,
        /// The value.
        value: f64,
        /// The scale.
        scale: f64,
        /// The largest fixed-point magnitude allowed.
        limit: i32,
        /// Workers of the job.
        workers: u8,
    },
    /// A worker's tensor is missing at the end of a job.
    #[error("worker {0} submitted no tensor")]
    Missing(usize),
    /// The card sent something it should not (an engine bug).
    #[error("card: {0}")]
    Card(String),
    /// The host could not merge a card output.
    #[error("host fallback: {0}")]
    Merge(#[from] MergeError),
    /// A summed chunk differs from the exact sum.
    #[error("a sum is not exact: {0}")]
    Mismatch(String),
    /// The run cannot progress.
    #[error("stalled at cycle {cycle}: {why}")]
    Stalled {
        /// Device cycle.
        cycle: u64,
        /// What is stuck.
        why: String,
    },
    /// The device cannot run gradient jobs in this build.
    #[error("{0}")]
    Unsupported(String),
    /// A register access or frame transfer failed: the run cannot be
    /// trusted.
    #[error("card: {0}")]
    Device(weft_driver::Error),
}

impl GradError {
    /// A host-library error about the card, as a job error.
    pub fn from_card(e: crate::Error) -> Self {
        match e {
            crate::Error::Driver(d) => GradError::Device(d),
            other => GradError::Unsupported(other.to_string()),
        }
    }
}

/// The largest fixed-point magnitude a worker's value may have in a job of
/// `workers` workers: the sum of all of them then fits in an `i32`, so the
/// card's 32-bit sums (which wrap) are exact.
pub fn headroom(workers: u8) -> i32 {
    i32::MAX / workers.max(1) as i32
}

/// `x` in fixed point at `scale` (rounded to nearest), if it is finite and
/// within [`headroom`] for `workers` workers.
pub fn to_fixed(x: f32, scale: f64, workers: u8) -> Option<i32> {
    let q = (x as f64 * scale).round();
    let limit = headroom(workers) as f64;
    (q.is_finite() && q.abs() <= limit).then_some(q as i32)
}

/// A fixed-point sum back in floating point.
pub fn from_fixed(sum: i64, scale: f64) -> f32 {
    (sum as f64 / scale) as f32
}
