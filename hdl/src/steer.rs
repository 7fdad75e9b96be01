//! Stream steering for the top: [`Deframe`] sends the UDP frames addressed
//! to the card's engines (by destination port) to them without their
//! Ethernet, IPv4 and UDP headers, with the sender's return address, and
//! passes every other frame through unchanged; [`PktMux4`] and [`PktMux2`]
//! merge packet streams, a whole packet at a time, round-robin. Their
//! specifications are `weft_model::steer`; `docs/wire.md` is the contract.

use crate::common::{konst, Bswap, Cat, Widen};
use rust_hdl::prelude::*;
use weft_regs::wire;

/// Sideband bits a [`Slice`] carries beside a beat: a deframed packet's
/// destination (2 bits) and return address ([`wire::RET_BITS`]), with room.
pub const SLICE_META: usize = 128;

/// UDP destination port of key-value aggregation packets.
pub const KV_PORT: u64 = wire::KV_PORT as u64;
/// UDP destination port of gradient aggregation packets.
pub const GRAD_PORT: u64 = wire::GRAD_PORT as u64;
/// UDP destination port of MemOps transaction frames.
pub const MEMOPS_PORT: u64 = wire::MEMOPS_PORT as u64;

/// The deframer (512-bit AXI4-Stream). A frame's first beat comes with
/// its class, decided by the [`crate::classify::Classify`] pipeline in
/// front (`weft_model::wire::decide` is the rule): for an engine, well
/// formed, the frame is steered there; malformed or not for an engine, it
/// passes through whole. Frames arrive whole and with a truthful
/// `tuser_size` (a `FrameCheck` stands in front of the classifier).
#[derive(LogicBlock)]
pub struct Deframe {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Frame data.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Byte enables.
    pub s_tkeep: Signal<In, Bits<64>>,
    /// Last beat.
    pub s_tlast: Signal<In, Bit>,
    /// Valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Frame bytes.
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// Ready.
    pub s_tready: Signal<Out, Bit>,
    /// On a frame's first beat: its engine (1 key-value, 2 gradient, 3
    /// MemOps) or 0 to pass it through (the classifier's `m_tcls`).
    pub s_tcls: Signal<In, Bits<2>>,
    /// On a frame's first beat: it was for an engine but malformed.
    pub s_tbad: Signal<In, Bit>,
    /// On an engine frame's first beat: its length without padding.
    pub s_teff: Signal<In, Bits<16>>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output packet bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// Destination: 0 pass through (unchanged frame), 1 key-value, 2 gradient, 3 MemOps.
    pub m_tdest: Signal<Out, Bits<2>>,
    /// An engine packet's return address: source MAC (47:0), IP (79:48), UDP port (95:80).
    pub m_tret: Signal<Out, Bits<96>>,
    /// Output ready.
    pub m_tready: Signal<In, Bit>,
    /// Pulse: a frame's first beat was taken and the frame goes to an engine.
    pub ev_engine: Signal<Out, Bit>,
    /// Pulse: a frame's first beat was taken and the frame passes through.
    pub ev_pass: Signal<Out, Bit>,
    /// Pulse: that passing frame was for an engine but malformed.
    pub ev_malformed: Signal<Out, Bit>,
    in_pkt: DFF<Bit>,
    dest: DFF<Bits<2>>,
    carry: DFF<Bits<176>>,
    size: DFF<Bits<16>>,
    flush: DFF<Bit>,
    ret: DFF<Bits<96>>,
    cls: Signal<Local, Bits<2>>,
    k: Signal<Local, Bits<7>>,
    fire: Signal<Local, Bit>,
    first: Signal<Local, Bit>,
    head: Signal<Local, Bit>,
    keep_n: Signal<Local, Bits<6>>,
    k6: Signal<Local, Bits<6>>,
    keep_amt: Signal<Local, Bits<6>>,
    sw_smac: Bswap<48>,
    sw_sip: Bswap<32>,
    sw_sport: Bswap<16>,
    c_ret_lo: Cat<80, 32, 48>,
    c_ret: Cat<96, 16, 80>,
    w_carry: Widen<512, 176>,
    c_mid: Cat<512, 336, 176>,
    w_k: Widen<7, 6>,
    carry6: Constant<Bits<6>>,
    strip6: Constant<Bits<6>>,
    ones64: Constant<Bits<64>>,
    zero2: Constant<Bits<2>>,
    zero6: Constant<Bits<6>>,
    zero16: Constant<Bits<16>>,
    zero64: Constant<Bits<64>>,
    zero512: Constant<Bits<512>>,
    strip16: Constant<Bits<16>>,
    strip7: Constant<Bits<7>>,
    full7: Constant<Bits<7>>,
}

