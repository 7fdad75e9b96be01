//! The framer, cycle by cycle: the specification of `weft_hdl::framer`. It
//! builds the Ethernet II / IPv4 / UDP frame the card sends around an
//! engine's payload (docs/wire.md, "Frames the card sends"); its headers are
//! [`build_frame`]'s, byte for byte.
//!
//! # Ports
//! - Config: `card_mac` (first wire byte in bits 47:40) and `card_ip`
//!   (first wire byte in bits 31:24), every frame's source.
//! - Metadata, one per frame, valid/ready (`h_valid`, `h_ready`); the
//!   producer holds every `h_*` from `h_valid` until `h_ready`:
//!   destination `h_dmac`, `h_dip`, UDP ports `h_sport`, `h_dport`, an
//!   optional 16-byte application header `h_app` (byte `i` in bits
//!   `8i+7:8i`) placed right after the UDP header when `h_has_app`,
//!   `h_blen` body bytes after it, and `h_host`, `h_tag`, passed to
//!   `m_host`, `m_tag`.
//! - Body, valid/ready (`s_tvalid`, `s_tready`): exactly `M = ceil(B / 64)`
//!   beats per frame, body byte `64j + i` in byte `i` of beat `j`; bytes
//!   past `B` in the last beat are ignored. The body stream has no framing
//!   of its own: the framer takes a frame's `M` beats and no more.
//! - Frame out (`m_*`), valid/ready, with `m_tuser_size` the frame's
//!   length.
//!
//! # Behaviour
//! With `P = 42 + 16 * h_has_app`, `B = h_blen`, `T = P + B` and
//! `L = max(60, T)` (all 16-bit, wrapping): the frame is the `P` header
//! bytes of `build_frame(card, dst, app ++ body)` followed by the `B` body
//! bytes, zero-padded to `L` bytes (the padding is not in the IP or UDP
//! lengths). It leaves as `N = ceil(L / 64)` beats, beat `j` carrying frame
//! bytes `64j..64j+64`, `m_tkeep` covering the bytes below `L`, every byte
//! from `T` on zero (body garbage included), `m_tlast` on beat `N - 1`.
//!
//! Cycle by cycle, with `off = 64j` the offset of the beat the framer is
//! at (0 between frames):
//! - beat `j` needs body beat `j` when `off < B` (`j < M`); then
//!   `m_tvalid = h_valid && s_tvalid` and `s_tready = h_valid && m_tready`:
//!   the body beat is taken in the cycle the output beat is. Otherwise
//!   (`j >= M`, which happens at most for the last beat, since `P < 64`)
//!   `m_tvalid = h_valid` and `s_tready = 0`.
//! - `h_ready = m_tvalid && m_tready && m_tlast`: the metadata is taken
//!   with the frame's last beat.
//! - Everything is combinational from the inputs and two registers: `off`
//!   and the last 58 bytes of the previous body beat (the tail output beat
//!   `j` carries in its first `P` bytes). So beat 0 is presented in the
//!   first cycle `h_valid` holds (and `s_tvalid`, when `B > 0`), there is
//!   no added latency, and one beat leaves per cycle sustained, across
//!   frames too.
//! - The outputs are computed from the inputs whether or not they are
//!   valid, exactly as the RTL does, except that `m_tdata` is 0 while
//!   `h_valid` is low (no metadata, no beat): the data mask keeps `(T - off) mod 64` bytes (all 64 when that is 0 or
//!   `T - off >= 64`), `m_tkeep` on the last beat the low `(L - off) mod 64`
//!   bytes (all 64 for 0).

use crate::dut::Dut;
use crate::steer::{from_bytes, keep_mask};
use crate::wire::{build_frame, mac_of, Endpoint, HEADERS};
use std::net::Ipv4Addr;

/// Bytes of the optional application header.
pub const APP_BYTES: usize = 16;
/// Bytes of a body beat kept for the next output beat.
pub const CARRY: usize = HEADERS + APP_BYTES;

