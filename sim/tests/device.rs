//! The simulated card — `weft_top` on rust-hdl, on Verilator, and the
//! top's reference model — through weft-driver's two seams, registers and
//! frames: discovery walks the chain exactly as on hardware, register
//! errors are the bus's, and a small key-value exchange gives the same
//! frames, byte for byte, on every simulation.

use std::net::Ipv4Addr;
use std::time::Duration;
use weft_driver::{identify, Device, Error, FramePorts, Port, RegisterAccess};
use weft_model::kv_agg::packet as kp;
use weft_model::wire::{self, build_frame, parse_built, Endpoint};
use weft_regs::{ctrl, id, kv, net};
use weft_sim::device::SimKind;
use weft_sim::simulator::verilator_usable;
use weft_sim::{SimDevice, SimulatorOptions};

fn open(kind: SimKind) -> SimDevice {
    SimDevice::open(kind, &SimulatorOptions::default()).unwrap()
}

/// The fast simulations: Verilator (when installed) and the model.
fn fast() -> Vec<SimDevice> {
    let mut v = vec![open(SimKind::Model)];
    if verilator_usable() {
        v.push(open(SimKind::Verilator));
    }
    v
}

#[test]
fn identify_walks_the_chain_on_every_simulation() {
    let mut all = fast();
    all.push(open(SimKind::RustHdl));
    for dev in all {
        let info = identify(&dev).unwrap();
        assert_eq!(info.magic, weft_regs::MAGIC);
        assert_eq!(info.map_version, weft_regs::MAP.version);
        assert_eq!(info.board_name(), Some("sim"), "{}", dev.name());
        assert_eq!(info.features, weft_hdl::build_info::top_features());
        let names: Vec<_> = info.blocks.iter().map(|b| b.name.unwrap()).collect();
        assert_eq!(
            names,
            ["id", "ctrl", "kv", "memops", "grad", "avm", "net"],
            "{}",
            dev.name()
        );
    }
}

#[test]
fn register_errors_are_the_bus_errors() {
    for dev in fast() {
        dev.write_reg(&ctrl::SCRATCH, 0xfeed_f00d).unwrap();
        assert_eq!(dev.read_reg(&ctrl::SCRATCH).unwrap(), 0xfeed_f00d);
        let e = dev.write32(id::MAGIC.addr, 0).unwrap_err();
        assert!(
            matches!(e, Error::Bus { resp: "SLVERR", .. }),
            "{}: {e}",
            dev.name()
        );
        let e = dev.read32(0x4000).unwrap_err();
        assert!(
            matches!(e, Error::Bus { resp: "DECERR", .. }),
            "{}: {e}",
            dev.name()
        );
        assert!(matches!(
            dev.read32(0x1_0000),
            Err(Error::OutOfRange { .. })
        ));
        assert!(matches!(dev.read32(0x102), Err(Error::OutOfRange { .. })));
        let c0 = dev.read_reg(&ctrl::CYCLE_LO).unwrap();
        let c1 = dev.read_reg(&ctrl::CYCLE_LO).unwrap();
        assert!(
            c1 > c0,
            "{}: the cycle counter counts: {c0} then {c1}",
            dev.name()
        );
        // The 250 MHz box has no interrupt line.
        assert!(!dev.wait_irq(0, Duration::from_micros(10)).unwrap());
    }
}

fn card() -> Endpoint {
    Endpoint {
        mac: [0x02, 0x57, 0x46, 0, 0, 1],
        ip: Ipv4Addr::new(10, 0, 0, 2),
        port: wire::KV_PORT,
    }
}

fn collector() -> Endpoint {
    Endpoint {
        mac: [0x02, 0, 0, 0, 0, 0xc0],
        ip: Ipv4Addr::new(10, 0, 0, 1),
        port: 7000,
    }
}

fn configure(dev: &SimDevice) {
    let (hi, lo) = wire::mac_regs(&card().mac);
    dev.write_reg(&net::MAC_HI, hi).unwrap();
    dev.write_reg(&net::MAC_LO, lo).unwrap();
    dev.write_reg(&net::IP, u32::from(card().ip)).unwrap();
    let (hi, lo) = wire::mac_regs(&collector().mac);
    dev.write_reg(&net::KV_MAC_HI, hi).unwrap();
    dev.write_reg(&net::KV_MAC_LO, lo).unwrap();
    dev.write_reg(&net::KV_IP, u32::from(collector().ip))
        .unwrap();
    dev.write_reg(&net::KV_PORT, collector().port as u32)
        .unwrap();
    dev.write_reg(&net::PACK_WAIT, 100_000).unwrap();
    dev.write_reg(&kv::JOB, 3).unwrap();
    dev.write_reg(&net::CTRL, 1).unwrap();
}

fn tuples() -> Vec<(u32, i32)> {
    (0..40).map(|i| (i * 977, i as i32 - 20)).collect()
}

