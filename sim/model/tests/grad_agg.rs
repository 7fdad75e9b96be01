//! The gradient engine's model against itself: the cycle-level model
//! ([`GradCycle`]) must produce exactly what the packet-level model
//! predicts, every chunk must come out exact through the host fallback, and
//! the pipeline must take one beat per cycle.

use proptest::prelude::*;
use weft_model::grad_agg::cycle::GradCycle;
use weft_model::grad_agg::driver::{predict, GradDriver, GradTiming, Outcome, Step};
use weft_model::grad_agg::model::counter;
use weft_model::grad_agg::packet::{encode, Header, Kind};
use weft_model::grad_agg::ports::{GradPorts, Lanes16, Lanes4};
use weft_model::grad_agg::workload::{check, generate, prio_write, Gen};
use weft_model::grad_agg::{slot_of, Config};
use weft_model::run;
use weft_regs::grad;

const SMALL: Config = Config {
    lanes: 4,
    slot_bits: 2,
    value_beats: 2,
};

fn play<P: GradPorts>(cfg: Config, steps: &[Step], t: GradTiming, seed: u64) -> GradDriver<P> {
    let mut dut = GradCycle::<P>::new(cfg);
    let mut d = GradDriver::<P>::new(steps.to_vec(), t, seed);
    run(&mut dut, &mut d, 100_000 + 100 * steps.len() as u64).unwrap();
    d
}

fn counters(o: &Outcome) -> Vec<u64> {
    (0..counter::N)
        .map(|i| o.reads[2 * i].1 as u64 | (o.reads[2 * i + 1].1 as u64) << 32)
        .collect()
}

fn timing() -> impl Strategy<Value = GradTiming> {
    (0.0f64..0.6, 0.0f64..0.8).prop_map(|(bubble, m_stall)| GradTiming { bubble, m_stall })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(64), ..ProptestConfig::default() })]

    #[test]
    fn cycle_model_matches_packet_model_and_sums_are_exact(seed in any::<u64>(), t in timing()) {
        let w = generate(SMALL.geometry(), seed, &Gen::mixed());
        let d = play::<Lanes4>(SMALL, &w.steps, t, seed);
        prop_assert_eq!(d.bad_beats, 0);
        let want = predict(SMALL, &w.steps);
        prop_assert_eq!(&d.outcome, &want);
        let rep = check(&w, &d.outcome.packets).map_err(TestCaseError::fail)?;
        prop_assert_eq!(rep.on_card + rep.by_host + rep.conflicts, w.want.len());
    }

    #[test]
    fn clean_traffic_completes_every_chunk_without_conflict(seed in any::<u64>(), slot_bits in 1u32..4) {
        let cfg = Config { slot_bits, ..SMALL };
        let w = generate(cfg.geometry(), seed, &Gen { p_behind: 0.7, behind: 20, ..Gen::clean(4, 6, 6) });
        let d = play::<Lanes4>(cfg, &w.steps, GradTiming::LINE_RATE, seed);
        prop_assert_eq!(&d.outcome, &predict(cfg, &w.steps));
        let rep = check(&w, &d.outcome.packets).map_err(TestCaseError::fail)?;
        prop_assert_eq!(rep.conflicts, 0);
        prop_assert_eq!(rep.on_card + rep.by_host, w.want.len());
        let c = counters(&d.outcome);
        prop_assert_eq!(c[counter::COMPLETED] as usize, rep.on_card);
        // Every packet is summed on the card or forwarded; nothing else.
        prop_assert_eq!(c[counter::PKTS], c[counter::AGGREGATED] + c[counter::FALLBACKS]);
        prop_assert_eq!(d.input_stalls, 0, "no back-pressure, no stall");
    }
}

#[test]
fn card_geometry_matches_the_packet_model() {
    let cfg = Config::CARD;
    let g = Gen {
        chunks: 300,
        ..Gen::mixed()
    };
    let w = generate(cfg.geometry(), 11, &g);
    let t = GradTiming {
        bubble: 0.1,
        m_stall: 0.2,
    };
    let d = play::<Lanes16>(cfg, &w.steps, t, 11);
    assert_eq!(d.outcome, predict(cfg, &w.steps));
    let rep = check(&w, &d.outcome.packets).unwrap();
    assert!(rep.on_card > 0 && rep.by_host > 0, "{rep:?}");
}

fn data(job: u16, chunk: u32, worker: u8, workers: u8, v: i32) -> Step {
    let g = SMALL.geometry();
    Step::Packet(encode(g, &Header::data(g, job, chunk, worker, workers), &[v; 8]).unwrap())
}

