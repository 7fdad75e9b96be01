//! The engine cycle by cycle: the specification `hdl/src/kv_agg.rs` matches
//! on every output of every cycle. State is named after the RTL's registers;
//! every decision that [`super::model`] also makes is its function.
//!
//! Pipeline (one input beat per cycle, never stalled by hazards; `s_tready`
//! falls only for output back-pressure or a flush, below):
//! - **accept** (cycle t, the beat taken): a header beat is checked against
//!   the length on `s_tuser_size` ([`packet::check`]) and its sender's
//!   window ([`Window::arrive`]); a malformed packet is counted and
//!   aggregates nothing, a packet ahead of the window is counted and not
//!   acknowledged, a duplicate or fresh one queues its ack ([`Ack`]: the
//!   status and the low byte of the sender's window base after the packet,
//!   with the packet's return address and job) and a fresh one moves the
//!   window and is aggregated. Every lane that carries a tuple of an
//!   aggregated packet (lanes 2.. of the header beat up to the count, then
//!   `left` tuples over the following beats) latches its key, value and
//!   slot into `p1_*`;
//! - **update** (t + 1): every lane with a tuple updates its slot
//!   ([`update_slot`]: insert, add, evict a cold resident or age it and
//!   spill the newcomer) in its own bank and may emit one spill record; a
//!   beat with any spill record becomes one record beat (kind Spill, lane
//!   `i` from bank `i`, zeros in lanes without a record) in the record
//!   FIFO. Counters `AGGREGATED`, `SPILLED`, `EVICTED` and `OVERFLOWS`
//!   count here, the others at accept.
//!
//! The banks are RAMs with a synchronous read issued at accept and a write
//! at update; the RAM reads before it writes, so the RTL forwards a lane's
//! previous write (`last_*`) when it went to the slot being read. With that
//! forwarding the update stage sees every earlier update, which is how this
//! model keeps them: one bank of [`Slot`]s per lane, read and written at
//! update.
//!
//! Outputs leave through two 4-entry FIFOs, records and acks. A beat is
//! taken only while each holds at most 2 entries (`room`): its spill beat
//! lands one cycle later, after at most one more push, so neither ever
//! overflows. Their outputs show the head even when empty (the entry under
//! the read pointer: what was last popped, or zeros from power-on), as
//! `Fifo4` does
//! ([`crate::fifo4`]).
//!
//! **Flush** (`CMD.FLUSH` sets `flush_pending`): the packet in progress may
//! finish, then input is held off (`s_tready` low while `flush_pending`
//! outside a packet, or `flushing` / `done_pending`). Once no packet is in
//! progress and the update stage is empty the walk starts at row 0: each
//! cycle with `room` it reads row `flush_idx` of every bank and advances; a
//! cycle later (`f1_valid`, `f1_idx`) the row is cleared and, when any lane
//! held a resident, becomes a Flush beat. After the last row,
//! `done_pending` queues the FlushDone beat the first cycle without a row
//! in flight and with `room`. `STATUS.FLUSHING` reads `flush_pending`,
//! `flushing` or `done_pending`.
//!
//! **Registers**, on the engine register port: reads are combinational
//! ([`Regs::peek`]); a read accepted (`eng_re`) at a counter's LO word
//! latches its HI word before the cycle's increments; a write takes effect
//! at the edge, after the cycle's accept and update used the old values.
//! `CMD.RESET` clears every window and counter, winning over the cycle's
//! window move and increments.

use super::model::{update_slot, Counters, Regs, Slot, Window};
use super::packet::{self, Ack, AckStatus, Header, RecordKind};
use super::ports::{InView, KvPorts, OutView};
use super::{slot_of, Config, SENDERS};
use crate::dut::Dut;
use crate::fifo4::Fifo4;
use crate::ports::PortSet;
use std::marker::PhantomData;

