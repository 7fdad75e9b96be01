//! Record packing: the key-value engine's record beats (spilled partial
//! sums and flushed table rows, up to 8 per beat) packed densely into
//! record frames for the framer (`docs/wire.md`, "Key-value records").
//! The cycle-accurate specification is `weft_model::rec_pack::RecPackModel`
//! (read its docs first).
//!
//! Datapath: each input beat's records are compacted and rotated in one
//! step (input lane `i` goes to lane `prefix_i + o - skip` mod 8, where
//! `prefix_i` counts the records below lane `i`, `o` is the open frame's
//! fill of its current beat and `skip` the records of this beat already
//! taken) and merged into the partial beat; a beat that fills up is
//! written to the frame buffer, the overflow starts the next partial beat.
//! A close writes the partial beat (if any) and pushes a descriptor
//! (record count, flags, job, the buffer address after the frame) into a
//! four-entry queue. The body reader walks the head frame's beats from the
//! read pointer to the descriptor's end address; the RAMs read at
//! `rd_next`, so body beats leave back to back, also across frames. As in
//! `frame_check`, a RAM read never sees the write at its own edge, so the
//! reader waits a cycle when it sits on the slot written at the last edge.
//!
//! The buffer is one RAM per lane (64 bits by 256 beats; 255 usable, one
//! slot marks full), enough for a 1119-record frame (140 beats) while
//! earlier ones drain; an open frame never needs more, so the input never
//! waits for room that draining frames cannot make.

use crate::common::{konst, Cat, Fifo4, Fifo4Mem, Pack, Widen};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use weft_regs::wire::KV_MAX_RECORDS;

/// Address bits of the frame buffer (256 beats).
pub const BUF_BITS: usize = 8;
/// Records per beat.
pub const LANES: usize = 8;

/// The record packer.
#[derive(LogicBlock)]
pub struct RecPack {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Record beat: lane i holds key (bits 64i+31:64i) and partial sum
    /// (64i+63:64i+32).
    pub s_tdata: Signal<In, Bits<512>>,
    /// Which lanes hold a record.
    pub s_tkeep: Signal<In, Bits<8>>,
    /// Kind: 1 spill, 2 flush, 3 flush done (no records).
    pub s_tuser: Signal<In, Bits<2>>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// The packer takes the beat.
    pub s_tready: Signal<Out, Bit>,
    /// Records per frame (0 acts as 1, above 1119 as 1119).
    pub max: Signal<In, Bits<11>>,
    /// Cycles a frame's first record may wait (`net.PACK_WAIT`; not named
    /// `wait`, a Verilog keyword).
    pub wait_cycles: Signal<In, Bits<20>>,
    /// Job id for the frame header.
    pub job: Signal<In, Bits<16>>,
    /// Write the next frame's sequence number.
    pub seq_we: Signal<In, Bit>,
    /// The sequence number written.
    pub seq_wdata: Signal<In, Bits<32>>,
    /// The next frame's sequence number.
    pub seq: Signal<Out, Bits<32>>,
    /// A frame's header and body are ready.
    pub h_valid: Signal<Out, Bit>,
    /// The framer is done with the frame; counts only with the frame's last
    /// body beat or after it.
    pub h_ready: Signal<In, Bit>,
    /// The 16-byte record-frame header, byte i in bits 8i+7:8i.
    pub h_app: Signal<Out, Bits<128>>,
    /// Body bytes: 8 per record.
    pub h_blen: Signal<Out, Bits<16>>,
    /// Body beat.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Body beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// The framer takes the body beat.
    pub m_tready: Signal<In, Bit>,
    /// A frame's header was accepted.
    pub ev_frame: Signal<Out, Bit>,

    mem: [RAM<Bits<64>, BUF_BITS>; LANES],
    d_n: Fifo4<Bits<11>>,
    // A descriptor's other fields follow `d_n`'s pointers.
    d_fl: Fifo4Mem<Bits<2>>,
    d_end: Fifo4Mem<Bits<BUF_BITS>>,
    d_job: Fifo4Mem<Bits<16>>,

