//! Random mixed traffic for `weft_top`: a configuration of the card (its
//! addresses, collector, fallback, worker table, a MemOps program and a pool
//! page) as register operations, and frames for every engine from both
//! inputs — key-value data with duplicates and reordering, gradient chunks
//! of several jobs, MemOps transactions, frames for other hosts, malformed
//! engine frames and frames whose `tuser_size` lies.
//!
//! The top's three-witness test drives it through rust-hdl, Verilator and
//! the top's model; `weft bench sim` drives it through the simulated card to
//! measure simulation speed under sustained mixed traffic.

use crate::axil::Op;
use crate::grad_agg::packet as gp;
use crate::kv_agg::packet as kp;
use crate::memops::{Action, Program, Range, Stage};
use crate::top_model::InFrame;
use crate::wire::{self, build_frame, Endpoint, Engine as WireEngine, Side};
use rand::seq::SliceRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use weft_regs::{avm, ctrl, grad, id, kv, memops, net};

/// A worker table entry: (job, worker) and its address and side, or none.
pub type WorkerEntry = ((u8, u8), Option<(Endpoint, Side)>);

/// What a case configures.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The card's address.
    pub card: Endpoint,
    /// The key-value collector.
    pub kv_dst: Endpoint,
    /// The gradient fallback.
    pub grad_dst: Endpoint,
    /// Records per record frame.
    pub pack_max: u32,
    /// Cycles a partial record frame waits.
    pub pack_wait: u32,
    /// First record-frame sequence number.
    pub seq0: u32,
    /// The key-value job.
    pub kv_job: u16,
    /// Gradient job priorities (PRIO_LO, PRIO_HI).
    pub prio: [u32; 2],
    /// Worker table entries: (job, worker) → address and side, or invalid.
    pub workers: Vec<WorkerEntry>,
    /// Where each engine's traffic comes from.
    pub kv_side: Side,
    /// Where gradient traffic comes from.
    pub grad_side: Side,
    /// Where MemOps traffic comes from.
    pub memops_side: Side,
}

/// A host on the test network: MAC 02:00:00:00:10:`mac_last`, IP
/// 10.0.0.`ip_last`, UDP port `port`.
pub fn ep(mac_last: u8, ip_last: u8, port: u16) -> Endpoint {
    Endpoint {
        mac: [0x02, 0, 0, 0, 0x10, mac_last],
        ip: Ipv4Addr::new(10, 0, 0, ip_last),
        port,
    }
}

/// The card's own address.
pub fn card_ep() -> Endpoint {
    Endpoint {
        mac: [0x02, 0x57, 0x46, 0x00, 0x00, 0x01],
        ip: Ipv4Addr::new(10, 0, 0, 2),
        port: 0,
    }
}

/// The MemOps program every case loads.
pub fn program() -> Program {
    // Everything to destination 0 (the pool's consumer 0), which permits
    // reads and writes of bytes 0..0x7ff.
    Program {
        stages: vec![Stage {
            src_mask: 0xf,
            ops: 7,
            range: (0, u64::MAX),
            action: Action::Route(0),
        }],
        protect: vec![
            vec![Range {
                lo: 0,
                hi: 0x7ff,
                read: true,
                write: true,
            }],
            vec![],
            vec![],
            vec![],
        ],
    }
}

/// The wire or the host side, at random.
pub fn side(rng: &mut ChaCha8Rng) -> Side {
    if rng.gen_bool(0.5) {
        Side::Wire
    } else {
        Side::Host
    }
}

