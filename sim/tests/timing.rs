//! The timing guard: every block's register-to-register estimate
//! (`weft_sim::timing`, `docs/timing.md`) against what it may be.
//!
//! Two rules. A block that fits what is known to close 250 MHz (the
//! calibration's ceiling: no path slower than 4.13 ns or deeper than 6 LUT
//! levels) must keep fitting: a change that adds a level beyond it fails
//! here. A block that does not fit yet (issue 48's debt) may not get
//! deeper or slower than its figure below, which only ever comes down.
//! The blocks whose synthesis takes minutes (the engines) run under
//! `WEFT_TIMING_SLOW=1`; the whole top is `weft hdl timing` (about 8
//! minutes of yosys), a slow figure of `docs/timing.md`.

use weft_sim::timing::{estimate_verilog, TimingOptions, TimingReport};
use weft_sim::yosys::{self, SynthOptions};

/// Blocks that fit the ceiling today, with the depth they have (LUT
/// levels), which may not grow past the ceiling.
const FITTING: [(&str, u32); 13] = [
    ("slice", 1),
    ("classify", 6),
    ("deframe", 2),
    ("pkt_mux2", 1),
    ("pkt_mux4", 2),
    ("framer", 3),
    ("grad_fanout", 3),
    ("memops_port", 2),
    ("net_regs", 3),
    ("csr", 3),
    ("axil_cdc", 1),
    ("async_fifo", 3),
    ("sync_bit", 0),
];

/// Blocks beyond the ceiling today: (block, LUT levels, ns, slow). Their
/// figures may only come down; lower them here when a change does.
const DEBT: [(&str, u32, f64, bool); 6] = [
    ("frame_check", 7, 3.90, false),
    ("rec_pack", 7, 4.07, false),
    ("kv_agg", 16, 8.82, true),
    ("grad_agg", 8, 6.54, true),
    ("memops", 10, 6.84, true),
    ("avm", 24, 11.44, true),
];

fn slow() -> bool {
    std::env::var("WEFT_TIMING_SLOW").as_deref() == Ok("1")
}

fn estimate(block: &str) -> TimingReport {
    let all = weft_hdl::emit::all(&weft_hdl::build_info::stamp_free());
    let e = all
        .iter()
        .find(|e| e.name == block)
        .unwrap_or_else(|| panic!("no block {block}"));
    let module = weft_hdl::emit::module_name(e.name);
    // A block alone has one clock port of its own name; every domain is
    // budgeted at the stream clock's 250 MHz.
    let opts = TimingOptions {
        clocks: vec![weft_sim::timing::Clock::new("clock", 250.0)],
        ..TimingOptions::default()
    };
    estimate_verilog(
        &e.verilog,
        &module,
        &SynthOptions::default(),
        false,
        &[],
        &opts,
    )
    .unwrap_or_else(|e| panic!("{block}: {e}"))
    .0
}

/// The deepest and slowest path of any domain of the block.
fn worst(r: &TimingReport) -> (u32, f64) {
    r.domains.iter().fold((0, 0.0), |(l, t), d| {
        (
            l.max(d.max_luts),
            if d.worst_ns > t { d.worst_ns } else { t },
        )
    })
}

fn describe(r: &TimingReport) -> String {
    r.domains
        .iter()
        .filter_map(|d| d.worst.first())
        .map(|p| {
            format!(
                "{} LUT, {} ns: {} <- {}",
                p.luts, p.delay_ns, p.endpoint, p.start
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn blocks_that_fit_250_mhz_keep_fitting() {
    if !yosys::usable_or_skip("blocks_that_fit_250_mhz_keep_fitting") {
        return;
    }
    let ceiling = TimingOptions::default().ceiling;
    let mut bad = vec![];
    for (block, luts) in FITTING {
        let r = estimate(block);
        let (l, t) = worst(&r);
        let over: usize = r.domains.iter().map(|d| d.over_ceiling).sum();
        if over > 0 || l > ceiling.luts || t > ceiling.ns {
            bad.push(format!(
                "{block}: {over} endpoints beyond the ceiling ({} ns, {} LUT levels); worst {}",
                ceiling.ns,
                ceiling.luts,
                describe(&r)
            ));
        } else if l > luts {
            bad.push(format!(
                "{block}: {l} LUT levels where it had {luts} (still within the ceiling: raise its entry in FITTING if that is meant); worst {}",
                describe(&r)
            ));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn blocks_beyond_250_mhz_get_no_deeper() {
    if !yosys::usable_or_skip("blocks_beyond_250_mhz_get_no_deeper") {
        return;
    }
    let mut bad = vec![];
    for (block, luts, ns, is_slow) in DEBT {
        if is_slow && !slow() {
            eprintln!("note: {block} skipped (minutes of yosys): set WEFT_TIMING_SLOW=1");
            continue;
        }
        let r = estimate(block);
        let (l, t) = worst(&r);
        if l > luts || t > ns + 0.005 {
            bad.push(format!(
                "{block}: {l} LUT levels, {t} ns, beyond its figure ({luts}, {ns} ns); worst {}",
                describe(&r)
            ));
        } else if l < luts || t < ns - 0.005 {
            eprintln!(
                "note: {block} is down to {l} LUT levels, {t} ns (from {luts}, {ns}): lower its entry in DEBT"
            );
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
