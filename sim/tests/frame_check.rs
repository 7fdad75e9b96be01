//! The frame check through the model, rust-hdl and Verilator, cycle by
//! cycle, and each run checked on its own: exactly the good frames leave,
//! whole, in order, bytes unchanged, with their size and a `tkeep` from it;
//! `ev_frame` marks every frame and `ev_bad` every dropped one; at line rate
//! a beat enters and a beat leaves every cycle.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::frame_check::FrameCheck;
use weft_model::frame_check::{
    beat_limit, keep_of, passes, FrameCheckIn, FrameCheckModel, FrameCheckOut,
};
use weft_model::stall::Stalls;
use weft_model::wire::MAX_FRAME;
use weft_model::Driver;
use weft_sim::hdl::HdlPorts;
use weft_sim::simulator::{verilator_usable, BoxDut, Simulators};
use weft_sim::witness::{agree, Factory};

type W<B> = Simulators<B>;

fn prepare<B>(module: &str, make: fn() -> B) -> W<B>
where
    B: HdlPorts + Send + 'static,
{
    Simulators::prepare(module, make).expect("the block builds on both simulators")
}

fn card() -> &'static W<FrameCheck<9>> {
    static W: OnceLock<W<FrameCheck<9>>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_frame_check", FrameCheck::<9>::connected))
}

fn small() -> &'static W<FrameCheck<6>> {
    static W: OnceLock<W<FrameCheck<6>>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_frame_check_ab6", FrameCheck::<6>::connected))
}

/// One input frame: its `tuser_size` and its beats.
#[derive(Clone, Debug)]
struct Frame {
    size: u16,
    beats: Vec<[u32; 16]>,
    /// Later beats carry a different `tuser_size` (the block must use the
    /// first beat's).
    noisy_size: bool,
}

fn beats_for(size: usize) -> usize {
    size.div_ceil(64).max(1)
}

/// A frame of one of the shapes that matter; good frames have at most
/// `max_beats` beats, and so have most bad ones.
fn frame(rng: &mut ChaCha8Rng, max_beats: usize, limit: usize) -> Frame {
    let max_size = (64 * max_beats).min(MAX_FRAME);
    let (size, beats): (usize, usize) = match rng.gen_range(0..14) {
        // Good, short.
        0..=3 => {
            let s = rng.gen_range(1..=max_size.min(330));
            (s, beats_for(s))
        }
        // Good, one beat (60-byte minimum frames, a full beat).
        4 => {
            let s = *[1, 60, 63, 64].get(rng.gen_range(0..4)).unwrap_or(&60);
            (s, 1)
        }
        // Good, a multiple of 64 (the last beat full).
        5 => {
            let b = rng.gen_range(1..=max_beats.min(MAX_FRAME / 64));
            (64 * b, b)
        }
        // Good, up to the run's longest.
        6 => {
            let s = rng.gen_range(1..=max_size);
            (s, beats_for(s))
        }
        // Fewer beats than the size says.
        7 => {
            let s = rng.gen_range(65..=max_size.max(65) + 64);
            let want = beats_for(s);
            (s, rng.gen_range(1..want))
        }
        // More beats than the size says.
        8 => {
            let s = rng.gen_range(1..=max_size);
            let want = beats_for(s);
            (s, rng.gen_range(want + 1..=want + 3))
        }
        // Size 0.
        9 => (0, rng.gen_range(1..=3)),
        // Size above MAX_FRAME, with the beats it would have had (capped)
        // or a few.
        10 => {
            let s = rng.gen_range(MAX_FRAME + 1..=65535);
            let b = if rng.gen_bool(0.5) {
                beats_for(s).min(max_beats + 1)
            } else {
                rng.gen_range(1..=3)
            };
            (s, b)
        }
        // At the beat limit: just fitting, and one beat too many.
        11 => {
            let b = if rng.gen_bool(0.5) { limit } else { limit + 1 };
            let b = b.min(max_beats + 1);
            (64 * b - rng.gen_range(0..64), b)
        }
        // A size that claims one beat too few.
        12 => {
            let s = rng.gen_range(1..=max_size);
            let want = beats_for(s);
            (s, want.saturating_sub(1).max(if want == 1 { 2 } else { 1 }))
        }
        // Back-to-back one-byte frames.
        _ => (1, 1),
    };
    Frame {
        size: size as u16,
        beats: (0..beats)
            .map(|_| std::array::from_fn(|_| rng.gen()))
            .collect(),
        noisy_size: rng.gen_bool(0.2),
    }
}

/// An output beat as seen at the port.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OutBeat {
    data: [u32; 16],
    keep: u64,
    last: bool,
    size: u16,
}

