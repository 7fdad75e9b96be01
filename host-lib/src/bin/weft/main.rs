//! The `weft` command line: one module per command group.
//!
//! * [`card`]: `weft status`, `weft regs`, `weft verify`;
//! * [`hdl`]: `weft hdl emit|lint|synth`;
//! * [`agg`]: `weft agg kv|gen|grad`;
//! * [`avm`]: `weft avm scenario|observe|act`;
//! * [`memops`]: `weft memops check|run`;
//! * [`bench`]: `weft bench kv|memops|grad`;
//! * [`pci`]: `weft probe`, `weft bind`;
//! * [`bitstream`]: `weft bitstream build|estimate|list|flash|fusesoc`.
//!
//! The work itself is in the `weft` library; these modules read the
//! arguments, show progress, and print. An error is one line on stderr
//! (`error: ...`, with its causes) and exit status 1.

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use weft::pcap::Tap;
use weft::{Card, DeviceSpec, OpenOptions};

mod agg;
mod avm;
mod bench;
mod bitstream;
mod card;
mod hdl;
mod memops;
mod pci;
mod roles;
mod serve;
mod timing;

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
    /// The card as a service: `weft card serve` runs the simulated card
    /// as two TAP netdevs with its registers on a control socket.
    Card {
        #[command(subcommand)]
        cmd: serve::CardCmd,
    },
    /// A key-value job's roles over UDP: senders on any host, the collector
    /// on the card's host.
    Kv {
        #[command(subcommand)]
        cmd: roles::KvCmd,
    },
    /// A gradient job's roles over UDP: workers on any host, the host
    /// fallback on the card's host.
    Grad {
        #[command(subcommand)]
        cmd: roles::GradCmd,
    },
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

/// `--device`, the same in every command.
#[derive(Args, Clone)]
struct DeviceArg {
    /// The card: `sim` is weft_top, the design that is flashed, simulated
    /// (on Verilator when it is installed, else on rust-hdl's far slower
    /// simulator); `sim:verilator`, `sim:rust-hdl` or `sim:model` (the
    /// top's reference model) choose; `vfio:DDDD:BB:DD.F` is a card bound
    /// to vfio-pci and `onic:DDDD:BB:DD.F` one whose onic netdev is bound
    /// (their registers); `unix:PATH` is a card `weft card serve` runs
    /// (its registers through the control socket). Jobs that need frame
    /// ports these do not have refuse, saying why; the UDP roles (weft kv
    /// send|collect) reach their frames through the network.
    #[arg(long, default_value = "sim", value_name = "DEVICE")]
    device: DeviceSpec,
}

/// The card of a job command: `--device` and `--pcap`.
#[derive(Args, Clone)]
struct JobCard {
    #[command(flatten)]
    device: DeviceArg,
    /// Write every frame of the card's two ports, both directions, to this
    /// pcapng file (one interface per port and direction, timestamps in
    /// device time), for Wireshark or tcpdump.
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
}

/// An open card, its frames recorded when `--pcap` asked.
struct Opened {
    card: Card,
    tap: Option<(Arc<Tap>, PathBuf)>,
}

impl Opened {
    /// Close the capture, saying on stderr what it holds.
    fn finish(&self) -> Result<()> {
        if let Some((tap, path)) = &self.tap {
            let n = tap.finish()?;
            eprintln!("wrote {n} frames to {}", path.display());
        }
        Ok(())
    }
}

/// Open `device` (a spinner shows Verilator's build stages).
fn open_card(device: &DeviceSpec) -> Result<Card> {
    open_card_for(device, false)
}

/// [`open_card`] for a job that is `short` (see `OpenOptions::short_run`).
fn open_card_for(device: &DeviceSpec, short: bool) -> Result<Card> {
    let pb = spinner();
    pb.set_message(format!("opening {device}"));
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    let card = Card::open_with(
        device.clone(),
        &OpenOptions {
            progress: Some(&progress),
            waves: None,
            short_run: short,
        },
    )
    .with_context(|| format!("opening {device}"));
    pb.finish_and_clear();
    card
}

/// Open the card of a job command; a `short` job takes an unoptimised
/// Verilated card rather than wait for an optimised build.
fn open_job_card(a: &JobCard, short: bool) -> Result<Opened> {
    let card = open_card_for(&a.device.device, short)?;
    match &a.pcap {
        None => Ok(Opened { card, tap: None }),
        Some(p) => {
            let (card, tap) = Tap::wrap(card, p, weft_sim::device::AXIS_HZ)
                .with_context(|| format!("recording to {}", p.display()))?;
            Ok(Opened {
                card,
                tap: Some((tap, p.clone())),
            })
        }
    }
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
    // A simulated card elaborates weft_top in rust-hdl, which recurses
    // deeply: every command runs on a thread with a large stack.
    let r = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || run(cli))
        .map_err(anyhow::Error::from)
        .and_then(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Status(a) => card::status(a),
        Cmd::Regs(a) => card::regs(a),
        Cmd::Verify(a) => card::verify(a),
        Cmd::Hdl { cmd } => hdl::run(cmd),
        Cmd::Card { cmd } => serve::run(cmd),
        Cmd::Kv { cmd } => roles::run(cmd),
        Cmd::Grad { cmd } => roles::run_grad(cmd),
        Cmd::Agg { cmd } => agg::run(cmd),
        Cmd::Avm { cmd } => avm::run(cmd),
        Cmd::Memops { cmd } => memops::run(cmd),
        Cmd::Bench { cmd } => bench::run(cmd),
        Cmd::Probe(a) => pci::probe(a),
        Cmd::Bind(a) => pci::bind(a),
        Cmd::Bitstream { cmd } => bitstream::run(cmd),
    }
}
