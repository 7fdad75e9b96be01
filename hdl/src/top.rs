//! `weft_top`: the card in the AMD OpenNIC shell's 250 MHz box, speaking
//! Ethernet/IPv4/UDP on both of its frame ports (`docs/wire.md`).
//!
//! Its ports are exactly the box's (`plugin/p2p/p2p_250mhz.sv` with one
//! interface and one QDMA; `weft_250mhz`, the wrapper `weft bitstream build`
//! writes, instantiates it by port name). Inside:
//! - **Registers on `axil_aclk`, engines on `axis_aclk`.** AXI4-Lite slave 0
//!   crosses into the engine domain through [`AxilCdc`] (one async FIFO per
//!   channel) to the CSR block, whose engine register port reaches every
//!   engine and the `net` block (each decodes its own block of the map;
//!   their read data are OR-ed, each driving 0 outside its block). Slave 1
//!   (the p2p plugin's second switch-control port) answers DECERR. The
//!   shell's register bus has no `wstrb`: writes are whole words.
//! - **Ingress.** Each input (network receive, host H2C) passes a
//!   [`FrameCheck`] (store and forward: frames whose `tuser_size` lies are
//!   dropped whole) and a [`Deframe`]: UDP frames addressed to the card
//!   (`net` registers) at an engine's port go to that engine without their
//!   headers and with their return address; everything else, malformed
//!   engine frames included, passes through to the other side unchanged.
//!   Each engine takes packets from both inputs, a whole packet at a time
//!   ([`PktMux2`]).
//! - **Engines and their frames.** `kv_agg` (UDP 0x5746): acks go back to
//!   each data packet's sender on the port it came in on; records are packed
//!   many per frame ([`RecPack`]) for the collector on the host port.
//!   `grad_agg` (0x5747): RESULT packets are copied to every worker of the
//!   job from the worker table, EVICT/FALLBACK go to the host fallback
//!   ([`GradFanout`]). MemOps (0x5748): one transaction per frame into the
//!   AVM pool ([`MemopsPort`]); the completion goes back to the requester.
//!   Four [`Framer`]s build the Ethernet/IPv4/UDP frames (addresses from
//!   the `net` block, checksums in hardware).
//! - **Egress.** Card to host merges pass-through network frames, record
//!   frames, host-bound acks and completions, and host-bound gradient
//!   frames; to the network: pass-through host frames and wire-bound acks,
//!   gradient copies and completions ([`PktMux4`], whole frames,
//!   round-robin), every frame with `tuser_size` = its length, and on the
//!   wire `tuser_dst` = 0x0040 (CMAC 0). `tuser_src` names each frame's
//!   stream (`weft_regs::wire::SRC_*`).
//! - **Register slices** ([`Slice`]) on all four stream ports: every
//!   port signal, `tready` included, goes into or comes out of a register,
//!   so no port reaches logic beyond them combinationally (one cycle each
//!   way; AXI4-Stream allows it, and a simulator no longer settles the
//!   logic behind a port before and after every clock edge).
//! - **Counters** of the `net` block count every frame in and out by kind.
//! - **Reset handshake.** `mod_rstn` is synchronised into the engine domain
//!   and back; `mod_rst_done` follows the round trip. While it is low every
//!   stream port is held (no VALID, no READY). The engines' state is not
//!   cleared by it (they start from their configured state, and the
//!   key-value and gradient engines have reset commands of their own).
//!
//! The CSR block's cycle counter counts `axis_aclk` cycles here.

use crate::avm::Avm;
use crate::cdc::{AxilCdc, SyncBit};
use crate::classify::Classify;
use crate::common::{konst, Cat, Pack, Pair, Widen};
use crate::csr::Csr;
use crate::frame_check::FrameCheck;
use crate::framer::Framer;
use crate::grad_agg::GradAgg;
use crate::grad_fanout::GradFanout;
use crate::kv_agg::KvAgg;
use crate::memops::Memops;
use crate::memops_port::MemopsPort;
use crate::net_regs::{NetRegs, COUNTERS};
use crate::rec_pack::RecPack;
use crate::steer::{Deframe, PktMux2, PktMux4, Slice, SLICE_META};
use rust_hdl::prelude::*;
use weft_regs::{wire, BuildInfo, MAP};

/// The key-value engine in the top: 8 lanes (512 bits), 512 slots a lane.
pub type TopKv = KvAgg<8, 512, 9>;
/// The gradient engine in the top: 16 lanes, 256 slots, 64-value chunks.
pub type TopGrad = GradAgg<16, 512, 8, 4, 10>;
/// The MemOps port in the top: 8 stages.
pub type TopMemops = Memops<8>;
/// The frame check at each input: 512 beats (32 KiB), room for three
/// 9600-byte frames.
pub type TopCheck = FrameCheck<9>;
/// The gradient fan-out: packets of one header beat and 4 value beats.
pub type TopFanout = GradFanout<5>;
/// The two-way merges carry a return address.
pub type Mux2 = PktMux2<{ wire::RET_BITS }>;

// The engines' return address is taken out of a slice's sideband at 97
// bits (`get_bits` takes a literal inside `hdl_gen`).
const _: () = assert!(wire::RET_BITS == 97);

/// Bytes of a gradient packet on the card.
const GRAD_PACKET: u64 = 5 * 64;

