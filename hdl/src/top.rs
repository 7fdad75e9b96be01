//! `weft_top`: the card in the AMD OpenNIC shell's 250 MHz box.
//!
//! Its ports are exactly the box's (`plugin/p2p/p2p_250mhz.sv` with one
//! interface and one QDMA; `weft_250mhz`, the wrapper `weft bitstream build`
//! writes, instantiates it by port name). Inside:
//! - **Registers on `axil_aclk`, engines on `axis_aclk`.** AXI4-Lite slave 0
//!   crosses into the engine domain through [`AxilCdc`] (one async FIFO per
//!   channel) to the CSR block, whose engine register port reaches every
//!   engine (each decodes its own block of the map; their read data are
//!   OR-ed, each driving 0 outside its block). Slave 1 (the p2p plugin's
//!   second switch-control port) answers every access with DECERR.
//! - **Steering.** Network receive and host-to-card frames each pass a
//!   [`Deframe`]: UDP to port 0x5746 goes to the key-value engine and to
//!   0x5747 to the gradient engine, without their Ethernet/IPv4/UDP
//!   headers; other receive frames go to the host unchanged, other
//!   host-to-card frames to the network unchanged (`tuser_dst` 0x0040, CMAC
//!   port 0). Each engine takes packets from both, a whole packet at a time
//!   ([`PktMux4`]).
//! - **Card to host** merges, packet by packet: network frames
//!   (`tuser_src` 0), key-value records (`tuser_src` = 0x1000 | kind << 8 |
//!   lanes, one 64-byte beat each), key-value acks (0x2000, 8 bytes),
//!   gradient RESULT/EVICT/FALLBACK packets (0x3000 | kind << 8, 320 bytes)
//!   and MemOps completions (0x4000, 16 bytes).
//! - **MemOps and AVM.** UDP frames to port 0x5748 (from the network or the
//!   host) carry one MemOps transaction each (first payload beat: byte 0
//!   requester, 1 opcode, 2 length, 3 tag, 8..16 address, 16..24 data).
//!   [`MemopsPort`] takes them one transaction at a time end to end into
//!   MemOps, whose four destinations are the AVM pool's four consumers
//!   (32-bit word accesses, the consumer's virtual word = address bits 10:2;
//!   atomics, which the pool lacks, complete as errors). Completions go to
//!   the host as 16-byte frames (`tuser_src` 0x4000: byte 0 requester, 1
//!   tag, 2 status, 8..16 data). Both blocks' registers are on the chain.
//! - **Reset handshake.** `mod_rstn` is synchronised into the engine domain
//!   and back; `mod_rst_done` follows the round trip. While it is low every
//!   stream port is held (no VALID, no READY). The engines' state is not
//!   cleared by it (they start from their configured state, and the
//!   key-value and gradient engines have reset commands of their own).
//!
//! The CSR block's cycle counter counts `axis_aclk` cycles here.

use crate::avm::Avm;
use crate::cdc::{AxilCdc, SyncBit};
use crate::common::{konst, Cat, Pair, Widen};
use crate::csr::Csr;
use crate::grad_agg::GradAgg;
use crate::kv_agg::KvAgg;
use crate::memops::Memops;
use crate::memops_port::MemopsPort;
use crate::steer::{Deframe, PktMux4};
use rust_hdl::prelude::*;
use weft_regs::{BuildInfo, MAP};

