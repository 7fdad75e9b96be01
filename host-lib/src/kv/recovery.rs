//! Loss recovery for one sender, in the card's cycles.
//!
//! Two mechanisms, as modern transports have them:
//!
//! - **The retransmission timer of RFC 6298**: a smoothed round-trip time
//!   and its variation from acknowledgements of packets sent once (Karn's
//!   rule: an acknowledgement of a retransmitted packet may be for either
//!   copy), `RTO = SRTT + max(G, 4 RTTVAR)`, doubled on every timeout until
//!   a fresh sample arrives, and kept between a floor (a few stepping
//!   quanta) and a ceiling (the daemon's conservative bound, which covers
//!   the slowest possible acknowledgement). As in RFC 6298 §5 there is one
//!   timer per sender, restarted whenever an acknowledgement retires a
//!   packet: while the card's input queue drains, acks keep coming and the
//!   timer does not fire, however long the queue (a per-packet timer fires
//!   spuriously while round trips grow as the queue fills).
//! - **RACK-style loss detection (RFC 8985)**: the card acknowledges every
//!   packet by its sequence number, so once a packet sent *after* a missing
//!   one is acknowledged, the missing one is deemed lost as soon as it has
//!   had a round trip plus a reordering window to arrive — typically long
//!   before its timer would fire. The reordering window starts at a quarter
//!   of the smoothed RTT and widens to the largest lateness observed in a
//!   packet acknowledged out of order, so a network that reorders does not
//!   cause a storm of needless copies (each of which the card would only
//!   acknowledge as a duplicate).
//!
//! A copy sent needlessly costs a frame on the wire and nothing else: the
//! card drops duplicates exactly.

use std::collections::VecDeque;

/// Timeouts in a row after which the timer stops doubling.
const MAX_BACKOFF: u32 = 6;
/// Packets sent after a missing one whose acknowledgements declare it
/// lost at once (TCP's duplicate-ACK threshold, RFC 5681).
pub const DUP_THRESH: usize = 3;
/// Acknowledged send times kept for the threshold rule.
const RECENT: usize = 64;
/// Packets a sender's delay window starts with: eight senders' four full
/// frames are about the queue the window aims for, so the first round
/// trips are near the target instead of a whole sequence window deep.
pub const INITIAL_WINDOW: u32 = 4;

/// Whether a flow can send, for its timer ([`Recovery::timer`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sending {
    /// It can send a new packet now.
    Open,
    /// Its window is full, or its next packet's tuples are still to come.
    Blocked,
    /// Every tuple has been sent.
    Done,
}

/// One sender's round-trip estimate and loss detector.
#[derive(Clone, Debug)]
pub struct Recovery {
    srtt: Option<u64>,
    rttvar: u64,
    backoff: u32,
    /// The newest transmission time among acknowledged packets.
    newest_acked: Option<u64>,
    /// The round trip of that packet (RACK's `RACK.rtt`): the current round
    /// trip, where the smoothed one lags behind a filling queue.
    newest_rtt: u64,
    /// The largest lateness seen in a packet acknowledged out of order.
    reordering: u64,
    /// The smallest round trip seen.
    min_rtt: Option<u64>,
    /// Send times of the most recently acknowledged packets (sent once),
    /// for the duplicate-threshold rule.
    recent: VecDeque<u64>,
    floor: u64,
    ceiling: u64,
}

impl Recovery {
    /// A sender with no samples yet: its timeout is `ceiling` until the
    /// first acknowledgement, and never below `floor` (at least 1).
    pub fn new(floor: u64, ceiling: u64) -> Self {
        let floor = floor.max(1);
        Self {
            srtt: None,
            rttvar: 0,
            backoff: 0,
            newest_acked: None,
            newest_rtt: 0,
            reordering: 0,
            min_rtt: None,
            recent: VecDeque::with_capacity(RECENT),
            floor,
            ceiling: ceiling.max(floor),
        }
    }

