//! The kernel-bypass path: weft's QDMA driver (`weft_driver::qdma`)
//! against the behavioural QDMA model in front of `weft_top`
//! (`weft_sim::qdma`, `--device sim:qdma`). The model is a model: these
//! tests show the driver does what the published programming model says
//! and that every job runs through its queues; they say nothing of a real
//! QDMA, which this driver has not met.

mod common;
use common::weft;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use weft_driver::qdma::regs::*;
use weft_driver::qdma::{Bar, Qdma, QdmaBus, QdmaCard, QdmaConfig};
use weft_driver::{DmaBuffer, FramePorts, Port};
use weft_sim::device::SimKind;
use weft_sim::qdma::{Access, ModelOptions, NoBuffer, QdmaModel};
use weft_sim::{SimDevice, SimulatorOptions};

/// An Ethernet frame not addressed to the card, so the top passes it on
/// unchanged (host port to wire, wire to host port); `tag` in its payload.
fn frame(len: usize, tag: u32) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| (i as u32 ^ tag) as u8).collect();
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x42]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&tag.to_be_bytes());
    f
}

fn model(opts: ModelOptions) -> Arc<QdmaModel> {
    let kind = if weft_sim::verilator::toolchain().is_ok() {
        SimKind::Verilator
    } else {
        SimKind::RustHdl
    };
    let card = SimDevice::open(kind, &SimulatorOptions::default()).unwrap();
    Arc::new(QdmaModel::new(card, opts))
}

fn small() -> QdmaConfig {
    QdmaConfig {
        ring_size: 64,
        batch: 8,
        ..QdmaConfig::default()
    }
}

fn card(m: &Arc<QdmaModel>, cfg: QdmaConfig) -> QdmaCard<QdmaModel> {
    let (q, pairs) = Qdma::bring_up(m.clone(), cfg).unwrap();
    QdmaCard::new("sim:qdma".into(), q, pairs, m.clone())
}

/// Advance until `n` frames have come back (or give up).
fn collect(c: &QdmaCard<QdmaModel>, n: usize) -> Vec<weft_driver::Frame> {
    let mut got = vec![];
    for _ in 0..2000 {
        c.advance(256).unwrap();
        got.extend(c.recv().unwrap());
        if got.len() >= n && !c.busy() {
            break;
        }
    }
    got
}

/// Both directions through rings of 63 descriptors, far more packets than
/// a ring holds (every ring wraps several times, the completion colour
/// flips each time), packets up to 9000 bytes spanning three 4 KiB C2H
/// buffers: every frame arrives whole, in order, and the doorbells were
/// batched.
#[test]
fn rings_wrap_colours_flip_and_long_packets_span_buffers() {
    let m = model(ModelOptions::default());
    let c = card(&m, small());
    let lens = |i: usize| [60, 61, 1514, 4096, 4097, 9000][i % 6];
    let n = 300;
    for i in 0..n {
        c.send(Port::Host, &frame(lens(i), i as u32)).unwrap();
        c.send(Port::Wire, &frame(lens(i + 3), 1000 + i as u32))
            .unwrap();
    }
    let got = collect(&c, 2 * n);
    let (wire, host): (Vec<_>, Vec<_>) = got.into_iter().partition(|f| f.port == Port::Wire);
    let want_wire: Vec<_> = (0..n).map(|i| frame(lens(i), i as u32)).collect();
    let want_host: Vec<_> = (0..n)
        .map(|i| frame(lens(i + 3), 1000 + i as u32))
        .collect();
    assert_eq!(
        wire.into_iter().map(|f| f.bytes).collect::<Vec<_>>(),
        want_wire
    );
    assert_eq!(
        host.into_iter().map(|f| f.bytes).collect::<Vec<_>>(),
        want_host
    );
    let q = c.queue(0).unwrap().stats();
    assert_eq!((q.sent, q.received, q.errors), (n as u64, n as u64, 0));
    assert!(q.h2c_doorbells < q.sent / 2, "{q:?}");
    let s = m.stats();
    assert_eq!(
        (s.h2c_packets, s.c2h_packets, s.c2h_dropped),
        (n as u64, n as u64, 0)
    );
    assert!(m.faults().is_empty(), "{:?}", m.faults());
}

