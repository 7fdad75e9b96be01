//! Device specs: which card to open.

use crate::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// Which simulation runs the simulated card (`weft_top`, the design that
/// is flashed, or its reference model).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum SimChoice {
    /// `sim`: Verilator when it is installed, else rust-hdl's simulator.
    Auto,
    /// `sim:rust-hdl`: rust-hdl's simulator (needs nothing installed; slow).
    RustHdl,
    /// `sim:verilator`: Verilator (needs `verilator` and a C++ compiler).
    Verilator,
    /// `sim:model`: the top's reference model with a timing model (no RTL).
    Model,
    /// `sim:qdma`: `weft_top` (Verilator when installed, else rust-hdl)
    /// behind a behavioural model of the shell's QDMA subsystem, reached
    /// through weft's QDMA driver: the kernel-bypass path without a card.
    Qdma,
}

/// A card to open: `sim` (Verilator when installed, else rust-hdl),
/// `sim:verilator`, `sim:rust-hdl`, `sim:model`, `sim:qdma`,
/// `vfio:DDDD:BB:DD.F` (a PCI address bound to vfio-pci: registers only),
/// `qdma:DDDD:BB:DD.F` (the same, with frames through weft's QDMA queues), `onic:DDDD:BB:DD.F` (a card whose
/// `onic` netdev is bound: its registers through sysfs `resource2`), or
/// `unix:PATH` (the control socket of a card another process serves,
/// `weft card serve`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// The simulated card.
    Sim(SimChoice),
    /// A real card through VFIO: registers only.
    Vfio(String),
    /// A real card through VFIO: registers through BAR2, frames through
    /// weft's QDMA queue pairs (kernel bypass).
    Qdma(String),
    /// A real card under the OpenNIC shell with its `onic` driver bound:
    /// registers through BAR2 (sysfs `resource2`).
    Onic(String),
    /// A served card's registers through its control socket.
    Unix(std::path::PathBuf),
}

impl Default for DeviceSpec {
    fn default() -> Self {
        DeviceSpec::Sim(SimChoice::Auto)
    }
}

/// Check a PCI address of the form `DDDD:BB:DD.F` (hex digits).
fn valid_bdf(s: &str) -> bool {
    let b = s.as_bytes();
    let hex = |r: std::ops::Range<usize>| b[r].iter().all(|c| c.is_ascii_hexdigit());
    b.len() == 12
        && hex(0..4)
        && b[4] == b':'
        && hex(5..7)
        && b[7] == b':'
        && hex(8..10)
        && b[10] == b'.'
        && (b'0'..=b'7').contains(&b[11])
}

impl FromStr for DeviceSpec {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let bad = |why: &str| Error::BadSpec {
            spec: s.to_string(),
            why: why.to_string(),
        };
        match s.split_once(':') {
            None if s == "sim" => Ok(DeviceSpec::Sim(SimChoice::Auto)),
            Some(("sim", "verilator")) => Ok(DeviceSpec::Sim(SimChoice::Verilator)),
            Some(("sim", "rust-hdl")) => Ok(DeviceSpec::Sim(SimChoice::RustHdl)),
            Some(("sim", "model")) => Ok(DeviceSpec::Sim(SimChoice::Model)),
            Some(("sim", "qdma")) => Ok(DeviceSpec::Sim(SimChoice::Qdma)),
            Some(("sim", _)) => Err(bad("unknown simulator")),
            Some(("vfio", bdf)) if valid_bdf(bdf) => Ok(DeviceSpec::Vfio(bdf.to_lowercase())),
            Some(("vfio", _)) => Err(bad("PCI address must look like 0000:3b:00.0")),
            Some(("qdma", bdf)) if valid_bdf(bdf) => Ok(DeviceSpec::Qdma(bdf.to_lowercase())),
            Some(("qdma", _)) => Err(bad("PCI address must look like 0000:3b:00.0")),
            Some(("onic", bdf)) if valid_bdf(bdf) => Ok(DeviceSpec::Onic(bdf.to_lowercase())),
            Some(("onic", _)) => Err(bad("PCI address must look like 0000:3b:00.0")),
            Some(("unix", "")) => Err(bad("unix: needs the control socket's path")),
            Some(("unix", path)) => Ok(DeviceSpec::Unix(path.into())),
            _ => Err(bad("unknown device kind")),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Sim(SimChoice::Auto) => write!(f, "sim"),
            DeviceSpec::Sim(SimChoice::RustHdl) => write!(f, "sim:rust-hdl"),
            DeviceSpec::Sim(SimChoice::Verilator) => write!(f, "sim:verilator"),
            DeviceSpec::Sim(SimChoice::Model) => write!(f, "sim:model"),
            DeviceSpec::Sim(SimChoice::Qdma) => write!(f, "sim:qdma"),
            DeviceSpec::Qdma(bdf) => write!(f, "qdma:{bdf}"),
            DeviceSpec::Vfio(bdf) => write!(f, "vfio:{bdf}"),
            DeviceSpec::Onic(bdf) => write!(f, "onic:{bdf}"),
            DeviceSpec::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_refuses() {
        assert_eq!("sim".parse::<DeviceSpec>().unwrap(), DeviceSpec::default());
        assert_eq!(
            "sim:verilator".parse::<DeviceSpec>().unwrap().to_string(),
            "sim:verilator"
        );
        assert_eq!(
            "vfio:0000:3B:00.0".parse::<DeviceSpec>().unwrap(),
            DeviceSpec::Vfio("0000:3b:00.0".into())
        );
        assert_eq!(
            "onic:0000:3B:00.0".parse::<DeviceSpec>().unwrap(),
            DeviceSpec::Onic("0000:3b:00.0".into())
        );
        assert_eq!(
            "unix:/run/weft.sock"
                .parse::<DeviceSpec>()
                .unwrap()
                .to_string(),
            "unix:/run/weft.sock"
        );
        for bad in [
            "",
            "sim:",
            "sim:icarus",
            "vfio:3b:00.0",
            "vfio:0000:3b:00.8",
            "pci:0",
            "unix:",
            "onic:3b:00.0",
        ] {
            let e = bad.parse::<DeviceSpec>().unwrap_err().to_string();
            assert!(e.contains("expected sim"), "{bad}: {e}");
        }
    }
}
