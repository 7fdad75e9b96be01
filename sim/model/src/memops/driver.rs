//! Ports of the `memops` block and a driver that installs a program, plays
//! requests with seeded bubbles, and plays the accelerator memories on the
//! destination ports (with per-destination back-pressure and completion
//! delays), then reads the telemetry.

use super::model::Endpoint;
use super::program::IMAGE_WORDS;
use super::{Completion, Issued, Op, Request, Status, PORTS, STAGES};
use crate::dut::Driver;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use weft_regs::memops as regs;

crate::ports! {
    /// Inputs of the MemOps port.
    pub struct MemIn {
        /// Request valid.
        pub req_valid: bool = 1,
        /// Request source.
        pub req_src: u8 = 2,
        /// Request opcode.
        pub req_op: u8 = 2,
        /// Request address low.
        pub req_al: u32 = 32,
        /// Request address high.
        pub req_ah: u32 = 32,
        /// Request length.
        pub req_len: u8 = 4,
        /// Request tag.
        pub req_tag: u8 = 8,
        /// Request data low.
        pub req_dl: u32 = 32,
        /// Request data high.
        pub req_dh: u32 = 32,
        /// Per destination port: it takes an issued request.
        pub out_ready: u8 = 4,
        /// Destination completion valid.
        pub cin_valid: bool = 1,
        /// Destination completion switch tag.
        pub cin_stag: u8 = 4,
        /// Destination completion status.
        pub cin_status: u8 = 2,
        /// Destination completion data low.
        pub cin_dl: u32 = 32,
        /// Destination completion data high.
        pub cin_dh: u32 = 32,
        /// Requester takes the completion.
        pub cout_ready: bool = 1,
        /// Telemetry port takes the mirrored header.
        pub mir_ready: bool = 1,
        /// Engine register read address.
        pub eng_raddr: u16 = 14,
        /// Engine register read accepted.
        pub eng_re: bool = 1,
        /// Engine register write address.
        pub eng_waddr: u16 = 14,
        /// Engine register write data.
        pub eng_wdata: u32 = 32,
        /// Engine register write strobes.
        pub eng_wstrb: u8 = 4,
        /// Engine register write enable.
        pub eng_we: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the MemOps port.
    pub struct MemOut {
        /// Request taken.
        pub req_ready: bool = 1,
        /// Issued request valid.
        pub out_valid: bool = 1,
        /// Destination.
        pub out_dst: u8 = 2,
        /// Opcode.
        pub out_op: u8 = 2,
        /// Address low.
        pub out_al: u32 = 32,
        /// Address high.
        pub out_ah: u32 = 32,
        /// Length.
        pub out_len: u8 = 4,
        /// Switch tag.
        pub out_stag: u8 = 4,
        /// Data low.
        pub out_dl: u32 = 32,
        /// Data high.
        pub out_dh: u32 = 32,
        /// Destination completion taken.
        pub cin_ready: bool = 1,
        /// Completion valid.
        pub cout_valid: bool = 1,
        /// Requester.
        pub cout_dst: u8 = 2,
        /// Requester tag.
        pub cout_tag: u8 = 8,
        /// Status.
        pub cout_status: u8 = 2,
        /// Data low.
        pub cout_dl: u32 = 32,
        /// Data high.
        pub cout_dh: u32 = 32,
        /// Mirrored header valid.
        pub mir_valid: bool = 1,
        /// Mirrored source.
        pub mir_src: u8 = 2,
        /// Mirrored opcode.
        pub mir_op: u8 = 2,
        /// Mirrored address low.
        pub mir_al: u32 = 32,
        /// Mirrored address high.
        pub mir_ah: u32 = 32,
        /// Mirrored length.
        pub mir_len: u8 = 4,
        /// Mirrored tag.
        pub mir_tag: u8 = 8,
        /// Engine register read data.
        pub eng_rdata: u32 = 32,
    }
}

/// Random timing of the driver and the memories.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct MemTiming {
    /// Probability that the next request is held back one more cycle.
    pub bubble: f64,
    /// Per destination: probability that it refuses a request on a cycle.
    pub dst_stall: [f64; PORTS],
    /// Most cycles a memory takes to complete (uniform 1..=this).
    pub max_delay: u32,
    /// Probability that the requesters refuse a completion on a cycle.
    pub cpl_stall: f64,
    /// Probability that the telemetry port is busy on a cycle.
    pub mir_stall: f64,
}

