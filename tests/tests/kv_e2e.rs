//! Key-value aggregation end to end on the one card, `weft_top`: the host
//! daemon's real traffic (packing, windows, retransmissions over a lossy,
//! duplicating, reordering network to the card's wire port, acks back over
//! it, record frames to the collector on the host port) through the card's
//! frame ports and AXI4-Lite registers. Every frame and counter the card
//! produces is checked against the top's reference model fed the same
//! registers and frames, and the sums must equal the exact sums of the
//! input.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use weft::check::Checked;
use weft::kv::{run, JobOptions};
use weft::Card;
use weft_model::net::NetConfig;

fn job(spec: &str, tuples: usize, workers: usize, replace: bool, net: NetConfig, seed: u64) {
    let (card, checker) = Checked::wrap_card(Card::open(spec).unwrap()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // A third of the tuples on eight hot keys, the rest over 30000 keys
    // for the card's 4096 slots: spills, evictions and overflows happen.
    let ts: Vec<(usize, u32, i32)> = (0..tuples)
        .map(|i| {
            let key = if i % 3 == 0 {
                rng.gen_range(0..8)
            } else {
                rng.gen_range(0..30_000)
            };
            let value = if rng.gen_bool(0.05) {
                i32::MAX
            } else {
                rng.gen_range(-100..100)
            };
            (rng.gen_range(0..workers), key, value)
        })
        .collect();
    let mut want: HashMap<u32, i64> = HashMap::new();
    for (_, k, v) in &ts {
        *want.entry(*k).or_default() += *v as i64;
    }
    let opts = JobOptions {
        workers,
        replace,
        net,
        seed,
        ..JobOptions::default()
    };
    let out = run(&card, opts, ts).unwrap();
    assert_eq!(out.sums, want, "{spec}: sums must be exact");
    let compared = checker.verdict().unwrap_or_else(|e| panic!("{spec}: {e}"));
    // Acks (one per packet) and record frames.
    let least = if tuples > 1000 { 100 } else { 2 };
    assert!(compared > least, "{spec}: {compared} frames compared");
    let st = &out.stats;
    if net.loss > 0.0 {
        assert!(st.retransmissions > 0, "{st:?}");
    }
    if tuples > 1000 {
        assert!(st.spilled > 0 && st.overflows > 0, "{st:?}");
        assert_eq!(st.evicted > 0, replace, "{st:?}");
    }
}

fn hostile() -> NetConfig {
    NetConfig {
        loss: 0.05,
        dup: 0.05,
        reorder: 0.1,
        ..NetConfig::IDEAL
    }
}

/// rust-hdl steps the whole top at a few hundred cycles a second: a small
/// job on a clean network.
#[test]
fn exact_and_model_checked_on_rust_hdl() {
    job("sim:rust-hdl", 200, 2, true, NetConfig::IDEAL, 1);
}

#[test]
fn exact_and_model_checked_on_verilator() {
    if weft_sim::simulator::verilator_usable() {
        job("sim:verilator", 40_000, 4, true, hostile(), 2);
        job("sim:verilator", 40_000, 4, false, hostile(), 3);
    }
}

#[test]
fn exact_and_model_checked_on_the_model() {
    job("sim:model", 40_000, 4, true, hostile(), 4);
}
