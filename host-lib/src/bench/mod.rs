//! `weft bench kv`: the key-value engine's figures, counted in cycles.
//!
//! - **Line rate** of the `kv_agg` block alone (8 lanes, 512 slots per
//!   lane, as in the card): fed back to back with full 1472-byte packets
//!   (182 tuples, 23 beats), for a uniform, a Zipf and a one-key stream;
//!   tuples and beats per cycle from the first input beat to the last, and
//!   the cycles the input was held off. Every run is also checked against
//!   the reference model. (A block figure: on the card the same packets
//!   arrive as 24-beat frames.)
//! - **Residency**: the fraction of tuples absorbed on the card, with and
//!   without hot-key-agnostic replacement, for Zipf streams whose distinct
//!   keys are about 100x and 10x the card's table, run by the host daemon
//!   on the card.
//! - **Simulation speed**: cycles per second of the card on each simulator
//!   (wall clock, informational).
//! - **Goodput under loss** ([`goodput`], `weft bench goodput`): tuples
//!   per cycle of the main command's stream at 0, 1% and 5% loss,
//!   duplication and reordering, over several network seeds.
//!
//! Nothing here is a pass/fail test; `weft bench kv` prints the figures.

pub mod sim;

use crate::card::{Card, OpenOptions};
use crate::kv::gen::{zipf, ZipfSpec};
use crate::kv::{run, JobOptions};
use crate::spec::DeviceSpec;
use crate::{Error, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::HashSet;
use std::time::Instant;
use weft_model::kv_agg::driver::{predict, KvDriver, KvTiming, Step};
use weft_model::kv_agg::packet::{encode, Header};
use weft_model::kv_agg::ports::Lanes8;
use weft_model::kv_agg::Config;
use weft_model::memops::STAGES;
use weft_regs::kv;
use weft_sim::simulator::{Prepared, Simulator, SimulatorOptions};

/// Tuples in a full packet: 1472 bytes of UDP payload at 512 bits.
pub const FULL_PACKET_TUPLES: usize = 182;

/// What to run.
pub struct BenchOptions<'a> {
    /// Simulator of the `kv_agg` block for the line-rate runs.
    pub simulator: Simulator,
    /// Packets per line-rate stream.
    pub packets: usize,
    /// Tuples per residency run.
    pub tuples: u64,
    /// The card the residency runs use (the model is the fast one).
    pub card: DeviceSpec,
    /// Progress messages.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
}

/// One line-rate run.
#[derive(Clone, Debug, Serialize)]
pub struct LineRate {
    /// Stream name.
    pub stream: String,
    /// Packets.
    pub packets: usize,
    /// Tuples.
    pub tuples: u64,
    /// Input beats.
    pub beats: u64,
    /// Cycles from the first input beat to the last.
    pub cycles: u64,
    /// Tuples per cycle.
    pub tuples_per_cycle: f64,
    /// Beats per cycle (1.0 is line rate).
    pub beats_per_cycle: f64,
    /// Cycles with a beat offered and not taken.
    pub input_stalls: u64,
    /// Records, acks and counters equal the reference model's.
    pub model_agrees: bool,
}

/// One residency run.
#[derive(Clone, Debug, Serialize)]
pub struct Residency {
    /// Zipf exponent.
    pub zipf: f64,
    /// Key universe drawn from.
    pub universe: u32,
    /// Distinct keys in the stream.
    pub distinct: usize,
    /// Slots on the card.
    pub slots: usize,
    /// Slots / distinct keys.
    pub table_fraction: f64,
    /// Replacement on.
    pub replace: bool,
    /// Tuples.
    pub tuples: u64,
    /// Fraction of tuples absorbed on the card.
    pub nic_resident_fraction: f64,
    /// Records the host merged per tuple.
    pub host_record_fraction: f64,
    /// Tuples per cycle over the whole job.
    pub tuples_per_cycle: f64,
    /// Which card ran it.
    pub card: String,
}

/// Simulation speed of the card on one simulator.
#[derive(Clone, Debug, Serialize)]
pub struct SimSpeed {
    /// The card (`sim:verilator`, `sim:rust-hdl` or `sim:model`).
    pub card: String,
    /// Cycles simulated.
    pub cycles: u64,
    /// Wall seconds.
    pub seconds: f64,
    /// Cycles per second.
    pub cycles_per_second: f64,
}

/// All figures.
#[derive(Clone, Debug, Serialize)]
pub struct KvBench {
    /// Line rate of the 512-bit engine.
    pub line_rate: Vec<LineRate>,
    /// NIC residency.
    pub residency: Vec<Residency>,
    /// Simulation speed.
    pub sim_speed: Vec<SimSpeed>,
}

fn note(opts: &BenchOptions, msg: &str) {
    if let Some(p) = opts.progress {
        p(msg);
    }
}