/// A host that stops taking packets: the C2H queue runs out of buffers,
/// the model holds what the card sends (stall mode) and delivers it all,
/// in order, once the host polls again; in drop mode the excess is
/// dropped and counted, and the rest still arrives whole.
#[test]
fn back_pressure_when_the_host_stops_returning_buffers() {
    for mode in [NoBuffer::Stall, NoBuffer::Drop] {
        let m = model(ModelOptions {
            no_buffer: mode,
            ..ModelOptions::default()
        });
        let c = card(&m, small());
        let n = 150u32;
        for i in 0..n {
            c.send(Port::Wire, &frame(100, i)).unwrap();
        }
        // Time passes with nobody polling: 62 buffers, 150 packets.
        for _ in 0..100 {
            c.qdma().bus().advance(256).unwrap();
        }
        let s = m.stats();
        assert_eq!(s.c2h_packets, 62, "{mode:?}: {s:?}");
        let expect = if mode == NoBuffer::Stall { n } else { 62 };
        let got = collect(&c, expect as usize);
        let tags: Vec<u32> = got
            .iter()
            .map(|f| u32::from_be_bytes(f.bytes[14..18].try_into().unwrap()))
            .collect();
        match mode {
            NoBuffer::Stall => assert_eq!(tags, (0..n).collect::<Vec<_>>()),
            NoBuffer::Drop => {
                assert_eq!(tags, (0..62).collect::<Vec<_>>());
                assert_eq!(m.stats().c2h_dropped, (n - 62) as u64);
            }
        }
    }
}

