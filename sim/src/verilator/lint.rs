//! `verilator --lint-only -Wall`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use super::toolchain::cached_toolchain;
use super::VerilatorError;

/// The outcome of [`lint`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LintReport {
    /// No warning and no error: Verilator exited successfully and printed
    /// no `%Warning`/`%Error` line.
    pub clean: bool,
    /// Each `%Warning-…`/`%Error…` line with its message, e.g.
    /// `%Warning-WIDTH: top.v:3:12: Operator ASSIGNW expects 8 bits …`
    /// (the closing `%Error: Exiting due to …` summary excluded).
    pub warnings: Vec<String>,
    /// Verilator's whole output (stderr then stdout).
    pub output: String,
}

/// Lint Verilog text: runs `verilator --lint-only -Wall [waivers]
/// <top>.v --top-module <top>` in a temporary directory, so messages name
/// the file `<top>.v`. `waivers` is a Verilator configuration file (`.vlt`)
/// of `lint_off` rules.
///
/// Findings are not errors: they are in the report. Errors are for a
/// missing Verilator, an invalid top name, a missing waiver file or I/O.
pub fn lint(
    verilog: &str,
    top: &str,
    waivers: Option<&Path>,
) -> Result<LintReport, VerilatorError> {
    let valid_top = top.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && top
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !valid_top {
        return Err(VerilatorError::Ports(format!(
            "top module name {top:?} is not a plain Verilog identifier"
        )));
    }
    let waivers = match waivers {
        None => None,
        Some(w) => {
            let abs = std::path::absolute(w).map_err(VerilatorError::io(format!(
                "locating waiver file {}",
                w.display()
            )))?;
            if !abs.is_file() {
                return Err(VerilatorError::Io {
                    context: format!("waiver file {}", w.display()),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such file"),
                });
            }
            Some(abs)
        }
    };
    let tc = cached_toolchain(None)?;
    let dir = TempDir::new()?;
    let file = format!("{top}.v");
    std::fs::write(dir.0.join(&file), verilog).map_err(VerilatorError::io(format!(
        "writing {}",
        dir.0.join(&file).display()
    )))?;

    let mut cmd = Command::new(&tc.bin);
    cmd.args(["--lint-only", "-Wall"]);
    if let Some(w) = &waivers {
        cmd.arg(w);
    }
    cmd.arg(&file)
        .args(["--top-module", top])
        .current_dir(&dir.0)
        .stdin(Stdio::null());
    let out = cmd
        .output()
        .map_err(VerilatorError::io(format!("running {}", tc.bin.display())))?;
    let mut output = String::from_utf8_lossy(&out.stderr).into_owned();
    output.push_str(&String::from_utf8_lossy(&out.stdout));
    let warnings = findings(&output);
    Ok(LintReport {
        clean: out.status.success() && warnings.is_empty(),
        warnings,
        output,
    })
}

/// The `%Warning`/`%Error` lines of Verilator output, without the closing
/// summary.
fn findings(output: &str) -> Vec<String> {
    output
        .lines()
        .filter(|l| l.starts_with("%Warning") || l.starts_with("%Error"))
        .filter(|l| !l.starts_with("%Error: Exiting due to"))
        .map(|l| l.trim_end().to_string())
        .collect()
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Result<TempDir, VerilatorError> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let base = std::env::temp_dir();
        let mut last = None;
        for _ in 0..16 {
            let n = N.fetch_add(1, Ordering::Relaxed);
            let p = base.join(format!("weft-lint-{}-{n}-{nanos}", std::process::id()));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) => last = Some(e),
            }
        }
        Err(VerilatorError::Io {
            context: format!("creating a temporary directory in {}", base.display()),
            source: last.unwrap_or_else(|| std::io::Error::other("no attempt")),
        })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Lint Verilog text as [`lint`] does, with weft's own waivers
/// (`hdl/lint/waivers.vlt`, `weft_hdl::lint::WAIVERS`).
pub fn lint_with_waivers(verilog: &str, top: &str) -> Result<LintReport, VerilatorError> {
    let dir = TempDir::new()?;
    let w = dir.0.join("waivers.vlt");
    std::fs::write(&w, weft_hdl::lint::WAIVERS)
        .map_err(VerilatorError::io(format!("writing {}", w.display())))?;
    lint(verilog, top, Some(&w))
}

#[cfg(test)]
mod tests {
    use super::findings;

    #[test]
    fn keeps_finding_lines_only() {
        let out = "%Warning-WIDTH: top.v:3:12: Operator ASSIGNW expects 8 bits\n    3 | assign x = y;\n      |          ^\n                 ... For warning description, see https://verilator.org/warn/WIDTH?v=5.006\n%Error: Exiting due to 1 warning(s)\n";
        assert_eq!(
            findings(out),
            vec!["%Warning-WIDTH: top.v:3:12: Operator ASSIGNW expects 8 bits"]
        );
    }
}
