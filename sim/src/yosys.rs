//! Resource estimates from yosys.
//!
//! [`synth_xilinx`] writes a piece of Verilog into a fresh temporary
//! directory, runs yosys's `synth_xilinx` on it (by default for UltraScale+,
//! `-family xcup`, flattened, without I/O pads) under a timeout, and parses
//! the `stat` report into [`Resources`]: LUTs, flip-flops, block RAM, UltraRAM,
//! DSPs, carry chains and the full count per cell type.
//!
//! The figures are estimates to compare designs and versions with, not what
//! Vivado will report: yosys 0.23 maps UltraScale+ carry chains to `CARRY4`,
//! packs differently and does no placement.
//!
//! The Verilog is read with plain `read_verilog` (Verilog-2005), not `-sv`:
//! rust-hdl emits Verilog-2001, and SystemVerilog keywords such as `logic`,
//! `bit` or `int` are legal identifiers there. Module names containing `$`
//! (`weft_kv_agg$acc_ram$0`), as rust-hdl emits them, are fine.
//!
//! yosys's own output is kept out of sight and shown only on failure, inside
//! the [`YosysError`].
//!
//! # Environment
//!
//! * `WEFT_YOSYS`: the `yosys` executable to use instead of the one on `PATH`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Resource counts of a synthesized design, read from yosys's `stat`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resources {
    /// LUTs: `LUT1` to `LUT6` cells summed (logic LUTs only; LUTs used as
    /// distributed RAM or shift registers are in [`Resources::by_type`], see
    /// [`Resources::lutram_luts`]).
    pub luts: u64,
    /// Flip-flops: every `FD*` cell (`FDRE`, `FDSE`, `FDCE`, `FDPE`, …).
    pub ffs: u64,
    /// Block RAM in RAMB36 equivalents: a `RAMB36*` counts 1, a `RAMB18*`
    /// counts 0.5.
    pub bram36: f64,
    /// UltraRAM blocks (`URAM288*`).
    pub uram: u64,
    /// DSP slices (`DSP48*`).
    pub dsp: u64,
    /// Carry-chain cells (`CARRY4`, `CARRY8`).
    pub carry: u64,
    /// Every cell of the design, of any type (yosys's "Number of cells").
    pub cells: u64,
    /// Count per cell type, as yosys reports them (`FDRE` → 163, …).
    pub by_type: BTreeMap<String, u64>,
}

impl Resources {
    /// The count of cell type `ty` (0 when the design has none).
    pub fn count(&self, ty: &str) -> u64 {
        self.by_type.get(ty).copied().unwrap_or(0)
    }

    /// LUT sites taken by distributed RAM and shift registers (`RAM*M`,
    /// `RAM*X*`, `SRL*` cells), counted as the number of LUT6 each cell
    /// occupies. Not included in [`Resources::luts`].
    pub fn lutram_luts(&self) -> u64 {
        self.by_type
            .iter()
            .map(|(ty, &n)| n * lutram_sites(ty))
            .sum()
    }

    /// Build the summary from a per-cell-type map and the total cell count.
    fn from_counts(by_type: BTreeMap<String, u64>, cells: u64) -> Self {
        let mut r = Resources {
            cells,
            ..Resources::default()
        };
        for (ty, &n) in &by_type {
            let t = ty.as_str();
            if matches!(t, "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6") {
                r.luts += n;
            } else if t.starts_with("FD") {
                r.ffs += n;
            } else if t.starts_with("RAMB36") {
                r.bram36 += n as f64;
            } else if t.starts_with("RAMB18") {
                r.bram36 += n as f64 * 0.5;
            } else if t.starts_with("URAM288") {
                r.uram += n;
            } else if t.starts_with("DSP48") {
                r.dsp += n;
            } else if matches!(t, "CARRY4" | "CARRY8") {
                r.carry += n;
            }
        }
        r.by_type = by_type;
        r
    }
}

/// How many LUT6 sites one distributed-RAM or shift-register cell takes.
fn lutram_sites(ty: &str) -> u64 {
    match ty {
        "RAM16X1S" | "RAM32X1S" | "RAM64X1S" | "SRL16E" | "SRLC16E" | "SRLC32E" => 1,
        "RAM16X1D" | "RAM32X1D" | "RAM64X1D" | "RAM128X1S" => 2,
        "RAM32M" | "RAM64M" | "RAM128X1D" | "RAM256X1S" => 4,
        "RAM32M16" | "RAM64M8" | "RAM256X1D" | "RAM512X1S" => 8,
        _ => 0,
    }
}

