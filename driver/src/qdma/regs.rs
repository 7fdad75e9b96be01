//! QDMA (EQDMA soft IP, QDMA 4.0 as the OpenNIC shell builds it) register
//! offsets and fields the driver uses, and the OpenNIC shell's own
//! registers on BAR2.
//!
//! Sources, so each constant can be checked: AMD PG302 (QDMA Subsystem for
//! PCI Express, "Register Space"); Xilinx/dma_ip_drivers
//! `QDMA/linux-kernel/driver/libqdma/qdma_access/eqdma_soft_access/eqdma_soft_reg.h`
//! (`EQDMA_*` offsets and masks) and `qdma_access/qdma_reg_dump.h`;
//! Xilinx/open-nic-driver `qdma_access/qdma_register.h`, `onic_hardware.c`,
//! `onic_qdma.c`; Xilinx/open-nic-shell
//! `src/system_config/system_config_address_map.sv`,
//! `src/qdma_subsystem/qdma_subsystem_function.sv`. `../shared/design/QDMA-NOTES.md`
//! collects them.

/// A bit field of a 32-bit register: `width` bits from bit `lo`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bits {
    /// Lowest bit.
    pub lo: u32,
    /// Width in bits (1..=32).
    pub width: u32,
}

impl Bits {
    /// `width` bits from `lo`.
    pub const fn new(lo: u32, width: u32) -> Self {
        Self { lo, width }
    }
    const fn mask(self) -> u32 {
        if self.width >= 32 {
            u32::MAX
        } else {
            (1 << self.width) - 1
        }
    }
    /// The field's value in `word`.
    pub const fn get(self, word: u32) -> u32 {
        (word >> self.lo) & self.mask()
    }
    /// `value` placed in the field (bits past the width are dropped).
    pub const fn put(self, value: u32) -> u32 {
        (value & self.mask()) << self.lo
    }
}

// ---- BAR0: the QDMA IP ----------------------------------------------------

/// `QDMA_CONFIG_BLOCK_ID` (PG302): `[31:16]` reads [`CONFIG_ID`] on every
/// QDMA; open-nic-dpdk's PMD checks it before anything else.
pub const CONFIG_BLOCK_ID: u32 = 0x0;
/// The identifier in `CONFIG_BLOCK_ID[31:16]`.
pub const CONFIG_ID: u32 = 0x1fd3;
/// `GLBL2_PF_BARLITE_EXT`: which BARs the AXI4-Lite (shell) space is on,
/// 6 bits per PF (`[5:0]` PF0).
pub const GLBL2_PF_BARLITE_EXT: u32 = 0x10C;
/// `GLBL2_CHANNEL_MDMA`: which engines the IP was built with.
pub const GLBL2_CHANNEL_MDMA: u32 = 0x118;
/// `GLBL2_CHANNEL_MDMA` bit: the H2C streaming engine.
pub const MDMA_H2C_ST: Bits = Bits::new(16, 1);
/// `GLBL2_CHANNEL_MDMA` bit: the C2H streaming engine.
pub const MDMA_C2H_ST: Bits = Bits::new(17, 1);
/// `GLBL2_CHANNEL_QDMA_CAP`: `[11:0]` the most queues the IP has.
pub const GLBL2_CHANNEL_QDMA_CAP: u32 = 0x120;
/// `GLBL2_CHANNEL_QDMA_CAP` field: queue count.
pub const QDMA_CAP_MULTIQ_MAX: Bits = Bits::new(0, 12);
/// `GLBL2_MISC_CAP`: IP type and version (`qdma_get_version`).
pub const GLBL2_MISC_CAP: u32 = 0x134;
/// `GLBL2_MISC_CAP` field: device type (0 = soft IP, 1/2 = Versal CPM4/5;
/// `qdma_fetch_version_details`).
pub const MISC_CAP_DEVICE_TYPE: Bits = Bits::new(28, 4);
/// `GLBL2_MISC_CAP` field: the soft IP's kind: 0 = QDMA 3.1, 1 = EQDMA
/// (QDMA 4.0), 2 = EQDMA (QDMA 5.0) (`EQDMA_GLBL2_IP_VERSION_MASK`).
pub const MISC_CAP_IP_TYPE: Bits = Bits::new(20, 4);

