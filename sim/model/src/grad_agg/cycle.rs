//! The engine cycle by cycle: the specification the RTL matches on every
//! output of every cycle. State is named after the RTL's registers.
//!
//! Pipeline (one input beat per cycle; the only stall is output back-pressure):
//! - **header step** (cycle t): the header beat is checked (malformed
//!   packets are counted and dropped whole), its slot is computed and the
//!   slot's bookkeeping read from the meta RAM (synchronous read);
//! - **decision** (t+1): [`decide`] on the bookkeeping read; the new
//!   bookkeeping is written back, the output header (RESULT, EVICT or
//!   FALLBACK) is queued, and the packet's [`Mode`] is latched;
//! - **value step** (cycle c_k, beat k): the slot's words of beat k are read
//!   from the sum RAM (address `slot * value_beats + k`);
//! - **value stage** (c_k + 1): every lane's [`lane`] result is written back
//!   and/or queued as an output beat.
//!
//! A slot is touched once per packet and packets are at least
//! `1 + value_beats` beats apart, so a read always comes at least one
//! cycle after the previous packet's write to the same word: the RAMs need
//! no forwarding. Every step that may produce an output beat one cycle later
//! is taken only while the 4-entry output FIFO holds at most 2 beats, so it
//! never overflows and, with the output ready, never holds the input off.
//!
//! A flush walks the slots once the packet in progress has drained: per
//! slot a header step (an EVICT of a held slot) and `value_beats` value
//! steps through the same pipeline, input held off meanwhile.

use super::model::{
    decide, decision_counters, flush_slot, lane, Decision, Meta, Mode, OutHeader, Regs, Verdict,
};
use super::packet::{flags, Header, Malformed, HEADER_BYTES};
use super::ports::{GradPorts, InView, OutView};
use super::{slot_of, Config};
use crate::dut::Dut;
use std::collections::VecDeque;
use std::marker::PhantomData;

/// Entries of the output FIFO.
pub const FIFO_DEPTH: usize = 4;
/// A step is taken only with at most this many beats queued: a step's
/// output lands one cycle later, after at most one more push.
pub const FIFO_ROOM: usize = FIFO_DEPTH - 2;

/// One queued output beat.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Beat {
    data: Vec<u32>,
    last: bool,
    kind: u8,
}

/// The engine at the cycle level, as a [`Dut`] on the ports of `P`.
pub struct GradCycle<P: GradPorts> {
    cfg: Config,
    meta: Vec<Meta>,
    /// Sum RAM per lane, word `slot * value_beats + beat`.
    acc: Vec<Vec<u32>>,
    regs: Regs,
    in_pkt: bool,
    k: usize,
    cur_idx: usize,
    cur_base: usize,
    d_step: bool,
    d_flush: bool,
    /// The header checks' result (the RTL keeps only whether it is `Ok`).
    d_ok: Result<(), Malformed>,
    d_hdr: Header,
    d_beat: Vec<u32>,
    meta_rd: Meta,
    mode: Mode,
    kind: u8,
    p1_valid: bool,
    p1_addr: usize,
    p1_last: bool,
    p1_v: Vec<u32>,
    acc_rd: Vec<u32>,
    flush_pending: bool,
    flushing: bool,
    fl_slot: usize,
    fl_phase: usize,
    fifo: VecDeque<Beat>,
    last_in: InView,
    last_out: OutView,
    _p: PhantomData<P>,
}

