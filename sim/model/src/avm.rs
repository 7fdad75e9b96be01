//! Accelerator Virtual Memory (after NicOS): the reference model of the
//! shared on-chip pool the AVM block will implement.
//!
//! The pool has `pages` physical pages of `page_words` 32-bit words behind
//! `ports` physical ports, shared by named consumers. Each consumer sees
//! only its own virtual pages, mapped to physical pages by a table that only
//! the control plane writes; an access outside its mapped pages is refused
//! with an error response and counted as a fault, and touches nothing.
//! Pages are granted within a consumer's quota and reclaimed down to its
//! reservation. Every cycle the arbiter grants up to `ports` waiting
//! requests: weighted deficit round-robin by per-consumer weight, or — the
//! unmanaged baseline — first come, first served. Each consumer keeps
//! counters and a log2 histogram of request-to-response latency.
//!
//! This is the specification the AVM block's RTL will be checked against;
//! the block itself is not built yet.

use std::collections::VecDeque;

/// Buckets of the latency histogram (bucket `b`: `[2^b, 2^(b+1))` cycles).
pub const BUCKETS: usize = 16;
/// Cycles from a grant to the response (the RAM's read latency).
pub const ACCESS_CYCLES: u64 = 2;

/// Geometry of the pool.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct AvmConfig {
    /// Consumers.
    pub consumers: usize,
    /// Physical pages.
    pub pages: usize,
    /// Words per page.
    pub page_words: usize,
    /// Requests the pool serves per cycle.
    pub ports: usize,
    /// Virtual pages per consumer.
    pub vpages: usize,
}

/// How the pool's ports are shared.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Arbitration {
    /// Oldest request first, whoever sent it (no management: the baseline).
    FirstCome,
    /// Deficit round-robin weighted by each consumer's weight.
    Weighted,
}

/// A consumer's request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Access {
    /// Consumer.
    pub consumer: usize,
    /// Virtual word address (page * page_words + offset).
    pub addr: usize,
    /// `Some(data)` writes, `None` reads.
    pub write: Option<u32>,
}

/// A response.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Consumer.
    pub consumer: usize,
    /// The request's virtual address.
    pub addr: usize,
    /// Read data (0 for writes); `None` for a fault.
    pub data: Option<u32>,
    /// Cycles from arrival to response.
    pub latency: u64,
}

/// Per-consumer counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumerStats {
    /// Requests received.
    pub requests: u64,
    /// Requests granted a port.
    pub grants: u64,
    /// Request-cycles spent waiting for a port.
    pub stall_cycles: u64,
    /// Faults (accesses outside the mapped pages).
    pub faults: u64,
    /// Latency histogram.
    pub hist: [u64; BUCKETS],
}

#[derive(Clone, Debug)]
struct Consumer {
    map: Vec<Option<usize>>,
    quota: usize,
    reserve: usize,
    weight: u32,
    deficit: i64,
    queue: VecDeque<(u64, Access)>,
    stats: ConsumerStats,
}

/// Why a control operation was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AvmError {
    /// No such consumer.
    Consumer(usize),
    /// The virtual page is outside the consumer's table or already mapped.
    Page(usize),
    /// The consumer is at its quota.
    Quota,
    /// No free physical page.
    Full,
    /// The limits are inconsistent (reservation above quota).
    Limits,
}

/// The pool.
#[derive(Clone, Debug)]
pub struct AvmModel {
    cfg: AvmConfig,
    /// How ports are shared.
    pub arbitration: Arbitration,
    mem: Vec<u32>,
    free: Vec<usize>,
    consumers: Vec<Consumer>,
    cycle: u64,
    rr: usize,
    inflight: Vec<(u64, Response)>,
}

impl AvmModel {
    /// An empty pool: every consumer with weight 1, quota 0, nothing mapped.
    pub fn new(cfg: AvmConfig, arbitration: Arbitration) -> Self {
        Self {
            cfg,
            arbitration,
            mem: vec![0; cfg.pages * cfg.page_words],
            free: (0..cfg.pages).rev().collect(),
            consumers: (0..cfg.consumers)
                .map(|_| Consumer {
                    map: vec![None; cfg.vpages],
                    quota: 0,
                    reserve: 0,
                    weight: 1,
                    deficit: 0,
                    queue: VecDeque::new(),
                    stats: ConsumerStats::default(),
                })
                .collect(),
            cycle: 0,
            rr: 0,
            inflight: vec![],
        }
    }

    fn consumer(&mut self, c: usize) -> Result<&mut Consumer, AvmError> {
        self.consumers.get_mut(c).ok_or(AvmError::Consumer(c))
    }

    /// Set a consumer's reservation and quota (pages).
    pub fn set_limits(&mut self, c: usize, reserve: usize, quota: usize) -> Result<(), AvmError> {
        if reserve > quota {
            return Err(AvmError::Limits);
        }
        let k = self.consumer(c)?;
        k.reserve = reserve;
        k.quota = quota;
        Ok(())
    }