/// What a small exchange gives: every frame out, in order per port.
fn exchange(dev: &SimDevice) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    configure(dev);
    let sender = Endpoint {
        mac: [0x02, 0, 0, 0, 1, 7],
        ip: Ipv4Addr::new(10, 0, 1, 7),
        port: 40007,
    };
    // Two data packets (the second twice: a duplicate), a frame for
    // another host, and a host frame to the network.
    let tuples = tuples();
    for (seq, t) in [(0, &tuples[..20]), (1, &tuples[20..]), (1, &tuples[20..])] {
        let h = kp::Header::data(3, 0, seq, t.len() as u16);
        dev.send(
            Port::Wire,
            &build_frame(&sender, &card(), &kp::encode(&h, t)),
        )
        .unwrap();
    }
    let other = build_frame(&sender, &collector(), b"not for the card, sixteen+ bytes");
    dev.send(Port::Wire, &other).unwrap();
    dev.send(Port::Host, &other).unwrap();
    dev.advance(2_000).unwrap();
    // A flush drains the table into record frames for the collector.
    dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1)).unwrap();
    dev.advance(20_000).unwrap();
    assert!(!dev.busy(), "{}: still busy", dev.name());
    let (mut w, mut h) = (vec![], vec![]);
    for f in dev.recv().unwrap() {
        match f.port {
            Port::Wire => w.push(f.bytes),
            Port::Host => h.push(f.bytes),
        }
    }
    (w, h)
}

#[test]
fn the_same_frames_on_every_simulation() {
    let devs = fast();
    let runs: Vec<_> = devs.iter().map(exchange).collect();
    let (wire_out, host_out) = &runs[0];
    // To the network: three acks (new, new, duplicate) to the sender, and
    // the host's frame unchanged.
    assert_eq!(wire_out.len(), 4, "{:02x?}", wire_out);
    let acks: Vec<Vec<u8>> = wire_out
        .iter()
        .filter_map(|f| parse_built(f))
        .filter(|p| p.src == card())
        .map(|p| p.payload)
        .collect();
    assert_eq!(acks.len(), 3);
    assert_eq!(
        acks.iter().map(|a| (a[8], a[12])).collect::<Vec<_>>(),
        [(0, 1), (1, 1), (1, 2)],
        "(seq, status) of the acks"
    );
    // To the host: the network's frame for another host, and record
    // frames ending in FIN.
    let last = parse_built(host_out.last().unwrap()).unwrap();
    assert_eq!(last.dst, collector());
    assert_ne!(last.payload[1] & wire::KV_FLAG_FIN, 0);
    let mut sums = std::collections::BTreeMap::new();
    for f in host_out.iter().filter_map(|f| parse_built(f)) {
        if f.src != card() || f.payload[1] & wire::KV_FLAG_RECORDS == 0 {
            continue;
        }
        for r in f.payload[16..].chunks_exact(8) {
            let k = u32::from_le_bytes(r[0..4].try_into().unwrap());
            *sums.entry(k).or_insert(0i64) +=
                i32::from_le_bytes(r[4..8].try_into().unwrap()) as i64;
        }
    }
    let want: std::collections::BTreeMap<u32, i64> =
        tuples().iter().map(|&(k, v)| (k, v as i64)).collect();
    assert_eq!(sums, want, "every tuple once, the duplicate not again");
    // The same frames, byte for byte (frames of different streams may
    // leave a port in another order: timing is each simulation's own).
    let sorted = |(w, h): &(Vec<Vec<u8>>, Vec<Vec<u8>>)| {
        let (mut w, mut h) = (w.clone(), h.clone());
        w.sort();
        h.sort();
        (w, h)
    };
    for (dev, r) in devs.iter().zip(&runs) {
        assert_eq!(
            sorted(r),
            sorted(&runs[0]),
            "{} differs from {}",
            dev.name(),
            devs[0].name()
        );
    }
}

/// The model's stream runner (one evaluation a step, and two) and the
/// harness stepping the model one FFI call a step give the same run: the
/// same frames at the same cycles and the same register values, with
/// register accesses (which step one cycle at a time) between stretches
/// of traffic of every length, frames offered part way through a run.
#[test]
fn the_stream_runner_is_the_stepped_harness() {
    if !verilator_usable() {
        return;
    }
    let open_with = |stepped: bool, two: bool| {
        SimDevice::open(
            SimKind::Verilator,
            &SimulatorOptions {
                stepped,
                two_evaluations: two,
                ..SimulatorOptions::default()
            },
        )
        .unwrap()
    };
    let run = |dev: &SimDevice| {
        configure(dev);
        let sender = Endpoint {
            mac: [0x02, 0, 0, 0, 1, 9],
            ip: Ipv4Addr::new(10, 0, 1, 9),
            port: 40009,
        };
        let tuples = tuples();
        let mut seen = vec![];
        let mut reads = vec![];
        for round in 0..24u32 {
            let t = &tuples[(round as usize % 4) * 10..][..10];
            let h = kp::Header::data(3, 0, round, t.len() as u16);
            dev.send(
                Port::Wire,
                &build_frame(&sender, &card(), &kp::encode(&h, t)),
            )
            .unwrap();
            let other = build_frame(
                &sender,
                &collector(),
                &vec![round as u8; 40 + 37 * round as usize],
            );
            dev.send(Port::Host, &other).unwrap();
            // Stretches of 1 to a few hundred cycles, so runs end part way
            // through frames.
            dev.advance(1 + (round as u64 * 53) % 300).unwrap();
            reads.push(dev.read_reg(&net::CTRL).unwrap());
            reads.push(dev.read_reg(&id::MAGIC).unwrap());
        }
        dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1)).unwrap();
        dev.advance(20_000).unwrap();
        for f in dev.recv().unwrap() {
            seen.push((f.cycle, f.port, f.bytes));
        }
        (seen, reads, dev.cycles())
    };
    let stepped = run(&open_with(true, false));
    assert!(stepped.0.len() > 40, "{} frames", stepped.0.len());
    assert_eq!(
        run(&open_with(false, true)),
        stepped,
        "two evaluations a step"
    );
    assert_eq!(
        run(&open_with(false, false)),
        stepped,
        "one evaluation a step"
    );
}
