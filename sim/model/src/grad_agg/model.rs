//! The gradient aggregation engine's behaviour: the per-packet decision,
//! the per-lane arithmetic, the registers, and a packet-level model built
//! from them. The cycle-level model ([`super::cycle`]) applies the same
//! decision and arithmetic at the cycles the RTL does.

use super::packet::{
    self, flags, Header, Kind, Malformed, HEADER_BYTES, JOBS, MAX_WORKERS, VERSION,
};
use super::Config;
use weft_regs::grad;

/// The slot of `job`'s `chunk` among `1 << slot_bits` slots: `(chunk + job)
/// mod slots`. One adder, no multiplier; a job's consecutive chunks occupy
/// consecutive slots (as SwitchML's pool index does), and jobs are offset by
/// their id. The host library computes the same function.
pub fn slot_of(job: u16, chunk: u32, slot_bits: u32) -> usize {
    (chunk.wrapping_add(job as u32) & ((1u32 << slot_bits) - 1)) as usize
}

/// A slot's bookkeeping (its sums are kept apart, one word per value).
///
/// A slot whose chunk completed keeps its fields with `valid` clear (a
/// *done mark*, see [`Meta::done`]): the slot is free, but a late copy of
/// the chunk it completed is dropped instead of claiming it. A flush
/// clears every slot to the default.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Meta {
    /// Holds a chunk.
    pub valid: bool,
    /// The holder's job (4 bits).
    pub job: u8,
    /// Workers of the holder's job, as its first packet said (6 bits).
    pub workers: u8,
    /// Workers summed (6 bits).
    pub count: u8,
    /// The holder's chunk.
    pub chunk: u32,
    /// Workers summed, bit w = worker w.
    pub bitmap: u32,
}

impl Meta {
    /// Free, but remembers the chunk it completed last (only a completion
    /// leaves a slot invalid with a non-zero count).
    pub fn done(&self) -> bool {
        !self.valid && self.count != 0
    }
}

/// What the engine did with one packet (or one flushed slot).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Dropped whole by the header checks.
    Malformed(Malformed),
    /// The worker is already summed in the chunk's slot: dropped.
    Duplicate,
    /// Added into the chunk's slot; more workers to come.
    Add,
    /// Added, and every worker is now summed: RESULT out, slot freed
    /// with a done mark.
    Complete,
    /// A copy of the chunk the slot completed last (its done mark):
    /// dropped, so a copy sent before its chunk completed never claims the
    /// slot for a chunk nobody will finish. It is not answered: a RESULT
    /// sent again would go to every worker of the job (the fan-out copies
    /// it), one input packet making many output packets, and under loss
    /// that feedback swamps the output; a worker whose RESULT copy was
    /// lost gets it from a peer (`weft::grad::udp`'s WANT).
    Late,
    /// A single-worker job's chunk: RESULT out at once, no slot used.
    Single,
    /// An empty slot taken.
    Claim,
    /// A holder of lower priority, or an older chunk of the same job,
    /// evicted (EVICT out) and the slot taken. A job sends a chunk only
    /// once the chunk a window (at most the slot count) before it is
    /// complete, so an older chunk of its own in the slot is a stale claim
    /// (a late copy): evicting it frees the slot instead of sending the
    /// job's own packets to the host.
    Preempt,
    /// The slot is held by a job of no lower priority: forwarded to the host.
    Fallback,
    /// Flush: a held slot evicted.
    Flushed,
    /// Flush: an empty slot, nothing to do.
    Empty,
}

/// Where a lane's word comes from on a value beat.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Src {
    /// The packet's value.
    Value,
    /// The slot's old sum.
    Old,
    /// Old sum + value, wrapping at 32 bits.
    Sum,
}

/// What each value beat of a packet does to its slot and the output.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mode {
    /// Word written back to the slot, if any.
    pub write: Option<Src>,
    /// Word sent out, if any.
    pub out: Option<Src>,
}

/// The output header a decision sends, if any.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OutHeader {
    /// A RESULT or EVICT header built from these fields (reserved bytes 0).
    Built(Kind, Header),
    /// The input header beat forwarded with the FALLBACK flag added.
    Forward,
}

