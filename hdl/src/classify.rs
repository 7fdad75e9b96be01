//! [`Classify`]: a frame's first beat classified in a three-stage pipeline,
//! so the deframer after it steers by registered bits instead of a
//! checksum, six compares and the length rules in the cycle it moves the
//! beat (`docs/timing.md`: the first beat's classification was the card's
//! deepest path). The rule is `weft_model::wire::decide`; the pipeline's
//! specification is `weft_model::classify::ClassifyModel`.
//!
//! Stage 1 takes a beat: the IPv4 header's ten words summed in two halves,
//! the addresses, EtherType, version, protocol and fragment fields
//! compared, the engine found by destination port. Stage 2 adds the halves
//! and folds the carries once, and checks the lengths (IPv4 total against
//! the frame's size, the UDP length, the engine's minimum payload). Stage 3
//! folds again, checks the sum, and decides. Every stage moves together
//! (`s_tready` is the output's ready or an empty output): one beat a cycle,
//! three cycles of latency.

use crate::common::{be_words, konst, Bswap};
use rust_hdl::prelude::*;
use weft_regs::wire;

/// A 16-bit value with its two bytes swapped: a port number as it sits in
/// a beat (first wire byte in bits 7:0) compares with a constant swapped
/// once at elaboration, not with the beat's bytes swapped every cycle.
const fn swap16(v: u64) -> u64 {
    ((v & 0xff) << 8) | ((v >> 8) & 0xff)
}

/// The ones'-complement partial sum of five 16-bit header words (bytes as
/// a beat holds them: first byte in bits 7:0), 19 bits, no carries folded.
/// Without `en` the sum is 0.
#[derive(LogicBlock, Default)]
pub struct Ipv4Half {
    /// Five words of the header.
    pub hdr: Signal<In, Bits<80>>,
    /// Sum (else 0).
    pub en: Signal<In, Bit>,
    /// Their sum.
    pub sum: Signal<Out, Bits<19>>,
}

impl Logic for Ipv4Half {
    fn update(&mut self) {
        let h = self.hdr.val();
        let mut s = 0u64;
        if self.en.val() {
            for i in 0..5 {
                s += (h.get_bits::<8>(16 * i).to_u64() << 8) | h.get_bits::<8>(16 * i + 8).to_u64();
            }
        }
        self.sum.next = Bits::from(s);
    }

    fn connect(&mut self) {
        self.sum.connect();
    }

    fn hdl(&self) -> Verilog {
        let words = be_words("hdr", 5, 3);
        Verilog::Custom(format!(
            "always @(*) begin\n  sum = 19'b0;\n  if (en) sum = {};\nend",
            words.join(" + ")
        ))
    }
}

/// Two partial sums added and their carries folded once: 17 bits.
#[derive(LogicBlock, Default)]
pub struct Ipv4Fold {
    /// One half.
    pub a: Signal<In, Bits<19>>,
    /// The other.
    pub b: Signal<In, Bits<19>>,
    /// `(a + b)` mod 2^16 plus its carries.
    pub sum: Signal<Out, Bits<17>>,
}

impl Logic for Ipv4Fold {
    fn update(&mut self) {
        let s = self.a.val().to_u64() + self.b.val().to_u64();
        self.sum.next = Bits::from((s & 0xffff) + (s >> 16));
    }

    fn connect(&mut self) {
        self.sum.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "reg [19:0] s0;\nalways @(*) begin\n  s0 = {1'b0, a} + {1'b0, b};\n  sum = {1'b0, s0[15:0]} + {13'b0, s0[19:16]};\nend"
                .to_string(),
        )
    }
}

/// The last fold and the check: `ok` when the folded sum is `0xffff` (a
/// header whose checksum is right).
#[derive(LogicBlock, Default)]
pub struct Ipv4Check {
    /// A once-folded sum.
    pub s1: Signal<In, Bits<17>>,
    /// The header's checksum is right.
    pub ok: Signal<Out, Bit>,
}

