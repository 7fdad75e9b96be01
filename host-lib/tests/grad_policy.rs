//! The job-priority policies against fifo on `sim:model` (whose timing is a
//! model: these are checks of the policies' behaviour, the figures are
//! `weft bench grad`'s): dsa is exact on every shipped workload, runs
//! exactly as fifo when the jobs are of like intensity, and on a small
//! contended workload is no seed more than 2% worse than fifo and better
//! on average; srpt wins there and on like jobs, exact on every shipped
//! workload; the benchmark's per-seed statistics are what they say.

use weft::grad::bench::{self, RatioStats};
use weft::grad::{self, JobsFile, PriorityPolicy, RunOptions, RunReport, Seeded};
use weft::spec::SimChoice;
use weft::{Card, DeviceSpec};

const MODEL: DeviceSpec = DeviceSpec::Sim(SimChoice::Model);
const CHUNK: usize = 64;

fn run(file: &JobsFile, policy: PriorityPolicy, seed: u64) -> RunReport {
    let card = Card::open_with(MODEL, &Default::default()).unwrap();
    let opts = RunOptions {
        policy,
        seed,
        ..RunOptions::default()
    };
    let r = grad::run(&card, file, &Seeded(seed), &opts).unwrap();
    assert!(r.exact, "{policy}, seed {seed}: {:?}", r.first_difference);
    assert_eq!(r.checked, r.chunks);
    r
}

/// Three jobs of very different intensity whose windows (3 x 128 chunks)
/// do not fit the card's 256 slots, with large stragglers: preemption
/// helps (the small cousin of `examples/grad/jobs.toml`).
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
[[job]]
name = "thinker"
workers = 3
values = 16000
compute = 40000
iterations = 2
arrival = 400
[[job]]
name = "middle"
workers = 5
values = 12000
compute = 8000
iterations = 3
arrival = 900
"#;

/// Three communication-bound jobs of like intensity (256, 256 and 240
/// B/cycle) streaming at once: contended as above, nobody to prefer.
const ALIKE: &str = r#"
window = 128
jitter = 0.3
timeout = 20000
[[job]]
name = "a"
workers = 4
values = 24000
compute = 1500
iterations = 3
[[job]]
name = "b"
workers = 3
values = 16000
compute = 750
iterations = 3
arrival = 400
[[job]]
name = "c"
workers = 5
values = 12000
compute = 1000
iterations = 3
arrival = 900
"#;

#[test]
fn dsa_is_exact_on_every_shipped_workload() {
    let all = bench::workloads(CHUNK).unwrap();
    let names: Vec<&str> = all.iter().map(|w| w.0).collect();
    assert_eq!(names, ["jobs.toml", "equal.toml", "short-long.toml"]);
    for (name, file) in &all {
        // Slots are scarce in every one: a window per job does not fit.
        let want = 64 * file.window as usize * file.jobs.len();
        assert!(want > 256, "{name}");
        let r = run(file, PriorityPolicy::Dsa, 1);
        let chunks: u64 = file
            .jobs
            .iter()
            .map(|j| j.chunks(CHUNK) * j.iterations as u64)
            .sum();
        assert_eq!(r.chunks, chunks, "{name}");
        assert_eq!(r.on_card + r.by_host, chunks, "{name}");
        assert_eq!(r.leftover_slots, 0, "{name}");
        if *name == "equal.toml" {
            assert_eq!(r.counters.preempted, 0, "{name}: like jobs never preempt");
        } else {
            assert!(r.counters.preempted > 0, "{name}: dsa preempts");
        }
    }
}

