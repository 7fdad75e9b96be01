//! The `Device` trait: what the rest of weft needs from a card.

use crate::Result;
use std::time::Duration;

/// A weft card: the simulated one, or a real one through VFIO.
///
/// Register offsets are byte offsets in weft's register map
/// (`weft_regs::MAP`); reach registers through [`crate::RegisterAccess`]
/// rather than raw offsets. [`crate::vfio::VfioDevice`] serves them from a
/// register window ([`crate::vfio::Window`]): on a card running the OpenNIC
/// shell, BAR2 + 0x100000 (`weft_regs::opennic`; BAR0 is the QDMA IP's).
pub trait Device: Send + Sync {
    /// A short name for messages, e.g. `sim:verilator` or `vfio:0000:3b:00.0`.
    fn name(&self) -> String;
    /// Bytes of the register window: addresses `0..bar_len()` reach the
    /// device (for `VfioDevice`, its [`crate::vfio::Window`]'s length, not
    /// the whole BAR's).
    fn bar_len(&self) -> u64;
    /// Read the 32-bit register at byte offset `addr` of the register map.
    fn read32(&self, addr: u32) -> Result<u32>;
    /// Write the 32-bit register at byte offset `addr` of the register map.
    fn write32(&self, addr: u32, value: u32) -> Result<()>;
    /// Allocate `len` bytes of memory the card can reach by DMA.
    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>>;
    /// Wait up to `timeout` for interrupt `vector`; `Ok(false)` on timeout.
    /// An interrupt that arrived before the call is returned at once.
    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<bool>;
}

/// Memory shared with the card: the card sees it at [`DmaBuffer::iova`].
///
/// The CPU side copies in and out rather than lending slices: the card may
/// write the memory at any time, so the CPU must not hold references into it.
pub trait DmaBuffer: Send {
    /// The I/O virtual address the card uses (never assumed equal to a CPU address).
    fn iova(&self) -> u64;
    /// Length in bytes.
    fn len(&self) -> usize;
    /// Whether the buffer is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Copy `buf.len()` bytes at `offset` out of the buffer.
    fn read(&self, offset: usize, buf: &mut [u8]) -> Result<()>;
    /// Copy `data` into the buffer at `offset`.
    fn write(&self, offset: usize, data: &[u8]) -> Result<()>;
}
