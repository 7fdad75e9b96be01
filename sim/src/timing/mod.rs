//! A static-timing proxy: yosys maps a design to UltraScale+ primitives
//! (`synth_xilinx -family xcup`), and the walker estimates every
//! register-to-register path of the netlist with a documented delay model
//! ([`DelayModel`]).
//!
//! It is not Vivado: there is no placement, so routing is an allowance per
//! LUT level and a long net costs what a short one does. It answers the
//! question a designer asks before Vivado does: how many LUT levels sit
//! between two registers, through which blocks, and does that fit the
//! clock. `docs/timing.md` gives the model's sources and its calibration
//! on modules that are known to close 250 MHz on these parts.
//!
//! Start points: flip-flop `Q`, block RAM and UltraRAM read data (with or
//! without the output register), LUTRAM and shift-register data, the top's
//! input ports (a domain of their own). Endpoints: every data, enable,
//! reset and address pin of a sequential cell, and the top's output ports.
//! Clock domains are found by following each cell's clock pin back through
//! its buffers to the port it comes from; a path that starts on another
//! clock than the one that captures it is a crossing (through the design's
//! synchronisers) and is counted, not costed.

mod delay;
mod netlist;
mod walk;

pub use delay::DelayModel;
pub use netlist::Netlist;

use serde::Serialize;
use std::collections::{BTreeMap, HashSet};

use crate::yosys::{self, Resources, SynthOptions, YosysError};
use walk::Walk;

/// What can go wrong estimating timing.
#[derive(Debug, thiserror::Error)]
pub enum TimingError {
    /// yosys failed.
    #[error(transparent)]
    Yosys(#[from] YosysError),
    /// The netlist could not be read.
    #[error("netlist: {0}")]
    Netlist(String),
}

/// A clock the report budgets: the name of the top port it comes from and
/// its frequency.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Clock {
    /// The top's clock port (`axis_aclk`).
    pub port: String,
    /// Its frequency, MHz.
    pub mhz: f64,
}

impl Clock {
    /// A clock named `port` at `mhz`.
    pub fn new(port: &str, mhz: f64) -> Self {
        Clock {
            port: port.to_string(),
            mhz,
        }
    }
}

/// The clocks of `weft_top` in the OpenNIC box: streams on `axis_aclk` at
/// 250 MHz, registers on `axil_aclk` at 125 MHz.
pub fn box_clocks() -> Vec<Clock> {
    vec![
        Clock::new("axis_aclk", 250.0),
        Clock::new("axil_aclk", 125.0),
    ]
}

/// How to run an estimate.
#[derive(Debug, Clone)]
pub struct TimingOptions {
    /// The clocks to budget; a domain not named here gets the first one's
    /// frequency.
    pub clocks: Vec<Clock>,
    /// The delay model.
    pub model: DelayModel,
    /// How many worst paths to list per domain.
    pub top: usize,
    /// The calibration: the slowest and the deepest path this model finds
    /// in modules known to close 250 MHz on UltraScale+ (Corundum's,
    /// `docs/timing.md`). A path beyond either is past what is known to
    /// close; one within both but beyond the budget is in the model's
    /// margin of pessimism.
    pub ceiling: Ceiling,
}

/// The slowest and deepest paths known to close 250 MHz.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Ceiling {
    /// Estimated delay at 250 MHz, ns (scaled with the period for other
    /// clocks).
    pub ns: f64,
    /// LUT levels (at 250 MHz and above).
    pub luts: u32,
}

impl Default for Ceiling {
    /// Corundum at commit 1ca0151b: `tx_checksum` at 512 bits (4.13 ns,
    /// 5 LUT levels) and `queue_manager` (6 LUT levels, 3.88 ns).
    fn default() -> Self {
        Ceiling { ns: 4.13, luts: 6 }
    }
}

impl Default for TimingOptions {
    fn default() -> Self {
        TimingOptions {
            clocks: box_clocks(),
            model: DelayModel::default(),
            top: 10,
            ceiling: Ceiling::default(),
        }
    }
}

/// One path, as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    /// Where it ends: the register (or RAM pin, or port) it is captured in.
    pub endpoint: String,
    /// The cell type there (`FDRE`, `RAMB36E2`, …, or `port`).
    pub endpoint_type: String,
    /// The block the endpoint sits in (the first part of its hierarchical
    /// name).
    pub block: String,
    /// Where it starts.
    pub start: String,
    /// The cell type there.
    pub start_type: String,
    /// Estimated delay, ns.
    pub delay_ns: f64,
    /// LUT levels.
    pub luts: u32,
    /// MUXF cells.
    pub muxf: u32,
    /// Carry cells.
    pub carry: u32,
    /// The blocks it runs through, in order, repeats collapsed.
    pub through: Vec<String>,
    /// The named nets on the way (hidden names skipped), in order.
    pub nets: Vec<String>,
}

