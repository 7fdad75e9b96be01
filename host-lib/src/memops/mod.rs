//! MemOps: programs (TOML) and their verifier, traces, and runs on the
//! simulated switch port (`weft memops check|run`).

pub mod program;
#[cfg(feature = "sim")]
pub mod run;
pub mod trace;

pub use program::{parse, verify, Parsed, Rejection};
#[cfg(feature = "sim")]
pub use run::{run, RunOptions, RunReport};
pub use trace::{parse_trace, TraceError, TraceFault};
