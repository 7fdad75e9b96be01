//! The `weft` command line.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use weft::kv;
use weft::status::Status;
use weft::{DeviceSpec, Nic, OpenOptions};
use weft_regs::MAP;

#[path = "../cli/avm.rs"]
mod avm_cli;
#[path = "../cli/grad.rs"]
mod grad_cli;

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
    /// Aggregation jobs on the card.
    Agg {
        #[command(subcommand)]
        cmd: AggCmd,
    },
    /// Accelerator Virtual Memory: run contention scenarios under a policy,
    /// observe the pool, act on a consumer.
    Avm {
        #[command(subcommand)]
        cmd: avm_cli::AvmCmd,
    },
    /// MemOps switch port: verify programs, run traces.
    Memops {
        #[command(subcommand)]
        cmd: MemopsCmd,
    },
    /// Benchmarks, counted in cycles (not pass/fail).
    Bench {
        #[command(subcommand)]
        cmd: BenchCmd,
    },
    /// Describe a PCI function (vfio:DDDD:BB:DD.F): BARs, IOMMU group,
    /// MSI-X vectors, the ID block at weft's register window (BAR2 +
    /// 0x100000 under the OpenNIC shell), and whether weft can drive it, or
    /// why not.
    Probe(ProbeArgs),
    /// Bind a PCI function to vfio-pci through sysfs driver_override, after
    /// showing what will happen and asking (as root).
    Bind(BindArgs),
    /// AMD Alveo bitstreams: build into the OpenNIC shell with Vivado,
    /// estimate resources with yosys, list built images, flash a card, write
    /// a FuseSoC core.
    Bitstream {
        #[command(subcommand)]
        cmd: BitstreamCmd,
    },
}

