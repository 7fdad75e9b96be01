//! The `grad` block is defined but not on the card's chain yet: check it as
//! the map checks chained blocks, by placing it in a chain of its own.

use weft_regs::{grad, id, Map, MAP};

#[test]
fn grad_block_is_well_formed() {
    static BLOCKS: [weft_regs::Block; 2] = [id::BLOCK, grad::BLOCK];
    let m = Map {
        blocks: &BLOCKS,
        ..MAP
    };
    weft_regs::check(&m).unwrap();
    // It does not overlap any chained block, so it can join the chain later.
    for b in MAP.blocks {
        let (lo, hi) = (b.base, b.base + b.span);
        assert!(
            grad::BASE >= hi || grad::BASE + grad::BLOCK.span <= lo,
            "grad overlaps {}",
            b.name
        );
    }
}

#[test]
fn every_job_has_a_priority_field() {
    let mut seen = std::collections::HashSet::new();
    for j in 0..grad::JOBS {
        let (r, f) = grad::prio_of(j);
        assert_eq!(f.width as u32, grad::PRIO_BITS);
        assert!(seen.insert((r.addr, f.lsb)), "job {j} shares a field");
        assert_eq!(f.name, format!("JOB{j}"));
        assert_eq!(f.get(f.set(0, 0xff)), grad::PRIO_MAX as u32);
    }
}
