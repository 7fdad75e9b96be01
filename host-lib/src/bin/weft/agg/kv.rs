//! `weft agg kv` and `weft agg gen`: key-value aggregation on the card, and
//! the seeded tuple streams it reads.

use crate::{open_job_card, print_json, spinner, JobCard};
use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use weft::check::Checked;
use weft::kv;

#[derive(Args)]
pub struct KvArgs {
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
    #[command(flatten)]
    card: JobCard,
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
    /// input, and every frame and counter of the card with the top's
    /// reference model fed the same registers and frames; exit non-zero on
    /// any difference.
    #[arg(long)]
    check: bool,
    /// Turn the card's hot-key-agnostic replacement off.
    #[arg(long)]
    no_replace: bool,
}

#[derive(Args)]
pub struct GenArgs {
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

/// The card's senders: the most workers a job can have.
const MAX_WORKERS: usize = weft_model::kv_agg::SENDERS;
/// Jobs of at most this many tuples are short (`OpenOptions::short_run`).
const SHORT_RUN_TUPLES: usize = 1_000_000;

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

pub fn agg_kv(a: KvArgs) -> Result<()> {
    // Everything that can be refused is refused before the card is opened.
    let (tuples, workers) = kv_input(&a)?;
    let opts = kv::JobOptions {
        workers,
        replace: !a.no_replace,
        net: weft_model::net::NetConfig {
            loss: a.loss,
            dup: a.dup,
            reorder: a.reorder,
            ..weft_model::net::NetConfig::IDEAL
        },
        seed: a.seed,
        ..kv::JobOptions::default()
    };
    opts.validate()?;
    // At about seven tuples a cycle, a million tuples are some 150,000
    // cycles: seconds on an unoptimised model, less than an optimised
    // build would take.
    let opened = open_job_card(&a.card, tuples.len() <= SHORT_RUN_TUPLES)?;
    let device = opened.card.name();
    let (card, checker) = if a.check {
        // Tee the job's registers and frames into the reference model:
        // every record frame, ack and counter of the card must be the
        // model's.
        let (c, k) = Checked::wrap_card(opened.card.clone())?;
        (c, Some(k))
    } else {
        (opened.card.clone(), None)
    };

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
    let fin = opened.finish();
    let done = done?;
    fin?;
    let verdict = checker.map(|k| k.verdict());
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
            Err(e) => json!({ "agree": false, "first_difference": e.to_string() }),
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
        check_sums(&want, &done.sums)?;
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

/// Fail unless `got` is exactly `want`, naming the first differences.
pub(crate) fn check_sums(
    want: &std::collections::HashMap<u32, i64>,
    got: &std::collections::HashMap<u32, i64>,
) -> Result<()> {
    let mut bad: Vec<_> = want
        .iter()
        .filter(|(k, s)| got.get(k) != Some(s))
        .map(|(k, s)| (*k, *s, got.get(k).copied()))
        .collect();
    let extra = got.keys().filter(|k| !want.contains_key(k)).count();
    if bad.is_empty() && extra == 0 {
        return Ok(());
    }
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
    )
}

pub(crate) fn write_sums(w: &mut impl std::io::Write, sums: &[(u32, i64)]) -> std::io::Result<()> {
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

pub fn agg_gen(a: GenArgs) -> Result<()> {
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
