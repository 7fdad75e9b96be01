//! Vivado: the batch Tcl of the build, and running Vivado with progress by
//! stage.
//!
//! weft's Tcl prints markers Vivado passes through to its log and stdout:
//! `WEFT-STAGE <stage>` when a stage starts, `WEFT-TIMING WNS=<ns> WHS=<ns>`
//! after routing, `WEFT-VERSION <vivado version>`, and `WEFT-ERROR <message>`
//! before it exits non-zero. [`Event::parse`] also recognises Vivado's own
//! run markers (`Launched synth_1...`, `synth_1 finished`) and `ERROR:` lines.
//!
//! # Environment
//!
//! * `WEFT_VIVADO`: the `vivado` executable to use instead of the one on
//!   `PATH`.

use super::board::{Board, MIN_USER_IMAGE_OFFSET};
use super::{tcl_quote, BitstreamError, Result};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The vivado executable: `$WEFT_VIVADO` or `vivado`.
pub fn vivado_bin() -> String {
    std::env::var("WEFT_VIVADO")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "vivado".to_string())
}

/// Where `bin` resolves on `PATH` (or itself, when it is a path to an
/// executable file); `None` when it cannot be run.
pub fn find_executable(bin: &str) -> Option<PathBuf> {
    let p = Path::new(bin);
    if bin.contains('/') {
        return p.is_file().then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(bin))
        .find(|c| c.is_file())
}

/// The stages of a build, in order.
pub const BUILD_STAGES: [&str; 7] = [
    "project",
    "synth",
    "impl",
    "timing",
    "bitstream",
    "cfgmem",
    "done",
];

/// The Tcl procedures shared by the build and flash scripts: failure with a
/// marker, and the lowest address an MCS (Intel HEX) file writes.
pub fn tcl_prelude() -> &'static str {
    r#"# --- weft helpers -----------------------------------------------------------
proc weft_fail {msg} {
    puts "WEFT-ERROR $msg"
    exit 1
}
proc weft_stage {name} {
    puts "WEFT-STAGE $name"
    flush stdout
}
# Lowest and highest byte address an Intel HEX (.mcs) file writes.
proc weft_mcs_range {path} {
    set f [open $path r]
    set upper 0
    set low -1
    set high -1
    while {[gets $f line] >= 0} {
        set line [string trim $line]
        if {$line eq "" || [string index $line 0] ne ":"} { continue }
        scan [string range $line 1 2] %x count
        scan [string range $line 3 6] %x addr
        scan [string range $line 7 8] %x type
        if {$type == 4} {
            scan [string range $line 9 12] %x upper
            set upper [expr {$upper << 16}]
        } elseif {$type == 0 && $count > 0} {
            set a [expr {$upper + $addr}]
            set e [expr {$a + $count - 1}]
            if {$low < 0 || $a < $low} { set low $a }
            if {$e > $high} { set high $e }
        }
    }
    close $f
    return [list $low $high]
}
# Refuse an MCS that writes below the user-image offset (the golden image).
proc weft_assert_above_golden {mcs user_offset flash_bytes} {
    lassign [weft_mcs_range $mcs] low high
    if {$low < 0} { weft_fail "$mcs writes nothing" }
    if {$low < $user_offset} {
        weft_fail [format "%s starts at 0x%08X, below the user-image offset 0x%08X: the golden image is never written" $mcs $low $user_offset]
    }
    if {$high >= $flash_bytes} {
        weft_fail [format "%s ends at 0x%08X, past the end of the flash" $mcs $high]
    }
    puts [format "WEFT-MCS 0x%08X-0x%08X" $low $high]
}
"#
}

/// What the build Tcl needs.
#[derive(Clone, Debug)]
pub struct BuildTcl<'a> {
    /// The board.
    pub board: &'a Board,
    /// The OpenNIC shell checkout (absolute).
    pub shell_dir: &'a Path,
    /// weft's user plugin directory (absolute).
    pub plugin_dir: &'a Path,
    /// Where the images and reports go (absolute).
    pub out_dir: &'a Path,
    /// Parallel jobs for synthesis and implementation.
    pub jobs: u32,
    /// The shell build's tag (`-tag`), naming its build directory.
    pub tag: &'a str,
}

