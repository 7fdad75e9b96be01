//! The Verilator backend: a block's emitted Verilog, Verilated and loaded,
//! as a [`Dut`].
//!
//! The model's clock ports are the block's [`HdlPorts::CLOCKS`]; a
//! [`VerilatorDut`] raises them on a [`Schedule`] in base steps (see
//! [`weft_model::clocks`]), all clocks of one step at one instant.

use crate::hdl::HdlPorts;
use crate::probe::ports_of;
use crate::verilator::{
    self, BuildOptions, Dir, Library, Model, ModelSource, PortSpec, StreamFrame,
};
use crate::SimError;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;
use weft_hdl::emit::Shape;
use weft_model::{Dut, DutProfile, PortSet, Schedule};

/// The clock port of a single-clock weft block.
pub const CLOCK: &str = "clock";

/// Build (or fetch from the cache) the Verilated model of a connected block,
/// after checking that its ports are exactly `I` and `O` plus its clocks
/// (`B::CLOCKS`).
///
/// The block is made and its Verilog generated on a large stack
/// (`weft_hdl::emit::on_big_stack`): rust-hdl builds a block's syntax tree
/// in one generated function, which overflows a test thread's default stack
/// for large blocks in a debug build.
pub fn build<I: PortSet, O: PortSet, B: HdlPorts>(
    make: &(dyn Fn() -> B + Sync),
    module: &str,
    shape: Shape,
    opts: &BuildOptions,
) -> Result<Arc<Library>, SimError> {
    let (verilog, ports) = weft_hdl::emit::on_big_stack(|| {
        let uut = make();
        (
            weft_hdl::emit::verilog_shaped(&uut, module, shape),
            ports_of(&uut),
        )
    });
    let mut source = source_with_clocks::<I, O>(verilog, module, &ports, B::CLOCKS)?;
    source.split = shape != Shape::AsGenerated;
    Ok(verilator::build(&source, opts)?)
}

/// [`source_with_clocks`] for a single-clock block (clock port `clock`).
pub fn source_for<I: PortSet, O: PortSet>(
    verilog: String,
    module: &str,
    actual: &[PortSpec],
) -> Result<ModelSource, SimError> {
    source_with_clocks::<I, O>(verilog, module, actual, &[CLOCK])
}

/// The builder's input for a module whose Verilog ports are `actual`,
/// ordered as `I` and `O` declare them so values pack without reordering,
/// with clock inputs `clocks` (in mask bit order).
pub fn source_with_clocks<I: PortSet, O: PortSet>(
    verilog: String,
    module: &str,
    actual: &[PortSpec],
    clocks: &[&str],
) -> Result<ModelSource, SimError> {
    let mut ports = vec![];
    let mut found = vec![];
    for &c in clocks {
        match actual.iter().find(|p| p.name == c) {
            Some(p) if p.dir == Dir::In && p.width == 1 => {
                found.push(c.to_string());
                ports.push(p.clone());
            }
            Some(p) => {
                return Err(SimError::Ports(format!(
                    "{module}: clock {c} is {:?} {} bits in the RTL, not a 1-bit input",
                    p.dir, p.width
                )))
            }
            None => {
                return Err(SimError::Ports(format!(
                    "{module}: the RTL has no clock input {c}"
                )))
            }
        }
    }
    let want = |set: &[weft_model::Port], dir: Dir, ports: &mut Vec<PortSpec>| {
        for w in set {
            match actual.iter().find(|p| p.name == w.name) {
                Some(p) if p.dir == dir && p.width == w.width => ports.push(p.clone()),
                Some(p) => {
                    return Err(SimError::Ports(format!(
                    "{module}: port {} is {:?} {} bits in the RTL but {:?} {} bits in the model",
                    w.name, p.dir, p.width, dir, w.width
                )))
                }
                None => {
                    return Err(SimError::Ports(format!(
                        "{module}: the model has port {} but the RTL does not",
                        w.name
                    )))
                }
            }
        }
        Ok(())
    };
    want(I::PORTS, Dir::In, &mut ports)?;
    want(O::PORTS, Dir::Out, &mut ports)?;
    if let Some(extra) = actual
        .iter()
        .find(|p| !ports.iter().any(|q| q.name == p.name))
    {
        return Err(SimError::Ports(format!(
            "{module}: the RTL has port {} ({:?}, {} bits) that the model does not declare",
            extra.name, extra.dir, extra.width
        )));
    }
    Ok(ModelSource {
        verilog,
        top: module.to_string(),
        ports,
        clocks: found,
        split: true,
    })
}

