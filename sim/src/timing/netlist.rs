//! yosys's JSON netlist (`write_json`) of a flattened, mapped design, read
//! into the graph the walker needs: for every net bit, what drives it, and
//! for every sequential cell, where its paths end and on which clock.

use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

use super::TimingError;

/// A bit in yosys's JSON: a net id, or a constant (`"0"`, `"1"`, `"x"`, `"z"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum JBit {
    Net(u64),
    Const(#[allow(dead_code)] String),
}

#[derive(Debug, Deserialize)]
struct JNetlist {
    modules: BTreeMap<String, JModule>,
}

#[derive(Debug, Deserialize)]
struct JModule {
    #[serde(default)]
    ports: BTreeMap<String, JPort>,
    #[serde(default)]
    cells: BTreeMap<String, JCell>,
    #[serde(default)]
    netnames: BTreeMap<String, JNet>,
}

#[derive(Debug, Deserialize)]
struct JPort {
    direction: String,
    bits: Vec<JBit>,
}

#[derive(Debug, Deserialize)]
struct JCell {
    #[serde(rename = "type")]
    ty: String,
    #[serde(default)]
    parameters: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    port_directions: BTreeMap<String, String>,
    #[serde(default)]
    connections: BTreeMap<String, Vec<JBit>>,
}

#[derive(Debug, Deserialize)]
struct JNet {
    #[serde(default)]
    hide_name: u8,
    bits: Vec<JBit>,
}

/// What a combinational cell costs on a path: the class of its delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CombKind {
    /// A LUT1–LUT6: one logic level.
    Lut,
    /// MUXF7/8/9: the slice's wide-function muxes after a LUT.
    Muxf,
    /// A CARRY4/CARRY8: the carry chain.
    Carry,
    /// A distributed RAM's (LUTRAM's) or a shift register's asynchronous
    /// read, from its address pins: a LUT level.
    LutRead,
    /// An inverter or buffer yosys left in the netlist: free (folded into
    /// the LUT that reads it on a real part).
    Free,
}

/// Where a path may start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartKind {
    /// A flip-flop's `Q`.
    Ff,
    /// A block RAM's or UltraRAM's read data without its output register.
    Bram,
    /// A block RAM's or UltraRAM's read data with its output register.
    BramReg,
    /// A LUTRAM's or shift register's stored data, read out.
    Lutram,
    /// A cell the walker does not know (or a DSP): its outputs start paths
    /// at a flip-flop's clock-to-out.
    Other,
}

/// What drives a net bit.
#[derive(Debug, Clone)]
pub enum Driver {
    /// Nothing (an undriven bit, or a constant).
    None,
    /// A top-level input port.
    Port,
    /// A sequential cell's output, clocked by the net bit `clock`.
    Start {
        /// The cell.
        cell: usize,
        /// How it starts a path.
        kind: StartKind,
        /// The bit of its clock pin.
        clock: u64,
    },
    /// A combinational cell's output, from the bits `inputs`; `start` when
    /// the same output also starts a path of its own (a LUTRAM's data).
    Comb {
        /// The cell.
        cell: usize,
        /// Its delay class.
        kind: CombKind,
        /// The input bits it depends on.
        inputs: Vec<u64>,
        /// A clocked start of its own (kind, clock bit), for LUTRAMs and
        /// shift registers.
        start: Option<(StartKind, u64)>,
    },
}

/// A place a path ends: an input pin of a sequential cell.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The cell.
    pub cell: usize,
    /// Its pin name.
    pub pin: String,
    /// The bit arriving there.
    pub bit: u64,
    /// The bit of the clock that captures it.
    pub clock: u64,
}

/// A cell of the netlist, as the walker reports it.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Its instance name.
    pub name: String,
    /// Its type (`LUT6`, `FDRE`, `RAMB36E2`, …).
    pub ty: String,
}

/// The design as a graph over net bits.
#[derive(Debug)]
pub struct Netlist {
    /// Every cell.
    pub cells: Vec<Cell>,
    /// What drives each bit, by bit id.
    pub drivers: HashMap<u64, Driver>,
    /// Every endpoint.
    pub endpoints: Vec<Endpoint>,
    /// The top's output ports, bit by bit: (port name with index, bit).
    pub outputs: Vec<(String, u64)>,
    /// A readable name for a bit (the net's, with its index), where the
    /// netlist names it.
    pub names: HashMap<u64, String>,
    /// For each input port bit, its name with index.
    pub port_names: HashMap<u64, String>,
    /// Cell types the walker does not know, with their counts.
    pub unknown: BTreeMap<String, usize>,
}

