//! The top's steering blocks through the model, rust-hdl and Verilator,
//! cycle by cycle, and each run checked on its own: the deframer delivers
//! every engine frame's UDP payload to its engine and every other frame
//! unchanged to the host, in order; the merge delivers every packet whole,
//! in each source's order, never interleaved.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use weft_hdl::classify::Classify;
use weft_hdl::steer::{Deframe, PktMux2, PktMux4, Slice};
use weft_model::classify::{ClassifyIn, ClassifyModel, ClassifyOut};
use weft_model::steer::{
    class_of_beat, from_bytes, kept_bytes, Beat, DeframeIn, DeframeModel, DeframeOut, Mux2In,
    Mux2Out, MuxIn, MuxOut, PktMux2Model, PktMuxModel, SliceIn, SliceModel, SliceOut, MUX2_META,
};
use weft_model::wire::{self, build_frame, classify, Card, Class, Endpoint, Engine};
use weft_model::Driver;
use weft_sim::hdl::HdlPorts;
use weft_sim::simulator::{BoxDut, Simulators};
use weft_sim::witness::{agree, Factory};

type W<B> = Simulators<B>;

fn prepare<B>(module: &str, make: fn() -> B) -> W<B>
where
    B: HdlPorts + Send + 'static,
{
    Simulators::prepare(module, make).expect("the block builds on both simulators")
}

fn keep_of(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

fn card() -> Card {
    Card {
        me: Endpoint {
            mac: [0x02, 0x57, 0x46, 0x00, 0x00, 0x01],
            ip: Ipv4Addr::new(10, 0, 0, 2),
            port: 0,
        },
        enable: true,
    }
}

/// A frame of one of many kinds: for an engine (well formed, padded,
/// broadcast), for an engine but malformed in one header field, for another
/// MAC, IP or port, not IPv4, or random bytes.
fn frame(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let engine = [Engine::Kv, Engine::Grad, Engine::Memops][rng.gen_range(0..3)];
    let n = match rng.gen_range(0..5) {
        0 => rng.gen_range(0..30),
        1 => 64 * rng.gen_range(0..4) + rng.gen_range(20..24),
        _ => rng.gen_range(16..400),
    };
    let payload: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
    let peer = Endpoint {
        mac: [2, 0, 0, 0, rng.gen(), rng.gen()],
        ip: Ipv4Addr::new(10, 0, 1, rng.gen()),
        port: rng.gen(),
    };
    let mut me = card().me;
    me.port = engine.port();
    let mut f = build_frame(&peer, &me, &payload);
    match rng.gen_range(0..16) {
        0 => f[0..6].copy_from_slice(&wire::BROADCAST),
        1 => f[5] ^= 1,
        2 => f[33] ^= 1,
        3 => f[37] ^= 1,
        4 => f[20] |= 0x20,
        5 => f[21] = 1,
        6 => f[25] ^= 0x10,
        7 => f[17] ^= 1,
        8 => f[39] ^= 2,
        9 => f[14] = 0x46,
        10 => f[23] = 6,
        11 => f[12] = 0x86,
        12 => f.truncate(rng.gen_range(1..f.len().max(2))),
        13 => {
            let m = rng.gen_range(1..200);
            f = (0..m).map(|_| rng.gen()).collect();
        }
        _ => {}
    }
    f
}

/// Beat `beat` of frame `f`: its data (bytes past the frame's end in its
/// last beat are garbage), byte enables and last flag.
fn beat_of(f: &[u8], beat: usize, rng: &mut ChaCha8Rng) -> ([u32; 16], u64, bool) {
    let at = 64 * beat;
    let n = (f.len() - at).min(64);
    let mut b: Vec<u8> = (0..64).map(|_| rng.gen()).collect();
    b[..n].copy_from_slice(&f[at..at + n]);
    (from_bytes(&b), keep_of(n), at + n == f.len())
}

/// After a beat was taken: the next beat of the frame, or the next frame.
fn next_beat(frame: &mut usize, beat: &mut usize, last: bool) {
    if last {
        *frame += 1;
        *beat = 0;
    } else {
        *beat += 1;
    }
}

struct DeframeDriver {
    frames: Vec<Vec<u8>>,
    card: Card,
    next: usize,
    beat: usize,
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    offering: bool,
    /// Per output packet: destination, size, bytes, return address words.
    out: Vec<(u8, u16, Vec<u8>, [u32; 3])>,
    cur: Vec<u8>,
    events: [usize; 3],
}

impl Driver<DeframeIn, DeframeOut> for DeframeDriver {
    fn drive(&mut self) -> DeframeIn {
        let mut i = DeframeIn {
            m_tready: !self.rng.gen_bool(self.stall),
            ..Default::default()
        };
        if !self.offering && self.next < self.frames.len() {
            self.offering = !self.rng.gen_bool(self.bubble);
        }
        if self.offering {
            let f = &self.frames[self.next];
            (i.s_tdata, i.s_tkeep, i.s_tlast) = beat_of(f, self.beat, &mut self.rng);
            i.s_tvalid = true;
            i.s_tuser_size = f.len() as u16;
            if self.beat == 0 {
                // The classifier's sideband beside a first beat.
                (i.s_tcls, i.s_tbad, i.s_teff) =
                    class_of_beat(&i.s_tdata, i.s_tuser_size, &self.card);
            }
        }
        i
    }

    fn observe(&mut self, i: &DeframeIn, o: &DeframeOut) {
        if i.s_tvalid && o.s_tready {
            self.offering = false;
            next_beat(&mut self.next, &mut self.beat, i.s_tlast);
        }
        for (k, e) in [o.ev_engine, o.ev_pass, o.ev_malformed].iter().enumerate() {
            self.events[k] += *e as usize;
        }
        if o.m_tvalid && i.m_tready {
            self.cur.extend(kept_bytes(&o.m_tdata, o.m_tkeep));
            if o.m_tlast {
                self.out.push((
                    o.m_tdest,
                    o.m_tuser_size,
                    std::mem::take(&mut self.cur),
                    o.m_tret,
                ));
            }
        }
    }

    fn finished(&self) -> bool {
        self.next == self.frames.len() && self.out.len() == self.frames.len()
    }
}

fn deframers() -> &'static W<Deframe> {
    static W: OnceLock<W<Deframe>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_deframe", weft_hdl::emit::deframe))
}

