//! The record packer through the model, rust-hdl and Verilator, cycle by
//! cycle, driven by random record streams and a framer-like consumer, and
//! each run checked on its own: the frames' records are the input records
//! in order; no frame mixes classes or holds more than `max`; every flush
//! ends in exactly one FIN frame, after exactly the records before it;
//! headers are exact, sequence numbers consecutive (from each `seq` write);
//! `h_*` stay stable until accepted; and, when no timer can fire, frames
//! close early only for the allowed reasons.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::rec_pack::RecPack;
use weft_model::rec_pack::{effective_max, header, RecPackIn, RecPackModel, RecPackOut};
use weft_model::stall::Stalls;
use weft_model::Driver;
use weft_sim::simulator::{verilator_usable, BoxDut, Prepared, Simulator, SimulatorOptions};
use weft_sim::witness::{agree, Factory};

struct W {
    hdl: Prepared<RecPack>,
    vl: Option<Prepared<RecPack>>,
}

fn packers() -> &'static W {
    static W: OnceLock<W> = OnceLock::new();
    W.get_or_init(|| {
        let o = SimulatorOptions::default();
        let vl = verilator_usable().then(|| {
            Prepared::new(
                Simulator::Verilator,
                "weft_rec_pack",
                RecPack::connected,
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
                "weft_rec_pack",
                RecPack::connected,
                false,
                &o,
            )
            .unwrap(),
            vl,
        }
    })
}

const SPILL: u8 = 1;
const FLUSH: u8 = 2;
const DONE: u8 = 3;

/// An input beat.
#[derive(Clone, Debug)]
struct Beat {
    tuser: u8,
    keep: u8,
    lanes: [u64; 8],
    /// Not offered before this cycle.
    not_before: u64,
}

impl Beat {
    /// Its records, in lane order (none for a flush-done beat).
    fn records(&self) -> Vec<u64> {
        if self.tuser == DONE {
            return vec![];
        }
        (0..8)
            .filter(|l| self.keep >> l & 1 != 0)
            .map(|l| self.lanes[l])
            .collect()
    }
}

fn keep_mask(rng: &mut ChaCha8Rng) -> u8 {
    match rng.gen_range(0..8) {
        0 => 0xff,
        1 => 0,
        2 => 1 << rng.gen_range(0..8),
        3 => 0x80,
        _ => rng.gen(),
    }
}

fn beat(rng: &mut ChaCha8Rng, tuser: u8, full: f64) -> Beat {
    Beat {
        tuser,
        keep: if rng.gen_bool(full) {
            0xff
        } else {
            keep_mask(rng)
        },
        lanes: std::array::from_fn(|_| rng.gen()),
        not_before: 0,
    }
}

/// A record stream: spill bursts, flushes (records then flush-done),
/// flushes of an empty table, now and then a spill inside a flush; it ends
/// with a flush-done beat, so every record leaves.
fn stream(rng: &mut ChaCha8Rng, episodes: usize, full: f64) -> Vec<Beat> {
    let mut v = vec![];
    for _ in 0..episodes {
        match rng.gen_range(0..6) {
            0..=2 => {
                for _ in 0..rng.gen_range(1..12) {
                    v.push(beat(rng, SPILL, full));
                }
            }
            3 | 4 => {
                for _ in 0..rng.gen_range(0..16) {
                    let t = if rng.gen_bool(0.05) { SPILL } else { FLUSH };
                    v.push(beat(rng, t, full));
                }
                v.push(beat(rng, DONE, full));
            }
            _ => v.push(beat(rng, DONE, full)),
        }
    }
    v.push(beat(rng, DONE, full));
    v
}

/// How the framer-like consumer raises `h_ready`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ack {
    /// As the framer: with the last body beat or after the body, when it
    /// knows the frame's length (from the previous cycle's `h_blen`), now
    /// and then a few cycles late.
    Framer,
    /// Always high (a framer that is always done at the last beat).
    Always,
    /// Random, at any time (the packer must ignore it until the body is out).
    Noise,
}

