//! The OpenNIC shell's 250 MHz box and weft's user plugin for it.
//!
//! The shell (AMD's open-nic-shell, Apache-2.0) hosts user logic in two
//! boxes; weft uses the 250 MHz one. Its contract is the port list of the
//! default plugin `plugin/p2p/p2p_250mhz.sv`: AXI4-Lite registers on
//! `axil_aclk` (125 MHz), 512-bit AXI4-Stream with 16-bit `tuser_size`,
//! `tuser_src`, `tuser_dst` on `axis_aclk` (250 MHz), and the reset pair
//! `mod_rstn`/`mod_rst_done`. [`box_250mhz_ports`] is that list as weft
//! builds against it; [`ShellCheckout::open`] reads a checkout's
//! `p2p_250mhz.sv` and refuses one whose ports differ.
//!
//! A user plugin (the shell's `build.tcl -user_plugin DIR`, see its README
//! "User Plugin Integration") is a directory with `build_box_250mhz.tcl`
//! (sourced with the plugin directory as the current directory) and
//! `box_250mhz/` holding `user_plugin_250mhz_inst.vh` (included into the
//! shell's `box_250mhz.sv`, it instantiates the plugin's wrapper),
//! `box_250mhz_address_map_inst.vh`, `box_250mhz_address_map.v` and
//! `box_250mhz_axi_crossbar.tcl`. Without `build_box_322mhz.tcl` the shell
//! keeps its own pass-through plugin in the 322 MHz box.
//!
//! weft's plugin instantiates `weft_250mhz` where the shell instantiated
//! `p2p_250mhz`, with the same connections. Its register map glue is the
//! shell's with every plugin slave's window widened to weft's register map
//! ([`super::box_map`]: the crossbar Tcl is written from the layout, the
//! address map Verilog is the shell's with checked edits, the address map
//! instance is copied).

use super::box_map::{self, BoxLayout};
use super::top::{SourceFile, TopSource};
use super::{read, BitstreamError, Result};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The wrapper module weft puts in the 250 MHz box.
pub const WRAPPER_MODULE: &str = "weft_250mhz";
/// The shell's default 250 MHz plugin module, whose ports are the contract.
pub const P2P_MODULE: &str = "p2p_250mhz";

/// Port direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Into the plugin.
    Input,
    /// Out of the plugin.
    Output,
}

impl Dir {
    fn keyword(self) -> &'static str {
        match self {
            Dir::Input => "input",
            Dir::Output => "output",
        }
    }
}

/// One port of a module.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Port {
    /// Name.
    pub name: String,
    /// Direction.
    pub dir: Dir,
    /// The packed range without brackets and spaces (`512*NUM_INTF-1:0`),
    /// `None` for a scalar.
    pub range: Option<String>,
    /// The `ifdef` macros under which the port exists (any of them); empty
    /// for an unconditional port.
    pub only_if: Vec<String>,
}

impl Port {
    fn new(name: &str, dir: Dir, range: Option<String>) -> Port {
        Port {
            name: name.to_string(),
            dir,
            range,
            only_if: vec![],
        }
    }

    /// The width for parameters `NUM_INTF` and `NUM_QDMA`.
    pub fn width(&self, num_intf: i64, num_qdma: i64) -> std::result::Result<i64, WidthError> {
        let Some(r) = &self.range else { return Ok(1) };
        let (msb, lsb) = r.split_once(':').ok_or_else(|| WidthError::NotMsbLsb {
            port: self.name.clone(),
            range: r.clone(),
        })?;
        let vars = [("NUM_INTF", num_intf), ("NUM_QDMA", num_qdma)];
        let expr = |why| WidthError::Expr {
            port: self.name.clone(),
            range: r.clone(),
            why,
        };
        let msb = eval(msb, &vars).map_err(expr)?;
        let lsb = eval(lsb, &vars).map_err(expr)?;
        Ok((msb - lsb).abs() + 1)
    }

    /// The declaration, as in an ANSI port list (no trailing comma).
    pub fn declaration(&self) -> String {
        match &self.range {
            Some(r) => format!("{:<6} [{r}] {}", self.dir.keyword(), self.name),
            None => format!("{:<6} {}", self.dir.keyword(), self.name),
        }
    }
}

/// Why a port's width cannot be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WidthError {
    /// The range has no `:`.
    #[error("range [{range}] of {port} is not msb:lsb")]
    NotMsbLsb {
        /// The port.
        port: String,
        /// Its range, without brackets.
        range: String,
    },
    /// A bound of the range is not an expression weft evaluates.
    #[error("range [{range}] of {port}: {why}")]
    Expr {
        /// The port.
        port: String,
        /// Its range, without brackets.
        range: String,
        /// What is wrong with the bound.
        why: ExprError,
    },
}

