//! pcapng captures of the card's frames, for Wireshark and tcpdump.
//!
//! The card has two frame ports, the wire (CMAC) and the host (QDMA), each
//! with an input and an output (`docs/wire.md`, "Ports"): four streams of
//! Ethernet frames. A [`Capture`] writes them to one pcapng file, one
//! interface per [`Stream`] (pcapng: IETF draft-ietf-opsawg-pcapng, whose
//! section numbers are cited below):
//!
//! | interface id | name (`if_name`) | stream | AXI4-Stream port | `epb_flags` direction |
//! |---|---|---|---|---|
//! | 0 | `wire-rx`  | frames arriving from the network | `s_axis_adap_rx_250mhz` | inbound |
//! | 1 | `wire-tx`  | frames sent to the network        | `m_axis_adap_tx_250mhz` | outbound |
//! | 2 | `host-h2c` | frames from the host (H2C)        | `s_axis_qdma_h2c`       | inbound |
//! | 3 | `host-c2h` | frames to the host (C2H)          | `m_axis_qdma_c2h`       | outbound |
//!
//! Directions are the card's: inbound is into the card. In Wireshark the
//! interface is `frame.interface_name` (filter `frame.interface_id == 2`
//! for instance) and the direction `frame.packet_flags_direction`.
//!
//! The file is a single little-endian section (§4.1) with four Interface
//! Description Blocks (§4.2): link type 1 (`LINKTYPE_ETHERNET`), snap length
//! [`SNAPLEN`], `if_tsresol` = 9 (timestamps in nanoseconds) and
//! `if_fcslen` = 0 (frames carry no FCS: the CMAC adds and checks it). Each
//! frame is an Enhanced Packet Block (§4.3) whose timestamp is the device
//! time of the frame, `cycle / cycle_hz` seconds counted from the card's
//! cycle 0 (which viewers show as 1970-01-01 00:00:00 UTC: there is no
//! wall clock in it), and whose `epb_flags` (§4.3.1) carry the direction.
//! Frames are written in the order [`Capture::frame`] is called; pcapng does
//! not require timestamps to increase, but viewers list frames in file order,
//! so callers that collect the four streams separately should merge them by
//! cycle first.
//!
//! The blocks are encoded by the `pcap-file` crate (2.0.0).
//!
//! ```no_run
//! use weft::pcap::{Capture, Stream};
//! # let frame = vec![0u8; 60];
//! // The card's axis_aclk runs at 250 MHz: one cycle is 4 ns.
//! let mut cap = Capture::create("job.pcapng", 250_000_000)?;
//! cap.frame(Stream::WireRx, 1_000, &frame)?;
//! cap.frame(Stream::HostC2h, 1_042, &frame)?;
//! cap.finish()?;
//! # Ok::<(), weft::pcap::PcapError>(())
//! ```

use std::borrow::Cow;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::{SectionHeaderBlock, SectionHeaderOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, Endianness};
use weft_driver::{Frame, FramePorts, Port};
use weft_model::wire::Side;

/// The snap length of every interface, and the most bytes of a frame that
/// are stored (the Enhanced Packet Block keeps the frame's full length as
/// its original length). It is libpcap's largest (`MAXIMUM_SNAPLEN`), so
/// tcpdump reads every block; the card's frames are at most
/// `weft_regs::wire::MAX_FRAME` (9600) bytes and are never cut.
pub const SNAPLEN: u32 = 262_144;

/// `if_tsresol` of every interface: 10^-9 s, timestamps in nanoseconds.
pub const TSRESOL: u8 = 9;

/// One of the card's four frame streams: a port and a direction. Its
/// discriminant is its interface id in the capture.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stream {
    /// Frames arriving from the network (`s_axis_adap_rx_250mhz`):
    /// interface 0, `wire-rx`.
    WireRx = 0,
    /// Frames the card sends to the network (`m_axis_adap_tx_250mhz`):
    /// interface 1, `wire-tx`.
    WireTx = 1,
    /// Frames from the host, host to card (`s_axis_qdma_h2c`): interface
    /// 2, `host-h2c`.
    HostH2c = 2,
    /// Frames the card sends to the host, card to host (`m_axis_qdma_c2h`):
    /// interface 3, `host-c2h`.
    HostC2h = 3,
}

