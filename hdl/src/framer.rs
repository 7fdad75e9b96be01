//! The framer: builds the Ethernet II / IPv4 / UDP frame around an
//! engine's payload (docs/wire.md, "Frames the card sends"). Its
//! cycle-accurate specification is `weft_model::framer::FramerModel`, which
//! builds its headers with `weft_model::wire::build_frame`.
//!
//! One metadata word per frame (`h_*`, held from `h_valid` until `h_ready`)
//! says where the frame goes and how long its body is; the body arrives on
//! `s_*` as plain 64-byte beats. With `P` = 42 header bytes (58 with the
//! 16-byte application header) and `B` body bytes, output beat `j` is frame
//! bytes `64j..64j+64`: beat 0 is the header and the first `64 - P` bytes
//! of body beat 0, every later beat the last `P` bytes of the previous body
//! beat (kept in `carry`) and the first `64 - P` of body beat `j`. Because
//! `P < 64` the frame has at most one beat more than the body, so body beat
//! `j` is taken in the same cycle as output beat `j`, and everything is
//! combinational from inputs to outputs: no added latency, one beat per
//! cycle. The IPv4 header checksum is computed here (RFC 791).

use crate::common::{konst, Cat, Widen};
use rust_hdl::prelude::*;
use weft_regs::wire::{HEADERS, MIN_FRAME, PROTO_UDP, TTL};

/// Bytes of the Ethernet, IPv4 and UDP headers the framer writes.
pub const HDR_BYTES: usize = HEADERS;
/// Bytes of the optional application header.
pub const APP_BYTES: usize = 16;
/// Bits of a body beat kept for the next output beat: its last
/// `HDR_BYTES + APP_BYTES` bytes.
const CARRY_BITS: usize = 8 * (HDR_BYTES + APP_BYTES);

/// One piece of the 42 header bytes, in wire order.
#[derive(Copy, Clone, Debug)]
enum Part {
    /// A port of [`FrameHeader`] of this many bytes, most significant byte
    /// first on the wire.
    Field(&'static str, usize),
    /// A constant of this many bytes, big-endian.
    Const(u64, usize),
}

/// The header's layout, the one table both the Rust simulation and the
/// Verilog of [`FrameHeader`] are generated from.
const LAYOUT: [Part; 15] = [
    Part::Field("dmac", 6),
    Part::Field("smac", 6),
    Part::Const(0x0800, 2),
    Part::Const(0x4500, 2),
    Part::Field("total", 2),
    Part::Const(0, 2),
    Part::Const(0x4000, 2),
    Part::Const((TTL as u64) << 8 | PROTO_UDP as u64, 2),
    Part::Field("csum", 2),
    Part::Field("sip", 4),
    Part::Field("dip", 4),
    Part::Field("sport", 2),
    Part::Field("dport", 2),
    Part::Field("ulen", 2),
    Part::Const(0, 2),
];

/// The 42 header bytes of a frame, byte `i` in bits `8i+7:8i` (network
/// order: every field's most significant byte first). A block of its own
/// because rust-hdl has no concatenation; its Rust simulation and its
/// Verilog are both generated from one layout table, and the framer's
/// three-witness test keeps them equal.
///
/// `hdr` is 0 without `en`: the framer needs its header only while it
/// holds a frame's metadata, and a cycle-based simulator, which evaluates
/// every expression on every cycle, then tests one bit instead of
/// assembling 42 bytes (in hardware, an AND a bit).
#[derive(LogicBlock, Default)]
pub struct FrameHeader {
    /// Assemble the header this cycle (`hdr` is 0 otherwise).
    pub en: Signal<In, Bit>,
    /// Destination MAC (first wire byte in bits 47:40).
    pub dmac: Signal<In, Bits<48>>,
    /// Source MAC.
    pub smac: Signal<In, Bits<48>>,
    /// IPv4 total length.
    pub total: Signal<In, Bits<16>>,
    /// IPv4 header checksum.
    pub csum: Signal<In, Bits<16>>,
    /// Source IP (first wire byte in bits 31:24).
    pub sip: Signal<In, Bits<32>>,
    /// Destination IP.
    pub dip: Signal<In, Bits<32>>,
    /// UDP source port.
    pub sport: Signal<In, Bits<16>>,
    /// UDP destination port.
    pub dport: Signal<In, Bits<16>>,
    /// UDP length.
    pub ulen: Signal<In, Bits<16>>,
    /// The header bytes.
    pub hdr: Signal<Out, Bits<336>>,
}

impl FrameHeader {
    fn field(&self, name: &str) -> u64 {
        match name {
            "dmac" => self.dmac.val().to_u64(),
            "smac" => self.smac.val().to_u64(),
            "total" => self.total.val().to_u64(),
            "csum" => self.csum.val().to_u64(),
            "sip" => self.sip.val().to_u64(),
            "dip" => self.dip.val().to_u64(),
            "sport" => self.sport.val().to_u64(),
            "dport" => self.dport.val().to_u64(),
            "ulen" => self.ulen.val().to_u64(),
            _ => unreachable!("no header field {name}"),
        }
    }

