//! Ports of the simulated card's top (`weft_hdl::card`): the CSR block's
//! AXI4-Lite port and interrupt, and the key-value engine's streams at 512
//! bits.

use crate::axil::{MasterSignals, SlaveSignals};

crate::ports! {
    /// Inputs of the card.
    pub struct CardIn {
        /// AXI4-Lite AWADDR.
        pub s_axil_awaddr: u16 = 16,
        /// AXI4-Lite AWVALID.
        pub s_axil_awvalid: bool = 1,
        /// AXI4-Lite WDATA.
        pub s_axil_wdata: u32 = 32,
        /// AXI4-Lite WSTRB.
        pub s_axil_wstrb: u8 = 4,
        /// AXI4-Lite WVALID.
        pub s_axil_wvalid: bool = 1,
        /// AXI4-Lite BREADY.
        pub s_axil_bready: bool = 1,
        /// AXI4-Lite ARADDR.
        pub s_axil_araddr: u16 = 16,
        /// AXI4-Lite ARVALID.
        pub s_axil_arvalid: bool = 1,
        /// AXI4-Lite RREADY.
        pub s_axil_rready: bool = 1,
        /// Network receive stream data.
        pub s_tdata: [u32; 16] = 512,
        /// Last beat.
        pub s_tlast: bool = 1,
        /// Beat valid.
        pub s_tvalid: bool = 1,
        /// Packet length in bytes.
        pub s_tuser_size: u16 = 16,
        /// Host takes the record beat.
        pub m_tready: bool = 1,
        /// Host takes the ack.
        pub a_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the card.
    pub struct CardOut {
        /// AXI4-Lite AWREADY.
        pub s_axil_awready: bool = 1,
        /// AXI4-Lite WREADY.
        pub s_axil_wready: bool = 1,
        /// AXI4-Lite BRESP.
        pub s_axil_bresp: u8 = 2,
        /// AXI4-Lite BVALID.
        pub s_axil_bvalid: bool = 1,
        /// AXI4-Lite ARREADY.
        pub s_axil_arready: bool = 1,
        /// AXI4-Lite RDATA.
        pub s_axil_rdata: u32 = 32,
        /// AXI4-Lite RRESP.
        pub s_axil_rresp: u8 = 2,
        /// AXI4-Lite RVALID.
        pub s_axil_rvalid: bool = 1,
        /// Interrupt vector 0.
        pub irq: bool = 1,
        /// The engine takes the beat.
        pub s_tready: bool = 1,
        /// Record stream data.
        pub m_tdata: [u32; 16] = 512,
        /// Record lanes present.
        pub m_tkeep: u8 = 8,
        /// Record kind.
        pub m_tuser: u8 = 2,
        /// Record last.
        pub m_tlast: bool = 1,
        /// Record valid.
        pub m_tvalid: bool = 1,
        /// Ack record.
        pub a_tdata: u64 = 64,
        /// Ack valid.
        pub a_tvalid: bool = 1,
    }
}

impl CardIn {
    /// Place an AXI4-Lite master's signals on the card's register port.
    pub fn set_master(&mut self, m: &MasterSignals) {
        self.s_axil_awaddr = m.awaddr as u16;
        self.s_axil_awvalid = m.awvalid;
        self.s_axil_wdata = m.wdata;
        self.s_axil_wstrb = m.wstrb & 0xf;
        self.s_axil_wvalid = m.wvalid;
        self.s_axil_bready = m.bready;
        self.s_axil_araddr = m.araddr as u16;
        self.s_axil_arvalid = m.arvalid;
        self.s_axil_rready = m.rready;
    }
}

impl CardOut {
    /// The register port's slave signals.
    pub fn slave(&self) -> SlaveSignals {
        SlaveSignals {
            awready: self.s_axil_awready,
            wready: self.s_axil_wready,
            bresp: self.s_axil_bresp,
            bvalid: self.s_axil_bvalid,
            arready: self.s_axil_arready,
            rdata: self.s_axil_rdata,
            rresp: self.s_axil_rresp,
            rvalid: self.s_axil_rvalid,
        }
    }
}