/// The registers the driver writes while bringing one queue pair up,
/// against the sequence written out by hand from open-nic-driver's
/// `onic_init_hardware`, `onic_qdma_init_csr`, `onic_enable_cmac`,
/// `onic_qdma_init_{tx,rx}_queue` and the EQDMA context layouts of
/// dma_ip_drivers' `eqdma_soft_reg.h` (every context word below was worked
/// out from those bit positions, not from the driver's field table).
#[test]
fn bring_up_follows_the_published_sequence() {
    let m = model(ModelOptions::default());
    m.trace_start();
    let cfg = QdmaConfig {
        h2c_buf: 4096,
        ..small()
    };
    let (_q, _pairs) = Qdma::bring_up(m.clone(), cfg).unwrap();
    let trace = m.trace_take();
    let writes: Vec<&Access> = trace.iter().filter(|a| a.write).collect();

    // Context writes: DATA words then the command (sel[4:1], op[6:5],
    // qid[19:7]); clears are a command alone.
    let mut ctx = vec![];
    let mut data = [0u32; 8];
    let mut other = vec![];
    for a in &writes {
        match (a.bar, a.offset) {
            (Bar::Qdma, o @ 0x804..=0x820) => data[((o - 0x804) / 4) as usize] = a.value,
            (Bar::Qdma, 0x824..=0x840) => assert_eq!(a.value, 0xffff_ffff),
            (Bar::Qdma, 0x844) => {
                let (sel, op, qid) = ((a.value >> 1) & 0xf, (a.value >> 5) & 3, a.value >> 7);
                ctx.push((sel, op, qid, if op == 1 { data } else { [0; 8] }));
            }
            _ => other.push((a.bar, a.offset, a.value)),
        }
    }
    let w = |sel: u32, words: [u32; 8]| (sel, 1, 0, words);
    let clr = |sel: u32| (sel, 0, 0, [0u32; 8]);
    let rd = |sel: u32| (sel, 2, 0, [0u32; 8]);
    let mut want = vec![clr(0xC), w(0xC, [0, 1, 0, 0, 0, 0, 0, 0])];
    want.extend([1, 3, 5, 0, 2, 4, 7, 6].map(clr));
    // H2C SW: qen | wbi_chk | wbi_intvl_en | rng_sz 1 (64) | desc_sz 1 |
    // wbk_en; ring at IOVA 0x1_0000_0000 (the first page allocated).
    want.extend([w(1, [0, 0x0011_100D, 0, 1, 0, 0, 0, 0]), rd(1)]);
    // C2H SW: qen | fcrd_en | rng_sz 1 | wbk_en; ring at 0x1_0004_0000
    // (after the H2C ring's page and its 63 4 KiB buffers).
    want.extend([w(0, [0, 0x0010_1003, 0x0004_0000, 1, 0, 0, 0, 0]), rd(0)]);
    // Prefetch: bufsz_idx 8 (4096 B) << 1 | pfch_en << 27; valid << 13.
    want.extend([w(7, [0x0800_0010, 0x2000, 0, 0, 0, 0, 0, 0]), rd(7)]);
    // CMPT: en_stat_desc | trig 1 << 2 | color << 27 | qsize_idx 1 << 28;
    // W1 = addr[37:6] of 0x1_0008_0000; valid W3[28].
    want.extend([
        w(6, [0x1800_0005, 0x0400_2000, 0, 0x1000_0000, 0, 0, 0, 0]),
        rd(6),
    ]);
    assert_eq!(ctx, want);

    let mut seq: Vec<(Bar, u32, u32)> = vec![(Bar::Shell, 0x1000, 1)];
    seq.extend((0..128).map(|i| (Bar::Shell, 0x1400 + 4 * i, 0)));
    let key: [u32; 10] = [
        0x6d5a56da, 0x255b0ec2, 0x4167253d, 0x43a38fb0, 0xd0ca2bcb, 0xae7b30b4, 0x77cb2da3,
        0x8030f20c, 0x6a42b73b, 0xbeac01fa,
    ];
    seq.extend((0..10).map(|i| (Bar::Shell, 0x1600 + 4 * i, key[i as usize])));
    let rings = [
        4096, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 3072, 4096, 6144, 8192, 12288, 16384,
    ];
    let bufs = [
        4096, 256, 512, 1024, 2048, 3968, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 8192, 9018,
        16384,
    ];
    let timers = [
        10, 2, 4, 5, 8, 10, 15, 20, 25, 30, 50, 75, 100, 125, 150, 200,
    ];
    let counts = [
        64, 2, 4, 8, 16, 24, 32, 48, 80, 96, 112, 128, 144, 160, 176, 192,
    ];
    seq.extend((0..16).map(|i| (Bar::Qdma, 0x204 + 4 * i, rings[i as usize])));
    seq.extend((0..16).map(|i| (Bar::Qdma, 0xAB0 + 4 * i, bufs[i as usize])));
    seq.push((Bar::Qdma, 0xB0C, 25));
    seq.extend((0..16).map(|i| (Bar::Qdma, 0xA00 + 4 * i, timers[i as usize])));
    seq.extend((0..16).map(|i| (Bar::Qdma, 0xA40 + 4 * i, counts[i as usize])));
    seq.push((Bar::Qdma, 0x250, 0x30));
    // onic_enable_cmac(0): shell reset, RS-FEC, rx, tx (0x10 then 1),
    // flow control.
    seq.extend([
        (Bar::Shell, 0xC, 0x10),
        (Bar::Shell, 0x907C, 0x3),
        (Bar::Shell, 0x9000, 0x7),
        (Bar::Shell, 0x8014, 0x1),
        (Bar::Shell, 0x800C, 0x10),
        (Bar::Shell, 0x800C, 0x1),
        (Bar::Shell, 0x8084, 0x3DFF),
        (Bar::Shell, 0x8088, 0x1C631),
    ]);
    seq.extend([0x48, 0x4C, 0x50, 0x54].map(|o| (Bar::Shell, 0x8000 + o, 0xFFFF_FFFF)));
    seq.push((Bar::Shell, 0x8058, 0xFFFF));
    seq.extend([0x34, 0x38, 0x3C, 0x40].map(|o| (Bar::Shell, 0x8000 + o, 0xFFFF_FFFF)));
    seq.extend([(Bar::Shell, 0x8044, 0xFFFF), (Bar::Shell, 0x8030, 0x1FF)]);
    // Then the queue: CMPT CIDX (cidx 0, trig 1, stat_en), C2H PIDX 62
    // (every buffer but one).
    seq.extend([
        (Bar::Qdma, 0x1800C, (1 << 24) | (1 << 27)),
        (Bar::Qdma, 0x18008, 62),
    ]);
    assert_eq!(other, seq);

    // The reads before any write: the identifier, the engines, the IP
    // type, the queue count; CMAC 0's version before its reset.
    let reads: Vec<(Bar, u32)> = trace
        .iter()
        .take_while(|a| !a.write)
        .map(|a| (a.bar, a.offset))
        .collect();
    assert_eq!(
        reads,
        [
            (Bar::Qdma, 0x0),
            (Bar::Qdma, 0x118),
            (Bar::Qdma, 0x134),
            (Bar::Qdma, 0x120)
        ]
    );
}

/// A bus in front of the model that answers some registers its own way:
/// a card that is not what the driver expects.
struct Patched {
    inner: Arc<QdmaModel>,
    reads: HashMap<(Bar, u32), u32>,
}

