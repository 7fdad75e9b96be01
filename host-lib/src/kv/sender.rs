//! A key-value sender on a real network: one worker's tuples to a card's
//! UDP port, over a socket, on any host.
//!
//! [`Sender`] packs tuples into weft packets ([`super::pack`]), keeps its
//! window and recovers from loss with the same [`Flow`] the in-process job
//! uses — in microseconds of wall time instead of card cycles — and ends
//! when the card has acknowledged every packet. It then tells the job's
//! collector it is done (the collector flushes the card once every sender
//! has): a `DONE` datagram, repeated until the collector answers.
//!
//! Time-outs adapt to the measured round trip, so the same sender works
//! against a card on a real network (tens of microseconds) and against a
//! simulated one served on a TAP netdev (milliseconds).
//!
//! The sender knows nothing of the card but its address, its lanes and
//! its sequence window: it never reads a register.

use super::flow::{parse_ack, Flow, Transmission};
use super::pack::{Packer, Placement};
use super::recovery::{DelayWindow, Recovery};
use super::{KvError, Result};
use crate::udp;
use serde::Serialize;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};
use weft_model::kv_agg::{packet, Config, WINDOW};
use weft_model::wire;

/// Flags of the host-to-host `DONE` message (`docs/wire.md`): a sender
/// tells the collector every packet it sent was acknowledged; the
/// collector's answer carries `DONE | ACK`.
pub const FLAG_DONE: u8 = 0x20;
/// Bytes of a `DONE` message: the 16-byte header (sequence field = packets
/// sent) and the tuples sent as a `u64`.
pub const DONE_BYTES: usize = 24;

/// Encode a `DONE` (or, with `ack`, its answer).
pub fn done_message(job: u16, sender: u16, packets: u32, tuples: u64, ack: bool) -> Vec<u8> {
    let mut b = vec![0u8; DONE_BYTES];
    b[0] = packet::VERSION;
    b[1] = FLAG_DONE | if ack { wire::KV_FLAG_ACK } else { 0 };
    b[4..6].copy_from_slice(&job.to_le_bytes());
    b[6..8].copy_from_slice(&sender.to_le_bytes());
    b[8..12].copy_from_slice(&packets.to_le_bytes());
    b[16..24].copy_from_slice(&tuples.to_le_bytes());
    b
}

/// A decoded `DONE` message.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Done {
    /// Job id.
    pub job: u16,
    /// Sender id.
    pub sender: u16,
    /// Packets the sender sent (distinct sequence numbers).
    pub packets: u32,
    /// Tuples the sender sent.
    pub tuples: u64,
    /// This is the collector's answer.
    pub ack: bool,
}

/// Parse a `DONE` message or its answer; `None` if it is not one.
pub fn parse_done(b: &[u8]) -> Option<Done> {
    if b.len() < DONE_BYTES || b[0] != packet::VERSION || b[1] & !wire::KV_FLAG_ACK != FLAG_DONE {
        return None;
    }
    Some(Done {
        job: u16::from_le_bytes([b[4], b[5]]),
        sender: u16::from_le_bytes([b[6], b[7]]),
        packets: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
        tuples: u64::from_le_bytes(b[16..24].try_into().ok()?),
        ack: b[1] & wire::KV_FLAG_ACK != 0,
    })
}

/// How a sender runs.
#[derive(Clone, Debug)]
pub struct SenderOptions {
    /// The card's key-value port (`IP:22342` on a card at `IP`).
    pub card: SocketAddr,
    /// The job's collector, told when this sender is done.
    pub collector: SocketAddr,
    /// Where to bind (`0.0.0.0:0`: any address, any port).
    pub bind: SocketAddr,
    /// Job id (`kv.JOB` on the card).
    pub job: u16,
    /// This sender's id, `0..` the job's senders.
    pub id: u16,
    /// The card's lanes (`kv.GEOMETRY.LANES`; 8 on the shipped card): tuples
    /// are placed in their keys' home lanes.
    pub lanes: usize,
    /// Largest UDP payload, bytes.
    pub max_packet_bytes: usize,
    /// The card's sequence window per sender.
    pub window: u32,
    /// The retransmission timer's floor.
    pub min_rto: Duration,
    /// Its ceiling, and the timeout before the first round trip is known.
    pub max_rto: Duration,
    /// Transmissions of one packet before the sender gives up.
    pub max_tries: u32,
    /// Give up when the card has acknowledged nothing this long after the
    /// sender opened (an unreachable card, or no job configured on it).
    pub first_ack_timeout: Duration,
}

