//! The delay model: what a cell on a path costs in an UltraScale+ part.
//!
//! Every number is a path cost in nanoseconds for a -2 speed grade. The
//! cell delays come from AMD's data sheet; routing is an assumption, stated
//! as one, and the model as a whole is calibrated by walking modules that
//! are known to close 250 MHz on these parts (`docs/timing.md`).

use serde::Serialize;

use super::netlist::{CombKind, StartKind};

/// What each kind of cell costs on a path, and the clocks' budgets.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelayModel {
    /// A LUT level: the LUT's own propagation delay (DS923, "CLB switching
    /// characteristics", T_ILO, about 0.1 ns at -2) plus a routing allowance
    /// for the net into the next cell. Routing dominates in UltraScale+
    /// (UG949 puts net delay at about half of a typical path or more); the
    /// allowance is an assumption, about 0.35 ns a hop, which calibration
    /// on Corundum's modules bears out (`docs/timing.md`).
    pub lut: f64,
    /// A MUXF7/8/9 after its LUT, inside the slice (DS923, T_IF7/T_IF8 class;
    /// no routing: the muxes sit beside the LUTs that feed them).
    pub muxf: f64,
    /// A CARRY4 on a chain (yosys 0.23 maps UltraScale+ carries to
    /// CARRY4; DS923's CARRY8 CIN-to-COUT is about 0.1 ns for 8 bits, so
    /// 0.06 ns per 4 bits is the same rate with a margin).
    pub carry: f64,
    /// A flip-flop's clock-to-out (DS923, T_CKO, about 0.08–0.1 ns).
    pub ff_clk_to_q: f64,
    /// A block RAM's read without its output register (DS923,
    /// T_RCKO_DO, about 1.2 ns at -2), the same for an UltraRAM read.
    pub bram_clk_to_q: f64,
    /// A block RAM's read through its output register (DS923,
    /// T_RCKO_DO_REG, about 0.3–0.35 ns).
    pub bram_reg_clk_to_q: f64,
    /// A LUTRAM's or shift register's stored data to its output: a
    /// flip-flop's clock-to-out and a LUT level (its read is the LUT's
    /// mux).
    pub lutram_clk_to_q: f64,
    /// The clock's uncertainty (jitter, skew), taken off every period.
    pub uncertainty: f64,
}

impl Default for DelayModel {
    fn default() -> Self {
        DelayModel {
            lut: 0.45,
            muxf: 0.10,
            carry: 0.06,
            ff_clk_to_q: 0.10,
            bram_clk_to_q: 1.20,
            bram_reg_clk_to_q: 0.35,
            lutram_clk_to_q: 0.55,
            uncertainty: 0.35,
        }
    }
}

impl DelayModel {
    /// What a combinational cell of kind `k` adds.
    pub fn comb(&self, k: CombKind) -> f64 {
        match k {
            CombKind::Lut | CombKind::LutRead => self.lut,
            CombKind::Muxf => self.muxf,
            CombKind::Carry => self.carry,
            CombKind::Free => 0.0,
        }
    }

    /// Where a path that starts at a cell of kind `k` stands.
    pub fn start(&self, k: StartKind) -> f64 {
        match k {
            StartKind::Ff | StartKind::Other => self.ff_clk_to_q,
            StartKind::Bram => self.bram_clk_to_q,
            StartKind::BramReg => self.bram_reg_clk_to_q,
            StartKind::Lutram => self.lutram_clk_to_q,
        }
    }

    /// The time a path in a clock of `mhz` may take.
    pub fn budget(&self, mhz: f64) -> f64 {
        1000.0 / mhz - self.uncertainty
    }
}
