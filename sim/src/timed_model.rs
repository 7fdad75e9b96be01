//! The top's reference model as a card: `weft_model::top_model::TopModel`
//! behind [`crate::SimDevice`] (`--device sim:model`), with a timing model
//! so that device time passes as on the RTL card, roughly.
//!
//! What is modelled, plainly: each input port takes a frame in one cycle
//! per 64-byte beat, one frame at a time; the model then acts on it at
//! once, and what it sends leaves [`LATENCY`] cycles later, each output
//! port sending one beat per cycle. Register accesses take [`ACCESS`]
//! cycles. Records are packed into record frames by the rules of
//! `docs/wire.md` (full frames, one class per frame, FIN at the end of a
//! flush, a partial frame leaving `max(net.PACK_WAIT, 1)` cycles after its
//! first record) but not where the RTL packer would split them: the model
//! sees records one at a time, not a table row at a time. Frames and sums
//! are exact; cycle counts are a model.

use std::collections::VecDeque;
use weft_driver::{Frame, Port};
use weft_model::axil::Op;
use weft_model::top_model::{counter, record_header, InFrame, OutPort, RecItem, TopModel};
use weft_model::wire::{self, build_frame, Side};
use weft_regs::{ctrl, net, BuildInfo};

/// Cycles from a frame's last beat in to the first frame it causes out.
pub const LATENCY: u64 = 8;
/// Device cycles a register access takes.
pub const ACCESS: u64 = 12;

/// The open record frame.
#[derive(Default)]
struct Packer {
    /// Records taken from the model's stream so far.
    taken: usize,
    open: Vec<(u32, i32)>,
    flush: bool,
    first_at: u64,
    seq: u32,
    frames: u64,
}

/// The top's reference model with its timing: the card behind `sim:model`.
pub struct TimedModel {
    model: TopModel,
    /// Per input (wire, host): frames waiting to be taken, with the device
    /// time each was offered.
    inputs: [VecDeque<(Vec<u8>, u64)>; 2],
    /// Per input: the cycle the port is free again.
    free_at: [u64; 2],
    /// Per output (wire, host): the cycle the port is free again.
    out_free: [u64; 2],
    /// Frames on their way out, by the cycle they leave.
    leaving: Vec<Frame>,
    packer: Packer,
    now: u64,
    cycle_hi: u32,
    /// Per `net` counter: the HI word its last LO read latched.
    counter_hi: Vec<u32>,
}

fn index(p: Port) -> usize {
    match p {
        Port::Wire => 0,
        Port::Host => 1,
    }
}

impl TimedModel {
    /// The model of image `build`, out of reset.
    pub fn new(build: BuildInfo) -> Self {
        Self {
            model: TopModel::new(build),
            inputs: Default::default(),
            free_at: [0; 2],
            out_free: [0; 2],
            leaving: vec![],
            packer: Packer::default(),
            now: 0,
            cycle_hi: 0,
            counter_hi: vec![0; net::COUNTER_NAMES.len()],
        }
    }

    /// Queue `frame` on input `port` at device time `now`.
    pub fn send(&mut self, port: Port, frame: &[u8], now: u64) {
        self.progress(now);
        self.inputs[index(port)].push_back((frame.to_vec(), now));
        self.run_inputs(now);
    }

    /// Frames waiting on input `port` (not yet taken whole).
    pub fn backlog(&self, port: Port) -> usize {
        self.inputs[index(port)].len()
    }

    /// Whether anything is waiting, in flight or packed and not sent.
    pub fn busy(&self, now: u64) -> bool {
        self.inputs.iter().any(|q| !q.is_empty())
            || self.leaving.iter().any(|f| f.cycle > now)
            || !self.packer.open.is_empty()
    }

    /// Take inputs whose turn has come by `now`.
    fn run_inputs(&mut self, now: u64) {
        for k in 0..2 {
            while let Some((f, offered)) = self.inputs[k].front() {
                // A frame streams in from when it was offered or the port
                // is free, whichever is later, one beat a cycle.
                let start = self.free_at[k].max(*offered);
                let done = start + f.len().div_ceil(64) as u64;
                if done > now {
                    break;
                }
                let (f, _) = self.inputs[k].pop_front().expect("a frame");
                self.free_at[k] = done;
                let side = if k == 0 { Side::Wire } else { Side::Host };
                self.model.frame(side, &InFrame::new(f));
                self.collect(done + LATENCY);
            }
        }
    }