/// How to run the synthesis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SynthOptions {
    /// The `synth_xilinx -family` value: `xcup` (UltraScale+, the default),
    /// `xcu`, `xc7`, ….
    pub family: String,
    /// How long yosys may run; it is killed (with the processes it started)
    /// past this. Default 30 minutes.
    pub timeout: Duration,
    /// Flatten the hierarchy before mapping (`-flatten`, the default). The
    /// counts are for the whole design either way.
    pub flatten: bool,
}

impl Default for SynthOptions {
    fn default() -> Self {
        SynthOptions {
            family: "xcup".to_string(),
            timeout: Duration::from_secs(30 * 60),
            flatten: true,
        }
    }
}

/// What can go wrong running yosys or reading its report.
#[derive(Debug, thiserror::Error)]
pub enum YosysError {
    /// The yosys executable could not be started.
    #[error("cannot run {bin} (is yosys installed? set WEFT_YOSYS to its path): {source}")]
    NotFound {
        /// The executable that was tried.
        bin: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A top module or family name that cannot be passed to yosys safely.
    #[error("invalid {what} {value:?}: must be non-empty, without whitespace, quotes, ';' or '#'")]
    InvalidName {
        /// Which option (`top module`, `family`).
        what: &'static str,
        /// The value given.
        value: String,
    },
    /// A file in the work directory could not be written or read.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// yosys exited with an error.
    #[error("yosys failed ({status}):\n{output}")]
    Failed {
        /// How it exited.
        status: String,
        /// yosys's output (stdout then stderr).
        output: String,
    },
    /// yosys ran past the timeout and was killed.
    #[error("yosys ran longer than {}s and was killed:\n{output}", timeout.as_secs_f64())]
    Timeout {
        /// The timeout.
        timeout: Duration,
        /// yosys's output so far (stdout then stderr).
        output: String,
    },
    /// The `stat` report could not be understood.
    #[error("cannot read yosys's stat report: {reason}\n--- report ---\n{report}")]
    Parse {
        /// What was wrong.
        reason: String,
        /// The report text.
        report: String,
    },
}

/// The yosys executable: `$WEFT_YOSYS` or `yosys` on `PATH`.
fn yosys_bin() -> String {
    std::env::var("WEFT_YOSYS")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "yosys".to_string())
}

