//! Scenario files: the consumers of the pool, their limits and traffic, the
//! victims and their SLO, and how long to run.
//!
//! ```toml
//! cycles = 40000      # per run
//! warmup = 10000      # cycles before latencies and throughput count
//! window = 1000       # the control loop's period (policy runs)
//! seed = 1
//!
//! [[consumer]]
//! name = "victim"
//! weight = 1          # 1..=255
//! priority = 0        # 0..=3
//! quota = 2           # pages, at most 16
//! reserve = 1
//! pages = 2           # granted at the start, at most the quota
//! slo_p99 = 8         # cycles; makes it a victim
//! start = 0           # cycle its traffic starts
//! [consumer.traffic]
//! rate = 0.05         # requests per cycle, 0..=1
//! burst = 1           # requests arriving together
//! write = 0.3         # fraction of writes
//! pattern = "uniform" # uniform | sequential | hotspot
//! ```

use super::AvmError;
use serde::Deserialize;
use weft_model::avm as m;

/// How a consumer picks addresses inside its pages.
#[derive(Copy, Clone, Debug, Default, Deserialize, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Any word of its pages.
    #[default]
    Uniform,
    /// One word after another, wrapping.
    Sequential,
    /// Nine in ten to its first eight words.
    Hotspot,
}

/// A consumer's traffic.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Traffic {
    /// Requests per cycle on average.
    pub rate: f64,
    /// Requests arriving together.
    #[serde(default = "one")]
    pub burst: u32,
    /// Fraction of writes.
    #[serde(default)]
    pub write: f64,
    /// Address pattern.
    #[serde(default)]
    pub pattern: Pattern,
}

fn one() -> u32 {
    1
}

/// A consumer.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Consumer {
    /// Name.
    pub name: String,
    /// Arbitration weight.
    #[serde(default = "one")]
    pub weight: u32,
    /// Priority class.
    #[serde(default)]
    pub priority: u32,
    /// Page quota.
    pub quota: u32,
    /// Page reservation.
    #[serde(default)]
    pub reserve: u32,
    /// Pages granted at the start.
    pub pages: u32,
    /// p99 latency objective in cycles: the consumer is a victim.
    pub slo_p99: Option<u64>,
    /// Cycle its traffic starts (0: from the start). Aggressors that start
    /// after the victims have settled make contention begin mid-run.
    #[serde(default)]
    pub start: u64,
    /// Traffic.
    pub traffic: Traffic,
}

/// A scenario.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Cycles per run.
    pub cycles: u64,
    /// Cycles before measurement starts (the control loop settles).
    #[serde(default)]
    pub warmup: u64,
    /// Cycles between policy decisions.
    #[serde(default = "window")]
    pub window: u64,
    /// Traffic seed.
    #[serde(default)]
    pub seed: u64,
    /// Consumers, one per pool port.
    #[serde(rename = "consumer")]
    pub consumers: Vec<Consumer>,
}

fn window() -> u64 {
    1000
}

/// The shipped scenarios (`examples/avm/`), by name: the presets.
pub const PRESETS: [(&str, &str); 6] = [
    (
        "contention",
        include_str!("../../../examples/avm/contention.toml"),
    ),
    (
        "victims",
        include_str!("../../../examples/avm/victims.toml"),
    ),
    (
        "bursty-victim",
        include_str!("../../../examples/avm/bursty-victim.toml"),
    ),
    (
        "overload",
        include_str!("../../../examples/avm/overload.toml"),
    ),
    (
        "mid-run",
        include_str!("../../../examples/avm/mid-run.toml"),
    ),
    (
        "infeasible",
        include_str!("../../../examples/avm/infeasible.toml"),
    ),
];

/// A preset scenario by name.
pub fn preset(name: &str) -> Result<Scenario, AvmError> {
    match PRESETS.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => parse(text),
        None => Err(AvmError::Config(format!(
            "unknown preset {name:?} (known: {})",
            PRESETS.map(|(n, _)| n).join(", ")
        ))),
    }
}

/// Parse and check a scenario.
pub fn parse(text: &str) -> Result<Scenario, AvmError> {
    let s: Scenario =
        toml::from_str(text).map_err(|e| AvmError::Scenario(e.message().to_string()))?;
    s.check()?;
    Ok(s)
}

impl Scenario {
    /// Check every field's range, naming the field that is wrong.
    pub fn check(&self) -> Result<(), AvmError> {
        let bad = |field: String, why: String| Err(AvmError::Scenario(format!("{field}: {why}")));
        if self.cycles == 0 || self.cycles > 50_000_000 {
            return bad("cycles".into(), "must be 1..=50000000".into());
        }
        if self.warmup >= self.cycles {
            return bad("warmup".into(), "must be below cycles".into());
        }
        if self.window < 200 {
            return bad(
                "window".into(),
                "at least 200 cycles (a snapshot takes about 90)".into(),
            );
        }
        if self.consumers.is_empty() || self.consumers.len() > m::CONSUMERS {
            return bad(
                "consumer".into(),
                format!("1 to {} consumers (the pool's ports)", m::CONSUMERS),
            );
        }
        let mut total_pages = 0;
        for (i, c) in self.consumers.iter().enumerate() {
            let f = |name: &str| format!("consumer[{i}] ({}).{name}", c.name);
            if c.name.is_empty() || self.consumers[..i].iter().any(|o| o.name == c.name) {
                return bad(f("name"), "must be non-empty and unique".into());
            }
            if c.weight == 0 || c.weight > 255 {
                return bad(f("weight"), "must be 1..=255".into());
            }
            if c.priority > 3 {
                return bad(f("priority"), "must be 0..=3".into());
            }
            if c.quota as usize > m::PAGES.min(m::VPAGES) {
                return bad(f("quota"), format!("at most {}", m::PAGES.min(m::VPAGES)));
            }
            if c.reserve > c.quota {
                return bad(f("reserve"), "must not exceed the quota".into());
            }
            if c.pages == 0 || c.pages > c.quota {
                return bad(f("pages"), "must be 1..=quota".into());
            }
            total_pages += c.pages;
            let t = &c.traffic;
            if !(0.0..=1.0).contains(&t.rate) {
                return bad(f("traffic.rate"), "must be 0..=1 requests per cycle".into());
            }
            if t.burst == 0 || t.burst > 64 {
                return bad(f("traffic.burst"), "must be 1..=64".into());
            }
            if !(0.0..=1.0).contains(&t.write) {
                return bad(f("traffic.write"), "must be 0..=1".into());
            }
            if c.start >= self.cycles {
                return bad(f("start"), "must be below cycles".into());
            }
            if c.slo_p99 == Some(0) {
                return bad(f("slo_p99"), "must be at least 1 cycle".into());
            }
        }
        if total_pages as usize > m::PAGES {
            return bad(
                "consumer.pages".into(),
                format!("{total_pages} pages in all; the pool has {}", m::PAGES),
            );
        }
        if !self.consumers.iter().any(|c| c.slo_p99.is_some()) {
            return bad(
                "consumer.slo_p99".into(),
                "no victim: give at least one consumer an SLO".into(),
            );
        }
        Ok(())
    }
}
