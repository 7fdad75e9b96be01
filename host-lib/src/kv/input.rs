//! The tuple file of `weft agg kv --input FILE`.
//!
//! One tuple per line: `worker key value` in decimal, separated by spaces
//! or tabs; `worker` in `0..workers`, `key` a `u32`, `value` an `i32`. Blank
//! lines are skipped and `#` starts a comment that runs to the end of the
//! line. Any bad line is an error naming its line number, and the whole
//! file is refused.

use super::{KvError, Result};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

/// One input tuple.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Tuple {
    /// The worker that sends it.
    pub worker: usize,
    /// Key.
    pub key: u32,
    /// Value.
    pub value: i32,
}

/// Parse a tuple file's bytes; worker ids must be below `workers`.
pub fn parse(bytes: &[u8], workers: usize) -> Result<Vec<Tuple>> {
    let mut out = vec![];
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let err = |msg: String| KvError::Input { line, msg };
        let text = std::str::from_utf8(raw).map_err(|_| err("not UTF-8 text".into()))?;
        let text = text.split('#').next().unwrap_or("");
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let [w, k, v] = fields[..] else {
            return Err(err(format!(
                "expected `worker key value`, found {} field(s)",
                fields.len()
            )));
        };
        let worker: usize = w
            .parse()
            .map_err(|_| err(format!("worker {w:?} is not a non-negative integer")))?;
        if worker >= workers {
            return Err(err(format!(
                "worker {worker} is out of range (workers 0..{workers})"
            )));
        }
        let key: u32 = k
            .parse()
            .map_err(|_| err(format!("key {k:?} is not a u32 (0..=4294967295)")))?;
        let value: i32 = v.parse().map_err(|_| {
            err(format!(
                "value {v:?} is not an i32 (-2147483648..=2147483647)"
            ))
        })?;
        out.push(Tuple { worker, key, value });
    }
    Ok(out)
}

/// Read and parse a tuple file.
pub fn read(path: &Path, workers: usize) -> Result<Vec<Tuple>> {
    let bytes = std::fs::read(path).map_err(|source| KvError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse(&bytes, workers)
}

/// Write tuples in the file format.
pub fn write(mut w: impl Write, tuples: &[Tuple]) -> std::io::Result<()> {
    for t in tuples {
        writeln!(w, "{} {} {}", t.worker, t.key, t.value)?;
    }
    Ok(())
}

/// The exact per-key sums of `tuples`, computed directly.
pub fn exact_sums(tuples: &[Tuple]) -> HashMap<u32, i64> {
    let mut sums = HashMap::new();
    for t in tuples {
        *sums.entry(t.key).or_insert(0) += t.value as i64;
    }
    sums
}

/// Sums sorted by key.
pub fn sorted(sums: &HashMap<u32, i64>) -> Vec<(u32, i64)> {
    let mut v: Vec<_> = sums.iter().map(|(k, s)| (*k, *s)).collect();
    v.sort_unstable();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_comments_blanks_and_extremes() {
        let t = parse(
            b"# header\n\n0 1 2\n 1\t4294967295 -2147483648 # tail\r\n2 0 2147483647",
            3,
        )
        .unwrap();
        assert_eq!(
            t,
            vec![
                Tuple {
                    worker: 0,
                    key: 1,
                    value: 2
                },
                Tuple {
                    worker: 1,
                    key: u32::MAX,
                    value: i32::MIN
                },
                Tuple {
                    worker: 2,
                    key: 0,
                    value: i32::MAX
                },
            ]
        );
    }

    #[test]
    fn bad_lines_name_their_number() {
        for (text, line, what) in [
            (&b"0 1 2\n0 1\n"[..], 2, "found 2"),
            (b"0 1 2\n\n0 1 2 3", 3, "found 4"),
            (b"4 1 2", 1, "out of range"),
            (b"-1 1 2", 1, "worker"),
            (b"0 4294967296 2", 1, "u32"),
            (b"0 1 2147483648", 1, "i32"),
            (b"0 1 x", 1, "i32"),
            (b"#\n0 1 2\n\xff 1 2", 3, "UTF-8"),
        ] {
            let e = parse(text, 4).unwrap_err().to_string();
            assert!(e.starts_with(&format!("line {line}: ")), "{e}");
            assert!(e.contains(what), "{e}");
        }
    }
}