    /// Set a consumer's arbitration weight (at least 1).
    pub fn set_weight(&mut self, c: usize, weight: u32) -> Result<(), AvmError> {
        self.consumer(c)?.weight = weight.max(1);
        Ok(())
    }

    /// Pages a consumer has mapped.
    pub fn pages(&self, c: usize) -> usize {
        self.consumers
            .get(c)
            .map_or(0, |k| k.map.iter().flatten().count())
    }

    /// Map virtual page `v` of consumer `c` to a free physical page
    /// (zeroed: no data leaks from its last owner).
    pub fn grant(&mut self, c: usize, v: usize) -> Result<usize, AvmError> {
        let (pages, quota) = (self.pages(c), self.consumer(c)?.quota);
        let k = &self.consumers[c];
        if v >= k.map.len() || k.map[v].is_some() {
            return Err(AvmError::Page(v));
        }
        if pages >= quota {
            return Err(AvmError::Quota);
        }
        let p = self.free.pop().ok_or(AvmError::Full)?;
        let w = self.cfg.page_words;
        self.mem[p * w..(p + 1) * w].fill(0);
        self.consumers[c].map[v] = Some(p);
        Ok(p)
    }

    /// Take back up to `n` pages from consumer `c`, never below its
    /// reservation, highest virtual pages first; returns the virtual pages
    /// taken (what the consumer is told).
    pub fn reclaim(&mut self, c: usize, n: usize) -> Result<Vec<usize>, AvmError> {
        let reserve = self.consumer(c)?.reserve;
        let mut taken = vec![];
        for v in (0..self.cfg.vpages).rev() {
            if taken.len() == n || self.pages(c) <= reserve {
                break;
            }
            if let Some(p) = self.consumers[c].map[v].take() {
                self.free.push(p);
                taken.push(v);
            }
        }
        Ok(taken)
    }

    /// A request arrives this cycle.
    pub fn request(&mut self, a: Access) -> Result<(), AvmError> {
        let cycle = self.cycle;
        let k = self.consumer(a.consumer)?;
        k.stats.requests += 1;
        k.queue.push_back((cycle, a));
        Ok(())
    }

    fn translate(&self, a: &Access) -> Option<usize> {
        let w = self.cfg.page_words;
        let p = (*self.consumers[a.consumer].map.get(a.addr / w)?)?;
        Some(p * w + a.addr % w)
    }

    fn pick(&mut self) -> Option<usize> {
        let n = self.consumers.len();
        match self.arbitration {
            Arbitration::FirstCome => (0..n)
                .filter(|&c| !self.consumers[c].queue.is_empty())
                .min_by_key(|&c| (self.consumers[c].queue[0].0, (c + n - self.rr) % n)),
            Arbitration::Weighted => {
                // Deficit round-robin: a backlogged consumer earns its weight
                // each round and spends one per grant.
                for _ in 0..2 * n + 1 {
                    let c = self.rr;
                    let k = &mut self.consumers[c];
                    if k.queue.is_empty() {
                        k.deficit = 0;
                        self.rr = (self.rr + 1) % n;
                        continue;
                    }
                    if k.deficit > 0 {
                        k.deficit -= 1;
                        return Some(c);
                    }
                    k.deficit += k.weight as i64;
                    self.rr = (self.rr + 1) % n;
                }
                None
            }
        }
    }

    /// One cycle: grant up to `ports` requests, perform them, and return the
    /// responses due this cycle (faults answer at once, accesses after
    /// [`ACCESS_CYCLES`]).
    pub fn tick(&mut self) -> Vec<Response> {
        let mut out = vec![];
        for _ in 0..self.cfg.ports {
            let Some(c) = self.pick() else {
                break;
            };
            let Some((arrived, a)) = self.consumers[c].queue.pop_front() else {
                break;
            };
            self.consumers[c].stats.grants += 1;
            let r = match self.translate(&a) {
                None => {
                    self.consumers[c].stats.faults += 1;
                    Response {
                        consumer: c,
                        addr: a.addr,
                        data: None,
                        latency: self.cycle - arrived + 1,
                    }
                }
                Some(pa) => {
                    let data = match a.write {
                        Some(d) => {
                            self.mem[pa] = d;
                            0
                        }
                        None => self.mem[pa],
                    };
                    Response {
                        consumer: c,
                        addr: a.addr,
                        data: Some(data),
                        latency: self.cycle - arrived + ACCESS_CYCLES,
                    }
                }
            };
            // The response leaves on cycle `arrived + latency - 1`.
            self.inflight.push((arrived + r.latency - 1, r));
        }
        for k in &mut self.consumers {
            k.stats.stall_cycles += k.queue.len() as u64;
        }
        let now = self.cycle;
        let (due, later): (Vec<_>, Vec<_>) = self.inflight.drain(..).partition(|(t, _)| *t <= now);
        self.inflight = later;
        for (_, r) in due {
            let b = (63 - r.latency.max(1).leading_zeros() as usize).min(BUCKETS - 1);
            self.consumers[r.consumer].stats.hist[b] += 1;
            out.push(r);
        }
        self.cycle += 1;
        out
    }

