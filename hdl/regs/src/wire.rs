//! The card's wire constants: UDP ports, frame limits and `tuser` codes.
//! RTL, models, driver and host read them from here, as they read the
//! register map (`docs/wire.md` is the prose).

/// UDP port of key-value aggregation (data to the card, acks and records
/// from it).
pub const KV_PORT: u16 = 0x5746;
/// UDP port of gradient aggregation.
pub const GRAD_PORT: u16 = 0x5747;
/// UDP port of MemOps transactions and completions.
pub const MEMOPS_PORT: u16 = 0x5748;

/// Ethernet II header bytes (no VLAN tag, no FCS).
pub const ETH_BYTES: usize = 14;
/// IPv4 header bytes without options.
pub const IPV4_BYTES: usize = 20;
/// UDP header bytes.
pub const UDP_BYTES: usize = 8;
/// Ethernet + IPv4 + UDP header bytes: what the card strips from and puts
/// in front of every engine payload.
pub const HEADERS: usize = ETH_BYTES + IPV4_BYTES + UDP_BYTES;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;
/// TTL of frames the card builds.
pub const TTL: u8 = 64;
/// Shortest Ethernet frame without FCS: shorter frames are padded to it.
pub const MIN_FRAME: usize = 60;
/// Longest frame the card accepts on either input (beats of 64 bytes:
/// [`MAX_FRAME_BEATS`]).
pub const MAX_FRAME: usize = 9600;
/// Beats of the longest frame.
pub const MAX_FRAME_BEATS: usize = MAX_FRAME.div_ceil(64);
/// Shortest UDP payload steered to the key-value or gradient engine (their
/// 16-byte headers).
pub const MIN_ENGINE_PAYLOAD: usize = 16;
/// Shortest UDP payload steered to MemOps (one transaction).
pub const MIN_MEMOPS_PAYLOAD: usize = 24;

/// `tuser_src` of frames passed through unchanged.
pub const SRC_PASS: u16 = 0x0000;
/// `tuser_src` of key-value record frames.
pub const SRC_KV_RECORDS: u16 = 0x1000;
/// `tuser_src` of key-value acks.
pub const SRC_KV_ACK: u16 = 0x2000;
/// `tuser_src` of gradient frames, OR-ed with the packet kind `<< 8`
/// (1 RESULT, 2 EVICT, 3 FALLBACK).
pub const SRC_GRAD: u16 = 0x3000;
/// `tuser_src` of MemOps completions.
pub const SRC_MEMOPS: u16 = 0x4000;
/// `tuser_dst` of every frame to the wire: CMAC port 0 (`1 << (6 + 0)`,
/// the shell's `packet_adapter_tx.sv` drops frames without it).
pub const TX_DST: u16 = 0x0040;

/// Bits of a return address on the RTL's sidebands: source MAC (47:0, first
/// wire byte in 47:40), IPv4 address (79:48), UDP port (95:80), and bit 96
/// set when the request came from the host port.
pub const RET_BITS: usize = 97;

/// Key-value senders with a sequence window (sender ids `0..KV_SENDERS`).
pub const KV_SENDERS: usize = 16;
/// Sequence window per key-value sender, in packets.
pub const KV_WINDOW: usize = 32;
/// Largest key-value data packet (a 9000-byte jumbo frame's UDP payload).
pub const KV_MAX_PACKET: usize = 8972;
/// Most records in one record frame: `16 + 8 * n` bytes fit a
/// [`KV_MAX_PACKET`] payload.
pub const KV_MAX_RECORDS: usize = (KV_MAX_PACKET - 16) / 8;
/// Records per record frame out of reset: a 1514-byte frame (1500-byte MTU).
pub const KV_DEFAULT_RECORDS: usize = (1500 - IPV4_BYTES - UDP_BYTES - 16) / 8;

/// Key-value header flag: data (sender to card).
pub const KV_FLAG_DATA: u8 = 0x01;
/// Key-value header flag: ack (card to sender).
pub const KV_FLAG_ACK: u8 = 0x02;
/// Key-value header flag: records drained by a flush.
pub const KV_FLAG_FLUSH: u8 = 0x04;
/// Key-value header flag: the flush is complete.
pub const KV_FLAG_FIN: u8 = 0x08;
/// Key-value header flag: a record frame (card to collector).
pub const KV_FLAG_RECORDS: u8 = 0x10;
/// Sender id field of record frames: the card.
pub const KV_CARD_SENDER: u16 = 0xffff;
