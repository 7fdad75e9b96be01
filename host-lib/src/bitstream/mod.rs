//! Bitstreams for AMD Alveo boards: board data, the Vivado flow into the
//! OpenNIC shell's 250 MHz box, resource estimates, the manifest of built
//! images, flashing, and a FuseSoC core for the emitted Verilog.
//!
//! * [`board`]: one TOML file per board under `bitstreams/boards/` (part,
//!   board part, JTAG IDCODE, PCI ids, QSFP ports, memory, configuration flash
//!   and the user-image offset, the part's capacity), loaded against a strict
//!   schema.
//! * [`opennic`]: the 250 MHz box's port contract (from the shell's
//!   `plugin/p2p/p2p_250mhz.sv`), a parser that checks a shell checkout
//!   against it, and the user-plugin files (`-user_plugin`).
//! * [`box_map`]: the box's register address map in the plugin, with
//!   windows sized for weft's register map (the shell's crossbar gives each
//!   slave 128 bytes), and the check that the map fits the box.
//! * [`top`]: the one function that says what the OpenNIC top is:
//!   weft-hdl's `weft_top`. A build given no top gets a stub wrapper that
//!   cannot be synthesised, and refuses without `--dry-run`.
//! * [`vivado`]: the batch Tcl of the build, the runner that follows
//!   Vivado's log by stage, and the timing check.
//! * [`build`]: `weft bitstream build`, tying the above together.
//! * [`estimate`]: yosys `synth_xilinx -family xcup` figures as counts and
//!   as a share of a board's part.
//! * [`manifest`]: `bitstreams/manifest.json`, the images built.
//! * [`flash`]: JTAG and configuration-flash programming through Vivado's
//!   hardware manager, with IDCODE and part checks and golden-image safety.
//! * [`fusesoc`]: a CAPI2 `.core` file for the emitted Verilog.
//!
//! No machine here has Vivado, a cable or an Alveo card: nothing here has
//! built or flashed a real image. See `docs/bitstreams.md`.

use std::path::{Path, PathBuf};

pub mod board;
pub mod box_map;
pub mod build;
pub mod estimate;
pub mod flash;
pub mod fusesoc;
pub mod manifest;
pub mod opennic;
pub mod top;
pub mod vivado;

pub use board::Board;
pub use manifest::Manifest;

/// Result alias of the bitstream module.
pub type Result<T, E = BitstreamError> = std::result::Result<T, E>;

