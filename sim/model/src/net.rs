//! A seeded, reproducible network model: opaque packets (`Vec<u8>`) carried
//! between numbered endpoints with per-packet loss, duplication, reordering
//! and delay, all in simulated cycles.
//!
//! The model has no clock of its own: the caller says when a packet is sent
//! ([`Network::send`]) and asks for everything due by some cycle
//! ([`Network::deliver_due`]). What happens to a packet is decided when it is
//! sent, from one ChaCha8 stream seeded by the caller, so a run is a pure
//! function of the seed and the sequence of calls.
//!
//! The fate of one sent packet, in this order:
//!
//! 1. **loss**: with probability [`NetConfig::loss`] it is dropped (no copy
//!    arrives);
//! 2. **duplication**: otherwise, with probability [`NetConfig::dup`] it
//!    arrives twice;
//! 3. **delay**: every arriving copy takes [`NetConfig::delay`] cycles plus a
//!    uniform jitter in `0..=jitter`;
//! 4. **reordering**: with probability [`NetConfig::reorder`] a copy is held
//!    back a further uniform `1..=reorder_delay` cycles, so packets sent after
//!    it may overtake it. (A held-back packet that nothing overtakes arrives
//!    in order, merely late: the rate is the rate of hold-backs.)
//!
//! Copies due in the same cycle arrive in the order they were scheduled, so
//! with no jitter and no reordering every link is FIFO.
//!
//! What is not modelled: link bandwidth and serialisation (a packet takes no
//! time on the wire beyond its delay), queueing and congestion drops inside
//! the network, corruption (a corrupted UDP datagram fails its checksum and
//! is a loss), and per-link settings (one [`NetConfig`] for every pair).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The behaviour of the network, the same for every link.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// Probability that a packet is dropped, in `[0, 1)`.
    pub loss: f64,
    /// Probability that a surviving packet arrives twice, in `[0, 1]`.
    pub dup: f64,
    /// Probability that an arriving copy is held back (reordered), in `[0, 1]`.
    pub reorder: f64,
    /// Base one-way delay in cycles.
    pub delay: u64,
    /// Extra uniform delay `0..=jitter` cycles on every copy.
    pub jitter: u64,
    /// A held-back copy waits a further uniform `1..=reorder_delay` cycles.
    pub reorder_delay: u64,
}

impl NetConfig {
    /// A perfect network with a one-way delay of 250 cycles (1 µs at the
    /// card's 250 MHz stream clock): no loss, duplication or reordering.
    pub const IDEAL: NetConfig = NetConfig {
        loss: 0.0,
        dup: 0.0,
        reorder: 0.0,
        delay: 250,
        jitter: 0,
        reorder_delay: 2000,
    };

    /// The longest a copy can take from send to arrival, in cycles.
    pub fn max_delay(&self) -> u64 {
        let held = if self.reorder > 0.0 {
            self.reorder_delay.max(1)
        } else {
            0
        };
        self.delay + self.jitter + held
    }

    /// Check that the probabilities are probabilities and that a packet can
    /// get through at all (loss below 1, so a sender that retries is done
    /// eventually).
    pub fn validate(&self) -> Result<(), NetError> {
        let check = |name: &'static str, p: f64, max_incl: bool| {
            let ok = p >= 0.0 && if max_incl { p <= 1.0 } else { p < 1.0 };
            if ok {
                Ok(())
            } else {
                Err(NetError::Probability {
                    name,
                    value: p,
                    range: if max_incl { "[0, 1]" } else { "[0, 1)" },
                })
            }
        };
        check("loss", self.loss, false)?;
        check("dup", self.dup, true)?;
        check("reorder", self.reorder, true)
    }
}

impl Default for NetConfig {
    fn default() -> Self {
        Self::IDEAL
    }
}

/// A network configuration that cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum NetError {
    /// A probability outside its range (NaN included).
    #[error("{name} probability {value} is outside {range}")]
    Probability {
        /// Which probability.
        name: &'static str,
        /// What was given.
        value: f64,
        /// The allowed range.
        range: &'static str,
    },
}

