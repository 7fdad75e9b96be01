//! The one-word crossing by a two-phase handshake: specification,
//! port-level model and a scoreboarding driver.
//!
//! # Behaviour
//!
//! One word in flight at a time. The source side runs on `src_clock`, the
//! destination side on `dst_clock`.
//!
//! - **Source side.** `src_ready` is high while no word is in flight: the
//!   request toggle equals the source's synchronised copy of the
//!   acknowledgement toggle. At a `src_clock` edge with `src_ready` high,
//!   `src_valid` stores `src_data` and toggles the request (`src_valid`
//!   while not ready is ignored, so VALID may wait for READY without
//!   loss).
//! - **Destination side.** `dst_valid` is high while the destination's
//!   synchronised copy of the request differs from the acknowledgement
//!   toggle; `dst_data` is the stored word (it changes only at a store,
//!   which happens two destination edges before `dst_valid` can rise, so
//!   it is stable whenever `dst_valid` is high). At a `dst_clock` edge
//!   with `dst_valid` high, `dst_ready` takes the word and toggles the
//!   acknowledgement.
//! - **Crossing latency.** Each toggle crosses through two flip-flops of
//!   the other clock ([`SyncBitModel`]): a store at source edge `s` is
//!   offered after the second destination edge strictly after `s`; a take
//!   at destination edge `d` frees the source after the second source edge
//!   strictly after `d`.
//!
//! Compared with the dual-clock FIFO ([`super::fifo`]) it holds one word
//! instead of `N`, so a stream through it runs at one word per round trip,
//! but it has no pointers, no storage to address and nothing to decode:
//! for a register path, where a master has one transaction in flight per
//! channel, that is all it needs, and an idle crossing costs a simulator
//! two comparisons. It has no reset: both toggles start at 0.

use super::fifo::{FifoDriver, FifoIn, FifoOut, FifoStats, Traffic, RD_CLOCK, WR_CLOCK};
use super::SyncBitModel;
use crate::clocks::Schedule;
use crate::dut::{Driver, Dut};

/// Name of the source clock.
pub const SRC_CLOCK: &str = "src_clock";
/// Name of the destination clock.
pub const DST_CLOCK: &str = "dst_clock";

