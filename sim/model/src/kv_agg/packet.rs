//! The weft aggregation packet (the UDP payload) and the records the card
//! sends back. `docs/kv-aggregation.md` documents the same layout.
//!
//! All fields are little-endian. A data packet is a 16-byte header followed
//! by `count` tuples of a `u32` key and an `i32` value:
//!
//! | bytes | field |
//! |---|---|
//! | 0 | version (1) |
//! | 1 | flags: bit 0 DATA, bit 1 ACK, bit 2 FLUSH, bit 3 FIN |
//! | 2..4 | tuple count |
//! | 4..6 | job id |
//! | 6..8 | sender id |
//! | 8..12 | sequence number (per sender, from 0) |
//! | 12..16 | reserved, 0 |
//! | 16.. | tuples: key (4 bytes), value (4 bytes) |

/// Packet format version.
pub const VERSION: u8 = 1;
/// Header bytes.
pub const HEADER_BYTES: usize = 16;
/// Bytes per tuple.
pub const TUPLE_BYTES: usize = 8;
/// Largest packet the card accepts (a 9000-byte jumbo frame's UDP payload).
pub const MAX_PACKET_BYTES: usize = 8972;
/// Most tuples in one packet.
pub const MAX_TUPLES: usize = (MAX_PACKET_BYTES - HEADER_BYTES) / TUPLE_BYTES;

/// Header flag bits.
pub mod flags {
    /// A data packet: tuples to aggregate.
    pub const DATA: u8 = 1 << 0;
    /// An acknowledgement (card to sender).
    pub const ACK: u8 = 1 << 1;
    /// Reserved for a sender's request to flush.
    pub const FLUSH: u8 = 1 << 2;
    /// Reserved for a sender's last packet.
    pub const FIN: u8 = 1 << 3;
}

/// The aggregation header.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// Format version.
    pub version: u8,
    /// Flag bits ([`flags`]).
    pub flags: u8,
    /// Tuples that follow.
    pub count: u16,
    /// Job id.
    pub job: u16,
    /// Sender id.
    pub sender: u16,
    /// Sequence number.
    pub seq: u32,
}

impl Header {
    /// The header of a data packet.
    pub fn data(job: u16, sender: u16, seq: u32, count: u16) -> Self {
        Self {
            version: VERSION,
            flags: flags::DATA,
            count,
            job,
            sender,
            seq,
        }
    }

    /// Encode to 16 bytes.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        b[0] = self.version;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.count.to_le_bytes());
        b[4..6].copy_from_slice(&self.job.to_le_bytes());
        b[6..8].copy_from_slice(&self.sender.to_le_bytes());
        b[8..12].copy_from_slice(&self.seq.to_le_bytes());
        b
    }

    /// Decode the first 16 bytes; `None` when there are fewer.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..HEADER_BYTES)?;
        Some(Self {
            version: b[0],
            flags: b[1],
            count: u16::from_le_bytes([b[2], b[3]]),
            job: u16::from_le_bytes([b[4], b[5]]),
            sender: u16::from_le_bytes([b[6], b[7]]),
            seq: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        })
    }
}

/// Encode a data packet.
pub fn encode(h: &Header, tuples: &[(u32, i32)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(HEADER_BYTES + TUPLE_BYTES * tuples.len());
    v.extend_from_slice(&h.encode());
    for (k, val) in tuples {
        v.extend_from_slice(&k.to_le_bytes());
        v.extend_from_slice(&val.to_le_bytes());
    }
    v
}

/// Why the card drops a packet as malformed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// Shorter than a header.
    Short,
    /// Longer than [`MAX_PACKET_BYTES`].
    TooLong,
    /// Version is not [`VERSION`].
    Version,
    /// Flags are not exactly DATA.
    Flags,
    /// Job id is not the engine's active job.
    Job,
    /// Sender id has no sequence window.
    Sender,
    /// Tuple count disagrees with the packet length.
    Length,
}