/// Pin roles of one sequential or memory cell type.
struct SeqPins<'a> {
    /// Its clock pins; the first is the default.
    clocks: &'a [&'a str],
}

fn is_ff(ty: &str) -> bool {
    matches!(
        ty,
        "FDRE" | "FDSE" | "FDCE" | "FDPE" | "FDRE_1" | "FDSE_1" | "FDCE_1" | "FDPE_1"
    )
}

fn is_lutram(ty: &str) -> bool {
    ty.starts_with("RAM")
        && !ty.starts_with("RAMB")
        && (ty.contains('M') || ty.contains('X'))
        && !ty.starts_with("RAMB")
}

fn is_srl(ty: &str) -> bool {
    matches!(ty, "SRL16E" | "SRLC16E" | "SRLC32E")
}

fn is_bram(ty: &str) -> bool {
    ty.starts_with("RAMB18") || ty.starts_with("RAMB36")
}

fn is_uram(ty: &str) -> bool {
    ty.starts_with("URAM288")
}

fn comb_kind(ty: &str) -> Option<CombKind> {
    match ty {
        "LUT1" | "LUT2" | "LUT3" | "LUT4" | "LUT5" | "LUT6" | "LUT6_2" => Some(CombKind::Lut),
        "MUXF7" | "MUXF8" | "MUXF9" => Some(CombKind::Muxf),
        "CARRY4" | "CARRY8" => Some(CombKind::Carry),
        "INV" | "BUF" | "BUFG" | "BUFGCE" | "IBUF" | "OBUF" => Some(CombKind::Free),
        _ => None,
    }
}

/// A parameter that is set (a binary string with a 1, or a non-zero number).
fn param_set(params: &BTreeMap<String, serde_json::Value>, name: &str) -> bool {
    match params.get(name) {
        Some(serde_json::Value::String(s)) => s.contains('1'),
        Some(serde_json::Value::Number(n)) => n.as_u64().unwrap_or(0) != 0,
        _ => false,
    }
}

/// Which of a block RAM's two clocks a pin belongs to: port A (read in
/// simple dual-port mode) or port B (write).
fn bram_side_a(pin: &str) -> bool {
    matches!(
        pin,
        "ADDRARDADDR"
            | "ADDRENA"
            | "DINADIN"
            | "DINPADINP"
            | "ENARDEN"
            | "REGCEAREGCE"
            | "RSTRAMARSTRAM"
            | "RSTREGARSTREG"
            | "WEA"
            | "DOUTADOUT"
            | "DOUTPADOUTP"
    ) || pin.ends_with("_A")
}

fn bits(v: &[JBit]) -> impl Iterator<Item = (usize, u64)> + '_ {
    v.iter().enumerate().filter_map(|(i, b)| match b {
        JBit::Net(n) => Some((i, *n)),
        JBit::Const(_) => None,
    })
}

fn indexed(name: &str, i: usize, width: usize) -> String {
    if width > 1 {
        format!("{name}[{i}]")
    } else {
        name.to_string()
    }
}

impl Netlist {
    /// Read yosys's JSON netlist and take module `top` (flattened: its
    /// cells must be primitives).
    pub fn from_json(json: &str, top: &str) -> Result<Self, TimingError> {
        let nl: JNetlist = serde_json::from_str(json)
            .map_err(|e| TimingError::Netlist(format!("not a yosys JSON netlist: {e}")))?;
        let m = nl.modules.get(top).ok_or_else(|| {
            let names: Vec<_> = nl.modules.keys().cloned().collect();
            TimingError::Netlist(format!(
                "no module {top:?} in the netlist (modules: {})",
                names.join(", ")
            ))
        })?;
        let mut out = Netlist {
            cells: Vec::with_capacity(m.cells.len()),
            drivers: HashMap::new(),
            endpoints: vec![],
            outputs: vec![],
            names: HashMap::new(),
            port_names: HashMap::new(),
            unknown: BTreeMap::new(),
        };
        for (name, p) in &m.ports {
            let w = p.bits.len();
            for (i, b) in bits(&p.bits) {
                match p.direction.as_str() {
                    "input" => {
                        out.drivers.insert(b, Driver::Port);
                        out.port_names.insert(b, indexed(name, i, w));
                    }
                    "output" => out.outputs.push((indexed(name, i, w), b)),
                    _ => {}
                }
            }
        }
        // Prefer a name the designer gave (hide_name 0), then the shortest.
        for (name, n) in &m.netnames {
            let w = n.bits.len();
            for (i, b) in bits(&n.bits) {
                let cand = indexed(name, i, w);
                let better = match out.names.get(&b) {
                    None => true,
                    Some(old) => {
                        let old_hidden = old.starts_with('$');
                        let new_hidden = n.hide_name != 0 || name.starts_with('$');
                        (old_hidden && !new_hidden)
                            || (old_hidden == new_hidden && cand.len() < old.len())
                    }
                };
                if better {
                    out.names.insert(b, cand);
                }
            }
        }
        for (name, c) in &m.cells {
            let idx = out.cells.len();
            out.cells.push(Cell {
                name: name.clone(),
                ty: c.ty.clone(),
            });
            out.add_cell(idx, c)?;
        }
        Ok(out)
    }

