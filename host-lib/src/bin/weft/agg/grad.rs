//! `weft agg grad`: training jobs sharing the card's gradient aggregation
//! engine, in device time. `weft bench grad` (in `bench`) runs the same
//! jobs under both policies over many seeds.

use crate::{open_job_card, print_json, spinner, JobCard};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::path::PathBuf;
use weft::grad::{self, JobsFile, PriorityPolicy, RunOptions, RunReport};

#[derive(Args)]
pub struct AggGradArgs {
    /// The jobs (TOML: workers, values, compute cycles per iteration,
    /// iterations, arrival cycle, optional static priority; see
    /// examples/grad/jobs.toml).
    #[arg(long)]
    jobs: PathBuf,
    /// Job priorities: fifo (all equal, no preemption), static (the file's),
    /// dsa (communication-intensive jobs first, from observed rates; jobs
    /// within a factor 2 of intensity at one level), rank (the previous
    /// dsa: one level per distinct intensity) or srpt (shortest remaining
    /// work first, on the card and in the switch's traffic classes).
    #[arg(long, default_value = "fifo")]
    policy: String,
    #[command(flatten)]
    card: JobCard,
    /// Probability that the network drops a worker's packet; workers resend
    /// chunks not complete after a timeout (the file's `timeout` at least).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Probability that a worker's packet that got through arrives twice.
    #[arg(long, default_value_t = 0.0)]
    dup: f64,
    /// Probability that a worker's packet is held back in the network (up
    /// to 2,000 cycles) while later ones pass it.
    #[arg(long, default_value_t = 0.0)]
    reorder: f64,
    /// Seed of the gradients, the workers' compute jitter and the losses.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

pub fn load(path: &std::path::Path, chunk_values: usize) -> Result<JobsFile> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    grad::parse(&text, chunk_values).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// The packet geometry of every 512-bit build: 64-value chunks (the file
/// is checked against it before a card is opened; the card's own
/// `grad.GEOMETRY` is checked when the run starts).
pub const CHUNK_VALUES: usize = weft_model::grad_agg::Config::CARD.geometry().chunk_values();

pub fn agg(a: AggGradArgs) -> Result<()> {
    // Everything that can be refused is refused before the card is opened.
    let file = load(&a.jobs, CHUNK_VALUES)?;
    let policy: PriorityPolicy = a.policy.parse()?;
    let opts = RunOptions {
        policy,
        loss: a.loss,
        dup: a.dup,
        reorder: a.reorder,
        seed: a.seed,
    };
    opts.validate()?;
    let opened = open_job_card(&a.card, false)?;
    let device = opened.card.name();
    let pb = spinner();
    pb.set_message(format!(
        "{} jobs under {policy} on {device}",
        file.jobs.len()
    ));
    let rep = grad::run(&opened.card, &file, &grad::Seeded(a.seed), &opts);
    pb.finish_and_clear();
    let fin = opened.finish();
    let rep = rep?;
    fin?;
    if a.json {
        print_json(&serde_json::json!({ "device": device, "report": rep }))?;
    } else {
        print!("{}", render(&rep, &device));
    }
    if let Some(d) = &rep.first_difference {
        bail!("check failed: a summed tensor differs from the exact i64 reference: {d}");
    }
    Ok(())
}

/// The human-readable report of a run.
fn render(r: &RunReport, device: &str) -> String {
    let mut s = format!(
        "{} jobs on {device} ({}, {} slots, {}-value chunks), policy {}, window {}, loss {}, dup {}, reorder {}, seed {}\n",
        r.jobs.len(),
        r.card,
        r.slots,
        r.chunk_values,
        r.policy,
        r.window,
        r.loss,
        r.dup,
        r.reorder,
        r.seed
    );
    s += &format!(
        "{:<12} {:>2} {:>3} {:>8} {:>5} {:>9} {:>10} {:>10} {:>8} {:>7} {:>6} {:>6} {:>5}\n",
        "job",
        "id",
        "wrk",
        "values",
        "iters",
        "arrival",
        "finish",
        "JCT",
        "on-card",
        "by-host",
        "preem",
        "resend",
        "prio"
    );
    for j in &r.jobs {
        s += &format!(
            "{:<12} {:>2} {:>3} {:>8} {:>5} {:>9} {:>10} {:>10} {:>8} {:>7} {:>6} {:>6} {:>5}\n",
            j.name,
            j.id,
            j.workers,
            j.values,
            j.iterations,
            j.arrival,
            j.finish,
            j.jct,
            j.on_card,
            j.by_host,
            j.preempted,
            j.retransmissions + j.host_resends,
            if j.priority_min == j.priority_max {
                j.priority_max.to_string()
            } else {
                format!("{}-{}", j.priority_min, j.priority_max)
            }
        );
    }
    s += &format!(
        "average JCT {:.0} cycles; makespan {} cycles; {:.2} values/cycle ({:.0}% of input beats used)\n",
        r.average_jct,
        r.makespan,
        r.values_per_cycle,
        100.0 * r.stream_utilisation
    );
    s += &format!(
        "chunks {}: {} on the card, {} by the host fallback; card: {} preemptions, {} packets forwarded, {} duplicates ({} NACKs), {} flushes ({} slots), {} leftover slots at the end; host merged {} packets (queue at most {})\n",
        r.chunks,
        r.on_card,
        r.by_host,
        r.counters.preempted,
        r.counters.fallbacks,
        r.counters.duplicates,
        r.nacks,
        r.flushes,
        r.counters.flushed,
        r.leftover_slots,
        r.host_packets,
        r.host_max_queue
    );
    if r.loss + r.dup + r.reorder > 0.0 {
        let lost: u64 = r.jobs.iter().map(|j| j.lost).sum();
        s += &format!(
            "network: {lost} DATA packets lost, {} duplicated, {} reordered ({} still in flight at the end)\n",
            r.duplicated, r.reordered, r.undelivered
        );
    }
    if r.exact {
        s += &format!(
            "check: every summed chunk ({}) equals the exact i64 sum of its workers' values\n",
            r.checked
        );
    } else {
        s += &format!(
            "check FAILED: {}\n",
            r.first_difference.as_deref().unwrap_or("?")
        );
    }
    s
}
