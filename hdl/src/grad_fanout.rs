//! Gradient fan-out: between `grad_agg`'s output and the framer, decides per
//! packet how many copies go where. A RESULT goes once to every valid entry
//! of its job's worker table (a 16 x 32 RAM the register block writes), in
//! worker order, except, for a NACK, the workers its bitmap has; EVICT and
//! FALLBACK go once to the host fallback address.
//! The first copy is cut through as the packet arrives, later copies replay
//! the packet from a buffer of its `BEATS` beats.
//!
//! The cycle-by-cycle specification is `weft_model::grad_fanout`; the
//! witness test is `sim/tests/grad_fanout.rs`.

use crate::common::{konst, Cat, Widen};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;

/// Entries of the worker table: 16 jobs x 32 workers.
pub const TABLE_ENTRIES: u64 = 1 << 9;

/// The fan-out block; `BEATS` beats per packet (5 on the card: a header
/// beat and four value beats).
#[derive(LogicBlock)]
pub struct GradFanout<const BEATS: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Packet beats from the engine.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Packet kind: 1 RESULT, 2 EVICT, 3 FALLBACK (anything but RESULT goes
    /// to the fallback).
    pub s_tuser: Signal<In, Bits<2>>,
    /// Last beat (not used: every packet is `BEATS` beats).
    pub s_tlast: Signal<In, Bit>,
    /// Valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Ready.
    pub s_tready: Signal<Out, Bit>,
    /// Fallback MAC (first wire byte in bits 47:40).
    pub fb_mac: Signal<In, Bits<48>>,
    /// Fallback IPv4 address (first byte in bits 31:24).
    pub fb_ip: Signal<In, Bits<32>>,
    /// Fallback UDP port.
    pub fb_port: Signal<In, Bits<16>>,
    /// Write `wt_data` to the worker table at `wt_addr`.
    pub wt_we: Signal<In, Bit>,
    /// Worker table entry: job (3:0) << 5 | worker (4:0).
    pub wt_addr: Signal<In, Bits<9>>,
    /// Entry: MAC 47:0, IP 79:48, UDP port 95:80, HOST 96, VALID 97.
    pub wt_data: Signal<In, Bits<98>>,
    /// A copy's metadata, held from its first cycle until `h_ready`.
    pub h_valid: Signal<Out, Bit>,
    /// The framer is done with the copy (with its last output beat).
    pub h_ready: Signal<In, Bit>,
    /// Destination MAC.
    pub h_dmac: Signal<Out, Bits<48>>,
    /// Destination IPv4 address.
    pub h_dip: Signal<Out, Bits<32>>,
    /// Destination UDP port.
    pub h_dport: Signal<Out, Bits<16>>,
    /// The copy goes to the host port (0: the wire).
    pub h_host: Signal<Out, Bit>,
    /// `tuser_src` of the frame: `SRC_GRAD | kind << 8`.
    pub h_tag: Signal<Out, Bits<16>>,
    /// The copy's body beats (the packet's beats, unchanged).
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Body beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Body beat ready.
    pub m_tready: Signal<In, Bit>,
    /// Pulse: a RESULT copy was completed (the cycle after its `h_ready`).
    pub ev_copy: Signal<Out, Bit>,
    /// Pulse: a RESULT copy was not sent, its worker's entry not VALID (the
    /// cycle after the entry was decided).
    pub ev_skip: Signal<Out, Bit>,
    wtab: RAM<Bits<98>, 9>,
    ra: Cat<9, 4, 5>,
    w_tag: Widen<16, 2>,
    // A packet is in (its header taken).
    act: DFF<Bit>,
    // RESULT: read_data holds worker `wk`'s entry, to decide on this cycle.
    look: DFF<Bit>,
    // A copy is under way; its metadata is in `meta_*`.
    hv: DFF<Bit>,
    // No more copies of this packet: taking its remaining beats.
    fin: DFF<Bit>,
    res: DFF<Bit>,
    kind: DFF<Bits<2>>,
    job: DFF<Bits<4>>,
    wn: DFF<Bits<6>>,
    wk: DFF<Bits<6>>,
    // A NACK's bitmap still to come, worker `wk` in bit 0 (0 otherwise).
    mask: DFF<Bits<32>>,
    rx: DFF<Bits<4>>,
    tx: DFF<Bits<4>>,
    meta_mac: DFF<Bits<48>>,
    meta_ip: DFF<Bits<32>>,
    meta_port: DFF<Bits<16>>,
    meta_host: DFF<Bit>,
    pkt: [DFF<Bits<512>>; BEATS],
    evc: DFF<Bit>,
    evs: DFF<Bit>,
    ent: Signal<Local, Bits<98>>,
    ent_ok: Signal<Local, Bit>,
    cp: Signal<Local, Bit>,
    is_res: Signal<Local, Bit>,
    hdr_mask: Signal<Local, Bits<32>>,
    masked: Signal<Local, Bit>,
    w_hdr: Signal<Local, Bits<8>>,
    wn_hdr: Signal<Local, Bits<6>>,
    wk1: Signal<Local, Bits<6>>,
    rx1: Signal<Local, Bits<4>>,
    rx_n: Signal<Local, Bits<4>>,
    tx_n: Signal<Local, Bits<4>>,
    in_fire: Signal<Local, Bit>,
    m_fire: Signal<Local, Bit>,
    done: Signal<Local, Bit>,
    over: Signal<Local, Bit>,
    k_beats: Constant<Bits<4>>,
    k_res: Constant<Bits<2>>,
    k_tag: Constant<Bits<16>>,
    max8: Constant<Bits<8>>,
    max6: Constant<Bits<6>>,
    one4: Constant<Bits<4>>,
    one6: Constant<Bits<6>>,
    zero4: Constant<Bits<4>>,
    zero5: Constant<Bits<5>>,
    zero6: Constant<Bits<6>>,
    zero32: Constant<Bits<32>>,
}