    n: DFF<Bits<11>>,
    cls: DFF<Bit>,
    part: [DFF<Bits<64>>; LANES],
    age: DFF<Bits<20>>,
    skip: DFF<Bits<3>>,
    wr: DFF<Bits<BUF_BITS>>,
    rd: DFF<Bits<BUF_BITS>>,
    lw_en: DFF<Bit>,
    lw_addr: DFF<Bits<BUF_BITS>>,
    seq_q: DFF<Bits<32>>,
    cur_seq: DFF<Bits<32>>,
    presented: DFF<Bit>,

    // Input side.
    mx: Signal<Local, Bits<11>>,
    done: Signal<Local, Bit>,
    bcls: Signal<Local, Bit>,
    pre: [Signal<Local, Bits<4>>; 9],
    w_keep: [Widen<4, 1>; LANES],
    k: Signal<Local, Bits<4>>,
    w_skip: Widen<4, 3>,
    rem: Signal<Local, Bits<4>>,
    open: Signal<Local, Bit>,
    o: Signal<Local, Bits<3>>,
    w_o: Widen<4, 3>,
    room_left: Signal<Local, Bits<11>>,
    w_rem: Widen<11, 4>,
    fits: Signal<Local, Bit>,
    t: Signal<Local, Bits<4>>,
    ot: Signal<Local, Bits<4>>,
    beat_full: Signal<Local, Bit>,
    desc_room: Signal<Local, Bit>,
    wr1: Signal<Local, Bits<BUF_BITS>>,
    buf_room: Signal<Local, Bit>,
    rec_beat: Signal<Local, Bit>,
    done_due: Signal<Local, Bit>,
    want_close: Signal<Local, Bit>,
    fin: Signal<Local, Bit>,
    can_close: Signal<Local, Bit>,
    close: Signal<Local, Bit>,
    take: Signal<Local, Bit>,
    write: Signal<Local, Bit>,
    wr_after: Signal<Local, Bits<BUF_BITS>>,
    r: Signal<Local, Bits<3>>,
    pos: [Signal<Local, Bits<3>>; LANES],
    lane: [Signal<Local, Bits<64>>; LANES],
    rot: [Signal<Local, Bits<64>>; LANES],
    cur: [Signal<Local, Bits<64>>; LANES],
    nxt: [Signal<Local, Bits<64>>; LANES],
    w_t11: Widen<11, 4>,

    // Output side.
    hv: Signal<Local, Bit>,
    stale: Signal<Local, Bit>,
    pop: Signal<Local, Bit>,
    accept: Signal<Local, Bit>,
    rd1: Signal<Local, Bits<BUF_BITS>>,
    rd_next: Signal<Local, Bits<BUF_BITS>>,
    h_seq: Signal<Local, Bits<32>>,
    w_fl: Widen<64, 2>,
    w_n: Widen<64, 11>,
    w_job: Widen<64, 16>,
    w_seq: Widen<64, 32>,
    w_blen: Widen<16, 11>,
    app: Cat<128, 64, 64>,
    pack: Pack<512, 64, LANES>,

    // Constants.
    lane_no: [Constant<Bits<3>>; LANES],
    lane_no4: [Constant<Bits<4>>; LANES],
    lane_no8: [Constant<Bits<4>>; 7],
    zero11: Constant<Bits<11>>,
    one11: Constant<Bits<11>>,
    max_rec: Constant<Bits<11>>,
    kind_flush: Constant<Bits<2>>,
    kind_done: Constant<Bits<2>>,
    zero3: Constant<Bits<3>>,
    four3: Constant<Bits<3>>,
    zero4: Constant<Bits<4>>,
    eight4: Constant<Bits<4>>,
    one_b: Constant<Bits<BUF_BITS>>,
    one20: Constant<Bits<20>>,
    ones20: Constant<Bits<20>>,
    zero64: Constant<Bits<64>>,
    one32: Constant<Bits<32>>,
    fl_spill: Constant<Bits<2>>,
    fl_flush: Constant<Bits<2>>,
    fl_fin: Constant<Bits<2>>,
    hdr_fixed: Constant<Bits<64>>,
}

