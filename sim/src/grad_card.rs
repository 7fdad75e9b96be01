//! The gradient aggregation engine as the host's scheduler sees it (the
//! counterpart of [`crate::kv_card`]): an input stream that takes one beat
//! per cycle, an output stream of RESULT, EVICT and FALLBACK packets, and
//! the engine's register port. Cycle-driven, so whole multi-job runs happen
//! in device time.
//!
//! [`GradCard`] is the small trait the scheduler drives; [`DutCard`]
//! implements it on any cycle-level witness of the engine with the same
//! ports: the cycle model (`weft_model::grad_agg::cycle::GradCycle`, which
//! the RTL matches on every output of every cycle) or the RTL
//! (`weft_hdl::grad_agg`) in rust-hdl's simulator or Verilator;
//! [`grad_card`] builds one. The engine sits in the OpenNIC top
//! (`weft_top`) behind UDP steering, but not in the simulated card behind
//! the driver ([`crate::SimDevice`] is the CSR block and `kv_agg`), so here
//! it runs standalone: packets on its stream ports, registers through its
//! engine register port (as the AVM pool and the MemOps port run).
//!
//! The cards are built here rather than in the host library so that the
//! simulators' generic code is compiled with this crate's optimisation
//! even in test builds.

use crate::engine::{BoxDut, Engine, EngineOptions, Prepared};
use crate::SimError;
use std::collections::VecDeque;
use weft_model::grad_agg::cycle::GradCycle;
use weft_model::grad_agg::model::OutPacket;
use weft_model::grad_agg::packet::Kind;
use weft_model::grad_agg::ports::{GradPorts, InView, Lanes16};
use weft_model::grad_agg::Config;
use weft_regs::{grad as regs, Register};

/// Slot counts the simulated RTL is built with at 512 bits (the
/// geometries [`crate::grad_blocks`] has port glue for).
pub const RTL_SLOTS: [usize; 2] = [16, 256];
/// Most slots the cycle model is built with (its sum RAM is
/// `16 x slots x 4` words).
pub const MODEL_MAX_SLOTS: usize = 1 << 16;
/// Cycles after the last stream activity before the engine counts as
/// drained: its pipeline is two stages deep and its output FIFO four beats,
/// so nothing can come out later than this with the output always ready.
const DRAIN: u32 = 8;

/// A card running the gradient aggregation engine, stepped cycle by cycle.
pub trait GradCard: Send {
    /// The engine's build parameters.
    fn config(&self) -> Config;
    /// What runs behind the card: `model` (the cycle model) or
    /// `rtl:rust-hdl` / `rtl:verilator`.
    fn kind(&self) -> &'static str;
    /// Queue a DATA packet (UDP payload) in the receive buffer in front of
    /// the engine; it streams in one beat per cycle as the engine takes it.
    fn deliver(&mut self, payload: Vec<u8>);
    /// Packets in the receive buffer, the one streaming included.
    fn queued(&self) -> usize;
    /// Simulate one cycle; output packets completed in it are appended to
    /// `out`.
    fn step(&mut self, out: &mut Vec<OutPacket>);
    /// Queue a register write on the engine register port (one access per
    /// cycle, interleaved with the traffic).
    fn write_reg(&mut self, reg: &Register, value: u32);
    /// Read a register now (one cycle; reading a counter's LO word latches
    /// its HI word, as on the card).
    fn read_reg(&mut self, reg: &Register, out: &mut Vec<OutPacket>) -> u32;
    /// Nothing queued, nothing in the pipeline, no register access or flush
    /// pending: cycles may pass without stepping ([`GradCard::skip`]).
    fn idle(&self) -> bool;
    /// Let `cycles` idle cycles pass (only when [`GradCard::idle`]: the
    /// engine's state does not change while it is idle, so this is exact).
    fn skip(&mut self, cycles: u64);
    /// Cycles simulated or skipped.
    fn cycles(&self) -> u64;
    /// Input beats the engine accepted.
    fn beats(&self) -> u64;
}

