//! The host daemon's synchronous core: a state machine that packs tuples,
//! sends them as UDP frames through the network model to the card's wire
//! port, keeps per-sender windows, retransmits, takes the card's acks off
//! the wire and its record frames off the host port, and merges spills and
//! the final flush — all in the card's device time, through the card's two
//! seams only (registers and frames, [`Card`]).
//!
//! The daemon owns the simulated world around the card: worker endpoints
//! `0..workers` (each a host with its own MAC, IP and UDP port,
//! [`crate::card::addr::worker`]) and the card's wire port (endpoint
//! `workers`), joined by a [`Network`] that loses, duplicates, reorders and
//! delays frames in both directions: data frames on their way to the card
//! and acks on their way back, as on a real network. Record frames come to
//! the collector on the card's host port ([`crate::card::addr::host`]),
//! which loses nothing; a gap in their sequence numbers fails the job.
//!
//! Time: the card's cycle counter ([`FramePorts::cycles`]) is the clock.
//! Each [`Daemon::step`] delivers the network's due frames, lets the
//! senders transmit, and advances the card to the next event (a network
//! arrival, a retransmission deadline) or by [`JobOptions::quantum`] cycles
//! while the card is busy. While the daemon has nothing to do, no simulated
//! time passes.

use super::flow::{parse_ack, Flow, Transmission};
use super::pack::{Packer, Placement};
use super::records::{Records, Taken};
use super::recovery::{DelayWindow, Recovery};
use super::{JobOptions, KvError, Result, Stats};
use crate::card::{addr, Card};
use std::collections::HashMap;
use weft_driver::{Device, FramePorts, Port, RegisterAccess};
use weft_model::kv_agg::packet;
use weft_model::kv_agg::{Config, WINDOW};
use weft_model::net::Network;
use weft_model::wire::{self, build_frame, parse_built, Endpoint};
use weft_regs::{kv, net};

/// What one [`Daemon::step`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Work is in progress: call `step` again.
    Busy,
    /// Nothing to do until more tuples are pushed or the job finishes:
    /// every packet sent is acknowledged and no full packet is waiting.
    Idle,
}

/// The job's result: exact per-key sums and what it took.
#[derive(Clone, Debug)]
pub struct JobOutput {
    /// Per-key sums, exact as `i64`.
    pub sums: HashMap<u32, i64>,
    /// Statistics.
    pub stats: Stats,
}

/// One worker: its address on the simulated network and its flow.
#[derive(Debug)]
struct Sender {
    me: Endpoint,
    flow: Flow,
}

/// Full frames per sender of queue each sender's delay window allows above
/// its smallest round trip ([`DelayWindow`]): measured on the main
/// command's stream, 8 keeps the lossless rate of a full sequence window
/// while round trips, and so loss recovery, stay short.
const HEADROOM_FRAMES: u64 = 8;

/// The host daemon of one aggregation job.
pub struct Daemon {
    opts: JobOptions,
    cfg: Config,
    window: u32,
    max_tuples: usize,
    senders: Vec<Sender>,
    net: Network,
    card_port: usize,
    card_ep: Endpoint,
    collector: Endpoint,
    finishing: bool,
    flush_done: bool,
    records: Records,
    stats: Stats,
    start_cycles: u64,
}

/// The cycles a flush may take before the daemon gives up: generous, since
/// the card's flush walks every slot row and the records then queue for
/// the host port.
fn flush_budget(cfg: &Config) -> u64 {
    64 * (1u64 << cfg.slot_bits) + 200_000
}

fn regs_err(e: weft_driver::Error) -> KvError {
    KvError::Card(e)
}

