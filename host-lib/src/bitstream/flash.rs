//! `weft bitstream flash`: load an image over JTAG, or write it to the
//! configuration flash at the user-image offset, through Vivado's hardware
//! manager.
//!
//! Safety, in order:
//! 1. the image: a `.bit`'s header names its part, which must be the board's;
//!    a `.mcs` must write nothing below the user-image offset (never
//!    overridable) nor past the flash; an image in the manifest must have
//!    been built for this board;
//! 2. the device: a first Vivado run lists the JTAG chain
//!    ([`probe_tcl`]), and the FPGA's IDCODE must be the board's
//!    ([`choose_device`]); the programming script checks it again;
//! 3. the golden image: the programming script refuses a user-image offset
//!    below [`super::board::MIN_USER_IMAGE_OFFSET`] and an `.mcs` whose
//!    lowest address is below the user-image offset, before writing.
//!
//! A part, board or IDCODE mismatch is refused unless `force`; the
//! golden-image checks are never skipped. The CLI asks before writing.

use super::board::{Board, MIN_USER_IMAGE_OFFSET};
use super::manifest::Image;
use super::vivado::{self, Event, HwDevice};
use super::{read, tcl_quote, write, BitstreamError, Result};
use std::path::{Path, PathBuf};

/// Where the image goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// Into the FPGA over JTAG (lost at power-off).
    Jtag,
    /// Into the configuration flash at the user-image offset.
    Flash,
}

/// The kind of image file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImageKind {
    /// A bitstream.
    Bit,
    /// A configuration-memory file (Intel HEX).
    Mcs,
}

/// The header fields of a `.bit` file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitHeader {
    /// Design name (field `a`).
    pub design: String,
    /// Part (field `b`).
    pub part: String,
    /// Date (field `c`).
    pub date: String,
    /// Time (field `d`).
    pub time: String,
}

/// Why a `.bit` file's header cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BitHeaderError {
    /// The file ends inside the header.
    #[error("truncated header")]
    Truncated,
    /// The length word before field `a` is not 1.
    #[error("not a Xilinx .bit file (bad header)")]
    BadHeader,
    /// A header field is missing or out of order.
    #[error("not a Xilinx .bit file (no field {0})")]
    NoField(char),
}

/// Read a `.bit` file's header: a 2-byte length and that many bytes, a
/// 2-byte length (1) and `a`, then fields `a`..`d` as key byte, 2-byte
/// big-endian length, NUL-terminated text, then `e` and the bitstream.
pub fn read_bit_header(bytes: &[u8]) -> std::result::Result<BitHeader, BitHeaderError> {
    let mut i = 0usize;
    let u16_at = |i: &mut usize| -> std::result::Result<usize, BitHeaderError> {
        let b = bytes.get(*i..*i + 2).ok_or(BitHeaderError::Truncated)?;
        *i += 2;
        Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
    };
    let n = u16_at(&mut i)?;
    i += n;
    let n = u16_at(&mut i)?;
    if n != 1 {
        return Err(BitHeaderError::BadHeader);
    }
    let mut fields = [String::new(), String::new(), String::new(), String::new()];
    for (k, key) in [b'a', b'b', b'c', b'd'].into_iter().enumerate() {
        if bytes.get(i) != Some(&key) {
            return Err(BitHeaderError::NoField(key as char));
        }
        i += 1;
        let n = u16_at(&mut i)?;
        let raw = bytes.get(i..i + n).ok_or(BitHeaderError::Truncated)?;
        i += n;
        let text = raw.split(|&b| b == 0).next().unwrap_or(&[]);
        fields[k] = String::from_utf8_lossy(text).into_owned();
    }
    let [design, part, date, time] = fields;
    Ok(BitHeader {
        design,
        part,
        date,
        time,
    })
}

