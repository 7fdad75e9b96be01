//! `weft probe vfio:BDF`: what a PCI function is, whether weft can use it,
//! and why not.
//!
//! Everything the kernel says through sysfs is read without opening the
//! device (vendor, class, driver, IOMMU group, BARs, MSI/MSI-X vectors);
//! when the function is on vfio-pci and its group is viable, it is opened
//! at the register window a weft card has under the OpenNIC shell
//! (BAR2 + 0x100000, [`Window::OPENNIC`]) and identified, so "usable" means
//! the ID block and register map were read there and accepted. When the
//! ID block there is not weft's, the report says what was read, and
//! whether BAR0 looks like the QDMA IP's (one read of its word 0, never a
//! write).

use serde::Serialize;
use weft_driver::vfio::sysfs::{BarKind, PciFunction, Sysfs};
use weft_driver::vfio::{VfioDevice, Window};
use weft_driver::Device;

/// Offset of the QDMA IP's config block identifier in its BAR (BAR0 on an
/// OpenNIC card): `QDMA_OFFSET_CONFIG_BLOCK_ID` in AMD's dma_ip_drivers
/// (`qdma_access`); the PG302 register map's `QDMA_TRQ_SEL_GLBL1` at 0x0.
pub const QDMA_CONFIG_BLOCK_ID: u64 = 0x0;
/// What bits 31:16 of that register read on a QDMA IP: dma_ip_drivers'
/// `QDMA_MAGIC_NUMBER` (DPDK's PMD compares `reg & 0xffff0000` with
/// `QDMA_CONFIG_BLOCK_ID` 0x1fd30000 to find the config BAR).
pub const QDMA_MAGIC: u32 = 0x1fd3;

/// One BAR.
#[derive(Clone, Debug, Serialize)]
pub struct Bar {
    /// BAR index.
    pub index: u8,
    /// Bus address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// `mem32`, `mem64` or `io`.
    pub kind: &'static str,
    /// Prefetchable.
    pub prefetchable: bool,
}

/// Another function of the IOMMU group.
#[derive(Clone, Debug, Serialize)]
pub struct GroupMember {
    /// PCI address.
    pub bdf: String,
    /// Its driver.
    pub driver: Option<String>,
}

/// The ID block, when it was read.
#[derive(Clone, Debug, Serialize)]
pub struct Card {
    /// Map version `major.minor`.
    pub map_version: String,
    /// Board name or id.
    pub board: String,
    /// Git hash of the image.
    pub git_hash: String,
    /// Blocks on the register chain.
    pub blocks: Vec<String>,
}

/// Where the register map was looked for.
#[derive(Clone, Debug, Serialize)]
pub struct MapWindow {
    /// The BAR.
    pub bar: u8,
    /// Byte offset of the map in the BAR.
    pub offset: u64,
    /// Bytes of the window.
    pub len: Option<u64>,
    /// The BAR's length, when sysfs lists it.
    pub bar_len: Option<u64>,
    /// Whether the BAR is a memory BAR that holds the window.
    pub fits: bool,
    /// `ID.MAGIC` as read there, when the function was opened.
    pub magic: Option<u32>,
}

/// BAR0's word 0, read when the ID block at the window was not weft's.
#[derive(Clone, Debug, Serialize)]
pub struct QdmaCheck {
    /// The word read at BAR0 + 0x0.
    pub word0: u32,
    /// Whether bits 31:16 are [`QDMA_MAGIC`]: BAR0 is a QDMA IP's, as on
    /// a card running the OpenNIC shell.
    pub qdma: bool,
}

/// What `weft probe` reports.
#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    /// PCI address.
    pub bdf: String,
    /// `vvvv:dddd`.
    pub id: String,
    /// Class code.
    pub class: String,
    /// Bound driver.
    pub driver: Option<String>,
    /// IOMMU group.
    pub iommu_group: Option<u32>,
    /// The group's functions (this one included).
    pub group: Vec<GroupMember>,
    /// BARs.
    pub bars: Vec<Bar>,
    /// MSI-X table size.
    pub msix_vectors: Option<u32>,
    /// MSI vectors.
    pub msi_vectors: Option<u32>,
    /// Reset methods the kernel offers.
    pub reset_methods: Option<String>,
    /// Where weft's register map was looked for.
    pub window: MapWindow,
    /// BAR0's word 0, when the ID block at the window was not weft's.
    pub bar0: Option<QdmaCheck>,
    /// Whether weft can drive it.
    pub usable: bool,
    /// Why not, or what was found.
    pub why: String,
    /// The card, when identified.
    pub card: Option<Card>,
}

