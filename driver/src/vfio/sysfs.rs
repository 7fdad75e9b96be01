//! What the kernel says about a PCI function through sysfs, and binding a
//! function to vfio-pci with `driver_override`.
//!
//! Everything here is plain file access under a root directory (`/` on a
//! real system), so tests run it against a fake tree in a temporary
//! directory. Paths and file formats are the kernel's ABI:
//! `Documentation/ABI/testing/sysfs-bus-pci` (`resource`, `config`,
//! `driver_override`, `drivers_probe`, `reset_method`) and
//! `Documentation/driver-api/vfio.rst` (binding, IOMMU groups).

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// PCI class of a PCI-to-PCI bridge (base 0x06, sub 0x04): bridges may stay
/// on their own driver (pcieport) inside a VFIO group; the kernel allows
/// any non-normal header type there (`vfio_dev_driver_allowed`).
const CLASS_PCI_BRIDGE: u32 = 0x0604;

/// The driver VFIO needs.
pub const VFIO_PCI: &str = "vfio-pci";

/// A view of sysfs (and `/dev/vfio`) under a root directory.
#[derive(Clone, Debug)]
pub struct Sysfs {
    root: PathBuf,
}

/// How a BAR decodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BarKind {
    /// 32-bit memory BAR.
    Mem32,
    /// 64-bit memory BAR.
    Mem64,
    /// I/O port BAR.
    Io,
}

/// One BAR as sysfs `resource` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarInfo {
    /// BAR index 0..=5.
    pub index: u8,
    /// Host physical (bus) address.
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// Memory or I/O, 32 or 64 bits.
    pub kind: BarKind,
    /// Prefetchable memory.
    pub prefetchable: bool,
}

/// A PCI function as sysfs describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciFunction {
    /// `DDDD:BB:DD.F`.
    pub bdf: String,
    /// Vendor id.
    pub vendor: u16,
    /// Device id.
    pub device: u16,
    /// Class code (24 bits: base, sub, programming interface).
    pub class: u32,
    /// The bound driver, if any.
    pub driver: Option<String>,
    /// `driver_override`, if set.
    pub driver_override: Option<String>,
    /// IOMMU group number; `None` when the kernel runs without an IOMMU.
    pub iommu_group: Option<u32>,
    /// Implemented BARs.
    pub bars: Vec<BarInfo>,
    /// MSI vectors the function can request (from its MSI capability).
    pub msi_vectors: Option<u32>,
    /// MSI-X table size (from its MSI-X capability).
    pub msix_vectors: Option<u32>,
    /// Reset methods the kernel will try (`reset_method`), if it says.
    pub reset_methods: Option<String>,
}

impl PciFunction {
    /// Whether the function is a PCI-to-PCI bridge.
    pub fn is_bridge(&self) -> bool {
        self.class >> 8 == CLASS_PCI_BRIDGE
    }
    /// Whether it is bound to vfio-pci.
    pub fn on_vfio(&self) -> bool {
        self.driver.as_deref() == Some(VFIO_PCI)
    }
}

impl BarKind {
    /// Short name: `mem32`, `mem64`, `io`.
    pub fn name(self) -> &'static str {
        match self {
            BarKind::Mem32 => "mem32",
            BarKind::Mem64 => "mem64",
            BarKind::Io => "io",
        }
    }
}

/// One step of binding a function to vfio-pci.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BindStep {
    /// Load the vfio-pci module (`modprobe vfio-pci`).
    LoadModule,
    /// Write `vfio-pci` to the function's `driver_override`.
    Override(PathBuf),
    /// Write the address to the current driver's `unbind`.
    Unbind(PathBuf, String),
    /// Write the address to `/sys/bus/pci/drivers_probe`.
    Probe(PathBuf),
}

