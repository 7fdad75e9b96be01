//! The host daemon's synchronous core: a state machine that packs tuples,
//! sends them through the network model, keeps per-sender windows,
//! retransmits, and merges spills and the final flush, all in simulated
//! cycles against a [`KvCard`].
//!
//! The daemon owns the simulated world around the card: worker endpoints
//! `0..workers` and the card's network port (endpoint `workers`) joined by a
//! [`Network`]. Packets from the workers cross the network (loss,
//! duplication, reordering, delay); acknowledgements and records come back
//! through the card's host queue, which is lossless and in order, and reach
//! the daemon at the end of the [`KvCard::advance`] call that produced them.
//! (On a real deployment acks would cross the network too; modelling them
//! as lossless keeps the reliability scheme the same, since a lost ack only
//! looks like a lost packet to the sender and causes a retransmission that
//! the card acknowledges as a duplicate.)
//!
//! Time: the card's cycle counter is the clock. Each [`Daemon::step`]
//! delivers the network's due packets, lets the senders transmit, and
//! advances the card to the next event (a network arrival, a retransmission
//! deadline) or by [`JobOptions::quantum`] cycles while the card is busy.
//! While the daemon has nothing to do, no simulated time passes.

use super::pack::{Packer, Placement};
use super::{JobOptions, KvError, Result, Stats};
use std::collections::{BTreeMap, HashMap};
use weft_model::kv_agg::packet::{self, AckStatus, Header, RecordKind};
use weft_model::kv_agg::{Config, WINDOW};
use weft_regs::kv;
use weft_sim::kv_card::{CardOutput, KvCard};
use weft_sim::net::Network;

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

/// A packet sent and not yet acknowledged.
#[derive(Debug)]
struct Unacked {
    bytes: Vec<u8>,
    /// Retransmit when the clock reaches this cycle.
    deadline: u64,
    /// Transmissions so far.
    tries: u32,
}

/// One worker's sending side.
#[derive(Debug)]
struct Sender {
    packer: Packer,
    next_seq: u32,
    unacked: BTreeMap<u32, Unacked>,
}

impl Sender {
    /// Lowest sequence number not yet acknowledged (the window's base).
    fn base(&self) -> u32 {
        self.unacked.keys().next().copied().unwrap_or(self.next_seq)
    }
}

/// The host daemon of one aggregation job.
pub struct Daemon {
    opts: JobOptions,
    cfg: Config,
    window: u32,
    max_tuples: usize,
    rto: u64,
    senders: Vec<Sender>,
    net: Network,
    card_port: usize,
    finishing: bool,
    sums: HashMap<u32, i64>,
    stats: Stats,
    start_cycles: u64,
    start_beats: u64,
}

/// The cycles a flush may take before the daemon gives up: generous, since
/// the RTL card's flush timing is its own (the model takes one cycle a row).
fn flush_budget(cfg: &Config) -> u64 {
    16 * (1u64 << cfg.slot_bits) + 100_000
}