crate::ports! {
    /// Inputs of the two-phase crossing with a 16-bit word.
    pub struct TwoPhaseIn {
        /// Source side: a word to send.
        pub src_valid: bool = 1,
        /// Source side: the word.
        pub src_data: u16 = 16,
        /// Destination side: take the word.
        pub dst_ready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the two-phase crossing with a 16-bit word.
    pub struct TwoPhaseOut {
        /// Source side: no word in flight.
        pub src_ready: bool = 1,
        /// Destination side: a word is offered.
        pub dst_valid: bool = 1,
        /// Destination side: the word.
        pub dst_data: u16 = 16,
    }
}

/// The crossing's state, exact to the edge.
#[derive(Clone, Debug)]
pub struct TwoPhaseCore {
    mask: u64,
    // Source domain.
    data: u64,
    req: bool,
    /// The acknowledgement through two source flops.
    ack_seen: SyncBitModel,
    // Destination domain.
    ack: bool,
    /// The request through two destination flops.
    req_seen: SyncBitModel,
}

impl TwoPhaseCore {
    /// A crossing of `width`-bit words at power-on.
    ///
    /// # Panics
    /// If `width` is not in 1..=64.
    pub fn new(width: usize) -> Self {
        assert!(
            (1..=64).contains(&width),
            "crossing width {width} must be 1..=64"
        );
        Self {
            mask: u64::MAX >> (64 - width),
            data: 0,
            req: false,
            ack_seen: SyncBitModel::new(),
            ack: false,
            req_seen: SyncBitModel::new(),
        }
    }

    /// The source side's `src_ready`.
    pub fn ready(&self) -> bool {
        self.req == self.ack_seen.out()
    }

    /// The destination side's `dst_valid`.
    pub fn valid(&self) -> bool {
        self.req_seen.out() != self.ack
    }

    /// The destination side's `dst_data`.
    pub fn data(&self) -> u64 {
        self.data
    }

    /// One edge instant: `src` (`src_valid`, `src_data`) when the source
    /// clock rises, `dst` (`dst_ready`) when the destination clock rises
    /// (both: simultaneous edges). Every register takes its new value from
    /// the state before the instant.
    pub fn edge(&mut self, src: Option<(bool, u64)>, dst: Option<bool>) {
        let (ready, valid, req, ack) = (self.ready(), self.valid(), self.req, self.ack);
        if let Some((push, data)) = src {
            if ready && push {
                self.data = data & self.mask;
                self.req = !req;
            }
            self.ack_seen.edge(ack);
        }
        if let Some(take) = dst {
            if valid && take {
                self.ack = !ack;
            }
            self.req_seen.edge(req);
        }
    }
}

/// The two-phase crossing with a 16-bit word as a [`Dut`], on a schedule
/// naming [`SRC_CLOCK`] and [`DST_CLOCK`].
pub struct TwoPhaseModel {
    core: TwoPhaseCore,
    schedule: Schedule,
    step: u64,
    inputs: TwoPhaseIn,
}

impl TwoPhaseModel {
    /// The crossing at power-on.
    ///
    /// # Panics
    /// If `schedule` does not name exactly [`SRC_CLOCK`] and [`DST_CLOCK`].
    pub fn new(schedule: Schedule) -> Self {
        if let Err(e) = schedule.reordered(&[SRC_CLOCK, DST_CLOCK]) {
            panic!("TwoPhaseModel: {e}");
        }
        Self {
            core: TwoPhaseCore::new(16),
            schedule,
            step: 0,
            inputs: TwoPhaseIn::default(),
        }
    }
}

impl Dut for TwoPhaseModel {
    type In = TwoPhaseIn;
    type Out = TwoPhaseOut;

    fn eval(&mut self, inputs: &TwoPhaseIn) -> TwoPhaseOut {
        self.inputs = inputs.clone();
        TwoPhaseOut {
            src_ready: self.core.ready(),
            dst_valid: self.core.valid(),
            dst_data: self.core.data() as u16,
        }
    }

    fn tick(&mut self) {
        let i = &self.inputs;
        let src = self
            .schedule
            .rises(SRC_CLOCK, self.step)
            .then_some((i.src_valid, u64::from(i.src_data)));
        let dst = self
            .schedule
            .rises(DST_CLOCK, self.step)
            .then_some(i.dst_ready);
        self.core.edge(src, dst);
        self.step += 1;
    }

    fn witness(&self) -> &str {
        "model"
    }

    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}

/// A writer and a reader of the crossing with the dual-clock FIFO's
/// scoreboard ([`FifoDriver`], without resets): the crossing is a FIFO of
/// one word to its two sides, `src_ready` its "not full" and `dst_valid`
/// its "not empty", so every stored word must arrive once and in order.
/// The writer offers a fresh word only after a store, so the scoreboard
/// also catches a word stored twice or one changed while offered.
pub struct TwoPhaseDriver(FifoDriver);

impl TwoPhaseDriver {
    /// A driver for a crossing whose clocks rise on `schedule`, sending
    /// `traffic.words` words (`traffic.reset` is ignored: there is none).
    ///
    /// # Panics
    /// If `schedule` does not name exactly [`SRC_CLOCK`] and [`DST_CLOCK`].
    pub fn new(seed: u64, traffic: Traffic, schedule: Schedule) -> Self {
        let traffic = Traffic {
            reset: 0.0,
            ..traffic
        };
        Self(FifoDriver::new(seed, traffic, as_fifo_schedule(&schedule)))
    }

    /// Counts of what happened.
    pub fn stats(&self) -> &FifoStats {
        self.0.stats()
    }

    /// Scoreboard failures (words lost, duplicated, reordered or invented).
    pub fn errors(&self) -> &[String] {
        self.0.errors()
    }
}

/// `schedule` with the FIFO's clock names, which the scoreboard steps on.
fn as_fifo_schedule(schedule: &Schedule) -> Schedule {
    let ordered = schedule
        .reordered(&[SRC_CLOCK, DST_CLOCK])
        .unwrap_or_else(|e| panic!("TwoPhaseDriver: {e}"));
    let [src, dst] = ordered.clocks() else {
        unreachable!("reordered to two clocks")
    };
    Schedule::new([
        (WR_CLOCK, src.period, src.phase),
        (RD_CLOCK, dst.period, dst.phase),
    ])
    .expect("two distinct names with a valid schedule's timings")
}

fn from_fifo_in(i: &FifoIn) -> TwoPhaseIn {
    TwoPhaseIn {
        src_valid: i.push,
        src_data: i.data_in,
        dst_ready: i.pop,
    }
}

impl Driver<TwoPhaseIn, TwoPhaseOut> for TwoPhaseDriver {
    fn drive(&mut self) -> TwoPhaseIn {
        from_fifo_in(&self.0.drive())
    }

    fn observe(&mut self, i: &TwoPhaseIn, o: &TwoPhaseOut) {
        let fi = FifoIn {
            reset: false,
            push: i.src_valid,
            data_in: i.src_data,
            pop: i.dst_ready,
        };
        let fo = FifoOut {
            full: !o.src_ready,
            data_out: o.dst_data,
            empty: !o.dst_valid,
        };
        self.0.observe(&fi, &fo);
    }

    fn finished(&self) -> bool {
        self.0.finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::run;

    fn ratio(src: u32, dst: u32) -> Schedule {
        Schedule::new([(SRC_CLOCK, src, 0), (DST_CLOCK, dst, 0)]).unwrap()
    }

    const BUSY: Traffic = Traffic {
        words: 200,
        push: 0.9,
        pop: 0.5,
        reset: 0.0,
    };

    #[test]
    fn delivers_in_order_at_every_ratio() {
        for s in [ratio(1, 2), ratio(2, 1), ratio(1, 1), ratio(2, 3)] {
            let mut m = TwoPhaseModel::new(s.clone());
            let mut d = TwoPhaseDriver::new(7, BUSY, s.clone());
            run(&mut m, &mut d, 100_000).unwrap();
            assert!(d.errors().is_empty(), "{s}: {:?}", d.errors());
            assert_eq!(d.stats().popped, 200);
            assert!(d.stats().full_cycles > 0, "{s}: {:?}", d.stats());
        }
    }

    #[test]
    fn round_trip_is_two_edges_each_way() {
        // One clock for both sides: a store at step 0 is in the
        // destination's flops at steps 1 and 2, offered in step 3 and taken
        // there; the acknowledgement is in the source's flops at steps 4
        // and 5, so the source is ready again in step 6.
        let mut m = TwoPhaseModel::new(ratio(1, 1));
        let (mut ready, mut valid) = (vec![], vec![]);
        for step in 0..8 {
            let o = m.eval(&TwoPhaseIn {
                src_valid: step == 0,
                src_data: 0xabc,
                dst_ready: true,
            });
            ready.push(o.src_ready);
            valid.push(o.dst_valid);
            if o.dst_valid {
                assert_eq!(o.dst_data, 0xabc);
            }
            m.tick();
        }
        assert_eq!(
            ready,
            vec![true, false, false, false, false, false, true, true]
        );
        assert_eq!(
            valid,
            vec![false, false, false, true, false, false, false, false]
        );
    }

    #[test]
    fn scoreboard_catches_a_crossing_that_offers_a_word_twice() {
        /// A crossing that forgets every 30th acknowledgement.
        struct Echo(TwoPhaseModel, usize);
        impl Dut for Echo {
            type In = TwoPhaseIn;
            type Out = TwoPhaseOut;
            fn eval(&mut self, i: &TwoPhaseIn) -> TwoPhaseOut {
                let mut i = i.clone();
                let o = self.0.eval(&i);
                let m = &self.0;
                if o.dst_valid && i.dst_ready && m.schedule.rises(DST_CLOCK, m.step) {
                    self.1 += 1;
                    if self.1.is_multiple_of(30) {
                        i.dst_ready = false;
                        self.0.eval(&i);
                    }
                }
                o
            }
            fn tick(&mut self) {
                self.0.tick()
            }
            fn witness(&self) -> &str {
                "echo"
            }
        }
        let s = ratio(1, 2);
        let mut d = TwoPhaseDriver::new(5, BUSY, s.clone());
        let _ = run(&mut Echo(TwoPhaseModel::new(s), 0), &mut d, 20_000);
        assert!(!d.errors().is_empty());
    }
}
