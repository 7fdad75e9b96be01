//! `VfioDevice`: a real card (or any PCI function) through Linux VFIO.
//!
//! Opening `0000:3b:00.0`:
//! 1. sysfs checks ([`sysfs::Sysfs::check_usable`]): the function exists,
//!    the kernel has an IOMMU group for it, it is bound to vfio-pci, and
//!    every other function of the group is on vfio-pci, on no driver, or a
//!    bridge. Each failure is a refusal that says what to do.
//! 2. One VFIO container with the group, and every vfio-pci function of
//!    the group opened in it (an Alveo card's functions usually share a
//!    group; they share one IOMMU context).
//! 3. The register window ([`Window`], [`VfioOptions::window`]) checked
//!    against the function's BARs: its BAR must be implemented and hold
//!    it, else the open is refused before the driver touches the function
//!    (command register, mappings, interrupts).
//!    The default is where a weft card keeps its map under the OpenNIC
//!    shell, BAR2 + 0x100000 ([`Window::OPENNIC`], `weft_regs::opennic`;
//!    BAR0 is the QDMA IP's).
//! 4. Memory space and bus mastering on (PCI command register bits 1 and 2:
//!    without bus mastering the device can neither DMA nor send MSI).
//! 5. The window's BAR mapped; the map's address `addr` is read and
//!    written with a volatile 32-bit access at BAR byte `offset + addr`,
//!    after checking it is 4-byte aligned and inside the window.
//! 6. MSI-X vectors (else MSI) routed to eventfds: [`Device::wait_irq`]
//!    waits synchronously, [`VfioDevice::irq_waiter`] asynchronously.
//! 7. DMA memory: pages mapped into the IOMMU at IOVAs from
//!    [`crate::iova::IovaAllocator`] over the ranges VFIO reports, clipped
//!    to the device's DMA reach. An IOVA is never the buffer's virtual
//!    address.
//!
//! Dropping the device disables its interrupts and unmaps the BAR; each DMA
//! buffer unmaps itself from the IOMMU before its pages are freed, and the
//! container closes with the last of them.
//!
//! `VfioDevice::open` does not identify the card, so it can drive any PCI
//! function given its window (the QEMU tests drive `edu` and `e1000e` with
//! [`Window::whole_bar`]`(0)`); the host library's `Nic::open("vfio:…")`
//! opens with the default window and runs [`crate::identify`] right after,
//! which refuses a function that is not a weft card.

pub mod backend;
#[cfg(test)]
mod fake;
pub mod irq;
pub mod mem;
pub mod sysfs;
pub mod window;

use crate::iova::IovaAllocator;
use crate::{Device, DmaBuffer, Error, Result};
use backend::{Backend, Function, Iommu, IrqKind, Mmio, PciDriverBackend};
use irq::{IrqWaiter, Vectors};
use mem::{Backing, Pages};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sysfs::Sysfs;
pub use window::Window;

/// PCI command register (PCI Local Bus 3.0, 6.2.2).
const PCI_COMMAND: u16 = 0x04;
/// Command bits: memory space enable (1), bus master enable (2).
const CMD_MEMORY: u16 = 1 << 1;
const CMD_MASTER: u16 = 1 << 2;

/// How to open a function.
#[derive(Clone, Debug)]
pub struct VfioOptions {
    /// Where the register map is: [`Window::OPENNIC`] (a weft card) unless
    /// the device keeps its registers elsewhere.
    pub window: Window,
    /// The device's DMA reach: IOVAs are allocated below this address.
    /// Real weft cards address 64 bits; QEMU's `edu` only 28.
    pub dma_limit: u64,
    /// Most interrupt vectors to route to eventfds.
    pub max_vectors: usize,
}

impl Default for VfioOptions {
    fn default() -> Self {
        Self {
            window: Window::OPENNIC,
            dma_limit: u64::MAX,
            max_vectors: 64,
        }
    }
}

struct DmaSpace {
    iommu: Arc<dyn Iommu>,
    /// One allocator per IOVA range the IOMMU accepts.
    ranges: Mutex<Vec<IovaAllocator>>,
    align: u64,
}

impl DmaSpace {
    fn alloc(&self, len: u64, align: u64) -> Result<u64> {
        let mut rs = self.ranges.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = None;
        for r in rs.iter_mut() {
            match r.alloc(len, align.max(self.align)) {
                Ok(a) => return Ok(a),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Dma("the IOMMU offers no IOVA range".into())))
    }

    fn free(&self, iova: u64) {
        let mut rs = self.ranges.lock().unwrap_or_else(|e| e.into_inner());
        // Exactly one allocator handed it out; the others refuse.
        for r in rs.iter_mut() {
            if r.free(iova).is_ok() {
                return;
            }
        }
    }
}

