//! `weft probe vfio:BDF`: what a PCI function is, whether weft can use it,
//! and why not.
//!
//! Everything the kernel says through sysfs is read without opening the
//! device (vendor, class, driver, IOMMU group, BARs, MSI/MSI-X vectors);
//! when the function is on vfio-pci and its group is viable, it is opened
//! and identified, so "usable" means the ID block and register map were
//! read and accepted.

use serde::Serialize;
use weft_driver::vfio::sysfs::{PciFunction, Sysfs};
use weft_driver::vfio::VfioDevice;

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

/// Probe `bdf` on this system.
pub fn probe(bdf: &str) -> weft_driver::Result<Probe> {
    probe_on(&Sysfs::system(), bdf, VfioDevice::open)
}

/// Probe through a given sysfs tree and opener (tests use doubles).
pub fn probe_on<D: weft_driver::Device>(
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
    match weft_driver::identify(&dev) {
        Ok(info) => {
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
        Err(e) => p.why = e.to_string(),
    }
    Ok(p)
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
