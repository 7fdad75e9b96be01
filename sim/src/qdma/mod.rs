//! `QdmaModel`: a **behavioural model** of the OpenNIC shell's QDMA
//! subsystem (the EQDMA soft IP in streaming mode with internal
//! descriptors, and the shell's per-function QCONF filter, Toeplitz hash
//! and indirection table), in front of the simulated `weft_top`.
//!
//! The QDMA IP is encrypted vendor IP, so its RTL cannot be simulated;
//! this model answers the register accesses weft's QDMA driver makes as
//! PG302 and AMD's drivers describe them, fetches descriptors and moves
//! packet data through the simulated host memory behind its modelled
//! IOMMU (a DMA outside a mapped IOVA faults, and the fault is reported),
//! and hands whole frames to the top's `s_axis_qdma_h2c` port and takes
//! them from `m_axis_qdma_c2h`. It implements [`QdmaBus`] (BAR0, BAR2, DMA
//! memory) for the driver, and the card's wire port (CMAC 0, gated by its
//! enables) as [`FramePorts`].
//!
//! Modelled faithfully: the identity and capability registers, the global
//! tables with read-back, the indirect context engine (clear, write under
//! mask, read, invalidate, per queue), the function map, the doorbells,
//! H2C fetch from the consumer to the producer index (wrapping at ring
//! size − 1, status write-back), C2H buffers from the producer index, a
//! packet spanning several buffers, completion entries with their colour
//! flipping on every wrap, the completion status, a full completion ring,
//! the shell's QCONF filter (an H2C packet of a queue outside it stalls
//! the H2C stream, as `tready` would stay low) and its queue choice.
//! Simplified, and said so: time (the engine acts between slices of
//! [`SLICE`] cycles of the card, not at the cycle a real one would;
//! descriptor prefetch, credits, coalescing and throttling are not
//! modelled), the C2H side's buffering (a FIFO of [`ModelOptions::c2h_fifo`]
//! frames; with no descriptors left it stalls or drops, as
//! [`ModelOptions::no_buffer`] says — PG302 says each in different places),
//! interrupts (contexts that enable them are refused: the driver polls),
//! the mailbox, FLR, MM engines. Anything else the driver touches is an
//! error, never silently accepted.

mod engine;
pub mod rss;

use crate::device::{HostMemory, SimDevice};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use weft_driver::qdma::ctxt::Context;
use weft_driver::qdma::regs::*;
use weft_driver::qdma::{Bar, QdmaBus};
use weft_driver::{Device, DmaBuffer, Error, Frame, FramePorts, Port, Result};
use weft_regs::opennic::MAP_OFFSET;

/// Card cycles between two turns of the model's engine.
pub const SLICE: u64 = 32;
/// Frames the model keeps offered on the top's H2C port at once (the rest
/// stay in their rings until the top takes these).
const H2C_DEPTH: usize = 16;

/// What the C2H side does with a packet when its queue has no buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NoBuffer {
    /// Hold it (and every packet behind it) until buffers return.
    Stall,
    /// Drop it, counted.
    Drop,
}

/// The model's options.
#[derive(Clone, Debug)]
pub struct ModelOptions {
    /// Queues the IP reports (`GLBL2_CHANNEL_QDMA_CAP`; the shell's default 512).
    pub queues: u32,
    /// Packets from the top the C2H side holds before it drops.
    pub c2h_fifo: usize,
    /// With no C2H buffer: stall or drop.
    pub no_buffer: NoBuffer,
    /// Benchmarks only: the H2C engine takes every descriptor the moment
    /// its doorbell rings, moving no data, so the driver's own descriptor
    /// rate is what is measured (`cargo bench -p weft --bench qdma`).
    pub sink_h2c: bool,
}

impl Default for ModelOptions {
    fn default() -> Self {
        Self {
            queues: 512,
            c2h_fifo: 256,
            no_buffer: NoBuffer::Stall,
            sink_h2c: false,
        }
    }
}