/// Why a width expression cannot be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExprError {
    /// A `(` without its `)`.
    #[error("unbalanced parenthesis")]
    Unbalanced,
    /// Digits that do not fit an `i64`.
    #[error("bad number {0:?}")]
    Number(String),
    /// A name other than `NUM_INTF` and `NUM_QDMA`.
    #[error("unknown name {0:?}")]
    Name(String),
    /// Text that starts no number, name or parenthesis (the rest of the
    /// expression from there).
    #[error("cannot read {0:?}")]
    Unreadable(String),
    /// An expression followed by more text (the whole expression).
    #[error("trailing text in {0:?}")]
    Trailing(String),
}

/// The 250 MHz box's ports as `plugin/p2p/p2p_250mhz.sv` declares them
/// (parameters `NUM_QDMA`, `NUM_INTF`), unconditional ports only.
///
/// Per interface `i < NUM_INTF`: two AXI4-Lite slaves (`2*i` ingress,
/// `2*i+1` egress switch control in the p2p plugin), QDMA host-to-card and
/// card-to-host streams (`NUM_QDMA` each), and transmit/receive streams to
/// the packet adapter; one reset pair and the two clocks.
pub fn box_250mhz_ports() -> Vec<Port> {
    use Dir::{Input as I, Output as O};
    let mut v = vec![];
    let range = |bits: u32, count: &str| -> Option<String> {
        match (bits, count) {
            (1, "") => None,
            (1, c) => Some(format!("{c}-1:0")),
            (b, "") => Some(format!("{}:0", b - 1)),
            (b, c) => Some(format!("{b}*{c}-1:0")),
        }
    };
    let axil = "NUM_INTF*2";
    for (n, d, b) in [
        ("awvalid", I, 1),
        ("awaddr", I, 32),
        ("awready", O, 1),
        ("wvalid", I, 1),
        ("wdata", I, 32),
        ("wready", O, 1),
        ("bvalid", O, 1),
        ("bresp", O, 2),
        ("bready", I, 1),
        ("arvalid", I, 1),
        ("araddr", I, 32),
        ("arready", O, 1),
        ("rvalid", O, 1),
        ("rdata", O, 32),
        ("rresp", O, 2),
        ("rready", I, 1),
    ] {
        v.push(Port::new(&format!("s_axil_{n}"), d, range(b, axil)));
    }
    // A stream: (prefix, count, data direction).
    for (prefix, count, data) in [
        ("s_axis_qdma_h2c", "NUM_INTF*NUM_QDMA", I),
        ("m_axis_qdma_c2h", "NUM_INTF*NUM_QDMA", O),
        ("m_axis_adap_tx_250mhz", "NUM_INTF", O),
        ("s_axis_adap_rx_250mhz", "NUM_INTF", I),
    ] {
        let back = if data == I { O } else { I };
        for (n, d, b) in [
            ("tvalid", data, 1),
            ("tdata", data, 512),
            ("tkeep", data, 64),
            ("tlast", data, 1),
            ("tuser_size", data, 16),
            ("tuser_src", data, 16),
            ("tuser_dst", data, 16),
            ("tready", back, 1),
        ] {
            v.push(Port::new(&format!("{prefix}_{n}"), d, range(b, count)));
        }
    }
    v.push(Port::new("mod_rstn", I, None));
    v.push(Port::new("mod_rst_done", O, None));
    v.push(Port::new("axil_aclk", I, None));
    v.push(Port::new("axis_aclk", I, None));
    v
}

/// Parameter values the widths are compared at.
const WIDTH_PROBES: [(i64, i64); 4] = [(1, 1), (2, 1), (1, 2), (4, 3)];

/// Differences between a module's ports and the contract (empty when they
/// agree). Conditional ports (`ifdef`) are not part of the contract.
pub fn contract_diffs(found: &[Port], contract: &[Port]) -> Vec<String> {
    let mut diffs = vec![];
    let found_map: BTreeMap<&str, &Port> = found
        .iter()
        .filter(|p| p.only_if.is_empty())
        .map(|p| (p.name.as_str(), p))
        .collect();
    let want: BTreeSet<&str> = contract.iter().map(|p| p.name.as_str()).collect();
    for c in contract {
        match found_map.get(c.name.as_str()) {
            None => diffs.push(format!("missing port {}", c.name)),
            Some(f) => {
                if f.dir != c.dir {
                    diffs.push(format!(
                        "{} is {} (expected {})",
                        c.name,
                        f.dir.keyword(),
                        c.dir.keyword()
                    ));
                }
                for (ni, nq) in WIDTH_PROBES {
                    match (f.width(ni, nq), c.width(ni, nq)) {
                        (Ok(a), Ok(b)) if a == b => {}
                        (Ok(a), Ok(b)) => {
                            diffs.push(format!(
                                "{} is {a} bits wide at NUM_INTF={ni}, NUM_QDMA={nq} (expected {b})",
                                c.name
                            ));
                            break;
                        }
                        (Err(e), _) | (_, Err(e)) => {
                            diffs.push(e.to_string());
                            break;
                        }
                    }
                }
            }
        }
    }
    for f in found_map.keys() {
        if !want.contains(f) {
            diffs.push(format!("unexpected port {f}"));
        }
    }
    diffs
}

