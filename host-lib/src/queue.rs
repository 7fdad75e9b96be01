//! Host queues for applications: send messages to the card, receive
//! messages from it, independent of how the card's DMA engine lays out its
//! rings.
//!
//! [`QueueBackend`] is the seam. One backend exists today:
//! [`WeftRings`], weft's own ring protocol (`docs/queues.md`) through
//! weft-driver's [`H2cQueue`] and [`C2hQueue`], served by the simulated
//! card's modelled queue engine. Real Alveo cards under AMD's OpenNIC shell
//! move data through AMD's QDMA engine, whose queue contexts, descriptor
//! formats and doorbells are its own; a QDMA backend will implement
//! [`QueueBackend`] and nothing above it changes. It is not implemented:
//! [`Queues::open`] refuses a card without weft's `queue` block and says so.
//!
//! ```no_run
//! let nic = weft::Nic::open("sim")?;
//! let mut q = weft::queue::Queues::open(&nic, &Default::default())?;
//! q.send_all(&[b"hello".as_slice()], std::time::Duration::from_secs(1))?;
//! # Ok::<(), weft::Error>(())
//! ```

use crate::{Error, Nic, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_driver::queue::{C2hQueue, H2cQueue, RingConfig};
use weft_driver::Device;

/// A way of moving messages between host and card.
pub trait QueueBackend: Send {
    /// Which backend this is, for messages (`weft-rings`, later `qdma`).
    fn kind(&self) -> &'static str;
    /// Queue messages to the card; returns how many were taken (the rest
    /// did not fit: call [`QueueBackend::complete`] and retry).
    fn send(&mut self, msgs: &[&[u8]]) -> Result<usize>;
    /// Reclaim sends the card has finished; returns how many.
    fn complete(&mut self) -> Result<usize>;
    /// Move up to `max` messages from the card into `out`; returns how many.
    fn recv(&mut self, max: usize, out: &mut Vec<Vec<u8>>) -> Result<usize>;
    /// Wait up to `timeout` for a completion or a message (or return early
    /// when one may have arrived); `Ok(false)` on timeout.
    fn wait(&mut self, timeout: Duration) -> Result<bool>;
    /// Sends queued and not yet completed.
    fn in_flight(&self) -> usize;
}

/// How to set up queues.
#[derive(Clone, Debug)]
pub struct QueueOptions {
    /// Entries per ring (a power of two).
    pub entries: u32,
    /// Largest message, in bytes.
    pub max_message: usize,
    /// Interrupt vector for completions and messages; `None` polls.
    pub irq: Option<u32>,
    /// Ask the card to return every sent message on the receive queue (a
    /// test mode of weft's queue engine).
    pub loopback: bool,
}

impl Default for QueueOptions {
    fn default() -> Self {
        Self {
            entries: 256,
            max_message: 2048,
            irq: None,
            loopback: false,
        }
    }
}

/// weft's ring protocol: H2C queue 0 and C2H queue 0.
pub struct WeftRings {
    h2c: H2cQueue,
    c2h: C2hQueue,
    irq: Option<u32>,
    dev: Arc<dyn Device>,
}

impl WeftRings {
    /// Open both rings of `dev`.
    pub fn open(dev: Arc<dyn Device>, o: &QueueOptions) -> Result<Self> {
        if !o.entries.is_power_of_two() || o.entries < 2 {
            return Err(Error::Unsupported(format!(
                "{} queue entries: a power of two, at least 2",
                o.entries
            )));
        }
        let log2 = o.entries.trailing_zeros();
        let h2c = H2cQueue::open(
            dev.clone(),
            RingConfig {
                log2,
                buf_size: o.max_message,
                irq: o.irq,
                loopback: o.loopback,
            },
        )?;
        let c2h = C2hQueue::open(
            dev.clone(),
            RingConfig {
                log2,
                buf_size: o.max_message,
                irq: o.irq,
                loopback: false,
            },
        )?;
        Ok(Self {
            h2c,
            c2h,
            irq: o.irq,
            dev,
        })
    }
}

impl QueueBackend for WeftRings {
    fn kind(&self) -> &'static str {
        "weft-rings"
    }
    fn send(&mut self, msgs: &[&[u8]]) -> Result<usize> {
        Ok(self.h2c.send(msgs)?)
    }
    fn complete(&mut self) -> Result<usize> {
        Ok(self.h2c.reap()? as usize)
    }
    fn recv(&mut self, max: usize, out: &mut Vec<Vec<u8>>) -> Result<usize> {
        Ok(self.c2h.recv(max, out)?)
    }
    fn wait(&mut self, timeout: Duration) -> Result<bool> {
        // Both rings may share the vector; one wait covers both.
        if let Some(v) = self.irq {
            return Ok(self.dev.wait_irq(v, timeout)?);
        }
        let half = timeout / 2;
        Ok(self.h2c.wait(half)? || self.c2h.wait(timeout - half)?)
    }
    fn in_flight(&self) -> usize {
        self.h2c.in_flight() as usize
    }
}

/// A card's host queues, whatever the backend.
pub struct Queues {
    backend: Box<dyn QueueBackend>,
}

impl Queues {
    /// Open the queues of `nic`: weft's rings when the card has weft's
    /// `queue` block; AMD QDMA (OpenNIC shell) is not implemented.
    pub fn open(nic: &Nic, o: &QueueOptions) -> Result<Self> {
        let info = nic.identify()?;
        let has_rings = info
            .blocks
            .iter()
            .any(|b| b.type_id == weft_regs::block_type::QUEUE);
        if !has_rings {
            return Err(Error::Unsupported(format!(
                "{}: the card has no weft queue block; cards under AMD's OpenNIC shell use AMD QDMA queues, which weft does not implement yet",
                nic.spec()
            )));
        }
        Ok(Self::with_backend(Box::new(WeftRings::open(
            nic.device_arc(),
            o,
        )?)))
    }

    /// Queues over any backend.
    pub fn with_backend(backend: Box<dyn QueueBackend>) -> Self {
        Self { backend }
    }

    /// The backend's name.
    pub fn kind(&self) -> &'static str {
        self.backend.kind()
    }

    /// The backend.
    pub fn backend(&mut self) -> &mut dyn QueueBackend {
        self.backend.as_mut()
    }

    /// Send every message, reclaiming completions as needed; fails if the
    /// card makes no progress for `timeout`.
    pub fn send_all(&mut self, msgs: &[&[u8]], timeout: Duration) -> Result<()> {
        let mut at = 0;
        let mut last = Instant::now();
        while at < msgs.len() {
            let n = self.backend.send(&msgs[at..])?;
            at += n;
            if self.backend.complete()? > 0 || n > 0 {
                last = Instant::now();
                continue;
            }
            if last.elapsed() > timeout {
                return Err(Error::Check(format!(
                    "{}: the card took no message for {timeout:?} ({} of {} sent)",
                    self.backend.kind(),
                    at,
                    msgs.len()
                )));
            }
            self.backend.wait(Duration::from_millis(1))?;
        }
        Ok(())
    }

    /// Receive up to `max` messages, waiting up to `timeout` for the first.
    pub fn recv(&mut self, max: usize, timeout: Duration) -> Result<Vec<Vec<u8>>> {
        let mut out = vec![];
        let deadline = Instant::now() + timeout;
        loop {
            self.backend.complete()?;
            if self.backend.recv(max, &mut out)? > 0 {
                return Ok(out);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(out);
            }
            self.backend.wait(left)?;
        }
    }
}
