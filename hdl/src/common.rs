//! Small building blocks shared by the engines.

use rust_hdl::prelude::*;
use weft_regs::Register;

/// A typed constant: a bare literal in `#[hdl_gen]` code is emitted 32 or
/// 64 bits wide, and the two simulators may then disagree
/// (RTL-FLOW-NOTES.md).
pub fn konst<const N: usize>(v: u64) -> Constant<Bits<N>> {
    Constant::new(Bits::from(v))
}

/// A register's word address on the engine register port (14 bits).
pub fn word_of(r: &Register) -> Bits<14> {
    Bits::from((r.addr >> 2) as u64)
}

/// A 64-bit event counter readable as a LO/HI register pair: `latch` (a read
/// of the LO word) captures the HI word, so software reads LO then HI and
/// gets one consistent value. Two 32-bit halves, because rust-hdl simulates
/// `Bits` wider than 32 bit by bit.
#[derive(LogicBlock, Default)]
pub struct Counter64 {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Amount to add this cycle.
    pub inc: Signal<In, Bits<32>>,
    /// Clear to zero (wins over `inc`).
    pub clear: Signal<In, Bit>,
    /// Latch the HI word (a LO read).
    pub latch: Signal<In, Bit>,
    /// Bits 31:0.
    pub lo: Signal<Out, Bits<32>>,
    /// Bits 63:32 as latched.
    pub hi_latched: Signal<Out, Bits<32>>,
    lo_q: DFF<Bits<32>>,
    hi_q: DFF<Bits<32>>,
    latch_q: DFF<Bits<32>>,
}

impl Logic for Counter64 {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, lo_q, hi_q, latch_q);
        // The words load only on a cycle with an increment (a clock enable
        // in hardware): most cycles count nothing, and a simulator then
        // tests one word instead of adding and comparing 64 bits.
        if self.inc.val().any() {
            self.lo_q.d.next = self.lo_q.q.val() + self.inc.val();
            // Carry out of the low word: the sum wrapped below the old
            // value.
            if (self.lo_q.q.val() + self.inc.val()) < self.lo_q.q.val() {
                self.hi_q.d.next = self.hi_q.q.val() + 1;
            }
        }
        if self.latch.val() {
            self.latch_q.d.next = self.hi_q.q.val();
        }
        if self.clear.val() {
            self.lo_q.d.next = 0.into();
            self.hi_q.d.next = 0.into();
            self.latch_q.d.next = 0.into();
        }
        self.lo.next = self.lo_q.q.val();
        self.hi_latched.next = self.latch_q.q.val();
    }
}

/// A 4-entry first-word-fall-through FIFO. `push` and `pop` may happen on
/// the same cycle; callers keep `push` off when full and `pop` off when
/// empty (the engines reserve space before they accept input).
///
/// Its pointers come out (`rd`, `wr`) so that FIFOs always pushed and
/// popped together keep only their entries ([`Fifo4Mem`]) and follow one
/// `Fifo4`'s pointers: one pointer set and count for the group, not one
/// each, in hardware (flip-flops and the count's adders) and in a
/// simulator (which evaluates every copy every cycle).
#[derive(LogicBlock)]
pub struct Fifo4<D: Synth> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Write `data_in` this cycle.
    pub push: Signal<In, Bit>,
    /// Data to write.
    pub data_in: Signal<In, D>,
    /// Drop the head this cycle.
    pub pop: Signal<In, Bit>,
    /// The head (valid when `count` is non-zero).
    pub data_out: Signal<Out, D>,
    /// Entries held, 0..=4.
    pub count: Signal<Out, Bits<3>>,
    /// The read pointer, for followers' `rd`.
    pub rd: Signal<Out, Bits<2>>,
    /// The write pointer, for followers' `wr`.
    pub wr: Signal<Out, Bits<2>>,
    mem: Fifo4Mem<D>,
    rd_q: DFF<Bits<2>>,
    wr_q: DFF<Bits<2>>,
    n: DFF<Bits<3>>,
    n_next: Signal<Local, Bits<3>>,
    one2: Constant<Bits<2>>,
    one3: Constant<Bits<3>>,
}

