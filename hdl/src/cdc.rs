//! Clock-domain crossing: synchronisers, a dual-clock FIFO, a one-word
//! two-phase handshake and the AXI4-Lite crossing between the OpenNIC
//! box's two clocks.
//!
//! Behaviour is specified by `weft_model::cdc` (read that first): the
//! models there are exact to the simulation step, synchroniser latency
//! included. Rules every block here keeps:
//! - a single bit crosses through two flip-flops of the destination clock
//!   ([`SyncBit`]) and nothing combinational sits between the source
//!   register and the first flop;
//! - a multi-bit value crosses only as a Gray-coded count ([`SyncGray`]),
//!   which changes one bit per source edge, so a sample caught mid-change is
//!   the old or the new count, never a third value;
//! - data words cross through storage whose entry is written at least two
//!   destination edges before the destination may read it ([`AsyncFifo`],
//!   [`Cdc2Phase`]), and that does not change while the destination may
//!   read it.
//!
//! The clock ports are named after their domain (`wr_clock`/`rd_clock`,
//! `s_aclk`/`m_aclk`), and every flip-flop takes one of them directly
//! (never through logic), so rust-hdl's simulator and Verilog see the edges
//! of two clocks that rise together as one instant.

use rust_hdl::prelude::*;

/// A two-flip-flop synchroniser of a level into `clock`'s domain.
///
/// `sig_in` must come straight from a register of the source domain (no
/// logic in between: a glitch would be sampled). The output follows the
/// input two destination edges later.
#[derive(LogicBlock, Default)]
pub struct SyncBit {
    /// The destination clock.
    pub clock: Signal<In, Clock>,
    /// The level from the source domain.
    pub sig_in: Signal<In, Bit>,
    /// The level in the destination domain.
    pub sig_out: Signal<Out, Bit>,
    /// May go metastable in hardware; never used but by `stable`.
    meta: DFF<Bit>,
    stable: DFF<Bit>,
}

impl Logic for SyncBit {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, meta, stable);
        self.meta.d.next = self.sig_in.val();
        self.stable.d.next = self.meta.q.val();
        self.sig_out.next = self.stable.q.val();
    }
}

/// Two flip-flops of `clock` over a `P`-bit Gray-coded count from another
/// domain. Safe only for values that change at most one bit per source
/// edge; `clear` (destination domain) zeroes both flops, so whatever they
/// caught while the source made a larger jump (a reset) is thrown away.
#[derive(LogicBlock)]
pub struct SyncGray<const P: usize> {
    /// The destination clock.
    pub clock: Signal<In, Clock>,
    /// The Gray count, straight from a source-domain register.
    pub sig_in: Signal<In, Bits<P>>,
    /// Zero both flops at the next edge instead of sampling.
    pub clear: Signal<In, Bit>,
    /// The count, two destination edges late.
    pub sig_out: Signal<Out, Bits<P>>,
    meta: DFF<Bits<P>>,
    stable: DFF<Bits<P>>,
    // Typed: a bare 0 is emitted 32 bits wide (RTL-FLOW-NOTES.md).
    zero: Constant<Bits<P>>,
}

impl<const P: usize> Default for SyncGray<P> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            sig_in: Default::default(),
            clear: Default::default(),
            sig_out: Default::default(),
            meta: Default::default(),
            stable: Default::default(),
            zero: Constant::new(0u64.into()),
        }
    }
}

impl<const P: usize> Logic for SyncGray<P> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, meta, stable);
        self.meta.d.next = self.sig_in.val();
        self.stable.d.next = self.meta.q.val();
        if self.clear.val() {
            self.meta.d.next = self.zero.val();
            self.stable.d.next = self.zero.val();
        }
        self.sig_out.next = self.stable.q.val();
    }
}

