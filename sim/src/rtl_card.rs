//! `weft_top` as the simulated card drives it: the top on a simulator, its
//! two input streams fed from frame queues and its two output streams
//! collected into frames.
//!
//! On rust-hdl the harness offers and collects the beats step by step
//! ([`Stepped`]). On Verilator the model's own wrapper does
//! ([`VerilatorDut::run`]): many steps in one call, no port packing per
//! step. Both do the same per step — offer each queue's head beat, take it
//! where the top was ready before the edge, collect every beat the top
//! hands over — so the two give the same frames at the same steps
//! (checked by `sim/tests/device.rs` and `weft bench sim`).

use crate::simulator::BoxDut;
use crate::vl::VerilatorDut;
use crate::SimError;
use std::collections::VecDeque;
use weft_driver::{Frame, Port};
use weft_model::axil::MasterSignals;
use weft_model::steer::{from_bytes, kept_bytes};
use weft_model::top::{TopIn, TopOut};
use weft_model::DutProfile;

/// A frame entering the top on one input, beat by beat.
#[derive(Default)]
struct Input {
    frames: VecDeque<Vec<u8>>,
    beat: usize,
}

impl Input {
    fn beat(&self) -> Option<([u32; 16], u64, bool, u16)> {
        let f = self.frames.front()?;
        let at = 64 * self.beat;
        let n = (f.len() - at).min(64);
        let keep = if n == 64 { u64::MAX } else { (1 << n) - 1 };
        Some((
            from_bytes(&f[at..at + n]),
            keep,
            at + n == f.len(),
            f.len() as u16,
        ))
    }

    fn take(&mut self, last: bool) {
        if last {
            self.frames.pop_front();
            self.beat = 0;
        } else {
            self.beat += 1;
        }
    }
}

/// The top on a simulator whose harness steps it (rust-hdl).
pub(crate) struct Stepped {
    dut: BoxDut<TopIn, TopOut>,
    rx: Input,
    h2c: Input,
    cur_c2h: Vec<u8>,
    cur_tx: Vec<u8>,
}

/// The top on Verilator, its streams run by the model's wrapper: the
/// numbers of its input streams (network receive, host-to-card) and
/// output streams (card-to-host, network transmit).
pub(crate) struct Streamed {
    dut: VerilatorDut<TopIn, TopOut>,
    rx: u32,
    h2c: u32,
    c2h: u32,
    tx: u32,
}

/// Steps one call into the model runs at most (bounds its clock-mask list).
const RUN_CHUNK: u64 = 1 << 16;

/// `weft_top` with its frame queues.
pub(crate) enum RtlCard {
    /// On rust-hdl.
    Stepped(Box<Stepped>),
    /// On Verilator.
    Streamed(Box<Streamed>),
}

/// The top's non-stream inputs in a step: register interface 0 driven by
/// `m`, both outputs ready, `mod_rstn` as given.
fn inputs(m: &MasterSignals, rstn: bool) -> TopIn {
    let mut i = TopIn {
        m_axis_qdma_c2h_tready: true,
        m_axis_adap_tx_250mhz_tready: true,
        mod_rstn: rstn,
        ..Default::default()
    };
    i.set_master(0, m);
    i
}

/// A sent frame whose `tuser_size` disagrees with its bytes.
fn size_fault(port: Port, len: usize, size: u32) -> Option<String> {
    (len != size as usize).then(|| {
        format!(
            "the card sent a {len}-byte frame on the {} port with tuser_size {size}",
            port.name()
        )
    })
}

impl RtlCard {
    /// The top on rust-hdl.
    pub(crate) fn stepped(dut: BoxDut<TopIn, TopOut>) -> Self {
        RtlCard::Stepped(Box::new(Stepped {
            dut,
            rx: Input::default(),
            h2c: Input::default(),
            cur_c2h: vec![],
            cur_tx: vec![],
        }))
    }

