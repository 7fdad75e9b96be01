//! A card checked against the top's reference model
//! (`weft_model::top_model::TopModel`): every register write and every
//! frame the host sends goes to the card and to the model; at the end
//! [`Checked::verdict`] compares every frame the card sent with the
//! model's, stream by stream (acks, record frames, gradient packets,
//! MemOps completions, frames passed through), and the engines' counters.
//!
//! It sits at the seam (it is a [`Device`] and a [`FramePorts`] wrapping
//! the card's), so it checks any job on any card. Register reads go to the
//! card only. The model takes frames in the order the host sent them; a job
//! that feeds one engine from both ports at once cannot be checked this way
//! (the card's merges decide that order).

use crate::card::{addr, Card};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use weft_driver::{Device, DmaBuffer, Frame, FramePorts, Port, Result as DriverResult};
use weft_model::top_model::{check_record_frames, InFrame, OutPort, TopModel};
use weft_model::wire::{self, parse_built, Side};
use weft_regs::{kv, BuildInfo};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Where a card and its reference model part ways.
#[derive(Debug, thiserror::Error)]
pub enum Disagreement {
    /// One output stream's frames differ.
    #[error("{port} stream {stream:#06x}: the card sent {card} frames, the model {model} (first difference at frame {at})")]
    Stream {
        /// The card's output port (`Tx` the wire, `C2h` the host).
        port: String,
        /// The stream: which engine and frame kind (`weft_model::wire::SRC_*`).
        stream: u16,
        /// Frames the card sent on it.
        card: usize,
        /// Frames the model sent on it.
        model: usize,
        /// The first frame that differs.
        at: usize,
    },
    /// The record frames to the collector differ from the model's records.
    #[error("record frames: {0}")]
    Records(String),
    /// A key-value counter differs.
    #[error("kv counter {name} (register {index}): the card {card}, the model {model:?}")]
    Counter {
        /// The counter's register name.
        name: &'static str,
        /// Its index among the engine's counters.
        index: usize,
        /// The card's value.
        card: u32,
        /// The model's value, if it has the register.
        model: Option<u32>,
    },
    /// The card's counters could not be read.
    #[error("reading the card's counters: {0}")]
    Device(#[from] weft_driver::Error),
}

/// A card and its reference model, side by side.
pub struct Checked {
    regs: Arc<dyn Device>,
    frames: Arc<dyn FramePorts>,
    model: Mutex<TopModel>,
    sent: Mutex<Vec<Frame>>,
}

impl Checked {
    /// Wrap `card` (which must have frame ports); the model is the top of
    /// image `build`. Returns the checked card and the checker.
    pub fn wrap(card: Card, build: BuildInfo) -> crate::Result<(Card, Arc<Checked>)> {
        let c = Arc::new(Checked {
            regs: card.regs_arc(),
            frames: card.frames_arc()?,
            model: Mutex::new(TopModel::new(build)),
            sent: Mutex::new(vec![]),
        });
        let checked = Card::from_parts(card.spec().clone(), c.clone(), Some(c.clone()));
        Ok((checked, c))
    }

    /// Wrap `card` with a model of the image it reports in its ID block
    /// (board, date, hash, features).
    pub fn wrap_card(card: Card) -> crate::Result<(Card, Arc<Checked>)> {
        let info = card.identify()?;
        let build = BuildInfo {
            board_id: info.board_id,
            build_date: info.build_date,
            git_hash: info.git_hash,
            features: info.features,
        };
        Self::wrap(card, build)
    }

    /// The stream (`tuser_src`) a frame the card sent belongs to, from its
    /// headers: the host sees no `tuser_src`.
    fn stream(f: &[u8]) -> u16 {
        let Some(p) =
            parse_built(f).filter(|p| p.src.mac == addr::card().mac && p.src.ip == addr::card().ip)
        else {
            return wire::SRC_PASS;
        };
        let flags = p.payload.get(1).copied().unwrap_or(0);
        match p.src.port {
            wire::KV_PORT if flags & wire::KV_FLAG_RECORDS != 0 => wire::SRC_KV_RECORDS,
            wire::KV_PORT => wire::SRC_KV_ACK,
            wire::GRAD_PORT => {
                use weft_model::grad_agg::packet::flags as g;
                let kind = if flags & g::FALLBACK != 0 {
                    3
                } else if flags & g::EVICT != 0 {
                    2
                } else {
                    1
                };
                wire::SRC_GRAD | kind << 8
            }
            wire::MEMOPS_PORT => wire::SRC_MEMOPS,
            _ => wire::SRC_PASS,
        }
    }

