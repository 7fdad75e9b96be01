//! weft's RTL, written in rust-hdl: one module per block.
//!
//! Every block here has a plain-Rust reference model of the same name in
//! weft-model (its specification) and is checked against it in both
//! simulators by weft-sim's three-witness tests. Register decode comes from
//! weft-regs: no register address is written down in this crate.
#![deny(missing_docs)]

pub mod avm;
pub mod build_info;
pub mod cdc;
pub mod classify;
pub mod comb_split;
pub mod common;
pub mod const_wires;
pub mod csr;
pub mod dff_fold;
pub mod emit;
pub mod frame_check;
pub mod framer;
pub mod grad_agg;
pub mod grad_fanout;
pub mod kv_agg;
pub mod lint;
pub mod memops;
pub mod memops_port;
pub mod net_regs;
pub mod ram_merge;
pub mod rec_pack;
pub mod steer;
pub mod top;

pub use build_info::this_build;
