//! The MemOps port cycle by cycle: the specification
//! `weft_hdl::memops::Memops<K>` matches on every output of every cycle
//! (`sim/tests/memops.rs`). State is named after the RTL's registers; every
//! decision about a request is the transaction model's ([`Stage::matches`],
//! [`Action::apply`](super::Action::apply), [`decide`] with [`Range::permits`]), so this module
//! only adds when things happen.
//!
//! # Pipeline
//!
//! A request accepted on cycle `t` (`req_valid` while `req_ready`) moves one
//! register per cycle on which the pipeline's enable `en` is high:
//!
//! - **cycle t, input register.** At the edge the header is latched into
//!   `in_*` with the malformed check `in_bad` (length 0 or over 8, bytes
//!   crossing an 8-byte word, opcode 3, or `CTRL.ENABLE` clear: a disabled
//!   port still takes every request and completes it with an error).
//! - **cycle t + 1 + j, stage j (j = 0..K).** Stage `j` matches the header
//!   as the stages before it left it ([`Stage::matches`] on its program
//!   words, skipped for a malformed or blocked request) and at the edge
//!   latches it into its transaction register `q_*`, transformed by its
//!   action ([`Action::apply`](super::Action::apply): route, remap, mirror, reduce-on-write and
//!   block set the [`Marks`] that travel with the header); a count action
//!   adds to the stage's counters at that edge.
//! - **cycle t + K + 1, decision.** The last stage's register is checked:
//!   a malformed request is an error, else [`decide`] with the protection
//!   table ([`Range::permits`] on the address as remapped — after every
//!   stage, so no program can get past it). An issued request appears on
//!   `out_*` under the highest free switch tag `out_stag` and leaves at the
//!   edge if its destination's `out_ready` bit is set; the others are
//!   completed by the port: `(requester, tag, status)` is pushed into the
//!   4-entry local completion FIFO `lf`. A request some stage mirrored is
//!   copied to the mirror register at the same edge.
//!
//! With the enable high throughout, a request therefore leaves exactly
//! `K + 1` cycles after it was accepted; every cycle the enable is low in
//! between adds one. One request header is accepted per cycle.
//!
//! A bubble (no request taken, or an empty register before a stage) moves
//! only the valid bit: `in_*` and each stage's `q_*` keep the header of
//! their last transaction (a clock enable in the RTL), and the ports that
//! show them (`out_*` with `out_valid` low) show that header.
//!
//! # One enable
//!
//! `en = !fin_v | (issue & dst_ready & any_free) | (is_local & lf not full)`,
//! where `fin_v` is the last stage's valid bit: the last stage retires its
//! request, or holds it and with it every register behind it (`in_*` and
//! all `q_*`), and `req_ready` is `en`. A destination refusing the request at
//! the head, a full switch-tag table or a full `lf` stalls the whole port
//! (head-of-line blocking); nothing else does.
//!
//! # Switch tags
//!
//! Sixteen entries `tag_v`/`tag_src`/`tag_tag`. The free entry offered
//! (`out_stag`) is the highest-numbered one not valid (0 when none is, and
//! on a cycle with no request in the last stage, where none is looked for). An
//! issue that leaves takes it, recording the requester's port and tag. A
//! destination completion (`cin_*`) finds its entry by `cin_stag`, is passed
//! through to `cout_*` in the same cycle with that port and tag, and frees
//! the entry at the edge where it is taken (`cin_ready` is `cout_ready`); a
//! completion frees its entry even when an issue takes the same entry at
//! the same edge. `OUTSTANDING` reads the number of valid entries.
//!
//! # Completions to requesters
//!
//! A destination completion offered (`cin_valid`) owns `cout_*`; when none
//! is, the head of `lf` is offered with data 0, so the port's own
//! completions leave in the order they were decided, after any destination
//! completion offered on the same cycle. While `lf` is empty its stale head
//! still drives `cout_dst`, `cout_tag` and `cout_status` (with
//! `cout_valid` low), as the RTL's FIFO memory does.
//!
//! # Mirror
//!
//! A one-deep register `mir_q` with the header fields. At the decision edge
//! of a mirrored request the `mirrored` counter counts it; the header is
//! loaded if the register is empty or the telemetry port takes the old one
//! (`mir_ready`) at that edge, else it is dropped and `mirror drops`
//! counts it.
//!
//! # Registers
//!
//! The engine register port is read combinationally (`eng_rdata` in the
//! cycle `eng_raddr` is presented with `eng_re`; 0 without it) and written
//! at the edge. `CTRL` (strobe
//! 0), `PROG_ADDR` (bits 7:0, strobe 0) and `TEL_SEL` (bits 7:0, strobe 0)
//! are plain registers, read back as written. A `PROG_DATA` write stores its word (whatever the
//! strobes) at `PROG_ADDR` and advances `PROG_ADDR`, wrapping at 256; a
//! stage keeps the 11 words of its layout ([`STAGE_WORDS_KEPT`]), a
//! protection entry its 5 ([`ENTRY_WORDS_KEPT`]), and the image words
//! nothing keeps (the rest of each 16- or 8-word slot, stages `K..8`) read
//! 0. A written word takes effect from the next cycle: a request a stage
//! sees in the cycle of the write meets the old word. `PROG_DATA` reads the
//! word at `PROG_ADDR`.
//!
//! Telemetry: `TEL_SEL` picks a counter (per stage transactions, per stage
//! bytes, then issued, blocked, denied, errors, mirrored, mirror drops;
//! any other number reads 0). `TEL_LO` reads its bits 31:0, and a read of it
//! with `eng_re` latches bits 63:32 — as they were before this cycle's
//! increment — for `TEL_HI`. Writing 1 to `TEL_CLEAR` (strobe 0) clears
//! every counter and latched word at the edge, winning over that edge's
//! increments. `GEOMETRY` is constant; every other address reads 0.

