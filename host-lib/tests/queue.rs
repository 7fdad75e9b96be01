//! The host library's queue API on the simulated card, and the queue
//! benchmark's plumbing (tiny counts: figures are not checked).

use std::time::Duration;
use weft::queue::{QueueOptions, Queues};
use weft::Nic;

#[test]
fn queues_on_the_simulated_card_loop_back() {
    let nic = Nic::open("sim").unwrap();
    let mut q = Queues::open(
        &nic,
        &QueueOptions {
            entries: 16,
            max_message: 128,
            irq: None,
            loopback: true,
        },
    )
    .unwrap();
    assert_eq!(q.kind(), "weft-rings");
    let msgs: Vec<Vec<u8>> = (0..50u8).map(|i| vec![i; 1 + i as usize]).collect();
    let refs: Vec<&[u8]> = msgs.iter().map(|m| m.as_slice()).collect();
    let mut got = vec![];
    // The modelled engine loops a batch back when its doorbell is
    // written, so each chunk is there to receive at once.
    for chunk in refs.chunks(10) {
        q.send_all(chunk, Duration::from_secs(5)).unwrap();
        let want = got.len() + chunk.len();
        while got.len() < want {
            let r = q.recv(64, Duration::ZERO).unwrap();
            assert!(!r.is_empty(), "the looped-back messages are there");
            got.extend(r);
        }
    }
    assert_eq!(got, msgs);
}

#[test]
fn queue_bench_runs() {
    let r = weft::queue_bench::run(
        &weft::queue_bench::QueueBenchOptions {
            descriptors: 2_000,
            sim_descriptors: 500,
            ..Default::default()
        },
        None,
    )
    .unwrap();
    assert_eq!(r.rows.len(), 4);
    assert!(r
        .rows
        .iter()
        .all(|x| x.double_per_s > 0.0 && x.sim_per_s > 0.0));
}
