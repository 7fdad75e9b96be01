//! Record packing (`docs/wire.md`, "Key-value records"): the key-value
//! engine's record beats packed into record frames of up to `max` records,
//! handed to the framer as a 16-byte header (`h_app`), a body length and
//! body beats. [`RecPackModel`] is the cycle-accurate specification of
//! `weft_hdl::rec_pack::RecPack`.
//!
//! # Input
//! Exactly `kv_agg`'s record output: every beat is a packet of its own;
//! lane `i` (bits `64i+63:64i`) holds a record (key in the low 32 bits,
//! partial sum in the high 32) when `s_tkeep` bit `i` is set; `s_tuser` is
//! 2 for flush records, 3 for the flush-done beat (its lanes are ignored)
//! and anything else (1) for spilled records.
//!
//! # Frames
//! Records keep their order. A frame holds records of one class (spill or
//! flush) and at most `mx` of them, where `mx` is `max` with 0 read as 1
//! and values above [`KV_MAX_RECORDS`] (1119) read as 1119. Record `j` of a
//! frame is in lane `j mod 8` of its body beat `j / 8`; lanes past the
//! frame's last record are zero. The header: byte 0 version 1, byte 1
//! flags `0x10` RECORDS, plus `0x04` FLUSH for flush records and `0x08`
//! FIN on the frame that ends a flush, bytes 2..4 the count `n`, 4..6 the
//! job (`job` when the frame was closed), 6..8 `0xffff`, 8..12 the
//! sequence number, 12..16 zero, all little-endian; `h_blen = 8n`.
//!
//! # Cycle by cycle
//! State: the open frame (`n` records, 0 when none is open; its class; its
//! partial beat; `age`, the cycles since its first record was taken),
//! `skip` (records of the waiting input beat already taken), the frame
//! buffer ([`BUF_BEATS`] beats, one kept free to tell full from empty;
//! pointers `wr` and `rd`; the RAMs' read registers; the address of the
//! last cycle's write), a queue of up to [`DESCRIPTORS`] closed frames, and
//! `seq` with the sequence state of the frame being shown.
//!
//! Each cycle does at most one of: **close** a frame, or **take** records.
//! With `k` the input beat's records (0 for a flush-done beat) and
//! `rem = k - skip` those not yet taken, a close is due when the input beat
//! is a flush-done beat, or a frame is open and (a) `n >= mx`, (e)
//! `age >= wait_cycles`, or the input beat has records left and (c) they
//! are of the other class or (b) they do not fit (`n + rem > mx`). The
//! close is then:
//! - for a flush-done beat and an open flush frame: that frame, with FIN;
//!   the flush-done beat is taken with it;
//! - for a flush-done beat and no open frame: an empty frame (`n = 0`,
//!   FLUSH|FIN); the flush-done beat is taken with it;
//! - otherwise (an open spill frame before a flush-done beat included, which
//!   then waits a cycle): the open frame as it is.
//!
//! A close needs a free descriptor and, when the frame's last beat is
//! partial (`n mod 8 != 0`), a free buffer slot to write it to; without
//! them the cycle does nothing. It pushes the descriptor {n, FLUSH, FIN,
//! job, end}, `end` being the buffer address after the frame's last beat.
//!
//! With no close due, a valid record beat is taken: all `rem` of its
//! records, except that a beat with more records than fit an empty frame
//! (`rem > mx`, so `mx < 8`) gives its next `mx` records and stays at the
//! input (`s_tready` low, `skip += mx`) until the rest fit. The records
//! extend the partial beat; when it fills, it is written to the buffer
//! (which then needs a free slot, else the cycle does nothing) and the
//! overflow starts the next one. A beat with no records is taken and
//! changes nothing. The first record of a frame sets the frame's class and
//! `age = 1` for the next cycle; `age` counts every cycle (saturating), so
//! rule (e) closes a frame whose first record was taken in cycle `t` in
//! cycle `t + max(wait_cycles, 1)` at the earliest.
//!
//! # Output
//! `h_valid` while a descriptor is queued; `h_app`, `h_blen` show the head
//! descriptor. `m_tvalid` while the head frame has body beats left
//! (`rd != end`) and the beat at `rd` was not written at the last clock
//! edge; `m_tdata` is the RAMs' read register, which at every edge reads
//! slot `rd_next` (`rd + 1` after a body beat was taken, else `rd`) before
//! that edge's write. `h_ready` counts only when the frame has no body
//! beats left after this cycle's (`rd_next == end`): the header is then
//! accepted (`ev_frame`) and the descriptor leaves. So a framer that takes
//! the body and raises `h_ready` with the last beat (or keeps it high) gets
//! frames back to back, and an early `h_ready` loses nothing. A frame takes
//! the sequence number `seq` in the first cycle its header is shown (`seq`
//! then counts up, wrapping) and keeps it until accepted; `seq_we` writes
//! `seq` (winning over the count).
//!
//! Latency: a frame's header is shown the cycle after its close, its first
//! body beat then too, or a cycle later when that beat was written at the
//! close (a one-beat frame with a partial beat).
//!
//! The buffer starts zeroed, so even the don't-care outputs agree between
//! witnesses (`h_app` and `h_blen` show the descriptor queue's head slot
//! when it is empty, as the RTL's FIFO does).
//!
//! The timer input is `wait_cycles` (`net.PACK_WAIT`), not `wait`, which is
//! a Verilog keyword.

