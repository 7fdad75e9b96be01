//! The job-priority policies' contract: priorities always fit the register,
//! the same input always gives the same priorities, Fifo never lets a job
//! preempt another, Rank orders jobs by communication intensity, and DSA
//! groups them: a level up exactly where an intensity exceeds the next lower
//! one by more than the factor `DSA_GAP`, from 0, so jobs of like intensity
//! get fifo's priorities.

use core::cmp::Ordering;
use proptest::prelude::*;
use weft_fw::grad::*;

fn profile() -> impl Strategy<Value = JobProfile> {
    (
        any::<bool>(),
        prop_oneof![Just(0u64), 1u64..1 << 20, Just(u64::MAX)],
        prop_oneof![Just(0u64), 1u64..1 << 20, Just(u64::MAX)],
        prop_oneof![Just(0u64), 1u64..1 << 40, Just(u64::MAX)],
    )
        .prop_map(
            |(active, bytes_per_iter, compute_per_iter, remaining_bytes)| JobProfile {
                active,
                bytes_per_iter,
                compute_per_iter,
                remaining_bytes,
            },
        )
}

fn obs() -> impl Strategy<Value = JobObs> {
    (0u64..1 << 30, 0u64..1 << 30).prop_map(|(bytes, compute)| JobObs { bytes, compute })
}

fn jobs() -> impl Strategy<Value = [JobProfile; JOBS]> {
    prop::array::uniform16(profile())
}

fn observed() -> impl Strategy<Value = Option<[JobObs; JOBS]>> {
    prop::option::of(prop::array::uniform16(obs()))
}

fn policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        Just(Policy::Fifo),
        Just(Policy::Dsa),
        Just(Policy::Rank),
        prop::array::uniform16(any::<u8>()).prop_map(Policy::Static),
        prop::array::uniform16(any::<u8>()).prop_map(|p| Policy::Srpt(Priorities(p))),
    ]
}

