//! `VfioDevice`'s logic against the backend double and a fake sysfs tree.

use super::fake::FakeBackend;
use super::sysfs::fake::{add, add_vfio_node, FakeFn};
use super::*;
use crate::{identify, RegisterAccess};
use weft_regs::{BuildInfo, Features, MAP};

const BDF: &str = "0000:3b:00.0";

fn tree(driver: Option<&str>) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    add_vfio_node(t.path());
    add(
        t.path(),
        &FakeFn {
            bdf: BDF,
            vendor: 0x10ee,
            device: 0x903f,
            class: 0x020000,
            driver,
            group: Some(12),
        },
    );
    t
}

/// A BAR holding the weft map's reset values, `words` long.
fn weft_bar(words: usize) -> Vec<u32> {
    let build = BuildInfo {
        board_id: 1,
        build_date: 1_700_000_000,
        git_hash: 0x1234_5678,
        features: Features::CTRL | Features::KV_AGG,
    };
    let mut bar = vec![0u32; words];
    for (b, r) in MAP.registers() {
        if let Some(w) = bar.get_mut(r.word() as usize) {
            *w = MAP.reset_value(b, r, &build);
        }
    }
    bar
}

fn open(t: &tempfile::TempDir, fake: &FakeBackend) -> Result<VfioDevice> {
    VfioDevice::open_on(BDF, &VfioOptions::default(), &Sysfs::at(t.path()), fake)
}

#[test]
fn opens_maps_and_identifies_a_weft_card() {
    let t = tree(Some("vfio-pci"));
    let fake = FakeBackend::new(weft_bar(MAP.span() as usize / 4));
    let dev = open(&t, &fake).unwrap();
    assert_eq!(dev.name(), "vfio:0000:3b:00.0");
    assert_eq!(dev.iommu_group(), 12);
    assert_eq!(dev.group_functions(), [BDF]);
    {
        let s = fake.state.lock().unwrap();
        assert_eq!(s.command & 0b110, 0b110, "memory space and bus master on");
        assert_eq!(s.irqs.as_ref().unwrap().0, IrqKind::MsiX);
        assert_eq!(s.irqs.as_ref().unwrap().1.len(), 4);
    }
    let info = identify(&dev).unwrap();
    assert_eq!(info.board_name(), Some("u55c"));
    assert_eq!(info.git_hash, 0x1234_5678);
    // Registers are plain memory in the double: writes read back.
    dev.write_reg(&weft_regs::ctrl::SCRATCH, 0xabcd).unwrap();
    assert_eq!(dev.read_reg(&weft_regs::ctrl::SCRATCH).unwrap(), 0xabcd);
    assert!(matches!(
        dev.read32(MAP.span()),
        Err(Error::OutOfRange { .. })
    ));
    assert!(matches!(dev.read32(2), Err(Error::OutOfRange { .. })));
    dev.reset().unwrap();
    assert_eq!(fake.state.lock().unwrap().resets, 1);
    drop(dev);
    assert_eq!(fake.state.lock().unwrap().irq_disables, 1);
}

#[test]
fn refuses_clearly() {
    // Not on vfio-pci: say how to bind.
    let t = tree(Some("xdma"));
    let fake = FakeBackend::new(weft_bar(MAP.span() as usize / 4));
    let e = open(&t, &fake).err().unwrap().to_string();
    assert!(e.contains("not bound to vfio-pci (driver: xdma)"), "{e}");
    assert!(e.contains("weft bind 0000:3b:00.0"), "{e}");

    // Not a weft card (QEMU's edu: ID register 0x010000ed at offset 0).
    let t = tree(Some("vfio-pci"));
    let mut edu = vec![0u32; 1 << 18];
    edu[0] = 0x0100_00ed;
    let dev = open(&t, &FakeBackend::new(edu)).unwrap();
    let e = identify(&dev).unwrap_err().to_string();
    assert!(e.contains("not a weft card"), "{e}");

    // A BAR smaller than the map.
    let dev = open(&t, &FakeBackend::new(weft_bar(0x1000 / 4))).unwrap();
    let e = identify(&dev).unwrap_err();
    assert!(matches!(e, Error::BarTooSmall { .. }), "{e}");

    // An unknown map version.
    let mut bar = weft_bar(MAP.span() as usize / 4);
    bar[weft_regs::id::MAP_VERSION.word() as usize] = 7 << 16;
    let dev = open(&t, &FakeBackend::new(bar)).unwrap();
    let e = identify(&dev).unwrap_err().to_string();
    assert!(
        e.contains("register map version 7.0 is not supported"),
        "{e}"
    );
}