#[derive(Clone, Debug)]
struct Cfg {
    max: u16,
    wait: u32,
    job: u16,
    bubble: f64,
    stall: f64,
    long: f64,
    ack: Ack,
    seq_write: f64,
    /// Output stalled (`m_tready` and `h_ready` low) for the first cycles.
    hold_out: u64,
    /// Per cycle, the chance that `max`, `wait_cycles` or `job` changes.
    retune: f64,
}

/// A frame as the consumer got it.
#[derive(Clone, Debug)]
struct OutFrame {
    app: [u32; 4],
    blen: u16,
    body: Vec<[u32; 16]>,
    /// The sequence number it should carry (from `seq` when first shown).
    want_seq: u32,
    /// Cycles its body beats left.
    body_cycles: Vec<u64>,
}

impl OutFrame {
    fn n(&self) -> usize {
        (self.app[0] >> 16 & 0xffff) as usize
    }
    fn flags(&self) -> u8 {
        (self.app[0] >> 8) as u8
    }
    fn fin(&self) -> bool {
        self.flags() & 0x08 != 0
    }
    fn flush(&self) -> bool {
        self.flags() & 0x04 != 0
    }
    fn records(&self) -> Vec<u64> {
        (0..self.n())
            .map(|j| {
                let b = self.body.get(j / 8).copied().unwrap_or([0; 16]);
                let l = j % 8;
                b[2 * l] as u64 | (b[2 * l + 1] as u64) << 32
            })
            .collect()
    }
}

struct RpDriver {
    beats: Vec<Beat>,
    /// `max`, `wait_cycles` and `job` as driven (they change when retuning).
    live: (u16, u32, u16),
    dones: usize,
    cfg: Cfg,
    next: usize,
    offering: bool,
    rng: ChaCha8Rng,
    ready: Stalls,
    cycle: u64,
    /// The head frame's body beats, once known, and how many were taken.
    known: Option<usize>,
    taken: usize,
    cur_body: Vec<[u32; 16]>,
    cur_cycles: Vec<u64>,
    frames: Vec<OutFrame>,
    fins: usize,
    /// `seq` as the rule says it must be, and whether a header is shown.
    exp_seq: u32,
    shown: bool,
    shown_seq: u32,
    prev_h: Option<([u32; 4], u16)>,
    errors: Vec<String>,
    in_cycles: Vec<u64>,
    held: u64,
}

impl RpDriver {
    fn new(beats: Vec<Beat>, cfg: Cfg, seed: u64) -> Self {
        let dones = beats.iter().filter(|b| b.tuser == DONE).count();
        Self {
            beats,
            dones,
            live: (cfg.max, cfg.wait, cfg.job),
            ready: Stalls::new(seed ^ 0x77, cfg.stall, cfg.long),
            cfg,
            next: 0,
            offering: false,
            rng: ChaCha8Rng::seed_from_u64(seed),
            cycle: 0,
            known: None,
            taken: 0,
            cur_body: vec![],
            cur_cycles: vec![],
            frames: vec![],
            fins: 0,
            exp_seq: 0,
            shown: false,
            shown_seq: 0,
            prev_h: None,
            errors: vec![],
            in_cycles: vec![],
            held: 0,
        }
    }

    fn error(&mut self, e: String) {
        if self.errors.len() < 8 {
            self.errors.push(format!("cycle {}: {e}", self.cycle));
        }
    }
}

