//! The card on the wire (`docs/wire.md`), in plain Rust: the frames it
//! builds ([`build_frame`]), how it classifies the frames it receives
//! ([`classify`]), and the register encodings of its addresses. The
//! constants are `weft_regs::wire`'s, which the RTL reads too.

use std::net::Ipv4Addr;
pub use weft_regs::wire::*;

/// A MAC address, first byte on the wire first.
pub type Mac = [u8; 6];

/// The broadcast MAC.
pub const BROADCAST: Mac = [0xff; 6];

/// One end of a UDP flow: MAC, IPv4 address and UDP port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    /// MAC address.
    pub mac: Mac,
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// UDP port.
    pub port: u16,
}

impl Default for Endpoint {
    fn default() -> Self {
        Self {
            mac: [0; 6],
            ip: Ipv4Addr::UNSPECIFIED,
            port: 0,
        }
    }
}

/// Which of the card's two frame ports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The network (CMAC): `s_axis_adap_rx` in, `m_axis_adap_tx` out.
    Wire,
    /// The host (QDMA): `s_axis_qdma_h2c` in, `m_axis_qdma_c2h` out.
    Host,
}

/// Where a reply goes: the request's source and the port it came in on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ret {
    /// The requester.
    pub to: Endpoint,
    /// The port the request arrived on (and the reply leaves on).
    pub side: Side,
}

impl Default for Ret {
    fn default() -> Self {
        Self {
            to: Endpoint::default(),
            side: Side::Wire,
        }
    }
}

/// A MAC as the 48-bit number the RTL carries (first byte in bits 47:40).
pub fn mac_bits(m: &Mac) -> u64 {
    m.iter().fold(0u64, |a, &b| a << 8 | b as u64)
}

/// The MAC of a 48-bit number (inverse of [`mac_bits`]).
pub fn mac_of(v: u64) -> Mac {
    std::array::from_fn(|i| (v >> (40 - 8 * i)) as u8)
}

/// The `(HI, LO)` register values of a MAC (`net.MAC_HI`, `net.MAC_LO` and
/// the other MAC pairs).
pub fn mac_regs(m: &Mac) -> (u32, u32) {
    let v = mac_bits(m);
    ((v >> 32) as u32, v as u32)
}

impl Ret {
    /// The sideband words: MAC in bits 47:0, IP in 79:48, port in 95:80,
    /// bit 96 set for the host port.
    pub fn words(&self) -> [u32; 4] {
        let mac = mac_bits(&self.to.mac);
        let ip = u32::from(self.to.ip);
        [
            mac as u32,
            (mac >> 32) as u32 | (ip << 16),
            ip >> 16 | (self.to.port as u32) << 16,
            (self.side == Side::Host) as u32,
        ]
    }

    /// From the sideband words (inverse of [`Ret::words`]).
    pub fn from_words(w: [u32; 4]) -> Self {
        let mac = w[0] as u64 | ((w[1] & 0xffff) as u64) << 32;
        let ip = w[1] >> 16 | (w[2] & 0xffff) << 16;
        Self {
            to: Endpoint {
                mac: mac_of(mac),
                ip: Ipv4Addr::from(ip),
                port: (w[2] >> 16) as u16,
            },
            side: if w[3] & 1 != 0 {
                Side::Host
            } else {
                Side::Wire
            },
        }
    }
}

/// The RFC 791 checksum of an IPv4 header (`hdr` with its checksum field
/// as it is; a correct header sums to 0 and this returns 0).
pub fn ipv4_checksum(hdr: &[u8]) -> u16 {
    let mut s: u32 = hdr
        .chunks(2)
        .map(|c| (c[0] as u32) << 8 | *c.get(1).unwrap_or(&0) as u32)
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    !(s as u16)
}

