//! The kernel-bypass path: weft's QDMA driver against the behavioural
//! QDMA model in front of `weft_top` (`sim:qdma`).

use std::sync::Arc;
use weft::card::Card;
use weft_driver::qdma::{Qdma, QdmaCard, QdmaConfig};
use weft_driver::{FramePorts, Port};
use weft_sim::device::SimKind;
use weft_sim::qdma::{ModelOptions, QdmaModel};
use weft_sim::{SimDevice, SimulatorOptions};

fn frame(dst_last: u8, len: usize, tag: u32) -> Vec<u8> {
    // An Ethernet frame not addressed to the card: the top passes it on
    // unchanged (host to wire, wire to host).
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, dst_last]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 0x99]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f[14..18].copy_from_slice(&tag.to_be_bytes());
    f
}

fn engine() -> SimKind {
    if weft_sim::verilator::toolchain().is_ok() {
        SimKind::Verilator
    } else {
        SimKind::RustHdl
    }
}

fn model(opts: ModelOptions) -> Arc<QdmaModel> {
    let card = SimDevice::open(engine(), &SimulatorOptions::default()).unwrap();
    Arc::new(QdmaModel::new(card, opts))
}

#[test]
fn frames_cross_both_ways_through_the_queues() {
    let m = model(ModelOptions::default());
    let (q, pairs) = Qdma::bring_up(m.clone(), QdmaConfig::default()).unwrap();
    let card = QdmaCard::new("sim:qdma".into(), q, pairs, m.clone());
    for i in 0..4 {
        card.send(Port::Host, &frame(1, 60 + i, i as u32)).unwrap();
        card.send(Port::Wire, &frame(2, 60 + i, 100 + i as u32))
            .unwrap();
    }
    let mut got = vec![];
    for _ in 0..100 {
        card.advance(200).unwrap();
        got.extend(card.recv().unwrap());
        if got.len() == 8 {
            break;
        }
    }
    eprintln!("{:?} {:?}", m.stats(), m.faults());
    assert_eq!(got.len(), 8, "{:?} {:?}", m.stats(), m.faults());
}
