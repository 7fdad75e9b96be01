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

use crate::hdl::HdlPorts;
use crate::verilator::{self, BuildOptions, ModelSource, Optimisation};
use crate::vl::source_with_clocks;
use crate::SimError;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use weft_hdl::emit::Shape;
use weft_model::top::{TopIn, TopOut};
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
