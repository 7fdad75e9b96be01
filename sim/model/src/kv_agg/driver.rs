//! Stimulus for the engine: a script of packets, register writes and
//! flushes, played on the ports with seeded input bubbles and output
//! back-pressure while random registers are read; and the model's
//! prediction of what the script produces.

use super::model::KvModel;
use super::packet::{Ack, RecordBeat, RecordKind};
use super::ports::{InView, KvPorts, OutView};
use super::Config;
use crate::dut::Driver;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;
use std::marker::PhantomData;
use weft_regs::kv;

/// One step of a script.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A packet (UDP payload) on the input stream.
    Packet(Vec<u8>),
    /// A register write (between packets, once the pipeline has drained).
    Write {
        /// Byte address.
        addr: u32,
        /// Data.
        data: u32,
        /// Byte strobes.
        strb: u8,
    },
    /// `CMD.FLUSH`, then wait for the flush-done record.
    Flush,
}

/// Random timing of the driver.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct KvTiming {
    /// Probability that the next input beat is held back one more cycle.
    pub bubble: f64,
    /// Probability that `m_tready` is low on a cycle.
    pub m_stall: f64,
    /// Probability that `a_tready` is low on a cycle.
    pub a_stall: f64,
}

impl KvTiming {
    /// Back-to-back input, outputs always ready.
    pub const LINE_RATE: KvTiming = KvTiming {
        bubble: 0.0,
        m_stall: 0.0,
        a_stall: 0.0,
    };
}

/// What a script produced (or must produce).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Record beats, in order.
    pub records: Vec<RecordBeat>,
    /// Acks, in order.
    pub acks: Vec<Ack>,
    /// Per ack, in order: the acked packet's return address and job.
    pub ack_meta: Vec<([u32; 4], u16)>,
    /// The final register reads: (address, value).
    pub reads: Vec<(u32, u32)>,
}

/// Registers read at the end of every script, in this order.
pub fn final_reads() -> Vec<u32> {
    let mut v: Vec<u32> = kv::COUNTERS.iter().map(|r| r.addr).collect();
    v.extend([
        kv::GEOMETRY.addr,
        kv::STATUS.addr,
        kv::CTRL.addr,
        kv::JOB.addr,
    ]);
    v
}

/// The return address the driver gives the `i`-th packet of a script: a
/// different 97-bit value per packet, so an ack's echo names its packet.
pub fn ret_of(i: usize) -> [u32; 4] {
    let i = i as u32;
    [i.wrapping_mul(0x9e37_79b9), !i, i << 8 | 0x55, i & 1]
}

