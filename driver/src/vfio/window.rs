//! Where a function's register map sits: a BAR and a byte offset in it.
//!
//! A [`super::VfioDevice`] serves [`crate::Device`]'s register accesses
//! (byte addresses of the map) from one window: the map's address `addr` is
//! the BAR's byte `offset + addr`. On a weft card the window is
//! [`Window::OPENNIC`]: BAR0 is the QDMA IP's register space and the map is
//! at BAR2 + 0x100000 (`weft_regs::opennic`). Other devices (QEMU's `edu`
//! and `e1000e` in the guest test) keep their registers at a BAR's base:
//! [`Window::whole_bar`].

use crate::{Error, Result};
use std::fmt;
use std::sync::atomic::{fence, Ordering};
use weft_regs::opennic;

/// Which BAR holds the register map, where in it, and how much of it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The BAR, 0..=5.
    pub bar: u8,
    /// Byte offset of the map's address 0 in the BAR; a multiple of 4.
    pub offset: u64,
    /// Bytes of the window; `None`: from `offset` to the BAR's end.
    pub len: Option<u64>,
}

const _: () = assert!(opennic::BAR <= 5, "the OpenNIC register BAR is not a BAR");

impl Window {
    /// weft's map on a card running the OpenNIC shell: BAR2 + 0x100000,
    /// `1 << weft_regs::ADDR_BITS` bytes (the 250 MHz box's AXI4-Lite
    /// slave 0; the next 64 KiB are slave 1's). See `weft_regs::opennic`.
    pub const OPENNIC: Window = Window {
        bar: opennic::BAR as u8,
        offset: opennic::MAP_OFFSET as u64,
        len: Some(1 << weft_regs::ADDR_BITS),
    };

    /// All of BAR `bar`, from its first byte (a device whose registers
    /// start at the BAR's base, as QEMU's `edu` and `e1000e` on BAR 0).
    pub const fn whole_bar(bar: u8) -> Window {
        Window {
            bar,
            offset: 0,
            len: None,
        }
    }

    /// The window's length in a BAR of `bar_len` bytes, or `None` when it
    /// does not fit there (or holds not even one 32-bit register).
    pub fn len_in(&self, bar_len: u64) -> Option<u64> {
        let len = match self.len {
            Some(l) => l,
            None => bar_len.checked_sub(self.offset)?,
        };
        let end = self.offset.checked_add(len)?;
        (end <= bar_len && len >= 4).then_some(len)
    }
}

/// The window to open a weft card with: [`Window::OPENNIC`].
impl Default for Window {
    fn default() -> Self {
        Self::OPENNIC
    }
}

/// `BAR2+0x100000 (64 KiB)`, or `BAR0+0x0 (to the BAR's end)`.
impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BAR{}+{:#x} ", self.bar, self.offset)?;
        match self.len {
            Some(l) => write!(f, "({})", bytes(l)),
            None => write!(f, "(to the BAR's end)"),
        }
    }
}

/// Refuse a register access at `addr` (from the start of window `w`,
/// `len` bytes, in a BAR of `bar_len`) unless it is 4-byte aligned and
/// `addr + 4 <= len`: [`Error::Unaligned`], [`Error::OutsideWindow`].
/// Shared by the devices that map a BAR ([`super::VfioDevice`],
/// [`crate::onic::OnicDevice`]).
pub(crate) fn check_access(
    device: &str,
    w: Window,
    len: u64,
    bar_len: u64,
    addr: u64,
) -> Result<()> {
    if !addr.is_multiple_of(4) {
        return Err(Error::Unaligned {
            device: device.to_string(),
            bar: w.bar,
            base: w.offset,
            addr,
        });
    }
    if addr.checked_add(4).is_none_or(|end| end > len) {
        return Err(Error::OutsideWindow {
            device: device.to_string(),
            bar: w.bar,
            base: w.offset,
            addr,
            window: len,
            bar_len,
        });
    }
    Ok(())
}

/// A byte count for messages: `4 MiB`, `64 KiB`, else `0x1234 bytes`.
pub(crate) fn bytes(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match n {
        0 => "0 bytes".into(),
        n if n.is_multiple_of(GIB) => format!("{} GiB", n / GIB),
        n if n.is_multiple_of(MIB) => format!("{} MiB", n / MIB),
        n if n.is_multiple_of(KIB) => format!("{} KiB", n / KIB),
        n => format!("{n:#x} bytes"),
    }
}

/// Read the register at `p`, fenced on both sides so that it is ordered
/// with the CPU's other memory accesses (DMA memory, other registers).
///
/// # Safety
/// `p` must point at 4 aligned bytes of a live register mapping.
pub(crate) unsafe fn mmio_read(p: *const u32) -> u32 {
    fence(Ordering::SeqCst);
    // SAFETY: the caller's contract; volatile because a register read has
    // side effects and must be neither merged nor elided.
    let v = unsafe { p.read_volatile() };
    fence(Ordering::SeqCst);
    v
}

/// Write the register at `p` as one whole-word store (the shell's register
/// bus has no byte strobes), fenced on both sides: descriptors written to
/// DMA memory are visible to the device before a doorbell write reaches it.
///
/// # Safety
/// `p` must point at 4 aligned bytes of a live register mapping.
pub(crate) unsafe fn mmio_write(p: *mut u32, value: u32) {
    fence(Ordering::SeqCst);
    // SAFETY: the caller's contract.
    unsafe { p.write_volatile(value) };
    fence(Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_opennic_window_is_bar2_at_0x100000() {
        let w = Window::default();
        assert_eq!(w, Window::OPENNIC);
        assert_eq!(
            (w.bar, w.offset, w.len),
            (2, 0x10_0000, Some(0x1_0000)),
            "weft_regs::opennic: BAR2 + 0x100000, 64 KiB"
        );
        assert_eq!(w.to_string(), "BAR2+0x100000 (64 KiB)");
        // Fits the shell's 4 MiB BAR2, not a 1 MiB one.
        assert_eq!(w.len_in(4 << 20), Some(0x1_0000));
        assert_eq!(w.len_in(1 << 20), None);
        assert_eq!(w.len_in(0x10_fffc), None);
        assert_eq!(w.len_in(0x11_0000), Some(0x1_0000));
    }

    #[test]
    fn a_whole_bar_window_spans_the_bar() {
        let w = Window::whole_bar(0);
        assert_eq!(w.to_string(), "BAR0+0x0 (to the BAR's end)");
        assert_eq!(w.len_in(1 << 20), Some(1 << 20));
        assert_eq!(w.len_in(0), None);
        let past = Window {
            offset: u64::MAX - 2,
            len: Some(8),
            ..w
        };
        assert_eq!(past.len_in(u64::MAX), None, "no overflow");
    }

    #[test]
    fn byte_counts_read_naturally() {
        assert_eq!(bytes(4 << 20), "4 MiB");
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(0x1234), "0x1234 bytes");
        assert_eq!(bytes(0), "0 bytes");
    }
}
