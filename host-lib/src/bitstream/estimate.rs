//! `weft bitstream estimate`: resource figures from yosys
//! `synth_xilinx -family xcup` where Vivado is absent, as counts and as a
//! share of a board's part.
//!
//! The total is the OpenNIC top, [`super::top::opennic_top`] (`weft_top`,
//! every engine inside); the per-engine breakdown synthesises each block
//! alone. The total is less than the sum of the blocks: synthesis trims what
//! the top leaves unused and shares constants.
//!
//! These are yosys figures, not Vivado's: yosys 0.23 maps UltraScale+ carry
//! chains to `CARRY4`, packs differently and does no placement. The LUT share
//! counts logic LUTs plus LUT sites used as distributed RAM or shift
//! registers.
//!
//! Results are cached under `$WEFT_CACHE_DIR/estimate` (default
//! `~/.cache/weft/estimate`), keyed by the Verilog, the module, the family
//! and yosys's version, so a second board costs nothing.

use super::board::Board;
use serde::{Deserialize, Serialize};

/// Resource counts of one synthesised block.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Logic LUTs.
    pub luts: u64,
    /// LUT sites used as distributed RAM or shift registers.
    pub lutram_luts: u64,
    /// Flip-flops.
    pub ffs: u64,
    /// Block RAM in RAMB36 equivalents.
    pub bram36: f64,
    /// UltraRAM blocks.
    pub uram: u64,
    /// DSP slices.
    pub dsp: u64,
    /// Carry-chain cells.
    pub carry: u64,
    /// Every cell.
    pub cells: u64,
}

#[cfg(feature = "sim")]
impl From<&weft_sim::yosys::Resources> for Usage {
    fn from(r: &weft_sim::yosys::Resources) -> Usage {
        Usage {
            luts: r.luts,
            lutram_luts: r.lutram_luts(),
            ffs: r.ffs,
            bram36: r.bram36,
            uram: r.uram,
            dsp: r.dsp,
            carry: r.carry,
            cells: r.cells,
        }
    }
}

/// Shares of the part, in percent.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Share {
    /// LUT sites (logic and LUTRAM) over CLB LUTs.
    pub luts: f64,
    /// Flip-flops over CLB flip-flops.
    pub ffs: f64,
    /// RAMB36 over block RAMs.
    pub bram36: f64,
    /// UltraRAM over UltraRAMs.
    pub uram: f64,
    /// DSPs over DSP slices.
    pub dsp: f64,
}

/// The share of `board`'s part that `u` takes.
pub fn share(u: &Usage, board: &Board) -> Share {
    let c = &board.resources;
    let pct = |used: f64, cap: u64| {
        if cap == 0 {
            0.0
        } else {
            100.0 * used / cap as f64
        }
    };
    Share {
        luts: pct((u.luts + u.lutram_luts) as f64, c.luts),
        ffs: pct(u.ffs as f64, c.ffs),
        bram36: pct(u.bram36, c.bram36),
        uram: pct(u.uram as f64, c.uram),
        dsp: pct(u.dsp as f64, c.dsp),
    }
}

/// One block's estimate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockEstimate {
    /// Block name (`card`, `csr`, ...).
    pub block: String,
    /// Its Verilog module.
    pub module: String,
    /// What it is.
    pub note: String,
    /// Counts.
    pub usage: Usage,
    /// Shares of the part, percent.
    pub share: Share,
    /// Whether the counts came from the cache.
    pub cached: bool,
}

/// An estimate for a board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Board name.
    pub board: String,
    /// FPGA part.
    pub part: String,
    /// The part's capacity.
    pub capacity: super::board::Capacity,
    /// Capacity figures that are unconfirmed in the board file.
    pub unconfirmed_capacity: Vec<String>,
    /// The tool.
    pub tool: String,
    /// What the top is (`card (CSR + kv_agg; weft_top not yet built)`).
    pub top: String,
    /// The whole top.
    pub total: BlockEstimate,
    /// Each engine alone.
    pub engines: Vec<BlockEstimate>,
}

