//! Nothing panics on network, file or device input: arbitrary bytes
//! through every parser that takes them (packets and records from the
//! network or the card, tuple files, MemOps programs and traces), the
//! shipped TOML and JSON files with their values and lines mutated (AVM
//! scenarios, gradient workloads, board files, the bitstream manifest), and
//! card identification over arbitrary register contents.

use proptest::prelude::*;
use std::path::Path;
use std::time::Duration;
use weft_driver::{Device, DmaBuffer};
use weft_model::kv_agg::packet::{self, Ack, Header, RecordKind};

/// The shipped configuration files, by what parses them.
const AVM: [&str; 6] = [
    include_str!("../../examples/avm/bursty-victim.toml"),
    include_str!("../../examples/avm/contention.toml"),
    include_str!("../../examples/avm/infeasible.toml"),
    include_str!("../../examples/avm/mid-run.toml"),
    include_str!("../../examples/avm/overload.toml"),
    include_str!("../../examples/avm/victims.toml"),
];
const GRAD: [&str; 3] = [
    include_str!("../../examples/grad/jobs.toml"),
    include_str!("../../examples/grad/equal.toml"),
    include_str!("../../examples/grad/short-long.toml"),
];
const BOARDS: [&str; 5] = [
    include_str!("../../bitstreams/boards/u200.toml"),
    include_str!("../../bitstreams/boards/u250.toml"),
    include_str!("../../bitstreams/boards/u280.toml"),
    include_str!("../../bitstreams/boards/u50.toml"),
    include_str!("../../bitstreams/boards/u55c.toml"),
];
const MANIFEST: &str = include_str!("../../bitstreams/manifest.json");

/// Values a mutated file may carry where a number was.
const ODD: [&str; 12] = [
    "0",
    "-1",
    "1e308",
    "-0.0",
    "nan",
    "inf",
    "18446744073709551616",
    "4294967296",
    "1",
    "0.5",
    "\"x\"",
    "[]",
];

