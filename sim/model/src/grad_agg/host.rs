//! The host fallback: completes, in software and exactly, the chunks the
//! card could not finish (the host library uses this merge).
//!
//! The card sends the host three kinds of packet: RESULT (a chunk complete
//! on the card), EVICT (a slot's partial sum: the workers in its bitmap,
//! summed) and FALLBACK (one worker's DATA packet the card could not
//! place). Each partial is exact for its bitmap, so the host sums disjoint
//! partials until the bitmaps cover every worker of the job. Sums wrap at
//! 32 bits as the card's do: the result is exact modulo 2^32, and exact
//! outright whenever the true total fits in an `i32` (the host chooses its
//! fixed-point scale so that it does).
//!
//! Duplicates can reach the host: a worker's retransmission may land in a
//! slot after its first copy was evicted. A partial whose workers are all
//! merged already is dropped; one that contains every partial it overlaps
//! replaces them (it is their sum plus more); any other overlap cannot be
//! separated into per-worker sums and is reported as a [`MergeError::Conflict`]
//! (the chunk must then be sent again by the workers it names).

use super::packet::{self, Geometry, Kind, PacketError};
use std::collections::HashMap;
use thiserror::Error;

/// A chunk's identity.
pub type ChunkId = (u16, u32);

/// One exact partial sum: the workers in `bitmap`, summed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partial {
    /// Workers summed.
    pub bitmap: u32,
    /// Their sums, wrapping.
    pub sums: Vec<i32>,
}

/// Why a packet could not be merged.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum MergeError {
    /// The bytes are not a packet of the geometry.
    #[error("undecodable packet from the card: {0}")]
    Decode(#[from] PacketError),
    /// A DATA packet (the card sends none to the host) or a NACK (it
    /// carries no sums: the workers act on it, not the merge).
    #[error("job {job} chunk {chunk}: a DATA or NACK packet is not a partial sum")]
    NotOutput {
        /// Job.
        job: u16,
        /// Chunk.
        chunk: u32,
    },
    /// The packet's worker count is impossible or disagrees with earlier ones.
    #[error("job {job} chunk {chunk}: {got} workers, the chunk has {want}")]
    Workers {
        /// Job.
        job: u16,
        /// Chunk.
        chunk: u32,
        /// Workers the packet says.
        got: u8,
        /// Workers known for the chunk (0 when the packet's own is invalid).
        want: u8,
    },
    /// A bitmap names workers outside the job or none at all.
    #[error("job {job} chunk {chunk}: bitmap {bitmap:#x} does not fit {workers} workers")]
    Bitmap {
        /// Job.
        job: u16,
        /// Chunk.
        chunk: u32,
        /// The bitmap.
        bitmap: u32,
        /// Workers of the chunk.
        workers: u8,
    },
    /// A partial overlaps merged ones in a way sums cannot be separated.
    #[error("job {job} chunk {chunk}: partial {got:#x} overlaps merged workers {have:#x}; the chunk must be resent")]
    Conflict {
        /// Job.
        job: u16,
        /// Chunk.
        chunk: u32,
        /// Workers merged so far.
        have: u32,
        /// The partial's workers.
        got: u32,
    },
}

/// Merge `p` into the disjoint partials `parts`. Returns `Ok(false)` when
/// `p` adds no worker (a duplicate, dropped).
pub fn merge_partial(parts: &mut Vec<Partial>, p: Partial) -> Result<bool, u32> {
    let have = parts.iter().fold(0, |a, q| a | q.bitmap);
    if p.bitmap & !have == 0 {
        return Ok(false);
    }
    let overlapping = parts.iter().filter(|q| q.bitmap & p.bitmap != 0);
    if overlapping.clone().any(|q| q.bitmap & !p.bitmap != 0) {
        return Err(have);
    }
    // Every partial `p` overlaps is contained in it: `p` replaces them.
    parts.retain(|q| q.bitmap & p.bitmap == 0);
    parts.push(p);
    Ok(true)
}

/// A chunk completed: where, and its sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Completed {
    /// The chunk.
    pub id: ChunkId,
    /// Completed on the card (a RESULT) rather than by the host.
    pub on_card: bool,
    /// The sums over every worker.
    pub sums: Vec<i32>,
}

#[derive(Clone, Debug, Default)]
struct Pending {
    workers: u8,
    parts: Vec<Partial>,
}

/// The host's merge state over every job's chunks.
#[derive(Clone, Debug)]
pub struct HostMerge {
    geo: Geometry,
    pending: HashMap<ChunkId, Pending>,
    done: HashMap<ChunkId, Completed>,
    /// Packets that added nothing (duplicates, or late partials of a
    /// completed chunk).
    pub dropped: u64,
}

fn full(workers: u8) -> u32 {
    if workers >= 32 {
        u32::MAX
    } else {
        (1u32 << workers) - 1
    }
}

