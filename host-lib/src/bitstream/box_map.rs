//! The 250 MHz box's register address map in weft's plugin: windows sized
//! for weft's register map.
//!
//! # The problem
//!
//! In the OpenNIC shell the box's AXI4-Lite bus (BAR2 0x100000–0x1FFFFF,
//! box offsets 0x00000–0xFFFFF; [`weft_regs::opennic`]) goes through a
//! crossbar the plugin supplies (`plugin/p2p/box_250mhz/`):
//! `box_250mhz_axi_crossbar.tcl` configures the `axi_crossbar` IP with
//! `2*num_phys_func` plugin slaves and a dummy slave after them, and
//! `box_250mhz_address_map.v` subtracts `C_SIZE*i` from slave `i`'s
//! addresses so every slave sees offsets from 0. The shell's own p2p
//! plugin gives each slave 7 bits (0x80 bytes: slave 0 at 0x00, slave 1 at
//! 0x80, with two PFs four slaves 0x80 apart; `C_SIZE = 32'h80`) and the
//! dummy 12 bits at 0x1000. weft's map spans `1 << weft_regs::ADDR_BITS`
//! bytes (64 KiB) on slave 0, so with the shell's glue every weft block past
//! the first 128 bytes would answer DECERR on a card.
//!
//! # The layout weft writes
//!
//! With `W = weft_regs::ADDR_BITS` ([`layout`]): plugin slave `i` at box
//! offset `i * 2^W`, `W` bits wide (so the address map's `C_SIZE*i`
//! subtraction stays right with `C_SIZE = 2^W`); the dummy slave, 12 bits
//! as in the shell (its `axi_lite_slave` has `REG_ADDR_W 12`), at the first
//! 4 KiB boundary after them. Everything must end inside the box's 1 MiB,
//! or the build fails ([`BitstreamError::BoxMapTooLarge`]). Both of the
//! shell's branches are written, one PF and two ([`PF_COUNTS`]), so both
//! must fit. For W = 16:
//!
//! | PFs | slaves (box offset, 64 KiB each) | dummy (4 KiB) |
//! |---|---|---|
//! | 1 | 0x00000, 0x10000 | 0x20000 |
//! | 2 | 0x00000, 0x10000, 0x20000, 0x30000 | 0x40000 |
//!
//! Ranges are powers of two aligned to their size and do not overlap, as
//! the AXI crossbar requires (PG059, "Address Decode").
//!
//! # How the files are made, and why
//!
//! * `box_250mhz_axi_crossbar.tcl` is **written outright** ([`crossbar_tcl`])
//!   after checking that the shell's file is the one weft knows (exact lines:
//!   the IP and module name, `AXI4LITE`, `NUM_MI` = `2*$num_phys_func + 1`,
//!   the `$num_phys_func == 2` branch, the dummy's 12-bit width). Every
//!   value in it changes, and weft sets each branch's `NUM_MI` and every
//!   range in one `set_property -dict` (as the shell's own
//!   `system_config_axi_crossbar.tcl` does), so the IP never holds an
//!   intermediate state the shell's line-by-line order would pass through
//!   with wider windows (a 64 KiB slave 0 over a not-yet-moved default
//!   range, a widened window at a base not aligned to its size). It also
//!   refuses `num_phys_func` values it has no layout for, where the shell's
//!   `else` branch would configure a crossbar with unset slaves.
//! * `box_250mhz_address_map.v` is **edited** ([`address_map_v`]): two
//!   `localparam`s (`C_SIZE`, `C_DUMMY_BASE_ADDR`) and the header comment
//!   that tabulates the map; the rest (the wiring, about 150 lines) stays
//!   the shell's. Each edit replaces text that must occur exactly once, and
//!   the lines the layout relies on unchanged (`C_P2P_BASE_ADDR = 32'h0`,
//!   the dummy index, the per-slave subtraction, the crossbar's module name)
//!   are checked too.
//! * `box_250mhz_address_map_inst.vh` is copied unchanged, after checking
//!   its dummy slave is 12 bits wide.
//!
//! A shell whose files lack any expected text is refused with
//! [`BitstreamError::ShellText`], naming the file and the text: it is a
//! different shell version, whose glue must be read before weft adapts it.