/// `text` with each number replaced by an odd value at `p_num` and each
/// line dropped or doubled at `p_line`, driven by `choices`.
fn mutate(text: &str, choices: &[u8], p_num: u8, p_line: u8) -> String {
    let mut k = 0usize;
    let mut next = || {
        k += 1;
        choices.get(k % choices.len().max(1)).copied().unwrap_or(0)
    };
    let mut out = String::new();
    for line in text.lines() {
        let c = next();
        if c < p_line {
            continue;
        }
        let mut l = String::new();
        let mut chars = line.chars().peekable();
        while let Some(ch) = chars.next() {
            if ch.is_ascii_digit() {
                let mut num = ch.to_string();
                while let Some(&d) = chars.peek() {
                    if d.is_ascii_digit() || d == '.' || d == '_' {
                        num.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                let c = next();
                if c < p_num {
                    l.push_str(ODD[c as usize % ODD.len()]);
                } else {
                    l.push_str(&num);
                }
            } else {
                l.push(ch);
            }
        }
        out.push_str(&l);
        out.push('\n');
        if next() < p_line / 2 {
            out.push_str(&l);
            out.push('\n');
        }
    }
    out
}

/// A "card" whose registers hold whatever the test says: word `addr / 4`
/// of `words` (cycled), with the magic and map version right at `deep` so
/// that identification walks the block chain.
struct Junk {
    words: Vec<u32>,
    deep: bool,
    len: u64,
}

impl Device for Junk {
    fn name(&self) -> String {
        "junk".into()
    }
    fn bar_len(&self) -> u64 {
        self.len
    }
    fn read32(&self, addr: u32) -> weft_driver::Result<u32> {
        if self.deep && addr == weft_regs::id::MAGIC.addr {
            return Ok(weft_regs::MAGIC);
        }
        if self.deep && addr == weft_regs::id::MAP_VERSION.addr {
            return Ok(weft_regs::MAP.version);
        }
        Ok(self.words[(addr / 4) as usize % self.words.len()])
    }
    fn write32(&self, _addr: u32, _value: u32) -> weft_driver::Result<()> {
        Ok(())
    }
    fn dma_alloc(&self, _len: usize) -> weft_driver::Result<Box<dyn DmaBuffer>> {
        Err(weft_driver::Error::Dma("no DMA on this test device".into()))
    }
    fn wait_irq(&self, _vector: u32, _timeout: Duration) -> weft_driver::Result<bool> {
        Ok(false)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(2000), ..ProptestConfig::default() })]

    #[test]
    fn packets_and_records(bytes in prop::collection::vec(any::<u8>(), 0..2100), job in any::<u16>(), senders in 0usize..32) {
        let _ = Header::decode(&bytes);
        let _ = packet::validate(&bytes, job, senders);
        let _ = packet::tuples(&bytes).count();
        if bytes.len() >= 8 {
            let v = u64::from_le_bytes(bytes[..8].try_into().unwrap());
            let _ = Ack::unpack(v);
            let _ = RecordKind::from_code(bytes[0]);
        }
        // The reference model takes any packet.
        let mut m = weft_model::kv_agg::KvModel::new(weft_model::kv_agg::Config { lanes: 2, slot_bits: 2, senders: 4 });
        let _ = m.packet(&bytes);
    }

    #[test]
    fn text_inputs(text in "\\PC{0,400}", workers in 1usize..8) {
        let _ = weft::kv::input::parse(text.as_bytes(), workers);
        let _ = weft::memops::parse_trace(&text);
        let _ = weft::memops::parse(&text).map(|p| weft::memops::verify(&p));
    }

    #[test]
    fn structured_text_inputs(lines in prop::collection::vec(("[0-9]{1,3}", "(read|write|atomic|r|x)", "(0x)?[0-9a-f]{0,18}", "[0-9]{1,3}", "[0-9]{1,4}", "[0-9a-f]{0,20}"), 0..20)) {
        let text: String = lines.iter().map(|(a, b, c, d, e, f)| format!("{a} {b} {c} {d} {e} {f}\n")).collect();
        let _ = weft::memops::parse_trace(&text);
        let kv: String = lines.iter().map(|(a, _, c, d, _, _)| format!("{a} {c} {d}\n")).collect();
        let _ = weft::kv::input::parse(kv.as_bytes(), 4);
    }

    #[test]
    fn mutated_configuration_files(which in 0usize..15, choices in prop::collection::vec(any::<u8>(), 1..64), p_num in 0u8..80, p_line in 0u8..30) {
        let path = Path::new("fuzzed.toml");
        match which {
            0..=5 => {
                let _ = weft::avm::parse(&mutate(AVM[which], &choices, p_num, p_line));
            }
            6..=8 => {
                let _ = weft::grad::parse(&mutate(GRAD[which - 6], &choices, p_num, p_line), 64);
            }
            9..=13 => {
                let _ = weft::bitstream::board::Board::parse(&mutate(BOARDS[which - 9], &choices, p_num, p_line), path);
            }
            _ => {
                let _ = weft::bitstream::manifest::Manifest::parse(&mutate(MANIFEST, &choices, p_num, p_line), path);
            }
        }
    }

    #[test]
    fn arbitrary_text_as_configuration(text in "\\PC{0,400}") {
        let path = Path::new("fuzzed.toml");
        let _ = weft::avm::parse(&text);
        let _ = weft::grad::parse(&text, 64);
        let _ = weft::bitstream::board::Board::parse(&text, path);
        let _ = weft::bitstream::manifest::Manifest::parse(&text, path);
    }

    #[test]
    fn identify_over_arbitrary_registers(words in prop::collection::vec(any::<u32>(), 1..512), deep in any::<bool>(), len in prop_oneof![Just(0u64), 0u64..0x10000, Just(1u64 << 20)]) {
        let dev = Junk { words, deep, len };
        let _ = weft_driver::identify(&dev);
    }
}
