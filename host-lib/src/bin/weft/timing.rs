//! `weft hdl timing`: the static-timing proxy (`weft_sim::timing`) on a
//! weft block, on any Verilog, or on a netlist yosys already wrote.

use crate::{print_json, spinner};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use weft_sim::timing::{self, TimingOptions, TimingReport};

#[derive(clap::Args)]
pub struct TimingArgs {
    /// The block to estimate (a name `weft hdl emit` writes, without
    /// `weft_`; `top` is the card). Default: the top.
    #[arg(long, default_value = "top")]
    pub block: String,
    /// Any Verilog file instead of a weft block (given more than once, the
    /// files are read together), with `--module` its top.
    #[arg(long, conflicts_with = "netlist")]
    pub verilog: Vec<PathBuf>,
    /// A netlist yosys already wrote (`write_json` after `synth_xilinx`),
    /// with `--module` its top.
    #[arg(long)]
    pub netlist: Option<PathBuf>,
    /// The top module of `--verilog` or `--netlist`.
    #[arg(long)]
    pub module: Option<String>,
    /// A parameter of `--verilog`'s top, NAME=VALUE (more than once).
    #[arg(long = "param", value_parser = parse_kv)]
    pub params: Vec<(String, String)>,
    /// A clock to budget, PORT=MHZ (more than once). Default: axis_aclk=250
    /// and axil_aclk=125; a domain not named gets the first one's.
    #[arg(long = "clock", value_parser = parse_clock)]
    pub clocks: Vec<weft_sim::timing::Clock>,
    /// How many worst paths to list per clock.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Map with `synth_xilinx -abc9` (yosys 0.23 uses 7-series delays for it).
    #[arg(long)]
    pub abc9: bool,
    /// Keep the mapped netlist (yosys JSON) here, to walk again with
    /// `--netlist` without synthesising.
    #[arg(long)]
    pub save_netlist: Option<PathBuf>,
    /// Exit with an error when a path is beyond its clock's budget.
    #[arg(long)]
    pub check: bool,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

fn parse_kv(s: &str) -> std::result::Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() && !v.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("{s:?} is not NAME=VALUE")),
    }
}

fn parse_clock(s: &str) -> std::result::Result<weft_sim::timing::Clock, String> {
    let (k, v) = parse_kv(s)?;
    let mhz: f64 = v
        .parse()
        .map_err(|_| format!("{v:?} is not a frequency in MHz"))?;
    if !(mhz.is_finite() && mhz > 0.0 && mhz <= 2000.0) {
        return Err(format!("{mhz} MHz is outside (0, 2000]"));
    }
    Ok(weft_sim::timing::Clock::new(&k, mhz))
}

/// Run `weft hdl timing`.
pub fn run(a: TimingArgs) -> Result<()> {
    let opts = TimingOptions {
        clocks: if a.clocks.is_empty() {
            timing::box_clocks()
        } else {
            a.clocks.clone()
        },
        top: a.top,
        ..TimingOptions::default()
    };
    let synth = weft_sim::yosys::SynthOptions::default();
    let (report, json, what) = if let Some(path) = &a.netlist {
        let module = a
            .module
            .as_deref()
            .context("--netlist needs --module (the netlist's top module)")?;
        let json =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let r = timing::estimate_json(&json, module, &opts)
            .with_context(|| format!("walking {}", path.display()))?;
        (r, None, format!("{module} (netlist {})", path.display()))
    } else {
        let (verilog, module) = if a.verilog.is_empty() {
            if !a.params.is_empty() {
                bail!("--param applies to --verilog only (weft's blocks are built with their parameters)");
            }
            let all = weft_hdl::emit::on_big_stack(|| {
                weft_hdl::emit::all(&weft_hdl::build_info::stamp_free())
            });
            let Some(e) = all.iter().find(|e| e.name == a.block) else {
                let names: Vec<_> = all.iter().map(|e| e.name).collect();
                bail!("no block {:?} (blocks: {})", a.block, names.join(", "));
            };
            (e.verilog.clone(), weft_hdl::emit::module_name(e.name))
        } else {
            let module = a
                .module
                .clone()
                .context("--verilog needs --module (the top module to synthesise)")?;
            let mut v = String::new();
            for p in &a.verilog {
                v += &std::fs::read_to_string(p)
                    .with_context(|| format!("reading {}", p.display()))?;
                v.push('\n');
            }
            (v, module)
        };
        let pb = spinner();
        pb.set_message(format!(
            "yosys synth_xilinx -family xcup{} on {module} (the top takes about 8 minutes)",
            if a.abc9 { " -abc9" } else { "" }
        ));
        let r = timing::estimate_verilog(&verilog, &module, &synth, a.abc9, &a.params, &opts);
        pb.finish_and_clear();
        let (r, json) = r.with_context(|| format!("estimating {module}"))?;
        (r, Some(json), module)
    };
    if let (Some(path), Some(json)) = (&a.save_netlist, &json) {
        std::fs::write(path, json).with_context(|| format!("writing {}", path.display()))?;
    }
    if a.json {
        print_json(&report)?;
    } else {
        print_report(&report, &what, a.abc9);
    }
    if a.check && !report.fits() {
        let over: Vec<String> = report
            .domains
            .iter()
            .filter(|d| d.over_budget > 0)
            .map(|d| {
                format!(
                    "{}: {} endpoints beyond {} ns",
                    d.clock, d.over_budget, d.budget_ns
                )
            })
            .collect();
        bail!("timing does not fit: {}", over.join("; "));
    }
    Ok(())
}

