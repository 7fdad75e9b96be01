//! The top's stream steering: [`DeframeModel`] (classify received frames
//! and strip the Ethernet/IPv4/UDP header for the engines),
//! [`PktMuxModel`] (merge four packet streams, packet by packet,
//! round-robin) and [`PktMux2Model`] (merge two, with a sideband). All are
//! the cycle-accurate specifications of `weft_hdl::steer`.
//!
//! # Deframe
//! A frame's first beat comes with its class from the classifier in front
//! (`crate::classify`, by [`wire::decide`], the rule `docs/wire.md`
//! states): a well-formed UDP frame for the card's engine at port
//! [`KV_PORT`] goes to destination 1, [`GRAD_PORT`] 2, [`MEMOPS_PORT`] 3;
//! anything else passes through unchanged with destination 0, beat for
//! beat, combinationally. The first beat of a frame
//! raises one event: `ev_engine` or `ev_pass`, and `ev_malformed` with
//! `ev_pass` when the frame was for an engine but malformed. An engine's
//! frame loses its first [`STRIP`] bytes and its Ethernet padding: the
//! first beat is taken without output (its last 22 bytes kept), each later
//! beat leaves as those 22 bytes followed by its first 42, and when the
//! frame's last beat holds more than 42 bytes of the IP datagram a final
//! beat carries the rest. `tuser_size` out is the UDP payload's size; the
//! last beat's `tkeep` covers the payload's bytes in it; `m_tret` holds the
//! frame's source MAC, IP and UDP port from the cycle after its first beat.
//!
//! # PktMux
//! When idle, the first valid input after the last one granted (the last
//! granted itself last) is connected straight through — data, valid, and
//! its ready from the output's — until a beat with `tlast` is taken.

use crate::dut::Dut;
use crate::wire::{self, Card, Decision, Endpoint};
use std::net::Ipv4Addr;

pub use crate::wire::{GRAD_PORT, KV_PORT, MEMOPS_PORT};
/// Ethernet (14) + IPv4 without options (20) + UDP (8) header bytes.
pub const STRIP: usize = wire::HEADERS;

