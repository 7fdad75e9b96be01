//! The dual-clock FIFO: specification, port-level model and a scoreboarding
//! driver.
//!
//! # Behaviour
//!
//! `N` entries (a power of two, at least 2). The write side runs on
//! `wr_clock`, the read side on `rd_clock`.
//!
//! - **Write side.** At a `wr_clock` edge, `push` with `full` low stores
//!   `data_in` (a push while `full` is dropped). `full` is high when the
//!   writer's count of pushes is `N` ahead of its synchronised copy of the
//!   reader's count of pops, and while a reset is in progress.
//! - **Read side.** First-word fall-through: `data_out` is the oldest entry
//!   whenever `empty` is low, combinationally from the storage (a
//!   distributed-RAM read), so a `pop` at a `rd_clock` edge with `empty`
//!   low consumes exactly the word shown in that step. A pop while `empty`
//!   is dropped. `empty` is high when the reader's count of pops equals its
//!   synchronised copy of the writer's count, and while the read side is
//!   being reset. While `empty` is high `data_out` shows a stale entry.
//! - **Crossing latency.** Each side sees the other's count through two
//!   flip-flops of its own clock (in hardware the counts cross Gray-coded,
//!   so a sample caught mid-change is off by at most one and errs safe). A
//!   push at write edge `w` is visible to the reader after the second read
//!   edge strictly after `w`; a pop frees its entry for the writer after the
//!   second write edge strictly after it.
//! - **Reset** (`reset`, in the write domain). At a write edge with `reset`
//!   high and no reset in progress, a request is raised (a push in the same
//!   step is dropped; `full` is high from then until the reset completes).
//!   The request crosses to the read side through two read flops; while it
//!   is seen there the read count is cleared, `empty` is held high and the
//!   reader's copy of the write count is held at zero. The read side's
//!   acknowledgement (one more read flop) crosses back through two write
//!   flops; at the write edge that sees it the write count is cleared and
//!   the request dropped; when the acknowledgement has fallen again the
//!   writer accepts pushes. So each count jumps to zero only while the other
//!   side ignores it, and in hardware a multi-bit jump is never sampled as a
//!   count. A `reset` during a reset in progress changes nothing (nothing
//!   has been pushed since). The reader may still pop entries older than
//!   the reset until the request reaches it; the storage is never cleared.
//!
//! Power-on state: everything zero, empty, no reset in progress.

use super::super::clocks::Schedule;
use crate::dut::{Driver, Dut};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::VecDeque;

/// Name of the write clock.
pub const WR_CLOCK: &str = "wr_clock";
/// Name of the read clock.
pub const RD_CLOCK: &str = "rd_clock";

/// Payload width of the FIFO the witness tests use.
pub const DATA_BITS: usize = 16;

crate::ports! {
    /// Inputs of the dual-clock FIFO with a 16-bit payload.
    pub struct FifoIn {
        /// Write side: start a reset of both sides.
        pub reset: bool = 1,
        /// Write side: store `data_in` (ignored while `full`).
        pub push: bool = 1,
        /// Write side: the word to store.
        pub data_in: u16 = 16,
        /// Read side: consume the head (ignored while `empty`).
        pub pop: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the dual-clock FIFO with a 16-bit payload.
    pub struct FifoOut {
        /// Write side: no room, or a reset in progress.
        pub full: bool = 1,
        /// Read side: the head (valid when `empty` is low).
        pub data_out: u16 = 16,
        /// Read side: nothing to read, or the read side in reset.
        pub empty: bool = 1,
    }
}

/// The write side's inputs at one of its edges.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WriteSide {
    /// Start a reset.
    pub reset: bool,
    /// Store `data`.
    pub push: bool,
    /// The word to store.
    pub data: u64,
}

/// The read side's inputs at one of its edges.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadSide {
    /// Consume the head.
    pub pop: bool,
}

/// The FIFO's state, exact to the edge. Counts run modulo `2N` (the
/// hardware's pointers have one bit more than the address).
#[derive(Clone, Debug)]
pub struct FifoCore {
    depth: u64,
    mask: u64,
    mem: Vec<u64>,
    // Write domain.
    wcount: u64,
    /// The reader's count through two write flops; `[1]` is the one used.
    rcount_seen: [u64; 2],
    req: bool,
    waiting: bool,
    /// The read side's in-reset flag through two write flops.
    ack_seen: [bool; 2],
    // Read domain.
    rcount: u64,
    /// The writer's count through two read flops; `[1]` is the one used.
    wcount_seen: [u64; 2],
    /// The reset request through two read flops; `[1]` is the one used.
    req_seen: [bool; 2],
    in_reset: bool,
}