/// Entries of each output FIFO.
pub const FIFO_DEPTH: usize = crate::fifo4::DEPTH;
/// A beat is taken (and a flush row read) only with at most this many
/// entries in each FIFO: its output lands one cycle later, after at most
/// one more push.
pub const FIFO_ROOM: usize = FIFO_DEPTH - 2;

/// One record beat in the FIFO.
#[derive(Clone, Debug, PartialEq, Eq)]
struct RecordEntry {
    /// Per lane: key (0 where the lane holds no record).
    key: Vec<u32>,
    /// Per lane: partial sum (0 where the lane holds no record).
    acc: Vec<u32>,
    keep: u8,
    kind: u8,
}

impl RecordEntry {
    fn zero(lanes: usize) -> Self {
        Self {
            key: vec![0; lanes],
            acc: vec![0; lanes],
            keep: 0,
            kind: 0,
        }
    }
}

/// One ack in the FIFO: the record, the packet's return address and job.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct AckEntry {
    data: u64,
    ret: [u32; 4],
    job: u16,
}

/// The engine at the cycle level, as a [`Dut`] on the ports of `P`.
pub struct KvCycle<P: KvPorts> {
    cfg: Config,
    /// `bank[lane][slot]`: the lane's key, sum and meta RAMs.
    bank: Vec<Vec<Slot>>,
    /// `win_base[s]`, `win_bits[s]`.
    win: [Window; SENDERS],
    /// `replace`, `job` and the counters.
    regs: Regs,
    flush_pending: bool,
    flushing: bool,
    flush_idx: usize,
    f1_valid: bool,
    f1_idx: usize,
    done_pending: bool,
    in_pkt: bool,
    pkt_agg: bool,
    left: u16,
    p1_valid: Vec<bool>,
    p1_key: Vec<u32>,
    p1_val: Vec<u32>,
    p1_idx: Vec<usize>,
    /// `f_key`, `f_acc`, `f_keep`, `f_kind` (pushed and popped together).
    f_rec: Fifo4<RecordEntry>,
    /// `f_ack_lo`, `f_ack_hi`, `f_ack_ret`, `f_ack_job`.
    f_ack: Fifo4<AckEntry>,
    last_in: InView,
    last_out: OutView,
    _p: PhantomData<P>,
}

impl<P: KvPorts> KvCycle<P> {
    /// A fresh engine (power-on: every slot empty, windows at 0,
    /// replacement on, FIFOs empty).
    ///
    /// # Panics
    /// When `cfg` is a geometry the RTL cannot be built at: lanes other
    /// than `P::LANES` or outside 2..=8, slot bits outside 1..=14, or
    /// senders other than [`SENDERS`].
    pub fn new(cfg: Config) -> Self {
        assert_eq!(
            cfg.lanes,
            P::LANES,
            "kv_agg: config and ports disagree on lanes"
        );
        assert!(
            (2..=8).contains(&cfg.lanes),
            "kv_agg: 2 to 8 lanes (header fills two)"
        );
        assert!(
            (1..=14).contains(&cfg.slot_bits),
            "kv_agg: 2 to 16384 slots per bank"
        );
        assert_eq!(
            cfg.senders, SENDERS,
            "kv_agg: the RTL has {SENDERS} sequence windows"
        );
        let l = cfg.lanes;
        Self {
            cfg,
            bank: vec![vec![Slot::default(); 1 << cfg.slot_bits]; l],
            win: [Window::default(); SENDERS],
            regs: Regs::default(),
            flush_pending: false,
            flushing: false,
            flush_idx: 0,
            f1_valid: false,
            f1_idx: 0,
            done_pending: false,
            in_pkt: false,
            pkt_agg: false,
            left: 0,
            p1_valid: vec![false; l],
            p1_key: vec![0; l],
            p1_val: vec![0; l],
            p1_idx: vec![0; l],
            f_rec: Fifo4::new(RecordEntry::zero(l)),
            f_ack: Fifo4::new(AckEntry::default()),
            last_in: InView::default(),
            last_out: OutView::default(),
            _p: PhantomData,
        }
    }

