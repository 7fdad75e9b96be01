//! `weft card serve`: a simulated card as two Linux network devices.
//!
//! The card (`weft_top`, on Verilator or rust-hdl, or its reference model)
//! runs free-running behind two TAP netdevs: the **wire** netdev is its
//! CMAC port, which peers reach over a bridge, and the **host** netdev is
//! its QDMA port, which plays the netdev the OpenNIC `onic` driver gives
//! the card's own host. Every Ethernet frame the kernel sends on a TAP
//! enters the card on that port; every frame the card sends on a port is
//! handed to the kernel on its TAP. Registers are served to other
//! processes on a control socket ([`crate::remote`]).
//!
//! **Time.** The card's clock is simulated: it advances by
//! [`ServeOptions::quantum`] cycles per turn of the loop, as fast as the
//! simulator runs, and between turns the loop waits up to
//! [`ServeOptions::idle_wait`] for a frame when the card has nothing to do.
//! So one simulated cycle (4 ns at 250 MHz on a card) takes far longer
//! than 4 ns of wall time — about 1000x on Verilator, far more on rust-hdl
//! — and the ratio varies with load; timers inside the card (record
//! packing's `net.PACK_WAIT`) count simulated cycles. Peers that time
//! their retransmissions by measured round trips (the UDP roles do) work
//! against it unchanged. [`ServeStats`] reports both clocks.
//!
//! **Input queues.** A card's receive FIFO is finite, and a simulated card
//! takes frames far slower than a kernel can write them; frames arriving
//! while [`ServeOptions::max_backlog`] frames already wait on that port are
//! dropped and counted, as a real NIC drops on a full queue.

use crate::card::Card;
use crate::{Error, Result};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tun_tap::{Iface, Mode};
use weft_driver::Port;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Name of the wire (CMAC) TAP netdev; created if it does not exist.
    pub wire: String,
    /// Name of the host (QDMA) TAP netdev; created if it does not exist.
    pub host: String,
    /// Cycles the card advances per turn.
    pub quantum: u64,
    /// The longest the loop sleeps waiting for a frame while the card is
    /// idle (the card's clock stands still meanwhile).
    pub idle_wait: Duration,
    /// Frames allowed to wait at one input before new ones are dropped.
    pub max_backlog: usize,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            wire: "weft-wire".into(),
            host: "weft-host".into(),
            quantum: 64,
            idle_wait: Duration::from_millis(1),
            max_backlog: 4096,
        }
    }
}

/// What a served card did.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ServeStats {
    /// Simulated `axis_aclk` cycles while served.
    pub cycles: u64,
    /// Wall time served, in seconds.
    pub wall_seconds: f64,
    /// Frames taken from the wire netdev into the card.
    pub wire_in: u64,
    /// Frames the card sent to the wire netdev.
    pub wire_out: u64,
    /// Frames taken from the host netdev into the card.
    pub host_in: u64,
    /// Frames the card sent to the host netdev.
    pub host_out: u64,
    /// Frames dropped at a full input queue.
    pub dropped_full: u64,
    /// Frames the kernel or the card refused (a TAP that is down, a frame
    /// the simulated port cannot carry).
    pub refused: u64,
}

impl ServeStats {
    /// Simulated cycles per second of wall time.
    pub fn cycles_per_second(&self) -> f64 {
        if self.wall_seconds > 0.0 {
            self.cycles as f64 / self.wall_seconds
        } else {
            0.0
        }
    }
}

/// Open (or create) TAP netdev `name`, without packet information,
/// non-blocking.
fn open_tap(name: &str) -> Result<Iface> {
    let bad = |what: &str, e: std::io::Error| {
        Error::Unsupported(format!(
            "tap:{name}: {what}: {e} (creating a TAP netdev needs CAP_NET_ADMIN and /dev/net/tun)"
        ))
    };
    if name.is_empty() || name.len() > 15 {
        return Err(Error::Unsupported(format!(
            "tap:{name}: a netdev name is 1 to 15 characters"
        )));
    }
    let tap = Iface::without_packet_info(name, Mode::Tap).map_err(|e| bad("open", e))?;
    set_nonblocking(tap.as_raw_fd()).map_err(|e| bad("set non-blocking", e))?;
    Ok(tap)
}

fn set_nonblocking(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor this process owns; no memory is passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Wait until one of `fds` is readable or `timeout` passes.
fn wait_readable(fds: &[RawFd], timeout: Duration) {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ms = timeout.as_millis().min(i32::MAX as u128) as i32;
    // SAFETY: `p` is a live array of `p.len()` pollfd structs.
    unsafe { libc::poll(p.as_mut_ptr(), p.len() as libc::nfds_t, ms) };
}

/// Serve `card`'s frame ports on two TAP netdevs until `stop` is set.
/// `ready` is called with the two netdevs' names once they are open.
pub fn serve(
    card: &Card,
    opts: &ServeOptions,
    stop: &AtomicBool,
    ready: impl FnOnce(&str, &str),
) -> Result<ServeStats> {
    if opts.quantum == 0 {
        return Err(Error::Unsupported(
            "the serve quantum must be positive".into(),
        ));
    }
    if opts.wire == opts.host {
        return Err(Error::Unsupported(format!(
            "tap:{}: the wire and host ports need two netdevs",
            opts.wire
        )));
    }
    let frames = card.frames()?;
    let wire = open_tap(&opts.wire)?;
    let host = open_tap(&opts.host)?;
    ready(wire.name(), host.name());
    let taps = [(Port::Wire, &wire), (Port::Host, &host)];
    let fds = [wire.as_raw_fd(), host.as_raw_fd()];
    let mut st = ServeStats::default();
    let start = Instant::now();
    let first = frames.cycles();
    // A jumbo frame is at most 9600 bytes on the card; the kernel's TAP
    // hands over at most its MTU plus the Ethernet header.
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let mut took = false;
        for (port, tap) in taps {
            loop {
                match tap.recv(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        took = true;
                        if frames.backlog(port) >= opts.max_backlog {
                            st.dropped_full += 1;
                            continue;
                        }
                        match frames.send(port, &buf[..n]) {
                            Ok(()) => match port {
                                Port::Wire => st.wire_in += 1,
                                Port::Host => st.host_in += 1,
                            },
                            Err(_) => st.refused += 1,
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        return Err(Error::Unsupported(format!("tap:{}: read: {e}", tap.name())))
                    }
                }
            }
        }
        let idle = !took && !frames.busy();
        if idle {
            // Nothing in the card and nothing arrived: wait for a frame
            // rather than spin the simulator (the card's clock still
            // advances a quantum per turn, so its timers run out).
            wait_readable(&fds, opts.idle_wait);
        }
        frames.advance(opts.quantum)?;
        for f in frames.recv()? {
            let (tap, count) = match f.port {
                Port::Wire => (&wire, &mut st.wire_out),
                Port::Host => (&host, &mut st.host_out),
            };
            // A TAP that is down (or has no reader on the kernel side)
            // refuses the write; a card's port would lose the frame too.
            match tap.send(&f.bytes) {
                Ok(_) => *count += 1,
                Err(_) => st.refused += 1,
            }
        }
    }
    st.cycles = frames.cycles() - first;
    st.wall_seconds = start.elapsed().as_secs_f64();
    Ok(st)
}
