//! The `weft` command line, end to end.

mod common;
use common::weft;

fn verilator() -> bool {
    weft_sim::simulator::verilator_usable()
}

#[test]
fn status_json_on_every_card() {
    let mut devs = vec!["sim", "sim:model"];
    if verilator() {
        devs.push("sim:verilator");
    }
    for d in devs {
        let (ok, out, err) = weft(&["status", "--device", d, "--json"]);
        assert!(ok, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        // What runs behind the spec: `sim` is Verilator or rust-hdl.
        let runs = v["device"].as_str().unwrap();
        assert!(
            runs == d || (d == "sim" && runs.starts_with("sim:")),
            "{runs}"
        );
        let map = format!(
            "{}.{}",
            weft_regs::MAP_VERSION_MAJOR,
            weft_regs::MAP_VERSION_MINOR
        );
        assert_eq!(v["map_version"], map.as_str());
        let hash = format!("{:08x}", weft_hdl::this_build().git_hash);
        assert_eq!(v["git_hash"], hash.as_str());
        assert_eq!(v["blocks"][1]["name"], "ctrl");
        // The one card has every engine.
        for b in v["blocks"].as_array().unwrap() {
            assert_eq!(b["present"], true, "{d}: {b}");
        }
        for f in ["kv_agg", "grad_agg", "avm", "memops", "net"] {
            assert!(
                v["features"].as_array().unwrap().iter().any(|x| x == f),
                "{d}: {f}"
            );
        }
    }
    let (ok, out, _) = weft(&["status"]);
    let map = format!(
        "map version  {}.{}",
        weft_regs::MAP_VERSION_MAJOR,
        weft_regs::MAP_VERSION_MINOR
    );
    assert!(ok && out.contains(&map), "{out}");
}

#[test]
fn bad_input_is_one_clear_line_and_a_failure() {
    let (ok, _, err) = weft(&["status", "--device", "pci:7"]);
    assert!(!ok);
    assert!(err.contains("unknown device kind"), "{err}");
    let (ok, _, err) = weft(&["status", "--device", "vfio:0000:3b:00.0"]);
    assert!(!ok);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // No such function on a machine without that card: one clear line.
    assert!(
        err.contains("0000:3b:00.0")
            && (err.contains("no PCI device")
                || err.contains("not bound to vfio-pci")
                || err.contains("IOMMU")),
        "{err}"
    );
}

#[test]
fn the_roles_refuse_bad_flags_in_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "kv",
                "send",
                "--card",
                "10.0.0.2",
                "--collector",
                "nope",
                "--id",
                "0",
                "--generate",
                "zipf:1:10:10",
            ],
            "--collector",
        ),
        (
            &[
                "kv",
                "send",
                "--card",
                "x.y",
                "--collector",
                "10.0.0.1:7000",
                "--id",
                "0",
                "--generate",
                "zipf:1:10:10",
            ],
            "--card",
        ),
        (
            &["kv", "collect", "--device", "sim:model", "--senders", "2"],
            "weft card serve",
        ),
        (
            &[
                "kv",
                "collect",
                "--device",
                "unix:/nonexistent/weft.sock",
                "--senders",
                "2",
            ],
            "weft card serve",
        ),
        (
            &[
                "grad",
                "fallback",
                "--device",
                "sim:model",
                "--workers",
                "2",
            ],
            "unix:PATH",
        ),
        (
            &[
                "grad",
                "worker",
                "--card",
                "10.0.0.2",
                "--fallback",
                "10.0.0.1",
                "--worker",
                "0",
                "--workers",
                "2",
            ],
            "--fallback",
        ),
        (
            &[
                "memops",
                "send",
                "--card",
                "10.0.0.2",
                "--trace",
                "/nonexistent.trace",
            ],
            "nonexistent.trace",
        ),
        (
            &[
                "card",
                "serve",
                "--device",
                "sim:model",
                "--wire",
                "eth0",
                "--host",
                "tap:h",
            ],
            "tap:NAME",
        ),
        (
            &[
                "card",
                "serve",
                "--device",
                "vfio:0000:3b:00.0",
                "--wire",
                "tap:w",
                "--host",
                "tap:h",
            ],
            "simulated card",
        ),
        (&["status", "--device", "onic:0000:3b:00.0"], "0000:3b:00.0"),
        // Nothing listens on this loopback port: no ack ever comes.
        (
            &[
                "kv",
                "send",
                "--card",
                "127.0.0.1:9",
                "--collector",
                "127.0.0.1:7000",
                "--id",
                "0",
                "--generate",
                "zipf:1:10:10",
                "--workers",
                "1",
                "--timeout",
                "0.5",
            ],
            "no ack from the card",
        ),
    ];
    for (args, needle) in cases {
        let (ok, _, err) = weft(args);
        assert!(!ok, "{args:?} succeeded");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

#[test]
fn regs_and_emit() {
    let (ok, out, _) = weft(&["regs", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["blocks"][0]["name"], "id");
    assert_eq!(
        v["opennic"]["location"],
        "BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)"
    );
    assert_eq!(v["opennic"]["offset"], 0x10_0000);
    let (ok, out, _) = weft(&["regs"]);
    assert!(ok && out.contains("SCRATCH"));
    assert!(
        out.contains("on an OpenNIC card: BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)"),
        "{out}"
    );
    assert!(!out.contains("BAR 0"), "{out}");

    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = weft(&["hdl", "emit", "--out", dir.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    let v = std::fs::read_to_string(dir.path().join("weft_csr.v")).unwrap();
    assert!(v.contains("module weft_csr("));
    assert!(dir.path().join("weft_waivers.vlt").exists());
}

#[test]
fn lint_and_verify() {
    if !verilator() {
        return;
    }
    let (ok, out, err) = weft(&["hdl", "lint"]);
    assert!(ok, "{out}{err}");
    assert!(out.contains("weft_csr: clean"));
    let (ok, out, err) = weft(&["verify", "--transactions", "300", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let map = format!(
        "{}.{}",
        weft_regs::MAP_VERSION_MAJOR,
        weft_regs::MAP_VERSION_MINOR
    );
    assert_eq!(v["status"]["map_version"], map.as_str());
    let v = &v["self_check"];
    assert_eq!(v["witnesses"].as_array().unwrap().len(), 3);
    let hashes: Vec<_> = v["witnesses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["hash"].clone())
        .collect();
    assert!(hashes.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn probe_and_bind_refuse_a_missing_device_clearly() {
    for args in [
        vec!["probe", "vfio:0000:3b:00.0"],
        vec!["probe", "0000:3b:00.0", "--json"],
        vec!["bind", "0000:3b:00.0", "--yes"],
    ] {
        let (ok, _, err) = weft(&args);
        assert!(!ok, "{args:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("no PCI device 0000:3b:00.0"), "{err}");
    }
    let (ok, _, err) = weft(&["probe", "vfio:3b:00.0"]);
    assert!(!ok && err.contains("PCI address must look like"), "{err}");
}