impl Driver<RecPackIn, RecPackOut> for RpDriver {
    fn drive(&mut self) -> RecPackIn {
        let hold = self.cycle < self.cfg.hold_out;
        let m_tready = !hold && self.ready.ready();
        let h_ready = !hold
            && match self.cfg.ack {
                Ack::Always => true,
                Ack::Noise => self.rng.gen_bool(0.5),
                Ack::Framer => match self.known {
                    Some(nb) => {
                        (self.taken >= nb || self.taken + 1 == nb && m_tready)
                            && self.rng.gen_bool(0.7)
                    }
                    None => false,
                },
            };
        let seq_we = self.cfg.seq_write > 0.0 && self.rng.gen_bool(self.cfg.seq_write);
        if self.cfg.retune > 0.0 && self.rng.gen_bool(self.cfg.retune) {
            match self.rng.gen_range(0..3) {
                0 => self.live.0 = MAXES[self.rng.gen_range(0..MAXES.len())],
                1 => self.live.1 = self.rng.gen_range(0..100),
                _ => self.live.2 = self.rng.gen(),
            }
        }
        let mut i = RecPackIn {
            max: self.live.0,
            wait_cycles: self.live.1,
            job: self.live.2,
            seq_we,
            seq_wdata: if seq_we {
                if self.rng.gen_bool(0.5) {
                    u32::MAX - self.rng.gen_range(0..3)
                } else {
                    self.rng.gen()
                }
            } else {
                0
            },
            h_ready,
            m_tready,
            ..Default::default()
        };
        if !self.offering
            && self.next < self.beats.len()
            && self.cycle >= self.beats[self.next].not_before
        {
            self.offering = self.cfg.bubble == 0.0 || !self.rng.gen_bool(self.cfg.bubble);
        }
        if self.offering {
            let b = &self.beats[self.next];
            i.s_tdata = std::array::from_fn(|w| (b.lanes[w / 2] >> (32 * (w % 2))) as u32);
            i.s_tkeep = b.keep;
            i.s_tuser = b.tuser;
            i.s_tvalid = true;
        } else if self.cfg.bubble > 0.0 {
            // Whatever sits on an idle bus must not matter.
            i.s_tdata = std::array::from_fn(|_| self.rng.gen());
            i.s_tkeep = self.rng.gen();
            i.s_tuser = self.rng.gen_range(0..4);
        }
        i
    }

    fn observe(&mut self, i: &RecPackIn, o: &RecPackOut) {
        if o.seq != self.exp_seq {
            let e = format!("seq {:#x}, want {:#x}", o.seq, self.exp_seq);
            self.error(e);
        }
        if o.h_valid && !self.shown {
            self.shown_seq = self.exp_seq;
            self.exp_seq = self.exp_seq.wrapping_add(1);
        }
        if i.seq_we {
            self.exp_seq = i.seq_wdata;
        }
        if let Some((app, blen)) = self.prev_h {
            if !o.h_valid || o.h_app != app || o.h_blen != blen {
                self.error("h_* changed before the frame was accepted".into());
            }
        }
        if o.m_tvalid && !o.h_valid {
            self.error("m_tvalid without h_valid".into());
        }
        if o.ev_frame && !(o.h_valid && i.h_ready) {
            self.error("ev_frame without h_valid && h_ready".into());
        }
        if o.m_tvalid && i.m_tready {
            self.cur_body.push(o.m_tdata);
            self.cur_cycles.push(self.cycle);
            self.taken += 1;
        }
        if o.ev_frame {
            let f = OutFrame {
                app: o.h_app,
                blen: o.h_blen,
                body: std::mem::take(&mut self.cur_body),
                want_seq: self.shown_seq,
                body_cycles: std::mem::take(&mut self.cur_cycles),
            };
            if f.fin() {
                self.fins += 1;
            }
            self.frames.push(f);
            self.known = None;
            self.taken = 0;
            self.prev_h = None;
            self.shown = false;
        } else if o.h_valid {
            self.known = Some((o.h_blen as usize / 8).div_ceil(8));
            self.prev_h = Some((o.h_app, o.h_blen));
            self.shown = true;
        }
        if i.s_tvalid && !o.s_tready {
            self.held += 1;
        }
        if i.s_tvalid && o.s_tready {
            self.in_cycles.push(self.cycle);
            self.offering = false;
            self.next += 1;
        }
        self.cycle += 1;
    }

    fn finished(&self) -> bool {
        self.next == self.beats.len() && self.fins == self.dones
    }
}