/// A [`GradCard`] on a cycle-level witness of the engine with the ports of
/// `P`.
pub struct DutCard<P: GradPorts> {
    dut: BoxDut<P::In, P::Out>,
    cfg: Config,
    kind: &'static str,
    rx: VecDeque<Vec<u8>>,
    rx_beat: usize,
    /// Register writes waiting for the port: (byte address, value).
    ops: VecDeque<(u32, u32)>,
    building: Vec<u8>,
    building_kind: Option<u8>,
    /// A flush was written and STATUS has not shown it done yet.
    flushing: bool,
    /// Cycles since the flush write (STATUS lags the write by one cycle).
    since_flush: u32,
    quiet: u32,
    cycles: u64,
    beats: u64,
}

impl<P: GradPorts> DutCard<P> {
    /// A card on `dut` (a fresh engine built with `cfg`).
    pub fn new(dut: BoxDut<P::In, P::Out>, cfg: Config, kind: &'static str) -> Self {
        Self {
            dut,
            cfg,
            kind,
            rx: VecDeque::new(),
            rx_beat: 0,
            ops: VecDeque::new(),
            building: vec![],
            building_kind: None,
            flushing: false,
            since_flush: 0,
            quiet: DRAIN,
            cycles: 0,
            beats: 0,
        }
    }

    fn cycle(&mut self, read: Option<u32>, out: &mut Vec<OutPacket>) -> u32 {
        let lanes = self.cfg.lanes;
        let bytes = 4 * lanes;
        let mut v = InView {
            s_tdata: vec![0; lanes],
            // The host and the workers always take the card's output.
            m_tready: true,
            // STATUS is read every cycle without side effects (only `eng_re`
            // latches counters), so the flush's end is seen as it happens.
            eng_raddr: (read.unwrap_or(regs::STATUS.addr) >> 2) as u16,
            eng_re: read.is_some(),
            ..InView::default()
        };
        if let Some(p) = self.rx.front() {
            let chunk = p.get(self.rx_beat * bytes..).unwrap_or(&[]);
            for (w, c) in v.s_tdata.iter_mut().zip(chunk.chunks(4)) {
                let mut b = [0u8; 4];
                b[..c.len()].copy_from_slice(c);
                *w = u32::from_le_bytes(b);
            }
            v.s_tvalid = true;
            v.s_tlast = (self.rx_beat + 1) * bytes >= p.len();
            v.s_tuser_size = p.len().min(u16::MAX as usize) as u16;
        }
        let op = self.ops.pop_front();
        if let Some((addr, data)) = op {
            v.eng_we = true;
            v.eng_waddr = (addr >> 2) as u16;
            v.eng_wdata = data;
            v.eng_wstrb = 0xf;
            if addr == regs::CMD.addr && regs::CMD_FLUSH.get(data) != 0 {
                self.flushing = true;
                self.since_flush = 0;
            }
        }
        let o = P::outputs(&self.dut.eval(&P::inputs(&v)));
        self.dut.tick();
        self.cycles += 1;
        let mut active = false;
        if v.s_tvalid && o.s_tready {
            active = true;
            self.beats += 1;
            self.rx_beat += 1;
            if v.s_tlast {
                self.rx.pop_front();
                self.rx_beat = 0;
            }
        }
        if o.m_tvalid {
            active = true;
            self.building_kind.get_or_insert(o.m_tuser);
            for w in &o.m_tdata {
                self.building.extend_from_slice(&w.to_le_bytes());
            }
            if o.m_tlast {
                let bytes = std::mem::take(&mut self.building);
                let code = self.building_kind.take().unwrap_or(0);
                // The engine names every packet's kind; a beat with no kind
                // is passed on as a FALLBACK, which the host's decoder then
                // rejects with the reason.
                let kind = Kind::from_code(code).unwrap_or(Kind::Fallback);
                out.push(OutPacket { kind, bytes });
            }
        }
        if self.flushing {
            self.since_flush = self.since_flush.saturating_add(1);
            if read.is_none() && self.since_flush > 1 && regs::STATUS_FLUSHING.get(o.eng_rdata) == 0
            {
                self.flushing = false;
            }
            active = true;
        }
        self.quiet = if active || op.is_some() {
            0
        } else {
            self.quiet.saturating_add(1)
        };
        o.eng_rdata
    }
}

