//! An AXI4-Lite master bus-functional model with seeded timing, and a
//! protocol monitor for the slave side.
//!
//! The master issues a program of reads and writes. Its five channels move
//! independently: each new address or data item may be held back for random
//! cycles (input bubbles) and BREADY/RREADY drop at random (output
//! back-pressure). Once VALID is raised it stays up until the handshake, as
//! AXI (IHI 0022, A3.2.1) requires of a master; the monitor checks the
//! slave's half of that rule and that no response arrives before its request.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// AXI response: normal access success.
pub const OKAY: u8 = 0b00;
/// AXI response: slave error (here: write to a read-only register).
pub const SLVERR: u8 = 0b10;
/// AXI response: decode error (no register at the address).
pub const DECERR: u8 = 0b11;

/// One AXI4-Lite transaction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// Read the word at `addr`.
    Read {
        /// Byte address.
        addr: u32,
    },
    /// Write `data` to `addr` under byte strobes `strb`.
    Write {
        /// Byte address.
        addr: u32,
        /// Write data.
        data: u32,
        /// Byte-lane strobes (bit i enables byte i).
        strb: u8,
    },
}

/// A finished transaction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Completion {
    /// The transaction.
    pub op: Op,
    /// BRESP or RRESP.
    pub resp: u8,
    /// Read data (0 for writes).
    pub data: u32,
    /// Cycle on which the response handshake happened.
    pub cycle: u64,
}

/// Signals the master drives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MasterSignals {
    /// AWADDR.
    pub awaddr: u32,
    /// AWVALID.
    pub awvalid: bool,
    /// WDATA.
    pub wdata: u32,
    /// WSTRB.
    pub wstrb: u8,
    /// WVALID.
    pub wvalid: bool,
    /// BREADY.
    pub bready: bool,
    /// ARADDR.
    pub araddr: u32,
    /// ARVALID.
    pub arvalid: bool,
    /// RREADY.
    pub rready: bool,
}

/// Signals the slave drives.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SlaveSignals {
    /// AWREADY.
    pub awready: bool,
    /// WREADY.
    pub wready: bool,
    /// BRESP.
    pub bresp: u8,
    /// BVALID.
    pub bvalid: bool,
    /// ARREADY.
    pub arready: bool,
    /// RDATA.
    pub rdata: u32,
    /// RRESP.
    pub rresp: u8,
    /// RVALID.
    pub rvalid: bool,
}

/// Random timing of the master.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Timing {
    /// Probability that a pending request stays hidden one more cycle.
    pub bubble: f64,
    /// Probability that BREADY / RREADY are low on a cycle.
    pub stall: f64,
}

impl Timing {
    /// No bubbles, no back-pressure.
    pub const EAGER: Timing = Timing {
        bubble: 0.0,
        stall: 0.0,
    };
}

#[derive(Default)]
struct Channel {
    /// Next index (into the channel's op list) to present.
    next: usize,
    /// Whether the item at `next` is visible (VALID high).
    shown: bool,
}

/// The AXI4-Lite master.
pub struct AxilMaster {
    rng: ChaCha8Rng,
    timing: Timing,
    serial: bool,
    ops: Vec<Op>,
    writes: Vec<usize>,
    reads: Vec<usize>,
    aw: Channel,
    w: Channel,
    ar: Channel,
    b_next: usize,
    r_next: usize,
    done: Vec<Option<Completion>>,
    completed: usize,
    cycle: u64,
    prev: Option<(MasterSignals, SlaveSignals)>,
    violations: Vec<String>,
}