    fn pin_bits<'c>(c: &'c JCell, pin: &str) -> impl Iterator<Item = u64> + 'c {
        c.connections
            .get(pin)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .filter_map(|b| match b {
                JBit::Net(n) => Some(*n),
                JBit::Const(_) => None,
            })
    }

    fn first_bit(c: &JCell, pins: &[&str]) -> Option<u64> {
        pins.iter().find_map(|p| Self::pin_bits(c, p).next())
    }

    fn direction<'c>(c: &'c JCell, pin: &str) -> &'c str {
        c.port_directions.get(pin).map(String::as_str).unwrap_or("")
    }

    fn drive(&mut self, bit: u64, d: Driver) -> Result<(), TimingError> {
        if let Some(old) = self.drivers.get(&bit) {
            if !matches!(old, Driver::None) {
                return Err(TimingError::Netlist(format!(
                    "net bit {bit} ({}) has two drivers",
                    self.names.get(&bit).map(String::as_str).unwrap_or("?")
                )));
            }
        }
        self.drivers.insert(bit, d);
        Ok(())
    }

    fn add_cell(&mut self, idx: usize, c: &JCell) -> Result<(), TimingError> {
        let ty = c.ty.as_str();
        let inputs: Vec<u64> = c
            .connections
            .keys()
            .filter(|p| Self::direction(c, p) == "input")
            .flat_map(|p| Self::pin_bits(c, p))
            .collect();
        let outputs: Vec<u64> = c
            .connections
            .keys()
            .filter(|p| Self::direction(c, p) == "output")
            .flat_map(|p| Self::pin_bits(c, p))
            .collect();
        if let Some(kind) = comb_kind(ty) {
            for o in outputs {
                self.drive(
                    o,
                    Driver::Comb {
                        cell: idx,
                        kind,
                        inputs: inputs.clone(),
                        start: None,
                    },
                )?;
            }
            return Ok(());
        }
        let seq = if is_ff(ty) {
            SeqPins { clocks: &["C"] }
        } else if is_bram(ty) {
            SeqPins {
                clocks: &["CLKARDCLK", "CLKBWRCLK"],
            }
        } else if is_uram(ty) {
            SeqPins { clocks: &["CLK"] }
        } else if is_lutram(ty) {
            SeqPins { clocks: &["WCLK"] }
        } else if is_srl(ty) {
            SeqPins { clocks: &["CLK"] }
        } else {
            *self.unknown.entry(ty.to_string()).or_default() += 1;
            SeqPins {
                clocks: &["CLK", "C", "CLKA", "CLKB"],
            }
        };
        let Some(clock) = Self::first_bit(c, seq.clocks) else {
            // An unclocked cell the walker does not know: pass it through
            // as a LUT level, the conservative reading.
            for o in outputs {
                self.drive(
                    o,
                    Driver::Comb {
                        cell: idx,
                        kind: CombKind::Lut,
                        inputs: inputs.clone(),
                        start: None,
                    },
                )?;
            }
            return Ok(());
        };
        let clock_of = |pin: &str| -> u64 {
            if is_bram(ty) {
                let p = if bram_side_a(pin) {
                    "CLKARDCLK"
                } else {
                    "CLKBWRCLK"
                };
                Self::first_bit(c, &[p]).unwrap_or(clock)
            } else {
                clock
            }
        };
        let clock_pins: Vec<&str> = seq.clocks.to_vec();
        // Endpoints: every input pin but the clocks.
        for (pin, _) in c.connections.iter() {
            if Self::direction(c, pin) != "input" || clock_pins.contains(&pin.as_str()) {
                continue;
            }
            // A LUTRAM's read-only address pins and a shift register's
            // address are read combinationally, not captured.
            if is_lutram(ty) && is_lutram_read_addr(ty, pin) {
                continue;
            }
            if is_srl(ty) && pin.starts_with('A') {
                continue;
            }
            for b in Self::pin_bits(c, pin) {
                self.endpoints.push(Endpoint {
                    cell: idx,
                    pin: pin.clone(),
                    bit: b,
                    clock: clock_of(pin),
                });
            }
        }
        // Starts.
        for (pin, _) in c.connections.iter() {
            if Self::direction(c, pin) != "output" {
                continue;
            }
            let bits: Vec<u64> = Self::pin_bits(c, pin).collect();
            for b in bits {
                let d = if is_lutram(ty) || is_srl(ty) {
                    let addr: Vec<u64> = c
                        .connections
                        .keys()
                        .filter(|p| {
                            Self::direction(c, p) == "input"
                                && if is_srl(ty) {
                                    p.starts_with('A')
                                } else {
                                    lutram_addr_feeds(ty, p, pin)
                                }
                        })
                        .flat_map(|p| Self::pin_bits(c, p))
                        .collect();
                    Driver::Comb {
                        cell: idx,
                        kind: CombKind::LutRead,
                        inputs: addr,
                        start: Some((StartKind::Lutram, clock)),
                    }
                } else if is_bram(ty) {
                    let reg = if bram_side_a(pin) {
                        param_set(&c.parameters, "DOA_REG")
                    } else {
                        param_set(&c.parameters, "DOB_REG")
                    };
                    Driver::Start {
                        cell: idx,
                        kind: if reg {
                            StartKind::BramReg
                        } else {
                            StartKind::Bram
                        },
                        clock: clock_of(pin),
                    }
                } else if is_uram(ty) {
                    let reg = if pin.ends_with("_A") {
                        param_set(&c.parameters, "OREG_A")
                    } else {
                        param_set(&c.parameters, "OREG_B")
                    };
                    Driver::Start {
                        cell: idx,
                        kind: if reg {
                            StartKind::BramReg
                        } else {
                            StartKind::Bram
                        },
                        clock,
                    }
                } else if is_ff(ty) {
                    Driver::Start {
                        cell: idx,
                        kind: StartKind::Ff,
                        clock,
                    }
                } else {
                    Driver::Start {
                        cell: idx,
                        kind: StartKind::Other,
                        clock,
                    }
                };
                self.drive(b, d)?;
            }
        }
        Ok(())
    }

    /// The name of a bit: its net's, else the input port's, else `#id`.
    pub fn name_of(&self, bit: u64) -> String {
        self.names
            .get(&bit)
            .or_else(|| self.port_names.get(&bit))
            .cloned()
            .unwrap_or_else(|| format!("#{bit}"))
    }

    /// The bit a clock pin is driven from, followed back through clock
    /// buffers (and any other single-input free cells) to its source.
    pub fn clock_source(&self, mut bit: u64) -> u64 {
        for _ in 0..16 {
            match self.drivers.get(&bit) {
                Some(Driver::Comb {
                    kind: CombKind::Free,
                    inputs,
                    ..
                }) if inputs.len() == 1 => bit = inputs[0],
                _ => break,
            }
        }
        bit
    }
}

