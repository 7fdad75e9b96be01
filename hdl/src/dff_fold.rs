//! Registers folded into their parents.
//!
//! rust-hdl writes every `DFF` as a module of its own (`q <= d` on every
//! clock edge) and its next state as a combinational block in the parent
//! that starts from the hold (`x$d = x$q;`) and overrides it under
//! conditions. `weft_top` has about 1,700 of them. A simulator that
//! evaluates every block every cycle (Verilator) then copies each
//! register's value twice a cycle, into `d` and back into `q`, whether it
//! changes or not: on `weft_top` that was over half of the model's
//! instructions a cycle (`scripts/sim-profile.sh`).
//!
//! This pass, run on the split Verilog ([`crate::comb_split`]), rewrites
//! each register whose next-state block assigns only its `d` as clocked
//! statements of the parent: the same statements inside the same `if`s,
//! `x$d = e;` written `x$q <= e;`, and the leading hold dropped (a
//! register not assigned on an edge keeps its value). A parent's folded
//! registers share one clocked block per clock, each register's
//! statements after those of every register that reads it: Verilator
//! keeps a shadow copy (`__Vdly__`) of a register that another clocked
//! block reads and copies it in and out every cycle, but needs none for a
//! register read earlier in its own block (on `weft_top` 228 shadows
//! became 25; `scripts/vl-shadows.sh` lists those left). The register's
//! module, its instance and its `d` and `clock` nets go; its initial value
//! moves into the parent. The meaning is the same (the last non-blocking
//! assignment of an edge wins, as the last blocking one did), and the
//! three-witness tests compare the folded Verilog, cycle by cycle, with
//! rust-hdl's simulation of the Rust source. Synthesis reads the folded
//! form as a flop with a clock enable, as it inferred from the mux before.
//!
//! A register is left as rust-hdl wrote it where the pass could not prove
//! the rewrite exact: its `d` read anywhere (only the instance may read
//! it), assigned in a block with other signals or in statements outside
//! the subset (single-line assignments, `if`/`else if`/`else` with
//! `begin`/`end`, `else` on the `end`'s line or the next), its clock anything but a copy of one signal, or no
//! assignment left after the hold.

use crate::comb_split::{identifiers, leading_identifier};
use std::collections::{HashMap, HashSet};

/// What the pass did to one Verilog text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FoldStats {
    /// Instances of rust-hdl register modules found.
    pub registers: usize,
    /// Registers folded into their parents.
    pub folded: usize,
}

/// One rust-hdl register module: its initial value statement's right-hand
/// side (`32'h0`), and whether it is a register with a power-on value
/// (`DFFWithInit`, a plain register inside once the first pass folds it).
struct Dff {
    init: String,
    with_init: bool,
}

/// What one pass did: registers found and folded, and of them those with a
/// power-on value (which a first pass found as the plain register inside).
#[derive(Default)]
struct PassStats {
    registers: usize,
    folded: usize,
    init_registers: usize,
    init_folded: usize,
}

/// rust-hdl's register module `name` with body `lines`, if that is what it
/// is: ports `(d,q,clock)`, `q` initialised and `q <= d` on each rising
/// clock edge, nothing else.
fn dff_module(header: &str, lines: &[&str]) -> Option<Dff> {
    if !header.ends_with("(d,q,clock);") {
        return None;
    }
    let code: Vec<&str> = lines
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .collect();
    if let Some(dff) = dff_with_init(&code) {
        return Some(dff);
    }
    let [d, q, clock, ini, init, ini_end, al, step, al_end] = code.as_slice() else {
        return None;
    };
    let ok = d.starts_with("input wire ")
        && d.ends_with(" d;")
        && q.starts_with("output reg ")
        && q.ends_with(" q;")
        && *clock == "input wire  clock;"
        && *ini == "initial begin"
        && *ini_end == "end"
        && *al == "always @(posedge clock) begin"
        && *step == "q <= d;"
        && *al_end == "end";
    let value = init.strip_prefix("q = ")?.strip_suffix(';')?;
    (ok && identifiers(value).is_empty()).then(|| Dff {
        init: value.into(),
        with_init: false,
    })
}

