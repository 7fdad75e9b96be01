//! `weft avm`: observe and act on a card's AVM pool; scenarios on the
//! standalone pool block.

use crate::{open_job_card, print_json, spinner, JobCard};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use weft::avm::{self, Act, BlockSim, Pool, PoolFactory, PoolPolicy, Scenario, Snapshot};

#[derive(Subcommand)]
pub enum AvmCmd {
    /// A scenario on the standalone pool block (not the card: its
    /// consumers' synthetic traffic drives the block's consumer ports,
    /// which on the card are MemOps' destinations): every consumer alone,
    /// then everyone together under a policy; per consumer requests,
    /// p50/p99/p999 latency in cycles, throughput and faults, each victim's
    /// p99 inflation and each aggressor's throughput retained.
    Scenario(ScenarioArgs),
    /// Read the card's pool: per consumer (MemOps' destinations port0 to
    /// port3) requests, grants, stall cycles, faults, pages and latency
    /// quantiles from the histograms. With --program and --trace, a MemOps
    /// trace runs through the card first.
    Observe(ObserveArgs),
    /// Apply one action to a consumer of the card's pool, then print the
    /// pool's snapshot.
    Act(ActArgs),
}

#[derive(Args)]
pub struct ScenarioArgs {
    /// A built-in scenario: one of `examples/avm/` by name (contention,
    /// victims, bursty-victim, overload, mid-run, infeasible).
    #[arg(long, conflicts_with = "file")]
    preset: Option<String>,
    /// A scenario file (TOML; see `weft::avm::scenario`).
    #[arg(long)]
    file: Option<PathBuf>,
    /// The standalone block's simulation (default: verilator when it is
    /// installed, else the block's reference model).
    #[arg(long, value_enum)]
    sim: Option<BlockSim>,
    /// Cycles of traffic (the scenario's by default).
    #[arg(long)]
    cycles: Option<u64>,
    /// Policy of the run with everyone: none (unmanaged), static, slo.
    #[arg(long, default_value = "slo")]
    policy: String,
    /// Seeds to run, from the scenario's; the table shows each consumer's
    /// worst seed.
    #[arg(long, default_value_t = 1)]
    seeds: u32,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct ObserveArgs {
    #[command(flatten)]
    card: JobCard,
    /// A MemOps program to run a trace under first (with --trace).
    #[arg(long, requires = "trace")]
    program: Option<PathBuf>,
    /// The MemOps trace to run first (with --program).
    #[arg(long, requires = "program")]
    trace: Option<PathBuf>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
#[group(id = "action", required = true, multiple = false)]
pub struct ActArgs {
    #[command(flatten)]
    card: JobCard,
    /// Consumer to act on: port0 to port3.
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
    /// Map a free page at this virtual page.
    #[arg(long, group = "action")]
    grant: Option<u32>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn load(preset: &Option<String>, file: &Option<PathBuf>) -> Result<Scenario> {
    Ok(match (preset, file) {
        (_, Some(f)) => {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            avm::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", f.display()))?
        }
        (Some(p), None) => avm::preset(p)?,
        (None, None) => avm::preset("contention")?,
    })
}

fn factory(sim: Option<BlockSim>) -> Result<PoolFactory> {
    let sim = sim.unwrap_or(if weft_sim::verilator::toolchain().is_ok() {
        BlockSim::Verilator
    } else {
        eprintln!("note: Verilator is not installed: the scenario runs on the pool's reference model (--sim rust-hdl for the RTL, slowly)");
        BlockSim::Model
    });
    let pb = spinner();
    let progress = |m: &str| pb.set_message(format!("Verilator: {m}"));
    let f = PoolFactory::new(sim, Some(&progress));
    pb.finish_and_clear();
    Ok(f?)
}

pub fn run(cmd: AvmCmd) -> Result<()> {
    match cmd {
        AvmCmd::Scenario(a) => scenario(a),
        AvmCmd::Observe(a) => observe(a),
        AvmCmd::Act(a) => {
            let act = match (a.quota, a.reserve, a.weight, a.priority, a.reclaim, a.grant) {
                (Some(q), ..) => Act::Quota(q),
                (_, Some(r), ..) => Act::Reserve(r),
                (_, _, Some(w), ..) => Act::Weight(w),
                (_, _, _, Some(p), ..) => Act::Priority(p),
                (_, _, _, _, Some(n), _) => Act::Reclaim(n),
                (.., Some(v)) => Act::Grant(v),
                _ => bail!(
                    "give one of --quota, --reserve, --weight, --priority, --reclaim, --grant"
                ),
            };
            let opened = open_job_card(&a.card, false)?;
            let mut pool = Pool::on_card(&opened.card)?;
            let outcome = pool.act(&a.consumer, act)?;
            let snap = pool.observe()?;
            opened.finish()?;
            if a.json {
                return print_json(&serde_json::json!({
                    "device": opened.card.name(),
                    "action": format!("{}: {act:?}", a.consumer),
                    "outcome": outcome,
                    "snapshot": snap,
                }));
            }
            println!(
                "{}: {act:?} applied on {}: {outcome:?}",
                a.consumer,
                opened.card.name()
            );
            print_snapshot(&snap);
            Ok(())
        }
    }
}

fn observe(a: ObserveArgs) -> Result<()> {
    let opened = open_job_card(&a.card, false)?;
    if let (Some(program), Some(trace)) = (&a.program, &a.trace) {
        let p = weft::memops::parse(
            &std::fs::read_to_string(program)
                .with_context(|| format!("reading {}", program.display()))?,
        )
        .map_err(|e| anyhow::anyhow!("{}: {e}", program.display()))?;
        weft::memops::verify(&p)
            .map_err(|r| anyhow::anyhow!("{}: rejected: {}", program.display(), r.message))?;
        let text = std::fs::read_to_string(trace)
            .with_context(|| format!("reading {}", trace.display()))?;
        let reqs = weft::memops::parse_trace(&text).with_context(|| trace.display().to_string())?;
        let rep = weft::memops::run(&opened.card, &p, &reqs)?;
        if let Err(d) = &rep.model {
            bail!("the card disagrees with the reference model: {d}");
        }
    }
    let snap = Pool::on_card(&opened.card)?.observe()?;
    opened.finish()?;
    if a.json {
        return print_json(&serde_json::json!({
            "device": opened.card.name(),
            "snapshot": snap,
        }));
    }
    println!("pool of {}", opened.card.name());
    print_snapshot(&snap);
    Ok(())
}

/// A pool snapshot, one line per consumer.
pub fn print_snapshot(snap: &Snapshot) {
    println!("pool snapshot at pool cycle {}", snap.cycle);
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
}

fn scenario(a: ScenarioArgs) -> Result<()> {
    let s = load(&a.preset, &a.file)?;
    let policy: PoolPolicy = a.policy.parse()?;
    let f = factory(a.sim)?;
    let pb = spinner();
    pb.set_message(format!(
        "{} consumers alone, then together under {}, {} seed(s)",
        s.consumers.len(),
        a.policy,
        a.seeds
    ));
    let rep = avm::run_scenario(
        &f,
        &s,
        &avm::ScenarioOptions {
            policy,
            cycles: a.cycles,
            seeds: a.seeds,
        },
    );
    pb.finish_and_clear();
    let rep = rep?;
    if a.json {
        return print_json(&rep);
    }
    println!(
        "standalone pool block on {}: {} cycles per run ({} warm-up, window {}), policy {}, seeds {}..={}",
        rep.simulator,
        rep.cycles,
        rep.warmup,
        rep.window,
        a.policy,
        s.seed,
        s.seed + u64::from(a.seeds) - 1
    );
    println!("worst seed per consumer (latencies in cycles, throughput in responses per cycle):");
    println!(
        "{:<10} {:<9} {:>4} {:>5} {:>5} {:>6} {:>6} {:>5} {:>4} {:>7} {:>7} {:>5}",
        "consumer",
        "role",
        "slo",
        "p50",
        "p99",
        "p99.9",
        "after",
        "alone",
        "met",
        "tput",
        "kept",
        "seed"
    );
    for w in &rep.worst {
        let c = rep
            .seeds
            .iter()
            .find(|r| r.seed == w.seed)
            .and_then(|r| r.consumers.iter().find(|c| c.name == w.name))
            .expect("the worst seed is one of the seeds");
        let opt = |v: Option<u64>| v.map_or("-".into(), |v| v.to_string());
        println!(
            "{:<10} {:<9} {:>4} {:>5} {:>5} {:>6} {:>6} {:>5} {:>4} {:>7.3} {:>7} {:>5}",
            w.name,
            w.role,
            opt(w.slo_p99),
            c.together.p50,
            w.p99,
            c.together.p999,
            opt(w.p99_after_reaction),
            w.p99_alone,
            w.slo_met.map_or("", |m| if m { "yes" } else { "NO" }),
            c.together.throughput,
            w.throughput_retained
                .map_or("-".into(), |r| format!("{:.0}%", r * 100.0)),
            w.seed
        );
    }
    for r in &rep.seeds {
        let re = &r.reaction;
        let reaction = match (re.first_miss, re.recovered, re.cycles) {
            (None, _, _) => "no victim missed its SLO".to_string(),
            (Some(m), Some(ok), Some(c)) => {
                format!("first miss in the window ending {m}, every victim met from the window ending {ok}: reacted in {c} cycles")
            }
            (Some(m), _, _) => format!("first miss in the window ending {m}, never recovered"),
        };
        println!("seed {}: {} actions; {reaction}", r.seed, r.actions);
        for e in &r.events {
            match (e.p99, e.slo) {
                (Some(p), Some(slo)) => println!(
                    "  cycle {}: {} {} (p99 {p} against an SLO of {slo}): the policy holds",
                    e.cycle, e.consumer, e.kind
                ),
                _ => println!("  cycle {}: {} {}", e.cycle, e.consumer, e.kind),
            }
        }
    }
    println!(
        "every victim met its SLO after the reaction in every seed: {}",
        if rep.all_met { "yes" } else { "no" }
    );
    Ok(())
}
