//! The gradient engine as the scheduler reaches it: through the card's two
//! seams and nothing else.
//!
//! [`GradSession`] configures the card for a run (its addresses, the host
//! fallback's port, one worker table entry per worker of every job), sends
//! each worker's DATA packets as Ethernet/IPv4/UDP frames on the card's
//! wire port from that worker's address, and takes what the card sends:
//! RESULT copies on the wire, one to each worker of the chunk's job, NACK
//! copies, one to each worker missing from a slot's bitmap, and
//! EVICT and FALLBACK partials on the host port to the fallback. A chunk's
//! RESULT counts once every one of its workers has its copy, and the copies
//! must agree byte for byte. Registers (priorities, flushes, counters) are
//! the engine's, in the card's map.
//!
//! The frame formats are `docs/wire.md`'s; the addresses are
//! [`crate::card::addr`]'s.

use super::GradError;
use crate::card::{addr, Card};
use std::collections::HashMap;
use weft_driver::{FramePorts, Port, RegisterAccess};
use weft_model::grad_agg::model::OutPacket;
use weft_model::grad_agg::packet::{Header, Kind};
use weft_model::grad_agg::Config;
use weft_model::wire::{self, build_frame, parse_built, Endpoint};
use weft_regs::{grad as regs, net, Register};

/// Cycles with nothing going in or out after which the card counts as
/// drained. A frame crosses the frame check (store and forward, one cycle a
/// beat), the deframer, the engine (two stages, a four-beat output FIFO),
/// the fan-out and the framer; 64 cycles is more than all of them for the
/// largest gradient frame (6 beats).
const DRAIN: u64 = 64;

/// Jobs the card's worker table has entries for (`net.WT_SEL.JOB`).
pub const MAX_JOBS: usize = 16;

/// A run of gradient jobs on a card.
pub struct GradSession<'a> {
    card: &'a Card,
    frames: &'a dyn FramePorts,
    cfg: Config,
    /// Workers of each job, by job id.
    workers: Vec<u8>,
    /// First global worker index of each job (its workers' addresses are
    /// `addr::worker(base + w)`).
    base: Vec<usize>,
    /// RESULT and NACK copies so far, by (job, chunk, NACK): the payload
    /// and the workers that have theirs.
    copies: HashMap<(u16, u32, bool), (Vec<u8>, u32)>,
    /// A flush was written and `STATUS` has not shown it done yet.
    flushing: bool,
    /// Device time of the last frame in or out.
    last_activity: u64,
    /// Wire beats of DATA frames sent.
    beats: u64,
}

fn dev(e: weft_driver::Error) -> GradError {
    GradError::Device(e)
}

/// Read the card's gradient engine geometry (`grad.GEOMETRY`).
pub fn geometry(card: &Card) -> Result<(Config, usize), GradError> {
    let g = card.regs().read_reg(&regs::GEOMETRY).map_err(dev)?;
    let cfg = Config {
        lanes: regs::GEOMETRY_LANES.get(g) as usize,
        slot_bits: regs::GEOMETRY_SLOT_BITS.get(g),
        value_beats: regs::GEOMETRY_VALUE_BEATS.get(g) as usize,
    };
    let max_workers = regs::GEOMETRY_MAX_WORKERS.get(g) as usize;
    if cfg.lanes < 4
        || cfg.lanes > 16
        || cfg.slot_bits == 0
        || cfg.slot_bits > 20
        || !cfg.value_beats.is_power_of_two()
        || max_workers == 0
    {
        return Err(GradError::Card(format!(
            "grad.GEOMETRY reads {g:#010x}: {} lanes, 2^{} slots, {} value beats, {max_workers} workers",
            cfg.lanes, cfg.slot_bits, cfg.value_beats
        )));
    }
    Ok((cfg, max_workers))
}

impl<'a> GradSession<'a> {
    /// Open a run of jobs with `workers[j]` workers each on `card`: read
    /// its geometry, set its addresses and the host fallback, write the
    /// worker table, enable the network path.
    pub fn open(card: &'a Card, workers: &[u8]) -> Result<Self, GradError> {
        let frames = card.frames().map_err(GradError::from_card)?;
        let (cfg, max_workers) = geometry(card)?;
        if workers.len() > MAX_JOBS {
            return Err(GradError::Options(format!(
                "{} jobs: the card's worker table has entries for {MAX_JOBS}",
                workers.len()
            )));
        }
        let mut base = vec![];
        let mut n = 0;
        for (j, &w) in workers.iter().enumerate() {
            if w == 0 || w as usize > max_workers {
                return Err(GradError::Options(format!(
                    "job {j}: {w} workers; the card takes 1 to {max_workers} per job"
                )));
            }
            base.push(n);
            n += w as usize;
        }
        if n > addr::MAX_WORKERS {
            return Err(GradError::Options(format!(
                "{n} workers in all: the simulated network has addresses for {}",
                addr::MAX_WORKERS
            )));
        }
        let s = Self {
            card,
            frames,
            cfg,
            workers: workers.to_vec(),
            base,
            copies: HashMap::new(),
            flushing: false,
            last_activity: frames.cycles(),
            beats: 0,
        };
        s.configure()?;
        Ok(s)
    }

