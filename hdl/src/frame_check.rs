//! The store-and-forward frame check at each of the card's frame inputs
//! (network receive and host H2C), specified cycle by cycle by
//! `weft_model::frame_check::FrameCheckModel` (read its docs first): a
//! frame leaves only whole and only when its `tuser_size` is 1 to
//! [`MAX_FRAME`] and agrees with its number of beats; every other frame is
//! dropped whole.
//!
//! Storage is a circular buffer of `2^AB - 1` beats (one slot stays free so
//! that `wr + 1 == rd` means full without an extra pointer bit) in three
//! RAMs sharing their addresses: the beat, its `last` flag and its frame's
//! size. A frame's beats are written tentatively at the write pointer; its
//! last beat either publishes them (the commit pointer moves past it) or
//! rolls the write pointer back to the commit pointer. The reader sees only
//! committed beats.
//!
//! The RAMs read synchronously at `rd_next` (the read pointer after this
//! cycle's pop), so a popped beat is followed by the next one in the next
//! cycle, across frame boundaries too. A RAM read returns what was written
//! before its edge; the one beat a read can miss is the one written at the
//! same edge, which is the last beat of a frame committed at that edge.
//! The block remembers the last write's address and holds `m_tvalid` low
//! for a cycle when the read pointer sits on it (this happens only for a
//! one-beat frame, so frames of two beats or more leave in the cycle after
//! their last beat was taken). The design never depends on a RAM's
//! read-during-write behaviour, which differs between rust-hdl and Verilog
//! RAM templates.

use crate::common::{konst, Widen};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use weft_regs::wire::{MAX_FRAME, MAX_FRAME_BEATS};

/// Beats a frame may have before it is bad and its further beats are
/// discarded: the longest good frame ([`MAX_FRAME_BEATS`]), or less when
/// the buffer (`2^ab - 1` beats) is smaller.
pub const fn beat_limit(ab: usize) -> usize {
    let cap = (1usize << ab) - 1;
    if cap < MAX_FRAME_BEATS {
        cap
    } else {
        MAX_FRAME_BEATS
    }
}

/// The frame check with a buffer of `2^AB - 1` beats (the card: `AB = 9`).
#[derive(LogicBlock)]
pub struct FrameCheck<const AB: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Frame data.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Byte enables: part of the stream contract, not used (the last beat's
    /// bytes follow from `s_tuser_size`, as in the OpenNIC shell).
    pub s_tkeep: Signal<In, Bits<64>>,
    /// Last beat of a frame.
    pub s_tlast: Signal<In, Bit>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Frame bytes (taken from a frame's first beat).
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// The block takes the beat.
    pub s_tready: Signal<Out, Bit>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables (from the size).
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output frame bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// Downstream takes the beat.
    pub m_tready: Signal<In, Bit>,
    /// A frame's last beat was taken this cycle.
    pub ev_frame: Signal<Out, Bit>,
    /// With `ev_frame`: the frame is dropped.
    pub ev_bad: Signal<Out, Bit>,

    data: RAM<Bits<512>, AB>,
    last: RAM<Bit, AB>,
    size: RAM<Bits<16>, AB>,

    wr: DFF<Bits<AB>>,
    cw: DFF<Bits<AB>>,
    rd: DFF<Bits<AB>>,
    in_frame: DFF<Bit>,
    size_q: DFF<Bits<16>>,
    cnt: DFF<Bits<8>>,
    lw_en: DFF<Bit>,
    lw_addr: DFF<Bits<AB>>,

    cur_size: Signal<Local, Bits<16>>,
    cur_cnt: Signal<Local, Bits<8>>,
    store: Signal<Local, Bit>,
    wr1: Signal<Local, Bits<AB>>,
    full: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    size_ok: Signal<Local, Bit>,
    size_m1: Signal<Local, Bits<16>>,
    beats_m1: Signal<Local, Bits<16>>,
    w_cnt: Widen<16, 8>,
    good: Signal<Local, Bit>,
    stale: Signal<Local, Bit>,
    valid: Signal<Local, Bit>,
    rd_next: Signal<Local, Bits<AB>>,
    keep_amt: Signal<Local, Bits<6>>,

    limit: Constant<Bits<8>>,
    one8: Constant<Bits<8>>,
    one_ab: Constant<Bits<AB>>,
    zero8: Constant<Bits<8>>,
    zero16: Constant<Bits<16>>,
    one16: Constant<Bits<16>>,
    max_frame: Constant<Bits<16>>,
    zero6: Constant<Bits<6>>,
    ones64: Constant<Bits<64>>,
}

fn zeroed<D: Synth, const N: usize>() -> RAM<D, N> {
    // A defined power-on content: the RAM's output is visible on m_tdata
    // (with m_tvalid low) before anything was written, and both simulators
    // must show the same value there.
    RAM::new(
        (0..1u64 << N)
            .map(|i| (Bits::from(i), D::default()))
            .collect::<BTreeMap<_, _>>(),
    )
}

impl<const AB: usize> FrameCheck<AB> {
    /// Elaborate the block, empty.
    ///
    /// # Panics
    /// At elaboration, when `AB` is not 2..=12.
    pub fn new() -> Self {
        assert!(
            (2..=12).contains(&AB),
            "frame_check: AB must be 2..=12 (3 to 4095 beats)"
        );
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tuser_size: Default::default(),
            m_tready: Default::default(),
            ev_frame: Default::default(),
            ev_bad: Default::default(),
            data: zeroed(),
            last: zeroed(),
            size: zeroed(),
            wr: Default::default(),
            cw: Default::default(),
            rd: Default::default(),
            in_frame: Default::default(),
            size_q: Default::default(),
            cnt: Default::default(),
            lw_en: Default::default(),
            lw_addr: Default::default(),
            cur_size: Default::default(),
            cur_cnt: Default::default(),
            store: Default::default(),
            wr1: Default::default(),
            full: Default::default(),
            take: Default::default(),
            size_ok: Default::default(),
            size_m1: Default::default(),
            beats_m1: Default::default(),
            w_cnt: Default::default(),
            good: Default::default(),
            stale: Default::default(),
            valid: Default::default(),
            rd_next: Default::default(),
            keep_amt: Default::default(),
            limit: konst(beat_limit(AB) as u64),
            one8: konst(1),
            one_ab: konst(1),
            zero8: konst(0),
            zero16: konst(0),
            one16: konst(1),
            max_frame: konst(MAX_FRAME as u64),
            zero6: konst(0),
            ones64: konst(u64::MAX),
        }
    }

    /// The block, connected and ready to simulate or emit.
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}

