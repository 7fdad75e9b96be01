//! Clock-domain crossing: the multi-clock harness and the CDC blocks'
//! three witnesses (model, rust-hdl, Verilator) stepping one schedule.
//!
//! - A two-clock fixture pins down the model of time: edges of two clocks
//!   in one base step are one instant in both simulators (a flop of either
//!   domain samples the other domain's pre-edge value), a schedule mismatch
//!   between witnesses is refused, and a divergence is reported with its
//!   step, the edges before it and the ports.
//! - `SyncBit`, `AsyncFifo` (at 1:2, 2:1, 2:3 and 1:1, with resets),
//!   `Cdc2Phase` (at the same ratios) and `AxilCdc` (at the OpenNIC box's
//!   250/125 MHz and the other way round)
//!   against their models, with scoreboards that check no word or
//!   transaction is lost, duplicated or reordered.
//!
//! `TwoClocks` below is a test fixture, not product code: it samples across
//! domains without synchronisers on purpose, to expose the simulators'
//! edge semantics.

use proptest::prelude::*;
use rust_hdl::prelude::*;
use std::sync::OnceLock;
use weft_model::axil::{Op, Timing};
use weft_model::cdc::axil::{
    self as axil_cdc, AxilCdcDriver, AxilCdcIn, AxilCdcModel, AxilCdcOut, M_CLOCK, S_CLOCK,
};
use weft_model::cdc::fifo::{
    AsyncFifoModel, FifoDriver, FifoIn, FifoOut, Traffic, RD_CLOCK, WR_CLOCK,
};
use weft_model::cdc::two_phase::{
    TwoPhaseDriver, TwoPhaseIn, TwoPhaseModel, TwoPhaseOut, DST_CLOCK, SRC_CLOCK,
};
use weft_model::cdc::{SyncBitDriver, SyncBitIn, SyncBitModel, SyncBitOut};
use weft_model::{Driver, Dut, PortSet, Schedule};
use weft_sim::cdc_blocks::{Fifo16, Fifo4, TwoPhase16};
use weft_sim::hdl::HdlPorts;
use weft_sim::simulator::{
    verilator_usable, waves_path, BoxDut, Prepared, Simulator, SimulatorOptions,
};
use weft_sim::witness::{agree, check_pair, run_all, Factory};

// ---------------------------------------------------------------------------
// The two-clock fixture.

#[derive(LogicBlock)]
struct TwoClocks {
    fast: Signal<In, Clock>,
    slow: Signal<In, Clock>,
    x: Signal<In, Bits<8>>,
    fast_count: Signal<Out, Bits<8>>,
    slow_count: Signal<Out, Bits<8>>,
    slow_sees_fast: Signal<Out, Bits<8>>,
    fast_sees_slow: Signal<Out, Bits<8>>,
    x_slow: Signal<Out, Bits<8>>,
    fc: DFF<Bits<8>>,
    fss: DFF<Bits<8>>,
    sc: DFF<Bits<8>>,
    ssf: DFF<Bits<8>>,
    xs: DFF<Bits<8>>,
    one: Constant<Bits<8>>,
}

impl Logic for TwoClocks {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, fast, fc, fss);
        dff_setup!(self, slow, sc, ssf, xs);
        self.fc.d.next = self.fc.q.val() + self.one.val();
        self.fss.d.next = self.sc.q.val();
        self.sc.d.next = self.sc.q.val() + self.one.val();
        self.ssf.d.next = self.fc.q.val();
        self.xs.d.next = self.x.val();
        self.fast_count.next = self.fc.q.val();
        self.slow_count.next = self.sc.q.val();
        self.slow_sees_fast.next = self.ssf.q.val();
        self.fast_sees_slow.next = self.fss.q.val();
        self.x_slow.next = self.xs.q.val();
    }
}