    /// The smoothed round-trip time, once there is a sample.
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }

    /// The smallest round trip seen, once there is a sample.
    pub fn min_rtt(&self) -> Option<u64> {
        self.min_rtt
    }

    /// The retransmission timeout by RFC 6298: `SRTT + max(G, 4 RTTVAR)`,
    /// doubled per timeout, between the floor and the ceiling.
    pub fn rto(&self) -> u64 {
        match self.srtt {
            None => self.ceiling,
            Some(s) => {
                let base = s.saturating_add(self.floor.max(4 * self.rttvar));
                base.saturating_mul(1 << self.backoff)
                    .clamp(self.floor, self.ceiling)
            }
        }
    }

    /// The timer to arm in the flow's `state`. While the sender can still
    /// send new packets, the ceiling: its packets share the card's input
    /// with every other sender's, so its round trips grow with a queue it
    /// cannot see, and an estimate from its own samples fires spuriously;
    /// its losses are found by RACK, from the acks of the packets sent
    /// after them. When it cannot, nothing sent after a lost packet or a
    /// lost retransmission is coming, so the timer is a tail-loss probe
    /// (RFC 8985's PTO), not doubled (a probe is one packet; the stall it
    /// ends costs a whole window):
    /// - blocked mid-stream (its window is full, or tuples are still to
    ///   come): two smoothed round trips plus the reordering window, at
    ///   most the ceiling;
    /// - done (every tuple sent): two *current* round trips (the newest
    ///   acknowledged packet's, where the smoothed one still carries the
    ///   queue that has drained by now). A needless copy costs a frame of
    ///   an input that is idling at the end of the stream, where waiting
    ///   a smoothed round trip costs the whole job that long.
    pub fn timer(&self, state: Sending) -> u64 {
        match (state, self.srtt) {
            (Sending::Blocked, Some(s)) => {
                (2 * s + self.reordering_window()).clamp(self.floor, self.ceiling)
            }
            (Sending::Done, Some(s)) => {
                (2 * s.min(self.newest_rtt.max(1))).clamp(self.floor, self.ceiling)
            }
            _ => self.ceiling,
        }
    }

    /// When the ack of a packet last sent at `sent_at`, transmitted
    /// `tries` times, is overdue once the flow has sent everything (no
    /// later packet will reveal its loss): a round trip and the reordering
    /// window after it left. The round trip is the newest one for a first
    /// copy (the queue it joined) and twice the smallest for a
    /// retransmission (sent at the tail, when the queue has drained).
    pub fn due(&self, sent_at: u64, tries: u32) -> Option<u64> {
        let min = self.min_rtt?;
        let rtt = if tries > 1 {
            (2 * min).min(self.newest_rtt.max(min))
        } else {
            self.newest_rtt.max(min)
        };
        Some(sent_at + rtt + self.reordering_window())
    }

    /// The reordering window: how long past a round trip a packet overtaken
    /// by a later one may still arrive.
    pub fn reordering_window(&self) -> u64 {
        let srtt = self.srtt.unwrap_or(0);
        // At most a round trip (RFC 8985's bound): beyond that waiting for
        // a late packet costs more than sending it again.
        (srtt / 4).max(self.reordering).min(srtt).max(self.floor)
    }

    /// A packet last sent at `sent_at` (and before that at `prev_sent`, if
    /// it was retransmitted), transmitted `tries` times in all, was
    /// acknowledged at `now`. Any acknowledgement is progress: the timer's
    /// backoff ends. Returns the round trip when it is a clean sample of
    /// the path: sent once and not overtaken by a later packet (a packet
    /// held back by reordering says nothing about the queue).
    pub fn on_ack(
        &mut self,
        now: u64,
        sent_at: u64,
        prev_sent: Option<u64>,
        tries: u32,
    ) -> Option<u64> {
        let r = now.saturating_sub(sent_at);
        self.backoff = 0;
        if tries > 1 {
            // Sooner than any round trip seen: the ack is for an earlier
            // copy, so the retransmission was needless and that copy was
            // merely late. Widen the window by its lateness (what DSACK
            // tells a TCP sender).
            if let (Some(min), Some(prev)) = (self.min_rtt, prev_sent) {
                if r < min {
                    let late = now.saturating_sub(prev).saturating_sub(self.newest_rtt);
                    self.reordering = self.reordering.max(late);
                }
            }
        }
        let mut clean = None;
        if tries == 1 {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
            clean = Some(r);
            if let Some(newest) = self.newest_acked {
                if sent_at < newest {
                    clean = None;
                    // Overtaken by a later packet: the lateness it needed
                    // beyond that packet's round trip is what the window
                    // must allow.
                    let late = r.saturating_sub(self.newest_rtt);
                    self.reordering = self.reordering.max(late);
                }
            }
            if self.newest_acked.is_none_or(|n| sent_at >= n) {
                self.newest_rtt = r;
            }
            match self.srtt {
                None => {
                    self.srtt = Some(r);
                    self.rttvar = r / 2;
                }
                Some(s) => {
                    self.rttvar = (3 * self.rttvar + s.abs_diff(r)) / 4;
                    self.srtt = Some((7 * s + r) / 8);
                }
            }
            self.newest_acked = Some(self.newest_acked.map_or(sent_at, |n| n.max(sent_at)));
            if self.recent.len() == RECENT {
                self.recent.pop_front();
            }
            self.recent.push_back(sent_at);
        }
        clean
        // An acknowledgement of a retransmitted packet may be for its
        // first copy: taking its last send time as delivered would make
        // every older packet still queued look overtaken (RFC 8985 guards
        // this the same way).
    }

    /// A packet's timer fired.
    pub fn on_timeout(&mut self) {
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
    }

    /// Whether a packet last sent at `sent_at`, still unacknowledged, is
    /// lost at `now`: [`DUP_THRESH`] packets sent after it have been
    /// acknowledged (a late packet then costs only a needless copy, which
    /// the card drops exactly, where waiting costs a stalled window), or
    /// its RACK deadline ([`Recovery::lost_at`]) has passed.
    pub fn lost(&self, sent_at: u64, now: u64) -> bool {
        match self.lost_at(sent_at) {
            None => false,
            Some(t) if t <= now => true,
            Some(_) => self.recent.iter().filter(|&&t| t > sent_at).count() >= DUP_THRESH,
        }
    }

    /// When a packet last sent at `sent_at`, still unacknowledged, counts as
    /// lost by time: `None` until a packet sent after it has been
    /// acknowledged.
    pub fn lost_at(&self, sent_at: u64) -> Option<u64> {
        let newest = self.newest_acked?;
        self.srtt?;
        (sent_at < newest).then(|| sent_at + self.newest_rtt + self.reordering_window())
    }
}

