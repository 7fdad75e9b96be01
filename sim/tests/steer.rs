//! The top's steering blocks through the model, rust-hdl and Verilator,
//! cycle by cycle, and each run checked on its own: the deframer delivers
//! every engine frame's UDP payload to its engine and every other frame
//! unchanged to the host, in order; the merge delivers every packet whole,
//! in each source's order, never interleaved.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::steer::{Deframe, PktMux4};
use weft_model::steer::{
    classify, from_bytes, kept_bytes, Beat, DeframeIn, DeframeModel, DeframeOut, MuxIn, MuxOut,
    PktMuxModel, GRAD_PORT, KV_PORT, MEMOPS_PORT, STRIP,
};
use weft_model::Driver;
use weft_sim::engine::{verilator_usable, BoxDut, Engine, EngineOptions, Prepared};
use weft_sim::hdl::HdlPorts;
use weft_sim::witness::{agree, Factory};

struct W<B: HdlPorts> {
    hdl: Prepared<B>,
    vl: Option<Prepared<B>>,
}

fn prepare<B>(module: &str, make: fn() -> B) -> W<B>
where
    B: HdlPorts + Send + 'static,
{
    let o = EngineOptions::default();
    let vl = verilator_usable()
        .then(|| Prepared::new(Engine::Verilator, module, make, false, &o).unwrap());
    if std::env::var_os("WEFT_REQUIRE_VERILATOR").is_some() {
        assert!(
            vl.is_some(),
            "WEFT_REQUIRE_VERILATOR is set and Verilator is not usable"
        );
    }
    W {
        hdl: Prepared::new(Engine::RustHdl, module, make, false, &o).unwrap(),
        vl,
    }
}

fn keep_of(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// A frame: an engine's UDP frame, another UDP port, or random bytes.
fn frame(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let kind = rng.gen_range(0..6);
    let len = match rng.gen_range(0..4) {
        0 => rng.gen_range(1..70),
        1 => 64 * rng.gen_range(1..5),
        _ => rng.gen_range(58..330),
    };
    let mut f: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
    if kind < 5 && len >= 38 {
        f[12] = 0x08;
        f[13] = 0x00;
        f[14] = 0x45;
        f[23] = 17;
        let port = match kind {
            0 | 1 => KV_PORT,
            2 => GRAD_PORT,
            3 => MEMOPS_PORT,
            _ => rng.gen(),
        };
        f[36] = (port >> 8) as u8;
        f[37] = port as u8;
    }
    f
}

struct DeframeDriver {
    frames: Vec<Vec<u8>>,
    next: usize,
    beat: usize,
    rng: ChaCha8Rng,
    bubble: f64,
    stall: f64,
    offering: bool,
    out: Vec<(u8, u16, Vec<u8>)>,
    cur: Vec<u8>,
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
            let at = 64 * self.beat;
            let n = (f.len() - at).min(64);
            i.s_tdata = from_bytes(&f[at..at + n]);
            i.s_tkeep = keep_of(n);
            i.s_tlast = at + n == f.len();
            i.s_tvalid = true;
            i.s_tuser_size = f.len() as u16;
        }
        i
    }

    fn observe(&mut self, i: &DeframeIn, o: &DeframeOut) {
        if i.s_tvalid && o.s_tready {
            self.offering = false;
            if i.s_tlast {
                self.next += 1;
                self.beat = 0;
            } else {
                self.beat += 1;
            }
        }
        if o.m_tvalid && i.m_tready {
            self.cur.extend(kept_bytes(&o.m_tdata, o.m_tkeep));
            if o.m_tlast {
                self.out
                    .push((o.m_tdest, o.m_tuser_size, std::mem::take(&mut self.cur)));
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

fn check_deframe(seed: u64, n: usize, bubble: f64, stall: f64) -> Result<(), String> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let frames: Vec<Vec<u8>> = (0..n).map(|_| frame(&mut rng)).collect();
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
        next: 0,
        beat: 0,
        rng: ChaCha8Rng::seed_from_u64(seed ^ 1),
        bubble,
        stall,
        offering: false,
        out: vec![],
        cur: vec![],
    };
    let runs = agree(&f, &make, 100_000)?;
    for r in &runs {
        for (k, (fr, (dest, size, got))) in frames.iter().zip(&r.driver.out).enumerate() {
            let mut first = [0u8; 64];
            let n = fr.len().min(64);
            first[..n].copy_from_slice(&fr[..n]);
            let want_dest = classify(&from_bytes(&first), fr.len() as u16);
            let (want_size, want) = if want_dest == 0 {
                (fr.len(), &fr[..])
            } else {
                (fr.len() - STRIP, &fr[STRIP..])
            };
            if (*dest, *size as usize, &got[..]) != (want_dest, want_size, want) {
                return Err(format!(
                    "{}: frame {k} ({} bytes): got dest {dest} size {size} {} bytes, want dest {want_dest} size {want_size}",
                    r.witness,
                    fr.len(),
                    got.len()
                ));
            }
        }
    }
    Ok(())
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
            self.out.push(Beat {
                tdata: o.m_tdata,
                tkeep: o.m_tkeep,
                tlast: o.m_tlast,
                tvalid: true,
                tuser_size: o.m_tuser_size,
                tuser_src: o.m_tuser_src,
                tuser_dst: o.m_tuser_dst,
            });
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn deframe_steers_and_strips_like_the_model(seed in any::<u64>(), bubble in 0.0f64..0.6, stall in 0.0f64..0.6) {
        check_deframe(seed, 24, bubble, stall).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pkt_mux_merges_whole_packets_like_the_model(seed in any::<u64>(), bubble in 0.0f64..0.7, stall in 0.0f64..0.7) {
        check_mux(seed, bubble, stall).map_err(TestCaseError::fail)?;
    }
}

/// Full rate: every frame back to back and the output always ready.
#[test]
fn deframe_at_line_rate() {
    check_deframe(99, 40, 0.0, 0.0).unwrap();
}
