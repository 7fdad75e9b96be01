//! QDMA queue contexts: the 256-bit records the indirect context engine
//! (`IND_CTXT_DATA`/`MASK`/`CMD`) stores per queue, and the fields the
//! driver sets in them.
//!
//! Field positions are bit offsets in the whole context (word `w`, bit `b`
//! is `32 * w + b`), for EQDMA (QDMA 4.0 as the OpenNIC shell builds it):
//! dma_ip_drivers `eqdma_soft_reg.h` (`SW_IND_CTXT_DATA_W*`,
//! `PREFETCH_CTXT_DATA_W*`, `CMPL_CTXT_DATA_W*`, `EQDMA_*FMAP*`) and
//! `eqdma_soft_access.c` (`eqdma_sw_context_write`,
//! `eqdma_pfetch_context_write`, `eqdma_cmpt_context_write`,
//! `eqdma_fmap_context_write`). The behavioural model in weft-sim decodes
//! contexts with these same fields; the bring-up trace test
//! (`host-lib/tests/qdma.rs`) checks the words the driver writes against
//! values worked out by hand from those sources.

use super::regs::CTXT_WORDS;

/// A field of a context: `width` bits from absolute bit `lo`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Field {
    /// Lowest bit, counting from word 0 bit 0.
    pub lo: u32,
    /// Width in bits (1..=64).
    pub width: u32,
}

const fn f(word: u32, bit: u32, width: u32) -> Field {
    Field {
        lo: 32 * word + bit,
        width,
    }
}

/// One context's words.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Context(pub [u32; CTXT_WORDS]);

impl Context {
    /// The field's value.
    pub fn get(&self, fl: Field) -> u64 {
        let mut v = 0u64;
        for i in 0..fl.width {
            let b = fl.lo + i;
            let bit = (self.0[(b / 32) as usize] >> (b % 32)) & 1;
            v |= (bit as u64) << i;
        }
        v
    }

    /// Set the field to `value` (bits past its width are dropped).
    pub fn set(&mut self, fl: Field, value: u64) -> &mut Self {
        for i in 0..fl.width {
            let b = fl.lo + i;
            let w = &mut self.0[(b / 32) as usize];
            let m = 1u32 << (b % 32);
            if (value >> i) & 1 == 1 {
                *w |= m;
            } else {
                *w &= !m;
            }
        }
        self
    }

    /// The field's bits set in a mask (for a masked write of just it).
    pub fn mask_of(fields: &[Field]) -> Context {
        let mut m = Context::default();
        for &fl in fields {
            m.set(fl, u64::MAX);
        }
        m
    }
}

/// Software descriptor context (`sel` 0 C2H, 1 H2C).
pub mod sw {
    use super::{f, Field};
    /// Producer index.
    pub const PIDX: Field = f(0, 0, 16);
    /// Arm the interrupt.
    pub const IRQ_ARM: Field = f(0, 16, 1);
    /// The function that owns the queue.
    pub const FNC: Field = f(0, 17, 12);
    /// Queue enabled.
    pub const QEN: Field = f(1, 0, 1);
    /// Fetch credits enabled (C2H: descriptors only as PIDX allows).
    pub const FCRD_EN: Field = f(1, 1, 1);
    /// Write back status on a consumer-index change.
    pub const WBI_CHK: Field = f(1, 2, 1);
    /// Write back status on the interval timer.
    pub const WBI_INTVL_EN: Field = f(1, 3, 1);
    /// Index into `GLBL_RNG_SZ`.
    pub const RNG_SZ: Field = f(1, 12, 4);
    /// Descriptor size: 0 = 8 B, 1 = 16 B, 2 = 32 B, 3 = 64 B.
    pub const DESC_SZ: Field = f(1, 16, 2);
    /// Descriptor bypass (the shell ties bypass off: must be 0).
    pub const BYPASS: Field = f(1, 18, 1);
    /// Status write-back enabled.
    pub const WBK_EN: Field = f(1, 20, 1);
    /// Interrupts enabled.
    pub const IRQ_EN: Field = f(1, 21, 1);
    /// Memory-mapped queue (the shell builds streaming only: must be 0).
    pub const IS_MM: Field = f(1, 31, 1);
    /// Ring base address (64 bits, words 2 and 3).
    pub const DSC_BASE: Field = f(2, 0, 64);
    /// MSI-X vector.
    pub const VEC: Field = f(4, 0, 11);
    /// Interrupt aggregation.
    pub const INT_AGGR: Field = f(4, 11, 1);
}

