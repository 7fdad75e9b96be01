//! Accelerator Virtual Memory (after NicOS): the reference model of the
//! `avm` block, the shared on-chip pool of named consumers.
//!
//! The pool has [`PAGES`] physical pages of [`PAGE_WORDS`] 32-bit words in
//! one RAM with a single port, shared by [`CONSUMERS`] consumer ports. Each
//! consumer addresses [`VPAGES`] virtual pages of its own, mapped to
//! physical pages by a table only the control plane writes (through the
//! register map); an access outside its mapped pages is refused with an
//! error response and counted as a fault, and touches nothing. Pages are
//! granted within a consumer's quota (and zeroed before anyone can reach
//! them) and reclaimed down to its reservation, the consumer told of each
//! page taken. Every cycle the arbiter grants one waiting request: first
//! come, first served (the unmanaged baseline), or — managed — the highest
//! waiting priority class first and weighted round-robin inside it. Each
//! consumer keeps counters and a log2 histogram of request-to-response
//! latency, which software reads as one consistent snapshot.
//!
//! [`model::AvmModel`] is the cycle-accurate specification the RTL
//! (`weft_hdl::avm`) is checked against in both simulators;
//! [`driver::AvmDriver`] plays traffic and control scripts against any of
//! them.

pub mod driver;
pub mod model;

pub use model::AvmModel;

/// Consumer ports.
pub const CONSUMERS: usize = weft_regs::avm::CONSUMERS;
/// log2 of the physical pages.
pub const PAGE_BITS: u32 = 4;
/// Physical pages in the pool.
pub const PAGES: usize = 1 << PAGE_BITS;
/// log2 of the words in a page.
pub const OFFSET_BITS: u32 = 6;
/// 32-bit words per page.
pub const PAGE_WORDS: usize = 1 << OFFSET_BITS;
/// log2 of the virtual pages of a consumer.
pub const VPAGE_BITS: u32 = 3;
/// Virtual pages per consumer.
pub const VPAGES: usize = 1 << VPAGE_BITS;
/// Bits of a consumer's virtual word address.
pub const VADDR_BITS: u32 = VPAGE_BITS + OFFSET_BITS;
/// Requests each consumer's queue holds.
pub const DEPTH: usize = 4;
/// Buckets of the latency histogram (bucket `b`: `[2^b, 2^(b+1))` cycles).
pub const BUCKETS: usize = 16;
/// Cycles from a grant to its response (translation register, RAM read).
pub const ACCESS_CYCLES: u32 = 2;
/// The `GEOMETRY` register of this build.
pub const GEOMETRY: u32 = CONSUMERS as u32
    | (PAGES as u32) << 8
    | OFFSET_BITS << 16
    | (VPAGES as u32) << 20
    | (DEPTH as u32) << 28;

/// `CMD.OP` codes.
pub mod op {
    /// Map a free physical page at virtual page `ARG`.
    pub const GRANT: u32 = 1;
    /// Take back up to `ARG` pages, never below the reservation.
    pub const RECLAIM: u32 = 2;
}

/// `STATUS.RESULT` codes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CmdResult {
    /// Done.
    Ok = 0,
    /// The consumer holds its quota already.
    Quota = 1,
    /// No free physical page.
    Full = 2,
    /// The virtual page is mapped already or outside the table.
    Page = 3,
    /// A command was still running.
    Busy = 4,
    /// A limits write with the reservation above the quota.
    Limits = 5,
    /// Unknown opcode.
    Op = 6,
}

impl CmdResult {
    /// Decode a `STATUS.RESULT` value.
    pub fn from_code(c: u32) -> Option<CmdResult> {
        Some(match c {
            0 => CmdResult::Ok,
            1 => CmdResult::Quota,
            2 => CmdResult::Full,
            3 => CmdResult::Page,
            4 => CmdResult::Busy,
            5 => CmdResult::Limits,
            6 => CmdResult::Op,
            _ => return None,
        })
    }
}

/// The histogram bucket of a latency: floor(log2), 0 for 0.
pub fn bucket(latency: u32) -> usize {
    let l = latency & 0xffff;
    if l == 0 {
        0
    } else {
        31 - l.leading_zeros() as usize
    }
}

/// The `CMD` word of a command.
pub fn cmd_word(op: u32, consumer: usize, arg: u32) -> u32 {
    (op & 3) | ((consumer as u32 & 3) << 4) | ((arg & 0xff) << 8)
}

crate::ports! {
    /// Inputs of the `avm` block.
    pub struct AvmIn {
        /// Per consumer: a request is offered.
        pub req_valid: u8 = 4,
        /// Per consumer: the request writes.
        pub req_write: u8 = 4,
        /// Per consumer `c`: virtual word address at bits `9c+8:9c`.
        pub req_addr: u64 = 36,
        /// Per consumer `c`: write data at bits `32c+31:32c`.
        pub req_wdata: [u32; 4] = 128,
        /// Engine register read address (word).
        pub eng_raddr: u16 = 14,
        /// Engine register read accepted.
        pub eng_re: bool = 1,
        /// Engine register write address (word).
        pub eng_waddr: u16 = 14,
        /// Engine register write data.
        pub eng_wdata: u32 = 32,
        /// Engine register write strobes.
        pub eng_wstrb: u8 = 4,
        /// Engine register write enable.
        pub eng_we: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the `avm` block.
    pub struct AvmOut {
        /// Per consumer: its queue takes a request this cycle.
        pub req_ready: u8 = 4,
        /// A response.
        pub resp_valid: bool = 1,
        /// The consumer it answers.
        pub resp_consumer: u8 = 2,
        /// The access was refused (outside the consumer's pages).
        pub resp_fault: bool = 1,
        /// Read data (0 for writes and faults).
        pub resp_data: u32 = 32,
        /// A page was reclaimed.
        pub reclaim_valid: bool = 1,
        /// From this consumer.
        pub reclaim_consumer: u8 = 2,
        /// Its virtual page.
        pub reclaim_vpage: u8 = 3,
        /// Engine register read data.
        pub eng_rdata: u32 = 32,
    }
}

#[cfg(test)]
mod tests;
