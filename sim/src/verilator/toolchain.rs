//! Finding Verilator and the C++ compiler.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::VerilatorError;

/// A Verilator installation (and the C++ compiler that builds its models).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// The `verilator` executable.
    pub bin: PathBuf,
    /// Verilator's version number, e.g. `"5.006"`.
    pub version: String,
    /// `VERILATOR_ROOT`: the directory holding `include/verilated.h`.
    pub root: PathBuf,
    /// The C++ compiler (`$CXX`, else `g++` on `PATH`), if one was found.
    /// [`build`](super::build) needs it; [`lint`](super::lint) does not.
    pub cxx: Option<PathBuf>,
    /// The C++ compiler's `--version` first line (empty without a compiler).
    pub cxx_version: String,
}

const HINT: &str = "`verilator` (5.x) was not found on PATH; install it \
     (Debian: `apt-get install verilator`) or point WEFT_VERILATOR at the executable";

/// Find Verilator (`$WEFT_VERILATOR`, else `verilator` on `PATH`), and ask it
/// for its version (`verilator --version`) and root
/// (`verilator --getenv VERILATOR_ROOT`). Also looks for the C++ compiler.
///
/// Errors: [`VerilatorError::NotFound`] when there is no Verilator,
/// [`VerilatorError::Version`] when it is not a usable Verilator 5.
pub fn toolchain() -> Result<Toolchain, VerilatorError> {
    let bin = match std::env::var_os("WEFT_VERILATOR").filter(|v| !v.is_empty()) {
        Some(v) => {
            let p = PathBuf::from(&v);
            if p.components().count() > 1 {
                if !p.is_file() {
                    return Err(VerilatorError::NotFound {
                        hint: format!("WEFT_VERILATOR={} does not exist", p.display()),
                    });
                }
                p
            } else {
                find_on_path(&v).ok_or_else(|| VerilatorError::NotFound {
                    hint: format!("WEFT_VERILATOR={} is not on PATH", p.display()),
                })?
            }
        }
        None => {
            find_on_path(&OsString::from("verilator")).ok_or_else(|| VerilatorError::NotFound {
                hint: HINT.to_string(),
            })?
        }
    };

    // The two queries each start Perl; run them side by side.
    let spawn = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| VerilatorError::NotFound {
                hint: format!("cannot run {}: {e}; {HINT}", bin.display()),
            })
    };
    let version_child = spawn(&["--version"])?;
    let root_child = spawn(&["--getenv", "VERILATOR_ROOT"])?;
    let version_out = version_child
        .wait_with_output()
        .map_err(VerilatorError::io(format!(
            "running {} --version",
            bin.display()
        )))?;
    let root_out = root_child
        .wait_with_output()
        .map_err(VerilatorError::io(format!(
            "running {} --getenv VERILATOR_ROOT",
            bin.display()
        )))?;

    let version_text = String::from_utf8_lossy(&version_out.stdout);
    if !version_out.status.success() {
        return Err(VerilatorError::Version(format!(
            "`{} --version` failed: {}",
            bin.display(),
            String::from_utf8_lossy(&version_out.stderr).trim()
        )));
    }
    let version = parse_version(&version_text).ok_or_else(|| {
        VerilatorError::Version(format!(
            "cannot parse `verilator --version` output {:?}",
            version_text.trim()
        ))
    })?;
    let major: u32 = version
        .split('.')
        .next()
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if major < 5 {
        return Err(VerilatorError::Version(format!(
            "Verilator {version} is too old: 5.x is needed"
        )));
    }

    let root_text = String::from_utf8_lossy(&root_out.stdout);
    let root = PathBuf::from(root_text.trim());
    if !root_out.status.success() || root_text.trim().is_empty() {
        return Err(VerilatorError::Version(format!(
            "`{} --getenv VERILATOR_ROOT` gave no root",
            bin.display()
        )));
    }
    if !root.join("include").join("verilated.h").is_file() {
        return Err(VerilatorError::Version(format!(
            "VERILATOR_ROOT {} has no include/verilated.h",
            root.display()
        )));
    }

    let cxx = match std::env::var_os("CXX").filter(|v| !v.is_empty()) {
        Some(v) if Path::new(&v).components().count() > 1 => Some(PathBuf::from(v)),
        Some(v) => find_on_path(&v),
        None => find_on_path(&OsString::from("g++")),
    };
    let cxx_version = match &cxx {
        Some(c) => Command::new(c)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .unwrap_or_default(),
        None => String::new(),
    };

    Ok(Toolchain {
        bin,
        version,
        root,
        cxx,
        cxx_version,
    })
}

/// The toolchain, probed once per process (probing starts Perl twice,
/// ~100 ms, which would dominate a cache hit).
pub(crate) fn cached_toolchain() -> Result<&'static Toolchain, VerilatorError> {
    static TC: OnceLock<Toolchain> = OnceLock::new();
    if let Some(tc) = TC.get() {
        return Ok(tc);
    }
    let tc = toolchain()?;
    Ok(TC.get_or_init(|| tc))
}

/// `"Verilator 5.006 2023-01-22 rev (Debian 5.006-3)"` -> `"5.006"`.
fn parse_version(text: &str) -> Option<String> {
    let mut words = text.split_whitespace();
    while let Some(w) = words.next() {
        if w == "Verilator" {
            let v = words.next()?;
            let ok = !v.is_empty()
                && v.chars().all(|c| c.is_ascii_digit() || c == '.')
                && v.starts_with(|c: char| c.is_ascii_digit());
            return ok.then(|| v.to_string());
        }
    }
    None
}

fn find_on_path(name: &std::ffi::OsStr) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::parse_version;

    #[test]
    fn parses_versions() {
        assert_eq!(
            parse_version("Verilator 5.006 2023-01-22 rev (Debian 5.006-3)\n").as_deref(),
            Some("5.006")
        );
        assert_eq!(
            parse_version("Verilator 5.048 2025-01-01 rev v5.048").as_deref(),
            Some("5.048")
        );
        assert_eq!(parse_version("something else"), None);
        assert_eq!(parse_version("Verilator"), None);
        assert_eq!(parse_version("Verilator x.y"), None);
    }
}