/// A random configuration: packing, job, priorities, the worker table and
/// which input each engine is fed from.
pub fn setup(rng: &mut ChaCha8Rng) -> Setup {
    let mut workers = vec![];
    for job in 0..4u8 {
        for w in 0..4u8 {
            let e = (!rng.gen_bool(0.1)).then(|| {
                let s = if rng.gen_bool(0.8) {
                    Side::Wire
                } else {
                    Side::Host
                };
                (
                    ep(0x40 + 4 * job + w, 100 + 4 * job + w, 30000 + w as u16),
                    s,
                )
            });
            workers.push(((job, w), e));
        }
    }
    Setup {
        card: card_ep(),
        kv_dst: ep(0xc0, 1, 7000),
        grad_dst: ep(0xc0, 1, 7001),
        pack_max: *[1u32, 5, 8, 9, 30, 182].choose(rng).unwrap(),
        pack_wait: *[0u32, 3, 40, 1000].choose(rng).unwrap(),
        seq0: rng.gen(),
        kv_job: rng.gen_range(0..4),
        prio: [rng.gen::<u32>() & 0xffff, 0],
        workers,
        kv_side: side(rng),
        grad_side: side(rng),
        memops_side: side(rng),
    }
}

/// A whole-word register write.
pub fn w(addr: u32, data: u32) -> Op {
    Op::Write {
        addr,
        data,
        strb: 0xf,
    }
}

/// A register read.
pub fn rd(r: &weft_regs::Register) -> Op {
    Op::Read { addr: r.addr }
}

/// The register writes that configure the card as `s` says.
pub fn config_ops(s: &Setup) -> Vec<Op> {
    let mac = |m: &wire::Mac| wire::mac_regs(m);
    let mut ops = vec![];
    let (hi, lo) = mac(&s.card.mac);
    ops.extend([
        w(net::MAC_HI.addr, hi),
        w(net::MAC_LO.addr, lo),
        w(net::IP.addr, u32::from(s.card.ip)),
    ]);
    for (dst, regs) in [
        (
            &s.kv_dst,
            [net::KV_MAC_HI, net::KV_MAC_LO, net::KV_IP, net::KV_PORT],
        ),
        (
            &s.grad_dst,
            [
                net::GRAD_MAC_HI,
                net::GRAD_MAC_LO,
                net::GRAD_IP,
                net::GRAD_PORT,
            ],
        ),
    ] {
        let (hi, lo) = mac(&dst.mac);
        ops.extend([
            w(regs[0].addr, hi),
            w(regs[1].addr, lo),
            w(regs[2].addr, u32::from(dst.ip)),
            w(regs[3].addr, dst.port as u32),
        ]);
    }
    ops.extend([
        w(net::PACK_MAX.addr, s.pack_max),
        w(net::PACK_WAIT.addr, s.pack_wait),
        w(net::PACK_SEQ.addr, s.seq0),
        w(kv::JOB.addr, s.kv_job as u32),
        w(grad::PRIO_LO.addr, s.prio[0]),
        w(grad::PRIO_HI.addr, s.prio[1]),
    ]);
    for ((job, wk), e) in &s.workers {
        ops.push(w(net::WT_SEL.addr, (*job as u32) << 8 | *wk as u32));
        match e {
            Some((to, side)) => {
                let (hi, lo) = mac(&to.mac);
                let host = (*side == Side::Host) as u32;
                ops.extend([
                    w(net::WT_MAC_HI.addr, hi | 1 << 16 | host << 17),
                    w(net::WT_MAC_LO.addr, lo),
                    w(net::WT_IP.addr, u32::from(to.ip)),
                    w(net::WT_PORT.addr, to.port as u32),
                ]);
            }
            None => ops.push(w(net::WT_MAC_HI.addr, 0)),
        }
        ops.push(w(net::WT_CMD.addr, 1));
    }
    ops.push(w(memops::CTRL.addr, 0));
    for (k, word) in program().image().unwrap().into_iter().enumerate() {
        if word != 0 {
            ops.push(w(memops::PROG_ADDR.addr, k as u32));
            ops.push(w(memops::PROG_DATA.addr, word));
        }
    }
    ops.push(w(memops::CTRL.addr, 1));
    // The pool: consumer 0 gets one page at virtual page 0 (zeroed over 64
    // cycles, which the reads that follow wait out).
    ops.push(w(avm::GROUPS[0][2].addr, 1));
    ops.push(w(
        avm::CMD.addr,
        crate::avm::cmd_word(crate::avm::op::GRANT, 0, 0),
    ));
    for _ in 0..8 {
        ops.push(rd(&avm::STATUS));
    }
    // Engines on last: nothing reaches them half configured.
    ops.push(w(net::CTRL.addr, 1));
    ops
}

