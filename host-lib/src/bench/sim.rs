//! `weft bench sim`: how fast the simulated card runs, counted in
//! `axis_aclk` cycles per second of wall time.
//!
//! The card is `weft_top` behind the same seams every job uses (registers
//! through AXI4-Lite across the clock crossing, frames on its two stream
//! ports: `SimDevice`), configured by the top's random configuration and
//! fed sustained mixed traffic on both inputs (`weft_model::top_traffic`:
//! key-value packets with duplicates and reordering, gradient chunks of
//! four jobs, MemOps transactions, frames for other hosts and malformed
//! ones), kept topped up so that the inputs never run dry.
//!
//! The same seeded traffic runs on every simulation in one run:
//! - Verilator on the Verilog every tool is given (one combinational block
//!   per signal, `weft_hdl::comb_split`, and every register folded into a
//!   clocked block of its parent, `weft_hdl::dff_fold`), its streams
//!   driven inside the
//!   model (`weft_run`: many steps a call), on the profile-guided build
//!   (`weft_sim::prebuilt::top_training`), as every job runs it;
//! - the same build untrained; untrained on the split Verilog with every
//!   register still a module of its own (the speed before the fold); and
//!   the runner with two evaluations a step;
//! - the same model stepped by the harness one FFI call a step, the
//!   streams offered and collected beat by beat in Rust: the speed before
//!   the model's stream runner;
//! - Verilator on the Verilog as rust-hdl writes it (one combinational
//!   block per module, a module a register), stepped: the speed before
//!   the split and the fold;
//! - rust-hdl's own simulator (a shorter run: it is ~1000x slower);
//! - the top's reference model (`sim:model`: frames exact, cycles a timing
//!   model).
//!
//! The Verilator runs and the model's of a round take turns, 16,384 cycles
//! each, so they see the same machine; the fastest of `repeat`
//! rounds is kept.
//!
//! The RTL runs must send the same frames at the same cycles over
//! the cycles they share (checked, and reported as `agree`). A second,
//! profiled Verilator run says where the time goes: inside the Verilated
//! model, packing its ports into words, or in the harness around it.
//!
//! Nothing here is a pass/fail test; the figures depend on the machine.

use crate::{Error, Result};
use serde::Serialize;
use std::collections::VecDeque;
use std::time::Instant;
use weft_driver::{FramePorts, Port};
use weft_hdl::emit::Shape;
use weft_model::top_traffic::Sustained;
use weft_sim::device::SimKind;
use weft_sim::{SimDevice, SimulatorOptions};

/// What to run.
pub struct SimBenchOptions<'a> {
    /// Cycles of traffic on Verilator and on the model.
    pub cycles: u64,
    /// Cycles of traffic on rust-hdl's simulator (0: skip it).
    pub rust_hdl_cycles: u64,
    /// Seed of the configuration and the traffic.
    pub seed: u64,
    /// Runs of each Verilator and model simulation; the fastest is kept.
    pub repeat: u32,
    /// Only the simulations of these names (as the report names them);
    /// all when empty.
    pub only: Vec<String>,
    /// Offer no frames after the configuration: what evaluating every
    /// block every cycle costs with nothing to do, against which the
    /// traffic's own cost shows.
    pub idle: bool,
    /// Progress messages.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
}

/// Frames kept waiting on each input: enough that an input never runs dry
/// between two top-ups.
const BACKLOG: usize = 48;
/// Key-value packets per traffic batch (the other engines' in proportion).
const BATCH: usize = 24;
/// Cycles advanced between two top-ups.
const SLICE: u64 = 256;
/// Cycles of one run's turn when the runs of a round take turns: short
/// enough (tens of milliseconds) that the machine's drift falls on every
/// run alike, long enough that bringing a model's code and state back into
/// the caches (each is megabytes) costs nothing measurable.
const TURN: u64 = 16_384;

