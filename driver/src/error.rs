//! The driver's error type.

use crate::vfio::window::{bytes, Window};
use thiserror::Error;

/// Result alias of the driver.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong talking to a card.
#[derive(Debug, Error)]
pub enum Error {
    /// The register bus answered an access with an error response.
    #[error("{device}: {op} at map address {addr:#06x} answered {resp}")]
    Bus {
        /// Which device.
        device: String,
        /// "read" or "write".
        op: &'static str,
        /// Byte address in the register map.
        addr: u32,
        /// The response, e.g. "SLVERR" or "DECERR".
        resp: &'static str,
    },
    /// A write to a register that the map declares read-only was refused
    /// before it reached the device.
    #[error("register {block}.{reg} is read-only")]
    ReadOnly {
        /// Block name.
        block: &'static str,
        /// Register name.
        reg: &'static str,
    },
    /// An address past the end of a device's register window, or not
    /// 4-byte aligned (the simulated card's refusal; a VFIO device says
    /// which BAR with [`Error::OutsideWindow`] and [`Error::Unaligned`]).
    #[error("{device}: map address {addr:#x} is outside the register window ({len:#x} bytes) or not 4-byte aligned")]
    OutOfRange {
        /// Which device.
        device: String,
        /// Byte address in the register map.
        addr: u64,
        /// Window length.
        len: u64,
    },
    /// A register access past the end of a VFIO device's register window
    /// (or of the BAR), refused before it reaches the device.
    #[error("{device}: BAR{bar}+{base:#x}+{addr:#x} is outside the register window ({} at BAR{bar}+{base:#x} of a {} BAR)", bytes(*.window), bytes(*.bar_len))]
    OutsideWindow {
        /// Which device.
        device: String,
        /// The BAR.
        bar: u8,
        /// Byte offset of the window in the BAR.
        base: u64,
        /// Byte address asked for, from the window's start.
        addr: u64,
        /// Window length.
        window: u64,
        /// BAR length.
        bar_len: u64,
    },
    /// A register access (or a window) that is not on a 32-bit boundary,
    /// refused before it reaches the device.
    #[error(
        "{device}: BAR{bar}+{base:#x}+{addr:#x} is not 4-byte aligned (registers are 32-bit words)"
    )]
    Unaligned {
        /// Which device.
        device: String,
        /// The BAR.
        bar: u8,
        /// Byte offset of the window in the BAR.
        base: u64,
        /// Byte address asked for, from the window's start.
        addr: u64,
    },
    /// The register window asked for is not on the function: its BAR is
    /// not implemented or too small. Refused at open.
    #[error("{device}: no register window {window}: {}", no_window(.window, *.bar_len))]
    NoWindow {
        /// Which device.
        device: String,
        /// The window asked for.
        window: Window,
        /// The BAR's length, when the function implements it.
        bar_len: Option<u64>,
    },
    /// The ID block is not a weft card's.
    #[error("{device}: not a weft card: ID.MAGIC reads {found:#010x}, expected {expected:#010x}")]
    NotWeft {
        /// Which device.
        device: String,
        /// What was read.
        found: u32,
        /// What a weft card answers.
        expected: u32,
    },
    /// The card's register map is a version this driver does not speak.
    #[error("{device}: register map version {found_major}.{found_minor} is not supported (this driver speaks {ours_major}.x, up to {ours_major}.{ours_minor})")]
    MapVersion {
        /// Which device.
        device: String,
        /// The card's major version.
        found_major: u32,
        /// The card's minor version.
        found_minor: u32,
        /// Our major version.
        ours_major: u32,
        /// Our minor version.
        ours_minor: u32,
    },
    /// The register chain is malformed.
    #[error("{device}: register chain is malformed at {addr:#06x}: {why}")]
    Chain {
        /// Which device.
        device: String,
        /// Where the walk stopped.
        addr: u32,
        /// What was wrong.
        why: String,
    },
    /// The register window is smaller than the map the ID block declares.
    #[error("{device}: the register window is {window:#x} bytes but the register map needs {map:#x} (ID.MAP_SPAN)")]
    WindowTooSmall {
        /// Which device.
        device: String,
        /// Window length ([`crate::Device::bar_len`]).
        window: u64,
        /// Map span.
        map: u64,
    },
    /// DMA address space is exhausted or a request is invalid.
    #[error("DMA: {0}")]
    Dma(String),
    /// The device stopped responding.
    #[error("{device}: {what} timed out")]
    Timeout {
        /// Which device.
        device: String,
        /// What was waited for.
        what: String,
    },
    /// The device is not usable for another reason.
    #[error("{device}: {why}")]
    Unusable {
        /// Which device.
        device: String,
        /// Why.
        why: String,
    },
    /// No PCI function at that address.
    #[error(
        "no PCI device {bdf}: nothing at /sys/bus/pci/devices/{bdf} (lspci -D lists the addresses)"
    )]
    NoSuchDevice {
        /// The PCI address asked for.
        bdf: String,
    },
    /// The function is bound to another driver, or to none.
    #[error("vfio:{bdf}: not bound to vfio-pci (driver: {}); bind it with `weft bind {bdf}` as root, or by hand: echo vfio-pci > /sys/bus/pci/devices/{bdf}/driver_override; echo {bdf} > /sys/bus/pci/devices/{bdf}/driver/unbind; echo {bdf} > /sys/bus/pci/drivers_probe", driver.as_deref().unwrap_or("none"))]
    NotBound {
        /// The PCI address.
        bdf: String,
        /// The driver it is bound to, if any.
        driver: Option<String>,
    },
    /// The kernel has no IOMMU translation for the device.
    #[error("vfio:{bdf}: the IOMMU is not enabled: {why}")]
    NoIommu {
        /// The PCI address.
        bdf: String,
        /// What was found missing.
        why: String,
    },
    /// The kernel refused to let this process open or map a BAR through
    /// its sysfs `resourceN` file (see [`crate::onic`] for the causes
    /// behind each errno).
    #[error("{device}: {op} {} was refused ({source}): {why}", .path.display())]
    MapRefused {
        /// Which device.
        device: String,
        /// "opening" or "mapping".
        op: &'static str,
        /// The sysfs file, e.g. `/sys/bus/pci/devices/<bdf>/resource2`.
        path: std::path::PathBuf,
        /// What the refusal means on this kernel and what to do about it.
        why: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The QDMA engine is missing, in a mode the driver does not drive, or
    /// refused what the driver asked (what was found is in `why`).
    #[error("{device}: QDMA: {why}")]
    Qdma {
        /// Which device.
        device: String,
        /// What was found.
        why: String,
    },
    /// An operating-system call failed.
    #[error("{device}: {what}: {source}")]
    Os {
        /// Which device.
        device: String,
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// Why a window is not on the function, for [`Error::NoWindow`].
fn no_window(w: &Window, bar_len: Option<u64>) -> String {
    let why = match bar_len {
        None => format!("BAR{} is not implemented", w.bar),
        Some(l) => format!("BAR{} is {}, too small for it", w.bar, bytes(l)),
    };
    if *w == Window::OPENNIC {
        format!("{why} (a weft card under AMD's OpenNIC shell has its register map there, weft_regs::opennic; BAR0 is the QDMA IP's)")
    } else {
        why
    }
}