impl Stream {
    /// The four streams in interface-id order.
    pub const ALL: [Stream; 4] = [
        Stream::WireRx,
        Stream::WireTx,
        Stream::HostH2c,
        Stream::HostC2h,
    ];

    /// The stream of frames into the card on port `side`.
    pub fn input(side: Side) -> Stream {
        match side {
            Side::Wire => Stream::WireRx,
            Side::Host => Stream::HostH2c,
        }
    }

    /// The stream of frames out of the card on port `side`.
    pub fn output(side: Side) -> Stream {
        match side {
            Side::Wire => Stream::WireTx,
            Side::Host => Stream::HostC2h,
        }
    }

    /// The port the stream is on.
    pub fn side(self) -> Side {
        match self {
            Stream::WireRx | Stream::WireTx => Side::Wire,
            Stream::HostH2c | Stream::HostC2h => Side::Host,
        }
    }

    /// Whether the stream goes into the card (`WireRx`, `HostH2c`).
    pub fn is_input(self) -> bool {
        matches!(self, Stream::WireRx | Stream::HostH2c)
    }

    /// The stream's interface id in the capture (0 to 3).
    pub fn interface_id(self) -> u32 {
        self as u32
    }

    /// The stream's interface name (`if_name`): `wire-rx`, `wire-tx`,
    /// `host-h2c` or `host-c2h`.
    pub fn name(self) -> &'static str {
        match self {
            Stream::WireRx => "wire-rx",
            Stream::WireTx => "wire-tx",
            Stream::HostH2c => "host-h2c",
            Stream::HostC2h => "host-c2h",
        }
    }

    /// The stream's interface description (`if_description`).
    pub fn description(self) -> &'static str {
        match self {
            Stream::WireRx => "weft wire port (CMAC 0) in: frames from the network",
            Stream::WireTx => "weft wire port (CMAC 0) out: frames to the network",
            Stream::HostH2c => "weft host port (QDMA) in: frames from the host (H2C)",
            Stream::HostC2h => "weft host port (QDMA) out: frames to the host (C2H)",
        }
    }

    /// The direction bits of `epb_flags` (draft-ietf-opsawg-pcapng
    /// §4.3.1, bits 1-0): 0b01 inbound (into the card), 0b10 outbound.
    pub fn epb_flags(self) -> u32 {
        if self.is_input() {
            0b01
        } else {
            0b10
        }
    }
}

/// A capture file could not be created or written. The message names the
/// file.
#[derive(Debug, thiserror::Error)]
#[error("{action} capture {}: {source}", path.display())]
pub struct PcapError {
    /// What was being done ("creating", "writing", "flushing").
    pub action: &'static str,
    /// The capture file.
    pub path: PathBuf,
    /// The OS error (or the encoder's, as an `io::Error`).
    #[source]
    pub source: io::Error,
}

/// The device time of `cycle` on a clock of `cycle_hz`: `cycle / cycle_hz`
/// seconds, rounded down to the nanosecond (exact for the card's 250 MHz,
/// 4 ns a cycle). Panics if `cycle_hz` is 0.
pub fn cycle_time(cycle: u64, cycle_hz: u64) -> Duration {
    assert!(cycle_hz > 0, "cycle_hz must be positive");
    let secs = cycle / cycle_hz;
    let nanos = (cycle % cycle_hz) as u128 * 1_000_000_000 / cycle_hz as u128;
    Duration::new(secs, nanos as u32)
}

/// A pcapng file being written: the section header and the four interfaces
/// are written by [`Capture::create`], one block per frame by
/// [`Capture::frame`]. Writes are buffered; [`Capture::finish`] flushes and
/// reports the last error (dropping a `Capture` flushes too but loses it).
pub struct Capture {
    path: PathBuf,
    writer: PcapNgWriter<BufWriter<File>>,
    cycle_hz: u64,
    frames: u64,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("path", &self.path)
            .field("cycle_hz", &self.cycle_hz)
            .field("frames", &self.frames)
            .finish()
    }
}

