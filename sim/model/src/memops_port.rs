//! The card's MemOps port, cycle by cycle: the specification of
//! `weft_hdl::memops_port`. It sits between the MemOps frames' UDP payloads
//! (docs/wire.md "MemOps request"), the `memops` block, the AVM pool and a
//! framer that sends each completion back to its requester (docs/wire.md
//! "MemOps completion").
//!
//! # Ports
//! - `s_*`: the payload stream of MemOps frames (`s_tuser_size` >= 24 is
//!   guaranteed upstream and not used) and `s_tret`, the request's return
//!   address ([`Ret::words`](crate::wire::Ret::words)).
//! - `mo_*`: `memops`' ports (`req_*` in, `out_*` issued, `cin_*`
//!   completions in, `cout_*` completions out, `mir_ready`), with the
//!   `memops` names after the `mo_` prefix.
//! - `pool_*`: the AVM pool's consumer ports (`req_*`) and responses
//!   (`resp_*`), with the pool's names after the `pool_` prefix.
//! - `h_*`: the completion's frame metadata for a framer.
//!
//! # Behaviour
//! State: `pkt` (inside a frame, after its first beat), `txn` (a
//! transaction is open), `ret` (its return address), `busy` (a request is
//! at the pool) with its switch tag, and the completion held for `memops`
//! (`hold`: valid, switch tag, status, data). Each cycle:
//! - **Requests.** `mo_req_valid = s_tvalid && !pkt && !txn`, its fields
//!   from the beat (byte 0 requester, 1 opcode, 2 length, 3 tag, 8..16
//!   address, 16..24 data, little-endian, each field the low bits of its
//!   bytes); `s_tready = pkt || (!txn && mo_req_ready)`. A taken beat sets
//!   `pkt = !s_tlast`; a taken first beat opens the transaction (`txn`,
//!   `ret = s_tret`). `h_valid && h_ready` closes it (in the same cycle a
//!   first beat cannot be taken, since `txn` is still set).
//! - **Issue.** `ready = !busy && !hold.valid`; `mo_out_ready =
//!   ready ? pool_req_ready : 0`; a request issues when `mo_out_valid`,
//!   `ready` and its destination's `pool_req_ready` hold. A non-atomic one
//!   goes to consumer `mo_out_dst` (`pool_req_valid` its one-hot bit,
//!   `pool_req_write` that bit when the opcode is write, whether or not it
//!   issues) and sets `busy`; an atomic (opcode 2) goes nowhere and is held
//!   at once as an ERROR completion with data 0. `pool_req_addr` is four
//!   copies of address bits 10:2, `pool_req_wdata` four copies of the low
//!   data word, in every cycle.
//! - **Responses.** `pool_resp_valid` clears `busy` and holds a completion
//!   under the issued switch tag: DENIED on `pool_resp_fault`, else OK,
//!   with `pool_resp_data` as its low data word.
//! - **Completions into memops.** `mo_cin_*` is the held completion
//!   (`mo_cin_dh = 0`); it is released when `mo_cin_ready`.
//!   `mo_mir_ready = 1`.
//! - **Completions out.** `h_valid = mo_cout_valid`, `mo_cout_ready =
//!   h_ready`; `h_app` the 16-byte payload (requester, tag, status, five
//!   zero bytes, data low and high words little-endian); `h_dmac`, `h_dip`,
//!   `h_dport`, `h_host` from `ret`.
//!
//! Every output is combinational from the state and this cycle's inputs;
//! nothing waits a cycle except what the state holds.

use crate::dut::Dut;

/// Status: done.
pub const ST_OK: u8 = 0;
/// Status: refused (the pool faulted).
pub const ST_DENIED: u8 = 1;
/// Status: error (an atomic: the pool has none).
pub const ST_ERROR: u8 = 2;
/// Opcode of a write.
pub const OP_WRITE: u8 = 1;
/// Opcode of an atomic add.
pub const OP_ATOMIC: u8 = 2;