/// A Verilated block as a [`Dut`].
pub struct VerilatorDut<I, O> {
    model: Model,
    inw: Vec<u32>,
    outw: Vec<u32>,
    /// Counted time, when profiling.
    profile: Option<DutProfile>,
    /// The schedule as given (reported by [`Dut::schedule`]).
    schedule: Schedule,
    /// The schedule with its bits in the model's clock order.
    by_port: Schedule,
    step: u64,
    /// Clock masks of one [`run`](VerilatorDut::run), reused.
    rising: Vec<u32>,
    /// Evaluation seconds the wrapper had timed at the last run.
    eval_seen: f64,
    _ports: PhantomData<fn(I) -> O>,
}

impl<I: PortSet, O: PortSet> VerilatorDut<I, O> {
    /// A new instance of a built model, every clock rising every step, with
    /// a VCD waveform when `waves` is given (the library must then have been
    /// built with tracing).
    pub fn new(lib: &Arc<Library>, waves: Option<&Path>) -> Result<Self, SimError> {
        let schedule = if lib.clocks().is_empty() {
            // A design without clocks still steps (it only evaluates); the
            // schedule is nominal.
            Schedule::single(CLOCK)
        } else {
            Schedule::every_step(lib.clocks().iter().map(String::as_str))
                .map_err(|e| SimError::Clocks(format!("{}: {e}", lib.top())))?
        };
        Self::with_schedule(lib, waves, schedule)
    }

    /// A new instance whose clocks rise on `schedule`, which must name
    /// exactly the model's clocks.
    pub fn with_schedule(
        lib: &Arc<Library>,
        waves: Option<&Path>,
        schedule: Schedule,
    ) -> Result<Self, SimError> {
        let by_port = if lib.clocks().is_empty() {
            schedule.clone()
        } else {
            let names: Vec<&str> = lib.clocks().iter().map(String::as_str).collect();
            schedule
                .reordered(&names)
                .map_err(|e| SimError::Clocks(format!("{}: {e}", lib.top())))?
        };
        Ok(Self {
            model: Model::new(lib, waves)?,
            inw: Vec::with_capacity(I::total_words()),
            outw: vec![0; O::total_words()],
            profile: None,
            schedule,
            by_port,
            step: 0,
            rising: Vec::new(),
            eval_seen: 0.0,
            _ports: PhantomData,
        })
    }
}

impl<I, O> VerilatorDut<I, O> {
    /// Count where time goes ([`Dut::profile`]): a few percent slower.
    pub fn profiled(mut self) -> Self {
        self.profile = Some(DutProfile::default());
        self.model.profile_eval(true);
        self
    }

    /// The number of the design's input or output stream `name` (see
    /// [`Library::streams`]), if it has one.
    pub fn stream(&self, name: &str) -> Option<u32> {
        self.model.library().stream(name)
    }

    /// One evaluation a step in [`run`](Self::run); see
    /// [`Model::set_one_eval`] for when that is sound. Whether it took.
    pub fn set_one_eval(&mut self, on: bool) -> bool {
        self.model.set_one_eval(on)
    }

    /// Queue a frame on input stream `stream`, for [`run`](Self::run).
    pub fn push(&mut self, stream: u32, frame: &[u8]) {
        self.model.push(stream, frame);
    }

    /// Frames waiting on input stream `stream`, the one going in included.
    pub fn backlog(&self, stream: u32) -> usize {
        self.model.backlog(stream)
    }