/// The frame the card builds to send `payload` from `src` to `dst`:
/// Ethernet II, IPv4 (no options, ID 0, DF, TTL 64, correct checksum), UDP
/// (checksum 0), padded with zeros to [`MIN_FRAME`] bytes.
pub fn build_frame(src: &Endpoint, dst: &Endpoint, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(HEADERS + payload.len());
    f.extend_from_slice(&dst.mac);
    f.extend_from_slice(&src.mac);
    f.extend_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let total = (IPV4_BYTES + UDP_BYTES + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, TTL, PROTO_UDP, 0, 0]);
    f.extend_from_slice(&src.ip.octets());
    f.extend_from_slice(&dst.ip.octets());
    let csum = ipv4_checksum(&f[ETH_BYTES..ETH_BYTES + IPV4_BYTES]);
    f[24..26].copy_from_slice(&csum.to_be_bytes());
    f.extend_from_slice(&src.port.to_be_bytes());
    f.extend_from_slice(&dst.port.to_be_bytes());
    f.extend_from_slice(&((UDP_BYTES + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    if f.len() < MIN_FRAME {
        f.resize(MIN_FRAME, 0);
    }
    f
}

/// Which engine a frame is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Engine {
    /// Key-value aggregation (UDP port [`KV_PORT`]).
    Kv = 1,
    /// Gradient aggregation (UDP port [`GRAD_PORT`]).
    Grad = 2,
    /// MemOps (UDP port [`MEMOPS_PORT`]).
    Memops = 3,
}

impl Engine {
    /// The engine behind a UDP destination port.
    pub fn of_port(port: u16) -> Option<Engine> {
        match port {
            KV_PORT => Some(Engine::Kv),
            GRAD_PORT => Some(Engine::Grad),
            MEMOPS_PORT => Some(Engine::Memops),
            _ => None,
        }
    }

    /// The engine's UDP port.
    pub fn port(self) -> u16 {
        match self {
            Engine::Kv => KV_PORT,
            Engine::Grad => GRAD_PORT,
            Engine::Memops => MEMOPS_PORT,
        }
    }

    /// Shortest payload the card steers to the engine.
    pub fn min_payload(self) -> usize {
        match self {
            Engine::Memops => MIN_MEMOPS_PAYLOAD,
            _ => MIN_ENGINE_PAYLOAD,
        }
    }
}

/// Why a frame for an engine was not steered to it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Malformed {
    /// A fragment (MF set or a fragment offset).
    Fragment,
    /// The IPv4 header checksum is wrong.
    Checksum,
    /// The IPv4 total length disagrees with the frame's size.
    IpLength,
    /// The UDP length disagrees with the IPv4 total length.
    UdpLength,
    /// The UDP payload is shorter than the engine's header.
    Short,
}

/// What the card does with a received frame (after the frame check).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Class {
    /// Passed through unchanged to the other side.
    Pass,
    /// For an engine, but malformed: passed through unchanged and counted.
    Malformed(Engine, Malformed),
    /// Steered to `engine`: its UDP payload and where replies go.
    Engine {
        /// The engine.
        engine: Engine,
        /// The UDP payload.
        payload: Vec<u8>,
        /// The source's address.
        from: Endpoint,
    },
}

/// The card's own addresses and whether its engines are on the wire.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Card {
    /// The card's MAC and IP (`port` unused).
    pub me: Endpoint,
    /// `net.CTRL.ENABLE`.
    pub enable: bool,
}

/// Whether a frame of `size` bytes passes the frame check (size in range
/// and in agreement with `beats`).
pub fn frame_ok(size: usize, beats: usize) -> bool {
    (1..=MAX_FRAME).contains(&size) && beats == size.div_ceil(64)
}

/// What the card decides from a frame's first bytes and its size.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Passed through unchanged to the other side.
    Pass,
    /// For an engine, but malformed: passed through unchanged and counted.
    Malformed(Engine, Malformed),
    /// Steered to `engine`.
    Engine {
        /// The engine.
        engine: Engine,
        /// The frame's length without Ethernet padding (`14 + IPv4 total
        /// length`): the engine gets bytes `HEADERS..eff`.
        eff: usize,
        /// The source's address.
        from: Endpoint,
    },
}

