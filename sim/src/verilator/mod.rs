//! A small Verilator builder and model loader.
//!
//! [`build`] turns Verilog text plus its top module's port list
//! ([`ModelSource`]) into a shared object: it verilates the design, generates
//! a C ABI wrapper from the port list, compiles everything with the system
//! C++ compiler and loads the result ([`Library`]). [`Model`] is one instance
//! of the design, driven through packed `u32` word arrays (one FFI call per
//! [`Model::eval`] and per [`Model::tick`] or [`Model::step`]).
//!
//! Built libraries are cached on disk under
//! `<cache>/verilator/<version>/<key>/libweftmodel.so`, keyed by a SHA-256 of
//! the Verilog text, the generated wrapper, the Verilator version, the
//! compiler and flags. The Verilator runtime objects (`verilated.o` and
//! friends, several seconds of compile time) are compiled once per Verilator
//! version and compiler into `<cache>/verilator/<version>/rt-<hash>/` and
//! reused by every build.
//!
//! An optimised build can be profile-guided ([`Training`]): compiled
//! instrumented, driven by the caller's training run, and compiled again
//! with the profile that run left (gcc's `-fprofile-generate` and
//! `-fprofile-use`); the training's name joins the key. weft-sim trains
//! `weft_top` on its sustained mixed traffic
//! ([`crate::prebuilt::top_training`]).
//!
//! [`lint`] runs `verilator --lint-only -Wall` on a piece of Verilog.
//!
//! # Packing convention
//!
//! The `inputs` slice of [`Model::eval`] is the concatenation, in port-list
//! order over the input ports excluding the clock ports, of each port's value
//! as `ceil(width / 32)` little-endian `u32` words (word 0 holds bits 31:0).
//! `outputs` is laid out the same way over the output ports. Bits above a
//! port's width in its top word are ignored on input and zero on output.
//!
//! # Clocks
//!
//! A design has zero or more clock inputs ([`ModelSource::clocks`], 1-bit
//! inputs), numbered in that order. The C ABI's `weft_tick(model, rising)`
//! takes a mask: bit `i` raises clock `i`. The generated wrapper sets every
//! clock of the mask high, evaluates once (so edges in one call are one
//! instant: the model's flip-flops of every domain sample pre-edge values),
//! then sets them low and evaluates again. Which clocks rise in which step is
//! the caller's schedule (weft-sim's [`crate::vl::VerilatorDut`] steps a
//! [`weft_model::Schedule`]); the wrapper, its signature and so the cache
//! key hold the clock set, not the schedule, so one built model serves any
//! clock ratio.
//!
//! # Environment
//!
//! * `WEFT_VERILATOR`: the `verilator` executable to use instead of the one
//!   on `PATH`.
//! * `CXX`: the C++ compiler (default `g++` on `PATH`).
//! * `WEFT_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME`: where the cache lives (see
//!   [`default_cache_dir`]).
//! * `WEFT_VERILATOR_DEBUGINFO=1`: compile models with debug line tables
//!   (`-g`; a model of its own in the cache), so that a profiler can say
//!   which block's logic the time goes to (`scripts/sim-profile.sh`).

use std::path::{Path, PathBuf};

mod builder;
mod cache;
mod cppgen;
mod lint;
mod model;
mod streams;
mod toolchain;

pub use builder::{build, library_path};
pub use cache::{default_cache_dir, default_cache_dir_from};
pub use lint::{lint, lint_with_waivers, LintReport};
pub use model::{Library, Model, StreamFrame};
pub use streams::{Stream, StreamDir};
pub use toolchain::{toolchain, Toolchain};

/// Load a shared object [`build`] made of `src` (its Verilog is not read:
/// the port list and clocks are checked against the library's signature).
pub fn load(
    path: &Path,
    src: &ModelSource,
    trace: bool,
) -> Result<std::sync::Arc<Library>, VerilatorError> {
    let layout = cppgen::layout(src)?;
    Ok(std::sync::Arc::new(Library::load(
        path, &layout, trace, true,
    )?))
}

/// Direction of a port of the top module.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// An input of the design (driven by the caller).
    In,
    /// An output of the design (read by the caller).
    Out,
}

/// One port of the top module.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PortSpec {
    /// The port's Verilog name.
    pub name: String,
    /// Width in bits (at least 1).
    pub width: usize,
    /// Direction.
    pub dir: Dir,
}

impl PortSpec {
    /// An input port.
    pub fn input(name: impl Into<String>, width: usize) -> Self {
        PortSpec {
            name: name.into(),
            width,
            dir: Dir::In,
        }
    }

    /// An output port.
    pub fn output(name: impl Into<String>, width: usize) -> Self {
        PortSpec {
            name: name.into(),
            width,
            dir: Dir::Out,
        }
    }

    /// Number of `u32` words this port occupies in a packed array.
    pub fn words(&self) -> usize {
        self.width.div_ceil(32)
    }
}

/// Verilog text of a design plus its top module's port list (in port order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSource {
    /// The Verilog text of every module of the design.
    pub verilog: String,
    /// Name of the top module.
    pub top: String,
    /// Every port of the top module, in port order, the clocks included.
    pub ports: Vec<PortSpec>,
    /// Names of the clock inputs (1-bit inputs listed in `ports`), in the
    /// bit order of [`Model::step`]'s mask, raised by [`Model::tick`] and
    /// [`Model::step`] and excluded from the packed inputs. At most 32.
    pub clocks: Vec<String>,
    /// The Verilog has one combinational block per signal
    /// (`weft_hdl::comb_split`, as every tool is given it): Verilator's own
    /// splitting of always blocks and its data-flow-graph rewrites are then
    /// turned off (`-fno-split -fno-dfg`), which made the top faster.
    /// `false` keeps Verilator's defaults, which Verilog with one block per
    /// module (rust-hdl's own) needs to break its false loops.
    pub split: bool,
}

