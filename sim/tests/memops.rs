//! The MemOps port's three witnesses: the cycle-level model
//! (`weft_model::memops::cycle`), rust-hdl and Verilator must agree on every
//! output of every cycle; what comes out — every issued request,
//! completion, mirrored header, telemetry counter and final memory — must
//! be what the transaction-level model predicts, for random and adversarial
//! programs and traffic; every issued request leaves `K + 1` cycles after
//! it was accepted plus the cycles the port was held; and the safety
//! property on its own: no memory ever changes outside its destination's
//! write-permitted ranges.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::memops::Memops;
use weft_model::memops::driver::{
    check_latency, check_run, MemIn, MemOut, MemRun, MemTiming, MemopsDriver,
};
use weft_model::memops::{Action, MemopsCycle, Op, Program, Range, Request, Stage, PORTS, RANGES};
use weft_model::Driver;
use weft_regs::memops as regs;
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory, Finished};

const SPACE: u64 = 0x400;

fn random_program(rng: &mut ChaCha8Rng, k: usize) -> Program {
    let n = rng.gen_range(1..=k);
    let mut stages = vec![];
    for i in 0..n {
        let lo = rng.gen_range(0..SPACE);
        let hi = if rng.gen_bool(0.3) {
            u64::MAX
        } else {
            rng.gen_range(lo..SPACE + 0x80)
        };
        let action = match rng.gen_range(0..10) {
            0..=3 => Action::Route(rng.gen_range(0..PORTS as u8)),
            4 => {
                let t0 = rng.gen_range(0..SPACE);
                Action::Remap {
                    offset: (rng.gen_range(-0x100i64..0x100)) as u64,
                    target: (t0, rng.gen_range(t0..SPACE + 0x40)),
                }
            }
            5 => Action::Count,
            6 => Action::Mirror,
            7 => Action::ReduceOnWrite,
            8 if i > 0 => Action::Block,
            _ => Action::Count,
        };
        stages.push(Stage {
            src_mask: rng.gen_range(1..16),
            ops: rng.gen_range(1..8),
            range: if rng.gen_bool(0.4) {
                (0, u64::MAX)
            } else {
                (lo, hi)
            },
            action,
        });
    }
    // Most traffic needs a route; a catch-all route at the front does it.
    if rng.gen_bool(0.8) {
        stages.insert(
            0,
            Stage {
                src_mask: 0xf,
                ops: 7,
                range: (0, u64::MAX),
                action: Action::Route(rng.gen_range(0..PORTS as u8)),
            },
        );
        stages.truncate(k);
    }
    let protect = (0..PORTS)
        .map(|_| {
            (0..rng.gen_range(0..=RANGES))
                .map(|_| {
                    let lo = rng.gen_range(0..SPACE);
                    Range {
                        lo,
                        hi: rng.gen_range(lo..SPACE + 0x100),
                        read: rng.gen_bool(0.8),
                        write: rng.gen_bool(0.7),
                    }
                })
                .collect()
        })
        .collect();
    Program { stages, protect }
}

fn random_requests(rng: &mut ChaCha8Rng, n: usize) -> Vec<Request> {
    let mut tags = [0u8; PORTS];
    (0..n)
        .map(|_| {
            let src = rng.gen_range(0..PORTS as u8);
            tags[src as usize] = tags[src as usize].wrapping_add(1);
            let len = if rng.gen_bool(0.05) {
                rng.gen_range(0..=15)
            } else {
                rng.gen_range(1..=8)
            };
            let word = rng.gen_range(0..(SPACE + 0x100) / 8) * 8;
            let off = if rng.gen_bool(0.05) {
                rng.gen_range(0..8)
            } else {
                rng.gen_range(0..=8 - len.clamp(1, 8)) as u64
            };
            Request {
                src,
                op: [Op::Read, Op::Write, Op::AtomicAdd][rng.gen_range(0..3)],
                addr: word + off,
                len,
                tag: tags[src as usize],
                data: rng.gen(),
            }
        })
        .collect()
}

