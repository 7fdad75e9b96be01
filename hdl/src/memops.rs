//! The MemOps switch port, specified by `weft_model::memops` (read its
//! model first).
//!
//! One request header enters per cycle and walks a pipeline of `K` operator
//! stages, one register stage each, so every request leaves after exactly
//! `K + 1` cycles when nothing downstream stalls. Each stage holds its own
//! slice of the program image (match, action, remap operands) and its
//! counters. After the last stage the protection table (`PORTS * RANGES`
//! entries, each a range and its permissions) decides whether the request
//! may be issued to its destination; the table is checked on the address as
//! remapped, so no program can make the port write outside a permitted
//! range. Issued requests take a switch tag from a table of outstanding
//! requests (requester port and tag), and a destination's completion finds
//! its requester and tag there. Requests the port completes itself
//! (blocked, denied, errors) queue for the completion output behind
//! destination completions.
//!
//! The whole pipeline advances together (one enable): a stalled output
//! stalls the port — head-of-line blocking, reported by `weft memops run`.

use crate::common::{konst, word_of, Add64, Cmp64Le, Counter64, Fifo4, Fifo4Mem, Widen};
use rust_hdl::prelude::*;
use weft_regs::memops as regs;

/// Switch ports (2-bit port numbers).
pub const PORTS: usize = 4;
/// Protection ranges per destination.
pub const RANGES: usize = 4;
/// Protection entries.
pub const ENTRIES: usize = PORTS * RANGES;
/// Outstanding requests (switch tags).
pub const TAGS: usize = 16;
/// Global counters after the stage counters: issued, blocked, denied,
/// errors, mirrored, mirror drops.
pub const GLOBAL_COUNTERS: usize = 6;

/// One operator stage: its program words, its match and action, and the
/// transaction register it feeds the next stage.
#[derive(LogicBlock)]
pub struct MemopsStage {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Pipeline enable.
    pub en: Signal<In, Bit>,
    /// Transaction in: valid.
    pub i_v: Signal<In, Bit>,
    /// Source port.
    pub i_src: Signal<In, Bits<2>>,
    /// Opcode.
    pub i_op: Signal<In, Bits<2>>,
    /// Address bits 31:0.
    pub i_al: Signal<In, Bits<32>>,
    /// Address bits 63:32.
    pub i_ah: Signal<In, Bits<32>>,
    /// Length in bytes.
    pub i_len: Signal<In, Bits<4>>,
    /// Requester tag.
    pub i_tag: Signal<In, Bits<8>>,
    /// Data bits 31:0.
    pub i_dl: Signal<In, Bits<32>>,
    /// Data bits 63:32.
    pub i_dh: Signal<In, Bits<32>>,
    /// Destination so far.
    pub i_dst: Signal<In, Bits<2>>,
    /// A stage routed it.
    pub i_has_dst: Signal<In, Bit>,
    /// A stage blocked it.
    pub i_blocked: Signal<In, Bit>,
    /// A remap left its target range.
    pub i_error: Signal<In, Bit>,
    /// A stage mirrors it.
    pub i_mirror: Signal<In, Bit>,
    /// Malformed at the input.
    pub i_bad: Signal<In, Bit>,
    /// Transaction out (registered), same fields.
    pub o_v: Signal<Out, Bit>,
    /// Source port.
    pub o_src: Signal<Out, Bits<2>>,
    /// Opcode.
    pub o_op: Signal<Out, Bits<2>>,
    /// Address bits 31:0.
    pub o_al: Signal<Out, Bits<32>>,
    /// Address bits 63:32.
    pub o_ah: Signal<Out, Bits<32>>,
    /// Length.
    pub o_len: Signal<Out, Bits<4>>,
    /// Requester tag.
    pub o_tag: Signal<Out, Bits<8>>,
    /// Data bits 31:0.
    pub o_dl: Signal<Out, Bits<32>>,
    /// Data bits 63:32.
    pub o_dh: Signal<Out, Bits<32>>,
    /// Destination.
    pub o_dst: Signal<Out, Bits<2>>,
    /// Routed.
    pub o_has_dst: Signal<Out, Bit>,
    /// Blocked.
    pub o_blocked: Signal<Out, Bit>,
    /// Remap error.
    pub o_error: Signal<Out, Bit>,
    /// Mirror.
    pub o_mirror: Signal<Out, Bit>,
    /// Malformed.
    pub o_bad: Signal<Out, Bit>,
    /// Program write: this stage's word `pw_field` takes `pw_data`.
    pub pw_en: Signal<In, Bit>,
    /// Program word within the stage.
    pub pw_field: Signal<In, Bits<4>>,
    /// Program data.
    pub pw_data: Signal<In, Bits<32>>,
    /// Program read-back: a read of the image this cycle (`pr_data` is 0
    /// without it).
    pub pr_en: Signal<In, Bit>,
    /// Program read-back: word within the stage.
    pub pr_field: Signal<In, Bits<4>>,
    /// Program read-back data.
    pub pr_data: Signal<Out, Bits<32>>,
    /// Clear the counters.
    pub clear: Signal<In, Bit>,
    /// Latch the transaction counter's HI word.
    pub latch_tx: Signal<In, Bit>,
    /// Latch the byte counter's HI word.
    pub latch_bytes: Signal<In, Bit>,
    /// Transactions counted, LO.
    pub tx_lo: Signal<Out, Bits<32>>,
    /// Transactions counted, latched HI.
    pub tx_hi: Signal<Out, Bits<32>>,
    /// Bytes counted, LO.
    pub bytes_lo: Signal<Out, Bits<32>>,
    /// Bytes counted, latched HI.
    pub bytes_hi: Signal<Out, Bits<32>>,

    words: [DFF<Bits<32>>; 11],
    q_v: DFF<Bit>,
    q_src: DFF<Bits<2>>,
    q_op: DFF<Bits<2>>,
    q_al: DFF<Bits<32>>,
    q_ah: DFF<Bits<32>>,
    q_len: DFF<Bits<4>>,
    q_tag: DFF<Bits<8>>,
    q_dl: DFF<Bits<32>>,
    q_dh: DFF<Bits<32>>,
    q_dst: DFF<Bits<2>>,
    q_has_dst: DFF<Bit>,
    q_blocked: DFF<Bit>,
    q_error: DFF<Bit>,
    q_mirror: DFF<Bit>,
    q_bad: DFF<Bit>,
    m_ge: Cmp64Le,
    m_le: Cmp64Le,
    r_add: Add64,
    r_end: Add64,
    t_ge: Cmp64Le,
    t_le: Cmp64Le,
    tx: Counter64,
    bytes: Counter64,
    len32: Widen<32, 4>,
    lm1: Signal<Local, Bits<32>>,
    op_ok: Signal<Local, Bit>,
    src_mask: Signal<Local, Bits<4>>,
    live: Signal<Local, Bit>,
    remap: Signal<Local, Bit>,
    hit: Signal<Local, Bit>,
    action: Signal<Local, Bits<4>>,
    word_no: [Constant<Bits<4>>; 11],
    a_route: Constant<Bits<4>>,
    a_remap: Constant<Bits<4>>,
    a_count: Constant<Bits<4>>,
    a_mirror: Constant<Bits<4>>,
    a_reduce: Constant<Bits<4>>,
    a_block: Constant<Bits<4>>,
    op_read: Constant<Bits<2>>,
    op_write: Constant<Bits<2>>,
    op_atomic: Constant<Bits<2>>,
    zero32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
}

