//! A RAM's read and write in one clocked block.
//!
//! rust-hdl writes its `RAM` as two clocked blocks, a registered read
//! (`read_data <= mem[read_address]`) on `read_clock` and a non-blocking
//! write on `write_clock`. Verilator keeps a delayed copy of every such
//! write (a set flag, the address and the value, cleared, tested and
//! committed every cycle); `weft_top` has 59 RAMs, and their delayed
//! writes were about 2% of the model's instructions a cycle
//! (`scripts/sim-profile.sh`).
//!
//! Where both ports of a RAM are wired to one clock, this pass, run on the
//! folded Verilog, writes the two blocks as one: the read first, then the
//! write as a blocking assignment. The read takes the old word, as it did
//! (read-first, the behaviour of rust-hdl's simulator and of block RAM in
//! `READ_FIRST` mode), and nothing but that read reads `mem`, so the write
//! needs no delay. Two inline Verilator waivers come with it, each with its
//! reason: the blocking assignment in a clocked block (`BLKSEQ`) and the
//! read clock port, which the merged block no longer uses (`UNUSEDSIGNAL`).
//!
//! A RAM is left as rust-hdl wrote it unless its module is exactly
//! rust-hdl's (the two blocks above and nothing else clocked), it has one
//! instance, and the parent drives the instance's two clock nets as copies
//! of the same signal.

use std::collections::HashMap;

/// What the pass did to one Verilog text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// rust-hdl RAM modules found.
    pub rams: usize,
    /// RAMs whose read and write now share one block.
    pub merged: usize,
}

/// rust-hdl's two clocked blocks of a RAM, as they appear in its module.
const READ_WRITE: &str = "    always @(posedge read_clock) begin
       read_data <= mem[read_address];
    end
    
    always @(posedge write_clock) begin
       if (write_enable) begin
          mem[write_address] <= write_data;
       end
    end";

/// The merged block.
const MERGED: &str = "    // weft_hdl::ram_merge: both ports are on one clock, so one block
    // reads the old word and then writes it (read-first, no delayed write).
    always @(posedge write_clock) begin
       read_data <= mem[read_address];
       if (write_enable) begin
          /* verilator lint_off BLKSEQ */
          // Blocking: only the read above reads mem, and it came first.
          mem[write_address] = write_data;
          /* verilator lint_on BLKSEQ */
       end
    end";

/// The read clock's port declaration in rust-hdl's RAM module.
const READ_CLOCK_PORT: &str = "    input wire  read_clock;";

/// Its declaration once the merged block uses only the write clock.
const READ_CLOCK_UNUSED: &str = "    /* verilator lint_off UNUSEDSIGNAL */
    // The same clock as write_clock (the parent wires both to one net).
    input wire  read_clock;
    /* verilator lint_on UNUSEDSIGNAL */";

/// One module of a Verilog text: its name and the byte range of its text.
struct Module {
    name: String,
    start: usize,
    end: usize,
}

fn modules(verilog: &str) -> Vec<Module> {
    let mut out = vec![];
    let mut at = 0;
    while let Some(i) = verilog[at..].find("\nmodule ").map(|i| at + i + 1) {
        let Some(e) = verilog[i..]
            .find("\nendmodule")
            .map(|e| i + e + "\nendmodule".len())
        else {
            break;
        };
        let name = verilog[i + "module ".len()..]
            .split(['(', ';', ' '])
            .next()
            .unwrap_or_default()
            .to_string();
        out.push(Module {
            name,
            start: i,
            end: e,
        });
        at = e;
    }
    out
}

/// Whether `body` is rust-hdl's RAM module: its two blocks once, no other
/// clocked block.
fn is_ram(body: &str) -> bool {
    body.matches(READ_WRITE).count() == 1
        && body.matches("always @(posedge").count() == 2
        && body.matches(READ_CLOCK_PORT).count() == 1
}

/// The net an instance's port `port` is connected to, in the instance text
/// starting at `inst`.
fn port_net<'a>(inst: &'a str, port: &str) -> Option<&'a str> {
    let key = format!(".{port}(");
    let i = inst.find(&key)? + key.len();
    let e = inst[i..].find(')')? + i;
    Some(inst[i..e].trim())
}

/// The signal `net` is a copy of in `parent` (`net = s;`, its only
/// assignment), if it is one.
fn copy_of<'a>(parent: &'a str, net: &str) -> Option<&'a str> {
    let key = format!("{net} = ");
    let mut found = None;
    for line in parent.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix(&key) {
            let src = rest.strip_suffix(';')?;
            let simple = !src.is_empty()
                && src
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
            if !simple || found.is_some() {
                return None;
            }
            found = Some(src);
        } else if t.starts_with(&format!("{net} <=")) {
            return None;
        }
    }
    found
}

