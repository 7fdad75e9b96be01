//! The CSR block: an AXI4-Lite slave that decodes the register map.
//!
//! This is the block's specification. Behaviour, cycle by cycle:
//! - A write is accepted when AWVALID and WVALID are both high and no write
//!   response is pending (AWREADY = WREADY = AWVALID & WVALID & !BVALID).
//!   The response appears on the next cycle and is held until BREADY:
//!   DECERR where the map has no register, SLVERR for a read-only register
//!   (nothing changes), OKAY otherwise.
//! - A read is accepted whenever no read response is pending
//!   (ARREADY = !RVALID); data and response appear on the next cycle and are
//!   held until RREADY. Unmapped addresses answer DECERR with data 0;
//!   write-only registers read 0.
//! - Constant registers read their value from the map (and the build info);
//!   `ctrl.SCRATCH` reads back what was written, byte strobes honoured;
//!   `ctrl.CYCLE_LO` returns bits 31:0 of a free-running cycle counter that
//!   starts at 0 on the first cycle and latches bits 63:32 for `ctrl.CYCLE_HI`;
//!   writing 1 to `ctrl.IRQ_TEST.VECTOR0` raises `irq` for one cycle, on the
//!   cycle after the write is accepted.
//! - A read accepted on the same cycle as a write sees the register's value
//!   from before that write.
//! - Live registers of engine blocks (every block but `id` and `ctrl`) are
//!   forwarded to the engine register port: `eng_re` marks the cycle such a
//!   read is accepted, with `eng_raddr` the read address's word, and the
//!   read's data is `eng_rdata` [`ENGINE_READ_LATENCY`] cycles later (the
//!   top registers the port on its way to the engines and their read data
//!   on the way back); the response appears the cycle after that, and no
//!   read is accepted meanwhile. An
//!   accepted write to a writable engine register raises `eng_we` with
//!   `eng_waddr`, `eng_wdata` and `eng_wstrb` on the acceptance cycle.
//!   Access checks (DECERR, SLVERR) stay here, from the map.
//! - The low two address bits are ignored.

use crate::axil::{self, AxilMaster, MasterSignals, Op, SlaveSignals, DECERR, OKAY, SLVERR};
use crate::dut::{Driver, Dut};
use weft_regs::{ctrl, Access, BuildInfo, Map, Value};

/// Cycles from an engine register read's acceptance (`eng_re`) to the
/// cycle the block takes `eng_rdata` (`weft_hdl::csr::ENGINE_READ_LATENCY`).
pub const ENGINE_READ_LATENCY: usize = 2;

crate::ports! {
    /// Inputs of the CSR block.
    pub struct CsrIn {
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
        /// Engine register port: read data for `eng_raddr`.
        pub eng_rdata: u32 = 32,
    }
}

crate::ports! {
    /// Outputs of the CSR block.
    pub struct CsrOut {
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
        /// Interrupt vector 0, a one-cycle pulse.
        pub irq: bool = 1,
        /// Engine register port: read word address.
        pub eng_raddr: u16 = 14,
        /// Engine register port: read accepted.
        pub eng_re: bool = 1,
        /// Engine register port: write word address.
        pub eng_waddr: u16 = 14,
        /// Engine register port: write data.
        pub eng_wdata: u32 = 32,
        /// Engine register port: write strobes.
        pub eng_wstrb: u8 = 4,
        /// Engine register port: write enable.
        pub eng_we: bool = 1,
    }
}

impl CsrIn {
    /// Place an AXI4-Lite master's signals on the block's inputs.
    pub fn from_master(m: &MasterSignals) -> Self {
        Self {
            s_axil_awaddr: m.awaddr as u16,
            s_axil_awvalid: m.awvalid,
            s_axil_wdata: m.wdata,
            s_axil_wstrb: m.wstrb & 0xf,
            s_axil_wvalid: m.wvalid,
            s_axil_bready: m.bready,
            s_axil_araddr: m.araddr as u16,
            s_axil_arvalid: m.arvalid,
            s_axil_rready: m.rready,
            eng_rdata: 0,
        }
    }
}

