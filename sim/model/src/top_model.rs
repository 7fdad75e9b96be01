//! The reference model of `weft_top`, composed from the blocks' models: the
//! frame check and classification of `docs/wire.md` ([`wire`]), the
//! key-value engine ([`KvModel`]), the gradient engine ([`GradModel`]) and
//! its fan-out to the worker table, MemOps ([`MemopsModel`]) into the AVM
//! pool ([`AvmModel`], stepped), and the framing of every reply.
//!
//! It is a transaction-level model: frames in, frames out, predicted
//! exactly (bytes, port, order per stream), with two freedoms it names:
//! - **Order between streams** on one output is the merges' business (they
//!   are cycle-level witnessed on their own); [`Outputs`] keeps one list per
//!   stream and port.
//! - **Where record frames split** depends on when records arrive (the
//!   packer closes a partial frame after `net.PACK_WAIT` cycles), so the
//!   model predicts the record stream ([`RecItem`]) and
//!   [`check_record_frames`] checks the card's record frames against it
//!   exactly, given the split points the card chose.
//!
//! Engines that take frames from both inputs see them in an order the
//! merges decide; the model processes frames in the order it is given them,
//! so a test that wants every engine output predicted feeds each engine
//! from one input at a time.

use crate::avm::{AvmIn, AvmModel};
use crate::dut::Dut;
use crate::grad_agg::{self, packet::Kind, GradModel, OutPacket};
use crate::kv_agg::packet::{Ack, RecordBeat, RecordKind};
use crate::kv_agg::{self, KvModel};
use crate::memops::{Completion, MemopsModel, Op, Outcome, Program, Request, Status};
use crate::net_regs::COUNTERS;
use crate::wire::{self, build_frame, classify, Card, Class, Endpoint, Engine, Side};
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use weft_regs::{avm, grad, kv, memops, net, BuildInfo, MAP};

/// Counter indices of the `net` block (`net::COUNTER_NAMES` order).
pub mod counter {
    /// Network frames taken.
    pub const RX_FRAMES: usize = 0;
    /// Network frames dropped by the frame check.
    pub const RX_BAD: usize = 1;
    /// Network frames to an engine.
    pub const RX_ENGINE: usize = 2;
    /// Network frames to the host.
    pub const RX_HOST: usize = 3;
    /// Malformed network frames.
    pub const RX_MALFORMED: usize = 4;
    /// Host frames taken.
    pub const H2C_FRAMES: usize = 5;
    /// Host frames dropped by the frame check.
    pub const H2C_BAD: usize = 6;
    /// Host frames to an engine.
    pub const H2C_ENGINE: usize = 7;
    /// Host frames to the wire.
    pub const H2C_WIRE: usize = 8;
    /// Malformed host frames.
    pub const H2C_MALFORMED: usize = 9;
    /// Frames to the host.
    pub const C2H_FRAMES: usize = 10;
    /// Frames to the wire.
    pub const TX_FRAMES: usize = 11;
    /// Key-value acks.
    pub const KV_ACKS: usize = 12;
    /// Key-value record frames.
    pub const KV_RECORD_FRAMES: usize = 13;
    /// Gradient RESULT copies.
    pub const GRAD_COPIES: usize = 14;
    /// Gradient RESULT copies without a worker.
    pub const GRAD_NO_WORKER: usize = 15;
    /// MemOps completions.
    pub const MEMOPS_REPLIES: usize = 16;
}

/// A frame offered on an input: its bytes and the `tuser_size` it comes
/// with (which a broken host may set to anything).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFrame {
    /// The frame's bytes (its beats: `ceil(len / 64)`).
    pub bytes: Vec<u8>,
    /// Its `tuser_size`.
    pub size: u16,
}

impl InFrame {
    /// A frame whose size is its length.
    pub fn new(bytes: Vec<u8>) -> Self {
        let size = bytes.len() as u16;
        Self { bytes, size }
    }
}

/// Which output port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutPort {
    /// `m_axis_qdma_c2h`.
    C2h,
    /// `m_axis_adap_tx_250mhz`.
    Tx,
}

