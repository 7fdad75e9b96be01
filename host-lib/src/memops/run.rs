//! Run a verified program and a trace on a card's MemOps port.
//!
//! The program is written into the card's MemOps registers; each MemOps
//! destination is one of the card's AVM pool consumers (`port0` to
//! `port3`), given [`PAGES_EACH`] pages at virtual pages 0 up (so byte
//! addresses 0 to `PAGES_EACH x 256 - 1` of each destination are mapped);
//! every request of the trace is a UDP frame from the card's host to the
//! card's MemOps port (`docs/wire.md`), and every completion comes back as a
//! UDP reply. The run is checked against the top's reference model
//! ([`crate::check::Checked`]), which sees the same register writes and
//! frames, and reports the completions per requester, MemOps' telemetry and
//! the pool's snapshot.

use super::program::Parsed;
use crate::avm::{Act, Pool, Snapshot};
use crate::card::{addr, Card};
use crate::check::Checked;
use crate::{Error, Result};
use serde::Serialize;
use weft_driver::{Port, RegisterAccess};
use weft_model::avm as pool_model;
use weft_model::memops::driver::tel_counters;
use weft_model::memops::{Request, Status, PORTS, STAGES};
use weft_model::wire::{self, build_frame, parse_built, Endpoint};
use weft_regs::memops as regs;

/// Pool pages each destination gets (the pool has 16 for 4 consumers).
pub const PAGES_EACH: u32 = (pool_model::PAGES / pool_model::CONSUMERS) as u32;

/// Device cycles a run may take per request before the card counts as
/// stuck (one transaction at a time, each a few dozen cycles).
const CYCLES_PER_REQUEST: u64 = 2_000;

/// One completion as the requester sees it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CompletionLine {
    /// The requester's tag.
    pub tag: u8,
    /// `ok`, `denied` or `error`.
    pub status: String,
    /// Read data, hex (reads that completed `ok` only).
    pub data: Option<String>,
}

/// What a run reports.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// The card, e.g. `sim:verilator`.
    pub device: String,
    /// Completions per requester port, in arrival order.
    pub completions: Vec<Vec<CompletionLine>>,
    /// MemOps telemetry counters by name.
    pub telemetry: Vec<(String, u64)>,
    /// The pool after the run: per destination requests, faults, latency.
    pub pool: Snapshot,
    /// Device cycles from the first request sent to the last completion.
    pub cycles: u64,
    /// Frames that matched the reference model's (every frame the card
    /// sent during the run), or the first difference.
    pub model: std::result::Result<u64, String>,
}

/// A status as the reports print it.
pub fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Denied => "denied",
        Status::Error => "error",
    }
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

/// The requester's address: the card's host at the MemOps client port.
fn client() -> Endpoint {
    Endpoint {
        port: addr::MEMOPS_CLIENT_PORT,
        ..addr::host()
    }
}

/// Write `image` into the card's MemOps program and turn it on.
fn install(card: &Card, image: &[u32]) -> weft_driver::Result<()> {
    let r = card.regs();
    r.write_reg(&regs::CTRL, 0)?;
    r.write_reg(&regs::PROG_ADDR, 0)?;
    for &w in image {
        r.write_reg(&regs::PROG_DATA, w)?;
    }
    r.write_reg(&regs::TEL_CLEAR, 1)?;
    r.write_reg(&regs::CTRL, regs::CTRL_ENABLE.set(0, 1))
}

/// Give every destination [`PAGES_EACH`] pages at virtual pages 0 up,
/// after taking back whatever an earlier run left.
fn map_pool(pool: &mut Pool) -> Result<()> {
    for c in 0..pool_model::CONSUMERS {
        let name = format!("port{c}");
        pool.act(&name, Act::Reserve(0))?;
        pool.act(&name, Act::Reclaim(255))?;
        pool.act(&name, Act::Quota(PAGES_EACH))?;
        for v in 0..PAGES_EACH {
            pool.act(&name, Act::Grant(v))?;
        }
    }
    Ok(())
}

