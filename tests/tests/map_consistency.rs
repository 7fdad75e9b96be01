//! One register map for RTL, driver and docs: every register the map
//! declares is decoded by the RTL at that address with that access, on both
//! engines, read through the driver; the generated docs name the same
//! addresses. Moving a register in weft-regs moves all of them together;
//! moving it in the RTL alone breaks this test (and the witness tests).

use weft::Card;
use weft_driver::Error;
use weft_regs::{Access, Value, MAP};

fn check(spec: &str) {
    let card = Card::open(spec).unwrap();
    let dev = card.regs();
    let build = weft_hdl::build_info::top_build();
    for (b, r) in MAP.registers() {
        let got = dev.read32(r.addr);
        match r.value {
            Value::Live { .. } => {
                got.unwrap_or_else(|e| panic!("{spec}: {}.{}: {e}", b.name, r.name));
            }
            _ => assert_eq!(
                got.unwrap(),
                MAP.const_value(b, r, &build).unwrap(),
                "{spec}: {}.{} at {:#x}",
                b.name,
                r.name,
                r.addr
            ),
        }
        if r.access == Access::Ro {
            assert!(
                matches!(
                    dev.write32(r.addr, 0),
                    Err(Error::Bus { resp: "SLVERR", .. })
                ),
                "{spec}: {}.{} must refuse writes",
                b.name,
                r.name
            );
        }
    }
    // Every word the map does not declare answers DECERR.
    for word in (0..MAP.span()).step_by(4) {
        if MAP.lookup(word).is_none() && word % 0x40 == 0x3c {
            assert!(matches!(
                dev.read32(word),
                Err(Error::Bus { resp: "DECERR", .. })
            ));
        }
    }
}

/// The top's model decodes the map as the RTL does (rust-hdl's top is
/// checked against Verilator's step for step in weft-sim's top tests, and
/// at about 400 cycles a second would take minutes here).
#[test]
fn the_model_decodes_the_map() {
    check("sim:model");
}

#[test]
fn weft_top_decodes_the_map_on_verilator() {
    if weft_sim::simulator::verilator_usable() {
        check("sim:verilator");
    }
}

#[test]
fn docs_name_the_same_addresses() {
    let md = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/registers.md"))
        .unwrap();
    let h = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/weft_regs.h"))
        .unwrap();
    for (b, r) in MAP.registers() {
        assert!(
            md.contains(&format!("| 0x{:04X} | {} |", r.addr, r.name)),
            "{}.{}",
            b.name,
            r.name
        );
        assert!(h.contains(&format!(
            "WEFT_{}_{} 0x{:04X}u",
            b.name.to_uppercase(),
            r.name,
            r.addr
        )));
    }
}
