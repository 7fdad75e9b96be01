//! `grad_fanout`, cycle by cycle: the specification of
//! `weft_hdl::grad_fanout::GradFanout<BEATS>`.
//!
//! The block sits between the gradient engine's output (`grad_agg`'s
//! `m_*` stream: packets of `BEATS` beats, kind on `s_tuser`) and the
//! framer, and decides per packet how many copies go where
//! (docs/wire.md, "Gradient RESULT" and "Gradient EVICT and FALLBACK"):
//!
//! - **RESULT** (kind 1): job = header bytes 4..6 (its low 4 bits index the
//!   table; the engine only produces jobs below 16), `W` = header byte 7
//!   (0 means no copy, above 32 counts as 32). For `w = 0..W` in order, the
//!   job's worker-table entry `w`: if VALID, one copy to the entry's MAC,
//!   IP, UDP port and HOST bit; otherwise no copy, and `ev_skip` pulses.
//!   A RESULT with the NACK flag (header byte 1 bit 4) also skips the
//!   workers its bitmap (bytes 12..16) names, so it goes only to the
//!   workers missing from the chunk's slot; `ev_skip` still pulses only
//!   for entries not VALID.
//! - **EVICT, FALLBACK** (kinds 2, 3, and the never-produced kind 0): one
//!   copy to `fb_mac`/`fb_ip`/`fb_port`, `h_host` = 1.
//!
//! A copy is its metadata (`h_valid`, `h_dmac`, `h_dip`, `h_dport`,
//! `h_host`, `h_tag` = `SRC_GRAD | kind << 8`) and its body, the packet's
//! `BEATS` beats unchanged on `m_tdata`/`m_tvalid`/`m_tready`. `h_*` rise
//! with the copy's first cycle and hold until the framer ends the copy with
//! `h_ready`, which counts only once all `BEATS` body beats are taken (in
//! that cycle or before); the copy's body beats are offered only while
//! `h_valid` is high. `s_tlast` is not used. `ev_copy` pulses the cycle
//! after a RESULT copy ended.
//!
//! # The worker table
//! A RAM of 512 entries (`wt_addr` = job << 5 | worker), power-on all
//! invalid, written through `wt_we`/`wt_addr`/`wt_data` ([`Entry`]: MAC
//! 47:0, IP 79:48, UDP port 95:80, HOST 96, VALID 97), read synchronously:
//! a lookup *made* in cycle `c` (the address presented) shows its entry in
//! cycle `c + 1` and sees every write of cycles before `c`, none of `c` or
//! later. Lookups are made:
//! - worker 0: in the cycle the RESULT's header beat is taken;
//! - worker `w + 1`: in the cycle worker `w` is finished — the cycle its
//!   copy ends (`h_ready`), or, when its entry was not VALID, the cycle its
//!   entry was decided in.
//!
//! Worker `w`'s entry is decided in the cycle after its lookup: a VALID
//! entry's copy starts in that cycle (`h_*` = the entry, latched for the
//! rest of the copy), an invalid one is skipped in it (`ev_skip` pulses in
//! the next cycle). The fallback's address is latched the same way, from
//! `fb_*` in the cycle its packet's header is taken.
//!
//! # Cycle by cycle
//! Between packets (`!act`), `s_tready` = 1 and a header beat is always
//! taken. A RESULT's header looks up worker 0 and starts nothing; any
//! other kind's copy starts in the same cycle (`h_valid` = `m_tvalid` =
//! `s_tvalid`, `h_*` from the `fb_*` inputs, `m_tdata` = `s_tdata`: cut
//! through). While a packet is in, `s_tready` = 1 until its `BEATS` beats
//! are in the buffer, whatever the output does, and body beat `tx` of the
//! current copy is offered from the buffer when the buffer holds it and
//! straight from the input (stored as it passes) when it is the next input
//! beat. When the last copy ends (or the last entry is skipped, or `W` =
//! 0) the block takes what is left of the packet and then is between
//! packets again in the next cycle.
//!
//! # Throughput
//! With the framer raising `h_ready` with the last body beat and never
//! stalling, a copy takes `BEATS` cycles and copies follow back to back. A
//! RESULT whose header is taken in cycle 0 decides worker 0 in cycle 1, and
//! each decision takes `BEATS` cycles for a copy and 1 for a skip, so with
//! `v` copies and `s` skips its last copy ends in cycle `v * BEATS + s` and
//! the next header is taken in cycle `v * BEATS + s + 1`: the block is
//! occupied `v * BEATS + s + 1` cycles and holds off an input that offers
//! packets back to back for `(v - 1) * BEATS + s + 1` of them (for `v` >= 1;
//! `max(0, s + 1 - BEATS)` for `v` = 0). On the card (`BEATS` = 5) that is
//! 1 cycle per RESULT for one worker and `5 * W - 4` for `W` valid workers.
//! EVICT and FALLBACK cut through: `BEATS` cycles, nothing held off. Each
//! cycle the framer raises `h_ready` late, or stalls a body beat, adds a
//! cycle to the copy.

