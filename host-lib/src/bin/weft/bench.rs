//! `weft bench kv|memops|grad`: benchmarks, counted in cycles.

use crate::agg::grad::{load, CHUNK_VALUES};
use crate::{open_card, print_json, spinner, DeviceArg};
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use weft::grad::{self, GradError, PriorityPolicy};
use weft::spec::SimChoice;
use weft::{Card, DeviceSpec, OpenOptions};

#[derive(Subcommand)]
pub enum BenchCmd {
    /// The key-value engine: line rate of the kv_agg block at 512 bits
    /// (uniform, Zipf and one-key streams), NIC residency on the card with
    /// and without replacement (Zipf 0.99 and 1.2, table 1% and 10% of the
    /// distinct keys), and simulation speed of the card on each simulator.
    Kv(BenchKvArgs),
    /// The MemOps port (8 stages): request headers per cycle under random
    /// traffic, and with back-pressure on one destination; added latency.
    Memops {
        /// Requests per scenario.
        #[arg(long, default_value_t = 2000)]
        requests: usize,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Gradient aggregation: multi-job workloads (the shipped one by
    /// default: scarce slots, stragglers, jobs of different communication
    /// intensity) under fifo and a policy (dsa by default), per seed; the
    /// per-seed ratio of average JCTs (mean, ratio of means, median, worst
    /// seed), values per cycle, chunks on the card and by the host,
    /// preemptions.
    Grad(BenchGradArgs),
    /// Goodput under loss. Key-value: the main command's stream (Zipf 1.2,
    /// 100,000 keys, 8 workers) with loss, duplication and reordering each
    /// at 0, 1% and 5%, tuples per cycle per network seed, their mean, the
    /// ratio to the lossless mean and the target 0.9 (1 - p). Gradient:
    /// the shipped workload (examples/grad/jobs.toml) under fifo at 0, 1%
    /// and 5% DATA loss, duplication and reordering each, the average JCT
    /// per seed, the ratio to the lossless mean and the bound 1.2 / (1 - p).
    Goodput(BenchGoodputArgs),
    /// Simulation speed of the whole card: weft_top under sustained mixed
    /// traffic on both inputs (key-value, gradient, MemOps, other and
    /// malformed frames), on Verilator (the Verilog every tool gets, and
    /// rust-hdl's own one-block-per-module Verilog: before and after the
    /// split), rust-hdl's simulator and the top's model, in axis_aclk
    /// cycles per second; where Verilator's time goes; whether the RTL runs
    /// sent the same frames.
    Sim(BenchSimArgs),
}

#[derive(Args)]
pub struct BenchSimArgs {
    /// Cycles of traffic on Verilator and the model.
    #[arg(long, default_value_t = 200_000)]
    cycles: u64,
    /// Cycles of traffic on rust-hdl's simulator (0 skips it; it runs a
    /// few hundred cycles a second on the whole card).
    #[arg(long, default_value_t = 2_000)]
    rust_hdl_cycles: u64,
    /// Seed of the card's configuration and the traffic.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rounds of the Verilator and model simulations (within a round they
    /// take turns); the fastest of each is reported (wall time on a shared
    /// machine varies).
    #[arg(long, default_value_t = 3)]
    repeat: u32,
    /// Run only the simulation of this name, e.g. "verilator, stepped";
    /// repeat to run several (they take turns, as all do without it).
    #[arg(long, value_name = "NAME")]
    only: Vec<String>,
    /// Offer no frames after the configuration: the card's cost with
    /// nothing to do (every block is still evaluated every cycle), against
    /// which the traffic's own cost shows.
    #[arg(long)]
    idle: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BenchGoodputArgs {
    /// Tuples in the stream.
    #[arg(long, default_value_t = 200_000)]
    tuples: u64,
    /// Network seeds, from 1.
    #[arg(long, default_value_t = 10)]
    seeds: u64,
    /// The card (sim:model is the fast one).
    #[command(flatten)]
    card: DeviceArg,
    /// Run only one half: `kv` (key-value goodput) or `grad` (gradient
    /// average JCT). Default: both.
    #[arg(long, value_enum)]
    only: Option<GoodputPart>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// A half of `weft bench goodput`.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GoodputPart {
    /// Key-value tuples per cycle.
    Kv,
    /// Gradient average JCT.
    Grad,
}

#[derive(Args)]
pub struct BenchKvArgs {
    /// Full packets (182 tuples) per line-rate stream.
    #[arg(long, default_value_t = 200)]
    packets: usize,
    /// Tuples per residency run.
    #[arg(long, default_value_t = 1_000_000)]
    tuples: u64,
    /// The card the residency jobs run on (sim:model is the fast one).
    #[command(flatten)]
    card: DeviceArg,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BenchGradArgs {
    /// A workload (JOBS.toml); may be given several times. Default: the
    /// shipped examples/grad/jobs.toml, built in.
    #[arg(long)]
    jobs: Vec<PathBuf>,
    /// Every shipped workload (examples/grad/*.toml, built in), after any
    /// --jobs.
    #[arg(long)]
    all: bool,
    /// The policy compared with fifo: srpt (shortest remaining work first,
    /// on the card's priorities and the switch's traffic classes), dsa
    /// (intensity groups), rank or static.
    #[arg(long, default_value = "srpt")]
    policy: String,
    #[command(flatten)]
    card: DeviceArg,
    /// First seed (of the workers' compute jitter and the gradients).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Replace every workload's `jitter` (stragglers' delay, a fraction
    /// of compute, 0 to 1): `--jitter 0` runs the workloads without
    /// stragglers.
    #[arg(long)]
    jitter: Option<f64>,
    /// Seeds to run, from --seed on; each runs both policies. Under fifo
    /// the outcome swings with the stragglers the seed draws, so the
    /// comparison is of the distribution over many.
    #[arg(long, default_value_t = 20)]
    seeds: u64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: BenchCmd) -> Result<()> {
    match cmd {
        BenchCmd::Kv(a) => bench_kv(a),
        BenchCmd::Memops { requests, json } => bench_memops(requests, json),
        BenchCmd::Grad(a) => bench_grad(a),
        BenchCmd::Goodput(a) => bench_goodput(a),
        BenchCmd::Sim(a) => bench_sim(a),
    }
}

fn bench_memops(requests: usize, json: bool) -> Result<()> {
    use weft_sim::simulator::Simulator;
    let simulator = if weft_sim::verilator::toolchain().is_ok() {
        Simulator::Verilator
    } else {
        Simulator::RustHdl
    };
    let r = weft::bench::memops(simulator, requests)?;
    if json {
        return print_json(&r);
    }
    println!("MemOps port, 8 stages, on {}:", simulator.name());
    for x in &r {
        println!(
            "  {:<38} {:>6} requests: {:.3} headers/cycle, added latency {} cycles, model {}",
            x.scenario,
            x.requests,
            x.headers_per_cycle,
            x.added_latency.map_or("n/a".into(), |l| l.to_string()),
            if x.model_agrees {
                "agrees"
            } else {
                "DISAGREES"
            }
        );
    }
    Ok(())
}

fn bench_kv(a: BenchKvArgs) -> Result<()> {
    use weft_sim::simulator::Simulator;
    let verilator = weft_sim::verilator::toolchain().is_ok();
    let simulator = if verilator {
        Simulator::Verilator
    } else {
        Simulator::RustHdl
    };
    if !verilator {
        eprintln!(
            "note: Verilator not found; the RTL runs in rust-hdl's simulator (slow at 512 bits)"
        );
    }
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let opts = weft::bench::BenchOptions {
        simulator,
        packets: a.packets,
        tuples: a.tuples,
        card: a.card.device.clone(),
        progress: Some(&progress),
    };
    let mut speed = vec![
        DeviceSpec::Sim(SimChoice::Model),
        DeviceSpec::Sim(SimChoice::RustHdl),
    ];
    if verilator {
        speed.push(DeviceSpec::Sim(SimChoice::Verilator));
    }
    let r = weft::bench::kv(&opts, &speed);
    pb.finish_and_clear();
    let r = r?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "line rate of kv_agg at 512 bits (8 lanes), full 1472-byte packets, on {}:",
        simulator.name()
    );
    println!(
        "  {:<28} {:>9} {:>8} {:>10} {:>12} {:>11} {:>7}",
        "stream", "tuples", "cycles", "beats/cyc", "tuples/cyc", "in. stalls", "model"
    );
    for l in &r.line_rate {
        println!(
            "  {:<28} {:>9} {:>8} {:>10.3} {:>12.3} {:>11} {:>7}",
            l.stream,
            l.tuples,
            l.cycles,
            l.beats_per_cycle,
            l.tuples_per_cycle,
            l.input_stalls,
            if l.model_agrees { "agrees" } else { "DIFFERS" }
        );
    }
    println!(
        "\nNIC residency ({} card, {} slots, 8 workers):",
        r.residency.first().map_or("", |x| x.card.as_str()),
        r.residency.first().map_or(0, |x| x.slots)
    );
    println!(
        "  {:>5} {:>9} {:>9} {:>7} {:>8} {:>9} {:>12} {:>11}",
        "zipf", "universe", "distinct", "table", "replace", "resident", "host rec/t", "tuples/cyc"
    );
    for x in &r.residency {
        println!(
            "  {:>5} {:>9} {:>9} {:>6.1}% {:>8} {:>9.3} {:>12.3} {:>11.2}",
            x.zipf,
            x.universe,
            x.distinct,
            100.0 * x.table_fraction,
            if x.replace { "on" } else { "off" },
            x.nic_resident_fraction,
            x.host_record_fraction,
            x.tuples_per_cycle
        );
    }
    println!("\nsimulation speed of the card (weft_top, or its model), one 20k-tuple job:");
    for s in &r.sim_speed {
        println!(
            "  {:<10} {:>9} cycles in {:>6.2} s: {:>10.0} cycles/s",
            s.card, s.cycles, s.seconds, s.cycles_per_second
        );
    }
    Ok(())
}

fn bench_grad(a: BenchGradArgs) -> Result<()> {
    let mut files = vec![];
    for p in &a.jobs {
        files.push((p.display().to_string(), load(p, CHUNK_VALUES)?));
    }
    if a.all {
        for (name, f) in grad::bench::workloads(CHUNK_VALUES)? {
            files.push((format!("examples/grad/{name} (built in)"), f));
        }
    }
    if files.is_empty() {
        files.push((
            "examples/grad/jobs.toml (built in)".to_string(),
            grad::bench::workload(CHUNK_VALUES)?,
        ));
    }
    if let Some(j) = a.jitter {
        if !(0.0..=1.0).contains(&j) {
            bail!("--jitter {j}: must be 0 to 1 (a fraction of compute)");
        }
        for (name, f) in &mut files {
            f.jitter = j;
            *name = format!("{name}, jitter {j}");
        }
    }
    let policy: grad::PriorityPolicy = a.policy.parse()?;
    if policy == grad::PriorityPolicy::Fifo {
        bail!(
            "--policy fifo: the benchmark compares fifo with another policy (srpt, dsa, rank or static)"
        );
    }
    if a.seeds == 0 {
        bail!("--seeds must be at least 1");
    }
    // Open the card once first (a Verilator build is cached, and its
    // errors show here), then every run gets a fresh card.
    let device = a.card.device.clone();
    drop(open_card(&device)?);
    let pb = spinner();
    let opener =
        || Card::open_with(device.clone(), &OpenOptions::default()).map_err(GradError::from_card);
    let seeds: Vec<u64> = (0..a.seeds).map(|k| a.seed.wrapping_add(k)).collect();
    let mut benches = vec![];
    for (name, file) in &files {
        let progress = |m: &str| pb.set_message(format!("{name}: {m}"));
        match grad::bench::bench(&opener, file, policy, &seeds, Some(&progress)) {
            Ok(b) => benches.push((name.clone(), file.jobs.len(), b)),
            Err(e) => {
                pb.finish_and_clear();
                return Err(anyhow::anyhow!("{name}: {e}"));
            }
        }
    }
    pb.finish_and_clear();
    if a.json {
        return print_json(&serde_json::json!({
            "device": device.to_string(),
            "policy": policy,
            "workloads": benches
                .iter()
                .map(|(name, _, b)| serde_json::json!({ "workload": name, "bench": b }))
                .collect::<Vec<_>>(),
        }));
    }
    for (name, jobs, b) in &benches {
        print_grad_bench(name, *jobs, &device, &seeds, b);
        println!();
    }
    println!(
        "fifo / {policy} average JCT per seed, over seeds {}..={} on {device} (above 1: {policy} wins):",
        seeds[0],
        seeds[seeds.len() - 1]
    );
    println!(
        "{:<40} {:>6} {:>9} {:>7} {:>13} {:>5}",
        "workload", "mean", "of means", "median", "worst (seed)", ">2%"
    );
    for (name, _, b) in &benches {
        let r = &b.ratio;
        println!(
            "{:<40} {:>6.3} {:>9.3} {:>7.3} {:>6.3} ({:>4}) {:>5}",
            name,
            r.mean_of_ratios,
            r.ratio_of_means,
            r.median,
            r.worst,
            r.worst_seed,
            r.seeds_lost_beyond_2pct
        );
    }
    println!("every sum exact in every run");
    Ok(())
}

fn print_grad_bench(
    name: &str,
    jobs: usize,
    device: &DeviceSpec,
    seeds: &[u64],
    b: &grad::bench::GradBench,
) {
    let p = b.policy;
    println!(
        "weft bench grad: {name}, {jobs} jobs on {device} ({}, {} slots), fifo against {p}, seeds {}..={}",
        b.card,
        b.slots,
        seeds[0],
        seeds[seeds.len() - 1]
    );
    println!(
        "{:<12} {:>8} {:>11} {:>11} {:>7}",
        "job",
        "B/cycle",
        "JCT fifo",
        format!("JCT {p}"),
        format!("{p}/ff")
    );
    for (j, job) in b.jobs.iter().enumerate() {
        let (f, d) = (b.fifo.job_jct[j], b.other.job_jct[j]);
        println!(
            "{:<12} {:>8.1} {:>11.0} {:>11.0} {:>7.2}",
            job,
            b.intensity[j],
            f,
            d,
            d / f.max(1.0)
        );
    }
    for r in &b.runs {
        println!(
            "seed {:>3}: average JCT fifo {:>9.0}, {p} {:>9.0}, fifo/{p} {:.3}",
            r.seed, r.fifo.average_jct, r.policy.average_jct, r.jct_ratio
        );
    }
    for (q, m) in [("fifo".to_string(), &b.fifo), (p.to_string(), &b.other)] {
        println!(
            "{q:<6}: average JCT {:>9.0} cycles, makespan {:>9.0}, {:.2} values/cycle, chunks on card {:.0} / by host {:.0}, {:.0} preemptions, {:.0} packets forwarded (means over seeds)",
            m.average_jct,
            m.makespan,
            m.values_per_cycle,
            m.on_card,
            m.by_host,
            m.preemptions,
            m.fallback_packets
        );
    }
    let r = &b.ratio;
    println!(
        "fifo/{p} average JCT over {} seeds: mean of ratios {:.3}, ratio of means {:.3}, median {:.3}, worst {:.3} (seed {}), best {:.3} (seed {}); {} seeds more than 2% worse than fifo (DSA reports up to 1.35x)",
        r.seeds,
        r.mean_of_ratios,
        r.ratio_of_means,
        r.median,
        r.worst,
        r.worst_seed,
        r.best,
        r.best_seed,
        r.seeds_lost_beyond_2pct
    );
}

fn bench_goodput(a: BenchGoodputArgs) -> Result<()> {
    let pb = spinner();
    let r = if a.only == Some(GoodputPart::Grad) {
        vec![]
    } else {
        pb.set_message(format!(
            "{} tuples at 0, 1% and 5% loss, {} seeds each",
            a.tuples, a.seeds
        ));
        match weft::bench::goodput(&a.card.device, a.tuples, a.seeds) {
            Ok(r) => r,
            Err(e) => {
                pb.finish_and_clear();
                return Err(e.into());
            }
        }
    };
    let g = if a.only == Some(GoodputPart::Kv) {
        vec![]
    } else {
        pb.set_message(format!(
            "gradient jobs at 0, 1% and 5% loss, duplication and reordering, {} seeds each",
            a.seeds
        ));
        let device = a.card.device.clone();
        let opener = || {
            Card::open_with(device.clone(), &OpenOptions::default()).map_err(GradError::from_card)
        };
        let seeds: Vec<u64> = (1..=a.seeds.max(1)).collect();
        let g = grad::bench::workload(CHUNK_VALUES)
            .and_then(|f| grad::bench::loss(&opener, &f, PriorityPolicy::Fifo, &seeds));
        match g {
            Ok(g) => g,
            Err(e) => {
                pb.finish_and_clear();
                return Err(e.into());
            }
        }
    };
    pb.finish_and_clear();
    if a.json {
        return print_json(&serde_json::json!({ "kv": r, "grad": g }));
    }
    if !r.is_empty() {
        print_kv_goodput(&a, &r);
    }
    if !g.is_empty() {
        print_grad_goodput(&a, &g);
    }
    Ok(())
}

fn print_kv_goodput(a: &BenchGoodputArgs, r: &[weft::bench::GoodputPoint]) {
    println!(
        "key-value goodput, zipf 1.2 over 100000 keys, {} tuples, 8 workers, on {}, seeds 1..={}:",
        a.tuples, a.card.device, a.seeds
    );
    println!(
        "  {:>5} {:>10} {:>7} {:>7} {:>8} {:>9}  per seed",
        "p", "tuples/cyc", "ratio", "target", "retrans.", "timeouts"
    );
    for g in r {
        let per: Vec<String> = g
            .tuples_per_cycle
            .iter()
            .map(|t| format!("{t:.2}"))
            .collect();
        println!(
            "  {:>5} {:>10.3} {:>7.3} {:>7.3} {:>8} {:>9}  {}",
            g.p,
            g.mean,
            g.ratio,
            g.target,
            g.retransmissions,
            g.timeouts,
            per.join(" ")
        );
    }
}

fn print_grad_goodput(a: &BenchGoodputArgs, g: &[weft::grad::bench::LossPoint]) {
    println!(
        "gradient average JCT, examples/grad/jobs.toml under fifo, DATA loss, duplication and reordering p each, on {}, seeds 1..={}:",
        a.card.device, a.seeds
    );
    println!(
        "  {:>5} {:>12} {:>7} {:>7} {:>8} {:>7} {:>9} {:>8}  per seed",
        "p", "avg JCT", "ratio", "bound", "retrans.", "lost", "per lost", "host rq."
    );
    for l in g {
        let per: Vec<String> = l.average_jct.iter().map(|t| format!("{t:.0}")).collect();
        let per_lost = if l.lost == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", l.copies_per_loss)
        };
        println!(
            "  {:>5} {:>12.0} {:>7.3} {:>7.3} {:>8} {:>7} {:>9} {:>8}  {}",
            l.p,
            l.mean,
            l.ratio,
            l.bound,
            l.retransmissions,
            l.lost,
            per_lost,
            l.host_resends,
            per.join(" ")
        );
    }
}

fn bench_sim(a: BenchSimArgs) -> Result<()> {
    if weft_sim::verilator::toolchain().is_err() {
        bail!(
            "weft bench sim compares Verilator runs: install Verilator (apt-get install verilator)"
        );
    }
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let r = weft::bench::sim::run(&weft::bench::sim::SimBenchOptions {
        cycles: a.cycles,
        rust_hdl_cycles: a.rust_hdl_cycles,
        seed: a.seed,
        repeat: a.repeat,
        only: a.only.clone(),
        idle: a.idle,
        progress: Some(&progress),
    });
    pb.finish_and_clear();
    let r = r?;
    if a.json {
        return print_json(&r);
    }
    if r.idle {
        println!(
            "weft_top, idle (no frames offered), after {} cycles of configuration (seed {}):",
            r.config_cycles, r.seed
        );
    } else {
        println!(
            "weft_top, sustained mixed traffic on both inputs (seed {}), after {} cycles of configuration:",
            r.seed, r.config_cycles
        );
    }
    for run in &r.runs {
        println!(
            "  {:<32} {:>9} cycles {:>8.2} s {:>12.0} cycles/s   {:>6} frames in, {:>6} out, {:.1} bytes in/cycle",
            run.simulation,
            run.cycles,
            run.seconds,
            run.cycles_per_second,
            run.frames_in,
            run.frames_out,
            run.bytes_in_per_cycle
        );
        if let Some(p) = &run.profile {
            println!(
                "  {:<32} profiled at {:.0} cycles/s: {:.0}% in the Verilated model, {:.0}% packing ports and driving streams, {:.0}% harness",
                "",
                p.cycles_per_second,
                100.0 * p.model,
                100.0 * p.ports,
                100.0 * p.harness,
            );
        }
    }
    if let Some(x) = r.training_speedup {
        println!("  trained (profile-guided) model: {x:.2}x the speed of the same build untrained");
    }
    if let Some(x) = r.fold_speedup {
        println!("  registers folded into their parents, constants wired: {x:.2}x the speed of one module a register (both untrained)");
    }
    if let Some(x) = r.one_eval_speedup {
        println!("  one evaluation a step: {x:.2}x the speed of two");
    }
    if let Some(x) = r.runner_speedup {
        println!("  streams run inside the model (many steps a call, two evaluations a step): {x:.2}x the speed of one FFI call a step");
    }
    if let Some(x) = r.split_speedup {
        println!("  one combinational block per signal, registers folded: {x:.2}x the speed of rust-hdl's own Verilog on Verilator (both stepped)");
    }
    println!(
        "  the RTL runs {} frame for frame: the Verilator runs over all {} cycles, rust-hdl's over its first {}",
        if r.agree { "agree" } else { "DISAGREE" },
        r.verilator_compared_cycles,
        r.compared_cycles
    );
    if !r.agree {
        bail!("the RTL simulations sent different frames");
    }
    Ok(())
}