impl Default for Deframe {
    fn default() -> Self {
        Self::new()
    }
}

impl Deframe {
    /// Idle, between frames.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tready: Default::default(),
            s_tcls: Default::default(),
            s_tbad: Default::default(),
            s_teff: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tuser_size: Default::default(),
            m_tdest: Default::default(),
            m_tret: Default::default(),
            m_tready: Default::default(),
            ev_engine: Default::default(),
            ev_pass: Default::default(),
            ev_malformed: Default::default(),
            in_pkt: Default::default(),
            dest: Default::default(),
            carry: Default::default(),
            size: Default::default(),
            flush: Default::default(),
            ret: Default::default(),
            cls: Default::default(),
            k: Default::default(),
            fire: Default::default(),
            first: Default::default(),
            head: Default::default(),
            keep_n: Default::default(),
            k6: Default::default(),
            keep_amt: Default::default(),
            sw_smac: Default::default(),
            sw_sip: Default::default(),
            sw_sport: Default::default(),
            c_ret_lo: Default::default(),
            c_ret: Default::default(),
            w_carry: Default::default(),
            c_mid: Default::default(),
            w_k: Default::default(),
            carry6: konst(22),
            strip6: konst(42),
            ones64: konst(u64::MAX),
            zero2: konst(0),
            zero6: konst(0),
            zero16: konst(0),
            zero64: konst(0),
            zero512: konst(0),
            strip16: konst(wire::HEADERS as u64),
            strip7: konst(wire::HEADERS as u64),
            full7: konst(64),
        }
    }
}

