//! The AVM host side: the contention preset reproduces the NicOS effect
//! without management and the SLO policy removes it (on the reference
//! model, which the RTL equals cycle for cycle — sim/tests/avm.rs), scenario
//! files are checked field by field, actions are range-checked, and the
//! command line reports and refuses clearly.

mod common;

use common::weft;
use weft::avm::{self, Act, AvmError, BlockSim, PoolFactory, PoolPolicy, ScenarioOptions};

fn model() -> PoolFactory {
    PoolFactory::new(BlockSim::Model, None).unwrap()
}

fn run(s: &avm::Scenario, policy: PoolPolicy, seeds: u32) -> avm::ScenarioReport {
    avm::run_scenario(
        &model(),
        s,
        &ScenarioOptions {
            policy,
            cycles: None,
            seeds,
        },
    )
    .unwrap()
}

#[test]
fn contention_inflates_the_victims_tail_and_the_slo_policy_flattens_it() {
    let s = avm::preset("contention").unwrap();
    let none = run(&s, PoolPolicy::None, 1);
    let victim = &none.seeds[0].consumers[0];
    assert_eq!(victim.role, "victim");
    let inflation = victim.p99_inflation.unwrap();
    assert!(inflation >= 2.0, "unmanaged p99 inflation {inflation}");
    assert_eq!(none.seeds[0].actions, 0);

    let slo = run(&s, PoolPolicy::Slo, 1);
    let inflation = slo.seeds[0].consumers[0].p99_inflation.unwrap();
    assert!(inflation <= 1.1, "managed p99 inflation {inflation}");
    assert!(slo.seeds[0].actions > 0);
    for a in &slo.seeds[0].consumers[1..] {
        let kept = a.throughput_retained.unwrap();
        assert!(kept >= 0.8, "{} kept {kept}", a.name);
        assert_eq!(a.together.faults, 0);
    }
}

/// Every shipped scenario whose SLOs are feasible: every victim misses
/// unmanaged and meets its own SLO under SloGuard, in every seed, and the
/// aggressors keep what the victims leave them.
#[test]
fn every_feasible_shipped_scenario_is_met_under_slo_and_missed_under_none() {
    for (name, _) in avm::scenario::PRESETS {
        if name == "infeasible" {
            continue;
        }
        let s = avm::preset(name).unwrap();
        let none = run(&s, PoolPolicy::None, 1);
        for c in none.seeds[0]
            .consumers
            .iter()
            .filter(|c| c.role == "victim")
        {
            assert_eq!(c.slo_met, Some(false), "{name}: {} met unmanaged", c.name);
        }
        let slo = run(&s, PoolPolicy::Slo, 3);
        assert!(slo.all_met, "{name}: {:#?}", slo.worst);
        assert!(
            slo.seeds.iter().all(|r| r.events.is_empty()),
            "{name}: a feasible SLO reported infeasible"
        );
        for w in slo.worst.iter().filter(|w| w.role == "aggressor") {
            // Overload: the aggressors offer more than the port has; the
            // victims take only their own load.
            let floor = if name == "overload" { 0.55 } else { 0.95 };
            let kept = w.throughput_retained.unwrap();
            assert!(kept >= floor, "{name}: {} kept {kept}", w.name);
        }
    }
}

/// Contention from mid-run: the controller reacts within a few windows of
/// the first miss, and the victims meet their SLOs after it.
#[test]
fn the_controller_reacts_to_contention_that_starts_mid_run() {
    let s = avm::preset("mid-run").unwrap();
    let r = run(&s, PoolPolicy::Slo, 3);
    for seed in &r.seeds {
        let re = &seed.reaction;
        let miss = re.first_miss.expect("the aggressors' arrival is a miss");
        assert!(miss > 24_000, "no miss before the aggressors: {re:?}");
        let cycles = re.cycles.expect("recovered");
        assert!(cycles <= 12 * s.window, "seed {}: {re:?}", seed.seed);
    }
    assert!(r.all_met);
    assert_eq!(
        r.worst_reaction,
        r.seeds.iter().filter_map(|x| x.reaction.cycles).max()
    );
}

/// An SLO below what the victim sees alone is reported infeasible, once per
/// seed, and the guard stops acting instead of oscillating.
#[test]
fn an_infeasible_slo_is_reported_and_the_guard_holds() {
    let s = avm::preset("infeasible").unwrap();
    let r = run(&s, PoolPolicy::Slo, 2);
    assert!(!r.all_met);
    for seed in &r.seeds {
        let kinds: Vec<_> = seed
            .events
            .iter()
            .map(|e| (e.consumer.as_str(), e.kind))
            .collect();
        assert_eq!(kinds, [("victim", "infeasible")], "seed {}", seed.seed);
        // Weights and classes once, the lift, then nothing.
        assert!(
            seed.actions <= 3 * s.consumers.len(),
            "{} actions",
            seed.actions
        );
    }
}

