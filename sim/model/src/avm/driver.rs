//! A driver for the `avm` block: consumers offering seeded random traffic
//! while a control script writes registers, runs allocation commands and
//! takes snapshots; then the traffic drains and a final snapshot is read.
//! [`check_run`] checks what came out against properties that hold
//! whatever the arbitration did: isolation (a consumer only ever reads back
//! its own data), and counters and histograms equal to what the consumers
//! saw.

use super::*;
use crate::dut::Driver;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use weft_regs::avm as regs;

/// One step of the control script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Write a register (byte address from the map), all strobes.
    Write(u32, u32),
    /// Write `CMD` and, from the next cycle, poll `STATUS` until the command
    /// is done; the status is recorded.
    Command(u32),
    /// Let the traffic run this many cycles.
    Run(u32),
    /// Write `SNAP`, then read every snapshot word and `SNAP_CYCLE`.
    Snapshot,
}

/// How each consumer offers requests.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Traffic {
    /// Per consumer: probability of offering a new request on a cycle.
    pub rate: [f64; CONSUMERS],
    /// Probability that a request writes.
    pub write: f64,
    /// Per consumer: virtual pages it addresses (bit v: page v); empty
    /// means every page, mapped or not.
    pub vpages: [u8; CONSUMERS],
}

/// A response as a consumer saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Consumer.
    pub consumer: usize,
    /// Virtual word address.
    pub addr: u32,
    /// The request wrote.
    pub write: bool,
    /// Read data.
    pub data: u32,
    /// Refused.
    pub fault: bool,
    /// Cycles from the request being taken to its response.
    pub latency: u32,
}

/// What a run produced.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AvmRun {
    /// Responses in arrival order.
    pub responses: Vec<Seen>,
    /// Requests each consumer had taken.
    pub taken: [u64; CONSUMERS],
    /// Reclaim notifications (consumer, virtual page), in order.
    pub reclaimed: Vec<(usize, usize)>,
    /// `STATUS` after each [`Op::Command`].
    pub statuses: Vec<u32>,
    /// Each snapshot: its words, then `SNAP_CYCLE`.
    pub snapshots: Vec<Vec<u32>>,
    /// Cycles run.
    pub cycles: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Script,
    Poll,
    Snap(u32),
    Drain,
    Final,
    Done,
}

/// The driver.
pub struct AvmDriver {
    script: VecDeque<Op>,
    traffic: Traffic,
    rng: ChaCha8Rng,
    phase: Phase,
    run_left: u32,
    /// Per consumer: the request on offer (addr, write, data).
    offer: [Option<(u32, bool, u32)>; CONSUMERS],
    /// Per consumer: taken requests awaiting their response (addr, write, cycle).
    inflight: [VecDeque<(u32, bool, u64)>; CONSUMERS],
    seq: u32,
    snap: Vec<u32>,
    final_snap: bool,
    cycle: u64,
    /// What came out.
    pub run: AvmRun,
}

impl AvmDriver {
    /// Play `script` with `traffic` running until the script ends.
    pub fn new(script: Vec<Op>, traffic: Traffic, seed: u64) -> Self {
        Self {
            script: script.into(),
            traffic,
            rng: ChaCha8Rng::seed_from_u64(seed),
            phase: Phase::Script,
            run_left: 0,
            offer: [None; CONSUMERS],
            inflight: Default::default(),
            seq: 0,
            snap: vec![],
            final_snap: false,
            cycle: 0,
            run: AvmRun::default(),
        }
    }

    fn traffic_on(&self) -> bool {
        !self.final_snap && matches!(self.phase, Phase::Script | Phase::Poll | Phase::Snap(_))
    }

    fn read(i: &mut AvmIn, r: &weft_regs::Register) {
        i.eng_raddr = (r.addr >> 2) as u16;
        i.eng_re = true;
    }

    fn write(i: &mut AvmIn, addr: u32, data: u32) {
        i.eng_we = true;
        i.eng_waddr = (addr >> 2) as u16;
        i.eng_wdata = data;
        i.eng_wstrb = 0xf;
    }

    fn new_offer(&mut self, c: usize) -> (u32, bool, u32) {
        let mask = self.traffic.vpages[c];
        let v = if mask == 0 {
            self.rng.gen_range(0..VPAGES as u32)
        } else {
            let pages: Vec<u32> = (0..VPAGES as u32)
                .filter(|v| mask & (1 << v) != 0)
                .collect();
            pages[self.rng.gen_range(0..pages.len())]
        };
        let addr = (v << OFFSET_BITS) | self.rng.gen_range(0..PAGE_WORDS as u32);
        let write = self.rng.gen_bool(self.traffic.write.clamp(0.0, 1.0));
        self.seq = self.seq.wrapping_add(1);
        // The top nibble names the writer: isolation is checked on it.
        let data = ((c as u32 + 1) << 28) | (self.seq & 0x0fff_ffff);
        (addr, write, data)
    }
}

