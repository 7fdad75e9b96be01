//! `weft avm`: scenarios, observation and actions on the AVM pool.

use crate::{print_json, spinner};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use weft::avm::{self, Act, Arbitration, PolicyKind, PoolFactory, Scenario};
use weft::spec::SimEngine;
use weft::DeviceSpec;

#[derive(Subcommand)]
pub enum AvmCmd {
    /// Run a scenario: every consumer alone, then everyone together under a
    /// policy; per consumer requests, p50/p99/p999 latency in cycles,
    /// throughput and faults, each victim's p99 inflation and each
    /// aggressor's throughput retained.
    Scenario(ScenarioArgs),
    /// Run a scenario's setup and traffic (unmanaged) for some cycles, then
    /// print the pool's snapshot: counters, latency quantiles from the
    /// histograms, pages.
    Observe(ObserveArgs),
    /// Apply one action to a consumer after a scenario's setup, then print
    /// the snapshot after some cycles of its traffic.
    Act(ActArgs),
}

#[derive(Args)]
pub struct Source {
    /// A built-in scenario.
    #[arg(long, conflicts_with = "file")]
    preset: Option<String>,
    /// A scenario file (TOML; see `weft::avm::scenario`).
    #[arg(long)]
    file: Option<PathBuf>,
    /// The simulated pool: sim (rust-hdl), sim:verilator or sim:model.
    #[arg(long, default_value = "sim:verilator")]
    device: DeviceSpec,
    /// Cycles of traffic (the scenario's by default).
    #[arg(long)]
    cycles: Option<u64>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ScenarioArgs {
    #[command(flatten)]
    src: Source,
    /// Policy of the run with everyone: none (unmanaged), static, slo.
    #[arg(long, default_value = "slo")]
    policy: String,
}

#[derive(Args)]
pub struct ObserveArgs {
    #[command(flatten)]
    src: Source,
}

#[derive(Args)]
#[group(id = "action", required = true, multiple = false)]
pub struct ActArgs {
    #[command(flatten)]
    src: Source,
    /// Consumer to act on.
    #[arg(long)]
    consumer: String,
    /// Page quota.
    #[arg(long, group = "action")]
    quota: Option<u32>,
    /// Page reservation.
    #[arg(long, group = "action")]
    reserve: Option<u32>,
    /// Arbitration weight.
    #[arg(long, group = "action")]
    weight: Option<u32>,
    /// Priority class.
    #[arg(long, group = "action")]
    priority: Option<u32>,
    /// Reclaim up to N pages.
    #[arg(long, group = "action")]
    reclaim: Option<u32>,
}

fn load(src: &Source) -> Result<Scenario> {
    Ok(match (&src.preset, &src.file) {
        (_, Some(f)) => {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            avm::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?
        }
        (Some(p), None) => avm::preset(p)?,
        (None, None) => avm::preset("contention")?,
    })
}

fn factory(device: &DeviceSpec) -> Result<PoolFactory> {
    let engine = match device {
        DeviceSpec::Sim(e) => *e,
        DeviceSpec::Vfio(_) => bail!(
            "{device}: AVM scenarios drive the pool's consumer ports with their own traffic, which only the simulated pool offers (on the card the consumers are MemOps' destinations); they run on sim, sim:verilator or sim:model"
        ),
    };
    let pb = spinner();
    let progress = |m: &str| pb.set_message(format!("Verilator: {m}"));
    let f = PoolFactory::new(
        engine,
        matches!(engine, SimEngine::Verilator).then_some(&progress as &dyn Fn(&str)),
    );
    pb.finish_and_clear();
    Ok(f?)
}

pub fn run(cmd: AvmCmd) -> Result<()> {
    match cmd {
        AvmCmd::Scenario(a) => scenario(a),
        AvmCmd::Observe(a) => observe(&a.src, None),
        AvmCmd::Act(a) => {
            let act = match (a.quota, a.reserve, a.weight, a.priority, a.reclaim) {
                (Some(q), ..) => Act::Quota(q),
                (_, Some(r), ..) => Act::Reserve(r),
                (_, _, Some(w), ..) => Act::Weight(w),
                (_, _, _, Some(p), _) => Act::Priority(p),
                (.., Some(n)) => Act::Reclaim(n),
                _ => bail!("give one of --quota, --reserve, --weight, --priority, --reclaim"),
            };
            observe(&a.src, Some((a.consumer.as_str(), act)))
        }
    }
}

fn scenario(a: ScenarioArgs) -> Result<()> {
    let s = load(&a.src)?;
    let policy: PolicyKind = a.policy.parse()?;
    let f = factory(&a.src.device)?;
    let pb = spinner();
    pb.set_message(format!(
        "{} consumers alone, then together under {}",
        s.consumers.len(),
        a.policy
    ));
    let rep = avm::run_scenario(
        &f,
        &s,
        &avm::ScenarioOptions {
            policy,
            cycles: a.src.cycles,
        },
    );
    pb.finish_and_clear();
    let rep = rep?;
    if a.src.json {
        return print_json(&rep);
    }
    println!(
        "{} cycles per run ({} warm-up), policy {}, {} actions, on {} ({:.0} cycles/s)",
        rep.cycles, rep.warmup, a.policy, rep.actions, rep.engine, rep.cycles_per_second
    );
    println!(
        "{:<10} {:<9} {:>8} {:>5} {:>5} {:>6} {:>7} {:>7} {:>7}",
        "consumer", "role", "requests", "p50", "p99", "p99.9", "tput", "alone", "ratio"
    );
    for c in &rep.consumers {
        let (alone, ratio) = match (c.p99_inflation, c.throughput_retained) {
            (Some(i), _) => (format!("p99 {}", c.alone.p99), format!("{i:.2}x")),
            (_, Some(r)) => (
                format!("{:.3}", c.alone.throughput),
                format!("{:.0}%", r * 100.0),
            ),
            _ => (String::new(), String::new()),
        };
        println!(
            "{:<10} {:<9} {:>8} {:>5} {:>5} {:>6} {:>7.3} {:>7} {:>7}",
            c.name,
            c.role,
            c.together.requests,
            c.together.p50,
            c.together.p99,
            c.together.p999,
            c.together.throughput,
            alone,
            ratio
        );
    }
    Ok(())
}

fn observe(src: &Source, act: Option<(&str, Act)>) -> Result<()> {
    let s = load(src)?;
    let f = factory(&src.device)?;
    let mut pool = f.pool(s.consumers.iter().map(|c| c.name.clone()).collect())?;
    avm::configure(&mut pool, &s, Arbitration::FirstCome)?;
    let outcome = match act {
        Some((name, a)) => Some(pool.act(name, a)?),
        None => None,
    };
    let cycles = src.cycles.unwrap_or(s.cycles.min(10_000));
    avm::run_traffic(&mut pool, &s, cycles);
    let snap = pool.observe();
    if src.json {
        return print_json(&serde_json::json!({
            "action": act.map(|(c, a)| format!("{c}: {a:?}")),
            "outcome": outcome,
            "snapshot": snap,
        }));
    }
    if let (Some((c, a)), Some(o)) = (act, outcome) {
        println!("{c}: {a:?} applied {o:?}");
    }
    println!("pool snapshot at cycle {}", snap.cycle);
    println!(
        "{:<10} {:>8} {:>8} {:>8} {:>7} {:>5} {:>6} {:>6}",
        "consumer", "requests", "grants", "stalls", "faults", "pages", "p50<=", "p99<="
    );
    for c in &snap.consumers {
        let q = |pm| weft_fw::avm::quantile(&[0; 16], &c.hist, pm).unwrap_or(0);
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>7} {:>5} {:>6} {:>6}",
            c.name,
            c.requests,
            c.grants,
            c.stall_cycles,
            c.faults,
            c.pages,
            q(500),
            q(990)
        );
    }
    Ok(())
}