/// How the model's evaluation code is compiled.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Optimisation {
    /// Optimised (`-O2`): the build's C++ compile takes most of its time
    /// (on `weft_top` about 15 s of CPU, twice that with a [`Training`]),
    /// and the model runs about five times faster than
    /// [`Quick`](Self::Quick). For long runs.
    #[default]
    Fast,
    /// Unoptimised (`-O0`): compiles in about a seventh of the time and
    /// runs about five times slower. For runs short enough that the build
    /// would cost more than the simulation.
    Quick,
    /// The [`Fast`](Self::Fast) model when it is already built (cached),
    /// else [`Quick`](Self::Quick): a short run never waits for an
    /// optimised build, and uses one when there is.
    FastIfBuilt,
}

/// Options for [`build`].
#[derive(Default, Clone)]
pub struct BuildOptions<'a> {
    /// Build with VCD tracing support (`--trace`), needed to pass a VCD
    /// path to [`Model::new`].
    pub trace: bool,
    /// Cache directory; `None` uses [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Called with the name of each stage as the build reaches it:
    /// `"verilating"`, `"compiling Verilator runtime (once per version)"`,
    /// `"compiling model"`, `"linking"`, or `"cached"` on a cache hit.
    pub progress: Option<&'a dyn Fn(&str)>,
    /// How the model's evaluation is compiled.
    pub optimisation: Optimisation,
    /// A run that trains the optimised build (profile-guided: see
    /// [`Training`]); ignored by other builds.
    pub training: Option<Training<'a>>,
}

/// The run a profile-guided build trains on.
///
/// With a training, the optimised build ([`Optimisation::Fast`], by gcc)
/// is compiled twice: first instrumented (`-fprofile-generate`), then,
/// after `run` has driven that model, again with the profile it left
/// (`-fprofile-use`), so branches and code layout follow what the design
/// does under the training's stimulus. The results are the same; only the
/// speed differs. The model is keyed by `name`, so the same design trained
/// on other stimulus is another build.
#[derive(Clone, Copy)]
pub struct Training<'a> {
    /// Names the stimulus (and its version) in the cache key.
    pub name: &'a str,
    /// Drives the instrumented model whose shared object is at the path it
    /// is given (loading it with [`load`]); an error fails the build.
    pub run: &'a (dyn Fn(&Path) -> Result<(), String> + Sync),
}

impl std::fmt::Debug for Training<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Training")
            .field("name", &self.name)
            .finish()
    }
}

impl std::fmt::Debug for BuildOptions<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildOptions")
            .field("trace", &self.trace)
            .field("cache_dir", &self.cache_dir)
            .field("optimisation", &self.optimisation)
            .field("training", &self.training)
            .field("progress", &self.progress.map(|_| "<callback>"))
            .finish()
    }
}

/// Everything that can go wrong while finding Verilator, building, loading
/// or linting a design.
#[derive(Debug, thiserror::Error)]
pub enum VerilatorError {
    /// A tool (Verilator or the C++ compiler) was not found.
    #[error("tool not found: {hint}")]
    NotFound {
        /// What was looked for and how to fix it.
        hint: String,
    },
    /// The Verilator installation is unusable (unparsable or unsupported
    /// version, missing runtime sources).
    #[error("unsupported Verilator installation: {0}")]
    Version(String),
    /// The port list or top module name is invalid, or does not match the
    /// verilated design.
    #[error("port list: {0}")]
    Ports(String),
    /// Verilator rejected the design; `log` holds the useful part of its
    /// output.
    #[error("verilator failed:\n{log}")]
    Verilate {
        /// Verilator's output, trimmed.
        log: String,
    },
    /// The C++ compiler or linker failed; `log` holds the useful part of
    /// its output.
    #[error("compiling the verilated model failed:\n{log}")]
    Compile {
        /// The failing command and its output, trimmed.
        log: String,
    },
    /// The shared object could not be loaded, does not match the expected
    /// ABI or port list, or the model could not be instantiated.
    #[error("loading the verilated model failed: {0}")]
    Load(String),
    /// A profile-guided build's training run failed, or left no profile.
    #[error("training run {name:?} of a profile-guided build: {message}")]
    Training {
        /// The training's name.
        name: String,
        /// What went wrong.
        message: String,
    },
    /// Tracing was requested from a library built without it, or the VCD
    /// file could not be opened by the model.
    #[error("tracing: {0}")]
    Trace(String),
    /// A file system or process operation failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl VerilatorError {
    pub(crate) fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| VerilatorError::Io { context, source }
    }
}

/// Keep the useful part of a long tool log: every error line near the top
/// (up to a limit) plus the tail.
pub(crate) fn trim_log(log: &str) -> String {
    const HEAD_ERRORS: usize = 40;
    const TAIL: usize = 80;
    let lines: Vec<&str> = log.lines().collect();
    if lines.len() <= HEAD_ERRORS + TAIL {
        return log.trim_end().to_string();
    }
    let tail_start = lines.len() - TAIL;
    let mut out = String::new();
    let mut errors = 0;
    for (i, line) in lines[..tail_start].iter().enumerate() {
        let l = line.to_ascii_lowercase();
        if i == 0 || l.contains("%error") || l.contains("error:") {
            out.push_str(line);
            out.push('\n');
            errors += 1;
            if errors >= HEAD_ERRORS {
                break;
            }
        }
    }
    out.push_str(&format!("... ({} lines omitted) ...\n", tail_start));
    for line in &lines[tail_start..] {
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}