/// Per-run checks of the frames against the input stream.
fn check_run(beats: &[Beat], cfg: &Cfg, d: &RpDriver, who: &str) -> Result<(), String> {
    if !d.errors.is_empty() {
        return Err(format!("{who}: {}", d.errors.join("; ")));
    }
    let mx = effective_max(cfg.max) as usize;
    // Every input record with its class, and the record count before each
    // flush-done beat.
    let mut want = vec![];
    let mut done_at = vec![];
    for b in beats {
        if b.tuser == DONE {
            done_at.push(want.len());
        }
        for r in b.records() {
            want.push((r, b.tuser == FLUSH));
        }
    }
    let mut at = 0;
    let mut fins = vec![];
    for (k, f) in d.frames.iter().enumerate() {
        let n = f.n();
        let bad = |what: &str| format!("{who}: frame {k} (n {n}, flags {:#x}): {what}", f.flags());
        let job = if cfg.retune > 0.0 {
            (f.app[1] & 0xffff) as u16
        } else {
            cfg.job
        };
        if f.app != header(n as u16, f.flush(), f.fin(), job, f.want_seq) {
            return Err(bad(&format!(
                "header {:x?}, want seq {:#x}",
                f.app, f.want_seq
            )));
        }
        if f.blen as usize != 8 * n || f.body.len() != n.div_ceil(8) {
            return Err(bad(&format!(
                "h_blen {} and {} body beats",
                f.blen,
                f.body.len()
            )));
        }
        if (n > mx && cfg.retune == 0.0)
            || n > weft_model::wire::KV_MAX_RECORDS
            || (n == 0 && !f.fin())
        {
            return Err(bad(&format!("{n} records with max {mx}")));
        }
        if f.fin() && !f.flush() {
            return Err(bad("FIN without FLUSH"));
        }
        // Lanes past the last record are zero.
        if let Some(last) = f.body.last() {
            if n % 8 != 0 && last[2 * (n % 8)..].iter().any(|&w| w != 0) {
                return Err(bad("lanes past the last record are not zero"));
            }
        }
        for (j, r) in f.records().into_iter().enumerate() {
            match want.get(at) {
                Some(&(w, flush)) if w == r && flush == f.flush() => at += 1,
                Some(&(w, flush)) => {
                    return Err(bad(&format!(
                        "record {j} is {r:#x}, want {w:#x} (input record {at}, flush {flush})"
                    )))
                }
                None => return Err(bad("more records than went in")),
            }
        }
        if f.fin() {
            fins.push(at);
        }
    }
    if at != want.len() {
        return Err(format!("{who}: {} of {} records came out", at, want.len()));
    }
    // Each flush ends in one FIN frame, after exactly the records before it.
    if fins != done_at {
        return Err(format!(
            "{who}: FIN frames after records {fins:?}, flush-done beats after {done_at:?}"
        ));
    }
    if cfg.wait as u64 >= d.cycle && cfg.retune == 0.0 {
        check_closes(beats, mx, &d.frames).map_err(|e| format!("{who}: {e}"))?;
    }
    Ok(())
}

/// With no timer firing, a frame with fewer than `max` records was closed
/// because the next beat with records was of the other class or did not
/// fit, or (a spill frame) because a flush-done beat came next.
fn check_closes(beats: &[Beat], mx: usize, frames: &[OutFrame]) -> Result<(), String> {
    // Records before each beat's first record, to find the beat after a
    // frame's last record.
    let mut starts = vec![];
    let mut total = 0;
    for b in beats {
        starts.push(total);
        total += b.records().len();
    }
    let mut at = 0;
    for (k, f) in frames.iter().enumerate() {
        let n = f.n();
        at += n;
        if n == mx || f.fin() || n == 0 {
            continue;
        }
        // The first beat that starts at or after record `at` and carries
        // records or ends a flush.
        let next = beats
            .iter()
            .zip(&starts)
            .find(|(b, &s)| s >= at && (b.tuser == DONE || !b.records().is_empty()));
        let Some((b, _)) = next else {
            return Err(format!("frame {k} closed with nothing after it"));
        };
        // A flush-done beat closes a spill frame as it is, but a flush
        // frame with FIN: a flush frame without FIN needed another reason.
        let ok = if b.tuser == DONE {
            !f.flush()
        } else {
            (b.tuser == FLUSH) != f.flush() || n + b.records().len() > mx
        };
        if !ok {
            return Err(format!(
                "frame {k} ({n} of {mx} records, flush {}) closed before a beat of {} records (tuser {})",
                f.flush(),
                b.records().len(),
                b.tuser
            ));
        }
    }
    Ok(())
}

fn witnesses() -> Vec<Factory<'static, RecPackIn, RecPackOut>> {
    let w = packers();
    let mut f: Vec<Factory<'static, RecPackIn, RecPackOut>> =
        vec![Box::new(|| -> BoxDut<RecPackIn, RecPackOut> {
            Box::new(RecPackModel::new())
        })];
    f.push(Box::new(|| w.hdl.instantiate(None).unwrap()));
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    f
}