fn bars(f: &PciFunction) -> Vec<Bar> {
    f.bars
        .iter()
        .map(|b| Bar {
            index: b.index,
            start: b.start,
            len: b.len,
            kind: b.kind.name(),
            prefetchable: b.prefetchable,
        })
        .collect()
}

fn map_window(w: Window, f: &PciFunction) -> MapWindow {
    let bar = f.bars.iter().find(|b| b.index == w.bar);
    MapWindow {
        bar: w.bar,
        offset: w.offset,
        len: w.len,
        bar_len: bar.map(|b| b.len),
        fits: bar.is_some_and(|b| b.kind != BarKind::Io && w.len_in(b.len).is_some()),
        magic: None,
    }
}

/// What probing needs of an opened function besides [`Device`]:
/// [`VfioDevice`] has it, and so can a test double.
pub trait ProbeDevice: Device {
    /// The register window the device's [`Device`] accesses go to.
    fn window(&self) -> Window;
    /// One 32-bit read at byte `offset` of BAR `bar` (never a write).
    fn read_bar32(&self, bar: u8, offset: u64) -> weft_driver::Result<u32>;
}

impl ProbeDevice for VfioDevice {
    fn window(&self) -> Window {
        VfioDevice::window(self)
    }
    fn read_bar32(&self, bar: u8, offset: u64) -> weft_driver::Result<u32> {
        VfioDevice::read_bar32(self, bar, offset)
    }
}

/// Probe `bdf` on this system.
pub fn probe(bdf: &str) -> weft_driver::Result<Probe> {
    probe_on(&Sysfs::system(), bdf, VfioDevice::open)
}

/// Probe through a given sysfs tree and opener (tests use doubles). The
/// opener opens at [`Window::OPENNIC`], as [`VfioDevice::open`] does.
pub fn probe_on<D: ProbeDevice>(
    sysfs: &Sysfs,
    bdf: &str,
    open: impl FnOnce(&str) -> weft_driver::Result<D>,
) -> weft_driver::Result<Probe> {
    let f = sysfs.function(bdf)?;
    let mut group = vec![];
    if let Some(g) = f.iommu_group {
        for m in sysfs.group_members(g)? {
            let driver = sysfs.function(&m).ok().and_then(|x| x.driver);
            group.push(GroupMember { bdf: m, driver });
        }
    }
    let mut p = Probe {
        bdf: bdf.to_string(),
        id: format!("{:04x}:{:04x}", f.vendor, f.device),
        class: format!("{:06x}", f.class),
        driver: f.driver.clone(),
        iommu_group: f.iommu_group,
        group,
        bars: bars(&f),
        msix_vectors: f.msix_vectors,
        msi_vectors: f.msi_vectors,
        reset_methods: f.reset_methods.clone(),
        window: map_window(Window::OPENNIC, &f),
        bar0: None,
        usable: false,
        why: String::new(),
        card: None,
    };
    if let Err(e) = sysfs.check_usable(bdf) {
        p.why = e.to_string();
        return Ok(p);
    }
    let dev = match open(bdf) {
        Ok(d) => d,
        Err(e) => {
            p.why = e.to_string();
            return Ok(p);
        }
    };
    p.window = MapWindow {
        magic: None,
        ..map_window(dev.window(), &f)
    };
    match weft_driver::identify(&dev) {
        Ok(info) => {
            p.window.magic = Some(info.magic);
            p.usable = true;
            p.why = format!(
                "a weft card, register map {} (this driver speaks {}.{})",
                info.map_version_string(),
                weft_regs::MAP_VERSION_MAJOR,
                weft_regs::MAP_VERSION_MINOR
            );
            p.card = Some(Card {
                map_version: info.map_version_string(),
                board: info
                    .board_name()
                    .map_or_else(|| format!("id {}", info.board_id), str::to_string),
                git_hash: format!("{:08x}", info.git_hash),
                blocks: info
                    .blocks
                    .iter()
                    .map(|b| {
                        b.name
                            .map_or_else(|| format!("{:#010x}", b.type_id), str::to_string)
                    })
                    .collect(),
            });
        }
        Err(e) => {
            p.why = e.to_string();
            if let weft_driver::Error::NotWeft { found, .. } = e {
                p.window.magic = Some(found);
                p.bar0 = qdma_check(&dev, &f);
            }
        }
    }
    Ok(p)
}

