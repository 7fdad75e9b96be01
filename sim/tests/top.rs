//! `weft_top` — the card that is flashed — through its three witnesses:
//! rust-hdl and Verilator (which must agree on every output of every step,
//! both clocks at the box ratio) and the top's reference model
//! (`weft_model::top_model`), which predicts every frame the card sends.
//!
//! A case configures the card through AXI4-Lite (its addresses, the
//! collector, the fallback, the worker table, a MemOps program, a pool
//! page), then offers random mixed traffic on both inputs — key-value data
//! with duplicates and reordering, gradient chunks from several jobs,
//! MemOps transactions, frames for other hosts, malformed engine frames,
//! frames whose `tuser_size` lies — with random bubbles, random
//! back-pressure and long stalls on both outputs, and register accesses
//! across the clock crossing throughout; then flushes both engines, reads
//! every counter, and waits until nothing has moved for a while, so a stray
//! late frame fails the case. Every frame out is checked against the model
//! per stream, every frame the card built against `etherparse` and the
//! registers, and every counter against the model.
//!
//! Each engine is fed from one input per case (chosen at random), because
//! the order in which an engine sees frames from both inputs is the merges'
//! business; `both_inputs_into_one_engine` covers that case with
//! order-free checks.

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use weft_model::axil::{AxilMaster, MasterSignals, Op, SlaveSignals, Timing, DECERR};
use weft_model::grad_agg::packet as gp;
use weft_model::kv_agg::packet as kp;
use weft_model::stall::Stalls;
use weft_model::steer::{from_bytes, kept_bytes};
use weft_model::top::{box_schedule, TopIn, TopOut};
use weft_model::top_model::{check_record_frames, counter, InFrame, OutPort, RecItem, TopModel};
use weft_model::top_traffic::*;
use weft_model::wire::{self, Endpoint, Engine as WireEngine, Side};
use weft_model::{Driver, Schedule};
use weft_regs::{grad, kv, net};
use weft_sim::simulator::{verilator_usable, Simulators};
use weft_sim::witness::{check_pair, run_all, Factory};

const RESET_STEPS: u64 = 16;
/// Steps with nothing moving after which a phase is over.
const QUIET: u64 = 400;

/// The responses a phase's register operations must get (`None`: not
/// predictable).
type Responses = Vec<Option<(u8, u32)>>;

// --------------------------------------------------------------- driver

/// One frame source on an input.
#[derive(Clone, Default)]
struct Source {
    frames: VecDeque<InFrame>,
    beat: usize,
    shown: bool,
}

impl Source {
    fn beat(&self) -> Option<([u32; 16], u64, bool, u16)> {
        let f = self.frames.front()?;
        let at = 64 * self.beat;
        let n = (f.bytes.len() - at).min(64);
        let keep = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        Some((
            from_bytes(&f.bytes[at..at + n]),
            keep,
            at + n == f.bytes.len(),
            f.size,
        ))
    }

    fn take(&mut self, last: bool) {
        self.shown = false;
        if last {
            self.frames.pop_front();
            self.beat = 0;
        } else {
            self.beat += 1;
        }
    }
}

/// A frame as the card sent it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Got {
    bytes: Vec<u8>,
    size: u16,
    src: u16,
    dst: u16,
}

/// Back-pressure on one output (seeded): independent stalls with
/// probability `p`, long ones starting with probability `long`, the first
/// `left` cycles stalled.
fn stalls(seed: u64, p: f64, long: f64, left: u32) -> Stalls {
    let mut s = Stalls::new(seed, p, long);
    s.left = left;
    s
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Config,
    Traffic,
    Flush,
    Counters,
    Drain,
    Done,
}

/// Knobs of a case.
#[derive(Clone)]
struct Knobs {
    bubble: f64,
    c2h: Stalls,
    tx: Stalls,
    axil: Timing,
    /// Start the flush while traffic still flows.
    flush_early: bool,
}

struct TopDriver {
    schedule: Schedule,
    step: u64,
    rng: ChaCha8Rng,
    knobs: Knobs,
    phase: Phase,
    quiet: u64,
    m0: AxilMaster,
    m1: AxilMaster,
    s0: MasterSignals,
    s1: MasterSignals,
    /// Register operations per phase, and their completions.
    phase_ops: Vec<Vec<Op>>,
    done_ops: Vec<Vec<weft_model::axil::Completion>>,
    rx: Source,
    h2c: Source,
    c2h: Vec<Got>,
    tx: Vec<Got>,
    cur_c2h: Vec<u8>,
    cur_tx: Vec<u8>,
    done_seen_at: Option<u64>,
    early_handshake: bool,
    fin_seen: bool,
    in_beats: u64,
    /// Steps an input offered a beat the card did not take (after reset).
    in_stalls: u64,
    /// Steps from the first to the last input beat taken.
    first_in: Option<u64>,
    last_in: u64,
}

fn slave(o: &TopOut, k: usize) -> SlaveSignals {
    SlaveSignals {
        awready: o.s_axil_awready >> k & 1 != 0,
        wready: o.s_axil_wready >> k & 1 != 0,
        bresp: (o.s_axil_bresp >> (2 * k)) & 3,
        bvalid: o.s_axil_bvalid >> k & 1 != 0,
        arready: o.s_axil_arready >> k & 1 != 0,
        rdata: (o.s_axil_rdata >> (32 * k)) as u32,
        rresp: (o.s_axil_rresp >> (2 * k)) & 3,
        rvalid: o.s_axil_rvalid >> k & 1 != 0,
    }
}