/// Whether a `.bit` header's part is the board's part: the device and
/// package must agree (`xcu55c-fsvh2892-2L-e` and `xcu55c-fsvh2892-2L-e`, or
/// the header's shorter `u55cfsvh2892`); the speed grade is not compared.
pub fn bit_part_matches(bit_part: &str, board_part: &str) -> bool {
    let norm = |s: &str| -> String {
        let l = s.to_ascii_lowercase();
        let l = l.strip_prefix("xc").unwrap_or(&l).to_string();
        l.chars().filter(|c| *c != '-' && *c != '_').collect()
    };
    let mut it = board_part.split('-');
    let device_pkg = match (it.next(), it.next()) {
        (Some(d), Some(p)) => format!("{d}{p}"),
        _ => board_part.to_string(),
    };
    let want = norm(&device_pkg);
    !want.is_empty() && norm(bit_part).starts_with(&want)
}

/// The byte range an Intel HEX (`.mcs`) file writes, inclusive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct McsRange {
    /// Lowest address written.
    pub low: u64,
    /// Highest address written.
    pub high: u64,
}

/// Why an Intel HEX (`.mcs`) file's range cannot be read; `line` is 1-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum McsError {
    /// A line that does not start with `:`.
    #[error("line {line}: not an Intel HEX record")]
    NotARecord {
        /// The line.
        line: usize,
    },
    /// Too short, odd length or not ASCII.
    #[error("line {line}: malformed record")]
    Malformed {
        /// The line.
        line: usize,
    },
    /// A character that is not a hex digit.
    #[error("line {line}: not hex")]
    NotHex {
        /// The line.
        line: usize,
    },
    /// The record's byte count disagrees with its length.
    #[error("line {line}: length does not match its byte count")]
    Length {
        /// The line.
        line: usize,
    },
    /// The record's checksum is wrong.
    #[error("line {line}: bad checksum")]
    Checksum {
        /// The line.
        line: usize,
    },
    /// A record type other than 00 to 05, or an address record (02, 04)
    /// whose length is not 2.
    #[error("line {line}: unsupported record type {kind:02x}")]
    RecordType {
        /// The line.
        line: usize,
        /// The record type.
        kind: u8,
    },
    /// No data record before the end.
    #[error("writes no data")]
    NoData,
}

/// Parse an Intel HEX file's address range (record types 00 data, 01 end,
/// 02 extended segment, 04 extended linear address); checksums are checked.
pub fn mcs_range(text: &str) -> std::result::Result<McsRange, McsError> {
    let mut upper: u64 = 0;
    let mut range: Option<McsRange> = None;
    for (n, line) in text.lines().enumerate() {
        let (l, line) = (line.trim(), n + 1);
        if l.is_empty() {
            continue;
        }
        let hex = l.strip_prefix(':').ok_or(McsError::NotARecord { line })?;
        if !hex.is_ascii() || hex.len() < 10 || hex.len() % 2 != 0 {
            return Err(McsError::Malformed { line });
        }
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|k| u8::from_str_radix(&hex[k..k + 2], 16))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| McsError::NotHex { line })?;
        let count = bytes[0] as usize;
        if bytes.len() != count + 5 {
            return Err(McsError::Length { line });
        }
        if bytes.iter().fold(0u8, |a, b| a.wrapping_add(*b)) != 0 {
            return Err(McsError::Checksum { line });
        }
        let addr = u64::from(u16::from_be_bytes([bytes[1], bytes[2]]));
        let data = &bytes[4..4 + count];
        match bytes[3] {
            0x00 if count > 0 => {
                let a = upper + addr;
                let e = a + count as u64 - 1;
                range = Some(match range {
                    None => McsRange { low: a, high: e },
                    Some(r) => McsRange {
                        low: r.low.min(a),
                        high: r.high.max(e),
                    },
                });
            }
            0x00 => {}
            0x01 => break,
            0x02 if count == 2 => upper = u64::from(u16::from_be_bytes([data[0], data[1]])) << 4,
            0x04 if count == 2 => upper = u64::from(u16::from_be_bytes([data[0], data[1]])) << 16,
            0x03 | 0x05 => {}
            kind => return Err(McsError::RecordType { line, kind }),
        }
    }
    range.ok_or(McsError::NoData)
}

