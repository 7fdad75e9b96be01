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

/// BAR0 of a card under the OpenNIC shell: the QDMA IP's registers
/// (256 KiB here), its config block ID in word 0.
const QDMA_ID: u32 = 0x1fd3_0000;

/// A weft card under the OpenNIC shell: BAR0 the QDMA IP's, BAR2 4 MiB
/// with `map` at 0x100000 (`weft_regs::opennic`).
fn opennic_card(map: Vec<u32>) -> FakeBackend {
    let mut bar0 = vec![0u32; (256 << 10) / 4];
    bar0[0] = QDMA_ID;
    let mut bar2 = vec![0u32; (4 << 20) / 4];
    let at = weft_regs::opennic::MAP_OFFSET as usize / 4;
    bar2[at..at + map.len()].copy_from_slice(&map);
    FakeBackend::new().bar(0, bar0).bar(2, bar2)
}

fn open(t: &tempfile::TempDir, fake: &FakeBackend) -> Result<VfioDevice> {
    VfioDevice::open_on(BDF, &VfioOptions::default(), &Sysfs::at(t.path()), fake)
}

fn open_window(t: &tempfile::TempDir, fake: &FakeBackend, window: Window) -> Result<VfioDevice> {
    let opts = VfioOptions {
        window,
        ..VfioOptions::default()
    };
    VfioDevice::open_on(BDF, &opts, &Sysfs::at(t.path()), fake)
}

#[test]
fn opens_maps_and_identifies_a_weft_card() {
    let t = tree(Some("vfio-pci"));
    let fake = opennic_card(weft_bar(MAP.span() as usize / 4));
    let dev = open(&t, &fake).unwrap();
    assert_eq!(dev.name(), "vfio:0000:3b:00.0");
    assert_eq!(dev.iommu_group(), 12);
    assert_eq!(dev.group_functions(), [BDF]);
    {
        let s = fake.state.lock().unwrap();
        assert_eq!(s.command & 0b110, 0b110, "memory space and bus master on");
        assert_eq!(s.irqs.as_ref().unwrap().0, IrqKind::MsiX);
        assert_eq!(s.irqs.as_ref().unwrap().1.len(), 4);
        assert_eq!(s.mapped, [2], "only the window's BAR is mapped");
    }
    let info = identify(&dev).unwrap();
    assert_eq!(info.board_name(), Some("u55c"));
    assert_eq!(info.git_hash, 0x1234_5678);
    // Registers are plain memory in the double: writes read back.
    dev.write_reg(&weft_regs::ctrl::SCRATCH, 0xabcd).unwrap();
    assert_eq!(dev.read_reg(&weft_regs::ctrl::SCRATCH).unwrap(), 0xabcd);
    dev.reset().unwrap();
    assert_eq!(fake.state.lock().unwrap().resets, 1);
    drop(dev);
    assert_eq!(fake.state.lock().unwrap().irq_disables, 1);
}

#[test]
fn the_default_window_is_bar2_at_0x100000() {
    let opts = VfioOptions::default();
    assert_eq!(opts.window, Window::OPENNIC);
    assert_eq!(
        (opts.window.bar, opts.window.offset, opts.window.len),
        (2, 0x10_0000, Some(1 << weft_regs::ADDR_BITS))
    );
    let t = tree(Some("vfio-pci"));
    let dev = open(&t, &opennic_card(weft_bar(64))).unwrap();
    assert_eq!(
        dev.window(),
        Window {
            bar: 2,
            offset: 0x10_0000,
            len: Some(0x1_0000)
        }
    );
    assert_eq!(dev.window_bar_len(), 4 << 20);
    assert_eq!(
        dev.bar_len(),
        0x1_0000,
        "the window's length, not the BAR's"
    );
    // The ID block is read at BAR2 + 0x100000, not at BAR0 (the QDMA IP's).
    assert_eq!(
        dev.read_reg(&weft_regs::id::MAGIC).unwrap(),
        weft_regs::MAGIC
    );
}