impl TopDriver {
    fn next_phase(&mut self) {
        let c = self
            .m0
            .completions()
            .iter()
            .map(|c| c.expect("completed"))
            .collect();
        self.done_ops.push(c);
        self.phase = match self.phase {
            Phase::Config => Phase::Traffic,
            Phase::Traffic => Phase::Flush,
            Phase::Flush => Phase::Counters,
            Phase::Counters => Phase::Drain,
            _ => Phase::Done,
        };
        let k = self.done_ops.len();
        let ops = self.phase_ops.get(k).cloned().unwrap_or_default();
        self.m0 = AxilMaster::new(ops, self.knobs.axil, self.rng.gen(), true);
        self.quiet = 0;
    }
}

impl Driver<TopIn, TopOut> for TopDriver {
    fn drive(&mut self) -> TopIn {
        if self.schedule.rises("axil_aclk", self.step) {
            self.s0 = self.m0.drive();
            self.s1 = self.m1.drive();
        }
        let (a, b) = (&self.s0, &self.s1);
        let bit = |x: bool, y: bool| u8::from(x) | u8::from(y) << 1;
        let mut i = TopIn {
            s_axil_awvalid: bit(a.awvalid, b.awvalid),
            s_axil_awaddr: a.awaddr as u64 | (b.awaddr as u64) << 32,
            s_axil_wvalid: bit(a.wvalid, b.wvalid),
            s_axil_wdata: a.wdata as u64 | (b.wdata as u64) << 32,
            s_axil_bready: bit(a.bready, b.bready),
            s_axil_arvalid: bit(a.arvalid, b.arvalid),
            s_axil_araddr: a.araddr as u64 | (b.araddr as u64) << 32,
            s_axil_rready: bit(a.rready, b.rready),
            m_axis_qdma_c2h_tready: self.knobs.c2h.ready(),
            m_axis_adap_tx_250mhz_tready: self.knobs.tx.ready(),
            mod_rstn: self.step >= RESET_STEPS,
            ..Default::default()
        };
        let flowing =
            self.phase == Phase::Traffic || (self.knobs.flush_early && self.phase != Phase::Config);
        if flowing {
            for (src, rx) in [(&mut self.rx, true), (&mut self.h2c, false)] {
                if !src.shown {
                    src.shown = !self.rng.gen_bool(self.knobs.bubble);
                }
                let Some((d, k, l, z)) = src.beat().filter(|_| src.shown) else {
                    continue;
                };
                if rx {
                    i.s_axis_adap_rx_250mhz_tdata = d;
                    i.s_axis_adap_rx_250mhz_tkeep = k;
                    i.s_axis_adap_rx_250mhz_tlast = l;
                    i.s_axis_adap_rx_250mhz_tvalid = true;
                    i.s_axis_adap_rx_250mhz_tuser_size = z;
                } else {
                    i.s_axis_qdma_h2c_tdata = d;
                    i.s_axis_qdma_h2c_tkeep = k;
                    i.s_axis_qdma_h2c_tlast = l;
                    i.s_axis_qdma_h2c_tvalid = true;
                    i.s_axis_qdma_h2c_tuser_size = z;
                }
            }
        }
        i
    }

    fn observe(&mut self, i: &TopIn, o: &TopOut) {
        if self.schedule.rises("axil_aclk", self.step) {
            self.m0.observe(&self.s0, &slave(o, 0));
            self.m1.observe(&self.s1, &slave(o, 1));
        }
        if o.mod_rst_done && self.done_seen_at.is_none() {
            self.done_seen_at = Some(self.step);
        }
        let rx_take = i.s_axis_adap_rx_250mhz_tvalid && o.s_axis_adap_rx_250mhz_tready;
        let h2c_take = i.s_axis_qdma_h2c_tvalid && o.s_axis_qdma_h2c_tready;
        if self.step < RESET_STEPS
            && (o.s_axis_adap_rx_250mhz_tready
                || o.s_axis_qdma_h2c_tready
                || o.m_axis_qdma_c2h_tvalid
                || o.m_axis_adap_tx_250mhz_tvalid)
        {
            self.early_handshake = true;
        }
        if rx_take {
            self.rx.take(i.s_axis_adap_rx_250mhz_tlast);
        }
        if h2c_take {
            self.h2c.take(i.s_axis_qdma_h2c_tlast);
        }
        self.in_beats += rx_take as u64 + h2c_take as u64;
        if rx_take || h2c_take {
            self.first_in.get_or_insert(self.step);
            self.last_in = self.step;
        }
        if self.step >= RESET_STEPS
            && ((i.s_axis_adap_rx_250mhz_tvalid && !o.s_axis_adap_rx_250mhz_tready)
                || (i.s_axis_qdma_h2c_tvalid && !o.s_axis_qdma_h2c_tready))
        {
            self.in_stalls += 1;
        }
        let mut moved = rx_take || h2c_take;
        if o.m_axis_qdma_c2h_tvalid && i.m_axis_qdma_c2h_tready {
            moved = true;
            self.cur_c2h.extend(kept_bytes(
                &o.m_axis_qdma_c2h_tdata,
                o.m_axis_qdma_c2h_tkeep,
            ));
            if o.m_axis_qdma_c2h_tlast {
                let g = Got {
                    bytes: std::mem::take(&mut self.cur_c2h),
                    size: o.m_axis_qdma_c2h_tuser_size,
                    src: o.m_axis_qdma_c2h_tuser_src,
                    dst: o.m_axis_qdma_c2h_tuser_dst,
                };
                if g.src == wire::SRC_KV_RECORDS
                    && g.bytes.get(43)
                        == Some(&(wire::KV_FLAG_RECORDS | wire::KV_FLAG_FLUSH | wire::KV_FLAG_FIN))
                {
                    self.fin_seen = true;
                }
                self.c2h.push(g);
            }
        }
        if o.m_axis_adap_tx_250mhz_tvalid && i.m_axis_adap_tx_250mhz_tready {
            moved = true;
            self.cur_tx.extend(kept_bytes(
                &o.m_axis_adap_tx_250mhz_tdata,
                o.m_axis_adap_tx_250mhz_tkeep,
            ));
            if o.m_axis_adap_tx_250mhz_tlast {
                self.tx.push(Got {
                    bytes: std::mem::take(&mut self.cur_tx),
                    size: o.m_axis_adap_tx_250mhz_tuser_size,
                    src: o.m_axis_adap_tx_250mhz_tuser_src,
                    dst: o.m_axis_adap_tx_250mhz_tuser_dst,
                });
            }
        }
        // Quiet: nothing taken, nothing offered on an output (a stalled
        // output with a frame waiting is not quiet).
        let busy = moved || o.m_axis_qdma_c2h_tvalid || o.m_axis_adap_tx_250mhz_tvalid;
        self.quiet = if busy { 0 } else { self.quiet + 1 };
        self.step += 1;
        if self.step < RESET_STEPS + 16 || !self.m0.finished() {
            return;
        }
        let inputs_done = self.rx.frames.is_empty() && self.h2c.frames.is_empty();
        let advance = match self.phase {
            Phase::Config => true,
            Phase::Traffic => inputs_done && self.quiet >= QUIET,
            Phase::Flush => {
                (self.fin_seen || self.knobs.flush_early) && inputs_done && self.quiet >= QUIET
            }
            Phase::Counters => true,
            Phase::Drain => self.quiet >= QUIET,
            Phase::Done => false,
        };
        if advance {
            self.next_phase();
        }
    }

