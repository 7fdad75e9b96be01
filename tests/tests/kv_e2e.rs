//! Key-value aggregation end to end on the RTL card: the host daemon's real
//! traffic (packing, windows, retransmissions over a lossy, duplicating,
//! reordering network) through the card's streams and AXI4-Lite registers,
//! on both simulators. Every record, ack and counter the card produces is
//! checked against the reference model as the job runs, and the sums must
//! equal the exact sums of the input.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashMap;
use weft::kv::{run, JobOptions};
use weft_model::kv_agg::{Config, SENDERS};
use weft_sim::kv_card::{CheckedCard, KvCard};
use weft_sim::net::NetConfig;
use weft_sim::{Engine, EngineOptions, SimDevice};

fn job(engine: Engine, replace: bool, seed: u64) {
    // 512 slots for ~3000 keys: spills, evictions and overflows all happen.
    let dev =
        SimDevice::with_geometry(engine, weft_hdl::this_build(), 6, &EngineOptions::default())
            .unwrap();
    let mut card = CheckedCard::new(Box::new(dev));
    assert_eq!(
        card.config(),
        Config {
            lanes: 8,
            slot_bits: 6,
            senders: SENDERS
        }
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tuples: Vec<(usize, u32, i32)> = (0..6000)
        .map(|i| {
            let key = if i % 3 == 0 {
                rng.gen_range(0..8)
            } else {
                rng.gen_range(0..3000)
            };
            let value = if rng.gen_bool(0.05) {
                i32::MAX
            } else {
                rng.gen_range(-100..100)
            };
            (rng.gen_range(0..4), key, value)
        })
        .collect();
    let mut want: HashMap<u32, i64> = HashMap::new();
    for (_, k, v) in &tuples {
        *want.entry(*k).or_default() += *v as i64;
    }
    let opts = JobOptions {
        workers: 4,
        replace,
        net: NetConfig {
            loss: 0.05,
            dup: 0.05,
            reorder: 0.1,
            ..NetConfig::IDEAL
        },
        seed,
        ..JobOptions::default()
    };
    let out = run(&mut card, opts, tuples).unwrap();
    assert_eq!(out.sums, want, "{engine:?}: sums must be exact");
    let compared = card
        .check_now()
        .unwrap_or_else(|e| panic!("{engine:?}: {e}"));
    assert!(compared > 100);
    let st = &out.stats;
    assert!(
        st.retransmissions > 0 && st.spilled > 0 && st.overflows > 0,
        "{st:?}"
    );
    if replace {
        assert!(st.evicted > 0, "{st:?}");
    } else {
        assert_eq!(st.evicted, 0);
    }
}

#[test]
fn exact_and_model_checked_on_rust_hdl() {
    job(Engine::RustHdl, true, 1);
}

#[test]
fn exact_and_model_checked_on_verilator() {
    if weft_sim::engine::verilator_usable() {
        job(Engine::Verilator, true, 2);
        job(Engine::Verilator, false, 3);
    }
}