crate::ports! {
    /// Inputs of the deframer.
    pub struct DeframeIn {
        /// Frame data.
        pub s_tdata: [u32; 16] = 512,
        /// Byte enables.
        pub s_tkeep: u64 = 64,
        /// Last beat.
        pub s_tlast: bool = 1,
        /// Valid.
        pub s_tvalid: bool = 1,
        /// Frame bytes.
        pub s_tuser_size: u16 = 16,
        /// On a frame's first beat: its destination (0 pass through).
        pub s_tcls: u8 = 2,
        /// On a frame's first beat: for an engine but malformed.
        pub s_tbad: bool = 1,
        /// On an engine frame's first beat: its length without padding.
        pub s_teff: u16 = 16,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the deframer.
    pub struct DeframeOut {
        /// Input ready.
        pub s_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output packet bytes.
        pub m_tuser_size: u16 = 16,
        /// Destination: 0 pass through (unchanged frame), 1 key-value, 2 gradient, 3 MemOps.
        pub m_tdest: u8 = 2,
        /// Return address: source MAC (47:0), IP (79:48), UDP port (95:80).
        pub m_tret: [u32; 3] = 96,
        /// A frame for an engine started.
        pub ev_engine: bool = 1,
        /// A frame passing through started.
        pub ev_pass: bool = 1,
        /// It was for an engine but malformed.
        pub ev_malformed: bool = 1,
    }
}

/// The class of a frame whose first beat is `d`, as the classifier hands
/// it to the deframer: (destination, malformed, effective length).
pub fn class_of_beat(d: &[u32; 16], size: u16, card: &Card) -> (u8, bool, u16) {
    match decide_beat(d, size, card).1 {
        Decision::Engine { engine, eff, .. } => (engine as u8, false, eff as u16),
        Decision::Malformed(..) => (0, true, 0),
        Decision::Pass => (0, false, 0),
    }
}

fn byte(d: &[u32; 16], i: usize) -> u8 {
    (d[i / 4] >> (8 * (i % 4))) as u8
}

/// What the deframer does with a frame whose first beat is `d`: its
/// destination (0 pass, else the engine's number) and decision.
pub fn decide_beat(d: &[u32; 16], size: u16, card: &Card) -> (u8, Decision) {
    let dec = wire::decide(&to_bytes(d), size as usize, card);
    let dest = match dec {
        Decision::Engine { engine, .. } => engine as u8,
        _ => 0,
    };
    (dest, dec)
}

/// A byte mask of the low `n` bytes (`n` taken modulo 64, 0 meaning 64).
pub fn keep_mask(n: u32) -> u64 {
    let amt = (64 - (n % 64)) % 64;
    u64::MAX >> amt
}

/// Bytes of the last beat of a `size`-byte packet.
fn last_bytes(size: u16) -> u32 {
    let k = (size as u32) % 64;
    if k == 0 {
        64
    } else {
        k
    }
}

type Words = [u32; 16];

fn to_bytes(d: &Words) -> [u8; 64] {
    std::array::from_fn(|i| byte(d, i))
}

/// A 512-bit beat's words from up to 64 bytes (byte `i` in bits
/// `8i+7:8i`, the rest 0).
pub fn from_bytes(b: &[u8]) -> Words {
    let mut d = [0u32; 16];
    for (i, x) in b.iter().enumerate().take(64) {
        d[i / 4] |= (*x as u32) << (8 * (i % 4));
    }
    d
}

/// The bytes of a beat that `keep` enables, in order.
pub fn kept_bytes(d: &Words, keep: u64) -> Vec<u8> {
    (0..64)
        .filter(|i| keep >> i & 1 != 0)
        .map(|i| byte(d, i))
        .collect()
}

/// The deframer, cycle by cycle.
#[derive(Clone, Debug, Default)]
pub struct DeframeModel {
    in_pkt: bool,
    dest: u8,
    carry: [u8; 64 - STRIP],
    /// The frame's size, or for an engine frame its effective size.
    size: u16,
    flush: bool,
    ret: [u32; 3],
    inputs: DeframeIn,
}

impl DeframeModel {
    /// Idle, between frames.
    pub fn new() -> Self {
        Self::default()
    }

    /// A first beat's destination and whether it was malformed, from the
    /// classifier's sideband.
    fn first(&self) -> (u8, bool) {
        let i = &self.inputs;
        (i.s_tcls, i.s_tbad)
    }

    fn outputs(&self) -> DeframeOut {
        let i = &self.inputs;
        let mut o = DeframeOut {
            m_tret: self.ret,
            ..Default::default()
        };
        let payload = self.size.wrapping_sub(STRIP as u16);
        if self.flush {
            let mut b = [0u8; 64];
            b[..self.carry.len()].copy_from_slice(&self.carry);
            o.m_tdata = from_bytes(&b);
            o.m_tkeep = keep_mask(last_bytes(self.size).wrapping_sub(STRIP as u32));
            o.m_tlast = true;
            o.m_tvalid = true;
            o.m_tuser_size = payload;
            o.m_tdest = self.dest;
            return o;
        }
        if !self.in_pkt {
            // A beat is classified only while it is offered (the RTL makes
            // no decision on an idle input, which passes its bus through).
            let (d, bad) = if i.s_tvalid { self.first() } else { (0, false) };
            if d == 0 {
                o.s_tready = i.m_tready;
                o.m_tdata = i.s_tdata;
                o.m_tkeep = i.s_tkeep;
                o.m_tlast = i.s_tlast;
                o.m_tvalid = i.s_tvalid;
                o.m_tuser_size = i.s_tuser_size;
            } else {
                // The first beat of an engine's frame is taken without output.
                o.s_tready = true;
            }
            let first = i.s_tvalid && o.s_tready;
            o.ev_engine = first && d != 0;
            o.ev_pass = first && d == 0;
            o.ev_malformed = first && bad;
            return o;
        }
        if self.dest == 0 {
            o.s_tready = i.m_tready;
            o.m_tdata = i.s_tdata;
            o.m_tkeep = i.s_tkeep;
            o.m_tlast = i.s_tlast;
            o.m_tvalid = i.s_tvalid;
            o.m_tuser_size = self.size;
            return o;
        }
        let inb = to_bytes(&i.s_tdata);
        let mut b = [0u8; 64];
        b[..self.carry.len()].copy_from_slice(&self.carry);
        b[self.carry.len()..].copy_from_slice(&inb[..STRIP]);
        o.s_tready = i.m_tready;
        o.m_tdata = from_bytes(&b);
        o.m_tvalid = i.s_tvalid;
        o.m_tuser_size = payload;
        o.m_tdest = self.dest;
        let k = last_bytes(self.size);
        if i.s_tlast && k <= STRIP as u32 {
            o.m_tlast = true;
            o.m_tkeep = keep_mask(k + self.carry.len() as u32);
        } else {
            o.m_tkeep = u64::MAX;
        }
        o
    }
}

impl Dut for DeframeModel {
    type In = DeframeIn;
    type Out = DeframeOut;

    fn eval(&mut self, inputs: &DeframeIn) -> DeframeOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let i = self.inputs.clone();
        let o = self.outputs();
        if self.flush {
            if i.m_tready {
                self.flush = false;
                self.in_pkt = false;
            }
            return;
        }
        if !(i.s_tvalid && o.s_tready) {
            return;
        }
        let inb = to_bytes(&i.s_tdata);
        if !self.in_pkt {
            let (d, _) = self.first();
            self.dest = d;
            self.size = i.s_tuser_size;
            if d != 0 {
                self.size = i.s_teff;
                let be16 = |k: usize| u16::from_be_bytes([inb[k], inb[k + 1]]);
                let from = Endpoint {
                    mac: inb[6..12].try_into().expect("6 bytes"),
                    ip: Ipv4Addr::new(inb[26], inb[27], inb[28], inb[29]),
                    port: be16(34),
                };
                let w = wire::Ret {
                    to: from,
                    side: wire::Side::Wire,
                }
                .words();
                self.ret = [w[0], w[1], w[2]];
            }
            self.carry.copy_from_slice(&inb[STRIP..]);
            self.in_pkt = !i.s_tlast;
            if self.dest != 0 && i.s_tlast {
                self.in_pkt = true;
                self.flush = true;
            }
            return;
        }
        if self.dest != 0 {
            self.carry.copy_from_slice(&inb[STRIP..]);
            if i.s_tlast && last_bytes(self.size) > STRIP as u32 {
                self.flush = true;
                return;
            }
        }
        if i.s_tlast {
            self.in_pkt = false;
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

crate::ports! {
    /// Inputs of the four-way packet merge.
    pub struct MuxIn {
        /// Input 0 data.
        pub s0_tdata: [u32; 16] = 512,
        /// Input 0 byte enables.
        pub s0_tkeep: u64 = 64,
        /// Input 0 last beat.
        pub s0_tlast: bool = 1,
        /// Input 0 valid.
        pub s0_tvalid: bool = 1,
        /// Input 0 packet bytes.
        pub s0_tuser_size: u16 = 16,
        /// Input 0 source tag.
        pub s0_tuser_src: u16 = 16,
        /// Input 0 destination tag.
        pub s0_tuser_dst: u16 = 16,
        /// Input 1 data.
        pub s1_tdata: [u32; 16] = 512,
        /// Input 1 byte enables.
        pub s1_tkeep: u64 = 64,
        /// Input 1 last beat.
        pub s1_tlast: bool = 1,
        /// Input 1 valid.
        pub s1_tvalid: bool = 1,
        /// Input 1 packet bytes.
        pub s1_tuser_size: u16 = 16,
        /// Input 1 source tag.
        pub s1_tuser_src: u16 = 16,
        /// Input 1 destination tag.
        pub s1_tuser_dst: u16 = 16,
        /// Input 2 data.
        pub s2_tdata: [u32; 16] = 512,
        /// Input 2 byte enables.
        pub s2_tkeep: u64 = 64,
        /// Input 2 last beat.
        pub s2_tlast: bool = 1,
        /// Input 2 valid.
        pub s2_tvalid: bool = 1,
        /// Input 2 packet bytes.
        pub s2_tuser_size: u16 = 16,
        /// Input 2 source tag.
        pub s2_tuser_src: u16 = 16,
        /// Input 2 destination tag.
        pub s2_tuser_dst: u16 = 16,
        /// Input 3 data.
        pub s3_tdata: [u32; 16] = 512,
        /// Input 3 byte enables.
        pub s3_tkeep: u64 = 64,
        /// Input 3 last beat.
        pub s3_tlast: bool = 1,
        /// Input 3 valid.
        pub s3_tvalid: bool = 1,
        /// Input 3 packet bytes.
        pub s3_tuser_size: u16 = 16,
        /// Input 3 source tag.
        pub s3_tuser_src: u16 = 16,
        /// Input 3 destination tag.
        pub s3_tuser_dst: u16 = 16,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the four-way packet merge.
    pub struct MuxOut {
        /// Input 0 ready.
        pub s0_tready: bool = 1,
        /// Input 1 ready.
        pub s1_tready: bool = 1,
        /// Input 2 ready.
        pub s2_tready: bool = 1,
        /// Input 3 ready.
        pub s3_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output packet bytes.
        pub m_tuser_size: u16 = 16,
        /// Output source tag.
        pub m_tuser_src: u16 = 16,
        /// Output destination tag.
        pub m_tuser_dst: u16 = 16,
    }
}

/// One input of the merge, as a beat.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Beat {
    /// Data.
    pub tdata: [u32; 16],
    /// Byte enables.
    pub tkeep: u64,
    /// Last beat.
    pub tlast: bool,
    /// Valid.
    pub tvalid: bool,
    /// Packet bytes.
    pub tuser_size: u16,
    /// Source tag.
    pub tuser_src: u16,
    /// Destination tag.
    pub tuser_dst: u16,
}

impl MuxIn {
    /// Input `k`'s beat.
    pub fn beat(&self, k: usize) -> Beat {
        match k {
            0 => self.s0_beat(),
            1 => self.s1_beat(),
            2 => self.s2_beat(),
            3 => self.s3_beat(),
            _ => Beat::default(),
        }
    }

    /// Set input `k`'s beat.
    pub fn set_beat(&mut self, k: usize, b: Beat) {
        match k {
            0 => self.set_s0_beat(b),
            1 => self.set_s1_beat(b),
            2 => self.set_s2_beat(b),
            3 => self.set_s3_beat(b),
            _ => {}
        }
    }
}

/// A stream port's beat read and written whole, the port named by its
/// signals (`s_tdata`, `s0_tdata`, `m_tdata`, ...).
macro_rules! one_beat {
    ($($ty:ident: $get:ident, $set:ident => $d:ident, $kp:ident, $l:ident, $v:ident, $z:ident, $sr:ident, $ds:ident;)*) => {
        $(impl $ty {
            /// The port's beat.
            pub fn $get(&self) -> Beat {
                Beat {
                    tdata: self.$d,
                    tkeep: self.$kp,
                    tlast: self.$l,
                    tvalid: self.$v,
                    tuser_size: self.$z,
                    tuser_src: self.$sr,
                    tuser_dst: self.$ds,
                }
            }

            /// Set the port's beat.
            pub fn $set(&mut self, b: Beat) {
                self.$d = b.tdata;
                self.$kp = b.tkeep;
                self.$l = b.tlast;
                self.$v = b.tvalid;
                self.$z = b.tuser_size;
                self.$sr = b.tuser_src;
                self.$ds = b.tuser_dst;
            }
        })*
    };
}

one_beat! {
    MuxIn: s0_beat, set_s0_beat => s0_tdata, s0_tkeep, s0_tlast, s0_tvalid, s0_tuser_size, s0_tuser_src, s0_tuser_dst;
    MuxIn: s1_beat, set_s1_beat => s1_tdata, s1_tkeep, s1_tlast, s1_tvalid, s1_tuser_size, s1_tuser_src, s1_tuser_dst;
    MuxIn: s2_beat, set_s2_beat => s2_tdata, s2_tkeep, s2_tlast, s2_tvalid, s2_tuser_size, s2_tuser_src, s2_tuser_dst;
    MuxIn: s3_beat, set_s3_beat => s3_tdata, s3_tkeep, s3_tlast, s3_tvalid, s3_tuser_size, s3_tuser_src, s3_tuser_dst;
    MuxOut: m_beat, set_m_beat => m_tdata, m_tkeep, m_tlast, m_tvalid, m_tuser_size, m_tuser_src, m_tuser_dst;
    SliceIn: s_beat, set_s_beat => s_tdata, s_tkeep, s_tlast, s_tvalid, s_tuser_size, s_tuser_src, s_tuser_dst;
    SliceOut: m_beat, set_m_beat => m_tdata, m_tkeep, m_tlast, m_tvalid, m_tuser_size, m_tuser_src, m_tuser_dst;
}

/// The packet merge, cycle by cycle.
#[derive(Clone, Debug, Default)]
pub struct PktMuxModel {
    busy: bool,
    sel: usize,
    rr: usize,
    inputs: MuxIn,
}

impl PktMuxModel {
    /// Idle; input 1 first (the pointer starts at input 0).
    pub fn new() -> Self {
        Self::default()
    }

    fn pick(&self) -> Option<usize> {
        if self.busy {
            return Some(self.sel);
        }
        (1..=4)
            .map(|k| (self.rr + k) % 4)
            .find(|&k| self.inputs.beat(k).tvalid)
    }

    fn outputs(&self) -> MuxOut {
        let i = &self.inputs;
        let mut o = MuxOut::default();
        let Some(k) = self.pick() else {
            return o;
        };
        o.set_m_beat(i.beat(k));
        match k {
            0 => o.s0_tready = i.m_tready,
            1 => o.s1_tready = i.m_tready,
            2 => o.s2_tready = i.m_tready,
            _ => o.s3_tready = i.m_tready,
        }
        o
    }
}

impl Dut for PktMuxModel {
    type In = MuxIn;
    type Out = MuxOut;

    fn eval(&mut self, inputs: &MuxIn) -> MuxOut {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let o = self.outputs();
        if let Some(k) = self.pick() {
            if o.m_tvalid && self.inputs.m_tready {
                self.rr = k;
                self.busy = !o.m_tlast;
                self.sel = k;
            }
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

/// Sideband bits of the two-way merges in the top: a return address
/// ([`wire::RET_BITS`]).
pub const MUX2_META: usize = wire::RET_BITS;

crate::ports! {
    /// Inputs of the two-way packet merge.
    pub struct Mux2In {
        /// Input 0 data.
        pub s0_tdata: [u32; 16] = 512,
        /// Input 0 byte enables.
        pub s0_tkeep: u64 = 64,
        /// Input 0 last beat.
        pub s0_tlast: bool = 1,
        /// Input 0 valid.
        pub s0_tvalid: bool = 1,
        /// Input 0 packet bytes.
        pub s0_tuser_size: u16 = 16,
        /// Input 0 sideband.
        pub s0_tmeta: [u32; 4] = MUX2_META,
        /// Input 1 data.
        pub s1_tdata: [u32; 16] = 512,
        /// Input 1 byte enables.
        pub s1_tkeep: u64 = 64,
        /// Input 1 last beat.
        pub s1_tlast: bool = 1,
        /// Input 1 valid.
        pub s1_tvalid: bool = 1,
        /// Input 1 packet bytes.
        pub s1_tuser_size: u16 = 16,
        /// Input 1 sideband.
        pub s1_tmeta: [u32; 4] = MUX2_META,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the two-way packet merge.
    pub struct Mux2Out {
        /// Input 0 ready.
        pub s0_tready: bool = 1,
        /// Input 1 ready.
        pub s1_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output packet bytes.
        pub m_tuser_size: u16 = 16,
        /// Output sideband.
        pub m_tmeta: [u32; 4] = MUX2_META,
    }
}

/// The two-way merge, cycle by cycle: when idle, input 1 if it alone is
/// valid or both are and input 0 was granted last (out of reset, input 0
/// counts as granted last); then the granted input is connected straight
/// through until its `tlast` beat is taken.
#[derive(Clone, Debug, Default)]
pub struct PktMux2Model {
    busy: bool,
    sel: bool,
    last: bool,
    inputs: Mux2In,
}

impl PktMux2Model {
    /// Idle; input 1 first.
    pub fn new() -> Self {
        Self::default()
    }

    fn pick(&self) -> (bool, bool) {
        let i = &self.inputs;
        if self.busy {
            (self.sel, true)
        } else {
            (
                i.s1_tvalid && (!i.s0_tvalid || !self.last),
                i.s0_tvalid || i.s1_tvalid,
            )
        }
    }

    fn outputs(&self) -> Mux2Out {
        let i = &self.inputs;
        let (k, any) = self.pick();
        if k {
            Mux2Out {
                s0_tready: false,
                s1_tready: i.m_tready,
                m_tdata: i.s1_tdata,
                m_tkeep: i.s1_tkeep,
                m_tlast: i.s1_tlast,
                m_tvalid: i.s1_tvalid,
                m_tuser_size: i.s1_tuser_size,
                m_tmeta: i.s1_tmeta,
            }
        } else {
            Mux2Out {
                s0_tready: i.m_tready && any,
                s1_tready: false,
                m_tdata: i.s0_tdata,
                m_tkeep: i.s0_tkeep,
                m_tlast: i.s0_tlast,
                m_tvalid: i.s0_tvalid,
                m_tuser_size: i.s0_tuser_size,
                m_tmeta: i.s0_tmeta,
            }
        }
    }
}

impl Dut for PktMux2Model {
    type In = Mux2In;
    type Out = Mux2Out;

    fn eval(&mut self, inputs: &Mux2In) -> Mux2Out {
        self.inputs = inputs.clone();
        self.outputs()
    }

    fn tick(&mut self) {
        let o = self.outputs();
        let (k, _) = self.pick();
        if o.m_tvalid && self.inputs.m_tready {
            self.busy = !o.m_tlast;
            self.sel = k;
            self.last = k;
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

crate::ports! {
    /// Inputs of the register slice.
    pub struct SliceIn {
        /// Input data.
        pub s_tdata: [u32; 16] = 512,
        /// Input byte enables.
        pub s_tkeep: u64 = 64,
        /// Input last beat.
        pub s_tlast: bool = 1,
        /// Input valid.
        pub s_tvalid: bool = 1,
        /// Input packet bytes.
        pub s_tuser_size: u16 = 16,
        /// Input source tag.
        pub s_tuser_src: u16 = 16,
        /// Input destination tag.
        pub s_tuser_dst: u16 = 16,
        /// Input sideband.
        pub s_tmeta: [u32; 4] = SLICE_META,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the register slice.
    pub struct SliceOut {
        /// Input ready.
        pub s_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output packet bytes.
        pub m_tuser_size: u16 = 16,
        /// Output source tag.
        pub m_tuser_src: u16 = 16,
        /// Output destination tag.
        pub m_tuser_dst: u16 = 16,
        /// Output sideband.
        pub m_tmeta: [u32; 4] = SLICE_META,
    }
}

/// Sideband bits of the register slice (`weft_hdl::steer::SLICE_META`).
pub const SLICE_META: usize = 128;

/// The AXI4-Stream register slice, cycle by cycle: two entries, the
/// output's and a skid entry. Every output is a register: `m_*` the output
/// entry (its fields keep their last beat while it is empty), `s_tready`
/// that the skid entry is free. On an edge where the output entry moves on
/// or is empty it takes the skid entry's beat if there is one, else the
/// input's; where it stalls with a beat, an input beat taken goes to the
/// skid entry. Beats leave in the order they came, one a cycle at most,
/// one cycle after they are taken at the earliest.
#[derive(Clone, Debug, Default)]
pub struct SliceModel {
    out: (Beat, [u32; 4]),
    skid: Option<(Beat, [u32; 4])>,
    inputs: SliceIn,
}

impl SliceModel {
    /// Empty.
    pub fn new() -> Self {
        Self::default()
    }

    fn taken(i: &SliceIn) -> (Beat, [u32; 4]) {
        (
            Beat {
                tvalid: true,
                ..i.s_beat()
            },
            i.s_tmeta,
        )
    }
}

impl Dut for SliceModel {
    type In = SliceIn;
    type Out = SliceOut;

    fn eval(&mut self, inputs: &SliceIn) -> SliceOut {
        self.inputs = inputs.clone();
        let mut o = SliceOut {
            s_tready: self.skid.is_none(),
            ..SliceOut::default()
        };
        o.set_m_beat(self.out.0);
        o.m_tmeta = self.out.1;
        o
    }

    fn tick(&mut self) {
        let i = &self.inputs;
        if i.m_tready || !self.out.0.tvalid {
            if let Some(b) = self.skid.take() {
                self.out = b;
            } else if i.s_tvalid {
                self.out = Self::taken(i);
            } else {
                self.out.0.tvalid = false;
            }
        } else if i.s_tvalid && self.skid.is_none() {
            self.skid = Some(Self::taken(i));
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}