    /// The top on Verilator.
    pub(crate) fn streamed(dut: VerilatorDut<TopIn, TopOut>) -> Result<Self, SimError> {
        let num = |name: &str| {
            dut.stream(name)
                .ok_or_else(|| SimError::Ports(format!("weft_top's model has no stream {name}")))
        };
        Ok(RtlCard::Streamed(Box::new(Streamed {
            rx: num("s_axis_adap_rx_250mhz")?,
            h2c: num("s_axis_qdma_h2c")?,
            c2h: num("m_axis_qdma_c2h")?,
            tx: num("m_axis_adap_tx_250mhz")?,
            dut,
        })))
    }

    /// Queue a frame on `port`'s input.
    pub(crate) fn push(&mut self, port: Port, frame: &[u8]) {
        match self {
            RtlCard::Stepped(s) => match port {
                Port::Wire => s.rx.frames.push_back(frame.to_vec()),
                Port::Host => s.h2c.frames.push_back(frame.to_vec()),
            },
            RtlCard::Streamed(s) => {
                let n = match port {
                    Port::Wire => s.rx,
                    Port::Host => s.h2c,
                };
                s.dut.push(n, frame);
            }
        }
    }

    /// Frames waiting on `port`'s input, the one going in included.
    pub(crate) fn backlog(&self, port: Port) -> usize {
        match self {
            RtlCard::Stepped(s) => match port {
                Port::Wire => s.rx.frames.len(),
                Port::Host => s.h2c.frames.len(),
            },
            RtlCard::Streamed(s) => s.dut.backlog(match port {
                Port::Wire => s.rx,
                Port::Host => s.h2c,
            }),
        }
    }

    /// Whether a frame is waiting or part way in or out.
    pub(crate) fn busy(&self) -> bool {
        match self {
            RtlCard::Stepped(s) => {
                !s.rx.frames.is_empty()
                    || !s.h2c.frames.is_empty()
                    || !s.cur_c2h.is_empty()
                    || !s.cur_tx.is_empty()
            }
            RtlCard::Streamed(s) => {
                s.dut.backlog(s.rx) > 0
                    || s.dut.backlog(s.h2c) > 0
                    || s.dut.partial(s.c2h) > 0
                    || s.dut.partial(s.tx) > 0
            }
        }
    }

    /// Where the simulator's time went, when profiling.
    pub(crate) fn profile(&self) -> Option<DutProfile> {
        match self {
            RtlCard::Stepped(s) => s.dut.profile(),
            RtlCard::Streamed(s) => weft_model::Dut::profile(&s.dut),
        }
    }

    /// One base step (numbered `step`) with `m` on register interface 0:
    /// the outputs before its edge, the frames finished in it (appended to
    /// `out`) and the first size fault seen.
    pub(crate) fn step(
        &mut self,
        step: u64,
        m: &MasterSignals,
        rstn: bool,
        out: &mut Vec<Frame>,
    ) -> (TopOut, Option<String>) {
        match self {
            RtlCard::Stepped(s) => s.step(step, m, rstn, out),
            RtlCard::Streamed(s) => {
                let o = s.dut.run(&inputs(m, rstn), 1, rstn);
                (o, s.collect(out))
            }
        }
    }

    /// `n` base steps from `step` with register interface 0 idle, frames
    /// appended to `out`; the first size fault seen.
    pub(crate) fn run(&mut self, step: u64, n: u64, out: &mut Vec<Frame>) -> Option<String> {
        let mut fault = None;
        match self {
            RtlCard::Stepped(s) => {
                for k in 0..n {
                    let (_, f) = s.step(step + k, &MasterSignals::default(), true, out);
                    fault = fault.or(f);
                }
            }
            RtlCard::Streamed(s) => {
                let idle = inputs(&MasterSignals::default(), true);
                let mut left = n;
                while left > 0 {
                    let k = left.min(RUN_CHUNK);
                    s.dut.run(&idle, k, true);
                    fault = fault.or(s.collect(out));
                    left -= k;
                }
            }
        }
        fault
    }
}

