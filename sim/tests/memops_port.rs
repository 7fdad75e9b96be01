//! The card's MemOps port through the model, rust-hdl and Verilator, cycle
//! by cycle, with a seeded driver playing everything around it: the MemOps
//! frames (random payloads of 24 to 300 bytes, random return addresses,
//! bubbles, garbage while not valid), `memops` (taking requests with
//! back-pressure, issuing them to a random destination or completing them
//! itself after random delays, taking completions with back-pressure), the
//! AVM pool (random per-consumer READY, responses after random delays,
//! faults) and the framer (random READY). Each run is then checked on its
//! own: every frame's first beat reaches `memops` as its request, in order,
//! one transaction at a time end to end; every issued request reaches the
//! pool as a 32-bit word access of its consumer (atomics never do and
//! complete as ERROR; faults complete as DENIED); every completion leaves
//! for the request's return address with the 16-byte payload of
//! docs/wire.md.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use weft_hdl::memops_port::MemopsPort;
use weft_model::memops_port::{
    completion_words, MemopsPortIn, MemopsPortModel, MemopsPortOut, OP_ATOMIC, OP_WRITE, ST_DENIED,
    ST_ERROR, ST_OK,
};
use weft_model::steer::from_bytes;
use weft_model::wire::{mac_bits, Endpoint, Ret, Side};
use weft_model::Driver;
use weft_sim::simulator::{verilator_usable, BoxDut, Simulators};
use weft_sim::witness::{agree, Factory};

type W = Simulators<MemopsPort>;

fn witnesses() -> &'static W {
    static W: OnceLock<W> = OnceLock::new();
    W.get_or_init(|| {
        Simulators::prepare("weft_memops_port", MemopsPort::connected)
            .expect("the block builds on both simulators")
    })
}

/// A request as `memops` sees it on `req_*`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Req {
    src: u8,
    op: u8,
    len: u8,
    tag: u8,
    addr: u64,
    data: u64,
}

impl Req {
    /// The request a payload's first 24 bytes carry (each field the low
    /// bits of its bytes, as `memops`' ports are wide).
    fn of_payload(p: &[u8]) -> Self {
        let le64 = |i: usize| u64::from_le_bytes(p[i..i + 8].try_into().unwrap());
        Self {
            src: p[0] & 3,
            op: p[1] & 3,
            len: p[2] & 0xf,
            tag: p[3],
            addr: le64(8),
            data: le64(16),
        }
    }
}

/// A request `memops` issues on `out_*`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Out {
    dst: u8,
    op: u8,
    al: u32,
    stag: u8,
    dl: u32,
}

/// A completion on `cin_*` or `cout_*` (`dst`, `tag` only on `cout_*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Cpl {
    dst: u8,
    tag: u8,
    stag: u8,
    status: u8,
    dl: u32,
    dh: u32,
}

/// What the pool saw.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct PoolReq {
    valid: u8,
    write: u8,
    addr: u64,
    wdata: [u32; 4],
}

/// The metadata a completion left with.
#[derive(Clone, Debug, PartialEq, Eq)]
struct H {
    dmac: u64,
    dip: u32,
    dport: u16,
    host: bool,
    app: [u32; 4],
}

/// One transaction as it went by.
#[derive(Clone, Debug, Default)]
struct Txn {
    req: Option<Req>,
    req_at: u64,
    out: Option<Out>,
    pool: Vec<PoolReq>,
    resp: Option<(bool, u32)>,
    cin: Option<Cpl>,
    cout: Option<Cpl>,
    h: Option<H>,
    h_at: u64,
}

#[derive(Clone, Debug)]
struct Frame {
    payload: Vec<u8>,
    ret: Ret,
}

/// The timing of everything around the port.
#[derive(Copy, Clone, Debug)]
struct Timing {
    s_bubble: f64,
    req_stall: f64,
    cin_stall: f64,
    h_stall: f64,
    pool_stall: f64,
    /// Most cycles `memops` or the pool takes before it answers.
    delay: u64,
    /// Chance `memops` completes a request itself (blocked, denied, error).
    own: f64,
}

