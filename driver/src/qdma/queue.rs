//! One queue pair: an H2C descriptor ring with its buffers, a C2H
//! descriptor ring with its buffers, and the completion ring that says
//! which C2H buffers hold a packet.
//!
//! Layouts (PG302, streaming mode; open-nic-driver `onic_tx.c`/`onic_rx.c`):
//! * H2C descriptor, 16 B: metadata `[31:0]` (the shell takes the packet's
//!   `tuser_size` from its low 16 bits, so it carries the length), length
//!   `[47:32]`, buffer address `[127:64]`. One descriptor is one packet.
//! * C2H descriptor, 8 B: a buffer's address; the buffer's size is the
//!   prefetch context's (`BUF_SIZES[C2H_BUFSZ_IDX]`). A packet longer than a buffer
//!   takes the next ones too.
//! * Completion entry, 8 B: colour `[1]`, error `[2]`, length `[47:32]`,
//!   packet id `[63:48]` (the shell's `qdma_subsystem_c2h.sv`).
//! * The last slot of each ring is the status the engine writes back:
//!   H2C `pidx[15:0] cidx[31:16]`; completion `pidx[15:0] cidx[31:16]
//!   color[32]`.
//!
//! Every ring of `n` slots holds `n - 1` descriptors, indices wrap at
//! `n - 1`, and the driver keeps one descriptor free so a full ring is
//! never mistaken for an empty one. Nothing on the send or poll path
//! allocates: frames are copied straight into (and out of) the rings'
//! DMA buffers.

use super::regs::*;
use super::{Bar, QdmaBus, BUF_SIZES, C2H_BUFSZ_IDX};
use crate::{DmaBuffer, Error, Result};
use std::sync::Arc;

const H2C_DESC: usize = 16;
const C2H_DESC: usize = 8;
const CMPT_ENTRY: usize = 8;
/// Completion entry bits: colour (bit 1) and error (bit 2).
const CMPT_COLOR: u32 = 1 << 1;
const CMPT_ERR: u32 = 1 << 2;

/// What a queue pair has done.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Packets posted to the H2C ring.
    pub sent: u64,
    /// H2C doorbell writes (sent / doorbells is the batching).
    pub h2c_doorbells: u64,
    /// Packets taken from the completion ring.
    pub received: u64,
    /// Completions the engine flagged with its error bit (data dropped).
    pub errors: u64,
}

/// One queue pair, owned by one thread.
pub struct QueuePair {
    bus: Arc<dyn QdmaBus>,
    local: u32,
    /// Ring slots (the status slot included).
    n: usize,
    h2c_buf: usize,
    c2h_buf: usize,
    batch: usize,
    h2c_ring: Box<dyn DmaBuffer>,
    h2c_data: Box<dyn DmaBuffer>,
    c2h_ring: Box<dyn DmaBuffer>,
    c2h_data: Box<dyn DmaBuffer>,
    cmpt_ring: Box<dyn DmaBuffer>,
    /// H2C: next descriptor to fill, and the engine's consumer index as
    /// last written back.
    h2c_pidx: usize,
    h2c_cidx: usize,
    /// Descriptors filled since the last doorbell, staged here and written
    /// to the ring in one piece (two at a wrap) when it rings.
    unrung: usize,
    staged: Vec<u8>,
    /// C2H: the next buffer a completion fills. Every buffer from it on,
    /// but the one just before it, is the engine's: the producer index the
    /// driver writes is always `c2h_next - 1`.
    c2h_next: usize,
    /// Completion ring: next entry to read and the colour it must carry.
    cmpt_cidx: usize,
    color: bool,
    stats: QueueStats,
    /// One completion's packet, reused.
    scratch: Vec<u8>,
}

fn u64_at(b: &dyn DmaBuffer, off: usize) -> Result<u64> {
    let mut w = [0u8; 8];
    b.read(off, &mut w)?;
    Ok(u64::from_le_bytes(w))
}

