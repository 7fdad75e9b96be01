//! Traces: one transaction per line, `src op addr len tag [data-hex]`.
//!
//! `op` is `read`, `write` or `atomic` (or `r`, `w`, `a`); `addr` is hex
//! (`0x…`) or decimal; `len` 1 to 8 bytes; `tag` 0 to 255; `data` is the
//! little-endian value in hex (writes and atomics; default 0). Blank lines
//! and `#` comments are allowed.

use super::program::parse_u64;
use weft_model::memops::{Op, Request, PORTS};

/// A trace line that cannot be read; nothing runs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("trace line {line}: {fault}: {text:?}")]
pub struct TraceError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub fault: TraceFault,
    /// The line as written.
    pub text: String,
}

/// What is wrong with a trace line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceFault {
    /// Not five or six fields.
    #[error("expected `src op addr len tag [data-hex]`")]
    Fields,
    /// `src` is not a number.
    #[error("src is not a port number")]
    Src,
    /// `src` is a number but not a port.
    #[error("src {0} is not a port (0..{ports})", ports = PORTS)]
    NoSuchPort(u8),
    /// `op` is not one of the three.
    #[error("op is not read, write or atomic")]
    Op,
    /// `addr` is not a number.
    #[error("addr is not a number")]
    Addr,
    /// `len` is not a number.
    #[error("len is not a number")]
    Len,
    /// `len` outside 1..=8 or crossing an 8-byte word.
    #[error("len must be 1 to 8 bytes inside one 8-byte word")]
    Span,
    /// `tag` is not a byte.
    #[error("tag is not 0..=255")]
    Tag,
    /// `data` is not hex.
    #[error("data is not hex")]
    Data,
}

/// Parse a trace; the error names the line.
pub fn parse_trace(text: &str) -> Result<Vec<Request>, TraceError> {
    let mut out = vec![];
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |fault: TraceFault| TraceError {
            line: n + 1,
            fault,
            text: raw.to_string(),
        };
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(5..=6).contains(&f.len()) {
            return Err(bad(TraceFault::Fields));
        }
        let src: u8 = f[0].parse().map_err(|_| bad(TraceFault::Src))?;
        if src as usize >= PORTS {
            return Err(bad(TraceFault::NoSuchPort(src)));
        }
        let op = match f[1] {
            "read" | "r" => Op::Read,
            "write" | "w" => Op::Write,
            "atomic" | "a" | "atomic-add" => Op::AtomicAdd,
            _ => return Err(bad(TraceFault::Op)),
        };
        let addr = parse_u64(f[2]).ok_or_else(|| bad(TraceFault::Addr))?;
        let len: u8 = f[3].parse().map_err(|_| bad(TraceFault::Len))?;
        if !(1..=8).contains(&len) || addr % 8 + len as u64 > 8 {
            return Err(bad(TraceFault::Span));
        }
        let tag: u8 = f[4].parse().map_err(|_| bad(TraceFault::Tag))?;
        let data = match f.get(5) {
            None => 0,
            Some(h) => u64::from_str_radix(h.trim_start_matches("0x"), 16)
                .map_err(|_| bad(TraceFault::Data))?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        let e = parse_trace("# comment\n0 read 0x10 4 1\n0 read 0x14 9 2\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert_eq!(e.fault, TraceFault::Span);
        assert_eq!(
            e.to_string(),
            r#"trace line 3: len must be 1 to 8 bytes inside one 8-byte word: "0 read 0x14 9 2""#
        );
        let e = parse_trace("9 r 0 1 1").unwrap_err();
        assert_eq!(e.fault, TraceFault::NoSuchPort(9));
        assert!(e.to_string().contains("src 9 is not a port (0..4)"), "{e}");
    }
}