fn full_packets(n: usize, mut key: impl FnMut(usize) -> u32) -> Vec<Step> {
    let mut steps = vec![Step::Write {
        addr: kv::JOB.addr,
        data: 1,
        strb: 0b11,
    }];
    let mut i = 0;
    for seq in 0..n {
        let tuples: Vec<(u32, i32)> = (0..FULL_PACKET_TUPLES)
            .map(|_| {
                i += 1;
                (key(i), 1)
            })
            .collect();
        let h = Header::data(1, (seq % 16) as u16, (seq / 16) as u32, tuples.len() as u16);
        steps.push(Step::Packet(encode(&h, &tuples)));
    }
    steps.push(Step::Flush);
    steps
}

/// Line rate of the card's engine (8 lanes, 512 slots per lane) on `opts.simulator`.
pub fn line_rate(opts: &BenchOptions) -> Result<Vec<LineRate>> {
    let cfg = Config::DEFAULT;
    let eo = SimulatorOptions {
        progress: opts.progress,
        ..Default::default()
    };
    let p = Prepared::new(
        opts.simulator,
        &weft_hdl::emit::module_name("kv_agg"),
        weft_hdl::emit::kv_agg::<8, 512, 9>,
        false,
        &eo,
    )?;
    let zipf_keys: Vec<u32> = {
        let spec = ZipfSpec {
            s: 1.1,
            keys: 100_000,
            tuples: (opts.packets * FULL_PACKET_TUPLES) as u64 + 1,
            workers: 1,
            seed: 7,
        };
        zipf(&spec)?.iter().map(|t| t.key).collect()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let streams: Vec<(&str, Vec<Step>)> = vec![
        (
            "uniform (random u32 keys)",
            full_packets(opts.packets, |_| rng.gen()),
        ),
        (
            "zipf 1.1 over 100k keys",
            full_packets(opts.packets, |i| zipf_keys[i]),
        ),
        ("one key in every lane", full_packets(opts.packets, |_| 42)),
    ];
    let mut out = vec![];
    for (name, steps) in streams {
        note(opts, &format!("line rate: {name}"));
        let mut dut = p.instantiate(None)?;
        let mut d = KvDriver::<Lanes8>::new(steps.clone(), KvTiming::LINE_RATE, 1);
        let limit = 64 * steps.len() as u64 * 30 + 100_000;
        weft_model::run(dut.as_mut(), &mut d, limit).map_err(|e| Error::Check(e.to_string()))?;
        let tuples = (opts.packets * FULL_PACKET_TUPLES) as u64;
        let cycles = d.stream_cycles().max(1);
        out.push(LineRate {
            stream: name.to_string(),
            packets: opts.packets,
            tuples,
            beats: d.beats,
            cycles,
            tuples_per_cycle: tuples as f64 / cycles as f64,
            beats_per_cycle: d.beats as f64 / cycles as f64,
            input_stalls: d.input_stalls,
            model_agrees: d.outcome == predict(cfg, &steps),
        });
    }
    Ok(out)
}

fn distinct(tuples: &[crate::kv::input::Tuple]) -> usize {
    tuples.iter().map(|t| t.key).collect::<HashSet<_>>().len()
}

/// The smallest key universe whose stream has at least `target` distinct
/// keys (or the largest tried).
fn universe_for(s: f64, tuples: u64, target: usize) -> Result<(u32, Vec<crate::kv::input::Tuple>)> {
    let gen = |keys: u32| {
        zipf(&ZipfSpec {
            s,
            keys,
            tuples,
            workers: 8,
            seed: 11,
        })
    };
    // Beyond 64x the target a Zipf stream's distinct keys grow too slowly to
    // be worth the generator's table.
    let cap = (64 * target as u64).min(crate::kv::gen::MAX_KEYS as u64) as u32;
    let (mut lo, mut hi) = (target as u32, cap);
    let mut best = gen(hi)?;
    if distinct(&best) < target {
        return Ok((hi, best));
    }
    while hi - lo > hi / 64 {
        let mid = lo + (hi - lo) / 2;
        let t = gen(mid)?;
        if distinct(&t) >= target {
            hi = mid;
            best = t;
        } else {
            lo = mid;
        }
    }
    Ok((hi, best))
}

/// NIC residency with and without replacement, on the card (4096 slots).
pub fn residency(opts: &BenchOptions) -> Result<Vec<Residency>> {
    let mut out = vec![];
    for s in [0.99, 1.2] {
        for fraction in [0.01, 0.10] {
            note(
                opts,
                &format!("residency: zipf {s}, table {}% of keys", fraction * 100.0),
            );
            for replace in [true, false] {
                let card = Card::open_with(opts.card.clone(), &OpenOptions::default())?;
                let (cfg, _) = crate::kv::daemon::geometry(card.regs())?;
                let slots = cfg.slots();
                let target = (slots as f64 / fraction) as usize;
                let (universe, tuples) = universe_for(s, opts.tuples, target)?;
                let d = distinct(&tuples);
                let job = JobOptions {
                    workers: 8,
                    replace,
                    ..JobOptions::default()
                };
                let r = run(
                    &card,
                    job,
                    tuples.iter().map(|t| (t.worker, t.key, t.value)),
                )?;
                out.push(Residency {
                    zipf: s,
                    universe,
                    distinct: d,
                    slots,
                    table_fraction: slots as f64 / d as f64,
                    replace,
                    tuples: opts.tuples,
                    nic_resident_fraction: r.stats.nic_resident_fraction,
                    host_record_fraction: r.stats.host_record_fraction,
                    tuples_per_cycle: r.stats.tuples_per_cycle,
                    card: card.name(),
                });
            }
        }
    }
    Ok(out)
}

/// Cycles per second of the whole card on each simulation, on one job.
pub fn sim_speed(cards: &[DeviceSpec], tuples: u64) -> Result<Vec<SimSpeed>> {
    let stream = zipf(&ZipfSpec {
        s: 1.0,
        keys: 20_000,
        tuples,
        workers: 4,
        seed: 5,
    })?;
    let mut out = vec![];
    for spec in cards {
        let card = Card::open_with(spec.clone(), &OpenOptions::default())?;
        let t0 = Instant::now();
        let c0 = card.frames()?.cycles();
        run(
            &card,
            JobOptions {
                workers: 4,
                ..JobOptions::default()
            },
            stream.iter().map(|t| (t.worker, t.key, t.value)),
        )?;
        let secs = t0.elapsed().as_secs_f64();
        let cycles = card.frames()?.cycles() - c0;
        out.push(SimSpeed {
            card: card.name(),
            cycles,
            seconds: secs,
            cycles_per_second: cycles as f64 / secs.max(1e-9),
        });
    }
    Ok(out)
}

/// Goodput of one loss rate: tuples per cycle over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct GoodputPoint {
    /// Loss, duplication and reordering rate, each.
    pub p: f64,
    /// Tuples per cycle, per seed.
    pub tuples_per_cycle: Vec<f64>,
    /// Their mean.
    pub mean: f64,
    /// `mean` over the lossless mean.
    pub ratio: f64,
    /// Issue 16's target for the ratio: `0.9 * (1 - p)`.
    pub target: f64,
    /// Whether `ratio` reaches `target`.
    pub meets_target: bool,
    /// Retransmissions, summed over the seeds.
    pub retransmissions: u64,
    /// Of them, on a timer.
    pub timeouts: u64,
}