impl BindStep {
    /// The step as a shell command a person could type.
    pub fn shell(&self, bdf: &str) -> String {
        match self {
            BindStep::LoadModule => "modprobe vfio-pci".into(),
            BindStep::Override(p) => format!("echo {VFIO_PCI} > {}", p.display()),
            BindStep::Unbind(p, driver) => {
                format!("echo {bdf} > {}   # release it from {driver}", p.display())
            }
            BindStep::Probe(p) => format!("echo {bdf} > {}", p.display()),
        }
    }
}

/// What `weft bind` will do, worked out before doing anything.
#[derive(Clone, Debug)]
pub struct BindPlan {
    /// The function.
    pub function: PciFunction,
    /// Steps in order; empty when it is already bound to vfio-pci.
    pub steps: Vec<BindStep>,
    /// Other functions of its IOMMU group that VFIO also needs on vfio-pci
    /// (or on no driver) before the group can be opened.
    pub group_blockers: Vec<PciFunction>,
}

/// Whether this process runs as root (binding writes root-only sysfs files).
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn parse_hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok()
}

fn link_name(p: &Path) -> Option<String> {
    let target = std::fs::read_link(p).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// Parse the `resource` file: one `start end flags` line per resource;
/// lines 0..=5 are the BARs (IORESOURCE_* flags from
/// include/linux/ioport.h).
fn parse_resource(text: &str) -> Vec<BarInfo> {
    const IO: u64 = 0x100;
    const MEM: u64 = 0x200;
    const PREFETCH: u64 = 0x2000;
    const MEM_64: u64 = 0x0010_0000;
    let mut bars = vec![];
    for (i, line) in text.lines().take(6).enumerate() {
        let f: Vec<u64> = line.split_whitespace().filter_map(parse_hex).collect();
        let [start, end, flags] = f[..] else { continue };
        if end == 0 || end < start || flags & (IO | MEM) == 0 {
            continue;
        }
        let kind = if flags & IO != 0 {
            BarKind::Io
        } else if flags & MEM_64 != 0 {
            BarKind::Mem64
        } else {
            BarKind::Mem32
        };
        bars.push(BarInfo {
            index: i as u8,
            start,
            len: end - start + 1,
            kind,
            prefetchable: flags & PREFETCH != 0,
        });
    }
    bars
}

/// Walk the capability list of a config-space image (PCI Local Bus 3.0,
/// 6.7): MSI is capability 0x05 (Multiple Message Capable in bits 3:1 of its
/// control word), MSI-X is 0x11 (table size - 1 in bits 10:0).
fn parse_caps(cfg: &[u8]) -> (Option<u32>, Option<u32>) {
    let rd8 = |o: usize| cfg.get(o).copied();
    let rd16 = |o: usize| Some(u16::from_le_bytes([*cfg.get(o)?, *cfg.get(o + 1)?]));
    let (mut msi, mut msix) = (None, None);
    // Status bit 4: capabilities list present.
    if rd16(0x06).unwrap_or(0) & 0x10 == 0 {
        return (None, None);
    }
    let mut ptr = rd8(0x34).unwrap_or(0) as usize & !3;
    // At most 48 capabilities fit in 192 bytes: stop a looping list.
    for _ in 0..48 {
        if ptr < 0x40 {
            break;
        }
        let (Some(id), Some(next)) = (rd8(ptr), rd8(ptr + 1)) else {
            break;
        };
        let ctl = rd16(ptr + 2).unwrap_or(0) as u32;
        match id {
            0x05 => msi = Some(1 << ((ctl >> 1) & 7).min(5)),
            0x11 => msix = Some((ctl & 0x7ff) + 1),
            _ => {}
        }
        ptr = next as usize & !3;
    }
    (msi, msix)
}

impl Sysfs {
    /// The running system (`/sys`, `/dev/vfio`).
    pub fn system() -> Self {
        Self::at("/")
    }

    /// A tree under `root` (tests build a fake one).
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `/sys/bus/pci/devices/<bdf>` under the root.
    pub fn device_dir(&self, bdf: &str) -> PathBuf {
        self.root.join("sys/bus/pci/devices").join(bdf)
    }

    /// The VFIO container device node.
    pub fn vfio_container_node(&self) -> PathBuf {
        self.root.join("dev/vfio/vfio")
    }

    /// Whether the kernel has an active IOMMU (it then populates
    /// `/sys/kernel/iommu_groups`).
    pub fn iommu_groups_exist(&self) -> bool {
        std::fs::read_dir(self.root.join("sys/kernel/iommu_groups"))
            .map(|mut d| d.next().is_some())
            .unwrap_or(false)
    }

    /// Whether the vfio-pci driver is loaded.
    pub fn vfio_pci_loaded(&self) -> bool {
        self.root
            .join("sys/bus/pci/drivers")
            .join(VFIO_PCI)
            .is_dir()
    }

    /// Describe the function at `bdf`.
    pub fn function(&self, bdf: &str) -> Result<PciFunction> {
        let dir = self.device_dir(bdf);
        if !dir.is_dir() {
            return Err(Error::NoSuchDevice { bdf: bdf.into() });
        }
        let id = |name: &str| read_trim(&dir.join(name)).and_then(|s| parse_hex(&s));
        let cfg = std::fs::read(dir.join("config")).unwrap_or_default();
        let (msi_vectors, msix_vectors) = parse_caps(&cfg);
        let over = read_trim(&dir.join("driver_override")).filter(|s| s != "(null)");
        Ok(PciFunction {
            bdf: bdf.into(),
            vendor: id("vendor").unwrap_or(0xffff) as u16,
            device: id("device").unwrap_or(0xffff) as u16,
            class: id("class").unwrap_or(0) as u32,
            driver: link_name(&dir.join("driver")),
            driver_override: over.filter(|s| !s.is_empty()),
            iommu_group: link_name(&dir.join("iommu_group")).and_then(|s| s.parse().ok()),
            bars: read_trim(&dir.join("resource"))
                .map(|t| parse_resource(&t))
                .unwrap_or_default(),
            msi_vectors,
            msix_vectors,
            reset_methods: read_trim(&dir.join("reset_method")),
        })
    }

    /// The functions in IOMMU group `group`, sorted.
    pub fn group_members(&self, group: u32) -> Result<Vec<String>> {
        let dir = self
            .root
            .join("sys/kernel/iommu_groups")
            .join(group.to_string())
            .join("devices");
        let rd = std::fs::read_dir(&dir).map_err(|e| Error::Os {
            device: format!("iommu group {group}"),
            what: format!("listing {}", dir.display()),
            source: e,
        })?;
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        Ok(v)
    }

    /// Check that `bdf` can be opened through VFIO: it exists, the IOMMU is
    /// on, it is bound to vfio-pci, and every other function of its group
    /// is on vfio-pci, on no driver, or a bridge. Returns the function, its
    /// group and the group's functions on vfio-pci (to open into one
    /// container).
    pub fn check_usable(&self, bdf: &str) -> Result<(PciFunction, u32, Vec<String>)> {
        let f = self.function(bdf)?;
        let Some(group) = f.iommu_group else {
            let why = if self.iommu_groups_exist() {
                "the device has no IOMMU group".to_string()
            } else {
                "the kernel created no IOMMU groups; enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on (Intel) or amd_iommu=on (AMD)".to_string()
            };
            return Err(Error::NoIommu {
                bdf: bdf.into(),
                why,
            });
        };
        if !f.on_vfio() {
            return Err(Error::NotBound {
                bdf: bdf.into(),
                driver: f.driver.clone(),
            });
        }
        if !self.vfio_container_node().exists() {
            return Err(Error::Unusable {
                device: format!("vfio:{bdf}"),
                why: format!(
                    "{} is missing: load the vfio modules (modprobe vfio-pci)",
                    self.vfio_container_node().display()
                ),
            });
        }
        let mut open = vec![];
        let mut blockers = vec![];
        for m in self.group_members(group)? {
            let mf = self.function(&m)?;
            if mf.on_vfio() {
                open.push(m);
            } else if mf.driver.is_some() && !mf.is_bridge() {
                blockers.push(format!("{m} (on {})", mf.driver.as_deref().unwrap_or("?")));
            }
        }
        if !blockers.is_empty() {
            return Err(Error::Unusable {
                device: format!("vfio:{bdf}"),
                why: format!(
                    "IOMMU group {group} also holds {}; VFIO opens a group only when every function in it is on vfio-pci (or on no driver): bind them too (weft bind <address>)",
                    blockers.join(", ")
                ),
            });
        }
        Ok((f, group, open))
    }

    /// Work out how to bind `bdf` to vfio-pci, without changing anything.
    pub fn bind_plan(&self, bdf: &str) -> Result<BindPlan> {
        let function = self.function(bdf)?;
        let mut steps = vec![];
        if !function.on_vfio() {
            if !self.vfio_pci_loaded() {
                steps.push(BindStep::LoadModule);
            }
            let dir = self.device_dir(bdf);
            steps.push(BindStep::Override(dir.join("driver_override")));
            if let Some(d) = &function.driver {
                steps.push(BindStep::Unbind(dir.join("driver/unbind"), d.clone()));
            }
            steps.push(BindStep::Probe(self.root.join("sys/bus/pci/drivers_probe")));
        }
        let mut group_blockers = vec![];
        if let Some(g) = function.iommu_group {
            for m in self.group_members(g)? {
                if m == bdf {
                    continue;
                }
                let mf = self.function(&m)?;
                if !mf.on_vfio() && mf.driver.is_some() && !mf.is_bridge() {
                    group_blockers.push(mf);
                }
            }
        }
        Ok(BindPlan {
            function,
            steps,
            group_blockers,
        })
    }

    /// Carry out a plan from [`Sysfs::bind_plan`], then check the result.
    pub fn bind(&self, plan: &BindPlan) -> Result<()> {
        let bdf = plan.function.bdf.as_str();
        let os = |what: String, source: std::io::Error| Error::Os {
            device: format!("pci:{bdf}"),
            what,
            source,
        };
        for s in &plan.steps {
            match s {
                BindStep::LoadModule => {
                    let st = std::process::Command::new("modprobe")
                        .arg(VFIO_PCI)
                        .status()
                        .map_err(|e| os("running modprobe vfio-pci".into(), e))?;
                    if !st.success() {
                        return Err(Error::Unusable {
                            device: format!("pci:{bdf}"),
                            why: format!("modprobe vfio-pci failed ({st})"),
                        });
                    }
                }
                BindStep::Override(p) => std::fs::write(p, VFIO_PCI)
                    .map_err(|e| os(format!("writing {}", p.display()), e))?,
                BindStep::Unbind(p, _) | BindStep::Probe(p) => {
                    std::fs::write(p, bdf).map_err(|e| os(format!("writing {}", p.display()), e))?
                }
            }
        }
        let now = self.function(bdf)?;
        if !now.on_vfio() {
            return Err(Error::NotBound {
                bdf: bdf.into(),
                driver: now.driver,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! A fake sysfs tree for tests.
    use std::path::Path;

    /// One function of the fake tree.
    pub struct FakeFn<'a> {
        pub bdf: &'a str,
        pub vendor: u16,
        pub device: u16,
        pub class: u32,
        pub driver: Option<&'a str>,
        pub group: Option<u32>,
    }

    /// Add a function (and its driver and group links) under `root`.
    pub fn add(root: &Path, f: &FakeFn) {
        let dir = root.join("sys/bus/pci/devices").join(f.bdf);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), format!("0x{:04x}\n", f.vendor)).unwrap();
        std::fs::write(dir.join("device"), format!("0x{:04x}\n", f.device)).unwrap();
        std::fs::write(dir.join("class"), format!("0x{:06x}\n", f.class)).unwrap();
        std::fs::write(dir.join("driver_override"), "(null)\n").unwrap();
        // BAR0: 64 KiB 64-bit memory; BAR2: I/O; the rest unused.
        let res = "0x00000000fe000000 0x00000000fe00ffff 0x0000000000140204\n\
                   0x0000000000000000 0x0000000000000000 0x0000000000000000\n\
                   0x000000000000c000 0x000000000000c01f 0x0000000000040101\n";
        std::fs::write(dir.join("resource"), res).unwrap();
        // Config space: status has a capability list at 0x40: MSI-X with
        // 5 vectors, then MSI with 4.
        let mut cfg = vec![0u8; 256];
        cfg[0x06] = 0x10;
        cfg[0x34] = 0x40;
        cfg[0x40] = 0x11;
        cfg[0x41] = 0x50;
        cfg[0x42] = 4;
        cfg[0x50] = 0x05;
        cfg[0x51] = 0;
        cfg[0x52] = 2 << 1;
        std::fs::write(dir.join("config"), cfg).unwrap();
        if let Some(d) = f.driver {
            let ddir = root.join("sys/bus/pci/drivers").join(d);
            std::fs::create_dir_all(&ddir).unwrap();
            let _ = std::os::unix::fs::symlink(&ddir, dir.join("driver"));
        }
        if let Some(g) = f.group {
            let gdir = root.join("sys/kernel/iommu_groups").join(g.to_string());
            std::fs::create_dir_all(gdir.join("devices")).unwrap();
            let _ = std::os::unix::fs::symlink(&gdir, dir.join("iommu_group"));
            let _ = std::os::unix::fs::symlink(&dir, gdir.join("devices").join(f.bdf));
        }
    }

    /// `/dev/vfio/vfio` in the fake tree.
    pub fn add_vfio_node(root: &Path) {
        std::fs::create_dir_all(root.join("dev/vfio")).unwrap();
        std::fs::write(root.join("dev/vfio/vfio"), "").unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::fake::*;
    use super::*;

    fn tree() -> tempfile::TempDir {
        let t = tempfile::tempdir().unwrap();
        add_vfio_node(t.path());
        let fns = [
            FakeFn {
                bdf: "0000:3b:00.0",
                vendor: 0x10ee,
                device: 0x903f,
                class: 0x020000,
                driver: Some("vfio-pci"),
                group: Some(7),
            },
            FakeFn {
                bdf: "0000:3b:00.1",
                vendor: 0x10ee,
                device: 0x913f,
                class: 0x020000,
                driver: Some("xdma"),
                group: Some(7),
            },
            FakeFn {
                bdf: "0000:00:01.0",
                vendor: 0x8086,
                device: 0x1234,
                class: 0x060400,
                driver: Some("pcieport"),
                group: Some(7),
            },
            FakeFn {
                bdf: "0000:00:03.0",
                vendor: 0x8086,
                device: 0x10d3,
                class: 0x020000,
                driver: Some("e1000e"),
                group: Some(8),
            },
            FakeFn {
                bdf: "0000:00:04.0",
                vendor: 0x1234,
                device: 0x11e8,
                class: 0x00ff00,
                driver: None,
                group: None,
            },
        ];
        for f in &fns {
            add(t.path(), f);
        }
        t
    }

    #[test]
    fn reads_a_function() {
        let t = tree();
        let s = Sysfs::at(t.path());
        let f = s.function("0000:3b:00.0").unwrap();
        assert_eq!((f.vendor, f.device, f.class), (0x10ee, 0x903f, 0x020000));
        assert_eq!(f.driver.as_deref(), Some("vfio-pci"));
        assert_eq!(f.iommu_group, Some(7));
        assert_eq!(f.driver_override, None);
        assert_eq!(f.bars.len(), 2);
        assert_eq!(f.bars[0].len, 0x1_0000);
        assert_eq!(f.bars[0].kind, BarKind::Mem64);
        assert_eq!(f.bars[1].kind, BarKind::Io);
        assert_eq!((f.msix_vectors, f.msi_vectors), (Some(5), Some(4)));
        assert!(s.function("0000:00:1f.7").is_err());
        assert!(s.function("0000:00:01.0").unwrap().is_bridge());
    }

    #[test]
    fn refusals_say_why_and_how() {
        let t = tree();
        let s = Sysfs::at(t.path());
        // Another function of the group is on a host driver.
        let e = s.check_usable("0000:3b:00.0").unwrap_err().to_string();
        assert!(e.contains("0000:3b:00.1 (on xdma)"), "{e}");
        assert!(!e.contains("0000:00:01.0"), "bridges are allowed: {e}");
        // Not bound: say how to bind.
        let e = s.check_usable("0000:00:03.0").unwrap_err().to_string();
        assert!(e.contains("not bound to vfio-pci (driver: e1000e)"), "{e}");
        assert!(e.contains("weft bind 0000:00:03.0"), "{e}");
        assert!(e.contains("driver_override"), "{e}");
        // No IOMMU group.
        let e = s.check_usable("0000:00:04.0").unwrap_err();
        assert!(matches!(e, Error::NoIommu { .. }), "{e}");
        let e = s.check_usable("0000:99:00.0").unwrap_err();
        assert!(matches!(e, Error::NoSuchDevice { .. }), "{e}");
    }

    #[test]
    fn a_viable_group_opens_its_vfio_functions() {
        let t = tree();
        let s = Sysfs::at(t.path());
        // Move the xdma function onto vfio-pci: the group becomes viable.
        let dir = t.path().join("sys/bus/pci/devices/0000:3b:00.1");
        std::fs::remove_file(dir.join("driver")).unwrap();
        let v = t.path().join("sys/bus/pci/drivers/vfio-pci");
        std::os::unix::fs::symlink(&v, dir.join("driver")).unwrap();
        let (f, g, open) = s.check_usable("0000:3b:00.0").unwrap();
        assert_eq!((f.bdf.as_str(), g), ("0000:3b:00.0", 7));
        assert_eq!(open, ["0000:3b:00.0", "0000:3b:00.1"]);
    }

    #[test]
    fn bind_plan_and_bind() {
        let t = tree();
        let s = Sysfs::at(t.path());
        let plan = s.bind_plan("0000:00:03.0").unwrap();
        let shell: Vec<_> = plan.steps.iter().map(|x| x.shell("0000:00:03.0")).collect();
        assert_eq!(shell.len(), 3, "{shell:?}");
        assert!(shell[0].starts_with("echo vfio-pci > "));
        assert!(shell[1].contains("driver/unbind"));
        assert!(shell[2].ends_with("drivers_probe"));
        assert!(plan.group_blockers.is_empty());
        // In the fake tree nothing rebinds the function, so bind reports
        // that it is still not on vfio-pci after writing the files.
        std::fs::write(t.path().join("sys/bus/pci/drivers_probe"), "").unwrap();
        std::fs::create_dir_all(t.path().join("sys/bus/pci/drivers/e1000e")).unwrap();
        std::fs::write(t.path().join("sys/bus/pci/drivers/e1000e/unbind"), "").unwrap();
        let e = s.bind(&plan).unwrap_err();
        assert!(matches!(e, Error::NotBound { .. }), "{e}");
        let over = std::fs::read_to_string(
            t.path()
                .join("sys/bus/pci/devices/0000:00:03.0/driver_override"),
        )
        .unwrap();
        assert_eq!(over, "vfio-pci");
        // Already bound: nothing to do.
        assert!(s.bind_plan("0000:3b:00.0").unwrap().steps.is_empty());
        assert_eq!(
            s.bind_plan("0000:3b:00.0").unwrap().group_blockers[0].bdf,
            "0000:3b:00.1"
        );
    }
}
