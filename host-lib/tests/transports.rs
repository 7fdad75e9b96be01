//! The pieces of weft's real transports that need no namespaces: the
//! control socket (`weft card serve --control`, `--device unix:PATH`), the
//! roles' refusals of bad options, and their control messages. The whole
//! path over TAP netdevs, veths and a bridge with injected faults is
//! `scripts/netns-test.sh` (run by `.ci/run`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use weft::kv::sender::{done_message, parse_done};
use weft::kv::{CollectOptions, Sender, SenderOptions};
use weft::Card;
use weft_driver::RegisterAccess;
use weft_regs::net;

/// A model card served on a control socket in a temporary directory.
fn served() -> (Card, Arc<AtomicBool>, tempfile::TempDir, std::path::PathBuf) {
    let card = Card::open("sim:model").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("card.sock");
    let stop = Arc::new(AtomicBool::new(false));
    weft::remote::serve(card.regs_arc(), &path, stop.clone()).unwrap();
    (card, stop, dir, path)
}

#[test]
fn registers_cross_the_control_socket_unchanged() {
    let (card, stop, _dir, path) = served();
    let remote = Card::open(&format!("unix:{}", path.display())).unwrap();
    assert!(remote.name().starts_with("unix:"), "{}", remote.name());
    assert!(remote.name().contains("sim:model"), "{}", remote.name());
    // The ID block and chain walk through the socket as through the card.
    assert_eq!(
        remote.identify().unwrap().blocks.len(),
        card.identify().unwrap().blocks.len()
    );
    assert_eq!(remote.regs().bar_len(), card.regs().bar_len());
    // A write through the socket is the card's; a write to the card shows
    // through the socket.
    remote.regs().write_reg(&net::IP, 0x0a00_0063).unwrap();
    assert_eq!(card.regs().read_reg(&net::IP).unwrap(), 0x0a00_0063);
    card.regs().write_reg(&net::IP, 0x0a00_0064).unwrap();
    assert_eq!(remote.regs().read_reg(&net::IP).unwrap(), 0x0a00_0064);
    // The card's own refusal comes back as an error, and the connection
    // survives it.
    let e = remote.regs().read32(0xffff_fff0).unwrap_err().to_string();
    assert!(e.contains("outside") || e.contains("window"), "{e}");
    assert_eq!(remote.regs().read_reg(&net::IP).unwrap(), 0x0a00_0064);
    // No frames cross the socket: jobs that need them say where they are.
    let e = remote.frames().err().unwrap().to_string();
    assert!(e.contains("TAP") && e.contains("UDP"), "{e}");
    assert!(remote.regs().dma_alloc(4096).is_err());
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn a_bad_request_closes_only_its_own_connection() {
    use std::io::{Read, Write};
    let (_card, stop, _dir, path) = served();
    let mut raw = std::os::unix::net::UnixStream::connect(&path).unwrap();
    raw.write_all(&[9u8; 12]).unwrap();
    let mut reply = Vec::new();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.read_to_end(&mut reply).unwrap();
    assert_eq!(reply[0], 1, "an error status");
    assert!(String::from_utf8_lossy(&reply[12..]).contains("unknown request 9"));
    // Another client is served as before.
    let remote = Card::open(&format!("unix:{}", path.display())).unwrap();
    remote.identify().unwrap();
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn a_missing_server_is_one_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = Card::open(&format!("unix:{}", dir.path().join("none.sock").display()))
        .err()
        .unwrap();
    let msg = format!("{e}");
    assert!(msg.contains("weft card serve"), "{msg}");
}

#[test]
fn done_messages_round_trip_and_nothing_else_parses() {
    let m = done_message(7, 3, 1234, 5_000_000_000, false);
    let d = parse_done(&m).unwrap();
    assert_eq!(
        (d.job, d.sender, d.packets, d.tuples, d.ack),
        (7, 3, 1234, 5_000_000_000, false)
    );
    assert!(parse_done(&done_message(7, 3, 1, 1, true)).unwrap().ack);
    assert_eq!(parse_done(&m[..20]), None);
    let mut bad = m.clone();
    bad[1] = 0x10; // a record frame's flags
    assert_eq!(parse_done(&bad), None);
    bad[1] = 0x20;
    bad[0] = 2;
    assert_eq!(parse_done(&bad), None);
}

#[test]
fn grad_control_messages_round_trip() {
    use weft::grad::udp::{Control, FLAG_ACK, FLAG_JOIN};
    let c = Control {
        flags: FLAG_JOIN | FLAG_ACK,
        job: 3,
        worker: 2,
        workers: 4,
        a: 256,
        b: 16 << 8 | 4,
        mac: [2, 0x57, 0x46, 1, 0, 2],
    };
    assert_eq!(Control::decode(&c.encode()), Some(c));
    let mut e = c.encode();
    e[1] = 0x01; // gradient DATA flags
    assert_eq!(Control::decode(&e), None);
    assert_eq!(Control::decode(&c.encode()[..23]), None);
}

#[test]
fn grad_values_sum_exactly_within_32_bits() {
    use weft::grad::udp::{exact, value};
    for workers in [1u8, 2, 4, 31, 32] {
        let e = exact(9, workers, 5, 64);
        for (i, s) in e.iter().enumerate() {
            let wide: i64 = (0..workers)
                .map(|w| value(9, w, workers, 5, i) as i64)
                .sum();
            assert_eq!(*s as i64, wide, "{workers} workers, value {i}");
        }
    }
    // Different workers and chunks differ.
    assert_ne!(value(1, 0, 4, 0, 0), value(1, 1, 4, 0, 0));
    assert_ne!(value(1, 0, 4, 0, 0), value(1, 0, 4, 1, 0));
}

#[test]
fn roles_refuse_bad_options_before_sending() {
    let card = "127.0.0.1:22342".parse().unwrap();
    let coll = "127.0.0.1:7000".parse().unwrap();
    let mut o = SenderOptions::new(card, coll, 1, 0);
    o.lanes = 0;
    assert!(Sender::open(o.clone())
        .err()
        .unwrap()
        .to_string()
        .contains("lanes"));
    o.lanes = 8;
    o.window = 33;
    assert!(Sender::open(o.clone())
        .err()
        .unwrap()
        .to_string()
        .contains("window"));
    o.window = 32;
    o.max_packet_bytes = 8;
    assert!(Sender::open(o)
        .err()
        .unwrap()
        .to_string()
        .contains("packet size"));

    // A collector whose address no interface has cannot be reached by the
    // card: refused before it touches the card's job.
    let card = Card::open("sim:model").unwrap();
    let opts = CollectOptions {
        job: 1,
        senders: 2,
        listen: "192.0.2.77:7000".parse().unwrap(),
        host_mac: None,
        card_mac: [2, 0x57, 0x46, 0, 0, 1],
        card_ip: "10.0.0.2".parse().unwrap(),
        replace: true,
        idle_timeout: Duration::from_secs(1),
    };
    let e = weft::kv::collect(&card, &opts, || {})
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("no interface") && e.contains("192.0.2.77"),
        "{e}"
    );
    let e = weft::kv::collect(
        &card,
        &CollectOptions {
            senders: 17,
            ..opts
        },
        || {},
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("17 senders"), "{e}");
}