    /// The Verilog expression: a concatenation of the header's bytes from
    /// byte 41 (most significant) down to byte 0.
    fn verilog_expr() -> String {
        let mut bytes: Vec<String> = vec![];
        for part in LAYOUT {
            match part {
                Part::Field(name, n) => {
                    for k in 0..n {
                        let lo = 8 * (n - 1 - k);
                        bytes.push(format!("{name}[{}:{lo}]", lo + 7));
                    }
                }
                Part::Const(v, n) => {
                    for k in 0..n {
                        bytes.push(format!("8'h{:02x}", (v >> (8 * (n - 1 - k))) & 0xff));
                    }
                }
            }
        }
        assert_eq!(bytes.len(), HDR_BYTES, "the layout is 42 bytes");
        bytes.reverse();
        format!("{{{}}}", bytes.join(", "))
    }
}

impl Logic for FrameHeader {
    fn update(&mut self) {
        let mut out: Bits<336> = Default::default();
        if !self.en.val() {
            self.hdr.next = out;
            return;
        }
        let mut at = 0;
        for part in LAYOUT {
            let (v, n) = match part {
                Part::Field(name, n) => (self.field(name), n),
                Part::Const(v, n) => (v, n),
            };
            for k in 0..n {
                let b = (v >> (8 * (n - 1 - k))) & 0xff;
                out.set_bits::<8>(8 * (at + k), b.into());
            }
            at += n;
        }
        self.hdr.next = out;
    }

    fn connect(&mut self) {
        self.hdr.connect();
    }