impl OutPort {
    /// The output port of a side.
    pub fn of(side: Side) -> OutPort {
        match side {
            Side::Wire => OutPort::Tx,
            Side::Host => OutPort::C2h,
        }
    }
}

/// What the card sends, per output port and stream (`tuser_src`), except
/// the record frames (see [`RecItem`]).
pub type Outputs = BTreeMap<(OutPort, u16), Vec<Vec<u8>>>;

/// One item of the key-value record stream, in order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RecItem {
    /// A record: key, partial sum, and whether a flush drained it.
    Record {
        /// The key.
        key: u32,
        /// Its partial sum.
        sum: i32,
        /// Drained by a flush (else spilled).
        flush: bool,
    },
    /// A flush completed here.
    FlushEnd,
}

/// The top's reference model.
#[derive(Clone, Debug)]
pub struct TopModel {
    build: BuildInfo,
    net: [u32; 19],
    seq: u32,
    table: BTreeMap<(u8, u8), (Endpoint, Side)>,
    scratch: u32,
    kv: KvModel,
    grad: GradModel,
    memops: MemopsModel,
    avm: AvmModel,
    mo_image: Vec<u32>,
    mo_prog_addr: u32,
    mo_tel_sel: u32,
    mo_tel_hi: u32,
    sent: Vec<(OutPort, u16, Vec<u8>)>,
    /// Frames out, per port and stream.
    pub out: Outputs,
    /// The key-value record stream.
    pub records: Vec<RecItem>,
    /// The `net` counters, except those that count record frames
    /// (`KV_RECORD_FRAMES` and their part of `C2H_FRAMES`).
    pub counters: [u64; COUNTERS],
}

impl TopModel {
    /// The top of image `build` out of reset, with no MemOps program.
    pub fn new(build: BuildInfo) -> Self {
        Self {
            build,
            net: std::array::from_fn(|i| crate::net_regs::reset_of(&net::RW[i]) & net::RW_MASK[i]),
            seq: 0,
            table: BTreeMap::new(),
            scratch: 0,
            kv: KvModel::new(kv_agg::Config::DEFAULT),
            grad: GradModel::new(grad_agg::Config::CARD),
            memops: MemopsModel::disabled(),
            avm: AvmModel::new(),
            mo_image: vec![0; crate::memops::program::IMAGE_WORDS],
            mo_prog_addr: 0,
            mo_tel_sel: 0,
            mo_tel_hi: 0,
            sent: vec![],
            out: Outputs::new(),
            records: vec![],
            counters: [0; COUNTERS],
        }
    }

    /// Install a MemOps program and enable the port, as writing its image
    /// through `memops.PROG_*` and setting `CTRL.ENABLE` do.
    pub fn set_program(&mut self, p: Program) {
        if let Ok(img) = p.image() {
            self.mo_image = img;
        }
        self.memops = MemopsModel::new(p);
    }

    /// Every frame sent since the last call, in order: port, stream
    /// (`tuser_src`) and bytes. Record frames are not among them (see
    /// [`RecItem`]).
    pub fn take_sent(&mut self) -> Vec<(OutPort, u16, Vec<u8>)> {
        std::mem::take(&mut self.sent)
    }

    fn reg(&self, r: &weft_regs::Register) -> u32 {
        let i = net::RW
            .iter()
            .position(|x| x.addr == r.addr)
            .expect("a net RW register");
        self.net[i]
    }

    fn mac_at(&self, hi: &weft_regs::Register, lo: &weft_regs::Register) -> wire::Mac {
        wire::mac_of((self.reg(hi) as u64 & 0xffff) << 32 | self.reg(lo) as u64)
    }

    /// The card's addresses as its registers hold them.
    pub fn card(&self) -> Card {
        Card {
            me: Endpoint {
                mac: self.mac_at(&net::MAC_HI, &net::MAC_LO),
                ip: Ipv4Addr::from(self.reg(&net::IP)),
                port: 0,
            },
            enable: self.reg(&net::CTRL) & 1 != 0,
        }
    }

    fn me(&self, port: u16) -> Endpoint {
        Endpoint {
            port,
            ..self.card().me
        }
    }

