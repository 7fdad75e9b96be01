//! The gradient aggregation packet (a UDP payload) in both directions.
//!
//! All fields are little-endian. A packet is one header beat followed by
//! [`Geometry::value_beats`] value beats, each beat `4 * lanes` bytes (64
//! bytes on the card's 512-bit stream). The header's fields fill its first
//! 16 bytes; the rest of the header beat is reserved (sent as 0, ignored on
//! input, copied by FALLBACK, 0 in RESULT and EVICT):
//!
//! | bytes | field |
//! |---|---|
//! | 0 | version (1) |
//! | 1 | flags: bit 0 DATA, bit 1 RESULT, bit 2 EVICT, bit 3 FALLBACK, bit 4 NACK (with RESULT) |
//! | 2..4 | value count: `lanes * value_beats` (64 on the card) |
//! | 4..6 | job id (`0..16`) |
//! | 6 | DATA: worker id (`0..workers`); RESULT, EVICT, NACK: workers whose values are summed |
//! | 7 | workers of the job (`1..=32`) |
//! | 8..12 | chunk index (the job numbers chunks uniquely, e.g. iteration x chunks + i) |
//! | 12..16 | RESULT, EVICT, NACK: bitmap of the workers summed (bit w = worker w); DATA: 0 |
//! | 16..beat | reserved |
//! | beat.. | values: `i32`, two's-complement fixed point, value i in lane i % lanes of value beat i / lanes |
//!
//! Kinds of packet:
//! - DATA (worker to card): one worker's values of one chunk.
//! - RESULT (card to workers): the chunk's sum over every worker.
//! - NACK (card to the workers not in its bitmap): a copy met its chunk's
//!   slot with the sender's contribution already in; the bitmap names who
//!   is in, so exactly the missing workers send again. It leaves as a
//!   RESULT (`m_tuser` 1) with the NACK flag, its values the copy's own
//!   (meaningless).
//! - EVICT (card to host): a slot's partial sum, preempted or flushed.
//! - FALLBACK (card to host): a DATA packet the card could not place,
//!   forwarded unchanged except for the FALLBACK flag.

use thiserror::Error;

/// Packet format version.
pub const VERSION: u8 = 1;
/// Bytes of the header's fields (they fill lanes 0 to 3 of the header beat).
pub const HEADER_BYTES: usize = 16;
/// Bytes per value.
pub const VALUE_BYTES: usize = 4;
/// Most workers of one job: the width of a slot's worker bitmap.
pub const MAX_WORKERS: u8 = 32;
/// Jobs the card knows (each has a priority register).
pub const JOBS: usize = weft_regs::grad::JOBS;
/// Value lanes of the card's 512-bit stream.
pub const LANES: usize = 16;
/// Value beats per chunk on the card: 4 x 16 = 64 values, SwitchML's
/// packet size.
pub const VALUE_BEATS: usize = 4;

/// Header flag bits.
pub mod flags {
    /// Worker to card: values to aggregate.
    pub const DATA: u8 = 1 << 0;
    /// Card to workers: the complete sum of a chunk.
    pub const RESULT: u8 = 1 << 1;
    /// Card to host: a slot's partial sum (preempted or flushed).
    pub const EVICT: u8 = 1 << 2;
    /// Card to host: a DATA packet the card forwarded unchanged.
    pub const FALLBACK: u8 = 1 << 3;
    /// Card to workers, with RESULT: the chunk is incomplete and these
    /// workers' contributions are in (a copy met them).
    pub const NACK: u8 = 1 << 4;
}

/// The stream geometry a packet is framed for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Geometry {
    /// 32-bit lanes per beat (16 at 512 bits).
    pub lanes: usize,
    /// Value beats per packet.
    pub value_beats: usize,
}

impl Geometry {
    /// The card's geometry: 512-bit beats, 64 values per chunk.
    pub const CARD: Geometry = Geometry {
        lanes: LANES,
        value_beats: VALUE_BEATS,
    };

