//! The AVM pool's witnesses: random control scripts (grants, reclaims
//! during traffic, limits, weights, priorities, mode switches, snapshots,
//! commands while busy, refused limits) with random traffic from every
//! consumer, through the model, rust-hdl and Verilator, which must agree on
//! every output of every cycle; each run is also checked on its own
//! (isolation, counters and histograms equal what the consumers saw, page
//! counts equal what the command results imply).

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::avm::Avm;
use weft_model::avm::driver::{check_run, AvmDriver, AvmRun, Op, Traffic};
use weft_model::avm::{cmd_word, op, AvmIn, AvmModel, AvmOut, CmdResult, CONSUMERS, VPAGES};
use weft_regs::avm as regs;
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory};

struct W {
    hdl: Prepared<Avm>,
    vl: Option<Prepared<Avm>>,
}

fn witnesses() -> &'static W {
    static W: OnceLock<W> = OnceLock::new();
    W.get_or_init(|| {
        let o = SimulatorOptions::default();
        let vl = verilator_usable().then(|| {
            Prepared::new(
                Simulator::Verilator,
                "weft_avm",
                weft_hdl::emit::avm,
                false,
                &o,
            )
            .unwrap()
        });
        // (verilator_usable fails the test itself under
        // WEFT_REQUIRE_VERILATOR=1.)
        W {
            hdl: Prepared::new(
                Simulator::RustHdl,
                "weft_avm",
                weft_hdl::emit::avm,
                false,
                &o,
            )
            .unwrap(),
            vl,
        }
    })
}

/// Pages each consumer holds after `script`, from the command results.
fn pages_after(script: &[Op], run: &AvmRun) -> [u32; CONSUMERS] {
    let mut pages = [0u32; CONSUMERS];
    let mut statuses = run.statuses.iter();
    let mut raw_grant = None;
    for o in script {
        if let Op::Write(a, w) = o {
            if *a == regs::CMD.addr {
                raw_grant = Some(((w >> 4) & 3) as usize);
            }
        }
        if let Op::Command(w) = o {
            let s = *statuses.next().expect("a status per command");
            let c = ((w >> 4) & 3) as usize;
            let res = CmdResult::from_code((s >> 4) & 7);
            // A command written without waiting, then this one: it is
            // refused BUSY exactly when the first one was a granted page
            // still being zeroed.
            if let Some(g) = raw_grant.take() {
                if res == Some(CmdResult::Busy) {
                    pages[g] += 1;
                }
            }
            let ok = res == Some(CmdResult::Ok);
            match w & 3 {
                op::GRANT if ok => pages[c] += 1,
                op::RECLAIM if ok => pages[c] -= s >> 16,
                _ => {}
            }
        }
    }
    pages
}