/// A packet arriving at an endpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Cycle it arrives in.
    pub at: u64,
    /// Sending endpoint.
    pub src: usize,
    /// Receiving endpoint.
    pub dst: usize,
    /// The packet, as sent.
    pub payload: Vec<u8>,
}

/// What the network did so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NetStats {
    /// Packets handed to [`Network::send`].
    pub sent: u64,
    /// Packets dropped.
    pub lost: u64,
    /// Packets that arrive twice (each counts one extra copy).
    pub duplicated: u64,
    /// Copies held back for reordering.
    pub reordered: u64,
    /// Copies delivered.
    pub delivered: u64,
}

/// A copy in flight. Ordered by arrival cycle, then by the order it was
/// scheduled in (`order`), which keeps equal-time arrivals FIFO.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct InFlight {
    at: u64,
    order: u64,
    src: usize,
    dst: usize,
    payload: Vec<u8>,
}

/// The network: packets in flight between endpoints `0..` (any `usize`).
#[derive(Debug)]
pub struct Network {
    cfg: NetConfig,
    rng: ChaCha8Rng,
    flight: BinaryHeap<Reverse<InFlight>>,
    order: u64,
    stats: NetStats,
}

impl Network {
    /// A network with the given behaviour, its random choices drawn from a
    /// ChaCha8 stream seeded with `seed`.
    pub fn new(cfg: NetConfig, seed: u64) -> Result<Self, NetError> {
        cfg.validate()?;
        Ok(Self {
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            flight: BinaryHeap::new(),
            order: 0,
            stats: NetStats::default(),
        })
    }

    /// The behaviour.
    pub fn config(&self) -> &NetConfig {
        &self.cfg
    }

    /// Send `payload` from `src` to `dst` in cycle `now`; its fate is decided
    /// here (see the module docs).
    pub fn send(&mut self, now: u64, src: usize, dst: usize, payload: Vec<u8>) {
        self.stats.sent += 1;
        // Every random draw happens whether or not its probability is zero,
        // so changing one rate does not shift the others' random streams.
        let lost = self.rng.gen::<f64>() < self.cfg.loss;
        let dup = self.rng.gen::<f64>() < self.cfg.dup;
        if lost {
            self.stats.lost += 1;
            return;
        }
        if dup {
            self.stats.duplicated += 1;
            let at = self.arrival(now);
            self.schedule(at, src, dst, payload.clone());
        }
        let at = self.arrival(now);
        self.schedule(at, src, dst, payload);
    }

    /// The arrival cycle of one copy sent in `now`.
    fn arrival(&mut self, now: u64) -> u64 {
        let jitter = self.rng.gen_range(0..=self.cfg.jitter);
        let held = self.rng.gen::<f64>() < self.cfg.reorder;
        let extra = self.rng.gen_range(1..=self.cfg.reorder_delay.max(1));
        let mut at = now + self.cfg.delay + jitter;
        if held {
            self.stats.reordered += 1;
            at += extra;
        }
        at
    }

    fn schedule(&mut self, at: u64, src: usize, dst: usize, payload: Vec<u8>) {
        self.order += 1;
        self.flight.push(Reverse(InFlight {
            at,
            order: self.order,
            src,
            dst,
            payload,
        }));
    }

    /// Take every copy due by cycle `now`, earliest first.
    pub fn deliver_due(&mut self, now: u64) -> Vec<Delivery> {
        let mut out = vec![];
        while self.flight.peek().is_some_and(|f| f.0.at <= now) {
            let Some(Reverse(f)) = self.flight.pop() else {
                break;
            };
            self.stats.delivered += 1;
            out.push(Delivery {
                at: f.at,
                src: f.src,
                dst: f.dst,
                payload: f.payload,
            });
        }
        out
    }

    /// The cycle the next copy arrives in, if any is in flight.
    pub fn next_due(&self) -> Option<u64> {
        self.flight.peek().map(|f| f.0.at)
    }

    /// Copies in flight.
    pub fn in_flight(&self) -> usize {
        self.flight.len()
    }