impl Logic for Deframe {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, in_pkt, dest, carry, size, flush, ret);
        // ---- A first beat's class comes from the classifier; its return
        // address is swapped out of it only while one is offered (a
        // simulator then skips the swaps).
        self.head.next = self.s_tvalid.val() & !self.in_pkt.q.val() & !self.flush.q.val();
        self.sw_smac.en.next = self.head.val();
        self.sw_sip.en.next = self.head.val();
        self.sw_sport.en.next = self.head.val();
        self.sw_smac.din.next = self.s_tdata.val().get_bits::<48>(48);
        self.sw_sip.din.next = self.s_tdata.val().get_bits::<32>(208);
        self.sw_sport.din.next = self.s_tdata.val().get_bits::<16>(272);
        self.cls.next = self.zero2.val();
        if self.head.val() {
            self.cls.next = self.s_tcls.val();
        }
        self.c_ret_lo.hi.next = self.sw_sip.dout.val();
        self.c_ret_lo.lo.next = self.sw_smac.dout.val();
        self.c_ret.hi.next = self.sw_sport.dout.val();
        self.c_ret.lo.next = self.c_ret_lo.out.val();
        self.m_tret.next = self.ret.q.val();

        // ---- The stream. `size` holds the frame's effective length (the
        // IP datagram's end for an engine frame, so padding is dropped).
        self.m_tuser_size.next = self.size.q.val() - self.strip16.val();
        // Bytes in the last beat: size mod 64, 64 for a multiple of 64.
        self.w_k.narrow.next = self.size.q.val().get_bits::<6>(0);
        self.k.next = self.w_k.wide.val();
        if self.size.q.val().get_bits::<6>(0) == self.zero6.val() {
            self.k.next = self.full7.val();
        }
        self.w_carry.narrow.next = self.carry.q.val();
        self.c_mid.hi.next = self.s_tdata.val().get_bits::<336>(0);
        self.c_mid.lo.next = self.carry.q.val();
        // Defaults: the engine path's middle beat (its data below, in the
        // chain's last branches: a 512-bit default overwritten costs a
        // simulator two full-width results on every other cycle).
        self.s_tready.next = self.m_tready.val();
        self.m_tkeep.next = self.ones64.val();
        self.m_tlast.next = false;
        self.m_tvalid.next = self.s_tvalid.val();
        self.m_tdest.next = self.dest.q.val();
        // Byte counts modulo 64 (64 itself is 0): the mask shift is
        // (64 - n) mod 64, and 64 bytes is the full mask.
        self.k6.next = self.k.val().get_bits::<6>(0);
        self.keep_n.next = self.k6.val() + self.carry6.val();
        if self.flush.q.val() {
            self.keep_n.next = self.k6.val() - self.strip6.val();
        }
        self.keep_amt.next = self.zero6.val() - self.keep_n.val();
        if self.flush.q.val() {
            self.s_tready.next = false;
            self.m_tdata.next = self.w_carry.wide.val();
            self.m_tkeep.next = self.ones64.val() >> self.keep_amt.val();
            self.m_tlast.next = true;
            self.m_tvalid.next = true;
        } else if !self.in_pkt.q.val() {
            self.m_tdest.next = self.zero2.val();
            if self.cls.val() == self.zero2.val() {
                self.m_tdata.next = self.s_tdata.val();
                self.m_tkeep.next = self.s_tkeep.val();
                self.m_tlast.next = self.s_tlast.val();
                self.m_tuser_size.next = self.s_tuser_size.val();
            } else {
                // An engine's first beat: taken, nothing out.
                self.s_tready.next = true;
                self.m_tdata.next = self.zero512.val();
                self.m_tkeep.next = self.zero64.val();
                self.m_tvalid.next = false;
                self.m_tuser_size.next = self.zero16.val();
            }
        } else if self.dest.q.val() == self.zero2.val() {
            self.m_tdata.next = self.s_tdata.val();
            self.m_tkeep.next = self.s_tkeep.val();
            self.m_tlast.next = self.s_tlast.val();
            self.m_tuser_size.next = self.size.q.val();
        } else if self.s_tlast.val() & (self.k.val() <= self.strip7.val()) {
            self.m_tdata.next = self.c_mid.out.val();
            self.m_tlast.next = true;
            self.m_tkeep.next = self.ones64.val() >> self.keep_amt.val();
        } else {
            self.m_tdata.next = self.c_mid.out.val();
        }
        // ---- State and events.
        self.fire.next = self.s_tvalid.val() & self.s_tready.val();
        self.first.next = self.fire.val() & !self.in_pkt.q.val() & !self.flush.q.val();
        self.ev_engine.next = self.first.val() & (self.cls.val() != self.zero2.val());
        self.ev_pass.next = self.first.val() & (self.cls.val() == self.zero2.val());
        self.ev_malformed.next = self.first.val() & self.s_tbad.val();
        if self.flush.q.val() {
            if self.m_tready.val() {
                self.flush.d.next = false;
                self.in_pkt.d.next = false;
            }
        } else if self.fire.val() {
            if !self.in_pkt.q.val() {
                self.dest.d.next = self.cls.val();
                self.size.d.next = self.s_tuser_size.val();
                if self.cls.val() != self.zero2.val() {
                    self.size.d.next = self.s_teff.val();
                    self.ret.d.next = self.c_ret.out.val();
                }
                self.carry.d.next = self.s_tdata.val().get_bits::<176>(336);
                self.in_pkt.d.next = !self.s_tlast.val();
                if (self.cls.val() != self.zero2.val()) & self.s_tlast.val() {
                    self.in_pkt.d.next = true;
                    self.flush.d.next = true;
                }
            } else {
                if self.dest.q.val() != self.zero2.val() {
                    self.carry.d.next = self.s_tdata.val().get_bits::<176>(336);
                }
                if self.s_tlast.val() {
                    self.in_pkt.d.next = false;
                    if (self.dest.q.val() != self.zero2.val()) & (self.k.val() > self.strip7.val())
                    {
                        self.in_pkt.d.next = true;
                        self.flush.d.next = true;
                    }
                }
            }
        }
    }
}

