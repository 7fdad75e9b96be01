//! Kernel-bypass queues: weft's userspace driver for the QDMA engine of
//! AMD's OpenNIC shell (EQDMA soft IP, streaming mode, internal
//! descriptors), on VFIO.
//!
//! [`Qdma::bring_up`] does what `onic` (open-nic-driver's
//! `onic_init_hardware`, `onic_qdma_init_csr`, `onic_qdma_init_*_queue`)
//! and the README's `pcimem` writes do for DPDK: checks the IP (identifier,
//! streaming engines, queue count), programs the global tables (ring sizes,
//! C2H buffer sizes, timers, thresholds), the function map, the shell's
//! QCONF, indirection table and Toeplitz key for the function, enables
//! CMAC 0, then brings up each queue pair: H2C descriptor ring, C2H
//! descriptor ring with its buffers, and the completion ring, through the
//! indirect context engine. Every step and every constant is named after
//! the source it comes from (see `regs` and `ctxt`).
//!
//! [`QueuePair`] is one application thread's queue: frames go out through
//! its H2C ring (many descriptors per doorbell) and come back through its
//! completion ring; [`QdmaCard`] is the whole card behind the host
//! library's two seams (registers on BAR2, frames through the queues).
//!
//! The driver reaches the function through [`QdmaBus`]: BAR0 (QDMA), BAR2
//! (the shell) and DMA memory. [`VfioBus`] is a real card on vfio-pci;
//! weft-sim's `QdmaModel` is a behavioural model of the shell's QDMA
//! subsystem in front of the simulated `weft_top`, so this same code runs
//! without a card. The driver polls (as DPDK's PMD does); it arms no
//! interrupts. It has not met a real card yet.

pub mod card;
pub mod ctxt;
mod queue;
pub mod regs;
mod vfio_bus;

pub use card::{NetworkWire, QdmaCard};
pub use queue::{QueuePair, QueueStats};
pub use vfio_bus::VfioBus;

use crate::{DmaBuffer, Error, Result};
use ctxt::{cmpt, fmap, pfch, sw, Context};
use regs::*;

/// Which BAR of the card's function.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bar {
    /// BAR0: the QDMA IP's registers and doorbells.
    Qdma,
    /// BAR2: the shell's AXI4-Lite space (its registers, CMAC, the boxes).
    Shell,
}

impl Bar {
    /// The BAR's index.
    pub fn index(self) -> u8 {
        match self {
            Bar::Qdma => 0,
            Bar::Shell => 2,
        }
    }
}

/// What the QDMA driver needs from a PCI function: its two BARs and DMA
/// memory.
pub trait QdmaBus: Send + Sync {
    /// A short name for messages.
    fn name(&self) -> String;
    /// Read the 32-bit word at byte `offset` of `bar`.
    fn read32(&self, bar: Bar, offset: u32) -> Result<u32>;
    /// Write the 32-bit word at byte `offset` of `bar`.
    fn write32(&self, bar: Bar, offset: u32, value: u32) -> Result<()>;
    /// Memory the function can reach by DMA (page-aligned IOVA).
    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>>;
    /// The PCI function number (the QDMA function whose queues these are).
    fn function(&self) -> u32;
}

/// The ring sizes the driver programs into `GLBL_RNG_SZ` (onic's table,
/// `onic_qdma_init_csr`). A ring of size `n` holds `n - 1` descriptors.
pub const RING_SIZES: [u32; 16] = [
    4096, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 3072, 4096, 6144, 8192, 12288, 16384,
];
/// The C2H buffer sizes the driver programs into `C2H_BUF_SZ` (onic's
/// table; the first is the one the driver's queues use).
pub const BUF_SIZES: [u32; 16] = [
    4096, 256, 512, 1024, 2048, 3968, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 8192, 9018, 16384,
];
/// The `C2H_BUF_SZ` entry the driver's C2H queues use (onic's: 4096 B).
pub const C2H_BUFSZ_IDX: usize = 8;
/// Completion timer values (`C2H_TIMER_CNT`, onic's table).
pub const TIMER_COUNTS: [u32; 16] = [
    10, 2, 4, 5, 8, 10, 15, 20, 25, 30, 50, 75, 100, 125, 150, 200,
];
/// Completion count thresholds (`C2H_CNT_TH`, onic's table).
pub const COUNT_THRESHOLDS: [u32; 16] = [
    64, 2, 4, 8, 16, 24, 32, 48, 80, 96, 112, 128, 144, 160, 176, 192,
];
/// Polls of the shell's reset status before CMAC 0's reset is declared hung
/// (onic sleeps 1 ms between polls).
const RESET_POLLS: u32 = 100;
/// Polls of `IND_CTXT_CMD.busy` before a context access is declared hung.
const CMD_POLLS: u32 = 1000;

