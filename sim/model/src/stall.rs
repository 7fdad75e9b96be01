//! Back-pressure for drivers: whether a block's output is ready this cycle,
//! with independent stalls and, now and then, a long one (a stalled host,
//! a congested link).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::ops::Range;

/// A seeded output-readiness pattern.
#[derive(Clone, Debug)]
pub struct Stalls {
    rng: ChaCha8Rng,
    /// Probability that a cycle is stalled on its own.
    pub p: f64,
    /// Probability that a long stall starts on a cycle.
    pub long: f64,
    /// How long a long stall lasts, in cycles.
    pub long_cycles: Range<u32>,
    /// Cycles left of the stall in progress.
    pub left: u32,
}

impl Stalls {
    /// Stalls with probability `p` a cycle, long ones (20 to 400 cycles)
    /// starting with probability `long`.
    pub fn new(seed: u64, p: f64, long: f64) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed),
            p,
            long,
            long_cycles: 20..400,
            left: 0,
        }
    }

    /// Never stalled.
    pub fn never(seed: u64) -> Self {
        Self::new(seed, 0.0, 0.0)
    }

    /// Whether the output is ready this cycle.
    pub fn ready(&mut self) -> bool {
        if self.left > 0 {
            self.left -= 1;
            return false;
        }
        if self.long > 0.0 && self.rng.gen_bool(self.long.min(1.0)) {
            self.left = self
                .rng
                .gen_range(self.long_cycles.clone())
                .saturating_sub(1);
            return false;
        }
        self.p <= 0.0 || !self.rng.gen_bool(self.p.min(1.0))
    }
}