/// The top.
#[derive(LogicBlock)]
pub struct WeftTop {
    /// AXI4-Lite AWVALID, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_awvalid: Signal<In, Bits<2>>,
    /// AXI4-Lite AWADDR, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_awaddr: Signal<In, Bits<64>>,
    /// AXI4-Lite AWREADY, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_awready: Signal<Out, Bits<2>>,
    /// AXI4-Lite WVALID, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_wvalid: Signal<In, Bits<2>>,
    /// AXI4-Lite WDATA, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_wdata: Signal<In, Bits<64>>,
    /// AXI4-Lite WREADY, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_wready: Signal<Out, Bits<2>>,
    /// AXI4-Lite BVALID, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_bvalid: Signal<Out, Bits<2>>,
    /// AXI4-Lite BRESP, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_bresp: Signal<Out, Bits<4>>,
    /// AXI4-Lite BREADY, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_bready: Signal<In, Bits<2>>,
    /// AXI4-Lite ARVALID, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_arvalid: Signal<In, Bits<2>>,
    /// AXI4-Lite ARADDR, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_araddr: Signal<In, Bits<64>>,
    /// AXI4-Lite ARREADY, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_arready: Signal<Out, Bits<2>>,
    /// AXI4-Lite RVALID, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_rvalid: Signal<Out, Bits<2>>,
    /// AXI4-Lite RDATA, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_rdata: Signal<Out, Bits<64>>,
    /// AXI4-Lite RRESP, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_rresp: Signal<Out, Bits<4>>,
    /// AXI4-Lite RREADY, interface k at bits of slave k (0: weft's registers, 1: answers DECERR).
    pub s_axil_rready: Signal<In, Bits<2>>,
    /// `s_axis_qdma_h2c` tvalid.
    pub s_axis_qdma_h2c_tvalid: Signal<In, Bit>,
    /// `s_axis_qdma_h2c` tdata.
    pub s_axis_qdma_h2c_tdata: Signal<In, Bits<512>>,
    /// `s_axis_qdma_h2c` tkeep.
    pub s_axis_qdma_h2c_tkeep: Signal<In, Bits<64>>,
    /// `s_axis_qdma_h2c` tlast.
    pub s_axis_qdma_h2c_tlast: Signal<In, Bit>,
    /// `s_axis_qdma_h2c` tuser_size.
    pub s_axis_qdma_h2c_tuser_size: Signal<In, Bits<16>>,
    /// `s_axis_qdma_h2c` tuser_src.
    pub s_axis_qdma_h2c_tuser_src: Signal<In, Bits<16>>,
    /// `s_axis_qdma_h2c` tuser_dst.
    pub s_axis_qdma_h2c_tuser_dst: Signal<In, Bits<16>>,
    /// `s_axis_qdma_h2c` tready.
    pub s_axis_qdma_h2c_tready: Signal<Out, Bit>,
    /// `m_axis_qdma_c2h` tvalid.
    pub m_axis_qdma_c2h_tvalid: Signal<Out, Bit>,
    /// `m_axis_qdma_c2h` tdata.
    pub m_axis_qdma_c2h_tdata: Signal<Out, Bits<512>>,
    /// `m_axis_qdma_c2h` tkeep.
    pub m_axis_qdma_c2h_tkeep: Signal<Out, Bits<64>>,
    /// `m_axis_qdma_c2h` tlast.
    pub m_axis_qdma_c2h_tlast: Signal<Out, Bit>,
    /// `m_axis_qdma_c2h` tuser_size.
    pub m_axis_qdma_c2h_tuser_size: Signal<Out, Bits<16>>,
    /// `m_axis_qdma_c2h` tuser_src.
    pub m_axis_qdma_c2h_tuser_src: Signal<Out, Bits<16>>,
    /// `m_axis_qdma_c2h` tuser_dst.
    pub m_axis_qdma_c2h_tuser_dst: Signal<Out, Bits<16>>,
    /// `m_axis_qdma_c2h` tready.
    pub m_axis_qdma_c2h_tready: Signal<In, Bit>,
    /// `m_axis_adap_tx_250mhz` tvalid.
    pub m_axis_adap_tx_250mhz_tvalid: Signal<Out, Bit>,
    /// `m_axis_adap_tx_250mhz` tdata.
    pub m_axis_adap_tx_250mhz_tdata: Signal<Out, Bits<512>>,
    /// `m_axis_adap_tx_250mhz` tkeep.
    pub m_axis_adap_tx_250mhz_tkeep: Signal<Out, Bits<64>>,
    /// `m_axis_adap_tx_250mhz` tlast.
    pub m_axis_adap_tx_250mhz_tlast: Signal<Out, Bit>,
    /// `m_axis_adap_tx_250mhz` tuser_size.
    pub m_axis_adap_tx_250mhz_tuser_size: Signal<Out, Bits<16>>,
    /// `m_axis_adap_tx_250mhz` tuser_src.
    pub m_axis_adap_tx_250mhz_tuser_src: Signal<Out, Bits<16>>,
    /// `m_axis_adap_tx_250mhz` tuser_dst.
    pub m_axis_adap_tx_250mhz_tuser_dst: Signal<Out, Bits<16>>,
    /// `m_axis_adap_tx_250mhz` tready.
    pub m_axis_adap_tx_250mhz_tready: Signal<In, Bit>,
    /// `s_axis_adap_rx_250mhz` tvalid.
    pub s_axis_adap_rx_250mhz_tvalid: Signal<In, Bit>,
    /// `s_axis_adap_rx_250mhz` tdata.
    pub s_axis_adap_rx_250mhz_tdata: Signal<In, Bits<512>>,
    /// `s_axis_adap_rx_250mhz` tkeep.
    pub s_axis_adap_rx_250mhz_tkeep: Signal<In, Bits<64>>,
    /// `s_axis_adap_rx_250mhz` tlast.
    pub s_axis_adap_rx_250mhz_tlast: Signal<In, Bit>,
    /// `s_axis_adap_rx_250mhz` tuser_size.
    pub s_axis_adap_rx_250mhz_tuser_size: Signal<In, Bits<16>>,
    /// `s_axis_adap_rx_250mhz` tuser_src.
    pub s_axis_adap_rx_250mhz_tuser_src: Signal<In, Bits<16>>,
    /// `s_axis_adap_rx_250mhz` tuser_dst.
    pub s_axis_adap_rx_250mhz_tuser_dst: Signal<In, Bits<16>>,
    /// `s_axis_adap_rx_250mhz` tready.
    pub s_axis_adap_rx_250mhz_tready: Signal<Out, Bit>,
    /// Module reset request from the shell (active low, axil_aclk).
    pub mod_rstn: Signal<In, Bit>,
    /// Reset done, back to the shell (axil_aclk).
    pub mod_rst_done: Signal<Out, Bit>,
    /// The register clock (125 MHz).
    pub axil_aclk: Signal<In, Clock>,
    /// The stream and engine clock (250 MHz).
    pub axis_aclk: Signal<In, Clock>,
    cdc: AxilCdc,
    csr: Csr,
    net: NetRegs,
    kv: TopKv,
    grad: TopGrad,
    memops: TopMemops,
    avm: Avm,
    rx_sl: Slice,
    h2c_sl: Slice,
    rx_fc: TopCheck,
    h2c_fc: TopCheck,
    rx_cs: Slice,
    h2c_cs: Slice,
    rx_cl: Classify,
    h2c_cl: Classify,
    rx_df: Deframe,
    h2c_df: Deframe,
    rx_ds: Slice,
    h2c_ds: Slice,
    kv_in: Mux2,
    grad_in: Mux2,
    mo_in: Mux2,
    kv_sl: Slice,
    grad_sl: Slice,
    mo_sl: Slice,
    rx_dest: Signal<Local, Bits<2>>,
    h2c_dest: Signal<Local, Bits<2>>,
    c_rx_dm: Cat<98, 2, 96>,
    c_h2c_dm: Cat<98, 2, 96>,
    w_rx_dm: Widen<{ SLICE_META }, 98>,
    w_h2c_dm: Widen<{ SLICE_META }, 98>,
    w_kv_meta: Widen<{ SLICE_META }, { wire::RET_BITS }>,
    w_mo_meta: Widen<{ SLICE_META }, { wire::RET_BITS }>,
    mo_port: MemopsPort,
    rec: RecPack,
    fan: TopFanout,
    fr_rec: Framer,
    fr_ack: Framer,
    fr_grad: Framer,
    fr_mo: Framer,
    ack_o: Slice,
    mo_o: Slice,
    grad_o: Slice,
    rec_o: Slice,
    aux_o: Slice,
    w_host_ack: Widen<{ SLICE_META }, 1>,
    w_host_mo: Widen<{ SLICE_META }, 1>,
    w_host_grad: Widen<{ SLICE_META }, 1>,
    aux: Mux2,
    c2h: PktMux4,
    tx: PktMux4,
    c2h_sl: Slice,
    tx_sl: Slice,
    rst_in: SyncBit,
    rst_back: SyncBit,
    n_bvalid: DFF<Bit>,
    ev_c2h: DFF<Bit>,
    ev_tx: DFF<Bit>,
    ev_q: DFF<Bits<COUNTERS>>,
    eng_raddr_q: DFF<Bits<14>>,
    eng_re_q: DFF<Bit>,
    eng_waddr_q: DFF<Bits<14>>,
    eng_wdata_q: DFF<Bits<32>>,
    eng_wstrb_q: DFF<Bits<4>>,
    eng_we_q: DFF<Bit>,
    eng_rdata_q: DFF<Bits<32>>,
    n_rvalid: DFF<Bit>,
    run: Signal<Local, Bit>,
    rx_ready: Signal<Local, Bit>,
    h2c_ready: Signal<Local, Bit>,
    n_aw: Signal<Local, Bit>,
    /// The counter events side by side: a concatenation, not an OR of
    /// one-hot constants under each event's `if` (a data-dependent branch
    /// per event and cycle in a simulator).
    ev: Pack<COUNTERS, 1, COUNTERS>,
    c_rx_ret: Cat<{ wire::RET_BITS }, 1, 96>,
    c_h2c_ret: Cat<{ wire::RET_BITS }, 1, 96>,
    c_ack_id: Cat<32, 16, 16>,
    c_ack_lo: Cat<64, 32, 32>,
    c_ack_st: Cat<48, 16, 32>,
    w_ack_hi: Widen<64, 48>,
    c_ack_app: Cat<128, 64, 64>,
    w_tag_ack: Widen<{ wire::RET_BITS }, 16>,
    w_tag_mo: Widen<{ wire::RET_BITS }, 16>,
    ack_head: Constant<Bits<32>>,
    zero2: Constant<Bits<2>>,
    bit0: Constant<Bits<1>>,
    bit1: Constant<Bits<1>>,
    ones4: Constant<Bits<4>>,
    zero16: Constant<Bits<16>>,
    zero32: Constant<Bits<32>>,
    zero128: Constant<Bits<128>>,
    zero512: Constant<Bits<512>>,
    src_memops: Constant<Bits<16>>,
    zero_ret: Constant<Bits<{ wire::RET_BITS }>>,
    d_kv: Constant<Bits<2>>,
    d_grad: Constant<Bits<2>>,
    d_memops: Constant<Bits<2>>,
    kv_port: Constant<Bits<16>>,
    grad_port: Constant<Bits<16>>,
    memops_port: Constant<Bits<16>>,
    grad_blen: Constant<Bits<16>>,
    src_rec: Constant<Bits<16>>,
    src_ack: Constant<Bits<16>>,
    src_pass: Constant<Bits<16>>,
    tx_dst: Constant<Bits<16>>,
    decerr: Constant<Bits<2>>,
    p_awready: Pair,
    p_wready: Pair,
    p_bvalid: Pair,
    p_arready: Pair,
    p_rvalid: Pair,
    c_bresp: Cat<4, 2, 2>,
    c_rresp: Cat<4, 2, 2>,
    c_rdata: Cat<64, 32, 32>,
}