    fn hdl(&self) -> Verilog {
        Verilog::Custom(format!(
            "always @(*) if (en) hdr = {}; else hdr = 336'b0;",
            Self::verilog_expr()
        ))
    }
}

/// The framer (512-bit AXI4-Stream out).
#[derive(LogicBlock)]
pub struct Framer {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The card's MAC (first wire byte in bits 47:40): every frame's source.
    pub card_mac: Signal<In, Bits<48>>,
    /// The card's IPv4 address (first wire byte in bits 31:24).
    pub card_ip: Signal<In, Bits<32>>,
    /// Metadata valid (held, with every `h_*`, until `h_ready`).
    pub h_valid: Signal<In, Bit>,
    /// Metadata taken: the frame's last beat leaves this cycle.
    pub h_ready: Signal<Out, Bit>,
    /// Destination MAC.
    pub h_dmac: Signal<In, Bits<48>>,
    /// Destination IP.
    pub h_dip: Signal<In, Bits<32>>,
    /// UDP source port.
    pub h_sport: Signal<In, Bits<16>>,
    /// UDP destination port.
    pub h_dport: Signal<In, Bits<16>>,
    /// Application header, byte `i` in bits `8i+7:8i`.
    pub h_app: Signal<In, Bits<128>>,
    /// The application header is present.
    pub h_has_app: Signal<In, Bit>,
    /// Body bytes (after the application header; 0: no body).
    pub h_blen: Signal<In, Bits<16>>,
    /// Passed to `m_host`.
    pub h_host: Signal<In, Bit>,
    /// Passed to `m_tag`.
    pub h_tag: Signal<In, Bits<16>>,
    /// Body beat: body byte `64j + i` of beat `j` in bits `8i+7:8i`.
    pub s_tdata: Signal<In, Bits<512>>,
    /// Body beat valid.
    pub s_tvalid: Signal<In, Bit>,
    /// Body beat taken.
    pub s_tready: Signal<Out, Bit>,
    /// Frame beat.
    pub m_tdata: Signal<Out, Bits<512>>,
    /// Frame bytes of the beat.
    pub m_tkeep: Signal<Out, Bits<64>>,
    /// Last beat of the frame.
    pub m_tlast: Signal<Out, Bit>,
    /// Frame beat valid.
    pub m_tvalid: Signal<Out, Bit>,
    /// Frame beat taken.
    pub m_tready: Signal<In, Bit>,
    /// The frame's length in bytes.
    pub m_tuser_size: Signal<Out, Bits<16>>,
    /// `h_host` of the frame.
    pub m_host: Signal<Out, Bit>,
    /// `h_tag` of the frame.
    pub m_tag: Signal<Out, Bits<16>>,
    off: DFF<Bits<16>>,
    carry: DFF<Bits<CARRY_BITS>>,
    header: FrameHeader,
    c_app: Cat<CARRY_BITS, 128, 336>,
    c_o42: Cat<512, 176, 336>,
    c_o58: Cat<512, 48, 464>,
    w_len: Widen<20, 16>,
    w_sip_hi: Widen<20, 16>,
    w_sip_lo: Widen<20, 16>,
    w_dip_hi: Widen<20, 16>,
    w_dip_lo: Widen<20, 16>,
    w_f1_lo: Widen<17, 16>,
    w_f1_hi: Widen<17, 4>,
    w_f2_hi: Widen<16, 1>,
    w_amt: Widen<9, 6>,
    p: Signal<Local, Bits<16>>,
    t: Signal<Local, Bits<16>>,
    l: Signal<Local, Bits<16>>,
    ip_len: Signal<Local, Bits<16>>,
    udp_len: Signal<Local, Bits<16>>,
    sum: Signal<Local, Bits<20>>,
    f1: Signal<Local, Bits<17>>,
    f2: Signal<Local, Bits<16>>,
    rem_l: Signal<Local, Bits<16>>,
    rem_t: Signal<Local, Bits<16>>,
    last: Signal<Local, Bit>,
    body: Signal<Local, Bit>,
    first: Signal<Local, Bit>,
    fire: Signal<Local, Bit>,
    keep_amt: Signal<Local, Bits<6>>,
    data_amt: Signal<Local, Bits<6>>,
    amt9: Signal<Local, Bits<9>>,
    mask: Signal<Local, Bits<512>>,
    lo42: Signal<Local, Bits<336>>,
    lo58: Signal<Local, Bits<CARRY_BITS>>,
    p42: Constant<Bits<16>>,
    p58: Constant<Bits<16>>,
    eth16: Constant<Bits<16>>,
    eth_ip_udp16: Constant<Bits<16>>,
    min16: Constant<Bits<16>>,
    beat16: Constant<Bits<16>>,
    last_max: Constant<Bits<16>>,
    zero16: Constant<Bits<16>>,
    zero6: Constant<Bits<6>>,
    fixed_sum: Constant<Bits<20>>,
    zero20: Constant<Bits<20>>,
    ones64: Constant<Bits<64>>,
    ones512: Constant<Bits<512>>,
    zero512: Constant<Bits<512>>,
}

impl Default for Framer {
    fn default() -> Self {
        Self::new()
    }
}

impl Framer {
    /// Idle, between frames.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            card_mac: Default::default(),
            card_ip: Default::default(),
            h_valid: Default::default(),
            h_ready: Default::default(),
            h_dmac: Default::default(),
            h_dip: Default::default(),
            h_sport: Default::default(),
            h_dport: Default::default(),
            h_app: Default::default(),
            h_has_app: Default::default(),
            h_blen: Default::default(),
            h_host: Default::default(),
            h_tag: Default::default(),
            s_tdata: Default::default(),
            s_tvalid: Default::default(),
            s_tready: Default::default(),
            m_tdata: Default::default(),
            m_tkeep: Default::default(),
            m_tlast: Default::default(),
            m_tvalid: Default::default(),
            m_tready: Default::default(),
            m_tuser_size: Default::default(),
            m_host: Default::default(),
            m_tag: Default::default(),
            off: Default::default(),
            carry: Default::default(),
            header: Default::default(),
            c_app: Default::default(),
            c_o42: Default::default(),
            c_o58: Default::default(),
            w_len: Default::default(),
            w_sip_hi: Default::default(),
            w_sip_lo: Default::default(),
            w_dip_hi: Default::default(),
            w_dip_lo: Default::default(),
            w_f1_lo: Default::default(),
            w_f1_hi: Default::default(),
            w_f2_hi: Default::default(),
            w_amt: Default::default(),
            p: Default::default(),
            t: Default::default(),
            l: Default::default(),
            ip_len: Default::default(),
            udp_len: Default::default(),
            sum: Default::default(),
            f1: Default::default(),
            f2: Default::default(),
            rem_l: Default::default(),
            rem_t: Default::default(),
            last: Default::default(),
            body: Default::default(),
            first: Default::default(),
            fire: Default::default(),
            keep_amt: Default::default(),
            data_amt: Default::default(),
            amt9: Default::default(),
            mask: Default::default(),
            lo42: Default::default(),
            lo58: Default::default(),
            p42: konst(HDR_BYTES as u64),
            p58: konst((HDR_BYTES + APP_BYTES) as u64),
            eth16: konst(14),
            eth_ip_udp16: konst(34),
            min16: konst(MIN_FRAME as u64),
            beat16: konst(64),
            last_max: konst(64),
            zero16: konst(0),
            zero6: konst(0),
            // The IPv4 header's constant words: version/IHL/DSCP 0x4500,
            // flags 0x4000 (DF), TTL and protocol (the ID and checksum
            // fields are 0 in the sum).
            fixed_sum: konst(0x4500 + 0x4000 + ((TTL as u64) << 8 | PROTO_UDP as u64)),
            zero20: konst(0),
            ones64: konst(u64::MAX),
            ones512: Constant::new(!Bits::<512>::default()),
            zero512: Constant::new(Bits::<512>::default()),
        }
    }

    /// A connected framer, ready to simulate or emit.
    pub fn connected() -> Self {
        let mut uut = Self::new();
        uut.connect_all();
        uut
    }
}