/// The model's prediction for a script.
pub fn predict(cfg: Config, steps: &[Step]) -> Outcome {
    let mut m = KvModel::new(cfg);
    let mut out = Outcome::default();
    let mut n = 0;
    for s in steps {
        match s {
            Step::Packet(p) => {
                let (ack, spills) = m.packet(p);
                if ack.is_some() {
                    let job = super::packet::Header::decode(p).map_or(0, |h| h.job);
                    out.ack_meta.push((ret_of(n), job));
                }
                n += 1;
                out.acks.extend(ack);
                out.records.extend(spills);
            }
            Step::Write { addr, data, strb } => {
                let cmd = m.write_reg(*addr, *data, *strb);
                if cmd.reset {
                    m.reset();
                }
                if cmd.flush {
                    out.records.extend(m.flush());
                }
            }
            Step::Flush => out.records.extend(m.flush()),
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

/// Cycles to wait after a packet before a register write: the update stage
/// must have counted the packet's tuples.
const SETTLE: u32 = 3;

/// Plays a script on the engine's ports.
pub struct KvDriver<P: KvPorts> {
    lanes: usize,
    steps: VecDeque<Step>,
    rng: ChaCha8Rng,
    timing: KvTiming,
    cur: Option<(Vec<u8>, usize)>,
    shown: bool,
    write: Option<(u32, u32, u8)>,
    wait_flush: bool,
    settle: u32,
    phase: Phase,
    reads: Vec<u32>,
    last: Option<InView>,
    /// What came out.
    pub outcome: Outcome,
    /// Input beats accepted.
    pub beats: u64,
    /// Cycle of the first input beat accepted.
    pub first_beat: Option<u64>,
    /// Cycle of the last input beat accepted.
    pub last_beat: u64,
    /// Cycles with an input beat offered and not taken.
    pub input_stalls: u64,
    /// Cycles seen.
    pub cycles: u64,
    /// Record beats that could not be decoded (a bad `m_tuser`).
    pub bad_records: u64,
    /// Packets started so far.
    packets: usize,
    _p: PhantomData<P>,
}

impl<P: KvPorts> KvDriver<P> {
    /// Play `steps` with `timing`, seeded.
    pub fn new(steps: Vec<Step>, timing: KvTiming, seed: u64) -> Self {
        Self {
            lanes: P::LANES,
            steps: steps.into(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            timing,
            cur: None,
            shown: false,
            write: None,
            wait_flush: false,
            settle: 0,
            phase: Phase::Script,
            reads: final_reads(),
            last: None,
            outcome: Outcome::default(),
            beats: 0,
            first_beat: None,
            last_beat: 0,
            input_stalls: 0,
            cycles: 0,
            bad_records: 0,
            packets: 0,
            _p: PhantomData,
        }
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
                    self.packets += 1;
                }
            }
            Some(_) if self.settle > 0 => self.settle -= 1,
            Some(Step::Write { addr, data, strb }) => {
                self.write = Some((*addr, *data, *strb));
                self.steps.pop_front();
            }
            Some(Step::Flush) => {
                self.write = Some((kv::CMD.addr, kv::CMD_FLUSH.set(0, 1), 0xf));
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
        let bytes = 8 * self.lanes;
        let mut v = InView {
            s_tdata: vec![0; 2 * self.lanes],
            m_tready: !self.rng.gen_bool(self.timing.m_stall.clamp(0.0, 1.0)),
            a_tready: !self.rng.gen_bool(self.timing.a_stall.clamp(0.0, 1.0)),
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
                v.s_tret = ret_of(self.packets - 1);
            }
        }
        if let Some((addr, data, strb)) = self.write {
            v.eng_we = true;
            v.eng_waddr = (addr >> 2) as u16;
            v.eng_wdata = data;
            v.eng_wstrb = strb;
        }
        match self.phase {
            Phase::Read(i) => {
                v.eng_raddr = (self.reads[i] >> 2) as u16;
                v.eng_re = true;
            }
            Phase::Script | Phase::Drain(_) => {
                // Watch a random register on the read port every cycle, so
                // its value (counters as they count, STATUS through a flush)
                // is compared cycle by cycle; a LO read may latch its HI
                // word, and the final reads latch every one afresh.
                let r = self.reads[self.rng.gen_range(0..self.reads.len())];
                v.eng_raddr = (r >> 2) as u16;
                v.eng_re = self.rng.gen_bool(0.5);
            }
            Phase::Done => {}
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
            if let Some((p, beat)) = &mut self.cur {
                *beat += 1;
                self.shown = false;
                if i.s_tlast || *beat * 8 * self.lanes >= p.len() {
                    self.cur = None;
                    self.settle = SETTLE;
                }
            }
        }
        if o.m_tvalid && i.m_tready {
            match RecordKind::from_code(o.m_tuser) {
                Some(kind) => {
                    let lanes = (0..self.lanes)
                        .map(|l| {
                            (o.m_tkeep & (1 << l) != 0)
                                .then(|| (o.m_tdata[2 * l], o.m_tdata[2 * l + 1] as i32))
                        })
                        .collect();
                    if kind == RecordKind::FlushDone {
                        self.wait_flush = false;
                        self.settle = SETTLE;
                    }
                    self.outcome.records.push(RecordBeat { kind, lanes });
                }
                None => self.bad_records += 1,
            }
        }
        if o.a_tvalid && i.a_tready {
            if let Some(a) = Ack::unpack(o.a_tdata) {
                self.outcome.acks.push(a);
                self.outcome.ack_meta.push((o.a_tret, o.a_tjob));
            }
        }
        if i.eng_we {
            self.write = None;
            self.settle = SETTLE;
        }
        match self.phase {
            Phase::Script => self.next_step(),
            Phase::Drain(n) => {
                // Outputs drain before the final reads (counters are settled
                // once nothing has moved for a few cycles).
                let quiet = !o.m_tvalid && !o.a_tvalid;
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

impl<P: KvPorts> KvDriver<P> {
    /// Cycles from the first input beat to the last, inclusive.
    pub fn stream_cycles(&self) -> u64 {
        self.first_beat.map_or(0, |f| self.last_beat - f + 1)
    }
}

impl<P: KvPorts> Driver<P::In, P::Out> for KvDriver<P> {
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

/// Arbitrary values on every input port, every cycle, for a number of
/// cycles (each within its port's width): headers mostly well-formed (job 0, any sender, sequence numbers
/// near the window) with a length that mostly matches, `s_tlast` anywhere,
/// both outputs stalling, register reads and writes (CTRL, JOB mostly 0,
/// CMD) anywhere. Nothing about the outcome is predicted; the witnesses
/// must agree on every cycle and never hang.
pub struct NoiseDriver<P: KvPorts> {
    rng: ChaCha8Rng,
    left: u64,
    last: InView,
    /// Record beats taken, by `m_tuser`.
    pub records: [u64; 4],
    /// Acks taken, by status (`a_tdata` bits 39:32, low two bits).
    pub acks: [u64; 4],
    _p: PhantomData<P>,
}

impl<P: KvPorts> NoiseDriver<P> {
    /// `cycles` cycles of noise, seeded.
    pub fn new(seed: u64, cycles: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            left: cycles,
            last: InView::default(),
            records: [0; 4],
            acks: [0; 4],
            _p: PhantomData,
        }
    }
}

impl<P: KvPorts> Driver<P::In, P::Out> for NoiseDriver<P> {
    fn drive(&mut self) -> P::In {
        let r = &mut self.rng;
        let count: u16 = r.gen_range(0..40);
        let mut v = InView {
            s_tdata: (0..2 * P::LANES).map(|_| r.gen()).collect(),
            s_tlast: r.gen_bool(0.3),
            s_tvalid: r.gen_bool(0.8),
            s_tuser_size: if r.gen_bool(0.7) {
                16 + 8 * count
            } else {
                r.gen()
            },
            // Every value within its port's width, as a real source drives it.
            s_tret: [r.gen(), r.gen(), r.gen(), r.gen_range(0..2)],
            m_tready: r.gen_bool(0.5),
            a_tready: r.gen_bool(0.5),
            eng_raddr: r.gen_range(0..1 << 14),
            eng_re: r.gen(),
            eng_waddr: (kv::BASE >> 2) as u16 + r.gen_range(0..8),
            eng_wdata: r.gen(),
            eng_wstrb: r.gen_range(0..16),
            eng_we: r.gen_bool(0.02),
        };
        if (v.eng_waddr as u32) << 2 == kv::JOB.addr && r.gen_bool(0.9) {
            // Mostly job 0, so that packets get through.
            v.eng_wdata = 0;
        }
        if r.gen_bool(0.7) {
            let h = super::packet::Header::data(0, r.gen_range(0..20), r.gen_range(0..40), count);
            for (w, b) in v.s_tdata.iter_mut().zip(h.encode().chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
        }
        let i = P::inputs(&v);
        self.last = v;
        i
    }
    fn observe(&mut self, _inputs: &P::In, outputs: &P::Out) {
        let o = P::outputs(outputs);
        if o.m_tvalid && self.last.m_tready {
            self.records[o.m_tuser as usize & 3] += 1;
        }
        if o.a_tvalid && self.last.a_tready {
            self.acks[(o.a_tdata >> 32) as usize & 3] += 1;
        }
        self.left = self.left.saturating_sub(1);
    }
    fn finished(&self) -> bool {
        self.left == 0
    }
}