/// Evaluate a width expression: integers, `NUM_INTF`/`NUM_QDMA`, `+ - *`,
/// parentheses.
fn eval(expr: &str, vars: &[(&str, i64)]) -> std::result::Result<i64, ExprError> {
    struct P<'a> {
        s: &'a [u8],
        i: usize,
        vars: &'a [(&'a str, i64)],
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
                self.i += 1;
            }
        }
        fn sum(&mut self) -> std::result::Result<i64, ExprError> {
            let mut v = self.prod()?;
            loop {
                self.ws();
                match self.s.get(self.i) {
                    Some(b'+') => {
                        self.i += 1;
                        v += self.prod()?;
                    }
                    Some(b'-') => {
                        self.i += 1;
                        v -= self.prod()?;
                    }
                    _ => return Ok(v),
                }
            }
        }
        fn prod(&mut self) -> std::result::Result<i64, ExprError> {
            let mut v = self.atom()?;
            loop {
                self.ws();
                if self.s.get(self.i) == Some(&b'*') {
                    self.i += 1;
                    v *= self.atom()?;
                } else {
                    return Ok(v);
                }
            }
        }
        fn atom(&mut self) -> std::result::Result<i64, ExprError> {
            self.ws();
            let start = self.i;
            match self.s.get(self.i) {
                Some(b'(') => {
                    self.i += 1;
                    let v = self.sum()?;
                    self.ws();
                    if self.s.get(self.i) != Some(&b')') {
                        return Err(ExprError::Unbalanced);
                    }
                    self.i += 1;
                    Ok(v)
                }
                Some(c) if c.is_ascii_digit() => {
                    while self.i < self.s.len() && self.s[self.i].is_ascii_digit() {
                        self.i += 1;
                    }
                    let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                    t.parse().map_err(|_| ExprError::Number(t.to_string()))
                }
                Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                    while self.i < self.s.len()
                        && (self.s[self.i].is_ascii_alphanumeric() || self.s[self.i] == b'_')
                    {
                        self.i += 1;
                    }
                    let t = std::str::from_utf8(&self.s[start..self.i]).unwrap_or("");
                    self.vars
                        .iter()
                        .find(|(n, _)| *n == t)
                        .map(|(_, v)| *v)
                        .ok_or_else(|| ExprError::Name(t.to_string()))
                }
                _ => Err(ExprError::Unreadable(
                    String::from_utf8_lossy(&self.s[start..]).into_owned(),
                )),
            }
        }
    }
    let mut p = P {
        s: expr.as_bytes(),
        i: 0,
        vars,
    };
    let v = p.sum()?;
    p.ws();
    if p.i != p.s.len() {
        return Err(ExprError::Trailing(expr.to_string()));
    }
    Ok(v)
}

/// Remove `//` and `/* */` comments (string literals are not expected in a
/// port list).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let line = rest.find("//");
        let block = rest.find("/*");
        match (line, block) {
            (Some(l), b) if b.is_none_or(|b| l < b) => {
                out.push_str(&rest[..l]);
                rest = &rest[l..];
                let end = rest.find('\n').unwrap_or(rest.len());
                rest = &rest[end..];
            }
            (_, Some(b)) => {
                out.push_str(&rest[..b]);
                rest = &rest[b + 2..];
                let end = rest.find("*/").map_or(rest.len(), |e| e + 2);
                // Keep line numbers: one newline per newline removed.
                out.extend(rest[..end].chars().filter(|&c| c == '\n'));
                rest = &rest[end..];
            }
            _ => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

/// Why a Verilog file of the shell is not one weft can read or adapt: its
/// module's ANSI port list cannot be read, or an instance is not where weft
/// expects it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerilogError {
    /// The module is not declared.
    #[error("no `module {module}`")]
    NoModule {
        /// The module looked for.
        module: String,
    },
    /// A parameter or port list that does not close.
    #[error("unbalanced parentheses after `module {module}`")]
    Unbalanced {
        /// The module.
        module: String,
    },
    /// `#` not followed by `(`.
    #[error("`module {module} #` without a parameter list")]
    NoParameterList {
        /// The module.
        module: String,
    },
    /// No `(` after the module name (and parameters).
    #[error("`module {module}` has no port list")]
    NoPortList {
        /// The module.
        module: String,
    },
    /// An `` `ifdef `` inside another.
    #[error("nested `ifdef in the port list is not supported")]
    NestedIfdef,
    /// `` `ifdef `` or `` `elsif `` without its macro.
    #[error("`{directive} without a macro")]
    NoMacro {
        /// `ifdef` or `elsif`.
        directive: &'static str,
    },
    /// `` `elsif ``, `` `else `` or `` `endif `` outside an `` `ifdef ``.
    #[error("`{directive} without `ifdef")]
    WithoutIfdef {
        /// The directive.
        directive: &'static str,
    },
    /// A directive other than `ifdef`, `elsif`, `else` and `endif`.
    #[error("unsupported directive `{directive} in the port list")]
    Directive {
        /// The directive.
        directive: String,
    },
    /// An `` `ifdef `` still open at the end of the port list.
    #[error("`ifdef without `endif in the port list")]
    Unterminated,
    /// An `inout` port.
    #[error("inout port in {declaration:?} is not supported")]
    Inout {
        /// The declaration.
        declaration: String,
    },
    /// A `[` without its `]`.
    #[error("unclosed [ in {declaration:?}")]
    UnclosedRange {
        /// The declaration.
        declaration: String,
    },
    /// A declaration that is not `input|output [kind] [range] name`.
    #[error("cannot read port declaration {declaration:?}")]
    Declaration {
        /// The declaration.
        declaration: String,
    },
    /// A port whose direction or range differs between branches.
    #[error("port {port} is declared differently in two `ifdef branches")]
    Redeclared {
        /// The port.
        port: String,
    },
    /// A port in two separate `` `ifdef `` blocks.
    #[error("port {port} appears in two `ifdef blocks")]
    TwoBlocks {
        /// The port.
        port: String,
    },
    /// A port under `` `else `` that some other branch lacks.
    #[error("port {port} exists under `else but not in every branch: not supported")]
    PartialElse {
        /// The port.
        port: String,
    },
    /// Not exactly one instance of a module.
    #[error("expected one instance of {module}, found {found}")]
    Instances {
        /// The module.
        module: &'static str,
        /// Instances found.
        found: usize,
    },
}

