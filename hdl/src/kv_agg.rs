//! The key-value aggregation engine (after ASK), specified by
//! `weft_model::kv_agg` (read its model first).
//!
//! Pipeline, one beat per cycle, never stalled by hazards:
//! - **accept** (cycle t): parse the header beat (validate it against the
//!   packet length from `s_tuser_size`, check the sender's sequence window,
//!   queue the ack), decide which lanes carry tuples, and issue every lane's
//!   bank read at its key's slot;
//! - **update** (cycle t+1): each lane reads its slot (forwarded from the
//!   lane's previous write when that write went to the same slot, which the
//!   RAM cannot show yet), then inserts, adds, replaces or rejects, writes
//!   the slot back and emits at most one spill record; a beat with any
//!   spill record becomes one record beat in the output FIFO.
//!
//! Every lane owns its bank (three RAMs: key, partial sum, valid + hit
//! counter), so all lanes update in the same cycle. The input is held off
//! only when an output FIFO could overflow (output back-pressure) or a flush
//! runs. Registers are the `kv` block of weft-regs, served on the engine
//! register port that the CSR block forwards.

use crate::common::{konst, word_of, Cat, Counter64, Fifo4, Fifo4Mem, Pack, Widen};
use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use weft_regs::kv;

/// Bits of a return address (`weft_regs::wire::RET_BITS`).
pub const RET: usize = weft_regs::wire::RET_BITS;

/// Senders with a sequence window (sender ids 0..16).
pub const SENDERS: usize = 16;
/// Sequence window per sender, in packets (the width of the window bitmap).
pub const WINDOW: usize = 32;
/// Largest accepted packet (UDP payload of a 9000-byte frame).
pub const MAX_PACKET_BYTES: u64 = 8972;
/// Saturation of the per-slot hit counter.
pub const HITS_MAX: u64 = 7;
/// Counters, in `kv::COUNTERS` order: 0 packets, 1 tuples in, 2 aggregated,
/// 3 spilled, 4 evicted, 5 overflows, 6 duplicate packets, 7 malformed,
/// 8 window drops (rust-hdl indexes arrays by literals, hence numbers).
pub const N_COUNTERS: usize = 9;

/// The engine with `L` lanes of 64 bits (`W = 64 * L`) and banks of
/// `1 << SB` slots.
#[derive(LogicBlock)]
pub struct KvAgg<const L: usize, const W: usize, const SB: usize> {
    /// Clock (`axis_aclk`).
    pub clock: Signal<In, Clock>,
    /// Input stream: UDP payloads of aggregation packets.
    pub s_tdata: Signal<In, Bits<W>>,
    /// Last beat of a packet.
    pub s_tlast: Signal<In, Bit>,
    /// Beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Packet length in bytes (the OpenNIC shell's `tuser_size`).
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// The packet's return address (`weft_regs::wire::RET_BITS`), taken
    /// with the header beat and echoed on its ack (`a_tret`).
    pub s_tret: Signal<In, Bits<RET>>,
    /// The engine takes the beat.
    pub s_tready: Signal<Out, Bit>,
    /// Record stream: lane i holds key (bits 64i+31:64i) and partial sum.
    pub m_tdata: Signal<Out, Bits<W>>,
    /// Which lanes hold a record.
    pub m_tkeep: Signal<Out, Bits<L>>,
    /// Record kind: 1 spill, 2 flush, 3 flush done.
    pub m_tuser: Signal<Out, Bits<2>>,
    /// Every record beat is a packet of its own.
    pub m_tlast: Signal<Out, Bit>,
    /// Record beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// The host takes the record beat.
    pub m_tready: Signal<In, Bit>,
    /// Ack record: seq (31:0), status (39:32), the window base after the
    /// packet, low byte (47:40), sender (63:48).
    pub a_tdata: Signal<Out, Bits<64>>,
    /// The acked packet's return address.
    pub a_tret: Signal<Out, Bits<RET>>,
    /// The acked packet's job id.
    pub a_tjob: Signal<Out, Bits<16>>,
    /// Ack valid.
    pub a_tvalid: Signal<Out, Bit>,
    /// The host takes the ack.
    pub a_tready: Signal<In, Bit>,
    /// The active job (`kv.JOB`), for the record frames' header.
    pub job_out: Signal<Out, Bits<16>>,
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

    // Banks: per lane, key / partial sum / {valid, hits[2:0]}.
    key_ram: [RAM<Bits<32>, SB>; L],
    acc_ram: [RAM<Bits<32>, SB>; L],
    meta_ram: [RAM<Bits<4>, SB>; L],

    // Output FIFOs: record beats (lane keys, lane sums, keep, kind) and acks.
    // A record beat's lanes, keep and kind move together: `f_kind` keeps
    // the pointers, the others follow them. Likewise an ack's four fields
    // with `f_ack_lo`.
    f_key: [Fifo4Mem<Bits<32>>; L],
    f_acc: [Fifo4Mem<Bits<32>>; L],
    f_keep: Fifo4Mem<Bits<L>>,
    f_kind: Fifo4<Bits<2>>,
    f_ack_lo: Fifo4<Bits<32>>,
    f_ack_hi: Fifo4Mem<Bits<32>>,
    f_ack_ret: Fifo4Mem<Bits<RET>>,
    f_ack_job: Fifo4Mem<Bits<16>>,

    counters: [Counter64; N_COUNTERS],

    // Registers.
    replace: DFFWithInit<Bit>,
    job: DFF<Bits<16>>,
    flush_pending: DFF<Bit>,
    flushing: DFF<Bit>,
    flush_idx: DFF<Bits<SB>>,
    f1_valid: DFF<Bit>,
    f1_idx: DFF<Bits<SB>>,
    done_pending: DFF<Bit>,

    // Packet state.
    in_pkt: DFF<Bit>,
    pkt_agg: DFF<Bit>,
    left: DFF<Bits<16>>,
    win_base: [DFF<Bits<32>>; SENDERS],
    win_bits: [DFF<Bits<32>>; SENDERS],

