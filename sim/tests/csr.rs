//! The CSR block's three witnesses: the model (cycle-accurate spec), the
//! rust-hdl simulation and the Verilated model of the emitted Verilog, on the
//! same proptest stimulus with random valid/ready timing.
//!
//! The block is elaborated for a map that also holds an engine block (the
//! key-value engine's), so the engine register port is exercised too.

use proptest::prelude::*;
use std::sync::OnceLock;
use weft_model::axil::{Op, Timing, DECERR, OKAY, SLVERR};
use weft_model::csr::{
    check_serial, is_engine_reg, CsrDriver, CsrIn, CsrModel, CsrOut, EngineWrite,
};
use weft_regs::{ctrl, id, kv, Block, BuildInfo, Features, Map, MAP};

static BLOCKS: [Block; 3] = [id::BLOCK, ctrl::BLOCK, kv::BLOCK];
/// The card's map plus an engine block.
const TEST_MAP: Map = Map {
    blocks: &BLOCKS,
    ..MAP
};

fn csr() -> weft_hdl::csr::Csr {
    use rust_hdl::prelude::Block as _;
    let mut c = weft_hdl::csr::Csr::new(&TEST_MAP, &BUILD);
    c.connect_all();
    c
}

/// Writes the engine port must carry, in program order.
fn engine_writes(ops: &[Op]) -> Vec<EngineWrite> {
    ops.iter()
        .filter_map(|op| match *op {
            Op::Write { addr, data, strb }
                if is_engine_reg(&TEST_MAP, addr)
                    && TEST_MAP.lookup(addr).unwrap().1.access.writable() =>
            {
                Some(EngineWrite {
                    word: (addr >> 2) as u16,
                    data,
                    strb,
                })
            }
            _ => None,
        })
        .collect()
}
use weft_sim::hdl::HdlDut;
use weft_sim::simulator::{
    verilator_usable, waves_path, BoxDut, Prepared, Simulator, SimulatorOptions,
};
use weft_sim::witness::{agree, Factory};

const BUILD: BuildInfo = BuildInfo {
    board_id: 1,
    build_date: 1_790_000_000,
    git_hash: 0x1234_abcd,
    features: Features::CTRL,
};

fn module() -> String {
    weft_hdl::emit::module_name("csr")
}

fn verilator() -> Option<&'static Prepared<weft_hdl::csr::Csr>> {
    static VL: OnceLock<Option<Prepared<weft_hdl::csr::Csr>>> = OnceLock::new();
    VL.get_or_init(|| {
        verilator_usable().then(|| {
            Prepared::new(
                Simulator::Verilator,
                &module(),
                csr,
                false,
                &SimulatorOptions::default(),
            )
            .expect("Verilator build of the CSR block")
        })
    })
    .as_ref()
}

fn witnesses() -> Vec<Factory<'static, CsrIn, CsrOut>> {
    let mut w: Vec<Factory<'static, CsrIn, CsrOut>> = vec![
        Box::new(|| -> BoxDut<CsrIn, CsrOut> { Box::new(CsrModel::new(TEST_MAP, BUILD)) }),
        Box::new(|| -> BoxDut<CsrIn, CsrOut> { Box::new(HdlDut::new(csr())) }),
    ];
    if let Some(vl) = verilator() {
        w.push(Box::new(move || vl.instantiate(None).unwrap()));
    }
    w
}