impl Default for MemopsStage {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            en: Default::default(),
            i_v: Default::default(),
            i_src: Default::default(),
            i_op: Default::default(),
            i_al: Default::default(),
            i_ah: Default::default(),
            i_len: Default::default(),
            i_tag: Default::default(),
            i_dl: Default::default(),
            i_dh: Default::default(),
            i_dst: Default::default(),
            i_has_dst: Default::default(),
            i_blocked: Default::default(),
            i_error: Default::default(),
            i_mirror: Default::default(),
            i_bad: Default::default(),
            o_v: Default::default(),
            o_src: Default::default(),
            o_op: Default::default(),
            o_al: Default::default(),
            o_ah: Default::default(),
            o_len: Default::default(),
            o_tag: Default::default(),
            o_dl: Default::default(),
            o_dh: Default::default(),
            o_dst: Default::default(),
            o_has_dst: Default::default(),
            o_blocked: Default::default(),
            o_error: Default::default(),
            o_mirror: Default::default(),
            o_bad: Default::default(),
            pw_en: Default::default(),
            pw_field: Default::default(),
            pw_data: Default::default(),
            pr_en: Default::default(),
            pr_field: Default::default(),
            pr_data: Default::default(),
            clear: Default::default(),
            latch_tx: Default::default(),
            latch_bytes: Default::default(),
            tx_lo: Default::default(),
            tx_hi: Default::default(),
            bytes_lo: Default::default(),
            bytes_hi: Default::default(),
            words: array_init::array_init(|_| Default::default()),
            q_v: Default::default(),
            q_src: Default::default(),
            q_op: Default::default(),
            q_al: Default::default(),
            q_ah: Default::default(),
            q_len: Default::default(),
            q_tag: Default::default(),
            q_dl: Default::default(),
            q_dh: Default::default(),
            q_dst: Default::default(),
            q_has_dst: Default::default(),
            q_blocked: Default::default(),
            q_error: Default::default(),
            q_mirror: Default::default(),
            q_bad: Default::default(),
            m_ge: Default::default(),
            m_le: Default::default(),
            r_add: Default::default(),
            r_end: Default::default(),
            t_ge: Default::default(),
            t_le: Default::default(),
            tx: Default::default(),
            bytes: Default::default(),
            len32: Default::default(),
            lm1: Default::default(),
            op_ok: Default::default(),
            src_mask: Default::default(),
            live: Default::default(),
            remap: Default::default(),
            hit: Default::default(),
            action: Default::default(),
            word_no: array_init::array_init(|i| konst(i as u64)),
            a_route: konst(1),
            a_remap: konst(2),
            a_count: konst(3),
            a_mirror: konst(4),
            a_reduce: konst(5),
            a_block: konst(6),
            op_read: konst(0),
            op_write: konst(1),
            op_atomic: konst(2),
            zero32: konst(0),
            one32: konst(1),
        }
    }
}

impl Logic for MemopsStage {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, q_v, q_src, q_op, q_al, q_ah, q_len, q_tag, q_dl, q_dh, q_dst, q_has_dst,
            q_blocked, q_error, q_mirror, q_bad
        );
        self.tx.clock.next = self.clock.val();
        self.bytes.clock.next = self.clock.val();
        // Program words 0..11 of the stage: 0 control, 1-2 match start,
        // 3-4 match end, 5-6 remap offset, 7-8 target start, 9-10 target end.
        // The program words' write and read-back decoders sit under their
        // enables, so a simulator tests one bit on the cycles without a
        // program access instead of every word's field.
        self.pr_data.next = self.zero32.val();
        for i in 0..11 {
            self.words[i].clock.next = self.clock.val();
            self.words[i].d.next = self.words[i].q.val();
        }
        if self.pw_en.val() {
            for i in 0..11 {
                if self.pw_field.val() == self.word_no[i].val() {
                    self.words[i].d.next = self.pw_data.val();
                }
            }
        }
        if self.pr_en.val() {
            for i in 0..11 {
                if self.pr_field.val() == self.word_no[i].val() {
                    self.pr_data.next = self.words[i].q.val();
                }
            }
        }

        // Match: enabled, source in the mask, opcode in the set, address in
        // range. The 64-bit match compares run only for a transaction this
        // stage may act on (`live`), and the remap's target compares only
        // for a remap stage: a bubble, or a stage the program leaves off,
        // costs a simulator a test instead of four 64-bit compares (the
        // adders stay ungated; see `Add64`).
        self.live.next = self.i_v.val()
            & !self.i_bad.val()
            & !self.i_blocked.val()
            & self.words[0].q.val().get_bit(7);
        self.action.next = self.words[0].q.val().get_bits::<4>(8);
        self.remap.next = self.live.val() & (self.action.val() == self.a_remap.val());
        self.m_ge.en.next = self.live.val();
        self.m_le.en.next = self.live.val();
        self.t_ge.en.next = self.remap.val();
        self.t_le.en.next = self.remap.val();
        self.op_ok.next = false;
        if self.live.val() {
            if self.i_op.val() == self.op_read.val() {
                self.op_ok.next = self.words[0].q.val().get_bit(4);
            }
            if self.i_op.val() == self.op_write.val() {
                self.op_ok.next = self.words[0].q.val().get_bit(5);
            }
            if self.i_op.val() == self.op_atomic.val() {
                self.op_ok.next = self.words[0].q.val().get_bit(6);
            }
        }
        self.m_ge.a_lo.next = self.words[1].q.val();
        self.m_ge.a_hi.next = self.words[2].q.val();
        self.m_ge.b_lo.next = self.i_al.val();
        self.m_ge.b_hi.next = self.i_ah.val();
        self.m_le.a_lo.next = self.i_al.val();
        self.m_le.a_hi.next = self.i_ah.val();
        self.m_le.b_lo.next = self.words[3].q.val();
        self.m_le.b_hi.next = self.words[4].q.val();
        self.src_mask.next = self.words[0].q.val().get_bits::<4>(0);
        // `op_ok`, `m_ge` and `m_le` answer only while `live`, so a dead
        // transaction's hit is decided without its source bit or compares.
        self.hit.next = false;
        if self.op_ok.val() {
            self.hit.next = self.src_mask.val().get_bit(self.i_src.val().index())
                & self.m_ge.le.val()
                & self.m_le.le.val();
        }

        // Remap operands: the new address, its last byte, the target range.
        self.len32.narrow.next = self.i_len.val();
        self.lm1.next = self.len32.wide.val() - self.one32.val();
        self.r_add.a_lo.next = self.i_al.val();
        self.r_add.a_hi.next = self.i_ah.val();
        self.r_add.b_lo.next = self.words[5].q.val();
        self.r_add.b_hi.next = self.words[6].q.val();
        self.r_end.a_lo.next = self.r_add.s_lo.val();
        self.r_end.a_hi.next = self.r_add.s_hi.val();
        self.r_end.b_lo.next = self.lm1.val();
        self.r_end.b_hi.next = self.zero32.val();
        self.t_ge.a_lo.next = self.words[7].q.val();
        self.t_ge.a_hi.next = self.words[8].q.val();
        self.t_ge.b_lo.next = self.r_add.s_lo.val();
        self.t_ge.b_hi.next = self.r_add.s_hi.val();
        self.t_le.a_lo.next = self.r_end.s_lo.val();
        self.t_le.a_hi.next = self.r_end.s_hi.val();
        self.t_le.b_lo.next = self.words[9].q.val();
        self.t_le.b_hi.next = self.words[10].q.val();

        // Counters count what moves on.
        self.tx.inc.next = self.zero32.val();
        self.bytes.inc.next = self.zero32.val();
        self.tx.clear.next = self.clear.val();
        self.bytes.clear.next = self.clear.val();
        self.tx.latch.next = self.latch_tx.val();
        self.bytes.latch.next = self.latch_bytes.val();

        if self.en.val() {
            self.q_v.d.next = self.i_v.val();
            // The payload loads only with a transaction (a clock enable; see
            // the input register).
            if self.i_v.val() {
                self.q_src.d.next = self.i_src.val();
                self.q_op.d.next = self.i_op.val();
                self.q_al.d.next = self.i_al.val();
                self.q_ah.d.next = self.i_ah.val();
                self.q_len.d.next = self.i_len.val();
                self.q_tag.d.next = self.i_tag.val();
                self.q_dl.d.next = self.i_dl.val();
                self.q_dh.d.next = self.i_dh.val();
                self.q_dst.d.next = self.i_dst.val();
                self.q_has_dst.d.next = self.i_has_dst.val();
                self.q_blocked.d.next = self.i_blocked.val();
                self.q_error.d.next = self.i_error.val();
                self.q_mirror.d.next = self.i_mirror.val();
                self.q_bad.d.next = self.i_bad.val();
                if self.hit.val() {
                    if self.action.val() == self.a_route.val() {
                        self.q_dst.d.next = self.words[0].q.val().get_bits::<2>(12);
                        self.q_has_dst.d.next = true;
                    }
                    if self.action.val() == self.a_remap.val() {
                        self.q_al.d.next = self.r_add.s_lo.val();
                        self.q_ah.d.next = self.r_add.s_hi.val();
                        self.q_error.d.next = self.i_error.val()
                            | !self.t_ge.le.val()
                            | !self.t_le.le.val()
                            | self.r_end.carry.val();
                    }
                    if self.action.val() == self.a_count.val() {
                        self.tx.inc.next = self.one32.val();
                        self.bytes.inc.next = self.len32.wide.val();
                    }
                    if self.action.val() == self.a_mirror.val() {
                        self.q_mirror.d.next = true;
                    }
                    if (self.action.val() == self.a_reduce.val())
                        & (self.i_op.val() == self.op_write.val())
                    {
                        self.q_op.d.next = self.op_atomic.val();
                    }
                    if self.action.val() == self.a_block.val() {
                        self.q_blocked.d.next = true;
                    }
                }
            }
        }
        self.o_v.next = self.q_v.q.val();
        self.o_src.next = self.q_src.q.val();
        self.o_op.next = self.q_op.q.val();
        self.o_al.next = self.q_al.q.val();
        self.o_ah.next = self.q_ah.q.val();
        self.o_len.next = self.q_len.q.val();
        self.o_tag.next = self.q_tag.q.val();
        self.o_dl.next = self.q_dl.q.val();
        self.o_dh.next = self.q_dh.q.val();
        self.o_dst.next = self.q_dst.q.val();
        self.o_has_dst.next = self.q_has_dst.q.val();
        self.o_blocked.next = self.q_blocked.q.val();
        self.o_error.next = self.q_error.q.val();
        self.o_mirror.next = self.q_mirror.q.val();
        self.o_bad.next = self.q_bad.q.val();
        self.tx_lo.next = self.tx.lo.val();
        self.tx_hi.next = self.tx.hi_latched.val();
        self.bytes_lo.next = self.bytes.lo.val();
        self.bytes_hi.next = self.bytes.hi_latched.val();
    }
}