use super::driver::{MemIn, MemOut};
use super::model::{decide, Marks};
use super::program::{Range, Stage};
use super::{Op, Request, Status, PORTS, RANGES, STAGES, TAGS};
use crate::dut::Dut;
use crate::fifo4::Fifo4;
use weft_regs::memops as regs;

/// Program words a stage keeps: control, match range, remap offset and
/// target range.
pub const STAGE_WORDS_KEPT: usize = 11;
/// Program words a protection entry keeps: range and permissions.
pub const ENTRY_WORDS_KEPT: usize = 5;
/// Entries of the local completion FIFO `lf`.
pub const LF_DEPTH: usize = crate::fifo4::DEPTH;
/// Global counters, after the stage counters in `TEL_SEL` order.
pub const GLOBAL_COUNTERS: usize = 6;

/// Global counters by index (`TEL_SEL` = `2 K` + index).
mod global {
    pub const ISSUED: usize = 0;
    pub const BLOCKED: usize = 1;
    pub const DENIED: usize = 2;
    pub const ERRORS: usize = 3;
    pub const MIRRORED: usize = 4;
    pub const MIRROR_DROPS: usize = 5;
}

/// A transaction register: the input register `in_*` (no marks yet) or a
/// stage's `q_*`. Fields are the RTL's, raw: a malformed request keeps its
/// length and opcode as they came.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Txn {
    v: bool,
    src: u8,
    op: u8,
    addr: u64,
    len: u8,
    tag: u8,
    data: u64,
    /// `q_dst`/`q_has_dst`, `q_error`, `q_mirror`, `q_blocked`.
    marks: Marks,
    bad: bool,
}

impl Txn {
    /// The header as a request, when the opcode is one.
    fn request(&self) -> Option<Request> {
        Some(Request {
            src: self.src,
            op: Op::from_code(self.op)?,
            addr: self.addr,
            len: self.len,
            tag: self.tag,
            data: self.data,
        })
    }

    /// `q_dst`: the route's port, 0 until a stage routes.
    fn dst(&self) -> u8 {
        self.marks.dst.unwrap_or(0)
    }
}