/// Whether BAR0 is a QDMA IP's: one read of its config block identifier,
/// only when the window is on another BAR and BAR0 is a memory BAR the
/// function has (sysfs says so, and the read checks again through VFIO).
fn qdma_check<D: ProbeDevice>(dev: &D, f: &PciFunction) -> Option<QdmaCheck> {
    let has_bar0 = f
        .bars
        .iter()
        .any(|b| b.index == 0 && b.kind != BarKind::Io && b.len >= QDMA_CONFIG_BLOCK_ID + 4);
    if dev.window().bar == 0 || !has_bar0 {
        return None;
    }
    let word0 = dev.read_bar32(0, QDMA_CONFIG_BLOCK_ID).ok()?;
    Some(QdmaCheck {
        word0,
        qdma: word0 >> 16 == QDMA_MAGIC,
    })
}

impl Probe {
    /// Human-readable report.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "device       {} ({}, class {})",
            self.bdf, self.id, self.class
        );
        let _ = writeln!(
            s,
            "driver       {}",
            self.driver.as_deref().unwrap_or("none")
        );
        match self.iommu_group {
            Some(g) => {
                let members: Vec<String> = self
                    .group
                    .iter()
                    .map(|m| format!("{} ({})", m.bdf, m.driver.as_deref().unwrap_or("no driver")))
                    .collect();
                let _ = writeln!(s, "iommu group  {g}: {}", members.join(", "));
            }
            None => {
                let _ = writeln!(s, "iommu group  none (IOMMU off?)");
            }
        }
        for b in &self.bars {
            let _ = writeln!(
                s,
                "BAR{}         {:#x} bytes at {:#x} ({}{})",
                b.index,
                b.len,
                b.start,
                b.kind,
                if b.prefetchable { ", prefetchable" } else { "" }
            );
        }
        let v = |x: Option<u32>| x.map_or("none".to_string(), |n| n.to_string());
        let _ = writeln!(
            s,
            "interrupts   MSI-X {} vectors, MSI {}",
            v(self.msix_vectors),
            v(self.msi_vectors)
        );
        if let Some(r) = &self.reset_methods {
            let _ = writeln!(s, "reset        {r}");
        }
        let w = &self.window;
        let _ = write!(
            s,
            "window       {} (weft's map under the OpenNIC shell)",
            Window {
                bar: w.bar,
                offset: w.offset,
                len: w.len
            }
        );
        match (w.bar_len, w.magic) {
            (None, _) => {
                let _ = writeln!(s, ": BAR{} is not implemented", w.bar);
            }
            (Some(_), _) if !w.fits => {
                let _ = writeln!(s, ": BAR{} does not hold it", w.bar);
            }
            (Some(_), Some(m)) if m == weft_regs::MAGIC => {
                let _ = writeln!(s, ": ID.MAGIC reads {m:#010x}, weft's");
            }
            (Some(_), Some(m)) => {
                let _ = writeln!(
                    s,
                    ": ID.MAGIC reads {m:#010x}, not weft's {:#010x}",
                    weft_regs::MAGIC
                );
            }
            (Some(_), None) => {
                let _ = writeln!(s);
            }
        }
        if let Some(q) = &self.bar0 {
            let _ = writeln!(
                s,
                "BAR0 word 0  {:#010x}: {}",
                q.word0,
                if q.qdma {
                    format!("the QDMA IP's config block (bits 31:16 = {QDMA_MAGIC:#x}), as on an OpenNIC card")
                } else {
                    format!(
                        "not the QDMA IP's config block (bits 31:16 would read {QDMA_MAGIC:#x})"
                    )
                }
            );
        }
        if let Some(c) = &self.card {
            let _ = writeln!(
                s,
                "card         board {}, map {}, git {}, blocks {}",
                c.board,
                c.map_version,
                c.git_hash,
                c.blocks.join(" -> ")
            );
        }
        let _ = writeln!(
            s,
            "usable       {}: {}",
            if self.usable { "yes" } else { "no" },
            self.why
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;
    use std::time::Duration;
    use weft_driver::{DmaBuffer, Error};
    use weft_regs::{BuildInfo, Features, MAP};

    const BDF: &str = "0000:3b:00.0";

    /// A sysfs tree with one function on vfio-pci in IOMMU group 5;
    /// `resource` lines are `start end flags` per BAR.
    fn tree(resource: &str) -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        let dir = r.join("sys/bus/pci/devices").join(BDF);
        std::fs::create_dir_all(&dir).unwrap();
        for (f, v) in [
            ("vendor", "0x10ee"),
            ("device", "0x903f"),
            ("class", "0x020000"),
        ] {
            std::fs::write(dir.join(f), format!("{v}\n")).unwrap();
        }
        std::fs::write(dir.join("driver_override"), "vfio-pci\n").unwrap();
        std::fs::write(dir.join("resource"), resource).unwrap();
        let drv = r.join("sys/bus/pci/drivers/vfio-pci");
        std::fs::create_dir_all(&drv).unwrap();
        std::os::unix::fs::symlink(&drv, dir.join("driver")).unwrap();
        let g = r.join("sys/kernel/iommu_groups/5");
        std::fs::create_dir_all(g.join("devices")).unwrap();
        std::os::unix::fs::symlink(&g, dir.join("iommu_group")).unwrap();
        std::os::unix::fs::symlink(&dir, g.join("devices").join(BDF)).unwrap();
        std::fs::create_dir_all(r.join("dev/vfio")).unwrap();
        std::fs::write(r.join("dev/vfio/vfio"), "").unwrap();
        t
    }

    /// BAR0 256 KiB (64-bit memory), BAR2 4 MiB (64-bit memory): an
    /// OpenNIC card's functions.
    const OPENNIC_RESOURCE: &str = "0x00000000f0000000 0x00000000f003ffff 0x0000000000140204
