//! The rust-hdl backend: steps a block directly in rust-hdl's simulator.
//!
//! This is the fast path measured in RTL-FLOW-NOTES.md (set inputs, settle,
//! toggle the clock), not rust-hdl's threaded `Simulation` framework, which
//! is 6-10x slower.

use num_bigint::BigUint;
use rust_hdl::core::vcd_probe::{write_vcd_change, write_vcd_dump, write_vcd_header, VCDProbe};
use rust_hdl::prelude::*;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use weft_model::{Dut, PortSet};

/// Settle iterations before a design is declared non-convergent.
const MAX_SETTLE: usize = 1000;

/// Conversion between port values and rust-hdl signal values.
pub trait Conv<T> {
    /// Convert.
    fn conv(&self) -> T;
}

macro_rules! conv_scalar {
    ($($t:ty),*) => {$(
        impl<const N: usize> Conv<Bits<N>> for $t {
            fn conv(&self) -> Bits<N> {
                Bits::from(*self as u64)
            }
        }
        impl<const N: usize> Conv<$t> for Bits<N> {
            fn conv(&self) -> $t {
                if N <= 64 {
                    self.to_u64() as $t
                } else {
                    let v: BigUint = (*self).into();
                    v.iter_u64_digits().next().unwrap_or(0) as $t
                }
            }
        }
    )*};
}
conv_scalar!(u8, u16, u32, u64);

impl Conv<bool> for bool {
    fn conv(&self) -> bool {
        *self
    }
}

impl<const N: usize, const K: usize> Conv<Bits<N>> for [u32; K] {
    fn conv(&self) -> Bits<N> {
        Bits::from(BigUint::from_slice(self))
    }
}

impl<const N: usize, const K: usize> Conv<[u32; K]> for Bits<N> {
    fn conv(&self) -> [u32; K] {
        let v: BigUint = (*self).into();
        let mut out = [0u32; K];
        for (o, d) in out.iter_mut().zip(v.iter_u32_digits()) {
            *o = d;
        }
        out
    }
}

/// A rust-hdl block whose ports map onto a port struct pair.
pub trait HdlPorts: Block {
    /// Input ports.
    type In: PortSet;
    /// Output ports.
    type Out: PortSet;
    /// Drive every input port's `.next`.
    fn set_inputs(&mut self, inputs: &Self::In);
    /// Read every output port.
    fn outputs(&self) -> Self::Out;
    /// The block's clock.
    fn clock(&mut self) -> &mut Signal<In, Clock>;
}

/// Implement [`HdlPorts`] for a block whose port fields share their names
/// with the port struct's fields.
#[macro_export]
macro_rules! hdl_ports {
    ($block:ty, $in:ident { $($i:ident),* $(,)? }, $out:ident { $($o:ident),* $(,)? }) => {
        impl $crate::hdl::HdlPorts for $block {
            type In = $in;
            type Out = $out;
            fn set_inputs(&mut self, inputs: &$in) {
                $( self.$i.next = $crate::hdl::Conv::conv(&inputs.$i); )*
            }
            fn outputs(&self) -> $out {
                $out { $( $o: $crate::hdl::Conv::conv(&self.$o.val()), )* }
            }
            fn clock(&mut self) -> &mut rust_hdl::prelude::Signal<rust_hdl::prelude::In, rust_hdl::prelude::Clock> {
                &mut self.clock
            }
        }
    };
}

/// A block in rust-hdl's simulator, as a [`Dut`].
pub struct HdlDut<B: HdlPorts> {
    uut: B,
    vcd: Option<VCDProbe<BufWriter<File>>>,
    time: u64,
}

impl<B: HdlPorts> HdlDut<B> {
    /// Wrap a connected block (`connect_all` already called).
    pub fn new(uut: B) -> Self {
        let mut d = Self {
            uut,
            vcd: None,
            time: 0,
        };
        d.settle();
        d
    }

    /// Record a VCD waveform of every signal to `path`.
    pub fn with_waves(mut self, path: &Path) -> std::io::Result<Self> {
        let f = BufWriter::new(File::create(path)?);
        let vcd = write_vcd_header(f, &self.uut);
        self.vcd = Some(write_vcd_dump(vcd, &self.uut));
        Ok(self)
    }

    fn settle(&mut self) {
        // A design that does not settle has a combinational loop; that is a
        // bug in the RTL, found at elaboration of the first cycle.
        assert!(
            simulate(&mut self.uut, MAX_SETTLE),
            "rust-hdl: design did not settle in {MAX_SETTLE} iterations (combinational loop?)"
        );
    }

    fn dump(&mut self) {
        if let Some(mut vcd) = self.vcd.take() {
            // Waveforms are best-effort diagnostics: a write error stops
            // tracing rather than the simulation.
            if vcd.timestamp(self.time).is_ok() {
                self.vcd = Some(write_vcd_change(vcd, &self.uut));
            }
        }
    }

    /// The wrapped block.
    pub fn block(&self) -> &B {
        &self.uut
    }
}

impl<B: HdlPorts> Dut for HdlDut<B> {
    type In = B::In;
    type Out = B::Out;

    fn eval(&mut self, inputs: &B::In) -> B::Out {
        self.uut.set_inputs(inputs);
        self.settle();
        self.dump();
        self.uut.outputs()
    }

    fn tick(&mut self) {
        self.time += 1;
        self.uut.clock().next = Clock::from(true);
        self.settle();
        self.dump();
        self.time += 1;
        self.uut.clock().next = Clock::from(false);
        self.settle();
    }

    fn witness(&self) -> &str {
        "rust-hdl"
    }
}