impl OutHeader {
    /// The output packet's kind.
    pub fn kind(&self) -> Kind {
        match self {
            OutHeader::Built(k, _) => *k,
            OutHeader::Forward => Kind::Fallback,
        }
    }
}

/// A decision: taken when the packet's header meets its slot.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Decision {
    /// What happened.
    pub verdict: Verdict,
    /// The slot's new bookkeeping, when it changes.
    pub meta: Option<Meta>,
    /// The output packet's header, when there is one.
    pub out: Option<OutHeader>,
    /// What the value beats do.
    pub mode: Mode,
}

fn mode(write: Option<Src>, out: Option<Src>) -> Mode {
    Mode { write, out }
}

fn result_or_evict(kind: Kind, cfg: &Config, m: &Meta) -> OutHeader {
    let flags = if kind == Kind::Result {
        flags::RESULT
    } else {
        flags::EVICT
    };
    OutHeader::Built(kind, slot_header(flags, cfg, m))
}

/// The NACK of an incomplete slot `m`: a RESULT (on `m_tuser`) whose
/// header has the NACK flag, the slot's count and bitmap.
fn nack(cfg: &Config, m: &Meta) -> OutHeader {
    OutHeader::Built(
        Kind::Result,
        slot_header(flags::RESULT | flags::NACK, cfg, m),
    )
}

/// An output header carrying slot `m`'s chunk, count and bitmap.
fn slot_header(flags: u8, cfg: &Config, m: &Meta) -> Header {
    Header {
        version: VERSION,
        flags,
        count: cfg.geometry().chunk_values() as u16,
        job: m.job as u16,
        worker: m.count,
        workers: m.workers,
        chunk: m.chunk,
        bitmap: m.bitmap,
    }
}

/// The priority of `job` in the two priority register words.
pub fn priority(prio: &[u32; 2], job: usize) -> u8 {
    let per = grad::JOBS_PER_PRIO_REG;
    let (_, f) = grad::prio_of(job % JOBS);
    f.get(prio[(job % JOBS) / per]) as u8
}

/// The decision for a valid DATA header `h` whose slot holds `m`, with the
/// priority registers `prio`.
pub fn decide(cfg: &Config, m: &Meta, h: &Header, prio: &[u32; 2]) -> Decision {
    let bit = 1u32 << (h.worker % MAX_WORKERS);
    let job = h.job as u8;
    let same = m.valid && m.job == job && m.chunk == h.chunk;
    if same && m.bitmap & bit != 0 {
        // A copy whose contribution is in: the chunk waits on someone
        // else's packet, and only the card knows whose. The NACK names who
        // is in, and the fan-out sends it to the others, so exactly the
        // missing workers send again (not every worker of the chunk). One
        // output packet per input packet, as every other decision.
        return Decision {
            verdict: Verdict::Duplicate,
            meta: None,
            out: Some(nack(cfg, m)),
            mode: mode(None, Some(Src::Value)),
        };
    }
    if same {
        let next = Meta {
            count: (m.count + 1) & 0x3f,
            bitmap: m.bitmap | bit,
            ..*m
        };
        if next.count == m.workers {
            return Decision {
                verdict: Verdict::Complete,
                meta: Some(Meta {
                    valid: false,
                    ..next
                }),
                out: Some(result_or_evict(Kind::Result, cfg, &next)),
                mode: mode(None, Some(Src::Sum)),
            };
        }
        return Decision {
            verdict: Verdict::Add,
            meta: Some(next),
            out: None,
            mode: mode(Some(Src::Sum), None),
        };
    }
    if m.done() && m.job == job && m.chunk == h.chunk && m.workers == h.workers {
        return Decision {
            verdict: Verdict::Late,
            meta: None,
            out: None,
            mode: Mode::default(),
        };
    }
    let mine = Meta {
        valid: true,
        job,
        workers: h.workers,
        count: 1,
        chunk: h.chunk,
        bitmap: bit,
    };
    if h.workers == 1 {
        // Complete on arrival: it needs no slot, so it never evicts one
        // (which would need a second output packet).
        return Decision {
            verdict: Verdict::Single,
            meta: None,
            out: Some(result_or_evict(Kind::Result, cfg, &mine)),
            mode: mode(None, Some(Src::Value)),
        };
    }
    if !m.valid {
        return Decision {
            verdict: Verdict::Claim,
            meta: Some(mine),
            out: None,
            mode: mode(Some(Src::Value), None),
        };
    }
    // Serial-number order (RFC 1982): chunk numbers wrap at 2^32.
    let newer = m.job == job && (h.chunk.wrapping_sub(m.chunk) as i32) > 0;
    if newer || priority(prio, job as usize) > priority(prio, m.job as usize) {
        return Decision {
            verdict: Verdict::Preempt,
            meta: Some(mine),
            out: Some(result_or_evict(Kind::Evict, cfg, m)),
            mode: mode(Some(Src::Value), Some(Src::Old)),
        };
    }
    Decision {
        verdict: Verdict::Fallback,
        meta: None,
        out: Some(OutHeader::Forward),
        mode: mode(None, Some(Src::Value)),
    }
}