/// How many packets a sender keeps in flight: a delay-based window after
/// Swift (SIGCOMM'20). The card's input is one queue shared by every
/// sender; a sender that keeps its whole sequence window in flight fills it
/// and every round trip (and so every loss recovery) grows with the queue.
/// Each sender therefore aims for a round trip of `target` — its smallest
/// round trip seen times 1.5 plus a headroom of queue, enough to keep the
/// card busy — starting from [`INITIAL_WINDOW`] packets, growing its window
/// by one packet per round trip below the target and shrinking it in
/// proportion to the excess (at most by half, at most once per round trip)
/// above it. Samples of packets overtaken by later ones (held back by the
/// network) do not count. It never exceeds the card's sequence window.
#[derive(Clone, Debug)]
pub struct DelayWindow {
    cwnd: f64,
    max: f64,
    headroom: u64,
    last_decrease: u64,
}

impl DelayWindow {
    /// A window of at most `max` packets (the card's sequence window),
    /// with `headroom` cycles of queue allowed above 1.5 times the
    /// smallest round trip.
    pub fn new(max: u32, headroom: u64) -> Self {
        Self {
            cwnd: f64::from(INITIAL_WINDOW.min(max.max(1))),
            max: f64::from(max.max(1)),
            headroom,
            last_decrease: 0,
        }
    }

    /// Packets it may keep in flight now.
    pub fn packets(&self) -> u32 {
        self.cwnd.floor().max(1.0) as u32
    }

