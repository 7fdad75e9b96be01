//! Nothing panics on network or file input: arbitrary bytes through every
//! parser that takes them (packets and records from the network or the
//! card, tuple files, MemOps programs and traces, board files).

use proptest::prelude::*;
use weft_model::kv_agg::packet::{self, Ack, Header, RecordKind};

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
}
