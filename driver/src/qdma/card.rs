//! [`QdmaCard`]: a card under the OpenNIC shell reached the kernel-bypass
//! way — registers through BAR2 (the 250 MHz box at 0x100000), frames to
//! and from its host port through QDMA queue pairs — behind the host
//! library's two seams, [`Device`] and [`FramePorts`].
//!
//! The host port's frames all go out on queue pair 0, so they keep their
//! order (the seam's promise); received frames are taken from every pair
//! (the shell spreads them by its Toeplitz hash). A thread that wants its
//! own queue takes it with [`QdmaCard::queue`]. The wire port is the
//! network beyond CMAC 0: on a real card it is the world's (its frames
//! come from peers, [`NetworkWire`]); on the simulated card it is the
//! simulated network, handed in by the model.

use super::{Bar, Qdma, QdmaBus, QueuePair};
use crate::{Device, DmaBuffer, Error, Frame, FramePorts, Port, Result};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use weft_regs::opennic::MAP_OFFSET;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The card through QDMA queues.
pub struct QdmaCard<B: QdmaBus> {
    name: String,
    qdma: Qdma<B>,
    pairs: Vec<Mutex<QueuePair>>,
    /// Host-port frames queue pair 0 had no room for yet, in order.
    waiting: Mutex<VecDeque<Vec<u8>>>,
    wire: Arc<dyn FramePorts>,
}

impl<B: QdmaBus + 'static> QdmaCard<B> {
    /// A card from an engine brought up ([`Qdma::bring_up`]) and the
    /// network on its wire port.
    pub fn new(
        name: String,
        qdma: Qdma<B>,
        pairs: Vec<QueuePair>,
        wire: Arc<dyn FramePorts>,
    ) -> Self {
        Self {
            name,
            qdma,
            pairs: pairs.into_iter().map(Mutex::new).collect(),
            waiting: Mutex::new(VecDeque::new()),
            wire,
        }
    }

    /// The engine.
    pub fn qdma(&self) -> &Qdma<B> {
        &self.qdma
    }

    /// Queue pair `i` (function-relative), for a thread of its own. Frames
    /// it sends bypass the host port's order; frames it receives are not
    /// seen by [`FramePorts::recv`] while the guard is held.
    pub fn queue(&self, i: usize) -> Option<MutexGuard<'_, QueuePair>> {
        self.pairs.get(i).map(lock)
    }

    /// Queue pairs.
    pub fn queues(&self) -> usize {
        self.pairs.len()
    }

    /// Post waiting host frames while queue pair 0 has room.
    fn drain(&self, waiting: &mut VecDeque<Vec<u8>>) -> Result<()> {
        let mut q = lock(&self.pairs[0]);
        while let Some(f) = waiting.front() {
            if !q.send(f)? {
                break;
            }
            waiting.pop_front();
        }
        q.flush()
    }

    fn flush_all(&self) -> Result<()> {
        self.drain(&mut lock(&self.waiting))?;
        for p in &self.pairs {
            lock(p).flush()?;
        }
        Ok(())
    }

    fn check(&self, addr: u32) -> Result<u32> {
        let len = 1u64 << weft_regs::ADDR_BITS;
        if addr as u64 >= len || !addr.is_multiple_of(4) {
            return Err(Error::OutOfRange {
                device: self.name.clone(),
                addr: addr as u64,
                len,
            });
        }
        Ok(MAP_OFFSET + addr)
    }
}

impl<B: QdmaBus + 'static> Device for QdmaCard<B> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn bar_len(&self) -> u64 {
        1 << weft_regs::ADDR_BITS
    }
    fn read32(&self, addr: u32) -> Result<u32> {
        let at = self.check(addr)?;
        self.qdma.bus().read32(Bar::Shell, at)
    }
    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        let at = self.check(addr)?;
        self.qdma.bus().write32(Bar::Shell, at, value)
    }
    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        self.qdma.bus().dma_alloc(len)
    }
    fn wait_irq(&self, _vector: u32, timeout: Duration) -> Result<bool> {
        // The box has no interrupt line and the queues are polled: wait
        // out the timeout in device time, and report none.
        let cycles = (timeout.as_nanos() as u64 / 4).min(1_000_000);
        self.advance(cycles)?;
        Ok(false)
    }
}

