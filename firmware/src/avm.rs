//! Accelerator Virtual Memory policies: observations of the shared pool's
//! consumers in, actions on weights and quotas out.
//!
//! An [`Observation`] is one consistent snapshot of every consumer's
//! counters and its latency histogram (log2 buckets of cycles from request
//! to response), as the AVM block's registers report them. A policy turns
//! the difference between two snapshots (one control window) into
//! [`Action`]s, always inside the configured [`Limits`].

/// Consumers the policies handle at most.
pub const MAX_CONSUMERS: usize = 8;
/// Buckets of the latency histogram: bucket `b` counts latencies in
/// `[2^b, 2^(b+1))` cycles (bucket 0 also counts 0).
pub const BUCKETS: usize = 16;
/// Actions one decision may emit at most.
pub const MAX_ACTIONS: usize = 2 * MAX_CONSUMERS;

/// One consumer's counters at a snapshot (monotonic, except `pages`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumerObs {
    /// Requests issued.
    pub requests: u64,
    /// Requests granted a pool port.
    pub grants: u64,
    /// Cycles a request waited for a port.
    pub stall_cycles: u64,
    /// Accesses outside the consumer's mapped pages.
    pub faults: u64,
    /// Pages mapped now.
    pub pages: u32,
    /// Latency histogram.
    pub hist: [u64; BUCKETS],
}

/// A snapshot of the pool.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// Device cycle of the snapshot.
    pub cycle: u64,
    /// Consumers present (the first `n` entries of `consumers`).
    pub n: usize,
    /// Per consumer.
    pub consumers: [ConsumerObs; MAX_CONSUMERS],
}

/// Something a policy asks the pool to do.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Set a consumer's arbitration weight.
    SetWeight {
        /// Consumer index.
        consumer: usize,
        /// New weight.
        weight: u32,
    },
    /// Set a consumer's arbitration priority (the highest waiting class
    /// is served first).
    SetPriority {
        /// Consumer index.
        consumer: usize,
        /// New priority.
        priority: u32,
    },
    /// Set a consumer's page quota (maximum pages).
    SetQuota {
        /// Consumer index.
        consumer: usize,
        /// New quota.
        pages: u32,
    },
}

/// A bounded list of actions (no allocation: `no_std`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Actions {
    items: [Option<Action>; MAX_ACTIONS],
    len: usize,
}

impl Default for Actions {
    fn default() -> Self {
        Self {
            items: [None; MAX_ACTIONS],
            len: 0,
        }
    }
}

impl Actions {
    /// Add an action; false (and dropped) when full.
    pub fn push(&mut self, a: Action) -> bool {
        if self.len == MAX_ACTIONS {
            return false;
        }
        self.items[self.len] = Some(a);
        self.len += 1;
        true
    }
    /// The actions, in order.
    pub fn iter(&self) -> impl Iterator<Item = Action> + '_ {
        self.items[..self.len].iter().flatten().copied()
    }
    /// Number of actions.
    pub fn len(&self) -> usize {
        self.len
    }
    /// No actions.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What a policy may set.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Smallest weight.
    pub weight_min: u32,
    /// Largest weight.
    pub weight_max: u32,
    /// Largest priority.
    pub priority_max: u32,
    /// Per consumer: its reservation (the quota never goes below it).
    pub reserve: [u32; MAX_CONSUMERS],
    /// Per consumer: the largest quota.
    pub quota_max: [u32; MAX_CONSUMERS],
}

impl Limits {
    /// Whether an action is inside the limits.
    pub fn allows(&self, a: &Action) -> bool {
        match *a {
            Action::SetWeight { consumer, weight } => {
                consumer < MAX_CONSUMERS && (self.weight_min..=self.weight_max).contains(&weight)
            }
            Action::SetPriority { consumer, priority } => {
                consumer < MAX_CONSUMERS && priority <= self.priority_max
            }
            Action::SetQuota { consumer, pages } => {
                consumer < MAX_CONSUMERS
                    && (self.reserve[consumer]..=self.quota_max[consumer]).contains(&pages)
            }
        }
    }
}