proptest! {
    #[test]
    fn srpt_ranks_active_jobs_by_remaining_work(j in jobs(), prev in prop::array::uniform16(0u8..=PRIO_MAX)) {
        // Without history (every job at one level) the order is exactly
        // remaining bytes, ties to the lower index, levels n-1 down to 0.
        let p = Policy::Srpt(fifo()).priorities(&j, None);
        let active: Vec<usize> = (0..JOBS).filter(|&k| j[k].active).collect();
        let n = active.len();
        let mut levels: Vec<u8> = active.iter().map(|&k| p.get(k)).collect();
        levels.sort_unstable();
        prop_assert_eq!(levels, (0..n as u8).collect::<Vec<_>>(), "not a permutation of 0..n");
        for &a in &active {
            for &b in &active {
                let first = (j[a].remaining_bytes, a) < (j[b].remaining_bytes, b);
                prop_assert_eq!(p.get(a) > p.get(b), first, "jobs {} and {}", a, b);
            }
        }
        for k in (0..JOBS).filter(|&k| !j[k].active) {
            prop_assert_eq!(p.get(k), 0);
        }
        // With history a job is never left below one with more than (1 + h)
        // times its remaining work.
        let q = Policy::Srpt(Priorities(prev)).priorities(&j, None);
        let (num, den) = (SRPT_HYSTERESIS.0 as u128, SRPT_HYSTERESIS.1 as u128);
        for &a in &active {
            for &b in &active {
                let (x, y) = (j[a].remaining_bytes as u128, j[b].remaining_bytes as u128);
                if x * (den + num) < y * den {
                    prop_assert!(q.get(a) > q.get(b), "{} stays below {} with far less work", a, b);
                }
            }
        }
        // The traffic classes keep the levels' order, 7 for the top.
        let c = Policy::Srpt(fifo()).traffic_classes(&j, &p);
        for &a in &active {
            prop_assert!((1..=7).contains(&c[a]));
            for &b in &active {
                if p.get(a) > p.get(b) {
                    prop_assert!(c[a] >= c[b]);
                }
            }
            if p.get(a) as usize + 1 == n {
                prop_assert_eq!(c[a], 7);
            }
        }
        // Every other policy leaves the switch alone.
        prop_assert_eq!(Policy::Dsa.traffic_classes(&j, &p), [0; JOBS]);
    }

    #[test]
    fn traffic_classes_keep_any_priorities_order(j in jobs(), p in prop::array::uniform16(any::<u8>())) {
        // Any levels (register values, out of range ones too, all 16 jobs
        // active or not): classes 1..=7 for active jobs, 0 for the others,
        // in the levels' order, the highest level in class 7.
        let p = Priorities(p);
        let c = traffic_classes(&j, &p);
        let level = |k: usize| p.get(k).min(PRIO_MAX);
        let top = (0..JOBS).filter(|&k| j[k].active).map(level).max();
        for a in 0..JOBS {
            if !j[a].active {
                prop_assert_eq!(c[a], 0);
                continue;
            }
            prop_assert!((1..=7).contains(&c[a]));
            if Some(level(a)) == top {
                prop_assert_eq!(c[a], 7);
            }
            for b in (0..JOBS).filter(|&b| j[b].active) {
                if level(a) > level(b) {
                    prop_assert!(c[a] >= c[b]);
                }
            }
        }
    }

    #[test]
    fn priorities_fit_the_register_and_are_deterministic(
        p in policy(), j in jobs(), o in observed()
    ) {
        let a = p.priorities(&j, o.as_ref());
        let b = p.priorities(&j, o.as_ref());
        prop_assert_eq!(a, b);
        for job in 0..JOBS {
            prop_assert!(a.get(job) <= PRIO_MAX);
        }
        prop_assert_eq!(Priorities::from_registers(a.registers()), a);
    }

    #[test]
    fn fifo_never_preempts(j in jobs(), o in observed()) {
        let p = Policy::Fifo.priorities(&j, o.as_ref());
        prop_assert!(p.0.iter().all(|&x| x == p.0[0]));
    }

    #[test]
    fn static_clamps_and_keeps_order(given in prop::array::uniform16(any::<u8>()), j in jobs()) {
        let p = Policy::Static(given).priorities(&j, None);
        for (a, g) in given.iter().enumerate() {
            prop_assert_eq!(p.get(a), (*g).min(PRIO_MAX));
        }
    }

    #[test]
    fn rank_orders_active_jobs_by_intensity(j in jobs(), o in observed()) {
        let p = Policy::Rank.priorities(&j, o.as_ref());
        let int = |k: usize| Intensity::of(&j[k], o.as_ref().map(|o| &o[k]));
        let active: Vec<usize> = (0..JOBS).filter(|&k| j[k].active).collect();
        for &a in &active {
            for &b in &active {
                match int(a).cmp_exact(&int(b)) {
                    Ordering::Greater => prop_assert!(p.get(a) > p.get(b), "{a} over {b}: {:?}", p),
                    Ordering::Equal => prop_assert_eq!(p.get(a), p.get(b)),
                    Ordering::Less => prop_assert!(p.get(a) < p.get(b)),
                }
            }
        }
        // The most intensive active job is at the top; inactive jobs at 0.
        if let Some(&top) = active.iter().max_by(|&&a, &&b| int(a).cmp_exact(&int(b))) {
            prop_assert_eq!(p.get(top), PRIO_MAX);
        }
        for k in (0..JOBS).filter(|&k| !j[k].active) {
            prop_assert_eq!(p.get(k), 0);
        }
    }

    #[test]
    fn dsa_steps_a_level_exactly_at_each_gap(j in jobs(), o in observed()) {
        let p = Policy::Dsa.priorities(&j, o.as_ref());
        let int = |k: usize| Intensity::of(&j[k], o.as_ref().map(|o| &o[k]));
        let mut active: Vec<usize> = (0..JOBS).filter(|&k| j[k].active).collect();
        active.sort_by(|&a, &b| int(a).cmp_exact(&int(b)));
        for k in (0..JOBS).filter(|&k| !j[k].active) {
            prop_assert_eq!(p.get(k), 0);
        }
        if let Some(&least) = active.first() {
            prop_assert_eq!(p.get(least), 0, "the least intensive group is at fifo's level");
        }
        for w in active.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            let step = int(hi).exceeds(&int(lo), DSA_GAP.0, DSA_GAP.1);
            prop_assert_eq!(p.get(hi), p.get(lo) + u8::from(step), "{} then {}: {:?}", lo, hi, p);
        }
        // Order by intensity is never inverted.
        for &a in &active {
            for &b in &active {
                if int(a).cmp_exact(&int(b)) == Ordering::Greater {
                    prop_assert!(p.get(a) >= p.get(b));
                }
            }
        }
    }

    #[test]
    fn dsa_ties_fifo_when_intensities_are_close(
        active in prop::array::uniform16(any::<bool>()),
        base in 1u64..1 << 30,
        compute in 1u64..1 << 30,
        spread in prop::array::uniform16(0u64..1000),
    ) {
        // Every intensity within [base, 2 base) per cycle of `compute`: no
        // two are more than a factor 2 apart, so no job may preempt another.
        let mut j = [JobProfile::default(); JOBS];
        for k in 0..JOBS {
            j[k] = JobProfile {
                active: active[k],
                bytes_per_iter: base + base * spread[k] / 1000,
                compute_per_iter: compute,
                remaining_bytes: 0,
            };
        }
        prop_assert_eq!(Policy::Dsa.priorities(&j, None), fifo());
    }

    #[test]
    fn exceeds_agrees_with_the_exact_order(a in obs(), b in obs()) {
        let i = |o: JobObs| Intensity { bytes: o.bytes, compute: o.compute };
        let (a, b) = (i(a), i(b));
        // By a factor 1 it is "more intensive"; by a factor above 1 it
        // implies it; never both ways.
        prop_assert_eq!(a.exceeds(&b, 1, 1), a.cmp_exact(&b) == Ordering::Greater);
        if a.exceeds(&b, 2, 1) {
            prop_assert!(a.cmp_exact(&b) == Ordering::Greater);
            prop_assert!(!b.exceeds(&a, 2, 1));
        }
        if a.bytes > 0 && a.compute > 0 && b.bytes > 0 && b.compute > 0 {
            let (x, y) = (a.bytes as f64 / a.compute as f64, b.bytes as f64 / b.compute as f64);
            // Away from the boundary, the float ratio agrees.
            if x > 2.001 * y {
                prop_assert!(a.exceeds(&b, 2, 1));
            }
            if x < 1.999 * y {
                prop_assert!(!a.exceeds(&b, 2, 1));
            }
        }
    }

    #[test]
    fn intensity_order_is_total_and_consistent(a in obs(), b in obs(), c in obs()) {
        let i = |o: JobObs| Intensity { bytes: o.bytes, compute: o.compute };
        let (a, b, c) = (i(a), i(b), i(c));
        prop_assert_eq!(a.cmp_exact(&b), b.cmp_exact(&a).reverse());
        if a.cmp_exact(&b) != Ordering::Greater && b.cmp_exact(&c) != Ordering::Greater {
            prop_assert!(a.cmp_exact(&c) != Ordering::Greater, "not transitive");
        }
    }
}