    fn finished(&self) -> bool {
        self.phase == Phase::Done && self.m1.finished()
    }
}

// ----------------------------------------------------------------- runs

fn counter_ops() -> Vec<Op> {
    net::COUNTERS.iter().map(rd).collect()
}

fn flush_ops() -> Vec<Op> {
    vec![
        w(kv::CMD.addr, kv::CMD_FLUSH.set(0, 1)),
        w(grad::CMD.addr, grad::CMD_FLUSH.set(0, 1)),
    ]
}

struct Case {
    setup: Setup,
    traffic: Traffic,
    ops: Vec<Vec<Op>>,
    knobs: Knobs,
    seed: u64,
}

fn case(seed: u64, size: usize, knobs: Knobs) -> Case {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let s = setup(&mut rng);
    let t = traffic(&mut rng, &s, size);
    let ops = vec![
        config_ops(&s),
        traffic_ops(&mut rng, 12),
        flush_ops(),
        counter_ops(),
        vec![],
    ];
    Case {
        setup: s,
        traffic: t,
        ops,
        knobs,
        seed,
    }
}

fn make_driver(c: &Case) -> TopDriver {
    TopDriver {
        schedule: box_schedule(),
        step: 0,
        rng: ChaCha8Rng::seed_from_u64(c.seed ^ 0x5eed),
        knobs: c.knobs.clone(),
        phase: Phase::Config,
        quiet: 0,
        m0: AxilMaster::new(c.ops[0].clone(), c.knobs.axil, c.seed, true),
        m1: AxilMaster::new(
            vec![
                w(0x10, 1),
                Op::Read { addr: 0x10 },
                Op::Read { addr: 0x700 },
            ],
            Timing::EAGER,
            c.seed ^ 2,
            true,
        ),
        s0: MasterSignals::default(),
        s1: MasterSignals::default(),
        phase_ops: c.ops.clone(),
        done_ops: vec![],
        rx: Source {
            frames: c.traffic.rx.clone().into(),
            ..Default::default()
        },
        h2c: Source {
            frames: c.traffic.h2c.clone().into(),
            ..Default::default()
        },
        c2h: vec![],
        tx: vec![],
        cur_c2h: vec![],
        cur_tx: vec![],
        done_seen_at: None,
        early_handshake: false,
        fin_seen: false,
        in_beats: 0,
        in_stalls: 0,
        first_in: None,
        last_in: 0,
    }
}

/// The model's prediction for a case, and the responses it predicts for
/// every register operation (`None` where the value depends on timing).
fn predict(c: &Case) -> (TopModel, Vec<Responses>) {
    let mut m = TopModel::new(weft_hdl::build_info::top_build());
    m.set_program(program());
    let mut resp = vec![];
    let run_ops = |m: &mut TopModel, ops: &[Op]| -> Responses {
        ops.iter()
            .map(|op| match *op {
                Op::Write { addr, data, .. } => Some((m.write(addr, data), 0)),
                Op::Read { addr } => m.read(addr),
            })
            .collect()
    };
    resp.push(run_ops(&mut m, &c.ops[0]));
    for f in &c.traffic.rx {
        m.frame(Side::Wire, f);
    }
    for f in &c.traffic.h2c {
        m.frame(Side::Host, f);
    }
    resp.push(run_ops(&mut m, &c.ops[1]));
    resp.push(run_ops(&mut m, &c.ops[2]));
    // Counter reads come from the counters at the end.
    resp.push(vec![None; c.ops[3].len()]);
    (m, resp)
}

