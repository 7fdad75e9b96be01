//! The host library's error type.

/// Result alias of the host library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong in the host library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A device spec that does not parse.
    #[error("bad device {spec:?}: {why} (expected sim, sim:verilator, sim:rust-hdl, sim:model, vfio:DDDD:BB:DD.F, onic:DDDD:BB:DD.F or unix:PATH)")]
    BadSpec {
        /// What was given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// The device kind exists but this build cannot open it.
    #[error("{0}")]
    Unsupported(String),
    /// The driver failed.
    #[error(transparent)]
    Driver(#[from] weft_driver::Error),
    /// The simulation failed to build or run.
    #[cfg(feature = "sim")]
    #[error(transparent)]
    Sim(#[from] weft_sim::SimError),
    /// A key-value aggregation job failed.
    #[error(transparent)]
    Kv(#[from] crate::kv::KvError),
    /// The AVM pool.
    #[error(transparent)]
    Avm(#[from] crate::avm::AvmError),
    /// A gradient aggregation job.
    #[error(transparent)]
    Grad(#[from] crate::grad::GradError),
    /// A self-check found a disagreement or a broken rule.
    #[error("self-check failed: {0}")]
    Check(String),
}
