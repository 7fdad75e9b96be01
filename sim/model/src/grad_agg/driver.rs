//! Stimulus for the engine: a script of packets, register writes and
//! flushes, played on the ports with seeded input bubbles and output
//! back-pressure; and the packet-level model's prediction of what the
//! script produces.

use super::model::{GradModel, OutPacket};
use super::packet::Kind;
use super::ports::{GradPorts, InView, OutView};
use super::Config;
use crate::dut::Driver;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::marker::PhantomData;
use weft_regs::grad;

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A packet (UDP payload) on the input stream, `tuser_size` its length.
    Packet(Vec<u8>),
    /// A register write between packets.
    Write {
        /// Byte address.
        addr: u32,
        /// Data.
        data: u32,
        /// Byte strobes.
        strb: u8,
    },
    /// `CMD.FLUSH`, then poll `STATUS` until the flush is done.
    Flush,
}

/// Random timing of the driver.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GradTiming {
    /// Probability that the next input beat is held back one more cycle.
    pub bubble: f64,
    /// Probability that `m_tready` is low on a cycle.
    pub m_stall: f64,
}

impl GradTiming {
    /// Back-to-back input, output always ready.
    pub const LINE_RATE: GradTiming = GradTiming {
        bubble: 0.0,
        m_stall: 0.0,
    };
}

/// What a script produced (or must produce).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Output packets, in order.
    pub packets: Vec<OutPacket>,
    /// The final register reads: (address, value).
    pub reads: Vec<(u32, u32)>,
}

/// Registers read at the end of every script, in this order.
pub fn final_reads() -> Vec<u32> {
    let mut v: Vec<u32> = grad::COUNTERS.iter().map(|r| r.addr).collect();
    v.extend([
        grad::PRIO_LO.addr,
        grad::PRIO_HI.addr,
        grad::STATUS.addr,
        grad::GEOMETRY.addr,
        grad::CMD.addr,
    ]);
    v
}

/// The packet-level model's prediction for a script.
pub fn predict(cfg: Config, steps: &[Step]) -> Outcome {
    let mut m = GradModel::new(cfg);
    let mut out = Outcome::default();
    for s in steps {
        match s {
            Step::Packet(p) => out.packets.extend(m.packet(p)),
            Step::Write { addr, data, strb } => {
                out.packets.extend(m.write_reg(*addr, *data, *strb))
            }
            Step::Flush => out.packets.extend(m.flush()),
        }
    }
    for a in final_reads() {
        out.reads.push((a, m.read_reg(a).unwrap_or(0)));
    }
    out
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Script,
    Drain(u32),
    Read(usize),
    Done,
}

/// Cycles to wait after a packet's last beat before a register write.
/// Not needed for ordering (a decision always uses the registers as they
/// were before any later write), kept so a write never shares a cycle with
/// the packet's decision.
const SETTLE: u32 = 2;

/// Plays a script on the engine's ports.
pub struct GradDriver<P: GradPorts> {
    lanes: usize,
    steps: VecDeque<Step>,
    rng: ChaCha8Rng,
    timing: GradTiming,
    cur: Option<(Vec<u8>, usize)>,
    shown: bool,
    write: Option<(u32, u32, u8)>,
    wait_flush: bool,
    polling: bool,
    settle: u32,
    phase: Phase,
    reads: Vec<u32>,
    last: Option<InView>,
    building: Vec<u8>,
    building_kind: Option<u8>,
    /// What came out.
    pub outcome: Outcome,
    /// Input beats accepted.
    pub beats: u64,
    /// Output beats taken.
    pub out_beats: u64,
    /// Cycle of the first input beat accepted.
    pub first_beat: Option<u64>,
    /// Cycle of the last input beat accepted.
    pub last_beat: u64,
    /// Cycles with an input beat offered and not taken.
    pub input_stalls: u64,
    /// Cycles seen.
    pub cycles: u64,
    /// Output beats whose `m_tuser` named no kind, or that changed kind
    /// inside a packet.
    pub bad_beats: u64,
    _p: PhantomData<P>,
}

