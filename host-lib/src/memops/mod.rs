//! MemOps: programs (TOML) and their verifier, traces, and runs on a
//! card's MemOps port (`weft memops check|run`).

pub mod program;
pub mod run;
pub mod trace;
pub mod udp;

pub use program::{parse, verify, Parsed, Rejection};
pub use run::{run, RunReport};
pub use trace::{parse_trace, TraceError, TraceFault};