impl WeftTop {
    /// Elaborate the top with weft-regs' map and the ID block's `build`.
    pub fn new(build: &BuildInfo) -> Self {
        Self {
            s_axil_awvalid: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rready: Default::default(),
            s_axis_qdma_h2c_tvalid: Default::default(),
            s_axis_qdma_h2c_tdata: Default::default(),
            s_axis_qdma_h2c_tkeep: Default::default(),
            s_axis_qdma_h2c_tlast: Default::default(),
            s_axis_qdma_h2c_tuser_size: Default::default(),
            s_axis_qdma_h2c_tuser_src: Default::default(),
            s_axis_qdma_h2c_tuser_dst: Default::default(),
            s_axis_qdma_h2c_tready: Default::default(),
            m_axis_qdma_c2h_tvalid: Default::default(),
            m_axis_qdma_c2h_tdata: Default::default(),
            m_axis_qdma_c2h_tkeep: Default::default(),
            m_axis_qdma_c2h_tlast: Default::default(),
            m_axis_qdma_c2h_tuser_size: Default::default(),
            m_axis_qdma_c2h_tuser_src: Default::default(),
            m_axis_qdma_c2h_tuser_dst: Default::default(),
            m_axis_qdma_c2h_tready: Default::default(),
            m_axis_adap_tx_250mhz_tvalid: Default::default(),
            m_axis_adap_tx_250mhz_tdata: Default::default(),
            m_axis_adap_tx_250mhz_tkeep: Default::default(),
            m_axis_adap_tx_250mhz_tlast: Default::default(),
            m_axis_adap_tx_250mhz_tuser_size: Default::default(),
            m_axis_adap_tx_250mhz_tuser_src: Default::default(),
            m_axis_adap_tx_250mhz_tuser_dst: Default::default(),
            m_axis_adap_tx_250mhz_tready: Default::default(),
            s_axis_adap_rx_250mhz_tvalid: Default::default(),
            s_axis_adap_rx_250mhz_tdata: Default::default(),
            s_axis_adap_rx_250mhz_tkeep: Default::default(),
            s_axis_adap_rx_250mhz_tlast: Default::default(),
            s_axis_adap_rx_250mhz_tuser_size: Default::default(),
            s_axis_adap_rx_250mhz_tuser_src: Default::default(),
            s_axis_adap_rx_250mhz_tuser_dst: Default::default(),
            s_axis_adap_rx_250mhz_tready: Default::default(),
            mod_rstn: Default::default(),
            mod_rst_done: Default::default(),
            axil_aclk: Default::default(),
            axis_aclk: Default::default(),
            cdc: AxilCdc::new(),
            csr: Csr::new(&MAP, build),
            net: NetRegs::new(),
            kv: TopKv::new(),
            grad: TopGrad::new(),
            memops: TopMemops::new(),
            avm: Avm::new(),
            rx_sl: Slice::default(),
            h2c_sl: Slice::default(),
            rx_fc: TopCheck::new(),
            h2c_fc: TopCheck::new(),
            rx_cs: Slice::default(),
            h2c_cs: Slice::default(),
            rx_cl: Classify::new(),
            h2c_cl: Classify::new(),
            rx_df: Deframe::new(),
            h2c_df: Deframe::new(),
            rx_ds: Slice::default(),
            h2c_ds: Slice::default(),
            kv_in: Mux2::new(),
            grad_in: Mux2::new(),
            mo_in: Mux2::new(),
            kv_sl: Slice::default(),
            grad_sl: Slice::default(),
            mo_sl: Slice::default(),
            rx_dest: Default::default(),
            h2c_dest: Default::default(),
            c_rx_dm: Default::default(),
            c_h2c_dm: Default::default(),
            w_rx_dm: Default::default(),
            w_h2c_dm: Default::default(),
            w_kv_meta: Default::default(),
            w_mo_meta: Default::default(),
            mo_port: MemopsPort::new(),
            rec: RecPack::new(),
            fan: TopFanout::new(),
            fr_rec: Framer::new(),
            fr_ack: Framer::new(),
            fr_grad: Framer::new(),
            fr_mo: Framer::new(),
            ack_o: Slice::default(),
            mo_o: Slice::default(),
            grad_o: Slice::default(),
            rec_o: Slice::default(),
            aux_o: Slice::default(),
            w_host_ack: Default::default(),
            w_host_mo: Default::default(),
            w_host_grad: Default::default(),
            aux: Mux2::new(),
            c2h: PktMux4::new(),
            tx: PktMux4::new(),
            c2h_sl: Slice::default(),
            tx_sl: Slice::default(),
            rst_in: Default::default(),
            rst_back: Default::default(),
            n_bvalid: Default::default(),
            ev_c2h: Default::default(),
            ev_tx: Default::default(),
            ev_q: Default::default(),
            eng_raddr_q: Default::default(),
            eng_re_q: Default::default(),
            eng_waddr_q: Default::default(),
            eng_wdata_q: Default::default(),
            eng_wstrb_q: Default::default(),
            eng_we_q: Default::default(),
            eng_rdata_q: Default::default(),
            n_rvalid: Default::default(),
            run: Default::default(),
            rx_ready: Default::default(),
            h2c_ready: Default::default(),
            n_aw: Default::default(),
            ev: Default::default(),
            c_rx_ret: Default::default(),
            c_h2c_ret: Default::default(),
            c_ack_id: Default::default(),
            c_ack_lo: Default::default(),
            c_ack_st: Default::default(),
            w_ack_hi: Default::default(),
            c_ack_app: Default::default(),
            w_tag_ack: Default::default(),
            w_tag_mo: Default::default(),
            // An ack's first four payload bytes: version 1, flags ACK, count 0.
            ack_head: konst(1 | (wire::KV_FLAG_ACK as u64) << 8),
            zero2: konst(0),
            bit0: konst(0),
            bit1: konst(1),
            ones4: konst(0xf),
            zero16: konst(0),
            zero32: konst(0),
            zero128: Constant::new(0u64.into()),
            zero512: Constant::new(0u64.into()),
            src_memops: konst(wire::SRC_MEMOPS as u64),
            zero_ret: Constant::new(0u64.into()),
            d_kv: konst(1),
            d_grad: konst(2),
            d_memops: konst(3),
            kv_port: konst(wire::KV_PORT as u64),
            grad_port: konst(wire::GRAD_PORT as u64),
            memops_port: konst(wire::MEMOPS_PORT as u64),
            grad_blen: konst(GRAD_PACKET),
            src_rec: konst(wire::SRC_KV_RECORDS as u64),
            src_ack: konst(wire::SRC_KV_ACK as u64),
            src_pass: konst(wire::SRC_PASS as u64),
            tx_dst: konst(wire::TX_DST as u64),
            decerr: konst(0b11),
            p_awready: Default::default(),
            p_wready: Default::default(),
            p_bvalid: Default::default(),
            p_arready: Default::default(),
            p_rvalid: Default::default(),
            c_bresp: Default::default(),
            c_rresp: Default::default(),
            c_rdata: Default::default(),
        }
    }
}