/// A policy: a pure function of the observations it has seen.
pub trait Policy {
    /// Decide on the actions for the window that ended with `now`.
    fn decide(&mut self, now: &Observation) -> Actions;
}

/// The latency, in cycles, below which a fraction `q` (per mille) of the
/// window's requests completed, from histogram differences: the upper edge
/// of the bucket holding the quantile (a conservative estimate).
pub fn quantile(prev: &[u64; BUCKETS], now: &[u64; BUCKETS], per_mille: u64) -> Option<u64> {
    let mut delta = [0u64; BUCKETS];
    let mut total = 0u64;
    for b in 0..BUCKETS {
        delta[b] = now[b].saturating_sub(prev[b]);
        total += delta[b];
    }
    if total == 0 {
        return None;
    }
    // The smallest count that reaches the quantile, rounded up.
    let need = (total * per_mille).div_ceil(1000).max(1);
    let mut seen = 0;
    for (b, d) in delta.iter().enumerate() {
        seen += d;
        if seen >= need {
            return Some((1u64 << (b + 1)) - 1);
        }
    }
    Some(u64::MAX)
}

/// Fixed weights and quotas: sets them once and then does nothing.
#[derive(Copy, Clone, Debug)]
pub struct Static {
    weights: [u32; MAX_CONSUMERS],
    quotas: [u32; MAX_CONSUMERS],
    limits: Limits,
    done: bool,
}

impl Static {
    /// The policy that holds these weights and quotas (clamped to `limits`).
    pub fn new(
        weights: [u32; MAX_CONSUMERS],
        quotas: [u32; MAX_CONSUMERS],
        limits: Limits,
    ) -> Self {
        Self {
            weights,
            quotas,
            limits,
            done: false,
        }
    }
}

impl Policy for Static {
    fn decide(&mut self, now: &Observation) -> Actions {
        let mut out = Actions::default();
        if self.done {
            return out;
        }
        self.done = true;
        let l = &self.limits;
        for c in 0..now.n.min(MAX_CONSUMERS) {
            out.push(Action::SetWeight {
                consumer: c,
                weight: self.weights[c].clamp(l.weight_min, l.weight_max),
            });
            out.push(Action::SetQuota {
                consumer: c,
                pages: self.quotas[c].clamp(l.reserve[c], l.quota_max[c].max(l.reserve[c])),
            });
        }
        out
    }
}

/// Configuration of [`SloGuard`].
#[derive(Copy, Clone, Debug)]
pub struct SloConfig {
    /// Victims: bit `c` set when consumer `c` has an SLO.
    pub victims: u32,
    /// Per victim: its p99 latency objective, cycles.
    pub slo_p99: [u64; MAX_CONSUMERS],
    /// Weights to start from.
    pub base_weights: [u32; MAX_CONSUMERS],
    /// Weight moved per step.
    pub step: u32,
    /// Act when a victim's p99 exceeds its SLO by this many per mille.
    pub over_per_mille: u64,
    /// Relax when every victim's p99 is below its SLO by this many per
    /// mille for `calm_windows` windows in a row.
    pub under_per_mille: u64,
    /// Windows of calm before relaxing one step.
    pub calm_windows: u32,
    /// Fewest requests a victim needs in a window to judge its p99.
    pub min_samples: u64,
    /// The limits.
    pub limits: Limits,
}

/// Keeps named victims' p99 latency under their SLO. The first window a
/// victim misses its SLO, the victims are lifted to the highest priority
/// class (the pool then serves a waiting victim before any aggressor, so its
/// latency is what it would be alone, whatever the aggressors' load), and
/// every window over the SLO shifts one step of weight from the aggressors
/// (every consumer without an SLO) to the victims, which orders service
/// among victims and keeps bursts of victims from hogging the port. Weight
/// is given back one step after each calm spell; the priority is held while
/// the victims are active and dropped only after `calm_windows` windows in
/// which no victim had traffic, since dropping it while they are active
/// would bring the interference straight back. The gap between the act and
/// relax thresholds, the calm spell and the sticky priority are the
/// hysteresis that keeps it from oscillating.
#[derive(Copy, Clone, Debug)]
pub struct SloGuard {
    cfg: SloConfig,
    weights: [u32; MAX_CONSUMERS],
    prev: Option<Observation>,
    calm: u32,
    idle: u32,
    boosted: bool,
    started: bool,
}