    fn write(&self, r: &Register, v: u32) -> Result<(), GradError> {
        self.card.regs().write_reg(r, v).map_err(dev)
    }

    fn configure(&self) -> Result<(), GradError> {
        self.card.set_address().map_err(dev)?;
        let fb = self.fallback();
        let (hi, lo) = wire::mac_regs(&fb.mac);
        self.write(&net::GRAD_MAC_HI, hi)?;
        self.write(&net::GRAD_MAC_LO, lo)?;
        self.write(&net::GRAD_IP, u32::from(fb.ip))?;
        self.write(&net::GRAD_PORT, fb.port as u32)?;
        // The fan-out copies a RESULT to entries 0..workers of its job (the
        // count in its header, which is the job's), so only those are
        // written; entries of jobs not in this run are never used (a slot
        // an earlier run left is flushed to the host at the run's start).
        for (job, &n) in self.workers.iter().enumerate() {
            for w in 0..n as usize {
                let to = self.worker_addr(job, w).expect("a worker of the job");
                let (hi, lo) = wire::mac_regs(&to.mac);
                self.write(&net::WT_SEL, (job as u32) << 8 | w as u32)?;
                self.write(&net::WT_MAC_HI, net::WT_VALID.set(hi, 1))?;
                self.write(&net::WT_MAC_LO, lo)?;
                self.write(&net::WT_IP, u32::from(to.ip))?;
                self.write(&net::WT_PORT, to.port as u32)?;
                self.write(&net::WT_CMD, net::WT_CMD_WRITE.set(0, 1))?;
            }
        }
        self.card.enable_engines().map_err(dev)
    }

    /// The host fallback's address: the card's host at its UDP port.
    fn fallback(&self) -> Endpoint {
        Endpoint {
            port: addr::GRAD_FALLBACK_PORT,
            ..addr::host()
        }
    }

    fn worker_addr(&self, job: usize, w: usize) -> Option<Endpoint> {
        let n = *self.workers.get(job)? as usize;
        (w < n).then(|| addr::worker(self.base[job] + w))
    }

    /// The engine's build parameters (from `grad.GEOMETRY`).
    pub fn config(&self) -> Config {
        self.cfg
    }

    /// What runs behind the card, e.g. `sim:verilator`.
    pub fn kind(&self) -> String {
        self.card.name()
    }

    /// Send a DATA packet (UDP payload) from its worker on the wire.
    pub fn deliver(&mut self, payload: Vec<u8>) -> Result<(), GradError> {
        let h = Header::decode(&payload)
            .ok_or_else(|| GradError::Card("a DATA packet shorter than its header".into()))?;
        let from =
            self.worker_addr(h.job as usize, h.worker as usize)
                .ok_or(GradError::Worker {
                    worker: h.worker as usize,
                    workers: self.workers.get(h.job as usize).copied().unwrap_or(0) as usize,
                })?;
        let to = Endpoint {
            port: wire::GRAD_PORT,
            ..addr::card()
        };
        let f = build_frame(&from, &to, &payload);
        self.beats += f.len().div_ceil(64) as u64;
        self.frames.send(Port::Wire, &f).map_err(dev)?;
        self.last_activity = self.frames.cycles();
        Ok(())
    }

    /// DATA frames offered and not yet taken by the card.
    pub fn queued(&self) -> usize {
        self.frames.backlog(Port::Wire)
    }

    /// Let one cycle pass; whole packets the card sent are appended to `out`.
    pub fn step(&mut self, out: &mut Vec<OutPacket>) -> Result<(), GradError> {
        self.frames.advance(1).map_err(dev)?;
        self.collect(out)
    }

    /// Let `cycles` pass (the scheduler does this only when [`Self::idle`]).
    pub fn skip(&mut self, cycles: u64, out: &mut Vec<OutPacket>) -> Result<(), GradError> {
        self.frames.advance(cycles).map_err(dev)?;
        self.collect(out)
    }

    /// Write an engine register (`CMD.FLUSH` is tracked until `STATUS`
    /// shows it done).
    pub fn write_reg(&mut self, reg: &Register, value: u32) -> Result<(), GradError> {
        self.write(reg, value)?;
        if reg.addr == regs::CMD.addr && regs::CMD_FLUSH.get(value) != 0 {
            self.flushing = true;
        }
        self.last_activity = self.frames.cycles();
        Ok(())
    }

    /// Read an engine register; what the card sent meanwhile goes to `out`.
    pub fn read_reg(&mut self, reg: &Register, out: &mut Vec<OutPacket>) -> Result<u32, GradError> {
        let v = self.card.regs().read_reg(reg).map_err(dev)?;
        self.collect(out)?;
        Ok(v)
    }

