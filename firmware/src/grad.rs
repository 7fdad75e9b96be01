//! Job-priority policies for the gradient aggregation engine: job
//! descriptions and observations in, one priority per job out (the
//! `grad.PRIO_LO`/`PRIO_HI` registers).
//!
//! On the card a chunk of a higher-priority job preempts a slot held by a
//! lower-priority job (whose partial sum goes to the host fallback); jobs of
//! equal priority never preempt each other. So:
//! - [`Policy::Fifo`] gives every job the same priority: first come, first
//!   served, no preemption (the baseline without DSA);
//! - [`Policy::Static`] applies given priorities;
//! - [`Policy::Dsa`] groups jobs by communication intensity, bytes
//!   aggregated per unit of compute, as DSA ranks them: the more a job's
//!   iteration time is communication, the more it gains from in-network
//!   aggregation, so the more intensive group gets the higher priority.
//!   Jobs whose intensities are within a factor [`DSA_GAP`] of each other
//!   share a level (no preemption between them: a preemption only moves a
//!   partial sum to the host fallback, about ten times slower than the
//!   card, and between jobs of like intensity nobody gains from that);
//!   levels count up from 0, so jobs all of one intensity get exactly
//!   fifo's priorities and run exactly as under fifo. The intensity comes
//!   from a job's observed rates when there are any, else from its declared
//!   profile;
//! - [`Policy::Rank`] is the previous DSA: one level per distinct
//!   intensity, however close, the most intensive at [`PRIO_MAX`] (kept to
//!   measure the grouping against);
//! - [`Policy::Srpt`] ranks the active jobs by the gradient bytes they
//!   still have to aggregate, the least first (shortest remaining work
//!   first, with hysteresis), and is the one policy that also acts on the
//!   network: [`Policy::traffic_classes`] gives its jobs strict-priority
//!   classes at the switch port in front of the card, so the job nearest
//!   its end takes the link and the slots while the others wait, instead
//!   of all of them sharing both and finishing late together.

use crate::regs::grad::{prio_of, JOBS_PER_PRIO_REG};
pub use crate::regs::grad::{JOBS, PRIO_MAX};
use core::cmp::Ordering;

/// What a job declares when it starts.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct JobProfile {
    /// The job runs (inactive jobs get priority 0).
    pub active: bool,
    /// Gradient bytes aggregated per iteration.
    pub bytes_per_iter: u64,
    /// Compute time per iteration, in cycles.
    pub compute_per_iter: u64,
    /// Gradient bytes the job still has to aggregate (its iterations to
    /// come and what its workers have not sent of this one), as its
    /// training framework reports its progress. Only [`Policy::Srpt`]
    /// reads it.
    pub remaining_bytes: u64,
}

/// What the host observed of a job over a control window.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct JobObs {
    /// Gradient bytes the job sent.
    pub bytes: u64,
    /// Cycles the job spent computing.
    pub compute: u64,
}

impl JobObs {
    /// Whether there is anything to judge by.
    pub fn is_empty(&self) -> bool {
        self.bytes == 0 && self.compute == 0
    }
}

/// A communication intensity, bytes per cycle of compute, kept as a
/// fraction so that comparisons are exact.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Intensity {
    /// Bytes.
    pub bytes: u64,
    /// Compute cycles (0: pure communication, the most intensive).
    pub compute: u64,
}

impl Intensity {
    /// A job's intensity: observed when there is an observation, declared
    /// otherwise.
    pub fn of(profile: &JobProfile, observed: Option<&JobObs>) -> Self {
        match observed {
            Some(o) if !o.is_empty() => Intensity {
                bytes: o.bytes,
                compute: o.compute,
            },
            _ => Intensity {
                bytes: profile.bytes_per_iter,
                compute: profile.compute_per_iter,
            },
        }
    }

    /// 0 for no bytes (the least, whatever the compute), 2 for bytes
    /// with no compute (pure communication, the most), 1 otherwise.
    fn class(&self) -> u8 {
        match (self.bytes, self.compute) {
            (0, _) => 0,
            (_, 0) => 2,
            _ => 1,
        }
    }