/// `GLBL_RNG_SZ_1`..`_16`: the 16 ring sizes a context's `rng_sz` indexes.
/// A value counts the status slot too: a ring of `n` entries holds `n - 1`
/// descriptors and indices wrap at `n - 1`.
pub const GLBL_RNG_SZ: u32 = 0x204;
/// `GLBL_DSC_CFG`: `max_dsc_fetch[5:3]`, `wb_acc_int[2:0]`.
pub const GLBL_DSC_CFG: u32 = 0x250;
/// `C2H_TIMER_CNT_1`..`_16`: completion timer values (`tmr_idx`).
pub const C2H_TIMER_CNT: u32 = 0xA00;
/// `C2H_CNT_TH_1`..`_16`: completion count thresholds (`cnt_idx`).
pub const C2H_CNT_TH: u32 = 0xA40;
/// `C2H_BUF_SZ_0`..`_15`: the C2H buffer sizes a prefetch context's
/// `bufsz_idx` indexes.
pub const C2H_BUF_SZ: u32 = 0xAB0;
/// `C2H_INT_TIMER_TICK`: timer tick in `axis_aclk` cycles.
pub const C2H_INT_TIMER_TICK: u32 = 0xB0C;

/// `IND_CTXT_DATA_0`..`_7`: the context word written or read.
pub const IND_CTXT_DATA: u32 = 0x804;
/// `IND_CTXT_MASK_0`..`_7`: which bits of the data a write changes.
pub const IND_CTXT_MASK: u32 = 0x824;
/// `IND_CTXT_CMD`: starts a context access; `busy` clears when done.
pub const IND_CTXT_CMD: u32 = 0x844;
/// Context words (EQDMA: eight).
pub const CTXT_WORDS: usize = 8;
/// `IND_CTXT_CMD` field: busy (read).
pub const CMD_BUSY: Bits = Bits::new(0, 1);
/// `IND_CTXT_CMD` field: which context ([`Sel`]).
pub const CMD_SEL: Bits = Bits::new(1, 4);
/// `IND_CTXT_CMD` field: the operation ([`Op`]).
pub const CMD_OP: Bits = Bits::new(5, 2);
/// `IND_CTXT_CMD` field: the absolute queue (or, for the FMAP, function).
pub const CMD_QID: Bits = Bits::new(7, 13);

/// Context selectors of `IND_CTXT_CMD.sel` (`enum ind_ctxt_cmd_sel`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u32)]
pub enum Sel {
    /// Software descriptor context, C2H.
    SwC2h = 0,
    /// Software descriptor context, H2C.
    SwH2c = 1,
    /// Hardware descriptor context, C2H.
    HwC2h = 2,
    /// Hardware descriptor context, H2C.
    HwH2c = 3,
    /// Credit context, C2H.
    CrC2h = 4,
    /// Credit context, H2C.
    CrH2c = 5,
    /// Completion (CMPT) context.
    Cmpt = 6,
    /// C2H prefetch context.
    Pfch = 7,
    /// Interrupt coalescing context.
    IntCoal = 8,
    /// Timer context.
    Timer = 0xB,
    /// Function map (queue base and count of a function).
    Fmap = 0xC,
}

impl Sel {
    /// Every selector, by code.
    pub const ALL: [Sel; 11] = [
        Sel::SwC2h,
        Sel::SwH2c,
        Sel::HwC2h,
        Sel::HwH2c,
        Sel::CrC2h,
        Sel::CrH2c,
        Sel::Cmpt,
        Sel::Pfch,
        Sel::IntCoal,
        Sel::Timer,
        Sel::Fmap,
    ];
    /// The selector with code `v`.
    pub fn from_code(v: u32) -> Option<Sel> {
        Sel::ALL.into_iter().find(|s| *s as u32 == v)
    }
}

/// Operations of `IND_CTXT_CMD.op` (`enum ind_ctxt_cmd_op`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Op {
    /// Zero the context.
    Clear = 0,
    /// Write DATA under MASK.
    Write = 1,
    /// Read into DATA.
    Read = 2,
    /// Drop cached copies (the context stays).
    Invalidate = 3,
}