impl CsrOut {
    /// The slave-side AXI4-Lite signals.
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

/// Whether the register at `addr` is an engine's live register, served by
/// the engine register port.
pub fn is_engine_reg(map: &Map, addr: u32) -> bool {
    map.lookup(addr).is_some_and(|(b, r)| {
        matches!(r.value, Value::Live { .. })
            && b.type_id != weft_regs::block_type::ID
            && b.type_id != weft_regs::block_type::CTRL
    })
}

/// Expand 4 byte strobes to a 32-bit mask.
pub fn strobe_mask(strb: u8) -> u32 {
    (0..4)
        .filter(|i| strb & (1 << i) != 0)
        .fold(0, |m, i| m | (0xff << (8 * i)))
}

/// The reference model of the CSR block, cycle-accurate.
#[derive(Clone, Debug)]
pub struct CsrModel {
    map: Map,
    build: BuildInfo,
    inputs: CsrIn,
    b_valid: bool,
    b_resp: u8,
    r_valid: bool,
    r_data: u32,
    r_resp: u8,
    scratch: u32,
    cycles: u64,
    hi_latch: u32,
    irq: bool,
    /// An engine read in flight: cycles since its acceptance.
    engine_read: Option<usize>,
}

impl CsrModel {
    /// A model of the CSR block for `map`, built with `build`.
    pub fn new(map: Map, build: BuildInfo) -> Self {
        Self {
            map,
            build,
            inputs: CsrIn::default(),
            b_valid: false,
            b_resp: OKAY,
            r_valid: false,
            r_data: 0,
            r_resp: OKAY,
            scratch: reset_of(&ctrl::SCRATCH),
            cycles: 0,
            hi_latch: 0,
            irq: false,
            engine_read: None,
        }
    }

    fn outputs(&self) -> CsrOut {
        let i = &self.inputs;
        let aw_fire = i.s_axil_awvalid && i.s_axil_wvalid && !self.b_valid;
        let ar_free = !self.r_valid && self.engine_read.is_none();
        let ar_fire = i.s_axil_arvalid && ar_free;
        let awaddr = i.s_axil_awaddr as u32;
        let writable = self
            .map
            .lookup(awaddr)
            .is_some_and(|(_, r)| r.access.writable());
        CsrOut {
            eng_raddr: i.s_axil_araddr >> 2,
            eng_re: ar_fire && is_engine_reg(&self.map, i.s_axil_araddr as u32),
            eng_waddr: i.s_axil_awaddr >> 2,
            eng_wdata: i.s_axil_wdata,
            eng_wstrb: i.s_axil_wstrb,
            eng_we: aw_fire && writable && is_engine_reg(&self.map, awaddr),
            s_axil_awready: aw_fire,
            s_axil_wready: aw_fire,
            s_axil_bresp: self.b_resp,
            s_axil_bvalid: self.b_valid,
            s_axil_arready: ar_free,
            s_axil_rdata: self.r_data,
            s_axil_rresp: self.r_resp,
            s_axil_rvalid: self.r_valid,
            irq: self.irq,
        }
    }

    /// Read the register at `addr`: (data, response). Updates the CYCLE_HI latch.
    fn read(&mut self, addr: u32) -> (u32, u8) {
        let Some((block, reg)) = self.map.lookup(addr) else {
            return (0, DECERR);
        };
        if let Some(v) = self.map.const_value(block, reg, &self.build) {
            return (v, OKAY);
        }
        let data = if reg.addr == ctrl::SCRATCH.addr {
            self.scratch
        } else if reg.addr == ctrl::CYCLE_LO.addr {
            self.hi_latch = (self.cycles >> 32) as u32;
            self.cycles as u32
        } else if reg.addr == ctrl::CYCLE_HI.addr {
            self.hi_latch
        } else {
            // Write-only registers read 0.
            0
        };
        (data, OKAY)
    }

    /// Write the register at `addr`; returns the response.
    fn write(&mut self, addr: u32, data: u32, strb: u8) -> u8 {
        let Some((_, reg)) = self.map.lookup(addr) else {
            return DECERR;
        };
        if !reg.access.writable() {
            return SLVERR;
        }
        if reg.addr == ctrl::SCRATCH.addr {
            let m = strobe_mask(strb);
            self.scratch = (self.scratch & !m) | (data & m);
        } else if reg.addr == ctrl::IRQ_TEST.addr {
            // The pulse needs the byte that holds VECTOR0.
            let m = strobe_mask(strb);
            self.irq = ctrl::IRQ_TEST_VECTOR0.get(data & m) != 0;
        }
        OKAY
    }
}

fn reset_of(reg: &weft_regs::Register) -> u32 {
    match reg.value {
        Value::Live { reset } => reset,
        _ => 0,
    }
}

impl Dut for CsrModel {
    type In = CsrIn;
    type Out = CsrOut;