/// What was learnt about an image file.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImageCheck {
    /// The file.
    pub path: PathBuf,
    /// Its kind.
    pub kind: ImageKind,
    /// SHA-256.
    pub sha256: String,
    /// The part in a `.bit` header.
    pub part: Option<String>,
    /// The range a `.mcs` writes.
    pub mcs_low: Option<u64>,
    /// The highest address a `.mcs` writes.
    pub mcs_high: Option<u64>,
    /// Mismatches `force` may override (part, manifest board).
    pub mismatches: Vec<String>,
}

/// Check an image against the board: the hard golden-image rules are errors;
/// part and manifest-board mismatches are listed for the caller to refuse
/// unless forced.
pub fn check_image(
    board: &Board,
    path: &Path,
    target: Target,
    manifest_image: Option<&Image>,
) -> Result<ImageCheck> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let kind = match ext.as_deref() {
        Some("bit") => ImageKind::Bit,
        Some("mcs") => ImageKind::Mcs,
        _ => {
            return Err(BitstreamError::Refused(format!(
                "{}: an image is a .bit (JTAG or flash) or a .mcs (flash)",
                path.display()
            )))
        }
    };
    if target == Target::Jtag && kind == ImageKind::Mcs {
        return Err(BitstreamError::Refused(format!(
            "{}: --jtag loads a .bit; a .mcs goes to the configuration flash (--flash)",
            path.display()
        )));
    }
    if !path.is_file() {
        return Err(BitstreamError::Refused(format!(
            "{}: no such image file",
            path.display()
        )));
    }
    let mut check = ImageCheck {
        path: path.to_path_buf(),
        kind,
        sha256: super::sha256_file(path)?,
        part: None,
        mcs_low: None,
        mcs_high: None,
        mismatches: vec![],
    };
    match kind {
        ImageKind::Bit => {
            let bytes = std::fs::read(path).map_err(|e| super::io_err("reading", path, e))?;
            let h = read_bit_header(&bytes).map_err(|why| BitstreamError::BitHeader {
                path: path.to_path_buf(),
                why,
            })?;
            if !bit_part_matches(&h.part, &board.part) {
                check.mismatches.push(format!(
                    "{} was built for part {}, board {} is {}",
                    path.display(),
                    h.part,
                    board.name,
                    board.part
                ));
            }
            check.part = Some(h.part);
        }
        ImageKind::Mcs => {
            let text = read(path)?;
            let r = mcs_range(&text).map_err(|why| BitstreamError::Mcs {
                path: path.to_path_buf(),
                why,
            })?;
            if r.low < board.flash.user_image_offset || r.low < MIN_USER_IMAGE_OFFSET {
                return Err(BitstreamError::Refused(format!(
                    "{} starts at {:#010x}, below the user-image offset {}: the golden image is never written (nothing was written)",
                    path.display(),
                    r.low,
                    board.user_image_offset_hex()
                )));
            }
            if r.high >= board.flash.size_bytes() {
                return Err(BitstreamError::Refused(format!(
                    "{} ends at {:#010x}, past the end of the {} MiB flash (nothing was written)",
                    path.display(),
                    r.high,
                    board.flash.size_mib
                )));
            }
            check.mcs_low = Some(r.low);
            check.mcs_high = Some(r.high);
        }
    }
    if let Some(im) = manifest_image {
        if im.board != board.name {
            check.mismatches.push(format!(
                "the manifest says {} was built for board {}, not {}",
                path.display(),
                im.board,
                board.name
            ));
        }
    }
    Ok(check)
}