/// A dual-clock FIFO of `N` words of type `D` (`N` a power of two, at least
/// 2; `P` = log2(`N`) + 1 pointer bits).
///
/// Write side on `wr_clock`: `push` stores `data_in` unless `full` (a push
/// while full is dropped). Read side on `rd_clock`, first-word
/// fall-through: `data_out` is the oldest word whenever `empty` is low, read
/// combinationally from the storage (a flip-flop array, distributed RAM on a
/// Xilinx part), and `pop` consumes it (dropped while empty). Each side
/// keeps a binary pointer and its Gray code in registers; the Gray pointer
/// crosses through [`SyncGray`]. `full`: the write Gray pointer equals the
/// synchronised read Gray pointer with its two top bits inverted (N
/// ahead); `empty`: the read Gray pointer equals the synchronised write
/// Gray pointer.
///
/// `reset` (write domain) clears both sides through a four-phase handshake
/// (request to the read side, acknowledgement back), `full` held high until
/// it completes and `empty` while the read side resets; see
/// `weft_model::cdc::fifo` for the exact sequence. Each side's pointer jumps
/// to zero only while the *other* side ignores it (the write pointer once
/// the read side, holding its copy cleared, has acknowledged; the read
/// pointer while the write side is busy), so a multi-bit jump is never
/// sampled as a count. The storage is not cleared.
#[derive(LogicBlock)]
pub struct AsyncFifo<D: Synth, const N: usize, const P: usize> {
    /// Write clock.
    pub wr_clock: Signal<In, Clock>,
    /// Write side: reset both sides.
    pub reset: Signal<In, Bit>,
    /// Write side: store `data_in`.
    pub push: Signal<In, Bit>,
    /// Write side: the word to store.
    pub data_in: Signal<In, D>,
    /// Write side: no room, or a reset in progress.
    pub full: Signal<Out, Bit>,
    /// Read clock.
    pub rd_clock: Signal<In, Clock>,
    /// Read side: consume the head.
    pub pop: Signal<In, Bit>,
    /// Read side: the head (valid when `empty` is low).
    pub data_out: Signal<Out, D>,
    /// Read side: nothing to read, or the read side in reset.
    pub empty: Signal<Out, Bit>,

    mem: [DFF<D>; N],
    // Write domain.
    wbin: DFF<Bits<P>>,
    wgray: DFF<Bits<P>>,
    /// Reset requested, waiting for the read side's acknowledgement.
    req: DFF<Bit>,
    /// Request withdrawn, waiting for the acknowledgement to fall.
    waiting: DFF<Bit>,
    rgray_sync: SyncGray<P>,
    ack_sync: SyncBit,
    // Read domain.
    rbin: DFF<Bits<P>>,
    rgray: DFF<Bits<P>>,
    /// The read side has seen the request (the acknowledgement).
    rd_rst: DFF<Bit>,
    wgray_sync: SyncGray<P>,
    req_sync: SyncBit,

    busy: Signal<Local, Bit>,
    wfull: Signal<Local, Bit>,
    rempty: Signal<Local, Bit>,
    push_ok: Signal<Local, Bit>,
    pop_ok: Signal<Local, Bit>,
    wnext: Signal<Local, Bits<P>>,
    rnext: Signal<Local, Bits<P>>,
    waddr: Signal<Local, Bits<P>>,
    raddr: Signal<Local, Bits<P>>,
    one: Constant<Bits<P>>,
    zero: Constant<Bits<P>>,
    /// N - 1: the address bits of a pointer.
    addr_mask: Constant<Bits<P>>,
    /// The two top pointer bits: a Gray pointer N ahead differs in these.
    top2: Constant<Bits<P>>,
}