impl<D: Synth> Default for Fifo4<D> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            push: Default::default(),
            data_in: Default::default(),
            pop: Default::default(),
            data_out: Default::default(),
            count: Default::default(),
            rd: Default::default(),
            wr: Default::default(),
            mem: Default::default(),
            rd_q: Default::default(),
            wr_q: Default::default(),
            n: Default::default(),
            n_next: Default::default(),
            one2: Constant::new(1u64.into()),
            one3: Constant::new(1u64.into()),
        }
    }
}

impl<D: Synth> Logic for Fifo4<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, rd_q, wr_q, n);
        self.mem.clock.next = self.clock.val();
        self.mem.push.next = self.push.val();
        self.mem.data_in.next = self.data_in.val();
        self.mem.wr.next = self.wr_q.q.val();
        self.mem.rd.next = self.rd_q.q.val();
        self.data_out.next = self.mem.data_out.val();
        if self.push.val() {
            self.wr_q.d.next = self.wr_q.q.val() + self.one2.val();
        }
        // One assignment of the count, under one condition: Verilator keeps
        // a shadow copy of a register assigned in two branches whenever
        // another clocked block reads it (a parent reading `count`), and
        // none for one assignment.
        self.n_next.next = self.n.q.val() + self.one3.val();
        if !self.push.val() {
            self.n_next.next = self.n.q.val() - self.one3.val();
        }
        if self.push.val() ^ self.pop.val() {
            self.n.d.next = self.n_next.val();
        }
        if self.pop.val() {
            self.rd_q.d.next = self.rd_q.q.val() + self.one2.val();
        }
        self.count.next = self.n.q.val();
        self.rd.next = self.rd_q.q.val();
        self.wr.next = self.wr_q.q.val();
    }
}

/// The four entries of a `Fifo4`, written at `wr` on `push` and read at
/// `rd`: a FIFO of its own when driven by a [`Fifo4`]'s pointers and that
/// FIFO's `push` (a follower), or the storage inside one.
#[derive(LogicBlock)]
pub struct Fifo4Mem<D: Synth> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Write `data_in` at `wr` this cycle.
    pub push: Signal<In, Bit>,
    /// Data to write.
    pub data_in: Signal<In, D>,
    /// The write pointer.
    pub wr: Signal<In, Bits<2>>,
    /// The read pointer.
    pub rd: Signal<In, Bits<2>>,
    /// The entry at `rd`.
    pub data_out: Signal<Out, D>,
    mem: [DFF<D>; 4],
}

impl<D: Synth> Default for Fifo4Mem<D> {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            push: Default::default(),
            data_in: Default::default(),
            wr: Default::default(),
            rd: Default::default(),
            data_out: Default::default(),
            mem: array_init::array_init(|_| Default::default()),
        }
    }
}

impl<D: Synth> Logic for Fifo4Mem<D> {
    #[hdl_gen]
    fn update(&mut self) {
        for i in 0..4 {
            self.mem[i].clock.next = self.clock.val();
            self.mem[i].d.next = self.mem[i].q.val();
        }
        // The head by the read pointer's bits (a two-level mux), and the
        // write decoder under `push`: a simulator then tests a bit or two
        // a cycle, not four comparisons each for the head and the write.
        if self.rd.val().get_bit(1) {
            if self.rd.val().get_bit(0) {
                self.data_out.next = self.mem[3].q.val();
            } else {
                self.data_out.next = self.mem[2].q.val();
            }
        } else if self.rd.val().get_bit(0) {
            self.data_out.next = self.mem[1].q.val();
        } else {
            self.data_out.next = self.mem[0].q.val();
        }
        if self.push.val() {
            for i in 0..4 {
                if self.wr.val().index() == i {
                    self.mem[i].d.next = self.data_in.val();
                }
            }
        }
    }
}

