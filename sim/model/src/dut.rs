//! The device-under-test interface shared by models and simulators, the
//! step loop that drives it, and the step-level comparison of two runs.
//!
//! Time advances in base steps: one `eval` then one `tick` per step, the
//! tick raising every clock the block's [`Schedule`] says rises in that step,
//! all at one instant (see [`crate::clocks`] for the model of time). For a
//! single-clock block a step is a clock cycle.

use crate::clocks::Schedule;
use crate::ports::PortSet;

/// A clocked block seen at its ports: the reference model, the rust-hdl
/// simulation and the Verilated model all implement this.
///
/// One base step is `eval` (present inputs, settle combinational logic,
/// read outputs) followed by `tick` (the step's edge instant: every clock
/// scheduled for this step rises at once, latching the inputs given to the
/// last `eval`). A DUT counts its own steps from 0, so its schedule decides
/// which clocks a `tick` raises; for a single-clock block every `tick` is
/// one clock cycle.
pub trait Dut {
    /// The block's input ports.
    type In: PortSet;
    /// The block's output ports.
    type Out: PortSet;
    /// Present `inputs` and return the outputs they produce this step.
    fn eval(&mut self, inputs: &Self::In) -> Self::Out;
    /// Advance one base step: raise every clock scheduled for it.
    fn tick(&mut self);
    /// `eval` then `tick`, returning the outputs of `eval`: one whole base
    /// step, for callers that have nothing to do between the two (a
    /// simulator may do both in one call).
    fn cycle(&mut self, inputs: &Self::In) -> Self::Out {
        let o = self.eval(inputs);
        self.tick();
        o
    }
    /// Which witness this is ("model", "rust-hdl", "verilator"), for reports.
    fn witness(&self) -> &str;
    /// The clocks this DUT steps and when each rises. Witnesses compared
    /// step by step must report the same schedule, so the model of a block
    /// with other clocks than one named `clock` overrides this default (one
    /// clock named `clock` rising every step).
    fn schedule(&self) -> Schedule {
        Schedule::single("clock")
    }
    /// Where this DUT's time went, if it was asked to keep count (a
    /// simulator built with profiling); `None` otherwise.
    fn profile(&self) -> Option<DutProfile> {
        None
    }
}

/// Where a simulated DUT's time went, since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DutProfile {
    /// Base steps (one `eval` and one `tick` each).
    pub steps: u64,
    /// Seconds inside the simulator itself (for Verilator: the calls into
    /// the Verilated model).
    pub simulator: f64,
    /// Seconds packing inputs into, and unpacking outputs from, the
    /// simulator's port words.
    pub ports: f64,
}

/// Produces a block's inputs step by step and watches its outputs.
///
/// Drivers are deterministic given their seed and the outputs they observe,
/// so two DUTs that agree step by step receive identical stimulus.
pub trait Driver<I, O> {
    /// The inputs for the current step.
    fn drive(&mut self) -> I;
    /// See the outputs of the current step (after `eval`, before `tick`):
    /// this is where handshakes complete (for a multi-clock block, those of
    /// the domains whose clock rises in this step).
    fn observe(&mut self, inputs: &I, outputs: &O);
    /// All stimulus issued and every response received.
    fn finished(&self) -> bool;
}

/// The record of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Run {
    /// Base steps simulated (clock cycles of a single-clock block).
    pub cycles: u64,
    /// FNV-1a hash over every step's packed outputs.
    pub hash: u64,
    /// The running hash after each step, kept so a divergence can be
    /// located to its first step.
    pub trail: Vec<u64>,
}

/// A run that did not finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunError {
    /// Which witness hung.
    pub witness: String,
    /// The step limit it hit.
    pub limit: u64,
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: driver not finished after {} steps (the block stopped responding)",
            self.witness, self.limit
        )
    }
}

impl std::error::Error for RunError {}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Fold 32-bit words into an FNV-1a hash.
pub fn fnv1a(mut h: u64, words: &[u32]) -> u64 {
    for w in words {
        for b in w.to_le_bytes() {
            h ^= b as u64;
            h = h.wrapping_mul(FNV_PRIME);
        }
    }
    h
}

/// Drive `dut` with `driver` until the driver is finished, at most `limit`
/// base steps. Every step's outputs are hashed.
pub fn run<D, R>(dut: &mut D, driver: &mut R, limit: u64) -> Result<Run, RunError>
where
    D: Dut + ?Sized,
    R: Driver<D::In, D::Out> + ?Sized,
{
    let mut hash = FNV_OFFSET;
    let mut trail = Vec::new();
    let mut words = Vec::with_capacity(<D::Out as PortSet>::total_words());
    let mut cycles = 0u64;
    while !driver.finished() {
        if cycles >= limit {
            return Err(RunError {
                witness: dut.witness().to_string(),
                limit,
            });
        }
        let inputs = driver.drive();
        let outputs = dut.eval(&inputs);
        words.clear();
        outputs.pack(&mut words);
        hash = fnv1a(hash, &words);
        trail.push(hash);
        driver.observe(&inputs, &outputs);
        dut.tick();
        cycles += 1;
    }
    Ok(Run {
        cycles,
        hash,
        trail,
    })
}

/// Where two runs first differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// First base step whose outputs differ (or where one run ended early).
    pub step: u64,
    /// Steps of the first run.
    pub cycles_a: u64,
    /// Steps of the second run.
    pub cycles_b: u64,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "outputs diverge at step {} (runs of {} and {} steps)",
            self.step, self.cycles_a, self.cycles_b
        )
    }
}

/// Compare two runs step by step; `None` when every step's outputs agree.
pub fn compare(a: &Run, b: &Run) -> Option<Divergence> {
    if a.hash == b.hash && a.cycles == b.cycles {
        return None;
    }
    let common = a.trail.len().min(b.trail.len());
    let step = (0..common)
        .find(|&i| a.trail[i] != b.trail[i])
        .unwrap_or(common) as u64;
    Some(Divergence {
        step,
        cycles_a: a.cycles,
        cycles_b: b.cycles,
    })
}
