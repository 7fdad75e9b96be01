//! Key-value stream aggregation on the card (after ASK, ASPLOS'23): the
//! host daemon and its async front.
//!
//! N workers each push `(key, value)` tuples; the daemon packs them into
//! weft aggregation packets (ASK's key partitioning onto the card's lanes,
//! see [`pack`]), sends them over a lossy network to the card's network port
//! with a per-sender window and retransmission on timeout, merges every
//! partial sum the card spills, and at the end flushes the card's table.
//! The result is the exact `i64` sum of every key, whatever the network
//! lost, duplicated or reordered.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use weft::kv::{JobOptions, KvJob};
//! let card = weft::Card::open("sim")?;
//! let job = KvJob::open(card, JobOptions { workers: 2, ..JobOptions::default() }).await?;
//! job.push(0, vec![(7, 1), (9, -3)]).await?;
//! job.push(1, vec![(7, 41)]).await?;
//! let done = job.finish().await?;
//! assert_eq!(done.sums[&7], 42);
//! # Ok(()) }
//! ```
//!
//! Layers, bottom up:
//! - [`pack`]: home lanes and the packer;
//! - [`Daemon`]: the synchronous core, in the card's device time, through
//!   the card's registers and frames (usable on its own, e.g. [`run`] a
//!   whole job on a [`crate::Card`]);
//! - [`KvJob`]: the async (tokio) front, which runs the core on a blocking
//!   thread and feeds it tuples through a channel;
//! - [`input`] and [`gen`]: the tuple file format of `weft agg kv` and a
//!   seeded Zipf stream generator.
//!
//! `docs/kv-aggregation.md` describes the packet format, the card and the
//! reliability scheme.

pub mod collect;
pub mod daemon;
pub mod flow;
pub mod gen;
pub mod input;
pub mod job;
pub mod pack;
pub mod records;
pub mod recovery;
pub mod sender;

pub use collect::{collect, CollectOptions};
pub use daemon::{run, Daemon, JobOutput, Poll};
pub use job::{Finished, KvJob, Worker};
pub use sender::{Sender, SenderOptions, SenderStats};

use serde::Serialize;
use weft_model::kv_agg::packet;
use weft_model::net::{NetConfig, NetError};

/// Result alias of the module.
pub type Result<T, E = KvError> = std::result::Result<T, E>;