    /// The key-value collector.
    pub fn kv_dst(&self) -> Endpoint {
        Endpoint {
            mac: self.mac_at(&net::KV_MAC_HI, &net::KV_MAC_LO),
            ip: Ipv4Addr::from(self.reg(&net::KV_IP)),
            port: self.reg(&net::KV_PORT) as u16,
        }
    }

    /// The gradient fallback.
    pub fn grad_dst(&self) -> Endpoint {
        Endpoint {
            mac: self.mac_at(&net::GRAD_MAC_HI, &net::GRAD_MAC_LO),
            ip: Ipv4Addr::from(self.reg(&net::GRAD_IP)),
            port: self.reg(&net::GRAD_PORT) as u16,
        }
    }

    /// Records per record frame, clamped as the packer does.
    pub fn pack_max(&self) -> usize {
        (self.reg(&net::PACK_MAX) as usize).clamp(1, wire::KV_MAX_RECORDS)
    }

    /// `net.PACK_WAIT`: cycles a partial record frame waits.
    pub fn pack_wait(&self) -> u64 {
        self.reg(&net::PACK_WAIT) as u64
    }

    /// The sequence number of the first record frame not yet predicted.
    pub fn pack_seq(&self) -> u32 {
        self.seq
    }

    /// The active key-value job.
    pub fn kv_job(&self) -> u16 {
        self.kv.regs.job
    }

    fn send(&mut self, port: OutPort, stream: u16, frame: Vec<u8>) {
        self.sent.push((port, stream, frame.clone()));
        self.out.entry((port, stream)).or_default().push(frame);
        self.counters[match port {
            OutPort::C2h => counter::C2H_FRAMES,
            OutPort::Tx => counter::TX_FRAMES,
        }] += 1;
    }

    /// A frame arrives on `side`'s input.
    pub fn frame(&mut self, side: Side, f: &InFrame) {
        use counter::*;
        let (frames, bad, engine, pass, malformed, pass_to) = match side {
            Side::Wire => (
                RX_FRAMES,
                RX_BAD,
                RX_ENGINE,
                RX_HOST,
                RX_MALFORMED,
                OutPort::C2h,
            ),
            Side::Host => (
                H2C_FRAMES,
                H2C_BAD,
                H2C_ENGINE,
                H2C_WIRE,
                H2C_MALFORMED,
                OutPort::Tx,
            ),
        };
        self.counters[frames] += 1;
        if !wire::frame_ok(f.size as usize, f.bytes.len().div_ceil(64)) {
            self.counters[bad] += 1;
            return;
        }
        let bytes = &f.bytes[..f.size as usize];
        match classify(bytes, &self.card()) {
            Class::Pass => {
                self.counters[pass] += 1;
                self.send(pass_to, wire::SRC_PASS, bytes.to_vec());
            }
            Class::Malformed(..) => {
                self.counters[pass] += 1;
                self.counters[malformed] += 1;
                self.send(pass_to, wire::SRC_PASS, bytes.to_vec());
            }
            Class::Engine {
                engine: e,
                payload,
                from,
            } => {
                self.counters[engine] += 1;
                match e {
                    Engine::Kv => self.kv_packet(&payload, from, side),
                    Engine::Grad => {
                        if let Some(p) = self.grad.packet(&payload) {
                            self.grad_out(p);
                        }
                    }
                    Engine::Memops => self.memops_frame(&payload, from, side),
                }
            }
        }
    }

    fn kv_packet(&mut self, payload: &[u8], from: Endpoint, side: Side) {
        let job = kv_agg::packet::Header::decode(payload).map_or(0, |h| h.job);
        let (ack, spills) = self.kv.packet(payload);
        if let Some(a) = ack {
            let f = build_frame(&self.me(wire::KV_PORT), &from, &ack_payload(&a, job));
            self.counters[counter::KV_ACKS] += 1;
            self.send(OutPort::of(side), wire::SRC_KV_ACK, f);
        }
        self.push_records(&spills);
    }

    fn push_records(&mut self, beats: &[RecordBeat]) {
        for b in beats {
            if b.kind == RecordKind::FlushDone {
                self.records.push(RecItem::FlushEnd);
                continue;
            }
            for &(key, sum) in b.lanes.iter().flatten() {
                self.records.push(RecItem::Record {
                    key,
                    sum,
                    flush: b.kind == RecordKind::Flush,
                });
            }
        }
    }