0x0000000000000000 0x0000000000000000 0x0000000000000000
0x00000000f0400000 0x00000000f07fffff 0x0000000000140204
";

    /// An opened function: the map at the window, BAR0's word 0.
    struct Fake {
        map: HashMap<u32, u32>,
        bar0_word0: u32,
        bar_reads: std::sync::Mutex<Vec<(u8, u64)>>,
    }

    impl Fake {
        fn weft(bar0_word0: u32) -> Self {
            let build = BuildInfo {
                board_id: 1,
                build_date: 1_700_000_000,
                git_hash: 0xabcd_0123,
                features: Features::CTRL,
            };
            let map = MAP
                .registers()
                .map(|(b, r)| (r.addr, MAP.reset_value(b, r, &build)))
                .collect();
            Self {
                map,
                bar0_word0,
                bar_reads: Default::default(),
            }
        }
        fn blank(bar0_word0: u32) -> Self {
            Self {
                map: HashMap::new(),
                ..Self::weft(bar0_word0)
            }
        }
    }

    impl Device for Fake {
        fn name(&self) -> String {
            format!("vfio:{BDF}")
        }
        fn bar_len(&self) -> u64 {
            0x1_0000
        }
        fn read32(&self, addr: u32) -> weft_driver::Result<u32> {
            // A card whose box holds no weft image reads all ones.
            Ok(*self
                .map
                .get(&addr)
                .unwrap_or(&if self.map.is_empty() { 0xffff_ffff } else { 0 }))
        }
        fn write32(&self, _addr: u32, _value: u32) -> weft_driver::Result<()> {
            panic!("probing never writes")
        }
        fn dma_alloc(&self, _len: usize) -> weft_driver::Result<Box<dyn DmaBuffer>> {
            Err(Error::Dma("no DMA in the probe double".into()))
        }
        fn wait_irq(&self, _vector: u32, _timeout: Duration) -> weft_driver::Result<bool> {
            Ok(false)
        }
    }

    impl ProbeDevice for Fake {
        fn window(&self) -> Window {
            Window::OPENNIC
        }
        fn read_bar32(&self, bar: u8, offset: u64) -> weft_driver::Result<u32> {
            self.bar_reads.lock().unwrap().push((bar, offset));
            assert_eq!((bar, offset), (0, 0));
            Ok(self.bar0_word0)
        }
    }

    fn probe_with(root: &Path, dev: weft_driver::Result<Fake>) -> Probe {
        let mut asked = None;
        let p = probe_on(&Sysfs::at(root), BDF, |bdf| {
            asked = Some(bdf.to_string());
            dev
        })
        .unwrap();
        assert_eq!(asked.as_deref(), Some(BDF));
        p
    }

    #[test]
    fn a_weft_card_is_identified_at_bar2_0x100000() {
        let t = tree(OPENNIC_RESOURCE);
        let p = probe_with(t.path(), Ok(Fake::weft(0x1fd3_0001)));
        assert!(p.usable, "{}", p.why);
        assert_eq!((p.window.bar, p.window.offset), (2, 0x10_0000));
        assert_eq!(p.window.bar_len, Some(4 << 20));
        assert!(p.window.fits);
        assert_eq!(p.window.magic, Some(weft_regs::MAGIC));
        assert!(
            p.bar0.is_none(),
            "BAR0 is read only when the ID block is not weft's"
        );
        let r = p.render();
        assert!(
            r.contains(&format!(
                "window       BAR2+0x100000 (64 KiB) (weft's map under the OpenNIC shell): ID.MAGIC reads {:#010x}, weft's",
                weft_regs::MAGIC
            )),
            "{r}"
        );
        assert!(r.contains("usable       yes"), "{r}");
        let j = serde_json::to_value(&p).unwrap();
        assert_eq!(j["window"]["offset"], 0x10_0000);
    }

    #[test]
    fn not_weft_at_the_window_says_what_it_read_and_looks_at_bar0() {
        let t = tree(OPENNIC_RESOURCE);
        // The OpenNIC shell without weft's plugin: QDMA on BAR0, all ones
        // in the box.
        let p = probe_with(t.path(), Ok(Fake::blank(0x1fd3_0001)));
        assert!(!p.usable);
        assert!(p.why.contains("not a weft card"), "{}", p.why);
        assert_eq!(p.window.magic, Some(0xffff_ffff));
        let q = p.bar0.as_ref().unwrap();
        assert_eq!((q.word0, q.qdma), (0x1fd3_0001, true));
        let r = p.render();
        assert!(
            r.contains(
                "(weft's map under the OpenNIC shell): ID.MAGIC reads 0xffffffff, not weft's"
            ),
            "{r}"
        );
        assert!(
            r.contains("BAR0 word 0  0x1fd30001: the QDMA IP's config block (bits 31:16 = 0x1fd3)"),
            "{r}"
        );
        // Some other device: BAR0 is not a QDMA IP's.
        let p = probe_with(t.path(), Ok(Fake::blank(0x0100_00ed)));
        assert!(!p.bar0.as_ref().unwrap().qdma);
        assert!(
            p.render().contains("not the QDMA IP's config block"),
            "{}",
            p.render()
        );
    }

    #[test]
    fn a_function_without_the_window_is_refused_and_bar0_is_not_read() {
        // QEMU's edu: BAR0 only, 1 MiB. The opener refuses (as VfioDevice
        // does), so nothing is read at all.
        let t = tree("0x00000000fe000000 0x00000000fe0fffff 0x0000000000040200\n");
        let refusal = Error::NoWindow {
            device: format!("vfio:{BDF}"),
            window: Window::OPENNIC,
            bar_len: None,
        };
        let p = probe_with(t.path(), Err(refusal));
        assert!(!p.usable);
        assert!(p.why.contains("BAR2 is not implemented"), "{}", p.why);
        assert_eq!(p.window.bar_len, None);
        assert!(!p.window.fits && p.window.magic.is_none() && p.bar0.is_none());
        let r = p.render();
        assert!(
            r.contains("window       BAR2+0x100000 (64 KiB) (weft's map under the OpenNIC shell): BAR2 is not implemented"),
            "{r}"
        );
    }
}
