//! MemOps: bounded, transaction-aware operators for a scale-up switch port
//! (weft-hdl `memops`): transactions, programs, the reference model of the
//! port, and accelerator memories on its ports.
//!
//! A request (read, write or atomic add of 1 to 8 bytes) enters the port
//! from a source port and walks the program's stages in priority order.
//! Each stage that matches (source in its mask, opcode in its set, address
//! in its range — the address as remapped by earlier stages) applies its
//! action: route to a destination port, remap the address by an offset
//! (the result must stay in the stage's target range), count, mirror the
//! header to the telemetry port, turn a write into an atomic add
//! (reduce-on-write) or block. Then, whatever the program did, the port's
//! protection table decides: a request is issued to its destination only if
//! one of that destination's ranges permits the access for every byte it
//! touches. Every request completes to its requester with its own tag.

pub mod cycle;
pub mod driver;
pub mod model;
pub mod program;

pub use cycle::MemopsCycle;
pub use model::{decide, predict, Endpoint, Marks, MemopsModel, Outcome, Prediction, Telemetry};
pub use program::{Action, Program, ProgramError, Range, Stage};

/// Switch ports (sources and destinations are the same ports).
pub const PORTS: usize = 4;
/// Operator stages.
pub const STAGES: usize = 8;
/// Protection ranges per destination.
pub const RANGES: usize = 4;
/// Outstanding requests the port tracks (switch tags).
pub const TAGS: usize = 16;

/// A transaction opcode.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    /// Read `len` bytes.
    Read = 0,
    /// Write `len` bytes.
    Write = 1,
    /// Atomic fetch-and-add of a `len`-byte little-endian integer.
    AtomicAdd = 2,
}

impl Op {
    /// From the 2-bit code.
    pub fn from_code(c: u8) -> Option<Op> {
        Some(match c {
            0 => Op::Read,
            1 => Op::Write,
            2 => Op::AtomicAdd,
            _ => return None,
        })
    }
    /// Whether the op changes memory.
    pub fn writes(self) -> bool {
        self != Op::Read
    }
}

/// A request as it enters (or leaves) the port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// Source port (the requester).
    pub src: u8,
    /// Opcode.
    pub op: Op,
    /// Byte address.
    pub addr: u64,
    /// Bytes, 1..=8, not crossing an 8-byte boundary.
    pub len: u8,
    /// The requester's tag.
    pub tag: u8,
    /// Write data or addend, little-endian in the low `len` bytes.
    pub data: u64,
}

impl Request {
    /// Whether `len` and `addr` are a valid shape (1..=8 bytes inside one
    /// 8-byte word).
    pub fn well_formed(&self) -> bool {
        (1..=8).contains(&self.len) && (self.addr % 8) + self.len as u64 <= 8
    }
}

/// Completion status.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    /// Done.
    Ok = 0,
    /// Refused: blocked by the program or outside the destination's
    /// permitted ranges.
    Denied = 1,
    /// No route, a remap out of its target range, or a malformed request.
    Error = 2,
}

impl Status {
    /// From the 2-bit code.
    pub fn from_code(c: u8) -> Option<Status> {
        Some(match c {
            0 => Status::Ok,
            1 => Status::Denied,
            2 => Status::Error,
            _ => return None,
        })
    }
}

/// A completion to a requester.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Completion {
    /// The requester's port.
    pub dst: u8,
    /// The requester's tag.
    pub tag: u8,
    /// Status.
    pub status: Status,
    /// Read data or the atomic's old value (0 otherwise).
    pub data: u64,
}

/// A request issued to a destination port.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Issued {
    /// Destination port.
    pub dst: u8,
    /// The request as transformed by the program.
    pub req: Request,
}