    /// Compare two intensities exactly: `a/b` against `c/d` as `a*d`
    /// against `c*b` in 128 bits, with no bytes the least and bytes without
    /// compute the most intensive. A total order.
    pub fn cmp_exact(&self, other: &Self) -> Ordering {
        self.class().cmp(&other.class()).then_with(|| {
            if self.class() != 1 {
                return Ordering::Equal;
            }
            let l = self.bytes as u128 * other.compute as u128;
            let r = other.bytes as u128 * self.compute as u128;
            l.cmp(&r)
        })
    }
}

/// One priority per job, each `0..=PRIO_MAX`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Priorities(pub [u8; JOBS]);

impl Priorities {
    /// Job `job`'s priority (0 for jobs the card does not have).
    pub fn get(&self, job: usize) -> u8 {
        self.0.get(job).copied().unwrap_or(0)
    }

    /// The values of `grad.PRIO_LO` and `grad.PRIO_HI`.
    pub fn registers(&self) -> [u32; 2] {
        let mut r = [0u32; 2];
        for (j, &p) in self.0.iter().enumerate() {
            let (_, f) = prio_of(j);
            let i = j / JOBS_PER_PRIO_REG;
            r[i] = f.set(r[i], p.min(PRIO_MAX) as u32);
        }
        r
    }

    /// Priorities from the two register values.
    pub fn from_registers(r: [u32; 2]) -> Self {
        let mut p = [0u8; JOBS];
        for (j, v) in p.iter_mut().enumerate() {
            let (_, f) = prio_of(j);
            *v = f.get(r[j / JOBS_PER_PRIO_REG]) as u8;
        }
        Priorities(p)
    }
}

/// A job-priority policy.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Every job the same priority: no preemption.
    Fifo,
    /// Given priorities (clamped to `PRIO_MAX`; inactive jobs keep theirs).
    Static([u8; JOBS]),
    /// Group the active jobs by communication intensity (a new level
    /// wherever an intensity exceeds the next lower one by more than
    /// [`DSA_GAP`]), levels from 0 for the least intensive group up;
    /// inactive jobs get 0.
    Dsa,
    /// Rank by communication intensity: the most intensive active job gets
    /// `PRIO_MAX`, each less intensive one a level lower; jobs of equal
    /// intensity share a level; inactive jobs get 0.
    Rank,
    /// Shortest remaining work first: the active job with the fewest
    /// remaining bytes gets the highest level, ties to the lower job index;
    /// the job on top keeps its place until another's remaining work is
    /// less than its own by [`SRPT_HYSTERESIS`] (so two jobs near the same
    /// point do not swap every control window and preempt each other's
    /// slots). The field is the previous decision.
    Srpt(Priorities),
}

impl Policy {
    /// The priorities for these jobs, with per-job observations if any.
    pub fn priorities(
        &self,
        jobs: &[JobProfile; JOBS],
        observed: Option<&[JobObs; JOBS]>,
    ) -> Priorities {
        match self {
            Policy::Fifo => fifo(),
            Policy::Static(p) => fixed(p),
            Policy::Dsa => dsa(jobs, observed),
            Policy::Rank => rank(jobs, observed),
            Policy::Srpt(prev) => srpt(jobs, prev, SRPT_HYSTERESIS),
        }
    }

    /// The traffic class of each job's packets at the switch port in front
    /// of the card (0..=7, served strictly highest first; the DSCP a job's
    /// workers mark). Only [`Policy::Srpt`] uses the classes, ranking the
    /// active jobs' distinct levels from 7 down (see [`traffic_classes`]);
    /// every other policy leaves all jobs in class 0, so they share the
    /// link as they would without classes.
    pub fn traffic_classes(&self, jobs: &[JobProfile; JOBS], p: &Priorities) -> [u8; JOBS] {
        match self {
            Policy::Srpt(_) => traffic_classes(jobs, p),
            _ => [0; JOBS],
        }
    }
}