    // Update stage registers and the per-lane forwarding register.
    p1_valid: [DFF<Bit>; L],
    p1_key: [DFF<Bits<32>>; L],
    p1_val: [DFF<Bits<32>>; L],
    p1_idx: [DFF<Bits<SB>>; L],
    last_we: [DFF<Bit>; L],
    last_idx: [DFF<Bits<SB>>; L],
    last_key: [DFF<Bits<32>>; L],
    last_acc: [DFF<Bits<32>>; L],
    last_meta: [DFF<Bits<4>>; L],

    // Constants.
    lane_no: [Constant<Bits<16>>; L],
    hdr_lane_no: [Constant<Bits<16>>; L],
    n_hdr_tuples: Constant<Bits<16>>,
    n_lanes: Constant<Bits<16>>,
    zero16: Constant<Bits<16>>,
    version: Constant<Bits<8>>,
    flags_data: Constant<Bits<8>>,
    n_senders: Constant<Bits<16>>,
    hdr_bytes: Constant<Bits<20>>,
    max_bytes: Constant<Bits<20>>,
    ones16: Constant<Bits<16>>,
    ones8: Constant<Bits<8>>,
    ones4: Constant<Bits<4>>,
    ones2: Constant<Bits<2>>,
    t16: Constant<Bits<6>>,
    t8: Constant<Bits<6>>,
    t4: Constant<Bits<6>>,
    t2: Constant<Bits<6>>,
    t1: Constant<Bits<6>>,
    hits_max: Constant<Bits<3>>,
    slot_last: Constant<Bits<SB>>,
    slot_one: Constant<Bits<SB>>,
    fifo_room: Constant<Bits<3>>,
    kind_spill: Constant<Bits<2>>,
    kind_flush: Constant<Bits<2>>,
    kind_done: Constant<Bits<2>>,
    status_new: Constant<Bits<32>>,
    status_dup: Constant<Bits<32>>,
    geometry: Constant<Bits<32>>,
    w_ctrl: Constant<Bits<14>>,
    w_job: Constant<Bits<14>>,
    w_cmd: Constant<Bits<14>>,
    w_status: Constant<Bits<14>>,
    w_geometry: Constant<Bits<14>>,
    w_cnt_lo: [Constant<Bits<14>>; N_COUNTERS],
    w_cnt_hi: [Constant<Bits<14>>; N_COUNTERS],
    zero5: Constant<Bits<5>>,
    zero6: Constant<Bits<6>>,
    zero3: Constant<Bits<3>>,
    zero32: Constant<Bits<32>>,
    one32: Constant<Bits<32>>,
    zero4: Constant<Bits<4>>,
    one4: Constant<Bits<4>>,
    meta_new: Constant<Bits<4>>,
    zero_l: Constant<Bits<L>>,
    lane_bit: [Constant<Bits<L>>; L],
    byte_mask: [Constant<Bits<16>>; 2],
    zero_slot: Constant<Bits<SB>>,
    zero16w: Constant<Bits<16>>,

    // Accept stage.
    fire: Signal<Local, Bit>,
    is_hdr: Signal<Local, Bit>,
    h_ver: Signal<Local, Bits<8>>,
    h_flags: Signal<Local, Bits<8>>,
    h_count: Signal<Local, Bits<16>>,
    h_job: Signal<Local, Bits<16>>,
    h_sender: Signal<Local, Bits<16>>,
    h_sidx: Signal<Local, Bits<4>>,
    h_seq: Signal<Local, Bits<32>>,
    exp_size: Signal<Local, Bits<20>>,
    size20: Signal<Local, Bits<20>>,
    hdr_ok: Signal<Local, Bit>,
    cur_base: Signal<Local, Bits<32>>,
    /// The sender's window base once a fresh packet is taken.
    new_base: Signal<Local, Bits<32>>,
    /// Bits 15:8 of an ack's high word: the window base's low byte (after
    /// a fresh packet; as it is for a duplicate).
    ack_base_new: Signal<Local, Bits<32>>,
    ack_base_dup: Signal<Local, Bits<32>>,
    mask8: Constant<Bits<32>>,
    cur_bits: Signal<Local, Bits<32>>,
    d: Signal<Local, Bits<32>>,
    d5: Signal<Local, Bits<5>>,
    old: Signal<Local, Bit>,
    in_win: Signal<Local, Bit>,
    seen: Signal<Local, Bit>,
    fresh: Signal<Local, Bit>,
    dup: Signal<Local, Bit>,
    x: [Signal<Local, Bits<32>>; 7],
    t: [Signal<Local, Bits<6>>; 7],
    agg_pkt: Signal<Local, Bit>,
    lane_v: [Signal<Local, Bit>; L],
    lane_key: [Signal<Local, Bits<32>>; L],
    hash_full: [Signal<Local, Bits<32>>; L],
    hash: [Signal<Local, Bits<SB>>; L],
    room: Signal<Local, Bit>,
    p1_any: Signal<Local, Bit>,

    // Update stage.
    cur_key: [Signal<Local, Bits<32>>; L],
    cur_acc: [Signal<Local, Bits<32>>; L],
    cur_meta: [Signal<Local, Bits<4>>; L],
    sum: [Signal<Local, Bits<32>>; L],
    ovf: [Signal<Local, Bit>; L],
    sp_v: [Signal<Local, Bit>; L],
    sp_key: [Signal<Local, Bits<32>>; L],
    sp_acc: [Signal<Local, Bits<32>>; L],
    ev_agg: [Signal<Local, Bits<32>>; L],
    ev_spill: [Signal<Local, Bits<32>>; L],
    ev_evict: [Signal<Local, Bits<32>>; L],
    ev_ovf: [Signal<Local, Bits<32>>; L],
    n_agg: [Signal<Local, Bits<32>>; L],
    n_spill: [Signal<Local, Bits<32>>; L],
    n_evict: [Signal<Local, Bits<32>>; L],
    n_ovf: [Signal<Local, Bits<32>>; L],
    kc: [Signal<Local, Bits<L>>; L],
    keep: Signal<Local, Bits<L>>,
    any_spill: Signal<Local, Bit>,
    lane_word: [Cat<64, 32, 32>; L],
    w_count20: Widen<20, 16>,
    w_size20: Widen<20, 16>,
    w_sender32: Widen<32, 16>,
    w_count32: Widen<32, 16>,
    w_t32: Widen<32, 6>,
    w_job32: Widen<32, 16>,
    w_ack_lo: Widen<64, 32>,
    w_ack_hi: Widen<64, 32>,
    tuple_lane: [Constant<Bit>; L],
    onehot: Signal<Local, Bits<32>>,
    pack: Pack<W, 64, L>,
    wm: [Signal<Local, Bits<16>>; 2],
    busy: Signal<Local, Bit>,
    reg_merge: Signal<Local, Bits<16>>,
    wmask: Signal<Local, Bits<16>>,
}