/// A 64-bit counter read as LO and a latched HI word (`Counter64`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Counter64 {
    value: u64,
    hi_latched: u32,
}

impl Counter64 {
    fn lo(&self) -> u32 {
        self.value as u32
    }

    /// One edge: the latch sees the HI word before the increment, and a
    /// clear wins over both.
    fn step(&mut self, inc: u32, clear: bool, latch: bool) {
        if latch {
            self.hi_latched = (self.value >> 32) as u32;
        }
        self.value = self.value.wrapping_add(inc as u64);
        if clear {
            *self = Counter64::default();
        }
    }
}

/// One operator stage (`MemopsStage`): its program words, its transaction
/// register and its counters.
#[derive(Clone, Debug, Default)]
struct StageRegs {
    words: [u32; STAGE_WORDS_KEPT],
    q: Txn,
    tx: Counter64,
    bytes: Counter64,
}

impl StageRegs {
    /// Whether the stage matches `x` this cycle.
    fn hit(&self, x: &Txn) -> Option<Stage> {
        if !x.v || x.bad || x.marks.blocked {
            return None;
        }
        let s = Stage::from_words(&self.words)?;
        let r = x.request()?;
        s.matches(r.src, r.op, r.addr).then_some(s)
    }

    /// `x` as this stage passes it on, and whether it counts it.
    fn transform(&self, x: &Txn) -> (Txn, bool) {
        let mut y = *x;
        let (Some(s), Some(mut r)) = (self.hit(x), x.request()) else {
            return (y, false);
        };
        let counted = s.action.apply(&mut r, &mut y.marks);
        y.addr = r.addr;
        y.op = r.op as u8;
        (y, counted)
    }
}

/// What the last stage's request comes to this cycle (combinational).
#[derive(Copy, Clone, Debug)]
struct Decision {
    /// `fin_*`: the last stage's register.
    fin: Txn,
    /// Issued to `fin.dst()`.
    issue: bool,
    /// `is_local`: completed by the port, with this status.
    local: Option<Status>,
    /// The highest free switch tag.
    free_idx: Option<usize>,
    /// Its destination takes a request this cycle.
    dst_ready: bool,
    /// The pipeline's enable.
    en: bool,
}

/// The MemOps port with `K` operator stages at the cycle level, as a
/// [`Dut`] on the ports of the RTL's `Memops<K>`.
#[derive(Clone, Debug)]
pub struct MemopsCycle {
    k: usize,
    ctrl_en: bool,
    prog_addr: u8,
    tel_sel: u8,
    /// `in_*`.
    input: Txn,
    stages: Vec<StageRegs>,
    entries: [[u32; ENTRY_WORDS_KEPT]; PORTS * RANGES],
    counters: [Counter64; GLOBAL_COUNTERS],
    tag_v: [bool; TAGS],
    tag_src: [u8; TAGS],
    tag_tag: [u8; TAGS],
    /// The local completion FIFO (`lf_dst`, `lf_tag`, `lf_status`: three
    /// `Fifo4`s pushed and popped together), as built, so its stale head
    /// is what the RTL shows too.
    lf: Fifo4<(u8, u8, u8)>,
    mir_q: bool,
    /// `mir_*_q`: the header fields of the mirror register.
    mir: Txn,
    last_in: MemIn,
}

impl MemopsCycle {
    /// A port with `k` stages out of reset: no program, disabled, every
    /// counter 0, every switch tag free.
    ///
    /// # Panics
    /// When `k` is not 1..=8: the RTL elaborates no other (the program
    /// image has room for 8 stages).
    pub fn new(k: usize) -> Self {
        assert!(
            (1..=STAGES).contains(&k),
            "memops: 1 to {STAGES} stages, not {k}"
        );
        Self {
            k,
            ctrl_en: false,
            prog_addr: 0,
            tel_sel: 0,
            input: Txn::default(),
            stages: vec![StageRegs::default(); k],
            entries: [[0; ENTRY_WORDS_KEPT]; PORTS * RANGES],
            counters: [Counter64::default(); GLOBAL_COUNTERS],
            tag_v: [false; TAGS],
            tag_src: [0; TAGS],
            tag_tag: [0; TAGS],
            lf: Fifo4::default(),
            mir_q: false,
            mir: Txn::default(),
            last_in: MemIn::default(),
        }
    }