/// The Tcl that lists every device on every JTAG target of `hw_server`.
pub fn probe_tcl(hw_server: &str) -> String {
    format!(
        "# Generated by `weft bitstream flash`: list the JTAG devices and their IDCODEs. Writes nothing.\n{prelude}\n\
         set weft_hw_server {url}\n\
         weft_stage connect\n\
         open_hw_manager\n\
         if {{[catch {{connect_hw_server -url $weft_hw_server -allow_non_jtag}} e]}} {{\n    \
             weft_fail \"cannot reach hw_server at $weft_hw_server: $e\"\n\
         }}\n\
         set targets [get_hw_targets -quiet]\n\
         if {{[llength $targets] == 0}} {{ weft_fail \"no JTAG cable on $weft_hw_server\" }}\n\
         weft_stage scan\n\
         foreach t $targets {{\n    \
             if {{[catch {{open_hw_target $t}} e]}} {{ puts \"WEFT-WARN cannot open $t: $e\"; continue }}\n    \
             foreach d [get_hw_devices -quiet] {{\n        \
                 refresh_hw_device -quiet -update_hw_probes false $d\n        \
                 {idcode}\n        \
                 puts \"WEFT-HW-DEVICE name=[get_property NAME $d] part=[get_property PART $d] idcode=$id target=$t\"\n    \
             }}\n    \
             close_hw_target $t\n\
         }}\n\
         weft_stage done\n\
         exit 0\n",
        prelude = vivado::tcl_prelude(),
        url = tcl_quote(hw_server),
        idcode = IDCODE_OF_D,
    )
}

/// Tcl that sets `id` to device `$d`'s IDCODE (hex when Vivado has
/// `IDCODE_HEX`, else its `IDCODE` property).
const IDCODE_OF_D: &str = "if {[lsearch -exact [list_property $d] IDCODE_HEX] >= 0} { set id [get_property IDCODE_HEX $d] } else { set id [get_property IDCODE $d] }";

/// Pick the board's FPGA among the devices the probe listed: the one whose
/// IDCODE matches. With `force` and no match, the only FPGA-looking device
/// (or the first) is taken, and the mismatch is returned as a warning.
pub fn choose_device(
    board: &Board,
    devices: &[HwDevice],
    force: bool,
) -> Result<(HwDevice, Option<String>)> {
    if devices.is_empty() {
        return Err(BitstreamError::Refused(
            "no device on the JTAG chain: is the cable (Alveo programming cable or USB JTAG) connected and the card powered? Nothing was written".into(),
        ));
    }
    let matching: Vec<&HwDevice> = devices
        .iter()
        .filter(|d| board.jtag.matches(d.idcode))
        .collect();
    match matching.as_slice() {
        [d] => Ok(((*d).clone(), None)),
        [] => {
            let list = devices
                .iter()
                .map(|d| format!("{} ({:#010x})", d.name, d.idcode))
                .collect::<Vec<_>>()
                .join(", ");
            let msg = format!(
                "no device with board {}'s IDCODE {:#010x} (mask {:#010x}) on the chain: found {list}",
                board.name, board.jtag.idcode, board.jtag.idcode_mask
            );
            if force {
                let d = devices
                    .iter()
                    .find(|d| d.name.starts_with("xc"))
                    .unwrap_or(&devices[0]);
                Ok((d.clone(), Some(msg)))
            } else {
                Err(BitstreamError::Refused(format!("{msg}; nothing was written (--force overrides)")))
            }
        }
        many => Err(BitstreamError::Refused(format!(
            "{} devices match board {}'s IDCODE ({}): disconnect the others or pass the hw_server of one cable; nothing was written",
            many.len(),
            board.name,
            many.iter().map(|d| format!("{} on {}", d.name, d.target)).collect::<Vec<_>>().join(", ")
        ))),
    }
}

/// What the programming script needs.
#[derive(Clone, Debug)]
pub struct ProgramTcl<'a> {
    /// The board.
    pub board: &'a Board,
    /// JTAG or flash.
    pub target: Target,
    /// The image (absolute).
    pub image: &'a Path,
    /// Its kind.
    pub kind: ImageKind,
    /// Where a `.mcs` made from a `.bit` is written (flash only).
    pub mcs_out: &'a Path,
    /// The hw_server URL.
    pub hw_server: &'a str,
    /// The device chosen (target and name from the probe).
    pub device: &'a HwDevice,
    /// Check the IDCODE again before writing (off with `force`).
    pub check_idcode: bool,
}

