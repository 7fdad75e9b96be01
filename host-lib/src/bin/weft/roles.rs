//! `weft kv send` and `weft kv collect`: a key-value job's roles over UDP,
//! in separate processes on any hosts, against a real card or a served
//! simulated one (`weft card serve`).

use crate::agg::kv::{check_sums, write_sums};
use crate::{open_card, print_json, DeviceArg};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::PathBuf;
use std::time::Duration;
use weft::kv::{self, collect::parse_v4, CollectOptions, Sender, SenderOptions};
use weft::udp::parse_mac;
use weft_model::wire;

/// The addresses a role on the card's host gives the card.
#[derive(Args)]
pub struct HostSide {
    /// The MAC the card addresses this role's frames to (default: the MAC
    /// of the interface that has the --listen address).
    #[arg(long, value_name = "MAC")]
    host_mac: Option<String>,
    /// The card's own MAC (its net.MAC registers).
    #[arg(long, value_name = "MAC", default_value = "02:57:46:00:00:01")]
    card_mac: String,
    /// The card's own IPv4 address (net.IP): peers send to it.
    #[arg(long, value_name = "IP", default_value = "10.0.0.2")]
    card_ip: Ipv4Addr,
}

impl HostSide {
    /// The host MAC (if given) and the card's MAC, checked.
    fn macs(&self) -> Result<(Option<[u8; 6]>, [u8; 6])> {
        let host = self
            .host_mac
            .as_deref()
            .map(|s| mac_arg("host-mac", s))
            .transpose()?;
        Ok((host, mac_arg("card-mac", &self.card_mac)?))
    }
}

#[derive(Subcommand)]
pub enum KvCmd {
    /// One sender of a key-value job: its tuples to the card over UDP,
    /// windowed, retransmitted until the card acknowledges every packet,
    /// then DONE to the job's collector. Needs no card access of its own.
    Send(SendArgs),
    /// The collector of a key-value job, on the card's host: configures the
    /// card through its registers, merges the spills and the flush it
    /// receives on its UDP socket, flushes once every sender said DONE, and
    /// writes the exact sums.
    Collect(CollectArgs),
}

#[derive(Args)]
pub struct SendArgs {
    /// The card: IP or IP:PORT (port 22342, the key-value engine's, by
    /// default).
    #[arg(long, value_name = "IP[:PORT]")]
    card: String,
    /// The job's collector, told when this sender is done.
    #[arg(long, value_name = "IP:PORT")]
    collector: String,
    /// Job id (the collector's --job).
    #[arg(long, default_value_t = 1)]
    job: u16,
    /// This sender's id, 0.. the job's senders: its lines of the input.
    #[arg(long)]
    id: u16,
    /// Tuple file (`worker key value` per line): the lines of worker --id
    /// are sent.
    #[arg(
        long,
        required_unless_present = "generate",
        conflicts_with = "generate"
    )]
    input: Option<PathBuf>,
    /// Generate the job's stream instead (zipf:S:KEYS:TUPLES, with
    /// --workers and --seed, as `weft agg kv --generate`) and send worker
    /// --id's share.
    #[arg(long, value_name = "SPEC")]
    generate: Option<String>,
    /// Workers of the generated stream.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Seed of the generated stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Bind here (default: any address, any port).
    #[arg(long, value_name = "IP:PORT")]
    bind: Option<String>,
    /// The card's lanes (kv.GEOMETRY): tuples go to their keys' home lanes.
    #[arg(long, default_value_t = 8)]
    lanes: usize,
    /// Give up after this many seconds without any ack from the card, or
    /// without the collector's answer to DONE.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Statistics as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CollectArgs {
    /// The card's registers: onic:BDF or vfio:BDF on hardware, unix:PATH
    /// for a served simulated card.
    #[command(flatten)]
    device: DeviceArg,
    /// Job id.
    #[arg(long, default_value_t = 1)]
    job: u16,
    /// Senders in the job (ids 0..N).
    #[arg(long)]
    senders: usize,
    /// Receive the card's record frames and the senders' DONE here: an
    /// address of the card's host netdev.
    #[arg(long, value_name = "IP:PORT", default_value = "10.0.0.1:7000")]
    listen: String,
    #[command(flatten)]
    addrs: HostSide,
    /// Turn the card's hot-key-agnostic replacement off.
    #[arg(long)]
    no_replace: bool,
    /// Give up after this many seconds with nothing arriving.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Write the `key sum` lines here (else to stdout without --json).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Compare the sums with the exact sums of this tuple file (all
    /// workers' lines); exit non-zero on any difference.
    #[arg(long, value_name = "FILE")]
    check: Option<PathBuf>,
    /// One JSON object {"sums": ..., "stats": ..., "senders": ...} on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run(cmd: KvCmd) -> Result<()> {
    match cmd {
        KvCmd::Send(a) => send(a),
        KvCmd::Collect(a) => collect(a),
    }
}

