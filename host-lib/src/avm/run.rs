//! Running a scenario: each consumer alone, then everyone together under a
//! policy, with the control loop observing the pool and acting on it every
//! window of device time.

use super::pool::{Act, Arbitration, Offers, Pool};
use super::scenario::{Pattern, Scenario};
use super::AvmError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::VecDeque;
use weft_fw::avm::{self as fw, Policy};
use weft_model::avm::{self as m, AvmIn, AvmModel, AvmOut};
use weft_sim::simulator::{BoxDut, Prepared, Simulator, SimulatorOptions};

/// Which policy manages the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolPolicy {
    /// Unmanaged: first come, first served, no control loop.
    None,
    /// The scenario's weights and quotas, fixed (weft-fw `Static`).
    Static,
    /// weft-fw `SloGuard` on the victims' SLOs.
    Slo,
}

impl std::str::FromStr for PoolPolicy {
    type Err = AvmError;
    fn from_str(s: &str) -> Result<Self, AvmError> {
        match s {
            "none" => Ok(PoolPolicy::None),
            "static" => Ok(PoolPolicy::Static),
            "slo" => Ok(PoolPolicy::Slo),
            o => Err(AvmError::Config(format!(
                "unknown policy {o:?} (none, static or slo)"
            ))),
        }
    }
}

/// Which simulation runs the standalone pool block of a scenario.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum BlockSim {
    /// The block's reference model.
    Model,
    /// The RTL in rust-hdl's simulator.
    RustHdl,
    /// The RTL's Verilog in Verilator.
    Verilator,
}

impl BlockSim {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            BlockSim::Model => "model",
            BlockSim::RustHdl => "rust-hdl",
            BlockSim::Verilator => "verilator",
        }
    }
}

/// Makes fresh standalone pools on one simulator.
pub struct PoolFactory {
    sim: BlockSim,
    prepared: Option<Prepared<weft_hdl::avm::Avm>>,
}

impl PoolFactory {
    /// Prepare `sim` (builds the Verilated model once, cached on disk).
    pub fn new(sim: BlockSim, progress: Option<&(dyn Fn(&str) + Sync)>) -> Result<Self, AvmError> {
        let e = match sim {
            BlockSim::Model => None,
            BlockSim::RustHdl => Some(Simulator::RustHdl),
            BlockSim::Verilator => Some(Simulator::Verilator),
        };
        let prepared = match e {
            None => None,
            Some(e) => {
                let o = SimulatorOptions {
                    progress,
                    ..Default::default()
                };
                Some(Prepared::new(
                    e,
                    "weft_avm",
                    weft_hdl::emit::avm,
                    false,
                    &o,
                )?)
            }
        };
        Ok(Self { sim, prepared })
    }

    /// The simulator's name.
    pub fn simulator(&self) -> &'static str {
        self.sim.name()
    }

    /// A fresh pool with consumers `names`.
    pub fn pool(&self, names: Vec<String>) -> Result<Pool, AvmError> {
        let dut: BoxDut<AvmIn, AvmOut> = match &self.prepared {
            None => Box::new(AvmModel::new()),
            Some(p) => p.instantiate(None)?,
        };
        Pool::new(dut, names)
    }
}

/// Set a pool up as the scenario says: mode, limits, weights, priorities,
/// and each consumer's initial pages.
pub fn configure(pool: &mut Pool, s: &Scenario, mode: Arbitration) -> Result<(), AvmError> {
    pool.queue_mode(mode);
    for (c, k) in s.consumers.iter().enumerate() {
        pool.queue_act(c, Act::Weight(k.weight))?;
        pool.queue_act(c, Act::Priority(k.priority))?;
        pool.queue_act(c, Act::Quota(k.quota))?;
        pool.queue_act(c, Act::Reserve(k.reserve))?;
    }
    pool.drain()?;
    for (c, k) in s.consumers.iter().enumerate() {
        for v in 0..k.pages {
            pool.act(&k.name, Act::Grant(v))
                .map_err(|e| AvmError::Config(format!("granting consumer {c}'s page {v}: {e}")))?;
        }
    }
    Ok(())
}

