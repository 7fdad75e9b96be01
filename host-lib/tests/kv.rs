//! Key-value aggregation end to end: the host daemon against the card
//! (`weft_top` in Verilator, or the top's reference model, `sim:model`)
//! through a lossy network on the wire, and `weft agg kv` on the command
//! line.

mod common;
use common::weft;

use proptest::prelude::*;
use std::collections::HashMap;
use weft::kv::{self, input::Tuple, JobOptions, KvError};
use weft::Card;
use weft_driver::RegisterAccess;
use weft_model::net::NetConfig;

fn model() -> Card {
    Card::open("sim:model").unwrap()
}

fn exact(tuples: &[(usize, u32, i32)]) -> HashMap<u32, i64> {
    let mut m = HashMap::new();
    for &(_, k, v) in tuples {
        *m.entry(k).or_insert(0i64) += v as i64;
    }
    m
}

fn net(loss: f64, dup: f64, reorder: f64) -> NetConfig {
    NetConfig {
        loss,
        dup,
        reorder,
        delay: 100,
        jitter: 30,
        reorder_delay: 600,
    }
}

fn value() -> impl Strategy<Value = i32> {
    prop_oneof![
        2 => Just(i32::MIN),
        2 => Just(i32::MAX),
        3 => -5i32..5,
        3 => any::<i32>(),
    ]
}

/// Keys: a handful (every lane full of the same keys), a few hundred, or
/// anywhere in `u32`.
fn keys() -> impl Strategy<Value = (u32, u32)> {
    prop_oneof![Just((0u32, 3u32)), Just((1000, 1400)), Just((0, u32::MAX))]
}

fn tuples(workers: usize) -> impl Strategy<Value = Vec<(usize, u32, i32)>> {
    keys().prop_flat_map(move |(lo, hi)| {
        prop::collection::vec((0..workers, lo..=hi, value()), 0..600)
    })
}

fn case() -> impl Strategy<Value = (usize, Vec<(usize, u32, i32)>)> {
    (1usize..=5).prop_flat_map(|w| (Just(w), tuples(w)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(64), ..ProptestConfig::default() })]

    /// Exact under any loss, duplication and reordering, replacement on or
    /// off, and packets from one tuple to a full MTU, on the card's model
    /// (the RTL runs the same jobs below and in tests/kv_e2e.rs).
    #[test]
    fn sums_are_exact_under_a_hostile_network(
        (workers, ts) in case(),
        loss in 0.0f64..0.3,
        dup in 0.0f64..0.3,
        reorder in 0.0f64..0.3,
        seed in any::<u64>(),
        replace in any::<bool>(),
        tuples_per_packet in prop_oneof![Just(1usize), 2usize..40, Just(182)],
    ) {
        let card = model();
        let opts = JobOptions {
            workers,
            replace,
            max_packet_bytes: 16 + 8 * tuples_per_packet,
            net: net(loss, dup, reorder),
            seed,
            ..JobOptions::default()
        };
        let out = kv::run(&card, opts, ts.iter().copied()).unwrap();
        prop_assert_eq!(&out.sums, &exact(&ts));
        let st = &out.stats;
        prop_assert_eq!(st.tuples, ts.len() as u64);
        prop_assert_eq!(st.tuples_in, ts.len() as u64, "every tuple aggregated once");
        prop_assert_eq!(st.accepted_packets, st.packets);
        prop_assert_eq!((st.malformed, st.window_drops), (0, 0));
        prop_assert_eq!(st.host_records, st.spill_records + st.flush_records);
        prop_assert_eq!(st.spill_records, st.spilled);
        prop_assert!(st.nic_resident_fraction <= 1.0);
    }
}

#[test]
fn many_keys_spill_and_stay_exact() {
    // 40000 keys for the card's 4096 slots.
    let ts: Vec<_> = (0..60_000u32)
        .map(|i| {
            (
                (i % 3) as usize,
                i.wrapping_mul(2_654_435_761) % 40_000,
                i as i32 - 7,
            )
        })
        .collect();
    for replace in [true, false] {
        let card = model();
        let opts = JobOptions {
            workers: 3,
            replace,
            net: net(0.05, 0.05, 0.05),
            ..JobOptions::default()
        };
        let out = kv::run(&card, opts, ts.iter().copied()).unwrap();
        assert_eq!(out.sums, exact(&ts));
        assert!(out.stats.spilled > 0 && out.stats.retransmissions > 0);
        assert_eq!(out.stats.evicted > 0, replace);
    }
}

