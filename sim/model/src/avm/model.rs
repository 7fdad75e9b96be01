//! The `avm` block, cycle by cycle.
//!
//! Everything below happens on one clock edge, computed from the state at
//! the start of the cycle (so a register write and a grant on the same cycle
//! each see the other's old state):
//! - **Queues.** Consumer `c`'s request is taken when its queue holds fewer
//!   than [`DEPTH`] requests (`req_ready`); it is stamped with the low 16 bits
//!   of the cycle counter and can be granted from the next cycle on.
//! - **Grant.** Unless a granted page is being zeroed, one waiting head is
//!   granted. First come: the oldest stamp (ties to the lowest consumer).
//!   Managed: among the waiting consumers of the highest priority, the
//!   round-robin pointer's consumer keeps the port while it has credit;
//!   otherwise the next such consumer after the pointer (the pointer's own
//!   last) takes it with `max(weight, 1) - 1` credit left.
//! - **Translate and access.** The granted request's virtual page is looked
//!   up in its consumer's table; unmapped, it is a fault and nothing is
//!   touched. The access reaches the RAM on the next cycle (a read sees the
//!   RAM before any write of that cycle) and the response leaves the cycle
//!   after: [`ACCESS_CYCLES`] after the grant, faults included, in grant
//!   order.
//! - **Counters** (32-bit, wrapping): requests taken, grants, stall cycles
//!   (cycles a consumer had a request waiting and was not granted), faults,
//!   and the latency histogram, counted when the response leaves (latency =
//!   response cycle − stamp, modulo 2^16).
//! - **Commands.** GRANT maps the lowest free physical page at virtual page
//!   ARG (refused: the page is mapped or ≥ [`VPAGES`], the consumer holds its
//!   quota, the pool is full) and then zeroes it, one word per cycle for
//!   [`PAGE_WORDS`] cycles through the RAM's port (no grants meanwhile, so no
//!   access can precede the zeroing). RECLAIM scans the consumer's virtual
//!   pages from the highest down, one per cycle for [`VPAGES`] cycles, and
//!   unmaps each mapped one while fewer than ARG are taken and the consumer
//!   holds more than its reservation; each page taken is announced on the
//!   reclaim port the next cycle. A command while one runs is refused BUSY.
//! - **Snapshot.** Writing SNAP copies every counter, histogram, page count
//!   and the cycle counter at once; SNAP_DATA reads the word SNAP_SEL selects
//!   and a read of it advances SNAP_SEL.

use super::*;
use crate::csr::strobe_mask;
use crate::dut::Dut;
use std::collections::VecDeque;
use weft_regs::avm as regs;

/// Counters per consumer: requests, grants, stall cycles, faults, buckets.
const PER: usize = regs::SNAP_PER_CONSUMER as usize;
/// Index of the first histogram bucket within a consumer's counters.
const HIST: usize = 4;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Req {
    addr: u32,
    write: bool,
    wdata: u32,
    stamp: u16,
}

/// A granted request on its way to the RAM.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Granted {
    consumer: usize,
    fault: bool,
    write: bool,
    paddr: usize,
    wdata: u32,
    stamp: u16,
}

/// A response waiting to leave.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Leaving {
    consumer: usize,
    fault: bool,
    data: u32,
    stamp: u16,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Command {
    Idle,
    /// Zeroing `page`, next word `word`.
    Zero {
        page: usize,
        word: usize,
    },
    /// Reclaiming from `consumer`, up to `want` pages, next virtual page `v`.
    Reclaim {
        consumer: usize,
        want: u32,
        v: usize,
    },
}

/// The reference model of the `avm` block.
#[derive(Clone, Debug)]
pub struct AvmModel {
    mem: Vec<u32>,
    used: u32,
    table: [[Option<usize>; VPAGES]; CONSUMERS],
    weight: [u32; CONSUMERS],
    priority: [u32; CONSUMERS],
    quota: [u32; CONSUMERS],
    reserve: [u32; CONSUMERS],
    pages: [u32; CONSUMERS],
    queue: [VecDeque<Req>; CONSUMERS],
    managed: bool,
    rr: usize,
    credit: u32,
    s1: Option<Granted>,
    s2: Option<Leaving>,
    command: Command,
    result: u32,
    last_page: u32,
    taken: u32,
    notify: Option<(usize, usize)>,
    counters: [u32; PER * CONSUMERS],
    snap: [u32; regs::SNAP_WORDS as usize],
    snap_sel: u32,
    snap_cycle: u32,
    cycle: u32,
    inputs: AvmIn,
}

