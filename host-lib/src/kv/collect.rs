//! The collector of a key-value job on a real network: the card's host.
//!
//! [`collect`] configures the card through its registers (any [`Card`]:
//! `onic:` or `vfio:` on hardware, `unix:` for a served simulated card),
//! naming itself as the card's collector — the MAC of the interface that
//! holds its address, its IP and UDP port — so the card's record frames
//! reach its socket through the host's netdev (the `onic` netdev on an
//! Alveo card, the host TAP of `weft card serve`). It merges every spill,
//! answers each sender's `DONE` ([`super::sender`]), and once every sender
//! is done — every tuple acknowledged by the card, so inside it — flushes
//! the card and merges the flush up to its FIN. The sums are exact: a
//! record frame out of sequence fails the job instead.

use super::daemon::{configure, geometry, read_counters, reset_job};
use super::records::{Records, Taken};
use super::sender::{done_message, parse_done};
use super::{JobOutput, KvError, Result, Stats};
use crate::card::Card;
use crate::udp;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::{Duration, Instant};
use weft_driver::RegisterAccess;
use weft_model::wire::{self, Endpoint, Mac};
use weft_regs::kv;

/// How the collector runs.
#[derive(Clone, Debug)]
pub struct CollectOptions {
    /// Job id.
    pub job: u16,
    /// Senders in the job (ids `0..senders`).
    pub senders: usize,
    /// The collector's address: record frames come here.
    pub listen: SocketAddrV4,
    /// The MAC the card sends record frames to; `None`: the MAC of the
    /// interface that holds `listen`'s IP.
    pub host_mac: Option<Mac>,
    /// The card's own MAC and IPv4 address (its `net` registers).
    pub card_mac: Mac,
    /// The card's IPv4 address.
    pub card_ip: Ipv4Addr,
    /// Hot-key-agnostic replacement on the card.
    pub replace: bool,
    /// Give up when nothing arrives for this long.
    pub idle_timeout: Duration,
}

/// What the collector saw of each sender.
pub type Senders = BTreeMap<u16, super::sender::Done>;