impl FifoCore {
    /// A FIFO of `depth` entries of `width` bits at power-on.
    ///
    /// # Panics
    /// If `depth` is not a power of two of at least 2, or `width` is not in
    /// 1..=64.
    pub fn new(depth: usize, width: usize) -> Self {
        assert!(
            depth >= 2 && depth.is_power_of_two(),
            "FIFO depth {depth} must be a power of two, at least 2"
        );
        assert!(
            (1..=64).contains(&width),
            "FIFO width {width} must be 1..=64"
        );
        Self {
            depth: depth as u64,
            mask: if width == 64 {
                u64::MAX
            } else {
                (1 << width) - 1
            },
            mem: vec![0; depth],
            wcount: 0,
            rcount_seen: [0; 2],
            req: false,
            waiting: false,
            ack_seen: [false; 2],
            rcount: 0,
            wcount_seen: [0; 2],
            req_seen: [false; 2],
            in_reset: false,
        }
    }

    /// The write side's `full`.
    pub fn full(&self) -> bool {
        self.busy()
            || self.wcount.wrapping_sub(self.rcount_seen[1]) % (2 * self.depth) == self.depth
    }

    /// A reset in progress, seen from the write side.
    fn busy(&self) -> bool {
        self.req || self.waiting
    }

    /// The read side's `empty`.
    pub fn empty(&self) -> bool {
        self.req_seen[1] || self.rcount == self.wcount_seen[1]
    }

    /// The read side's `data_out`.
    pub fn head(&self) -> u64 {
        self.mem[(self.rcount % self.depth) as usize]
    }

    /// Entries held, as the writer counts them (pushes less the pops it has
    /// seen).
    pub fn level(&self) -> u64 {
        self.wcount.wrapping_sub(self.rcount_seen[1]) % (2 * self.depth)
    }

    /// One edge instant: `w` when the write clock rises, `r` when the read
    /// clock rises (both: simultaneous edges). Every register takes its new
    /// value from the state before the instant.
    pub fn edge(&mut self, w: Option<WriteSide>, r: Option<ReadSide>) {
        let before = self.clone();
        let wrap = 2 * self.depth;
        if let Some(w) = w {
            if !before.busy() && w.reset {
                self.req = true;
            } else if w.push && !before.full() {
                self.mem[(before.wcount % self.depth) as usize] = w.data & self.mask;
                self.wcount = (before.wcount + 1) % wrap;
            }
            if before.req && before.ack_seen[1] {
                self.wcount = 0;
                self.req = false;
                self.waiting = true;
            }
            if before.waiting && !before.ack_seen[1] {
                self.waiting = false;
            }
            self.rcount_seen = [before.rcount, before.rcount_seen[0]];
            self.ack_seen = [before.in_reset, before.ack_seen[0]];
        }
        if let Some(r) = r {
            self.wcount_seen = if before.req_seen[1] {
                [0, 0]
            } else {
                [before.wcount, before.wcount_seen[0]]
            };
            self.req_seen = [before.req, before.req_seen[0]];
            self.in_reset = before.req_seen[1];
            if before.req_seen[1] {
                self.rcount = 0;
            } else if r.pop && !before.empty() {
                self.rcount = (before.rcount + 1) % wrap;
            }
        }
    }
}

/// The dual-clock FIFO with a 16-bit payload as a [`Dut`], on a schedule
/// naming [`WR_CLOCK`] and [`RD_CLOCK`].
pub struct AsyncFifoModel {
    core: FifoCore,
    schedule: Schedule,
    step: u64,
    inputs: FifoIn,
}

impl AsyncFifoModel {
    /// A FIFO of `depth` entries at power-on.
    ///
    /// # Panics
    /// If `schedule` does not name exactly [`WR_CLOCK`] and [`RD_CLOCK`], or
    /// `depth` is not a power of two of at least 2.
    pub fn new(depth: usize, schedule: Schedule) -> Self {
        if let Err(e) = schedule.reordered(&[WR_CLOCK, RD_CLOCK]) {
            panic!("AsyncFifoModel: {e}");
        }
        Self {
            core: FifoCore::new(depth, DATA_BITS),
            schedule,
            step: 0,
            inputs: FifoIn::default(),
        }
    }
}

impl Dut for AsyncFifoModel {
    type In = FifoIn;
    type Out = FifoOut;

    fn eval(&mut self, inputs: &FifoIn) -> FifoOut {
        self.inputs = inputs.clone();
        FifoOut {
            full: self.core.full(),
            data_out: self.core.head() as u16,
            empty: self.core.empty(),
        }
    }

