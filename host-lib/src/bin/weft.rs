//! The `weft` command line.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft::status::Status;
use weft::{DeviceSpec, Nic, OpenOptions};
use weft_regs::MAP;

#[derive(Parser)]
#[command(
    name = "weft",
    version,
    about = "weft: an FPGA SmartNIC in rust-hdl, and its host stack"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Identify a card: ID block and register chain, read through the driver.
    Status(StatusArgs),
    /// Print the register map.
    Regs(JsonArg),
    /// Work with the RTL: emit Verilog, lint it.
    Hdl {
        #[command(subcommand)]
        cmd: HdlCmd,
    },
    /// Identify the card, then self-check: run the CSR block's model,
    /// rust-hdl and Verilator witnesses on a seeded random AXI4-Lite
    /// program and compare them cycle by cycle.
    Verify(VerifyArgs),
}

#[derive(Args)]
struct JsonArg {
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct StatusArgs {
    /// The card: sim, sim:verilator, or vfio:DDDD:BB:DD.F.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum HdlCmd {
    /// Write the Verilog of every block to DIR (one `weft_<block>.v` each).
    Emit {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Run `verilator --lint-only -Wall` on every block with weft's waivers.
    Lint(JsonArg),
}

#[derive(Args)]
struct VerifyArgs {
    /// The card to identify first: sim, sim:verilator, or vfio:DDDD:BB:DD.F.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// Seed of the program and bus timing.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Transactions in the program.
    #[arg(long, default_value_t = 2000)]
    transactions: usize,
    /// Leave Verilator out (two witnesses only). Without Verilator
    /// installed it is left out anyway, with a note.
    #[arg(long)]
    no_verilator: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// A spinner on stderr for long steps; hidden when stderr is not a terminal.
fn spinner() -> ProgressBar {
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    pb.enable_steady_tick(Duration::from_millis(120));
    pb
}

fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn status(a: StatusArgs) -> Result<()> {
    let pb = spinner();
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    let nic = Nic::open_with(
        a.device.clone(),
        &OpenOptions {
            progress: Some(&progress),
            waves: None,
        },
    )
    .with_context(|| format!("opening {}", a.device))?;
    pb.finish_and_clear();
    let info = nic.identify()?;
    let st = Status::new(&a.device.to_string(), &info);
    if a.json {
        print_json(&st)
    } else {
        print!("{}", st.render());
        Ok(())
    }
}

fn regs(a: JsonArg) -> Result<()> {
    if a.json {
        print!("{}", weft_regs::render::json(&MAP));
        return Ok(());
    }
    println!(
        "weft register map {}.{} ({} bytes of BAR 0)",
        MAP.version >> 16,
        MAP.version & 0xffff,
        MAP.span()
    );
    for b in MAP.blocks {
        println!("\n{} @ {:#06x}: {}", b.name, b.base, b.doc);
        for r in b.regs {
            println!(
                "  {:#06x}  {:<12} {:<3}  {:<18} {}",
                r.addr,
                r.name,
                r.access.name(),
                weft_regs::render::value_text(&MAP, b, r),
                r.doc
            );
        }
    }
    Ok(())
}

fn emit(out: PathBuf, json: bool) -> Result<()> {
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let mut files = vec![];
    for e in weft_hdl::emit::all(&weft_hdl::this_build()) {
        let path = out.join(format!("{}.v", weft_hdl::emit::module_name(e.name)));
        std::fs::write(&path, &e.verilog).with_context(|| format!("writing {}", path.display()))?;
        files.push(path);
    }
    let waivers = out.join("weft_waivers.vlt");
    std::fs::write(&waivers, weft_hdl::lint::WAIVERS)
        .with_context(|| format!("writing {}", waivers.display()))?;
    if json {
        print_json(&json!({ "files": files, "waivers": waivers }))
    } else {
        for f in &files {
            println!("wrote {}", f.display());
        }
        println!(
            "wrote {} (Verilator lint waivers, each with its reason)",
            waivers.display()
        );
        Ok(())
    }
}

fn lint(a: JsonArg) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let waivers = dir.path().join("waivers.vlt");
    std::fs::write(&waivers, weft_hdl::lint::WAIVERS)?;
    let mut results = vec![];
    let mut dirty = 0;
    for e in weft_hdl::emit::all(&weft_hdl::this_build()) {
        let module = weft_hdl::emit::module_name(e.name);
        let rep = weft_sim::verilator::lint(&e.verilog, &module, Some(&waivers))
            .with_context(|| format!("linting {module}"))?;
        if !rep.clean {
            dirty += 1;
        }
        results.push((module, rep));
    }
    if a.json {
        let v: Vec<_> = results
            .iter()
            .map(|(m, r)| json!({"module": m, "clean": r.clean, "warnings": r.warnings}))
            .collect();
        print_json(&v)?;
    } else {
        for (m, r) in &results {
            if r.clean {
                println!("{m}: clean (verilator --lint-only -Wall, documented waivers)");
            } else {
                println!("{m}: {} warning(s)", r.warnings.len());
                for w in &r.warnings {
                    println!("  {w}");
                }
            }
        }
    }
    if dirty > 0 {
        bail!("{dirty} module(s) have lint warnings beyond the documented waivers");
    }
    Ok(())
}

fn verify(a: VerifyArgs) -> Result<()> {
    let verilator = !a.no_verilator && weft_sim::verilator::toolchain().is_ok();
    if !a.no_verilator && !verilator {
        eprintln!("note: Verilator not found; running the model and rust-hdl witnesses only (apt-get install verilator for the third)");
    }
    let pb = spinner();
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    let nic = Nic::open_with(
        a.device.clone(),
        &OpenOptions {
            progress: Some(&progress),
            waves: None,
        },
    )
    .with_context(|| format!("opening {}", a.device))?;
    let st = Status::new(&a.device.to_string(), &nic.identify()?);
    pb.finish_and_clear();
    let pb = spinner();
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    pb.set_message("running witnesses");
    let opts = weft::verify::VerifyOptions {
        seed: a.seed,
        transactions: a.transactions,
        verilator,
        progress: Some(&progress),
        ..Default::default()
    };
    let rep = weft::verify::verify_csr(&opts);
    pb.finish_and_clear();
    let rep = rep?;
    if a.json {
        return print_json(&json!({ "status": st, "self_check": rep }));
    }
    print!("{}", st.render());
    println!(
        "self-check of {}: {} transactions, seed {}",
        rep.block, rep.transactions, rep.seed
    );
    for w in &rep.witnesses {
        println!(
            "  {:<10} {:>8} cycles  hash {}  {:>12.0} cycles/s",
            w.witness, w.cycles, w.hash, w.cycles_per_second
        );
    }
    for c in &rep.checks {
        println!("  ok: {c}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Status(a) => status(a),
        Cmd::Regs(a) => regs(a),
        Cmd::Hdl {
            cmd: HdlCmd::Emit { out, json },
        } => emit(out, json),
        Cmd::Hdl {
            cmd: HdlCmd::Lint(a),
        } => lint(a),
        Cmd::Verify(a) => verify(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
