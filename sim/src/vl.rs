//! The Verilator backend: a block's emitted Verilog, Verilated and loaded,
//! as a [`Dut`].

use crate::probe::ports_of;
use crate::verilator::{self, BuildOptions, Dir, Library, Model, ModelSource, PortSpec};
use crate::SimError;
use rust_hdl::prelude::Block;
use std::marker::PhantomData;
use std::path::Path;
use std::sync::Arc;
use weft_model::{Dut, PortSet};

/// The clock port every weft block has.
pub const CLOCK: &str = "clock";

/// Build (or fetch from the cache) the Verilated model of a connected block,
/// after checking that its ports are exactly `I` and `O` plus the clock.
pub fn build<I: PortSet, O: PortSet, B: Block>(
    uut: &B,
    module: &str,
    opts: &BuildOptions,
) -> Result<Arc<Library>, SimError> {
    let verilog = weft_hdl::emit::verilog_of(uut, module);
    let source = source_for::<I, O>(verilog, module, &ports_of(uut))?;
    Ok(verilator::build(&source, opts)?)
}

/// The builder's input for a module whose Verilog ports are `actual`,
/// ordered as `I` and `O` declare them so values pack without reordering.
pub fn source_for<I: PortSet, O: PortSet>(
    verilog: String,
    module: &str,
    actual: &[PortSpec],
) -> Result<ModelSource, SimError> {
    let mut ports = vec![];
    let mut clock = None;
    for p in actual {
        if p.name == CLOCK && p.dir == Dir::In && p.width == 1 {
            clock = Some(CLOCK.to_string());
            ports.push(p.clone());
        }
    }
    let want = |set: &[weft_model::Port], dir: Dir, ports: &mut Vec<PortSpec>| {
        for w in set {
            match actual.iter().find(|p| p.name == w.name) {
                Some(p) if p.dir == dir && p.width == w.width => ports.push(p.clone()),
                Some(p) => {
                    return Err(SimError::Ports(format!(
                    "{module}: port {} is {:?} {} bits in the RTL but {:?} {} bits in the model",
                    w.name, p.dir, p.width, dir, w.width
                )))
                }
                None => {
                    return Err(SimError::Ports(format!(
                        "{module}: the model has port {} but the RTL does not",
                        w.name
                    )))
                }
            }
        }
        Ok(())
    };
    want(I::PORTS, Dir::In, &mut ports)?;
    want(O::PORTS, Dir::Out, &mut ports)?;
    if let Some(extra) = actual
        .iter()
        .find(|p| !ports.iter().any(|q| q.name == p.name))
    {
        return Err(SimError::Ports(format!(
            "{module}: the RTL has port {} ({:?}, {} bits) that the model does not declare",
            extra.name, extra.dir, extra.width
        )));
    }
    Ok(ModelSource {
        verilog,
        top: module.to_string(),
        ports,
        clock,
    })
}

/// A Verilated block as a [`Dut`].
pub struct VerilatorDut<I, O> {
    model: Model,
    inw: Vec<u32>,
    outw: Vec<u32>,
    _ports: PhantomData<fn(I) -> O>,
}

impl<I: PortSet, O: PortSet> VerilatorDut<I, O> {
    /// A new instance of a built model, with a VCD waveform when `waves` is
    /// given (the library must then have been built with tracing).
    pub fn new(lib: &Arc<Library>, waves: Option<&Path>) -> Result<Self, SimError> {
        Ok(Self {
            model: Model::new(lib, waves)?,
            inw: Vec::with_capacity(I::total_words()),
            outw: vec![0; O::total_words()],
            _ports: PhantomData,
        })
    }
}

impl<I: PortSet, O: PortSet> Dut for VerilatorDut<I, O> {
    type In = I;
    type Out = O;

    fn eval(&mut self, inputs: &I) -> O {
        self.inw.clear();
        inputs.pack(&mut self.inw);
        self.model.eval(&self.inw, &mut self.outw);
        O::unpack(&self.outw)
    }

    fn tick(&mut self) {
        self.model.tick();
    }

    fn witness(&self) -> &str {
        "verilator"
    }
}
