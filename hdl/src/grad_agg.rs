//! The gradient aggregation engine (after SwitchML, ATP and DSA),
//! specified cycle by cycle by `weft_model::grad_agg::cycle` (read it and
//! `weft_model::grad_agg::model` first: this file implements them register
//! for register).
//!
//! Pipeline, one input beat per cycle, never stalled by hazards:
//! - **header step** (t): check the header beat against `s_tuser_size`,
//!   compute the slot (`(chunk + job) mod slots`) and read its bookkeeping
//!   from the meta RAMs;
//! - **decision** (t+1): duplicate (answered with a NACK), add, complete
//!   (leaving a done mark),
//!   late copy of the chunk a slot completed (dropped), single-worker
//!   pass, claim, preempt (by job priority, or a stale claim by a newer
//!   chunk of its own job) or fallback; write the bookkeeping
//!   back, queue the output header, latch what the value beats do;
//! - **value step** (beat k accepted at c_k): read the slot's words of beat
//!   k from the per-lane sum RAMs (address `slot * VB + k`);
//! - **value stage** (c_k + 1): add, write back, queue the output beat.
//!
//! A slot is touched once per packet and packets are `1 + VB` beats apart,
//! so every RAM read comes at least a cycle after the previous packet's
//! write to the same word: no forwarding is needed. A step is taken only
//! while the output FIFO holds at most 2 of its 4 beats; its output lands a
//! cycle later, so the FIFO never overflows, and with the output ready the
//! input is never held off (II = 1). At most one output packet leaves per
//! input packet, one output beat per input beat.
//!
//! Sums are 32-bit two's complement and wrap: exact modulo 2^32, so any
//! chunk whose true total fits in an `i32` is exact whatever the order of
//! additions (the host chooses its fixed-point scale accordingly; the host
//! fallback wraps the same way).
//!
//! Registers are the `grad` block of weft-regs on the engine register port.

use crate::common::{konst, word_of, Counter64, Fifo4, Fifo4Mem, Pack, Widen};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use weft_regs::grad;

/// Counters, in `grad::COUNTERS` order: 0 packets in, 1 aggregated,
/// 2 completed, 3 preempted, 4 fallbacks, 5 duplicates, 6 malformed,
/// 7 flushed (rust-hdl indexes arrays by literals, hence numbers).
pub const N_COUNTERS: usize = 8;
/// Most workers per job (the slot bitmap's width).
pub const MAX_WORKERS: u64 = 32;
/// Packet format version.
pub const VERSION: u64 = 1;
/// Flag bits of the packet header (`weft_model::grad_agg::packet::flags`).
pub const F_DATA: u64 = 1;
/// RESULT flag.
pub const F_RESULT: u64 = 2;
/// EVICT flag.
pub const F_EVICT: u64 = 4;
/// FALLBACK flag.
pub const F_FALLBACK: u64 = 8;
/// NACK flag (with RESULT): the chunk is incomplete; the bitmap names the
/// workers whose contributions are in.
pub const F_NACK: u64 = 16;
/// `m_tuser` codes of the output packet kinds.
pub const KIND_RESULT: u64 = 1;
/// EVICT.
pub const KIND_EVICT: u64 = 2;
/// FALLBACK.
pub const KIND_FALLBACK: u64 = 3;

/// The engine: `L` lanes of 32 bits (`W = 32 * L`, at least 4 lanes for the
/// header), `1 << SB` slots, `VB` value beats per chunk (a power of two),
/// and `AB = SB + log2(VB)` address bits of the per-lane sum RAMs.
#[derive(LogicBlock)]
pub struct GradAgg<
    const L: usize,
    const W: usize,
    const SB: usize,
    const VB: usize,
    const AB: usize,