    /// Schedule what the model sent, and pack its new records, at `t`.
    fn collect(&mut self, t: u64) {
        for (port, _stream, bytes) in self.model.take_sent() {
            let p = match port {
                OutPort::Tx => Port::Wire,
                OutPort::C2h => Port::Host,
            };
            self.schedule(p, bytes, t);
        }
        let items: Vec<RecItem> = self.model.records[self.packer.taken..].to_vec();
        self.packer.taken = self.model.records.len();
        for item in items {
            match item {
                RecItem::Record { key, sum, flush } => {
                    if !self.packer.open.is_empty() && self.packer.flush != flush {
                        self.close(false, t);
                    }
                    if self.packer.open.is_empty() {
                        self.packer.first_at = t;
                        self.packer.flush = flush;
                    }
                    self.packer.open.push((key, sum));
                    if self.packer.open.len() >= self.model.pack_max() {
                        self.close(false, t);
                    }
                }
                RecItem::FlushEnd => {
                    if !self.packer.open.is_empty() && !self.packer.flush {
                        self.close(false, t);
                    }
                    self.packer.flush = true;
                    self.close(true, t);
                }
            }
        }
    }

    /// Send the open record frame (FIN when a flush ends with it).
    fn close(&mut self, fin: bool, t: u64) {
        let recs = std::mem::take(&mut self.packer.open);
        let flags = wire::KV_FLAG_RECORDS
            | if self.packer.flush || fin {
                wire::KV_FLAG_FLUSH
            } else {
                0
            }
            | if fin { wire::KV_FLAG_FIN } else { 0 };
        let mut payload =
            record_header(flags, recs.len(), self.model.kv_job(), self.packer.seq).to_vec();
        for (k, v) in &recs {
            payload.extend_from_slice(&k.to_le_bytes());
            payload.extend_from_slice(&v.to_le_bytes());
        }
        let mut me = self.model.card().me;
        me.port = wire::KV_PORT;
        let f = build_frame(&me, &self.model.kv_dst(), &payload);
        self.packer.seq = self.packer.seq.wrapping_add(1);
        self.packer.frames += 1;
        self.packer.flush = false;
        self.schedule(Port::Host, f, t);
    }

    fn schedule(&mut self, port: Port, bytes: Vec<u8>, t: u64) {
        let k = index(port);
        let leave = self.out_free[k].max(t) + bytes.len().div_ceil(64) as u64;
        self.out_free[k] = leave;
        self.leaving.push(Frame {
            port,
            cycle: leave,
            bytes,
        });
    }

    /// Let time pass to `now`: take inputs and close a partial record
    /// frame whose wait is over.
    fn progress(&mut self, now: u64) {
        self.run_inputs(now);
        let wait = self.model.pack_wait().max(1);
        if !self.packer.open.is_empty() && now >= self.packer.first_at + wait {
            let t = self.packer.first_at + wait;
            self.close(false, t);
        }
        self.now = self.now.max(now);
    }

    /// Let time pass to `now` and hand out every frame that has left by
    /// then.
    pub fn advance_to(&mut self, now: u64) -> Vec<Frame> {
        self.progress(now);
        self.leaving.sort_by_key(|f| f.cycle);
        let n = self.leaving.iter().take_while(|f| f.cycle <= now).count();
        self.leaving.drain(..n).collect()
    }

    /// A register access at device time `now`: `(response, data)`.
    pub fn access(&mut self, op: Op, now: u64) -> (u8, u32) {
        let now = now + ACCESS;
        self.progress(now);
        let r = match op {
            Op::Write { addr, data, .. } => {
                if addr & !3 == net::PACK_SEQ.addr {
                    self.packer.seq = data;
                }
                (self.model.write(addr, data), 0)
            }
            Op::Read { addr } => self.read(addr),
        };
        self.collect(now + LATENCY);
        r
    }

    fn read(&mut self, addr: u32) -> (u8, u32) {
        let a = addr & !3;
        if a == ctrl::CYCLE_LO.addr {
            self.cycle_hi = (self.now >> 32) as u32;
            return (0, self.now as u32);
        }
        if a == ctrl::CYCLE_HI.addr {
            return (0, self.cycle_hi);
        }
        if a == net::PACK_SEQ.addr {
            return (0, self.packer.seq);
        }
        if let Some(k) = net::COUNTERS.iter().position(|r| r.addr == a) {
            let mut c = self.model.counters;
            c[counter::KV_RECORD_FRAMES] += self.packer.frames;
            c[counter::C2H_FRAMES] += self.packer.frames;
            let v = c[k / 2];
            if k % 2 == 0 {
                self.counter_hi[k / 2] = (v >> 32) as u32;
                return (0, v as u32);
            }
            return (0, self.counter_hi[k / 2]);
        }
        self.model.read_now(addr).unwrap_or((0, 0))
    }
}