/// Four packet streams merged into one, a whole packet at a time: when idle
/// the first valid input after the last one granted is connected through
/// (data, valid, and its ready from the output's) until its `tlast` beat is
/// taken. Purely combinational from inputs to outputs, so it adds no cycle.
#[derive(LogicBlock)]
pub struct PktMux4 {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Input 0 data.
    pub s0_tdata: Signal<In, Bits<512>>,
    /// Input 0 byte enables.
    pub s0_tkeep: Signal<In, Bits<64>>,
    /// Input 0 last beat.
    pub s0_tlast: Signal<In, Bit>,
    /// Input 0 valid.
    pub s0_tvalid: Signal<In, Bit>,
    /// Input 0 packet bytes.
    pub s0_tuser_size: Signal<In, Bits<16>>,
    /// Input 0 source tag.
    pub s0_tuser_src: Signal<In, Bits<16>>,
    /// Input 0 destination tag.
    pub s0_tuser_dst: Signal<In, Bits<16>>,
    /// Input 0 ready.
    pub s0_tready: Signal<Out, Bit>,
    /// Input 1 data.
    pub s1_tdata: Signal<In, Bits<512>>,
    /// Input 1 byte enables.
    pub s1_tkeep: Signal<In, Bits<64>>,
    /// Input 1 last beat.
    pub s1_tlast: Signal<In, Bit>,
    /// Input 1 valid.
    pub s1_tvalid: Signal<In, Bit>,
    /// Input 1 packet bytes.
    pub s1_tuser_size: Signal<In, Bits<16>>,
    /// Input 1 source tag.
    pub s1_tuser_src: Signal<In, Bits<16>>,
    /// Input 1 destination tag.
    pub s1_tuser_dst: Signal<In, Bits<16>>,
    /// Input 1 ready.
    pub s1_tready: Signal<Out, Bit>,
    /// Input 2 data.
    pub s2_tdata: Signal<In, Bits<512>>,
    /// Input 2 byte enables.
    pub s2_tkeep: Signal<In, Bits<64>>,
    /// Input 2 last beat.
    pub s2_tlast: Signal<In, Bit>,
    /// Input 2 valid.
    pub s2_tvalid: Signal<In, Bit>,
    /// Input 2 packet bytes.
    pub s2_tuser_size: Signal<In, Bits<16>>,
    /// Input 2 source tag.
    pub s2_tuser_src: Signal<In, Bits<16>>,
    /// Input 2 destination tag.
    pub s2_tuser_dst: Signal<In, Bits<16>>,
    /// Input 2 ready.
    pub s2_tready: Signal<Out, Bit>,
    /// Input 3 data.
    pub s3_tdata: Signal<In, Bits<512>>,
    /// Input 3 byte enables.
    pub s3_tkeep: Signal<In, Bits<64>>,
    /// Input 3 last beat.
    pub s3_tlast: Signal<In, Bit>,
    /// Input 3 valid.
    pub s3_tvalid: Signal<In, Bit>,
    /// Input 3 packet bytes.
    pub s3_tuser_size: Signal<In, Bits<16>>,
    /// Input 3 source tag.
    pub s3_tuser_src: Signal<In, Bits<16>>,
    /// Input 3 destination tag.
    pub s3_tuser_dst: Signal<In, Bits<16>>,
    /// Input 3 ready.
    pub s3_tready: Signal<Out, Bit>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output packet bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// Output source tag.
    pub m_tuser_src: Signal<Out, Bits<16>>,
    /// Output destination tag.
    pub m_tuser_dst: Signal<Out, Bits<16>>,
    /// Output ready.
    pub m_tready: Signal<In, Bit>,
    busy: DFF<Bit>,
    sel: DFF<Bits<2>>,
    rr: DFF<Bits<2>>,
    v: [Signal<Local, Bit>; 4],
    dist: [Signal<Local, Bits<2>>; 4],
    p_any: [Signal<Local, Bit>; 5],
    p_k: [Signal<Local, Bits<2>>; 5],
    p_d: [Signal<Local, Bits<2>>; 5],
    k: Signal<Local, Bits<2>>,
    any: Signal<Local, Bit>,
    idx: [Constant<Bits<2>>; 4],
    one2: Constant<Bits<2>>,
    zero2: Constant<Bits<2>>,
    zero16: Constant<Bits<16>>,
    zero64: Constant<Bits<64>>,
    zero512: Constant<Bits<512>>,
}