fn two_clocks() -> TwoClocks {
    let mut t = TwoClocks {
        fast: Default::default(),
        slow: Default::default(),
        x: Default::default(),
        fast_count: Default::default(),
        slow_count: Default::default(),
        slow_sees_fast: Default::default(),
        fast_sees_slow: Default::default(),
        x_slow: Default::default(),
        fc: Default::default(),
        fss: Default::default(),
        sc: Default::default(),
        ssf: Default::default(),
        xs: Default::default(),
        one: Constant::new(1u64.into()),
    };
    t.connect_all();
    t
}

weft_model::ports! {
    struct TwoIn { x: u8 = 8 }
}
weft_model::ports! {
    struct TwoOut {
        fast_count: u8 = 8,
        slow_count: u8 = 8,
        slow_sees_fast: u8 = 8,
        fast_sees_slow: u8 = 8,
        x_slow: u8 = 8,
    }
}

weft_sim::hdl_ports!(
    TwoClocks,
    clocks [fast, slow],
    TwoIn { x },
    TwoOut { fast_count, slow_count, slow_sees_fast, fast_sees_slow, x_slow }
);

/// The fixture's specification: each domain's flops take pre-instant
/// values. `racy` is the bug a harness that staggered simultaneous edges
/// would show: the slow domain sees the fast counter's new value.
struct TwoModel {
    schedule: Schedule,
    racy: bool,
    step: u64,
    x: u8,
    o: TwoOut,
}

impl TwoModel {
    fn new(schedule: Schedule, racy: bool) -> Self {
        Self {
            schedule,
            racy,
            step: 0,
            x: 0,
            o: TwoOut::default(),
        }
    }
}

impl Dut for TwoModel {
    type In = TwoIn;
    type Out = TwoOut;
    fn eval(&mut self, i: &TwoIn) -> TwoOut {
        self.x = i.x;
        self.o.clone()
    }
    fn tick(&mut self) {
        let f = self.schedule.rises("fast", self.step);
        let s = self.schedule.rises("slow", self.step);
        let before = self.o.clone();
        if f {
            self.o.fast_count = before.fast_count.wrapping_add(1);
            self.o.fast_sees_slow = before.slow_count;
        }
        if s {
            self.o.slow_count = before.slow_count.wrapping_add(1);
            self.o.slow_sees_fast = if self.racy && f {
                before.fast_count.wrapping_add(1)
            } else {
                before.fast_count
            };
            self.o.x_slow = self.x;
        }
        self.step += 1;
    }
    fn witness(&self) -> &str {
        "model"
    }
    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}

/// A new `x` every step for `steps` steps.
struct Xs {
    x: u8,
    left: u32,
}

impl Driver<TwoIn, TwoOut> for Xs {
    fn drive(&mut self) -> TwoIn {
        self.x = self.x.wrapping_mul(37).wrapping_add(11);
        TwoIn { x: self.x }
    }
    fn observe(&mut self, _: &TwoIn, _: &TwoOut) {
        self.left -= 1;
    }
    fn finished(&self) -> bool {
        self.left == 0
    }
}

fn xs() -> Xs {
    Xs { x: 5, left: 300 }
}

fn sched(a: (&str, u32, u32), b: (&str, u32, u32)) -> Schedule {
    Schedule::new([a, b]).unwrap()
}

/// Whether waveforms were asked for (`WEFT_WAVES=1`).
fn waves_wanted() -> bool {
    std::env::var("WEFT_WAVES").as_deref() == Ok("1")
}

/// A block's Verilator model, built once per test binary (or `None`
/// without Verilator), with tracing when waveforms are wanted.
fn prepared<B: HdlPorts + Send + 'static>(
    cell: &'static OnceLock<Option<Prepared<B>>>,
    module: &str,
    make: fn() -> B,
) -> Option<&'static Prepared<B>> {
    cell.get_or_init(|| {
        verilator_usable().then(|| {
            Prepared::new(
                Simulator::Verilator,
                module,
                make,
                waves_wanted(),
                &SimulatorOptions::default(),
            )
            .unwrap_or_else(|e| panic!("Verilator build of {module}: {e}"))
        })
    })
    .as_ref()
}

