//! `weft hdl emit|lint|synth|timing`: the RTL as Verilog, Verilator's lint
//! of it, yosys resource estimates per block, and the static-timing proxy.

use crate::{print_json, spinner, JsonArg};
use anyhow::{bail, Context, Result};
use clap::Subcommand;
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum HdlCmd {
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
    /// Estimate register-to-register timing: yosys maps the design to
    /// UltraScale+ primitives and every path is walked with the delay model
    /// of docs/timing.md (an estimate, not Vivado: no placement).
    Timing(crate::timing::TimingArgs),
}

pub fn run(cmd: HdlCmd) -> Result<()> {
    match cmd {
        HdlCmd::Emit { out, json } => emit(out, json),
        HdlCmd::Lint(a) => lint(a),
        HdlCmd::Synth { block, json } => synth(&block, json),
        HdlCmd::Timing(a) => crate::timing::run(a),
    }
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
