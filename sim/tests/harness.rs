//! The harness catches what it exists for: a width bug of the `(x + 1) == 0`
//! kind (RTL-FLOW-NOTES.md) makes rust-hdl and Verilator disagree, and the
//! disagreement is reported with its cycle and port. Also: every emitted
//! block lints clean under the documented waivers, and those waivers do not
//! hide width warnings.
//!
//! `WrapCheck` below is a test fixture with a deliberately seeded bug, not
//! product code.

use rust_hdl::prelude::*;
use weft_model::{Driver, PortSet};
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{check_pair, run_all, Factory};

#[derive(LogicBlock, Default)]
struct WrapCheck {
    clock: Signal<In, Clock>,
    x: Signal<In, Bits<8>>,
    wrapped: Signal<Out, Bit>,
}

impl Logic for WrapCheck {
    #[hdl_gen]
    fn update(&mut self) {
        // The seeded bug: the sum is compared untyped. rust-hdl wraps it at
        // 8 bits; Verilog evaluates it at 32 bits.
        self.wrapped.next = (self.x.val() + 1) == 0;
    }
}

weft_model::ports! {
    struct FixIn { x: u8 = 8 }
}
weft_model::ports! {
    struct FixOut { wrapped: bool = 1 }
}

weft_sim::hdl_ports!(WrapCheck, FixIn { x }, FixOut { wrapped });

/// Sweeps x over 0..=255, one value per cycle.
struct Sweep(u16);
impl Driver<FixIn, FixOut> for Sweep {
    fn drive(&mut self) -> FixIn {
        FixIn { x: self.0 as u8 }
    }
    fn observe(&mut self, _: &FixIn, _: &FixOut) {
        self.0 += 1;
    }
    fn finished(&self) -> bool {
        self.0 > 255
    }
}

fn fixture() -> WrapCheck {
    let mut w = WrapCheck::default();
    w.connect_all();
    w
}

#[test]
fn width_bug_is_reported_as_a_simulator_mismatch() {
    if !verilator_usable() {
        return;
    }
    let opts = SimulatorOptions::default();
    let hdl = Prepared::new(Simulator::RustHdl, "wrap_check", fixture, false, &opts).unwrap();
    let vl = Prepared::new(Simulator::Verilator, "wrap_check", fixture, false, &opts).unwrap();
    let w: Vec<Factory<'_, FixIn, FixOut>> = vec![
        Box::new(|| -> BoxDut<FixIn, FixOut> { hdl.instantiate(None).unwrap() }),
        Box::new(|| -> BoxDut<FixIn, FixOut> { vl.instantiate(None).unwrap() }),
    ];
    let runs = run_all(&w, &|| Sweep(0), 1000).unwrap();
    let err = check_pair(&w, &runs, 0, 1, &|| Sweep(0)).unwrap_err();
    assert!(
        err.contains("diverge at step 255") && err.contains("port wrapped"),
        "{err}"
    );
    assert!(
        err.contains("rust-hdl=[1]") && err.contains("verilator=[0]"),
        "{err}"
    );
}

#[test]
fn every_block_lints_clean_with_documented_waivers() {
    if !verilator_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let waivers = dir.path().join("waivers.vlt");
    std::fs::write(&waivers, weft_hdl::lint::WAIVERS).unwrap();
    for e in weft_hdl::emit::all(&weft_hdl::this_build()) {
        let module = weft_hdl::emit::module_name(e.name);
        let rep = weft_sim::verilator::lint(&e.verilog, &module, Some(&waivers)).unwrap();
        assert!(rep.clean, "{module}: {:#?}", rep.warnings);
    }
    // The waivers are narrow: the fixture's width bug is still reported.
    let v = weft_hdl::emit::verilog_of(&fixture(), "weft_wrap_check");
    let rep = weft_sim::verilator::lint(&v, "weft_wrap_check", Some(&waivers)).unwrap();
    assert!(
        rep.warnings.iter().any(|w| w.contains("WIDTH")),
        "{:#?}",
        rep.warnings
    );
}

/// Icarus Verilog, an event-driven simulator as hardware engineers' own
/// flows use, compiles every emitted block without a warning (a
/// combinational block that reads no signal, for one, would never run
/// there). Skipped without `iverilog`, unless `WEFT_REQUIRE_VERILATOR=1`
/// (CI installs it with Verilator).
#[test]
fn every_block_compiles_in_icarus_without_warnings() {
    if std::process::Command::new("iverilog")
        .arg("-V")
        .output()
        .is_err()
    {
        assert!(
            !weft_sim::simulator::verilator_required(),
            "WEFT_REQUIRE_VERILATOR=1 but iverilog is not installed"
        );
        eprintln!("note: skipping the Icarus Verilog check: iverilog not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let build = weft_hdl::build_info::top_build();
    let mut blocks: Vec<(String, String)> = weft_hdl::emit::all(&weft_hdl::this_build())
        .into_iter()
        .map(|e| (weft_hdl::emit::module_name(e.name), e.verilog))
        .collect();
    blocks.push((
        weft_hdl::emit::module_name("top"),
        weft_hdl::emit::top_verilog(&build),
    ));
    for (module, verilog) in blocks {
        let file = dir.path().join(format!("{module}.v"));
        std::fs::write(&file, verilog).unwrap();
        let out = std::process::Command::new("iverilog")
            .args(["-g2005", "-s", &module, "-o"])
            .arg(dir.path().join("out.vvp"))
            .arg(&file)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            out.status.success() && text.trim().is_empty(),
            "{module}: {text}"
        );
    }
}

#[test]
fn every_waiver_carries_its_reason() {
    let mut reason = false;
    for line in weft_hdl::lint::WAIVERS.lines().map(str::trim) {
        if line.starts_with("//") {
            reason = true;
        } else if line.starts_with("lint_off") {
            assert!(reason, "waiver without a reason above it: {line}");
            assert!(
                line.contains("-rule") && line.contains("-match"),
                "waiver too broad: {line}"
            );
        } else if line.is_empty() {
            // A reason covers the waivers right below it, up to a blank line.
            reason = false;
        }
    }
    assert_eq!(FixIn::total_words(), 1);
}
