//! The generated register artifacts are committed; this test fails when any
//! of them differs from what the map renders today. `WEFT_BLESS=1` rewrites
//! them instead.

use std::path::PathBuf;
use weft_regs::render::ARTIFACTS;
use weft_regs::MAP;

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn map_is_well_formed() {
    weft_regs::check(&MAP).unwrap();
}

#[test]
fn generated_artifacts_are_fresh() {
    let bless = std::env::var_os("WEFT_BLESS").is_some();
    let mut stale = vec![];
    for (path, render) in ARTIFACTS {
        let want = render(&MAP);
        let file = repo_root().join(path);
        let have = std::fs::read_to_string(&file).unwrap_or_default();
        if have != want {
            if bless {
                std::fs::write(&file, &want).unwrap();
            } else {
                stale.push(path);
            }
        }
    }
    assert!(
        stale.is_empty(),
        "stale generated register artifacts: {stale:?}; re-render with `WEFT_BLESS=1 cargo test -p weft-regs`"
    );
}

#[test]
fn every_register_is_found_by_lookup() {
    for (b, r) in MAP.registers() {
        let (lb, lr) = MAP.lookup(r.addr).unwrap();
        assert_eq!((lb.name, lr.name), (b.name, r.name));
    }
    assert!(MAP.lookup(0xFFFC).is_none());
}

#[test]
fn check_rejects_bad_maps() {
    use weft_regs::{Block, Map};
    static MOVED: [Block; 2] = [weft_regs::ctrl::BLOCK, weft_regs::id::BLOCK];
    let bad = Map {
        blocks: &MOVED,
        ..MAP
    };
    assert!(weft_regs::check(&bad).is_err());
}

#[test]
fn fields_round_trip() {
    let f = weft_regs::id::MAP_VERSION_MAJOR;
    let v = f.set(0x1234, 7);
    assert_eq!(f.get(v), 7);
    assert_eq!(v & 0xffff, 0x1234);
}

#[test]
fn the_map_is_placed_on_an_opennic_card() {
    use weft_regs::opennic;
    assert_eq!(opennic::BAR, 2, "BAR0 is the QDMA IP's");
    assert_eq!(opennic::MAP_OFFSET, 0x10_0000);
    assert!(opennic::SLAVE_BOX_OFFSET + MAP.span() <= opennic::BOX_BYTES);
    assert_eq!(
        weft_regs::render::opennic_location(),
        "BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)"
    );
    let json: serde_json::Value = serde_json::from_str(&weft_regs::render::json(&MAP)).unwrap();
    assert_eq!(json["opennic"]["offset"], 0x10_0000);
    assert_eq!(json["opennic"]["bar"], 2);
    assert_eq!(json["opennic"]["wstrb"], false);
    let md = weft_regs::render::markdown(&MAP);
    assert!(md.contains("On an OpenNIC card: BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)"));
    assert!(md.contains("no `wstrb`") && !md.contains("BAR 0"));
}