impl SenderOptions {
    /// Defaults for sender `id` of `job`, sending to `card`, reporting to
    /// `collector`.
    pub fn new(card: SocketAddr, collector: SocketAddr, job: u16, id: u16) -> Self {
        Self {
            card,
            collector,
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            job,
            id,
            lanes: 8,
            max_packet_bytes: super::MTU_PAYLOAD_BYTES,
            window: WINDOW,
            min_rto: Duration::from_micros(200),
            max_rto: Duration::from_secs(1),
            max_tries: 200,
            first_ack_timeout: Duration::from_secs(60),
        }
    }

    fn max_tuples(&self) -> usize {
        super::tuples_in(self.max_packet_bytes)
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(KvError::Options(m));
        super::check_packet_bytes(self.max_packet_bytes)?;
        if !(1..=16).contains(&self.lanes) {
            return bad(format!("{} lanes: a card has 1 to 16", self.lanes));
        }
        if self.window == 0 || self.window > WINDOW {
            return bad(format!("window {}: 1 to {WINDOW}", self.window));
        }
        if self.max_tries == 0 || self.min_rto.is_zero() || self.max_rto < self.min_rto {
            return bad("max_tries must be positive and 0 < min_rto <= max_rto".into());
        }
        Ok(())
    }
}

/// What a sender did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SenderStats {
    /// Tuples sent.
    pub tuples: u64,
    /// Packets formed.
    pub packets: u64,
    /// Datagrams sent to the card, retransmissions included.
    pub transmissions: u64,
    /// Retransmissions because the timer fired.
    pub timeouts: u64,
    /// Retransmissions because RACK deemed a packet lost.
    pub fast_retransmissions: u64,
    /// Second copies of a flow's last packet, sent with it (not
    /// retransmissions: see [`super::flow::Transmission::TailCopy`]).
    pub tail_copies: u64,
    /// Acknowledgements received.
    pub acks: u64,
    /// Of them, for packets the card had seen before.
    pub duplicate_acks: u64,
    /// Packets retired by an ack's window base rather than their own ack
    /// (whose ack was lost, or was still on the way).
    pub cumulative_retired: u64,
    /// Datagrams that were neither an ack of this sender's nor the
    /// collector's answer.
    pub ignored: u64,
    /// The smoothed round trip at the end, microseconds.
    pub srtt_us: u64,
    /// Wall time from the first tuple to the collector's answer, seconds.
    pub seconds: f64,
    /// `tuples / seconds`.
    pub tuples_per_second: f64,
}

/// One worker sending to a card (see the module docs).
pub struct Sender {
    sock: UdpSocket,
    opts: SenderOptions,
    flow: Flow,
    start: Instant,
    stats: SenderStats,
    buf: Vec<u8>,
}

impl Sender {
    /// Bind the socket and set up the flow.
    pub fn open(opts: SenderOptions) -> Result<Self> {
        opts.validate()?;
        let sock = udp::bind(opts.bind).map_err(|e| KvError::Io {
            path: format!("udp {}", opts.bind),
            source: e,
        })?;
        let max_tuples = opts.max_tuples();
        // The placement needs only the lane count; the slot count does not
        // change a key's home lane.
        let cfg = Config {
            lanes: opts.lanes,
            slot_bits: 1,
            senders: 16,
        };
        let us = |d: Duration| d.as_micros().min(u64::MAX as u128) as u64;
        let flow = Flow::new(
            opts.job,
            opts.id,
            Packer::new(Placement::new(&cfg, max_tuples)),
            max_tuples,
            opts.window,
            Recovery::new(us(opts.min_rto), us(opts.max_rto)),
            // A millisecond of queue above the smallest round trip: enough
            // to keep a real card's input busy, small beside a simulated
            // card's round trips.
            DelayWindow::new(opts.window, 1000),
        );
        Ok(Self {
            sock,
            opts,
            flow,
            start: Instant::now(),
            stats: SenderStats::default(),
            buf: vec![0u8; 65536],
        })
    }

    /// The local address the card's acks come back to.
    pub fn local_addr(&self) -> Result<SocketAddr> {
        self.sock.local_addr().map_err(|e| self.io(e))
    }

    fn io(&self, e: std::io::Error) -> KvError {
        KvError::Io {
            path: format!("udp to {}", self.opts.card),
            source: e,
        }
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_micros() as u64
    }

    /// Queue a tuple; sends whatever the windows allow, and waits for acks
    /// while a whole window's worth of tuples is queued.
    pub fn push(&mut self, key: u32, value: i32) -> Result<()> {
        self.flow.push(key, value);
        self.stats.tuples += 1;
        let full = self.opts.max_tuples();
        if self.flow.pending() >= full {
            self.pump(false, false)?;
        }
        while self.flow.pending() >= full * self.opts.window as usize {
            self.pump(false, true)?;
        }
        Ok(())
    }