/// The queue-space doorbells, per function-relative queue `q` at
/// `QUEUE_SPACE + QUEUE_STRIDE * q` (PF map, `QDMA_OFFSET_DMAP_SEL_*`).
pub const QUEUE_SPACE: u32 = 0x18000;
/// Bytes between one queue's doorbells and the next's.
pub const QUEUE_STRIDE: u32 = 0x10;
/// `DMAP_SEL_INT_CIDX`: interrupt ring consumer index.
pub const DB_INT_CIDX: u32 = 0x0;
/// `DMAP_SEL_H2C_DSC_PIDX`: `pidx[15:0]`, `irq_arm[16]`.
pub const DB_H2C_PIDX: u32 = 0x4;
/// `DMAP_SEL_C2H_DSC_PIDX`: `pidx[15:0]`, `irq_arm[16]`.
pub const DB_C2H_PIDX: u32 = 0x8;
/// `DMAP_SEL_CMPT_CIDX`: `cidx[15:0]` and the fields below.
pub const DB_CMPT_CIDX: u32 = 0xC;
/// Doorbell field: producer or consumer index.
pub const DB_IDX: Bits = Bits::new(0, 16);
/// PIDX doorbell field: arm the queue's interrupt.
pub const DB_PIDX_IRQ_ARM: Bits = Bits::new(16, 1);
/// CMPT CIDX doorbell field: counter threshold index.
pub const DB_CMPT_CNT_IDX: Bits = Bits::new(16, 4);
/// CMPT CIDX doorbell field: timer index.
pub const DB_CMPT_TMR_IDX: Bits = Bits::new(20, 4);
/// CMPT CIDX doorbell field: trigger mode.
pub const DB_CMPT_TRIG: Bits = Bits::new(24, 3);
/// CMPT CIDX doorbell field: write the status descriptor.
pub const DB_CMPT_STAT_EN: Bits = Bits::new(27, 1);
/// CMPT CIDX doorbell field: arm the interrupt.
pub const DB_CMPT_IRQ_ARM: Bits = Bits::new(28, 1);

/// Completion trigger modes (`cmpt` context `trig_mode`, CMPT CIDX `trig`).
pub mod trig {
    /// Never (status only when software asks).
    pub const DISABLE: u32 = 0;
    /// After every completion entry.
    pub const EVERY: u32 = 1;
    /// After `cnt_idx` entries.
    pub const USER_COUNT: u32 = 2;
    /// When the user logic says.
    pub const USER: u32 = 3;
    /// After `tmr_idx` ticks.
    pub const USER_TIMER: u32 = 4;
    /// Timer or count, whichever first (onic's choice).
    pub const USER_TIMER_COUNT: u32 = 5;
}

/// Address of queue `q`'s doorbell `db` (a `DB_*` offset) in BAR0.
pub const fn doorbell(q: u32, db: u32) -> u32 {
    QUEUE_SPACE + QUEUE_STRIDE * q + db
}

// ---- BAR2: the OpenNIC shell --------------------------------------------

/// The shell's register block of QDMA function `f` on BAR2
/// (`system_config_address_map.sv`: 0x1000 + 0x1000 * f, four functions).
pub const fn shell_function(f: u32) -> u32 {
    0x1000 + 0x1000 * f
}
/// Functions the shell has register blocks for.
pub const SHELL_FUNCTIONS: u32 = 4;
/// Offset of QCONF in a function's block: `qbase[31:16] | numq[15:0]`;
/// H2C packets of a queue outside it stall the shared H2C stream.
pub const SHELL_QCONF: u32 = 0x0;
/// QCONF field: the function's number of queues.
pub const QCONF_NUMQ: Bits = Bits::new(0, 16);
/// QCONF field: the function's first absolute queue.
pub const QCONF_QBASE: Bits = Bits::new(16, 16);
/// Offset of the 128-entry receive indirection table in a function's block
/// (one 32-bit word each: the function-relative queue for that hash).
pub const SHELL_INDIR: u32 = 0x400;
/// Entries of the indirection table (the hash's low 7 bits index it).
pub const INDIR_ENTRIES: u32 = 128;
/// Offset of the 40-byte Toeplitz key in a function's block (ten words).
pub const SHELL_HASH_KEY: u32 = 0x600;
/// Bytes of the Toeplitz key.
pub const HASH_KEY_BYTES: usize = 40;