/// DMA memory of a [`VfioDevice`]: pages mapped into the device's IOMMU.
pub struct VfioDma {
    pages: Option<Pages>,
    len: usize,
    iova: u64,
    space: Arc<DmaSpace>,
}

impl VfioDma {
    /// Whether hugepages back the buffer.
    pub fn hugepage(&self) -> bool {
        self.pages.as_ref().is_some_and(|p| p.huge())
    }

    /// Bytes mapped into the IOMMU (the length rounded up to whole pages).
    pub fn mapped_len(&self) -> usize {
        self.pages.as_ref().map_or(0, |p| p.len())
    }

    fn check(&self, offset: usize, n: usize, op: &str) -> Result<*mut u8> {
        if offset.checked_add(n).is_none_or(|e| e > self.len) {
            return Err(Error::Dma(format!(
                "{op} of {n} bytes at offset {offset} past a {}-byte buffer (IOVA {:#x})",
                self.len, self.iova
            )));
        }
        let p = self
            .pages
            .as_ref()
            .ok_or_else(|| Error::Dma("buffer released".into()))?;
        // SAFETY: offset + n <= len <= the mapping's length (checked above).
        Ok(unsafe { p.ptr().add(offset) })
    }
}

impl DmaBuffer for VfioDma {
    fn iova(&self) -> u64 {
        self.iova
    }
    fn len(&self) -> usize {
        self.len
    }
    fn read(&self, offset: usize, buf: &mut [u8]) -> Result<()> {
        let src = self.check(offset, buf.len(), "read")?;
        // The device's writes must be visible before we copy them out.
        fence(Ordering::Acquire);
        // SAFETY: `src..src+len` lies inside our mapping (checked), `buf` is
        // a distinct Rust slice, so the ranges do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }
    fn write(&self, offset: usize, data: &[u8]) -> Result<()> {
        let dst = self.check(offset, data.len(), "write")?;
        // SAFETY: as in `read`, with the roles swapped.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        // Our writes must be visible before a later doorbell tells the
        // device to read them.
        fence(Ordering::Release);
        Ok(())
    }
}

impl Drop for VfioDma {
    fn drop(&mut self) {
        let Some(pages) = self.pages.take() else {
            return;
        };
        match self.space.iommu.unmap(self.iova, pages.len()) {
            Ok(()) => {
                drop(pages);
                self.space.free(self.iova);
            }
            // The device may still reach the pages: never free them, and
            // never hand the IOVA out again.
            Err(_) => std::mem::forget(pages),
        }
    }
}

/// A PCI function opened through VFIO, implementing [`Device`] on its
/// register [`Window`].
pub struct VfioDevice {
    name: String,
    bdf: String,
    group: u32,
    group_functions: Vec<String>,
    irq_kind: Option<IrqKind>,
    vectors: Vectors,
    /// The window, its length resolved (`len` is `Some`).
    window: Window,
    /// `window.len`, unwrapped.
    window_len: u64,
    // Field order is drop order: the BAR mapping goes before the device
    // files it was mapped from.
    /// The window's BAR, mapped whole.
    bar: Mmio,
    functions: Vec<Box<dyn Function>>,
    dma: Arc<DmaSpace>,
    note: Mutex<Option<String>>,
}

impl VfioDevice {
    /// Open the function at `bdf` (`DDDD:BB:DD.F`) with default options.
    pub fn open(bdf: &str) -> Result<Self> {
        Self::open_with(bdf, &VfioOptions::default())
    }

    /// Open the function at `bdf`.
    pub fn open_with(bdf: &str, opts: &VfioOptions) -> Result<Self> {
        Self::open_on(bdf, opts, &Sysfs::system(), &PciDriverBackend)
    }

