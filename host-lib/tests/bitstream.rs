//! The bitstream flow: board data, the OpenNIC plugin and its port contract,
//! the Vivado and hardware-manager Tcl, the manifest, the refusals, the
//! estimate arithmetic, the FuseSoC core. No Vivado here: Vivado runs are
//! exercised with a fake `vivado` script that prints weft's markers.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use weft::bitstream::board::{self, Board, MIN_USER_IMAGE_OFFSET};
use weft::bitstream::build::{build, prepare, BuildOptions, Built};
use weft::bitstream::estimate::{self, Usage};
use weft::bitstream::flash::{self, ProgramTcl, Target};
use weft::bitstream::manifest::Manifest;
use weft::bitstream::opennic::{self, Dir, ShellCheckout};
use weft::bitstream::top::{SourceFile, TopSource};
use weft::bitstream::vivado::HwDevice;
use weft::bitstream::{fusesoc, BitstreamError};

fn repo_bitstreams() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../bitstreams")
}

fn boards() -> Vec<Board> {
    board::load_all_in(&repo_bitstreams().join("boards")).unwrap()
}

fn u55c() -> Board {
    board::load_in(&repo_bitstreams().join("boards"), "u55c").unwrap()
}

// ---------------------------------------------------------------- board data

#[test]
fn every_board_file_loads_and_is_sane() {
    let bs = boards();
    let names: Vec<_> = bs.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names, ["u200", "u250", "u280", "u50", "u55c"]);
    for b in &bs {
        assert_eq!(weft_regs::board::name(b.board_id), Some(b.name.as_str()));
        assert_eq!(b.flash.user_image_offset, 0x0100_2000, "{}", b.name);
        assert!(b.flash.user_image_offset >= MIN_USER_IMAGE_OFFSET);
        assert!(b.flash.user_image_offset < b.flash.size_bytes());
        assert_eq!(b.flash.size_mib, 128);
        let r = &b.resources;
        assert!(r.luts > 0 && r.ffs > 0 && r.bram36 > 0 && r.uram > 0 && r.dsp > 0);
        assert!(r.ffs >= r.luts);
        assert!(b.part.starts_with(&format!("xc{}-", b.name)), "{}", b.part);
        assert!(b
            .board_part
            .starts_with(&format!("xilinx.com:a{}:part0:", b.name)));
        assert_eq!(b.opennic_board, format!("a{}", b.name));
        assert!(
            b.jtag.matches(b.jtag.idcode | 0xf000_0000),
            "revision bits ignored"
        );
        assert_eq!(b.pci.vendor, 0x10ee);
        assert!(b.network.qsfp_ports >= 1);
        assert!(b.memory.hbm_gib + b.memory.ddr4_gib > 0);
    }
    // HBM boards and DDR boards.
    let get = |n: &str| bs.iter().find(|b| b.name == n).unwrap();
    assert_eq!(get("u55c").memory.hbm_gib, 16);
    assert_eq!(get("u250").memory.ddr4_gib, 64);
    assert_eq!(get("u50").network.qsfp_ports, 1);
}

#[test]
fn every_board_figure_has_a_source_comment() {
    let dir = repo_bitstreams().join("boards");
    for b in boards() {
        let text = std::fs::read_to_string(dir.join(format!("{}.toml", b.name))).unwrap();
        let comments = text
            .lines()
            .filter(|l| l.trim_start().starts_with('#'))
            .count();
        assert!(comments >= 15, "{}: {comments} comment lines", b.name);
        for section in [
            "[jtag]",
            "[pci]",
            "[network]",
            "[memory]",
            "[flash]",
            "[resources]",
        ] {
            let at = text.find(section).unwrap();
            let next = text[at..].lines().nth(1).unwrap_or("");
            assert!(
                next.trim_start().starts_with('#'),
                "{}: {section} starts without a source",
                b.name
            );
        }
    }
}

#[test]
fn unknown_board_is_named_with_the_known_ones() {
    let e = board::load_in(&repo_bitstreams().join("boards"), "u999")
        .unwrap_err()
        .to_string();
    assert!(e.contains("u999") && e.contains("u250, u280"), "{e}");
}

#[test]
fn shipped_manifest_is_empty_and_valid() {
    let m = Manifest::load(&repo_bitstreams().join("manifest.json")).unwrap();
    assert!(m.images.is_empty());
}

// ------------------------------------------------------- the OpenNIC shell

