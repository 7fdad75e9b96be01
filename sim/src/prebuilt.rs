//! `weft_top`'s Verilated model built ahead of the first run.
//!
//! A build script ([`prebuild_top`], run by the `weft` crate's) builds the
//! model of this source tree's top into the model cache while the crate
//! builds, and bakes the paths of the quick and the optimised shared
//! object ([`TopModels`]) into the binary. A job then opens the card
//! without generating the top's Verilog (seconds of rust-hdl's code
//! generator) or building anything: the model is the one built from the
//! same source the binary was compiled from, and loading checks its port
//! signature. A path whose file is gone (the cache was cleared) falls back
//! to the usual generate-and-build.

use crate::device::SimDevice;
use crate::hdl::HdlPorts;
use crate::verilator::{self, BuildOptions, ModelSource, Optimisation, Training};
use crate::vl::source_with_clocks;
use crate::SimError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_driver::{FramePorts, Port};
use weft_hdl::emit::Shape;
use weft_model::top::{TopIn, TopOut};
use weft_model::top_traffic::Sustained;
use weft_model::PortSet;

/// Where the two builds of `weft_top`'s model live (the quick one built,
/// the optimised one where a long run puts it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopModels {
    /// Evaluation compiled without optimisation (short runs).
    pub quick: PathBuf,
    /// Evaluation optimised.
    pub fast: PathBuf,
}

/// Separates the two paths in [`TopModels::encode`].
const SEP: char = '\u{1f}';

impl TopModels {
    /// One string (for a build script's `cargo:rustc-env`).
    pub fn encode(&self) -> String {
        format!("{}{SEP}{}", self.quick.display(), self.fast.display())
    }

    /// The paths back from [`encode`](Self::encode).
    pub fn decode(s: &str) -> Option<Self> {
        let (q, f) = s.split_once(SEP)?;
        Some(Self {
            quick: PathBuf::from(q),
            fast: PathBuf::from(f),
        })
    }

    /// The library to open for `optimisation`, if it is built: the
    /// optimised one when it is asked for or there, else the quick one.
    fn pick(&self, optimisation: Optimisation) -> Option<&Path> {
        let fast = self.fast.is_file().then_some(self.fast.as_path());
        let quick = self.quick.is_file().then_some(self.quick.as_path());
        match optimisation {
            Optimisation::Fast => fast,
            Optimisation::Quick => quick,
            Optimisation::FastIfBuilt => fast.or(quick),
        }
    }
}

/// `weft_top`'s ports and clocks, as the builder takes them, without its
/// Verilog (the port list is the model's; the library's signature is
/// checked against it when it loads).
fn top_source(verilog: String) -> Result<ModelSource, SimError> {
    let clocks = <weft_hdl::top::WeftTop as HdlPorts>::CLOCKS;
    let mut ports = Vec::new();
    for c in clocks {
        ports.push(verilator::PortSpec::input(*c, 1));
    }
    for p in TopIn::PORTS {
        ports.push(verilator::PortSpec::input(p.name, p.width));
    }
    for p in TopOut::PORTS {
        ports.push(verilator::PortSpec::output(p.name, p.width));
    }
    source_with_clocks::<TopIn, TopOut>(verilog, "weft_top", &ports, clocks)
}

/// Build this source tree's `weft_top` model in the default cache: the
/// quick one, and the optimised one too with `fast`. Returns where both
/// live.
pub fn prebuild_top(fast: bool, progress: Option<&dyn Fn(&str)>) -> Result<TopModels, SimError> {
    let build = weft_hdl::build_info::top_build();
    let verilog = weft_hdl::emit::on_big_stack(|| {
        weft_hdl::emit::verilog_shaped(&weft_hdl::emit::top(&build), "weft_top", Shape::Split)
    });
    let src = top_source(verilog)?;
    let at = |optimisation| BuildOptions {
        optimisation,
        progress,
        training: Some(top_training()),
        ..BuildOptions::default()
    };
    verilator::build(&src, &at(Optimisation::Quick))?;
    if fast {
        verilator::build(&src, &at(Optimisation::Fast))?;
    }
    Ok(TopModels {
        quick: verilator::library_path(&src, &at(Optimisation::Quick))?,
        fast: verilator::library_path(&src, &at(Optimisation::Fast))?,
    })
}

/// The prebuilt model for `optimisation`, loaded, if it is there and loads.
pub(crate) fn load_top(
    models: &TopModels,
    optimisation: Optimisation,
) -> Option<Arc<verilator::Library>> {
    let path = models.pick(optimisation)?;
    let src = top_source(String::new()).ok()?;
    verilator::load(path, &src, false).ok()
}

/// The seed of the training's configuration and traffic: not the seed
/// `weft bench sim` measures with by default (1), so the bench measures
/// the trained model on traffic it was not trained on.
const TRAINING_SEED: u64 = 0x7ea1;
/// Cycles of sustained traffic the training runs after configuring the
/// card: the instrumented model runs them in about a second.
const TRAINING_CYCLES: u64 = 60_000;
/// Frames kept waiting on each input, and made at a time.
const TRAINING_BACKLOG: usize = 32;

/// The training of `weft_top`'s optimised model: the card configured at
/// random and fed sustained mixed traffic on both inputs
/// (`weft_model::top_traffic`, the traffic `weft bench sim` and the top's
/// tests use), through the stream runner every job uses.
pub fn top_training() -> Training<'static> {
    Training {
        name: "weft_top: random configuration, sustained mixed traffic (seed 0x7ea1, 60000 cycles), v1",
        run: &train_top,
    }
}

/// Drive the instrumented top at `path` as [`top_training`] says.
fn train_top(path: &Path) -> Result<(), String> {
    let run = || -> Result<(), Box<dyn std::error::Error>> {
        let lib = verilator::load(path, &top_source(String::new())?, false)?;
        let dev = SimDevice::on_top_library(&lib)?;
        let mut traffic = Sustained::new(TRAINING_SEED);
        dev.configure(traffic.setup())?;
        let start = dev.cycles();
        while dev.cycles() - start < TRAINING_CYCLES {
            if dev.backlog(Port::Wire) < TRAINING_BACKLOG
                || dev.backlog(Port::Host) < TRAINING_BACKLOG
            {
                let t = traffic.batch(TRAINING_BACKLOG);
                for (port, frames) in [(Port::Wire, t.rx), (Port::Host, t.h2c)] {
                    // The frame seam takes a frame's size from its bytes.
                    for f in frames.iter().filter(|f| f.size as usize == f.bytes.len()) {
                        dev.send(port, &f.bytes)?;
                    }
                }
            }
            dev.advance(256)?;
            dev.recv()?;
        }
        match dev.fault() {
            Some(fault) => Err(format!("the card faulted: {fault}").into()),
            None => Ok(()),
        }
    };
    run().map_err(|e| e.to_string())
}