/// The decision for a flushed slot holding `m`. Every slot is cleared,
/// done marks too: after a flush no chunk is remembered, so a new run may
/// number its chunks from 0 again.
pub fn flush_slot(cfg: &Config, m: &Meta) -> Decision {
    if !m.valid {
        return Decision {
            verdict: Verdict::Empty,
            meta: Some(Meta::default()),
            out: None,
            mode: Mode::default(),
        };
    }
    Decision {
        verdict: Verdict::Flushed,
        meta: Some(Meta::default()),
        out: Some(result_or_evict(Kind::Evict, cfg, m)),
        mode: mode(None, Some(Src::Old)),
    }
}

/// One lane of a value beat: the word written back and the word sent out.
pub fn lane(mode: &Mode, old: u32, value: u32) -> (Option<u32>, Option<u32>) {
    let pick = |s: Src| match s {
        Src::Value => value,
        Src::Old => old,
        // Two's-complement sums wrap: exact modulo 2^32, so a total that
        // fits in i32 is exact whatever the order of additions.
        Src::Sum => old.wrapping_add(value),
    };
    (mode.write.map(pick), mode.out.map(pick))
}

/// Counter indices, in `grad::COUNTERS` order (LO/HI pairs).
pub mod counter {
    /// Packets in.
    pub const PKTS: usize = 0;
    /// Packets summed on the card.
    pub const AGGREGATED: usize = 1;
    /// Chunks completed on the card.
    pub const COMPLETED: usize = 2;
    /// Preemptions.
    pub const PREEMPTED: usize = 3;
    /// Packets forwarded to the host.
    pub const FALLBACKS: usize = 4;
    /// Duplicates dropped.
    pub const DUPLICATES: usize = 5;
    /// Malformed packets dropped.
    pub const MALFORMED: usize = 6;
    /// Slots evicted by a flush.
    pub const FLUSHED: usize = 7;
    /// Number of counters.
    pub const N: usize = 8;
}

/// Counters a verdict increments at its decision (packets in and malformed
/// count at the header, one cycle earlier on the card).
pub fn decision_counters(v: Verdict) -> &'static [usize] {
    use counter::*;
    match v {
        Verdict::Malformed(_) | Verdict::Empty => &[],
        Verdict::Duplicate | Verdict::Late => &[DUPLICATES],
        Verdict::Add | Verdict::Claim => &[AGGREGATED],
        Verdict::Complete | Verdict::Single => &[AGGREGATED, COMPLETED],
        Verdict::Preempt => &[AGGREGATED, PREEMPTED],
        Verdict::Fallback => &[FALLBACKS],
        Verdict::Flushed => &[FLUSHED],
    }
}

/// What a register write asks the engine to do.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Commands {
    /// `CMD.FLUSH` was written 1.
    pub flush: bool,
    /// `CMD.RESET` was written 1.
    pub reset: bool,
}

