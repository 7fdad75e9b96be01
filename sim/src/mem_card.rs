//! `MemCard`: an in-memory card double for the host queues. Its register
//! space is plain memory holding the map's reset values (so discovery
//! works), except the `queue` block, which is the modelled queue engine
//! ([`crate::queue_engine`]) over the same [`HostMemory`] IOVA model as
//! `SimDevice`. No RTL runs: the double measures and tests the host ring
//! code and the protocol, not the card.
//!
//! With [`MemCard::null`] the queue block is plain memory too: doorbells
//! and descriptors are written and nothing happens, the ceiling against
//! which ring throughput is compared.

use crate::device::HostMemory;
use crate::queue_engine::{EngineStats, QueueEngine, Refused, VECTORS};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use weft_driver::{Device, DmaBuffer, Error, Result};
use weft_regs::{BuildInfo, Features, MAP};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct State {
    regs: HashMap<u32, u32>,
    engine: Option<QueueEngine>,
    /// H2C payloads that reached the card's input (not looped back).
    input: Vec<Vec<u8>>,
    keep_input: bool,
    inputs: u64,
}

/// The in-memory card double.
pub struct MemCard {
    state: Mutex<State>,
    mem: Arc<Mutex<HostMemory>>,
}

impl MemCard {
    fn with(engine: bool) -> Self {
        let build = BuildInfo {
            board_id: weft_regs::board::SIM,
            build_date: 0,
            git_hash: 0,
            features: Features::CTRL,
        };
        let regs = MAP
            .registers()
            .map(|(b, r)| (r.addr, MAP.reset_value(b, r, &build)))
            .collect();
        Self {
            state: Mutex::new(State {
                regs,
                engine: engine.then(QueueEngine::default),
                input: vec![],
                keep_input: true,
                inputs: 0,
            }),
            mem: Arc::new(Mutex::new(HostMemory::default())),
        }
    }

    /// A double with the modelled queue engine.
    pub fn new() -> Self {
        Self::with(true)
    }

    /// A double whose queue registers are plain memory (nothing serves
    /// the rings).
    pub fn null() -> Self {
        Self::with(false)
    }

    /// Count H2C payloads that reach the card's input without keeping them
    /// (benchmarks).
    pub fn discard_input(&self) {
        lock(&self.state).keep_input = false;
    }

    /// Take the H2C payloads that reached the card's input.
    pub fn take_input(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut lock(&self.state).input)
    }

    /// H2C payloads that reached the card's input so far.
    pub fn inputs(&self) -> u64 {
        lock(&self.state).inputs
    }

    /// Queue a message for the host on C2H queue 0, as the card would.
    pub fn send_c2h(&self, msg: Vec<u8>) {
        let mut st = lock(&self.state);
        if let Some(e) = st.engine.as_mut() {
            e.send_c2h(msg, &mut *lock(&self.mem));
        }
    }

    /// What the engine has done.
    pub fn stats(&self) -> EngineStats {
        lock(&self.state)
            .engine
            .as_ref()
            .map(|e| e.stats())
            .unwrap_or_default()
    }

    /// The card's view of host memory.
    pub fn host_memory(&self) -> Arc<Mutex<HostMemory>> {
        self.mem.clone()
    }

    fn refused(op: &'static str, addr: u32, e: Refused) -> Error {
        Error::Bus {
            device: "memcard".into(),
            op,
            addr,
            resp: match e {
                Refused::Unmapped => "DECERR",
                Refused::ReadOnly => "SLVERR",
            },
        }
    }
}

impl Default for MemCard {
    fn default() -> Self {
        Self::new()
    }
}

impl Device for MemCard {
    fn name(&self) -> String {
        "memcard".into()
    }

    fn bar_len(&self) -> u64 {
        MAP.span() as u64
    }

    fn read32(&self, addr: u32) -> Result<u32> {
        let st = lock(&self.state);
        if let (Some(e), true) = (st.engine.as_ref(), QueueEngine::owns(addr)) {
            return e.read(addr).map_err(|e| Self::refused("read", addr, e));
        }
        Ok(st.regs.get(&addr).copied().unwrap_or(0))
    }

    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        let mut st = lock(&self.state);
        let State {
            engine,
            input,
            keep_input,
            inputs,
            regs,
        } = &mut *st;
        match engine {
            Some(e) if QueueEngine::owns(addr) => {
                let mut mem = lock(&self.mem);
                e.write(addr, value, &mut *mem, &mut |p| {
                    *inputs += 1;
                    if *keep_input {
                        input.push(p);
                    }
                })
                .map_err(|e| Self::refused("write", addr, e))
            }
            _ => {
                // Plain memory, except that write-1-to-clear bits clear.
                let w1c = MAP
                    .lookup(addr)
                    .is_some_and(|(_, r)| r.access == weft_regs::Access::W1c);
                let old = regs.get(&addr).copied().unwrap_or(0);
                regs.insert(addr, if w1c { old & !value } else { value });
                Ok(())
            }
        }
    }

    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        HostMemory::alloc(&self.mem, len)
    }

    fn wait_irq(&self, vector: u32, _timeout: Duration) -> Result<bool> {
        if vector as usize >= VECTORS {
            return Err(Error::Unusable {
                device: "memcard".into(),
                why: format!("interrupt vector {vector} does not exist"),
            });
        }
        // The engine works when registers are written, never in between:
        // an interrupt is either pending now or will not come by waiting.
        let mut st = lock(&self.state);
        Ok(st
            .engine
            .as_mut()
            .is_some_and(|e| e.take_irq(vector as usize)))
    }
}