impl AxilMaster {
    /// A master that will issue `ops`. With `serial`, each transaction starts
    /// only after the previous one completed, so results follow program
    /// order; otherwise reads and writes overlap freely.
    pub fn new(ops: Vec<Op>, timing: Timing, seed: u64, serial: bool) -> Self {
        let writes = (0..ops.len())
            .filter(|&i| matches!(ops[i], Op::Write { .. }))
            .collect();
        let reads = (0..ops.len())
            .filter(|&i| matches!(ops[i], Op::Read { .. }))
            .collect();
        let n = ops.len();
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            timing,
            serial,
            ops,
            writes,
            reads,
            aw: Channel::default(),
            w: Channel::default(),
            ar: Channel::default(),
            b_next: 0,
            r_next: 0,
            done: vec![None; n],
            completed: 0,
            cycle: 0,
            prev: None,
            violations: vec![],
        }
    }

    fn allowed(&self, op: usize) -> bool {
        !self.serial || op == self.completed
    }

    fn show(rng: &mut ChaCha8Rng, bubble: f64, ch: &mut Channel, avail: bool) -> bool {
        if avail && !ch.shown {
            ch.shown = !rng.gen_bool(bubble.clamp(0.0, 1.0));
        }
        avail && ch.shown
    }

    /// The master's signals for this cycle.
    pub fn drive(&mut self) -> MasterSignals {
        let mut s = MasterSignals::default();
        let aw_op = self.writes.get(self.aw.next).copied();
        let w_op = self.writes.get(self.w.next).copied();
        let ar_op = self.reads.get(self.ar.next).copied();
        let bubble = self.timing.bubble;
        if let Some(i) = aw_op {
            let ok = self.allowed(i);
            if Self::show(&mut self.rng, bubble, &mut self.aw, ok) {
                if let Op::Write { addr, .. } = self.ops[i] {
                    s.awaddr = addr;
                    s.awvalid = true;
                }
            }
        }
        if let Some(i) = w_op {
            let ok = self.allowed(i);
            if Self::show(&mut self.rng, bubble, &mut self.w, ok) {
                if let Op::Write { data, strb, .. } = self.ops[i] {
                    s.wdata = data;
                    s.wstrb = strb;
                    s.wvalid = true;
                }
            }
        }
        if let Some(i) = ar_op {
            let ok = self.allowed(i);
            if Self::show(&mut self.rng, bubble, &mut self.ar, ok) {
                if let Op::Read { addr } = self.ops[i] {
                    s.araddr = addr;
                    s.arvalid = true;
                }
            }
        }
        let stall = self.timing.stall.clamp(0.0, 1.0);
        s.bready = !self.rng.gen_bool(stall);
        s.rready = !self.rng.gen_bool(stall);
        s
    }

    fn complete(&mut self, op: usize, resp: u8, data: u32) {
        self.done[op] = Some(Completion {
            op: self.ops[op],
            resp,
            data,
            cycle: self.cycle,
        });
        self.completed += 1;
    }

    /// See the slave's signals for this cycle and complete handshakes.
    pub fn observe(&mut self, m: &MasterSignals, s: &SlaveSignals) {
        if let Some((pm, ps)) = &self.prev {
            if ps.bvalid && !pm.bready && (!s.bvalid || s.bresp != ps.bresp) {
                self.violations.push(format!(
                    "cycle {}: BVALID/BRESP changed before BREADY",
                    self.cycle
                ));
            }
            if ps.rvalid && !pm.rready && (!s.rvalid || s.rdata != ps.rdata || s.rresp != ps.rresp)
            {
                self.violations.push(format!(
                    "cycle {}: RVALID/RDATA/RRESP changed before RREADY",
                    self.cycle
                ));
            }
        }
        // Responses may only answer requests accepted on earlier cycles.
        let writes_accepted = self.aw.next.min(self.w.next);
        let reads_accepted = self.ar.next;
        if m.awvalid && s.awready {
            self.aw.next += 1;
            self.aw.shown = false;
        }
        if m.wvalid && s.wready {
            self.w.next += 1;
            self.w.shown = false;
        }
        if s.bvalid && m.bready {
            // A write may be answered only after both its address and data
            // were accepted (AXI4-Lite: B follows AW and W).
            if self.b_next < writes_accepted {
                let op = self.writes[self.b_next];
                self.b_next += 1;
                self.complete(op, s.bresp, 0);
            } else {
                self.violations.push(format!(
                    "cycle {}: BVALID with no accepted write outstanding",
                    self.cycle
                ));
            }
        }
        if m.arvalid && s.arready {
            self.ar.next += 1;
            self.ar.shown = false;
        }
        if s.rvalid && m.rready {
            if self.r_next < reads_accepted {
                let op = self.reads[self.r_next];
                self.r_next += 1;
                self.complete(op, s.rresp, s.rdata);
            } else {
                self.violations.push(format!(
                    "cycle {}: RVALID with no accepted read outstanding",
                    self.cycle
                ));
            }
        }
        self.prev = Some((m.clone(), s.clone()));
        self.cycle += 1;
    }

    /// Every transaction completed.
    pub fn finished(&self) -> bool {
        self.completed == self.ops.len()
    }

    /// Completed transactions in program order (`None` where not yet done).
    pub fn completions(&self) -> &[Option<Completion>] {
        &self.done
    }

    /// Protocol violations the monitor saw on the slave side.
    pub fn violations(&self) -> &[String] {
        &self.violations
    }
}