    /// Compare everything the card sent with the model: the number of
    /// frames that matched, or the first disagreement.
    pub fn verdict(&self) -> Result<u64, Disagreement> {
        let mut model = lock(&self.model);
        let sent = lock(&self.sent);
        let mut got: BTreeMap<(OutPort, u16), Vec<Vec<u8>>> = BTreeMap::new();
        for f in sent.iter() {
            let port = match f.port {
                Port::Wire => OutPort::Tx,
                Port::Host => OutPort::C2h,
            };
            got.entry((port, Self::stream(&f.bytes)))
                .or_default()
                .push(f.bytes.clone());
        }
        let records = got
            .remove(&(OutPort::C2h, wire::SRC_KV_RECORDS))
            .unwrap_or_default();
        let mut matched = 0;
        let streams: std::collections::BTreeSet<_> =
            got.keys().chain(model.out.keys()).copied().collect();
        for s in streams {
            let g = got.get(&s).map(Vec::as_slice).unwrap_or(&[]);
            let w = model.out.get(&s).map(Vec::as_slice).unwrap_or(&[]);
            if g != w {
                let at = g
                    .iter()
                    .zip(w)
                    .position(|(a, b)| a != b)
                    .unwrap_or(g.len().min(w.len()));
                return Err(Disagreement::Stream {
                    port: format!("{:?}", s.0),
                    stream: s.1,
                    card: g.len(),
                    model: w.len(),
                    at,
                });
            }
            matched += g.len() as u64;
        }
        let mut me = model.card().me;
        me.port = wire::KV_PORT;
        let (to, job, max) = (model.kv_dst(), model.kv_job(), model.pack_max());
        check_record_frames(&records, &model.records, &me, &to, job, None, max)
            .map_err(Disagreement::Records)?;
        matched += records.len() as u64;
        // The key-value engine's counters.
        for (i, r) in kv::COUNTERS.iter().enumerate() {
            let card = self.regs.read32(r.addr)?;
            let want = model.read_now(r.addr).map(|v| v.1);
            if Some(card) != want {
                return Err(Disagreement::Counter {
                    name: r.name,
                    index: i,
                    card,
                    model: want,
                });
            }
        }
        Ok(matched)
    }
}

impl Device for Checked {
    fn name(&self) -> String {
        self.regs.name()
    }
    fn bar_len(&self) -> u64 {
        self.regs.bar_len()
    }
    fn read32(&self, addr: u32) -> DriverResult<u32> {
        self.regs.read32(addr)
    }
    fn write32(&self, addr: u32, value: u32) -> DriverResult<()> {
        self.regs.write32(addr, value)?;
        lock(&self.model).write(addr, value);
        Ok(())
    }
    fn dma_alloc(&self, len: usize) -> DriverResult<Box<dyn DmaBuffer>> {
        self.regs.dma_alloc(len)
    }
    fn wait_irq(&self, vector: u32, timeout: Duration) -> DriverResult<bool> {
        self.regs.wait_irq(vector, timeout)
    }
}

impl FramePorts for Checked {
    fn send(&self, port: Port, frame: &[u8]) -> DriverResult<()> {
        self.frames.send(port, frame)?;
        let side = match port {
            Port::Wire => Side::Wire,
            Port::Host => Side::Host,
        };
        lock(&self.model).frame(side, &InFrame::new(frame.to_vec()));
        Ok(())
    }
    fn recv(&self) -> DriverResult<Vec<Frame>> {
        let v = self.frames.recv()?;
        lock(&self.sent).extend(v.iter().cloned());
        Ok(v)
    }
    fn cycles(&self) -> u64 {
        self.frames.cycles()
    }
    fn advance(&self, cycles: u64) -> DriverResult<()> {
        self.frames.advance(cycles)
    }
    fn backlog(&self, port: Port) -> usize {
        self.frames.backlog(port)
    }
    fn busy(&self) -> bool {
        self.frames.busy()
    }
}
