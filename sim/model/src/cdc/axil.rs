//! The AXI4-Lite clock-domain crossing: specification, port-level model
//! and a driver with a master on one side and a register slave on the other.
//!
//! # Why the crossing sits on AXI4-Lite
//!
//! The CSR block's engine register port answers a read in the cycle it is
//! asked (`eng_rdata` is combinational on `eng_raddr`), so it cannot stretch
//! across clocks without changing its protocol. AXI4-Lite's five channels are
//! each a valid/ready handshake that tolerates any latency, so the crossing
//! goes there: the shell's AXI4-Lite master on `s_aclk` (the box's
//! `axil_aclk`) talks to the crossing's slave port `s_axil_*`, and the
//! crossing's master port `m_axil_*` on `m_aclk` (`axis_aclk`) drives the
//! register block, which then lives with the engines.
//!
//! # Behaviour
//!
//! Each channel is a two-phase handshake crossing ([`super::two_phase`])
//! holding one word, driven by the channel's source and taken by its sink:
//! AW (address), W (data and strobes) and AR (address) from `s_aclk` to
//! `m_aclk`; B (response) and R (data and response) back. A channel's READY
//! towards its source is "no word in flight", its VALID towards its sink
//! "a word offered" with that word as payload, so VALID never waits for
//! READY and payloads hold until taken (IHI 0022, A3.2.1). Requests and
//! responses keep their order per channel; nothing is combined or
//! reordered. A handshake's word appears on the other side after two edges
//! of that side's clock, and the channel takes the next word two edges of
//! its source's clock after the sink took this one (see
//! [`super::two_phase`]). One word in flight per channel is all a register
//! master needs (weft's has one transaction in flight; the shell's
//! AXI4-Lite master at most a few); a master that keeps more waits for
//! READY. The crossing has no reset of its own.

use super::two_phase::TwoPhaseCore;
use crate::axil::{AxilMaster, Completion, MasterSignals, Op, SlaveSignals, Timing};
use crate::clocks::Schedule;
use crate::dut::{Driver, Dut};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Name of the slave side's clock (the shell's `axil_aclk`).
pub const S_CLOCK: &str = "s_aclk";
/// Name of the master side's clock (the engines' `axis_aclk`).
pub const M_CLOCK: &str = "m_aclk";
/// Byte-address width of both ports.
pub const ADDR_BITS: usize = 16;

