//! Verilog emission for every block.

use crate::csr::Csr;
use rust_hdl::prelude::*;
use weft_regs::{BuildInfo, MAP};

/// One emitted block: its name and its Verilog, top module named
/// `weft_<name>`.
#[derive(Clone, Debug)]
pub struct Emitted {
    /// Block name (the file is `<name>.v`).
    pub name: &'static str,
    /// Verilog source.
    pub verilog: String,
}

/// Generate the Verilog of a connected block with its top module named
/// `module` (rust-hdl always names it `top`, and its submodules `top$...`).
pub fn verilog_of<B: Block>(uut: &B, module: &str) -> String {
    rename_top(&generate_verilog(uut), module)
}

/// Rename rust-hdl's `top` module and its `top$child` submodules, so that
/// several blocks can live in one Verilog project.
pub fn rename_top(verilog: &str, module: &str) -> String {
    let mut out = String::with_capacity(verilog.len());
    let bytes = verilog.as_bytes();
    let mut i = 0;
    while i < verilog.len() {
        let at_ident_start = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b'$');
        let rest = &verilog[i..];
        if at_ident_start
            && (rest.starts_with("top$") || rest.starts_with("top(") || rest.starts_with("top "))
        {
            out.push_str(module);
            i += 3;
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// The Verilog module name of block `name`.
pub fn module_name(name: &str) -> String {
    format!("weft_{name}")
}

/// The CSR block for weft-regs' map and `build`, connected and ready to
/// simulate.
pub fn csr(build: &BuildInfo) -> Csr {
    let mut uut = Csr::new(&MAP, build);
    uut.connect_all();
    uut
}

/// The key-value engine as built into the card: 512-bit stream (8 lanes),
/// 512 slots per lane.
pub type KvAggCard = crate::kv_agg::KvAgg<8, 512, 9>;
/// A narrow key-value engine for fast tests in rust-hdl: 2 lanes, 4 slots.
pub type KvAggNarrow = crate::kv_agg::KvAgg<2, 128, 2>;

/// A connected key-value engine.
pub fn kv_agg<const L: usize, const W: usize, const SB: usize>() -> crate::kv_agg::KvAgg<L, W, SB> {
    let mut uut = crate::kv_agg::KvAgg::<L, W, SB>::new();
    uut.connect_all();
    uut
}

/// The simulated card: CSR block and a key-value engine of `1 << SB` slots
/// per lane at 512 bits.
pub type CardOf<const SB: usize> = crate::card::Card<8, 512, SB>;

/// A connected card for `build`.
pub fn card<const SB: usize>(build: &BuildInfo) -> CardOf<SB> {
    let mut uut = crate::card::Card::<8, 512, SB>::new(build);
    uut.connect_all();
    uut
}

/// A connected MemOps port with `K` stages.
pub fn memops<const K: usize>() -> crate::memops::Memops<K> {
    let mut uut = crate::memops::Memops::<K>::new();
    uut.connect_all();
    uut
}

/// Verilog of every block of the card, for `build`.
pub fn all(build: &BuildInfo) -> Vec<Emitted> {
    vec![
        Emitted {
            name: "csr",
            verilog: verilog_of(&csr(build), &module_name("csr")),
        },
        Emitted {
            name: "kv_agg",
            verilog: verilog_of(&kv_agg::<8, 512, 9>(), &module_name("kv_agg")),
        },
        Emitted {
            name: "memops",
            verilog: verilog_of(&memops::<8>(), &module_name("memops")),
        },
        Emitted {
            name: "card",
            verilog: verilog_of(&card::<9>(build), &module_name("card")),
        },
    ]
}
