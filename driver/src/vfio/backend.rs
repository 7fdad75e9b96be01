//! The seam between the VFIO driver's logic and the kernel: container and
//! device ioctls, BAR mmap and reads, IOMMU map/unmap, interrupt eventfds,
//! reset.
//!
//! [`Backend`] opens a container; [`Iommu`] and [`Function`] are what the
//! driver does with it. [`PciDriverBackend`] implements them on the
//! `pci-driver` crate (VFIO type1 IOMMU, `VFIO_DEVICE_SET_IRQS`,
//! `VFIO_DEVICE_RESET`; see include/uapi/linux/vfio.h); the tests use an
//! in-memory double (`fake.rs`), so the driver logic runs without
//! `/dev/vfio`.

use std::io;
use std::ops::Range;
use std::os::fd::RawFd;
use std::sync::Arc;

/// Interrupt mechanisms a PCI function may offer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum IrqKind {
    /// Legacy INTx (not used by the driver; listed for completeness).
    Intx,
    /// MSI.
    Msi,
    /// MSI-X.
    MsiX,
}

impl IrqKind {
    /// `msi`, `msi-x` or `intx`.
    pub fn name(self) -> &'static str {
        match self {
            IrqKind::Intx => "intx",
            IrqKind::Msi => "msi",
            IrqKind::MsiX => "msi-x",
        }
    }
}

/// A BAR mapped into this process. The pointer stays valid while the value
/// lives (`_keep` owns the mapping).
pub struct Mmio {
    /// Start of the mapping.
    pub ptr: *mut u8,
    /// Length in bytes.
    pub len: usize,
    /// Whatever unmaps the BAR when dropped.
    pub _keep: Box<dyn Send + Sync>,
}

// SAFETY: `Mmio` is a raw pointer to device memory plus its owner; all
// accesses through it are volatile 32-bit loads and stores, which the device
// serialises, so sharing it between threads is no different from sharing
// the device file descriptor.
unsafe impl Send for Mmio {}
// SAFETY: as above.
unsafe impl Sync for Mmio {}

/// The IOMMU context of a container (shared by every function in it).
pub trait Iommu: Send + Sync {
    /// Alignment of IOVAs, lengths and addresses of mappings (a power of two).
    fn alignment(&self) -> u64;
    /// IOVA ranges the IOMMU accepts.
    fn iova_ranges(&self) -> Vec<Range<u64>>;
    /// Map `len` bytes of this process at `vaddr` to `iova`, readable and
    /// writable by the device.
    ///
    /// # Safety
    /// `vaddr..vaddr+len` must stay allocated until [`Iommu::unmap`] of the
    /// same range returns: the device may access it at any time.
    unsafe fn map(&self, iova: u64, len: usize, vaddr: *const u8) -> io::Result<()>;
    /// Remove a mapping made by [`Iommu::map`].
    fn unmap(&self, iova: u64, len: usize) -> io::Result<()>;
}

/// One opened PCI function.
pub trait Function: Send + Sync {
    /// Read a 16-bit config-space register.
    fn config_read16(&self, offset: u16) -> io::Result<u16>;
    /// Write a 16-bit config-space register.
    fn config_write16(&self, offset: u16, value: u16) -> io::Result<()>;
    /// Length of BAR `index`, or `None` when the BAR is unused.
    fn bar_len(&self, index: usize) -> Option<u64>;
    /// Map BAR `index` read-write.
    fn map_bar(&self, index: usize) -> io::Result<Mmio>;
    /// Read the 32-bit word at byte `offset` of BAR `index` through the
    /// device file (a `pread` of the BAR's VFIO region; no mapping).
    fn bar_read32(&self, index: usize, offset: u64) -> io::Result<u32>;
    /// Vectors the function offers for `kind` (0 when it has none).
    fn irq_max(&self, kind: IrqKind) -> usize;
    /// Route vectors `0..fds.len()` of `kind` to the eventfds.
    fn irq_enable(&self, kind: IrqKind, fds: &[RawFd]) -> io::Result<()>;
    /// Stop routing `kind` interrupts.
    fn irq_disable(&self, kind: IrqKind) -> io::Result<()>;
    /// Reset the function (`VFIO_DEVICE_RESET`).
    fn reset(&self) -> io::Result<()>;
}

/// A container with a group's functions opened in it.
pub struct Opened {
    /// The container's IOMMU.
    pub iommu: Arc<dyn Iommu>,
    /// The functions, in the order asked for.
    pub functions: Vec<Box<dyn Function>>,
}