    /// Switch tags in use (what `OUTSTANDING` reads).
    fn outstanding(&self) -> usize {
        self.tag_v.iter().filter(|&&v| v).count()
    }

    /// Whether destination `d`'s protection table permits `r`.
    fn permits(&self, d: u8, r: &Request) -> bool {
        self.entries[d as usize * RANGES..][..RANGES]
            .iter()
            .filter_map(|w| Range::from_words(w))
            .any(|e| e.permits(r.op, r.addr, r.len))
    }

    fn decision(&self, i: &MemIn) -> Decision {
        let fin = self.stages[self.k - 1].q;
        let verdict = match fin.request() {
            Some(r) if !fin.bad => decide(&fin.marks, |d| self.permits(d, &r)),
            _ => Err(Status::Error),
        };
        let issue = fin.v && verdict.is_ok();
        let local = verdict.err().filter(|_| fin.v);
        // Searched only with a request in the last stage (the RTL skips
        // the search otherwise; `out_stag` then shows 0).
        let free_idx = (0..TAGS).rev().find(|&t| !self.tag_v[t]).filter(|_| fin.v);
        let dst_ready = i.out_ready >> fin.dst() & 1 != 0;
        let en = !fin.v
            || (issue && dst_ready && free_idx.is_some())
            || (local.is_some() && self.lf.count() != LF_DEPTH);
        Decision {
            fin,
            issue,
            local,
            free_idx,
            dst_ready,
            en,
        }
    }

    /// The counter `TEL_SEL` = `sel` picks.
    fn counter(&self, sel: u8) -> Option<&Counter64> {
        let (s, k) = (sel as usize, self.k);
        if s < k {
            Some(&self.stages[s].tx)
        } else if s < 2 * k {
            Some(&self.stages[s - k].bytes)
        } else {
            self.counters.get(s - 2 * k)
        }
    }

    /// The program image word at `PROG_ADDR`, as far as it is kept.
    fn prog_word(&self) -> u32 {
        let a = self.prog_addr as usize;
        let kept = if a & 0x80 == 0 {
            self.stages
                .get(a >> 4 & 7)
                .and_then(|s| s.words.get(a & 0xf))
        } else {
            self.entries[a >> 3 & 0xf].get(a & 7)
        };
        kept.copied().unwrap_or(0)
    }

    fn read(&self, raddr: u16) -> u32 {
        let a = (raddr as u32) << 2;
        if a == regs::CTRL.addr {
            self.ctrl_en as u32
        } else if a == regs::PROG_ADDR.addr {
            self.prog_addr as u32
        } else if a == regs::PROG_DATA.addr {
            self.prog_word()
        } else if a == regs::TEL_SEL.addr {
            self.tel_sel as u32
        } else if a == regs::TEL_LO.addr {
            self.counter(self.tel_sel).map_or(0, Counter64::lo)
        } else if a == regs::TEL_HI.addr {
            self.counter(self.tel_sel).map_or(0, |c| c.hi_latched)
        } else if a == regs::GEOMETRY.addr {
            PORTS as u32 | (self.k as u32) << 8 | (RANGES as u32) << 16 | (TAGS as u32) << 24
        } else if a == regs::OUTSTANDING.addr {
            self.outstanding() as u32
        } else {
            0
        }
    }
}