> {
    /// Clock (`axis_aclk`).
    pub clock: Signal<In, Clock>,
    /// Input stream: DATA packets (UDP payloads).
    pub s_tdata: Signal<In, Bits<W>>,
    /// Last beat of a packet.
    pub s_tlast: Signal<In, Bit>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Packet length in bytes (the OpenNIC shell's `tuser_size`).
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// The engine takes the beat.
    pub s_tready: Signal<Out, Bit>,
    /// Output stream: RESULT, EVICT and FALLBACK packets (0 when not valid).
    pub m_tdata: Signal<Out, Bits<W>>,
    /// Output packet kind: 1 RESULT, 2 EVICT, 3 FALLBACK.
    pub m_tuser: Signal<Out, Bits<2>>,
    /// Last beat of an output packet.
    pub m_tlast: Signal<Out, Bit>,
    /// Output beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// The host takes the output beat.
    pub m_tready: Signal<In, Bit>,
    /// Engine register port: read word address.
    pub eng_raddr: Signal<In, Bits<14>>,
    /// Engine register port: read accepted (latches counter HI words).
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

    // Slot bookkeeping: {valid, job[3:0], workers[5:0], count[5:0]}, chunk,
    // bitmap; and the sums, one RAM per lane.
    m_ctl: RAM<Bits<17>, SB>,
    m_chunk: RAM<Bits<32>, SB>,
    m_bmp: RAM<Bits<32>, SB>,
    acc: [RAM<Bits<32>, AB>; L],

    // Output FIFO: lanes, and {last, kind[1:0]}.
    // A beat's lanes follow `f_ctl`'s pointers.
    f_lane: [Fifo4Mem<Bits<32>>; L],
    f_ctl: Fifo4<Bits<3>>,

    counters: [Counter64; N_COUNTERS],

    // Registers.
    prio: [DFF<Bits<32>>; 2],
    flush_pending: DFF<Bit>,
    flushing: DFF<Bit>,
    fl_slot: DFF<Bits<SB>>,
    fl_base: DFF<Bits<AB>>,
    fl_phase: DFF<Bits<AB>>,

    // Framing and the packet in progress.
    in_pkt: DFF<Bit>,
    k: DFF<Bits<AB>>,
    cur_idx: DFF<Bits<SB>>,
    cur_base: DFF<Bits<AB>>,

    // Decision stage.
    d_step: DFF<Bit>,
    d_flush: DFF<Bit>,
    d_ok: DFF<Bit>,
    d_job: DFF<Bits<4>>,
    d_worker: DFF<Bits<5>>,
    d_workers: DFF<Bits<6>>,
    d_chunk: DFF<Bits<32>>,
    d_beat: [DFF<Bits<32>>; L],

    // What the value beats of the packet do.
    pm_wval: DFF<Bit>,
    pm_wsum: DFF<Bit>,
    pm_oval: DFF<Bit>,
    pm_oold: DFF<Bit>,
    pm_osum: DFF<Bit>,
    pm_kind: DFF<Bits<2>>,

    // Value stage.
    p1_valid: DFF<Bit>,
    p1_addr: DFF<Bits<AB>>,
    p1_last: DFF<Bit>,
    p1_v: [DFF<Bits<32>>; L],

    // Constants.
    pkt_bytes: Constant<Bits<16>>,
    chunk_values: Constant<Bits<16>>,
    version: Constant<Bits<8>>,
    flags_data: Constant<Bits<8>>,
    max_workers: Constant<Bits<8>>,
    zero8: Constant<Bits<8>>,
    zero12: Constant<Bits<12>>,
    one6: Constant<Bits<6>>,
    zero32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    zero17: Constant<Bits<17>>,
    zero4: Constant<Bits<4>>,
    zero6: Constant<Bits<6>>,
    half32: Constant<Bits<32>>,
    valid17: Constant<Bits<17>>,
    kb: Constant<Bits<8>>,
    vb_ab: Constant<Bits<AB>>,
    vb_last: Constant<Bits<AB>>,
    zero_ab: Constant<Bits<AB>>,
    one_ab: Constant<Bits<AB>>,
    zero_sb: Constant<Bits<SB>>,
    one_sb: Constant<Bits<SB>>,
    slot_last: Constant<Bits<SB>>,
    fifo_room: Constant<Bits<3>>,
    zero3: Constant<Bits<3>>,
    last3: Constant<Bits<3>>,
    w0_result: Constant<Bits<32>>,
    w0_evict: Constant<Bits<32>>,
    w0_nack: Constant<Bits<32>>,
    fallback_flag: Constant<Bits<32>>,
    kind_result: Constant<Bits<2>>,
    kind_evict: Constant<Bits<2>>,
    kind_fallback: Constant<Bits<2>>,
    zero2: Constant<Bits<2>>,
    geometry: Constant<Bits<32>>,
    byte_mask: [Constant<Bits<32>>; 4],
    sh6: Constant<Bits<8>>,
    sh12: Constant<Bits<8>>,
    sh16: Constant<Bits<8>>,
    sh24: Constant<Bits<8>>,
    w_prio_lo: Constant<Bits<14>>,
    w_prio_hi: Constant<Bits<14>>,
    w_cmd: Constant<Bits<14>>,
    w_status: Constant<Bits<14>>,
    w_geometry: Constant<Bits<14>>,
    w_cnt_lo: [Constant<Bits<14>>; N_COUNTERS],
    w_cnt_hi: [Constant<Bits<14>>; N_COUNTERS],
    job_no: [Constant<Bits<4>>; 8],
    job_no_hi: [Constant<Bits<4>>; 8],

    // Input side.
    room: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
    hfire: Signal<Local, Bit>,
    vfire: Signal<Local, Bit>,
    fstep: Signal<Local, Bit>,
    fh: Signal<Local, Bit>,
    fv: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    h_w0: Signal<Local, Bits<32>>,
    h_w1: Signal<Local, Bits<32>>,
    h_chunk: Signal<Local, Bits<32>>,
    h_ver: Signal<Local, Bits<8>>,
    h_flags: Signal<Local, Bits<8>>,
    h_count: Signal<Local, Bits<16>>,
    h_job: Signal<Local, Bits<16>>,
    h_worker: Signal<Local, Bits<8>>,
    h_workers: Signal<Local, Bits<8>>,
    hdr_ok: Signal<Local, Bit>,
    hash: Signal<Local, Bits<AB>>,
    slot: Signal<Local, Bits<SB>>,
    base: Signal<Local, Bits<AB>>,
    lane_in: [Signal<Local, Bits<32>>; L],

    // Decision.
    mv: Signal<Local, Bit>,
    mjob: Signal<Local, Bits<4>>,
    mwk: Signal<Local, Bits<6>>,
    mcnt: Signal<Local, Bits<6>>,
    cnt1: Signal<Local, Bits<6>>,
    wbit: Signal<Local, Bits<32>>,
    hit: Signal<Local, Bits<32>>,
    same: Signal<Local, Bit>,
    done: Signal<Local, Bit>,
    late: Signal<Local, Bit>,
    chunk_diff: Signal<Local, Bits<32>>,
    newer: Signal<Local, Bit>,
    dec: Signal<Local, Bit>,
    dup: Signal<Local, Bit>,
    complete: Signal<Local, Bit>,
    add: Signal<Local, Bit>,
    single: Signal<Local, Bit>,
    claim: Signal<Local, Bit>,
    prio_new: Signal<Local, Bits<4>>,
    prio_old: Signal<Local, Bits<4>>,
    higher: Signal<Local, Bit>,
    preempt: Signal<Local, Bit>,
    fallback: Signal<Local, Bit>,
    fl_evict: Signal<Local, Bit>,
    fl_wipe: Signal<Local, Bit>,
    o_job: Signal<Local, Bits<4>>,
    o_cnt: Signal<Local, Bits<6>>,
    o_wk: Signal<Local, Bits<6>>,
    o_chunk: Signal<Local, Bits<32>>,
    o_bmp: Signal<Local, Bits<32>>,
    o_w0: Signal<Local, Bits<32>>,
    o_w1: Signal<Local, Bits<32>>,
    hdr_push: Signal<Local, Bit>,
    hdr_fwd: Signal<Local, Bit>,
    hdr_kind: Signal<Local, Bits<2>>,
    w_kind3: Widen<3, 2>,
    w_job32: Widen<32, 4>,
    w_cnt32: Widen<32, 6>,
    w_wk32: Widen<32, 6>,
    w_job17: Widen<17, 4>,
    w_wk17: Widen<17, 6>,
    w_cnt17: Widen<17, 6>,
    n_job: Signal<Local, Bits<4>>,
    n_wk: Signal<Local, Bits<6>>,
    n_cnt: Signal<Local, Bits<6>>,
    n_ctl: Signal<Local, Bits<17>>,

    // Value stage.
    old: [Signal<Local, Bits<32>>; L],
    sum: [Signal<Local, Bits<32>>; L],
    vout: [Signal<Local, Bits<32>>; L],
    val_push: Signal<Local, Bit>,

    // Output.
    lane_out: [Signal<Local, Bits<32>>; L],
    pack: Pack<W, 32, L>,
    pop: Signal<Local, Bit>,

    // Registers.
    wm: [Signal<Local, Bits<32>>; 4],
    wmask: Signal<Local, Bits<32>>,
}

impl<const L: usize, const W: usize, const SB: usize, const VB: usize, const AB: usize>
    GradAgg<L, W, SB, VB, AB>
{
    /// Elaborate the engine.
    ///
    /// # Panics
    /// At elaboration, when `W != 32 * L`, `L` is not 4..=16, `SB` is not
    /// 1..=12, `VB` is not a power of two, or `AB != SB + log2(VB)` or
    /// exceeds 16.
    pub fn new() -> Self {
        assert_eq!(W, 32 * L, "grad_agg: the stream is 32 bits per lane");
        assert!(
            (4..=16).contains(&L),
            "grad_agg: 4 to 16 lanes (the header fills four)"
        );
        assert!((1..=12).contains(&SB), "grad_agg: 2 to 4096 slots");
        assert!(
            VB.is_power_of_two(),
            "grad_agg: value beats must be a power of two"
        );
        let kb = VB.trailing_zeros() as usize;
        assert_eq!(AB, SB + kb, "grad_agg: AB must be SB + log2(VB)");
        assert!(AB <= 16, "grad_agg: sum RAM address wider than 16 bits");
        let chunk = (L * VB) as u64;
        let pkt = (4 * L * (1 + VB)) as u64;
        assert!(
            pkt < 1 << 16,
            "grad_agg: packet longer than tuser_size can say"
        );
        let geometry = L as u64 | (SB as u64) << 8 | (VB as u64) << 16 | MAX_WORKERS << 24;
        let ctl_empty = RAM::new(
            (0..1u64 << SB)
                .map(|i| (Bits::from(i), Bits::<17>::from(0u64)))
                .collect::<BTreeMap<_, _>>(),
        );
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tready: Default::default(),
            m_tdata: Default::default(),
            m_tuser: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            // Chunk, bitmap and sums are read only where the valid bit is
            // set (and were written when it was), so only the valid bits
            // need a power-on value.
            m_ctl: ctl_empty,
            m_chunk: Default::default(),
            m_bmp: Default::default(),
            acc: array_init::array_init(|_| Default::default()),
            f_lane: array_init::array_init(|_| Default::default()),
            f_ctl: Default::default(),
            counters: array_init::array_init(|_| Default::default()),
            prio: array_init::array_init(|_| Default::default()),
            flush_pending: Default::default(),
            flushing: Default::default(),
            fl_slot: Default::default(),
            fl_base: Default::default(),
            fl_phase: Default::default(),
            in_pkt: Default::default(),
            k: Default::default(),
            cur_idx: Default::default(),
            cur_base: Default::default(),
            d_step: Default::default(),
            d_flush: Default::default(),
            d_ok: Default::default(),
            d_job: Default::default(),
            d_worker: Default::default(),
            d_workers: Default::default(),
            d_chunk: Default::default(),
            d_beat: array_init::array_init(|_| Default::default()),
            pm_wval: Default::default(),
            pm_wsum: Default::default(),
            pm_oval: Default::default(),
            pm_oold: Default::default(),
            pm_osum: Default::default(),
            pm_kind: Default::default(),
            p1_valid: Default::default(),
            p1_addr: Default::default(),
            p1_last: Default::default(),
            p1_v: array_init::array_init(|_| Default::default()),
            pkt_bytes: konst(pkt),
            chunk_values: konst(chunk),
            version: konst(VERSION),
            flags_data: konst(F_DATA),
            max_workers: konst(MAX_WORKERS),
            zero8: konst(0),
            zero12: konst(0),
            one6: konst(1),
            zero32: konst(0),
            one32: konst(1),
            zero17: konst(0),
            zero4: konst(0),
            zero6: konst(0),
            half32: konst(1 << 31),
            valid17: konst(1 << 16),
            kb: konst(kb as u64),
            vb_ab: konst(VB as u64),
            vb_last: konst(VB as u64 - 1),
            zero_ab: konst(0),
            one_ab: konst(1),
            zero_sb: konst(0),
            one_sb: konst(1),
            slot_last: konst((1u64 << SB) - 1),
            fifo_room: konst(2),
            zero3: konst(0),
            last3: konst(4),
            w0_result: konst(VERSION | F_RESULT << 8 | chunk << 16),
            w0_evict: konst(VERSION | F_EVICT << 8 | chunk << 16),
            w0_nack: konst(VERSION | (F_RESULT | F_NACK) << 8 | chunk << 16),
            fallback_flag: konst(F_FALLBACK << 8),
            kind_result: konst(KIND_RESULT),
            kind_evict: konst(KIND_EVICT),
            kind_fallback: konst(KIND_FALLBACK),
            zero2: konst(0),
            geometry: konst(geometry),
            byte_mask: array_init::array_init(|i| konst(0xFF << (8 * i))),
            sh6: konst(6),
            sh12: konst(12),
            sh16: konst(16),
            sh24: konst(24),
            w_prio_lo: Constant::new(word_of(&grad::PRIO_LO)),
            w_prio_hi: Constant::new(word_of(&grad::PRIO_HI)),
            w_cmd: Constant::new(word_of(&grad::CMD)),
            w_status: Constant::new(word_of(&grad::STATUS)),
            w_geometry: Constant::new(word_of(&grad::GEOMETRY)),
            w_cnt_lo: array_init::array_init(|i| Constant::new(word_of(&grad::COUNTERS[2 * i]))),
            w_cnt_hi: array_init::array_init(|i| {
                Constant::new(word_of(&grad::COUNTERS[2 * i + 1]))
            }),
            job_no: array_init::array_init(|i| konst(i as u64)),
            job_no_hi: array_init::array_init(|i| konst(i as u64 + 8)),
            room: Default::default(),
            fire: Default::default(),
            hfire: Default::default(),
            vfire: Default::default(),
            fstep: Default::default(),
            fh: Default::default(),
            fv: Default::default(),
            start: Default::default(),
            h_w0: Default::default(),
            h_w1: Default::default(),
            h_chunk: Default::default(),
            h_ver: Default::default(),
            h_flags: Default::default(),
            h_count: Default::default(),
            h_job: Default::default(),
            h_worker: Default::default(),
            h_workers: Default::default(),
            hdr_ok: Default::default(),
            hash: Default::default(),
            slot: Default::default(),
            base: Default::default(),
            lane_in: array_init::array_init(|_| Default::default()),
            mv: Default::default(),
            mjob: Default::default(),
            mwk: Default::default(),
            mcnt: Default::default(),
            cnt1: Default::default(),
            wbit: Default::default(),
            hit: Default::default(),
            same: Default::default(),
            done: Default::default(),
            late: Default::default(),
            chunk_diff: Default::default(),
            newer: Default::default(),
            dec: Default::default(),
            dup: Default::default(),
            complete: Default::default(),
            add: Default::default(),
            single: Default::default(),
            claim: Default::default(),
            prio_new: Default::default(),
            prio_old: Default::default(),
            higher: Default::default(),
            preempt: Default::default(),
            fallback: Default::default(),
            fl_evict: Default::default(),
            fl_wipe: Default::default(),
            o_job: Default::default(),
            o_cnt: Default::default(),
            o_wk: Default::default(),
            o_chunk: Default::default(),
            o_bmp: Default::default(),
            o_w0: Default::default(),
            o_w1: Default::default(),
            hdr_push: Default::default(),
            hdr_fwd: Default::default(),
            hdr_kind: Default::default(),
            w_kind3: Default::default(),
            w_job32: Default::default(),
            w_cnt32: Default::default(),
            w_wk32: Default::default(),
            w_job17: Default::default(),
            w_wk17: Default::default(),
            w_cnt17: Default::default(),
            n_job: Default::default(),
            n_wk: Default::default(),
            n_cnt: Default::default(),
            n_ctl: Default::default(),
            old: array_init::array_init(|_| Default::default()),
            sum: array_init::array_init(|_| Default::default()),
            vout: array_init::array_init(|_| Default::default()),
            val_push: Default::default(),
            lane_out: array_init::array_init(|_| Default::default()),
            pack: Default::default(),
            pop: Default::default(),
            wm: array_init::array_init(|_| Default::default()),
            wmask: Default::default(),
        }
    }
}

