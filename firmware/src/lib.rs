//! weft's firmware policies: pure functions from an observation snapshot of
//! the card to actions, written `no_std` so the same code runs in the host
//! library's control loop or on a soft core on the card.
//!
//! No policy exists yet: the first ones (Accelerator Virtual Memory's
//! `Static` and `SloGuard`, and the aggregation engines' job priorities)
//! arrive with the engines they steer. This crate already builds `no_std`
//! against weft-regs, so those policies cannot grow a `std` dependency.
#![no_std]
#![deny(missing_docs)]

pub use weft_regs as regs;