/// A block's three witnesses on `s`: its model (`model`), rust-hdl, and
/// Verilator when `vl` has a build; waveforms named `wave` when wanted.
fn cdc_witnesses<B>(
    s: &Schedule,
    model: impl Fn(Schedule) -> BoxDut<B::In, B::Out> + 'static,
    make: fn() -> B,
    vl: Option<&'static Prepared<B>>,
    wave: &str,
) -> Vec<Factory<'static, B::In, B::Out>>
where
    B: HdlPorts + Send + 'static,
{
    let hdl = Prepared::new(
        Simulator::RustHdl,
        wave,
        make,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
    let hdl_wave = waves_path(&format!("{wave}-rust-hdl"));
    let vl_wave = waves_path(&format!("{wave}-verilator"));
    let mut w: Vec<Factory<'static, B::In, B::Out>> = vec![
        Box::new(move || model(s1.clone())),
        Box::new(move || hdl.instantiate_on(&s2, hdl_wave.as_deref()).unwrap()),
    ];
    if let Some(vl) = vl {
        w.push(Box::new(move || {
            vl.instantiate_on(&s3, vl_wave.as_deref()).unwrap()
        }));
    }
    w
}

fn two_vl() -> Option<&'static Prepared<TwoClocks>> {
    static VL: OnceLock<Option<Prepared<TwoClocks>>> = OnceLock::new();
    prepared(&VL, "weft_two_clocks_fixture", two_clocks)
}

fn two_witnesses(s: &Schedule, racy: bool) -> Vec<Factory<'static, TwoIn, TwoOut>> {
    let hdl = Prepared::new(
        Simulator::RustHdl,
        "weft_two_clocks_fixture",
        two_clocks,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let (s1, s2, s3) = (s.clone(), s.clone(), s.clone());
    let mut w: Vec<Factory<'static, TwoIn, TwoOut>> = vec![
        Box::new(move || -> BoxDut<TwoIn, TwoOut> { Box::new(TwoModel::new(s1.clone(), racy)) }),
        Box::new(move || hdl.instantiate_on(&s2, None).unwrap()),
    ];
    if let Some(vl) = two_vl() {
        w.push(Box::new(move || vl.instantiate_on(&s3, None).unwrap()));
    }
    w
}

#[test]
fn simultaneous_edges_are_one_instant_in_every_witness() {
    for s in [
        sched(("fast", 1, 0), ("slow", 2, 0)),
        sched(("fast", 2, 0), ("slow", 1, 0)),
        sched(("fast", 2, 1), ("slow", 3, 0)),
        sched(("fast", 1, 0), ("slow", 1, 0)),
        sched(("slow", 4, 3), ("fast", 3, 0)),
    ] {
        let runs = agree(&two_witnesses(&s, false), &|| xs(), 1000)
            .unwrap_or_else(|e| panic!("[{s}]: {e}"));
        assert!(runs.iter().all(|r| r.run.cycles == 300));
    }
}

#[test]
fn a_staggered_edge_is_reported_at_its_step_and_port() {
    // The racy model: both clocks rise in step 0; the slow domain wrongly
    // takes the fast counter's new value, visible in step 1.
    let s = sched(("fast", 1, 0), ("slow", 2, 0));
    let w = two_witnesses(&s, true);
    let runs = run_all(&w, &|| xs(), 1000).unwrap();
    let err = check_pair(&w, &runs, 0, 1, &|| xs()).unwrap_err();
    assert!(
        err.contains("diverge at step 1 ")
            && err.contains("previous step's edges: fast, slow")
            && err.contains("port slow_sees_fast: model=[1] rust-hdl=[0]")
            && !err.contains("port fast_count"),
        "{err}"
    );
}

