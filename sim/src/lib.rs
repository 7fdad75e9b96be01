//! weft's simulation: the engines that run the card's RTL and the simulated
//! card itself.
//!
//! - [`hdl`]: the rust-hdl backend (steps a block directly).
//! - [`verilator`]: our small Verilator builder and model loader, and
//!   [`vl`]: a Verilated block as a [`weft_model::Dut`].
//! - [`simulator`]: picks a simulator for a block by name (`rust-hdl`, `verilator`).
//! - [`witness`]: runs one stimulus through the model and both simulators and
//!   reports any disagreement.
//! - [`device`]: `SimDevice`, the simulated card — `weft_top`, the design
//!   that is flashed, on rust-hdl or Verilator, or the top's reference
//!   model ([`timed_model`]) — behind weft-driver's two seams, `Device`
//!   (registers) and `FramePorts` (frames on the wire and host ports).
//! - [`timing`]: a static-timing proxy over yosys's mapped netlist.
//! - `*_blocks`: port glue of each block for its witness tests.
#![deny(missing_docs)]

pub mod blocks;
pub mod cdc_blocks;
pub mod device;
pub mod frame_check_blocks;
pub mod framer_blocks;
pub mod grad_blocks;
pub mod grad_fanout_blocks;
pub mod hdl;
pub mod memops_port_blocks;
pub mod net_regs_blocks;
pub mod prebuilt;
pub mod probe;
pub mod qdma;
pub mod rec_pack_blocks;
mod rtl_card;
pub mod simulator;
pub mod timed_model;
pub mod timing;
pub mod verilator;
pub mod vl;
pub mod witness;
pub mod yosys;

pub use device::SimDevice;
pub use qdma::QdmaModel;
pub use simulator::{Simulator, SimulatorOptions};

/// What can go wrong building or running a simulation.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// Verilator could not build or load a model.
    #[error(transparent)]
    Verilator(#[from] verilator::VerilatorError),
    /// The RTL's ports and the model's port declaration disagree.
    #[error("port mismatch: {0}")]
    Ports(String),
    /// A file could not be written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A geometry the simulated card cannot be built with.
    #[error("{0}")]
    Geometry(String),
    /// A clock schedule that does not fit the block's clock inputs.
    #[error("clocks: {0}")]
    Clocks(String),
    /// An unknown simulator name.
    #[error("unknown simulator {0:?} (known: rust-hdl, verilator)")]
    UnknownSimulator(String),
}