crate::ports! {
    /// Inputs of the framer.
    pub struct FramerIn {
        /// The card's MAC (first wire byte in bits 47:40).
        pub card_mac: u64 = 48,
        /// The card's IP (first wire byte in bits 31:24).
        pub card_ip: u32 = 32,
        /// Metadata valid.
        pub h_valid: bool = 1,
        /// Destination MAC.
        pub h_dmac: u64 = 48,
        /// Destination IP.
        pub h_dip: u32 = 32,
        /// UDP source port.
        pub h_sport: u16 = 16,
        /// UDP destination port.
        pub h_dport: u16 = 16,
        /// Application header, byte `i` in bits `8i+7:8i`.
        pub h_app: [u32; 4] = 128,
        /// The application header is present.
        pub h_has_app: bool = 1,
        /// Body bytes.
        pub h_blen: u16 = 16,
        /// Passed to `m_host`.
        pub h_host: bool = 1,
        /// Passed to `m_tag`.
        pub h_tag: u16 = 16,
        /// Body beat.
        pub s_tdata: [u32; 16] = 512,
        /// Body beat valid.
        pub s_tvalid: bool = 1,
        /// Frame beat taken.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the framer.
    pub struct FramerOut {
        /// Metadata taken (with the frame's last beat).
        pub h_ready: bool = 1,
        /// Body beat taken.
        pub s_tready: bool = 1,
        /// Frame beat.
        pub m_tdata: [u32; 16] = 512,
        /// Frame bytes of the beat.
        pub m_tkeep: u64 = 64,
        /// Last beat.
        pub m_tlast: bool = 1,
        /// Frame beat valid.
        pub m_tvalid: bool = 1,
        /// Frame length in bytes.
        pub m_tuser_size: u16 = 16,
        /// `h_host`.
        pub m_host: bool = 1,
        /// `h_tag`.
        pub m_tag: u16 = 16,
    }
}

/// One frame's metadata, as a producer presents it on `h_*`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Meta {
    /// The card's MAC and IP (the source) and the UDP source port.
    pub src: Endpoint,
    /// Destination MAC, IP and UDP port.
    pub dst: Endpoint,
    /// The application header, if any.
    pub app: Option<[u8; APP_BYTES]>,
    /// Body bytes.
    pub blen: u16,
    /// `h_host`.
    pub host: bool,
    /// `h_tag`.
    pub tag: u16,
}

fn le_bytes<const N: usize>(w: &[u32]) -> [u8; N] {
    std::array::from_fn(|i| (w[i / 4] >> (8 * (i % 4))) as u8)
}

impl Meta {
    /// The metadata on the ports (`h_valid` false, `s_*` and `m_tready`
    /// zero: the caller sets them).
    pub fn drive(&self, i: &mut FramerIn) {
        i.card_mac = crate::wire::mac_bits(&self.src.mac);
        i.card_ip = u32::from(self.src.ip);
        i.h_dmac = crate::wire::mac_bits(&self.dst.mac);
        i.h_dip = u32::from(self.dst.ip);
        i.h_sport = self.src.port;
        i.h_dport = self.dst.port;
        let app = self.app.unwrap_or_default();
        i.h_app =
            std::array::from_fn(|k| u32::from_le_bytes(app[4 * k..4 * k + 4].try_into().unwrap()));
        i.h_has_app = self.app.is_some();
        i.h_blen = self.blen;
        i.h_host = self.host;
        i.h_tag = self.tag;
    }

    /// The metadata the ports carry (`card_*` and `h_*`).
    pub fn of_ports(i: &FramerIn) -> Self {
        Self {
            src: Endpoint {
                mac: mac_of(i.card_mac),
                ip: Ipv4Addr::from(i.card_ip),
                port: i.h_sport,
            },
            dst: Endpoint {
                mac: mac_of(i.h_dmac),
                ip: Ipv4Addr::from(i.h_dip),
                port: i.h_dport,
            },
            app: i.h_has_app.then(|| le_bytes::<APP_BYTES>(&i.h_app)),
            blen: i.h_blen,
            host: i.h_host,
            tag: i.h_tag,
        }
    }

    /// Header bytes: 42, or 58 with the application header.
    pub fn header_len(&self) -> usize {
        HEADERS + if self.app.is_some() { APP_BYTES } else { 0 }
    }

    /// The frame the card sends for this metadata and `body` (its first
    /// `blen` bytes; shorter bodies are zero-extended): [`build_frame`] of
    /// the application header and the body.
    pub fn frame(&self, body: &[u8]) -> Vec<u8> {
        let mut payload = self.app.map(|a| a.to_vec()).unwrap_or_default();
        let b = self.blen as usize;
        payload.extend_from_slice(&body[..b.min(body.len())]);
        payload.resize(payload.len() + b.saturating_sub(body.len()), 0);
        build_frame(&self.src, &self.dst, &payload)
    }

    /// The `header_len()` header bytes of its frames.
    pub fn header(&self) -> Vec<u8> {
        let mut f = self.frame(&[]);
        f.truncate(self.header_len());
        f
    }
}

/// The framer, cycle by cycle.
#[derive(Clone, Debug)]
pub struct FramerModel {
    off: u16,
    carry: [u8; CARRY],
    inputs: FramerIn,
    /// The last header built, by its metadata (headers are rebuilt only
    /// when the metadata changes).
    cache: Option<(Meta, Vec<u8>)>,
}

/// What one cycle computes.
struct Comb {
    out: FramerOut,
    fire: bool,
    body: bool,
}

impl Default for FramerModel {
    fn default() -> Self {
        Self::new()
    }
}

impl FramerModel {
    /// Idle, between frames.
    pub fn new() -> Self {
        Self {
            off: 0,
            carry: [0; CARRY],
            inputs: FramerIn::default(),
            cache: None,
        }
    }