impl Default for RecPack {
    fn default() -> Self {
        Self::new()
    }
}

impl RecPack {
    /// Elaborate the packer, idle and empty.
    pub fn new() -> Self {
        let zeroed = || {
            // A defined power-on content: the buffer's output is visible on
            // m_tdata (with m_tvalid low) and both simulators must agree.
            RAM::new(
                (0..1u64 << BUF_BITS)
                    .map(|i| (Bits::from(i), Bits::<64>::from(0u64)))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        // Version 1, RECORDS, sender 0xffff; the FLUSH/FIN bits, count, job
        // and sequence number are filled in.
        let hdr_fixed = 0x01 | 0x10 << 8 | 0xffff << 48;
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tuser: Default::default(),
            s_tvalid: Default::default(),
            s_tready: Default::default(),
            max: Default::default(),
            wait_cycles: Default::default(),
            job: Default::default(),
            seq_we: Default::default(),
            seq_wdata: Default::default(),
            seq: Default::default(),
            h_valid: Default::default(),
            h_ready: Default::default(),
            h_app: Default::default(),
            h_blen: Default::default(),
            m_tdata: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            ev_frame: Default::default(),
            mem: array_init::array_init(|_| zeroed()),
            d_n: Default::default(),
            d_fl: Default::default(),
            d_end: Default::default(),
            d_job: Default::default(),
            n: Default::default(),
            cls: Default::default(),
            part: array_init::array_init(|_| Default::default()),
            age: Default::default(),
            skip: Default::default(),
            wr: Default::default(),
            rd: Default::default(),
            lw_en: Default::default(),
            lw_addr: Default::default(),
            seq_q: Default::default(),
            cur_seq: Default::default(),
            presented: Default::default(),
            mx: Default::default(),
            done: Default::default(),
            bcls: Default::default(),
            pre: array_init::array_init(|_| Default::default()),
            w_keep: array_init::array_init(|_| Default::default()),
            k: Default::default(),
            w_skip: Default::default(),
            rem: Default::default(),
            open: Default::default(),
            o: Default::default(),
            w_o: Default::default(),
            room_left: Default::default(),
            w_rem: Default::default(),
            fits: Default::default(),
            t: Default::default(),
            ot: Default::default(),
            beat_full: Default::default(),
            desc_room: Default::default(),
            wr1: Default::default(),
            buf_room: Default::default(),
            rec_beat: Default::default(),
            done_due: Default::default(),
            want_close: Default::default(),
            fin: Default::default(),
            can_close: Default::default(),
            close: Default::default(),
            take: Default::default(),
            write: Default::default(),
            wr_after: Default::default(),
            r: Default::default(),
            pos: array_init::array_init(|_| Default::default()),
            lane: array_init::array_init(|_| Default::default()),
            rot: array_init::array_init(|_| Default::default()),
            cur: array_init::array_init(|_| Default::default()),
            nxt: array_init::array_init(|_| Default::default()),
            w_t11: Default::default(),
            hv: Default::default(),
            stale: Default::default(),
            pop: Default::default(),
            accept: Default::default(),
            rd1: Default::default(),
            rd_next: Default::default(),
            h_seq: Default::default(),
            w_fl: Default::default(),
            w_n: Default::default(),
            w_job: Default::default(),
            w_seq: Default::default(),
            w_blen: Default::default(),
            app: Default::default(),
            pack: Default::default(),
            lane_no: array_init::array_init(|j| konst(j as u64)),
            lane_no4: array_init::array_init(|j| konst(j as u64)),
            lane_no8: array_init::array_init(|j| konst(j as u64 + 8)),
            zero11: konst(0),
            one11: konst(1),
            max_rec: konst(KV_MAX_RECORDS as u64),
            kind_flush: konst(2),
            kind_done: konst(3),
            zero3: konst(0),
            four3: konst(4),
            zero4: konst(0),
            eight4: konst(8),
            one_b: konst(1),
            one20: konst(1),
            ones20: konst((1 << 20) - 1),
            zero64: konst(0),
            one32: konst(1),
            fl_spill: konst(0),
            fl_flush: konst(1),
            fl_fin: konst(3),
            hdr_fixed: konst(hdr_fixed),
        }
    }

    /// The packer, connected and ready to simulate or emit.
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}

impl Logic for RecPack {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, n, cls, age, skip, wr, rd, lw_en, lw_addr, seq_q, cur_seq, presented
        );
        for j in 0..8 {
            self.part[j].clock.next = self.clock.val();
            self.part[j].d.next = self.part[j].q.val();
            self.mem[j].read_clock.next = self.clock.val();
            self.mem[j].write_clock.next = self.clock.val();
        }
        self.d_n.clock.next = self.clock.val();
        self.d_fl.clock.next = self.clock.val();
        self.d_end.clock.next = self.clock.val();
        self.d_job.clock.next = self.clock.val();