/// Whether yosys can be run (`yosys -V` succeeds).
pub fn available() -> bool {
    Command::new(yosys_bin())
        .arg("-V")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// For tests that need yosys: whether it is usable, so the test can run.
/// When it is not, the test is skipped with a note naming `test` — unless
/// the environment demands the tools (`WEFT_REQUIRE_VERILATOR=1`, as CI
/// sets), where a missing yosys is a failure: this panics.
pub fn usable_or_skip(test: &str) -> bool {
    if available() {
        return true;
    }
    assert!(
        std::env::var("WEFT_REQUIRE_VERILATOR").as_deref() != Ok("1"),
        "WEFT_REQUIRE_VERILATOR=1 but yosys is not usable (not on PATH or WEFT_YOSYS)"
    );
    eprintln!("note: {test} skipped: yosys is not on PATH (set WEFT_YOSYS or install yosys)");
    false
}

/// Synthesize `verilog` for a Xilinx family with top module `top` and count
/// its resources.
///
/// Runs `read_verilog design.v; synth_xilinx -family F -top TOP [-flatten]
/// -noiopad; tee -q -o stat.txt stat -top TOP` in a temporary directory
/// (removed afterwards), killing yosys after `opts.timeout`.
pub fn synth_xilinx(
    verilog: &str,
    top: &str,
    opts: &SynthOptions,
) -> Result<Resources, YosysError> {
    check_name("top module", top)?;
    check_name("family", &opts.family)?;
    let script = format!(
        "read_verilog design.v\n\
         synth_xilinx -family {family} -top {top}{flatten} -noiopad\n\
         tee -q -o stat.txt stat -top {top}\n",
        family = opts.family,
        flatten = if opts.flatten { " -flatten" } else { "" },
    );
    let report = run_script(verilog, &script, "stat.txt", opts.timeout)?;
    parse_stat(&report, top)
}

/// Synthesize `verilog` as [`synth_xilinx`] does (always flattened) and
/// return its resources with the mapped netlist as yosys's JSON
/// (`write_json`), for [`crate::timing`] to walk.
///
/// `abc9` maps with `synth_xilinx -abc9` (yosys 0.23 has no UltraScale+
/// delays for it and uses 7-series ones); `params` override parameters of
/// the top module (`chparam`), for third-party modules.
pub fn synth_netlist(
    verilog: &str,
    top: &str,
    opts: &SynthOptions,
    abc9: bool,
    params: &[(String, String)],
) -> Result<(Resources, String), YosysError> {
    check_name("top module", top)?;
    check_name("family", &opts.family)?;
    for (k, v) in params {
        check_name("parameter name", k)?;
        check_name("parameter value", v)?;
    }
    let script = netlist_script(top, opts, abc9, params);
    // A mapped netlist is a pure function of the Verilog, the script and
    // yosys's version: reuse one (the top takes minutes) from the cache.
    let cache = netlist_cache_path(verilog, &script);
    if let Some(path) = &cache {
        let stat = std::fs::read_to_string(path.with_extension("stat"));
        let json = std::fs::read_to_string(path.with_extension("json"));
        if let (Ok(stat), Ok(json)) = (stat, json) {
            if let Ok(res) = parse_stat(&stat, top) {
                return Ok((res, json));
            }
        }
    }
    let mut texts = run_script_files(verilog, &script, &["stat.txt", "net.json"], opts.timeout)?;
    let json = texts.pop().unwrap_or_default();
    let report = texts.pop().unwrap_or_default();
    let res = parse_stat(&report, top)?;
    if let Some(path) = &cache {
        // Best effort: a cache that cannot be written only costs time.
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        if std::fs::write(tmp.with_extension("json.part"), &json).is_ok()
            && std::fs::write(tmp.with_extension("stat.part"), &report).is_ok()
        {
            let _ = std::fs::rename(tmp.with_extension("json.part"), path.with_extension("json"));
            let _ = std::fs::rename(tmp.with_extension("stat.part"), path.with_extension("stat"));
        }
    }
    Ok((res, json))
}

/// Where a mapped netlist of `verilog` under `script` is cached
/// (`<cache>/yosys/<sha256>.json` and `.stat`, the cache directory as the
/// Verilator models'), keyed by both and by yosys's version; `None` when
/// yosys's version cannot be read. `WEFT_YOSYS_CACHE=0` turns it off.
fn netlist_cache_path(verilog: &str, script: &str) -> Option<PathBuf> {
    use sha2::{Digest, Sha256};
    if std::env::var("WEFT_YOSYS_CACHE").as_deref() == Ok("0") {
        return None;
    }
    let version = Command::new(yosys_bin())
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())?
        .stdout;
    let mut h = Sha256::new();
    for field in [&version[..], script.as_bytes(), verilog.as_bytes()] {
        h.update((field.len() as u64).to_le_bytes());
        h.update(field);
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Some(
        crate::verilator::default_cache_dir()
            .join("yosys")
            .join(key)
            .with_extension("json"),
    )
}

/// The cache file of the netlist [`synth_netlist`] would map for these
/// arguments (`.json`; its resources beside it as `.stat`), for tools that
/// synthesise the same script themselves; `None` when there is no cache.
pub fn netlist_cache_file(
    verilog: &str,
    top: &str,
    opts: &SynthOptions,
    abc9: bool,
    params: &[(String, String)],
) -> Option<PathBuf> {
    netlist_cache_path(verilog, &netlist_script(top, opts, abc9, params))
}

/// The script of [`synth_netlist`].
fn netlist_script(
    top: &str,
    opts: &SynthOptions,
    abc9: bool,
    params: &[(String, String)],
) -> String {
    let mut chparam = String::new();
    for (k, v) in params {
        let _ = writeln!(chparam, "chparam -set {k} {v} {top}");
    }
    format!(
        "read_verilog design.v\n\
         {chparam}\
         synth_xilinx -family {family} -top {top} -flatten -noiopad{abc9}\n\
         tee -q -o stat.txt stat -top {top}\n\
         write_json net.json\n",
        family = opts.family,
        abc9 = if abc9 { " -abc9" } else { "" },
    )
}

/// Flip-flop cell types after `proc`: where a combinational path ends.
const FLOPS: &str =
    "$dff,$dffe,$adff,$adffe,$sdff,$sdffe,$sdffce,$aldff,$aldffe,$dffsr,$dffsre,$memwr,$memwr_v2";

/// The output ports of module `top` that a combinational path reaches from
/// any input port whose name starts with one of `from` (a path through
/// logic and memory reads, not through a flip-flop), sorted.
///
/// Runs `proc; flatten` and yosys's output-cone selection stopped at
/// flip-flops: a structural answer, for every state and input value.
pub fn comb_outputs(
    verilog: &str,
    top: &str,
    from: &[&str],
    timeout: Duration,
) -> Result<Vec<String>, YosysError> {
    check_name("top module", top)?;
    for f in from {
        check_name("input prefix", f)?;
    }
    let inputs: Vec<String> = from.iter().map(|f| format!("i:{f}*")).collect();
    let script = format!(
        "read_verilog design.v\n\
         hierarchy -top {top}\n\
         proc\n\
         flatten\n\
         opt_clean\n\
         select -set from {inputs}\n\
         select -set cone @from %coe*:-{FLOPS}\n\
         select -write reach.txt @cone o:* %i\n",
        inputs = inputs.join(" "),
    );
    let text = run_script(verilog, &script, "reach.txt", timeout)?;
    let mut ports: Vec<String> = text
        .lines()
        .filter_map(|l| {
            l.trim()
                .strip_prefix(&format!("{top}/"))
                .map(str::to_string)
        })
        .collect();
    ports.sort();
    Ok(ports)
}

/// Run the yosys `script` on `verilog` (read as `design.v`) in a fresh
/// temporary directory, killing it after `timeout`, and return the text of
/// the file `result` it writes.
fn run_script(
    verilog: &str,
    script: &str,
    result: &str,
    timeout: Duration,
) -> Result<String, YosysError> {
    let mut texts = run_script_files(verilog, script, &[result], timeout)?;
    Ok(texts.remove(0))
}

/// Run the yosys `script` on `verilog` (read as `design.v`) in a fresh
/// temporary directory, killing it after `timeout`, and return the texts of
/// the files `results` it writes, in order.
fn run_script_files(
    verilog: &str,
    script: &str,
    results: &[&str],
    timeout: Duration,
) -> Result<Vec<String>, YosysError> {
    let dir = TempDir::new()?;
    let design = dir.path().join("design.v");
    std::fs::write(&design, verilog)
        .map_err(|e| io_err(format!("writing {}", design.display()), e))?;
    let script_path = dir.path().join("script.ys");
    std::fs::write(&script_path, script)
        .map_err(|e| io_err(format!("writing {}", script_path.display()), e))?;

    let bin = yosys_bin();
    let out_path = dir.path().join("yosys.out");
    let err_path = dir.path().join("yosys.err");
    let out = File::create(&out_path).map_err(|e| io_err("creating yosys.out", e))?;
    let err = File::create(&err_path).map_err(|e| io_err("creating yosys.err", e))?;
    let mut cmd = Command::new(&bin);
    cmd.args(["-q", "-s", "script.ys"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    #[cfg(unix)]
    {
        // Its own process group, so that a timeout also ends the ABC
        // processes yosys starts.
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let child = cmd.spawn().map_err(|source| YosysError::NotFound {
        bin: bin.clone(),
        source,
    })?;
    let outcome = wait_with_timeout(child, timeout)?;
    let output = || read_output(&out_path, &err_path);
    match outcome {
        None => {
            return Err(YosysError::Timeout {
                timeout,
                output: output(),
            })
        }
        Some(status) if !status.success() => {
            return Err(YosysError::Failed {
                status: status.to_string(),
                output: output(),
            })
        }
        Some(_) => {}
    }
    results
        .iter()
        .map(|result| {
            let result_path = dir.path().join(result);
            std::fs::read_to_string(&result_path).map_err(|e| {
                let mut context = format!("reading {}", result_path.display());
                let _ = write!(context, " (yosys output:\n{})", output());
                io_err(context, e)
            })
        })
        .collect()
}

/// Reject names that would break the yosys script.
fn check_name(what: &'static str, value: &str) -> Result<(), YosysError> {
    let bad = value.is_empty()
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, ';' | '#' | '"' | '\''));
    if bad {
        Err(YosysError::InvalidName {
            what,
            value: value.to_string(),
        })
    } else {
        Ok(())
    }
}

fn io_err(context: impl Into<String>, source: std::io::Error) -> YosysError {
    YosysError::Io {
        context: context.into(),
        source,
    }
}

/// Wait for `child`; `None` when it ran past `timeout` (it is then killed).
fn wait_with_timeout(
    mut child: Child,
    timeout: Duration,
) -> Result<Option<ExitStatus>, YosysError> {
    let start = Instant::now();
    let mut poll = Duration::from_millis(10);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(Some(status)),
            Ok(None) => {}
            Err(e) => {
                kill(&mut child);
                return Err(io_err("waiting for yosys", e));
            }
        }
        let elapsed = start.elapsed();
        if elapsed >= timeout {
            kill(&mut child);
            return Ok(None);
        }
        std::thread::sleep(poll.min(timeout - elapsed));
        poll = (poll * 2).min(Duration::from_millis(200));
    }
}

