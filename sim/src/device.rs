//! `SimDevice`: the simulated card behind weft-driver's `Device` trait.
//!
//! The card is `weft_hdl::card` (the CSR block and the key-value engine) on
//! the chosen simulator. Register accesses become AXI4-Lite transactions on
//! the card's register port, simulated cycle by cycle, so everything above
//! the driver (discovery, `weft status`, the key-value daemon) runs exactly
//! the code it runs on hardware. Packets delivered to the card's network
//! port stream into the engine one beat per cycle as it takes them. DMA
//! memory is a model of host memory behind an IOMMU: buffers get IOVAs
//! from the driver's allocator in a 39-bit space above 4 GiB (as QEMU's
//! emulated IOMMU offers), and card-side accesses are translated and
//! bounds-checked like IOMMU lookups.
//!
//! The host queues: the RTL has no DMA engine yet, so the `queue` register
//! block is served by a software model of the card's queue engine
//! ([`crate::queue_engine`]), intercepted here before the AXI4-Lite bus.
//! H2C queue 0 feeds the card's input stream (the same receive buffer
//! [`KvCard::deliver`] fills); while C2H queue 0 is enabled, the record
//! and ack streams go to it as messages ([`crate::kv_rings`]), otherwise
//! they are drained every cycle into in-process queues (returned by
//! [`KvCard::advance`]). The model's interrupts are vectors 0 to 3 (vector
//! 0 is shared with the RTL's test interrupt).

use crate::engine::{BoxDut, Engine, EngineOptions, Prepared};
use crate::kv_card::{CardOutput, KvCard};
use crate::queue_engine::{QueueEngine, Refused, VECTORS};
use crate::SimError;
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use weft_driver::iova::IovaAllocator;
use weft_driver::RegisterAccess;
use weft_driver::{Device, DmaBuffer, Error, Result};
use weft_model::axil::{AxilMaster, MasterSignals, Op, Timing, DECERR, SLVERR};
use weft_model::card::{CardIn, CardOut};
use weft_model::kv_agg::packet::{Ack, RecordBeat, RecordKind};
use weft_model::kv_agg::{Config, SENDERS};
use weft_regs::{BuildInfo, Register};

/// The register clock of the OpenNIC shell's AXI4-Lite port (125 MHz), used
/// to turn interrupt timeouts into simulated cycles.
pub const AXIL_HZ: u64 = 125_000_000;
/// Cycles an AXI4-Lite access may take before the card is declared hung.
const ACCESS_LIMIT: u64 = 1_000;
/// Longest idle stretch simulated by one interrupt wait.
const IRQ_WAIT_LIMIT: u64 = 1_000_000;
/// IOVA window of the simulated IOMMU: [4 GiB, 512 GiB).
const IOVA_BASE: u64 = 1 << 32;
const IOVA_LIMIT: u64 = 1 << 39;

/// Lanes of the simulated card's key-value engine (512 bits).
pub const CARD_LANES: usize = 8;
/// Slot bits per lane of the default simulated card (512 slots per lane).
pub const DEFAULT_SLOT_BITS: u32 = 9;

struct Card {
    dut: BoxDut<CardIn, CardOut>,
    cycle: u64,
    irq_pending: u64,
    rx: VecDeque<Vec<u8>>,
    rx_beat: usize,
    beats: u64,
    out: CardOutput,
    queue: QueueEngine,
    mem: Arc<Mutex<HostMemory>>,
}

impl Card {
    fn step(&mut self, m: &MasterSignals) -> CardOut {
        let mut i = CardIn::default();
        i.set_master(m);
        let bytes = 8 * CARD_LANES;
        if let Some(p) = self.rx.front() {
            let chunk = p.get(self.rx_beat * bytes..).unwrap_or(&[]);
            for (w, c) in i.s_tdata.iter_mut().zip(chunk.chunks(4)) {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                *w = u32::from_le_bytes(b);
            }
            i.s_tvalid = true;
            i.s_tlast = (self.rx_beat + 1) * bytes >= p.len();
            i.s_tuser_size = p.len().min(u16::MAX as usize) as u16;
        }
        // The host side always takes records and acks (its queues are
        // unbounded in this model).
        i.m_tready = true;
        i.a_tready = true;
        let o = self.dut.eval(&i);
        if o.irq {
            self.irq_pending += 1;
        }
        if i.s_tvalid && o.s_tready {
            self.beats += 1;
            self.rx_beat += 1;
            if i.s_tlast {
                self.rx.pop_front();
                self.rx_beat = 0;
            }
        }
        if o.m_tvalid {
            if let Some(kind) = RecordKind::from_code(o.m_tuser) {
                let lanes = (0..CARD_LANES)
                    .map(|l| {
                        (o.m_tkeep & (1 << l) != 0)
                            .then(|| (o.m_tdata[2 * l], o.m_tdata[2 * l + 1] as i32))
                    })
                    .collect();
                let r = RecordBeat { kind, lanes };
                if self.queue.c2h_enabled() {
                    let msg = crate::kv_rings::encode_record(&r);
                    self.queue.send_c2h(msg, &mut *lock(&self.mem));
                } else {
                    self.out.records.push(r);
                }
            }
        }
        if o.a_tvalid {
            if let Some(a) = Ack::unpack(o.a_tdata) {
                if self.queue.c2h_enabled() {
                    let msg = crate::kv_rings::encode_ack(&a);
                    self.queue.send_c2h(msg, &mut *lock(&self.mem));
                } else {
                    self.out.acks.push(a);
                }
            }
        }
        self.dut.tick();
        self.cycle += 1;
        o
    }
}