#[test]
fn dma_buffers_map_at_allocated_iovas_and_unmap_on_drop() {
    let t = tree(Some("vfio-pci"));
    let fake = FakeBackend::new(weft_bar(64));
    let opts = VfioOptions {
        dma_limit: 1 << 28,
        ..VfioOptions::default()
    };
    let dev = VfioDevice::open_on(BDF, &opts, &Sysfs::at(t.path()), &fake).unwrap();
    let a = dev.dma_alloc_with(3000, Backing::Regular).unwrap();
    let b = dev.dma_alloc(8192).unwrap();
    assert_eq!(a.mapped_len(), 4096);
    assert!(a.iova() + 4096 <= b.iova() || b.iova() + 8192 <= a.iova());
    assert!(a.iova() + 4096 <= 1 << 28 && b.iova() + 8192 <= 1 << 28);
    {
        let s = fake.state.lock().unwrap();
        let (len, va) = s.maps[&a.iova()];
        assert_eq!(len, 4096);
        assert_ne!(va as u64, a.iova(), "IOVA is not the virtual address");
        assert_eq!(s.maps.len(), 2);
    }
    a.write(100, b"weft").unwrap();
    let mut got = [0u8; 4];
    a.read(100, &mut got).unwrap();
    assert_eq!(&got, b"weft");
    assert!(a.write(2999, b"xy").is_err());
    let ia = a.iova();
    drop(a);
    assert!(!fake.state.lock().unwrap().maps.contains_key(&ia));
    // The IOVA is reused once unmapped.
    let c = dev.dma_alloc_with(4096, Backing::Regular).unwrap();
    assert_eq!(c.iova(), ia);
    // A failed unmap leaks the pages and the IOVA rather than free memory
    // the device may still reach.
    let free = dev.iova_free_bytes();
    fake.state.lock().unwrap().fail_unmap = true;
    drop(c);
    assert_eq!(dev.iova_free_bytes(), free);
    let d = dev.dma_alloc_with(4096, Backing::Regular).unwrap();
    assert_ne!(d.iova(), ia);
    assert!(dev.dma_alloc(0).is_err());
}

#[test]
fn no_iova_range_below_the_dma_limit_is_refused() {
    let t = tree(Some("vfio-pci"));
    let mut fake = FakeBackend::new(weft_bar(64));
    fake.ranges = std::iter::once(1 << 32..1 << 39).collect();
    let opts = VfioOptions {
        dma_limit: 1 << 28,
        ..VfioOptions::default()
    };
    let e = VfioDevice::open_on(BDF, &opts, &Sysfs::at(t.path()), &fake)
        .err()
        .unwrap();
    assert!(e.to_string().contains("no IOVA range"), "{e}");
}

#[test]
fn interrupts_arrive_on_eventfds() {
    let t = tree(Some("vfio-pci"));
    let mut fake = FakeBackend::new(weft_bar(64));
    fake.msix = 0;
    let dev = open(&t, &fake).unwrap();
    assert_eq!(dev.irq_kind(), Some(IrqKind::Msi));
    assert_eq!(dev.vectors(), 1);
    assert!(!dev.wait_irq(0, Duration::from_millis(1)).unwrap());
    fake.fire(0);
    assert!(dev.wait_irq(0, Duration::from_millis(100)).unwrap());
    assert!(!dev.wait_irq(0, Duration::ZERO).unwrap());
    let e = dev.wait_irq(1, Duration::ZERO).unwrap_err().to_string();
    assert!(
        e.contains("vector 1 does not exist (1 msi vector(s)"),
        "{e}"
    );

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let w = dev.irq_waiter(0).unwrap();
        fake.fire(0);
        tokio::time::timeout(Duration::from_secs(5), w.wait())
            .await
            .unwrap()
            .unwrap();
    });
}
