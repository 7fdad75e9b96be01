//! Traces: one transaction per line, `src op addr len tag [data-hex]`.
//!
//! `op` is `read`, `write` or `atomic` (or `r`, `w`, `a`); `addr` is hex
//! (`0x…`) or decimal; `len` 1 to 8 bytes; `tag` 0 to 255; `data` is the
//! little-endian value in hex (writes and atomics; default 0). Blank lines
//! and `#` comments are allowed.

use super::program::parse_u64;
use weft_model::memops::{Op, Request, PORTS};

/// Parse a trace; the error names the line.
pub fn parse_trace(text: &str) -> Result<Vec<Request>, String> {
    let mut out = vec![];
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &str| format!("trace line {}: {why}: {raw:?}", n + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(5..=6).contains(&f.len()) {
            return Err(bad("expected `src op addr len tag [data-hex]`"));
        }
        let src: u8 = f[0].parse().map_err(|_| bad("src is not a port number"))?;
        if src as usize >= PORTS {
            return Err(bad(&format!("src {src} is not a port (0..{PORTS})")));
        }
        let op = match f[1] {
            "read" | "r" => Op::Read,
            "write" | "w" => Op::Write,
            "atomic" | "a" | "atomic-add" => Op::AtomicAdd,
            _ => return Err(bad("op is not read, write or atomic")),
        };
        let addr = parse_u64(f[2]).ok_or_else(|| bad("addr is not a number"))?;
        let len: u8 = f[3].parse().map_err(|_| bad("len is not a number"))?;
        if !(1..=8).contains(&len) || addr % 8 + len as u64 > 8 {
            return Err(bad("len must be 1 to 8 bytes inside one 8-byte word"));
        }
        let tag: u8 = f[4].parse().map_err(|_| bad("tag is not 0..=255"))?;
        let data = match f.get(5) {
            None => 0,
            Some(h) => u64::from_str_radix(h.trim_start_matches("0x"), 16)
                .map_err(|_| bad("data is not hex"))?,
        };
        out.push(Request {
            src,
            op,
            addr,
            len,
            tag,
            data,
        });
    }
    Ok(out)
}