impl MemTiming {
    /// Everything ready, memories answer next cycle.
    pub const FAST: MemTiming = MemTiming {
        bubble: 0.0,
        dst_stall: [0.0; PORTS],
        max_delay: 1,
        cpl_stall: 0.0,
        mir_stall: 0.0,
    };
}

/// Telemetry counters of a port with `stages` stages, in `TEL_SEL` order:
/// per stage transactions, per stage bytes, then issued, blocked, denied,
/// errors, mirrored, mirror drops.
pub const fn tel_counters(stages: usize) -> usize {
    2 * stages + 6
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Install(usize),
    Run,
    Telemetry(usize, bool),
    Done,
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemRun {
    /// Requests issued, in order.
    pub issued: Vec<Issued>,
    /// Completions received, in arrival order.
    pub completions: Vec<Completion>,
    /// Mirrored headers received.
    pub mirrored: Vec<Request>,
    /// Telemetry, `TEL_SEL` order.
    pub telemetry: Vec<u64>,
    /// Outstanding requests at the end (must be 0).
    pub outstanding: u32,
    /// Memories at the end.
    pub endpoints: Vec<Endpoint>,
    /// Cycle each request was accepted.
    pub accepted_at: Vec<u64>,
    /// Cycle each issued request left the port.
    pub issued_at: Vec<u64>,
    /// Cycles on which the port held its input off (`req_ready` low: its
    /// one pipeline enable was low, so nothing in it moved).
    pub held: Vec<u64>,
    /// Cycles simulated.
    pub cycles: u64,
    /// Completions with an undecodable status.
    pub bad_completions: u64,
}

/// The driver.
pub struct MemopsDriver {
    image: Vec<u32>,
    reqs: Vec<Request>,
    next: usize,
    shown: bool,
    rng: ChaCha8Rng,
    timing: MemTiming,
    phase: Phase,
    /// Completions scheduled by the memories: (ready cycle, stag, data).
    pending: Vec<VecDeque<(u64, u8, u64)>>,
    rr: usize,
    tel: usize,
    offered: Option<usize>,
    cycle: u64,
    last: Option<MemIn>,
    /// What came out.
    pub run: MemRun,
}

impl MemopsDriver {
    /// Install `image` on a port of `stages` stages, then play `reqs`.
    pub fn new(
        image: Vec<u32>,
        stages: usize,
        reqs: Vec<Request>,
        timing: MemTiming,
        seed: u64,
    ) -> Self {
        Self {
            image,
            reqs,
            next: 0,
            shown: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            timing,
            phase: Phase::Install(0),
            pending: vec![VecDeque::new(); PORTS],
            rr: 0,
            tel: tel_counters(stages.min(STAGES)),
            offered: None,
            cycle: 0,
            last: None,
            run: MemRun {
                endpoints: vec![Endpoint::default(); PORTS],
                ..Default::default()
            },
        }
    }

    fn write(i: &mut MemIn, addr: u32, data: u32) {
        i.eng_we = true;
        i.eng_waddr = (addr >> 2) as u16;
        i.eng_wdata = data;
        i.eng_wstrb = 0xf;
    }

    /// The destination completion offered this cycle, if any: round-robin
    /// over the memories whose oldest completion is due.
    fn due(&self) -> Option<usize> {
        (0..PORTS)
            .map(|k| (self.rr + k) % PORTS)
            .find(|&d| self.pending[d].front().is_some_and(|p| p.0 <= self.cycle))
    }
}

impl Driver<MemIn, MemOut> for MemopsDriver {
    fn drive(&mut self) -> MemIn {
        let mut i = MemIn {
            cout_ready: !self.rng.gen_bool(self.timing.cpl_stall.clamp(0.0, 1.0)),
            mir_ready: !self.rng.gen_bool(self.timing.mir_stall.clamp(0.0, 1.0)),
            ..Default::default()
        };
        match self.phase {
            // Disable, point at word 0, write every word, enable.
            Phase::Install(k) => {
                if k == 0 {
                    Self::write(&mut i, regs::CTRL.addr, 0);
                } else if k == 1 {
                    Self::write(&mut i, regs::PROG_ADDR.addr, 0);
                } else if k < 2 + IMAGE_WORDS {
                    Self::write(&mut i, regs::PROG_DATA.addr, self.image[k - 2]);
                } else {
                    Self::write(&mut i, regs::CTRL.addr, 1);
                }
            }
            Phase::Run => {
                if let Some(r) = self.reqs.get(self.next) {
                    if !self.shown {
                        self.shown = !self.rng.gen_bool(self.timing.bubble.clamp(0.0, 1.0));
                    }
                    if self.shown {
                        i.req_valid = true;
                        i.req_src = r.src;
                        i.req_op = r.op as u8;
                        i.req_al = r.addr as u32;
                        i.req_ah = (r.addr >> 32) as u32;
                        i.req_len = r.len;
                        i.req_tag = r.tag;
                        i.req_dl = r.data as u32;
                        i.req_dh = (r.data >> 32) as u32;
                    }
                }
            }
            Phase::Telemetry(k, false) => Self::write(&mut i, regs::TEL_SEL.addr, k as u32),
            Phase::Telemetry(k, true) => {
                // LO then HI of counter k; the OUTSTANDING read comes last.
                i.eng_re = true;
                i.eng_raddr = if k == 2 * self.tel {
                    (regs::OUTSTANDING.addr >> 2) as u16
                } else if k % 2 == 0 {
                    (regs::TEL_LO.addr >> 2) as u16
                } else {
                    (regs::TEL_HI.addr >> 2) as u16
                };
            }
            Phase::Done => {}
        }
        // Destinations: each memory refuses requests on its stalled cycles.
        for d in 0..PORTS {
            if !self.rng.gen_bool(self.timing.dst_stall[d].clamp(0.0, 1.0)) {
                i.out_ready |= 1 << d;
            }
        }
        self.offered = self.due();
        if let Some(d) = self.offered {
            let (_, stag, data) = self.pending[d][0];
            i.cin_valid = true;
            i.cin_stag = stag;
            i.cin_dl = data as u32;
            i.cin_dh = (data >> 32) as u32;
        }
        self.last = Some(i.clone());
        i
    }

    fn observe(&mut self, _inputs: &MemIn, o: &MemOut) {
        let i = self.last.take().unwrap_or_default();
        let stalled = i.out_ready & (1 << (o.out_dst as usize % PORTS)) == 0;
        if !o.req_ready {
            self.run.held.push(self.cycle);
        }
        self.cycle += 1;
        self.run.cycles = self.cycle;
        // Completions into the port.
        if let Some(d) = self.offered {
            if o.cin_ready {
                self.pending[d].pop_front();
                self.rr = (d + 1) % PORTS;
            }
        }
        if o.out_valid && !stalled {
            let op = Op::from_code(o.out_op).unwrap_or(Op::Read);
            let req = Request {
                src: 0,
                op,
                addr: o.out_al as u64 | (o.out_ah as u64) << 32,
                len: o.out_len,
                tag: 0,
                data: o.out_dl as u64 | (o.out_dh as u64) << 32,
            };
            let d = o.out_dst as usize % PORTS;
            let data = self.run.endpoints[d].execute(&req);
            let delay = self.rng.gen_range(1..=self.timing.max_delay.max(1)) as u64;
            let ready = self.pending[d]
                .back()
                .map_or(0, |p| p.0)
                .max(self.cycle + delay);
            self.pending[d].push_back((ready, o.out_stag, data));
            self.run.issued.push(Issued { dst: d as u8, req });
            self.run.issued_at.push(self.cycle - 1);
        }
        if o.cout_valid && i.cout_ready {
            match Status::from_code(o.cout_status) {
                Some(status) => self.run.completions.push(Completion {
                    dst: o.cout_dst,
                    tag: o.cout_tag,
                    status,
                    data: o.cout_dl as u64 | (o.cout_dh as u64) << 32,
                }),
                None => self.run.bad_completions += 1,
            }
        }
        if o.mir_valid && i.mir_ready {
            self.run.mirrored.push(Request {
                src: o.mir_src,
                op: Op::from_code(o.mir_op).unwrap_or(Op::Read),
                addr: o.mir_al as u64 | (o.mir_ah as u64) << 32,
                len: o.mir_len,
                tag: o.mir_tag,
                data: 0,
            });
        }
        self.phase = match self.phase.clone() {
            Phase::Install(k) if k < 2 + IMAGE_WORDS => Phase::Install(k + 1),
            Phase::Install(_) => Phase::Run,
            Phase::Run => {
                if i.req_valid && o.req_ready && self.next < self.reqs.len() {
                    self.run.accepted_at.push(self.cycle - 1);
                    self.next += 1;
                    self.shown = false;
                }
                if self.next == self.reqs.len() && self.run.completions.len() == self.reqs.len() {
                    Phase::Telemetry(0, false)
                } else {
                    Phase::Run
                }
            }
            Phase::Telemetry(k, false) => Phase::Telemetry(2 * k, true),
            Phase::Telemetry(k, true) => {
                if k == 2 * self.tel {
                    self.run.outstanding = o.eng_rdata;
                    Phase::Done
                } else {
                    if k % 2 == 0 {
                        self.run.telemetry.push(o.eng_rdata as u64);
                        Phase::Telemetry(k + 1, true)
                    } else {
                        if let Some(lo) = self.run.telemetry.last_mut() {
                            *lo |= (o.eng_rdata as u64) << 32;
                        }
                        if k + 1 == 2 * self.tel {
                            Phase::Telemetry(k + 1, true)
                        } else {
                            Phase::Telemetry(k.div_ceil(2), false)
                        }
                    }
                }
            }
            Phase::Done => Phase::Done,
        };
    }

    fn finished(&self) -> bool {
        self.phase == Phase::Done
    }
}

/// The order docs/memops.md promises, checked on the completions as they
/// arrived (unsorted): per requester and destination — or per requester
/// among the requests the port completes itself (denied, unrouted) — in
/// request order. Completions are matched to requests by (requester, tag);
/// tags must be unique per requester among the requests given.
pub fn completion_order(
    prog: &super::Program,
    reqs: &[Request],
    got: &[Completion],
) -> Result<(), String> {
    use std::collections::HashMap;
    let mut m = super::model::MemopsModel::new(prog.clone());
    let dest: Vec<Option<u8>> = reqs
        .iter()
        .map(|r| match m.process(r).0 {
            super::model::Outcome::Issue(i) => Some(i.dst),
            super::model::Outcome::Complete(_) => None,
        })
        .collect();
    let mut by_tag: HashMap<(u8, u8), VecDeque<usize>> = HashMap::new();
    for (i, r) in reqs.iter().enumerate() {
        by_tag.entry((r.src, r.tag)).or_default().push_back(i);
    }
    let mut last: HashMap<(u8, Option<u8>), usize> = HashMap::new();
    for (n, c) in got.iter().enumerate() {
        let Some(i) = by_tag.get_mut(&(c.dst, c.tag)).and_then(|q| q.pop_front()) else {
            return Err(format!(
                "completion #{n} (requester {} tag {}) answers no outstanding request",
                c.dst, c.tag
            ));
        };
        let key = (c.dst, dest[i]);
        if let Some(&prev) = last.get(&key) {
            if i < prev {
                return Err(format!(
                    "completion #{n}: request {i} (requester {}, {}) completed after request {prev} of the same pair",
                    c.dst,
                    match dest[i] {
                        Some(d) => format!("destination {d}"),
                        None => "completed by the port".to_string(),
                    }
                ));
            }
        }
        last.insert(key, i);
    }
    Ok(())
}

/// Check a run of `reqs` on a port of `k` stages against the model's
/// prediction and the safety property: issued requests in order, the
/// completions (every one to its requester with its tag, in the order
/// [`completion_order`] checks), telemetry, the
/// mirrored headers (a subsequence; the rest counted as dropped), nothing
/// outstanding, the final memories, and no byte written outside a
/// write-permitted range of its destination.
pub fn check_run(
    prog: &super::Program,
    k: usize,
    reqs: &[Request],
    got: &MemRun,
) -> Result<(), String> {
    let want = super::predict(prog, reqs);
    let norm = |i: &Issued| (i.dst, i.req.op, i.req.addr, i.req.len, i.req.data);
    let gi: Vec<_> = got.issued.iter().map(norm).collect();
    let wi: Vec<_> = want.issued.iter().map(norm).collect();
    if gi != wi {
        let at = gi
            .iter()
            .zip(&wi)
            .position(|(a, b)| a != b)
            .unwrap_or(gi.len().min(wi.len()));
        return Err(format!(
            "issued requests differ at #{at}: port {:x?}, model {:x?}",
            gi.get(at),
            wi.get(at)
        ));
    }
    let (mut gc, mut wc) = (got.completions.clone(), want.completions.clone());
    gc.sort();
    wc.sort();
    if gc != wc || got.bad_completions != 0 {
        let at = gc
            .iter()
            .zip(&wc)
            .position(|(a, b)| a != b)
            .unwrap_or(gc.len().min(wc.len()));
        return Err(format!(
            "completions differ: port {:x?}, model {:x?}",
            gc.get(at),
            wc.get(at)
        ));
    }
    completion_order(prog, reqs, &got.completions)?;
    if got.endpoints != want.endpoints {
        return Err("final memories differ from the model's".into());
    }
    let k = k.min(STAGES);
    let wt = &want.telemetry;
    let mut expect: Vec<u64> = wt.tx[..k].to_vec();
    expect.extend(&wt.bytes[..k]);
    expect.extend([wt.issued, wt.blocked, wt.denied, wt.errors, wt.mirrored]);
    let n = tel_counters(k);
    if got.telemetry.len() != n || got.telemetry[..n - 1] != expect[..] {
        return Err(format!(
            "telemetry differs: port {:?}, model {expect:?}",
            got.telemetry
        ));
    }
    let drops = got.telemetry[n - 1];
    let mut it = want.mirrored.iter();
    let subseq = got
        .mirrored
        .iter()
        .all(|m| it.any(|w| Request { data: 0, ..*w } == *m));
    if !subseq || got.mirrored.len() as u64 + drops != wt.mirrored {
        return Err(format!(
            "mirror: {} received and {drops} dropped of {} mirrored",
            got.mirrored.len(),
            wt.mirrored
        ));
    }
    if got.outstanding != 0 {
        return Err(format!(
            "{} requests outstanding at the end",
            got.outstanding
        ));
    }
    for (d, mem) in got.endpoints.iter().enumerate() {
        for (a, _) in mem.bytes() {
            let ok = prog
                .protect
                .get(d)
                .is_some_and(|rs| rs.iter().any(|r| r.write && r.lo <= a && a <= r.hi));
            if !ok {
                return Err(format!(
                    "destination {d}: byte {a:#x} written outside its permitted ranges"
                ));
            }
        }
    }
    Ok(())
}

/// The port's latency on a run of `reqs` through a port of `k` stages:
/// every issued request leaves `k + 1` cycles after it was accepted plus
/// one for every cycle in between on which the port held its input off
/// (its one enable low, `MemRun::held`) — so exactly `k + 1` when nothing
/// stalled it. Issued requests are matched to requests in order (the
/// pipeline keeps it), those the model issues. Returns how many issued
/// requests were never held.
pub fn check_latency(
    prog: &super::Program,
    k: usize,
    reqs: &[Request],
    got: &MemRun,
) -> Result<usize, String> {
    let mut m = super::model::MemopsModel::new(prog.clone());
    let issuing: Vec<usize> = reqs
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(m.process(r).0, super::model::Outcome::Issue(_)))
        .map(|(i, _)| i)
        .collect();
    if issuing.len() != got.issued_at.len() || got.accepted_at.len() != reqs.len() {
        return Err(format!(
            "{} of {} requests accepted, {} issued; the model issues {}",
            got.accepted_at.len(),
            reqs.len(),
            got.issued_at.len(),
            issuing.len()
        ));
    }
    let mut unheld = 0;
    for (&i, &out) in issuing.iter().zip(&got.issued_at) {
        let acc = got.accepted_at[i];
        let held = got
            .held
            .partition_point(|&c| c < out)
            .saturating_sub(got.held.partition_point(|&c| c <= acc)) as u64;
        if out != acc + k as u64 + 1 + held {
            return Err(format!(
                "request {i}: accepted on cycle {acc}, issued on {out}, held {held} cycles \
                 between: latency {} where {} + {held} was due",
                out as i64 - acc as i64,
                k + 1
            ));
        }
        unheld += usize::from(held == 0);
    }
    Ok(unheld)
}