    /// Transmit what is due, then take acks: all that are waiting, and
    /// with `wait`, up to the next deadline for the first one.
    fn pump(&mut self, finishing: bool, wait: bool) -> Result<()> {
        let now = self.now();
        let (sock, card, stats) = (&self.sock, self.opts.card, &mut self.stats);
        let mut failed = None;
        self.flow
            .transmit(now, finishing, self.opts.max_tries, |payload, why| {
                match why {
                    Transmission::New { .. } => stats.packets += 1,
                    Transmission::Timeout => stats.timeouts += 1,
                    Transmission::Lost => stats.fast_retransmissions += 1,
                    Transmission::TailCopy => stats.tail_copies += 1,
                }
                stats.transmissions += 1;
                if let Err(e) = sock.send_to(payload, card) {
                    failed.get_or_insert(e);
                }
            })
            .map_err(|st| KvError::Stalled {
                sender: self.opts.id as usize,
                seq: st.seq,
                tries: st.tries,
            })?;
        if let Some(e) = failed {
            return Err(self.io(e));
        }
        if self.stats.acks == 0 && self.start.elapsed() > self.opts.first_ack_timeout {
            return Err(KvError::Unsupported(format!(
                "sender {}: no ack from the card at {} within {:?} (is the card reachable, and has a collector configured it for job {}?)",
                self.opts.id, self.opts.card, self.opts.first_ack_timeout, self.opts.job
            )));
        }
        let deadline = if wait {
            let next = self.flow.next_event().unwrap_or(now + 10_000);
            self.start + Duration::from_micros(next.max(now + 50))
        } else {
            Instant::now()
        };
        let mut first = true;
        loop {
            let d = if first { deadline } else { Instant::now() };
            first = false;
            let Some((n, from)) =
                udp::recv_until(&self.sock, &mut self.buf, d).map_err(|e| self.io(e))?
            else {
                return Ok(());
            };
            self.take(n, from, finishing);
        }
    }

    fn take(&mut self, n: usize, from: SocketAddr, finishing: bool) {
        let ack = (from == self.opts.card)
            .then(|| parse_ack(&self.buf[..n]))
            .flatten()
            .filter(|a| a.job == self.opts.job && a.sender == self.opts.id);
        match ack {
            Some(a) => {
                self.stats.acks += 1;
                if a.duplicate {
                    self.stats.duplicate_acks += 1;
                }
                let now = self.now();
                let n = self.flow.on_ack(now, a.seq, a.base, finishing);
                self.stats.cumulative_retired += n.saturating_sub(1) as u64;
            }
            None => self.stats.ignored += 1,
        }
    }

    /// Send the rest, wait until the card has acknowledged every packet,
    /// then tell the collector (repeating until it answers, up to
    /// `timeout` in all).
    pub fn finish(mut self, timeout: Duration) -> Result<SenderStats> {
        while self.flow.pending() > 0 || !self.flow.all_acked() {
            self.pump(true, true)?;
        }
        let msg = done_message(
            self.opts.job,
            self.opts.id,
            self.flow.packets(),
            self.stats.tuples,
            false,
        );
        let until = Instant::now() + timeout;
        let mut every = Duration::from_millis(20);
        'tell: loop {
            if Instant::now() >= until {
                return Err(KvError::Unsupported(format!(
                    "sender {}: the collector at {} did not answer DONE within {:?} (is `weft kv collect` running for job {}?)",
                    self.opts.id, self.opts.collector, timeout, self.opts.job
                )));
            }
            self.sock
                .send_to(&msg, self.opts.collector)
                .map_err(|e| self.io(e))?;
            let wait = Instant::now() + every;
            every = (every * 2).min(Duration::from_millis(500));
            while let Some((n, from)) =
                udp::recv_until(&self.sock, &mut self.buf, wait).map_err(|e| self.io(e))?
            {
                let answer = parse_done(&self.buf[..n])
                    .filter(|d| from == self.opts.collector && d.ack && d.sender == self.opts.id);
                if answer.is_some() {
                    break 'tell;
                }
                self.take(n, from, true);
            }
        }
        let st = &mut self.stats;
        st.srtt_us = self.flow.srtt().unwrap_or(0);
        st.seconds = self.start.elapsed().as_secs_f64();
        st.tuples_per_second = if st.seconds > 0.0 {
            st.tuples as f64 / st.seconds
        } else {
            0.0
        };
        Ok(self.stats)
    }
}
