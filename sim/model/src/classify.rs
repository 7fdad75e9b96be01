//! The first-beat classifier (`weft_hdl::classify::Classify`), cycle by
//! cycle: a three-stage pipeline that carries every beat unchanged and
//! puts beside a frame's first beat its class by [`crate::wire::decide`]
//! (destination, malformed, effective length; all 0 on other beats).
//!
//! The stages move together: on an edge where the output entry is empty or
//! taken (`s_tready`), every stage takes the one before it and the first
//! takes the input — its data as offered, valid or not (a bubble moves its
//! bus along with a 0 valid bit). A beat is a frame's first when it is
//! offered while the previous beat taken was a last one.

use crate::dut::Dut;
use crate::steer::class_of_beat;
use crate::wire::{self, Card, Endpoint};
use std::net::Ipv4Addr;

crate::ports! {
    /// Inputs of the classifier.
    pub struct ClassifyIn {
        /// Frame data.
        pub s_tdata: [u32; 16] = 512,
        /// Byte enables.
        pub s_tkeep: u64 = 64,
        /// Last beat.
        pub s_tlast: bool = 1,
        /// Valid.
        pub s_tvalid: bool = 1,
        /// Frame bytes.
        pub s_tuser_size: u16 = 16,
        /// The card's MAC (first wire byte in bits 47:40).
        pub card_mac: u64 = 48,
        /// The card's IPv4 address.
        pub card_ip: u32 = 32,
        /// Engines on.
        pub enable: bool = 1,
        /// Output ready.
        pub m_tready: bool = 1,
    }
}

crate::ports! {
    /// Outputs of the classifier.
    pub struct ClassifyOut {
        /// Input ready.
        pub s_tready: bool = 1,
        /// Output data.
        pub m_tdata: [u32; 16] = 512,
        /// Output byte enables.
        pub m_tkeep: u64 = 64,
        /// Output last beat.
        pub m_tlast: bool = 1,
        /// Output valid.
        pub m_tvalid: bool = 1,
        /// Output frame bytes.
        pub m_tuser_size: u16 = 16,
        /// First beat: destination (0 pass through).
        pub m_tcls: u8 = 2,
        /// First beat: for an engine but malformed.
        pub m_tbad: bool = 1,
        /// First beat of an engine frame: its length without padding.
        pub m_teff: u16 = 16,
    }
}

impl ClassifyIn {
    /// The card these inputs configure.
    pub fn card(&self) -> Card {
        Card {
            me: Endpoint {
                mac: wire::mac_of(self.card_mac),
                ip: Ipv4Addr::from(self.card_ip),
                port: 0,
            },
            enable: self.enable,
        }
    }
}

/// One stage's contents: the beat and its class.
#[derive(Clone, Copy, Debug, Default)]
struct Stage {
    valid: bool,
    data: [u32; 16],
    keep: u64,
    last: bool,
    size: u16,
    cls: u8,
    bad: bool,
    eff: u16,
}

/// The classifier, cycle by cycle.
#[derive(Clone, Debug, Default)]
pub struct ClassifyModel {
    in_pkt: bool,
    stages: [Stage; 3],
    inputs: ClassifyIn,
}

impl ClassifyModel {
    /// Empty, between frames.
    pub fn new() -> Self {
        Self::default()
    }

    fn ready(&self) -> bool {
        !self.stages[2].valid || self.inputs.m_tready
    }
}

impl Dut for ClassifyModel {
    type In = ClassifyIn;
    type Out = ClassifyOut;

    fn eval(&mut self, inputs: &ClassifyIn) -> ClassifyOut {
        self.inputs = inputs.clone();
        let s = &self.stages[2];
        ClassifyOut {
            s_tready: self.ready(),
            m_tdata: s.data,
            m_tkeep: s.keep,
            m_tlast: s.last,
            m_tvalid: s.valid,
            m_tuser_size: s.size,
            m_tcls: s.cls,
            m_tbad: s.bad,
            m_teff: s.eff,
        }
    }

    fn tick(&mut self) {
        if !self.ready() {
            return;
        }
        let i = &self.inputs;
        let head = i.s_tvalid && !self.in_pkt;
        let (cls, bad, eff) = if head {
            class_of_beat(&i.s_tdata, i.s_tuser_size, &i.card())
        } else {
            (0, false, 0)
        };
        let new = Stage {
            valid: i.s_tvalid,
            data: i.s_tdata,
            keep: i.s_tkeep,
            last: i.s_tlast,
            size: i.s_tuser_size,
            cls,
            bad,
            eff,
        };
        if i.s_tvalid {
            self.in_pkt = !i.s_tlast;
        }
        self.stages = [new, self.stages[0], self.stages[1]];
    }

    fn witness(&self) -> &str {
        "model"
    }
}
