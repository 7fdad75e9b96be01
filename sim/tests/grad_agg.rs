//! The gradient engine's three witnesses: the cycle-level model, rust-hdl
//! and Verilator must agree on every output of every cycle; what comes out
//! must be what the packet-level model predicts; and every chunk, completed
//! on the card or by the host fallback, must sum exactly.

use proptest::prelude::*;
use std::sync::OnceLock;
use weft_hdl::grad_agg::GradAgg;
use weft_model::grad_agg::cycle::GradCycle;
use weft_model::grad_agg::driver::{predict, GradDriver, GradTiming, Step};
use weft_model::grad_agg::model::counter;
use weft_model::grad_agg::packet::{encode, Header, Kind};
use weft_model::grad_agg::ports::{GradPorts, Lanes16, Lanes4, Lanes8};
use weft_model::grad_agg::workload::{check, generate, prio_write, Gen, Report, Workload};
use weft_model::grad_agg::{slot_of, Config};
use weft_sim::hdl::HdlPorts;
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory};

/// The engine at one geometry: the model and both simulators (Verilator
/// when usable).
struct Witnesses<P: GradPorts, B: HdlPorts<In = P::In, Out = P::Out>> {
    cfg: Config,
    hdl: Option<Prepared<B>>,
    vl: Option<Prepared<B>>,
    _p: std::marker::PhantomData<P>,
}

impl<P, B> Witnesses<P, B>
where
    P: GradPorts + Send + 'static,
    B: HdlPorts<In = P::In, Out = P::Out> + Send + 'static,
{
    fn new(cfg: Config, make: fn() -> B, rust_hdl: bool) -> Self {
        let module = format!(
            "weft_grad_agg_{}x{}x{}",
            cfg.lanes, cfg.slot_bits, cfg.value_beats
        );
        let o = SimulatorOptions::default();
        Self {
            cfg,
            hdl: rust_hdl
                .then(|| Prepared::new(Simulator::RustHdl, &module, make, false, &o).unwrap()),
            vl: verilator_usable()
                .then(|| Prepared::new(Simulator::Verilator, &module, make, false, &o).unwrap()),
            _p: std::marker::PhantomData,
        }
    }

    /// Run `steps` on every witness; require cycle-level agreement with
    /// the model and the packet-level model's outcome. Returns the model's
    /// driver.
    fn check(
        &self,
        steps: &[Step],
        timing: GradTiming,
        seed: u64,
    ) -> Result<GradDriver<P>, String> {
        let want = predict(self.cfg, steps);
        let cfg = self.cfg;
        let mut w: Vec<Factory<'_, P::In, P::Out>> =
            vec![Box::new(move || -> BoxDut<P::In, P::Out> {
                Box::new(GradCycle::<P>::new(cfg))
            })];
        if let Some(h) = &self.hdl {
            w.push(Box::new(|| h.instantiate(None).unwrap()));
        }
        if let Some(vl) = &self.vl {
            w.push(Box::new(|| vl.instantiate(None).unwrap()));
        }
        let make = || GradDriver::<P>::new(steps.to_vec(), timing, seed);
        let flushes = steps
            .iter()
            .filter(|s| matches!(s, Step::Write { .. } | Step::Flush))
            .count() as u64;
        let limit = 400 * steps.len() as u64
            + flushes * (cfg.slots() * (cfg.value_beats + 1)) as u64 * 20
            + 10_000;
        let mut runs = agree(&w, &make, limit)?;
        for r in &runs {
            if r.driver.bad_beats > 0 {
                return Err(format!("{}: output beats with a bad kind", r.witness));
            }
            if r.driver.outcome.packets != want.packets {
                let got = &r.driver.outcome.packets;
                let at = got.iter().zip(&want.packets).position(|(a, b)| a != b);
                return Err(format!(
                    "{}: {} packets out, the packet model predicts {}; first difference at {at:?}",
                    r.witness,
                    got.len(),
                    want.packets.len()
                ));
            }
            if r.driver.outcome.reads != want.reads {
                return Err(format!(
                    "{}: registers differ:\n got {:x?}\nwant {:x?}",
                    r.witness, r.driver.outcome.reads, want.reads
                ));
            }
        }
        Ok(runs.swap_remove(0).driver)
    }

    /// A workload through every witness, then the exactness check.
    fn workload(
        &self,
        w: &Workload,
        t: GradTiming,
        seed: u64,
    ) -> Result<(GradDriver<P>, Report), String> {
        let d = self.check(&w.steps, t, seed)?;
        let rep = check(w, &d.outcome.packets)?;
        Ok((d, rep))
    }
}