/// rust-hdl's register with a power-on value (`DFFWithInit`), as the
/// lines of its body (trimmed, comments dropped): it keeps `q ^ init` in an
/// inner register that powers on at zero, so `q` powers on at `init` and
/// takes `d` on each rising edge, which is a plain register whose initial
/// value is `init`.
fn dff_with_init(code: &[&str]) -> Option<Dff> {
    let [d, q, clock, param, inner, al_c, comb, al_c_end, ini, zero, ini_end, al, step, al_end] =
        code
    else {
        return None;
    };
    let width = |l: &str, head: &str, tail: &str| -> Option<String> {
        Some(l.strip_prefix(head)?.strip_suffix(tail)?.trim().to_string())
    };
    let w = width(d, "input wire ", " d;")?;
    let ok = width(q, "output reg ", " q;")? == w
        && width(inner, "reg ", " dff$q;")? == w
        && *clock == "input wire  clock;"
        && *al_c == "always @(*) begin"
        && *comb == "q = dff$q ^ init;"
        && *al_c_end == "end"
        && *ini == "initial begin"
        && *ini_end == "end"
        && *al == "always @(posedge clock) begin"
        && *step == "dff$q <= d ^ init;"
        && *al_end == "end";
    let value = param
        .strip_prefix("localparam  init = ")?
        .strip_suffix(';')?;
    let zero = zero.strip_prefix("dff$q = ")?.strip_suffix(';')?;
    // The inner register must power on at zero for `q` to power on at
    // `init`.
    let zero_ok = zero
        .rsplit_once('h')
        .is_some_and(|(_, digits)| !digits.is_empty() && digits.chars().all(|c| c == '0'));
    (ok && zero_ok && identifiers(value).is_empty()).then(|| Dff {
        init: value.into(),
        with_init: true,
    })
}

/// One module of the text: line range of its header and `endmodule`.
struct Module {
    name: String,
    start: usize,
    end: usize,
}

fn modules(lines: &[&str]) -> Vec<Module> {
    let mut out = Vec::new();
    let mut open: Option<(String, usize)> = None;
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("module ") {
            let name = rest.split('(').next().unwrap_or("").trim().to_string();
            open = Some((name, i));
        } else if l.starts_with("endmodule") {
            if let Some((name, start)) = open.take() {
                out.push(Module {
                    name,
                    start,
                    end: i,
                });
            }
        }
    }
    out
}

/// Fold every register it can; see the module documentation.
///
/// A register with a power-on value (rust-hdl's `DFFWithInit`) is a module
/// around a plain register: the first pass folds the plain one into it,
/// which leaves it in a plain register's shape for a second pass to fold
/// into its own parent. Each register counts once in the statistics: as
/// folded when its value ends up held by a module that is not a register.
pub fn fold(verilog: &str) -> (String, FoldStats) {
    let (text, first) = fold_pass(verilog);
    // rust-hdl nests registers one deep, so a second pass folds the rest.
    let (text, second) = fold_pass(&text);
    // A wrapper the second pass finds holds a register the first counted
    // as folded: it stays folded only if the wrapper folds.
    let unfolded_wrappers = second.init_registers - second.init_folded;
    let stats = FoldStats {
        registers: first.registers,
        folded: (first.folded + second.folded - second.init_folded)
            .saturating_sub(unfolded_wrappers),
    };
    (text, stats)
}