    /// A round-trip sample `rtt` at `now`, with the sender's smallest and
    /// smoothed round trips.
    pub fn on_sample(&mut self, now: u64, rtt: u64, min_rtt: u64, srtt: u64) {
        let target = min_rtt + min_rtt / 2 + self.headroom;
        if rtt <= target {
            self.cwnd = (self.cwnd + 1.0 / self.cwnd).min(self.max);
        } else if now.saturating_sub(self.last_decrease) >= srtt {
            let excess = (rtt - target) as f64 / rtt as f64;
            self.cwnd = (self.cwnd * (1.0 - 0.8 * excess).max(0.5)).max(1.0);
            self.last_decrease = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timer_follows_rfc_6298() {
        let mut r = Recovery::new(64, 100_000);
        assert_eq!(r.rto(), 100_000, "the ceiling until a sample");
        r.on_ack(1000, 0, None, 1);
        // SRTT = 1000, RTTVAR = 500: RTO = 1000 + 4 * 500.
        assert_eq!(r.rto(), 3000);
        r.on_ack(3000, 2000, None, 1);
        // Same sample: RTTVAR = 3/4 * 500, SRTT stays.
        assert_eq!((r.srtt(), r.rto()), (Some(1000), 1000 + 4 * 375));
        r.on_timeout();
        assert_eq!(r.rto(), 2 * (1000 + 4 * 375));
        for _ in 0..20 {
            r.on_timeout();
        }
        assert_eq!(r.rto(), 100_000, "capped at the ceiling");
        // Karn: a retransmitted packet's ack is no sample and does not move
        // what counts as delivered; it is progress, so the backoff ends.
        r.on_ack(9000, 4000, Some(100), 2);
        assert_eq!((r.srtt(), r.rto()), (Some(1000), 1000 + 4 * 375));
        assert_eq!(
            r.lost_at(2500),
            None,
            "nothing sent after 2000 was delivered"
        );
        // The tail-loss probe: two round trips and the reordering window.
        assert_eq!(r.timer(Sending::Blocked), 2 * 1000 + r.reordering_window());
        assert_eq!(
            r.timer(Sending::Open),
            100_000,
            "the ceiling while it can send"
        );
    }

    #[test]
    fn a_packet_is_lost_once_a_later_one_is_acked_and_its_window_passed() {
        let mut r = Recovery::new(64, 100_000);
        assert_eq!(r.lost_at(0), None);
        r.on_ack(1000, 0, None, 1);
        assert_eq!(r.lost_at(0), None, "nothing newer acknowledged");
        r.on_ack(1110, 100, None, 1);
        // Sent at 50, overtaken by the packet sent at 100.
        let lost = r.lost_at(50).unwrap();
        // The newest acknowledged packet's round trip (1010), plus the
        // window.
        assert_eq!(lost, 50 + 1010 + r.reordering_window());
        assert_eq!(r.lost_at(100), None);
        assert_eq!(r.lost_at(200), None);
        assert!(!r.lost(50, 1200), "one later packet: wait");
        r.on_ack(1220, 110, None, 1);
        r.on_ack(1230, 120, None, 1);
        assert!(r.lost(50, 1230), "three later packets: lost");
        assert!(!r.lost(115, 1230), "one later packet");
    }

    #[test]
    fn reordering_widens_the_window() {
        let mut r = Recovery::new(64, 100_000);
        r.on_ack(1000, 0, None, 1);
        r.on_ack(1200, 200, None, 1);
        let before = r.reordering_window();
        // Sent at 100, overtaken, acknowledged 1700 cycles after sending:
        // 700 cycles later than the newest packet's round trip.
        r.on_ack(1800, 100, None, 1);
        assert!(r.reordering_window() >= 700, "{}", r.reordering_window());
        assert!(r.reordering_window() > before);
        // Never beyond a round trip.
        r.on_ack(60_000, 150, None, 1);
        assert!(r.reordering_window() <= r.srtt().unwrap());
    }
}