    fn grad_out(&mut self, p: OutPacket) {
        let code = match p.kind {
            Kind::Result | Kind::Nack => 1,
            Kind::Evict => 2,
            Kind::Fallback => 3,
            Kind::Data => 0,
        };
        let stream = wire::SRC_GRAD | code << 8;
        let me = self.me(wire::GRAD_PORT);
        if p.kind == Kind::Result {
            let job = p.bytes[4] & 0xf;
            let workers = p.bytes[7].min(32);
            // A NACK goes only to the workers missing from its bitmap.
            let skip = crate::grad_fanout::nack_mask(&p.bytes);
            for w in 0..workers {
                match self.table.get(&(job, w)).copied() {
                    Some(_) if skip & 1 << w != 0 => {}
                    Some((to, side)) => {
                        self.counters[counter::GRAD_COPIES] += 1;
                        let f = build_frame(&me, &to, &p.bytes);
                        self.send(OutPort::of(side), stream, f);
                    }
                    None => self.counters[counter::GRAD_NO_WORKER] += 1,
                }
            }
        } else {
            let f = build_frame(&me, &self.grad_dst(), &p.bytes);
            self.send(OutPort::C2h, stream, f);
        }
    }

    fn memops_frame(&mut self, payload: &[u8], from: Endpoint, side: Side) {
        let b = |i: usize| payload[i];
        let le64 = |i: usize| u64::from_le_bytes(payload[i..i + 8].try_into().expect("8 bytes"));
        let src = b(0) & 3;
        let tag = b(3);
        let c = match Op::from_code(b(1) & 3) {
            None => Completion {
                dst: src,
                tag,
                status: Status::Error,
                data: 0,
            },
            Some(op) => {
                let req = Request {
                    src,
                    op,
                    addr: le64(8),
                    len: b(2) & 0xf,
                    tag,
                    data: le64(16),
                };
                match self.memops.process(&req).0 {
                    Outcome::Complete(c) => c,
                    Outcome::Issue(i) => {
                        let (status, data) = if i.req.op == Op::AtomicAdd {
                            // The pool has no atomics.
                            (Status::Error, 0)
                        } else {
                            let word = (i.req.addr >> 2) as u32 & 0x1ff;
                            match self.pool(
                                i.dst as usize,
                                i.req.op == Op::Write,
                                word,
                                i.req.data as u32,
                            ) {
                                None => (Status::Denied, 0),
                                Some(d) => (Status::Ok, d as u64),
                            }
                        };
                        Completion {
                            dst: src,
                            tag,
                            status,
                            data,
                        }
                    }
                }
            }
        };
        let f = build_frame(
            &self.me(wire::MEMOPS_PORT),
            &from,
            &wire::memops_completion(&c),
        );
        self.counters[counter::MEMOPS_REPLIES] += 1;
        self.send(OutPort::of(side), wire::SRC_MEMOPS, f);
    }

    /// One access to the pool by consumer `c`: `None` for a fault, else the
    /// read data (0 for a write).
    fn pool(&mut self, c: usize, write: bool, vword: u32, wdata: u32) -> Option<u32> {
        let mut i = AvmIn {
            req_valid: 1 << c,
            req_write: (write as u8) << c,
            req_addr: (vword as u64) << (9 * c),
            ..Default::default()
        };
        i.req_wdata[c] = wdata;
        for _ in 0..10_000 {
            let o = self.avm.eval(&i);
            if o.req_ready >> c & 1 != 0 {
                i.req_valid = 0;
            }
            self.avm.tick();
            if o.resp_valid {
                return (!o.resp_fault).then_some(o.resp_data);
            }
        }
        None
    }

    fn avm_write(&mut self, addr: u32, data: u32) {
        let i = AvmIn {
            eng_we: true,
            eng_waddr: (addr >> 2) as u16,
            eng_wdata: data,
            eng_wstrb: 0xf,
            ..Default::default()
        };
        self.avm.eval(&i);
        self.avm.tick();
        // Let a command (a grant zeroes a page: 64 cycles) finish.
        for _ in 0..200 {
            self.avm.eval(&AvmIn::default());
            self.avm.tick();
        }
    }

