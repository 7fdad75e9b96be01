//! The CSR block: an AXI4-Lite slave that decodes weft-regs' map.
//!
//! Behaviour is specified by `weft_model::csr` (read that first). The decode
//! is data, not code: ROMs built from the map at elaboration hold every
//! constant register's value and every word's access class, so moving or
//! adding a constant register in weft-regs moves it here with no edit. The
//! control block's live registers (scratch, cycle counter, test interrupt)
//! are wired below by their weft-regs names; live registers of engine blocks
//! are forwarded to the engine register port (`eng_*`), where the engines
//! decode them from the same map. Elaboration refuses a map with a live
//! register in the ID or control block that this block does not implement.

use rust_hdl::prelude::*;
use std::collections::BTreeMap;
use weft_regs::{ctrl, BuildInfo, Map, Register, Value};

/// Cycles from an engine register read's acceptance (`eng_re`) to the
/// cycle this block takes its `eng_rdata`.
pub const ENGINE_READ_LATENCY: usize = 2;

/// Word-address bits: the map's byte address width less the two byte bits.
pub const WORD_BITS: usize = 14;
/// Byte-address width of the AXI4-Lite port.
pub const ADDR_BITS: usize = WORD_BITS + 2;

/// Access classes held in the decode ROM.
pub mod class {
    /// No register: DECERR.
    pub const UNMAPPED: u64 = 0;
    /// Read-only: writes answer SLVERR.
    pub const READ_ONLY: u64 = 1;
    /// Writable (RW, WO, W1C).
    pub const WRITABLE: u64 = 2;
    /// Added to the class of a live register of an engine block: its data
    /// comes from, and its writes go to, the engine register port.
    pub const ENGINE: u64 = 4;
}

/// Blocks whose live registers the CSR block implements itself.
const OWN_BLOCKS: [u32; 2] = [weft_regs::block_type::ID, weft_regs::block_type::CTRL];

/// AXI response codes (IHI 0022, B1.3: OKAY 0b00, SLVERR 0b10, DECERR 0b11).
mod resp {
    pub const OKAY: u64 = 0;
    pub const SLVERR: u64 = 2;
    pub const DECERR: u64 = 3;
}

/// Live registers this block implements; any other live register in the map
/// is refused at elaboration.
const LIVE: [Register; 4] = [
    ctrl::SCRATCH,
    ctrl::CYCLE_LO,
    ctrl::CYCLE_HI,
    ctrl::IRQ_TEST,
];

/// The CSR block.
#[derive(LogicBlock)]
pub struct Csr {
    /// Clock (the AXI4-Lite `aclk`).
    pub clock: Signal<In, Clock>,
    /// AWADDR.
    pub s_axil_awaddr: Signal<In, Bits<ADDR_BITS>>,
    /// AWVALID.
    pub s_axil_awvalid: Signal<In, Bit>,
    /// AWREADY.
    pub s_axil_awready: Signal<Out, Bit>,
    /// WDATA.
    pub s_axil_wdata: Signal<In, Bits<32>>,
    /// WSTRB.
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    /// WVALID.
    pub s_axil_wvalid: Signal<In, Bit>,
    /// WREADY.
    pub s_axil_wready: Signal<Out, Bit>,
    /// BRESP.
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    /// BVALID.
    pub s_axil_bvalid: Signal<Out, Bit>,
    /// BREADY.
    pub s_axil_bready: Signal<In, Bit>,
    /// ARADDR.
    pub s_axil_araddr: Signal<In, Bits<ADDR_BITS>>,
    /// ARVALID.
    pub s_axil_arvalid: Signal<In, Bit>,
    /// ARREADY.
    pub s_axil_arready: Signal<Out, Bit>,
    /// RDATA.
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    /// RRESP.
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    /// RVALID.
    pub s_axil_rvalid: Signal<Out, Bit>,
    /// RREADY.
    pub s_axil_rready: Signal<In, Bit>,
    /// Interrupt vector 0: a one-cycle pulse.
    pub irq: Signal<Out, Bit>,
    /// Engine register port: word address of the read being decoded.
    pub eng_raddr: Signal<Out, Bits<WORD_BITS>>,
    /// Engine register port: a read of an engine register is accepted this
    /// cycle (engines latch read side effects on it).
    pub eng_re: Signal<Out, Bit>,
    /// Engine register port: the engines' read data for the `eng_raddr` of
    /// the read accepted [`ENGINE_READ_LATENCY`] cycles before (`eng_re`
    /// high then), taken only in that cycle: the top registers the port on
    /// its way to the engines and their OR-ed read data on its way back,
    /// so the read decode of no engine shares a cycle with this block's.
    pub eng_rdata: Signal<In, Bits<32>>,
    /// Engine register port: word address of a write.
    pub eng_waddr: Signal<Out, Bits<WORD_BITS>>,
    /// Engine register port: write data.
    pub eng_wdata: Signal<Out, Bits<32>>,
    /// Engine register port: write byte strobes.
    pub eng_wstrb: Signal<Out, Bits<4>>,
    /// Engine register port: write an engine register this cycle.
    pub eng_we: Signal<Out, Bit>,

