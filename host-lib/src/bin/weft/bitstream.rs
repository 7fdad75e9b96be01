//! `weft bitstream build|estimate|list|flash|fusesoc`: AMD Alveo images in
//! the OpenNIC shell.

use crate::{print_json, spinner, JsonArg};
use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum BitstreamCmd {
    /// Put the card's Verilog into the OpenNIC shell's 250 MHz box (a user
    /// plugin), write the Vivado batch flow (project, synthesis,
    /// implementation, timing check, bitstream, flash image at the
    /// user-image offset) and run it when vivado is on PATH; --dry-run
    /// writes the files and prints the command. The output goes to
    /// $WEFT_BUILD_DIR/<board> (default ~/.local/share/weft/build/<board>),
    /// outside the source tree, unless --out says otherwise.
    Build(BitstreamBuildArgs),
    /// Resource estimate with yosys synth_xilinx -family xcup: LUT, FF,
    /// BRAM, URAM and DSP as counts and as a share of the board's part, for
    /// the top and per engine (yosys figures, not Vivado's).
    Estimate {
        /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
        #[arg(long)]
        board: String,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// The manifest of built images (bitstreams/manifest.json).
    List(JsonArg),
    /// Load an image over JTAG or write it to the configuration flash at
    /// the user-image offset (the golden image is never written), through
    /// Vivado's hardware manager, after checking the part and the IDCODE and
    /// asking.
    Flash(BitstreamFlashArgs),
    /// Write a FuseSoC CAPI2 core (weft.core) with the emitted Verilog and
    /// the Verilator lint waivers to DIR.
    Fusesoc {
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct BitstreamBuildArgs {
    /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
    #[arg(long)]
    board: String,
    /// An OpenNIC shell checkout (github.com/Xilinx/open-nic-shell).
    #[arg(long)]
    shell_dir: PathBuf,
    /// Write the plugin and the flow, print the command, do not run Vivado.
    #[arg(long)]
    dry_run: bool,
    /// Output directory (default $WEFT_BUILD_DIR/BOARD, else
    /// ~/.local/share/weft/build/BOARD: outside the source tree).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Parallel jobs for Vivado's runs.
    #[arg(long, default_value_t = 8)]
    jobs: u32,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
#[command(group(clap::ArgGroup::new("into").required(true).args(["jtag", "flash"])))]
pub struct BitstreamFlashArgs {
    /// Board: u55c, u280, u250, u50 or u200 (bitstreams/boards/).
    #[arg(long)]
    board: String,
    /// The image: a .bit (JTAG or flash) or a .mcs (flash).
    #[arg(long)]
    image: PathBuf,
    /// Load the bitstream into the FPGA over JTAG (lost at power-off).
    #[arg(long)]
    jtag: bool,
    /// Write the configuration flash at the user-image offset.
    #[arg(long)]
    flash: bool,
    /// Do not ask before writing.
    #[arg(long)]
    yes: bool,
    /// Go on despite a part, board or IDCODE mismatch (never past the
    /// golden-image checks).
    #[arg(long)]
    force: bool,
    /// The hw_server to use.
    #[arg(long, default_value = "localhost:3121")]
    hw_server: String,
}

pub fn run(cmd: BitstreamCmd) -> Result<()> {
    match cmd {
        BitstreamCmd::Build(a) => bitstream_build(a),
        BitstreamCmd::Estimate { board, json } => bitstream_estimate(&board, json),
        BitstreamCmd::List(a) => bitstream_list(a),
        BitstreamCmd::Flash(a) => bitstream_flash(a),
        BitstreamCmd::Fusesoc { out, json } => bitstream_fusesoc(&out, json),
    }
}

fn bitstream_build(a: BitstreamBuildArgs) -> Result<()> {
    use weft::bitstream::build::{build, BuildOptions, Built};
    use weft::bitstream::vivado::Event;
    let board = weft::bitstream::board::load(&a.board)?;
    let info = weft::bitstream::top::build_info(board.board_id);
    let top = weft::bitstream::top::opennic_top(&info);
    let verilog = top.files.clone();
    let out = a
        .out
        .unwrap_or_else(|| weft::bitstream::build_dir().join(&board.name));
    let opts = BuildOptions {
        board: board.clone(),
        shell_dir: a.shell_dir,
        out_dir: out,
        dry_run: a.dry_run,
        jobs: a.jobs,
        top: Some(top),
        verilog,
        manifest: weft::bitstream::manifest::default_path(),
        git_hash: weft::bitstream::top::git_hash().to_string(),
    };
    let pb = spinner();
    pb.set_message(format!("preparing the {} build", board.name));
    let stages = weft::bitstream::vivado::BUILD_STAGES;
    let r = build(&opts, |ev| match ev {
        Event::Stage(s) => {
            let k = stages.iter().position(|x| x == s).map_or(0, |k| k + 1);
            pb.set_message(format!("vivado: {s} ({k}/{})", stages.len()));
        }
        Event::RunLaunched(r) => pb.set_message(format!("vivado: {r} running")),
        Event::RunFinished(r) => pb.set_message(format!("vivado: {r} finished")),
        Event::Timing { wns, whs } => {
            pb.println(format!("timing: WNS {wns} ns, WHS {whs} ns"));
        }
        _ => {}
    });
    pb.finish_and_clear();
    match r? {
        Built::DryRun(plan) => {
            if a.json {
                return print_json(&json!({ "dry_run": true, "plan": plan }));
            }
            println!(
                "dry run for {} ({}, {}): nothing was built",
                board.name, board.part, board.board_part
            );
            println!("top: {}", plan.top);
            if let Some(l) = plan.box_layouts.first() {
                println!(
                    "registers on the card: {} ({:#x} bytes; the box crossbar gives each plugin slave 2^{} bytes)",
                    plan.registers,
                    l.c_size(),
                    l.window_bits
                );
            }
            if plan.stub {
                println!(
                    "the 250 MHz box wrapper is a stub (no top was given), so synthesis would stop at it"
                );
            }
            println!("wrote:");
            for f in &plan.files {
                println!("  {}", f.display());
            }
            println!("command (where Vivado is installed):");
            println!("  {}", plan.command);
            println!(
                "images it would write: {} and {} (flash image from {})",
                plan.bit.display(),
                plan.mcs.display(),
                board.user_image_offset_hex()
            );
            Ok(())
        }
        Built::Image(plan, image) => {
            if a.json {
                return print_json(&json!({ "dry_run": false, "plan": plan, "image": image }));
            }
            println!(
                "built {} for {}: WNS {} ns, WHS {} ns",
                plan.top, board.name, image.wns_ns, image.whs_ns
            );
            println!("  {}  {}", image.bit.sha256, image.bit.path);
            println!("  {}  {}", image.mcs.sha256, image.mcs.path);
            println!(
                "added to {}",
                weft::bitstream::manifest::default_path().display()
            );
            Ok(())
        }
    }
}

fn bitstream_estimate(board: &str, json: bool) -> Result<()> {
    let board = weft::bitstream::board::load(board)?;
    let pb = spinner();
    let progress = |m: &str| pb.set_message(m.to_string());
    let e = weft::bitstream::estimate::estimate(&board, &progress);
    pb.finish_and_clear();
    let e = e?;
    if json {
        return print_json(&e);
    }
    print!("{}", weft::bitstream::estimate::render(&e));
    Ok(())
}

fn bitstream_list(a: JsonArg) -> Result<()> {
    let path = weft::bitstream::manifest::default_path();
    let m = weft::bitstream::Manifest::load(&path)?;
    if a.json {
        return print_json(&m);
    }
    if m.images.is_empty() {
        println!(
            "no images built ({}): `weft bitstream build` adds one after a successful Vivado run",
            path.display()
        );
        return Ok(());
    }
    println!(
        "{:<6} {:<22} {:<10} {:<5} {:<20} {:<10} {:<12} {:<12}",
        "board", "part", "git", "map", "built", "vivado", "bit sha256", "mcs sha256"
    );
    for im in &m.images {
        println!(
            "{:<6} {:<22} {:<10} {:<5} {:<20} {:<10} {:<12} {:<12}",
            im.board,
            im.part,
            im.git_hash.get(..8).unwrap_or(&im.git_hash),
            im.map_version,
            im.build_date,
            im.tools.get("vivado").map_or("?", String::as_str),
            im.bit.sha256.get(..12).unwrap_or(""),
            im.mcs.sha256.get(..12).unwrap_or("")
        );
    }
    Ok(())
}

fn bitstream_flash(a: BitstreamFlashArgs) -> Result<()> {
    use std::io::IsTerminal;
    use weft::bitstream::flash::{self, ProgramTcl, Target};
    use weft::bitstream::vivado::Event;
    let board = weft::bitstream::board::load(&a.board)?;
    let target = if a.jtag { Target::Jtag } else { Target::Flash };
    let manifest = weft::bitstream::Manifest::load(&weft::bitstream::manifest::default_path())?;
    let image =
        std::path::absolute(&a.image).with_context(|| format!("locating {}", a.image.display()))?;
    if !image.is_file() {
        bail!(
            "{}: no such image file (nothing was written)",
            image.display()
        );
    }
    let sha = weft::bitstream::sha256_file(&image)?;
    let known = manifest.find_by_sha256(&sha).cloned();
    let check = flash::check_image(&board, &image, target, known.as_ref())?;
    if !check.mismatches.is_empty() {
        if !a.force {
            bail!(
                "{}; nothing was written (--force overrides)",
                check.mismatches.join("; ")
            );
        }
        for m in &check.mismatches {
            eprintln!("warning: {m} (going on: --force)");
        }
    }
    if known.is_none() {
        eprintln!(
            "note: {} is not in the manifest: the running card's ID block cannot be checked against it afterwards",
            image.display()
        );
    }
    flash::require_vivado()?;
    let work = weft::bitstream::build_dir().join(&board.name).join("flash");
    std::fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let pb = spinner();
    let progress = |ev: &Event| {
        if let Event::Stage(s) = ev {
            pb.set_message(format!("vivado hardware manager: {s}"));
        }
    };
    pb.set_message("vivado hardware manager: scanning the JTAG chain");
    let probe = flash::run_script(&work, "probe", &flash::probe_tcl(&a.hw_server), progress);
    pb.finish_and_clear();
    let probe = probe?;
    let (device, warning) = flash::choose_device(&board, &probe.devices, a.force)?;
    if let Some(w) = warning {
        eprintln!("warning: {w} (going on: --force)");
    }
    let what = match target {
        Target::Jtag => format!("load {} into {}", image.display(), device.name),
        Target::Flash => format!(
            "write {} to the {} flash of {} from {} up (the golden image below it is not touched)",
            image.display(),
            board.flash.part,
            device.name,
            board.user_image_offset_hex()
        ),
    };
    println!(
        "board {} ({}): {} (IDCODE {:#010x}, cable {})",
        board.name, board.part, what, device.idcode, device.target
    );
    if !a.yes {
        if !std::io::stdin().is_terminal() {
            bail!("not asking on a non-terminal: pass --yes to {what} (nothing was written)");
        }
        eprint!("{what}? [y/N] ");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            bail!("nothing was written (answered {:?})", line.trim());
        }
    }
    let mcs_out = work.join(format!("weft_{}_flash.mcs", board.name));
    let script = ProgramTcl {
        board: &board,
        target,
        image: &image,
        kind: check.kind,
        mcs_out: &mcs_out,
        hw_server: &a.hw_server,
        device: &device,
        check_idcode: !a.force,
    }
    .render();
    let pb = spinner();
    let progress = |ev: &Event| {
        if let Event::Stage(s) = ev {
            pb.set_message(format!("vivado hardware manager: {s}"));
        }
    };
    let r = flash::run_script(&work, "program", &script, progress);
    pb.finish_and_clear();
    r?;
    println!("done: {what}");
    let bdfs = flash::find_pci_functions(
        std::path::Path::new("/sys/bus/pci/devices"),
        board.pci.vendor,
        board.pci.device,
    );
    println!("next: {}", flash::rescan_hint(target, &bdfs));
    if target == Target::Flash {
        println!("the card's ID block can be checked after the power cycle: weft probe vfio:DDDD:BB:DD.F");
        return Ok(());
    }
    if bdfs.is_empty() {
        println!(
            "no PCI function {:04x}:{:04x} visible yet: after the rescan, check the card with `weft probe vfio:DDDD:BB:DD.F`",
            board.pci.vendor, board.pci.device
        );
        return Ok(());
    }
    for bdf in &bdfs {
        match weft::probe::probe(bdf) {
            Ok(p) => {
                match (&p.card, &known) {
                    (Some(card), Some(im)) => {
                        let d = flash::card_differences(card, im);
                        if d.is_empty() {
                            println!("{bdf}: the running card is the image in the manifest (map {}, git {})", card.map_version, card.git_hash);
                        } else {
                            println!("{bdf}: the running card differs from the manifest: {} (rescan first if it still shows the old image)", d.join(", "));
                        }
                    }
                    (Some(card), None) => println!(
                        "{bdf}: weft card, map {}, git {} (image not in the manifest)",
                        card.map_version, card.git_hash
                    ),
                    (None, _) => println!("{bdf}: {}", p.why),
                }
            }
            Err(e) => println!("{bdf}: {e}"),
        }
    }
    Ok(())
}

fn bitstream_fusesoc(out: &std::path::Path, json: bool) -> Result<()> {
    use weft::bitstream::fusesoc::{Core, CORE_FILE};
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut files = vec![];
    for (_, f) in weft::bitstream::top::blocks(&weft_hdl::this_build()) {
        let path = out.join(&f.name);
        std::fs::write(&path, &f.text).with_context(|| format!("writing {}", path.display()))?;
        files.push(f.name);
    }
    let waivers = "weft_waivers.vlt";
    let wpath = out.join(waivers);
    std::fs::write(&wpath, weft_hdl::lint::WAIVERS)
        .with_context(|| format!("writing {}", wpath.display()))?;
    let core = Core {
        version: env!("CARGO_PKG_VERSION"),
        git_hash: weft::bitstream::top::git_hash(),
        files: &files,
        waivers,
        toplevel: weft::bitstream::top::OPENNIC_TOP_MODULE,
    };
    let cpath = out.join(CORE_FILE);
    std::fs::write(&cpath, core.render())
        .with_context(|| format!("writing {}", cpath.display()))?;
    if json {
        return print_json(
            &json!({ "core": cpath, "name": core.name(), "files": files, "waivers": wpath }),
        );
    }
    println!(
        "wrote {} ({}): {} Verilog files, {waivers}; lint with `fusesoc run --target lint {}`",
        cpath.display(),
        core.name(),
        files.len(),
        core.name()
    );
    Ok(())
}