struct FcDriver {
    frames: Vec<Frame>,
    want: usize,
    next: usize,
    beat: usize,
    offering: bool,
    rng: ChaCha8Rng,
    bubble: f64,
    ready: Stalls,
    cycle: u64,
    /// Per frame whose last beat was taken: whether `ev_bad` came with it.
    verdicts: Vec<bool>,
    /// `ev_frame` / `ev_bad` pulses.
    ev_frame: usize,
    ev_bad: usize,
    cur: Vec<OutBeat>,
    out: Vec<Vec<OutBeat>>,
    in_cycles: Vec<u64>,
    out_cycles: Vec<u64>,
    /// Cycles a beat was offered and not taken.
    held: u64,
}

impl FcDriver {
    fn new(frames: Vec<Frame>, ab: u32, seed: u64, bubble: f64, stall: f64, long: f64) -> Self {
        let want = frames
            .iter()
            .filter(|f| passes(ab, f.size as usize, f.beats.len()))
            .count();
        Self {
            frames,
            want,
            next: 0,
            beat: 0,
            offering: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            bubble,
            ready: Stalls::new(seed ^ 0x5eed, stall, long),
            cycle: 0,
            verdicts: vec![],
            ev_frame: 0,
            ev_bad: 0,
            cur: vec![],
            out: vec![],
            in_cycles: vec![],
            out_cycles: vec![],
            held: 0,
        }
    }
}

impl Driver<FrameCheckIn, FrameCheckOut> for FcDriver {
    fn drive(&mut self) -> FrameCheckIn {
        let mut i = FrameCheckIn {
            m_tready: self.ready.ready(),
            ..Default::default()
        };
        if !self.offering && self.next < self.frames.len() {
            self.offering = self.bubble == 0.0 || !self.rng.gen_bool(self.bubble);
        }
        if self.offering {
            let f = &self.frames[self.next];
            let last = self.beat + 1 == f.beats.len();
            i.s_tdata = f.beats[self.beat];
            i.s_tlast = last;
            i.s_tvalid = true;
            i.s_tuser_size = if f.noisy_size && self.beat > 0 {
                self.rng.gen()
            } else {
                f.size
            };
            // tkeep is not used: usually the honest mask, sometimes noise.
            i.s_tkeep = if self.rng.gen_bool(0.8) {
                keep_of(f.size, last)
            } else {
                self.rng.gen()
            };
        } else if self.bubble > 0.0 {
            // Whatever sits on an idle bus must not matter.
            i.s_tdata = std::array::from_fn(|_| self.rng.gen());
            i.s_tlast = self.rng.gen();
            i.s_tuser_size = self.rng.gen();
        }
        i
    }

    fn observe(&mut self, i: &FrameCheckIn, o: &FrameCheckOut) {
        if o.ev_frame {
            self.ev_frame += 1;
            self.verdicts.push(o.ev_bad);
        }
        if o.ev_bad {
            self.ev_bad += 1;
        }
        if i.s_tvalid && !o.s_tready {
            self.held += 1;
        }
        if i.s_tvalid && o.s_tready {
            self.in_cycles.push(self.cycle);
            self.offering = false;
            if i.s_tlast {
                self.next += 1;
                self.beat = 0;
            } else {
                self.beat += 1;
            }
        }
        if o.m_tvalid && i.m_tready {
            self.out_cycles.push(self.cycle);
            self.cur.push(OutBeat {
                data: o.m_tdata,
                keep: o.m_tkeep,
                last: o.m_tlast,
                size: o.m_tuser_size,
            });
            if o.m_tlast {
                self.out.push(std::mem::take(&mut self.cur));
            }
        }
        self.cycle += 1;
    }

    fn finished(&self) -> bool {
        self.next == self.frames.len() && self.out.len() >= self.want
    }
}