    /// A consumer's counters.
    pub fn stats(&self, c: usize) -> Option<&ConsumerStats> {
        self.consumers.get(c).map(|k| &k.stats)
    }

    /// The physical word behind a consumer's virtual address, if mapped
    /// (for checking isolation).
    pub fn peek(&self, c: usize, addr: usize) -> Option<u32> {
        let a = Access {
            consumer: c,
            addr,
            write: None,
        };
        self.consumers.get(c)?;
        self.translate(&a).map(|p| self.mem[p])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CFG: AvmConfig = AvmConfig {
        consumers: 4,
        pages: 16,
        page_words: 8,
        ports: 1,
        vpages: 8,
    };

    #[test]
    fn isolation_quota_and_reclaim() {
        let mut m = AvmModel::new(CFG, Arbitration::Weighted);
        m.set_limits(0, 1, 2).unwrap();
        m.set_limits(1, 0, 1).unwrap();
        m.grant(0, 0).unwrap();
        m.grant(0, 3).unwrap();
        assert_eq!(m.grant(0, 4), Err(AvmError::Quota));
        m.grant(1, 0).unwrap();
        m.request(Access {
            consumer: 0,
            addr: 5,
            write: Some(7),
        })
        .unwrap();
        // Consumer 1 sweeps addresses it does not own: every one faults.
        for a in 8..64 {
            m.request(Access {
                consumer: 1,
                addr: a,
                write: Some(0xbad),
            })
            .unwrap();
        }
        let mut faults = 0;
        for _ in 0..200 {
            faults += m.tick().iter().filter(|r| r.data.is_none()).count();
        }
        assert_eq!(faults, 56);
        assert_eq!(m.stats(1).unwrap().faults, 56);
        assert_eq!(m.peek(0, 5), Some(7));
        assert_eq!(m.peek(1, 5), Some(0), "its own page, untouched by 0");
        assert_eq!(m.reclaim(0, 5).unwrap(), vec![3], "down to the reservation");
        assert_eq!(m.pages(0), 1);
        // A re-granted page comes back zeroed.
        m.set_limits(2, 0, 8).unwrap();
        let _ = m.grant(2, 0).unwrap();
        assert_eq!(m.peek(2, 0), Some(0));
        assert_eq!(m.set_limits(0, 3, 2), Err(AvmError::Limits));
    }

    fn share(arb: Arbitration, weights: [u32; 4]) -> [u64; 4] {
        let mut m = AvmModel::new(CFG, arb);
        for (c, &w) in weights.iter().enumerate() {
            m.set_limits(c, 0, 2).unwrap();
            m.grant(c, 0).unwrap();
            m.set_weight(c, w).unwrap();
        }
        for _ in 0..2000 {
            for c in 0..4 {
                // Consumer 0 is light; the others keep the queue full.
                if c > 0 || m.cycle.is_multiple_of(8) {
                    m.request(Access {
                        consumer: c,
                        addr: 1,
                        write: None,
                    })
                    .unwrap();
                }
            }
            m.tick();
        }
        [0, 1, 2, 3].map(|c| m.stats(c).unwrap().grants)
    }

    #[test]
    fn weighted_arbitration_follows_weights() {
        let g = share(Arbitration::Weighted, [1, 4, 2, 1]);
        // Backlogged consumers share in proportion to their weights.
        assert!((g[1] as f64 / g[3] as f64 - 4.0).abs() < 0.3, "{g:?}");
        assert!((g[2] as f64 / g[3] as f64 - 2.0).abs() < 0.2, "{g:?}");
    }

    #[test]
    fn a_light_victim_waits_longer_without_management() {
        let p99 = |arb, weights| {
            let mut m = AvmModel::new(CFG, arb);
            for c in 0..4 {
                m.set_limits(c, 0, 2).unwrap();
                m.grant(c, 0).unwrap();
                m.set_weight(c, weights).unwrap();
            }
            m.set_weight(0, 8).unwrap();
            let mut lat = vec![];
            for _ in 0..4000 {
                for c in 0..4 {
                    if c > 0 || m.cycle.is_multiple_of(16) {
                        m.request(Access {
                            consumer: c,
                            addr: 1,
                            write: None,
                        })
                        .unwrap();
                    }
                }
                lat.extend(
                    m.tick()
                        .iter()
                        .filter(|r| r.consumer == 0)
                        .map(|r| r.latency),
                );
            }
            lat.sort_unstable();
            lat[lat.len() * 99 / 100]
        };
        let unmanaged = p99(Arbitration::FirstCome, 1);
        let managed = p99(Arbitration::Weighted, 1);
        assert!(
            unmanaged > 4 * managed,
            "first come {unmanaged}, weighted {managed}"
        );
    }
}
