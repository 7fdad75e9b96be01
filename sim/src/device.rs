//! `SimDevice`: the simulated card — `weft_top`, the design that is
//! flashed — behind weft-driver's two seams: its registers ([`Device`]) and
//! its frame ports ([`FramePorts`]).
//!
//! The card is `weft_top` on rust-hdl's simulator or on Verilator, both
//! clocks at the OpenNIC box's ratio (`axis_aclk` every base step,
//! `axil_aclk` every second), or the top's reference model
//! (`weft_model::top_model`, [`crate::timed_model`]) behind the same
//! interface. Register accesses are AXI4-Lite transactions on the top's
//! interface 0, across its clock crossing, as on a card (whole words: the
//! shell has no byte strobes). Frames offered with [`FramePorts::send`]
//! enter the top's network receive (`Port::Wire`) or host-to-card
//! (`Port::Host`) stream one beat per cycle as the top takes them; every
//! frame it sends on its network transmit or card-to-host stream is
//! collected, stamped with its cycle, for [`FramePorts::recv`] (both
//! outputs are always ready: the model of a host and a network that keep
//! up). Device time passes only in [`FramePorts::advance`] and while a
//! register access is in flight.
//!
//! What is modelled, plainly: the box's two clocks are stepped at their
//! ratio in lock step; the shell around the box (QDMA, CMAC, the packet
//! adapters) is not simulated — frames meet the box's stream ports
//! directly. DMA memory ([`Device::dma_alloc`]) is a model of host memory
//! behind an IOMMU; the card's RTL has no DMA engine of its own (on a card
//! the shell's QDMA moves frames), so nothing on the card uses it. The box
//! has no interrupt line: [`Device::wait_irq`] waits out its timeout in
//! device time and reports none.

use crate::rtl_card::RtlCard;
use crate::simulator::{Prepared, Simulator, SimulatorOptions};
use crate::timed_model::TimedModel;
use crate::verilator::Library;
use crate::vl::VerilatorDut;
use crate::SimError;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use weft_driver::iova::IovaAllocator;
use weft_driver::{Device, DmaBuffer, Error, Frame, FramePorts, Port, Result};
use weft_model::axil::{AxilMaster, MasterSignals, Op, Timing, DECERR, SLVERR};
use weft_model::top::{box_schedule, TopIn, TopOut};
use weft_regs::BuildInfo;

/// `axis_aclk`, the card's stream and engine clock: 250 MHz.
pub const AXIS_HZ: u64 = 250_000_000;
/// Device cycles an AXI4-Lite access may take before the card is declared hung.
const ACCESS_LIMIT: u64 = 2_000;
/// Base steps the top is held in reset at power-on, and the most it may
/// take to raise `mod_rst_done` after.
const RESET_STEPS: u64 = 16;
const RESET_LIMIT: u64 = 64;
/// IOVA window of the simulated IOMMU: [4 GiB, 512 GiB).
const IOVA_BASE: u64 = 1 << 32;
const IOVA_LIMIT: u64 = 1 << 39;

/// Which simulation of the card.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SimKind {
    /// `weft_top` in rust-hdl's simulator.
    RustHdl,
    /// `weft_top`'s Verilog in Verilator.
    Verilator,
    /// The top's reference model (transaction level, with a timing model).
    Model,
}

impl SimKind {
    /// The device spec naming this simulation.
    pub fn spec(self) -> &'static str {
        match self {
            SimKind::RustHdl => "sim:rust-hdl",
            SimKind::Verilator => "sim:verilator",
            SimKind::Model => "sim:model",
        }
    }
}

enum Backend {
    Rtl(RtlCard),
    Model(Box<TimedModel>),
}

struct State {
    backend: Backend,
    step: u64,
    out: Vec<Frame>,
    /// Frames the top sent whose `tuser_size` disagreed with their bytes:
    /// a card broken this way cannot be trusted.
    fault: Option<String>,
}