/// Key-value goodput under loss: the README main command's stream (Zipf
/// 1.2, 100,000 keys, 8 workers), with loss, duplication and reordering
/// each at 0, 1% and 5%, for `seeds` network seeds from 1, on `card`.
pub fn goodput(card: &DeviceSpec, tuples: u64, seeds: u64) -> Result<Vec<GoodputPoint>> {
    let stream = zipf(&ZipfSpec {
        s: 1.2,
        keys: 100_000,
        tuples,
        workers: 8,
        seed: 1,
    })?;
    let mut out: Vec<GoodputPoint> = vec![];
    for p in [0.0, 0.01, 0.05] {
        let mut tpc = vec![];
        let (mut rtx, mut to) = (0, 0);
        for seed in 1..=seeds.max(1) {
            let c = Card::open_with(card.clone(), &OpenOptions::default())?;
            let job = JobOptions {
                workers: 8,
                net: weft_model::net::NetConfig {
                    loss: p,
                    dup: p,
                    reorder: p,
                    ..weft_model::net::NetConfig::IDEAL
                },
                seed,
                ..JobOptions::default()
            };
            let r = run(&c, job, stream.iter().map(|t| (t.worker, t.key, t.value)))?;
            tpc.push(r.stats.tuples_per_cycle);
            rtx += r.stats.retransmissions;
            to += r.stats.timeouts;
        }
        let mean = tpc.iter().sum::<f64>() / tpc.len() as f64;
        let lossless = out.first().map_or(mean, |l| l.mean);
        let ratio = mean / lossless.max(f64::MIN_POSITIVE);
        let target = 0.9 * (1.0 - p);
        out.push(GoodputPoint {
            p,
            tuples_per_cycle: tpc,
            mean,
            ratio,
            target,
            meets_target: ratio >= target,
            retransmissions: rtx,
            timeouts: to,
        });
    }
    Ok(out)
}

