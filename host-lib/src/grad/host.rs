//! The host fallback, modelled: what it costs the host to complete the
//! chunks the card could not (preempted partials and forwarded packets).
//!
//! The merge itself is the model crate's exact one
//! (`weft_model::grad_agg::host::HostMerge`); this module only says *when*
//! its results are ready. The costs are modelled, not measured:
//!
//! - **latency** (default 500 cycles, 2 us at the stream's 250 MHz): a card
//!   output reaches the host's merge one DMA write over PCIe plus a polling
//!   core's pick-up later (about 1 us), and the completed chunk goes back to
//!   the workers through the NIC (about another 1 us). Charged once per
//!   packet, before it queues for the core.
//! - **cycles_per_value** (default 1.0, 4 ns per value): one host core
//!   merges the packets in arrival order, one at a time; a packet that adds
//!   nothing (a copy, or one for a chunk already complete) costs only the
//!   read of its 16-byte header (4 values' worth). A 64-value packet
//!   then takes 64 cycles (256 ns, about 3.9 M packets/s or 10 Gb/s of
//!   320-byte packets): the rate of a kernel-bypass core doing per-packet
//!   I/O, a lookup of the chunk's partials and the add, not the bare SIMD
//!   add, which would be ten times faster. The card takes a packet every 5
//!   cycles, so the host is about 13 times slower: the gap SwitchML and ATP
//!   build in-network aggregation on, and the reason falling back costs.
//! - **resend_after** (default 2000 cycles, 8 us): a chunk whose
//!   contributions are split between the host and a card slot (some
//!   workers' packets were forwarded or evicted, later ones claimed the
//!   freed slot) cannot complete on either side. When the host has held an
//!   incomplete chunk this long without news of it, it asks the workers
//!   whose contributions it holds to send them to the card again: the slot
//!   then completes with exactly the missing workers. The host reads the
//!   headers of the packets waiting in its inbox (cheap beside merging
//!   them), and does not ask for a chunk whose packets it already holds.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use weft_model::grad_agg::model::OutPacket;

/// The modelled host fallback's costs, in stream cycles.
#[derive(Copy, Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostModel {
    /// Fixed cycles per packet: card to host memory, and the result back.
    #[serde(default = "latency")]
    pub latency: u64,
    /// Cycles of one host core per merged value.
    #[serde(default = "cycles_per_value")]
    pub cycles_per_value: f64,
    /// Cycles an incomplete chunk waits on the host before the host asks
    /// the workers it holds to send their contributions to the card again.
    #[serde(default = "resend_after")]
    pub resend_after: u64,
}

fn latency() -> u64 {
    500
}
fn cycles_per_value() -> f64 {
    1.0
}
fn resend_after() -> u64 {
    2000
}

impl Default for HostModel {
    fn default() -> Self {
        Self {
            latency: latency(),
            cycles_per_value: cycles_per_value(),
            resend_after: resend_after(),
        }
    }
}

impl HostModel {
    /// Check the ranges: the failing field and why.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        if self.latency > 1_000_000_000 {
            return Err(("latency", "at most 1000000000 cycles".into()));
        }
        if !(0.0..=10_000.0).contains(&self.cycles_per_value) {
            return Err(("cycles_per_value", "must be 0..=10000".into()));
        }
        if !(100..=1_000_000_000).contains(&self.resend_after) {
            return Err(("resend_after", "must be 100..=1000000000 cycles".into()));
        }
        Ok(())
    }

    /// Core cycles to merge a packet of `values` values.
    pub fn service(&self, values: usize) -> u64 {
        (values as f64 * self.cycles_per_value).ceil() as u64
    }
}

/// The host's inbox: packets from the card, merged one at a time in
/// arrival order by one core.
#[derive(Debug)]
pub(crate) struct HostQueue {
    model: HostModel,
    /// Values per packet.
    values: usize,
    /// Packets not started, and the cycle each reaches host memory.
    inbox: VecDeque<(u64, OutPacket)>,
    /// The packet being merged and the cycle its merge is done.
    current: Option<(u64, OutPacket)>,
    /// Packets merged.
    pub served: u64,
    /// Packets only read, not merged (stale or adding no worker).
    pub skimmed: u64,
    /// Core cycles spent.
    pub busy: u64,
    /// Most packets waiting or in service at once.
    pub max_queue: usize,
}

impl HostQueue {
    pub fn new(model: HostModel, values: usize) -> Self {
        Self {
            model,
            values,
            inbox: VecDeque::new(),
            current: None,
            served: 0,
            skimmed: 0,
            busy: 0,
            max_queue: 0,
        }
    }

    /// A packet leaves the card at `now`; it is in host memory `latency`
    /// cycles later.
    pub fn push(&mut self, now: u64, p: OutPacket) {
        self.inbox.push_back((now + self.model.latency, p));
        let n = self.inbox.len() + usize::from(self.current.is_some());
        self.max_queue = self.max_queue.max(n);
    }

    /// The packet whose merge is done by `now`, if any.
    pub fn pop_done(&mut self, now: u64) -> Option<OutPacket> {
        if self.current.as_ref().is_some_and(|(d, _)| *d <= now) {
            return self.current.take().map(|(_, p)| p);
        }
        None
    }

    /// The packet the core would start at `now`: it is free and the
    /// packet is in host memory.
    pub fn startable(&self, now: u64) -> Option<&OutPacket> {
        if self.current.is_some() {
            return None;
        }
        self.inbox
            .front()
            .filter(|(r, _)| *r <= now)
            .map(|(_, p)| p)
    }

    /// Start the [`HostQueue::startable`] packet at `now`. `useful` says
    /// whether merging it adds a worker to a chunk in progress; a packet
    /// that does not (a copy, or one for a chunk already complete) costs
    /// only the read of its 16-byte header.
    pub fn start(&mut self, now: u64, useful: bool) {
        if self.startable(now).is_none() {
            return;
        }
        let Some((_, p)) = self.inbox.pop_front() else {
            return;
        };
        let cost = if useful {
            self.served += 1;
            self.model.service(self.values)
        } else {
            self.skimmed += 1;
            self.model.service(HEADER_WORDS)
        };
        self.busy += cost;
        self.current = Some((now + cost, p));
    }

    /// When the host next has something to do: its merge is done, or a
    /// packet reaches host memory while the core is free.
    pub fn next_event(&self) -> Option<u64> {
        match &self.current {
            Some((d, _)) => Some(*d),
            None => self.inbox.front().map(|(r, _)| *r),
        }
    }

    /// Whether a packet for `(job, chunk)` (header fields) is in host
    /// memory at `now` and not merged yet. The host reads the 16-byte
    /// headers of its inbox as they land (far cheaper than merging), so it
    /// does not ask the workers for a chunk whose packets it already has.
    pub fn holds(&self, now: u64, job: u16, chunk: u32) -> bool {
        let of = |p: &OutPacket| {
            weft_model::grad_agg::packet::Header::decode(&p.bytes)
                .is_some_and(|h| h.job == job && h.chunk == chunk)
        };
        self.current.as_ref().is_some_and(|(_, p)| of(p))
            || self
                .inbox
                .iter()
                .take_while(|(r, _)| *r <= now)
                .any(|(_, p)| of(p))
    }
}

/// 32-bit words of a packet header's fields (16 bytes).
const HEADER_WORDS: usize = 4;
