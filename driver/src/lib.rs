//! weft's userspace driver.
//!
//! [`Device`] is the seam between everything above the card and the card
//! itself: 32-bit access to the card's register map, DMA-able memory, and
//! interrupt waits. Three devices implement it: the simulated card
//! (weft-sim's `SimDevice`), a real PCI function through Linux VFIO
//! ([`vfio::VfioDevice`]), and the register window of a real card that
//! AMD's `onic` kernel driver is bound to, through sysfs `resource2`
//! ([`onic::OnicDevice`]: registers only).
//!
//! On top of it, written once for every device: typed register access
//! through weft-regs ([`regs::RegisterAccess`]), discovery of the
//! self-describing register chain ([`discover::identify`]), an IOVA
//! allocator for DMA mappings ([`iova::IovaAllocator`]). Frames, the
//! card's other half, cross [`frames::FramePorts`]: the card's wire and
//! host ports, one small trait for every transport that carries them.
#![deny(missing_docs)]

pub mod device;
pub mod discover;
pub mod error;
pub mod frames;
pub mod iova;
pub mod onic;
pub mod qdma;
pub mod regs;
pub mod vfio;

pub use device::{Device, DmaBuffer};
pub use discover::{identify, BlockInfo, CardInfo};
pub use error::{Error, Result};
pub use frames::{Frame, FramePorts, Port};
pub use onic::OnicDevice;
pub use regs::RegisterAccess;
