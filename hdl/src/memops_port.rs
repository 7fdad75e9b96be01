//! The MemOps port of the card: turns MemOps request frames (their UDP
//! payloads, docs/wire.md "MemOps request") into transactions for the
//! `memops` block, connects the requests it issues to the AVM pool's four
//! consumers and the pool's responses back, and hands each completion to a
//! framer as the 16-byte payload of a reply to the request's return
//! address (docs/wire.md "MemOps completion"). Its cycle-accurate
//! specification is `weft_model::memops_port::MemopsPortModel`.
//!
//! Ports, by the block they face:
//! - `s_*`: MemOps frames' UDP payloads (at least 24 bytes; the first beat
//!   is the request, the rest is taken and dropped), with `s_tret` the
//!   request's return address (`weft_model::wire::Ret::words`).
//! - `mo_req_*` (requests into `memops`' `req_*`), `mo_out_*` (requests
//!   `memops` issues, its `out_*`; `mo_out_ready` per destination),
//!   `mo_cin_*` (completions into its `cin_*`), `mo_cout_*` (its
//!   completions, `cout_*`), `mo_mir_ready` (always 1: mirrored headers are
//!   taken and dropped; `memops` counts them).
//! - `pool_req_*` and `pool_resp_*`: the AVM pool's (`avm::Avm`) `req_*`
//!   and `resp_*`.
//! - `h_*`: the reply's metadata for a framer.
//!
//! One transaction at a time, end to end: a request frame's first beat is
//! taken only when no transaction is open, and the transaction stays open
//! until its completion has been taken (`h_valid && h_ready`). Memops'
//! destinations are the pool's consumers: 32-bit word accesses, the
//! consumer's virtual word = address bits 10:2, the write data the low data
//! word. An issued request waits for its consumer's `pool_req_ready`; the
//! pool has no atomics, so an atomic completes at once as ERROR; a pool
//! fault completes as DENIED; only one request is ever at the pool, so its
//! response is that request's (the pool's responses cannot wait).

use crate::common::{konst, Cat, Widen};
use rust_hdl::prelude::*;

