//! Accelerator Virtual Memory (after NicOS): the host side of the shared
//! on-chip pool — consumers by name, [`Pool::observe`] for a typed snapshot
//! of every consumer's counters and latency histogram, [`Pool::act`] for
//! typed actions (weight, priority, quota, reservation, grant, reclaim).
//!
//! On a card ([`Pool::on_card`]) the pool's consumers are MemOps' four
//! destinations: their traffic is MemOps transactions in frames
//! ([`crate::memops::run()`]), and observe and act are register accesses
//! through the card's [`weft_driver::Device`].
//!
//! The scenarios ([`run_scenario`], `weft avm scenario`) are a tool on the
//! **standalone** pool block (`weft_hdl::avm` in rust-hdl or Verilator, or
//! its reference model), not on the card: they drive its consumer ports
//! with synthetic open-loop traffic, which on the card would have to come
//! through MemOps, and run a control loop with a weft-fw policy every
//! window of device time. They need the `sim` feature.

mod pool;
#[cfg(feature = "sim")]
mod run;
pub mod scenario;

pub use pool::{Act, Arbitration, Block, ConsumerStats, Offers, Outcome, Pool, Snapshot};
#[cfg(feature = "sim")]
pub use run::{
    configure, run_scenario, run_traffic, BlockSim, ConsumerReport, EventReport, Figures,
    PoolFactory, PoolPolicy, Reaction, ScenarioOptions, ScenarioReport, SeedReport, WorstCase,
};
pub use scenario::{parse, preset, Scenario};

/// What can go wrong with the pool.
#[derive(Debug, thiserror::Error)]
pub enum AvmError {
    /// A bad scenario file: the message names the field.
    #[error("scenario: {0}")]
    Scenario(String),
    /// A bad configuration or argument.
    #[error("{0}")]
    Config(String),
    /// No consumer of that name.
    #[error("no consumer named {name:?} (consumers: {known})")]
    UnknownConsumer {
        /// The name given.
        name: String,
        /// The names there are.
        known: String,
    },
    /// A value outside its register's range.
    #[error("consumer {consumer}: {what} {value} is out of range (at most {max})")]
    OutOfRange {
        /// Consumer.
        consumer: String,
        /// Which setting.
        what: String,
        /// The value given.
        value: u32,
        /// The largest allowed.
        max: u32,
    },
    /// Reservation above quota.
    #[error("consumer {consumer}: reservation {reserve} above quota {quota}")]
    Limits {
        /// Consumer.
        consumer: String,
        /// Quota.
        quota: u32,
        /// Reservation.
        reserve: u32,
    },
    /// The pool refused an allocation command.
    #[error("consumer {consumer}: refused: {why}")]
    Refused {
        /// Consumer.
        consumer: String,
        /// Why.
        why: String,
    },
    /// An allocation command finished without its `STATUS` word read back,
    /// so its outcome is unknown.
    #[error("consumer {consumer}: the pool's STATUS was not read after the command")]
    NoStatus {
        /// Consumer.
        consumer: String,
    },
    /// A register access on the card failed.
    #[error("card: {0}")]
    Device(weft_driver::Error),
    /// The card's pool never finished a command.
    #[error("the card's pool did not finish its register operations within {0} accesses")]
    Hung(u64),
    /// The standalone pool's simulation failed.
    #[cfg(feature = "sim")]
    #[error(transparent)]
    Sim(#[from] weft_sim::SimError),
}