crate::ports! {
    /// Inputs of the AXI4-Lite crossing.
    pub struct AxilCdcIn {
        /// Slave port (`s_aclk`): AWADDR.
        pub s_axil_awaddr: u16 = 16,
        /// Slave port: AWVALID.
        pub s_axil_awvalid: bool = 1,
        /// Slave port: WDATA.
        pub s_axil_wdata: u32 = 32,
        /// Slave port: WSTRB.
        pub s_axil_wstrb: u8 = 4,
        /// Slave port: WVALID.
        pub s_axil_wvalid: bool = 1,
        /// Slave port: BREADY.
        pub s_axil_bready: bool = 1,
        /// Slave port: ARADDR.
        pub s_axil_araddr: u16 = 16,
        /// Slave port: ARVALID.
        pub s_axil_arvalid: bool = 1,
        /// Slave port: RREADY.
        pub s_axil_rready: bool = 1,
        /// Master port (`m_aclk`): AWREADY.
        pub m_axil_awready: bool = 1,
        /// Master port: WREADY.
        pub m_axil_wready: bool = 1,
        /// Master port: BRESP.
        pub m_axil_bresp: u8 = 2,
        /// Master port: BVALID.
        pub m_axil_bvalid: bool = 1,
        /// Master port: ARREADY.
        pub m_axil_arready: bool = 1,
        /// Master port: RDATA.
        pub m_axil_rdata: u32 = 32,
        /// Master port: RRESP.
        pub m_axil_rresp: u8 = 2,
        /// Master port: RVALID.
        pub m_axil_rvalid: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the AXI4-Lite crossing.
    pub struct AxilCdcOut {
        /// Slave port (`s_aclk`): AWREADY.
        pub s_axil_awready: bool = 1,
        /// Slave port: WREADY.
        pub s_axil_wready: bool = 1,
        /// Slave port: BRESP.
        pub s_axil_bresp: u8 = 2,
        /// Slave port: BVALID.
        pub s_axil_bvalid: bool = 1,
        /// Slave port: ARREADY.
        pub s_axil_arready: bool = 1,
        /// Slave port: RDATA.
        pub s_axil_rdata: u32 = 32,
        /// Slave port: RRESP.
        pub s_axil_rresp: u8 = 2,
        /// Slave port: RVALID.
        pub s_axil_rvalid: bool = 1,
        /// Master port (`m_aclk`): AWADDR.
        pub m_axil_awaddr: u16 = 16,
        /// Master port: AWVALID.
        pub m_axil_awvalid: bool = 1,
        /// Master port: WDATA.
        pub m_axil_wdata: u32 = 32,
        /// Master port: WSTRB.
        pub m_axil_wstrb: u8 = 4,
        /// Master port: WVALID.
        pub m_axil_wvalid: bool = 1,
        /// Master port: BREADY.
        pub m_axil_bready: bool = 1,
        /// Master port: ARADDR.
        pub m_axil_araddr: u16 = 16,
        /// Master port: ARVALID.
        pub m_axil_arvalid: bool = 1,
        /// Master port: RREADY.
        pub m_axil_rready: bool = 1,
    }
}

/// The AXI4-Lite crossing as a [`Dut`], on a schedule naming [`S_CLOCK`]
/// and [`M_CLOCK`].
pub struct AxilCdcModel {
    aw: TwoPhaseCore,
    w: TwoPhaseCore,
    b: TwoPhaseCore,
    ar: TwoPhaseCore,
    r: TwoPhaseCore,
    schedule: Schedule,
    step: u64,
    inputs: AxilCdcIn,
}

/// WDATA and WSTRB as one channel word: strobes above the data.
fn w_word(data: u32, strb: u8) -> u64 {
    u64::from(data) | u64::from(strb & 0xf) << 32
}

/// RDATA and RRESP as one channel word: response above the data.
fn r_word(data: u32, resp: u8) -> u64 {
    u64::from(data) | u64::from(resp & 3) << 32
}

impl AxilCdcModel {
    /// The crossing at power-on.
    ///
    /// # Panics
    /// If `schedule` does not name exactly [`S_CLOCK`] and [`M_CLOCK`].
    pub fn new(schedule: Schedule) -> Self {
        if let Err(e) = schedule.reordered(&[S_CLOCK, M_CLOCK]) {
            panic!("AxilCdcModel: {e}");
        }
        Self {
            aw: TwoPhaseCore::new(ADDR_BITS),
            w: TwoPhaseCore::new(36),
            b: TwoPhaseCore::new(2),
            ar: TwoPhaseCore::new(ADDR_BITS),
            r: TwoPhaseCore::new(34),
            schedule,
            step: 0,
            inputs: AxilCdcIn::default(),
        }
    }

    fn outputs(&self) -> AxilCdcOut {
        AxilCdcOut {
            s_axil_awready: self.aw.ready(),
            s_axil_wready: self.w.ready(),
            s_axil_bresp: self.b.data() as u8,
            s_axil_bvalid: self.b.valid(),
            s_axil_arready: self.ar.ready(),
            s_axil_rdata: self.r.data() as u32,
            s_axil_rresp: (self.r.data() >> 32) as u8,
            s_axil_rvalid: self.r.valid(),
            m_axil_awaddr: self.aw.data() as u16,
            m_axil_awvalid: self.aw.valid(),
            m_axil_wdata: self.w.data() as u32,
            m_axil_wstrb: (self.w.data() >> 32) as u8,
            m_axil_wvalid: self.w.valid(),
            m_axil_bready: self.b.ready(),
            m_axil_araddr: self.ar.data() as u16,
            m_axil_arvalid: self.ar.valid(),
            m_axil_rready: self.r.ready(),
        }
    }
}

/// A channel's source side at an edge of its clock: VALID and the word.
fn src(edge: bool, valid: bool, data: u64) -> Option<(bool, u64)> {
    edge.then_some((valid, data))
}

/// A channel's sink side at an edge of its clock: READY.
fn sink(edge: bool, ready: bool) -> Option<bool> {
    edge.then_some(ready)
}

impl Dut for AxilCdcModel {
    type In = AxilCdcIn;
    type Out = AxilCdcOut;

    fn eval(&mut self, inputs: &AxilCdcIn) -> AxilCdcOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = &self.inputs;
        let s = self.schedule.rises(S_CLOCK, self.step);
        let m = self.schedule.rises(M_CLOCK, self.step);
        self.aw.edge(
            src(s, i.s_axil_awvalid, u64::from(i.s_axil_awaddr)),
            sink(m, i.m_axil_awready),
        );
        self.w.edge(
            src(s, i.s_axil_wvalid, w_word(i.s_axil_wdata, i.s_axil_wstrb)),
            sink(m, i.m_axil_wready),
        );
        self.ar.edge(
            src(s, i.s_axil_arvalid, u64::from(i.s_axil_araddr)),
            sink(m, i.m_axil_arready),
        );
        self.b.edge(
            src(m, i.m_axil_bvalid, u64::from(i.m_axil_bresp)),
            sink(s, i.s_axil_bready),
        );
        self.r.edge(
            src(m, i.m_axil_rvalid, r_word(i.m_axil_rdata, i.m_axil_rresp)),
            sink(s, i.s_axil_rready),
        );
        self.step += 1;
    }

    fn witness(&self) -> &str {
        "model"
    }

    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}