fn op() -> impl Strategy<Value = Op> {
    let reg = prop::sample::select(
        TEST_MAP
            .registers()
            .map(|(_, r)| r.addr)
            .collect::<Vec<_>>(),
    );
    let addr = prop_oneof![
        3 => (reg, 0u32..4).prop_map(|(a, low)| a | low),
        1 => 0u32..TEST_MAP.span(),
    ];
    prop_oneof![
        3 => (any::<u32>(), 0u8..16).prop_map(|(data, strb)| Op::Write { addr: ctrl::SCRATCH.addr, data, strb }),
        2 => Just(Op::Read { addr: ctrl::SCRATCH.addr }),
        1 => Just(Op::Read { addr: ctrl::CYCLE_LO.addr }),
        1 => Just(Op::Read { addr: ctrl::CYCLE_HI.addr }),
        1 => (0u32..2, 0u8..16).prop_map(|(data, strb)| Op::Write { addr: ctrl::IRQ_TEST.addr, data, strb }),
        2 => (addr.clone(), any::<u32>(), 0u8..16).prop_map(|(addr, data, strb)| Op::Write { addr, data, strb }),
        3 => addr.prop_map(|addr| Op::Read { addr }),
    ]
}

fn timing() -> impl Strategy<Value = Timing> {
    (0.0f64..0.8, 0.0f64..0.8).prop_map(|(bubble, stall)| Timing { bubble, stall })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(48), ..ProptestConfig::default() })]

    /// Overlapping reads and writes under random timing: every witness
    /// produces the same outputs on every cycle, and the slave keeps the
    /// AXI4-Lite handshake rules.
    #[test]
    fn witnesses_agree_cycle_by_cycle(ops in prop::collection::vec(op(), 1..120), t in timing(), seed in any::<u64>()) {
        let w = witnesses();
        let runs = agree(&w, &|| CsrDriver::new(ops.clone(), t, seed, false), 100_000).map_err(TestCaseError::fail)?;
        for r in &runs {
            prop_assert!(r.driver.master.violations().is_empty(), "{}: {:?}", r.witness, r.driver.master.violations());
            prop_assert_eq!(&r.driver.engine_writes, &engine_writes(&ops));
        }
    }

    /// Serialised transactions follow the register map's semantics, checked
    /// independently of cycle timing.
    #[test]
    fn serial_transactions_follow_the_map(ops in prop::collection::vec(op(), 1..80), t in timing(), seed in any::<u64>()) {
        let w = witnesses();
        let runs = agree(&w, &|| CsrDriver::new(ops.clone(), t, seed, true), 100_000).map_err(TestCaseError::fail)?;
        for r in &runs {
            check_serial(&TEST_MAP, &BUILD, r.driver.master.completions()).map_err(TestCaseError::fail)?;
            prop_assert_eq!(&r.driver.engine_writes, &engine_writes(&ops));
            let reads = ops.iter().filter(|op| matches!(op, Op::Read { addr } if is_engine_reg(&TEST_MAP, *addr))).count();
            prop_assert_eq!(r.driver.engine_reads.len(), reads);
        }
    }
}

fn serial(ops: Vec<Op>) -> Vec<(u8, u32)> {
    let w = witnesses();
    let runs = agree(
        &w,
        &|| CsrDriver::new(ops.clone(), Timing::EAGER, 0, true),
        10_000,
    )
    .unwrap();
    runs[0]
        .driver
        .master
        .completions()
        .iter()
        .map(|c| {
            let c = c.unwrap();
            (c.resp, c.data)
        })
        .collect()
}

#[test]
fn id_block_reads_the_map_and_build() {
    let r = serial(vec![
        Op::Read {
            addr: id::MAGIC.addr,
        },
        Op::Read {
            addr: id::MAP_VERSION.addr,
        },
        Op::Read {
            addr: id::GIT_HASH.addr,
        },
        Op::Read {
            addr: id::BOARD_ID.addr,
        },
        Op::Read {
            addr: id::BLK_NEXT.addr,
        },
        Op::Read {
            addr: ctrl::BLK_NEXT.addr,
        },
    ]);
    assert_eq!(
        r,
        vec![
            (OKAY, 0x5745_4654),
            (OKAY, MAP.version),
            (OKAY, 0x1234_abcd),
            (OKAY, 1),
            (OKAY, ctrl::BASE),
            (OKAY, kv::BASE),
        ]
    );
}