/// [`Policy::Fifo`]: one priority for all.
pub fn fifo() -> Priorities {
    Priorities([0; JOBS])
}

/// [`Policy::Static`]: the given priorities, clamped to the register range.
pub fn fixed(p: &[u8; JOBS]) -> Priorities {
    let mut out = [0u8; JOBS];
    for (o, &v) in out.iter_mut().zip(p) {
        *o = v.min(PRIO_MAX);
    }
    Priorities(out)
}

/// [`Policy::Rank`]: dense ranking of the active jobs by intensity, the
/// most intensive at `PRIO_MAX`. With at most [`JOBS`] jobs there are
/// enough levels for every distinct intensity (the least of 16 lands on 0).
pub fn rank(jobs: &[JobProfile; JOBS], observed: Option<&[JobObs; JOBS]>) -> Priorities {
    let intensity = |j: usize| Intensity::of(&jobs[j], observed.map(|o| &o[j]));
    let mut out = [0u8; JOBS];
    for (j, o) in out.iter_mut().enumerate() {
        if !jobs[j].active {
            continue;
        }
        let me = intensity(j);
        // My level: PRIO_MAX minus the number of distinct intensities above
        // mine among the active jobs (a dense rank, so equal jobs tie).
        let above = |k: usize| jobs[k].active && intensity(k).cmp_exact(&me) == Ordering::Greater;
        let distinct = (0..JOBS)
            .filter(|&k| {
                above(k)
                    && !(0..k).any(|m| {
                        above(m) && intensity(m).cmp_exact(&intensity(k)) == Ordering::Equal
                    })
            })
            .count();
        let distinct = u8::try_from(distinct).unwrap_or(u8::MAX);
        *o = PRIO_MAX.saturating_sub(distinct);
    }
    Priorities(out)
}

/// [`Policy::Dsa`]'s grouping factor: an intensity more than twice the next
/// lower one starts a new level. Chosen by measurement on the shipped
/// scarce-slot workload (`docs/grad-aggregation.md`): 1.8 lets preemptions
/// between close jobs back in and loses a seed to fifo by more than 2%; 2.5
/// gains nothing; 3 merges groups that gain from preempting each other.
pub const DSA_GAP: (u64, u64) = (2, 1);

impl Intensity {
    /// Whether `self` exceeds `lower` (no more intensive than `self`) by
    /// more than `num / den`: in 128 bits, `self.bytes * lower.compute *
    /// den > lower.bytes * self.compute * num`, saturating (a product too
    /// large to hold is far beyond any factor of interest). No bytes and
    /// bytes without compute are each one intensity.
    pub fn exceeds(&self, lower: &Self, num: u64, den: u64) -> bool {
        match (self.class(), lower.class()) {
            (a, b) if a != b => a > b,
            (1, _) => {
                let l = (self.bytes as u128 * lower.compute as u128).saturating_mul(den as u128);
                let r = (lower.bytes as u128 * self.compute as u128).saturating_mul(num as u128);
                l > r
            }
            _ => false,
        }
    }
}

/// [`Policy::Dsa`]: the active jobs sorted by intensity, least first; each
/// one whose intensity exceeds the previous one's by more than [`DSA_GAP`]
/// starts the next level up; the least intensive group is at 0. At most
/// [`JOBS`] jobs make at most 16 levels, so every level fits the register.
pub fn dsa(jobs: &[JobProfile; JOBS], observed: Option<&[JobObs; JOBS]>) -> Priorities {
    let intensity = |j: usize| Intensity::of(&jobs[j], observed.map(|o| &o[j]));
    // Active jobs in intensity order (ties in job order): an insertion sort
    // over at most 16 entries, no allocation.
    let mut order = [0usize; JOBS];
    let mut n = 0;
    for j in (0..JOBS).filter(|&j| jobs[j].active) {
        let mut i = n;
        while i > 0 && intensity(order[i - 1]).cmp_exact(&intensity(j)) == Ordering::Greater {
            order[i] = order[i - 1];
            i -= 1;
        }
        order[i] = j;
        n += 1;
    }
    let mut out = [0u8; JOBS];
    let mut level = 0u8;
    for i in 1..n {
        let (lo, hi) = (intensity(order[i - 1]), intensity(order[i]));
        if hi.exceeds(&lo, DSA_GAP.0, DSA_GAP.1) {
            level = (level + 1).min(PRIO_MAX);
        }
        out[order[i]] = level;
    }
    Priorities(out)
}

