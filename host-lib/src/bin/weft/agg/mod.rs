//! `weft agg kv|gen|grad`: aggregation jobs on the card.

use anyhow::Result;
use clap::Subcommand;

pub mod grad;
pub mod kv;

#[derive(Subcommand)]
pub enum AggCmd {
    /// Key-value aggregation (after ASK): N workers send their tuples over
    /// a seeded lossy network to the card, which sums them per key; the host
    /// daemon retransmits, merges spills and flushes, and prints `key sum`
    /// lines sorted by key (stats go to stderr), or JSON with --json.
    Kv(kv::KvArgs),
    /// Write a seeded Zipf tuple stream in the `agg kv --input` format.
    Gen(kv::GenArgs),
    /// Gradient aggregation (after SwitchML, ATP and DSA): the jobs of
    /// JOBS.toml share the card's aggregator slots in device time under a
    /// priority policy; per job completion time, chunks on the card and by
    /// the host fallback, preemptions; fails unless every summed tensor
    /// equals the exact reference.
    Grad(grad::AggGradArgs),
}

pub fn run(cmd: AggCmd) -> Result<()> {
    match cmd {
        AggCmd::Kv(a) => kv::agg_kv(a),
        AggCmd::Gen(a) => kv::agg_gen(a),
        AggCmd::Grad(a) => grad::agg(a),
    }
}