/// How to bring the queues up.
#[derive(Clone, Debug)]
pub struct QdmaConfig {
    /// Queue pairs (one per application thread), 1 ..= the IP's count.
    pub queues: u32,
    /// The function's first absolute queue (its FMAP and QCONF base).
    pub qbase: u32,
    /// Ring size, one of [`RING_SIZES`]: every ring of every queue.
    pub ring_size: u32,
    /// Bytes of each H2C buffer: the longest frame the queues send.
    pub h2c_buf: usize,
    /// Descriptors queued before the driver rings a doorbell unasked.
    pub batch: usize,
    /// Program the global tables (the function that does it first; onic:
    /// the master PF). Other functions leave them as they are.
    pub program_globals: bool,
    /// Enable CMAC 0's receive and transmit (the card's network port).
    pub enable_cmac: bool,
}

impl Default for QdmaConfig {
    fn default() -> Self {
        Self {
            queues: 1,
            qbase: 0,
            ring_size: 1024,
            h2c_buf: 9216,
            batch: 32,
            program_globals: true,
            enable_cmac: true,
        }
    }
}

/// An engine brought up: its queue pairs, and what it was found to be.
pub struct Qdma<B: QdmaBus> {
    bus: std::sync::Arc<B>,
    cfg: QdmaConfig,
    /// The IP's queue count (`GLBL2_CHANNEL_QDMA_CAP`).
    pub max_queues: u32,
}