impl<D: Synth, const N: usize, const P: usize> AsyncFifo<D, N, P> {
    /// Elaborate the FIFO.
    ///
    /// # Panics
    /// At elaboration, if `N` is not a power of two of at least 2 or `P` is
    /// not log2(`N`) + 1.
    pub fn new() -> Self {
        assert!(
            N >= 2 && N.is_power_of_two(),
            "AsyncFifo depth {N} must be a power of two, at least 2"
        );
        assert_eq!(
            1usize << (P - 1),
            N,
            "AsyncFifo<_, {N}, {P}>: P must be log2(N) + 1 pointer bits"
        );
        Self {
            wr_clock: Default::default(),
            reset: Default::default(),
            push: Default::default(),
            data_in: Default::default(),
            full: Default::default(),
            rd_clock: Default::default(),
            pop: Default::default(),
            data_out: Default::default(),
            empty: Default::default(),
            mem: array_init::array_init(|_| Default::default()),
            wbin: Default::default(),
            wgray: Default::default(),
            req: Default::default(),
            waiting: Default::default(),
            rgray_sync: Default::default(),
            ack_sync: Default::default(),
            rbin: Default::default(),
            rgray: Default::default(),
            rd_rst: Default::default(),
            wgray_sync: Default::default(),
            req_sync: Default::default(),
            busy: Default::default(),
            wfull: Default::default(),
            rempty: Default::default(),
            push_ok: Default::default(),
            pop_ok: Default::default(),
            wnext: Default::default(),
            rnext: Default::default(),
            waddr: Default::default(),
            raddr: Default::default(),
            one: Constant::new(1u64.into()),
            zero: Constant::new(0u64.into()),
            addr_mask: Constant::new(((N - 1) as u64).into()),
            top2: Constant::new((3u64 << (P - 2)).into()),
        }
    }
}

impl<D: Synth, const N: usize, const P: usize> Default for AsyncFifo<D, N, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Synth, const N: usize, const P: usize> Logic for AsyncFifo<D, N, P> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, wr_clock, wbin, wgray, req, waiting);
        dff_setup!(self, rd_clock, rbin, rgray, rd_rst);
        for i in 0..N {
            self.mem[i].clock.next = self.wr_clock.val();
            self.mem[i].d.next = self.mem[i].q.val();
        }
        self.rgray_sync.clock.next = self.wr_clock.val();
        self.rgray_sync.sig_in.next = self.rgray.q.val();
        // The read pointer jumps only while the write side is busy (full),
        // which outlasts the synchroniser: nothing to throw away here.
        self.rgray_sync.clear.next = false;
        self.ack_sync.clock.next = self.wr_clock.val();
        self.ack_sync.sig_in.next = self.rd_rst.q.val();
        self.wgray_sync.clock.next = self.rd_clock.val();
        self.wgray_sync.sig_in.next = self.wgray.q.val();
        // The write pointer jumps to zero while the read side is in reset:
        // drop whatever the synchroniser catches of it.
        self.wgray_sync.clear.next = self.req_sync.sig_out.val();
        self.req_sync.clock.next = self.rd_clock.val();
        self.req_sync.sig_in.next = self.req.q.val();

        // Write side.
        self.busy.next = self.req.q.val() | self.waiting.q.val();
        self.wfull.next = self.busy.val()
            | (self.wgray.q.val() == (self.rgray_sync.sig_out.val() ^ self.top2.val()));
        self.full.next = self.wfull.val();
        self.push_ok.next = self.push.val() & !self.wfull.val() & !self.reset.val();
        self.wnext.next = self.wbin.q.val() + self.one.val();
        self.waddr.next = self.wbin.q.val() & self.addr_mask.val();
        for i in 0..N {
            if self.push_ok.val() & (self.waddr.val().index() == i) {
                self.mem[i].d.next = self.data_in.val();
            }
        }
        if self.push_ok.val() {
            self.wbin.d.next = self.wnext.val();
            self.wgray.d.next = self.wnext.val() ^ (self.wnext.val() >> 1);
        }
        if self.req.q.val() & self.ack_sync.sig_out.val() {
            // The read side is in reset and ignores this pointer: clear it.
            self.wbin.d.next = self.zero.val();
            self.wgray.d.next = self.zero.val();
            self.req.d.next = false;
            self.waiting.d.next = true;
        }
        if self.waiting.q.val() & !self.ack_sync.sig_out.val() {
            self.waiting.d.next = false;
        }
        if !self.busy.val() & self.reset.val() {
            self.req.d.next = true;
        }

        // Read side.
        self.rd_rst.d.next = self.req_sync.sig_out.val();
        self.rempty.next =
            self.req_sync.sig_out.val() | (self.rgray.q.val() == self.wgray_sync.sig_out.val());
        self.empty.next = self.rempty.val();
        self.pop_ok.next = self.pop.val() & !self.rempty.val();
        self.rnext.next = self.rbin.q.val() + self.one.val();
        self.raddr.next = self.rbin.q.val() & self.addr_mask.val();
        self.data_out.next = self.mem[0].q.val();
        for i in 0..N {
            if self.raddr.val().index() == i {
                self.data_out.next = self.mem[i].q.val();
            }
        }
        if self.pop_ok.val() {
            self.rbin.d.next = self.rnext.val();
            self.rgray.d.next = self.rnext.val() ^ (self.rnext.val() >> 1);
        }
        if self.req_sync.sig_out.val() {
            self.rbin.d.next = self.zero.val();
            self.rgray.d.next = self.zero.val();
        }
    }
}

