//! The framer through the model, rust-hdl and Verilator, cycle by cycle,
//! and every frame each witness sends checked on its own: byte for byte
//! against `weft_model::wire::build_frame`, and parsed by `etherparse`
//! (addresses, ports, lengths, IPv4 header checksum, TTL, flags, payload);
//! beats, `tkeep`, zero bytes past the frame, `tuser_size`, `m_host` and
//! `m_tag` checked too. Stimulus: random metadata with every padding and
//! last-beat boundary for both header lengths (42 and 58 bytes), random
//! body data with garbage past the body, random bubbles on the metadata and
//! body inputs (garbage on them while not valid), random back-pressure with
//! long stalls, many frames per run; and a line-rate run that must send one
//! beat every cycle.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::Ipv4Addr;
use std::sync::OnceLock;
use weft_hdl::framer::Framer;
use weft_model::framer::{FramerIn, FramerModel, FramerOut, Meta, APP_BYTES};
use weft_model::steer::from_bytes;
use weft_model::wire::{mac_bits, Endpoint};
use weft_model::Driver;
use weft_sim::simulator::{verilator_usable, BoxDut, Simulators};
use weft_sim::witness::{agree, Factory};

type W = Simulators<Framer>;

fn witnesses() -> &'static W {
    static W: OnceLock<W> = OnceLock::new();
    W.get_or_init(|| {
        Simulators::prepare("weft_framer", Framer::connected)
            .expect("the block builds on both simulators")
    })
}

/// Body lengths at every boundary: padding (T = 59, 60, 61), the first
/// beat (T = 63, 64, 65), body beats (B = 63, 64, 65, ...), the second and
/// third frame beats, for P = 42 and P = 58.
const EDGES: &[u16] = &[
    0, 1, 2, 3, 5, 6, 7, 16, 17, 18, 19, 21, 22, 23, 63, 64, 65, 69, 70, 71, 85, 86, 87, 127, 128,
    129, 133, 134, 135, 149, 150, 151, 191, 192, 193, 320, 1456, 1472,
];

fn endpoint(rng: &mut ChaCha8Rng) -> Endpoint {
    Endpoint {
        mac: rng.gen(),
        ip: Ipv4Addr::from(rng.gen::<u32>()),
        port: rng.gen(),
    }
}

/// One frame to send: its metadata and its body beats (garbage past
/// `blen`).
#[derive(Clone, Debug)]
struct Job {
    meta: Meta,
    body: Vec<u8>,
}

fn job(rng: &mut ChaCha8Rng, card: &Endpoint, tag: u16, blen: u16, app: bool) -> Job {
    let mut src = *card;
    src.port = rng.gen();
    let mut meta = Meta {
        src,
        dst: endpoint(rng),
        app: app.then(|| rng.gen::<[u8; APP_BYTES]>()),
        blen,
        host: rng.gen(),
        tag,
    };
    if rng.gen_bool(0.15) {
        carry_twice(&mut meta);
    }
    let body = (0..(blen as usize).div_ceil(64) * 64)
        .map(|_| rng.gen())
        .collect();
    Job { meta, body }
}

/// Make the destination IP one whose header sum folds twice (the first
/// fold of the one's-complement sum carries again), which random addresses
/// hit once in about 10^4 frames: with the IP's high word 0xffff the other
/// words sum past 0xffff, and its low word brings the sum's low 16 bits to
/// 0xffff.
fn carry_twice(m: &mut Meta) {
    let app = if m.app.is_some() { APP_BYTES } else { 0 };
    let total = (28 + app as u32 + m.blen as u32) & 0xffff;
    let sip = u32::from(m.src.ip);
    let rest = 0x4500 + 0x4000 + 0x4011 + total + (sip >> 16) + (sip & 0xffff) + 0xffff;
    let lo = (0xffff - (rest & 0xffff)) & 0xffff;
    m.dst.ip = Ipv4Addr::from(0xffff_0000 | lo);
    let sum = rest + lo;
    assert!(
        (sum & 0xffff) + (sum >> 16) > 0xffff,
        "the first fold carries"
    );
}

/// Frames of random lengths: mostly boundary lengths, some random up to
/// `max`.
fn jobs(rng: &mut ChaCha8Rng, card: &Endpoint, n: usize, max: u16) -> Vec<Job> {
    (0..n)
        .map(|k| {
            let blen = if rng.gen_bool(0.7) {
                *EDGES
                    .iter()
                    .filter(|&&b| b <= max)
                    .nth(rng.gen_range(0..EDGES.iter().filter(|&&b| b <= max).count()))
                    .unwrap()
            } else {
                rng.gen_range(0..=max)
            };
            let app = rng.gen();
            job(rng, card, k as u16, blen, app)
        })
        .collect()
}

