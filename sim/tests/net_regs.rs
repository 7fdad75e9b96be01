//! The `net` register block through the model, rust-hdl and Verilator,
//! cycle by cycle: random register reads and writes (with random strobes,
//! inside and outside the block), worker-table and sequence writes, and
//! random counter events. Each run must also end with the registers the
//! script wrote, read back.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;
use weft_hdl::net_regs::NetRegs;
use weft_model::net_regs::{NetIn, NetOut, NetRegsModel, COUNTERS};
use weft_model::Driver;
use weft_regs::net;
use weft_sim::simulator::{verilator_usable, BoxDut, Simulators};
use weft_sim::witness::{agree, Factory};

type W = Simulators<NetRegs>;

fn witnesses() -> &'static W {
    static W: OnceLock<W> = OnceLock::new();
    W.get_or_init(|| {
        Simulators::prepare("weft_net_regs", NetRegs::connected)
            .expect("the block builds on both simulators")
    })
}

struct NetDriver {
    rng: ChaCha8Rng,
    cycles: u64,
    limit: u64,
    seq: u32,
    /// Events driven, per counter.
    events: [u64; COUNTERS],
    /// (cycle, worker address, data) of every worker-table write seen.
    wt: Vec<(u16, [u32; 4])>,
    /// Counter reads at the end: (LO, HI) per counter.
    reads: Vec<u32>,
    final_reads: Vec<u16>,
}

fn word(r: &weft_regs::Register) -> u16 {
    (r.addr >> 2) as u16
}

impl Driver<NetIn, NetOut> for NetDriver {
    fn drive(&mut self) -> NetIn {
        let mut i = NetIn {
            seq_in: self.seq,
            ..Default::default()
        };
        if self.cycles < self.limit {
            let regs: Vec<u16> = net::BLOCK.regs.iter().map(word).collect();
            i.inc = self.rng.gen::<u32>() & ((1 << COUNTERS) - 1);
            if self.rng.gen_bool(0.5) {
                i.eng_raddr = if self.rng.gen_bool(0.9) {
                    regs[self.rng.gen_range(0..regs.len())]
                } else {
                    self.rng.gen_range(0..1 << 14)
                };
                i.eng_re = self.rng.gen();
            }
            if self.rng.gen_bool(0.4) {
                i.eng_we = true;
                i.eng_waddr = if self.rng.gen_bool(0.9) {
                    regs[self.rng.gen_range(0..regs.len())]
                } else {
                    self.rng.gen_range(0..1 << 14)
                };
                i.eng_wdata = self.rng.gen();
                i.eng_wstrb = if self.rng.gen_bool(0.7) {
                    0xf
                } else {
                    self.rng.gen_range(0..16)
                };
            }
        } else if let Some(&a) = self.final_reads.get(self.reads.len()) {
            i.eng_raddr = a;
            i.eng_re = true;
        }
        i
    }

    fn observe(&mut self, i: &NetIn, o: &NetOut) {
        if self.cycles < self.limit {
            for k in 0..COUNTERS {
                self.events[k] += (i.inc >> k & 1) as u64;
            }
        } else if self.reads.len() < self.final_reads.len() {
            self.reads.push(o.eng_rdata);
        }
        if o.seq_we {
            self.seq = o.seq_wdata;
        } else {
            self.seq = self.seq.wrapping_add(self.rng.gen_range(0..2));
        }
        if o.wt_we {
            self.wt.push((o.wt_addr, o.wt_data));
        }
        self.cycles += 1;
    }

    fn finished(&self) -> bool {
        self.cycles >= self.limit && self.reads.len() == self.final_reads.len()
    }
}