impl<const AB: usize> Default for FrameCheck<AB> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const AB: usize> Logic for FrameCheck<AB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, wr, cw, rd, in_frame, size_q, cnt, lw_en, lw_addr);
        self.data.read_clock.next = self.clock.val();
        self.data.write_clock.next = self.clock.val();
        self.last.read_clock.next = self.clock.val();
        self.last.write_clock.next = self.clock.val();
        self.size.read_clock.next = self.clock.val();
        self.size.write_clock.next = self.clock.val();

        // ---- Input: the current beat's frame size and position.
        self.cur_size.next = self.size_q.q.val();
        self.cur_cnt.next = self.cnt.q.val();
        if !self.in_frame.q.val() {
            self.cur_size.next = self.s_tuser_size.val();
            self.cur_cnt.next = self.zero8.val();
        }
        // Beats past the limit are taken and discarded, so a frame that can
        // never fit does not wait for space.
        self.store.next = self.cur_cnt.val() < self.limit.val();
        self.wr1.next = self.wr.q.val() + self.one_ab.val();
        self.full.next = self.wr1.val() == self.rd.q.val();
        self.s_tready.next = !self.store.val() | !self.full.val();
        self.take.next = self.s_tvalid.val() & self.s_tready.val();

        // A frame is good when 1 <= size <= MAX_FRAME and its beats number
        // ceil(size / 64), i.e. the last beat is beat (size - 1) / 64.
        self.size_ok.next = (self.cur_size.val() != self.zero16.val())
            & (self.cur_size.val() <= self.max_frame.val());
        self.size_m1.next = self.cur_size.val() - self.one16.val();
        self.beats_m1.next = self.size_m1.val() >> 6;
        self.w_cnt.narrow.next = self.cur_cnt.val();
        self.good.next =
            self.size_ok.val() & (self.beats_m1.val() == self.w_cnt.wide.val()) & self.store.val();

        self.data.write_address.next = self.wr.q.val();
        self.last.write_address.next = self.wr.q.val();
        self.size.write_address.next = self.wr.q.val();
        self.data.write_data.next = self.s_tdata.val();
        self.last.write_data.next = self.s_tlast.val();
        self.size.write_data.next = self.cur_size.val();
        self.data.write_enable.next = self.take.val() & self.store.val();
        self.last.write_enable.next = self.take.val() & self.store.val();
        self.size.write_enable.next = self.take.val() & self.store.val();
        self.lw_en.d.next = self.take.val() & self.store.val();
        self.lw_addr.d.next = self.wr.q.val();

        self.ev_frame.next = self.take.val() & self.s_tlast.val();
        self.ev_bad.next = self.take.val() & self.s_tlast.val() & !self.good.val();
        if self.take.val() {
            self.in_frame.d.next = !self.s_tlast.val();
            self.size_q.d.next = self.cur_size.val();
            self.cnt.d.next = self.cur_cnt.val();
            if self.store.val() {
                self.wr.d.next = self.wr1.val();
                self.cnt.d.next = self.cur_cnt.val() + self.one8.val();
            }
            if self.s_tlast.val() {
                if self.good.val() {
                    self.cw.d.next = self.wr1.val();
                } else {
                    self.wr.d.next = self.cw.q.val();
                }
            }
        }

        // ---- Output: committed beats, first word falling through.
        self.stale.next = self.lw_en.q.val() & (self.lw_addr.q.val() == self.rd.q.val());
        self.valid.next = (self.rd.q.val() != self.cw.q.val()) & !self.stale.val();
        self.rd_next.next = self.rd.q.val();
        if self.valid.val() & self.m_tready.val() {
            self.rd_next.next = self.rd.q.val() + self.one_ab.val();
        }
        self.rd.d.next = self.rd_next.val();
        self.data.read_address.next = self.rd_next.val();
        self.last.read_address.next = self.rd_next.val();
        self.size.read_address.next = self.rd_next.val();

        self.m_tvalid.next = self.valid.val();
        self.m_tdata.next = self.data.read_data.val();
        self.m_tlast.next = self.last.read_data.val();
        self.m_tuser_size.next = self.size.read_data.val();
        // The last beat covers size mod 64 bytes (64 when 0): shift the mask
        // right by (64 - size) mod 64.
        self.keep_amt.next = self.zero6.val() - self.size.read_data.val().get_bits::<6>(0);
        self.m_tkeep.next = self.ones64.val();
        if self.last.read_data.val() {
            self.m_tkeep.next = self.ones64.val() >> self.keep_amt.val();
        }
    }
}
