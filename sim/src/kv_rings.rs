//! Key-value traffic through the host queues: [`RingKvCard`] is the
//! simulated card as the key-value daemon sees it ([`KvCard`]), with every
//! packet sent on H2C queue 0 and every ack and record beat received on
//! C2H queue 0, through weft-driver's queue code ([`H2cQueue`],
//! [`C2hQueue`]) and the modelled queue engine ([`crate::queue_engine`]).
//!
//! C2H messages (this card's host-bound stream, `docs/queues.md`):
//! - ack: `[1, 0, 0, 0]` then the ack's 64-bit word (`Ack::pack`), LE;
//! - record beat: `[2, kind, lanes, 0]`, a 32-bit lane mask, then per lane
//!   the key and the partial sum as two LE 32-bit words (zero when absent).

use crate::kv_card::{CardOutput, KvCard};
use crate::SimDevice;
use std::sync::Arc;
use weft_driver::queue::{C2hQueue, H2cQueue, RingConfig};
use weft_driver::{Device, RegisterAccess};
use weft_model::kv_agg::packet::{Ack, RecordBeat, RecordKind, MAX_PACKET_BYTES};
use weft_model::kv_agg::Config;
use weft_regs::Register;

/// Message type: an acknowledgement.
pub const MSG_ACK: u8 = 1;
/// Message type: a record beat.
pub const MSG_RECORD: u8 = 2;

/// Encode an ack as a C2H message.
pub fn encode_ack(a: &Ack) -> Vec<u8> {
    let mut m = vec![MSG_ACK, 0, 0, 0];
    m.extend_from_slice(&a.pack().to_le_bytes());
    m
}

/// Encode a record beat as a C2H message.
pub fn encode_record(r: &RecordBeat) -> Vec<u8> {
    let mut m = vec![MSG_RECORD, r.kind as u8, r.lanes.len() as u8, 0];
    let mask = r
        .lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| l.is_some())
        .fold(0u32, |m, (i, _)| m | 1 << i);
    m.extend_from_slice(&mask.to_le_bytes());
    for l in &r.lanes {
        let (k, v) = l.unwrap_or((0, 0));
        m.extend_from_slice(&k.to_le_bytes());
        m.extend_from_slice(&v.to_le_bytes());
    }
    m
}

/// A decoded C2H message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Message {
    /// An acknowledgement.
    Ack(Ack),
    /// A record beat.
    Record(RecordBeat),
}

fn word(m: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(m.get(at..at + 4)?.try_into().ok()?))
}

/// Decode a C2H message; `None` for a malformed one.
pub fn decode(m: &[u8]) -> Option<Message> {
    match *m.first()? {
        MSG_ACK if m.len() == 12 => {
            let w = u64::from_le_bytes(m[4..12].try_into().ok()?);
            Ack::unpack(w).map(Message::Ack)
        }
        MSG_RECORD => {
            let kind = RecordKind::from_code(*m.get(1)?)?;
            let lanes = *m.get(2)? as usize;
            if lanes > 32 || m.len() != 8 + 8 * lanes {
                return None;
            }
            let mask = word(m, 4)?;
            let lanes = (0..lanes)
                .map(|i| {
                    let k = word(m, 8 + 8 * i)?;
                    let v = word(m, 12 + 8 * i)? as i32;
                    Some((mask & (1 << i) != 0).then_some((k, v)))
                })
                .collect::<Option<Vec<_>>>()?;
            Some(Message::Record(RecordBeat { kind, lanes }))
        }
        _ => None,
    }
}

/// Largest C2H message: a record beat of 32 lanes.
const C2H_BUF: usize = 8 + 8 * 32;

/// The simulated card with its key-value traffic on the host queues.
pub struct RingKvCard {
    dev: Arc<SimDevice>,
    h2c: H2cQueue,
    c2h: C2hQueue,
    pending: Vec<Vec<u8>>,
    fault: Option<String>,
    received: Vec<Vec<u8>>,
    sent: u64,
}

