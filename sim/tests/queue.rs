//! The host queues (weft-driver's ring code) against the modelled queue
//! engine: on the in-memory double and on the simulated card.

use std::sync::Arc;
use std::time::Duration;
use weft_driver::queue::{C2hQueue, H2cQueue, RingConfig};
use weft_driver::{identify, Device, Error, RegisterAccess};
use weft_regs::queue as q;
use weft_sim::mem_card::MemCard;
use weft_sim::{Engine, EngineOptions, SimDevice};

fn cfg(log2: u32) -> RingConfig {
    RingConfig {
        log2,
        buf_size: 256,
        irq: None,
        loopback: false,
    }
}

fn msg(i: u32) -> Vec<u8> {
    let n = 1 + (i as usize * 7) % 200;
    (0..n).map(|k| (i as u8).wrapping_add(k as u8)).collect()
}

#[test]
fn h2c_delivers_in_order_across_many_wraps() {
    let card = Arc::new(MemCard::new());
    let mut h2c = H2cQueue::open(card.clone(), cfg(3)).unwrap();
    assert_eq!(h2c.entries(), 8);
    let mut sent = 0u32;
    for batch in [1usize, 3, 8, 5, 8, 2, 7, 8, 8, 1].iter().cycle().take(60) {
        let msgs: Vec<Vec<u8>> = (0..*batch as u32).map(|i| msg(sent + i)).collect();
        assert_eq!(h2c.send(&msgs).unwrap(), *batch);
        sent += *batch as u32;
        assert_eq!(h2c.reap().unwrap(), *batch as u32);
        assert_eq!(h2c.in_flight(), 0);
    }
    let got = card.take_input();
    assert_eq!(got.len(), sent as usize);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m, &msg(i as u32), "message {i}");
    }
    assert_eq!(card.stats().h2c_descriptors, sent as u64);
}

#[test]
fn a_full_ring_refuses_more_until_reaped() {
    // The null card never completes: the ring fills and stays full.
    let card = Arc::new(MemCard::null());
    // The null card's INFO register holds the map's constant, so the ring
    // opens; nothing serves it.
    let mut h2c = H2cQueue::open(card.clone(), cfg(2)).unwrap();
    let msgs: Vec<Vec<u8>> = (0..6).map(msg).collect();
    assert_eq!(h2c.send(&msgs).unwrap(), 4);
    assert!(!h2c.push(b"x").unwrap());
    assert_eq!(h2c.reap().unwrap(), 0);
    assert!(!h2c.wait(Duration::from_millis(1)).unwrap());
    assert_eq!(card.read_reg(&q::H2C.doorbell).unwrap(), 4);
}

#[test]
fn c2h_receives_in_order_and_reposts() {
    let card = Arc::new(MemCard::new());
    let mut c2h = C2hQueue::open(card.clone(), cfg(2)).unwrap();
    let mut got = vec![];
    let mut next = 0u32;
    for round in 0..20u32 {
        // More than a ring's worth: the rest waits in the engine's backlog.
        for _ in 0..(round % 7) {
            card.send_c2h(msg(next));
            next += 1;
        }
        while c2h.recv(3, &mut got).unwrap() > 0 {}
    }
    assert_eq!(got.len(), next as usize);
    for (i, m) in got.iter().enumerate() {
        assert_eq!(m, &msg(i as u32), "message {i}");
    }
}

#[test]
fn loopback_and_interrupts() {
    let card = Arc::new(MemCard::new());
    let mut h2c = H2cQueue::open(
        card.clone(),
        RingConfig {
            irq: Some(1),
            loopback: true,
            ..cfg(4)
        },
    )
    .unwrap();
    let mut c2h = C2hQueue::open(
        card.clone(),
        RingConfig {
            irq: Some(2),
            ..cfg(4)
        },
    )
    .unwrap();
    assert!(!h2c.wait(Duration::ZERO).unwrap());
    h2c.send(&[b"ping".to_vec(), b"pong!".to_vec()]).unwrap();
    assert!(h2c.wait(Duration::from_millis(10)).unwrap());
    assert_eq!(h2c.reap().unwrap(), 2);
    assert!(c2h.wait(Duration::from_millis(10)).unwrap());
    let mut got = vec![];
    c2h.recv(16, &mut got).unwrap();
    assert_eq!(got, [b"ping".to_vec(), b"pong!".to_vec()]);
    assert!(card.take_input().is_empty(), "looped back, not delivered");
    // One interrupt per batch of completions (the waits above found the
    // completions in memory before they needed the interrupt).
    assert!(card.wait_irq(1, Duration::ZERO).unwrap());
    assert!(!card.wait_irq(1, Duration::ZERO).unwrap());
}