    rd_value: ROM<Bits<32>, WORD_BITS>,
    rd_class: ROM<Bits<3>, WORD_BITS>,
    wr_class: ROM<Bits<3>, WORD_BITS>,
    w_scratch: Constant<Bits<WORD_BITS>>,
    w_cycle_lo: Constant<Bits<WORD_BITS>>,
    w_cycle_hi: Constant<Bits<WORD_BITS>>,
    w_irq_test: Constant<Bits<WORD_BITS>>,
    class_unmapped: Constant<Bits<2>>,
    class_read_only: Constant<Bits<2>>,
    class_writable: Constant<Bits<2>>,
    rd_engine: Signal<Local, Bit>,
    wr_engine: Signal<Local, Bit>,
    rd_access: Signal<Local, Bits<2>>,
    wr_access: Signal<Local, Bits<2>>,
    resp_okay: Constant<Bits<2>>,
    resp_slverr: Constant<Bits<2>>,
    resp_decerr: Constant<Bits<2>>,
    // Typed constants: a bare literal is emitted 32 or 64 bits wide and the
    // two simulators may then disagree (RTL-FLOW-NOTES.md).
    all_ones: Constant<Bits<32>>,
    byte0: Constant<Bits<32>>,
    byte1: Constant<Bits<32>>,
    byte2: Constant<Bits<32>>,
    byte3: Constant<Bits<32>>,

    aw_fire: Signal<Local, Bit>,
    ar_free: Signal<Local, Bit>,
    ar_word: Signal<Local, Bits<WORD_BITS>>,
    aw_word: Signal<Local, Bits<WORD_BITS>>,
    rd_data: Signal<Local, Bits<32>>,
    m0: Signal<Local, Bits<32>>,
    m1: Signal<Local, Bits<32>>,
    m2: Signal<Local, Bits<32>>,
    m3: Signal<Local, Bits<32>>,
    wmask: Signal<Local, Bits<32>>,

    b_valid: DFF<Bit>,
    b_resp: DFF<Bits<2>>,
    r_valid: DFF<Bit>,
    r_data: DFF<Bits<32>>,
    r_resp: DFF<Bits<2>>,
    scratch: DFFWithInit<Bits<32>>,
    // Two 32-bit halves: rust-hdl simulates Bits wider than 32 bit by bit.
    cycles_lo: DFF<Bits<32>>,
    cycles_hi: DFF<Bits<32>>,
    hi_latch: DFF<Bits<32>>,
    irq_q: DFF<Bit>,
    /// An engine read in flight, by the cycles since its acceptance.
    e1: DFF<Bit>,
    e2: DFF<Bit>,
}

fn word(reg: &Register) -> Bits<WORD_BITS> {
    Bits::from((reg.addr >> 2) as u64)
}