/// Check a packet as the card does, against the active job and the number
/// of senders; on success the header.
pub fn validate(bytes: &[u8], job: u16, senders: usize) -> Result<Header, Malformed> {
    let h = Header::decode(bytes).ok_or(Malformed::Short)?;
    check(&h, bytes.len(), job, senders)?;
    Ok(h)
}

/// Check header `h` of a packet of `len` bytes as the card does (the
/// engine sees the header beat and the length from `tuser_size`, not the
/// whole packet). A length below a header's is [`Malformed::Length`] here:
/// no tuple count matches it.
pub fn check(h: &Header, len: usize, job: u16, senders: usize) -> Result<(), Malformed> {
    if len > MAX_PACKET_BYTES {
        return Err(Malformed::TooLong);
    }
    if h.version != VERSION {
        return Err(Malformed::Version);
    }
    if h.flags != flags::DATA {
        return Err(Malformed::Flags);
    }
    if h.job != job {
        return Err(Malformed::Job);
    }
    if h.sender as usize >= senders {
        return Err(Malformed::Sender);
    }
    if HEADER_BYTES + TUPLE_BYTES * h.count as usize != len {
        return Err(Malformed::Length);
    }
    Ok(())
}

/// The tuples of a packet that passed [`validate`].
pub fn tuples(bytes: &[u8]) -> impl Iterator<Item = (u32, i32)> + '_ {
    bytes[HEADER_BYTES.min(bytes.len())..]
        .chunks_exact(TUPLE_BYTES)
        .map(|c| {
            (
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                i32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            )
        })
}

/// Acknowledgement status.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AckStatus {
    /// First arrival: aggregated.
    New = 1,
    /// Seen before: acknowledged again, not aggregated.
    Duplicate = 2,
}

/// An acknowledgement record (64 bits on the card's ack stream):
/// bits 31:0 sequence number, 39:32 status, 47:40 the low byte of the
/// sender's window base after this packet, 63:48 sender.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ack {
    /// Sender.
    pub sender: u16,
    /// Sequence number acknowledged.
    pub seq: u32,
    /// Status.
    pub status: AckStatus,
    /// Bits 7:0 of the sender's window base once this packet is taken:
    /// every sequence number below the base has reached the card (a
    /// cumulative acknowledgement; the sender widens it to 32 bits from its
    /// own window, which spans fewer than 256 sequence numbers).
    pub base: u8,
}

impl Ack {
    /// Pack to the 64-bit record.
    pub fn pack(&self) -> u64 {
        self.seq as u64
            | (self.status as u64) << 32
            | (self.base as u64) << 40
            | (self.sender as u64) << 48
    }
    /// Unpack; `None` for an unknown status.
    pub fn unpack(v: u64) -> Option<Self> {
        let status = match (v >> 32) as u8 {
            1 => AckStatus::New,
            2 => AckStatus::Duplicate,
            _ => return None,
        };
        Some(Self {
            sender: (v >> 48) as u16,
            seq: v as u32,
            status,
            base: (v >> 40) as u8,
        })
    }
}

/// Kinds of beats on the card's record stream (`m_tuser`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    /// Partial sums spilled from the pipeline (collisions, evictions, overflows).
    Spill = 1,
    /// Slots drained by a flush.
    Flush = 2,
    /// The flush is complete; no records.
    FlushDone = 3,
}

impl RecordKind {
    /// From the `m_tuser` code.
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            1 => RecordKind::Spill,
            2 => RecordKind::Flush,
            3 => RecordKind::FlushDone,
            _ => return None,
        })
    }
}

/// One beat of the record stream: a kind and, per lane, an optional
/// `(key, partial sum)` record (lane i at bits 64i+63:64i).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordBeat {
    /// What the records are.
    pub kind: RecordKind,
    /// Per lane: a record or nothing.
    pub lanes: Vec<Option<(u32, i32)>>,
}