#[test]
fn witnesses_on_different_schedules_are_refused() {
    let a = sched(("fast", 1, 0), ("slow", 2, 0));
    let b = sched(("fast", 1, 0), ("slow", 2, 1));
    let hdl = Prepared::new(
        Simulator::RustHdl,
        "weft_two_clocks_fixture",
        two_clocks,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let w: Vec<Factory<'_, TwoIn, TwoOut>> = vec![
        Box::new(|| -> BoxDut<TwoIn, TwoOut> { Box::new(TwoModel::new(a.clone(), false)) }),
        Box::new(|| hdl.instantiate_on(&b, None).unwrap()),
    ];
    let err = run_all(&w, &|| xs(), 1000).err().expect("refused");
    assert!(err.contains("different clock schedules"), "{err}");
    // A schedule that does not name the block's clocks is refused up front.
    let bad = sched(("fast", 1, 0), ("sloww", 2, 0));
    let e = hdl.instantiate_on(&bad, None).err().expect("refused");
    assert!(e.to_string().contains("slow"), "{e}");
    assert_eq!(<TwoClocks as HdlPorts>::CLOCKS, &["fast", "slow"]);
}

/// Rising edges of the 1-bit variable `name` in a VCD file (the first
/// declaration of that name).
fn rising_edges(vcd: &str, name: &str) -> usize {
    let id = vcd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6 && f[0] == "$var" && f[2] == "1" && f[4] == name)
                .then(|| f[3].to_string())
        })
        .unwrap_or_else(|| panic!("no variable {name} in the VCD"));
    vcd.lines()
        .filter(|l| l.strip_prefix('1') == Some(id.as_str()))
        .count()
}

#[test]
fn waveforms_show_both_clocks_at_their_ratio() {
    let s = sched(("fast", 1, 0), ("slow", 2, 0));
    let dir = tempfile::tempdir().unwrap();
    let hdl = Prepared::new(
        Simulator::RustHdl,
        "weft_two_clocks_fixture",
        two_clocks,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap()
    .with_schedule(s.clone())
    .unwrap();
    let mut engines = vec![("rust-hdl", hdl)];
    if verilator_usable() {
        let vl = Prepared::new(
            Simulator::Verilator,
            "weft_two_clocks_fixture",
            two_clocks,
            true,
            &SimulatorOptions::default(),
        )
        .unwrap()
        .with_schedule(s.clone())
        .unwrap();
        engines.push(("verilator", vl));
    }
    for (name, p) in engines {
        let path = dir.path().join(format!("{name}.vcd"));
        {
            let mut d = p.instantiate(Some(&path)).unwrap();
            let mut drv = xs();
            weft_model::run(d.as_mut(), &mut drv, 1000).unwrap();
        }
        let vcd = std::fs::read_to_string(&path).unwrap();
        assert_eq!(rising_edges(&vcd, "fast"), 300, "{name}");
        assert_eq!(rising_edges(&vcd, "slow"), 150, "{name}");
    }
}

// ---------------------------------------------------------------------------
// SyncBit (one clock: the destination's).

fn sync_bit_vl() -> Option<&'static Prepared<weft_hdl::cdc::SyncBit>> {
    static VL: OnceLock<Option<Prepared<weft_hdl::cdc::SyncBit>>> = OnceLock::new();
    prepared(&VL, "weft_sync_bit", weft_hdl::emit::sync_bit)
}

