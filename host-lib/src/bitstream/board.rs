//! Board data: one TOML file per Alveo board under `bitstreams/boards/`.
//!
//! The schema is strict (unknown fields are errors) and every figure in the
//! files carries a comment naming its source; figures that could not be
//! confirmed are listed in the file's `unconfirmed`, and shown with a `?`.
//! [`Board::load`] parses a file and checks it is sane: the board id names
//! the board in weft-regs, the user-image offset lies inside the flash and
//! above the golden image, every capacity is positive.

use super::{read, BitstreamError, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The lowest user-image offset weft ever writes to: on these boards the
/// factory golden image sits below 0x0100_2000 (the OpenNIC shell's
/// `write_cfgmem ... -loadbit "up 0x01002000 ..."`), and is never written.
pub const MIN_USER_IMAGE_OFFSET: u64 = 0x0100_2000;

/// One board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Board {
    /// Short name, the file's stem (`u55c`).
    pub name: String,
    /// The ID block's `BOARD_ID` for this board (weft-regs' `board` ids).
    pub board_id: u32,
    /// One-line description.
    pub description: String,
    /// The board name the OpenNIC shell's `build.tcl` takes (`au55c`).
    pub opennic_board: String,
    /// The FPGA part (`xcu55c-fsvh2892-2L-e`).
    pub part: String,
    /// The Vivado board part (`xilinx.com:au55c:part0:1.0`).
    pub board_part: String,
    /// Dotted names of the fields whose figure could not be confirmed.
    #[serde(default)]
    pub unconfirmed: Vec<String>,
    /// JTAG identification.
    pub jtag: Jtag,
    /// PCI identification of the OpenNIC shell on this board.
    pub pci: Pci,
    /// Network ports.
    pub network: Network,
    /// On-card memory.
    pub memory: Memory,
    /// Configuration flash.
    pub flash: Flash,
    /// The part's capacity.
    pub resources: Capacity,
}

/// JTAG identification of the FPGA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Jtag {
    /// IDCODE (compared under `idcode_mask`).
    pub idcode: u32,
    /// Bits of the IDCODE that identify the part (the top 4 are the silicon
    /// revision).
    pub idcode_mask: u32,
    /// Names Vivado's hardware manager gives the device.
    #[serde(default)]
    pub hw_device_names: Vec<String>,
}

impl Jtag {
    /// Whether `idcode` read from a device is this board's part.
    pub fn matches(&self, idcode: u32) -> bool {
        idcode & self.idcode_mask == self.idcode & self.idcode_mask
    }
}

/// PCI identification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pci {
    /// Vendor id.
    pub vendor: u16,
    /// Device id of physical function 0.
    pub device: u16,
    /// Subsystem vendor id.
    pub subsystem_vendor: u16,
    /// Subsystem id.
    pub subsystem: u16,
}

/// Network ports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Network {
    /// QSFP28 cages.
    pub qsfp_ports: u32,
}

/// On-card memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    /// HBM2 in GiB (0 when none).
    pub hbm_gib: u32,
    /// DDR4 in GiB (0 when none).
    pub ddr4_gib: u32,
}

/// Configuration flash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flash {
    /// The part as Vivado's `get_cfgmem_parts` names it.
    pub part: String,
    /// The `write_cfgmem -interface` value (`SPIx4`).
    pub interface: String,
    /// Size in MiB (`write_cfgmem -size`).
    pub size_mib: u64,
    /// Where the user image starts; everything below is the golden image.
    pub user_image_offset: u64,
}

impl Flash {
    /// Flash size in bytes.
    pub fn size_bytes(&self) -> u64 {
        self.size_mib << 20
    }
}

/// The part's capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capacity {
    /// CLB LUTs.
    pub luts: u64,
    /// CLB flip-flops.
    pub ffs: u64,
    /// 36 Kb block RAMs.
    pub bram36: u64,
    /// UltraRAM blocks.
    pub uram: u64,
    /// DSP slices.
    pub dsp: u64,
}

/// Every dotted field name a board file has (for `unconfirmed`).
pub const FIELDS: &[&str] = &[
    "name",
    "board_id",
    "description",
    "opennic_board",
    "part",
    "board_part",
    "jtag.idcode",
    "jtag.idcode_mask",
    "jtag.hw_device_names",
    "pci.vendor",
    "pci.device",
    "pci.subsystem_vendor",
    "pci.subsystem",
    "network.qsfp_ports",
    "memory.hbm_gib",
    "memory.ddr4_gib",
    "flash.part",
    "flash.interface",
    "flash.size_mib",
    "flash.user_image_offset",
    "resources.luts",
    "resources.ffs",
    "resources.bram36",
    "resources.uram",
    "resources.dsp",
];

