//! Three witnesses: one stimulus through the model and both simulators.
//!
//! Every witness is driven by its own copy of the same seeded driver. Runs
//! are compared cycle by cycle through their output hashes; on a divergence
//! the two witnesses are run again to the first differing cycle and the
//! ports that differ are named.

use crate::engine::BoxDut;
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

/// Run every witness with a fresh driver from `make_driver`.
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
    let mut out = vec![];
    for make in witnesses {
        let mut dut = make();
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

/// Outputs of `dut` on cycle `cycle` under `driver`.
fn outputs_at<I, O, D>(mut dut: BoxDut<I, O>, mut driver: D, cycle: u64) -> Option<O>
where
    I: PortSet,
    O: PortSet,
    D: Driver<I, O>,
{
    for c in 0..=cycle {
        if driver.finished() {
            return None;
        }
        let i = driver.drive();
        let o = dut.eval(&i);
        if c == cycle {
            return Some(o);
        }
        driver.observe(&i, &o);
        dut.tick();
    }
    None
}

/// Check that witnesses `a` and `b` (indices into `witnesses`) agree on
/// every cycle; on disagreement, a report naming the cycle and the ports.
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
    let oa = outputs_at(witnesses[a](), make_driver(), div.cycle);
    let ob = outputs_at(witnesses[b](), make_driver(), div.cycle);
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

/// Run all witnesses and require cycle-level agreement of every one with the
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