/// The key-value engine in the top: 8 lanes (512 bits), 512 slots a lane.
pub type TopKv = KvAgg<8, 512, 9>;
/// The gradient engine in the top: 16 lanes, 256 slots, 64-value chunks.
pub type TopGrad = GradAgg<16, 512, 8, 4, 10>;
/// The MemOps port in the top: 8 stages.
pub type TopMemops = Memops<8>;

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
    kv: TopKv,
    grad: TopGrad,
    memops: TopMemops,
    avm: Avm,
    rx_df: Deframe,
    h2c_df: Deframe,
    kv_in: PktMux4,
    grad_in: PktMux4,
    c2h: PktMux4,
    rst_in: SyncBit,
    rst_back: SyncBit,
    n_bvalid: DFF<Bit>,
    n_rvalid: DFF<Bit>,
    w_lanes: Widen<16, 8>,
    w_kvkind: Widen<16, 2>,
    w_gkind: Widen<16, 2>,
    w_ack: Widen<512, 64>,
    run: Signal<Local, Bit>,
    rx_ready: Signal<Local, Bit>,
    h2c_ready: Signal<Local, Bit>,
    n_aw: Signal<Local, Bit>,
    ones64: Constant<Bits<64>>,
    keep8: Constant<Bits<64>>,
    zero2: Constant<Bits<2>>,
    zero16: Constant<Bits<16>>,
    zero32: Constant<Bits<32>>,
    zero64: Constant<Bits<64>>,
    zero48: Constant<Bits<48>>,
    ones4: Constant<Bits<4>>,
    d_kv: Constant<Bits<2>>,
    d_grad: Constant<Bits<2>>,
    src_rec: Constant<Bits<16>>,
    src_ack: Constant<Bits<16>>,
    src_grad: Constant<Bits<16>>,
    size_beat: Constant<Bits<16>>,
    size_ack: Constant<Bits<16>>,
    size_grad: Constant<Bits<16>>,
    tx_dst: Constant<Bits<16>>,
    decerr: Constant<Bits<2>>,
    zero512: Constant<Bits<512>>,
    p_awready: Pair,
    p_wready: Pair,
    p_bvalid: Pair,
    p_arready: Pair,
    p_rvalid: Pair,
    c_bresp: Cat<4, 2, 2>,
    c_rresp: Cat<4, 2, 2>,
    c_rdata: Cat<64, 32, 32>,
    // MemOps transactions from frames, to the AVM pool, completions back.
    mo_in: PktMux4,
    aux: PktMux4,
    mo_port: MemopsPort,
    ret0: Constant<Bits<97>>,
    w_c512: Widen<512, 128>,
    d_memops: Constant<Bits<2>>,
    keep16: Constant<Bits<64>>,
    size_cpl: Constant<Bits<16>>,
    src_cpl: Constant<Bits<16>>,
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
            kv: TopKv::new(),
            grad: TopGrad::new(),
            memops: TopMemops::new(),
            avm: Avm::new(),
            rx_df: Deframe::new(),
            h2c_df: Deframe::new(),
            kv_in: PktMux4::new(),
            grad_in: PktMux4::new(),
            c2h: PktMux4::new(),
            rst_in: Default::default(),
            rst_back: Default::default(),
            n_bvalid: Default::default(),
            n_rvalid: Default::default(),
            w_lanes: Default::default(),
            w_kvkind: Default::default(),
            w_gkind: Default::default(),
            w_ack: Default::default(),
            run: Default::default(),
            rx_ready: Default::default(),
            h2c_ready: Default::default(),
            n_aw: Default::default(),
            ones64: konst(u64::MAX),
            keep8: konst(0xff),
            zero2: konst(0),
            zero16: konst(0),
            zero32: konst(0),
            zero64: konst(0),
            zero48: konst(0),
            ones4: konst(0xf),
            d_kv: konst(1),
            d_grad: konst(2),
            src_rec: konst(0x1000),
            src_ack: konst(0x2000),
            src_grad: konst(0x3000),
            size_beat: konst(64),
            size_ack: konst(8),
            size_grad: konst(320),
            tx_dst: konst(0x0040),
            decerr: konst(0b11),
            zero512: konst(0),
            p_awready: Default::default(),
            p_wready: Default::default(),
            p_bvalid: Default::default(),
            p_arready: Default::default(),
            p_rvalid: Default::default(),
            c_bresp: Default::default(),
            c_rresp: Default::default(),
            c_rdata: Default::default(),
            mo_in: PktMux4::new(),
            aux: PktMux4::new(),
            mo_port: MemopsPort::new(),
            ret0: Constant::new(Bits::default()),
            w_c512: Default::default(),
            d_memops: konst(3),
            keep16: konst(0xffff),
            size_cpl: konst(16),
            src_cpl: konst(0x4000),
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
        self.kv.clock.next = self.axis_aclk.val();
        self.grad.clock.next = self.axis_aclk.val();
        self.memops.clock.next = self.axis_aclk.val();
        self.avm.clock.next = self.axis_aclk.val();
        self.rx_df.clock.next = self.axis_aclk.val();
        self.h2c_df.clock.next = self.axis_aclk.val();
        self.kv_in.clock.next = self.axis_aclk.val();
        self.grad_in.clock.next = self.axis_aclk.val();
        self.c2h.clock.next = self.axis_aclk.val();
        self.rst_in.clock.next = self.axis_aclk.val();
        self.rst_back.clock.next = self.axil_aclk.val();
        self.n_bvalid.clock.next = self.axil_aclk.val();
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

        // ---- The engine register port: every engine decodes its own block.
        self.kv.eng_raddr.next = self.csr.eng_raddr.val();
        self.kv.eng_re.next = self.csr.eng_re.val();
        self.kv.eng_waddr.next = self.csr.eng_waddr.val();
        self.kv.eng_wdata.next = self.csr.eng_wdata.val();
        self.kv.eng_wstrb.next = self.csr.eng_wstrb.val();
        self.kv.eng_we.next = self.csr.eng_we.val();
        self.grad.eng_raddr.next = self.csr.eng_raddr.val();
        self.grad.eng_re.next = self.csr.eng_re.val();
        self.grad.eng_waddr.next = self.csr.eng_waddr.val();
        self.grad.eng_wdata.next = self.csr.eng_wdata.val();
        self.grad.eng_wstrb.next = self.csr.eng_wstrb.val();
        self.grad.eng_we.next = self.csr.eng_we.val();
        self.memops.eng_raddr.next = self.csr.eng_raddr.val();
        self.memops.eng_re.next = self.csr.eng_re.val();
        self.memops.eng_waddr.next = self.csr.eng_waddr.val();
        self.memops.eng_wdata.next = self.csr.eng_wdata.val();
        self.memops.eng_wstrb.next = self.csr.eng_wstrb.val();
        self.memops.eng_we.next = self.csr.eng_we.val();
        self.avm.eng_raddr.next = self.csr.eng_raddr.val();
        self.avm.eng_re.next = self.csr.eng_re.val();
        self.avm.eng_waddr.next = self.csr.eng_waddr.val();
        self.avm.eng_wdata.next = self.csr.eng_wdata.val();
        self.avm.eng_wstrb.next = self.csr.eng_wstrb.val();
        self.avm.eng_we.next = self.csr.eng_we.val();
        self.csr.eng_rdata.next = self.kv.eng_rdata.val()
            | self.grad.eng_rdata.val()
            | self.memops.eng_rdata.val()
            | self.avm.eng_rdata.val();

        // ---- MemOps: one transaction per frame (UDP port 0x5748) from the
        // network or the host, through the MemOps port to memops and the AVM
        // pool; completions go to the host as 16-byte frames (no return
        // address yet: the port's reply metadata other than the payload is
        // not used).
        self.mo_in.clock.next = self.axis_aclk.val();
        self.aux.clock.next = self.axis_aclk.val();
        self.mo_port.clock.next = self.axis_aclk.val();
        self.mo_port.s_tdata.next = self.mo_in.m_tdata.val();
        self.mo_port.s_tlast.next = self.mo_in.m_tlast.val();
        self.mo_port.s_tvalid.next = self.mo_in.m_tvalid.val();
        self.mo_port.s_tuser_size.next = self.mo_in.m_tuser_size.val();
        self.mo_port.s_tret.next = self.ret0.val();
        self.mo_in.m_tready.next = self.mo_port.s_tready.val();
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
        // Completions to the host: the 16-byte payload alone.
        self.w_c512.narrow.next = self.mo_port.h_app.val();
        self.aux.s1_tdata.next = self.w_c512.wide.val();
        self.aux.s1_tkeep.next = self.keep16.val();
        self.aux.s1_tlast.next = true;
        self.aux.s1_tvalid.next = self.mo_port.h_valid.val();
        self.aux.s1_tuser_size.next = self.size_cpl.val();
        self.aux.s1_tuser_src.next = self.src_cpl.val();
        self.aux.s1_tuser_dst.next = self.zero16.val();
        self.mo_port.h_ready.next = self.aux.s1_tready.val();
        self.aux.s2_tdata.next = self.zero512.val();
        self.aux.s2_tkeep.next = self.zero64.val();
        self.aux.s2_tlast.next = false;
        self.aux.s2_tvalid.next = false;
        self.aux.s2_tuser_size.next = self.zero16.val();
        self.aux.s2_tuser_src.next = self.zero16.val();
        self.aux.s2_tuser_dst.next = self.zero16.val();
        self.aux.s3_tdata.next = self.zero512.val();
        self.aux.s3_tkeep.next = self.zero64.val();
        self.aux.s3_tlast.next = false;
        self.aux.s3_tvalid.next = false;
        self.aux.s3_tuser_size.next = self.zero16.val();
        self.aux.s3_tuser_src.next = self.zero16.val();
        self.aux.s3_tuser_dst.next = self.zero16.val();
        self.mo_in.s2_tdata.next = self.zero512.val();
        self.mo_in.s2_tkeep.next = self.zero64.val();
        self.mo_in.s2_tlast.next = false;
        self.mo_in.s2_tvalid.next = false;
        self.mo_in.s2_tuser_size.next = self.zero16.val();
        self.mo_in.s2_tuser_src.next = self.zero16.val();
        self.mo_in.s2_tuser_dst.next = self.zero16.val();
        self.mo_in.s3_tdata.next = self.zero512.val();
        self.mo_in.s3_tkeep.next = self.zero64.val();
        self.mo_in.s3_tlast.next = false;
        self.mo_in.s3_tvalid.next = false;
        self.mo_in.s3_tuser_size.next = self.zero16.val();
        self.mo_in.s3_tuser_src.next = self.zero16.val();
        self.mo_in.s3_tuser_dst.next = self.zero16.val();

        // ---- Network receive: to the host, or to an engine without headers.
        self.rx_df.s_tdata.next = self.s_axis_adap_rx_250mhz_tdata.val();
        self.rx_df.s_tkeep.next = self.s_axis_adap_rx_250mhz_tkeep.val();
        self.rx_df.s_tlast.next = self.s_axis_adap_rx_250mhz_tlast.val();
        self.rx_df.s_tvalid.next = self.s_axis_adap_rx_250mhz_tvalid.val() & self.run.val();
        self.rx_df.s_tuser_size.next = self.s_axis_adap_rx_250mhz_tuser_size.val();
        self.rx_df.card_mac.next = self.zero48.val();
        self.rx_df.card_ip.next = self.zero32.val();
        self.rx_df.enable.next = false;
        self.s_axis_adap_rx_250mhz_tready.next = self.rx_df.s_tready.val() & self.run.val();
        self.c2h.s0_tdata.next = self.rx_df.m_tdata.val();
        self.c2h.s0_tkeep.next = self.rx_df.m_tkeep.val();
        self.c2h.s0_tlast.next = self.rx_df.m_tlast.val();
        self.c2h.s0_tvalid.next =
            self.rx_df.m_tvalid.val() & (self.rx_df.m_tdest.val() == self.zero2.val());
        self.c2h.s0_tuser_size.next = self.rx_df.m_tuser_size.val();
        self.c2h.s0_tuser_src.next = self.zero16.val();
        self.c2h.s0_tuser_dst.next = self.zero16.val();
        self.kv_in.s0_tdata.next = self.rx_df.m_tdata.val();
        self.kv_in.s0_tkeep.next = self.rx_df.m_tkeep.val();
        self.kv_in.s0_tlast.next = self.rx_df.m_tlast.val();
        self.kv_in.s0_tvalid.next =
            self.rx_df.m_tvalid.val() & (self.rx_df.m_tdest.val() == self.d_kv.val());
        self.kv_in.s0_tuser_size.next = self.rx_df.m_tuser_size.val();
        self.kv_in.s0_tuser_src.next = self.zero16.val();
        self.kv_in.s0_tuser_dst.next = self.zero16.val();
        self.grad_in.s0_tdata.next = self.rx_df.m_tdata.val();
        self.grad_in.s0_tkeep.next = self.rx_df.m_tkeep.val();
        self.grad_in.s0_tlast.next = self.rx_df.m_tlast.val();
        self.grad_in.s0_tvalid.next =
            self.rx_df.m_tvalid.val() & (self.rx_df.m_tdest.val() == self.d_grad.val());
        self.grad_in.s0_tuser_size.next = self.rx_df.m_tuser_size.val();
        self.grad_in.s0_tuser_src.next = self.zero16.val();
        self.grad_in.s0_tuser_dst.next = self.zero16.val();
        self.mo_in.s0_tdata.next = self.rx_df.m_tdata.val();
        self.mo_in.s0_tkeep.next = self.rx_df.m_tkeep.val();
        self.mo_in.s0_tlast.next = self.rx_df.m_tlast.val();
        self.mo_in.s0_tvalid.next =
            self.rx_df.m_tvalid.val() & (self.rx_df.m_tdest.val() == self.d_memops.val());
        self.mo_in.s0_tuser_size.next = self.rx_df.m_tuser_size.val();
        self.mo_in.s0_tuser_src.next = self.zero16.val();
        self.mo_in.s0_tuser_dst.next = self.zero16.val();
        self.rx_ready.next = self.grad_in.s0_tready.val();
        if self.rx_df.m_tdest.val() == self.d_memops.val() {
            self.rx_ready.next = self.mo_in.s0_tready.val();
        }
        if self.rx_df.m_tdest.val() == self.zero2.val() {
            self.rx_ready.next = self.c2h.s0_tready.val();
        }
        if self.rx_df.m_tdest.val() == self.d_kv.val() {
            self.rx_ready.next = self.kv_in.s0_tready.val();
        }
        self.rx_df.m_tready.next = self.rx_ready.val();

        // ---- Host to card: to the network, or to an engine without headers.
        self.h2c_df.s_tdata.next = self.s_axis_qdma_h2c_tdata.val();
        self.h2c_df.s_tkeep.next = self.s_axis_qdma_h2c_tkeep.val();
        self.h2c_df.s_tlast.next = self.s_axis_qdma_h2c_tlast.val();
        self.h2c_df.s_tvalid.next = self.s_axis_qdma_h2c_tvalid.val() & self.run.val();
        self.h2c_df.s_tuser_size.next = self.s_axis_qdma_h2c_tuser_size.val();
        self.h2c_df.card_mac.next = self.zero48.val();
        self.h2c_df.card_ip.next = self.zero32.val();
        self.h2c_df.enable.next = false;
        self.s_axis_qdma_h2c_tready.next = self.h2c_df.s_tready.val() & self.run.val();
        self.m_axis_adap_tx_250mhz_tdata.next = self.h2c_df.m_tdata.val();
        self.m_axis_adap_tx_250mhz_tkeep.next = self.h2c_df.m_tkeep.val();
        self.m_axis_adap_tx_250mhz_tlast.next = self.h2c_df.m_tlast.val();
        self.m_axis_adap_tx_250mhz_tvalid.next = self.h2c_df.m_tvalid.val()
            & (self.h2c_df.m_tdest.val() == self.zero2.val())
            & self.run.val();
        self.m_axis_adap_tx_250mhz_tuser_size.next = self.h2c_df.m_tuser_size.val();
        self.m_axis_adap_tx_250mhz_tuser_src.next = self.zero16.val();
        self.m_axis_adap_tx_250mhz_tuser_dst.next = self.tx_dst.val();
        self.kv_in.s1_tdata.next = self.h2c_df.m_tdata.val();
        self.kv_in.s1_tkeep.next = self.h2c_df.m_tkeep.val();
        self.kv_in.s1_tlast.next = self.h2c_df.m_tlast.val();
        self.kv_in.s1_tvalid.next =
            self.h2c_df.m_tvalid.val() & (self.h2c_df.m_tdest.val() == self.d_kv.val());
        self.kv_in.s1_tuser_size.next = self.h2c_df.m_tuser_size.val();
        self.kv_in.s1_tuser_src.next = self.zero16.val();
        self.kv_in.s1_tuser_dst.next = self.zero16.val();
        self.grad_in.s1_tdata.next = self.h2c_df.m_tdata.val();
        self.grad_in.s1_tkeep.next = self.h2c_df.m_tkeep.val();
        self.grad_in.s1_tlast.next = self.h2c_df.m_tlast.val();
        self.grad_in.s1_tvalid.next =
            self.h2c_df.m_tvalid.val() & (self.h2c_df.m_tdest.val() == self.d_grad.val());
        self.grad_in.s1_tuser_size.next = self.h2c_df.m_tuser_size.val();
        self.grad_in.s1_tuser_src.next = self.zero16.val();
        self.grad_in.s1_tuser_dst.next = self.zero16.val();
        self.mo_in.s1_tdata.next = self.h2c_df.m_tdata.val();
        self.mo_in.s1_tkeep.next = self.h2c_df.m_tkeep.val();
        self.mo_in.s1_tlast.next = self.h2c_df.m_tlast.val();
        self.mo_in.s1_tvalid.next =
            self.h2c_df.m_tvalid.val() & (self.h2c_df.m_tdest.val() == self.d_memops.val());
        self.mo_in.s1_tuser_size.next = self.h2c_df.m_tuser_size.val();
        self.mo_in.s1_tuser_src.next = self.zero16.val();
        self.mo_in.s1_tuser_dst.next = self.zero16.val();
        self.h2c_ready.next = self.grad_in.s1_tready.val();
        if self.h2c_df.m_tdest.val() == self.d_memops.val() {
            self.h2c_ready.next = self.mo_in.s1_tready.val();
        }
        if self.h2c_df.m_tdest.val() == self.zero2.val() {
            self.h2c_ready.next = self.m_axis_adap_tx_250mhz_tready.val() & self.run.val();
        }
        if self.h2c_df.m_tdest.val() == self.d_kv.val() {
            self.h2c_ready.next = self.kv_in.s1_tready.val();
        }
        self.h2c_df.m_tready.next = self.h2c_ready.val();

        // The engines' input merges have two sources each.
        self.kv_in.s2_tdata.next = self.zero512.val();
        self.kv_in.s2_tkeep.next = self.zero64.val();
        self.kv_in.s2_tlast.next = false;
        self.kv_in.s2_tvalid.next = false;
        self.kv_in.s2_tuser_size.next = self.zero16.val();
        self.kv_in.s2_tuser_src.next = self.zero16.val();
        self.kv_in.s2_tuser_dst.next = self.zero16.val();
        self.kv_in.s3_tdata.next = self.zero512.val();
        self.kv_in.s3_tkeep.next = self.zero64.val();
        self.kv_in.s3_tlast.next = false;
        self.kv_in.s3_tvalid.next = false;
        self.kv_in.s3_tuser_size.next = self.zero16.val();
        self.kv_in.s3_tuser_src.next = self.zero16.val();
        self.kv_in.s3_tuser_dst.next = self.zero16.val();
        self.grad_in.s2_tdata.next = self.zero512.val();
        self.grad_in.s2_tkeep.next = self.zero64.val();
        self.grad_in.s2_tlast.next = false;
        self.grad_in.s2_tvalid.next = false;
        self.grad_in.s2_tuser_size.next = self.zero16.val();
        self.grad_in.s2_tuser_src.next = self.zero16.val();
        self.grad_in.s2_tuser_dst.next = self.zero16.val();
        self.grad_in.s3_tdata.next = self.zero512.val();
        self.grad_in.s3_tkeep.next = self.zero64.val();
        self.grad_in.s3_tlast.next = false;
        self.grad_in.s3_tvalid.next = false;
        self.grad_in.s3_tuser_size.next = self.zero16.val();
        self.grad_in.s3_tuser_src.next = self.zero16.val();
        self.grad_in.s3_tuser_dst.next = self.zero16.val();
        self.kv.s_tdata.next = self.kv_in.m_tdata.val();
        self.kv.s_tlast.next = self.kv_in.m_tlast.val();
        self.kv.s_tvalid.next = self.kv_in.m_tvalid.val();
        self.kv.s_tuser_size.next = self.kv_in.m_tuser_size.val();
        self.kv_in.m_tready.next = self.kv.s_tready.val();
        self.grad.s_tdata.next = self.grad_in.m_tdata.val();
        self.grad.s_tlast.next = self.grad_in.m_tlast.val();
        self.grad.s_tvalid.next = self.grad_in.m_tvalid.val();
        self.grad.s_tuser_size.next = self.grad_in.m_tuser_size.val();
        self.grad_in.m_tready.next = self.grad.s_tready.val();

        // ---- Card to host: network frames, records, acks, gradient packets.
        self.w_kvkind.narrow.next = self.kv.m_tuser.val();
        self.w_lanes.narrow.next = self.kv.m_tkeep.val();
        self.c2h.s1_tdata.next = self.kv.m_tdata.val();
        self.c2h.s1_tkeep.next = self.ones64.val();
        self.c2h.s1_tlast.next = self.kv.m_tlast.val();
        self.c2h.s1_tvalid.next = self.kv.m_tvalid.val();
        self.c2h.s1_tuser_size.next = self.size_beat.val();
        self.c2h.s1_tuser_src.next =
            self.src_rec.val() | (self.w_kvkind.wide.val() << 8) | self.w_lanes.wide.val();
        self.c2h.s1_tuser_dst.next = self.zero16.val();
        self.kv.m_tready.next = self.c2h.s1_tready.val();
        self.w_ack.narrow.next = self.kv.a_tdata.val();
        self.aux.s0_tdata.next = self.w_ack.wide.val();
        self.aux.s0_tkeep.next = self.keep8.val();
        self.aux.s0_tlast.next = true;
        self.aux.s0_tvalid.next = self.kv.a_tvalid.val();
        self.aux.s0_tuser_size.next = self.size_ack.val();
        self.aux.s0_tuser_src.next = self.src_ack.val();
        self.aux.s0_tuser_dst.next = self.zero16.val();
        self.kv.a_tready.next = self.aux.s0_tready.val();
        // Acks and MemOps completions share one input of the host merge.
        self.c2h.s2_tdata.next = self.aux.m_tdata.val();
        self.c2h.s2_tkeep.next = self.aux.m_tkeep.val();
        self.c2h.s2_tlast.next = self.aux.m_tlast.val();
        self.c2h.s2_tvalid.next = self.aux.m_tvalid.val();
        self.c2h.s2_tuser_size.next = self.aux.m_tuser_size.val();
        self.c2h.s2_tuser_src.next = self.aux.m_tuser_src.val();
        self.c2h.s2_tuser_dst.next = self.aux.m_tuser_dst.val();
        self.aux.m_tready.next = self.c2h.s2_tready.val();
        self.w_gkind.narrow.next = self.grad.m_tuser.val();
        self.c2h.s3_tdata.next = self.grad.m_tdata.val();
        self.c2h.s3_tkeep.next = self.ones64.val();
        self.c2h.s3_tlast.next = self.grad.m_tlast.val();
        self.c2h.s3_tvalid.next = self.grad.m_tvalid.val();
        self.c2h.s3_tuser_size.next = self.size_grad.val();
        self.c2h.s3_tuser_src.next = self.src_grad.val() | (self.w_gkind.wide.val() << 8);
        self.c2h.s3_tuser_dst.next = self.zero16.val();
        self.grad.m_tready.next = self.c2h.s3_tready.val();
        self.m_axis_qdma_c2h_tdata.next = self.c2h.m_tdata.val();
        self.m_axis_qdma_c2h_tkeep.next = self.c2h.m_tkeep.val();
        self.m_axis_qdma_c2h_tlast.next = self.c2h.m_tlast.val();
        self.m_axis_qdma_c2h_tvalid.next = self.c2h.m_tvalid.val() & self.run.val();
        self.m_axis_qdma_c2h_tuser_size.next = self.c2h.m_tuser_size.val();
        self.m_axis_qdma_c2h_tuser_src.next = self.c2h.m_tuser_src.val();
        self.m_axis_qdma_c2h_tuser_dst.next = self.c2h.m_tuser_dst.val();
        self.c2h.m_tready.next = self.m_axis_qdma_c2h_tready.val() & self.run.val();
    }
}