const FAST: Timing = Timing {
    s_bubble: 0.0,
    req_stall: 0.0,
    cin_stall: 0.0,
    h_stall: 0.0,
    pool_stall: 0.0,
    delay: 0,
    own: 0.0,
};

#[derive(Clone, Debug)]
enum Memops {
    Idle,
    Out(u64, Out),
    WaitCin,
    Cout(u64, Cpl),
}

struct PortDriver {
    frames: Vec<Frame>,
    f_at: usize,
    beat: usize,
    s_offering: bool,
    rng: ChaCha8Rng,
    t: Timing,
    cycle: u64,
    mo: Memops,
    /// The pool's scheduled response: (cycle, fault, data).
    resp: Option<(u64, bool, u32)>,
    txns: Vec<Txn>,
    errors: Vec<String>,
}

impl PortDriver {
    fn new(frames: &[Frame], seed: u64, t: Timing) -> Self {
        Self {
            frames: frames.to_vec(),
            f_at: 0,
            beat: 0,
            s_offering: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            t,
            cycle: 0,
            mo: Memops::Idle,
            resp: None,
            txns: vec![],
            errors: vec![],
        }
    }

    fn delay(&mut self) -> u64 {
        self.cycle + 1 + self.rng.gen_range(0..=self.t.delay)
    }

    fn txn(&mut self) -> &mut Txn {
        if self.txns.is_empty() {
            self.errors.push("activity before any request".into());
            self.txns.push(Txn::default());
        }
        self.txns.last_mut().unwrap()
    }
}

impl Driver<MemopsPortIn, MemopsPortOut> for PortDriver {
    fn drive(&mut self) -> MemopsPortIn {
        let r = &mut self.rng;
        // Garbage wherever nothing is valid.
        let mut i = MemopsPortIn {
            s_tdata: r.gen(),
            s_tlast: r.gen(),
            s_tuser_size: r.gen(),
            s_tret: {
                let mut w: [u32; 4] = r.gen();
                w[3] &= 1;
                w
            },
            mo_req_ready: !r.gen_bool(self.t.req_stall),
            mo_out_dst: r.gen_range(0..4),
            mo_out_op: r.gen_range(0..4),
            mo_out_al: r.gen(),
            mo_out_stag: r.gen_range(0..16),
            mo_out_dl: r.gen(),
            mo_cin_ready: !r.gen_bool(self.t.cin_stall),
            mo_cout_dst: r.gen_range(0..4),
            mo_cout_tag: r.gen(),
            mo_cout_status: r.gen_range(0..4),
            mo_cout_dl: r.gen(),
            mo_cout_dh: r.gen(),
            pool_resp_fault: r.gen(),
            pool_resp_data: r.gen(),
            h_ready: !r.gen_bool(self.t.h_stall),
            ..Default::default()
        };
        for c in 0..4 {
            if !r.gen_bool(self.t.pool_stall) {
                i.pool_req_ready |= 1 << c;
            }
        }
        if !self.s_offering && self.f_at < self.frames.len() {
            self.s_offering = !self.rng.gen_bool(self.t.s_bubble);
        }
        if self.s_offering {
            let f = &self.frames[self.f_at];
            let at = 64 * self.beat;
            let n = (f.payload.len() - at).min(64);
            i.s_tdata = from_bytes(&f.payload[at..at + n]);
            i.s_tlast = at + n == f.payload.len();
            i.s_tvalid = true;
            i.s_tuser_size = f.payload.len() as u16;
            i.s_tret = f.ret.words();
        }
        match &self.mo {
            Memops::Out(at, o) if *at <= self.cycle => {
                i.mo_out_valid = true;
                i.mo_out_dst = o.dst;
                i.mo_out_op = o.op;
                i.mo_out_al = o.al;
                i.mo_out_stag = o.stag;
                i.mo_out_dl = o.dl;
            }
            Memops::Cout(at, c) if *at <= self.cycle => {
                i.mo_cout_valid = true;
                i.mo_cout_dst = c.dst;
                i.mo_cout_tag = c.tag;
                i.mo_cout_status = c.status;
                i.mo_cout_dl = c.dl;
                i.mo_cout_dh = c.dh;
            }
            _ => {}
        }
        if let Some((at, fault, data)) = self.resp {
            if at == self.cycle {
                i.pool_resp_valid = true;
                i.pool_resp_fault = fault;
                i.pool_resp_data = data;
                self.resp = None;
            }
        }
        i
    }