impl Daemon {
    /// Open a job on `card`: check the card's geometry, set the job id,
    /// retire whatever an earlier job left on the card, set the replacement
    /// policy and reset the windows and counters.
    ///
    /// The order matters: the new job id goes in first, so stale packets of
    /// an earlier job still queued at the card are dropped as malformed
    /// instead of being aggregated; then a flush drains (and discards) any
    /// table contents an aborted job left; then the reset clears the
    /// windows and the counters those steps touched.
    pub fn open(card: &mut dyn KvCard, opts: JobOptions) -> Result<Self> {
        opts.validate()?;
        let cfg = card.config();
        let geo = card.read_reg(&kv::GEOMETRY);
        let (lanes, slot_bits, senders, window) = (
            kv::GEOMETRY_LANES.get(geo) as usize,
            kv::GEOMETRY_SLOT_BITS.get(geo),
            kv::GEOMETRY_SENDERS.get(geo) as usize,
            kv::GEOMETRY_WINDOW.get(geo),
        );
        if (lanes, slot_bits, senders) != (cfg.lanes, cfg.slot_bits, cfg.senders) || window == 0 {
            return Err(KvError::Geometry(format!(
                "GEOMETRY register says {lanes} lanes, 2^{slot_bits} slots per bank, {senders} senders, window {window}; the card's build says {} lanes, 2^{} slots, {} senders",
                cfg.lanes, cfg.slot_bits, cfg.senders
            )));
        }
        if opts.workers > senders {
            return Err(KvError::Options(format!(
                "{} workers, but the card keeps sequence windows for {senders} senders",
                opts.workers
            )));
        }
        let window = window.min(WINDOW);
        let max_tuples = opts.max_tuples();

        card.write_reg(&kv::JOB, opts.job as u32);
        let budget = flush_budget(&cfg);
        let start = card.cycles();
        while !card.idle() {
            card.advance(opts.quantum);
            if card.cycles() - start > budget {
                return Err(KvError::Drain {
                    cycles: card.cycles() - start,
                });
            }
        }
        card.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1));
        wait_flush_done(card, opts.quantum, budget, |_| {})?;
        card.write_reg(&kv::CTRL, kv::CTRL_REPLACE.set(0, opts.replace as u32));
        card.write_reg(&kv::CMD, kv::CMD_RESET.set(0, 1));
        check_fault(card)?;

        // The slowest acknowledgement: a copy's longest network delay, the
        // card's receive queue full of every sender's window (twice, for
        // duplicates and retransmissions queued with them), and the step
        // granularity. A timeout above it never fires for a packet that is
        // merely queued, so retransmissions cannot snowball.
        let beats_per_packet = packet::HEADER_BYTES
            .saturating_add(max_tuples * packet::TUPLE_BYTES)
            .div_ceil(8 * cfg.lanes) as u64;
        let rto = opts.rto.unwrap_or(
            2 * opts.net.max_delay()
                + 2 * opts.workers as u64 * window as u64 * beats_per_packet
                + 4 * opts.quantum
                + 256,
        );
        let placement = Placement::new(&cfg, max_tuples);
        let senders = (0..opts.workers)
            .map(|_| Sender {
                packer: Packer::new(placement.clone()),
                next_seq: 0,
                unacked: BTreeMap::new(),
            })
            .collect();
        let net = Network::new(opts.net, opts.seed)?;
        let stats = Stats {
            card: "unnamed".into(),
            workers: opts.workers,
            slots: cfg.slots(),
            replace: opts.replace,
            rto,
            ..Stats::default()
        };
        Ok(Self {
            card_port: opts.workers,
            opts,
            cfg,
            window,
            max_tuples,
            rto,
            senders,
            net,
            finishing: false,
            sums: HashMap::new(),
            stats,
            start_cycles: card.cycles(),
            start_beats: card.beats(),
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
        s.packer.push(key, value);
        self.stats.tuples += 1;
        Ok(())
    }

    /// No more tuples will come: from now on partly filled packets are sent
    /// too, instead of waiting to fill up.
    pub fn close_input(&mut self) {
        self.finishing = true;
    }

    /// Can `s` form a packet now?
    fn ready(&self, s: &Sender) -> bool {
        let pending = s.packer.pending();
        pending > 0 && (pending >= self.max_tuples || self.finishing)
    }

    /// Transmit: due retransmissions first, then new packets while the
    /// window allows.
    fn transmit(&mut self, now: u64) -> Result<()> {
        for (id, s) in self.senders.iter_mut().enumerate() {
            for (&seq, u) in s.unacked.iter_mut() {
                if u.deadline > now {
                    continue;
                }
                if u.tries >= self.opts.max_tries {
                    return Err(KvError::Stalled {
                        sender: id,
                        seq,
                        tries: u.tries,
                    });
                }
                u.tries += 1;
                u.deadline = now + self.rto;
                self.stats.retransmissions += 1;
                self.stats.transmissions += 1;
                self.net.send(now, id, self.card_port, u.bytes.clone());
            }
        }
        for id in 0..self.senders.len() {
            while self.ready(&self.senders[id]) {
                let s = &mut self.senders[id];
                if s.next_seq.wrapping_sub(s.base()) >= self.window {
                    break;
                }
                let (tuples, misplaced) = s.packer.take(self.max_tuples);
                let seq = s.next_seq;
                s.next_seq = s.next_seq.wrapping_add(1);
                // `tuples.len() <= max_tuples <= packet::MAX_TUPLES`, which
                // fits the u16 count (checked by `JobOptions::validate`).
                let h = Header::data(self.opts.job, id as u16, seq, tuples.len() as u16);
                let bytes = packet::encode(&h, &tuples);
                s.unacked.insert(
                    seq,
                    Unacked {
                        bytes: bytes.clone(),
                        deadline: now + self.rto,
                        tries: 1,
                    },
                );
                self.stats.packets += 1;
                self.stats.transmissions += 1;
                self.stats.misplaced += misplaced as u64;
                self.net.send(now, id, self.card_port, bytes);
            }
        }
        Ok(())
    }

    /// Take in what the card produced: acks retire packets, records merge.
    fn absorb(&mut self, out: CardOutput) -> bool {
        for a in out.acks {
            self.stats.acks += 1;
            if a.status == AckStatus::Duplicate {
                self.stats.duplicate_acks += 1;
            }
            // Matched by (sender, seq): an ack for a packet already retired
            // (a duplicate's, or a retransmission's) finds nothing.
            if let Some(s) = self.senders.get_mut(a.sender as usize) {
                s.unacked.remove(&a.seq);
            }
        }
        let mut done = false;
        for r in out.records {
            match r.kind {
                RecordKind::Spill | RecordKind::Flush => {
                    for (k, v) in r.lanes.iter().flatten() {
                        *self.sums.entry(*k).or_insert(0) += *v as i64;
                        self.stats.host_records += 1;
                        if r.kind == RecordKind::Spill {
                            self.stats.spill_records += 1;
                        } else {
                            self.stats.flush_records += 1;
                        }
                    }
                }
                RecordKind::FlushDone => done = true,
            }
        }
        done
    }

    /// One step of the job: deliver due packets to the card, transmit,
    /// and advance the card to the next event.
    pub fn step(&mut self, card: &mut dyn KvCard) -> Result<Poll> {
        let now = card.cycles();
        for d in self.net.deliver_due(now) {
            card.deliver(d.payload);
        }
        self.transmit(now)?;
        // With nothing unacknowledged, transmit found nothing ready (an
        // empty window never blocks it). Copies still in the network then
        // belong to acknowledged packets, are duplicates, and need not be
        // waited for.
        let unacked = self.senders.iter().any(|s| !s.unacked.is_empty());
        if !unacked && card.idle() {
            return Ok(Poll::Idle);
        }
        let next_event = self
            .senders
            .iter()
            .flat_map(|s| s.unacked.values().map(|u| u.deadline))
            .chain(self.net.next_due())
            .min();
        let q = self.opts.quantum;
        let cycles = match next_event {
            // While the card works, step in quanta so acks come back
            // promptly and free window space.
            Some(e) if !card.idle() => e.saturating_sub(now).clamp(1, q),
            None => q,
            // An idle card: jump straight to the next event.
            Some(e) => e.saturating_sub(now).max(1),
        };
        let out = card.advance(cycles);
        check_fault(card)?;
        self.absorb(out);
        Ok(Poll::Busy)
    }

    /// Finish the job: send what is left, wait until every packet is
    /// acknowledged and the card has drained its input, flush the table,
    /// collect until the flush is done, and return the sums.
    pub fn finish(mut self, card: &mut dyn KvCard) -> Result<JobOutput> {
        self.close_input();
        let budget = flush_budget(&self.cfg);
        // Once everything is acknowledged only the card's input queue is
        // left to drain; a card that never drains is broken, and is
        // reported rather than waited on forever.
        let mut acked_at = None;
        while self.step(card)? == Poll::Busy {
            if self.senders.iter().all(|s| s.unacked.is_empty()) {
                let t0 = *acked_at.get_or_insert(card.cycles());
                if card.cycles() - t0 > budget {
                    return Err(KvError::Drain {
                        cycles: card.cycles() - t0,
                    });
                }
            } else {
                acked_at = None;
            }
        }
        // Every packet is acknowledged, so every tuple has entered the
        // pipeline; the flush command follows all their spills on the
        // record stream.
        card.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1));
        let quantum = self.opts.quantum;
        let mut outs = vec![];
        wait_flush_done(card, quantum, budget, |o| outs.push(o))?;
        for o in outs {
            self.absorb(o);
        }
        self.read_counters(card);
        check_fault(card)?;
        let st = &mut self.stats;
        st.cycles = card.cycles() - self.start_cycles;
        st.beats = card.beats() - self.start_beats;
        st.keys = self.sums.len() as u64;
        let net = self.net.stats();
        st.net_lost = net.lost;
        st.net_duplicated = net.duplicated;
        st.net_reordered = net.reordered;
        st.finish_ratios();
        Ok(JobOutput {
            sums: self.sums,
            stats: self.stats,
        })
    }

    /// Read the engine's counters (LO first: it latches HI).
    fn read_counters(&mut self, card: &mut dyn KvCard) {
        let mut c = [0u64; 9];
        for (i, v) in c.iter_mut().enumerate() {
            let lo = card.read_reg(&kv::COUNTERS[2 * i]) as u64;
            let hi = card.read_reg(&kv::COUNTERS[2 * i + 1]) as u64;
            *v = hi << 32 | lo;
        }
        let st = &mut self.stats;
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
}

