//! The key-value engine's three witnesses: the cycle-level model
//! (`kv_agg::cycle`), rust-hdl and Verilator must agree on every output of
//! every cycle, and every record, ack and counter that comes out must be
//! what the packet-level model predicts.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::kv_agg::KvAgg;
use weft_model::kv_agg::cycle::KvCycle;
use weft_model::kv_agg::driver::{predict, KvDriver, KvTiming, NoiseDriver, Outcome, Step};
use weft_model::kv_agg::packet::{encode, Header, RecordKind, VERSION};
use weft_model::kv_agg::ports::{KvPorts, Lanes2, Lanes4, Lanes8};
use weft_model::kv_agg::{Config, SENDERS};
use weft_model::Driver;
use weft_regs::kv;
use weft_sim::hdl::HdlPorts;
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory, Finished};

const JOB: u16 = 7;

/// Knobs of a generated script.
#[derive(Clone, Debug)]
struct Gen {
    packets: usize,
    max_tuples: usize,
    /// Keys are drawn from 0..key_space (or anywhere in u32 when 0).
    key_space: u32,
    p_malformed: f64,
    p_dup: f64,
    p_swap: f64,
    p_ctrl: f64,
    p_reset: f64,
    p_flush: f64,
}

impl Gen {
    fn mixed() -> Self {
        Gen {
            packets: 24,
            max_tuples: 12,
            key_space: 24,
            p_malformed: 0.1,
            p_dup: 0.15,
            p_swap: 0.2,
            p_ctrl: 0.05,
            p_reset: 0.02,
            p_flush: 0.05,
        }
    }
}

fn value(rng: &mut ChaCha8Rng) -> i32 {
    match rng.gen_range(0..8) {
        0 => i32::MAX,
        1 => i32::MIN,
        2 => rng.gen_range(i32::MAX - 8..=i32::MAX),
        _ => rng.gen_range(-1000..1000),
    }
}

fn corrupt(rng: &mut ChaCha8Rng, mut p: Vec<u8>) -> Vec<u8> {
    match rng.gen_range(0..5) {
        0 => p[0] = VERSION + 1,
        1 => p[1] = 0b11,
        2 => p[4] = (JOB + 1) as u8,
        3 => p[6] = SENDERS as u8 + rng.gen_range(0..4),
        _ => {
            // Length and tuple count disagree.
            let cut = rng.gen_range(1..=p.len().min(20));
            p.truncate(p.len() - cut);
        }
    }
    p
}

/// A script: the job id, packets from a few senders with loss-free but
/// duplicated, reordered and malformed traffic, register writes, flushes.
fn script(seed: u64, g: &Gen) -> Vec<Step> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut steps = vec![Step::Write {
        addr: kv::JOB.addr,
        data: JOB as u32,
        strb: 0b11,
    }];
    let mut next_seq = [0u32; 4];
    let mut pkts: Vec<Vec<u8>> = vec![];
    for _ in 0..g.packets {
        let sender = rng.gen_range(0..4usize);
        let n = rng.gen_range(0..=g.max_tuples);
        let tuples: Vec<(u32, i32)> = (0..n)
            .map(|_| {
                let k = if g.key_space == 0 {
                    rng.gen()
                } else {
                    rng.gen_range(0..g.key_space)
                };
                (k, value(&mut rng))
            })
            .collect();
        let mut seq = next_seq[sender];
        if rng.gen_bool(0.03) {
            seq += 40; // far ahead of the window
        } else {
            next_seq[sender] += 1;
        }
        let mut p = encode(&Header::data(JOB, sender as u16, seq, n as u16), &tuples);
        if rng.gen_bool(g.p_malformed) {
            p = corrupt(&mut rng, p);
        }
        pkts.push(p.clone());
        if rng.gen_bool(g.p_dup) {
            pkts.push(p);
        }
    }
    for i in 1..pkts.len() {
        if rng.gen_bool(g.p_swap) {
            pkts.swap(i - 1, i);
        }
    }
    for p in pkts {
        if rng.gen_bool(g.p_ctrl) {
            steps.push(Step::Write {
                addr: kv::CTRL.addr,
                data: rng.gen_range(0..2),
                strb: 1,
            });
        }
        if rng.gen_bool(g.p_reset) {
            steps.push(Step::Write {
                addr: kv::CMD.addr,
                data: kv::CMD_RESET.set(0, 1),
                strb: 1,
            });
        }
        if rng.gen_bool(g.p_flush) {
            steps.push(Step::Flush);
        }
        steps.push(Step::Packet(p));
    }
    steps.push(Step::Flush);
    steps
}

