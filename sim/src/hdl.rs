//! The rust-hdl backend: steps a block directly in rust-hdl's simulator.
//!
//! This is the fast path measured in RTL-FLOW-NOTES.md (set inputs, settle,
//! toggle the clock), not rust-hdl's threaded `Simulation` framework, which
//! is 6-10x slower.
//!
//! # Clocks and time
//!
//! A block declares its clock inputs ([`HdlPorts::CLOCKS`], `["clock"]`
//! unless [`hdl_ports!`](crate::hdl_ports!) is given a `clocks [...]` list),
//! and an [`HdlDut`] steps them on a [`Schedule`] in base steps (see
//! [`weft_model::clocks`]). In each step's `tick` every clock that rises in
//! that step is set high *before one settle*, so edges of different clocks
//! in the same step are one instant: rust-hdl propagates a clock through the
//! hierarchy one level per settle iteration, data leaves a flip-flop only
//! after its own edge, so flip-flops of both domains sample pre-edge values,
//! as Verilog's non-blocking assignments do. The risen clocks then fall in a
//! second settle. In a VCD a step spans two time units: the step's inputs at
//! `2s`, the edge at `2s + 1`, the fall with the next step's inputs at
//! `2s + 2`.

use num_bigint::BigUint;
use rust_hdl::core::vcd_probe::{write_vcd_change, write_vcd_dump, write_vcd_header, VCDProbe};
use rust_hdl::prelude::*;
use std::fs::File;
use std::io::BufWriter;
use std::path::Path;

use crate::SimError;
use weft_model::{Dut, PortSet, Schedule};

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
    /// Input ports (the clocks excluded).
    type In: PortSet;
    /// Output ports.
    type Out: PortSet;
    /// The names of the block's clock inputs; [`HdlPorts::clock`] takes an
    /// index into this list.
    const CLOCKS: &'static [&'static str] = &["clock"];
    /// Drive every input port's `.next`.
    fn set_inputs(&mut self, inputs: &Self::In);
    /// Read every output port.
    fn outputs(&self) -> Self::Out;
    /// The clock input named `CLOCKS[index]`.
    ///
    /// # Panics
    /// If `index` is out of range.
    fn clock(&mut self, index: usize) -> &mut Signal<In, Clock>;
}

/// Implement [`HdlPorts`] for a block whose port fields share their names
/// with the port struct's fields.
///
/// `hdl_ports!(Block, In { a, b }, Out { c })` declares a block with one
/// clock input named `clock`; `hdl_ports!(Block, clocks [wr_clock,
/// rd_clock], In { .. }, Out { .. })` one with several clock inputs.
#[macro_export]
macro_rules! hdl_ports {
    ($block:ty, clocks [$($c:ident),+ $(,)?], $in:ident { $($i:ident),* $(,)? }, $out:ident { $($o:ident),* $(,)? }) => {
        impl $crate::hdl::HdlPorts for $block {
            type In = $in;
            type Out = $out;
            const CLOCKS: &'static [&'static str] = &[$(stringify!($c)),+];
            fn set_inputs(&mut self, inputs: &$in) {
                $( self.$i.next = $crate::hdl::Conv::conv(&inputs.$i); )*
            }
            fn outputs(&self) -> $out {
                $out { $( $o: $crate::hdl::Conv::conv(&self.$o.val()), )* }
            }
            fn clock(&mut self, index: usize) -> &mut rust_hdl::prelude::Signal<rust_hdl::prelude::In, rust_hdl::prelude::Clock> {
                [$(&mut self.$c),+]
                    .into_iter()
                    .nth(index)
                    .unwrap_or_else(|| panic!("{}: no clock {index}", stringify!($block)))
            }
        }
    };
    ($block:ty, $in:ident { $($i:ident),* $(,)? }, $out:ident { $($o:ident),* $(,)? }) => {
        $crate::hdl_ports!($block, clocks [clock], $in { $($i),* }, $out { $($o),* });
    };
}

/// A block in rust-hdl's simulator, as a [`Dut`].
pub struct HdlDut<B: HdlPorts> {
    uut: B,
    vcd: Option<VCDProbe<BufWriter<File>>>,
    time: u64,
    /// The schedule as given (reported by [`Dut::schedule`]).
    schedule: Schedule,
    /// The schedule with its bits in [`HdlPorts::CLOCKS`] order.
    by_port: Schedule,
    step: u64,
}

/// The schedule of a block whose clocks all rise every step.
pub fn default_schedule<B: HdlPorts>() -> Schedule {
    Schedule::every_step(B::CLOCKS.iter().copied())
        .unwrap_or_else(|e| panic!("HdlPorts::CLOCKS of {}: {e}", std::any::type_name::<B>()))
}

impl<B: HdlPorts> HdlDut<B> {
    /// Wrap a connected block (`connect_all` already called); every clock
    /// rises every step.
    pub fn new(uut: B) -> Self {
        let s = default_schedule::<B>();
        Self::with_schedule(uut, s).expect("a block's own clocks match its default schedule")
    }

    /// Wrap a connected block whose clocks rise on `schedule`, which must
    /// name exactly the block's clocks ([`HdlPorts::CLOCKS`]).
    pub fn with_schedule(uut: B, schedule: Schedule) -> Result<Self, SimError> {
        let by_port = schedule
            .reordered(B::CLOCKS)
            .map_err(|e| SimError::Clocks(format!("{}: {e}", std::any::type_name::<B>())))?;
        let mut d = Self {
            uut,
            vcd: None,
            time: 0,
            schedule,
            by_port,
            step: 0,
        };
        d.settle();
        Ok(d)
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

    fn set_clocks(&mut self, rising: u32, level: bool) {
        for i in 0..B::CLOCKS.len() {
            if rising & (1 << i) != 0 {
                self.uut.clock(i).next = Clock::from(level);
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
        let rising = self.by_port.rising(self.step);
        self.step += 1;
        self.time += 1;
        if rising == 0 {
            self.time += 1;
            return;
        }
        // All of this step's edges before one settle: one instant.
        self.set_clocks(rising, true);
        self.settle();
        self.dump();
        self.time += 1;
        self.set_clocks(rising, false);
        self.settle();
    }

    fn witness(&self) -> &str {
        "rust-hdl"
    }

    fn schedule(&self) -> Schedule {
        self.schedule.clone()
    }
}
