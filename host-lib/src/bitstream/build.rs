//! `weft bitstream build`: weft's plugin in the OpenNIC shell, the Vivado
//! batch flow, and the manifest entry of the image.
//!
//! [`build`] checks the shell checkout against the 250 MHz box contract,
//! writes the plugin (`OUT/plugin/`) and the batch script
//! (`OUT/weft_build.tcl`), then runs Vivado on it when it is installed,
//! following the log by stage; a timing violation fails the build. After a
//! successful run the image is appended to the manifest.
//!
//! The plugin's register glue gives weft's map a window of its size on the
//! box's AXI4-Lite slave 0 ([`super::box_map`]); a map that outgrows the
//! box fails the build before anything is written.
//!
//! Without a top ([`BuildOptions::top`] `None`), only a dry run is allowed:
//! the wrapper is then a stub that refuses synthesis.

use super::board::Board;
use super::box_map::{self, BoxLayout};
use super::manifest::{self, Image, ImageFile};
use super::opennic::{self, ShellCheckout};
use super::top::{SourceFile, TopSource};
use super::vivado::{self, BuildTcl, Event};
use super::{write, BitstreamError, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The shell build's tag: its build directory is `build/<board>_weft`.
pub const SHELL_TAG: &str = "weft";

/// What to build.
#[derive(Clone, Debug)]
pub struct BuildOptions {
    /// The board.
    pub board: Board,
    /// The OpenNIC shell checkout.
    pub shell_dir: PathBuf,
    /// Where the plugin, the script, the reports and the images go.
    pub out_dir: PathBuf,
    /// Write everything but do not run Vivado.
    pub dry_run: bool,
    /// Parallel jobs for Vivado's runs.
    pub jobs: u32,
    /// The OpenNIC top, `None` while it does not exist.
    pub top: Option<TopSource>,
    /// Verilog files to put in the plugin (the top's; today the card's
    /// blocks, for inspection).
    pub verilog: Vec<SourceFile>,
    /// The manifest to append the image to.
    pub manifest: PathBuf,
    /// The source tree's git hash.
    pub git_hash: String,
}

/// The files a build writes and the command that runs it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BuildPlan {
    /// Board name.
    pub board: String,
    /// FPGA part.
    pub part: String,
    /// Output directory.
    pub out_dir: PathBuf,
    /// The user plugin directory (`-user_plugin`).
    pub plugin_dir: PathBuf,
    /// The batch script.
    pub script: PathBuf,
    /// Vivado's log.
    pub log: PathBuf,
    /// The command that runs the flow.
    pub command: String,
    /// Every file written.
    pub files: Vec<PathBuf>,
    /// The module the wrapper instantiates, or why none.
    pub top: String,
    /// Whether the wrapper is the stub (no top yet).
    pub stub: bool,
    /// The `.bit` the flow will write.
    pub bit: PathBuf,
    /// The `.mcs` the flow will write.
    pub mcs: PathBuf,
    /// Where weft's register map sits on the card, e.g.
    /// `BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)`.
    pub registers: String,
    /// The 250 MHz box's crossbar layouts in the plugin, one per PF count.
    pub box_layouts: Vec<BoxLayout>,
}

/// What a build did.
#[derive(Clone, Debug)]
pub enum Built {
    /// `--dry-run`: the files are written, Vivado was not run.
    DryRun(BuildPlan),
    /// Vivado built an image; it is in the manifest.
    Image(BuildPlan, Box<Image>),
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| super::io_err("locating", p, e))
}