/// Opens VFIO containers.
pub trait Backend: Send + Sync {
    /// Create a container holding IOMMU group `group` and open `bdfs` (each
    /// a function of the group on vfio-pci, sysfs directory in `dirs`) in it.
    fn open(&self, group: u32, dirs: &[std::path::PathBuf]) -> io::Result<Opened>;
}

/// The real backend: kernel VFIO through `pci-driver`.
pub struct PciDriverBackend;

mod real {
    use super::*;
    use pci_driver::backends::vfio::{VfioContainer, VfioPciDevice};
    use pci_driver::device::PciDevice;
    use pci_driver::iommu::PciIommu;
    use pci_driver::regions::{PciRegion, Permissions};

    struct Container(Arc<VfioContainer>);

    impl Container {
        fn iommu(&self) -> PciIommu<'_> {
            self.0.iommu()
        }
    }

    impl Iommu for Container {
        fn alignment(&self) -> u64 {
            self.iommu().alignment() as u64
        }
        fn iova_ranges(&self) -> Vec<Range<u64>> {
            self.iommu().valid_iova_ranges().to_vec()
        }
        unsafe fn map(&self, iova: u64, len: usize, vaddr: *const u8) -> io::Result<()> {
            // SAFETY: the caller keeps the memory alive until unmap (this
            // function's own contract).
            unsafe { self.iommu().map(iova, len, vaddr, Permissions::ReadWrite) }
        }
        fn unmap(&self, iova: u64, len: usize) -> io::Result<()> {
            self.iommu().unmap(iova, len)
        }
    }

    struct Dev(VfioPciDevice);

    impl Function for Dev {
        fn config_read16(&self, offset: u16) -> io::Result<u16> {
            self.0.config().read_le_u16(offset as u64)
        }
        fn config_write16(&self, offset: u16, value: u16) -> io::Result<()> {
            self.0.config().write_le_u16(offset as u64, value)
        }
        fn bar_len(&self, index: usize) -> Option<u64> {
            self.0.bar(index).map(|b| b.len())
        }
        fn map_bar(&self, index: usize) -> io::Result<Mmio> {
            let bar = self.0.bar(index).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("BAR {index} is not implemented"),
                )
            })?;
            if !bar.is_mappable() {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("BAR {index} cannot be memory-mapped (an I/O BAR, or the kernel refused mmap)"),
                ));
            }
            let m = bar.map(.., Permissions::ReadWrite)?;
            Ok(Mmio {
                ptr: m.as_mut_ptr(),
                len: m.len(),
                _keep: Box::new(m),
            })
        }
        fn bar_read32(&self, index: usize, offset: u64) -> io::Result<u32> {
            let bar = self.0.bar(index).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("BAR {index} is not implemented"),
                )
            })?;
            bar.read_le_u32(offset)
        }
        fn irq_max(&self, kind: IrqKind) -> usize {
            let i = self.0.interrupts();
            match kind {
                IrqKind::Intx => i.intx().max(),
                IrqKind::Msi => i.msi().max(),
                IrqKind::MsiX => i.msi_x().max(),
            }
        }
        fn irq_enable(&self, kind: IrqKind, fds: &[RawFd]) -> io::Result<()> {
            let i = self.0.interrupts();
            match kind {
                IrqKind::Intx => i.intx().enable(fds),
                IrqKind::Msi => i.msi().enable(fds),
                IrqKind::MsiX => i.msi_x().enable(fds),
            }
        }
        fn irq_disable(&self, kind: IrqKind) -> io::Result<()> {
            let i = self.0.interrupts();
            match kind {
                IrqKind::Intx => i.intx().disable(),
                IrqKind::Msi => i.msi().disable(),
                IrqKind::MsiX => i.msi_x().disable(),
            }
        }
        fn reset(&self) -> io::Result<()> {
            self.0.reset()
        }
    }

    impl Backend for PciDriverBackend {
        fn open(&self, group: u32, dirs: &[std::path::PathBuf]) -> io::Result<Opened> {
            let container = Arc::new(VfioContainer::new(&[group])?);
            let mut functions: Vec<Box<dyn Function>> = vec![];
            for d in dirs {
                let dev = VfioPciDevice::open_in_container(d, container.clone())?;
                functions.push(Box::new(Dev(dev)));
            }
            Ok(Opened {
                iommu: Arc::new(Container(container)),
                functions,
            })
        }
    }
}