/// The ANSI port list of `module` in Verilog/SystemVerilog `text`, with the
/// `ifdef` conditions of conditional ports.
pub fn parse_module_ports(
    text: &str,
    module: &str,
) -> std::result::Result<Vec<Port>, VerilogError> {
    let text = strip_comments(text);
    let bytes = text.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    let mut at = None;
    let mut from = 0;
    while let Some(i) = text[from..].find("module") {
        let s = from + i;
        let e = s + "module".len();
        let before_ok = s == 0 || !is_ident(bytes[s - 1]);
        let rest = text[e..].trim_start();
        let after_kw_ok = e < bytes.len() && bytes[e].is_ascii_whitespace();
        if before_ok && after_kw_ok && rest.starts_with(module) {
            let after = &rest.as_bytes()[module.len()..];
            if after.first().is_none_or(|&b| !is_ident(b)) {
                at = Some(text.len() - rest.len() + module.len());
                break;
            }
        }
        from = e;
    }
    let mut i = at.ok_or_else(|| VerilogError::NoModule {
        module: module.to_string(),
    })?;
    let skip_ws = |i: &mut usize| {
        while *i < bytes.len() && bytes[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    let matching = |open: usize| -> std::result::Result<usize, VerilogError> {
        let mut depth = 0;
        for (k, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(k);
                    }
                }
                _ => {}
            }
        }
        Err(VerilogError::Unbalanced {
            module: module.to_string(),
        })
    };
    skip_ws(&mut i);
    if bytes.get(i) == Some(&b'#') {
        i += 1;
        skip_ws(&mut i);
        if bytes.get(i) != Some(&b'(') {
            return Err(VerilogError::NoParameterList {
                module: module.to_string(),
            });
        }
        i = matching(i)? + 1;
        skip_ws(&mut i);
    }
    if bytes.get(i) != Some(&b'(') {
        return Err(VerilogError::NoPortList {
            module: module.to_string(),
        });
    }
    let close = matching(i)?;
    let body = &text[i + 1..close];

    // (branch chain id, branch index, macro or None for `else`)
    struct Chain {
        branches: Vec<Option<String>>,
    }
    let mut chains: Vec<Chain> = vec![];
    let mut current: Option<usize> = None;
    // name -> (port, branches it appears in)
    let mut order: Vec<String> = vec![];
    let mut seen: BTreeMap<String, (Port, Vec<(usize, usize)>)> = BTreeMap::new();
    let mut last_dir: Option<Dir> = None;
    let mut last_range: Option<String> = None;
    for line in body.lines() {
        let t = line.trim();
        if let Some(d) = t.strip_prefix('`') {
            let mut w = d.split_whitespace();
            let kw = w.next().unwrap_or("");
            let arg = w.next().map(str::to_string);
            match kw {
                "ifdef" => {
                    if current.is_some() {
                        return Err(VerilogError::NestedIfdef);
                    }
                    chains.push(Chain {
                        branches: vec![arg.clone()],
                    });
                    current = Some(chains.len() - 1);
                    if arg.is_none() {
                        return Err(VerilogError::NoMacro { directive: "ifdef" });
                    }
                }
                "elsif" | "else" => {
                    let directive = if kw == "elsif" { "elsif" } else { "else" };
                    let c = current.ok_or(VerilogError::WithoutIfdef { directive })?;
                    if kw == "elsif" && arg.is_none() {
                        return Err(VerilogError::NoMacro { directive });
                    }
                    chains[c]
                        .branches
                        .push(if kw == "elsif" { arg } else { None });
                }
                "endif" => {
                    current
                        .take()
                        .ok_or(VerilogError::WithoutIfdef { directive: "endif" })?;
                }
                other => {
                    return Err(VerilogError::Directive {
                        directive: other.to_string(),
                    })
                }
            }
            continue;
        }
        for piece in t.split(',') {
            let p = piece.trim();
            if p.is_empty() {
                continue;
            }
            let mut rest = p;
            let mut dir = None;
            for (kw, d) in [("input", Dir::Input), ("output", Dir::Output)] {
                if let Some(r) = rest.strip_prefix(kw) {
                    if r.starts_with(|c: char| c.is_whitespace() || c == '[') {
                        dir = Some(d);
                        rest = r.trim_start();
                    }
                }
            }
            if rest.starts_with("inout") {
                return Err(VerilogError::Inout {
                    declaration: p.to_string(),
                });
            }
            let range;
            if let Some(d) = dir {
                for kw in ["wire", "logic", "reg", "var", "signed", "unsigned"] {
                    if let Some(r) = rest.strip_prefix(kw) {
                        if r.starts_with(|c: char| c.is_whitespace() || c == '[') {
                            rest = r.trim_start();
                        }
                    }
                }
                if let Some(r) = rest.strip_prefix('[') {
                    let end = r.find(']').ok_or_else(|| VerilogError::UnclosedRange {
                        declaration: p.to_string(),
                    })?;
                    range = Some(
                        r[..end]
                            .chars()
                            .filter(|c| !c.is_whitespace())
                            .collect::<String>(),
                    );
                    rest = r[end + 1..].trim_start();
                } else {
                    range = None;
                }
                last_dir = Some(d);
                last_range = range.clone();
            } else {
                // `input [3:0] a, b`: b inherits a's direction and range.
                dir = last_dir;
                range = last_range.clone();
            }
            let unreadable = || VerilogError::Declaration {
                declaration: p.to_string(),
            };
            let dir = dir.ok_or_else(unreadable)?;
            let name = rest;
            if name.is_empty() || !name.bytes().all(is_ident) || name.as_bytes()[0].is_ascii_digit()
            {
                return Err(unreadable());
            }
            let branch = current.map(|c| (c, chains[c].branches.len() - 1));
            let entry = seen.entry(name.to_string()).or_insert_with(|| {
                order.push(name.to_string());
                (Port::new(name, dir, range.clone()), vec![])
            });
            if entry.0.dir != dir || entry.0.range != range {
                return Err(VerilogError::Redeclared {
                    port: name.to_string(),
                });
            }
            if let Some(b) = branch {
                entry.1.push(b);
            } else {
                entry.1.push((usize::MAX, 0));
            }
        }
    }
    if current.is_some() {
        return Err(VerilogError::Unterminated);
    }
    let mut ports = vec![];
    for name in order {
        let (mut port, branches) = seen.remove(&name).unwrap_or_else(|| unreachable!());
        if branches.iter().any(|&(c, _)| c == usize::MAX) {
            ports.push(port);
            continue;
        }
        let chain_ids: BTreeSet<usize> = branches.iter().map(|&(c, _)| c).collect();
        if chain_ids.len() != 1 {
            return Err(VerilogError::TwoBlocks { port: name });
        }
        let c = &chains[*chain_ids.iter().next().unwrap_or(&0)];
        let in_branches: BTreeSet<usize> = branches.iter().map(|&(_, b)| b).collect();
        let has_else = c.branches.last().is_some_and(Option::is_none);
        if has_else && in_branches.len() == c.branches.len() {
            ports.push(port); // present in every branch: unconditional
            continue;
        }
        for b in in_branches {
            match &c.branches[b] {
                Some(m) => port.only_if.push(m.clone()),
                None => return Err(VerilogError::PartialElse { port: name }),
            }
        }
        ports.push(port);
    }
    Ok(ports)
}