impl Csr {
    /// Elaborate the CSR block for `map`, with the ID block's build
    /// constants from `build`.
    ///
    /// # Panics
    /// At elaboration, if the map is malformed, does not fit the
    /// `ADDR_BITS`-bit port, or has a live register this block does not
    /// implement.
    pub fn new(map: &Map, build: &BuildInfo) -> Self {
        if let Err(e) = weft_regs::check(map) {
            panic!("weft-regs map is malformed: {e}");
        }
        assert_eq!(
            map.addr_bits as usize, ADDR_BITS,
            "the CSR block decodes {ADDR_BITS} address bits; the map has {}",
            map.addr_bits
        );
        let mut values = BTreeMap::new();
        let mut classes = BTreeMap::new();
        for (block, reg) in map.registers() {
            let live = matches!(reg.value, Value::Live { .. });
            let own = OWN_BLOCKS.contains(&block.type_id);
            assert!(
                !live
                    || !own
                    || LIVE
                        .iter()
                        .any(|l| l.addr == reg.addr && l.name == reg.name),
                "register {}.{} is live but the CSR block does not implement it",
                block.name,
                reg.name
            );
            if let Some(v) = map.const_value(block, reg, build) {
                values.insert(word(reg), Bits::<32>::from(v as u64));
            }
            let mut c = if reg.access.writable() {
                class::WRITABLE
            } else {
                class::READ_ONLY
            };
            if live && !own {
                c |= class::ENGINE;
            }
            classes.insert(word(reg), Bits::<3>::from(c));
        }
        let scratch_reset = match ctrl::SCRATCH.value {
            Value::Live { reset } => reset as u64,
            _ => 0,
        };
        Self {
            clock: Default::default(),
            s_axil_awaddr: Default::default(),
            s_axil_awvalid: Default::default(),
            s_axil_awready: Default::default(),
            s_axil_wdata: Default::default(),
            s_axil_wstrb: Default::default(),
            s_axil_wvalid: Default::default(),
            s_axil_wready: Default::default(),
            s_axil_bresp: Default::default(),
            s_axil_bvalid: Default::default(),
            s_axil_bready: Default::default(),
            s_axil_araddr: Default::default(),
            s_axil_arvalid: Default::default(),
            s_axil_arready: Default::default(),
            s_axil_rdata: Default::default(),
            s_axil_rresp: Default::default(),
            s_axil_rvalid: Default::default(),
            s_axil_rready: Default::default(),
            irq: Default::default(),
            eng_raddr: Default::default(),
            eng_re: Default::default(),
            eng_rdata: Default::default(),
            eng_waddr: Default::default(),
            eng_wdata: Default::default(),
            eng_wstrb: Default::default(),
            eng_we: Default::default(),
            rd_engine: Default::default(),
            wr_engine: Default::default(),
            rd_access: Default::default(),
            wr_access: Default::default(),
            rd_value: ROM::new(values),
            rd_class: ROM::new(classes.clone()),
            wr_class: ROM::new(classes),
            w_scratch: Constant::new(word(&ctrl::SCRATCH)),
            w_cycle_lo: Constant::new(word(&ctrl::CYCLE_LO)),
            w_cycle_hi: Constant::new(word(&ctrl::CYCLE_HI)),
            w_irq_test: Constant::new(word(&ctrl::IRQ_TEST)),
            class_unmapped: Constant::new(class::UNMAPPED.into()),
            class_read_only: Constant::new(class::READ_ONLY.into()),
            class_writable: Constant::new(class::WRITABLE.into()),
            resp_okay: Constant::new(resp::OKAY.into()),
            resp_slverr: Constant::new(resp::SLVERR.into()),
            resp_decerr: Constant::new(resp::DECERR.into()),
            all_ones: Constant::new(0xFFFF_FFFF_u64.into()),
            byte0: Constant::new(0x0000_00FF_u64.into()),
            byte1: Constant::new(0x0000_FF00_u64.into()),
            byte2: Constant::new(0x00FF_0000_u64.into()),
            byte3: Constant::new(0xFF00_0000_u64.into()),
            aw_fire: Default::default(),
            ar_free: Default::default(),
            ar_word: Default::default(),
            aw_word: Default::default(),
            rd_data: Default::default(),
            m0: Default::default(),
            m1: Default::default(),
            m2: Default::default(),
            m3: Default::default(),
            wmask: Default::default(),
            b_valid: Default::default(),
            b_resp: Default::default(),
            r_valid: Default::default(),
            r_data: Default::default(),
            r_resp: Default::default(),
            scratch: DFFWithInit::new(Bits::from(scratch_reset)),
            cycles_lo: Default::default(),
            cycles_hi: Default::default(),
            hi_latch: Default::default(),
            irq_q: Default::default(),
            e1: Default::default(),
            e2: Default::default(),
        }
    }
}