/// One pass of [`fold`].
fn fold_pass(verilog: &str) -> (String, PassStats) {
    let lines: Vec<&str> = verilog.split('\n').collect();
    let mods = modules(&lines);
    let dffs: HashMap<&str, Dff> = mods
        .iter()
        .filter_map(|m| {
            dff_module(lines[m.start], &lines[m.start + 1..m.end]).map(|d| (m.name.as_str(), d))
        })
        .collect();
    // How often each register module is instantiated (rust-hdl writes one
    // module per instance; a module used twice is left alone).
    let mut uses: HashMap<&str, usize> = HashMap::new();
    for l in &lines {
        let t = l.trim_start();
        if let Some(name) = t.split(' ').next() {
            if dffs.contains_key(name) && t.ends_with('(') && !l.starts_with("module ") {
                *uses.entry(name).or_default() += 1;
            }
        }
    }
    let mut stats = PassStats::default();
    // Replacement text by line: None drops the line.
    let mut edits: HashMap<usize, Option<String>> = HashMap::new();
    let mut gone: HashSet<&str> = HashSet::new();
    for m in &mods {
        if dffs.contains_key(m.name.as_str()) {
            continue;
        }
        fold_parent(&lines, m, &dffs, &uses, &mut edits, &mut gone, &mut stats);
    }
    let mut drop_range = vec![false; lines.len()];
    for m in &mods {
        if gone.contains(m.name.as_str()) {
            // The module, and the blank lines rust-hdl puts after it.
            let mut e = m.end + 1;
            while e < lines.len() && lines[e].trim().is_empty() && e < m.end + 3 {
                e += 1;
            }
            for d in drop_range.iter_mut().take(e).skip(m.start) {
                *d = true;
            }
        }
    }
    let mut out = String::with_capacity(verilog.len());
    let mut first = true;
    for (i, l) in lines.iter().enumerate() {
        if drop_range[i] {
            continue;
        }
        let text = match edits.get(&i) {
            Some(None) => continue,
            Some(Some(t)) => t.as_str(),
            None => l,
        };
        if !std::mem::take(&mut first) {
            out.push('\n');
        }
        out.push_str(text);
    }
    (out, stats)
}

/// The combinational blocks of a module: (first line, last line) of each
/// `always @(*) begin` ... `end` at module indent.
fn comb_blocks(lines: &[&str], m: &Module) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = m.start;
    while i < m.end {
        if lines[i] == "    always @(*) begin" {
            if let Some(n) = lines[i + 1..m.end].iter().position(|l| *l == "    end") {
                out.push((i, i + 1 + n));
                i += n + 2;
                continue;
            }
        }
        i += 1;
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn fold_parent<'a>(
    lines: &[&'a str],
    m: &Module,
    dffs: &HashMap<&str, Dff>,
    uses: &HashMap<&str, usize>,
    edits: &mut HashMap<usize, Option<String>>,
    gone: &mut HashSet<&'a str>,
    stats: &mut PassStats,
) {
    // Every line of the module each identifier appears on.
    let mut seen: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, l) in lines.iter().enumerate().take(m.end).skip(m.start + 1) {
        for id in identifiers(l) {
            let at = seen.entry(id).or_default();
            if at.last() != Some(&i) {
                at.push(i);
            }
        }
    }
    let blocks = comb_blocks(lines, m);
    // The block (if any) each signal is the only target of.
    let mut only: HashMap<&str, (usize, usize)> = HashMap::new();
    for &(s, e) in &blocks {
        let targets: HashSet<&str> = lines[s + 1..e]
            .iter()
            .filter_map(|l| assign(l).map(|(t, _)| t))
            .collect();
        if targets.len() == 1 {
            only.insert(targets.into_iter().next().unwrap_or_default(), (s, e));
        }
    }
    let mut folded: Vec<Folded> = Vec::new();
    let mut i = m.start + 1;
    while i + 4 < m.end {
        let t = lines[i].trim_start();
        let Some((module, inst)) = t.strip_suffix('(').and_then(|h| h.split_once(' ')) else {
            i += 1;
            continue;
        };
        let Some(dff) = dffs.get(module) else {
            i += 1;
            continue;
        };
        stats.registers += 1;
        stats.init_registers += usize::from(dff.with_init);
        let d = format!("{inst}$d");
        let q = format!("{inst}$q");
        let clk = format!("{inst}$clock");
        let wiring = [
            format!(".d({d}),"),
            format!(".q({q}),"),
            format!(".clock({clk})"),
            ");".to_string(),
        ];
        let wired = (0..4).all(|k| lines[i + 1 + k].trim() == wiring[k]);
        let plan = (wired && uses.get(module) == Some(&1))
            .then(|| plan_fold(lines, &seen, &only, &d, &q, &clk, i))
            .flatten();
        if let Some(p) = plan {
            p.rewire(lines, edits, i);
            let body = p.body(lines, &q);
            folded.push(Folded {
                init: format!("    initial begin\n        {q} = {};\n    end", dff.init),
                reads: body
                    .iter()
                    .flat_map(|l| identifiers(l).into_iter().map(str::to_string))
                    .collect(),
                q,
                body,
                clock: p.clock,
                at: p.d_block,
            });
            stats.folded += 1;
            stats.init_folded += usize::from(dff.with_init);
            gone.insert(module);
            i += 5;
        } else {
            i += 1;
        }
    }
    merge_clocked(folded, edits);
}