impl Default for PktMux4 {
    fn default() -> Self {
        Self::new()
    }
}

impl PktMux4 {
    /// Idle; input 1 first.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            s0_tdata: Default::default(),
            s0_tkeep: Default::default(),
            s0_tlast: Default::default(),
            s0_tvalid: Default::default(),
            s0_tuser_size: Default::default(),
            s0_tuser_src: Default::default(),
            s0_tuser_dst: Default::default(),
            s0_tready: Default::default(),
            s1_tdata: Default::default(),
            s1_tkeep: Default::default(),
            s1_tlast: Default::default(),
            s1_tvalid: Default::default(),
            s1_tuser_size: Default::default(),
            s1_tuser_src: Default::default(),
            s1_tuser_dst: Default::default(),
            s1_tready: Default::default(),
            s2_tdata: Default::default(),
            s2_tkeep: Default::default(),
            s2_tlast: Default::default(),
            s2_tvalid: Default::default(),
            s2_tuser_size: Default::default(),
            s2_tuser_src: Default::default(),
            s2_tuser_dst: Default::default(),
            s2_tready: Default::default(),
            s3_tdata: Default::default(),
            s3_tkeep: Default::default(),
            s3_tlast: Default::default(),
            s3_tvalid: Default::default(),
            s3_tuser_size: Default::default(),
            s3_tuser_src: Default::default(),
            s3_tuser_dst: Default::default(),
            s3_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tuser_size: Default::default(),
            m_tuser_src: Default::default(),
            m_tuser_dst: Default::default(),
            m_tready: Default::default(),
            busy: Default::default(),
            sel: Default::default(),
            rr: Default::default(),
            v: Default::default(),
            dist: Default::default(),
            p_any: Default::default(),
            p_k: Default::default(),
            p_d: Default::default(),
            k: Default::default(),
            any: Default::default(),
            idx: array_init::array_init(|c| konst(c as u64)),
            one2: konst(1),
            zero2: konst(0),
            zero16: konst(0),
            zero64: konst(0),
            zero512: konst(0),
        }
    }
}