fn print_report(r: &TimingReport, what: &str, abc9: bool) {
    let m = &r.model;
    println!(
        "{what}: register-to-register estimate (yosys synth_xilinx -family xcup{}; LUT level {} ns, MUXF {}, CARRY4 {}, FF clock-to-out {}, BRAM read {} / {} with its output register, clock uncertainty {}; docs/timing.md)",
        if abc9 { " -abc9" } else { "" },
        m.lut, m.muxf, m.carry, m.ff_clk_to_q, m.bram_clk_to_q, m.bram_reg_clk_to_q, m.uncertainty
    );
    if let Some(res) = &r.resources {
        println!(
            "  {} LUT (+{} as LUTRAM), {} FF, {} BRAM36, {} CARRY",
            res.luts,
            res.lutram_luts(),
            res.ffs,
            res.bram36,
            res.carry
        );
    }
    for d in &r.domains {
        println!();
        println!(
            "{} at {} MHz (budget {} ns): {} endpoints, {} beyond the budget ({} beyond what is known to close), worst {} ns, deepest {} LUT levels{}",
            d.clock,
            d.mhz,
            d.budget_ns,
            d.endpoints,
            d.over_budget,
            d.over_ceiling,
            d.worst_ns,
            d.max_luts,
            if d.crossings > 0 {
                format!(", {} reached only across clocks (not costed)", d.crossings)
            } else {
                String::new()
            }
        );
        let hist: Vec<String> = d
            .lut_histogram
            .iter()
            .map(|(l, n)| format!("{l}:{n}"))
            .collect();
        println!("  endpoints by LUT levels: {}", hist.join(" "));
        println!("  worst path ending in each block:");
        for p in &d.by_block {
            print_path(p);
        }
        println!("  worst paths:");
        for p in &d.worst {
            print_path(p);
        }
    }
    let pr = &r.ports;
    println!();
    println!(
        "ports: input to register {} LUT levels ({} ns), register to output {} ({} ns){}",
        pr.input_to_reg_luts,
        pr.input_to_reg_ns,
        pr.reg_to_output_luts,
        pr.reg_to_output_ns,
        match pr.input_to_output_luts {
            Some(l) => format!(", input straight to output {l}"),
            None => ", no input reaches an output combinationally".to_string(),
        }
    );
    if !r.unknown_cells.is_empty() {
        println!(
            "cells costed as flip-flops (unknown to the walker): {:?}",
            r.unknown_cells
        );
    }
    if r.loops > 0 {
        println!("combinational loops: {} (closing edges ignored)", r.loops);
    }
}

fn print_path(p: &timing::Path) {
    println!(
        "    {:<10} {:>2} LUT {:>6.2} ns  {} <- {} ({})  through {}",
        p.block,
        p.luts,
        p.delay_ns,
        p.endpoint,
        p.start,
        p.start_type,
        p.through.join(" → ")
    );
}