use super::{BitstreamError, Result};
use serde::Serialize;
use std::path::Path;

/// Address bits of the shell's dummy slave (`REG_ADDR_W 12` in
/// `box_250mhz_address_map_inst.vh`, `ADDR_WIDTH {12}` in the crossbar).
pub const DUMMY_BITS: u32 = 12;
/// Alignment of the dummy slave's base: its own size, 4 KiB.
pub const DUMMY_ALIGN: u64 = 1 << DUMMY_BITS;
/// The PF counts (`-num_phys_func`) the shell's crossbar Tcl has branches
/// for, and weft writes layouts for.
pub const PF_COUNTS: [u32; 2] = [1, 2];

/// One crossbar slave's address range, in box offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    /// First byte (box offset).
    pub base: u64,
    /// Address bits: the window is `1 << bits` bytes.
    pub bits: u32,
}

impl Window {
    /// Bytes in the window.
    pub fn size(&self) -> u64 {
        1 << self.bits
    }
    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.base + self.size()
    }
}

/// The box's crossbar layout for one PF count.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BoxLayout {
    /// `NUM_INTF` (the shell's `num_phys_func`).
    pub num_intf: u32,
    /// Address bits of every plugin slave's window.
    pub window_bits: u32,
    /// The `2 * num_intf` plugin slaves, `M00` first.
    pub slaves: Vec<Window>,
    /// The dummy slave, the crossbar's last master port.
    pub dummy: Window,
}

impl BoxLayout {
    /// Bytes per plugin slave: the address map's `C_SIZE`.
    pub fn c_size(&self) -> u64 {
        1 << self.window_bits
    }
    /// Every window in crossbar port order (`M00`, `M01`, ..., the dummy).
    pub fn windows(&self) -> Vec<Window> {
        let mut w = self.slaves.clone();
        w.push(self.dummy);
        w
    }
}

/// The layout for `num_intf` interfaces with `window_bits`-bit plugin
/// slaves; refused when it does not end inside the box
/// ([`weft_regs::opennic::BOX_BYTES`]).
pub fn layout(num_intf: u32, window_bits: u32) -> Result<BoxLayout> {
    if num_intf == 0 {
        return Err(BitstreamError::Refused(
            "a 250 MHz box layout needs at least one PF".into(),
        ));
    }
    let limit = u128::from(weft_regs::opennic::BOX_BYTES);
    let slaves = 2 * u128::from(num_intf);
    let window = 1u128.checked_shl(window_bits).unwrap_or(u128::MAX);
    let slaves_end = window.saturating_mul(slaves);
    let align = u128::from(DUMMY_ALIGN);
    let dummy_base = slaves_end.div_ceil(align).saturating_mul(align);
    let end = dummy_base.saturating_add(align);
    if end > limit {
        return Err(BitstreamError::BoxMapTooLarge {
            num_intf,
            bits: window_bits,
            slaves: slaves as u64,
            end,
            limit: limit as u64,
        });
    }
    // Everything is below 1 MiB from here on.
    let window = window as u64;
    Ok(BoxLayout {
        num_intf,
        window_bits,
        slaves: (0..slaves as u64)
            .map(|i| Window {
                base: i * window,
                bits: window_bits,
            })
            .collect(),
        dummy: Window {
            base: dummy_base as u64,
            bits: DUMMY_BITS,
        },
    })
}

/// The layouts of every PF count in [`PF_COUNTS`] for `window_bits`.
pub fn layouts(window_bits: u32) -> Result<Vec<BoxLayout>> {
    PF_COUNTS.iter().map(|&n| layout(n, window_bits)).collect()
}

/// The layouts for weft's register map (`W = weft_regs::MAP.addr_bits`).
pub fn weft_layouts() -> Result<Vec<BoxLayout>> {
    layouts(weft_regs::MAP.addr_bits)
}

