//! One combinational block per assigned signal.
//!
//! rust-hdl writes all of a module's combinational logic as one
//! `always @(*)` block. A simulator that schedules whole blocks (Verilator)
//! then sees a loop wherever a module drives a submodule's input and reads
//! its output — a valid/ready handshake through a FIFO, say — and must
//! iterate the whole block until it settles (`UNOPTFLAT`: about 80 such
//! loops in `weft_top`, evaluated in Verilator's change-triggered region,
//! which cost the top about 40% of its simulation speed). The loops are
//! false: no signal depends on itself.
//!
//! This pass rewrites each such block as one block per assigned signal,
//! holding exactly the statements that assign it, inside the `if`s that
//! enclose them, in their original order. Each signal's value is then a
//! function of the other signals' values, which is how rust-hdl's own
//! simulator evaluates `update()` (it re-runs it until no signal changes),
//! and the new blocks have no false loops left for a scheduler to iterate.
//!
//! One case would change meaning: a statement reading a signal *between*
//! two assignments of it reads an intermediate value in the original block,
//! not the settled one. Signals linked that way stay in one block, in the
//! original order. A block the pass cannot parse (it knows only what
//! rust-hdl emits inside `always @(*)`: assignments, `if`/`else if`/`else`
//! with `begin`/`end`) is left as it is. Sequential blocks are untouched.
//!
//! Synthesis reads the split Verilog as the same logic; the emitted Verilog
//! every tool sees (Verilator, yosys, the bitstream flow) is the split one,
//! and the three-witness tests compare it, cycle by cycle, with rust-hdl's
//! simulation of the Rust source.

use std::collections::{HashMap, HashSet};

/// What the pass did to one Verilog text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SplitStats {
    /// Combinational blocks found.
    pub blocks: usize,
    /// Blocks written after the split.
    pub written: usize,
    /// Blocks left whole because the pass could not parse them.
    pub unparsed: usize,
    /// Signals kept together because one reads the other between two of
    /// its assignments.
    pub merged: usize,
}

/// The block header rust-hdl writes (module body indent: four spaces).
const OPEN: &str = "    always @(*) begin";
/// The line that closes it.
const CLOSE: &str = "    end";

/// Split every combinational block of `verilog`; see the module
/// documentation.
pub fn split(verilog: &str) -> (String, SplitStats) {
    let mut out = String::with_capacity(verilog.len() + verilog.len() / 4);
    let mut stats = SplitStats::default();
    let lines: Vec<&str> = verilog.split('\n').collect();
    let mut i = 0;
    let mut first = true;
    let mut push = |out: &mut String, l: &str| {
        if !std::mem::take(&mut first) {
            out.push('\n');
        }
        out.push_str(l);
    };
    // The current module's constants (`localparam`s): reading only these
    // is reading no signal.
    let mut consts: HashSet<&str> = HashSet::new();
    while i < lines.len() {
        if lines[i] != OPEN {
            if lines[i].starts_with("module ") {
                consts.clear();
            } else if let Some(name) = lines[i]
                .trim_start()
                .strip_prefix("localparam")
                .and_then(|r| leading_identifier(r.trim_start()))
            {
                consts.insert(name);
            }
            push(&mut out, lines[i]);
            i += 1;
            continue;
        }
        let Some(end) = lines[i + 1..].iter().position(|l| *l == CLOSE) else {
            push(&mut out, lines[i]);
            i += 1;
            continue;
        };
        let body = &lines[i + 1..i + 1 + end];
        stats.blocks += 1;
        match split_block(body, &consts) {
            Some((groups, merged)) => {
                stats.merged += merged;
                stats.written += groups.len();
                for g in groups {
                    push(&mut out, OPEN);
                    for l in g {
                        push(&mut out, &l);
                    }
                    push(&mut out, CLOSE);
                }
            }
            None => {
                stats.unparsed += 1;
                stats.written += 1;
                for l in &lines[i..=i + 1 + end] {
                    push(&mut out, l);
                }
            }
        }
        i += end + 2;
    }
    (out, stats)
}

/// A statement of a combinational block.
enum Stmt<'a> {
    /// `target... = ...;`: the whole line, its target and what it reads.
    Assign {
        line: &'a str,
        target: &'a str,
        reads: Vec<&'a str>,
        pos: usize,
    },
    /// `if (cond) begin ... end [else ...]`; `els` holds a nested `If` for
    /// `else if`.
    If {
        cond: &'a str,
        reads: Vec<&'a str>,
        then: Vec<Stmt<'a>>,
        els: Option<Vec<Stmt<'a>>>,
    },
}

