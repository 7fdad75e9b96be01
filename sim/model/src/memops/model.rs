//! The MemOps port's reference model (its specification, transaction by
//! transaction) and the accelerator memories on its ports.

use super::program::{Action, Program};
use super::{Completion, Issued, Op, Request, Status, PORTS, STAGES};
use std::collections::BTreeMap;

/// The port's telemetry counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Telemetry {
    /// Transactions counted by each stage's count action.
    pub tx: [u64; STAGES],
    /// Bytes counted by each stage's count action.
    pub bytes: [u64; STAGES],
    /// Requests issued to a destination.
    pub issued: u64,
    /// Requests blocked by a stage.
    pub blocked: u64,
    /// Requests refused by the protection table.
    pub denied: u64,
    /// Requests completed with an error (no route, remap out of range,
    /// malformed).
    pub errors: u64,
    /// Headers the program asked to mirror.
    pub mirrored: u64,
}

impl Telemetry {
    /// The counter a request the port completes itself with `status`
    /// counts in: blocked by a stage, refused by the protection table, or
    /// an error.
    pub fn local(&mut self, marks: &Marks, status: Status) -> &mut u64 {
        match status {
            Status::Denied if marks.blocked => &mut self.blocked,
            Status::Denied => &mut self.denied,
            _ => &mut self.errors,
        }
    }
}

/// What the stages a well-formed request has met so far decided about it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Marks {
    /// The destination of the last route (a later route overrides).
    pub dst: Option<u8>,
    /// A remap left its target range.
    pub error: bool,
    /// A stage asked for the header to be mirrored.
    pub mirror: bool,
    /// A stage blocked it: no later stage matches it.
    pub blocked: bool,
}

impl Action {
    /// Apply this action of a stage that matched `t`, transforming the
    /// header and recording the decisions in `marks`. Returns whether the
    /// stage counts the request (a count action).
    pub fn apply(self, t: &mut Request, marks: &mut Marks) -> bool {
        match self {
            Action::Route(p) => marks.dst = Some(p),
            Action::Remap { offset, target } => {
                t.addr = t.addr.wrapping_add(offset);
                // Every byte must land in the target: the last one too,
                // and without wrapping past 2^64.
                let end = t.addr.checked_add(t.len as u64 - 1);
                if t.addr < target.0 || end.is_none_or(|e| e > target.1) {
                    marks.error = true;
                }
            }
            Action::Count => return true,
            Action::Mirror => marks.mirror = true,
            Action::ReduceOnWrite => {
                if t.op == Op::Write {
                    t.op = Op::AtomicAdd;
                }
            }
            Action::Block => marks.blocked = true,
        }
        false
    }
}

/// The port's decision on a well-formed request after the last stage:
/// `Ok(destination)` to issue it, else the status the port completes it
/// with. `permits(d)` is the protection table's answer for destination
/// `d`, asked only for a request that would otherwise be issued: the table
/// has the last word whatever the program did.
pub fn decide(marks: &Marks, permits: impl FnOnce(u8) -> bool) -> Result<u8, Status> {
    if marks.blocked {
        return Err(Status::Denied);
    }
    match marks.dst {
        Some(d) if !marks.error => {
            if permits(d) {
                Ok(d)
            } else {
                Err(Status::Denied)
            }
        }
        _ => Err(Status::Error),
    }
}

/// What the port does with one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Sent to a destination; it completes when the destination answers.
    Issue(Issued),
    /// Completed by the port itself.
    Complete(Completion),
}

/// The reference model of the port.
#[derive(Clone, Debug)]
pub struct MemopsModel {
    program: Program,
    /// `CTRL.ENABLE`: while false every request completes with an error.
    pub enabled: bool,
    /// Telemetry.
    pub telemetry: Telemetry,
}

impl MemopsModel {
    /// A port running `program`.
    pub fn new(program: Program) -> Self {
        Self {
            program,
            enabled: true,
            telemetry: Telemetry::default(),
        }
    }