/// The 250 MHz box's port list as plugin/p2p/p2p_250mhz.sv declares it,
/// with a board-conditional reference clock (written here by hand).
const P2P_250MHZ: &str = r#"`timescale 1ns/1ps
module p2p_250mhz #(
  parameter int NUM_QDMA = 1,
  parameter int NUM_INTF = 1
) (
  input        [NUM_INTF*2-1:0] s_axil_awvalid,
  input     [32*NUM_INTF*2-1:0] s_axil_awaddr,
  output       [NUM_INTF*2-1:0] s_axil_awready,
  input        [NUM_INTF*2-1:0] s_axil_wvalid,
  input     [32*NUM_INTF*2-1:0] s_axil_wdata,
  output       [NUM_INTF*2-1:0] s_axil_wready,
  output       [NUM_INTF*2-1:0] s_axil_bvalid,
  output     [2*NUM_INTF*2-1:0] s_axil_bresp,
  input        [NUM_INTF*2-1:0] s_axil_bready,
  input        [NUM_INTF*2-1:0] s_axil_arvalid,
  input     [32*NUM_INTF*2-1:0] s_axil_araddr,
  output       [NUM_INTF*2-1:0] s_axil_arready,
  output       [NUM_INTF*2-1:0] s_axil_rvalid,
  output    [32*NUM_INTF*2-1:0] s_axil_rdata,
  output     [2*NUM_INTF*2-1:0] s_axil_rresp,
  input        [NUM_INTF*2-1:0] s_axil_rready,

  input      [NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tvalid,
  input  [512*NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tdata,
  input   [64*NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tkeep,
  input      [NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tlast,
  input   [16*NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tuser_size,
  input   [16*NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tuser_src,
  input   [16*NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tuser_dst,
  output     [NUM_INTF*NUM_QDMA-1:0] s_axis_qdma_h2c_tready,

  output     [NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tvalid,
  output [512*NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tdata,
  output  [64*NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tkeep,
  output     [NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tlast,
  output  [16*NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tuser_size,
  output  [16*NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tuser_src,
  output  [16*NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tuser_dst,
  input      [NUM_INTF*NUM_QDMA-1:0] m_axis_qdma_c2h_tready,

  output     [NUM_INTF-1:0] m_axis_adap_tx_250mhz_tvalid,
  output [512*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tdata,
  output  [64*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tkeep,
  output     [NUM_INTF-1:0] m_axis_adap_tx_250mhz_tlast,
  output  [16*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tuser_size,
  output  [16*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tuser_src,
  output  [16*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tuser_dst,
  input      [NUM_INTF-1:0] m_axis_adap_tx_250mhz_tready,

  input      [NUM_INTF-1:0] s_axis_adap_rx_250mhz_tvalid,
  input  [512*NUM_INTF-1:0] s_axis_adap_rx_250mhz_tdata,
  input   [64*NUM_INTF-1:0] s_axis_adap_rx_250mhz_tkeep,
  input      [NUM_INTF-1:0] s_axis_adap_rx_250mhz_tlast,
  input   [16*NUM_INTF-1:0] s_axis_adap_rx_250mhz_tuser_size,
  input   [16*NUM_INTF-1:0] s_axis_adap_rx_250mhz_tuser_src,
  input   [16*NUM_INTF-1:0] s_axis_adap_rx_250mhz_tuser_dst,
  output     [NUM_INTF-1:0] s_axis_adap_rx_250mhz_tready,

  input                     mod_rstn,
  output                    mod_rst_done,

  input                     axil_aclk,
`ifdef __au55n__
  input                     ref_clk_100mhz,
`elsif __au55c__
  input                     ref_clk_100mhz,
`endif
  input                     axis_aclk
);
endmodule: p2p_250mhz
"#;

const INST_VH: &str = "localparam C_NUM_USER_BLOCK = 1;\n\
assign mod_rst_done[15:C_NUM_USER_BLOCK] = {(16-C_NUM_USER_BLOCK){1'b1}};\n\
p2p_250mhz #(\n  .NUM_INTF (NUM_PHYS_FUNC)\n) p2p_250mhz_inst (\n  .mod_rstn (mod_rstn[0]),\n  .mod_rst_done (mod_rst_done[0]),\n  .axil_aclk (axil_aclk),\n  .axis_aclk (axis_aclk)\n);\n";

/// A directory shaped like an OpenNIC shell checkout (only the files weft
/// reads; the shell's own build is not run here).
fn fake_shell(root: &Path, p2p: &str) {
    let w = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    w(
        "script/build.tcl",
        "# stands in for the shell's build.tcl\n",
    );
    for b in ["au55c", "au280", "au250", "au50", "au200"] {
        w(
            &format!("script/board_settings/{b}.tcl"),
            "# board settings\n",
        );
    }
    w("plugin/p2p/p2p_250mhz.sv", p2p);
    w("plugin/p2p/box_250mhz/user_plugin_250mhz_inst.vh", INST_VH);
    w(
        "plugin/p2p/box_250mhz/box_250mhz_address_map_inst.vh",
        ADDRESS_MAP_INST_VH,
    );
    w(
        "plugin/p2p/box_250mhz/box_250mhz_address_map.v",
        ADDRESS_MAP_V,
    );
    w(
        "plugin/p2p/box_250mhz/box_250mhz_axi_crossbar.tcl",
        CROSSBAR_TCL,
    );
}

/// Stands in for the shell's `box_250mhz_address_map_inst.vh`: the dummy
/// slave's width is what weft checks.
const ADDRESS_MAP_INST_VH: &str = r#"// address map instance
box_250mhz_address_map #(.NUM_INTF (NUM_PHYS_FUNC)) address_map_inst ();
axi_lite_slave #(
  .REG_ADDR_W (12),
  .REG_PREFIX (16'hD000)
) dummy_reg_inst ();
"#;

/// Stands in for the shell's `box_250mhz_address_map.v`: a header comment,
/// the lines weft edits and the lines it relies on (written here by hand).
const ADDRESS_MAP_V: &str = r#"// license header
// Address map for the box running at 250MHz (through PCI-e BAR2 1MB)
//   (the shell's table of 0x80-byte slaves)
`timescale 1ns/1ps
module box_250mhz_address_map #(
  parameter integer NUM_INTF = 1
) ();
  localparam C_DUMMY_INDEX = NUM_INTF*2;
  localparam C_P2P_BASE_ADDR = 32'h0;
  localparam C_SIZE = 32'h80;
  localparam C_DUMMY_BASE_ADDR = 32'h1000;
  for (genvar i = 0; i < NUM_INTF*2; i=i+1) begin
    assign p2p_awaddr[32*i +: 32] = axil_awaddr[32*i +: 32] - C_SIZE*i - C_P2P_BASE_ADDR;
    assign p2p_araddr[32*i +: 32] = axil_araddr[32*i +: 32] - C_SIZE*i - C_P2P_BASE_ADDR;
  end
  box_250mhz_axi_crossbar xbar_inst (
  );
endmodule: box_250mhz_address_map
"#;

/// Stands in for the shell's `box_250mhz_axi_crossbar.tcl`: the lines weft
/// checks before writing its own (written here by hand).
const CROSSBAR_TCL: &str = r#"# crossbar
set axi_crossbar box_250mhz_axi_crossbar
create_ip -name axi_crossbar -vendor xilinx.com -library ip -module_name $axi_crossbar
set_property -dict {
    CONFIG.PROTOCOL {AXI4LITE}
} [get_ips $axi_crossbar]
set_property CONFIG.NUM_MI [expr { 2*$num_phys_func + 1}] [get_ips $axi_crossbar]
if {$num_phys_func == 2} {
    set_property CONFIG.M04_A00_ADDR_WIDTH {12} [get_ips $axi_crossbar]
} else {
    set_property CONFIG.M02_A00_ADDR_WIDTH {12} [get_ips $axi_crossbar]
}
"#;

fn fake_top() -> TopSource {
    TopSource {
        module: "weft_top".into(),
        files: vec![SourceFile {
            name: "weft_top.v".into(),
            text: "module weft_top(); endmodule\n".into(),
        }],
    }
}

#[test]
fn the_shell_port_list_is_the_contract() {
    let ports = opennic::parse_module_ports(P2P_250MHZ, "p2p_250mhz").unwrap();
    assert!(opennic::contract_diffs(&ports, &opennic::box_250mhz_ports()).is_empty());
    let rc = ports.iter().find(|p| p.name == "ref_clk_100mhz").unwrap();
    assert_eq!(rc.only_if, ["__au55n__", "__au55c__"]);
}

#[test]
fn a_shell_whose_ports_drift_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let drifted = P2P_250MHZ
        .replace(
            "[512*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tdata",
            "[256*NUM_INTF-1:0] m_axis_adap_tx_250mhz_tdata",
        )
        .replace(
            "output     [NUM_INTF-1:0] s_axis_adap_rx_250mhz_tready,\n",
            "",
        );
    fake_shell(dir.path(), &drifted);
    let e = ShellCheckout::open(dir.path(), "au55c").unwrap_err();
    assert!(matches!(e, BitstreamError::PortContract { .. }), "{e}");
    let e = e.to_string();
    assert!(e.contains("m_axis_adap_tx_250mhz_tdata is 256 bits"), "{e}");
    assert!(
        e.contains("missing port s_axis_adap_rx_250mhz_tready"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}

#[test]
fn a_directory_that_is_not_a_shell_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = ShellCheckout::open(dir.path(), "au55c")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("not an OpenNIC shell checkout") && e.contains("script/build.tcl"),
        "{e}"
    );
    fake_shell(dir.path(), P2P_250MHZ);
    let e = ShellCheckout::open(dir.path(), "au999")
        .unwrap_err()
        .to_string();
    assert!(e.contains("au999"), "{e}");
}

#[test]
fn the_stub_wrapper_has_the_box_ports_and_refuses_synthesis() {
    let dir = tempfile::tempdir().unwrap();
    fake_shell(dir.path(), P2P_250MHZ);
    let shell = ShellCheckout::open(dir.path(), "au55c").unwrap();
    let w = opennic::wrapper(&shell.ports, None);
    let ports = opennic::parse_module_ports(&w, opennic::WRAPPER_MODULE).unwrap();
    assert!(opennic::contract_diffs(&ports, &opennic::box_250mhz_ports()).is_empty());
    assert_eq!(
        ports, shell.ports,
        "names, directions, widths and ifdefs as the shell's"
    );
    assert!(w.contains("STUB"));
    assert!(w.contains("`ifdef __synthesis__\n  // built without weft_top: refuse to synthesise."));
    assert!(w.contains("weft_top_was_not_given__dry_run_only refuse_to_synthesise ();"));
    for p in opennic::box_250mhz_ports() {
        let assigned = w.contains(&format!("assign {} = '0;", p.name));
        assert_eq!(assigned, p.dir == Dir::Output, "{}", p.name);
    }
    assert!(
        w.contains("assign mod_rst_done = '0;"),
        "never claims reset done"
    );
    lint_wrapper(&w);
}

#[test]
fn the_wrapper_instantiates_the_top_when_there_is_one() {
    let ports = opennic::parse_module_ports(P2P_250MHZ, "p2p_250mhz").unwrap();
    let w = opennic::wrapper(&ports, Some(&fake_top()));
    assert!(!w.contains("STUB") && !w.contains("refuse_to_synthesise"));
    assert!(w.contains("weft_top weft_top_inst ("));
    for p in opennic::box_250mhz_ports() {
        assert!(
            w.contains(&format!(".{:<33}({})", p.name, p.name)),
            "{}",
            p.name
        );
    }
    assert!(
        !w.contains(".ref_clk_100mhz"),
        "board-conditional clocks stay unconnected"
    );
    assert!(w.contains("NUM_INTF != 1 || NUM_QDMA != 1"));
}

/// Whether Verilator is installed; without it a lint is skipped, unless
/// WEFT_REQUIRE_VERILATOR=1.
fn have_verilator() -> bool {
    let have = Command::new("verilator")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        assert!(
            std::env::var("WEFT_REQUIRE_VERILATOR").as_deref() != Ok("1"),
            "WEFT_REQUIRE_VERILATOR=1 but verilator is not installed"
        );
        eprintln!("skipping a lint: verilator not installed");
    }
    have
}

/// `verilator --lint-only -Wall` on the stub.
fn lint_wrapper(w: &str) {
    if !have_verilator() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("weft_250mhz.sv");
    std::fs::write(&f, w).unwrap();
    let o = Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", "weft_250mhz"])
        .arg(&f)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "verilator lint:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn options(shell: &Path, out: &Path, top: Option<TopSource>, manifest: &Path) -> BuildOptions {
    BuildOptions {
        board: u55c(),
        shell_dir: shell.to_path_buf(),
        out_dir: out.to_path_buf(),
        dry_run: true,
        jobs: 4,
        top,
        verilog: vec![SourceFile {
            name: "weft_card.v".into(),
            text: "module weft_card(); endmodule\n".into(),
        }],
        manifest: manifest.to_path_buf(),
        git_hash: "0123456789abcdef0123456789abcdef01234567".into(),
    }
}

#[test]
fn dry_run_writes_the_plugin_and_the_flow() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell");
    fake_shell(&shell, P2P_250MHZ);
    let out = dir.path().join("out");
    let opts = options(&shell, &out, None, &dir.path().join("manifest.json"));
    let Built::DryRun(plan) = build(&opts, |_| {}).unwrap() else {
        panic!("not a dry run")
    };
    assert!(plan.stub);
    assert!(plan.command.contains("-mode batch") && plan.command.contains("weft_build.tcl"));
    let read = |rel: &str| std::fs::read_to_string(out.join(rel)).unwrap();
    for rel in [
        "plugin/weft_250mhz.sv",
        "plugin/build_box_250mhz.tcl",
        "plugin/verilog/weft_card.v",
        "plugin/box_250mhz/user_plugin_250mhz_inst.vh",
        "plugin/box_250mhz/box_250mhz_address_map_inst.vh",
        "plugin/box_250mhz/box_250mhz_address_map.v",
        "plugin/box_250mhz/box_250mhz_axi_crossbar.tcl",
        "weft_build.tcl",
    ] {
        assert!(out.join(rel).is_file(), "{rel}");
    }
    let inst = read("plugin/box_250mhz/user_plugin_250mhz_inst.vh");
    assert!(
        inst.contains("weft_250mhz #(")
            && inst.contains("p2p_250mhz_inst (")
            && !inst.contains("\np2p_250mhz #(")
    );
    let box_tcl = read("plugin/build_box_250mhz.tcl");
    assert!(
        box_tcl.contains("read_verilog -sv weft_250mhz.sv")
            && box_tcl.contains("verilog/weft_card.v")
    );

    let tcl = read("weft_build.tcl");
    for needle in [
        "set weft_part         {xcu55c-fsvh2892-2L-e}",
        "set weft_board_part   {xilinx.com:au55c:part0:1.0}",
        "set weft_board        {au55c}",
        "set weft_user_offset  0x01002000",
        "set weft_golden_end   0x01002000",
        "set weft_flash_part   {mt25qu01g-spi-x1_x2_x4}",
        "set weft_flash_iface  {SPIx4}",
        "set weft_flash_mib    128",
        "-user_plugin $weft_plugin_dir",
        "-impl 0",
        "source [file join $weft_shell_dir script build.tcl]",
        "launch_runs synth_1",
        "launch_runs impl_1 -to_step write_bitstream",
        "report_timing_summary",
        "if {$wns < 0 || $whs < 0}",
        "write_cfgmem -force -format mcs -size $weft_flash_mib -interface $weft_flash_iface",
        "-loadbit \"up $weft_user_offset $weft_bit\"",
        "weft_assert_above_golden $weft_mcs $weft_user_offset",
        "if {$weft_user_offset < $weft_golden_end}",
    ] {
        assert!(tcl.contains(needle), "weft_build.tcl lacks {needle:?}");
    }
    assert!(tcl.contains(&format!("set weft_shell_dir    {{{}}}", shell.display())));
    assert!(
        !dir.path().join("manifest.json").exists(),
        "a dry run adds no image"
    );
}

#[test]
fn prepare_uses_the_boards_own_figures() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell");
    fake_shell(&shell, P2P_250MHZ);
    for b in boards() {
        let out = dir.path().join(&b.name);
        let mut opts = options(&shell, &out, None, &dir.path().join("m.json"));
        opts.board = b.clone();
        prepare(&opts).unwrap();
        let tcl = std::fs::read_to_string(out.join("weft_build.tcl")).unwrap();
        assert!(
            tcl.contains(&format!("set weft_part         {{{}}}", b.part)),
            "{}",
            b.name
        );
        assert!(tcl.contains(&format!("set weft_board_part   {{{}}}", b.board_part)));
        assert!(tcl.contains(&format!("set weft_board        {{{}}}", b.opennic_board)));
    }
}

// -------------------------------------- the box's register windows (box_map)

/// The `$num_phys_func == n` branch of a generated
/// `box_250mhz_axi_crossbar.tcl`: `NUM_MI` and every port's (base, width).
fn crossbar_branch(tcl: &str, n: u32) -> (u32, Vec<(u64, u32)>) {
    let start = tcl
        .find(&format!("{{$num_phys_func == {n}}} {{"))
        .unwrap_or_else(|| panic!("no branch for num_phys_func {n}:\n{tcl}"));
    let body = &tcl[start..];
    let body = &body[..body.find("} [get_ips $axi_crossbar]").unwrap()];
    let prop = |name: &str| -> Option<String> {
        let key = format!("CONFIG.{name} {{");
        let at = body.find(&key)? + key.len();
        Some(body[at..at + body[at..].find('}')?].to_string())
    };
    let num_mi: u32 = prop("NUM_MI").unwrap().parse().unwrap();
    let ranges = (0..num_mi)
        .map(|i| {
            let base = prop(&format!("M{i:02}_A00_BASE_ADDR")).unwrap();
            let base = u64::from_str_radix(base.trim_start_matches("0x"), 16).unwrap();
            let bits = prop(&format!("M{i:02}_A00_ADDR_WIDTH")).unwrap();
            (base, bits.parse().unwrap())
        })
        .collect();
    assert!(prop(&format!("M{num_mi:02}_A00_BASE_ADDR")).is_none());
    (num_mi, ranges)
}

/// The dummy slave's box offset with `n` PFs: the first 4 KiB boundary
/// after the `2n` windows of weft's map.
fn dummy_base(n: u64) -> u64 {
    ((2 * n) << weft_regs::MAP.addr_bits).next_multiple_of(0x1000)
}

/// The generated register glue in `plugin` gives weft's map its window on
/// slave 0, in both of the shell's branches.
fn check_box_glue(plugin: &Path) {
    let w = weft_regs::MAP.addr_bits;
    let read = |rel: &str| std::fs::read_to_string(plugin.join(rel)).unwrap();
    let tcl = read("box_250mhz/box_250mhz_axi_crossbar.tcl");
    for n in [1u32, 2] {
        let (num_mi, r) = crossbar_branch(&tcl, n);
        let slaves = 2 * n as usize;
        assert_eq!(num_mi as usize, slaves + 1, "{n} PF(s)");
        for (i, &(base, bits)) in r[..slaves].iter().enumerate() {
            assert_eq!((base, bits), (i as u64 * (1 << w), w), "M{i:02}, {n} PF(s)");
        }
        assert_eq!(r[slaves], (dummy_base(n.into()), 12), "dummy, {n} PF(s)");
        let mut sorted = r.clone();
        sorted.sort();
        for &(base, bits) in &sorted {
            assert_eq!(base % (1 << bits), 0, "{base:#x} is aligned to its size");
            assert!(base + (1 << bits) <= 0x10_0000, "{base:#x} inside the box");
        }
        for p in sorted.windows(2) {
            assert!(p[0].0 + (1 << p[0].1) <= p[1].0, "no overlap: {p:?}");
        }
    }
    assert_eq!(crossbar_branch(&tcl, 1).1[0].1, weft_regs::ADDR_BITS);
    assert!(tcl.contains(
        "} else {\n    error \"weft's box_250mhz_axi_crossbar.tcl has layouts for num_phys_func 1 and 2 only"
    ));
    assert!(tcl.starts_with("# Generated by `weft bitstream build`"));

    let v = read("box_250mhz/box_250mhz_address_map.v");
    assert!(
        v.contains(&format!("  localparam C_SIZE = 32'h{:X};", 1u64 << w)),
        "{v}"
    );
    assert!(v.contains(&format!(
        "  localparam C_DUMMY_BASE_ADDR = (NUM_INTF == 2) ? 32'h{:X} : 32'h{:X};\n",
        dummy_base(2),
        dummy_base(1)
    )));
    assert!(!v.contains("32'h80;") && !v.contains("= 32'h1000;"));
    assert!(v.contains("- C_SIZE*i - C_P2P_BASE_ADDR;") && v.contains("C_P2P_BASE_ADDR = 32'h0;"));
    assert!(v.contains("// Modified by `weft bitstream build`"));
    assert!(v.contains("weft's register map answers on slave 0 (M00), at BAR2 + 0x100000"));
    let win = 1u64 << w;
    assert!(v.contains(&format!(
        "//   2 PFs: M00 0x00000-0x{:05X}, M01 0x{win:05X}-0x{:05X},",
        win - 1,
        2 * win - 1
    )));
    let inst = read("box_250mhz/box_250mhz_address_map_inst.vh");
    assert!(inst.contains(".REG_ADDR_W (12)"));
}

/// Source the generated crossbar Tcl in `tclsh` (when installed) with
/// stand-ins for Vivado's commands, for each `num_phys_func`: the
/// properties it sets, or its error.
fn tcl_crossbar_properties(tcl: &Path, num_phys_func: u32) -> Option<Result<Vec<String>, String>> {
    if Command::new("tclsh").arg("/dev/null").output().is_err() {
        eprintln!("skipping a Tcl run: tclsh not installed");
        return None;
    }
    let script = format!(
        "proc create_ip {{args}} {{}}\n\
         proc get_ips {{name}} {{ return $name }}\n\
         proc set_property {{args}} {{ foreach {{k v}} [lindex $args end-1] {{ puts \"$k=$v\" }} }}\n\
         set num_phys_func {num_phys_func}\n\
         if {{[catch {{source {{{}}}}} e]}} {{ puts \"ERROR $e\"; exit 1 }}\n",
        tcl.display()
    );
    let o = Command::new("tclsh")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(script.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    Some(if o.status.success() {
        Ok(out.lines().map(str::to_string).collect())
    } else {
        Err(out)
    })
}

#[test]
fn the_box_glue_gives_the_map_its_window() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell");
    fake_shell(&shell, P2P_250MHZ);
    let out = dir.path().join("out");
    let opts = options(&shell, &out, None, &dir.path().join("m.json"));
    let plan = prepare(&opts).unwrap();
    check_box_glue(&plan.plugin_dir);
    let v = std::fs::read_to_string(plan.plugin_dir.join("box_250mhz/box_250mhz_address_map.v"))
        .unwrap();
    assert!(
        v.starts_with("// license header\n"),
        "the shell's notice is kept"
    );
    assert!(
        !v.contains("(the shell's table"),
        "the shell's header table is replaced"
    );
    assert_eq!(plan.registers, "BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)");
    assert_eq!(plan.box_layouts.len(), 2);
    assert_eq!(plan.box_layouts[0].c_size(), 1 << weft_regs::ADDR_BITS);

    // The Tcl runs: each branch sets exactly what crossbar_branch read.
    let tcl = plan
        .plugin_dir
        .join("box_250mhz/box_250mhz_axi_crossbar.tcl");
    let text = std::fs::read_to_string(&tcl).unwrap();
    for n in [1, 2] {
        let Some(props) = tcl_crossbar_properties(&tcl, n) else {
            return;
        };
        let props = props.unwrap();
        let (num_mi, ranges) = crossbar_branch(&text, n);
        let mut want = vec![
            "CONFIG.PROTOCOL=AXI4LITE".to_string(),
            format!("CONFIG.NUM_MI={num_mi}"),
        ];
        for (i, (base, bits)) in ranges.iter().enumerate() {
            want.push(format!("CONFIG.M{i:02}_A00_BASE_ADDR=0x{base:016X}"));
            want.push(format!("CONFIG.M{i:02}_A00_ADDR_WIDTH={bits}"));
        }
        assert_eq!(props, want, "num_phys_func {n}");
    }
    let e = tcl_crossbar_properties(&tcl, 3).unwrap().unwrap_err();
    assert!(e.contains("ERROR weft's box_250mhz_axi_crossbar.tcl has layouts for num_phys_func 1 and 2 only, not 3"), "{e}");
}

#[test]
fn the_box_layout_refuses_a_map_that_outgrows_the_box() {
    use weft::bitstream::box_map;
    let ok = box_map::layouts(weft_regs::ADDR_BITS).unwrap();
    assert_eq!(ok[1].dummy.base, dummy_base(2));
    // 2^18-byte windows: four fill the box with two PFs, the dummy is past it.
    let e = box_map::layouts(18).unwrap_err();
    assert!(matches!(e, BitstreamError::BoxMapTooLarge { .. }));
    let e = e.to_string();
    assert!(
        e.contains("does not fit the OpenNIC 250 MHz box with 2 PFs")
            && e.contains("4 windows of 2^18 bytes")
            && e.contains("0x101000")
            && e.contains("0x100000 bytes"),
        "{e}"
    );
    assert!(!e.contains('\n'));
    let e = box_map::layout(1, 20).unwrap_err().to_string();
    assert!(e.contains("with 1 PF:"), "{e}");
    assert!(box_map::layout(1, 64).is_err() && box_map::layout(2, 1000).is_err());
}

#[test]
fn a_shell_whose_box_glue_differs_is_refused() {
    for (file, from, to) in [
        (
            "box_250mhz_address_map.v",
            "localparam C_SIZE = 32'h80;",
            "localparam C_SIZE = 32'h100;",
        ),
        (
            "box_250mhz_address_map.v",
            "- C_SIZE*i - C_P2P_BASE_ADDR;\n    assign p2p_araddr",
            "- C_P2P_BASE_ADDR;\n    assign p2p_araddr",
        ),
        (
            "box_250mhz_axi_crossbar.tcl",
            "[expr { 2*$num_phys_func + 1}]",
            "[expr { 2*$num_phys_func + 2}]",
        ),
        (
            "box_250mhz_address_map_inst.vh",
            ".REG_ADDR_W (12)",
            ".REG_ADDR_W (16)",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let shell = dir.path().join("shell");
        fake_shell(&shell, P2P_250MHZ);
        let path = shell.join("plugin/p2p/box_250mhz").join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file}: {from}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let out = dir.path().join("out");
        let e = prepare(&options(&shell, &out, None, &dir.path().join("m.json"))).unwrap_err();
        assert!(matches!(e, BitstreamError::ShellText { .. }), "{e}");
        let e = e.to_string();
        assert!(
            e.contains(&path.display().to_string())
                && e.contains("exactly once, found it 0 time(s)")
                && e.contains("not the OpenNIC shell version"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        assert!(!out.join("plugin").exists(), "nothing written: {file}");
    }
}

/// The real shell's files weft reads (`script/build.tcl`, the board
/// settings, `plugin/p2p/`), extracted from the git repository named by
/// `WEFT_OPENNIC_SHELL_GIT` into `dest`; `false` (the test is skipped)
/// when it is not set.
fn real_shell(dest: &Path) -> bool {
    let Some(git) = std::env::var_os("WEFT_OPENNIC_SHELL_GIT").filter(|g| !g.is_empty()) else {
        eprintln!("skipping: set WEFT_OPENNIC_SHELL_GIT to a git repository of open-nic-shell");
        return false;
    };
    let tar = Command::new("git")
        .arg("-C")
        .arg(&git)
        .args(["archive", "--format=tar", "HEAD"])
        .args(["script/build.tcl", "script/board_settings", "plugin/p2p"])
        .output()
        .unwrap();
    assert!(
        tar.status.success(),
        "git archive: {}",
        String::from_utf8_lossy(&tar.stderr)
    );
    std::fs::create_dir_all(dest).unwrap();
    let file = dest.join("shell.tar");
    std::fs::write(&file, &tar.stdout).unwrap();
    let o = Command::new("tar")
        .arg("-xf")
        .arg(&file)
        .arg("-C")
        .arg(dest)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    true
}

#[test]
fn the_real_shells_box_glue_is_adapted() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell");
    if !real_shell(&shell) {
        return;
    }
    let out = dir.path().join("out");
    let plan = prepare(&options(&shell, &out, None, &dir.path().join("m.json"))).unwrap();
    check_box_glue(&plan.plugin_dir);
    let box_dir = shell.join("plugin/p2p/box_250mhz");
    let theirs = std::fs::read_to_string(box_dir.join("box_250mhz_address_map.v")).unwrap();
    let ours = std::fs::read_to_string(plan.plugin_dir.join("box_250mhz/box_250mhz_address_map.v"))
        .unwrap();
    assert!(!ours.contains("Ingress of port 0") && !ours.contains("0x40000 - 0xFFFFF"));
    // Past the header, the only lines that differ are the two localparams.
    let body = |t: &str| -> Vec<String> {
        let at = t.find("`timescale").unwrap();
        t[at..].lines().map(str::to_string).collect()
    };
    let (a, b) = (body(&theirs), body(&ours));
    assert_eq!(a.len(), b.len());
    let changed: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert!(changed
        .iter()
        .all(|(x, _)| x.contains("C_SIZE") || x.contains("C_DUMMY_BASE_ADDR")));
    let inst = std::fs::read_to_string(box_dir.join("box_250mhz_address_map_inst.vh")).unwrap();
    assert_eq!(
        inst,
        std::fs::read_to_string(
            plan.plugin_dir
                .join("box_250mhz/box_250mhz_address_map_inst.vh")
        )
        .unwrap(),
        "copied unchanged"
    );
}

// ----------------------------------------------------- running (fake) Vivado

/// A stand-in `vivado` that prints weft's markers for the build, probe and
/// program scripts. `wns` is the setup slack it reports; `idcode` the IDCODE
/// of the one device on its JTAG chain.
fn fake_vivado(dir: &Path, name: &str, wns: &str, idcode: &str) -> PathBuf {
    let p = dir.join(name);
    let script = format!(
        r#"#!/bin/bash
while [ $# -gt 0 ]; do case "$1" in -source) src="$2"; shift;; -log) log="$2"; shift;; esac; shift; done
get() {{ sed -n "s/^set $1 *{{\(.*\)}}\$/\1/p" "$src" | head -1; }}
echo "fake vivado: $src" > "$log"
case "$(basename "$src")" in
  weft_build.tcl)
    echo "WEFT-VERSION v2099.1"
    echo "WEFT-STAGE project"; echo "WEFT-STAGE synth"
    echo "[Tue Jan  2 10:00:00 2024] Launched synth_1..."
    echo "[Tue Jan  2 10:30:00 2024] synth_1 finished"
    echo "WEFT-STAGE impl"; echo "WEFT-STAGE timing"
    echo "WEFT-TIMING WNS={wns} WHS=0.010"
    case "{wns}" in -*) echo "WEFT-ERROR timing not met: WNS {wns} ns, WHS 0.010 ns"; exit 1;; esac
    echo "WEFT-STAGE bitstream"; printf 'fake bitstream' > "$(get weft_bit)"
    echo "WEFT-STAGE cfgmem"; printf ':0400000501002000D4\n:00000001FF\n' > "$(get weft_mcs)"
    echo "WEFT-STAGE done"; exit 0;;
  probe.tcl)
    echo "WEFT-STAGE connect"; echo "WEFT-STAGE scan"
    echo "WEFT-HW-DEVICE name=xcu280_u55c_0 part=xcu280 idcode={idcode} target=localhost:3121/xilinx_tcf/Xilinx/X1"
    echo "WEFT-STAGE done"; exit 0;;
  program.tcl)
    cp "$src" "$(dirname "$src")/program.tcl.seen"
    echo "WEFT-STAGE connect"; echo "WEFT-STAGE program"; echo "WEFT-STAGE done"; exit 0;;
esac
echo "ERROR: unexpected script $src"; exit 1
"#
    );
    std::fs::write(&p, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The one test that sets WEFT_VIVADO in this process (CLI tests pass it to
/// the child explicitly).
#[test]
fn build_runs_vivado_follows_stages_fails_on_timing_and_records_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let shell = dir.path().join("shell");
    fake_shell(&shell, P2P_250MHZ);
    let manifest = dir.path().join("manifest.json");
    std::fs::write(&manifest, "{\"images\": []}\n").unwrap();

    // No top: refused before anything is written, even with Vivado.
    let mut opts = options(&shell, &dir.path().join("none"), None, &manifest);
    opts.dry_run = false;
    let e = build(&opts, |_| {}).unwrap_err();
    assert!(matches!(e, BitstreamError::TopMissing));
    assert_eq!(
        e.to_string(),
        "no OpenNIC top was given to the build; only --dry-run writes the flow files (with a stub wrapper) for inspection"
    );
    assert!(!dir.path().join("none").exists());

    // A top but no Vivado: the files are written, then a clear refusal.
    std::env::set_var("WEFT_VIVADO", dir.path().join("no-such-vivado"));
    let mut opts = options(
        &shell,
        &dir.path().join("novivado"),
        Some(fake_top()),
        &manifest,
    );
    opts.dry_run = false;
    let e = build(&opts, |_| {}).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, BitstreamError::ToolMissing { .. }), "{msg}");
    assert!(
        msg.contains("no-such-vivado is not on PATH") && msg.contains("weft_build.tcl"),
        "{msg}"
    );
    assert!(dir.path().join("novivado/weft_build.tcl").is_file());
    let w = std::fs::read_to_string(dir.path().join("novivado/plugin/weft_250mhz.sv")).unwrap();
    assert!(w.contains("weft_top weft_top_inst ("));

    // Timing violated: the build fails, the manifest is unchanged.
    std::env::set_var(
        "WEFT_VIVADO",
        fake_vivado(dir.path(), "vivado-slow", "-0.250", "04B7D093"),
    );
    let mut opts = options(
        &shell,
        &dir.path().join("slow"),
        Some(fake_top()),
        &manifest,
    );
    opts.dry_run = false;
    let mut stages = vec![];
    let e = build(&opts, |ev| {
        if let weft::bitstream::vivado::Event::Stage(s) = ev {
            stages.push(s.clone())
        }
    })
    .unwrap_err();
    assert!(
        matches!(e, BitstreamError::Timing { wns, .. } if wns == -0.25),
        "{e}"
    );
    assert!(e
        .to_string()
        .contains("timing not met: worst setup slack -0.25 ns"));
    assert_eq!(stages, ["project", "synth", "impl", "timing"]);
    assert!(Manifest::load(&manifest).unwrap().images.is_empty());

    // Timing met: the image goes into the manifest with its hashes.
    std::env::set_var(
        "WEFT_VIVADO",
        fake_vivado(dir.path(), "vivado-ok", "0.125", "04B7D093"),
    );
    let mut opts = options(&shell, &dir.path().join("ok"), Some(fake_top()), &manifest);
    opts.dry_run = false;
    let mut events = vec![];
    let Built::Image(plan, image) = build(&opts, |ev| events.push(ev.clone())).unwrap() else {
        panic!("no image")
    };
    assert!(!plan.stub);
    assert!(
        events.contains(&weft::bitstream::vivado::Event::RunLaunched(
            "synth_1".into()
        ))
    );
    assert_eq!(image.board, "u55c");
    assert_eq!(image.top, "weft_top");
    assert_eq!(
        image.tools.get("vivado").map(String::as_str),
        Some("v2099.1")
    );
    assert_eq!(image.user_image_offset, "0x01002000");
    assert_eq!(
        image.bit.sha256,
        weft::bitstream::sha256_file(&plan.bit).unwrap()
    );
    assert_eq!(image.map_version, weft::bitstream::manifest::map_version());
    let m = Manifest::load(&manifest).unwrap();
    assert_eq!(m.images, vec![*image]);
    std::env::remove_var("WEFT_VIVADO");
}

// ------------------------------------------------------------------ the CLI

/// A `bitstreams/` directory with the real board files and an empty
/// manifest, for CLI runs that must not touch the source tree.
fn scratch_bitstreams(dir: &Path) -> PathBuf {
    let b = dir.join("bitstreams");
    std::fs::create_dir_all(b.join("boards")).unwrap();
    for e in std::fs::read_dir(repo_bitstreams().join("boards")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), b.join("boards").join(e.file_name())).unwrap();
    }
    std::fs::write(b.join("manifest.json"), "{\"images\": []}\n").unwrap();
    b
}

fn weft(args: &[&str], bitstreams: &Path, vivado: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .env("WEFT_BITSTREAMS_DIR", bitstreams)
        .env("WEFT_BUILD_DIR", bitstreams.join("build"))
        .env("WEFT_VIVADO", vivado)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn cli_build_writes_the_top_refuses_without_vivado_and_dry_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bs = scratch_bitstreams(dir.path());
    let shell = dir.path().join("shell");
    fake_shell(&shell, P2P_250MHZ);
    let nov = dir.path().join("no-vivado");
    let sh = shell.to_str().unwrap();
    let out = dir.path().join("out");
    let o = weft(
        &[
            "bitstream",
            "build",
            "--board",
            "u55c",
            "--shell-dir",
            sh,
            "--out",
            out.to_str().unwrap(),
        ],
        &bs,
        &nov,
    );
    let (_, err) = text(&o);
    assert!(!o.status.success());
    assert!(err.to_lowercase().contains("vivado"), "{err}");
    let top = std::fs::read_to_string(out.join("plugin/verilog/weft_top.v")).unwrap();
    assert!(top.contains("module weft_top"));
    let out = dir.path().join("dry");
    let o = weft(
        &[
            "bitstream",
            "build",
            "--board",
            "u55c",
            "--shell-dir",
            sh,
            "--dry-run",
            "--out",
            out.to_str().unwrap(),
        ],
        &bs,
        &nov,
    );
    let (stdout, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        stdout.contains("dry run for u55c") && stdout.contains("-mode batch"),
        "{stdout}"
    );
    assert!(stdout.contains("top: weft_top"), "{stdout}");
    assert!(
        stdout.contains("registers on the card: BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)"),
        "{stdout}"
    );
    let w = std::fs::read_to_string(out.join("plugin/weft_250mhz.sv")).unwrap();
    assert!(w.contains("weft_top weft_top_inst (") && !w.contains("STUB"));
    let o = weft(
        &[
            "bitstream",
            "build",
            "--board",
            "u7",
            "--shell-dir",
            sh,
            "--dry-run",
        ],
        &bs,
        &nov,
    );
    assert!(text(&o).1.contains("no board \"u7\""));
}

/// The real top inside the generated wrapper, linted together: the port
/// list of `weft_top` is exactly what the box wrapper connects.
#[test]
fn the_wrapper_and_weft_top_lint_clean_together() {
    let build = weft::bitstream::top::build_info(weft_regs::board::U55C);
    let top = weft::bitstream::top::opennic_top(&build);
    let ports = opennic::parse_module_ports(P2P_250MHZ, "p2p_250mhz").unwrap();
    let w = opennic::wrapper(&ports, Some(&top));
    if !have_verilator() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let wf = dir.path().join("weft_250mhz.sv");
    std::fs::write(&wf, &w).unwrap();
    let tf = dir.path().join("weft_top.v");
    std::fs::write(&tf, &top.files[0].text).unwrap();
    let waivers = dir.path().join("waivers.vlt");
    std::fs::write(&waivers, weft_hdl::lint::WAIVERS).unwrap();
    let o = Command::new("verilator")
        .args(["--lint-only", "-Wall", "--top-module", "weft_250mhz"])
        .arg(&waivers)
        .arg(&wf)
        .arg(&tf)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "verilator lint:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn cli_list_shows_the_empty_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let bs = scratch_bitstreams(dir.path());
    let o = weft(&["bitstream", "list"], &bs, &dir.path().join("nv"));
    assert!(o.status.success());
    assert!(text(&o).0.contains("no images built"));
    let o = weft(
        &["bitstream", "list", "--json"],
        &bs,
        &dir.path().join("nv"),
    );
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    assert_eq!(v, serde_json::json!({"images": []}));
    std::fs::write(
        bs.join("manifest.json"),
        "{\"images\": [{\"board\": \"u55c\"}]}",
    )
    .unwrap();
    let o = weft(&["bitstream", "list"], &bs, &dir.path().join("nv"));
    let err = text(&o).1;
    assert!(
        !o.status.success() && err.contains("manifest.json:1:") && err.contains("missing field"),
        "{err}"
    );
}

/// An Intel HEX file writing 4 bytes at `addr`.
fn mcs_at(addr: u64) -> String {
    let rec = |kind: u8, a: u16, data: &[u8]| {
        let mut b = vec![data.len() as u8, (a >> 8) as u8, a as u8, kind];
        b.extend(data);
        let sum = b.iter().fold(0u8, |x, y| x.wrapping_add(*y));
        b.push(sum.wrapping_neg());
        format!(
            ":{}\n",
            b.iter().map(|x| format!("{x:02X}")).collect::<String>()
        )
    };
    rec(4, 0, &((addr >> 16) as u16).to_be_bytes())
        + &rec(0, addr as u16, &[1, 2, 3, 4])
        + &rec(1, 0, &[])
}

/// A `.bit` whose header names `part`.
fn bit_for(part: &str) -> Vec<u8> {
    let mut v = vec![
        0x00, 0x09, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x0f, 0xf0, 0x00, 0x00, 0x01,
    ];
    for (k, val) in [
        (b'a', "weft_top"),
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
fn cli_flash_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let bs = scratch_bitstreams(dir.path());
    let nov = dir.path().join("no-vivado");
    let golden = dir.path().join("golden.mcs");
    std::fs::write(&golden, mcs_at(0x0000_0000)).unwrap();
    let user = dir.path().join("user.mcs");
    std::fs::write(&user, mcs_at(0x0100_2000)).unwrap();
    let bit = dir.path().join("u55c.bit");
    std::fs::write(&bit, bit_for("xcu55c-fsvh2892-2L-e")).unwrap();
    let bit250 = dir.path().join("u250.bit");
    std::fs::write(&bit250, bit_for("xcu250-figd2104-2L-e")).unwrap();
    let p = |x: &Path| x.to_str().unwrap().to_string();

    // The golden image is never written, not even with --force.
    for extra in [&[][..], &["--force", "--yes"][..]] {
        let mut args = vec!["bitstream", "flash", "--board", "u55c", "--flash"];
        let g = p(&golden);
        args.extend(["--image", &g]);
        args.extend(extra);
        let o = weft(&args, &bs, &nov);
        let err = text(&o).1;
        assert!(!o.status.success());
        assert!(
            err.contains(
                "below the user-image offset 0x01002000: the golden image is never written"
            ),
            "{err}"
        );
    }
    // --jtag or --flash is required; a .mcs does not go over JTAG.
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--image",
            &p(&user),
        ],
        &bs,
        &nov,
    );
    assert!(!o.status.success() && text(&o).1.contains("--jtag"));
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--jtag",
            "--image",
            &p(&user),
        ],
        &bs,
        &nov,
    );
    assert!(text(&o).1.contains("--jtag loads a .bit"), "{}", text(&o).1);
    // A bitstream for another part is refused unless --force.
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--jtag",
            "--image",
            &p(&bit250),
        ],
        &bs,
        &nov,
    );
    let err = text(&o).1;
    assert!(
        err.contains("built for part xcu250-figd2104-2L-e") && err.contains("--force overrides"),
        "{err}"
    );
    // No Vivado: refused, nothing written.
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--jtag",
            "--image",
            &p(&bit),
        ],
        &bs,
        &nov,
    );
    let err = text(&o).1;
    assert!(
        err.contains("no-vivado is not on PATH")
            && err.contains("hardware manager")
            && err.contains("nothing was written"),
        "{err}"
    );

    // A chain whose FPGA is not a U55C: refused unless --force.
    let wrong = fake_vivado(dir.path(), "vivado-u250", "0.1", "04B57093");
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--jtag",
            "--image",
            &p(&bit),
            "--yes",
        ],
        &bs,
        &wrong,
    );
    let err = text(&o).1;
    assert!(
        err.contains("no device with board u55c's IDCODE 0x04b7d093")
            && err.contains("xcu280_u55c_0 (0x04b57093)"),
        "{err}"
    );
    // The right FPGA, but asked on a non-terminal without --yes.
    let right = fake_vivado(dir.path(), "vivado-u55c", "0.1", "14B7D093");
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--jtag",
            "--image",
            &p(&bit),
        ],
        &bs,
        &right,
    );
    let err = text(&o).1;
    assert!(
        err.contains("not asking on a non-terminal: pass --yes")
            && err.contains("nothing was written"),
        "{err}"
    );
    assert!(!bs.join("build/u55c/flash/program.tcl").exists());
    // With --yes it programs, then says how to rescan.
    let o = weft(
        &[
            "bitstream",
            "flash",
            "--board",
            "u55c",
            "--flash",
            "--image",
            &p(&user),
            "--yes",
        ],
        &bs,
        &right,
    );
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("from 0x01002000 up") && out.contains("cold boot") && out.contains("rescan"),
        "{out}"
    );
    assert!(err.contains("not in the manifest"), "{err}");
    let seen = std::fs::read_to_string(bs.join("build/u55c/flash/program.tcl.seen")).unwrap();
    assert!(seen.contains("weft_assert_above_golden $weft_mcs $weft_user_offset"));
    assert!(seen.contains("set weft_check_idcode  1"));
}