impl BuildTcl<'_> {
    /// The `.bit` file the build writes.
    pub fn bit_path(&self) -> PathBuf {
        self.out_dir.join(format!("weft_{}.bit", self.board.name))
    }

    /// The `.mcs` file the build writes.
    pub fn mcs_path(&self) -> PathBuf {
        self.out_dir.join(format!("weft_{}.mcs", self.board.name))
    }

    /// The timing summary report.
    pub fn timing_report(&self) -> PathBuf {
        self.out_dir.join("timing_summary.rpt")
    }

    /// The batch script: run the shell's `build.tcl` to create the project
    /// with weft's plugin (`-impl 0`), then synthesise, implement, check
    /// timing (negative setup or hold slack fails the build), write the
    /// bitstream and the configuration-flash image at the user-image offset.
    pub fn render(&self) -> String {
        let b = self.board;
        let q = |p: &Path| tcl_quote(&p.display().to_string());
        let mut s = String::new();
        s.push_str(&format!(
            "# weft bitstream build for {name} ({desc}).\n\
             # Generated by `weft bitstream build`; do not edit. Run:\n\
             #   vivado -mode batch -nojournal -log {log} -source {me}\n\
             # Part {part}, board part {bpart}; flash {fpart} ({iface}, {size} MiB),\n\
             # user image at {off} (the golden image below it is never written).\n\n",
            name = b.name,
            desc = b.description,
            log = self.out_dir.join("vivado.log").display(),
            me = self.out_dir.join("weft_build.tcl").display(),
            part = b.part,
            bpart = b.board_part,
            fpart = b.flash.part,
            iface = b.flash.interface,
            size = b.flash.size_mib,
            off = b.user_image_offset_hex(),
        ));
        s.push_str(tcl_prelude());
        s.push_str(&format!(
            "\n# --- settings ---------------------------------------------------------------\n\
             set weft_board        {board}\n\
             set weft_part         {part}\n\
             set weft_board_part   {bpart}\n\
             set weft_shell_dir    {shell}\n\
             set weft_plugin_dir   {plugin}\n\
             set weft_out_dir      {out}\n\
             set weft_jobs         {jobs}\n\
             set weft_tag          {tag}\n\
             set weft_flash_part   {fpart}\n\
             set weft_flash_iface  {iface}\n\
             set weft_flash_mib    {size}\n\
             set weft_user_offset  {off}\n\
             set weft_golden_end   0x{golden:08X}\n\
             set weft_bit          {bit}\n\
             set weft_mcs          {mcs}\n\
             set weft_timing_rpt   {rpt}\n\n",
            board = tcl_quote(&b.opennic_board),
            part = tcl_quote(&b.part),
            bpart = tcl_quote(&b.board_part),
            shell = q(self.shell_dir),
            plugin = q(self.plugin_dir),
            out = q(self.out_dir),
            jobs = self.jobs,
            tag = tcl_quote(self.tag),
            fpart = tcl_quote(&b.flash.part),
            iface = tcl_quote(&b.flash.interface),
            size = b.flash.size_mib,
            off = b.user_image_offset_hex(),
            golden = MIN_USER_IMAGE_OFFSET,
            bit = q(&self.bit_path()),
            mcs = q(&self.mcs_path()),
            rpt = q(&self.timing_report()),
        ));
        s.push_str(BUILD_FLOW);
        s
    }
}

/// The part of the build script that does not depend on the board.
const BUILD_FLOW: &str = r#"# Golden-image safety: the user image never starts inside the golden image.
if {$weft_user_offset < $weft_golden_end} {
    weft_fail [format "user-image offset 0x%08X is inside the golden image (below 0x%08X)" $weft_user_offset $weft_golden_end]
}
puts "WEFT-VERSION [version -short]"

# --- 1. project: the OpenNIC shell's build.tcl with weft's plugin ------------
weft_stage project
set argv [list -board $weft_board -tag $weft_tag -user_plugin $weft_plugin_dir \
              -jobs $weft_jobs -impl 0 -post_impl 0 -rebuild 1 -overwrite 0]
