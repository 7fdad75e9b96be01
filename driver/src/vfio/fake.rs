//! An in-memory double of the VFIO backend: BARs are plain memory (the
//! mapping and `bar_read32` see the same words, as on a device), the IOMMU
//! a table of mappings, interrupts the eventfds the driver hands over
//! (tests signal them as the kernel would).

use super::backend::{Backend, Function, Iommu, IrqKind, Mmio, Opened};
use std::collections::BTreeMap;
use std::io;
use std::ops::Range;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// One BAR's memory: 32-bit words, shared by the mapping and the reads.
pub struct BarMem(Box<[AtomicU32]>);

impl BarMem {
    fn len(&self) -> u64 {
        4 * self.0.len() as u64
    }
}

/// What the double records and how it is set up.
#[derive(Default)]
pub struct State {
    /// IOMMU mappings: IOVA -> (length, virtual address).
    pub maps: BTreeMap<u64, (usize, usize)>,
    /// Routed interrupts.
    pub irqs: Option<(IrqKind, Vec<RawFd>)>,
    /// Disable calls seen.
    pub irq_disables: u32,
    /// Resets seen.
    pub resets: u32,
    /// PCI command register.
    pub command: u16,
    /// Functions opened, as sysfs directories.
    pub opened: Vec<PathBuf>,
    /// Make the next unmap fail.
    pub fail_unmap: bool,
    /// BARs mapped, by index.
    pub mapped: Vec<usize>,
}

/// The double.
#[derive(Clone)]
pub struct FakeBackend {
    pub state: Arc<Mutex<State>>,
    /// The BARs by index (`None`: not implemented).
    pub bars: [Option<Arc<BarMem>>; 6],
    pub msix: usize,
    pub msi: usize,
    pub ranges: Vec<Range<u64>>,
}

impl FakeBackend {
    /// A function with no BARs yet (add them with [`FakeBackend::bar`]).
    pub fn new() -> Self {
        Self {
            state: Arc::default(),
            bars: Default::default(),
            msix: 4,
            msi: 1,
            // As VFIO reports on x86: everything below the MSI window and
            // above it, in a 39-bit space.
            ranges: vec![0x1000..0xfee0_0000, 0xfef0_0000..1 << 39],
        }
    }

    /// Give the function BAR `index` holding `words` (its length is 4
    /// times their number).
    pub fn bar(mut self, index: usize, words: Vec<u32>) -> Self {
        let mem = words.into_iter().map(AtomicU32::new).collect();
        self.bars[index] = Some(Arc::new(BarMem(mem)));
        self
    }

    /// The word at byte `offset` of BAR `index`, as the device holds it now.
    pub fn peek(&self, index: usize, offset: u64) -> u32 {
        let b = self.bars[index].as_ref().expect("no such BAR");
        b.0[(offset / 4) as usize].load(Ordering::SeqCst)
    }

    /// Signal vector `i` as the kernel would on an interrupt.
    pub fn fire(&self, i: usize) {
        let fd = self.state.lock().unwrap().irqs.as_ref().unwrap().1[i];
        let one = 1u64;
        // SAFETY: writes 8 bytes to an eventfd the driver owns and keeps
        // open while the test holds the device.
        let n = unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
        assert_eq!(n, 8);
    }
}

struct FakeIommu(FakeBackend);

impl Iommu for FakeIommu {
    fn alignment(&self) -> u64 {
        4096
    }
    fn iova_ranges(&self) -> Vec<Range<u64>> {
        self.0.ranges.clone()
    }
    unsafe fn map(&self, iova: u64, len: usize, vaddr: *const u8) -> io::Result<()> {
        let mut s = self.0.state.lock().unwrap();
        if !iova.is_multiple_of(4096)
            || !len.is_multiple_of(4096)
            || !(vaddr as usize).is_multiple_of(4096)
        {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let overlaps = s
            .maps
            .iter()
            .any(|(&a, &(l, _))| iova < a + l as u64 && a < iova + len as u64);
        if overlaps {
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        s.maps.insert(iova, (len, vaddr as usize));
        Ok(())
    }
    fn unmap(&self, iova: u64, len: usize) -> io::Result<()> {
        let mut s = self.0.state.lock().unwrap();
        if std::mem::take(&mut s.fail_unmap) {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        match s.maps.remove(&iova) {
            Some((l, _)) if l == len => Ok(()),
            _ => Err(io::Error::from_raw_os_error(libc::ENOENT)),
        }
    }
}

struct FakeFn {
    b: FakeBackend,
    primary: bool,
}

impl Function for FakeFn {
    fn config_read16(&self, offset: u16) -> io::Result<u16> {
        assert_eq!(offset, 4);
        Ok(self.b.state.lock().unwrap().command)
    }
    fn config_write16(&self, offset: u16, value: u16) -> io::Result<()> {
        assert_eq!(offset, 4);
        self.b.state.lock().unwrap().command = value;
        Ok(())
    }
    fn bar_len(&self, index: usize) -> Option<u64> {
        Some(self.b.bars.get(index)?.as_ref()?.len())
    }
    fn map_bar(&self, index: usize) -> io::Result<Mmio> {
        assert!(self.primary, "only the asked-for function's BAR is mapped");
        let mem = self
            .b
            .bars
            .get(index)
            .cloned()
            .flatten()
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        self.b.state.lock().unwrap().mapped.push(index);
        // The driver's volatile accesses go straight to the atomics'
        // memory (`AtomicU32` has `u32`'s layout); the tests are the only
        // other party and never access concurrently.
        Ok(Mmio {
            ptr: mem.0.as_ptr().cast_mut().cast::<u8>(),
            len: mem.len() as usize,
            _keep: Box::new(mem),
        })
    }
    fn bar_read32(&self, index: usize, offset: u64) -> io::Result<u32> {
        let mem = self
            .b
            .bars
            .get(index)
            .and_then(|b| b.as_ref())
            .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
        if !offset.is_multiple_of(4) || offset + 4 > mem.len() {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        Ok(mem.0[(offset / 4) as usize].load(Ordering::SeqCst))
    }
    fn irq_max(&self, kind: IrqKind) -> usize {
        match kind {
            IrqKind::MsiX => self.b.msix,
            IrqKind::Msi => self.b.msi,
            IrqKind::Intx => 1,
        }
    }
    fn irq_enable(&self, kind: IrqKind, fds: &[RawFd]) -> io::Result<()> {
        self.b.state.lock().unwrap().irqs = Some((kind, fds.to_vec()));
        Ok(())
    }
    fn irq_disable(&self, _kind: IrqKind) -> io::Result<()> {
        self.b.state.lock().unwrap().irq_disables += 1;
        Ok(())
    }
    fn reset(&self) -> io::Result<()> {
        self.b.state.lock().unwrap().resets += 1;
        Ok(())
    }
}

impl Backend for FakeBackend {
    fn open(&self, _group: u32, dirs: &[PathBuf]) -> io::Result<Opened> {
        self.state.lock().unwrap().opened = dirs.to_vec();
        Ok(Opened {
            iommu: Arc::new(FakeIommu(self.clone())),
            functions: dirs
                .iter()
                .enumerate()
                .map(|(i, _)| {
                    Box::new(FakeFn {
                        b: self.clone(),
                        primary: i == 0,
                    }) as Box<dyn Function>
                })
                .collect(),
        })
    }
}