/// `pcap_file`'s error as an `io::Error` (its own I/O errors unwrapped).
fn io_error(e: pcap_file::PcapError) -> io::Error {
    match e {
        pcap_file::PcapError::IoError(e) => e,
        other => io::Error::other(other),
    }
}

impl Capture {
    /// Creates (or truncates) `path` and writes the section header and the
    /// four interfaces ([`Stream::ALL`]). `cycle_hz` is the frequency of the
    /// clock the cycles given to [`Capture::frame`] count: the card's
    /// `axis_aclk`, so callers pass `250_000_000`. Panics if `cycle_hz` is
    /// 0.
    pub fn create(path: impl AsRef<Path>, cycle_hz: u64) -> Result<Capture, PcapError> {
        assert!(cycle_hz > 0, "cycle_hz must be positive");
        let path = path.as_ref().to_path_buf();
        let err = |action, source| PcapError {
            action,
            path: path.clone(),
            source,
        };
        let file = File::create(&path).map_err(|e| err("creating", e))?;
        let section = SectionHeaderBlock {
            endianness: Endianness::Little,
            options: vec![SectionHeaderOption::UserApplication(Cow::Owned(format!(
                "weft {}",
                env!("CARGO_PKG_VERSION")
            )))],
            ..Default::default()
        };
        let mut writer = PcapNgWriter::with_section_header(BufWriter::new(file), section)
            .map_err(|e| err("writing", io_error(e)))?;
        for stream in Stream::ALL {
            let idb = InterfaceDescriptionBlock {
                linktype: DataLink::ETHERNET,
                snaplen: SNAPLEN,
                options: vec![
                    InterfaceDescriptionOption::IfName(Cow::Borrowed(stream.name())),
                    InterfaceDescriptionOption::IfDescription(Cow::Borrowed(stream.description())),
                    InterfaceDescriptionOption::IfTsResol(TSRESOL),
                    InterfaceDescriptionOption::IfFcsLen(0),
                ],
            };
            writer
                .write_pcapng_block(idb)
                .map_err(|e| err("writing", io_error(e)))?;
        }
        Ok(Capture {
            path,
            writer,
            cycle_hz,
            frames: 0,
        })
    }

    /// Writes one frame (Ethernet, from the destination MAC; no FCS) seen on
    /// `stream` at `cycle` of the card's clock. Frames longer than
    /// [`SNAPLEN`] are stored cut to it, with their full length recorded.
    pub fn frame(&mut self, stream: Stream, cycle: u64, bytes: &[u8]) -> Result<(), PcapError> {
        let stored = &bytes[..bytes.len().min(SNAPLEN as usize)];
        let epb = EnhancedPacketBlock {
            interface_id: stream.interface_id(),
            timestamp: cycle_time(cycle, self.cycle_hz),
            original_len: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            data: Cow::Borrowed(stored),
            options: vec![EnhancedPacketOption::Flags(stream.epb_flags())],
        };
        self.writer.write_pcapng_block(epb).map_err(|e| PcapError {
            action: "writing",
            path: self.path.clone(),
            source: io_error(e),
        })?;
        self.frames += 1;
        Ok(())
    }

    /// The capture file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many frames have been written.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes the file and closes it.
    pub fn finish(self) -> Result<(), PcapError> {
        let Capture { path, writer, .. } = self;
        let mut buf = writer.into_inner();
        buf.flush()
            .and_then(|()| buf.get_ref().sync_data())
            .map_err(|source| PcapError {
                action: "flushing",
                path,
                source,
            })
    }
}