/// Parse a block body; `None` for anything outside the subset.
fn parse<'a>(body: &[&'a str]) -> Option<Vec<Stmt<'a>>> {
    let mut at = 0;
    let mut pos = 0;
    let stmts = parse_seq(body, &mut at, &mut pos, false)?;
    (at == body.len()).then_some(stmts)
}

fn parse_seq<'a>(
    body: &[&'a str],
    at: &mut usize,
    pos: &mut usize,
    nested: bool,
) -> Option<Vec<Stmt<'a>>> {
    let mut out = Vec::new();
    while *at < body.len() {
        let l = body[*at].trim();
        if l == "end" {
            if !nested {
                return None;
            }
            *at += 1;
            return Some(out);
        }
        if let Some(cond) = if_cond(l, "if (") {
            *at += 1;
            out.push(parse_if(body, at, pos, cond)?);
            continue;
        }
        out.push(parse_assign(body[*at], *pos)?);
        *pos += 1;
        *at += 1;
    }
    // The body of a nested `begin` must end with `end`.
    (!nested).then_some(out)
}

fn parse_if<'a>(
    body: &[&'a str],
    at: &mut usize,
    pos: &mut usize,
    cond: &'a str,
) -> Option<Stmt<'a>> {
    let then = parse_seq(body, at, pos, true)?;
    let els = match body.get(*at).map(|l| l.trim()) {
        Some("else begin") => {
            *at += 1;
            Some(parse_seq(body, at, pos, true)?)
        }
        Some(l) => match if_cond(l, "else if (") {
            Some(c) => {
                *at += 1;
                Some(vec![parse_if(body, at, pos, c)?])
            }
            None => None,
        },
        None => None,
    };
    Some(Stmt::If {
        cond,
        reads: identifiers(cond),
        then,
        els,
    })
}

/// `cond` of `<prefix>cond) begin`.
fn if_cond<'a>(l: &'a str, prefix: &str) -> Option<&'a str> {
    l.strip_prefix(prefix)?.strip_suffix(") begin")
}

fn parse_assign(line: &str, pos: usize) -> Option<Stmt<'_>> {
    let l = line.trim();
    let (lhs, rhs) = l.strip_suffix(';')?.split_once(" = ")?;
    let target = leading_identifier(lhs)?;
    let select = &lhs[target.len()..];
    if !(select.is_empty() || select.starts_with('[')) {
        return None;
    }
    let mut reads = identifiers(rhs);
    reads.extend(identifiers(select));
    Some(Stmt::Assign {
        line,
        target,
        reads,
        pos,
    })
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

pub(crate) fn leading_identifier(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    if !b.first().is_some_and(|&c| is_ident_start(c)) {
        return None;
    }
    let n = b.iter().position(|&c| !is_ident(c)).unwrap_or(b.len());
    Some(&s[..n])
}

/// The identifiers an expression reads: names, not sized literals
/// (`32'h10`, `1'b1`) or system functions (`$signed`).
pub(crate) fn identifiers(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'\'' {
            // The base and digits of a sized literal: skip to its end.
            i += 1;
            while i < b.len() && (is_ident(b[i])) {
                i += 1;
            }
        } else if c.is_ascii_digit() || c == b'$' {
            // A number, or a system function name.
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
        } else if is_ident_start(c) {
            let start = i;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            out.push(&s[start..i]);
        } else {
            i += 1;
        }
    }
    out
}

/// Every assignment with the conditions enclosing it.
fn flatten<'s, 'a>(
    stmts: &'s [Stmt<'a>],
    conds: &mut Vec<&'s [&'a str]>,
    out: &mut Vec<Flat<'s, 'a>>,
) {
    for s in stmts {
        match s {
            Stmt::Assign {
                target, reads, pos, ..
            } => out.push(Flat {
                target,
                pos: *pos,
                reads: reads
                    .iter()
                    .chain(conds.iter().flat_map(|c| c.iter()))
                    .copied()
                    .collect(),
            }),
            Stmt::If {
                reads, then, els, ..
            } => {
                conds.push(reads);
                flatten(then, conds, out);
                if let Some(e) = els {
                    flatten(e, conds, out);
                }
                conds.pop();
            }
        }
    }
}

