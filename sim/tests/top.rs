//! `weft_top` in both simulators with both clocks at their real ratio
//! (`axis_aclk` 250 MHz every base step, `axil_aclk` 125 MHz every second):
//! rust-hdl and Verilator must agree on every output of every step, and the
//! run must show the top working end to end — the reset handshake, register
//! reads and writes across the clock crossing into every engine's block,
//! DECERR from the second AXI4-Lite interface, network frames to the host
//! unchanged, key-value and gradient UDP frames from the network and from
//! the host reaching their engines (acks, a RESULT), and host frames to the
//! network.

use std::collections::VecDeque;
use weft_model::axil::{AxilMaster, MasterSignals, Op, SlaveSignals, Timing, DECERR, OKAY};
use weft_model::grad_agg::packet as gp;
use weft_model::kv_agg::packet as kp;
use weft_model::memops::{Action, Program, Range, Stage};
use weft_model::steer::{from_bytes, kept_bytes, GRAD_PORT, KV_PORT, MEMOPS_PORT};
use weft_model::top::{box_schedule, TopIn, TopOut};
use weft_model::{Driver, Schedule};
use weft_regs::{avm, ctrl, grad, id, kv, memops};
use weft_sim::engine::{verilator_usable, BoxDut, Engine, EngineOptions, Prepared};
use weft_sim::witness::{check_pair, run_all, Factory};

const RESET_STEPS: u64 = 16;

/// Ethernet II + IPv4 (no options) + UDP to `port`, then `payload`.
fn udp_frame(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 42];
    f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
    f[12] = 0x08;
    f[14] = 0x45;
    let ip_len = (20 + 8 + payload.len()) as u16;
    f[16..18].copy_from_slice(&ip_len.to_be_bytes());
    f[22] = 64;
    f[23] = 17;
    f[34..36].copy_from_slice(&40000u16.to_be_bytes());
    f[36..38].copy_from_slice(&port.to_be_bytes());
    f[38..40].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn kv_frame(sender: u16, seq: u32) -> Vec<u8> {
    let tuples = [(7u32, 1i32), (8, -2), (9, 3)];
    let h = kp::Header::data(0, sender, seq, tuples.len() as u16);
    udp_frame(KV_PORT, &kp::encode(&h, &tuples))
}

fn grad_values() -> Vec<i32> {
    (0..64).map(|i| i * 3 - 50).collect()
}

fn grad_frame() -> Vec<u8> {
    let geo = gp::Geometry::CARD;
    let h = gp::Header::data(geo, 2, 7, 0, 1);
    udp_frame(GRAD_PORT, &gp::encode(geo, &h, &grad_values()).unwrap())
}

