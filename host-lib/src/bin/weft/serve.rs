//! `weft card serve`: the simulated card as two TAP netdevs, with its
//! registers on a control socket.

use crate::{open_card, print_json, DeviceArg};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use weft::serve::{serve, ServeOptions};
use weft::DeviceSpec;
use weft_driver::RegisterAccess;
use weft_regs::net;

#[derive(Subcommand)]
pub enum CardCmd {
    /// Run the simulated card free-running as two Linux netdevs: the wire
    /// (CMAC) side, which peers reach over a bridge, and the host side,
    /// which plays the `onic` netdev of the card's own host. Registers are
    /// served on --control for `--device unix:PATH` in other processes.
    /// Stops on SIGINT or SIGTERM and prints its counters. The card's clock
    /// is simulated: a cycle takes far longer than 4 ns of wall time, and
    /// the loop waits for frames while the card is idle (docs/transports.md).
    Serve(ServeArgs),
}

#[derive(Args)]
pub struct ServeArgs {
    /// The simulated card (sim, sim:verilator, sim:rust-hdl, sim:model).
    #[command(flatten)]
    device: DeviceArg,
    /// The wire port's netdev, `tap:NAME` (created if missing).
    #[arg(long, value_name = "tap:NAME")]
    wire: String,
    /// The host port's netdev, `tap:NAME` (created if missing).
    #[arg(long, value_name = "tap:NAME")]
    host: String,
    /// Serve the registers on this Unix socket, `unix:PATH`.
    #[arg(long, value_name = "unix:PATH")]
    control: Option<String>,
    /// Cycles the card advances per turn of the loop.
    #[arg(long, default_value_t = 64)]
    quantum: u64,
    /// Counters as JSON when it stops.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: CardCmd) -> Result<()> {
    match cmd {
        CardCmd::Serve(a) => card_serve(a),
    }
}

fn tap_name(flag: &str, s: &str) -> Result<String> {
    match s.strip_prefix("tap:") {
        Some(n) if !n.is_empty() => Ok(n.to_string()),
        _ => bail!("--{flag} {s:?}: expected tap:NAME"),
    }
}

fn card_serve(a: ServeArgs) -> Result<()> {
    if !matches!(a.device.device, DeviceSpec::Sim(_)) {
        bail!(
            "--device {}: card serve runs a simulated card (a real card is already on the network)",
            a.device.device
        );
    }
    let opts = ServeOptions {
        wire: tap_name("wire", &a.wire)?,
        host: tap_name("host", &a.host)?,
        quantum: a.quantum,
        ..ServeOptions::default()
    };
    let control = match &a.control {
        None => None,
        Some(s) => match s.strip_prefix("unix:") {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => bail!("--control {s:?}: expected unix:PATH"),
        },
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    let card = open_card(&a.device.device)?;
    let server = match &control {
        Some(p) => Some(
            weft::remote::serve(card.regs_arc(), p, stop.clone())
                .with_context(|| format!("control socket {}", p.display()))?,
        ),
        None => None,
    };
    let name = card.name();
    let st = serve(&card, &opts, &stop, |w, h| {
        eprintln!(
            "serving {name}: wire tap:{w}, host tap:{h}{} (SIGINT or SIGTERM stops)",
            control
                .as_ref()
                .map(|p| format!(", registers on unix:{}", p.display()))
                .unwrap_or_default()
        );
    });
    stop.store(true, Ordering::Relaxed);
    if let Some(s) = server {
        let _ = s.join();
    }
    if let Some(p) = &control {
        let _ = std::fs::remove_file(p);
    }
    let st = st?;
    let r = card.regs();
    let mut counters = serde_json::Map::new();
    for (i, n) in net::COUNTER_NAMES.iter().enumerate() {
        let lo = r.read_reg(&net::COUNTERS[2 * i])? as u64;
        let hi = r.read_reg(&net::COUNTERS[2 * i + 1])? as u64;
        counters.insert(n.to_string(), (hi << 32 | lo).into());
    }
    if a.json {
        return print_json(&serde_json::json!({ "serve": st, "net": counters }));
    }
    println!(
        "served {} cycles in {:.1} s of wall time ({:.0} cycles/s: one simulated cycle took {:.0} ns against 4 ns on a card)",
        st.cycles,
        st.wall_seconds,
        st.cycles_per_second(),
        if st.cycles > 0 { st.wall_seconds * 1e9 / st.cycles as f64 } else { 0.0 }
    );
    println!(
        "frames: wire in {} out {}, host in {} out {}, dropped at a full input {}, refused {}",
        st.wire_in, st.wire_out, st.host_in, st.host_out, st.dropped_full, st.refused
    );
    let line: Vec<String> = counters
        .iter()
        .filter(|(_, v)| v.as_u64() != Some(0))
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!("net counters: {}", line.join(", "));
    Ok(())
}