        // ---- The input beat and the open frame.
        self.mx.next = self.max.val();
        if self.max.val() == self.zero11.val() {
            self.mx.next = self.one11.val();
        }
        if self.max.val() > self.max_rec.val() {
            self.mx.next = self.max_rec.val();
        }
        self.done.next = self.s_tuser.val() == self.kind_done.val();
        self.bcls.next = self.s_tuser.val() == self.kind_flush.val();
        // Records below each lane (a popcount prefix over the keep mask).
        self.pre[0].next = self.zero4.val();
        for i in 0..8 {
            self.w_keep[i].narrow.next = self.s_tkeep.val().get_bits::<1>(i);
            self.pre[i + 1].next = self.pre[i].val() + self.w_keep[i].wide.val();
        }
        self.k.next = self.pre[8].val();
        if self.done.val() {
            self.k.next = self.zero4.val();
        }
        self.w_skip.narrow.next = self.skip.q.val();
        self.rem.next = self.zero4.val();
        if self.k.val() > self.w_skip.wide.val() {
            self.rem.next = self.k.val() - self.w_skip.wide.val();
        }
        self.open.next = self.n.q.val() != self.zero11.val();
        self.o.next = self.n.q.val().get_bits::<3>(0);
        self.w_o.narrow.next = self.o.val();
        self.room_left.next = self.mx.val() - self.n.q.val();
        self.w_rem.narrow.next = self.rem.val();
        self.fits.next = self.w_rem.wide.val() <= self.room_left.val();
        // Records taken this cycle: all that remain, or (into an empty
        // frame, when the beat alone exceeds max) as many as fit.
        self.t.next = self.rem.val();
        if !self.fits.val() {
            self.t.next = self.room_left.val().get_bits::<4>(0);
        }
        self.ot.next = self.w_o.wide.val() + self.t.val();
        self.beat_full.next = self.ot.val() >= self.eight4.val();

        self.desc_room.next = self.d_n.count.val() < self.four3.val();
        self.wr1.next = self.wr.q.val() + self.one_b.val();
        self.buf_room.next = self.wr1.val() != self.rd.q.val();

        // ---- Closing: at most one per cycle, and then no records are taken.
        self.rec_beat.next =
            self.s_tvalid.val() & !self.done.val() & (self.rem.val() != self.zero4.val());
        self.done_due.next = self.s_tvalid.val() & self.done.val();
        self.want_close.next = self.done_due.val()
            | (self.open.val()
                & ((self.n.q.val() >= self.mx.val())
                    | (self.age.q.val() >= self.wait_cycles.val())
                    | (self.rec_beat.val()
                        & ((self.cls.q.val() != self.bcls.val()) | !self.fits.val()))));
        // A flush-done beat ends an open flush frame, or comes as an empty
        // frame of its own; an open spill frame is closed first.
        self.fin.next = self.done_due.val() & (!self.open.val() | self.cls.q.val());
        self.can_close.next =
            self.desc_room.val() & ((self.o.val() == self.zero3.val()) | self.buf_room.val());
        self.close.next = self.want_close.val() & self.can_close.val();
        self.take.next = !self.want_close.val()
            & self.s_tvalid.val()
            & !self.done.val()
            & (!self.beat_full.val() | self.buf_room.val());
        self.s_tready.next =
            (self.close.val() & self.fin.val()) | (self.take.val() & self.fits.val());

