//! One gradient aggregation job: every worker's tensor in, the summed
//! tensor out.
//!
//! Tensors are converted to 32-bit fixed point at the job's scale (values
//! that do not fit are refused, see [`super::headroom`]), streamed through
//! the card as a job of its own by the scheduler ([`super::sched`]), and
//! every chunk, whether the card or the host fallback completed it, is
//! compared with the exact `i64` sum of the fixed-point values before the
//! result is returned.

use super::card::geometry;
use super::host::HostModel;
use super::jobs::{JobSpec, JobsFile, MAX_VALUES};
use super::report::{PriorityPolicy, RunOptions, RunReport, Values};
use super::sched::run_collect;
use super::{from_fixed, headroom, to_fixed, GradError};
use crate::card::Card;
use weft_model::grad_agg::packet::MAX_WORKERS;

/// How a job runs.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Workers, `1..=32`.
    pub workers: u8,
    /// Tensor length in values.
    pub len: usize,
    /// Fixed-point scale: value `x` is sent as `round(x * scale)`.
    pub scale: f64,
    /// Probability the network drops a DATA packet.
    pub loss: f64,
    /// Seed of the losses.
    pub seed: u64,
    /// Chunks each worker keeps in flight.
    pub window: u32,
    /// Retransmission timeout, cycles.
    pub timeout: u64,
    /// The modelled host fallback.
    pub host: HostModel,
}

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            workers: 1,
            len: 1,
            scale: 65536.0,
            loss: 0.0,
            seed: 1,
            window: 32,
            // A job alone on the card completes a chunk within a few hundred
            // cycles; 20000 (80 us) is far above that and recovers losses
            // quickly.
            timeout: 20_000,
            host: HostModel::default(),
        }
    }
}

/// A finished job.
pub struct Summed {
    /// The summed tensor, back in floating point.
    pub tensor: Vec<f32>,
    /// The exact fixed-point sums.
    pub fixed: Vec<i64>,
    /// How the run went.
    pub report: RunReport,
    /// The card, for the next job.
    pub card: Card,
}

/// A job collecting its workers' tensors.
pub struct GradJob {
    card: Card,
    opts: JobOptions,
    tensors: Vec<Option<Vec<i32>>>,
}

struct Given<'a>(&'a [Vec<i32>]);

impl Values for Given<'_> {
    fn value(&self, _job: usize, worker: usize, _iter: u32, idx: u64) -> i32 {
        self.0
            .get(worker)
            .and_then(|t| t.get(idx as usize))
            .copied()
            .unwrap_or(0)
    }
}

impl GradJob {
    /// Open a job on `card`.
    pub fn open(card: Card, opts: JobOptions) -> Result<Self, GradError> {
        if opts.workers == 0 || opts.workers > MAX_WORKERS {
            return Err(GradError::Options(format!(
                "{} workers: a job has 1 to {MAX_WORKERS}",
                opts.workers
            )));
        }
        if opts.len == 0 || opts.len as u64 > MAX_VALUES {
            return Err(GradError::Options(format!(
                "tensor length {}: must be 1..={MAX_VALUES}",
                opts.len
            )));
        }
        if !(opts.scale.is_finite() && opts.scale > 0.0) {
            return Err(GradError::Options(format!(
                "scale {}: must be finite and positive",
                opts.scale
            )));
        }
        RunOptions {
            loss: opts.loss,
            ..RunOptions::default()
        }
        .validate()?;
        let file = Self::file_of(&opts);
        file.check(geometry(&card)?.0.geometry().chunk_values())?;
        Ok(Self {
            tensors: vec![None; opts.workers as usize],
            card,
            opts,
        })
    }