impl RingKvCard {
    /// Open H2C and C2H queue 0 of `dev` (polled: the daemon drives the
    /// simulation and looks for completions after every step).
    pub fn new(dev: Arc<SimDevice>) -> weft_driver::Result<Self> {
        let d: Arc<dyn Device> = dev.clone();
        let h2c = H2cQueue::open(
            d.clone(),
            RingConfig {
                log2: 8,
                buf_size: MAX_PACKET_BYTES,
                irq: None,
                loopback: false,
            },
        )?;
        let c2h = C2hQueue::open(
            d,
            RingConfig {
                log2: 10,
                buf_size: C2H_BUF,
                irq: None,
                loopback: false,
            },
        )?;
        Ok(Self {
            dev,
            h2c,
            c2h,
            pending: vec![],
            fault: None,
            received: vec![],
            sent: 0,
        })
    }

    /// Packets sent through H2C queue 0 so far.
    pub fn packets_sent(&self) -> u64 {
        self.sent
    }

    fn note(&mut self, e: impl std::fmt::Display) {
        if self.fault.is_none() {
            self.fault = Some(e.to_string());
        }
    }

    /// Send every pending packet: as many as fit per doorbell, reaping
    /// completions between batches.
    fn flush_sends(&mut self) {
        let mut at = 0;
        while at < self.pending.len() {
            match self.h2c.send(&self.pending[at..]) {
                Ok(n) => at += n,
                Err(e) => {
                    self.note(e);
                    break;
                }
            }
            match self.h2c.reap() {
                // The modelled engine completes at the doorbell: a full
                // ring that frees nothing means the ring stopped.
                Ok(0) if self.h2c.space() == 0 => {
                    let e = self.h2c.check().err().map_or_else(
                        || "H2C ring full and no completions".to_string(),
                        |e| e.to_string(),
                    );
                    self.note(e);
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    self.note(e);
                    break;
                }
            }
        }
        self.sent += at as u64;
        self.pending.clear();
    }

    fn receive(&mut self, out: &mut CardOutput) {
        loop {
            self.received.clear();
            match self.c2h.recv(1024, &mut self.received) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    self.note(e);
                    break;
                }
            }
            for m in std::mem::take(&mut self.received) {
                match decode(&m) {
                    Some(Message::Ack(a)) => out.acks.push(a),
                    Some(Message::Record(r)) => out.records.push(r),
                    None => self.note(format!("malformed C2H message {m:02x?}")),
                }
            }
        }
    }
}

impl KvCard for RingKvCard {
    fn config(&self) -> Config {
        self.dev.kv_config()
    }

    fn deliver(&mut self, payload: Vec<u8>) {
        // Batched: sent with one doorbell when the card next runs.
        self.pending.push(payload);
    }

    fn advance(&mut self, cycles: u64) -> CardOutput {
        self.flush_sends();
        let mut out = self.dev.advance_cycles(cycles);
        self.receive(&mut out);
        out
    }

    fn write_reg(&mut self, reg: &Register, value: u32) {
        self.flush_sends();
        if let Err(e) = self.dev.write_reg(reg, value) {
            self.note(e);
        }
    }

    fn read_reg(&mut self, reg: &Register) -> u32 {
        self.dev.read_reg(reg).unwrap_or_else(|e| {
            self.note(e);
            0
        })
    }

    fn cycles(&self) -> u64 {
        self.dev.cycles()
    }

    fn beats(&self) -> u64 {
        self.dev.input_beats()
    }

    fn idle(&self) -> bool {
        self.pending.is_empty() && self.dev.input_idle()
    }

    fn fault(&self) -> Option<String> {
        self.fault.clone().or_else(|| self.dev.first_fault())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_model::kv_agg::packet::AckStatus;

    #[test]
    fn messages_round_trip() {
        let a = Ack {
            sender: 3,
            seq: 77,
            status: AckStatus::Duplicate,
        };
        assert_eq!(decode(&encode_ack(&a)), Some(Message::Ack(a)));
        let r = RecordBeat {
            kind: RecordKind::Spill,
            lanes: vec![Some((5, -9)), None, Some((u32::MAX, i32::MIN)), None],
        };
        assert_eq!(decode(&encode_record(&r)), Some(Message::Record(r)));
        assert_eq!(decode(&[9, 9]), None);
        assert_eq!(decode(&[MSG_RECORD, 1, 2, 0]), None);
    }
}