impl<const BEATS: usize> Default for GradFanout<BEATS> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BEATS: usize> GradFanout<BEATS> {
    /// Idle, the worker table all invalid.
    ///
    /// # Panics
    /// At elaboration, when `BEATS` is not 2..=8 (a copy must outlast its
    /// first cycle, and the beat counters are 4 bits).
    pub fn new() -> Self {
        assert!(
            (2..=8).contains(&BEATS),
            "grad_fanout: 2 to 8 beats per packet"
        );
        let invalid = (0..TABLE_ENTRIES)
            .map(|a| (Bits::from(a), Bits::<98>::from(0u64)))
            .collect::<BTreeMap<_, _>>();
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tuser: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tready: Default::default(),
            fb_mac: Default::default(),
            fb_ip: Default::default(),
            fb_port: Default::default(),
            wt_we: Default::default(),
            wt_addr: Default::default(),
            wt_data: Default::default(),
            h_valid: Default::default(),
            h_ready: Default::default(),
            h_dmac: Default::default(),
            h_dip: Default::default(),
            h_dport: Default::default(),
            h_host: Default::default(),
            h_tag: Default::default(),
            m_tdata: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            ev_copy: Default::default(),
            ev_skip: Default::default(),
            wtab: RAM::new(invalid),
            ra: Default::default(),
            w_tag: Default::default(),
            act: Default::default(),
            look: Default::default(),
            hv: Default::default(),
            fin: Default::default(),
            res: Default::default(),
            kind: Default::default(),
            job: Default::default(),
            wn: Default::default(),
            wk: Default::default(),
            mask: Default::default(),
            rx: Default::default(),
            tx: Default::default(),
            meta_mac: Default::default(),
            meta_ip: Default::default(),
            meta_port: Default::default(),
            meta_host: Default::default(),
            pkt: array_init::array_init(|_| Default::default()),
            evc: Default::default(),
            evs: Default::default(),
            ent: Default::default(),
            ent_ok: Default::default(),
            cp: Default::default(),
            is_res: Default::default(),
            hdr_mask: Default::default(),
            masked: Default::default(),
            w_hdr: Default::default(),
            wn_hdr: Default::default(),
            wk1: Default::default(),
            rx1: Default::default(),
            rx_n: Default::default(),
            tx_n: Default::default(),
            in_fire: Default::default(),
            m_fire: Default::default(),
            done: Default::default(),
            over: Default::default(),
            k_beats: konst(BEATS as u64),
            k_res: konst(1),
            k_tag: konst(weft_regs::wire::SRC_GRAD as u64),
            max8: konst(32),
            max6: konst(32),
            one4: konst(1),
            one6: konst(1),
            zero4: konst(0),
            zero5: konst(0),
            zero6: konst(0),
            zero32: konst(0),
        }
    }

    /// The block, connected (ready to simulate or emit).
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}

