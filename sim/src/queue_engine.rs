//! A software model of the card's host queue engine: the card side of
//! weft's ring protocol (`docs/queues.md`), serving the `queue` register
//! block and moving data by DMA through the [`HostMemory`] IOVA model.
//!
//! **This is a model, not RTL.** The card's RTL has no DMA engine yet, so
//! `SimDevice` answers the queue block's addresses here, in software,
//! before they reach the AXI4-Lite bus; every other register is still the
//! RTL's. The model is what an RTL queue engine must do, at the level of
//! descriptors and completions; it takes no simulated time (a doorbell is
//! served when it is written, a C2H message when it is produced).
//!
//! Behaviour:
//! - enabling a ring (`CTRL.ENABLE` 0 -> 1) checks its size and alignment
//!   (else `STATUS.BAD_CONFIG`) and resets its indices to 0;
//! - an H2C doorbell fetches every new descriptor and its payload, hands
//!   the payload to the card's input (or, with `CTRL.LOOPBACK`, to C2H
//!   queue 0) and writes a completion; it stops when the completion ring
//!   is full (the host frees it by writing `CPL_HEAD`);
//! - a C2H message goes into the next posted buffer with a completion, or
//!   waits in a backlog while no buffer is posted;
//! - a ring with `CTRL.IRQ` raises `CTRL.VECTOR` after writing
//!   completions;
//! - any DMA fault, malformed descriptor or doorbell overrun sets a
//!   `STATUS` bit and stops the ring.

use crate::device::HostMemory;
use std::collections::VecDeque;
use weft_driver::queue::format::{
    self, status, Completion, Descriptor, CPL_BYTES, CPL_ERROR, CPL_PHASE, DESC_BYTES,
};
use weft_regs::queue as q;
use weft_regs::{Access, BuildInfo, Features, MAP};

/// Where the card's DMA goes: host memory behind the IOMMU.
pub trait CardDma {
    /// Read at an IOVA.
    fn dma_read(&mut self, iova: u64, buf: &mut [u8]) -> weft_driver::Result<()>;
    /// Write at an IOVA.
    fn dma_write(&mut self, iova: u64, data: &[u8]) -> weft_driver::Result<()>;
}

impl CardDma for HostMemory {
    fn dma_read(&mut self, iova: u64, buf: &mut [u8]) -> weft_driver::Result<()> {
        self.read_iova(iova, buf)
    }
    fn dma_write(&mut self, iova: u64, data: &[u8]) -> weft_driver::Result<()> {
        self.write_iova(iova, data)
    }
}

/// Interrupt vectors the engine may raise (its `CTRL.VECTOR` is taken
/// modulo this).
pub const VECTORS: usize = 4;

#[derive(Clone, Debug, Default)]
struct RingState {
    desc: u64,
    cpl: u64,
    log2: u32,
    ctrl: u32,
    doorbell: u32,
    head: u32,
    cpl_tail: u32,
    cpl_head: u32,
    status: u32,
}

impl RingState {
    fn enabled(&self) -> bool {
        q::CTRL_ENABLE.get(self.ctrl) != 0
    }
    fn entries(&self) -> u32 {
        1 << self.log2
    }
    fn mask(&self) -> u32 {
        self.entries() - 1
    }
    fn cpl_full(&self) -> bool {
        self.cpl_tail.wrapping_sub(self.cpl_head) >= self.entries()
    }
    fn stop(&mut self, bit: u32) {
        self.status |= bit;
        self.ctrl = q::CTRL_ENABLE.set(self.ctrl, 0);
    }
    fn fetch(&mut self, mem: &mut dyn CardDma) -> Option<Descriptor> {
        let at = self.desc + (self.head & self.mask()) as u64 * DESC_BYTES as u64;
        let mut b = [0u8; DESC_BYTES];
        if mem.dma_read(at, &mut b).is_err() {
            self.stop(q::STATUS_DMA_FAULT);
            return None;
        }
        Some(Descriptor::decode(&b))
    }
    fn complete(&mut self, mem: &mut dyn CardDma, d: &Descriptor, len: u32, st: u32) -> bool {
        let mut flags = format::phase(self.cpl_tail, self.log2) * CPL_PHASE;
        if st != status::OK {
            flags |= CPL_ERROR;
        }
        let c = Completion {
            id: d.id,
            flags,
            len,
            status: st,
        };
        let at = self.cpl + (self.cpl_tail & self.mask()) as u64 * CPL_BYTES as u64;
        if mem.dma_write(at, &c.encode()).is_err() {
            self.stop(q::STATUS_DMA_FAULT);
            return false;
        }
        self.head = self.head.wrapping_add(1);
        self.cpl_tail = self.cpl_tail.wrapping_add(1);
        true
    }
}