/// A card's frame ports with every frame also written to a [`Capture`]:
/// inputs at the device time they are offered, outputs at the cycle their
/// last beat left. It sits at the seam ([`weft_driver::FramePorts`]), so it
/// records any job on any card.
pub struct Tap {
    inner: std::sync::Arc<dyn FramePorts>,
    cap: std::sync::Mutex<Option<Capture>>,
    error: std::sync::Mutex<Option<PcapError>>,
}

impl Tap {
    /// Record `card`'s frames into a new capture at `path`; returns the
    /// card whose frames are recorded, and the tap to finish.
    pub fn wrap(
        card: crate::Card,
        path: impl AsRef<Path>,
        cycle_hz: u64,
    ) -> crate::Result<(crate::Card, std::sync::Arc<Tap>)> {
        let cap = Capture::create(path, cycle_hz)
            .map_err(|e| crate::Error::Unsupported(e.to_string()))?;
        let tap = std::sync::Arc::new(Tap {
            inner: card.frames_arc()?,
            cap: std::sync::Mutex::new(Some(cap)),
            error: std::sync::Mutex::new(None),
        });
        let c = crate::Card::from_parts(card.spec().clone(), card.regs_arc(), Some(tap.clone()));
        Ok((c, tap))
    }

    fn record(&self, stream: Stream, cycle: u64, bytes: &[u8]) {
        let mut cap = self.cap.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = cap.as_mut() {
            if let Err(e) = c.frame(stream, cycle, bytes) {
                // The job goes on; the capture's error is reported by finish.
                *cap = None;
                self.error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .get_or_insert(e);
            }
        }
    }

    /// Close the capture: the frames written, or the first error.
    pub fn finish(&self) -> Result<u64, PcapError> {
        if let Some(e) = self.error.lock().unwrap_or_else(|p| p.into_inner()).take() {
            return Err(e);
        }
        match self.cap.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(c) => {
                let n = c.frames();
                c.finish().map(|()| n)
            }
            None => Ok(0),
        }
    }
}

fn side_of(p: Port) -> Side {
    match p {
        Port::Wire => Side::Wire,
        Port::Host => Side::Host,
    }
}

impl FramePorts for Tap {
    fn send(&self, port: Port, frame: &[u8]) -> weft_driver::Result<()> {
        self.inner.send(port, frame)?;
        self.record(Stream::input(side_of(port)), self.inner.cycles(), frame);
        Ok(())
    }
    fn recv(&self) -> weft_driver::Result<Vec<Frame>> {
        let v = self.inner.recv()?;
        for f in &v {
            self.record(Stream::output(side_of(f.port)), f.cycle, &f.bytes);
        }
        Ok(v)
    }
    fn cycles(&self) -> u64 {
        self.inner.cycles()
    }
    fn advance(&self, cycles: u64) -> weft_driver::Result<()> {
        self.inner.advance(cycles)
    }
    fn backlog(&self, port: Port) -> usize {
        self.inner.backlog(port)
    }
    fn busy(&self) -> bool {
        self.inner.busy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pcap_file::pcapng::{Block, PcapNgReader};
    use std::net::Ipv4Addr;
    use weft_model::wire::{build_frame, Endpoint};

    const HZ: u64 = 250_000_000;

    /// A frame of `len` bytes that says which stream and which frame it is.
    fn raw_frame(stream: Stream, i: usize, len: usize) -> Vec<u8> {
        (0..len)
            .map(|b| (b as u8) ^ ((stream as u8) << 6) ^ (i as u8))
            .collect()
    }

    /// Frames on every stream, interleaved, lengths not all multiples of 4
    /// (block padding), the card's smallest and largest frames among them.
    fn sample() -> Vec<(Stream, u64, Vec<u8>)> {
        let lens = [60, 61, 62, 63, 64, 1514, 9600, 65];
        (0..lens.len())
            .map(|i| {
                let stream = Stream::ALL[i % 4];
                // Cycle 250_000_001 is 1 s + 4 ns; large cycles need the
                // timestamp's high word.
                let cycle = [0, 1, 2, 250_000_001, 7_000_000_000_123, 10, 11, 12][i];
                (stream, cycle, raw_frame(stream, i, lens[i]))
            })
            .collect()
    }

    fn write(path: &Path, frames: &[(Stream, u64, Vec<u8>)]) {
        let mut cap = Capture::create(path, HZ).unwrap();
        for (s, c, f) in frames {
            cap.frame(*s, *c, f).unwrap();
        }
        assert_eq!(cap.frames(), frames.len() as u64);
        cap.finish().unwrap();
    }

    #[test]
    fn streams_and_names() {
        for (i, s) in Stream::ALL.into_iter().enumerate() {
            assert_eq!(s.interface_id(), i as u32);
            let side = s.side();
            let back = if s.is_input() {
                Stream::input(side)
            } else {
                Stream::output(side)
            };
            assert_eq!(back, s);
        }
        let names: Vec<_> = Stream::ALL.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["wire-rx", "wire-tx", "host-h2c", "host-c2h"]);
    }

