//! `weft status`, `weft regs` and `weft verify`: the card's identity, the
//! register map, and the self-check of the CSR block.

use crate::{open_card, print_json, spinner, DeviceArg, JsonArg};
use anyhow::Result;
use clap::Args;
use serde_json::json;
use weft::status::Status;
use weft::DeviceSpec;
use weft_regs::MAP;

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    device: DeviceArg,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct VerifyArgs {
    /// The card to identify first.
    #[command(flatten)]
    device: DeviceArg,
    /// Seed of the program and bus timing.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Transactions in the program.
    #[arg(long, default_value_t = 2000)]
    transactions: usize,
    /// Leave Verilator out (two witnesses only). Without Verilator
    /// installed it is left out anyway, with a note.
    #[arg(long)]
    no_verilator: bool,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// Open a card (a spinner shows Verilator build stages) and read its ID
/// block and register chain through the driver.
fn open_status(device: &DeviceSpec) -> Result<Status> {
    let card = open_card(device)?;
    Ok(Status::new(&card.name(), &card.identify()?))
}

pub fn status(a: StatusArgs) -> Result<()> {
    let st = open_status(&a.device.device)?;
    if a.json {
        print_json(&st)
    } else {
        print!("{}", st.render());
        Ok(())
    }
}

pub fn regs(a: JsonArg) -> Result<()> {
    if a.json {
        print!("{}", weft_regs::render::json(&MAP));
        return Ok(());
    }
    println!(
        "weft register map {}.{} ({} bytes, {} address bits)",
        MAP.version >> 16,
        MAP.version & 0xffff,
        MAP.span(),
        MAP.addr_bits
    );
    println!(
        "on an OpenNIC card: {}; no wstrb: every write is a whole 32-bit word",
        weft_regs::render::opennic_location()
    );
    for b in MAP.blocks {
        println!("\n{} @ {:#06x}: {}", b.name, b.base, b.doc);
        for r in b.regs {
            println!(
                "  {:#06x}  {:<12} {:<3}  {:<18} {}",
                r.addr,
                r.name,
                r.access.name(),
                weft_regs::render::value_text(&MAP, b, r),
                r.doc
            );
        }
    }
    Ok(())
}

pub fn verify(a: VerifyArgs) -> Result<()> {
    let verilator = !a.no_verilator && weft_sim::verilator::toolchain().is_ok();
    if !a.no_verilator && !verilator {
        eprintln!("note: Verilator not found; running the model and rust-hdl witnesses only (apt-get install verilator for the third)");
    }
    let st = open_status(&a.device.device)?;
    let pb = spinner();
    let progress = |stage: &str| pb.set_message(format!("Verilator: {stage}"));
    pb.set_message("running witnesses");
    let opts = weft::verify::VerifyOptions {
        seed: a.seed,
        transactions: a.transactions,
        verilator,
        progress: Some(&progress),
        ..Default::default()
    };
    let rep = weft::verify::verify_csr(&opts);
    pb.finish_and_clear();
    let rep = rep?;
    if a.json {
        return print_json(&json!({ "status": st, "self_check": rep }));
    }
    print!("{}", st.render());
    println!(
        "self-check of {}: {} transactions, seed {}",
        rep.block, rep.transactions, rep.seed
    );
    for w in &rep.witnesses {
        println!(
            "  {:<10} {:>8} cycles  hash {}  {:>12.0} cycles/s",
            w.witness, w.cycles, w.hash, w.cycles_per_second
        );
    }
    for c in &rep.checks {
        println!("  ok: {c}");
    }
    Ok(())
}