/// One folded register of a parent: its clocked statements and where its
/// next-state block was.
struct Folded {
    q: String,
    init: String,
    body: Vec<String>,
    reads: HashSet<String>,
    clock: String,
    at: (usize, usize),
}

/// Write a parent's folded registers as one clocked block per clock, in
/// the place of the first one's next-state block, each register after
/// every register that reads it. Verilator keeps a shadow copy
/// (`__Vdly__`) of a register that another clocked block reads, and
/// copies it in and out every cycle; inside one block, statements that
/// read a register before it is assigned need none. The order does not
/// change the meaning (non-blocking assignments all take effect at the
/// edge); where registers read each other in a cycle, the cycle is broken
/// at the earliest and Verilator shadows what it must.
fn merge_clocked(folded: Vec<Folded>, edits: &mut HashMap<usize, Option<String>>) {
    let mut clocks: Vec<&str> = Vec::new();
    for f in &folded {
        if !clocks.contains(&f.clock.as_str()) {
            clocks.push(&f.clock);
        }
    }
    for clock in clocks {
        let group: Vec<&Folded> = folded.iter().filter(|f| f.clock == clock).collect();
        let order = readers_first(&group);
        let mut text = String::new();
        for f in &group {
            text.push_str(&f.init);
            text.push('\n');
        }
        text.push_str(&format!("    always @(posedge {clock}) begin"));
        for &k in &order {
            for l in &group[k].body {
                text.push('\n');
                text.push_str(l);
            }
        }
        text.push_str("\n    end");
        for (k, f) in group.iter().enumerate() {
            let (ds, de) = f.at;
            for l in ds..=de {
                edits.insert(l, None);
            }
            if k == 0 {
                edits.insert(ds, Some(std::mem::take(&mut text)));
            }
        }
    }
}

/// An order of `group` in which a register comes after every other that
/// reads it, where there is one; a cycle is broken at its earliest member.
fn readers_first(group: &[&Folded]) -> Vec<usize> {
    let n = group.len();
    let index: HashMap<&str, usize> = group
        .iter()
        .enumerate()
        .map(|(k, f)| (f.q.as_str(), k))
        .collect();
    // waits[w]: how many other registers read w and are not yet placed.
    let mut waits = vec![0usize; n];
    let mut read: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (r, f) in group.iter().enumerate() {
        for id in &f.reads {
            if let Some(&w) = index.get(id.as_str()) {
                if w != r {
                    waits[w] += 1;
                    read[r].push(w);
                }
            }
        }
    }
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        let next = (0..n)
            .find(|&k| !placed[k] && waits[k] == 0)
            .or_else(|| (0..n).find(|&k| !placed[k]))
            .unwrap_or_default();
        placed[next] = true;
        order.push(next);
        for &w in &read[next] {
            waits[w] = waits[w].saturating_sub(1);
        }
    }
    order
}

/// What folding one register changes in its parent.
struct Plan {
    d_decl: usize,
    q_decl: usize,
    clk_decl: usize,
    clk_block: (usize, usize),
    d_block: (usize, usize),
    clock: String,
}