/// Whether pin `pin` of a LUTRAM of type `ty` is an address that is only
/// read (not the write address, which is captured at the clock).
fn is_lutram_read_addr(ty: &str, pin: &str) -> bool {
    match ty {
        // The multi-port LUTRAMs write through port D's (RAM32M/RAM64M) or
        // port H's (RAM32M16/RAM64M8) address; the others only read.
        "RAM32M" | "RAM64M" => pin.starts_with("ADDR") && pin != "ADDRD",
        "RAM32M16" | "RAM64M8" => pin.starts_with("ADDR") && pin != "ADDRH",
        // Dual-port single-bit LUTRAMs read through DPRA.
        _ => pin.starts_with("DPRA"),
    }
}

/// Whether address pin `addr` of a LUTRAM selects what output `out` reads.
fn lutram_addr_feeds(ty: &str, addr: &str, out: &str) -> bool {
    match ty {
        "RAM32M" | "RAM64M" | "RAM32M16" | "RAM64M8" => {
            // DOx is read at ADDRx.
            match (addr.strip_prefix("ADDR"), out.strip_prefix("DO")) {
                (Some(a), Some(o)) => a == o,
                _ => false,
            }
        }
        _ => {
            if out == "DPO" {
                addr.starts_with("DPRA")
            } else {
                // SPO / O: read at the write address A.
                addr.starts_with('A') && !addr.starts_with("ADDR") || addr.starts_with("ADDR")
            }
        }
    }
}
