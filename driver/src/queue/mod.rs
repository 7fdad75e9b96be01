//! Host queues: descriptor rings, doorbells and completion rings in host
//! memory, written once against [`Device`] so they drive the simulated card
//! and a real one alike. The protocol (weft's own, version 1) is specified
//! in `docs/queues.md`; the wire format is [`format`].
//!
//! - [`H2cQueue`] (host to card): the host copies a message into the
//!   slot's buffer, writes a descriptor, and rings the doorbell once per
//!   batch; the card fetches descriptor and payload by DMA and writes a
//!   completion. A slot is reused only after its completion was reaped.
//! - [`C2hQueue`] (card to host): the host posts every slot's buffer up
//!   front; the card writes a message into the next posted buffer and a
//!   completion; the host copies the message out and re-posts the slot
//!   (the descriptor stays as it is, so re-posting is one doorbell per
//!   batch).
//!
//! Completions carry a phase bit, so the host polls host memory, never a
//! card register, to find them. A ring may also raise an interrupt vector
//! after writing completions ([`RingConfig::irq`]); [`H2cQueue::wait`] and
//! [`C2hQueue::wait`] use it, or poll when there is none.
//!
//! Only weft's ring protocol is implemented, and only the simulated card's
//! modelled queue engine speaks it today. Alveo cards under AMD's OpenNIC
//! shell move data through AMD's QDMA engine, whose queues are programmed
//! differently; that backend does not exist yet (the host library's
//! `weft::queue` keeps a seam for it).

pub mod format;

use crate::{Device, DmaBuffer, Error, RegisterAccess, Result};
use format::{Completion, Descriptor, CPL_BYTES, DESC_BYTES};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weft_regs::queue::{self as q, Ring};

/// How to set up a ring.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// log2 of the entries (1 to `weft_regs::queue::MAX_LOG2`).
    pub log2: u32,
    /// Bytes of each slot's buffer: the largest message.
    pub buf_size: usize,
    /// Interrupt vector to raise after completions, or `None` to poll.
    pub irq: Option<u32>,
    /// H2C only: loop payloads back to C2H queue 0 (a test mode of the
    /// card's engine) instead of the card's input stream.
    pub loopback: bool,
}

impl Default for RingConfig {
    fn default() -> Self {
        Self {
            log2: 8,
            buf_size: 2048,
            irq: None,
            loopback: false,
        }
    }
}

/// What both directions share: registers, memory, indices.
struct RingCore {
    dev: Arc<dyn Device>,
    name: &'static str,
    regs: Ring,
    cfg: RingConfig,
    mask: u32,
    desc: Box<dyn DmaBuffer>,
    cpl: Box<dyn DmaBuffer>,
    bufs: Box<dyn DmaBuffer>,
    /// Descriptors written (producer index).
    tail: u32,
    /// Last doorbell value written.
    rung: u32,
    /// Completions consumed.
    cpl_head: u32,
}

impl RingCore {
    fn open(dev: Arc<dyn Device>, name: &'static str, regs: Ring, cfg: RingConfig) -> Result<Self> {
        let err = |why: String| Error::Queue {
            device: dev.name(),
            queue: name.into(),
            why,
        };
        let info = dev.read_reg(&q::INFO)?;
        let (protocol, max) = (q::INFO_PROTOCOL.get(info), q::INFO_MAX_LOG2.get(info));
        if protocol != q::PROTOCOL {
            return Err(err(format!(
                "the card's queue engine speaks ring protocol {protocol}, this driver {} (is there a queue block on the card's chain? `weft status` lists it)",
                q::PROTOCOL
            )));
        }
        if cfg.log2 == 0 || cfg.log2 > max {
            return Err(err(format!(
                "{} entries: rings have 2 to {} entries on this card",
                1u64 << cfg.log2.min(63),
                1u32 << max
            )));
        }
        if cfg.buf_size == 0 || cfg.buf_size > format::MAX_PAYLOAD as usize {
            return Err(err(format!(
                "buffers of {} bytes: 1 to {} bytes",
                cfg.buf_size,
                format::MAX_PAYLOAD
            )));
        }
        let n = 1usize << cfg.log2;
        let desc = dev.dma_alloc(n * DESC_BYTES)?;
        let cpl = dev.dma_alloc(n * CPL_BYTES)?;
        let bufs = dev.dma_alloc(n * cfg.buf_size)?;
        // A zeroed completion ring has phase 0 everywhere: nothing is
        // mistaken for a first-pass completion (phase 1).
        cpl.write(0, &vec![0u8; n * CPL_BYTES])?;
        dev.write_reg(&regs.ctrl, 0)?;
        dev.write_reg(&regs.status, !0)?;
        dev.write_reg(&regs.desc_lo, desc.iova() as u32)?;
        dev.write_reg(&regs.desc_hi, (desc.iova() >> 32) as u32)?;
        dev.write_reg(&regs.cpl_lo, cpl.iova() as u32)?;
        dev.write_reg(&regs.cpl_hi, (cpl.iova() >> 32) as u32)?;
        dev.write_reg(&regs.size, cfg.log2)?;
        let mut ctrl = q::CTRL_ENABLE.set(0, 1);
        if let Some(v) = cfg.irq {
            ctrl = q::CTRL_VECTOR.set(q::CTRL_IRQ.set(ctrl, 1), v);
        }
        ctrl = q::CTRL_LOOPBACK.set(ctrl, cfg.loopback as u32);
        dev.write_reg(&regs.ctrl, ctrl)?;
        let st = dev.read_reg(&regs.status)?;
        if st != 0 {
            return Err(err(format!("the card refused the ring: STATUS {st:#x}")));
        }
        Ok(Self {
            dev,
            name,
            regs,
            cfg,
            mask: (n - 1) as u32,
            desc,
            cpl,
            bufs,
            tail: 0,
            rung: 0,
            cpl_head: 0,
        })
    }

