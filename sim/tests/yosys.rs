//! The yosys resource-estimate runner: its `stat` parser on captured reports,
//! and a real synthesis of the CSR block.
//!
//! The synthesis test is skipped (with a note) when yosys is not on `PATH`,
//! unless `WEFT_REQUIRE_VERILATOR=1` (CI installs yosys with Verilator), in
//! which case it fails.

use std::time::{Duration, Instant};
use weft_sim::yosys::{self, Resources, SynthOptions, YosysError};

/// `stat` of `weft_csr` after `synth_xilinx -family xcup -flatten` (yosys 0.23).
const CSR_FLAT: &str = "
3. Printing statistics.

=== weft_csr ===

   Number of wires:                364
   Number of wire bits:           2038
   Number of public wires:         117
   Number of public wire bits:    1378
   Number of memories:               0
   Number of memory bits:            0
   Number of processes:              0
   Number of cells:                523
     BUFG                            1
     CARRY4                         16
     FDRE                          163
     FDSE                            3
     INV                             3
     LUT2                           20
     LUT3                           37
     LUT4                           30
     LUT5                           53
     LUT6                          109
     MUXF7                          81
     MUXF8                           7
";

/// `stat` of `weft_kv_agg` (8 lanes x 512 slots) after `synth_xilinx -family
/// xcup -flatten` (yosys 0.23): block RAM and distributed RAM.
const KV_AGG_FLAT: &str = "
3. Printing statistics.

=== weft_kv_agg ===

   Number of wires:               7354
   Number of wire bits:          70443
   Number of public wires:        2258
   Number of public wire bits:   52431
   Number of memories:               0
   Number of memory bits:            0
   Number of processes:              0
   Number of cells:              15954
     BUFG                            1
     CARRY4                        304
     FDRE                         5567
     INV                            77
     LUT1                          522
     LUT2                         1464
     LUT3                         1358
     LUT4                         1301
     LUT5                          576
     LUT6                         2965
     MUXF7                        1150
     MUXF8                         439
     MUXF9                         150
     RAM64M8                        64
     RAMB18E2                       16
";

/// `stat -top weft_csr` of `weft_csr` synthesized without `-flatten` (yosys
/// 0.23), shortened to the top module, one submodule and the hierarchy
/// totals.
const CSR_HIER: &str = "
3. Printing statistics.

=== weft_csr ===

   Number of wires:                220
   Number of wire bits:           1497
   Number of public wires:          74
   Number of public wire bits:     793
   Number of memories:               0
   Number of memory bits:            0
   Number of processes:              0
   Number of cells:                356
     BUFG                            1
     CARRY4                         16
     INV                             3
     LUT1                           32
     LUT2                           42
     LUT3                           76
     LUT4                            3
     LUT5                           34
     LUT6                          104
     MUXF7                          32
     weft_csr$b_resp                 1
     weft_csr$scratch                1

=== weft_csr$b_resp ===

   Number of wires:                  3
   Number of wire bits:              5
   Number of public wires:           3
   Number of public wire bits:       5
   Number of memories:               0
   Number of memory bits:            0
   Number of processes:              0
   Number of cells:                  2
     FDRE                            2

=== design hierarchy ===

   weft_csr                          1
     weft_csr$b_resp                 1
     weft_csr$scratch                1
       weft_csr$scratch$dff          1

   Number of wires:                292
   Number of wire bits:           2130
   Number of public wires:         116
   Number of public wire bits:    1347
   Number of memories:               0
   Number of memory bits:            0
   Number of processes:              0
   Number of cells:                574
     BUFG                            1
     CARRY4                         16
     FDRE                          167
     INV                             3
     LUT1                           32
     LUT2                           47
     LUT3                           82
     LUT4                           11
     LUT5                           41
     LUT6                          124
     MUXF7                          47
     MUXF8                           3
";

/// A made-up report in the same format, with every kind of cell the summary
/// counts.
const SYNTHETIC: &str = "
=== t ===

   Number of cells:                 23
     CARRY4                          1
     CARRY8                          2
     DSP48E2                         3
     FDCE                            1
     FDPE                            1
     FDRE                            1
     FDSE                            1
     LDCE                            1
     LUT6                            2
     RAM32M16                        1
     RAMB18E2                        3
     RAMB36E2                        2
     SRLC32E                         1
     URAM288                         3
";

#[test]
fn parses_flat_report() {
    let r = yosys::parse_stat(CSR_FLAT, "weft_csr").unwrap();
    assert_eq!(r.luts, 20 + 37 + 30 + 53 + 109);
    assert_eq!(r.ffs, 166);
    assert_eq!(r.carry, 16);
    assert_eq!(r.bram36, 0.0);
    assert_eq!((r.uram, r.dsp), (0, 0));
    assert_eq!(r.cells, 523);
    assert_eq!(r.by_type.len(), 12);
    assert_eq!(r.count("MUXF7"), 81);
    assert_eq!(r.count("MUXF8"), 7);
    assert_eq!(r.count("RAMB36E2"), 0);
}