/// One consumer's open-loop traffic.
struct Source {
    rng: ChaCha8Rng,
    words: u32,
    next_seq: u32,
    backlog: VecDeque<(u64, u32, Option<u32>)>,
    inflight: VecDeque<u64>,
}

impl Source {
    fn new(seed: u64, c: usize, pages: u32) -> Self {
        Self {
            rng: ChaCha8Rng::seed_from_u64(seed ^ (0x9e37_79b9 * (c as u64 + 1))),
            words: pages * m::PAGE_WORDS as u32,
            next_seq: 0,
            backlog: VecDeque::new(),
            inflight: VecDeque::new(),
        }
    }

    fn generate(&mut self, t: &super::scenario::Traffic, cycle: u64) {
        let p = (t.rate / t.burst as f64).clamp(0.0, 1.0);
        if !self.rng.gen_bool(p) {
            return;
        }
        for _ in 0..t.burst {
            let addr = match t.pattern {
                Pattern::Uniform => self.rng.gen_range(0..self.words),
                Pattern::Sequential => {
                    self.next_seq = (self.next_seq + 1) % self.words;
                    self.next_seq
                }
                Pattern::Hotspot if self.rng.gen_bool(0.9) => self.rng.gen_range(0..8),
                Pattern::Hotspot => self.rng.gen_range(0..self.words),
            };
            let data = self.rng.gen_bool(t.write).then(|| self.rng.gen());
            self.backlog.push_back((cycle, addr, data));
        }
    }
}

/// What one run measured for one consumer.
#[derive(Clone, Debug, Default)]
struct Measured {
    /// Latencies of requests that arrived after the warm-up, sorted.
    latencies: Vec<u64>,
    /// Every response: (cycle it came back, its latency), in order.
    samples: Vec<(u64, u64)>,
    responses: u64,
    faults: u64,
    requests: u64,
}

struct RunResult {
    per: Vec<Measured>,
    actions: usize,
    events: Vec<(u64, fw::Event)>,
    cycles_per_second: f64,
}