/// Merge the read and write of every RAM whose ports share one clock.
pub fn merge(verilog: &str) -> (String, MergeStats) {
    let mods = modules(verilog);
    let mut stats = MergeStats::default();
    let rams: Vec<&Module> = mods
        .iter()
        .filter(|m| is_ram(&verilog[m.start..m.end]))
        .collect();
    stats.rams = rams.len();
    let mut replace: HashMap<usize, String> = HashMap::new();
    for ram in rams {
        // Its instances: `<module> <instance>(` in any module.
        let needle = format!("    {} ", ram.name);
        let instances: Vec<(&Module, usize)> = mods
            .iter()
            .flat_map(|m| {
                let text = &verilog[m.start..m.end];
                text.match_indices(&needle)
                    .map(move |(i, _)| (m, m.start + i))
            })
            .collect();
        let [(parent, at)] = instances[..] else {
            continue;
        };
        let inst = &verilog[at..parent.end];
        let inst = &inst[..inst.find(");").unwrap_or(inst.len())];
        let body = &verilog[parent.start..parent.end];
        let (Some(r), Some(w)) = (port_net(inst, "read_clock"), port_net(inst, "write_clock"))
        else {
            continue;
        };
        let same =
            r == w || matches!((copy_of(body, r), copy_of(body, w)), (Some(a), Some(b)) if a == b);
        if !same {
            continue;
        }
        let text = verilog[ram.start..ram.end]
            .replacen(READ_WRITE, MERGED, 1)
            .replacen(READ_CLOCK_PORT, READ_CLOCK_UNUSED, 1);
        replace.insert(ram.start, text);
        stats.merged += 1;
    }
    let mut out = String::with_capacity(verilog.len() + 512 * stats.merged);
    let mut at = 0;
    for m in &mods {
        if let Some(t) = replace.get(&m.start) {
            out.push_str(&verilog[at..m.start]);
            out.push_str(t);
            at = m.end;
        }
    }
    out.push_str(&verilog[at..]);
    (out, stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ram(name: &str) -> String {
        format!(
            "\nmodule {name}(read_address,read_clock,read_data,write_address,write_clock,write_data,write_enable);
    input wire  [3:0] read_address;
{READ_CLOCK_PORT}
    output reg  [7:0] read_data;
    input wire  [3:0] write_address;
    input wire  write_clock;
    input wire  [7:0] write_data;
    input wire  write_enable;
    reg[7:0] mem[15:0];
{READ_WRITE}
endmodule // {name}
"
        )
    }

    fn parent(read_src: &str, write_src: &str) -> String {
        format!(
            "\nmodule top(clock, other);
    input wire clock;
    input wire other;
    reg  m$read_clock;
    reg  m$write_clock;
    top$m m(
        .read_address(a),
        .read_clock(m$read_clock),
        .read_data(d),
        .write_address(a),
        .write_clock(m$write_clock),
        .write_data(d),
        .write_enable(e)
    );
    always @(*) begin
        m$read_clock = {read_src};
    end
    always @(*) begin
        m$write_clock = {write_src};
    end
endmodule // top
"
        )
    }

    #[test]
    fn merges_a_ram_on_one_clock() {
        let v = parent("clock", "clock") + &ram("top$m");
        let (out, stats) = merge(&v);
        assert_eq!(stats, MergeStats { rams: 1, merged: 1 });
        assert!(out.contains(MERGED), "{out}");
        assert!(!out.contains("always @(posedge read_clock)"), "{out}");
        assert!(out.contains(READ_CLOCK_UNUSED), "{out}");
        // The parent is untouched.
        assert!(out.starts_with(&parent("clock", "clock")), "{out}");
    }

    #[test]
    fn leaves_a_ram_on_two_clocks() {
        let v = parent("clock", "other") + &ram("top$m");
        let (out, stats) = merge(&v);
        assert_eq!(stats, MergeStats { rams: 1, merged: 0 });
        assert_eq!(out, v);
    }

    #[test]
    fn leaves_a_ram_whose_clock_is_not_a_copy() {
        let v = parent("clock & other", "clock") + &ram("top$m");
        assert_eq!(merge(&v).1.merged, 0);
    }

    #[test]
    fn leaves_a_module_that_is_not_rust_hdls_ram() {
        let odd = ram("top$m").replace(
            "    reg[7:0] mem[15:0];",
            "    reg[7:0] mem[15:0];\n    always @(posedge write_clock) begin\n    end",
        );
        let v = parent("clock", "clock") + &odd;
        assert_eq!(merge(&v).1, MergeStats { rams: 0, merged: 0 });
    }
}