#[test]
fn protocol_errors_stop_the_ring_and_say_why() {
    let card = Arc::new(MemCard::new());
    // A message larger than the slot buffer is refused by the host.
    let mut h2c = H2cQueue::open(card.clone(), cfg(3)).unwrap();
    let e = h2c.push(&[0u8; 257]).unwrap_err().to_string();
    assert!(e.contains("messages are 1 to 256 bytes"), "{e}");
    // A doorbell more than a ring ahead: OVERRUN.
    card.write_reg(&q::H2C.doorbell, 100).unwrap();
    let e = h2c.check().unwrap_err().to_string();
    assert!(e.contains("OVERRUN"), "{e}");

    // Ring sizes the engine does not offer are refused before touching it.
    let e = H2cQueue::open(card.clone(), cfg(13)).err().unwrap();
    assert!(e.to_string().contains("2 to 4096 entries"), "{e}");

    // The engine itself refuses a misaligned ring.
    card.write_reg(&q::C2H.ctrl, 0).unwrap();
    card.write_reg(&q::C2H.desc_lo, 8).unwrap();
    card.write_reg(&q::C2H.size, 3).unwrap();
    card.write_reg(&q::C2H.ctrl, 1).unwrap();
    assert_eq!(card.read_reg(&q::C2H.status).unwrap(), q::STATUS_BAD_CONFIG);
    assert_eq!(card.read_reg(&q::C2H.ctrl).unwrap() & 1, 0);
    // W1C.
    card.write_reg(&q::C2H.status, q::STATUS_BAD_CONFIG)
        .unwrap();
    assert_eq!(card.read_reg(&q::C2H.status).unwrap(), 0);

    // A C2H message larger than the posted buffers is dropped and the
    // host is told.
    let mut c2h = C2hQueue::open(card.clone(), cfg(3)).unwrap();
    card.send_c2h(vec![1; 300]);
    let e = c2h.recv(4, &mut vec![]).unwrap_err().to_string();
    assert!(e.contains("buffer too small (300 bytes)"), "{e}");
    assert_eq!(card.stats().c2h_dropped, 1);

    // Read-only registers answer SLVERR, holes DECERR, as the RTL would.
    let e = card.write32(q::H2C.head.addr, 1).unwrap_err();
    assert!(matches!(e, Error::Bus { resp: "SLVERR", .. }), "{e}");
    let e = card.read32(q::BASE + 0xF0).unwrap_err();
    assert!(matches!(e, Error::Bus { resp: "DECERR", .. }), "{e}");
}

#[test]
fn an_unmapped_buffer_is_a_dma_fault() {
    let card = Arc::new(MemCard::new());
    let mut h2c = H2cQueue::open(card.clone(), cfg(3)).unwrap();
    h2c.send(&[b"ok".to_vec()]).unwrap();
    assert_eq!(h2c.reap().unwrap(), 1);
    // Point the next descriptor somewhere unmapped, by hand.
    let desc_iova = (card.read_reg(&q::H2C.desc_hi).unwrap() as u64) << 32
        | card.read_reg(&q::H2C.desc_lo).unwrap() as u64;
    let d = weft_driver::queue::format::Descriptor {
        addr: 0x7,
        len: 4,
        id: 1,
        flags: 0,
    };
    card.host_memory()
        .lock()
        .unwrap()
        .write_iova(desc_iova + 16, &d.encode())
        .unwrap();
    card.write_reg(&q::H2C.doorbell, 2).unwrap();
    let e = h2c.check().unwrap_err().to_string();
    assert!(e.contains("DMA_FAULT"), "{e}");
}

#[test]
fn the_simulated_card_serves_the_queue_block() {
    let dev = Arc::new(SimDevice::open(Engine::RustHdl, &EngineOptions::default()).unwrap());
    let info = identify(dev.as_ref()).unwrap();
    let names: Vec<_> = info.blocks.iter().map(|b| b.name.unwrap()).collect();
    assert_eq!(
        names,
        ["id", "ctrl", "kv", "memops", "queue", "grad", "avm", "net"]
    );
    let d: Arc<dyn Device> = dev.clone();
    let mut h2c = H2cQueue::open(
        d.clone(),
        RingConfig {
            loopback: true,
            ..cfg(4)
        },
    )
    .unwrap();
    let mut c2h = C2hQueue::open(
        d,
        RingConfig {
            irq: Some(3),
            ..cfg(4)
        },
    )
    .unwrap();
    let msgs: Vec<Vec<u8>> = (0..40).map(msg).collect();
    let mut got = vec![];
    let mut at = 0;
    while got.len() < msgs.len() {
        at += h2c.send(&msgs[at..]).unwrap();
        h2c.reap().unwrap();
        if c2h.wait(Duration::from_millis(5)).unwrap() {
            c2h.recv(64, &mut got).unwrap();
        }
    }
    assert_eq!(got, msgs);
    assert_eq!(dev.queue_stats().h2c_descriptors, 40);
    // The RTL's registers are untouched by the interception.
    dev.write_reg(&weft_regs::ctrl::SCRATCH, 5).unwrap();
    assert_eq!(dev.read_reg(&weft_regs::ctrl::SCRATCH).unwrap(), 5);
}

#[test]
fn key_value_traffic_flows_through_the_rings() {
    use weft_model::kv_agg::packet::{self, AckStatus, Header};
    use weft_sim::kv_card::KvCard;
    use weft_sim::kv_rings::RingKvCard;
    let dev = Arc::new(
        SimDevice::with_geometry(
            Engine::RustHdl,
            weft_hdl::this_build(),
            6,
            &EngineOptions::default(),
        )
        .unwrap(),
    );
    let mut card = RingKvCard::new(dev.clone()).unwrap();
    card.write_reg(&weft_regs::kv::JOB, 1);
    let p = packet::encode(&Header::data(1, 2, 0, 2), &[(7, 5), (9, -3)]);
    card.deliver(p.clone());
    card.deliver(p);
    let mut acks = vec![];
    for _ in 0..50 {
        acks.extend(card.advance(32).acks);
        if acks.len() == 2 {
            break;
        }
    }
    assert_eq!(acks.len(), 2, "{acks:?}");
    assert_eq!(acks[0].status, AckStatus::New);
    assert_eq!(acks[1].status, AckStatus::Duplicate);
    let st = dev.queue_stats();
    assert_eq!(st.h2c_descriptors, 2, "both packets went through H2C");
    assert!(st.c2h_messages >= 2, "acks came back on C2H: {st:?}");
    assert_eq!(card.packets_sent(), 2);
    assert!(card.fault().is_none(), "{:?}", card.fault());
}