#[test]
fn engine_registers_go_through_the_engine_port() {
    let w = witnesses();
    let ops = vec![
        Op::Read {
            addr: kv::COUNTERS[0].addr,
        },
        Op::Write {
            addr: kv::CMD.addr,
            data: 1,
            strb: 0xf,
        },
        Op::Write {
            addr: kv::STATUS.addr,
            data: 1,
            strb: 0xf,
        },
        Op::Read {
            addr: kv::BLK_TYPE.addr,
        },
    ];
    let runs = agree(
        &w,
        &|| CsrDriver::new(ops.clone(), Timing::EAGER, 0, true),
        10_000,
    )
    .unwrap();
    for r in &runs {
        let c: Vec<_> = r
            .driver
            .master
            .completions()
            .iter()
            .map(|c| c.map(|c| (c.resp, c.data)).unwrap())
            .collect();
        let counter = weft_model::csr::fake_engine_read((kv::COUNTERS[0].addr >> 2) as u16);
        assert_eq!(
            c,
            vec![
                (OKAY, counter),
                (OKAY, 0),
                (SLVERR, 0),
                (OKAY, weft_regs::block_type::KV_AGG)
            ]
        );
        assert_eq!(
            r.driver.engine_writes,
            vec![EngineWrite {
                word: (kv::CMD.addr >> 2) as u16,
                data: 1,
                strb: 0xf
            }]
        );
        assert_eq!(
            r.driver.engine_reads,
            vec![(kv::COUNTERS[0].addr >> 2) as u16]
        );
    }
}

#[test]
fn errors_follow_axi4_lite() {
    let r = serial(vec![
        Op::Write {
            addr: id::MAGIC.addr,
            data: 0,
            strb: 0xf,
        },
        Op::Read {
            addr: id::MAGIC.addr,
        },
        Op::Write {
            addr: 0x8000,
            data: 1,
            strb: 0xf,
        },
        Op::Read { addr: 0x8000 },
        Op::Write {
            addr: ctrl::SCRATCH.addr,
            data: 0xaabb_ccdd,
            strb: 0b0101,
        },
        Op::Read {
            addr: ctrl::SCRATCH.addr,
        },
        Op::Read {
            addr: ctrl::IRQ_TEST.addr,
        },
    ]);
    assert_eq!(
        r,
        vec![
            (SLVERR, 0),
            (OKAY, 0x5745_4654),
            (DECERR, 0),
            (DECERR, 0),
            (OKAY, 0),
            (OKAY, 0x00bb_00dd),
            (OKAY, 0),
        ]
    );
}

#[test]
fn waveforms_on_request() {
    let dir = std::env::temp_dir().join(format!("weft-waves-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut engines = vec![Simulator::RustHdl];
    if verilator_usable() {
        engines.push(Simulator::Verilator);
    }
    for e in engines {
        let p = Prepared::new(
            e,
            &module(),
            || weft_hdl::emit::csr(&BUILD),
            true,
            &SimulatorOptions::default(),
        )
        .unwrap();
        let path = dir.join(format!("csr-{}.vcd", e.name()));
        {
            let mut dut = p.instantiate(Some(&path)).unwrap();
            let ops = vec![Op::Write {
                addr: ctrl::SCRATCH.addr,
                data: 7,
                strb: 0xf,
            }];
            weft_model::run(
                dut.as_mut(),
                &mut CsrDriver::new(ops, Timing::EAGER, 0, true),
                100,
            )
            .unwrap();
        }
        let vcd = std::fs::read_to_string(&path).unwrap();
        assert!(
            vcd.contains("$var") && vcd.contains("s_axil_wdata"),
            "{e:?}: no waveform in {}",
            path.display()
        );
    }
    // The WEFT_WAVES switch names files after the test.
    if std::env::var("WEFT_WAVES").as_deref() != Ok("1") {
        assert_eq!(waves_path("x"), None);
    }
}