    /// A register write through AXI4-Lite (full word: the shell has no
    /// strobes). Returns the response the CSR block gives: 0 OKAY, 2
    /// SLVERR, 3 DECERR.
    pub fn write(&mut self, addr: u32, data: u32) -> u8 {
        let Some((_, r)) = MAP.lookup(addr) else {
            return 3;
        };
        if !r.access.writable() {
            return 2;
        }
        let a = addr & !3;
        if a == weft_regs::ctrl::SCRATCH.addr {
            self.scratch = data;
        } else if in_block(a, &net::BLOCK) {
            if let Some(i) = net::RW.iter().position(|x| x.addr == a) {
                self.net[i] = data & net::RW_MASK[i];
            } else if a == net::PACK_SEQ.addr {
                self.seq = data;
            } else if a == net::WT_CMD.addr && data & 1 != 0 {
                let sel = self.reg(&net::WT_SEL);
                let key = ((sel >> 8 & 0xf) as u8, (sel & 0x1f) as u8);
                let hi = self.reg(&net::WT_MAC_HI);
                if hi >> 16 & 1 != 0 {
                    let to = Endpoint {
                        mac: self.mac_at(&net::WT_MAC_HI, &net::WT_MAC_LO),
                        ip: Ipv4Addr::from(self.reg(&net::WT_IP)),
                        port: self.reg(&net::WT_PORT) as u16,
                    };
                    let side = if hi >> 17 & 1 != 0 {
                        Side::Host
                    } else {
                        Side::Wire
                    };
                    self.table.insert(key, (to, side));
                } else {
                    self.table.remove(&key);
                }
            }
        } else if in_block(a, &kv::BLOCK) {
            let cmd = self.kv.write_reg(a, data, 0xf);
            if cmd.reset {
                self.kv.reset();
            }
            if cmd.flush {
                let beats = self.kv.flush();
                self.push_records(&beats);
            }
        } else if in_block(a, &grad::BLOCK) {
            for p in self.grad.write_reg(a, data, 0xf) {
                self.grad_out(p);
            }
        } else if in_block(a, &avm::BLOCK) {
            self.avm_write(a, data);
        } else if in_block(a, &memops::BLOCK) {
            self.memops_write(a, data);
        }
        0
    }

    fn memops_write(&mut self, a: u32, data: u32) {
        if a == memops::CTRL.addr {
            self.memops.enabled = data & 1 != 0;
        } else if a == memops::PROG_ADDR.addr {
            self.mo_prog_addr = data & 0xff;
        } else if a == memops::PROG_DATA.addr {
            let i = self.mo_prog_addr as usize;
            if let Some(w) = self.mo_image.get_mut(i) {
                *w = data;
            }
            self.mo_prog_addr = (self.mo_prog_addr + 1) & 0xff;
            let (enabled, tel) = (self.memops.enabled, self.memops.telemetry.clone());
            self.memops = MemopsModel::new(Program::from_image(&self.mo_image));
            self.memops.enabled = enabled;
            self.memops.telemetry = tel;
        } else if a == memops::TEL_SEL.addr {
            self.mo_tel_sel = data & 0xff;
        } else if a == memops::TEL_CLEAR.addr && data & 1 != 0 {
            self.memops.telemetry = Default::default();
        }
    }

    /// MemOps' telemetry counter `sel` (`TEL_SEL` order).
    fn telemetry(&self, sel: usize) -> u64 {
        let t = &self.memops.telemetry;
        let k = crate::memops::STAGES;
        match sel {
            s if s < k => t.tx[s],
            s if s < 2 * k => t.bytes[s - k],
            s => match s - 2 * k {
                0 => t.issued,
                1 => t.blocked,
                2 => t.denied,
                3 => t.errors,
                4 => t.mirrored,
                _ => 0,
            },
        }
    }

