//! The AVM policies' contract: never an action outside the limits, and
//! SloGuard settles (no oscillation) in a stationary contended pool.

use proptest::prelude::*;
use weft_fw::avm::*;

fn limits() -> Limits {
    Limits {
        weight_min: 1,
        weight_max: 64,
        priority_max: 3,
        reserve: [4; MAX_CONSUMERS],
        quota_max: [32; MAX_CONSUMERS],
    }
}

fn cfg(victims: u32, slo: u64) -> SloConfig {
    SloConfig {
        victims,
        slo_p99: [slo; MAX_CONSUMERS],
        base_weights: [8; MAX_CONSUMERS],
        step: 2,
        over_per_mille: 100,
        under_per_mille: 400,
        calm_windows: 4,
        min_samples: 10,
        limits: limits(),
    }
}

/// A histogram holding `n` samples of latency `lat`.
fn hist_add(h: &mut [u64; BUCKETS], lat: u64, n: u64) {
    let b = (63 - lat.max(1).leading_zeros() as usize).min(BUCKETS - 1);
    h[b] += n;
}

#[test]
fn quantiles_from_histogram_deltas() {
    let prev = [0; BUCKETS];
    let mut now = [0; BUCKETS];
    hist_add(&mut now, 5, 98); // bucket 2: [4, 8)
    hist_add(&mut now, 100, 2); // bucket 6: [64, 128)
    assert_eq!(quantile(&prev, &now, 500), Some(7));
    assert_eq!(quantile(&prev, &now, 980), Some(7));
    assert_eq!(quantile(&prev, &now, 990), Some(127));
    assert_eq!(quantile(&now, &now, 990), None);
}

fn obs() -> impl Strategy<Value = Vec<Observation>> {
    let step = (
        prop::collection::vec(
            (
                0u64..500,
                0u64..50,
                any::<u32>(),
                prop::array::uniform16(0u64..50),
            ),
            4,
        ),
        0u64..10_000,
    );
    prop::collection::vec(step, 1..30).prop_map(|steps| {
        let mut o = Observation {
            n: 4,
            ..Default::default()
        };
        steps
            .into_iter()
            .map(|(cs, dt)| {
                o.cycle += dt;
                for (c, (req, faults, pages, h)) in cs.into_iter().enumerate() {
                    let x = &mut o.consumers[c];
                    x.requests += req;
                    x.grants += req;
                    x.faults += faults;
                    x.pages = pages % 64;
                    for (dst, add) in x.hist.iter_mut().zip(h) {
                        *dst += add;
                    }
                }
                o
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn actions_stay_inside_the_limits(trace in obs(), victims in 1u32..16, slo in 1u64..5000) {
        let l = limits();
        let mut guard = SloGuard::new(cfg(victims, slo));
        let mut fixed = Static::new([0, 3, 100, 9, 0, 0, 0, 0], [0, 10, 99, 20, 0, 0, 0, 0], l);
        for o in &trace {
            for a in guard.decide(o).iter().chain(fixed.decide(o).iter()) {
                prop_assert!(l.allows(&a), "{a:?}");
            }
        }
    }
}

/// A stationary pool: the victim's p99 falls as its share of the weight
/// grows (latency ~ 400 cycles x aggressors' weight / total weight).
fn run_pool(guard: &mut SloGuard, windows: usize) -> Vec<usize> {
    let mut o = Observation {
        n: 4,
        ..Default::default()
    };
    let mut weights = [8u32; MAX_CONSUMERS];
    let mut acted = vec![];
    for w in 0..windows {
        let total: u32 = weights[..4].iter().sum();
        let aggressors: u32 = weights[1..4].iter().sum();
        let lat = 4 + 400 * aggressors as u64 / total as u64;
        o.cycle += 10_000;
        for c in 0..4 {
            let x = &mut o.consumers[c];
            x.requests += 1000;
            x.grants += 1000;
            hist_add(&mut x.hist, if c == 0 { lat } else { 20 }, 1000);
        }
        let a = guard.decide(&o);
        if !a.is_empty() {
            acted.push(w);
        }
        for act in a.iter() {
            if let Action::SetWeight { consumer, weight } = act {
                weights[consumer] = weight;
            }
        }
    }
    acted
}

#[test]
fn slo_guard_settles_under_a_reachable_slo() {
    let mut g = SloGuard::new(cfg(1, 200));
    let acted = run_pool(&mut g, 200);
    let last = *acted.last().unwrap();
    assert!(last < 50, "still acting at window {last}: {acted:?}");
    let w = g.weights();
    assert!(w[0] > 8 && w[1] < 8, "weight moved to the victim: {w:?}");
}

#[test]
fn slo_guard_stops_at_the_limits_when_the_slo_is_out_of_reach() {
    let mut g = SloGuard::new(cfg(1, 5));
    let acted = run_pool(&mut g, 200);
    assert!(*acted.last().unwrap() < 50, "{acted:?}");
    let w = g.weights();
    assert_eq!((w[0], w[1]), (64, 1), "{w:?}");
}

#[test]
fn slo_guard_gives_weight_back_when_calm() {
    let mut g = SloGuard::new(cfg(1, 100_000));
    let acted = run_pool(&mut g, 50);
    // Only the initial weights: the victim is far under its SLO and the
    // weights are already the base weights.
    assert_eq!(acted, vec![0]);
    assert_eq!(g.weights()[..4], [8, 8, 8, 8]);
}

#[test]
fn slo_guard_lifts_the_victims_priority_and_holds_it_while_they_are_active() {
    let mut g = SloGuard::new(cfg(1, 200));
    let prios = |a: &Actions| -> Vec<(usize, u32)> {
        a.iter()
            .filter_map(|x| match x {
                Action::SetPriority { consumer, priority } => Some((consumer, priority)),
                _ => None,
            })
            .collect()
    };
    let mut o = Observation {
        n: 4,
        ..Default::default()
    };
    assert_eq!(prios(&g.decide(&o)), [(0, 0), (1, 0), (2, 0), (3, 0)]);
    // Over the SLO: lifted.
    o.consumers[0].grants += 100;
    hist_add(&mut o.consumers[0].hist, 1000, 100);
    assert_eq!(prios(&g.decide(&o)), [(0, 3), (1, 0), (2, 0), (3, 0)]);
    assert!(g.boosted());
    // Well under it for many windows: weights relax, the priority holds.
    for _ in 0..40 {
        o.consumers[0].grants += 100;
        hist_add(&mut o.consumers[0].hist, 3, 100);
        assert!(prios(&g.decide(&o)).is_empty());
    }
    // The victim goes quiet: after the calm spell the priority drops.
    let mut dropped = vec![];
    for _ in 0..5 {
        dropped.extend(prios(&g.decide(&o)));
    }
    assert_eq!(dropped, [(0, 0), (1, 0), (2, 0), (3, 0)]);
    assert!(!g.boosted());
}
