//! The QDMA driver's descriptor rate and the kernel-bypass path's packet
//! rate, on one core.
//!
//! * `qdma_descriptors/driver/B`: `QueuePair::send` of 64-byte frames (copy
//!   into the DMA buffer, descriptor, a doorbell every B) against the
//!   behavioural QDMA model with its H2C engine stubbed to take every
//!   descriptor the moment its doorbell rings (`ModelOptions::sink_h2c`):
//!   the driver's own ceiling.
//! * `qdma_descriptors/raw/B`: the same loop with only the descriptor and
//!   doorbell writes (no frame copy, no reclaim): the baseline.
//! * `qdma_end_to_end/DEVICE`: frames from the host port to the wire through
//!   `weft_top` on Verilator, through the QDMA queues (`sim:qdma`) and
//!   straight onto the top's port (`sim:verilator`).
//!
//! `cargo bench -p weft --bench qdma`: criterion reports each as elements
//! per second; the ratios are the figures (docs/qdma.md).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::sync::Arc;
use weft::Card;
use weft_driver::qdma::regs::{doorbell, DB_H2C_PIDX};
use weft_driver::qdma::{Bar, Qdma, QdmaBus, QdmaConfig};
use weft_driver::Port;
use weft_sim::device::SimKind;
use weft_sim::qdma::{ModelOptions, QdmaModel};
use weft_sim::{SimDevice, SimulatorOptions};

const DESCRIPTORS: u64 = 10_000;

fn descriptors(c: &mut Criterion) {
    let mut g = c.benchmark_group("qdma_descriptors");
    g.throughput(Throughput::Elements(DESCRIPTORS));
    g.sample_size(20);
    let frame = [0x5au8; 64];
    for batch in [1usize, 8, 32, 64] {
        let card = SimDevice::open(SimKind::Model, &SimulatorOptions::default()).expect("card");
        let m = Arc::new(QdmaModel::new(
            card,
            ModelOptions {
                sink_h2c: true,
                ..ModelOptions::default()
            },
        ));
        let cfg = QdmaConfig {
            batch,
            ..QdmaConfig::default()
        };
        let (_q, mut pairs) = Qdma::bring_up(m.clone(), cfg).expect("bring-up");
        let q = &mut pairs[0];
        g.bench_function(BenchmarkId::new("driver", batch), |b| {
            b.iter(|| {
                for _ in 0..DESCRIPTORS {
                    while !q.send(&frame).expect("send") {}
                }
                q.flush().expect("flush");
            })
        });
        let ring = m.dma_alloc(1024 * 16).expect("ring");
        g.bench_function(BenchmarkId::new("raw", batch), |b| {
            let mut pidx = 0usize;
            b.iter(|| {
                for k in 0..DESCRIPTORS as usize {
                    let d = [0u8; 16];
                    ring.write(pidx * 16, &d).expect("descriptor");
                    pidx = (pidx + 1) % 1023;
                    if (k + 1) % batch == 0 {
                        m.write32(Bar::Qdma, doorbell(0, DB_H2C_PIDX), pidx as u32)
                            .expect("doorbell");
                    }
                }
            })
        });
    }
    g.finish();
}

const FRAMES: u64 = 200;

fn end_to_end(c: &mut Criterion) {
    if !weft_sim::simulator::verilator_usable() {
        eprintln!("qdma_end_to_end skipped: needs Verilator");
        return;
    }
    let mut g = c.benchmark_group("qdma_end_to_end");
    g.throughput(Throughput::Elements(FRAMES));
    g.sample_size(10);
    let mut frame = vec![0u8; 256];
    frame[..6].copy_from_slice(&[2, 0, 0, 0, 0, 0x42]);
    frame[12..14].copy_from_slice(&[0x88, 0xb5]);
    for dev in ["sim:qdma", "sim:verilator"] {
        let card = Card::open(dev).expect("card");
        let f = card.frames_arc().expect("frames");
        g.bench_function(BenchmarkId::from_parameter(dev), |b| {
            b.iter(|| {
                for _ in 0..FRAMES {
                    f.send(Port::Host, &frame).expect("send");
                }
                let mut n = 0;
                while n < FRAMES as usize {
                    f.advance(64).expect("advance");
                    n += f.recv().expect("recv").len();
                }
            })
        });
    }
    g.finish();
}

criterion_group!(benches, descriptors, end_to_end);
criterion_main!(benches);