impl Logic for PktMux4 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, sel, rr);
        self.v[0].next = self.s0_tvalid.val();
        self.v[1].next = self.s1_tvalid.val();
        self.v[2].next = self.s2_tvalid.val();
        self.v[3].next = self.s3_tvalid.val();
        // The first valid input after the last granted (itself last).
        self.p_any[0].next = false;
        self.p_k[0].next = self.zero2.val();
        self.p_d[0].next = self.zero2.val();
        for c in 0..4 {
            self.dist[c].next = self.idx[c].val() - self.rr.q.val() - self.one2.val();
            self.p_any[c + 1].next = self.p_any[c].val();
            self.p_k[c + 1].next = self.p_k[c].val();
            self.p_d[c + 1].next = self.p_d[c].val();
            if self.v[c].val() & (!self.p_any[c].val() | (self.dist[c].val() < self.p_d[c].val())) {
                self.p_any[c + 1].next = true;
                self.p_k[c + 1].next = self.idx[c].val();
                self.p_d[c + 1].next = self.dist[c].val();
            }
        }
        self.k.next = self.p_k[4].val();
        self.any.next = self.p_any[4].val();
        if self.busy.q.val() {
            self.k.next = self.sel.q.val();
            self.any.next = true;
        }
        self.s0_tready.next = false;
        self.s1_tready.next = false;
        self.s2_tready.next = false;
        self.s3_tready.next = false;
        // The outputs in one if/else chain, each assigned once a cycle: a
        // default of zeros overwritten by the granted input costs a
        // simulator both the 512-bit clear and the copy on every busy cycle.
        if self.any.val() {
            if self.k.val() == self.idx[0].val() {
                self.m_tdata.next = self.s0_tdata.val();
                self.m_tkeep.next = self.s0_tkeep.val();
                self.m_tlast.next = self.s0_tlast.val();
                self.m_tvalid.next = self.s0_tvalid.val();
                self.m_tuser_size.next = self.s0_tuser_size.val();
                self.m_tuser_src.next = self.s0_tuser_src.val();
                self.m_tuser_dst.next = self.s0_tuser_dst.val();
                self.s0_tready.next = self.m_tready.val();
            } else if self.k.val() == self.idx[1].val() {
                self.m_tdata.next = self.s1_tdata.val();
                self.m_tkeep.next = self.s1_tkeep.val();
                self.m_tlast.next = self.s1_tlast.val();
                self.m_tvalid.next = self.s1_tvalid.val();
                self.m_tuser_size.next = self.s1_tuser_size.val();
                self.m_tuser_src.next = self.s1_tuser_src.val();
                self.m_tuser_dst.next = self.s1_tuser_dst.val();
                self.s1_tready.next = self.m_tready.val();
            } else if self.k.val() == self.idx[2].val() {
                self.m_tdata.next = self.s2_tdata.val();
                self.m_tkeep.next = self.s2_tkeep.val();
                self.m_tlast.next = self.s2_tlast.val();
                self.m_tvalid.next = self.s2_tvalid.val();
                self.m_tuser_size.next = self.s2_tuser_size.val();
                self.m_tuser_src.next = self.s2_tuser_src.val();
                self.m_tuser_dst.next = self.s2_tuser_dst.val();
                self.s2_tready.next = self.m_tready.val();
            } else {
                self.m_tdata.next = self.s3_tdata.val();
                self.m_tkeep.next = self.s3_tkeep.val();
                self.m_tlast.next = self.s3_tlast.val();
                self.m_tvalid.next = self.s3_tvalid.val();
                self.m_tuser_size.next = self.s3_tuser_size.val();
                self.m_tuser_src.next = self.s3_tuser_src.val();
                self.m_tuser_dst.next = self.s3_tuser_dst.val();
                self.s3_tready.next = self.m_tready.val();
            }
        } else {
            self.m_tdata.next = self.zero512.val();
            self.m_tkeep.next = self.zero64.val();
            self.m_tlast.next = false;
            self.m_tvalid.next = false;
            self.m_tuser_size.next = self.zero16.val();
            self.m_tuser_src.next = self.zero16.val();
            self.m_tuser_dst.next = self.zero16.val();
        }
        if self.m_tvalid.val() & self.m_tready.val() {
            self.rr.d.next = self.k.val();
            self.sel.d.next = self.k.val();
            self.busy.d.next = !self.m_tlast.val();
        }
    }
}

/// Two packet streams merged into one, a whole packet at a time, with an
/// `M`-bit sideband (`tmeta`) that travels with each packet: when idle the
/// valid input that was not granted last goes first (input 1 first out of
/// reset, as in [`PktMux4`]) and is connected straight through until its `tlast` beat is
/// taken. Purely combinational from inputs to outputs, so it adds no cycle.
#[derive(LogicBlock)]
pub struct PktMux2<const M: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Input 0 data.
    pub s0_tdata: Signal<In, Bits<512>>,
    /// Input 0 byte enables.
    pub s0_tkeep: Signal<In, Bits<64>>,
    /// Input 0 last beat.
    pub s0_tlast: Signal<In, Bit>,
    /// Input 0 valid.
    pub s0_tvalid: Signal<In, Bit>,
    /// Input 0 packet bytes.
    pub s0_tuser_size: Signal<In, Bits<16>>,
    /// Input 0 sideband.
    pub s0_tmeta: Signal<In, Bits<M>>,
    /// Input 0 ready.
    pub s0_tready: Signal<Out, Bit>,
    /// Input 1 data.
    pub s1_tdata: Signal<In, Bits<512>>,
    /// Input 1 byte enables.
    pub s1_tkeep: Signal<In, Bits<64>>,
    /// Input 1 last beat.
    pub s1_tlast: Signal<In, Bit>,
    /// Input 1 valid.
    pub s1_tvalid: Signal<In, Bit>,
    /// Input 1 packet bytes.
    pub s1_tuser_size: Signal<In, Bits<16>>,
    /// Input 1 sideband.
    pub s1_tmeta: Signal<In, Bits<M>>,
    /// Input 1 ready.
    pub s1_tready: Signal<Out, Bit>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output packet bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// Output sideband.
    pub m_tmeta: Signal<Out, Bits<M>>,
    /// Output ready.
    pub m_tready: Signal<In, Bit>,
    busy: DFF<Bit>,
    sel: DFF<Bit>,
    last: DFF<Bit>,
    k: Signal<Local, Bit>,
    any: Signal<Local, Bit>,
}