    fn observe(&mut self, i: &MemopsPortIn, o: &MemopsPortOut) {
        if !o.mo_mir_ready {
            self.errors.push("mirrored headers refused".into());
        }
        if i.s_tvalid && o.s_tready {
            self.s_offering = false;
            if i.s_tlast {
                self.f_at += 1;
                self.beat = 0;
            } else {
                self.beat += 1;
            }
        }
        if o.mo_req_valid && i.mo_req_ready {
            let req = Req {
                src: o.mo_req_src,
                op: o.mo_req_op,
                len: o.mo_req_len,
                tag: o.mo_req_tag,
                addr: o.mo_req_al as u64 | (o.mo_req_ah as u64) << 32,
                data: o.mo_req_dl as u64 | (o.mo_req_dh as u64) << 32,
            };
            if !matches!(self.mo, Memops::Idle) {
                self.errors
                    .push(format!("request {} while one is open", self.txns.len()));
            }
            self.txns.push(Txn {
                req: Some(req),
                req_at: self.cycle,
                ..Default::default()
            });
            self.mo = if self.rng.gen_bool(self.t.own) {
                // memops completes it itself: blocked, denied or an error.
                Memops::Cout(
                    self.delay(),
                    Cpl {
                        dst: req.src,
                        tag: req.tag,
                        status: self.rng.gen_range(1..=2),
                        ..Default::default()
                    },
                )
            } else {
                let out = Out {
                    dst: self.rng.gen_range(0..4),
                    op: if self.rng.gen_bool(0.7) {
                        req.op
                    } else {
                        self.rng.gen_range(0..3)
                    },
                    al: self.rng.gen(),
                    stag: self.rng.gen_range(0..16),
                    dl: self.rng.gen(),
                };
                Memops::Out(self.delay(), out)
            };
        }
        if let Memops::Out(_, out) = self.mo.clone() {
            if i.mo_out_valid && o.mo_out_ready >> out.dst & 1 != 0 {
                self.txn().out = Some(out);
                self.mo = Memops::WaitCin;
            }
        }
        if o.pool_req_valid & i.pool_req_ready != 0 {
            let p = PoolReq {
                valid: o.pool_req_valid,
                write: o.pool_req_write,
                addr: o.pool_req_addr,
                wdata: o.pool_req_wdata,
            };
            self.txn().pool.push(p);
            let at = self.delay();
            let (fault, data) = (self.rng.gen_bool(0.2), self.rng.gen());
            self.resp = Some((at, fault, data));
        }
        if i.pool_resp_valid {
            self.txn().resp = Some((i.pool_resp_fault, i.pool_resp_data));
        }
        if o.mo_cin_valid && i.mo_cin_ready {
            let cin = Cpl {
                stag: o.mo_cin_stag,
                status: o.mo_cin_status,
                dl: o.mo_cin_dl,
                dh: o.mo_cin_dh,
                ..Default::default()
            };
            self.txn().cin = Some(cin);
            if !matches!(self.mo, Memops::WaitCin) {
                self.errors
                    .push("a completion into memops it did not wait for".into());
            }
            let req = self.txn().req.unwrap_or(Req {
                src: 0,
                op: 0,
                len: 0,
                tag: 0,
                addr: 0,
                data: 0,
            });
            self.mo = Memops::Cout(
                self.delay(),
                Cpl {
                    dst: req.src,
                    tag: req.tag,
                    ..cin
                },
            );
        }
        if i.mo_cout_valid && o.mo_cout_ready {
            if let Memops::Cout(_, c) = self.mo.clone() {
                self.txn().cout = Some(c);
            }
            self.mo = Memops::Idle;
        }
        if o.h_valid && i.h_ready {
            let h = H {
                dmac: o.h_dmac,
                dip: o.h_dip,
                dport: o.h_dport,
                host: o.h_host,
                app: o.h_app,
            };
            let at = self.cycle;
            let t = self.txn();
            t.h = Some(h);
            t.h_at = at;
        }
        self.cycle += 1;
    }

