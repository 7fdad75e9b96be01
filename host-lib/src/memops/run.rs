//! Run a verified program and a trace on the simulated MemOps port (8
//! stages) with accelerator memories on its four ports, and check the run
//! against the reference model.

use super::program::Parsed;
use crate::{Error, Result};
use serde::Serialize;
use sha2::{Digest, Sha256};
use weft_model::memops::driver::{check_run, tel_counters, MemRun, MemTiming, MemopsDriver};
use weft_model::memops::{Request, Status, PORTS, STAGES};
use weft_sim::engine::{Engine, EngineOptions, Prepared};

/// How to run.
pub struct RunOptions<'a> {
    /// Simulator.
    pub engine: Engine,
    /// Timing of the memories and requesters.
    pub timing: MemTiming,
    /// Seed of the timing.
    pub seed: u64,
    /// Verilator build progress.
    pub progress: Option<&'a dyn Fn(&str)>,
}

/// One completion as the requester sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CompletionLine {
    /// The requester's tag.
    pub tag: u8,
    /// `ok`, `denied` or `error`.
    pub status: String,
    /// Read data or the atomic's old value, hex (reads and atomics only).
    pub data: Option<String>,
}

/// What a run reports.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Simulator.
    pub engine: String,
    /// Completions per source port, in arrival order.
    pub completions: Vec<Vec<CompletionLine>>,
    /// Telemetry counters by name.
    pub telemetry: Vec<(String, u64)>,
    /// SHA-256 of each port's memory (its non-zero bytes, by address).
    pub memory_sha256: Vec<String>,
    /// Cycles from the first request accepted to the last completion.
    pub cycles: u64,
    /// Request headers accepted per cycle while requests were offered.
    pub headers_per_cycle: f64,
    /// Cycles from acceptance to issue of the first issued request.
    pub added_latency: Option<u64>,
    /// The run equals the reference model's prediction, and no memory was
    /// written outside its permitted ranges.
    pub model_agrees: bool,
    /// The first difference, when the model disagrees.
    pub difference: Option<String>,
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Denied => "denied",
        Status::Error => "error",
    }
}

/// SHA-256 over a memory's non-zero bytes: 8-byte little-endian address,
/// then the byte, in address order.
pub fn memory_digest(mem: &weft_model::memops::Endpoint) -> String {
    let mut h = Sha256::new();
    for (a, b) in mem.bytes() {
        h.update(a.to_le_bytes());
        h.update([b]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Names of the telemetry counters of an 8-stage port, in `TEL_SEL` order.
pub fn telemetry_names() -> Vec<String> {
    let mut v: Vec<String> = (0..STAGES)
        .map(|i| format!("stage{i}.transactions"))
        .collect();
    v.extend((0..STAGES).map(|i| format!("stage{i}.bytes")));
    v.extend(
        [
            "issued",
            "blocked",
            "denied",
            "errors",
            "mirrored",
            "mirror_drops",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    v
}

/// Run `reqs` under the (already verified) program.
pub fn run(p: &Parsed, reqs: &[Request], opts: &RunOptions) -> Result<RunReport> {
    let image = p.program.image().map_err(|e| Error::Check(e.to_string()))?;
    let eo = EngineOptions {
        progress: opts.progress,
        ..Default::default()
    };
    let prep = Prepared::new(
        opts.engine,
        &weft_hdl::emit::module_name("memops"),
        weft_hdl::emit::memops::<8>,
        false,
        &eo,
    )?;
    let mut dut = prep.instantiate(None)?;
    let mut d = MemopsDriver::new(image, STAGES, reqs.to_vec(), opts.timing, opts.seed);
    let limit = 1000 * reqs.len() as u64 + 10_000;
    weft_model::run(dut.as_mut(), &mut d, limit).map_err(|e| Error::Check(e.to_string()))?;
    let r: MemRun = d.run;
    let check = check_run(&p.program, STAGES, reqs, &r);
    let mut completions = vec![vec![]; PORTS];
    for c in &r.completions {
        let data = (c.status == Status::Ok
            && reqs.iter().any(|q| {
                q.src == c.dst && q.tag == c.tag && q.op != weft_model::memops::Op::Write
            }))
        .then(|| format!("{:016x}", c.data));
        completions[c.dst as usize % PORTS].push(CompletionLine {
            tag: c.tag,
            status: status_name(c.status).into(),
            data,
        });
    }
    let names = telemetry_names();
    let n = tel_counters(STAGES);
    let first = r.accepted_at.first().copied().unwrap_or(0);
    let last = r.accepted_at.last().copied().unwrap_or(0);
    Ok(RunReport {
        engine: opts.engine.name().into(),
        completions,
        telemetry: names
            .into_iter()
            .zip(r.telemetry.iter().copied())
            .take(n)
            .collect(),
        memory_sha256: r.endpoints.iter().map(memory_digest).collect(),
        cycles: r.cycles.saturating_sub(first),
        headers_per_cycle: if r.accepted_at.is_empty() {
            0.0
        } else {
            r.accepted_at.len() as f64 / (last - first + 1) as f64
        },
        added_latency: r.issued_at.first().and_then(|&t| {
            // The first issued request: the first whose outcome was an issue.
            let want = weft_model::memops::predict(&p.program, reqs);
            let first_issued = reqs.iter().position(|q| {
                want.issued
                    .first()
                    .is_some_and(|i| i.req.src == q.src && i.req.tag == q.tag)
            })?;
            Some(t - r.accepted_at.get(first_issued)?)
        }),
        model_agrees: check.is_ok(),
        difference: check.err(),
    })
}
