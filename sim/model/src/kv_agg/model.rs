//! The key-value aggregation engine's reference model: its specification at
//! the level of packets, records and counters.

use super::packet::{self, Ack, AckStatus, RecordBeat, RecordKind, HEADER_BYTES, TUPLE_BYTES};
use super::Config;

/// Sequence window per sender, in packets.
pub const WINDOW: u32 = 32;
/// Saturation value of a slot's hit counter.
pub const HITS_MAX: u8 = 7;

/// The slot index of `key` in a bank of `1 << slot_bits` slots: an
/// xor-shift fold, cheap in hardware (no multiplier).
pub fn slot_of(key: u32, slot_bits: u32) -> usize {
    let h = key ^ (key >> 11) ^ (key >> 22);
    (h & ((1u32 << slot_bits) - 1)) as usize
}

/// One slot of a bank.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Slot {
    /// Holds a key.
    pub valid: bool,
    /// The resident key.
    pub key: u32,
    /// Its partial sum.
    pub acc: i32,
    /// Saturating hit counter (0..=7), aged by collisions.
    pub hits: u8,
}

/// The engine's event counters (the `kv` register block).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Data packets accepted for aggregation.
    pub pkts: u64,
    /// Tuples in accepted packets.
    pub tuples_in: u64,
    /// Tuples absorbed into a slot.
    pub aggregated: u64,
    /// Records spilled (rejected newcomers + evictions + overflows).
    pub spilled: u64,
    /// Evictions.
    pub evicted: u64,
    /// Overflow spills.
    pub overflows: u64,
    /// Duplicate packets.
    pub dup_pkts: u64,
    /// Malformed packets.
    pub malformed: u64,
    /// Packets ahead of their sender's window.
    pub window_drops: u64,
}

impl Counters {
    /// In register order (`kv::COUNTERS`, LO/HI pairs).
    pub fn as_array(&self) -> [u64; 9] {
        [
            self.pkts,
            self.tuples_in,
            self.aggregated,
            self.spilled,
            self.evicted,
            self.overflows,
            self.dup_pkts,
            self.malformed,
            self.window_drops,
        ]
    }
}

/// A sender's sequence window: `base`, the lowest sequence number not yet
/// received, and `bits`, bit `i` set when `base + i` has been received.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// The lowest sequence number not yet received.
    pub base: u32,
    /// Bit `i`: `base + i` received (`WINDOW` bits).
    pub bits: u32,
}

impl Window {
    /// A packet with sequence number `seq` arrives: its ack status, or
    /// `None` when it is ahead of the window (dropped unacknowledged). A new
    /// packet is marked and the base slides over the received prefix; a
    /// duplicate leaves the window as it is.
    pub fn arrive(&mut self, seq: u32) -> Option<AckStatus> {
        let d = seq.wrapping_sub(self.base);
        if d >= 1 << 31 || (d < WINDOW && self.bits & (1 << d) != 0) {
            return Some(AckStatus::Duplicate);
        }
        if d >= WINDOW {
            return None;
        }
        self.bits |= 1 << d;
        let t = self.bits.trailing_ones();
        self.bits = self.bits.checked_shr(t).unwrap_or(0);
        self.base = self.base.wrapping_add(t);
        Some(AckStatus::New)
    }
}

/// What happened to one tuple in its lane.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Absorbed into its slot: moved in or added.
    Absorbed,
    /// Absorbed, and a partial sum left the slot: the evicted resident's,
    /// or the key's own when the sum would have overflowed.
    AbsorbedWithSpill {
        /// An eviction (else an overflow).
        evicted: bool,
        /// The spilled record's key.
        key: u32,
        /// The spilled partial sum.
        acc: i32,
    },
    /// Not absorbed: the tuple itself spills.
    Rejected,
}

impl Outcome {
    /// The spill record of tuple `(key, value)` with this outcome, if any.
    pub fn record(&self, key: u32, value: i32) -> Option<(u32, i32)> {
        match *self {
            Outcome::Absorbed => None,
            Outcome::AbsorbedWithSpill { key, acc, .. } => Some((key, acc)),
            Outcome::Rejected => Some((key, value)),
        }
    }

