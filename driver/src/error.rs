//! The driver's error type.

use thiserror::Error;

/// Result alias of the driver.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What can go wrong talking to a card.
#[derive(Debug, Error)]
pub enum Error {
    /// The register bus answered an access with an error response.
    #[error("{device}: {op} at BAR0+{addr:#06x} answered {resp}")]
    Bus {
        /// Which device.
        device: String,
        /// "read" or "write".
        op: &'static str,
        /// Byte address.
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
    /// An offset past the end of the BAR.
    #[error("{device}: offset {addr:#x} is outside BAR0 ({len:#x} bytes)")]
    OutOfRange {
        /// Which device.
        device: String,
        /// Byte address.
        addr: u64,
        /// BAR length.
        len: u64,
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
    /// The BAR is smaller than the register map.
    #[error("{device}: BAR0 is {bar:#x} bytes but the register map needs {map:#x}")]
    BarTooSmall {
        /// Which device.
        device: String,
        /// BAR length.
        bar: u64,
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
    /// A queue was misused or the card broke the ring protocol.
    #[error("{device}: queue {queue}: {why}")]
    Queue {
        /// Which device.
        device: String,
        /// Which queue, e.g. `h2c0`.
        queue: String,
        /// What went wrong.
        why: String,
    },
}