use crate::dut::Dut;
use crate::fifo4::Fifo4;
use crate::wire::KV_MAX_RECORDS;

/// Beats of the frame buffer.
pub const BUF_BEATS: usize = 256;
/// Closed frames the descriptor queue holds.
pub const DESCRIPTORS: usize = crate::fifo4::DEPTH;

crate::ports! {
    /// Inputs of the record packer.
    pub struct RecPackIn {
        /// Record beat.
        pub s_tdata: [u32; 16] = 512,
        /// Lanes holding a record.
        pub s_tkeep: u8 = 8,
        /// Kind: 1 spill, 2 flush, 3 flush done.
        pub s_tuser: u8 = 2,
        /// Beat valid.
        pub s_tvalid: bool = 1,
        /// Records per frame.
        pub max: u16 = 11,
        /// Cycles a frame's first record may wait.
        pub wait_cycles: u32 = 20,
        /// Job id.
        pub job: u16 = 16,
        /// Write `seq`.
        pub seq_we: bool = 1,
        /// The value written.
        pub seq_wdata: u32 = 32,
        /// The framer is done with the head frame.
        pub h_ready: bool = 1,
        /// The framer takes the body beat.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the record packer.
    pub struct RecPackOut {
        /// The packer takes the input beat.
        pub s_tready: bool = 1,
        /// The next frame's sequence number.
        pub seq: u32 = 32,
        /// A frame is ready.
        pub h_valid: bool = 1,
        /// The frame's 16-byte header.
        pub h_app: [u32; 4] = 128,
        /// Body bytes.
        pub h_blen: u16 = 16,
        /// Body beat.
        pub m_tdata: [u32; 16] = 512,
        /// Body beat valid.
        pub m_tvalid: bool = 1,
        /// A frame's header was accepted.
        pub ev_frame: bool = 1,
    }
}

/// Records per frame for a `max` input value.
pub fn effective_max(max: u16) -> u16 {
    match max & 0x7ff {
        0 => 1,
        m => m.min(KV_MAX_RECORDS as u16),
    }
}

/// The header of a record frame: `n` records, `flush`/`fin` flags, `job`,
/// sequence number `seq` (byte `i` in bits `8i+7:8i`).
pub fn header(n: u16, flush: bool, fin: bool, job: u16, seq: u32) -> [u32; 4] {
    let flags = 0x10 | (flush as u32) << 2 | (fin as u32) << 3;
    [
        1 | flags << 8 | (n as u32) << 16,
        job as u32 | 0xffff << 16,
        seq,
        0,
    ]
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Desc {
    n: u16,
    /// Bit 0 FLUSH, bit 1 FIN.
    fl: u8,
    end: u8,
    job: u16,
}

/// What a cycle does, from the state and the inputs.
struct Step {
    s_tready: bool,
    close: bool,
    fin: bool,
    take: bool,
    fits: bool,
    t: u16,
    beat_full: bool,
    write: bool,
    wdata: [u64; 8],
    cur: [u64; 8],
    nxt: [u64; 8],
    m_tvalid: bool,
    accept: bool,
    rd_next: u8,
    h_seq: u32,
}

/// The record packer, cycle by cycle.
#[derive(Clone, Debug)]
pub struct RecPackModel {
    n: u16,
    flush: bool,
    part: [u64; 8],
    age: u32,
    skip: u8,
    buf: Vec<[u64; 8]>,
    out: [u64; 8],
    wr: u8,
    rd: u8,
    lw: Option<u8>,
    /// The descriptor queue: `Fifo4`s pushed and popped together in the
    /// RTL, whose stale head `h_app` and `h_blen` show.
    desc: Fifo4<Desc>,
    seq: u32,
    cur_seq: u32,
    presented: bool,
    inputs: RecPackIn,
}

impl Default for RecPackModel {
    fn default() -> Self {
        Self::new()
    }
}

fn lanes_to_words(l: &[u64; 8]) -> [u32; 16] {
    std::array::from_fn(|w| (l[w / 2] >> (32 * (w % 2))) as u32)
}

fn words_to_lanes(d: &[u32; 16]) -> [u64; 8] {
    std::array::from_fn(|i| d[2 * i] as u64 | (d[2 * i + 1] as u64) << 32)
}

impl RecPackModel {
    /// Idle and empty; `seq` 0.
    pub fn new() -> Self {
        Self {
            n: 0,
            flush: false,
            part: [0; 8],
            age: 0,
            skip: 0,
            buf: vec![[0; 8]; BUF_BEATS],
            out: [0; 8],
            wr: 0,
            rd: 0,
            lw: None,
            desc: Fifo4::default(),
            seq: 0,
            cur_seq: 0,
            presented: false,
            inputs: RecPackIn::default(),
        }
    }

    fn step(&self) -> Step {
        let i = &self.inputs;
        let mx = effective_max(i.max);
        let tuser = i.s_tuser & 3;
        let done = tuser == 3;
        let bflush = tuser == 2;
        let keep = i.s_tkeep;
        let pre = |l: usize| (keep & ((1u16 << l) - 1) as u8).count_ones() as u8;
        let k = if done { 0 } else { keep.count_ones() as u8 };
        let rem = k.saturating_sub(self.skip);
        let open = self.n != 0;
        let o = (self.n & 7) as u8;
        let room_left = mx.wrapping_sub(self.n) & 0x7ff;
        let fits = rem as u16 <= room_left;
        let t = if fits { rem as u16 } else { room_left & 0xf };
        let ot = (o as u16 + t) & 0xf;
        let beat_full = ot >= 8;
        let desc_room = self.desc.count() < DESCRIPTORS;
        let buf_room = self.wr.wrapping_add(1) != self.rd;
        let wait = i.wait_cycles & 0xf_ffff;

        let rec_beat = i.s_tvalid && !done && rem != 0;
        let done_due = i.s_tvalid && done;
        let want_close = done_due
            || open
                && (self.n >= mx
                    || self.age >= wait
                    || rec_beat && (self.flush != bflush || !fits));
        let fin = done_due && (!open || self.flush);
        let can_close = desc_room && (o == 0 || buf_room);
        let close = want_close && can_close;
        let take = !want_close && i.s_tvalid && !done && (!beat_full || buf_room);

        // Input lane l goes to lane pre(l) + o - skip (mod 8).
        let lanes = words_to_lanes(&i.s_tdata);
        let r = o.wrapping_sub(self.skip) & 7;
        let mut rot = [0u64; 8];
        for (l, lane) in lanes.iter().enumerate() {
            if keep >> l & 1 != 0 {
                rot[((pre(l) + r) & 7) as usize] = *lane;
            }
        }
        let cur: [u64; 8] = std::array::from_fn(|j| {
            if (j as u8) < o {
                self.part[j]
            } else if (j as u16) < ot {
                rot[j]
            } else {
                0
            }
        });
        let nxt: [u64; 8] = std::array::from_fn(|j| if j as u16 + 8 < ot { rot[j] } else { 0 });
        let write = close && o != 0 || take && beat_full;

        let head = *self.desc.head();
        let hv = self.desc.count() != 0;
        let m_tvalid = hv && self.rd != head.end && self.lw != Some(self.rd);
        let pop = m_tvalid && i.m_tready;
        let rd_next = if pop {
            self.rd.wrapping_add(1)
        } else {
            self.rd
        };
        let accept = hv && i.h_ready && rd_next == head.end;
        Step {
            s_tready: close && fin || take && fits,
            close,
            fin,
            take,
            fits,
            t,
            beat_full,
            write,
            wdata: if close { self.part } else { cur },
            cur,
            nxt,
            m_tvalid,
            accept,
            rd_next,
            h_seq: if self.presented {
                self.cur_seq
            } else {
                self.seq
            },
        }
    }

    fn outputs(&self, s: &Step) -> RecPackOut {
        let head = *self.desc.head();
        RecPackOut {
            s_tready: s.s_tready,
            seq: self.seq,
            h_valid: self.desc.count() != 0,
            h_app: header(
                head.n,
                head.fl & 1 != 0,
                head.fl & 2 != 0,
                head.job,
                s.h_seq,
            ),
            h_blen: head.n << 3,
            m_tdata: lanes_to_words(&self.out),
            m_tvalid: s.m_tvalid,
            ev_frame: s.accept,
        }
    }
}

impl Dut for RecPackModel {
    type In = RecPackIn;
    type Out = RecPackOut;

    fn eval(&mut self, inputs: &RecPackIn) -> RecPackOut {
        self.inputs = inputs.clone();
        let s = self.step();
        self.outputs(&s)
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let s = self.step();
        let open = self.n != 0;
        let hv = self.desc.count() != 0;

        // The RAMs read before this edge's write.
        self.out = self.buf[s.rd_next as usize];
        self.rd = s.rd_next;
        self.lw = None;
        if s.write {
            self.buf[self.wr as usize] = s.wdata;
            self.lw = Some(self.wr);
            self.wr = self.wr.wrapping_add(1);
        }

        if self.age != 0xf_ffff {
            self.age += 1;
        }
        let closed = s.close.then_some(Desc {
            n: self.n,
            fl: if s.fin {
                3
            } else {
                (self.flush || !open) as u8
            },
            end: self.wr,
            job: i.job,
        });
        self.desc.edge(closed, s.accept);
        if s.close {
            self.n = 0;
            self.part = [0; 8];
        }
        if s.take {
            self.n = (self.n + s.t) & 0x7ff;
            self.part = if s.beat_full { s.nxt } else { s.cur };
            if !open && s.t != 0 {
                self.flush = i.s_tuser & 3 == 2;
                self.age = 1;
            }
            self.skip = if s.fits {
                0
            } else {
                (self.skip + s.t as u8) & 7
            };
        }

        self.cur_seq = s.h_seq;
        if hv && !self.presented {
            self.seq = self.seq.wrapping_add(1);
        }
        self.presented = hv && !s.accept;
        if i.seq_we {
            self.seq = i.seq_wdata;
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}