/// Kill yosys and, on Unix, its whole process group; then reap it.
fn kill(child: &mut Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// yosys's stdout and stderr, for an error message.
fn read_output(out: &Path, err: &Path) -> String {
    let mut s = String::new();
    for p in [out, err] {
        if let Ok(bytes) = std::fs::read(p) {
            let text = String::from_utf8_lossy(&bytes);
            let text = text.trim_end();
            if !text.is_empty() {
                if !s.is_empty() {
                    s.push('\n');
                }
                s.push_str(text);
            }
        }
    }
    if s.is_empty() {
        s.push_str("(no output)");
    }
    s
}

/// Parse the text of yosys's `stat` command (the 0.2x/0.3x text format).
///
/// The counts are taken from the `=== design hierarchy ===` section when
/// there is one (a hierarchical design: totals over the whole hierarchy),
/// otherwise from the section of module `top`, otherwise from the only
/// module section.
pub fn parse_stat(report: &str, top: &str) -> Result<Resources, YosysError> {
    let parse_err = |reason: String| YosysError::Parse {
        reason,
        report: report.to_string(),
    };
    // Sections: (name, lines).
    let mut sections: Vec<(&str, Vec<&str>)> = Vec::new();
    for line in report.lines() {
        let t = line.trim();
        if let Some(name) = t
            .strip_prefix("=== ")
            .and_then(|rest| rest.strip_suffix(" ==="))
        {
            sections.push((name.trim(), Vec::new()));
        } else if let Some((_, lines)) = sections.last_mut() {
            lines.push(line);
        }
    }
    if sections.is_empty() {
        return Err(parse_err("no `=== module ===` section".to_string()));
    }
    let chosen = sections
        .iter()
        .find(|(n, _)| *n == "design hierarchy")
        .or_else(|| sections.iter().find(|(n, _)| *n == top))
        .or_else(|| (sections.len() == 1).then(|| &sections[0]))
        .ok_or_else(|| {
            parse_err(format!(
                "no section for module {top:?} nor a design hierarchy among {} sections",
                sections.len()
            ))
        })?;
    let (cells, by_type) =
        parse_section(&chosen.1).map_err(|r| parse_err(format!("section {:?}: {r}", chosen.0)))?;
    Ok(Resources::from_counts(by_type, cells))
}

/// The "Number of cells" total and the per-type list that follows it.
fn parse_section(lines: &[&str]) -> Result<(u64, BTreeMap<String, u64>), String> {
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with("Number of cells:"))
        .ok_or("no \"Number of cells:\" line")?;
    let header = lines[start];
    let total_text = header
        .trim_start()
        .trim_start_matches("Number of cells:")
        .trim();
    let total: u64 = total_text
        .parse()
        .map_err(|_| format!("bad cell count {total_text:?}"))?;
    let indent = |l: &str| l.len() - l.trim_start().len();
    let header_indent = indent(header);
    let mut by_type = BTreeMap::new();
    for line in &lines[start + 1..] {
        if line.trim().is_empty() || indent(line) <= header_indent {
            break;
        }
        let mut words = line.split_whitespace();
        let (Some(ty), Some(n), None) = (words.next(), words.next(), words.next()) else {
            // Not a "TYPE COUNT" line (e.g. an area estimate): the list ended.
            break;
        };
        let n: u64 = n
            .parse()
            .map_err(|_| format!("bad count in line {:?}", line.trim()))?;
        *by_type.entry(ty.to_string()).or_insert(0) += n;
    }
    Ok((total, by_type))
}

/// A temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<Self, YosysError> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for _ in 0..16 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!("weft-yosys-{}-{n}-{nanos:x}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(io_err(format!("creating {}", p.display()), e)),
            }
        }
        Err(io_err(
            format!("creating a directory under {}", base.display()),
            last.unwrap_or_else(|| std::io::Error::other("no free name")),
        ))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
