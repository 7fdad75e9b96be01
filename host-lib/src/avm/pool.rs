//! A handle on the AVM pool: consumers by name, observation snapshots and
//! typed actions, on either of two pools with one register interface:
//!
//! - the pool inside a card ([`Pool::on_card`]): its registers through the
//!   card's [`Device`]; its consumers are MemOps' four destinations, whose
//!   traffic arrives as MemOps frames, so nothing here offers requests;
//! - the standalone block ([`Pool::new`], the `weft avm scenario` tool):
//!   the RTL block or its model stepped here, register operations on its
//!   engine register port one per cycle, interleaved with synthetic
//!   traffic on its consumer ports.

use super::AvmError;
use crate::card::Card;
use std::collections::VecDeque;
use std::sync::Arc;
use weft_driver::Device;
use weft_fw::avm::{self as fw, Observation};
use weft_model::avm::{self as m, AvmIn, AvmOut, CmdResult};
use weft_model::Dut;
use weft_regs::avm as regs;

/// The standalone block or its model.
pub type Block = Box<dyn Dut<In = AvmIn, Out = AvmOut> + Send>;

/// Register operations a drain on a card may take before the card counts
/// as hung (a command's STATUS poll included).
const CARD_OP_LIMIT: u64 = 100_000;

enum Backend {
    Block(Block),
    Card(Arc<dyn Device>),
}

/// How the pool's port is shared.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arbitration {
    /// First come, first served: the unmanaged baseline.
    FirstCome,
    /// Highest priority first, weighted round-robin within a priority.
    Managed,
}

/// An action on the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Act {
    /// Arbitration weight (1..=255; 0 counts as 1).
    Weight(u32),
    /// Priority class (0..=3).
    Priority(u32),
    /// Most pages the consumer may hold.
    Quota(u32),
    /// Pages a reclaim never takes (at most the quota).
    Reserve(u32),
    /// Take back up to this many pages, never below the reservation.
    Reclaim(u32),
    /// Map a free physical page at this virtual page.
    Grant(u32),
}

/// What an allocation command did.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Outcome {
    /// Physical page granted (GRANT).
    pub page: Option<u32>,
    /// Pages taken (RECLAIM).
    pub taken: Option<u32>,
}

/// One consumer in a snapshot (counters extended to 64 bits).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ConsumerStats {
    /// Name.
    pub name: String,
    /// Requests taken.
    pub requests: u64,
    /// Requests granted the port.
    pub grants: u64,
    /// Cycles it had a request waiting and was not granted.
    pub stall_cycles: u64,
    /// Accesses outside its pages.
    pub faults: u64,
    /// Pages mapped.
    pub pages: u32,
    /// Latency histogram, bucket `b` = `[2^b, 2^(b+1))` cycles from the
    /// request being taken to its response.
    pub hist: [u64; m::BUCKETS],
}

/// A consistent snapshot of the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Snapshot {
    /// Pool cycle of the snapshot.
    pub cycle: u64,
    /// Per consumer.
    pub consumers: Vec<ConsumerStats>,
}