/// Check one frame the card built with `etherparse`: Ethernet II, IPv4
/// with a correct header checksum, UDP, lengths, and the card's addresses
/// as source.
fn parse_check(g: &Got, card: &Endpoint) -> Result<(), String> {
    let p = SlicedPacket::from_ethernet(&g.bytes).map_err(|e| format!("etherparse: {e}"))?;
    let eth = p
        .link
        .as_ref()
        .and_then(|l| l.to_header())
        .ok_or("no Ethernet header")?;
    let eth = match eth {
        etherparse::LinkHeader::Ethernet2(e) => e,
        _ => return Err("not Ethernet II".into()),
    };
    if eth.source != card.mac {
        return Err(format!("source MAC {:02x?}", eth.source));
    }
    let Some(NetSlice::Ipv4(ip)) = &p.net else {
        return Err("not IPv4".into());
    };
    let h = ip.header().to_header();
    if h.header_checksum != h.calc_header_checksum() {
        return Err("bad IPv4 header checksum".into());
    }
    if Ipv4Addr::from(h.source) != card.ip || h.time_to_live != wire::TTL || !h.dont_fragment {
        return Err(format!("IPv4 header {h:?}"));
    }
    let Some(TransportSlice::Udp(udp)) = &p.transport else {
        return Err("not UDP".into());
    };
    if udp.length() as usize != 8 + udp.payload().len() || udp.checksum() != 0 {
        return Err("UDP length or checksum".into());
    }
    if ![wire::KV_PORT, wire::GRAD_PORT, wire::MEMOPS_PORT].contains(&udp.source_port()) {
        return Err(format!("UDP source port {}", udp.source_port()));
    }
    Ok(())
}

fn check_run(c: &Case, d: &TopDriver, witness: &str) -> Result<(), String> {
    let (m, resp) = predict(c);
    let err = |s: String| format!("{witness}: {s}");
    if d.early_handshake {
        return Err(err("a stream moved during reset".into()));
    }
    let done = d
        .done_seen_at
        .ok_or_else(|| err("mod_rst_done never rose".into()))?;
    if !(RESET_STEPS + 2..RESET_STEPS + 12).contains(&done) {
        return Err(err(format!("mod_rst_done at step {done}")));
    }
    for cpl in d.m1.completions() {
        if cpl.map(|c| c.resp) != Some(DECERR) {
            return Err(err("AXI4-Lite interface 1 did not answer DECERR".into()));
        }
    }
    // Register operations, phase by phase.
    for (k, (got, want)) in d.done_ops.iter().zip(&resp).enumerate() {
        for (j, (g, w)) in got.iter().zip(want).enumerate() {
            if let Some((resp, data)) = w {
                let data_matters = matches!(g.op, Op::Read { .. });
                if g.resp != *resp || (data_matters && g.data != *data) {
                    return Err(err(format!(
                        "phase {k} op {j} {:?}: got ({}, {:#x}), want ({resp}, {data:#x})",
                        g.op, g.resp, g.data
                    )));
                }
            }
        }
    }
    // Every output frame: tuser_size is its length; on the wire, CMAC 0.
    for (port, frames) in [(OutPort::C2h, &d.c2h), (OutPort::Tx, &d.tx)] {
        for g in frames.iter() {
            if g.size as usize != g.bytes.len() {
                return Err(err(format!(
                    "{port:?}: tuser_size {} for {} bytes",
                    g.size,
                    g.bytes.len()
                )));
            }
            let want_dst = if port == OutPort::Tx { wire::TX_DST } else { 0 };
            if g.dst != want_dst {
                return Err(err(format!("{port:?}: tuser_dst {:#x}", g.dst)));
            }
            if g.src != wire::SRC_PASS {
                parse_check(g, &c.setup.card)
                    .map_err(|e| err(format!("{port:?} frame of stream {:#x}: {e}", g.src)))?;
            }
        }
    }
    // Streams against the model.
    let mut got: BTreeMap<(OutPort, u16), Vec<Vec<u8>>> = BTreeMap::new();
    for (port, frames) in [(OutPort::C2h, &d.c2h), (OutPort::Tx, &d.tx)] {
        for g in frames.iter() {
            got.entry((port, g.src)).or_default().push(g.bytes.clone());
        }
    }
    let records = got
        .remove(&(OutPort::C2h, wire::SRC_KV_RECORDS))
        .unwrap_or_default();
    let streams: BTreeSet<(OutPort, u16)> = got.keys().chain(m.out.keys()).copied().collect();
    for s in streams {
        let g = got.get(&s).map(Vec::as_slice).unwrap_or(&[]);
        let wnt = m.out.get(&s).map(Vec::as_slice).unwrap_or(&[]);
        if g != wnt {
            let at = g
                .iter()
                .zip(wnt)
                .position(|(a, b)| a != b)
                .unwrap_or(g.len().min(wnt.len()));
            return Err(err(format!(
                "{:?} stream {:#06x}: {} frames, the model {} (first difference at frame {at}: got {:02x?}, want {:02x?})",
                s.0,
                s.1,
                g.len(),
                wnt.len(),
                g.get(at).map(|f| &f[..f.len().min(80)]),
                wnt.get(at).map(|f| &f[..f.len().min(80)]),
            )));
        }
    }
    let mut me = c.setup.card;
    me.port = wire::KV_PORT;
    check_record_frames(
        &records,
        &m.records,
        &me,
        &c.setup.kv_dst,
        c.setup.kv_job,
        Some(c.setup.seq0),
        m.pack_max(),
    )
    .map_err(err)?;
    // Counters: the model's, plus the record frames it leaves to the card.
    let mut want = m.counters;
    want[counter::KV_RECORD_FRAMES] += records.len() as u64;
    want[counter::C2H_FRAMES] += records.len() as u64;
    let reads = d
        .done_ops
        .get(3)
        .ok_or_else(|| err("no counter reads".into()))?;
    for (k, name) in net::COUNTER_NAMES.iter().enumerate() {
        let v = reads[2 * k].data as u64 | (reads[2 * k + 1].data as u64) << 32;
        if v != want[k] {
            return Err(err(format!("counter {name}: {v}, the model {}", want[k])));
        }
    }
    // The case did what it meant to: records flowed, every stream of the
    // card was exercised at least once in aggregate (checked by callers).
    if !m.records.iter().any(|r| matches!(r, RecItem::FlushEnd)) {
        return Err(err("the flush did not end in the model".into()));
    }
    Ok(())
}

