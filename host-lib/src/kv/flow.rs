//! One sender's reliable flow of key-value packets to the card, whatever
//! carries them: its packer, its sequence numbers, the packets in flight,
//! their loss recovery ([`Recovery`]) and its delay window
//! ([`DelayWindow`]).
//!
//! A [`Flow`] knows nothing about the transport or the clock: time is a
//! `u64` in whatever unit the caller keeps (the in-process daemon uses the
//! card's cycles, the UDP [`super::Sender`] microseconds of wall time), and
//! packets leave as UDP payloads handed to a callback. So the simulated
//! job and a sender on a real network recover from loss with the same code.

use super::pack::Packer;
use super::recovery::{DelayWindow, Recovery, Sending};
use std::collections::BTreeMap;
use weft_model::kv_agg::packet::{self, AckStatus, Header};
use weft_model::wire;

/// A packet sent and not yet acknowledged.
#[derive(Debug)]
struct Unacked {
    /// The UDP payload (header and tuples).
    payload: Vec<u8>,
    /// Transmissions so far.
    tries: u32,
    /// When it was last transmitted.
    sent_at: u64,
    /// When it was transmitted before that.
    prev_sent: Option<u64>,
}

/// Why a packet leaves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Transmission {
    /// A new packet, with this many tuples outside their home lane.
    New {
        /// Misplaced tuples ([`super::pack`]).
        misplaced: usize,
    },
    /// The oldest packet, because the timer fired.
    Timeout,
    /// A packet deemed lost from the acks of later ones (RACK).
    Lost,
    /// A second copy of the flow's last packet, sent with it.
    TailCopy,
}

/// A packet that reached the most transmissions allowed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stalled {
    /// Its sequence number.
    pub seq: u32,
    /// Transmissions made.
    pub tries: u32,
}

/// A key-value acknowledgement from the card (`docs/wire.md`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ack {
    /// Job id.
    pub job: u16,
    /// Sender id.
    pub sender: u16,
    /// Sequence number acknowledged.
    pub seq: u32,
    /// The card had seen the packet before.
    pub duplicate: bool,
    /// Bits 7:0 of the sender's window base on the card after this packet
    /// (every sequence number below it has arrived).
    pub base: u8,
}

/// Parse an acknowledgement from a UDP payload; `None` if it is not one.
pub fn parse_ack(b: &[u8]) -> Option<Ack> {
    if b.len() < 16 || b[0] != packet::VERSION || b[1] != wire::KV_FLAG_ACK {
        return None;
    }
    Some(Ack {
        job: u16::from_le_bytes([b[4], b[5]]),
        sender: u16::from_le_bytes([b[6], b[7]]),
        seq: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        duplicate: b[12] == AckStatus::Duplicate as u8,
        base: b[13],
    })
}

/// One sender's flow (see the module docs).
#[derive(Debug)]
pub struct Flow {
    job: u16,
    id: u16,
    window: u32,
    max_tuples: usize,
    packer: Packer,
    next_seq: u32,
    unacked: BTreeMap<u32, Unacked>,
    recovery: Recovery,
    cwnd: DelayWindow,
    /// The retransmission timer: when it fires, while packets are
    /// outstanding.
    timer: Option<u64>,
}

impl Flow {
    /// Sender `id` of job `job`: packets of up to `max_tuples` tuples, at
    /// most `window` sequence numbers past the oldest unacknowledged one
    /// (the card's window), recovering with `recovery` and pacing with
    /// `cwnd`.
    pub fn new(
        job: u16,
        id: u16,
        packer: Packer,
        max_tuples: usize,
        window: u32,
        recovery: Recovery,
        cwnd: DelayWindow,
    ) -> Self {
        Self {
            job,
            id,
            window: window.max(1),
            max_tuples: max_tuples.max(1),
            packer,
            next_seq: 0,
            unacked: BTreeMap::new(),
            recovery,
            cwnd,
            timer: None,
        }
    }

    /// Queue a tuple.
    pub fn push(&mut self, key: u32, value: i32) {
        self.packer.push(key, value);
    }

    /// Tuples queued and not yet in a packet.
    pub fn pending(&self) -> usize {
        self.packer.pending()
    }

    /// Packets formed so far (the next sequence number).
    pub fn packets(&self) -> u32 {
        self.next_seq
    }