impl Board {
    /// Parse and check a board file.
    pub fn load(path: &Path) -> Result<Board> {
        let text = read(path)?;
        Board::parse(&text, path)
    }

    /// Parse and check board TOML; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Board> {
        let board: Board = toml::from_str(text).map_err(|e| {
            let location = e.span().map(|s| {
                let (line, col) = line_col(text, s.start);
                format!("{line}:{col}")
            });
            BitstreamError::Schema {
                path: path.to_path_buf(),
                location,
                message: one_line(e.message()),
            }
        })?;
        board.check(path)?;
        Ok(board)
    }

    /// Sanity checks beyond the schema.
    fn check(&self, path: &Path) -> Result<()> {
        let bad = |field: &str, why: String| BitstreamError::Invalid {
            path: path.to_path_buf(),
            field: field.to_string(),
            why,
        };
        if let Some(stem) = path.file_stem().and_then(|s| s.to_str()) {
            if stem != self.name {
                return Err(bad(
                    "name",
                    format!("{:?} differs from the file name {stem:?}", self.name),
                ));
            }
        }
        match weft_regs::board::name(self.board_id) {
            Some(n) if n == self.name => {}
            Some(n) => {
                return Err(bad(
                    "board_id",
                    format!(
                        "{} is board {n:?} in weft-regs, not {:?}",
                        self.board_id, self.name
                    ),
                ))
            }
            None => {
                return Err(bad(
                    "board_id",
                    format!("{} is not a board id of weft-regs", self.board_id),
                ))
            }
        }
        for (field, v) in [
            ("part", &self.part),
            ("board_part", &self.board_part),
            ("opennic_board", &self.opennic_board),
            ("flash.part", &self.flash.part),
            ("flash.interface", &self.flash.interface),
        ] {
            if v.is_empty()
                || v.chars()
                    .any(|c| c.is_whitespace() || "{}[]$\"\\;".contains(c))
            {
                return Err(bad(
                    field,
                    format!("{v:?} is empty or has characters Tcl would interpret"),
                ));
            }
        }
        if !self.part.to_ascii_lowercase().starts_with("xc") {
            return Err(bad(
                "part",
                format!("{:?} is not a Xilinx part (xc...)", self.part),
            ));
        }
        if self.jtag.idcode & 0xfff != 0x093 {
            return Err(bad(
                "jtag.idcode",
                format!(
                    "{:#010x} lacks Xilinx's manufacturer code (low 12 bits 0x093)",
                    self.jtag.idcode
                ),
            ));
        }
        if self.jtag.idcode_mask & 0x0fff_ffff != 0x0fff_ffff {
            return Err(bad(
                "jtag.idcode_mask",
                format!(
                    "{:#010x} must keep the low 28 bits (part and manufacturer)",
                    self.jtag.idcode_mask
                ),
            ));
        }
        if self.pci.vendor == 0 || self.pci.vendor == 0xffff {
            return Err(bad(
                "pci.vendor",
                format!("{:#06x} is not a vendor id", self.pci.vendor),
            ));
        }
        if self.network.qsfp_ports == 0 {
            return Err(bad("network.qsfp_ports", "must be at least 1".into()));
        }
        if self.memory.hbm_gib == 0 && self.memory.ddr4_gib == 0 {
            return Err(bad("memory", "a board with neither HBM nor DDR4".into()));
        }
        let f = &self.flash;
        if f.size_mib == 0 || f.size_mib > 4096 {
            return Err(bad(
                "flash.size_mib",
                format!("{} MiB is not a configuration flash size", f.size_mib),
            ));
        }
        if f.user_image_offset < MIN_USER_IMAGE_OFFSET {
            return Err(bad(
                "flash.user_image_offset",
                format!(
                    "{:#x} is inside the golden image (below {MIN_USER_IMAGE_OFFSET:#x}), which is never written",
                    f.user_image_offset
                ),
            ));
        }
        if f.user_image_offset >= f.size_bytes() {
            return Err(bad(
                "flash.user_image_offset",
                format!(
                    "{:#x} is past the end of a {} MiB flash",
                    f.user_image_offset, f.size_mib
                ),
            ));
        }
        let r = &self.resources;
        for (field, v) in [
            ("resources.luts", r.luts),
            ("resources.ffs", r.ffs),
            ("resources.bram36", r.bram36),
            ("resources.uram", r.uram),
            ("resources.dsp", r.dsp),
        ] {
            if v == 0 {
                return Err(bad(field, "a capacity must be positive".into()));
            }
        }
        if r.ffs < r.luts {
            return Err(bad(
                "resources.ffs",
                format!("{} flip-flops is fewer than {} LUTs", r.ffs, r.luts),
            ));
        }
        for u in &self.unconfirmed {
            if !FIELDS.contains(&u.as_str()) {
                return Err(bad(
                    "unconfirmed",
                    format!("{u:?} is not a field of a board file"),
                ));
            }
        }
        Ok(())
    }

    /// Whether the figure of dotted field `field` is marked unconfirmed.
    pub fn is_unconfirmed(&self, field: &str) -> bool {
        self.unconfirmed.iter().any(|u| u == field)
    }

    /// The user-image offset as the Tcl and the manifest write it.
    pub fn user_image_offset_hex(&self) -> String {
        format!("0x{:08X}", self.flash.user_image_offset)
    }
}

