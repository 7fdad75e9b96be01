//! Accelerator Virtual Memory (after NicOS): one on-chip pool of pages
//! shared by named consumers, with per-consumer translation, quotas and
//! reservations, arbitration of the pool's port, counters and latency
//! histograms read as one snapshot, and actions written through the map.
//!
//! The specification is `weft_model::avm::AvmModel` (cycle by cycle); this
//! block implements it for the build geometry below:
//! - four consumer ports, each with a 4-deep request queue (a request is
//!   stamped with the cycle it is taken, for the latency histogram);
//! - an arbiter granting one head per cycle: first come (oldest stamp) in
//!   the unmanaged mode, or the highest waiting priority class and weighted
//!   round-robin inside it (a pointer and its credit: DRR with unit-cost
//!   requests);
//! - translation through a 4 × 8 table of (valid, physical page) flops that
//!   only register commands write: an unmapped page is a fault that never
//!   reaches the RAM;
//! - one RAM of 16 pages × 64 words (one BRAM36), one access per cycle;
//!   responses leave two cycles after the grant, in grant order;
//! - GRANT (lowest free page, then zeroed through the RAM's port, one word a
//!   cycle, before any grant can reach it) and RECLAIM (a scan from the
//!   highest virtual page, one per cycle, announcing each page taken);
//! - 32-bit wrapping counters and log2 latency buckets per consumer, copied
//!   in one cycle into a snapshot that software reads word by word.

use crate::common::{konst, word_of, Fifo4, Fifo4Mem, Widen};
use rust_hdl::prelude::*;
use weft_regs::avm as regs;

/// Consumer ports.
pub const CONSUMERS: usize = 4;
/// Physical pages.
pub const PAGES: usize = 16;
/// log2 words per page.
pub const OFFSET_BITS: usize = 6;
/// Virtual pages per consumer.
pub const VPAGES: usize = 8;
/// Translation table entries.
const ENTRIES: usize = CONSUMERS * VPAGES;
/// Counter words per consumer in the snapshot.
const PER: usize = regs::SNAP_PER_CONSUMER as usize;
/// Latency buckets.
const BUCKETS: usize = 16;
/// Histogram counters.
const HISTS: usize = CONSUMERS * BUCKETS;
/// The GEOMETRY register.
const GEOMETRY: u64 = CONSUMERS as u64
    | (PAGES as u64) << 8
    | (OFFSET_BITS as u64) << 16
    | (VPAGES as u64) << 20
    | 4 << 28;

/// Command engine states.
const IDLE: u64 = 0;
const ZERO: u64 = 1;
const RECLAIM: u64 = 2;

/// Result codes (`STATUS.RESULT`).
const R_OK: u64 = 0;
const R_QUOTA: u64 = 1;
const R_FULL: u64 = 2;
const R_PAGE: u64 = 3;
const R_BUSY: u64 = 4;
const R_LIMITS: u64 = 5;
const R_OP: u64 = 6;

/// The pool.
#[derive(LogicBlock)]
pub struct Avm {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Per consumer: a request is offered.
    pub req_valid: Signal<In, Bits<4>>,
    /// Per consumer: the request writes.
    pub req_write: Signal<In, Bits<4>>,
    /// Per consumer `c`: virtual word address, bits `9c+8:9c`.
    pub req_addr: Signal<In, Bits<36>>,
    /// Per consumer `c`: write data, bits `32c+31:32c`.
    pub req_wdata: Signal<In, Bits<128>>,
    /// Per consumer: the request is taken this cycle.
    pub req_ready: Signal<Out, Bits<4>>,
    /// A response.
    pub resp_valid: Signal<Out, Bit>,
    /// Its consumer.
    pub resp_consumer: Signal<Out, Bits<2>>,
    /// Refused: outside the consumer's pages.
    pub resp_fault: Signal<Out, Bit>,
    /// Read data (0 for writes and faults).
    pub resp_data: Signal<Out, Bits<32>>,
    /// A page was reclaimed.
    pub reclaim_valid: Signal<Out, Bit>,
    /// From this consumer.
    pub reclaim_consumer: Signal<Out, Bits<2>>,
    /// Its virtual page.
    pub reclaim_vpage: Signal<Out, Bits<3>>,
    /// Engine register read address (word).
    pub eng_raddr: Signal<In, Bits<14>>,
    /// Engine register read accepted this cycle.
    pub eng_re: Signal<In, Bit>,
    /// Engine register read data for `eng_raddr` while `eng_re`, else 0.
    pub eng_rdata: Signal<Out, Bits<32>>,
    /// Engine register write address (word).
    pub eng_waddr: Signal<In, Bits<14>>,
    /// Engine register write data.
    pub eng_wdata: Signal<In, Bits<32>>,
    /// Engine register write strobes.
    pub eng_wstrb: Signal<In, Bits<4>>,
    /// Engine register write enable.
    pub eng_we: Signal<In, Bit>,