/// The inputs as the RTL sees them: each port only as wide as it is.
fn masked(i: &MemIn) -> MemIn {
    MemIn {
        req_src: i.req_src & 3,
        req_op: i.req_op & 3,
        req_len: i.req_len & 0xf,
        out_ready: i.out_ready & 0xf,
        cin_stag: i.cin_stag & 0xf,
        cin_status: i.cin_status & 3,
        eng_raddr: i.eng_raddr & 0x3fff,
        eng_waddr: i.eng_waddr & 0x3fff,
        eng_wstrb: i.eng_wstrb & 0xf,
        ..i.clone()
    }
}

impl Dut for MemopsCycle {
    type In = MemIn;
    type Out = MemOut;

    fn eval(&mut self, inputs: &MemIn) -> MemOut {
        let i = masked(inputs);
        let d = self.decision(&i);
        let f = &d.fin;
        let (cout_dst, cout_tag, cout_status, cout_data) = if i.cin_valid {
            let t = i.cin_stag as usize;
            let data = i.cin_dl as u64 | (i.cin_dh as u64) << 32;
            (self.tag_src[t], self.tag_tag[t], i.cin_status, data)
        } else {
            let (dst, tag, status) = *self.lf.head();
            (dst, tag, status, 0)
        };
        let o = MemOut {
            req_ready: d.en,
            out_valid: d.issue && d.free_idx.is_some(),
            out_dst: f.dst(),
            out_op: f.op,
            out_al: f.addr as u32,
            out_ah: (f.addr >> 32) as u32,
            out_len: f.len,
            out_stag: d.free_idx.unwrap_or(0) as u8,
            out_dl: f.data as u32,
            out_dh: (f.data >> 32) as u32,
            cin_ready: i.cout_ready,
            cout_valid: i.cin_valid || self.lf.count() != 0,
            cout_dst,
            cout_tag,
            cout_status,
            cout_dl: cout_data as u32,
            cout_dh: (cout_data >> 32) as u32,
            mir_valid: self.mir_q,
            mir_src: self.mir.src,
            mir_op: self.mir.op,
            mir_al: self.mir.addr as u32,
            mir_ah: (self.mir.addr >> 32) as u32,
            mir_len: self.mir.len,
            mir_tag: self.mir.tag,
            eng_rdata: if i.eng_re { self.read(i.eng_raddr) } else { 0 },
        };
        self.last_in = i;
        o
    }