impl Logic for WeftTop {
    #[hdl_gen]
    fn update(&mut self) {
        // ---- Clocks.
        self.cdc.s_aclk.next = self.axil_aclk.val();
        self.cdc.m_aclk.next = self.axis_aclk.val();
        self.csr.clock.next = self.axis_aclk.val();
        self.net.clock.next = self.axis_aclk.val();
        self.kv.clock.next = self.axis_aclk.val();
        self.grad.clock.next = self.axis_aclk.val();
        self.memops.clock.next = self.axis_aclk.val();
        self.avm.clock.next = self.axis_aclk.val();
        self.rx_sl.clock.next = self.axis_aclk.val();
        self.h2c_sl.clock.next = self.axis_aclk.val();
        self.c2h_sl.clock.next = self.axis_aclk.val();
        self.tx_sl.clock.next = self.axis_aclk.val();
        self.rx_fc.clock.next = self.axis_aclk.val();
        self.h2c_fc.clock.next = self.axis_aclk.val();
        self.rx_df.clock.next = self.axis_aclk.val();
        self.h2c_df.clock.next = self.axis_aclk.val();
        self.rx_cs.clock.next = self.axis_aclk.val();
        self.rx_cl.clock.next = self.axis_aclk.val();
        self.h2c_cl.clock.next = self.axis_aclk.val();
        self.h2c_cs.clock.next = self.axis_aclk.val();
        self.rx_ds.clock.next = self.axis_aclk.val();
        self.h2c_ds.clock.next = self.axis_aclk.val();
        self.kv_sl.clock.next = self.axis_aclk.val();
        self.grad_sl.clock.next = self.axis_aclk.val();
        self.mo_sl.clock.next = self.axis_aclk.val();
        self.kv_in.clock.next = self.axis_aclk.val();
        self.grad_in.clock.next = self.axis_aclk.val();
        self.mo_in.clock.next = self.axis_aclk.val();
        self.mo_port.clock.next = self.axis_aclk.val();
        self.rec.clock.next = self.axis_aclk.val();
        self.fan.clock.next = self.axis_aclk.val();
        self.fr_rec.clock.next = self.axis_aclk.val();
        self.fr_ack.clock.next = self.axis_aclk.val();
        self.fr_grad.clock.next = self.axis_aclk.val();
        self.fr_mo.clock.next = self.axis_aclk.val();
        self.aux.clock.next = self.axis_aclk.val();
        self.ack_o.clock.next = self.axis_aclk.val();
        self.mo_o.clock.next = self.axis_aclk.val();
        self.grad_o.clock.next = self.axis_aclk.val();
        self.rec_o.clock.next = self.axis_aclk.val();
        self.aux_o.clock.next = self.axis_aclk.val();
        self.c2h.clock.next = self.axis_aclk.val();
        self.tx.clock.next = self.axis_aclk.val();
        self.rst_in.clock.next = self.axis_aclk.val();
        self.rst_back.clock.next = self.axil_aclk.val();
        self.n_bvalid.clock.next = self.axil_aclk.val();
        self.ev_c2h.clock.next = self.axis_aclk.val();
        self.ev_tx.clock.next = self.axis_aclk.val();
        self.ev_q.clock.next = self.axis_aclk.val();
        self.eng_raddr_q.clock.next = self.axis_aclk.val();
        self.eng_re_q.clock.next = self.axis_aclk.val();
        self.eng_waddr_q.clock.next = self.axis_aclk.val();
        self.eng_wdata_q.clock.next = self.axis_aclk.val();
        self.eng_wstrb_q.clock.next = self.axis_aclk.val();
        self.eng_we_q.clock.next = self.axis_aclk.val();
        self.eng_rdata_q.clock.next = self.axis_aclk.val();
        self.n_rvalid.clock.next = self.axil_aclk.val();
        self.n_bvalid.d.next = self.n_bvalid.q.val();
        self.n_rvalid.d.next = self.n_rvalid.q.val();

        // ---- Reset handshake: into the engine domain and back.
        self.rst_in.sig_in.next = self.mod_rstn.val();
        self.run.next = self.rst_in.sig_out.val();
        self.rst_back.sig_in.next = self.rst_in.sig_out.val();
        self.mod_rst_done.next = self.rst_back.sig_out.val();

        // ---- AXI4-Lite slave 0: across to the CSR block.
        self.cdc.s_axil_awaddr.next = self.s_axil_awaddr.val().get_bits::<16>(0);
        self.cdc.s_axil_awvalid.next = self.s_axil_awvalid.val().get_bit(0);
        self.cdc.s_axil_wdata.next = self.s_axil_wdata.val().get_bits::<32>(0);
        self.cdc.s_axil_wstrb.next = self.ones4.val();
        self.cdc.s_axil_wvalid.next = self.s_axil_wvalid.val().get_bit(0);
        self.cdc.s_axil_bready.next = self.s_axil_bready.val().get_bit(0);
        self.cdc.s_axil_araddr.next = self.s_axil_araddr.val().get_bits::<16>(0);
        self.cdc.s_axil_arvalid.next = self.s_axil_arvalid.val().get_bit(0);
        self.cdc.s_axil_rready.next = self.s_axil_rready.val().get_bit(0);
        self.csr.s_axil_awaddr.next = self.cdc.m_axil_awaddr.val();
        self.csr.s_axil_awvalid.next = self.cdc.m_axil_awvalid.val();
        self.cdc.m_axil_awready.next = self.csr.s_axil_awready.val();
        self.csr.s_axil_wdata.next = self.cdc.m_axil_wdata.val();
        self.csr.s_axil_wstrb.next = self.cdc.m_axil_wstrb.val();
        self.csr.s_axil_wvalid.next = self.cdc.m_axil_wvalid.val();
        self.cdc.m_axil_wready.next = self.csr.s_axil_wready.val();
        self.cdc.m_axil_bresp.next = self.csr.s_axil_bresp.val();
        self.cdc.m_axil_bvalid.next = self.csr.s_axil_bvalid.val();
        self.csr.s_axil_bready.next = self.cdc.m_axil_bready.val();
        self.csr.s_axil_araddr.next = self.cdc.m_axil_araddr.val();
        self.csr.s_axil_arvalid.next = self.cdc.m_axil_arvalid.val();
        self.cdc.m_axil_arready.next = self.csr.s_axil_arready.val();
        self.cdc.m_axil_rdata.next = self.csr.s_axil_rdata.val();
        self.cdc.m_axil_rresp.next = self.csr.s_axil_rresp.val();
        self.cdc.m_axil_rvalid.next = self.csr.s_axil_rvalid.val();
        self.csr.s_axil_rready.next = self.cdc.m_axil_rready.val();

        // ---- AXI4-Lite slave 1: every access answered DECERR.
        self.n_aw.next = self.s_axil_awvalid.val().get_bit(1)
            & self.s_axil_wvalid.val().get_bit(1)
            & !self.n_bvalid.q.val();
        if self.n_aw.val() {
            self.n_bvalid.d.next = true;
        } else if self.n_bvalid.q.val() & self.s_axil_bready.val().get_bit(1) {
            self.n_bvalid.d.next = false;
        }
        if self.s_axil_arvalid.val().get_bit(1) & !self.n_rvalid.q.val() {
            self.n_rvalid.d.next = true;
        } else if self.n_rvalid.q.val() & self.s_axil_rready.val().get_bit(1) {
            self.n_rvalid.d.next = false;
        }
        self.p_awready.hi.next = self.n_aw.val();
        self.p_awready.lo.next = self.cdc.s_axil_awready.val();
        self.s_axil_awready.next = self.p_awready.out.val();
        self.p_wready.hi.next = self.n_aw.val();
        self.p_wready.lo.next = self.cdc.s_axil_wready.val();
        self.s_axil_wready.next = self.p_wready.out.val();
        self.p_bvalid.hi.next = self.n_bvalid.q.val();
        self.p_bvalid.lo.next = self.cdc.s_axil_bvalid.val();
        self.s_axil_bvalid.next = self.p_bvalid.out.val();
        self.p_arready.hi.next = !self.n_rvalid.q.val();
        self.p_arready.lo.next = self.cdc.s_axil_arready.val();
        self.s_axil_arready.next = self.p_arready.out.val();
        self.p_rvalid.hi.next = self.n_rvalid.q.val();
        self.p_rvalid.lo.next = self.cdc.s_axil_rvalid.val();
        self.s_axil_rvalid.next = self.p_rvalid.out.val();
        self.c_bresp.hi.next = self.decerr.val();
        self.c_bresp.lo.next = self.cdc.s_axil_bresp.val();
        self.s_axil_bresp.next = self.c_bresp.out.val();
        self.c_rresp.hi.next = self.decerr.val();
        self.c_rresp.lo.next = self.cdc.s_axil_rresp.val();
        self.s_axil_rresp.next = self.c_rresp.out.val();
        self.c_rdata.hi.next = self.zero32.val();
        self.c_rdata.lo.next = self.cdc.s_axil_rdata.val();
        self.s_axil_rdata.next = self.c_rdata.out.val();

        // ---- The engine register port: every block decodes its own. The
        // port is registered on its way out to the engines and their OR-ed
        // read data on its way back (`csr::ENGINE_READ_LATENCY`), so the
        // CSR block's decode, an engine's read mux and the OR of five
        // blocks' data are three cycles, not one.
        self.eng_raddr_q.d.next = self.csr.eng_raddr.val();
        self.eng_re_q.d.next = self.csr.eng_re.val();
        self.eng_waddr_q.d.next = self.csr.eng_waddr.val();
        self.eng_wdata_q.d.next = self.csr.eng_wdata.val();
        self.eng_wstrb_q.d.next = self.csr.eng_wstrb.val();
        self.eng_we_q.d.next = self.csr.eng_we.val();
        self.kv.eng_raddr.next = self.eng_raddr_q.q.val();
        self.kv.eng_re.next = self.eng_re_q.q.val();
        self.kv.eng_waddr.next = self.eng_waddr_q.q.val();
        self.kv.eng_wdata.next = self.eng_wdata_q.q.val();
        self.kv.eng_wstrb.next = self.eng_wstrb_q.q.val();
        self.kv.eng_we.next = self.eng_we_q.q.val();
        self.grad.eng_raddr.next = self.eng_raddr_q.q.val();
        self.grad.eng_re.next = self.eng_re_q.q.val();
        self.grad.eng_waddr.next = self.eng_waddr_q.q.val();
        self.grad.eng_wdata.next = self.eng_wdata_q.q.val();
        self.grad.eng_wstrb.next = self.eng_wstrb_q.q.val();
        self.grad.eng_we.next = self.eng_we_q.q.val();
        self.memops.eng_raddr.next = self.eng_raddr_q.q.val();
        self.memops.eng_re.next = self.eng_re_q.q.val();
        self.memops.eng_waddr.next = self.eng_waddr_q.q.val();
        self.memops.eng_wdata.next = self.eng_wdata_q.q.val();
        self.memops.eng_wstrb.next = self.eng_wstrb_q.q.val();
        self.memops.eng_we.next = self.eng_we_q.q.val();
        self.avm.eng_raddr.next = self.eng_raddr_q.q.val();
        self.avm.eng_re.next = self.eng_re_q.q.val();
        self.avm.eng_waddr.next = self.eng_waddr_q.q.val();
        self.avm.eng_wdata.next = self.eng_wdata_q.q.val();
        self.avm.eng_wstrb.next = self.eng_wstrb_q.q.val();
        self.avm.eng_we.next = self.eng_we_q.q.val();
        self.net.eng_raddr.next = self.eng_raddr_q.q.val();
        self.net.eng_re.next = self.eng_re_q.q.val();
        self.net.eng_waddr.next = self.eng_waddr_q.q.val();
        self.net.eng_wdata.next = self.eng_wdata_q.q.val();
        self.net.eng_wstrb.next = self.eng_wstrb_q.q.val();
        self.net.eng_we.next = self.eng_we_q.q.val();
        self.eng_rdata_q.d.next = self.kv.eng_rdata.val()
            | self.grad.eng_rdata.val()
            | self.memops.eng_rdata.val()
            | self.avm.eng_rdata.val()
            | self.net.eng_rdata.val();
        self.csr.eng_rdata.next = self.eng_rdata_q.q.val();

        // ---- Ingress: the frame checks, then the deframers.
        self.rx_sl.s_tdata.next = self.s_axis_adap_rx_250mhz_tdata.val();
        self.rx_sl.s_tkeep.next = self.s_axis_adap_rx_250mhz_tkeep.val();
        self.rx_sl.s_tlast.next = self.s_axis_adap_rx_250mhz_tlast.val();
        self.rx_sl.s_tvalid.next = self.s_axis_adap_rx_250mhz_tvalid.val() & self.run.val();
        self.rx_sl.s_tuser_size.next = self.s_axis_adap_rx_250mhz_tuser_size.val();
        self.rx_sl.s_tuser_src.next = self.zero16.val();
        self.rx_sl.s_tuser_dst.next = self.zero16.val();
        self.rx_sl.s_tmeta.next = self.zero128.val();
        self.s_axis_adap_rx_250mhz_tready.next = self.rx_sl.s_tready.val() & self.run.val();
        self.rx_fc.s_tdata.next = self.rx_sl.m_tdata.val();
        self.rx_fc.s_tkeep.next = self.rx_sl.m_tkeep.val();
        self.rx_fc.s_tlast.next = self.rx_sl.m_tlast.val();
        self.rx_fc.s_tvalid.next = self.rx_sl.m_tvalid.val();
        self.rx_fc.s_tuser_size.next = self.rx_sl.m_tuser_size.val();
        self.rx_sl.m_tready.next = self.rx_fc.s_tready.val();
        self.rx_cs.s_tdata.next = self.rx_fc.m_tdata.val();
        self.rx_cs.s_tkeep.next = self.rx_fc.m_tkeep.val();
        self.rx_cs.s_tlast.next = self.rx_fc.m_tlast.val();
        self.rx_cs.s_tvalid.next = self.rx_fc.m_tvalid.val();
        self.rx_cs.s_tuser_size.next = self.rx_fc.m_tuser_size.val();
        self.rx_cs.s_tuser_src.next = self.zero16.val();
        self.rx_cs.s_tuser_dst.next = self.zero16.val();
        self.rx_cs.s_tmeta.next = self.zero128.val();
        self.rx_fc.m_tready.next = self.rx_cs.s_tready.val();
        self.rx_cl.s_tdata.next = self.rx_cs.m_tdata.val();
        self.rx_cl.s_tkeep.next = self.rx_cs.m_tkeep.val();
        self.rx_cl.s_tlast.next = self.rx_cs.m_tlast.val();
        self.rx_cl.s_tvalid.next = self.rx_cs.m_tvalid.val();
        self.rx_cl.s_tuser_size.next = self.rx_cs.m_tuser_size.val();
        self.rx_cs.m_tready.next = self.rx_cl.s_tready.val();
        self.rx_cl.card_mac.next = self.net.card_mac.val();
        self.rx_cl.card_ip.next = self.net.card_ip.val();
        self.rx_cl.enable.next = self.net.enable.val();
        self.rx_df.s_tdata.next = self.rx_cl.m_tdata.val();
        self.rx_df.s_tkeep.next = self.rx_cl.m_tkeep.val();
        self.rx_df.s_tlast.next = self.rx_cl.m_tlast.val();
        self.rx_df.s_tvalid.next = self.rx_cl.m_tvalid.val();
        self.rx_df.s_tuser_size.next = self.rx_cl.m_tuser_size.val();
        self.rx_df.s_tcls.next = self.rx_cl.m_tcls.val();
        self.rx_df.s_tbad.next = self.rx_cl.m_tbad.val();
        self.rx_df.s_teff.next = self.rx_cl.m_teff.val();
        self.rx_cl.m_tready.next = self.rx_df.s_tready.val();
        // A deframed beat leaves through a slice with its destination and
        // return address beside it.
        self.c_rx_dm.hi.next = self.rx_df.m_tdest.val();
        self.c_rx_dm.lo.next = self.rx_df.m_tret.val();
        self.w_rx_dm.narrow.next = self.c_rx_dm.out.val();
        self.rx_ds.s_tdata.next = self.rx_df.m_tdata.val();
        self.rx_ds.s_tkeep.next = self.rx_df.m_tkeep.val();
        self.rx_ds.s_tlast.next = self.rx_df.m_tlast.val();
        self.rx_ds.s_tvalid.next = self.rx_df.m_tvalid.val();
        self.rx_ds.s_tuser_size.next = self.rx_df.m_tuser_size.val();
        self.rx_ds.s_tuser_src.next = self.zero16.val();
        self.rx_ds.s_tuser_dst.next = self.zero16.val();
        self.rx_ds.s_tmeta.next = self.w_rx_dm.wide.val();
        self.rx_df.m_tready.next = self.rx_ds.s_tready.val();
        self.rx_dest.next = self.rx_ds.m_tmeta.val().get_bits::<2>(96);
        self.h2c_sl.s_tdata.next = self.s_axis_qdma_h2c_tdata.val();
        self.h2c_sl.s_tkeep.next = self.s_axis_qdma_h2c_tkeep.val();
        self.h2c_sl.s_tlast.next = self.s_axis_qdma_h2c_tlast.val();
        self.h2c_sl.s_tvalid.next = self.s_axis_qdma_h2c_tvalid.val() & self.run.val();
        self.h2c_sl.s_tuser_size.next = self.s_axis_qdma_h2c_tuser_size.val();
        self.h2c_sl.s_tuser_src.next = self.zero16.val();
        self.h2c_sl.s_tuser_dst.next = self.zero16.val();
        self.h2c_sl.s_tmeta.next = self.zero128.val();
        self.s_axis_qdma_h2c_tready.next = self.h2c_sl.s_tready.val() & self.run.val();
        self.h2c_fc.s_tdata.next = self.h2c_sl.m_tdata.val();
        self.h2c_fc.s_tkeep.next = self.h2c_sl.m_tkeep.val();
        self.h2c_fc.s_tlast.next = self.h2c_sl.m_tlast.val();
        self.h2c_fc.s_tvalid.next = self.h2c_sl.m_tvalid.val();
        self.h2c_fc.s_tuser_size.next = self.h2c_sl.m_tuser_size.val();
        self.h2c_sl.m_tready.next = self.h2c_fc.s_tready.val();
        self.h2c_cs.s_tdata.next = self.h2c_fc.m_tdata.val();
        self.h2c_cs.s_tkeep.next = self.h2c_fc.m_tkeep.val();
        self.h2c_cs.s_tlast.next = self.h2c_fc.m_tlast.val();
        self.h2c_cs.s_tvalid.next = self.h2c_fc.m_tvalid.val();
        self.h2c_cs.s_tuser_size.next = self.h2c_fc.m_tuser_size.val();
        self.h2c_cs.s_tuser_src.next = self.zero16.val();
        self.h2c_cs.s_tuser_dst.next = self.zero16.val();
        self.h2c_cs.s_tmeta.next = self.zero128.val();
        self.h2c_fc.m_tready.next = self.h2c_cs.s_tready.val();
        self.h2c_cl.s_tdata.next = self.h2c_cs.m_tdata.val();
        self.h2c_cl.s_tkeep.next = self.h2c_cs.m_tkeep.val();
        self.h2c_cl.s_tlast.next = self.h2c_cs.m_tlast.val();
        self.h2c_cl.s_tvalid.next = self.h2c_cs.m_tvalid.val();
        self.h2c_cl.s_tuser_size.next = self.h2c_cs.m_tuser_size.val();
        self.h2c_cs.m_tready.next = self.h2c_cl.s_tready.val();
        self.h2c_cl.card_mac.next = self.net.card_mac.val();
        self.h2c_cl.card_ip.next = self.net.card_ip.val();
        self.h2c_cl.enable.next = self.net.enable.val();
        self.h2c_df.s_tdata.next = self.h2c_cl.m_tdata.val();
        self.h2c_df.s_tkeep.next = self.h2c_cl.m_tkeep.val();
        self.h2c_df.s_tlast.next = self.h2c_cl.m_tlast.val();
        self.h2c_df.s_tvalid.next = self.h2c_cl.m_tvalid.val();
        self.h2c_df.s_tuser_size.next = self.h2c_cl.m_tuser_size.val();
        self.h2c_df.s_tcls.next = self.h2c_cl.m_tcls.val();
        self.h2c_df.s_tbad.next = self.h2c_cl.m_tbad.val();
        self.h2c_df.s_teff.next = self.h2c_cl.m_teff.val();
        self.h2c_cl.m_tready.next = self.h2c_df.s_tready.val();
        // A deframed beat leaves through a slice with its destination and
        // return address beside it.
        self.c_h2c_dm.hi.next = self.h2c_df.m_tdest.val();
        self.c_h2c_dm.lo.next = self.h2c_df.m_tret.val();
        self.w_h2c_dm.narrow.next = self.c_h2c_dm.out.val();
        self.h2c_ds.s_tdata.next = self.h2c_df.m_tdata.val();
        self.h2c_ds.s_tkeep.next = self.h2c_df.m_tkeep.val();
        self.h2c_ds.s_tlast.next = self.h2c_df.m_tlast.val();
        self.h2c_ds.s_tvalid.next = self.h2c_df.m_tvalid.val();
        self.h2c_ds.s_tuser_size.next = self.h2c_df.m_tuser_size.val();
        self.h2c_ds.s_tuser_src.next = self.zero16.val();
        self.h2c_ds.s_tuser_dst.next = self.zero16.val();
        self.h2c_ds.s_tmeta.next = self.w_h2c_dm.wide.val();
        self.h2c_df.m_tready.next = self.h2c_ds.s_tready.val();
        self.h2c_dest.next = self.h2c_ds.m_tmeta.val().get_bits::<2>(96);
        // Return addresses: bit 96 says the request came from the host.
        self.c_rx_ret.hi.next = self.bit0.val();
        self.c_rx_ret.lo.next = self.rx_ds.m_tmeta.val().get_bits::<96>(0);
        self.c_h2c_ret.hi.next = self.bit1.val();
        self.c_h2c_ret.lo.next = self.h2c_ds.m_tmeta.val().get_bits::<96>(0);

        // ---- Network receive: passed to the host, or to an engine.
        self.c2h.s0_tdata.next = self.rx_ds.m_tdata.val();
        self.c2h.s0_tkeep.next = self.rx_ds.m_tkeep.val();
        self.c2h.s0_tlast.next = self.rx_ds.m_tlast.val();
        self.c2h.s0_tvalid.next =
            self.rx_ds.m_tvalid.val() & (self.rx_dest.val() == self.zero2.val());
        self.c2h.s0_tuser_size.next = self.rx_ds.m_tuser_size.val();
        self.c2h.s0_tuser_src.next = self.src_pass.val();
        self.c2h.s0_tuser_dst.next = self.zero16.val();
        self.kv_in.s0_tdata.next = self.rx_ds.m_tdata.val();
        self.kv_in.s0_tkeep.next = self.rx_ds.m_tkeep.val();
        self.kv_in.s0_tlast.next = self.rx_ds.m_tlast.val();
        self.kv_in.s0_tvalid.next =
            self.rx_ds.m_tvalid.val() & (self.rx_dest.val() == self.d_kv.val());
        self.kv_in.s0_tuser_size.next = self.rx_ds.m_tuser_size.val();
        self.kv_in.s0_tmeta.next = self.c_rx_ret.out.val();
        self.grad_in.s0_tdata.next = self.rx_ds.m_tdata.val();
        self.grad_in.s0_tkeep.next = self.rx_ds.m_tkeep.val();
        self.grad_in.s0_tlast.next = self.rx_ds.m_tlast.val();
        self.grad_in.s0_tvalid.next =
            self.rx_ds.m_tvalid.val() & (self.rx_dest.val() == self.d_grad.val());
        self.grad_in.s0_tuser_size.next = self.rx_ds.m_tuser_size.val();
        self.grad_in.s0_tmeta.next = self.zero_ret.val();
        self.mo_in.s0_tdata.next = self.rx_ds.m_tdata.val();
        self.mo_in.s0_tkeep.next = self.rx_ds.m_tkeep.val();
        self.mo_in.s0_tlast.next = self.rx_ds.m_tlast.val();
        self.mo_in.s0_tvalid.next =
            self.rx_ds.m_tvalid.val() & (self.rx_dest.val() == self.d_memops.val());
        self.mo_in.s0_tuser_size.next = self.rx_ds.m_tuser_size.val();
        self.mo_in.s0_tmeta.next = self.c_rx_ret.out.val();
        self.rx_ready.next = self.c2h.s0_tready.val();
        if self.rx_dest.val() == self.d_kv.val() {
            self.rx_ready.next = self.kv_in.s0_tready.val();
        }
        if self.rx_dest.val() == self.d_grad.val() {
            self.rx_ready.next = self.grad_in.s0_tready.val();
        }
        if self.rx_dest.val() == self.d_memops.val() {
            self.rx_ready.next = self.mo_in.s0_tready.val();
        }
        self.rx_ds.m_tready.next = self.rx_ready.val();

        // ---- Host to card: passed to the network, or to an engine.
        self.tx.s0_tdata.next = self.h2c_ds.m_tdata.val();
        self.tx.s0_tkeep.next = self.h2c_ds.m_tkeep.val();
        self.tx.s0_tlast.next = self.h2c_ds.m_tlast.val();
        self.tx.s0_tvalid.next =
            self.h2c_ds.m_tvalid.val() & (self.h2c_dest.val() == self.zero2.val());
        self.tx.s0_tuser_size.next = self.h2c_ds.m_tuser_size.val();
        self.tx.s0_tuser_src.next = self.src_pass.val();
        self.tx.s0_tuser_dst.next = self.tx_dst.val();
        self.kv_in.s1_tdata.next = self.h2c_ds.m_tdata.val();
        self.kv_in.s1_tkeep.next = self.h2c_ds.m_tkeep.val();
        self.kv_in.s1_tlast.next = self.h2c_ds.m_tlast.val();
        self.kv_in.s1_tvalid.next =
            self.h2c_ds.m_tvalid.val() & (self.h2c_dest.val() == self.d_kv.val());
        self.kv_in.s1_tuser_size.next = self.h2c_ds.m_tuser_size.val();
        self.kv_in.s1_tmeta.next = self.c_h2c_ret.out.val();
        self.grad_in.s1_tdata.next = self.h2c_ds.m_tdata.val();
        self.grad_in.s1_tkeep.next = self.h2c_ds.m_tkeep.val();
        self.grad_in.s1_tlast.next = self.h2c_ds.m_tlast.val();
        self.grad_in.s1_tvalid.next =
            self.h2c_ds.m_tvalid.val() & (self.h2c_dest.val() == self.d_grad.val());
        self.grad_in.s1_tuser_size.next = self.h2c_ds.m_tuser_size.val();
        self.grad_in.s1_tmeta.next = self.zero_ret.val();
        self.mo_in.s1_tdata.next = self.h2c_ds.m_tdata.val();
        self.mo_in.s1_tkeep.next = self.h2c_ds.m_tkeep.val();
        self.mo_in.s1_tlast.next = self.h2c_ds.m_tlast.val();
        self.mo_in.s1_tvalid.next =
            self.h2c_ds.m_tvalid.val() & (self.h2c_dest.val() == self.d_memops.val());
        self.mo_in.s1_tuser_size.next = self.h2c_ds.m_tuser_size.val();
        self.mo_in.s1_tmeta.next = self.c_h2c_ret.out.val();
        self.h2c_ready.next = self.tx.s0_tready.val();
        if self.h2c_dest.val() == self.d_kv.val() {
            self.h2c_ready.next = self.kv_in.s1_tready.val();
        }
        if self.h2c_dest.val() == self.d_grad.val() {
            self.h2c_ready.next = self.grad_in.s1_tready.val();
        }
        if self.h2c_dest.val() == self.d_memops.val() {
            self.h2c_ready.next = self.mo_in.s1_tready.val();
        }
        self.h2c_ds.m_tready.next = self.h2c_ready.val();

        // ---- Key-value aggregation.
        // A slice between the merge and the engine: the engine's ready
        // reaches no further back than a register.
        self.w_kv_meta.narrow.next = self.kv_in.m_tmeta.val();
        self.kv_sl.s_tdata.next = self.kv_in.m_tdata.val();
        self.kv_sl.s_tkeep.next = self.kv_in.m_tkeep.val();
        self.kv_sl.s_tlast.next = self.kv_in.m_tlast.val();
        self.kv_sl.s_tvalid.next = self.kv_in.m_tvalid.val();
        self.kv_sl.s_tuser_size.next = self.kv_in.m_tuser_size.val();
        self.kv_sl.s_tuser_src.next = self.zero16.val();
        self.kv_sl.s_tuser_dst.next = self.zero16.val();
        self.kv_sl.s_tmeta.next = self.w_kv_meta.wide.val();
        self.kv_in.m_tready.next = self.kv_sl.s_tready.val();
        self.kv.s_tdata.next = self.kv_sl.m_tdata.val();
        self.kv.s_tlast.next = self.kv_sl.m_tlast.val();
        self.kv.s_tvalid.next = self.kv_sl.m_tvalid.val();
        self.kv.s_tuser_size.next = self.kv_sl.m_tuser_size.val();
        self.kv.s_tret.next = self.kv_sl.m_tmeta.val().get_bits::<97>(0);
        self.kv_sl.m_tready.next = self.kv.s_tready.val();
        // Acks: back to the sender, on the port its packet came in on.
        self.c_ack_id.hi.next = self.kv.a_tdata.val().get_bits::<16>(48);
        self.c_ack_id.lo.next = self.kv.a_tjob.val();
        self.c_ack_lo.hi.next = self.c_ack_id.out.val();
        self.c_ack_lo.lo.next = self.ack_head.val();
        // Status and the window base's low byte: payload bytes 12 and 13.
        self.c_ack_st.hi.next = self.kv.a_tdata.val().get_bits::<16>(32);
        self.c_ack_st.lo.next = self.kv.a_tdata.val().get_bits::<32>(0);
        self.w_ack_hi.narrow.next = self.c_ack_st.out.val();
        self.c_ack_app.hi.next = self.w_ack_hi.wide.val();
        self.c_ack_app.lo.next = self.c_ack_lo.out.val();
        self.fr_ack.card_mac.next = self.net.card_mac.val();
        self.fr_ack.card_ip.next = self.net.card_ip.val();
        self.fr_ack.h_valid.next = self.kv.a_tvalid.val();
        self.fr_ack.h_dmac.next = self.kv.a_tret.val().get_bits::<48>(0);
        self.fr_ack.h_dip.next = self.kv.a_tret.val().get_bits::<32>(48);
        self.fr_ack.h_dport.next = self.kv.a_tret.val().get_bits::<16>(80);
        self.fr_ack.h_host.next = self.kv.a_tret.val().get_bit(96);
        self.fr_ack.h_sport.next = self.kv_port.val();
        self.fr_ack.h_app.next = self.c_ack_app.out.val();
        self.fr_ack.h_has_app.next = true;
        self.fr_ack.h_blen.next = self.zero16.val();
        self.fr_ack.h_tag.next = self.src_ack.val();
        self.fr_ack.s_tdata.next = self.zero512.val();
        self.fr_ack.s_tvalid.next = false;
        self.kv.a_tready.next = self.fr_ack.h_ready.val();
        // Records: packed many per frame for the collector.
        self.rec.s_tdata.next = self.kv.m_tdata.val();
        self.rec.s_tkeep.next = self.kv.m_tkeep.val();
        self.rec.s_tuser.next = self.kv.m_tuser.val();
        self.rec.s_tvalid.next = self.kv.m_tvalid.val();
        self.kv.m_tready.next = self.rec.s_tready.val();
        self.rec.max.next = self.net.pack_max.val();
        self.rec.wait_cycles.next = self.net.pack_wait.val();
        self.rec.job.next = self.kv.job_out.val();
        self.rec.seq_we.next = self.net.seq_we.val();
        self.rec.seq_wdata.next = self.net.seq_wdata.val();
        self.net.seq_in.next = self.rec.seq.val();
        self.fr_rec.card_mac.next = self.net.card_mac.val();
        self.fr_rec.card_ip.next = self.net.card_ip.val();
        self.fr_rec.h_valid.next = self.rec.h_valid.val();
        self.fr_rec.h_dmac.next = self.net.kv_mac.val();
        self.fr_rec.h_dip.next = self.net.kv_ip.val();
        self.fr_rec.h_dport.next = self.net.kv_port.val();
        self.fr_rec.h_host.next = true;
        self.fr_rec.h_sport.next = self.kv_port.val();
        self.fr_rec.h_app.next = self.rec.h_app.val();
        self.fr_rec.h_has_app.next = true;
        self.fr_rec.h_blen.next = self.rec.h_blen.val();
        self.fr_rec.h_tag.next = self.src_rec.val();
        self.fr_rec.s_tdata.next = self.rec.m_tdata.val();
        self.fr_rec.s_tvalid.next = self.rec.m_tvalid.val();
        self.rec.m_tready.next = self.fr_rec.s_tready.val();
        self.rec.h_ready.next = self.fr_rec.h_ready.val();

        // ---- Gradient aggregation: results to every worker, the rest to
        // the host fallback.
        self.grad_sl.s_tdata.next = self.grad_in.m_tdata.val();
        self.grad_sl.s_tkeep.next = self.grad_in.m_tkeep.val();
        self.grad_sl.s_tlast.next = self.grad_in.m_tlast.val();
        self.grad_sl.s_tvalid.next = self.grad_in.m_tvalid.val();
        self.grad_sl.s_tuser_size.next = self.grad_in.m_tuser_size.val();
        self.grad_sl.s_tuser_src.next = self.zero16.val();
        self.grad_sl.s_tuser_dst.next = self.zero16.val();
        self.grad_sl.s_tmeta.next = self.zero128.val();
        self.grad_in.m_tready.next = self.grad_sl.s_tready.val();
        self.grad.s_tdata.next = self.grad_sl.m_tdata.val();
        self.grad.s_tlast.next = self.grad_sl.m_tlast.val();
        self.grad.s_tvalid.next = self.grad_sl.m_tvalid.val();
        self.grad.s_tuser_size.next = self.grad_sl.m_tuser_size.val();
        self.grad_sl.m_tready.next = self.grad.s_tready.val();
        self.fan.s_tdata.next = self.grad.m_tdata.val();
        self.fan.s_tuser.next = self.grad.m_tuser.val();
        self.fan.s_tlast.next = self.grad.m_tlast.val();
        self.fan.s_tvalid.next = self.grad.m_tvalid.val();
        self.grad.m_tready.next = self.fan.s_tready.val();
        self.fan.fb_mac.next = self.net.grad_mac.val();
        self.fan.fb_ip.next = self.net.grad_ip.val();
        self.fan.fb_port.next = self.net.grad_port.val();
        self.fan.wt_we.next = self.net.wt_we.val();
        self.fan.wt_addr.next = self.net.wt_addr.val();
        self.fan.wt_data.next = self.net.wt_data.val();
        self.fr_grad.card_mac.next = self.net.card_mac.val();
        self.fr_grad.card_ip.next = self.net.card_ip.val();
        self.fr_grad.h_valid.next = self.fan.h_valid.val();
        self.fr_grad.h_dmac.next = self.fan.h_dmac.val();
        self.fr_grad.h_dip.next = self.fan.h_dip.val();
        self.fr_grad.h_dport.next = self.fan.h_dport.val();
        self.fr_grad.h_host.next = self.fan.h_host.val();
        self.fr_grad.h_sport.next = self.grad_port.val();
        self.fr_grad.h_app.next = self.zero128.val();
        self.fr_grad.h_has_app.next = false;
        self.fr_grad.h_blen.next = self.grad_blen.val();
        self.fr_grad.h_tag.next = self.fan.h_tag.val();
        self.fr_grad.s_tdata.next = self.fan.m_tdata.val();
        self.fr_grad.s_tvalid.next = self.fan.m_tvalid.val();
        self.fan.m_tready.next = self.fr_grad.s_tready.val();
        self.fan.h_ready.next = self.fr_grad.h_ready.val();

        // ---- MemOps: one transaction per frame into the AVM pool.
        self.w_mo_meta.narrow.next = self.mo_in.m_tmeta.val();
        self.mo_sl.s_tdata.next = self.mo_in.m_tdata.val();
        self.mo_sl.s_tkeep.next = self.mo_in.m_tkeep.val();
        self.mo_sl.s_tlast.next = self.mo_in.m_tlast.val();
        self.mo_sl.s_tvalid.next = self.mo_in.m_tvalid.val();
        self.mo_sl.s_tuser_size.next = self.mo_in.m_tuser_size.val();
        self.mo_sl.s_tuser_src.next = self.zero16.val();
        self.mo_sl.s_tuser_dst.next = self.zero16.val();
        self.mo_sl.s_tmeta.next = self.w_mo_meta.wide.val();
        self.mo_in.m_tready.next = self.mo_sl.s_tready.val();
        self.mo_port.s_tdata.next = self.mo_sl.m_tdata.val();
        self.mo_port.s_tlast.next = self.mo_sl.m_tlast.val();
        self.mo_port.s_tvalid.next = self.mo_sl.m_tvalid.val();
        self.mo_port.s_tuser_size.next = self.mo_sl.m_tuser_size.val();
        self.mo_port.s_tret.next = self.mo_sl.m_tmeta.val().get_bits::<97>(0);
        self.mo_sl.m_tready.next = self.mo_port.s_tready.val();
        self.memops.req_valid.next = self.mo_port.mo_req_valid.val();
        self.mo_port.mo_req_ready.next = self.memops.req_ready.val();
        self.memops.req_src.next = self.mo_port.mo_req_src.val();
        self.memops.req_op.next = self.mo_port.mo_req_op.val();
        self.memops.req_al.next = self.mo_port.mo_req_al.val();
        self.memops.req_ah.next = self.mo_port.mo_req_ah.val();
        self.memops.req_len.next = self.mo_port.mo_req_len.val();
        self.memops.req_tag.next = self.mo_port.mo_req_tag.val();
        self.memops.req_dl.next = self.mo_port.mo_req_dl.val();
        self.memops.req_dh.next = self.mo_port.mo_req_dh.val();
        self.mo_port.mo_out_valid.next = self.memops.out_valid.val();
        self.memops.out_ready.next = self.mo_port.mo_out_ready.val();
        self.mo_port.mo_out_dst.next = self.memops.out_dst.val();
        self.mo_port.mo_out_op.next = self.memops.out_op.val();
        self.mo_port.mo_out_al.next = self.memops.out_al.val();
        self.mo_port.mo_out_stag.next = self.memops.out_stag.val();
        self.mo_port.mo_out_dl.next = self.memops.out_dl.val();
        self.memops.cin_valid.next = self.mo_port.mo_cin_valid.val();
        self.mo_port.mo_cin_ready.next = self.memops.cin_ready.val();
        self.memops.cin_stag.next = self.mo_port.mo_cin_stag.val();
        self.memops.cin_status.next = self.mo_port.mo_cin_status.val();
        self.memops.cin_dl.next = self.mo_port.mo_cin_dl.val();
        self.memops.cin_dh.next = self.mo_port.mo_cin_dh.val();
        self.mo_port.mo_cout_valid.next = self.memops.cout_valid.val();
        self.memops.cout_ready.next = self.mo_port.mo_cout_ready.val();
        self.mo_port.mo_cout_dst.next = self.memops.cout_dst.val();
        self.mo_port.mo_cout_tag.next = self.memops.cout_tag.val();
        self.mo_port.mo_cout_status.next = self.memops.cout_status.val();
        self.mo_port.mo_cout_dl.next = self.memops.cout_dl.val();
        self.mo_port.mo_cout_dh.next = self.memops.cout_dh.val();
        self.memops.mir_ready.next = self.mo_port.mo_mir_ready.val();
        self.avm.req_valid.next = self.mo_port.pool_req_valid.val();
        self.avm.req_write.next = self.mo_port.pool_req_write.val();
        self.avm.req_addr.next = self.mo_port.pool_req_addr.val();
        self.avm.req_wdata.next = self.mo_port.pool_req_wdata.val();
        self.mo_port.pool_req_ready.next = self.avm.req_ready.val();
        self.mo_port.pool_resp_valid.next = self.avm.resp_valid.val();
        self.mo_port.pool_resp_fault.next = self.avm.resp_fault.val();
        self.mo_port.pool_resp_data.next = self.avm.resp_data.val();
        self.fr_mo.card_mac.next = self.net.card_mac.val();
        self.fr_mo.card_ip.next = self.net.card_ip.val();
        self.fr_mo.h_valid.next = self.mo_port.h_valid.val();
        self.fr_mo.h_dmac.next = self.mo_port.h_dmac.val();
        self.fr_mo.h_dip.next = self.mo_port.h_dip.val();
        self.fr_mo.h_dport.next = self.mo_port.h_dport.val();
        self.fr_mo.h_host.next = self.mo_port.h_host.val();
        self.fr_mo.h_sport.next = self.memops_port.val();
        self.fr_mo.h_app.next = self.mo_port.h_app.val();
        self.fr_mo.h_has_app.next = true;
        self.fr_mo.h_blen.next = self.zero16.val();
        self.fr_mo.h_tag.next = self.src_memops.val();
        self.fr_mo.s_tdata.next = self.zero512.val();
        self.fr_mo.s_tvalid.next = false;
        self.mo_port.h_ready.next = self.fr_mo.h_ready.val();

        // ---- Egress. Each framer's frames leave through a slice (the
        // frame's tag in tuser_src, whether it goes to the host in the
        // sideband), so no ready chain runs from a merge into a framer and
        // on into its engine.
        self.w_host_ack.narrow.next = self.fr_ack.m_host.val().into();
        self.ack_o.s_tdata.next = self.fr_ack.m_tdata.val();
        self.ack_o.s_tkeep.next = self.fr_ack.m_tkeep.val();
        self.ack_o.s_tlast.next = self.fr_ack.m_tlast.val();
        self.ack_o.s_tvalid.next = self.fr_ack.m_tvalid.val();
        self.ack_o.s_tuser_size.next = self.fr_ack.m_tuser_size.val();
        self.ack_o.s_tuser_src.next = self.fr_ack.m_tag.val();
        self.ack_o.s_tuser_dst.next = self.zero16.val();
        self.ack_o.s_tmeta.next = self.w_host_ack.wide.val();
        self.fr_ack.m_tready.next = self.ack_o.s_tready.val();
        self.w_host_mo.narrow.next = self.fr_mo.m_host.val().into();
        self.mo_o.s_tdata.next = self.fr_mo.m_tdata.val();
        self.mo_o.s_tkeep.next = self.fr_mo.m_tkeep.val();
        self.mo_o.s_tlast.next = self.fr_mo.m_tlast.val();
        self.mo_o.s_tvalid.next = self.fr_mo.m_tvalid.val();
        self.mo_o.s_tuser_size.next = self.fr_mo.m_tuser_size.val();
        self.mo_o.s_tuser_src.next = self.fr_mo.m_tag.val();
        self.mo_o.s_tuser_dst.next = self.zero16.val();
        self.mo_o.s_tmeta.next = self.w_host_mo.wide.val();
        self.fr_mo.m_tready.next = self.mo_o.s_tready.val();
        self.w_host_grad.narrow.next = self.fr_grad.m_host.val().into();
        self.grad_o.s_tdata.next = self.fr_grad.m_tdata.val();
        self.grad_o.s_tkeep.next = self.fr_grad.m_tkeep.val();
        self.grad_o.s_tlast.next = self.fr_grad.m_tlast.val();
        self.grad_o.s_tvalid.next = self.fr_grad.m_tvalid.val();
        self.grad_o.s_tuser_size.next = self.fr_grad.m_tuser_size.val();
        self.grad_o.s_tuser_src.next = self.fr_grad.m_tag.val();
        self.grad_o.s_tuser_dst.next = self.zero16.val();
        self.grad_o.s_tmeta.next = self.w_host_grad.wide.val();
        self.fr_grad.m_tready.next = self.grad_o.s_tready.val();
        self.rec_o.s_tdata.next = self.fr_rec.m_tdata.val();
        self.rec_o.s_tkeep.next = self.fr_rec.m_tkeep.val();
        self.rec_o.s_tlast.next = self.fr_rec.m_tlast.val();
        self.rec_o.s_tvalid.next = self.fr_rec.m_tvalid.val();
        self.rec_o.s_tuser_size.next = self.fr_rec.m_tuser_size.val();
        self.rec_o.s_tuser_src.next = self.fr_rec.m_tag.val();
        self.rec_o.s_tuser_dst.next = self.zero16.val();
        self.rec_o.s_tmeta.next = self.zero128.val();
        self.fr_rec.m_tready.next = self.rec_o.s_tready.val();
        // Host-bound acks and completions share one input of the
        // card-to-host merge; the merge's sideband carries their tuser_src.
        self.w_tag_ack.narrow.next = self.ack_o.m_tuser_src.val();
        self.w_tag_mo.narrow.next = self.mo_o.m_tuser_src.val();
        self.aux.s0_tdata.next = self.ack_o.m_tdata.val();
        self.aux.s0_tkeep.next = self.ack_o.m_tkeep.val();
        self.aux.s0_tlast.next = self.ack_o.m_tlast.val();
        self.aux.s0_tvalid.next = self.ack_o.m_tvalid.val() & self.ack_o.m_tmeta.val().get_bit(0);
        self.aux.s0_tuser_size.next = self.ack_o.m_tuser_size.val();
        self.aux.s0_tmeta.next = self.w_tag_ack.wide.val();
        self.aux.s1_tdata.next = self.mo_o.m_tdata.val();
        self.aux.s1_tkeep.next = self.mo_o.m_tkeep.val();
        self.aux.s1_tlast.next = self.mo_o.m_tlast.val();
        self.aux.s1_tvalid.next = self.mo_o.m_tvalid.val() & self.mo_o.m_tmeta.val().get_bit(0);
        self.aux.s1_tuser_size.next = self.mo_o.m_tuser_size.val();
        self.aux.s1_tmeta.next = self.w_tag_mo.wide.val();
        self.c2h.s1_tdata.next = self.rec_o.m_tdata.val();
        self.c2h.s1_tkeep.next = self.rec_o.m_tkeep.val();
        self.c2h.s1_tlast.next = self.rec_o.m_tlast.val();
        self.c2h.s1_tvalid.next = self.rec_o.m_tvalid.val();
        self.c2h.s1_tuser_size.next = self.rec_o.m_tuser_size.val();
        self.c2h.s1_tuser_src.next = self.rec_o.m_tuser_src.val();
        self.c2h.s1_tuser_dst.next = self.zero16.val();
        self.rec_o.m_tready.next = self.c2h.s1_tready.val();
        // A slice between the two merges, so no ready chain runs from the
        // card-to-host merge through the ack/completion merge into a
        // framer's slice in one cycle.
        self.aux_o.s_tdata.next = self.aux.m_tdata.val();
        self.aux_o.s_tkeep.next = self.aux.m_tkeep.val();
        self.aux_o.s_tlast.next = self.aux.m_tlast.val();
        self.aux_o.s_tvalid.next = self.aux.m_tvalid.val();
        self.aux_o.s_tuser_size.next = self.aux.m_tuser_size.val();
        self.aux_o.s_tuser_src.next = self.aux.m_tmeta.val().get_bits::<16>(0);
        self.aux_o.s_tuser_dst.next = self.zero16.val();
        self.aux_o.s_tmeta.next = self.zero128.val();
        self.aux.m_tready.next = self.aux_o.s_tready.val();
        self.c2h.s2_tdata.next = self.aux_o.m_tdata.val();
        self.c2h.s2_tkeep.next = self.aux_o.m_tkeep.val();
        self.c2h.s2_tlast.next = self.aux_o.m_tlast.val();
        self.c2h.s2_tvalid.next = self.aux_o.m_tvalid.val();
        self.c2h.s2_tuser_size.next = self.aux_o.m_tuser_size.val();
        self.c2h.s2_tuser_src.next = self.aux_o.m_tuser_src.val();
        self.c2h.s2_tuser_dst.next = self.zero16.val();
        self.aux_o.m_tready.next = self.c2h.s2_tready.val();
        self.c2h.s3_tdata.next = self.grad_o.m_tdata.val();
        self.c2h.s3_tkeep.next = self.grad_o.m_tkeep.val();
        self.c2h.s3_tlast.next = self.grad_o.m_tlast.val();
        self.c2h.s3_tvalid.next = self.grad_o.m_tvalid.val() & self.grad_o.m_tmeta.val().get_bit(0);
        self.c2h.s3_tuser_size.next = self.grad_o.m_tuser_size.val();
        self.c2h.s3_tuser_src.next = self.grad_o.m_tuser_src.val();
        self.c2h.s3_tuser_dst.next = self.zero16.val();
        self.tx.s1_tdata.next = self.ack_o.m_tdata.val();
        self.tx.s1_tkeep.next = self.ack_o.m_tkeep.val();
        self.tx.s1_tlast.next = self.ack_o.m_tlast.val();
        self.tx.s1_tvalid.next = self.ack_o.m_tvalid.val() & !self.ack_o.m_tmeta.val().get_bit(0);
        self.tx.s1_tuser_size.next = self.ack_o.m_tuser_size.val();
        self.tx.s1_tuser_src.next = self.ack_o.m_tuser_src.val();
        self.tx.s1_tuser_dst.next = self.tx_dst.val();
        self.tx.s2_tdata.next = self.grad_o.m_tdata.val();
        self.tx.s2_tkeep.next = self.grad_o.m_tkeep.val();
        self.tx.s2_tlast.next = self.grad_o.m_tlast.val();
        self.tx.s2_tvalid.next = self.grad_o.m_tvalid.val() & !self.grad_o.m_tmeta.val().get_bit(0);
        self.tx.s2_tuser_size.next = self.grad_o.m_tuser_size.val();
        self.tx.s2_tuser_src.next = self.grad_o.m_tuser_src.val();
        self.tx.s2_tuser_dst.next = self.tx_dst.val();
        self.tx.s3_tdata.next = self.mo_o.m_tdata.val();
        self.tx.s3_tkeep.next = self.mo_o.m_tkeep.val();
        self.tx.s3_tlast.next = self.mo_o.m_tlast.val();
        self.tx.s3_tvalid.next = self.mo_o.m_tvalid.val() & !self.mo_o.m_tmeta.val().get_bit(0);
        self.tx.s3_tuser_size.next = self.mo_o.m_tuser_size.val();
        self.tx.s3_tuser_src.next = self.mo_o.m_tuser_src.val();
        self.tx.s3_tuser_dst.next = self.tx_dst.val();
        // A framer waits for the port its frame goes to.
        self.ack_o.m_tready.next = self.tx.s1_tready.val();
        if self.ack_o.m_tmeta.val().get_bit(0) {
            self.ack_o.m_tready.next = self.aux.s0_tready.val();
        }
        self.mo_o.m_tready.next = self.tx.s3_tready.val();
        if self.mo_o.m_tmeta.val().get_bit(0) {
            self.mo_o.m_tready.next = self.aux.s1_tready.val();
        }
        self.grad_o.m_tready.next = self.tx.s2_tready.val();
        if self.grad_o.m_tmeta.val().get_bit(0) {
            self.grad_o.m_tready.next = self.c2h.s3_tready.val();
        }
        self.c2h_sl.s_tdata.next = self.c2h.m_tdata.val();
        self.c2h_sl.s_tkeep.next = self.c2h.m_tkeep.val();
        self.c2h_sl.s_tlast.next = self.c2h.m_tlast.val();
        self.c2h_sl.s_tvalid.next = self.c2h.m_tvalid.val();
        self.c2h_sl.s_tuser_size.next = self.c2h.m_tuser_size.val();
        self.c2h_sl.s_tuser_src.next = self.c2h.m_tuser_src.val();
        self.c2h_sl.s_tuser_dst.next = self.c2h.m_tuser_dst.val();
        self.c2h_sl.s_tmeta.next = self.zero128.val();
        self.c2h.m_tready.next = self.c2h_sl.s_tready.val();
        self.m_axis_qdma_c2h_tdata.next = self.c2h_sl.m_tdata.val();
        self.m_axis_qdma_c2h_tkeep.next = self.c2h_sl.m_tkeep.val();
        self.m_axis_qdma_c2h_tlast.next = self.c2h_sl.m_tlast.val();
        self.m_axis_qdma_c2h_tvalid.next = self.c2h_sl.m_tvalid.val() & self.run.val();
        self.m_axis_qdma_c2h_tuser_size.next = self.c2h_sl.m_tuser_size.val();
        self.m_axis_qdma_c2h_tuser_src.next = self.c2h_sl.m_tuser_src.val();
        self.m_axis_qdma_c2h_tuser_dst.next = self.c2h_sl.m_tuser_dst.val();
        self.c2h_sl.m_tready.next = self.m_axis_qdma_c2h_tready.val() & self.run.val();
        self.tx_sl.s_tdata.next = self.tx.m_tdata.val();
        self.tx_sl.s_tkeep.next = self.tx.m_tkeep.val();
        self.tx_sl.s_tlast.next = self.tx.m_tlast.val();
        self.tx_sl.s_tvalid.next = self.tx.m_tvalid.val();
        self.tx_sl.s_tuser_size.next = self.tx.m_tuser_size.val();
        self.tx_sl.s_tuser_src.next = self.tx.m_tuser_src.val();
        self.tx_sl.s_tuser_dst.next = self.tx.m_tuser_dst.val();
        self.tx_sl.s_tmeta.next = self.zero128.val();
        self.tx.m_tready.next = self.tx_sl.s_tready.val();
        self.m_axis_adap_tx_250mhz_tdata.next = self.tx_sl.m_tdata.val();
        self.m_axis_adap_tx_250mhz_tkeep.next = self.tx_sl.m_tkeep.val();
        self.m_axis_adap_tx_250mhz_tlast.next = self.tx_sl.m_tlast.val();
        self.m_axis_adap_tx_250mhz_tvalid.next = self.tx_sl.m_tvalid.val() & self.run.val();
        self.m_axis_adap_tx_250mhz_tuser_size.next = self.tx_sl.m_tuser_size.val();
        self.m_axis_adap_tx_250mhz_tuser_src.next = self.tx_sl.m_tuser_src.val();
        self.m_axis_adap_tx_250mhz_tuser_dst.next = self.tx_sl.m_tuser_dst.val();
        self.tx_sl.m_tready.next = self.m_axis_adap_tx_250mhz_tready.val() & self.run.val();

        // ---- Frame counters (`net::COUNTER_NAMES` order). A frame out is
        // counted on the cycle after its last beat left the port: the
        // port's handshake is registered first, so the counters' inputs
        // depend on no port combinationally.
        self.ev_c2h.d.next = self.m_axis_qdma_c2h_tvalid.val()
            & self.c2h_sl.m_tready.val()
            & self.c2h_sl.m_tlast.val();
        self.ev_tx.d.next = self.m_axis_adap_tx_250mhz_tvalid.val()
            & self.tx_sl.m_tready.val()
            & self.tx_sl.m_tlast.val();
        self.ev.lane[0].next = self.rx_fc.ev_frame.val().into();
        self.ev.lane[1].next = self.rx_fc.ev_bad.val().into();
        self.ev.lane[2].next = self.rx_df.ev_engine.val().into();
        self.ev.lane[3].next = self.rx_df.ev_pass.val().into();
        self.ev.lane[4].next = self.rx_df.ev_malformed.val().into();
        self.ev.lane[5].next = self.h2c_fc.ev_frame.val().into();
        self.ev.lane[6].next = self.h2c_fc.ev_bad.val().into();
        self.ev.lane[7].next = self.h2c_df.ev_engine.val().into();
        self.ev.lane[8].next = self.h2c_df.ev_pass.val().into();
        self.ev.lane[9].next = self.h2c_df.ev_malformed.val().into();
        self.ev.lane[10].next = self.ev_c2h.q.val().into();
        self.ev.lane[11].next = self.ev_tx.q.val().into();
        self.ev.lane[12].next = (self.fr_ack.h_valid.val() & self.fr_ack.h_ready.val()).into();
        self.ev.lane[13].next = self.rec.ev_frame.val().into();
        self.ev.lane[14].next = self.fan.ev_copy.val().into();
        self.ev.lane[15].next = self.fan.ev_skip.val().into();
        self.ev.lane[16].next = (self.fr_mo.h_valid.val() & self.fr_mo.h_ready.val()).into();
        // The events are registered before the counters count them: a
        // counter's 64-bit increment then starts from a flip-flop, not at
        // the end of a deframer's or framer's handshake logic.
        self.ev_q.d.next = self.ev.out.val();
        self.net.inc.next = self.ev_q.q.val();
    }
}
