//! The `weft` command line: one module per command group.
//!
//! * [`card`]: `weft status`, `weft regs`, `weft verify`;
//! * [`hdl`]: `weft hdl emit|lint|synth`;
//! * [`agg`]: `weft agg kv|gen|grad`;
//! * [`avm`]: `weft avm scenario|observe|act`;
//! * [`memops`]: `weft memops check|run`;
//! * [`bench`]: `weft bench kv|queue|memops|grad`;
//! * [`pci`]: `weft probe`, `weft bind`;
//! * [`bitstream`]: `weft bitstream build|estimate|list|flash|fusesoc`.
//!
//! The work itself is in the `weft` library; these modules read the
//! arguments, show progress, and print. An error is one line on stderr
//! (`error: ...`, with its causes) and exit status 1.

use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;
use std::time::Duration;

mod agg;
mod avm;
mod bench;
mod bitstream;
mod card;
mod hdl;
mod memops;
mod pci;

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
    Status(card::StatusArgs),
    /// Print the register map.
    Regs(JsonArg),
    /// Work with the RTL: emit Verilog, lint it.
    Hdl {
        #[command(subcommand)]
        cmd: hdl::HdlCmd,
    },
    /// Identify the card, then self-check: run the CSR block's model,
    /// rust-hdl and Verilator witnesses on a seeded random AXI4-Lite
    /// program and compare them cycle by cycle.
    Verify(card::VerifyArgs),
    /// Aggregation jobs on the card.
    Agg {
        #[command(subcommand)]
        cmd: agg::AggCmd,
    },
    /// Accelerator Virtual Memory: run contention scenarios under a policy,
    /// observe the pool, act on a consumer.
    Avm {
        #[command(subcommand)]
        cmd: avm::AvmCmd,
    },
    /// MemOps switch port: verify programs, run traces.
    Memops {
        #[command(subcommand)]
        cmd: memops::MemopsCmd,
    },
    /// Benchmarks, counted in cycles (not pass/fail).
    Bench {
        #[command(subcommand)]
        cmd: bench::BenchCmd,
    },
    /// Describe a PCI function (vfio:DDDD:BB:DD.F): BARs, IOMMU group,
    /// MSI-X vectors, the ID block at weft's register window (BAR2 +
    /// 0x100000 under the OpenNIC shell), and whether weft can drive it, or
    /// why not.
    Probe(pci::ProbeArgs),
    /// Bind a PCI function to vfio-pci through sysfs driver_override, after
    /// showing what will happen and asking (as root).
    Bind(pci::BindArgs),
    /// AMD Alveo bitstreams: build into the OpenNIC shell with Vivado,
    /// estimate resources with yosys, list built images, flash a card, write
    /// a FuseSoC core.
    Bitstream {
        #[command(subcommand)]
        cmd: bitstream::BitstreamCmd,
    },
}

// `--json` alone, for commands with no other arguments.
#[derive(Args)]
struct JsonArg {
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

/// Pretty JSON on stdout.
fn print_json(v: &impl serde::Serialize) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Status(a) => card::status(a),
        Cmd::Regs(a) => card::regs(a),
        Cmd::Verify(a) => card::verify(a),
        Cmd::Hdl { cmd } => hdl::run(cmd),
        Cmd::Agg { cmd } => agg::run(cmd),
        Cmd::Avm { cmd } => avm::run(cmd),
        Cmd::Memops { cmd } => memops::run(cmd),
        Cmd::Bench { cmd } => bench::run(cmd),
        Cmd::Probe(a) => pci::probe(a),
        Cmd::Bind(a) => pci::bind(a),
        Cmd::Bitstream { cmd } => bitstream::run(cmd),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