/// Hysteresis of [`Policy::Srpt`] as a fraction (numerator, denominator):
/// the job on top stays there until another's remaining work times
/// `1 + h` is less than its own. Measured on the shipped
/// workloads (docs/grad-aggregation.md), the figures barely move between 0
/// and 1/2; 1/8 keeps swaps rare.
pub const SRPT_HYSTERESIS: (u64, u64) = (1, 8);

/// [`Policy::Srpt`] with hysteresis `h` (numerator, denominator) over the
/// previous decision `prev`: levels `n - 1` (the least remaining work)
/// down to 0 over the `n` active jobs; inactive jobs get 0.
///
/// The hysteresis is the incumbent's: the job `prev` put alone on top
/// counts its remaining work as `1 / (1 + h)` of what it is, so another
/// job takes the top only with less work by that margin. (The top is what
/// holds the link and the slots; one discount keeps the order a total
/// order, where pairwise margins between every two jobs would not be.)
pub fn srpt(jobs: &[JobProfile; JOBS], prev: &Priorities, h: (u64, u64)) -> Priorities {
    let (num, den) = (h.0 as u128, h.1.max(1) as u128);
    let active = |j: usize| jobs[j].active;
    // The previous top: the one active job at the highest level, if one is.
    let top_level = (0..JOBS).filter(|&j| active(j)).map(|j| prev.get(j)).max();
    let mut at_top = (0..JOBS).filter(|&j| active(j) && Some(prev.get(j)) == top_level);
    let incumbent = match (at_top.next(), at_top.next()) {
        (Some(j), None) => Some(j),
        _ => None,
    };
    // Remaining work scaled by den + num, the incumbent's by den only.
    let key = |j: usize| -> (u128, usize) {
        let scale = if Some(j) == incumbent { den } else { den + num };
        (jobs[j].remaining_bytes as u128 * scale, j)
    };
    // The active jobs, least key first (insertion sort: no_std, at most
    // JOBS of them).
    let mut order = [0usize; JOBS];
    let mut n = 0;
    for j in (0..JOBS).filter(|&j| active(j)) {
        let mut i = n;
        while i > 0 && key(j) < key(order[i - 1]) {
            order[i] = order[i - 1];
            i -= 1;
        }
        order[i] = j;
        n += 1;
    }
    let mut out = [0u8; JOBS];
    for (i, &j) in order[..n].iter().enumerate() {
        out[j] = (n - 1 - i).min(PRIO_MAX as usize) as u8;
    }
    Priorities(out)
}

/// Strict-priority traffic classes for priorities `p`: the active jobs'
/// distinct levels ranked, the highest in class 7, the next in 6, and so
/// on; with more than seven distinct levels the lowest share class 1.
/// Inactive jobs get class 0.
pub fn traffic_classes(jobs: &[JobProfile; JOBS], p: &Priorities) -> [u8; JOBS] {
    let level = |j: usize| p.get(j).min(PRIO_MAX);
    let mut out = [0u8; JOBS];
    for j in (0..JOBS).filter(|&j| jobs[j].active) {
        let me = level(j);
        // Distinct levels above mine.
        let mut higher = [false; PRIO_MAX as usize + 1];
        for k in (0..JOBS).filter(|&k| jobs[k].active && level(k) > me) {
            higher[level(k) as usize] = true;
        }
        let above = higher.iter().filter(|&&b| b).count() as u8;
        out[j] = 7u8.saturating_sub(above).max(1);
    }
    out
}
