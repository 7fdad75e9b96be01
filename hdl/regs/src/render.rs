//! Renderers for the generated artifacts: a Markdown reference, a JSON map
//! and a C header. Each names its source and the map version in its header,
//! as OpenTitan's generated register files do.

use crate::{Access, Block, Map, Register, Value};
use std::fmt::Write;

/// A renderer of one artifact.
pub type Renderer = fn(&Map) -> String;

/// Where the generated artifacts live, relative to the repository root.
pub const ARTIFACTS: [(&str, Renderer); 3] = [
    ("docs/registers.md", markdown),
    ("docs/registers.json", json),
    ("docs/weft_regs.h", c_header),
];

const SOURCE: &str = "hdl/regs/src/map.rs";

fn version_string(map: &Map) -> String {
    format!("{}.{}", map.version >> 16, map.version & 0xffff)
}

/// How a register's value is described in docs.
pub fn value_text(map: &Map, block: &Block, reg: &Register) -> String {
    match reg.value {
        Value::Const(v) => format!("0x{v:08X}"),
        Value::HeaderType => format!("0x{:08X}", block.type_id),
        Value::HeaderVersion => format!("0x{:08X}", block.version),
        Value::HeaderNext => format!("0x{:08X}", map.next_block(block).map_or(0, |n| n.base)),
        Value::Build(f) => format!("build: {f:?}"),
        Value::Live { reset } => format!("0x{reset:08X}"),
    }
}

/// Where the map sits on an OpenNIC card, for people:
/// `BAR2 + 0x100000 (box 0, AXI4-Lite slave 0)`.
pub fn opennic_location() -> String {
    use crate::opennic as o;
    format!(
        "BAR{} + {:#x} (box {}, AXI4-Lite slave {})",
        o::BAR,
        o::MAP_OFFSET,
        o::BOX,
        o::SLAVE
    )
}

/// The Markdown register reference (`docs/registers.md`).
pub fn markdown(map: &Map) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# weft register map {}", version_string(map));
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "<!-- Generated from {SOURCE} by weft-regs; do not edit. Re-render with `WEFT_BLESS=1 cargo test -p weft-regs`. -->"
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "On an OpenNIC card: {}; BAR0 is the QDMA IP's. The addresses below are offsets from there. \
         AXI4-Lite, {} address bits ({} bytes). 32-bit registers, little-endian. \
         Unmapped addresses answer DECERR; writes to read-only registers answer SLVERR and change nothing. \
         Every block starts with a header (type, version, offset of the next block); the chain starts at 0.",
        opennic_location(),
        map.addr_bits,
        map.span()
    );
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "The shell's register bus has no `wstrb`: on a card every write writes a whole 32-bit word \
         (`weft_top` ties its write strobes to all ones), so byte-strobed writes are not possible."
    );
    let _ = writeln!(s);
    let _ = writeln!(s, "| block | base | span | type | version | description |");
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for b in map.blocks {
        let _ = writeln!(
            s,
            "| [{}](#{}) | 0x{:04X} | 0x{:X} | 0x{:08X} | {} | {} |",
            b.name, b.name, b.base, b.span, b.type_id, b.version, b.doc
        );
    }
    for b in map.blocks {
        let _ = writeln!(s);
        let _ = writeln!(s, "## {}", b.name);
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", b.doc);
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| address | name | access | reset / value | description |"
        );
        let _ = writeln!(s, "|---|---|---|---|---|");
        for r in b.regs {
            let _ = writeln!(
                s,
                "| 0x{:04X} | {} | {} | {} | {} |",
                r.addr,
                r.name,
                r.access.name(),
                value_text(map, b, r),
                r.doc
            );
        }
        let with_fields: Vec<_> = b.regs.iter().filter(|r| !r.fields.is_empty()).collect();
        for r in with_fields {
            let _ = writeln!(s);
            let _ = writeln!(s, "Fields of `{}.{}`:", b.name, r.name);
            let _ = writeln!(s);
            let _ = writeln!(s, "| bits | name | description |");
            let _ = writeln!(s, "|---|---|---|");
            for f in r.fields {
                let bits = if f.width == 1 {
                    format!("{}", f.lsb)
                } else {
                    format!("{}:{}", f.lsb + f.width - 1, f.lsb)
                };
                let _ = writeln!(s, "| {} | {} | {} |", bits, f.name, f.doc);
            }
        }
    }
    s
}