        // ---- Placing the records: compact and rotate in one crossbar.
        // The placed lanes are used only by a beat taken (`cur` and `nxt`
        // feed the partial beat and the buffer write of a filled beat; a
        // close writes the partial beat as it was), so the crossbar runs
        // only then: a simulator skips its 64 selects on every other
        // cycle, and in hardware `take` is one more input to each select.
        self.r.next = self.o.val() - self.skip.q.val();
        for i in 0..8 {
            self.lane[i].next = self.s_tdata.val().get_bits::<64>(64 * i);
            self.pos[i].next = self.pre[i].val().get_bits::<3>(0) + self.r.val();
        }
        for j in 0..8 {
            self.rot[j].next = self.zero64.val();
            self.cur[j].next = self.zero64.val();
            self.nxt[j].next = self.zero64.val();
        }
        if self.take.val() {
            for j in 0..8 {
                for i in 0..8 {
                    if self.s_tkeep.val().get_bit(i) & (self.pos[i].val() == self.lane_no[j].val())
                    {
                        self.rot[j].next = self.lane[i].val();
                    }
                }
                if self.lane_no4[j].val() < self.ot.val() {
                    self.cur[j].next = self.rot[j].val();
                }
            }
            // Lane 7 is never below the fill (o <= 7) nor reached by an
            // overflow (o + t <= 15), so these comparisons stop at lane 6.
            for j in 0..7 {
                if self.lane_no[j].val() < self.o.val() {
                    self.cur[j].next = self.part[j].q.val();
                }
                if self.lane_no8[j].val() < self.ot.val() {
                    self.nxt[j].next = self.rot[j].val();
                }
            }
        }

        // ---- Buffer writes: a filled beat, or the partial beat at a close.
        self.write.next = (self.close.val() & (self.o.val() != self.zero3.val()))
            | (self.take.val() & self.beat_full.val());
        self.wr_after.next = self.wr.q.val();
        if self.write.val() {
            self.wr_after.next = self.wr1.val();
        }
        self.wr.d.next = self.wr_after.val();
        self.lw_en.d.next = self.write.val();
        self.lw_addr.d.next = self.wr.q.val();
        for j in 0..8 {
            self.mem[j].write_address.next = self.wr.q.val();
            self.mem[j].write_enable.next = self.write.val();
            self.mem[j].write_data.next = self.cur[j].val();
            if self.close.val() {
                self.mem[j].write_data.next = self.part[j].q.val();
            }
        }

        // ---- Frame state.
        self.age.d.next = self.age.q.val();
        if self.age.q.val() != self.ones20.val() {
            self.age.d.next = self.age.q.val() + self.one20.val();
        }
        self.w_t11.narrow.next = self.t.val();
        if self.close.val() {
            self.n.d.next = self.zero11.val();
            for j in 0..8 {
                self.part[j].d.next = self.zero64.val();
            }
        }
        if self.take.val() {
            self.n.d.next = self.n.q.val() + self.w_t11.wide.val();
            for j in 0..8 {
                self.part[j].d.next = self.cur[j].val();
                if self.beat_full.val() {
                    self.part[j].d.next = self.nxt[j].val();
                }
            }
            if !self.open.val() & (self.t.val() != self.zero4.val()) {
                self.cls.d.next = self.bcls.val();
                self.age.d.next = self.one20.val();
            }
            self.skip.d.next = self.skip.q.val() + self.t.val().get_bits::<3>(0);
            if self.fits.val() {
                self.skip.d.next = self.zero3.val();
            }
        }