    fn err(&self, why: String) -> Error {
        Error::Queue {
            device: self.dev.name(),
            queue: self.name.into(),
            why,
        }
    }

    fn entries(&self) -> u32 {
        self.mask + 1
    }

    fn buf_iova(&self, slot: u32) -> u64 {
        self.bufs.iova() + slot as u64 * self.cfg.buf_size as u64
    }

    fn doorbell(&mut self) -> Result<()> {
        if self.tail != self.rung {
            self.dev.write_reg(&self.regs.doorbell, self.tail)?;
            self.rung = self.tail;
        }
        Ok(())
    }

    /// The next completion if the card has written it.
    fn peek(&self) -> Result<Option<Completion>> {
        let slot = self.cpl_head & self.mask;
        let mut b = [0u8; CPL_BYTES];
        self.cpl.read(slot as usize * CPL_BYTES, &mut b)?;
        let c = Completion::decode(&b);
        if c.flags & format::CPL_PHASE != format::phase(self.cpl_head, self.cfg.log2) {
            return Ok(None);
        }
        if c.id as u32 != slot & 0xffff {
            return Err(self.err(format!(
                "completion {} names descriptor {}, expected {slot} (completions are in order)",
                self.cpl_head, c.id
            )));
        }
        Ok(Some(c))
    }

    /// Tell the card how far completions were consumed.
    fn release(&mut self) -> Result<()> {
        self.dev.write_reg(&self.regs.cpl_head, self.cpl_head)
    }

    /// The ring's error bits, as an error if any is set.
    fn check_status(&self) -> Result<()> {
        let st = self.dev.read_reg(&self.regs.status)?;
        if st == 0 {
            return Ok(());
        }
        let names: Vec<&str> = self
            .regs
            .status
            .fields
            .iter()
            .filter(|f| f.get(st) != 0)
            .map(|f| f.name)
            .collect();
        Err(self.err(format!(
            "the card stopped the ring: STATUS {st:#x} ({})",
            names.join(", ")
        )))
    }

    fn wait(&self, timeout: Duration, ready: impl Fn(&Self) -> Result<bool>) -> Result<bool> {
        let deadline = Instant::now() + timeout;
        loop {
            if ready(self)? {
                return Ok(true);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                self.check_status()?;
                return Ok(false);
            }
            match self.cfg.irq {
                Some(v) => {
                    self.dev.wait_irq(v, left)?;
                }
                // Polling: host memory is cheap to read; back off a little
                // so a busy-wait does not starve the card's simulation.
                None => std::thread::sleep(left.min(Duration::from_micros(50))),
            }
        }
    }
}

impl Drop for RingCore {
    fn drop(&mut self) {
        // Stop the card before the ring memory goes away.
        let _ = self.dev.write_reg(&self.regs.ctrl, 0);
    }
}

/// A host-to-card queue.
pub struct H2cQueue {
    core: RingCore,
}

impl H2cQueue {
    /// Set up H2C queue 0 of `dev` and enable it.
    pub fn open(dev: Arc<dyn Device>, cfg: RingConfig) -> Result<Self> {
        Ok(Self {
            core: RingCore::open(dev, "h2c0", q::H2C, cfg)?,
        })
    }

    /// Entries in the ring.
    pub fn entries(&self) -> u32 {
        self.core.entries()
    }

    /// Descriptors written and not yet completed.
    pub fn in_flight(&self) -> u32 {
        self.core.tail.wrapping_sub(self.core.cpl_head)
    }

    /// Free slots.
    pub fn space(&self) -> u32 {
        self.entries() - self.in_flight()
    }

