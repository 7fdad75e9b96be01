//! JOBS.toml: the training jobs that share the card, how their workers
//! stream, and the modelled host fallback. Every field is checked and a bad
//! one is reported by name (`job[2] (bert).workers: ...`).
//!
//! ```toml
//! window = 32             # chunks each worker keeps in flight (SwitchML's pool)
//! jitter = 0.02           # workers finish computing up to this fraction of
//!                         # the compute phase apart
//! control_window = 20000  # cycles between policy runs (dsa, rank)
//! timeout = 200000        # worker retransmission timeout, cycles
//!
//! [host]                  # the modelled host fallback (see `super::host`)
//! latency = 500           # cycles from the card's output to the host's merge
//! cycles_per_value = 1.0  # merge cost per value, one host core
//! resend_after = 2000     # cycles before the host asks for a split chunk again
//!
//! [[job]]
//! name = "resnet"
//! workers = 4             # 1..=32
//! values = 65536          # tensor length in 32-bit fixed-point values
//! compute = 200000        # compute cycles per iteration
//! iterations = 5
//! arrival = 0             # cycle the job arrives
//! priority = 3            # 0..=15, used by --policy static only
//! ```

use super::host::HostModel;
use super::GradError;
use serde::{Deserialize, Serialize};
use weft_model::grad_agg::packet::MAX_WORKERS;
use weft_regs::grad::{JOBS, PRIO_MAX};

/// One training job.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Name, unique in the file.
    pub name: String,
    /// Workers (data-parallel replicas), `1..=32`.
    pub workers: u8,
    /// Gradient tensor length in values (32-bit fixed point each).
    pub values: u64,
    /// Compute cycles per iteration (forward and backward pass).
    pub compute: u64,
    /// Iterations.
    pub iterations: u32,
    /// Cycle the job arrives.
    #[serde(default)]
    pub arrival: u64,
    /// Static priority, `0..=15` (used by `--policy static`; 0 when absent).
    #[serde(default)]
    pub priority: Option<u8>,
}

impl JobSpec {
    /// Chunks per iteration for `chunk_values` values per chunk.
    pub fn chunks(&self, chunk_values: usize) -> u64 {
        self.values.div_ceil(chunk_values as u64)
    }

    /// Gradient bytes aggregated per iteration: every worker's tensor.
    pub fn bytes_per_iter(&self) -> u64 {
        self.values * 4 * self.workers as u64
    }
}

/// A JOBS.toml file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobsFile {
    /// Chunks each worker keeps in flight: worker `w` sends chunk `i` of an
    /// iteration only once chunk `i - window` is complete.
    #[serde(default = "window")]
    pub window: u32,
    /// Workers of a job finish computing up to `jitter x compute` cycles
    /// apart (uniform, seeded): the stragglers whose partial chunks hold
    /// aggregator slots.
    #[serde(default = "jitter")]
    pub jitter: f64,
    /// Cycles between policy runs: `dsa` and `rank` recompute the
    /// priorities from the jobs' observed rates this often.
    #[serde(default = "control_window")]
    pub control_window: u64,
    /// Worker retransmission timeout in cycles: a chunk sent and not
    /// complete this long after is sent again.
    #[serde(default = "timeout")]
    pub timeout: u64,
    /// The modelled host fallback.
    #[serde(default)]
    pub host: HostModel,
    /// The jobs (at most 16, the card's job ids; job `i` gets id `i`).
    #[serde(rename = "job")]
    pub jobs: Vec<JobSpec>,
}

fn window() -> u32 {
    32
}
fn jitter() -> f64 {
    0.02
}
fn control_window() -> u64 {
    20_000
}
fn timeout() -> u64 {
    200_000
}

/// Largest tensor, in values (64 MiB of fixed point per worker).
pub const MAX_VALUES: u64 = 1 << 24;
/// Largest compute phase or arrival cycle (about an hour at 250 MHz).
pub const MAX_CYCLES: u64 = 1 << 40;