#[test]
fn accesses_land_at_the_window_offset_plus_the_address() {
    let t = tree(Some("vfio-pci"));
    let fake = opennic_card(weft_bar(64));
    let dev = open(&t, &fake).unwrap();
    let base = 0x10_0000u64;
    // Writes: the device sees them at BAR2 + 0x100000 + addr, nowhere else.
    for (addr, v) in [
        (0x0u32, 0x1111_1111),
        (0x700, 0x7777_0700),
        (0xfffc, 0xffff_fffc),
    ] {
        dev.write32(addr, v).unwrap();
        assert_eq!(
            fake.peek(2, base + addr as u64),
            v,
            "BAR2+{base:#x}+{addr:#x}"
        );
        assert_eq!(dev.read32(addr).unwrap(), v);
    }
    assert_eq!(fake.peek(2, 0x700), 0, "not at BAR2 + addr");
    assert_eq!(fake.peek(0, 0x700), 0, "not at BAR0 + addr");
    assert_eq!(fake.peek(0, 0), QDMA_ID, "BAR0 untouched");
    // Reads: a word the device holds at BAR2 + 0x100000 + 0x800.
    drop(dev);
    let mut bar2 = vec![0u32; (4 << 20) / 4];
    bar2[(0x10_0000 + 0x800) / 4] = 0xfeed_0800;
    let fake2 = FakeBackend::new().bar(0, vec![0; 64]).bar(2, bar2);
    let dev = open(&t, &fake2).unwrap();
    assert_eq!(dev.read32(0x800).unwrap(), 0xfeed_0800);
    // A window at a BAR's base (how the QEMU test drives edu) reads at the
    // address itself.
    drop(dev);
    let dev = open_window(&t, &fake2, Window::whole_bar(2)).unwrap();
    assert_eq!(dev.bar_len(), 4 << 20);
    assert_eq!(dev.read32(0x10_0800).unwrap(), 0xfeed_0800);
    assert_eq!(dev.read32(0x800).unwrap(), 0);
}

