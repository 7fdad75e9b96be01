//! The `net` register block (`weft_regs::net`, `docs/wire.md`): the card's
//! addresses and the destinations of the frames it builds, record packing,
//! the gradient worker table's write port, and the frame counters. It
//! decodes its own block on the engine register port, as every engine
//! does; its specification is `weft_model::net_regs::NetRegsModel`.

use crate::common::{konst, word_of, Cat, Counter64, Widen};
use rust_hdl::prelude::*;
use weft_regs::net::{self, RW, RW_MASK};
use weft_regs::{Register, Value};

/// Counters (`weft_regs::net::COUNTER_NAMES` order).
pub const COUNTERS: usize = net::COUNTER_NAMES.len();

/// The reset value of a register of the map.
pub fn reset_of(r: &Register) -> u32 {
    match r.value {
        Value::Live { reset } | Value::Const(reset) => reset,
        _ => 0,
    }
}

/// The `net` block.
#[derive(LogicBlock)]
pub struct NetRegs {
    /// Clock (`axis_aclk`).
    pub clock: Signal<In, Clock>,
    /// Engine register port: read word address.
    pub eng_raddr: Signal<In, Bits<14>>,
    /// Engine register port: read accepted (latches counter HI words).
    pub eng_re: Signal<In, Bit>,
    /// Engine register port: read data for `eng_raddr` while `eng_re`
    /// (combinational), 0 outside the block or without `eng_re`.
    pub eng_rdata: Signal<Out, Bits<32>>,
    /// Engine register port: write word address.
    pub eng_waddr: Signal<In, Bits<14>>,
    /// Engine register port: write data.
    pub eng_wdata: Signal<In, Bits<32>>,
    /// Engine register port: write strobes.
    pub eng_wstrb: Signal<In, Bits<4>>,
    /// Engine register port: write enable.
    pub eng_we: Signal<In, Bit>,
    /// Counter events this cycle, one bit per counter.
    pub inc: Signal<In, Bits<COUNTERS>>,
    /// `CTRL.ENABLE`.
    pub enable: Signal<Out, Bit>,
    /// The card's MAC (first wire byte in bits 47:40).
    pub card_mac: Signal<Out, Bits<48>>,
    /// The card's IPv4 address.
    pub card_ip: Signal<Out, Bits<32>>,
    /// Key-value collector MAC.
    pub kv_mac: Signal<Out, Bits<48>>,
    /// Key-value collector IPv4 address.
    pub kv_ip: Signal<Out, Bits<32>>,
    /// Key-value collector UDP port.
    pub kv_port: Signal<Out, Bits<16>>,
    /// Gradient fallback MAC.
    pub grad_mac: Signal<Out, Bits<48>>,
    /// Gradient fallback IPv4 address.
    pub grad_ip: Signal<Out, Bits<32>>,
    /// Gradient fallback UDP port.
    pub grad_port: Signal<Out, Bits<16>>,
    /// Records per record frame, as written (the packer clamps it).
    pub pack_max: Signal<Out, Bits<11>>,
    /// Cycles a partial record frame waits.
    pub pack_wait: Signal<Out, Bits<20>>,
    /// The packer's next sequence number (read back through `PACK_SEQ`).
    pub seq_in: Signal<In, Bits<32>>,
    /// `PACK_SEQ` written this cycle.
    pub seq_we: Signal<Out, Bit>,
    /// The value written.
    pub seq_wdata: Signal<Out, Bits<32>>,
    /// `WT_CMD.WRITE`: store the staged worker entry.
    pub wt_we: Signal<Out, Bit>,
    /// The entry: `{job, worker}` from `WT_SEL`.
    pub wt_addr: Signal<Out, Bits<9>>,
    /// The staged entry: MAC (47:0), IP (79:48), port (95:80), HOST (96), VALID (97).
    pub wt_data: Signal<Out, Bits<98>>,
    regs: [DFFWithInit<Bits<32>>; 19],
    counters: [Counter64; COUNTERS],
    /// Each counter's event bit as its 32-bit increment (a zero-extension,
    /// not a branch on the event).
    inc32: [Widen<32, 1>; COUNTERS],
    w_rw: [Constant<Bits<14>>; 19],
    m_rw: [Constant<Bits<32>>; 19],
    w_lo: [Constant<Bits<14>>; COUNTERS],
    w_hi: [Constant<Bits<14>>; COUNTERS],
    w_seq: Constant<Bits<14>>,
    w_cmd: Constant<Bits<14>>,
    byte: [Constant<Bits<32>>; 4],
    zero32: Constant<Bits<32>>,
    smask: Signal<Local, Bits<32>>,
    c_card_mac: Cat<48, 16, 32>,
    c_kv_mac: Cat<48, 16, 32>,
    c_grad_mac: Cat<48, 16, 32>,
    c_wt_mac: Cat<48, 16, 32>,
    c_wt_ipmac: Cat<80, 32, 48>,
    c_wt_lo: Cat<96, 16, 80>,
    c_wt: Cat<98, 2, 96>,
    c_wt_addr: Cat<9, 4, 5>,
}