impl<const L: usize, const W: usize, const SB: usize, const VB: usize, const AB: usize> Default
    for GradAgg<L, W, SB, VB, AB>
{
    fn default() -> Self {
        Self::new()
    }
}

impl<const L: usize, const W: usize, const SB: usize, const VB: usize, const AB: usize> Logic
    for GradAgg<L, W, SB, VB, AB>
{
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            flush_pending,
            flushing,
            fl_slot,
            fl_base,
            fl_phase,
            in_pkt,
            k,
            cur_idx,
            cur_base,
            d_step,
            d_flush,
            d_ok,
            d_job,
            d_worker,
            d_workers,
            d_chunk,
            pm_wval,
            pm_wsum,
            pm_oval,
            pm_oold,
            pm_osum,
            pm_kind,
            p1_valid,
            p1_addr,
            p1_last
        );
        for i in 0..2 {
            self.prio[i].clock.next = self.clock.val();
            self.prio[i].d.next = self.prio[i].q.val();
        }
        for i in 0..N_COUNTERS {
            self.counters[i].clock.next = self.clock.val();
            self.counters[i].inc.next = self.zero32.val();
            self.counters[i].clear.next = false;
            self.counters[i].latch.next = false;
        }
        for i in 0..L {
            self.d_beat[i].clock.next = self.clock.val();
            self.d_beat[i].d.next = self.d_beat[i].q.val();
            self.p1_v[i].clock.next = self.clock.val();
            self.p1_v[i].d.next = self.p1_v[i].q.val();
            self.acc[i].read_clock.next = self.clock.val();
            self.acc[i].write_clock.next = self.clock.val();
            self.f_lane[i].clock.next = self.clock.val();
        }
        self.m_ctl.read_clock.next = self.clock.val();
        self.m_ctl.write_clock.next = self.clock.val();
        self.m_chunk.read_clock.next = self.clock.val();
        self.m_chunk.write_clock.next = self.clock.val();
        self.m_bmp.read_clock.next = self.clock.val();
        self.m_bmp.write_clock.next = self.clock.val();
        self.f_ctl.clock.next = self.clock.val();

        // ---- Readiness: room in the output FIFO for what a step produces.
        self.room.next = self.f_ctl.count.val() <= self.fifo_room.val();
        // A requested flush lets the packet in progress finish first.
        self.s_tready.next = self.room.val()
            & !self.flushing.q.val()
            & (self.in_pkt.q.val() | !self.flush_pending.q.val());
        self.fire.next = self.s_tvalid.val() & self.s_tready.val();
        self.hfire.next = self.fire.val() & !self.in_pkt.q.val();
        self.vfire.next =
            self.fire.val() & self.in_pkt.q.val() & (self.k.q.val() < self.vb_ab.val());
        self.fstep.next = self.flushing.q.val() & self.room.val();
        self.fh.next = self.fstep.val() & (self.fl_phase.q.val() == self.zero_ab.val());
        self.fv.next = self.fstep.val() & (self.fl_phase.q.val() != self.zero_ab.val());
        self.start.next = self.flush_pending.q.val()
            & !self.flushing.q.val()
            & !self.in_pkt.q.val()
            & !self.d_step.q.val()
            & !self.p1_valid.q.val();

        // ---- Header fields and checks.
        self.h_w0.next = self.s_tdata.val().get_bits::<32>(0);
        self.h_w1.next = self.s_tdata.val().get_bits::<32>(32);
        self.h_chunk.next = self.s_tdata.val().get_bits::<32>(64);
        self.h_ver.next = self.h_w0.val().get_bits::<8>(0);
        self.h_flags.next = self.h_w0.val().get_bits::<8>(8);
        self.h_count.next = self.h_w0.val().get_bits::<16>(16);
        self.h_job.next = self.h_w1.val().get_bits::<16>(0);
        self.h_worker.next = self.h_w1.val().get_bits::<8>(16);
        self.h_workers.next = self.h_w1.val().get_bits::<8>(24);
        self.hdr_ok.next = (self.s_tuser_size.val() == self.pkt_bytes.val())
            & (self.h_ver.val() == self.version.val())
            & (self.h_flags.val() == self.flags_data.val())
            & (self.h_count.val() == self.chunk_values.val())
            & (self.h_job.val().get_bits::<12>(4) == self.zero12.val())
            & (self.h_workers.val() != self.zero8.val())
            & (self.h_workers.val() <= self.max_workers.val())
            & (self.h_worker.val() < self.h_workers.val());
        // The slot: (chunk + job) mod slots, computed AB bits wide so that
        // the sum RAM base (slot * VB) is the same sum shifted.
        self.hash.next = self.h_chunk.val().get_bits::<AB>(0) + self.h_job.val().get_bits::<AB>(0);
        self.slot.next = self.hash.val().get_bits::<SB>(0);
        self.base.next = self.hash.val() << self.kb.val();
        for i in 0..L {
            self.lane_in[i].next = self.s_tdata.val().get_bits::<32>(32 * i);
        }

        // ---- RAM read addresses: meta at the header step, sums at the
        // value step (the packet's base plus the beat index).
        self.m_ctl.read_address.next = self.slot.val();
        if self.flushing.q.val() {
            self.m_ctl.read_address.next = self.fl_slot.q.val();
        }
        self.m_chunk.read_address.next = self.m_ctl.read_address.val();
        self.m_bmp.read_address.next = self.m_ctl.read_address.val();
        for i in 0..L {
            self.acc[i].read_address.next = self.cur_base.q.val() + self.k.q.val();
        }

        // ---- Decision on the slot read at the header step.
        self.mv.next = self.m_ctl.read_data.val().get_bit(16);
        self.mjob.next = self.m_ctl.read_data.val().get_bits::<4>(12);
        self.mwk.next = self.m_ctl.read_data.val().get_bits::<6>(6);
        self.mcnt.next = self.m_ctl.read_data.val().get_bits::<6>(0);
        self.cnt1.next = self.mcnt.val() + self.one6.val();
        self.wbit.next = self.one32.val() << self.d_worker.q.val();
        self.hit.next = self.m_bmp.read_data.val() & self.wbit.val();
        self.dec.next = self.d_step.q.val() & self.d_ok.q.val() & !self.d_flush.q.val();
        // The decision's terms, computed only on the decision step (every
        // one is ANDed with `dec`): a simulator skips the compares and the
        // two 16-way priority lookups on every other cycle.
        self.same.next = false;
        self.done.next = false;
        self.late.next = false;
        self.chunk_diff.next = self.zero32.val();
        self.newer.next = false;
        self.dup.next = false;
        self.complete.next = false;
        self.add.next = false;
        self.single.next = false;
        self.claim.next = false;
        self.prio_new.next = self.zero4.val();
        self.prio_old.next = self.zero4.val();
        self.higher.next = false;
        self.preempt.next = false;
        self.fallback.next = false;
        if self.dec.val() {
            self.same.next = self.mv.val()
                & (self.mjob.val() == self.d_job.q.val())
                & (self.m_chunk.read_data.val() == self.d_chunk.q.val());
            // A done mark: the slot is free but completed this very chunk last
            // (only a completion leaves the valid bit clear with a count).
            self.done.next = !self.mv.val()
                & (self.mcnt.val() != self.zero6.val())
                & (self.mjob.val() == self.d_job.q.val())
                & (self.mwk.val() == self.d_workers.q.val())
                & (self.m_chunk.read_data.val() == self.d_chunk.q.val());
            // A late copy of that chunk is dropped (counted as a duplicate).
            self.late.next = self.dec.val() & self.done.val();
            // Serial-number order: the holder is an older chunk of the same job.
            self.chunk_diff.next = self.d_chunk.q.val() - self.m_chunk.read_data.val();
            self.newer.next = (self.mjob.val() == self.d_job.q.val())
                & (self.chunk_diff.val() < self.half32.val());
            self.dup.next = self.dec.val() & self.same.val() & self.hit.val().any();
            self.complete.next = self.dec.val()
                & self.same.val()
                & !self.hit.val().any()
                & (self.cnt1.val() == self.mwk.val());
            self.add.next = self.dec.val()
                & self.same.val()
                & !self.hit.val().any()
                & (self.cnt1.val() != self.mwk.val());
            // A single-worker chunk completes on arrival and needs no slot, so
            // it never evicts one (that would take a second output packet).
            self.single.next = self.dec.val()
                & !self.same.val()
                & !self.done.val()
                & (self.d_workers.q.val() == self.one6.val());
            self.claim.next = self.dec.val()
                & !self.same.val()
                & !self.done.val()
                & (self.d_workers.q.val() != self.one6.val())
                & !self.mv.val();
            self.prio_new.next = self.prio[0].q.val().get_bits::<4>(0);
            self.prio_old.next = self.prio[0].q.val().get_bits::<4>(0);
            for i in 0..8 {
                if self.d_job.q.val() == self.job_no[i].val() {
                    self.prio_new.next = self.prio[0].q.val().get_bits::<4>(4 * i);
                }
                if self.d_job.q.val() == self.job_no_hi[i].val() {
                    self.prio_new.next = self.prio[1].q.val().get_bits::<4>(4 * i);
                }
                if self.mjob.val() == self.job_no[i].val() {
                    self.prio_old.next = self.prio[0].q.val().get_bits::<4>(4 * i);
                }
                if self.mjob.val() == self.job_no_hi[i].val() {
                    self.prio_old.next = self.prio[1].q.val().get_bits::<4>(4 * i);
                }
            }
            self.higher.next = (self.prio_new.val() > self.prio_old.val()) | self.newer.val();
            self.preempt.next = self.dec.val()
                & !self.same.val()
                & (self.d_workers.q.val() != self.one6.val())
                & self.mv.val()
                & self.higher.val();
            self.fallback.next = self.dec.val()
                & !self.same.val()
                & (self.d_workers.q.val() != self.one6.val())
                & self.mv.val()
                & !self.higher.val();
        }
        self.fl_wipe.next = self.d_step.q.val() & self.d_flush.q.val();
        self.fl_evict.next = self.fl_wipe.val() & self.mv.val();

        // The output header's fields: the holder's on an eviction, the
        // chunk's own on a result.
        self.o_job.next = self.d_job.q.val();
        self.o_cnt.next = self.cnt1.val();
        self.o_wk.next = self.mwk.val();
        self.o_chunk.next = self.d_chunk.q.val();
        self.o_bmp.next = self.m_bmp.read_data.val() | self.wbit.val();
        self.o_w0.next = self.w0_result.val();
        self.hdr_kind.next = self.kind_result.val();
        if self.single.val() {
            self.o_cnt.next = self.one6.val();
            self.o_wk.next = self.one6.val();
            self.o_bmp.next = self.wbit.val();
        }
        if self.preempt.val() | self.fl_evict.val() {
            self.o_job.next = self.mjob.val();
            self.o_cnt.next = self.mcnt.val();
            self.o_chunk.next = self.m_chunk.read_data.val();
            self.o_bmp.next = self.m_bmp.read_data.val();
            self.o_w0.next = self.w0_evict.val();
            self.hdr_kind.next = self.kind_evict.val();
        }
        if self.fallback.val() {
            self.hdr_kind.next = self.kind_fallback.val();
        }
        // A copy whose contribution is in: a NACK (a RESULT with the NACK
        // flag) with the slot's count and bitmap, so the fan-out sends it
        // to exactly the workers missing from the slot.
        if self.dup.val() {
            self.o_cnt.next = self.mcnt.val();
            self.o_w0.next = self.w0_nack.val();
        }
        self.w_job32.narrow.next = self.o_job.val();
        self.w_cnt32.narrow.next = self.o_cnt.val();
        self.w_wk32.narrow.next = self.o_wk.val();
        self.o_w1.next = self.w_job32.wide.val()
            | (self.w_cnt32.wide.val() << self.sh16.val())
            | (self.w_wk32.wide.val() << self.sh24.val());
        self.hdr_fwd.next = self.fallback.val();
        self.hdr_push.next = self.complete.val()
            | self.dup.val()
            | self.single.val()
            | self.preempt.val()
            | self.fallback.val()
            | self.fl_evict.val();

        // The slot's new bookkeeping.
        self.n_job.next = self.d_job.q.val();
        self.n_wk.next = self.d_workers.q.val();
        self.n_cnt.next = self.one6.val();
        if self.add.val() | self.complete.val() {
            self.n_job.next = self.mjob.val();
            self.n_wk.next = self.mwk.val();
            self.n_cnt.next = self.cnt1.val();
        }
        self.w_job17.narrow.next = self.n_job.val();
        self.w_wk17.narrow.next = self.n_wk.val();
        self.w_cnt17.narrow.next = self.n_cnt.val();
        self.m_ctl.write_address.next = self.cur_idx.q.val();
        self.m_chunk.write_address.next = self.cur_idx.q.val();
        self.m_bmp.write_address.next = self.cur_idx.q.val();
        // A completion keeps the fields with the valid bit clear: the done
        // mark a late copy of the chunk is recognised (and dropped) by.
        self.n_ctl.next = (self.w_job17.wide.val() << self.sh12.val())
            | (self.w_wk17.wide.val() << self.sh6.val())
            | self.w_cnt17.wide.val();
        self.m_ctl.write_data.next = self.n_ctl.val() | self.valid17.val();
        if self.complete.val() {
            self.m_ctl.write_data.next = self.n_ctl.val();
        }
        self.m_chunk.write_data.next = self.d_chunk.q.val();
        self.m_bmp.write_data.next = self.wbit.val();
        if self.add.val() | self.complete.val() {
            self.m_bmp.write_data.next = self.o_bmp.val();
        }
        if self.fl_wipe.val() {
            self.m_ctl.write_data.next = self.zero17.val();
            self.m_chunk.write_data.next = self.zero32.val();
            self.m_bmp.write_data.next = self.zero32.val();
        }
        self.m_ctl.write_enable.next = self.add.val()
            | self.complete.val()
            | self.claim.val()
            | self.preempt.val()
            | self.fl_wipe.val();
        self.m_chunk.write_enable.next = self.m_ctl.write_enable.val();
        self.m_bmp.write_enable.next = self.m_ctl.write_enable.val();

        // What the value beats do, latched at every decision.
        if self.d_step.q.val() {
            self.pm_wval.d.next = self.claim.val() | self.preempt.val();
            self.pm_wsum.d.next = self.add.val();
            self.pm_oval.d.next = self.single.val() | self.fallback.val() | self.dup.val();
            self.pm_oold.d.next = self.preempt.val() | self.fl_evict.val();
            self.pm_osum.d.next = self.complete.val();
            if self.hdr_push.val() {
                self.pm_kind.d.next = self.hdr_kind.val();
            }
        }

        // ---- Value stage: each lane adds, writes back and/or sends.
        self.val_push.next = self.p1_valid.q.val()
            & (self.pm_oval.q.val() | self.pm_oold.q.val() | self.pm_osum.q.val());
        for i in 0..L {
            // The slot's old value and the sum only with a value beat in
            // the stage: a simulator skips the lane adders on other
            // cycles, and in hardware the valid bit is one more input to
            // the value mux.
            self.old[i].next = self.zero32.val();
            self.sum[i].next = self.zero32.val();
            self.vout[i].next = self.p1_v[i].q.val();
            self.acc[i].write_address.next = self.p1_addr.q.val();
            self.acc[i].write_data.next = self.p1_v[i].q.val();
            if self.p1_valid.q.val() {
                self.old[i].next = self.acc[i].read_data.val();
                self.sum[i].next = self.old[i].val() + self.p1_v[i].q.val();
                if self.pm_oold.q.val() {
                    self.vout[i].next = self.old[i].val();
                }
                if self.pm_osum.q.val() {
                    self.vout[i].next = self.sum[i].val();
                }
                if self.pm_wsum.q.val() {
                    self.acc[i].write_data.next = self.sum[i].val();
                }
            }
            self.acc[i].write_enable.next =
                self.p1_valid.q.val() & (self.pm_wval.q.val() | self.pm_wsum.q.val());
        }

        // ---- Output FIFO: the decision's header or the value stage's beat.
        self.f_ctl.push.next = self.hdr_push.val() | self.val_push.val();
        self.w_kind3.narrow.next = self.pm_kind.q.val();
        if self.hdr_push.val() {
            self.w_kind3.narrow.next = self.hdr_kind.val();
        }
        self.f_ctl.data_in.next = self.w_kind3.wide.val();
        if self.val_push.val() & !self.hdr_push.val() & self.p1_last.q.val() {
            self.f_ctl.data_in.next = self.w_kind3.wide.val() | self.last3.val();
        }
        for i in 0..L {
            self.f_lane[i].push.next = self.f_ctl.push.val();
            self.f_lane[i].wr.next = self.f_ctl.wr.val();
            self.f_lane[i].rd.next = self.f_ctl.rd.val();
            self.f_lane[i].data_in.next = self.vout[i].val();
            if self.hdr_push.val() {
                self.f_lane[i].data_in.next = self.zero32.val();
                if self.hdr_fwd.val() {
                    self.f_lane[i].data_in.next = self.d_beat[i].q.val();
                }
            }
        }
        if self.hdr_push.val() {
            self.f_lane[0].data_in.next = self.o_w0.val();
            self.f_lane[1].data_in.next = self.o_w1.val();
            self.f_lane[2].data_in.next = self.o_chunk.val();
            self.f_lane[3].data_in.next = self.o_bmp.val();
            if self.hdr_fwd.val() {
                self.f_lane[0].data_in.next = self.d_beat[0].q.val() | self.fallback_flag.val();
                self.f_lane[1].data_in.next = self.d_beat[1].q.val();
                self.f_lane[2].data_in.next = self.d_beat[2].q.val();
                self.f_lane[3].data_in.next = self.d_beat[3].q.val();
            }
        }

        // ---- Header step.
        self.d_step.d.next = self.hfire.val() | self.fh.val();
        if self.hfire.val() {
            self.d_flush.d.next = false;
            self.d_ok.d.next = self.hdr_ok.val();
            self.d_job.d.next = self.h_job.val().get_bits::<4>(0);
            self.d_worker.d.next = self.h_worker.val().get_bits::<5>(0);
            self.d_workers.d.next = self.h_workers.val().get_bits::<6>(0);
            self.d_chunk.d.next = self.h_chunk.val();
            for i in 0..L {
                self.d_beat[i].d.next = self.lane_in[i].val();
            }
            self.cur_idx.d.next = self.slot.val();
            self.cur_base.d.next = self.base.val();
            self.k.d.next = self.zero_ab.val();
            self.counters[0].inc.next = self.one32.val();
            if !self.hdr_ok.val() {
                self.counters[6].inc.next = self.one32.val();
            }
        }
        if self.fh.val() {
            self.d_flush.d.next = true;
            self.cur_idx.d.next = self.fl_slot.q.val();
            self.cur_base.d.next = self.fl_base.q.val();
            self.k.d.next = self.zero_ab.val();
        }

        // ---- Value step.
        self.p1_valid.d.next = self.vfire.val() | self.fv.val();
        if self.vfire.val() | self.fv.val() {
            self.p1_addr.d.next = self.cur_base.q.val() + self.k.q.val();
            self.p1_last.d.next = self.k.q.val() == self.vb_last.val();
            for i in 0..L {
                self.p1_v[i].d.next = self.lane_in[i].val();
            }
            self.k.d.next = self.k.q.val() + self.one_ab.val();
        }
        if self.fire.val() {
            self.in_pkt.d.next = !self.s_tlast.val();
        }

        // ---- Flush walk: per slot a header step and VB value steps.
        if self.fstep.val() {
            if self.fl_phase.q.val() == self.vb_ab.val() {
                self.fl_phase.d.next = self.zero_ab.val();
                self.fl_base.d.next = self.fl_base.q.val() + self.vb_ab.val();
                self.fl_slot.d.next = self.fl_slot.q.val() + self.one_sb.val();
                if self.fl_slot.q.val() == self.slot_last.val() {
                    self.flushing.d.next = false;
                    self.flush_pending.d.next = false;
                    self.fl_slot.d.next = self.zero_sb.val();
                }
            } else {
                self.fl_phase.d.next = self.fl_phase.q.val() + self.one_ab.val();
            }
        }
        if self.start.val() {
            self.flushing.d.next = true;
            self.fl_slot.d.next = self.zero_sb.val();
            self.fl_base.d.next = self.zero_ab.val();
            self.fl_phase.d.next = self.zero_ab.val();
        }

        // ---- Decision counters.
        if self.complete.val() | self.single.val() {
            self.counters[2].inc.next = self.one32.val();
        }
        if self.add.val()
            | self.claim.val()
            | self.complete.val()
            | self.single.val()
            | self.preempt.val()
        {
            self.counters[1].inc.next = self.one32.val();
        }
        if self.preempt.val() {
            self.counters[3].inc.next = self.one32.val();
        }
        if self.fallback.val() {
            self.counters[4].inc.next = self.one32.val();
        }
        if self.dup.val() | self.late.val() {
            self.counters[5].inc.next = self.one32.val();
        }
        if self.fl_evict.val() {
            self.counters[7].inc.next = self.one32.val();
        }

        // ---- Outputs (zero while not valid, so every cycle's outputs are
        // defined and the witnesses compare them all).
        self.m_tvalid.next = self.f_ctl.count.val() != self.zero3.val();
        self.pop.next = self.m_tvalid.val() & self.m_tready.val();
        self.f_ctl.pop.next = self.pop.val();
        self.m_tlast.next = self.m_tvalid.val() & self.f_ctl.data_out.val().get_bit(2);
        self.m_tuser.next = self.zero2.val();
        if self.m_tvalid.val() {
            self.m_tuser.next = self.f_ctl.data_out.val().get_bits::<2>(0);
        }
        for i in 0..L {
            self.lane_out[i].next = self.zero32.val();
            if self.m_tvalid.val() {
                self.lane_out[i].next = self.f_lane[i].data_out.val();
            }
            self.pack.lane[i].next = self.lane_out[i].val();
        }
        self.m_tdata.next = self.pack.out.val();

        // ---- Registers.
        for i in 0..4 {
            self.wm[i].next = self.zero32.val();
            if self.eng_wstrb.val().get_bit(i) {
                self.wm[i].next = self.byte_mask[i].val();
            }
        }
        self.wmask.next = self.wm[0].val() | self.wm[1].val() | self.wm[2].val() | self.wm[3].val();
        if self.eng_we.val() {
            if self.eng_waddr.val() == self.w_prio_lo.val() {
                self.prio[0].d.next = (self.prio[0].q.val() & !self.wmask.val())
                    | (self.eng_wdata.val() & self.wmask.val());
            }
            if self.eng_waddr.val() == self.w_prio_hi.val() {
                self.prio[1].d.next = (self.prio[1].q.val() & !self.wmask.val())
                    | (self.eng_wdata.val() & self.wmask.val());
            }
            if (self.eng_waddr.val() == self.w_cmd.val()) & self.eng_wstrb.val().get_bit(0) {
                if self.eng_wdata.val().get_bit(0) {
                    self.flush_pending.d.next = true;
                }
                if self.eng_wdata.val().get_bit(1) {
                    for i in 0..N_COUNTERS {
                        self.counters[i].clear.next = true;
                    }
                }
            }
        }
        self.eng_rdata.next = self.zero32.val();
        // Decoded only on a read: the CSR block takes `eng_rdata` only in
        // the cycle `eng_re` is high, and a simulator skips the decoder on
        // every other cycle.
        if self.eng_re.val() {
            if self.eng_raddr.val() == self.w_prio_lo.val() {
                self.eng_rdata.next = self.prio[0].q.val();
            }
            if self.eng_raddr.val() == self.w_prio_hi.val() {
                self.eng_rdata.next = self.prio[1].q.val();
            }
            if (self.eng_raddr.val() == self.w_status.val()) & self.flush_pending.q.val() {
                self.eng_rdata.next = self.one32.val();
            }
            if self.eng_raddr.val() == self.w_geometry.val() {
                self.eng_rdata.next = self.geometry.val();
            }
            for i in 0..N_COUNTERS {
                if self.eng_raddr.val() == self.w_cnt_lo[i].val() {
                    self.eng_rdata.next = self.counters[i].lo.val();
                    self.counters[i].latch.next = self.eng_re.val();
                }
                if self.eng_raddr.val() == self.w_cnt_hi[i].val() {
                    self.eng_rdata.next = self.counters[i].hi_latched.val();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_elaborates_and_emits_verilog() {
        let mut uut = GradAgg::<4, 128, 2, 2, 3>::new();
        uut.connect_all();
        let v = generate_verilog(&uut);
        assert!(v.contains("module top"));
    }

    #[test]
    #[should_panic(expected = "AB must be SB + log2(VB)")]
    fn bad_geometry_is_refused_at_elaboration() {
        let _ = GradAgg::<4, 128, 2, 2, 2>::new();
    }
}