    /// Bytes per beat.
    pub const fn beat_bytes(&self) -> usize {
        VALUE_BYTES * self.lanes
    }
    /// Values per chunk.
    pub const fn chunk_values(&self) -> usize {
        self.lanes * self.value_beats
    }
    /// Bytes of every packet (header beat and value beats).
    pub const fn packet_bytes(&self) -> usize {
        self.beat_bytes() * (1 + self.value_beats)
    }
}

/// The header's fields.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Header {
    /// Format version.
    pub version: u8,
    /// Flag bits ([`flags`]).
    pub flags: u8,
    /// Values that follow.
    pub count: u16,
    /// Job id.
    pub job: u16,
    /// DATA: worker id; RESULT and EVICT: workers summed.
    pub worker: u8,
    /// Workers of the job.
    pub workers: u8,
    /// Chunk index.
    pub chunk: u32,
    /// RESULT and EVICT: the workers summed.
    pub bitmap: u32,
}

impl Header {
    /// The header of worker `worker`'s DATA packet for `chunk` of `job`.
    pub fn data(geo: Geometry, job: u16, chunk: u32, worker: u8, workers: u8) -> Self {
        Self {
            version: VERSION,
            flags: flags::DATA,
            count: geo.chunk_values() as u16,
            job,
            worker,
            workers,
            chunk,
            bitmap: 0,
        }
    }

    /// The header as the four 32-bit words of lanes 0 to 3.
    pub fn words(&self) -> [u32; 4] {
        [
            self.version as u32 | (self.flags as u32) << 8 | (self.count as u32) << 16,
            self.job as u32 | (self.worker as u32) << 16 | (self.workers as u32) << 24,
            self.chunk,
            self.bitmap,
        ]
    }

    /// The header from the four words of lanes 0 to 3.
    pub fn from_words(w: [u32; 4]) -> Self {
        Self {
            version: w[0] as u8,
            flags: (w[0] >> 8) as u8,
            count: (w[0] >> 16) as u16,
            job: w[1] as u16,
            worker: (w[1] >> 16) as u8,
            workers: (w[1] >> 24) as u8,
            chunk: w[2],
            bitmap: w[3],
        }
    }

    /// Encode the 16 bytes of fields.
    pub fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut b = [0u8; HEADER_BYTES];
        for (d, w) in b.chunks_exact_mut(4).zip(self.words()) {
            d.copy_from_slice(&w.to_le_bytes());
        }
        b
    }

    /// Decode the first 16 bytes; `None` when there are fewer.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b = b.get(..HEADER_BYTES)?;
        let w = |i: usize| u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        Some(Self::from_words([w(0), w(1), w(2), w(3)]))
    }

    /// The kind of packet its flags say it is, if exactly one kind
    /// (FALLBACK packets keep their DATA flag).
    pub fn kind(&self) -> Option<Kind> {
        Some(match self.flags {
            flags::DATA => Kind::Data,
            flags::RESULT => Kind::Result,
            f if f == flags::RESULT | flags::NACK => Kind::Nack,
            flags::EVICT => Kind::Evict,
            f if f == flags::DATA | flags::FALLBACK => Kind::Fallback,
            _ => return None,
        })
    }
}

/// What a packet is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Worker to card.
    Data,
    /// A chunk's complete sum.
    Result,
    /// An incomplete chunk's bitmap, to the workers missing from it.
    Nack,
    /// A partial sum spilled to the host.
    Evict,
    /// A DATA packet forwarded to the host.
    Fallback,
}

impl Kind {
    /// The code on the output stream's `m_tuser` (DATA never goes out).
    pub fn code(self) -> u8 {
        match self {
            Kind::Data => 0,
            Kind::Result | Kind::Nack => 1,
            Kind::Evict => 2,
            Kind::Fallback => 3,
        }
    }
    /// From an `m_tuser` code.
    pub fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            1 => Kind::Result,
            2 => Kind::Evict,
            3 => Kind::Fallback,
            _ => return None,
        })
    }
}