fn job(bytes: u64, compute: u64) -> JobProfile {
    JobProfile {
        active: true,
        bytes_per_iter: bytes,
        compute_per_iter: compute,
        remaining_bytes: 0,
    }
}

/// The declared intensities of the shipped workload
/// (`examples/grad/jobs.toml`): lstm alone on top, the three jobs of 36 to
/// 80 B/cycle together (within a factor 2 of each other, step by step), the
/// two compute-bound ones at 0.
#[test]
fn dsa_groups_the_shipped_mix() {
    let mut j = [JobProfile::default(); JOBS];
    // (values x 4 x workers, compute)
    j[0] = job(25600 * 16, 2000); // lstm 204.8
    j[1] = job(40000 * 16, 8000); // vgg 80.0
    j[2] = job(20000 * 32, 15000); // bert 42.7
    j[3] = job(30000 * 24, 20000); // gpt 36.0
    j[4] = job(19200 * 16, 60000); // resnet 5.1
    j[5] = job(15000 * 16, 90000); // inception 2.7
    let p = Policy::Dsa.priorities(&j, None);
    assert_eq!(&p.0[..7], &[2, 1, 1, 1, 0, 0, 0]);
    // gpt not arrived yet: the rest keep their levels.
    j[3].active = false;
    let p = Policy::Dsa.priorities(&j, None);
    assert_eq!(&p.0[..6], &[2, 1, 1, 0, 0, 0]);
    // Alone, a job is at 0, as under fifo.
    let mut one = [JobProfile::default(); JOBS];
    one[9] = j[0];
    assert_eq!(Policy::Dsa.priorities(&one, None), fifo());
    // Observed rates override the declaration: resnet turns out as
    // communication-bound as vgg.
    let mut o = [JobObs::default(); JOBS];
    o[4] = JobObs {
        bytes: 80,
        compute: 1,
    };
    let p = Policy::Dsa.priorities(&j, Some(&o));
    assert_eq!(&p.0[..6], &[2, 1, 1, 0, 1, 0]);
}