impl Default for AvmModel {
    fn default() -> Self {
        Self::new()
    }
}

fn word(r: &weft_regs::Register) -> u16 {
    (r.addr >> 2) as u16
}

impl AvmModel {
    /// The block after configuration: nothing mapped, every limit 0,
    /// weights 0 (counting as 1), first-come arbitration.
    pub fn new() -> Self {
        Self {
            mem: vec![0; PAGES * PAGE_WORDS],
            used: 0,
            table: [[None; VPAGES]; CONSUMERS],
            weight: [0; CONSUMERS],
            priority: [0; CONSUMERS],
            quota: [0; CONSUMERS],
            reserve: [0; CONSUMERS],
            pages: [0; CONSUMERS],
            queue: Default::default(),
            managed: false,
            rr: 0,
            credit: 0,
            s1: None,
            s2: None,
            command: Command::Idle,
            result: 0,
            last_page: 0,
            taken: 0,
            notify: None,
            counters: [0; PER * CONSUMERS],
            snap: [0; regs::SNAP_WORDS as usize],
            snap_sel: 0,
            snap_cycle: 0,
            cycle: 0,
            inputs: AvmIn::default(),
        }
    }

    /// The physical page behind consumer `c`'s virtual page `v`, if mapped.
    pub fn translation(&self, c: usize, v: usize) -> Option<usize> {
        *self.table.get(c)?.get(v)?
    }

    /// The pool's memory (for checking what was written where).
    pub fn memory(&self) -> &[u32] {
        &self.mem
    }

    fn busy(&self) -> bool {
        self.command != Command::Idle
    }

    fn status(&self) -> u32 {
        u32::from(self.busy()) | (self.result << 4) | (self.last_page << 8) | (self.taken << 16)
    }

    /// The register value at word address `w` (what `eng_rdata` shows).
    fn read(&self, w: u16) -> u32 {
        if w == word(&regs::CTRL) {
            return u32::from(self.managed);
        }
        if w == word(&regs::STATUS) {
            return self.status();
        }
        if w == word(&regs::SNAP_SEL) {
            return self.snap_sel;
        }
        if w == word(&regs::SNAP_DATA) {
            return self.snap.get(self.snap_sel as usize).copied().unwrap_or(0);
        }
        if w == word(&regs::SNAP_CYCLE) {
            return self.snap_cycle;
        }
        if w == word(&regs::GEOMETRY) {
            return GEOMETRY;
        }
        for (c, g) in regs::GROUPS.iter().enumerate() {
            if w == word(&g[0]) {
                return self.weight[c];
            }
            if w == word(&g[1]) {
                return self.priority[c];
            }
            if w == word(&g[2]) {
                return self.quota[c] | self.reserve[c] << 8;
            }
            if w == word(&g[3]) {
                return self.pages[c];
            }
        }
        0
    }

    /// The arbiter's choice this cycle, with the round-robin state after it.
    fn arbitrate(&self) -> Option<(usize, usize, u32)> {
        if self.busy_zeroing() {
            return None;
        }
        let waiting: Vec<usize> = (0..CONSUMERS)
            .filter(|&c| !self.queue[c].is_empty())
            .collect();
        if waiting.is_empty() {
            return None;
        }
        if !self.managed {
            let age = |c: usize| self.cycle.wrapping_sub(self.queue[c][0].stamp as u32) & 0xffff;
            let mut best = waiting[0];
            for &c in &waiting[1..] {
                if age(c) > age(best) {
                    best = c;
                }
            }
            return Some((best, self.rr, self.credit));
        }
        let top = waiting.iter().map(|&c| self.priority[c]).max()?;
        let cand = |c: usize| !self.queue[c].is_empty() && self.priority[c] == top;
        if cand(self.rr) && self.credit > 0 {
            return Some((self.rr, self.rr, self.credit - 1));
        }
        (1..=CONSUMERS)
            .map(|k| (self.rr + k) % CONSUMERS)
            .find(|&c| cand(c))
            .map(|c| (c, c, self.weight[c].max(1) - 1))
    }

    fn busy_zeroing(&self) -> bool {
        matches!(self.command, Command::Zero { .. })
    }