type Engines = Simulators<weft_hdl::top::WeftTop>;

fn engines() -> &'static Engines {
    static E: OnceLock<Engines> = OnceLock::new();
    E.get_or_init(|| {
        weft_hdl::emit::on_big_stack(|| {
            let build = weft_hdl::build_info::top_build();
            Simulators::prepare("weft_top", move || weft_hdl::emit::top(&build))
                .and_then(|s| s.with_schedule(box_schedule()))
                .expect("weft_top builds on both simulators")
        })
    })
}

/// Run a case on the witnesses asked for (rust-hdl and/or Verilator),
/// compare them step by step, and check each against the model.
fn run_case(c: &Case, rust_hdl: bool) -> Result<Vec<(String, u64, f64)>, String> {
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let mut f: Vec<Factory<'_, TopIn, TopOut>> = e.witnesses(None);
        if !rust_hdl && e.vl.is_some() {
            // rust-hdl simulates the whole top at a few hundred steps a
            // second: only the small cases run it (and every case when
            // Verilator is not installed).
            drop(f.remove(0));
        }
        let make = || make_driver(c);
        let limit = 400_000 + 60 * c.traffic.rx.len() as u64 + 60 * c.traffic.h2c.len() as u64;
        let runs = run_all(&f, &make, limit)?;
        if runs.len() == 2 {
            check_pair(&f, &runs, 0, 1, &make)?;
        }
        let mut out = vec![];
        for r in &runs {
            check_run(c, &r.driver, &r.witness)?;
            let mut per: BTreeMap<(char, u16), usize> = BTreeMap::new();
            for g in &r.driver.c2h {
                *per.entry(('h', g.src)).or_default() += 1;
            }
            for g in &r.driver.tx {
                *per.entry(('w', g.src)).or_default() += 1;
            }
            eprintln!(
                "{}: {} steps, {} input beats; frames out per (port, stream): {per:x?}",
                r.witness, r.run.cycles, r.driver.in_beats
            );
            out.push((
                r.witness.clone(),
                r.run.cycles,
                r.run.cycles as f64 / r.elapsed.as_secs_f64(),
            ));
        }
        Ok(out)
    })
}

fn knobs(rng: &mut ChaCha8Rng) -> Knobs {
    Knobs {
        bubble: rng.gen_range(0.0..0.5),
        c2h: stalls(
            rng.gen(),
            rng.gen_range(0.0..0.6),
            rng.gen_range(0.0..0.01),
            0,
        ),
        tx: stalls(
            rng.gen(),
            rng.gen_range(0.0..0.6),
            rng.gen_range(0.0..0.01),
            0,
        ),
        axil: Timing {
            bubble: rng.gen_range(0.0..0.5),
            stall: rng.gen_range(0.0..0.5),
        },
        flush_early: false,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(6), ..ProptestConfig::default() })]

    /// Random mixed traffic with back-pressure everywhere: Verilator and
    /// the model.
    #[test]
    fn random_traffic_matches_the_model(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let c = case(seed, 60, knobs(&mut rng));
        let r = run_case(&c, false).map_err(TestCaseError::fail)?;
        eprintln!("seed {seed:#x}: {r:?}");
    }
}

/// All three witnesses (rust-hdl is slow on the top, so one small case).
#[test]
fn rust_hdl_verilator_and_the_model_agree() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let c = case(7, 12, knobs(&mut rng));
    let r = run_case(&c, true).unwrap();
    eprintln!("{r:?}");
}

/// Every kind of frame interleaved back to back at line rate, both outputs
/// always ready.
#[test]
fn line_rate_mixed_traffic() {
    run_case(&case(11, 120, line_rate_knobs()), false).unwrap();
}

/// The host port stalled for long stretches (and the wire often): nothing
/// is lost, nothing reordered within a stream.
#[test]
fn long_stalls_on_the_host_port() {
    let k = Knobs {
        bubble: 0.1,
        c2h: stalls(3, 0.3, 0.02, 2000),
        tx: stalls(4, 0.5, 0.005, 0),
        axil: Timing::EAGER,
        flush_early: false,
    };
    run_case(&case(12, 60, k), false).unwrap();
}

/// Run one case on Verilator and describe where it stands when it stops
/// (for diagnosing a hang: `WEFT_TOP_SEED=… cargo test --test top -- --ignored --nocapture`).
#[test]
#[ignore]
fn describe_a_case() {
    let seed: u64 = std::env::var("WEFT_TOP_SEED").unwrap().parse().unwrap();
    let size: usize = std::env::var("WEFT_TOP_SIZE").map_or(60, |s| s.parse().unwrap());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let k = knobs(&mut rng);
    let c = case(seed, size, k);
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let mut dut = e.vl.as_ref().unwrap().instantiate(None).unwrap();
        let mut d = make_driver(&c);
        let r = weft_model::run(dut.as_mut(), &mut d, 100_000);
        eprintln!(
            "run: {:?}; phase {:?}, quiet {}, rx left {}, h2c left {}, m0 finished {}, m1 finished {}, fin {}, c2h {}, tx {}, done ops {}",
            r.map(|r| r.cycles),
            d.phase,
            d.quiet,
            d.rx.frames.len(),
            d.h2c.frames.len(),
            d.m0.finished(),
            d.m1.finished(),
            d.fin_seen,
            d.c2h.len(),
            d.tx.len(),
            d.done_ops.len()
        );
        let recs: Vec<&Got> = d
            .c2h
            .iter()
            .filter(|g| g.src == wire::SRC_KV_RECORDS)
            .collect();
        for g in recs.iter().rev().take(4) {
            eprintln!(
                "record frame: flags {:#x} count {}",
                g.bytes[43],
                u16::from_le_bytes([g.bytes[44], g.bytes[45]])
            );
        }
        let (m, _) = predict(&c);
        let n = m
            .records
            .iter()
            .filter(|r| matches!(r, RecItem::Record { .. }))
            .count();
        eprintln!(
            "model: {n} records, pack_max {}, wait {}",
            m.pack_max(),
            c.setup.pack_wait
        );
    });
}