impl QdmaBus for Patched {
    fn name(&self) -> String {
        "patched".into()
    }
    fn read32(&self, bar: Bar, offset: u32) -> weft_driver::Result<u32> {
        match self.reads.get(&(bar, offset)) {
            Some(v) => Ok(*v),
            None => self.inner.read32(bar, offset),
        }
    }
    fn write32(&self, bar: Bar, offset: u32, value: u32) -> weft_driver::Result<()> {
        self.inner.write32(bar, offset, value)
    }
    fn dma_alloc(&self, len: usize) -> weft_driver::Result<Box<dyn DmaBuffer>> {
        self.inner.dma_alloc(len)
    }
    fn function(&self) -> u32 {
        0
    }
}

/// Each refusal says what was found.
#[test]
fn refusals_say_what_was_found() {
    let m = model(ModelOptions::default());
    let try_with = |reads: &[((Bar, u32), u32)], cfg: QdmaConfig| -> String {
        let bus = Arc::new(Patched {
            inner: m.clone(),
            reads: reads.iter().copied().collect(),
        });
        match Qdma::bring_up(bus, cfg) {
            Ok(_) => panic!("brought up"),
            Err(e) => e.to_string(),
        }
    };
    let d = QdmaConfig::default;
    let e = try_with(&[((Bar::Qdma, 0), 0xffff_ffff)], d());
    assert!(
        e.contains("not present") && e.contains("0xffffffff") && e.contains("all ones"),
        "{e}"
    );
    let e = try_with(&[((Bar::Qdma, GLBL2_CHANNEL_MDMA), 0xf0f)], d());
    assert!(
        e.contains("not in streaming mode") && e.contains("0x00000f0f"),
        "{e}"
    );
    let e = try_with(&[((Bar::Qdma, GLBL2_MISC_CAP), 0x1000_0000)], d());
    assert!(e.contains("device type 1"), "{e}");
    let e = try_with(&[], QdmaConfig { queues: 600, ..d() });
    assert!(
        e.contains("600 queue(s)") && e.contains("the IP has 512"),
        "{e}"
    );
    let e = try_with(
        &[],
        QdmaConfig {
            ring_size: 100,
            ..d()
        },
    );
    assert!(e.contains("ring size 100"), "{e}");
    let e = try_with(&[((Bar::Shell, CMAC0 + CMAC_CORE_VERSION), 0)], d());
    assert!(e.contains("CMAC 0 not found"), "{e}");
    // An engine that keeps nothing written to a context.
    let e = try_with(&[((Bar::Qdma, IND_CTXT_DATA + 4), 0)], d());
    assert!(e.contains("did not keep queue 0's SwH2c context"), "{e}");
    // A frame longer than the H2C buffers.
    let c = card(&m, small());
    let e = c
        .send(Port::Host, &frame(10_000, 0))
        .unwrap_err()
        .to_string();
    assert!(e.contains("10000-byte frame"), "{e}");
}

/// Faults the model reports: a descriptor ring at an IOVA nothing is
/// mapped at (the modelled IOMMU refuses the fetch), and an H2C queue the
/// shell's QCONF does not hold (the H2C stream stalls, as on a card).
#[test]
fn dma_outside_mapped_memory_faults_and_qconf_stalls() {
    let m = model(ModelOptions::default());
    let c = card(&m, small());
    // Point queue 0's H2C ring at unmapped IOVA 0x1000 (a context write,
    // as a buggy driver would) and ring its doorbell.
    let bus = c.qdma().bus();
    let mut words = [0u32; 8];
    words[1] = 0x0011_100D;
    words[2] = 0x1000;
    for (i, v) in words.iter().enumerate() {
        bus.write32(Bar::Qdma, IND_CTXT_DATA + 4 * i as u32, *v)
            .unwrap();
    }
    bus.write32(Bar::Qdma, IND_CTXT_CMD, (1 << 1) | (1 << 5))
        .unwrap();
    bus.write32(Bar::Qdma, doorbell(0, DB_H2C_PIDX), 1).unwrap();
    c.advance(100).unwrap();
    let f = m.faults();
    assert!(
        f.iter()
            .any(|f| f.contains("IOMMU fault") && f.contains("0x1000")),
        "{f:?}"
    );

    let m = model(ModelOptions::default());
    let c = card(&m, small());
    c.qdma().bus().write32(Bar::Shell, 0x1000, 0).unwrap();
    c.send(Port::Host, &frame(64, 7)).unwrap();
    c.advance(1000).unwrap();
    assert!(c.recv().unwrap().is_empty());
    assert!(
        m.faults().iter().any(|f| f.contains("stalled")),
        "{:?}",
        m.faults()
    );
}