    fn outputs(&self) -> AvmOut {
        let i = &self.inputs;
        let mut ready = 0u8;
        for c in 0..CONSUMERS {
            if self.queue[c].len() < DEPTH {
                ready |= 1 << c;
            }
        }
        let (rv, rc, rf, rd) = match self.s2 {
            Some(l) => (true, l.consumer as u8, l.fault, l.data),
            None => (false, 0, false, 0),
        };
        let (nv, nc, np) = match self.notify {
            Some((c, v)) => (true, c as u8, v as u8),
            None => (false, 0, 0),
        };
        AvmOut {
            req_ready: ready,
            resp_valid: rv,
            resp_consumer: rc,
            resp_fault: rf,
            resp_data: rd,
            reclaim_valid: nv,
            reclaim_consumer: nc,
            reclaim_vpage: np,
            eng_rdata: if i.eng_re { self.read(i.eng_raddr) } else { 0 },
        }
    }

    fn command(&mut self, data: u32) {
        if self.busy() {
            self.result = CmdResult::Busy as u32;
            return;
        }
        let c = ((data >> 4) & 3) as usize;
        let arg = (data >> 8) & 0xff;
        match data & 3 {
            op::GRANT => {
                let v = arg as usize;
                let free = (0..PAGES).find(|p| self.used & (1 << p) == 0);
                self.result = if v >= VPAGES || self.table[c][v].is_some() {
                    CmdResult::Page
                } else if self.pages[c] >= self.quota[c] {
                    CmdResult::Quota
                } else if let Some(p) = free {
                    self.table[c][v] = Some(p);
                    self.used |= 1 << p;
                    self.pages[c] += 1;
                    self.last_page = p as u32;
                    self.command = Command::Zero { page: p, word: 0 };
                    CmdResult::Ok
                } else {
                    CmdResult::Full
                } as u32;
            }
            op::RECLAIM => {
                self.result = CmdResult::Ok as u32;
                self.taken = 0;
                self.command = Command::Reclaim {
                    consumer: c,
                    want: arg,
                    v: VPAGES - 1,
                };
            }
            _ => self.result = CmdResult::Op as u32,
        }
    }

    /// A register write; `before` is the counters and page counts at the
    /// start of the cycle (what a snapshot copies).
    fn write(&mut self, w: u16, data: u32, strb: u8, before: &[u32]) {
        let m = strobe_mask(strb);
        let merge = |old: u32, bits: u32| (old & !(m & bits)) | (data & m & bits);
        if w == word(&regs::CTRL) {
            self.managed = merge(u32::from(self.managed), 1) != 0;
        } else if w == word(&regs::CMD) {
            if strb & 1 != 0 {
                self.command(data & m);
            }
        } else if w == word(&regs::SNAP) {
            if strb & 1 != 0 && data & 1 != 0 {
                self.snap.copy_from_slice(before);
                self.snap_cycle = self.cycle;
                self.snap_sel = 0;
            }
        } else if w == word(&regs::SNAP_SEL) {
            self.snap_sel = merge(self.snap_sel, 0x7f);
        } else if w == word(&regs::CLEAR) {
            if strb & 1 != 0 && data & 1 != 0 {
                self.counters = [0; PER * CONSUMERS];
            }
        } else {
            for (c, g) in regs::GROUPS.iter().enumerate() {
                if w == word(&g[0]) {
                    self.weight[c] = merge(self.weight[c], 0xff);
                } else if w == word(&g[1]) {
                    self.priority[c] = merge(self.priority[c], 3);
                } else if w == word(&g[2]) {
                    let v = merge(self.quota[c] | self.reserve[c] << 8, 0xffff);
                    let (q, r) = (v & 0xff, v >> 8);
                    if r > q {
                        self.result = CmdResult::Limits as u32;
                    } else {
                        self.quota[c] = q;
                        self.reserve[c] = r;
                    }
                }
            }
        }
    }
}

impl Dut for AvmModel {
    type In = AvmIn;
    type Out = AvmOut;

    fn eval(&mut self, inputs: &AvmIn) -> AvmOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let o = self.outputs();
        let before: Vec<u32> = self.counters.iter().chain(&self.pages).copied().collect();