impl Snapshot {
    /// The snapshot as the firmware policies see it.
    pub fn observation(&self) -> Observation {
        let mut o = Observation {
            cycle: self.cycle,
            n: self.consumers.len().min(fw::MAX_CONSUMERS),
            ..Default::default()
        };
        for (dst, c) in o.consumers.iter_mut().zip(&self.consumers) {
            *dst = fw::ConsumerObs {
                requests: c.requests,
                grants: c.grants,
                stall_cycles: c.stall_cycles,
                faults: c.faults,
                pages: c.pages,
                hist: c.hist,
            };
        }
        o
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Read {
    SnapWord(u32),
    SnapCycle,
    /// Poll STATUS until the running command is done.
    Status,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum RegOp {
    Write(u32, u32),
    Read(u32, Read),
}

/// The requests offered this cycle, per consumer: (virtual word, write data
/// or `None` for a read).
pub type Offers = [Option<(u32, Option<u32>)>; m::CONSUMERS];

/// The pool.
pub struct Pool {
    backend: Backend,
    /// The first failed register access on a card (reported by the next
    /// drain; what was queued after it is dropped).
    fault: Option<weft_driver::Error>,
    names: Vec<String>,
    limits: Vec<(u32, u32)>,
    ops: VecDeque<RegOp>,
    raw: Vec<u32>,
    raw_prev: Vec<u32>,
    acc: Vec<u64>,
    snap_cycle: Option<u32>,
    cycle_acc: u64,
    cycle_prev: u32,
    ready: Option<Snapshot>,
    status: Option<u32>,
    cycle: u64,
}

impl Pool {
    /// The standalone pool on `dut` (a fresh block) whose consumer ports
    /// carry `names`.
    pub fn new(dut: Block, names: Vec<String>) -> Result<Self, AvmError> {
        Self::with_backend(Backend::Block(dut), names)
    }

    /// The pool inside `card`; its consumers (MemOps' destinations 0 to 3)
    /// are `port0` to `port3`. Reads the card's quotas and reservations,
    /// so range checks start from what the card holds.
    pub fn on_card(card: &Card) -> Result<Self, AvmError> {
        let names = (0..m::CONSUMERS).map(|c| format!("port{c}")).collect();
        let mut p = Self::with_backend(Backend::Card(card.regs_arc()), names)?;
        for c in 0..m::CONSUMERS {
            let v = card
                .regs()
                .read32(regs::GROUPS[c][2].addr)
                .map_err(AvmError::Device)?;
            p.limits[c] = (v & 0xff, v >> 8 & 0xff);
        }
        Ok(p)
    }

    fn with_backend(backend: Backend, names: Vec<String>) -> Result<Self, AvmError> {
        if names.is_empty() || names.len() > m::CONSUMERS {
            return Err(AvmError::Config(format!(
                "the pool has {} consumer ports; {} consumers given",
                m::CONSUMERS,
                names.len()
            )));
        }
        for (i, n) in names.iter().enumerate() {
            if n.is_empty() || names[..i].contains(n) {
                return Err(AvmError::Config(format!(
                    "consumer names must be unique and non-empty: {n:?}"
                )));
            }
        }
        let words = regs::SNAP_WORDS as usize;
        Ok(Self {
            backend,
            fault: None,
            limits: vec![(0, 0); names.len()],
            names,
            ops: VecDeque::new(),
            raw: vec![0; words],
            raw_prev: vec![0; words],
            acc: vec![0; words],
            snap_cycle: None,
            cycle_acc: 0,
            cycle_prev: 0,
            ready: None,
            status: None,
            cycle: 0,
        })
    }

    /// Consumer names, by port.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The port of consumer `name`.
    pub fn consumer(&self, name: &str) -> Result<usize, AvmError> {
        self.names
            .iter()
            .position(|n| n == name)
            .ok_or_else(|| AvmError::UnknownConsumer {
                name: name.into(),
                known: self.names.join(", "),
            })
    }

    /// Cycles run.
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// No register operation is queued.
    pub fn idle(&self) -> bool {
        self.ops.is_empty()
    }

    /// Whether this is the pool inside a card.
    pub fn on_a_card(&self) -> bool {
        matches!(self.backend, Backend::Card(_))
    }

    /// One cycle: `offers` on the consumer ports and the next queued
    /// register operation. Returns the block's outputs. On a card, one
    /// register access (the card's clock runs on its own) and no offers:
    /// its consumers' requests come through MemOps.
    pub fn tick(&mut self, offers: &Offers) -> AvmOut {
        let dut = match &mut self.backend {
            Backend::Block(dut) => dut,
            Backend::Card(dev) => {
                let op = self.ops.pop_front();
                let r = match op {
                    Some(RegOp::Write(a, d)) => dev.write32(a, d).map(|_| 0),
                    Some(RegOp::Read(a, _)) => dev.read32(a),
                    None => Ok(0),
                };
                self.cycle += 1;
                match (r, op) {
                    (Ok(v), Some(RegOp::Read(_, what))) => self.complete(what, v),
                    (Ok(_), _) => {}
                    (Err(e), _) => {
                        self.fault.get_or_insert(e);
                        self.ops.clear();
                    }
                }
                return AvmOut::default();
            }
        };
        let mut i = AvmIn::default();
        for (c, o) in offers.iter().enumerate() {
            if let Some((addr, write)) = *o {
                i.req_valid |= 1 << c;
                i.req_addr |=
                    u64::from(addr & ((1 << m::VADDR_BITS) - 1)) << (m::VADDR_BITS as usize * c);
                if let Some(d) = write {
                    i.req_write |= 1 << c;
                    i.req_wdata[c] = d;
                }
            }
        }
        let op = self.ops.pop_front();
        match op {
            Some(RegOp::Write(addr, data)) => {
                i.eng_we = true;
                i.eng_waddr = (addr >> 2) as u16;
                i.eng_wdata = data;
                i.eng_wstrb = 0xf;
            }
            Some(RegOp::Read(addr, _)) => {
                i.eng_re = true;
                i.eng_raddr = (addr >> 2) as u16;
            }
            None => {}
        }
        let o = dut.eval(&i);
        dut.tick();
        self.cycle += 1;
        if let Some(RegOp::Read(_, what)) = op {
            self.complete(what, o.eng_rdata);
        }
        o
    }

    fn complete(&mut self, what: Read, v: u32) {
        match what {
            Read::SnapWord(k) => self.raw[k as usize] = v,
            Read::SnapCycle => {
                self.snap_cycle = Some(v);
                self.finish_snapshot();
            }
            Read::Status => {
                if v & 1 != 0 {
                    self.ops
                        .push_front(RegOp::Read(regs::STATUS.addr, Read::Status));
                } else {
                    self.status = Some(v);
                }
            }
        }
    }

    fn finish_snapshot(&mut self) {
        let per = regs::SNAP_PER_CONSUMER as usize;
        for k in 0..self.raw.len() {
            // Counters are 32-bit and wrap: extend by the wrapping difference.
            let d = self.raw[k].wrapping_sub(self.raw_prev[k]);
            self.acc[k] = self.acc[k].wrapping_add(d as u64);
        }
        self.raw_prev.clone_from(&self.raw);
        let c = self.snap_cycle.unwrap_or(0);
        self.cycle_acc += c.wrapping_sub(self.cycle_prev) as u64;
        self.cycle_prev = c;
        let consumers = self
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let w = &self.acc[i * per..(i + 1) * per];
                ConsumerStats {
                    name: name.clone(),
                    requests: w[0],
                    grants: w[1],
                    stall_cycles: w[2],
                    faults: w[3],
                    pages: self.raw[regs::SNAP_PAGES as usize + i],
                    hist: std::array::from_fn(|b| w[4 + b]),
                }
            })
            .collect();
        self.ready = Some(Snapshot {
            cycle: self.cycle_acc,
            consumers,
        });
    }

    /// Queue a snapshot: its registers are read over the next
    /// [`regs::SNAP_WORDS`] + 2 cycles; [`Pool::take_snapshot`] returns it.
    pub fn queue_observe(&mut self) {
        self.ops.push_back(RegOp::Write(regs::SNAP.addr, 1));
        for k in 0..regs::SNAP_WORDS {
            self.ops
                .push_back(RegOp::Read(regs::SNAP_DATA.addr, Read::SnapWord(k)));
        }
        self.ops
            .push_back(RegOp::Read(regs::SNAP_CYCLE.addr, Read::SnapCycle));
    }

    /// The snapshot queued last, once read.
    pub fn take_snapshot(&mut self) -> Option<Snapshot> {
        self.ready.take()
    }

    /// Queue the arbitration mode.
    pub fn queue_mode(&mut self, a: Arbitration) {
        self.ops.push_back(RegOp::Write(
            regs::CTRL.addr,
            u32::from(a == Arbitration::Managed),
        ));
    }

    /// Queue an action on consumer `c`, checked against the register's range.
    pub fn queue_act(&mut self, c: usize, act: Act) -> Result<(), AvmError> {
        let name = self
            .names
            .get(c)
            .ok_or_else(|| AvmError::Config(format!("no consumer port {c}")))?
            .clone();
        let bad = |what: &str, v: u32, max: u32| AvmError::OutOfRange {
            consumer: name.clone(),
            what: what.into(),
            value: v,
            max,
        };
        let g = &regs::GROUPS[c];
        let (quota, reserve) = self.limits[c];
        match act {
            Act::Weight(w) if w <= 255 => self.ops.push_back(RegOp::Write(g[0].addr, w)),
            Act::Weight(w) => return Err(bad("weight", w, 255)),
            Act::Priority(p) if p <= 3 => self.ops.push_back(RegOp::Write(g[1].addr, p)),
            Act::Priority(p) => return Err(bad("priority", p, 3)),
            Act::Quota(q) if q as usize <= m::PAGES && q >= reserve => {
                self.limits[c].0 = q;
                self.ops
                    .push_back(RegOp::Write(g[2].addr, q | reserve << 8));
            }
            Act::Quota(q) => {
                return Err(AvmError::Limits {
                    consumer: name,
                    quota: q,
                    reserve,
                })
            }
            Act::Reserve(r) if r <= quota => {
                self.limits[c].1 = r;
                self.ops.push_back(RegOp::Write(g[2].addr, quota | r << 8));
            }
            Act::Reserve(r) => {
                return Err(AvmError::Limits {
                    consumer: name,
                    quota,
                    reserve: r,
                })
            }
            Act::Reclaim(n) if n <= 255 => self.queue_command(m::op::RECLAIM, c, n),
            Act::Reclaim(n) => return Err(bad("reclaim", n, 255)),
            Act::Grant(v) if (v as usize) < m::VPAGES => self.queue_command(m::op::GRANT, c, v),
            Act::Grant(v) => return Err(bad("virtual page", v, m::VPAGES as u32 - 1)),
        }
        Ok(())
    }

    fn queue_command(&mut self, op: u32, c: usize, arg: u32) {
        self.status = None;
        self.ops
            .push_back(RegOp::Write(regs::CMD.addr, m::cmd_word(op, c, arg)));
        self.ops
            .push_back(RegOp::Read(regs::STATUS.addr, Read::Status));
    }

    /// Queue a firmware policy's action.
    pub fn queue_policy_action(&mut self, a: fw::Action) -> Result<(), AvmError> {
        match a {
            fw::Action::SetWeight { consumer, weight } => {
                self.queue_act(consumer, Act::Weight(weight))
            }
            fw::Action::SetPriority { consumer, priority } => {
                self.queue_act(consumer, Act::Priority(priority))
            }
            fw::Action::SetQuota { consumer, pages } => self.queue_act(consumer, Act::Quota(pages)),
        }
    }

    /// Run idle cycles (no traffic) until every queued operation is done;
    /// on a card, fails on the first register access that failed.
    pub fn drain(&mut self) -> Result<(), AvmError> {
        let none: Offers = [None; m::CONSUMERS];
        let mut n = 0u64;
        while !self.idle() {
            self.tick(&none);
            n += 1;
            if self.on_a_card() && n > CARD_OP_LIMIT {
                self.ops.clear();
                return Err(AvmError::Hung(n));
            }
        }
        match self.fault.take() {
            Some(e) => Err(AvmError::Device(e)),
            None => Ok(()),
        }
    }

    /// Take a snapshot now (idle cycles until it is read).
    pub fn observe(&mut self) -> Result<Snapshot, AvmError> {
        self.queue_observe();
        self.drain()?;
        Ok(self.take_snapshot().unwrap_or_default())
    }

    /// Apply an action now and wait for it; allocation commands report
    /// what they did or why they were refused.
    pub fn act(&mut self, consumer: &str, act: Act) -> Result<Outcome, AvmError> {
        let c = self.consumer(consumer)?;
        self.queue_act(c, act)?;
        self.drain()?;
        match act {
            Act::Grant(_) | Act::Reclaim(_) => {
                let s = self.status.take().ok_or_else(|| AvmError::NoStatus {
                    consumer: consumer.into(),
                })?;
                let r = CmdResult::from_code((s >> 4) & 7);
                match r {
                    Some(CmdResult::Ok) => Ok(Outcome {
                        page: matches!(act, Act::Grant(_)).then_some((s >> 8) & 0xff),
                        taken: matches!(act, Act::Reclaim(_)).then_some(s >> 16),
                    }),
                    _ => Err(AvmError::Refused {
                        consumer: consumer.into(),
                        why: match r {
                            Some(CmdResult::Quota) => "it holds its quota already".into(),
                            Some(CmdResult::Full) => "no free physical page".into(),
                            Some(CmdResult::Page) => "that virtual page is mapped already".into(),
                            other => format!("status {other:?}"),
                        },
                    }),
                }
            }
            _ => Ok(Outcome {
                page: None,
                taken: None,
            }),
        }
    }
}