    /// Bytes output stream `stream` holds of a frame not finished.
    pub fn partial(&self, stream: u32) -> usize {
        self.model.partial(stream)
    }

    /// The oldest frame output stream `stream` finished.
    pub fn pop(&mut self, stream: u32) -> Option<StreamFrame> {
        self.model.pop(stream)
    }
}

impl<I: PortSet, O: PortSet> VerilatorDut<I, O> {
    /// `n` steps in one call into the model, with `inputs` on every
    /// non-stream port throughout and the design's streams driven and
    /// collected inside it ([`Model::run`]); with `drive` false the input
    /// streams are idle. Gives the same run as `n` [`Dut::cycle`]s whose
    /// harness offered the same frames beat by beat; returns the outputs
    /// before the last step's edge.
    pub fn run(&mut self, inputs: &I, n: u64, drive: bool) -> O {
        self.rising.clear();
        self.by_port.rising_into(self.step, n, &mut self.rising);
        let first = self.step;
        self.step += n;
        let t0 = self.profile.is_some().then(Instant::now);
        self.inw.clear();
        inputs.pack(&mut self.inw);
        self.model
            .run(&self.inw, &mut self.outw, &self.rising, first, drive);
        let o = O::unpack(&self.outw);
        if let (Some(p), Some(t0)) = (self.profile.as_mut(), t0) {
            // The wrapper timed its evaluations; the rest of the call drove
            // the streams and the ports.
            let eval = self.model.profile_eval(true);
            let spent = t0.elapsed().as_secs_f64();
            let new_eval = eval - self.eval_seen;
            self.eval_seen = eval;
            p.simulator += new_eval;
            p.ports += (spent - new_eval).max(0.0);
            p.steps += n;
        }
        o
    }
}

impl<I: PortSet, O: PortSet> Dut for VerilatorDut<I, O> {
    type In = I;
    type Out = O;

    fn eval(&mut self, inputs: &I) -> O {
        let Some(p) = self.profile.as_mut() else {
            self.inw.clear();
            inputs.pack(&mut self.inw);
            self.model.eval(&self.inw, &mut self.outw);
            return O::unpack(&self.outw);
        };
        let t0 = Instant::now();
        self.inw.clear();
        inputs.pack(&mut self.inw);
        let t1 = Instant::now();
        self.model.eval(&self.inw, &mut self.outw);
        let t2 = Instant::now();
        let o = O::unpack(&self.outw);
        let t3 = Instant::now();
        p.ports += (t1 - t0 + (t3 - t2)).as_secs_f64();
        p.simulator += (t2 - t1).as_secs_f64();
        o
    }

    fn tick(&mut self) {
        let rising = self.by_port.rising(self.step);
        match self.profile.as_mut() {
            None => self.model.step(rising),
            Some(p) => {
                let t0 = Instant::now();
                self.model.step(rising);
                p.simulator += t0.elapsed().as_secs_f64();
                p.steps += 1;
            }
        }
        self.step += 1;
    }

    fn cycle(&mut self, inputs: &I) -> O {
        let rising = self.by_port.rising(self.step);
        self.step += 1;
        let Some(p) = self.profile.as_mut() else {
            self.inw.clear();
            inputs.pack(&mut self.inw);
            self.model.eval_step(&self.inw, &mut self.outw, rising);
            return O::unpack(&self.outw);
        };
        let t0 = Instant::now();
        self.inw.clear();
        inputs.pack(&mut self.inw);
        let t1 = Instant::now();
        self.model.eval_step(&self.inw, &mut self.outw, rising);
        let t2 = Instant::now();
        let o = O::unpack(&self.outw);
        let t3 = Instant::now();
        p.ports += (t1 - t0 + (t3 - t2)).as_secs_f64();
        p.simulator += (t2 - t1).as_secs_f64();
        p.steps += 1;
        o
    }

    fn profile(&self) -> Option<DutProfile> {
        self.profile
    }

    fn witness(&self) -> &str {
        "verilator"
    }

    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}
