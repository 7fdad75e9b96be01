//! The card as the key-value host daemon sees it: a network port that takes
//! aggregation packets, a host-bound stream of acknowledgements and record
//! beats, and the engine's registers. Cycle-driven, so a whole job runs in
//! simulated time.
//!
//! Two cards implement [`KvCard`]: [`ModelCard`], the reference model with a
//! beat-level timing model (one beat per cycle, the engine's line rate), and
//! the RTL card in `kv_rtl_card` (either simulator).

use std::collections::VecDeque;
use weft_model::kv_agg::packet::{Ack, RecordBeat};
use weft_model::kv_agg::{Config, KvModel};
use weft_regs::Register;

/// What the card produced while it ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CardOutput {
    /// Acknowledgements, in order.
    pub acks: Vec<Ack>,
    /// Record beats (spills, flush, flush done), in order.
    pub records: Vec<RecordBeat>,
}

/// A card running the key-value engine.
pub trait KvCard: Send {
    /// The engine's build parameters.
    fn config(&self) -> Config;
    /// Queue a UDP payload at the card's network port (the receive buffer
    /// in front of the engine).
    fn deliver(&mut self, payload: Vec<u8>);
    /// Simulate `cycles` more cycles and return what came out.
    fn advance(&mut self, cycles: u64) -> CardOutput;
    /// Write an engine register (flush and reset take effect as the card runs).
    fn write_reg(&mut self, reg: &Register, value: u32);
    /// Read an engine register.
    fn read_reg(&mut self, reg: &Register) -> u32;
    /// Cycles simulated.
    fn cycles(&self) -> u64;
    /// Input beats the engine accepted.
    fn beats(&self) -> u64;
    /// Nothing waits in the receive buffer and nothing is in flight.
    fn idle(&self) -> bool;
    /// The first register-access failure, if any (a card that stopped
    /// answering, or a bus error): the job's result cannot be trusted.
    fn fault(&self) -> Option<String> {
        None
    }
}

/// The reference model as a card: packets take one cycle per beat, a
/// flush one cycle per slot row.
pub struct ModelCard {
    model: KvModel,
    cfg: Config,
    rx: VecDeque<Vec<u8>>,
    /// Cycles the work in progress still needs.
    busy: u64,
    pending: CardOutput,
    flush: bool,
    cycles: u64,
    beats: u64,
}

impl ModelCard {
    /// A card with the given geometry.
    pub fn new(cfg: Config) -> Self {
        Self {
            model: KvModel::new(cfg),
            cfg,
            rx: VecDeque::new(),
            busy: 0,
            pending: CardOutput::default(),
            flush: false,
            cycles: 0,
            beats: 0,
        }
    }

    /// The model inside.
    pub fn model(&self) -> &KvModel {
        &self.model
    }
}

impl KvCard for ModelCard {
    fn config(&self) -> Config {
        self.cfg
    }

    fn deliver(&mut self, payload: Vec<u8>) {
        self.rx.push_back(payload);
    }

    fn advance(&mut self, cycles: u64) -> CardOutput {
        let end = self.cycles + cycles;
        while self.cycles < end {
            if self.busy > 0 {
                let n = self.busy.min(end - self.cycles);
                self.busy -= n;
                self.cycles += n;
                continue;
            }
            if self.flush {
                self.flush = false;
                self.pending.records.extend(self.model.flush());
                self.busy = 1 << self.cfg.slot_bits;
                continue;
            }
            let Some(p) = self.rx.pop_front() else {
                self.cycles = end;
                break;
            };
            let beats = p.len().div_ceil(8 * self.cfg.lanes).max(1) as u64;
            let (ack, spills) = self.model.packet(&p);
            self.pending.acks.extend(ack);
            self.pending.records.extend(spills);
            self.beats += beats;
            self.busy = beats;
        }
        std::mem::take(&mut self.pending)
    }

    fn write_reg(&mut self, reg: &Register, value: u32) {
        let cmd = self.model.write_reg(reg.addr, value, 0xf);
        if cmd.reset {
            self.model.reset();
        }
        self.flush |= cmd.flush;
    }

    fn read_reg(&mut self, reg: &Register) -> u32 {
        self.model.read_reg(reg.addr).unwrap_or(0)
    }

    fn cycles(&self) -> u64 {
        self.cycles
    }

    fn beats(&self) -> u64 {
        self.beats
    }

    fn idle(&self) -> bool {
        self.rx.is_empty() && self.busy == 0 && !self.flush
    }
}
