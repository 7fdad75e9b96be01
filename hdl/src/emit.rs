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
/// `module` (rust-hdl always names it `top`, and its submodules `top$...`),
/// each combinational block split into one block per signal
/// ([`crate::comb_split`]), each register folded into its parent
/// ([`crate::dff_fold`]), the constants written as continuous
/// assignments ([`crate::const_wires`]) and each RAM's read and write in
/// one clocked block ([`crate::ram_merge`]). This is the Verilog every
/// tool is given.
pub fn verilog_of<B: Block>(uut: &B, module: &str) -> String {
    verilog_shaped(uut, module, Shape::Split)
}

/// How the emitted Verilog is shaped.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Shape {
    /// One combinational block per signal, the registers folded into
    /// their parents and the constants wired: what every tool is given.
    #[default]
    Split,
    /// One combinational block per signal, every register still a module
    /// of its own and the constants still in their blocks. Kept to measure
    /// what the fold and the wired constants buy (`weft bench sim`).
    Unfolded,
    /// As rust-hdl writes it: one combinational block per module. Kept to
    /// measure what the split buys (`weft bench sim`) and to look at
    /// rust-hdl's own output.
    AsGenerated,
}

/// [`verilog_of`] with the combinational blocks shaped as `shape` says.
pub fn verilog_shaped<B: Block>(uut: &B, module: &str, shape: Shape) -> String {
    let v = rename_top(&generate_verilog(uut), module);
    match shape {
        Shape::Split => {
            let folded = crate::dff_fold::fold(&crate::comb_split::split(&v).0).0;
            crate::ram_merge::merge(&crate::const_wires::wire_constants(&folded).0).0
        }
        Shape::Unfolded => crate::comb_split::split(&v).0,
        Shape::AsGenerated => v,
    }
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

/// A connected MemOps port with `K` stages.
pub fn memops<const K: usize>() -> crate::memops::Memops<K> {
    let mut uut = crate::memops::Memops::<K>::new();
    uut.connect_all();
    uut
}

/// The gradient engine as it would sit on the card: 512-bit stream (16
/// lanes), 256 slots, 64-value chunks (4 value beats).
pub type GradAggCard = crate::grad_agg::GradAgg<16, 512, 8, 4, 10>;
/// A narrow gradient engine for fast tests in rust-hdl: 4 lanes, 4 slots,
/// 8-value chunks.
pub type GradAggNarrow = crate::grad_agg::GradAgg<4, 128, 2, 2, 3>;

/// A connected gradient engine (`L` lanes, `1 << SB` slots, `VB` value
/// beats, `AB = SB + log2(VB)`).
pub fn grad_agg<
    const L: usize,
    const W: usize,
    const SB: usize,
    const VB: usize,
    const AB: usize,
>() -> crate::grad_agg::GradAgg<L, W, SB, VB, AB> {
    let mut uut = crate::grad_agg::GradAgg::<L, W, SB, VB, AB>::new();
    uut.connect_all();
    uut
}

/// A connected deframer.
pub fn deframe() -> crate::steer::Deframe {
    let mut uut = crate::steer::Deframe::new();
    uut.connect_all();
    uut
}

/// A connected first-beat classifier.
pub fn classify() -> crate::classify::Classify {
    let mut uut = crate::classify::Classify::new();
    uut.connect_all();
    uut
}

/// A connected four-way packet merge.
pub fn pkt_mux4() -> crate::steer::PktMux4 {
    let mut uut = crate::steer::PktMux4::new();
    uut.connect_all();
    uut
}

/// A connected stream register slice.
pub fn slice() -> crate::steer::Slice {
    let mut uut = crate::steer::Slice::default();
    uut.connect_all();
    uut
}

/// A connected two-way packet merge with a return-address sideband.
pub fn pkt_mux2() -> crate::steer::PktMux2<{ weft_regs::wire::RET_BITS }> {
    let mut uut = crate::steer::PktMux2::new();
    uut.connect_all();
    uut
}

/// A connected AVM pool.
pub fn avm() -> crate::avm::Avm {
    let mut uut = crate::avm::Avm::new();
    uut.connect_all();
    uut
}

/// A connected two-flip-flop synchroniser.
pub fn sync_bit() -> crate::cdc::SyncBit {
    let mut uut = crate::cdc::SyncBit::default();
    uut.connect_all();
    uut
}

/// A connected dual-clock FIFO of `N` words of `W` bits (`P` = log2(`N`) + 1).
pub fn async_fifo<const W: usize, const N: usize, const P: usize>(
) -> crate::cdc::AsyncFifo<Bits<W>, N, P> {
    let mut uut = crate::cdc::AsyncFifo::<Bits<W>, N, P>::new();
    uut.connect_all();
    uut
}

/// A connected two-phase handshake crossing of one `W`-bit word.
pub fn cdc_2phase<const W: usize>() -> crate::cdc::Cdc2Phase<Bits<W>> {
    let mut uut = crate::cdc::Cdc2Phase::<Bits<W>>::default();
    uut.connect_all();
    uut
}

/// A connected AXI4-Lite clock-domain crossing.
pub fn axil_cdc() -> crate::cdc::AxilCdc {
    let mut uut = crate::cdc::AxilCdc::new();
    uut.connect_all();
    uut
}

/// Run `f` on a thread with a 256 MiB stack. rust-hdl builds a block's
/// Verilog syntax tree in one generated function, and the top's is large
/// enough to overflow a default 2 MiB thread stack in a debug build.
pub fn on_big_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn_scoped(s, f)
            .expect("spawn a thread")
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e))
    })
}