/// Register words the slave stores: byte addresses below `4 * RW_WORDS`.
pub const RW_WORDS: usize = 16;
/// Byte addresses from here up read a constant ([`const_word`]) and refuse
/// writes with SLVERR; between the two regions everything answers DECERR.
pub const CONST_BASE: u32 = 0x100;

/// What the slave's constant region reads at byte address `addr`.
pub fn const_word(addr: u32) -> u32 {
    (addr & !3).wrapping_mul(0x9e37_79b9) ^ 0x5a5a_5a5a
}

/// The slave's answer to a transaction given its memory, as a register file
/// would give it sequentially: (response, read data).
pub fn answer(mem: &mut [u32; RW_WORDS], op: Op) -> (u8, u32) {
    use crate::axil::{DECERR, OKAY, SLVERR};
    match op {
        Op::Read { addr } if addr >= CONST_BASE => (OKAY, const_word(addr)),
        Op::Read { addr } if (addr as usize) < 4 * RW_WORDS => (OKAY, mem[addr as usize / 4]),
        Op::Read { .. } => (DECERR, 0),
        Op::Write { addr, .. } if addr >= CONST_BASE => (SLVERR, 0),
        Op::Write { addr, data, strb } if (addr as usize) < 4 * RW_WORDS => {
            let word = &mut mem[addr as usize / 4];
            for byte in 0..4 {
                if strb & (1 << byte) != 0 {
                    let m = 0xffu32 << (8 * byte);
                    *word = (*word & !m) | (data & m);
                }
            }
            (OKAY, 0)
        }
        Op::Write { .. } => (DECERR, 0),
    }
}

/// A register slave on the crossing's master port with random READY and
/// response delays, and a monitor of the crossing's half of the handshake
/// rules on that port.
struct RegSlave {
    rng: ChaCha8Rng,
    timing: Timing,
    mem: [u32; RW_WORDS],
    aw: Option<u16>,
    w: Option<(u32, u8)>,
    ar: Option<u16>,
    b: Option<u8>,
    r: Option<(u32, u8)>,
    signals: SlaveSignals,
    prev: Option<(AxilCdcOut, SlaveSignals)>,
    served: usize,
    violations: Vec<String>,
}