/// Host memory seen through a modelled IOMMU.
#[derive(Default)]
pub struct HostMemory {
    iova: Option<IovaAllocator>,
    regions: BTreeMap<u64, Vec<u8>>,
}

impl HostMemory {
    /// Allocate a DMA buffer in `mem` (page-granular IOVAs above 4 GiB).
    pub fn alloc(mem: &Arc<Mutex<HostMemory>>, len: usize) -> Result<Box<dyn DmaBuffer>> {
        let mut m = lock(mem);
        let iova = m.allocator().alloc(len as u64, weft_driver::iova::PAGE)?;
        m.regions.insert(iova, vec![0; len]);
        Ok(Box::new(SimDma {
            iova,
            len,
            mem: mem.clone(),
        }))
    }

    fn allocator(&mut self) -> &mut IovaAllocator {
        self.iova
            .get_or_insert_with(|| IovaAllocator::new(IOVA_BASE, IOVA_LIMIT))
    }

    fn region(&mut self, iova: u64, len: usize) -> Result<(&mut Vec<u8>, usize)> {
        let fault = || {
            Error::Dma(format!(
                "IOMMU fault: {len} bytes at IOVA {iova:#x} are not mapped"
            ))
        };
        let (&start, buf) = self
            .regions
            .range_mut(..=iova)
            .next_back()
            .ok_or_else(fault)?;
        let off = (iova - start) as usize;
        if off.checked_add(len).is_none_or(|e| e > buf.len()) {
            return Err(fault());
        }
        Ok((buf, off))
    }

    /// Card-side read at an IOVA, as the card's DMA engine sees memory.
    pub fn read_iova(&mut self, iova: u64, out: &mut [u8]) -> Result<()> {
        let (buf, off) = self.region(iova, out.len())?;
        out.copy_from_slice(&buf[off..off + out.len()]);
        Ok(())
    }

