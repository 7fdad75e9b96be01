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

/// Something a policy tells its operator, beside acting.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A victim keeps missing its SLO with every knob the policy has
    /// already turned for it: its SLO is out of reach under this load. The
    /// policy holds its actions instead of oscillating.
    Infeasible {
        /// Consumer index.
        consumer: usize,
        /// Its p99 in the window that decided it, cycles (histogram upper
        /// edge).
        p99: u64,
        /// Its SLO, cycles.
        slo: u64,
    },
    /// A victim reported infeasible meets its SLO again.
    Feasible {
        /// Consumer index.
        consumer: usize,
    },
}

/// A decision: a bounded list of actions and of events (no allocation:
/// `no_std`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Actions {
    items: [Option<Action>; MAX_ACTIONS],
    len: usize,
    events: [Option<Event>; MAX_CONSUMERS],
    n_events: usize,
}

impl Default for Actions {
    fn default() -> Self {
        Self {
            items: [None; MAX_ACTIONS],
            len: 0,
            events: [None; MAX_CONSUMERS],
            n_events: 0,
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
    /// Add an event; false (and dropped) when full.
    pub fn note(&mut self, e: Event) -> bool {
        if self.n_events == MAX_CONSUMERS {
            return false;
        }
        self.events[self.n_events] = Some(e);
        self.n_events += 1;
        true
    }
    /// The events, in order.
    pub fn events(&self) -> impl Iterator<Item = Event> + '_ {
        self.events[..self.n_events].iter().flatten().copied()
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
    /// Windows in a row a victim may miss its SLO with every knob turned
    /// (top class it may take, weight at the limit) before the guard
    /// reports it infeasible and stops acting for it.
    pub infeasible_windows: u32,
    /// The limits.
    pub limits: Limits,
}

/// Keeps every victim's p99 latency under its own SLO.
///
/// The knobs, in the order it turns them for a victim that misses:
///
/// 1. **Priority classes, deadline-monotonic.** The first window a victim
///    misses its SLO, every victim is lifted above the aggressors (every
///    consumer without an SLO, class 0), the tightest SLO in the highest
///    class, the next in the class below, and so on (victims with equal
///    SLOs share a class). The pool serves the highest waiting class first,
///    so a victim waits only for victims with tighter SLOs and for the one
///    request being served, never for an aggressor's burst; and a light,
///    tight victim never queues behind a bursty, looser one. Fixed-priority
///    scheduling theory's deadline-monotonic order.
/// 2. **Promotion.** A victim that still misses moves up into the next
///    class, sharing it (round-robin by weight) with the tighter victims
///    there: a looser victim stuck behind a tighter one's bursts then waits
///    for at most one of its requests per turn.
/// 3. **Weight.** Within its class, a victim that still misses gains
///    `step` weight per window, up to the limit (only when it shares the
///    class: alone, weight orders nothing).
/// 4. **Infeasible.** A victim that keeps missing for `infeasible_windows`
///    windows with nothing left to turn is reported ([`Event::Infeasible`])
///    and the guard stops acting for it, instead of oscillating.
///
/// Aggressors keep their weights: under the classes they only lose the
/// port cycles victims use. Quotas and reclaim are not turned: in this pool
/// a consumer's pages bound what it can address, not how long it waits, so
/// they do not move latency. Hysteresis: act above the SLO by
/// `over_per_mille`, give weight back one step toward the base only after
/// `calm_windows` windows under it by `under_per_mille`, and drop the
/// classes and promotions only after `calm_windows` windows with no victim
/// traffic — dropping them while victims are active would bring the
/// interference straight back.
#[derive(Copy, Clone, Debug)]
pub struct SloGuard {
    cfg: SloConfig,
    weights: [u32; MAX_CONSUMERS],
    /// Deadline-monotonic class of each victim when lifted (0 for
    /// aggressors).
    base_class: [u32; MAX_CONSUMERS],
    /// Classes of promotion on top of `base_class`.
    promoted: [u32; MAX_CONSUMERS],
    /// Windows in a row each victim missed with nothing left to turn.
    stuck: [u32; MAX_CONSUMERS],
    infeasible: u32,
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
        let victim = |c: usize| cfg.victims & (1 << c) != 0;
        let mut base_class = [0; MAX_CONSUMERS];
        let top = cfg.limits.priority_max;
        for c in (0..MAX_CONSUMERS).filter(|&c| victim(c)) {
            // Rank = distinct SLOs tighter than this one.
            let mut tighter = [0u64; MAX_CONSUMERS];
            let mut n = 0;
            for o in (0..MAX_CONSUMERS).filter(|&o| victim(o)) {
                let slo = cfg.slo_p99[o];
                if slo < cfg.slo_p99[c] && !tighter[..n].contains(&slo) {
                    tighter[n] = slo;
                    n += 1;
                }
            }
            base_class[c] = top.saturating_sub(n as u32).max(top.min(1));
        }
        Self {
            cfg,
            weights,
            base_class,
            promoted: [0; MAX_CONSUMERS],
            stuck: [0; MAX_CONSUMERS],
            infeasible: 0,
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

    /// Whether the victims are lifted above the aggressors.
    pub fn boosted(&self) -> bool {
        self.boosted
    }

    /// The class each consumer is in now (0 for all while not lifted).
    pub fn classes(&self) -> [u32; MAX_CONSUMERS] {
        let mut out = [0; MAX_CONSUMERS];
        if self.boosted {
            for (c, o) in out.iter_mut().enumerate() {
                *o = self.class(c);
            }
        }
        out
    }

    /// Victims reported infeasible (bit `c` for consumer `c`).
    pub fn infeasible(&self) -> u32 {
        self.infeasible
    }

    fn is_victim(&self, c: usize) -> bool {
        c < 32 && self.cfg.victims & (1 << c) != 0
    }

    fn class(&self, c: usize) -> u32 {
        if !self.is_victim(c) {
            return 0;
        }
        (self.base_class[c] + self.promoted[c]).min(self.cfg.limits.priority_max)
    }

    fn push_classes(&self, n: usize, out: &mut Actions) {
        for c in 0..n {
            out.push(Action::SetPriority {
                consumer: c,
                priority: if self.boosted { self.class(c) } else { 0 },
            });
        }
    }

    /// One victim over its SLO: turn its next knob; true when nothing was
    /// left to turn.
    fn escalate(&mut self, c: usize, n: usize, out: &mut Actions) -> bool {
        let l = self.cfg.limits;
        if self.class(c) < l.priority_max {
            let before = self.class(c);
            // Up to the class of the next tighter victim (or one up).
            let mut target = l.priority_max;
            for o in (0..n).filter(|&o| o != c && self.is_victim(o)) {
                let k = self.class(o);
                if k > before && k < target {
                    target = k;
                }
            }
            self.promoted[c] += target - before;
            out.push(Action::SetPriority {
                consumer: c,
                priority: self.class(c),
            });
            return false;
        }
        // Weight orders service only among class-mates.
        let shared = (0..n).any(|o| o != c && self.is_victim(o) && self.class(o) == self.class(c));
        if shared && self.weights[c] < l.weight_max {
            self.weights[c] = self.weights[c]
                .saturating_add(self.cfg.step)
                .min(l.weight_max);
            out.push(Action::SetWeight {
                consumer: c,
                weight: self.weights[c],
            });
            return false;
        }
        true
    }

    /// Every victim calm for a spell: give back one step of weight.
    /// Promotions stay while the victims are active (undoing one would
    /// bring back the wait it cured, and the guard would cycle); they go
    /// with the classes once the victims are quiet.
    fn relax(&mut self, n: usize, out: &mut Actions) {
        let l = self.cfg.limits;
        for c in 0..n {
            if !self.is_victim(c) {
                continue;
            }
            let base = self.cfg.base_weights[c].clamp(l.weight_min, l.weight_max);
            if self.weights[c] != base {
                let w = self.weights[c];
                self.weights[c] = if w > base {
                    w.saturating_sub(self.cfg.step).max(base)
                } else {
                    w.saturating_add(self.cfg.step).min(base)
                };
                out.push(Action::SetWeight {
                    consumer: c,
                    weight: self.weights[c],
                });
            }
        }
    }
}

impl Policy for SloGuard {
    fn decide(&mut self, now: &Observation) -> Actions {
        let mut out = Actions::default();
        let n = now.n.min(MAX_CONSUMERS);
        if !self.started {
            self.started = true;
            for c in 0..n {
                out.push(Action::SetWeight {
                    consumer: c,
                    weight: self.weights[c],
                });
            }
            self.push_classes(n, &mut out);
        }
        let Some(prev) = self.prev.replace(*now) else {
            return out;
        };
        // Each victim's p99 relative to its SLO, per mille.
        let mut rel = [None; MAX_CONSUMERS];
        let mut p99s = [0u64; MAX_CONSUMERS];
        for c in (0..n).filter(|&c| self.is_victim(c)) {
            let (p, q) = (&prev.consumers[c], &now.consumers[c]);
            if q.grants.saturating_sub(p.grants) < self.cfg.min_samples {
                continue;
            }
            if let Some(p99) = quantile(&p.hist, &q.hist, 990) {
                p99s[c] = p99;
                rel[c] = Some(p99.saturating_mul(1000) / self.cfg.slo_p99[c].max(1));
            }
        }
        if rel.iter().all(Option::is_none) {
            // No victim had traffic: after a calm spell, drop the classes.
            self.idle += 1;
            if self.boosted && self.idle >= self.cfg.calm_windows {
                self.boosted = false;
                self.promoted = [0; MAX_CONSUMERS];
                self.push_classes(n, &mut out);
            }
            return out;
        }
        self.idle = 0;
        let act_above = 1000 + self.cfg.over_per_mille;
        let over = move |r: u64| r > act_above;
        let missing = rel.iter().flatten().any(|&r| over(r));
        if missing {
            self.calm = 0;
            if !self.boosted {
                self.boosted = true;
                self.push_classes(n, &mut out);
                return out;
            }
            for c in 0..n {
                let Some(r) = rel[c] else { continue };
                if !over(r) {
                    self.stuck[c] = 0;
                    continue;
                }
                if self.infeasible & (1 << c) != 0 {
                    continue;
                }
                if self.escalate(c, n, &mut out) {
                    self.stuck[c] += 1;
                    if self.stuck[c] >= self.cfg.infeasible_windows {
                        self.infeasible |= 1 << c;
                        out.note(Event::Infeasible {
                            consumer: c,
                            p99: p99s[c],
                            slo: self.cfg.slo_p99[c],
                        });
                    }
                }
            }
        } else if rel
            .iter()
            .flatten()
            .all(|&r| r + self.cfg.under_per_mille < 1000)
        {
            self.calm += 1;
            if self.calm >= self.cfg.calm_windows {
                self.calm = 0;
                self.relax(n, &mut out);
            }
        } else {
            self.calm = 0;
        }
        // A victim reported infeasible that meets its SLO again.
        for (c, r) in rel.iter().enumerate().take(n) {
            if self.infeasible & (1 << c) != 0 && r.is_some_and(|r| r <= 1000) {
                self.infeasible &= !(1 << c);
                self.stuck[c] = 0;
                out.note(Event::Feasible { consumer: c });
            }
        }
        out
    }
}