impl Default for NetRegs {
    fn default() -> Self {
        Self::new()
    }
}

impl NetRegs {
    /// Out of reset: every register at its map reset value.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            inc: Default::default(),
            enable: Default::default(),
            card_mac: Default::default(),
            card_ip: Default::default(),
            kv_mac: Default::default(),
            kv_ip: Default::default(),
            kv_port: Default::default(),
            grad_mac: Default::default(),
            grad_ip: Default::default(),
            grad_port: Default::default(),
            pack_max: Default::default(),
            pack_wait: Default::default(),
            seq_in: Default::default(),
            seq_we: Default::default(),
            seq_wdata: Default::default(),
            wt_we: Default::default(),
            wt_addr: Default::default(),
            wt_data: Default::default(),
            regs: array_init::array_init(|i| {
                DFFWithInit::new(Bits::from((reset_of(&RW[i]) & RW_MASK[i]) as u64))
            }),
            counters: array_init::array_init(|_| Default::default()),
            inc32: array_init::array_init(|_| Default::default()),
            w_rw: array_init::array_init(|i| Constant::new(word_of(&RW[i]))),
            m_rw: array_init::array_init(|i| konst(RW_MASK[i] as u64)),
            w_lo: array_init::array_init(|i| Constant::new(word_of(&net::COUNTERS[2 * i]))),
            w_hi: array_init::array_init(|i| Constant::new(word_of(&net::COUNTERS[2 * i + 1]))),
            w_seq: Constant::new(word_of(&net::PACK_SEQ)),
            w_cmd: Constant::new(word_of(&net::WT_CMD)),
            byte: array_init::array_init(|i| konst(0xff << (8 * i))),
            zero32: konst(0),
            smask: Default::default(),
            c_card_mac: Default::default(),
            c_kv_mac: Default::default(),
            c_grad_mac: Default::default(),
            c_wt_mac: Default::default(),
            c_wt_ipmac: Default::default(),
            c_wt_lo: Default::default(),
            c_wt: Default::default(),
            c_wt_addr: Default::default(),
        }
    }
}