/// Per-run checks against the frames offered.
fn check_run(ab: u32, frames: &[Frame], d: &FcDriver, who: &str) -> Result<(), String> {
    if d.ev_frame != frames.len() || d.verdicts.len() != frames.len() {
        return Err(format!(
            "{who}: ev_frame pulsed {} times for {} frames",
            d.ev_frame,
            frames.len()
        ));
    }
    let mut good = vec![];
    for (k, (f, &bad)) in frames.iter().zip(&d.verdicts).enumerate() {
        let ok = passes(ab, f.size as usize, f.beats.len());
        if bad == ok {
            return Err(format!(
                "{who}: frame {k} (size {}, {} beats): ev_bad {bad}, want {}",
                f.size,
                f.beats.len(),
                !ok
            ));
        }
        if ok {
            good.push(f);
        }
    }
    if d.ev_bad != frames.len() - good.len() {
        return Err(format!(
            "{who}: ev_bad without ev_frame ({} pulses)",
            d.ev_bad
        ));
    }
    if !d.cur.is_empty() || d.out.len() != good.len() {
        return Err(format!(
            "{who}: {} frames out (+{} beats), want {}",
            d.out.len(),
            d.cur.len(),
            good.len()
        ));
    }
    for (k, (f, got)) in good.iter().zip(&d.out).enumerate() {
        let n = f.beats.len();
        let want: Vec<OutBeat> = f
            .beats
            .iter()
            .enumerate()
            .map(|(b, data)| OutBeat {
                data: *data,
                keep: keep_of(f.size, b + 1 == n),
                last: b + 1 == n,
                size: f.size,
            })
            .collect();
        if *got != want {
            return Err(format!(
                "{who}: good frame {k} (size {}, {n} beats) came out as {} beats, different",
                f.size,
                got.len()
            ));
        }
    }
    Ok(())
}

struct Case {
    ab: u32,
    seed: u64,
    n: usize,
    max_beats: usize,
    bubble: f64,
    stall: f64,
    long: f64,
}

fn frames_of(c: &Case) -> Vec<Frame> {
    let mut rng = ChaCha8Rng::seed_from_u64(c.seed);
    let limit = beat_limit(c.ab);
    (0..c.n)
        .map(|_| frame(&mut rng, c.max_beats, limit))
        .collect()
}

fn witnesses<'a, B>(w: &'a W<B>, ab: u32) -> Vec<Factory<'a, FrameCheckIn, FrameCheckOut>>
where
    B: HdlPorts<In = FrameCheckIn, Out = FrameCheckOut> + Send + 'static,
{
    let mut f: Vec<Factory<'a, FrameCheckIn, FrameCheckOut>> =
        vec![Box::new(move || -> BoxDut<FrameCheckIn, FrameCheckOut> {
            Box::new(FrameCheckModel::new(ab))
        })];
    f.push(Box::new(|| w.hdl.instantiate(None).unwrap()));
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    f
}

fn run_case(c: &Case, frames: &[Frame]) -> Result<Vec<FcDriver>, String> {
    let make = || FcDriver::new(frames.to_vec(), c.ab, c.seed ^ 1, c.bubble, c.stall, c.long);
    let runs = match c.ab {
        9 => agree(&witnesses(card(), 9), &make, 2_000_000)?,
        6 => agree(&witnesses(small(), 6), &make, 2_000_000)?,
        ab => return Err(format!("no glue for AB = {ab}")),
    };
    let mut drivers = vec![];
    for r in runs {
        check_run(c.ab, frames, &r.driver, &r.witness)?;
        drivers.push(r.driver);
    }
    Ok(drivers)
}

fn check(c: Case) -> Result<(), String> {
    let frames = frames_of(&c);
    run_case(&c, &frames).map(|_| ())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    /// The card's build, three witnesses: short frames of every shape.
    #[test]
    fn card_build_passes_exactly_the_good_frames(seed in any::<u64>(), bubble in 0.0f64..0.6, stall in 0.0f64..0.7) {
        check(Case { ab: 9, seed, n: 80, max_beats: 6, bubble, stall, long: 0.0 })
            .map_err(TestCaseError::fail)?;
    }

    /// A 63-beat buffer, three witnesses: frames near and past its
    /// capacity, and long output stalls that fill it.
    #[test]
    fn small_buffer_drops_what_cannot_fit_and_never_hangs(seed in any::<u64>(), bubble in 0.0f64..0.5, stall in 0.0f64..0.5) {
        check(Case { ab: 6, seed, n: 24, max_beats: 70, bubble, stall, long: 0.01 })
            .map_err(TestCaseError::fail)?;
    }

    /// The card's build, three witnesses: jumbo frames up to
    /// 9600 bytes and beyond, long stalls, many frames.
    #[test]
    fn card_build_with_jumbo_frames_and_long_stalls(seed in any::<u64>(), bubble in 0.0f64..0.5, stall in 0.0f64..0.6) {
        check(Case { ab: 9, seed, n: 300, max_beats: 160, bubble, stall, long: 0.005 })
            .map_err(TestCaseError::fail)?;
    }
}