#[test]
fn a_clean_network_runs_near_line_rate() {
    let ts: Vec<_> = (0..50_000u32)
        .map(|i| ((i % 4) as usize, i % 64, 1))
        .collect();
    let mut cards = vec![model()];
    if weft_sim::simulator::verilator_usable() {
        cards.push(Card::open("sim:verilator").unwrap());
    }
    for card in cards {
        let opts = JobOptions {
            workers: 4,
            ..JobOptions::default()
        };
        let out = kv::run(&card, opts, ts.iter().copied()).unwrap();
        assert_eq!(out.sums, exact(&ts));
        let st = &out.stats;
        // Nothing is resent; the only copies the card drops are each
        // flow's second copy of its last packet.
        assert_eq!(st.retransmissions, 0);
        assert_eq!(st.duplicates_dropped, st.tail_copies);
        assert_eq!(st.tail_copies, 4, "one per flow");
        assert_eq!(st.nic_resident_fraction, 1.0, "64 keys fit");
        // 182 tuples in a 24-beat frame (1514 bytes): 7.58 tuples a beat.
        assert!(st.tuples_per_beat > 7.5, "{}: {st:?}", card.name());
        // The job's cycles hold its fixed costs as well as its beats: the
        // card's pipeline on the way in (a frame check, a slice, the
        // three-stage classifier, two more slices: docs/timing.md) and
        // the acks' way out, the flush through the register crossing and
        // its records. For these 276 packets that is about a fifth of
        // the run (5.93 tuples a cycle on Verilator against 7.5 a beat).
        assert!(st.tuples_per_cycle > 5.85, "{}: {st:?}", card.name());
    }
}

/// Two fresh cards run the same lossy job to the same figures, field for
/// field, through the async front as the CLI drives it: a job's course in
/// device time depends on its input and seed alone, not on how fast the
/// producer runs (the front takes input when the daemon asks for it).
#[test]
fn the_same_job_twice_gives_the_same_figures() {
    let ts: Vec<_> = (0..30_000u32)
        .map(|i| ((i % 4) as usize, i.wrapping_mul(2_654_435_761) % 9_000, 1))
        .collect();
    let mut names = vec!["sim:model"];
    if weft_sim::simulator::verilator_usable() {
        names.push("sim:verilator");
    }
    for name in names {
        let figures = || {
            let card = Card::open(name).unwrap();
            let opts = JobOptions {
                workers: 4,
                net: net(0.01, 0.01, 0.01),
                ..JobOptions::default()
            };
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            let out = rt.block_on(async {
                let job = kv::KvJob::open(card, opts).await.unwrap();
                for chunk in ts.chunks(997) {
                    let mut per = vec![vec![]; 4];
                    for &(w, k, v) in chunk {
                        per[w].push((k, v));
                    }
                    for (w, batch) in per.into_iter().enumerate() {
                        job.push(w, batch).await.unwrap();
                    }
                }
                job.finish().await.unwrap()
            });
            assert_eq!(out.sums, exact(&ts));
            assert!(out.stats.spilled > 0 && out.stats.retransmissions > 0);
            serde_json::to_string(&out.stats).unwrap()
        };
        let first = figures();
        assert_eq!(first, figures(), "{name}");
    }
}

/// Loss recovery: at 1% loss, duplication and reordering most repairs are
/// fast (RACK), not timeouts, and the job keeps most of its lossless rate
/// (before RACK and the delay window it kept about a third).
#[test]
fn losses_are_repaired_fast_and_goodput_holds() {
    let g = weft::bench::goodput(&"sim:model".parse().unwrap(), 60_000, 3).unwrap();
    let (clean, lossy) = (&g[0], &g[1]);
    assert_eq!((clean.retransmissions, clean.timeouts), (0, 0), "{clean:?}");
    assert!(lossy.ratio > 0.8, "{lossy:?}");
    assert!(lossy.timeouts * 4 < lossy.retransmissions, "{lossy:?}");
}