    /// A register read as the card answers it now: `(response, data)`,
    /// with side effects (latching a counter's HI word). The cycle counter
    /// and the record packer's registers (`net.PACK_SEQ`, the counters of
    /// record frames) are the caller's: this returns `None` for them, as
    /// for anything else the model cannot know.
    pub fn read_now(&mut self, addr: u32) -> Option<(u8, u32)> {
        let Some((b, r)) = MAP.lookup(addr) else {
            return Some((3, 0));
        };
        let a = addr & !3;
        if let Some(v) = MAP.const_value(b, r, &self.build) {
            return Some((0, v));
        }
        let ok = |v: u32| Some((0, v));
        if a == weft_regs::ctrl::SCRATCH.addr {
            return ok(self.scratch);
        }
        if a == weft_regs::ctrl::IRQ_TEST.addr {
            return ok(0);
        }
        if in_block(a, &kv::BLOCK) {
            return ok(self.kv.read_reg(a).unwrap_or(0));
        }
        if in_block(a, &grad::BLOCK) {
            return ok(self.grad.read_reg(a).unwrap_or(0));
        }
        if in_block(a, &avm::BLOCK) {
            let o = self.avm.eval(&AvmIn {
                eng_raddr: (a >> 2) as u16,
                eng_re: true,
                ..Default::default()
            });
            self.avm.tick();
            return ok(o.eng_rdata);
        }
        if in_block(a, &memops::BLOCK) {
            let k = crate::memops::STAGES as u32;
            let v = if a == memops::CTRL.addr {
                self.memops.enabled as u32
            } else if a == memops::PROG_ADDR.addr {
                self.mo_prog_addr
            } else if a == memops::PROG_DATA.addr {
                self.mo_image
                    .get(self.mo_prog_addr as usize)
                    .copied()
                    .unwrap_or(0)
            } else if a == memops::TEL_SEL.addr {
                self.mo_tel_sel
            } else if a == memops::TEL_LO.addr {
                let v = self.telemetry(self.mo_tel_sel as usize);
                self.mo_tel_hi = (v >> 32) as u32;
                v as u32
            } else if a == memops::TEL_HI.addr {
                self.mo_tel_hi
            } else if a == memops::GEOMETRY.addr {
                crate::memops::PORTS as u32
                    | k << 8
                    | (crate::memops::RANGES as u32) << 16
                    | (crate::memops::TAGS as u32) << 24
            } else {
                // OUTSTANDING: the model completes every request at once.
                0
            };
            return ok(v);
        }
        if in_block(a, &net::BLOCK) {
            if let Some(i) = net::RW.iter().position(|x| x.addr == a) {
                return ok(self.net[i]);
            }
            if a == net::WT_CMD.addr {
                return ok(0);
            }
            return None;
        }
        None
    }

    /// A register read through AXI4-Lite, where the model can predict it:
    /// `(response, data)`. `None` for registers whose value depends on
    /// timing (cycle counter, engine counters mid-run, AVM snapshots).
    pub fn read(&mut self, addr: u32) -> Option<(u8, u32)> {
        let Some((b, r)) = MAP.lookup(addr) else {
            return Some((3, 0));
        };
        let a = addr & !3;
        if let Some(v) = MAP.const_value(b, r, &self.build) {
            return Some((0, v));
        }
        if a == weft_regs::ctrl::SCRATCH.addr {
            return Some((0, self.scratch));
        }
        if in_block(a, &net::BLOCK) {
            if let Some(i) = net::RW.iter().position(|x| x.addr == a) {
                return Some((0, self.net[i]));
            }
            return None;
        }
        if a == kv::CTRL.addr || a == kv::JOB.addr || a == kv::GEOMETRY.addr {
            return self.kv.read_reg(a).map(|v| (0, v));
        }
        None
    }
}

fn in_block(a: u32, b: &weft_regs::Block) -> bool {
    (b.base..b.base + b.span).contains(&a)
}

/// The payload of the ack the card sends for `a` of `job` (docs/wire.md).
pub fn ack_payload(a: &Ack, job: u16) -> Vec<u8> {
    let mut p = vec![0u8; 16];
    p[0] = kv_agg::packet::VERSION;
    p[1] = wire::KV_FLAG_ACK;
    p[4..6].copy_from_slice(&job.to_le_bytes());
    p[6..8].copy_from_slice(&a.sender.to_le_bytes());
    p[8..12].copy_from_slice(&a.seq.to_le_bytes());
    p[12] = a.status as u8;
    p[13] = a.base;
    p
}