/// Refuse `text` (the shell's `file`) unless it contains `expected` exactly
/// once.
fn expect_once(file: &Path, text: &str, expected: &str) -> Result<()> {
    let found = text.matches(expected).count();
    if found == 1 {
        Ok(())
    } else {
        Err(BitstreamError::ShellText {
            file: file.to_path_buf(),
            expected: expected.to_string(),
            found,
        })
    }
}

/// Replace `expected`, which must occur exactly once in `text`.
fn replace_once(file: &Path, text: &str, expected: &str, with: &str) -> Result<String> {
    expect_once(file, text, expected)?;
    Ok(text.replacen(expected, with, 1))
}

/// Lines of the shell's `box_250mhz_axi_crossbar.tcl` that weft's
/// replacement agrees with (IP, module name, protocol, slave count, branch,
/// dummy width in both branches).
pub const CROSSBAR_ANCHORS: [&str; 7] = [
    "set axi_crossbar box_250mhz_axi_crossbar\n",
    "create_ip -name axi_crossbar -vendor xilinx.com -library ip -module_name $axi_crossbar\n",
    "CONFIG.PROTOCOL {AXI4LITE}\n",
    "set_property CONFIG.NUM_MI [expr { 2*$num_phys_func + 1}] [get_ips $axi_crossbar]\n",
    "if {$num_phys_func == 2} {\n",
    "set_property CONFIG.M04_A00_ADDR_WIDTH {12} [get_ips $axi_crossbar]\n",
    "set_property CONFIG.M02_A00_ADDR_WIDTH {12} [get_ips $axi_crossbar]\n",
];

/// A box offset as the crossbar IP spells a base (`0x%016X`).
fn tcl_addr(a: u64) -> String {
    format!("0x{a:016X}")
}

/// One line per layout: `1 PF: M00 0x00000-0x0FFFF, ...`.
fn layout_lines(layouts: &[BoxLayout], prefix: &str) -> String {
    let mut s = String::new();
    for l in layouts {
        let ports: Vec<String> = l
            .windows()
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let dummy = if i == l.slaves.len() { " (dummy)" } else { "" };
                format!("M{i:02}{dummy} 0x{:05X}-0x{:05X}", w.base, w.end() - 1)
            })
            .collect();
        s.push_str(&format!(
            "{prefix}{} PF{}: {}\n",
            l.num_intf,
            if l.num_intf == 1 { "" } else { "s" },
            ports.join(", ")
        ));
    }
    s
}

/// weft's `box_250mhz_axi_crossbar.tcl` for `layouts`, after checking that
/// `shell_text` (the shell's copy, read from `file`) is the version weft
/// replaces ([`CROSSBAR_ANCHORS`]).
pub fn crossbar_tcl(file: &Path, shell_text: &str, layouts: &[BoxLayout]) -> Result<String> {
    for a in CROSSBAR_ANCHORS {
        expect_once(file, shell_text, a)?;
    }
    let bits = layouts.first().map_or(0, |l| l.window_bits);
    let mut s = format!(
        "# Generated by `weft bitstream build`; do not edit.\n\
         # weft's box_250mhz_axi_crossbar.tcl, written in place of the OpenNIC shell's\n\
         # plugin/p2p/box_250mhz/box_250mhz_axi_crossbar.tcl (the shell's script/build.tcl\n\
         # sources it with $num_phys_func set). Same IP, module name and port order as the\n\
         # shell's (2*num_phys_func plugin slaves, then the dummy slave), with every plugin\n\
         # slave {bits} bits wide (weft_regs::ADDR_BITS): weft's register map is on M00.\n\
         # Each branch sets NUM_MI and every range in one set_property -dict.\n\
         # Box offsets (BAR2 - 0x{box:X}):\n",
        box = weft_regs::opennic::BOX0_OFFSET,
    );
    s.push_str(&layout_lines(layouts, "#   "));
    s.push_str(
        "set axi_crossbar box_250mhz_axi_crossbar\n\
         create_ip -name axi_crossbar -vendor xilinx.com -library ip -module_name $axi_crossbar\n",
    );
    for (k, l) in layouts.iter().enumerate() {
        let kw = if k == 0 { "if" } else { "} elseif" };
        s.push_str(&format!("{kw} {{$num_phys_func == {}}} {{\n", l.num_intf));
        s.push_str("    set_property -dict {\n");
        s.push_str("        CONFIG.PROTOCOL {AXI4LITE}\n");
        s.push_str(&format!(
            "        CONFIG.NUM_MI {{{}}}\n",
            l.windows().len()
        ));
        for (i, w) in l.windows().iter().enumerate() {
            s.push_str(&format!(
                "        CONFIG.M{i:02}_A00_BASE_ADDR {{{}}}\n\
                 \x20       CONFIG.M{i:02}_A00_ADDR_WIDTH {{{}}}\n",
                tcl_addr(w.base),
                w.bits
            ));
        }
        s.push_str("    } [get_ips $axi_crossbar]\n");
    }
    let counts: Vec<String> = layouts.iter().map(|l| l.num_intf.to_string()).collect();
    s.push_str(&format!(
        "}} else {{\n    error \"weft's box_250mhz_axi_crossbar.tcl has layouts for num_phys_func {} only, not $num_phys_func\"\n}}\n",
        counts.join(" and ")
    ));
    Ok(s)
}