struct W<const K: usize>
where
    Memops<K>: weft_sim::hdl::HdlPorts<In = MemIn, Out = MemOut>,
{
    hdl: Prepared<Memops<K>>,
    vl: Option<Prepared<Memops<K>>>,
}

impl<const K: usize> W<K>
where
    Memops<K>: weft_sim::hdl::HdlPorts<In = MemIn, Out = MemOut>,
{
    fn new() -> Self {
        let m = format!("weft_memops_k{K}");
        let o = SimulatorOptions::default();
        Self {
            hdl: Prepared::new(
                Simulator::RustHdl,
                &m,
                weft_hdl::emit::memops::<K>,
                false,
                &o,
            )
            .unwrap(),
            vl: verilator_usable().then(|| {
                Prepared::new(
                    Simulator::Verilator,
                    &m,
                    weft_hdl::emit::memops::<K>,
                    false,
                    &o,
                )
                .unwrap()
            }),
        }
    }

    /// The witnesses, the cycle model first: every other one is compared
    /// with it cycle by cycle.
    fn witnesses(&self) -> Vec<Factory<'_, MemIn, MemOut>> {
        let mut w: Vec<Factory<'_, MemIn, MemOut>> = vec![
            Box::new(|| -> BoxDut<MemIn, MemOut> { Box::new(MemopsCycle::new(K)) }),
            Box::new(|| self.hdl.instantiate(None).unwrap()),
        ];
        if let Some(vl) = &self.vl {
            w.push(Box::new(|| vl.instantiate(None).unwrap()));
        }
        w
    }

    /// Run `reqs` under `prog` on every witness: agreement with the cycle
    /// model on every cycle, then [`verify`]. Returns the model's run.
    fn check(
        &self,
        prog: &Program,
        reqs: &[Request],
        t: MemTiming,
        seed: u64,
    ) -> Result<MemRun, String> {
        let image = prog.image().map_err(|e| e.to_string())?;
        let make = || MemopsDriver::new(image.clone(), K, reqs.to_vec(), t, seed);
        let mut runs = agree(&self.witnesses(), &make, limit(reqs))?;
        verify(prog, K, reqs, &runs)?;
        Ok(runs.swap_remove(0).driver.run)
    }
}

fn limit(reqs: &[Request]) -> u64 {
    400 * reqs.len() as u64 + 2000
}

/// Every witness's run at the transaction level ([`check_run`]: issued
/// requests, completions as a multiset and in the order
/// `completion_order` promises, telemetry, mirror, final memories, safety)
/// and its latency ([`check_latency`]). The completions' exact order needs
/// no check of its own: every witness agreed with the cycle model on
/// `cout_*` in every cycle, so each received the model's completions in
/// the model's order. Returns how many issued requests were never held.
fn verify(
    prog: &Program,
    k: usize,
    reqs: &[Request],
    runs: &[Finished<MemopsDriver>],
) -> Result<usize, String> {
    let mut unheld = 0;
    for r in runs {
        let run = &r.driver.run;
        check_run(prog, k, reqs, run).map_err(|e| format!("{}: {e}", r.witness))?;
        unheld = check_latency(prog, k, reqs, run).map_err(|e| format!("{}: {e}", r.witness))?;
    }
    Ok(unheld)
}

fn k3() -> &'static W<3> {
    static W3: OnceLock<W<3>> = OnceLock::new();
    W3.get_or_init(W::new)
}

fn k8() -> &'static W<8> {
    static W8: OnceLock<W<8>> = OnceLock::new();
    W8.get_or_init(W::new)
}