impl ProgramTcl<'_> {
    /// The script.
    pub fn render(&self) -> String {
        let b = self.board;
        let q = |p: &Path| tcl_quote(&p.display().to_string());
        let mut s = format!(
            "# Generated by `weft bitstream flash` for {name} ({desc}); do not edit.\n\
             # {what}\n",
            name = b.name,
            desc = b.description,
            what = match self.target {
                Target::Jtag => "Loads a bitstream into the FPGA over JTAG (lost at power-off).".to_string(),
                Target::Flash => format!(
                    "Writes the configuration flash {} from the user-image offset {} up; the golden image below it is never written.",
                    b.flash.part,
                    b.user_image_offset_hex()
                ),
            },
        );
        s.push_str(vivado::tcl_prelude());
        s.push_str(&format!(
            "\n# --- settings ---------------------------------------------------------------\n\
             set weft_hw_server     {url}\n\
             set weft_target        {target}\n\
             set weft_device        {device}\n\
             set weft_idcode        0x{idcode:08X}\n\
             set weft_idcode_mask   0x{mask:08X}\n\
             set weft_check_idcode  {check}\n\
             set weft_image         {image}\n\
             set weft_image_kind    {kind}\n\
             set weft_mcs           {mcs}\n\
             set weft_flash_part    {fpart}\n\
             set weft_flash_iface   {iface}\n\
             set weft_flash_mib     {size}\n\
             set weft_user_offset   {off}\n\
             set weft_golden_end    0x{golden:08X}\n\n",
            url = tcl_quote(self.hw_server),
            target = tcl_quote(&self.device.target),
            device = tcl_quote(&self.device.name),
            idcode = b.jtag.idcode,
            mask = b.jtag.idcode_mask,
            check = u8::from(self.check_idcode),
            image = q(self.image),
            kind = match self.kind {
                ImageKind::Bit => "bit",
                ImageKind::Mcs => "mcs",
            },
            mcs = q(self.mcs_out),
            fpart = tcl_quote(&b.flash.part),
            iface = tcl_quote(&b.flash.interface),
            size = b.flash.size_mib,
            off = b.user_image_offset_hex(),
            golden = MIN_USER_IMAGE_OFFSET,
        ));
        s.push_str(&format!(
            "# Golden-image safety, before anything is opened.\n\
             if {{$weft_user_offset < $weft_golden_end}} {{\n    \
                 weft_fail [format \"user-image offset 0x%08X is inside the golden image (below 0x%08X)\" $weft_user_offset $weft_golden_end]\n\
             }}\n\n\
             weft_stage connect\n\
             open_hw_manager\n\
             if {{[catch {{connect_hw_server -url $weft_hw_server -allow_non_jtag}} e]}} {{\n    \
                 weft_fail \"cannot reach hw_server at $weft_hw_server: $e\"\n\
             }}\n\
             if {{[catch {{open_hw_target [get_hw_targets $weft_target]}} e]}} {{\n    \
                 weft_fail \"cannot open JTAG target $weft_target: $e\"\n\
             }}\n\
             set d [lindex [get_hw_devices -quiet $weft_device] 0]\n\
             if {{$d eq \"\"}} {{ weft_fail \"no device $weft_device on $weft_target\" }}\n\
             current_hw_device $d\n\
             refresh_hw_device -update_hw_probes false $d\n\
             {idcode}\n\
             puts \"WEFT-HW-DEVICE name=[get_property NAME $d] part=[get_property PART $d] idcode=$id target=$weft_target\"\n\
             if {{$weft_check_idcode}} {{\n    \
                 if {{[string length $id] == 32}} {{ set idv 0; foreach bit [split $id \"\"] {{ set idv [expr {{($idv << 1) | $bit}}] }} }} else {{ set idv [expr {{\"0x[string trimleft $id 0xX]\" + 0}}] }}\n    \
                 if {{($idv & $weft_idcode_mask) != ($weft_idcode & $weft_idcode_mask)}} {{\n        \
                     weft_fail [format \"device %s has IDCODE 0x%08X, not the board's 0x%08X: nothing was written\" $weft_device $idv $weft_idcode]\n    \
                 }}\n\
             }}\n\n",
            idcode = IDCODE_OF_D,
        ));
        match self.target {
            Target::Jtag => s.push_str(
                "weft_stage program\n\
                 set_property PROBES.FILE {} $d\n\
                 set_property FULL_PROBES.FILE {} $d\n\
                 set_property PROGRAM.FILE $weft_image $d\n\
                 program_hw_devices $d\n\
                 refresh_hw_device $d\n\
                 weft_stage done\n\
                 exit 0\n",
            ),
            Target::Flash => s.push_str(
                "weft_stage cfgmem\n\
                 if {$weft_image_kind eq \"bit\"} {\n    \
                     write_cfgmem -force -format mcs -size $weft_flash_mib -interface $weft_flash_iface \\\n        \
                         -loadbit \"up $weft_user_offset $weft_image\" -file $weft_mcs\n\
                 } else {\n    \
                     set weft_mcs $weft_image\n\
                 }\n\
                 # The file must start at or above the user-image offset: the golden image is never written.\n\
                 weft_assert_above_golden $weft_mcs $weft_user_offset [expr {$weft_flash_mib << 20}]\n\n\
                 weft_stage program\n\
                 create_hw_cfgmem -hw_device $d [lindex [get_cfgmem_parts $weft_flash_part] 0]\n\
                 set cfg [get_property PROGRAM.HW_CFGMEM $d]\n\
                 # Erase, program and verify only the address range the file covers.\n\
                 set_property PROGRAM.ADDRESS_RANGE {use_file} $cfg\n\
                 set_property PROGRAM.FILES [list $weft_mcs] $cfg\n\
                 set_property PROGRAM.PRM_FILE {} $cfg\n\
                 set_property PROGRAM.UNUSED_PIN_TERMINATION {pull-none} $cfg\n\
                 set_property PROGRAM.BLANK_CHECK 0 $cfg\n\
                 set_property PROGRAM.ERASE 1 $cfg\n\
                 set_property PROGRAM.CFG_PROGRAM 1 $cfg\n\
                 set_property PROGRAM.VERIFY 1 $cfg\n\
                 set_property PROGRAM.CHECKSUM 0 $cfg\n\
                 create_hw_bitstream -hw_device $d [get_property PROGRAM.HW_CFGMEM_BITFILE $d]\n\
                 program_hw_devices $d\n\
                 refresh_hw_device $d\n\
                 program_hw_cfgmem -hw_cfgmem $cfg\n\
                 weft_stage done\n\
                 exit 0\n",
            ),
        }
        s
    }
}