    /// Card-side write at an IOVA.
    pub fn write_iova(&mut self, iova: u64, data: &[u8]) -> Result<()> {
        let (buf, off) = self.region(iova, data.len())?;
        buf[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
}

struct SimDma {
    iova: u64,
    len: usize,
    mem: Arc<Mutex<HostMemory>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain data behind; keep going.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DmaBuffer for SimDma {
    fn iova(&self) -> u64 {
        self.iova
    }
    fn len(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        if offset.checked_add(buf.len()).is_none_or(|e| e > self.len) {
            return Err(Error::Dma(format!(
                "read of {} bytes at offset {offset} past a {}-byte buffer",
                buf.len(),
                self.len
            )));
        }
        lock(&self.mem).read_iova(self.iova + offset as u64, buf)
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        if offset.checked_add(data.len()).is_none_or(|e| e > self.len) {
            return Err(Error::Dma(format!(
                "write of {} bytes at offset {offset} past a {}-byte buffer",
                data.len(),
                self.len
            )));
        }
        lock(&self.mem).write_iova(self.iova + offset as u64, data)
    }
}

impl Drop for SimDma {
    fn drop(&mut self) {
        let mut mem = lock(&self.mem);
        mem.regions.remove(&self.iova);
        // The allocator handed out this IOVA; freeing it cannot fail.
        let _ = mem.allocator().free(self.iova);
    }
}

/// The simulated card.
pub struct SimDevice {
    name: String,
    slot_bits: u32,
    card: Mutex<Card>,
    mem: Arc<Mutex<HostMemory>>,
    fault: Mutex<Option<String>>,
}

/// Build the card with `sb` slot bits per lane on `engine`.
fn card_dut(
    engine: Engine,
    build: BuildInfo,
    sb: u32,
    opts: &EngineOptions,
) -> Result<BoxDut<CardIn, CardOut>, SimError> {
    let module = weft_hdl::emit::module_name("card");
    macro_rules! by_slots {
        ($($n:literal),*) => {
            match sb {
                $($n => Prepared::new(
                    engine,
                    &module,
                    move || weft_hdl::emit::card::<$n>(&build),
                    false,
                    opts,
                )?
                .instantiate(opts.waves.as_deref())?,)*
                _ => {
                    return Err(SimError::Geometry(format!(
                        "the simulated card is built with 64 to 2048 slots per lane (slot bits 6 to 11), not 2^{sb}"
                    )))
                }
            }
        };
    }
    Ok(by_slots!(6, 7, 8, 9, 10, 11))
}

impl SimDevice {
    /// Build a simulated card from this source tree on `engine`.
    pub fn open(engine: Engine, opts: &EngineOptions) -> Result<Self, SimError> {
        Self::with_build(engine, weft_hdl::this_build(), opts)
    }

    /// Build a simulated card with explicit build constants.
    pub fn with_build(
        engine: Engine,
        build: BuildInfo,
        opts: &EngineOptions,
    ) -> Result<Self, SimError> {
        Self::with_geometry(engine, build, DEFAULT_SLOT_BITS, opts)
    }

    /// Build a simulated card whose key-value engine has `1 << slot_bits`
    /// slots per lane (6 to 11).
    pub fn with_geometry(
        engine: Engine,
        build: BuildInfo,
        slot_bits: u32,
        opts: &EngineOptions,
    ) -> Result<Self, SimError> {
        let dut = card_dut(engine, build, slot_bits, opts)?;
        let mem = Arc::new(Mutex::new(HostMemory::default()));
        let name = match engine {
            Engine::RustHdl => "sim".to_string(),
            Engine::Verilator => "sim:verilator".to_string(),
        };
        Ok(Self {
            name,
            slot_bits,
            card: Mutex::new(Card {
                dut,
                cycle: 0,
                irq_pending: 0,
                rx: VecDeque::new(),
                rx_beat: 0,
                beats: 0,
                out: CardOutput::default(),
                queue: QueueEngine::default(),
                mem: mem.clone(),
            }),
            mem,
            fault: Mutex::new(None),
        })
    }

    /// Register-clock cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        lock(&self.card).cycle
    }

    /// Card-side view of host memory (what the card's DMA will see).
    pub fn host_memory(&self) -> Arc<Mutex<HostMemory>> {
        self.mem.clone()
    }

    fn access(&self, op: Op) -> Result<(u8, u32)> {
        let mut card = lock(&self.card);
        let mut master = AxilMaster::new(vec![op], Timing::EAGER, 0, true);
        for _ in 0..ACCESS_LIMIT {
            let m = master.drive();
            let o = card.step(&m);
            master.observe(&m, &o.slave());
            if master.finished() {
                let c = master.completions()[0].ok_or_else(|| self.hung("completion"))?;
                return Ok((c.resp, c.data));
            }
        }
        Err(self.hung("AXI4-Lite access"))
    }

    fn hung(&self, what: &str) -> Error {
        Error::Timeout {
            device: self.name.clone(),
            what: what.to_string(),
        }
    }

    fn check(&self, op: &'static str, addr: u32, resp: u8) -> Result<()> {
        let resp = match resp {
            SLVERR => "SLVERR",
            DECERR => "DECERR",
            _ => return Ok(()),
        };
        Err(Error::Bus {
            device: self.name.clone(),
            op,
            addr,
            resp,
        })
    }

    fn check_range(&self, addr: u32) -> Result<()> {
        if addr as u64 >= self.bar_len() || !addr.is_multiple_of(4) {
            return Err(Error::OutOfRange {
                device: self.name.clone(),
                addr: addr as u64,
                len: self.bar_len(),
            });
        }
        Ok(())
    }
}

impl Device for SimDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn bar_len(&self) -> u64 {
        weft_regs::MAP.span() as u64
    }

    fn read32(&self, addr: u32) -> Result<u32> {
        self.check_range(addr)?;
        if QueueEngine::owns(addr) {
            let r = lock(&self.card).queue.read(addr);
            return r.map_err(|e| self.refused("read", addr, e));
        }
        let (resp, data) = self.access(Op::Read { addr })?;
        self.check("read", addr, resp)?;
        Ok(data)
    }

    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        self.check_range(addr)?;
        if QueueEngine::owns(addr) {
            let mut card = lock(&self.card);
            let Card { queue, rx, mem, .. } = &mut *card;
            let mut mem = lock(mem);
            let r = queue.write(addr, value, &mut *mem, &mut |p| rx.push_back(p));
            return r.map_err(|e| self.refused("write", addr, e));
        }
        let (resp, _) = self.access(Op::Write {
            addr,
            data: value,
            strb: 0xf,
        })?;
        self.check("write", addr, resp)
    }

    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        HostMemory::alloc(&self.mem, len)
    }

    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<bool> {
        if vector as usize >= VECTORS {
            return Err(Error::Unusable {
                device: self.name.clone(),
                why: format!(
                    "interrupt vector {vector} does not exist (the card has vectors 0 to {})",
                    VECTORS - 1
                ),
            });
        }
        let budget = (timeout.as_nanos() as u64)
            .saturating_mul(AXIL_HZ)
            .saturating_div(1_000_000_000)
            .clamp(1, IRQ_WAIT_LIMIT);
        let mut card = lock(&self.card);
        let idle = MasterSignals::default();
        for _ in 0..=budget {
            if vector == 0 && card.irq_pending > 0 {
                card.irq_pending -= 1;
                return Ok(true);
            }
            if card.queue.take_irq(vector as usize) {
                return Ok(true);
            }
            card.step(&idle);
        }
        Ok(false)
    }
}