/// What can go wrong in a key-value aggregation job.
#[derive(Debug, thiserror::Error)]
pub enum KvError {
    /// Job options that cannot work.
    #[error("bad job options: {0}")]
    Options(String),
    /// A network configuration that cannot be used.
    #[error("bad network: {0}")]
    Net(#[from] NetError),
    /// A worker id outside the job.
    #[error("worker {worker} is not in this job (workers 0..{workers})")]
    Worker {
        /// The worker given.
        worker: usize,
        /// Workers in the job.
        workers: usize,
    },
    /// A bad line in a tuple file; nothing ran.
    #[error("line {line}: {msg}")]
    Input {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        msg: String,
    },
    /// A generator spec that cannot be used.
    #[error("bad generator: {0}")]
    Generate(String),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The card's geometry register disagrees with what it was built as.
    #[error("card geometry: {0}")]
    Geometry(String),
    /// A packet went unacknowledged after the most transmissions allowed.
    #[error("sender {sender}: packet {seq} unacknowledged after {tries} transmissions (is the network losing everything?)")]
    Stalled {
        /// Sender.
        sender: usize,
        /// Sequence number.
        seq: u32,
        /// Transmissions made.
        tries: u32,
    },
    /// The card did not drain its input queue in time.
    #[error("the card did not drain its input within {cycles} cycles")]
    Drain {
        /// Cycles waited.
        cycles: u64,
    },
    /// The card did not finish a flush in time.
    #[error("the card did not finish its flush within {cycles} cycles")]
    FlushTimeout {
        /// Cycles waited.
        cycles: u64,
    },
    /// A register access or frame transfer failed: the job's result
    /// cannot be trusted.
    #[error("card: {0}")]
    Card(weft_driver::Error),
    /// The card cannot run the job (it has no frame path here, or this
    /// build cannot open it).
    #[error("{0}")]
    Unsupported(String),
    /// A record frame went missing between the card and the collector.
    #[error("record frame {expected} never reached the collector (the next one was {got}): the sums would be wrong")]
    RecordsLost {
        /// The sequence number expected.
        expected: u32,
        /// The one that came.
        got: u32,
    },
    /// The job's daemon stopped (it failed earlier, or the job was dropped).
    #[error("the job's daemon has stopped")]
    Closed,
}

impl KvError {
    /// A host-library error about the card, as a job error.
    pub fn from_card(e: crate::Error) -> Self {
        match e {
            crate::Error::Driver(d) => KvError::Card(d),
            other => KvError::Unsupported(other.to_string()),
        }
    }
}

/// How a job runs.
#[derive(Clone, Debug)]
pub struct JobOptions {
    /// Worker senders, ids `0..workers` (at most the card's senders, 16).
    pub workers: usize,
    /// Job id carried in every packet; the card drops other jobs' packets.
    pub job: u16,
    /// Hot-key-agnostic replacement on the card (`kv.CTRL.REPLACE`).
    pub replace: bool,
    /// Largest UDP payload sent, in bytes. The default, 1472, fills a
    /// 1500-byte MTU (20 bytes of IPv4 and 8 of UDP headers) with 182 tuples:
    /// exactly 23 beats at 512 bits.
    pub max_packet_bytes: usize,
    /// The network between the workers and the card.
    pub net: NetConfig,
    /// Seed of the network's random choices.
    pub seed: u64,
    /// Ceiling of the retransmission timer in cycles; `None` derives a safe
    /// one from the network delay, the workers and the window (see
    /// `Daemon::open`). The timer adapts below it to the measured round
    /// trip ([`recovery`]).
    pub rto: Option<u64>,
    /// Cycles the card advances per step while it is busy (a smaller
    /// quantum returns acks sooner; a larger one simulates faster).
    pub quantum: u64,
    /// Transmissions of one packet before the job fails as stalled.
    pub max_tries: u32,
}

/// Tuples in a packet of `bytes` bytes of UDP payload.
pub fn tuples_in(bytes: usize) -> usize {
    bytes.saturating_sub(packet::HEADER_BYTES) / packet::TUPLE_BYTES
}

/// Refuse a packet size that holds no tuple or exceeds a jumbo frame.
pub fn check_packet_bytes(bytes: usize) -> Result<()> {
    let min = packet::HEADER_BYTES + packet::TUPLE_BYTES;
    if !(min..=packet::MAX_PACKET_BYTES).contains(&bytes) {
        return Err(KvError::Options(format!(
            "packet size {bytes} is outside {min}..={} bytes",
            packet::MAX_PACKET_BYTES
        )));
    }
    Ok(())
}

/// The default payload size: a 1500-byte MTU less IPv4 and UDP headers.
pub const MTU_PAYLOAD_BYTES: usize = 1472;

impl Default for JobOptions {
    fn default() -> Self {
        Self {
            workers: 1,
            job: 1,
            replace: true,
            max_packet_bytes: MTU_PAYLOAD_BYTES,
            net: NetConfig::IDEAL,
            seed: 1,
            rto: None,
            quantum: 32,
            max_tries: 100,
        }
    }
}

impl JobOptions {
    /// Tuples in a full packet.
    pub fn max_tuples(&self) -> usize {
        tuples_in(self.max_packet_bytes)
    }

