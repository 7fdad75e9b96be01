//! Signals set from constants alone written as continuous assignments.
//!
//! rust-hdl assigns a constant output or wire of a module (a framer's fixed
//! header field, a port's unused half) inside the module's `always @(*)`
//! block. [`crate::comb_split`] must keep such a signal in a block that
//! reads some signal — an `always @(*)` that reads none never runs in an
//! event-driven simulator — so it rides with whatever signal comes first,
//! and a simulator that evaluates that block every cycle re-evaluates the
//! constants with it. On `weft_top` they shared the block that copies
//! `axil_aclk` into the clock crossing, and Verilator reloaded them (the
//! framers' 512-bit constant payloads among them) from tables indexed by
//! the clock on every evaluation (`scripts/sim-profile.sh`).
//!
//! This pass, run on the folded Verilog ([`crate::dff_fold`]), rewrites a
//! module's `reg x;` assigned exactly once in the whole module, by a
//! top-level statement `x = K;` of a combinational block where `K` is a
//! sized literal or one of the module's `localparam`s, as `wire x;` and
//! `assign x = K;`. Every tool reads that as the constant it is.

use crate::comb_split::leading_identifier;
use std::collections::{HashMap, HashSet};

/// What the pass did to one Verilog text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConstStats {
    /// Signals rewritten as continuous assignments.
    pub wired: usize,
}

/// A sized literal as rust-hdl writes one: `32'h0`, `1'b1`, `8'd255`.
fn sized_literal(s: &str) -> bool {
    let Some((width, digits)) = s.split_once('\'') else {
        return false;
    };
    let mut d = digits.chars();
    !width.is_empty()
        && width.bytes().all(|b| b.is_ascii_digit())
        && matches!(d.next(), Some('h' | 'b' | 'd' | 'o'))
        && d.clone().next().is_some()
        && d.all(|c| c.is_ascii_hexdigit() || c == '_')
}

/// `reg` declaration of `name` on `line` (`    reg  [3:0] x;` or
/// `    output reg  [3:0] x;`), as the line with `wire` in its place.
fn as_wire(line: &str, name: &str) -> Option<String> {
    let t = line.trim_start();
    let rest = t.strip_prefix("output ").unwrap_or(t);
    let decl = rest.strip_prefix("reg ")?;
    if !decl.ends_with(&format!(" {name};")) && decl.trim_start() != format!("{name};") {
        return None;
    }
    let at = line.find("reg ")?;
    Some(format!("{}wire{}", &line[..at], &line[at + 3..]))
}