fn access_json(a: Access) -> &'static str {
    a.name()
}

/// The JSON map (`docs/registers.json`).
pub fn json(map: &Map) -> String {
    use serde_json::json;
    let blocks: Vec<_> = map
        .blocks
        .iter()
        .map(|b| {
            let regs: Vec<_> = b
                .regs
                .iter()
                .map(|r| {
                    let (kind, value) = match r.value {
                        Value::Live { reset } => ("live", json!(reset)),
                        Value::Build(f) => ("build", json!(format!("{f:?}"))),
                        _ => (
                            "const",
                            json!(map
                                .const_value(
                                    b,
                                    r,
                                    &crate::BuildInfo {
                                        board_id: 0,
                                        build_date: 0,
                                        git_hash: 0,
                                        features: crate::Features::empty(),
                                    }
                                )
                                .unwrap_or(0)),
                        ),
                    };
                    json!({
                        "name": r.name,
                        "addr": r.addr,
                        "access": access_json(r.access),
                        "kind": kind,
                        "value": value,
                        "doc": r.doc,
                        "fields": r.fields.iter().map(|f| json!({
                            "name": f.name, "lsb": f.lsb, "width": f.width, "doc": f.doc
                        })).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({
                "name": b.name,
                "type": b.type_id,
                "version": b.version,
                "base": b.base,
                "span": b.span,
                "doc": b.doc,
                "registers": regs,
            })
        })
        .collect();
    let doc = json!({
        "generated_from": SOURCE,
        "map_version": version_string(map),
        "addr_bits": map.addr_bits,
        "opennic": {
            "location": opennic_location(),
            "bar": crate::opennic::BAR,
            "offset": crate::opennic::MAP_OFFSET,
            "box": crate::opennic::BOX,
            "slave": crate::opennic::SLAVE,
            "wstrb": crate::opennic::HAS_WSTRB,
        },
        "blocks": blocks,
    });
    let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
    s.push('\n');
    s
}

/// The C header (`docs/weft_regs.h`).
pub fn c_header(map: &Map) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "/* weft register map {} -- generated from {SOURCE} by weft-regs; do not edit. */",
        version_string(map)
    );
    let _ = writeln!(s, "#ifndef WEFT_REGS_H");
    let _ = writeln!(s, "#define WEFT_REGS_H");
    let _ = writeln!(s);
    let _ = writeln!(s, "#define WEFT_MAP_VERSION 0x{:08X}u", map.version);
    let _ = writeln!(s, "#define WEFT_MAP_ADDR_BITS {}u", map.addr_bits);
    let _ = writeln!(
        s,
        "/* On an OpenNIC card: {}; no wstrb (whole-word writes only). */",
        opennic_location()
    );
    let _ = writeln!(s, "#define WEFT_OPENNIC_BAR {}u", crate::opennic::BAR);
    let _ = writeln!(
        s,
        "#define WEFT_OPENNIC_MAP_OFFSET 0x{:08X}u",
        crate::opennic::MAP_OFFSET
    );
    for b in map.blocks {
        let bn = b.name.to_uppercase();
        let _ = writeln!(s);
        let _ = writeln!(s, "/* {}: {} */", b.name, b.doc);
        let _ = writeln!(s, "#define WEFT_{bn}_BASE 0x{:04X}u", b.base);
        let _ = writeln!(s, "#define WEFT_{bn}_TYPE 0x{:08X}u", b.type_id);
        let _ = writeln!(s, "#define WEFT_{bn}_VERSION {}u", b.version);
        for r in b.regs {
            let _ = writeln!(
                s,
                "#define WEFT_{bn}_{} 0x{:04X}u /* {} {} */",
                r.name,
                r.addr,
                r.access.name(),
                r.doc
            );
            for f in r.fields {
                let _ = writeln!(
                    s,
                    "#define WEFT_{bn}_{}_{}_MASK 0x{:08X}u",
                    r.name,
                    f.name,
                    f.mask()
                );
                let _ = writeln!(
                    s,
                    "#define WEFT_{bn}_{}_{}_SHIFT {}u",
                    r.name, f.name, f.lsb
                );
            }
        }
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "#endif /* WEFT_REGS_H */");
    s
}