/// A packet that cannot be built or read.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
pub enum PacketError {
    /// The byte length is not the geometry's packet length.
    #[error("packet is {got} bytes, a {lanes}-lane packet with {beats} value beats is {want}")]
    Length {
        /// Bytes given.
        got: usize,
        /// Bytes expected.
        want: usize,
        /// Lanes of the geometry.
        lanes: usize,
        /// Value beats of the geometry.
        beats: usize,
    },
    /// Values given disagree with the geometry's chunk size.
    #[error("{got} values given, a chunk has {want}")]
    Values {
        /// Values given.
        got: usize,
        /// Values per chunk.
        want: usize,
    },
    /// The geometry cannot hold a header beat.
    #[error("a beat of {lanes} lanes cannot hold the 16-byte header (4 lanes at least)")]
    Geometry {
        /// Lanes of the geometry.
        lanes: usize,
    },
    /// Version is not [`VERSION`].
    #[error("packet version {0}, this format is version {VERSION}")]
    Version(u8),
    /// Flags name no packet kind.
    #[error("flags {0:#04x} name no packet kind")]
    Flags(u8),
}

/// A decoded packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Its header.
    pub header: Header,
    /// Its kind.
    pub kind: Kind,
    /// The header beat's reserved bytes (16 to the end of the beat).
    pub reserved: Vec<u8>,
    /// Its values.
    pub values: Vec<i32>,
}

fn check_geometry(geo: Geometry) -> Result<(), PacketError> {
    if geo.beat_bytes() < HEADER_BYTES {
        return Err(PacketError::Geometry { lanes: geo.lanes });
    }
    Ok(())
}

/// Encode a packet: header beat (reserved bytes 0) then the values.
pub fn encode(geo: Geometry, h: &Header, values: &[i32]) -> Result<Vec<u8>, PacketError> {
    check_geometry(geo)?;
    if values.len() != geo.chunk_values() {
        return Err(PacketError::Values {
            got: values.len(),
            want: geo.chunk_values(),
        });
    }
    let mut v = Vec::with_capacity(geo.packet_bytes());
    v.extend_from_slice(&h.encode());
    v.resize(geo.beat_bytes(), 0);
    for x in values {
        v.extend_from_slice(&x.to_le_bytes());
    }
    Ok(v)
}

/// Decode a packet of any kind; checks framing, version and flags only
/// (the card's own checks are [`validate`]).
pub fn decode(geo: Geometry, bytes: &[u8]) -> Result<Packet, PacketError> {
    check_geometry(geo)?;
    if bytes.len() != geo.packet_bytes() {
        return Err(PacketError::Length {
            got: bytes.len(),
            want: geo.packet_bytes(),
            lanes: geo.lanes,
            beats: geo.value_beats,
        });
    }
    let header = Header::decode(bytes).ok_or(PacketError::Length {
        got: bytes.len(),
        want: geo.packet_bytes(),
        lanes: geo.lanes,
        beats: geo.value_beats,
    })?;
    if header.version != VERSION {
        return Err(PacketError::Version(header.version));
    }
    let kind = header.kind().ok_or(PacketError::Flags(header.flags))?;
    let beat = geo.beat_bytes();
    Ok(Packet {
        header,
        kind,
        reserved: bytes[HEADER_BYTES..beat].to_vec(),
        values: values_of(geo, bytes).collect(),
    })
}

/// The values of a packet of the geometry's length (fewer when shorter).
pub fn values_of(geo: Geometry, bytes: &[u8]) -> impl Iterator<Item = i32> + '_ {
    bytes
        .get(geo.beat_bytes()..)
        .unwrap_or(&[])
        .chunks_exact(VALUE_BYTES)
        .map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]]))
}

/// Why the card drops a packet as malformed.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Malformed {
    /// `tuser_size` is not the packet length of the card's geometry.
    Size,
    /// Version is not [`VERSION`].
    Version,
    /// Flags are not exactly DATA.
    Flags,
    /// The value count is not the chunk size.
    Count,
    /// Job id has no priority register (`>= JOBS`).
    Job,
    /// Workers is 0 or more than [`MAX_WORKERS`].
    Workers,
    /// Worker id is not below the job's workers.
    Worker,
}

