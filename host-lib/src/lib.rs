//! weft's host library: open a card (simulated or real), talk to it, and the
//! building blocks of the `weft` command line.
//!
//! ```no_run
//! let card = weft::Card::open("sim")?;   // or "sim:verilator", "sim:model", "vfio:0000:3b:00.0"
//! let info = card.identify()?;
//! println!("weft card, map {}", info.map_version_string());
//! # Ok::<(), weft::Error>(())
//! ```
//!
//! A card is reached through two seams only: its registers
//! ([`driver::Device`]) and its frame ports ([`driver::FramePorts`]: the
//! wire and the host). The jobs ([`kv`], [`grad`], [`memops`], [`avm`]) are
//! written against them, so they build without the simulator
//! (`default-features = false`) and run unchanged on any card that offers
//! both.
//!
//! A real card is a PCI function bound to vfio-pci (`weft bind`), opened
//! through weft-driver's `VfioDevice` at the register window the OpenNIC
//! shell gives weft's map (BAR2 + 0x100000; BAR0 is the QDMA IP's) and
//! refused unless it is a weft card speaking this register map; [`probe`] says what a function is and why it
//! is or is not usable. Its frames travel through the OpenNIC shell's
//! QDMA: through the `onic` netdev's sockets (the roles over UDP, with
//! `onic:BDF` for the registers), or through weft's own QDMA queue pairs
//! on vfio-pci (`qdma:BDF`, [`driver::qdma`]). The in-process jobs need a
//! card with frame ports in this process (`sim*`, `qdma:`); on the others
//! they refuse, naming why.
//!
//! The simulated card needs the `sim` feature (on by default); a build for
//! hardware only uses `default-features = false` and never compiles rust-hdl.
#![deny(missing_docs)]

pub mod avm;
#[cfg(feature = "sim")]
pub mod bench;
pub mod bitstream;
pub mod card;
pub mod check;
pub mod error;
pub mod grad;
pub mod kv;
pub mod memops;
pub mod pcap;
pub mod probe;
pub mod remote;
pub mod serve;
pub mod spec;
pub mod status;
pub mod udp;
#[cfg(feature = "sim")]
pub mod verify;

pub use card::{Card, OpenOptions};
pub use error::{Error, Result};
pub use spec::DeviceSpec;
pub use weft_driver as driver;
pub use weft_regs as regs;