#[test]
fn program_tcl_guards_the_golden_image_and_checks_the_idcode() {
    let b = u55c();
    let dev = HwDevice {
        target: "localhost:3121/xilinx_tcf/Xilinx/X1".into(),
        name: "xcu280_u55c_0".into(),
        part: "xcu280".into(),
        idcode: 0x14B7_D093,
    };
    let render = |target, force: bool| {
        ProgramTcl {
            board: &b,
            target,
            image: Path::new("/img/weft_u55c.bit"),
            kind: flash::ImageKind::Bit,
            mcs_out: Path::new("/work/weft_u55c_flash.mcs"),
            hw_server: "localhost:3121",
            device: &dev,
            check_idcode: !force,
        }
        .render()
    };
    let f = render(Target::Flash, false);
    for needle in [
        "set weft_user_offset   0x01002000",
        "set weft_golden_end    0x01002000",
        "if {$weft_user_offset < $weft_golden_end}",
        "set weft_idcode        0x04B7D093",
        "set weft_idcode_mask   0x0FFFFFFF",
        "set weft_check_idcode  1",
        "-loadbit \"up $weft_user_offset $weft_image\"",
        "weft_assert_above_golden $weft_mcs $weft_user_offset",
        "get_cfgmem_parts $weft_flash_part",
        "set weft_flash_part    {mt25qu01g-spi-x1_x2_x4}",
        "PROGRAM.ADDRESS_RANGE {use_file}",
        "program_hw_cfgmem -hw_cfgmem $cfg",
        "IDCODE_HEX",
    ] {
        assert!(f.contains(needle), "flash Tcl lacks {needle:?}");
    }
    // The golden-image assertion comes before any write.
    let guard = f.find("weft_assert_above_golden $weft_mcs").unwrap();
    assert!(guard < f.find("program_hw_cfgmem").unwrap());
    assert!(guard < f.find("create_hw_cfgmem").unwrap());
    let j = render(Target::Jtag, true);
    assert!(
        j.contains("set_property PROGRAM.FILE $weft_image $d")
            && j.contains("program_hw_devices $d")
    );
    assert!(j.contains("set weft_check_idcode  0") && !j.contains("program_hw_cfgmem"));
    let probe = flash::probe_tcl("localhost:3121");
    assert!(
        probe.contains("WEFT-HW-DEVICE name=")
            && probe.contains("get_hw_devices")
            && !probe.contains("program_hw")
    );
}

