//! The frame check at the card's two frame inputs (`docs/wire.md`, "Frames
//! the card accepts"): a store-and-forward buffer that lets a frame through
//! only whole and only when its `tuser_size` tells the truth, so nothing
//! downstream ever sees half a frame or a size that lies.
//! [`FrameCheckModel`] is the cycle-accurate specification of
//! `weft_hdl::frame_check::FrameCheck`.
//!
//! # Which frames pass
//! A frame's size is `s_tuser_size` of its first beat (the stream contract
//! holds it stable over the frame; later beats' values are ignored). The
//! frame is **good** iff `1 <= size <= MAX_FRAME` (9600) and it has exactly
//! `ceil(size / 64)` beats. `s_tkeep` is not looked at: as in the OpenNIC
//! shell, the last beat's bytes follow from the size.
//!
//! The buffer holds `2^ab - 1` beats. Of a frame, at most
//! [`beat_limit`]`(ab) = min(2^ab - 1, MAX_FRAME_BEATS)` beats are stored;
//! a frame with more beats is bad, and its further beats are taken at once
//! and discarded (so a frame that can never fit never waits for space). On
//! the card (`ab = 9`, 511 beats) the limit is the longest good frame (150
//! beats) and changes nothing; a smaller test build also drops good frames
//! longer than its buffer.
//!
//! Good frames leave whole and in order, bytes unchanged, with
//! `m_tuser_size = size` on every beat, `m_tkeep` all ones except on the
//! last beat, which covers `size mod 64` bytes (64 when that is 0), and
//! `m_tlast` on the last beat. Bad frames leave nothing.
//!
//! # Cycle by cycle
//! State: the buffer (`mem`, `2^ab` slots of {beat, last, size}), the write
//! pointer `wr`, the commit pointer `cw`, the read pointer `rd` (all modulo
//! `2^ab`), the frame in progress (`in_frame`, its `size` and `cnt` beats
//! taken, saturating at the limit), the RAM's read register, and the
//! address of the last cycle's write (`lw`).
//!
//! Input, in each cycle: the current beat's size is `s_tuser_size` when no
//! frame is in progress, else the frame's; its index is `cnt` (0 for a
//! first beat). It is *stored* when its index is below the limit.
//! `s_tready = !stored || wr + 1 != rd` (held off only when a beat to store
//! finds the buffer full). A taken, stored beat is written at `wr` and `wr`
//! advances. When a frame's last beat is taken, `ev_frame` pulses; if the
//! frame is good, `cw` moves past the beat (the frame is committed),
//! otherwise `ev_bad` pulses too and `wr` returns to `cw` (the frame's
//! stored beats are forgotten).
//!
//! Output: `m_tvalid` when `rd != cw` (a committed beat is at `rd`) and the
//! beat at `rd` was not written at the last clock edge. `m_tdata`,
//! `m_tlast`, `m_tuser_size` and (from them) `m_tkeep` are the RAM's read
//! register, whatever `m_tvalid` says: at each edge the RAM reads slot
//! `rd_next` (`rd + 1` after a pop, else `rd`) *before* that edge's write.
//! So the first beat of a frame of two beats or more can leave in the cycle
//! after its last beat was taken, a one-beat frame a cycle later, and beats
//! leave back to back across frames at one per cycle.
//!
//! The buffer starts zeroed (the RTL's RAMs have a defined power-on
//! content), so even the don't-care outputs agree between witnesses.

use crate::dut::Dut;
use crate::wire::{MAX_FRAME, MAX_FRAME_BEATS};

