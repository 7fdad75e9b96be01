//! Three witnesses: one stimulus through the model and both simulators.
//!
//! Every witness is driven by its own copy of the same seeded driver. Runs
//! are compared base step by base step (clock cycles of a single-clock
//! block; see [`weft_model::clocks`]) through their output hashes; on a
//! divergence the two witnesses are run again to the first differing step
//! and the ports that differ are named. Every witness must step the same
//! clock schedule.

use crate::simulator::BoxDut;
use std::fmt::Write;
use weft_model::{compare, run, Driver, PortSet, Run};

/// Makes a fresh instance of one witness.
pub type Factory<'a, I, O> = Box<dyn Fn() -> BoxDut<I, O> + 'a>;

/// One witness's finished run and the driver that drove it (which holds the
/// transactions it saw).
pub struct Finished<D> {
    /// "model", "rust-hdl" or "verilator".
    pub witness: String,
    /// The run's cycle count and hashes.
    pub run: Run,
    /// The driver after the run.
    pub driver: D,
    /// Wall time of the run (for reporting simulation speed, never asserted).
    pub elapsed: std::time::Duration,
}

/// Run every witness with a fresh driver from `make_driver`. Fails when the
/// witnesses do not step one clock schedule or one does not finish.
pub fn run_all<I, O, D>(
    witnesses: &[Factory<'_, I, O>],
    make_driver: &dyn Fn() -> D,
    limit: u64,
) -> Result<Vec<Finished<D>>, String>
where
    I: PortSet,
    O: PortSet,
    D: Driver<I, O>,
{
    let mut out: Vec<Finished<D>> = vec![];
    let mut schedule: Option<(String, weft_model::Schedule)> = None;
    for make in witnesses {
        let mut dut = make();
        let s = dut.schedule();
        match &schedule {
            None => schedule = Some((dut.witness().to_string(), s)),
            Some((w, first)) if *first != s => {
                return Err(format!(
                    "{w} and {} step different clock schedules: [{first}] and [{s}]",
                    dut.witness()
                ))
            }
            Some(_) => {}
        }
        let mut driver = make_driver();
        let t0 = std::time::Instant::now();
        let run = run(dut.as_mut(), &mut driver, limit).map_err(|e| e.to_string())?;
        out.push(Finished {
            witness: dut.witness().to_string(),
            run,
            driver,
            elapsed: t0.elapsed(),
        });
    }
    Ok(out)
}

/// Outputs of `dut` in base step `step` under `driver`.
fn outputs_at<I, O, D>(mut dut: BoxDut<I, O>, mut driver: D, step: u64) -> Option<O>
where
    I: PortSet,
    O: PortSet,
    D: Driver<I, O>,
{
    for c in 0..=step {
        if driver.finished() {
            return None;
        }
        let i = driver.drive();
        let o = dut.eval(&i);
        if c == step {
            return Some(o);
        }
        driver.observe(&i, &o);
        dut.tick();
    }
    None
}

/// Check that witnesses `a` and `b` (indices into `witnesses`) agree on
/// every step; on disagreement, a report naming the step, (for a
/// multi-clock block) the clocks that rose at the edge instant before it,
/// and the ports that differ.
pub fn check_pair<I, O, D>(
    witnesses: &[Factory<'_, I, O>],
    runs: &[Finished<D>],
    a: usize,
    b: usize,
    make_driver: &dyn Fn() -> D,
) -> Result<(), String>
where
    I: PortSet,
    O: PortSet,
    D: Driver<I, O>,
{
    let Some(div) = compare(&runs[a].run, &runs[b].run) else {
        return Ok(());
    };
    let mut msg = format!(
        "{} and {} disagree: {div}",
        runs[a].witness, runs[b].witness
    );
    let da = witnesses[a]();
    let schedule = da.schedule();
    if schedule.clocks().len() > 1 {
        // Which domains just stepped is the first clue in a crossing.
        let last: Vec<&str> = div
            .step
            .checked_sub(1)
            .map(|p| schedule.names().filter(|n| schedule.rises(n, p)).collect())
            .unwrap_or_default();
        let _ = write!(
            msg,
            " (previous step's edges: {})",
            if last.is_empty() {
                "none".to_string()
            } else {
                last.join(", ")
            }
        );
    }
    let oa = outputs_at(da, make_driver(), div.step);
    let ob = outputs_at(witnesses[b](), make_driver(), div.step);
    if let (Some(oa), Some(ob)) = (oa, ob) {
        let (mut wa, mut wb) = (vec![], vec![]);
        oa.pack(&mut wa);
        ob.pack(&mut wb);
        let mut at = 0;
        for p in O::PORTS {
            let n = weft_model::ports::words(p.width);
            if wa[at..at + n] != wb[at..at + n] {
                let _ = write!(
                    msg,
                    "; port {}: {}={:x?} {}={:x?}",
                    p.name,
                    runs[a].witness,
                    &wa[at..at + n],
                    runs[b].witness,
                    &wb[at..at + n]
                );
            }
            at += n;
        }
    }
    Err(msg)
}

/// Run all witnesses and require step-level agreement of every one with the
/// first (the model, when it is cycle-accurate).
pub fn agree<I, O, D>(
    witnesses: &[Factory<'_, I, O>],
    make_driver: &dyn Fn() -> D,
    limit: u64,
) -> Result<Vec<Finished<D>>, String>
where
    I: PortSet,
    O: PortSet,
    D: Driver<I, O>,
{
    let runs = run_all(witnesses, make_driver, limit)?;
    for b in 1..runs.len() {
        check_pair(witnesses, &runs, 0, b, make_driver)?;
    }
    Ok(runs)
}

/// rust-hdl's own check (`check_all`: every input of every child driven,
/// no signal driven twice) on a block as its `connected()` constructor
/// gives it, and on the bare `new()` block, which must fail it. The
/// simulators do not need `connect_all`, Verilog generation for a flow
/// does, so without this no witness would notice a constructor that
/// skipped it.
pub fn check_connection(
    connected: &dyn rust_hdl::core::block::Block,
    bare: &dyn rust_hdl::core::block::Block,
) -> Result<(), String> {
    use rust_hdl::core::check_error::check_all;
    check_all(connected).map_err(|e| format!("connected block fails check_all: {e:?}"))?;
    if check_all(bare).is_ok() {
        return Err("the unconnected block passes check_all: the check tests nothing".into());
    }
    Ok(())
}