fn run(beats: &[Beat], cfg: &Cfg, seed: u64) -> Result<Vec<RpDriver>, String> {
    let make = || RpDriver::new(beats.to_vec(), cfg.clone(), seed);
    let runs = agree(&witnesses(), &make, 3_000_000)?;
    let mut out = vec![];
    for r in runs {
        check_run(beats, cfg, &r.driver, &r.witness)?;
        out.push(r.driver);
    }
    Ok(out)
}

const MAXES: [u16; 12] = [0, 1, 2, 7, 8, 9, 15, 64, 182, 1119, 1500, 2047];

fn cfg_of(rng: &mut ChaCha8Rng, long_stalls: bool) -> Cfg {
    let max = if rng.gen_bool(0.8) {
        MAXES[rng.gen_range(0..MAXES.len())]
    } else {
        rng.gen_range(0..2048)
    };
    let wait = match rng.gen_range(0..5) {
        0 => 0,
        1 => rng.gen_range(1..4),
        2 => rng.gen_range(4..64),
        3 => rng.gen_range(64..2000),
        _ => (1 << 20) - 1,
    };
    Cfg {
        max,
        wait,
        job: rng.gen(),
        bubble: rng.gen_range(0.0..0.6),
        stall: rng.gen_range(0.0..0.6),
        long: if long_stalls { 0.01 } else { 0.0 },
        ack: [Ack::Framer, Ack::Always, Ack::Noise][rng.gen_range(0..3)],
        seq_write: if rng.gen_bool(0.5) { 0.01 } else { 0.0 },
        hold_out: 0,
        retune: 0.0,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    /// Three witnesses: random streams, sizes, timers and consumers.
    #[test]
    fn packs_records_like_the_model(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let cfg = cfg_of(&mut rng, false);
        let beats = stream(&mut rng, 30, 0.3);
        run(&beats, &cfg, seed).map_err(TestCaseError::fail)?;
    }

    /// Three witnesses: `max`, `wait_cycles` and `job` changing while
    /// frames are open (a frame above a lowered `max` is closed at once).
    #[test]
    fn packs_records_while_retuned(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut cfg = cfg_of(&mut rng, false);
        cfg.retune = 0.02;
        let beats = stream(&mut rng, 30, 0.5);
        run(&beats, &cfg, seed).map_err(TestCaseError::fail)?;
    }

    /// Three witnesses: long streams, long output stalls.
    #[test]
    fn packs_long_streams_like_the_model(seed in any::<u64>()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let cfg = cfg_of(&mut rng, true);
        let beats = stream(&mut rng, 120, 0.5);
        run(&beats, &cfg, seed).map_err(TestCaseError::fail)?;
    }
}

/// Every `max` of interest with full and sparse beats and no timer, so
/// that every early close is checked for its reason.
#[test]
fn every_max_closes_only_for_the_allowed_reasons() {
    for (k, &max) in MAXES.iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(k as u64);
        let cfg = Cfg {
            max,
            wait: (1 << 20) - 1,
            job: 0x1234,
            bubble: 0.2,
            stall: 0.2,
            long: 0.0,
            ack: Ack::Framer,
            seq_write: 0.0,
            hold_out: 0,
            retune: 0.0,
        };
        let beats = stream(&mut rng, 12, 0.5);
        run(&beats, &cfg, k as u64).unwrap();
    }
}

/// A flush of an empty table, alone and after spills: an empty FIN frame.
#[test]
fn flush_of_an_empty_table_sends_an_empty_fin_frame() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let spill = beat(&mut rng, SPILL, 1.0);
    let done = beat(&mut rng, DONE, 1.0);
    let beats = vec![done.clone(), spill, done];
    let cfg = Cfg {
        max: 182,
        wait: (1 << 20) - 1,
        job: 7,
        bubble: 0.0,
        stall: 0.0,
        long: 0.0,
        ack: Ack::Always,
        seq_write: 0.0,
        hold_out: 0,
        retune: 0.0,
    };
    for d in run(&beats, &cfg, 1).unwrap() {
        let shape: Vec<(usize, u8)> = d.frames.iter().map(|f| (f.n(), f.flags())).collect();
        // FIN; the spill frame; FIN.
        assert_eq!(shape, vec![(0, 0x1c), (8, 0x10), (0, 0x1c)]);
        let seqs: Vec<u32> = d.frames.iter().map(|f| f.app[2]).collect();
        assert_eq!(seqs, vec![0, 1, 2]);
    }
}