/// Zero-extends `narrow` to `wide`. A block of its own for two reasons:
/// rust-hdl's `bit_cast` cannot see a `for` loop's index, and it emits a
/// widening cast as `x & N'hmask`, which Verilator's lint rightly flags as a
/// width mismatch; this block emits an explicit zero-extension instead.
#[derive(LogicBlock, Default)]
pub struct Widen<const N: usize, const M: usize> {
    /// The narrow value.
    pub narrow: Signal<In, Bits<M>>,
    /// The same value, `N` bits wide.
    pub wide: Signal<Out, Bits<N>>,
}

impl<const N: usize, const M: usize> Logic for Widen<N, M> {
    fn update(&mut self) {
        self.wide.next = bit_cast::<N, M>(self.narrow.val());
    }

    fn connect(&mut self) {
        self.wide.connect();
    }

    fn hdl(&self) -> Verilog {
        assert!(N > M, "Widen<{N}, {M}> must widen");
        Verilog::Custom(format!(
            "always @(*) wide = {{{{{}{{1'b0}}}}, narrow}};",
            N - M
        ))
    }
}

/// `a <= b` for 64-bit unsigned values held as 32-bit halves, compared
/// only while `en` (`le` is 0 otherwise). The enable is for simulators:
/// Verilator evaluates every expression on every cycle, and a compare its
/// user needs only for a valid transaction then costs one test on the
/// other cycles; in hardware it is one more AND.
#[derive(LogicBlock, Default)]
pub struct Cmp64Le {
    /// Compare this cycle.
    pub en: Signal<In, Bit>,
    /// `a` bits 31:0.
    pub a_lo: Signal<In, Bits<32>>,
    /// `a` bits 63:32.
    pub a_hi: Signal<In, Bits<32>>,
    /// `b` bits 31:0.
    pub b_lo: Signal<In, Bits<32>>,
    /// `b` bits 63:32.
    pub b_hi: Signal<In, Bits<32>>,
    /// `en` and `a <= b`.
    pub le: Signal<Out, Bit>,
}

impl Logic for Cmp64Le {
    #[hdl_gen]
    fn update(&mut self) {
        self.le.next = false;
        if self.en.val() {
            if self.a_hi.val() < self.b_hi.val() {
                self.le.next = true;
            }
            if self.a_hi.val() == self.b_hi.val() {
                self.le.next = self.a_lo.val() <= self.b_lo.val();
            }
        }
    }
}

/// `a + b` for 64-bit values held as 32-bit halves, wrapping, with the
/// carry out of bit 63. Not gated like [`Cmp64Le`]: a gated 64-bit
/// result costs an AND a bit in hardware, and with its adders and
/// compares gated MemOps took 14,195 LUTs against 12,324 (`weft hdl synth
/// --block memops`) for about 1.5% more simulation speed (`weft bench sim
/// --only verilator`, 2026-12-03).
#[derive(LogicBlock, Default)]
pub struct Add64 {
    /// `a` bits 31:0.
    pub a_lo: Signal<In, Bits<32>>,
    /// `a` bits 63:32.
    pub a_hi: Signal<In, Bits<32>>,
    /// `b` bits 31:0.
    pub b_lo: Signal<In, Bits<32>>,
    /// `b` bits 63:32.
    pub b_hi: Signal<In, Bits<32>>,
    /// Sum bits 31:0.
    pub s_lo: Signal<Out, Bits<32>>,
    /// Sum bits 63:32.
    pub s_hi: Signal<Out, Bits<32>>,
    /// Carry out of bit 63 (the sum wrapped).
    pub carry: Signal<Out, Bit>,
    lo: Signal<Local, Bits<32>>,
    hi0: Signal<Local, Bits<32>>,
    hi: Signal<Local, Bits<32>>,
    c0: Signal<Local, Bit>,
}

