//! `weft bench queue`: ring throughput on one core.
//!
//! For batch sizes 1, 8, 32 and 64, descriptors per second of the H2C ring
//! code (copy the message into the slot buffer, write the descriptor, one
//! doorbell per batch, reap the completions) against:
//! - the in-memory card double (`weft_sim::mem_card::MemCard`), whose
//!   modelled queue engine fetches each descriptor and payload and writes
//!   a completion when the doorbell is written;
//! - the simulated card (`SimDevice`), where the same engine model is
//!   reached through the card's register interception and its payloads
//!   enter the card's input stream (the RTL is not stepped);
//!
//! beside the ceiling: the same loop with the descriptor writes and the
//! doorbell alone, on a double whose queue registers are plain memory. All
//! in one run, so the ratios compare like with like; nothing here is a
//! pass/fail test.

use crate::Result;
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;
use weft_driver::queue::format::Descriptor;
use weft_driver::queue::{H2cQueue, RingConfig};
use weft_driver::{Device, RegisterAccess};
use weft_sim::mem_card::MemCard;
use weft_sim::{Engine, EngineOptions, SimDevice};

/// Batch sizes measured.
pub const BATCHES: [usize; 4] = [1, 8, 32, 64];

/// How much to run.
#[derive(Clone, Debug)]
pub struct QueueBenchOptions {
    /// Descriptors per measurement on the double and the ceiling.
    pub descriptors: u64,
    /// Descriptors per measurement on the simulated card.
    pub sim_descriptors: u64,
    /// Message bytes.
    pub message: usize,
    /// log2 of the ring entries.
    pub log2: u32,
}

impl Default for QueueBenchOptions {
    fn default() -> Self {
        Self {
            descriptors: 400_000,
            sim_descriptors: 100_000,
            message: 64,
            log2: 8,
        }
    }
}

/// One batch size.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// Descriptors per doorbell.
    pub batch: usize,
    /// Ceiling: descriptor writes and doorbells only, per second.
    pub ceiling_per_s: f64,
    /// The ring code on the in-memory double, per second.
    pub double_per_s: f64,
    /// `double_per_s / ceiling_per_s`.
    pub double_ratio: f64,
    /// The ring code on the simulated card, per second.
    pub sim_per_s: f64,
    /// `sim_per_s / ceiling_per_s`.
    pub sim_ratio: f64,
}

/// The whole run.
#[derive(Clone, Debug, Serialize)]
pub struct QueueBench {
    /// Message bytes.
    pub message: usize,
    /// Ring entries.
    pub entries: u32,
    /// Descriptors per measurement (double, ceiling).
    pub descriptors: u64,
    /// Descriptors per measurement (simulated card).
    pub sim_descriptors: u64,
    /// Per batch size.
    pub rows: Vec<Row>,
}

fn ring_loop(dev: Arc<dyn Device>, o: &QueueBenchOptions, batch: usize, n: u64) -> Result<f64> {
    let mut h2c = H2cQueue::open(
        dev,
        RingConfig {
            log2: o.log2,
            buf_size: o.message,
            irq: None,
            loopback: false,
        },
    )?;
    let msg = vec![0x5au8; o.message];
    let msgs: Vec<&[u8]> = vec![msg.as_slice(); batch];
    let t0 = Instant::now();
    let mut done = 0u64;
    while done < n {
        let k = h2c.send(&msgs)?;
        h2c.reap()?;
        done += k as u64;
        if k == 0 {
            return Err(crate::Error::Check(
                "the ring made no progress (the card completed nothing)".into(),
            ));
        }
    }
    Ok(done as f64 / t0.elapsed().as_secs_f64())
}

fn ceiling_loop(o: &QueueBenchOptions, batch: usize, n: u64) -> Result<f64> {
    let dev = MemCard::null();
    let entries = 1u32 << o.log2;
    let desc = dev.dma_alloc(entries as usize * 16)?;
    let base = 1u64 << 40;
    let t0 = Instant::now();
    let mut tail = 0u32;
    let mut done = 0u64;
    while done < n {
        for _ in 0..batch {
            let slot = tail & (entries - 1);
            let d = Descriptor {
                addr: base + slot as u64 * o.message as u64,
                len: o.message as u32,
                id: slot as u16,
                flags: 0,
            };
            desc.write(slot as usize * 16, &d.encode())?;
            tail = tail.wrapping_add(1);
        }
        dev.write_reg(&weft_regs::queue::H2C.doorbell, tail)?;
        done += batch as u64;
    }
    Ok(done as f64 / t0.elapsed().as_secs_f64())
}

/// Run the benchmark; `progress` hears what runs.
pub fn run(o: &QueueBenchOptions, progress: Option<&dyn Fn(&str)>) -> Result<QueueBench> {
    let say = |m: &str| {
        if let Some(p) = progress {
            p(m)
        }
    };
    say("building the simulated card");
    let sim = Arc::new(SimDevice::open(Engine::RustHdl, &EngineOptions::default())?);
    let mut rows = vec![];
    for &batch in &BATCHES {
        say(&format!("batch {batch}: ceiling"));
        let ceiling = ceiling_loop(o, batch, o.descriptors)?;
        say(&format!("batch {batch}: in-memory double"));
        let card = Arc::new(MemCard::new());
        card.discard_input();
        let double = ring_loop(card, o, batch, o.descriptors)?;
        say(&format!("batch {batch}: simulated card"));
        let s = ring_loop(sim.clone(), o, batch, o.sim_descriptors)?;
        // The payloads went into the card's input stream; nothing steps
        // the RTL here, so drop them before the next batch size.
        sim.discard_input();
        rows.push(Row {
            batch,
            ceiling_per_s: ceiling,
            double_per_s: double,
            double_ratio: double / ceiling,
            sim_per_s: s,
            sim_ratio: s / ceiling,
        });
    }
    Ok(QueueBench {
        message: o.message,
        entries: 1 << o.log2,
        descriptors: o.descriptors,
        sim_descriptors: o.sim_descriptors,
        rows,
    })
}
