//! The benchmark code paths, at small sizes: the 512-bit engine takes one
//! beat every cycle with no input stall on every stream (a property of the
//! RTL block, counted in cycles), and replacement keeps more of a skewed
//! stream on the card (its model, `sim:model`) than no replacement.

use weft::bench::{line_rate, residency, BenchOptions};
use weft_sim::simulator::Simulator;

#[test]
fn line_rate_is_one_beat_per_cycle_without_stalls() {
    let opts = BenchOptions {
        simulator: Simulator::RustHdl,
        packets: 3,
        tuples: 0,
        card: "sim:model".parse().unwrap(),
        progress: None,
    };
    for l in line_rate(&opts).unwrap() {
        assert!(l.model_agrees, "{}", l.stream);
        assert_eq!(l.input_stalls, 0, "{}", l.stream);
        assert_eq!(l.beats, 3 * 23);
        assert_eq!(l.cycles, l.beats, "{}: one beat per cycle", l.stream);
        assert!((l.tuples_per_cycle - 182.0 / 23.0).abs() < 1e-9);
    }
}

#[test]
fn replacement_keeps_hot_keys_on_the_card() {
    let opts = BenchOptions {
        simulator: Simulator::RustHdl,
        packets: 0,
        tuples: 400_000,
        card: "sim:model".parse().unwrap(),
        progress: None,
    };
    let r = residency(&opts).unwrap();
    assert_eq!(r.len(), 8);
    for pair in r.chunks(2) {
        let (on, off) = (&pair[0], &pair[1]);
        assert!(on.replace && !off.replace);
        assert!(
            on.nic_resident_fraction > off.nic_resident_fraction,
            "zipf {} table {:.3}: {} vs {}",
            on.zipf,
            on.table_fraction,
            on.nic_resident_fraction,
            off.nic_resident_fraction
        );
    }
}