    fn tick(&mut self) {
        let i = &self.inputs;
        let w = self
            .schedule
            .rises(WR_CLOCK, self.step)
            .then_some(WriteSide {
                reset: i.reset,
                push: i.push,
                data: u64::from(i.data_in),
            });
        let r = self
            .schedule
            .rises(RD_CLOCK, self.step)
            .then_some(ReadSide { pop: i.pop });
        self.core.edge(w, r);
        self.step += 1;
    }

    fn witness(&self) -> &str {
        "model"
    }

    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}

/// Random traffic for [`FifoDriver`].
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Traffic {
    /// Words to push (accepted pushes) before the driver stops pushing.
    pub words: usize,
    /// Probability the writer tries to push in one of its cycles.
    pub push: f64,
    /// Probability the reader pops in one of its cycles.
    pub pop: f64,
    /// Probability the writer raises `reset` in one of its cycles.
    pub reset: f64,
}

/// What a [`FifoDriver`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FifoStats {
    /// Pushes accepted.
    pub pushed: usize,
    /// Words popped.
    pub popped: usize,
    /// Words discarded by a reset.
    pub discarded: usize,
    /// Cycles of `reset` high.
    pub resets: usize,
    /// Write cycles that saw `full` while no reset was pending.
    pub full_cycles: usize,
    /// Read cycles that saw `empty` with a pop wanted.
    pub empty_pops: usize,
}

/// A writer and a reader of the FIFO, each changing its inputs only right
/// after its own clock's edges (as logic of that domain would), with a
/// scoreboard that checks no word is lost, duplicated or reordered: the
/// reader must receive exactly the accepted words in order, except that a
/// reset discards what was queued (the reader may still receive a prefix of
/// it before the reset reaches the read side).
pub struct FifoDriver {
    rng: ChaCha8Rng,
    traffic: Traffic,
    schedule: Schedule,
    step: u64,
    w_fresh: bool,
    r_fresh: bool,
    inputs: FifoIn,
    next_word: u16,
    /// Words accepted since the last reset, oldest first.
    queued: VecDeque<u16>,
    /// Words queued before a reset that the reader may still receive.
    doomed: VecDeque<u16>,
    reset_pending: bool,
    stats: FifoStats,
    errors: Vec<String>,
}

impl FifoDriver {
    /// A driver for a FIFO whose clocks rise on `schedule` (naming
    /// [`WR_CLOCK`] and [`RD_CLOCK`]).
    pub fn new(seed: u64, traffic: Traffic, schedule: Schedule) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let next_word = rng.gen();
        Self {
            rng,
            traffic,
            schedule,
            step: 0,
            w_fresh: true,
            r_fresh: true,
            inputs: FifoIn::default(),
            next_word,
            queued: VecDeque::new(),
            doomed: VecDeque::new(),
            reset_pending: false,
            stats: FifoStats::default(),
            errors: vec![],
        }
    }

    /// Counts of what happened.
    pub fn stats(&self) -> &FifoStats {
        &self.stats
    }

    /// Scoreboard failures (words lost, duplicated, reordered or invented).
    pub fn errors(&self) -> &[String] {
        &self.errors
    }
}

impl Driver<FifoIn, FifoOut> for FifoDriver {
    fn drive(&mut self) -> FifoIn {
        let t = self.traffic;
        if self.w_fresh {
            let more = self.stats.pushed < t.words;
            self.inputs.push = more && self.rng.gen_bool(t.push.clamp(0.0, 1.0));
            self.inputs.data_in = self.next_word;
            self.inputs.reset = more && self.rng.gen_bool(t.reset.clamp(0.0, 1.0));
        }
        if self.r_fresh {
            self.inputs.pop = self.rng.gen_bool(t.pop.clamp(0.0, 1.0));
        }
        self.inputs.clone()
    }

    fn observe(&mut self, i: &FifoIn, o: &FifoOut) {
        let w = self.schedule.rises(WR_CLOCK, self.step);
        let r = self.schedule.rises(RD_CLOCK, self.step);
        let step = self.step;
        if w && !o.full {
            // Not full, so no reset in progress: whatever a past reset
            // discarded can no longer reach the reader.
            self.stats.discarded += self.doomed.len();
            self.doomed.clear();
            self.reset_pending = false;
        }
        if w && o.full && !self.reset_pending {
            self.stats.full_cycles += 1;
        }
        // Pops first: a pop and a reset in one instant pop the old contents.
        if r && i.pop {
            if o.empty {
                self.stats.empty_pops += 1;
            } else {
                let v = o.data_out;
                if self.doomed.front() == Some(&v) {
                    self.doomed.pop_front();
                    self.stats.popped += 1;
                } else {
                    // The reset has reached the reader: the rest is gone.
                    self.stats.discarded += self.doomed.len();
                    self.doomed.clear();
                    match self.queued.pop_front() {
                        Some(want) if want == v => self.stats.popped += 1,
                        Some(want) => self.errors.push(format!(
                            "step {step}: popped {v:#06x}, expected {want:#06x}"
                        )),
                        None => self.errors.push(format!(
                            "step {step}: popped {v:#06x} from a FIFO that should be empty"
                        )),
                    }
                }
            }
        }
        if w {
            if i.reset {
                self.stats.resets += 1;
                self.reset_pending = true;
                self.doomed.extend(self.queued.drain(..));
            } else if i.push && !o.full {
                self.queued.push_back(i.data_in);
                self.stats.pushed += 1;
                self.next_word = self.next_word.wrapping_add(1);
            }
        }
        self.w_fresh = w;
        self.r_fresh = r;
        self.step += 1;
    }

