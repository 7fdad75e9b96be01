//! Gradient aggregation on the card: `weft::grad` sums are exact (negative
//! values, windows larger than the card's 256 slots that force the host
//! fallback, lossy networks with retransmission); the multi-job
//! scheduler's accounting adds up and its policies behave as they must by
//! construction; the same job gives the same sums on the top's model, on
//! `weft_top` in rust-hdl and in Verilator; JOBS.toml errors name the
//! field; the command line prints JSON and fails on bad input.

mod common;

use common::weft;
use weft::grad::{
    self, GradError, GradJob, JobOptions, JobsFile, PriorityPolicy, RunOptions, RunReport, Seeded,
};
use weft::spec::SimChoice;
use weft::{Card, DeviceSpec};

const MODEL: DeviceSpec = DeviceSpec::Sim(SimChoice::Model);
const CHUNK: usize = 64;

fn open(spec: &DeviceSpec) -> Card {
    Card::open_with(spec.clone(), &Default::default()).unwrap()
}

/// A small deterministic generator (no dependency on the library's).
fn lcg(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    move || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        x >> 33
    }
}

fn tensors(workers: usize, len: usize, seed: u64) -> Vec<Vec<f32>> {
    let mut r = lcg(seed);
    (0..workers)
        .map(|_| {
            (0..len)
                .map(|i| match i % 7 {
                    // Extremes of the range and exact negatives.
                    0 => -1000.0,
                    1 => 1000.0,
                    _ => (r() % 200_001) as f32 / 100.0 - 1000.0,
                })
                .collect()
        })
        .collect()
}

/// Run one job through `weft::grad` with `window` chunks in flight per
/// worker and check it against an `i64` reference computed here from the
/// same fixed-point conversion.
fn sum_exactly(window: u32, workers: u8, len: usize, loss: f64, seed: u64) -> RunReport {
    let scale = 1024.0;
    let card = open(&MODEL);
    let mut job = GradJob::open(
        card,
        JobOptions {
            workers,
            len,
            scale,
            loss,
            seed,
            window,
            timeout: 4000,
            ..JobOptions::default()
        },
    )
    .unwrap();
    let ts = tensors(workers as usize, len, seed);
    for (w, t) in ts.iter().enumerate() {
        job.submit(w, t).unwrap();
    }
    let out = job.finish().unwrap();
    let want: Vec<i64> = (0..len)
        .map(|i| {
            ts.iter()
                .map(|t| (t[i] as f64 * scale).round() as i64)
                .sum()
        })
        .collect();
    assert_eq!(out.fixed, want, "fixed-point sums");
    for (i, (&x, &w)) in out.tensor.iter().zip(&want).enumerate() {
        assert_eq!(x, (w as f64 / scale) as f32, "value {i}");
    }
    assert!(out.report.exact);
    let chunks = len.div_ceil(CHUNK) as u64;
    assert_eq!(out.report.on_card + out.report.by_host, chunks);
    out.report
}

#[test]
fn sums_are_exact_with_negatives_and_a_ragged_tail() {
    let r = sum_exactly(8, 3, 1000, 0.0, 1);
    assert_eq!(
        r.by_host, 0,
        "alone on a roomy card, everything completes on it"
    );
    assert_eq!(r.counters.duplicates, 0);
    let r = sum_exactly(8, 1, 130, 0.0, 2);
    assert_eq!(r.on_card, 3, "single-worker chunks complete on arrival");
}

#[test]
fn losses_are_retransmitted_and_copies_meet_the_bitmap() {
    // A window of 400 chunks on the card's 256 slots at 15% loss: every
    // loss is found (RACK from later completions, the probe at the tail)
    // and resent, the copies of workers whose packets had arrived are
    // dropped by the slot's bitmap, and every sum is exact. (Chunks stuck
    // long enough for a later chunk to claim their slot, and the host
    // fallback that then completes them, are covered with contended slots
    // in the multi-job test below.)
    let r = sum_exactly(400, 4, 64 * 600, 0.15, 3);
    let j = &r.jobs[0];
    assert!(j.lost > 0 && j.retransmissions > 0, "{j:?}");
    assert!(r.counters.duplicates > 0, "copies dropped by the bitmap");
    for seed in 4..8 {
        sum_exactly(300, 5, 64 * 320, 0.25, seed);
    }
}

