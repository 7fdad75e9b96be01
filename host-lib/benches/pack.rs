//! The sender's packing rate on one core against the host-only baseline
//! ASK compares with: the same Zipf stream packed into weft packets (home
//! lanes, then the wire encoding a `weft kv send` puts on its socket),
//! and aggregated into a plain `HashMap<u32, i64>`.
//!
//! `cargo bench -p weft --bench pack`: criterion reports both as tuples
//! per second; their ratio is the figure (docs/transports.md).

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::collections::HashMap;
use weft::kv::gen::{zipf, ZipfSpec};
use weft::kv::pack::{Packer, Placement};
use weft_model::kv_agg::packet::{self, Header};
use weft_model::kv_agg::Config;

const TUPLES: u64 = 1_000_000;

fn stream() -> Vec<(u32, i32)> {
    let spec = ZipfSpec::parse(&format!("zipf:1.2:100000:{TUPLES}"), 1, 7).expect("a valid spec");
    zipf(&spec)
        .expect("a stream")
        .into_iter()
        .map(|t| (t.key, t.value))
        .collect()
}

fn packing(c: &mut Criterion) {
    let s = stream();
    let cfg = Config {
        lanes: 8,
        slot_bits: 9,
        senders: 16,
    };
    let max = (weft::kv::MTU_PAYLOAD_BYTES - packet::HEADER_BYTES) / packet::TUPLE_BYTES;
    let mut g = c.benchmark_group("sender_packing");
    g.throughput(Throughput::Elements(TUPLES));
    g.sample_size(20);
    g.bench_function(BenchmarkId::new("weft_packets", TUPLES), |b| {
        b.iter(|| {
            let mut p = Packer::new(Placement::new(&cfg, max));
            let mut bytes = 0usize;
            let mut seq = 0u32;
            for &(k, v) in &s {
                p.push(k, v);
                if p.pending() >= max {
                    let (ts, _) = p.take(max);
                    let h = Header::data(1, 0, seq, ts.len() as u16);
                    bytes += packet::encode(&h, &ts).len();
                    seq += 1;
                }
            }
            black_box(bytes)
        })
    });
    g.bench_function(BenchmarkId::new("hashmap_baseline", TUPLES), |b| {
        b.iter(|| {
            let mut m: HashMap<u32, i64> = HashMap::new();
            for &(k, v) in &s {
                *m.entry(k).or_insert(0) += v as i64;
            }
            black_box(m.len())
        })
    });
    g.finish();
}

criterion_group!(benches, packing);
criterion_main!(benches);