    #[test]
    fn cycle_times() {
        assert_eq!(cycle_time(0, HZ), Duration::ZERO);
        assert_eq!(cycle_time(1, HZ), Duration::from_nanos(4));
        assert_eq!(cycle_time(HZ + 1, HZ), Duration::new(1, 4));
        assert_eq!(
            cycle_time(u64::MAX, HZ),
            Duration::new(u64::MAX / HZ, (u64::MAX % HZ * 4) as u32)
        );
        // Rounds down where a cycle is not a whole number of nanoseconds.
        assert_eq!(cycle_time(1, 3), Duration::from_nanos(333_333_333));
        assert_eq!(cycle_time(2, 3), Duration::from_nanos(666_666_666));
    }

    /// Read back with `pcap-file`'s own reader.
    #[test]
    fn crate_reader_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cap.pcapng");
        let frames = sample();
        write(&path, &frames);

        let mut r = PcapNgReader::new(File::open(&path).unwrap()).unwrap();
        assert_eq!(r.section().endianness, Endianness::Little);
        assert_eq!(
            (r.section().major_version, r.section().minor_version),
            (1, 0)
        );
        let mut got = Vec::new();
        while let Some(block) = r.next_block() {
            match block.unwrap() {
                Block::EnhancedPacket(p) => got.push(p.into_owned()),
                Block::InterfaceDescription(_) => {}
                other => panic!("unexpected block {other:?}"),
            }
        }
        let idbs = r.interfaces();
        assert_eq!(idbs.len(), 4);
        for (idb, s) in idbs.iter().zip(Stream::ALL) {
            assert_eq!(idb.linktype, DataLink::ETHERNET);
            assert_eq!(u32::from(idb.linktype), 1);
            assert_eq!(idb.snaplen, SNAPLEN);
            assert!(idb
                .options
                .contains(&InterfaceDescriptionOption::IfName(s.name().into())));
            assert!(idb
                .options
                .contains(&InterfaceDescriptionOption::IfTsResol(9)));
            assert!(idb
                .options
                .contains(&InterfaceDescriptionOption::IfFcsLen(0)));
        }
        assert_eq!(got.len(), frames.len());
        for (p, (s, c, f)) in got.iter().zip(&frames) {
            assert_eq!(p.interface_id, s.interface_id());
            // pcap-file 2.0.0 reads timestamps as nanoseconds whatever
            // if_tsresol says; ours say nanoseconds.
            assert_eq!(p.timestamp, cycle_time(*c, HZ));
            assert_eq!(p.timestamp.as_nanos(), *c as u128 * 4);
            assert_eq!(p.original_len as usize, f.len());
            assert_eq!(&p.data[..], &f[..]);
            assert_eq!(p.options, [EnhancedPacketOption::Flags(s.epb_flags())]);
        }
    }

    /// An interface: (link type, snap length, if_name, if_tsresol,
    /// if_fcslen).
    type Idb = (u16, u32, String, Option<u8>, Option<u8>);
    /// A packet: (interface id, timestamp in if_tsresol units, original
    /// length, data, epb_flags).
    type Epb = (u32, u64, u32, Vec<u8>, Option<u32>);

    /// What an independent reading of the file found.
    #[derive(Debug, Default)]
    struct Parsed {
        version: (u16, u16),
        section_length: i64,
        interfaces: Vec<Idb>,
        packets: Vec<Epb>,
    }

    /// Options (§3.5): code, length, value padded to 32 bits, up to
    /// opt_endofopt or the end of the block body.
    fn options(mut b: &[u8], u16_at: impl Fn(&[u8], usize) -> u16) -> Vec<(u16, Vec<u8>)> {
        let mut out = Vec::new();
        while b.len() >= 4 {
            let (code, len) = (u16_at(b, 0), u16_at(b, 2) as usize);
            if code == 0 {
                assert_eq!(len, 0, "opt_endofopt has length 0");
                assert_eq!(b.len(), 4, "opt_endofopt ends the options");
                return out;
            }
            let padded = len.div_ceil(4) * 4;
            assert!(4 + padded <= b.len(), "option {code} overruns the block");
            assert!(b[4 + len..4 + padded].iter().all(|&x| x == 0), "padding");
            out.push((code, b[4..4 + len].to_vec()));
            b = &b[4 + padded..];
        }
        assert!(b.is_empty(), "stray bytes after the options");
        out
    }

    /// A parser of its own, from draft-ietf-opsawg-pcapng: the general
    /// block structure (§3.1), the Section Header (§4.1), Interface
    /// Description (§4.2) and Enhanced Packet (§4.3) Blocks. Either byte
    /// order.
    fn parse(file: &[u8]) -> Parsed {
        assert!(file.len() >= 28, "too short for a section header");
        assert_eq!(&file[..4], &[0x0a, 0x0d, 0x0d, 0x0a], "SHB block type");
        let le = match &file[8..12] {
            [0x4d, 0x3c, 0x2b, 0x1a] => true,
            [0x1a, 0x2b, 0x3c, 0x4d] => false,
            m => panic!("bad byte-order magic {m:02x?}"),
        };
        let u16_at = move |b: &[u8], i: usize| {
            let v = [b[i], b[i + 1]];
            if le {
                u16::from_le_bytes(v)
            } else {
                u16::from_be_bytes(v)
            }
        };
        let u32_at = move |b: &[u8], i: usize| {
            let v = b[i..i + 4].try_into().unwrap();
            if le {
                u32::from_le_bytes(v)
            } else {
                u32::from_be_bytes(v)
            }
        };
        let mut p = Parsed::default();
        let mut rest = file;
        let mut first = true;
        while !rest.is_empty() {
            assert!(rest.len() >= 12, "truncated block");
            let (ty, len) = (u32_at(rest, 0), u32_at(rest, 4) as usize);
            assert!(len >= 12 && len % 4 == 0, "block length {len}");
            assert!(len <= rest.len(), "block overruns the file");
            assert_eq!(u32_at(rest, len - 4) as usize, len, "trailing length");
            let body = &rest[8..len - 4];
            assert_eq!(first, ty == 0x0a0d0d0a, "one section header, first");
            match ty {
                0x0a0d0d0a => {
                    p.version = (u16_at(body, 4), u16_at(body, 6));
                    let sl = body[8..16].try_into().unwrap();
                    p.section_length = if le {
                        i64::from_le_bytes(sl)
                    } else {
                        i64::from_be_bytes(sl)
                    };
                    options(&body[16..], u16_at);
                }
                1 => {
                    assert_eq!(u16_at(body, 2), 0, "IDB reserved");
                    let opts = options(&body[8..], u16_at);
                    let opt = |c| opts.iter().find(|(code, _)| *code == c).map(|o| &o.1);
                    let one = |c| {
                        opt(c).map(|v| {
                            assert_eq!(v.len(), 1);
                            v[0]
                        })
                    };
                    let name = opt(2).map(|v| String::from_utf8(v.clone()).unwrap());
                    p.interfaces.push((
                        u16_at(body, 0),
                        u32_at(body, 4),
                        name.unwrap_or_default(),
                        one(9),
                        one(13),
                    ));
                }
                6 => {
                    let id = u32_at(body, 0);
                    assert!((id as usize) < p.interfaces.len(), "EPB before its IDB");
                    let ts = (u32_at(body, 4) as u64) << 32 | u32_at(body, 8) as u64;
                    let (cap, orig) = (u32_at(body, 12) as usize, u32_at(body, 16));
                    assert!(cap <= orig as usize);
                    let padded = cap.div_ceil(4) * 4;
                    let data = body[20..20 + cap].to_vec();
                    assert!(body[20 + cap..20 + padded].iter().all(|&x| x == 0));
                    let opts = options(&body[20 + padded..], u16_at);
                    let flags = opts
                        .iter()
                        .find(|(c, _)| *c == 2)
                        .map(|(_, v)| u32_at(v, 0));
                    p.packets.push((id, ts, orig, data, flags));
                }
                other => panic!("unexpected block type {other:#x}"),
            }
            first = false;
            rest = &rest[len..];
        }
        p
    }

    /// Read back with the parser above, which shares no code with the
    /// writer.
    #[test]
    fn own_parser_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cap.pcapng");
        let frames = sample();
        write(&path, &frames);

        let p = parse(&std::fs::read(&path).unwrap());
        assert_eq!(p.version, (1, 0));
        assert_eq!(p.section_length, -1);
        assert_eq!(p.interfaces.len(), 4);
        for (idb, s) in p.interfaces.iter().zip(Stream::ALL) {
            assert_eq!(
                idb,
                &(1, SNAPLEN, s.name().to_string(), Some(9), Some(0)),
                "{s:?}"
            );
        }
        assert_eq!(p.packets.len(), frames.len());
        for ((id, ts, orig, data, flags), (s, c, f)) in p.packets.iter().zip(&frames) {
            assert_eq!(*id, s.interface_id());
            assert_eq!(*ts, c * 4, "nanoseconds at 250 MHz");
            assert_eq!(*orig as usize, f.len());
            assert_eq!(data, f);
            assert_eq!(*flags, Some(if s.is_input() { 1 } else { 2 }));
        }
        // Every stream is there.
        for s in Stream::ALL {
            assert!(p.packets.iter().any(|pk| pk.0 == s.interface_id()));
        }
    }

    #[test]
    fn empty_capture_and_cut_frames() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pcapng");
        Capture::create(&path, HZ).unwrap().finish().unwrap();
        let p = parse(&std::fs::read(&path).unwrap());
        assert_eq!((p.interfaces.len(), p.packets.len()), (4, 0));

        let path = dir.path().join("big.pcapng");
        let big = vec![0x5a; SNAPLEN as usize + 3];
        let mut cap = Capture::create(&path, HZ).unwrap();
        cap.frame(Stream::WireRx, 5, &big).unwrap();
        cap.finish().unwrap();
        let p = parse(&std::fs::read(&path).unwrap());
        let (_, _, orig, data, _) = &p.packets[0];
        assert_eq!(*orig as usize, big.len());
        assert_eq!(data.len(), SNAPLEN as usize);
    }

    #[test]
    fn errors_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no-such-dir").join("cap.pcapng");
        let e = Capture::create(&path, HZ).unwrap_err();
        assert_eq!(e.path, path);
        assert_eq!(e.source.kind(), io::ErrorKind::NotFound);
        let msg = e.to_string();
        assert!(msg.starts_with("creating capture "), "{msg}");
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(std::error::Error::source(&e).is_some());
    }

    /// (stream, cycle, source, destination, UDP payload)
    type UdpFrame = (Stream, u64, Endpoint, Endpoint, Vec<u8>);

    /// Writes `path`: UDP frames built as the card builds them, one on each
    /// stream, the card at 10.0.0.1, a peer on the wire and a host.
    fn write_udp(path: &Path) -> [UdpFrame; 4] {
        let ep = |last: u8, port: u16| Endpoint {
            mac: [0x02, 0x57, 0x46, 0, 0, last],
            ip: Ipv4Addr::new(10, 0, 0, last),
            port,
        };
        let (card, peer, host) = (ep(1, 0x5746), ep(2, 40000), ep(3, 40001));
        let frames = [
            (Stream::WireRx, 100, peer, card, b"from the net".to_vec()),
            (Stream::HostH2c, 101, host, card, b"from the host".to_vec()),
            (Stream::WireTx, 250_000_102, card, peer, vec![7; 1000]),
            (Stream::HostC2h, 250_000_103, card, host, vec![9; 100]),
        ];
        let mut cap = Capture::create(path, HZ).unwrap();
        for (s, c, src, dst, payload) in &frames {
            cap.frame(*s, *c, &build_frame(src, dst, payload)).unwrap();
        }
        cap.finish().unwrap();
        frames
    }

    /// Whether `tool` runs here (`tool --version`).
    fn have(tool: &str) -> bool {
        let ok = std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            eprintln!("{tool} not installed: skipped");
        }
        ok
    }

    /// tcpdump (libpcap) reads the capture and decodes the frames, when it
    /// is installed (`apt-get install tcpdump`); skipped otherwise.
    #[test]
    fn tcpdump_reads_it() {
        if !have("tcpdump") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cap.pcapng");
        let frames = write_udp(&path);

        let out = std::process::Command::new("tcpdump")
            .args(["-r"])
            .arg(&path)
            .args(["-nn", "-e", "-tt", "--time-stamp-precision=nano"])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tcpdump failed: {stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), frames.len(), "{stdout}");
        let mac = |e: &Endpoint| {
            e.mac
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(":")
        };
        for (line, (_, c, src, dst, payload)) in lines.iter().zip(&frames) {
            let len = build_frame(src, dst, payload).len();
            let t = cycle_time(*c, HZ);
            let want = [
                format!("{}.{:09} ", t.as_secs(), t.subsec_nanos()),
                format!("{} > {}, ethertype IPv4 (0x0800)", mac(src), mac(dst)),
                format!("length {len}:"),
                format!("{}.{} > {}.{}: UDP", src.ip, src.port, dst.ip, dst.port),
                format!("UDP, length {}", payload.len()),
            ];
            for w in want {
                assert!(line.contains(&w), "{line:?} lacks {w:?}");
            }
        }
    }

    /// tshark (Wireshark) reads the interfaces' names, the directions and
    /// the nanosecond timestamps, when it is installed (`apt-get install
    /// tshark`); skipped otherwise.
    #[test]
    fn tshark_reads_it() {
        if !have("tshark") {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cap.pcapng");
        let frames = write_udp(&path);

        let fields = [
            "frame.interface_id",
            "frame.interface_name",
            "frame.packet_flags_direction",
            "frame.time_epoch",
            "frame.len",
            "udp.srcport",
        ];
        let mut cmd = std::process::Command::new("tshark");
        cmd.arg("-r").arg(&path).args(["-T", "fields"]);
        for f in fields {
            cmd.args(["-e", f]);
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "tshark failed: {stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), frames.len(), "{stdout}");
        for (line, (s, c, src, dst, payload)) in lines.iter().zip(&frames) {
            let got: Vec<&str> = line.split('\t').collect();
            assert_eq!(got.len(), fields.len(), "{line:?}");
            assert_eq!(got[0], s.interface_id().to_string(), "{line:?}");
            assert_eq!(got[1], s.name(), "{line:?}");
            let dir = got[2].trim_start_matches("0x");
            assert_eq!(u32::from_str_radix(dir, 16), Ok(s.epb_flags()), "{line:?}");
            let secs: f64 = got[3].parse().unwrap();
            let want = cycle_time(*c, HZ).as_secs_f64();
            assert!((secs - want).abs() < 1e-10, "{line:?}: want {want}");
            let len = build_frame(src, dst, payload).len();
            assert_eq!(got[4], len.to_string(), "{line:?}");
            assert_eq!(got[5], src.port.to_string(), "{line:?}");
        }
    }
}