    /// What the network did so far.
    pub fn stats(&self) -> NetStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(loss: f64, dup: f64, reorder: f64) -> NetConfig {
        NetConfig {
            loss,
            dup,
            reorder,
            delay: 100,
            jitter: 20,
            reorder_delay: 500,
        }
    }

    /// Send `n` packets (payload = index), one per cycle, and drain.
    fn run(c: NetConfig, seed: u64, n: u32) -> (Vec<Delivery>, NetStats) {
        let mut net = Network::new(c, seed).unwrap();
        let mut got = vec![];
        for i in 0..n {
            net.send(i as u64, 0, 1, i.to_le_bytes().to_vec());
            got.extend(net.deliver_due(i as u64));
        }
        got.extend(net.deliver_due(u64::MAX));
        assert_eq!(net.in_flight(), 0);
        (got, net.stats())
    }

    fn index(d: &Delivery) -> u32 {
        u32::from_le_bytes(d.payload[..4].try_into().unwrap())
    }

    #[test]
    fn rates_are_roughly_honoured() {
        let n = 20_000;
        let (got, st) = run(cfg(0.1, 0.2, 0.3), 7, n);
        let near = |x: u64, p: f64, of: u64| {
            let want = p * of as f64;
            (x as f64 - want).abs() < 0.1 * want
        };
        assert_eq!(st.sent, n as u64);
        assert!(near(st.lost, 0.1, st.sent), "{st:?}");
        assert!(near(st.duplicated, 0.2, st.sent - st.lost), "{st:?}");
        let copies = st.sent - st.lost + st.duplicated;
        assert!(near(st.reordered, 0.3, copies), "{st:?}");
        assert_eq!(st.delivered, copies);
        assert_eq!(got.len() as u64, copies);
        // Reordering is visible: some packet arrives after a later one.
        assert!(got.windows(2).any(|w| index(&w[0]) > index(&w[1])));
    }

    #[test]
    fn a_seed_fixes_the_run_and_another_seed_changes_it() {
        let c = cfg(0.2, 0.2, 0.2);
        let a = run(c, 42, 2000);
        assert_eq!(a, run(c, 42, 2000));
        assert_ne!(a.0, run(c, 43, 2000).0);
    }

    #[test]
    fn nothing_arrives_before_its_delay() {
        let c = cfg(0.0, 0.5, 0.5);
        let mut net = Network::new(c, 3).unwrap();
        let mut sent_at = vec![];
        for i in 0..500u32 {
            let now = i as u64 * 3;
            net.send(now, 2, 5, i.to_le_bytes().to_vec());
            sent_at.push(now);
            for d in net.deliver_due(now) {
                assert!(d.at <= now);
                let s = sent_at[index(&d) as usize];
                assert!(d.at >= s + c.delay, "arrived {} sent {s}", d.at);
                assert!(d.at <= s + c.max_delay());
                assert_eq!((d.src, d.dst), (2, 5));
            }
        }
        // Nothing is handed out early either.
        let next = net.next_due().unwrap();
        assert!(net.deliver_due(next - 1).is_empty());
        assert!(!net.deliver_due(next).is_empty());
    }

    #[test]
    fn a_perfect_network_is_fifo_and_exact() {
        let c = NetConfig {
            delay: 10,
            ..NetConfig::IDEAL
        };
        let (got, st) = run(c, 1, 300);
        assert_eq!(st.lost + st.duplicated + st.reordered, 0);
        assert_eq!(
            got.iter().map(index).collect::<Vec<_>>(),
            (0..300).collect::<Vec<_>>()
        );
        assert!(got.iter().all(|d| d.at == index(d) as u64 + 10));
    }

    #[test]
    fn bad_rates_are_refused() {
        for (l, d, r) in [
            (1.0, 0.0, 0.0),
            (-0.1, 0.0, 0.0),
            (0.0, 1.5, 0.0),
            (0.0, 0.0, f64::NAN),
        ] {
            let e = Network::new(cfg(l, d, r), 0).unwrap_err();
            assert!(e.to_string().contains("probability"), "{e}");
        }
        assert!(Network::new(cfg(0.99, 1.0, 1.0), 0).is_ok());
    }
}