impl<P: GradPorts + Send> GradCard for DutCard<P>
where
    P::In: Send,
    P::Out: Send,
{
    fn config(&self) -> Config {
        self.cfg
    }

    fn kind(&self) -> &'static str {
        self.kind
    }

    fn deliver(&mut self, payload: Vec<u8>) {
        self.rx.push_back(payload);
    }

    fn queued(&self) -> usize {
        self.rx.len()
    }

    fn step(&mut self, out: &mut Vec<OutPacket>) {
        self.cycle(None, out);
    }

    fn write_reg(&mut self, reg: &Register, value: u32) {
        self.ops.push_back((reg.addr, value));
    }

    fn read_reg(&mut self, reg: &Register, out: &mut Vec<OutPacket>) -> u32 {
        // Queued writes go first, so a read sees them.
        while !self.ops.is_empty() {
            self.cycle(None, out);
        }
        self.cycle(Some(reg.addr), out)
    }

    fn idle(&self) -> bool {
        self.rx.is_empty() && self.ops.is_empty() && !self.flushing && self.quiet >= DRAIN
    }

    fn skip(&mut self, cycles: u64) {
        self.cycles += cycles;
    }

    fn cycles(&self) -> u64 {
        self.cycles
    }

    fn beats(&self) -> u64 {
        self.beats
    }
}

fn module_name(cfg: &Config) -> String {
    // The name the engine's witness tests use, so both share one Verilator
    // build in the cache.
    format!(
        "weft_grad_agg_{}x{}x{}",
        cfg.lanes, cfg.slot_bits, cfg.value_beats
    )
}

/// A fresh card with `slots` aggregator slots at 512 bits (64-value
/// chunks): the cycle model when `engine` is `None` (any power of two from
/// 2 to [`MODEL_MAX_SLOTS`]), else the RTL on that simulator ([`RTL_SLOTS`],
/// the builds with port glue). A Verilator build is cached on disk.
pub fn grad_card(
    engine: Option<Engine>,
    slots: usize,
    opts: &EngineOptions,
) -> Result<Box<dyn GradCard>, SimError> {
    if !slots.is_power_of_two() || slots < 2 {
        return Err(SimError::Geometry(format!(
            "{slots} slots: the engine's slot count is a power of two (at least 2)"
        )));
    }
    let cfg = Config {
        slot_bits: slots.trailing_zeros(),
        ..Config::CARD
    };
    let Some(engine) = engine else {
        if slots > MODEL_MAX_SLOTS {
            return Err(SimError::Geometry(format!(
                "{slots} slots: the cycle model is built with at most {MODEL_MAX_SLOTS}"
            )));
        }
        let dut: BoxDut<_, _> = Box::new(GradCycle::<Lanes16>::new(cfg));
        return Ok(Box::new(DutCard::<Lanes16>::new(dut, cfg, "model")));
    };
    let kind = match engine {
        Engine::RustHdl => "rtl:rust-hdl",
        Engine::Verilator => "rtl:verilator",
    };
    let module = module_name(&cfg);
    let dut: BoxDut<_, _> = match slots {
        16 => Prepared::new(
            engine,
            &module,
            weft_hdl::emit::grad_agg::<16, 512, 4, 4, 6>,
            false,
            opts,
        )?
        .instantiate(None)?,
        256 => Prepared::new(
            engine,
            &module,
            weft_hdl::emit::grad_agg::<16, 512, 8, 4, 10>,
            false,
            opts,
        )?
        .instantiate(None)?,
        _ => {
            return Err(SimError::Geometry(format!(
                "{slots} slots: the simulated RTL is built with {} slots at 512 bits",
                RTL_SLOTS.map(|s| s.to_string()).join(" or ")
            )))
        }
    };
    Ok(Box::new(DutCard::<Lanes16>::new(dut, cfg, kind)))
}