/// The 16-byte header of a record frame (docs/wire.md).
pub fn record_header(flags: u8, n: usize, job: u16, seq: u32) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0] = kv_agg::packet::VERSION;
    h[1] = flags;
    h[2..4].copy_from_slice(&(n as u16).to_le_bytes());
    h[4..6].copy_from_slice(&job.to_le_bytes());
    h[6..8].copy_from_slice(&wire::KV_CARD_SENDER.to_le_bytes());
    h[8..12].copy_from_slice(&seq.to_le_bytes());
    h
}

/// Check the card's record frames (in the order it sent them) against the
/// predicted record stream: every frame is exactly the frame the card
/// builds (`from` to `to`) for its records, with the header of
/// docs/wire.md — RECORDS, FLUSH for drained records, FIN on the frame that
/// ends a flush (its last flush frame, or an empty frame of its own), the
/// job, consecutive sequence numbers from `seq0` (when given) — at most `max` records a
/// frame, spilled and drained records never in one frame, and together they
/// carry exactly the stream.
pub fn check_record_frames(
    frames: &[Vec<u8>],
    want: &[RecItem],
    from: &Endpoint,
    to: &Endpoint,
    job: u16,
    seq0: Option<u32>,
    max: usize,
) -> Result<(), String> {
    let mut at = 0;
    for (k, f) in frames.iter().enumerate() {
        let p = wire::parse_built(f)
            .ok_or(format!("record frame {k} is not a frame the card builds"))?;
        if p.src != *from || p.dst != *to {
            return Err(format!("record frame {k}: from {:?} to {:?}", p.src, p.dst));
        }
        let h = p
            .payload
            .get(..16)
            .ok_or(format!("record frame {k}: short"))?;
        let n = u16::from_le_bytes([h[2], h[3]]) as usize;
        if n > max || p.payload.len() != 16 + 8 * n {
            return Err(format!(
                "record frame {k}: {n} records (max {max}), {} payload bytes",
                p.payload.len()
            ));
        }
        let recs: Vec<(u32, i32)> = p.payload[16..]
            .chunks_exact(8)
            .map(|c| {
                (
                    u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
                    i32::from_le_bytes([c[4], c[5], c[6], c[7]]),
                )
            })
            .collect();
        let mut flush = None;
        for (j, &(key, sum)) in recs.iter().enumerate() {
            match want.get(at) {
                Some(&RecItem::Record { key: k2, sum: s2, flush: f2 }) if (k2, s2) == (key, sum) => {
                    if flush.is_some_and(|f| f != f2) {
                        return Err(format!("record frame {k}: spilled and drained records mixed"));
                    }
                    flush = Some(f2);
                }
                other => {
                    return Err(format!(
                        "record frame {k} record {j}: ({key:#x}, {sum}), the stream has {other:?} at {at}"
                    ))
                }
            }
            at += 1;
        }
        // FIN ends a flush: on its last flush frame, or (when that frame
        // had already left, full) on an empty frame of its own.
        let fin = h[1] & wire::KV_FLAG_FIN != 0;
        if fin {
            if want.get(at) != Some(&RecItem::FlushEnd) || flush == Some(false) {
                return Err(format!("record frame {k}: FIN where no flush ends"));
            }
            at += 1;
        }
        let flags = wire::KV_FLAG_RECORDS
            | if fin || flush == Some(true) {
                wire::KV_FLAG_FLUSH
            } else {
                0
            }
            | if fin { wire::KV_FLAG_FIN } else { 0 };
        let seq = seq0.map_or(u32::from_le_bytes([h[8], h[9], h[10], h[11]]), |s| {
            s.wrapping_add(k as u32)
        });
        let want_h = record_header(flags, n, job, seq);
        if h != want_h {
            return Err(format!(
                "record frame {k}: header {h:02x?}, want {want_h:02x?}"
            ));
        }
        if n == 0 && !fin {
            return Err(format!("record frame {k}: empty and not a flush's end"));
        }
    }
    if at != want.len() {
        return Err(format!(
            "record frames carry {at} of {} stream items (next: {:?})",
            want.len(),
            want.get(at)
        ));
    }
    Ok(())
}