    /// The banks now, `[lane][slot]`.
    pub fn banks(&self) -> &[Vec<Slot>] {
        &self.bank
    }

    /// The registers now.
    pub fn regs(&self) -> &Regs {
        &self.regs
    }

    fn room(&self) -> bool {
        self.f_rec.count() <= FIFO_ROOM && self.f_ack.count() <= FIFO_ROOM
    }

    fn busy(&self) -> bool {
        self.flushing || self.done_pending
    }
}

/// The header in lanes 0 and 1 of a beat (the layout of [`Header::encode`]).
fn header_of(s_tdata: &[u32]) -> Header {
    let w = |k: usize| s_tdata.get(k).copied().unwrap_or(0);
    Header {
        version: w(0) as u8,
        flags: (w(0) >> 8) as u8,
        count: (w(0) >> 16) as u16,
        job: w(1) as u16,
        sender: (w(1) >> 16) as u16,
        seq: w(2),
    }
}

/// The same values cut to their ports' widths, as the RTL sees them.
fn to_width<T: PortSet>(v: &T) -> T {
    let mut w = Vec::with_capacity(T::total_words());
    v.pack(&mut w);
    T::unpack(&w)
}

/// Add the cycle's increments, wrapping like the RTL's 64-bit counters.
fn add(c: &mut Counters, d: &Counters) {
    let sum = |a: &mut u64, b: u64| *a = a.wrapping_add(b);
    sum(&mut c.pkts, d.pkts);
    sum(&mut c.tuples_in, d.tuples_in);
    sum(&mut c.aggregated, d.aggregated);
    sum(&mut c.spilled, d.spilled);
    sum(&mut c.evicted, d.evicted);
    sum(&mut c.overflows, d.overflows);
    sum(&mut c.dup_pkts, d.dup_pkts);
    sum(&mut c.malformed, d.malformed);
    sum(&mut c.window_drops, d.window_drops);
}

impl<P: KvPorts> Dut for KvCycle<P> {
    type In = P::In;
    type Out = P::Out;

