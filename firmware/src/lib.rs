//! weft's firmware policies: pure functions from an observation snapshot of
//! the card to actions, written `no_std` so the same code runs in the host
//! library's control loop or on a soft core on the card.
//!
//! - [`avm`]: Accelerator Virtual Memory policies, `Static` (fixed weights
//!   and quotas) and `SloGuard` (keeps every victim's p99 under its own SLO:
//!   deadline-monotonic priority classes, promotion, weights, and an event
//!   when an SLO is out of reach). They steer the `avm` block
//!   (`hdl/src/avm.rs`, on the card); `weft::avm` runs them in its control
//!   loop, and they are tested against their contract here.
//! - [`grad`]: job priorities for the gradient aggregation engine, `Fifo`
//!   (no preemption), `Static` and `Dsa` (communication-intensive jobs first).
#![no_std]
#![deny(missing_docs)]

pub mod avm;
pub mod grad;

pub use weft_regs as regs;