/// The timing of a run's inputs and outputs.
#[derive(Copy, Clone, Debug)]
struct Timing {
    /// Chance a producer waits a cycle before offering its next item.
    h_bubble: f64,
    s_bubble: f64,
    /// Chance `m_tready` is low in a cycle.
    stall: f64,
    /// Chance a long stall (8 to 200 cycles) starts in a cycle.
    long: f64,
}

const LINE_RATE: Timing = Timing {
    h_bubble: 0.0,
    s_bubble: 0.0,
    stall: 0.0,
    long: 0.0,
};

/// A frame as it left: its beats.
#[derive(Clone, Debug, Default)]
struct Sent {
    beats: Vec<FramerOut>,
}

struct FramerDriver {
    card: Endpoint,
    jobs: Vec<Job>,
    /// Flat body stream: every frame's beats in order.
    body: Vec<[u32; 16]>,
    h_at: usize,
    h_offering: bool,
    s_at: usize,
    s_offering: bool,
    stall_left: u32,
    rng: ChaCha8Rng,
    t: Timing,
    garbage: FramerIn,
    sent: Vec<Sent>,
    cur: Sent,
    /// Cycles without a valid output beat.
    idle: u64,
    /// Protocol violations seen at the ports.
    errors: Vec<String>,
}

impl FramerDriver {
    fn new(card: Endpoint, jobs: &[Job], seed: u64, t: Timing) -> Self {
        let body = jobs
            .iter()
            .flat_map(|j| j.body.chunks(64).map(from_bytes))
            .collect();
        Self {
            card,
            jobs: jobs.to_vec(),
            body,
            h_at: 0,
            h_offering: false,
            s_at: 0,
            s_offering: false,
            stall_left: 0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            t,
            garbage: FramerIn::default(),
            sent: vec![],
            cur: Sent::default(),
            idle: 0,
            errors: vec![],
        }
    }
}

impl Driver<FramerIn, FramerOut> for FramerDriver {
    fn drive(&mut self) -> FramerIn {
        if !self.h_offering && self.h_at < self.jobs.len() {
            self.h_offering = !self.rng.gen_bool(self.t.h_bubble);
        }
        if !self.s_offering && self.s_at < self.body.len() {
            self.s_offering = !self.rng.gen_bool(self.t.s_bubble);
        }
        // Inputs that are not valid carry garbage now and then.
        if self.rng.gen_bool(0.3) {
            self.garbage = FramerIn {
                h_dmac: self.rng.gen::<u64>() & ((1 << 48) - 1),
                h_dip: self.rng.gen(),
                h_sport: self.rng.gen(),
                h_dport: self.rng.gen(),
                h_app: self.rng.gen(),
                h_has_app: self.rng.gen(),
                h_blen: self.rng.gen(),
                h_host: self.rng.gen(),
                h_tag: self.rng.gen(),
                s_tdata: self.rng.gen(),
                ..Default::default()
            };
        }
        let mut i = self.garbage.clone();
        i.card_mac = mac_bits(&self.card.mac);
        i.card_ip = u32::from(self.card.ip);
        if self.h_offering {
            self.jobs[self.h_at].meta.drive(&mut i);
            i.h_valid = true;
        }
        if self.s_offering {
            i.s_tdata = self.body[self.s_at];
            i.s_tvalid = true;
        }
        if self.stall_left == 0 && self.rng.gen_bool(self.t.long) {
            self.stall_left = self.rng.gen_range(8..200);
        }
        i.m_tready = if self.stall_left > 0 {
            self.stall_left -= 1;
            false
        } else {
            !self.rng.gen_bool(self.t.stall)
        };
        i
    }

    fn observe(&mut self, i: &FramerIn, o: &FramerOut) {
        let fire = o.m_tvalid && i.m_tready;
        if o.h_ready != (fire && o.m_tlast) {
            self.errors.push(format!(
                "frame {}: h_ready {} with beat taken {fire} tlast {}",
                self.h_at, o.h_ready, o.m_tlast
            ));
        }
        if o.m_tvalid && !i.h_valid {
            self.errors.push("m_tvalid without h_valid".into());
        }
        if !o.m_tvalid {
            self.idle += 1;
        }
        if i.s_tvalid && o.s_tready {
            if !fire {
                self.errors
                    .push("a body beat taken without an output beat".into());
            }
            self.s_offering = false;
            self.s_at += 1;
        }
        if fire {
            self.cur.beats.push(o.clone());
            if o.m_tlast {
                self.sent.push(std::mem::take(&mut self.cur));
            }
        }
        if i.h_valid && o.h_ready {
            self.h_offering = false;
            self.h_at += 1;
        }
    }

