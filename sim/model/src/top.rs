//! Port structs of `weft_top` (the OpenNIC 250 MHz box with one interface
//! and one QDMA), for driving it in the simulators. The clocks are not
//! ports here: a schedule steps them (`axis_aclk` every base step,
//! `axil_aclk` every second).

use crate::clocks::Schedule;

crate::ports! {
    /// Inputs of the top.
    pub struct TopIn {
        /// `s_axil_awvalid`.
        pub s_axil_awvalid: u8 = 2,
        /// `s_axil_awaddr`.
        pub s_axil_awaddr: u64 = 64,
        /// `s_axil_wvalid`.
        pub s_axil_wvalid: u8 = 2,
        /// `s_axil_wdata`.
        pub s_axil_wdata: u64 = 64,
        /// `s_axil_bready`.
        pub s_axil_bready: u8 = 2,
        /// `s_axil_arvalid`.
        pub s_axil_arvalid: u8 = 2,
        /// `s_axil_araddr`.
        pub s_axil_araddr: u64 = 64,
        /// `s_axil_rready`.
        pub s_axil_rready: u8 = 2,
        /// `s_axis_qdma_h2c_tvalid`.
        pub s_axis_qdma_h2c_tvalid: bool = 1,
        /// `s_axis_qdma_h2c_tdata`.
        pub s_axis_qdma_h2c_tdata: [u32; 16] = 512,
        /// `s_axis_qdma_h2c_tkeep`.
        pub s_axis_qdma_h2c_tkeep: u64 = 64,
        /// `s_axis_qdma_h2c_tlast`.
        pub s_axis_qdma_h2c_tlast: bool = 1,
        /// `s_axis_qdma_h2c_tuser_size`.
        pub s_axis_qdma_h2c_tuser_size: u16 = 16,
        /// `s_axis_qdma_h2c_tuser_src`.
        pub s_axis_qdma_h2c_tuser_src: u16 = 16,
        /// `s_axis_qdma_h2c_tuser_dst`.
        pub s_axis_qdma_h2c_tuser_dst: u16 = 16,
        /// `m_axis_qdma_c2h_tready`.
        pub m_axis_qdma_c2h_tready: bool = 1,
        /// `m_axis_adap_tx_250mhz_tready`.
        pub m_axis_adap_tx_250mhz_tready: bool = 1,
        /// `s_axis_adap_rx_250mhz_tvalid`.
        pub s_axis_adap_rx_250mhz_tvalid: bool = 1,
        /// `s_axis_adap_rx_250mhz_tdata`.
        pub s_axis_adap_rx_250mhz_tdata: [u32; 16] = 512,
        /// `s_axis_adap_rx_250mhz_tkeep`.
        pub s_axis_adap_rx_250mhz_tkeep: u64 = 64,
        /// `s_axis_adap_rx_250mhz_tlast`.
        pub s_axis_adap_rx_250mhz_tlast: bool = 1,
        /// `s_axis_adap_rx_250mhz_tuser_size`.
        pub s_axis_adap_rx_250mhz_tuser_size: u16 = 16,
        /// `s_axis_adap_rx_250mhz_tuser_src`.
        pub s_axis_adap_rx_250mhz_tuser_src: u16 = 16,
        /// `s_axis_adap_rx_250mhz_tuser_dst`.
        pub s_axis_adap_rx_250mhz_tuser_dst: u16 = 16,
        /// `mod_rstn`.
        pub mod_rstn: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the top.
    pub struct TopOut {
        /// `s_axil_awready`.
        pub s_axil_awready: u8 = 2,
        /// `s_axil_wready`.
        pub s_axil_wready: u8 = 2,
        /// `s_axil_bvalid`.
        pub s_axil_bvalid: u8 = 2,
        /// `s_axil_bresp`.
        pub s_axil_bresp: u8 = 4,
        /// `s_axil_arready`.
        pub s_axil_arready: u8 = 2,
        /// `s_axil_rvalid`.
        pub s_axil_rvalid: u8 = 2,
        /// `s_axil_rdata`.
        pub s_axil_rdata: u64 = 64,
        /// `s_axil_rresp`.
        pub s_axil_rresp: u8 = 4,
        /// `s_axis_qdma_h2c_tready`.
        pub s_axis_qdma_h2c_tready: bool = 1,
        /// `m_axis_qdma_c2h_tvalid`.
        pub m_axis_qdma_c2h_tvalid: bool = 1,
        /// `m_axis_qdma_c2h_tdata`.
        pub m_axis_qdma_c2h_tdata: [u32; 16] = 512,
        /// `m_axis_qdma_c2h_tkeep`.
        pub m_axis_qdma_c2h_tkeep: u64 = 64,
        /// `m_axis_qdma_c2h_tlast`.
        pub m_axis_qdma_c2h_tlast: bool = 1,
        /// `m_axis_qdma_c2h_tuser_size`.
        pub m_axis_qdma_c2h_tuser_size: u16 = 16,
        /// `m_axis_qdma_c2h_tuser_src`.
        pub m_axis_qdma_c2h_tuser_src: u16 = 16,
        /// `m_axis_qdma_c2h_tuser_dst`.
        pub m_axis_qdma_c2h_tuser_dst: u16 = 16,
        /// `m_axis_adap_tx_250mhz_tvalid`.
        pub m_axis_adap_tx_250mhz_tvalid: bool = 1,
        /// `m_axis_adap_tx_250mhz_tdata`.
        pub m_axis_adap_tx_250mhz_tdata: [u32; 16] = 512,
        /// `m_axis_adap_tx_250mhz_tkeep`.
        pub m_axis_adap_tx_250mhz_tkeep: u64 = 64,
        /// `m_axis_adap_tx_250mhz_tlast`.
        pub m_axis_adap_tx_250mhz_tlast: bool = 1,
        /// `m_axis_adap_tx_250mhz_tuser_size`.
        pub m_axis_adap_tx_250mhz_tuser_size: u16 = 16,
        /// `m_axis_adap_tx_250mhz_tuser_src`.
        pub m_axis_adap_tx_250mhz_tuser_src: u16 = 16,
        /// `m_axis_adap_tx_250mhz_tuser_dst`.
        pub m_axis_adap_tx_250mhz_tuser_dst: u16 = 16,
        /// `s_axis_adap_rx_250mhz_tready`.
        pub s_axis_adap_rx_250mhz_tready: bool = 1,
        /// `mod_rst_done`.
        pub mod_rst_done: bool = 1,
    }
}

/// The box's clocks at their real ratio: `axis_aclk` (250 MHz) rises every
/// base step, `axil_aclk` (125 MHz) every second step, edges aligned.
pub fn box_schedule() -> Schedule {
    Schedule::new([("axis_aclk", 1, 0), ("axil_aclk", 2, 0)]).expect("a valid schedule")
}

impl TopIn {
    /// Place an AXI4-Lite master's signals on the top's register interface
    /// `k` (0: weft's registers; 1: the interface that answers DECERR).
    pub fn set_master(&mut self, k: usize, m: &crate::axil::MasterSignals) {
        let bit = |v: u8, on: bool| (v & !(1 << k)) | (u8::from(on) << k);
        let word = |v: u64, w: u32| (v & !(0xffff_ffffu64 << (32 * k))) | (w as u64) << (32 * k);
        self.s_axil_awvalid = bit(self.s_axil_awvalid, m.awvalid);
        self.s_axil_awaddr = word(self.s_axil_awaddr, m.awaddr);
        self.s_axil_wvalid = bit(self.s_axil_wvalid, m.wvalid);
        self.s_axil_wdata = word(self.s_axil_wdata, m.wdata);
        self.s_axil_bready = bit(self.s_axil_bready, m.bready);
        self.s_axil_arvalid = bit(self.s_axil_arvalid, m.arvalid);
        self.s_axil_araddr = word(self.s_axil_araddr, m.araddr);
        self.s_axil_rready = bit(self.s_axil_rready, m.rready);
    }
}

impl TopOut {
    /// The AXI4-Lite slave signals of register interface `k`.
    pub fn slave(&self, k: usize) -> crate::axil::SlaveSignals {
        crate::axil::SlaveSignals {
            awready: self.s_axil_awready >> k & 1 != 0,
            wready: self.s_axil_wready >> k & 1 != 0,
            bresp: (self.s_axil_bresp >> (2 * k)) & 3,
            bvalid: self.s_axil_bvalid >> k & 1 != 0,
            arready: self.s_axil_arready >> k & 1 != 0,
            rdata: (self.s_axil_rdata >> (32 * k)) as u32,
            rresp: (self.s_axil_rresp >> (2 * k)) & 3,
            rvalid: self.s_axil_rvalid >> k & 1 != 0,
        }
    }
}