impl<const L: usize, const W: usize, const SB: usize> KvAgg<L, W, SB> {
    /// Elaborate the engine.
    ///
    /// # Panics
    /// At elaboration, when `W != 64 * L`, `L` is not 2..=8, or `SB` is not
    /// 1..=14.
    pub fn new() -> Self {
        assert_eq!(W, 64 * L, "kv_agg: the stream is 64 bits per lane");
        assert!(
            (2..=8).contains(&L),
            "kv_agg: 2 to 8 lanes (header fills two)"
        );
        assert!((1..=14).contains(&SB), "kv_agg: 2 to 16384 slots per bank");
        let zeros4 = || {
            RAM::new(
                (0..1u64 << SB)
                    .map(|i| (Bits::from(i), Bits::<4>::from(0u64)))
                    .collect::<BTreeMap<_, _>>(),
            )
        };
        let geometry = L as u64 | (SB as u64) << 8 | (SENDERS as u64) << 16 | (WINDOW as u64) << 24;
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tret: Default::default(),
            s_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tuser: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            a_tdata: Default::default(),
            a_tret: Default::default(),
            a_tjob: Default::default(),
            job_out: Default::default(),
            a_tvalid: Default::default(),
            a_tready: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            // Keys and sums are read only where the slot's valid bit is set,
            // so only the valid bits need a power-on value.
            key_ram: array_init::array_init(|_| Default::default()),
            acc_ram: array_init::array_init(|_| Default::default()),
            meta_ram: array_init::array_init(|_| zeros4()),
            f_key: array_init::array_init(|_| Default::default()),
            f_acc: array_init::array_init(|_| Default::default()),
            f_keep: Default::default(),
            f_kind: Default::default(),
            f_ack_lo: Default::default(),
            f_ack_hi: Default::default(),
            f_ack_ret: Default::default(),
            f_ack_job: Default::default(),
            counters: array_init::array_init(|_| Default::default()),
            replace: {
                let reset = match kv::CTRL.value {
                    weft_regs::Value::Live { reset } => kv::CTRL_REPLACE.get(reset),
                    _ => 0,
                };
                DFFWithInit::new(reset != 0)
            },
            job: Default::default(),
            flush_pending: Default::default(),
            flushing: Default::default(),
            flush_idx: Default::default(),
            f1_valid: Default::default(),
            f1_idx: Default::default(),
            done_pending: Default::default(),
            in_pkt: Default::default(),
            pkt_agg: Default::default(),
            left: Default::default(),
            win_base: array_init::array_init(|_| Default::default()),
            win_bits: array_init::array_init(|_| Default::default()),
            p1_valid: array_init::array_init(|_| Default::default()),
            p1_key: array_init::array_init(|_| Default::default()),
            p1_val: array_init::array_init(|_| Default::default()),
            p1_idx: array_init::array_init(|_| Default::default()),
            last_we: array_init::array_init(|_| Default::default()),
            last_idx: array_init::array_init(|_| Default::default()),
            last_key: array_init::array_init(|_| Default::default()),
            last_acc: array_init::array_init(|_| Default::default()),
            last_meta: array_init::array_init(|_| Default::default()),
            lane_no: array_init::array_init(|i| konst(i as u64)),
            // Tuples in a first beat sit in lanes 2.. (tuple i - 2); lanes 0
            // and 1 hold the header and never carry a tuple there.
            hdr_lane_no: array_init::array_init(|i| konst(i.saturating_sub(2) as u64)),
            n_hdr_tuples: konst(L as u64 - 2),
            n_lanes: konst(L as u64),
            zero16: konst(0),
            version: konst(1),
            flags_data: konst(1),
            n_senders: konst(SENDERS as u64),
            hdr_bytes: konst(16),
            max_bytes: konst(MAX_PACKET_BYTES),
            ones16: konst(0xFFFF),
            ones8: konst(0xFF),
            ones4: konst(0xF),
            ones2: konst(0x3),
            t16: konst(16),
            t8: konst(8),
            t4: konst(4),
            t2: konst(2),
            t1: konst(1),
            hits_max: konst(HITS_MAX),
            slot_last: konst((1u64 << SB) - 1),
            slot_one: konst(1),
            fifo_room: konst(2),
            kind_spill: konst(1),
            kind_flush: konst(2),
            kind_done: konst(3),
            status_new: konst(1),
            status_dup: konst(2),
            geometry: konst(geometry),
            w_ctrl: Constant::new(word_of(&kv::CTRL)),
            w_job: Constant::new(word_of(&kv::JOB)),
            w_cmd: Constant::new(word_of(&kv::CMD)),
            w_status: Constant::new(word_of(&kv::STATUS)),
            w_geometry: Constant::new(word_of(&kv::GEOMETRY)),
            w_cnt_lo: array_init::array_init(|i| Constant::new(word_of(&kv::COUNTERS[2 * i]))),
            w_cnt_hi: array_init::array_init(|i| Constant::new(word_of(&kv::COUNTERS[2 * i + 1]))),
            zero5: konst(0),
            zero6: konst(0),
            zero3: konst(0),
            zero32: konst(0),
            one32: konst(1),
            zero4: konst(0),
            one4: konst(1),
            meta_new: konst(0b1001),
            zero_l: konst(0),
            lane_bit: array_init::array_init(|i| konst(1 << i)),
            byte_mask: array_init::array_init(|i| konst(0xFF << (8 * i))),
            zero16w: konst(0),
            zero_slot: konst(0),
            fire: Default::default(),
            is_hdr: Default::default(),
            h_ver: Default::default(),
            h_flags: Default::default(),
            h_count: Default::default(),
            h_job: Default::default(),
            h_sender: Default::default(),
            h_sidx: Default::default(),
            h_seq: Default::default(),
            exp_size: Default::default(),
            size20: Default::default(),
            hdr_ok: Default::default(),
            cur_base: Default::default(),
            new_base: Default::default(),
            ack_base_new: Default::default(),
            ack_base_dup: Default::default(),
            mask8: konst(0xff),
            cur_bits: Default::default(),
            d: Default::default(),
            d5: Default::default(),
            old: Default::default(),
            in_win: Default::default(),
            seen: Default::default(),
            fresh: Default::default(),
            dup: Default::default(),
            x: array_init::array_init(|_| Default::default()),
            t: array_init::array_init(|_| Default::default()),
            agg_pkt: Default::default(),
            lane_v: array_init::array_init(|_| Default::default()),
            lane_key: array_init::array_init(|_| Default::default()),
            hash_full: array_init::array_init(|_| Default::default()),
            hash: array_init::array_init(|_| Default::default()),
            room: Default::default(),
            p1_any: Default::default(),
            cur_key: array_init::array_init(|_| Default::default()),
            cur_acc: array_init::array_init(|_| Default::default()),
            cur_meta: array_init::array_init(|_| Default::default()),
            sum: array_init::array_init(|_| Default::default()),
            ovf: array_init::array_init(|_| Default::default()),
            sp_v: array_init::array_init(|_| Default::default()),
            sp_key: array_init::array_init(|_| Default::default()),
            sp_acc: array_init::array_init(|_| Default::default()),
            ev_agg: array_init::array_init(|_| Default::default()),
            ev_spill: array_init::array_init(|_| Default::default()),
            ev_evict: array_init::array_init(|_| Default::default()),
            ev_ovf: array_init::array_init(|_| Default::default()),
            n_agg: array_init::array_init(|_| Default::default()),
            n_spill: array_init::array_init(|_| Default::default()),
            n_evict: array_init::array_init(|_| Default::default()),
            n_ovf: array_init::array_init(|_| Default::default()),
            kc: array_init::array_init(|_| Default::default()),
            keep: Default::default(),
            any_spill: Default::default(),
            lane_word: array_init::array_init(|_| Default::default()),
            w_count20: Default::default(),
            w_size20: Default::default(),
            w_sender32: Default::default(),
            w_count32: Default::default(),
            w_t32: Default::default(),
            w_job32: Default::default(),
            w_ack_lo: Default::default(),
            w_ack_hi: Default::default(),
            tuple_lane: array_init::array_init(|i| Constant::new(i >= 2)),
            onehot: Default::default(),
            pack: Default::default(),
            wm: array_init::array_init(|_| Default::default()),
            busy: Default::default(),
            reg_merge: Default::default(),
            wmask: Default::default(),
        }
    }
}