/// Configure the card for a key-value job: its own addresses (`me`), the
/// collector on its host port, record packing, engines on.
pub fn configure(card: &Card, me: &Endpoint, collector: &Endpoint) -> Result<()> {
    let dev = card.regs();
    let w = |r: &weft_regs::Register, v: u32| dev.write_reg(r, v).map_err(regs_err);
    card.set_address_to(me).map_err(regs_err)?;
    let (hi, lo) = wire::mac_regs(&collector.mac);
    w(&net::KV_MAC_HI, hi)?;
    w(&net::KV_MAC_LO, lo)?;
    w(&net::KV_IP, u32::from(collector.ip))?;
    w(&net::KV_PORT, collector.port as u32)?;
    w(&net::PACK_MAX, wire::KV_DEFAULT_RECORDS as u32)?;
    w(&net::PACK_WAIT, addr::PACK_WAIT)?;
    w(&net::PACK_SEQ, 0)?;
    card.enable_engines().map_err(regs_err)
}

/// Start a job on a configured card: the new job id goes in first, so
/// stale packets of an earlier job still queued at the card are dropped as
/// malformed instead of being aggregated; then `flush` drains the input,
/// flushes and waits for the flush's FIN, discarding whatever table
/// contents an aborted job left; then the replacement policy, and a reset
/// clears the windows and the counters those steps touched. Record frames
/// of the job are numbered from 0.
pub fn reset_job(
    dev: &dyn Device,
    job: u16,
    replace: bool,
    flush: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let w = |r: &weft_regs::Register, v: u32| dev.write_reg(r, v).map_err(regs_err);
    w(&kv::JOB, job as u32)?;
    flush()?;
    w(&kv::CTRL, kv::CTRL_REPLACE.set(0, replace as u32))?;
    w(&kv::CMD, kv::CMD_RESET.set(0, 1))?;
    w(&net::PACK_SEQ, 0)
}

/// The card's key-value geometry from its `kv.GEOMETRY` register.
pub fn geometry(dev: &dyn Device) -> Result<(Config, u32)> {
    let geo = dev.read_reg(&kv::GEOMETRY).map_err(regs_err)?;
    let cfg = Config {
        lanes: kv::GEOMETRY_LANES.get(geo) as usize,
        slot_bits: kv::GEOMETRY_SLOT_BITS.get(geo),
        senders: kv::GEOMETRY_SENDERS.get(geo) as usize,
    };
    let window = kv::GEOMETRY_WINDOW.get(geo);
    if cfg.lanes == 0 || cfg.lanes > 16 || cfg.slot_bits == 0 || cfg.slot_bits > 20 || window == 0 {
        return Err(KvError::Geometry(format!(
            "GEOMETRY register reads {geo:#010x}: {} lanes, 2^{} slots per bank, {} senders, window {window}",
            cfg.lanes, cfg.slot_bits, cfg.senders
        )));
    }
    Ok((cfg, window))
}