impl<const BEATS: usize> Logic for GradFanout<BEATS> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, act, look, hv, fin, res, kind, job, wn, wk, mask, rx, tx, meta_mac,
            meta_ip, meta_port, meta_host, evc, evs
        );
        for i in 0..BEATS {
            self.pkt[i].clock.next = self.clock.val();
            self.pkt[i].d.next = self.pkt[i].q.val();
        }
        self.wtab.read_clock.next = self.clock.val();
        self.wtab.write_clock.next = self.clock.val();
        self.wtab.write_enable.next = self.wt_we.val();
        self.wtab.write_address.next = self.wt_addr.val();
        self.wtab.write_data.next = self.wt_data.val();
        self.ent.next = self.wtab.read_data.val();
        self.ent_ok.next = self.ent.val().get_bit(97);
        self.wk1.next = self.wk.q.val() + self.one6.val();
        self.rx1.next = self.rx.q.val() + self.one4.val();
        self.is_res.next = self.s_tuser.val() == self.k_res.val();
        // A RESULT with the NACK flag (header bit 12) skips the workers its
        // bitmap (bits 127:96) has: their contributions are in.
        self.hdr_mask.next = self.zero32.val();
        if self.is_res.val() & self.s_tdata.val().get_bit(12) {
            self.hdr_mask.next = self.s_tdata.val().get_bits::<32>(96);
        }
        self.masked.next = self.mask.q.val().get_bit(0);
        // Copies of a RESULT: header byte 7, at most 32.
        self.w_hdr.next = self.s_tdata.val().get_bits::<8>(56);
        self.wn_hdr.next = self.w_hdr.val().get_bits::<6>(0);
        if self.w_hdr.val() > self.max8.val() {
            self.wn_hdr.next = self.max6.val();
        }
        // While a packet is in, the table reads the next worker's entry every
        // cycle, so it is ready the cycle after the current worker is done.
        self.ra.hi.next = self.job.q.val();
        self.ra.lo.next = self.wk1.val().get_bits::<5>(0);
        self.wtab.read_address.next = self.ra.out.val();
        self.evc.d.next = false;
        self.evs.d.next = false;

        if !self.act.q.val() {
            // Between packets: a header is always taken; a RESULT's looks up
            // its worker 0, anything else starts its copy at once.
            self.ra.hi.next = self.s_tdata.val().get_bits::<4>(32);
            self.ra.lo.next = self.zero5.val();
            self.s_tready.next = true;
            self.in_fire.next = self.s_tvalid.val();
            self.cp.next = self.s_tvalid.val() & !self.is_res.val();
            self.h_dmac.next = self.fb_mac.val();
            self.h_dip.next = self.fb_ip.val();
            self.h_dport.next = self.fb_port.val();
            self.h_host.next = true;
            self.w_tag.narrow.next = self.s_tuser.val();
        } else {
            self.s_tready.next = self.rx.q.val() < self.k_beats.val();
            self.in_fire.next = self.s_tvalid.val() & self.s_tready.val();
            self.cp.next =
                self.hv.q.val() | (self.look.q.val() & self.ent_ok.val() & !self.masked.val());
            self.h_dmac.next = self.meta_mac.q.val();
            self.h_dip.next = self.meta_ip.q.val();
            self.h_dport.next = self.meta_port.q.val();
            self.h_host.next = self.meta_host.q.val();
            if self.look.q.val() {
                self.h_dmac.next = self.ent.val().get_bits::<48>(0);
                self.h_dip.next = self.ent.val().get_bits::<32>(48);
                self.h_dport.next = self.ent.val().get_bits::<16>(80);
                self.h_host.next = self.ent.val().get_bit(96);
            }
            self.w_tag.narrow.next = self.kind.q.val();
        }
        self.h_valid.next = self.cp.val();
        self.h_tag.next = (self.w_tag.wide.val() << 8) | self.k_tag.val();

        // Body: beats already in the buffer replay from it, the next one
        // passes straight from the input (and is stored as it passes).
        self.m_tdata.next = self.s_tdata.val();
        for i in 0..BEATS {
            if (self.tx.q.val().index() == i) & (self.tx.q.val() < self.rx.q.val()) {
                self.m_tdata.next = self.pkt[i].q.val();
            }
        }
        self.m_tvalid.next = self.cp.val()
            & ((self.tx.q.val() < self.rx.q.val()) | (self.s_tready.val() & self.s_tvalid.val()));
        self.m_fire.next = self.m_tvalid.val() & self.m_tready.val();
        self.tx_n.next = self.tx.q.val();
        if self.m_fire.val() {
            self.tx_n.next = self.tx.q.val() + self.one4.val();
        }
        // The framer's h_ready ends a copy once all its body beats are taken.
        self.done.next =
            self.cp.val() & self.h_ready.val() & (self.tx_n.val() == self.k_beats.val());
        self.rx_n.next = self.rx.q.val();
        if self.in_fire.val() {
            self.rx_n.next = self.rx1.val();
        }
        for i in 0..BEATS {
            if self.in_fire.val() & (self.rx.q.val().index() == i) {
                self.pkt[i].d.next = self.s_tdata.val();
            }
        }
        self.rx.d.next = self.rx_n.val();
        self.tx.d.next = self.tx_n.val();
        if self.done.val() {
            self.tx.d.next = self.zero4.val();
        }

        self.over.next = false;
        if !self.act.q.val() {
            if self.in_fire.val() {
                self.act.d.next = true;
                self.kind.d.next = self.s_tuser.val();
                self.res.d.next = self.is_res.val();
                self.job.d.next = self.s_tdata.val().get_bits::<4>(32);
                self.wn.d.next = self.wn_hdr.val();
                self.wk.d.next = self.zero6.val();
                self.mask.d.next = self.hdr_mask.val();
                self.meta_mac.d.next = self.fb_mac.val();
                self.meta_ip.d.next = self.fb_ip.val();
                self.meta_port.d.next = self.fb_port.val();
                self.meta_host.d.next = true;
                self.hv.d.next = !self.is_res.val();
                self.look.d.next = self.is_res.val() & (self.wn_hdr.val() != self.zero6.val());
                self.over.next = self.is_res.val() & (self.wn_hdr.val() == self.zero6.val());
            }
        } else {
            if self.look.q.val() {
                if self.ent_ok.val() & !self.masked.val() {
                    self.meta_mac.d.next = self.ent.val().get_bits::<48>(0);
                    self.meta_ip.d.next = self.ent.val().get_bits::<32>(48);
                    self.meta_port.d.next = self.ent.val().get_bits::<16>(80);
                    self.meta_host.d.next = self.ent.val().get_bit(96);
                    self.hv.d.next = true;
                    self.look.d.next = false;
                } else {
                    self.evs.d.next = !self.ent_ok.val();
                    self.wk.d.next = self.wk1.val();
                    self.mask.d.next = self.mask.q.val() >> 1;
                    if self.wk1.val() == self.wn.q.val() {
                        self.over.next = true;
                    }
                }
            }
            if self.done.val() {
                self.hv.d.next = false;
                self.evc.d.next = self.res.q.val();
                if self.res.q.val() & (self.wk1.val() != self.wn.q.val()) {
                    self.look.d.next = true;
                    self.wk.d.next = self.wk1.val();
                    self.mask.d.next = self.mask.q.val() >> 1;
                } else {
                    self.over.next = true;
                }
            }
            if self.fin.q.val() {
                self.over.next = true;
            }
        }
        if self.over.val() {
            self.fin.d.next = true;
            self.look.d.next = false;
            self.hv.d.next = false;
            if self.rx_n.val() == self.k_beats.val() {
                self.act.d.next = false;
                self.fin.d.next = false;
                self.rx.d.next = self.zero4.val();
                self.tx.d.next = self.zero4.val();
            }
        }
        self.ev_copy.next = self.evc.q.val();
        self.ev_skip.next = self.evs.q.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_geometry_emits_verilog() {
        let v = generate_verilog(&GradFanout::<5>::connected());
        assert!(v.contains("module top"));
    }
}