/// Counts of what the engine did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// H2C descriptors completed.
    pub h2c_descriptors: u64,
    /// H2C payload bytes fetched.
    pub h2c_bytes: u64,
    /// C2H messages written.
    pub c2h_messages: u64,
    /// C2H messages dropped because the posted buffer was too small.
    pub c2h_dropped: u64,
}

/// The modelled queue engine.
#[derive(Default)]
pub struct QueueEngine {
    h2c: RingState,
    c2h: RingState,
    backlog: VecDeque<Vec<u8>>,
    irq: [u64; VECTORS],
    stats: EngineStats,
}

/// Which ring a register belongs to, and its role.
fn decode(addr: u32) -> Option<(bool, usize)> {
    for (is_h2c, base) in [(true, q::H2C0_BASE), (false, q::C2H0_BASE)] {
        if (base..base + 11 * 4).contains(&addr) {
            return Some((is_h2c, ((addr - base) / 4) as usize));
        }
    }
    None
}

/// A register access the engine refused, as the AXI response the RTL would
/// give.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No register there (DECERR).
    Unmapped,
    /// Write to a read-only register (SLVERR).
    ReadOnly,
}

impl QueueEngine {
    /// Whether `addr` lies in the queue block (the engine answers it).
    pub fn owns(addr: u32) -> bool {
        (q::BASE..q::BASE + q::BLOCK.span).contains(&addr)
    }

    /// What the engine has done.
    pub fn stats(&self) -> EngineStats {
        self.stats
    }

    /// Whether C2H queue 0 is enabled (the card's host-bound streams then
    /// go to it).
    pub fn c2h_enabled(&self) -> bool {
        self.c2h.enabled()
    }

