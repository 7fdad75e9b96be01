//! Seeded skewed tuple streams: `weft agg gen` and `weft agg kv --generate`.
//!
//! A Zipf stream over `keys` keys draws key rank `r` (1-based) with
//! probability proportional to `1 / r^s`: `s = 0` is uniform, `s ≈ 1` is a
//! typical skewed workload (ASK evaluates 0.99 and 1.2), one key is
//! `keys = 1`. Rank `r` becomes key `scramble(r)`, a fixed bijection on
//! `u32`, so hot keys are not simply 1, 2, 3… and spread over lanes and
//! slots as real keys would. Values are uniform in `1..=1000`; the worker
//! of each tuple is uniform in `0..workers`.

use super::input::Tuple;
use super::{KvError, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest key space the generator tabulates (its CDF is 8 bytes a key).
pub const MAX_KEYS: u32 = 1 << 24;

/// What to generate.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ZipfSpec {
    /// Zipf exponent, `>= 0`.
    pub s: f64,
    /// Distinct keys to draw from, `1..=MAX_KEYS`.
    pub keys: u32,
    /// Tuples to draw.
    pub tuples: u64,
    /// Workers to spread them over, `>= 1`.
    pub workers: usize,
    /// Seed.
    pub seed: u64,
}

impl ZipfSpec {
    /// Parse `zipf:S:KEYS:TUPLES` (workers and seed given separately).
    pub fn parse(spec: &str, workers: usize, seed: u64) -> Result<Self> {
        let bad = || {
            KvError::Generate(format!(
                "{spec:?}: expected zipf:S:KEYS:TUPLES, e.g. zipf:0.99:100000:1000000"
            ))
        };
        let parts: Vec<&str> = spec.split(':').collect();
        let ["zipf", s, keys, tuples] = parts[..] else {
            return Err(bad());
        };
        let z = Self {
            s: s.parse().map_err(|_| bad())?,
            keys: keys.parse().map_err(|_| bad())?,
            tuples: tuples.parse().map_err(|_| bad())?,
            workers,
            seed,
        };
        z.validate()?;
        Ok(z)
    }

    /// Check the parameters.
    pub fn validate(&self) -> Result<()> {
        if !(self.s.is_finite() && self.s >= 0.0) {
            return Err(KvError::Generate(format!(
                "exponent {} must be a finite number >= 0",
                self.s
            )));
        }
        if !(1..=MAX_KEYS).contains(&self.keys) {
            return Err(KvError::Generate(format!(
                "keys {} must be in 1..={MAX_KEYS}",
                self.keys
            )));
        }
        if self.workers == 0 {
            return Err(KvError::Generate("at least one worker is needed".into()));
        }
        Ok(())
    }
}

/// Rank to key: multiply by an odd constant, rotate, xor: each step is a
/// bijection on `u32`, so distinct ranks stay distinct keys.
pub fn scramble(rank: u32) -> u32 {
    rank.wrapping_mul(0x9e37_79b1).rotate_left(13) ^ 0x5bd1_e995
}

/// Draw a Zipf stream.
pub fn zipf(spec: &ZipfSpec) -> Result<Vec<Tuple>> {
    spec.validate()?;
    let mut cdf = Vec::with_capacity(spec.keys as usize);
    let mut total = 0.0f64;
    for r in 1..=spec.keys {
        total += (r as f64).powf(-spec.s);
        cdf.push(total);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let n = usize::try_from(spec.tuples)
        .map_err(|_| KvError::Generate(format!("{} tuples do not fit in memory", spec.tuples)))?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let u = rng.gen::<f64>() * total;
        let i = cdf.partition_point(|&c| c <= u).min(cdf.len() - 1);
        out.push(Tuple {
            worker: rng.gen_range(0..spec.workers),
            key: scramble(i as u32 + 1),
            value: rng.gen_range(1..=1000),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn skew_and_determinism() {
        let spec = ZipfSpec::parse("zipf:1.2:1000:20000", 4, 9).unwrap();
        let a = zipf(&spec).unwrap();
        assert_eq!(a, zipf(&spec).unwrap());
        let mut count: HashMap<u32, usize> = HashMap::new();
        for t in &a {
            *count.entry(t.key).or_default() += 1;
            assert!(t.worker < 4 && (1..=1000).contains(&t.value));
        }
        // Rank 1 takes 1/zeta(1.2) ≈ 0.2 of a 1000-key stream; rank 2 less.
        let top = count[&scramble(1)] as f64 / a.len() as f64;
        assert!((0.17..0.25).contains(&top), "{top}");
        assert!(count[&scramble(2)] < count[&scramble(1)]);
        let one = zipf(&ZipfSpec::parse("zipf:0:1:10", 1, 0).unwrap()).unwrap();
        assert!(one.iter().all(|t| t.key == scramble(1)));
    }

    #[test]
    fn bad_specs_are_refused() {
        for s in [
            "zipf:1:0:5",
            "zipf:-1:10:5",
            "zipf:x:10:5",
            "uniform:10:5",
            "zipf:1:10",
        ] {
            assert!(ZipfSpec::parse(s, 1, 0).is_err(), "{s}");
        }
    }
}
