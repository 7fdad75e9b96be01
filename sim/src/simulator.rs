//! Choosing a simulator for a block: rust-hdl's or Verilator.

use crate::hdl::{HdlDut, HdlPorts};
use crate::verilator::{self, BuildOptions, Library};
use crate::{vl, SimError};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use weft_hdl::emit::Shape;
use weft_model::{Dut, Schedule};

/// Which simulator runs the RTL.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Simulator {
    /// rust-hdl's simulator, stepped directly.
    RustHdl,
    /// The Verilated model of the emitted Verilog.
    Verilator,
}

impl Simulator {
    /// The simulator's name.
    pub fn name(self) -> &'static str {
        match self {
            Simulator::RustHdl => "rust-hdl",
            Simulator::Verilator => "verilator",
        }
    }
}

impl FromStr for Simulator {
    type Err = SimError;
    fn from_str(s: &str) -> Result<Self, SimError> {
        match s {
            "rust-hdl" | "rusthdl" | "hdl" => Ok(Simulator::RustHdl),
            "verilator" => Ok(Simulator::Verilator),
            _ => Err(SimError::UnknownSimulator(s.to_string())),
        }
    }
}

/// Options for building a simulation.
#[derive(Clone, Default)]
pub struct SimulatorOptions<'a> {
    /// Write a VCD waveform here.
    pub waves: Option<PathBuf>,
    /// Verilator build progress (stage names), e.g. for a progress bar.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
    /// Verilator cache directory (default: see [`verilator::build`]).
    pub cache_dir: Option<PathBuf>,
    /// The shape of the Verilog Verilator is given (the split one unless a
    /// benchmark asks for rust-hdl's own).
    pub shape: Shape,
    /// Time the Verilated model's calls and the packing of its ports
    /// ([`Dut::profile`]); costs a few percent.
    pub profile: bool,
    /// How Verilator's model is compiled (optimised by default; a short
    /// run asks for [`verilator::Optimisation::FastIfBuilt`]).
    pub optimisation: verilator::Optimisation,
    /// On Verilator, step the simulated card's streams from the harness
    /// one FFI call a step, as on rust-hdl, instead of inside the model
    /// (the path before the model's own stream runner; for benchmarks).
    pub stepped: bool,
    /// On Verilator, take two evaluations a step in the model's stream
    /// runner instead of one (the path before one evaluation a step; for
    /// benchmarks).
    pub two_evaluations: bool,
    /// `weft_top`'s model built ahead for this binary
    /// ([`crate::prebuilt`]): opening the card on Verilator loads it
    /// instead of generating the top's Verilog, when nothing else is asked
    /// of the build (default cache, no waveform, the split Verilog).
    pub prebuilt: Option<&'a crate::prebuilt::TopModels>,
    /// Train Verilator's optimised build on this run
    /// ([`verilator::Training`]); the card of this source tree is trained
    /// on its sustained traffic without being asked
    /// ([`crate::prebuilt::top_training`]).
    pub training: Option<verilator::Training<'a>>,
    /// Build the card's optimised model without its training (the path
    /// before profile-guided builds; for benchmarks).
    pub untrained: bool,
}

/// A Verilated block, as its own type.
pub type VlDut<B> = vl::VerilatorDut<<B as HdlPorts>::In, <B as HdlPorts>::Out>;

/// A boxed DUT.
pub type BoxDut<I, O> = Box<dyn Dut<In = I, Out = O> + Send>;

/// A block ready to instantiate on a simulator: for Verilator the model is
/// built (or fetched from the cache) once, then instantiated cheaply. Its
/// instances step the block's clocks on one [`Schedule`] (by default every
/// clock rises every step; see [`Prepared::with_schedule`]).
pub struct Prepared<B: HdlPorts> {
    simulator: Simulator,
    make: Box<dyn Fn() -> B + Send + Sync>,
    lib: Option<Arc<Library>>,
    schedule: Schedule,
    profile: bool,
}