impl State {
    /// Step `n` base steps with register interface 0 idle.
    fn run(&mut self, n: u64) {
        match &mut self.backend {
            Backend::Rtl(rtl) => {
                let fault = rtl.run(self.step, n, &mut self.out);
                self.step += n;
                if self.fault.is_none() {
                    self.fault = fault;
                }
            }
            Backend::Model(m) => {
                self.step += n;
                self.out.extend(m.advance_to(self.step));
            }
        }
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

/// weft_top's model `lib` driven by its own stream runner, as every job
/// runs it.
fn streamed_top(lib: &Arc<Library>, opts: &SimulatorOptions) -> Result<RtlCard, SimError> {
    let mut d = VerilatorDut::<TopIn, TopOut>::with_schedule(lib, None, box_schedule())?;
    if opts.profile {
        d = d.profiled();
    }
    d.set_one_eval(!opts.two_evaluations);
    RtlCard::streamed(d)
}

/// The simulated card.
pub struct SimDevice {
    name: String,
    state: Mutex<State>,
    mem: Arc<Mutex<HostMemory>>,
    schedule: weft_model::Schedule,
}

impl SimDevice {
    /// The card of this source tree (`weft_hdl::build_info::top_build`) on
    /// `kind`, out of reset.
    pub fn open(kind: SimKind, opts: &SimulatorOptions) -> Result<Self, SimError> {
        Self::with_build(kind, weft_hdl::build_info::top_build(), opts)
    }

    /// The card with explicit build constants.
    pub fn with_build(
        kind: SimKind,
        build: BuildInfo,
        opts: &SimulatorOptions,
    ) -> Result<Self, SimError> {
        let backend = match kind {
            SimKind::Model => Backend::Model(Box::new(TimedModel::new(build))),
            SimKind::RustHdl | SimKind::Verilator => {
                let engine = if kind == SimKind::RustHdl {
                    Simulator::RustHdl
                } else {
                    Simulator::Verilator
                };
                let prebuilt = opts
                    .prebuilt
                    .filter(|_| {
                        kind == SimKind::Verilator
                            && build == weft_hdl::build_info::top_build()
                            && opts.cache_dir.is_none()
                            && opts.waves.is_none()
                            && opts.shape == weft_hdl::emit::Shape::Split
                            && !opts.stepped
                            && !opts.untrained
                            && opts.training.is_none()
                    })
                    .and_then(|m| crate::prebuilt::load_top(m, opts.optimisation));
                let card = if let Some(lib) = prebuilt {
                    streamed_top(&lib, opts)?
                } else {
                    // The card of this source tree is trained on its
                    // sustained traffic, as the prebuilt one is.
                    let training = if opts.untrained {
                        None
                    } else {
                        opts.training.or_else(|| {
                            (build == weft_hdl::build_info::top_build())
                                .then(crate::prebuilt::top_training)
                        })
                    };
                    let opts = &SimulatorOptions {
                        training,
                        ..opts.clone()
                    };
                    weft_hdl::emit::on_big_stack(|| -> Result<_, SimError> {
                        let p = Prepared::new(
                            engine,
                            "weft_top",
                            move || weft_hdl::emit::top(&build),
                            false,
                            opts,
                        )?
                        .with_schedule(box_schedule())?;
                        let waves = opts.waves.as_deref();
                        match p.instantiate_verilator(waves)? {
                            Some(mut d) if !opts.stepped => {
                                // No input stream of weft_top reaches an output
                                // combinationally (sim/tests/top.rs checks it).
                                d.set_one_eval(!opts.two_evaluations);
                                RtlCard::streamed(d)
                            }
                            _ => Ok(RtlCard::stepped(p.instantiate(waves)?)),
                        }
                    })?
                };
                Backend::Rtl(card)
            }
        };
        Self::on(kind, backend)
    }

    /// The card of this source tree on Verilator, from its model `lib`
    /// (which [`crate::prebuilt`] loaded), as every job runs it.
    pub(crate) fn on_top_library(lib: &Arc<Library>) -> Result<Self, SimError> {
        let card = streamed_top(lib, &SimulatorOptions::default())?;
        Self::on(SimKind::Verilator, Backend::Rtl(card))
    }

    /// Write the top's random configuration `setup` through the registers
    /// (`weft_model::top_traffic::config_ops`), as the benchmark and the
    /// training configure the card before their traffic.
    pub fn configure(&self, setup: &weft_model::top_traffic::Setup) -> Result<()> {
        for op in weft_model::top_traffic::config_ops(setup) {
            match op {
                Op::Write { addr, data, .. } => self.write32(addr, data)?,
                Op::Read { addr } => {
                    self.read32(addr)?;
                }
            }
        }
        Ok(())
    }

    /// The card on `backend`, out of reset.
    fn on(kind: SimKind, backend: Backend) -> Result<Self, SimError> {
        let dev = Self {
            name: kind.spec().to_string(),
            state: Mutex::new(State {
                backend,
                step: 0,
                out: vec![],
                fault: None,
            }),
            mem: Arc::new(Mutex::new(HostMemory::default())),
            schedule: box_schedule(),
        };
        dev.reset()?;
        Ok(dev)
    }

    /// The shell's reset handshake: `mod_rstn` low for a while, then high
    /// until the top raises `mod_rst_done`.
    fn reset(&self) -> Result<(), SimError> {
        let mut st = lock(&self.state);
        let State { backend, step, .. } = &mut *st;
        let Backend::Rtl(rtl) = backend else {
            return Ok(());
        };
        let mut sent = vec![];
        for _ in 0..RESET_STEPS {
            rtl.step(*step, &MasterSignals::default(), false, &mut sent);
            *step += 1;
        }
        for _ in 0..RESET_LIMIT {
            let (o, _) = rtl.step(*step, &MasterSignals::default(), true, &mut sent);
            *step += 1;
            if o.mod_rst_done {
                return Ok(());
            }
        }
        Err(SimError::Geometry(
            "weft_top never raised mod_rst_done".into(),
        ))
    }

    /// Host memory as the card's DMA would see it (for tests).
    pub fn host_memory(&self) -> Arc<Mutex<HostMemory>> {
        self.mem.clone()
    }

    /// Where the simulator's time went so far, when the card was opened
    /// with [`SimulatorOptions::profile`] on Verilator.
    pub fn profile(&self) -> Option<weft_model::DutProfile> {
        match &lock(&self.state).backend {
            Backend::Rtl(rtl) => rtl.profile(),
            Backend::Model(_) => None,
        }
    }

    /// A sent frame whose `tuser_size` disagreed with its bytes, if any.
    pub fn fault(&self) -> Option<String> {
        lock(&self.state).fault.clone()
    }

    fn access(&self, op: Op) -> Result<(u8, u32)> {
        let mut st = lock(&self.state);
        let State {
            backend,
            step,
            out,
            fault,
        } = &mut *st;
        let rtl = match backend {
            Backend::Model(m) => {
                let r = m.access(op, *step);
                *step += crate::timed_model::ACCESS;
                out.extend(m.advance_to(*step));
                return Ok(r);
            }
            Backend::Rtl(rtl) => rtl,
        };
        let mut master = AxilMaster::new(vec![op], Timing::EAGER, 0, true);
        let mut sig = MasterSignals::default();
        for _ in 0..ACCESS_LIMIT {
            let rises = self.schedule.rises("axil_aclk", *step);
            if rises {
                sig = master.drive();
            }
            let (o, f) = rtl.step(*step, &sig, true, out);
            if fault.is_none() {
                *fault = f;
            }
            *step += 1;
            if rises {
                master.observe(&sig, &o.slave(0));
                if master.finished() {
                    let c = master.completions()[0].ok_or_else(|| self.hung("completion"))?;
                    return Ok((c.resp, c.data));
                }
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
        1 << weft_regs::ADDR_BITS
    }

    fn read32(&self, addr: u32) -> Result<u32> {
        self.check_range(addr)?;
        let (resp, data) = self.access(Op::Read { addr })?;
        self.check("read", addr, resp)?;
        Ok(data)
    }

    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        self.check_range(addr)?;
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

    fn wait_irq(&self, _vector: u32, timeout: Duration) -> Result<bool> {
        // The 250 MHz box has no interrupt line: wait out the timeout in
        // device time (bounded), and report none.
        let cycles = (timeout.as_nanos() as u64 / 4).min(1_000_000);
        lock(&self.state).run(cycles);
        Ok(false)
    }
}

impl FramePorts for SimDevice {
    fn send(&self, port: Port, frame: &[u8]) -> Result<()> {
        if frame.is_empty() || frame.len() > u16::MAX as usize {
            return Err(Error::Unusable {
                device: self.name.clone(),
                why: format!("a {}-byte frame cannot be sent", frame.len()),
            });
        }
        let mut st = lock(&self.state);
        let now = st.step;
        match &mut st.backend {
            Backend::Rtl(rtl) => rtl.push(port, frame),
            Backend::Model(m) => m.send(port, frame, now),
        }
        Ok(())
    }

    fn recv(&self) -> Result<Vec<Frame>> {
        Ok(std::mem::take(&mut lock(&self.state).out))
    }

    fn cycles(&self) -> u64 {
        lock(&self.state).step
    }

    fn advance(&self, cycles: u64) -> Result<()> {
        lock(&self.state).run(cycles);
        Ok(())
    }

    fn backlog(&self, port: Port) -> usize {
        let st = lock(&self.state);
        match (&st.backend, port) {
            (Backend::Rtl(rtl), p) => rtl.backlog(p),
            (Backend::Model(m), p) => m.backlog(p),
        }
    }

    fn busy(&self) -> bool {
        let st = lock(&self.state);
        match &st.backend {
            Backend::Rtl(rtl) => rtl.busy(),
            Backend::Model(m) => m.busy(st.step),
        }
    }
}