fn plan_fold(
    lines: &[&str],
    seen: &HashMap<&str, Vec<usize>>,
    only: &HashMap<&str, (usize, usize)>,
    d: &str,
    q: &str,
    clk: &str,
    inst: usize,
) -> Option<Plan> {
    let decl = |name: &str, kind: &str| -> Option<usize> {
        seen.get(name)?.iter().copied().find(|&l| {
            let t = lines[l].trim();
            t.starts_with(kind) && t.ends_with(&format!(" {name};"))
        })
    };
    let d_decl = decl(d, "reg ")?;
    let q_decl = decl(q, "wire ")?;
    let clk_decl = decl(clk, "reg ")?;
    let (cs, ce) = *only.get(clk)?;
    if ce != cs + 2 {
        return None;
    }
    let (_, rhs) = assign(lines[cs + 1])?;
    let clock = leading_identifier(rhs).filter(|c| *c == rhs)?.to_string();
    // The clock net: declared, copied, wired; nothing else.
    let clk_at = seen.get(clk)?;
    let mut want = [clk_decl, cs + 1, inst + 3];
    want.sort_unstable();
    if clk_at.as_slice() != want {
        return None;
    }
    let (ds, de) = *only.get(d)?;
    // `d` is written in its block and read by the instance only.
    for &l in seen.get(d)? {
        let ok = l == d_decl
            || l == inst + 1
            || (l > ds && l < de && {
                let (t, rhs) = assign(lines[l])?;
                t == d && !identifiers(rhs).contains(&d)
            });
        if !ok {
            return None;
        }
    }
    // Every statement of the block is in the subset.
    let body = &lines[ds + 1..de];
    let shaped = body.iter().all(|l| {
        let t = l.trim();
        assign(l).is_some()
            || (t.starts_with("if (") && t.ends_with(") begin"))
            || (t.starts_with("end else if (") && t.ends_with(") begin"))
            || t == "end else begin"
            || t == "else begin"
            || (t.starts_with("else if (") && t.ends_with(") begin"))
            || t == "end"
    });
    let hold = format!("{d} = {q};");
    let rest = body.iter().skip(usize::from(
        body.first().map(|l| l.trim()) == Some(hold.as_str()),
    ));
    if !shaped || rest.clone().all(|l| assign(l).is_none()) {
        return None;
    }
    Some(Plan {
        d_decl,
        q_decl,
        clk_decl,
        clk_block: (cs, ce),
        d_block: (ds, de),
        clock,
    })
}

impl Plan {
    /// Drop the register's instance, its `d` and clock nets, and make its
    /// `q` a variable of the parent.
    fn rewire(&self, lines: &[&str], edits: &mut HashMap<usize, Option<String>>, inst: usize) {
        for l in [self.d_decl, self.clk_decl] {
            edits.insert(l, None);
        }
        let qd = lines[self.q_decl];
        let at = qd.find("wire ").unwrap_or(0);
        edits.insert(
            self.q_decl,
            Some(format!("{}reg {}", &qd[..at], &qd[at + 5..])),
        );
        for l in inst..inst + 5 {
            edits.insert(l, None);
        }
        for l in self.clk_block.0..=self.clk_block.1 {
            edits.insert(l, None);
        }
    }

    /// The next-state block's statements as clocked ones: `x$d = e;`
    /// written `x$q <= e;`, the leading hold dropped.
    fn body(&self, lines: &[&str], q: &str) -> Vec<String> {
        let (ds, de) = self.d_block;
        let d_hold = format!("{q};");
        let mut body = Vec::new();
        for (k, l) in lines[ds + 1..de].iter().enumerate() {
            match assign(l) {
                Some((_, rhs)) => {
                    if k == 0 && format!("{rhs};") == d_hold {
                        continue;
                    }
                    let indent = &l[..l.len() - l.trim_start().len()];
                    body.push(format!("{indent}{q} <= {rhs};"));
                }
                None => body.push(l.to_string()),
            }
        }
        body
    }
}