/// One simulation's run.
#[derive(Clone, Debug, Serialize)]
pub struct SimRun {
    /// Which simulation: `verilator`, `verilator, rust-hdl's Verilog`,
    /// `rust-hdl` or `model`.
    pub simulation: String,
    /// Cycles of traffic (after configuration).
    pub cycles: u64,
    /// Wall seconds for them, without the time spent making the traffic.
    pub seconds: f64,
    /// Cycles per second.
    pub cycles_per_second: f64,
    /// Frames offered on the two inputs.
    pub frames_in: u64,
    /// Frames the card sent on its two outputs.
    pub frames_out: u64,
    /// Input bytes the card took per cycle (of the 128 its two 512-bit
    /// inputs could take).
    pub bytes_in_per_cycle: f64,
    /// Where the time went, for the profiled Verilator run.
    pub profile: Option<Profile>,
}

/// Where a Verilator run's time went, as fractions of its wall time
/// (traffic making excluded).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Profile {
    /// Cycles per second of the profiled run (timing costs a few percent).
    pub cycles_per_second: f64,
    /// Inside the Verilated model (its `eval` for each input change and
    /// clock edge).
    pub model: f64,
    /// Packing the top's ports into the model's words and back.
    pub ports: f64,
    /// The harness: driving the stream and register interfaces beat by
    /// beat, collecting frames.
    pub harness: f64,
}

/// All runs.
#[derive(Clone, Debug, Serialize)]
pub struct SimBench {
    /// Seed of the configuration and traffic.
    pub seed: u64,
    /// No frames were offered after the configuration.
    pub idle: bool,
    /// Cycles the register configuration took before the traffic (the same
    /// on every RTL run).
    pub config_cycles: u64,
    /// The runs, fastest simulation first.
    pub runs: Vec<SimRun>,
    /// Verilator on the Verilog every tool gets (split and folded) over
    /// Verilator on rust-hdl's own, both stepped by the harness.
    pub split_speedup: Option<f64>,
    /// Verilator with the streams run inside the model (two evaluations a
    /// step) over the same model stepped by the harness.
    pub runner_speedup: Option<f64>,
    /// One evaluation a step over two, both in the model's runner.
    pub one_eval_speedup: Option<f64>,
    /// The trained (profile-guided) model over the same build untrained,
    /// both in the runner with one evaluation a step.
    pub training_speedup: Option<f64>,
    /// The registers folded into their parents' clocked blocks and the
    /// constants wired (`weft_hdl::dff_fold`, `weft_hdl::const_wires`) over
    /// each register a module of its own and the constants in their blocks,
    /// both untrained in the runner with one evaluation a step.
    pub fold_speedup: Option<f64>,
    /// Whether the RTL runs sent the same frames at the same cycles, over
    /// the cycles they all simulated.
    pub agree: bool,
    /// Cycles over which `agree` was checked.
    pub compared_cycles: u64,
    /// Cycles over which the Verilator runs were compared with each other
    /// (all of them).
    pub verilator_compared_cycles: u64,
}

/// What one run saw: the figures and a digest of every frame sent before
/// a cycle limit.
struct Drive {
    run: SimRun,
    config_cycles: u64,
    /// (cycle, port, bytes) of every frame out before the compare limit.
    frames: Vec<(u64, bool, Vec<u8>)>,
}

impl SimBenchOptions<'_> {
    /// Whether the simulation named `name` is to run (`only`).
    fn runs(&self, name: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name)
    }
}

fn note(opts: &SimBenchOptions, msg: &str) {
    if let Some(p) = opts.progress {
        p(msg);
    }
}