/// Frames past the beat limit are bad and do not wait for buffer space
/// (every frame here is longer than the 63-beat buffer; the sizes agree).
#[test]
fn frames_longer_than_a_small_buffer_are_dropped_without_deadlock() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let limit = beat_limit(6);
    let mut frames = vec![];
    for k in 0..12 {
        let beats = match k % 3 {
            0 => limit,
            1 => limit + 1,
            _ => rng.gen_range(limit + 2..200),
        };
        let size = (64 * beats).min(65535) as u16;
        frames.push(Frame {
            size,
            beats: (0..beats)
                .map(|_| std::array::from_fn(|_| rng.gen()))
                .collect(),
            noisy_size: false,
        });
    }
    let c = Case {
        ab: 6,
        seed: 7,
        n: frames.len(),
        max_beats: 0,
        bubble: 0.1,
        stall: 0.3,
        long: 0.0,
    };
    let d = run_case(&c, &frames).unwrap();
    // Only the frames of exactly `limit` beats pass (4 of 12).
    assert_eq!(d[0].out.len(), 4);
}

/// A slow output fills the buffer: the input is held off, nothing is lost.
#[test]
fn a_full_buffer_holds_the_input_and_loses_nothing() {
    for ab in [6, 9] {
        let c = Case {
            ab,
            seed: 5,
            n: 200,
            max_beats: 40,
            bubble: 0.0,
            stall: 0.8,
            long: 0.02,
        };
        let frames = frames_of(&c);
        for d in run_case(&c, &frames).unwrap() {
            assert!(
                d.held > 100,
                "AB = {ab}: the input was held {} cycles",
                d.held
            );
        }
    }
}

/// Line rate on the card's build: frames of `len` beats back to back, no
/// input bubbles, the output always ready. Every cycle takes an input beat
/// until the last, and from the first output beat every cycle sends one;
/// the first frame leaves the cycle after its last beat was taken (a
/// one-beat frame a cycle later).
fn line_rate(len: usize, n: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(len as u64);
    let frames: Vec<Frame> = (0..n)
        .map(|_| {
            let size = 64 * len - rng.gen_range(0..64);
            Frame {
                size: size as u16,
                beats: (0..len)
                    .map(|_| std::array::from_fn(|_| rng.gen()))
                    .collect(),
                noisy_size: false,
            }
        })
        .collect();
    let c = Case {
        ab: 9,
        seed: 3,
        n,
        max_beats: len,
        bubble: 0.0,
        stall: 0.0,
        long: 0.0,
    };
    let total = (n * len) as u64;
    for d in run_case(&c, &frames).unwrap() {
        assert_eq!(
            d.in_cycles,
            (0..total).collect::<Vec<_>>(),
            "input at line rate"
        );
        let first = if len == 1 { 2 } else { len as u64 };
        assert_eq!(
            d.out_cycles,
            (first..first + total).collect::<Vec<_>>(),
            "output at line rate, {len}-beat frames"
        );
        assert_eq!(d.cycle, first + total, "cycles of the run");
    }
}

#[test]
fn line_rate_one_beat_frames() {
    line_rate(1, 400);
}

#[test]
fn line_rate_short_frames() {
    line_rate(2, 200);
    line_rate(7, 60);
}

#[test]
fn line_rate_jumbo_frames() {
    line_rate(150, 40);
}

/// Mixed lengths at line rate: the input is never held off.
#[test]
fn line_rate_mixed_frames_never_hold_the_input() {
    let c = Case {
        ab: 9,
        seed: 11,
        n: 400,
        max_beats: 150,
        bubble: 0.0,
        stall: 0.0,
        long: 0.0,
    };
    let frames = frames_of(&c);
    let total: usize = frames.iter().map(|f| f.beats.len()).sum();
    for d in run_case(&c, &frames).unwrap() {
        assert_eq!(d.in_cycles, (0..total as u64).collect::<Vec<_>>());
    }
}

#[test]
fn card_build_lints_clean_with_documented_waivers() {
    if !verilator_usable() {
        return;
    }
    for (v, module) in [
        (
            weft_hdl::emit::verilog_of(&FrameCheck::<9>::connected(), "weft_frame_check"),
            "weft_frame_check",
        ),
        (
            weft_hdl::emit::verilog_of(&FrameCheck::<6>::connected(), "weft_frame_check_ab6"),
            "weft_frame_check_ab6",
        ),
    ] {
        let rep = weft_sim::verilator::lint_with_waivers(&v, module).unwrap();
        assert!(rep.clean, "{module}: {:#?}", rep.warnings);
    }
}

/// rust-hdl's connection check passes on the block `connected()` gives and
/// fails on the bare one (the simulators would not notice a missing
/// `connect_all`; Verilog generation for a flow would).
#[test]
fn the_connected_block_passes_rust_hdls_connection_check() {
    weft_sim::witness::check_connection(&FrameCheck::<9>::connected(), &FrameCheck::<9>::new())
        .unwrap();
}