fn timing() -> impl Strategy<Value = MemTiming> {
    (
        0.0f64..0.5,
        prop::array::uniform4(0.0f64..0.7),
        1u32..12,
        0.0f64..0.6,
        0.0f64..0.9,
    )
        .prop_map(
            |(bubble, dst_stall, max_delay, cpl_stall, mir_stall)| MemTiming {
                bubble,
                dst_stall,
                max_delay,
                cpl_stall,
                mir_stall,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    #[test]
    fn random_programs_and_traffic_match_the_model(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let prog = random_program(&mut rng, 3);
        let reqs = random_requests(&mut rng, 60);
        k3().check(&prog, &reqs, t, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(6), ..ProptestConfig::default() })]

    #[test]
    fn eight_stage_port_matches_the_model(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let prog = random_program(&mut rng, 8);
        let reqs = random_requests(&mut rng, 60);
        k8().check(&prog, &reqs, t, seed).map_err(TestCaseError::fail)?;
    }
}

/// An adversarial program: it routes everything to port 1 and remaps every
/// write into port 1's protected region; the protection table still stops
/// each one.
#[test]
fn a_malicious_program_cannot_write_outside_permitted_ranges() {
    let prog = Program {
        stages: vec![
            Stage {
                src_mask: 0xf,
                ops: 7,
                range: (0, u64::MAX),
                action: Action::Route(1),
            },
            Stage {
                src_mask: 0xf,
                ops: 0b110,
                range: (0, u64::MAX),
                action: Action::Remap {
                    offset: 0x1000,
                    target: (0, u64::MAX),
                },
            },
            Stage {
                src_mask: 0xf,
                ops: 7,
                range: (0, u64::MAX),
                action: Action::ReduceOnWrite,
            },
        ],
        protect: vec![
            vec![],
            vec![Range {
                lo: 0,
                hi: 0xfff,
                read: true,
                write: true,
            }],
        ],
    };
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let reqs: Vec<Request> = (0..40)
        .map(|i| Request {
            src: (i % 4) as u8,
            op: Op::Write,
            addr: rng.gen_range(0..0x100) * 8,
            len: 8,
            tag: i as u8,
            data: rng.gen(),
        })
        .collect();
    let run = k3().check(&prog, &reqs, MemTiming::FAST, 1).unwrap();
    assert!(
        run.endpoints.iter().all(|m| m.bytes().next().is_none()),
        "nothing may be written"
    );
    assert!(run
        .completions
        .iter()
        .all(|c| c.status == weft_model::memops::Status::Denied));
}

/// One request header per cycle at a fixed added latency of K + 1 cycles
/// when nothing downstream stalls.
#[test]
fn one_header_per_cycle_and_fixed_latency() {
    let prog = Program {
        stages: vec![Stage {
            src_mask: 0xf,
            ops: 7,
            range: (0, u64::MAX),
            action: Action::Route(2),
        }],
        protect: vec![
            vec![],
            vec![],
            vec![Range {
                lo: 0,
                hi: u64::MAX,
                read: true,
                write: true,
            }],
            vec![],
        ],
    };
    let reqs: Vec<Request> = (0..64)
        .map(|i| Request {
            src: (i % 4) as u8,
            op: Op::Read,
            addr: 8 * i as u64,
            len: 8,
            tag: i as u8,
            data: 0,
        })
        .collect();
    let run = k8().check(&prog, &reqs, MemTiming::FAST, 1).unwrap();
    let a = &run.accepted_at;
    assert!(
        a.windows(2).all(|w| w[1] == w[0] + 1),
        "a header every cycle: {a:?}"
    );
    // Every request leaves exactly K + 1 cycles after it was accepted, in
    // order (one destination, nothing stalls). The check ran on every
    // witness: rust-hdl and Verilator agreed cycle by cycle with each
    // other, and this is the run of the first.
    assert_eq!(run.issued_at.len(), reqs.len(), "every request issued");
    for (i, (acc, iss)) in a.iter().zip(&run.issued_at).enumerate() {
        assert_eq!(
            iss - acc,
            8 + 1,
            "request {i}: accepted {acc}, issued {iss}"
        );
    }
}

/// Random inputs on every port on every cycle, after a random program is
/// installed: requests of every shape (valid or not, the fields random
/// either way), destinations and requesters ready or not, completions
/// under any switch tag (outstanding or not) with any status, the mirror
/// port, and register reads and writes mid-traffic — program words
/// rewritten, counters selected, latched and cleared, the port disabled.
/// No protocol is kept, so only the witnesses' agreement on every cycle
/// is checked; it reaches corners the transaction-level drivers never do.
struct Fuzz {
    rng: ChaCha8Rng,
    install: Vec<MemIn>,
    cycle: usize,
    cycles: usize,
}

impl Fuzz {
    fn new(k: usize, seed: u64, cycles: usize) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let image = random_program(&mut rng, k).image().unwrap();
        let write = |r: &weft_regs::Register, data: u32| MemIn {
            eng_we: true,
            eng_waddr: (r.addr >> 2) as u16,
            eng_wdata: data,
            eng_wstrb: 0xf,
            ..Default::default()
        };
        let mut install = vec![write(&regs::CTRL, 0), write(&regs::PROG_ADDR, 0)];
        install.extend(image.iter().map(|&w| write(&regs::PROG_DATA, w)));
        install.push(write(&regs::CTRL, 1));
        Self {
            rng,
            cycles: install.len() + cycles,
            install,
            cycle: 0,
        }
    }

    /// A register of the block, now and then any word address.
    fn reg(&mut self, of: &[weft_regs::Register]) -> u16 {
        if self.rng.gen_bool(0.05) {
            self.rng.gen_range(0..1 << 14)
        } else {
            (of[self.rng.gen_range(0..of.len())].addr >> 2) as u16
        }
    }
}