    fn finished(&self) -> bool {
        // A protocol error ends the run: the checks report it.
        !self.errors.is_empty() || self.sent.len() == self.jobs.len()
    }
}

/// RFC 1071 over a header: 0xffff when its checksum is right.
fn ones_sum(b: &[u8]) -> u16 {
    let mut s: u32 = b
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// Check one sent frame against its job: `Err` names what is wrong.
fn check_frame(job: &Job, s: &Sent) -> Result<(), String> {
    let m = &job.meta;
    let want = m.frame(&job.body);
    let n = want.len();
    if s.beats.len() != n.div_ceil(64) {
        return Err(format!("{} beats for {n} bytes", s.beats.len()));
    }
    let mut got = vec![];
    for (k, b) in s.beats.iter().enumerate() {
        let in_beat = (n - 64 * k).min(64);
        let keep = if in_beat == 64 {
            u64::MAX
        } else {
            (1u64 << in_beat) - 1
        };
        if b.m_tkeep != keep || b.m_tlast != (k + 1 == s.beats.len()) {
            return Err(format!(
                "beat {k}: tkeep {:x} tlast {}",
                b.m_tkeep, b.m_tlast
            ));
        }
        if b.m_tuser_size as usize != n || b.m_host != m.host || b.m_tag != m.tag {
            return Err(format!(
                "beat {k}: tuser_size {} host {} tag {}",
                b.m_tuser_size, b.m_host, b.m_tag
            ));
        }
        let bytes: Vec<u8> = (0..64)
            .map(|i| (b.m_tdata[i / 4] >> (8 * (i % 4))) as u8)
            .collect();
        if bytes[in_beat..].iter().any(|&x| x != 0) {
            return Err(format!("beat {k}: bytes past the frame are not zero"));
        }
        got.extend_from_slice(&bytes[..in_beat]);
    }
    if got != want {
        let at = got.iter().zip(&want).position(|(a, b)| a != b);
        return Err(format!("frame differs from build_frame at byte {at:?}"));
    }
    // An independent reading: etherparse.
    use etherparse::{LinkHeader, NetHeaders, PacketHeaders, PayloadSlice, TransportHeader};
    let h = PacketHeaders::from_ethernet_slice(&got).map_err(|e| format!("etherparse: {e}"))?;
    let Some(LinkHeader::Ethernet2(eth)) = h.link else {
        return Err("no Ethernet II header".into());
    };
    let Some(NetHeaders::Ipv4(ip, _)) = h.net else {
        return Err("no IPv4 header".into());
    };
    let Some(TransportHeader::Udp(udp)) = h.transport else {
        return Err("no UDP header".into());
    };
    let PayloadSlice::Udp(payload) = h.payload else {
        return Err("no UDP payload".into());
    };
    let app_len = if m.app.is_some() { APP_BYTES } else { 0 };
    let plen = app_len + m.blen as usize;
    let mut want_payload = m.app.map(|a| a.to_vec()).unwrap_or_default();
    want_payload.extend_from_slice(&job.body[..m.blen as usize]);
    let ok = eth.destination == m.dst.mac
        && eth.source == m.src.mac
        && eth.ether_type == etherparse::EtherType::IPV4
        && ip.header_len() == 20
        && ip.total_len as usize == 28 + plen
        && ip.identification == 0
        && ip.dont_fragment
        && !ip.more_fragments
        && ip.fragment_offset.value() == 0
        && ip.time_to_live == 64
        && ip.protocol == etherparse::IpNumber::UDP
        && ip.header_checksum == ip.calc_header_checksum()
        && ones_sum(&got[14..34]) == 0xffff
        && ip.source == m.src.ip.octets()
        && ip.destination == m.dst.ip.octets()
        && udp.source_port == m.src.port
        && udp.destination_port == m.dst.port
        && udp.length as usize == 8 + plen
        && udp.checksum == 0
        && payload == &want_payload[..]
        && n == (42 + plen).max(60);
    if !ok {
        return Err(format!(
            "etherparse disagrees: {eth:?} {ip:?} {udp:?}, {} payload bytes",
            payload.len()
        ));
    }
    Ok(())
}

/// Run `jobs` through the witnesses (the model and Verilator only unless
/// `rust_hdl`), require cycle-by-cycle agreement and check every frame of
/// every witness. Returns the cycles and idle cycles of the run.
fn check(
    seed: u64,
    card: Endpoint,
    jobs: &[Job],
    t: Timing,
    rust_hdl: bool,
) -> Result<(u64, u64), String> {
    let w = witnesses();
    let mut f: Vec<Factory<'_, FramerIn, FramerOut>> =
        vec![Box::new(|| -> BoxDut<FramerIn, FramerOut> {
            Box::new(FramerModel::new())
        })];
    if rust_hdl {
        f.push(Box::new(|| w.hdl.instantiate(None).unwrap()));
    }
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || FramerDriver::new(card, jobs, seed, t);
    let runs = agree(&f, &make, 10_000_000)?;
    for r in &runs {
        eprintln!(
            "{}: {} cycles, {:.0} cycles/s",
            r.witness,
            r.run.cycles,
            r.run.cycles as f64 / r.elapsed.as_secs_f64()
        );
    }
    for r in &runs {
        let d = &r.driver;
        if let Some(e) = d.errors.first() {
            return Err(format!("{}: {e}", r.witness));
        }
        if d.s_at != d.body.len() {
            return Err(format!(
                "{}: {} of {} body beats taken",
                r.witness,
                d.s_at,
                d.body.len()
            ));
        }
        for (k, (j, s)) in jobs.iter().zip(&d.sent).enumerate() {
            check_frame(j, s).map_err(|e| {
                format!(
                    "{}: frame {k} (app {}, blen {}): {e}",
                    r.witness,
                    j.meta.app.is_some(),
                    j.meta.blen
                )
            })?;
        }
    }
    Ok((runs[0].run.cycles, runs[0].driver.idle))
}

fn card(rng: &mut ChaCha8Rng) -> Endpoint {
    let mut c = endpoint(rng);
    c.port = 0;
    c
}

fn timing() -> impl Strategy<Value = Timing> {
    (0.0f64..0.7, 0.0f64..0.7, 0.0f64..0.7, 0.0f64..0.02).prop_map(|(h, s, st, l)| Timing {
        h_bubble: h,
        s_bubble: s,
        stall: st,
        long: l,
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(24), ..ProptestConfig::default() })]

    /// Three witnesses, cycle by cycle: short runs (rust-hdl simulates the
    /// 512-bit datapath slowly), frames up to 320 body bytes.
    #[test]
    fn frames_match_build_frame_in_every_witness(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let card = card(&mut rng);
        let jobs = jobs(&mut rng, &card, 32, 320);
        check(seed ^ 1, card, &jobs, t, true).map_err(TestCaseError::fail)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(8), ..ProptestConfig::default() })]

    /// The model and Verilator, cycle by cycle: long runs of frames up to
    /// 9000 body bytes, with long stalls.
    #[test]
    fn long_runs_match_in_the_model_and_verilator(seed in any::<u64>(), t in timing()) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let card = card(&mut rng);
        let jobs = jobs(&mut rng, &card, 300, 9000);
        check(seed ^ 2, card, &jobs, t, false).map_err(TestCaseError::fail)?;
    }
}