fn check_deframe(
    seed: u64,
    n: usize,
    bubble: f64,
    stall: f64,
    enable: bool,
) -> Result<u64, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let frames: Vec<Vec<u8>> = (0..n).map(|_| frame(&mut rng)).collect();
    let card = Card { enable, ..card() };
    let w = deframers();
    let mut f: Vec<Factory<'_, DeframeIn, DeframeOut>> = vec![
        Box::new(|| -> BoxDut<DeframeIn, DeframeOut> { Box::new(DeframeModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || DeframeDriver {
        frames: frames.clone(),
        card,
        next: 0,
        beat: 0,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 1),
        bubble,
        stall,
        offering: false,
        out: vec![],
        cur: vec![],
        events: [0; 3],
    };
    let runs = agree(&f, &make, 100_000)?;
    for r in &runs {
        let mut want_events = [0usize; 3];
        for (k, (fr, (dest, size, got, ret))) in frames.iter().zip(&r.driver.out).enumerate() {
            let class = classify(fr, &card);
            let (want_dest, want) = match &class {
                Class::Engine {
                    engine,
                    payload,
                    from,
                } => {
                    want_events[0] += 1;
                    let w = wire::Ret {
                        to: *from,
                        side: wire::Side::Wire,
                    }
                    .words();
                    if *ret != [w[0], w[1], w[2]] {
                        return Err(format!(
                            "{}: frame {k}: return address {ret:x?}, want {w:x?}",
                            r.witness
                        ));
                    }
                    (*engine as u8, payload.clone())
                }
                Class::Malformed(..) => {
                    want_events[1] += 1;
                    want_events[2] += 1;
                    (0, fr.clone())
                }
                Class::Pass => {
                    want_events[1] += 1;
                    (0, fr.clone())
                }
            };
            if (*dest, *size as usize, got) != (want_dest, want.len(), &want) {
                return Err(format!(
                    "{}: frame {k} ({} bytes, {class:?}): got dest {dest} size {size} {} bytes, want dest {want_dest} size {}",
                    r.witness,
                    fr.len(),
                    got.len(),
                    want.len()
                ));
            }
        }
        if r.driver.events != want_events {
            return Err(format!(
                "{}: events (engine, pass, malformed) {:?}, want {want_events:?}",
                r.witness, r.driver.events
            ));
        }
    }
    Ok(runs[0].run.cycles)
}

struct MuxDriver {
    /// Per source: packets of beats.
    pkts: [Vec<Vec<Beat>>; 4],
    at: [(usize, usize); 4],
    offering: [bool; 4],
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    out: Vec<Beat>,
    total: usize,
}

impl Driver<MuxIn, MuxOut> for MuxDriver {
    fn drive(&mut self) -> MuxIn {
        let mut i = MuxIn {
            m_tready: !self.rng.gen_bool(self.stall),
            ..Default::default()
        };
        for k in 0..4 {
            let (p, b) = self.at[k];
            if !self.offering[k] && p < self.pkts[k].len() {
                self.offering[k] = !self.rng.gen_bool(self.bubble);
            }
            if self.offering[k] {
                i.set_beat(k, self.pkts[k][p][b]);
            }
        }
        i
    }

    fn observe(&mut self, i: &MuxIn, o: &MuxOut) {
        let ready = [o.s0_tready, o.s1_tready, o.s2_tready, o.s3_tready];
        for (k, &ready) in ready.iter().enumerate() {
            if ready && i.beat(k).tvalid {
                self.offering[k] = false;
                let (p, b) = self.at[k];
                self.at[k] = if b + 1 == self.pkts[k][p].len() {
                    (p + 1, 0)
                } else {
                    (p, b + 1)
                };
            }
        }
        if o.m_tvalid && i.m_tready {
            self.out.push(o.m_beat());
        }
    }

    fn finished(&self) -> bool {
        self.out.len() == self.total
    }
}

fn muxes() -> &'static W<PktMux4> {
    static W: OnceLock<W<PktMux4>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_pkt_mux4", weft_hdl::emit::pkt_mux4))
}