impl RegSlave {
    fn new(seed: u64, timing: Timing) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            timing,
            mem: [0; RW_WORDS],
            aw: None,
            w: None,
            ar: None,
            b: None,
            r: None,
            signals: SlaveSignals::default(),
            prev: None,
            served: 0,
            violations: vec![],
        }
    }

    /// READY or a response this cycle, unless held back at random.
    fn go(&mut self) -> bool {
        !self.rng.gen_bool(self.timing.stall.clamp(0.0, 1.0))
    }

    fn drive(&mut self) -> SlaveSignals {
        let mut s = SlaveSignals {
            awready: self.aw.is_none() && self.go(),
            wready: self.w.is_none() && self.go(),
            arready: self.ar.is_none() && self.go(),
            ..SlaveSignals::default()
        };
        if let Some(resp) = self.b {
            s.bvalid = true;
            s.bresp = resp;
        }
        if let Some((data, resp)) = self.r {
            s.rvalid = true;
            s.rdata = data;
            s.rresp = resp;
        }
        self.signals = s.clone();
        s
    }

    /// One cycle of the slave's clock: complete handshakes, then start
    /// responses (visible from the next cycle).
    fn observe(&mut self, o: &AxilCdcOut, step: u64) {
        let s = self.signals.clone();
        if let Some((po, ps)) = &self.prev {
            let held = |v: bool, r: bool, same: bool| !v || r || same;
            if !held(
                po.m_axil_awvalid,
                ps.awready,
                o.m_axil_awvalid && o.m_axil_awaddr == po.m_axil_awaddr,
            ) || !held(
                po.m_axil_wvalid,
                ps.wready,
                o.m_axil_wvalid
                    && o.m_axil_wdata == po.m_axil_wdata
                    && o.m_axil_wstrb == po.m_axil_wstrb,
            ) || !held(
                po.m_axil_arvalid,
                ps.arready,
                o.m_axil_arvalid && o.m_axil_araddr == po.m_axil_araddr,
            ) {
                self.violations.push(format!(
                    "step {step}: the crossing dropped or changed a request before READY"
                ));
            }
        }
        if s.awready && o.m_axil_awvalid {
            self.aw = Some(o.m_axil_awaddr);
        }
        if s.wready && o.m_axil_wvalid {
            self.w = Some((o.m_axil_wdata, o.m_axil_wstrb));
        }
        if s.arready && o.m_axil_arvalid {
            self.ar = Some(o.m_axil_araddr);
        }
        if s.bvalid && o.m_axil_bready {
            self.b = None;
        }
        if s.rvalid && o.m_axil_rready {
            self.r = None;
        }
        if self.b.is_none() && self.go() {
            if let (Some(addr), Some((data, strb))) = (self.aw, self.w) {
                let op = Op::Write {
                    addr: u32::from(addr),
                    data,
                    strb,
                };
                self.b = Some(answer(&mut self.mem, op).0);
                self.aw = None;
                self.w = None;
                self.served += 1;
            }
        }
        if self.r.is_none() && self.go() {
            if let Some(addr) = self.ar.take() {
                let (resp, data) = answer(
                    &mut self.mem,
                    Op::Read {
                        addr: u32::from(addr),
                    },
                );
                self.r = Some((data, resp));
                self.served += 1;
            }
        }
        self.prev = Some((o.clone(), s));
    }
}

/// Drives the crossing: weft's AXI4-Lite master ([`AxilMaster`], with its
/// protocol monitor) on the slave port, stepping on [`S_CLOCK`], and a
/// register slave on the master port, stepping on [`M_CLOCK`]. Each changes
/// its signals only right after its own clock's edges.
pub struct AxilCdcDriver {
    master: AxilMaster,
    slave: RegSlave,
    schedule: Schedule,
    step: u64,
    s_fresh: bool,
    m_fresh: bool,
    ms: MasterSignals,
    ss: SlaveSignals,
}

impl AxilCdcDriver {
    /// A driver issuing `ops` (in order with `serial`, overlapping
    /// otherwise) with `master` timing on the slave port and `slave` timing
    /// (its `stall` is the chance of holding READY or a response back) on
    /// the master port.
    pub fn new(
        ops: Vec<Op>,
        serial: bool,
        master: Timing,
        slave: Timing,
        seed: u64,
        schedule: Schedule,
    ) -> Self {
        Self {
            master: AxilMaster::new(ops, master, seed, serial),
            slave: RegSlave::new(seed ^ 0x5eed, slave),
            schedule,
            step: 0,
            s_fresh: true,
            m_fresh: true,
            ms: MasterSignals::default(),
            ss: SlaveSignals::default(),
        }
    }

    /// Completed transactions in program order.
    pub fn completions(&self) -> &[Option<Completion>] {
        self.master.completions()
    }

    /// Protocol violations seen on either port.
    pub fn violations(&self) -> Vec<String> {
        let mut v = self.master.violations().to_vec();
        v.extend(self.slave.violations.iter().cloned());
        v
    }

    /// Transactions the register slave served.
    pub fn served(&self) -> usize {
        self.slave.served
    }
}

impl Driver<AxilCdcIn, AxilCdcOut> for AxilCdcDriver {
    fn drive(&mut self) -> AxilCdcIn {
        if self.s_fresh {
            self.ms = self.master.drive();
        }
        if self.m_fresh {
            self.ss = self.slave.drive();
        }
        let (m, s) = (&self.ms, &self.ss);
        AxilCdcIn {
            s_axil_awaddr: m.awaddr as u16,
            s_axil_awvalid: m.awvalid,
            s_axil_wdata: m.wdata,
            s_axil_wstrb: m.wstrb,
            s_axil_wvalid: m.wvalid,
            s_axil_bready: m.bready,
            s_axil_araddr: m.araddr as u16,
            s_axil_arvalid: m.arvalid,
            s_axil_rready: m.rready,
            m_axil_awready: s.awready,
            m_axil_wready: s.wready,
            m_axil_bresp: s.bresp,
            m_axil_bvalid: s.bvalid,
            m_axil_arready: s.arready,
            m_axil_rdata: s.rdata,
            m_axil_rresp: s.rresp,
            m_axil_rvalid: s.rvalid,
        }
    }