/// What can go wrong in the bitstream flow. Every message is one line and
/// names the file, field, tool or board concerned.
#[derive(Debug, thiserror::Error)]
pub enum BitstreamError {
    /// A file or directory could not be read or written.
    #[error("{action} {}: {source}", path.display())]
    Io {
        /// What was being done ("reading", "writing", ...).
        action: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A data file (board TOML, manifest JSON) that does not parse or does
    /// not follow its schema.
    #[error("{}{}: {message}", path.display(), location.as_deref().map(|l| format!(":{l}")).unwrap_or_default())]
    Schema {
        /// The file.
        path: PathBuf,
        /// `line:column` when known.
        location: Option<String>,
        /// What is wrong, naming the field.
        message: String,
    },
    /// A value that parses but is not sane.
    #[error("{}: {field}: {why}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The field, dotted (`flash.user_image_offset`).
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// A board name with no board file.
    #[error("no board {name:?} in {} (boards: {known})", dir.display())]
    UnknownBoard {
        /// The name asked for.
        name: String,
        /// The boards directory.
        dir: PathBuf,
        /// The boards there, comma separated.
        known: String,
    },
    /// The `--shell-dir` is not an OpenNIC shell checkout.
    #[error("{}: not an OpenNIC shell checkout: {why} (clone https://github.com/Xilinx/open-nic-shell and pass its directory)", path.display())]
    ShellDir {
        /// The directory given.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// The shell's 250 MHz box does not have the port list weft's wrapper is
    /// built for.
    #[error("{}: the 250 MHz box's ports differ from weft's contract: {diffs}", file.display())]
    PortContract {
        /// The shell file read.
        file: PathBuf,
        /// The differences, `; ` separated.
        diffs: String,
    },
    /// A file of the shell that weft adapts lacks the text weft edits or
    /// relies on: a different shell version.
    #[error("{}: expected {expected:?} exactly once, found it {found} time(s): this is not the OpenNIC shell version whose 250 MHz box glue weft adapts", file.display())]
    ShellText {
        /// The shell's file.
        file: PathBuf,
        /// The text looked for.
        expected: String,
        /// How often it occurs.
        found: usize,
    },
    /// weft's register map does not fit the 250 MHz box's 1 MiB.
    #[error("weft's register map does not fit the OpenNIC 250 MHz box with {}: {slaves} windows of 2^{bits} bytes (weft_regs::ADDR_BITS) and the 4 KiB dummy slave end at box offset {end:#x}, past the box's {limit:#x} bytes", pfs(*.num_intf))]
    BoxMapTooLarge {
        /// PFs (`NUM_INTF`) of the layout.
        num_intf: u32,
        /// Address bits of each plugin slave's window.
        bits: u32,
        /// Plugin slaves (`2 * NUM_INTF`).
        slaves: u64,
        /// One past the last byte the layout needs.
        end: u128,
        /// Bytes of the box.
        limit: u64,
    },
    /// A Verilog file that could not be understood.
    #[error("{}: {why}", file.display())]
    Verilog {
        /// The file.
        file: PathBuf,
        /// What could not be read or found.
        why: opennic::VerilogError,
    },
    /// A build without a top that is not a dry run.
    #[error("no OpenNIC top was given to the build; only --dry-run writes the flow files (with a stub wrapper) for inspection")]
    TopMissing,
    /// A tool that is not installed.
    #[error("{tool} is not on PATH (set {env} to its path): {why}")]
    ToolMissing {
        /// The tool (`vivado`).
        tool: String,
        /// The environment variable that overrides it.
        env: &'static str,
        /// What could therefore not be done, and what was done instead.
        why: String,
    },
    /// Vivado failed.
    #[error("vivado failed in stage {stage}: {message} (log: {})", log.display())]
    Vivado {
        /// The last stage reached.
        stage: String,
        /// The first error Vivado or weft's Tcl reported, or the exit status.
        message: String,
        /// Vivado's log file.
        log: PathBuf,
    },
    /// Timing was not met.
    #[error("timing not met: worst setup slack {wns} ns, worst hold slack {whs} ns (report: {})", report.display())]
    Timing {
        /// Worst negative setup slack.
        wns: f64,
        /// Worst hold slack.
        whs: f64,
        /// The timing summary report.
        report: PathBuf,
    },
    /// A `.bit` image whose header cannot be read; nothing was written.
    #[error("{}: {why}", path.display())]
    BitHeader {
        /// The image.
        path: PathBuf,
        /// What is wrong with its header.
        why: flash::BitHeaderError,
    },
    /// A `.mcs` image that is not Intel HEX weft can read; nothing was
    /// written.
    #[error("{}: {why}", path.display())]
    Mcs {
        /// The image.
        path: PathBuf,
        /// What is wrong with it.
        why: flash::McsError,
    },
    /// An action refused for safety (part or IDCODE mismatch, golden-image
    /// region, no confirmation, ...). Nothing was written.
    #[error("{0}")]
    Refused(String),
    /// yosys failed.
    #[cfg(feature = "sim")]
    #[error("yosys on {module}: {source}")]
    Yosys {
        /// The module synthesised.
        module: String,
        /// What went wrong.
        #[source]
        source: weft_sim::yosys::YosysError,
    },
}

/// `1 PF`, `2 PFs`.
fn pfs(n: u32) -> String {
    format!("{n} PF{}", if n == 1 { "" } else { "s" })
}

/// Build an [`BitstreamError::Io`].
pub(crate) fn io_err(action: &'static str, path: &Path, source: std::io::Error) -> BitstreamError {
    BitstreamError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Read a file to a string, with the path in the error.
pub(crate) fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| io_err("reading", path, e))
}

/// Write a file, creating its parent directories, with the path in the
/// error.
pub(crate) fn write(path: &Path, contents: impl AsRef<[u8]>) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err("creating", dir, e))?;
    }
    std::fs::write(path, contents).map_err(|e| io_err("writing", path, e))
}

/// The `bitstreams/` directory: `$WEFT_BITSTREAMS_DIR`, or the one in this
/// source tree (board files and the manifest live there).
pub fn bitstreams_dir() -> PathBuf {
    match std::env::var_os("WEFT_BITSTREAMS_DIR") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../bitstreams"),
    }
}

/// Where `weft bitstream build` writes a board's build when `--out` does
/// not say: `$WEFT_BUILD_DIR`, else `$XDG_DATA_HOME/weft/build`, else
/// `~/.local/share/weft/build` — outside the source tree, so a build never
/// dirties a checkout.
pub fn build_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var("WEFT_BUILD_DIR") {
        return d;
    }
    let data = var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local/share")))
        .unwrap_or_else(std::env::temp_dir);
    data.join("weft/build")
}

/// SHA-256 of a file, lower-case hex.
pub fn sha256_file(path: &Path) -> Result<String> {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| io_err("opening", path, e))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).map_err(|e| io_err("reading", path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Lower-case hex of bytes.
pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A Tcl string literal (braces, so nothing inside is substituted). Paths
/// with unbalanced braces or backslashes are quoted instead.
pub(crate) fn tcl_quote(s: &str) -> String {
    let balanced = {
        let mut depth = 0i32;
        let mut ok = true;
        for c in s.chars() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth < 0 {
                        ok = false;
                    }
                }
                _ => {}
            }
        }
        ok && depth == 0
    };
    if balanced && !s.contains('\\') && !s.ends_with('\\') {
        format!("{{{s}}}")
    } else {
        let mut out = String::from("\"");
        for c in s.chars() {
            if matches!(c, '"' | '\\' | '$' | '[' | ']' | '{' | '}') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        out
    }
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc_of(secs)
}

/// Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub fn utc_of(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if m <= 2 { y + 1 } else { y };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_of(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_of(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_of(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn tcl_quoting() {
        assert_eq!(tcl_quote("/a b/c"), "{/a b/c}");
        assert_eq!(tcl_quote("a}b"), "\"a\\}b\"");
        assert_eq!(tcl_quote("x$y"), "{x$y}");
    }
}