/// A card whose register accesses failed cannot be trusted with a result.
fn check_fault(card: &dyn KvCard) -> Result<()> {
    match card.fault() {
        Some(f) => Err(KvError::CardFault(f)),
        None => Ok(()),
    }
}

/// Advance `card` until a flush-done record, handing every output to `sink`.
fn wait_flush_done(
    card: &mut dyn KvCard,
    quantum: u64,
    budget: u64,
    mut sink: impl FnMut(CardOutput),
) -> Result<()> {
    let start = card.cycles();
    loop {
        let out = card.advance(quantum);
        let done = out.records.iter().any(|r| r.kind == RecordKind::FlushDone);
        sink(out);
        if done {
            return Ok(());
        }
        if card.cycles() - start > budget {
            return Err(KvError::FlushTimeout {
                cycles: card.cycles() - start,
            });
        }
    }
}

/// Run a whole job synchronously: open, push every `(worker, key, value)`,
/// finish.
pub fn run(
    card: &mut dyn KvCard,
    opts: JobOptions,
    tuples: impl IntoIterator<Item = (usize, u32, i32)>,
) -> Result<JobOutput> {
    let mut d = Daemon::open(card, opts)?;
    for (w, k, v) in tuples {
        d.push(w, k, v)?;
    }
    d.finish(card)
}