/// Read MemOps' telemetry counters (LO latches HI).
fn telemetry(card: &Card) -> weft_driver::Result<Vec<(String, u64)>> {
    let r = card.regs();
    let names = telemetry_names();
    let mut v = vec![];
    for (k, name) in names.into_iter().enumerate().take(tel_counters(STAGES)) {
        r.write_reg(&regs::TEL_SEL, k as u32)?;
        let lo = r.read_reg(&regs::TEL_LO)?;
        let hi = r.read_reg(&regs::TEL_HI)?;
        v.push((name, lo as u64 | (hi as u64) << 32));
    }
    Ok(v)
}

/// Configure `card` for MemOps requests: its addresses (`me`), the
/// (already verified) program `p`, every destination's pages in the pool,
/// the engines on. Returns the pool, for its snapshot after the run.
pub fn prepare(card: &Card, p: &Parsed, me: &Endpoint) -> Result<Pool> {
    let image = p.program.image().map_err(|e| Error::Check(e.to_string()))?;
    card.set_address_to(me)?;
    install(card, &image)?;
    let mut pool = Pool::on_card(card)?;
    map_pool(&mut pool)?;
    card.enable_engines()?;
    Ok(pool)
}

/// Run `reqs` under the (already verified) program on `card`.
pub fn run(card: &Card, p: &Parsed, reqs: &[Request]) -> Result<RunReport> {
    if let Some(r) = reqs.iter().find(|r| r.src as usize >= PORTS) {
        return Err(Error::Check(format!(
            "request tag {} from port {}: the card's MemOps has ports 0 to {}",
            r.tag,
            r.src,
            PORTS - 1
        )));
    }
    let (card, checker) = Checked::wrap_card(card.clone())?;
    let frames = card.frames()?;
    let mut pool = prepare(&card, p, &addr::card())?;
    // Frames the card sent while being configured are not the run's.
    frames.recv()?;
    let to = Endpoint {
        port: wire::MEMOPS_PORT,
        ..addr::card()
    };
    let start = frames.cycles();
    for r in reqs {
        frames.send(
            Port::Host,
            &build_frame(&client(), &to, &wire::memops_request(r)),
        )?;
    }
    let mut completions = vec![vec![]; PORTS];
    let mut got = 0;
    let limit = CYCLES_PER_REQUEST * (reqs.len() as u64 + 1);
    let mut last = start;
    while got < reqs.len() {
        if frames.cycles() - start > limit {
            return Err(Error::Check(format!(
                "{} of {} completions after {limit} cycles",
                got,
                reqs.len()
            )));
        }
        frames.advance(16)?;
        for f in frames.recv()? {
            let c = parse_built(&f.bytes)
                .filter(|x| f.port == Port::Host && x.dst == client() && x.src == to)
                .and_then(|x| wire::parse_memops_completion(&x.payload))
                .ok_or_else(|| {
                    Error::Check(format!(
                        "the card sent a {}-byte frame on the {} port that is not a MemOps completion to the host",
                        f.bytes.len(),
                        f.port.name()
                    ))
                })?;
            last = f.cycle;
            got += 1;
            let read = reqs
                .iter()
                .any(|q| q.src == c.dst && q.tag == c.tag && q.op == weft_model::memops::Op::Read);
            completions[c.dst as usize % PORTS].push(CompletionLine {
                tag: c.tag,
                status: status_name(c.status).into(),
                data: (c.status == Status::Ok && read).then(|| format!("{:016x}", c.data)),
            });
        }
    }
    let telemetry = telemetry(&card)?;
    let snapshot = pool.observe()?;
    Ok(RunReport {
        device: card.name(),
        completions,
        telemetry,
        pool: snapshot,
        cycles: last.saturating_sub(start),
        model: checker.verdict().map_err(|e| e.to_string()),
    })
}
