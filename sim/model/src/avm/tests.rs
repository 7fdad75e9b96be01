use super::driver::{check_run, AvmDriver, AvmRun, Op, Traffic};
use super::*;
use crate::dut::run;
use weft_regs::avm as regs;

fn go(script: Vec<Op>, traffic: Traffic, seed: u64) -> AvmRun {
    let mut m = AvmModel::new();
    let mut d = AvmDriver::new(script, traffic, seed);
    run(&mut m, &mut d, 200_000).unwrap();
    d.run
}

fn limits(c: usize, quota: u32, reserve: u32) -> Op {
    Op::Write(regs::GROUPS[c][2].addr, quota | reserve << 8)
}

fn grant(c: usize, v: u32) -> Op {
    Op::Command(cmd_word(op::GRANT, c, v))
}

fn result(status: u32) -> CmdResult {
    CmdResult::from_code((status >> 4) & 7).unwrap()
}

const QUIET: Traffic = Traffic {
    rate: [0.0; CONSUMERS],
    write: 0.5,
    vpages: [0; CONSUMERS],
};

#[test]
fn grants_respect_quota_pages_and_reclaim_stops_at_the_reservation() {
    let script = vec![
        limits(0, 2, 1),
        grant(0, 0),
        grant(0, 3),
        grant(0, 4),
        grant(0, 3),
        grant(0, 9),
        Op::Command(cmd_word(op::RECLAIM, 0, 5)),
        // Reservation above quota: refused, limits unchanged.
        limits(1, 1, 2),
        Op::Command(cmd_word(0, 1, 0)),
        Op::Snapshot,
    ];
    let r = go(script, QUIET, 1);
    let res: Vec<CmdResult> = r.statuses.iter().map(|&s| result(s)).collect();
    assert_eq!(
        res,
        [
            CmdResult::Ok,
            CmdResult::Ok,
            CmdResult::Quota,
            CmdResult::Page,
            CmdResult::Page,
            CmdResult::Ok,
            CmdResult::Op
        ]
    );
    assert_eq!((r.statuses[1] >> 8) & 0xff, 1, "second grant: page 1");
    assert_eq!(r.statuses[5] >> 16, 1, "one page reclaimed");
    assert_eq!(r.reclaimed, vec![(0, 3)], "highest virtual page first");
    check_run(&r, Some([1, 0, 0, 0])).unwrap();
}

#[test]
fn a_sweep_of_unowned_addresses_faults_and_touches_nothing() {
    let mut script = vec![limits(0, 4, 0), limits(1, 4, 0)];
    for v in 0..4 {
        script.push(grant(0, v));
    }
    script.push(grant(1, 0));
    script.push(Op::Run(3000));
    let traffic = Traffic {
        rate: [0.5, 1.0, 0.0, 0.0],
        write: 0.6,
        vpages: [0x0f, 0xfe, 0, 0],
    };
    let r = go(script, traffic, 2);
    check_run(&r, Some([4, 1, 0, 0])).unwrap();
    let faults = r
        .responses
        .iter()
        .filter(|s| s.consumer == 1 && s.fault)
        .count();
    let all = r.responses.iter().filter(|s| s.consumer == 1).count();
    assert!(all > 1000 && faults == all, "{faults} of {all}");
    assert!(r
        .responses
        .iter()
        .any(|s| s.consumer == 0 && !s.write && s.data != 0));
}

fn share(managed: bool, weights: [u32; CONSUMERS], prios: [u32; CONSUMERS]) -> AvmRun {
    let mut script = vec![Op::Write(regs::CTRL.addr, managed as u32)];
    for c in 0..CONSUMERS {
        script.push(limits(c, 1, 0));
        script.push(grant(c, 0));
        script.push(Op::Write(regs::GROUPS[c][0].addr, weights[c]));
        script.push(Op::Write(regs::GROUPS[c][1].addr, prios[c]));
    }
    script.push(Op::Snapshot);
    script.push(Op::Run(4000));
    let traffic = Traffic {
        rate: [1.0; CONSUMERS],
        write: 0.5,
        vpages: [1; CONSUMERS],
    };
    go(script, traffic, 3)
}

#[test]
fn weighted_round_robin_follows_the_weights() {
    let r = share(true, [1, 4, 2, 1], [0; 4]);
    check_run(&r, None).unwrap();
    let per = regs::SNAP_PER_CONSUMER as usize;
    let g: Vec<f64> = (0..CONSUMERS)
        .map(|c| (r.snapshots[1][c * per + 1] - r.snapshots[0][c * per + 1]) as f64)
        .collect();
    assert!((g[1] / g[3] - 4.0).abs() < 0.05, "{g:?}");
    assert!((g[2] / g[3] - 2.0).abs() < 0.05, "{g:?}");
    assert!((g[0] / g[3] - 1.0).abs() < 0.05, "{g:?}");
}

#[test]
fn first_come_shares_equally_and_priority_starves_lower_classes() {
    let per = regs::SNAP_PER_CONSUMER as usize;
    let r = share(false, [1, 8, 1, 1], [0, 3, 0, 0]);
    let g: Vec<u32> = (0..CONSUMERS)
        .map(|c| r.snapshots[1][c * per + 1] - r.snapshots[0][c * per + 1])
        .collect();
    assert!(g.iter().all(|&x| x.abs_diff(g[0]) <= 2), "{g:?}");
    let r = share(true, [1, 1, 1, 1], [0, 3, 0, 0]);
    let g: Vec<u32> = (0..CONSUMERS)
        .map(|c| r.snapshots[1][c * per + 1] - r.snapshots[0][c * per + 1])
        .collect();
    assert!(g[1] > 3900 && g[0] + g[2] + g[3] < 100, "{g:?}");
}

#[test]
fn zeroing_holds_the_port_and_clears_the_page() {
    // Consumer 0 fills its page, it is reclaimed and granted to consumer 1:
    // consumer 1 reads zeros only.
    let script = vec![
        limits(0, 1, 0),
        limits(1, 1, 0),
        grant(0, 0),
        Op::Run(600),
        Op::Command(cmd_word(op::RECLAIM, 0, 1)),
        grant(1, 0),
        Op::Run(600),
    ];
    let traffic = Traffic {
        rate: [1.0, 0.3, 0.0, 0.0],
        write: 0.7,
        vpages: [1, 1, 0, 0],
    };
    let r = go(script, traffic, 4);
    check_run(&r, Some([0, 1, 0, 0])).unwrap();
    assert_eq!(r.statuses[2] >> 8 & 0xff, 0, "consumer 1 got page 0 back");
    assert!(r.responses.iter().any(|s| s.consumer == 1 && !s.fault));
}
