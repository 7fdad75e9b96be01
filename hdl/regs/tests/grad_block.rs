//! The `grad` block: well formed on its own and on the card's chain.

use weft_regs::{grad, id, Map, MAP};

#[test]
fn grad_block_is_well_formed() {
    static BLOCKS: [weft_regs::Block; 2] = [id::BLOCK, grad::BLOCK];
    let m = Map {
        blocks: &BLOCKS,
        ..MAP
    };
    weft_regs::check(&m).unwrap();
    assert!(MAP.blocks.iter().any(|b| b.name == "grad"));
    weft_regs::check(&MAP).unwrap();
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