impl Driver<MemIn, MemOut> for Fuzz {
    fn drive(&mut self) -> MemIn {
        if let Some(i) = self.install.get(self.cycle) {
            return i.clone();
        }
        let r = &mut self.rng;
        let len = if r.gen_bool(0.1) {
            r.gen_range(0..16)
        } else {
            r.gen_range(1..=8)
        };
        let addr = r.gen_range(0..SPACE + 0x100) & !7 | r.gen_range(0..=8 - len.clamp(1, 8)) as u64;
        let data: u64 = r.gen();
        let cin: u64 = r.gen();
        let ready = |r: &mut ChaCha8Rng, p| (0..4).fold(0u8, |m, d| m | (r.gen_bool(p) as u8) << d);
        let mut i = MemIn {
            req_valid: r.gen_bool(0.7),
            req_src: r.gen_range(0..4),
            req_op: if r.gen_bool(0.05) {
                3
            } else {
                r.gen_range(0..3)
            },
            req_al: addr as u32,
            req_ah: if r.gen_bool(0.05) { r.gen() } else { 0 },
            req_len: len,
            req_tag: r.gen(),
            req_dl: data as u32,
            req_dh: (data >> 32) as u32,
            out_ready: ready(r, 0.75),
            cin_valid: r.gen_bool(0.3),
            cin_stag: r.gen_range(0..16),
            cin_status: r.gen_range(0..4),
            cin_dl: cin as u32,
            cin_dh: (cin >> 32) as u32,
            cout_ready: r.gen_bool(0.7),
            mir_ready: r.gen_bool(0.5),
            ..Default::default()
        };
        if self.rng.gen_bool(0.2) {
            i.eng_raddr = self.reg(&[
                regs::CTRL,
                regs::PROG_ADDR,
                regs::TEL_SEL,
                regs::PROG_DATA,
                regs::TEL_LO,
                regs::TEL_HI,
                regs::TEL_CLEAR,
                regs::GEOMETRY,
                regs::OUTSTANDING,
            ]);
            i.eng_re = self.rng.gen_bool(0.8);
        }
        if self.rng.gen_bool(0.08) {
            i.eng_we = true;
            i.eng_waddr = self.reg(&[
                regs::CTRL,
                regs::PROG_ADDR,
                regs::PROG_DATA,
                regs::TEL_SEL,
                regs::TEL_CLEAR,
            ]);
            let w = i.eng_waddr as u32;
            i.eng_wdata = if w == regs::CTRL.addr >> 2 {
                // Mostly enabled, so requests get through the program.
                self.rng.gen_bool(0.9) as u32
            } else if w == regs::TEL_SEL.addr >> 2 {
                self.rng.gen_range(0..24)
            } else if w == regs::TEL_CLEAR.addr >> 2 {
                self.rng.gen_bool(0.3) as u32
            } else if w == regs::PROG_ADDR.addr >> 2 {
                self.rng.gen_range(0..256)
            } else {
                self.rng.gen()
            };
            i.eng_wstrb = if self.rng.gen_bool(0.8) {
                0xf
            } else {
                self.rng.gen_range(0..16)
            };
        }
        i
    }