#[test]
fn dsa_runs_exactly_as_fifo_when_jobs_are_alike() {
    let file = grad::parse(ALIKE, CHUNK).unwrap();
    for seed in [1, 2] {
        let f = run(&file, PriorityPolicy::Fifo, seed);
        let d = run(&file, PriorityPolicy::Dsa, seed);
        // Contended: fifo forwards, so there is something to get wrong.
        assert!(f.counters.fallbacks > 0);
        let jct = |r: &RunReport| r.jobs.iter().map(|j| j.finish).collect::<Vec<_>>();
        assert_eq!(jct(&f), jct(&d), "seed {seed}");
        assert_eq!(f.counters, d.counters, "seed {seed}");
        assert!(d.jobs.iter().all(|j| j.priority_max == 0));
    }
}

/// Fifo against `policy` on `text` over seeds 1..=6.
fn against_fifo(text: &str, policy: PriorityPolicy) -> RatioStats {
    let file = grad::parse(text, CHUNK).unwrap();
    let mut triples = vec![];
    for seed in 1..=6 {
        let f = run(&file, PriorityPolicy::Fifo, seed);
        let d = run(&file, policy, seed);
        assert_eq!(f.counters.preempted, 0);
        triples.push((seed, f.average_jct, d.average_jct));
    }
    let s = RatioStats::of(&triples).unwrap();
    assert_eq!(s.seeds_lost_beyond_2pct, 0, "{policy}: {s:?} {triples:?}");
    assert!(s.worst * 1.02 >= 1.0, "{s:?}");
    s
}

#[test]
fn dsa_never_loses_beyond_two_percent_and_wins_where_preemption_helps() {
    let s = against_fifo(CONTENDED, PriorityPolicy::Dsa);
    assert!(s.ratio_of_means > 1.05, "dsa should win here: {s:?}");
}

/// srpt serialises the jobs by remaining work on the card and on the link
/// in front of it: it wins on the contended workload and on like jobs too
/// (where sharing makes every job finish late together), never losing a
/// seed by more than 2%; it is exact and leaves no slot on every shipped
/// workload, and puts each job's packets in a class of its own.
#[test]
fn srpt_wins_on_contended_and_like_jobs_and_is_exact_everywhere() {
    let s = against_fifo(CONTENDED, PriorityPolicy::Srpt);
    assert!(s.ratio_of_means > 1.1, "srpt on contended jobs: {s:?}");
    let s = against_fifo(ALIKE, PriorityPolicy::Srpt);
    assert!(s.ratio_of_means > 1.1, "srpt on like jobs: {s:?}");
    for (name, file) in &bench::workloads(CHUNK).unwrap() {
        let r = run(file, PriorityPolicy::Srpt, 1);
        assert_eq!(r.leftover_slots, 0, "{name}");
        assert!(r.counters.preempted > 0, "{name}: srpt preempts");
        // Each job ran on more than one level as the others came and went.
        assert!(
            r.jobs.iter().any(|j| j.priority_min < j.priority_max),
            "{name}"
        );
    }
}

#[test]
fn ratio_statistics_are_what_they_say() {
    assert_eq!(RatioStats::of(&[]), None);
    // Ratios 2.0, 0.5, 1.0, 0.5 (fifo / policy).
    let s = RatioStats::of(&[
        (7, 200.0, 100.0),
        (8, 100.0, 200.0),
        (9, 300.0, 300.0),
        (10, 50.0, 100.0),
    ])
    .unwrap();
    assert_eq!(s.seeds, 4);
    assert!((s.mean_of_ratios - 1.0).abs() < 1e-12);
    // Means: fifo 162.5, policy 175.
    assert!((s.ratio_of_means - 162.5 / 175.0).abs() < 1e-12);
    assert!((s.median - 0.75).abs() < 1e-12);
    assert_eq!((s.worst, s.worst_seed), (0.5, 8), "the first of a tie");
    assert_eq!((s.best, s.best_seed), (2.0, 7));
    assert_eq!(s.seeds_lost_beyond_2pct, 2);
    let one = RatioStats::of(&[(3, 99.0, 100.0)]).unwrap();
    assert_eq!(
        (one.median, one.worst_seed, one.seeds_lost_beyond_2pct),
        (0.99, 3, 0)
    );
}