/// A partial frame is closed `wait` cycles after its first record was
/// taken (the cycle after for `wait` 0): a beat arriving one cycle earlier
/// still joins it, one arriving then does not; a lone one-beat frame's body
/// leaves the cycle after the close, or a cycle later when its beat is
/// partial (written at the close).
#[test]
fn a_partial_frame_leaves_after_wait() {
    for wait in [0u32, 1, 5, 40, 1000] {
        let cfg = Cfg {
            max: 182,
            wait,
            job: 1,
            bubble: 0.0,
            stall: 0.0,
            long: 0.0,
            ack: Ack::Always,
            seq_write: 0.0,
            hold_out: 0,
            retune: 0.0,
        };
        let mut rng = ChaCha8Rng::seed_from_u64(wait as u64);
        let mut done = beat(&mut rng, DONE, 1.0);
        done.not_before = 3000;
        // The first record is taken in cycle 0.
        let close = wait.max(1) as u64;
        // A full beat is written when taken, a partial one at the close.
        for (keep, lag) in [(0xffu8, 1u64), (0x0f, 2)] {
            let mut lone = beat(&mut rng, SPILL, 1.0);
            lone.keep = keep;
            for d in run(&[lone, done.clone()], &cfg, 2).unwrap() {
                let ns: Vec<usize> = d.frames.iter().map(|f| f.n()).collect();
                assert_eq!(ns, vec![keep.count_ones() as usize, 0], "wait {wait}");
                assert_eq!(d.frames[0].body_cycles, vec![close + lag], "wait {wait}");
            }
        }
        let first = beat(&mut rng, SPILL, 1.0);
        for (at, want) in [(close, vec![8, 8, 0]), (close - 1, vec![16, 0])] {
            if at == 0 {
                continue;
            }
            let mut second = beat(&mut rng, SPILL, 1.0);
            second.not_before = at;
            let beats = [first.clone(), second, done.clone()];
            for d in run(&beats, &cfg, 2).unwrap() {
                let ns: Vec<usize> = d.frames.iter().map(|f| f.n()).collect();
                assert_eq!(ns, want, "wait {wait}, second beat at {at}");
            }
        }
    }
}

/// A frame that reaches `max` leaves at once, without waiting for the next
/// beat, the timer or the end of a flush.
#[test]
fn a_full_frame_leaves_at_once() {
    for max in [8u16, 3, 64] {
        let mut rng = ChaCha8Rng::seed_from_u64(max as u64);
        let n = (max as usize).div_ceil(8);
        let mut beats: Vec<Beat> = (0..n).map(|_| beat(&mut rng, FLUSH, 1.0)).collect();
        let mut done = beat(&mut rng, DONE, 1.0);
        done.not_before = 2000;
        beats.push(done);
        let cfg = Cfg {
            max,
            wait: (1 << 20) - 1,
            job: 2,
            bubble: 0.0,
            stall: 0.0,
            long: 0.0,
            ack: Ack::Always,
            seq_write: 0.0,
            hold_out: 0,
            retune: 0.0,
        };
        for d in run(&beats, &cfg, 3).unwrap() {
            let f = &d.frames[0];
            assert_eq!(f.n(), max as usize, "max {max}");
            assert!(
                *f.body_cycles.last().unwrap() < 100,
                "max {max}: a full frame waited until cycle {:?}",
                f.body_cycles
            );
        }
    }
}