    /// Write one message into the next slot, without ringing the doorbell.
    /// `Ok(false)` when the ring is full (reap completions first).
    pub fn push(&mut self, msg: &[u8]) -> Result<bool> {
        let c = &mut self.core;
        if msg.is_empty() || msg.len() > c.cfg.buf_size {
            return Err(c.err(format!(
                "a message of {} bytes: messages are 1 to {} bytes",
                msg.len(),
                c.cfg.buf_size
            )));
        }
        if c.tail.wrapping_sub(c.cpl_head) == c.entries() {
            return Ok(false);
        }
        let slot = c.tail & c.mask;
        c.bufs.write(slot as usize * c.cfg.buf_size, msg)?;
        let d = Descriptor {
            addr: c.buf_iova(slot),
            len: msg.len() as u32,
            id: slot as u16,
            flags: 0,
        };
        c.desc.write(slot as usize * DESC_BYTES, &d.encode())?;
        c.tail = c.tail.wrapping_add(1);
        Ok(true)
    }

    /// Tell the card about every descriptor pushed so far (one register
    /// write, none when nothing is new).
    pub fn doorbell(&mut self) -> Result<()> {
        self.core.doorbell()
    }

    /// Push as many of `msgs` as fit, then ring the doorbell once; returns
    /// how many were queued.
    pub fn send<M: AsRef<[u8]>>(&mut self, msgs: &[M]) -> Result<usize> {
        let mut n = 0;
        for m in msgs {
            if !self.push(m.as_ref())? {
                break;
            }
            n += 1;
        }
        self.doorbell()?;
        Ok(n)
    }

    /// Consume the completions the card has written; returns how many.
    /// A completion with an error status is an error (the card has then
    /// stopped the ring).
    pub fn reap(&mut self) -> Result<u32> {
        let mut n = 0;
        while self.in_flight() > 0 {
            let Some(c) = self.core.peek()? else { break };
            if c.status != format::status::OK {
                return Err(self.core.err(format!(
                    "descriptor {} failed: {}",
                    c.id,
                    format::status::name(c.status)
                )));
            }
            self.core.cpl_head = self.core.cpl_head.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            self.core.release()?;
        }
        Ok(n)
    }

    /// Wait up to `timeout` until a completion is there to reap.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.core
            .wait(timeout, |c| Ok(c.tail != c.cpl_head && c.peek()?.is_some()))
    }

    /// Raise the ring's error bits as an error, if the card set any.
    pub fn check(&self) -> Result<()> {
        self.core.check_status()
    }
}

/// A card-to-host queue.
pub struct C2hQueue {
    core: RingCore,
}

impl C2hQueue {
    /// Set up C2H queue 0 of `dev`, post a buffer in every slot and enable
    /// it.
    pub fn open(dev: Arc<dyn Device>, cfg: RingConfig) -> Result<Self> {
        let mut core = RingCore::open(dev, "c2h0", q::C2H, cfg)?;
        let n = core.entries();
        let mut ring = vec![0u8; n as usize * DESC_BYTES];
        for slot in 0..n {
            let d = Descriptor {
                addr: core.buf_iova(slot),
                len: cfg.buf_size as u32,
                id: slot as u16,
                flags: 0,
            };
            ring[slot as usize * DESC_BYTES..][..DESC_BYTES].copy_from_slice(&d.encode());
        }
        core.desc.write(0, &ring)?;
        core.tail = n;
        core.doorbell()?;
        Ok(Self { core })
    }

    /// Entries in the ring.
    pub fn entries(&self) -> u32 {
        self.core.entries()
    }

    /// Copy out up to `max` messages the card has written, appending them
    /// to `out`; re-post their buffers with one doorbell. Returns how many.
    pub fn recv(&mut self, max: usize, out: &mut Vec<Vec<u8>>) -> Result<usize> {
        let mut n = 0;
        while n < max {
            let Some(c) = self.core.peek()? else { break };
            let slot = self.core.cpl_head & self.core.mask;
            if c.status != format::status::OK {
                return Err(self.core.err(format!(
                    "message into slot {slot} failed: {} ({} bytes)",
                    format::status::name(c.status),
                    c.len
                )));
            }
            if c.len as usize > self.core.cfg.buf_size {
                return Err(self.core.err(format!(
                    "the card reports {} bytes in a {}-byte buffer",
                    c.len, self.core.cfg.buf_size
                )));
            }
            let mut msg = vec![0u8; c.len as usize];
            self.core
                .bufs
                .read(slot as usize * self.core.cfg.buf_size, &mut msg)?;
            out.push(msg);
            self.core.cpl_head = self.core.cpl_head.wrapping_add(1);
            // The slot's descriptor still names its buffer: re-posting is
            // moving the producer index past it.
            self.core.tail = self.core.tail.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            self.core.release()?;
            self.core.doorbell()?;
        }
        Ok(n)
    }

    /// Wait up to `timeout` until a message is there to receive.
    pub fn wait(&self, timeout: Duration) -> Result<bool> {
        self.core.wait(timeout, |c| Ok(c.peek()?.is_some()))
    }

    /// Raise the ring's error bits as an error, if the card set any.
    pub fn check(&self) -> Result<()> {
        self.core.check_status()
    }
}