impl QueuePair {
    pub(super) fn alloc<B: QdmaBus + 'static>(
        bus: Arc<B>,
        local: u32,
        n: usize,
        h2c_buf: usize,
        batch: usize,
    ) -> Result<Self> {
        let c2h_buf = BUF_SIZES[C2H_BUFSZ_IDX] as usize;
        let bus: Arc<dyn QdmaBus> = bus;
        let h2c_ring = bus.dma_alloc(n * H2C_DESC)?;
        let h2c_data = bus.dma_alloc((n - 1) * h2c_buf)?;
        let c2h_ring = bus.dma_alloc(n * C2H_DESC)?;
        let c2h_data = bus.dma_alloc((n - 1) * c2h_buf)?;
        let cmpt_ring = bus.dma_alloc(n * CMPT_ENTRY)?;
        // Every C2H descriptor points at its own buffer for good: returning
        // a buffer is only moving the producer index past it.
        let mut ring = vec![0u8; n * C2H_DESC];
        for i in 0..n - 1 {
            let a = c2h_data.iova() + (i * c2h_buf) as u64;
            ring[i * C2H_DESC..(i + 1) * C2H_DESC].copy_from_slice(&a.to_le_bytes());
        }
        c2h_ring.write(0, &ring)?;
        Ok(Self {
            bus,
            local,
            n,
            h2c_buf,
            c2h_buf,
            batch: batch.min(n - 2).max(1),
            h2c_ring,
            h2c_data,
            c2h_ring,
            c2h_data,
            cmpt_ring,
            h2c_pidx: 0,
            h2c_cidx: 0,
            unrung: 0,
            staged: Vec::with_capacity((n - 1) * H2C_DESC),
            c2h_next: 0,
            cmpt_cidx: 0,
            color: true,
            stats: QueueStats::default(),
            scratch: Vec::with_capacity(u16::MAX as usize),
        })
    }

    /// Hand every C2H buffer but one to the engine and tell it where the
    /// completion ring's consumer is (after its contexts are written).
    pub(super) fn start(&self) -> Result<()> {
        self.write_cmpt_cidx()?;
        self.write_c2h_pidx()
    }

    fn write_c2h_pidx(&self) -> Result<()> {
        let me = (self.c2h_next + self.slots() - 1) % self.slots();
        self.bus.write32(
            Bar::Qdma,
            doorbell(self.local, DB_C2H_PIDX),
            DB_IDX.put(me as u32),
        )
    }

    fn slots(&self) -> usize {
        self.n - 1
    }

    /// The function-relative queue number.
    pub fn local(&self) -> u32 {
        self.local
    }

    pub(super) fn h2c_ring_iova(&self) -> u64 {
        self.h2c_ring.iova()
    }
    pub(super) fn c2h_ring_iova(&self) -> u64 {
        self.c2h_ring.iova()
    }
    pub(super) fn cmpt_ring_iova(&self) -> u64 {
        self.cmpt_ring.iova()
    }

    /// What the queue has done so far.
    pub fn stats(&self) -> QueueStats {
        self.stats
    }

    /// The longest frame [`QueuePair::send`] takes.
    pub fn max_frame(&self) -> usize {
        self.h2c_buf
    }

    fn in_flight(&self) -> usize {
        (self.h2c_pidx + self.slots() - self.h2c_cidx) % self.slots()
    }

    /// H2C descriptors posted that the engine has not consumed yet (as of
    /// its last status write-back).
    pub fn h2c_pending(&mut self) -> Result<usize> {
        self.reclaim()?;
        Ok(self.in_flight())
    }

    /// Take the engine's consumer index from the H2C status slot.
    fn reclaim(&mut self) -> Result<()> {
        let st = u64_at(self.h2c_ring.as_ref(), self.slots() * H2C_DESC)? as u32;
        let cidx = (st >> 16) as usize;
        if cidx >= self.slots() {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!(
                    "queue {}: H2C status reports consumer index {cidx} in a {}-descriptor ring",
                    self.local,
                    self.slots()
                ),
            });
        }
        self.h2c_cidx = cidx;
        Ok(())
    }

    /// Post one frame on the H2C ring; `Ok(false)` when the ring is full
    /// (nothing posted: try again after the engine has consumed some).
    /// The doorbell is rung every `batch` frames and by [`QueuePair::flush`].
    pub fn send(&mut self, frame: &[u8]) -> Result<bool> {
        if frame.is_empty() || frame.len() > self.h2c_buf {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!(
                    "queue {}: a {}-byte frame does not fit its {}-byte H2C buffers",
                    self.local,
                    frame.len(),
                    self.h2c_buf
                ),
            });
        }
        if self.in_flight() + 1 >= self.slots() {
            self.reclaim()?;
            if self.in_flight() + 1 >= self.slots() {
                self.flush()?;
                return Ok(false);
            }
        }
        let i = self.h2c_pidx;
        self.h2c_data.write(i * self.h2c_buf, frame)?;
        let len = frame.len() as u64;
        let addr = self.h2c_data.iova() + (i * self.h2c_buf) as u64;
        // metadata = length: the shell's tuser_size (onic does the same).
        let lo = len | (len << 32);
        let mut d = [0u8; H2C_DESC];
        d[..8].copy_from_slice(&lo.to_le_bytes());
        d[8..].copy_from_slice(&addr.to_le_bytes());
        self.staged.extend_from_slice(&d);
        self.h2c_pidx = (i + 1) % self.slots();
        self.stats.sent += 1;
        self.unrung += 1;
        if self.unrung >= self.batch {
            self.flush()?;
        }
        Ok(true)
    }

    /// Ring the H2C doorbell for every descriptor posted since the last.
    pub fn flush(&mut self) -> Result<()> {
        if self.unrung == 0 {
            return Ok(());
        }
        let first = (self.h2c_pidx + self.slots() - self.unrung) % self.slots();
        let to_end = (self.slots() - first).min(self.unrung) * H2C_DESC;
        self.h2c_ring
            .write(first * H2C_DESC, &self.staged[..to_end])?;
        if to_end < self.staged.len() {
            self.h2c_ring.write(0, &self.staged[to_end..])?;
        }
        self.staged.clear();
        self.bus.write32(
            Bar::Qdma,
            doorbell(self.local, DB_H2C_PIDX),
            DB_IDX.put(self.h2c_pidx as u32),
        )?;
        self.unrung = 0;
        self.stats.h2c_doorbells += 1;
        Ok(())
    }

    fn write_cmpt_cidx(&self) -> Result<()> {
        self.bus.write32(
            Bar::Qdma,
            doorbell(self.local, DB_CMPT_CIDX),
            DB_IDX.put(self.cmpt_cidx as u32)
                | DB_CMPT_TRIG.put(trig::EVERY)
                | DB_CMPT_STAT_EN.put(1),
        )
    }

    /// Whether the engine has completed packets not yet polled.
    pub fn rx_ready(&self) -> Result<bool> {
        let st = u64_at(self.cmpt_ring.as_ref(), self.slots() * CMPT_ENTRY)?;
        Ok((st & 0xffff) as usize != self.cmpt_cidx)
    }

    /// Hand every packet the engine has completed to `each`, return their
    /// buffers to the engine, and move the completion ring's consumer
    /// index. Returns how many.
    pub fn poll(&mut self, mut each: impl FnMut(&[u8])) -> Result<usize> {
        let st = u64_at(self.cmpt_ring.as_ref(), self.slots() * CMPT_ENTRY)?;
        let hw_pidx = (st & 0xffff) as usize;
        if hw_pidx >= self.slots() {
            return Err(self.bad(format!(
                "completion status reports producer index {hw_pidx}"
            )));
        }
        let mut got = 0;
        let mut used = 0;
        while self.cmpt_cidx != hw_pidx {
            let e = u64_at(self.cmpt_ring.as_ref(), self.cmpt_cidx * CMPT_ENTRY)?;
            // An entry of the old colour is not written yet, whatever the
            // status said: stop and come back.
            if (e as u32 & CMPT_COLOR != 0) != self.color {
                break;
            }
            let len = ((e >> 32) & 0xffff) as usize;
            let descs = len.div_ceil(self.c2h_buf).max(1);
            if descs > self.slots() - 1 {
                return Err(self.bad(format!("a completion of {len} bytes needs {descs} buffers")));
            }
            if e as u32 & CMPT_ERR != 0 {
                self.stats.errors += 1;
            } else {
                self.scratch.clear();
                let mut left = len;
                for k in 0..descs {
                    let b = (self.c2h_next + k) % self.slots();
                    let n = left.min(self.c2h_buf);
                    let at = self.scratch.len();
                    self.scratch.resize(at + n, 0);
                    self.c2h_data
                        .read(b * self.c2h_buf, &mut self.scratch[at..at + n])?;
                    left -= n;
                }
                each(&self.scratch);
                self.stats.received += 1;
                got += 1;
            }
            self.c2h_next = (self.c2h_next + descs) % self.slots();
            used += descs;
            self.cmpt_cidx += 1;
            if self.cmpt_cidx == self.slots() {
                self.cmpt_cidx = 0;
                self.color = !self.color;
            }
        }
        if used > 0 {
            // The buffers are free again: the C2H producer index moves past
            // them (their descriptors already point at them).
            self.write_c2h_pidx()?;
            self.write_cmpt_cidx()?;
        }
        Ok(got)
    }

    fn bad(&self, why: String) -> Error {
        Error::Qdma {
            device: self.bus.name(),
            why: format!("queue {}: {why}", self.local),
        }
    }
}