#[test]
fn sixteen_tripling_jobs_use_every_level() {
    let mut j = [JobProfile::default(); JOBS];
    for (k, p) in j.iter_mut().enumerate() {
        *p = job(3u64.pow(k as u32), 100);
    }
    let p = Policy::Dsa.priorities(&j, None);
    for (k, &x) in p.0.iter().enumerate() {
        assert_eq!(x as usize, k, "job {k}");
    }
    // Exactly doubling is not more than a factor 2: one level.
    for (k, p) in j.iter_mut().enumerate() {
        *p = job(1u64 << k, 100);
    }
    assert_eq!(Policy::Dsa.priorities(&j, None), fifo());
}

#[test]
fn rank_ranks_a_known_mix() {
    let mut j = [JobProfile::default(); JOBS];
    j[0] = job(100, 1000); // 0.1 B/cycle
    j[1] = job(400, 1000); // 0.4
    j[2] = job(200, 500); // 0.4, ties with job 1
    j[3] = job(1, 0); // pure communication: the most intensive
    j[4] = job(0, 50); // nothing to aggregate: the least
    let p = Policy::Rank.priorities(&j, None);
    assert_eq!(
        &p.0[..6],
        &[
            PRIO_MAX - 2,
            PRIO_MAX - 1,
            PRIO_MAX - 1,
            PRIO_MAX,
            PRIO_MAX - 3,
            0
        ]
    );
    // Observed rates override the declaration: job 0 turns out more
    // communication-bound than every job but the pure-communication one.
    let mut o = [JobObs::default(); JOBS];
    o[0] = JobObs {
        bytes: 10_000,
        compute: 1,
    };
    let p = Policy::Rank.priorities(&j, Some(&o));
    assert_eq!(p.get(3), PRIO_MAX, "pure communication stays on top");
    assert_eq!(p.get(0), PRIO_MAX - 1);
    assert_eq!(p.get(1), PRIO_MAX - 2);
}

#[test]
fn sixteen_distinct_jobs_use_every_rank() {
    let mut j = [JobProfile::default(); JOBS];
    for (k, p) in j.iter_mut().enumerate() {
        *p = job(k as u64 + 1, 100);
    }
    let p = Policy::Rank.priorities(&j, None);
    for (k, &x) in p.0.iter().enumerate() {
        assert_eq!(x as usize, k, "job {k}");
    }
    let r = p.registers();
    assert_eq!(r, [0x7654_3210, 0xFEDC_BA98]);
}

/// The ends of the intensity order, exactly: no bytes is the least whatever
/// the compute, bytes without compute the most, and `exceeds` across those
/// classes follows the order whatever the factor.
#[test]
fn intensity_order_at_its_ends() {
    let i = |bytes, compute| Intensity { bytes, compute };
    let (none, idle, pure, mid) = (i(0, 0), i(0, 500), i(7, 0), i(1000, 1));
    for least in [none, idle] {
        assert_eq!(least.cmp_exact(&mid), Ordering::Less);
        assert_eq!(least.cmp_exact(&pure), Ordering::Less);
        assert!(mid.exceeds(&least, 1000, 1) && pure.exceeds(&least, 1000, 1));
        assert!(!least.exceeds(&mid, 1, 1000));
    }
    assert_eq!(none.cmp_exact(&idle), Ordering::Equal);
    assert!(!none.exceeds(&idle, 1, 1) && !idle.exceeds(&none, 1, 1));
    assert_eq!(pure.cmp_exact(&mid), Ordering::Greater);
    assert_eq!(pure.cmp_exact(&i(1, 0)), Ordering::Equal);
    assert!(pure.exceeds(&mid, 1000, 1) && !mid.exceeds(&pure, 1, 1000));
    // Within the middle class the factor decides.
    assert!(i(300, 100).exceeds(&i(100, 100), 2, 1));
    assert!(!i(200, 100).exceeds(&i(100, 100), 2, 1));
}