impl Logic for Csr {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, b_valid, b_resp, r_valid, r_data, r_resp, scratch, cycles_lo, cycles_hi,
            hi_latch, irq_q, e1, e2
        );

        // Free-running 64-bit cycle counter in two halves.
        self.cycles_lo.d.next = self.cycles_lo.q.val() + 1;
        if self.cycles_lo.q.val() == self.all_ones.val() {
            self.cycles_hi.d.next = self.cycles_hi.q.val() + 1;
        }

        // Write channel: accept AW and W together, one response outstanding.
        self.aw_fire.next =
            self.s_axil_awvalid.val() & self.s_axil_wvalid.val() & !self.b_valid.q.val();
        self.s_axil_awready.next = self.aw_fire.val();
        self.s_axil_wready.next = self.aw_fire.val();
        self.aw_word.next = self.s_axil_awaddr.val().get_bits::<WORD_BITS>(2);
        self.wr_class.address.next = self.aw_word.val();
        self.wr_access.next = self.wr_class.data.val().get_bits::<2>(0);
        self.wr_engine.next = self.wr_class.data.val().get_bit(2);
        self.eng_waddr.next = self.aw_word.val();
        self.eng_wdata.next = self.s_axil_wdata.val();
        self.eng_wstrb.next = self.s_axil_wstrb.val();
        self.eng_we.next = false;

        self.m0.next = 0.into();
        self.m1.next = 0.into();
        self.m2.next = 0.into();
        self.m3.next = 0.into();
        if self.s_axil_wstrb.val().get_bit(0) {
            self.m0.next = self.byte0.val();
        }
        if self.s_axil_wstrb.val().get_bit(1) {
            self.m1.next = self.byte1.val();
        }
        if self.s_axil_wstrb.val().get_bit(2) {
            self.m2.next = self.byte2.val();
        }
        if self.s_axil_wstrb.val().get_bit(3) {
            self.m3.next = self.byte3.val();
        }
        self.wmask.next = self.m0.val() | self.m1.val() | self.m2.val() | self.m3.val();

        self.irq_q.d.next = false;
        if self.b_valid.q.val() & self.s_axil_bready.val() {
            self.b_valid.d.next = false;
        }
        if self.aw_fire.val() {
            self.b_valid.d.next = true;
            self.b_resp.d.next = self.resp_okay.val();
            if self.wr_access.val() == self.class_unmapped.val() {
                self.b_resp.d.next = self.resp_decerr.val();
            }
            if self.wr_access.val() == self.class_read_only.val() {
                self.b_resp.d.next = self.resp_slverr.val();
            }
            if self.wr_access.val() == self.class_writable.val() {
                self.eng_we.next = self.wr_engine.val();
                if self.aw_word.val() == self.w_scratch.val() {
                    self.scratch.d.next = (self.scratch.q.val() & !self.wmask.val())
                        | (self.s_axil_wdata.val() & self.wmask.val());
                }
                if self.aw_word.val() == self.w_irq_test.val() {
                    self.irq_q.d.next =
                        self.s_axil_wdata.val().get_bit(0) & self.s_axil_wstrb.val().get_bit(0);
                }
            }
        }
        self.s_axil_bvalid.next = self.b_valid.q.val();
        self.s_axil_bresp.next = self.b_resp.q.val();
        self.irq.next = self.irq_q.q.val();

        // Read channel: accept whenever no response is pending.
        self.ar_word.next = self.s_axil_araddr.val().get_bits::<WORD_BITS>(2);
        self.rd_value.address.next = self.ar_word.val();
        self.rd_class.address.next = self.ar_word.val();
        self.rd_access.next = self.rd_class.data.val().get_bits::<2>(0);
        self.rd_engine.next = self.rd_class.data.val().get_bit(2);
        self.eng_raddr.next = self.ar_word.val();
        self.ar_free.next = !self.r_valid.q.val() & !self.e1.q.val() & !self.e2.q.val();
        self.eng_re.next = self.s_axil_arvalid.val() & self.ar_free.val() & self.rd_engine.val();
        self.rd_data.next = self.rd_value.data.val();
        if self.ar_word.val() == self.w_scratch.val() {
            self.rd_data.next = self.scratch.q.val();
        }
        if self.ar_word.val() == self.w_cycle_lo.val() {
            self.rd_data.next = self.cycles_lo.q.val();
        }
        if self.ar_word.val() == self.w_cycle_hi.val() {
            self.rd_data.next = self.hi_latch.q.val();
        }
        self.s_axil_arready.next = self.ar_free.val();
        if self.r_valid.q.val() & self.s_axil_rready.val() {
            self.r_valid.d.next = false;
        }
        // An engine register's data comes back ENGINE_READ_LATENCY cycles
        // after its acceptance; the response waits for it.
        self.e1.d.next = self.eng_re.val();
        self.e2.d.next = self.e1.q.val();
        if self.e2.q.val() {
            self.r_valid.d.next = true;
            self.r_data.d.next = self.eng_rdata.val();
            self.r_resp.d.next = self.resp_okay.val();
        }
        if self.s_axil_arvalid.val() & self.ar_free.val() & !self.rd_engine.val() {
            self.r_valid.d.next = true;
            self.r_data.d.next = self.rd_data.val();
            self.r_resp.d.next = self.resp_okay.val();
            if self.rd_access.val() == self.class_unmapped.val() {
                self.r_resp.d.next = self.resp_decerr.val();
                self.r_data.d.next = 0.into();
            }
            if self.ar_word.val() == self.w_cycle_lo.val() {
                self.hi_latch.d.next = self.cycles_hi.q.val();
            }
        }
        self.s_axil_rvalid.next = self.r_valid.q.val();
        self.s_axil_rdata.next = self.r_data.q.val();
        self.s_axil_rresp.next = self.r_resp.q.val();
    }
}
