//! The `net` register block (`weft_regs::net`), cycle by cycle: the
//! specification of `weft_hdl::net_regs::NetRegs`.
//!
//! - Every read-write register ([`net::RW`]) keeps the bits of its
//!   [`net::RW_MASK`] and starts at its map reset value. A write merges the
//!   bytes its strobes select; it takes effect at the clock edge, so the
//!   configuration outputs show it from the next cycle.
//! - Reads are combinational on the engine register port and 0 outside the
//!   block's registers. `PACK_SEQ` reads the packer's `seq_in`; a write to
//!   it raises `seq_we` in the same cycle with the merged value.
//! - A write of `WT_CMD` with bit 0 set (and strobe 0) raises `wt_we` in
//!   the same cycle, with `wt_addr = {WT_SEL.JOB, WT_SEL.WORKER}` and
//!   `wt_data` the staged entry as it is before that cycle's edge.
//! - Counter `i` adds `inc` bit `i` every cycle (64 bits); reading its LO
//!   word with `eng_re` latches its HI word for the next HI read.

use crate::csr::strobe_mask;
use crate::dut::Dut;
use weft_regs::net;

/// Counters of the block.
pub const COUNTERS: usize = net::COUNTER_NAMES.len();

crate::ports! {
    /// Inputs of the `net` block.
    pub struct NetIn {
        /// Read word address.
        pub eng_raddr: u16 = 14,
        /// Read accepted.
        pub eng_re: bool = 1,
        /// Write word address.
        pub eng_waddr: u16 = 14,
        /// Write data.
        pub eng_wdata: u32 = 32,
        /// Write strobes.
        pub eng_wstrb: u8 = 4,
        /// Write enable.
        pub eng_we: bool = 1,
        /// Counter events.
        pub inc: u32 = COUNTERS,
        /// The packer's next sequence number.
        pub seq_in: u32 = 32,
    }
}

crate::ports! {
    /// Outputs of the `net` block.
    pub struct NetOut {
        /// Read data.
        pub eng_rdata: u32 = 32,
        /// `CTRL.ENABLE`.
        pub enable: bool = 1,
        /// Card MAC.
        pub card_mac: u64 = 48,
        /// Card IP.
        pub card_ip: u32 = 32,
        /// Collector MAC.
        pub kv_mac: u64 = 48,
        /// Collector IP.
        pub kv_ip: u32 = 32,
        /// Collector port.
        pub kv_port: u16 = 16,
        /// Fallback MAC.
        pub grad_mac: u64 = 48,
        /// Fallback IP.
        pub grad_ip: u32 = 32,
        /// Fallback port.
        pub grad_port: u16 = 16,
        /// Records per frame.
        pub pack_max: u16 = 11,
        /// Packing wait.
        pub pack_wait: u32 = 20,
        /// `PACK_SEQ` written.
        pub seq_we: bool = 1,
        /// The value written.
        pub seq_wdata: u32 = 32,
        /// Worker entry written.
        pub wt_we: bool = 1,
        /// Worker entry address.
        pub wt_addr: u16 = 9,
        /// Worker entry.
        pub wt_data: [u32; 4] = 98,
    }
}

/// The block's state.
#[derive(Clone, Debug)]
pub struct NetRegsModel {
    regs: [u32; 19],
    counters: [u64; COUNTERS],
    latched: [u32; COUNTERS],
    inputs: NetIn,
}

impl Default for NetRegsModel {
    fn default() -> Self {
        Self::new()
    }
}

fn word(r: &weft_regs::Register) -> u16 {
    (r.addr >> 2) as u16
}

/// A register's reset value in the map.
pub fn reset_of(r: &weft_regs::Register) -> u32 {
    match r.value {
        weft_regs::Value::Live { reset } | weft_regs::Value::Const(reset) => reset,
        _ => 0,
    }
}