/// Parse and check a JOBS.toml text for an engine with `chunk_values`
/// values per chunk.
pub fn parse(text: &str, chunk_values: usize) -> Result<JobsFile, GradError> {
    let f: JobsFile = toml::from_str(text).map_err(|e| {
        // Name the line (and so the field) the TOML error is about.
        let at = e
            .span()
            .map(|s| {
                let before = &text.as_bytes()[..s.start.min(text.len())];
                let line = before.iter().filter(|&&b| b == b'\n').count();
                let src = text.lines().nth(line).unwrap_or("").trim();
                format!("line {} (`{src}`): ", line + 1)
            })
            .unwrap_or_default();
        GradError::Jobs(format!("{at}{}", e.message()))
    })?;
    f.check(chunk_values)?;
    Ok(f)
}

impl JobsFile {
    /// Check every field's range, naming the field that is wrong.
    pub fn check(&self, chunk_values: usize) -> Result<(), GradError> {
        let bad = |field: String, why: String| Err(GradError::Jobs(format!("{field}: {why}")));
        if self.window == 0 || self.window > 4096 {
            return bad("window".into(), "must be 1..=4096 chunks".into());
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            return bad(
                "jitter".into(),
                "must be 0..=1 (a fraction of compute)".into(),
            );
        }
        if !(1000..=1_000_000_000).contains(&self.control_window) {
            return bad(
                "control_window".into(),
                "must be 1000..=1000000000 cycles".into(),
            );
        }
        if !(1000..=MAX_CYCLES).contains(&self.timeout) {
            return bad(
                "timeout".into(),
                format!("must be 1000..={MAX_CYCLES} cycles"),
            );
        }
        self.host
            .check()
            .or_else(|(f, why)| bad(format!("host.{f}"), why))?;
        if self.jobs.is_empty() || self.jobs.len() > JOBS {
            return bad(
                "job".into(),
                format!("1 to {JOBS} jobs (the card's job ids and priority registers)"),
            );
        }
        for (i, j) in self.jobs.iter().enumerate() {
            let f = |name: &str| format!("job[{i}] ({}).{name}", j.name);
            if j.name.is_empty() || self.jobs[..i].iter().any(|o| o.name == j.name) {
                return bad(f("name"), "must be non-empty and unique".into());
            }
            if j.workers == 0 || j.workers > MAX_WORKERS {
                return bad(
                    f("workers"),
                    format!("must be 1..={MAX_WORKERS} (a slot's worker bitmap)"),
                );
            }
            if j.values == 0 || j.values > MAX_VALUES {
                return bad(f("values"), format!("must be 1..={MAX_VALUES}"));
            }
            if j.compute > MAX_CYCLES {
                return bad(f("compute"), format!("at most {MAX_CYCLES} cycles"));
            }
            if j.arrival > MAX_CYCLES {
                return bad(f("arrival"), format!("at most {MAX_CYCLES} cycles"));
            }
            if j.iterations == 0 {
                return bad(f("iterations"), "at least 1".into());
            }
            // Chunk indices on the wire are `iteration x chunks + i`, 32 bits.
            let wire = j.chunks(chunk_values) * j.iterations as u64;
            if wire > u32::MAX as u64 {
                return bad(
                    f("iterations"),
                    format!(
                        "{} iterations of {} chunks overflow the packet's 32-bit chunk index",
                        j.iterations,
                        j.chunks(chunk_values)
                    ),
                );
            }
            if j.priority.is_some_and(|p| p > PRIO_MAX) {
                return bad(f("priority"), format!("must be 0..={PRIO_MAX}"));
            }
        }
        Ok(())
    }

    /// Total values every job's workers send over the whole run (each
    /// worker's tensor, every iteration).
    pub fn total_values(&self) -> u64 {
        self.jobs
            .iter()
            .map(|j| j.values * j.workers as u64 * j.iterations as u64)
            .sum()
    }
}