/// A UDP frame from `from` to the card's engine `e`.
pub fn to_card(s: &Setup, from: &Endpoint, e: WireEngine, payload: &[u8]) -> Vec<u8> {
    let mut me = s.card;
    me.port = e.port();
    build_frame(from, &me, payload)
}

/// Keys that all fall in slot 0 of every bank, so they collide, evict and
/// spill; the rest of the keys are random.
pub fn colliding_keys() -> &'static Vec<u32> {
    static K: OnceLock<Vec<u32>> = OnceLock::new();
    K.get_or_init(|| {
        (1u32..)
            .filter(|&k| crate::kv_agg::model::slot_of(k, 9) == 0)
            .take(24)
            .collect()
    })
}

/// `n` key-value packets from up to four senders (colliding keys, values
/// near the overflow edge, another job now and then), with duplicates and
/// neighbour swaps.
pub fn kv_packets(rng: &mut ChaCha8Rng, s: &Setup, n: usize) -> Vec<Vec<u8>> {
    kv_packets_after(rng, s, n, &mut BTreeMap::new())
}

/// [`kv_packets`], each sender's sequence numbers going on from `seq`
/// (sender → its next sequence number), which is left updated.
pub fn kv_packets_after(
    rng: &mut ChaCha8Rng,
    s: &Setup,
    n: usize,
    seq: &mut BTreeMap<u16, u32>,
) -> Vec<Vec<u8>> {
    let senders: Vec<u16> = (0..rng.gen_range(1..5)).collect();
    let mut out: Vec<Vec<u8>> = vec![];
    for _ in 0..n {
        let sender = *senders.choose(rng).unwrap();
        let q = seq.entry(sender).or_default();
        let tuples: Vec<(u32, i32)> = (0..rng.gen_range(0..40))
            .map(|_| {
                let k = if rng.gen_bool(0.5) {
                    *colliding_keys().choose(rng).unwrap()
                } else {
                    rng.gen()
                };
                let v = if rng.gen_bool(0.05) {
                    i32::MAX - rng.gen_range(0..3)
                } else {
                    rng.gen_range(-1000..1000)
                };
                (k, v)
            })
            .collect();
        let job = if rng.gen_bool(0.05) {
            s.kv_job ^ 1
        } else {
            s.kv_job
        };
        let h = kp::Header::data(job, sender, *q, tuples.len() as u16);
        *q += 1;
        let from = ep(sender as u8, 50 + sender as u8, 41000 + sender);
        out.push(to_card(s, &from, WireEngine::Kv, &kp::encode(&h, &tuples)));
        // A duplicate now and then, and a swap of neighbours (a reorder
        // well inside the window).
        if rng.gen_bool(0.1) {
            let d = out[rng.gen_range(0..out.len())].clone();
            out.push(d);
        }
        if out.len() > 2 && rng.gen_bool(0.1) {
            let k = out.len();
            out.swap(k - 1, k - 2);
        }
    }
    out
}

/// `chunks` gradient chunks of each of four jobs (1 to 4 workers each),
/// some duplicated, interleaved.
pub fn grad_packets(rng: &mut ChaCha8Rng, s: &Setup, chunks: u32) -> Vec<Vec<u8>> {
    grad_packets_from(rng, s, 0, chunks)
}

