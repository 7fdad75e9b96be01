//! `weft memops check|run`, end to end, on the shipped examples.

mod common;
use common::weft;

const EX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/memops/");

#[test]
fn check_accepts_and_rejects_with_a_reason() {
    let (ok, out, _) = weft(&["memops", "check", &format!("{EX}offload.toml")]);
    assert!(ok && out.contains("ok: 6 stage(s)"), "{out}");
    let (ok, out, err) = weft(&[
        "memops",
        "check",
        &format!("{EX}unsafe-remap.toml"),
        "--json",
    ]);
    assert!(!ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["ok"], false);
    assert_eq!(v["stage"], 0);
    assert_eq!(v["address"], "0x8000");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// `pool.trace` through the card's MemOps port into its AVM pool, on the
/// top's model and on `weft_top` in Verilator: the same completions,
/// telemetry and pool snapshot, every frame equal to the model's.
#[test]
fn run_on_the_card_prints_completions_telemetry_and_the_pool() {
    let mut devices = vec!["sim:model"];
    if weft_sim::simulator::verilator_usable() {
        devices.push("sim:verilator");
    }
    let mut outs = vec![];
    for d in devices {
        let (ok, out, err) = weft(&[
            "memops",
            "run",
            "--program",
            &format!("{EX}pool.toml"),
            "--trace",
            &format!("{EX}pool.trace"),
            "--device",
            d,
        ]);
        assert!(ok, "{d}: {err}");
        // The shared window on port 2 reads back what was written.
        assert!(out.contains("0 2 ok 0000000000000005"), "{out}");
        assert!(out.contains("1 2 ok 0000000000000007"), "{out}");
        // Requester 2 may not write port 0's first page; its read sees
        // requester 0's write.
        assert!(out.contains("2 1 denied"), "{out}");
        assert!(out.contains("2 3 ok 00000000deadbeef"), "{out}");
        // No route above 0x3ff; no atomics in the pool.
        assert!(
            out.contains("3 1 error") && out.contains("3 2 error"),
            "{out}"
        );
        assert!(
            out.contains("blocked 1") && out.contains("mirrored 2"),
            "{out}"
        );
        assert!(out.contains("port2             4"), "{out}");
        assert!(err.contains("model: agrees"), "{err}");
        // Everything but the pool's own clock is the same on every card.
        let same: Vec<&str> = out
            .lines()
            .filter(|l| !l.starts_with("pool snapshot"))
            .collect();
        outs.push(same.join("\n"));
    }
    for o in &outs[1..] {
        assert_eq!(o, &outs[0]);
    }
}

#[test]
fn bad_traces_name_the_line_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("bad.trace");
    std::fs::write(&t, "0 read 0x0 8 1\n\n# fine so far\n9 write 0x8 8 2 ff\n").unwrap();
    let (ok, out, err) = weft(&[
        "memops",
        "run",
        "--program",
        &format!("{EX}offload.toml"),
        "--trace",
        t.to_str().unwrap(),
    ]);
    assert!(!ok && out.is_empty());
    assert!(err.contains("line 4") && err.contains("src 9"), "{err}");
    std::fs::write(&t, "0 read 0x4 8 1\n").unwrap();
    let (ok, _, err) = weft(&[
        "memops",
        "run",
        "--program",
        &format!("{EX}offload.toml"),
        "--trace",
        t.to_str().unwrap(),
    ]);
    assert!(
        !ok && err.contains("line 1") && err.contains("8-byte word"),
        "{err}"
    );
}