/// The MemOps port.
#[derive(LogicBlock)]
pub struct MemopsPort {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Payload beat of a MemOps frame.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Last beat of the frame.
    pub s_tlast: Signal<In, Bit>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Beat taken.
    pub s_tready: Signal<Out, Bit>,
    /// Payload bytes (at least 24, guaranteed upstream; not needed here).
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// Return address: MAC 47:0, IP 79:48, UDP port 95:80, bit 96 the host
    /// port.
    pub s_tret: Signal<In, Bits<97>>,
    /// Request to `memops` valid.
    pub mo_req_valid: Signal<Out, Bit>,
    /// `memops` takes the request.
    pub mo_req_ready: Signal<In, Bit>,
    /// Requester port (payload byte 0).
    pub mo_req_src: Signal<Out, Bits<2>>,
    /// Opcode (byte 1).
    pub mo_req_op: Signal<Out, Bits<2>>,
    /// Address bits 31:0 (bytes 8..12).
    pub mo_req_al: Signal<Out, Bits<32>>,
    /// Address bits 63:32 (bytes 12..16).
    pub mo_req_ah: Signal<Out, Bits<32>>,
    /// Length (byte 2).
    pub mo_req_len: Signal<Out, Bits<4>>,
    /// Requester's tag (byte 3).
    pub mo_req_tag: Signal<Out, Bits<8>>,
    /// Data bits 31:0 (bytes 16..20).
    pub mo_req_dl: Signal<Out, Bits<32>>,
    /// Data bits 63:32 (bytes 20..24).
    pub mo_req_dh: Signal<Out, Bits<32>>,
    /// `memops` issues a request.
    pub mo_out_valid: Signal<In, Bit>,
    /// Per destination: the issued request is taken.
    pub mo_out_ready: Signal<Out, Bits<4>>,
    /// Its destination (the pool's consumer).
    pub mo_out_dst: Signal<In, Bits<2>>,
    /// Its opcode.
    pub mo_out_op: Signal<In, Bits<2>>,
    /// Its address bits 31:0 (bits 10:2 are the consumer's virtual word).
    pub mo_out_al: Signal<In, Bits<32>>,
    /// Its switch tag.
    pub mo_out_stag: Signal<In, Bits<4>>,
    /// Its data bits 31:0.
    pub mo_out_dl: Signal<In, Bits<32>>,
    /// Completion into `memops` valid.
    pub mo_cin_valid: Signal<Out, Bit>,
    /// `memops` takes the completion.
    pub mo_cin_ready: Signal<In, Bit>,
    /// Its switch tag.
    pub mo_cin_stag: Signal<Out, Bits<4>>,
    /// Its status (0 ok, 1 denied, 2 error).
    pub mo_cin_status: Signal<Out, Bits<2>>,
    /// Its data bits 31:0.
    pub mo_cin_dl: Signal<Out, Bits<32>>,
    /// Its data bits 63:32 (always 0: the pool's words are 32 bits).
    pub mo_cin_dh: Signal<Out, Bits<32>>,
    /// `memops` completes a transaction.
    pub mo_cout_valid: Signal<In, Bit>,
    /// The completion is taken.
    pub mo_cout_ready: Signal<Out, Bit>,
    /// Its requester port.
    pub mo_cout_dst: Signal<In, Bits<2>>,
    /// Its requester's tag.
    pub mo_cout_tag: Signal<In, Bits<8>>,
    /// Its status.
    pub mo_cout_status: Signal<In, Bits<2>>,
    /// Its data bits 31:0.
    pub mo_cout_dl: Signal<In, Bits<32>>,
    /// Its data bits 63:32.
    pub mo_cout_dh: Signal<In, Bits<32>>,
    /// Mirrored headers are taken (always).
    pub mo_mir_ready: Signal<Out, Bit>,
    /// Per consumer: a request to the pool.
    pub pool_req_valid: Signal<Out, Bits<4>>,
    /// Per consumer: it writes.
    pub pool_req_write: Signal<Out, Bits<4>>,
    /// Per consumer `c`: the virtual word, bits `9c+8:9c`.
    pub pool_req_addr: Signal<Out, Bits<36>>,
    /// Per consumer `c`: the write data, bits `32c+31:32c`.
    pub pool_req_wdata: Signal<Out, Bits<128>>,
    /// Per consumer: the pool takes a request.
    pub pool_req_ready: Signal<In, Bits<4>>,
    /// The pool responds.
    pub pool_resp_valid: Signal<In, Bit>,
    /// The access was outside the consumer's pages.
    pub pool_resp_fault: Signal<In, Bit>,
    /// Read data.
    pub pool_resp_data: Signal<In, Bits<32>>,
    /// A completion for the framer.
    pub h_valid: Signal<Out, Bit>,
    /// The framer takes it.
    pub h_ready: Signal<In, Bit>,
    /// The reply's destination MAC (the request's source).
    pub h_dmac: Signal<Out, Bits<48>>,
    /// Its destination IP.
    pub h_dip: Signal<Out, Bits<32>>,
    /// Its destination UDP port.
    pub h_dport: Signal<Out, Bits<16>>,
    /// Send it on the host port (the request came from there).
    pub h_host: Signal<Out, Bit>,
    /// The completion payload: requester, tag, status, 5 zero bytes, 8
    /// data bytes (little-endian); byte `i` in bits `8i+7:8i`.
    pub h_app: Signal<Out, Bits<128>>,
    pkt: DFF<Bit>,
    txn: DFF<Bit>,
    ret: DFF<Bits<97>>,
    busy: DFF<Bit>,
    stag: DFF<Bits<4>>,
    hold_v: DFF<Bit>,
    hold_stag: DFF<Bits<4>>,
    hold_status: DFF<Bits<2>>,
    hold_dl: DFF<Bits<32>>,
    ready: Signal<Local, Bit>,
    dst_ready: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    atomic: Signal<Local, Bit>,
    onehot: Signal<Local, Bits<4>>,
    c_a18: Cat<18, 9, 9>,
    c_a36: Cat<36, 18, 18>,
    c_d64: Cat<64, 32, 32>,
    c_d128: Cat<128, 64, 64>,
    w_cdst: Widen<32, 2>,
    w_ctag: Widen<32, 8>,
    w_cst: Widen<32, 2>,
    c_lo64: Cat<64, 32, 32>,
    c_hi64: Cat<64, 32, 32>,
    c_app: Cat<128, 64, 64>,
    onehots: [Constant<Bits<4>>; 4],
    op_write: Constant<Bits<2>>,
    op_atomic: Constant<Bits<2>>,
    st_ok: Constant<Bits<2>>,
    st_denied: Constant<Bits<2>>,
    st_error: Constant<Bits<2>>,
    zero4: Constant<Bits<4>>,
    zero32: Constant<Bits<32>>,
}

impl Default for MemopsPort {
    fn default() -> Self {
        Self::new()
    }
}