/// Rewrite every constant signal it can; see the module documentation.
pub fn wire_constants(verilog: &str) -> (String, ConstStats) {
    let lines: Vec<&str> = verilog.split('\n').collect();
    let mut stats = ConstStats::default();
    // Replacement text by line: None drops the line.
    let mut edits: HashMap<usize, Option<String>> = HashMap::new();
    let mut start = 0;
    while start < lines.len() {
        if !lines[start].starts_with("module ") {
            start += 1;
            continue;
        }
        let end = (start..lines.len())
            .find(|&i| lines[i].starts_with("endmodule"))
            .unwrap_or(lines.len());
        module(&lines, start, end, &mut edits, &mut stats);
        start = end + 1;
    }
    let mut out = String::with_capacity(verilog.len());
    let mut first = true;
    for (i, l) in lines.iter().enumerate() {
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

fn module(
    lines: &[&str],
    start: usize,
    end: usize,
    edits: &mut HashMap<usize, Option<String>>,
    stats: &mut ConstStats,
) {
    let consts: HashSet<&str> = lines[start..end]
        .iter()
        .filter_map(|l| {
            l.trim_start()
                .strip_prefix("localparam")
                .and_then(|r| leading_identifier(r.trim_start()))
        })
        .collect();
    // How often each signal is assigned in the module (blocking or not),
    // and where it is declared.
    let mut assigned: HashMap<&str, usize> = HashMap::new();
    let mut declared: HashMap<&str, usize> = HashMap::new();
    for (i, l) in lines.iter().enumerate().take(end).skip(start + 1) {
        let t = l.trim_start();
        if let Some(target) = leading_identifier(t) {
            let after = t[target.len()..].trim_start();
            if after.starts_with("= ") || after.starts_with("<= ") || after.starts_with('[') {
                *assigned.entry(target).or_default() += 1;
            }
        }
        if t.ends_with(';') && (t.starts_with("reg ") || t.starts_with("output reg ")) {
            if let Some(name) = t
                .trim_end_matches(';')
                .rsplit(' ')
                .next()
                .and_then(leading_identifier)
            {
                declared.insert(name, i);
            }
        }
    }
    // Top-level statements of the combinational blocks; their continuous
    // assignments go last (after every declaration they may name).
    let mut assigns: Vec<String> = Vec::new();
    let mut i = start + 1;
    while i < end {
        if lines[i] != "    always @(*) begin" {
            i += 1;
            continue;
        }
        let Some(n) = lines[i + 1..end].iter().position(|l| *l == "    end") else {
            break;
        };
        let close = i + 1 + n;
        let mut kept = 0;
        for (k, l) in lines.iter().enumerate().take(close).skip(i + 1) {
            let wired = l
                .strip_prefix("        ")
                .filter(|t| !t.starts_with(' '))
                .and_then(|t| t.strip_suffix(';'))
                .and_then(|t| t.split_once(" = "))
                .filter(|(x, k)| {
                    leading_identifier(x) == Some(*x)
                        && (sized_literal(k) || consts.contains(k))
                        && assigned.get(x) == Some(&1)
                })
                .and_then(|(x, k)| {
                    let d = *declared.get(x)?;
                    let wire = as_wire(lines[d], x)?;
                    Some((d, wire, format!("    assign {x} = {k};")))
                });
            match wired {
                Some((d, wire, assign)) => {
                    edits.insert(d, Some(wire));
                    assigns.push(assign);
                    edits.insert(k, None);
                    stats.wired += 1;
                }
                None => kept += 1,
            }
        }
        if kept == 0 {
            for l in i..=close {
                edits.insert(l, None);
            }
        }
        i = close + 1;
    }
    if !assigns.is_empty() && end < lines.len() {
        assigns.push(lines[end].to_string());
        edits.insert(end, Some(assigns.join("\n")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = "module top(clock,go,out,tag);
    input wire  clock;
    input wire  go;
    output reg  [1:0] out;
    output reg  [7:0] tag;
    localparam  seven = 8'h7;
    reg  [3:0] k;
    reg  [3:0] v;
    always @(*) begin
        out = {1'b0, go};
        tag = seven;
        k = 4'h5;
    end
    always @(*) begin
        v = 4'h1;
        if (go) begin
            v = k;
        end
    end
endmodule // top
";

    #[test]
    fn a_signal_set_once_from_a_constant_becomes_a_wire() {
        let (v, stats) = wire_constants(MODULE);
        assert_eq!(stats.wired, 2, "{v}");
        let want = "module top(clock,go,out,tag);
    input wire  clock;
    input wire  go;
    output reg  [1:0] out;
    output wire  [7:0] tag;
    localparam  seven = 8'h7;
    wire  [3:0] k;
    reg  [3:0] v;
    always @(*) begin
        out = {1'b0, go};
    end
    always @(*) begin
        v = 4'h1;
        if (go) begin
            v = k;
        end
    end
    assign tag = seven;
    assign k = 4'h5;
endmodule // top
";
        assert_eq!(v, want);
    }

    #[test]
    fn a_block_of_constants_alone_goes_whole() {
        let m = "module top(out);\n    output reg  [1:0] out;\n    always @(*) begin\n        out = 2'h3;\n    end\nendmodule // top\n";
        let (v, stats) = wire_constants(m);
        assert_eq!(stats.wired, 1);
        assert_eq!(
            v,
            "module top(out);\n    output wire  [1:0] out;\n    assign out = 2'h3;\nendmodule // top\n"
        );
    }

    #[test]
    fn literals_are_told_from_expressions() {
        for ok in ["32'h0", "1'b1", "8'd255", "4'hA_B"] {
            assert!(sized_literal(ok), "{ok}");
        }
        for bad in ["'h0", "32'h", "32'x1", "a'h1", "32'h0 + 1", "{1'b0}"] {
            assert!(!sized_literal(bad), "{bad}");
        }
    }

    /// On the card: the framers' fixed fields and the ports' constant
    /// halves become wires, and no combinational block is left that reads
    /// no signal (such a block would never run in an event-driven
    /// simulator).
    #[test]
    fn weft_top_wires_its_constants() {
        let v = crate::emit::on_big_stack(|| {
            let top = crate::emit::top(&crate::this_build());
            crate::emit::verilog_shaped(&top, "weft_top", crate::emit::Shape::Unfolded)
        });
        let folded = crate::dff_fold::fold(&v).0;
        let (wired, stats) = wire_constants(&folded);
        eprintln!("weft_top: {stats:?}");
        assert!(stats.wired > 50, "{stats:?}");
        assert_eq!(
            wire_constants(&wired).1.wired,
            0,
            "a second pass finds nothing"
        );
    }
}
