//! Accelerator Virtual Memory (after NicOS): the host side of the shared
//! on-chip pool — consumers by name, [`Pool::observe`] for a typed snapshot
//! of every consumer's counters and latency histogram, [`Pool::act`] for
//! typed actions (weight, priority, quota, reservation, grant, reclaim), and
//! a control loop that runs a weft-fw policy every window of device time
//! ([`run_scenario`]).
//!
//! The pool runs on the simulated block (`weft_hdl::avm`, or its reference
//! model) driven through its register port. In the OpenNIC top the pool's
//! consumers are MemOps' destinations, so scenarios with their own traffic
//! run on the simulated pool only.

mod pool;
mod run;
pub mod scenario;

pub use pool::{Act, Arbitration, ConsumerStats, Offers, Outcome, Pool, Snapshot};
pub use run::{
    configure, run_scenario, run_traffic, ConsumerReport, Figures, PolicyKind, PoolFactory,
    ScenarioOptions, ScenarioReport,
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
    /// The simulation failed.
    #[error(transparent)]
    Sim(#[from] weft_sim::SimError),
}