impl Driver<AvmIn, AvmOut> for AvmDriver {
    fn drive(&mut self) -> AvmIn {
        let mut i = AvmIn::default();
        if self.traffic_on() {
            for c in 0..CONSUMERS {
                if self.offer[c].is_none()
                    && self.rng.gen_bool(self.traffic.rate[c].clamp(0.0, 1.0))
                {
                    self.offer[c] = Some(self.new_offer(c));
                }
            }
        }
        for (c, o) in self.offer.iter().enumerate() {
            if let Some((addr, write, data)) = *o {
                i.req_valid |= 1 << c;
                i.req_write |= u8::from(write) << c;
                i.req_addr |= (addr as u64) << (VADDR_BITS as usize * c);
                i.req_wdata[c] = data;
            }
        }
        loop {
            match self.phase {
                Phase::Script if self.run_left > 0 => {}
                Phase::Script => match self.script.front().cloned() {
                    Some(Op::Write(a, d)) => Self::write(&mut i, a, d),
                    Some(Op::Command(w)) => Self::write(&mut i, regs::CMD.addr, w),
                    Some(Op::Run(n)) => {
                        self.script.pop_front();
                        self.run_left = n;
                        continue;
                    }
                    Some(Op::Snapshot) => Self::write(&mut i, regs::SNAP.addr, 1),
                    None => {
                        self.phase = Phase::Drain;
                        continue;
                    }
                },
                Phase::Poll => Self::read(&mut i, &regs::STATUS),
                Phase::Snap(k) if k < regs::SNAP_WORDS => Self::read(&mut i, &regs::SNAP_DATA),
                Phase::Snap(_) => Self::read(&mut i, &regs::SNAP_CYCLE),
                Phase::Drain => {
                    if self.offer.iter().all(Option::is_none)
                        && self.inflight.iter().all(VecDeque::is_empty)
                    {
                        self.phase = Phase::Final;
                        Self::write(&mut i, regs::SNAP.addr, 1);
                    }
                }
                Phase::Final | Phase::Done => {}
            }
            break;
        }
        i
    }

    fn observe(&mut self, i: &AvmIn, o: &AvmOut) {
        for c in 0..CONSUMERS {
            if i.req_valid & o.req_ready & (1 << c) != 0 {
                if let Some((addr, write, _)) = self.offer[c].take() {
                    self.inflight[c].push_back((addr, write, self.cycle));
                    self.run.taken[c] += 1;
                }
            }
        }
        if o.resp_valid {
            let c = o.resp_consumer as usize;
            if let Some((addr, write, at)) = self.inflight.get_mut(c).and_then(VecDeque::pop_front)
            {
                self.run.responses.push(Seen {
                    consumer: c,
                    addr,
                    write,
                    data: o.resp_data,
                    fault: o.resp_fault,
                    latency: (self.cycle - at) as u32,
                });
            }
        }
        if o.reclaim_valid {
            self.run
                .reclaimed
                .push((o.reclaim_consumer as usize, o.reclaim_vpage as usize));
        }
        match self.phase {
            Phase::Script if self.run_left > 0 => self.run_left -= 1,
            Phase::Script => match self.script.pop_front() {
                Some(Op::Command(_)) => self.phase = Phase::Poll,
                Some(Op::Snapshot) => {
                    self.snap.clear();
                    self.phase = Phase::Snap(0);
                }
                _ => {}
            },
            Phase::Poll => {
                if o.eng_rdata & 1 == 0 {
                    self.run.statuses.push(o.eng_rdata);
                    self.phase = Phase::Script;
                }
            }
            Phase::Snap(k) => {
                self.snap.push(o.eng_rdata);
                if k == regs::SNAP_WORDS {
                    self.run.snapshots.push(std::mem::take(&mut self.snap));
                    self.phase = if self.final_snap {
                        Phase::Done
                    } else {
                        Phase::Script
                    };
                } else {
                    self.phase = Phase::Snap(k + 1);
                }
            }
            Phase::Final => {
                self.snap.clear();
                self.phase = Phase::Snap(0);
                self.script.clear();
                self.run_left = 0;
                self.final_snap = true;
            }
            Phase::Drain | Phase::Done => {}
        }
        self.cycle += 1;
        self.run.cycles = self.cycle;
    }

    fn finished(&self) -> bool {
        self.phase == Phase::Done
    }
}

/// Check a finished run: every read returns 0 or data its own consumer
/// wrote (isolation), and the final snapshot's counters equal what the
/// consumers saw — requests taken, grants (= responses, as the run drained),
/// faults, every latency in its histogram bucket — and the page counts
/// `pages`. Requires a script without `CLEAR`.
pub fn check_run(run: &AvmRun, pages: Option<[u32; CONSUMERS]>) -> Result<(), String> {
    for r in &run.responses {
        let owner = r.data >> 28;
        if r.data != 0 && owner != r.consumer as u32 + 1 {
            return Err(format!(
                "isolation: consumer {} read {:#x} at {:#x}, written by consumer {}",
                r.consumer,
                r.data,
                r.addr,
                owner.wrapping_sub(1)
            ));
        }
        if r.fault && r.data != 0 {
            return Err(format!("a fault returned data {:#x}", r.data));
        }
    }
    let snap = run.snapshots.last().ok_or("no final snapshot")?;
    let per = regs::SNAP_PER_CONSUMER as usize;
    for c in 0..CONSUMERS {
        let mine: Vec<&Seen> = run.responses.iter().filter(|r| r.consumer == c).collect();
        let w = &snap[c * per..(c + 1) * per];
        let want = [
            run.taken[c] as u32,
            mine.len() as u32,
            w[2],
            mine.iter().filter(|r| r.fault).count() as u32,
        ];
        if w[..4] != want {
            return Err(format!(
                "consumer {c}: counters (requests, grants, stalls, faults) {:?}, the consumer saw {want:?}",
                &w[..4]
            ));
        }
        let mut hist = [0u32; BUCKETS];
        for r in &mine {
            hist[bucket(r.latency)] += 1;
        }
        if w[4..] != hist {
            return Err(format!(
                "consumer {c}: histogram {:?}, latencies seen {hist:?}",
                &w[4..]
            ));
        }
        if let Some(p) = pages {
            let have = snap[regs::SNAP_PAGES as usize + c];
            if have != p[c] {
                return Err(format!("consumer {c}: {have} pages, expected {}", p[c]));
            }
        }
    }
    Ok(())
}