/// Frames with an order-free check: what a case with engines fed from
/// both inputs, or flushed while traffic flows, must still satisfy.
fn order_free_check(c: &Case, d: &TopDriver) -> Result<(), String> {
    // Every key-value data packet the model acks is acked exactly as often
    // by the card (acks are per packet and independent of interleaving).
    let (m, _) = predict(c);
    let count = |frames: &[Vec<u8>]| {
        let mut n: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
        for f in frames {
            *n.entry(f.clone()).or_default() += 1;
        }
        n
    };
    for stream in [wire::SRC_KV_ACK, wire::SRC_MEMOPS] {
        for port in [OutPort::C2h, OutPort::Tx] {
            let got: Vec<Vec<u8>> = match port {
                OutPort::C2h => &d.c2h,
                OutPort::Tx => &d.tx,
            }
            .iter()
            .filter(|g| g.src == stream)
            .map(|g| g.bytes.clone())
            .collect();
            let want = m.out.get(&(port, stream)).cloned().unwrap_or_default();
            if stream == wire::SRC_KV_ACK && count(&got) != count(&want) {
                return Err(format!(
                    "{port:?}: acks differ from the model's as a multiset"
                ));
            }
            if stream == wire::SRC_MEMOPS && got.len() != want.len() {
                return Err(format!(
                    "{port:?}: {} MemOps replies, the model {}",
                    got.len(),
                    want.len()
                ));
            }
        }
    }
    // The key-value sums: every record the card sent, added up per key,
    // equals the model's (the table is empty after the flush either way).
    let mut got_sums: BTreeMap<u32, i64> = BTreeMap::new();
    for g in d.c2h.iter().filter(|g| g.src == wire::SRC_KV_RECORDS) {
        let p = wire::parse_built(&g.bytes).ok_or("a record frame that does not parse")?;
        for r in p.payload[16..].chunks_exact(8) {
            let k = u32::from_le_bytes(r[0..4].try_into().unwrap());
            let v = i32::from_le_bytes(r[4..8].try_into().unwrap());
            *got_sums.entry(k).or_default() += v as i64;
        }
    }
    let mut want_sums: BTreeMap<u32, i64> = BTreeMap::new();
    for r in &m.records {
        if let RecItem::Record { key, sum, .. } = r {
            *want_sums.entry(*key).or_default() += *sum as i64;
        }
    }
    got_sums.retain(|_, v| *v != 0);
    want_sums.retain(|_, v| *v != 0);
    if got_sums != want_sums {
        return Err("key-value sums differ from the model's".into());
    }
    Ok(())
}

/// Key-value and MemOps traffic from both inputs at once into the same
/// engines: acks per packet and sums are still exact.
#[test]
fn both_inputs_into_one_engine() {
    weft_hdl::emit::on_big_stack(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        let mut c = case(21, 40, knobs(&mut rng));
        // Give each input its own senders' share of the key-value packets.
        let (mut a, mut b): (Vec<InFrame>, Vec<InFrame>) = (vec![], vec![]);
        let kvs = kv_packets(&mut rng, &c.setup, 80);
        for f in kvs {
            let sender = u16::from_le_bytes([f[42 + 6], f[42 + 7]]);
            if sender % 2 == 0 {
                a.push(InFrame::new(f))
            } else {
                b.push(InFrame::new(f))
            }
        }
        c.traffic.rx = a;
        c.traffic.h2c = b;
        let e = engines();
        let Some(vl) = &e.vl else { return };
        let mut dut = vl.instantiate(None).unwrap();
        let mut d = make_driver(&c);
        weft_model::run(dut.as_mut(), &mut d, 400_000).unwrap();
        order_free_check(&c, &d).unwrap();
    });
}

/// A flush while traffic still flows: whatever the engine had when the
/// flush reached it, the card's records still add up to the exact sums.
#[test]
fn flush_during_traffic() {
    weft_hdl::emit::on_big_stack(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(22);
        let mut k = knobs(&mut rng);
        k.flush_early = true;
        let mut c = case(22, 60, k);
        // Only key-value traffic, from the wire.
        let kvs = kv_packets(&mut rng, &c.setup, 120);
        c.traffic.rx = kvs.into_iter().map(InFrame::new).collect();
        c.traffic.h2c = vec![];
        // The flush is issued as soon as the configuration is done; a
        // second one after the traffic drains catches what came later.
        c.ops[1] = flush_ops();
        let e = engines();
        let Some(vl) = &e.vl else { return };
        let mut dut = vl.instantiate(None).unwrap();
        let mut d = make_driver(&c);
        weft_model::run(dut.as_mut(), &mut d, 400_000).unwrap();
        order_free_check(&c, &d).unwrap();
    });
}

