//! The gradient aggregation engine (`grad_agg`, after SwitchML, ATP and
//! DSA): packet format, behaviour, cycle-level model, port structs,
//! stimulus driver and the host fallback's merge.
//!
//! Workers stream 32-bit fixed-point gradient chunks through the card
//! ([`packet`]): a header beat, then value beats of `lanes` values each, at
//! one beat per cycle. A pool of `1 << slot_bits` aggregator slots sums each
//! chunk over its job's workers; a slot is picked by [`slot_of`]. Per packet
//! the engine decides, when the header meets its slot ([`model::decide`]):
//! claim an empty slot, add to the chunk's own slot (dropping a worker
//! already summed), complete it (RESULT out, slot freed), preempt a
//! lower-priority job's slot (its partial sum goes out as EVICT), or forward
//! the packet to the host (FALLBACK) when the holder's priority is no lower.
//! The host completes evicted and forwarded chunks exactly ([`host`]).
//!
//! [`model::GradModel`] is the behaviour packet by packet; [`cycle::GradCycle`]
//! is the same behaviour cycle by cycle, the specification the RTL
//! (`weft_hdl::grad_agg`) matches on every output of every cycle.

pub mod cycle;
pub mod driver;
pub mod host;
pub mod model;
pub mod packet;
pub mod ports;
pub mod workload;

pub use model::{slot_of, GradModel, Meta, OutPacket, Verdict};
pub use packet::{Geometry, JOBS, LANES, MAX_WORKERS, VALUE_BEATS};

/// Build parameters of the engine.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// 32-bit lanes per beat (16 at 512 bits); at least 4 (the header's fields).
    pub lanes: usize,
    /// log2 of the aggregator slots.
    pub slot_bits: u32,
    /// Value beats per chunk (a power of two).
    pub value_beats: usize,
}

impl Config {
    /// The card's engine: 512-bit stream, 64-value chunks, 256 slots.
    pub const CARD: Config = Config {
        lanes: LANES,
        slot_bits: 8,
        value_beats: VALUE_BEATS,
    };

    /// Aggregator slots.
    pub const fn slots(&self) -> usize {
        1 << self.slot_bits
    }

    /// The packet geometry.
    pub const fn geometry(&self) -> Geometry {
        Geometry {
            lanes: self.lanes,
            value_beats: self.value_beats,
        }
    }

    /// Stream width in bits.
    pub const fn width(&self) -> usize {
        32 * self.lanes
    }
}