/// The shell files weft reads or copies.
#[derive(Clone, Debug)]
pub struct ShellCheckout {
    /// The checkout's root.
    pub root: PathBuf,
    /// `script/build.tcl`.
    pub build_tcl: PathBuf,
    /// `plugin/p2p/p2p_250mhz.sv`: the port contract.
    pub p2p_250mhz: PathBuf,
    /// `plugin/p2p/box_250mhz/`: the default plugin's glue.
    pub p2p_box: PathBuf,
    /// The ports declared in `p2p_250mhz.sv`, conditional ones included.
    pub ports: Vec<Port>,
}

/// The register glue files of `box_250mhz/` weft adapts from the shell
/// (see [`super::box_map`] for what becomes of each).
pub const BOX_GLUE: [&str; 3] = [
    "box_250mhz_address_map_inst.vh",
    "box_250mhz_address_map.v",
    "box_250mhz_axi_crossbar.tcl",
];

impl ShellCheckout {
    /// Check that `root` is an OpenNIC shell checkout that knows board
    /// `opennic_board` and whose 250 MHz box has weft's port contract.
    pub fn open(root: &Path, opennic_board: &str) -> Result<ShellCheckout> {
        let shell_err = |why: String| BitstreamError::ShellDir {
            path: root.to_path_buf(),
            why,
        };
        if !root.is_dir() {
            return Err(shell_err("no such directory".into()));
        }
        let build_tcl = root.join("script/build.tcl");
        let p2p_250mhz = root.join("plugin/p2p/p2p_250mhz.sv");
        let p2p_box = root.join("plugin/p2p/box_250mhz");
        let settings = root.join(format!("script/board_settings/{opennic_board}.tcl"));
        let mut needed = vec![build_tcl.clone(), p2p_250mhz.clone(), settings.clone()];
        needed.push(p2p_box.join("user_plugin_250mhz_inst.vh"));
        needed.extend(BOX_GLUE.iter().map(|f| p2p_box.join(f)));
        for f in &needed {
            if !f.is_file() {
                let rel = f.strip_prefix(root).unwrap_or(f);
                let why = if *f == settings {
                    format!(
                        "{} is missing (this shell does not support board {opennic_board})",
                        rel.display()
                    )
                } else {
                    format!("{} is missing", rel.display())
                };
                return Err(shell_err(why));
            }
        }
        let text = read(&p2p_250mhz)?;
        let ports =
            parse_module_ports(&text, P2P_MODULE).map_err(|why| BitstreamError::Verilog {
                file: p2p_250mhz.clone(),
                why,
            })?;
        let diffs = contract_diffs(&ports, &box_250mhz_ports());
        if !diffs.is_empty() {
            return Err(BitstreamError::PortContract {
                file: p2p_250mhz,
                diffs: diffs.join("; "),
            });
        }
        Ok(ShellCheckout {
            root: root.to_path_buf(),
            build_tcl,
            p2p_250mhz,
            p2p_box,
            ports,
        })
    }

