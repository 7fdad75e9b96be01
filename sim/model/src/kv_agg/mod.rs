//! The key-value aggregation engine (`kv_agg`, after ASK): packet format,
//! reference model, cycle-level model, port structs and stimulus driver.
//!
//! The engine receives UDP payloads (the weft aggregation packet, see
//! [`packet`]) on an AXI4-Stream of `64 * lanes` bits, one beat per cycle.
//! Every 64-bit lane of a beat carries one tuple (the 16-byte header fills
//! lanes 0 and 1 of a packet's first beat), and every lane owns a bank of
//! `1 << slot_bits` slots, so all tuples of a beat update their banks in the
//! same cycle. A key is aggregated in the bank of the lane it arrives in; the
//! host daemon places each key in a fixed lane (ASK's key partitioning), and
//! the engine stays exact for any placement, since the host merges every
//! partial sum it receives. See [`model::KvModel`] for the behaviour at the
//! level of packets and [`cycle::KvCycle`] for it cycle by cycle.

pub mod cycle;
pub mod driver;
pub mod model;
pub mod packet;
pub mod ports;

pub use model::{slot_of, Counters, KvModel, Slot, HITS_MAX, WINDOW};

/// Senders with a sequence window (sender ids `0..SENDERS`).
pub const SENDERS: usize = 16;

/// Build parameters of the engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Tuple lanes per beat: the stream is `64 * lanes` bits (8 at 512 bits).
    pub lanes: usize,
    /// log2 of the slots in each lane's bank.
    pub slot_bits: u32,
    /// Senders with a sequence window.
    pub senders: usize,
}

impl Config {
    /// The card's default: 512-bit stream, 8 banks of 512 slots (4096 slots).
    pub const DEFAULT: Config = Config {
        lanes: 8,
        slot_bits: 9,
        senders: SENDERS,
    };

    /// Total slots on the card.
    pub fn slots(&self) -> usize {
        self.lanes << self.slot_bits
    }

    /// Stream width in bits.
    pub fn width(&self) -> usize {
        64 * self.lanes
    }

    /// The lane (bank) tuple `j` of a packet arrives in, and its beat.
    pub fn position(&self, j: usize) -> (usize, usize) {
        let pos = j + packet::HEADER_BYTES / packet::TUPLE_BYTES;
        (pos / self.lanes, pos % self.lanes)
    }
}