/// The shell's reset register (`SYSCFG_OFFSET_SHELL_RESET`): writing a
/// bit resets that part of the shell (0x10: CMAC 0's subsystem).
pub const SHELL_RESET: u32 = 0xC;
/// The shell's reset status (`SYSCFG_OFFSET_SHELL_STATUS`): the bit is set
/// when the reset is done.
pub const SHELL_STATUS: u32 = 0x10;
/// CMAC 0's bit in [`SHELL_RESET`] and [`SHELL_STATUS`].
pub const SHELL_CMAC0: u32 = 0x10;
/// CMAC 0's register block on BAR2.
pub const CMAC0: u32 = 0x8000;
/// CMAC `CORE_VERSION` (`CMAC_OFFSET_CORE_VERSION`).
pub const CMAC_CORE_VERSION: u32 = 0x0024;
/// What [`CMAC_CORE_VERSION`] reads on the shell's CMAC (`ONIC_CMAC_CORE_VERSION`).
pub const CMAC_VERSION: u32 = 0x0000_0301;
/// RS-FEC enable (`CMAC_OFFSET_RSFEC_CONF_ENABLE`, relative to the CMAC).
pub const CMAC_RSFEC_ENABLE: u32 = 0x107C;
/// RS-FEC indication and correction (`CMAC_OFFSET_RSFEC_CONF_IND_CORRECTION`).
pub const CMAC_RSFEC_IND_CORRECTION: u32 = 0x1000;
/// The flow-control registers `onic_enable_cmac` sets after the enables,
/// with their values: `RX_FC_CTRL_1`/`_2`, `TX_FC_QNTA_1..5`,
/// `TX_FC_RFRH_1..5`, `TX_FC_CTRL_1`.
pub const CMAC_FLOW_CONTROL: [(u32, u32); 13] = [
    (0x84, 0x3DFF),
    (0x88, 0x1_C631),
    (0x48, 0xFFFF_FFFF),
    (0x4C, 0xFFFF_FFFF),
    (0x50, 0xFFFF_FFFF),
    (0x54, 0xFFFF_FFFF),
    (0x58, 0xFFFF),
    (0x34, 0xFFFF_FFFF),
    (0x38, 0xFFFF_FFFF),
    (0x3C, 0xFFFF_FFFF),
    (0x40, 0xFFFF_FFFF),
    (0x44, 0xFFFF),
    (0x30, 0x1FF),
];
/// CMAC `CONFIGURATION_TX_REG1` (`ctl_tx_enable[0]`; PG203, the shell's
/// README: `0x800C <- 1`).
pub const CMAC_TX_REG1: u32 = 0x000C;
/// CMAC `CONFIGURATION_RX_REG1` (`ctl_rx_enable[0]`; `0x8014 <- 1`).
pub const CMAC_RX_REG1: u32 = 0x0014;

/// The Toeplitz key the driver gives the shell: the one Microsoft's RSS
/// specification publishes with its verification vectors ("Verifying the
/// RSS Hash Calculation"), so a hash can be checked by hand.
pub const RSS_KEY: [u8; HASH_KEY_BYTES] = [
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0,
    0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30, 0xf2, 0x0c,
    0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_round_trip_and_doorbells_stride() {
        assert_eq!(CMD_QID.put(5) | CMD_SEL.put(Sel::Fmap as u32), 0x280 | 0x18);
        assert_eq!(CMD_QID.get(CMD_QID.put(0x1fff)), 0x1fff);
        assert_eq!(doorbell(0, DB_H2C_PIDX), 0x18004);
        assert_eq!(doorbell(3, DB_CMPT_CIDX), 0x1803C);
        assert_eq!(Sel::from_code(0xC), Some(Sel::Fmap));
        assert_eq!(Sel::from_code(9), None);
        assert_eq!(shell_function(1) + SHELL_QCONF, 0x2000);
    }
}