use crate::dut::Dut;
use crate::wire::{Ret, SRC_GRAD};

/// Entries of the worker table (16 jobs x 32 workers).
pub const TABLE_ENTRIES: usize = 512;
/// Most copies of one RESULT.
pub const MAX_COPIES: u8 = 32;
/// `s_tuser` of a RESULT.
pub const KIND_RESULT: u8 = 1;
/// `s_tuser` of an EVICT.
pub const KIND_EVICT: u8 = 2;
/// `s_tuser` of a FALLBACK.
pub const KIND_FALLBACK: u8 = 3;

/// The workers a RESULT packet's copies skip, from its header (at least
/// its first 16 bytes): with the NACK flag, its bitmap (the workers whose
/// contributions are in); otherwise none.
pub fn nack_mask(header: &[u8]) -> u32 {
    let word = |i: usize| {
        header
            .get(4 * i..4 * i + 4)
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    mask_of(word(0), word(3))
}

/// [`nack_mask`] from the header beat's words 0 (version, flags, count) and
/// 3 (bitmap).
fn mask_of(w0: u32, w3: u32) -> u32 {
    if w0 >> 8 & crate::grad_agg::packet::flags::NACK as u32 != 0 {
        w3
    } else {
        0
    }
}

crate::ports! {
    /// Inputs of the fan-out.
    pub struct FanoutIn {
        /// Packet beats from the engine.
        pub s_tdata: [u32; 16] = 512,
        /// Packet kind (1 RESULT, 2 EVICT, 3 FALLBACK).
        pub s_tuser: u8 = 2,
        /// Last beat (not used).
        pub s_tlast: bool = 1,
        /// Valid.
        pub s_tvalid: bool = 1,
        /// Fallback MAC (first wire byte in bits 47:40).
        pub fb_mac: u64 = 48,
        /// Fallback IPv4 address (first byte in bits 31:24).
        pub fb_ip: u32 = 32,
        /// Fallback UDP port.
        pub fb_port: u16 = 16,
        /// Worker table write enable.
        pub wt_we: bool = 1,
        /// Worker table entry: job << 5 | worker.
        pub wt_addr: u16 = 9,
        /// Entry written ([`Entry::words`]).
        pub wt_data: [u32; 4] = 98,
        /// The framer is done with the copy.
        pub h_ready: bool = 1,
        /// Body beat ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the fan-out.
    pub struct FanoutOut {
        /// Input ready.
        pub s_tready: bool = 1,
        /// A copy's metadata.
        pub h_valid: bool = 1,
        /// Destination MAC.
        pub h_dmac: u64 = 48,
        /// Destination IPv4 address.
        pub h_dip: u32 = 32,
        /// Destination UDP port.
        pub h_dport: u16 = 16,
        /// The copy goes to the host port.
        pub h_host: bool = 1,
        /// `tuser_src` of the copy's frame.
        pub h_tag: u16 = 16,
        /// Body beat.
        pub m_tdata: [u32; 16] = 512,
        /// Body beat valid.
        pub m_tvalid: bool = 1,
        /// Pulse: a RESULT copy ended.
        pub ev_copy: bool = 1,
        /// Pulse: a RESULT copy skipped (entry not VALID).
        pub ev_skip: bool = 1,
    }
}

/// A worker table entry: where a worker's copy goes, and whether it is a
/// worker at all.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Entry {
    /// MAC, IP, port, and the HOST bit (the worker is on the host port).
    pub to: Ret,
    /// VALID: RESULT copies go to this worker.
    pub valid: bool,
}

impl Entry {
    /// The 98 bits as `wt_data`'s words: [`Ret::words`] (MAC 47:0, IP
    /// 79:48, port 95:80, HOST 96) and VALID in bit 97.
    pub fn words(&self) -> [u32; 4] {
        let mut w = self.to.words();
        w[3] |= (self.valid as u32) << 1;
        w
    }

    /// From `wt_data`'s words (inverse of [`Entry::words`]).
    pub fn from_words(w: [u32; 4]) -> Self {
        Self {
            to: Ret::from_words([w[0], w[1], w[2], w[3] & 1]),
            valid: w[3] >> 1 & 1 != 0,
        }
    }
}

/// The table address of worker `worker` of `job` (`wt_addr`).
pub fn entry_addr(job: u16, worker: u8) -> u16 {
    (job & 0xf) << 5 | (worker as u16 & 0x1f)
}

/// The copies a RESULT header's byte 7 asks for: at most [`MAX_COPIES`].
pub fn copies_of(workers: u8) -> u8 {
    workers.min(MAX_COPIES)
}

/// `h_tag` of a copy of a packet of `kind`.
pub fn tag_of(kind: u8) -> u16 {
    SRC_GRAD | ((kind & 3) as u16) << 8
}

/// Where a copy goes, as the `h_*` ports carry it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dest {
    /// `h_dmac` (first wire byte in bits 47:40).
    pub mac: u64,
    /// `h_dip` (first byte in bits 31:24).
    pub ip: u32,
    /// `h_dport`.
    pub port: u16,
    /// `h_host`.
    pub host: bool,
}