    /// Nothing queued, in flight or half-replicated, no flush running:
    /// time may pass without the scheduler watching each cycle.
    pub fn idle(&mut self) -> Result<bool, GradError> {
        if self.frames.busy()
            || !self.copies.is_empty()
            || self.frames.cycles() < self.last_activity + DRAIN
        {
            return Ok(false);
        }
        if self.flushing {
            let st = self.card.regs().read_reg(&regs::STATUS).map_err(dev)?;
            if regs::STATUS_FLUSHING.get(st) != 0 {
                return Ok(false);
            }
            self.flushing = false;
            // Reading STATUS let time pass: anything the flush sent last
            // must still drain.
            self.last_activity = self.frames.cycles();
            return Ok(false);
        }
        Ok(true)
    }

    /// Device time (`axis_aclk` cycles since the card opened).
    pub fn cycles(&self) -> u64 {
        self.frames.cycles()
    }

    /// Wire beats of the DATA frames sent.
    pub fn beats(&self) -> u64 {
        self.beats
    }

    /// Take the card's frames: RESULT copies to workers, partials to the
    /// fallback; anything else is a card fault.
    fn collect(&mut self, out: &mut Vec<OutPacket>) -> Result<(), GradError> {
        let sent = self.frames.recv().map_err(dev)?;
        if !sent.is_empty() {
            self.last_activity = self.frames.cycles();
        }
        let card = addr::card();
        for f in sent {
            let p = parse_built(&f.bytes).ok_or_else(|| {
                GradError::Card(format!(
                    "a {}-byte frame on the {} port that is not Ethernet/IPv4/UDP",
                    f.bytes.len(),
                    f.port.name()
                ))
            })?;
            if p.src.mac != card.mac || p.src.ip != card.ip || p.src.port != wire::GRAD_PORT {
                return Err(GradError::Card(format!(
                    "a frame from {:?} on the {} port during a gradient run",
                    p.src,
                    f.port.name()
                )));
            }
            let h = Header::decode(&p.payload).ok_or_else(|| {
                GradError::Card("a gradient frame shorter than its header".into())
            })?;
            let kind = h.kind().ok_or_else(|| {
                GradError::Card(format!("a gradient frame with flags {:#x}", h.flags))
            })?;
            match (kind, f.port) {
                (Kind::Result | Kind::Nack, Port::Wire) => {
                    self.worker_copy(kind, h, p.dst, p.payload, out)?
                }
                (Kind::Evict | Kind::Fallback, Port::Host) if p.dst == self.fallback() => {
                    out.push(OutPacket {
                        kind,
                        bytes: p.payload,
                    })
                }
                (k, port) => {
                    return Err(GradError::Card(format!(
                        "a {k:?} frame to {:?} on the {} port",
                        p.dst,
                        port.name()
                    )))
                }
            }
        }
        Ok(())
    }

    /// One worker's RESULT or NACK copy; the packet once every worker it
    /// goes to has its copy (a RESULT: every worker of the job; a NACK:
    /// those missing from its bitmap).
    fn worker_copy(
        &mut self,
        kind: Kind,
        h: Header,
        to: Endpoint,
        payload: Vec<u8>,
        out: &mut Vec<OutPacket>,
    ) -> Result<(), GradError> {
        let job = h.job as usize;
        let n = self.workers.get(job).copied().unwrap_or(0) as usize;
        let w = (0..n)
            .find(|&w| self.worker_addr(job, w) == Some(to))
            .ok_or_else(|| {
                GradError::Card(format!(
                    "a {kind:?} of job {job} to {to:?}, not one of its workers"
                ))
            })?;
        let all = u32::MAX >> (32 - n.clamp(1, 32));
        let due = if kind == Kind::Nack {
            all & !h.bitmap
        } else {
            all
        };
        if due & 1 << w == 0 {
            return Err(GradError::Card(format!(
                "job {job} chunk {}: a NACK to worker {w}, whose contribution its bitmap {:#x} names",
                h.chunk, h.bitmap
            )));
        }
        let key = (h.job, h.chunk, kind == Kind::Nack);
        let (first, have) = self
            .copies
            .entry(key)
            .or_insert_with(|| (payload.clone(), 0));
        if *first != payload {
            return Err(GradError::Card(format!(
                "job {job} chunk {}: worker {w}'s {kind:?} copy differs from the first",
                h.chunk
            )));
        }
        if *have & 1 << w != 0 {
            return Err(GradError::Card(format!(
                "job {job} chunk {}: worker {w} got two {kind:?} copies",
                h.chunk
            )));
        }
        *have |= 1 << w;
        if *have == due {
            let (bytes, _) = self.copies.remove(&key).expect("present");
            out.push(OutPacket { kind, bytes });
        }
        Ok(())
    }
}