/// `target = rhs;` on one line: the target (a whole signal, no select)
/// and the right-hand side.
fn assign(line: &str) -> Option<(&str, &str)> {
    let (lhs, rhs) = line.trim().strip_suffix(';')?.split_once(" = ")?;
    let target = leading_identifier(lhs).filter(|t| *t == lhs)?;
    Some((target, rhs))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DFF: &str = "module top$r(d,q,clock);
    
    // Module arguments
    input wire  [1:0] d;
    output reg  [1:0] q;
    input wire  clock;
    
    // Update code (custom)
    initial begin
       q = 2'h1;
    end
    
    always @(posedge clock) begin
       q <= d;
    end
          
endmodule // top$r
";

    fn parent(d_block: &str) -> String {
        format!(
            "module top(clock,go,out);
    input wire  clock;
    input wire  go;
    output reg  [1:0] out;
    reg  [1:0] r$d;
    wire  [1:0] r$q;
    reg  r$clock;
    top$r r(
        .d(r$d),
        .q(r$q),
        .clock(r$clock)
    );
    always @(*) begin
        r$clock = clock;
    end
{d_block}
    always @(*) begin
        out = r$q;
    end
endmodule // top

{DFF}"
        )
    }

    const NEXT: &str = "    always @(*) begin
        r$d = r$q;
        if (go) begin
            r$d = r$q + 2'h1;
        end else begin
            r$d = 2'h0;
        end
    end";

    #[test]
    fn a_register_becomes_a_clocked_block_of_its_parent() {
        let (v, stats) = fold(&parent(NEXT));
        assert_eq!(
            stats,
            FoldStats {
                registers: 1,
                folded: 1
            }
        );
        let want = "module top(clock,go,out);
    input wire  clock;
    input wire  go;
    output reg  [1:0] out;
    reg  [1:0] r$q;
    initial begin
        r$q = 2'h1;
    end
    always @(posedge clock) begin
        if (go) begin
            r$q <= r$q + 2'h1;
        end else begin
            r$q <= 2'h0;
        end
    end
    always @(*) begin
        out = r$q;
    end
endmodule // top
";
        assert_eq!(v, want);
    }

    /// rust-hdl writes `else` on the line after the `end` when an `if`
    /// nests in it; that shape folds too, kept line for line.
    #[test]
    fn an_else_on_its_own_line_folds() {
        let next = NEXT.replace("        end else begin", "        end\n        else begin");
        let (v, stats) = fold(&parent(&next));
        assert_eq!(stats.folded, 1, "{v}");
        assert!(
            v.contains("            r$q <= r$q + 2'h1;\n        end\n        else begin\n            r$q <= 2'h0;"),
            "{v}"
        );
    }

    #[test]
    fn a_register_whose_next_state_is_read_stays() {
        let read = format!("{NEXT}\n    always @(*) begin\n        out = r$d;\n    end");
        let (v, stats) = fold(&parent(&read));
        assert_eq!(stats.folded, 0);
        assert!(v.contains("top$r r("), "{v}");
        assert!(v.contains("module top$r(d,q,clock);"), "{v}");
    }

    #[test]
    fn a_register_that_only_holds_or_shares_its_block_stays() {
        let hold = "    always @(*) begin\n        r$d = r$q;\n    end";
        assert_eq!(fold(&parent(hold)).1.folded, 0);
        let shared = "    always @(*) begin\n        r$d = r$q;\n        out = 2'h0;\n    end";
        assert_eq!(fold(&parent(shared)).1.folded, 0);
        let unparsed = "    always @(*) begin\n        case (go)\n        r$d = r$q;\n    end";
        assert_eq!(fold(&parent(unparsed)).1.folded, 0);
    }

    /// rust-hdl's `DFFWithInit`: an inner register holding `q ^ init` that
    /// powers on at zero, so a plain register powering on at `init`.
    const DFF_WITH_INIT: &str = "module top$r(d,q,clock);
    
    // Module arguments
    input wire  [1:0] d;
    output reg  [1:0] q;
    input wire  clock;
    
    // Constant declarations
    localparam  init = 2'h2;
    
    // Stub signals
    reg  [1:0] dff$q;
    
    // Sub module instances
    
    // Update code
    always @(*) begin
        q = dff$q ^ init;
    end
    initial begin
        dff$q = 2'h0;
    end
    always @(posedge clock) begin
        dff$q <= d ^ init;
    end
    
endmodule // top$r
";

    #[test]
    fn a_register_with_a_power_on_value_folds_to_it() {
        let v = parent(NEXT).replace(DFF, DFF_WITH_INIT);
        let (folded, stats) = fold(&v);
        assert_eq!(stats.folded, 1, "{folded}");
        assert!(folded.contains("        r$q = 2'h2;"), "{folded}");
        assert!(!folded.contains("module top$r"), "{folded}");
        // An inner register that does not power on at zero is another
        // register: left alone.
        let odd = v.replace("dff$q = 2'h0;", "dff$q = 2'h1;");
        assert_eq!(fold(&odd).1.folded, 0);
    }

    #[test]
    fn a_module_that_is_not_a_register_is_not_folded() {
        let v = parent(NEXT).replace("       q <= d;", "       q <= ~d;");
        assert_eq!(fold(&v).1, FoldStats::default());
    }

    /// Two registers of one parent share a clocked block, the one that
    /// reads the other first (so Verilator needs no shadow copy of it),
    /// whatever order rust-hdl declared them in.
    #[test]
    fn a_parents_registers_share_one_block_readers_first() {
        let two = parent(NEXT)
            .replace(
                "        .clock(r$clock)\n    );\n",
                "        .clock(r$clock)\n    );\n    reg  [1:0] s$d;\n    wire  [1:0] s$q;\n    reg  s$clock;\n    top$s s(\n        .d(s$d),\n        .q(s$q),\n        .clock(s$clock)\n    );\n",
            )
            .replace(
                "    always @(*) begin\n        out = r$q;\n",
                "    always @(*) begin\n        s$clock = clock;\n    end\n    always @(*) begin\n        s$d = s$q;\n        if (go) begin\n            s$d = r$q;\n        end\n    end\n    always @(*) begin\n        out = r$q;\n",
            )
            + &DFF.replace("top$r", "top$s");
        let (v, stats) = fold(&two);
        assert_eq!(stats.folded, 2, "{v}");
        assert_eq!(v.matches("always @(posedge clock)").count(), 1, "{v}");
        let s_at = v.find("s$q <= r$q;").expect("s folded");
        let r_at = v.find("r$q <= r$q + 2'h1;").expect("r folded");
        assert!(s_at < r_at, "the reader of r comes first:\n{v}");
        assert!(!v.contains("module top$"), "{v}");
    }

    /// On the card: nearly every register folds (those left are named by
    /// the pass's rules: a next state read elsewhere, a pure hold), and
    /// nothing of a folded register's module, instance or nets is left.
    #[test]
    fn weft_top_keeps_few_register_modules() {
        let v = crate::emit::on_big_stack(|| {
            let top = crate::emit::top(&crate::this_build());
            crate::emit::verilog_shaped(&top, "weft_top", crate::emit::Shape::Unfolded)
        });
        let (folded, stats) = fold(&v);
        eprintln!("weft_top: {stats:?}");
        assert!(stats.registers > 1000, "{stats:?}");
        assert!(stats.folded * 10 >= stats.registers * 9, "{stats:?}");
        if let Some(path) = std::env::var_os("WEFT_DUMP_FOLDED") {
            let _ = std::fs::write(path, &folded);
        }
        // Every register not folded is one module left (a wrapper with a
        // power-on value around its folded register counts once).
        let left = folded.matches("(d,q,clock);").count();
        assert_eq!(
            stats.registers - stats.folded,
            left,
            "register modules left"
        );
        // One clocked block per parent and clock holds its folded registers.
        let clocked = folded.matches("always @(posedge").count();
        assert!(
            clocked < v.matches("always @(posedge").count() / 4,
            "{clocked} clocked blocks"
        );
        assert!(folded.matches("    initial begin").count() >= stats.folded);
    }
}