impl<const M: usize> Default for PktMux2<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const M: usize> PktMux2<M> {
    /// Idle; input 1 first.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            s0_tdata: Default::default(),
            s0_tkeep: Default::default(),
            s0_tlast: Default::default(),
            s0_tvalid: Default::default(),
            s0_tuser_size: Default::default(),
            s0_tmeta: Default::default(),
            s0_tready: Default::default(),
            s1_tdata: Default::default(),
            s1_tkeep: Default::default(),
            s1_tlast: Default::default(),
            s1_tvalid: Default::default(),
            s1_tuser_size: Default::default(),
            s1_tmeta: Default::default(),
            s1_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tuser_size: Default::default(),
            m_tmeta: Default::default(),
            m_tready: Default::default(),
            busy: Default::default(),
            sel: Default::default(),
            last: Default::default(),
            k: Default::default(),
            any: Default::default(),
        }
    }
}

impl<const M: usize> Logic for PktMux2<M> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, busy, sel, last);
        // Idle: input 1 when it alone is valid, or both are and 0 went last
        // (`last` is the input granted last).
        self.k.next = self.s1_tvalid.val() & (!self.s0_tvalid.val() | !self.last.q.val());
        self.any.next = self.s0_tvalid.val() | self.s1_tvalid.val();
        if self.busy.q.val() {
            self.k.next = self.sel.q.val();
            self.any.next = true;
        }
        // One if/else, each output assigned once a cycle (a default
        // overwritten costs a simulator two 512-bit copies).
        if self.k.val() {
            self.m_tdata.next = self.s1_tdata.val();
            self.m_tkeep.next = self.s1_tkeep.val();
            self.m_tlast.next = self.s1_tlast.val();
            self.m_tvalid.next = self.s1_tvalid.val();
            self.m_tuser_size.next = self.s1_tuser_size.val();
            self.m_tmeta.next = self.s1_tmeta.val();
            self.s0_tready.next = false;
            self.s1_tready.next = self.m_tready.val();
        } else {
            self.m_tdata.next = self.s0_tdata.val();
            self.m_tkeep.next = self.s0_tkeep.val();
            self.m_tlast.next = self.s0_tlast.val();
            self.m_tvalid.next = self.s0_tvalid.val();
            self.m_tuser_size.next = self.s0_tuser_size.val();
            self.m_tmeta.next = self.s0_tmeta.val();
            self.s0_tready.next = self.m_tready.val() & self.any.val();
            self.s1_tready.next = false;
        }
        if self.m_tvalid.val() & self.m_tready.val() {
            self.busy.d.next = !self.m_tlast.val();
            self.sel.d.next = self.k.val();
            self.last.d.next = self.k.val();
        }
    }
}