impl<B> Prepared<B>
where
    B: HdlPorts + Send + 'static,
{
    /// Prepare `make` (which returns a connected block) on `simulator`.
    /// `module` names the Verilog module; `trace` builds Verilator with
    /// waveform support.
    pub fn new(
        simulator: Simulator,
        module: &str,
        make: impl Fn() -> B + Send + Sync + 'static,
        trace: bool,
        opts: &SimulatorOptions,
    ) -> Result<Self, SimError> {
        let lib = match simulator {
            Simulator::RustHdl => None,
            Simulator::Verilator => {
                let bo = BuildOptions {
                    trace: trace || opts.waves.is_some(),
                    cache_dir: opts.cache_dir.clone(),
                    progress: opts.progress.map(|p| p as &dyn Fn(&str)),
                    optimisation: opts.optimisation,
                    training: opts.training,
                };
                Some(vl::build::<B::In, B::Out, B>(
                    &make, module, opts.shape, &bo,
                )?)
            }
        };
        Ok(Self {
            simulator,
            make: Box::new(make),
            lib,
            schedule: crate::hdl::default_schedule::<B>(),
            profile: opts.profile,
        })
    }

    /// Step the block's clocks on `schedule` (which must name exactly the
    /// block's clocks, [`HdlPorts::CLOCKS`]). The Verilated model does not
    /// depend on the schedule, so one build serves every clock ratio.
    pub fn with_schedule(mut self, schedule: Schedule) -> Result<Self, SimError> {
        schedule
            .reordered(B::CLOCKS)
            .map_err(|e| SimError::Clocks(format!("{}: {e}", std::any::type_name::<B>())))?;
        self.schedule = schedule;
        Ok(self)
    }

    /// The schedule instances step.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The simulator.
    pub fn simulator(&self) -> Simulator {
        self.simulator
    }

    /// Whether the Verilated model came from the cache.
    pub fn cache_hit(&self) -> Option<bool> {
        self.lib.as_ref().map(|l| l.cache_hit())
    }

    /// A fresh instance (power-on state), with a waveform when `waves` is given.
    pub fn instantiate(&self, waves: Option<&Path>) -> Result<BoxDut<B::In, B::Out>, SimError> {
        self.instantiate_on(&self.schedule, waves)
    }

    /// A fresh Verilator instance on the prepared schedule, as its own type
    /// (for [`vl::VerilatorDut::run`]); `None` on rust-hdl.
    pub fn instantiate_verilator(
        &self,
        waves: Option<&Path>,
    ) -> Result<Option<VlDut<B>>, SimError> {
        let Some(lib) = &self.lib else {
            return Ok(None);
        };
        let d =
            vl::VerilatorDut::<B::In, B::Out>::with_schedule(lib, waves, self.schedule.clone())?;
        Ok(Some(if self.profile { d.profiled() } else { d }))
    }

    /// A fresh instance stepping `schedule` instead of the prepared one (it
    /// must name exactly the block's clocks), with a waveform when `waves`
    /// is given.
    pub fn instantiate_on(
        &self,
        schedule: &Schedule,
        waves: Option<&Path>,
    ) -> Result<BoxDut<B::In, B::Out>, SimError> {
        match &self.lib {
            None => {
                let d = HdlDut::with_schedule((self.make)(), schedule.clone())?;
                Ok(Box::new(match waves {
                    Some(p) => d.with_waves(p).map_err(|e| SimError::Io {
                        context: format!("writing waveform {}", p.display()),
                        source: e,
                    })?,
                    None => d,
                }))
            }
            Some(lib) => {
                let d =
                    vl::VerilatorDut::<B::In, B::Out>::with_schedule(lib, waves, schedule.clone())?;
                Ok(Box::new(if self.profile { d.profiled() } else { d }))
            }
        }
    }
}

/// Whether the environment demands Verilator (`WEFT_REQUIRE_VERILATOR=1`):
/// then a missing Verilator is a failure, not a skip.
pub fn verilator_required() -> bool {
    std::env::var("WEFT_REQUIRE_VERILATOR").is_ok_and(|v| v == "1")
}

/// Whether Verilator can be used; panics when it is missing but required.
pub fn verilator_usable() -> bool {
    match verilator::toolchain() {
        Ok(_) => true,
        Err(e) if verilator_required() => {
            panic!("WEFT_REQUIRE_VERILATOR=1 but Verilator is unusable: {e}")
        }
        Err(e) => {
            eprintln!("note: skipping the Verilator witness: {e}");
            false
        }
    }
}

/// Where a waveform named `name` goes when `WEFT_WAVES=1`: under
/// `$WEFT_WAVES_DIR` (default `waves/` in the working directory).
pub fn waves_path(name: &str) -> Option<PathBuf> {
    if std::env::var("WEFT_WAVES").ok().as_deref() != Some("1") {
        return None;
    }
    let dir = std::env::var_os("WEFT_WAVES_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("waves"));
    std::fs::create_dir_all(&dir).ok()?;
    Some(dir.join(format!("{name}.vcd")))
}

/// A block prepared on both simulators for a witness test: rust-hdl always,
/// Verilator when it is usable ([`verilator_usable`] fails when
/// `WEFT_REQUIRE_VERILATOR=1` and it is not).
pub struct Simulators<B: HdlPorts> {
    /// The block in rust-hdl's simulator.
    pub hdl: Prepared<B>,
    /// The block's Verilog in Verilator, when usable.
    pub vl: Option<Prepared<B>>,
}

impl<B> Simulators<B>
where
    B: HdlPorts + Send + 'static,
{
    /// Prepare `make`'s block (Verilog module `module`) on both simulators.
    pub fn prepare(
        module: &str,
        make: impl Fn() -> B + Clone + Send + Sync + 'static,
    ) -> Result<Self, SimError> {
        let o = SimulatorOptions::default();
        let vl = if verilator_usable() {
            Some(Prepared::new(
                Simulator::Verilator,
                module,
                make.clone(),
                false,
                &o,
            )?)
        } else {
            None
        };
        Ok(Self {
            hdl: Prepared::new(Simulator::RustHdl, module, make, false, &o)?,
            vl,
        })
    }

    /// Step both on `schedule` (see [`Prepared::with_schedule`]).
    pub fn with_schedule(self, schedule: Schedule) -> Result<Self, SimError> {
        Ok(Self {
            hdl: self.hdl.with_schedule(schedule.clone())?,
            vl: self.vl.map(|v| v.with_schedule(schedule)).transpose()?,
        })
    }

    /// The witnesses of one run: `model` (when given) first, then rust-hdl,
    /// then Verilator (when prepared). Instantiation failures panic: they
    /// are test setup failures.
    pub fn witnesses<'a>(
        &'a self,
        model: Option<crate::witness::Factory<'a, B::In, B::Out>>,
    ) -> Vec<crate::witness::Factory<'a, B::In, B::Out>> {
        let mut f: Vec<crate::witness::Factory<'a, B::In, B::Out>> = model.into_iter().collect();
        f.push(Box::new(|| {
            self.hdl.instantiate(None).expect("a rust-hdl instance")
        }));
        if let Some(vl) = &self.vl {
            f.push(Box::new(|| {
                vl.instantiate(None).expect("a Verilator instance")
            }));
        }
        f
    }
}
