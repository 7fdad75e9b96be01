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
//!   merges the packets in arrival order, one at a time. A 64-value packet
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
//!   then completes with exactly the missing workers.

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
    /// Packets, the cycle each reaches host memory and the cycle its merge
    /// is done.
    q: VecDeque<(u64, u64, OutPacket)>,
    last_done: u64,
    /// Packets merged.
    pub served: u64,
    /// Core cycles spent merging.
    pub busy: u64,
    /// Most packets waiting or in service at once.
    pub max_queue: usize,
}

impl HostQueue {
    pub fn new(model: HostModel) -> Self {
        Self {
            model,
            q: VecDeque::new(),
            last_done: 0,
            served: 0,
            busy: 0,
            max_queue: 0,
        }
    }

    /// A packet leaves the card at `now`.
    pub fn push(&mut self, now: u64, p: OutPacket, values: usize) {
        let ready = now + self.model.latency;
        let service = self.model.service(values);
        // Ready times grow with `now` (the latency is fixed), so serving in
        // arrival order is serving in ready order.
        let done = ready.max(self.last_done) + service;
        self.last_done = done;
        self.busy += service;
        self.q.push_back((ready, done, p));
        self.max_queue = self.max_queue.max(self.q.len());
    }

    /// The next packet whose merge is done by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<OutPacket> {
        if self.q.front().is_some_and(|(_, d, _)| *d <= now) {
            self.served += 1;
            return self.q.pop_front().map(|(_, _, p)| p);
        }
        None
    }

    /// When the next merge is done.
    pub fn next_due(&self) -> Option<u64> {
        self.q.front().map(|(_, d, _)| *d)
    }

    /// Packets in host memory not merged yet at `now`: the host's core
    /// merges them before it acts on its timers (it cannot tell a split
    /// chunk from one whose missing packets wait in its own inbox).
    pub fn backlog(&self, now: u64) -> bool {
        self.q.front().is_some_and(|(r, _, _)| *r <= now)
    }
}