/// Run a script with Vivado in `work_dir` (log `name.log`).
pub fn run_script(
    work_dir: &Path,
    name: &str,
    script: &str,
    progress: impl FnMut(&Event),
) -> Result<vivado::RunOutcome> {
    let path = work_dir.join(format!("{name}.tcl"));
    write(&path, script)?;
    let log = work_dir.join(format!("{name}.log"));
    let o = vivado::run(&path, &log, work_dir, progress)?;
    if !o.success {
        return Err(BitstreamError::Vivado {
            stage: o.stages.last().cloned().unwrap_or_else(|| "start".into()),
            message: o.error.clone().unwrap_or_else(|| "failed".into()),
            log,
        });
    }
    Ok(o)
}

/// Refuse early when Vivado (with its hardware manager) cannot be run.
pub fn require_vivado() -> Result<()> {
    if vivado::find_executable(&vivado::vivado_bin()).is_none() {
        return Err(BitstreamError::ToolMissing {
            tool: vivado::vivado_bin(),
            env: "WEFT_VIVADO",
            why: "flashing needs Vivado's hardware manager (vivado or vivado_lab) and a JTAG cable; nothing was written".into(),
        });
    }
    Ok(())
}

/// PCI functions under `devices_dir` (`/sys/bus/pci/devices`) with this
/// vendor and device id.
pub fn find_pci_functions(devices_dir: &Path, vendor: u16, device: u16) -> Vec<String> {
    let read_id = |p: PathBuf| -> Option<u16> {
        let t = std::fs::read_to_string(p).ok()?;
        u16::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok()
    };
    let mut out = vec![];
    if let Ok(rd) = std::fs::read_dir(devices_dir) {
        for e in rd.flatten() {
            let dir = e.path();
            if read_id(dir.join("vendor")) == Some(vendor)
                && read_id(dir.join("device")) == Some(device)
            {
                if let Some(n) = dir.file_name().and_then(|n| n.to_str()) {
                    out.push(n.to_string());
                }
            }
        }
    }
    out.sort();
    out
}