/// Check the shell, write the plugin and the script.
pub fn prepare(opts: &BuildOptions) -> Result<BuildPlan> {
    let shell_dir = absolute(&opts.shell_dir)?;
    let shell = ShellCheckout::open(&shell_dir, &opts.board.opennic_board)?;
    let out_dir = absolute(&opts.out_dir)?;
    let plugin_dir = out_dir.join("plugin");
    let mut files = vec![];
    for (rel, text) in opennic::plugin_files(&shell, opts.top.as_ref(), &opts.verilog)? {
        let p = plugin_dir.join(rel);
        write(&p, text)?;
        files.push(p);
    }
    let tcl = BuildTcl {
        board: &opts.board,
        shell_dir: &shell_dir,
        plugin_dir: &plugin_dir,
        out_dir: &out_dir,
        jobs: opts.jobs.max(1),
        tag: SHELL_TAG,
    };
    let script = out_dir.join("weft_build.tcl");
    write(&script, tcl.render())?;
    files.push(script.clone());
    let log = out_dir.join("vivado.log");
    let (bit, mcs) = (tcl.bit_path(), tcl.mcs_path());
    Ok(BuildPlan {
        board: opts.board.name.clone(),
        part: opts.board.part.clone(),
        command: vivado::command_line(&script, &log),
        out_dir,
        plugin_dir,
        script,
        log,
        files,
        top: opts
            .top
            .as_ref()
            .map_or_else(|| super::top::NO_TOP.to_string(), |t| t.module.clone()),
        stub: opts.top.is_none(),
        bit,
        mcs,
        registers: weft_regs::render::opennic_location(),
        box_layouts: box_map::weft_layouts()?,
    })
}

/// Build: refuse without a top unless dry-running, write the files, run
/// Vivado when installed, check timing, append the image to the manifest.
pub fn build(opts: &BuildOptions, mut progress: impl FnMut(&Event)) -> Result<Built> {
    if opts.top.is_none() && !opts.dry_run {
        return Err(BitstreamError::TopMissing);
    }
    let plan = prepare(opts)?;
    if opts.dry_run {
        return Ok(Built::DryRun(plan));
    }
    if vivado::find_executable(&vivado::vivado_bin()).is_none() {
        return Err(BitstreamError::ToolMissing {
            tool: vivado::vivado_bin(),
            env: "WEFT_VIVADO",
            why: format!(
                "nothing was built; the flow files are in {}: run `{}` where Vivado is installed",
                plan.out_dir.display(),
                plan.command
            ),
        });
    }
    let outcome = vivado::run(&plan.script, &plan.log, &plan.out_dir, &mut progress)?;
    if let Some((wns, whs)) = outcome.timing {
        if wns < 0.0 || whs < 0.0 {
            return Err(BitstreamError::Timing {
                wns,
                whs,
                report: plan.out_dir.join("timing_summary.rpt"),
            });
        }
    }
    if !outcome.success || outcome.stages.last().map(String::as_str) != Some("done") {
        return Err(BitstreamError::Vivado {
            stage: outcome
                .stages
                .last()
                .cloned()
                .unwrap_or_else(|| "start".into()),
            message: outcome
                .error
                .unwrap_or_else(|| "vivado stopped before the flow finished".into()),
            log: plan.log.clone(),
        });
    }
    let (wns, whs) = outcome.timing.ok_or_else(|| BitstreamError::Vivado {
        stage: "timing".into(),
        message: "no WEFT-TIMING line: slack unknown".into(),
        log: plan.log.clone(),
    })?;
    let mut tools = BTreeMap::new();
    tools.insert(
        "vivado".to_string(),
        outcome.version.unwrap_or_else(|| "unknown".into()),
    );
    tools.insert("weft".to_string(), env!("CARGO_PKG_VERSION").to_string());
    let image = Image {
        board: opts.board.name.clone(),
        part: opts.board.part.clone(),
        git_hash: if opts.git_hash.is_empty() {
            "00000000".into()
        } else {
            opts.git_hash.clone()
        },
        map_version: manifest::map_version(),
        build_date: super::utc_now(),
        tools,
        top: plan.top.clone(),
        bit: ImageFile {
            path: plan.bit.display().to_string(),
            sha256: super::sha256_file(&plan.bit)?,
        },
        mcs: ImageFile {
            path: plan.mcs.display().to_string(),
            sha256: super::sha256_file(&plan.mcs)?,
        },
        user_image_offset: opts.board.user_image_offset_hex(),
        wns_ns: wns,
        whs_ns: whs,
    };
    manifest::append(&opts.manifest, image.clone())?;
    Ok(Built::Image(plan, Box::new(image)))
}