type Narrow = GradAgg<4, 128, 2, 2, 3>;
type OneBeat = GradAgg<4, 128, 3, 1, 3>;
type TwoSlots = GradAgg<4, 128, 1, 4, 3>;
type Eight = GradAgg<8, 256, 3, 2, 4>;
type Wide = GradAgg<16, 512, 4, 4, 6>;
type Card = GradAgg<16, 512, 8, 4, 10>;

fn narrow() -> &'static Witnesses<Lanes4, Narrow> {
    static W: OnceLock<Witnesses<Lanes4, Narrow>> = OnceLock::new();
    W.get_or_init(|| {
        let cfg = Config {
            lanes: 4,
            slot_bits: 2,
            value_beats: 2,
        };
        Witnesses::new(cfg, weft_hdl::emit::grad_agg::<4, 128, 2, 2, 3>, true)
    })
}

fn one_beat() -> &'static Witnesses<Lanes4, OneBeat> {
    static W: OnceLock<Witnesses<Lanes4, OneBeat>> = OnceLock::new();
    W.get_or_init(|| {
        let cfg = Config {
            lanes: 4,
            slot_bits: 3,
            value_beats: 1,
        };
        Witnesses::new(cfg, weft_hdl::emit::grad_agg::<4, 128, 3, 1, 3>, true)
    })
}

fn two_slots() -> &'static Witnesses<Lanes4, TwoSlots> {
    static W: OnceLock<Witnesses<Lanes4, TwoSlots>> = OnceLock::new();
    W.get_or_init(|| {
        let cfg = Config {
            lanes: 4,
            slot_bits: 1,
            value_beats: 4,
        };
        Witnesses::new(cfg, weft_hdl::emit::grad_agg::<4, 128, 1, 4, 3>, true)
    })
}

fn eight() -> &'static Witnesses<Lanes8, Eight> {
    static W: OnceLock<Witnesses<Lanes8, Eight>> = OnceLock::new();
    W.get_or_init(|| {
        let cfg = Config {
            lanes: 8,
            slot_bits: 3,
            value_beats: 2,
        };
        Witnesses::new(cfg, weft_hdl::emit::grad_agg::<8, 256, 3, 2, 4>, true)
    })
}

fn wide() -> &'static Witnesses<Lanes16, Wide> {
    static W: OnceLock<Witnesses<Lanes16, Wide>> = OnceLock::new();
    W.get_or_init(|| {
        let cfg = Config {
            lanes: 16,
            slot_bits: 4,
            value_beats: 4,
        };
        Witnesses::new(cfg, weft_hdl::emit::grad_agg::<16, 512, 4, 4, 6>, true)
    })
}

/// The card's geometry: the model and Verilator only (rust-hdl simulates
/// 512-bit datapaths and 256 slots slowly; the narrow builds cover it).
fn card() -> &'static Witnesses<Lanes16, Card> {
    static W: OnceLock<Witnesses<Lanes16, Card>> = OnceLock::new();
    W.get_or_init(|| {
        Witnesses::new(
            Config::CARD,
            weft_hdl::emit::grad_agg::<16, 512, 8, 4, 10>,
            false,
        )
    })
}