/// A role on the card's host takes the card's frames from the network: an
/// in-process simulated card has none.
fn networked(d: &DeviceArg) -> Result<()> {
    if let weft::DeviceSpec::Sim(_) = d.device {
        bail!(
            "--device {}: a card simulated inside this process is on no network; serve it with `weft card serve --device {} --wire tap:… --host tap:… --control unix:PATH` and give --device unix:PATH",
            d.device,
            d.device
        );
    }
    Ok(())
}

/// `--listen IP:PORT`.
fn listen_arg(s: &str) -> Result<SocketAddrV4> {
    parse_v4(s).with_context(|| format!("--listen {s:?}: expected IP:PORT"))
}

/// A MAC flag's value.
fn mac_arg(flag: &str, s: &str) -> Result<[u8; 6]> {
    parse_mac(s).with_context(|| format!("--{flag} {s:?}: expected a MAC like 02:57:46:00:00:01"))
}

fn seconds(flag: &str, s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("--{flag} {s}: a positive number of seconds"))
}

fn send(a: SendArgs) -> Result<()> {
    let card = card_addr(&a.card, wire::KV_PORT)?;
    let collector: SocketAddr = parse_v4(&a.collector)
        .with_context(|| format!("--collector {:?}: expected IP:PORT", a.collector))?
        .into();
    let timeout = seconds("timeout", a.timeout)?;
    let tuples: Vec<(u32, i32)> = match (&a.generate, &a.input) {
        (Some(spec), _) => {
            if usize::from(a.id) >= a.workers {
                bail!(
                    "--id {}: the generated stream has workers 0..{}",
                    a.id,
                    a.workers
                );
            }
            let z = kv::gen::ZipfSpec::parse(spec, a.workers, a.seed)?;
            kv::gen::zipf(&z)?
                .into_iter()
                .filter(|t| t.worker == usize::from(a.id))
                .map(|t| (t.key, t.value))
                .collect()
        }
        (None, Some(path)) => kv::input::read(path, usize::MAX)
            .with_context(|| format!("reading {}", path.display()))?
            .into_iter()
            .filter(|t| t.worker == usize::from(a.id))
            .map(|t| (t.key, t.value))
            .collect(),
        (None, None) => bail!("one of --input FILE or --generate SPEC is needed"),
    };
    let mut o = SenderOptions::new(card, collector, a.job, a.id);
    o.lanes = a.lanes;
    o.first_ack_timeout = timeout;
    if let Some(b) = &a.bind {
        o.bind = parse_v4(b)
            .with_context(|| format!("--bind {b:?}: expected IP:PORT"))?
            .into();
    }
    let mut s = Sender::open(o)?;
    for (k, v) in tuples {
        s.push(k, v)?;
    }
    let st = s.finish(timeout)?;
    if a.json {
        return print_json(&st);
    }
    eprintln!(
        "sender {}: {} tuples in {} packets ({} transmissions: {} timeouts, {} fast retransmissions; {} acks, {} for duplicates), {:.2} s, {:.0} tuples/s, srtt {} µs",
        a.id,
        st.tuples,
        st.packets,
        st.transmissions,
        st.timeouts,
        st.fast_retransmissions,
        st.acks,
        st.duplicate_acks,
        st.seconds,
        st.tuples_per_second,
        st.srtt_us
    );
    Ok(())
}