#[test]
fn out_of_window_and_unaligned_accesses_are_errors() {
    let t = tree(Some("vfio-pci"));
    let fake = opennic_card(weft_bar(64));
    let dev = open(&t, &fake).unwrap();
    // The first address past the 64 KiB window, the last in reach of a
    // u32, and one whose end would overflow: refused, never a panic.
    for addr in [0x1_0000u32, 0x1_0002, 0xffff_fffc, u32::MAX] {
        let e = dev.read32(addr).unwrap_err();
        assert!(
            matches!(e, Error::OutsideWindow { .. } | Error::Unaligned { .. }),
            "{e}"
        );
        assert!(dev.write32(addr, 1).is_err());
    }
    let e = dev.read32(0x1_0000).unwrap_err().to_string();
    assert_eq!(
        e,
        "vfio:0000:3b:00.0: BAR2+0x100000+0x10000 is outside the register window (64 KiB at BAR2+0x100000 of a 4 MiB BAR)"
    );
    let e = dev.write32(0x702, 5).unwrap_err();
    assert!(matches!(e, Error::Unaligned { addr: 0x702, .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "vfio:0000:3b:00.0: BAR2+0x100000+0x702 is not 4-byte aligned (registers are 32-bit words)"
    );
    // Nothing reached the device: slave 1's window (BAR2 + 0x110000) and
    // the words around 0x702 are as they were.
    assert_eq!(fake.peek(2, 0x11_0000), 0);
    assert_eq!(fake.peek(2, 0x10_0700), 0);
    assert_eq!(fake.peek(2, 0x10_0704), 0);
    // A whole-BAR window ends at the BAR's end.
    drop(dev);
    let dev = open_window(&t, &fake, Window::whole_bar(0)).unwrap();
    assert!(dev.read32((256 << 10) - 4).is_ok());
    let e = dev.read32(256 << 10).unwrap_err().to_string();
    assert!(
        e.contains("BAR0+0x0+0x40000 is outside the register window (256 KiB at BAR0+0x0 of a 256 KiB BAR)"),
        "{e}"
    );
}

#[test]
fn a_window_the_bars_cannot_hold_is_refused_at_open() {
    let t = tree(Some("vfio-pci"));
    // BAR2 of 1 MiB ends where the window would begin.
    let small = FakeBackend::new()
        .bar(0, vec![0; 64])
        .bar(2, vec![0; (1 << 20) / 4]);
    let e = open(&t, &small).err().unwrap();
    assert!(
        matches!(
            e,
            Error::NoWindow {
                bar_len: Some(0x10_0000),
                ..
            }
        ),
        "{e}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("vfio:0000:3b:00.0: no register window BAR2+0x100000 (64 KiB): BAR2 is 1 MiB, too small for it"),
        "{msg}"
    );
    assert!(msg.contains("OpenNIC shell"), "{msg}");
    // Refused before anything on the device changed.
    {
        let s = small.state.lock().unwrap();
        assert_eq!(s.command, 0, "memory space and bus mastering left off");
        assert!(s.mapped.is_empty() && s.irqs.is_none());
    }
    // One word short of the window's end.
    let short = FakeBackend::new().bar(2, vec![0; (0x11_0000 - 4) / 4]);
    assert!(matches!(open(&t, &short), Err(Error::NoWindow { .. })));
    // No BAR2 at all (QEMU's edu: BAR0 only).
    let edu = FakeBackend::new().bar(0, vec![0x0100_00ed; (1 << 20) / 4]);
    let e = open(&t, &edu).err().unwrap().to_string();
    assert!(
        e.starts_with(
            "vfio:0000:3b:00.0: no register window BAR2+0x100000 (64 KiB): BAR2 is not implemented"
        ),
        "{e}"
    );
    // A window of the caller's own that does not fit names it, without the
    // OpenNIC hint; a BAR past 5 is not implemented; a window offset off a
    // 32-bit boundary is refused too.
    let w = Window {
        bar: 0,
        offset: 0xff000,
        len: Some(0x2000),
    };
    let e = open_window(&t, &edu, w).err().unwrap().to_string();
    assert_eq!(
        e,
        "vfio:0000:3b:00.0: no register window BAR0+0xff000 (8 KiB): BAR0 is 1 MiB, too small for it"
    );
    let e = open_window(&t, &edu, Window::whole_bar(9)).err().unwrap();
    assert!(matches!(e, Error::NoWindow { bar_len: None, .. }), "{e}");
    let w = Window {
        offset: 2,
        ..Window::whole_bar(0)
    };
    let e = open_window(&t, &edu, w).err().unwrap();
    assert!(matches!(e, Error::Unaligned { base: 2, .. }), "{e}");
    assert_eq!(edu.state.lock().unwrap().command, 0);
}

#[test]
fn other_bars_are_read_not_mapped() {
    let t = tree(Some("vfio-pci"));
    let fake = opennic_card(weft_bar(64));
    let dev = open(&t, &fake).unwrap();
    assert_eq!(dev.read_bar32(0, 0).unwrap(), QDMA_ID);
    assert_eq!(fake.state.lock().unwrap().mapped, [2], "BAR0 not mapped");
    // The window's own BAR, by its BAR offset.
    assert_eq!(
        dev.read_bar32(2, 0x10_0000 + weft_regs::id::MAGIC.addr as u64)
            .unwrap(),
        weft_regs::MAGIC
    );
    let e = dev.read_bar32(0, 256 << 10).unwrap_err();
    assert!(matches!(e, Error::OutsideWindow { bar: 0, .. }), "{e}");
    assert!(matches!(dev.read_bar32(0, 2), Err(Error::Unaligned { .. })));
    let e = dev.read_bar32(4, 0).unwrap_err().to_string();
    assert!(e.contains("BAR4 is not implemented"), "{e}");
}

#[test]
fn refuses_clearly() {
    // Not on vfio-pci: say how to bind.
    let t = tree(Some("xdma"));
    let fake = opennic_card(weft_bar(MAP.span() as usize / 4));
    let e = open(&t, &fake).err().unwrap().to_string();
    assert!(e.contains("not bound to vfio-pci (driver: xdma)"), "{e}");
    assert!(e.contains("weft bind 0000:3b:00.0"), "{e}");

    // Not a weft card (QEMU's edu: ID register 0x010000ed at BAR0 offset 0,
    // opened at its own window).
    let t = tree(Some("vfio-pci"));
    let mut edu = vec![0u32; 1 << 18];
    edu[0] = 0x0100_00ed;
    let dev = open_window(&t, &FakeBackend::new().bar(0, edu), Window::whole_bar(0)).unwrap();
    let e = identify(&dev).unwrap_err().to_string();
    assert!(e.contains("not a weft card"), "{e}");

    // A window smaller than the map the ID block declares.
    let w = Window {
        len: Some(0x1000),
        ..Window::OPENNIC
    };
    let dev = open_window(&t, &opennic_card(weft_bar(0x1000 / 4)), w).unwrap();
    let e = identify(&dev).unwrap_err();
    assert!(
        matches!(e, Error::WindowTooSmall { window: 0x1000, .. }),
        "{e}"
    );

    // An unknown map version.
    let mut bar = weft_bar(MAP.span() as usize / 4);
    bar[weft_regs::id::MAP_VERSION.word() as usize] = 7 << 16;
    let dev = open(&t, &opennic_card(bar)).unwrap();
    let e = identify(&dev).unwrap_err().to_string();
    assert!(
        e.contains("register map version 7.0 is not supported"),
        "{e}"
    );
}

#[test]
fn dma_buffers_map_at_allocated_iovas_and_unmap_on_drop() {
    let t = tree(Some("vfio-pci"));
    let fake = opennic_card(weft_bar(64));
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
    let mut fake = opennic_card(weft_bar(64));
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
    let mut fake = opennic_card(weft_bar(64));
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