/// [`grad_packets`] for chunks `first..first + chunks`.
pub fn grad_packets_from(rng: &mut ChaCha8Rng, s: &Setup, first: u32, chunks: u32) -> Vec<Vec<u8>> {
    let geo = gp::Geometry::CARD;
    let mut out = vec![];
    for job in 0..4u16 {
        let workers = rng.gen_range(1..5u8);
        for chunk in first..first + chunks {
            for wk in 0..workers {
                let h = gp::Header::data(geo, job, chunk, wk, workers);
                let values: Vec<i32> = (0..64).map(|_| rng.gen_range(-5000..5000)).collect();
                let from = ep(0x40 + 4 * job as u8 + wk, 100 + 4 * job as u8 + wk, 30000);
                let p = gp::encode(geo, &h, &values).unwrap();
                out.push(to_card(s, &from, WireEngine::Grad, &p));
                if rng.gen_bool(0.05) {
                    out.push(out.last().unwrap().clone());
                }
            }
        }
    }
    // Interleave the jobs and workers (each worker's chunks stay ordered
    // enough for slots to fill).
    for i in (1..out.len()).rev() {
        if rng.gen_bool(0.3) {
            out.swap(i, i - 1);
        }
    }
    out
}

/// `n` MemOps transactions, some refused by the program, the pool or as
/// malformed.
pub fn memops_packets(rng: &mut ChaCha8Rng, s: &Setup, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let mut p = vec![0u8; if rng.gen_bool(0.8) { 24 } else { 64 }];
            p[0] = rng.gen_range(0..4);
            p[1] = *[0u8, 0, 1, 1, 2].choose(rng).unwrap();
            p[2] = 4;
            p[3] = i as u8;
            let addr: u64 = match rng.gen_range(0..10) {
                0 => 0x1000,   // not permitted by the program
                1 => 0x400,    // a page of the pool not granted
                2 => 0x40 + 6, // crosses an 8-byte word: malformed
                _ => 4 * rng.gen_range(0..64),
            };
            p[8..16].copy_from_slice(&addr.to_le_bytes());
            p[16..24].copy_from_slice(&rng.gen::<u64>().to_le_bytes());
            let from = ep(0x80 + (i % 4) as u8, 80, 42000 + i as u16);
            to_card(s, &from, WireEngine::Memops, &p)
        })
        .collect()
}

/// Frames that are not for an engine, or for one but malformed.
pub fn other_frames(rng: &mut ChaCha8Rng, s: &Setup, n: usize) -> Vec<InFrame> {
    (0..n)
        .map(|_| {
            let e = [WireEngine::Kv, WireEngine::Grad, WireEngine::Memops][rng.gen_range(0..3)];
            let payload: Vec<u8> = (0..rng.gen_range(16..200)).map(|_| rng.gen()).collect();
            let mut f = to_card(s, &ep(9, 9, 9), e, &payload);
            match rng.gen_range(0..12) {
                0 => f[33] ^= 1,          // another IP
                1 => f[5] ^= 1,           // another MAC
                2 => f[37] ^= 0x10,       // another port
                3 => f[20] |= 0x20,       // a fragment
                4 => f[25] ^= 1,          // a bad checksum
                5 => f[17] ^= 4,          // a wrong IP length
                6 => f[14] = 0x46,        // IP options
                7 => f[12] = 0x08 + 0x80, // not IPv4
                8 => {
                    // Random bytes of any length.
                    f = (0..rng.gen_range(1..300)).map(|_| rng.gen()).collect();
                }
                9 => {
                    // A size that lies, or one out of range.
                    let size = match rng.gen_range(0..3) {
                        0 => f.len() as u16 + 64,
                        1 => 0,
                        _ => f.len().saturating_sub(64).max(1) as u16,
                    };
                    return InFrame { bytes: f, size };
                }
                _ => f[0..6].copy_from_slice(&wire::BROADCAST),
            }
            InFrame::new(f)
        })
        .collect()
}

/// Frames for the two inputs.
pub struct Traffic {
    /// For the network receive stream (the wire).
    pub rx: Vec<InFrame>,
    /// For the host-to-card stream.
    pub h2c: Vec<InFrame>,
}