impl SloGuard {
    /// A guard with `cfg`.
    pub fn new(cfg: SloConfig) -> Self {
        let mut weights = cfg.base_weights;
        for w in &mut weights {
            *w = (*w).clamp(cfg.limits.weight_min, cfg.limits.weight_max);
        }
        Self {
            cfg,
            weights,
            prev: None,
            calm: 0,
            idle: 0,
            boosted: false,
            started: false,
        }
    }

    /// The weights the guard holds now.
    pub fn weights(&self) -> [u32; MAX_CONSUMERS] {
        self.weights
    }

    /// Whether the victims are lifted to the top priority class.
    pub fn boosted(&self) -> bool {
        self.boosted
    }

    fn is_victim(&self, c: usize) -> bool {
        c < 32 && self.cfg.victims & (1 << c) != 0
    }

    fn set_boost(&mut self, on: bool, n: usize, out: &mut Actions) {
        self.boosted = on;
        let top = self.cfg.limits.priority_max;
        for c in 0..n {
            out.push(Action::SetPriority {
                consumer: c,
                priority: if on && self.is_victim(c) { top } else { 0 },
            });
        }
    }
}

impl Policy for SloGuard {
    fn decide(&mut self, now: &Observation) -> Actions {
        let mut out = Actions::default();
        let n = now.n.min(MAX_CONSUMERS);
        let l = self.cfg.limits;
        if !self.started {
            self.started = true;
            for c in 0..n {
                out.push(Action::SetWeight {
                    consumer: c,
                    weight: self.weights[c],
                });
            }
            self.set_boost(false, n, &mut out);
        }
        let Some(prev) = self.prev.replace(*now) else {
            return out;
        };
        // Worst victim, relative to its SLO, in per mille.
        let mut worst: Option<u64> = None;
        for c in (0..n).filter(|&c| self.is_victim(c)) {
            let (p, q) = (&prev.consumers[c], &now.consumers[c]);
            if q.grants.saturating_sub(p.grants) < self.cfg.min_samples {
                continue;
            }
            let slo = self.cfg.slo_p99[c].max(1);
            if let Some(p99) = quantile(&p.hist, &q.hist, 990) {
                let rel = p99.saturating_mul(1000) / slo;
                worst = Some(worst.map_or(rel, |w| w.max(rel)));
            }
        }
        let Some(worst) = worst else {
            // No victim had traffic: after a calm spell, drop the priority.
            self.idle += 1;
            if self.boosted && self.idle >= self.cfg.calm_windows {
                self.set_boost(false, n, &mut out);
            }
            return out;
        };
        self.idle = 0;
        let old = self.weights;
        if worst > 1000 + self.cfg.over_per_mille {
            self.calm = 0;
            if !self.boosted {
                self.set_boost(true, n, &mut out);
            }
            for c in 0..n {
                self.weights[c] = if self.is_victim(c) {
                    self.weights[c]
                        .saturating_add(self.cfg.step)
                        .min(l.weight_max)
                } else {
                    self.weights[c]
                        .saturating_sub(self.cfg.step)
                        .max(l.weight_min)
                };
            }
        } else if worst + self.cfg.under_per_mille < 1000 {
            self.calm += 1;
            if self.calm >= self.cfg.calm_windows {
                self.calm = 0;
                for c in 0..n {
                    let base = self.cfg.base_weights[c].clamp(l.weight_min, l.weight_max);
                    let w = &mut self.weights[c];
                    *w = if *w > base {
                        w.saturating_sub(self.cfg.step).max(base)
                    } else {
                        w.saturating_add(self.cfg.step).min(base)
                    };
                }
            }
        } else {
            self.calm = 0;
        }
        for (c, (&new, &was)) in self.weights.iter().zip(&old).enumerate().take(n) {
            if new != was {
                out.push(Action::SetWeight {
                    consumer: c,
                    weight: new,
                });
            }
        }
        out
    }
}