/// C2H prefetch context (`sel` 7).
pub mod pfch {
    use super::{f, Field};
    /// Descriptor bypass (must be 0 under the shell).
    pub const BYPASS: Field = f(0, 0, 1);
    /// Index into `C2H_BUF_SZ`.
    pub const BUFSZ_IDX: Field = f(0, 1, 4);
    /// Prefetch enabled.
    pub const PFCH_EN: Field = f(0, 27, 1);
    /// Context valid.
    pub const VALID: Field = f(1, 13, 1);
}

/// Completion context (`sel` 6).
pub mod cmpt {
    use super::{f, Field};
    /// Write the status descriptor.
    pub const EN_STAT_DESC: Field = f(0, 0, 1);
    /// Interrupts enabled.
    pub const EN_INT: Field = f(0, 1, 1);
    /// Trigger mode (`regs::trig`).
    pub const TRIG_MODE: Field = f(0, 2, 3);
    /// The function that owns the queue (EQDMA: 12 bits; QDMA 3.x and
    /// open-nic-driver's copy have 8, the same bits below function 256).
    pub const FNC: Field = f(0, 5, 12);
    /// Index into `C2H_CNT_TH`.
    pub const CNT_IDX: Field = f(0, 17, 4);
    /// Index into `C2H_TIMER_CNT`.
    pub const TMR_IDX: Field = f(0, 21, 4);
    /// The colour of the next entry (starts at 1).
    pub const COLOR: Field = f(0, 27, 1);
    /// Index into `GLBL_RNG_SZ`.
    pub const QSIZE_IDX: Field = f(0, 28, 4);
    /// Ring base address bits 63:6 (`baddr4_high_l` W1 = addr[37:6],
    /// `baddr4_high_h` W2[25:0] = addr[63:38]; addr[5:2] would be W5[17:14],
    /// zero for the 4 KiB-aligned rings the driver allocates).
    pub const BADDR_64: Field = f(1, 0, 58);
    /// Entry size: 0 = 8 B.
    pub const DESC_SZ: Field = f(2, 26, 2);
    /// Context valid.
    pub const VALID: Field = f(3, 28, 1);
    /// MSI-X vector.
    pub const VEC: Field = f(4, 0, 11);
}

/// Function map (`sel` 0xC; the queue field of the command is the function).
pub mod fmap {
    use super::{f, Field};
    /// The function's first absolute queue.
    pub const QBASE: Field = f(0, 0, 11);
    /// The function's number of queues.
    pub const QMAX: Field = f(1, 0, 12);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn fields_hold_their_values_and_nothing_else(v in any::<u64>(), lo in 0u32..200, width in 1u32..=56) {
            let fl = Field { lo, width };
            let mut c = Context::default();
            c.set(fl, v);
            let want = if width == 64 { v } else { v & ((1u64 << width) - 1) };
            prop_assert_eq!(c.get(fl), want);
            let bits: u32 = c.0.iter().map(|w| w.count_ones()).sum();
            prop_assert_eq!(bits, want.count_ones());
        }
    }

    #[test]
    fn an_address_spans_two_words() {
        let mut c = Context::default();
        c.set(sw::DSC_BASE, 0x1234_5678_9abc_d000);
        assert_eq!(c.0[2], 0x9abc_d000);
        assert_eq!(c.0[3], 0x1234_5678);
    }
}
