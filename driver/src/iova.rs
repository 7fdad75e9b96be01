//! An allocator of I/O virtual addresses for DMA mappings.
//!
//! The card addresses host memory by IOVA, which the IOMMU translates; an
//! IOVA is never assumed equal to a CPU address (QEMU's emulated IOMMU has
//! 39 address bits, a process's heap lives far above that). Allocations are
//! page-aligned, first-fit, and freed ranges coalesce.

use crate::{Error, Result};
use std::collections::BTreeMap;

/// Page size of IOVA allocations.
pub const PAGE: u64 = 4096;

/// Hands out disjoint, page-aligned IOVA ranges inside `[base, limit)`.
#[derive(Clone, Debug)]
pub struct IovaAllocator {
    /// Free ranges: start -> end (exclusive).
    free: BTreeMap<u64, u64>,
    /// Allocated ranges: start -> end (exclusive).
    used: BTreeMap<u64, u64>,
}

fn round_up(x: u64, a: u64) -> Option<u64> {
    Some(x.checked_add(a - 1)? / a * a)
}

impl IovaAllocator {
    /// An allocator over `[base, limit)`; both are rounded inwards to pages.
    pub fn new(base: u64, limit: u64) -> Self {
        let mut free = BTreeMap::new();
        let start = round_up(base, PAGE).unwrap_or(u64::MAX);
        let end = limit / PAGE * PAGE;
        if start < end {
            free.insert(start, end);
        }
        Self {
            free,
            used: BTreeMap::new(),
        }
    }

    /// Allocate `len` bytes (rounded up to pages) aligned to `align` (a
    /// power of two, at least a page).
    pub fn alloc(&mut self, len: u64, align: u64) -> Result<u64> {
        if len == 0 || !align.is_power_of_two() {
            return Err(Error::Dma(format!(
                "bad request: {len} bytes aligned to {align}"
            )));
        }
        let align = align.max(PAGE);
        let len = round_up(len, PAGE).ok_or_else(|| Error::Dma("length overflows".into()))?;
        let hit = self.free.iter().find_map(|(&s, &e)| {
            let a = round_up(s, align)?;
            (a.checked_add(len)? <= e).then_some((s, e, a))
        });
        let Some((s, e, a)) = hit else {
            return Err(Error::Dma(format!(
                "no free IOVA range of {len} bytes aligned to {align}"
            )));
        };
        self.free.remove(&s);
        if s < a {
            self.free.insert(s, a);
        }
        if a + len < e {
            self.free.insert(a + len, e);
        }
        self.used.insert(a, a + len);
        Ok(a)
    }

    /// Return the range that starts at `iova`.
    pub fn free(&mut self, iova: u64) -> Result<()> {
        let Some(mut end) = self.used.remove(&iova) else {
            return Err(Error::Dma(format!("{iova:#x} was not allocated")));
        };
        let mut start = iova;
        if let Some((&ps, &pe)) = self.free.range(..start).next_back() {
            if pe == start {
                self.free.remove(&ps);
                start = ps;
            }
        }
        if let Some(ne) = self.free.remove(&end) {
            end = ne;
        }
        self.free.insert(start, end);
        Ok(())
    }

    /// Allocated ranges as (start, end).
    pub fn allocated(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.used.iter().map(|(&s, &e)| (s, e))
    }

    /// Free bytes left.
    pub fn free_bytes(&self) -> u64 {
        self.free.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn aligned_and_coalescing() {
        let mut a = IovaAllocator::new(0x1000, 0x10_0000);
        let x = a.alloc(1, 0x1000).unwrap();
        let y = a.alloc(0x3000, 0x4000).unwrap();
        assert_eq!(x, 0x1000);
        assert_eq!(y % 0x4000, 0);
        a.free(x).unwrap();
        a.free(y).unwrap();
        assert_eq!(a.free_bytes(), 0x10_0000 - 0x1000);
        assert_eq!(a.free.len(), 1);
        assert!(a.free(y).is_err());
        assert!(a.alloc(0x20_0000, 0x1000).is_err());
        assert!(a.alloc(0, 0x1000).is_err());
    }

    proptest! {
        #[test]
        fn ranges_stay_disjoint(ops in proptest::collection::vec((1u64..0x9000, 0u32..4, any::<bool>()), 1..60)) {
            let (base, limit) = (0x10_0000u64, 0x20_0000u64);
            let mut a = IovaAllocator::new(base, limit);
            let mut live: Vec<(u64, u64)> = vec![];
            for (len, align_log, free_one) in ops {
                if free_one && !live.is_empty() {
                    let (s, _) = live.remove(0);
                    a.free(s).unwrap();
                } else if let Ok(s) = a.alloc(len, PAGE << align_log) {
                    let e = s + round_up(len, PAGE).unwrap();
                    prop_assert!(s >= base && e <= limit);
                    prop_assert_eq!(s % (PAGE << align_log), 0);
                    for &(ls, le) in &live {
                        prop_assert!(e <= ls || s >= le, "overlap");
                    }
                    live.push((s, e));
                }
            }
            let used: u64 = live.iter().map(|(s, e)| e - s).sum();
            prop_assert_eq!(used + a.free_bytes(), limit - base);
        }
    }
}