#[test]
fn sync_bit_is_two_cycles_late_in_every_witness() {
    let hdl = Prepared::new(
        Simulator::RustHdl,
        "weft_sync_bit",
        weft_hdl::emit::sync_bit,
        false,
        &SimulatorOptions::default(),
    )
    .unwrap();
    let mut w: Vec<Factory<'_, SyncBitIn, SyncBitOut>> = vec![
        Box::new(|| -> BoxDut<SyncBitIn, SyncBitOut> { Box::new(SyncBitModel::new()) }),
        Box::new(|| hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = sync_bit_vl() {
        w.push(Box::new(move || vl.instantiate(None).unwrap()));
    }
    for seed in 0..4 {
        let runs = agree(&w, &|| SyncBitDriver::new(seed, 0.3, 500), 1000).unwrap();
        for r in &runs {
            assert!(
                r.driver.errors().is_empty(),
                "{}: {:?}",
                r.witness,
                r.driver.errors()
            );
            assert!(r.driver.toggles() > 50);
        }
    }
}

// ---------------------------------------------------------------------------
// AsyncFifo.

fn fifo4_vl() -> Option<&'static Prepared<Fifo4>> {
    static VL: OnceLock<Option<Prepared<Fifo4>>> = OnceLock::new();
    prepared(
        &VL,
        "weft_async_fifo_d4",
        weft_hdl::emit::async_fifo::<16, 4, 3>,
    )
}

fn fifo16_vl() -> Option<&'static Prepared<Fifo16>> {
    static VL: OnceLock<Option<Prepared<Fifo16>>> = OnceLock::new();
    prepared(
        &VL,
        "weft_async_fifo_d16",
        weft_hdl::emit::async_fifo::<16, 16, 5>,
    )
}

/// The FIFO's three witnesses of `depth` on `s`.
fn fifo_witnesses<B>(
    depth: usize,
    s: &Schedule,
    make: fn() -> B,
    vl: Option<&'static Prepared<B>>,
    wave: &str,
) -> Vec<Factory<'static, FifoIn, FifoOut>>
where
    B: HdlPorts<In = FifoIn, Out = FifoOut> + Send + 'static,
{
    let model = move |s| -> BoxDut<FifoIn, FifoOut> { Box::new(AsyncFifoModel::new(depth, s)) };
    cdc_witnesses(s, model, make, vl, wave)
}

fn fifo_schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        // Writer at 250 MHz, reader at 125 MHz, phase-aligned.
        Just(sched((WR_CLOCK, 1, 0), (RD_CLOCK, 2, 0))),
        // The other way round.
        Just(sched((WR_CLOCK, 2, 0), (RD_CLOCK, 1, 0))),
        // Unrelated ratio and phase.
        Just(sched((WR_CLOCK, 2, 1), (RD_CLOCK, 3, 0))),
        // One domain.
        Just(sched((WR_CLOCK, 1, 0), (RD_CLOCK, 1, 0))),
    ]
}

fn traffic() -> impl Strategy<Value = Traffic> {
    (
        40usize..300,
        0.1f64..1.0,
        0.1f64..1.0,
        prop_oneof![Just(0.0), 0.0f64..0.08],
    )
        .prop_map(|(words, push, pop, reset)| Traffic {
            words,
            push,
            pop,
            reset,
        })
}

fn check_fifo_runs(runs: &[weft_sim::witness::Finished<FifoDriver>]) {
    for r in runs {
        let d = &r.driver;
        assert!(d.errors().is_empty(), "{}: {:?}", r.witness, d.errors());
        let st = d.stats();
        assert_eq!(
            st.popped + st.discarded,
            st.pushed,
            "{}: words lost or invented: {st:?}",
            r.witness
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(128), ..ProptestConfig::default() })]

    /// Random push/pop/reset on two clocks: the model, rust-hdl and
    /// Verilator agree every step, and the scoreboard sees every accepted
    /// word delivered once, in order, unless a reset discarded it.
    #[test]
    fn async_fifo_agrees_and_delivers(seed in any::<u64>(), t in traffic(), s in fifo_schedule()) {
        let w = fifo_witnesses(4, &s, weft_hdl::emit::async_fifo::<16, 4, 3>, fifo4_vl(), "async_fifo_d4");
        let runs = agree(&w, &|| FifoDriver::new(seed, t, s.clone()), 100_000)
            .map_err(|e| TestCaseError::fail(format!("[{s}] {t:?}: {e}")))?;
        check_fifo_runs(&runs);
    }
}

