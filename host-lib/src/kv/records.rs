//! The collector's side of the card's record frames (`docs/wire.md`,
//! "Key-value records"): partial sums the card spills during a job and the
//! table's contents at a flush, many records per frame, numbered so that a
//! lost frame is noticed instead of silently giving wrong sums.

use super::{KvError, Result};
use std::collections::HashMap;
use weft_model::wire;

/// What a payload was.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Taken {
    /// Not a record frame of the card's (ignored).
    Other,
    /// Records, merged.
    Records,
    /// The flush's last frame, merged: the card's table is empty and every
    /// record before it has arrived.
    Fin,
}

/// Merged sums and what it took.
#[derive(Clone, Debug, Default)]
pub struct Records {
    next_seq: u32,
    /// Per-key sums, exact as `i64`.
    pub sums: HashMap<u32, i64>,
    /// Records merged: `spill + flush`.
    pub records: u64,
    /// Records from spills.
    pub spill: u64,
    /// Records from the flush.
    pub flush: u64,
    /// Record frames taken.
    pub frames: u64,
}

impl Records {
    /// A collector expecting frame sequence number `first` next (the value
    /// written to `net.PACK_SEQ`).
    pub fn new(first: u32) -> Self {
        Self {
            next_seq: first,
            ..Self::default()
        }
    }

    /// Take one UDP payload from the card's key-value port. A record frame
    /// out of sequence fails: a frame was lost and the sums would be wrong.
    pub fn take(&mut self, b: &[u8]) -> Result<Taken> {
        if b.len() < 16 || b[1] & wire::KV_FLAG_RECORDS == 0 {
            return Ok(Taken::Other);
        }
        let seq = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        if seq != self.next_seq {
            return Err(KvError::RecordsLost {
                expected: self.next_seq,
                got: seq,
            });
        }
        self.next_seq = seq.wrapping_add(1);
        let flush = b[1] & wire::KV_FLAG_FLUSH != 0;
        let n = u16::from_le_bytes([b[2], b[3]]) as usize;
        // The count says how many records follow; a frame padded to the
        // Ethernet minimum carries zeros after them, which are not records.
        for r in b[16..].chunks_exact(8).take(n) {
            let k = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
            let v = i32::from_le_bytes([r[4], r[5], r[6], r[7]]);
            *self.sums.entry(k).or_insert(0) += v as i64;
            self.records += 1;
            if flush {
                self.flush += 1;
            } else {
                self.spill += 1;
            }
        }
        self.frames += 1;
        Ok(if b[1] & wire::KV_FLAG_FIN != 0 {
            Taken::Fin
        } else {
            Taken::Records
        })
    }

    /// Copy the counts into a job's statistics.
    pub fn fill(&self, st: &mut super::Stats) {
        st.keys = self.sums.len() as u64;
        st.host_records = self.records;
        st.spill_records = self.spill;
        st.flush_records = self.flush;
        st.record_frames = self.frames;
    }
}