    fn eval(&mut self, inputs: &P::In) -> P::Out {
        let i = P::in_view(&to_width(inputs));
        let l = self.cfg.lanes;
        let rec = self.f_rec.head();
        let ack = self.f_ack.head();
        let mut m_tdata = vec![0u32; 2 * l];
        for lane in 0..l {
            m_tdata[2 * lane] = rec.key[lane];
            m_tdata[2 * lane + 1] = rec.acc[lane];
        }
        let m_tvalid = self.f_rec.count() != 0;
        let status = self.flush_pending || self.busy();
        let o = OutView {
            s_tready: self.room() && !self.busy() && (self.in_pkt || !self.flush_pending),
            m_tdata,
            m_tkeep: rec.keep,
            m_tuser: rec.kind,
            m_tlast: m_tvalid,
            m_tvalid,
            a_tdata: ack.data,
            a_tret: ack.ret,
            a_tjob: ack.job,
            a_tvalid: self.f_ack.count() != 0,
            job_out: self.regs.job,
            eng_rdata: if i.eng_re {
                self.regs
                    .peek(&self.cfg, (i.eng_raddr as u32) << 2, status)
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
        let l = cfg.lanes;
        // Every decision below reads the registers as they were in the cycle.
        let room = self.room();
        let busy = self.busy();
        let (flush_pending, flushing, flush_idx) =
            (self.flush_pending, self.flushing, self.flush_idx);
        let (f1_valid, f1_idx, done_pending) = (self.f1_valid, self.f1_idx, self.done_pending);
        let (in_pkt, left) = (self.in_pkt, self.left);
        let p1_any = self.p1_valid.iter().any(|&v| v);
        let fire = i.s_tvalid && o.s_tready;
        let mut inc = Counters::default();

        // ---- Accept.
        let is_hdr = !in_pkt;
        let h = header_of(&i.s_tdata);
        let hdr_ok = packet::check(&h, i.s_tuser_size as usize, self.regs.job, SENDERS).is_ok();
        // Only a header that passed its checks (sender < SENDERS) uses it.
        let sidx = h.sender as usize % SENDERS;
        let mut win = self.win[sidx];
        let status = win.arrive(h.seq);
        let fresh = status == Some(AckStatus::New);
        let agg_pkt = if is_hdr {
            hdr_ok && fresh
        } else {
            self.pkt_agg
        };
        let lane_v: Vec<bool> = (0..l)
            .map(|lane| {
                let has_tuple = if is_hdr {
                    // Lanes 0 and 1 hold the header; tuple `lane - 2` follows.
                    lane.checked_sub(2).is_some_and(|t| (h.count as usize) > t)
                } else {
                    left as usize > lane
                };
                fire && agg_pkt && has_tuple
            })
            .collect();
        let mut ack_push = None;
        if fire && is_hdr {
            if !hdr_ok {
                inc.malformed += 1;
            } else {
                match status {
                    Some(AckStatus::Duplicate) => inc.dup_pkts += 1,
                    None => inc.window_drops += 1,
                    Some(AckStatus::New) => {
                        inc.pkts += 1;
                        inc.tuples_in += h.count as u64;
                        self.win[sidx] = win;
                    }
                }
                if let Some(status) = status {
                    let ack = Ack {
                        sender: h.sender,
                        seq: h.seq,
                        status,
                        base: win.base as u8,
                    };
                    ack_push = Some(AckEntry {
                        data: ack.pack(),
                        ret: i.s_tret,
                        job: h.job,
                    });
                }
            }
        }

        // ---- Update (the beat accepted last cycle, or a flush row).
        let mut sp: Vec<Option<(u32, i32)>> = vec![None; l];
        for (lane, rec) in sp.iter_mut().enumerate() {
            if self.p1_valid[lane] {
                let (key, value) = (self.p1_key[lane], self.p1_val[lane] as i32);
                let slot = &mut self.bank[lane][self.p1_idx[lane]];
                let outcome = update_slot(slot, key, value, self.regs.replace);
                outcome.count(&mut inc);
                *rec = outcome.record(key, value);
            }
            // Never together with a tuple: input is held off while flushing.
            if f1_valid {
                let slot = std::mem::take(&mut self.bank[lane][f1_idx]);
                *rec = slot.valid.then_some((slot.key, slot.acc));
            }
        }
        let keep = sp
            .iter()
            .enumerate()
            .filter(|(_, r)| r.is_some())
            .fold(0u8, |k, (lane, _)| k | 1 << lane);
        let mut entry = RecordEntry::zero(l);
        for (lane, r) in sp.iter().enumerate() {
            if let Some((key, acc)) = *r {
                entry.key[lane] = key;
                entry.acc[lane] = acc as u32;
            }
        }
        entry.keep = keep;
        entry.kind = if f1_valid {
            RecordKind::Flush
        } else {
            RecordKind::Spill
        } as u8;
        let mut rec_push = (keep != 0).then(|| entry.clone());
        if done_pending && !f1_valid && room {
            entry.kind = RecordKind::FlushDone as u8;
            rec_push = Some(entry);
            self.done_pending = false;
        }

        // ---- The accepted beat moves into the update stage.
        for (lane, &v) in lane_v.iter().enumerate() {
            let key = i.s_tdata.get(2 * lane).copied().unwrap_or(0);
            self.p1_valid[lane] = v;
            self.p1_key[lane] = key;
            self.p1_val[lane] = i.s_tdata.get(2 * lane + 1).copied().unwrap_or(0);
            self.p1_idx[lane] = slot_of(key, cfg.slot_bits);
        }
        if fire {
            self.in_pkt = !i.s_tlast;
            if is_hdr {
                self.pkt_agg = hdr_ok && fresh;
                self.left = h.count.saturating_sub(l as u16 - 2);
            } else {
                self.left = left.saturating_sub(l as u16);
            }
        }

        // ---- Flush walk: one row per cycle with room.
        if flush_pending && !busy && !in_pkt && !p1_any {
            self.flushing = true;
            self.flush_idx = 0;
        }
        self.f1_valid = false;
        if flushing && room {
            self.f1_valid = true;
            self.f1_idx = flush_idx;
            self.flush_idx = (flush_idx + 1) % (1 << cfg.slot_bits);
            if flush_idx + 1 == 1 << cfg.slot_bits {
                self.flushing = false;
                self.flush_pending = false;
                self.done_pending = true;
            }
        }

        // ---- Output FIFOs.
        self.f_rec.edge(rec_push, o.m_tvalid && i.m_tready);
        self.f_ack.edge(ack_push, o.a_tvalid && i.a_tready);

        // ---- Registers.
        if i.eng_re {
            self.regs.read_side_effect((i.eng_raddr as u32) << 2);
        }
        let mut reset = false;
        if i.eng_we {
            let cmd = self
                .regs
                .write((i.eng_waddr as u32) << 2, i.eng_wdata, i.eng_wstrb);
            self.flush_pending |= cmd.flush;
            reset = cmd.reset;
        }
        add(&mut self.regs.counters, &inc);
        if reset {
            self.win = [Window::default(); SENDERS];
            self.regs.clear_counters();
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_agg::driver::{predict, KvDriver, KvTiming, NoiseDriver, Step};
    use crate::kv_agg::packet::{encode, Header};
    use crate::kv_agg::ports::{Lanes2, Lanes4, Lanes8};
    use crate::Driver;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use weft_regs::kv;

    const JOB: u16 = 3;

    /// Packets from three senders over a small key space (hits, collisions,
    /// evictions, overflows), duplicated, swapped, some malformed or far
    /// ahead, with replacement toggles, counter resets and flushes.
    fn script(seed: u64) -> Vec<Step> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut steps = vec![Step::Write {
            addr: kv::JOB.addr,
            data: JOB as u32,
            strb: 0b11,
        }];
        let mut next = [0u32; 3];
        let mut pkts = vec![];
        for _ in 0..30 {
            let s = rng.gen_range(0..3);
            let tuples: Vec<(u32, i32)> = (0..rng.gen_range(0..20))
                .map(|_| {
                    let v = if rng.gen_bool(0.2) {
                        i32::MAX
                    } else {
                        rng.gen_range(-50..50)
                    };
                    (rng.gen_range(0..30), v)
                })
                .collect();
            let seq = if rng.gen_bool(0.05) {
                next[s] + 40
            } else {
                next[s]
            };
            next[s] += (seq == next[s]) as u32;
            let mut p = encode(
                &Header::data(JOB, s as u16, seq, tuples.len() as u16),
                &tuples,
            );
            if rng.gen_bool(0.1) {
                p.pop();
            }
            if rng.gen_bool(0.15) {
                pkts.push(p.clone());
            }
            pkts.push(p);
        }
        for k in 1..pkts.len() {
            if rng.gen_bool(0.2) {
                pkts.swap(k - 1, k);
            }
        }
        for p in pkts {
            match rng.gen_range(0..40) {
                0 => steps.push(Step::Flush),
                1 => steps.push(Step::Write {
                    addr: kv::CTRL.addr,
                    data: rng.gen_range(0..2),
                    strb: 1,
                }),
                2 => steps.push(Step::Write {
                    addr: kv::CMD.addr,
                    data: kv::CMD_RESET.set(0, 1),
                    strb: 1,
                }),
                _ => {}
            }
            steps.push(Step::Packet(p));
        }
        steps.push(Step::Flush);
        steps
    }

    fn agrees<P: KvPorts>(slot_bits: u32, seeds: std::ops::Range<u64>) {
        let cfg = Config {
            lanes: P::LANES,
            slot_bits,
            senders: SENDERS,
        };
        for seed in seeds {
            let steps = script(seed);
            let mut rng = ChaCha8Rng::seed_from_u64(!seed);
            let timing = KvTiming {
                bubble: rng.gen_range(0.0..0.5),
                m_stall: rng.gen_range(0.0..0.8),
                a_stall: rng.gen_range(0.0..0.8),
            };
            let mut dut = KvCycle::<P>::new(cfg);
            let mut d = KvDriver::<P>::new(steps.clone(), timing, seed);
            crate::run(&mut dut, &mut d, 200_000).unwrap();
            assert_eq!(d.bad_records, 0, "seed {seed}");
            assert_eq!(d.outcome, predict(cfg, &steps), "seed {seed}");
        }
    }

    #[test]
    fn every_width_matches_the_packet_model() {
        agrees::<Lanes2>(2, 0..12);
        agrees::<Lanes4>(3, 0..8);
        agrees::<Lanes8>(3, 0..6);
    }

    #[test]
    fn a_hot_key_in_every_lane_streams_at_line_rate() {
        let cfg = Config {
            lanes: 8,
            slot_bits: 3,
            senders: SENDERS,
        };
        let mut steps = vec![Step::Write {
            addr: kv::JOB.addr,
            data: JOB as u32,
            strb: 0b11,
        }];
        for seq in 0..10 {
            steps.push(Step::Packet(encode(
                &Header::data(JOB, 0, seq, 30),
                &[(42, 1); 30],
            )));
        }
        steps.push(Step::Flush);
        let mut dut = KvCycle::<Lanes8>::new(cfg);
        let mut d = KvDriver::<Lanes8>::new(steps.clone(), KvTiming::LINE_RATE, 0);
        crate::run(&mut dut, &mut d, 10_000).unwrap();
        assert_eq!(d.input_stalls, 0);
        assert_eq!(d.outcome, predict(cfg, &steps));
        assert!(dut.banks().iter().flatten().all(|s| !s.valid), "flushed");
        assert_eq!(dut.regs().counters.aggregated, 300);
    }

    /// Noise on every port (`NoiseDriver`): the model never panics and
    /// neither output FIFO ever holds more than its 4 entries.
    fn takes_any_input<P: KvPorts>(slot_bits: u32, seed: u64) {
        let cfg = Config {
            lanes: P::LANES,
            slot_bits,
            senders: SENDERS,
        };
        let mut dut = KvCycle::<P>::new(cfg);
        let mut d = NoiseDriver::<P>::new(seed, 20_000);
        while !d.finished() {
            let i = d.drive();
            let o = dut.eval(&i);
            d.observe(&i, &o);
            dut.tick();
            assert!(dut.f_rec.count() <= FIFO_DEPTH && dut.f_ack.count() <= FIFO_DEPTH);
        }
        // Spill, Flush and FlushDone records; New and Duplicate acks; nothing else.
        assert!(
            d.records[0] == 0 && d.records[1..].iter().all(|&n| n > 0),
            "{:?}",
            d.records
        );
        assert!(
            d.acks[0] == 0 && d.acks[3] == 0 && d.acks[1] > 0 && d.acks[2] > 0,
            "{:?}",
            d.acks
        );
    }

    #[test]
    fn any_input_at_every_width() {
        takes_any_input::<Lanes2>(1, 1);
        takes_any_input::<Lanes4>(3, 2);
        takes_any_input::<Lanes8>(9, 3);
    }

    #[test]
    #[should_panic(expected = "sequence windows")]
    fn refuses_a_sender_count_the_rtl_lacks() {
        KvCycle::<Lanes4>::new(Config {
            lanes: 4,
            slot_bits: 3,
            senders: 4,
        });
    }

    #[test]
    #[should_panic(expected = "slots per bank")]
    fn refuses_banks_the_rtl_cannot_build() {
        KvCycle::<Lanes2>::new(Config {
            lanes: 2,
            slot_bits: 15,
            senders: SENDERS,
        });
    }
}