#[test]
fn async_fifo_fills_drains_and_resets_in_both_directions() {
    // Deterministic coverage the proptest may miss: a fast writer fills the
    // FIFO, a fast reader drains it, resets land mid-traffic.
    let t = Traffic {
        words: 200,
        push: 0.9,
        pop: 0.4,
        reset: 0.03,
    };
    for s in [
        sched((WR_CLOCK, 1, 0), (RD_CLOCK, 2, 0)),
        sched((WR_CLOCK, 2, 0), (RD_CLOCK, 1, 0)),
    ] {
        let w = fifo_witnesses(
            4,
            &s,
            weft_hdl::emit::async_fifo::<16, 4, 3>,
            fifo4_vl(),
            "async_fifo_d4",
        );
        let runs = agree(&w, &|| FifoDriver::new(42, t, s.clone()), 100_000)
            .unwrap_or_else(|e| panic!("[{s}]: {e}"));
        check_fifo_runs(&runs);
        let st = runs[0].driver.stats();
        assert!(st.full_cycles > 10, "[{s}] never full: {st:?}");
        assert!(st.empty_pops > 10, "[{s}] never empty: {st:?}");
        assert!(st.resets > 2 && st.discarded > 0, "[{s}] no reset: {st:?}");
    }
}

#[test]
fn async_fifo_of_sixteen_agrees() {
    // Pops at a quarter the push rate per step, so both directions fill.
    let t = Traffic {
        words: 300,
        push: 0.9,
        pop: 0.2,
        reset: 0.01,
    };
    for s in [
        sched((WR_CLOCK, 1, 0), (RD_CLOCK, 2, 0)),
        sched((WR_CLOCK, 2, 0), (RD_CLOCK, 1, 0)),
    ] {
        let w = fifo_witnesses(
            16,
            &s,
            weft_hdl::emit::async_fifo::<16, 16, 5>,
            fifo16_vl(),
            "async_fifo_d16",
        );
        let runs = agree(&w, &|| FifoDriver::new(7, t, s.clone()), 100_000)
            .unwrap_or_else(|e| panic!("[{s}]: {e}"));
        check_fifo_runs(&runs);
        assert!(runs[0].driver.stats().full_cycles > 0, "[{s}]");
    }
}

// ---------------------------------------------------------------------------
// Cdc2Phase.

fn two_phase_vl() -> Option<&'static Prepared<TwoPhase16>> {
    static VL: OnceLock<Option<Prepared<TwoPhase16>>> = OnceLock::new();
    prepared(&VL, "weft_cdc_2phase_16", weft_hdl::emit::cdc_2phase::<16>)
}

fn two_phase_witnesses(s: &Schedule) -> Vec<Factory<'static, TwoPhaseIn, TwoPhaseOut>> {
    let model = |s| -> BoxDut<TwoPhaseIn, TwoPhaseOut> { Box::new(TwoPhaseModel::new(s)) };
    cdc_witnesses(
        s,
        model,
        weft_hdl::emit::cdc_2phase::<16>,
        two_phase_vl(),
        "cdc_2phase_16",
    )
}

fn two_phase_schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        Just(sched((SRC_CLOCK, 1, 0), (DST_CLOCK, 2, 0))),
        Just(sched((SRC_CLOCK, 2, 0), (DST_CLOCK, 1, 0))),
        Just(sched((SRC_CLOCK, 2, 1), (DST_CLOCK, 3, 0))),
        Just(sched((SRC_CLOCK, 1, 0), (DST_CLOCK, 1, 0))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(64), ..ProptestConfig::default() })]

    /// Random words through the one-word crossing on two clocks: the model,
    /// rust-hdl and Verilator agree every step, and every stored word
    /// arrives once, in order.
    #[test]
    fn cdc_2phase_agrees_and_delivers(seed in any::<u64>(), t in traffic(), s in two_phase_schedule()) {
        let w = two_phase_witnesses(&s);
        let runs = agree(&w, &|| TwoPhaseDriver::new(seed, t, s.clone()), 100_000)
            .map_err(|e| TestCaseError::fail(format!("[{s}] {t:?}: {e}")))?;
        for r in &runs {
            let d = &r.driver;
            prop_assert!(d.errors().is_empty(), "{}: {:?}", r.witness, d.errors());
            prop_assert_eq!(d.stats().popped, d.stats().pushed, "{}", r.witness);
        }
    }
}