/// A one-word crossing by a two-phase handshake.
///
/// Source side on `src_clock`: `src_ready` while no word is in flight; a
/// `src_valid` then stores `src_data` and toggles the request. Destination
/// side on `dst_clock`: the request crosses through a [`SyncBit`], and
/// `dst_valid` is high from the second destination edge after the toggle
/// until `dst_ready` takes the word (which toggles the acknowledgement);
/// `dst_data` is the stored word, which holds from two destination edges
/// before `dst_valid` rises until the acknowledgement is back. The
/// acknowledgement crosses back through a [`SyncBit`], and `src_ready`
/// rises again two source edges after it toggles.
#[derive(LogicBlock)]
pub struct Cdc2Phase<D: Synth> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// Source side: a word to send.
    pub src_valid: Signal<In, Bit>,
    /// Source side: the word.
    pub src_data: Signal<In, D>,
    /// Source side: no word in flight.
    pub src_ready: Signal<Out, Bit>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// Destination side: a word is offered.
    pub dst_valid: Signal<Out, Bit>,
    /// Destination side: the word.
    pub dst_data: Signal<Out, D>,
    /// Destination side: take the word.
    pub dst_ready: Signal<In, Bit>,
    data: DFF<D>,
    req: DFF<Bit>,
    ack: DFF<Bit>,
    req_sync: SyncBit,
    ack_sync: SyncBit,
    idle: Signal<Local, Bit>,
    offered: Signal<Local, Bit>,
}

impl<D: Synth> Default for Cdc2Phase<D> {
    fn default() -> Self {
        Self {
            src_clock: Default::default(),
            src_valid: Default::default(),
            src_data: Default::default(),
            src_ready: Default::default(),
            dst_clock: Default::default(),
            dst_valid: Default::default(),
            dst_data: Default::default(),
            dst_ready: Default::default(),
            data: Default::default(),
            req: Default::default(),
            ack: Default::default(),
            req_sync: Default::default(),
            ack_sync: Default::default(),
            idle: Default::default(),
            offered: Default::default(),
        }
    }
}

impl<D: Synth> Logic for Cdc2Phase<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, data, req);
        dff_setup!(self, dst_clock, ack);
        self.req_sync.clock.next = self.dst_clock.val();
        self.req_sync.sig_in.next = self.req.q.val();
        self.ack_sync.clock.next = self.src_clock.val();
        self.ack_sync.sig_in.next = self.ack.q.val();
        self.idle.next = self.req.q.val() == self.ack_sync.sig_out.val();
        self.src_ready.next = self.idle.val();
        if self.idle.val() & self.src_valid.val() {
            self.data.d.next = self.src_data.val();
            self.req.d.next = !self.req.q.val();
        }
        self.offered.next = self.req_sync.sig_out.val() != self.ack.q.val();
        self.dst_valid.next = self.offered.val();
        self.dst_data.next = self.data.q.val();
        if self.offered.val() & self.dst_ready.val() {
            self.ack.d.next = !self.ack.q.val();
        }
    }
}