    fn finished(&self) -> bool {
        self.stats.pushed >= self.traffic.words && self.queued.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dut::run;

    fn ratio(wr: u32, rd: u32) -> Schedule {
        Schedule::new([(WR_CLOCK, wr, 0), (RD_CLOCK, rd, 0)]).unwrap()
    }

    const BUSY: Traffic = Traffic {
        words: 300,
        push: 0.9,
        pop: 0.5,
        reset: 0.0,
    };

    #[test]
    fn delivers_in_order_both_ways() {
        for s in [ratio(1, 2), ratio(2, 1), ratio(1, 1)] {
            let mut m = AsyncFifoModel::new(4, s.clone());
            let mut d = FifoDriver::new(7, BUSY, s.clone());
            run(&mut m, &mut d, 100_000).unwrap();
            assert!(d.errors().is_empty(), "{s}: {:?}", d.errors());
            assert_eq!(d.stats().popped, 300);
            assert!(d.stats().full_cycles > 0, "{s}: {:?}", d.stats());
        }
    }

    #[test]
    fn first_word_latency_is_two_reader_edges() {
        // Writer at 250 MHz, reader at 125 MHz, phase-aligned: a push at
        // step 0 (both edges) is in the reader's first flop at step 2 and
        // its second at step 4, so `empty` falls in step 5.
        let s = ratio(1, 2);
        let mut m = AsyncFifoModel::new(4, s);
        let mut empties = vec![];
        for step in 0..7 {
            let o = m.eval(&FifoIn {
                push: step == 0,
                data_in: 0xabc,
                ..FifoIn::default()
            });
            empties.push(o.empty);
            m.tick();
        }
        assert_eq!(empties, vec![true, true, true, true, true, false, false]);
    }

    #[test]
    fn full_at_depth_and_freed_by_a_pop() {
        let s = ratio(1, 1);
        let mut m = AsyncFifoModel::new(4, s);
        for k in 0..4 {
            let o = m.eval(&FifoIn {
                push: true,
                data_in: k,
                ..FifoIn::default()
            });
            assert!(!o.full);
            m.tick();
        }
        assert!(m.eval(&FifoIn::default()).full);
    }

    #[test]
    fn resets_discard_but_never_reorder() {
        let t = Traffic {
            words: 400,
            push: 0.8,
            pop: 0.6,
            reset: 0.03,
        };
        for s in [ratio(1, 2), ratio(2, 1), ratio(2, 3)] {
            let mut m = AsyncFifoModel::new(4, s.clone());
            let mut d = FifoDriver::new(11, t, s.clone());
            run(&mut m, &mut d, 200_000).unwrap();
            assert!(d.errors().is_empty(), "{s}: {:?}", d.errors());
            let st = d.stats();
            assert!(st.resets > 3 && st.discarded > 0, "{s}: {st:?}");
            assert_eq!(st.popped + st.discarded, st.pushed, "{s}: {st:?}");
        }
    }

    #[test]
    fn scoreboard_catches_a_lost_word() {
        /// A FIFO that drops every 50th accepted word.
        struct Lossy(AsyncFifoModel, usize);
        impl Dut for Lossy {
            type In = FifoIn;
            type Out = FifoOut;
            fn eval(&mut self, i: &FifoIn) -> FifoOut {
                let mut i = i.clone();
                let o = self.0.eval(&i);
                if i.push && !o.full && self.0.schedule.rises(WR_CLOCK, self.0.step) {
                    self.1 += 1;
                    if self.1.is_multiple_of(50) {
                        i.push = false;
                        self.0.eval(&i);
                    }
                }
                o
            }
            fn tick(&mut self) {
                self.0.tick()
            }
            fn witness(&self) -> &str {
                "lossy"
            }
        }
        let s = ratio(1, 2);
        let mut d = FifoDriver::new(5, BUSY, s.clone());
        let _ = run(&mut Lossy(AsyncFifoModel::new(4, s), 0), &mut d, 20_000);
        assert!(!d.errors().is_empty());
    }
}
