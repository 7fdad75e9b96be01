//! weft's register map: one Rust description of every register block.
//!
//! This crate is the single source of truth for the card's control space.
//! The RTL (weft-hdl) builds its AXI4-Lite decode from these tables, the
//! driver (weft-driver) reads and writes through the typed [`Register`]
//! constants, and `docs/registers.md`, `docs/registers.json` and
//! `docs/weft_regs.h` are rendered from it (feature `render`); a test fails
//! when the committed copies are stale.
//!
//! The space is self-describing, after Corundum's register blocks: the ID
//! block sits at offset 0 and every block starts with a three-word header
//! (type, version, byte offset of the next block, 0 at the end of the chain),
//! so a driver can walk the chain and refuse a card whose map it does not know.
//!
//! On a card running the OpenNIC shell the map sits at BAR2 + 0x100000
//! (the 250 MHz box, AXI4-Lite slave 0); [`opennic`] holds those facts.
//!
//! `no_std`: the firmware policies link this crate too.
#![cfg_attr(not(feature = "std"), no_std)]
#![deny(missing_docs)]

pub mod map;
pub mod opennic;
#[cfg(feature = "render")]
pub mod render;
pub mod wire;

pub use map::*;

/// How software may access a register.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read-only: a write completes with SLVERR and changes nothing.
    Ro,
    /// Read-write.
    Rw,
    /// Write-only: reads return 0; writes have a side effect.
    Wo,
    /// Read, and write 1 to clear the written bits.
    W1c,
}

impl Access {
    /// Short upper-case name used in generated docs.
    pub const fn name(self) -> &'static str {
        match self {
            Access::Ro => "RO",
            Access::Rw => "RW",
            Access::Wo => "WO",
            Access::W1c => "W1C",
        }
    }
    /// Whether a write to a register with this access is accepted (OKAY).
    pub const fn writable(self) -> bool {
        !matches!(self, Access::Ro)
    }
}

/// Where a register's value comes from.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Value {
    /// A constant fixed by the map itself.
    Const(u32),
    /// A constant fixed when the card is built (see [`BuildInfo`]).
    Build(BuildField),
    /// The block header's type word (the block's `type_id`).
    HeaderType,
    /// The block header's version word (the block's `version`).
    HeaderVersion,
    /// The block header's next-block offset, derived from the chain order.
    HeaderNext,
    /// Produced by logic at run time; `reset` is its value out of reset.
    Live {
        /// Value at power-on / reset.
        reset: u32,
    },
}

/// The build-time constants of the ID block.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum BuildField {
    /// [`BuildInfo::board_id`].
    BoardId,
    /// [`BuildInfo::build_date`].
    BuildDate,
    /// [`BuildInfo::git_hash`].
    GitHash,
    /// [`BuildInfo::features`].
    Features,
}

/// Values fixed when a card image (bitstream or simulated card) is built.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct BuildInfo {
    /// Which board the image targets (see [`board`]).
    pub board_id: u32,
    /// Build date as Unix seconds (the commit time, so builds are reproducible).
    pub build_date: u32,
    /// First 32 bits of the source tree's git commit hash.
    pub git_hash: u32,
    /// Which engines are built in.
    pub features: Features,
}

bitflags::bitflags! {
    /// Feature bits of the ID block: which engines this card image contains.
    #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
    pub struct Features: u32 {
        /// The control block (scratch, cycle counter, test interrupt).
        const CTRL = 1 << 0;
        /// The key-value aggregation engine (`kv_agg`).
        const KV_AGG = 1 << 1;
        /// The gradient aggregation engine (`grad_agg`).
        const GRAD_AGG = 1 << 2;
        /// Accelerator Virtual Memory (`avm`).
        const AVM = 1 << 3;
        /// The MemOps switch port (`memops`).
        const MEMOPS = 1 << 4;
        /// The card on the wire (`net`): Ethernet/IPv4/UDP framing of every
        /// engine's traffic, addresses from registers.
        const NET = 1 << 5;
    }
}

/// A named bit field inside a register.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Field name, upper case.
    pub name: &'static str,
    /// Least significant bit.
    pub lsb: u8,
    /// Width in bits.
    pub width: u8,
    /// One-line description.
    pub doc: &'static str,
}

impl Field {
    /// The field's mask in register position.
    pub const fn mask(&self) -> u32 {
        let ones = if self.width >= 32 {
            u32::MAX
        } else {
            (1u32 << self.width) - 1
        };
        ones << self.lsb
    }
    /// Extract this field from a register value.
    pub const fn get(&self, reg: u32) -> u32 {
        (reg & self.mask()) >> self.lsb
    }
    /// Place `v` into this field of `reg`.
    pub const fn set(&self, reg: u32, v: u32) -> u32 {
        (reg & !self.mask()) | ((v << self.lsb) & self.mask())
    }
}

/// One 32-bit register at a byte address of the map (an offset from the
/// map's base; on an OpenNIC card the base is BAR2 + 0x100000, see
/// [`opennic`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Register {
    /// Register name, upper case, unique within its block.
    pub name: &'static str,
    /// Absolute byte address (block base + offset), 4-byte aligned.
    pub addr: u32,
    /// Access type.
    pub access: Access,
    /// Where the value comes from.
    pub value: Value,
    /// Named fields (empty when the register is one plain value).
    pub fields: &'static [Field],
    /// One-line description.
    pub doc: &'static str,
}

