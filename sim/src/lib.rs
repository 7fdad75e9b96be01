//! weft's simulation: the engines that run the card's RTL and the simulated
//! card itself.
#![deny(missing_docs)]

pub mod verilator;
