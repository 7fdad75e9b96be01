//! The walk: the worst arrival at every net bit, per clock domain, and the
//! paths behind it.
//!
//! Arrival times are computed once per bit (memoised, iteratively, so a
//! deep netlist cannot overflow the stack) and separately for each domain
//! a path can start in: the clocks, and the top's input ports as a domain
//! of their own. A path is costed against the budget of the clock that
//! captures it only when it starts on the same clock; one that starts on
//! another clock crosses through the design's synchronisers and is counted
//! as a crossing, not costed.

use std::collections::HashMap;

use super::delay::DelayModel;
use super::netlist::{CombKind, Driver, Netlist};

/// No bit.
pub const NONE: u64 = u64::MAX;

/// The worst arrival at a bit from one domain.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// Estimated time since the launching clock edge, ns.
    pub t: f32,
    /// LUT levels on the way (LUTRAM reads included).
    pub luts: u16,
    /// MUXF cells on the way.
    pub muxf: u16,
    /// Carry cells on the way.
    pub carry: u16,
    /// The input bit the worst arrival came through ([`NONE`] at a start).
    pub pred: u64,
}

/// The walker's state over one netlist.
pub struct Walk<'n> {
    nl: &'n Netlist,
    model: DelayModel,
    /// Domain index of a clock source bit.
    pub clock_domain: HashMap<u64, usize>,
    /// Names of the domains, by index; the last is the input ports'.
    pub domains: Vec<String>,
    arr: HashMap<u64, Vec<Option<Arrival>>>,
    /// Combinational loops met (edges ignored).
    pub loops: usize,
}

impl<'n> Walk<'n> {
    /// A walker over `nl`; its clock domains are named after the source of
    /// each sequential cell's clock (a top port, through its buffers).
    pub fn new(nl: &'n Netlist, model: DelayModel) -> Self {
        let mut clock_domain = HashMap::new();
        let mut domains: Vec<String> = vec![];
        let mut clocks: Vec<u64> = nl.endpoints.iter().map(|e| e.clock).collect();
        for d in nl.drivers.values() {
            match d {
                Driver::Start { clock, .. } => clocks.push(*clock),
                Driver::Comb {
                    start: Some((_, clock)),
                    ..
                } => clocks.push(*clock),
                _ => {}
            }
        }
        clocks.sort_unstable();
        clocks.dedup();
        for c in clocks {
            let src = nl.clock_source(c);
            let name = nl.name_of(src);
            let idx = match domains.iter().position(|d| *d == name) {
                Some(i) => i,
                None => {
                    domains.push(name);
                    domains.len() - 1
                }
            };
            clock_domain.insert(c, idx);
        }
        domains.push("(input ports)".to_string());
        Walk {
            nl,
            model,
            clock_domain,
            domains,
            arr: HashMap::new(),
            loops: 0,
        }
    }

    /// The index of the input ports' domain.
    pub fn ports_domain(&self) -> usize {
        self.domains.len() - 1
    }

    /// The domain a clock pin's bit belongs to.
    pub fn domain_of_clock(&self, clock: u64) -> usize {
        self.clock_domain.get(&clock).copied().unwrap_or(0)
    }

    /// The arrivals at `bit`, one per domain (None: no path from there).
    pub fn arrivals(&mut self, bit: u64) -> Vec<Option<Arrival>> {
        self.compute(bit);
        self.arr.get(&bit).cloned().unwrap_or_default()
    }

    fn compute(&mut self, root: u64) {
        if self.arr.contains_key(&root) {
            return;
        }
        // 1: expanded, waiting for its inputs; done bits are in `arr`.
        let mut open: HashMap<u64, ()> = HashMap::new();
        let mut stack: Vec<(u64, bool)> = vec![(root, false)];
        while let Some((b, expanded)) = stack.pop() {
            if self.arr.contains_key(&b) {
                continue;
            }
            let nl = self.nl;
            match nl.drivers.get(&b) {
                Some(Driver::Comb { inputs, .. }) if !expanded => {
                    if open.contains_key(&b) {
                        // Reached again while open: its own evaluation is
                        // pending below on the stack.
                        continue;
                    }
                    open.insert(b, ());
                    stack.push((b, true));
                    for &i in inputs {
                        if self.arr.contains_key(&i) {
                            continue;
                        }
                        if open.contains_key(&i) {
                            self.loops += 1;
                            continue;
                        }
                        stack.push((i, false));
                    }
                }
                _ => {
                    let a = self.evaluate(b);
                    open.remove(&b);
                    self.arr.insert(b, a);
                }
            }
        }
    }

    fn evaluate(&self, b: u64) -> Vec<Option<Arrival>> {
        let n = self.domains.len();
        let mut out: Vec<Option<Arrival>> = vec![None; n];
        let start_at = |out: &mut Vec<Option<Arrival>>, d: usize, t: f64, luts: u16| {
            let a = Arrival {
                t: t as f32,
                luts,
                muxf: 0,
                carry: 0,
                pred: NONE,
            };
            if better(&a, out[d].as_ref()) {
                out[d] = Some(a);
            }
        };
        match self.nl.drivers.get(&b) {
            None | Some(Driver::None) => {}
            Some(Driver::Port) => start_at(&mut out, self.ports_domain(), 0.0, 0),
            Some(Driver::Start { kind, clock, .. }) => {
                let d = self.domain_of_clock(*clock);
                start_at(&mut out, d, self.model.start(*kind), 0);
            }
            Some(Driver::Comb {
                kind,
                inputs,
                start,
                ..
            }) => {
                let cost = self.model.comb(*kind);
                for &i in inputs {
                    let Some(ai) = self.arr.get(&i) else {
                        continue; // a loop edge
                    };
                    for (d, a) in ai.iter().enumerate() {
                        let Some(a) = a else { continue };
                        let mut next = Arrival {
                            t: a.t + cost as f32,
                            pred: i,
                            ..*a
                        };
                        match kind {
                            CombKind::Lut | CombKind::LutRead => next.luts += 1,
                            CombKind::Muxf => next.muxf += 1,
                            CombKind::Carry => next.carry += 1,
                            CombKind::Free => {}
                        }
                        if better(&next, out[d].as_ref()) {
                            out[d] = Some(next);
                        }
                    }
                }
                if let Some((k, clock)) = start {
                    let d = self.domain_of_clock(*clock);
                    start_at(&mut out, d, self.model.start(*k), 1);
                }
            }
        }
        out
    }

    /// The bits of the worst path from domain `d` to `bit`, start first.
    pub fn path(&mut self, bit: u64, d: usize) -> Vec<u64> {
        let mut bits = vec![bit];
        let mut b = bit;
        for _ in 0..100_000 {
            let Some(Some(a)) = self.arrivals(b).get(d).copied() else {
                break;
            };
            if a.pred == NONE {
                break;
            }
            b = a.pred;
            bits.push(b);
        }
        bits.reverse();
        bits
    }
}

/// Whether `a` is a worse (later, then deeper) arrival than `old`.
fn better(a: &Arrival, old: Option<&Arrival>) -> bool {
    match old {
        None => true,
        Some(o) => a.t > o.t || (a.t == o.t && a.luts > o.luts),
    }
}