impl MemopsPort {
    /// Idle: no transaction open.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tready: Default::default(),
            s_tuser_size: Default::default(),
            s_tret: Default::default(),
            mo_req_valid: Default::default(),
            mo_req_ready: Default::default(),
            mo_req_src: Default::default(),
            mo_req_op: Default::default(),
            mo_req_al: Default::default(),
            mo_req_ah: Default::default(),
            mo_req_len: Default::default(),
            mo_req_tag: Default::default(),
            mo_req_dl: Default::default(),
            mo_req_dh: Default::default(),
            mo_out_valid: Default::default(),
            mo_out_ready: Default::default(),
            mo_out_dst: Default::default(),
            mo_out_op: Default::default(),
            mo_out_al: Default::default(),
            mo_out_stag: Default::default(),
            mo_out_dl: Default::default(),
            mo_cin_valid: Default::default(),
            mo_cin_ready: Default::default(),
            mo_cin_stag: Default::default(),
            mo_cin_status: Default::default(),
            mo_cin_dl: Default::default(),
            mo_cin_dh: Default::default(),
            mo_cout_valid: Default::default(),
            mo_cout_ready: Default::default(),
            mo_cout_dst: Default::default(),
            mo_cout_tag: Default::default(),
            mo_cout_status: Default::default(),
            mo_cout_dl: Default::default(),
            mo_cout_dh: Default::default(),
            mo_mir_ready: Default::default(),
            pool_req_valid: Default::default(),
            pool_req_write: Default::default(),
            pool_req_addr: Default::default(),
            pool_req_wdata: Default::default(),
            pool_req_ready: Default::default(),
            pool_resp_valid: Default::default(),
            pool_resp_fault: Default::default(),
            pool_resp_data: Default::default(),
            h_valid: Default::default(),
            h_ready: Default::default(),
            h_dmac: Default::default(),
            h_dip: Default::default(),
            h_dport: Default::default(),
            h_host: Default::default(),
            h_app: Default::default(),
            pkt: Default::default(),
            txn: Default::default(),
            ret: Default::default(),
            busy: Default::default(),
            stag: Default::default(),
            hold_v: Default::default(),
            hold_stag: Default::default(),
            hold_status: Default::default(),
            hold_dl: Default::default(),
            ready: Default::default(),
            dst_ready: Default::default(),
            issue: Default::default(),
            atomic: Default::default(),
            onehot: Default::default(),
            c_a18: Default::default(),
            c_a36: Default::default(),
            c_d64: Default::default(),
            c_d128: Default::default(),
            w_cdst: Default::default(),
            w_ctag: Default::default(),
            w_cst: Default::default(),
            c_lo64: Default::default(),
            c_hi64: Default::default(),
            c_app: Default::default(),
            onehots: array_init::array_init(|k| konst(1 << k)),
            op_write: konst(1),
            op_atomic: konst(2),
            st_ok: konst(0),
            st_denied: konst(1),
            st_error: konst(2),
            zero4: konst(0),
            zero32: konst(0),
        }
    }

    /// A connected MemOps port, ready to simulate or emit.
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}