impl Daemon {
    /// Open a job on `card`: read the card's geometry, configure its
    /// addresses, and start the job ([`reset_job`]).
    pub fn open(card: &Card, opts: JobOptions) -> Result<Self> {
        opts.validate()?;
        let dev = card.regs();
        let frames = card.frames().map_err(KvError::from_card)?;
        let (cfg, window) = geometry(dev)?;
        if opts.workers > cfg.senders {
            return Err(KvError::Options(format!(
                "{} workers, but the card keeps sequence windows for {} senders",
                opts.workers, cfg.senders
            )));
        }
        if opts.workers > addr::MAX_WORKERS {
            return Err(KvError::Options(format!(
                "{} workers: the simulated network has addresses for {}",
                opts.workers,
                addr::MAX_WORKERS
            )));
        }
        let window = window.min(WINDOW);
        let max_tuples = opts.max_tuples();
        let collector = Endpoint {
            port: addr::KV_COLLECTOR_PORT,
            ..addr::host()
        };
        configure(card, &addr::card(), &collector)?;
        let budget = flush_budget(&cfg);
        reset_job(dev, opts.job, opts.replace, || {
            // Drain what an earlier job left at the card's input.
            let start = frames.cycles();
            while frames.busy() {
                frames.advance(opts.quantum).map_err(regs_err)?;
                if frames.cycles() - start > budget {
                    return Err(KvError::Drain {
                        cycles: frames.cycles() - start,
                    });
                }
            }
            frames.advance(4 * opts.quantum).map_err(regs_err)?;
            dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1))
                .map_err(regs_err)?;
            wait_fin(frames, opts.quantum, budget, |_| {})
        })?;

        // The slowest acknowledgement: a frame's longest network delay
        // there and back, the card's input queued with every sender's
        // window (twice, for duplicates and retransmissions queued with
        // them), the record frames queued on the way, and the step
        // granularity. A timeout above it never fires for a packet that is
        // merely queued, so retransmissions cannot snowball.
        let beats_per_frame =
            (wire::HEADERS + packet::HEADER_BYTES + max_tuples * packet::TUPLE_BYTES).div_ceil(64)
                as u64;
        let rto = opts.rto.unwrap_or(
            4 * opts.net.max_delay()
                + 3 * opts.workers as u64 * window as u64 * beats_per_frame
                + 4 * opts.quantum
                + 512,
        );
        let placement = Placement::new(&cfg, max_tuples);
        let senders = (0..opts.workers)
            .map(|i| Sender {
                me: addr::worker(i),
                flow: Flow::new(
                    opts.job,
                    i as u16,
                    Packer::new(placement.clone()),
                    max_tuples,
                    window,
                    Recovery::new(2 * opts.quantum, rto),
                    DelayWindow::new(
                        window,
                        HEADROOM_FRAMES * opts.workers as u64 * beats_per_frame,
                    ),
                ),
            })
            .collect();
        let net = Network::new(opts.net, opts.seed)?;
        let stats = Stats {
            card: card.name(),
            workers: opts.workers,
            slots: cfg.slots(),
            replace: opts.replace,
            rto,
            ..Stats::default()
        };
        Ok(Self {
            card_port: opts.workers,
            card_ep: Endpoint {
                port: wire::KV_PORT,
                ..addr::card()
            },
            collector,
            opts,
            cfg,
            window,
            max_tuples,
            senders,
            net,
            finishing: false,
            flush_done: false,
            records: Records::new(0),
            stats,
            start_cycles: frames.cycles(),
        })
    }

    /// The card geometry the job runs on.
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// Queue one tuple of `worker`.
    pub fn push(&mut self, worker: usize, key: u32, value: i32) -> Result<()> {
        let workers = self.senders.len();
        let s = self
            .senders
            .get_mut(worker)
            .ok_or(KvError::Worker { worker, workers })?;
        s.flow.push(key, value);
        self.stats.tuples += 1;
        Ok(())
    }

    /// Whether the daemon should take more input before it lets device
    /// time pass: some sender lacks a full packet, none holds a whole
    /// window's worth of tuples, and input is still open. A front that
    /// takes input exactly when this says so makes a job's course in
    /// device time depend on its input and seed alone, not on how fast the
    /// producer happens to run.
    pub fn wants_input(&self) -> bool {
        let bound = self.window as usize * self.max_tuples;
        let pending = || self.senders.iter().map(|s| s.flow.pending());
        !self.finishing && pending().any(|p| p < self.max_tuples) && pending().all(|p| p < bound)
    }

    /// No more tuples will come: from now on partly filled packets are sent
    /// too, instead of waiting to fill up.
    pub fn close_input(&mut self) {
        self.finishing = true;
    }

    /// Transmit: each sender's due retransmissions, then its new packets
    /// while its windows allow, as frames from its address into the
    /// network.
    fn transmit(&mut self, now: u64) -> Result<()> {
        let (net, stats, card_ep) = (&mut self.net, &mut self.stats, &self.card_ep);
        for (id, s) in self.senders.iter_mut().enumerate() {
            let me = &s.me;
            s.flow
                .transmit(now, self.finishing, self.opts.max_tries, |payload, why| {
                    stats.transmissions += 1;
                    match why {
                        Transmission::New { misplaced } => {
                            stats.packets += 1;
                            stats.misplaced += misplaced as u64;
                        }
                        Transmission::Timeout => {
                            stats.timeouts += 1;
                            stats.retransmissions += 1;
                        }
                        Transmission::Lost => {
                            stats.fast_retransmissions += 1;
                            stats.retransmissions += 1;
                        }
                        Transmission::TailCopy => stats.tail_copies += 1,
                    }
                    net.send(now, id, self.card_port, build_frame(me, card_ep, payload));
                })
                .map_err(|st| KvError::Stalled {
                    sender: id,
                    seq: st.seq,
                    tries: st.tries,
                })?;
        }
        Ok(())
    }

    /// An ack frame reached worker `id` at `now`: it retires the packet it
    /// names, and its round trip feeds the sender's recovery.
    fn ack(&mut self, id: usize, frame: &[u8], now: u64) {
        let Some(p) = parse_built(frame).filter(|p| p.src == self.card_ep) else {
            return;
        };
        let Some(ack) = parse_ack(&p.payload) else {
            return;
        };
        self.stats.acks += 1;
        if ack.duplicate {
            self.stats.duplicate_acks += 1;
        }
        // Matched by (sender, seq): an ack for a packet already retired
        // (a duplicate's, or a retransmission's) finds nothing.
        if ack.sender as usize == id {
            if let Some(s) = self.senders.get_mut(id) {
                let n = s.flow.on_ack(now, ack.seq, ack.base, self.finishing);
                self.stats.cumulative_retired += n.saturating_sub(1) as u64;
            }
        }
    }

    /// A frame reached the collector on the card's host port: records
    /// merge; the flush's FIN frame ends the job's flush.
    fn record_frame(&mut self, frame: &[u8]) -> Result<()> {
        let Some(p) = parse_built(frame) else {
            return Ok(());
        };
        if p.src != self.card_ep || p.dst != self.collector {
            return Ok(());
        }
        if self.records.take(&p.payload)? == Taken::Fin {
            self.flush_done = true;
        }
        Ok(())
    }

    /// Take what the card sent: acks into the network back to their
    /// workers, record frames to the collector.
    fn absorb(&mut self, frames: &dyn FramePorts) -> Result<()> {
        let now = frames.cycles();
        for f in frames.recv().map_err(regs_err)? {
            match f.port {
                Port::Wire => {
                    // An ack goes back over the network to its worker.
                    let to = (0..self.senders.len())
                        .find(|&i| f.bytes.get(0..6) == Some(&self.senders[i].me.mac[..]));
                    if let Some(to) = to {
                        self.net.send(now, self.card_port, to, f.bytes);
                    }
                }
                Port::Host => self.record_frame(&f.bytes)?,
            }
        }
        Ok(())
    }

    /// One step of the job: deliver due frames (to the card, or acks to
    /// their workers), transmit, and advance the card to the next event.
    pub fn step(&mut self, card: &Card) -> Result<Poll> {
        let frames = card.frames().map_err(KvError::from_card)?;
        let now = frames.cycles();
        for d in self.net.deliver_due(now) {
            if d.dst == self.card_port {
                self.stats.beats += d.payload.len().div_ceil(64) as u64;
                frames.send(Port::Wire, &d.payload).map_err(regs_err)?;
            } else {
                self.ack(d.dst, &d.payload, now);
            }
        }
        self.transmit(now)?;
        // With nothing unacknowledged, transmit found nothing ready (an
        // empty window never blocks it). Copies still in the network then
        // belong to acknowledged packets, are duplicates, and need not be
        // waited for.
        let unacked = self.senders.iter().any(|s| !s.flow.all_acked());
        if !unacked && !frames.busy() {
            return Ok(Poll::Idle);
        }
        let next_event = self
            .senders
            .iter()
            .filter_map(|s| s.flow.next_event())
            .chain(self.net.next_due())
            .min();
        let q = self.opts.quantum;
        let cycles = match next_event {
            // While the card works, step in quanta so acks come back
            // promptly and free window space.
            Some(e) if frames.busy() => e.saturating_sub(now).clamp(1, q),
            None => q,
            Some(e) => e.saturating_sub(now).clamp(1, 4 * q),
        };
        frames.advance(cycles).map_err(regs_err)?;
        self.absorb(frames)?;
        Ok(Poll::Busy)
    }

    /// Finish the job: send what is left, wait until every packet is
    /// acknowledged, flush the table, collect record frames until the
    /// flush's FIN, and return the sums.
    pub fn finish(mut self, card: &Card) -> Result<JobOutput> {
        self.close_input();
        let frames = card.frames().map_err(KvError::from_card)?;
        let dev = card.regs();
        let budget = flush_budget(&self.cfg);
        let mut acked_at = None;
        while self.step(card)? == Poll::Busy {
            if self.senders.iter().all(|s| s.flow.all_acked()) {
                let t0 = *acked_at.get_or_insert(frames.cycles());
                if frames.cycles() - t0 > budget {
                    return Err(KvError::Drain {
                        cycles: frames.cycles() - t0,
                    });
                }
            } else {
                acked_at = None;
            }
        }
        // Every packet is acknowledged, so every tuple has entered the
        // engine; the flush command follows all their spills.
        dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1))
            .map_err(regs_err)?;
        let start = frames.cycles();
        while !self.flush_done {
            frames.advance(self.opts.quantum).map_err(regs_err)?;
            self.absorb(frames)?;
            if frames.cycles() - start > budget {
                return Err(KvError::FlushTimeout {
                    cycles: frames.cycles() - start,
                });
            }
        }
        read_counters(dev, &mut self.stats)?;
        let st = &mut self.stats;
        st.cycles = frames.cycles() - self.start_cycles;
        self.records.fill(st);
        let net = self.net.stats();
        st.net_lost = net.lost;
        st.net_duplicated = net.duplicated;
        st.net_reordered = net.reordered;
        let srtts: Vec<u64> = self.senders.iter().filter_map(|s| s.flow.srtt()).collect();
        st.srtt = srtts.iter().sum::<u64>() / (srtts.len() as u64).max(1);
        st.finish_ratios();
        Ok(JobOutput {
            sums: self.records.sums,
            stats: self.stats,
        })
    }
}