/// One protection entry: a range of one destination and its permissions.
#[derive(LogicBlock)]
pub struct ProtectEntry {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Program write to this entry.
    pub pw_en: Signal<In, Bit>,
    /// Word within the entry (0-1 start, 2-3 end, 4 permissions).
    pub pw_field: Signal<In, Bits<3>>,
    /// Program data.
    pub pw_data: Signal<In, Bits<32>>,
    /// Read-back: a read of the image this cycle (`pr_data` is 0 without
    /// it).
    pub pr_en: Signal<In, Bit>,
    /// Read-back word.
    pub pr_field: Signal<In, Bits<3>>,
    /// Read-back data.
    pub pr_data: Signal<Out, Bits<32>>,
    /// A request to this entry's destination that may issue (the
    /// range is checked only then; `ok` is 0 otherwise).
    pub check: Signal<In, Bit>,
    /// The access writes memory.
    pub writes: Signal<In, Bit>,
    /// First byte, bits 31:0.
    pub al: Signal<In, Bits<32>>,
    /// First byte, bits 63:32.
    pub ah: Signal<In, Bits<32>>,
    /// Last byte, bits 31:0.
    pub el: Signal<In, Bits<32>>,
    /// Last byte, bits 63:32.
    pub eh: Signal<In, Bits<32>>,
    /// The entry permits the access.
    pub ok: Signal<Out, Bit>,
    words: [DFF<Bits<32>>; 5],
    word_no: [Constant<Bits<3>>; 5],
    lo_ok: Cmp64Le,
    hi_ok: Cmp64Le,
    may: Signal<Local, Bit>,
    zero32: Constant<Bits<32>>,
}

impl Default for ProtectEntry {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            pw_en: Default::default(),
            pw_field: Default::default(),
            pw_data: Default::default(),
            pr_en: Default::default(),
            pr_field: Default::default(),
            pr_data: Default::default(),
            check: Default::default(),
            writes: Default::default(),
            al: Default::default(),
            ah: Default::default(),
            el: Default::default(),
            eh: Default::default(),
            ok: Default::default(),
            words: array_init::array_init(|_| Default::default()),
            word_no: array_init::array_init(|i| konst(i as u64)),
            lo_ok: Default::default(),
            hi_ok: Default::default(),
            may: Default::default(),
            zero32: konst(0),
        }
    }
}

impl Logic for ProtectEntry {
    #[hdl_gen]
    fn update(&mut self) {
        // Decoders under their enables, as in [`MemopsStage`].
        self.pr_data.next = self.zero32.val();
        for i in 0..5 {
            self.words[i].clock.next = self.clock.val();
            self.words[i].d.next = self.words[i].q.val();
        }
        if self.pw_en.val() {
            for i in 0..5 {
                if self.pw_field.val() == self.word_no[i].val() {
                    self.words[i].d.next = self.pw_data.val();
                }
            }
        }
        if self.pr_en.val() {
            for i in 0..5 {
                if self.pr_field.val() == self.word_no[i].val() {
                    self.pr_data.next = self.words[i].q.val();
                }
            }
        }
        self.lo_ok.a_lo.next = self.words[0].q.val();
        self.lo_ok.a_hi.next = self.words[1].q.val();
        self.lo_ok.b_lo.next = self.al.val();
        self.lo_ok.b_hi.next = self.ah.val();
        self.hi_ok.a_lo.next = self.el.val();
        self.hi_ok.a_hi.next = self.eh.val();
        self.hi_ok.b_lo.next = self.words[2].q.val();
        self.hi_ok.b_hi.next = self.words[3].q.val();
        // The permission first: the range compares run only for a request
        // the entry could permit (an unused entry permits nothing).
        // Under `check` (a transaction about to issue to this entry's
        // destination), so an idle cycle costs one test an entry.
        self.may.next = false;
        if self.check.val() {
            if self.writes.val() {
                self.may.next = self.words[4].q.val().get_bit(1);
            } else {
                self.may.next = self.words[4].q.val().get_bit(0);
            }
        }
        self.lo_ok.en.next = self.may.val();
        self.hi_ok.en.next = self.may.val();
        self.ok.next = self.lo_ok.le.val() & self.hi_ok.le.val();
    }
}