/// Unknown registers are errors, never silently accepted.
#[test]
fn the_model_refuses_what_it_does_not_model() {
    let m = model(ModelOptions::default());
    for (bar, off) in [
        (Bar::Qdma, 0x2000),
        (Bar::Qdma, 0x18000),
        (Bar::Shell, 0x5000),
    ] {
        let e = m.write32(bar, off, 1).unwrap_err().to_string();
        assert!(e.contains("does not model"), "{e}");
    }
    assert!(m.read32(Bar::Qdma, 0xB08).is_err());
}

/// Tear down and bring up again on the same card: the queues come back and
/// carry traffic; queue pairs of several threads each carry their own.
#[test]
fn teardown_bring_up_again_and_several_queue_pairs() {
    let m = model(ModelOptions::default());
    let (q, pairs) = Qdma::bring_up(m.clone(), small()).unwrap();
    q.tear_down(pairs).unwrap();
    let c = card(
        &m,
        QdmaConfig {
            queues: 4,
            ..small()
        },
    );
    assert_eq!(c.queues(), 4);
    // Sends from queue pairs 1..3 directly, as threads that own them would.
    let sent = Mutex::new(0);
    std::thread::scope(|s| {
        for i in 1..4 {
            let (c, sent) = (&c, &sent);
            s.spawn(move || {
                let mut q = c.queue(i).unwrap();
                for k in 0..10 {
                    assert!(q.send(&frame(80, 100 * i as u32 + k)).unwrap());
                }
                q.flush().unwrap();
                *sent.lock().unwrap() += 10;
            });
        }
    });
    // Frames from the wire spread over the queues by the shell's hash.
    for i in 0..40u32 {
        let mut f = frame(80, i);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[23] = 17;
        f[26..30].copy_from_slice(&[10, 0, 1, i as u8]);
        f[34..36].copy_from_slice(&(4000 + i as u16).to_be_bytes());
        c.send(Port::Wire, &f).unwrap();
    }
    let got = collect(&c, 70);
    assert_eq!(got.iter().filter(|f| f.port == Port::Wire).count(), 30);
    assert_eq!(got.iter().filter(|f| f.port == Port::Host).count(), 40);
    let used = (0..4)
        .filter(|&i| c.queue(i).unwrap().stats().received > 0)
        .count();
    assert!(used >= 3, "the hash spread 40 flows over {used} queue(s)");
}

/// Every job runs through the QDMA queues with the same results as on the
/// card's ports directly: key-value (checked exact against the model),
/// gradient and MemOps (the whole report equal to `sim:verilator`'s).
#[test]
fn every_job_is_exact_through_qdma_queues() {
    if !weft_sim::simulator::verilator_usable() {
        eprintln!("skipped: needs Verilator");
        return;
    }
    let kv = [
        "agg",
        "kv",
        "--generate",
        "zipf:1.2:5000:20000",
        "--workers",
        "4",
        "--loss",
        "0.01",
        "--dup",
        "0.01",
        "--reorder",
        "0.01",
        "--check",
        "--device",
    ];
    let grad = [
        "agg",
        "grad",
        "--jobs",
        "../examples/grad/equal.toml",
        "--device",
    ];
    let memops = [
        "memops",
        "run",
        "--program",
        "../examples/memops/pool.toml",
        "--trace",
        "../examples/memops/pool.trace",
        "--device",
    ];
    for job in [&kv[..], &grad[..], &memops[..]] {
        let run = |dev: &str| {
            let mut a = job.to_vec();
            a.push(dev);
            let (ok, out, err) = weft(&a);
            assert!(ok, "{a:?}: {err}");
            // Host frames are stamped when the driver polls them, not when
            // they left the top (a completion carries no time): MemOps'
            // cycle count may differ by the polling delay; nothing else.
            format!("{out}{err}")
                .replace(dev, "DEV")
                .lines()
                .filter(|l| job[0] != "memops" || !l.contains(" cycles"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let q = run("sim:qdma");
        assert_eq!(q, run("sim:verilator"), "{job:?}");
        if job[1] == "kv" {
            assert!(q.contains("check: all"), "{q}");
        }
    }
}