#[test]
fn priority_inversion_preempts_then_falls_back() {
    // Job 1 (low) fills all four slots, job 2 (high) takes every one of
    // them; then the priorities flip and job 1's stragglers fall back.
    let mut prio = [0u32; 2];
    let mut steps = vec![prio_write(&mut prio, 1, 3), prio_write(&mut prio, 2, 9)];
    for c in 0..4 {
        steps.push(data(1, c, 0, 2, 1));
    }
    for c in 0..4 {
        // Job 2's chunk c + 3 lands where job 1's chunk c + 4 - 4... every
        // slot: (c + 3 + 2) mod 4 covers 0..4 as c does.
        assert_eq!(slot_of(2, c + 3, 2), (c as usize + 1) % 4);
        steps.push(data(2, c + 3, 0, 2, 5));
    }
    steps.push(prio_write(&mut prio, 1, 15));
    for c in 0..4 {
        steps.push(data(1, c, 1, 2, 1));
    }
    steps.push(Step::Flush);
    let d = play::<Lanes4>(SMALL, &steps, GradTiming::LINE_RATE, 0);
    assert_eq!(d.outcome, predict(SMALL, &steps));
    let kinds: Vec<Kind> = d.outcome.packets.iter().map(|p| p.kind).collect();
    // 4 evictions of job 1; job 1's second workers preempt job 2 back (4
    // more evictions); the flush drains job 1's 4 slots.
    assert_eq!(kinds, vec![Kind::Evict; 12]);
    let c = counters(&d.outcome);
    assert_eq!(c[counter::PREEMPTED], 8);
    assert_eq!(c[counter::FLUSHED], 4);
    assert_eq!(c[counter::FALLBACKS], 0);
}

#[test]
fn adversarial_line_rate_is_one_beat_per_cycle() {
    // Every packet hits slot 0 and preempts the last (rising priorities),
    // so every input packet makes an output packet.
    let mut prio = [0u32; 2];
    let mut steps = vec![];
    for j in 0..16u16 {
        steps.push(prio_write(&mut prio, j as usize, j as u8));
    }
    for j in 0..16u16 {
        steps.push(data(j, (16 - j as u32) % 4, 0, 2, j as i32));
    }
    let d = play::<Lanes4>(SMALL, &steps, GradTiming::LINE_RATE, 0);
    assert_eq!(d.outcome, predict(SMALL, &steps));
    assert_eq!(d.outcome.packets.len(), 15);
    assert_eq!(d.input_stalls, 0);
    assert_eq!(d.beats, 16 * 3);
    assert_eq!(d.stream_cycles(), d.beats, "one beat per cycle");
    let c = counters(&d.outcome);
    assert_eq!(c[counter::PREEMPTED], 15);
    let status = d
        .outcome
        .reads
        .iter()
        .find(|(a, _)| *a == grad::STATUS.addr);
    assert_eq!(status, Some(&(grad::STATUS.addr, 0)));
}

#[test]
fn back_pressure_holds_the_input_and_loses_nothing() {
    let w = generate(SMALL.geometry(), 5, &Gen::clean(2, 3, 8));
    let t = GradTiming {
        bubble: 0.0,
        m_stall: 0.9,
    };
    let d = play::<Lanes4>(SMALL, &w.steps, t, 5);
    assert!(d.input_stalls > 0);
    assert_eq!(d.outcome, predict(SMALL, &w.steps));
    check(&w, &d.outcome.packets).unwrap();
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200), lanes in 1usize..20, beats in 0usize..6) {
        use weft_model::grad_agg::host::HostMerge;
        use weft_model::grad_agg::packet::{decode, validate, Geometry};
        use weft_model::grad_agg::GradModel;
        let geo = Geometry { lanes, value_beats: beats };
        let _ = decode(geo, &bytes);
        let _ = validate(geo, &bytes, bytes.len());
        let _ = HostMerge::new(geo).accept(&bytes);
        let mut m = GradModel::new(SMALL);
        prop_assert!(m.packet(&bytes).is_none() || bytes.len() == SMALL.geometry().packet_bytes());
        // A well-framed packet with arbitrary contents, through the host.
        let mut framed = bytes.clone();
        framed.resize(SMALL.geometry().packet_bytes(), 0);
        let _ = HostMerge::new(SMALL.geometry()).accept(&framed);
        let _ = m.packet(&framed);
    }
}