impl<const L: usize, const W: usize, const SB: usize> Default for KvAgg<L, W, SB> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const L: usize, const W: usize, const SB: usize> Logic for KvAgg<L, W, SB> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            replace,
            job,
            flush_pending,
            flushing,
            flush_idx,
            f1_valid,
            f1_idx,
            done_pending,
            in_pkt,
            pkt_agg,
            left
        );
        for i in 0..SENDERS {
            self.win_base[i].clock.next = self.clock.val();
            self.win_base[i].d.next = self.win_base[i].q.val();
            self.win_bits[i].clock.next = self.clock.val();
            self.win_bits[i].d.next = self.win_bits[i].q.val();
        }
        for i in 0..N_COUNTERS {
            self.counters[i].clock.next = self.clock.val();
            self.counters[i].inc.next = self.zero32.val();
            self.counters[i].clear.next = false;
            self.counters[i].latch.next = false;
        }
        self.f_keep.clock.next = self.clock.val();
        self.f_kind.clock.next = self.clock.val();
        self.f_ack_lo.clock.next = self.clock.val();
        self.f_ack_hi.clock.next = self.clock.val();
        self.f_ack_ret.clock.next = self.clock.val();
        self.f_ack_job.clock.next = self.clock.val();
        self.f_kind.push.next = false;
        self.f_ack_lo.push.next = false;
        self.f_keep.data_in.next = self.zero_l.val();
        self.f_kind.data_in.next = self.kind_spill.val();
        self.f_ack_lo.data_in.next = self.zero32.val();
        self.f_ack_hi.data_in.next = self.zero32.val();
        self.f1_valid.d.next = false;

        // ---- Input readiness: room in both FIFOs for what may be in flight.
        self.p1_any.next = false;
        for i in 0..L {
            if self.p1_valid[i].q.val() {
                self.p1_any.next = true;
            }
        }
        self.room.next = (self.f_kind.count.val() <= self.fifo_room.val())
            & (self.f_ack_lo.count.val() <= self.fifo_room.val());
        self.busy.next = self.flushing.q.val() | self.done_pending.q.val();
        // A requested flush lets the packet in progress finish first.
        self.s_tready.next = self.room.val()
            & !self.busy.val()
            & (self.in_pkt.q.val() | !self.flush_pending.q.val());
        self.fire.next = self.s_tvalid.val() & self.s_tready.val();

        // ---- Header.
        self.is_hdr.next = !self.in_pkt.q.val();
        self.h_ver.next = self.s_tdata.val().get_bits::<8>(0);
        self.h_flags.next = self.s_tdata.val().get_bits::<8>(8);
        self.h_count.next = self.s_tdata.val().get_bits::<16>(16);
        self.h_job.next = self.s_tdata.val().get_bits::<16>(32);
        self.h_sender.next = self.s_tdata.val().get_bits::<16>(48);
        self.h_sidx.next = self.s_tdata.val().get_bits::<4>(48);
        self.h_seq.next = self.s_tdata.val().get_bits::<32>(64);
        self.w_count20.narrow.next = self.h_count.val();
        self.w_size20.narrow.next = self.s_tuser_size.val();
        self.w_sender32.narrow.next = self.h_sender.val();
        self.w_count32.narrow.next = self.h_count.val();
        self.exp_size.next = (self.w_count20.wide.val() << 3) + self.hdr_bytes.val();
        self.size20.next = self.w_size20.wide.val();
        self.hdr_ok.next = (self.h_ver.val() == self.version.val())
            & (self.h_flags.val() == self.flags_data.val())
            & (self.h_job.val() == self.job.q.val())
            & (self.h_sender.val() < self.n_senders.val())
            & (self.exp_size.val() == self.size20.val())
            & (self.size20.val() <= self.max_bytes.val());

        // ---- The sender's window: 32 packets from `base`, bit i = base + i seen.
        // Computed only for a header beat taken (nothing reads it on any
        // other cycle): a simulator skips the sender lookup, the log
        // shifter and the adders on the body beats and idle cycles.
        if self.fire.val() & self.is_hdr.val() {
            self.cur_base.next = self.win_base[0].q.val();
            self.cur_bits.next = self.win_bits[0].q.val();
            for i in 0..SENDERS {
                if self.h_sidx.val().index() == i {
                    self.cur_base.next = self.win_base[i].q.val();
                    self.cur_bits.next = self.win_bits[i].q.val();
                }
            }
            self.d.next = self.h_seq.val() - self.cur_base.val();
            self.d5.next = self.d.val().get_bits::<5>(0);
            self.old.next = self.d.val().get_bit(31);
            self.in_win.next = !self.d.val().get_bits::<27>(5).any();
            self.seen.next = self.cur_bits.val().get_bit(self.d5.val().index());
            self.dup.next = self.old.val() | (self.in_win.val() & self.seen.val());
            self.fresh.next = self.in_win.val() & !self.seen.val();
            // Mark the packet, then shift the run of ones at the bottom out of
            // the window (a log shifter: trailing ones by halving).
            self.onehot.next = self.one32.val() << self.d5.val();
            self.x[0].next = self.cur_bits.val() | self.onehot.val();
            self.t[0].next = self.zero6.val();
            self.x[1].next = self.x[0].val();
            self.t[1].next = self.t[0].val();
            if self.x[0].val().get_bits::<16>(0) == self.ones16.val() {
                self.x[1].next = self.x[0].val() >> 16;
                self.t[1].next = self.t[0].val() + self.t16.val();
            }
            self.x[2].next = self.x[1].val();
            self.t[2].next = self.t[1].val();
            if self.x[1].val().get_bits::<8>(0) == self.ones8.val() {
                self.x[2].next = self.x[1].val() >> 8;
                self.t[2].next = self.t[1].val() + self.t8.val();
            }
            self.x[3].next = self.x[2].val();
            self.t[3].next = self.t[2].val();
            if self.x[2].val().get_bits::<4>(0) == self.ones4.val() {
                self.x[3].next = self.x[2].val() >> 4;
                self.t[3].next = self.t[2].val() + self.t4.val();
            }
            self.x[4].next = self.x[3].val();
            self.t[4].next = self.t[3].val();
            if self.x[3].val().get_bits::<2>(0) == self.ones2.val() {
                self.x[4].next = self.x[3].val() >> 2;
                self.t[4].next = self.t[3].val() + self.t2.val();
            }
            self.x[5].next = self.x[4].val();
            self.t[5].next = self.t[4].val();
            if self.x[4].val().get_bit(0) {
                self.x[5].next = self.x[4].val() >> 1;
                self.t[5].next = self.t[4].val() + self.t1.val();
            }
            self.x[6].next = self.x[5].val();
            self.t[6].next = self.t[5].val();
            if self.x[5].val().get_bit(0) {
                self.x[6].next = self.x[5].val() >> 1;
                self.t[6].next = self.t[5].val() + self.t1.val();
            }
        } else {
            self.cur_base.next = self.zero32.val();
            self.cur_bits.next = self.zero32.val();
            self.d.next = self.zero32.val();
            self.d5.next = self.zero5.val();
            self.old.next = false;
            self.in_win.next = false;
            self.seen.next = false;
            self.dup.next = false;
            self.fresh.next = false;
            self.onehot.next = self.zero32.val();
            for i in 0..7 {
                self.x[i].next = self.zero32.val();
                self.t[i].next = self.zero6.val();
            }
        }
        // Outside the `if`: a child's input written and its output read in
        // one statement is a combinational loop to Verilator, which then
        // settles it with a trigger of its own and the model can no longer
        // take a step in one evaluation.
        self.w_t32.narrow.next = self.t[6].val();
        self.new_base.next = self.cur_base.val() + self.w_t32.wide.val();
        self.ack_base_new.next = (self.new_base.val() & self.mask8.val()) << 8;
        self.ack_base_dup.next = (self.cur_base.val() & self.mask8.val()) << 8;

        // ---- Lanes of the accepted beat.
        self.agg_pkt.next = self.pkt_agg.q.val();
        if self.is_hdr.val() {
            self.agg_pkt.next = self.hdr_ok.val() & self.fresh.val();
        }
        for i in 0..L {
            self.lane_key[i].next = self.s_tdata.val().get_bits::<32>(64 * i);
            // One of the two forms, and only for a beat taken into an
            // aggregated packet (a simulator tests a bit on the others).
            self.lane_v[i].next = false;
            if self.fire.val() & self.agg_pkt.val() {
                if self.is_hdr.val() {
                    self.lane_v[i].next =
                        self.tuple_lane[i].val() & (self.h_count.val() > self.hdr_lane_no[i].val());
                } else {
                    self.lane_v[i].next = self.left.q.val() > self.lane_no[i].val();
                }
            }
            // The slot index: an xor-shift fold of the key (no multiplier),
            // the same function as `weft_model::kv_agg::slot_of`. Hashed,
            // and the lane's pipeline registers loaded, only for a valid
            // tuple: the update stage reads them only then (and a flush
            // reads at its own address), so a simulator skips the lane on
            // the other cycles.
            self.hash_full[i].next = self.zero32.val();
            self.p1_key[i].d.next = self.p1_key[i].q.val();
            self.p1_val[i].d.next = self.p1_val[i].q.val();
            if self.lane_v[i].val() {
                self.hash_full[i].next = self.lane_key[i].val()
                    ^ (self.lane_key[i].val() >> 11)
                    ^ (self.lane_key[i].val() >> 22);
                self.p1_key[i].d.next = self.lane_key[i].val();
                self.p1_val[i].d.next = self.s_tdata.val().get_bits::<32>(64 * i + 32);
            }
            self.hash[i].next = self.hash_full[i].val().get_bits::<SB>(0);
            self.key_ram[i].read_clock.next = self.clock.val();
            self.acc_ram[i].read_clock.next = self.clock.val();
            self.meta_ram[i].read_clock.next = self.clock.val();
            self.key_ram[i].write_clock.next = self.clock.val();
            self.acc_ram[i].write_clock.next = self.clock.val();
            self.meta_ram[i].write_clock.next = self.clock.val();
            self.key_ram[i].read_address.next = self.hash[i].val();
            self.acc_ram[i].read_address.next = self.hash[i].val();
            self.meta_ram[i].read_address.next = self.hash[i].val();
            if self.flushing.q.val() {
                self.key_ram[i].read_address.next = self.flush_idx.q.val();
                self.acc_ram[i].read_address.next = self.flush_idx.q.val();
                self.meta_ram[i].read_address.next = self.flush_idx.q.val();
            }
            self.p1_valid[i].clock.next = self.clock.val();
            self.p1_key[i].clock.next = self.clock.val();
            self.p1_val[i].clock.next = self.clock.val();
            self.p1_idx[i].clock.next = self.clock.val();
            self.p1_valid[i].d.next = self.lane_v[i].val();
            self.p1_idx[i].d.next = self.hash[i].val();
        }

        // ---- Packet bookkeeping, window, acks and packet counters.
        if self.fire.val() {
            self.in_pkt.d.next = !self.s_tlast.val();
            if self.is_hdr.val() {
                self.pkt_agg.d.next = self.hdr_ok.val() & self.fresh.val();
                self.left.d.next = self.zero16.val();
                if self.h_count.val() > self.n_hdr_tuples.val() {
                    self.left.d.next = self.h_count.val() - self.n_hdr_tuples.val();
                }
                if !self.hdr_ok.val() {
                    self.counters[7].inc.next = self.one32.val();
                }
                if self.hdr_ok.val() & self.dup.val() {
                    self.counters[6].inc.next = self.one32.val();
                    self.f_ack_lo.push.next = true;
                    self.f_ack_lo.data_in.next = self.h_seq.val();
                    self.f_ack_hi.data_in.next = self.status_dup.val()
                        | self.ack_base_dup.val()
                        | (self.w_sender32.wide.val() << 16);
                }
                if self.hdr_ok.val() & !self.dup.val() & !self.fresh.val() {
                    self.counters[8].inc.next = self.one32.val();
                }
                if self.hdr_ok.val() & self.fresh.val() {
                    self.counters[0].inc.next = self.one32.val();
                    self.counters[1].inc.next = self.w_count32.wide.val();
                    self.f_ack_lo.push.next = true;
                    self.f_ack_lo.data_in.next = self.h_seq.val();
                    self.f_ack_hi.data_in.next = self.status_new.val()
                        | self.ack_base_new.val()
                        | (self.w_sender32.wide.val() << 16);
                    for i in 0..SENDERS {
                        if self.h_sidx.val().index() == i {
                            self.win_base[i].d.next = self.new_base.val();
                            self.win_bits[i].d.next = self.x[6].val();
                        }
                    }
                }
            } else {
                self.left.d.next = self.zero16.val();
                if self.left.q.val() > self.n_lanes.val() {
                    self.left.d.next = self.left.q.val() - self.n_lanes.val();
                }
            }
        }

        // ---- Update stage: every lane reads, modifies and writes its slot.
        for i in 0..L {
            self.last_we[i].clock.next = self.clock.val();
            self.last_idx[i].clock.next = self.clock.val();
            self.last_key[i].clock.next = self.clock.val();
            self.last_acc[i].clock.next = self.clock.val();
            self.last_meta[i].clock.next = self.clock.val();
            // The slot as read, and the sum, only for a lane with a tuple
            // (nothing else reads them): a simulator skips them on idle
            // lanes, and in hardware the valid bit is one more input to
            // the forwarding mux.
            self.cur_key[i].next = self.zero32.val();
            self.cur_acc[i].next = self.zero32.val();
            self.cur_meta[i].next = self.zero4.val();
            self.sum[i].next = self.zero32.val();
            self.ovf[i].next = false;
            if self.p1_valid[i].q.val() {
                self.cur_key[i].next = self.key_ram[i].read_data.val();
                self.cur_acc[i].next = self.acc_ram[i].read_data.val();
                self.cur_meta[i].next = self.meta_ram[i].read_data.val();
                // The RAM reads before it writes: the lane's previous write
                // is not visible yet, so take it from the forwarding
                // register.
                if self.last_we[i].q.val() & (self.last_idx[i].q.val() == self.p1_idx[i].q.val()) {
                    self.cur_key[i].next = self.last_key[i].q.val();
                    self.cur_acc[i].next = self.last_acc[i].q.val();
                    self.cur_meta[i].next = self.last_meta[i].q.val();
                }
                self.sum[i].next = self.cur_acc[i].val() + self.p1_val[i].q.val();
                self.ovf[i].next = (self.cur_acc[i].val().get_bit(31)
                    == self.p1_val[i].q.val().get_bit(31))
                    & (self.sum[i].val().get_bit(31) != self.cur_acc[i].val().get_bit(31));
            }

            self.sp_v[i].next = false;
            self.sp_key[i].next = self.zero32.val();
            self.sp_acc[i].next = self.zero32.val();
            self.ev_agg[i].next = self.zero32.val();
            self.ev_spill[i].next = self.zero32.val();
            self.ev_evict[i].next = self.zero32.val();
            self.ev_ovf[i].next = self.zero32.val();
            self.key_ram[i].write_enable.next = false;
            self.acc_ram[i].write_enable.next = false;
            self.meta_ram[i].write_enable.next = false;
            self.key_ram[i].write_address.next = self.p1_idx[i].q.val();
            self.acc_ram[i].write_address.next = self.p1_idx[i].q.val();
            self.meta_ram[i].write_address.next = self.p1_idx[i].q.val();
            self.key_ram[i].write_data.next = self.p1_key[i].q.val();
            self.acc_ram[i].write_data.next = self.p1_val[i].q.val();
            self.meta_ram[i].write_data.next = self.meta_new.val();

            if self.p1_valid[i].q.val() {
                self.key_ram[i].write_enable.next = true;
                self.acc_ram[i].write_enable.next = true;
                self.meta_ram[i].write_enable.next = true;
                if !self.cur_meta[i].val().get_bit(3) {
                    // Empty slot: the newcomer moves in.
                    self.ev_agg[i].next = self.one32.val();
                } else if self.cur_key[i].val() == self.p1_key[i].q.val() {
                    // Hit: add; an overflowing sum spills the partial and restarts.
                    self.ev_agg[i].next = self.one32.val();
                    self.meta_ram[i].write_data.next = self.cur_meta[i].val() + self.one4.val();
                    if self.cur_meta[i].val().get_bits::<3>(0) == self.hits_max.val() {
                        self.meta_ram[i].write_data.next = self.cur_meta[i].val();
                    }
                    self.acc_ram[i].write_data.next = self.sum[i].val();
                    if self.ovf[i].val() {
                        self.acc_ram[i].write_data.next = self.p1_val[i].q.val();
                        self.sp_v[i].next = true;
                        self.sp_key[i].next = self.cur_key[i].val();
                        self.sp_acc[i].next = self.cur_acc[i].val();
                        self.ev_spill[i].next = self.one32.val();
                        self.ev_ovf[i].next = self.one32.val();
                    }
                } else if self.replace.q.val()
                    & (self.cur_meta[i].val().get_bits::<3>(0) == self.zero3.val())
                {
                    // A cold resident yields its slot; its partial sum spills.
                    self.ev_agg[i].next = self.one32.val();
                    self.sp_v[i].next = true;
                    self.sp_key[i].next = self.cur_key[i].val();
                    self.sp_acc[i].next = self.cur_acc[i].val();
                    self.ev_spill[i].next = self.one32.val();
                    self.ev_evict[i].next = self.one32.val();
                } else {
                    // The newcomer spills; with replacement the resident ages.
                    self.sp_v[i].next = true;
                    self.sp_key[i].next = self.p1_key[i].q.val();
                    self.sp_acc[i].next = self.p1_val[i].q.val();
                    self.ev_spill[i].next = self.one32.val();
                    self.key_ram[i].write_data.next = self.cur_key[i].val();
                    self.acc_ram[i].write_data.next = self.cur_acc[i].val();
                    self.meta_ram[i].write_data.next = self.cur_meta[i].val() - self.one4.val();
                    self.key_ram[i].write_enable.next = self.replace.q.val();
                    self.acc_ram[i].write_enable.next = self.replace.q.val();
                    self.meta_ram[i].write_enable.next = self.replace.q.val();
                }
            }

            // Flush: drain row f1_idx of every bank and clear it.
            if self.f1_valid.q.val() {
                self.sp_v[i].next = self.meta_ram[i].read_data.val().get_bit(3);
                if self.meta_ram[i].read_data.val().get_bit(3) {
                    self.sp_key[i].next = self.key_ram[i].read_data.val();
                    self.sp_acc[i].next = self.acc_ram[i].read_data.val();
                }
                self.key_ram[i].write_enable.next = true;
                self.acc_ram[i].write_enable.next = true;
                self.meta_ram[i].write_enable.next = true;
                self.key_ram[i].write_address.next = self.f1_idx.q.val();
                self.acc_ram[i].write_address.next = self.f1_idx.q.val();
                self.meta_ram[i].write_address.next = self.f1_idx.q.val();
                self.key_ram[i].write_data.next = self.zero32.val();
                self.acc_ram[i].write_data.next = self.zero32.val();
                self.meta_ram[i].write_data.next = self.zero4.val();
            }

            // The forwarding registers load only with a write (their
            // clock enable): only `last_we` says whether they are read.
            self.last_we[i].d.next = self.meta_ram[i].write_enable.val();
            self.last_idx[i].d.next = self.last_idx[i].q.val();
            self.last_key[i].d.next = self.last_key[i].q.val();
            self.last_acc[i].d.next = self.last_acc[i].q.val();
            self.last_meta[i].d.next = self.last_meta[i].q.val();
            if self.meta_ram[i].write_enable.val() {
                self.last_idx[i].d.next = self.meta_ram[i].write_address.val();
                self.last_key[i].d.next = self.key_ram[i].write_data.val();
                self.last_acc[i].d.next = self.acc_ram[i].write_data.val();
                self.last_meta[i].d.next = self.meta_ram[i].write_data.val();
            }

            self.f_key[i].clock.next = self.clock.val();
            self.f_acc[i].clock.next = self.clock.val();
            self.f_key[i].data_in.next = self.sp_key[i].val();
            self.f_acc[i].data_in.next = self.sp_acc[i].val();
        }

        // Lane events summed along a chain (each link written once).
        self.kc[0].next = self.zero_l.val();
        if self.sp_v[0].val() {
            self.kc[0].next = self.lane_bit[0].val();
        }
        self.n_agg[0].next = self.ev_agg[0].val();
        self.n_spill[0].next = self.ev_spill[0].val();
        self.n_evict[0].next = self.ev_evict[0].val();
        self.n_ovf[0].next = self.ev_ovf[0].val();
        self.keep.next = self.kc[0].val();
        self.counters[2].inc.next = self.n_agg[0].val();
        self.counters[3].inc.next = self.n_spill[0].val();
        self.counters[4].inc.next = self.n_evict[0].val();
        self.counters[5].inc.next = self.n_ovf[0].val();
        for i in 1..L {
            self.kc[i].next = self.kc[i - 1].val();
            if self.sp_v[i].val() {
                self.kc[i].next = self.kc[i - 1].val() | self.lane_bit[i].val();
            }
            self.n_agg[i].next = self.n_agg[i - 1].val() + self.ev_agg[i].val();
            self.n_spill[i].next = self.n_spill[i - 1].val() + self.ev_spill[i].val();
            self.n_evict[i].next = self.n_evict[i - 1].val() + self.ev_evict[i].val();
            self.n_ovf[i].next = self.n_ovf[i - 1].val() + self.ev_ovf[i].val();
            self.keep.next = self.kc[i].val();
            self.counters[2].inc.next = self.n_agg[i].val();
            self.counters[3].inc.next = self.n_spill[i].val();
            self.counters[4].inc.next = self.n_evict[i].val();
            self.counters[5].inc.next = self.n_ovf[i].val();
        }
        self.any_spill.next = self.keep.val() != self.zero_l.val();

        // ---- Record FIFO: spill or flush rows with a record, then flush done.
        self.f_keep.data_in.next = self.keep.val();
        if self.f1_valid.q.val() {
            self.f_kind.data_in.next = self.kind_flush.val();
        }
        self.f_kind.push.next = self.any_spill.val();
        if self.done_pending.q.val() & !self.f1_valid.q.val() & self.room.val() {
            self.f_kind.push.next = true;
            self.f_kind.data_in.next = self.kind_done.val();
            self.done_pending.d.next = false;
        }
        self.f_keep.push.next = self.f_kind.push.val();
        self.f_keep.wr.next = self.f_kind.wr.val();
        self.f_keep.rd.next = self.f_kind.rd.val();
        for i in 0..L {
            self.f_key[i].push.next = self.f_kind.push.val();
            self.f_acc[i].push.next = self.f_kind.push.val();
            self.f_key[i].wr.next = self.f_kind.wr.val();
            self.f_acc[i].wr.next = self.f_kind.wr.val();
            self.f_key[i].rd.next = self.f_kind.rd.val();
            self.f_acc[i].rd.next = self.f_kind.rd.val();
        }

        // ---- Flush walk: one row per cycle while the record FIFO has room.
        if self.flush_pending.q.val() & !self.busy.val() & !self.in_pkt.q.val() & !self.p1_any.val()
        {
            self.flushing.d.next = true;
            self.flush_idx.d.next = self.zero_slot.val();
        }
        if self.flushing.q.val() & self.room.val() {
            self.f1_valid.d.next = true;
            self.f1_idx.d.next = self.flush_idx.q.val();
            self.flush_idx.d.next = self.flush_idx.q.val() + self.slot_one.val();
            if self.flush_idx.q.val() == self.slot_last.val() {
                self.flushing.d.next = false;
                self.flush_pending.d.next = false;
                self.done_pending.d.next = true;
            }
        }

        // ---- Outputs.
        self.m_tvalid.next = self.f_kind.count.val() != self.zero3.val();
        self.m_tlast.next = self.m_tvalid.val();
        self.m_tkeep.next = self.f_keep.data_out.val();
        self.m_tuser.next = self.f_kind.data_out.val();
        // Lane i of the beat is {acc, key} of lane i.
        for i in 0..L {
            self.lane_word[i].lo.next = self.f_key[i].data_out.val();
            self.lane_word[i].hi.next = self.f_acc[i].data_out.val();
            self.pack.lane[i].next = self.lane_word[i].out.val();
        }
        self.m_tdata.next = self.pack.out.val();
        self.f_kind.pop.next = self.m_tvalid.val() & self.m_tready.val();
        self.a_tvalid.next = self.f_ack_lo.count.val() != self.zero3.val();
        self.w_ack_hi.narrow.next = self.f_ack_hi.data_out.val();
        self.w_ack_lo.narrow.next = self.f_ack_lo.data_out.val();
        self.a_tdata.next = (self.w_ack_hi.wide.val() << 32) | self.w_ack_lo.wide.val();
        self.f_ack_lo.pop.next = self.a_tvalid.val() & self.a_tready.val();
        // The return address and job travel with every ack.
        self.f_ack_ret.data_in.next = self.s_tret.val();
        self.f_ack_job.data_in.next = self.h_job.val();
        self.f_ack_ret.push.next = self.f_ack_lo.push.val();
        self.f_ack_job.push.next = self.f_ack_lo.push.val();
        self.f_ack_hi.push.next = self.f_ack_lo.push.val();
        self.f_ack_hi.wr.next = self.f_ack_lo.wr.val();
        self.f_ack_ret.wr.next = self.f_ack_lo.wr.val();
        self.f_ack_job.wr.next = self.f_ack_lo.wr.val();
        self.f_ack_hi.rd.next = self.f_ack_lo.rd.val();
        self.f_ack_ret.rd.next = self.f_ack_lo.rd.val();
        self.f_ack_job.rd.next = self.f_ack_lo.rd.val();
        self.a_tret.next = self.f_ack_ret.data_out.val();
        self.a_tjob.next = self.f_ack_job.data_out.val();
        self.job_out.next = self.job.q.val();

        // ---- Registers.
        // The kv registers are at most 16 bits wide: bytes 0 and 1 matter.
        self.wm[0].next = self.zero16w.val();
        self.wm[1].next = self.zero16w.val();
        if self.eng_wstrb.val().get_bit(0) {
            self.wm[0].next = self.byte_mask[0].val();
        }
        if self.eng_wstrb.val().get_bit(1) {
            self.wm[1].next = self.byte_mask[1].val();
        }
        self.wmask.next = self.wm[0].val() | self.wm[1].val();
        self.reg_merge.next = (self.job.q.val() & !self.wmask.val())
            | (self.eng_wdata.val().get_bits::<16>(0) & self.wmask.val());
        if self.eng_we.val() {
            if (self.eng_waddr.val() == self.w_ctrl.val()) & self.eng_wstrb.val().get_bit(0) {
                self.replace.d.next = self.eng_wdata.val().get_bit(0);
            }
            if self.eng_waddr.val() == self.w_job.val() {
                self.job.d.next = self.reg_merge.val();
            }
            if (self.eng_waddr.val() == self.w_cmd.val()) & self.eng_wstrb.val().get_bit(0) {
                if self.eng_wdata.val().get_bit(0) {
                    self.flush_pending.d.next = true;
                }
                if self.eng_wdata.val().get_bit(1) {
                    for i in 0..SENDERS {
                        self.win_base[i].d.next = self.zero32.val();
                        self.win_bits[i].d.next = self.zero32.val();
                    }
                    for i in 0..N_COUNTERS {
                        self.counters[i].clear.next = true;
                    }
                }
            }
        }
        self.w_job32.narrow.next = self.job.q.val();
        self.eng_rdata.next = self.zero32.val();
        // Decoded only on a read: the CSR block takes `eng_rdata` only in
        // the cycle `eng_re` is high, and a simulator skips the decoder on
        // every other cycle.
        if self.eng_re.val() {
            if (self.eng_raddr.val() == self.w_ctrl.val()) & self.replace.q.val() {
                self.eng_rdata.next = self.one32.val();
            }
            if self.eng_raddr.val() == self.w_job.val() {
                self.eng_rdata.next = self.w_job32.wide.val();
            }
            if (self.eng_raddr.val() == self.w_status.val())
                & (self.flush_pending.q.val() | self.busy.val())
            {
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
