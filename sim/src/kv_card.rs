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
    /// For a card checked against the reference model ([`CheckedCard`]):
    /// the verdict at the end of a job, the number of records and acks that
    /// matched or the first disagreement. `None` for unchecked cards.
    fn verdict(&mut self) -> Option<Result<u64, String>> {
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

/// A card checked against the reference model while it runs.
///
/// Every packet delivered and every register written goes to the card and
/// to a [`KvModel`]; every record beat and ack the card produces must be the
/// model's next one, in order, and at the end the card's counters must equal
/// the model's. This is the end-to-end form of the engine's three-witness
/// check: the daemon's real traffic instead of generated stimulus.
///
/// It relies on what the daemon guarantees: a flush is written only when
/// every packet delivered before it has been processed (acknowledged), so
/// the card and the model see packets and flushes in the same order.
pub struct CheckedCard {
    inner: Box<dyn KvCard>,
    model: KvModel,
    want_records: VecDeque<RecordBeat>,
    want_acks: VecDeque<Ack>,
    checked: u64,
    mismatch: Option<String>,
}

impl CheckedCard {
    /// Check `inner` against a model of the same geometry.
    pub fn new(inner: Box<dyn KvCard>) -> Self {
        let model = KvModel::new(inner.config());
        Self {
            inner,
            model,
            want_records: VecDeque::new(),
            want_acks: VecDeque::new(),
            checked: 0,
            mismatch: None,
        }
    }

    fn disagree(&mut self, what: String) {
        if self.mismatch.is_none() {
            self.mismatch = Some(what);
        }
    }

    /// Records and acks compared so far.
    pub fn checked(&self) -> u64 {
        self.checked
    }

    /// The verdict, once the job is over: every expected record and ack
    /// arrived and the counters agree. Reads the counters of both.
    pub fn check_now(&mut self) -> Result<u64, String> {
        if let Some(m) = &self.mismatch {
            return Err(m.clone());
        }
        if let Some(r) = self.want_records.front() {
            return Err(format!(
                "the card never produced the model's record {r:?} ({} missing)",
                self.want_records.len()
            ));
        }
        if let Some(a) = self.want_acks.front() {
            return Err(format!(
                "the card never produced the model's ack {a:?} ({} missing)",
                self.want_acks.len()
            ));
        }
        for r in weft_regs::kv::COUNTERS
            .iter()
            .chain([&weft_regs::kv::GEOMETRY])
        {
            let card = self.inner.read_reg(r);
            let model = self.model.read_reg(r.addr).unwrap_or(0);
            if card != model {
                return Err(format!(
                    "register kv.{}: card {card:#x}, model {model:#x}",
                    r.name
                ));
            }
        }
        Ok(self.checked)
    }
}

impl KvCard for CheckedCard {
    fn config(&self) -> Config {
        self.inner.config()
    }

    fn deliver(&mut self, payload: Vec<u8>) {
        let (ack, records) = self.model.packet(&payload);
        self.want_acks.extend(ack);
        self.want_records.extend(records);
        self.inner.deliver(payload);
    }

    fn advance(&mut self, cycles: u64) -> CardOutput {
        let out = self.inner.advance(cycles);
        for r in &out.records {
            match self.want_records.pop_front() {
                Some(w) if &w == r => self.checked += 1,
                Some(w) => self.disagree(format!("record {r:?} where the model has {w:?}")),
                None => self.disagree(format!("record {r:?} the model does not produce")),
            }
        }
        for a in &out.acks {
            match self.want_acks.pop_front() {
                Some(w) if &w == a => self.checked += 1,
                Some(w) => self.disagree(format!("ack {a:?} where the model has {w:?}")),
                None => self.disagree(format!("ack {a:?} the model does not produce")),
            }
        }
        out
    }

    fn write_reg(&mut self, reg: &Register, value: u32) {
        let cmd = self.model.write_reg(reg.addr, value, 0xf);
        if cmd.reset {
            self.model.reset();
        }
        if cmd.flush {
            self.want_records.extend(self.model.flush());
        }
        self.inner.write_reg(reg, value);
    }

    fn read_reg(&mut self, reg: &Register) -> u32 {
        // Keep the model's LO/HI latches in step with the card's.
        let _ = self.model.read_reg(reg.addr);
        self.inner.read_reg(reg)
    }

    fn cycles(&self) -> u64 {
        self.inner.cycles()
    }

    fn beats(&self) -> u64 {
        self.inner.beats()
    }

    fn idle(&self) -> bool {
        self.inner.idle()
    }

    fn fault(&self) -> Option<String> {
        self.inner.fault().or_else(|| self.mismatch.clone())
    }

    fn verdict(&mut self) -> Option<Result<u64, String>> {
        Some(self.check_now())
    }
}