    /// Take one pending interrupt of `vector`, if any.
    pub fn take_irq(&mut self, vector: usize) -> bool {
        match self.irq.get_mut(vector) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        }
    }

    /// Messages waiting for a posted C2H buffer.
    pub fn backlog(&self) -> usize {
        self.backlog.len()
    }

    /// Read a register of the block.
    pub fn read(&self, addr: u32) -> Result<u32, Refused> {
        let (b, r) = MAP.lookup(addr).ok_or(Refused::Unmapped)?;
        if b.type_id != q::BLOCK.type_id {
            return Err(Refused::Unmapped);
        }
        // Header and INFO are constants of the map (no build fields here).
        let none = BuildInfo {
            board_id: 0,
            build_date: 0,
            git_hash: 0,
            features: Features::empty(),
        };
        if let Some(v) = MAP.const_value(b, r, &none) {
            return Ok(v);
        }
        let Some((is_h2c, role)) = decode(addr) else {
            return Err(Refused::Unmapped);
        };
        let s = if is_h2c { &self.h2c } else { &self.c2h };
        Ok(match role {
            0 => s.desc as u32,
            1 => (s.desc >> 32) as u32,
            2 => s.cpl as u32,
            3 => (s.cpl >> 32) as u32,
            4 => s.log2,
            5 => s.ctrl,
            6 => 0,
            7 => s.head,
            8 => s.cpl_tail,
            9 => s.cpl_head,
            _ => s.status,
        })
    }

    /// Write a register of the block. H2C payloads fetched as a result go
    /// to `input` (the card's input stream) unless looped back.
    pub fn write(
        &mut self,
        addr: u32,
        value: u32,
        mem: &mut dyn CardDma,
        input: &mut dyn FnMut(Vec<u8>),
    ) -> Result<(), Refused> {
        let (_, r) = MAP.lookup(addr).ok_or(Refused::Unmapped)?;
        if r.access == Access::Ro {
            return Err(Refused::ReadOnly);
        }
        let Some((is_h2c, role)) = decode(addr) else {
            return Err(Refused::Unmapped);
        };
        let s = if is_h2c { &mut self.h2c } else { &mut self.c2h };
        let lo = |x: u64, v: u32| (x & !0xffff_ffff) | v as u64;
        let hi = |x: u64, v: u32| (x & 0xffff_ffff) | ((v as u64) << 32);
        match role {
            0 => s.desc = lo(s.desc, value),
            1 => s.desc = hi(s.desc, value),
            2 => s.cpl = lo(s.cpl, value),
            3 => s.cpl = hi(s.cpl, value),
            4 => s.log2 = value & 0x1f,
            5 => {
                let was = s.enabled();
                s.ctrl = value;
                if s.enabled() && !was {
                    let bad = s.log2 == 0
                        || s.log2 > q::MAX_LOG2
                        || !s.desc.is_multiple_of(16)
                        || !s.cpl.is_multiple_of(16);
                    if bad {
                        s.stop(q::STATUS_BAD_CONFIG);
                    }
                    s.head = 0;
                    s.cpl_tail = 0;
                    s.cpl_head = 0;
                    s.doorbell = 0;
                }
                if !s.enabled() && !is_h2c {
                    // A disabled C2H ring has no buffers: the card's
                    // streams fall back to their default sink.
                    self.backlog.clear();
                }
            }
            6 => s.doorbell = value,
            9 => s.cpl_head = value,
            _ => s.status &= !value,
        }
        self.service(mem, input);
        Ok(())
    }

    /// Queue a message for the host on C2H queue 0 and write what fits.
    pub fn send_c2h(&mut self, msg: Vec<u8>, mem: &mut dyn CardDma) {
        self.backlog.push_back(msg);
        self.service_c2h(mem);
    }

    /// Do whatever the rings allow now.
    fn service(&mut self, mem: &mut dyn CardDma, input: &mut dyn FnMut(Vec<u8>)) {
        self.service_h2c(mem, input);
        self.service_c2h(mem);
    }

    fn raise(&mut self, ctrl: u32) {
        if q::CTRL_IRQ.get(ctrl) != 0 {
            self.irq[q::CTRL_VECTOR.get(ctrl) as usize % VECTORS] += 1;
        }
    }

    fn service_h2c(&mut self, mem: &mut dyn CardDma, input: &mut dyn FnMut(Vec<u8>)) {
        let QueueEngine {
            h2c: s,
            backlog,
            stats,
            ..
        } = self;
        if !s.enabled() {
            return;
        }
        if s.doorbell.wrapping_sub(s.head) > s.entries() {
            s.stop(q::STATUS_OVERRUN);
            return;
        }
        let loopback = q::CTRL_LOOPBACK.get(s.ctrl) != 0;
        let mut done = 0;
        while s.enabled() && s.head != s.doorbell && !s.cpl_full() {
            let Some(d) = s.fetch(mem) else { break };
            if d.len == 0 || d.len > format::MAX_PAYLOAD {
                s.complete(mem, &d, 0, status::BAD_DESC);
                s.stop(q::STATUS_BAD_DESC);
                done += 1;
                break;
            }
            let mut payload = vec![0u8; d.len as usize];
            if mem.dma_read(d.addr, &mut payload).is_err() {
                s.complete(mem, &d, 0, status::DMA_FAULT);
                s.stop(q::STATUS_DMA_FAULT);
                done += 1;
                break;
            }
            if !s.complete(mem, &d, d.len, status::OK) {
                break;
            }
            stats.h2c_descriptors += 1;
            stats.h2c_bytes += d.len as u64;
            done += 1;
            if loopback {
                backlog.push_back(payload);
            } else {
                input(payload);
            }
        }
        if done > 0 {
            let ctrl = self.h2c.ctrl;
            self.raise(ctrl);
        }
    }

    fn service_c2h(&mut self, mem: &mut dyn CardDma) {
        let QueueEngine {
            c2h: s,
            backlog,
            stats,
            ..
        } = self;
        if !s.enabled() {
            return;
        }
        if s.doorbell.wrapping_sub(s.head) > s.entries() {
            s.stop(q::STATUS_OVERRUN);
            return;
        }
        let mut done = 0;
        while s.enabled() && s.head != s.doorbell && !s.cpl_full() {
            let Some(msg) = backlog.front() else { break };
            let Some(d) = s.fetch(mem) else { break };
            let len = msg.len() as u32;
            if len > d.len {
                // Dropped, and said so: the host sized its buffers wrong.
                if s.complete(mem, &d, len, status::TOO_SMALL) {
                    stats.c2h_dropped += 1;
                    backlog.pop_front();
                    done += 1;
                }
                continue;
            }
            if mem.dma_write(d.addr, msg).is_err() {
                s.complete(mem, &d, 0, status::DMA_FAULT);
                s.stop(q::STATUS_DMA_FAULT);
                done += 1;
                break;
            }
            if !s.complete(mem, &d, len, status::OK) {
                break;
            }
            backlog.pop_front();
            stats.c2h_messages += 1;
            done += 1;
        }
        if done > 0 {
            let ctrl = self.c2h.ctrl;
            self.raise(ctrl);
        }
    }
}