/// Every transaction of every run is the packet-level model's prediction.
fn check_outcome<P: KvPorts>(runs: &[Finished<KvDriver<P>>], want: &Outcome) -> Result<(), String> {
    for r in runs {
        let got = &r.driver.outcome;
        if r.driver.bad_records > 0 {
            return Err(format!("{}: undecodable record beats", r.witness));
        }
        if got.acks != want.acks {
            return Err(format!(
                "{}: acks differ:\n got {:?}\nwant {:?}",
                r.witness, got.acks, want.acks
            ));
        }
        if got.ack_meta != want.ack_meta {
            return Err(format!(
                "{}: acks' return addresses or jobs differ:\n got {:?}\nwant {:?}",
                r.witness, got.ack_meta, want.ack_meta
            ));
        }
        if got.records != want.records {
            return Err(format!(
                "{}: records differ:\n got {:?}\nwant {:?}",
                r.witness, got.records, want.records
            ));
        }
        if got.reads != want.reads {
            return Err(format!(
                "{}: registers differ:\n got {:x?}\nwant {:x?}",
                r.witness, got.reads, want.reads
            ));
        }
    }
    Ok(())
}

/// The engine at one geometry: the cycle-level model and both simulators
/// (Verilator when usable).
struct Witnesses<P: KvPorts, B: HdlPorts<In = P::In, Out = P::Out>> {
    cfg: Config,
    hdl: Prepared<B>,
    vl: Option<Prepared<B>>,
    _p: std::marker::PhantomData<P>,
}

impl<P, B> Witnesses<P, B>
where
    P: KvPorts + Send + 'static,
    B: HdlPorts<In = P::In, Out = P::Out> + Send + 'static,
{
    fn new(cfg: Config, make: fn() -> B) -> Self {
        let module = format!("weft_kv_agg_{}x{}", cfg.lanes, cfg.slot_bits);
        let o = SimulatorOptions::default();
        Self {
            cfg,
            hdl: Prepared::new(Simulator::RustHdl, &module, make, false, &o).unwrap(),
            vl: verilator_usable()
                .then(|| Prepared::new(Simulator::Verilator, &module, make, false, &o).unwrap()),
            _p: std::marker::PhantomData,
        }
    }

    /// Run fresh drivers from `make` on every witness, the model first,
    /// and require every simulator to agree with the model on every cycle.
    fn agree<D: Driver<P::In, P::Out>>(
        &self,
        make: &dyn Fn() -> D,
        limit: u64,
    ) -> Result<Vec<Finished<D>>, String> {
        let cfg = self.cfg;
        let mut w: Vec<Factory<'_, P::In, P::Out>> =
            vec![Box::new(move || -> BoxDut<P::In, P::Out> {
                Box::new(KvCycle::<P>::new(cfg))
            })];
        w.push(Box::new(|| self.hdl.instantiate(None).unwrap()));
        if let Some(vl) = &self.vl {
            w.push(Box::new(|| vl.instantiate(None).unwrap()));
        }
        let runs = agree(&w, make, limit)?;
        eprintln!(
            "kv_agg {}x{}: {} cycles, {} witnesses agree",
            cfg.lanes,
            cfg.slot_bits,
            runs[0].run.cycles,
            runs.len()
        );
        Ok(runs)
    }

    /// Run `steps` on every witness; require cycle-level agreement with the
    /// model and every run's transactions to be the packet-level model's.
    /// Returns the model's driver.
    fn check(&self, steps: &[Step], timing: KvTiming, seed: u64) -> Result<KvDriver<P>, String> {
        let want = predict(self.cfg, steps);
        let make = || KvDriver::<P>::new(steps.to_vec(), timing, seed);
        let mut runs = self.agree(&make, self.limit(steps))?;
        check_outcome(&runs, &want)?;
        Ok(runs.swap_remove(0).driver)
    }

    fn limit(&self, steps: &[Step]) -> u64 {
        200 * steps.len() as u64 + 50 * (1u64 << self.cfg.slot_bits) + 10_000
    }
}

