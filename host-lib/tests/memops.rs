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

#[test]
fn run_prints_completions_telemetry_and_digests() {
    let (ok, out, err) = weft(&[
        "memops",
        "run",
        "--program",
        &format!("{EX}offload.toml"),
        "--trace",
        &format!("{EX}offload.trace"),
    ]);
    assert!(ok, "{err}");
    // Two workers' writes became atomic adds at port 2: 5 + 7.
    assert!(out.contains("0 2 ok 000000000000000c"), "{out}");
    assert!(out.contains("3 1 denied"), "{out}");
    assert!(
        out.contains("blocked 1") && out.contains("mirrored 4"),
        "{out}"
    );
    assert!(out.lines().filter(|l| l.starts_with("port")).count() == 4);
    assert!(err.contains("model: agrees"), "{err}");
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