    /// Count the outcome in `c` (`AGGREGATED`, `SPILLED`, `EVICTED`,
    /// `OVERFLOWS`).
    pub fn count(&self, c: &mut Counters) {
        match *self {
            Outcome::Absorbed => c.aggregated += 1,
            Outcome::AbsorbedWithSpill { evicted, .. } => {
                c.aggregated += 1;
                c.spilled += 1;
                if evicted {
                    c.evicted += 1;
                } else {
                    c.overflows += 1;
                }
            }
            Outcome::Rejected => c.spilled += 1,
        }
    }
}

/// Tuple `(key, value)` meets `slot`, the slot of `key` in its lane's bank:
/// the slot's new state and what happened to the tuple.
pub fn update_slot(slot: &mut Slot, key: u32, value: i32, replace: bool) -> Outcome {
    if !slot.valid {
        *slot = Slot {
            valid: true,
            key,
            acc: value,
            hits: 1,
        };
        return Outcome::Absorbed;
    }
    if slot.key == key {
        slot.hits = (slot.hits + 1).min(HITS_MAX);
        return match slot.acc.checked_add(value) {
            Some(sum) => {
                slot.acc = sum;
                Outcome::Absorbed
            }
            None => {
                // Spill the partial and restart: nothing wraps.
                let acc = slot.acc;
                slot.acc = value;
                Outcome::AbsorbedWithSpill {
                    evicted: false,
                    key,
                    acc,
                }
            }
        };
    }
    if replace && slot.hits == 0 {
        let old = *slot;
        *slot = Slot {
            valid: true,
            key,
            acc: value,
            hits: 1,
        };
        return Outcome::AbsorbedWithSpill {
            evicted: true,
            key: old.key,
            acc: old.acc,
        };
    }
    if replace {
        // A collision ages the resident: a cold key yields its slot to a
        // later newcomer, a hot one keeps being refreshed by its hits.
        slot.hits -= 1;
    }
    Outcome::Rejected
}

/// What a register write asks the engine to do.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Commands {
    /// `CMD.FLUSH` was written 1.
    pub flush: bool,
    /// `CMD.RESET` was written 1.
    pub reset: bool,
}

/// The engine's registers: `CTRL.REPLACE`, `JOB` and the counters with
/// their latched HI words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Regs {
    /// Replacement enabled (`kv.CTRL.REPLACE`).
    pub replace: bool,
    /// Active job (`kv.JOB`).
    pub job: u16,
    /// Counters.
    pub counters: Counters,
    /// HI words latched by the last LO reads, per counter.
    pub hi_latch: [u32; 9],
}

impl Default for Regs {
    /// As out of power-on: every register at its reset value.
    fn default() -> Self {
        use weft_regs::{kv, Value};
        let ctrl = match kv::CTRL.value {
            Value::Live { reset } => reset,
            _ => 0,
        };
        Self {
            replace: kv::CTRL_REPLACE.get(ctrl) != 0,
            job: 0,
            counters: Counters::default(),
            hi_latch: [0; 9],
        }
    }
}

impl Regs {
    /// The geometry word of `cfg` (`kv.GEOMETRY`).
    pub fn geometry(cfg: &Config) -> u32 {
        cfg.lanes as u32 | cfg.slot_bits << 8 | (cfg.senders as u32) << 16 | WINDOW << 24
    }