impl Logic for Ipv4Check {
    fn update(&mut self) {
        let s = self.s1.val().to_u64();
        self.ok.next = ((s & 0xffff) + (s >> 16)) == 0xffff;
    }

    fn connect(&mut self) {
        self.ok.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(
            "reg [15:0] s2;\nalways @(*) begin\n  s2 = s1[15:0] + {15'b0, s1[16]};\n  ok = (s2 == 16'hffff);\nend"
                .to_string(),
        )
    }
}

/// The classifier (512-bit AXI4-Stream in, the same beats out three cycles
/// later with the frame's class beside its first beat).
#[derive(LogicBlock)]
pub struct Classify {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Frame data.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Byte enables.
    pub s_tkeep: Signal<In, Bits<64>>,
    /// Last beat.
    pub s_tlast: Signal<In, Bit>,
    /// Valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Frame bytes.
    pub s_tuser_size: Signal<In, Bits<16>>,
    /// Ready: the pipeline moves.
    pub s_tready: Signal<Out, Bit>,
    /// The card's MAC (first wire byte in bits 47:40).
    pub card_mac: Signal<In, Bits<48>>,
    /// The card's IPv4 address (first byte in bits 31:24).
    pub card_ip: Signal<In, Bits<32>>,
    /// Steer frames for the card to its engines (`net.CTRL.ENABLE`).
    pub enable: Signal<In, Bit>,
    /// Output data.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Output byte enables.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Output last beat.
    pub m_tlast: Signal<Out, Bit>,
    /// Output valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Output frame bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// On a frame's first beat: the engine it goes to (1 key-value, 2
    /// gradient, 3 MemOps), 0 to pass it through; 0 on other beats.
    pub m_tcls: Signal<Out, Bits<2>>,
    /// On a frame's first beat: it was for an engine but malformed.
    pub m_tbad: Signal<Out, Bit>,
    /// On an engine frame's first beat: its length without Ethernet
    /// padding (14 + the IPv4 total length); 0 otherwise.
    pub m_teff: Signal<Out, Bits<16>>,
    /// Output ready.
    pub m_tready: Signal<In, Bit>,
    in_pkt: DFF<Bit>,
    // Stage 1.
    v1: DFF<Bit>,
    d1: DFF<Bits<512>>,
    k1: DFF<Bits<64>>,
    l1: DFF<Bit>,
    z1: DFF<Bits<16>>,
    h1: DFF<Bit>,
    e1: DFF<Bits<2>>,
    me1: DFF<Bit>,
    fr1: DFF<Bit>,
    tot1: DFF<Bits<16>>,
    udp1: DFF<Bits<16>>,
    pa1: DFF<Bits<19>>,
    pb1: DFF<Bits<19>>,
    // Stage 2.
    v2: DFF<Bit>,
    d2: DFF<Bits<512>>,
    k2: DFF<Bits<64>>,
    l2: DFF<Bit>,
    z2: DFF<Bits<16>>,
    h2: DFF<Bit>,
    e2: DFF<Bits<2>>,
    me2: DFF<Bit>,
    fr2: DFF<Bit>,
    s12: DFF<Bits<17>>,
    len2: DFF<Bit>,
    eff2: DFF<Bits<16>>,
    // Stage 3: the outputs.
    v3: DFF<Bit>,
    d3: DFF<Bits<512>>,
    k3: DFF<Bits<64>>,
    l3: DFF<Bit>,
    z3: DFF<Bits<16>>,
    cls3: DFF<Bits<2>>,
    bad3: DFF<Bit>,
    eff3: DFF<Bits<16>>,
    adv: Signal<Local, Bit>,
    head: Signal<Local, Bit>,
    eng: Signal<Local, Bits<2>>,
    eff: Signal<Local, Bits<16>>,
    udp_want: Signal<Local, Bits<16>>,
    min_ok: Signal<Local, Bit>,
    hit: Signal<Local, Bit>,
    good: Signal<Local, Bit>,
    pa: Ipv4Half,
    pb: Ipv4Half,
    fold: Ipv4Fold,
    check: Ipv4Check,
    sw_mac: Bswap<48>,
    sw_ip: Bswap<32>,
    sw_total: Bswap<16>,
    sw_udp: Bswap<16>,
    zero2: Constant<Bits<2>>,
    zero16: Constant<Bits<16>>,
    d_kv: Constant<Bits<2>>,
    d_grad: Constant<Bits<2>>,
    d_memops: Constant<Bits<2>>,
    kv_port: Constant<Bits<16>>,
    grad_port: Constant<Bits<16>>,
    memops_port: Constant<Bits<16>>,
    headers: Constant<Bits<16>>,
    eth16: Constant<Bits<16>>,
    ip16: Constant<Bits<16>>,
    min_total: Constant<Bits<16>>,
    max_total: Constant<Bits<16>>,
    min_frame: Constant<Bits<16>>,
    min_engine_total: Constant<Bits<16>>,
    min_memops_total: Constant<Bits<16>>,
    broadcast: Constant<Bits<48>>,
    b_08: Constant<Bits<8>>,
    b_00: Constant<Bits<8>>,
    b_45: Constant<Bits<8>>,
    b_17: Constant<Bits<8>>,
    b_3f: Constant<Bits<8>>,
}