/// An AXI4-Stream register slice (a two-entry skid buffer, as AMD's
/// `axis_register_slice` in its full mode): every output, `s_tready`
/// included, comes from a register, so nothing combinational passes
/// through it in either direction, at one beat a cycle and one cycle of
/// latency. The top has one on each of its four stream ports: a port's
/// signals then reach no logic but the slice's registers, which a
/// simulator that settles the logic an input reaches before the clock
/// edge (Verilator's input region) and again after it no longer runs
/// twice a cycle. Inside the card, slices register the seams between
/// blocks (timing: no valid/ready chain crosses a block boundary in one
/// cycle, `docs/timing.md`), carrying a block's sideband in `tmeta`
/// (a deframed packet's destination and return address); at the ports
/// `tmeta` is 0 and synthesis drops its registers. Its specification is
/// `weft_model::steer::SliceModel`.
#[derive(LogicBlock, Default)]
pub struct Slice {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Input data.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Input byte enables.
    pub s_tkeep: Signal<In, Bits<64>>,
    /// Input last beat.
    pub s_tlast: Signal<In, Bit>,
    /// Input valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Input packet bytes.
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// Input source tag.
    pub s_tuser_src: Signal<In, Bits<16>>,
    /// Input destination tag.
    pub s_tuser_dst: Signal<In, Bits<16>>,
    /// Input sideband (inside the card: a packet's destination and return
    /// address).
    pub s_tmeta: Signal<In, Bits<SLICE_META>>,
    /// Input ready: the skid entry is free.
    pub s_tready: Signal<Out, Bit>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output packet bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// Output source tag.
    pub m_tuser_src: Signal<Out, Bits<16>>,
    /// Output destination tag.
    pub m_tuser_dst: Signal<Out, Bits<16>>,
    /// Output sideband.
    pub m_tmeta: Signal<Out, Bits<SLICE_META>>,
    /// Output ready.
    pub m_tready: Signal<In, Bit>,
    // The output entry (valid, fields) and the skid entry, which holds a
    // beat taken while the output stalled.
    v0: DFF<Bit>,
    d0: DFF<Bits<512>>,
    k0: DFF<Bits<64>>,
    l0: DFF<Bit>,
    z0: DFF<Bits<16>>,
    c0: DFF<Bits<16>>,
    t0: DFF<Bits<16>>,
    x0: DFF<Bits<SLICE_META>>,
    v1: DFF<Bit>,
    d1: DFF<Bits<512>>,
    k1: DFF<Bits<64>>,
    l1: DFF<Bit>,
    z1: DFF<Bits<16>>,
    c1: DFF<Bits<16>>,
    t1: DFF<Bits<16>>,
    x1: DFF<Bits<SLICE_META>>,
}

impl Logic for Slice {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, v0, d0, k0, l0, z0, c0, t0, x0, v1, d1, k1, l1, z1, c1, t1, x1);
        self.m_tdata.next = self.d0.q.val();
        self.m_tkeep.next = self.k0.q.val();
        self.m_tlast.next = self.l0.q.val();
        self.m_tvalid.next = self.v0.q.val();
        self.m_tuser_size.next = self.z0.q.val();
        self.m_tuser_src.next = self.c0.q.val();
        self.m_tuser_dst.next = self.t0.q.val();
        self.m_tmeta.next = self.x0.q.val();
        self.s_tready.next = !self.v1.q.val();
        if self.m_tready.val() | !self.v0.q.val() {
            // The output entry moves on (or was empty): refill it from the
            // skid entry, else from the input.
            if self.v1.q.val() {
                self.d0.d.next = self.d1.q.val();
                self.k0.d.next = self.k1.q.val();
                self.l0.d.next = self.l1.q.val();
                self.z0.d.next = self.z1.q.val();
                self.c0.d.next = self.c1.q.val();
                self.t0.d.next = self.t1.q.val();
                self.x0.d.next = self.x1.q.val();
                self.v1.d.next = false;
            } else {
                self.v0.d.next = self.s_tvalid.val();
                if self.s_tvalid.val() {
                    self.d0.d.next = self.s_tdata.val();
                    self.k0.d.next = self.s_tkeep.val();
                    self.l0.d.next = self.s_tlast.val();
                    self.z0.d.next = self.s_tuser_size.val();
                    self.c0.d.next = self.s_tuser_src.val();
                    self.t0.d.next = self.s_tuser_dst.val();
                    self.x0.d.next = self.s_tmeta.val();
                }
            }
        } else if self.s_tvalid.val() & !self.v1.q.val() {
            // The output stalls with a beat: the input's beat waits.
            self.d1.d.next = self.s_tdata.val();
            self.k1.d.next = self.s_tkeep.val();
            self.l1.d.next = self.s_tlast.val();
            self.z1.d.next = self.s_tuser_size.val();
            self.c1.d.next = self.s_tuser_src.val();
            self.t1.d.next = self.s_tuser_dst.val();
            self.x1.d.next = self.s_tmeta.val();
            self.v1.d.next = true;
        }
    }
}