impl Dest {
    /// A table entry's destination.
    pub fn of(r: &Ret) -> Self {
        let w = r.words();
        Self {
            mac: w[0] as u64 | ((w[1] & 0xffff) as u64) << 32,
            ip: w[1] >> 16 | (w[2] & 0xffff) << 16,
            port: (w[2] >> 16) as u16,
            host: w[3] & 1 != 0,
        }
    }

    /// The fallback's destination from the `fb_*` inputs.
    pub fn fallback(i: &FanoutIn) -> Self {
        Self {
            mac: i.fb_mac & ((1 << 48) - 1),
            ip: i.fb_ip,
            port: i.fb_port,
            host: true,
        }
    }

    /// The destination on the `h_*` outputs.
    pub fn on(o: &FanoutOut) -> Self {
        Self {
            mac: o.h_dmac,
            ip: o.h_dip,
            port: o.h_dport,
            host: o.h_host,
        }
    }

    fn show(&self, o: &mut FanoutOut) {
        o.h_dmac = self.mac;
        o.h_dip = self.ip;
        o.h_dport = self.port;
        o.h_host = self.host;
    }
}

/// Combinational values of one cycle (the RTL's local signals).
#[derive(Clone, Debug, Default)]
struct Comb {
    out: FanoutOut,
    ra: u16,
    in_fire: bool,
    m_fire: bool,
    done: bool,
    ent: Entry,
    wn_hdr: u8,
    is_res: bool,
    /// Worker `wk`'s copy is skipped: the NACK's bitmap has it.
    masked: bool,
}

/// The fan-out, cycle by cycle, for packets of `beats` beats.
#[derive(Clone, Debug)]
pub struct GradFanoutModel {
    beats: usize,
    table: Vec<[u32; 4]>,
    /// The RAM's read register: the entry of the last cycle's lookup.
    rd: [u32; 4],
    act: bool,
    look: bool,
    hv: bool,
    fin: bool,
    res: bool,
    kind: u8,
    job: u16,
    wn: u8,
    wk: u8,
    /// The NACK bitmap still to come, worker `wk` in bit 0.
    mask: u32,
    rx: usize,
    tx: usize,
    meta: Dest,
    pkt: Vec<[u32; 16]>,
    evc: bool,
    evs: bool,
    inputs: FanoutIn,
}

impl GradFanoutModel {
    /// Idle, the table all invalid, for packets of `beats` beats (the RTL
    /// takes 2 to 8; the model any number from 2).
    pub fn new(beats: usize) -> Self {
        Self {
            beats: beats.max(2),
            table: vec![[0; 4]; TABLE_ENTRIES],
            rd: [0; 4],
            act: false,
            look: false,
            hv: false,
            fin: false,
            res: false,
            kind: 0,
            job: 0,
            wn: 0,
            wk: 0,
            mask: 0,
            rx: 0,
            tx: 0,
            meta: Dest::default(),
            pkt: vec![[0; 16]; beats.max(2)],
            evc: false,
            evs: false,
            inputs: FanoutIn::default(),
        }
    }

    /// Beats per packet.
    pub fn beats(&self) -> usize {
        self.beats
    }

    /// The table entry at `addr` as it is now.
    pub fn entry(&self, addr: u16) -> Entry {
        Entry::from_words(self.table[addr as usize % TABLE_ENTRIES])
    }