    /// The value at byte address `addr` (no side effects), with
    /// `STATUS.FLUSHING` = `flushing`; `None` for addresses that are not
    /// the engine's live registers.
    pub fn peek(&self, cfg: &Config, addr: u32, flushing: bool) -> Option<u32> {
        use weft_regs::kv;
        let word = addr & !3;
        if word == kv::CTRL.addr {
            return Some(kv::CTRL_REPLACE.set(0, self.replace as u32));
        }
        if word == kv::JOB.addr {
            return Some(self.job as u32);
        }
        if word == kv::CMD.addr {
            return Some(0);
        }
        if word == kv::STATUS.addr {
            return Some(kv::STATUS_FLUSHING.set(0, flushing as u32));
        }
        if word == kv::GEOMETRY.addr {
            return Some(Self::geometry(cfg));
        }
        let i = kv::COUNTERS.iter().position(|r| r.addr == word)?;
        let c = self.counters.as_array()[i / 2];
        Some(if i % 2 == 0 {
            c as u32
        } else {
            self.hi_latch[i / 2]
        })
    }

    /// A read accepted at `addr`: reading a counter's LO word latches its HI.
    pub fn read_side_effect(&mut self, addr: u32) {
        use weft_regs::kv;
        let word = addr & !3;
        if let Some(i) = kv::COUNTERS.iter().position(|r| r.addr == word) {
            if i % 2 == 0 {
                self.hi_latch[i / 2] = (self.counters.as_array()[i / 2] >> 32) as u32;
            }
        }
    }

    /// Write a register; returns the commands it starts. Byte strobes
    /// select the bytes written; read-only words are ignored (the CSR
    /// block answers SLVERR before a write gets here).
    pub fn write(&mut self, addr: u32, data: u32, strb: u8) -> Commands {
        use weft_regs::kv;
        let word = addr & !3;
        let m = crate::csr::strobe_mask(strb);
        let merge = |old: u32| (old & !m) | (data & m);
        let mut cmd = Commands::default();
        if word == kv::CTRL.addr {
            let v = merge(kv::CTRL_REPLACE.set(0, self.replace as u32));
            self.replace = kv::CTRL_REPLACE.get(v) != 0;
        } else if word == kv::JOB.addr {
            self.job = merge(self.job as u32) as u16;
        } else if word == kv::CMD.addr {
            let v = data & m;
            cmd.flush = kv::CMD_FLUSH.get(v) != 0;
            cmd.reset = kv::CMD_RESET.get(v) != 0;
        }
        cmd
    }

    /// Clear the counters and their latches (`CMD.RESET`).
    pub fn clear_counters(&mut self) {
        self.counters = Counters::default();
        self.hi_latch = [0; 9];
    }
}

/// The reference model.
#[derive(Clone, Debug)]
pub struct KvModel {
    cfg: Config,
    /// `banks[lane][slot]`.
    pub banks: Vec<Vec<Slot>>,
    windows: Vec<Window>,
    /// Registers.
    pub regs: Regs,
}

impl KvModel {
    /// A fresh engine (as out of power-on).
    pub fn new(cfg: Config) -> Self {
        Self {
            cfg,
            banks: vec![vec![Slot::default(); 1 << cfg.slot_bits]; cfg.lanes],
            windows: vec![Window::default(); cfg.senders],
            regs: Regs::default(),
        }
    }

    /// Read an engine register (byte address); `None` for addresses that are
    /// not the engine's live registers. Reading a counter's LO word latches
    /// its HI word.
    pub fn read_reg(&mut self, addr: u32) -> Option<u32> {
        // A flush completes before any later register access is served.
        let v = self.regs.peek(&self.cfg, addr, false);
        self.regs.read_side_effect(addr);
        v
    }

    /// Write an engine register; returns the commands it starts. Byte
    /// strobes select the bytes written; read-only words are ignored (the
    /// CSR block answers SLVERR before a write gets here).
    pub fn write_reg(&mut self, addr: u32, data: u32, strb: u8) -> Commands {
        self.regs.write(addr, data, strb)
    }

    /// The engine's geometry word (`kv.GEOMETRY`).
    pub fn geometry(&self) -> u32 {
        Regs::geometry(&self.cfg)
    }

    /// `CMD.RESET`: clear every window and the counters.
    pub fn reset(&mut self) {
        self.windows = vec![Window::default(); self.cfg.senders];
        self.regs.clear_counters();
    }