struct Flat<'s, 'a> {
    target: &'s str,
    pos: usize,
    reads: Vec<&'a str>,
}

/// Split one block body into groups of lines, one group per signal (or per
/// set of signals that must stay together); `None` if it does not parse.
fn split_block(body: &[&str], consts: &HashSet<&str>) -> Option<(Vec<Vec<String>>, usize)> {
    let tree = parse(body)?;
    let mut flat = Vec::new();
    flatten(&tree, &mut Vec::new(), &mut flat);
    // First and last assignment of every target, in statement order.
    let mut span: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for f in &flat {
        span.entry(f.target)
            .and_modify(|s| s.1 = f.pos)
            .or_insert_with(|| {
                order.push(f.target);
                (f.pos, f.pos)
            });
    }
    let index: HashMap<&str, usize> = order.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let mut parent: Vec<usize> = (0..order.len()).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut merged = 0;
    for f in &flat {
        for r in &f.reads {
            let Some(&(first, last)) = span.get(r) else {
                continue;
            };
            // Read between two assignments of `r`: an intermediate value.
            if *r != f.target && first < f.pos && f.pos < last {
                let (a, b) = (
                    find(&mut parent, index[f.target]),
                    find(&mut parent, index[r]),
                );
                if a != b {
                    parent[a] = b;
                    merged += 1;
                }
            }
        }
    }
    // A signal assigned from constants alone would get a block that reads
    // no signal: `always @(*)` would then never run in an event-driven
    // simulator (it waits for a change that never comes), where the
    // original block ran with everything else. Such signals join the
    // first signal that reads something.
    let mut reads_signal = vec![false; order.len()];
    for f in &flat {
        if f.reads.iter().any(|r| !consts.contains(r)) {
            reads_signal[index[f.target]] = true;
        }
    }
    // (A block of constants alone stays whole, as it was.)
    let anchor = reads_signal.iter().position(|&r| r).unwrap_or(0);
    for (i, &r) in reads_signal.iter().enumerate() {
        if !r {
            let (a, b) = (find(&mut parent, i), find(&mut parent, anchor));
            if a != b {
                parent[a] = b;
            }
        }
    }
    // Groups in order of their first assignment.
    let mut groups: Vec<(usize, HashSet<&str>)> = Vec::new();
    let mut slot: HashMap<usize, usize> = HashMap::new();
    for (i, t) in order.iter().enumerate() {
        let root = find(&mut parent, i);
        let g = *slot.entry(root).or_insert_with(|| {
            groups.push((i, HashSet::new()));
            groups.len() - 1
        });
        groups[g].1.insert(t);
    }
    let written = groups
        .iter()
        .map(|(_, keep)| {
            let mut lines = Vec::new();
            emit(&tree, keep, "        ", &mut lines);
            lines
        })
        .collect();
    Some((written, merged))
}