impl<B: QdmaBus + 'static> FramePorts for QdmaCard<B> {
    fn send(&self, port: Port, frame: &[u8]) -> Result<()> {
        match port {
            Port::Wire => self.wire.send(Port::Wire, frame),
            Port::Host => {
                let max = lock(&self.pairs[0]).max_frame();
                if frame.is_empty() || frame.len() > max {
                    return Err(Error::Qdma {
                        device: self.name.clone(),
                        why: format!(
                            "a {}-byte frame does not fit the {max}-byte H2C buffers",
                            frame.len()
                        ),
                    });
                }
                let mut w = lock(&self.waiting);
                if w.is_empty() && lock(&self.pairs[0]).send(frame)? {
                    return Ok(());
                }
                w.push_back(frame.to_vec());
                self.drain(&mut w)
            }
        }
    }

    fn recv(&self) -> Result<Vec<Frame>> {
        self.flush_all()?;
        let mut out = self.wire.recv()?;
        let now = self.wire.cycles();
        for p in &self.pairs {
            lock(p).poll(|b| {
                out.push(Frame {
                    port: Port::Host,
                    cycle: now,
                    bytes: b.to_vec(),
                })
            })?;
        }
        // Host frames are stamped when they were polled; keep both ports'
        // frames in time order.
        out.sort_by_key(|f| f.cycle);
        Ok(out)
    }

    fn cycles(&self) -> u64 {
        self.wire.cycles()
    }

    fn advance(&self, cycles: u64) -> Result<()> {
        self.flush_all()?;
        self.wire.advance(cycles)?;
        self.flush_all()
    }

    fn backlog(&self, port: Port) -> usize {
        match port {
            Port::Wire => self.wire.backlog(Port::Wire),
            Port::Host => {
                let q = lock(&self.pairs[0]).h2c_pending().unwrap_or(0);
                lock(&self.waiting).len() + q
            }
        }
    }

    fn busy(&self) -> bool {
        if self.wire.busy() || !lock(&self.waiting).is_empty() {
            return true;
        }
        self.pairs.iter().any(|p| {
            let mut q = lock(p);
            q.h2c_pending().map_or(true, |n| n > 0) || q.rx_ready().unwrap_or(true)
        })
    }
}

/// The wire port of a real card: the network. Its frames come from peers
/// on their own hosts (the roles over UDP), so this side neither sends nor
/// receives; its time is wall time at the card's 250 MHz.
pub struct NetworkWire {
    start: Instant,
    name: String,
}

impl NetworkWire {
    /// The network of the card named `name`.
    pub fn new(name: String) -> Self {
        Self {
            start: Instant::now(),
            name,
        }
    }
}

impl FramePorts for NetworkWire {
    fn send(&self, _port: Port, frame: &[u8]) -> Result<()> {
        Err(Error::Unusable {
            device: self.name.clone(),
            why: format!(
                "a {}-byte frame for the wire port: on a real card the wire is the network, and frames reach it from peers' hosts (the roles over UDP)",
                frame.len()
            ),
        })
    }
    fn recv(&self) -> Result<Vec<Frame>> {
        Ok(vec![])
    }
    fn cycles(&self) -> u64 {
        (self.start.elapsed().as_nanos() / 4) as u64
    }
    fn advance(&self, cycles: u64) -> Result<()> {
        std::thread::sleep(Duration::from_nanos(cycles.saturating_mul(4)));
        Ok(())
    }
    fn backlog(&self, _port: Port) -> usize {
        0
    }
    fn busy(&self) -> bool {
        false
    }
}