    // Request queues, one FIFO per field.
    q_addr: [Fifo4<Bits<9>>; CONSUMERS],
    // A request's other fields follow its consumer's `q_addr` pointers.
    q_write: [Fifo4Mem<Bit>; CONSUMERS],
    q_data: [Fifo4Mem<Bits<32>>; CONSUMERS],
    q_stamp: [Fifo4Mem<Bits<16>>; CONSUMERS],
    // Configuration (32-bit registers holding masked values; unused bits
    // stay 0 and synthesis drops them).
    managed: DFF<Bit>,
    weight: [DFF<Bits<32>>; CONSUMERS],
    prio: [DFF<Bits<32>>; CONSUMERS],
    quota: [DFF<Bits<32>>; CONSUMERS],
    reserve: [DFF<Bits<32>>; CONSUMERS],
    pages: [DFF<Bits<32>>; CONSUMERS],
    tbl_v: [DFF<Bit>; ENTRIES],
    tbl_p: [DFF<Bits<4>>; ENTRIES],
    used: [DFF<Bit>; PAGES],
    // Arbiter.
    rr: DFF<Bits<2>>,
    credit: DFF<Bits<32>>,
    // Pipeline: granted (s1), at the RAM's output (s2).
    s1_v: DFF<Bit>,
    s1_we: DFF<Bit>,
    s1_c: DFF<Bits<2>>,
    s1_fault: DFF<Bit>,
    s1_zero: DFF<Bit>,
    s1_paddr: DFF<Bits<10>>,
    s1_wdata: DFF<Bits<32>>,
    s1_stamp: DFF<Bits<16>>,
    s2_v: DFF<Bit>,
    s2_c: DFF<Bits<2>>,
    s2_fault: DFF<Bit>,
    s2_zero: DFF<Bit>,
    s2_stamp: DFF<Bits<16>>,
    ram: RAM<Bits<32>, 10>,
    // Commands.
    state: DFF<Bits<2>>,
    zpage: DFF<Bits<4>>,
    zword: DFF<Bits<6>>,
    rc: DFF<Bits<2>>,
    rv: DFF<Bits<3>>,
    want: DFF<Bits<32>>,
    taken: DFF<Bits<32>>,
    result: DFF<Bits<32>>,
    last_page: DFF<Bits<32>>,
    nt_v: DFF<Bit>,
    nt_c: DFF<Bits<2>>,
    nt_p: DFF<Bits<3>>,
    // Observation.
    cyc: DFF<Bits<32>>,
    c_req: [DFF<Bits<32>>; CONSUMERS],
    c_gnt: [DFF<Bits<32>>; CONSUMERS],
    c_stall: [DFF<Bits<32>>; CONSUMERS],
    c_fault: [DFF<Bits<32>>; CONSUMERS],
    hist: [DFF<Bits<32>>; CONSUMERS * BUCKETS],
    s_req: [DFF<Bits<32>>; CONSUMERS],
    s_gnt: [DFF<Bits<32>>; CONSUMERS],
    s_stall: [DFF<Bits<32>>; CONSUMERS],
    s_fault: [DFF<Bits<32>>; CONSUMERS],
    s_hist: [DFF<Bits<32>>; CONSUMERS * BUCKETS],
    s_pages: [DFF<Bits<32>>; CONSUMERS],
    s_cycle: DFF<Bits<32>>,
    snap_sel: DFF<Bits<7>>,

    // Combinational.
    ready: [Signal<Local, Bit>; CONSUMERS],
    take: [Signal<Local, Bit>; CONSUMERS],
    elig: [Signal<Local, Bit>; CONSUMERS],
    age: [Signal<Local, Bits<16>>; CONSUMERS],
    rdy_acc: [Signal<Local, Bits<4>>; 5],
    fc_any: [Signal<Local, Bit>; 5],
    fc_g: [Signal<Local, Bits<2>>; 5],
    fc_age: [Signal<Local, Bits<16>>; 5],
    mp_any: [Signal<Local, Bit>; 5],
    mp: [Signal<Local, Bits<32>>; 5],
    cand: [Signal<Local, Bit>; CONSUMERS],
    dist: [Signal<Local, Bits<2>>; CONSUMERS],
    rp_any: [Signal<Local, Bit>; 5],
    rp_g: [Signal<Local, Bits<2>>; 5],
    rp_d: [Signal<Local, Bits<2>>; 5],
    cand_rr: Signal<Local, Bit>,
    zeroing: Signal<Local, Bit>,
    busy: Signal<Local, Bit>,
    grant: Signal<Local, Bit>,
    g: Signal<Local, Bits<2>>,
    g_w: Signal<Local, Bits<32>>,
    g_addr: Signal<Local, Bits<9>>,
    g_write: Signal<Local, Bit>,
    g_data: Signal<Local, Bits<32>>,
    g_stamp: Signal<Local, Bits<16>>,
    t_v: Signal<Local, Bit>,
    t_p: Signal<Local, Bits<4>>,
    pg: Signal<Local, Bits<4>>,
    off: Signal<Local, Bits<6>>,
    lat: Signal<Local, Bits<16>>,
    bk: Signal<Local, Bits<4>>,
    // Register writes and commands.
    cmd_we: Signal<Local, Bit>,
    c_arg: Signal<Local, Bits<8>>,
    c_c: Signal<Local, Bits<2>>,
    c_tv: Signal<Local, Bit>,
    c_pages: Signal<Local, Bits<32>>,
    c_quota: Signal<Local, Bits<32>>,
    fr_any: Signal<Local, Bit>,
    fr_p: Signal<Local, Bits<4>>,
    grant_ok: Signal<Local, Bit>,
    r_tv: Signal<Local, Bit>,
    r_tp: Signal<Local, Bits<4>>,
    r_pages: Signal<Local, Bits<32>>,
    r_reserve: Signal<Local, Bits<32>>,
    r_take: Signal<Local, Bit>,
    reclaiming: Signal<Local, Bit>,
    lim_q: Signal<Local, Bits<32>>,
    lim_r: Signal<Local, Bits<32>>,
    snap_now: Signal<Local, Bit>,
    busy_w: Signal<Local, Bits<32>>,
    status_w: Signal<Local, Bits<32>>,
    clear_now: Signal<Local, Bit>,
    w_tidx: Widen<5, 2>,
    w_tv: Widen<5, 3>,
    w_cidx: Widen<5, 2>,
    w_cv: Widen<5, 3>,
    w_ridx: Widen<5, 2>,
    w_rv: Widen<5, 3>,
    w_pg: Widen<10, 4>,
    w_off: Widen<10, 6>,
    w_fr: Widen<32, 4>,
    w_sel: Widen<32, 7>,
    w_arg: Widen<32, 8>,
    tidx: Signal<Local, Bits<5>>,
    cidx: Signal<Local, Bits<5>>,
    ridx: Signal<Local, Bits<5>>,
    // Constants.
    idx2: [Constant<Bits<2>>; CONSUMERS],
    idx4: [Constant<Bits<4>>; PAGES],
    onehot4: [Constant<Bits<4>>; CONSUMERS],
    one2: Constant<Bits<2>>,
    one3: Constant<Bits<3>>,
    one6: Constant<Bits<6>>,
    one7: Constant<Bits<7>>,
    one32: Constant<Bits<32>>,
    zero2: Constant<Bits<2>>,
    zero3: Constant<Bits<3>>,
    zero4: Constant<Bits<4>>,
    zero6: Constant<Bits<6>>,
    zero7: Constant<Bits<7>>,
    zero8: Constant<Bits<8>>,
    seven3: Constant<Bits<3>>,
    zero16: Constant<Bits<16>>,
    zero32: Constant<Bits<32>>,
    four3: Constant<Bits<3>>,
    last_word: Constant<Bits<6>>,
    vpages32: Constant<Bits<32>>,
    mask2: Constant<Bits<32>>,
    mask8: Constant<Bits<32>>,
    s_idle: Constant<Bits<2>>,
    s_zero: Constant<Bits<2>>,
    s_reclaim: Constant<Bits<2>>,
    op_grant: Constant<Bits<2>>,
    op_reclaim: Constant<Bits<2>>,
    r_ok: Constant<Bits<32>>,
    r_quota: Constant<Bits<32>>,
    r_full: Constant<Bits<32>>,
    r_page: Constant<Bits<32>>,
    r_busy: Constant<Bits<32>>,
    r_limits: Constant<Bits<32>>,
    r_op: Constant<Bits<32>>,
    geometry: Constant<Bits<32>>,
    sel_req: [Constant<Bits<7>>; CONSUMERS],
    sel_gnt: [Constant<Bits<7>>; CONSUMERS],
    sel_stall: [Constant<Bits<7>>; CONSUMERS],
    sel_fault: [Constant<Bits<7>>; CONSUMERS],
    sel_pages: [Constant<Bits<7>>; CONSUMERS],
    sel_hist: [Constant<Bits<7>>; CONSUMERS * BUCKETS],
    w_ctrl: Constant<Bits<14>>,
    w_cmd: Constant<Bits<14>>,
    w_status: Constant<Bits<14>>,
    w_snap: Constant<Bits<14>>,
    w_snap_sel: Constant<Bits<14>>,
    w_snap_data: Constant<Bits<14>>,
    w_snap_cycle: Constant<Bits<14>>,
    w_clear: Constant<Bits<14>>,
    w_geometry: Constant<Bits<14>>,
    w_weight: [Constant<Bits<14>>; CONSUMERS],
    w_prio: [Constant<Bits<14>>; CONSUMERS],
    w_limits: [Constant<Bits<14>>; CONSUMERS],
    w_pages: [Constant<Bits<14>>; CONSUMERS],
}