fn raw_frame(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// A frame source on one stream.
#[derive(Clone, Default)]
struct Source {
    frames: VecDeque<Vec<u8>>,
    beat: usize,
}

impl Source {
    /// The current beat: (data, keep, last, size).
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

/// A packet as the top delivered it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Got {
    bytes: Vec<u8>,
    size: u16,
    src: u16,
    dst: u16,
}

struct TopDriver {
    schedule: Schedule,
    step: u64,
    m0: AxilMaster,
    m1: AxilMaster,
    s0: MasterSignals,
    s1: MasterSignals,
    rx: Source,
    h2c: Source,
    /// Host frames sent once every register operation is done.
    late: Vec<Vec<u8>>,
    c2h: Vec<Got>,
    tx: Vec<Got>,
    cur_c2h: Vec<u8>,
    cur_tx: Vec<u8>,
    want_c2h: usize,
    want_tx: usize,
    done_seen_at: Option<u64>,
    early_handshake: bool,
}

fn slave(o: &TopOut, k: usize) -> SlaveSignals {
    SlaveSignals {
        awready: o.s_axil_awready >> k & 1 != 0,
        wready: o.s_axil_wready >> k & 1 != 0,
        bresp: (o.s_axil_bresp >> (2 * k)) & 3,
        bvalid: o.s_axil_bvalid >> k & 1 != 0,
        arready: o.s_axil_arready >> k & 1 != 0,
        rdata: (o.s_axil_rdata >> (32 * k)) as u32,
        rresp: (o.s_axil_rresp >> (2 * k)) & 3,
        rvalid: o.s_axil_rvalid >> k & 1 != 0,
    }
}

impl Driver<TopIn, TopOut> for TopDriver {
    fn drive(&mut self) -> TopIn {
        // The masters act on axil_aclk edges and hold between them.
        if self.schedule.rises("axil_aclk", self.step) {
            self.s0 = self.m0.drive();
            self.s1 = self.m1.drive();
        }
        let (a, b) = (&self.s0, &self.s1);
        let bit = |x: bool, y: bool| u8::from(x) | u8::from(y) << 1;
        let mut i = TopIn {
            s_axil_awvalid: bit(a.awvalid, b.awvalid),
            s_axil_awaddr: a.awaddr as u64 | (b.awaddr as u64) << 32,
            s_axil_wvalid: bit(a.wvalid, b.wvalid),
            s_axil_wdata: a.wdata as u64 | (b.wdata as u64) << 32,
            s_axil_bready: bit(a.bready, b.bready),
            s_axil_arvalid: bit(a.arvalid, b.arvalid),
            s_axil_araddr: a.araddr as u64 | (b.araddr as u64) << 32,
            s_axil_rready: bit(a.rready, b.rready),
            m_axis_qdma_c2h_tready: true,
            m_axis_adap_tx_250mhz_tready: !self.step.is_multiple_of(3),
            mod_rstn: self.step >= RESET_STEPS,
            ..Default::default()
        };
        if let Some((d, k, l, z)) = self.rx.beat() {
            i.s_axis_adap_rx_250mhz_tdata = d;
            i.s_axis_adap_rx_250mhz_tkeep = k;
            i.s_axis_adap_rx_250mhz_tlast = l;
            i.s_axis_adap_rx_250mhz_tvalid = true;
            i.s_axis_adap_rx_250mhz_tuser_size = z;
        }
        if self.h2c.frames.is_empty() && self.m0.finished() && !self.late.is_empty() {
            self.h2c.frames = std::mem::take(&mut self.late).into();
        }
        if let Some((d, k, l, z)) = self.h2c.beat() {
            i.s_axis_qdma_h2c_tdata = d;
            i.s_axis_qdma_h2c_tkeep = k;
            i.s_axis_qdma_h2c_tlast = l;
            i.s_axis_qdma_h2c_tvalid = true;
            i.s_axis_qdma_h2c_tuser_size = z;
        }
        i
    }

    fn observe(&mut self, i: &TopIn, o: &TopOut) {
        if self.schedule.rises("axil_aclk", self.step) {
            self.m0.observe(&self.s0, &slave(o, 0));
            self.m1.observe(&self.s1, &slave(o, 1));
        }
        if o.mod_rst_done && self.done_seen_at.is_none() {
            self.done_seen_at = Some(self.step);
        }
        let rx_take = i.s_axis_adap_rx_250mhz_tvalid && o.s_axis_adap_rx_250mhz_tready;
        let h2c_take = i.s_axis_qdma_h2c_tvalid && o.s_axis_qdma_h2c_tready;
        if self.step < RESET_STEPS && (rx_take || h2c_take) {
            self.early_handshake = true;
        }
        if rx_take {
            self.rx.take(i.s_axis_adap_rx_250mhz_tlast);
        }
        if h2c_take {
            self.h2c.take(i.s_axis_qdma_h2c_tlast);
        }
        if o.m_axis_qdma_c2h_tvalid && i.m_axis_qdma_c2h_tready {
            self.cur_c2h.extend(kept_bytes(
                &o.m_axis_qdma_c2h_tdata,
                o.m_axis_qdma_c2h_tkeep,
            ));
            if o.m_axis_qdma_c2h_tlast {
                self.c2h.push(Got {
                    bytes: std::mem::take(&mut self.cur_c2h),
                    size: o.m_axis_qdma_c2h_tuser_size,
                    src: o.m_axis_qdma_c2h_tuser_src,
                    dst: o.m_axis_qdma_c2h_tuser_dst,
                });
            }
        }
        if o.m_axis_adap_tx_250mhz_tvalid && i.m_axis_adap_tx_250mhz_tready {
            self.cur_tx.extend(kept_bytes(
                &o.m_axis_adap_tx_250mhz_tdata,
                o.m_axis_adap_tx_250mhz_tkeep,
            ));
            if o.m_axis_adap_tx_250mhz_tlast {
                self.tx.push(Got {
                    bytes: std::mem::take(&mut self.cur_tx),
                    size: o.m_axis_adap_tx_250mhz_tuser_size,
                    src: o.m_axis_adap_tx_250mhz_tuser_src,
                    dst: o.m_axis_adap_tx_250mhz_tuser_dst,
                });
            }
        }
        self.step += 1;
    }

    fn finished(&self) -> bool {
        self.m0.finished()
            && self.m1.finished()
            && self.late.is_empty()
            && self.c2h.len() >= self.want_c2h
            && self.tx.len() >= self.want_tx
    }
}

fn reg_ops() -> Vec<Op> {
    let rd = |r: &weft_regs::Register| Op::Read { addr: r.addr };
    let mut ops = vec![
        rd(&id::MAGIC),
        rd(&id::FEATURES),
        rd(&id::MAP_VERSION),
        Op::Write {
            addr: ctrl::SCRATCH.addr,
            data: 0x1234_5678,
            strb: 0xf,
        },
        rd(&ctrl::SCRATCH),
        rd(&kv::GEOMETRY),
        rd(&grad::GEOMETRY),
        rd(&memops::GEOMETRY),
        rd(&avm::GEOMETRY),
        Op::Write {
            addr: avm::GROUPS[1][0].addr,
            data: 7,
            strb: 0xf,
        },
        rd(&avm::GROUPS[1][0]),
        Op::Read { addr: 0xFF00 },
    ];
    // MemOps: route everything to destination 0 (the pool's consumer 0),
    // which permits reads and writes of bytes 0..0x7ff.
    let w = |addr: u32, data: u32| Op::Write {
        addr,
        data,
        strb: 0xf,
    };
    let prog = Program {
        stages: vec![Stage {
            src_mask: 0xf,
            ops: 7,
            range: (0, u64::MAX),
            action: Action::Route(0),
        }],
        protect: vec![
            vec![Range {
                lo: 0,
                hi: 0x7ff,
                read: true,
                write: true,
            }],
            vec![],
            vec![],
            vec![],
        ],
    };
    ops.push(w(memops::CTRL.addr, 0));
    for (k, word) in prog.image().unwrap().into_iter().enumerate() {
        if word != 0 {
            ops.push(w(memops::PROG_ADDR.addr, k as u32));
            ops.push(w(memops::PROG_DATA.addr, word));
        }
    }
    ops.push(w(memops::CTRL.addr, 1));
    // The pool: consumer 0 gets one page at virtual page 0, zeroed over 64
    // cycles while the next reads go by.
    ops.push(w(avm::GROUPS[0][2].addr, 1));
    ops.push(w(
        avm::CMD.addr,
        weft_model::avm::cmd_word(weft_model::avm::op::GRANT, 0, 0),
    ));
    for _ in 0..8 {
        ops.push(rd(&avm::STATUS));
    }
    ops
}

/// A MemOps transaction frame: requester `src`, opcode, 4 bytes, `tag`,
/// byte address, data.
fn memops_frame(src: u8, op: u8, tag: u8, addr: u64, data: u64) -> Vec<u8> {
    let mut p = vec![0u8; 64];
    p[0] = src;
    p[1] = op;
    p[2] = 4;
    p[3] = tag;
    p[8..16].copy_from_slice(&addr.to_le_bytes());
    p[16..24].copy_from_slice(&data.to_le_bytes());
    udp_frame(MEMOPS_PORT, &p)
}

fn driver(
    frames_rx: Vec<Vec<u8>>,
    frames_h2c: Vec<Vec<u8>>,
    want_c2h: usize,
    want_tx: usize,
) -> TopDriver {
    TopDriver {
        schedule: box_schedule(),
        step: 0,
        m0: AxilMaster::new(reg_ops(), Timing::EAGER, 1, true),
        m1: AxilMaster::new(
            vec![
                Op::Write {
                    addr: 0x10,
                    data: 1,
                    strb: 0xf,
                },
                Op::Read { addr: 0x10 },
            ],
            Timing::EAGER,
            2,
            true,
        ),
        s0: MasterSignals::default(),
        s1: MasterSignals::default(),
        rx: Source {
            frames: frames_rx.into(),
            beat: 0,
        },
        h2c: Source {
            frames: frames_h2c.into(),
            beat: 0,
        },
        late: vec![],
        c2h: vec![],
        tx: vec![],
        cur_c2h: vec![],
        cur_tx: vec![],
        want_c2h,
        want_tx,
        done_seen_at: None,
        early_handshake: false,
    }
}

#[test]
fn the_top_runs_end_to_end_in_both_simulators_at_the_box_clock_ratio() {
    weft_hdl::emit::on_big_stack(run);
}

fn run() {
    let build = weft_hdl::build_info::top_build();
    let o = EngineOptions::default();
    let hdl = Prepared::new(
        Engine::RustHdl,
        "weft_top",
        move || weft_hdl::emit::top(&build),
        false,
        &o,
    )
    .unwrap()
    .with_schedule(box_schedule())
    .unwrap();
    let vl = verilator_usable().then(|| {
        Prepared::new(
            Engine::Verilator,
            "weft_top",
            move || weft_hdl::emit::top(&build),
            false,
            &o,
        )
        .unwrap()
        .with_schedule(box_schedule())
        .unwrap()
    });
    if std::env::var_os("WEFT_REQUIRE_VERILATOR").is_some() {
        assert!(
            vl.is_some(),
            "WEFT_REQUIRE_VERILATOR is set and Verilator is not usable"
        );
    }
    let mut f: Vec<Factory<'_, TopIn, TopOut>> = vec![Box::new(|| -> BoxDut<TopIn, TopOut> {
        hdl.instantiate(None).unwrap()
    })];
    if let Some(vl) = &vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let (f1, f4) = (raw_frame(100, 1), raw_frame(64, 4));
    let g1 = raw_frame(130, 9);
    let rx = vec![f1.clone(), kv_frame(1, 0), grad_frame(), f4.clone()];
    let h2c = vec![g1.clone(), kv_frame(2, 0)];
    // MemOps transactions from the host once the program is installed:
    // write, read back, an unmapped page of the pool, an atomic, and an
    // address the program does not permit.
    let late = vec![
        memops_frame(1, 1, 0x11, 0x40, 0xcafe_f00d),
        memops_frame(1, 0, 0x12, 0x40, 0),
        memops_frame(1, 0, 0x13, 0x400, 0),
        memops_frame(1, 2, 0x14, 0x40, 5),
        memops_frame(1, 1, 0x15, 0x1000, 7),
    ];
    // To the host: two network frames, two acks, one RESULT, five MemOps
    // completions.
    let make = || {
        let mut d = driver(rx.clone(), h2c.clone(), 10, 1);
        d.late = late.clone();
        d
    };
    let runs = run_all(&f, &make, 20_000).unwrap();
    if runs.len() == 2 {
        check_pair(&f, &runs, 0, 1, &make).unwrap();
        eprintln!(
            "weft_top: {} steps; rust-hdl {:.0} steps/s, verilator {:.0} steps/s",
            runs[0].run.cycles,
            runs[0].run.cycles as f64 / runs[0].elapsed.as_secs_f64(),
            runs[1].run.cycles as f64 / runs[1].elapsed.as_secs_f64()
        );
    }
    for r in &runs {
        let d = &r.driver;
        let w = &r.witness;
        // Reset: nothing moves while mod_rstn is low; done follows it.
        assert!(!d.early_handshake, "{w}: a stream moved during reset");
        let done = d.done_seen_at.expect("mod_rst_done rose");
        assert!(
            (RESET_STEPS + 2..RESET_STEPS + 12).contains(&done),
            "{w}: done at step {done}"
        );
        // Registers across the crossing, into every engine's block.
        let c: Vec<(u8, u32)> =
            d.m0.completions()
                .iter()
                .map(|c| {
                    let c = c.expect("completed");
                    (c.resp, c.data)
                })
                .collect();
        assert_eq!(c[0], (OKAY, weft_regs::MAGIC), "{w}");
        assert_eq!(c[1].1, weft_hdl::build_info::top_features().bits(), "{w}");
        assert_eq!(c[2].1, weft_regs::MAP.version, "{w}");
        assert_eq!(c[4], (OKAY, 0x1234_5678), "{w}");
        for (k, name) in [(5, "kv"), (6, "grad"), (7, "memops")] {
            assert!(
                c[k].0 == OKAY && c[k].1 != 0,
                "{w}: {name} GEOMETRY {:?}",
                c[k]
            );
        }
        assert_eq!(c[8], (OKAY, weft_model::avm::GEOMETRY), "{w}");
        assert_eq!(c[10], (OKAY, 7), "{w}: AVM weight written through the top");
        assert_eq!(c[11].0, DECERR, "{w}");
        let status = c.last().unwrap().1;
        assert_eq!(
            status & 0xff71,
            0,
            "{w}: the grant done, OK, page 0: {status:#x}"
        );
        // MemOps completions: (requester, tag, status, data).
        let mut cpl: Vec<(u8, u8, u8, u32)> = d
            .c2h
            .iter()
            .filter(|g| g.src == 0x4000)
            .map(|g| {
                let b = &g.bytes;
                (
                    b[0],
                    b[1],
                    b[2],
                    u32::from_le_bytes(b[8..12].try_into().unwrap()),
                )
            })
            .collect();
        cpl.sort_unstable();
        assert_eq!(
            cpl,
            [
                (1, 0x11, 0, 0),
                (1, 0x12, 0, 0xcafe_f00d),
                (1, 0x13, 1, 0),
                (1, 0x14, 2, 0),
                (1, 0x15, 1, 0)
            ],
            "{w}: MemOps completions (requester, tag, status, data)"
        );
        for c in d.m1.completions() {
            assert_eq!(c.expect("completed").resp, DECERR, "{w}: interface 1");
        }
        // Streams.
        assert_eq!(
            d.tx,
            vec![Got {
                bytes: g1.clone(),
                size: 130,
                src: 0,
                dst: 0x40
            }],
            "{w}"
        );
        let net: Vec<&Got> = d.c2h.iter().filter(|g| g.src == 0).collect();
        assert_eq!(net.len(), 2, "{w}");
        assert_eq!((&net[0].bytes, net[0].size), (&f1, 100), "{w}");
        assert_eq!((&net[1].bytes, net[1].size), (&f4, 64), "{w}");
        let mut acks: Vec<(u16, u32)> = d
            .c2h
            .iter()
            .filter(|g| g.src == 0x2000)
            .map(|g| {
                let a = u64::from_le_bytes(g.bytes[..8].try_into().unwrap());
                ((a >> 48) as u16, a as u32)
            })
            .collect();
        acks.sort_unstable();
        assert_eq!(acks, [(1, 0), (2, 0)], "{w}: acks (sender, seq)");
        let results: Vec<&Got> = d.c2h.iter().filter(|g| g.src >> 12 == 3).collect();
        assert_eq!(results.len(), 1, "{w}");
        assert_eq!(results[0].src, 0x3100, "{w}: RESULT");
        let p = gp::decode(gp::Geometry::CARD, &results[0].bytes).unwrap();
        assert_eq!(p.values, grad_values(), "{w}: the one worker's values");
    }
}