/// Every figure.
pub fn kv(opts: &BenchOptions, speed_cards: &[DeviceSpec]) -> Result<KvBench> {
    let line_rate = line_rate(opts)?;
    let residency = residency(opts)?;
    note(opts, "simulation speed");
    let sim_speed = sim_speed(speed_cards, 20_000)?;
    Ok(KvBench {
        line_rate,
        residency,
        sim_speed,
    })
}

/// One MemOps throughput run.
#[derive(Clone, Debug, Serialize)]
pub struct MemopsThroughput {
    /// Scenario.
    pub scenario: String,
    /// Requests.
    pub requests: usize,
    /// Request headers accepted per cycle while requests were offered.
    pub headers_per_cycle: f64,
    /// Added latency of the first issued request, cycles.
    pub added_latency: Option<u64>,
    /// The run matched the reference model.
    pub model_agrees: bool,
}

/// MemOps port (8 stages) throughput, a block figure: the `memops` block
/// alone with modelled accelerator memories on its four ports (the card
/// takes one transaction at a time through its frame adapter, so its own
/// rate is the adapter's), random traffic routed to all four destinations,
/// without and with back-pressure on one destination; every run checked
/// against the reference model.
pub fn memops(simulator: Simulator, requests: usize) -> Result<Vec<MemopsThroughput>> {
    use weft_model::memops::driver::{check_run, MemTiming, MemopsDriver};
    use weft_model::memops::{Action, Op, Program, Range, Request, Stage};
    // Route by address bits 13:12, count everything, mirror writes; every
    // destination permits everything.
    let mut stages: Vec<Stage> = (0..4u64)
        .map(|d| Stage {
            src_mask: 0xf,
            ops: 7,
            range: (d << 12, (d << 12) + 0xfff),
            action: Action::Route(d as u8),
        })
        .collect();
    stages.push(Stage {
        src_mask: 0xf,
        ops: 7,
        range: (0, u64::MAX),
        action: Action::Count,
    });
    stages.push(Stage {
        src_mask: 0xf,
        ops: 2,
        range: (0, u64::MAX),
        action: Action::Mirror,
    });
    let all = Range {
        lo: 0,
        hi: u64::MAX,
        read: true,
        write: true,
    };
    let program = Program {
        stages,
        protect: vec![vec![all]; 4],
    };
    let image = program.image().map_err(|e| Error::Check(e.to_string()))?;
    let prep = Prepared::new(
        simulator,
        &weft_hdl::emit::module_name("memops"),
        weft_hdl::emit::memops::<8>,
        false,
        &SimulatorOptions::default(),
    )?;
    let mut rng = ChaCha8Rng::seed_from_u64(21);
    let reqs: Vec<Request> = (0..requests)
        .map(|i| Request {
            src: rng.gen_range(0..4),
            op: [Op::Read, Op::Write, Op::AtomicAdd][rng.gen_range(0..3)],
            addr: rng.gen_range(0..0x800) * 8,
            len: 8,
            tag: i as u8,
            data: rng.gen(),
        })
        .collect();
    let scenarios = [
        ("random traffic, no back-pressure", [0.0; 4]),
        ("destination 2 refuses 50% of cycles", [0.0, 0.0, 0.5, 0.0]),
        ("destination 2 refuses 90% of cycles", [0.0, 0.0, 0.9, 0.0]),
    ];
    let mut out = vec![];
    for (name, dst_stall) in scenarios {
        let timing = MemTiming {
            dst_stall,
            max_delay: 4,
            ..MemTiming::FAST
        };
        let mut dut = prep.instantiate(None)?;
        let mut d = MemopsDriver::new(image.clone(), STAGES, reqs.clone(), timing, 3);
        let limit = 1000 * reqs.len() as u64 + 10_000;
        weft_model::run(dut.as_mut(), &mut d, limit).map_err(|e| Error::Check(e.to_string()))?;
        let r = d.run;
        let check = check_run(&program, STAGES, &reqs, &r);
        let first = r.accepted_at.first().copied().unwrap_or(0);
        let last = r.accepted_at.last().copied().unwrap_or(0);
        let want = weft_model::memops::predict(&program, &reqs);
        // The first issued request: the first whose outcome was an issue.
        let added_latency = r.issued_at.first().and_then(|&t| {
            let i = want.issued.first()?;
            let k = reqs
                .iter()
                .position(|q| i.req.src == q.src && i.req.tag == q.tag)?;
            Some(t - r.accepted_at.get(k)?)
        });
        out.push(MemopsThroughput {
            scenario: name.into(),
            requests,
            headers_per_cycle: if r.accepted_at.is_empty() {
                0.0
            } else {
                r.accepted_at.len() as f64 / (last - first + 1) as f64
            },
            added_latency,
            model_agrees: check.is_ok(),
        });
    }
    Ok(out)
}