impl Default for Classify {
    fn default() -> Self {
        Self::new()
    }
}

impl Classify {
    /// Empty.
    pub fn new() -> Self {
        let min_total = (wire::IPV4_BYTES + wire::UDP_BYTES) as u64;
        Self {
            clock: Default::default(),
            s_tdata: Default::default(),
            s_tkeep: Default::default(),
            s_tlast: Default::default(),
            s_tvalid: Default::default(),
            s_tuser_size: Default::default(),
            s_tready: Default::default(),
            card_mac: Default::default(),
            card_ip: Default::default(),
            enable: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tuser_size: Default::default(),
            m_tcls: Default::default(),
            m_tbad: Default::default(),
            m_teff: Default::default(),
            m_tready: Default::default(),
            in_pkt: Default::default(),
            v1: Default::default(),
            d1: Default::default(),
            k1: Default::default(),
            l1: Default::default(),
            z1: Default::default(),
            h1: Default::default(),
            e1: Default::default(),
            me1: Default::default(),
            fr1: Default::default(),
            tot1: Default::default(),
            udp1: Default::default(),
            pa1: Default::default(),
            pb1: Default::default(),
            v2: Default::default(),
            d2: Default::default(),
            k2: Default::default(),
            l2: Default::default(),
            z2: Default::default(),
            h2: Default::default(),
            e2: Default::default(),
            me2: Default::default(),
            fr2: Default::default(),
            s12: Default::default(),
            len2: Default::default(),
            eff2: Default::default(),
            v3: Default::default(),
            d3: Default::default(),
            k3: Default::default(),
            l3: Default::default(),
            z3: Default::default(),
            cls3: Default::default(),
            bad3: Default::default(),
            eff3: Default::default(),
            adv: Default::default(),
            head: Default::default(),
            eng: Default::default(),
            eff: Default::default(),
            udp_want: Default::default(),
            min_ok: Default::default(),
            hit: Default::default(),
            good: Default::default(),
            pa: Default::default(),
            pb: Default::default(),
            fold: Default::default(),
            check: Default::default(),
            sw_mac: Default::default(),
            sw_ip: Default::default(),
            sw_total: Default::default(),
            sw_udp: Default::default(),
            zero2: konst(0),
            zero16: konst(0),
            d_kv: konst(1),
            d_grad: konst(2),
            d_memops: konst(3),
            kv_port: konst(swap16(wire::KV_PORT as u64)),
            grad_port: konst(swap16(wire::GRAD_PORT as u64)),
            memops_port: konst(swap16(wire::MEMOPS_PORT as u64)),
            headers: konst(wire::HEADERS as u64),
            eth16: konst(wire::ETH_BYTES as u64),
            ip16: konst(wire::IPV4_BYTES as u64),
            min_total: konst(min_total),
            max_total: konst((wire::MAX_FRAME - wire::ETH_BYTES) as u64),
            min_frame: konst(wire::MIN_FRAME as u64),
            min_engine_total: konst(min_total + wire::MIN_ENGINE_PAYLOAD as u64),
            min_memops_total: konst(min_total + wire::MIN_MEMOPS_PAYLOAD as u64),
            broadcast: konst(0xffff_ffff_ffff),
            b_08: konst(0x08),
            b_00: konst(0x00),
            b_45: konst(0x45),
            b_17: konst(wire::PROTO_UDP as u64),
            b_3f: konst(0x3f),
        }
    }
}

