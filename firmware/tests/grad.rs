//! The job-priority policies' contract: priorities always fit the register,
//! the same input always gives the same priorities, Fifo never lets a job
//! preempt another, and DSA orders jobs by communication intensity.

use core::cmp::Ordering;
use proptest::prelude::*;
use weft_fw::grad::*;

fn profile() -> impl Strategy<Value = JobProfile> {
    (
        any::<bool>(),
        prop_oneof![Just(0u64), 1u64..1 << 20, Just(u64::MAX)],
        prop_oneof![Just(0u64), 1u64..1 << 20, Just(u64::MAX)],
    )
        .prop_map(|(active, bytes_per_iter, compute_per_iter)| JobProfile {
            active,
            bytes_per_iter,
            compute_per_iter,
        })
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
        prop::array::uniform16(any::<u8>()).prop_map(Policy::Static),
    ]
}

proptest! {
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
    fn dsa_orders_active_jobs_by_intensity(j in jobs(), o in observed()) {
        let p = Policy::Dsa.priorities(&j, o.as_ref());
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
    }
}

#[test]
fn dsa_ranks_a_known_mix() {
    let mut j = [JobProfile::default(); JOBS];
    j[0] = job(100, 1000); // 0.1 B/cycle
    j[1] = job(400, 1000); // 0.4
    j[2] = job(200, 500); // 0.4, ties with job 1
    j[3] = job(1, 0); // pure communication: the most intensive
    j[4] = job(0, 50); // nothing to aggregate: the least
    let p = Policy::Dsa.priorities(&j, None);
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
    let p = Policy::Dsa.priorities(&j, Some(&o));
    assert_eq!(p.get(3), PRIO_MAX, "pure communication stays on top");
    assert_eq!(p.get(0), PRIO_MAX - 1);
    assert_eq!(p.get(1), PRIO_MAX - 2);
}

#[test]
fn sixteen_distinct_jobs_use_every_level() {
    let mut j = [JobProfile::default(); JOBS];
    for (k, p) in j.iter_mut().enumerate() {
        *p = job(k as u64 + 1, 100);
    }
    let p = Policy::Dsa.priorities(&j, None);
    for (k, &x) in p.0.iter().enumerate() {
        assert_eq!(x as usize, k, "job {k}");
    }
    let r = p.registers();
    assert_eq!(r, [0x7654_3210, 0xFEDC_BA98]);
}