    fn file_of(opts: &JobOptions) -> JobsFile {
        JobsFile {
            window: opts.window,
            jitter: 0.0,
            control_window: 1_000_000,
            timeout: opts.timeout,
            host: opts.host,
            jobs: vec![JobSpec {
                name: "job".into(),
                workers: opts.workers,
                values: opts.len as u64,
                compute: 0,
                iterations: 1,
                arrival: 0,
                priority: None,
            }],
        }
    }

    /// Workers in the job.
    pub fn workers(&self) -> usize {
        self.opts.workers as usize
    }

    fn check_worker(&self, worker: usize, len: usize) -> Result<(), GradError> {
        if worker >= self.tensors.len() {
            return Err(GradError::Worker {
                worker,
                workers: self.tensors.len(),
            });
        }
        if len != self.opts.len {
            return Err(GradError::Length {
                worker,
                got: len,
                want: self.opts.len,
            });
        }
        Ok(())
    }

    /// Worker `worker`'s tensor (replacing any earlier one), converted to
    /// fixed point; refused whole if any value does not fit.
    pub fn submit(&mut self, worker: usize, tensor: &[f32]) -> Result<(), GradError> {
        self.check_worker(worker, tensor.len())?;
        let (scale, workers) = (self.opts.scale, self.opts.workers);
        let fixed = tensor
            .iter()
            .enumerate()
            .map(|(index, &x)| {
                to_fixed(x, scale, workers).ok_or(GradError::Overflow {
                    worker,
                    index,
                    value: x as f64,
                    scale,
                    limit: headroom(workers),
                    workers,
                })
            })
            .collect::<Result<Vec<i32>, _>>()?;
        self.tensors[worker] = Some(fixed);
        Ok(())
    }

    /// Worker `worker`'s tensor already in fixed point; refused whole if a
    /// value is beyond [`headroom`].
    pub fn submit_fixed(&mut self, worker: usize, tensor: &[i32]) -> Result<(), GradError> {
        self.check_worker(worker, tensor.len())?;
        let limit = headroom(self.opts.workers);
        if let Some(index) = tensor.iter().position(|v| v.unsigned_abs() > limit as u32) {
            return Err(GradError::Overflow {
                worker,
                index,
                value: tensor[index] as f64 / self.opts.scale,
                scale: self.opts.scale,
                limit,
                workers: self.opts.workers,
            });
        }
        self.tensors[worker] = Some(tensor.to_vec());
        Ok(())
    }

    /// Stream every worker's tensor through the card and return the sum.
    /// Fails if a worker submitted nothing, the run cannot progress, or a
    /// sum differs from the exact one.
    pub fn finish(self) -> Result<Summed, GradError> {
        let GradJob {
            card,
            opts,
            tensors,
        } = self;
        let tensors = tensors
            .into_iter()
            .enumerate()
            .map(|(w, t)| t.ok_or(GradError::Missing(w)))
            .collect::<Result<Vec<_>, _>>()?;
        let file = Self::file_of(&opts);
        let ropts = RunOptions {
            policy: PriorityPolicy::Fifo,
            loss: opts.loss,
            seed: opts.seed,
            ..RunOptions::default()
        };
        let (report, mut sums) = run_collect(&card, &file, &Given(&tensors), &ropts, true)?;
        if let Some(d) = &report.first_difference {
            return Err(GradError::Mismatch(d.clone()));
        }
        let mut fixed: Vec<i64> = sums
            .pop()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .map(i64::from)
            .collect();
        fixed.truncate(opts.len);
        // The scheduler compared every chunk with the exact sum already;
        // this is the same check on the assembled tensor, so a slip in
        // assembling it cannot pass either.
        for (i, s) in fixed.iter().enumerate() {
            let want: i64 = tensors.iter().map(|t| t[i] as i64).sum();
            if *s != want {
                return Err(GradError::Mismatch(format!("value {i}: {s}, exact {want}")));
            }
        }
        Ok(Summed {
            tensor: fixed.iter().map(|&s| from_fixed(s, opts.scale)).collect(),
            fixed,
            report,
            card,
        })
    }
}