/// The MemOps switch port with `K` operator stages (at most 8).
#[derive(LogicBlock)]
pub struct Memops<const K: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Request in: valid.
    pub req_valid: Signal<In, Bit>,
    /// Request in: taken.
    pub req_ready: Signal<Out, Bit>,
    /// Request source port.
    pub req_src: Signal<In, Bits<2>>,
    /// Request opcode (0 read, 1 write, 2 atomic add).
    pub req_op: Signal<In, Bits<2>>,
    /// Request address bits 31:0.
    pub req_al: Signal<In, Bits<32>>,
    /// Request address bits 63:32.
    pub req_ah: Signal<In, Bits<32>>,
    /// Request length in bytes (1..=8, inside one 8-byte word).
    pub req_len: Signal<In, Bits<4>>,
    /// Requester tag.
    pub req_tag: Signal<In, Bits<8>>,
    /// Data bits 31:0.
    pub req_dl: Signal<In, Bits<32>>,
    /// Data bits 63:32.
    pub req_dh: Signal<In, Bits<32>>,
    /// Issued request: valid.
    pub out_valid: Signal<Out, Bit>,
    /// Per destination port (bit d): the destination takes a request.
    pub out_ready: Signal<In, Bits<4>>,
    /// Destination port.
    pub out_dst: Signal<Out, Bits<2>>,
    /// Opcode (reduce-on-write may have made a write an atomic add).
    pub out_op: Signal<Out, Bits<2>>,
    /// Address bits 31:0 (as remapped).
    pub out_al: Signal<Out, Bits<32>>,
    /// Address bits 63:32.
    pub out_ah: Signal<Out, Bits<32>>,
    /// Length.
    pub out_len: Signal<Out, Bits<4>>,
    /// Switch tag: the destination's completion carries it back.
    pub out_stag: Signal<Out, Bits<4>>,
    /// Data bits 31:0.
    pub out_dl: Signal<Out, Bits<32>>,
    /// Data bits 63:32.
    pub out_dh: Signal<Out, Bits<32>>,
    /// Destination completion: valid.
    pub cin_valid: Signal<In, Bit>,
    /// Destination completion: taken.
    pub cin_ready: Signal<Out, Bit>,
    /// Switch tag.
    pub cin_stag: Signal<In, Bits<4>>,
    /// Status.
    pub cin_status: Signal<In, Bits<2>>,
    /// Data bits 31:0.
    pub cin_dl: Signal<In, Bits<32>>,
    /// Data bits 63:32.
    pub cin_dh: Signal<In, Bits<32>>,
    /// Completion to a requester: valid.
    pub cout_valid: Signal<Out, Bit>,
    /// Completion to a requester: taken.
    pub cout_ready: Signal<In, Bit>,
    /// The requester's port.
    pub cout_dst: Signal<Out, Bits<2>>,
    /// The requester's tag.
    pub cout_tag: Signal<Out, Bits<8>>,
    /// Status (0 ok, 1 denied, 2 error).
    pub cout_status: Signal<Out, Bits<2>>,
    /// Data bits 31:0.
    pub cout_dl: Signal<Out, Bits<32>>,
    /// Data bits 63:32.
    pub cout_dh: Signal<Out, Bits<32>>,
    /// Mirrored header: valid (a copy is dropped, and counted, when the
    /// telemetry port is still busy with the previous one).
    pub mir_valid: Signal<Out, Bit>,
    /// Mirrored header taken.
    pub mir_ready: Signal<In, Bit>,
    /// Source port.
    pub mir_src: Signal<Out, Bits<2>>,
    /// Opcode.
    pub mir_op: Signal<Out, Bits<2>>,
    /// Address bits 31:0.
    pub mir_al: Signal<Out, Bits<32>>,
    /// Address bits 63:32.
    pub mir_ah: Signal<Out, Bits<32>>,
    /// Length.
    pub mir_len: Signal<Out, Bits<4>>,
    /// Requester tag.
    pub mir_tag: Signal<Out, Bits<8>>,
    /// Engine register port: read word address.
    pub eng_raddr: Signal<In, Bits<14>>,
    /// Engine register port: read accepted.
    pub eng_re: Signal<In, Bit>,
    /// Engine register port: read data for `eng_raddr` while `eng_re`
    /// (combinational), else 0.
    pub eng_rdata: Signal<Out, Bits<32>>,
    /// Engine register port: write word address.
    pub eng_waddr: Signal<In, Bits<14>>,
    /// Engine register port: write data.
    pub eng_wdata: Signal<In, Bits<32>>,
    /// Engine register port: write strobes.
    pub eng_wstrb: Signal<In, Bits<4>>,
    /// Engine register port: write enable.
    pub eng_we: Signal<In, Bit>,

    stages: [MemopsStage; K],
    entries: [ProtectEntry; ENTRIES],
    counters: [Counter64; GLOBAL_COUNTERS],
    f_end: Add64,
    len32: Widen<32, 4>,
    a3: Widen<5, 3>,
    l5: Widen<5, 4>,
    pa32: Widen<32, 8>,
    ts32: Widen<32, 8>,
    lf_dst: Fifo4<Bits<2>>,
    // `lf_tag` and `lf_status` follow `lf_dst`'s pointers.
    lf_tag: Fifo4Mem<Bits<8>>,
    lf_status: Fifo4Mem<Bits<2>>,

    ctrl_en: DFF<Bit>,
    prog_addr: DFF<Bits<8>>,
    tel_sel: DFF<Bits<8>>,
    in_v: DFF<Bit>,
    in_src: DFF<Bits<2>>,
    in_op: DFF<Bits<2>>,
    in_al: DFF<Bits<32>>,
    in_ah: DFF<Bits<32>>,
    in_len: DFF<Bits<4>>,
    in_tag: DFF<Bits<8>>,
    in_dl: DFF<Bits<32>>,
    in_dh: DFF<Bits<32>>,
    in_bad: DFF<Bit>,
    tag_v: [DFF<Bit>; TAGS],
    tag_src: [DFF<Bits<2>>; TAGS],
    tag_tag: [DFF<Bits<8>>; TAGS],
    mir_q: DFF<Bit>,
    mir_src_q: DFF<Bits<2>>,
    mir_op_q: DFF<Bits<2>>,
    mir_al_q: DFF<Bits<32>>,
    mir_ah_q: DFF<Bits<32>>,
    mir_len_q: DFF<Bits<4>>,
    mir_tag_q: DFF<Bits<8>>,

    fin_v: Signal<Local, Bit>,
    fin_src: Signal<Local, Bits<2>>,
    fin_op: Signal<Local, Bits<2>>,
    fin_al: Signal<Local, Bits<32>>,
    fin_ah: Signal<Local, Bits<32>>,
    fin_len: Signal<Local, Bits<4>>,
    fin_tag: Signal<Local, Bits<8>>,
    fin_dl: Signal<Local, Bits<32>>,
    fin_dh: Signal<Local, Bits<32>>,
    fin_dst: Signal<Local, Bits<2>>,
    fin_has_dst: Signal<Local, Bit>,
    fin_blocked: Signal<Local, Bit>,
    fin_error: Signal<Local, Bit>,
    fin_mirror: Signal<Local, Bit>,
    fin_bad: Signal<Local, Bit>,
    may_issue: Signal<Local, Bit>,
    fin_writes: Signal<Local, Bit>,
    permitted: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    is_local: Signal<Local, Bit>,
    local_status: Signal<Local, Bits<2>>,
    any_free: Signal<Local, Bit>,
    free_idx: Signal<Local, Bits<4>>,
    en: Signal<Local, Bit>,
    mir_load: Signal<Local, Bit>,
    dst_ready: Signal<Local, Bit>,
    n_out: [Signal<Local, Bits<32>>; TAGS],
    outstanding: Signal<Local, Bits<32>>,
    cin_src: Signal<Local, Bits<2>>,
    cin_tag: Signal<Local, Bits<8>>,
    idx_stage: Signal<Local, Bits<3>>,
    idx_entry: Signal<Local, Bits<4>>,
    clear: Signal<Local, Bit>,

    stage_no: [Constant<Bits<3>>; K],
    entry_no: [Constant<Bits<4>>; ENTRIES],
    entry_dst: [Constant<Bits<2>>; ENTRIES],
    tag_no: [Constant<Bits<4>>; TAGS],
    sel_tx: [Constant<Bits<8>>; K],
    sel_bytes: [Constant<Bits<8>>; K],
    sel_glob: [Constant<Bits<8>>; GLOBAL_COUNTERS],
    zero32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    zero4: Constant<Bits<4>>,
    eight4: Constant<Bits<4>>,
    eight5: Constant<Bits<5>>,
    fifo_full: Constant<Bits<3>>,
    one8: Constant<Bits<8>>,
    st_denied: Constant<Bits<2>>,
    st_error: Constant<Bits<2>>,
    op_read: Constant<Bits<2>>,
    op_bad: Constant<Bits<2>>,
    zero3: Constant<Bits<3>>,
    geometry: Constant<Bits<32>>,
    w_ctrl: Constant<Bits<14>>,
    w_prog_addr: Constant<Bits<14>>,
    w_prog_data: Constant<Bits<14>>,
    w_tel_sel: Constant<Bits<14>>,
    w_tel_lo: Constant<Bits<14>>,
    w_tel_hi: Constant<Bits<14>>,
    w_tel_clear: Constant<Bits<14>>,
    w_geometry: Constant<Bits<14>>,
    w_outstanding: Constant<Bits<14>>,
}