/// Check a DATA packet's header as the card does, given the length the
/// shell reports (`tuser_size`); on success the header. Only the header
/// beat is read, so `bytes` may be just that beat.
pub fn validate(geo: Geometry, bytes: &[u8], size: usize) -> Result<Header, Malformed> {
    // A packet too short to hold the header fields cannot have the right
    // size either; its missing bytes read as 0 on the stream.
    let mut fields = [0u8; HEADER_BYTES];
    let n = bytes.len().min(HEADER_BYTES);
    fields[..n].copy_from_slice(&bytes[..n]);
    let h = Header::decode(&fields).unwrap_or_default();
    if size != geo.packet_bytes() {
        return Err(Malformed::Size);
    }
    if h.version != VERSION {
        return Err(Malformed::Version);
    }
    if h.flags != flags::DATA {
        return Err(Malformed::Flags);
    }
    if h.count as usize != geo.chunk_values() {
        return Err(Malformed::Count);
    }
    if h.job as usize >= JOBS {
        return Err(Malformed::Job);
    }
    if h.workers == 0 || h.workers > MAX_WORKERS {
        return Err(Malformed::Workers);
    }
    if h.worker >= h.workers {
        return Err(Malformed::Worker);
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Geometry = Geometry {
        lanes: 4,
        value_beats: 2,
    };

    #[test]
    fn round_trip_and_layout() {
        let h = Header::data(G, 3, 0xdead_beef, 2, 5);
        let vals: Vec<i32> = (0..8).map(|i| i * -3).collect();
        let p = encode(G, &h, &vals).unwrap();
        assert_eq!(p.len(), 48);
        assert_eq!(&p[..8], &[1, 1, 8, 0, 3, 0, 2, 5]);
        assert_eq!(&p[8..12], &0xdead_beefu32.to_le_bytes());
        let d = decode(G, &p).unwrap();
        assert_eq!((d.header, d.kind, d.values), (h, Kind::Data, vals));
        assert_eq!(validate(G, &p, p.len()), Ok(h));
        let card = Geometry::CARD;
        assert_eq!((card.chunk_values(), card.packet_bytes()), (64, 320));
    }

    #[test]
    fn bad_packets_are_errors_not_panics() {
        let h = Header::data(G, 3, 1, 0, 1);
        assert!(matches!(
            encode(G, &h, &[1]),
            Err(PacketError::Values { got: 1, want: 8 })
        ));
        let narrow = Geometry {
            lanes: 2,
            value_beats: 1,
        };
        assert!(encode(narrow, &h, &[0; 2]).is_err());
        let p = encode(G, &h, &[0; 8]).unwrap();
        for n in 0..p.len() {
            assert!(decode(G, &p[..n]).is_err());
            assert_eq!(validate(G, &p[..n], n), Err(Malformed::Size));
        }
        let mut bad = p.clone();
        bad[1] = 0x30;
        assert_eq!(decode(G, &bad), Err(PacketError::Flags(0x30)));
        assert_eq!(validate(G, &bad, bad.len()), Err(Malformed::Flags));
        bad[0] = 9;
        assert_eq!(decode(G, &bad), Err(PacketError::Version(9)));
    }

    #[test]
    fn validation_mirrors_each_rule() {
        let ok = Header::data(G, 15, 7, 31, 32);
        let p = |h: Header| encode(G, &h, &[0; 8]).unwrap();
        assert!(validate(G, &p(ok), 48).is_ok());
        let cases = [
            (Header { job: 16, ..ok }, Malformed::Job),
            (Header { workers: 0, ..ok }, Malformed::Workers),
            (Header { workers: 33, ..ok }, Malformed::Workers),
            (
                Header {
                    worker: 5,
                    workers: 5,
                    ..ok
                },
                Malformed::Worker,
            ),
            (Header { count: 7, ..ok }, Malformed::Count),
            (Header { version: 2, ..ok }, Malformed::Version),
        ];
        for (h, why) in cases {
            assert_eq!(validate(G, &p(h), 48), Err(why), "{h:?}");
        }
        assert_eq!(validate(G, &p(ok), 47), Err(Malformed::Size));
    }
}