/// Sustained traffic through the top on Verilator: 4000 key-value frames
/// from the network, each acknowledged to the host, and the simulation
/// speed of the whole top (printed for the record, never asserted).
#[test]
fn sustained_key_value_traffic_on_verilator() {
    weft_hdl::emit::on_big_stack(|| {
        if !verilator_usable() {
            assert!(
                std::env::var_os("WEFT_REQUIRE_VERILATOR").is_none(),
                "WEFT_REQUIRE_VERILATOR is set and Verilator is not usable"
            );
            return;
        }
        let build = weft_hdl::build_info::top_build();
        let vl = Prepared::new(
            Engine::Verilator,
            "weft_top",
            move || weft_hdl::emit::top(&build),
            false,
            &EngineOptions::default(),
        )
        .unwrap()
        .with_schedule(box_schedule())
        .unwrap();
        // Senders 0..16, 250 packets each, in order: always inside their windows.
        let frames: Vec<Vec<u8>> = (0..4000)
            .map(|k| kv_frame((k % 16) as u16, (k / 16) as u32))
            .collect();
        let mut d = driver(frames, vec![], 4000, 0);
        let mut dut = vl.instantiate(None).unwrap();
        let t0 = std::time::Instant::now();
        let r = weft_model::run(dut.as_mut(), &mut d, 200_000).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        let acks = d.c2h.iter().filter(|g| g.src == 0x2000).count();
        assert_eq!(acks, 4000);
        eprintln!(
            "weft_top on Verilator: {} steps ({} axis_aclk cycles) in {secs:.3} s = {:.0} steps/s, 4000 frames",
            r.cycles,
            r.cycles,
            r.cycles as f64 / secs
        );
    });
}