    fn comb(&self) -> Comb {
        let i = &self.inputs;
        let mut c = Comb::default();
        let o = &mut c.out;
        let hdr_job = (i.s_tdata[1] & 0xf) as u16;
        let hdr_w = (i.s_tdata[1] >> 24) as u8;
        c.wn_hdr = copies_of(hdr_w);
        c.is_res = i.s_tuser & 3 == KIND_RESULT;
        c.ent = Entry::from_words(self.rd);
        let cp;
        if !self.act {
            c.ra = entry_addr(hdr_job, 0);
            o.s_tready = true;
            c.in_fire = i.s_tvalid;
            cp = i.s_tvalid && !c.is_res;
            Dest::fallback(i).show(o);
            o.h_tag = tag_of(i.s_tuser);
        } else {
            c.ra = entry_addr(self.job, self.wk.wrapping_add(1));
            o.s_tready = self.rx < self.beats;
            c.in_fire = i.s_tvalid && o.s_tready;
            c.masked = self.mask & 1 != 0;
            cp = self.hv || (self.look && c.ent.valid && !c.masked);
            if self.look {
                Dest::of(&c.ent.to).show(o);
            } else {
                self.meta.show(o);
            }
            o.h_tag = tag_of(self.kind);
        }
        o.h_valid = cp;
        o.m_tdata = if self.tx < self.rx {
            self.pkt[self.tx]
        } else {
            i.s_tdata
        };
        o.m_tvalid = cp && (self.tx < self.rx || (o.s_tready && i.s_tvalid));
        c.m_fire = o.m_tvalid && i.m_tready;
        let tx_n = self.tx + c.m_fire as usize;
        c.done = cp && i.h_ready && tx_n == self.beats;
        o.ev_copy = self.evc;
        o.ev_skip = self.evs;
        c
    }
}

impl Dut for GradFanoutModel {
    type In = FanoutIn;
    type Out = FanoutOut;

    fn eval(&mut self, inputs: &FanoutIn) -> FanoutOut {
        self.inputs = inputs.clone();
        self.comb().out
    }

    fn tick(&mut self) {
        let c = self.comb();
        let i = self.inputs.clone();
        // The RAM reads before it writes.
        self.rd = self.table[c.ra as usize % TABLE_ENTRIES];
        if i.wt_we {
            let mut w = i.wt_data;
            w[3] &= 3;
            self.table[i.wt_addr as usize % TABLE_ENTRIES] = w;
        }
        self.evc = false;
        self.evs = false;
        let rx_n = self.rx + c.in_fire as usize;
        if c.in_fire {
            self.pkt[self.rx] = i.s_tdata;
        }
        self.rx = rx_n;
        self.tx += c.m_fire as usize;
        if c.done {
            self.tx = 0;
        }
        let mut over = false;
        if !self.act {
            if c.in_fire {
                self.act = true;
                self.kind = i.s_tuser & 3;
                self.res = c.is_res;
                self.job = (i.s_tdata[1] & 0xf) as u16;
                self.wn = c.wn_hdr;
                self.wk = 0;
                self.mask = if c.is_res {
                    mask_of(i.s_tdata[0], i.s_tdata[3])
                } else {
                    0
                };
                self.meta = Dest::fallback(&i);
                self.hv = !c.is_res;
                self.look = c.is_res && c.wn_hdr != 0;
                over = c.is_res && c.wn_hdr == 0;
            }
        } else {
            let wk1 = self.wk + 1;
            if self.look {
                if c.ent.valid && !c.masked {
                    self.meta = Dest::of(&c.ent.to);
                    self.hv = true;
                    self.look = false;
                } else {
                    self.evs = !c.ent.valid;
                    self.wk = wk1;
                    self.mask >>= 1;
                    over |= wk1 == self.wn;
                }
            }
            if c.done {
                self.hv = false;
                self.evc = self.res;
                if self.res && wk1 != self.wn {
                    self.look = true;
                    self.wk = wk1;
                    self.mask >>= 1;
                } else {
                    over = true;
                }
            }
            over |= self.fin;
        }
        if over {
            self.fin = true;
            self.look = false;
            self.hv = false;
            if rx_n == self.beats {
                self.act = false;
                self.fin = false;
                self.rx = 0;
                self.tx = 0;
            }
        }
    }

    fn witness(&self) -> &str {
        "model"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Endpoint, Side};
    use std::net::Ipv4Addr;

    #[test]
    fn entry_words_round_trip_and_place_valid_in_bit_97() {
        let e = Entry {
            to: Ret {
                to: Endpoint {
                    mac: [2, 0x57, 0x46, 0, 0, 9],
                    ip: Ipv4Addr::new(10, 0, 0, 7),
                    port: 0x1234,
                },
                side: Side::Host,
            },
            valid: true,
        };
        let w = e.words();
        assert_eq!(w[3], 0b11);
        assert_eq!(Entry::from_words(w), e);
        assert_eq!(
            Dest::of(&e.to),
            Dest {
                mac: 0x0257_4600_0009,
                ip: 0x0a00_0007,
                port: 0x1234,
                host: true
            }
        );
    }

    #[test]
    fn tags_and_addresses() {
        assert_eq!(tag_of(KIND_RESULT), 0x3100);
        assert_eq!(tag_of(KIND_FALLBACK), 0x3300);
        assert_eq!(entry_addr(3, 31), 3 << 5 | 31);
        assert_eq!(copies_of(200), 32);
    }
}