/// Build a block estimate from counts.
pub fn block_estimate(
    block: &str,
    module: &str,
    note: &str,
    usage: Usage,
    board: &Board,
    cached: bool,
) -> BlockEstimate {
    BlockEstimate {
        block: block.to_string(),
        module: module.to_string(),
        note: note.to_string(),
        share: share(&usage, board),
        usage,
        cached,
    }
}

/// What each engine block is, for the output.
pub fn engine_note(block: &str) -> &'static str {
    match block {
        "csr" => "register map decode",
        "kv_agg" => "key-value aggregation, 8 lanes x 512 slots",
        "grad_agg" => "gradient aggregation, 16 lanes x 256 slots",
        "memops" => "MemOps switch port, 8 stages",
        "avm" => "AVM pool, 4 consumers x 16 pages",
        "axil_cdc" => "AXI4-Lite crossing axil_aclk -> axis_aclk",
        "deframe" => "UDP steering and header strip (two in weft_top)",
        "pkt_mux4" => "packet merge (three in weft_top)",
        _ => "",
    }
}

/// Human-readable table.
pub fn render(e: &Estimate) -> String {
    use std::fmt::Write;
    let cap = |field: &str, v: String| {
        if e.unconfirmed_capacity.iter().any(|u| u == field) {
            format!("{v}?")
        } else {
            v
        }
    };
    let c = &e.capacity;
    let mut s = String::new();
    let _ = writeln!(s, "board {} ({}), top: {}", e.board, e.part, e.top);
    let _ = writeln!(
        s,
        "part capacity: {} LUT, {} FF, {} BRAM36, {} URAM, {} DSP{}",
        cap("resources.luts", c.luts.to_string()),
        cap("resources.ffs", c.ffs.to_string()),
        cap("resources.bram36", c.bram36.to_string()),
        cap("resources.uram", c.uram.to_string()),
        cap("resources.dsp", c.dsp.to_string()),
        if e.unconfirmed_capacity.is_empty() {
            ""
        } else {
            " (? unconfirmed: see the board file)"
        }
    );
    let _ = writeln!(s, "{}:", e.tool);
    let _ = writeln!(
        s,
        "  {:<8} {:>9} {:>7} {:>9} {:>7} {:>7} {:>7} {:>6}  {:>6} {:>6} {:>6} {:>6} {:>6}",
        "block",
        "LUT",
        "LUTRAM",
        "FF",
        "BRAM36",
        "URAM",
        "DSP",
        "CARRY",
        "LUT%",
        "FF%",
        "BRAM%",
        "URAM%",
        "DSP%"
    );
    let row = |s: &mut String, b: &BlockEstimate| {
        let u = &b.usage;
        let p = &b.share;
        let _ = writeln!(
            s,
            "  {:<8} {:>9} {:>7} {:>9} {:>7} {:>7} {:>7} {:>6}  {:>6.2} {:>6.2} {:>6.2} {:>6.2} {:>6.2}  {}",
            b.block, u.luts, u.lutram_luts, u.ffs, u.bram36, u.uram, u.dsp, u.carry,
            p.luts, p.ffs, p.bram36, p.uram, p.dsp, b.note
        );
    };
    row(&mut s, &e.total);
    let _ = writeln!(s, "  per engine:");
    for b in &e.engines {
        row(&mut s, b);
    }
    let _ = writeln!(
        s,
        "(yosys figures, not Vivado's: CARRY4 mapping, no placement; LUT% counts LUT sites incl. LUTRAM)"
    );
    s
}

/// Blocks of the per-engine breakdown.
pub const ENGINES: [&str; 8] = [
    "csr", "kv_agg", "grad_agg", "memops", "avm", "axil_cdc", "deframe", "pkt_mux4",
];

#[cfg(feature = "sim")]
mod run {
    use super::*;
    use crate::bitstream::{BitstreamError, Result};
    use std::path::PathBuf;
    use weft_sim::yosys::{self, SynthOptions};

