//! Clock-domain crossing blocks: the specification of weft-hdl's `cdc`
//! module.
//!
//! The OpenNIC shell's 250 MHz box runs AXI4-Lite registers on `axil_aclk`
//! (125 MHz) and the streams on `axis_aclk` (250 MHz); every signal that
//! passes between them goes through one of these blocks. The models are
//! exact to the base step of [`crate::clocks`]: they hold the same
//! registers the hardware holds, where each matters for *when* a value
//! appears on the other side, and update them at their own clock's edges
//! with the values from before the edge instant (edges of two clocks in one
//! step are simultaneous, so neither side sees what the other latches in
//! that instant).
//!
//! - [`SyncBitModel`]: a level through two flip-flops of the destination
//!   clock. What the source drives before destination edge `k` appears at
//!   the output after edge `k + 1`.
//! - [`fifo`]: the dual-clock FIFO (Gray-coded pointers, two synchronising
//!   flip-flops each way, a reset handshake between the domains).
//! - [`two_phase`]: one word at a time by a two-phase handshake (a
//!   request toggle and an acknowledgement toggle, each through two
//!   flip-flops of the other side).
//! - [`axil`]: the AXI4-Lite crossing, five two-phase crossings, one per
//!   channel.

pub mod axil;
pub mod fifo;
pub mod two_phase;

use crate::dut::{Driver, Dut};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

crate::ports! {
    /// Input of the bit synchroniser (its clock is `clock`, the destination's).
    pub struct SyncBitIn {
        /// The level from another clock domain.
        pub sig_in: bool = 1,
    }
}

crate::ports! {
    /// Output of the bit synchroniser.
    pub struct SyncBitOut {
        /// The level, in the destination clock domain.
        pub sig_out: bool = 1,
    }
}

/// A two-flip-flop synchroniser: the first flop may go metastable in
/// hardware, the second gives it a full period to resolve. In simulation it
/// is a delay of two destination edges.
#[derive(Clone, Debug, Default)]
pub struct SyncBitModel {
    /// The first flip-flop (the one that may go metastable).
    meta: bool,
    /// The second flip-flop, which drives the output.
    stable: bool,
    input: bool,
}

impl SyncBitModel {
    /// A synchroniser at power-on (both flops 0).
    pub fn new() -> Self {
        Self::default()
    }

    /// The synchronised level.
    pub fn out(&self) -> bool {
        self.stable
    }

    /// A destination clock edge sampling `input`.
    pub fn edge(&mut self, input: bool) {
        self.stable = self.meta;
        self.meta = input;
    }
}

impl Dut for SyncBitModel {
    type In = SyncBitIn;
    type Out = SyncBitOut;

    fn eval(&mut self, inputs: &SyncBitIn) -> SyncBitOut {
        self.input = inputs.sig_in;
        SyncBitOut {
            sig_out: self.out(),
        }
    }

    fn tick(&mut self) {
        let i = self.input;
        self.edge(i);
    }

    fn witness(&self) -> &str {
        "model"
    }
}

/// Drives a synchroniser with a random level that holds for random spans,
/// and checks the output is the input two cycles late.
pub struct SyncBitDriver {
    rng: ChaCha8Rng,
    toggle: f64,
    level: bool,
    history: Vec<bool>,
    steps: u64,
    errors: Vec<String>,
}

impl SyncBitDriver {
    /// `steps` cycles with a level that toggles with probability `toggle`
    /// per cycle.
    pub fn new(seed: u64, toggle: f64, steps: u64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            toggle: toggle.clamp(0.0, 1.0),
            level: false,
            history: vec![],
            steps,
            errors: vec![],
        }
    }

    /// Cycles where the output was not the input of two cycles before.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }

    /// Times the input level changed.
    pub fn toggles(&self) -> usize {
        self.history.windows(2).filter(|w| w[0] != w[1]).count()
    }
}

impl Driver<SyncBitIn, SyncBitOut> for SyncBitDriver {
    fn drive(&mut self) -> SyncBitIn {
        if self.rng.gen_bool(self.toggle) {
            self.level = !self.level;
        }
        SyncBitIn { sig_in: self.level }
    }

    fn observe(&mut self, inputs: &SyncBitIn, outputs: &SyncBitOut) {
        let c = self.history.len();
        let want = c >= 2 && self.history[c - 2];
        if outputs.sig_out != want {
            self.errors.push(format!(
                "cycle {c}: output {} but the input two cycles before was {want}",
                outputs.sig_out
            ));
        }
        self.history.push(inputs.sig_in);
    }

    fn finished(&self) -> bool {
        self.history.len() as u64 >= self.steps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::run;

    #[test]
    fn two_cycles_late() {
        let mut m = SyncBitModel::new();
        let mut d = SyncBitDriver::new(3, 0.4, 200);
        run(&mut m, &mut d, 1000).unwrap();
        assert!(d.errors().is_empty(), "{:?}", d.errors());
        assert!(d.toggles() > 20);
    }

    #[test]
    fn driver_catches_a_one_flop_synchroniser() {
        /// The bug the driver exists for: one flop instead of two.
        struct OneFlop(bool, bool);
        impl Dut for OneFlop {
            type In = SyncBitIn;
            type Out = SyncBitOut;
            fn eval(&mut self, i: &SyncBitIn) -> SyncBitOut {
                self.1 = i.sig_in;
                SyncBitOut { sig_out: self.0 }
            }
            fn tick(&mut self) {
                self.0 = self.1;
            }
            fn witness(&self) -> &str {
                "one-flop"
            }
        }
        let mut d = SyncBitDriver::new(3, 0.4, 200);
        run(&mut OneFlop(false, false), &mut d, 1000).unwrap();
        assert!(!d.errors().is_empty());
    }
}
