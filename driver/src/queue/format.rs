//! The wire format of weft's ring protocol, version 1: descriptors and
//! completions, 16 bytes each, little-endian (`docs/queues.md`). The host
//! side ([`super::H2cQueue`], [`super::C2hQueue`]) and the card-side model
//! (weft-sim's `queue_engine`) both encode and decode through here.

/// Bytes of one descriptor.
pub const DESC_BYTES: usize = 16;
/// Bytes of one completion.
pub const CPL_BYTES: usize = 16;
/// Largest payload one descriptor may carry (64 KiB).
pub const MAX_PAYLOAD: u32 = 1 << 16;

/// `Completion::flags`: the phase bit, which flips on every pass over the
/// ring so the host tells a fresh completion from a stale one without
/// reading a register.
pub const CPL_PHASE: u16 = 1 << 0;
/// `Completion::flags`: the descriptor failed (see `status`).
pub const CPL_ERROR: u16 = 1 << 1;

/// Completion status codes.
pub mod status {
    /// Done.
    pub const OK: u32 = 0;
    /// A buffer IOVA was not mapped (the IOMMU refused the access).
    pub const DMA_FAULT: u32 = 1;
    /// C2H: the message was longer than the posted buffer; it was dropped.
    pub const TOO_SMALL: u32 = 2;
    /// The descriptor was malformed.
    pub const BAD_DESC: u32 = 3;

    /// A status code's name.
    pub fn name(s: u32) -> &'static str {
        match s {
            OK => "ok",
            DMA_FAULT => "DMA fault",
            TOO_SMALL => "buffer too small",
            BAD_DESC => "bad descriptor",
            _ => "unknown status",
        }
    }
}

/// A descriptor: where a buffer is and how long.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Descriptor {
    /// IOVA of the buffer.
    pub addr: u64,
    /// H2C: bytes to send; C2H: the buffer's capacity.
    pub len: u32,
    /// The host's cookie, echoed in the completion.
    pub id: u16,
    /// Reserved, 0 in version 1.
    pub flags: u16,
}

impl Descriptor {
    /// Encode.
    pub fn encode(&self) -> [u8; DESC_BYTES] {
        let mut b = [0u8; DESC_BYTES];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..14].copy_from_slice(&self.id.to_le_bytes());
        b[14..16].copy_from_slice(&self.flags.to_le_bytes());
        b
    }
    /// Decode.
    pub fn decode(b: &[u8; DESC_BYTES]) -> Self {
        Self {
            addr: u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            len: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            id: u16::from_le_bytes([b[12], b[13]]),
            flags: u16::from_le_bytes([b[14], b[15]]),
        }
    }
}

/// A completion: what the card did with a descriptor.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The descriptor's `id`.
    pub id: u16,
    /// [`CPL_PHASE`], [`CPL_ERROR`].
    pub flags: u16,
    /// H2C: bytes consumed; C2H: bytes written (or the message's length
    /// when it did not fit).
    pub len: u32,
    /// A [`status`] code.
    pub status: u32,
}

impl Completion {
    /// Encode.
    pub fn encode(&self) -> [u8; CPL_BYTES] {
        let mut b = [0u8; CPL_BYTES];
        b[0..2].copy_from_slice(&self.id.to_le_bytes());
        b[2..4].copy_from_slice(&self.flags.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..12].copy_from_slice(&self.status.to_le_bytes());
        b
    }
    /// Decode.
    pub fn decode(b: &[u8; CPL_BYTES]) -> Self {
        Self {
            id: u16::from_le_bytes([b[0], b[1]]),
            flags: u16::from_le_bytes([b[2], b[3]]),
            len: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            status: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        }
    }
}

/// The phase bit a completion written at free-running index `n` of a ring
/// of `1 << log2` entries carries: 1 on the first pass (the host zeroes
/// the ring), 0 on the second, and so on.
pub fn phase(n: u32, log2: u32) -> u16 {
    (((n >> log2) & 1) ^ 1) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_phases() {
        let d = Descriptor {
            addr: 0x1_2345_6789_a000,
            len: 1472,
            id: 513,
            flags: 0,
        };
        assert_eq!(Descriptor::decode(&d.encode()), d);
        let c = Completion {
            id: 7,
            flags: CPL_PHASE | CPL_ERROR,
            len: 9,
            status: status::TOO_SMALL,
        };
        assert_eq!(Completion::decode(&c.encode()), c);
        assert_eq!(
            (phase(0, 3), phase(7, 3), phase(8, 3), phase(16, 3)),
            (1, 1, 0, 1)
        );
        // The phase stays consistent across the u32 wrap for ring sizes
        // that divide 2^32.
        assert_eq!(phase(u32::MAX, 4), 0);
        assert_eq!(phase(u32::MAX.wrapping_add(1), 4), 1);
    }
}