#[derive(Subcommand)]
enum BitstreamCmd {
    /// Put the card's Verilog into the OpenNIC shell's 250 MHz box (a user
    /// plugin), write the Vivado batch flow (project, synthesis,
    /// implementation, timing check, bitstream, flash image at the
    /// user-image offset) and run it when vivado is on PATH. Refused until
    /// the OpenNIC top `weft_top` exists (issue 8); --dry-run writes the
    /// files and prints the command.
    Build(BitstreamBuildArgs),
    /// Resource estimate with yosys synth_xilinx -family xcup: LUT, FF,
    /// BRAM, URAM and DSP as counts and as a share of the board's part, for
    /// the top and per engine (yosys figures, not Vivado's).
    Estimate {
        /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
        #[arg(long)]
        board: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The manifest of built images (bitstreams/manifest.json).
    List(JsonArg),
    /// Load an image over JTAG or write it to the configuration flash at
    /// the user-image offset (the golden image is never written), through
    /// Vivado's hardware manager, after checking the part and the IDCODE and
    /// asking.
    Flash(BitstreamFlashArgs),
    /// Write a FuseSoC CAPI2 core (weft.core) with the emitted Verilog and
    /// the Verilator lint waivers to DIR.
    Fusesoc {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
struct BitstreamBuildArgs {
    /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
    #[arg(long)]
    board: String,
    /// An OpenNIC shell checkout (github.com/Xilinx/open-nic-shell).
    #[arg(long)]
    shell_dir: PathBuf,
    /// Write the plugin and the flow, print the command, do not run Vivado.
    #[arg(long)]
    dry_run: bool,
    /// Output directory (default bitstreams/build/BOARD).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Parallel jobs for Vivado's runs.
    #[arg(long, default_value_t = 8)]
    jobs: u32,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("into").required(true).args(["jtag", "flash"])))]
struct BitstreamFlashArgs {
    /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
    #[arg(long)]
    board: String,
    /// The image: a .bit (JTAG or flash) or a .mcs (flash).
    #[arg(long)]
    image: PathBuf,
    /// Load the bitstream into the FPGA over JTAG (lost at power-off).
    #[arg(long)]
    jtag: bool,
    /// Write the configuration flash at the user-image offset.
    #[arg(long)]
    flash: bool,
    /// Do not ask before writing.
    #[arg(long)]
    yes: bool,
    /// Go on despite a part, board or IDCODE mismatch (never past the
    /// golden-image checks).
    #[arg(long)]
    force: bool,
    /// The hw_server to use.
    #[arg(long, default_value = "localhost:3121")]
    hw_server: String,
}

#[derive(Args)]
struct ProbeArgs {
    /// The function: vfio:DDDD:BB:DD.F (or the bare address).
    spec: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct BindArgs {
    /// The function's PCI address, DDDD:BB:DD.F.
    bdf: String,
    /// Do it without asking.
    #[arg(long)]
    yes: bool,
}

#[derive(Args)]
struct BenchQueueArgs {
    /// Descriptors per measurement on the in-memory double and the ceiling.
    #[arg(long, default_value_t = 400_000)]
    descriptors: u64,
    /// Descriptors per measurement on the simulated card.
    #[arg(long, default_value_t = 100_000)]
    sim_descriptors: u64,
    /// Message bytes.
    #[arg(long, default_value_t = 64)]
    message: usize,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum MemopsCmd {
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

#[derive(Subcommand)]
enum BenchCmd {
    /// The key-value engine: line rate at 512 bits (uniform, Zipf and
    /// one-key streams), NIC residency with and without replacement (Zipf
    /// 0.99 and 1.2, table 1% and 10% of the distinct keys), and simulation
    /// speed of the card on both simulators.
    Kv(BenchKvArgs),
    /// Host queue throughput on one core: descriptors per second for batch
    /// sizes 1, 8, 32 and 64 on the in-memory card double and on the
    /// simulated card, beside the ceiling of descriptor and doorbell writes
    /// alone.
    Queue(BenchQueueArgs),
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
    /// Gradient aggregation: the shipped multi-job workload (scarce slots,
    /// jobs of different communication intensity) under fifo and dsa in one
    /// run; average JCT of each and their ratio, values per cycle, chunks on
    /// the card and by the host, preemptions.
    Grad(grad_cli::BenchGradArgs),
}

#[derive(Args)]
struct BenchKvArgs {
    /// Full packets (182 tuples) per line-rate stream.
    #[arg(long, default_value_t = 200)]
    packets: usize,
    /// Tuples per residency run.
    #[arg(long, default_value_t = 1_000_000)]
    tuples: u64,
    /// Run the residency jobs on the reference model card (fast) instead of the RTL.
    #[arg(long)]
    model_card: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Subcommand)]
enum AggCmd {
    /// Key-value aggregation (after ASK): N workers send their tuples over
    /// a seeded lossy network to the card, which sums them per key; the host
    /// daemon retransmits, merges spills and flushes, and prints `key sum`
    /// lines sorted by key (stats go to stderr), or JSON with --json.
    Kv(KvArgs),
    /// Write a seeded Zipf tuple stream in the `agg kv --input` format.
    Gen(GenArgs),
    /// Gradient aggregation (after SwitchML, ATP and DSA): the jobs of
    /// JOBS.toml share the card's aggregator slots in device time under a
    /// priority policy; per job completion time, chunks on the card and by
    /// the host fallback, preemptions; fails unless every summed tensor
    /// equals the exact reference.
    Grad(grad_cli::AggGradArgs),
}

#[derive(Args)]
struct KvArgs {
    /// Tuple file: `worker key value` per line, decimal; blank lines and
    /// `#` comments allowed.
    #[arg(
        long,
        required_unless_present = "generate",
        conflicts_with = "generate"
    )]
    input: Option<PathBuf>,
    /// Generate the input instead: zipf:S:KEYS:TUPLES (Zipf exponent S over
    /// KEYS keys; uses --workers and --seed), e.g. zipf:0.99:100000:1000000.
    #[arg(long, value_name = "SPEC")]
    generate: Option<String>,
    /// Worker senders (at most 16). Default: the highest worker id in the
    /// input plus one; 4 with --generate.
    #[arg(long)]
    workers: Option<usize>,
    /// The card: sim, sim:verilator (the RTL card, traffic on the host
    /// queues) or sim:model (the reference model); vfio:DDDD:BB:DD.F is
    /// accepted and refused with the reason.
    #[arg(long, default_value = "sim")]
    device: DeviceSpec,
    /// Slots on the card: 8 lanes x a power of two.
    #[arg(long, default_value_t = 4096)]
    slots: usize,
    /// Probability that the network drops a packet.
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Probability that the network delivers a packet twice.
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    /// Probability that the network holds a packet back (reordering).
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Seed of the network (and of --generate).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Also write the `key sum` lines to this file (instead of stdout
    /// without --json).
    #[arg(long)]
    output: Option<PathBuf>,
    /// Print one JSON object {"sums": [[key, sum], ...], "stats": {...}} on
    /// stdout.
    #[arg(long)]
    json: bool,
    /// Compare the result with the exact sums computed directly from the
    /// input; exit non-zero on any difference.
    #[arg(long)]
    check: bool,
    /// Turn the card's hot-key-agnostic replacement off.
    #[arg(long)]
    no_replace: bool,
}

#[derive(Args)]
struct GenArgs {
    /// Zipf exponent (0 is uniform).
    #[arg(long)]
    zipf: f64,
    /// Distinct keys.
    #[arg(long)]
    keys: u32,
    /// Tuples.
    #[arg(long)]
    tuples: u64,
    /// Workers the tuples are spread over.
    #[arg(long, default_value_t = 4)]
    workers: usize,
    /// Seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write here instead of stdout.
    #[arg(long)]
    output: Option<PathBuf>,
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
    /// Resource estimate of a block with yosys `synth_xilinx -family xcup`
    /// (relative figures: yosys maps UltraScale+ carries to CARRY4 and is
    /// not Vivado).
    Synth {
        /// Block: csr, kv_agg, memops or card.
        #[arg(long)]
        block: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
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

/// Open a card (a spinner shows Verilator build stages) and read its ID
/// block and register chain through the driver.
fn open_status(device: &DeviceSpec) -> Result<Status> {
    let pb = spinner();
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    let nic = Nic::open_with(
        device.clone(),
        &OpenOptions {
            progress: Some(&progress),
            waves: None,
        },
    )
    .with_context(|| format!("opening {device}"))?;
    let st = Status::new(&device.to_string(), &nic.identify()?);
    pb.finish_and_clear();
    Ok(st)
}

fn status(a: StatusArgs) -> Result<()> {
    let st = open_status(&a.device)?;
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
        "weft register map {}.{} ({} bytes, {} address bits)",
        MAP.version >> 16,
        MAP.version & 0xffff,
        MAP.span(),
        MAP.addr_bits
    );
    println!(
        "on an OpenNIC card: {}; no wstrb: every write is a whole 32-bit word",
        weft_regs::render::opennic_location()
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
    let st = open_status(&a.device)?;
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

/// The card's senders: the most workers a job can have.
const MAX_WORKERS: usize = weft_model::kv_agg::SENDERS;

/// The input of `agg kv`: read (or generated) and checked before anything
/// runs.
fn kv_input(a: &KvArgs) -> Result<(Vec<kv::input::Tuple>, usize)> {
    if let Some(w) = a.workers {
        if !(1..=MAX_WORKERS).contains(&w) {
            bail!("--workers {w}: must be 1..={MAX_WORKERS} (the card's sequence windows)");
        }
    }
    if let Some(spec) = &a.generate {
        let workers = a.workers.unwrap_or(4);
        let z = kv::gen::ZipfSpec::parse(spec, workers, a.seed)?;
        return Ok((kv::gen::zipf(&z)?, workers));
    }
    let Some(path) = &a.input else {
        bail!("one of --input FILE or --generate SPEC is needed");
    };
    let tuples = kv::input::read(path, a.workers.unwrap_or(MAX_WORKERS))
        .with_context(|| format!("reading {}", path.display()))?;
    let workers = a
        .workers
        .unwrap_or_else(|| tuples.iter().map(|t| t.worker + 1).max().unwrap_or(1));
    Ok((tuples, workers))
}

fn agg_kv(a: KvArgs) -> Result<()> {
    // Everything that can be refused is refused before the card is opened.
    let (tuples, workers) = kv_input(&a)?;
    let cfg = kv::config_for_slots(a.slots)?;
    let opts = kv::JobOptions {
        workers,
        replace: !a.no_replace,
        net: weft_sim::net::NetConfig {
            loss: a.loss,
            dup: a.dup,
            reorder: a.reorder,
            ..weft_sim::net::NetConfig::IDEAL
        },
        seed: a.seed,
        ..kv::JobOptions::default()
    };
    opts.validate()?;
    let mut card = kv::open_kv_card(&a.device, cfg)?;
    if a.check {
        // Tee the job's traffic into the reference model: every record,
        // ack and counter of the card must be the model's.
        card.card = Box::new(weft_sim::kv_card::CheckedCard::new(card.card));
    }
    let device = card.device.clone();

    let pb = spinner();
    pb.set_message(format!("aggregating {} tuples on {device}", tuples.len()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .context("starting the async runtime")?;
    let done = rt.block_on(async {
        let job = kv::KvJob::open(card, opts).await?;
        // Batches in input order, split by worker: each worker's tuples
        // keep their order.
        for chunk in tuples.chunks(4096) {
            let mut per: Vec<Vec<(u32, i32)>> = vec![vec![]; workers];
            for t in chunk {
                per[t.worker].push((t.key, t.value));
            }
            for (w, ts) in per.into_iter().enumerate() {
                if !ts.is_empty() {
                    job.push(w, ts).await?;
                }
            }
        }
        job.finish().await
    });
    pb.finish_and_clear();
    let mut done = done?;
    let verdict = done.card.card.verdict();
    let sums = kv::input::sorted(&done.sums);

    if let Some(path) = &a.output {
        let mut f = std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        );
        write_sums(&mut f, &sums).with_context(|| format!("writing {}", path.display()))?;
    }
    let mut stats = serde_json::to_value(&done.stats)?;
    stats["device"] = json!(device);
    if let Some(v) = &verdict {
        stats["model_check"] = match v {
            Ok(n) => json!({ "agree": true, "compared": n }),
            Err(e) => json!({ "agree": false, "first_difference": e }),
        };
    }
    if a.json {
        print_json(&json!({ "sums": sums, "stats": stats }))?;
    } else {
        if a.output.is_none() {
            let out = std::io::stdout();
            write_sums(&mut std::io::BufWriter::new(out.lock()), &sums)
                .context("writing the sums to stdout")?;
        }
        eprint!("{}", render_kv_stats(&done.stats, &device));
    }
    if a.check {
        let want = kv::input::exact_sums(&tuples);
        let mut bad: Vec<_> = want
            .iter()
            .filter(|(k, s)| done.sums.get(k) != Some(s))
            .map(|(k, s)| (*k, *s, done.sums.get(k).copied()))
            .collect();
        let extra = done.sums.keys().filter(|k| !want.contains_key(k)).count();
        if !bad.is_empty() || extra > 0 {
            bad.sort_unstable();
            let shown: Vec<String> = bad
                .iter()
                .take(3)
                .map(|(k, s, got)| match got {
                    Some(g) => format!("key {k}: card {g}, exact {s}"),
                    None => format!("key {k}: missing, exact {s}"),
                })
                .collect();
            bail!(
                "check failed: {} of {} keys differ and {extra} unexpected key(s) ({})",
                bad.len(),
                want.len(),
                shown.join("; ")
            );
        }
        match verdict {
            Some(Err(e)) => bail!("check failed: the card disagrees with the reference model: {e}"),
            Some(Ok(n)) if !a.json => eprintln!(
                "check: all {} keys equal the exact sums of the input; the card's {n} records and acks and its counters equal the reference model's",
                want.len()
            ),
            _ if !a.json => eprintln!(
                "check: all {} keys equal the exact sums of the input",
                want.len()
            ),
            _ => {}
        }
    }
    Ok(())
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
    let reqs = weft::memops::parse_trace(&text)
        .map_err(|e| anyhow::anyhow!("{}: {e}", trace.display()))?;
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

fn synth(block: &str, json: bool) -> Result<()> {
    let all = weft_hdl::emit::all(&weft_hdl::this_build());
    let Some(e) = all.iter().find(|e| e.name == block) else {
        let names: Vec<_> = all.iter().map(|e| e.name).collect();
        bail!("no block {block:?} (blocks: {})", names.join(", "));
    };
    let module = weft_hdl::emit::module_name(e.name);
    let pb = spinner();
    pb.set_message(format!("yosys synth_xilinx -family xcup on {module}"));
    let r = weft_sim::yosys::synth_xilinx(
        &e.verilog,
        &module,
        &weft_sim::yosys::SynthOptions::default(),
    );
    pb.finish_and_clear();
    let r = r.with_context(|| format!("synthesizing {module}"))?;
    if json {
        return print_json(&json!({
            "module": module, "luts": r.luts, "lutram_luts": r.lutram_luts(), "ffs": r.ffs,
            "bram36": r.bram36, "uram": r.uram, "dsp": r.dsp, "carry": r.carry, "cells": r.cells,
        }));
    }
    println!(
        "{module}: {} LUT (+{} as LUTRAM), {} FF, {} BRAM36, {} URAM, {} DSP, {} CARRY ({} cells; yosys synth_xilinx -family xcup)",
        r.luts, r.lutram_luts(), r.ffs, r.bram36, r.uram, r.dsp, r.carry, r.cells
    );
    Ok(())
}

fn bench_memops(requests: usize, json: bool) -> Result<()> {
    use weft_sim::engine::Engine;
    let engine = if weft_sim::verilator::toolchain().is_ok() {
        Engine::Verilator
    } else {
        Engine::RustHdl
    };
    let r = weft::bench::memops(engine, requests)?;
    if json {
        return print_json(&r);
    }
    println!("MemOps port, 8 stages, on {}:", engine.name());
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
    use weft_sim::engine::Engine;
    let verilator = weft_sim::verilator::toolchain().is_ok();
    let engine = if verilator {
        Engine::Verilator
    } else {
        Engine::RustHdl
    };
    if !verilator {
        eprintln!(
            "note: Verilator not found; the RTL runs in rust-hdl's simulator (slow at 512 bits)"
        );
    }
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let opts = weft::bench::BenchOptions {
        engine,
        packets: a.packets,
        tuples: a.tuples,
        model_card: a.model_card,
        progress: Some(&progress),
    };
    let mut speed = vec![Engine::RustHdl];
    if verilator {
        speed.push(Engine::Verilator);
    }
    let r = weft::bench::kv(&opts, &speed);
    pb.finish_and_clear();
    let r = r?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "line rate of kv_agg at 512 bits (8 lanes), full 1472-byte packets, on {}:",
        engine.name()
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
    println!("\nsimulation speed of the card (CSR + kv_agg at 512 bits), one 20k-tuple job:");
    for s in &r.sim_speed {
        println!(
            "  {:<10} {:>9} cycles in {:>6.2} s: {:>10.0} cycles/s",
            s.engine, s.cycles, s.seconds, s.cycles_per_second
        );
    }
    Ok(())
}

/// A PCI address from `vfio:BDF` or a bare `BDF`, checked.
fn bdf_of(spec: &str) -> Result<String> {
    let full = if spec.starts_with("vfio:") {
        spec.to_string()
    } else {
        format!("vfio:{spec}")
    };
    match full.parse::<DeviceSpec>()? {
        DeviceSpec::Vfio(bdf) => Ok(bdf),
        DeviceSpec::Sim(_) => bail!("{spec}: probe takes a PCI function (vfio:0000:3b:00.0)"),
    }
}

fn probe(a: ProbeArgs) -> Result<()> {
    let bdf = bdf_of(&a.spec)?;
    let p = weft::probe::probe(&bdf)?;
    if a.json {
        print_json(&p)
    } else {
        print!("{}", p.render());
        Ok(())
    }
}

fn bind(a: BindArgs) -> Result<()> {
    use weft_driver::vfio::sysfs::{is_root, Sysfs};
    let bdf = bdf_of(&a.bdf)?;
    let sysfs = Sysfs::system();
    let plan = sysfs.bind_plan(&bdf)?;
    let f = &plan.function;
    println!(
        "{bdf} ({:04x}:{:04x}, class {:06x}) is on {}; IOMMU group {}",
        f.vendor,
        f.device,
        f.class,
        f.driver.as_deref().unwrap_or("no driver"),
        f.iommu_group.map_or(
            "none (the IOMMU is off: VFIO will refuse it)".to_string(),
            |g| g.to_string()
        )
    );
    for b in &plan.group_blockers {
        println!(
            "note: {} in the same IOMMU group is on {}; VFIO opens the group only when it is on vfio-pci too (weft bind {})",
            b.bdf,
            b.driver.as_deref().unwrap_or("?"),
            b.bdf
        );
    }
    if plan.steps.is_empty() {
        println!("{bdf} is already bound to vfio-pci");
        return Ok(());
    }
    if f.iommu_group.is_none() {
        bail!("{bdf} has no IOMMU group: the IOMMU is off, so VFIO could not use it even bound; enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on or amd_iommu=on (nothing was changed)");
    }
    println!("weft bind will run:");
    for s in &plan.steps {
        println!("  {}", s.shell(&bdf));
    }
    if !is_root() {
        bail!("weft bind needs root to write sysfs: run it with sudo (nothing was changed)");
    }
    if !a.yes {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            bail!("not asking on a non-terminal: pass --yes to bind {bdf} (nothing was changed)");
        }
        eprint!("bind {bdf} to vfio-pci? [y/N] ");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            bail!("not bound (answered {:?})", line.trim());
        }
    }
    sysfs.bind(&plan)?;
    println!("{bdf} is bound to vfio-pci; open it as --device vfio:{bdf}");
    Ok(())
}

fn bench_queue(a: BenchQueueArgs) -> Result<()> {
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let o = weft::queue_bench::QueueBenchOptions {
        descriptors: a.descriptors,
        sim_descriptors: a.sim_descriptors,
        message: a.message,
        ..Default::default()
    };
    let r = weft::queue_bench::run(&o, Some(&progress));
    pb.finish_and_clear();
    let r = r?;
    if a.json {
        return print_json(&r);
    }
    println!(
        "H2C ring throughput on one core: {}-byte messages, {}-entry ring, descriptors per second",
        r.message, r.entries
    );
    println!(
        "(ceiling: descriptor writes and one doorbell per batch only, on a double whose queue registers are plain memory)"
    );
    println!(
        "  {:>5} {:>14} {:>16} {:>7} {:>16} {:>7}",
        "batch", "ceiling", "in-memory double", "ratio", "simulated card", "ratio"
    );
    for row in &r.rows {
        println!(
            "  {:>5} {:>14.0} {:>16.0} {:>7.2} {:>16.0} {:>7.2}",
            row.batch,
            row.ceiling_per_s,
            row.double_per_s,
            row.double_ratio,
            row.sim_per_s,
            row.sim_ratio
        );
    }
    println!(
        "({} descriptors per measurement on the double and the ceiling, {} on the simulated card, whose queue engine is a software model; its RTL is not stepped)",
        r.descriptors, r.sim_descriptors
    );
    Ok(())
}

fn write_sums(w: &mut impl std::io::Write, sums: &[(u32, i64)]) -> std::io::Result<()> {
    for (k, s) in sums {
        writeln!(w, "{k} {s}")?;
    }
    w.flush()
}

fn render_kv_stats(st: &kv::Stats, device: &str) -> String {
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    format!(
        "card {} (device {device}): {} slots, replacement {}, {} worker(s)\n\
         {} tuples, {} keys, {} packets, {} retransmissions, {} misplaced tuples\n\
         on the card: {} of tuples absorbed; {} spilled ({} evicted, {} overflows); host merged {} records ({} of tuples)\n\
         duplicates dropped {}, malformed {}; network lost {}, duplicated {}, reordered {}\n\
         {} cycles, {} beats: {:.2} tuples/cycle, {:.2} tuples/beat\n",
        st.card,
        st.slots,
        if st.replace { "on" } else { "off" },
        st.workers,
        st.tuples,
        st.keys,
        st.packets,
        st.retransmissions,
        st.misplaced,
        pct(st.nic_resident_fraction),
        st.spilled,
        st.evicted,
        st.overflows,
        st.host_records,
        pct(st.host_record_fraction),
        st.duplicates_dropped,
        st.malformed,
        st.net_lost,
        st.net_duplicated,
        st.net_reordered,
        st.cycles,
        st.beats,
        st.tuples_per_cycle,
        st.tuples_per_beat,
    )
}

fn agg_gen(a: GenArgs) -> Result<()> {
    let spec = kv::gen::ZipfSpec {
        s: a.zipf,
        keys: a.keys,
        tuples: a.tuples,
        workers: a.workers,
        seed: a.seed,
    };
    let tuples = kv::gen::zipf(&spec)?;
    let header = format!(
        "# weft agg gen --zipf {} --keys {} --tuples {} --workers {} --seed {}\n",
        a.zipf, a.keys, a.tuples, a.workers, a.seed
    );
    match &a.output {
        Some(path) => {
            let mut f = std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("creating {}", path.display()))?,
            );
            f.write_all(header.as_bytes())
                .and_then(|_| kv::input::write(&mut f, &tuples))
                .and_then(|_| f.flush())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => {
            let out = std::io::stdout();
            let mut w = std::io::BufWriter::new(out.lock());
            w.write_all(header.as_bytes())
                .and_then(|_| kv::input::write(&mut w, &tuples))
                .and_then(|_| w.flush())
                .context("writing to stdout")?;
        }
    }
    Ok(())
}

/// The Verilog the build puts in the plugin: the OpenNIC top's, or today the
/// card's (for inspection; the stub wrapper does not instantiate it).
fn bitstream_verilog(
    build: &weft_regs::BuildInfo,
    top: Option<&weft::bitstream::top::TopSource>,
) -> Vec<weft::bitstream::top::SourceFile> {
    match top {
        Some(t) => t.files.clone(),
        None => weft::bitstream::top::blocks(build)
            .into_iter()
            .filter(|(name, _)| name == "card")
            .map(|(_, f)| f)
            .collect(),
    }
}

fn bitstream_build(a: BitstreamBuildArgs) -> Result<()> {
    use weft::bitstream::build::{build, BuildOptions, Built};
    use weft::bitstream::vivado::Event;
    let board = weft::bitstream::board::load(&a.board)?;
    let info = weft::bitstream::top::build_info(board.board_id);
    let top = weft::bitstream::top::opennic_top(&info);
    let verilog = bitstream_verilog(&info, top.as_ref());
    let out = a.out.unwrap_or_else(|| {
        weft::bitstream::bitstreams_dir()
            .join("build")
            .join(&board.name)
    });
    let opts = BuildOptions {
        board: board.clone(),
        shell_dir: a.shell_dir,
        out_dir: out,
        dry_run: a.dry_run,
        jobs: a.jobs,
        top,
        verilog,
        manifest: weft::bitstream::manifest::default_path(),
        git_hash: weft::bitstream::top::git_hash().to_string(),
    };
    let pb = spinner();
    pb.set_message(format!("preparing the {} build", board.name));
    let stages = weft::bitstream::vivado::BUILD_STAGES;
    let r = build(&opts, |ev| match ev {
        Event::Stage(s) => {
            let k = stages.iter().position(|x| x == s).map_or(0, |k| k + 1);
            pb.set_message(format!("vivado: {s} ({k}/{})", stages.len()));
        }
        Event::RunLaunched(r) => pb.set_message(format!("vivado: {r} running")),
        Event::RunFinished(r) => pb.set_message(format!("vivado: {r} finished")),
        Event::Timing { wns, whs } => {
            pb.println(format!("timing: WNS {wns} ns, WHS {whs} ns"));
        }
        _ => {}
    });
    pb.finish_and_clear();
    match r? {
        Built::DryRun(plan) => {
            if a.json {
                return print_json(&json!({ "dry_run": true, "plan": plan }));
            }
            println!(
                "dry run for {} ({}, {}): nothing was built",
                board.name, board.part, board.board_part
            );
            println!("top: {}", plan.top);
            if let Some(l) = plan.box_layouts.first() {
                println!(
                    "registers on the card: {} ({:#x} bytes; the box crossbar gives each plugin slave 2^{} bytes)",
                    plan.registers,
                    l.c_size(),
                    l.window_bits
                );
            }
            if plan.stub {
                println!(
                    "the 250 MHz box wrapper is a stub: the OpenNIC top `weft_top` is not built yet (issue 8), so synthesis would stop at it"
                );
            }
            println!("wrote:");
            for f in &plan.files {
                println!("  {}", f.display());
            }
            println!("command (where Vivado is installed):");
            println!("  {}", plan.command);
            println!(
                "images it would write: {} and {} (flash image from {})",
                plan.bit.display(),
                plan.mcs.display(),
                board.user_image_offset_hex()
            );
            Ok(())
        }
        Built::Image(plan, image) => {
            if a.json {
                return print_json(&json!({ "dry_run": false, "plan": plan, "image": image }));
            }
            println!(
                "built {} for {}: WNS {} ns, WHS {} ns",
                plan.top, board.name, image.wns_ns, image.whs_ns
            );
            println!("  {}  {}", image.bit.sha256, image.bit.path);
            println!("  {}  {}", image.mcs.sha256, image.mcs.path);
            println!(
                "added to {}",
                weft::bitstream::manifest::default_path().display()
            );
            Ok(())
        }
    }
}

fn bitstream_estimate(board: &str, json: bool) -> Result<()> {
    let board = weft::bitstream::board::load(board)?;
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let e = weft::bitstream::estimate::estimate(&board, &progress);
    pb.finish_and_clear();
    let e = e?;
    if json {
        return print_json(&e);
    }
    print!("{}", weft::bitstream::estimate::render(&e));
    Ok(())
}

fn bitstream_list(a: JsonArg) -> Result<()> {
    let path = weft::bitstream::manifest::default_path();
    let m = weft::bitstream::Manifest::load(&path)?;
    if a.json {
        return print_json(&m);
    }
    if m.images.is_empty() {
        println!(
            "no images built ({}): `weft bitstream build` adds one after a successful Vivado run",
            path.display()
        );
        return Ok(());
    }
    println!(
        "{:<6} {:<22} {:<10} {:<5} {:<20} {:<10} {:<12} {:<12}",
        "board", "part", "git", "map", "built", "vivado", "bit sha256", "mcs sha256"
    );
    for im in &m.images {
        println!(
            "{:<6} {:<22} {:<10} {:<5} {:<20} {:<10} {:<12} {:<12}",
            im.board,
            im.part,
            im.git_hash.get(..8).unwrap_or(&im.git_hash),
            im.map_version,
            im.build_date,
            im.tools.get("vivado").map_or("?", String::as_str),
            im.bit.sha256.get(..12).unwrap_or(""),
            im.mcs.sha256.get(..12).unwrap_or("")
        );
    }
    Ok(())
}

fn bitstream_flash(a: BitstreamFlashArgs) -> Result<()> {
    use std::io::IsTerminal;
    use weft::bitstream::flash::{self, ProgramTcl, Target};
    use weft::bitstream::vivado::Event;
    let board = weft::bitstream::board::load(&a.board)?;
    let target = if a.jtag { Target::Jtag } else { Target::Flash };
    let manifest = weft::bitstream::Manifest::load(&weft::bitstream::manifest::default_path())?;
    let image =
        std::path::absolute(&a.image).with_context(|| format!("locating {}", a.image.display()))?;
    if !image.is_file() {
        bail!(
            "{}: no such image file (nothing was written)",
            image.display()
        );
    }
    let sha = weft::bitstream::sha256_file(&image)?;
    let known = manifest.find_by_sha256(&sha).cloned();
    let check = flash::check_image(&board, &image, target, known.as_ref())?;
    if !check.mismatches.is_empty() {
        if !a.force {
            bail!(
                "{}; nothing was written (--force overrides)",
                check.mismatches.join("; ")
            );
        }
        for m in &check.mismatches {
            eprintln!("warning: {m} (going on: --force)");
        }
    }
    if known.is_none() {
        eprintln!(
            "note: {} is not in the manifest: the running card's ID block cannot be checked against it afterwards",
            image.display()
        );
    }
    flash::require_vivado()?;
    let work = weft::bitstream::bitstreams_dir()
        .join("build")
        .join(&board.name)
        .join("flash");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let pb = spinner();
    let progress = |ev: &Event| {
        if let Event::Stage(s) = ev {
            pb.set_message(format!("vivado hardware manager: {s}"));
        }
    };
    pb.set_message("vivado hardware manager: scanning the JTAG chain");
    let probe = flash::run_script(&work, "probe", &flash::probe_tcl(&a.hw_server), progress);
    pb.finish_and_clear();
    let probe = probe?;
    let (device, warning) = flash::choose_device(&board, &probe.devices, a.force)?;
    if let Some(w) = warning {
        eprintln!("warning: {w} (going on: --force)");
    }
    let what = match target {
        Target::Jtag => format!("load {} into {}", image.display(), device.name),
        Target::Flash => format!(
            "write {} to the {} flash of {} from {} up (the golden image below it is not touched)",
            image.display(),
            board.flash.part,
            device.name,
            board.user_image_offset_hex()
        ),
    };
    println!(
        "board {} ({}): {} (IDCODE {:#010x}, cable {})",
        board.name, board.part, what, device.idcode, device.target
    );
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            bail!("not asking on a non-terminal: pass --yes to {what} (nothing was written)");
        }
        eprint!("{what}? [y/N] ");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            bail!("nothing was written (answered {:?})", line.trim());
        }
    }
    let mcs_out = work.join(format!("weft_{}_flash.mcs", board.name));
    let script = ProgramTcl {
        board: &board,
        target,
        image: &image,
        kind: check.kind,
        mcs_out: &mcs_out,
        hw_server: &a.hw_server,
        device: &device,
        check_idcode: !a.force,
    }
    .render();
    let pb = spinner();
    let progress = |ev: &Event| {
        if let Event::Stage(s) = ev {
            pb.set_message(format!("vivado hardware manager: {s}"));
        }
    };
    let r = flash::run_script(&work, "program", &script, progress);
    pb.finish_and_clear();
    r?;
    println!("done: {what}");
    let bdfs = flash::find_pci_functions(
        std::path::Path::new("/sys/bus/pci/devices"),
        board.pci.vendor,
        board.pci.device,
    );
    println!("next: {}", flash::rescan_hint(target, &bdfs));
    if target == Target::Flash {
        println!("the card's ID block can be checked after the power cycle: weft probe vfio:DDDD:BB:DD.F");
        return Ok(());
    }
    if bdfs.is_empty() {
        println!(
            "no PCI function {:04x}:{:04x} visible yet: after the rescan, check the card with `weft probe vfio:DDDD:BB:DD.F`",
            board.pci.vendor, board.pci.device
        );
        return Ok(());
    }
    for bdf in &bdfs {
        match weft::probe::probe(bdf) {
            Ok(p) => {
                match (&p.card, &known) {
                    (Some(card), Some(im)) => {
                        let d = flash::card_differences(card, im);
                        if d.is_empty() {
                            println!("{bdf}: the running card is the image in the manifest (map {}, git {})", card.map_version, card.git_hash);
                        } else {
                            println!("{bdf}: the running card differs from the manifest: {} (rescan first if it still shows the old image)", d.join(", "));
                        }
                    }
                    (Some(card), None) => println!(
                        "{bdf}: weft card, map {}, git {} (image not in the manifest)",
                        card.map_version, card.git_hash
                    ),
                    (None, _) => println!("{bdf}: {}", p.why),
                }
            }
            Err(e) => println!("{bdf}: {e}"),
        }
    }
    Ok(())
}

fn bitstream_fusesoc(out: &std::path::Path, json: bool) -> Result<()> {
    use weft::bitstream::fusesoc::{Core, CORE_FILE};
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut files = vec![];
    for (_, f) in weft::bitstream::top::blocks(&weft_hdl::this_build()) {
        let path = out.join(&f.name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
        files.push(f.name);
    }
    let waivers = "weft_waivers.vlt";
    let wpath = out.join(waivers);
    std::fs::write(&wpath, weft_hdl::lint::WAIVERS)
        .with_context(|| format!("writing {}", wpath.display()))?;
    let core = Core {
        version: env!("CARGO_PKG_VERSION"),
        git_hash: weft::bitstream::top::git_hash(),
        files: &files,
        waivers,
        toplevel: "weft_card",
    };
    let cpath = out.join(CORE_FILE);
    std::fs::write(&cpath, core.render())
        .with_context(|| format!("writing {}", cpath.display()))?;
    if json {
        return print_json(
            &json!({ "core": cpath, "name": core.name(), "files": files, "waivers": wpath }),
        );
    }
    println!(
        "wrote {} ({}): {} Verilog files, {waivers}; lint with `fusesoc run --target lint {}`",
        cpath.display(),
        core.name(),
        files.len(),
        core.name()
    );
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
        Cmd::Hdl {
            cmd: HdlCmd::Synth { block, json },
        } => synth(&block, json),
        Cmd::Verify(a) => verify(a),
        Cmd::Bench {
            cmd: BenchCmd::Kv(a),
        } => bench_kv(a),
        Cmd::Bench {
            cmd: BenchCmd::Queue(a),
        } => bench_queue(a),
        Cmd::Probe(a) => probe(a),
        Cmd::Bind(a) => bind(a),
        Cmd::Bitstream {
            cmd: BitstreamCmd::Build(a),
        } => bitstream_build(a),
        Cmd::Bitstream {
            cmd: BitstreamCmd::Estimate { board, json },
        } => bitstream_estimate(&board, json),
        Cmd::Bitstream {
            cmd: BitstreamCmd::List(a),
        } => bitstream_list(a),
        Cmd::Bitstream {
            cmd: BitstreamCmd::Flash(a),
        } => bitstream_flash(a),
        Cmd::Bitstream {
            cmd: BitstreamCmd::Fusesoc { out, json },
        } => bitstream_fusesoc(&out, json),
        Cmd::Memops {
            cmd: MemopsCmd::Check { program, json },
        } => memops_check(&program, json),
        Cmd::Bench {
            cmd: BenchCmd::Memops { requests, json },
        } => bench_memops(requests, json),
        Cmd::Memops {
            cmd:
                MemopsCmd::Run {
                    program,
                    trace,
                    device,
                    seed,
                    json,
                },
        } => memops_run(&program, &trace, &device, seed, json),
        Cmd::Avm { cmd } => avm_cli::run(cmd),
        Cmd::Agg { cmd: AggCmd::Kv(a) } => agg_kv(a),
        Cmd::Agg {
            cmd: AggCmd::Grad(a),
        } => grad_cli::agg(a),
        Cmd::Bench {
            cmd: BenchCmd::Grad(a),
        } => grad_cli::bench(a),
        Cmd::Agg {
            cmd: AggCmd::Gen(a),
        } => agg_gen(a),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