/// How the card decides what to do with a frame of `size` bytes that passed
/// the frame check, from its first bytes `head` (at least the first
/// [`HEADERS`] bytes when `size >= HEADERS`; the RTL sees the first beat).
/// This is the rule `weft_hdl::steer::Deframe` implements.
pub fn decide(head: &[u8], size: usize, card: &Card) -> Decision {
    if !card.enable || size < HEADERS || head.len() < HEADERS {
        return Decision::Pass;
    }
    let f = head;
    let be16 = |i: usize| u16::from_be_bytes([f[i], f[i + 1]]);
    let dst_mac: Mac = f[0..6].try_into().expect("6 bytes");
    let for_me = (dst_mac == card.me.mac || dst_mac == BROADCAST)
        && be16(12) == ETHERTYPE_IPV4
        && f[30..34] == card.me.ip.octets()
        && f[14] == 0x45
        && f[23] == PROTO_UDP;
    let Some(engine) = Engine::of_port(be16(36)).filter(|_| for_me) else {
        return Decision::Pass;
    };
    let bad = |m| Decision::Malformed(engine, m);
    if f[20] & 0x3f != 0 || f[21] != 0 {
        return bad(Malformed::Fragment);
    }
    if ipv4_checksum(&f[ETH_BYTES..ETH_BYTES + IPV4_BYTES]) != 0 {
        return bad(Malformed::Checksum);
    }
    let total = be16(16) as usize;
    let eff = ETH_BYTES + total;
    if !(eff == size || (eff < MIN_FRAME && size == MIN_FRAME))
        || !(IPV4_BYTES + UDP_BYTES..=MAX_FRAME - ETH_BYTES).contains(&total)
    {
        return bad(Malformed::IpLength);
    }
    if be16(38) as usize != total - IPV4_BYTES {
        return bad(Malformed::UdpLength);
    }
    if total - IPV4_BYTES - UDP_BYTES < engine.min_payload() {
        return bad(Malformed::Short);
    }
    Decision::Engine {
        engine,
        eff,
        from: Endpoint {
            mac: f[6..12].try_into().expect("6 bytes"),
            ip: Ipv4Addr::new(f[26], f[27], f[28], f[29]),
            port: be16(34),
        },
    }
}

/// How the card classifies a received frame that passed the frame check.
pub fn classify(f: &[u8], card: &Card) -> Class {
    match decide(&f[..f.len().min(64)], f.len(), card) {
        Decision::Pass => Class::Pass,
        Decision::Malformed(e, m) => Class::Malformed(e, m),
        Decision::Engine { engine, eff, from } => Class::Engine {
            engine,
            payload: f[HEADERS..eff].to_vec(),
            from,
        },
    }
}

/// A frame the card sent, parsed back: the check `sim/tests/top.rs` applies
/// besides `etherparse`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// Source.
    pub src: Endpoint,
    /// Destination.
    pub dst: Endpoint,
    /// UDP payload.
    pub payload: Vec<u8>,
}

/// Parse a frame as [`build_frame`] builds it; `None` unless it is exactly
/// such a frame (header values, checksum, lengths, padding).
pub fn parse_built(f: &[u8]) -> Option<Parsed> {
    if f.len() < MIN_FRAME || f.len() < HEADERS {
        return None;
    }
    let be16 = |i: usize| u16::from_be_bytes([f[i], f[i + 1]]);
    let total = be16(16) as usize;
    let src = Endpoint {
        mac: f[6..12].try_into().ok()?,
        ip: Ipv4Addr::new(f[26], f[27], f[28], f[29]),
        port: be16(34),
    };
    let dst = Endpoint {
        mac: f[0..6].try_into().ok()?,
        ip: Ipv4Addr::new(f[30], f[31], f[32], f[33]),
        port: be16(36),
    };
    let payload = f.get(HEADERS..ETH_BYTES + total)?.to_vec();
    (build_frame(&src, &dst, &payload) == f).then_some(Parsed { src, dst, payload })
}

/// The payload of a MemOps request frame (docs/wire.md): 24 bytes.
pub fn memops_request(r: &crate::memops::Request) -> Vec<u8> {
    let mut p = vec![0u8; MIN_MEMOPS_PAYLOAD];
    p[0] = r.src;
    p[1] = r.op as u8;
    p[2] = r.len;
    p[3] = r.tag;
    p[8..16].copy_from_slice(&r.addr.to_le_bytes());
    p[16..24].copy_from_slice(&r.data.to_le_bytes());
    p
}