/// Run the collector of one job on `card` (see the module docs). `ready`
/// is called once the card is configured and the socket listens: senders
/// may start.
pub fn collect(
    card: &Card,
    opts: &CollectOptions,
    ready: impl FnOnce(),
) -> Result<(JobOutput, Senders)> {
    let dev = card.regs();
    let (cfg, _window) = geometry(dev)?;
    if opts.senders == 0 || opts.senders > cfg.senders {
        return Err(KvError::Options(format!(
            "{} senders: the card keeps sequence windows for 1 to {}",
            opts.senders, cfg.senders
        )));
    }
    let ip = *opts.listen.ip();
    let host_mac = match opts.host_mac {
        Some(m) => m,
        None => {
            let iface = udp::interface_of(ip).ok_or_else(|| {
                KvError::Options(format!(
                    "no interface here has {ip}: listen on the address of the card's host netdev, or give --host-mac"
                ))
            })?;
            udp::mac_of(&iface).ok_or_else(|| {
                KvError::Options(format!(
                    "interface {iface} has no MAC address (give --host-mac)"
                ))
            })?
        }
    };
    let sock = udp::bind(SocketAddr::V4(opts.listen)).map_err(|e| KvError::Io {
        path: format!("udp {}", opts.listen),
        source: e,
    })?;
    let me = Endpoint {
        mac: opts.card_mac,
        ip: opts.card_ip,
        port: 0,
    };
    let collector = Endpoint {
        mac: host_mac,
        ip,
        port: opts.listen.port(),
    };
    let card_from = SocketAddr::from((opts.card_ip, wire::KV_PORT));
    let io = |e: std::io::Error| KvError::Io {
        path: format!("udp {}", opts.listen),
        source: e,
    };
    let mut buf = vec![0u8; 65536];
    configure(card, &me, &collector)?;
    reset_job(dev, opts.job, opts.replace, || {
        dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1))
            .map_err(KvError::Card)?;
        // Whatever the flush drains belongs to an earlier job: wait for
        // its FIN and drop it.
        let until = Instant::now() + opts.idle_timeout;
        loop {
            match udp::recv_until(&sock, &mut buf, until).map_err(io)? {
                None => {
                    return Err(KvError::Unsupported(format!(
                        "the card's flush did not reach {} within {:?}: are the card's host port and this address on one link, and is {} the host netdev's MAC?",
                        opts.listen,
                        opts.idle_timeout,
                        fmt_mac(&host_mac)
                    )))
                }
                Some((n, from)) if from == card_from => {
                    let b = &buf[..n];
                    if b.len() >= 16 && b[1] & wire::KV_FLAG_FIN != 0 {
                        return Ok(());
                    }
                }
                Some(_) => {}
            }
        }
    })?;
    let first_cycle = cycle(dev)?;
    ready();

    let mut records = Records::new(0);
    let mut done = Senders::new();
    let mut flushed = false;
    let mut last = Instant::now();
    loop {
        let until = last + opts.idle_timeout;
        let Some((n, from)) = udp::recv_until(&sock, &mut buf, until).map_err(io)? else {
            let missing: Vec<u16> = (0..opts.senders as u16)
                .filter(|s| !done.contains_key(s))
                .collect();
            return Err(KvError::Unsupported(format!(
                "nothing arrived for {:?}: {}",
                opts.idle_timeout,
                if missing.is_empty() {
                    "the card's flush did not finish".to_string()
                } else {
                    format!("senders {missing:?} never said DONE")
                }
            )));
        };
        last = Instant::now();
        let b = &buf[..n];
        if from == card_from {
            if records.take(b)? == Taken::Fin && flushed {
                break;
            }
            continue;
        }
        let Some(d) = parse_done(b).filter(|d| !d.ack && d.job == opts.job) else {
            continue;
        };
        if usize::from(d.sender) >= opts.senders {
            continue;
        }
        // Answer every copy: the sender repeats until an answer arrives.
        let answer = done_message(d.job, d.sender, d.packets, d.tuples, true);
        sock.send_to(&answer, from).map_err(io)?;
        done.insert(d.sender, d);
        if done.len() == opts.senders && !flushed {
            // Every packet of every sender is acknowledged, so every tuple
            // is in the card: the flush follows all their spills.
            dev.write_reg(&kv::CMD, kv::CMD_FLUSH.set(0, 1))
                .map_err(KvError::Card)?;
            flushed = true;
        }
    }
    // Keep answering for a moment: a sender whose DONE answer was lost
    // asks again, and would otherwise wait for nobody.
    let linger = Instant::now() + Duration::from_secs(1);
    while let Some((n, from)) = udp::recv_until(&sock, &mut buf, linger).map_err(io)? {
        if let Some(d) = parse_done(&buf[..n]).filter(|d| !d.ack && d.job == opts.job) {
            let answer = done_message(d.job, d.sender, d.packets, d.tuples, true);
            sock.send_to(&answer, from).map_err(io)?;
        }
    }
    let mut stats = Stats {
        card: card.name(),
        workers: opts.senders,
        slots: cfg.slots(),
        replace: opts.replace,
        tuples: done.values().map(|d| d.tuples).sum(),
        packets: done.values().map(|d| d.packets as u64).sum(),
        ..Stats::default()
    };
    // The card's own clock (ctrl.CYCLE, axis_aclk), from ready to the
    // flush's end: the job's device time, whatever the card is (a served
    // simulation's clock runs far slower than wall time).
    stats.cycles = cycle(dev)?.saturating_sub(first_cycle);
    read_counters(dev, &mut stats)?;
    records.fill(&mut stats);
    stats.finish_ratios();
    Ok((
        JobOutput {
            sums: records.sums,
            stats,
        },
        done,
    ))
}

/// The card's free-running cycle counter (reading LO latches HI).
fn cycle(dev: &dyn weft_driver::Device) -> Result<u64> {
    let lo = dev
        .read_reg(&weft_regs::ctrl::CYCLE_LO)
        .map_err(KvError::Card)? as u64;
    let hi = dev
        .read_reg(&weft_regs::ctrl::CYCLE_HI)
        .map_err(KvError::Card)? as u64;
    Ok(hi << 32 | lo)
}

fn fmt_mac(m: &Mac) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parse `IP:PORT` as an IPv4 socket address.
pub fn parse_v4(s: &str) -> Option<SocketAddrV4> {
    match s.parse::<SocketAddr>().ok()? {
        SocketAddr::V4(a) => Some(a),
        SocketAddr::V6(_) => None,
    }
}