/// What the model has done.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelStats {
    /// H2C packets handed to the top.
    pub h2c_packets: u64,
    /// H2C descriptors dropped because `metadata[15:0]` (the shell's
    /// `tuser_size`) was not the length.
    pub h2c_bad_size: u64,
    /// C2H packets written to host memory with their completion.
    pub c2h_packets: u64,
    /// C2H packets dropped (no buffer in drop mode, FIFO full, no queue).
    pub c2h_dropped: u64,
    /// Frames from the wire dropped because CMAC 0's receive is off.
    pub wire_rx_dropped: u64,
    /// Frames to the wire dropped because CMAC 0's transmit is off.
    pub wire_tx_dropped: u64,
}

/// One register access, as recorded by a trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Which BAR.
    pub bar: Bar,
    /// Byte offset in it.
    pub offset: u32,
    /// Written, or read back.
    pub value: u32,
    /// A write (else a read).
    pub write: bool,
}

/// Doorbell state of one queue.
#[derive(Clone, Debug, Default)]
struct Queue {
    h2c_pidx: usize,
    h2c_cidx: usize,
    c2h_pidx: usize,
    c2h_cidx: usize,
    cmpt_pidx: usize,
    cmpt_cidx: usize,
    color: bool,
    pkt_id: u16,
}

#[derive(Default)]
struct Model {
    opts: ModelOptions,
    /// Global registers written (read back as written; 0 until then).
    globals: BTreeMap<u32, u32>,
    data: [u32; CTXT_WORDS],
    mask: [u32; CTXT_WORDS],
    contexts: BTreeMap<(Sel, u32), Context>,
    queues: BTreeMap<u32, Queue>,
    /// BAR2 registers outside the box: the shell's and CMAC 0's.
    shell: BTreeMap<u32, u32>,
    c2h: VecDeque<Vec<u8>>,
    wire_out: Vec<Frame>,
    stats: ModelStats,
    faults: Vec<String>,
    /// Whether the H2C stream is stalled (by a queue outside QCONF).
    h2c_stalled: bool,
    trace: Option<Vec<Access>>,
}

/// The behavioural QDMA model in front of the simulated card.
pub struct QdmaModel {
    card: SimDevice,
    mem: Arc<Mutex<HostMemory>>,
    st: Mutex<Model>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl QdmaModel {
    /// The model in front of `card`, out of reset.
    pub fn new(card: SimDevice, opts: ModelOptions) -> Self {
        let mem = card.host_memory();
        Self {
            card,
            mem,
            st: Mutex::new(Model {
                opts,
                ..Model::default()
            }),
        }
    }

    /// The card behind it.
    pub fn card(&self) -> &SimDevice {
        &self.card
    }

    /// What the model has done so far.
    pub fn stats(&self) -> ModelStats {
        lock(&self.st).stats
    }

    /// Every fault the model met (DMA to an unmapped IOVA, a stalled H2C
    /// stream, a bad descriptor), oldest first.
    pub fn faults(&self) -> Vec<String> {
        lock(&self.st).faults.clone()
    }

    /// Start recording register accesses (BAR0 and the shell's BAR2
    /// registers; the box's are the card's own).
    pub fn trace_start(&self) {
        lock(&self.st).trace = Some(vec![]);
    }

    /// Stop recording and return what was recorded.
    pub fn trace_take(&self) -> Vec<Access> {
        lock(&self.st).trace.take().unwrap_or_default()
    }

    fn unmodelled(what: String) -> Error {
        Error::Qdma {
            device: "sim:qdma".into(),
            why: format!("the behavioural model does not model {what}"),
        }
    }

    fn box_offset(offset: u32) -> Option<u32> {
        let len = 1u32 << weft_regs::ADDR_BITS;
        (MAP_OFFSET..MAP_OFFSET + len)
            .contains(&offset)
            .then(|| offset - MAP_OFFSET)
    }
}

impl Model {
    fn record(&mut self, bar: Bar, offset: u32, value: u32, write: bool) {
        if let Some(t) = &mut self.trace {
            t.push(Access {
                bar,
                offset,
                value,
                write,
            });
        }
    }

    fn fault(&mut self, why: String) {
        if self.faults.len() < 1000 {
            self.faults.push(why);
        }
    }