impl<B: QdmaBus + 'static> Qdma<B> {
    /// Check the IP, program it and the shell, and bring up `cfg.queues`
    /// queue pairs. Refuses, saying what was found, when BAR0 is not a
    /// QDMA, the streaming engines are missing, or the IP has fewer queues
    /// or no such ring size.
    pub fn bring_up(bus: std::sync::Arc<B>, cfg: QdmaConfig) -> Result<(Self, Vec<QueuePair>)> {
        let name = bus.name();
        let refuse = |why: String| Error::Qdma {
            device: name.clone(),
            why,
        };
        let id = bus.read32(Bar::Qdma, CONFIG_BLOCK_ID)?;
        if id >> 16 != CONFIG_ID {
            let hint = if id == u32::MAX {
                " (all ones: the function is gone, or BAR0 is not mapped)"
            } else {
                ""
            };
            return Err(refuse(format!(
                "not present: BAR0+0x0 reads {id:#010x}, a QDMA answers {CONFIG_ID:#06x} in bits 31:16{hint}"
            )));
        }
        let mdma = bus.read32(Bar::Qdma, GLBL2_CHANNEL_MDMA)?;
        if MDMA_H2C_ST.get(mdma) == 0 || MDMA_C2H_ST.get(mdma) == 0 {
            return Err(refuse(format!(
                "not in streaming mode: GLBL2_CHANNEL_MDMA reads {mdma:#010x} (H2C streaming bit 16 = {}, C2H streaming bit 17 = {}); the OpenNIC shell builds AXI_Stream_with_Completion",
                MDMA_H2C_ST.get(mdma),
                MDMA_C2H_ST.get(mdma)
            )));
        }
        let cap = bus.read32(Bar::Qdma, GLBL2_MISC_CAP)?;
        let (dev_type, ip_type) = (MISC_CAP_DEVICE_TYPE.get(cap), MISC_CAP_IP_TYPE.get(cap));
        if dev_type != 0 || !(1..=2).contains(&ip_type) {
            return Err(refuse(format!(
                "GLBL2_MISC_CAP reads {cap:#010x}: device type {dev_type}, IP type {ip_type}; the driver speaks the EQDMA soft IP (device type 0, IP type 1 = QDMA 4.0 or 2 = QDMA 5.0) the OpenNIC shell builds"
            )));
        }
        let max_queues = QDMA_CAP_MULTIQ_MAX.get(bus.read32(Bar::Qdma, GLBL2_CHANNEL_QDMA_CAP)?);
        if cfg.queues == 0 || cfg.qbase + cfg.queues > max_queues {
            return Err(refuse(format!(
                "{} queue(s) from queue {} asked for; the IP has {max_queues} (GLBL2_CHANNEL_QDMA_CAP)",
                cfg.queues, cfg.qbase
            )));
        }
        if cfg.queues > INDIR_ENTRIES {
            return Err(refuse(format!(
                "{} queues asked for; the shell's indirection table spreads over at most {INDIR_ENTRIES}",
                cfg.queues
            )));
        }
        let Some(rng_idx) = RING_SIZES.iter().position(|&s| s == cfg.ring_size) else {
            return Err(refuse(format!(
                "ring size {} is not one the driver programs ({RING_SIZES:?})",
                cfg.ring_size
            )));
        };
        if cfg.h2c_buf < 64 || cfg.h2c_buf > u16::MAX as usize || cfg.batch == 0 {
            return Err(refuse(format!(
                "H2C buffers of {} bytes and batches of {} (buffers 64..=65535 bytes, batches >= 1)",
                cfg.h2c_buf, cfg.batch
            )));
        }
        let q = Self {
            bus,
            cfg,
            max_queues,
        };
        // onic_init_hardware's order: the function (FMAP, QCONF,
        // indirection table), the globals (master PF), CMAC.
        q.program_function()?;
        if q.cfg.program_globals {
            q.program_globals()?;
        }
        if q.cfg.enable_cmac {
            q.enable_cmac()?;
        }
        let mut pairs = vec![];
        for i in 0..q.cfg.queues {
            pairs.push(q.queue_up(i, rng_idx as u32)?);
        }
        Ok((q, pairs))
    }

    /// The bus.
    pub fn bus(&self) -> &std::sync::Arc<B> {
        &self.bus
    }

    /// The configuration it was brought up with.
    pub fn config(&self) -> &QdmaConfig {
        &self.cfg
    }

    fn w0(&self, off: u32, v: u32) -> Result<()> {
        self.bus.write32(Bar::Qdma, off, v)
    }

    /// `onic_qdma_init_csr` / `eqdma_set_default_global_csr`.
    fn program_globals(&self) -> Result<()> {
        for i in 0..16u32 {
            self.w0(GLBL_RNG_SZ + 4 * i, RING_SIZES[i as usize])?;
        }
        for i in 0..16u32 {
            self.w0(C2H_BUF_SZ + 4 * i, BUF_SIZES[i as usize])?;
        }
        self.w0(C2H_INT_TIMER_TICK, 25)?;
        for i in 0..16u32 {
            self.w0(C2H_TIMER_CNT + 4 * i, TIMER_COUNTS[i as usize])?;
        }
        for i in 0..16u32 {
            self.w0(C2H_CNT_TH + 4 * i, COUNT_THRESHOLDS[i as usize])?;
        }
        // onic's value: max_dsc_fetch 6, wb_acc_int 0.
        self.w0(GLBL_DSC_CFG, 6 << 3)
    }

    /// FMAP, then the shell's QCONF, indirection table and Toeplitz key
    /// (onic leaves the key to ethtool; the driver writes a published one
    /// so the queue choice does not rest on an undocumented default).
    fn program_function(&self) -> Result<()> {
        let func = self.bus.function();
        let mut m = Context::default();
        m.set(fmap::QBASE, self.cfg.qbase as u64)
            .set(fmap::QMAX, self.cfg.queues as u64);
        self.context(Sel::Fmap, func, Op::Clear, None)?;
        self.context(Sel::Fmap, func, Op::Write, Some(m))?;
        if func >= SHELL_FUNCTIONS {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!(
                    "function {func}: the shell has registers for functions 0..{SHELL_FUNCTIONS}"
                ),
            });
        }
        let base = shell_function(func);
        let w2 = |off: u32, v: u32| self.bus.write32(Bar::Shell, base + off, v);
        w2(
            SHELL_QCONF,
            QCONF_QBASE.put(self.cfg.qbase) | QCONF_NUMQ.put(self.cfg.queues),
        )?;
        for i in 0..INDIR_ENTRIES {
            w2(SHELL_INDIR + 4 * i, i % self.cfg.queues)?;
        }
        for (i, k) in RSS_KEY.chunks(4).enumerate() {
            w2(
                SHELL_HASH_KEY + 4 * i as u32,
                u32::from_be_bytes([k[0], k[1], k[2], k[3]]),
            )?;
        }
        Ok(())
    }

    /// `onic_enable_cmac(0)`: find CMAC 0, reset its subsystem, RS-FEC on,
    /// receive and transmit on, flow control as onic sets it.
    fn enable_cmac(&self) -> Result<()> {
        let r2 = |off: u32| self.bus.read32(Bar::Shell, off);
        let w2 = |off: u32, v: u32| self.bus.write32(Bar::Shell, off, v);
        let ver = r2(CMAC0 + CMAC_CORE_VERSION)?;
        if ver != CMAC_VERSION {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!("CMAC 0 not found: BAR2+{:#x} reads {ver:#010x}, the shell's CMAC answers {CMAC_VERSION:#010x}", CMAC0 + CMAC_CORE_VERSION),
            });
        }
        w2(SHELL_RESET, SHELL_CMAC0)?;
        let mut done = false;
        for _ in 0..RESET_POLLS {
            if r2(SHELL_STATUS)? & SHELL_CMAC0 != 0 {
                done = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        if !done {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!("CMAC 0's reset did not finish: BAR2+{SHELL_STATUS:#x} bit {SHELL_CMAC0:#x} stayed clear"),
            });
        }
        w2(CMAC0 + CMAC_RSFEC_ENABLE, 0x3)?;
        w2(CMAC0 + CMAC_RSFEC_IND_CORRECTION, 0x7)?;
        w2(CMAC0 + CMAC_RX_REG1, 0x1)?;
        w2(CMAC0 + CMAC_TX_REG1, 0x10)?;
        w2(CMAC0 + CMAC_TX_REG1, 0x1)?;
        for (off, v) in CMAC_FLOW_CONTROL {
            w2(CMAC0 + off, v)?;
        }
        Ok(())
    }

    /// One indirect context access; returns the data words of a read.
    fn context(&self, sel: Sel, qid: u32, op: Op, data: Option<Context>) -> Result<Context> {
        if let Some(d) = data {
            for (i, w) in d.0.iter().enumerate() {
                self.w0(IND_CTXT_DATA + 4 * i as u32, *w)?;
            }
            for i in 0..CTXT_WORDS as u32 {
                self.w0(IND_CTXT_MASK + 4 * i, u32::MAX)?;
            }
        }
        let cmd = CMD_SEL.put(sel as u32) | CMD_OP.put(op as u32) | CMD_QID.put(qid);
        self.w0(IND_CTXT_CMD, cmd)?;
        for _ in 0..CMD_POLLS {
            if CMD_BUSY.get(self.bus.read32(Bar::Qdma, IND_CTXT_CMD)?) == 0 {
                let mut out = Context::default();
                if op == Op::Read {
                    for i in 0..CTXT_WORDS {
                        out.0[i] = self.bus.read32(Bar::Qdma, IND_CTXT_DATA + 4 * i as u32)?;
                    }
                }
                return Ok(out);
            }
        }
        Err(Error::Qdma {
            device: self.bus.name(),
            why: format!("context {sel:?} {op:?} of queue {qid}: IND_CTXT_CMD stayed busy after {CMD_POLLS} polls"),
        })
    }

    /// Write a context and read it back: the engine keeps what it accepts,
    /// so a difference means it refused part of it.
    fn write_checked(&self, sel: Sel, qid: u32, c: Context) -> Result<()> {
        self.context(sel, qid, Op::Write, Some(c))?;
        let back = self.context(sel, qid, Op::Read, None)?;
        if back != c {
            return Err(Error::Qdma {
                device: self.bus.name(),
                why: format!(
                    "the engine did not keep queue {qid}'s {sel:?} context: wrote {:08x?}, reads {:08x?}",
                    c.0, back.0
                ),
            });
        }
        Ok(())
    }

    /// `onic_qdma_init_tx_queue` and `onic_qdma_init_rx_queue`, in DPDK's
    /// order: clear every context, SW (H2C, C2H), prefetch, CMPT, then the
    /// CMPT CIDX and C2H PIDX doorbells.
    fn queue_up(&self, local: u32, rng_idx: u32) -> Result<QueuePair> {
        let qid = self.cfg.qbase + local;
        let func = self.bus.function();
        let n = self.cfg.ring_size as usize;
        let pair = QueuePair::alloc(self.bus.clone(), local, n, self.cfg.h2c_buf, self.cfg.batch)?;
        self.clear_queue(qid)?;
        let mut h2c = Context::default();
        h2c.set(sw::FNC, func as u64)
            .set(sw::QEN, 1)
            .set(sw::WBI_CHK, 1)
            .set(sw::WBI_INTVL_EN, 1)
            .set(sw::RNG_SZ, rng_idx as u64)
            .set(sw::DESC_SZ, 1)
            .set(sw::WBK_EN, 1)
            .set(sw::DSC_BASE, pair.h2c_ring_iova());
        self.write_checked(Sel::SwH2c, qid, h2c)?;
        let mut c2h = Context::default();
        c2h.set(sw::FNC, func as u64)
            .set(sw::QEN, 1)
            .set(sw::FCRD_EN, 1)
            .set(sw::WBK_EN, 1)
            .set(sw::RNG_SZ, rng_idx as u64)
            .set(sw::DESC_SZ, 0)
            .set(sw::DSC_BASE, pair.c2h_ring_iova());
        self.write_checked(Sel::SwC2h, qid, c2h)?;
        let mut pf = Context::default();
        pf.set(pfch::BUFSZ_IDX, C2H_BUFSZ_IDX as u64)
            .set(pfch::PFCH_EN, 1)
            .set(pfch::VALID, 1);
        self.write_checked(Sel::Pfch, qid, pf)?;
        let mut cm = Context::default();
        cm.set(cmpt::EN_STAT_DESC, 1)
            .set(cmpt::TRIG_MODE, trig::EVERY as u64)
            .set(cmpt::FNC, func as u64)
            .set(cmpt::COLOR, 1)
            .set(cmpt::QSIZE_IDX, rng_idx as u64)
            .set(cmpt::BADDR_64, pair.cmpt_ring_iova() >> 6)
            .set(cmpt::DESC_SZ, 0)
            .set(cmpt::VALID, 1);
        self.write_checked(Sel::Cmpt, qid, cm)?;
        pair.start()?;
        Ok(pair)
    }

    /// Clear every context of absolute queue `qid`: SW, HW and credit both
    /// ways, prefetch, completion.
    fn clear_queue(&self, qid: u32) -> Result<()> {
        for sel in [
            Sel::SwH2c,
            Sel::HwH2c,
            Sel::CrH2c,
            Sel::SwC2h,
            Sel::HwC2h,
            Sel::CrC2h,
            Sel::Pfch,
            Sel::Cmpt,
        ] {
            self.context(sel, qid, Op::Clear, None)?;
        }
        Ok(())
    }

    /// Stop queue pair `pair` (its contexts cleared; its memory goes when
    /// the pair is dropped, after this).
    pub fn queue_down(&self, pair: &QueuePair) -> Result<()> {
        let qid = self.cfg.qbase + pair.local();
        self.clear_queue(qid)?;
        Ok(())
    }

    /// Tear down: every queue's contexts cleared, the shell's QCONF and
    /// the function map emptied (so no H2C packet of a stale queue can
    /// reach the box).
    pub fn tear_down(&self, pairs: Vec<QueuePair>) -> Result<()> {
        for p in &pairs {
            self.queue_down(p)?;
        }
        drop(pairs);
        let func = self.bus.function();
        self.bus
            .write32(Bar::Shell, shell_function(func) + SHELL_QCONF, 0)?;
        self.context(Sel::Fmap, func, Op::Clear, None)?;
        Ok(())
    }
}