fn check_mux(seed: u64, bubble: f64, stall: f64) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pkts: [Vec<Vec<Beat>>; 4] = std::array::from_fn(|k| {
        (0..rng.gen_range(0..8))
            .map(|p| {
                let n = rng.gen_range(1..5);
                (0..n)
                    .map(|b| Beat {
                        tdata: std::array::from_fn(|_| rng.gen()),
                        tkeep: rng.gen(),
                        tlast: b + 1 == n,
                        tvalid: true,
                        tuser_size: p as u16,
                        tuser_src: k as u16,
                        tuser_dst: rng.gen(),
                    })
                    .collect()
            })
            .collect()
    });
    let total = pkts.iter().flatten().map(Vec::len).sum();
    let w = muxes();
    let mut f: Vec<Factory<'_, MuxIn, MuxOut>> = vec![
        Box::new(|| -> BoxDut<MuxIn, MuxOut> { Box::new(PktMuxModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || MuxDriver {
        pkts: pkts.clone(),
        at: [(0, 0); 4],
        offering: [false; 4],
        rng: ChaCha8Rng::seed_from_u64(seed ^ 2),
        bubble,
        stall,
        out: vec![],
        total,
    };
    let runs = agree(&f, &make, 100_000)?;
    for r in &runs {
        // Whole packets, each source's in order.
        let mut next = [0usize; 4];
        let mut beats = r.driver.out.iter();
        while let Some(first) = beats.clone().next() {
            let k = first.tuser_src as usize;
            let want = pkts[k]
                .get(next[k])
                .ok_or_else(|| format!("{}: extra packet from {k}", r.witness))?;
            for b in want {
                let got = beats.next().ok_or("output ended inside a packet")?;
                if got != b {
                    return Err(format!(
                        "{}: source {k} packet {} broken or interleaved",
                        r.witness, next[k]
                    ));
                }
            }
            next[k] += 1;
        }
    }
    Ok(())
}

/// Beats offered with bubbles into the register slice, its output stalled
/// at random; what comes out.
struct SliceDriver {
    beats: Vec<(Beat, [u32; 4])>,
    next: usize,
    offering: bool,
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    out: Vec<(Beat, [u32; 4])>,
    /// Cycles the input offered a beat the slice did not take.
    refused: u64,
}

impl Driver<SliceIn, SliceOut> for SliceDriver {
    fn drive(&mut self) -> SliceIn {
        let mut i = SliceIn {
            m_tready: !self.rng.gen_bool(self.stall),
            ..Default::default()
        };
        if !self.offering && self.next < self.beats.len() {
            self.offering = !self.rng.gen_bool(self.bubble);
        }
        if self.offering {
            let (beat, meta) = self.beats[self.next];
            i.set_s_beat(beat);
            i.s_tmeta = meta;
        }
        i
    }

    fn observe(&mut self, i: &SliceIn, o: &SliceOut) {
        if i.s_tvalid {
            if o.s_tready {
                self.offering = false;
                self.next += 1;
            } else {
                self.refused += 1;
            }
        }
        if o.m_tvalid && i.m_tready {
            self.out.push((o.m_beat(), o.m_tmeta));
        }
    }

    fn finished(&self) -> bool {
        self.out.len() == self.beats.len()
    }
}

fn slices() -> &'static W<Slice> {
    static W: OnceLock<W<Slice>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_slice", weft_hdl::emit::slice))
}

/// Run `n` random beats through the slice on every witness; the runs that
/// agreed (drivers and cycles), each checked to deliver every beat
/// unchanged and in order.
fn check_slice(
    seed: u64,
    n: usize,
    bubble: f64,
    stall: f64,
) -> Result<Vec<(SliceDriver, u64)>, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let beats: Vec<(Beat, [u32; 4])> = (0..n)
        .map(|_| {
            let beat = Beat {
                tdata: std::array::from_fn(|_| rng.gen()),
                tkeep: rng.gen(),
                tlast: rng.gen(),
                tvalid: true,
                tuser_size: rng.gen(),
                tuser_src: rng.gen(),
                tuser_dst: rng.gen(),
            };
            (beat, rng.gen())
        })
        .collect();
    let w = slices();
    let mut f: Vec<Factory<'_, SliceIn, SliceOut>> = vec![
        Box::new(|| -> BoxDut<SliceIn, SliceOut> { Box::new(SliceModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || SliceDriver {
        beats: beats.clone(),
        next: 0,
        offering: false,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 5),
        bubble,
        stall,
        out: vec![],
        refused: 0,
    };
    let runs = agree(&f, &make, 100_000)?;
    let mut drivers = vec![];
    for r in runs {
        if r.driver.out != beats {
            return Err(format!("{}: beats lost, changed or reordered", r.witness));
        }
        drivers.push((r.driver, r.run.cycles));
    }
    Ok(drivers)
}

/// Output always ready, input always offering: one beat a cycle, none
/// refused, the last out one cycle after it went in (every witness).
#[test]
fn slice_runs_at_one_beat_a_cycle() {
    let n = 200;
    for (d, cycles) in check_slice(7, n, 0.0, 0.0).expect("the witnesses agree") {
        assert_eq!(d.refused, 0, "a slice that never stalls refuses nothing");
        assert_eq!(
            cycles,
            n as u64 + 1,
            "one beat a cycle after one cycle of latency"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    #[test]
    fn slice_passes_every_beat_like_the_model(seed in any::<u64>(), n in 0usize..60, bubble in 0.0f64..0.7, stall in 0.0f64..0.7) {
        check_slice(seed, n, bubble, stall).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn deframe_steers_and_strips_like_the_model(seed in any::<u64>(), bubble in 0.0f64..0.6, stall in 0.0f64..0.6, enable in proptest::bool::weighted(0.9)) {
        check_deframe(seed, 24, bubble, stall, enable).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pkt_mux2_merges_whole_packets_like_the_model(seed in any::<u64>(), bubble in 0.0f64..0.7, stall in 0.0f64..0.7) {
        check_mux2(seed, bubble, stall).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pkt_mux_merges_whole_packets_like_the_model(seed in any::<u64>(), bubble in 0.0f64..0.7, stall in 0.0f64..0.7) {
        check_mux(seed, bubble, stall).map_err(TestCaseError::fail)?;
    }
}

/// Full rate: every frame back to back and the output always ready. The
/// deframer takes a beat every cycle except while it sends an engine
/// packet's last beat from its carry (one cycle per such packet).
#[test]
fn deframe_at_line_rate() {
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let frames: Vec<Vec<u8>> = (0..40).map(|_| frame(&mut rng)).collect();
    let beats: u64 = frames.iter().map(|f| f.len().div_ceil(64) as u64).sum();
    let flushes = frames
        .iter()
        .filter(|f| match classify(f, &card()) {
            Class::Engine { payload, .. } => {
                let k = (wire::HEADERS + payload.len()) % 64;
                k == 0 || k > wire::HEADERS || payload.len() + wire::HEADERS <= 64
            }
            _ => false,
        })
        .count() as u64;
    let kinds = |want: fn(&Class) -> bool| {
        frames
            .iter()
            .filter(|f| want(&classify(f, &card())))
            .count()
    };
    // The stream holds every kind of frame.
    assert!(kinds(|c| matches!(c, Class::Engine { .. })) >= 4);
    assert!(kinds(|c| matches!(c, Class::Malformed(..))) >= 4);
    assert!(kinds(|c| matches!(c, Class::Pass)) >= 4);
    let cycles = check_deframe(99, 40, 0.0, 0.0, true).unwrap();
    assert!(
        cycles <= beats + flushes + 1,
        "{cycles} cycles for {beats} beats and {flushes} carry beats"
    );
}

/// A packet on one input of the two-way merge: beats with their sideband.
type Packet2 = Vec<(Beat, [u32; 4])>;

struct Mux2Driver {
    /// Per input: packets of (beat, sideband).
    pkts: [Vec<Packet2>; 2],
    at: [(usize, usize); 2],
    offering: [bool; 2],
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    out: Vec<(Beat, [u32; 4])>,
    total: usize,
}

impl Driver<Mux2In, Mux2Out> for Mux2Driver {
    fn drive(&mut self) -> Mux2In {
        let mut i = Mux2In {
            m_tready: !self.rng.gen_bool(self.stall),
            ..Default::default()
        };
        for k in 0..2 {
            let (p, b) = self.at[k];
            if !self.offering[k] && p < self.pkts[k].len() {
                self.offering[k] = !self.rng.gen_bool(self.bubble);
            }
            if self.offering[k] {
                let (beat, meta) = self.pkts[k][p][b];
                if k == 0 {
                    i.s0_tdata = beat.tdata;
                    i.s0_tkeep = beat.tkeep;
                    i.s0_tlast = beat.tlast;
                    i.s0_tvalid = true;
                    i.s0_tuser_size = beat.tuser_size;
                    i.s0_tmeta = meta;
                } else {
                    i.s1_tdata = beat.tdata;
                    i.s1_tkeep = beat.tkeep;
                    i.s1_tlast = beat.tlast;
                    i.s1_tvalid = true;
                    i.s1_tuser_size = beat.tuser_size;
                    i.s1_tmeta = meta;
                }
            }
        }
        i
    }

    fn observe(&mut self, i: &Mux2In, o: &Mux2Out) {
        let taken = [o.s0_tready && i.s0_tvalid, o.s1_tready && i.s1_tvalid];
        for (k, &t) in taken.iter().enumerate() {
            if t {
                self.offering[k] = false;
                let (p, b) = self.at[k];
                self.at[k] = if b + 1 == self.pkts[k][p].len() {
                    (p + 1, 0)
                } else {
                    (p, b + 1)
                };
            }
        }
        if o.m_tvalid && i.m_tready {
            let beat = Beat {
                tdata: o.m_tdata,
                tkeep: o.m_tkeep,
                tlast: o.m_tlast,
                tvalid: true,
                tuser_size: o.m_tuser_size,
                tuser_src: 0,
                tuser_dst: 0,
            };
            self.out.push((beat, o.m_tmeta));
        }
    }

    fn finished(&self) -> bool {
        self.out.len() == self.total
    }
}

fn mux2s() -> &'static W<PktMux2<MUX2_META>> {
    static W: OnceLock<W<PktMux2<MUX2_META>>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_pkt_mux2", weft_hdl::emit::pkt_mux2))
}

fn check_mux2(seed: u64, bubble: f64, stall: f64) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let pkts: [Vec<Packet2>; 2] = std::array::from_fn(|k| {
        (0..rng.gen_range(0..10))
            .map(|p| {
                let n = rng.gen_range(1..5);
                // The sideband names the source and packet; bit 96 random.
                let meta = [k as u32, p as u32, rng.gen(), rng.gen::<u32>() & 1];
                (0..n)
                    .map(|b| {
                        (
                            Beat {
                                tdata: std::array::from_fn(|_| rng.gen()),
                                tkeep: rng.gen(),
                                tlast: b + 1 == n,
                                tvalid: true,
                                tuser_size: rng.gen(),
                                tuser_src: 0,
                                tuser_dst: 0,
                            },
                            meta,
                        )
                    })
                    .collect()
            })
            .collect()
    });
    let total = pkts.iter().flatten().map(Vec::len).sum();
    let w = mux2s();
    let mut f: Vec<Factory<'_, Mux2In, Mux2Out>> = vec![
        Box::new(|| -> BoxDut<Mux2In, Mux2Out> { Box::new(PktMux2Model::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || Mux2Driver {
        pkts: pkts.clone(),
        at: [(0, 0); 2],
        offering: [false; 2],
        rng: ChaCha8Rng::seed_from_u64(seed ^ 3),
        bubble,
        stall,
        out: vec![],
        total,
    };
    let runs = agree(&f, &make, 100_000)?;
    for r in &runs {
        let mut next = [0usize; 2];
        let mut beats = r.driver.out.iter();
        while let Some((_, meta)) = beats.clone().next() {
            let k = meta[0] as usize;
            let want = pkts[k]
                .get(next[k])
                .ok_or_else(|| format!("{}: extra packet from {k}", r.witness))?;
            for b in want {
                let got = beats.next().ok_or("output ended inside a packet")?;
                if got != b {
                    return Err(format!(
                        "{}: input {k} packet {} broken or interleaved",
                        r.witness, next[k]
                    ));
                }
            }
            next[k] += 1;
        }
    }
    Ok(())
}

// ------------------------------------------------------------- classify

/// A beat out of the classifier: bytes kept, last, size, and its class
/// (destination, malformed, effective length).
type ClassifiedBeat = (Vec<u8>, bool, u16, (u8, bool, u16));

/// Frames offered beat by beat into the classifier, with bubbles and an
/// output stalled at random; every beat that comes out, with its sideband.
struct ClassifyDriver {
    frames: Vec<Vec<u8>>,
    card: Card,
    next: usize,
    beat: usize,
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    offering: bool,
    /// Every beat taken at the output: bytes kept, last, size, and the
    /// sideband (class, malformed, effective length).
    out: Vec<ClassifiedBeat>,
    /// Cycles the input offered a beat that was not taken.
    refused: u64,
}

impl Driver<ClassifyIn, ClassifyOut> for ClassifyDriver {
    fn drive(&mut self) -> ClassifyIn {
        let (mac_hi, mac_lo) = wire::mac_regs(&self.card.me.mac);
        let mut i = ClassifyIn {
            m_tready: !self.rng.gen_bool(self.stall),
            card_mac: (mac_hi as u64) << 32 | mac_lo as u64,
            card_ip: u32::from(self.card.me.ip),
            enable: self.card.enable,
            ..Default::default()
        };
        if !self.offering && self.next < self.frames.len() {
            self.offering = !self.rng.gen_bool(self.bubble);
        }
        // An idle bus carries garbage: the classifier must not read it.
        i.s_tdata = std::array::from_fn(|_| self.rng.gen());
        i.s_tuser_size = self.rng.gen();
        if self.offering {
            let f = &self.frames[self.next];
            (i.s_tdata, i.s_tkeep, i.s_tlast) = beat_of(f, self.beat, &mut self.rng);
            i.s_tvalid = true;
            i.s_tuser_size = f.len() as u16;
        }
        i
    }

    fn observe(&mut self, i: &ClassifyIn, o: &ClassifyOut) {
        if i.s_tvalid {
            if o.s_tready {
                self.offering = false;
                next_beat(&mut self.next, &mut self.beat, i.s_tlast);
            } else {
                self.refused += 1;
            }
        }
        if o.m_tvalid && i.m_tready {
            self.out.push((
                kept_bytes(&o.m_tdata, o.m_tkeep),
                o.m_tlast,
                o.m_tuser_size,
                (o.m_tcls, o.m_tbad, o.m_teff),
            ));
        }
    }

    fn finished(&self) -> bool {
        let beats: usize = self.frames.iter().map(|f| f.len().div_ceil(64)).sum();
        self.next == self.frames.len() && self.out.len() == beats
    }
}

fn classifiers() -> &'static W<Classify> {
    static W: OnceLock<W<Classify>> = OnceLock::new();
    W.get_or_init(|| prepare("weft_classify", weft_hdl::emit::classify))
}

/// Run `n` random frames through the classifier on every witness (which
/// must agree cycle by cycle); check every beat comes out unchanged and in
/// order, each first beat with the class `wire::classify` gives its frame
/// and the others with none. The runs' drivers and cycle counts.
fn check_classify(
    seed: u64,
    n: usize,
    bubble: f64,
    stall: f64,
    enable: bool,
) -> Result<Vec<(ClassifyDriver, u64)>, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let frames: Vec<Vec<u8>> = (0..n)
        .map(|_| frame(&mut rng))
        .filter(|f| !f.is_empty())
        .collect();
    let card = Card { enable, ..card() };
    let w = classifiers();
    let mut f: Vec<Factory<'_, ClassifyIn, ClassifyOut>> = vec![
        Box::new(|| -> BoxDut<ClassifyIn, ClassifyOut> { Box::new(ClassifyModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || ClassifyDriver {
        frames: frames.clone(),
        card,
        next: 0,
        beat: 0,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 3),
        bubble,
        stall,
        offering: false,
        out: vec![],
        refused: 0,
    };
    let runs = agree(&f, &make, 100_000)?;
    let mut done = vec![];
    for r in runs {
        let mut beats = r.driver.out.iter();
        for (k, fr) in frames.iter().enumerate() {
            let want_class = match classify(fr, &card) {
                Class::Engine {
                    engine, payload, ..
                } => (engine as u8, false, (wire::HEADERS + payload.len()) as u16),
                Class::Malformed(..) => (0, true, 0),
                Class::Pass => (0, false, 0),
            };
            for (b, chunk) in fr.chunks(64).enumerate() {
                let Some((bytes, last, size, class)) = beats.next() else {
                    return Err(format!("{}: frame {k}: beat {b} missing", r.witness));
                };
                let want = if b == 0 { want_class } else { (0, false, 0) };
                let want_last = (b + 1) * 64 >= fr.len();
                if bytes.as_slice() != chunk
                    || *last != want_last
                    || *size as usize != fr.len()
                    || *class != want
                {
                    return Err(format!(
                        "{}: frame {k} beat {b}: class {class:?} (want {want:?}), last {last}, size {size}, bytes equal {}",
                        r.witness,
                        bytes.as_slice() == chunk
                    ));
                }
            }
        }
        done.push((r.driver, r.run.cycles));
    }
    Ok(done)
}

/// Nothing stalls: one beat a cycle, none refused, three cycles of latency.
#[test]
fn classify_runs_at_one_beat_a_cycle() {
    for (d, cycles) in check_classify(11, 40, 0.0, 0.0, true).expect("the witnesses agree") {
        let beats: u64 = d.frames.iter().map(|f| f.len().div_ceil(64) as u64).sum();
        assert_eq!(d.refused, 0);
        assert_eq!(cycles, beats + 3, "one beat a cycle after three of latency");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    #[test]
    fn classify_decides_like_the_rule(seed in any::<u64>(), bubble in 0.0f64..0.7, stall in 0.0f64..0.7, enable in proptest::bool::weighted(0.9)) {
        check_classify(seed, 24, bubble, stall, enable).map_err(TestCaseError::fail)?;
    }
}