    /// The port out of reset: no program, disabled (every request
    /// completes with an error until `CTRL.ENABLE` is set).
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::new(Program::default())
        }
    }

    /// Process one request: its outcome and, when a stage mirrors it, the
    /// header as it leaves the program.
    pub fn process(&mut self, req: &Request) -> (Outcome, Option<Request>) {
        let done = |status| {
            Outcome::Complete(Completion {
                dst: req.src,
                tag: req.tag,
                status,
                data: 0,
            })
        };
        if !self.enabled || !req.well_formed() || req.src as usize >= PORTS {
            self.telemetry.errors += 1;
            return (done(Status::Error), None);
        }
        let mut t = *req;
        let mut marks = Marks::default();
        for (i, s) in self.program.stages.iter().enumerate() {
            if marks.blocked || !s.matches(t.src, t.op, t.addr) {
                continue;
            }
            if s.action.apply(&mut t, &mut marks) {
                self.telemetry.tx[i] += 1;
                self.telemetry.bytes[i] += t.len as u64;
            }
        }
        let mirrored = marks.mirror.then_some(t);
        if marks.mirror {
            self.telemetry.mirrored += 1;
        }
        let verdict = decide(&marks, |d| {
            self.program
                .protect
                .get(d as usize)
                .is_some_and(|rs| rs.iter().any(|r| r.permits(t.op, t.addr, t.len)))
        });
        let d = match verdict {
            Ok(d) => d,
            Err(status) => {
                *self.telemetry.local(&marks, status) += 1;
                return (done(status), mirrored);
            }
        };
        self.telemetry.issued += 1;
        (Outcome::Issue(Issued { dst: d, req: t }), mirrored)
    }
}

/// An accelerator's memory on a port: byte-addressed, sparse, zero where
/// never written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Endpoint {
    mem: BTreeMap<u64, u8>,
}

impl Endpoint {
    /// Perform a request; returns the completion data (read data or the
    /// atomic's old value, 0 for writes).
    pub fn execute(&mut self, req: &Request) -> u64 {
        let n = req.len.clamp(1, 8) as u64;
        let mut old = 0u64;
        for i in 0..n {
            let b = self
                .mem
                .get(&req.addr.wrapping_add(i))
                .copied()
                .unwrap_or(0);
            old |= (b as u64) << (8 * i);
        }
        let mask = if n == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * n)) - 1
        };
        let new = match req.op {
            Op::Read => return old,
            Op::Write => req.data & mask,
            Op::AtomicAdd => old.wrapping_add(req.data) & mask,
        };
        for i in 0..n {
            let b = (new >> (8 * i)) as u8;
            let a = req.addr.wrapping_add(i);
            if b == 0 {
                self.mem.remove(&a);
            } else {
                self.mem.insert(a, b);
            }
        }
        if req.op == Op::Write {
            0
        } else {
            old
        }
    }

    /// The non-zero bytes, by address.
    pub fn bytes(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
        self.mem.iter().map(|(a, b)| (*a, *b))
    }

    /// The byte at `addr`.
    pub fn byte(&self, addr: u64) -> u8 {
        self.mem.get(&addr).copied().unwrap_or(0)
    }
}

/// Run requests through the model and perfect endpoints, in order: the
/// completions (by requester, in order) and the final memories. The
/// transaction-level prediction a simulation is compared against.
pub fn predict(program: &Program, reqs: &[Request]) -> Prediction {
    let mut m = MemopsModel::new(program.clone());
    let mut p = Prediction {
        endpoints: vec![Endpoint::default(); PORTS],
        ..Default::default()
    };
    for r in reqs {
        let (o, mirror) = m.process(r);
        p.mirrored.extend(mirror);
        match o {
            Outcome::Issue(i) => {
                let data = p.endpoints[i.dst as usize].execute(&i.req);
                p.issued.push(i);
                p.completions.push(Completion {
                    dst: r.src,
                    tag: r.tag,
                    status: Status::Ok,
                    data,
                });
            }
            Outcome::Complete(c) => p.completions.push(c),
        }
    }
    p.telemetry = m.telemetry;
    p
}

/// What a run of requests must produce.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prediction {
    /// Requests issued to destinations, in order.
    pub issued: Vec<Issued>,
    /// Completions, in request order.
    pub completions: Vec<Completion>,
    /// Mirrored headers, in order.
    pub mirrored: Vec<Request>,
    /// Final telemetry.
    pub telemetry: Telemetry,
    /// Final endpoint memories.
    pub endpoints: Vec<Endpoint>,
}