    /// `CMD.FLUSH`: the flush records (rows with at least one resident, in
    /// slot order, lane i = bank i) and the flush-done beat; clears the table.
    pub fn flush(&mut self) -> Vec<RecordBeat> {
        let mut out = vec![];
        for s in 0..(1usize << self.cfg.slot_bits) {
            let lanes: Vec<_> = self
                .banks
                .iter_mut()
                .map(|b| {
                    let slot = std::mem::take(&mut b[s]);
                    slot.valid.then_some((slot.key, slot.acc))
                })
                .collect();
            if lanes.iter().any(Option::is_some) {
                out.push(RecordBeat {
                    kind: RecordKind::Flush,
                    lanes,
                });
            }
        }
        out.push(RecordBeat {
            kind: RecordKind::FlushDone,
            lanes: vec![None; self.cfg.lanes],
        });
        out
    }

    /// A packet arrives (its UDP payload): returns its ack, if any, and the
    /// spill beats it causes, one per input beat that spilled.
    pub fn packet(&mut self, bytes: &[u8]) -> (Option<Ack>, Vec<RecordBeat>) {
        let h = match packet::validate(bytes, self.regs.job, self.cfg.senders) {
            Ok(h) => h,
            Err(_) => {
                self.regs.counters.malformed += 1;
                return (None, vec![]);
            }
        };
        let w = &mut self.windows[h.sender as usize];
        let Some(status) = w.arrive(h.seq) else {
            self.regs.counters.window_drops += 1;
            return (None, vec![]);
        };
        let ack = Ack {
            sender: h.sender,
            seq: h.seq,
            status,
            base: w.base as u8,
        };
        let c = &mut self.regs.counters;
        if status == AckStatus::Duplicate {
            c.dup_pkts += 1;
            return (Some(ack), vec![]);
        }
        c.pkts += 1;
        c.tuples_in += h.count as u64;
        let lanes = self.cfg.lanes;
        let header_lanes = HEADER_BYTES / TUPLE_BYTES;
        let mut beats: Vec<Vec<Option<(u32, i32)>>> = vec![];
        for (j, (key, value)) in packet::tuples(bytes).enumerate() {
            let pos = j + header_lanes;
            let (beat, lane) = (pos / lanes, pos % lanes);
            if beats.len() <= beat {
                beats.resize(beat + 1, vec![None; lanes]);
            }
            let slot = &mut self.banks[lane][slot_of(key, self.cfg.slot_bits)];
            let outcome = update_slot(slot, key, value, self.regs.replace);
            outcome.count(&mut self.regs.counters);
            beats[beat][lane] = outcome.record(key, value);
        }
        let spills = beats
            .into_iter()
            .filter(|l| l.iter().any(Option::is_some))
            .map(|lanes| RecordBeat {
                kind: RecordKind::Spill,
                lanes,
            })
            .collect();
        (Some(ack), spills)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv_agg::packet::{encode, Header};
    use crate::kv_agg::Config;
    use std::collections::HashMap;

    const CFG: Config = Config {
        lanes: 4,
        slot_bits: 2,
        senders: 4,
    };

    fn pkt(sender: u16, seq: u32, tuples: &[(u32, i32)]) -> Vec<u8> {
        encode(&Header::data(0, sender, seq, tuples.len() as u16), tuples)
    }

    /// Sum of every record the host would receive plus a final flush.
    fn host_view(m: &mut KvModel, beats: &[RecordBeat]) -> HashMap<u32, i64> {
        let mut sums = HashMap::new();
        for b in beats.iter().chain(m.flush().iter()) {
            for (k, v) in b.lanes.iter().flatten() {
                *sums.entry(*k).or_insert(0i64) += *v as i64;
            }
        }
        sums.retain(|_, v| *v != 0);
        sums
    }

    #[test]
    fn exact_under_overflow_collisions_and_duplicates() {
        let mut m = KvModel::new(CFG);
        let mut beats = vec![];
        let mut want: HashMap<u32, i64> = HashMap::new();
        let tuples: Vec<(u32, i32)> = (0..40)
            .map(|i| ((i * 7 % 13) as u32, if i % 3 == 0 { i32::MAX } else { -i }))
            .collect();
        for (seq, chunk) in tuples.chunks(5).enumerate() {
            let p = pkt(1, seq as u32, chunk);
            for _ in 0..2 {
                let (ack, b) = m.packet(&p);
                assert_eq!(ack.unwrap().seq, seq as u32);
                beats.extend(b);
            }
            for (k, v) in chunk {
                *want.entry(*k).or_default() += *v as i64;
            }
        }
        want.retain(|_, v| *v != 0);
        assert_eq!(m.regs.counters.dup_pkts, 8);
        assert!(m.regs.counters.spilled > 0);
        assert_eq!(
            m.regs.counters.tuples_in,
            m.regs.counters.aggregated + m.regs.counters.spilled
                - m.regs.counters.evicted
                - m.regs.counters.overflows
        );
        assert_eq!(host_view(&mut m, &beats), want);
    }

    #[test]
    fn overflow_spills_the_partial_and_restarts() {
        let mut m = KvModel::new(CFG);
        // A lone tuple always lands in lane 2: three of them overflow one slot.
        let mut beats = vec![];
        for seq in 0..3 {
            beats.extend(m.packet(&pkt(1, seq, &[(1000, i32::MAX)])).1);
        }
        assert_eq!(m.regs.counters.overflows, 2);
        assert_eq!(beats.len(), 2);
        assert_eq!(beats[0].lanes[2], Some((1000, i32::MAX)));
        let sums = host_view(&mut m, &beats);
        assert_eq!(sums[&1000], 3 * i32::MAX as i64);
    }

    #[test]
    fn window_accepts_reordering_and_drops_far_ahead() {
        let mut m = KvModel::new(CFG);
        assert_eq!(
            m.packet(&pkt(0, 1, &[(1, 1)])).0.unwrap().status,
            AckStatus::New
        );
        assert_eq!(
            m.packet(&pkt(0, 0, &[(1, 1)])).0.unwrap().status,
            AckStatus::New
        );
        assert_eq!(
            m.packet(&pkt(0, 1, &[(1, 1)])).0.unwrap().status,
            AckStatus::Duplicate
        );
        assert!(m.packet(&pkt(0, 2 + WINDOW, &[(1, 1)])).0.is_none());
        assert_eq!(m.regs.counters.window_drops, 1);
        assert!(
            m.packet(&pkt(9, 0, &[(1, 1)])).0.is_none(),
            "unknown sender"
        );
        let mut bad = pkt(0, 2, &[(1, 1)]);
        bad.pop();
        assert!(m.packet(&bad).0.is_none());
        assert_eq!(m.regs.counters.malformed, 2);
        assert_eq!(m.regs.counters.pkts, 2);
    }

    #[test]
    fn cold_residents_yield_hot_keys_stay() {
        // Keys 0 and 4 share slot 0 of a 4-slot bank; key 0 is hot.
        assert_eq!(slot_of(0, 2), slot_of(4, 2));
        let mut m = KvModel::new(Config {
            lanes: 2,
            slot_bits: 2,
            senders: 1,
        });
        let mut seq = 0;
        let mut send = |m: &mut KvModel, k: u32| {
            m.packet(&pkt(0, seq, &[(k, 1), (k, 1)]));
            seq += 1;
        };
        send(&mut m, 4); // cold key first: resident, hits 1 in each bank
        for _ in 0..5 {
            send(&mut m, 0); // first collision ages it to 0, the next evicts it
        }
        assert_eq!(m.regs.counters.evicted, 2, "one eviction per bank");
        assert!(m.banks.iter().all(|b| b[slot_of(0, 2)].key == 0));
        m.regs.replace = false;
        send(&mut m, 4);
        assert!(
            m.banks.iter().all(|b| b[slot_of(0, 2)].key == 0),
            "no replacement when off"
        );
    }
}