/// The payload of a MemOps completion frame (docs/wire.md): 16 bytes.
pub fn memops_completion(c: &crate::memops::Completion) -> Vec<u8> {
    let mut p = vec![0u8; 16];
    p[0] = c.dst;
    p[1] = c.tag;
    p[2] = c.status as u8;
    p[8..16].copy_from_slice(&c.data.to_le_bytes());
    p
}

/// A MemOps completion from its payload, if it is one (16 bytes or more,
/// a known status).
pub fn parse_memops_completion(p: &[u8]) -> Option<crate::memops::Completion> {
    let p = p.get(..16)?;
    Some(crate::memops::Completion {
        dst: p[0],
        tag: p[1],
        status: crate::memops::Status::from_code(p[2])?,
        data: u64::from_le_bytes(p[8..16].try_into().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card() -> Card {
        Card {
            me: Endpoint {
                mac: [2, 0x57, 0x46, 0, 0, 1],
                ip: Ipv4Addr::new(10, 0, 0, 2),
                port: 0,
            },
            enable: true,
        }
    }

    fn peer() -> Endpoint {
        Endpoint {
            mac: [2, 0, 0, 0, 0, 9],
            ip: Ipv4Addr::new(10, 0, 0, 9),
            port: 40000,
        }
    }

    fn to_card(engine: Engine, payload: &[u8]) -> Vec<u8> {
        let mut me = card().me;
        me.port = engine.port();
        build_frame(&peer(), &me, payload)
    }

    #[test]
    fn built_frames_parse_back_and_classify_to_their_engine() {
        for (e, n) in [(Engine::Kv, 16), (Engine::Grad, 320), (Engine::Memops, 24)] {
            let p: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let f = to_card(e, &p);
            assert_eq!(parse_built(&f).unwrap().payload, p);
            assert_eq!(
                classify(&f, &card()),
                Class::Engine {
                    engine: e,
                    payload: p,
                    from: peer()
                }
            );
        }
    }

    #[test]
    fn short_frames_are_padded_and_still_classify() {
        let f = to_card(Engine::Kv, &[7; 16]);
        assert_eq!(f.len(), MIN_FRAME);
        assert!(matches!(classify(&f, &card()), Class::Engine { .. }));
    }

    #[test]
    fn every_header_rule_is_applied() {
        let good = to_card(Engine::Kv, &[1; 40]);
        let mut frag = good.clone();
        frag[20] |= 0x20;
        assert_eq!(
            classify(&frag, &card()),
            Class::Malformed(Engine::Kv, Malformed::Fragment)
        );
        let mut csum = good.clone();
        csum[26] ^= 1;
        assert_eq!(
            classify(&csum, &card()),
            Class::Malformed(Engine::Kv, Malformed::Checksum)
        );
        let mut long = good.clone();
        long.push(0);
        assert_eq!(
            classify(&long, &card()),
            Class::Malformed(Engine::Kv, Malformed::IpLength)
        );
        let mut udp = good.clone();
        udp[39] ^= 1;
        assert_eq!(
            classify(&udp, &card()),
            Class::Malformed(Engine::Kv, Malformed::UdpLength)
        );
        let short = to_card(Engine::Memops, &[0; 20]);
        assert_eq!(
            classify(&short, &card()),
            Class::Malformed(Engine::Memops, Malformed::Short)
        );
        let mut other_ip = good.clone();
        other_ip[33] ^= 1;
        assert_eq!(classify(&other_ip, &card()), Class::Pass);
        let mut off = card();
        off.enable = false;
        assert_eq!(classify(&good, &off), Class::Pass);
    }

    #[test]
    fn ret_words_round_trip() {
        let r = Ret {
            to: peer(),
            side: Side::Host,
        };
        assert_eq!(Ret::from_words(r.words()), r);
        assert_eq!(mac_of(mac_bits(&peer().mac)), peer().mac);
        assert_eq!(mac_regs(&[2, 0x57, 0x46, 0, 0, 1]), (0x0257, 0x4600_0001));
    }

    #[test]
    fn a_frame_with_a_wrong_field_does_not_parse_as_built() {
        let mut f = to_card(Engine::Grad, &[3; 320]);
        assert!(parse_built(&f).is_some());
        f[22] = 63;
        assert!(parse_built(&f).is_none());
    }
}