impl Logic for MemopsPort {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            pkt,
            txn,
            ret,
            busy,
            stag,
            hold_v,
            hold_stag,
            hold_status,
            hold_dl
        );
        // A frame's first beat is the request; the rest is dropped.
        self.mo_req_valid.next = self.s_tvalid.val() & !self.pkt.q.val() & !self.txn.q.val();
        self.mo_req_src.next = self.s_tdata.val().get_bits::<2>(0);
        self.mo_req_op.next = self.s_tdata.val().get_bits::<2>(8);
        self.mo_req_len.next = self.s_tdata.val().get_bits::<4>(16);
        self.mo_req_tag.next = self.s_tdata.val().get_bits::<8>(24);
        self.mo_req_al.next = self.s_tdata.val().get_bits::<32>(64);
        self.mo_req_ah.next = self.s_tdata.val().get_bits::<32>(96);
        self.mo_req_dl.next = self.s_tdata.val().get_bits::<32>(128);
        self.mo_req_dh.next = self.s_tdata.val().get_bits::<32>(160);
        self.s_tready.next = self.pkt.q.val() | (!self.txn.q.val() & self.mo_req_ready.val());
        if self.mo_cout_valid.val() & self.h_ready.val() {
            self.txn.d.next = false;
        }
        if self.s_tvalid.val() & self.s_tready.val() {
            self.pkt.d.next = !self.s_tlast.val();
            if !self.pkt.q.val() {
                self.txn.d.next = true;
                self.ret.d.next = self.s_tret.val();
            }
        }

        // Issue to the pool: one request there at a time.
        self.ready.next = !self.busy.q.val() & !self.hold_v.q.val();
        self.mo_out_ready.next = self.zero4.val();
        if self.ready.val() {
            self.mo_out_ready.next = self.pool_req_ready.val();
        }
        self.onehot.next = self.onehots[0].val();
        for k in 0..4 {
            if self.mo_out_dst.val().index() == k {
                self.onehot.next = self.onehots[k].val();
            }
        }
        self.dst_ready.next = (self.pool_req_ready.val() & self.onehot.val()) != self.zero4.val();
        self.issue.next = self.mo_out_valid.val() & self.ready.val() & self.dst_ready.val();
        self.atomic.next = self.mo_out_op.val() == self.op_atomic.val();
        self.pool_req_valid.next = self.zero4.val();
        if self.issue.val() & !self.atomic.val() {
            self.pool_req_valid.next = self.onehot.val();
        }
        self.pool_req_write.next = self.zero4.val();
        if self.mo_out_op.val() == self.op_write.val() {
            self.pool_req_write.next = self.onehot.val();
        }
        self.c_a18.hi.next = self.mo_out_al.val().get_bits::<9>(2);
        self.c_a18.lo.next = self.mo_out_al.val().get_bits::<9>(2);
        self.c_a36.hi.next = self.c_a18.out.val();
        self.c_a36.lo.next = self.c_a18.out.val();
        self.pool_req_addr.next = self.c_a36.out.val();
        self.c_d64.hi.next = self.mo_out_dl.val();
        self.c_d64.lo.next = self.mo_out_dl.val();
        self.c_d128.hi.next = self.c_d64.out.val();
        self.c_d128.lo.next = self.c_d64.out.val();
        self.pool_req_wdata.next = self.c_d128.out.val();
        if self.issue.val() {
            if self.atomic.val() {
                // The pool has no atomics: refused at once.
                self.hold_v.d.next = true;
                self.hold_stag.d.next = self.mo_out_stag.val();
                self.hold_status.d.next = self.st_error.val();
                self.hold_dl.d.next = self.zero32.val();
            } else {
                self.busy.d.next = true;
                self.stag.d.next = self.mo_out_stag.val();
            }
        }
        if self.pool_resp_valid.val() {
            self.busy.d.next = false;
            self.hold_v.d.next = true;
            self.hold_stag.d.next = self.stag.q.val();
            self.hold_status.d.next = self.st_ok.val();
            if self.pool_resp_fault.val() {
                self.hold_status.d.next = self.st_denied.val();
            }
            self.hold_dl.d.next = self.pool_resp_data.val();
        }
        self.mo_cin_valid.next = self.hold_v.q.val();
        self.mo_cin_stag.next = self.hold_stag.q.val();
        self.mo_cin_status.next = self.hold_status.q.val();
        self.mo_cin_dl.next = self.hold_dl.q.val();
        self.mo_cin_dh.next = self.zero32.val();
        if self.hold_v.q.val() & self.mo_cin_ready.val() {
            self.hold_v.d.next = false;
        }
        self.mo_mir_ready.next = true;

        // The completion, to the request's return address.
        self.w_cdst.narrow.next = self.mo_cout_dst.val();
        self.w_ctag.narrow.next = self.mo_cout_tag.val();
        self.w_cst.narrow.next = self.mo_cout_status.val();
        self.c_lo64.hi.next = self.zero32.val();
        self.c_lo64.lo.next =
            self.w_cdst.wide.val() | (self.w_ctag.wide.val() << 8) | (self.w_cst.wide.val() << 16);
        self.c_hi64.hi.next = self.mo_cout_dh.val();
        self.c_hi64.lo.next = self.mo_cout_dl.val();
        self.c_app.hi.next = self.c_hi64.out.val();
        self.c_app.lo.next = self.c_lo64.out.val();
        self.h_app.next = self.c_app.out.val();
        self.h_valid.next = self.mo_cout_valid.val();
        self.mo_cout_ready.next = self.h_ready.val();
        self.h_dmac.next = self.ret.q.val().get_bits::<48>(0);
        self.h_dip.next = self.ret.q.val().get_bits::<32>(48);
        self.h_dport.next = self.ret.q.val().get_bits::<16>(80);
        self.h_host.next = self.ret.q.val().get_bit(96);
    }
}