fn collect(a: CollectArgs) -> Result<()> {
    networked(&a.device)?;
    let listen = listen_arg(&a.listen)?;
    let (host_mac, card_mac) = a.addrs.macs()?;
    let want = match &a.check {
        Some(p) => Some(kv::input::exact_sums(
            &kv::input::read(p, usize::MAX).with_context(|| format!("reading {}", p.display()))?,
        )),
        None => None,
    };
    let opts = CollectOptions {
        job: a.job,
        senders: a.senders,
        listen,
        host_mac,
        card_mac,
        card_ip: a.addrs.card_ip,
        replace: !a.no_replace,
        idle_timeout: seconds("timeout", a.timeout)?,
    };
    let card = open_card(&a.device.device)?;
    let t0 = std::time::Instant::now();
    let (out, senders) = kv::collect(&card, &opts, || {
        eprintln!(
            "collector ready: job {} on {}, {} senders, listening on {listen}",
            a.job,
            card.name(),
            a.senders
        )
    })?;
    let secs = t0.elapsed().as_secs_f64();
    let sums = kv::input::sorted(&out.sums);
    if let Some(path) = &a.output {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        );
        write_sums(&mut f, &sums).with_context(|| format!("writing {}", path.display()))?;
    }
    if a.json {
        print_json(&json!({
            "sums": sums,
            "stats": out.stats,
            "seconds": secs,
            "senders": senders.values().map(|d| json!({"id": d.sender, "packets": d.packets, "tuples": d.tuples})).collect::<Vec<_>>(),
        }))?;
    } else {
        if a.output.is_none() {
            let o = std::io::stdout();
            write_sums(&mut std::io::BufWriter::new(o.lock()), &sums)
                .context("writing the sums to stdout")?;
        }
        let st = &out.stats;
        eprintln!(
            "collected {} tuples of {} senders in {:.2} s ({:.0} tuples/s) and {} card cycles ({:.3} tuples/cycle): {} keys, {} records in {} frames ({} spilled, {} flushed); card: {} packets accepted, {} duplicates dropped, {} malformed, {} ahead of the window",
            st.tuples,
            st.workers,
            secs,
            st.tuples as f64 / secs.max(1e-9),
            st.cycles,
            st.tuples_per_cycle,
            st.keys,
            st.host_records,
            st.record_frames,
            st.spill_records,
            st.flush_records,
            st.accepted_packets,
            st.duplicates_dropped,
            st.malformed,
            st.window_drops
        );
    }
    if let Some(want) = want {
        check_sums(&want, &out.sums)?;
        if !a.json {
            eprintln!(
                "check: all {} keys equal the exact sums of the input",
                want.len()
            );
        }
    }
    Ok(())
}

#[derive(Subcommand)]
pub enum GradCmd {
    /// One worker of a gradient job: JOIN the job's fallback, stream a
    /// seeded tensor per iteration to the card's gradient port, take each
    /// chunk's RESULT (from the card, or from the fallback) and check it
    /// against the exact fixed-point sum; retransmit on timeout; DONE.
    Worker(WorkerArgs),
    /// The host fallback of a gradient job, on the card's host: configures
    /// the card, writes the joined workers into its worker table, completes
    /// what the card evicts or cannot place and sends those RESULTs to the
    /// workers; flushes and prints the card's counters at the end.
    Fallback(FallbackArgs),
}

#[derive(Args)]
pub struct WorkerArgs {
    /// The card: IP or IP:PORT (port 22343, the gradient engine's, by
    /// default).
    #[arg(long, value_name = "IP[:PORT]")]
    card: String,
    /// The job's fallback on the card's host.
    #[arg(long, value_name = "IP:PORT")]
    fallback: String,
    /// Job id (0..16).
    #[arg(long, default_value_t = 0)]
    job: u16,
    /// This worker's id (0..workers).
    #[arg(long)]
    worker: u8,
    /// Workers of the job.
    #[arg(long)]
    workers: u8,
    /// Values of each iteration's tensor.
    #[arg(long, default_value_t = 4096)]
    values: usize,
    /// Iterations (one tensor each).
    #[arg(long, default_value_t = 4)]
    iterations: u32,
    /// Seed of every worker's values (the same for the whole job).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Give up after this many seconds without progress.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Traffic class of this worker's packets, 0..=7 (DSCP CS0..CS7): the
    /// strict-priority queue a switch in front of the card serves them
    /// from (srpt's classes; the job nearest its end highest).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=7))]
    class: u8,
    /// Statistics as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct FallbackArgs {
    /// The card's registers (onic:BDF, vfio:BDF, unix:PATH).
    #[command(flatten)]
    device: DeviceArg,
    /// Job id (0..16).
    #[arg(long, default_value_t = 0)]
    job: u16,
    /// Workers of the job.
    #[arg(long)]
    workers: u8,
    /// The job's priority on the card (0..=15).
    #[arg(long, default_value_t = 0)]
    priority: u8,
    /// Listen here: an address of the card's host netdev.
    #[arg(long, value_name = "IP:PORT", default_value = "10.0.0.1:7001")]
    listen: String,
    #[command(flatten)]
    addrs: HostSide,
    /// Give up after this many seconds with nothing arriving.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Statistics as JSON on stdout.
    #[arg(long)]
    json: bool,
}