/// First line of the shell's header comment in `box_250mhz_address_map.v`;
/// weft replaces the comment from here to the `` `timescale`` line.
pub const ADDRESS_MAP_HEADER: &str =
    "// Address map for the box running at 250MHz (through PCI-e BAR2 1MB)\n";
/// The line after the header comment.
pub const ADDRESS_MAP_TIMESCALE: &str = "`timescale 1ns/1ps\n";
/// The shell's slave size.
pub const ADDRESS_MAP_C_SIZE: &str = "  localparam C_SIZE = 32'h80;\n";
/// The shell's dummy base.
pub const ADDRESS_MAP_DUMMY_BASE: &str = "  localparam C_DUMMY_BASE_ADDR = 32'h1000;\n";
/// Lines of the shell's `box_250mhz_address_map.v` the layout relies on,
/// kept unchanged: slave 0 at box offset 0, the dummy after the plugin
/// slaves, the per-slave subtraction, the crossbar's module name.
pub const ADDRESS_MAP_ANCHORS: [&str; 5] = [
    "  localparam C_P2P_BASE_ADDR = 32'h0;\n",
    "  localparam C_DUMMY_INDEX = NUM_INTF*2;\n",
    "axil_awaddr[32*i +: 32] - C_SIZE*i - C_P2P_BASE_ADDR;\n",
    "axil_araddr[32*i +: 32] - C_SIZE*i - C_P2P_BASE_ADDR;\n",
    "  box_250mhz_axi_crossbar xbar_inst (\n",
];

