//! MemOps programs: stages, actions, the protection table, and the image
//! the port's program memory holds (written through `memops.PROG_ADDR` /
//! `memops.PROG_DATA`).
//!
//! Image layout, 32-bit words:
//! - stage `i` at word `16 i`: `+0` control (bits 3:0 source mask, 4 read,
//!   5 write, 6 atomic, 7 enabled, 11:8 action, 13:12 port), `+1/+2` match
//!   range start (low, high word), `+3/+4` match range end (inclusive),
//!   `+5/+6` remap offset (two's complement), `+7/+8` target start,
//!   `+9/+10` target end (inclusive);
//! - protection range `r` of destination `d` at word
//!   `0x80 + 8 (d * RANGES + r)`: `+0/+1` start, `+2/+3` end (inclusive),
//!   `+4` permissions (bit 0 read, bit 1 write; 0 = unused).

use super::{Op, PORTS, RANGES, STAGES};

/// Words in the program image.
pub const IMAGE_WORDS: usize = 0x100;
/// First word of the protection table.
pub const PROTECT_BASE: usize = 0x80;
/// Words per stage.
pub const STAGE_WORDS: usize = 16;
/// Words per protection range.
pub const RANGE_WORDS: usize = 8;

/// Action codes in the control word.
pub mod code {
    /// No action (the stage only matches).
    pub const NONE: u32 = 0;
    /// Route.
    pub const ROUTE: u32 = 1;
    /// Remap.
    pub const REMAP: u32 = 2;
    /// Count.
    pub const COUNT: u32 = 3;
    /// Mirror.
    pub const MIRROR: u32 = 4;
    /// Reduce-on-write.
    pub const REDUCE: u32 = 5;
    /// Block.
    pub const BLOCK: u32 = 6;
}

/// What a matching stage does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send the request to this destination port.
    Route(u8),
    /// Add `offset` (wrapping) to the address; the result must lie in
    /// `target` (inclusive), else the request completes with an error.
    Remap {
        /// Offset added to the address.
        offset: u64,
        /// Inclusive target range.
        target: (u64, u64),
    },
    /// Count transactions and bytes in this stage's counter.
    Count,
    /// Copy the header to the telemetry port.
    Mirror,
    /// A write becomes an atomic add at its destination.
    ReduceOnWrite,
    /// Complete with `Denied`; later stages do not run.
    Block,
}

/// One stage.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Stage {
    /// Source ports it matches (bit p = port p).
    pub src_mask: u8,
    /// Opcodes it matches (bit 0 read, 1 write, 2 atomic).
    pub ops: u8,
    /// Inclusive address range it matches.
    pub range: (u64, u64),
    /// What it does.
    pub action: Action,
}

impl Stage {
    /// Whether the stage matches a request.
    pub fn matches(&self, src: u8, op: Op, addr: u64) -> bool {
        self.src_mask & (1 << src) != 0
            && self.ops & (1 << op as u8) != 0
            && (self.range.0..=self.range.1).contains(&addr)
    }
}

/// A permitted range of a destination's memory.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Range {
    /// Inclusive start.
    pub lo: u64,
    /// Inclusive end.
    pub hi: u64,
    /// Reads permitted.
    pub read: bool,
    /// Writes and atomics permitted.
    pub write: bool,
}

impl Range {
    /// Whether `[addr, addr + len)` lies inside and `op` is permitted.
    pub fn permits(&self, op: Op, addr: u64, len: u8) -> bool {
        let Some(end) = addr.checked_add(len as u64 - 1) else {
            return false;
        };
        let perm = if op.writes() { self.write } else { self.read };
        perm && self.lo <= addr && end <= self.hi
    }
}

impl Stage {
    /// The stage a stage's image words hold (`w[0]` control, then the
    /// operands; missing words are 0), or `None` when it is disabled or its
    /// action code is none or unknown: such a stage matches nothing.
    pub fn from_words(w: &[u32]) -> Option<Stage> {
        let c = word(w, 0);
        if c >> 7 & 1 == 0 {
            return None;
        }
        let action = match c >> 8 & 0xf {
            code::ROUTE => Action::Route((c >> 12 & 3) as u8),
            code::REMAP => Action::Remap {
                offset: word64(w, 5),
                target: (word64(w, 7), word64(w, 9)),
            },
            code::COUNT => Action::Count,
            code::MIRROR => Action::Mirror,
            code::REDUCE => Action::ReduceOnWrite,
            code::BLOCK => Action::Block,
            _ => return None,
        };
        Some(Stage {
            src_mask: (c & 0xf) as u8,
            ops: (c >> 4 & 7) as u8,
            range: (word64(w, 1), word64(w, 3)),
            action,
        })
    }
}

impl Range {
    /// The range a protection entry's image words hold (`+0/+1` start,
    /// `+2/+3` end, `+4` permissions; missing words are 0), or `None` when
    /// it permits nothing (unused).
    pub fn from_words(w: &[u32]) -> Option<Range> {
        let perm = word(w, 4);
        (perm & 3 != 0).then(|| Range {
            lo: word64(w, 0),
            hi: word64(w, 2),
            read: perm & 1 != 0,
            write: perm & 2 != 0,
        })
    }
}

fn word(w: &[u32], i: usize) -> u32 {
    w.get(i).copied().unwrap_or(0)
}