    fn eval(&mut self, inputs: &CsrIn) -> CsrOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let o = self.outputs();
        self.irq = false;
        // Registers update together on the edge: a read accepted on the
        // same cycle as a write sees the value from before the write.
        if self.r_valid && i.s_axil_rready {
            self.r_valid = false;
        }
        match self.engine_read {
            Some(n) if n + 1 == ENGINE_READ_LATENCY => {
                self.engine_read = None;
                self.r_data = i.eng_rdata;
                self.r_resp = OKAY;
                self.r_valid = true;
            }
            Some(n) => self.engine_read = Some(n + 1),
            None => {}
        }
        if o.s_axil_arready && i.s_axil_arvalid {
            if o.eng_re {
                self.engine_read = Some(0);
            } else {
                let (d, r) = self.read(i.s_axil_araddr as u32);
                self.r_data = d;
                self.r_resp = r;
                self.r_valid = true;
            }
        }
        if self.b_valid && i.s_axil_bready {
            self.b_valid = false;
        }
        if o.s_axil_awready {
            self.b_resp = self.write(i.s_axil_awaddr as u32, i.s_axil_wdata, i.s_axil_wstrb);
            self.b_valid = true;
        }
        self.cycles = self.cycles.wrapping_add(1);
    }

    fn witness(&self) -> &str {
        "model"
    }
}

/// The stand-in engine behind the engine register port in CSR tests: reads
/// of word `w` return this.
pub fn fake_engine_read(word: u16) -> u32 {
    (word as u32).wrapping_mul(0x9e37_79b9) ^ 0x5a5a_0000
}

/// An engine register write seen on the engine port.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct EngineWrite {
    /// Word address.
    pub word: u16,
    /// Data.
    pub data: u32,
    /// Byte strobes.
    pub strb: u8,
}

/// Drives the CSR block with an AXI4-Lite master program, plays a stand-in
/// engine on the engine register port, and counts interrupt pulses.
pub struct CsrDriver {
    /// The master.
    pub master: AxilMaster,
    /// Cycles on which `irq` was high.
    pub irq_cycles: Vec<u64>,
    /// Writes seen on the engine register port.
    pub engine_writes: Vec<EngineWrite>,
    /// Engine reads accepted (eng_re), by word.
    pub engine_reads: Vec<u16>,
    /// The stand-in engine's reads in flight, newest first: the word of a
    /// read accepted 1, 2, … cycles ago.
    in_flight: [Option<u16>; ENGINE_READ_LATENCY],
    cycle: u64,
}

impl CsrDriver {
    /// Drive `ops` with `timing`, seeded.
    pub fn new(ops: Vec<Op>, timing: axil::Timing, seed: u64, serial: bool) -> Self {
        Self {
            master: AxilMaster::new(ops, timing, seed, serial),
            irq_cycles: vec![],
            engine_writes: vec![],
            engine_reads: vec![],
            in_flight: [None; ENGINE_READ_LATENCY],
            cycle: 0,
        }
    }
}

impl Driver<CsrIn, CsrOut> for CsrDriver {
    fn drive(&mut self) -> CsrIn {
        let mut i = CsrIn::from_master(&self.master.drive());
        // The stand-in engine answers a read ENGINE_READ_LATENCY cycles
        // after it was accepted, and drives 0 otherwise, as the top's
        // registered read data does.
        i.eng_rdata = self.in_flight[ENGINE_READ_LATENCY - 1].map_or(0, fake_engine_read);
        i
    }
    fn observe(&mut self, inputs: &CsrIn, outputs: &CsrOut) {
        let m = MasterSignals {
            awaddr: inputs.s_axil_awaddr as u32,
            awvalid: inputs.s_axil_awvalid,
            wdata: inputs.s_axil_wdata,
            wstrb: inputs.s_axil_wstrb,
            wvalid: inputs.s_axil_wvalid,
            bready: inputs.s_axil_bready,
            araddr: inputs.s_axil_araddr as u32,
            arvalid: inputs.s_axil_arvalid,
            rready: inputs.s_axil_rready,
        };
        self.master.observe(&m, &outputs.slave());
        if outputs.irq {
            self.irq_cycles.push(self.cycle);
        }
        if outputs.eng_we {
            self.engine_writes.push(EngineWrite {
                word: outputs.eng_waddr,
                data: outputs.eng_wdata,
                strb: outputs.eng_wstrb,
            });
        }
        if outputs.eng_re {
            self.engine_reads.push(outputs.eng_raddr);
        }
        self.in_flight.rotate_right(1);
        self.in_flight[0] = outputs.eng_re.then_some(outputs.eng_raddr);
        self.cycle += 1;
    }
    fn finished(&self) -> bool {
        self.master.finished()
    }
}