/// Run the card on every simulation; see the module documentation.
pub fn run(opts: &SimBenchOptions) -> Result<SimBench> {
    // Every RTL run records its frames; each pair is compared over the
    // cycles both ran (rust-hdl's run is the short one).
    let compare = opts.cycles;
    let mut drives: Vec<(usize, Drive)> = Vec::new();
    let plan: Vec<(&str, SimKind, Shape, bool, u64)> = vec![
        (
            VERILATOR,
            SimKind::Verilator,
            Shape::Split,
            false,
            opts.cycles,
        ),
        (
            UNTRAINED,
            SimKind::Verilator,
            Shape::Split,
            false,
            opts.cycles,
        ),
        (
            UNFOLDED,
            SimKind::Verilator,
            Shape::Unfolded,
            false,
            opts.cycles,
        ),
        (
            TWO_EVALS,
            SimKind::Verilator,
            Shape::Split,
            false,
            opts.cycles,
        ),
        (STEPPED, SimKind::Verilator, Shape::Split, true, opts.cycles),
        (
            AS_GENERATED,
            SimKind::Verilator,
            Shape::AsGenerated,
            true,
            opts.cycles,
        ),
        (
            "rust-hdl",
            SimKind::RustHdl,
            Shape::Split,
            true,
            opts.rust_hdl_cycles,
        ),
        ("model", SimKind::Model, Shape::Split, false, opts.cycles),
    ];
    // Wall time on a shared machine drifts by more than the differences
    // measured here: a round's runs take turns a slice at a time, every
    // Verilator and model run is repeated (rust-hdl's once, on its own),
    // and the fastest round of each kept.
    for round in 0..opts.repeat.max(1) {
        let mut turn = Vec::new();
        for (k, (name, kind, shape, stepped, cycles)) in plan.iter().copied().enumerate() {
            if !opts.runs(name) || cycles == 0 || (round > 0 && kind == SimKind::RustHdl) {
                continue;
            }
            let how = How {
                kind,
                shape,
                stepped,
                two_evals: name == TWO_EVALS,
                untrained: name == UNTRAINED || name == UNFOLDED,
                profile: false,
            };
            note(
                opts,
                &format!(
                    "{name}: {cycles} cycles (round {} of {})",
                    round + 1,
                    opts.repeat.max(1)
                ),
            );
            let d = Driving::new(name, how, cycles, opts.seed, compare, opts.idle)?;
            if kind == SimKind::RustHdl {
                keep(&mut drives, k, interleaved(vec![d])?.remove(0))?;
            } else {
                turn.push((k, d));
            }
        }
        let (ks, runs): (Vec<usize>, Vec<Driving>) = turn.into_iter().unzip();
        for (k, d) in ks.into_iter().zip(interleaved(runs)?) {
            keep(&mut drives, k, d)?;
        }
    }
    let mut drives: Vec<Drive> = drives.into_iter().map(|(_, d)| d).collect();
    // The profiled runs: where each Verilator path's time goes.
    for name in [VERILATOR, STEPPED] {
        if !opts.runs(name) {
            continue;
        }
        note(opts, &format!("{name}, profiled"));
        let how = How {
            kind: SimKind::Verilator,
            shape: Shape::Split,
            stepped: name == STEPPED,
            two_evals: false,
            untrained: false,
            profile: true,
        };
        let profiled = drive(name, how, opts.cycles, opts.seed, 0, opts.idle)?;
        if let Some(d) = drives.iter_mut().find(|d| d.run.simulation == name) {
            d.run.profile = profiled.run.profile;
        }
    }
    // The RTL runs (not the model: its cycles are a timing model's) must
    // agree frame for frame over the cycles they share.
    let rtl: Vec<&Drive> = drives
        .iter()
        .filter(|d| d.run.simulation != "model")
        .collect();
    let prefix = |d: &Drive, cycles: u64| -> Vec<(u64, bool, Vec<u8>)> {
        d.frames
            .iter()
            .filter(|f| f.0 < d.config_cycles + cycles)
            .cloned()
            .collect()
    };
    let agree = rtl.iter().enumerate().all(|(i, &a)| {
        rtl[i + 1..].iter().all(|&b| {
            let m = a.run.cycles.min(b.run.cycles);
            a.config_cycles == b.config_cycles && prefix(a, m) == prefix(b, m)
        })
    });
    let compared = |short: bool| {
        rtl.iter()
            .filter(|d| short == (d.run.simulation == "rust-hdl"))
            .map(|d| d.run.cycles)
            .min()
            .unwrap_or(0)
    };
    let (compared_cycles, verilator_compared_cycles) = (compared(true), compared(false));
    drop(rtl);
    let speed = |n: &str| {
        drives
            .iter()
            .find(|d| d.run.simulation == n)
            .map(|d| d.run.cycles_per_second)
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let split_speedup = ratio(speed(STEPPED), speed(AS_GENERATED));
    let runner_speedup = ratio(speed(TWO_EVALS), speed(STEPPED));
    let one_eval_speedup = ratio(speed(VERILATOR), speed(TWO_EVALS));
    let training_speedup = ratio(speed(VERILATOR), speed(UNTRAINED));
    let fold_speedup = ratio(speed(UNTRAINED), speed(UNFOLDED));
    let config_cycles = drives.first().map_or(0, |d| d.config_cycles);
    let mut runs: Vec<SimRun> = drives.into_iter().map(|d| d.run).collect();
    runs.sort_by(|a, b| b.cycles_per_second.total_cmp(&a.cycles_per_second));
    Ok(SimBench {
        seed: opts.seed,
        idle: opts.idle,
        config_cycles,
        runs,
        split_speedup,
        runner_speedup,
        one_eval_speedup,
        training_speedup,
        fold_speedup,
        agree,
        compared_cycles,
        verilator_compared_cycles,
    })
}

/// The Verilator run every job uses.
const VERILATOR: &str = "verilator";
/// The same runner on the optimised model built without its training.
const UNTRAINED: &str = "verilator, untrained";
/// The untrained runner on the Verilog with every register a module of
/// its own, as rust-hdl writes it (the split, not the fold).
const UNFOLDED: &str = "verilator, registers unfolded";
/// The model's stream runner with two evaluations a step.
const TWO_EVALS: &str = "verilator, two evaluations a step";
/// The same model, stepped by the harness.
const STEPPED: &str = "verilator, stepped";
/// rust-hdl's own Verilog, stepped.
const AS_GENERATED: &str = "verilator, rust-hdl's Verilog";

/// How one run simulates the card.
struct How {
    kind: SimKind,
    shape: Shape,
    stepped: bool,
    two_evals: bool,
    untrained: bool,
    profile: bool,
}

/// One simulation of the card under its traffic, run a slice at a time so
/// that the simulations of a round can take turns.
struct Driving {
    name: String,
    dev: SimDevice,
    traffic: Sustained,
    /// No frames offered.
    idle: bool,
    cycles: u64,
    start: u64,
    limit: u64,
    frames: Vec<(u64, bool, Vec<u8>)>,
    frames_in: u64,
    frames_out: u64,
    /// Lengths of the frames offered on each input, in order.
    offered: [Vec<usize>; 2],
    /// Frames made but not offered yet, per input: each input is topped up
    /// on its own, so a slow one does not pile up.
    made: [VecDeque<Vec<u8>>; 2],
    before: weft_model::DutProfile,
    /// Wall seconds of the simulation's slices, making the traffic
    /// excluded.
    seconds: f64,
}

impl Driving {
    /// Configure a fresh card for `cycles` of sustained traffic, recording
    /// the frames it sends before `compare` cycles of it.
    fn new(name: &str, how: How, cycles: u64, seed: u64, compare: u64, idle: bool) -> Result<Self> {
        let so = SimulatorOptions {
            shape: how.shape,
            profile: how.profile,
            stepped: how.stepped,
            two_evaluations: how.two_evals,
            untrained: how.untrained,
            ..SimulatorOptions::default()
        };
        let dev = SimDevice::open(how.kind, &so)?;
        let traffic = Sustained::new(seed);
        dev.configure(traffic.setup())?;
        let start = dev.cycles();
        let before = dev.profile().unwrap_or_default();
        Ok(Self {
            name: name.to_string(),
            dev,
            traffic,
            idle,
            cycles,
            start,
            limit: start + compare,
            frames: Vec::new(),
            frames_in: 0,
            frames_out: 0,
            offered: [vec![], vec![]],
            made: [VecDeque::new(), VecDeque::new()],
            before,
            seconds: 0.0,
        })
    }

    /// Whether the run has done its cycles.
    fn done(&self) -> bool {
        self.dev.cycles() - self.start >= self.cycles
    }

    /// Top the inputs up and run one slice of cycles.
    fn slice(&mut self) -> Result<()> {
        let t0 = Instant::now();
        let mut making = 0.0;
        for (k, port) in [Port::Wire, Port::Host].into_iter().enumerate() {
            while !self.idle && self.dev.backlog(port) < BACKLOG {
                if self.made[k].is_empty() {
                    let t1 = Instant::now();
                    let t = self.traffic.batch(BATCH);
                    for (j, fs) in [t.rx, t.h2c].into_iter().enumerate() {
                        // Frames whose tuser_size lies cannot be offered
                        // through the frame seam, which takes the size
                        // from the bytes.
                        self.made[j].extend(
                            fs.into_iter()
                                .filter(|f| f.size as usize == f.bytes.len())
                                .map(|f| f.bytes),
                        );
                    }
                    making += t1.elapsed().as_secs_f64();
                    continue;
                }
                let f = self.made[k].pop_front().unwrap_or_default();
                self.offered[k].push(f.len());
                self.frames_in += 1;
                self.dev.send(port, &f)?;
            }
        }
        let left = self.cycles - (self.dev.cycles() - self.start);
        self.dev.advance(SLICE.min(left))?;
        for f in self.dev.recv()? {
            self.frames_out += 1;
            if f.cycle < self.limit {
                self.frames.push((f.cycle, f.port == Port::Wire, f.bytes));
            }
        }
        // The card's time: making the traffic is not the simulation's.
        self.seconds += (t0.elapsed().as_secs_f64() - making).max(0.0);
        Ok(())
    }

    /// The run's figures.
    fn finish(self) -> Result<Drive> {
        let name = &self.name;
        let dev = &self.dev;
        if let Some(fault) = dev.fault() {
            return Err(Error::Check(format!("{name}: {fault}")));
        }
        let seconds = self.seconds.max(1e-9);
        // The frames still waiting were offered but not taken (a frame part
        // way in counts as taken).
        let mut bytes_in = 0;
        for (k, port) in [Port::Wire, Port::Host].into_iter().enumerate() {
            let waiting = dev.backlog(port).saturating_sub(1);
            let o = &self.offered[k];
            bytes_in += o[..o.len().saturating_sub(waiting)].iter().sum::<usize>();
        }
        let done = dev.cycles() - self.start;
        let before = self.before;
        let profile = dev.profile().map(|p| {
            let model = (p.simulator - before.simulator) / seconds;
            let ports = (p.ports - before.ports) / seconds;
            Profile {
                cycles_per_second: done as f64 / seconds,
                model,
                ports,
                harness: (1.0 - model - ports).max(0.0),
            }
        });
        Ok(Drive {
            run: SimRun {
                simulation: name.clone(),
                cycles: done,
                seconds,
                cycles_per_second: done as f64 / seconds,
                frames_in: self.frames_in,
                frames_out: self.frames_out,
                bytes_in_per_cycle: bytes_in as f64 / done.max(1) as f64,
                profile,
            },
            config_cycles: self.start,
            frames: self.frames,
        })
    }
}

/// Run `runs` to the end, taking turns a slice each, so that every run
/// sees the machine as the others do (a shared machine's speed drifts by
/// more than the differences measured).
fn interleaved(mut runs: Vec<Driving>) -> Result<Vec<Drive>> {
    while runs.iter().any(|r| !r.done()) {
        for r in runs.iter_mut().filter(|r| !r.done()) {
            let turn_end = r.dev.cycles() + TURN;
            while !r.done() && r.dev.cycles() < turn_end {
                r.slice()?;
            }
        }
    }
    runs.into_iter().map(Driving::finish).collect()
}

/// Keep `d` as plan entry `k`'s run if it is the first or the fastest; a
/// repeat must send the same frames.
fn keep(drives: &mut Vec<(usize, Drive)>, k: usize, d: Drive) -> Result<()> {
    match drives.iter_mut().find(|(j, _)| *j == k) {
        None => drives.push((k, d)),
        Some((_, best)) => {
            if d.frames != best.frames {
                return Err(Error::Check(format!(
                    "{}: a repeated run sent different frames",
                    d.run.simulation
                )));
            }
            if d.run.cycles_per_second > best.run.cycles_per_second {
                *best = d;
            }
        }
    }
    Ok(())
}

/// Configure a fresh card and run `cycles` of sustained traffic on it.
fn drive(name: &str, how: How, cycles: u64, seed: u64, compare: u64, idle: bool) -> Result<Drive> {
    let mut d = Driving::new(name, how, cycles, seed, compare, idle)?;
    while !d.done() {
        d.slice()?;
    }
    d.finish()
}
