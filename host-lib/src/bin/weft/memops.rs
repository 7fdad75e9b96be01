//! `weft memops check|run`: verify a MemOps program, run a trace through the
//! simulated switch port.

use crate::{print_json, spinner};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;
use weft::DeviceSpec;

#[derive(Subcommand)]
pub enum MemopsCmd {
    /// Verify a MemOps program (TOML): bounded actions, remaps inside their
    /// targets, no route able to write outside its destination's permitted
    /// ranges, conflicts ordered by priority. Exits non-zero on rejection.
    Check {
        /// The program.
        program: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Verify a program, then run a trace (`src op addr len tag [data-hex]`
    /// per line) through the simulated port with memories on its four
    /// ports; print completions per source, telemetry and a SHA-256 of each
    /// memory, and check the run against the reference model.
    Run {
        /// The program.
        #[arg(long)]
        program: PathBuf,
        /// The trace.
        #[arg(long)]
        trace: PathBuf,
        /// The simulated port: sim (rust-hdl) or sim:verilator.
        #[arg(long, default_value = "sim")]
        device: DeviceSpec,
        /// Seed of the memories' timing.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: MemopsCmd) -> Result<()> {
    match cmd {
        MemopsCmd::Check { program, json } => memops_check(&program, json),
        MemopsCmd::Run {
            program,
            trace,
            device,
            seed,
            json,
        } => memops_run(&program, &trace, &device, seed, json),
    }
}

fn load_program(path: &std::path::Path) -> Result<weft::memops::Parsed> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    weft::memops::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

fn memops_check(path: &std::path::Path, json: bool) -> Result<()> {
    let p = load_program(path)?;
    match weft::memops::verify(&p) {
        Ok(summary) => {
            if json {
                print_json(&json!({ "ok": true, "summary": summary }))
            } else {
                println!("{}: ok: {summary}", path.display());
                Ok(())
            }
        }
        Err(r) => {
            if json {
                print_json(
                    &json!({ "ok": false, "stage": r.stage, "address": r.address.map(|a| format!("{a:#x}")), "message": r.message }),
                )?;
            }
            bail!("{}: rejected: {}", path.display(), r.message)
        }
    }
}

fn memops_run(
    program: &std::path::Path,
    trace: &std::path::Path,
    device: &DeviceSpec,
    seed: u64,
    json: bool,
) -> Result<()> {
    use weft::spec::SimEngine;
    let p = load_program(program)?;
    weft::memops::verify(&p)
        .map_err(|r| anyhow::anyhow!("{}: rejected: {}", program.display(), r.message))?;
    let text =
        std::fs::read_to_string(trace).with_context(|| format!("reading {}", trace.display()))?;
    let reqs = weft::memops::parse_trace(&text).with_context(|| trace.display().to_string())?;
    let engine = match device {
        DeviceSpec::Sim(SimEngine::RustHdl) => weft_sim::engine::Engine::RustHdl,
        DeviceSpec::Sim(SimEngine::Verilator) => weft_sim::engine::Engine::Verilator,
        other => bail!("{other}: MemOps runs on the simulated port (sim or sim:verilator)"),
    };
    let pb = spinner();
    let progress = |m: &str| pb.set_message(format!("Verilator: {m}"));
    let opts = weft::memops::RunOptions {
        engine,
        timing: weft_model::memops::driver::MemTiming {
            max_delay: 4,
            ..weft_model::memops::driver::MemTiming::FAST
        },
        seed,
        progress: Some(&progress),
    };
    let rep = weft::memops::run(&p, &reqs, &opts);
    pb.finish_and_clear();
    let rep = rep?;
    if json {
        print_json(&rep)?;
    } else {
        for (src, lines) in rep.completions.iter().enumerate() {
            for c in lines {
                match &c.data {
                    Some(d) => println!("{src} {} {} {d}", c.tag, c.status),
                    None => println!("{src} {} {}", c.tag, c.status),
                }
            }
        }
        println!("# telemetry");
        for (name, v) in &rep.telemetry {
            if *v != 0 || !name.starts_with("stage") {
                println!("{name} {v}");
            }
        }
        println!("# memory sha256");
        for (port, h) in rep.memory_sha256.iter().enumerate() {
            println!("port{port} {h}");
        }
        eprintln!(
            "{} requests on {}: {} cycles, {:.3} headers/cycle, added latency {} cycles; model: {}",
            reqs.len(),
            rep.engine,
            rep.cycles,
            rep.headers_per_cycle,
            rep.added_latency
                .map_or("n/a".to_string(), |l| l.to_string()),
            if rep.model_agrees {
                "agrees"
            } else {
                "DISAGREES"
            }
        );
    }
    if let Some(d) = &rep.difference {
        bail!("the port disagrees with the reference model: {d}");
    }
    Ok(())
}