#[test]
fn scenario_errors_name_the_field() {
    let base = avm::scenario::PRESETS[0].1;
    let cases = [
        (
            base.replacen("reserve = 1", "reserve = 9", 1),
            "consumer[1] (dma).reserve",
        ),
        (
            base.replacen("rate = 0.28", "rate = 2.0", 1),
            "traffic.rate",
        ),
        (base.replacen("pages = 4", "pages = 0", 1), "(dma).pages"),
        (base.replacen("burst = 8", "burst = 0", 1), "traffic.burst"),
        (
            base.replacen("name = \"dma\"", "name = \"dma\"\nstart = 40000", 1),
            "(dma).start",
        ),
        (
            base.replacen("warmup = 8000", "warmup = 90000", 1),
            "warmup",
        ),
        (base.replacen("slo_p99 = 6", "", 1), "no victim"),
        (
            base.replacen("quota = 2", "quota = 2\ncolour = 1", 1),
            "colour",
        ),
        (
            base.replacen("name = \"crypto\"", "name = \"dma\"", 1),
            "name",
        ),
    ];
    for (text, field) in cases {
        let e = avm::parse(&text).unwrap_err().to_string();
        assert!(e.contains(field), "{field}: {e}");
    }
    assert!(avm::preset("nope").is_err());
}

#[test]
fn actions_are_checked_and_commands_report_refusals() {
    let s = avm::preset("contention").unwrap();
    let f = model();
    let mut pool = f
        .pool(s.consumers.iter().map(|c| c.name.clone()).collect())
        .unwrap();
    avm::configure(&mut pool, &s, avm::Arbitration::FirstCome).unwrap();
    assert!(matches!(
        pool.act("nobody", Act::Weight(2)),
        Err(AvmError::UnknownConsumer { .. })
    ));
    assert!(matches!(
        pool.act("dma", Act::Weight(300)),
        Err(AvmError::OutOfRange { .. })
    ));
    assert!(matches!(
        pool.act("dma", Act::Reserve(7)),
        Err(AvmError::Limits { .. })
    ));
    // The victim holds its quota (2 of 2): a third page is refused.
    let e = pool.act("victim", Act::Grant(5)).unwrap_err().to_string();
    assert!(e.contains("quota"), "{e}");
    // dma holds 4 pages with reservation 1: reclaiming 9 takes 3.
    let o = pool.act("dma", Act::Reclaim(9)).unwrap();
    assert_eq!(o.taken, Some(3));
    let snap = pool.observe().unwrap();
    let pages: Vec<u32> = snap.consumers.iter().map(|c| c.pages).collect();
    assert_eq!(pages, [2, 1, 3, 3]);
    avm::run_traffic(&mut pool, &s, 3000);
    let snap = pool.observe().unwrap();
    let dma = &snap.consumers[1];
    // dma's sequential sweep covers 4 pages and now owns 1: the rest fault.
    assert!(dma.faults > 0 && dma.faults < dma.requests, "{dma:?}");
    assert_eq!(dma.hist.iter().sum::<u64>(), dma.grants);
}

#[test]
fn cli_scenario_json_observe_and_refusals() {
    let (ok, out, err) = weft(&[
        "avm",
        "scenario",
        "--preset",
        "contention",
        "--policy",
        "none",
        "--sim",
        "model",
        "--cycles",
        "12000",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["policy"], "none");
    let c = &v["seeds"][0]["consumers"];
    assert!(c[0]["p99_inflation"].as_f64().unwrap() > 1.0);
    assert!(c[1]["throughput_retained"].is_number());
    assert_eq!(v["worst"][0]["slo_met"], false);

    // Observe on the card, after a MemOps trace through it: the pool's
    // consumers are MemOps' destinations.
    let ex = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/memops/");
    let (ok, out, err) = weft(&[
        "avm",
        "observe",
        "--device",
        "sim:model",
        "--program",
        &format!("{ex}pool.toml"),
        "--trace",
        &format!("{ex}pool.trace"),
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let c = &v["snapshot"]["consumers"];
    assert_eq!(c[0]["name"], "port0");
    // pool.trace: three accesses reach port 0, four port 2.
    assert_eq!(c[0]["requests"], 3);
    assert_eq!(c[2]["requests"], 4);
    assert_eq!(c[2]["pages"], 4);

    // Act on the card: a quota is set; a page for a consumer of a fresh
    // card (quota 0) is refused, saying why.
    let (ok, out, err) = weft(&[
        "avm",
        "act",
        "--consumer",
        "port1",
        "--quota",
        "3",
        "--device",
        "sim:model",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("port1: Quota(3) applied"), "{out}");
    let (ok, _, err) = weft(&[
        "avm",
        "act",
        "--consumer",
        "port1",
        "--grant",
        "0",
        "--device",
        "sim:model",
    ]);
    assert!(
        !ok && err.contains("port1: refused: it holds its quota"),
        "{err}"
    );
    let (ok, _, err) = weft(&[
        "avm",
        "act",
        "--consumer",
        "port1",
        "--weight",
        "300",
        "--device",
        "sim:model",
    ]);
    assert!(!ok);
    assert!(err.contains("weight 300 is out of range"), "{err}");
    let (ok, _, err) = weft(&[
        "avm",
        "act",
        "--consumer",
        "dma",
        "--weight",
        "3",
        "--device",
        "sim:model",
    ]);
    assert!(!ok && err.contains("port0"), "{err}");

    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bad.toml");
    std::fs::write(&f, "cycles = 100\n").unwrap();
    let (ok, _, err) = weft(&["avm", "scenario", "--file", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("bad.toml") && err.contains("consumer"),
        "{err}"
    );
}
