//! The simulated card's top: the CSR block and the engines on one clock.
//!
//! The CSR block decodes the register map and forwards engine registers on
//! its engine port to the key-value engine. The engine's input is the
//! network receive stream (UDP payloads of aggregation packets), and its
//! record and ack streams go to the host. This is the card that weft-sim
//! runs; the OpenNIC shell top with its two clock domains (`weft_top`) is a
//! separate, later block.

use crate::csr::{Csr, ADDR_BITS};
use crate::kv_agg::KvAgg;
use rust_hdl::prelude::*;
use weft_regs::{BuildInfo, MAP};

/// The card with a key-value engine of `L` lanes (`W = 64 * L` bits) and
/// banks of `1 << SB` slots.
#[derive(LogicBlock)]
pub struct Card<const L: usize, const W: usize, const SB: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// AXI4-Lite AWADDR.
    pub s_axil_awaddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI4-Lite AWVALID.
    pub s_axil_awvalid: Signal<In, Bit>,
    /// AXI4-Lite AWREADY.
    pub s_axil_awready: Signal<Out, Bit>,
    /// AXI4-Lite WDATA.
    pub s_axil_wdata: Signal<In, Bits<32>>,
    /// AXI4-Lite WSTRB.
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    /// AXI4-Lite WVALID.
    pub s_axil_wvalid: Signal<In, Bit>,
    /// AXI4-Lite WREADY.
    pub s_axil_wready: Signal<Out, Bit>,
    /// AXI4-Lite BRESP.
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    /// AXI4-Lite BVALID.
    pub s_axil_bvalid: Signal<Out, Bit>,
    /// AXI4-Lite BREADY.
    pub s_axil_bready: Signal<In, Bit>,
    /// AXI4-Lite ARADDR.
    pub s_axil_araddr: Signal<In, Bits<ADDR_BITS>>,
    /// AXI4-Lite ARVALID.
    pub s_axil_arvalid: Signal<In, Bit>,
    /// AXI4-Lite ARREADY.
    pub s_axil_arready: Signal<Out, Bit>,
    /// AXI4-Lite RDATA.
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    /// AXI4-Lite RRESP.
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    /// AXI4-Lite RVALID.
    pub s_axil_rvalid: Signal<Out, Bit>,
    /// AXI4-Lite RREADY.
    pub s_axil_rready: Signal<In, Bit>,
    /// Interrupt vector 0.
    pub irq: Signal<Out, Bit>,
    /// Network receive stream into the key-value engine.
    pub s_tdata: Signal<In, Bits<W>>,
    /// Last beat.
    pub s_tlast: Signal<In, Bit>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Packet length in bytes.
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// Beat taken.
    pub s_tready: Signal<Out, Bit>,
    /// Record stream to the host.
    pub m_tdata: Signal<Out, Bits<W>>,
    /// Record lanes present.
    pub m_tkeep: Signal<Out, Bits<L>>,
    /// Record kind.
    pub m_tuser: Signal<Out, Bits<2>>,
    /// Record last.
    pub m_tlast: Signal<Out, Bit>,
    /// Record valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Host takes the record.
    pub m_tready: Signal<In, Bit>,
    /// Ack stream to the host.
    pub a_tdata: Signal<Out, Bits<64>>,
    /// Ack valid.
    pub a_tvalid: Signal<Out, Bit>,
    /// Host takes the ack.
    pub a_tready: Signal<In, Bit>,
    csr: Csr,
    kv: KvAgg<L, W, SB>,
    // This card has no network: acks carry no return address.
    no_ret: Constant<Bits<{ crate::kv_agg::RET }>>,
}

impl<const L: usize, const W: usize, const SB: usize> Card<L, W, SB> {
    /// Elaborate the card with weft-regs' map and the ID block's `build`.
    pub fn new(build: &BuildInfo) -> Self {
        Self {
            clock: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            irq: Default::default(),
            s_tdata: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tuser: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            a_tdata: Default::default(),
            a_tvalid: Default::default(),
            a_tready: Default::default(),
            csr: Csr::new(&MAP, build),
            kv: KvAgg::new(),
            no_ret: Constant::new(0u64.into()),
        }
    }
}

impl<const L: usize, const W: usize, const SB: usize> Logic for Card<L, W, SB> {
    #[hdl_gen]
    fn update(&mut self) {
        self.csr.clock.next = self.clock.val();
        self.kv.clock.next = self.clock.val();

        self.csr.s_axil_awaddr.next = self.s_axil_awaddr.val();
        self.csr.s_axil_awvalid.next = self.s_axil_awvalid.val();
        self.s_axil_awready.next = self.csr.s_axil_awready.val();
        self.csr.s_axil_wdata.next = self.s_axil_wdata.val();
        self.csr.s_axil_wstrb.next = self.s_axil_wstrb.val();
        self.csr.s_axil_wvalid.next = self.s_axil_wvalid.val();
        self.s_axil_wready.next = self.csr.s_axil_wready.val();
        self.s_axil_bresp.next = self.csr.s_axil_bresp.val();
        self.s_axil_bvalid.next = self.csr.s_axil_bvalid.val();
        self.csr.s_axil_bready.next = self.s_axil_bready.val();
        self.csr.s_axil_araddr.next = self.s_axil_araddr.val();
        self.csr.s_axil_arvalid.next = self.s_axil_arvalid.val();
        self.s_axil_arready.next = self.csr.s_axil_arready.val();
        self.s_axil_rdata.next = self.csr.s_axil_rdata.val();
        self.s_axil_rresp.next = self.csr.s_axil_rresp.val();
        self.s_axil_rvalid.next = self.csr.s_axil_rvalid.val();
        self.csr.s_axil_rready.next = self.s_axil_rready.val();
        self.irq.next = self.csr.irq.val();

        // The engine register port: the key-value engine is the only
        // engine, so it serves every forwarded register.
        self.kv.eng_raddr.next = self.csr.eng_raddr.val();
        self.kv.eng_re.next = self.csr.eng_re.val();
        self.csr.eng_rdata.next = self.kv.eng_rdata.val();
        self.kv.eng_waddr.next = self.csr.eng_waddr.val();
        self.kv.eng_wdata.next = self.csr.eng_wdata.val();
        self.kv.eng_wstrb.next = self.csr.eng_wstrb.val();
        self.kv.eng_we.next = self.csr.eng_we.val();

        self.kv.s_tdata.next = self.s_tdata.val();
        self.kv.s_tlast.next = self.s_tlast.val();
        self.kv.s_tvalid.next = self.s_tvalid.val();
        self.kv.s_tuser_size.next = self.s_tuser_size.val();
        self.kv.s_tret.next = self.no_ret.val();
        self.s_tready.next = self.kv.s_tready.val();
        self.m_tdata.next = self.kv.m_tdata.val();
        self.m_tkeep.next = self.kv.m_tkeep.val();
        self.m_tuser.next = self.kv.m_tuser.val();
        self.m_tlast.next = self.kv.m_tlast.val();
        self.m_tvalid.next = self.kv.m_tvalid.val();
        self.kv.m_tready.next = self.m_tready.val();
        self.a_tdata.next = self.kv.a_tdata.val();
        self.a_tvalid.next = self.kv.a_tvalid.val();
        self.kv.a_tready.next = self.a_tready.val();
    }
}