/// Merge `fs` into `to` at random places, keeping both orders.
pub fn merge_into(rng: &mut ChaCha8Rng, to: &mut Vec<InFrame>, fs: Vec<InFrame>) {
    let mut merged = Vec::with_capacity(to.len() + fs.len());
    let mut a = std::mem::take(to).into_iter().peekable();
    let mut b = fs.into_iter().peekable();
    while a.peek().is_some() || b.peek().is_some() {
        let take_a = b.peek().is_none() || (a.peek().is_some() && rng.gen_bool(0.5));
        merged.extend(if take_a { a.next() } else { b.next() });
    }
    *to = merged;
}

/// Traffic of about `size` key-value packets with gradient chunks, MemOps
/// transactions and other frames in proportion, each engine's on the
/// input `s` names, other frames on both.
pub fn traffic(rng: &mut ChaCha8Rng, s: &Setup, size: usize) -> Traffic {
    traffic_after(rng, s, size, &mut BTreeMap::new(), &mut 0)
}

/// [`traffic`], key-value sequence numbers going on from `kv_seq` and
/// gradient chunk numbers from `chunk` (both left updated), so that batch
/// after batch is new traffic for the engines rather than stale copies.
pub fn traffic_after(
    rng: &mut ChaCha8Rng,
    s: &Setup,
    size: usize,
    kv_seq: &mut BTreeMap<u16, u32>,
    chunk: &mut u32,
) -> Traffic {
    let mut t = Traffic {
        rx: vec![],
        h2c: vec![],
    };
    let frames = |v: Vec<Vec<u8>>| v.into_iter().map(InFrame::new).collect::<Vec<_>>();
    let kvs = frames(kv_packets_after(rng, s, size, kv_seq));
    let chunks = (size / 16).max(1) as u32;
    let grads = frames(grad_packets_from(rng, s, *chunk, chunks));
    *chunk += chunks;
    let mos = frames(memops_packets(rng, s, size / 2));
    let o1 = other_frames(rng, s, size / 3);
    let o2 = other_frames(rng, s, size / 3);
    for (side, fs) in [
        (s.kv_side, kvs),
        (s.grad_side, grads),
        (s.memops_side, mos),
        (Side::Wire, o1),
        (Side::Host, o2),
    ] {
        let to = match side {
            Side::Wire => &mut t.rx,
            Side::Host => &mut t.h2c,
        };
        merge_into(rng, to, fs);
    }
    t
}

/// Register accesses during traffic whose results do not depend on timing.
pub fn traffic_ops(rng: &mut ChaCha8Rng, n: usize) -> Vec<Op> {
    (0..n)
        .map(|_| match rng.gen_range(0..7) {
            0 => w(ctrl::SCRATCH.addr, rng.gen()),
            1 => rd(&ctrl::SCRATCH),
            2 => rd(&id::MAGIC),
            3 => rd(&id::FEATURES),
            4 => rd(&net::IP),
            5 => w(id::MAGIC.addr, 0),
            _ => Op::Read {
                addr: 0xFF00 + 4 * rng.gen_range(0..16),
            },
        })
        .collect()
}

/// Traffic without end, for long runs: a [`setup`] and batch after batch
/// of [`traffic`], key-value sequence numbers and gradient chunk numbers
/// going on from batch to batch.
pub struct Sustained {
    rng: ChaCha8Rng,
    setup: Setup,
    kv_seq: BTreeMap<u16, u32>,
    chunk: u32,
}

impl Sustained {
    /// Traffic seeded by `seed`.
    pub fn new(seed: u64) -> Self {
        let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
        let setup = setup(&mut rng);
        Self {
            rng,
            setup,
            kv_seq: BTreeMap::new(),
            chunk: 0,
        }
    }

    /// The configuration the traffic is for ([`config_ops`] writes it).
    pub fn setup(&self) -> &Setup {
        &self.setup
    }

    /// The next batch, of about `size` key-value packets and the rest in
    /// proportion (see [`traffic`]).
    pub fn batch(&mut self, size: usize) -> Traffic {
        traffic_after(
            &mut self.rng,
            &self.setup,
            size,
            &mut self.kv_seq,
            &mut self.chunk,
        )
    }
}