fn quantile(sorted: &[u64], q: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn slo_guard(s: &Scenario) -> fw::SloGuard {
    let mut cfg = fw::SloConfig {
        victims: 0,
        slo_p99: [0; fw::MAX_CONSUMERS],
        base_weights: [1; fw::MAX_CONSUMERS],
        step: 2,
        over_per_mille: 100,
        under_per_mille: 400,
        calm_windows: 4,
        min_samples: 5,
        infeasible_windows: 6,
        limits: limits(s),
    };
    for (c, k) in s.consumers.iter().enumerate() {
        if let Some(slo) = k.slo_p99 {
            cfg.victims |= 1 << c;
            cfg.slo_p99[c] = slo;
        }
        cfg.base_weights[c] = k.weight;
    }
    fw::SloGuard::new(cfg)
}

fn limits(s: &Scenario) -> fw::Limits {
    let mut l = fw::Limits {
        weight_min: 1,
        weight_max: 64,
        priority_max: 3,
        reserve: [0; fw::MAX_CONSUMERS],
        quota_max: [0; fw::MAX_CONSUMERS],
    };
    for (c, k) in s.consumers.iter().enumerate() {
        l.reserve[c] = k.reserve;
        l.quota_max[c] = k.quota;
    }
    l
}

fn run_once(
    f: &PoolFactory,
    s: &Scenario,
    active: &[bool],
    policy: PoolPolicy,
    cycles: u64,
) -> Result<RunResult, AvmError> {
    let names = s.consumers.iter().map(|c| c.name.clone()).collect();
    let mut pool = f.pool(names)?;
    let mode = match policy {
        PoolPolicy::None => Arbitration::FirstCome,
        _ => Arbitration::Managed,
    };
    configure(&mut pool, s, mode)?;
    let policy: Option<Box<dyn Policy>> = match policy {
        PoolPolicy::None => None,
        PoolPolicy::Static => {
            let mut w = [1; fw::MAX_CONSUMERS];
            let mut q = [0; fw::MAX_CONSUMERS];
            for (c, k) in s.consumers.iter().enumerate() {
                w[c] = k.weight;
                q[c] = k.quota;
            }
            Some(Box::new(fw::Static::new(w, q, limits(s))))
        }
        PoolPolicy::Slo => Some(Box::new(slo_guard(s))),
    };
    Ok(drive(&mut pool, s, active, policy, cycles))
}

/// Run the scenario's traffic (every consumer) on a configured pool for
/// `cycles` cycles, unmanaged (no control loop).
pub fn run_traffic(pool: &mut Pool, s: &Scenario, cycles: u64) {
    let active = vec![true; s.consumers.len()];
    let _ = drive(pool, s, &active, None, cycles);
}

fn drive(
    pool: &mut Pool,
    s: &Scenario,
    active: &[bool],
    mut policy: Option<Box<dyn Policy>>,
    cycles: u64,
) -> RunResult {
    let n = s.consumers.len();
    let mut src: Vec<Source> = s
        .consumers
        .iter()
        .enumerate()
        .map(|(c, k)| Source::new(s.seed, c, k.pages))
        .collect();
    let mut per = vec![Measured::default(); n];
    let mut next_window = s.window;
    let mut observing = false;
    let mut actions = 0;
    let mut events = vec![];
    let t0 = std::time::Instant::now();
    for t in 0..cycles {
        for c in 0..n {
            if active[c] && t >= s.consumers[c].start {
                src[c].generate(&s.consumers[c].traffic, t);
            }
        }
        let mut offers: Offers = [None; m::CONSUMERS];
        for c in 0..n {
            if let Some(&(_, addr, data)) = src[c].backlog.front() {
                offers[c] = Some((addr, data));
            }
        }
        if policy.is_some() && !observing && t >= next_window && pool.idle() {
            pool.queue_observe();
            observing = true;
            next_window += s.window;
        }
        let o = pool.tick(&offers);
        for c in 0..n {
            if o.req_ready & offers[c].map_or(0, |_| 1 << c) != 0 {
                let (gen, _, _) = src[c].backlog.pop_front().expect("offered");
                src[c].inflight.push_back(gen);
                per[c].requests += 1;
            }
        }
        if o.resp_valid {
            let c = o.resp_consumer as usize;
            if let Some(gen) = src.get_mut(c).and_then(|s| s.inflight.pop_front()) {
                if t >= s.warmup {
                    per[c].responses += 1;
                    per[c].faults += u64::from(o.resp_fault);
                }
                if gen >= s.warmup {
                    per[c].latencies.push(t - gen);
                }
                per[c].samples.push((t, t - gen));
            }
        }
        if let Some(snap) = pool.take_snapshot() {
            observing = false;
            if let Some(p) = policy.as_mut() {
                let d = p.decide(&snap.observation());
                events.extend(d.events().map(|e| (t, e)));
                for a in d.iter() {
                    // The policies act inside the limits the scenario
                    // gives them, so a refused action is a policy bug:
                    // skip it rather than stop the run.
                    if pool.queue_policy_action(a).is_ok() {
                        actions += 1;
                    }
                }
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64().max(1e-9);
    for p in &mut per {
        p.latencies.sort_unstable();
    }
    RunResult {
        per,
        actions,
        events,
        cycles_per_second: cycles as f64 / secs,
    }
}

/// How to run a scenario.
pub struct ScenarioOptions {
    /// Policy for the run with everyone.
    pub policy: PoolPolicy,
    /// Cycles per run (the scenario's unless given).
    pub cycles: Option<u64>,
    /// Seeds to run, from the scenario's (at least 1).
    pub seeds: u32,
}

/// Latency and throughput of one consumer in one run.
#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    /// Requests taken by the pool.
    pub requests: u64,
    /// Responses in the measurement interval.
    pub responses: u64,
    /// Median latency, cycles from the request's arrival to its response.
    pub p50: u64,
    /// 99th percentile latency.
    pub p99: u64,
    /// 99.9th percentile latency.
    pub p999: u64,
    /// Responses per cycle in the measurement interval.
    pub throughput: f64,
    /// Faults.
    pub faults: u64,
}

/// One consumer's report for one seed.
#[derive(Clone, Debug, Serialize)]
pub struct ConsumerReport {
    /// Name.
    pub name: String,
    /// `victim` or `aggressor`.
    pub role: &'static str,
    /// The SLO (victims).
    pub slo_p99: Option<u64>,
    /// With everyone, under the policy, after the warm-up.
    pub together: Figures,
    /// Alone (unmanaged).
    pub alone: Figures,
    /// Victims: p99 together / p99 alone.
    pub p99_inflation: Option<f64>,
    /// Aggressors: throughput together / alone.
    pub throughput_retained: Option<f64>,
    /// Victims: p99 of the responses after the controller reacted (from
    /// the window it recovered in; from the first miss if it never did;
    /// the whole measurement if no victim ever missed).
    pub p99_after_reaction: Option<u64>,
    /// Victims: whether `p99_after_reaction` is within the SLO.
    pub slo_met: Option<bool>,
}

/// How the controller reacted to contention, from exact per-window p99s
/// (responses completed in each control window).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Reaction {
    /// End of the first window in which a victim missed its SLO.
    pub first_miss: Option<u64>,
    /// End of the first later window from which every victim met it for
    /// three windows in a row.
    pub recovered: Option<u64>,
    /// `recovered - first_miss`: the reaction time in cycles.
    pub cycles: Option<u64>,
}

/// Something the policy reported.
#[derive(Clone, Debug, Serialize)]
pub struct EventReport {
    /// Device cycle of the decision that reported it.
    pub cycle: u64,
    /// The consumer.
    pub consumer: String,
    /// `infeasible` or `feasible`.
    pub kind: &'static str,
    /// Infeasible: the p99 the policy saw (histogram upper edge) and the
    /// SLO.
    pub p99: Option<u64>,
    /// The SLO.
    pub slo: Option<u64>,
}

/// One seed's run.
#[derive(Clone, Debug, Serialize)]
pub struct SeedReport {
    /// The traffic seed.
    pub seed: u64,
    /// Policy actions applied in the run with everyone.
    pub actions: usize,
    /// Simulated cycles per second of the run with everyone (wall time,
    /// for information).
    pub cycles_per_second: f64,
    /// The controller's reaction.
    pub reaction: Reaction,
    /// What the policy reported.
    pub events: Vec<EventReport>,
    /// Per consumer.
    pub consumers: Vec<ConsumerReport>,
}

/// One consumer's worst case over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct WorstCase {
    /// Name.
    pub name: String,
    /// `victim` or `aggressor`.
    pub role: &'static str,
    /// The SLO (victims).
    pub slo_p99: Option<u64>,
    /// Highest p99 together.
    pub p99: u64,
    /// Highest p99 alone.
    pub p99_alone: u64,
    /// Victims: highest p99 after the reaction.
    pub p99_after_reaction: Option<u64>,
    /// Victims: met in every seed.
    pub slo_met: Option<bool>,
    /// Aggressors: least throughput retained.
    pub throughput_retained: Option<f64>,
    /// The seed of the worst p99 (victims: after the reaction).
    pub seed: u64,
}

/// A scenario's report.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    /// The simulator that ran the standalone block.
    pub simulator: String,
    /// Policy of the run with everyone.
    pub policy: PoolPolicy,
    /// Cycles per run.
    pub cycles: u64,
    /// Cycles before measurement.
    pub warmup: u64,
    /// Control-loop period.
    pub window: u64,
    /// Every victim met its SLO in every seed.
    pub all_met: bool,
    /// The longest reaction over the seeds, cycles (`None` when no victim
    /// ever missed, or one never recovered: see the seeds).
    pub worst_reaction: Option<u64>,
    /// Per consumer, the worst seed.
    pub worst: Vec<WorstCase>,
    /// Every seed.
    pub seeds: Vec<SeedReport>,
}