/// The Verilog of the OpenNIC top for `build`, module `weft_top`.
pub fn top_verilog(build: &BuildInfo) -> String {
    on_big_stack(|| verilog_of(&top(build), &module_name("top")))
}

/// The OpenNIC top for `build`, connected.
pub fn top(build: &BuildInfo) -> crate::top::WeftTop {
    let mut uut = crate::top::WeftTop::new(build);
    uut.connect_all();
    uut
}

/// Verilog of every block of the card, for `build`.
pub fn all(build: &BuildInfo) -> Vec<Emitted> {
    vec![
        Emitted {
            name: "sync_bit",
            verilog: verilog_of(&sync_bit(), &module_name("sync_bit")),
        },
        Emitted {
            // The crossing's FIFO at a typical size: 16 words of 32 bits.
            name: "async_fifo",
            verilog: verilog_of(&async_fifo::<32, 16, 5>(), &module_name("async_fifo")),
        },
        Emitted {
            // As one AXI4-Lite read channel word: data and response.
            name: "cdc_2phase",
            verilog: verilog_of(&cdc_2phase::<34>(), &module_name("cdc_2phase")),
        },
        Emitted {
            name: "axil_cdc",
            verilog: verilog_of(&axil_cdc(), &module_name("axil_cdc")),
        },
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
            name: "grad_agg",
            verilog: verilog_of(&grad_agg::<16, 512, 8, 4, 10>(), &module_name("grad_agg")),
        },
        Emitted {
            name: "classify",
            verilog: verilog_of(&classify(), &module_name("classify")),
        },
        Emitted {
            name: "deframe",
            verilog: verilog_of(&deframe(), &module_name("deframe")),
        },
        Emitted {
            name: "pkt_mux4",
            verilog: verilog_of(&pkt_mux4(), &module_name("pkt_mux4")),
        },
        Emitted {
            name: "pkt_mux2",
            verilog: verilog_of(&pkt_mux2(), &module_name("pkt_mux2")),
        },
        Emitted {
            name: "slice",
            verilog: verilog_of(&slice(), &module_name("slice")),
        },
        Emitted {
            name: "net_regs",
            verilog: verilog_of(
                &crate::net_regs::NetRegs::connected(),
                &module_name("net_regs"),
            ),
        },
        Emitted {
            name: "frame_check",
            verilog: verilog_of(
                &crate::top::TopCheck::connected(),
                &module_name("frame_check"),
            ),
        },
        Emitted {
            name: "framer",
            verilog: verilog_of(&crate::framer::Framer::connected(), &module_name("framer")),
        },
        Emitted {
            name: "rec_pack",
            verilog: verilog_of(
                &crate::rec_pack::RecPack::connected(),
                &module_name("rec_pack"),
            ),
        },
        Emitted {
            name: "grad_fanout",
            verilog: verilog_of(
                &crate::top::TopFanout::connected(),
                &module_name("grad_fanout"),
            ),
        },
        Emitted {
            name: "memops_port",
            verilog: verilog_of(
                &crate::memops_port::MemopsPort::connected(),
                &module_name("memops_port"),
            ),
        },
        Emitted {
            name: "avm",
            verilog: verilog_of(&avm(), &module_name("avm")),
        },
        Emitted {
            name: "top",
            verilog: top_verilog(&BuildInfo {
                features: crate::build_info::top_features(),
                ..*build
            }),
        },
    ]
}