/// Line rate: full beats back to back, the consumer always ready. Every
/// cycle takes a beat except the one closing each frame; each frame's body
/// leaves one beat per cycle.
#[test]
fn line_rate_full_beats() {
    for (max, per) in [(182u16, 22usize), (1119, 139), (64, 8)] {
        let mut rng = ChaCha8Rng::seed_from_u64(max as u64);
        let n = 3 * per + per / 2;
        let mut beats: Vec<Beat> = (0..n).map(|_| beat(&mut rng, SPILL, 1.0)).collect();
        beats.push(beat(&mut rng, DONE, 1.0));
        let cfg = Cfg {
            max,
            wait: (1 << 20) - 1,
            job: 3,
            bubble: 0.0,
            stall: 0.0,
            long: 0.0,
            ack: Ack::Always,
            seq_write: 0.0,
            hold_out: 0,
            retune: 0.0,
        };
        for d in run(&beats, &cfg, 4).unwrap() {
            // Frames: 3 full ones (per beats each), the rest closed by the
            // flush-done beat, then the empty FIN frame.
            let closes = n.div_ceil(per);
            assert_eq!(d.frames.len(), closes + 1);
            // The input was held only for closes: one cycle per frame, and
            // one more for the FIN frame, which takes the done beat.
            assert_eq!(d.held as usize, closes, "max {max}: input held");
            assert_eq!(
                *d.in_cycles.last().unwrap() as usize,
                n + closes,
                "max {max}: the done beat's cycle"
            );
            for (k, f) in d.frames.iter().enumerate() {
                let c = &f.body_cycles;
                assert!(
                    c.windows(2).all(|w| w[1] == w[0] + 1),
                    "max {max}: frame {k}'s body not one beat per cycle: {c:?}"
                );
            }
        }
    }
}

/// A stalled consumer lets closed frames queue up (4 descriptors); once it
/// is ready their bodies leave back to back, across frame boundaries.
#[test]
fn queued_frames_leave_back_to_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut beats: Vec<Beat> = (0..48).map(|_| beat(&mut rng, SPILL, 1.0)).collect();
    beats.push(beat(&mut rng, DONE, 1.0));
    let cfg = Cfg {
        max: 64,
        wait: (1 << 20) - 1,
        job: 5,
        bubble: 0.0,
        stall: 0.0,
        long: 0.0,
        ack: Ack::Always,
        seq_write: 0.0,
        hold_out: 300,
        retune: 0.0,
    };
    for d in run(&beats, &cfg, 5).unwrap() {
        // Four frames were closed and waiting, and more beats in the buffer.
        let cycles: Vec<u64> = d.frames[..4]
            .iter()
            .flat_map(|f| f.body_cycles.iter().copied())
            .collect();
        assert_eq!(cycles.len(), 32);
        assert_eq!(cycles, (300..332).collect::<Vec<_>>());
        assert!(d.held > 200, "the input was held {} cycles", d.held);
    }
}

/// A stalled consumer and the longest frames fill the buffer (255 beats:
/// one closed frame of 139 and 116 of the next); the input waits for room
/// and nothing is lost once the consumer is back.
#[test]
fn a_full_buffer_holds_the_input() {
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let mut beats: Vec<Beat> = (0..400).map(|_| beat(&mut rng, SPILL, 1.0)).collect();
    beats.push(beat(&mut rng, DONE, 1.0));
    let hold = 1000;
    let cfg = Cfg {
        max: 1119,
        wait: (1 << 20) - 1,
        job: 6,
        bubble: 0.0,
        stall: 0.3,
        long: 0.0,
        ack: Ack::Framer,
        seq_write: 0.0,
        hold_out: hold,
        retune: 0.0,
    };
    for d in run(&beats, &cfg, 6).unwrap() {
        let before = d.in_cycles.iter().filter(|&&c| c < hold).count();
        assert_eq!(before, 255, "beats taken while the consumer was stalled");
    }
}

#[test]
fn lints_clean_with_documented_waivers() {
    if !verilator_usable() {
        return;
    }
    let v = weft_hdl::emit::verilog_of(&RecPack::connected(), "weft_rec_pack");
    let rep = weft_sim::verilator::lint_with_waivers(&v, "weft_rec_pack").unwrap();
    assert!(rep.clean, "weft_rec_pack: {:#?}", rep.warnings);
}

/// The packer the witnesses and the emitter take passes rust-hdl's own
/// check that every input of every child is driven (which the simulators
/// do not need, but Verilog generation for a flow does); the block before
/// `connect_all` does not.
#[test]
fn the_connected_packer_passes_rust_hdls_connection_check() {
    weft_sim::witness::check_connection(&RecPack::connected(), &RecPack::new()).unwrap();
}