    /// Open through a given sysfs tree and backend (tests use doubles).
    pub(crate) fn open_on(
        bdf: &str,
        opts: &VfioOptions,
        sysfs: &Sysfs,
        backend: &dyn Backend,
    ) -> Result<Self> {
        let name = format!("vfio:{bdf}");
        let (_f, group, mut members) = sysfs.check_usable(bdf)?;
        // The asked-for function first: it is the one whose BAR we map.
        members.retain(|m| m != bdf);
        members.insert(0, bdf.to_string());
        let dirs: Vec<_> = members.iter().map(|m| sysfs.device_dir(m)).collect();
        let opened = backend.open(group, &dirs).map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(libc::EBUSY) => " (the group is already open, in this process or another)",
                Some(libc::EACCES) | Some(libc::EPERM) => {
                    " (needs root, or access to /dev/vfio/<group> and a large enough RLIMIT_MEMLOCK)"
                }
                _ => "",
            };
            Error::Os {
                device: name.clone(),
                what: format!("opening IOMMU group {group} through VFIO{hint}"),
                source: e,
            }
        })?;
        let os = |what: &str, e: std::io::Error| Error::Os {
            device: name.clone(),
            what: what.to_string(),
            source: e,
        };
        let primary = &opened.functions[0];
        // The window first: a refusal leaves the command register, BARs and
        // interrupts as they were.
        let w = opts.window;
        if !w.offset.is_multiple_of(4) {
            return Err(Error::Unaligned {
                device: name,
                bar: w.bar,
                base: w.offset,
                addr: 0,
            });
        }
        let bar_len = primary.bar_len(w.bar as usize);
        let no_window = |bar_len| Error::NoWindow {
            device: name.clone(),
            window: w,
            bar_len,
        };
        let window_len = bar_len
            .and_then(|l| w.len_in(l))
            .ok_or_else(|| no_window(bar_len))?;
        let cmd = primary
            .config_read16(PCI_COMMAND)
            .map_err(|e| os("reading the PCI command register", e))?;
        primary
            .config_write16(PCI_COMMAND, cmd | CMD_MEMORY | CMD_MASTER)
            .map_err(|e| os("enabling memory space and bus mastering", e))?;
        let bar = primary.map_bar(w.bar as usize).map_err(|e| {
            os(
                &format!("mapping BAR {} (for the register window {w})", w.bar),
                e,
            )
        })?;
        // The mapping is what accesses go through: it must hold the window
        // too (it is the whole BAR, so it does unless the kernel disagrees
        // with itself).
        if w.len_in(bar.len as u64).is_none_or(|l| l < window_len) {
            return Err(no_window(Some(bar.len as u64)));
        }
        let window = Window {
            len: Some(window_len),
            ..w
        };
        let (irq_kind, n) = [IrqKind::MsiX, IrqKind::Msi]
            .into_iter()
            .map(|k| (k, primary.irq_max(k).min(opts.max_vectors)))
            .find(|&(_, n)| n > 0)
            .map_or((None, 0), |(k, n)| (Some(k), n));
        let vectors = Vectors::new(n).map_err(|e| os("creating eventfds", e))?;
        if let Some(k) = irq_kind {
            primary.irq_enable(k, &vectors.raw_fds()).map_err(|e| {
                os(
                    &format!("routing {n} {} vector(s) to eventfds", k.name()),
                    e,
                )
            })?;
        }
        let align = opened.iommu.alignment().max(crate::iova::PAGE);
        let ranges: Vec<IovaAllocator> = opened
            .iommu
            .iova_ranges()
            .into_iter()
            .filter(|r| r.start < opts.dma_limit)
            .map(|r| IovaAllocator::new(r.start, r.end.min(opts.dma_limit)))
            .filter(|a| a.free_bytes() > 0)
            .collect();
        if ranges.is_empty() {
            return Err(Error::Unusable {
                device: name,
                why: format!(
                    "the IOMMU offers no IOVA range below the device's DMA limit {:#x}",
                    opts.dma_limit
                ),
            });
        }
        Ok(Self {
            name,
            bdf: bdf.to_string(),
            group,
            group_functions: members,
            irq_kind,
            vectors,
            window,
            window_len,
            bar,
            functions: opened.functions,
            dma: Arc::new(DmaSpace {
                iommu: opened.iommu,
                ranges: Mutex::new(ranges),
                align,
            }),
            note: Mutex::new(None),
        })
    }

    /// The PCI address.
    pub fn bdf(&self) -> &str {
        &self.bdf
    }

    /// The register window [`Device`] accesses go to, its length resolved
    /// (`len` is `Some`).
    pub fn window(&self) -> Window {
        self.window
    }

    /// Bytes of the BAR the window is in.
    pub fn window_bar_len(&self) -> u64 {
        self.bar.len as u64
    }

    /// Read the 32-bit word at byte `offset` of BAR `bar`, inside the window
    /// or not, through the VFIO device file (no mapping). For looking at a
    /// function before trusting it (`weft probe` checks whether BAR0 is the
    /// QDMA IP's). There is no writing counterpart; the read reaches the
    /// device, so read only what is known to have no side effects.
    pub fn read_bar32(&self, bar: u8, offset: u64) -> Result<u32> {
        let whole = Window::whole_bar(bar);
        let Some(len) = self.functions[0].bar_len(bar as usize) else {
            return Err(Error::NoWindow {
                device: self.name.clone(),
                window: whole,
                bar_len: None,
            });
        };
        self.check_access(whole, len, len, offset)?;
        self.functions[0]
            .bar_read32(bar as usize, offset)
            .map_err(|e| Error::Os {
                device: self.name.clone(),
                what: format!("reading BAR{bar}+{offset:#x}"),
                source: e,
            })
    }

    /// Map BAR `bar` whole, for register access beside the window (the
    /// QDMA driver reaches BAR0 this way while the window is BAR2).
    pub fn map_bar(&self, bar: u8) -> Result<BarMap> {
        let mmio = self.functions[0]
            .map_bar(bar as usize)
            .map_err(|e| Error::Os {
                device: self.name.clone(),
                what: format!("mapping BAR {bar}"),
                source: e,
            })?;
        Ok(BarMap {
            name: self.name.clone(),
            bar,
            mmio,
        })
    }

    /// The IOMMU group.
    pub fn iommu_group(&self) -> u32 {
        self.group
    }

    /// The group's functions opened into this device's container (this
    /// one first).
    pub fn group_functions(&self) -> &[String] {
        &self.group_functions
    }

    /// Which interrupt mechanism is routed to eventfds (`None`: the function
    /// has neither MSI-X nor MSI).
    pub fn irq_kind(&self) -> Option<IrqKind> {
        self.irq_kind
    }

    /// Interrupt vectors routed to eventfds.
    pub fn vectors(&self) -> usize {
        self.vectors.len()
    }

    /// An async waiter for `vector` (call inside a tokio runtime with I/O
    /// enabled).
    pub fn irq_waiter(&self, vector: u32) -> Result<IrqWaiter> {
        let v = self
            .vectors
            .get(vector as usize)
            .ok_or_else(|| self.no_vector(vector))?;
        IrqWaiter::new(v.clone()).map_err(|e| Error::Os {
            device: self.name.clone(),
            what: format!("registering vector {vector}'s eventfd with tokio"),
            source: e,
        })
    }

    /// Reset the function (`VFIO_DEVICE_RESET`: FLR, or what the kernel's
    /// `reset_method` says, e.g. a secondary bus reset). The kernel saves
    /// and restores config space around it, so the BAR mapping, bus
    /// mastering and the interrupt routing survive; the device's own
    /// registers return to their reset values.
    pub fn reset(&self) -> Result<()> {
        self.functions[0].reset().map_err(|e| Error::Os {
            device: self.name.clone(),
            what: "resetting (VFIO_DEVICE_RESET; see /sys/bus/pci/devices/<bdf>/reset_method)"
                .into(),
            source: e,
        })
    }

    /// Allocate DMA memory backed as `backing` says, mapped at a fresh IOVA.
    pub fn dma_alloc_with(&self, len: usize, backing: Backing) -> Result<VfioDma> {
        if len == 0 {
            return Err(Error::Dma("a DMA buffer needs at least one byte".into()));
        }
        let pages = Pages::alloc(len, backing).map_err(|e| Error::Os {
            device: self.name.clone(),
            what: format!("allocating {len} bytes of {backing:?} DMA memory"),
            source: e,
        })?;
        if !pages.huge() && backing == Backing::Auto && len >= mem::HUGEPAGE / 2 {
            let mut n = self.note.lock().unwrap_or_else(|e| e.into_inner());
            n.get_or_insert_with(|| {
                "DMA memory on regular 4 KiB pages: no 2 MiB hugepages free (reserve some: echo 64 > /proc/sys/vm/nr_hugepages)".into()
            });
        }
        let align = if pages.huge() {
            mem::HUGEPAGE as u64
        } else {
            mem::PAGE as u64
        };
        let iova = self.dma.alloc(pages.len() as u64, align)?;
        // SAFETY: `pages` stays allocated until `VfioDma::drop` has unmapped
        // this IOVA range (it frees the pages only after unmap succeeds).
        if let Err(e) = unsafe { self.dma.iommu.map(iova, pages.len(), pages.ptr()) } {
            self.dma.free(iova);
            return Err(Error::Os {
                device: self.name.clone(),
                what: format!("mapping {} bytes at IOVA {iova:#x}", pages.len()),
                source: e,
            });
        }
        Ok(VfioDma {
            pages: Some(pages),
            len,
            iova,
            space: self.dma.clone(),
        })
    }

    /// A note about how DMA memory is backed, if it fell short of the best
    /// (regular pages where hugepages were wanted).
    pub fn dma_note(&self) -> Option<String> {
        self.note.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Free IOVA space left, in bytes.
    pub fn iova_free_bytes(&self) -> u64 {
        let rs = self.dma.ranges.lock().unwrap_or_else(|e| e.into_inner());
        rs.iter().map(|r| r.free_bytes()).sum()
    }

    fn no_vector(&self, vector: u32) -> Error {
        Error::Unusable {
            device: self.name.clone(),
            why: format!(
                "interrupt vector {vector} does not exist ({} {} vector(s) routed)",
                self.vectors.len(),
                self.irq_kind.map_or("interrupt", |k| k.name())
            ),
        }
    }

    /// Refuse `addr` (from the start of window `w`, `len` bytes, in a BAR
    /// of `bar_len`) unless it is 4-byte aligned and `addr + 4 <= len`.
    fn check_access(&self, w: Window, len: u64, bar_len: u64, addr: u64) -> Result<()> {
        window::check_access(&self.name, w, len, bar_len, addr)
    }

    /// The mapped register at map address `addr`: BAR byte
    /// `window.offset + addr`.
    fn reg_ptr(&self, addr: u32) -> Result<*mut u32> {
        let (w, len) = (self.window, self.window_len);
        self.check_access(w, len, self.bar.len as u64, addr as u64)?;
        let at = w.offset + addr as u64;
        // SAFETY: at + 4 = offset + addr + 4 <= offset + window_len <= the
        // mapping's length (addr checked just above; the window checked
        // against the mapping at open), so the pointer stays inside the
        // mapping. The mapping is page-aligned and offset and addr are
        // multiples of 4 (offset checked at open, addr above), so it is
        // 4-byte aligned.
        Ok(unsafe { self.bar.ptr.add(at as usize) }.cast())
    }
}