    fn tick(&mut self) {
        let i = std::mem::take(&mut self.last_in);
        let d = self.decision(&i);
        let f = d.fin;
        let k = self.k;
        let mut inc = [0u32; GLOBAL_COUNTERS];

        // Decision: issue under the free tag, or complete locally.
        let issued = d.issue && d.dst_ready && d.free_idx.is_some();
        if let Some(t) = d.free_idx.filter(|_| issued) {
            inc[global::ISSUED] = 1;
            self.tag_v[t] = true;
            self.tag_src[t] = f.src;
            self.tag_tag[t] = f.tag;
        }
        let local = d.local.filter(|_| d.en);
        if let Some(status) = local {
            let g = match status {
                Status::Denied if f.marks.blocked => global::BLOCKED,
                Status::Denied => global::DENIED,
                _ => global::ERRORS,
            };
            inc[g] = 1;
        }

        // Mirror register.
        let mir_load = f.v && d.en && f.marks.mirror;
        // The register frees at the edge its header is taken, in time for
        // the next one.
        let mir_free = !self.mir_q || i.mir_ready;
        if mir_load {
            inc[global::MIRRORED] = 1;
            if mir_free {
                self.mir = f;
            } else {
                inc[global::MIRROR_DROPS] = 1;
            }
        }
        self.mir_q = (self.mir_q && !i.mir_ready) || (mir_load && mir_free);

        // Completions to requesters: a destination's first, freeing its tag
        // (after an issue to the same tag, so it stays free).
        let cout_valid = i.cin_valid || self.lf.count() != 0;
        if i.cin_valid && i.cout_ready {
            self.tag_v[i.cin_stag as usize] = false;
        }
        let pop = !i.cin_valid && cout_valid && i.cout_ready;
        let push = local.map(|status| (f.src, f.tag, status as u8));
        self.lf.edge(push, pop);

        // The pipeline, last stage first so each sees its predecessor's
        // register as it was; stages count what they pass on.
        let mut counted = [None; STAGES];
        if d.en {
            for j in (0..k).rev() {
                let x = if j == 0 {
                    self.input
                } else {
                    self.stages[j - 1].q
                };
                // A bubble moves the valid bit alone: the payload holds
                // (the RTL's clock enable), and the ports show it.
                if x.v {
                    let (y, c) = self.stages[j].transform(&x);
                    self.stages[j].q = y;
                    counted[j] = c.then_some(x.len as u32);
                } else {
                    self.stages[j].q.v = false;
                }
            }
            // The input register likewise loads its header only with a
            // request.
            if i.req_valid {
                let bad = !self.ctrl_en
                    || Op::from_code(i.req_op).is_none_or(|op| {
                        !Request {
                            src: i.req_src,
                            op,
                            addr: i.req_al as u64,
                            len: i.req_len,
                            tag: 0,
                            data: 0,
                        }
                        .well_formed()
                    });
                self.input = Txn {
                    v: true,
                    src: i.req_src,
                    op: i.req_op,
                    addr: i.req_al as u64 | (i.req_ah as u64) << 32,
                    len: i.req_len,
                    tag: i.req_tag,
                    data: i.req_dl as u64 | (i.req_dh as u64) << 32,
                    marks: Marks::default(),
                    bad,
                };
            } else {
                self.input.v = false;
            }
        }

        // Registers. Reads first: a TEL_LO read latches before the edge's
        // increments and clear.
        let w = |r: &weft_regs::Register| i.eng_we && (i.eng_waddr as u32) << 2 == r.addr;
        let strobe0 = i.eng_wstrb & 1 != 0;
        let clear = w(&regs::TEL_CLEAR) && strobe0 && i.eng_wdata & 1 != 0;
        let latch_sel =
            (i.eng_re && (i.eng_raddr as u32) << 2 == regs::TEL_LO.addr).then_some(self.tel_sel);
        let latch = |sel: usize| latch_sel == Some(sel as u8);
        for (j, s) in self.stages.iter_mut().enumerate() {
            s.tx.step(counted[j].map_or(0, |_| 1), clear, latch(j));
            s.bytes.step(counted[j].unwrap_or(0), clear, latch(k + j));
        }
        for (g, c) in self.counters.iter_mut().enumerate() {
            c.step(inc[g], clear, latch(2 * k + g));
        }
        if w(&regs::PROG_DATA) {
            let a = self.prog_addr as usize;
            let word = if a & 0x80 == 0 {
                self.stages
                    .get_mut(a >> 4 & 7)
                    .and_then(|s| s.words.get_mut(a & 0xf))
            } else {
                self.entries[a >> 3 & 0xf].get_mut(a & 7)
            };
            if let Some(word) = word {
                *word = i.eng_wdata;
            }
            self.prog_addr = self.prog_addr.wrapping_add(1);
        }
        if w(&regs::CTRL) && strobe0 {
            self.ctrl_en = i.eng_wdata & 1 != 0;
        }
        if w(&regs::PROG_ADDR) && strobe0 {
            self.prog_addr = i.eng_wdata as u8;
        }
        if w(&regs::TEL_SEL) && strobe0 {
            self.tel_sel = i.eng_wdata as u8;
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "1 to 8 stages")]
    fn no_port_of_nine_stages() {
        MemopsCycle::new(9);
    }

    #[test]
    fn a_counter_latches_before_the_increment_and_a_clear_wins() {
        let mut c = Counter64 {
            value: 0xffff_ffff,
            hi_latched: 7,
        };
        c.step(1, false, true);
        assert_eq!((c.value, c.hi_latched), (1 << 32, 0));
        c.step(1, false, true);
        assert_eq!(c.hi_latched, 1);
        c.step(5, true, true);
        assert_eq!(c, Counter64::default());
    }
}