impl Stepped {
    fn step(
        &mut self,
        step: u64,
        m: &MasterSignals,
        rstn: bool,
        out: &mut Vec<Frame>,
    ) -> (TopOut, Option<String>) {
        let mut i = inputs(m, rstn);
        if let Some((d, k, l, z)) = self.rx.beat().filter(|_| rstn) {
            i.s_axis_adap_rx_250mhz_tdata = d;
            i.s_axis_adap_rx_250mhz_tkeep = k;
            i.s_axis_adap_rx_250mhz_tlast = l;
            i.s_axis_adap_rx_250mhz_tvalid = true;
            i.s_axis_adap_rx_250mhz_tuser_size = z;
        }
        if let Some((d, k, l, z)) = self.h2c.beat().filter(|_| rstn) {
            i.s_axis_qdma_h2c_tdata = d;
            i.s_axis_qdma_h2c_tkeep = k;
            i.s_axis_qdma_h2c_tlast = l;
            i.s_axis_qdma_h2c_tvalid = true;
            i.s_axis_qdma_h2c_tuser_size = z;
        }
        let o = self.dut.cycle(&i);
        if i.s_axis_adap_rx_250mhz_tvalid && o.s_axis_adap_rx_250mhz_tready {
            self.rx.take(i.s_axis_adap_rx_250mhz_tlast);
        }
        if i.s_axis_qdma_h2c_tvalid && o.s_axis_qdma_h2c_tready {
            self.h2c.take(i.s_axis_qdma_h2c_tlast);
        }
        let mut fault = None;
        let mut collect =
            |cur: &mut Vec<u8>, port: Port, d: &[u32; 16], keep: u64, last: bool, size: u16| {
                cur.extend(kept_bytes(d, keep));
                if last {
                    let bytes = std::mem::take(cur);
                    fault = fault.take().or(size_fault(port, bytes.len(), size.into()));
                    out.push(Frame {
                        port,
                        cycle: step,
                        bytes,
                    });
                }
            };
        if o.m_axis_qdma_c2h_tvalid {
            collect(
                &mut self.cur_c2h,
                Port::Host,
                &o.m_axis_qdma_c2h_tdata,
                o.m_axis_qdma_c2h_tkeep,
                o.m_axis_qdma_c2h_tlast,
                o.m_axis_qdma_c2h_tuser_size,
            );
        }
        if o.m_axis_adap_tx_250mhz_tvalid {
            collect(
                &mut self.cur_tx,
                Port::Wire,
                &o.m_axis_adap_tx_250mhz_tdata,
                o.m_axis_adap_tx_250mhz_tkeep,
                o.m_axis_adap_tx_250mhz_tlast,
                o.m_axis_adap_tx_250mhz_tuser_size,
            );
        }
        (o, fault)
    }
}

impl Streamed {
    /// Move the frames the model finished into `out`, in the order the
    /// stepped harness collects them (by step, card-to-host first); the
    /// first size fault.
    fn collect(&mut self, out: &mut Vec<Frame>) -> Option<String> {
        let mut fault = None;
        let mut take = |n: u32, port: Port, dut: &mut VerilatorDut<TopIn, TopOut>| {
            let mut v = Vec::new();
            while let Some(f) = dut.pop(n) {
                fault = fault.take().or(size_fault(port, f.bytes.len(), f.size));
                v.push(Frame {
                    port,
                    cycle: f.step,
                    bytes: f.bytes,
                });
            }
            v
        };
        let host = take(self.c2h, Port::Host, &mut self.dut);
        let wire = take(self.tx, Port::Wire, &mut self.dut);
        let (mut h, mut w) = (host.into_iter().peekable(), wire.into_iter().peekable());
        loop {
            let from_host = match (h.peek(), w.peek()) {
                (Some(a), Some(b)) => a.cycle <= b.cycle,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            let next = if from_host { h.next() } else { w.next() };
            out.extend(next);
        }
        fault
    }
}