impl Default for Avm {
    fn default() -> Self {
        Self::new()
    }
}

impl Avm {
    /// The pool, every register at its reset value.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            req_valid: Default::default(),
            req_write: Default::default(),
            req_addr: Default::default(),
            req_wdata: Default::default(),
            req_ready: Default::default(),
            resp_valid: Default::default(),
            resp_consumer: Default::default(),
            resp_fault: Default::default(),
            resp_data: Default::default(),
            reclaim_valid: Default::default(),
            reclaim_consumer: Default::default(),
            reclaim_vpage: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            q_addr: array_init::array_init(|_| Default::default()),
            q_write: array_init::array_init(|_| Default::default()),
            q_data: array_init::array_init(|_| Default::default()),
            q_stamp: array_init::array_init(|_| Default::default()),
            managed: Default::default(),
            weight: Default::default(),
            prio: Default::default(),
            quota: Default::default(),
            reserve: Default::default(),
            pages: Default::default(),
            tbl_v: array_init::array_init(|_| Default::default()),
            tbl_p: array_init::array_init(|_| Default::default()),
            used: Default::default(),
            rr: Default::default(),
            credit: Default::default(),
            s1_v: Default::default(),
            s1_we: Default::default(),
            s1_c: Default::default(),
            s1_fault: Default::default(),
            s1_zero: Default::default(),
            s1_paddr: Default::default(),
            s1_wdata: Default::default(),
            s1_stamp: Default::default(),
            s2_v: Default::default(),
            s2_c: Default::default(),
            s2_fault: Default::default(),
            s2_zero: Default::default(),
            s2_stamp: Default::default(),
            ram: Default::default(),
            state: Default::default(),
            zpage: Default::default(),
            zword: Default::default(),
            rc: Default::default(),
            rv: Default::default(),
            want: Default::default(),
            taken: Default::default(),
            result: Default::default(),
            last_page: Default::default(),
            nt_v: Default::default(),
            nt_c: Default::default(),
            nt_p: Default::default(),
            cyc: Default::default(),
            c_req: Default::default(),
            c_gnt: Default::default(),
            c_stall: Default::default(),
            c_fault: Default::default(),
            hist: array_init::array_init(|_| Default::default()),
            s_req: Default::default(),
            s_gnt: Default::default(),
            s_stall: Default::default(),
            s_fault: Default::default(),
            s_hist: array_init::array_init(|_| Default::default()),
            s_pages: Default::default(),
            s_cycle: Default::default(),
            snap_sel: Default::default(),
            ready: Default::default(),
            take: Default::default(),
            elig: Default::default(),
            age: Default::default(),
            rdy_acc: Default::default(),
            fc_any: Default::default(),
            fc_g: Default::default(),
            fc_age: Default::default(),
            mp_any: Default::default(),
            mp: Default::default(),
            cand: Default::default(),
            dist: Default::default(),
            rp_any: Default::default(),
            rp_g: Default::default(),
            rp_d: Default::default(),
            cand_rr: Default::default(),
            zeroing: Default::default(),
            busy: Default::default(),
            grant: Default::default(),
            g: Default::default(),
            g_w: Default::default(),
            g_addr: Default::default(),
            g_write: Default::default(),
            g_data: Default::default(),
            g_stamp: Default::default(),
            t_v: Default::default(),
            t_p: Default::default(),
            pg: Default::default(),
            off: Default::default(),
            lat: Default::default(),
            bk: Default::default(),
            cmd_we: Default::default(),
            c_arg: Default::default(),
            c_c: Default::default(),
            c_tv: Default::default(),
            c_pages: Default::default(),
            c_quota: Default::default(),
            fr_any: Default::default(),
            fr_p: Default::default(),
            grant_ok: Default::default(),
            r_tv: Default::default(),
            r_tp: Default::default(),
            r_pages: Default::default(),
            r_reserve: Default::default(),
            r_take: Default::default(),
            reclaiming: Default::default(),
            lim_q: Default::default(),
            lim_r: Default::default(),
            snap_now: Default::default(),
            busy_w: Default::default(),
            status_w: Default::default(),
            clear_now: Default::default(),
            w_tidx: Default::default(),
            w_tv: Default::default(),
            w_cidx: Default::default(),
            w_cv: Default::default(),
            w_ridx: Default::default(),
            w_rv: Default::default(),
            w_pg: Default::default(),
            w_off: Default::default(),
            w_fr: Default::default(),
            w_sel: Default::default(),
            w_arg: Default::default(),
            tidx: Default::default(),
            cidx: Default::default(),
            ridx: Default::default(),
            idx2: array_init::array_init(|c| c as u64).map(konst),
            idx4: array_init::array_init(|p| konst(p as u64)),
            onehot4: array_init::array_init(|c| 1 << c).map(konst),
            one2: konst(1),
            one3: konst(1),
            one6: konst(1),
            one7: konst(1),
            one32: konst(1),
            zero2: konst(0),
            zero3: konst(0),
            zero4: konst(0),
            zero6: konst(0),
            zero7: konst(0),
            zero8: konst(0),
            seven3: konst(7),
            zero16: konst(0),
            zero32: konst(0),
            four3: konst(4),
            last_word: konst((1 << OFFSET_BITS) - 1),
            vpages32: konst(VPAGES as u64),
            mask2: konst(3),
            mask8: konst(0xff),
            s_idle: konst(IDLE),
            s_zero: konst(ZERO),
            s_reclaim: konst(RECLAIM),
            op_grant: konst(1),
            op_reclaim: konst(2),
            r_ok: konst(R_OK),
            r_quota: konst(R_QUOTA),
            r_full: konst(R_FULL),
            r_page: konst(R_PAGE),
            r_busy: konst(R_BUSY),
            r_limits: konst(R_LIMITS),
            r_op: konst(R_OP),
            geometry: konst(GEOMETRY),
            sel_req: array_init::array_init(|c| (c * PER) as u64).map(konst),
            sel_gnt: array_init::array_init(|c| (c * PER + 1) as u64).map(konst),
            sel_stall: array_init::array_init(|c| (c * PER + 2) as u64).map(konst),
            sel_fault: array_init::array_init(|c| (c * PER + 3) as u64).map(konst),
            sel_pages: array_init::array_init(|c| regs::SNAP_PAGES as u64 + c as u64).map(konst),
            sel_hist: array_init::array_init(|i| {
                konst(((i / BUCKETS) * PER + 4 + i % BUCKETS) as u64)
            }),
            w_ctrl: Constant::new(word_of(&regs::CTRL)),
            w_cmd: Constant::new(word_of(&regs::CMD)),
            w_status: Constant::new(word_of(&regs::STATUS)),
            w_snap: Constant::new(word_of(&regs::SNAP)),
            w_snap_sel: Constant::new(word_of(&regs::SNAP_SEL)),
            w_snap_data: Constant::new(word_of(&regs::SNAP_DATA)),
            w_snap_cycle: Constant::new(word_of(&regs::SNAP_CYCLE)),
            w_clear: Constant::new(word_of(&regs::CLEAR)),
            w_geometry: Constant::new(word_of(&regs::GEOMETRY)),
            w_weight: array_init::array_init(|c| Constant::new(word_of(&regs::GROUPS[c][0]))),
            w_prio: array_init::array_init(|c| Constant::new(word_of(&regs::GROUPS[c][1]))),
            w_limits: array_init::array_init(|c| Constant::new(word_of(&regs::GROUPS[c][2]))),
            w_pages: array_init::array_init(|c| Constant::new(word_of(&regs::GROUPS[c][3]))),
        }
    }
}