/// Senders at the window's edge: each sender sends 32 packets ahead of
/// its oldest unacked one, in reverse order, then the rest; every packet
/// is new to the card and acked, none is dropped.
#[test]
fn senders_at_the_window_edge() {
    weft_hdl::emit::on_big_stack(|| {
        let mut rng = ChaCha8Rng::seed_from_u64(23);
        let mut c = case(23, 10, knobs(&mut rng));
        let mut rx = vec![];
        for sender in 0..4u16 {
            let from = ep(sender as u8, 50 + sender as u8, 41000 + sender);
            let mk = |seq: u32| {
                let h = kp::Header::data(c.setup.kv_job, sender, seq, 1);
                InFrame::new(to_card(
                    &c.setup,
                    &from,
                    WireEngine::Kv,
                    &kp::encode(&h, &[(seq, 1)]),
                ))
            };
            rx.extend((0..32).rev().map(mk));
            rx.extend((32..40).map(mk));
        }
        c.traffic.rx = rx;
        c.traffic.h2c = vec![];
        c.setup.kv_side = Side::Wire;
        run_case(&c, false).unwrap();
        let (m, _) = predict(&c);
        let acks = m
            .out
            .get(&(OutPort::Tx, wire::SRC_KV_ACK))
            .map_or(0, Vec::len);
        assert_eq!(acks, 4 * 40, "every packet inside the window is acked");
    });
}

/// Sustained key-value traffic on Verilator: 4000 data frames from the
/// network at line rate, every one acked back to its sender on the wire;
/// the simulation speed of the whole top (printed, never asserted).
#[test]
fn sustained_key_value_traffic_on_verilator() {
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let Some(vl) = &e.vl else { return };
        let mut rng = ChaCha8Rng::seed_from_u64(24);
        let mut c = case(24, 4, line_rate_knobs());
        let s = c.setup.clone();
        c.traffic.rx = (0..4000u32)
            .map(|i| {
                let sender = (i % 16) as u16;
                let from = ep(sender as u8, 50 + sender as u8, 41000 + sender);
                let h = kp::Header::data(s.kv_job, sender, i / 16, 3);
                let t = [(rng.gen(), 1), (rng.gen(), -2), (rng.gen(), 3)];
                InFrame::new(to_card(&s, &from, WireEngine::Kv, &kp::encode(&h, &t)))
            })
            .collect();
        c.traffic.h2c = vec![];
        c.setup.kv_side = Side::Wire;
        let mut dut = vl.instantiate(None).unwrap();
        let mut d = make_driver(&c);
        let t0 = std::time::Instant::now();
        let r = weft_model::run(dut.as_mut(), &mut d, 2_000_000).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        check_run(&c, &d, "verilator").unwrap();
        let acks = d.tx.iter().filter(|g| g.src == wire::SRC_KV_ACK).count();
        assert_eq!(acks, 4000);
        eprintln!(
            "weft_top on Verilator: {} steps (axis_aclk cycles) in {secs:.3} s = {:.0} steps/s, 4000 key-value frames",
            r.cycles,
            r.cycles as f64 / secs
        );
    });
}

fn line_rate_knobs() -> Knobs {
    Knobs {
        bubble: 0.0,
        c2h: Stalls::never(1),
        tx: Stalls::never(2),
        axil: Timing::EAGER,
        flush_early: false,
    }
}

/// What replicating gradient results costs the input, in cycles: chunks
/// of one job with `W` workers (all in the worker table, on the wire) sent
/// back to back from the wire, both outputs always ready. A DATA frame and
/// a RESULT copy are both 362 bytes (6 beats), so the copies of a chunk
/// take as long on the wire as its DATA frames did: replication should
/// cost the input about one cycle per RESULT (the worker table lookup).
#[test]
fn gradient_result_replication_cost() {
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let Some(vl) = &e.vl else { return };
        for workers in [1u8, 2, 4, 8, 16] {
            let mut c = case(31, 4, line_rate_knobs());
            c.setup.workers = (0..workers)
                .map(|w| ((0u8, w), Some((ep(0x40 + w, 100 + w, 30000), Side::Wire))))
                .collect();
            c.setup.grad_side = Side::Wire;
            c.ops[0] = config_ops(&c.setup);
            let geo = gp::Geometry::CARD;
            let chunks = 512u32;
            c.traffic.rx = (0..chunks)
                .flat_map(|chunk| (0..workers).map(move |w| (chunk, w)))
                .map(|(chunk, wk)| {
                    let h = gp::Header::data(geo, 0, chunk, wk, workers);
                    let p = gp::encode(geo, &h, &[1; 64]).unwrap();
                    InFrame::new(to_card(
                        &c.setup,
                        &ep(0x40 + wk, 100 + wk, 30000),
                        WireEngine::Grad,
                        &p,
                    ))
                })
                .collect();
            c.traffic.h2c = vec![];
            let mut dut = vl.instantiate(None).unwrap();
            let mut d = make_driver(&c);
            weft_model::run(dut.as_mut(), &mut d, 2_000_000).unwrap();
            check_run(&c, &d, "verilator").unwrap();
            let copies =
                d.tx.iter()
                    .filter(|g| g.src == wire::SRC_GRAD | 1 << 8)
                    .count();
            assert_eq!(copies, (chunks * workers as u32) as usize);
            let span = d.last_in - d.first_in.unwrap() + 1;
            let per_result = d.in_stalls as f64 / chunks as f64;
            eprintln!(
                "grad fan-out, {workers} workers: {} input beats in {span} cycles ({:.3} beats/cycle), input held {} cycles = {per_result:.2} per RESULT",
                d.in_beats,
                d.in_beats as f64 / span as f64,
                d.in_stalls
            );
            assert!(
                per_result <= 2.0,
                "{workers} workers: {per_result} cycles per RESULT"
            );
        }
    });
}