    fn is_global(off: u32) -> bool {
        let table = |base: u32| (base..base + 64).contains(&off);
        table(GLBL_RNG_SZ)
            || table(C2H_TIMER_CNT)
            || table(C2H_CNT_TH)
            || table(C2H_BUF_SZ)
            || off == GLBL_DSC_CFG
            || off == C2H_INT_TIMER_TICK
    }

    fn bar0_read(&mut self, off: u32) -> Result<u32> {
        let v = match off {
            CONFIG_BLOCK_ID => CONFIG_ID << 16,
            GLBL2_PF_BARLITE_EXT => 1 << Bar::Shell.index(),
            GLBL2_CHANNEL_MDMA => MDMA_H2C_ST.put(1) | MDMA_C2H_ST.put(1),
            GLBL2_CHANNEL_QDMA_CAP => QDMA_CAP_MULTIQ_MAX.put(self.opts.queues),
            // Soft IP, Vivado 2020.2, EQDMA (QDMA 4.0): the shell's build.
            GLBL2_MISC_CAP => MISC_CAP_DEVICE_TYPE.put(0) | (1 << 24) | MISC_CAP_IP_TYPE.put(1),
            IND_CTXT_CMD => 0,
            o if (IND_CTXT_DATA..IND_CTXT_DATA + 32).contains(&o) => {
                self.data[((o - IND_CTXT_DATA) / 4) as usize]
            }
            o if (IND_CTXT_MASK..IND_CTXT_MASK + 32).contains(&o) => {
                self.mask[((o - IND_CTXT_MASK) / 4) as usize]
            }
            o if Self::is_global(o) => self.globals.get(&o).copied().unwrap_or(0),
            o => return Err(QdmaModel::unmodelled(format!("a read of BAR0+{o:#x}"))),
        };
        Ok(v)
    }

    fn bar0_write(&mut self, off: u32, v: u32) -> Result<()> {
        match off {
            IND_CTXT_CMD => self.context_cmd(v),
            o if (IND_CTXT_DATA..IND_CTXT_DATA + 32).contains(&o) => {
                self.data[((o - IND_CTXT_DATA) / 4) as usize] = v;
                Ok(())
            }
            o if (IND_CTXT_MASK..IND_CTXT_MASK + 32).contains(&o) => {
                self.mask[((o - IND_CTXT_MASK) / 4) as usize] = v;
                Ok(())
            }
            o if Self::is_global(o) => {
                self.globals.insert(o, v);
                Ok(())
            }
            o if (QUEUE_SPACE..QUEUE_SPACE + QUEUE_STRIDE * self.opts.queues).contains(&o) => self
                .doorbell(
                    (o - QUEUE_SPACE) / QUEUE_STRIDE,
                    (o - QUEUE_SPACE) % QUEUE_STRIDE,
                    v,
                ),
            o => Err(QdmaModel::unmodelled(format!(
                "a write of {v:#x} to BAR0+{o:#x}"
            ))),
        }
    }

    fn shell_read(&mut self, off: u32) -> Result<u32> {
        if off == CMAC0 + CMAC_CORE_VERSION {
            return Ok(CMAC_VERSION);
        }
        if Self::shell_reg(off) {
            return Ok(self.shell.get(&off).copied().unwrap_or(0));
        }
        Err(QdmaModel::unmodelled(format!("a read of BAR2+{off:#x}")))
    }

    fn shell_write(&mut self, off: u32, v: u32) -> Result<()> {
        if !Self::shell_reg(off) || off == SHELL_STATUS {
            return Err(QdmaModel::unmodelled(format!(
                "a write of {v:#x} to BAR2+{off:#x}"
            )));
        }
        self.shell.insert(off, v);
        if off == SHELL_RESET {
            // The reset finishes at once; its status bit says so.
            let s = self.shell.entry(SHELL_STATUS).or_insert(0);
            *s |= v;
        }
        Ok(())
    }