fn timing() -> impl Strategy<Value = GradTiming> {
    (0.0f64..0.6, 0.0f64..0.8).prop_map(|(bubble, m_stall)| GradTiming { bubble, m_stall })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(16), ..ProptestConfig::default() })]

    #[test]
    fn narrow_engine_agrees_and_sums_exactly(seed in any::<u64>(), t in timing()) {
        let w = generate(narrow().cfg.geometry(), seed, &Gen::mixed());
        narrow().workload(&w, t, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(6), ..ProptestConfig::default() })]

    #[test]
    fn one_beat_chunks_agree(seed in any::<u64>(), t in timing()) {
        let w = generate(one_beat().cfg.geometry(), seed, &Gen { chunks: 6, ..Gen::mixed() });
        one_beat().workload(&w, t, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn two_slots_every_one_contended(seed in any::<u64>(), t in timing()) {
        let g = Gen { jobs: 4, chunks: 4, ..Gen::mixed() };
        let w = generate(two_slots().cfg.geometry(), seed, &g);
        two_slots().workload(&w, t, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn eight_lane_engine_agrees(seed in any::<u64>(), t in timing()) {
        let w = generate(eight().cfg.geometry(), seed, &Gen::mixed());
        eight().workload(&w, t, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(3), ..ProptestConfig::default() })]

    #[test]
    fn wide_engine_agrees(seed in any::<u64>(), t in timing()) {
        let g = Gen { jobs: 4, chunks: 6, ..Gen::mixed() };
        let w = generate(wide().cfg.geometry(), seed, &g);
        wide().workload(&w, t, seed).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn card_geometry_agrees_in_verilator() {
    let g = Gen {
        jobs: 6,
        max_workers: 8,
        chunks: 60,
        ..Gen::mixed()
    };
    let w = generate(Config::CARD.geometry(), 3, &g);
    let t = GradTiming {
        bubble: 0.1,
        m_stall: 0.3,
    };
    let (_, rep) = card().workload(&w, t, 3).unwrap();
    assert!(rep.on_card > 0 && rep.by_host > 0, "{rep:?}");
}

fn data(cfg: Config, job: u16, chunk: u32, worker: u8, workers: u8, v: i32) -> Step {
    let g = cfg.geometry();
    let vals = vec![v; g.chunk_values()];
    Step::Packet(encode(g, &Header::data(g, job, chunk, worker, workers), &vals).unwrap())
}

fn counters(d: &GradDriver<impl GradPorts>) -> Vec<u64> {
    let r = &d.outcome.reads;
    (0..counter::N)
        .map(|i| r[2 * i].1 as u64 | (r[2 * i + 1].1 as u64) << 32)
        .collect()
}

#[test]
fn priority_inversions_preempt_both_ways() {
    let cfg = narrow().cfg;
    let mut prio = [0u32; 2];
    let mut steps = vec![prio_write(&mut prio, 1, 2), prio_write(&mut prio, 2, 7)];
    // Job 1 holds every slot; job 2 takes them all; then job 1 is raised
    // above job 2 and takes them back; equal priorities then fall back.
    for c in 0..4 {
        steps.push(data(cfg, 1, c, 0, 3, 1));
    }
    for c in 0..4 {
        assert_eq!(slot_of(2, c + 3, 2), slot_of(1, c, 2));
        steps.push(data(cfg, 2, c + 3, 0, 3, 10));
    }
    steps.push(prio_write(&mut prio, 1, 12));
    for c in 0..4 {
        steps.push(data(cfg, 1, c, 1, 3, 1));
    }
    steps.push(prio_write(&mut prio, 2, 12));
    for c in 0..4 {
        steps.push(data(cfg, 2, c + 3, 1, 3, 10));
    }
    steps.push(Step::Flush);
    let d = narrow().check(&steps, GradTiming::LINE_RATE, 1).unwrap();
    let c = counters(&d);
    assert_eq!(c[counter::PREEMPTED], 8);
    assert_eq!(c[counter::FALLBACKS], 4);
    assert_eq!(c[counter::FLUSHED], 4);
    let kinds: Vec<Kind> = d.outcome.packets.iter().map(|p| p.kind).collect();
    let mut want = vec![Kind::Evict; 8];
    want.extend([Kind::Fallback; 4]);
    want.extend([Kind::Evict; 4]);
    assert_eq!(kinds, want);
}

#[test]
fn late_copies_are_dropped_and_stale_claims_evicted() {
    let cfg = narrow().cfg;
    let slots = cfg.slots() as u32;
    let steps = vec![
        // Chunk 0 of job 1 completes; worker 0's late copy is dropped and
        // claims nothing.
        data(cfg, 1, 0, 0, 2, 3),
        data(cfg, 1, 0, 1, 2, 4),
        data(cfg, 1, 0, 0, 2, 3),
        // Chunk `slots` (same slot) claims the done slot and completes; a copy
        // of chunk 0 now claims the slot (its done mark is gone), and chunk
        // 2 * slots of the same job evicts that stale claim at equal priority.
        data(cfg, 1, slots, 0, 2, 5),
        data(cfg, 1, slots, 1, 2, 6),
        data(cfg, 1, 0, 1, 2, 4),
        data(cfg, 1, 2 * slots, 0, 2, 7),
        // An older chunk meeting a newer one of its job falls back.
        data(cfg, 1, slots, 0, 2, 5),
        // Chunk 2 * slots completes; after a flush (which clears done marks)
        // a copy of it claims the slot afresh.
        data(cfg, 1, 2 * slots, 1, 2, 8),
        Step::Flush,
        data(cfg, 1, 2 * slots, 1, 2, 8),
        Step::Flush,
    ];
    let d = narrow().check(&steps, GradTiming::LINE_RATE, 3).unwrap();
    let kinds: Vec<Kind> = d.outcome.packets.iter().map(|p| p.kind).collect();
    use Kind::*;
    assert_eq!(kinds, vec![Result, Result, Evict, Fallback, Result, Evict]);
    let c = counters(&d);
    assert_eq!(
        (
            c[counter::DUPLICATES],
            c[counter::PREEMPTED],
            c[counter::FALLBACKS]
        ),
        (1, 1, 1)
    );
}

#[test]
fn workers_far_behind_and_every_slot_contended() {
    // Six jobs on four slots, one worker of each starting 60 packets late:
    // slots stay half full while later chunks keep arriving.
    let g = Gen {
        jobs: 6,
        max_workers: 5,
        chunks: 8,
        p_behind: 1.0,
        behind: 60,
        ..Gen::clean(6, 5, 8)
    };
    for seed in 0..3 {
        let w = generate(narrow().cfg.geometry(), seed, &g);
        let (d, rep) = narrow().workload(&w, GradTiming::LINE_RATE, seed).unwrap();
        assert_eq!(rep.conflicts, 0);
        assert_eq!(d.input_stalls, 0);
        let c = counters(&d);
        assert!(c[counter::FALLBACKS] + c[counter::PREEMPTED] > 0, "{c:?}");
    }
}

#[test]
fn duplicates_malformed_flushes_and_back_pressure() {
    let g = Gen {
        p_dup: 0.3,
        p_malformed: 0.3,
        p_flush: 0.1,
        p_reset: 0.05,
        ..Gen::mixed()
    };
    let t = GradTiming {
        bubble: 0.2,
        m_stall: 0.9,
    };
    let w = generate(narrow().cfg.geometry(), 77, &g);
    let (d, _) = narrow().workload(&w, t, 77).unwrap();
    assert!(d.input_stalls > 0, "back-pressure reaches the input");
}

/// Adversarial line-rate traffic on the narrow engine: every packet
/// preempts the one before (one output packet per input packet), then every
/// packet falls back, then every packet is a duplicate.
fn adversarial(cfg: Config) -> Vec<Step> {
    let mut prio = [0u32; 2];
    let mut steps = vec![];
    for j in 0..16u16 {
        steps.push(prio_write(&mut prio, j as usize, j as u8));
    }
    let s = cfg.slots() as u32;
    for round in 0..s.min(4) {
        for j in 0..16u16 {
            // (chunk + job) mod slots = round: the round's slot, fresh.
            let chunk = 16 * s + round - j as u32;
            steps.push(data(cfg, j, chunk, 0, 2, j as i32));
        }
    }
    // Job 15 now holds those slots: the lowest-priority job falls back...
    let rounds = s.min(4);
    for j in 0..16u32 {
        steps.push(data(cfg, 0, (32 + j) * s + j % rounds, 1, 2, 1));
    }
    // ...and job 15's first worker repeats itself.
    for _ in 0..16 {
        steps.push(data(cfg, 15, 16 * s - 15, 0, 2, 1));
    }
    steps
}

/// Play the adversarial script at line rate and require II = 1.
fn line_rate<P, B>(w: &Witnesses<P, B>)
where
    P: GradPorts + Send + 'static,
    B: HdlPorts<In = P::In, Out = P::Out> + Send + 'static,
{
    let cfg = w.cfg;
    let steps = adversarial(cfg);
    let d = w.check(&steps, GradTiming::LINE_RATE, 0).unwrap();
    let per_cycle = d.beats as f64 / d.stream_cycles() as f64;
    let out_per_in = d.out_beats as f64 / d.beats as f64;
    let values = per_cycle * cfg.geometry().chunk_values() as f64 / (1 + cfg.value_beats) as f64;
    eprintln!(
        "grad_agg {}x{}x{}: {} input beats in {} cycles = {per_cycle:.3} beats/cycle \
         ({values:.2} values/cycle); {} output beats ({out_per_in:.2} per input beat); \
         {} input stalls",
        cfg.lanes,
        cfg.slot_bits,
        cfg.value_beats,
        d.beats,
        d.stream_cycles(),
        d.out_beats,
        d.input_stalls
    );
    assert_eq!(d.input_stalls, 0, "the input must never be held off");
    assert_eq!(d.stream_cycles(), d.beats, "II = 1");
    let c = counters(&d);
    assert!(c[counter::PREEMPTED] >= 60, "{c:?}");
    assert!(
        c[counter::FALLBACKS] >= 16 && c[counter::DUPLICATES] >= 16,
        "{c:?}"
    );
    // Every duplicate of a chunk in progress is answered with a NACK (a
    // RESULT with the NACK flag naming who is in); late copies are not.
    let nacks = d
        .outcome
        .packets
        .iter()
        .filter(|p| Header::decode(&p.bytes).and_then(|h| h.kind()) == Some(Kind::Nack))
        .count() as u64;
    assert!(
        nacks >= 16 && nacks <= c[counter::DUPLICATES],
        "{nacks} NACKs, {c:?}"
    );
    assert!(
        out_per_in > 0.6,
        "most packets produce output: {out_per_in}"
    );
}

#[test]
fn line_rate_is_one_beat_per_cycle_under_adversarial_traffic() {
    line_rate(narrow());
    line_rate(wide());
    line_rate(card());
}

#[test]
fn every_geometry_lints_clean_with_documented_waivers() {
    if !verilator_usable() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let waivers = dir.path().join("waivers.vlt");
    std::fs::write(&waivers, weft_hdl::lint::WAIVERS).unwrap();
    let all = weft_hdl::emit::all(&weft_hdl::this_build());
    let card = all
        .iter()
        .find(|e| e.name == "grad_agg")
        .expect("grad_agg is emitted");
    let narrow = weft_hdl::emit::verilog_of(
        &weft_hdl::emit::grad_agg::<4, 128, 2, 2, 3>(),
        "weft_grad_agg_narrow",
    );
    let one = weft_hdl::emit::verilog_of(
        &weft_hdl::emit::grad_agg::<4, 128, 3, 1, 3>(),
        "weft_grad_agg_one",
    );
    for (v, module) in [
        (card.verilog.clone(), "weft_grad_agg".to_string()),
        (narrow, "weft_grad_agg_narrow".into()),
        (one, "weft_grad_agg_one".into()),
    ] {
        let rep = weft_sim::verilator::lint(&v, &module, Some(&waivers)).unwrap();
        assert!(rep.clean, "{module}: {:#?}", rep.warnings);
    }
}

/// The card's geometry (16 lanes, 256 slots, 4 value beats) on Verilator
/// and the cycle-level model, compared on every output of every cycle, for
/// at least [`weft_model::soak_cycles`] cycles of random adversarial
/// traffic — many jobs and workers contending for slots, duplicates,
/// malformed copies, stragglers far behind, priority changes, flushes and
/// counter resets, input bubbles and output back-pressure — and every run
/// checked for exact sums. Seeded; `WEFT_SOAK=1` runs the 10^6-cycle soak.
#[test]
fn card_geometry_soak_on_verilator() {
    // Skips without Verilator, fails when WEFT_REQUIRE_VERILATOR=1.
    if !verilator_usable() {
        return;
    }
    let target = weft_model::soak_cycles(40_000);
    let (mut cycles, mut seed, mut on_card) = (0u64, 0x50a6u64, 0u64);
    while cycles < target {
        let g = Gen {
            jobs: 8,
            max_workers: 12,
            chunks: 80,
            ..Gen::mixed()
        };
        let w = generate(Config::CARD.geometry(), seed, &g);
        let t = GradTiming {
            bubble: (seed % 4) as f64 * 0.1,
            m_stall: (seed % 5) as f64 * 0.15,
        };
        let (d, rep) = card()
            .workload(&w, t, seed)
            .unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        on_card += rep.on_card as u64;
        cycles += d.cycles;
        seed += 1;
    }
    // Contention may push a whole run to the host; the soak as a whole
    // must exercise the card.
    assert!(on_card > 0, "no chunk completed on the card");
    eprintln!("grad_agg soak: {cycles} cycles at 16 lanes x 256 slots, seeds 0x50a6..{seed:#x}, {on_card} chunks completed on the card");
}