/// Check serialised transactions (each issued after the previous completed)
/// against the register map's semantics, independently of cycle timing.
///
/// Returns the first transaction that breaks the rules.
pub fn check_serial(
    map: &Map,
    build: &BuildInfo,
    completions: &[Option<axil::Completion>],
) -> Result<(), String> {
    let mut scratch = reset_of(&ctrl::SCRATCH);
    let mut last_cycle_count: Option<u64> = None;
    let mut hi_latch = 0u32;
    let mut last_done = 0u64;
    for (n, c) in completions.iter().enumerate() {
        let c = c.ok_or_else(|| format!("transaction {n} never completed"))?;
        let fail = |what: String| Err(format!("transaction {n} ({:?}): {what}", c.op));
        match c.op {
            Op::Write { addr, data, strb } => {
                let want = match map.lookup(addr) {
                    None => DECERR,
                    Some((_, r)) if r.access == Access::Ro => SLVERR,
                    Some((_, r)) => {
                        if r.addr == ctrl::SCRATCH.addr {
                            let m = strobe_mask(strb);
                            scratch = (scratch & !m) | (data & m);
                        }
                        OKAY
                    }
                };
                if c.resp != want {
                    return fail(format!("BRESP {} want {}", c.resp, want));
                }
            }
            Op::Read { addr } => {
                let Some((b, r)) = map.lookup(addr) else {
                    if (c.resp, c.data) != (DECERR, 0) {
                        return fail(format!("got ({}, {:#x}) want DECERR, 0", c.resp, c.data));
                    }
                    continue;
                };
                if c.resp != OKAY {
                    return fail(format!("RRESP {} want OKAY", c.resp));
                }
                let want = if let Some(v) = map.const_value(b, r, build) {
                    Some(v)
                } else if is_engine_reg(map, addr) {
                    Some(fake_engine_read((addr >> 2) as u16))
                } else if r.addr == ctrl::SCRATCH.addr {
                    Some(scratch)
                } else if r.addr == ctrl::CYCLE_HI.addr {
                    Some(hi_latch)
                } else if r.addr == ctrl::CYCLE_LO.addr {
                    None
                } else {
                    Some(0)
                };
                if let Some(w) = want {
                    if c.data != w {
                        return fail(format!("read {:#x} want {:#x}", c.data, w));
                    }
                }
                if r.addr == ctrl::CYCLE_LO.addr {
                    // The counter counts cycles: strictly increasing between
                    // reads and never ahead of the cycle the data was seen.
                    let v = c.data as u64;
                    if v > c.cycle || last_cycle_count.is_some_and(|p| v <= p) {
                        return fail(format!(
                            "cycle counter {v} not in ({last_cycle_count:?}, {}]",
                            c.cycle
                        ));
                    }
                    last_cycle_count = Some(v);
                    hi_latch = 0;
                }
            }
        }
        if c.cycle < last_done {
            return fail("completed out of program order".into());
        }
        last_done = c.cycle;
    }
    Ok(())
}

/// A seeded random AXI4-Lite program over the CSR block's address space:
/// scratch writes with random strobes and read-backs, reads of every
/// register, writes to read-only registers, unmapped addresses, cycle
/// counter reads and test interrupts.
pub fn random_program(map: &Map, seed: u64, len: usize) -> Vec<Op> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let regs: Vec<u32> = map.registers().map(|(_, r)| r.addr).collect();
    (0..len)
        .map(|_| {
            let any_addr = |rng: &mut rand_chacha::ChaCha8Rng| -> u32 {
                match rng.gen_range(0..4) {
                    0 => rng.gen_range(0..map.span()),
                    _ => regs[rng.gen_range(0..regs.len())] | rng.gen_range(0..4),
                }
            };
            match rng.gen_range(0..10) {
                0..=2 => Op::Write {
                    addr: ctrl::SCRATCH.addr,
                    data: rng.gen(),
                    strb: rng.gen_range(0..16),
                },
                3..=4 => Op::Read {
                    addr: ctrl::SCRATCH.addr,
                },
                5 => Op::Read {
                    addr: ctrl::CYCLE_LO.addr,
                },
                6 => Op::Write {
                    addr: ctrl::IRQ_TEST.addr,
                    data: rng.gen_range(0..2),
                    strb: rng.gen_range(0..16),
                },
                7 => Op::Write {
                    addr: any_addr(&mut rng),
                    data: rng.gen(),
                    strb: rng.gen_range(0..16),
                },
                _ => Op::Read {
                    addr: any_addr(&mut rng),
                },
            }
        })
        .collect()
}