fn word64(w: &[u32], i: usize) -> u64 {
    word(w, i) as u64 | (word(w, i + 1) as u64) << 32
}

/// The words of `img` from `base` on (none past its end).
fn from(img: &[u32], base: usize) -> &[u32] {
    img.get(base..).unwrap_or(&[])
}

/// A whole program: stages in priority order and the protection table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Program {
    /// Stages, evaluated in this order (at most [`STAGES`]).
    pub stages: Vec<Stage>,
    /// Per destination, up to [`RANGES`] permitted ranges.
    pub protect: Vec<Vec<Range>>,
}

/// A program that cannot be turned into an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProgramError(pub String);

impl std::error::Error for ProgramError {}

impl std::fmt::Display for ProgramError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn split(v: u64) -> [u32; 2] {
    [v as u32, (v >> 32) as u32]
}

impl Program {
    /// The program an image holds (what the port runs after the image is
    /// written through `PROG_ADDR`/`PROG_DATA`). Stage `i` of the image is
    /// stage `i` of the program, so telemetry indices agree; a disabled
    /// stage, or one with no action, matches nothing. Ranges with no
    /// permission are unused. Words past the image are ignored, missing
    /// words are 0.
    pub fn from_image(img: &[u32]) -> Program {
        let stages = (0..STAGES)
            .map(|i| {
                let b = i * STAGE_WORDS;
                Stage::from_words(from(img, b)).unwrap_or(Stage {
                    src_mask: 0,
                    ops: 0,
                    range: (1, 0),
                    action: Action::Count,
                })
            })
            .collect();
        let protect = (0..PORTS)
            .map(|d| {
                (0..RANGES)
                    .filter_map(|r| {
                        let b = PROTECT_BASE + RANGE_WORDS * (d * RANGES + r);
                        Range::from_words(from(img, b))
                    })
                    .collect()
            })
            .collect();
        Program { stages, protect }
    }

    /// The program memory image: `(word, value)` for every word.
    pub fn image(&self) -> Result<Vec<u32>, ProgramError> {
        if self.stages.len() > STAGES {
            return Err(ProgramError(format!(
                "{} stages; the port has {STAGES}",
                self.stages.len()
            )));
        }
        if self.protect.len() > PORTS || self.protect.iter().any(|r| r.len() > RANGES) {
            return Err(ProgramError(format!(
                "the protection table has {PORTS} destinations of {RANGES} ranges"
            )));
        }
        let mut img = vec![0u32; IMAGE_WORDS];
        for (i, s) in self.stages.iter().enumerate() {
            let (action, port) = match s.action {
                Action::Route(p) if (p as usize) < PORTS => (code::ROUTE, p as u32),
                Action::Route(p) => {
                    return Err(ProgramError(format!("stage {i}: no port {p}")));
                }
                Action::Remap { .. } => (code::REMAP, 0),
                Action::Count => (code::COUNT, 0),
                Action::Mirror => (code::MIRROR, 0),
                Action::ReduceOnWrite => (code::REDUCE, 0),
                Action::Block => (code::BLOCK, 0),
            };
            let w = &mut img[i * STAGE_WORDS..(i + 1) * STAGE_WORDS];
            w[0] = (s.src_mask as u32 & 0xf)
                | (s.ops as u32 & 0x7) << 4
                | 1 << 7
                | action << 8
                | port << 12;
            w[1..3].copy_from_slice(&split(s.range.0));
            w[3..5].copy_from_slice(&split(s.range.1));
            if let Action::Remap { offset, target } = s.action {
                w[5..7].copy_from_slice(&split(offset));
                w[7..9].copy_from_slice(&split(target.0));
                w[9..11].copy_from_slice(&split(target.1));
            }
        }
        for (d, ranges) in self.protect.iter().enumerate() {
            for (r, range) in ranges.iter().enumerate() {
                let base = PROTECT_BASE + RANGE_WORDS * (d * RANGES + r);
                let w = &mut img[base..base + RANGE_WORDS];
                w[0..2].copy_from_slice(&split(range.lo));
                w[2..4].copy_from_slice(&split(range.hi));
                w[4] = range.read as u32 | (range.write as u32) << 1;
            }
        }
        Ok(img)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_reads_back_as_a_program_that_behaves_the_same() {
        let p = Program {
            stages: vec![
                Stage {
                    src_mask: 0b0110,
                    ops: 3,
                    range: (0x100, 0x1ff),
                    action: Action::Remap {
                        offset: 0x1000,
                        target: (0x1000, 0x1fff),
                    },
                },
                Stage {
                    src_mask: 0xf,
                    ops: 7,
                    range: (0, u64::MAX),
                    action: Action::Route(2),
                },
                Stage {
                    src_mask: 1,
                    ops: 2,
                    range: (0, 0x40),
                    action: Action::Block,
                },
            ],
            protect: vec![
                vec![],
                vec![],
                vec![Range {
                    lo: 0x1000,
                    hi: 0x1fff,
                    read: true,
                    write: false,
                }],
                vec![],
            ],
        };
        let q = Program::from_image(&p.image().unwrap());
        assert_eq!(&q.stages[..3], &p.stages[..]);
        assert_eq!(q.protect, p.protect);
        assert!(q.stages[3..].iter().all(|s| !s.matches(0, Op::Read, 0)));
    }
}