set argc [llength $argv]
cd [file join $weft_shell_dir script]
source [file join $weft_shell_dir script build.tcl]
if {[llength [get_projects -quiet]] == 0} {
    weft_fail "the shell's build.tcl left no project open (an existing build directory? delete [file join $weft_shell_dir build]/${weft_board}_$weft_tag)"
}
if {[get_property PART [current_project]] ne $weft_part} {
    weft_fail "the shell's project is for part [get_property PART [current_project]], not $weft_part"
}

# --- 2. synthesis ------------------------------------------------------------
weft_stage synth
reset_run synth_1
launch_runs synth_1 -jobs $weft_jobs
wait_on_run synth_1
if {[get_property PROGRESS [get_runs synth_1]] ne "100%"} {
    weft_fail "synthesis failed: see [get_property DIRECTORY [get_runs synth_1]]/runme.log"
}

# --- 3. implementation and bitstream -----------------------------------------
weft_stage impl
launch_runs impl_1 -to_step write_bitstream -jobs $weft_jobs
wait_on_run impl_1
if {[get_property PROGRESS [get_runs impl_1]] ne "100%"} {
    weft_fail "implementation failed: see [get_property DIRECTORY [get_runs impl_1]]/runme.log"
}

# --- 4. timing: negative setup or hold slack fails the build -----------------
weft_stage timing
open_run impl_1
report_timing_summary -max_paths 20 -report_unconstrained -file $weft_timing_rpt
set setup [get_timing_paths -quiet -setup -max_paths 1 -nworst 1]
set hold  [get_timing_paths -quiet -hold -max_paths 1 -nworst 1]
if {[llength $setup] == 0 || [llength $hold] == 0} {
    weft_fail "no timing paths: the design is unconstrained (see $weft_timing_rpt)"
}
set wns [get_property SLACK $setup]
set whs [get_property SLACK $hold]
puts "WEFT-TIMING WNS=$wns WHS=$whs"
if {$wns < 0 || $whs < 0} {
    weft_fail "timing not met: WNS $wns ns, WHS $whs ns (see $weft_timing_rpt)"
}

# --- 5. bitstream --------------------------------------------------------------
weft_stage bitstream
set run_dir [get_property DIRECTORY [get_runs impl_1]]
set built [lindex [glob -nocomplain -directory $run_dir *.bit] 0]
if {$built eq ""} { weft_fail "impl_1 wrote no .bit in $run_dir" }
file copy -force $built $weft_bit

# --- 6. configuration flash image at the user-image offset --------------------
weft_stage cfgmem
write_cfgmem -force -format mcs -size $weft_flash_mib -interface $weft_flash_iface \
    -loadbit "up $weft_user_offset $weft_bit" -file $weft_mcs
weft_assert_above_golden $weft_mcs $weft_user_offset [expr {$weft_flash_mib << 20}]

weft_stage done
exit 0
"#;

/// A device on a JTAG chain, as the hardware manager lists it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HwDevice {
    /// The hardware target (cable) it is on.
    pub target: String,
    /// Its name (`xcu250_0`).
    pub name: String,
    /// Its `PART` property.
    pub part: String,
    /// Its IDCODE.
    pub idcode: u32,
}

/// One thing seen in Vivado's output.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A weft stage started.
    Stage(String),
    /// Vivado launched a run (`synth_1`, `impl_1`).
    RunLaunched(String),
    /// A run finished.
    RunFinished(String),
    /// Slack after routing.
    Timing {
        /// Worst setup slack, ns.
        wns: f64,
        /// Worst hold slack, ns.
        whs: f64,
    },
    /// Vivado's version.
    Version(String),
    /// Address range of the written MCS.
    Mcs(String),
    /// A device seen by the hardware manager (flash flow).
    HwDevice(HwDevice),
    /// weft's Tcl refused or failed.
    WeftError(String),
    /// A Vivado `ERROR:` line.
    Error(String),
}