    fn finished(&self) -> bool {
        // A protocol error ends the run: the checks report it.
        !self.errors.is_empty()
            || self.f_at == self.frames.len()
                && self.txns.len() == self.frames.len()
                && self.txns.iter().all(|t| t.h.is_some())
    }
}

/// Check one transaction against its frame.
fn check_txn(f: &Frame, t: &Txn, prev_h_at: Option<u64>) -> Result<(), String> {
    let req = t.req.ok_or("no request")?;
    if req != Req::of_payload(&f.payload) {
        return Err(format!(
            "request {req:x?} from payload {:x?}",
            &f.payload[..24]
        ));
    }
    if let Some(p) = prev_h_at {
        if t.req_at <= p {
            return Err(format!(
                "request taken at cycle {} before the previous completion left ({p})",
                t.req_at
            ));
        }
    }
    let cout = t.cout.ok_or("no completion from memops")?;
    let h = t.h.clone().ok_or("no completion out")?;
    let to = &f.ret;
    let want_h = H {
        dmac: mac_bits(&to.to.mac),
        dip: u32::from(to.to.ip),
        dport: to.to.port,
        host: to.side == Side::Host,
        app: completion_words(cout.dst, cout.tag, cout.status, cout.dl, cout.dh),
    };
    if h != want_h {
        return Err(format!("completion left as {h:x?}, want {want_h:x?}"));
    }
    // The payload as docs/wire.md lays it out.
    let app: Vec<u8> = h.app.iter().flat_map(|w| w.to_le_bytes()).collect();
    let mut want_app = vec![cout.dst, cout.tag, cout.status, 0, 0, 0, 0, 0];
    want_app.extend_from_slice(&(cout.dl as u64 | (cout.dh as u64) << 32).to_le_bytes());
    if app != want_app {
        return Err(format!("payload {app:x?}"));
    }
    if h.app[0] >> 8 & 0xff != req.tag as u32 || h.app[0] & 3 != req.src as u32 {
        return Err("completion for another request".into());
    }
    let Some(out) = t.out else {
        if !t.pool.is_empty() || t.cin.is_some() {
            return Err("pool or completion activity for a request memops completed".into());
        }
        return Ok(());
    };
    let cin = t.cin.ok_or("no completion into memops")?;
    let onehot = 1u8 << out.dst;
    let word = ((out.al >> 2) & 0x1ff) as u64;
    if out.op == OP_ATOMIC {
        if !t.pool.is_empty() {
            return Err("an atomic reached the pool".into());
        }
        if (cin.stag, cin.status, cin.dl, cin.dh) != (out.stag, ST_ERROR, 0, 0) {
            return Err(format!("atomic completed as {cin:?}"));
        }
        return Ok(());
    }
    let want_pool = PoolReq {
        valid: onehot,
        write: if out.op == OP_WRITE { onehot } else { 0 },
        addr: word | word << 9 | word << 18 | word << 27,
        wdata: [out.dl; 4],
    };
    if t.pool != [want_pool] {
        return Err(format!("pool saw {:x?}, want {want_pool:x?}", t.pool));
    }
    let (fault, data) = t.resp.ok_or("no pool response")?;
    let status = if fault { ST_DENIED } else { ST_OK };
    if (cin.stag, cin.status, cin.dl, cin.dh) != (out.stag, status, data, 0) {
        return Err(format!(
            "pool response {fault} {data:x} completed as {cin:?}"
        ));
    }
    Ok(())
}

fn frames(rng: &mut ChaCha8Rng, n: usize) -> Vec<Frame> {
    (0..n)
        .map(|_| {
            let len = match rng.gen_range(0..4) {
                0 => 24,
                1 => rng.gen_range(24..=64),
                2 => 64 * rng.gen_range(1..=4),
                _ => rng.gen_range(24..300),
            };
            let mut payload: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            // Mostly well-formed opcodes, so every pool path is taken.
            if rng.gen_bool(0.8) {
                payload[1] = rng.gen_range(0..3);
            }
            Frame {
                payload,
                ret: Ret {
                    to: Endpoint {
                        mac: rng.gen(),
                        ip: Ipv4Addr::from(rng.gen::<u32>()),
                        port: rng.gen(),
                    },
                    side: if rng.gen() { Side::Host } else { Side::Wire },
                },
            }
        })
        .collect()
}