/// weft's `box_250mhz_address_map.v`: the shell's (`shell_text`, read from
/// `file`) with `C_SIZE = 2^W`, the dummy base of each layout and a header
/// that says so.
pub fn address_map_v(file: &Path, shell_text: &str, layouts: &[BoxLayout]) -> Result<String> {
    for a in ADDRESS_MAP_ANCHORS {
        expect_once(file, shell_text, a)?;
    }
    let c_size = layouts.first().map_or(0, BoxLayout::c_size);
    if layouts.iter().any(|l| l.c_size() != c_size) {
        return Err(BitstreamError::Refused(
            "the box layouts disagree on the plugin slaves' window".into(),
        ));
    }
    let bits = layouts.first().map_or(0, |l| l.window_bits);
    let text = replace_once(
        file,
        shell_text,
        ADDRESS_MAP_C_SIZE,
        &format!("  localparam C_SIZE = 32'h{c_size:X}; // weft: 2^{bits} bytes a slave\n"),
    )?;
    // (NUM_INTF == 2) ? 32'h40000 : 32'h20000, the first layout the default.
    let mut dummy = String::new();
    for l in layouts.iter().skip(1).rev() {
        dummy.push_str(&format!(
            "(NUM_INTF == {}) ? 32'h{:X} : ",
            l.num_intf, l.dummy.base
        ));
    }
    dummy.push_str(&format!(
        "32'h{:X}",
        layouts.first().map_or(0, |l| l.dummy.base)
    ));
    let text = replace_once(
        file,
        &text,
        ADDRESS_MAP_DUMMY_BASE,
        &format!("  localparam C_DUMMY_BASE_ADDR = {dummy};\n"),
    )?;
    expect_once(file, &text, ADDRESS_MAP_HEADER)?;
    let start = text.find(ADDRESS_MAP_HEADER).unwrap_or(0);
    let Some(len) = text[start..].find(ADDRESS_MAP_TIMESCALE) else {
        return Err(BitstreamError::ShellText {
            file: file.to_path_buf(),
            expected: ADDRESS_MAP_TIMESCALE.to_string(),
            found: 0,
        });
    };
    let mut header = format!(
        "// Modified by `weft bitstream build` from the OpenNIC shell's\n\
         // plugin/p2p/box_250mhz/box_250mhz_address_map.v: C_SIZE, C_DUMMY_BASE_ADDR and\n\
         // this comment changed, the rest is the shell's. Do not edit.\n\
         //\n\
         // Address map of the box running at 250 MHz: BAR2 0x{box:X}-0x{last:X} (box\n\
         // offsets 0x00000-0x{size_last:05X}). Every plugin slave is 2^{bits} bytes (weft_regs::ADDR_BITS);\n\
         // weft's register map answers on slave 0 (M00), at BAR2 + 0x{map:X}.\n",
        box = weft_regs::opennic::BOX0_OFFSET,
        last = weft_regs::opennic::BOX0_OFFSET + weft_regs::opennic::BOX_BYTES - 1,
        size_last = weft_regs::opennic::BOX_BYTES - 1,
        map = weft_regs::opennic::MAP_OFFSET,
    );
    header.push_str(&layout_lines(layouts, "//   "));
    Ok(format!(
        "{}{header}{}",
        &text[..start],
        &text[start + len..]
    ))
}

/// Check the shell's `box_250mhz_address_map_inst.vh` (copied unchanged):
/// its dummy slave must be [`DUMMY_BITS`] wide.
pub fn check_address_map_inst(file: &Path, shell_text: &str) -> Result<()> {
    expect_once(file, shell_text, ".REG_ADDR_W (12)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weft_map_layout() {
        let l = weft_layouts().unwrap();
        let w = weft_regs::ADDR_BITS;
        assert_eq!(l[0].slaves.len(), 2);
        assert_eq!(l[1].slaves.len(), 4);
        for l in &l {
            assert_eq!(
                l.slaves[0].base,
                u64::from(weft_regs::opennic::SLAVE_BOX_OFFSET)
            );
            for (i, s) in l.slaves.iter().enumerate() {
                assert_eq!((s.base, s.bits), (i as u64 * (1 << w), w));
            }
            assert_eq!(l.dummy.base % DUMMY_ALIGN, 0);
            assert!(l.dummy.base >= l.slaves.last().unwrap().end());
            assert!(l.dummy.end() <= u64::from(weft_regs::opennic::BOX_BYTES));
        }
    }

    #[test]
    fn small_windows_keep_the_dummy_4k_aligned() {
        let l = layout(1, 7).unwrap();
        assert_eq!(l.slaves[1].base, 0x80);
        assert_eq!(l.dummy.base, 0x1000, "the shell's own layout");
    }

    #[test]
    fn the_map_must_fit_the_box() {
        assert!(layout(2, 17).is_ok());
        // Four 256 KiB windows fill the box: no room for the dummy.
        let e = layout(2, 18).unwrap_err();
        let m = e.to_string();
        assert!(matches!(e, BitstreamError::BoxMapTooLarge { .. }), "{m}");
        assert!(
            m.contains("2 PFs") && m.contains("0x101000") && m.contains("0x100000"),
            "{m}"
        );
        assert!(layout(1, 18).is_ok());
        assert!(layouts(18).is_err(), "both branches are written");
        assert!(layout(1, 19).is_err());
        assert!(layout(1, 200).is_err(), "no overflow");
    }
}