/// A script's driver with register writes overlaid at random cycles, not
/// only between packets as the script's own: replacement toggled, the job
/// changed, counters and windows reset and flushes started while packets
/// are in the pipeline. The packet-level model cannot say what comes out;
/// the witnesses must still agree on every cycle.
struct AnyCycleWrites<P: KvPorts> {
    script: KvDriver<P>,
    rng: ChaCha8Rng,
    p_write: f64,
}

impl<P: KvPorts> Driver<P::In, P::Out> for AnyCycleWrites<P> {
    fn drive(&mut self) -> P::In {
        let mut v = P::in_view(&self.script.drive());
        if !v.eng_we && self.rng.gen_bool(self.p_write) {
            let (addr, data) = match self.rng.gen_range(0..5) {
                0 => (kv::CTRL.addr, self.rng.gen_range(0..2)),
                1 => (kv::JOB.addr, JOB as u32 ^ self.rng.gen_range(0..2)),
                2 => (kv::CMD.addr, kv::CMD_RESET.set(0, 1)),
                3 => (kv::CMD.addr, kv::CMD_FLUSH.set(0, 1)),
                _ => (kv::CMD.addr, self.rng.gen()),
            };
            v.eng_we = true;
            v.eng_waddr = (addr >> 2) as u16;
            v.eng_wdata = data;
            v.eng_wstrb = self.rng.gen_range(0..16);
        }
        P::inputs(&v)
    }
    fn observe(&mut self, inputs: &P::In, outputs: &P::Out) {
        // The script's driver remembers its own inputs: the overlaid write
        // is not one of its writes.
        self.script.observe(inputs, outputs);
    }
    fn finished(&self) -> bool {
        self.script.finished()
    }
}

fn narrow() -> &'static Witnesses<Lanes2, KvAgg<2, 128, 2>> {
    static W: OnceLock<Witnesses<Lanes2, KvAgg<2, 128, 2>>> = OnceLock::new();
    W.get_or_init(|| {
        Witnesses::new(
            Config {
                lanes: 2,
                slot_bits: 2,
                senders: SENDERS,
            },
            weft_hdl::emit::kv_agg::<2, 128, 2>,
        )
    })
}

fn four() -> &'static Witnesses<Lanes4, KvAgg<4, 256, 3>> {
    static W: OnceLock<Witnesses<Lanes4, KvAgg<4, 256, 3>>> = OnceLock::new();
    W.get_or_init(|| {
        Witnesses::new(
            Config {
                lanes: 4,
                slot_bits: 3,
                senders: SENDERS,
            },
            weft_hdl::emit::kv_agg::<4, 256, 3>,
        )
    })
}

fn wide() -> &'static Witnesses<Lanes8, KvAgg<8, 512, 3>> {
    static W: OnceLock<Witnesses<Lanes8, KvAgg<8, 512, 3>>> = OnceLock::new();
    W.get_or_init(|| {
        Witnesses::new(
            Config {
                lanes: 8,
                slot_bits: 3,
                senders: SENDERS,
            },
            weft_hdl::emit::kv_agg::<8, 512, 3>,
        )
    })
}