impl Event {
    /// Recognise one line of output.
    pub fn parse(line: &str) -> Option<Event> {
        let t = line.trim();
        if let Some(r) = t.strip_prefix("WEFT-STAGE ") {
            return Some(Event::Stage(r.trim().to_string()));
        }
        if let Some(r) = t.strip_prefix("WEFT-ERROR ") {
            return Some(Event::WeftError(r.trim().to_string()));
        }
        if let Some(r) = t.strip_prefix("WEFT-VERSION ") {
            return Some(Event::Version(r.trim().to_string()));
        }
        if let Some(r) = t.strip_prefix("WEFT-MCS ") {
            return Some(Event::Mcs(r.trim().to_string()));
        }
        if let Some(r) = t.strip_prefix("WEFT-TIMING ") {
            let mut wns = None;
            let mut whs = None;
            for kv in r.split_whitespace() {
                if let Some(v) = kv.strip_prefix("WNS=") {
                    wns = v.parse().ok();
                } else if let Some(v) = kv.strip_prefix("WHS=") {
                    whs = v.parse().ok();
                }
            }
            return Some(Event::Timing {
                wns: wns?,
                whs: whs?,
            });
        }
        if let Some(r) = t.strip_prefix("WEFT-HW-DEVICE ") {
            let mut name = None;
            let mut part = String::new();
            let mut target = String::new();
            let mut idcode = None;
            for kv in r.split_whitespace() {
                if let Some(v) = kv.strip_prefix("name=") {
                    name = Some(v.to_string());
                } else if let Some(v) = kv.strip_prefix("part=") {
                    part = v.to_string();
                } else if let Some(v) = kv.strip_prefix("target=") {
                    target = v.to_string();
                } else if let Some(v) = kv.strip_prefix("idcode=") {
                    idcode = parse_idcode(v);
                }
            }
            return Some(Event::HwDevice(HwDevice {
                target,
                name: name?,
                part,
                idcode: idcode?,
            }));
        }
        if let Some(r) = t.strip_prefix("ERROR:") {
            return Some(Event::Error(r.trim().to_string()));
        }
        // Vivado: "[Tue Jan  2 10:00:00 2024] Launched synth_1..."
        //         "[Tue Jan  2 10:30:00 2024] synth_1 finished"
        if t.starts_with('[') {
            let after = t.split_once("] ").map(|(_, r)| r.trim())?;
            if let Some(r) = after.strip_prefix("Launched ") {
                let run = r.trim_end_matches('.').split([',', ' ']).next()?;
                return Some(Event::RunLaunched(run.to_string()));
            }
            if let Some(run) = after.strip_suffix(" finished") {
                return Some(Event::RunFinished(run.trim().to_string()));
            }
        }
        None
    }
}

/// An IDCODE as the hardware manager prints it: hex (`04B57093`, `0x...`) or
/// a 32-character binary string.
pub fn parse_idcode(s: &str) -> Option<u32> {
    let t = s.trim();
    if t.len() == 32 && t.bytes().all(|b| b == b'0' || b == b'1') {
        return u32::from_str_radix(t, 2).ok();
    }
    let h = t.trim_start_matches("0x").trim_start_matches("0X");
    if h.is_empty() || h.len() > 8 {
        return None;
    }
    u32::from_str_radix(h, 16).ok()
}

/// What a Vivado run produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutcome {
    /// The stages reached, in order.
    pub stages: Vec<String>,
    /// Slack, when the timing stage reported it.
    pub timing: Option<(f64, f64)>,
    /// Vivado's version, when reported.
    pub version: Option<String>,
    /// Devices the hardware manager listed.
    pub devices: Vec<HwDevice>,
    /// The first error reported (weft's, else Vivado's).
    pub error: Option<String>,
    /// Whether Vivado exited with status 0.
    pub success: bool,
}

/// Follow a run's output lines: stages, timing, errors.
pub fn follow(
    lines: impl IntoIterator<Item = String>,
    mut progress: impl FnMut(&Event),
) -> RunOutcome {
    let mut o = RunOutcome::default();
    let mut weft_error = None;
    let mut vivado_error = None;
    for line in lines {
        let Some(ev) = Event::parse(&line) else {
            continue;
        };
        match &ev {
            Event::Stage(s) => o.stages.push(s.clone()),
            Event::Timing { wns, whs } => o.timing = Some((*wns, *whs)),
            Event::Version(v) => o.version = Some(v.clone()),
            Event::HwDevice(d) => o.devices.push(d.clone()),
            Event::WeftError(e) => {
                weft_error.get_or_insert_with(|| e.clone());
            }
            Event::Error(e) => {
                vivado_error.get_or_insert_with(|| e.clone());
            }
            _ => {}
        }
        progress(&ev);
    }
    o.error = weft_error.or(vivado_error);
    o
}