    /// Packets in flight.
    pub fn in_flight(&self) -> usize {
        self.unacked.len()
    }

    /// Every packet formed has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.unacked.is_empty()
    }

    /// The smoothed round trip, once there is a sample.
    pub fn srtt(&self) -> Option<u64> {
        self.recovery.srtt()
    }

    /// The retransmission timeout now.
    pub fn rto(&self) -> u64 {
        self.recovery.rto()
    }

    /// Lowest sequence number not yet acknowledged (the window's base).
    fn base(&self) -> u32 {
        self.unacked.keys().next().copied().unwrap_or(self.next_seq)
    }

    /// A packet could leave now: a packet's worth of tuples (or the rest,
    /// once `finishing`) and room in both windows. A flow that cannot will
    /// not elicit the acks RACK needs to find its losses.
    fn can_send(&self, finishing: bool) -> bool {
        let pending = self.packer.pending();
        pending > 0
            && (pending >= self.max_tuples || finishing)
            && self.next_seq.wrapping_sub(self.base()) < self.window
            && (self.unacked.len() as u32) < self.cwnd.packets()
    }

    /// Whether the flow can send now, for its timer.
    fn sending(&self, finishing: bool) -> Sending {
        if self.can_send(finishing) {
            Sending::Open
        } else if finishing && self.packer.pending() == 0 {
            Sending::Done
        } else {
            Sending::Blocked
        }
    }

    /// Transmit what is due at `now`: retransmissions first (the oldest
    /// packet when the timer fired, any RACK deems lost), then new packets
    /// while both windows allow. Every payload goes to `out`. A packet
    /// already sent `max_tries` times is not sent again: the flow has
    /// stalled.
    pub fn transmit(
        &mut self,
        now: u64,
        finishing: bool,
        max_tries: u32,
        mut out: impl FnMut(&[u8], Transmission),
    ) -> Result<(), Stalled> {
        let fired = self.timer.is_some_and(|t| t <= now);
        let base = self.unacked.keys().next().copied();
        // When the timer fires, every packet whose ack is overdue (a round
        // trip and the reordering window since it left) goes again, not
        // only the oldest: nothing sent after them is coming to reveal
        // them, and an ack of a retransmission reveals nothing (Karn), so
        // each would otherwise cost a timer of its own.
        let overdue = self
            .recovery
            .srtt()
            .map(|s| s + self.recovery.reordering_window());
        let state = self.sending(finishing);
        for (&seq, u) in self.unacked.iter_mut() {
            let lost = self.recovery.lost(u.sent_at, now);
            let timeout =
                fired && (Some(seq) == base || overdue.is_some_and(|o| u.sent_at + o <= now));
            // Everything sent: an overdue ack is a loss (a needless copy
            // costs a frame of an input that has little left to do).
            let due = state == Sending::Done
                && self
                    .recovery
                    .due(u.sent_at, u.tries)
                    .is_some_and(|d| d <= now);
            if !timeout && !lost && !due {
                continue;
            }
            if u.tries >= max_tries {
                return Err(Stalled {
                    seq,
                    tries: u.tries,
                });
            }
            u.tries += 1;
            u.prev_sent = Some(u.sent_at);
            u.sent_at = now;
            let why = if lost {
                Transmission::Lost
            } else {
                Transmission::Timeout
            };
            out(&u.payload, why);
        }
        if fired {
            self.recovery.on_timeout();
            self.timer = Some(now + self.recovery.timer(self.sending(finishing)));
        }
        while self.can_send(finishing) {
            let (tuples, misplaced) = self.packer.take(self.max_tuples);
            let seq = self.next_seq;
            self.next_seq = self.next_seq.wrapping_add(1);
            // `tuples.len() <= max_tuples <= packet::MAX_TUPLES`, which fits
            // the u16 count (checked where `max_tuples` comes from).
            let h = Header::data(self.job, self.id, seq, tuples.len() as u16);
            let payload = packet::encode(&h, &tuples);
            out(&payload, Transmission::New { misplaced });
            // The last packet goes twice: nothing sent after it can reveal
            // its loss, so a loss would cost a probe timer (two round trips
            // the whole job waits out), where the copy costs one frame. Both
            // leave at once, so either's ack is a clean round-trip sample.
            if finishing && self.packer.pending() == 0 {
                out(&payload, Transmission::TailCopy);
            }
            self.unacked.insert(
                seq,
                Unacked {
                    payload,
                    tries: 1,
                    sent_at: now,
                    prev_sent: None,
                },
            );
            self.timer
                .get_or_insert(now + self.recovery.timer(self.sending(finishing)));
        }
        // Out of room (or of tuples) now: nothing sent after a loss among
        // the last packets is coming to reveal it, so the timer must be the
        // tail-loss probe, not the ceiling armed while the flow could still
        // send (RFC 8985 §7.2 arms the probe when a flow stops sending).
        if let Some(probe) = self.probe(now, finishing) {
            self.timer = Some(self.timer.map_or(probe, |t| t.min(probe)));
        }
        Ok(())
    }

    /// The card acknowledged `seq` at `now`, with its window base's low
    /// byte `base` (a cumulative acknowledgement): the packet retires, its
    /// round trip feeds recovery and the delay window, every packet below
    /// the base retires too (their own acks were lost or are still on the
    /// way; they give no round-trip sample), and the timer restarts (RFC
    /// 6298 §5.3). Returns how many packets it retired (an ack of a packet
    /// already retired, a duplicate's or a retransmission's, may retire
    /// none).
    pub fn on_ack(&mut self, now: u64, seq: u32, base: u8, finishing: bool) -> usize {
        // The packet itself first: its round trip is a sample; the ones the
        // base retires give none.
        let Some(u) = self.unacked.remove(&seq) else {
            let retired = self.retire_below(base);
            self.restart_timer(now, finishing, retired > 0);
            return retired;
        };
        let retired = 1 + self.retire_below(base);
        let clean = self.recovery.on_ack(now, u.sent_at, u.prev_sent, u.tries);
        if let (Some(rtt), Some(min), Some(srtt)) =
            (clean, self.recovery.min_rtt(), self.recovery.srtt())
        {
            self.cwnd.on_sample(now, rtt, min, srtt);
        }
        self.restart_timer(now, finishing, true);
        retired
    }

    /// Retire every packet below the card's window base, given as its low
    /// byte: the base lies between this flow's oldest unacknowledged
    /// sequence number and its next one, fewer than 256 apart (the card's
    /// window is 32), so the byte names it exactly.
    fn retire_below(&mut self, base: u8) -> usize {
        let Some(oldest) = self.unacked.keys().next().copied() else {
            return 0;
        };
        let ahead = base.wrapping_sub(oldest as u8) as u32;
        if ahead == 0 || ahead > self.next_seq.wrapping_sub(oldest) {
            return 0;
        }
        let gone: Vec<u32> = self
            .unacked
            .keys()
            .copied()
            .filter(|s| s.wrapping_sub(oldest) < ahead)
            .collect();
        for s in &gone {
            self.unacked.remove(s);
        }
        gone.len()
    }

    /// Progress restarts the timer (RFC 6298 §5.3).
    fn restart_timer(&mut self, now: u64, finishing: bool, progress: bool) {
        if progress {
            let state = self.sending(finishing);
            self.timer = (!self.unacked.is_empty()).then(|| {
                let t = now + self.recovery.timer(state);
                self.probe(now, finishing).map_or(t, |p| p.min(t))
            });
        }
    }

    /// The tail-loss probe, when the flow cannot send and has packets out:
    /// its timer, or once everything is sent the earliest packet's own
    /// deadline ([`Recovery::due`]) if sooner (the timer counts from the
    /// last ack, which says nothing of packets sent after it).
    fn probe(&self, now: u64, finishing: bool) -> Option<u64> {
        let state = self.sending(finishing);
        if self.unacked.is_empty() || state == Sending::Open {
            return None;
        }
        let probe = now + self.recovery.timer(state);
        if state != Sending::Done {
            return Some(probe);
        }
        let due = self
            .unacked
            .values()
            .filter_map(|u| self.recovery.due(u.sent_at, u.tries))
            .min();
        Some(due.map_or(probe, |d| probe.min(d.max(now + 1))))
    }

    /// The next time something is due without new input: a RACK deadline
    /// or the timer.
    pub fn next_event(&self) -> Option<u64> {
        self.unacked
            .values()
            .filter_map(|u| self.recovery.lost_at(u.sent_at))
            .chain(self.timer)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::pack::Placement;
    use weft_model::kv_agg::Config;

    fn flow() -> Flow {
        let cfg = Config {
            lanes: 8,
            slot_bits: 9,
            senders: 16,
        };
        Flow::new(
            1,
            0,
            Packer::new(Placement::new(&cfg, 4)),
            4,
            32,
            Recovery::new(10, 100_000),
            DelayWindow::new(32, 1_000_000),
        )
    }

    fn sent(f: &mut Flow, now: u64, n: usize) -> Vec<Transmission> {
        for k in 0..4 * n as u32 {
            f.push(k, 1);
        }
        let mut out = vec![];
        f.transmit(now, true, 10, |_, why| out.push(why)).unwrap();
        out
    }

    #[test]
    fn a_cumulative_base_retires_packets_whose_acks_were_lost() {
        let mut f = flow();
        let first = sent(&mut f, 0, 4);
        let new = first
            .iter()
            .filter(|w| matches!(w, Transmission::New { .. }))
            .count();
        assert_eq!(new, 4, "the initial window");
        // The acks of 0 and 1 are lost; 2's says the card's base is 3.
        assert_eq!(f.on_ack(100, 2, 3, true), 3);
        assert_eq!(f.in_flight(), 1);
        // Nothing is resent: 3 is the only packet out, and not yet late.
        let mut again = vec![];
        f.transmit(101, true, 10, |_, why| again.push(why)).unwrap();
        assert!(
            again.iter().all(|w| matches!(w, Transmission::New { .. })),
            "{again:?}"
        );
        assert_eq!(f.on_ack(120, 3, 4, true), 1);
        assert!(f.all_acked());
    }

    #[test]
    fn the_last_packet_goes_twice_and_only_the_last() {
        let mut f = flow();
        for k in 0..12 {
            f.push(k, 1);
        }
        // Not finishing: packets leave once, however many.
        let mut out = vec![];
        f.transmit(0, false, 10, |_, why| out.push(why)).unwrap();
        assert_eq!(out.len(), 3);
        assert!(out.iter().all(|w| matches!(w, Transmission::New { .. })));
        // Finishing: the rest leaves, its last packet twice.
        f.push(12, 1);
        let mut out = vec![];
        f.transmit(1, true, 10, |p, why| out.push((p.to_vec(), why)))
            .unwrap();
        let (last, why) = out.last().unwrap();
        assert_eq!(*why, Transmission::TailCopy);
        assert_eq!(&out[out.len() - 2].0, last, "a copy of the last packet");
        assert_eq!(
            out.iter()
                .filter(|(_, w)| *w == Transmission::TailCopy)
                .count(),
            1
        );
    }

    #[test]
    fn once_everything_is_sent_an_overdue_ack_is_a_loss() {
        let mut f = flow();
        for k in 0..8 {
            f.push(k, 1);
        }
        let mut n = 0;
        f.transmit(0, true, 10, |_, _| n += 1).unwrap();
        assert_eq!(n, 3, "packets 0 and 1, and 1's tail copy");
        // 0's ack: a round trip of 100. Nothing sent after 1 will reveal
        // its loss; its ack is due a round trip (and the reordering
        // window, at least the floor) after it left, not two round trips
        // after the last ack.
        f.on_ack(100, 0, 1, true);
        let due = f.next_event().unwrap();
        assert!(due > 100 && due < 100 + 2 * 100, "{due}");
        let mut again = vec![];
        f.transmit(due, true, 10, |_, why| again.push(why)).unwrap();
        assert_eq!(again, vec![Transmission::Timeout]);
    }

    #[test]
    fn a_stale_or_wrapped_base_retires_nothing_it_must_not() {
        let mut f = flow();
        sent(&mut f, 0, 4);
        // An old ack (base 0: nothing below it) and a base beyond what was
        // sent (a corrupted or foreign byte) retire nothing else.
        assert_eq!(f.on_ack(50, 1, 0, true), 1);
        assert_eq!(f.in_flight(), 3);
        assert_eq!(f.on_ack(60, 9, 200, true), 0);
        assert_eq!(f.in_flight(), 3);
        // Base 1 says 0 arrived (its ack was lost); 2 is still out.
        assert_eq!(f.on_ack(70, 3, 1, true), 2);
        assert_eq!(f.in_flight(), 1);
    }
}