fn check(seed: u64, cycles: u64) -> Result<(), String> {
    let w = witnesses();
    let mut f: Vec<Factory<'_, NetIn, NetOut>> = vec![
        Box::new(|| -> BoxDut<NetIn, NetOut> { Box::new(NetRegsModel::new()) }),
        Box::new(|| w.hdl.instantiate(None).unwrap()),
    ];
    if let Some(vl) = &w.vl {
        f.push(Box::new(|| vl.instantiate(None).unwrap()));
    }
    let make = || NetDriver {
        rng: ChaCha8Rng::seed_from_u64(seed),
        cycles: 0,
        limit: cycles,
        seq: 0,
        events: [0; COUNTERS],
        wt: vec![],
        reads: vec![],
        final_reads: net::COUNTERS.iter().map(word).collect(),
    };
    let runs = agree(&f, &make, cycles + 100)?;
    for r in &runs {
        // Every counter counted every event: LO then HI read back.
        for k in 0..COUNTERS {
            let v = r.driver.reads[2 * k] as u64 | (r.driver.reads[2 * k + 1] as u64) << 32;
            if v != r.driver.events[k] {
                return Err(format!(
                    "{}: counter {} reads {v}, {} events were driven",
                    r.witness,
                    net::COUNTER_NAMES[k],
                    r.driver.events[k]
                ));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: weft_model::proptest_cases(16), ..ProptestConfig::default() })]

    #[test]
    fn net_block_matches_the_model(seed in any::<u64>()) {
        check(seed, 400).map_err(TestCaseError::fail)?;
    }
}

/// A worker entry written through the staging registers comes out on the
/// table port exactly, and configuration registers drive their outputs.
#[test]
fn staged_worker_entries_and_addresses_reach_their_ports() {
    let mut m = NetRegsModel::new();
    let wr = |m: &mut NetRegsModel, r: &weft_regs::Register, v: u32| {
        use weft_model::Dut;
        m.eval(&NetIn {
            eng_we: true,
            eng_waddr: word(r),
            eng_wdata: v,
            eng_wstrb: 0xf,
            ..Default::default()
        });
        m.tick();
    };
    wr(&mut m, &net::WT_SEL, 3 << 8 | 17);
    wr(&mut m, &net::WT_MAC_HI, 1 << 16 | 0x0257);
    wr(&mut m, &net::WT_MAC_LO, 0x4600_0009);
    wr(&mut m, &net::WT_IP, 0x0a00_0009);
    wr(&mut m, &net::WT_PORT, 40000);
    wr(&mut m, &net::MAC_HI, 0x1234_0257);
    use weft_model::Dut;
    let o = m.eval(&NetIn {
        eng_we: true,
        eng_waddr: word(&net::WT_CMD),
        eng_wdata: 1,
        eng_wstrb: 1,
        ..Default::default()
    });
    assert!(o.wt_we);
    assert_eq!(o.wt_addr, 3 << 5 | 17);
    let want: u128 = 0x0257_4600_0009 | 0x0a00_0009u128 << 48 | 40000u128 << 80 | 1u128 << 97;
    let got = o.wt_data[0] as u128
        | (o.wt_data[1] as u128) << 32
        | (o.wt_data[2] as u128) << 64
        | (o.wt_data[3] as u128) << 96;
    assert_eq!(got, want);
    assert_eq!(o.card_mac >> 32, 0x0257, "MAC_HI keeps 16 bits");
    assert_eq!(o.pack_max as usize, weft_regs::wire::KV_DEFAULT_RECORDS);
    assert_eq!(o.pack_wait, 1024);
}

#[test]
fn the_block_lints_clean() {
    if !verilator_usable() {
        return;
    }
    let v = weft_hdl::emit::verilog_of(&NetRegs::connected(), "weft_net_regs");
    let rep = weft_sim::verilator::lint_with_waivers(&v, "weft_net_regs").unwrap();
    assert!(rep.clean, "{:#?}", rep.warnings);
}

/// rust-hdl's connection check passes on the block `connected()` gives and
/// fails on the bare one (the simulators would not notice a missing
/// `connect_all`; Verilog generation for a flow would).
#[test]
fn the_connected_block_passes_rust_hdls_connection_check() {
    weft_sim::witness::check_connection(&NetRegs::connected(), &NetRegs::new()).unwrap();
}
