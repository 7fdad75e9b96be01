//! The self-check behind `weft verify`: the CSR block's three witnesses
//! (model, rust-hdl, Verilator) on one seeded random AXI4-Lite program.

use crate::{Error, Result};
use serde::Serialize;
use weft_model::axil::{Op, Timing};
use weft_model::csr::{check_serial, random_program, CsrDriver, CsrIn, CsrModel, CsrOut};
use weft_regs::{ctrl, MAP};
use weft_sim::simulator::{BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory};

/// Options of a self-check.
pub struct VerifyOptions<'a> {
    /// Seed of the program and of the bus timing.
    pub seed: u64,
    /// Transactions in the program.
    pub transactions: usize,
    /// Include the Verilator witness.
    pub verilator: bool,
    /// Bus timing: bubbles and back-pressure.
    pub timing: Timing,
    /// Verilator build progress.
    pub progress: Option<&'a (dyn Fn(&str) + Sync)>,
}

impl Default for VerifyOptions<'_> {
    fn default() -> Self {
        Self {
            seed: 1,
            transactions: 2000,
            verilator: true,
            timing: Timing {
                bubble: 0.3,
                stall: 0.3,
            },
            progress: None,
        }
    }
}

/// One witness's run.
#[derive(Clone, Debug, Serialize)]
pub struct WitnessReport {
    /// "model", "rust-hdl" or "verilator".
    pub witness: String,
    /// Cycles simulated.
    pub cycles: u64,
    /// Hash over every cycle's outputs.
    pub hash: String,
    /// Simulation speed of this run (wall clock; informational).
    pub cycles_per_second: f64,
}

/// The result of a self-check.
#[derive(Clone, Debug, Serialize)]
pub struct VerifyReport {
    /// The block checked.
    pub block: String,
    /// Seed used.
    pub seed: u64,
    /// Transactions issued (twice: overlapped, then serialised).
    pub transactions: usize,
    /// Runs with overlapping transactions, cycle-compared.
    pub witnesses: Vec<WitnessReport>,
    /// The rules checked, each of which held.
    pub checks: Vec<String>,
}

/// Run the CSR self-check.
pub fn verify_csr(opts: &VerifyOptions) -> Result<VerifyReport> {
    let build = weft_hdl::this_build();
    let module = weft_hdl::emit::module_name("csr");
    let eo = SimulatorOptions {
        progress: opts.progress,
        ..Default::default()
    };
    let make = move || weft_hdl::emit::csr(&build);
    let hdl = Prepared::new(Simulator::RustHdl, &module, make, false, &eo)?;
    let vl = if opts.verilator {
        Some(Prepared::new(
            Simulator::Verilator,
            &module,
            make,
            false,
            &eo,
        )?)
    } else {
        None
    };
    let mut factories: Vec<Factory<'_, CsrIn, CsrOut>> = vec![
        Box::new(move || -> BoxDut<CsrIn, CsrOut> { Box::new(CsrModel::new(MAP, build)) }),
        Box::new(|| {
            hdl.instantiate(None)
                .expect("rust-hdl instantiation cannot fail")
        }),
    ];
    if let Some(vl) = &vl {
        // The library is built; a new instance only fails on out-of-memory.
        factories.push(Box::new(|| {
            vl.instantiate(None).expect("Verilator instance")
        }));
    }
    let ops = random_program(&MAP, opts.seed, opts.transactions);
    let limit = 50 * opts.transactions as u64 + 1000;
    let mut checks = vec![];

    let overlapped = || CsrDriver::new(ops.clone(), opts.timing, opts.seed, false);
    let runs = agree(&factories, &overlapped, limit).map_err(Error::Check)?;
    checks.push(format!(
        "{} witnesses agree on every cycle's outputs with overlapping reads and writes",
        runs.len()
    ));
    for r in &runs {
        if let Some(v) = r.driver.master.violations().first() {
            return Err(Error::Check(format!(
                "{}: AXI4-Lite protocol: {v}",
                r.witness
            )));
        }
    }
    checks.push("the slave keeps every AXI4-Lite handshake rule".into());

    let serial = || CsrDriver::new(ops.clone(), opts.timing, opts.seed ^ 0x5eed, true);
    let sruns = agree(&factories, &serial, limit * 2).map_err(Error::Check)?;
    let irq_writes = ops
        .iter()
        .filter(|op| {
            matches!(op, Op::Write { addr, data, strb }
                if *addr >> 2 == ctrl::IRQ_TEST.addr >> 2 && data & 1 == 1 && strb & 1 == 1)
        })
        .count();
    for r in &sruns {
        check_serial(&MAP, &build, r.driver.master.completions())
            .map_err(|e| Error::Check(format!("{}: {e}", r.witness)))?;
        if r.driver.irq_cycles.len() != irq_writes {
            return Err(Error::Check(format!(
                "{}: {} interrupt pulses for {irq_writes} IRQ_TEST writes",
                r.witness,
                r.driver.irq_cycles.len()
            )));
        }
    }
    checks.push(
        "serialised, every response follows the register map: constants, scratch with strobes, \
         SLVERR on read-only writes, DECERR on unmapped addresses, a counting cycle counter, \
         one interrupt per IRQ_TEST write"
            .into(),
    );
    Ok(VerifyReport {
        block: module,
        seed: opts.seed,
        transactions: opts.transactions,
        witnesses: runs
            .iter()
            .map(|r| WitnessReport {
                witness: r.witness.clone(),
                cycles: r.run.cycles,
                hash: format!("{:016x}", r.run.hash),
                cycles_per_second: r.run.cycles as f64 / r.elapsed.as_secs_f64().max(1e-9),
            })
            .collect(),
        checks,
    })
}