impl Logic for Add64 {
    #[hdl_gen]
    fn update(&mut self) {
        self.lo.next = self.a_lo.val() + self.b_lo.val();
        self.c0.next = self.lo.val() < self.a_lo.val();
        self.hi0.next = self.a_hi.val() + self.b_hi.val();
        self.hi.next = self.hi0.val();
        if self.c0.val() {
            self.hi.next = self.hi0.val() + 1;
        }
        // Carry out of the high word: from a + b, or from adding the low carry.
        self.carry.next =
            (self.hi0.val() < self.a_hi.val()) | (self.c0.val() & (self.hi.val() < self.hi0.val()));
        self.s_lo.next = self.lo.val();
        self.s_hi.next = self.hi.val();
    }
}

/// `{hi, lo}`: two values side by side (`N = H + L`). A block of its own
/// because rust-hdl has no concatenation, and building one from shifts and
/// casts emits width mismatches Verilator's lint rightly flags.
#[derive(LogicBlock, Default)]
pub struct Cat<const N: usize, const H: usize, const L: usize> {
    /// The high part.
    pub hi: Signal<In, Bits<H>>,
    /// The low part.
    pub lo: Signal<In, Bits<L>>,
    /// `{hi, lo}`.
    pub out: Signal<Out, Bits<N>>,
}

impl<const N: usize, const H: usize, const L: usize> Logic for Cat<N, H, L> {
    fn update(&mut self) {
        self.out.next =
            (bit_cast::<N, H>(self.hi.val()) << L as u64) | bit_cast::<N, L>(self.lo.val());
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        assert_eq!(N, H + L, "Cat<{N}, {H}, {L}>: N must be H + L");
        Verilog::Custom("always @(*) out = {hi, lo};".into())
    }
}

/// `L` lanes of `LW` bits side by side in an `N`-bit word (`N = L * LW`),
/// lane 0 in the low bits: `{lane[L-1], ..., lane[0]}`. A block of its own
/// because rust-hdl has no concatenation, and the shift-and-or chain that
/// builds the same word from widened lanes is `L` full-width shifts every
/// cycle in a cycle-based simulator, where this is `N / 32` word moves.
#[derive(LogicBlock)]
pub struct Pack<const N: usize, const LW: usize, const L: usize> {
    /// The lanes.
    pub lane: [Signal<In, Bits<LW>>; L],
    /// The packed word.
    pub out: Signal<Out, Bits<N>>,
}

impl<const N: usize, const LW: usize, const L: usize> Default for Pack<N, LW, L> {
    fn default() -> Self {
        Self {
            lane: array_init::array_init(|_| Default::default()),
            out: Default::default(),
        }
    }
}

impl<const N: usize, const LW: usize, const L: usize> Logic for Pack<N, LW, L> {
    fn update(&mut self) {
        let mut v = Bits::<N>::default();
        for (i, l) in self.lane.iter().enumerate() {
            v.set_bits::<LW>(i * LW, l.val());
        }
        self.out.next = v;
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        assert_eq!(N, L * LW, "Pack<{N}, {LW}, {L}>: N must be L * LW");
        let parts: Vec<String> = (0..L).rev().map(|i| format!("lane${i}")).collect();
        Verilog::Custom(format!("always @(*) out = {{{}}};", parts.join(", ")))
    }
}

/// `{hi, lo}` of two bits.
#[derive(LogicBlock, Default)]
pub struct Pair {
    /// Bit 1.
    pub hi: Signal<In, Bit>,
    /// Bit 0.
    pub lo: Signal<In, Bit>,
    /// `{hi, lo}`.
    pub out: Signal<Out, Bits<2>>,
}

impl Logic for Pair {
    fn update(&mut self) {
        let v = (u64::from(self.hi.val()) << 1) | u64::from(self.lo.val());
        self.out.next = v.into();
    }

    fn connect(&mut self) {
        self.out.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom("always @(*) out = {hi, lo};".into())
    }
}