fn figures(m: &Measured, cycles: u64, warmup: u64) -> Figures {
    Figures {
        requests: m.requests,
        responses: m.responses,
        p50: quantile(&m.latencies, 0.5),
        p99: quantile(&m.latencies, 0.99),
        p999: quantile(&m.latencies, 0.999),
        throughput: m.responses as f64 / (cycles - warmup).max(1) as f64,
        faults: m.faults,
    }
}

/// Responses a window needs before its p99 counts.
const WINDOW_SAMPLES: usize = 5;
/// Windows in a row every victim must meet its SLO in to count as
/// recovered.
const SETTLE: usize = 3;

/// The first window a victim misses and the first later one in which all
/// meet their SLOs, from the responses of each window.
fn reaction(s: &Scenario, per: &[Measured], cycles: u64) -> Reaction {
    let windows = cycles.div_ceil(s.window) as usize;
    // Per window: None (no judgement), Some(true) all victims met.
    let mut verdict: Vec<Option<bool>> = vec![None; windows];
    for (c, k) in s.consumers.iter().enumerate() {
        let Some(slo) = k.slo_p99 else { continue };
        let mut by_window: Vec<Vec<u64>> = vec![vec![]; windows];
        for &(t, lat) in &per[c].samples {
            by_window[((t / s.window) as usize).min(windows - 1)].push(lat);
        }
        for (w, mut l) in by_window.into_iter().enumerate() {
            if l.len() < WINDOW_SAMPLES {
                continue;
            }
            l.sort_unstable();
            let met = quantile(&l, 0.99) <= slo;
            verdict[w] = Some(verdict[w].unwrap_or(true) && met);
        }
    }
    let end = |w: usize| ((w as u64 + 1) * s.window).min(cycles);
    let Some(miss) = verdict.iter().position(|v| *v == Some(false)) else {
        return Reaction::default();
    };
    // Recovered: every victim meets its SLO in this window and the next
    // SETTLE - 1 windows that judge one (a single calm window can be
    // luck).
    let judged: Vec<(usize, bool)> = verdict
        .iter()
        .enumerate()
        .skip(miss + 1)
        .filter_map(|(w, v)| v.map(|v| (w, v)))
        .collect();
    let ok = judged
        .windows(SETTLE)
        .find(|run| run.iter().all(|&(_, met)| met))
        .map(|run| run[0].0);
    Reaction {
        first_miss: Some(end(miss)),
        recovered: ok.map(end),
        cycles: ok.map(|w| end(w) - end(miss)),
    }
}

