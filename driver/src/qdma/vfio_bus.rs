//! [`VfioBus`]: a real card's function on vfio-pci as a [`QdmaBus`] —
//! BAR0 (the QDMA IP) and BAR2 (the shell) mapped whole, DMA memory in
//! its IOMMU context.

use super::{Bar, QdmaBus};
use crate::vfio::{BarMap, VfioDevice, VfioOptions, Window};
use crate::{Device, DmaBuffer, Error, Result};

/// A card's PCI function through VFIO, both BARs mapped.
pub struct VfioBus {
    // Field order is drop order: BAR0's mapping before the device.
    bar0: BarMap,
    dev: VfioDevice,
    function: u32,
}

impl VfioBus {
    /// Open `bdf` (`DDDD:BB:DD.F`, bound to vfio-pci): its BAR2 whole as
    /// the device's window, its BAR0 beside it. The checks and refusals of
    /// [`VfioDevice::open`] apply (not bound, no IOMMU, no BAR2).
    pub fn open(bdf: &str) -> Result<Self> {
        let dev = VfioDevice::open_with(
            bdf,
            &VfioOptions {
                window: Window::whole_bar(Bar::Shell.index()),
                ..VfioOptions::default()
            },
        )?;
        let bar0 = dev.map_bar(Bar::Qdma.index()).map_err(|e| Error::Qdma {
            device: dev.name(),
            why: format!("BAR0, the QDMA IP's registers, cannot be mapped: {e}"),
        })?;
        let function = bdf
            .rsplit('.')
            .next()
            .and_then(|f| f.parse().ok())
            .unwrap_or(0);
        Ok(Self {
            bar0,
            dev,
            function,
        })
    }

    /// The VFIO device (BAR2 is its window).
    pub fn device(&self) -> &VfioDevice {
        &self.dev
    }
}

impl QdmaBus for VfioBus {
    fn name(&self) -> String {
        self.dev.name()
    }
    fn read32(&self, bar: Bar, offset: u32) -> Result<u32> {
        match bar {
            Bar::Qdma => self.bar0.read32(offset as u64),
            Bar::Shell => self.dev.read32(offset),
        }
    }
    fn write32(&self, bar: Bar, offset: u32, value: u32) -> Result<()> {
        match bar {
            Bar::Qdma => self.bar0.write32(offset as u64, value),
            Bar::Shell => self.dev.write32(offset, value),
        }
    }
    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        self.dev.dma_alloc(len)
    }
    fn function(&self) -> u32 {
        self.function
    }
}
