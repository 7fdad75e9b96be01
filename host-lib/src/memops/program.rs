//! MemOps programs in TOML, and the verifier that checks them before they
//! are installed.
//!
//! ```toml
//! [[stage]]
//! priority = 0                 # stages run in ascending priority; a later
//!                              # route or remap overrides an earlier one
//! src = [0, 1, 2, 3]           # source ports (default: all)
//! ops = ["write", "atomic"]    # read, write, atomic (default: all)
//! range = ["0x0", "0xffff"]    # inclusive address range (default: all)
//! action = { route = 2 }       # or { remap = { offset = "0x1000", target = ["0x1000", "0x1fff"] } },
//!                              # "count", "mirror", "reduce-on-write", "block"
//!
//! [[protect]]
//! dst = 2
//! range = ["0x0", "0x1ffff"]
//! perm = "rw"                  # r, w or rw
//! ```
//!
//! The verifier is sound and conservative: it accepts only programs for
//! which it can show, by interval reasoning over the stages, that no route
//! stage can deliver a write or atomic to an address its destination does
//! not permit, that every remap stays inside its target range, and that
//! conflicting stages are ordered by distinct priorities. It may reject a
//! safe program (it does not track which later route overrides an earlier
//! one); whatever it accepts, the port's protection table enforces again in
//! hardware.

use serde::Deserialize;
use std::fmt;
use weft_model::memops::{Action, Op, Program, Range, Stage, PORTS, RANGES, STAGES};

/// Why a program was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    /// The stage at fault (index after sorting by priority), if one is.
    pub stage: Option<usize>,
    /// An address that shows the fault, if there is one.
    pub address: Option<u64>,
    /// The explanation, one readable sentence.
    pub message: String,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rejection {}