/// How to make the host see the new image.
pub fn rescan_hint(target: Target, bdfs: &[String]) -> String {
    let remove = if bdfs.is_empty() {
        "echo 1 | sudo tee /sys/bus/pci/devices/DDDD:BB:DD.F/remove".to_string()
    } else {
        bdfs.iter()
            .map(|b| format!("echo 1 | sudo tee /sys/bus/pci/devices/{b}/remove"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    match target {
        Target::Jtag => format!(
            "the FPGA now runs the new image but the host still holds the old PCIe function: {remove}; echo 1 | sudo tee /sys/bus/pci/rescan (a warm reboot also works; some hosts need one after the link drops)"
        ),
        Target::Flash => "the flash holds the new image; the FPGA loads it at the next cold boot (power cycle the host), then: echo 1 | sudo tee /sys/bus/pci/rescan".to_string(),
    }
}

/// Compare what `weft probe` read from a running card with the manifest's
/// image; the differences (empty when it is that image).
pub fn card_differences(card: &crate::probe::Card, image: &Image) -> Vec<String> {
    let mut d = vec![];
    if card.map_version != image.map_version {
        d.push(format!(
            "register map {} (image {})",
            card.map_version, image.map_version
        ));
    }
    if card.board != image.board {
        d.push(format!("board {} (image {})", card.board, image.board));
    }
    let short = image
        .git_hash
        .get(..8)
        .unwrap_or(&image.git_hash)
        .to_ascii_lowercase();
    if card.git_hash.to_ascii_lowercase() != short {
        d.push(format!("git {} (image {short})", card.git_hash));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bit_file(part: &str) -> Vec<u8> {
        let mut v = vec![
            0x00, 0x09, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x00, 0x00, 0x01,
        ];
        for (k, val) in [
            (b'a', "weft_top;UserID=0XFFFFFFFF"),
            (b'b', part),
            (b'c', "2025/01/01"),
            (b'd', "00:00:00"),
        ] {
            v.push(k);
            let t = format!("{val}\0");
            v.extend((t.len() as u16).to_be_bytes());
            v.extend(t.as_bytes());
        }
        v.push(b'e');
        v.extend(4u32.to_be_bytes());
        v.extend([0xff; 4]);
        v
    }

    #[test]
    fn bit_header_and_part() {
        let h = read_bit_header(&bit_file("xcu55c-fsvh2892-2L-e")).unwrap();
        assert_eq!(h.part, "xcu55c-fsvh2892-2L-e");
        assert!(bit_part_matches(&h.part, "xcu55c-fsvh2892-2L-e"));
        assert!(bit_part_matches("u55cfsvh2892", "xcu55c-fsvh2892-2L-e"));
        assert!(!bit_part_matches(
            "xcu250-figd2104-2L-e",
            "xcu55c-fsvh2892-2L-e"
        ));
        assert_eq!(read_bit_header(b"junk"), Err(BitHeaderError::Truncated));
    }

    fn record(kind: u8, addr: u16, data: &[u8]) -> String {
        let mut b = vec![data.len() as u8, (addr >> 8) as u8, addr as u8, kind];
        b.extend(data);
        let sum = b.iter().fold(0u8, |a, x| a.wrapping_add(*x));
        b.push(sum.wrapping_neg());
        format!(":{}\n", super::super::hex(&b).to_ascii_uppercase())
    }

    #[test]
    fn mcs_ranges() {
        let text =
            record(4, 0, &[0x01, 0x00]) + &record(0, 0x2000, &[1, 2, 3, 4]) + &record(1, 0, &[]);
        assert_eq!(
            mcs_range(&text),
            Ok(McsRange {
                low: 0x0100_2000,
                high: 0x0100_2003
            })
        );
        let bad = text.replace(":04200000", ":04200001");
        assert_eq!(mcs_range(&bad), Err(McsError::Checksum { line: 2 }));
    }
}