// ---------------------------------------------------------------------------
// AxilCdc.

fn axil_vl() -> Option<&'static Prepared<weft_hdl::cdc::AxilCdc>> {
    static VL: OnceLock<Option<Prepared<weft_hdl::cdc::AxilCdc>>> = OnceLock::new();
    prepared(&VL, "weft_axil_cdc", weft_hdl::emit::axil_cdc)
}

fn axil_witnesses(s: &Schedule) -> Vec<Factory<'static, AxilCdcIn, AxilCdcOut>> {
    let model = |s| -> BoxDut<AxilCdcIn, AxilCdcOut> { Box::new(AxilCdcModel::new(s)) };
    cdc_witnesses(s, model, weft_hdl::emit::axil_cdc, axil_vl(), "axil_cdc")
}

fn axil_schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        // The OpenNIC box: axis_aclk (m) at 250 MHz, axil_aclk (s) at 125.
        3 => Just(sched((M_CLOCK, 1, 0), (S_CLOCK, 2, 0))),
        1 => Just(sched((M_CLOCK, 2, 0), (S_CLOCK, 1, 0))),
        1 => Just(sched((M_CLOCK, 3, 1), (S_CLOCK, 2, 0))),
    ]
}

fn axil_op() -> impl Strategy<Value = Op> {
    let rw = (0u32..axil_cdc::RW_WORDS as u32).prop_map(|w| 4 * w);
    let konst = (0u32..64).prop_map(|w| axil_cdc::CONST_BASE + 4 * w);
    let any_addr = 0u32..0x200;
    prop_oneof![
        3 => (rw.clone(), any::<u32>(), 0u8..16).prop_map(|(addr, data, strb)| Op::Write { addr, data, strb }),
        3 => rw.prop_map(|addr| Op::Read { addr }),
        1 => konst.prop_map(|addr| Op::Read { addr }),
        1 => (any_addr.clone(), any::<u32>()).prop_map(|(addr, data)| Op::Write { addr, data, strb: 0xf }),
        1 => any_addr.prop_map(|addr| Op::Read { addr }),
    ]
}

fn timing() -> impl Strategy<Value = Timing> {
    (0.0f64..0.7, 0.0f64..0.7).prop_map(|(bubble, stall)| Timing { bubble, stall })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(64), ..ProptestConfig::default() })]

    /// Register traffic through the crossing: every witness agrees every
    /// step, both ports keep the handshake rules, and every transaction
    /// completes with the answer a register file gives in program order.
    #[test]
    fn axil_cdc_agrees_and_answers(
        ops in prop::collection::vec(axil_op(), 1..60),
        serial in any::<bool>(),
        master in timing(),
        slave in timing(),
        seed in any::<u64>(),
        s in axil_schedule(),
    ) {
        let w = axil_witnesses(&s);
        let make = || AxilCdcDriver::new(ops.clone(), serial, master, slave, seed, s.clone());
        let runs = agree(&w, &make, 200_000)
            .map_err(|e| TestCaseError::fail(format!("[{s}]: {e}")))?;
        for r in &runs {
            let d = &r.driver;
            prop_assert!(d.violations().is_empty(), "{}: {:?}", r.witness, d.violations());
            prop_assert_eq!(d.served(), ops.len());
            axil_cdc::check(&ops, d.completions(), serial)
                .map_err(|e| TestCaseError::fail(format!("{}: {e}", r.witness)))?;
        }
    }
}

