//! The benchmark code paths, at small sizes: the 512-bit engine takes one
//! beat every cycle with no input stall on every stream (a property of the
//! RTL block, counted in cycles), and replacement keeps more of a skewed
//! stream on the card (its model, `sim:model`) than no replacement.

use weft::bench::{line_rate, residency, BenchOptions};
use weft_sim::simulator::Simulator;

#[test]
fn line_rate_is_one_beat_per_cycle_without_stalls() {
    let opts = BenchOptions {
        simulator: Simulator::RustHdl,
        packets: 3,
        tuples: 0,
        card: "sim:model".parse().unwrap(),
        progress: None,
    };
    for l in line_rate(&opts).unwrap() {
        assert!(l.model_agrees, "{}", l.stream);
        assert_eq!(l.input_stalls, 0, "{}", l.stream);
        assert_eq!(l.beats, 3 * 23);
        assert_eq!(l.cycles, l.beats, "{}: one beat per cycle", l.stream);
        assert!((l.tuples_per_cycle - 182.0 / 23.0).abs() < 1e-9);
    }
}

#[test]
fn replacement_keeps_hot_keys_on_the_card() {
    let opts = BenchOptions {
        simulator: Simulator::RustHdl,
        packets: 0,
        tuples: 400_000,
        card: "sim:model".parse().unwrap(),
        progress: None,
    };
    let r = residency(&opts).unwrap();
    assert_eq!(r.len(), 8);
    for pair in r.chunks(2) {
        let (on, off) = (&pair[0], &pair[1]);
        assert!(on.replace && !off.replace);
        assert!(
            on.nic_resident_fraction > off.nic_resident_fraction,
            "zipf {} table {:.3}: {} vs {}",
            on.zipf,
            on.table_fraction,
            on.nic_resident_fraction,
            off.nic_resident_fraction
        );
    }
}

#[test]
fn goodput_runs_one_half_and_says_whether_the_target_is_met() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args([
            "bench",
            "goodput",
            "--device",
            "sim:model",
            "--seeds",
            "1",
            "--tuples",
            "5000",
            "--only",
            "kv",
            "--json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["grad"],
        serde_json::json!([]),
        "--only kv runs no gradient job"
    );
    let kv = v["kv"].as_array().unwrap();
    assert_eq!(kv.len(), 3);
    for p in kv {
        let (ratio, target) = (p["ratio"].as_f64().unwrap(), p["target"].as_f64().unwrap());
        assert_eq!(p["meets_target"], serde_json::json!(ratio >= target), "{p}");
    }
}

#[test]
fn grad_bench_refuses_a_jitter_outside_0_to_1() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(["bench", "grad", "--device", "sim:model", "--jitter", "1.5"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--jitter 1.5: must be 0 to 1"), "{err}");
}

/// `weft bench sim` at a small size: the model's stream runner (one and
/// two evaluations a step, the trained model and the same build
/// untrained, the registers unfolded), the harness stepping the model, rust-hdl's own
/// Verilog and rust-hdl's simulator send the same frames at the same
/// cycles under the same mixed traffic (the whole top, cycle by cycle: the
/// comb split, the register fold and the runner change nothing a port
/// can see), and the
/// profiled Verilator run accounts for its time.
#[test]
fn sim_bench_runs_agree_frame_for_frame() {
    if !weft_sim::simulator::verilator_usable() {
        return;
    }
    let r = weft::bench::sim::run(&weft::bench::sim::SimBenchOptions {
        cycles: 3000,
        rust_hdl_cycles: 300,
        seed: 2,
        repeat: 2,
        only: vec![],
        idle: false,
        progress: None,
    })
    .unwrap();
    assert!(r.agree, "the RTL runs sent different frames");
    assert_eq!(r.compared_cycles, 300);
    assert_eq!(r.verilator_compared_cycles, 3000);
    let names: Vec<&str> = r.runs.iter().map(|x| x.simulation.as_str()).collect();
    for want in [
        "verilator",
        "verilator, untrained",
        "verilator, registers unfolded",
        "verilator, two evaluations a step",
        "verilator, stepped",
        "verilator, rust-hdl's Verilog",
        "rust-hdl",
        "model",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }
    for run in &r.runs {
        assert!(
            run.frames_out > 0 && run.bytes_in_per_cycle > 0.0,
            "{run:?}"
        );
    }
    let v = r.runs.iter().find(|x| x.simulation == "verilator").unwrap();
    let p = v.profile.expect("the Verilator run is profiled");
    assert!(
        p.model > 0.0 && p.ports > 0.0 && p.model + p.ports <= 1.0,
        "{p:?}"
    );
}