impl NetRegsModel {
    /// Out of reset.
    pub fn new() -> Self {
        Self {
            regs: std::array::from_fn(|i| reset_of(&net::RW[i]) & net::RW_MASK[i]),
            counters: [0; COUNTERS],
            latched: [0; COUNTERS],
            inputs: NetIn::default(),
        }
    }

    /// The value of read-write register `r` (as stored).
    pub fn reg(&self, r: &weft_regs::Register) -> Option<u32> {
        let i = net::RW.iter().position(|x| x.addr == r.addr)?;
        Some(self.regs[i])
    }

    /// Counter `i`'s value.
    pub fn counter(&self, i: usize) -> u64 {
        self.counters[i]
    }

    fn mac(&self, hi: usize) -> u64 {
        (self.regs[hi] as u64 & 0xffff) << 32 | self.regs[hi + 1] as u64
    }

    fn outputs(&self) -> NetOut {
        let i = &self.inputs;
        let m = strobe_mask(i.eng_wstrb);
        let mut rdata = 0;
        // The decoder answers only a read (`eng_re`), as the RTL's does.
        if i.eng_re {
            for (k, r) in net::RW.iter().enumerate() {
                if i.eng_raddr == word(r) {
                    rdata = self.regs[k];
                }
            }
            if i.eng_raddr == word(&net::PACK_SEQ) {
                rdata = i.seq_in;
            }
            for k in 0..COUNTERS {
                if i.eng_raddr == word(&net::COUNTERS[2 * k]) {
                    rdata = self.counters[k] as u32;
                }
                if i.eng_raddr == word(&net::COUNTERS[2 * k + 1]) {
                    rdata = self.latched[k];
                }
            }
        }
        let sel = self.regs[14];
        let flags = self.regs[15] >> 16 & 3;
        let lo96 = self.mac(15) as u128
            | (self.regs[17] as u128) << 48
            | (self.regs[18] as u128 & 0xffff) << 80;
        let wt = lo96 | ((flags & 2) as u128 >> 1) << 96 | ((flags & 1) as u128) << 97;
        NetOut {
            eng_rdata: rdata,
            enable: self.regs[0] & 1 != 0,
            card_mac: self.mac(1),
            card_ip: self.regs[3],
            kv_mac: self.mac(4),
            kv_ip: self.regs[6],
            kv_port: self.regs[7] as u16,
            grad_mac: self.mac(8),
            grad_ip: self.regs[10],
            grad_port: self.regs[11] as u16,
            pack_max: self.regs[12] as u16,
            pack_wait: self.regs[13],
            seq_we: i.eng_we && i.eng_waddr == word(&net::PACK_SEQ),
            seq_wdata: (i.seq_in & !m) | (i.eng_wdata & m),
            wt_we: i.eng_we
                && i.eng_waddr == word(&net::WT_CMD)
                && i.eng_wstrb & 1 != 0
                && i.eng_wdata & 1 != 0,
            wt_addr: ((sel >> 8 & 0xf) << 5 | (sel & 0x1f)) as u16,
            wt_data: [
                wt as u32,
                (wt >> 32) as u32,
                (wt >> 64) as u32,
                (wt >> 96) as u32,
            ],
        }
    }
}

impl Dut for NetRegsModel {
    type In = NetIn;
    type Out = NetOut;

    fn eval(&mut self, inputs: &NetIn) -> NetOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let m = strobe_mask(i.eng_wstrb);
        for k in 0..COUNTERS {
            if i.eng_re && i.eng_raddr == word(&net::COUNTERS[2 * k]) {
                self.latched[k] = (self.counters[k] >> 32) as u32;
            }
            self.counters[k] = self.counters[k].wrapping_add((i.inc >> k & 1) as u64);
        }
        if i.eng_we {
            for (k, r) in net::RW.iter().enumerate() {
                if i.eng_waddr == word(r) {
                    self.regs[k] = ((self.regs[k] & !m) | (i.eng_wdata & m)) & net::RW_MASK[k];
                }
            }
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}