impl<P: GradPorts> GradCycle<P> {
    /// A fresh engine (power-on: slots empty, sums 0, priorities 0).
    ///
    /// # Panics
    /// When `cfg.lanes` is not `P::LANES`, is below 4, or `value_beats` is
    /// not a power of two: the RTL cannot be built so either.
    pub fn new(cfg: Config) -> Self {
        assert_eq!(
            cfg.lanes,
            P::LANES,
            "grad_agg: config and ports disagree on lanes"
        );
        assert!(cfg.lanes >= 4, "grad_agg: the header needs 4 lanes");
        assert!(
            cfg.value_beats.is_power_of_two(),
            "grad_agg: value beats must be a power of two"
        );
        let l = cfg.lanes;
        Self {
            cfg,
            meta: vec![Meta::default(); cfg.slots()],
            acc: vec![vec![0; cfg.slots() * cfg.value_beats]; l],
            regs: Regs::default(),
            in_pkt: false,
            k: 0,
            cur_idx: 0,
            cur_base: 0,
            d_step: false,
            d_flush: false,
            d_ok: Ok(()),
            d_hdr: Header::default(),
            d_beat: vec![0; l],
            meta_rd: Meta::default(),
            mode: Mode::default(),
            kind: 0,
            p1_valid: false,
            p1_addr: 0,
            p1_last: false,
            p1_v: vec![0; l],
            acc_rd: vec![0; l],
            flush_pending: false,
            flushing: false,
            fl_slot: 0,
            fl_phase: 0,
            fifo: VecDeque::new(),
            last_in: InView::default(),
            last_out: OutView::default(),
            _p: PhantomData,
        }
    }

    /// The slot bookkeeping now.
    pub fn slots(&self) -> &[Meta] {
        &self.meta
    }

    /// The registers now.
    pub fn regs(&self) -> &Regs {
        &self.regs
    }

    fn room(&self) -> bool {
        self.fifo.len() <= FIFO_ROOM
    }

    fn lanes_of(&self, i: &InView) -> Vec<u32> {
        let mut v = i.s_tdata.clone();
        v.resize(self.cfg.lanes, 0);
        v
    }

    fn header_beat(&self, out: &OutHeader) -> Beat {
        let mut data = vec![0u32; self.cfg.lanes];
        match out {
            OutHeader::Built(_, h) => data[..4].copy_from_slice(&h.words()),
            OutHeader::Forward => {
                data.copy_from_slice(&self.d_beat);
                data[0] |= (flags::FALLBACK as u32) << 8;
            }
        }
        Beat {
            data,
            last: false,
            kind: out.kind().code(),
        }
    }
}

fn check(cfg: &Config, lanes: &[u32], size: u16) -> Result<Header, Malformed> {
    let mut bytes = [0u8; HEADER_BYTES];
    for (d, w) in bytes.chunks_exact_mut(4).zip(lanes) {
        d.copy_from_slice(&w.to_le_bytes());
    }
    super::packet::validate(cfg.geometry(), &bytes, size as usize)
}

impl<P: GradPorts> Dut for GradCycle<P> {
    type In = P::In;
    type Out = P::Out;

    fn eval(&mut self, inputs: &P::In) -> P::Out {
        let i = P::in_view(inputs);
        let head = self.fifo.front();
        let o = OutView {
            s_tready: self.room() && !self.flushing && (self.in_pkt || !self.flush_pending),
            m_tdata: head.map_or_else(|| vec![0; self.cfg.lanes], |b| b.data.clone()),
            m_tuser: head.map_or(0, |b| b.kind),
            m_tlast: head.is_some_and(|b| b.last),
            m_tvalid: head.is_some(),
            eng_rdata: if i.eng_re {
                self.regs
                    .peek(&self.cfg, (i.eng_raddr as u32) << 2, self.flush_pending)
                    .unwrap_or(0)
            } else {
                0
            },
        };
        self.last_in = i;
        self.last_out = o.clone();
        P::outputs_of(&o)
    }

