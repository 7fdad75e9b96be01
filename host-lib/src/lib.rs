//! weft's host library: open a card (simulated or real), talk to it, and the
//! building blocks of the `weft` command line.
//!
//! ```no_run
//! let nic = weft::Nic::open("sim")?;          // or "sim:verilator", "vfio:0000:3b:00.0"
//! let info = nic.identify()?;
//! println!("weft card, map {}", info.map_version_string());
//! # Ok::<(), weft::Error>(())
//! ```
//!
//! A real card is a PCI function bound to vfio-pci (`weft bind`), opened
//! through weft-driver's `VfioDevice` at the register window the OpenNIC
//! shell gives weft's map (BAR2 + 0x100000; BAR0 is the QDMA IP's) and
//! refused unless it is a weft card speaking this register map; [`probe`] says what a function is and why it
//! is or is not usable. [`queue::Queues`] moves messages between host and
//! card over a backend trait: weft's ring protocol today (served by the
//! simulated card's modelled queue engine); AMD QDMA is not implemented.
//!
//! The simulated card needs the `sim` feature (on by default); a build for
//! hardware only uses `default-features = false` and never compiles rust-hdl.
#![deny(missing_docs)]

#[cfg(feature = "sim")]
pub mod avm;
#[cfg(feature = "sim")]
pub mod bench;
pub mod bitstream;
pub mod error;
#[cfg(feature = "sim")]
pub mod grad;
#[cfg(feature = "sim")]
pub mod kv;
pub mod memops;
pub mod nic;
pub mod pcap;
pub mod probe;
pub mod queue;
#[cfg(feature = "sim")]
pub mod queue_bench;
pub mod spec;
pub mod status;
#[cfg(feature = "sim")]
pub mod verify;

pub use error::{Error, Result};
pub use nic::{Nic, OpenOptions};
pub use spec::DeviceSpec;
pub use weft_driver as driver;
pub use weft_regs as regs;
