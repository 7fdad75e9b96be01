//! DMA memory: anonymous mappings, on 2 MiB hugepages when the system has
//! them free, else on regular 4 KiB pages.
//!
//! Hugepages matter for DMA because one IOMMU entry (and one IOTLB entry)
//! then covers 2 MiB instead of 4 KiB. They must be reserved beforehand
//! (`echo N > /proc/sys/vm/nr_hugepages`); when none are free the driver
//! falls back to regular pages and says so ([`Pages::huge`], and
//! `VfioDevice::dma_note`). VFIO pins the pages when they are mapped, so
//! they cannot move or be swapped while the device may use them.

use std::io;

/// Size of a (2 MiB) hugepage on x86-64.
pub const HUGEPAGE: usize = 2 << 20;
/// Size of a regular page.
pub const PAGE: usize = 4096;

/// Which pages back a DMA buffer.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Backing {
    /// 2 MiB hugepages when free, else regular pages. Buffers below half a
    /// hugepage use regular pages: a whole hugepage for a 4 KiB ring would
    /// waste the reserved pool.
    Auto,
    /// 2 MiB hugepages or fail.
    Huge,
    /// Regular pages.
    Regular,
}

/// An anonymous mapping, unmapped on drop.
pub struct Pages {
    ptr: *mut u8,
    len: usize,
    huge: bool,
}

// SAFETY: `Pages` owns its mapping exclusively; the pointer is only used
// through the owner's methods, which copy bytes in and out.
unsafe impl Send for Pages {}
// SAFETY: as above; concurrent copies are plain memory accesses of
// disjoint or device-shared bytes, ordered by the caller's fences.
unsafe impl Sync for Pages {}

fn mmap(len: usize, huge: bool) -> io::Result<*mut u8> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE;
    if huge {
        flags |= libc::MAP_HUGETLB;
    }
    // SAFETY: an anonymous mapping at an address the kernel chooses touches
    // no existing memory; the result is checked against MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(p.cast())
}

impl Pages {
    /// Map at least `len` bytes (rounded up to the page size used).
    pub fn alloc(len: usize, backing: Backing) -> io::Result<Pages> {
        let len = len.max(1);
        let try_huge = match backing {
            Backing::Huge => true,
            Backing::Regular => false,
            Backing::Auto => len >= HUGEPAGE / 2,
        };
        if try_huge {
            let hlen = len.div_ceil(HUGEPAGE) * HUGEPAGE;
            match mmap(hlen, true) {
                Ok(ptr) => {
                    return Ok(Pages {
                        ptr,
                        len: hlen,
                        huge: true,
                    })
                }
                Err(e) if backing == Backing::Huge => return Err(e),
                Err(_) => {}
            }
        }
        let rlen = len.div_ceil(PAGE) * PAGE;
        Ok(Pages {
            ptr: mmap(rlen, false)?,
            len: rlen,
            huge: false,
        })
    }

    /// Start of the mapping.
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Mapped length (whole pages).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: at least one page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether hugepages back it.
    pub fn huge(&self) -> bool {
        self.huge
    }
}

impl Drop for Pages {
    fn drop(&mut self) {
        // SAFETY: `ptr..ptr+len` is the mapping made in `alloc`, and nothing
        // else refers to it once its owner is dropped (the IOMMU mapping is
        // removed before, see `VfioDma::drop`).
        unsafe {
            libc::munmap(self.ptr.cast(), self.len);
        }
    }
}

/// Hugepages free right now, from /proc/meminfo (`HugePages_Free`).
pub fn hugepages_free() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_pages_round_up_and_hold_data() {
        let p = Pages::alloc(5000, Backing::Regular).unwrap();
        assert_eq!(p.len(), 8192);
        assert!(!p.huge());
        // SAFETY: the mapping is 8192 bytes long and owned by `p`.
        unsafe {
            p.ptr().add(8191).write(7);
            assert_eq!(p.ptr().add(8191).read(), 7);
        }
    }

    #[test]
    fn auto_falls_back_to_regular_pages() {
        // Whether or not this machine has hugepages reserved, Auto succeeds.
        let p = Pages::alloc(HUGEPAGE, Backing::Auto).unwrap();
        assert!(p.len() >= HUGEPAGE);
        if hugepages_free() == Some(0) {
            assert!(!p.huge());
            assert!(Pages::alloc(HUGEPAGE, Backing::Huge).is_err());
        }
    }
}