/// The bytes of `input` in the opposite order: byte `i` (bits `8i+7:8i`)
/// of an `N`-bit value becomes byte `N/8 - 1 - i`. A stream beat holds the
/// wire's bytes first-byte-lowest, while addresses and ports are numbers
/// whose first wire byte is most significant: this turns one into the
/// other. A block of its own for the reason [`Cat`] is: rust-hdl has no
/// concatenation.
#[derive(LogicBlock, Default)]
pub struct Bswap<const N: usize> {
    /// The value.
    pub din: Signal<In, Bits<N>>,
    /// Swap (else `dout` is 0): a simulator skips the swap on the cycles
    /// whose result nothing uses.
    pub en: Signal<In, Bit>,
    /// Its bytes reversed.
    pub dout: Signal<Out, Bits<N>>,
}

impl<const N: usize> Logic for Bswap<N> {
    fn update(&mut self) {
        let mut v = Bits::<N>::default();
        if self.en.val() {
            for i in 0..N / 8 {
                v.set_bits::<8>(N - 8 - 8 * i, self.din.val().get_bits::<8>(8 * i));
            }
        }
        self.dout.next = v;
    }

    fn connect(&mut self) {
        self.dout.connect();
    }

    fn hdl(&self) -> Verilog {
        assert!(
            N.is_multiple_of(8) && N >= 16,
            "Bswap<{N}> swaps whole bytes"
        );
        let parts: Vec<String> = (0..N / 8)
            .map(|i| format!("din[{}:{}]", 8 * i + 7, 8 * i))
            .collect();
        Verilog::Custom(format!(
            "always @(*) begin\n  dout = {N}'b0;\n  if (en) dout = {{{}}};\nend",
            parts.join(", ")
        ))
    }
}

/// Verilog for the `n` big-endian 16-bit words of `sig` (bytes as a beat
/// holds them: first byte in bits 7:0), each widened by `pad` zero bits:
/// the terms of a ones'-complement sum.
pub fn be_words(sig: &str, n: usize, pad: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            format!(
                "{{{pad}'b0, {sig}[{}:{}], {sig}[{}:{}]}}",
                16 * i + 7,
                16 * i,
                16 * i + 15,
                16 * i + 8
            )
        })
        .collect()
}

/// The ones'-complement sum (RFC 1071) of an IPv4 header's ten 16-bit
/// words, carries folded back in, not complemented: a header with a correct
/// checksum sums to `0xffff`, and a header with its checksum field 0 sums
/// to the complement of the checksum it needs. `hdr` holds the header's 20
/// bytes as a beat does (first byte in bits 7:0). Without `en` the sum is
/// 0, and a simulator skips the adders.
#[derive(LogicBlock, Default)]
pub struct Ipv4Sum {
    /// The header's bytes.
    pub hdr: Signal<In, Bits<160>>,
    /// Sum (else `sum` is 0).
    pub en: Signal<In, Bit>,
    /// The folded sum.
    pub sum: Signal<Out, Bits<16>>,
}

impl Logic for Ipv4Sum {
    fn update(&mut self) {
        let h = self.hdr.val();
        let mut s = 0u64;
        if !self.en.val() {
            self.sum.next = Bits::from(0);
            return;
        }
        for i in 0..10 {
            s += (h.get_bits::<8>(16 * i).to_u64() << 8) | h.get_bits::<8>(16 * i + 8).to_u64();
        }
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        self.sum.next = Bits::from(s);
    }

    fn connect(&mut self) {
        self.sum.connect();
    }

    fn hdl(&self) -> Verilog {
        // Ten 16-bit words fit 20 bits; two folds leave at most 16 bits.
        let words = be_words("hdr", 10, 4);
        Verilog::Custom(format!(
            "reg [19:0] s0;\nreg [16:0] s1;\nalways @(*) begin\n  s0 = 20'b0;\n  s1 = 17'b0;\n  sum = 16'b0;\n  if (en) begin\n    s0 = {};\n    s1 = {{1'b0, s0[15:0]}} + {{13'b0, s0[19:16]}};\n    sum = s1[15:0] + {{15'b0, s1[16]}};\n  end\nend",
            words.join(" + ")
        ))
    }
}