/// Read the engine's counters into `st` (LO first: it latches HI).
pub fn read_counters(dev: &dyn Device, st: &mut Stats) -> Result<()> {
    let mut c = [0u64; 9];
    for (i, v) in c.iter_mut().enumerate() {
        let lo = dev.read_reg(&kv::COUNTERS[2 * i]).map_err(regs_err)? as u64;
        let hi = dev.read_reg(&kv::COUNTERS[2 * i + 1]).map_err(regs_err)? as u64;
        *v = hi << 32 | lo;
    }
    {
        st.accepted_packets = c[0];
        st.tuples_in = c[1];
        st.aggregated_on_nic = c[2];
        st.spilled = c[3];
        st.evicted = c[4];
        st.overflows = c[5];
        st.duplicates_dropped = c[6];
        st.malformed = c[7];
        st.window_drops = c[8];
    }
    Ok(())
}

/// Advance the card until a record frame with FIN arrives on its host
/// port, handing every frame to `sink`.
fn wait_fin(
    frames: &dyn FramePorts,
    quantum: u64,
    budget: u64,
    mut sink: impl FnMut(&[u8]),
) -> Result<()> {
    let start = frames.cycles();
    loop {
        frames.advance(quantum).map_err(regs_err)?;
        for f in frames.recv().map_err(regs_err)? {
            sink(&f.bytes);
            let fin = f.port == Port::Host
                && parse_built(&f.bytes).is_some_and(|p| {
                    p.src.port == wire::KV_PORT
                        && p.payload.len() >= 16
                        && p.payload[1] & wire::KV_FLAG_FIN != 0
                });
            if fin {
                return Ok(());
            }
        }
        if frames.cycles() - start > budget {
            return Err(KvError::FlushTimeout {
                cycles: frames.cycles() - start,
            });
        }
    }
}

/// Run a whole job synchronously: open, push every `(worker, key, value)`,
/// finish.
pub fn run(
    card: &Card,
    opts: JobOptions,
    tuples: impl IntoIterator<Item = (usize, u32, i32)>,
) -> Result<JobOutput> {
    let mut d = Daemon::open(card, opts)?;
    for (w, k, v) in tuples {
        d.push(w, k, v)?;
    }
    d.finish(card)
}
