//! The card's frame ports: the second half of the seam between the host
//! stack and a card (the first is [`crate::Device`], its registers).
//!
//! A weft card has two frame ports (`docs/wire.md`), each with two
//! directions: the **wire** (CMAC: frames from the network in, frames to
//! the network out) and the **host** (QDMA: frames from the host in, H2C;
//! frames to the host out, C2H). Everything a job does with the card's
//! engines is frames on these ports plus registers. On a simulated card the
//! ports are in-process and time is the card's own (`axis_aclk` cycles,
//! [`FramePorts::cycles`]); on a real card the wire is the network and the
//! host port is the `onic` netdev or weft's QDMA queues.

use crate::Result;

/// One of the card's two frame ports.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Port {
    /// The network (CMAC 0).
    Wire,
    /// The card's host (QDMA).
    Host,
}

impl Port {
    /// A short name: `wire` or `host`.
    pub fn name(self) -> &'static str {
        match self {
            Port::Wire => "wire",
            Port::Host => "host",
        }
    }
}

/// A frame the card sent, stamped with the device time it left.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The port it left on.
    pub port: Port,
    /// Device time (`axis_aclk` cycles) of its last beat.
    pub cycle: u64,
    /// The Ethernet frame, without FCS.
    pub bytes: Vec<u8>,
}

/// The card's frame ports.
pub trait FramePorts: Send + Sync {
    /// Offer `frame` to the card's input on `port` (on the wire: as if it
    /// arrived from the network; on the host port: as the host sends it).
    /// The card takes it when it can; frames on one port keep their order.
    fn send(&self, port: Port, frame: &[u8]) -> Result<()>;
    /// Take every frame the card has sent since the last call, both ports,
    /// in the order they left.
    fn recv(&self) -> Result<Vec<Frame>>;
    /// Device time: `axis_aclk` cycles (250 MHz on a card) since the card
    /// was opened.
    fn cycles(&self) -> u64;
    /// Let `cycles` of device time pass (a simulated card steps its clocks).
    fn advance(&self, cycles: u64) -> Result<()>;
    /// Frames offered on `port` that the card has not yet taken whole (0
    /// where the implementation cannot tell, as on a real network).
    fn backlog(&self, port: Port) -> usize;
    /// Frames offered and not yet taken, or inside the card and not yet out
    /// (as far as the implementation can tell): a drain waits for `false`.
    fn busy(&self) -> bool;
}