fn check(script: Vec<Op>, traffic: Traffic, seed: u64) -> Result<AvmRun, String> {
    let w = witnesses();
    let mut f: Vec<Factory<'_, AvmIn, AvmOut>> = vec![
        Box::new(|| -> BoxDut<AvmIn, AvmOut> { Box::new(AvmModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || AvmDriver::new(script.clone(), traffic, seed);
    let mut runs = agree(&f, &make, 200_000)?;
    let run = runs.swap_remove(0).driver.run;
    let pages = pages_after(&script, &run);
    check_run(&run, Some(pages))?;
    Ok(run)
}

fn limits(c: usize, quota: u32, reserve: u32) -> Op {
    Op::Write(regs::GROUPS[c][2].addr, quota | reserve << 8)
}

fn random_script(rng: &mut ChaCha8Rng) -> Vec<Op> {
    let mut s = vec![Op::Write(regs::CTRL.addr, rng.gen_range(0..2))];
    for c in 0..CONSUMERS {
        let q = rng.gen_range(0..=6);
        s.push(limits(c, q, rng.gen_range(0..=q)));
        s.push(Op::Write(regs::GROUPS[c][0].addr, rng.gen_range(0..6)));
        s.push(Op::Write(regs::GROUPS[c][1].addr, rng.gen_range(0..4)));
        for v in 0..rng.gen_range(0..=3) {
            s.push(Op::Command(cmd_word(op::GRANT, c, v)));
        }
    }
    for _ in 0..rng.gen_range(6..18) {
        let c = rng.gen_range(0..CONSUMERS);
        let step = match rng.gen_range(0..11) {
            0 | 1 => Op::Command(cmd_word(op::GRANT, c, rng.gen_range(0..=VPAGES as u32 + 1))),
            2 => Op::Command(cmd_word(op::RECLAIM, c, rng.gen_range(0..4))),
            3 | 4 => Op::Run(rng.gen_range(0..250)),
            5 => Op::Write(regs::GROUPS[c][0].addr, rng.gen_range(0..9)),
            6 => Op::Write(regs::GROUPS[c][1].addr, rng.gen_range(0..4)),
            7 => Op::Write(regs::CTRL.addr, rng.gen_range(0..2)),
            8 => Op::Snapshot,
            // Reservation above quota: refused.
            9 => limits(c, rng.gen_range(0..3), rng.gen_range(3..6)),
            // A grant written without waiting, then the same again: BUSY if the
            // first went through.
            _ => {
                s.push(Op::Write(
                    regs::CMD.addr,
                    cmd_word(op::GRANT, c, rng.gen_range(0..8)),
                ));
                Op::Command(cmd_word(op::RECLAIM, c, 1))
            }
        };
        s.push(step);
    }
    s.push(Op::Run(rng.gen_range(50..200)));
    s
}

fn random_traffic(rng: &mut ChaCha8Rng) -> Traffic {
    Traffic {
        rate: std::array::from_fn(|_| {
            if rng.gen_bool(0.2) {
                1.0
            } else {
                rng.gen_range(0.0..0.8)
            }
        }),
        write: rng.gen_range(0.1..0.9),
        vpages: std::array::from_fn(|_| if rng.gen_bool(0.5) { 0 } else { rng.gen() }),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(32), ..ProptestConfig::default() })]

    #[test]
    fn random_control_and_traffic_agree_with_the_model(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let script = random_script(&mut rng);
        let traffic = random_traffic(&mut rng);
        check(script, traffic, seed).map_err(TestCaseError::fail)?;
    }
}

/// Every consumer hammers the pool's one port at full rate while pages are
/// reclaimed and re-granted under it, in both arbitration modes; one
/// consumer sweeps only virtual pages it does not own.
#[test]
fn everyone_hammering_with_reclaim_during_traffic() {
    for managed in [0, 1] {
        let mut s = vec![Op::Write(regs::CTRL.addr, managed)];
        for c in 0..CONSUMERS {
            s.push(limits(c, 3, 1));
            s.push(Op::Write(regs::GROUPS[c][0].addr, c as u32 + 1));
            for v in 0..3 {
                s.push(Op::Command(cmd_word(op::GRANT, c, v)));
            }
        }
        for round in 0..3 {
            s.push(Op::Run(150));
            s.push(Op::Command(cmd_word(op::RECLAIM, round % CONSUMERS, 3)));
            s.push(Op::Command(cmd_word(op::GRANT, round % CONSUMERS, 5)));
            s.push(Op::Snapshot);
        }
        let traffic = Traffic {
            rate: [1.0; CONSUMERS],
            write: 0.5,
            vpages: [0x27, 0x27, 0x27, 0xf8],
        };
        let run = check(s, traffic, 7 + managed as u64).unwrap();
        let sweeper: Vec<_> = run.responses.iter().filter(|r| r.consumer == 3).collect();
        assert!(sweeper.iter().filter(|r| r.fault).count() > sweeper.len() / 2);
        assert_eq!(run.reclaimed.len(), 6, "{:?}", run.reclaimed);
    }
}