        // ---- Descriptors of closed frames.
        self.d_n.push.next = self.close.val();
        self.d_fl.push.next = self.close.val();
        self.d_end.push.next = self.close.val();
        self.d_job.push.next = self.close.val();
        self.d_fl.wr.next = self.d_n.wr.val();
        self.d_end.wr.next = self.d_n.wr.val();
        self.d_job.wr.next = self.d_n.wr.val();
        self.d_fl.rd.next = self.d_n.rd.val();
        self.d_end.rd.next = self.d_n.rd.val();
        self.d_job.rd.next = self.d_n.rd.val();
        self.d_n.data_in.next = self.n.q.val();
        self.d_end.data_in.next = self.wr_after.val();
        self.d_job.data_in.next = self.job.val();
        self.d_fl.data_in.next = self.fl_spill.val();
        if self.cls.q.val() | !self.open.val() {
            self.d_fl.data_in.next = self.fl_flush.val();
        }
        if self.fin.val() {
            self.d_fl.data_in.next = self.fl_fin.val();
        }

        // ---- The head frame: header and body to the framer.
        self.hv.next = self.d_n.count.val() != self.zero3.val();
        self.stale.next = self.lw_en.q.val() & (self.lw_addr.q.val() == self.rd.q.val());
        self.m_tvalid.next =
            self.hv.val() & (self.rd.q.val() != self.d_end.data_out.val()) & !self.stale.val();
        self.pop.next = self.m_tvalid.val() & self.m_tready.val();
        self.rd1.next = self.rd.q.val() + self.one_b.val();
        self.rd_next.next = self.rd.q.val();
        if self.pop.val() {
            self.rd_next.next = self.rd1.val();
        }
        // h_ready counts with the last body beat or after it, so a frame can
        // never be acknowledged with body beats left.
        self.accept.next =
            self.hv.val() & self.h_ready.val() & (self.rd_next.val() == self.d_end.data_out.val());
        self.rd.d.next = self.rd_next.val();
        for j in 0..8 {
            self.mem[j].read_address.next = self.rd_next.val();
        }
        self.d_n.pop.next = self.accept.val();
        self.ev_frame.next = self.accept.val();
        self.h_valid.next = self.hv.val();

        // Sequence numbers: a frame takes `seq` when its header is first
        // shown and keeps it until accepted.
        self.h_seq.next = self.seq_q.q.val();
        if self.presented.q.val() {
            self.h_seq.next = self.cur_seq.q.val();
        }
        self.cur_seq.d.next = self.h_seq.val();
        self.presented.d.next = self.hv.val() & !self.accept.val();
        if self.hv.val() & !self.presented.q.val() {
            self.seq_q.d.next = self.seq_q.q.val() + self.one32.val();
        }
        if self.seq_we.val() {
            self.seq_q.d.next = self.seq_wdata.val();
        }
        self.seq.next = self.seq_q.q.val();

        // Header bytes 0..8 from the head descriptor, 8..12 the sequence number.
        self.w_fl.narrow.next = self.d_fl.data_out.val();
        self.w_n.narrow.next = self.d_n.data_out.val();
        self.w_job.narrow.next = self.d_job.data_out.val();
        self.w_seq.narrow.next = self.h_seq.val();
        self.app.lo.next = self.hdr_fixed.val()
            | (self.w_fl.wide.val() << 10)
            | (self.w_n.wide.val() << 16)
            | (self.w_job.wide.val() << 32);
        self.app.hi.next = self.w_seq.wide.val();
        self.h_app.next = self.app.out.val();
        self.w_blen.narrow.next = self.d_n.data_out.val();
        self.h_blen.next = self.w_blen.wide.val() << 3;

        for j in 0..8 {
            self.pack.lane[j].next = self.mem[j].read_data.val();
        }
        self.m_tdata.next = self.pack.out.val();
    }
}