/// `{hi, lo}`: two values side by side in one `N`-bit word (`N = A + B`),
/// `lo` in the low `A` bits. A block of its own because rust-hdl's
/// `bit_cast` emits a widening as `x & N'hmask`, which Verilog reads as a
/// width mismatch; this emits a concatenation.
#[derive(LogicBlock, Default)]
pub struct Join<const N: usize, const A: usize, const B: usize> {
    /// The low bits.
    pub lo: Signal<In, Bits<A>>,
    /// The high bits.
    pub hi: Signal<In, Bits<B>>,
    /// `{hi, lo}`.
    pub joined: Signal<Out, Bits<N>>,
}

impl<const N: usize, const A: usize, const B: usize> Logic for Join<N, A, B> {
    fn update(&mut self) {
        self.joined.next =
            bit_cast::<N, A>(self.lo.val()) | (bit_cast::<N, B>(self.hi.val()) << (A as u64));
    }

    fn connect(&mut self) {
        self.joined.connect();
    }

    fn hdl(&self) -> Verilog {
        assert_eq!(N, A + B, "Join<{N}, {A}, {B}>: N must be A + B");
        Verilog::Custom("always @(*) joined = {hi, lo};".into())
    }
}

/// Byte-address width of [`AxilCdc`]'s ports (that of the CSR block).
pub const AXIL_ADDR_BITS: usize = crate::csr::ADDR_BITS;

/// The AXI4-Lite crossing: a slave port on `s_aclk` (the shell's
/// `axil_aclk`) and a master port on `m_aclk` (`axis_aclk`), one
/// [`Cdc2Phase`] per channel (AW, W, AR forward; B, R back). READY towards
/// a channel's source is "no word in flight", VALID towards its sink "a
/// word offered", the payload that word, so VALID never depends on READY
/// and payloads hold until taken. One word per channel rather than an
/// [`AsyncFifo`]: a register master keeps one transaction in flight, and
/// an idle handshake costs a simulator two comparisons a cycle where five
/// FIFOs' Gray pointers cost it a good deal more (the top's Verilated
/// model spent about 7% of its time in them). See `weft_model::cdc::axil`
/// for why the register path crosses here and not at the engine register
/// port.
#[derive(LogicBlock)]
pub struct AxilCdc {
    /// The slave port's clock (`axil_aclk`).
    pub s_aclk: Signal<In, Clock>,
    /// Slave port: AWADDR.
    pub s_axil_awaddr: Signal<In, Bits<AXIL_ADDR_BITS>>,
    /// Slave port: AWVALID.
    pub s_axil_awvalid: Signal<In, Bit>,
    /// Slave port: AWREADY.
    pub s_axil_awready: Signal<Out, Bit>,
    /// Slave port: WDATA.
    pub s_axil_wdata: Signal<In, Bits<32>>,
    /// Slave port: WSTRB.
    pub s_axil_wstrb: Signal<In, Bits<4>>,
    /// Slave port: WVALID.
    pub s_axil_wvalid: Signal<In, Bit>,
    /// Slave port: WREADY.
    pub s_axil_wready: Signal<Out, Bit>,
    /// Slave port: BRESP.
    pub s_axil_bresp: Signal<Out, Bits<2>>,
    /// Slave port: BVALID.
    pub s_axil_bvalid: Signal<Out, Bit>,
    /// Slave port: BREADY.
    pub s_axil_bready: Signal<In, Bit>,
    /// Slave port: ARADDR.
    pub s_axil_araddr: Signal<In, Bits<AXIL_ADDR_BITS>>,
    /// Slave port: ARVALID.
    pub s_axil_arvalid: Signal<In, Bit>,
    /// Slave port: ARREADY.
    pub s_axil_arready: Signal<Out, Bit>,
    /// Slave port: RDATA.
    pub s_axil_rdata: Signal<Out, Bits<32>>,
    /// Slave port: RRESP.
    pub s_axil_rresp: Signal<Out, Bits<2>>,
    /// Slave port: RVALID.
    pub s_axil_rvalid: Signal<Out, Bit>,
    /// Slave port: RREADY.
    pub s_axil_rready: Signal<In, Bit>,