/// One clock domain's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DomainReport {
    /// The clock port.
    pub clock: String,
    /// Its frequency, MHz.
    pub mhz: f64,
    /// What a path may take: the period less the clock's uncertainty, ns.
    pub budget_ns: f64,
    /// Endpoints captured on this clock with a path from the same clock.
    pub endpoints: usize,
    /// Of them, estimated beyond the budget.
    pub over_budget: usize,
    /// Of them, slower or deeper than the calibration's ceiling.
    pub over_ceiling: usize,
    /// Endpoints on this clock reached only from the other clock (through
    /// a synchroniser): crossings, not costed.
    pub crossings: usize,
    /// The worst estimate, ns.
    pub worst_ns: f64,
    /// The deepest path, in LUT levels.
    pub max_luts: u32,
    /// How many endpoints have their worst path at each LUT level count.
    pub lut_histogram: BTreeMap<u32, usize>,
    /// The worst paths, distinct registers, worst first.
    pub worst: Vec<Path>,
    /// The worst path ending in each block, worst first.
    pub by_block: Vec<Path>,
}

/// Paths to or from the top's ports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortReport {
    /// The deepest path from an input port to a register, LUT levels.
    pub input_to_reg_luts: u32,
    /// Its estimate, ns.
    pub input_to_reg_ns: f64,
    /// The deepest path from a register to an output port, LUT levels.
    pub reg_to_output_luts: u32,
    /// Its estimate, ns.
    pub reg_to_output_ns: f64,
    /// The deepest path from an input port straight to an output port, LUT
    /// levels (None when there is none).
    pub input_to_output_luts: Option<u32>,
    /// The worst input-to-register paths.
    pub inputs: Vec<Path>,
    /// The worst register-to-output paths.
    pub outputs: Vec<Path>,
}

/// The estimate of one design.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingReport {
    /// The top module.
    pub top: String,
    /// The delay model used.
    pub model: DelayModel,
    /// Per clock domain.
    pub domains: Vec<DomainReport>,
    /// Paths to and from the ports.
    pub ports: PortReport,
    /// Cell types the walker did not know (costed as flip-flops and LUTs).
    pub unknown_cells: BTreeMap<String, usize>,
    /// Combinational loops met (their closing edges ignored).
    pub loops: usize,
    /// The resources of the mapped design, when it was synthesised here.
    #[serde(skip)]
    pub resources: Option<Resources>,
}

impl TimingReport {
    /// The domain of clock `port`.
    pub fn domain(&self, port: &str) -> Option<&DomainReport> {
        self.domains.iter().find(|d| d.clock == port)
    }

    /// Whether every domain's paths fit its budget.
    pub fn fits(&self) -> bool {
        self.domains.iter().all(|d| d.over_budget == 0)
    }
}

/// Synthesise `verilog` (top module `top`, its parameters overridden by
/// `params`) with yosys and estimate it; the netlist's JSON comes back too.
pub fn estimate_verilog(
    verilog: &str,
    top: &str,
    synth: &SynthOptions,
    abc9: bool,
    params: &[(String, String)],
    opts: &TimingOptions,
) -> Result<(TimingReport, String), TimingError> {
    let (res, json) = yosys::synth_netlist(verilog, top, synth, abc9, params)?;
    let mut rep = estimate_json(&json, top, opts)?;
    rep.resources = Some(res);
    Ok((rep, json))
}

/// Estimate a netlist yosys wrote (`write_json`) after mapping.
pub fn estimate_json(
    json: &str,
    top: &str,
    opts: &TimingOptions,
) -> Result<TimingReport, TimingError> {
    let nl = Netlist::from_json(json, top)?;
    Ok(estimate(&nl, top, opts))
}

/// The instances of the top: the first part of every hierarchical name.
fn instances(nl: &Netlist) -> HashSet<String> {
    nl.names
        .values()
        .chain(nl.cells.iter().map(|c| &c.name))
        .filter_map(|n| n.trim_start_matches('\\').split_once('.'))
        .map(|(b, _)| b)
        .filter(|b| !b.starts_with('$'))
        .map(str::to_string)
        .collect()
}

/// The block a hierarchical name sits in: its first part (`kv` of
/// `kv.new_base`); for a wire of the top that connects an instance's port
/// (`h2c_df$s_tdata`, as rust-hdl names them), that instance; else `top`.
fn block_of(name: &str, top: &str, inst: &HashSet<String>) -> String {
    let n = name.trim_start_matches('\\');
    if let Some((b, _)) = n.split_once('.') {
        if !b.starts_with('$') {
            return b.to_string();
        }
    }
    if let Some((b, _)) = n.split_once('$') {
        if inst.contains(b) {
            return b.to_string();
        }
    }
    top.to_string()
}

