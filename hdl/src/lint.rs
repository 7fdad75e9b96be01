//! Verilator lint waivers for the emitted Verilog.
//!
//! `verilator --lint-only -Wall` runs on every block (`weft hdl lint`, and a
//! test). The waivers live in `hdl/lint/waivers.vlt`; each one carries its
//! reason and is as narrow as works.

/// The waiver file, a Verilator configuration file (`.vlt`).
pub const WAIVERS: &str = include_str!("../lint/waivers.vlt");