    /// Check the options (the card-dependent checks happen at open).
    pub fn validate(&self) -> Result<()> {
        let bad = |m: String| Err(KvError::Options(m));
        if self.workers == 0 {
            return bad("at least one worker is needed".into());
        }
        check_packet_bytes(self.max_packet_bytes)?;
        if self.quantum == 0 || self.max_tries == 0 || self.rto == Some(0) {
            return bad("quantum, max_tries and rto must be positive".into());
        }
        self.net.validate()?;
        Ok(())
    }
}

/// What a job did, for people and scripts (`weft agg kv --json`).
///
/// Host-side counts come from the daemon, card-side ones from the engine's
/// counter registers (`kv` block), read after the flush.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Which card ran the job (`sim:verilator`, `sim:rust-hdl`,
    /// `sim:model`, …).
    pub card: String,
    /// Worker senders.
    pub workers: usize,
    /// Slots on the card.
    pub slots: usize,
    /// Replacement was on.
    pub replace: bool,
    /// Tuples pushed.
    pub tuples: u64,
    /// Distinct keys in the result.
    pub keys: u64,
    /// Data packets formed (distinct sequence numbers).
    pub packets: u64,
    /// Packets handed to the network, retransmissions included.
    pub transmissions: u64,
    /// Retransmissions, for any reason: `timeouts + fast_retransmissions`.
    pub retransmissions: u64,
    /// Retransmissions because a packet's timer fired.
    pub timeouts: u64,
    /// Retransmissions because a later packet was acknowledged and the
    /// missing one had a round trip and the reordering window to arrive
    /// (RACK, [`recovery`]).
    pub fast_retransmissions: u64,
    /// Second copies of a flow's last packet, sent with it (not
    /// retransmissions: see [`flow::Transmission::TailCopy`]).
    pub tail_copies: u64,
    /// The retransmission timer's ceiling, in cycles: the conservative
    /// bound that covers the slowest possible acknowledgement (the timer
    /// itself adapts below it, [`recovery`]).
    pub rto: u64,
    /// The senders' smoothed round-trip time at the end, in cycles (the
    /// mean over senders with a sample; 0 without).
    pub srtt: u64,
    /// Tuples placed outside their key's home lane (see [`pack`]).
    pub misplaced: u64,
    /// Acknowledgements received.
    pub acks: u64,
    /// Of them, acknowledgements of duplicates.
    pub duplicate_acks: u64,
    /// Packets retired by an ack's window base (a cumulative
    /// acknowledgement) rather than by their own ack, lost or late.
    pub cumulative_retired: u64,
    /// Packets the network dropped.
    pub net_lost: u64,
    /// Packets the network delivered twice.
    pub net_duplicated: u64,
    /// Copies the network held back (reordered).
    pub net_reordered: u64,
    /// Card: data packets accepted (`PKTS`).
    pub accepted_packets: u64,
    /// Card: tuples in accepted packets (`TUPLES_IN`).
    pub tuples_in: u64,
    /// Card: tuples absorbed into a slot (`AGGREGATED`).
    pub aggregated_on_nic: u64,
    /// Card: records spilled: rejected newcomers, evictions, overflows
    /// (`SPILLED`).
    pub spilled: u64,
    /// Card: residents evicted by a newcomer (`EVICTED`).
    pub evicted: u64,
    /// Card: partial sums spilled before the 32-bit accumulator overflowed
    /// (`OVERFLOWS`).
    pub overflows: u64,
    /// Card: duplicate packets, acknowledged again and not aggregated
    /// (`DUP_PKTS`).
    pub duplicates_dropped: u64,
    /// Card: malformed packets dropped (`MALFORMED`).
    pub malformed: u64,
    /// Card: packets ahead of their sender's window (`WINDOW_DROPS`).
    pub window_drops: u64,
    /// `(key, partial sum)` records the host merged: `spill_records +
    /// flush_records`.
    pub host_records: u64,
    /// Records from spill beats.
    pub spill_records: u64,
    /// Records from the final flush.
    pub flush_records: u64,
    /// Record frames the collector took (records arrive many per frame).
    pub record_frames: u64,
    /// `aggregated_on_nic / tuples`: the fraction of tuples absorbed into a
    /// slot on the card rather than sent to the host one by one. A tuple
    /// absorbed into a slot whose partial sum is later evicted or
    /// overflowed still counts: it was combined on the card. 0 for no
    /// tuples.
    pub nic_resident_fraction: f64,
    /// `host_records / tuples`: the host's merge work per input tuple
    /// (lower is better; 1 would be no aggregation on the card).
    pub host_record_fraction: f64,
    /// Card cycles of the job, from its first packet to the flush's end.
    pub cycles: u64,
    /// 64-byte beats of the data frames that reached the card's wire port
    /// (duplicates and retransmissions included).
    pub beats: u64,
    /// `tuples / cycles`: end-to-end throughput in tuples per card cycle
    /// (at most `lanes` minus header overhead, 7.9 at 512 bits with
    /// 1472-byte packets).
    pub tuples_per_cycle: f64,
    /// `tuples_in / beats`: how full the beats the card took were.
    pub tuples_per_beat: f64,
}

impl Stats {
    /// Fill in the ratios from the counts.
    pub(crate) fn finish_ratios(&mut self) {
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        self.nic_resident_fraction = ratio(self.aggregated_on_nic, self.tuples);
        self.host_record_fraction = ratio(self.host_records, self.tuples);
        self.tuples_per_cycle = ratio(self.tuples, self.cycles);
        self.tuples_per_beat = ratio(self.tuples_in, self.beats);
    }
}