impl Logic for Framer {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, off, carry);
        // Lengths: P header bytes, T = P + B frame bytes before padding,
        // L = max(60, T) on the wire.
        self.p.next = self.p42.val();
        if self.h_has_app.val() {
            self.p.next = self.p58.val();
        }
        self.t.next = self.p.val() + self.h_blen.val();
        self.l.next = self.t.val();
        if self.t.val() < self.min16.val() {
            self.l.next = self.min16.val();
        }
        self.ip_len.next = self.t.val() - self.eth16.val();
        self.udp_len.next = self.t.val() - self.eth_ip_udp16.val();
        // RFC 791: the one's-complement sum of the header's words, folded
        // twice (the first fold leaves at most 0x1_0004).
        self.w_len.narrow.next = self.ip_len.val();
        self.w_sip_hi.narrow.next = self.card_ip.val().get_bits::<16>(16);
        self.w_sip_lo.narrow.next = self.card_ip.val().get_bits::<16>(0);
        self.w_dip_hi.narrow.next = self.h_dip.val().get_bits::<16>(16);
        self.w_dip_lo.narrow.next = self.h_dip.val().get_bits::<16>(0);
        // Summed only with metadata, like the header it goes into.
        if self.h_valid.val() {
            self.sum.next = self.fixed_sum.val()
                + self.w_len.wide.val()
                + self.w_sip_hi.wide.val()
                + self.w_sip_lo.wide.val()
                + self.w_dip_hi.wide.val()
                + self.w_dip_lo.wide.val();
        } else {
            self.sum.next = self.zero20.val();
        }
        self.w_f1_lo.narrow.next = self.sum.val().get_bits::<16>(0);
        self.w_f1_hi.narrow.next = self.sum.val().get_bits::<4>(16);
        self.f1.next = self.w_f1_lo.wide.val() + self.w_f1_hi.wide.val();
        self.w_f2_hi.narrow.next = self.f1.val().get_bits::<1>(16);
        self.f2.next = self.f1.val().get_bits::<16>(0) + self.w_f2_hi.wide.val();
        self.header.en.next = self.h_valid.val();
        self.header.dmac.next = self.h_dmac.val();
        self.header.smac.next = self.card_mac.val();
        self.header.total.next = self.ip_len.val();
        self.header.csum.next = !self.f2.val();
        self.header.sip.next = self.card_ip.val();
        self.header.dip.next = self.h_dip.val();
        self.header.sport.next = self.h_sport.val();
        self.header.dport.next = self.h_dport.val();
        self.header.ulen.next = self.udp_len.val();

        // Where in the frame this beat is.
        self.first.next = self.off.q.val() == self.zero16.val();
        self.rem_l.next = self.l.val() - self.off.q.val();
        self.rem_t.next = self.t.val() - self.off.q.val();
        self.last.next = self.rem_l.val() <= self.last_max.val();
        self.body.next = self.off.q.val() < self.h_blen.val();

        // The beat: P bytes (header, or the previous body beat's tail),
        // then the first 64 - P bytes of this body beat.
        self.c_app.hi.next = self.h_app.val();
        self.c_app.lo.next = self.header.hdr.val();
        self.lo42.next = self.carry.q.val().get_bits::<336>(128);
        self.lo58.next = self.carry.q.val();
        if self.first.val() {
            self.lo42.next = self.header.hdr.val();
            self.lo58.next = self.c_app.out.val();
        }
        self.c_o42.hi.next = self.s_tdata.val().get_bits::<176>(0);
        self.c_o42.lo.next = self.lo42.val();
        self.c_o58.hi.next = self.s_tdata.val().get_bits::<48>(0);
        self.c_o58.lo.next = self.lo58.val();
        // Bytes from T on (body bytes past B, padding) are zero: the mask
        // keeps the low (T - off) mod 64 bytes, all 64 when that is 0 or
        // T - off >= 64.
        self.data_amt.next = self.zero6.val() - self.rem_t.val().get_bits::<6>(0);
        if self.rem_t.val() >= self.beat16.val() {
            self.data_amt.next = self.zero6.val();
        }
        self.w_amt.narrow.next = self.data_amt.val();
        self.amt9.next = self.w_amt.wide.val() << 3;
        // Without metadata there is no beat, and the data is 0: a
        // cycle-based simulator then skips the full-width mask.
        // Each assigned once a cycle (if/else, not a default overwritten),
        // so a busy cycle costs one 512-bit result, not a clear and two.
        if self.h_valid.val() {
            self.mask.next = self.ones512.val() >> self.amt9.val();
            if self.h_has_app.val() {
                self.m_tdata.next = self.c_o58.out.val() & self.mask.val();
            } else {
                self.m_tdata.next = self.c_o42.out.val() & self.mask.val();
            }
        } else {
            self.mask.next = self.zero512.val();
            self.m_tdata.next = self.zero512.val();
        }
        self.keep_amt.next = self.zero6.val() - self.rem_l.val().get_bits::<6>(0);
        self.m_tkeep.next = self.ones64.val();
        if self.last.val() {
            self.m_tkeep.next = self.ones64.val() >> self.keep_amt.val();
        }
        self.m_tlast.next = self.last.val();
        self.m_tuser_size.next = self.l.val();
        self.m_host.next = self.h_host.val();
        self.m_tag.next = self.h_tag.val();

        // Handshakes: a beat that needs a body beat waits for it and takes
        // it when the output takes the beat.
        self.m_tvalid.next = self.h_valid.val() & (!self.body.val() | self.s_tvalid.val());
        self.s_tready.next = self.h_valid.val() & self.body.val() & self.m_tready.val();
        self.fire.next = self.m_tvalid.val() & self.m_tready.val();
        self.h_ready.next = self.fire.val() & self.last.val();
        if self.fire.val() {
            self.off.d.next = self.off.q.val() + self.beat16.val();
            if self.last.val() {
                self.off.d.next = self.zero16.val();
            }
            if self.body.val() {
                self.carry.d.next = self.s_tdata.val().get_bits::<CARRY_BITS>(48);
            }
        }
    }
}