/// The boards directory: `bitstreams/boards`.
pub fn boards_dir() -> PathBuf {
    super::bitstreams_dir().join("boards")
}

/// Names of the boards in `dir` (file stems of `*.toml`), sorted.
pub fn names_in(dir: &Path) -> Result<Vec<String>> {
    let rd = std::fs::read_dir(dir).map_err(|e| super::io_err("listing", dir, e))?;
    let mut names = vec![];
    for entry in rd {
        let entry = entry.map_err(|e| super::io_err("listing", dir, e))?;
        let p = entry.path();
        if p.extension().and_then(|e| e.to_str()) == Some("toml") {
            if let Some(stem) = p.file_stem().and_then(|s| s.to_str()) {
                names.push(stem.to_string());
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Load board `name` from `dir`.
pub fn load_in(dir: &Path, name: &str) -> Result<Board> {
    let valid = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let path = dir.join(format!("{name}.toml"));
    if !valid || !path.is_file() {
        return Err(BitstreamError::UnknownBoard {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            known: names_in(dir)
                .map(|n| n.join(", "))
                .unwrap_or_else(|_| "none".into()),
        });
    }
    Board::load(&path)
}

/// Load board `name` from [`boards_dir`].
pub fn load(name: &str) -> Result<Board> {
    load_in(&boards_dir(), name)
}

/// Load every board in `dir`.
pub fn load_all_in(dir: &Path) -> Result<Vec<Board>> {
    names_in(dir)?
        .iter()
        .map(|n| Board::load(&dir.join(format!("{n}.toml"))))
        .collect()
}

/// 1-based line and column of byte `offset` in `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Collapse a multi-line message to one line.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "u55c"
board_id = 1
description = "x"
opennic_board = "au55c"
part = "xcu55c-fsvh2892-2L-e"
board_part = "xilinx.com:au55c:part0:1.0"
[jtag]
idcode = 0x04B7D093
idcode_mask = 0x0FFFFFFF
[pci]
vendor = 0x10ee
device = 0x903f
subsystem_vendor = 0x10ee
subsystem = 7
[network]
qsfp_ports = 2
[memory]
hbm_gib = 16
ddr4_gib = 0
[flash]
part = "mt25qu01g-spi-x1_x2_x4"
interface = "SPIx4"
size_mib = 128
user_image_offset = 0x01002000
[resources]
luts = 10
ffs = 20
bram36 = 1
uram = 1
dsp = 1
"#;

    fn parse(text: &str) -> Result<Board> {
        Board::parse(text, Path::new("boards/u55c.toml"))
    }

    #[test]
    fn good_file_loads() {
        let b = parse(GOOD).unwrap();
        assert!(b.jtag.matches(0x14B7_D093), "revision bits ignored");
        assert!(!b.jtag.matches(0x04B5_7093));
        assert_eq!(b.user_image_offset_hex(), "0x01002000");
    }

    #[test]
    fn unknown_field_is_named_with_its_line() {
        let text = GOOD.replace("qsfp_ports = 2", "qsfp_ports = 2\nqsfp_speed = 100");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("boards/u55c.toml:"), "{e}");
        assert!(e.contains("qsfp_speed"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn missing_field_is_named() {
        let text = GOOD.replace("dsp = 1\n", "");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("dsp"), "{e}");
    }

    #[test]
    fn golden_image_offset_refused() {
        let text = GOOD.replace("user_image_offset = 0x01002000", "user_image_offset = 0x0");
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("flash.user_image_offset") && e.contains("golden"),
            "{e}"
        );
    }

    #[test]
    fn zero_capacity_refused() {
        let text = GOOD.replace("uram = 1", "uram = 0");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("resources.uram"), "{e}");
    }

    #[test]
    fn board_id_must_match_name() {
        let text = GOOD.replace("board_id = 1", "board_id = 3");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("board_id") && e.contains("u250"), "{e}");
    }

    #[test]
    fn unconfirmed_names_real_fields() {
        let text = GOOD.replace("[jtag]", "unconfirmed = [\"jtag.idcod\"]\n[jtag]");
        let e = parse(&text).unwrap_err().to_string();
        assert!(e.contains("unconfirmed") && e.contains("jtag.idcod"), "{e}");
    }
}