/// A victim's p99 over the responses from `from` on.
fn p99_from(m: &Measured, from: u64) -> u64 {
    let mut l: Vec<u64> = m
        .samples
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|&(_, lat)| lat)
        .collect();
    l.sort_unstable();
    quantile(&l, 0.99)
}

fn run_seed(
    f: &PoolFactory,
    s: &Scenario,
    policy: PoolPolicy,
    cycles: u64,
) -> Result<SeedReport, AvmError> {
    let n = s.consumers.len();
    let mut alone = vec![];
    for c in 0..n {
        let active: Vec<bool> = (0..n).map(|k| k == c).collect();
        let r = run_once(f, s, &active, PoolPolicy::None, cycles)?;
        alone.push(figures(&r.per[c], cycles, s.warmup));
    }
    let all = run_once(f, s, &vec![true; n], policy, cycles)?;
    let reaction = reaction(s, &all.per, cycles);
    // Where "after the reaction" starts: the start of the window it
    // recovered in, or the first miss if it never did.
    let after = match (&reaction.recovered, &reaction.first_miss) {
        (Some(r), _) => r.saturating_sub(s.window),
        (None, Some(m)) => m.saturating_sub(s.window),
        (None, None) => 0,
    }
    .max(s.warmup);
    let consumers = s
        .consumers
        .iter()
        .enumerate()
        .map(|(c, k)| {
            let together = figures(&all.per[c], cycles, s.warmup);
            let victim = k.slo_p99.is_some();
            let p99_after = victim.then(|| p99_from(&all.per[c], after));
            ConsumerReport {
                name: k.name.clone(),
                role: if victim { "victim" } else { "aggressor" },
                slo_p99: k.slo_p99,
                p99_inflation: victim.then(|| together.p99 as f64 / alone[c].p99.max(1) as f64),
                throughput_retained: (!victim)
                    .then(|| together.throughput / alone[c].throughput.max(f64::MIN_POSITIVE)),
                p99_after_reaction: p99_after,
                slo_met: k.slo_p99.zip(p99_after).map(|(slo, p)| p <= slo),
                together,
                alone: alone[c].clone(),
            }
        })
        .collect();
    let events = all
        .events
        .iter()
        .map(|&(cycle, e)| {
            let (c, kind, p99, slo) = match e {
                fw::Event::Infeasible { consumer, p99, slo } => {
                    (consumer, "infeasible", Some(p99), Some(slo))
                }
                fw::Event::Feasible { consumer } => (consumer, "feasible", None, None),
            };
            EventReport {
                cycle,
                consumer: s
                    .consumers
                    .get(c)
                    .map_or_else(|| c.to_string(), |k| k.name.clone()),
                kind,
                p99,
                slo,
            }
        })
        .collect();
    Ok(SeedReport {
        seed: s.seed,
        actions: all.actions,
        cycles_per_second: all.cycles_per_second,
        reaction,
        events,
        consumers,
    })
}