    /// The master port's clock (`axis_aclk`).
    pub m_aclk: Signal<In, Clock>,
    /// Master port: AWADDR.
    pub m_axil_awaddr: Signal<Out, Bits<AXIL_ADDR_BITS>>,
    /// Master port: AWVALID.
    pub m_axil_awvalid: Signal<Out, Bit>,
    /// Master port: AWREADY.
    pub m_axil_awready: Signal<In, Bit>,
    /// Master port: WDATA.
    pub m_axil_wdata: Signal<Out, Bits<32>>,
    /// Master port: WSTRB.
    pub m_axil_wstrb: Signal<Out, Bits<4>>,
    /// Master port: WVALID.
    pub m_axil_wvalid: Signal<Out, Bit>,
    /// Master port: WREADY.
    pub m_axil_wready: Signal<In, Bit>,
    /// Master port: BRESP.
    pub m_axil_bresp: Signal<In, Bits<2>>,
    /// Master port: BVALID.
    pub m_axil_bvalid: Signal<In, Bit>,
    /// Master port: BREADY.
    pub m_axil_bready: Signal<Out, Bit>,
    /// Master port: ARADDR.
    pub m_axil_araddr: Signal<Out, Bits<AXIL_ADDR_BITS>>,
    /// Master port: ARVALID.
    pub m_axil_arvalid: Signal<Out, Bit>,
    /// Master port: ARREADY.
    pub m_axil_arready: Signal<In, Bit>,
    /// Master port: RDATA.
    pub m_axil_rdata: Signal<In, Bits<32>>,
    /// Master port: RRESP.
    pub m_axil_rresp: Signal<In, Bits<2>>,
    /// Master port: RVALID.
    pub m_axil_rvalid: Signal<In, Bit>,
    /// Master port: RREADY.
    pub m_axil_rready: Signal<Out, Bit>,

    aw: Cdc2Phase<Bits<AXIL_ADDR_BITS>>,
    w: Cdc2Phase<Bits<36>>,
    b: Cdc2Phase<Bits<2>>,
    ar: Cdc2Phase<Bits<AXIL_ADDR_BITS>>,
    r: Cdc2Phase<Bits<34>>,
    w_join: Join<36, 32, 4>,
    r_join: Join<34, 32, 2>,
}

impl AxilCdc {
    /// Elaborate the crossing.
    pub fn new() -> Self {
        Self {
            s_aclk: Default::default(),
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
            m_aclk: Default::default(),
            m_axil_awaddr: Default::default(),
            m_axil_awvalid: Default::default(),
            m_axil_awready: Default::default(),
            m_axil_wdata: Default::default(),
            m_axil_wstrb: Default::default(),
            m_axil_wvalid: Default::default(),
            m_axil_wready: Default::default(),
            m_axil_bresp: Default::default(),
            m_axil_bvalid: Default::default(),
            m_axil_bready: Default::default(),
            m_axil_araddr: Default::default(),
            m_axil_arvalid: Default::default(),
            m_axil_arready: Default::default(),
            m_axil_rdata: Default::default(),
            m_axil_rresp: Default::default(),
            m_axil_rvalid: Default::default(),
            m_axil_rready: Default::default(),
            aw: Default::default(),
            w: Default::default(),
            b: Default::default(),
            ar: Default::default(),
            r: Default::default(),
            w_join: Default::default(),
            r_join: Default::default(),
        }
    }
}

impl Default for AxilCdc {
    fn default() -> Self {
        Self::new()
    }
}

