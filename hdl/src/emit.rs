//! Verilog emission for every block.

use crate::csr::Csr;
use rust_hdl::prelude::*;
use weft_regs::{BuildInfo, MAP};

/// One emitted block: its name and its Verilog, top module named `top`.
#[derive(Clone, Debug)]
pub struct Emitted {
    /// Block name (the file is `<name>.v`).
    pub name: &'static str,
    /// Verilog source.
    pub verilog: String,
}

/// Elaborate a block and generate its Verilog (top module `top`).
pub fn verilog_of<B: Block>(mut uut: B) -> String {
    uut.connect_all();
    generate_verilog(&uut)
}

/// The CSR block for weft-regs' map and `build`, connected and ready to
/// simulate.
pub fn csr(build: &BuildInfo) -> Csr {
    let mut uut = Csr::new(&MAP, build);
    uut.connect_all();
    uut
}

/// Verilog of every block of the card, for `build`.
pub fn all(build: &BuildInfo) -> Vec<Emitted> {
    vec![Emitted {
        name: "csr",
        verilog: verilog_of(Csr::new(&MAP, build)),
    }]
}