/// A register's name without its bit index and array element
/// (`kv.win_base$15$q[28]` → `kv.win_base$q`).
fn register_of(name: &str) -> String {
    let base = match name.rfind('[') {
        Some(i) if name.ends_with(']') => &name[..i],
        _ => name,
    };
    let mut out = String::with_capacity(base.len());
    for part in base.split('$') {
        if !out.is_empty() || base.starts_with('$') {
            if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
                continue;
            }
            out.push('$');
        }
        out.push_str(part);
    }
    out
}

/// The name of a clock port without an index.
fn strip_index(name: &str) -> &str {
    match name.rfind('[') {
        Some(i) if name.ends_with(']') => &name[..i],
        _ => name,
    }
}

/// Estimate `nl`, whose top module is `top`.
pub fn estimate(nl: &Netlist, top: &str, opts: &TimingOptions) -> TimingReport {
    let inst = instances(nl);
    let block_of = |name: &str| block_of(name, top, &inst);
    let mut w = Walk::new(nl, opts.model.clone());
    let pd = w.ports_domain();
    let nd = w.domains.len();
    // (domain, delay, luts, endpoint index or output index, from domain)
    struct Hit {
        delay: f64,
        luts: u32,
        ep: usize,
    }
    let mut per_domain: Vec<Vec<Hit>> = (0..nd).map(|_| vec![]).collect();
    let mut crossings = vec![0usize; nd];
    let mut from_ports: Vec<Hit> = vec![];
    for (i, e) in nl.endpoints.iter().enumerate() {
        let arr = w.arrivals(e.bit);
        let d = w.domain_of_clock(e.clock);
        let mut same = false;
        let mut other = false;
        for (sd, a) in arr.iter().enumerate() {
            let Some(a) = a else { continue };
            if sd == d {
                same = true;
                per_domain[d].push(Hit {
                    delay: a.t as f64,
                    luts: a.luts as u32,
                    ep: i,
                });
            } else if sd == pd {
                from_ports.push(Hit {
                    delay: a.t as f64,
                    luts: a.luts as u32,
                    ep: i,
                });
            } else {
                other = true;
            }
        }
        if other && !same {
            crossings[d] += 1;
        }
    }
    let endpoint_name = |e: &netlist::Endpoint| -> String {
        let c = &nl.cells[e.cell];
        format!("{}.{}", c.name.trim_start_matches('\\'), e.pin)
    };
    // The register a flip-flop holds, found once per cell.
    let mut ff_names: std::collections::HashMap<usize, String> = Default::default();
    for (b, d) in &nl.drivers {
        if let netlist::Driver::Start { cell, .. } = d {
            if nl.cells[*cell].ty.starts_with("FD") {
                ff_names.insert(*cell, nl.name_of(*b));
            }
        }
    }
    let name_ep = |e: &netlist::Endpoint| -> String {
        ff_names
            .get(&e.cell)
            .cloned()
            .unwrap_or_else(|| endpoint_name(e))
    };
    let make_path = |w: &mut Walk, bit: u64, d: usize, end: String, end_ty: String| -> Path {
        let bits = w.path(bit, d);
        let a = w.arrivals(bit)[d].expect("a path ends where an arrival is");
        let start_bit = bits[0];
        let (start, start_type) = match nl.drivers.get(&start_bit) {
            Some(netlist::Driver::Port) => (nl.name_of(start_bit), "port".to_string()),
            Some(netlist::Driver::Start { cell, kind, .. }) => {
                let c = &nl.cells[*cell];
                // A RAM is named after its cell (its read data's net is
                // often the reader's port).
                let name = if matches!(kind, netlist::StartKind::Ff) {
                    nl.name_of(start_bit)
                } else {
                    c.name.trim_start_matches('\\').to_string()
                };
                (name, c.ty.clone())
            }
            Some(netlist::Driver::Comb { cell, .. }) => {
                let c = &nl.cells[*cell];
                (c.name.trim_start_matches('\\').to_string(), c.ty.clone())
            }
            _ => (nl.name_of(start_bit), "?".to_string()),
        };
        let mut through: Vec<String> = vec![];
        let mut nets: Vec<String> = vec![];
        for &b in &bits {
            let n = nl.name_of(b);
            if n.starts_with('#') {
                continue;
            }
            let blk = block_of(&n);
            // The top's own wires between blocks say nothing a reader
            // needs; the blocks they join do.
            if (blk != top || through.is_empty()) && through.last() != Some(&blk) {
                through.push(blk);
            }
            if !n.starts_with('$') && nets.last() != Some(&n) {
                nets.push(n);
            }
        }
        let end_block = block_of(&end);
        if through.last() != Some(&end_block) {
            through.push(end_block.clone());
        }
        Path {
            block: end_block,
            endpoint: end,
            endpoint_type: end_ty,
            start,
            start_type,
            delay_ns: round(a.t as f64),
            luts: a.luts as u32,
            muxf: a.muxf as u32,
            carry: a.carry as u32,
            through,
            nets,
        }
    };
    let mut domains = vec![];
    for d in 0..nd {
        if d == pd {
            continue;
        }
        let clock = w.domains[d].clone();
        let mhz = opts
            .clocks
            .iter()
            .find(|c| strip_index(&clock) == c.port)
            .or(opts.clocks.first())
            .map(|c| c.mhz)
            .unwrap_or(250.0);
        let budget = opts.model.budget(mhz);
        let hits = &mut per_domain[d];
        hits.sort_by(|a, b| b.delay.total_cmp(&a.delay).then(b.luts.cmp(&a.luts)));
        let mut hist = BTreeMap::new();
        for h in hits.iter() {
            *hist.entry(h.luts).or_insert(0) += 1;
        }
        let over = hits.iter().filter(|h| h.delay > budget + 1e-6).count();
        let ceil_ns = opts.ceiling.ns * 250.0 / mhz;
        let over_ceiling = hits
            .iter()
            .filter(|h| h.delay > ceil_ns + 1e-6 || (mhz >= 250.0 && h.luts > opts.ceiling.luts))
            .count();
        let mut worst = vec![];
        let mut seen = std::collections::HashSet::new();
        let mut blocks_seen = std::collections::HashSet::new();
        let mut by_block = vec![];
        for h in hits.iter() {
            let e = &nl.endpoints[h.ep];
            let name = name_ep(e);
            let reg = register_of(&name);
            let blk = block_of(&name);
            let want_worst = worst.len() < opts.top && seen.insert(reg);
            let want_block = blocks_seen.insert(blk);
            if want_worst || want_block {
                let p = make_path(&mut w, e.bit, d, name, nl.cells[e.cell].ty.clone());
                if want_worst {
                    worst.push(p.clone());
                }
                if want_block {
                    by_block.push(p);
                }
            }
        }
        domains.push(DomainReport {
            clock,
            mhz,
            budget_ns: round(budget),
            endpoints: hits.len(),
            over_budget: over,
            over_ceiling,
            crossings: crossings[d],
            worst_ns: hits.first().map(|h| round(h.delay)).unwrap_or(0.0),
            max_luts: hits.iter().map(|h| h.luts).max().unwrap_or(0),
            lut_histogram: hist,
            worst,
            by_block,
        });
    }
    // Ports: inputs to registers, registers to outputs.
    from_ports.sort_by(|a, b| b.delay.total_cmp(&a.delay).then(b.luts.cmp(&a.luts)));
    let mut inputs = vec![];
    let mut seen = std::collections::HashSet::new();
    for h in from_ports.iter() {
        if inputs.len() >= opts.top.min(5) {
            break;
        }
        let e = &nl.endpoints[h.ep];
        let name = name_ep(e);
        if seen.insert(register_of(&name)) {
            inputs.push(make_path(
                &mut w,
                e.bit,
                pd,
                name,
                nl.cells[e.cell].ty.clone(),
            ));
        }
    }
    let mut outs: Vec<(f64, u32, usize, usize)> = vec![];
    let mut in_to_out: Option<u32> = None;
    for (oi, (_, bit)) in nl.outputs.iter().enumerate() {
        let arr = w.arrivals(*bit);
        for (sd, a) in arr.iter().enumerate() {
            let Some(a) = a else { continue };
            if sd == pd {
                in_to_out = Some(in_to_out.unwrap_or(0).max(a.luts as u32));
            } else {
                outs.push((a.t as f64, a.luts as u32, oi, sd));
            }
        }
    }
    outs.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    let mut outputs = vec![];
    let mut seen = std::collections::HashSet::new();
    for &(_, _, oi, sd) in outs.iter() {
        if outputs.len() >= opts.top.min(5) {
            break;
        }
        let (name, bit) = &nl.outputs[oi];
        if seen.insert(register_of(name)) {
            outputs.push(make_path(
                &mut w,
                *bit,
                sd,
                name.clone(),
                "port".to_string(),
            ));
        }
    }
    let ports = PortReport {
        input_to_reg_luts: from_ports.iter().map(|h| h.luts).max().unwrap_or(0),
        input_to_reg_ns: from_ports.first().map(|h| round(h.delay)).unwrap_or(0.0),
        reg_to_output_luts: outs.iter().map(|o| o.1).max().unwrap_or(0),
        reg_to_output_ns: outs.first().map(|o| round(o.0)).unwrap_or(0.0),
        input_to_output_luts: in_to_out,
        inputs,
        outputs,
    };
    TimingReport {
        top: top.to_string(),
        model: opts.model.clone(),
        domains,
        ports,
        unknown_cells: nl.unknown.clone(),
        loops: w.loops,
        resources: None,
    }
}

fn round(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests;