#[test]
fn the_async_front_takes_workers_in_parallel_and_the_card_is_reused() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let card = Card::open("sim").unwrap();
        let name = card.name();
        let opts = JobOptions {
            workers: 3,
            net: net(0.1, 0.1, 0.1),
            ..JobOptions::default()
        };
        let job = kv::KvJob::open(card, opts.clone()).await.unwrap();
        let mut tasks = vec![];
        for w in 0..3 {
            let h = job.worker(w).unwrap();
            tasks.push(tokio::spawn(async move {
                for b in 0..20i32 {
                    let batch = (0..100).map(|i| (i as u32, b + w as i32)).collect();
                    h.push(batch).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert!(matches!(
            job.worker(3),
            Err(KvError::Worker { worker: 3, .. })
        ));
        let done = job.finish().await.unwrap();
        assert_eq!(done.stats.card, name);
        assert_eq!(done.sums.len(), 100);
        // Per key: sum over w in 0..3 and b in 0..20 of (b + w) = 3*190 + 20*3.
        assert!(done.sums.values().all(|&s| s == 630));

        let job = kv::KvJob::open(done.card, JobOptions { job: 2, ..opts })
            .await
            .unwrap();
        job.push(1, vec![(5, -1), (5, -2)]).await.unwrap();
        let again = job.finish().await.unwrap();
        assert_eq!(again.sums, HashMap::from([(5, -3)]));
    });
}

#[test]
fn an_abandoned_job_leaves_nothing_behind() {
    let card = model();
    let mut d = kv::Daemon::open(&card, JobOptions::default()).unwrap();
    for i in 0..1000 {
        d.push(0, i % 10, 1).unwrap();
    }
    for _ in 0..20 {
        d.step(&card).unwrap();
    }
    drop(d);
    // The abandoned job's tuples sit in the card's slots.
    let aggregated = weft_regs::kv::COUNTERS[2 * 2];
    assert_eq!(aggregated.name, "AGGREGATED_LO");
    assert!(card.regs().read_reg(&aggregated).unwrap() > 0);
    let out = kv::run(
        &card,
        JobOptions {
            job: 2,
            ..JobOptions::default()
        },
        [(0, 3, 4)],
    )
    .unwrap();
    assert_eq!(out.sums, HashMap::from([(3, 4)]));
}

#[test]
fn a_dead_network_stalls_with_a_clear_error() {
    let card = model();
    let opts = JobOptions {
        net: net(0.99, 0.0, 0.0),
        max_tries: 3,
        ..JobOptions::default()
    };
    let e = kv::run(&card, opts, (0..500).map(|i| (0, i, 1))).unwrap_err();
    assert!(matches!(e, KvError::Stalled { tries: 3, .. }), "{e}");
    let bad = JobOptions {
        workers: 17,
        ..JobOptions::default()
    };
    let e = kv::run(&card, bad, []).unwrap_err().to_string();
    assert!(e.contains("16 senders"), "{e}");
}

// ---- the command line ----

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn cli_refuses_a_bad_line_by_number_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.txt");
    for (text, line, what) in [
        ("0 1 2\n# c\n\n0 1 x\n", 4, "value"),
        ("0 1 2\n2 1 2\n", 2, "out of range"),
        ("0 99999999999 2\n", 1, "u32"),
        ("0 1\n", 1, "found 2 field"),
    ] {
        let f = file(&dir, "in.txt", text);
        let (ok, stdout, err) = weft(&[
            "agg",
            "kv",
            "--input",
            &f,
            "--workers",
            "2",
            "--output",
            out.to_str().unwrap(),
        ]);
        assert!(!ok);
        assert!(stdout.is_empty(), "{stdout}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains(&format!("line {line}: ")) && err.contains(what),
            "{err}"
        );
        assert!(!out.exists(), "nothing ran");
    }
    let f = file(&dir, "in.txt", "0 1 2\n");
    for (args, what) in [
        (vec!["--workers", "17"], "1..=16"),
        (vec!["--loss", "1"], "loss probability"),
        // No such card on this machine: the error names it.
        (vec!["--device", "vfio:0000:3b:00.0"], "0000:3b:00.0"),
    ] {
        let mut a = vec!["agg", "kv", "--input", &f];
        a.extend(args);
        let (ok, _, err) = weft(&a);
        assert!(!ok && err.contains(what), "{err}");
    }
    let (ok, _, err) = weft(&["agg", "kv", "--input", &f, "--slots", "16"]);
    assert!(
        !ok && err.contains("--slots"),
        "the card's table is its own: {err}"
    );
    let (ok, _, err) = weft(&["agg", "kv", "--input", "/nonexistent/tuples"]);
    assert!(!ok && err.contains("/nonexistent/tuples"), "{err}");
}

#[test]
fn cli_prints_sorted_sums_or_json() {
    let dir = tempfile::tempdir().unwrap();
    let f = file(
        &dir,
        "in.txt",
        "# worker key value\n0 7 1\n1 3 -2147483648\n1 3 -2147483648\n0 7 2147483647\n2 4294967295 5\n\n",
    );
    let want = "3 -4294967296\n7 2147483648\n4294967295 5\n";
    let (ok, out, err) = weft(&["agg", "kv", "--input", &f, "--check"]);
    assert!(ok, "{err}");
    assert_eq!(out, want);
    assert!(
        err.contains("card sim:") && err.contains("check: all 3 keys"),
        "{err}"
    );

    let o = dir.path().join("sums.txt");
    let (ok, out, _) = weft(&[
        "agg",
        "kv",
        "--input",
        &f,
        "--output",
        o.to_str().unwrap(),
        "--loss",
        "0.2",
        "--dup",
        "0.2",
        "--reorder",
        "0.2",
        "--seed",
        "5",
        "--device",
        "sim:model",
    ]);
    assert!(ok && out.is_empty());
    assert_eq!(std::fs::read_to_string(&o).unwrap(), want);

    if !weft_sim::simulator::verilator_usable() {
        return;
    }
    let (ok, out, err) = weft(&[
        "agg",
        "kv",
        "--input",
        &f,
        "--json",
        "--device",
        "sim:verilator",
        "--workers",
        "4",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v.as_object().unwrap().len(), 2);
    assert_eq!(
        v["sums"],
        serde_json::json!([[3, -4294967296i64], [7, 2147483648i64], [4294967295u32, 5]])
    );
    let st = &v["stats"];
    for field in [
        "tuples",
        "packets",
        "retransmissions",
        "duplicates_dropped",
        "malformed",
        "aggregated_on_nic",
        "spilled",
        "evicted",
        "cycles",
        "beats",
    ] {
        assert!(st[field].is_u64(), "{field}: {st}");
    }
    for field in ["nic_resident_fraction", "tuples_per_cycle"] {
        assert!(st[field].is_f64(), "{field}: {st}");
    }
    assert_eq!(st["tuples"], 5);
    assert_eq!(st["workers"], 4);
    assert_eq!(st["card"], "sim:verilator");
    assert_eq!(st["device"], "sim:verilator");
}

#[test]
fn cli_generates_a_stream_and_checks_it() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("z.txt");
    let (ok, _, err) = weft(&[
        "agg",
        "gen",
        "--zipf",
        "1.2",
        "--keys",
        "500",
        "--tuples",
        "3000",
        "--workers",
        "3",
        "--output",
        g.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let text = std::fs::read(&g).unwrap();
    let ts: Vec<Tuple> = kv::input::parse(&text, 3).unwrap();
    assert_eq!(ts.len(), 3000);
    let (ok, out, err) = weft(&[
        "agg",
        "kv",
        "--input",
        g.to_str().unwrap(),
        "--check",
        "--json",
        "--dup",
        "0.1",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["stats"]["workers"], 3);
    assert_eq!(v["stats"]["tuples"], 3000);
    let (ok, _, err) = weft(&[
        "agg",
        "kv",
        "--generate",
        "zipf:0.99:50000:20000",
        "--device",
        "sim:model",
        "--check",
        "--no-replace",
    ]);
    assert!(
        ok && err.contains("replacement off") && err.contains("check: all"),
        "{err}"
    );
}
