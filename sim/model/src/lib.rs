//! Reference models, stimulus drivers and scoreboards for weft's RTL blocks.
//!
//! Every RTL block has three witnesses (ARCHITECTURE.md §4): the plain-Rust
//! model here, which is the block's specification, and two simulations of its
//! RTL (rust-hdl's simulator and Verilator, in weft-sim). All three implement
//! [`Dut`] over the same port-level [`PortSet`] structs, so one seeded
//! [`Driver`] can drive each of them cycle by cycle, and [`run`] folds every
//! cycle's outputs into a hash that must agree between the simulators.
//!
//! This crate has no rust-hdl dependency, so it compiles in about a second.
#![deny(missing_docs)]

pub mod avm;
pub mod axil;
pub mod cdc;
pub mod classify;
pub mod clocks;
pub mod csr;
pub mod dut;
pub mod fifo4;
pub mod frame_check;
pub mod framer;
pub mod grad_agg;
pub mod grad_fanout;
pub mod kv_agg;
pub mod memops;
pub mod memops_port;
pub mod net;
pub mod net_regs;
pub mod ports;
pub mod rec_pack;
pub mod stall;
pub mod steer;
pub mod top;
pub mod top_model;
pub mod top_traffic;
pub mod wire;

pub use clocks::Schedule;

/// Proptest cases for a property: `PROPTEST_CASES` when it is set (to raise
/// a suite's case counts for a soak, or lower them), else the property's
/// own `default`. proptest reads that variable only for configurations that
/// do not set `cases`, and every witness sets its own.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}
/// Cycles a card-geometry soak must cover at least: 10^6 under
/// `WEFT_SOAK=1` (the long soak, outside the suite), else `short` (the
/// suite's shorter version). `WEFT_SOAK=N` with N > 1 asks for N cycles.
pub fn soak_cycles(short: u64) -> u64 {
    match std::env::var("WEFT_SOAK")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        Some(1) => 1_000_000,
        Some(n) if n > 1 => n,
        _ => short,
    }
}

pub use dut::{compare, run, Divergence, Driver, Dut, DutProfile, Run, RunError};
pub use ports::{Port, PortSet, PortValue};