/// Run `frames` through the witnesses (the model and Verilator only unless
/// `rust_hdl`) and check every witness's run. Returns the cycles taken.
fn check(seed: u64, frames: &[Frame], t: Timing, rust_hdl: bool) -> Result<u64, String> {
    let w = witnesses();
    let mut f: Vec<Factory<'_, MemopsPortIn, MemopsPortOut>> =
        vec![Box::new(|| -> BoxDut<MemopsPortIn, MemopsPortOut> {
            Box::new(MemopsPortModel::new())
        })];
    if rust_hdl {
        f.push(Box::new(|| w.hdl.instantiate(None).unwrap()));
    }
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || PortDriver::new(frames, seed, t);
    let runs = agree(&f, &make, 1_000_000)?;
    for r in &runs {
        eprintln!(
            "{}: {} cycles, {:.0} cycles/s",
            r.witness,
            r.run.cycles,
            r.run.cycles as f64 / r.elapsed.as_secs_f64()
        );
    }
    for r in &runs {
        let d = &r.driver;
        if let Some(e) = d.errors.first() {
            return Err(format!("{}: {e}", r.witness));
        }
        let mut prev = None;
        for (k, (fr, t)) in frames.iter().zip(&d.txns).enumerate() {
            check_txn(fr, t, prev).map_err(|e| format!("{}: transaction {k}: {e}", r.witness))?;
            prev = Some(t.h_at);
        }
    }
    Ok(runs[0].run.cycles)
}

fn timing() -> impl Strategy<Value = Timing> {
    (
        (0.0f64..0.7, 0.0f64..0.7, 0.0f64..0.7),
        (0.0f64..0.7, 0.0f64..0.7, 0u64..12, 0.0f64..0.4),
    )
        .prop_map(|((s, rq, ci), (h, p, delay, own))| Timing {
            s_bubble: s,
            req_stall: rq,
            cin_stall: ci,
            h_stall: h,
            pool_stall: p,
            delay,
            own,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    /// Three witnesses, cycle by cycle, and every run checked.
    #[test]
    fn transactions_match_in_every_witness(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let frames = frames(&mut rng, 48);
        check(seed ^ 1, &frames, t, true).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(8), ..ProptestConfig::default() })]

    /// The model and Verilator on long runs.
    #[test]
    fn long_runs_match_in_the_model_and_verilator(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let frames = frames(&mut rng, 1000);
        check(seed ^ 2, &frames, t, false).map_err(TestCaseError::fail)?;
    }
}

/// With nothing in the way and `memops` and the pool answering in the next
/// cycle, a transaction takes at most five cycles from its request to the
/// next (request, issue, pool response, completion into memops, completion
/// out), in all three witnesses.
#[test]
fn back_to_back_transactions_in_every_witness() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let frames = frames(&mut rng, 30);
    let cycles = check(6, &frames, FAST, true).unwrap();
    assert!(cycles <= 5 * frames.len() as u64, "{cycles} cycles");
}

/// The emitted Verilog lints clean with the documented waivers.
#[test]
fn memops_port_lints_clean() {
    if !verilator_usable() {
        return;
    }
    let v = weft_hdl::emit::verilog_of(&MemopsPort::connected(), "weft_memops_port");
    let rep = weft_sim::verilator::lint_with_waivers(&v, "weft_memops_port").unwrap();
    assert!(rep.clean, "{:#?}", rep.warnings);
}

/// rust-hdl's connection check passes on the block `connected()` gives and
/// fails on the bare one (the simulators would not notice a missing
/// `connect_all`; Verilog generation for a flow would).
#[test]
fn the_connected_block_passes_rust_hdls_connection_check() {
    weft_sim::witness::check_connection(&MemopsPort::connected(), &MemopsPort::new()).unwrap();
}