/// Every boundary length for both header lengths, plus the longest bodies,
/// in all three witnesses, under bubbles and back-pressure.
#[test]
fn every_boundary_in_every_witness() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let card = card(&mut rng);
    let mut all = vec![];
    for app in [false, true] {
        for &b in EDGES.iter().chain(&[8942, 9000, 9542]) {
            let k = all.len() as u16;
            all.push(job(&mut rng, &card, k, b, app));
        }
    }
    let t = Timing {
        h_bubble: 0.3,
        s_bubble: 0.3,
        stall: 0.3,
        long: 0.005,
    };
    check(8, card, &all, t, true).unwrap();
}

/// Back to back at full rate: one beat leaves every cycle, across frames,
/// in all three witnesses.
#[test]
fn one_beat_per_cycle_at_line_rate() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let card = card(&mut rng);
    let jobs = jobs(&mut rng, &card, 40, 1500);
    let beats: u64 = jobs
        .iter()
        .map(|j| j.meta.frame(&[]).len().div_ceil(64) as u64)
        .sum();
    let (cycles, idle) = check(12, card, &jobs, LINE_RATE, true).unwrap();
    assert_eq!(idle, 0, "cycles without a beat at line rate");
    assert_eq!(cycles, beats, "one beat per cycle");
}

/// The emitted Verilog lints clean with the documented waivers.
#[test]
fn framer_lints_clean() {
    if !verilator_usable() {
        return;
    }
    let v = weft_hdl::emit::verilog_of(&Framer::connected(), "weft_framer");
    let rep = weft_sim::verilator::lint_with_waivers(&v, "weft_framer").unwrap();
    assert!(rep.clean, "{:#?}", rep.warnings);
}

/// rust-hdl's connection check passes on the block `connected()` gives and
/// fails on the bare one (the simulators would not notice a missing
/// `connect_all`; Verilog generation for a flow would).
#[test]
fn the_connected_block_passes_rust_hdls_connection_check() {
    weft_sim::witness::check_connection(&Framer::connected(), &Framer::new()).unwrap();
}