    fn cache_dir() -> Option<PathBuf> {
        let base = match std::env::var_os("WEFT_CACHE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/weft"),
        };
        Some(base.join("estimate"))
    }

    fn yosys_version() -> String {
        let bin = std::env::var("WEFT_YOSYS")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "yosys".into());
        std::process::Command::new(bin)
            .arg("-V")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    }

    /// Synthesise `verilog` (top `module`) with yosys for `family`, using
    /// the cache. Returns the counts and whether they were cached.
    pub fn synth_cached(verilog: &str, module: &str, family: &str) -> Result<(Usage, bool)> {
        use sha2::{Digest, Sha256};
        let version = yosys_version();
        let mut h = Sha256::new();
        for part in [verilog, module, family, &version] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        let key = crate::bitstream::hex(&h.finalize());
        let path = cache_dir().map(|d| d.join(format!("{key}.json")));
        if let Some(p) = &path {
            if let Some(u) = std::fs::read_to_string(p)
                .ok()
                .and_then(|t| serde_json::from_str::<Usage>(&t).ok())
            {
                return Ok((u, true));
            }
        }
        let opts = SynthOptions {
            family: family.to_string(),
            ..SynthOptions::default()
        };
        let r = yosys::synth_xilinx(verilog, module, &opts).map_err(|source| {
            BitstreamError::Yosys {
                module: module.to_string(),
                source,
            }
        })?;
        let u = Usage::from(&r);
        if let Some(p) = &path {
            if let Some(d) = p.parent() {
                let _ = std::fs::create_dir_all(d);
            }
            if let Ok(t) = serde_json::to_string(&u) {
                let _ = std::fs::write(p, t);
            }
        }
        Ok((u, false))
    }

    /// Estimate the current top and each engine for `board`; `progress`
    /// hears which block is being synthesised. The ID block's build date
    /// and git hash are zero here (the board id and features are the
    /// image's): they are constants in the Verilog, so with them every
    /// commit would synthesise a slightly different top, and the figures
    /// (and the cache) would change with the commit instead of the RTL.
    pub fn estimate(board: &Board, progress: &dyn Fn(&str)) -> Result<Estimate> {
        let build = weft_regs::BuildInfo {
            build_date: 0,
            git_hash: 0,
            ..crate::bitstream::top::build_info(board.board_id)
        };
        let blocks = crate::bitstream::top::blocks(&build);
        let find = |name: &str| {
            blocks
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, f)| f.clone())
        };
        let t = crate::bitstream::top::opennic_top(&build);
        let text: String = t
            .files
            .iter()
            .map(|f| f.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        progress(&format!("yosys synth_xilinx -family xcup on {}", t.module));
        let (u, cached) = synth_cached(&text, &t.module, "xcup")?;
        let (top_desc, total) = (
            t.module.clone(),
            block_estimate("top", &t.module, "the OpenNIC top", u, board, cached),
        );
        let mut engines = vec![];
        for name in ENGINES {
            let Some(f) = find(name) else { continue };
            let module = weft_hdl::emit::module_name(name);
            let hint = if name == "memops" {
                " (about three minutes)"
            } else {
                ""
            };
            progress(&format!(
                "yosys synth_xilinx -family xcup on {module}{hint}"
            ));
            let (u, cached) = synth_cached(&f.text, &module, "xcup")?;
            engines.push(block_estimate(
                name,
                &module,
                engine_note(name),
                u,
                board,
                cached,
            ));
        }
        let version = yosys_version();
        Ok(Estimate {
            board: board.name.clone(),
            part: board.part.clone(),
            capacity: board.resources.clone(),
            unconfirmed_capacity: board
                .unconfirmed
                .iter()
                .filter(|u| u.starts_with("resources."))
                .cloned()
                .collect(),
            tool: format!(
                "{} synth_xilinx -family xcup",
                if version.is_empty() {
                    "yosys".to_string()
                } else {
                    version
                }
            ),
            top: top_desc,
            total,
            engines,
        })
    }
}

#[cfg(feature = "sim")]
pub use run::{estimate, synth_cached};
