//! Several clocks on one time line: the schedule every witness steps.
//!
//! # The model of time
//!
//! Simulation advances in **base steps**, numbered 0, 1, 2, … One step is
//! one [`Dut::eval`](crate::Dut::eval) followed by one
//! [`Dut::tick`](crate::Dut::tick):
//!
//! 1. `eval` presents the step's inputs, lets combinational logic settle and
//!    returns the outputs (these are hashed and compared between witnesses);
//! 2. `tick` is the step's **edge instant**: every clock whose schedule says
//!    it rises in this step rises, *all at the same instant*, latching the
//!    inputs of the last `eval`; then the clocks that rose fall again (weft's
//!    blocks are rising-edge only, so the falling edge does nothing).
//!
//! A clock is declared by its port name, its `period` in base steps and its
//! `phase`: it rises in step `s` exactly when `s % period == phase`. The
//! OpenNIC shell's 250 MHz box, with `axis_aclk` at 250 MHz and `axil_aclk`
//! at 125 MHz phase-aligned, is
//! `Schedule::new([("axis_aclk", 1, 0), ("axil_aclk", 2, 0)])`: both clocks
//! rise in steps 0, 2, 4, … and `axis_aclk` alone in steps 1, 3, 5, …
//!
//! **Simultaneous edges.** When two clocks rise in the same step, every
//! flip-flop of either domain samples the value its input had *before* the
//! instant (Verilog non-blocking semantics). A flop of one domain therefore
//! never sees a value that a flop of the other domain takes at the same
//! instant; it sees it at its own next edge. The reference models encode
//! exactly this, and both simulators are driven so (rust-hdl: both clock
//! signals go high before one settle; Verilator: both ports are set before
//! one `eval`), so all three witnesses agree to the step.
//!
//! A single-clock block has the schedule [`Schedule::single`]: one clock of
//! period 1, so a step is a clock cycle and nothing changes for it.

use std::fmt;

/// At most this many clocks: the rising set of a step is a `u32` mask.
pub const MAX_CLOCKS: usize = 32;

/// One clock of a [`Schedule`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClockSpec {
    /// The clock's port name.
    pub name: String,
    /// Base steps between rising edges (at least 1).
    pub period: u32,
    /// The step, modulo `period`, in which it rises (less than `period`).
    pub phase: u32,
}

impl ClockSpec {
    /// Whether this clock rises in `step`.
    pub fn rises(&self, step: u64) -> bool {
        step % u64::from(self.period) == u64::from(self.phase)
    }
}

/// A schedule that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// No clocks given.
    #[error("a schedule needs at least one clock")]
    Empty,
    /// More than [`MAX_CLOCKS`] clocks.
    #[error("{0} clocks: at most {MAX_CLOCKS} are supported")]
    TooMany(usize),
    /// A clock named twice.
    #[error("clock {0} is listed twice")]
    Duplicate(String),
    /// A period of zero or a phase not below the period.
    #[error("clock {name}: period {period} and phase {phase} (need period >= 1, phase < period)")]
    Timing {
        /// The clock.
        name: String,
        /// Its period.
        period: u32,
        /// Its phase.
        phase: u32,
    },
}

/// The clocks of a block and when each rises, in base steps (see the
/// [module documentation](self)). The order of the clocks is the bit order
/// of [`Schedule::rising`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Schedule {
    clocks: Vec<ClockSpec>,
}

impl Schedule {
    /// A schedule of `(name, period, phase)` clocks.
    pub fn new<'a>(
        clocks: impl IntoIterator<Item = (&'a str, u32, u32)>,
    ) -> Result<Self, ScheduleError> {
        let clocks: Vec<ClockSpec> = clocks
            .into_iter()
            .map(|(name, period, phase)| ClockSpec {
                name: name.to_string(),
                period,
                phase,
            })
            .collect();
        if clocks.is_empty() {
            return Err(ScheduleError::Empty);
        }
        if clocks.len() > MAX_CLOCKS {
            return Err(ScheduleError::TooMany(clocks.len()));
        }
        for (i, c) in clocks.iter().enumerate() {
            if clocks[..i].iter().any(|d| d.name == c.name) {
                return Err(ScheduleError::Duplicate(c.name.clone()));
            }
            if c.period == 0 || c.phase >= c.period {
                return Err(ScheduleError::Timing {
                    name: c.name.clone(),
                    period: c.period,
                    phase: c.phase,
                });
            }
        }
        Ok(Self { clocks })
    }

    /// One clock rising every step: the schedule of a single-clock block.
    pub fn single(name: &str) -> Self {
        Self {
            clocks: vec![ClockSpec {
                name: name.to_string(),
                period: 1,
                phase: 0,
            }],
        }
    }

    /// Every named clock rising every step (all in one domain).
    pub fn every_step<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, ScheduleError> {
        Self::new(names.into_iter().map(|n| (n, 1, 0)))
    }

    /// The clocks, in bit order.
    pub fn clocks(&self) -> &[ClockSpec] {
        &self.clocks
    }