#[test]
fn axil_cdc_round_trip_latency_at_the_box_ratio() {
    // One read, no bubbles, no back-pressure, m_aclk every step and s_aclk
    // every second one. Step 0: AR stored (s edge). Steps 1 and 2: the two
    // m flops; step 3: ARVALID on the master port, taken at once. Step 4:
    // the slave's RVALID, stored into R. Steps 6 and 8: the two s flops;
    // step 9: RVALID on the slave port, taken at the s edge of step 10,
    // which is the master's s-cycle 5. Every witness agrees to the step.
    let s = sched((M_CLOCK, 1, 0), (S_CLOCK, 2, 0));
    let ops = vec![Op::Read {
        addr: axil_cdc::CONST_BASE,
    }];
    let w = axil_witnesses(&s);
    let make = || {
        AxilCdcDriver::new(
            ops.clone(),
            true,
            Timing::EAGER,
            Timing::EAGER,
            1,
            s.clone(),
        )
    };
    let runs = agree(&w, &make, 1000).unwrap();
    axil_cdc::check(&ops, runs[0].driver.completions(), true).unwrap();
    let c = runs[0].driver.completions()[0].expect("completed");
    assert_eq!(c.cycle, 5, "round trip in s cycles");
    assert_eq!(runs[0].run.cycles, 11, "steps");
    assert_eq!(AxilCdcIn::total_words(), 17);
}

/// Two counters on two clocks, each also sampling the other's counter.
const TWO_CLOCK_V: &str = r#"
module two_clk(
    input a_clk,
    input b_clk,
    output reg [7:0] a_n,
    output reg [7:0] b_n,
    output reg [7:0] a_sees_b,
    output reg [7:0] b_sees_a
);
    initial begin a_n = 0; b_n = 0; a_sees_b = 0; b_sees_a = 0; end
    always @(posedge a_clk) begin a_n <= a_n + 8'd1; a_sees_b <= b_n; end
    always @(posedge b_clk) begin b_n <= b_n + 8'd1; b_sees_a <= a_n; end
endmodule
"#;

#[test]
fn verilator_abi_steps_a_mask_of_clocks() {
    use weft_sim::verilator::{build, BuildOptions, Model, ModelSource, PortSpec};
    if !verilator_usable() {
        return;
    }
    let src = |clocks: &[&str]| ModelSource {
        verilog: TWO_CLOCK_V.to_string(),
        top: "two_clk".into(),
        ports: vec![
            PortSpec::input("a_clk", 1),
            PortSpec::input("b_clk", 1),
            PortSpec::output("a_n", 8),
            PortSpec::output("b_n", 8),
            PortSpec::output("a_sees_b", 8),
            PortSpec::output("b_sees_a", 8),
        ],
        clocks: clocks.iter().map(|c| c.to_string()).collect(),
        split: true,
    };
    let lib = build(&src(&["a_clk", "b_clk"]), &BuildOptions::default()).unwrap();
    assert_eq!(lib.clocks(), ["a_clk", "b_clk"]);
    assert_eq!((lib.input_words(), lib.output_words()), (0, 4));
    let mut m = Model::new(&lib, None).unwrap();
    let mut out = [0u32; 4];
    // a alone, both at one instant, b alone, nothing, both (tick).
    m.step(0b01);
    m.step(0b11);
    m.eval(&[], &mut out);
    // a: 2 edges; b: 1 edge that saw a_n = 1 before the instant.
    assert_eq!(out, [2, 1, 0, 1]);
    m.step(0b10);
    m.step(0);
    m.tick();
    m.eval(&[], &mut out);
    assert_eq!(out, [3, 3, 2, 2]);
    // The clock set is part of the signature and so of the cache key: the
    // same Verilog with the clocks in another order is another library.
    let swapped = build(&src(&["b_clk", "a_clk"]), &BuildOptions::default()).unwrap();
    assert_ne!(swapped.path(), lib.path());
    let mut m = Model::new(&swapped, None).unwrap();
    m.step(0b01); // b_clk now
    m.eval(&[], &mut out);
    assert_eq!(out, [0, 1, 0, 0]);
}