        // The response leaving now.
        if let Some(l) = self.s2 {
            let lat = self.cycle.wrapping_sub(l.stamp as u32) & 0xffff;
            let k = l.consumer * PER + HIST + bucket(lat);
            self.counters[k] = self.counters[k].wrapping_add(1);
        }
        // The RAM: the granted access of the last cycle, read before write.
        self.s2 = self.s1.and_then(|g| {
            let old = self.mem[g.paddr];
            if g.write && !g.fault {
                self.mem[g.paddr] = g.wdata;
            }
            (g.consumer < CONSUMERS).then_some(Leaving {
                consumer: g.consumer,
                fault: g.fault,
                data: if g.write || g.fault { 0 } else { old },
                stamp: g.stamp,
            })
        });
        // Grant, or the zeroing's next word.
        let grant = self.arbitrate();
        self.s1 = None;
        if let Command::Zero { page, word } = self.command {
            // A zeroing write reaches the RAM like an access, with no response.
            self.s1 = Some(Granted {
                consumer: CONSUMERS,
                fault: false,
                write: true,
                paddr: page * PAGE_WORDS + word,
                wdata: 0,
                stamp: 0,
            });
        }
        if let Some((g, rr, credit)) = grant {
            let r = self.queue[g]
                .pop_front()
                .expect("granted a waiting consumer");
            self.rr = rr;
            self.credit = credit;
            let v = (r.addr >> OFFSET_BITS) as usize & (VPAGES - 1);
            let phys = self.table[g][v];
            self.s1 = Some(Granted {
                consumer: g,
                fault: phys.is_none(),
                write: r.write,
                paddr: phys.unwrap_or(0) * PAGE_WORDS + (r.addr as usize & (PAGE_WORDS - 1)),
                wdata: r.wdata,
                stamp: r.stamp,
            });
            self.counters[g * PER + 1] = self.counters[g * PER + 1].wrapping_add(1);
            if phys.is_none() {
                self.counters[g * PER + 3] = self.counters[g * PER + 3].wrapping_add(1);
            }
        }
        for c in 0..CONSUMERS {
            if !self.queue[c].is_empty() && grant.map(|g| g.0) != Some(c) {
                self.counters[c * PER + 2] = self.counters[c * PER + 2].wrapping_add(1);
            }
        }
        // Requests taken.
        for c in 0..CONSUMERS {
            if i.req_valid & o.req_ready & (1 << c) != 0 {
                self.queue[c].push_back(Req {
                    addr: (i.req_addr >> (VADDR_BITS as usize * c)) as u32
                        & ((1 << VADDR_BITS) - 1),
                    write: i.req_write & (1 << c) != 0,
                    wdata: i.req_wdata[c],
                    stamp: self.cycle as u16,
                });
                self.counters[c * PER] = self.counters[c * PER].wrapping_add(1);
            }
        }
        // The running command's step (from the state at the start of the cycle).
        let command = self.command;
        self.notify = None;
        match command {
            Command::Idle => {}
            Command::Zero { page, word } => {
                self.command = if word + 1 == PAGE_WORDS {
                    Command::Idle
                } else {
                    Command::Zero {
                        page,
                        word: word + 1,
                    }
                };
            }
            Command::Reclaim { consumer, want, v } => {
                let c = consumer;
                if self.taken < want && self.pages[c] > self.reserve[c] {
                    if let Some(p) = self.table[c][v].take() {
                        self.used &= !(1 << p);
                        self.pages[c] -= 1;
                        self.taken += 1;
                        self.notify = Some((c, v));
                    }
                }
                self.command = if v == 0 {
                    Command::Idle
                } else {
                    Command::Reclaim {
                        consumer,
                        want,
                        v: v - 1,
                    }
                };
            }
        }
        // Register port. The write acts on the state above, so a command
        // written while one runs is refused from the state at the start of
        // the cycle.
        let was_busy = command != Command::Idle;
        if i.eng_re && i.eng_raddr == word(&regs::SNAP_DATA) {
            self.snap_sel = (self.snap_sel + 1) & 0x7f;
        }
        if i.eng_we {
            if i.eng_waddr == word(&regs::CMD) && was_busy && i.eng_wstrb & 1 != 0 {
                self.result = CmdResult::Busy as u32;
            } else {
                self.write(i.eng_waddr, i.eng_wdata, i.eng_wstrb, &before);
            }
        }
        self.cycle = self.cycle.wrapping_add(1);
    }

    fn witness(&self) -> &str {
        "model"
    }
}
