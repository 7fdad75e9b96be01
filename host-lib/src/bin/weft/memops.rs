//! `weft memops check|run`: verify a MemOps program, run a trace through a
//! card's MemOps port.

use crate::avm::print_snapshot;
use crate::{open_job_card, print_json, spinner, JobCard};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;

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
    /// Verify a program, write it into the card's MemOps port, give each
    /// of its four destinations (the AVM pool's consumers port0..port3)
    /// four pages, then send a trace (`src op addr len tag [data-hex]` per
    /// line) as request frames from the card's host; print completions per
    /// requester, telemetry and the pool's snapshot, and check every frame
    /// against the top's reference model.
    Run {
        /// The program.
        #[arg(long)]
        program: PathBuf,
        /// The trace.
        #[arg(long)]
        trace: PathBuf,
        #[command(flatten)]
        card: JobCard,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Send a trace's transactions to a card's MemOps port over UDP, one
    /// at a time (never resent: a write could apply twice), and print the
    /// completions `src tag status [data]`. With --device and --program,
    /// first program the card through its registers.
    Send(SendArgs),
}

/// `weft memops send`.
#[derive(clap::Args)]
pub struct SendArgs {
    /// The card: IP or IP:PORT (port 22344, MemOps', by default).
    #[arg(long, value_name = "IP[:PORT]")]
    card: String,
    /// The trace: `src op addr len tag [data-hex]` per line.
    #[arg(long)]
    trace: PathBuf,
    /// First program the card through its registers (--device) with this
    /// verified program and give each destination its pages.
    #[arg(long, requires = "device")]
    program: Option<PathBuf>,
    /// The card's registers for --program (onic:BDF, vfio:BDF, unix:PATH).
    #[arg(long, value_name = "DEVICE")]
    device: Option<weft::DeviceSpec>,
    /// The card's own MAC, with --program.
    #[arg(long, value_name = "MAC", default_value = "02:57:46:00:00:01")]
    card_mac: String,
    /// Bind here (default: any address, any port).
    #[arg(long, value_name = "IP:PORT", default_value = "0.0.0.0:0")]
    bind: String,
    /// Seconds to wait for each completion.
    #[arg(long, default_value_t = 10.0)]
    timeout: f64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

fn memops_send(a: SendArgs) -> Result<()> {
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
    let card: SocketAddr = match a.card.parse::<SocketAddrV4>() {
        Ok(s) => s.into(),
        Err(_) => match a.card.parse::<Ipv4Addr>() {
            Ok(ip) => SocketAddr::from((ip, weft_model::wire::MEMOPS_PORT)),
            Err(_) => bail!("--card {:?}: expected IP or IP:PORT", a.card),
        },
    };
    let bind: SocketAddr = a
        .bind
        .parse()
        .with_context(|| format!("--bind {:?}: expected IP:PORT", a.bind))?;
    let timeout = std::time::Duration::try_from_secs_f64(a.timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("--timeout {}: a positive number of seconds", a.timeout))?;
    let text = std::fs::read_to_string(&a.trace)
        .with_context(|| format!("reading {}", a.trace.display()))?;
    let reqs = weft::memops::parse_trace(&text).with_context(|| a.trace.display().to_string())?;
    if let (Some(path), Some(device)) = (&a.program, &a.device) {
        if let weft::DeviceSpec::Sim(_) = device {
            bail!("--device {device}: a card simulated inside this process is on no network; serve it with `weft card serve` and give --device unix:PATH");
        }
        let p = load_program(path)?;
        weft::memops::verify(&p)
            .map_err(|r| anyhow::anyhow!("{}: rejected: {}", path.display(), r.message))?;
        let std::net::IpAddr::V4(ip) = card.ip() else {
            bail!("--card: IPv4 only");
        };
        let mac = weft::udp::parse_mac(&a.card_mac)
            .with_context(|| format!("--card-mac {:?}: expected a MAC", a.card_mac))?;
        let c = crate::open_card(device)?;
        weft::memops::run::prepare(&c, &p, &weft_model::wire::Endpoint { mac, ip, port: 0 })?;
    }
    let out = weft::memops::udp::send(card, bind, &reqs, timeout)?;
    if a.json {
        let v: Vec<_> = out
            .iter()
            .map(|(src, c)| json!({"src": src, "tag": c.tag, "status": c.status, "data": c.data}))
            .collect();
        return print_json(&v);
    }
    for (src, c) in &out {
        match &c.data {
            Some(d) => println!("{src} {} {} {d}", c.tag, c.status),
            None => println!("{src} {} {}", c.tag, c.status),
        }
    }
    eprintln!(
        "{} requests to {card}: {} completions",
        reqs.len(),
        out.len()
    );
    Ok(())
}

pub fn run(cmd: MemopsCmd) -> Result<()> {
    match cmd {
        MemopsCmd::Check { program, json } => memops_check(&program, json),
        MemopsCmd::Run {
            program,
            trace,
            card,
            json,
        } => memops_run(&program, &trace, &card, json),
        MemopsCmd::Send(a) => memops_send(a),
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
    card: &JobCard,
    json: bool,
) -> Result<()> {
    // Everything that can be refused is refused before the card is opened.
    let p = load_program(program)?;
    weft::memops::verify(&p)
        .map_err(|r| anyhow::anyhow!("{}: rejected: {}", program.display(), r.message))?;
    let text =
        std::fs::read_to_string(trace).with_context(|| format!("reading {}", trace.display()))?;
    let reqs = weft::memops::parse_trace(&text).with_context(|| trace.display().to_string())?;
    let opened = open_job_card(card, false)?;
    let pb = spinner();
    pb.set_message(format!("{} requests on {}", reqs.len(), opened.card.name()));
    let rep = weft::memops::run(&opened.card, &p, &reqs);
    pb.finish_and_clear();
    let fin = opened.finish();
    let rep = rep?;
    fin?;
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
        println!("# pool");
        print_snapshot(&rep.pool);
        eprintln!(
            "{} requests on {}: {} cycles; model: {}",
            reqs.len(),
            rep.device,
            rep.cycles,
            match &rep.model {
                Ok(n) => format!("agrees ({n} frames)"),
                Err(_) => "DISAGREES".into(),
            }
        );
    }
    if let Err(d) = &rep.model {
        bail!("the card disagrees with the reference model: {d}");
    }
    Ok(())
}