    /// The shell's `user_plugin_250mhz_inst.vh` with its `p2p_250mhz`
    /// instance turned into weft's wrapper (same parameters, connections and
    /// `ifdef`s).
    pub fn plugin_inst(&self) -> Result<String> {
        let path = self.p2p_box.join("user_plugin_250mhz_inst.vh");
        let text = read(&path)?;
        let (out, n) = replace_word(&text, P2P_MODULE, WRAPPER_MODULE);
        if n != 1 {
            return Err(BitstreamError::Verilog {
                file: path,
                why: VerilogError::Instances {
                    module: P2P_MODULE,
                    found: n,
                },
            });
        }
        Ok(format!(
            "// Generated by weft from the OpenNIC shell's plugin/p2p/box_250mhz/user_plugin_250mhz_inst.vh:\n\
             // the {P2P_MODULE} instance is replaced by weft's {WRAPPER_MODULE}, with the same connections.\n{out}"
        ))
    }
}

/// Replace whole-word occurrences of `from`; returns the text and the count.
fn replace_word(text: &str, from: &str, to: &str) -> (String, usize) {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let mut out = String::with_capacity(text.len());
    let mut n = 0;
    let mut rest = text;
    let mut prev: Option<char> = None;
    while let Some(i) = rest.find(from) {
        let before = rest[..i].chars().last().or(prev);
        let after = rest[i + from.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_none_or(|c| !is_ident(c)) && after.is_none_or(|c| !is_ident(c)) {
            out.push_str(to);
            n += 1;
        } else {
            out.push_str(from);
        }
        prev = from.chars().last();
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    (out, n)
}

/// The 250 MHz box wrapper `weft_250mhz`: exactly the box's ports (those of
/// `ports`, conditional ones under their `ifdef`s). With a `top`, it
/// instantiates the top by port name; without one it is a stub that ties
/// every output to zero (streams never valid nor ready, AXI4-Lite never
/// ready, `mod_rst_done` low) and, under the shell's `__synthesis__` define,
/// instantiates a module that does not exist, so that no synthesis can turn
/// it into a bitstream that pretends to work.
pub fn wrapper(ports: &[Port], top: Option<&TopSource>) -> String {
    use std::fmt::Write;
    let uncond: Vec<&Port> = ports.iter().filter(|p| p.only_if.is_empty()).collect();
    let cond: Vec<&Port> = ports.iter().filter(|p| !p.only_if.is_empty()).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "// {WRAPPER_MODULE}: weft's plugin in the OpenNIC shell's 250 MHz box.\n\
         // Generated by `weft bitstream build`; do not edit. The port list is the shell's\n\
         // {P2P_MODULE} (plugin/p2p/p2p_250mhz.sv): AXI4-Lite on axil_aclk (125 MHz), 512-bit\n\
         // AXI4-Stream with tuser_size/src/dst on axis_aclk (250 MHz), mod_rstn/mod_rst_done."
    );
    match top {
        Some(t) => {
            let _ = writeln!(s, "// Instantiates the OpenNIC top `{}`.", t.module);
        }
        None => {
            let _ = writeln!(
                s,
                "//\n\
                 // STUB: built without weft's top (a dry run). This wrapper\n\
                 // instantiates nothing that works: every output is tied to zero, and under\n\
                 // the shell's __synthesis__ define it instantiates a module that does not\n\
                 // exist, so synthesis stops here instead of producing a dead bitstream."
            );
        }
    }
    let _ = writeln!(s, "`timescale 1ns/1ps");
    if top.is_none() {
        let _ = writeln!(
            s,
            "// The stub reads none of its inputs.\n/* verilator lint_off UNUSEDSIGNAL */"
        );
    }
    let _ = writeln!(
        s,
        "module {WRAPPER_MODULE} #(\n  parameter int NUM_QDMA = 1,\n  parameter int NUM_INTF = 1\n) ("
    );
    let (last, head) = match uncond.split_last() {
        Some((l, h)) => (Some(*l), h.to_vec()),
        None => (None, vec![]),
    };
    for p in &head {
        let _ = writeln!(s, "  {},", p.declaration());
    }
    for p in &cond {
        for (k, m) in p.only_if.iter().enumerate() {
            let kw = if k == 0 { "ifdef" } else { "elsif" };
            let _ = writeln!(s, "`{kw} {m}\n  {},", p.declaration());
        }
        let _ = writeln!(s, "`endif");
    }
    if let Some(l) = last {
        let _ = writeln!(s, "  {}", l.declaration());
    }
    let _ = writeln!(s, ");");
    match top {
        None => {
            let _ = writeln!(
                s,
                "/* verilator lint_on UNUSEDSIGNAL */\n\n\
                 `ifdef __synthesis__\n  \
                 // built without weft_top: refuse to synthesise.\n  \
                 weft_top_was_not_given__dry_run_only refuse_to_synthesise ();\n\
                 `endif\n"
            );
            for p in uncond.iter().filter(|p| p.dir == Dir::Output) {
                let _ = writeln!(s, "  assign {} = '0;", p.name);
            }
        }
        Some(t) => {
            let _ = writeln!(
                s,
                "\n  // {} is built for one interface and one QDMA (NUM_INTF = NUM_QDMA = 1).\n  \
                 generate if (NUM_INTF != 1 || NUM_QDMA != 1) begin : unsupported\n    \
                 weft_top_supports_NUM_INTF_1_and_NUM_QDMA_1_only unsupported_configuration ();\n  \
                 end endgenerate\n",
                t.module
            );
            let _ = writeln!(s, "  {} {}_inst (", t.module, t.module);
            let n = uncond.len();
            for (k, p) in uncond.iter().enumerate() {
                let comma = if k + 1 < n { "," } else { "" };
                let _ = writeln!(s, "    .{:<33}({}){comma}", p.name, p.name);
            }
            let _ = writeln!(s, "  );");
        }
    }
    let _ = writeln!(s, "endmodule: {WRAPPER_MODULE}");
    s
}

/// `build_box_250mhz.tcl`: read the wrapper and the Verilog files (paths
/// relative to the plugin directory, the current directory when the shell
/// sources it).
pub fn build_box_tcl(files: &[String]) -> String {
    let mut s = String::from(
        "# Generated by `weft bitstream build`; do not edit.\n\
         # Sourced by the OpenNIC shell's script/build.tcl with the current directory set to this\n\
         # plugin directory (-user_plugin). Reads weft's 250 MHz box wrapper and its Verilog.\n",
    );
    s.push_str(&format!("read_verilog -sv {WRAPPER_MODULE}.sv\n"));
    for f in files {
        s.push_str(&format!("read_verilog {}\n", super::tcl_quote(f)));
    }
    s
}

/// The register glue of weft's plugin for `layouts` (relative to the plugin
/// directory): the shell's three `box_250mhz/` glue files adapted as
/// [`super::box_map`] says. Fails naming the file and the text when the
/// shell's files are not the version weft adapts.
pub fn box_glue(shell: &ShellCheckout, layouts: &[BoxLayout]) -> Result<Vec<(PathBuf, String)>> {
    let [inst, map, xbar] = BOX_GLUE.map(|g| shell.p2p_box.join(g));
    let inst_text = read(&inst)?;
    box_map::check_address_map_inst(&inst, &inst_text)?;
    let map_text = box_map::address_map_v(&map, &read(&map)?, layouts)?;
    let xbar_text = box_map::crossbar_tcl(&xbar, &read(&xbar)?, layouts)?;
    Ok(vec![
        (
            PathBuf::from(format!("box_250mhz/{}", BOX_GLUE[0])),
            inst_text,
        ),
        (
            PathBuf::from(format!("box_250mhz/{}", BOX_GLUE[1])),
            map_text,
        ),
        (
            PathBuf::from(format!("box_250mhz/{}", BOX_GLUE[2])),
            xbar_text,
        ),
    ])
}

/// The files of weft's user plugin, relative to the plugin directory.
///
/// Fails when weft's register map does not fit the box
/// ([`BitstreamError::BoxMapTooLarge`]) or the shell's glue is not the
/// version weft adapts ([`BitstreamError::ShellText`]).
pub fn plugin_files(
    shell: &ShellCheckout,
    top: Option<&TopSource>,
    verilog: &[SourceFile],
) -> Result<Vec<(PathBuf, String)>> {
    let mut files = vec![];
    let mut names = vec![];
    for v in verilog {
        let rel = format!("verilog/{}", v.name);
        files.push((PathBuf::from(&rel), v.text.clone()));
        names.push(rel);
    }
    files.push((
        PathBuf::from(format!("{WRAPPER_MODULE}.sv")),
        wrapper(&shell.ports, top),
    ));
    files.push((PathBuf::from("build_box_250mhz.tcl"), build_box_tcl(&names)));
    files.push((
        PathBuf::from("box_250mhz/user_plugin_250mhz_inst.vh"),
        shell.plugin_inst()?,
    ));
    files.extend(box_glue(shell, &box_map::weft_layouts()?)?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_widths() {
        let v = [("NUM_INTF", 2), ("NUM_QDMA", 3)];
        assert_eq!(eval("512*NUM_INTF*NUM_QDMA-1", &v), Ok(3071));
        assert_eq!(eval("(NUM_INTF+1)*2", &v), Ok(6));
        assert_eq!(eval("FOO-1", &v), Err(ExprError::Name("FOO".into())));
        assert_eq!(eval("(1+2", &v), Err(ExprError::Unbalanced));
        assert_eq!(eval("1 2", &v), Err(ExprError::Trailing("1 2".into())));
        let p = Port::new("x", Dir::Input, Some("FOO-1:0".into()));
        assert_eq!(
            p.width(1, 1).unwrap_err().to_string(),
            r#"range [FOO-1:0] of x: unknown name "FOO""#
        );
    }

    #[test]
    fn port_list_errors_say_what_is_wrong() {
        let err = |t: &str| parse_module_ports(t, "m").unwrap_err();
        assert_eq!(
            err("module n (input a);"),
            VerilogError::NoModule { module: "m".into() }
        );
        assert_eq!(
            err("module m (\n`endif\n);").to_string(),
            "`endif without `ifdef"
        );
        assert_eq!(
            err("module m (\n  inout a\n);").to_string(),
            r#"inout port in "inout a" is not supported"#
        );
        assert_eq!(
            err("module m (\n`ifdef A\n  input a\n`endif\n`ifdef B\n  input a\n`endif\n);"),
            VerilogError::TwoBlocks { port: "a".into() }
        );
    }

    #[test]
    fn contract_has_the_issue_widths() {
        let ports = box_250mhz_ports();
        let get = |n: &str| ports.iter().find(|p| p.name == n).unwrap();
        assert_eq!(get("s_axis_qdma_h2c_tdata").width(1, 1), Ok(512));
        assert_eq!(get("m_axis_qdma_c2h_tkeep").width(1, 1), Ok(64));
        assert_eq!(get("m_axis_adap_tx_250mhz_tuser_dst").width(1, 1), Ok(16));
        assert_eq!(get("s_axil_awaddr").width(1, 1), Ok(64));
        assert_eq!(get("s_axil_bresp").width(1, 1), Ok(4));
        assert_eq!(get("s_axis_adap_rx_250mhz_tready").dir, Dir::Output);
        assert_eq!(get("m_axis_qdma_c2h_tready").dir, Dir::Input);
        assert_eq!(ports.len(), 16 + 4 * 8 + 4);
    }

    #[test]
    fn parses_conditions_and_inherited_declarations() {
        let text = "module m #(parameter int N = 1) (\n  input [N-1:0] a, b,\n  output c, // x\n`ifdef A\n  input r,\n`elsif B\n  input r,\n`endif\n`ifdef C\n  input k,\n  input z\n`else\n  input z\n`endif\n);\nendmodule";
        let p = parse_module_ports(text, "m").unwrap();
        let names: Vec<_> = p.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c", "r", "k", "z"]);
        assert_eq!(p[1].range.as_deref(), Some("N-1:0"));
        assert_eq!(p[3].only_if, ["A", "B"]);
        assert_eq!(p[4].only_if, ["C"]);
        assert!(p[5].only_if.is_empty(), "z is in every branch");
    }

    #[test]
    fn replace_word_is_whole_word() {
        let (s, n) = replace_word(
            "p2p_250mhz #() p2p_250mhz_inst (",
            "p2p_250mhz",
            "weft_250mhz",
        );
        assert_eq!(n, 1);
        assert_eq!(s, "weft_250mhz #() p2p_250mhz_inst (");
    }
}