impl HostMerge {
    /// An empty merge for packets of `geo`.
    pub fn new(geo: Geometry) -> Self {
        Self {
            geo,
            pending: HashMap::new(),
            done: HashMap::new(),
            dropped: 0,
        }
    }

    /// Take one packet from the card. Returns the chunk it completes, if any.
    pub fn accept(&mut self, bytes: &[u8]) -> Result<Option<Completed>, MergeError> {
        let p = packet::decode(self.geo, bytes)?;
        let h = p.header;
        let id = (h.job, h.chunk);
        if h.workers == 0 || h.workers > packet::MAX_WORKERS {
            return Err(MergeError::Workers {
                job: h.job,
                chunk: h.chunk,
                got: h.workers,
                want: 0,
            });
        }
        let bitmap = match p.kind {
            Kind::Data | Kind::Nack => {
                return Err(MergeError::NotOutput {
                    job: h.job,
                    chunk: h.chunk,
                })
            }
            Kind::Fallback => 1u32.checked_shl(h.worker as u32).unwrap_or(0),
            Kind::Result | Kind::Evict => h.bitmap,
        };
        if bitmap == 0 || bitmap & !full(h.workers) != 0 {
            return Err(MergeError::Bitmap {
                job: h.job,
                chunk: h.chunk,
                bitmap,
                workers: h.workers,
            });
        }
        if self.done.contains_key(&id) {
            self.dropped += 1;
            return Ok(None);
        }
        let pend = self.pending.entry(id).or_insert_with(|| Pending {
            workers: h.workers,
            parts: vec![],
        });
        if pend.workers != h.workers {
            return Err(MergeError::Workers {
                job: h.job,
                chunk: h.chunk,
                got: h.workers,
                want: pend.workers,
            });
        }
        if p.kind == Kind::Result {
            // Complete on the card: authoritative, whatever the host held.
            if bitmap != full(h.workers) {
                return Err(MergeError::Bitmap {
                    job: h.job,
                    chunk: h.chunk,
                    bitmap,
                    workers: h.workers,
                });
            }
            self.pending.remove(&id);
            return Ok(Some(self.finish(id, true, p.values)));
        }
        let part = Partial {
            bitmap,
            sums: p.values,
        };
        match merge_partial(&mut pend.parts, part) {
            Ok(false) => {
                self.dropped += 1;
                return Ok(None);
            }
            Ok(true) => {}
            Err(have) => {
                return Err(MergeError::Conflict {
                    job: h.job,
                    chunk: h.chunk,
                    have,
                    got: bitmap,
                })
            }
        }
        let have = pend.parts.iter().fold(0, |a, q| a | q.bitmap);
        if have != full(pend.workers) {
            return Ok(None);
        }
        let mut sums = vec![0i32; self.geo.chunk_values()];
        for q in &pend.parts {
            for (s, v) in sums.iter_mut().zip(&q.sums) {
                *s = s.wrapping_add(*v);
            }
        }
        self.pending.remove(&id);
        Ok(Some(self.finish(id, false, sums)))
    }

    fn finish(&mut self, id: ChunkId, on_card: bool, sums: Vec<i32>) -> Completed {
        let c = Completed { id, on_card, sums };
        self.done.insert(id, c.clone());
        c
    }

    /// A completed chunk.
    pub fn result(&self, id: ChunkId) -> Option<&Completed> {
        self.done.get(&id)
    }

    /// Every completed chunk.
    pub fn completed(&self) -> impl Iterator<Item = &Completed> {
        self.done.values()
    }

    /// Chunks with some workers merged but not all: `(chunk, workers merged)`.
    pub fn incomplete(&self) -> impl Iterator<Item = (ChunkId, u32)> + '_ {
        self.pending
            .iter()
            .map(|(id, p)| (*id, p.parts.iter().fold(0, |a, q| a | q.bitmap)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(bitmap: u32, v: i32) -> Partial {
        Partial {
            bitmap,
            sums: vec![v],
        }
    }

    #[test]
    fn disjoint_add_subset_drop_superset_replace_overlap_conflict() {
        let mut parts = vec![];
        assert_eq!(merge_partial(&mut parts, part(0b001, 1)), Ok(true));
        assert_eq!(merge_partial(&mut parts, part(0b010, 2)), Ok(true));
        assert_eq!(merge_partial(&mut parts, part(0b001, 1)), Ok(false));
        assert_eq!(merge_partial(&mut parts, part(0b011, 3)), Ok(false));
        // {0,1,2} contains both partials: it replaces them.
        assert_eq!(merge_partial(&mut parts, part(0b111, 7)), Ok(true));
        assert_eq!(parts, vec![part(0b111, 7)]);
        let mut parts = vec![part(0b011, 3)];
        assert_eq!(merge_partial(&mut parts, part(0b110, 6)), Err(0b011));
        assert_eq!(parts, vec![part(0b011, 3)], "unchanged on conflict");
    }
}