    fn observe(&mut self, _: &MemIn, _: &MemOut) {
        self.cycle += 1;
    }

    fn finished(&self) -> bool {
        self.cycle >= self.cycles
    }
}

fn fuzz<const K: usize>(w: &W<K>, seed: u64, cycles: usize) -> Result<(), String>
where
    Memops<K>: weft_sim::hdl::HdlPorts<In = MemIn, Out = MemOut>,
{
    agree(&w.witnesses(), &|| Fuzz::new(K, seed, cycles), u64::MAX).map(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(8), ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_on_every_port_agree_cycle_by_cycle(seed in any::<u64>()) {
        fuzz(k3(), seed, 3000).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(3), ..ProptestConfig::default() })]

    #[test]
    fn random_inputs_on_every_port_agree_cycle_by_cycle_at_eight_stages(seed in any::<u64>()) {
        fuzz(k8(), seed, 3000).map_err(TestCaseError::fail)?;
    }
}

/// The card's build (K = 8 stages) on Verilator and the cycle-level model,
/// compared on every output of every cycle, for at least
/// [`weft_model::soak_cycles`] cycles of random programs and traffic —
/// every opcode, bad lengths and unaligned addresses, protection faults,
/// mirrors, destinations that stall and delay, requesters that refuse
/// completions — each run checked against the transaction-level model
/// (issued requests, completions in their promised order, final memories,
/// telemetry) and for its latency. Seeded; `WEFT_SOAK=1` runs the
/// 10^6-cycle soak.
#[test]
fn card_geometry_soak_on_verilator() {
    // Skips without Verilator, fails when WEFT_REQUIRE_VERILATOR=1.
    if !verilator_usable() {
        return;
    }
    let m = "weft_memops_k8";
    let vl = Prepared::new(
        Simulator::Verilator,
        m,
        weft_hdl::emit::memops::<8>,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let target = weft_model::soak_cycles(40_000);
    let (mut cycles, mut seed, mut unheld) = (0u64, 0x50a6u64, 0usize);
    while cycles < target {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let prog = random_program(&mut rng, 8);
        // At most 255 requests per requester, so tags stay unique.
        let reqs = random_requests(&mut rng, 800);
        let t = MemTiming {
            bubble: rng.gen_range(0.0..0.4),
            dst_stall: [(); 4].map(|_| rng.gen_range(0.0..0.7)),
            max_delay: rng.gen_range(1..12),
            cpl_stall: rng.gen_range(0.0..0.6),
            mir_stall: rng.gen_range(0.0..0.9),
        };
        let image = prog.image().unwrap();
        let w: Vec<Factory<'_, MemIn, MemOut>> = vec![
            Box::new(|| -> BoxDut<MemIn, MemOut> { Box::new(MemopsCycle::new(8)) }),
            Box::new(|| vl.instantiate(None).unwrap()),
        ];
        let make = || MemopsDriver::new(image.clone(), 8, reqs.clone(), t, seed);
        let runs = agree(&w, &make, limit(&reqs)).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        unheld += verify(&prog, 8, &reqs, &runs).unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        cycles += runs[0].run.cycles;
        seed += 1;
    }
    // Stalls are drawn per run; the soak as a whole must see requests that
    // went through unheld, at exactly K + 1 cycles.
    assert!(unheld > 0, "no request went through unheld");
    eprintln!(
        "memops soak: {cycles} cycles at K = 8 (cycle model and Verilator agreeing on each), \
         seeds 0x50a6..{seed:#x}, {unheld} requests issued unheld at K + 1 cycles"
    );
}
