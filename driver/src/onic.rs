//! `OnicDevice`: weft's register window on a real Alveo card that AMD's
//! `onic` kernel driver is bound to, mapped from sysfs `resource2`.
//!
//! On a card running the OpenNIC shell, the shell's registers sit on PCIe
//! BAR2 (4 MiB). Box 0, the 250 MHz box that holds weft's plugin, owns BAR2
//! 0x100000–0x1FFFFF, and weft's register map starts at the box's base:
//! BAR2 + 0x100000 ([`Window::OPENNIC`], `weft_regs::opennic`). The `onic`
//! driver keeps the data path (a Linux netdev over the QDMA) and programs
//! the shell's own blocks below 0x100000. This backend maps only weft's
//! window (`mmap` of `resource2`, `MAP_SHARED`, read and write, from a file
//! opened `O_RDWR | O_SYNC`) and serves [`Device::read32`] and
//! [`Device::write32`] from it. The shell's register bus is AXI4-Lite with
//! no `wstrb`, so a narrow write could not be expressed: only aligned
//! 32-bit volatile accesses are offered, each checked against the window
//! first ([`Error::Unaligned`], [`Error::OutsideWindow`]).
//!
//! Sources (see `shared/design/OPENNIC-HOST.md`): open-nic-shell
//! `src/qdma_subsystem/vivado_ip/qdma_no_sriov_au55c.tcl` (BAR2 is 4 MiB),
//! `src/system_config/system_config_address_map.sv`
//! (`C_BOX0_BASE_ADDR = 32'h100000`); open-nic-driver `onic_main.c`
//! (`pci_request_mem_regions`) and issue #23 (user-space mmap of BAR2
//! fails on Debian while `onic` is bound).
//!
//! # What is refused at open, before anything is mapped
//! * No function at the address: [`Error::NoSuchDevice`].
//! * A vendor other than Xilinx/AMD (0x10ee): [`Error::Unusable`].
//! * A function bound to `vfio-pci`: use `vfio:BDF` ([`crate::vfio::VfioDevice`])
//!   instead. A function bound to any driver other than `onic`: that driver
//!   owns the BAR, and writing registers under it is not safe. The backend
//!   accepts `onic` (the case it is for) or **no driver**: an unbound
//!   function's `resource2` maps as well, and nothing else is writing to
//!   it. With no driver, nobody has turned on memory decoding, so the open
//!   also checks the PCI command register and refuses when decoding is off
//!   (every read would return all ones).
//! * BAR2 not implemented, not a memory BAR, or too small for the window
//!   ([`Error::NoWindow`], [`Error::Unusable`]).
//!
//! # What the kernel refuses, and what each errno means
//! `resourceN` is created mode 0600 (`pci_create_attr` in
//! `drivers/pci/pci-sysfs.c`): opening it as a user gives **EACCES**.
//! `pci_mmap_resource` in the same file then refuses the mapping:
//! * **EPERM** when the kernel is locked down
//!   (`security_locked_down(LOCKDOWN_PCI_ACCESS)`; `security/lockdown/lockdown.c`
//!   returns `-EPERM`). Debian's kernels lock down under Secure Boot;
//!   `iomem=relaxed` does not lift it.
//! * **EINVAL** when `iomem_is_exclusive(BAR start)` (`kernel/resource.c`):
//!   with `CONFIG_IO_STRICT_DEVMEM` (Debian's kernels have it) a region a
//!   driver has claimed busy, as `onic` does with `pci_request_mem_regions`,
//!   counts as exclusive, so the whole BAR is refused while `onic` is
//!   bound. The kernel parameter `iomem=relaxed` turns those checks off.
//!   It is EINVAL here, not the EPERM that `/dev/mem` gives for the same
//!   rule (Xilinx/dma_ip_drivers issue #330 shows the same EINVAL with
//!   the XDMA driver bound).
//!
//! Each becomes an [`Error::MapRefused`] that says which case it is and
//! the fix. Any other errno is an [`Error::Os`] with the path.
//!
//! # What this backend cannot do
//! `onic` owns the card's QDMA queues and its MSI-X vectors, so
//! [`Device::dma_alloc`] and [`Device::wait_irq`] return errors. Frames go
//! through the `onic` netdev; weft's own QDMA queues need `vfio:BDF`.