impl<const K: usize> Memops<K> {
    /// Elaborate the port.
    ///
    /// # Panics
    /// At elaboration, when `K` is not 1..=8 (the program image has room
    /// for 8 stages).
    pub fn new() -> Self {
        assert!((1..=8).contains(&K), "memops: 1 to 8 stages, not {K}");
        let geometry = PORTS as u64 | (K as u64) << 8 | (RANGES as u64) << 16 | (TAGS as u64) << 24;
        Self {
            clock: Default::default(),
            req_valid: Default::default(),
            req_ready: Default::default(),
            req_src: Default::default(),
            req_op: Default::default(),
            req_al: Default::default(),
            req_ah: Default::default(),
            req_len: Default::default(),
            req_tag: Default::default(),
            req_dl: Default::default(),
            req_dh: Default::default(),
            out_valid: Default::default(),
            out_ready: Default::default(),
            out_dst: Default::default(),
            out_op: Default::default(),
            out_al: Default::default(),
            out_ah: Default::default(),
            out_len: Default::default(),
            out_stag: Default::default(),
            out_dl: Default::default(),
            out_dh: Default::default(),
            cin_valid: Default::default(),
            cin_ready: Default::default(),
            cin_stag: Default::default(),
            cin_status: Default::default(),
            cin_dl: Default::default(),
            cin_dh: Default::default(),
            cout_valid: Default::default(),
            cout_ready: Default::default(),
            cout_dst: Default::default(),
            cout_tag: Default::default(),
            cout_status: Default::default(),
            cout_dl: Default::default(),
            cout_dh: Default::default(),
            mir_valid: Default::default(),
            mir_ready: Default::default(),
            mir_src: Default::default(),
            mir_op: Default::default(),
            mir_al: Default::default(),
            mir_ah: Default::default(),
            mir_len: Default::default(),
            mir_tag: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            stages: array_init::array_init(|_| Default::default()),
            entries: array_init::array_init(|_| Default::default()),
            counters: array_init::array_init(|_| Default::default()),
            f_end: Default::default(),
            len32: Default::default(),
            a3: Default::default(),
            l5: Default::default(),
            pa32: Default::default(),
            ts32: Default::default(),
            lf_dst: Default::default(),
            lf_tag: Default::default(),
            lf_status: Default::default(),
            ctrl_en: Default::default(),
            prog_addr: Default::default(),
            tel_sel: Default::default(),
            in_v: Default::default(),
            in_src: Default::default(),
            in_op: Default::default(),
            in_al: Default::default(),
            in_ah: Default::default(),
            in_len: Default::default(),
            in_tag: Default::default(),
            in_dl: Default::default(),
            in_dh: Default::default(),
            in_bad: Default::default(),
            tag_v: array_init::array_init(|_| Default::default()),
            tag_src: array_init::array_init(|_| Default::default()),
            tag_tag: array_init::array_init(|_| Default::default()),
            mir_q: Default::default(),
            mir_src_q: Default::default(),
            mir_op_q: Default::default(),
            mir_al_q: Default::default(),
            mir_ah_q: Default::default(),
            mir_len_q: Default::default(),
            mir_tag_q: Default::default(),
            fin_v: Default::default(),
            fin_src: Default::default(),
            fin_op: Default::default(),
            fin_al: Default::default(),
            fin_ah: Default::default(),
            fin_len: Default::default(),
            fin_tag: Default::default(),
            fin_dl: Default::default(),
            fin_dh: Default::default(),
            fin_dst: Default::default(),
            fin_has_dst: Default::default(),
            fin_blocked: Default::default(),
            fin_error: Default::default(),
            fin_mirror: Default::default(),
            fin_bad: Default::default(),
            may_issue: Default::default(),
            fin_writes: Default::default(),
            permitted: Default::default(),
            issue: Default::default(),
            is_local: Default::default(),
            local_status: Default::default(),
            any_free: Default::default(),
            free_idx: Default::default(),
            en: Default::default(),
            mir_load: Default::default(),
            dst_ready: Default::default(),
            n_out: array_init::array_init(|_| Default::default()),
            outstanding: Default::default(),
            cin_src: Default::default(),
            cin_tag: Default::default(),
            idx_stage: Default::default(),
            idx_entry: Default::default(),
            clear: Default::default(),
            stage_no: array_init::array_init(|i| konst(i as u64)),
            entry_no: array_init::array_init(|i| konst(i as u64)),
            entry_dst: array_init::array_init(|i| konst((i / RANGES) as u64)),
            tag_no: array_init::array_init(|i| konst(i as u64)),
            sel_tx: array_init::array_init(|i| konst(i as u64)),
            sel_bytes: array_init::array_init(|i| konst((K + i) as u64)),
            sel_glob: array_init::array_init(|i| konst((2 * K + i) as u64)),
            zero32: konst(0),
            one32: konst(1),
            zero4: konst(0),
            eight4: konst(8),
            eight5: konst(8),
            fifo_full: konst(4),
            one8: konst(1),
            st_denied: konst(1),
            st_error: konst(2),
            op_read: konst(0),
            op_bad: konst(3),
            zero3: konst(0),
            geometry: konst(geometry),
            w_ctrl: Constant::new(word_of(&regs::CTRL)),
            w_prog_addr: Constant::new(word_of(&regs::PROG_ADDR)),
            w_prog_data: Constant::new(word_of(&regs::PROG_DATA)),
            w_tel_sel: Constant::new(word_of(&regs::TEL_SEL)),
            w_tel_lo: Constant::new(word_of(&regs::TEL_LO)),
            w_tel_hi: Constant::new(word_of(&regs::TEL_HI)),
            w_tel_clear: Constant::new(word_of(&regs::TEL_CLEAR)),
            w_geometry: Constant::new(word_of(&regs::GEOMETRY)),
            w_outstanding: Constant::new(word_of(&regs::OUTSTANDING)),
        }
    }
}