impl SimDevice {
    fn refused(&self, op: &'static str, addr: u32, e: Refused) -> Error {
        Error::Bus {
            device: self.name.clone(),
            op,
            addr,
            resp: match e {
                Refused::Unmapped => "DECERR",
                Refused::ReadOnly => "SLVERR",
            },
        }
    }

    /// What the modelled queue engine has done.
    pub fn queue_stats(&self) -> crate::queue_engine::EngineStats {
        lock(&self.card).queue.stats()
    }

    /// The key-value engine's geometry.
    pub fn kv_config(&self) -> Config {
        Config {
            lanes: CARD_LANES,
            slot_bits: self.slot_bits,
            senders: SENDERS,
        }
    }

    /// Simulate `cycles` cycles; returns what the card's host-bound streams
    /// produced outside the C2H queue (nothing while it is enabled).
    pub fn advance_cycles(&self, cycles: u64) -> CardOutput {
        let mut card = lock(&self.card);
        let idle = MasterSignals::default();
        for _ in 0..cycles {
            card.step(&idle);
        }
        std::mem::take(&mut card.out)
    }

    /// Drop whatever waits in the card's receive buffer (benchmarks that
    /// feed the input stream without running the RTL).
    pub fn discard_input(&self) {
        let mut card = lock(&self.card);
        if card.rx_beat == 0 {
            card.rx.clear();
        } else {
            // Keep the packet the engine is in the middle of.
            card.rx.truncate(1);
        }
    }

    /// Input beats the engine accepted.
    pub fn input_beats(&self) -> u64 {
        lock(&self.card).beats
    }

    /// Nothing waits in the receive buffer or the C2H backlog.
    pub fn input_idle(&self) -> bool {
        let card = lock(&self.card);
        card.rx.is_empty() && card.queue.backlog() == 0
    }

    /// The first register-access failure noted by the `KvCard` interface.
    pub fn first_fault(&self) -> Option<String> {
        lock(&self.fault).clone()
    }

    fn note_fault(&self, e: Error) {
        let mut f = lock(&self.fault);
        if f.is_none() {
            *f = Some(e.to_string());
        }
    }
}

impl KvCard for SimDevice {
    fn config(&self) -> Config {
        self.kv_config()
    }

    fn deliver(&mut self, payload: Vec<u8>) {
        lock(&self.card).rx.push_back(payload);
    }

    fn advance(&mut self, cycles: u64) -> CardOutput {
        self.advance_cycles(cycles)
    }

    fn write_reg(&mut self, reg: &Register, value: u32) {
        if let Err(e) = RegisterAccess::write_reg(self, reg, value) {
            self.note_fault(e);
        }
    }

    fn read_reg(&mut self, reg: &Register) -> u32 {
        RegisterAccess::read_reg(self, reg).unwrap_or_else(|e| {
            self.note_fault(e);
            0
        })
    }

    fn cycles(&self) -> u64 {
        lock(&self.card).cycle
    }

    fn beats(&self) -> u64 {
        self.input_beats()
    }

    fn idle(&self) -> bool {
        self.input_idle()
    }

    fn fault(&self) -> Option<String> {
        self.first_fault()
    }
}