#[test]
fn device_choice_follows_the_idcode() {
    let b = u55c();
    let d = |name: &str, idcode| HwDevice {
        target: "t".into(),
        name: name.into(),
        part: String::new(),
        idcode,
    };
    let (got, warn) = flash::choose_device(
        &b,
        &[d("arm_dap_0", 0x4BA0_0477), d("xcu280_u55c_0", 0x14B7_D093)],
        false,
    )
    .unwrap();
    assert_eq!(got.name, "xcu280_u55c_0");
    assert!(warn.is_none());
    let e = flash::choose_device(&b, &[d("xcu250_0", 0x04B5_7093)], false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--force overrides"), "{e}");
    let (got, warn) = flash::choose_device(&b, &[d("xcu250_0", 0x04B5_7093)], true).unwrap();
    assert_eq!(got.name, "xcu250_0");
    assert!(warn.is_some());
    let e = flash::choose_device(&b, &[], true).unwrap_err().to_string();
    assert!(e.contains("no device on the JTAG chain"), "{e}");
}

#[test]
fn the_running_card_is_compared_with_the_manifest() {
    let image: weft::bitstream::manifest::Image = serde_json::from_value(serde_json::json!({
        "board": "u55c", "part": "xcu55c-fsvh2892-2L-e",
        "git_hash": "0123456789abcdef0123456789abcdef01234567", "map_version": "1.1",
        "build_date": "2025-01-01T00:00:00Z", "tools": {"vivado": "v2099.1"}, "top": "weft_top",
        "bit": {"path": "a.bit", "sha256": "a".repeat(64)}, "mcs": {"path": "a.mcs", "sha256": "b".repeat(64)},
        "user_image_offset": "0x01002000", "wns_ns": 0.1, "whs_ns": 0.01
    }))
    .unwrap();
    let card = |board: &str, git: &str| weft::probe::Card {
        map_version: "1.1".into(),
        board: board.into(),
        git_hash: git.into(),
        blocks: vec![],
    };
    assert!(flash::card_differences(&card("u55c", "01234567"), &image).is_empty());
    let d = flash::card_differences(&card("u250", "deadbeef"), &image);
    assert_eq!(d.len(), 2, "{d:?}");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("0000:3b:00.0");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(f.join("vendor"), "0x10ee\n").unwrap();
    std::fs::write(f.join("device"), "0x903f\n").unwrap();
    assert_eq!(
        flash::find_pci_functions(dir.path(), 0x10ee, 0x903f),
        ["0000:3b:00.0"]
    );
    assert!(
        flash::rescan_hint(Target::Jtag, &["0000:3b:00.0".into()]).contains("0000:3b:00.0/remove")
    );
}

// ---------------------------------------------------------------- estimate

#[test]
fn estimate_shares_and_json_shape() {
    let b = u55c();
    let u = Usage {
        luts: 13_036,
        lutram_luts: 4,
        ffs: 26_073,
        bram36: 20.5,
        uram: 96,
        dsp: 90,
        carry: 7,
        cells: 40_000,
    };
    let s = estimate::share(&u, &b);
    assert!((s.luts - 100.0 * 13_040.0 / 1_303_680.0).abs() < 1e-9);
    assert!((s.ffs - 100.0 * 26_073.0 / 2_607_360.0).abs() < 1e-9);
    assert!((s.bram36 - 100.0 * 20.5 / 2016.0).abs() < 1e-9);
    assert!((s.uram - 10.0).abs() < 1e-9);
    assert!((s.dsp - 100.0 * 90.0 / 9024.0).abs() < 1e-9);
    let block = |n: &str| {
        estimate::block_estimate(
            n,
            &format!("weft_{n}"),
            estimate::engine_note(n),
            u.clone(),
            &b,
            false,
        )
    };
    let e = estimate::Estimate {
        board: b.name.clone(),
        part: b.part.clone(),
        capacity: b.resources.clone(),
        unconfirmed_capacity: vec!["resources.luts".into()],
        tool: "Yosys 0.23 synth_xilinx -family xcup".into(),
        top: "weft_top".into(),
        total: block("top"),
        engines: estimate::ENGINES.iter().map(|n| block(n)).collect(),
    };
    let v = serde_json::to_value(&e).unwrap();
    for k in [
        "board",
        "part",
        "capacity",
        "unconfirmed_capacity",
        "tool",
        "top",
        "total",
        "engines",
    ] {
        assert!(v.get(k).is_some(), "{k}");
    }
    assert_eq!(v["top"], "weft_top");
    assert_eq!(
        v["engines"].as_array().unwrap().len(),
        estimate::ENGINES.len()
    );
    for k in [
        "luts",
        "lutram_luts",
        "ffs",
        "bram36",
        "uram",
        "dsp",
        "carry",
        "cells",
    ] {
        assert!(v["total"]["usage"].get(k).is_some(), "usage.{k}");
    }
    for k in ["luts", "ffs", "bram36", "uram", "dsp"] {
        assert!(v["total"]["share"][k].is_f64(), "share.{k}");
    }
    let back: estimate::Estimate = serde_json::from_value(v).unwrap();
    assert_eq!(back, e);
    let r = estimate::render(&e);
    assert!(r.contains("top: weft_top"), "{r}");
    assert!(r.contains("1303680?"), "unconfirmed capacity marked: {r}");
    assert!(r.contains("grad_agg") && r.contains("gradient aggregation, 16 lanes x 256 slots"));
}

#[test]
fn yosys_estimates_the_csr_block() {
    if !weft_sim::yosys::available() {
        assert!(
            std::env::var("WEFT_REQUIRE_VERILATOR").as_deref() != Ok("1"),
            "WEFT_REQUIRE_VERILATOR=1 but yosys is not installed"
        );
        eprintln!("skipping: yosys not installed");
        return;
    }
    let build = weft_hdl::this_build();
    let csr = weft::bitstream::top::blocks(&build)
        .into_iter()
        .find(|(n, _)| n == "csr")
        .unwrap()
        .1;
    let r = weft_sim::yosys::synth_xilinx(
        &csr.text,
        "weft_csr",
        &weft_sim::yosys::SynthOptions::default(),
    )
    .unwrap();
    let u = Usage::from(&r);
    assert!(u.luts > 0 && u.ffs > 0, "{u:?}");
    let s = estimate::share(&u, &u55c());
    assert!(
        s.luts > 0.0 && s.luts < 1.0,
        "the CSR block is a small share: {s:?}"
    );
}

// ------------------------------------------------------------------ FuseSoC

#[test]
fn fusesoc_core_has_the_capi2_shape() {
    let files = vec!["weft_csr.v".to_string(), "weft_card.v".to_string()];
    let core = fusesoc::Core {
        version: "0.1.0",
        git_hash: "abc",
        files: &files,
        waivers: "weft_waivers.vlt",
        toplevel: "weft_card",
    };
    let text = core.render();
    assert!(text.starts_with("CAPI=2:\n"));
    assert!(text.contains("name: weft:weft:rtl:0.1.0"));
    assert!(text.contains("      - weft_card.v\n"));
    assert!(text.contains("file_type: vlt\n    files:\n      - weft_waivers.vlt"));
    assert!(text.contains("default_tool: verilator") && text.contains("mode: lint-only"));
    // Parse it as YAML when Python's yaml module is here.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("weft.core");
    std::fs::write(&f, &text).unwrap();
    let py = "import json,sys,yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))";
    match Command::new("python3").args(["-c", py]).arg(&f).output() {
        Ok(o) if o.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert!(v.get("CAPI=2").is_some());
            assert_eq!(v["name"], "weft:weft:rtl:0.1.0");
            assert_eq!(v["filesets"]["rtl"]["files"], serde_json::json!(files));
            assert_eq!(v["filesets"]["rtl"]["file_type"], "verilogSource");
            assert_eq!(v["filesets"]["waivers"]["files"][0], "weft_waivers.vlt");
            assert_eq!(v["targets"]["default"]["toplevel"], "weft_card");
            let lint = &v["targets"]["lint"];
            assert_eq!(lint["default_tool"], "verilator");
            assert_eq!(lint["filesets"], serde_json::json!(["rtl", "waivers"]));
            assert_eq!(lint["tools"]["verilator"]["mode"], "lint-only");
            assert_eq!(
                lint["tools"]["verilator"]["verilator_options"],
                serde_json::json!(["-Wall"])
            );
        }
        _ => eprintln!("python3 with yaml not available: checked the text only"),
    }
}

#[test]
fn cli_fusesoc_writes_the_core_beside_the_verilog() {
    let dir = tempfile::tempdir().unwrap();
    let bs = scratch_bitstreams(dir.path());
    let out = dir.path().join("core");
    let o = weft(
        &[
            "bitstream",
            "fusesoc",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ],
        &bs,
        &dir.path().join("nv"),
    );
    assert!(o.status.success(), "{}", text(&o).1);
    let v: serde_json::Value = serde_json::from_str(&text(&o).0).unwrap();
    let core = std::fs::read_to_string(out.join("weft.core")).unwrap();
    for f in v["files"].as_array().unwrap() {
        let f = f.as_str().unwrap();
        assert!(out.join(f).is_file(), "{f}");
        assert!(core.contains(&format!("      - {f}\n")), "{f}");
    }
    assert!(out.join("weft_waivers.vlt").is_file());
    assert!(core.contains("toplevel: weft_top"));
}