crate::ports! {
    /// Inputs of the MemOps port.
    pub struct MemopsPortIn {
        /// Payload beat.
        pub s_tdata: [u32; 16] = 512,
        /// Last beat.
        pub s_tlast: bool = 1,
        /// Beat valid.
        pub s_tvalid: bool = 1,
        /// Payload bytes.
        pub s_tuser_size: u16 = 16,
        /// Return address words.
        pub s_tret: [u32; 4] = 97,
        /// `memops` takes the request.
        pub mo_req_ready: bool = 1,
        /// `memops` issues a request.
        pub mo_out_valid: bool = 1,
        /// Its destination.
        pub mo_out_dst: u8 = 2,
        /// Its opcode.
        pub mo_out_op: u8 = 2,
        /// Its address bits 31:0.
        pub mo_out_al: u32 = 32,
        /// Its switch tag.
        pub mo_out_stag: u8 = 4,
        /// Its data bits 31:0.
        pub mo_out_dl: u32 = 32,
        /// `memops` takes the completion.
        pub mo_cin_ready: bool = 1,
        /// `memops` completes a transaction.
        pub mo_cout_valid: bool = 1,
        /// Its requester port.
        pub mo_cout_dst: u8 = 2,
        /// Its tag.
        pub mo_cout_tag: u8 = 8,
        /// Its status.
        pub mo_cout_status: u8 = 2,
        /// Its data bits 31:0.
        pub mo_cout_dl: u32 = 32,
        /// Its data bits 63:32.
        pub mo_cout_dh: u32 = 32,
        /// Per consumer: the pool takes a request.
        pub pool_req_ready: u8 = 4,
        /// The pool responds.
        pub pool_resp_valid: bool = 1,
        /// Fault.
        pub pool_resp_fault: bool = 1,
        /// Read data.
        pub pool_resp_data: u32 = 32,
        /// The framer takes the completion.
        pub h_ready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the MemOps port.
    pub struct MemopsPortOut {
        /// Beat taken.
        pub s_tready: bool = 1,
        /// Request valid.
        pub mo_req_valid: bool = 1,
        /// Requester port.
        pub mo_req_src: u8 = 2,
        /// Opcode.
        pub mo_req_op: u8 = 2,
        /// Address bits 31:0.
        pub mo_req_al: u32 = 32,
        /// Address bits 63:32.
        pub mo_req_ah: u32 = 32,
        /// Length.
        pub mo_req_len: u8 = 4,
        /// Tag.
        pub mo_req_tag: u8 = 8,
        /// Data bits 31:0.
        pub mo_req_dl: u32 = 32,
        /// Data bits 63:32.
        pub mo_req_dh: u32 = 32,
        /// Per destination: the issued request is taken.
        pub mo_out_ready: u8 = 4,
        /// Completion into `memops` valid.
        pub mo_cin_valid: bool = 1,
        /// Its switch tag.
        pub mo_cin_stag: u8 = 4,
        /// Its status.
        pub mo_cin_status: u8 = 2,
        /// Its data bits 31:0.
        pub mo_cin_dl: u32 = 32,
        /// Its data bits 63:32.
        pub mo_cin_dh: u32 = 32,
        /// The completion is taken.
        pub mo_cout_ready: bool = 1,
        /// Mirrored headers are taken.
        pub mo_mir_ready: bool = 1,
        /// Per consumer: a request.
        pub pool_req_valid: u8 = 4,
        /// Per consumer: it writes.
        pub pool_req_write: u8 = 4,
        /// Per consumer: virtual word.
        pub pool_req_addr: u64 = 36,
        /// Per consumer: write data.
        pub pool_req_wdata: [u32; 4] = 128,
        /// A completion for the framer.
        pub h_valid: bool = 1,
        /// Destination MAC.
        pub h_dmac: u64 = 48,
        /// Destination IP.
        pub h_dip: u32 = 32,
        /// Destination UDP port.
        pub h_dport: u16 = 16,
        /// On the host port.
        pub h_host: bool = 1,
        /// The 16-byte completion payload.
        pub h_app: [u32; 4] = 128,
    }
}

/// The 16-byte completion payload of docs/wire.md as `h_app` words:
/// requester, tag, status, five zero bytes, 8 data bytes little-endian.
pub fn completion_words(dst: u8, tag: u8, status: u8, dl: u32, dh: u32) -> [u32; 4] {
    [
        (dst & 3) as u32 | (tag as u32) << 8 | ((status & 3) as u32) << 16,
        0,
        dl,
        dh,
    ]
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Hold {
    valid: bool,
    stag: u8,
    status: u8,
    dl: u32,
}

/// The MemOps port, cycle by cycle.
#[derive(Clone, Debug, Default)]
pub struct MemopsPortModel {
    pkt: bool,
    txn: bool,
    ret: [u32; 4],
    busy: bool,
    stag: u8,
    hold: Hold,
    inputs: MemopsPortIn,
}

fn byte(d: &[u32; 16], i: usize) -> u8 {
    (d[i / 4] >> (8 * (i % 4))) as u8
}

impl MemopsPortModel {
    /// Idle: no transaction open.
    pub fn new() -> Self {
        Self::default()
    }

    fn ready(&self) -> bool {
        !self.busy && !self.hold.valid
    }

    fn onehot(&self) -> u8 {
        1 << (self.inputs.mo_out_dst & 3)
    }

    fn issue(&self) -> bool {
        let i = &self.inputs;
        i.mo_out_valid && self.ready() && i.pool_req_ready & self.onehot() != 0
    }

    fn outputs(&self) -> MemopsPortOut {
        let i = &self.inputs;
        let d = &i.s_tdata;
        let onehot = self.onehot();
        let atomic = i.mo_out_op & 3 == OP_ATOMIC;
        let word = ((i.mo_out_al >> 2) & 0x1ff) as u64;
        MemopsPortOut {
            s_tready: self.pkt || (!self.txn && i.mo_req_ready),
            mo_req_valid: i.s_tvalid && !self.pkt && !self.txn,
            mo_req_src: byte(d, 0) & 3,
            mo_req_op: byte(d, 1) & 3,
            mo_req_al: d[2],
            mo_req_ah: d[3],
            mo_req_len: byte(d, 2) & 0xf,
            mo_req_tag: byte(d, 3),
            mo_req_dl: d[4],
            mo_req_dh: d[5],
            mo_out_ready: if self.ready() {
                i.pool_req_ready & 0xf
            } else {
                0
            },
            mo_cin_valid: self.hold.valid,
            mo_cin_stag: self.hold.stag,
            mo_cin_status: self.hold.status,
            mo_cin_dl: self.hold.dl,
            mo_cin_dh: 0,
            mo_cout_ready: i.h_ready,
            mo_mir_ready: true,
            pool_req_valid: if self.issue() && !atomic { onehot } else { 0 },
            pool_req_write: if i.mo_out_op & 3 == OP_WRITE {
                onehot
            } else {
                0
            },
            pool_req_addr: word | word << 9 | word << 18 | word << 27,
            pool_req_wdata: [i.mo_out_dl; 4],
            h_valid: i.mo_cout_valid,
            h_dmac: self.ret[0] as u64 | ((self.ret[1] & 0xffff) as u64) << 32,
            h_dip: self.ret[1] >> 16 | (self.ret[2] & 0xffff) << 16,
            h_dport: (self.ret[2] >> 16) as u16,
            h_host: self.ret[3] & 1 != 0,
            h_app: completion_words(
                i.mo_cout_dst,
                i.mo_cout_tag,
                i.mo_cout_status,
                i.mo_cout_dl,
                i.mo_cout_dh,
            ),
        }
    }
}

impl Dut for MemopsPortModel {
    type In = MemopsPortIn;
    type Out = MemopsPortOut;

    fn eval(&mut self, inputs: &MemopsPortIn) -> MemopsPortOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let o = self.outputs();
        let issue = self.issue();
        // Requests: the frame's first beat opens the transaction, its
        // completion's hand-over closes it.
        if o.h_valid && i.h_ready {
            self.txn = false;
        }
        if i.s_tvalid && o.s_tready {
            if !self.pkt {
                self.txn = true;
                self.ret = i.s_tret;
                self.ret[3] &= 1;
            }
            self.pkt = !i.s_tlast;
        }
        // The pool and the held completion; the release is last (it wins,
        // as in the RTL, though a response never meets a held completion).
        let mut hold = self.hold.clone();
        if issue {
            if i.mo_out_op & 3 == OP_ATOMIC {
                hold = Hold {
                    valid: true,
                    stag: i.mo_out_stag & 0xf,
                    status: ST_ERROR,
                    dl: 0,
                };
            } else {
                self.busy = true;
                self.stag = i.mo_out_stag & 0xf;
            }
        }
        if i.pool_resp_valid {
            self.busy = false;
            hold = Hold {
                valid: true,
                stag: self.stag,
                status: if i.pool_resp_fault { ST_DENIED } else { ST_OK },
                dl: i.pool_resp_data,
            };
        }
        if self.hold.valid && i.mo_cin_ready {
            hold.valid = false;
        }
        self.hold = hold;
    }

    fn witness(&self) -> &str {
        "model"
    }
}