fn timing() -> impl Strategy<Value = KvTiming> {
    (0.0f64..0.6, 0.0f64..0.8, 0.0f64..0.8).prop_map(|(bubble, m_stall, a_stall)| KvTiming {
        bubble,
        m_stall,
        a_stall,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    #[test]
    fn narrow_engine_matches_the_model(seed in any::<u64>(), t in timing(), keys in prop_oneof![Just(6u32), Just(40), Just(0)]) {
        let g = Gen { key_space: keys, ..Gen::mixed() };
        narrow().check(&script(seed, &g), t, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(8), ..ProptestConfig::default() })]

    #[test]
    fn four_lane_engine_matches_the_model(seed in any::<u64>(), t in timing()) {
        four().check(&script(seed, &Gen::mixed()), t, seed).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn wide_engine_matches_the_model(seed in any::<u64>(), t in timing()) {
        let g = Gen { packets: 12, max_tuples: 40, ..Gen::mixed() };
        wide().check(&script(seed, &g), t, seed).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(12), ..ProptestConfig::default() })]

    #[test]
    fn registers_written_at_any_cycle_agree(seed in any::<u64>(), t in timing(), p_write in 0.005f64..0.05) {
        let steps = script(seed, &Gen::mixed());
        let make = || AnyCycleWrites {
            script: KvDriver::<Lanes2>::new(steps.clone(), t, seed),
            rng: ChaCha8Rng::seed_from_u64(!seed),
            p_write,
        };
        narrow().agree(&make, 4 * narrow().limit(&steps)).map_err(TestCaseError::fail)?;
        let make = || AnyCycleWrites {
            script: KvDriver::<Lanes4>::new(steps.clone(), t, seed),
            rng: ChaCha8Rng::seed_from_u64(!seed),
            p_write,
        };
        four().agree(&make, 4 * four().limit(&steps)).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(6), ..ProptestConfig::default() })]

    #[test]
    fn noise_on_every_port_agrees(seed in any::<u64>()) {
        let cycles = 3_000;
        let runs = narrow()
            .agree(&|| NoiseDriver::<Lanes2>::new(seed, cycles), cycles)
            .map_err(TestCaseError::fail)?;
        prop_assert!(runs[0].driver.acks[1] > 0 && runs[0].driver.records[1] > 0);
        four()
            .agree(&|| NoiseDriver::<Lanes4>::new(seed, cycles), cycles)
            .map_err(TestCaseError::fail)?;
        wide()
            .agree(&|| NoiseDriver::<Lanes8>::new(seed, cycles), cycles)
            .map_err(TestCaseError::fail)?;
    }
}

fn clean(packets: Vec<Vec<(u32, i32)>>) -> Vec<Step> {
    let mut steps = vec![Step::Write {
        addr: kv::JOB.addr,
        data: JOB as u32,
        strb: 0b11,
    }];
    for (seq, t) in packets.iter().enumerate() {
        steps.push(Step::Packet(encode(
            &Header::data(JOB, 0, seq as u32, t.len() as u16),
            t,
        )));
    }
    steps.push(Step::Flush);
    steps
}

#[test]
fn one_key_in_every_lane_of_every_beat_at_line_rate() {
    // 30 tuples = 4 full beats of 8 lanes after the header beat's 6.
    let steps = clean((0..20).map(|_| vec![(42, 3); 30]).collect());
    let d = wide().check(&steps, KvTiming::LINE_RATE, 1).unwrap();
    assert_eq!(
        d.input_stalls, 0,
        "the pipeline must never stall on a hot key"
    );
}

#[test]
fn key_set_far_larger_than_the_table_at_line_rate() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let steps = clean(
        (0..20)
            .map(|_| (0..46).map(|_| (rng.gen(), rng.gen_range(-9..9))).collect())
            .collect(),
    );
    let d = wide().check(&steps, KvTiming::LINE_RATE, 2).unwrap();
    assert_eq!(
        d.input_stalls, 0,
        "spilling every lane must not stall the input"
    );
    assert!(
        d.outcome
            .records
            .iter()
            .filter(|r| r.kind == RecordKind::Spill)
            .count()
            > 10
    );
}