#[test]
fn parses_rams() {
    let r = yosys::parse_stat(KV_AGG_FLAT, "weft_kv_agg").unwrap();
    assert_eq!(r.luts, 522 + 1464 + 1358 + 1301 + 576 + 2965);
    assert_eq!(r.ffs, 5567);
    assert_eq!(r.bram36, 8.0);
    assert_eq!(r.carry, 304);
    assert_eq!(r.cells, 15954);
    assert_eq!(r.count("RAM64M8"), 64);
    assert_eq!(r.lutram_luts(), 64 * 8);
}

#[test]
fn hierarchical_report_uses_totals() {
    let r = yosys::parse_stat(CSR_HIER, "weft_csr").unwrap();
    assert_eq!(r.cells, 574);
    assert_eq!(r.ffs, 167);
    assert_eq!(r.luts, 32 + 47 + 82 + 11 + 41 + 124);
    assert_eq!(r.carry, 16);
    assert!(
        !r.by_type.keys().any(|k| k.contains('$')),
        "{:?}",
        r.by_type
    );
}

#[test]
fn every_counted_kind() {
    let r = yosys::parse_stat(SYNTHETIC, "t").unwrap();
    assert_eq!(
        r,
        Resources {
            luts: 2,
            ffs: 4,
            bram36: 3.5,
            uram: 3,
            dsp: 3,
            carry: 3,
            cells: 23,
            by_type: r.by_type.clone(),
        }
    );
    assert_eq!(r.by_type.len(), 14);
    assert_eq!(
        r.count("LDCE"),
        1,
        "latches are kept in the map, not counted as FFs"
    );
    assert_eq!(r.lutram_luts(), 8 + 1);
}

#[test]
fn malformed_reports_are_errors() {
    for (report, top) in [
        ("", "t"),
        ("nothing like a report", "t"),
        ("=== t ===\n   Number of wires: 3\n", "t"),
        ("=== t ===\n   Number of cells: many\n", "t"),
        ("=== t ===\n   Number of cells: 2\n     LUT6   two\n", "t"),
        (
            "=== a ===\n Number of cells: 1\n=== b ===\n Number of cells: 1\n",
            "t",
        ),
    ] {
        match yosys::parse_stat(report, top) {
            Err(YosysError::Parse { .. }) => {}
            other => panic!("{report:?}: expected a parse error, got {other:?}"),
        }
    }
}

#[test]
fn csr_block_synthesizes() {
    if !yosys::usable_or_skip("csr_block_synthesizes") {
        return;
    }
    let blocks = weft_hdl::emit::all(&weft_hdl::this_build());
    let csr = blocks
        .iter()
        .find(|b| b.name == "csr")
        .expect("the csr block is emitted");
    let top = weft_hdl::emit::module_name("csr");
    let start = Instant::now();
    let r = yosys::synth_xilinx(&csr.verilog, &top, &SynthOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{top}: {} LUTs, {} FFs, {} carry, {} cells in {:.1}s",
        r.luts,
        r.ffs,
        r.carry,
        r.cells,
        start.elapsed().as_secs_f64()
    );
    assert!(r.luts > 0, "{r:?}");
    // The CSR holds roughly 200 bits of state (cycle counter, its latch,
    // scratch, read data, handshakes).
    assert!((100..=400).contains(&r.ffs), "implausible FF count: {r:?}");
    assert_eq!(r.bram36, 0.0, "{r:?}");
    assert_eq!(r.dsp, 0, "{r:?}");
    assert!(r.cells >= r.luts + r.ffs, "{r:?}");
}

#[test]
fn synthesis_errors_carry_yosys_output() {
    if !yosys::usable_or_skip("synthesis_errors_carry_yosys_output") {
        return;
    }
    match yosys::synth_xilinx(
        "module m(input a; endmodule\n",
        "m",
        &SynthOptions::default(),
    ) {
        Err(YosysError::Failed { output, .. }) => {
            assert!(output.contains("ERROR"), "{output}");
        }
        other => panic!("expected a yosys failure, got {other:?}"),
    }
    match yosys::synth_xilinx("module m; endmodule\n", "m n", &SynthOptions::default()) {
        Err(YosysError::InvalidName { .. }) => {}
        other => panic!("expected an invalid-name error, got {other:?}"),
    }
}

#[test]
fn timeout_kills_yosys() {
    if !yosys::usable_or_skip("timeout_kills_yosys") {
        return;
    }
    let opts = SynthOptions {
        timeout: Duration::from_millis(1),
        ..SynthOptions::default()
    };
    let start = Instant::now();
    match yosys::synth_xilinx(
        "module m(input a, output b); assign b = a; endmodule\n",
        "m",
        &opts,
    ) {
        Err(YosysError::Timeout { .. }) => {}
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(10));
}
