//! `weft probe` and `weft bind`: what a PCI function is and whether weft
//! can drive it; binding it to vfio-pci.

use crate::print_json;
use anyhow::{bail, Result};
use clap::Args;
use weft::DeviceSpec;

#[derive(Args)]
pub struct ProbeArgs {
    /// The function: vfio:DDDD:BB:DD.F (or the bare address).
    spec: String,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct BindArgs {
    /// The function's PCI address, DDDD:BB:DD.F.
    bdf: String,
    /// Do it without asking.
    #[arg(long)]
    yes: bool,
}

/// A PCI address from `vfio:BDF` or a bare `BDF`, checked.
fn bdf_of(spec: &str) -> Result<String> {
    let full = if spec.starts_with("vfio:") {
        spec.to_string()
    } else {
        format!("vfio:{spec}")
    };
    match full.parse::<DeviceSpec>()? {
        DeviceSpec::Vfio(bdf) => Ok(bdf),
        _ => bail!("{spec}: probe takes a PCI function (vfio:0000:3b:00.0)"),
    }
}

pub fn probe(a: ProbeArgs) -> Result<()> {
    let bdf = bdf_of(&a.spec)?;
    let p = weft::probe::probe(&bdf)?;
    if a.json {
        print_json(&p)
    } else {
        print!("{}", p.render());
        Ok(())
    }
}

pub fn bind(a: BindArgs) -> Result<()> {
    use weft_driver::vfio::sysfs::{is_root, Sysfs};
    let bdf = bdf_of(&a.bdf)?;
    let sysfs = Sysfs::system();
    let plan = sysfs.bind_plan(&bdf)?;
    let f = &plan.function;
    println!(
        "{bdf} ({:04x}:{:04x}, class {:06x}) is on {}; IOMMU group {}",
        f.vendor,
        f.device,
        f.class,
        f.driver.as_deref().unwrap_or("no driver"),
        f.iommu_group.map_or(
            "none (the IOMMU is off: VFIO will refuse it)".to_string(),
            |g| g.to_string()
        )
    );
    for b in &plan.group_blockers {
        println!(
            "note: {} in the same IOMMU group is on {}; VFIO opens the group only when it is on vfio-pci too (weft bind {})",
            b.bdf,
            b.driver.as_deref().unwrap_or("?"),
            b.bdf
        );
    }
    if plan.steps.is_empty() {
        println!("{bdf} is already bound to vfio-pci");
        return Ok(());
    }
    if f.iommu_group.is_none() {
        bail!("{bdf} has no IOMMU group: the IOMMU is off, so VFIO could not use it even bound; enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on or amd_iommu=on (nothing was changed)");
    }
    println!("weft bind will run:");
    for s in &plan.steps {
        println!("  {}", s.shell(&bdf));
    }
    if !is_root() {
        bail!("weft bind needs root to write sysfs: run it with sudo (nothing was changed)");
    }
    if !a.yes {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() {
            bail!("not asking on a non-terminal: pass --yes to bind {bdf} (nothing was changed)");
        }
        eprint!("bind {bdf} to vfio-pci? [y/N] ");
        let mut line = String::new();
        std::io::stdin().read_line(&mut line)?;
        if !matches!(line.trim(), "y" | "Y" | "yes") {
            bail!("not bound (answered {:?})", line.trim());
        }
    }
    sysfs.bind(&plan)?;
    println!("{bdf} is bound to vfio-pci; open it as --device vfio:{bdf}");
    Ok(())
}