    /// BAR2 registers outside the box the model keeps.
    fn shell_reg(off: u32) -> bool {
        let in_function = (0..SHELL_FUNCTIONS).any(|f| {
            let b = shell_function(f);
            off == b + SHELL_QCONF
                || (b + SHELL_INDIR..b + SHELL_INDIR + 4 * INDIR_ENTRIES).contains(&off)
                || (b + SHELL_HASH_KEY..b + SHELL_HASH_KEY + HASH_KEY_BYTES as u32).contains(&off)
        });
        let cmac = [
            CMAC_TX_REG1,
            CMAC_RX_REG1,
            CMAC_RSFEC_ENABLE,
            CMAC_RSFEC_IND_CORRECTION,
        ]
        .into_iter()
        .chain(CMAC_FLOW_CONTROL.iter().map(|&(o, _)| o))
        .any(|o| off == CMAC0 + o);
        in_function || cmac || off == SHELL_RESET || off == SHELL_STATUS
    }

    fn cmac_rx(&self) -> bool {
        self.shell
            .get(&(CMAC0 + CMAC_RX_REG1))
            .is_some_and(|v| v & 1 == 1)
    }
    fn cmac_tx(&self) -> bool {
        self.shell
            .get(&(CMAC0 + CMAC_TX_REG1))
            .is_some_and(|v| v & 1 == 1)
    }
}

impl QdmaBus for QdmaModel {
    fn name(&self) -> String {
        "sim:qdma".into()
    }

    fn read32(&self, bar: Bar, offset: u32) -> Result<u32> {
        if bar == Bar::Shell {
            if let Some(o) = Self::box_offset(offset) {
                return self.card.read32(o);
            }
        }
        let mut st = lock(&self.st);
        let v = match bar {
            Bar::Qdma => st.bar0_read(offset)?,
            Bar::Shell => st.shell_read(offset)?,
        };
        st.record(bar, offset, v, false);
        Ok(v)
    }

    fn write32(&self, bar: Bar, offset: u32, value: u32) -> Result<()> {
        if bar == Bar::Shell {
            if let Some(o) = Self::box_offset(offset) {
                return self.card.write32(o, value);
            }
        }
        let mut st = lock(&self.st);
        st.record(bar, offset, value, true);
        match bar {
            Bar::Qdma => st.bar0_write(offset, value)?,
            Bar::Shell => st.shell_write(offset, value)?,
        }
        let h2c_db = bar == Bar::Qdma
            && offset >= QUEUE_SPACE
            && (offset - QUEUE_SPACE) % QUEUE_STRIDE == DB_H2C_PIDX;
        if st.opts.sink_h2c && h2c_db {
            self.sink_h2c(&mut st);
        }
        Ok(())
    }

    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        self.card.dma_alloc(len)
    }

    fn function(&self) -> u32 {
        0
    }
}

/// The card's wire port (CMAC 0) with the model's engine turning as
/// device time passes; its host port is the QDMA queues.
impl FramePorts for QdmaModel {
    fn send(&self, port: Port, frame: &[u8]) -> Result<()> {
        if port == Port::Host {
            return Err(Error::Unusable {
                device: "sim:qdma".into(),
                why: "the host port of this card is its QDMA queues (weft_driver::qdma)".into(),
            });
        }
        let mut st = lock(&self.st);
        if !st.cmac_rx() {
            st.stats.wire_rx_dropped += 1;
            return Ok(());
        }
        drop(st);
        self.card.send(Port::Wire, frame)
    }

    fn recv(&self) -> Result<Vec<Frame>> {
        let mut st = lock(&self.st);
        self.collect(&mut st)?;
        Ok(std::mem::take(&mut st.wire_out))
    }

    fn cycles(&self) -> u64 {
        self.card.cycles()
    }

    fn advance(&self, cycles: u64) -> Result<()> {
        let mut st = lock(&self.st);
        let mut left = cycles;
        loop {
            self.h2c(&mut st)?;
            let s = left.min(SLICE);
            if s > 0 {
                self.card.advance(s)?;
                left -= s;
            }
            self.collect(&mut st)?;
            self.c2h(&mut st)?;
            if left == 0 {
                return Ok(());
            }
        }
    }

    fn backlog(&self, port: Port) -> usize {
        self.card.backlog(port)
    }

    fn busy(&self) -> bool {
        let st = lock(&self.st);
        self.card.busy() || !st.c2h.is_empty() || self.h2c_waiting(&st)
    }
}