impl Logic for Classify {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, in_pkt, v1, d1, k1, l1, z1, h1, e1, me1, fr1, tot1, udp1, pa1, pb1, v2,
            d2, k2, l2, z2, h2, e2, me2, fr2, s12, len2, eff2, v3, d3, k3, l3, z3, cls3, bad3,
            eff3
        );
        self.adv.next = !self.v3.q.val() | self.m_tready.val();
        self.s_tready.next = self.adv.val();
        self.m_tdata.next = self.d3.q.val();
        self.m_tkeep.next = self.k3.q.val();
        self.m_tlast.next = self.l3.q.val();
        self.m_tvalid.next = self.v3.q.val();
        self.m_tuser_size.next = self.z3.q.val();
        self.m_tcls.next = self.cls3.q.val();
        self.m_tbad.next = self.bad3.q.val();
        self.m_teff.next = self.eff3.q.val();

        // ---- Stage 1: from the input beat.
        self.head.next = self.s_tvalid.val() & !self.in_pkt.q.val();
        self.sw_mac.en.next = true;
        self.sw_ip.en.next = true;
        self.sw_total.en.next = true;
        self.sw_udp.en.next = true;
        self.sw_mac.din.next = self.card_mac.val();
        self.sw_ip.din.next = self.card_ip.val();
        self.sw_total.din.next = self.s_tdata.val().get_bits::<16>(128);
        self.sw_udp.din.next = self.s_tdata.val().get_bits::<16>(304);
        self.pa.en.next = self.head.val();
        self.pb.en.next = self.head.val();
        self.pa.hdr.next = self.s_tdata.val().get_bits::<80>(112);
        self.pb.hdr.next = self.s_tdata.val().get_bits::<80>(192);
        self.eng.next = self.zero2.val();
        if self.s_tdata.val().get_bits::<16>(288) == self.kv_port.val() {
            self.eng.next = self.d_kv.val();
        }
        if self.s_tdata.val().get_bits::<16>(288) == self.grad_port.val() {
            self.eng.next = self.d_grad.val();
        }
        if self.s_tdata.val().get_bits::<16>(288) == self.memops_port.val() {
            self.eng.next = self.d_memops.val();
        }

        // ---- Stage 2: the halves added and folded once; the lengths.
        self.fold.a.next = self.pa1.q.val();
        self.fold.b.next = self.pb1.q.val();
        self.eff.next = self.tot1.q.val() + self.eth16.val();
        self.udp_want.next = self.udp1.q.val() + self.ip16.val();
        self.min_ok.next = self.tot1.q.val() >= self.min_engine_total.val();
        if self.e1.q.val() == self.d_memops.val() {
            self.min_ok.next = self.tot1.q.val() >= self.min_memops_total.val();
        }

        // ---- Stage 3: the last fold and the decision.
        self.check.s1.next = self.s12.q.val();
        self.hit.next = self.h2.q.val() & self.me2.q.val() & (self.e2.q.val() != self.zero2.val());
        self.good.next = self.fr2.q.val() & self.check.ok.val() & self.len2.q.val();

        if self.adv.val() {
            if self.s_tvalid.val() {
                self.in_pkt.d.next = !self.s_tlast.val();
            }
            self.v1.d.next = self.s_tvalid.val();
            self.d1.d.next = self.s_tdata.val();
            self.k1.d.next = self.s_tkeep.val();
            self.l1.d.next = self.s_tlast.val();
            self.z1.d.next = self.s_tuser_size.val();
            self.h1.d.next = self.head.val();
            self.pa1.d.next = self.pa.sum.val();
            self.pb1.d.next = self.pb.sum.val();
            self.e1.d.next = self.zero2.val();
            self.me1.d.next = false;
            self.fr1.d.next = false;
            self.tot1.d.next = self.zero16.val();
            self.udp1.d.next = self.zero16.val();
            if self.head.val() {
                self.e1.d.next = self.eng.val();
                self.me1.d.next = self.enable.val()
                    & (self.s_tuser_size.val() >= self.headers.val())
                    & ((self.s_tdata.val().get_bits::<48>(0) == self.sw_mac.dout.val())
                        | (self.s_tdata.val().get_bits::<48>(0) == self.broadcast.val()))
                    & (self.s_tdata.val().get_bits::<8>(96) == self.b_08.val())
                    & (self.s_tdata.val().get_bits::<8>(104) == self.b_00.val())
                    & (self.s_tdata.val().get_bits::<32>(240) == self.sw_ip.dout.val())
                    & (self.s_tdata.val().get_bits::<8>(112) == self.b_45.val())
                    & (self.s_tdata.val().get_bits::<8>(184) == self.b_17.val());
                // No fragments: flags (but DF) and offset all zero.
                self.fr1.d.next = ((self.s_tdata.val().get_bits::<8>(160) & self.b_3f.val())
                    == self.b_00.val())
                    & (self.s_tdata.val().get_bits::<8>(168) == self.b_00.val());
                self.tot1.d.next = self.sw_total.dout.val();
                self.udp1.d.next = self.sw_udp.dout.val();
            }

            self.v2.d.next = self.v1.q.val();
            self.d2.d.next = self.d1.q.val();
            self.k2.d.next = self.k1.q.val();
            self.l2.d.next = self.l1.q.val();
            self.z2.d.next = self.z1.q.val();
            self.h2.d.next = self.h1.q.val();
            self.e2.d.next = self.e1.q.val();
            self.me2.d.next = self.me1.q.val();
            self.fr2.d.next = self.fr1.q.val();
            self.s12.d.next = self.fold.sum.val();
            self.eff2.d.next = self.eff.val();
            // Lengths that agree with the frame (or a minimum frame padded
            // to 60 bytes), a UDP length that agrees, a long enough payload.
            self.len2.d.next = (self.tot1.q.val() >= self.min_total.val())
                & (self.tot1.q.val() <= self.max_total.val())
                & ((self.eff.val() == self.z1.q.val())
                    | ((self.eff.val() < self.min_frame.val())
                        & (self.z1.q.val() == self.min_frame.val())))
                & (self.udp_want.val() == self.tot1.q.val())
                & self.min_ok.val();

            self.v3.d.next = self.v2.q.val();
            self.d3.d.next = self.d2.q.val();
            self.k3.d.next = self.k2.q.val();
            self.l3.d.next = self.l2.q.val();
            self.z3.d.next = self.z2.q.val();
            self.cls3.d.next = self.zero2.val();
            self.bad3.d.next = false;
            self.eff3.d.next = self.zero16.val();
            if self.hit.val() {
                if self.good.val() {
                    self.cls3.d.next = self.e2.q.val();
                    self.eff3.d.next = self.eff2.q.val();
                } else {
                    self.bad3.d.next = true;
                }
            }
        }
    }
}