/// A whole BAR mapped for 32-bit register access ([`VfioDevice::map_bar`]).
pub struct BarMap {
    name: String,
    bar: u8,
    mmio: Mmio,
}

impl BarMap {
    /// Bytes of the BAR.
    pub fn len(&self) -> u64 {
        self.mmio.len as u64
    }

    /// Whether the BAR is empty (never, for a mapped BAR).
    pub fn is_empty(&self) -> bool {
        self.mmio.len == 0
    }

    fn ptr(&self, offset: u64) -> Result<*mut u32> {
        let len = self.len();
        window::check_access(&self.name, Window::whole_bar(self.bar), len, len, offset)?;
        // SAFETY: offset + 4 <= len (checked just above) and offset is a
        // multiple of 4 in a page-aligned mapping.
        Ok(unsafe { self.mmio.ptr.add(offset as usize) }.cast())
    }

    /// Read the register at byte `offset`.
    pub fn read32(&self, offset: u64) -> Result<u32> {
        let p = self.ptr(offset)?;
        // SAFETY: `p` points at 4 aligned bytes inside the mapping, alive
        // while `self` is.
        Ok(unsafe { window::mmio_read(p) })
    }

    /// Write the register at byte `offset`.
    pub fn write32(&self, offset: u64, value: u32) -> Result<()> {
        let p = self.ptr(offset)?;
        // SAFETY: as in `read32`.
        unsafe { window::mmio_write(p, value) };
        Ok(())
    }
}