/// What packing records costs the input, in cycles: key-value packets of
/// 182 colliding tuples (most of them spill) from the wire back to back,
/// outputs always ready, record frames of 182 records. A record frame
/// carries its 58 header bytes in front of 1456 bytes of records, one beat
/// more than the records alone, and the packer spends a cycle closing
/// each frame.
#[test]
fn key_value_record_packing_cost() {
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let Some(vl) = &e.vl else { return };
        let mut rng = ChaCha8Rng::seed_from_u64(32);
        let mut c = case(32, 4, line_rate_knobs());
        c.setup.pack_max = 182;
        c.setup.pack_wait = 1000;
        c.setup.kv_side = Side::Wire;
        c.ops[0] = config_ops(&c.setup);
        let s = c.setup.clone();
        c.traffic.rx = (0..1000u32)
            .map(|i| {
                let sender = (i % 4) as u16;
                let t: Vec<(u32, i32)> = (0..182)
                    .map(|_| (*colliding_keys().choose(&mut rng).unwrap(), 1))
                    .collect();
                let h = kp::Header::data(s.kv_job, sender, i / 4, 182);
                InFrame::new(to_card(
                    &s,
                    &ep(sender as u8, 50, 41000),
                    WireEngine::Kv,
                    &kp::encode(&h, &t),
                ))
            })
            .collect();
        c.traffic.h2c = vec![];
        let mut dut = vl.instantiate(None).unwrap();
        let mut d = make_driver(&c);
        weft_model::run(dut.as_mut(), &mut d, 2_000_000).unwrap();
        check_run(&c, &d, "verilator").unwrap();
        let (m, _) = predict(&c);
        let records = m
            .records
            .iter()
            .filter(|r| matches!(r, RecItem::Record { flush: false, .. }))
            .count();
        let frames = d
            .c2h
            .iter()
            .filter(|g| g.src == wire::SRC_KV_RECORDS)
            .count();
        let span = d.last_in - d.first_in.unwrap() + 1;
        eprintln!(
            "record packing: {} input beats in {span} cycles ({:.3} beats/cycle), input held {} cycles; {records} spilled records in {frames} record frames ({:.1} records a frame)",
            d.in_beats,
            d.in_beats as f64 / span as f64,
            d.in_stalls,
            m.records.len() as f64 / frames as f64
        );
        assert!(
            d.in_stalls * 100 <= d.in_beats,
            "the input was held {} cycles for {} beats",
            d.in_stalls,
            d.in_beats
        );
    });
}

/// `weft_top` on Verilator for at least [`weft_model::soak_cycles`] cycles
/// of random mixed traffic (every engine's frames, malformed and
/// pass-through frames on both inputs, register traffic, back-pressure and
/// long stalls on both outputs) against the top's reference model, every
/// frame out also parsed. Seeded; `WEFT_SOAK=1` runs the 10^6-cycle soak.
#[test]
fn soak_on_verilator() {
    // Skips without Verilator, fails when WEFT_REQUIRE_VERILATOR=1.
    if !verilator_usable() {
        return;
    }
    let target = weft_model::soak_cycles(30_000);
    let (mut cycles, mut seed) = (0u64, 0x50a6u64);
    while cycles < target {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let c = case(seed, 200, knobs(&mut rng));
        let r = run_case(&c, false).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        cycles += r.iter().find(|w| w.0 == "verilator").map_or(0, |w| w.1);
        seed += 1;
    }
    eprintln!("top soak: {cycles} cycles, seeds 0x50a6..{seed:#x}");
}

/// The model's stream runner takes one evaluation a step on `weft_top`
/// (`weft_sim::verilator::Model::set_one_eval`): it reads, before each
/// edge, the outputs after the last one, which is exact only if no input
/// stream port reaches an output combinationally. yosys checks that on the
/// emitted Verilog, for every state and input: the stream inputs end in
/// flip-flops (the frame checks store whole frames before anything reads
/// them). The register inputs do reach `awready`/`wready` (a write takes
/// its address and data together), which is why the runner evaluates the
/// first step of every call, where they may change, twice.
#[test]
fn no_input_stream_reaches_an_output_combinationally() {
    use std::time::Duration;
    use weft_sim::yosys;
    if !yosys::usable_or_skip("no_input_stream_reaches_an_output_combinationally") {
        return;
    }
    let build = weft_hdl::build_info::top_build();
    let v = weft_hdl::emit::on_big_stack(|| weft_hdl::emit::top_verilog(&build));
    let t = Duration::from_secs(600);
    let streams = ["s_axis_adap_rx_250mhz_", "s_axis_qdma_h2c_"];
    let reached = yosys::comb_outputs(&v, "weft_top", &streams, t).unwrap();
    assert!(reached.is_empty(), "stream inputs reach {reached:?}");
    // The check itself finds paths: the register inputs reach the write
    // channel's ready signals.
    let axil = yosys::comb_outputs(&v, "weft_top", &["s_axil_"], t).unwrap();
    assert_eq!(axil, ["s_axil_awready", "s_axil_wready"]);
}

/// The stream runner takes each step of `weft_top` in one evaluation:
/// every trigger of the Verilated model is a clock's rising edge. A
/// combinational loop that Verilator settles with a trigger of its own (a
/// child block's input written and its output read inside one `if` of the
/// parent, say) turns that off: every result stays the same and the model
/// runs at about half the speed, so only this test notices.
#[test]
fn the_top_steps_in_one_evaluation() {
    weft_hdl::emit::on_big_stack(|| {
        let e = engines();
        let Some(vl) = &e.vl else { return };
        let mut dut = vl
            .instantiate_verilator(None)
            .unwrap()
            .expect("a Verilator instance");
        assert!(
            dut.set_one_eval(true),
            "the Verilated weft_top has a trigger that is not a clock edge (see its weft_trig.h)"
        );
    });
}