crate::ports! {
    /// Inputs of the frame check.
    pub struct FrameCheckIn {
        /// Frame data.
        pub s_tdata: [u32; 16] = 512,
        /// Byte enables (not used).
        pub s_tkeep: u64 = 64,
        /// Last beat.
        pub s_tlast: bool = 1,
        /// Valid.
        pub s_tvalid: bool = 1,
        /// Frame bytes.
        pub s_tuser_size: u16 = 16,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the frame check.
    pub struct FrameCheckOut {
        /// Input ready.
        pub s_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output frame bytes.
        pub m_tuser_size: u16 = 16,
        /// A frame's last beat was taken.
        pub ev_frame: bool = 1,
        /// The frame whose last beat was taken is dropped.
        pub ev_bad: bool = 1,
    }
}

/// Beats of a frame that a buffer of `2^ab - 1` beats stores at most.
pub fn beat_limit(ab: u32) -> usize {
    ((1usize << ab) - 1).min(MAX_FRAME_BEATS)
}

/// Whether a frame of `size` bytes and `beats` beats leaves a frame check
/// with a buffer of `2^ab - 1` beats.
pub fn passes(ab: u32, size: usize, beats: usize) -> bool {
    (1..=MAX_FRAME).contains(&size) && beats == size.div_ceil(64) && beats <= beat_limit(ab)
}

/// `tkeep` of a frame's beat: all ones, except the last beat's, which
/// covers `size mod 64` bytes (64 when that is 0).
pub fn keep_of(size: u16, last: bool) -> u64 {
    if last {
        u64::MAX >> ((64 - (size as u32 % 64)) % 64)
    } else {
        u64::MAX
    }
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Slot {
    data: [u32; 16],
    last: bool,
    size: u16,
}

/// The frame check, cycle by cycle.
#[derive(Clone, Debug)]
pub struct FrameCheckModel {
    mask: usize,
    limit: usize,
    mem: Vec<Slot>,
    out: Slot,
    wr: usize,
    cw: usize,
    rd: usize,
    in_frame: bool,
    size: u16,
    cnt: usize,
    lw: Option<usize>,
    inputs: FrameCheckIn,
}

impl FrameCheckModel {
    /// Empty, with a buffer of `2^ab - 1` beats.
    ///
    /// # Panics
    /// When `ab` is not 2..=12 (the RTL's range).
    pub fn new(ab: u32) -> Self {
        assert!((2..=12).contains(&ab), "frame_check: ab must be 2..=12");
        Self {
            mask: (1 << ab) - 1,
            limit: beat_limit(ab),
            mem: vec![Slot::default(); 1 << ab],
            out: Slot::default(),
            wr: 0,
            cw: 0,
            rd: 0,
            in_frame: false,
            size: 0,
            cnt: 0,
            lw: None,
            inputs: FrameCheckIn::default(),
        }
    }

    /// The current beat's frame size and index.
    fn current(&self) -> (u16, usize) {
        if self.in_frame {
            (self.size, self.cnt)
        } else {
            (self.inputs.s_tuser_size, 0)
        }
    }

    fn valid(&self) -> bool {
        self.rd != self.cw && self.lw != Some(self.rd)
    }

    fn outputs(&self) -> FrameCheckOut {
        let i = &self.inputs;
        let (size, cnt) = self.current();
        let store = cnt < self.limit;
        let full = (self.wr + 1) & self.mask == self.rd;
        let ready = !store || !full;
        let take = i.s_tvalid && ready;
        let good =
            (1..=MAX_FRAME).contains(&(size as usize)) && (size as usize - 1) / 64 == cnt && store;
        FrameCheckOut {
            s_tready: ready,
            m_tdata: self.out.data,
            m_tkeep: keep_of(self.out.size, self.out.last),
            m_tlast: self.out.last,
            m_tvalid: self.valid(),
            m_tuser_size: self.out.size,
            ev_frame: take && i.s_tlast,
            ev_bad: take && i.s_tlast && !good,
        }
    }
}

impl Dut for FrameCheckModel {
    type In = FrameCheckIn;
    type Out = FrameCheckOut;

    fn eval(&mut self, inputs: &FrameCheckIn) -> FrameCheckOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let o = self.outputs();
        // The read side first: the RAM reads before this edge's write.
        let rd_next = if o.m_tvalid && i.m_tready {
            (self.rd + 1) & self.mask
        } else {
            self.rd
        };
        self.out = self.mem[rd_next];
        self.rd = rd_next;

        let (size, cnt) = self.current();
        let store = cnt < self.limit;
        let take = i.s_tvalid && o.s_tready;
        self.lw = None;
        if !take {
            return;
        }
        if store {
            self.mem[self.wr] = Slot {
                data: i.s_tdata,
                last: i.s_tlast,
                size,
            };
            self.lw = Some(self.wr);
            self.wr = (self.wr + 1) & self.mask;
        }
        self.in_frame = !i.s_tlast;
        self.size = size;
        self.cnt = if store { cnt + 1 } else { cnt };
        if i.s_tlast {
            if o.ev_bad {
                self.wr = self.cw;
            } else {
                self.cw = self.wr;
            }
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}