impl Logic for AxilCdc {
    #[hdl_gen]
    fn update(&mut self) {
        // Requests: from the slave port's clock to the master's.
        self.aw.src_clock.next = self.s_aclk.val();
        self.aw.dst_clock.next = self.m_aclk.val();
        self.w.src_clock.next = self.s_aclk.val();
        self.w.dst_clock.next = self.m_aclk.val();
        self.ar.src_clock.next = self.s_aclk.val();
        self.ar.dst_clock.next = self.m_aclk.val();
        // Responses: the other way.
        self.b.src_clock.next = self.m_aclk.val();
        self.b.dst_clock.next = self.s_aclk.val();
        self.r.src_clock.next = self.m_aclk.val();
        self.r.dst_clock.next = self.s_aclk.val();

        self.aw.src_valid.next = self.s_axil_awvalid.val();
        self.aw.src_data.next = self.s_axil_awaddr.val();
        self.s_axil_awready.next = self.aw.src_ready.val();
        self.m_axil_awvalid.next = self.aw.dst_valid.val();
        self.m_axil_awaddr.next = self.aw.dst_data.val();
        self.aw.dst_ready.next = self.m_axil_awready.val();

        self.w_join.lo.next = self.s_axil_wdata.val();
        self.w_join.hi.next = self.s_axil_wstrb.val();
        self.w.src_valid.next = self.s_axil_wvalid.val();
        self.w.src_data.next = self.w_join.joined.val();
        self.s_axil_wready.next = self.w.src_ready.val();
        self.m_axil_wvalid.next = self.w.dst_valid.val();
        self.m_axil_wdata.next = self.w.dst_data.val().get_bits::<32>(0);
        self.m_axil_wstrb.next = self.w.dst_data.val().get_bits::<4>(32);
        self.w.dst_ready.next = self.m_axil_wready.val();

        self.ar.src_valid.next = self.s_axil_arvalid.val();
        self.ar.src_data.next = self.s_axil_araddr.val();
        self.s_axil_arready.next = self.ar.src_ready.val();
        self.m_axil_arvalid.next = self.ar.dst_valid.val();
        self.m_axil_araddr.next = self.ar.dst_data.val();
        self.ar.dst_ready.next = self.m_axil_arready.val();

        self.b.src_valid.next = self.m_axil_bvalid.val();
        self.b.src_data.next = self.m_axil_bresp.val();
        self.m_axil_bready.next = self.b.src_ready.val();
        self.s_axil_bvalid.next = self.b.dst_valid.val();
        self.s_axil_bresp.next = self.b.dst_data.val();
        self.b.dst_ready.next = self.s_axil_bready.val();

        self.r_join.lo.next = self.m_axil_rdata.val();
        self.r_join.hi.next = self.m_axil_rresp.val();
        self.r.src_valid.next = self.m_axil_rvalid.val();
        self.r.src_data.next = self.r_join.joined.val();
        self.m_axil_rready.next = self.r.src_ready.val();
        self.s_axil_rvalid.next = self.r.dst_valid.val();
        self.s_axil_rdata.next = self.r.dst_data.val().get_bits::<32>(0);
        self.s_axil_rresp.next = self.r.dst_data.val().get_bits::<2>(32);
        self.r.dst_ready.next = self.s_axil_rready.val();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_elaborate_and_emit() {
        let mut f = AsyncFifo::<Bits<8>, 16, 5>::new();
        f.connect_all();
        let v = generate_verilog(&f);
        assert!(v.contains("module top"), "{v}");
        let mut a = AxilCdc::new();
        a.connect_all();
        let v = generate_verilog(&a);
        assert!(v.contains("joined = {hi, lo}"), "{v}");
    }

    #[test]
    #[should_panic(expected = "P must be log2(N) + 1")]
    fn refuses_a_wrong_pointer_width() {
        let _ = AsyncFifo::<Bits<8>, 16, 4>::new();
    }

    #[test]
    #[should_panic(expected = "power of two")]
    fn refuses_a_depth_that_is_not_a_power_of_two() {
        let _ = AsyncFifo::<Bits<8>, 6, 3>::new();
    }
}