pub fn run_grad(cmd: GradCmd) -> Result<()> {
    match cmd {
        GradCmd::Worker(a) => grad_worker(a),
        GradCmd::Fallback(a) => grad_fallback(a),
    }
}

/// `IP` or `IP:PORT`, with `port` when none is given.
fn card_addr(s: &str, port: u16) -> Result<SocketAddr> {
    match s.parse::<SocketAddrV4>() {
        Ok(a) => Ok(a.into()),
        Err(_) => match s.parse::<Ipv4Addr>() {
            Ok(ip) => Ok(SocketAddr::from((ip, port))),
            Err(_) => bail!("--card {s:?}: expected IP or IP:PORT"),
        },
    }
}

fn grad_worker(a: WorkerArgs) -> Result<()> {
    use weft::grad::udp::{worker, WorkerOptions};
    let card = card_addr(&a.card, wire::GRAD_PORT)?;
    let fallback: SocketAddr = parse_v4(&a.fallback)
        .with_context(|| format!("--fallback {:?}: expected IP:PORT", a.fallback))?
        .into();
    let mut o = WorkerOptions::new(card, fallback, a.job, a.worker, a.workers);
    o.values = a.values;
    o.iterations = a.iterations;
    o.seed = a.seed;
    o.timeout = seconds("timeout", a.timeout)?;
    o.class = a.class;
    let st = worker(&o)?;
    if a.json {
        return print_json(&st);
    }
    eprintln!(
        "worker {}: {} chunks exact ({} from the card, {} from the host fallback or a peer) in {:.2} s; {} DATA sent, {} retransmitted, {} NACKs, {} WANTs sent, {} answered, {} late RESULTs, srtt {} µs",
        a.worker,
        st.chunks,
        st.from_card,
        st.from_host,
        st.seconds,
        st.transmissions,
        st.retransmissions,
        st.nacks,
        st.wants,
        st.answered,
        st.late_results,
        st.srtt_us
    );
    Ok(())
}

fn grad_fallback(a: FallbackArgs) -> Result<()> {
    use weft::grad::udp::{fallback, FallbackOptions};
    networked(&a.device)?;
    let listen = listen_arg(&a.listen)?;
    let (host_mac, card_mac) = a.addrs.macs()?;
    let opts = FallbackOptions {
        job: a.job,
        workers: a.workers,
        listen,
        host_mac,
        card_mac,
        card_ip: a.addrs.card_ip,
        priority: a.priority,
        idle_timeout: seconds("timeout", a.timeout)?,
    };
    let card = open_card(&a.device.device)?;
    let st = fallback(&card, &opts, || {
        eprintln!(
            "fallback ready: job {} on {}, {} workers, listening on {listen}",
            a.job,
            card.name(),
            a.workers
        )
    })?;
    if a.json {
        return print_json(&st);
    }
    let c = &st.card;
    eprintln!(
        "fallback: job {} done in {:.2} s: {} chunks completed on the host from {} partials ({} conflicts); {} WANTs relayed, {} RESULTs forwarded; card: {} packets, {} chunks completed, {} fallbacks, {} duplicates, {} malformed, {} flushed",
        a.job,
        st.seconds,
        st.completed_on_host,
        st.partials,
        st.conflicts,
        st.wants,
        st.relayed,
        c.packets,
        c.completed,
        c.fallbacks,
        c.duplicates,
        c.malformed,
        c.flushed
    );
    Ok(())
}