fn reject(stage: Option<usize>, address: Option<u64>, message: String) -> Rejection {
    Rejection {
        stage,
        address,
        message,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    stage: Vec<StageToml>,
    #[serde(default)]
    protect: Vec<ProtectToml>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StageToml {
    #[serde(default)]
    priority: i64,
    src: Option<Vec<u8>>,
    ops: Option<Vec<String>>,
    range: Option<[Num; 2]>,
    action: ActionToml,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ActionToml {
    Word(String),
    Route { route: u8 },
    Remap { remap: RemapToml },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemapToml {
    offset: Num,
    target: [Num; 2],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ProtectToml {
    dst: u8,
    range: [Num; 2],
    perm: String,
}

/// An address or offset: a TOML integer, or a string in hex (`0x…`) or
/// decimal, optionally negative for offsets.
#[derive(Deserialize, Clone)]
#[serde(untagged)]
enum Num {
    Int(i64),
    Text(String),
}

impl Num {
    fn value(&self, what: &str) -> Result<u64, Rejection> {
        match self {
            Num::Int(v) => Ok(*v as u64),
            Num::Text(s) => parse_u64(s).ok_or_else(|| {
                reject(
                    None,
                    None,
                    format!("{what}: {s:?} is not a number (use 0x… or decimal)"),
                )
            }),
        }
    }
}

/// Parse `0x…` hex or decimal, with an optional leading `-` (two's
/// complement, for offsets).
pub fn parse_u64(s: &str) -> Option<u64> {
    let s = s.trim().replace('_', "");
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, s),
    };
    let v = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16).ok()?,
        None => body.parse::<u64>().ok()?,
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

fn op_bit(name: &str) -> Option<u8> {
    Some(match name {
        "read" => 1 << Op::Read as u8,
        "write" => 1 << Op::Write as u8,
        "atomic" | "atomic-add" => 1 << Op::AtomicAdd as u8,
        _ => return None,
    })
}

/// A parsed program with its stages' priorities (sorted ascending).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The program (stages in run order).
    pub program: Program,
    /// Priority of each stage, same order.
    pub priorities: Vec<i64>,
}

/// Parse a TOML program. Errors name the field or line.
pub fn parse(text: &str) -> Result<Parsed, Rejection> {
    let f: File = toml::from_str(text)
        .map_err(|e| reject(None, None, format!("program: {}", e.message())))?;
    let mut stages = vec![];
    for (i, s) in f.stage.iter().enumerate() {
        let at = |m: String| reject(Some(i), None, format!("stage {i} (as written): {m}"));
        let mut src_mask = 0u8;
        for &p in s.src.as_deref().unwrap_or(&[0, 1, 2, 3]) {
            if p as usize >= PORTS {
                return Err(at(format!("src: no port {p} (ports are 0..{PORTS})")));
            }
            src_mask |= 1 << p;
        }
        let mut ops = 0u8;
        match &s.ops {
            None => ops = 0b111,
            Some(list) => {
                for o in list {
                    ops |= op_bit(o)
                        .ok_or_else(|| at(format!("ops: {o:?} is not read, write or atomic")))?;
                }
            }
        }
        let range = match &s.range {
            None => (0, u64::MAX),
            Some([lo, hi]) => (lo.value("range")?, hi.value("range")?),
        };
        if range.0 > range.1 {
            return Err(at(format!(
                "range: start {:#x} is above end {:#x}",
                range.0, range.1
            )));
        }
        let action = match &s.action {
            ActionToml::Route { route } => Action::Route(*route),
            ActionToml::Remap { remap } => Action::Remap {
                offset: remap.offset.value("remap.offset")?,
                target: (
                    remap.target[0].value("remap.target")?,
                    remap.target[1].value("remap.target")?,
                ),
            },
            ActionToml::Word(w) => match w.as_str() {
                "count" => Action::Count,
                "mirror" => Action::Mirror,
                "reduce-on-write" => Action::ReduceOnWrite,
                "block" => Action::Block,
                _ => {
                    return Err(at(format!(
                        "action: {w:?} is not route, remap, count, mirror, reduce-on-write or block"
                    )))
                }
            },
        };
        if src_mask == 0 || ops == 0 {
            return Err(at("matches nothing (empty src or ops)".into()));
        }
        stages.push((
            s.priority,
            i,
            Stage {
                src_mask,
                ops,
                range,
                action,
            },
        ));
    }
    // Ascending priority; equal priorities keep the order written.
    stages.sort_by_key(|(p, i, _)| (*p, *i));
    let mut protect: Vec<Vec<Range>> = vec![vec![]; PORTS];
    for (k, p) in f.protect.iter().enumerate() {
        let at = |m: String| reject(None, None, format!("protect entry {k}: {m}"));
        if p.dst as usize >= PORTS {
            return Err(at(format!("dst: no port {} (ports are 0..{PORTS})", p.dst)));
        }
        let (read, write) = match p.perm.as_str() {
            "r" => (true, false),
            "w" => (false, true),
            "rw" | "wr" => (true, true),
            other => return Err(at(format!("perm: {other:?} is not r, w or rw"))),
        };
        let (lo, hi) = (p.range[0].value("range")?, p.range[1].value("range")?);
        if lo > hi {
            return Err(at(format!("range: start {lo:#x} is above end {hi:#x}")));
        }
        protect[p.dst as usize].push(Range {
            lo,
            hi,
            read,
            write,
        });
    }
    Ok(Parsed {
        priorities: stages.iter().map(|s| s.0).collect(),
        program: Program {
            stages: stages.into_iter().map(|s| s.2).collect(),
            protect,
        },
    })
}

/// Inclusive intervals, kept sorted and merged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Set(Vec<(u64, u64)>);

impl Set {
    fn of(lo: u64, hi: u64) -> Self {
        Set(vec![(lo, hi)])
    }
    fn norm(mut v: Vec<(u64, u64)>) -> Self {
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = vec![];
        for (lo, hi) in v {
            match out.last_mut() {
                Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
                _ => out.push((lo, hi)),
            }
        }
        Set(out)
    }
    fn intersect(&self, lo: u64, hi: u64) -> Self {
        Set(self
            .0
            .iter()
            .filter_map(|&(a, b)| (a.max(lo) <= b.min(hi)).then_some((a.max(lo), b.min(hi))))
            .collect())
    }
    fn union(&self, o: &Set) -> Self {
        Set::norm(self.0.iter().chain(&o.0).copied().collect())
    }
    /// Shift every address by `off` (wrapping), splitting where it wraps.
    fn shift(&self, off: u64) -> Self {
        let mut v = vec![];
        for &(a, b) in &self.0 {
            let (na, nb) = (a.wrapping_add(off), b.wrapping_add(off));
            if na <= nb {
                v.push((na, nb));
            } else {
                v.push((na, u64::MAX));
                v.push((0, nb));
            }
        }
        Set::norm(v)
    }
    /// The set without `[lo, hi]`.
    fn subtract(&self, lo: u64, hi: u64) -> Self {
        let mut v = vec![];
        for &(a, b) in &self.0 {
            if b < lo || a > hi {
                v.push((a, b));
                continue;
            }
            if a < lo {
                v.push((a, lo - 1));
            }
            if b > hi {
                v.push((hi + 1, b));
            }
        }
        Set(v)
    }

    /// The smallest address in the set but outside every allowed range.
    fn outside(&self, allowed: &[(u64, u64)]) -> Option<u64> {
        let mut rest = self.clone();
        for &(lo, hi) in allowed {
            rest = rest.subtract(lo, hi);
        }
        Set::norm(rest.0).0.first().map(|r| r.0)
    }
}

fn describe(a: &Action) -> String {
    match a {
        Action::Route(p) => format!("route to port {p}"),
        Action::Remap { offset, .. } => format!("remap by {:#x}", offset),
        Action::Count => "count".into(),
        Action::Mirror => "mirror".into(),
        Action::ReduceOnWrite => "reduce-on-write".into(),
        Action::Block => "block".into(),
    }
}

fn overlap(a: &Stage, b: &Stage) -> Option<u64> {
    let lo = a.range.0.max(b.range.0);
    (a.src_mask & b.src_mask != 0 && a.ops & b.ops != 0 && lo <= a.range.1.min(b.range.1))
        .then_some(lo)
}

/// Verify a parsed program. Ok carries a one-line summary.
pub fn verify(p: &Parsed) -> Result<String, Rejection> {
    let prog = &p.program;
    let n = prog.stages.len();
    if n > STAGES {
        return Err(reject(
            None,
            None,
            format!("{n} stages; the port has {STAGES}"),
        ));
    }
    for (d, rs) in prog.protect.iter().enumerate() {
        if rs.len() > RANGES {
            return Err(reject(
                None,
                None,
                format!("destination {d} has {} protection ranges; the port holds {RANGES} per destination", rs.len()),
            ));
        }
    }
    for (i, s) in prog.stages.iter().enumerate() {
        match s.action {
            Action::Route(port) if port as usize >= PORTS => {
                return Err(reject(Some(i), None, format!("stage {i} routes to port {port}, which does not exist (ports are 0..{PORTS})")));
            }
            Action::Remap { offset, target } => {
                if target.0 > target.1 {
                    return Err(reject(
                        Some(i),
                        None,
                        format!(
                            "stage {i}: remap target start {:#x} is above its end {:#x}",
                            target.0, target.1
                        ),
                    ));
                }
                // Bounded: every address the stage matches lands inside the
                // target (an access whose last byte would leave it completes
                // with an error in hardware).
                let image = Set::of(s.range.0, s.range.1).shift(offset);
                if let Some(bad) = image.outside(&[target]) {
                    return Err(reject(
                        Some(i),
                        Some(bad.wrapping_sub(offset)),
                        format!(
                            "stage {i} ({}) sends address {:#x} to {:#x}, outside its target range {:#x}..={:#x}",
                            describe(&s.action),
                            bad.wrapping_sub(offset),
                            bad,
                            target.0,
                            target.1
                        ),
                    ));
                }
            }
            _ => {}
        }
        for j in 0..i {
            let t = &prog.stages[j];
            let conflict = matches!(
                (&s.action, &t.action),
                (Action::Route(_), Action::Route(_)) | (Action::Remap { .. }, Action::Remap { .. })
            );
            if conflict && p.priorities[i] == p.priorities[j] && s.action != t.action {
                if let Some(a) = overlap(s, t) {
                    return Err(reject(
                        Some(i),
                        Some(a),
                        format!(
                            "stages {j} ({}) and {i} ({}) both match address {a:#x} with priority {}: give them different priorities to say which wins",
                            describe(&t.action),
                            describe(&s.action),
                            p.priorities[i]
                        ),
                    ));
                }
            }
        }
    }
    // No route stage may deliver a write or atomic outside its destination's
    // write-permitted ranges, whatever later remaps do to the address.
    for (i, s) in prog.stages.iter().enumerate() {
        let Action::Route(d) = s.action else {
            continue;
        };
        let writes = s.ops & (1 << Op::Write as u8 | 1 << Op::AtomicAdd as u8) != 0;
        if !writes {
            continue;
        }
        // The addresses such a write may have at each later stage: a remap
        // may or may not apply (both kept), and a block that stops every
        // write and atomic from every source removes its range.
        let all_writes = 1 << Op::Write as u8 | 1 << Op::AtomicAdd as u8;
        let mut addrs = Set::of(s.range.0, s.range.1);
        for m in &prog.stages[i + 1..] {
            match m.action {
                Action::Remap { offset, target } => {
                    let moved = addrs
                        .intersect(m.range.0, m.range.1)
                        .shift(offset)
                        .intersect(target.0, target.1);
                    addrs = addrs.union(&moved);
                }
                Action::Block if m.src_mask & 0xf == 0xf && m.ops & all_writes == all_writes => {
                    addrs = addrs.subtract(m.range.0, m.range.1);
                }
                _ => {}
            }
        }
        let allowed: Vec<(u64, u64)> = prog.protect[d as usize]
            .iter()
            .filter(|r| r.write)
            .map(|r| (r.lo, r.hi))
            .collect();
        if let Some(bad) = addrs.outside(&allowed) {
            let perm = if allowed.is_empty() {
                "none".to_string()
            } else {
                allowed
                    .iter()
                    .map(|(a, b)| format!("{a:#x}..={b:#x}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(reject(
                Some(i),
                Some(bad),
                format!(
                    "stage {i} (route to port {d}) can send a write or atomic to address {bad:#x}, outside port {d}'s write-permitted ranges ({perm})"
                ),
            ));
        }
    }
    let routes = prog
        .stages
        .iter()
        .filter(|s| matches!(s.action, Action::Route(_)))
        .count();
    Ok(format!(
        "{n} stage(s), {routes} route(s), {} protection range(s): every write and atomic a route can deliver is permitted, every remap stays in its target",
        prog.protect.iter().map(Vec::len).sum::<usize>()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<String, Rejection> {
        verify(&parse(text)?)
    }

    #[test]
    fn shipped_examples() {
        let ok = include_str!("../../../examples/memops/offload.toml");
        check(ok).unwrap();
        let bad = include_str!("../../../examples/memops/unsafe-remap.toml");
        let r = check(bad).unwrap_err();
        assert_eq!(r.stage, Some(0));
        assert_eq!(r.address, Some(0x8000));
        assert!(
            r.message
                .contains("outside port 1's write-permitted ranges"),
            "{r}"
        );
    }

    #[test]
    fn rejections_name_the_stage_and_an_address() {
        let r = check("[[stage]]\naction = { route = 5 }\n").unwrap_err();
        assert!(r.message.contains("port 5, which does not exist"), "{r}");
        let r = check(
            "[[stage]]\nrange = [\"0x100\", \"0x1ff\"]\naction = { remap = { offset = \"0x1000\", target = [\"0x1100\", \"0x11f0\"] } }\n",
        )
        .unwrap_err();
        assert_eq!(r.address, Some(0x1f1));
        let r = check("[[stage]]\naction = { route = 1 }\n[[stage]]\naction = { route = 2 }\n")
            .unwrap_err();
        assert!(r.message.contains("different priorities"), "{r}");
        check("[[stage]]\naction = { route = 1 }\n[[stage]]\npriority = 1\naction = { route = 2 }\n[[protect]]\ndst = 1\nrange = [0, \"0xffffffffffffffff\"]\nperm = \"rw\"\n[[protect]]\ndst = 2\nrange = [0, \"0xffffffffffffffff\"]\nperm = \"rw\"\n").unwrap();
        let many: String = (0..9)
            .map(|i| format!("[[stage]]\npriority = {i}\naction = \"count\"\n"))
            .collect();
        assert!(check(&many).unwrap_err().message.contains("9 stages"));
    }

    #[test]
    fn bad_files_name_the_field() {
        let e = parse("[[stage]]\naction = \"fly\"\n").unwrap_err();
        assert!(e.message.contains("action"), "{e}");
        let e = parse("[[stage]]\nops = [\"jump\"]\naction = \"count\"\n").unwrap_err();
        assert!(e.message.contains("ops"), "{e}");
        let e = parse("[[stage]]\nrange = [\"0x10\", \"zz\"]\naction = \"count\"\n").unwrap_err();
        assert!(e.message.contains("range"), "{e}");
        let e = parse("[[stage]]\nbogus = 1\naction = \"count\"\n").unwrap_err();
        assert!(e.message.contains("bogus"), "{e}");
        let e = parse("[[protect]]\ndst = 1\nrange = [0, 1]\nperm = \"x\"\n").unwrap_err();
        assert!(e.message.contains("perm"), "{e}");
    }

    #[test]
    fn verified_programs_never_write_outside_permitted_ranges() {
        // A property of the verifier against the model: random programs
        // that pass never produce an issued write outside the permitted
        // ranges (the hardware's table enforces it anyway).
        use rand::{Rng, SeedableRng};
        use weft_model::memops::{predict, Request};
        let mut accepted = 0;
        for seed in 0..400u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut text = String::new();
            for p in 0..rng.gen_range(1..5) {
                let lo: u64 = rng.gen_range(0..0x400);
                let action = match rng.gen_range(0..4) {
                    0 | 1 => format!("{{ route = {} }}", rng.gen_range(0..4)),
                    2 => format!(
                        "{{ remap = {{ offset = {}, target = [{}, {}] }} }}",
                        rng.gen_range(0..0x100),
                        lo,
                        lo + 0x500
                    ),
                    _ => "\"block\"".into(),
                };
                text += &format!(
                    "[[stage]]\npriority = {p}\nrange = [{lo}, {}]\naction = {action}\n",
                    lo + rng.gen_range(0..0x200)
                );
            }
            for d in 0..4 {
                let lo: u64 = rng.gen_range(0..0x400);
                text += &format!(
                    "[[protect]]\ndst = {d}\nrange = [{lo}, {}]\nperm = \"rw\"\n",
                    lo + rng.gen_range(0..0x400)
                );
            }
            let Ok(parsed) = parse(&text) else { continue };
            if verify(&parsed).is_err() {
                continue;
            }
            accepted += 1;
            let reqs: Vec<Request> = (0..50)
                .map(|t| Request {
                    src: rng.gen_range(0..4),
                    op: weft_model::memops::Op::Write,
                    addr: rng.gen_range(0..0x180) * 8,
                    len: 8,
                    tag: t,
                    data: 1,
                })
                .collect();
            for i in predict(&parsed.program, &reqs).issued {
                let ok = parsed.program.protect[i.dst as usize]
                    .iter()
                    .any(|r| r.write && r.lo <= i.req.addr && i.req.addr + 7 <= r.hi);
                assert!(ok, "seed {seed}: {i:?}");
            }
        }
        assert!(accepted > 20, "only {accepted} random programs passed");
    }
}