    fn tick(&mut self) {
        let i = std::mem::take(&mut self.last_in);
        let o = std::mem::take(&mut self.last_out);
        let cfg = self.cfg;
        let vb = cfg.value_beats;
        let room = self.room();
        let fire = i.s_tvalid && o.s_tready;
        let hfire = fire && !self.in_pkt;
        let vfire = fire && self.in_pkt && self.k < vb;
        let fstep = self.flushing && room;
        let fh = fstep && self.fl_phase == 0;
        let fv = fstep && self.fl_phase != 0;
        // The flush walk starts once the packet in progress has drained.
        let start =
            self.flush_pending && !self.flushing && !self.in_pkt && !self.d_step && !self.p1_valid;
        let lanes = self.lanes_of(&i);
        let h_in = Header::from_words([lanes[0], lanes[1], lanes[2], lanes[3]]);
        let slot_in = slot_of(h_in.job, h_in.chunk, cfg.slot_bits);

        // Synchronous RAM reads see the memories before this edge's writes.
        let meta_rd = if fh {
            Some(self.meta[self.fl_slot])
        } else if hfire {
            Some(self.meta[slot_in])
        } else {
            None
        };
        let acc_rd: Option<Vec<u32>> = (vfire || fv).then(|| {
            let a = self.cur_base + self.k;
            self.acc.iter().map(|bank| bank[a]).collect()
        });

        let mut push = None;
        let mut incs: Vec<usize> = vec![];

        // Decision.
        if self.d_step {
            let d = if self.d_flush {
                flush_slot(&cfg, &self.meta_rd)
            } else if let Err(why) = self.d_ok {
                Decision {
                    // Counted at the header step already.
                    verdict: Verdict::Malformed(why),
                    meta: None,
                    out: None,
                    mode: Mode::default(),
                }
            } else {
                decide(&cfg, &self.meta_rd, &self.d_hdr, &self.regs.prio)
            };
            incs.extend_from_slice(decision_counters(d.verdict));
            if let Some(m) = d.meta {
                self.meta[self.cur_idx] = m;
            }
            if let Some(out) = &d.out {
                push = Some(self.header_beat(out));
                self.kind = out.kind().code();
            }
            self.mode = d.mode;
        }

        // Value stage.
        if self.p1_valid {
            let mut data = vec![0u32; cfg.lanes];
            for (l, d) in data.iter_mut().enumerate() {
                let (w, out) = lane(&self.mode, self.acc_rd[l], self.p1_v[l]);
                if let Some(w) = w {
                    self.acc[l][self.p1_addr] = w;
                }
                *d = out.unwrap_or(0);
            }
            if self.mode.out.is_some() && push.is_none() {
                push = Some(Beat {
                    data,
                    last: self.p1_last,
                    kind: self.kind,
                });
            }
        }

        // Header step.
        self.d_step = hfire || fh;
        if hfire {
            let ok = check(&cfg, &lanes, i.s_tuser_size).map(|_| ());
            self.d_flush = false;
            self.d_ok = ok;
            self.d_hdr = h_in;
            self.d_beat = lanes.clone();
            self.cur_idx = slot_in;
            self.cur_base = slot_in * vb;
            self.k = 0;
            incs.push(super::model::counter::PKTS);
            if ok.is_err() {
                incs.push(super::model::counter::MALFORMED);
            }
        }
        if fh {
            self.d_flush = true;
            self.cur_idx = self.fl_slot;
            self.cur_base = self.fl_slot * vb;
            self.k = 0;
        }
        if let Some(m) = meta_rd {
            self.meta_rd = m;
        }

        // Value step.
        let p1_valid = vfire || fv;
        if p1_valid {
            self.p1_addr = self.cur_base + self.k;
            self.p1_last = self.k == vb - 1;
            self.p1_v = lanes;
            self.k += 1;
        }
        if let Some(r) = acc_rd {
            self.acc_rd = r;
        }
        if fire {
            self.in_pkt = !i.s_tlast;
        }

        // Flush walk.
        if fstep {
            if self.fl_phase == vb {
                self.fl_phase = 0;
                if self.fl_slot + 1 == cfg.slots() {
                    self.flushing = false;
                    self.flush_pending = false;
                    self.fl_slot = 0;
                } else {
                    self.fl_slot += 1;
                }
            } else {
                self.fl_phase += 1;
            }
        }
        if start {
            self.flushing = true;
            self.fl_slot = 0;
            self.fl_phase = 0;
        }
        self.p1_valid = p1_valid;

        // Output FIFO.
        if o.m_tvalid && i.m_tready {
            self.fifo.pop_front();
        }
        if let Some(b) = push {
            self.fifo.push_back(b);
        }

        // Registers: a LO read latches the HI word before this cycle's
        // increments; a counter reset wins over them.
        if i.eng_re {
            self.regs.read_side_effect((i.eng_raddr as u32) << 2);
        }
        let mut clear = false;
        if i.eng_we {
            let cmd = self
                .regs
                .write((i.eng_waddr as u32) << 2, i.eng_wdata, i.eng_wstrb);
            self.flush_pending |= cmd.flush;
            clear = cmd.reset;
        }
        for c in incs {
            self.regs.count(c);
        }
        if clear {
            self.regs.reset();
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}
