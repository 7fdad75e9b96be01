//! The port list of a rust-hdl block, read with rust-hdl's `Probe` visitor.

use crate::verilator::{Dir, PortSpec};
use rust_hdl::core::atom::{Atom, AtomKind};
use rust_hdl::prelude::*;

struct PortLister {
    depth: usize,
    ports: Vec<PortSpec>,
}

impl Probe for PortLister {
    fn visit_start_scope(&mut self, _name: &str, _node: &dyn Block) {
        self.depth += 1;
    }
    fn visit_atom(&mut self, name: &str, signal: &dyn Atom) {
        if self.depth != 1 {
            return;
        }
        let dir = match signal.kind() {
            AtomKind::InputParameter => Dir::In,
            AtomKind::OutputParameter => Dir::Out,
            _ => return,
        };
        self.ports.push(PortSpec {
            name: name.to_string(),
            width: signal.bits(),
            dir,
        });
    }
    fn visit_end_scope(&mut self, _name: &str, _node: &dyn Block) {
        self.depth -= 1;
    }
}

/// The top-level ports of `uut` in declaration order.
pub fn ports_of<B: Block>(uut: &B) -> Vec<PortSpec> {
    let mut p = PortLister {
        depth: 0,
        ports: vec![],
    };
    uut.accept("top", &mut p);
    p.ports
}