    fn header(&mut self) -> Vec<u8> {
        let meta = Meta::of_ports(&self.inputs);
        match &self.cache {
            Some((m, h)) if *m == meta => h.clone(),
            _ => {
                let h = meta.header();
                self.cache = Some((meta, h.clone()));
                h
            }
        }
    }

    fn comb(&mut self) -> Comb {
        let i = self.inputs.clone();
        let p: u16 = if i.h_has_app {
            CARRY as u16
        } else {
            HEADERS as u16
        };
        let t = p.wrapping_add(i.h_blen);
        let l = t.max(crate::wire::MIN_FRAME as u16);
        let rem_l = l.wrapping_sub(self.off);
        let rem_t = t.wrapping_sub(self.off);
        let last = rem_l <= 64;
        let body = self.off < i.h_blen;
        let p = p as usize;
        let s: [u8; 64] = le_bytes(&i.s_tdata);
        let mut b = [0u8; 64];
        if self.off == 0 {
            b[..p].copy_from_slice(&self.header()[..p]);
        } else {
            b[..p].copy_from_slice(&self.carry[CARRY - p..]);
        }
        b[p..].copy_from_slice(&s[..64 - p]);
        let n = if rem_t >= 64 || rem_t == 0 {
            64
        } else {
            rem_t as usize
        };
        b[n..].fill(0);
        if !i.h_valid {
            b.fill(0);
        }
        let m_tvalid = i.h_valid && (!body || i.s_tvalid);
        let fire = m_tvalid && i.m_tready;
        let out = FramerOut {
            h_ready: fire && last,
            s_tready: i.h_valid && body && i.m_tready,
            m_tdata: from_bytes(&b),
            m_tkeep: if last {
                keep_mask(rem_l as u32)
            } else {
                u64::MAX
            },
            m_tlast: last,
            m_tvalid,
            m_tuser_size: l,
            m_host: i.h_host,
            m_tag: i.h_tag,
        };
        Comb { out, fire, body }
    }
}

impl Dut for FramerModel {
    type In = FramerIn;
    type Out = FramerOut;

    fn eval(&mut self, inputs: &FramerIn) -> FramerOut {
        self.inputs = inputs.clone();
        self.comb().out
    }

    fn tick(&mut self) {
        let c = self.comb();
        if !c.fire {
            return;
        }
        if c.body {
            let s: [u8; 64] = le_bytes(&self.inputs.s_tdata);
            self.carry.copy_from_slice(&s[64 - CARRY..]);
        }
        self.off = if c.out.m_tlast {
            0
        } else {
            self.off.wrapping_add(64)
        };
    }

    fn witness(&self) -> &str {
        "model"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steer::kept_bytes;

    fn meta(app: bool, blen: u16) -> Meta {
        Meta {
            src: Endpoint {
                mac: [2, 0x57, 0x46, 0, 0, 1],
                ip: Ipv4Addr::new(10, 0, 0, 2),
                port: 0x5748,
            },
            dst: Endpoint {
                mac: [2, 0, 0, 0, 0, 9],
                ip: Ipv4Addr::new(10, 0, 0, 9),
                port: 40000,
            },
            app: app.then_some(std::array::from_fn(|k| 0xa0 + k as u8)),
            blen,
            host: true,
            tag: 7,
        }
    }

    /// Frames through the model at full rate, body garbage past `blen`.
    #[test]
    fn frames_leave_as_build_frame_builds_them_one_beat_a_cycle() {
        for app in [false, true] {
            for blen in [0u16, 1, 2, 6, 17, 18, 22, 23, 63, 64, 65, 86, 320, 1456] {
                let m = meta(app, blen);
                let body: Vec<u8> = (0..(blen as usize).div_ceil(64) * 64)
                    .map(|k| k as u8 | 0x80)
                    .collect();
                let mut d = FramerModel::new();
                let mut got = vec![];
                let mut beats = 0;
                let mut taken = 0;
                loop {
                    let mut i = FramerIn {
                        h_valid: true,
                        m_tready: true,
                        s_tvalid: true,
                        ..Default::default()
                    };
                    m.drive(&mut i);
                    let at = 64 * taken;
                    if at < body.len() {
                        i.s_tdata = from_bytes(&body[at..at + 64]);
                    }
                    let o = d.eval(&i);
                    assert!(o.m_tvalid);
                    beats += 1;
                    got.extend(kept_bytes(&o.m_tdata, o.m_tkeep));
                    taken += o.s_tready as usize;
                    d.tick();
                    if o.m_tlast {
                        assert!(o.h_ready);
                        assert_eq!(o.m_tuser_size as usize, got.len());
                        break;
                    }
                }
                let want = m.frame(&body);
                assert_eq!(got, want, "app {app} blen {blen}");
                assert_eq!(beats, want.len().div_ceil(64));
                assert_eq!(taken, (blen as usize).div_ceil(64));
            }
        }
    }
}