impl Register {
    /// The register's word index (address / 4).
    pub const fn word(&self) -> u32 {
        self.addr >> 2
    }
}

/// A register block: a header followed by the block's registers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Block {
    /// Block name, lower case.
    pub name: &'static str,
    /// Header type word: identifies what the block is.
    pub type_id: u32,
    /// Header version word: the block's layout version.
    pub version: u32,
    /// Absolute byte address of the block (its header).
    pub base: u32,
    /// Bytes of address space the block owns.
    pub span: u32,
    /// One-line description.
    pub doc: &'static str,
    /// Registers in address order, header first.
    pub regs: &'static [Register],
}

impl Block {
    /// Find a register of this block by name.
    pub fn reg(&self, name: &str) -> Option<&'static Register> {
        self.regs.iter().find(|r| r.name == name)
    }
}

/// The whole map: blocks in chain order.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Map {
    /// Register-map version, major in bits 31:16, minor in 15:0.
    pub version: u32,
    /// Width of the AXI4-Lite address bus in bits (the map's window is
    /// `1 << addr_bits` bytes).
    pub addr_bits: u32,
    /// Blocks in chain order; the first is the ID block at offset 0.
    pub blocks: &'static [Block],
}

impl Map {
    /// Bytes of address space the map needs.
    pub const fn span(&self) -> u32 {
        1 << self.addr_bits
    }
    /// Iterate every register with the block it belongs to, in chain order.
    pub fn registers(&self) -> impl Iterator<Item = (&'static Block, &'static Register)> {
        let blocks: &'static [Block] = self.blocks;
        blocks
            .iter()
            .flat_map(|b| b.regs.iter().map(move |r| (b, r)))
    }
    /// The register at byte address `addr`, if any (the low two bits are ignored).
    pub fn lookup(&self, addr: u32) -> Option<(&'static Block, &'static Register)> {
        let word = addr >> 2;
        self.registers().find(|(_, r)| r.word() == word)
    }
    /// The block following `block` in the chain.
    pub fn next_block(&self, block: &Block) -> Option<&'static Block> {
        let blocks: &'static [Block] = self.blocks;
        let i = blocks.iter().position(|b| b.base == block.base)?;
        blocks.get(i + 1)
    }
    /// A register's value when it is a constant of the map or of the build;
    /// `None` for live registers, whose value comes from logic.
    pub fn const_value(&self, block: &Block, reg: &Register, build: &BuildInfo) -> Option<u32> {
        Some(match reg.value {
            Value::Const(v) => v,
            Value::HeaderType => block.type_id,
            Value::HeaderVersion => block.version,
            Value::HeaderNext => self.next_block(block).map_or(0, |n| n.base),
            Value::Build(BuildField::BoardId) => build.board_id,
            Value::Build(BuildField::BuildDate) => build.build_date,
            Value::Build(BuildField::GitHash) => build.git_hash,
            Value::Build(BuildField::Features) => build.features.bits(),
            Value::Live { .. } => return None,
        })
    }
    /// The value a register reads right after reset.
    pub fn reset_value(&self, block: &Block, reg: &Register, build: &BuildInfo) -> u32 {
        match reg.value {
            Value::Live { reset } => reset,
            _ => self.const_value(block, reg, build).unwrap_or(0),
        }
    }
}

/// Check the map's invariants; returns a description of the first violation.
///
/// Used by tests and at RTL elaboration so a bad edit to the map fails loudly.
pub fn check(map: &Map) -> Result<(), &'static str> {
    let Some(first) = map.blocks.first() else {
        return Err("map has no blocks");
    };
    if first.base != 0 || first.type_id != block_type::ID {
        return Err("the ID block must be first, at offset 0");
    }
    let mut prev_end = 0u32;
    for (i, b) in map.blocks.iter().enumerate() {
        if i > 0 && b.base < prev_end {
            return Err("blocks overlap or are out of chain order");
        }
        if !b.base.is_multiple_of(4) || !b.span.is_multiple_of(4) || b.span == 0 {
            return Err("block base and span must be non-zero multiples of 4");
        }
        if b.base as u64 + b.span as u64 > map.span() as u64 {
            return Err("block extends past the map's address window");
        }
        prev_end = b.base + b.span;
        let hdr = [Value::HeaderType, Value::HeaderVersion, Value::HeaderNext];
        for (k, v) in hdr.iter().enumerate() {
            match b.regs.get(k) {
                Some(r) if r.value == *v && r.addr == b.base + 4 * k as u32 => {}
                _ => return Err("every block must start with the 3-word header"),
            }
        }
        for (j, r) in b.regs.iter().enumerate() {
            if !r.addr.is_multiple_of(4) {
                return Err("register address not 4-byte aligned");
            }
            if r.addr < b.base || r.addr >= b.base + b.span {
                return Err("register outside its block");
            }
            if j > 0 && r.addr <= b.regs[j - 1].addr {
                return Err("registers not in strictly increasing address order");
            }
            for f in r.fields {
                if f.width == 0 || f.lsb as u32 + f.width as u32 > 32 {
                    return Err("field does not fit in 32 bits");
                }
            }
            let live = matches!(r.value, Value::Live { .. });
            if !live && r.access != Access::Ro {
                return Err("constant registers must be read-only");
            }
        }
    }
    Ok(())
}