    fn observe(&mut self, _inputs: &AxilCdcIn, o: &AxilCdcOut) {
        let s = self.schedule.rises(S_CLOCK, self.step);
        let m = self.schedule.rises(M_CLOCK, self.step);
        if s {
            let seen = SlaveSignals {
                awready: o.s_axil_awready,
                wready: o.s_axil_wready,
                bresp: o.s_axil_bresp,
                bvalid: o.s_axil_bvalid,
                arready: o.s_axil_arready,
                rdata: o.s_axil_rdata,
                rresp: o.s_axil_rresp,
                rvalid: o.s_axil_rvalid,
            };
            let ms = self.ms.clone();
            self.master.observe(&ms, &seen);
        }
        if m {
            self.slave.observe(o, self.step);
        }
        self.s_fresh = s;
        self.m_fresh = m;
        self.step += 1;
    }

    fn finished(&self) -> bool {
        self.master.finished()
    }
}

/// Check the completions of `ops` against a register file answering them in
/// program order. Reads of the register words are checked only when `serial`
/// (overlapping reads and writes have no program order); every response
/// code and every constant read is checked.
pub fn check(ops: &[Op], completions: &[Option<Completion>], serial: bool) -> Result<(), String> {
    let mut mem = [0u32; RW_WORDS];
    for (k, (op, c)) in ops.iter().zip(completions).enumerate() {
        let c = c.ok_or_else(|| format!("op {k} ({op:?}) did not complete"))?;
        let (resp, data) = answer(&mut mem, *op);
        let stored = matches!(op, Op::Read { addr } if (*addr as usize) < 4 * RW_WORDS);
        if c.resp != resp || ((serial || !stored) && c.data != data) {
            return Err(format!(
                "op {k} ({op:?}): got resp {} data {:#x}, expected resp {resp} data {data:#x}",
                c.resp, c.data
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::run;

    fn box_250() -> Schedule {
        Schedule::new([(M_CLOCK, 1, 0), (S_CLOCK, 2, 0)]).unwrap()
    }

    fn program() -> Vec<Op> {
        let mut ops = vec![];
        for k in 0..12u32 {
            ops.push(Op::Write {
                addr: 4 * (k % 5),
                data: 0x1111_1111 * k,
                strb: (k % 16) as u8,
            });
            ops.push(Op::Read { addr: 4 * (k % 5) });
            ops.push(Op::Read {
                addr: CONST_BASE + 8 * k,
            });
            ops.push(Op::Write {
                addr: CONST_BASE,
                data: k,
                strb: 0xf,
            });
            ops.push(Op::Read { addr: 0x80 });
        }
        ops
    }

    #[test]
    fn register_traffic_crosses_in_both_modes_and_ratios() {
        let t = Timing {
            bubble: 0.3,
            stall: 0.3,
        };
        for s in [
            box_250(),
            Schedule::new([(M_CLOCK, 2, 0), (S_CLOCK, 1, 0)]).unwrap(),
        ] {
            for serial in [true, false] {
                let ops = program();
                let mut m = AxilCdcModel::new(s.clone());
                let mut d = AxilCdcDriver::new(ops.clone(), serial, t, t, 9, s.clone());
                run(&mut m, &mut d, 50_000).unwrap();
                assert!(d.violations().is_empty(), "{:?}", d.violations());
                check(&ops, d.completions(), serial).unwrap();
                assert_eq!(d.served(), ops.len());
            }
        }
    }

    #[test]
    fn check_catches_a_wrong_answer() {
        let ops = vec![Op::Read { addr: CONST_BASE }];
        let bad = Completion {
            op: ops[0],
            resp: 0,
            data: 1,
            cycle: 3,
        };
        assert!(check(&ops, &[Some(bad)], true).is_err());
        let good = Completion {
            data: const_word(CONST_BASE),
            ..bad
        };
        assert!(check(&ops, &[Some(good)], true).is_ok());
    }
}