/// The worst seed for each consumer.
fn worst_cases(s: &Scenario, seeds: &[SeedReport]) -> Vec<WorstCase> {
    s.consumers
        .iter()
        .enumerate()
        .map(|(c, k)| {
            let key = |r: &SeedReport| {
                let x = &r.consumers[c];
                x.p99_after_reaction.unwrap_or(x.together.p99)
            };
            let worst = seeds
                .iter()
                .max_by_key(|r| key(r))
                .expect("at least one seed");
            WorstCase {
                name: k.name.clone(),
                role: worst.consumers[c].role,
                slo_p99: k.slo_p99,
                p99: seeds
                    .iter()
                    .map(|r| r.consumers[c].together.p99)
                    .max()
                    .unwrap_or(0),
                p99_alone: seeds
                    .iter()
                    .map(|r| r.consumers[c].alone.p99)
                    .max()
                    .unwrap_or(0),
                p99_after_reaction: seeds
                    .iter()
                    .filter_map(|r| r.consumers[c].p99_after_reaction)
                    .max(),
                slo_met: k
                    .slo_p99
                    .map(|_| seeds.iter().all(|r| r.consumers[c].slo_met == Some(true))),
                throughput_retained: seeds
                    .iter()
                    .filter_map(|r| r.consumers[c].throughput_retained)
                    .reduce(f64::min),
                seed: worst.seed,
            }
        })
        .collect()
}

/// Run `s` for each seed: every consumer alone, unmanaged, then everyone
/// under the policy.
pub fn run_scenario(
    f: &PoolFactory,
    s: &Scenario,
    o: &ScenarioOptions,
) -> Result<ScenarioReport, AvmError> {
    let cycles = o.cycles.unwrap_or(s.cycles);
    if cycles <= s.warmup {
        return Err(AvmError::Config(format!(
            "--cycles {cycles} must exceed the scenario's warmup ({})",
            s.warmup
        )));
    }
    if o.seeds == 0 || o.seeds > 1000 {
        return Err(AvmError::Config(format!(
            "--seeds {} must be 1..=1000",
            o.seeds
        )));
    }
    let mut seeds = vec![];
    for i in 0..o.seeds {
        let mut si = s.clone();
        si.seed = s.seed.wrapping_add(u64::from(i));
        seeds.push(run_seed(f, &si, o.policy, cycles)?);
    }
    let all_met = seeds
        .iter()
        .flat_map(|r| &r.consumers)
        .all(|c| c.slo_met != Some(false));
    let worst_reaction = if seeds
        .iter()
        .all(|r| r.reaction.first_miss.is_none() || r.reaction.cycles.is_some())
    {
        seeds.iter().filter_map(|r| r.reaction.cycles).max()
    } else {
        None
    };
    Ok(ScenarioReport {
        simulator: f.simulator().into(),
        policy: o.policy,
        cycles,
        warmup: s.warmup,
        window: s.window,
        all_met,
        worst_reaction,
        worst: worst_cases(s, &seeds),
        seeds,
    })
}