/// Write the statements assigning a signal of `keep`, with the `if`s that
/// enclose them (an `if` with nothing kept in either branch is dropped).
fn emit(stmts: &[Stmt<'_>], keep: &HashSet<&str>, indent: &str, out: &mut Vec<String>) {
    for s in stmts {
        match s {
            Stmt::Assign { line, target, .. } => {
                if keep.contains(target) {
                    out.push(format!("{indent}{}", line.trim()));
                }
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                let inner = format!("{indent}    ");
                let mut t = Vec::new();
                emit(then, keep, &inner, &mut t);
                let mut e = Vec::new();
                if let Some(els) = els {
                    emit(els, keep, &inner, &mut e);
                }
                if t.is_empty() && e.is_empty() {
                    continue;
                }
                out.push(format!("{indent}if ({cond}) begin"));
                out.append(&mut t);
                out.push(format!("{indent}end"));
                if !e.is_empty() {
                    out.push(format!("{indent}else begin"));
                    out.append(&mut e);
                    out.push(format!("{indent}end"));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(body: &str) -> String {
        let mut s = String::from("module m(a);\n    always @(*) begin\n");
        for l in body.lines() {
            s.push_str("        ");
            s.push_str(l.trim());
            s.push('\n');
        }
        s.push_str("    end\nendmodule\n");
        s
    }

    fn bodies(v: &str) -> Vec<Vec<String>> {
        let mut out = Vec::new();
        let mut cur: Option<Vec<String>> = None;
        for l in v.lines() {
            if l == OPEN {
                cur = Some(Vec::new());
            } else if l == CLOSE {
                out.extend(cur.take());
            } else if let Some(c) = cur.as_mut() {
                c.push(l.trim().to_string());
            }
        }
        out
    }

    #[test]
    fn one_block_per_signal_in_order() {
        let (v, s) = split(&block(
            "x$d = x$q;\nif (go) begin\nx$d = a + 32'h1;\ny = b;\nend\nz = x$q & y;",
        ));
        assert_eq!(
            bodies(&v),
            vec![
                vec!["x$d = x$q;", "if (go) begin", "x$d = a + 32'h1;", "end"],
                vec!["if (go) begin", "y = b;", "end"],
                vec!["z = x$q & y;"],
            ]
        );
        assert_eq!(
            s,
            SplitStats {
                blocks: 1,
                written: 3,
                unparsed: 0,
                merged: 0
            }
        );
        assert!(v.starts_with("module m(a);\n") && v.ends_with("endmodule\n"));
    }

    #[test]
    fn else_branches_keep_their_shape() {
        let (v, _) = split(&block(
            "if (a) begin\nx = 1'b1;\nend\nelse if (b) begin\ny = 1'b0;\nend\nelse begin\nx = c;\nend",
        ));
        assert_eq!(
            bodies(&v),
            vec![
                vec![
                    "if (a) begin",
                    "x = 1'b1;",
                    "end",
                    "else begin",
                    "if (b) begin",
                    "end",
                    "else begin",
                    "x = c;",
                    "end",
                    "end"
                ],
                vec![
                    "if (a) begin",
                    "end",
                    "else begin",
                    "if (b) begin",
                    "y = 1'b0;",
                    "end",
                    "end"
                ],
            ]
        );
    }

    #[test]
    fn a_read_between_two_assignments_keeps_both_together() {
        // `w` reads the intermediate `v = a`, not the settled `v = b`.
        let (v, s) = split(&block("v = a;\nw = v;\nv = b;\nu = v;"));
        assert_eq!(
            bodies(&v),
            vec![vec!["v = a;", "w = v;", "v = b;"], vec!["u = v;"]]
        );
        assert_eq!(s.merged, 1);
    }

    #[test]
    fn reads_before_and_after_do_not_merge() {
        let (v, s) = split(&block(
            "w = v;\nv = a;\nif (c) begin\nv = b;\nend\nu = v[3:0];",
        ));
        assert_eq!(bodies(&v).len(), 3);
        assert_eq!(s.merged, 0);
    }

    #[test]
    fn a_signal_set_from_constants_alone_joins_one_that_reads() {
        // `k = p` reads only a localparam: alone in `always @(*)` it would
        // never run in an event-driven simulator.
        let src = "module m(a);\n    localparam  p = 4'h3;\n    always @(*) begin\n        x = a;\n        k = p;\n        y = a & 1'b1;\n    end\nendmodule\n";
        let (v, _) = split(src);
        assert_eq!(
            bodies(&v),
            vec![vec!["x = a;", "k = p;"], vec!["y = a & 1'b1;"]]
        );
        // Nothing but constants: the block stays whole.
        let src = "module m(a);\n    localparam  p = 4'h3;\n    always @(*) begin\n        k = p;\n        j = 2'b1;\n    end\nendmodule\n";
        assert_eq!(bodies(&split(src).0), vec![vec!["k = p;", "j = 2'b1;"]]);
    }

    #[test]
    fn literals_and_system_functions_are_not_signals() {
        assert_eq!(
            identifiers("x[(32'h10)+:(16)] + 16'hffab + $signed(y) + 1'b1 + ab$c"),
            vec!["x", "y", "ab$c"]
        );
    }

    #[test]
    fn what_it_cannot_parse_it_leaves_alone() {
        let src = block("case (a)\n1: x = b;\nendcase");
        let (v, s) = split(&src);
        assert_eq!(v, src);
        assert_eq!(s.unparsed, 1);
        // An unterminated `if` too.
        let src = block("if (a) begin\nx = b;");
        let (v, s) = split(&src);
        assert_eq!(s.unparsed, 1);
        assert_eq!(v, src);
    }

    #[test]
    fn splitting_twice_changes_nothing() {
        let (once, _) = split(&block(
            "x = a;\nif (b) begin\nx = c;\ny = x;\nend\nz = y | x;",
        ));
        let (twice, s) = split(&once);
        assert_eq!(once, twice);
        assert_eq!(s.blocks, s.written);
    }
}