impl Logic for Avm {
    // Nested `if`s on purpose: `#[hdl_gen]` has no `&&`, and a `&` makes the
    // generated C++ evaluate both sides every cycle.
    #[allow(clippy::collapsible_if)]
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, managed, rr, credit, s1_v, s1_we, s1_c, s1_fault, s1_zero, s1_paddr,
            s1_wdata, s1_stamp, s2_v, s2_c, s2_fault, s2_zero, s2_stamp, state, zpage, zword, rc,
            rv, want, taken, result, last_page, nt_v, nt_c, nt_p, cyc, s_cycle, snap_sel
        );
        for c in 0..CONSUMERS {
            self.weight[c].clock.next = self.clock.val();
            self.weight[c].d.next = self.weight[c].q.val();
            self.prio[c].clock.next = self.clock.val();
            self.prio[c].d.next = self.prio[c].q.val();
            self.quota[c].clock.next = self.clock.val();
            self.quota[c].d.next = self.quota[c].q.val();
            self.reserve[c].clock.next = self.clock.val();
            self.reserve[c].d.next = self.reserve[c].q.val();
            self.pages[c].clock.next = self.clock.val();
            self.pages[c].d.next = self.pages[c].q.val();
            self.c_req[c].clock.next = self.clock.val();
            self.c_req[c].d.next = self.c_req[c].q.val();
            self.c_gnt[c].clock.next = self.clock.val();
            self.c_gnt[c].d.next = self.c_gnt[c].q.val();
            self.c_stall[c].clock.next = self.clock.val();
            self.c_stall[c].d.next = self.c_stall[c].q.val();
            self.c_fault[c].clock.next = self.clock.val();
            self.c_fault[c].d.next = self.c_fault[c].q.val();
            self.s_req[c].clock.next = self.clock.val();
            self.s_req[c].d.next = self.s_req[c].q.val();
            self.s_gnt[c].clock.next = self.clock.val();
            self.s_gnt[c].d.next = self.s_gnt[c].q.val();
            self.s_stall[c].clock.next = self.clock.val();
            self.s_stall[c].d.next = self.s_stall[c].q.val();
            self.s_fault[c].clock.next = self.clock.val();
            self.s_fault[c].d.next = self.s_fault[c].q.val();
            self.s_pages[c].clock.next = self.clock.val();
            self.s_pages[c].d.next = self.s_pages[c].q.val();
            self.q_addr[c].clock.next = self.clock.val();
            self.q_write[c].clock.next = self.clock.val();
            self.q_data[c].clock.next = self.clock.val();
            self.q_stamp[c].clock.next = self.clock.val();
        }
        for i in 0..HISTS {
            self.hist[i].clock.next = self.clock.val();
            self.hist[i].d.next = self.hist[i].q.val();
            self.s_hist[i].clock.next = self.clock.val();
            self.s_hist[i].d.next = self.s_hist[i].q.val();
        }
        for t in 0..ENTRIES {
            self.tbl_v[t].clock.next = self.clock.val();
            self.tbl_v[t].d.next = self.tbl_v[t].q.val();
            self.tbl_p[t].clock.next = self.clock.val();
            self.tbl_p[t].d.next = self.tbl_p[t].q.val();
        }
        for p in 0..PAGES {
            self.used[p].clock.next = self.clock.val();
            self.used[p].d.next = self.used[p].q.val();
        }
        self.ram.read_clock.next = self.clock.val();
        self.ram.write_clock.next = self.clock.val();
        self.cyc.d.next = self.cyc.q.val() + self.one32.val();

        // ---- Queues: take a request while fewer than four wait.
        self.rdy_acc[0].next = self.zero4.val();
        for c in 0..CONSUMERS {
            self.ready[c].next = self.q_addr[c].count.val() < self.four3.val();
            self.take[c].next = self.req_valid.val().get_bit(c) & self.ready[c].val();
            self.elig[c].next = self.q_addr[c].count.val() != self.zero3.val();
            self.rdy_acc[c + 1].next = self.rdy_acc[c].val();
            if self.ready[c].val() {
                self.rdy_acc[c + 1].next = self.rdy_acc[c].val() | self.onehot4[c].val();
            }
            self.q_addr[c].push.next = self.take[c].val();
            self.q_write[c].push.next = self.take[c].val();
            self.q_data[c].push.next = self.take[c].val();
            self.q_stamp[c].push.next = self.take[c].val();
            self.q_write[c].wr.next = self.q_addr[c].wr.val();
            self.q_data[c].wr.next = self.q_addr[c].wr.val();
            self.q_stamp[c].wr.next = self.q_addr[c].wr.val();
            self.q_write[c].rd.next = self.q_addr[c].rd.val();
            self.q_data[c].rd.next = self.q_addr[c].rd.val();
            self.q_stamp[c].rd.next = self.q_addr[c].rd.val();
            self.q_addr[c].data_in.next = self.req_addr.val().get_bits::<9>(9 * c);
            self.q_write[c].data_in.next = self.req_write.val().get_bit(c);
            self.q_data[c].data_in.next = self.req_wdata.val().get_bits::<32>(32 * c);
            self.q_stamp[c].data_in.next = self.cyc.q.val().get_bits::<16>(0);
            self.age[c].next = self.cyc.q.val().get_bits::<16>(0) - self.q_stamp[c].data_out.val();
        }
        self.req_ready.next = self.rdy_acc[4].val();

        // ---- Arbitration.
        self.busy.next = self.state.q.val() != self.s_idle.val();
        self.zeroing.next = self.state.q.val() == self.s_zero.val();
        // First come: the oldest head; ties to the lowest consumer.
        self.fc_any[0].next = false;
        self.fc_g[0].next = self.zero2.val();
        self.fc_age[0].next = self.zero16.val();
        // Managed: the highest waiting priority.
        self.mp_any[0].next = false;
        self.mp[0].next = self.zero32.val();
        for c in 0..CONSUMERS {
            self.fc_any[c + 1].next = self.fc_any[c].val();
            self.fc_g[c + 1].next = self.fc_g[c].val();
            self.fc_age[c + 1].next = self.fc_age[c].val();
            if self.elig[c].val()
                & (!self.fc_any[c].val() | (self.age[c].val() > self.fc_age[c].val()))
            {
                self.fc_any[c + 1].next = true;
                self.fc_g[c + 1].next = self.idx2[c].val();
                self.fc_age[c + 1].next = self.age[c].val();
            }
            self.mp_any[c + 1].next = self.mp_any[c].val();
            self.mp[c + 1].next = self.mp[c].val();
            if self.elig[c].val()
                & (!self.mp_any[c].val() | (self.prio[c].q.val() > self.mp[c].val()))
            {
                self.mp_any[c + 1].next = true;
                self.mp[c + 1].next = self.prio[c].q.val();
            }
        }
        // The candidates, and the first after the round-robin pointer (the
        // pointer's own consumer last).
        self.cand_rr.next = false;
        self.rp_any[0].next = false;
        self.rp_g[0].next = self.zero2.val();
        self.rp_d[0].next = self.zero2.val();
        for c in 0..CONSUMERS {
            self.cand[c].next = self.elig[c].val() & (self.prio[c].q.val() == self.mp[4].val());
            self.dist[c].next = self.idx2[c].val() - self.rr.q.val() - self.one2.val();
            if self.rr.q.val().index() == c {
                self.cand_rr.next = self.cand[c].val();
            }
            self.rp_any[c + 1].next = self.rp_any[c].val();
            self.rp_g[c + 1].next = self.rp_g[c].val();
            self.rp_d[c + 1].next = self.rp_d[c].val();
            if self.cand[c].val()
                & (!self.rp_any[c].val() | (self.dist[c].val() < self.rp_d[c].val()))
            {
                self.rp_any[c + 1].next = true;
                self.rp_g[c + 1].next = self.idx2[c].val();
                self.rp_d[c + 1].next = self.dist[c].val();
            }
        }
        self.grant.next = false;
        self.g.next = self.zero2.val();
        if !self.zeroing.val() {
            if self.managed.q.val() {
                if self.cand_rr.val() & (self.credit.q.val() != self.zero32.val()) {
                    self.grant.next = true;
                    self.g.next = self.rr.q.val();
                } else {
                    self.grant.next = self.rp_any[4].val();
                    self.g.next = self.rp_g[4].val();
                }
            } else {
                self.grant.next = self.fc_any[4].val();
                self.g.next = self.fc_g[4].val();
            }
        }
        // The granted head.
        self.g_w.next = self.weight[0].q.val();
        self.g_addr.next = self.q_addr[0].data_out.val();
        self.g_write.next = self.q_write[0].data_out.val();
        self.g_data.next = self.q_data[0].data_out.val();
        self.g_stamp.next = self.q_stamp[0].data_out.val();
        for c in 0..CONSUMERS {
            if self.g.val().index() == c {
                self.g_w.next = self.weight[c].q.val();
                self.g_addr.next = self.q_addr[c].data_out.val();
                self.g_write.next = self.q_write[c].data_out.val();
                self.g_data.next = self.q_data[c].data_out.val();
                self.g_stamp.next = self.q_stamp[c].data_out.val();
            }
            self.q_addr[c].pop.next = self.grant.val() & (self.g.val().index() == c);
        }
        if self.grant.val() & self.managed.q.val() {
            if self.cand_rr.val() & (self.credit.q.val() != self.zero32.val()) {
                self.credit.d.next = self.credit.q.val() - self.one32.val();
            } else {
                self.rr.d.next = self.rp_g[4].val();
                self.credit.d.next = self.zero32.val();
                if self.g_w.val() != self.zero32.val() {
                    self.credit.d.next = self.g_w.val() - self.one32.val();
                }
            }
        }

        // ---- Translation: table entry {g, virtual page}.
        self.w_tidx.narrow.next = self.g.val();
        self.w_tv.narrow.next = self.g_addr.val().get_bits::<3>(6);
        self.tidx.next = (self.w_tidx.wide.val() << 3) | self.w_tv.wide.val();
        // Looked up only for a granted access (what `s1` takes from it
        // matters only then), so a simulator skips the table on the other
        // cycles; the same holds for the reclaim's and the commands'
        // lookups and the histogram below.
        self.t_v.next = false;
        self.t_p.next = self.zero4.val();
        if self.grant.val() {
            for t in 0..ENTRIES {
                if self.tidx.val().index() == t {
                    self.t_v.next = self.tbl_v[t].q.val();
                    self.t_p.next = self.tbl_p[t].q.val();
                }
            }
        }
        // s1: the granted access, or the zeroing's next word.
        self.s1_v.d.next = self.grant.val();
        self.s1_c.d.next = self.g.val();
        self.s1_fault.d.next = self.grant.val() & !self.t_v.val();
        self.s1_zero.d.next = self.g_write.val() | !self.t_v.val();
        self.s1_we.d.next = self.grant.val() & self.g_write.val() & self.t_v.val();
        self.s1_wdata.d.next = self.g_data.val();
        self.s1_stamp.d.next = self.g_stamp.val();
        self.pg.next = self.t_p.val();
        self.off.next = self.g_addr.val().get_bits::<6>(0);
        if self.zeroing.val() {
            self.s1_we.d.next = true;
            self.s1_wdata.d.next = self.zero32.val();
            self.pg.next = self.zpage.q.val();
            self.off.next = self.zword.q.val();
        }
        self.w_pg.narrow.next = self.pg.val();
        self.w_off.narrow.next = self.off.val();
        self.s1_paddr.d.next = (self.w_pg.wide.val() << 6) | self.w_off.wide.val();
        // The RAM, then s2 beside its output register.
        self.ram.read_address.next = self.s1_paddr.q.val();
        self.ram.write_address.next = self.s1_paddr.q.val();
        self.ram.write_data.next = self.s1_wdata.q.val();
        self.ram.write_enable.next = self.s1_we.q.val();
        self.s2_v.d.next = self.s1_v.q.val();
        self.s2_c.d.next = self.s1_c.q.val();
        self.s2_fault.d.next = self.s1_fault.q.val();
        self.s2_zero.d.next = self.s1_zero.q.val();
        self.s2_stamp.d.next = self.s1_stamp.q.val();
        self.resp_valid.next = self.s2_v.q.val();
        self.resp_consumer.next = self.zero2.val();
        self.resp_fault.next = false;
        self.resp_data.next = self.zero32.val();
        if self.s2_v.q.val() {
            self.resp_consumer.next = self.s2_c.q.val();
            self.resp_fault.next = self.s2_fault.q.val();
            if !self.s2_zero.q.val() {
                self.resp_data.next = self.ram.read_data.val();
            }
        }

        // ---- Counters.
        self.lat.next = self.zero16.val();
        self.bk.next = self.zero4.val();
        if self.s2_v.q.val() {
            self.lat.next = self.cyc.q.val().get_bits::<16>(0) - self.s2_stamp.q.val();
            for b in 1..BUCKETS {
                if self.lat.val().get_bit(b) {
                    self.bk.next = self.idx4[b].val();
                }
            }
        }
        for c in 0..CONSUMERS {
            if self.take[c].val() {
                self.c_req[c].d.next = self.c_req[c].q.val() + self.one32.val();
            }
            if self.grant.val() & (self.g.val().index() == c) {
                self.c_gnt[c].d.next = self.c_gnt[c].q.val() + self.one32.val();
                if !self.t_v.val() {
                    self.c_fault[c].d.next = self.c_fault[c].q.val() + self.one32.val();
                }
            }
            if self.elig[c].val() & !(self.grant.val() & (self.g.val().index() == c)) {
                self.c_stall[c].d.next = self.c_stall[c].q.val() + self.one32.val();
            }
        }
        if self.s2_v.q.val() {
            for c in 0..CONSUMERS {
                if self.s2_c.q.val().index() == c {
                    for b in 0..BUCKETS {
                        if self.bk.val().index() == b {
                            self.hist[c * 16 + b].d.next =
                                self.hist[c * 16 + b].q.val() + self.one32.val();
                        }
                    }
                }
            }
        }

        // ---- The running command's step.
        self.nt_v.d.next = false;
        // Zeroing: one word per cycle.
        if self.zeroing.val() {
            self.zword.d.next = self.zword.q.val() + self.one6.val();
            if self.zword.q.val() == self.last_word.val() {
                self.state.d.next = self.s_idle.val();
            }
        }
        // Reclaim: one virtual page per cycle, from the highest.
        self.w_ridx.narrow.next = self.rc.q.val();
        self.w_rv.narrow.next = self.rv.q.val();
        self.ridx.next = (self.w_ridx.wide.val() << 3) | self.w_rv.wide.val();
        self.reclaiming.next = self.state.q.val() == self.s_reclaim.val();
        self.r_tv.next = false;
        self.r_tp.next = self.zero4.val();
        self.r_pages.next = self.zero32.val();
        self.r_reserve.next = self.zero32.val();
        if self.reclaiming.val() {
            for t in 0..ENTRIES {
                if self.ridx.val().index() == t {
                    self.r_tv.next = self.tbl_v[t].q.val();
                    self.r_tp.next = self.tbl_p[t].q.val();
                }
            }
            for c in 0..CONSUMERS {
                if self.rc.q.val().index() == c {
                    self.r_pages.next = self.pages[c].q.val();
                    self.r_reserve.next = self.reserve[c].q.val();
                }
            }
        }
        self.r_take.next = self.reclaiming.val()
            & (self.taken.q.val() < self.want.q.val())
            & (self.r_pages.val() > self.r_reserve.val())
            & self.r_tv.val();
        if self.reclaiming.val() {
            self.rv.d.next = self.rv.q.val() - self.one3.val();
            if self.rv.q.val() == self.zero3.val() {
                self.state.d.next = self.s_idle.val();
            }
        }
        if self.r_take.val() {
            self.taken.d.next = self.taken.q.val() + self.one32.val();
            self.nt_v.d.next = true;
            self.nt_c.d.next = self.rc.q.val();
            self.nt_p.d.next = self.rv.q.val();
            for t in 0..ENTRIES {
                if self.ridx.val().index() == t {
                    self.tbl_v[t].d.next = false;
                }
            }
            for p in 0..PAGES {
                if self.r_tp.val().index() == p {
                    self.used[p].d.next = false;
                }
            }
            for c in 0..CONSUMERS {
                if self.rc.q.val().index() == c {
                    self.pages[c].d.next = self.pages[c].q.val() - self.one32.val();
                }
            }
        }
        self.reclaim_valid.next = self.nt_v.q.val();
        self.reclaim_consumer.next = self.zero2.val();
        self.reclaim_vpage.next = self.zero3.val();
        if self.nt_v.q.val() {
            self.reclaim_consumer.next = self.nt_c.q.val();
            self.reclaim_vpage.next = self.nt_p.q.val();
        }

        // ---- Register writes.
        // Write decodes nested under `eng_we`, not `we & (addr == …)`: a
        // simulator evaluates both sides of a `&` every cycle, a nested
        // test the compare only on a write.
        self.cmd_we.next = false;
        if self.eng_we.val() {
            self.cmd_we.next =
                (self.eng_waddr.val() == self.w_cmd.val()) & self.eng_wstrb.val().get_bit(0);
        }
        self.c_c.next = self.eng_wdata.val().get_bits::<2>(4);
        self.c_arg.next = self.zero8.val();
        if self.eng_wstrb.val().get_bit(1) {
            self.c_arg.next = self.eng_wdata.val().get_bits::<8>(8);
        }
        self.w_cidx.narrow.next = self.c_c.val();
        self.w_cv.narrow.next = self.c_arg.val().get_bits::<3>(0);
        self.cidx.next = (self.w_cidx.wide.val() << 3) | self.w_cv.wide.val();
        self.c_tv.next = false;
        self.c_pages.next = self.zero32.val();
        self.c_quota.next = self.zero32.val();
        self.fr_any.next = false;
        self.fr_p.next = self.zero4.val();
        if self.cmd_we.val() {
            for t in 0..ENTRIES {
                if self.cidx.val().index() == t {
                    self.c_tv.next = self.tbl_v[t].q.val();
                }
            }
            for c in 0..CONSUMERS {
                if self.c_c.val().index() == c {
                    self.c_pages.next = self.pages[c].q.val();
                    self.c_quota.next = self.quota[c].q.val();
                }
            }
            // The lowest free page: scanned from the top, the last write wins.
            for i in 0..PAGES {
                if !self.used[15 - i].q.val() {
                    self.fr_any.next = true;
                    self.fr_p.next = self.idx4[15 - i].val();
                }
            }
        }
        self.w_arg.narrow.next = self.c_arg.val();
        self.grant_ok.next = false;
        if self.cmd_we.val() {
            if self.busy.val() {
                self.result.d.next = self.r_busy.val();
            } else if self.eng_wdata.val().get_bits::<2>(0) == self.op_grant.val() {
                if (self.w_arg.wide.val() >= self.vpages32.val()) | self.c_tv.val() {
                    self.result.d.next = self.r_page.val();
                } else if self.c_pages.val() >= self.c_quota.val() {
                    self.result.d.next = self.r_quota.val();
                } else if !self.fr_any.val() {
                    self.result.d.next = self.r_full.val();
                } else {
                    self.grant_ok.next = true;
                    self.result.d.next = self.r_ok.val();
                }
            } else if self.eng_wdata.val().get_bits::<2>(0) == self.op_reclaim.val() {
                self.result.d.next = self.r_ok.val();
                self.taken.d.next = self.zero32.val();
                self.want.d.next = self.w_arg.wide.val();
                self.rc.d.next = self.c_c.val();
                self.rv.d.next = self.seven3.val();
                self.state.d.next = self.s_reclaim.val();
            } else {
                self.result.d.next = self.r_op.val();
            }
        }
        self.w_fr.narrow.next = self.fr_p.val();
        if self.grant_ok.val() {
            for t in 0..ENTRIES {
                if self.cidx.val().index() == t {
                    self.tbl_v[t].d.next = true;
                    self.tbl_p[t].d.next = self.fr_p.val();
                }
            }
            for p in 0..PAGES {
                if self.fr_p.val().index() == p {
                    self.used[p].d.next = true;
                }
            }
            for c in 0..CONSUMERS {
                if self.c_c.val().index() == c {
                    self.pages[c].d.next = self.pages[c].q.val() + self.one32.val();
                }
            }
            self.last_page.d.next = self.w_fr.wide.val();
            self.zpage.d.next = self.fr_p.val();
            self.zword.d.next = self.zero6.val();
            self.state.d.next = self.s_zero.val();
        }
        if self.eng_we.val() & self.eng_wstrb.val().get_bit(0) {
            if self.eng_waddr.val() == self.w_ctrl.val() {
                self.managed.d.next = self.eng_wdata.val().get_bit(0);
            }
            if self.eng_waddr.val() == self.w_snap_sel.val() {
                self.snap_sel.d.next = self.eng_wdata.val().get_bits::<7>(0);
            }
            for c in 0..CONSUMERS {
                if self.eng_waddr.val() == self.w_weight[c].val() {
                    self.weight[c].d.next = self.eng_wdata.val() & self.mask8.val();
                }
                if self.eng_waddr.val() == self.w_prio[c].val() {
                    self.prio[c].d.next = self.eng_wdata.val() & self.mask2.val();
                }
            }
        }
        // A LIMITS write: the bytes not written keep their value.
        self.lim_q.next = self.zero32.val();
        self.lim_r.next = self.zero32.val();
        if self.eng_we.val() {
            for c in 0..CONSUMERS {
                if self.eng_waddr.val() == self.w_limits[c].val() {
                    self.lim_q.next = self.quota[c].q.val();
                    self.lim_r.next = self.reserve[c].q.val();
                    if self.eng_wstrb.val().get_bit(0) {
                        self.lim_q.next = self.eng_wdata.val() & self.mask8.val();
                    }
                    if self.eng_wstrb.val().get_bit(1) {
                        self.lim_r.next = (self.eng_wdata.val() >> 8) & self.mask8.val();
                    }
                    if self.lim_r.val() > self.lim_q.val() {
                        self.result.d.next = self.r_limits.val();
                    } else {
                        self.quota[c].d.next = self.lim_q.val();
                        self.reserve[c].d.next = self.lim_r.val();
                    }
                }
            }
        }
        // A read of SNAP_DATA advances SNAP_SEL (a SNAP_SEL write wins).
        if self.eng_re.val() {
            if self.eng_raddr.val() == self.w_snap_data.val() {
                self.snap_sel.d.next = self.snap_sel.q.val() + self.one7.val();
            }
        }
        self.snap_now.next = false;
        self.clear_now.next = false;
        if self.eng_we.val() {
            if self.eng_wstrb.val().get_bit(0) & (self.eng_waddr.val() == self.w_snap_sel.val()) {
                self.snap_sel.d.next = self.eng_wdata.val().get_bits::<7>(0);
            }
            self.snap_now.next = self.eng_wstrb.val().get_bit(0)
                & self.eng_wdata.val().get_bit(0)
                & (self.eng_waddr.val() == self.w_snap.val());
            self.clear_now.next = self.eng_wstrb.val().get_bit(0)
                & self.eng_wdata.val().get_bit(0)
                & (self.eng_waddr.val() == self.w_clear.val());
        }
        if self.snap_now.val() {
            self.snap_sel.d.next = self.zero7.val();
            self.s_cycle.d.next = self.cyc.q.val();
            for c in 0..CONSUMERS {
                self.s_req[c].d.next = self.c_req[c].q.val();
                self.s_gnt[c].d.next = self.c_gnt[c].q.val();
                self.s_stall[c].d.next = self.c_stall[c].q.val();
                self.s_fault[c].d.next = self.c_fault[c].q.val();
                self.s_pages[c].d.next = self.pages[c].q.val();
            }
            for i in 0..HISTS {
                self.s_hist[i].d.next = self.hist[i].q.val();
            }
        }
        if self.clear_now.val() {
            for c in 0..CONSUMERS {
                self.c_req[c].d.next = self.zero32.val();
                self.c_gnt[c].d.next = self.zero32.val();
                self.c_stall[c].d.next = self.zero32.val();
                self.c_fault[c].d.next = self.zero32.val();
            }
            for i in 0..HISTS {
                self.hist[i].d.next = self.zero32.val();
            }
        }

        // ---- Register reads.
        self.busy_w.next = self.zero32.val();
        if self.busy.val() {
            self.busy_w.next = self.one32.val();
        }
        self.status_w.next = self.busy_w.val()
            | (self.result.q.val() << 4)
            | (self.last_page.q.val() << 8)
            | (self.taken.q.val() << 16);
        self.w_sel.narrow.next = self.snap_sel.q.val();
        self.eng_rdata.next = self.zero32.val();
        // Decoded only on a read: the CSR block takes `eng_rdata` only in
        // the cycle `eng_re` is high, and a simulator skips the decoder on
        // every other cycle.
        if self.eng_re.val() {
            if (self.eng_raddr.val() == self.w_ctrl.val()) & self.managed.q.val() {
                self.eng_rdata.next = self.one32.val();
            }
            if self.eng_raddr.val() == self.w_status.val() {
                self.eng_rdata.next = self.status_w.val();
            }
            if self.eng_raddr.val() == self.w_snap_sel.val() {
                self.eng_rdata.next = self.w_sel.wide.val();
            }
            if self.eng_raddr.val() == self.w_snap_cycle.val() {
                self.eng_rdata.next = self.s_cycle.q.val();
            }
            if self.eng_raddr.val() == self.w_geometry.val() {
                self.eng_rdata.next = self.geometry.val();
            }
            for c in 0..CONSUMERS {
                if self.eng_raddr.val() == self.w_weight[c].val() {
                    self.eng_rdata.next = self.weight[c].q.val();
                }
                if self.eng_raddr.val() == self.w_prio[c].val() {
                    self.eng_rdata.next = self.prio[c].q.val();
                }
                if self.eng_raddr.val() == self.w_limits[c].val() {
                    self.eng_rdata.next = self.quota[c].q.val() | (self.reserve[c].q.val() << 8);
                }
                if self.eng_raddr.val() == self.w_pages[c].val() {
                    self.eng_rdata.next = self.pages[c].q.val();
                }
            }
            if self.eng_raddr.val() == self.w_snap_data.val() {
                for c in 0..CONSUMERS {
                    if self.snap_sel.q.val() == self.sel_req[c].val() {
                        self.eng_rdata.next = self.s_req[c].q.val();
                    }
                    if self.snap_sel.q.val() == self.sel_gnt[c].val() {
                        self.eng_rdata.next = self.s_gnt[c].q.val();
                    }
                    if self.snap_sel.q.val() == self.sel_stall[c].val() {
                        self.eng_rdata.next = self.s_stall[c].q.val();
                    }
                    if self.snap_sel.q.val() == self.sel_fault[c].val() {
                        self.eng_rdata.next = self.s_fault[c].q.val();
                    }
                    if self.snap_sel.q.val() == self.sel_pages[c].val() {
                        self.eng_rdata.next = self.s_pages[c].q.val();
                    }
                }
                for i in 0..HISTS {
                    if self.snap_sel.q.val() == self.sel_hist[i].val() {
                        self.eng_rdata.next = self.s_hist[i].q.val();
                    }
                }
            }
        }
    }
}