#[test]
fn full_table_flushes_every_slot() {
    // Tuple i lands in lane i % 2; key 100p + i/2 + 4(i%2) sits in slot
    // (i/2) of that lane's bank, so every packet covers every slot.
    let steps = clean(
        (0..16)
            .map(|p| (0..8).map(|i| (100 * p + i / 2 + 4 * (i % 2), 1)).collect())
            .collect(),
    );
    let d = narrow().check(&steps, KvTiming::LINE_RATE, 3).unwrap();
    let flushed: usize = d
        .outcome
        .records
        .iter()
        .filter(|r| r.kind == RecordKind::Flush)
        .map(|r| r.lanes.iter().flatten().count())
        .sum();
    assert_eq!(flushed, 8, "2 lanes x 4 slots all resident");
}

#[test]
fn heavy_output_back_pressure() {
    let t = KvTiming {
        bubble: 0.0,
        m_stall: 0.9,
        a_stall: 0.9,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let steps = clean(
        (0..10)
            .map(|_| (0..30).map(|_| (rng.gen_range(0..64), 1)).collect())
            .collect(),
    );
    let d = wide().check(&steps, t, 4).unwrap();
    assert!(d.input_stalls > 0, "back-pressure reaches the input");
}

/// The card's geometry (8 lanes at 512 bits, 512 slots a lane) on
/// Verilator and the cycle-level model, compared on every output of every
/// cycle, for at least [`weft_model::soak_cycles`] cycles of random
/// adversarial traffic — duplicates, reordering, malformed packets, packets
/// far ahead of the window, replacement toggled, resets and flushes, input
/// bubbles and back-pressure on both outputs — and every ack, record and
/// counter checked against the packet-level model's prediction. Seeded: a
/// failure names its seed, and `WEFT_SOAK=1` runs the 10^6-cycle soak
/// (rust-hdl, which simulates this width at a few hundred cycles a second,
/// sits it out).
#[test]
fn card_geometry_soak_on_verilator() {
    // Skips without Verilator, fails when WEFT_REQUIRE_VERILATOR=1.
    if !verilator_usable() {
        return;
    }
    let cfg = Config {
        lanes: 8,
        slot_bits: 9,
        senders: SENDERS,
    };
    let vl = Prepared::new(
        Simulator::Verilator,
        "weft_kv_agg_8x9",
        weft_hdl::emit::kv_agg::<8, 512, 9>,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let target = weft_model::soak_cycles(60_000);
    let (mut cycles, mut seed) = (0u64, 0x50a6u64);
    while cycles < target {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // Big packets over a key space several times the table, so slots
        // collide, residents are evicted and spills flow while acks queue.
        let g = Gen {
            packets: 400,
            max_tuples: 182,
            key_space: 20_000,
            p_ctrl: 0.01,
            p_reset: 0.002,
            p_flush: 0.005,
            ..Gen::mixed()
        };
        let steps = script(seed, &g);
        let timing = KvTiming {
            bubble: rng.gen_range(0.0..0.3),
            m_stall: rng.gen_range(0.0..0.5),
            a_stall: rng.gen_range(0.0..0.5),
        };
        let want = predict(cfg, &steps);
        let w: Vec<Factory<'_, <Lanes8 as KvPorts>::In, <Lanes8 as KvPorts>::Out>> = vec![
            Box::new(move || -> BoxDut<_, _> { Box::new(KvCycle::<Lanes8>::new(cfg)) }),
            Box::new(|| vl.instantiate(None).unwrap()),
        ];
        let make = || KvDriver::<Lanes8>::new(steps.clone(), timing, seed);
        let limit = 400 * steps.len() as u64 + 50 * (1u64 << cfg.slot_bits) + 10_000;
        let runs = agree(&w, &make, limit)
            .and_then(|runs| check_outcome(&runs, &want).map(|()| runs))
            .unwrap_or_else(|e| panic!("seed {seed:#x}: {e}"));
        cycles += runs[0].run.cycles;
        seed += 1;
    }
    eprintln!(
        "kv_agg soak: {cycles} cycles at 8 lanes x 512 slots, model and Verilator agree on every one, seeds 0x50a6..{seed:#x}"
    );
}