use crate::vfio::backend::Mmio;
use crate::vfio::sysfs::{BarKind, Sysfs, VFIO_PCI};
use crate::vfio::window::{self, bytes, Window};
use crate::{Device, DmaBuffer, Error, Result};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// PCI vendor id of Xilinx (now AMD), which every Alveo card reports.
pub const XILINX_VENDOR: u16 = 0x10ee;
/// The name the OpenNIC kernel driver binds under.
pub const ONIC_DRIVER: &str = "onic";

/// PCI command register (PCI Local Bus 3.0, 6.2.2) and its memory space
/// enable bit.
const PCI_COMMAND: usize = 0x04;
const CMD_MEMORY: u16 = 1 << 1;

/// weft's register window on an Alveo card under the OpenNIC shell,
/// mapped from sysfs `resource2` beside the `onic` kernel driver.
pub struct OnicDevice {
    name: String,
    bdf: String,
    driver: Option<String>,
    /// The window, its length resolved (`len` is `Some`).
    window: Window,
    /// `window.len`, unwrapped.
    window_len: u64,
    /// BAR2's length.
    bar2_len: u64,
    /// The window, mapped: `ptr` is BAR byte `window.offset`.
    map: Mmio,
}

/// Why mapping a `resourceN` file failed, by the step that failed: the
/// same errno means different things from `open` and from `mmap`.
#[derive(Debug)]
enum MapFailure {
    /// `open` failed.
    Open(io::Error),
    /// `mmap` failed.
    Mmap(io::Error),
    /// The file is shorter than the range (sysfs sizes `resourceN` as the
    /// BAR): mapping it would fault on access.
    Short(u64),
}

/// Maps a range of a `resourceN` file: the seam the tests replace.
trait MapResource {
    /// Open `path` read-write, `O_SYNC`, and map `len` bytes at byte
    /// `offset` shared and read-write. The mapping's `ptr` is the byte at
    /// `offset` (the implementation rounds to pages itself).
    fn map(&self, path: &Path, offset: u64, len: usize) -> Result<Mmio, MapFailure>;
}

/// The real `open` + `mmap`.
struct SysfsResource;

/// Unmaps a mapping when dropped.
struct Unmap {
    base: usize,
    len: usize,
}