#[test]
fn bad_tensors_are_refused_with_the_worker_and_index() {
    let card = open(&MODEL);
    let opts = JobOptions {
        workers: 4,
        len: 3,
        scale: 65536.0,
        ..JobOptions::default()
    };
    let mut job = GradJob::open(card, opts.clone()).unwrap();
    // 8192 x 65536 = 2^29 fits one worker but not the sum of four.
    let e = job.submit(2, &[0.0, 8192.0, 1.0]).unwrap_err();
    assert!(
        matches!(
            e,
            GradError::Overflow {
                worker: 2,
                index: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("4 workers"), "{e}");
    assert!(matches!(
        job.submit(0, &[f32::NAN, 0.0, 0.0]),
        Err(GradError::Overflow { index: 0, .. })
    ));
    assert!(matches!(
        job.submit(0, &[1.0, 2.0]),
        Err(GradError::Length {
            got: 2,
            want: 3,
            ..
        })
    ));
    assert!(matches!(
        job.submit(4, &[1.0, 2.0, 3.0]),
        Err(GradError::Worker { worker: 4, .. })
    ));
    assert!(matches!(
        job.submit_fixed(1, &[0, i32::MAX, 0]),
        Err(GradError::Overflow { index: 1, .. })
    ));
    job.submit(0, &[1.0, 2.0, 3.0]).unwrap();
    assert!(matches!(job.finish(), Err(GradError::Missing(1))));
    for bad in [
        JobOptions {
            workers: 33,
            ..opts.clone()
        },
        JobOptions {
            len: 0,
            ..opts.clone()
        },
        JobOptions {
            scale: 0.0,
            ..opts.clone()
        },
        JobOptions {
            loss: 1.0,
            ..opts.clone()
        },
    ] {
        assert!(GradJob::open(open(&MODEL), bad).is_err());
    }
}

/// Two workers sum one 64-value tensor each on `card`.
fn sum_of_two(card: Card, a: f32, b: f32) -> weft::grad::Summed {
    let mut job = GradJob::open(
        card,
        JobOptions {
            workers: 2,
            len: 64,
            ..JobOptions::default()
        },
    )
    .unwrap();
    job.submit(0, &[a; 64]).unwrap();
    job.submit(1, &[b; 64]).unwrap();
    job.finish().unwrap()
}

#[test]
fn a_card_is_reused_and_one_without_frames_is_refused() {
    let out = sum_of_two(open(&MODEL), 1.5, -0.5);
    assert_eq!(out.tensor, vec![1.0; 64]);
    // The same card again: its counters and table start afresh.
    let out = sum_of_two(out.card, 2.0, 0.25);
    assert_eq!(out.tensor, vec![2.25; 64]);
    assert_eq!(out.report.counters.packets, 2);
    // A card reached through its registers only (as a vfio: card is):
    // the job refuses, saying why.
    let regs_only = Card::from_parts(
        "vfio:0000:3b:00.0".parse().unwrap(),
        out.card.regs_arc(),
        None,
    );
    let mut job = GradJob::open(
        regs_only,
        JobOptions {
            workers: 1,
            len: 4,
            ..JobOptions::default()
        },
    )
    .unwrap();
    job.submit(0, &[1.0; 4]).unwrap();
    let e = job.finish().err().unwrap();
    assert!(
        matches!(&e, GradError::Unsupported(m) if m.contains("no frame path")),
        "{e}"
    );
}

const SMALL: &str = r#"
window = 8
jitter = 0.3
timeout = 6000
[[job]]
name = "chatty"
workers = 4
values = 3000
compute = 1500
iterations = 3
priority = 9
[[job]]
name = "thinker"
workers = 3
values = 2500
compute = 9000
iterations = 2
arrival = 400
priority = 2
[[job]]
name = "middle"
workers = 5
values = 1300
compute = 3000
iterations = 3
arrival = 900
"#;

fn small() -> JobsFile {
    grad::parse(SMALL, CHUNK).unwrap()
}

/// Three jobs whose windows (3 x 128 chunks) do not fit the card's 256
/// slots, with stragglers: slots are contended.
const CONTENDED: &str = r#"
window = 128
jitter = 0.3
timeout = 20000
[[job]]
name = "chatty"
workers = 4
values = 24000
compute = 1500
iterations = 3
priority = 9
[[job]]
name = "thinker"
workers = 3
values = 16000
compute = 40000
iterations = 2
arrival = 400
priority = 2
[[job]]
name = "middle"
workers = 5
values = 12000
compute = 8000
iterations = 3
arrival = 900
"#;

fn contended() -> JobsFile {
    grad::parse(CONTENDED, CHUNK).unwrap()
}

fn run_on(device: &DeviceSpec, file: &JobsFile, policy: PriorityPolicy, loss: f64) -> RunReport {
    run_net(device, file, policy, [loss, 0.0, 0.0])
}

/// A run on a network with `[loss, dup, reorder]`.
fn run_net(
    device: &DeviceSpec,
    file: &JobsFile,
    policy: PriorityPolicy,
    net: [f64; 3],
) -> RunReport {
    let card = open(device);
    let opts = RunOptions {
        policy,
        loss: net[0],
        dup: net[1],
        reorder: net[2],
        seed: 7,
    };
    grad::run(&card, file, &Seeded(7), &opts).unwrap()
}

/// What must hold of every run, whatever the policy.
fn accounting(file: &JobsFile, r: &RunReport) {
    assert!(r.exact, "{:?}", r.first_difference);
    let chunks: u64 = file
        .jobs
        .iter()
        .map(|j| j.chunks(CHUNK) * j.iterations as u64)
        .sum();
    assert_eq!(r.chunks, chunks);
    assert_eq!(r.checked, chunks);
    assert_eq!(r.on_card + r.by_host, chunks);
    let c = &r.counters;
    // Every RESULT the card sent completed a chunk or came after the host
    // had completed it.
    assert_eq!(c.completed, r.on_card + r.stale_results);
    assert_eq!(
        c.fallbacks,
        r.jobs.iter().map(|j| j.fallback_packets).sum::<u64>()
    );
    assert_eq!(
        c.preempted,
        r.jobs.iter().map(|j| j.preempted).sum::<u64>() + r.stale_evictions
    );
    // Every packet the network delivered reached the engine once: each
    // that got through, a duplicate twice, except those still held back in
    // the network when the last job finished.
    let through: u64 = r.jobs.iter().map(|j| j.packets - j.lost).sum();
    assert_eq!(c.packets, through + r.duplicated - r.undelivered);
    assert!(r.undelivered <= r.reordered + r.duplicated);
    assert_eq!(c.malformed, 0);
    for (j, s) in r.jobs.iter().zip(&file.jobs) {
        assert_eq!(j.jct, j.finish - s.arrival);
        assert!(j.finish >= s.arrival + s.compute * s.iterations as u64);
    }
    let mean = r.jobs.iter().map(|j| j.jct as f64).sum::<f64>() / r.jobs.len() as f64;
    assert!((r.average_jct - mean).abs() < 1e-6);
}

#[test]
fn every_policy_is_exact_and_its_chunks_add_up() {
    let file = contended();
    for net in [[0.0; 3], [0.1, 0.0, 0.0], [0.1; 3]] {
        let loss = net[0];
        for policy in [
            PriorityPolicy::Fifo,
            PriorityPolicy::Static,
            PriorityPolicy::Dsa,
            PriorityPolicy::Rank,
            PriorityPolicy::Srpt,
        ] {
            let r = run_net(&MODEL, &file, policy, net);
            accounting(&file, &r);
            if net[1] > 0.0 {
                assert!(r.duplicated > 0 && r.reordered > 0, "{policy}");
            }
            if policy == PriorityPolicy::Fifo {
                // Equal priorities never preempt (the card's count holds
                // only evicted stale claims, and none without loss).
                assert!(r.jobs.iter().all(|j| j.preempted == 0));
                assert_eq!(r.counters.preempted, r.stale_evictions);
                if loss == 0.0 {
                    assert_eq!(r.stale_evictions, 0);
                }
                assert!(r.jobs.iter().all(|j| j.priority_max == 0));
            }
            let copies: u64 = r.jobs.iter().map(|j| j.retransmissions).sum();
            let packets: u64 = r.jobs.iter().map(|j| j.packets).sum();
            if loss == 0.0 && policy != PriorityPolicy::Srpt {
                assert_eq!(copies, 0, "{policy}");
            }
            if loss == 0.0 && policy == PriorityPolicy::Srpt {
                // A job moved to a lower traffic class mid-chunk leaves the
                // packets its workers sent waiting for their peers' held
                // at the switch, and some time out (as they would behind
                // a real switch's strict-priority queue): few copies.
                assert!(copies * 50 <= packets, "{copies} copies of {packets}");
            }
        }
    }
    // Contended slots: the host has work.
    let r = run_on(&MODEL, &file, PriorityPolicy::Fifo, 0.0);
    assert!(r.by_host > 0 && r.counters.fallbacks > 0, "{r:?}");
    let r = run_on(&MODEL, &file, PriorityPolicy::Dsa, 0.0);
    assert!(r.counters.preempted > 0);
    // The most intensive job ranks first, the least last (256, 30 and 4.8
    // B/cycle: a level apart each, from 0 up once all three run).
    let p = |n: &str| r.jobs.iter().find(|j| j.name == n).unwrap().priority_max;
    assert_eq!((p("chatty"), p("middle"), p("thinker")), (2, 1, 0));
    let r = run_on(&MODEL, &file, PriorityPolicy::Rank, 0.0);
    let p = |n: &str| r.jobs.iter().find(|j| j.name == n).unwrap().priority_min;
    assert!(p("chatty") > p("middle") && p("middle") > p("thinker"));
    let r = run_on(&MODEL, &file, PriorityPolicy::Static, 0.0);
    assert_eq!(r.jobs[0].priority_max, 9);
    assert_eq!(r.jobs[2].priority_max, 0);
}

/// Identities that hold by construction: one job alone has nobody to
/// preempt, so dsa runs exactly as fifo; static with no priorities is fifo.
/// A lost packet's chunk waits in its slot; the copy that meets it brings
/// back the card's NACK, through the fan-out to the missing workers only,
/// and they complete it. On the model and on the Verilated top alike.
#[test]
fn nacks_reach_the_missing_workers_on_every_card() {
    let file = contended();
    let mut specs = vec![MODEL];
    if weft_sim::simulator::verilator_usable() {
        specs.push(DeviceSpec::Sim(SimChoice::Verilator));
    }
    for spec in &specs {
        let r = run_net(spec, &file, PriorityPolicy::Fifo, [0.1, 0.05, 0.05]);
        accounting(&file, &r);
        assert!(r.nacks > 0, "{}: no NACK", r.card);
        // One NACK per duplicate that met its chunk in progress; late
        // copies (done marks) get none.
        assert!(r.nacks <= r.counters.duplicates, "{}", r.card);
        let copies: u64 = r.jobs.iter().map(|j| j.retransmissions).sum();
        let lost: u64 = r.jobs.iter().map(|j| j.lost).sum();
        let workers = file
            .jobs
            .iter()
            .map(|j| j.workers as u64)
            .min()
            .unwrap_or(1);
        assert!(
            copies < lost * workers,
            "{}: {copies} copies for {lost} losses: not every worker should copy",
            r.card
        );
    }
}

#[test]
fn policies_coincide_where_they_must() {
    let mut one = small();
    one.jobs.truncate(1);
    let f = run_on(&MODEL, &one, PriorityPolicy::Fifo, 0.0);
    let d = run_on(&MODEL, &one, PriorityPolicy::Dsa, 0.0);
    assert_eq!(f.jobs[0].finish, d.jobs[0].finish);
    assert_eq!(f.counters.packets, d.counters.packets);
    // Alone, a job gets fifo's priority under dsa (the previous dsa,
    // rank, puts the most intensive at the top).
    assert_eq!(d.jobs[0].priority_max, 0);
    let r = run_on(&MODEL, &one, PriorityPolicy::Rank, 0.0);
    assert_eq!(f.jobs[0].finish, r.jobs[0].finish);
    assert_eq!(r.jobs[0].priority_max, 15);
    let mut plain = small();
    for j in &mut plain.jobs {
        j.priority = None;
    }
    let f = run_on(&MODEL, &plain, PriorityPolicy::Fifo, 0.0);
    let s = run_on(&MODEL, &plain, PriorityPolicy::Static, 0.0);
    let jct = |r: &RunReport| r.jobs.iter().map(|j| j.jct).collect::<Vec<_>>();
    assert_eq!(jct(&f), jct(&s));
    assert_eq!(s.counters.preempted, 0);
}

/// The shipped workload: the structure of both runs (the JCT figures are
/// the benchmark's business, `weft bench grad`).
#[test]
fn the_shipped_workload_runs_exactly_under_fifo_and_dsa() {
    let file = grad::bench::workload(CHUNK).unwrap();
    assert!((4..=6).contains(&file.jobs.len()));
    let want = 64 * file.window as usize * file.jobs.len();
    assert!(
        want > 256,
        "a window per job must not fit the card's 256 slots"
    );
    for policy in [PriorityPolicy::Fifo, PriorityPolicy::Dsa] {
        let r = run_on(&MODEL, &file, policy, 0.0);
        accounting(&file, &r);
        assert_eq!(r.leftover_slots, 0);
        if policy == PriorityPolicy::Fifo {
            assert_eq!(r.counters.preempted, 0);
        }
    }
}

/// One job on every card: the top's model, `weft_top` in rust-hdl and in
/// Verilator give the same sums, every chunk on the card (one job alone
/// never contends), the same card counters. Device time differs: the
/// model's timing is a model (`weft_sim::timed_model`).
#[test]
fn the_same_job_on_every_card_gives_the_same_sums() {
    let mut specs = vec![MODEL, DeviceSpec::Sim(SimChoice::RustHdl)];
    if weft_sim::simulator::verilator_usable() {
        specs.push(DeviceSpec::Sim(SimChoice::Verilator));
    }
    let ts = tensors(3, 200, 11);
    let mut seen = vec![];
    for spec in &specs {
        let card = open(spec);
        let name = card.name();
        let mut job = GradJob::open(
            card,
            JobOptions {
                workers: 3,
                len: 200,
                window: 4,
                ..JobOptions::default()
            },
        )
        .unwrap();
        for (w, t) in ts.iter().enumerate() {
            job.submit(w, t).unwrap();
        }
        let out = job.finish().unwrap();
        assert_eq!(out.report.card, name);
        assert_eq!(out.report.on_card, 4, "{name}");
        seen.push((out.fixed, out.report.counters));
    }
    for s in &seen[1..] {
        assert_eq!(s, &seen[0]);
    }
}

#[test]
fn jobs_file_errors_name_the_field() {
    let cases = [
        (SMALL.replacen("workers = 4", "workers = 40", 1), "job[0] (chatty).workers"),
        (SMALL.replacen("workers = 3", "workers = 0", 1), "job[1] (thinker).workers"),
        (SMALL.replacen("values = 3000", "values = 0", 1), "job[0] (chatty).values"),
        (
            SMALL.replacen("iterations = 2", "iterations = 0", 1),
            "job[1] (thinker).iterations",
        ),
        (
            SMALL.replacen("iterations = 2", "iterations = 4000000000", 1),
            "job[1] (thinker).iterations",
        ),
        (SMALL.replacen("priority = 9", "priority = 16", 1), "job[0] (chatty).priority"),
        (SMALL.replacen("name = \"middle\"", "name = \"chatty\"", 1), "job[2] (chatty).name"),
        (SMALL.replacen("window = 8", "window = 0", 1), "window"),
        (SMALL.replacen("jitter = 0.3", "jitter = 1.5", 1), "jitter"),
        (SMALL.replacen("timeout = 6000", "timeout = 5", 1), "timeout"),
        (
            SMALL.replacen("compute = 9000", "compute = 9000\ncolour = 1", 1),
            "colour",
        ),
        (
            SMALL.replacen("workers = 5", "workers = \"five\"", 1),
            "workers = \"five\"",
        ),
        (format!("{SMALL}\n[host]\nresend_after = 1\n"), "host.resend_after"),
        (format!("{SMALL}\n[host]\ncycles_per_value = -1.0\n"), "host.cycles_per_value"),
        ("window = 8\n".to_string(), "job"),
        (
            (0..17)
                .map(|i| format!("[[job]]\nname = \"j{i}\"\nworkers = 2\nvalues = 64\ncompute = 1\niterations = 1\n"))
                .collect::<String>(),
            "1 to 16 jobs",
        ),
    ];
    for (text, field) in cases {
        let e = grad::parse(&text, CHUNK).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
}

fn file(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn cli_prints_json_and_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = file(&dir, "jobs.toml", CONTENDED);
    let (ok, out, err) = weft(&[
        "agg",
        "grad",
        "--jobs",
        &jobs,
        "--policy",
        "dsa",
        "--device",
        "sim:model",
        "--loss",
        "0.05",
        "--seed",
        "3",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let r = &v["report"];
    assert_eq!(v["device"], "sim:model");
    assert_eq!(r["policy"], "dsa");
    assert_eq!(r["slots"], 256);
    assert_eq!(r["exact"], true);
    assert_eq!(r["jobs"].as_array().unwrap().len(), 3);
    let chunks: u64 = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["chunks_per_iteration"].as_u64().unwrap() * j["iterations"].as_u64().unwrap())
        .sum();
    assert_eq!(
        r["on_card"].as_u64().unwrap() + r["by_host"].as_u64().unwrap(),
        chunks
    );
    assert!(r["average_jct"].as_f64().unwrap() > 0.0);

    let (ok, out, err) = weft(&["agg", "grad", "--jobs", &jobs, "--device", "sim:model"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("average JCT") && out.contains("check: every summed chunk"),
        "{out}"
    );

    let bad = file(
        &dir,
        "bad.toml",
        &CONTENDED.replacen("workers = 3", "workers = 33", 1),
    );
    let (ok, _, err) = weft(&["agg", "grad", "--jobs", &bad, "--device", "sim:model"]);
    assert!(!ok);
    assert!(err.contains("job[1] (thinker).workers"), "{err}");
    for (flag, value, why) in [
        ("--policy", "lifo", "unknown policy"),
        ("--loss", "1.5", "loss"),
        ("--slots", "256", "--slots"),
    ] {
        let (ok, _, err) = weft(&[
            "agg",
            "grad",
            "--jobs",
            &jobs,
            "--device",
            "sim:model",
            flag,
            value,
        ]);
        assert!(!ok && err.contains(why), "{flag} {value}: {err}");
    }
    let (ok, _, err) = weft(&[
        "agg",
        "grad",
        "--jobs",
        &jobs,
        "--device",
        "vfio:0000:3b:00.0",
    ]);
    assert!(!ok && err.contains("vfio:0000:3b:00.0"), "{err}");

    let (ok, out, err) = weft(&[
        "bench",
        "grad",
        "--jobs",
        &jobs,
        "--device",
        "sim:model",
        "--seeds",
        "2",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let w = v["workloads"].as_array().unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(v["policy"], "srpt");
    let b = &w[0]["bench"];
    assert_eq!(b["runs"].as_array().unwrap().len(), 2);
    let (f, d) = (
        b["fifo"]["average_jct"].as_f64().unwrap(),
        b["other"]["average_jct"].as_f64().unwrap(),
    );
    let r = &b["ratio"];
    assert!((r["ratio_of_means"].as_f64().unwrap() - f / d).abs() < 1e-9);
    let per_seed: Vec<f64> = b["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["jct_ratio"].as_f64().unwrap())
        .collect();
    let mean = per_seed.iter().sum::<f64>() / 2.0;
    assert!((r["mean_of_ratios"].as_f64().unwrap() - mean).abs() < 1e-9);
    let worst = per_seed.iter().copied().fold(f64::INFINITY, f64::min);
    assert_eq!(r["worst"].as_f64().unwrap(), worst);
    assert_eq!(b["fifo"]["preemptions"].as_f64().unwrap(), 0.0);
    // fifo against itself is refused; text output names every statistic.
    let (ok, _, err) = weft(&[
        "bench",
        "grad",
        "--jobs",
        &jobs,
        "--device",
        "sim:model",
        "--seeds",
        "1",
        "--policy",
        "fifo",
    ]);
    assert!(!ok && err.contains("--policy fifo"), "{err}");
    let (ok, out, err) = weft(&[
        "bench",
        "grad",
        "--jobs",
        &jobs,
        "--jobs",
        &jobs,
        "--device",
        "sim:model",
        "--seeds",
        "1",
    ]);
    assert!(ok, "{err}");
    for s in [
        "mean of ratios",
        "ratio of means",
        "median",
        "worst",
        "(seed 1)",
    ] {
        assert!(out.contains(s), "{s}: {out}");
    }
    assert_eq!(out.matches("weft bench grad: ").count(), 2, "{out}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: weft_model::proptest_cases(256), ..Default::default() })]

    /// Any text, and any mangling of a good file, is a file or an error
    /// naming what is wrong: never a panic.
    #[test]
    fn jobs_files_never_panic(
        junk in "\\PC{0,200}",
        cut in 0usize..SMALL.len(),
        insert in "[ -~\\n]{0,12}",
    ) {
        let _ = grad::parse(&junk, CHUNK);
        let mut s = SMALL.as_bytes()[..cut].to_vec();
        s.extend_from_slice(insert.as_bytes());
        s.extend_from_slice(&SMALL.as_bytes()[cut..]);
        if let Ok(t) = String::from_utf8(s) {
            if let Err(e) = grad::parse(&t, CHUNK) {
                proptest::prop_assert!(!e.to_string().is_empty());
            }
        }
    }
}
