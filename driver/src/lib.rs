//! weft's userspace driver.
//!
//! [`Device`] is the seam between everything above the card and the card
//! itself: 32-bit register access on BAR 0, DMA-able memory, and interrupt
//! waits. The simulated card (weft-sim's `SimDevice`) implements it today;
//! the VFIO implementation for real Alveo cards arrives with the VFIO issue
//! and plugs in behind the same trait.
//!
//! On top of it, written once for every device: typed register access
//! through weft-regs ([`regs::RegisterAccess`]), discovery of the
//! self-describing register chain ([`discover::identify`]), and an IOVA
//! allocator for DMA mappings ([`iova::IovaAllocator`]).
#![deny(missing_docs)]

pub mod device;
pub mod discover;
pub mod error;
pub mod iova;
pub mod regs;

pub use device::{Device, DmaBuffer};
pub use discover::{identify, BlockInfo, CardInfo};
pub use error::{Error, Result};
pub use regs::RegisterAccess;