    /// The clocks' names, in bit order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.clocks.iter().map(|c| c.name.as_str())
    }

    /// Index of the clock named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.clocks.iter().position(|c| c.name == name)
    }

    /// The clocks rising in `step`: bit `i` for clock `i`.
    pub fn rising(&self, step: u64) -> u32 {
        self.clocks
            .iter()
            .enumerate()
            .filter(|(_, c)| c.rises(step))
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    /// Appends [`Schedule::rising`] of steps `start..start + n` to `out`:
    /// one division a clock for the run instead of one a clock and step
    /// (a 64-bit division costs about as much as a small block's cycle).
    pub fn rising_into(&self, start: u64, n: u64, out: &mut Vec<u32>) {
        // Steps until each clock's next rise, counting `start` as 0.
        let mut until: Vec<u32> = self
            .clocks
            .iter()
            .map(|c| {
                let p = u64::from(c.period);
                ((u64::from(c.phase) + p - start % p) % p) as u32
            })
            .collect();
        out.reserve(n as usize);
        for _ in 0..n {
            let mut m = 0;
            for (i, (u, c)) in until.iter_mut().zip(&self.clocks).enumerate() {
                if *u == 0 {
                    m |= 1 << i;
                    *u = c.period;
                }
                *u -= 1;
            }
            out.push(m);
        }
    }

    /// Whether the clock named `name` rises in `step` (false for an unknown
    /// name).
    pub fn rises(&self, name: &str, step: u64) -> bool {
        self.clocks.iter().any(|c| c.name == name && c.rises(step))
    }

    /// The same clocks with their bits in the order of `names`, which must
    /// name exactly this schedule's clocks: what a simulator whose clock
    /// ports are ordered `names` uses. `Err` names what does not match.
    pub fn reordered(&self, names: &[&str]) -> Result<Schedule, String> {
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            match self.clocks.iter().find(|c| c.name == *n) {
                Some(c) => out.push(c.clone()),
                None => {
                    return Err(format!(
                        "the design's clock {n} is not in the schedule {self}"
                    ))
                }
            }
        }
        if let Some(extra) = self
            .clocks
            .iter()
            .find(|c| !names.contains(&c.name.as_str()))
        {
            return Err(format!(
                "the schedule's clock {} is not a clock of the design (its clocks: {})",
                extra.name,
                names.join(", ")
            ));
        }
        Ok(Schedule { clocks: out })
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.clocks.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{} every {} step(s)", c.name, c.period)?;
            if c.phase != 0 {
                write!(f, " from step {}", c.phase)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opennic_box_ratio() {
        let s = Schedule::new([("axis_aclk", 1, 0), ("axil_aclk", 2, 0)]).unwrap();
        let masks: Vec<u32> = (0..6).map(|t| s.rising(t)).collect();
        assert_eq!(masks, vec![3, 1, 3, 1, 3, 1]);
        assert!(s.rises("axil_aclk", 4) && !s.rises("axil_aclk", 5));
        let r = s.reordered(&["axil_aclk", "axis_aclk"]).unwrap();
        assert_eq!(
            (0..4).map(|t| r.rising(t)).collect::<Vec<_>>(),
            vec![3, 2, 3, 2]
        );
        assert_eq!(
            s.to_string(),
            "axis_aclk every 1 step(s), axil_aclk every 2 step(s)"
        );
    }

    #[test]
    fn phases_and_errors() {
        let s = Schedule::new([("a", 3, 1)]).unwrap();
        assert_eq!(
            (0..7).map(|t| s.rising(t)).collect::<Vec<_>>(),
            vec![0, 1, 0, 0, 1, 0, 0]
        );
        assert_eq!(Schedule::new([]), Err(ScheduleError::Empty));
        assert!(matches!(
            Schedule::new([("a", 2, 2)]),
            Err(ScheduleError::Timing { .. })
        ));
        assert!(matches!(
            Schedule::new([("a", 0, 0)]),
            Err(ScheduleError::Timing { .. })
        ));
        assert_eq!(
            Schedule::new([("a", 1, 0), ("a", 2, 0)]),
            Err(ScheduleError::Duplicate("a".into()))
        );
        assert!(s.reordered(&["b"]).is_err());
        assert!(Schedule::single("clock").reordered(&[]).is_err());
        assert_eq!(Schedule::single("clock").rising(17), 1);
    }

    proptest::proptest! {
        #[test]
        fn a_run_of_masks_is_each_steps_mask(
            clocks in proptest::collection::vec((1u32..7, 0u32..7), 1..4),
            start in 0u64..1_000_000_007,
            n in 0u64..40,
        ) {
            let named: Vec<(String, u32, u32)> = clocks
                .iter()
                .enumerate()
                .map(|(i, &(p, ph))| (format!("c{i}"), p, ph % p))
                .collect();
            let s = Schedule::new(named.iter().map(|(n, p, ph)| (n.as_str(), *p, *ph))).unwrap();
            let mut run = vec![99];
            s.rising_into(start, n, &mut run);
            let each: Vec<u32> = std::iter::once(99)
                .chain((start..start + n).map(|t| s.rising(t)))
                .collect();
            proptest::prop_assert_eq!(run, each);
        }
    }
}
