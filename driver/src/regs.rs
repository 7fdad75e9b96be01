//! Typed register access through weft-regs: no raw offsets above this.

use crate::{Device, Error, Result};
use weft_regs::{Field, Map, Register, MAP};

/// Register access by weft-regs name, for every [`Device`].
pub trait RegisterAccess {
    /// Read a register.
    fn read_reg(&self, reg: &Register) -> Result<u32>;
    /// Write a register; a read-only register is refused before the device
    /// sees the write.
    fn write_reg(&self, reg: &Register, value: u32) -> Result<()>;
    /// Read one field of a register.
    fn read_field(&self, reg: &Register, field: &Field) -> Result<u32> {
        Ok(field.get(self.read_reg(reg)?))
    }
}

fn block_of(map: &Map, reg: &Register) -> &'static str {
    map.lookup(reg.addr).map_or("?", |(b, _)| b.name)
}

impl<D: Device + ?Sized> RegisterAccess for D {
    fn read_reg(&self, reg: &Register) -> Result<u32> {
        self.read32(reg.addr)
    }
    fn write_reg(&self, reg: &Register, value: u32) -> Result<()> {
        if !reg.access.writable() {
            return Err(Error::ReadOnly {
                block: block_of(&MAP, reg),
                reg: reg.name,
            });
        }
        self.write32(reg.addr, value)
    }
}