/// An observation with compute but no bytes is evidence (the job sends
/// nothing), not an empty one: it overrides the declared profile.
#[test]
fn an_observation_without_bytes_still_counts() {
    let declared = job(4096, 10);
    let quiet = JobObs {
        bytes: 0,
        compute: 5000,
    };
    assert!(!quiet.is_empty() && JobObs::default().is_empty());
    assert_eq!(
        Intensity::of(&declared, Some(&quiet)),
        Intensity {
            bytes: 0,
            compute: 5000
        }
    );
    assert_eq!(
        Intensity::of(&declared, Some(&JobObs::default())),
        Intensity {
            bytes: 4096,
            compute: 10
        }
    );
}

/// DSA sorts the jobs itself: listed from the most intensive down, each
/// gets the level it gets when listed from the least up.
#[test]
fn dsa_levels_do_not_depend_on_job_order() {
    let mut up = [JobProfile::default(); JOBS];
    let mut down = [JobProfile::default(); JOBS];
    for k in 0..4 {
        // 1, 3, 9, 27 bytes per cycle: a level apart each.
        up[k] = job(3u64.pow(k as u32) * 100, 100);
        down[3 - k] = up[k];
    }
    let (u, d) = (dsa(&up, None), dsa(&down, None));
    assert_eq!(u.0[..4], [0, 1, 2, 3]);
    assert_eq!(d.0[..4], [3, 2, 1, 0]);
}

/// The job on top keeps the top against a rival within the margin and
/// loses it past the margin; without an incumbent the least work wins.
#[test]
fn srpt_incumbent_holds_within_the_margin() {
    let mut j = [JobProfile::default(); JOBS];
    let set = |j: &mut [JobProfile; JOBS], a: u64, b: u64| {
        j[0] = JobProfile {
            active: true,
            remaining_bytes: a,
            ..JobProfile::default()
        };
        j[1] = JobProfile {
            active: true,
            remaining_bytes: b,
            ..JobProfile::default()
        };
    };
    let (num, den) = SRPT_HYSTERESIS;
    let mut top0 = fifo();
    top0.0[0] = 1;
    // Job 1 has less work, but not by the margin: job 0 stays on top.
    let close = 1000 * den / (den + num) + 1;
    set(&mut j, 1000, close);
    assert_eq!(srpt(&j, &top0, SRPT_HYSTERESIS).0[..2], [1, 0]);
    // Without history job 1 goes first.
    assert_eq!(srpt(&j, &fifo(), SRPT_HYSTERESIS).0[..2], [0, 1]);
    // Past the margin job 1 takes the top.
    set(&mut j, 1000, 1000 * den / (den + num) - 1);
    assert_eq!(srpt(&j, &top0, SRPT_HYSTERESIS).0[..2], [0, 1]);
}

/// Sixteen active jobs, one per level 0..=15: the top seven levels get
/// classes 7 down to 1, and the nine lowest share class 1.
#[test]
fn traffic_classes_of_sixteen_levels() {
    let mut j = [JobProfile::default(); JOBS];
    let mut p = [0u8; JOBS];
    for k in 0..JOBS {
        j[k] = JobProfile {
            active: true,
            remaining_bytes: k as u64,
            ..JobProfile::default()
        };
        p[k] = k as u8;
    }
    let c = traffic_classes(&j, &Priorities(p));
    let want: Vec<u8> = (0..JOBS as u8)
        .map(|l| 7u8.saturating_sub(15 - l).max(1))
        .collect();
    assert_eq!(c.to_vec(), want);
    assert_eq!(c[15], 7);
    assert_eq!(c[9], 1);
    assert_eq!(c[0], 1);
    // The policy gives 16 jobs the same levels, least remaining work on top.
    let s = Policy::Srpt(fifo()).priorities(&j, None);
    assert_eq!(s.0, core::array::from_fn(|k| 15 - k as u8));
}