impl Drop for Unmap {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` is a mapping `SysfsResource::map` made
        // and nothing else unmaps; the device holding the pointer into it
        // drops this last.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

fn page_size() -> u64 {
    // SAFETY: sysconf(3) takes no pointers.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

impl MapResource for SysfsResource {
    fn map(&self, path: &Path, offset: u64, len: usize) -> Result<Mmio, MapFailure> {
        // O_SYNC as pcimem opens it; the kernel maps `resourceN` uncached
        // either way (`pci_mmap_resource_uc`).
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_SYNC)
            .open(path)
            .map_err(MapFailure::Open)?;
        let size = file.metadata().map_err(MapFailure::Open)?.len();
        let end = offset
            .checked_add(len as u64)
            .ok_or(MapFailure::Short(size))?;
        if size < end {
            return Err(MapFailure::Short(size));
        }
        let page = page_size();
        let start = offset - offset % page;
        let delta = (offset - start) as usize;
        let map_len = (delta + len).div_ceil(page as usize) * page as usize;
        let einval = || MapFailure::Mmap(io::Error::from_raw_os_error(libc::EINVAL));
        let off = libc::off_t::try_from(start).map_err(|_| einval())?;
        // SAFETY: a fresh shared mapping of an open file; no Rust object
        // aliases it. The kernel checks the range against the file (the BAR).
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                off,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(MapFailure::Mmap(io::Error::last_os_error()));
        }
        // The mapping outlives the file descriptor, which closes here.
        let keep = Unmap {
            base: p as usize,
            len: map_len,
        };
        Ok(Mmio {
            // SAFETY: delta < page <= map_len: inside the mapping.
            ptr: unsafe { p.cast::<u8>().add(delta) },
            len,
            _keep: Box::new(keep),
        })
    }
}

impl OnicDevice {
    /// Open the card at `bdf` (`DDDD:BB:DD.F`) on the running system.
    pub fn open(bdf: &str) -> Result<Self> {
        Self::open_at(&Sysfs::system(), bdf)
    }

    /// Open the card at `bdf` through the sysfs tree `sysfs` (tests build a
    /// fake tree whose `resource2` is a regular file).
    pub fn open_at(sysfs: &Sysfs, bdf: &str) -> Result<Self> {
        Self::open_on(sysfs, bdf, &SysfsResource)
    }

    fn open_on(sysfs: &Sysfs, bdf: &str, mapper: &dyn MapResource) -> Result<Self> {
        let name = format!("onic:{bdf}");
        if bdf.is_empty() || bdf.contains('/') {
            return Err(Error::NoSuchDevice { bdf: bdf.into() });
        }
        let unusable = |why: String| Error::Unusable {
            device: name.clone(),
            why,
        };
        let f = sysfs.function(bdf)?;
        if f.vendor != XILINX_VENDOR {
            return Err(unusable(format!(
                "vendor {:#06x} (device {:#06x}) is not Xilinx/AMD ({XILINX_VENDOR:#06x}): not an Alveo card; lspci -D -d 10ee: lists those",
                f.vendor, f.device
            )));
        }
        match f.driver.as_deref() {
            Some(VFIO_PCI) => {
                return Err(unusable(format!(
                    "bound to vfio-pci, so onic is not running on it: open it as vfio:{bdf} instead"
                )))
            }
            Some(ONIC_DRIVER) | None => {}
            Some(other) => {
                return Err(unusable(format!(
                    "bound to {other}, not {ONIC_DRIVER}: this backend runs beside the onic driver (or with no driver) and will not write registers under another driver; unbind it (echo {bdf} > /sys/bus/pci/devices/{bdf}/driver/unbind) and load onic, or bind it to vfio-pci and open vfio:{bdf}"
                )))
            }
        }
        let w = Window::OPENNIC;
        let no_window = |bar_len| Error::NoWindow {
            device: name.clone(),
            window: w,
            bar_len,
        };
        let bar = f
            .bars
            .iter()
            .find(|b| b.index == w.bar)
            .ok_or_else(|| no_window(None))?;
        if bar.kind == BarKind::Io {
            return Err(unusable(format!(
                "BAR{} is an I/O BAR ({}), not memory: the OpenNIC shell's BAR2 is a 4 MiB memory BAR; is the card running an OpenNIC shell bitstream?",
                w.bar,
                bytes(bar.len)
            )));
        }
        let window_len = w.len_in(bar.len).ok_or_else(|| no_window(Some(bar.len)))?;
        if f.driver.is_none() {
            let cfg = std::fs::read(sysfs.device_dir(bdf).join("config")).unwrap_or_default();
            if let Some(c) = cfg.get(PCI_COMMAND..PCI_COMMAND + 2) {
                let cmd = u16::from_le_bytes([c[0], c[1]]);
                if cmd & CMD_MEMORY == 0 {
                    return Err(unusable(format!(
                        "no driver is bound and memory decoding is off (PCI command register {cmd:#06x}): every register read would return all ones; load onic, or as root: echo 1 > /sys/bus/pci/devices/{bdf}/enable"
                    )));
                }
            }
        }
        let path = sysfs.device_dir(bdf).join(format!("resource{}", w.bar));
        let map = mapper
            .map(&path, w.offset, window_len as usize)
            .map_err(|e| {
                refusal(
                    &name,
                    bdf,
                    f.driver.as_deref(),
                    w,
                    window_len,
                    path.clone(),
                    e,
                )
            })?;
        Ok(Self {
            name,
            bdf: bdf.into(),
            driver: f.driver,
            window: Window {
                len: Some(window_len),
                ..w
            },
            window_len,
            bar2_len: bar.len,
            map,
        })
    }

    /// The PCI address.
    pub fn bdf(&self) -> &str {
        &self.bdf
    }

    /// The driver bound when the device was opened: `Some("onic")`, or
    /// `None` for no driver.
    pub fn driver(&self) -> Option<&str> {
        self.driver.as_deref()
    }

    /// The register window accesses go to ([`Window::OPENNIC`], its length
    /// resolved).
    pub fn window(&self) -> Window {
        self.window
    }

    /// Bytes of BAR2, the BAR the window is in.
    pub fn window_bar_len(&self) -> u64 {
        self.bar2_len
    }

    /// The mapped register at map address `addr`: BAR2 byte
    /// `window.offset + addr`.
    fn reg_ptr(&self, addr: u32) -> Result<*mut u32> {
        let (w, len) = (self.window, self.window_len);
        window::check_access(&self.name, w, len, self.bar2_len, addr as u64)?;
        // SAFETY: addr + 4 <= window_len == the mapping's length (checked
        // just above; the mapping was made window_len long), so the pointer
        // stays inside it. The mapping starts at BAR byte window.offset, a
        // multiple of 4 past a page boundary, and addr is a multiple of 4,
        // so the pointer is 4-byte aligned.
        Ok(unsafe { self.map.ptr.add(addr as usize) }.cast())
    }

    fn no(&self, why: String) -> Error {
        Error::Unusable {
            device: self.name.clone(),
            why,
        }
    }
}

/// The error for a failed `open`/`mmap` of `path`, by errno (see the
/// module docs for where each comes from in the kernel).
fn refusal(
    name: &str,
    bdf: &str,
    driver: Option<&str>,
    w: Window,
    window_len: u64,
    path: PathBuf,
    e: MapFailure,
) -> Error {
    let refused = |op, why: String, source| Error::MapRefused {
        device: name.into(),
        op,
        path: path.clone(),
        why,
        source,
    };
    let os = |what: String, source| Error::Os {
        device: name.into(),
        what,
        source,
    };
    let holder = match driver {
        Some(d) => format!(
            "{d} has claimed BAR{}'s region busy (pci_request_mem_regions at probe)",
            w.bar
        ),
        None => format!(
            "no driver is bound, yet BAR{}'s region is claimed (see /proc/iomem)",
            w.bar
        ),
    };
    match e {
        MapFailure::Open(src) => match src.raw_os_error() {
            Some(libc::EACCES) | Some(libc::EPERM) => refused(
                "opening",
                format!("sysfs resource files are root's only (mode 0600): run as root, or make {} accessible to this user", path.display()),
                src,
            ),
            _ => os(format!("opening {} read-write", path.display()), src),
        },
        MapFailure::Mmap(src) => match src.raw_os_error() {
            Some(libc::EINVAL) => refused(
                "mapping",
                format!("the kernel is built with CONFIG_IO_STRICT_DEVMEM (Debian's are) and {holder}, so it will not map the BAR to user space (pci_mmap_resource: iomem_is_exclusive); fix: add iomem=relaxed to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub, update-grub, reboot), or unbind onic, bind vfio-pci and open vfio:{bdf}"),
                src,
            ),
            Some(libc::EPERM) => refused(
                "mapping",
                format!("the kernel is locked down (cat /sys/kernel/security/lockdown; Debian's kernels lock down under Secure Boot), and lockdown forbids mapping PCI BARs from user space even as root; iomem=relaxed does not lift it (CONFIG_IO_STRICT_DEVMEM's refusal would be EINVAL): boot without lockdown, or bind vfio-pci and open vfio:{bdf}"),
                src,
            ),
            _ => os(
                format!(
                    "mapping {} of {} at {:#x}",
                    bytes(window_len),
                    path.display(),
                    w.offset
                ),
                src,
            ),
        },
        MapFailure::Short(size) => Error::NoWindow {
            device: name.into(),
            window: w,
            bar_len: Some(size),
        },
    }
}

impl Device for OnicDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn bar_len(&self) -> u64 {
        self.window_len
    }

    fn read32(&self, addr: u32) -> Result<u32> {
        let p = self.reg_ptr(addr)?;
        // SAFETY: `p` points at 4 aligned bytes inside the mapped window
        // (`reg_ptr`), alive while `self` is.
        Ok(unsafe { window::mmio_read(p) })
    }

    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        let p = self.reg_ptr(addr)?;
        // SAFETY: as in `read32`.
        unsafe { window::mmio_write(p, value) };
        Ok(())
    }

    fn dma_alloc(&self, _len: usize) -> Result<Box<dyn DmaBuffer>> {
        Err(self.no(format!(
            "no DMA on the onic backend: the onic kernel driver owns the card's QDMA (its queues carry the netdev's frames); for weft's own DMA queues bind vfio-pci and open vfio:{}",
            self.bdf
        )))
    }

    fn wait_irq(&self, vector: u32, _timeout: Duration) -> Result<bool> {
        Err(self.no(format!(
            "no interrupts on the onic backend (vector {vector} asked for): the onic kernel driver owns the card's MSI-X vectors; poll registers, or open vfio:{}",
            self.bdf
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vfio::sysfs::fake::{add, FakeFn};
    use std::sync::Mutex;

    const BDF: &str = "0000:3b:00.0";
    /// The fake `resource2`: 2 MiB (a real BAR2 is 4 MiB; the window is in
    /// the first 2).
    const RES2: u64 = 0x20_0000;
    const WIN: u64 = 0x10_0000;

    /// `resource` with BAR0 64 KiB and BAR2 `bar2` bytes of 64-bit
    /// memory (`None`: BAR2 unimplemented).
    fn resource(bar2: Option<u64>) -> String {
        let mut s = String::from(
            "0x00000000fe000000 0x00000000fe00ffff 0x0000000000140204\n\
             0x0000000000000000 0x0000000000000000 0x0000000000000000\n",
        );
        match bar2 {
            Some(len) => {
                s += &format!(
                    "0x00000000f8000000 {:#018x} 0x0000000000140204\n",
                    0xf800_0000 + len - 1
                )
            }
            None => s += "0x0000000000000000 0x0000000000000000 0x0000000000000000\n",
        }
        s
    }

    struct Tree {
        t: tempfile::TempDir,
    }

    impl Tree {
        /// A Xilinx function bound to `driver`, BAR2 `bar2` bytes, with a
        /// `resource2` regular file of [`RES2`] bytes.
        fn new(vendor: u16, driver: Option<&str>, bar2: Option<u64>) -> Self {
            let t = tempfile::tempdir().unwrap();
            add(
                t.path(),
                &FakeFn {
                    bdf: BDF,
                    vendor,
                    device: 0x903f,
                    class: 0x020000,
                    driver,
                    group: Some(3),
                },
            );
            let tree = Self { t };
            std::fs::write(tree.dir().join("resource"), resource(bar2)).unwrap();
            let f = std::fs::File::create(tree.res2()).unwrap();
            f.set_len(RES2).unwrap();
            tree
        }
        fn onic() -> Self {
            Self::new(XILINX_VENDOR, Some(ONIC_DRIVER), Some(RES2))
        }
        fn sysfs(&self) -> Sysfs {
            Sysfs::at(self.t.path())
        }
        fn dir(&self) -> PathBuf {
            self.sysfs().device_dir(BDF)
        }
        fn res2(&self) -> PathBuf {
            self.dir().join("resource2")
        }
        fn word(&self, offset: u64) -> u32 {
            let b = std::fs::read(self.res2()).unwrap();
            let o = offset as usize;
            u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
        }
        fn poke(&self, offset: u64, v: u32) {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(self.res2())
                .unwrap();
            f.write_all_at(&v.to_le_bytes(), offset).unwrap();
        }
        fn open(&self) -> Result<OnicDevice> {
            OnicDevice::open_at(&self.sysfs(), BDF)
        }
        fn refusal(&self) -> String {
            match self.open() {
                Ok(_) => panic!("opened"),
                Err(e) => e.to_string(),
            }
        }
    }

    #[test]
    fn registers_round_trip_through_resource2_at_0x100000() {
        let tree = Tree::onic();
        tree.poke(WIN, 0x5745_4654);
        let dev = tree.open().unwrap();
        assert_eq!(dev.name(), "onic:0000:3b:00.0");
        assert_eq!(dev.bdf(), BDF);
        assert_eq!(dev.driver(), Some("onic"));
        assert_eq!(dev.bar_len(), 0x1_0000);
        assert_eq!(dev.window().to_string(), "BAR2+0x100000 (64 KiB)");
        assert_eq!(dev.window_bar_len(), RES2);
        // A word already in the file reads through the mapping.
        assert_eq!(dev.read32(0).unwrap(), 0x5745_4654);
        dev.write32(0x40, 0xdead_beef).unwrap();
        dev.write32(0xfffc, 0x0123_4567).unwrap();
        assert_eq!(dev.read32(0x40).unwrap(), 0xdead_beef);
        // The writes landed at file (BAR2) byte 0x100000 + addr, nowhere else.
        assert_eq!(tree.word(WIN + 0x40), 0xdead_beef);
        assert_eq!(tree.word(WIN + 0xfffc), 0x0123_4567);
        assert_eq!(tree.word(0x40), 0);
        assert_eq!(tree.word(WIN + 0x1_0000), 0);
        // And a write to the file shows through the mapping.
        tree.poke(WIN + 8, 7);
        assert_eq!(dev.read32(8).unwrap(), 7);
    }

    #[test]
    fn out_of_window_and_unaligned_accesses_are_errors() {
        let tree = Tree::onic();
        let dev = tree.open().unwrap();
        for addr in [0x1_0000, 0xfffd, u32::MAX - 3, u32::MAX] {
            assert!(dev.read32(addr).is_err(), "{addr:#x}");
            assert!(dev.write32(addr, 1).is_err(), "{addr:#x}");
        }
        let e = dev.read32(0x1_0000).unwrap_err();
        assert!(matches!(e, Error::OutsideWindow { .. }), "{e}");
        let m = e.to_string();
        assert!(
            m.contains("onic:0000:3b:00.0: BAR2+0x100000+0x10000"),
            "{m}"
        );
        assert!(m.contains("outside the register window (64 KiB"), "{m}");
        let e = dev.write32(2, 1).unwrap_err();
        assert!(matches!(e, Error::Unaligned { .. }), "{e}");
        assert!(e.to_string().contains("not 4-byte aligned"), "{e}");
        // Nothing reached the file.
        let b = std::fs::read(tree.res2()).unwrap();
        assert!(b.iter().all(|&x| x == 0));
    }

    #[test]
    fn no_dma_and_no_interrupts() {
        let dev = Tree::onic().open().unwrap();
        let e = dev.dma_alloc(4096).err().unwrap().to_string();
        assert!(e.contains("no DMA") && e.contains("QDMA"), "{e}");
        assert!(e.contains("vfio:0000:3b:00.0"), "{e}");
        let e = dev.wait_irq(0, Duration::ZERO).unwrap_err().to_string();
        assert!(e.contains("no interrupts") && e.contains("MSI-X"), "{e}");
    }

    #[test]
    fn a_missing_function_is_refused() {
        let tree = Tree::onic();
        for bdf in ["0000:99:00.0", "", "../../.."] {
            let e = OnicDevice::open_at(&tree.sysfs(), bdf).err().unwrap();
            assert!(matches!(e, Error::NoSuchDevice { .. }), "{e}");
        }
        let e = OnicDevice::open_at(&tree.sysfs(), "0000:99:00.0")
            .err()
            .unwrap();
        assert!(e.to_string().contains("no PCI device 0000:99:00.0"), "{e}");
    }

    #[test]
    fn another_vendor_is_refused_with_the_vendor_found() {
        let e = Tree::new(0x8086, Some(ONIC_DRIVER), Some(RES2)).refusal();
        assert!(e.contains("vendor 0x8086"), "{e}");
        assert!(e.contains("not Xilinx/AMD (0x10ee)"), "{e}");
    }

    #[test]
    fn a_function_on_vfio_pci_is_sent_to_the_vfio_backend() {
        let e = Tree::new(XILINX_VENDOR, Some("vfio-pci"), Some(RES2)).refusal();
        assert!(e.contains("bound to vfio-pci"), "{e}");
        assert!(e.contains("open it as vfio:0000:3b:00.0"), "{e}");
    }

    #[test]
    fn another_driver_is_refused_and_no_driver_is_accepted() {
        let e = Tree::new(XILINX_VENDOR, Some("xdma"), Some(RES2)).refusal();
        assert!(e.contains("bound to xdma, not onic"), "{e}");
        assert!(e.contains("driver/unbind"), "{e}");
        // No driver, memory decoding off (the fake config's command
        // register is 0): refused, saying how to turn it on.
        let tree = Tree::new(XILINX_VENDOR, None, Some(RES2));
        let e = tree.refusal();
        assert!(e.contains("memory decoding is off"), "{e}");
        assert!(
            e.contains("echo 1 > /sys/bus/pci/devices/0000:3b:00.0/enable"),
            "{e}"
        );
        // Decoding on: opens.
        let cfg = tree.dir().join("config");
        let mut c = std::fs::read(&cfg).unwrap();
        c[PCI_COMMAND] |= CMD_MEMORY as u8;
        std::fs::write(&cfg, c).unwrap();
        let dev = tree.open().unwrap();
        assert_eq!(dev.driver(), None);
        dev.write32(4, 9).unwrap();
        assert_eq!(tree.word(WIN + 4), 9);
    }

    #[test]
    fn bar2_missing_io_or_too_small_is_refused() {
        let e = Tree::new(XILINX_VENDOR, Some(ONIC_DRIVER), None).refusal();
        assert!(e.contains("no register window BAR2+0x100000"), "{e}");
        assert!(e.contains("BAR2 is not implemented"), "{e}");
        // 1 MiB: the window at 0x100000 is past its end.
        let e = Tree::new(XILINX_VENDOR, Some(ONIC_DRIVER), Some(1 << 20)).refusal();
        assert!(e.contains("BAR2 is 1 MiB, too small"), "{e}");
        // The stock fake tree's BAR2 is an I/O BAR.
        let tree = Tree::onic();
        std::fs::write(
            tree.dir().join("resource"),
            "0x0 0x0 0x0\n0x0 0x0 0x0\n0x000000000000c000 0x000000000000c01f 0x0000000000040101\n",
        )
        .unwrap();
        let e = tree.refusal();
        assert!(e.contains("BAR2 is an I/O BAR"), "{e}");
    }

    #[test]
    fn a_resource2_shorter_than_the_window_is_refused_not_mapped() {
        // sysfs says 2 MiB but the file holds 1 MiB + 4 bytes: mapping it
        // would fault on the first access past the file's end.
        let tree = Tree::onic();
        std::fs::File::options()
            .write(true)
            .open(tree.res2())
            .unwrap()
            .set_len(WIN + 4)
            .unwrap();
        let e = tree.open().err().unwrap();
        assert!(matches!(e, Error::NoWindow { .. }), "{e}");
    }

    /// A mapper that fails at `open` or `mmap` with `errno`, recording
    /// what it was asked for.
    struct Refuse {
        at_open: bool,
        errno: i32,
        asked: Mutex<Vec<(PathBuf, u64, usize)>>,
    }

    impl Refuse {
        fn new(at_open: bool, errno: i32) -> Self {
            Self {
                at_open,
                errno,
                asked: Mutex::default(),
            }
        }
    }

    impl MapResource for Refuse {
        fn map(&self, path: &Path, offset: u64, len: usize) -> Result<Mmio, MapFailure> {
            self.asked
                .lock()
                .unwrap()
                .push((path.to_path_buf(), offset, len));
            let e = io::Error::from_raw_os_error(self.errno);
            Err(if self.at_open {
                MapFailure::Open(e)
            } else {
                MapFailure::Mmap(e)
            })
        }
    }

    fn refused_with(at_open: bool, errno: i32) -> Error {
        let tree = Tree::onic();
        let m = Refuse::new(at_open, errno);
        let e = OnicDevice::open_on(&tree.sysfs(), BDF, &m).err().unwrap();
        let asked = m.asked.into_inner().unwrap();
        assert_eq!(asked, [(tree.res2(), WIN, 0x1_0000)], "only the window");
        e
    }

    #[test]
    fn strict_devmem_refusal_names_the_config_and_the_fix() {
        let e = refused_with(false, libc::EINVAL);
        assert!(matches!(e, Error::MapRefused { op: "mapping", .. }), "{e}");
        let m = e.to_string();
        assert!(m.contains("resource2 was refused (Invalid argument"), "{m}");
        assert!(m.contains("CONFIG_IO_STRICT_DEVMEM"), "{m}");
        assert!(m.contains("onic has claimed BAR2's region busy"), "{m}");
        assert!(m.contains("pci_request_mem_regions"), "{m}");
        assert!(m.contains("iomem=relaxed"), "{m}");
        assert!(m.contains("vfio:0000:3b:00.0"), "{m}");
    }

    #[test]
    fn lockdown_and_permission_refusals_say_which_they_are() {
        let m = refused_with(false, libc::EPERM).to_string();
        assert!(m.contains("(Operation not permitted"), "{m}");
        assert!(m.contains("locked down"), "{m}");
        assert!(m.contains("iomem=relaxed does not lift it"), "{m}");
        let m = refused_with(true, libc::EACCES).to_string();
        assert!(m.contains("opening"), "{m}");
        assert!(m.contains("run as root"), "{m}");
        let e = refused_with(true, libc::EPERM);
        assert!(matches!(e, Error::MapRefused { op: "opening", .. }), "{e}");
    }

    #[test]
    fn other_errors_give_the_path_and_the_os_error() {
        let e = refused_with(false, libc::ENOMEM);
        assert!(matches!(e, Error::Os { .. }), "{e}");
        let m = e.to_string();
        assert!(m.contains("mapping 64 KiB of "), "{m}");
        assert!(m.contains("0000:3b:00.0/resource2 at 0x100000"), "{m}");
        let m = refused_with(true, libc::ENOENT).to_string();
        assert!(
            m.contains("opening ") && m.contains("resource2 read-write"),
            "{m}"
        );
        assert!(m.contains("No such file"), "{m}");
    }
}