impl Device for VfioDevice {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn bar_len(&self) -> u64 {
        self.window_len
    }

    fn read32(&self, addr: u32) -> Result<u32> {
        let p = self.reg_ptr(addr)?;
        // SAFETY: `p` points at 4 aligned bytes inside the mapped BAR's
        // window (`reg_ptr`), alive while `self` is.
        Ok(unsafe { window::mmio_read(p) })
    }

    fn write32(&self, addr: u32, value: u32) -> Result<()> {
        let p = self.reg_ptr(addr)?;
        // SAFETY: as in `read32`.
        unsafe { window::mmio_write(p, value) };
        Ok(())
    }

    fn dma_alloc(&self, len: usize) -> Result<Box<dyn DmaBuffer>> {
        Ok(Box::new(self.dma_alloc_with(len, Backing::Auto)?))
    }

    fn wait_irq(&self, vector: u32, timeout: Duration) -> Result<bool> {
        if vector as usize >= self.vectors.len() {
            return Err(self.no_vector(vector));
        }
        self.vectors
            .wait(vector as usize, timeout)
            .map_err(|e| Error::Os {
                device: self.name.clone(),
                what: format!("waiting for interrupt vector {vector}"),
                source: e,
            })
    }
}

impl Drop for VfioDevice {
    fn drop(&mut self) {
        if let Some(k) = self.irq_kind {
            // Closing the device file would disable them too; doing it
            // first means no interrupt lands on an eventfd being closed.
            let _ = self.functions[0].irq_disable(k);
        }
    }
}

#[cfg(test)]
mod tests;
