//! The simulated card through weft-driver's `Device` trait, on both engines:
//! discovery walks the chain exactly as on hardware.

use std::time::Duration;
use weft_driver::{identify, Device, Error, RegisterAccess};
use weft_regs::{ctrl, id};
use weft_sim::engine::verilator_usable;
use weft_sim::{Engine, EngineOptions, SimDevice};

fn devices() -> Vec<SimDevice> {
    let mut v = vec![SimDevice::open(Engine::RustHdl, &EngineOptions::default()).unwrap()];
    if verilator_usable() {
        v.push(SimDevice::open(Engine::Verilator, &EngineOptions::default()).unwrap());
    }
    v
}

#[test]
fn identify_walks_the_chain() {
    for dev in devices() {
        let info = identify(&dev).unwrap();
        assert_eq!(info.magic, weft_regs::MAGIC);
        assert_eq!(info.map_version, weft_regs::MAP.version);
        assert_eq!(info.board_name(), Some("sim"));
        let b = weft_hdl::this_build();
        assert_eq!((info.git_hash, info.build_date), (b.git_hash, b.build_date));
        let names: Vec<_> = info.blocks.iter().map(|b| b.name.unwrap()).collect();
        assert_eq!(
            names,
            ["id", "ctrl", "kv", "memops", "queue", "grad", "avm", "net"],
            "{}",
            dev.name()
        );
    }
}

#[test]
fn registers_errors_and_interrupts() {
    for dev in devices() {
        dev.write_reg(&ctrl::SCRATCH, 0xfeed_f00d).unwrap();
        assert_eq!(dev.read_reg(&ctrl::SCRATCH).unwrap(), 0xfeed_f00d);
        // The bus answers a raw write to a read-only register with SLVERR.
        let e = dev.write32(id::MAGIC.addr, 0).unwrap_err();
        assert!(matches!(e, Error::Bus { resp: "SLVERR", .. }), "{e}");
        let e = dev.read32(0x4000).unwrap_err();
        assert!(matches!(e, Error::Bus { resp: "DECERR", .. }), "{e}");
        assert!(matches!(
            dev.read32(0x1_0000),
            Err(Error::OutOfRange { .. })
        ));
        let c0 = dev.read_reg(&ctrl::CYCLE_LO).unwrap();
        let c1 = dev.read_reg(&ctrl::CYCLE_LO).unwrap();
        assert!(c1 > c0, "cycle counter must count: {c0} then {c1}");

        assert!(!dev.wait_irq(0, Duration::from_micros(10)).unwrap());
        dev.write_reg(&ctrl::IRQ_TEST, 1).unwrap();
        assert!(dev.wait_irq(0, Duration::from_micros(10)).unwrap());
        assert!(!dev.wait_irq(0, Duration::from_micros(10)).unwrap());
        assert!(dev.wait_irq(4, Duration::from_micros(10)).is_err());
    }
}

#[test]
fn dma_memory_behind_a_modelled_iommu() {
    let dev = &devices()[0];
    let a = dev.dma_alloc(3000).unwrap();
    let b = dev.dma_alloc(4096).unwrap();
    assert!(
        a.iova() >= 1 << 32,
        "IOVA must not look like a small physical address"
    );
    assert!(b.iova() >= a.iova() + 4096, "page-granular, disjoint");
    a.write(10, b"weft").unwrap();
    let mut buf = [0u8; 4];
    a.read(10, &mut buf).unwrap();
    assert_eq!(&buf, b"weft");
    assert!(a.write(2998, b"xyz").is_err());
    // The card side sees the same bytes at the IOVA, and nothing outside.
    let mem = dev.host_memory();
    let mut got = [0u8; 4];
    mem.lock()
        .unwrap()
        .read_iova(a.iova() + 10, &mut got)
        .unwrap();
    assert_eq!(&got, b"weft");
    let fault = mem.lock().unwrap().read_iova(a.iova() + 2999, &mut got);
    assert!(fault.unwrap_err().to_string().contains("IOMMU fault"));
    let iova = a.iova();
    drop(a);
    assert!(mem.lock().unwrap().read_iova(iova, &mut got).is_err());
}