impl Logic for NetRegs {
    #[hdl_gen]
    fn update(&mut self) {
        // The counters first: the comb split keeps the first statements of
        // an update together, and a register's clock copy among them would
        // keep it from folding (`weft_hdl::dff_fold`).
        for i in 0..COUNTERS {
            self.counters[i].clock.next = self.clock.val();
            self.inc32[i].narrow.next = self.inc.val().get_bits::<1>(i);
            self.counters[i].inc.next = self.inc32[i].wide.val();
            self.counters[i].clear.next = false;
            self.counters[i].latch.next = false;
        }
        for i in 0..19 {
            self.regs[i].clock.next = self.clock.val();
            self.regs[i].d.next = self.regs[i].q.val();
        }
        // ---- Writes: byte strobes merge into the register's kept bits.
        self.smask.next = self.zero32.val();
        for b in 0..4 {
            if self.eng_wstrb.val().get_bit(b) {
                self.smask.next = self.smask.val() | self.byte[b].val();
            }
        }
        self.seq_wdata.next =
            (self.seq_in.val() & !self.smask.val()) | (self.eng_wdata.val() & self.smask.val());
        // Decoded only on a write, nested rather than `we & (addr == …)`: a
        // simulator evaluates both sides of a `&` every cycle, twenty-one
        // address compares here, and a nested test only on the rare write.
        self.seq_we.next = false;
        self.wt_we.next = false;
        if self.eng_we.val() {
            for i in 0..19 {
                if self.eng_waddr.val() == self.w_rw[i].val() {
                    // The merge written here, not as a signal of its own:
                    // folded, it is then computed only on the write.
                    self.regs[i].d.next = ((self.regs[i].q.val() & !self.smask.val())
                        | (self.eng_wdata.val() & self.smask.val()))
                        & self.m_rw[i].val();
                }
            }
            self.seq_we.next = self.eng_waddr.val() == self.w_seq.val();
            self.wt_we.next = (self.eng_waddr.val() == self.w_cmd.val())
                & self.eng_wstrb.val().get_bit(0)
                & self.eng_wdata.val().get_bit(0);
        }
        // ---- Reads.
        self.eng_rdata.next = self.zero32.val();
        // Decoded only on a read: the CSR block takes `eng_rdata` only in
        // the cycle `eng_re` is high, and a simulator skips the decoder on
        // every other cycle.
        if self.eng_re.val() {
            for i in 0..19 {
                if self.eng_raddr.val() == self.w_rw[i].val() {
                    self.eng_rdata.next = self.regs[i].q.val();
                }
            }
            if self.eng_raddr.val() == self.w_seq.val() {
                self.eng_rdata.next = self.seq_in.val();
            }
            for i in 0..COUNTERS {
                if self.eng_raddr.val() == self.w_lo[i].val() {
                    self.eng_rdata.next = self.counters[i].lo.val();
                    self.counters[i].latch.next = self.eng_re.val();
                }
                if self.eng_raddr.val() == self.w_hi[i].val() {
                    self.eng_rdata.next = self.counters[i].hi_latched.val();
                }
            }
        }
        // ---- Configuration out.
        self.enable.next = self.regs[0].q.val().get_bit(0);
        self.c_card_mac.hi.next = self.regs[1].q.val().get_bits::<16>(0);
        self.c_card_mac.lo.next = self.regs[2].q.val();
        self.card_mac.next = self.c_card_mac.out.val();
        self.card_ip.next = self.regs[3].q.val();
        self.c_kv_mac.hi.next = self.regs[4].q.val().get_bits::<16>(0);
        self.c_kv_mac.lo.next = self.regs[5].q.val();
        self.kv_mac.next = self.c_kv_mac.out.val();
        self.kv_ip.next = self.regs[6].q.val();
        self.kv_port.next = self.regs[7].q.val().get_bits::<16>(0);
        self.c_grad_mac.hi.next = self.regs[8].q.val().get_bits::<16>(0);
        self.c_grad_mac.lo.next = self.regs[9].q.val();
        self.grad_mac.next = self.c_grad_mac.out.val();
        self.grad_ip.next = self.regs[10].q.val();
        self.grad_port.next = self.regs[11].q.val().get_bits::<16>(0);
        self.pack_max.next = self.regs[12].q.val().get_bits::<11>(0);
        self.pack_wait.next = self.regs[13].q.val().get_bits::<20>(0);
        self.c_wt_addr.hi.next = self.regs[14].q.val().get_bits::<4>(8);
        self.c_wt_addr.lo.next = self.regs[14].q.val().get_bits::<5>(0);
        self.wt_addr.next = self.c_wt_addr.out.val();
        self.c_wt_mac.hi.next = self.regs[15].q.val().get_bits::<16>(0);
        self.c_wt_mac.lo.next = self.regs[16].q.val();
        self.c_wt_ipmac.hi.next = self.regs[17].q.val();
        self.c_wt_ipmac.lo.next = self.c_wt_mac.out.val();
        self.c_wt_lo.hi.next = self.regs[18].q.val().get_bits::<16>(0);
        self.c_wt_lo.lo.next = self.c_wt_ipmac.out.val();
        // VALID (WT_MAC_HI bit 16) on top, HOST (bit 17) below it.
        self.c_wt.hi.next = (self.regs[15].q.val().get_bits::<2>(16) >> 1)
            | (self.regs[15].q.val().get_bits::<2>(16) << 1);
        self.c_wt.lo.next = self.c_wt_lo.out.val();
        self.wt_data.next = self.c_wt.out.val();
    }
}

impl NetRegs {
    /// The block, connected and ready to simulate or emit.
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}