impl<P: GradPorts> GradDriver<P> {
    /// Play `steps` with `timing`, seeded.
    pub fn new(steps: Vec<Step>, timing: GradTiming, seed: u64) -> Self {
        Self {
            lanes: P::LANES,
            steps: steps.into(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            timing,
            cur: None,
            shown: false,
            write: None,
            wait_flush: false,
            polling: false,
            settle: 0,
            phase: Phase::Script,
            reads: final_reads(),
            last: None,
            building: vec![],
            building_kind: None,
            outcome: Outcome::default(),
            beats: 0,
            out_beats: 0,
            first_beat: None,
            last_beat: 0,
            input_stalls: 0,
            cycles: 0,
            bad_beats: 0,
            _p: PhantomData,
        }
    }

    /// Cycles from the first input beat to the last, inclusive.
    pub fn stream_cycles(&self) -> u64 {
        self.first_beat.map_or(0, |f| self.last_beat - f + 1)
    }

    fn next_step(&mut self) {
        if self.cur.is_some() || self.write.is_some() || self.wait_flush {
            return;
        }
        match self.steps.front() {
            Some(Step::Packet(_)) => {
                if let Some(Step::Packet(p)) = self.steps.pop_front() {
                    self.cur = Some((p, 0));
                    self.shown = false;
                }
            }
            Some(_) if self.settle > 0 => self.settle -= 1,
            Some(Step::Write { addr, data, strb }) => {
                self.write = Some((*addr, *data, *strb));
                self.steps.pop_front();
            }
            Some(Step::Flush) => {
                self.write = Some((grad::CMD.addr, grad::CMD_FLUSH.set(0, 1), 0xf));
                self.wait_flush = true;
                self.steps.pop_front();
            }
            None => {
                if self.phase == Phase::Script {
                    self.phase = Phase::Drain(0);
                }
            }
        }
    }

    fn view(&mut self) -> InView {
        let bytes = 4 * self.lanes;
        let mut v = InView {
            s_tdata: vec![0; self.lanes],
            m_tready: !self.rng.gen_bool(self.timing.m_stall.clamp(0.0, 1.0)),
            ..Default::default()
        };
        if let Some((p, beat)) = &self.cur {
            if !self.shown {
                self.shown = !self.rng.gen_bool(self.timing.bubble.clamp(0.0, 1.0));
            }
            if self.shown {
                let chunk = p.get(beat * bytes..).unwrap_or(&[]);
                for (w, c) in v.s_tdata.iter_mut().zip(chunk.chunks(4)) {
                    let mut b = [0u8; 4];
                    b[..c.len()].copy_from_slice(c);
                    *w = u32::from_le_bytes(b);
                }
                v.s_tvalid = true;
                v.s_tlast = (beat + 1) * bytes >= p.len();
                v.s_tuser_size = p.len() as u16;
            }
        }
        if let Some((addr, data, strb)) = self.write {
            v.eng_we = true;
            v.eng_waddr = (addr >> 2) as u16;
            v.eng_wdata = data;
            v.eng_wstrb = strb;
        }
        // While a flush runs, and while draining at the end, poll STATUS.
        self.polling =
            (self.wait_flush && self.write.is_none()) || matches!(self.phase, Phase::Drain(_));
        if self.polling {
            v.eng_raddr = (grad::STATUS.addr >> 2) as u16;
            v.eng_re = true;
        }
        if let Phase::Read(i) = self.phase {
            v.eng_raddr = (self.reads[i] >> 2) as u16;
            v.eng_re = true;
        }
        v
    }

    fn see(&mut self, i: &InView, o: &OutView) {
        self.cycles += 1;
        if i.s_tvalid && !o.s_tready {
            self.input_stalls += 1;
        }
        if i.s_tvalid && o.s_tready {
            self.beats += 1;
            self.first_beat.get_or_insert(self.cycles - 1);
            self.last_beat = self.cycles - 1;
            if let Some((_, beat)) = &mut self.cur {
                *beat += 1;
                self.shown = false;
                if i.s_tlast {
                    self.cur = None;
                    self.settle = SETTLE;
                }
            }
        }
        if o.m_tvalid && i.m_tready {
            self.out_beats += 1;
            if *self.building_kind.get_or_insert(o.m_tuser) != o.m_tuser {
                self.bad_beats += 1;
            }
            for w in &o.m_tdata {
                self.building.extend_from_slice(&w.to_le_bytes());
            }
            if o.m_tlast {
                let bytes = std::mem::take(&mut self.building);
                self.building_kind = None;
                match Kind::from_code(o.m_tuser) {
                    Some(kind) => self.outcome.packets.push(OutPacket { kind, bytes }),
                    None => self.bad_beats += 1,
                }
            }
        }
        if i.eng_we {
            self.write = None;
            self.settle = SETTLE;
        }
        if self.polling && o.eng_rdata & grad::STATUS_FLUSHING.mask() == 0 {
            self.wait_flush = false;
            self.settle = SETTLE;
        }
        match self.phase {
            Phase::Script => self.next_step(),
            Phase::Drain(n) => {
                // Outputs drain before the final reads; counters are settled
                // once nothing has moved for a few cycles.
                let quiet = !o.m_tvalid && o.eng_rdata & grad::STATUS_FLUSHING.mask() == 0;
                self.phase = match (quiet, n) {
                    (true, 4) => Phase::Read(0),
                    (true, n) => Phase::Drain(n + 1),
                    (false, _) => Phase::Drain(0),
                };
            }
            Phase::Read(k) => {
                self.outcome.reads.push((self.reads[k], o.eng_rdata));
                self.phase = if k + 1 == self.reads.len() {
                    Phase::Done
                } else {
                    Phase::Read(k + 1)
                };
            }
            Phase::Done => {}
        }
    }
}

impl<P: GradPorts> Driver<P::In, P::Out> for GradDriver<P> {
    fn drive(&mut self) -> P::In {
        if self.phase == Phase::Script && self.cycles == 0 {
            self.next_step();
        }
        let v = self.view();
        let i = P::inputs(&v);
        self.last = Some(v);
        i
    }
    fn observe(&mut self, _inputs: &P::In, outputs: &P::Out) {
        let o = P::outputs(outputs);
        let i = self.last.take().unwrap_or_default();
        self.see(&i, &o);
    }
    fn finished(&self) -> bool {
        self.phase == Phase::Done
    }
}