/// Run `vivado -mode batch -nojournal -log LOG -source SCRIPT` in `cwd`,
/// following its stdout; `progress` sees every recognised event.
pub fn run(
    script: &Path,
    log: &Path,
    cwd: &Path,
    progress: impl FnMut(&Event),
) -> Result<RunOutcome> {
    let bin = vivado_bin();
    if find_executable(&bin).is_none() {
        return Err(BitstreamError::ToolMissing {
            tool: bin,
            env: "WEFT_VIVADO",
            why: "cannot run the Vivado flow here".into(),
        });
    }
    let mut child = Command::new(&bin)
        .args(["-mode", "batch", "-nojournal", "-log"])
        .arg(log)
        .arg("-source")
        .arg(script)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| super::io_err("running", Path::new(&bin), e))?;
    let stdout = child.stdout.take();
    let lines = stdout
        .into_iter()
        .flat_map(|s| BufReader::new(s).lines().map_while(std::result::Result::ok));
    let mut outcome = follow(lines, progress);
    let status = child
        .wait()
        .map_err(|e| super::io_err("waiting for", Path::new(&bin), e))?;
    outcome.success = status.success();
    if !outcome.success && outcome.error.is_none() {
        outcome.error = Some(format!("vivado exited with {status}"));
    }
    Ok(outcome)
}

/// The command line `run` uses, for printing.
pub fn command_line(script: &Path, log: &Path) -> String {
    format!(
        "{} -mode batch -nojournal -log {} -source {}",
        vivado_bin(),
        shell_quote(&log.display().to_string()),
        shell_quote(&script.display().to_string())
    )
}

/// Quote for a POSIX shell when needed.
pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-:=+,@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events() {
        assert_eq!(
            Event::parse("WEFT-STAGE synth"),
            Some(Event::Stage("synth".into()))
        );
        assert_eq!(
            Event::parse("WEFT-TIMING WNS=-0.125 WHS=0.010"),
            Some(Event::Timing {
                wns: -0.125,
                whs: 0.01
            })
        );
        assert_eq!(
            Event::parse("[Tue Jan  2 10:00:00 2024] Launched synth_1..."),
            Some(Event::RunLaunched("synth_1".into()))
        );
        assert_eq!(
            Event::parse("[Tue Jan  2 10:30:00 2024] impl_1 finished"),
            Some(Event::RunFinished("impl_1".into()))
        );
        assert_eq!(
            Event::parse("ERROR: [Synth 8-439] module 'x' not found"),
            Some(Event::Error("[Synth 8-439] module 'x' not found".into()))
        );
        assert_eq!(
            Event::parse("WEFT-HW-DEVICE name=xcu250_0 part=xcu250 idcode=04B57093 target=localhost:3121/xilinx_tcf/Xilinx/21330409F028A"),
            Some(Event::HwDevice(HwDevice {
                target: "localhost:3121/xilinx_tcf/Xilinx/21330409F028A".into(),
                name: "xcu250_0".into(),
                part: "xcu250".into(),
                idcode: 0x04B5_7093
            }))
        );
        assert_eq!(Event::parse("INFO: nothing"), None);
    }

    #[test]
    fn idcodes() {
        assert_eq!(parse_idcode("0x14B7D093"), Some(0x14B7_D093));
        assert_eq!(
            parse_idcode("00000100101101010111000010010011"),
            Some(0x04B5_7093)
        );
        assert_eq!(parse_idcode("zz"), None);
    }

    #[test]
    fn follow_prefers_weft_errors() {
        let lines = [
            "WEFT-STAGE project",
            "ERROR: [Common 17-1] something",
            "WEFT-ERROR timing not met",
        ]
        .map(String::from);
        let mut seen = 0;
        let o = follow(lines, |_| seen += 1);
        assert_eq!(seen, 3);
        assert_eq!(o.stages, ["project"]);
        assert_eq!(o.error.as_deref(), Some("timing not met"));
    }
}