/// The `grad` register block's state: priorities and counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    /// `PRIO_LO`, `PRIO_HI`.
    pub prio: [u32; 2],
    /// Counters (64-bit, wrapping).
    pub counters: [u64; counter::N],
    /// HI words latched by the last LO reads.
    pub hi_latch: [u32; counter::N],
}

impl Regs {
    /// The geometry word of `cfg`.
    pub fn geometry(cfg: &Config) -> u32 {
        cfg.lanes as u32
            | cfg.slot_bits << 8
            | (cfg.value_beats as u32) << 16
            | (MAX_WORKERS as u32) << 24
    }

    /// The value at byte address `addr` (no side effects); `None` when the
    /// address is not one of the engine's live registers.
    pub fn peek(&self, cfg: &Config, addr: u32, flushing: bool) -> Option<u32> {
        let word = addr & !3;
        if word == grad::PRIO_LO.addr {
            return Some(self.prio[0]);
        }
        if word == grad::PRIO_HI.addr {
            return Some(self.prio[1]);
        }
        if word == grad::CMD.addr {
            return Some(0);
        }
        if word == grad::STATUS.addr {
            return Some(grad::STATUS_FLUSHING.set(0, flushing as u32));
        }
        if word == grad::GEOMETRY.addr {
            return Some(Self::geometry(cfg));
        }
        let i = grad::COUNTERS.iter().position(|r| r.addr == word)?;
        Some(if i % 2 == 0 {
            self.counters[i / 2] as u32
        } else {
            self.hi_latch[i / 2]
        })
    }

    /// A read accepted at `addr`: reading a counter's LO word latches its HI.
    pub fn read_side_effect(&mut self, addr: u32) {
        let word = addr & !3;
        if let Some(i) = grad::COUNTERS.iter().position(|r| r.addr == word) {
            if i % 2 == 0 {
                self.hi_latch[i / 2] = (self.counters[i / 2] >> 32) as u32;
            }
        }
    }

    /// A register write; returns the commands it starts. Byte strobes
    /// select the bytes written.
    pub fn write(&mut self, addr: u32, data: u32, strb: u8) -> Commands {
        let word = addr & !3;
        let m = crate::csr::strobe_mask(strb);
        let mut cmd = Commands::default();
        if word == grad::PRIO_LO.addr {
            self.prio[0] = (self.prio[0] & !m) | (data & m);
        } else if word == grad::PRIO_HI.addr {
            self.prio[1] = (self.prio[1] & !m) | (data & m);
        } else if word == grad::CMD.addr && strb & 1 != 0 {
            cmd.flush = grad::CMD_FLUSH.get(data) != 0;
            cmd.reset = grad::CMD_RESET.get(data) != 0;
        }
        cmd
    }

    /// `CMD.RESET`: clear the counters and their latches.
    pub fn reset(&mut self) {
        self.counters = [0; counter::N];
        self.hi_latch = [0; counter::N];
    }

    /// Count one event.
    pub fn count(&mut self, i: usize) {
        self.counters[i] = self.counters[i].wrapping_add(1);
    }
}

/// A packet the engine sends out.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutPacket {
    /// Its kind (`m_tuser`).
    pub kind: Kind,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// The packet-level model: the engine's behaviour with the pipeline
/// abstracted away (each packet's decision and beats happen at once).
#[derive(Clone, Debug)]
pub struct GradModel {
    cfg: Config,
    /// Slot bookkeeping.
    pub slots: Vec<Meta>,
    /// Slot sums, `chunk_values` words per slot.
    pub sums: Vec<Vec<u32>>,
    /// Registers.
    pub regs: Regs,
}

impl GradModel {
    /// A fresh engine (as out of power-on: every slot empty, sums 0).
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            slots: vec![Meta::default(); cfg.slots()],
            sums: vec![vec![0; cfg.geometry().chunk_values()]; cfg.slots()],
            regs: Regs::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> Config {
        self.cfg
    }