impl<const K: usize> Default for Memops<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const K: usize> Logic for Memops<K> {
    // Nested `if`s on purpose: `#[hdl_gen]` has no `&&`, and a `&` makes the
    // generated C++ evaluate both sides every cycle.
    #[allow(clippy::collapsible_if)]
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, ctrl_en, prog_addr, tel_sel, in_v, in_src, in_op, in_al, in_ah, in_len,
            in_tag, in_dl, in_dh, in_bad, mir_q, mir_src_q, mir_op_q, mir_al_q, mir_ah_q,
            mir_len_q, mir_tag_q
        );
        self.lf_dst.clock.next = self.clock.val();
        self.lf_tag.clock.next = self.clock.val();
        self.lf_status.clock.next = self.clock.val();
        // Nested, not `we & (addr == …)`: a simulator evaluates both sides
        // of a `&` every cycle, a nested test the compare only on a write.
        self.clear.next = false;
        if self.eng_we.val() {
            self.clear.next = (self.eng_waddr.val() == self.w_tel_clear.val())
                & self.eng_wstrb.val().get_bit(0)
                & self.eng_wdata.val().get_bit(0);
        }
        for g in 0..GLOBAL_COUNTERS {
            self.counters[g].clock.next = self.clock.val();
            self.counters[g].inc.next = self.zero32.val();
            self.counters[g].clear.next = self.clear.val();
            self.counters[g].latch.next = false;
        }
        for t in 0..TAGS {
            self.tag_v[t].clock.next = self.clock.val();
            self.tag_v[t].d.next = self.tag_v[t].q.val();
            self.tag_src[t].clock.next = self.clock.val();
            self.tag_src[t].d.next = self.tag_src[t].q.val();
            self.tag_tag[t].clock.next = self.clock.val();
            self.tag_tag[t].d.next = self.tag_tag[t].q.val();
        }

        // ---- The last stage's transaction and the protection check.
        self.fin_v.next = false;
        self.fin_src.next = self.stages[0].o_src.val();
        self.fin_op.next = self.stages[0].o_op.val();
        self.fin_al.next = self.stages[0].o_al.val();
        self.fin_ah.next = self.stages[0].o_ah.val();
        self.fin_len.next = self.stages[0].o_len.val();
        self.fin_tag.next = self.stages[0].o_tag.val();
        self.fin_dl.next = self.stages[0].o_dl.val();
        self.fin_dh.next = self.stages[0].o_dh.val();
        self.fin_dst.next = self.stages[0].o_dst.val();
        self.fin_has_dst.next = false;
        self.fin_blocked.next = false;
        self.fin_error.next = false;
        self.fin_mirror.next = false;
        self.fin_bad.next = false;
        // The last iteration wins: the outputs of stage K - 1.
        for j in 0..K {
            self.fin_v.next = self.stages[j].o_v.val();
            self.fin_src.next = self.stages[j].o_src.val();
            self.fin_op.next = self.stages[j].o_op.val();
            self.fin_al.next = self.stages[j].o_al.val();
            self.fin_ah.next = self.stages[j].o_ah.val();
            self.fin_len.next = self.stages[j].o_len.val();
            self.fin_tag.next = self.stages[j].o_tag.val();
            self.fin_dl.next = self.stages[j].o_dl.val();
            self.fin_dh.next = self.stages[j].o_dh.val();
            self.fin_dst.next = self.stages[j].o_dst.val();
            self.fin_has_dst.next = self.stages[j].o_has_dst.val();
            self.fin_blocked.next = self.stages[j].o_blocked.val();
            self.fin_error.next = self.stages[j].o_error.val();
            self.fin_mirror.next = self.stages[j].o_mirror.val();
            self.fin_bad.next = self.stages[j].o_bad.val();
        }
        // Everything a request needs to issue but its permission; the last
        // byte's address and the protection entries are computed only then
        // (see `Cmp64Le`).
        self.may_issue.next = self.fin_v.val()
            & !self.fin_bad.val()
            & !self.fin_blocked.val()
            & !self.fin_error.val()
            & self.fin_has_dst.val();
        self.fin_writes.next = self.fin_op.val() != self.op_read.val();
        self.len32.narrow.next = self.fin_len.val();
        self.f_end.a_lo.next = self.fin_al.val();
        self.f_end.a_hi.next = self.fin_ah.val();
        self.f_end.b_lo.next = self.len32.wide.val() - self.one32.val();
        self.f_end.b_hi.next = self.zero32.val();
        self.permitted.next = false;
        for e in 0..ENTRIES {
            self.entries[e].clock.next = self.clock.val();
            self.entries[e].check.next =
                self.may_issue.val() & (self.fin_dst.val() == self.entry_dst[e].val());
            self.entries[e].writes.next = self.fin_writes.val();
            self.entries[e].al.next = self.fin_al.val();
            self.entries[e].ah.next = self.fin_ah.val();
            self.entries[e].el.next = self.f_end.s_lo.val();
            self.entries[e].eh.next = self.f_end.s_hi.val();
            if self.entries[e].ok.val() {
                self.permitted.next = !self.f_end.carry.val();
            }
        }
        self.issue.next = self.may_issue.val() & self.permitted.val();
        self.is_local.next = self.fin_v.val() & !self.issue.val();
        self.local_status.next = self.st_denied.val();
        if self.fin_bad.val()
            | (!self.fin_blocked.val() & (self.fin_error.val() | !self.fin_has_dst.val()))
        {
            self.local_status.next = self.st_error.val();
        }

        // ---- A free switch tag (any one: the highest). Looked for only
        // with a transaction at the end of the pipeline, the only time a
        // tag is taken: a simulator skips the 16-way search on the other
        // cycles.
        self.any_free.next = false;
        self.free_idx.next = self.zero4.val();
        if self.fin_v.val() {
            for t in 0..TAGS {
                if !self.tag_v[t].q.val() {
                    self.any_free.next = true;
                    self.free_idx.next = self.tag_no[t].val();
                }
            }
        }

        // ---- One enable for the whole pipeline: the last stage retires.
        self.dst_ready.next = self.out_ready.val().get_bit(self.fin_dst.val().index());
        self.en.next = !self.fin_v.val()
            | (self.issue.val() & self.dst_ready.val() & self.any_free.val())
            | (self.is_local.val() & (self.lf_dst.count.val() != self.fifo_full.val()));
        // Disabled (CTRL.ENABLE = 0, e.g. while a program is installed),
        // the port still takes every request and completes it with an
        // error, so a requester never waits on it.
        self.req_ready.next = self.en.val();
        // Input register and the malformed check (1..=8 bytes in one word).
        self.a3.narrow.next = self.req_al.val().get_bits::<3>(0);
        self.l5.narrow.next = self.req_len.val();
        // The header loads only with a request (a clock enable): a bubble
        // moves the valid bit alone and the payload holds, so a simulator
        // copies nothing on the cycles without traffic.
        if self.en.val() {
            self.in_v.d.next = self.req_valid.val();
            if self.req_valid.val() {
                self.in_src.d.next = self.req_src.val();
                self.in_op.d.next = self.req_op.val();
                self.in_al.d.next = self.req_al.val();
                self.in_ah.d.next = self.req_ah.val();
                self.in_len.d.next = self.req_len.val();
                self.in_tag.d.next = self.req_tag.val();
                self.in_dl.d.next = self.req_dl.val();
                self.in_dh.d.next = self.req_dh.val();
                self.in_bad.d.next = (self.req_len.val() == self.zero4.val())
                    | (self.req_len.val() > self.eight4.val())
                    | ((self.a3.wide.val() + self.l5.wide.val()) > self.eight5.val())
                    | (self.req_op.val() == self.op_bad.val())
                    | !self.ctrl_en.q.val();
            }
        }
        for j in 0..K {
            self.stages[j].clock.next = self.clock.val();
            self.stages[j].en.next = self.en.val();
            self.stages[j].clear.next = self.clear.val();
        }
        self.stages[0].i_v.next = self.in_v.q.val();
        self.stages[0].i_src.next = self.in_src.q.val();
        self.stages[0].i_op.next = self.in_op.q.val();
        self.stages[0].i_al.next = self.in_al.q.val();
        self.stages[0].i_ah.next = self.in_ah.q.val();
        self.stages[0].i_len.next = self.in_len.q.val();
        self.stages[0].i_tag.next = self.in_tag.q.val();
        self.stages[0].i_dl.next = self.in_dl.q.val();
        self.stages[0].i_dh.next = self.in_dh.q.val();
        self.stages[0].i_dst.next = self.op_read.val();
        self.stages[0].i_has_dst.next = false;
        self.stages[0].i_blocked.next = false;
        self.stages[0].i_error.next = false;
        self.stages[0].i_mirror.next = false;
        self.stages[0].i_bad.next = self.in_bad.q.val();
        for j in 1..K {
            self.stages[j].i_v.next = self.stages[j - 1].o_v.val();
            self.stages[j].i_src.next = self.stages[j - 1].o_src.val();
            self.stages[j].i_op.next = self.stages[j - 1].o_op.val();
            self.stages[j].i_al.next = self.stages[j - 1].o_al.val();
            self.stages[j].i_ah.next = self.stages[j - 1].o_ah.val();
            self.stages[j].i_len.next = self.stages[j - 1].o_len.val();
            self.stages[j].i_tag.next = self.stages[j - 1].o_tag.val();
            self.stages[j].i_dl.next = self.stages[j - 1].o_dl.val();
            self.stages[j].i_dh.next = self.stages[j - 1].o_dh.val();
            self.stages[j].i_dst.next = self.stages[j - 1].o_dst.val();
            self.stages[j].i_has_dst.next = self.stages[j - 1].o_has_dst.val();
            self.stages[j].i_blocked.next = self.stages[j - 1].o_blocked.val();
            self.stages[j].i_error.next = self.stages[j - 1].o_error.val();
            self.stages[j].i_mirror.next = self.stages[j - 1].o_mirror.val();
            self.stages[j].i_bad.next = self.stages[j - 1].o_bad.val();
        }

        // ---- Issue to the destination under a free switch tag.
        self.out_valid.next = self.issue.val() & self.any_free.val();
        self.out_dst.next = self.fin_dst.val();
        self.out_op.next = self.fin_op.val();
        self.out_al.next = self.fin_al.val();
        self.out_ah.next = self.fin_ah.val();
        self.out_len.next = self.fin_len.val();
        self.out_stag.next = self.free_idx.val();
        self.out_dl.next = self.fin_dl.val();
        self.out_dh.next = self.fin_dh.val();
        if self.out_valid.val() & self.dst_ready.val() {
            self.counters[0].inc.next = self.one32.val();
            for t in 0..TAGS {
                if self.free_idx.val() == self.tag_no[t].val() {
                    self.tag_v[t].d.next = true;
                    self.tag_src[t].d.next = self.fin_src.val();
                    self.tag_tag[t].d.next = self.fin_tag.val();
                }
            }
        }

        // ---- Completions the port makes itself.
        self.lf_dst.push.next = self.is_local.val() & self.en.val();
        self.lf_tag.push.next = self.lf_dst.push.val();
        self.lf_status.push.next = self.lf_dst.push.val();
        self.lf_tag.wr.next = self.lf_dst.wr.val();
        self.lf_status.wr.next = self.lf_dst.wr.val();
        self.lf_tag.rd.next = self.lf_dst.rd.val();
        self.lf_status.rd.next = self.lf_dst.rd.val();
        self.lf_dst.data_in.next = self.fin_src.val();
        self.lf_tag.data_in.next = self.fin_tag.val();
        self.lf_status.data_in.next = self.local_status.val();
        if self.is_local.val() & self.en.val() {
            if self.fin_blocked.val() & !self.fin_bad.val() {
                self.counters[1].inc.next = self.one32.val();
            }
            if (self.local_status.val() == self.st_denied.val()) & !self.fin_blocked.val() {
                self.counters[2].inc.next = self.one32.val();
            }
            if self.local_status.val() == self.st_error.val() {
                self.counters[3].inc.next = self.one32.val();
            }
        }

        // ---- Mirror: a one-deep telemetry register; a busy port drops the copy.
        self.mir_load.next = self.fin_v.val() & self.en.val() & self.fin_mirror.val();
        if self.mir_q.q.val() & self.mir_ready.val() {
            self.mir_q.d.next = false;
        }
        if self.mir_load.val() {
            self.counters[4].inc.next = self.one32.val();
            if !self.mir_q.q.val() | self.mir_ready.val() {
                self.mir_q.d.next = true;
                self.mir_src_q.d.next = self.fin_src.val();
                self.mir_op_q.d.next = self.fin_op.val();
                self.mir_al_q.d.next = self.fin_al.val();
                self.mir_ah_q.d.next = self.fin_ah.val();
                self.mir_len_q.d.next = self.fin_len.val();
                self.mir_tag_q.d.next = self.fin_tag.val();
            } else {
                self.counters[5].inc.next = self.one32.val();
            }
        }
        self.mir_valid.next = self.mir_q.q.val();
        self.mir_src.next = self.mir_src_q.q.val();
        self.mir_op.next = self.mir_op_q.q.val();
        self.mir_al.next = self.mir_al_q.q.val();
        self.mir_ah.next = self.mir_ah_q.q.val();
        self.mir_len.next = self.mir_len_q.q.val();
        self.mir_tag.next = self.mir_tag_q.q.val();

        // ---- Completions to requesters: destinations first, then the port's own.
        // The requester of a completion, looked up only with one (nothing
        // reads it otherwise): a simulator skips the 16-way lookup.
        self.cin_src.next = self.tag_src[0].q.val();
        self.cin_tag.next = self.tag_tag[0].q.val();
        if self.cin_valid.val() {
            for t in 0..TAGS {
                if self.cin_stag.val() == self.tag_no[t].val() {
                    self.cin_src.next = self.tag_src[t].q.val();
                    self.cin_tag.next = self.tag_tag[t].q.val();
                }
            }
        }
        self.cin_ready.next = self.cout_ready.val();
        self.cout_valid.next = self.cin_valid.val() | (self.lf_dst.count.val() != self.zero3.val());
        self.cout_dst.next = self.lf_dst.data_out.val();
        self.cout_tag.next = self.lf_tag.data_out.val();
        self.cout_status.next = self.lf_status.data_out.val();
        self.cout_dl.next = self.zero32.val();
        self.cout_dh.next = self.zero32.val();
        self.lf_dst.pop.next = false;
        if self.cin_valid.val() {
            self.cout_dst.next = self.cin_src.val();
            self.cout_tag.next = self.cin_tag.val();
            self.cout_status.next = self.cin_status.val();
            self.cout_dl.next = self.cin_dl.val();
            self.cout_dh.next = self.cin_dh.val();
            if self.cout_ready.val() {
                for t in 0..TAGS {
                    if self.cin_stag.val() == self.tag_no[t].val() {
                        self.tag_v[t].d.next = false;
                    }
                }
            }
        } else {
            self.lf_dst.pop.next = self.cout_valid.val() & self.cout_ready.val();
        }

        // ---- Registers: program image (indirect), telemetry (indirect).
        self.idx_stage.next = self.prog_addr.q.val().get_bits::<3>(4);
        self.idx_entry.next = self.prog_addr.q.val().get_bits::<4>(3);
        // The program image's write and read enables are decoded under
        // the access's enable (a simulator tests one bit on the cycles
        // without one).
        for j in 0..K {
            self.stages[j].pw_en.next = false;
            self.stages[j].pr_en.next = false;
            self.stages[j].pw_field.next = self.prog_addr.q.val().get_bits::<4>(0);
            self.stages[j].pw_data.next = self.eng_wdata.val();
            self.stages[j].pr_field.next = self.prog_addr.q.val().get_bits::<4>(0);
            self.stages[j].latch_tx.next = false;
            self.stages[j].latch_bytes.next = false;
        }
        for e in 0..ENTRIES {
            self.entries[e].pw_en.next = false;
            self.entries[e].pr_en.next = false;
            self.entries[e].pw_field.next = self.prog_addr.q.val().get_bits::<3>(0);
            self.entries[e].pw_data.next = self.eng_wdata.val();
            self.entries[e].pr_field.next = self.prog_addr.q.val().get_bits::<3>(0);
        }
        if self.eng_we.val() {
            if self.eng_waddr.val() == self.w_prog_data.val() {
                for j in 0..K {
                    self.stages[j].pw_en.next = !self.prog_addr.q.val().get_bit(7)
                        & (self.idx_stage.val() == self.stage_no[j].val());
                }
                for e in 0..ENTRIES {
                    self.entries[e].pw_en.next = self.prog_addr.q.val().get_bit(7)
                        & (self.idx_entry.val() == self.entry_no[e].val());
                }
            }
        }
        if self.eng_re.val() {
            if self.eng_raddr.val() == self.w_prog_data.val() {
                for j in 0..K {
                    self.stages[j].pr_en.next = true;
                }
                for e in 0..ENTRIES {
                    self.entries[e].pr_en.next = true;
                }
            }
        }
        if self.eng_we.val() {
            if (self.eng_waddr.val() == self.w_ctrl.val()) & self.eng_wstrb.val().get_bit(0) {
                self.ctrl_en.d.next = self.eng_wdata.val().get_bit(0);
            }
            if (self.eng_waddr.val() == self.w_prog_addr.val()) & self.eng_wstrb.val().get_bit(0) {
                self.prog_addr.d.next = self.eng_wdata.val().get_bits::<8>(0);
            }
            if self.eng_waddr.val() == self.w_prog_data.val() {
                self.prog_addr.d.next = self.prog_addr.q.val() + self.one8.val();
            }
            if (self.eng_waddr.val() == self.w_tel_sel.val()) & self.eng_wstrb.val().get_bit(0) {
                self.tel_sel.d.next = self.eng_wdata.val().get_bits::<8>(0);
            }
        }
        // The outstanding count is read only through `eng_rdata`, so it is
        // counted only on a read (a chain of 16 adders a simulator skips
        // on every other cycle).
        for t in 0..TAGS {
            self.n_out[t].next = self.zero32.val();
        }
        self.outstanding.next = self.zero32.val();
        if self.eng_re.val() {
            if self.tag_v[0].q.val() {
                self.n_out[0].next = self.one32.val();
            }
            self.outstanding.next = self.n_out[0].val();
            for t in 1..TAGS {
                self.n_out[t].next = self.n_out[t - 1].val();
                if self.tag_v[t].q.val() {
                    self.n_out[t].next = self.n_out[t - 1].val() + self.one32.val();
                }
                self.outstanding.next = self.n_out[t].val();
            }
        }

        self.pa32.narrow.next = self.prog_addr.q.val();
        self.ts32.narrow.next = self.tel_sel.q.val();
        self.eng_rdata.next = self.zero32.val();
        // Decoded only on a read: the CSR block takes `eng_rdata` only in
        // the cycle `eng_re` is high, and a simulator skips the decoder on
        // every other cycle.
        if self.eng_re.val() {
            if (self.eng_raddr.val() == self.w_ctrl.val()) & self.ctrl_en.q.val() {
                self.eng_rdata.next = self.one32.val();
            }
            if self.eng_raddr.val() == self.w_geometry.val() {
                self.eng_rdata.next = self.geometry.val();
            }
            if self.eng_raddr.val() == self.w_outstanding.val() {
                self.eng_rdata.next = self.outstanding.val();
            }
            if self.eng_raddr.val() == self.w_prog_addr.val() {
                self.eng_rdata.next = self.pa32.wide.val();
            }
            if self.eng_raddr.val() == self.w_tel_sel.val() {
                self.eng_rdata.next = self.ts32.wide.val();
            }
            for j in 0..K {
                if (self.eng_raddr.val() == self.w_prog_data.val())
                    & !self.prog_addr.q.val().get_bit(7)
                    & (self.idx_stage.val() == self.stage_no[j].val())
                {
                    self.eng_rdata.next = self.stages[j].pr_data.val();
                }
                if (self.eng_raddr.val() == self.w_tel_lo.val())
                    & (self.tel_sel.q.val() == self.sel_tx[j].val())
                {
                    self.eng_rdata.next = self.stages[j].tx_lo.val();
                    self.stages[j].latch_tx.next = self.eng_re.val();
                }
                if (self.eng_raddr.val() == self.w_tel_hi.val())
                    & (self.tel_sel.q.val() == self.sel_tx[j].val())
                {
                    self.eng_rdata.next = self.stages[j].tx_hi.val();
                }
                if (self.eng_raddr.val() == self.w_tel_lo.val())
                    & (self.tel_sel.q.val() == self.sel_bytes[j].val())
                {
                    self.eng_rdata.next = self.stages[j].bytes_lo.val();
                    self.stages[j].latch_bytes.next = self.eng_re.val();
                }
                if (self.eng_raddr.val() == self.w_tel_hi.val())
                    & (self.tel_sel.q.val() == self.sel_bytes[j].val())
                {
                    self.eng_rdata.next = self.stages[j].bytes_hi.val();
                }
            }
            for e in 0..ENTRIES {
                if (self.eng_raddr.val() == self.w_prog_data.val())
                    & self.prog_addr.q.val().get_bit(7)
                    & (self.idx_entry.val() == self.entry_no[e].val())
                {
                    self.eng_rdata.next = self.entries[e].pr_data.val();
                }
            }
            for g in 0..GLOBAL_COUNTERS {
                if (self.eng_raddr.val() == self.w_tel_lo.val())
                    & (self.tel_sel.q.val() == self.sel_glob[g].val())
                {
                    self.eng_rdata.next = self.counters[g].lo.val();
                    self.counters[g].latch.next = self.eng_re.val();
                }
                if (self.eng_raddr.val() == self.w_tel_hi.val())
                    & (self.tel_sel.q.val() == self.sel_glob[g].val())
                {
                    self.eng_rdata.next = self.counters[g].hi_latched.val();
                }
            }
        }
    }
}