    fn apply(
        &mut self,
        slot: usize,
        d: &Decision,
        values: &[u32],
        hdr_beat: &[u8],
    ) -> Option<OutPacket> {
        for &c in decision_counters(d.verdict) {
            self.regs.count(c);
        }
        let geo = self.cfg.geometry();
        let mut out_vals = Vec::with_capacity(geo.chunk_values());
        for (j, &v) in values.iter().enumerate() {
            let (w, o) = lane(&d.mode, self.sums[slot][j], v);
            if let Some(w) = w {
                self.sums[slot][j] = w;
            }
            out_vals.extend(o);
        }
        if let Some(m) = d.meta {
            self.slots[slot] = m;
        }
        let out = d.out?;
        let mut bytes = match out {
            OutHeader::Built(_, h) => {
                let mut b = h.encode().to_vec();
                b.resize(geo.beat_bytes(), 0);
                b
            }
            OutHeader::Forward => {
                let mut b = hdr_beat.to_vec();
                b.resize(geo.beat_bytes(), 0);
                b[1] |= flags::FALLBACK;
                b
            }
        };
        for v in out_vals {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        Some(OutPacket {
            kind: out.kind(),
            bytes,
        })
    }

    /// A packet arrives (its UDP payload, `tuser_size` = its length):
    /// the packet it sends out, if any.
    pub fn packet(&mut self, bytes: &[u8]) -> Option<OutPacket> {
        let geo = self.cfg.geometry();
        self.regs.count(counter::PKTS);
        let beat = &bytes[..bytes.len().min(geo.beat_bytes())];
        let h = match packet::validate(geo, beat, bytes.len()) {
            Ok(h) => h,
            Err(_) => {
                self.regs.count(counter::MALFORMED);
                return None;
            }
        };
        let slot = slot_of(h.job, h.chunk, self.cfg.slot_bits);
        let d = decide(&self.cfg, &self.slots[slot], &h, &self.regs.prio);
        let values: Vec<u32> = packet::values_of(geo, bytes).map(|v| v as u32).collect();
        self.apply(slot, &d, &values, beat)
    }

    /// `CMD.FLUSH`: an EVICT packet for every held slot, in slot order;
    /// every slot is empty afterwards.
    pub fn flush(&mut self) -> Vec<OutPacket> {
        let n = self.cfg.geometry().chunk_values();
        (0..self.cfg.slots())
            .filter_map(|s| {
                let d = flush_slot(&self.cfg, &self.slots[s]);
                self.apply(s, &d, &vec![0; n], &[0; HEADER_BYTES])
            })
            .collect()
    }

    /// A register write, with its commands carried out.
    pub fn write_reg(&mut self, addr: u32, data: u32, strb: u8) -> Vec<OutPacket> {
        let cmd = self.regs.write(addr, data, strb);
        if cmd.reset {
            self.regs.reset();
        }
        if cmd.flush {
            self.flush()
        } else {
            vec![]
        }
    }

    /// Read a register (between packets: no flush is ever in progress).
    pub fn read_reg(&mut self, addr: u32) -> Option<u32> {
        let v = self.regs.peek(&self.cfg, addr, false);
        self.regs.read_side_effect(addr);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grad_agg::packet::{decode, encode, Geometry};

    const CFG: Config = Config {
        lanes: 4,
        slot_bits: 2,
        value_beats: 2,
    };
    const G: Geometry = CFG.geometry();

    fn data(job: u16, chunk: u32, worker: u8, workers: u8, v: i32) -> Vec<u8> {
        let h = Header::data(G, job, chunk, worker, workers);
        encode(G, &h, &[v; 8]).unwrap()
    }

    fn prio(m: &mut GradModel, job: usize, p: u32) {
        let (r, f) = grad::prio_of(job);
        let old = m.regs.peek(&CFG, r.addr, false).unwrap();
        m.write_reg(r.addr, f.set(old, p), 0xf);
    }

    #[test]
    fn chunk_completes_once_every_worker_is_in() {
        let mut m = GradModel::new(CFG);
        assert!(m.packet(&data(1, 5, 0, 3, 10)).is_none());
        // A duplicate is not added; it brings back a NACK naming who is in.
        let n = m.packet(&data(1, 5, 0, 3, 99)).unwrap();
        assert_eq!(n.kind, Kind::Result, "a NACK leaves as a RESULT");
        let p = decode(G, &n.bytes).unwrap();
        assert_eq!(p.kind, Kind::Nack);
        assert_eq!(
            (
                p.header.bitmap,
                p.header.worker,
                p.header.workers,
                p.header.chunk
            ),
            (0b001, 1, 3, 5)
        );
        assert!(m.packet(&data(1, 5, 2, 3, -4)).is_none());
        let n = m.packet(&data(1, 5, 2, 3, -4)).unwrap();
        assert_eq!(decode(G, &n.bytes).unwrap().header.bitmap, 0b101);
        let r = m.packet(&data(1, 5, 1, 3, 1)).unwrap();
        assert_eq!(r.kind, Kind::Result);
        let p = decode(G, &r.bytes).unwrap();
        assert_eq!(p.values, vec![7; 8]);
        assert_eq!(
            (p.header.bitmap, p.header.worker, p.header.workers),
            (0b111, 3, 3)
        );
        assert!(!m.slots[slot_of(1, 5, 2)].valid, "slot freed");
        let c = m.regs.counters;
        assert_eq!(
            (
                c[counter::PKTS],
                c[counter::DUPLICATES],
                c[counter::COMPLETED],
                c[counter::AGGREGATED]
            ),
            (5, 2, 1, 3)
        );
    }

    #[test]
    fn higher_priority_preempts_equal_falls_back() {
        let mut m = GradModel::new(CFG);
        // Job 0 chunk 1 and job 1 chunk 0 share slot 1.
        assert_eq!(slot_of(0, 1, 2), slot_of(1, 0, 2));
        m.packet(&data(0, 1, 0, 2, 5));
        let f = m.packet(&data(1, 0, 0, 2, 6)).unwrap();
        assert_eq!(f.kind, Kind::Fallback);
        let mut want = data(1, 0, 0, 2, 6);
        want[1] |= flags::FALLBACK;
        assert_eq!(f.bytes, want, "forwarded unchanged but for the flag");
        prio(&mut m, 1, 9);
        let e = m.packet(&data(1, 0, 1, 2, 7)).unwrap();
        assert_eq!(e.kind, Kind::Evict);
        let p = decode(G, &e.bytes).unwrap();
        assert_eq!((p.header.job, p.header.chunk, p.header.bitmap), (0, 1, 1));
        assert_eq!(p.values, vec![5; 8]);
        // The lower-priority job now falls back; its partial went to the host.
        assert_eq!(m.packet(&data(0, 1, 1, 2, 5)).unwrap().kind, Kind::Fallback);
        assert_eq!(m.regs.counters[counter::PREEMPTED], 1);
        assert_eq!(m.regs.counters[counter::FALLBACKS], 2);
        let fl = m.flush();
        assert_eq!(fl.len(), 1);
        assert_eq!(decode(G, &fl[0].bytes).unwrap().values, vec![7; 8]);
        assert!(m.slots.iter().all(|s| !s.valid));
        assert!(m.flush().is_empty());
    }

    #[test]
    fn a_late_copy_is_dropped_and_never_claims() {
        let mut m = GradModel::new(CFG);
        m.packet(&data(1, 5, 0, 2, 10));
        assert_eq!(m.packet(&data(1, 5, 1, 2, 3)).unwrap().kind, Kind::Result);
        let s = slot_of(1, 5, 2);
        assert!(m.slots[s].done() && !m.slots[s].valid);
        // Worker 0's copy, sent before it saw the RESULT: dropped.
        assert!(m.packet(&data(1, 5, 0, 2, 10)).is_none());
        assert!(m.slots[s].done(), "nothing claimed");
        assert_eq!(m.regs.counters[counter::DUPLICATES], 1);
        // Another chunk in the slot claims it as a free slot.
        assert!(m.packet(&data(1, 5 + 4, 0, 2, 1)).is_none());
        assert!(m.slots[s].valid && m.slots[s].chunk == 9);
        // A flush forgets done marks, so a new run may reuse chunk numbers.
        let mut m = GradModel::new(CFG);
        m.packet(&data(1, 5, 0, 2, 10));
        m.packet(&data(1, 5, 1, 2, 3));
        assert!(m.flush().is_empty(), "a done mark is not evicted");
        assert_eq!(m.slots[s], Meta::default());
        assert!(m.packet(&data(1, 5, 0, 2, 10)).is_none(), "claimed afresh");
    }

    #[test]
    fn a_newer_chunk_of_the_same_job_evicts_a_stale_claim() {
        let mut m = GradModel::new(CFG);
        // A late copy of chunk 2 claims its slot; chunk 6 (same slot) of the
        // same job evicts it, at equal priority; chunk 2 again falls back.
        m.packet(&data(0, 2, 1, 2, 4));
        let e = m.packet(&data(0, 6, 0, 2, 1)).unwrap();
        assert_eq!(e.kind, Kind::Evict);
        let p = decode(G, &e.bytes).unwrap();
        assert_eq!((p.header.chunk, p.header.bitmap), (2, 0b10));
        assert_eq!(p.values, vec![4; 8]);
        assert_eq!(m.packet(&data(0, 2, 0, 2, 4)).unwrap().kind, Kind::Fallback);
        // Chunk numbers wrap: 1 is newer than u32::MAX - 2 (same slot).
        let mut m = GradModel::new(CFG);
        m.packet(&data(0, u32::MAX - 2, 0, 2, 4));
        assert_eq!(m.packet(&data(0, 1, 0, 2, 1)).unwrap().kind, Kind::Evict);
        assert_eq!(m.regs.counters[counter::PREEMPTED], 1);
    }

    #[test]
    fn single_worker_chunks_pass_through_without_a_slot() {
        let mut m = GradModel::new(CFG);
        m.packet(&data(0, 1, 0, 2, 5));
        let r = m.packet(&data(1, 0, 0, 1, -3)).unwrap();
        assert_eq!(r.kind, Kind::Result);
        assert_eq!(decode(G, &r.bytes).unwrap().header.bitmap, 1);
        assert!(m.slots[1].valid && m.slots[1].job == 0, "holder untouched");
    }

    #[test]
    fn sums_wrap_and_stay_exact_modulo_2_32() {
        let mut m = GradModel::new(CFG);
        m.packet(&data(2, 0, 0, 3, i32::MAX));
        m.packet(&data(2, 0, 1, 3, i32::MAX));
        let r = m.packet(&data(2, 0, 2, 3, -i32::MAX)).unwrap();
        assert_eq!(decode(G, &r.bytes).unwrap().values, vec![i32::MAX; 8]);
    }

    #[test]
    fn malformed_packets_and_counter_latches() {
        let mut m = GradModel::new(CFG);
        let mut p = data(1, 0, 0, 2, 1);
        p.pop();
        assert!(m.packet(&p).is_none());
        assert!(m.packet(&data(16, 0, 0, 2, 1)).is_none());
        assert!(m.packet(&[]).is_none());
        assert_eq!(m.regs.counters[counter::MALFORMED], 3);
        m.regs.counters[counter::PKTS] = 0x1_0000_0002;
        let lo = grad::COUNTERS[0].addr;
        let hi = grad::COUNTERS[1].addr;
        assert_eq!(m.read_reg(hi), Some(0), "HI before any LO read");
        assert_eq!(m.read_reg(lo), Some(2));
        assert_eq!(m.read_reg(hi), Some(1));
        m.write_reg(grad::CMD.addr, grad::CMD_RESET.set(0, 1), 1);
        assert_eq!(m.read_reg(lo), Some(0));
        let g = m.read_reg(grad::GEOMETRY.addr).unwrap();
        assert_eq!(grad::GEOMETRY_VALUE_BEATS.get(g), 2);
        assert_eq!(grad::GEOMETRY_MAX_WORKERS.get(g), 32);
    }
}
