//! The register map itself. Edit here, and only here: the RTL decode, the
//! driver, `docs/registers.md`, `docs/registers.json` and `docs/weft_regs.h`
//! all follow (run `WEFT_BLESS=1 cargo test -p weft-regs` to re-render the
//! committed artifacts).

use crate::{Access, Block, BuildField, Field, Map, Register, Value};

/// Register-map major version: bumped when a register moves or changes meaning.
pub const MAP_VERSION_MAJOR: u32 = 2;
/// Register-map minor version: bumped when registers or blocks are added.
pub const MAP_VERSION_MINOR: u32 = 0;
/// The `ID.MAGIC` value: ASCII "WEFT".
pub const MAGIC: u32 = 0x5745_4654;

/// Header type words of the blocks.
pub mod block_type {
    /// The ID block.
    pub const ID: u32 = 0x5746_0001;
    /// The control block.
    pub const CTRL: u32 = 0x5746_0002;
    /// The key-value aggregation engine.
    pub const KV_AGG: u32 = 0x5746_0003;
    /// The MemOps switch port.
    pub const MEMOPS: u32 = 0x5746_0004;
    /// Retired: weft's own host queue engine (its block left map 2.0; the
    /// shell's QDMA moves frames).
    pub const QUEUE: u32 = 0x5746_0005;
    /// The gradient aggregation engine.
    pub const GRAD_AGG: u32 = 0x5746_0006;
    /// Accelerator Virtual Memory: the shared on-chip pool.
    pub const AVM: u32 = 0x5746_0007;
    /// The card on the wire: its addresses, where it sends, its frame counters.
    pub const NET: u32 = 0x5746_0008;
}

/// Board ids carried in `ID.BOARD_ID`.
pub mod board {
    /// The simulated card (weft-sim).
    pub const SIM: u32 = 0;
    /// AMD Alveo U55C.
    pub const U55C: u32 = 1;
    /// AMD Alveo U280.
    pub const U280: u32 = 2;
    /// AMD Alveo U250.
    pub const U250: u32 = 3;
    /// AMD Alveo U50.
    pub const U50: u32 = 4;
    /// AMD Alveo U200.
    pub const U200: u32 = 5;

    /// A board id's name, if it is known.
    pub const fn name(id: u32) -> Option<&'static str> {
        Some(match id {
            SIM => "sim",
            U55C => "u55c",
            U280 => "u280",
            U250 => "u250",
            U50 => "u50",
            U200 => "u200",
            _ => return None,
        })
    }
}

const fn header(base: u32) -> [Register; 3] {
    [
        Register {
            name: "BLK_TYPE",
            addr: base,
            access: Access::Ro,
            value: Value::HeaderType,
            fields: &[],
            doc: "Block header: what this block is",
        },
        Register {
            name: "BLK_VERSION",
            addr: base + 0x4,
            access: Access::Ro,
            value: Value::HeaderVersion,
            fields: &[],
            doc: "Block header: layout version of this block",
        },
        Register {
            name: "BLK_NEXT",
            addr: base + 0x8,
            access: Access::Ro,
            value: Value::HeaderNext,
            fields: &[],
            doc: "Block header: byte offset of the next block, 0 at the end of the chain",
        },
    ]
}

/// The ID block at offset 0: identifies the card image.
pub mod id {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0000;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// Magic word: "WEFT".
    pub const MAGIC: Register = Register {
        name: "MAGIC",
        addr: BASE + 0x0C,
        access: Access::Ro,
        value: Value::Const(super::MAGIC),
        fields: &[],
        doc: "Magic word 0x57454654 (ASCII \"WEFT\")",
    };
    /// `MAP_VERSION.MAJOR`.
    pub const MAP_VERSION_MAJOR: Field = Field {
        name: "MAJOR",
        lsb: 16,
        width: 16,
        doc: "Bumped when a register moves or changes meaning",
    };
    /// `MAP_VERSION.MINOR`.
    pub const MAP_VERSION_MINOR: Field = Field {
        name: "MINOR",
        lsb: 0,
        width: 16,
        doc: "Bumped when registers or blocks are added",
    };
    /// Register-map version.
    pub const MAP_VERSION: Register = Register {
        name: "MAP_VERSION",
        addr: BASE + 0x10,
        access: Access::Ro,
        value: Value::Const((super::MAP_VERSION_MAJOR << 16) | super::MAP_VERSION_MINOR),
        fields: &[MAP_VERSION_MAJOR, MAP_VERSION_MINOR],
        doc: "Register-map version this card implements",
    };
    /// Board id.
    pub const BOARD_ID: Register = Register {
        name: "BOARD_ID",
        addr: BASE + 0x14,
        access: Access::Ro,
        value: Value::Build(BuildField::BoardId),
        fields: &[],
        doc: "Board the image was built for (0 sim, 1 U55C, 2 U280, 3 U250, 4 U50, 5 U200)",
    };
    /// Build date.
    pub const BUILD_DATE: Register = Register {
        name: "BUILD_DATE",
        addr: BASE + 0x18,
        access: Access::Ro,
        value: Value::Build(BuildField::BuildDate),
        fields: &[],
        doc: "Build date as Unix seconds (commit time of the source tree)",
    };
    /// Git hash.
    pub const GIT_HASH: Register = Register {
        name: "GIT_HASH",
        addr: BASE + 0x1C,
        access: Access::Ro,
        value: Value::Build(BuildField::GitHash),
        fields: &[],
        doc: "First 32 bits of the source tree's git commit hash",
    };
    /// Feature bits.
    pub const FEATURES: Register = Register {
        name: "FEATURES",
        addr: BASE + 0x20,
        access: Access::Ro,
        value: Value::Build(BuildField::Features),
        fields: &[
            Field {
                name: "CTRL",
                lsb: 0,
                width: 1,
                doc: "Control block present",
            },
            Field {
                name: "KV_AGG",
                lsb: 1,
                width: 1,
                doc: "Key-value aggregation engine present",
            },
            Field {
                name: "GRAD_AGG",
                lsb: 2,
                width: 1,
                doc: "Gradient aggregation engine present",
            },
            Field {
                name: "AVM",
                lsb: 3,
                width: 1,
                doc: "Accelerator Virtual Memory present",
            },
            Field {
                name: "MEMOPS",
                lsb: 4,
                width: 1,
                doc: "MemOps switch port present",
            },
            Field {
                name: "NET",
                lsb: 5,
                width: 1,
                doc: "Engines framed on the wire (net block) present",
            },
        ],
        doc: "Engines built into this image",
    };
    /// Address window of the map.
    pub const MAP_SPAN: Register = Register {
        name: "MAP_SPAN",
        addr: BASE + 0x24,
        access: Access::Ro,
        value: Value::Const(1 << super::ADDR_BITS),
        fields: &[],
        doc: "Bytes of BAR space the register map occupies",
    };
    /// The block.
    pub const BLOCK: Block = Block {
        name: "id",
        type_id: super::block_type::ID,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "Identifies the card image: magic, map version, board, build, features",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            MAGIC,
            MAP_VERSION,
            BOARD_ID,
            BUILD_DATE,
            GIT_HASH,
            FEATURES,
            MAP_SPAN,
        ],
    };
}

/// The control block: scratch, cycle counter, test interrupt.
pub mod ctrl {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0100;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// Scratch register.
    pub const SCRATCH: Register = Register {
        name: "SCRATCH",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Scratch: reads back what was written (byte strobes honoured)",
    };
    /// Cycle counter, low word.
    pub const CYCLE_LO: Register = Register {
        name: "CYCLE_LO",
        addr: BASE + 0x10,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Free-running cycle counter, bits 31:0; reading it latches bits 63:32 into CYCLE_HI",
    };
    /// Cycle counter, high word.
    pub const CYCLE_HI: Register = Register {
        name: "CYCLE_HI",
        addr: BASE + 0x14,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Cycle counter bits 63:32 as latched by the last CYCLE_LO read",
    };
    /// `IRQ_TEST.VECTOR0`.
    pub const IRQ_TEST_VECTOR0: Field = Field {
        name: "VECTOR0",
        lsb: 0,
        width: 1,
        doc: "Write 1 to raise interrupt vector 0 once",
    };
    /// Test interrupt.
    pub const IRQ_TEST: Register = Register {
        name: "IRQ_TEST",
        addr: BASE + 0x18,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[IRQ_TEST_VECTOR0],
        doc: "Raise a test interrupt (for driver bring-up); reads 0",
    };
    /// The block.
    pub const BLOCK: Block = Block {
        name: "ctrl",
        type_id: super::block_type::CTRL,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "Card control: scratch register, 64-bit cycle counter, test interrupt",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            SCRATCH,
            CYCLE_LO,
            CYCLE_HI,
            IRQ_TEST,
        ],
    };
}

/// A 64-bit event counter as a LO/HI register pair: reading LO latches HI,
/// so software reads a consistent value with LO first.
const fn counter(
    base: u32,
    off: u32,
    name_lo: &'static str,
    name_hi: &'static str,
    doc: &'static str,
) -> [Register; 2] {
    [
        Register {
            name: name_lo,
            addr: base + off,
            access: Access::Ro,
            value: Value::Live { reset: 0 },
            fields: &[],
            doc,
        },
        Register {
            name: name_hi,
            addr: base + off + 4,
            access: Access::Ro,
            value: Value::Live { reset: 0 },
            fields: &[],
            doc: "Bits 63:32 of the counter, as latched by the last read of its LO word",
        },
    ]
}

/// The key-value aggregation engine (`kv_agg`).
pub mod kv {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0200;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// `CTRL.REPLACE`.
    pub const CTRL_REPLACE: Field = Field {
        name: "REPLACE",
        lsb: 0,
        width: 1,
        doc: "Hot-key-agnostic replacement: a colliding newcomer may evict a cold resident",
    };
    /// Control.
    pub const CTRL: Register = Register {
        name: "CTRL",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 1 },
        fields: &[CTRL_REPLACE],
        doc: "Engine control",
    };
    /// Active job.
    pub const JOB: Register = Register {
        name: "JOB",
        addr: BASE + 0x10,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Job id the engine aggregates (bits 15:0); packets of other jobs are malformed",
    };
    /// `CMD.FLUSH`.
    pub const CMD_FLUSH: Field = Field {
        name: "FLUSH",
        lsb: 0,
        width: 1,
        doc: "Drain every resident slot to the host as flush records, then a flush-done record; clears the table",
    };
    /// `CMD.RESET`.
    pub const CMD_RESET: Field = Field {
        name: "RESET",
        lsb: 1,
        width: 1,
        doc: "Clear every sender's sequence window and the counters (between jobs, after a flush)",
    };
    /// Commands.
    pub const CMD: Register = Register {
        name: "CMD",
        addr: BASE + 0x14,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[CMD_FLUSH, CMD_RESET],
        doc: "Write 1 to start a command; reads 0",
    };
    /// `STATUS.FLUSHING`.
    pub const STATUS_FLUSHING: Field = Field {
        name: "FLUSHING",
        lsb: 0,
        width: 1,
        doc: "A flush is in progress (input is held off)",
    };
    /// Status.
    pub const STATUS: Register = Register {
        name: "STATUS",
        addr: BASE + 0x18,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[STATUS_FLUSHING],
        doc: "Engine status",
    };
    /// `GEOMETRY.LANES`.
    pub const GEOMETRY_LANES: Field = Field {
        name: "LANES",
        lsb: 0,
        width: 8,
        doc: "Tuple lanes per beat (beat width / 64 bits)",
    };
    /// `GEOMETRY.SLOT_BITS`.
    pub const GEOMETRY_SLOT_BITS: Field = Field {
        name: "SLOT_BITS",
        lsb: 8,
        width: 8,
        doc: "log2 of the slots in each lane's bank",
    };
    /// `GEOMETRY.SENDERS`.
    pub const GEOMETRY_SENDERS: Field = Field {
        name: "SENDERS",
        lsb: 16,
        width: 8,
        doc: "Senders with a sequence window",
    };
    /// `GEOMETRY.WINDOW`.
    pub const GEOMETRY_WINDOW: Field = Field {
        name: "WINDOW",
        lsb: 24,
        width: 8,
        doc: "Sequence window per sender, in packets",
    };
    /// Geometry of this build.
    pub const GEOMETRY: Register = Register {
        name: "GEOMETRY",
        addr: BASE + 0x1C,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[
            GEOMETRY_LANES,
            GEOMETRY_SLOT_BITS,
            GEOMETRY_SENDERS,
            GEOMETRY_WINDOW,
        ],
        doc: "Build parameters of the engine",
    };
    const C0: [Register; 2] = counter(
        BASE,
        0x20,
        "PKTS_LO",
        "PKTS_HI",
        "Data packets accepted for aggregation (new, in window)",
    );
    const C1: [Register; 2] = counter(
        BASE,
        0x28,
        "TUPLES_IN_LO",
        "TUPLES_IN_HI",
        "Tuples in accepted packets",
    );
    const C2: [Register; 2] = counter(
        BASE,
        0x30,
        "AGGREGATED_LO",
        "AGGREGATED_HI",
        "Tuples absorbed into a slot on the card",
    );
    const C3: [Register; 2] = counter(
        BASE,
        0x38,
        "SPILLED_LO",
        "SPILLED_HI",
        "Records spilled to the host (rejected newcomers, evictions, overflows)",
    );
    const C4: [Register; 2] = counter(
        BASE,
        0x40,
        "EVICTED_LO",
        "EVICTED_HI",
        "Residents evicted by a newcomer (each also counted as spilled)",
    );
    const C5: [Register; 2] = counter(
        BASE,
        0x48,
        "OVERFLOWS_LO",
        "OVERFLOWS_HI",
        "Partial sums spilled because the 32-bit accumulator would overflow",
    );
    const C6: [Register; 2] = counter(
        BASE,
        0x50,
        "DUP_PKTS_LO",
        "DUP_PKTS_HI",
        "Duplicate packets: acknowledged again, not aggregated",
    );
    const C7: [Register; 2] = counter(
        BASE,
        0x58,
        "MALFORMED_LO",
        "MALFORMED_HI",
        "Malformed packets, dropped whole",
    );
    const C8: [Register; 2] = counter(
        BASE,
        0x60,
        "WINDOW_DROPS_LO",
        "WINDOW_DROPS_HI",
        "Packets ahead of their sender's window, dropped unacknowledged",
    );
    /// Counters, LO/HI pairs in address order.
    pub const COUNTERS: [Register; 18] = [
        C0[0], C0[1], C1[0], C1[1], C2[0], C2[1], C3[0], C3[1], C4[0], C4[1], C5[0], C5[1], C6[0],
        C6[1], C7[0], C7[1], C8[0], C8[1],
    ];
    /// The block.
    pub const BLOCK: Block = Block {
        name: "kv",
        type_id: super::block_type::KV_AGG,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "Key-value stream aggregation (after ASK): control, geometry, counters",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            CTRL,
            JOB,
            CMD,
            STATUS,
            GEOMETRY,
            C0[0],
            C0[1],
            C1[0],
            C1[1],
            C2[0],
            C2[1],
            C3[0],
            C3[1],
            C4[0],
            C4[1],
            C5[0],
            C5[1],
            C6[0],
            C6[1],
            C7[0],
            C7[1],
            C8[0],
            C8[1],
        ],
    };
}

/// The MemOps switch port (`memops`). On the chain; present in the OpenNIC
/// top (`weft_top`), not in the simulated card (see `ID.FEATURES`).
pub mod memops {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0300;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// `CTRL.ENABLE`.
    pub const CTRL_ENABLE: Field = Field {
        name: "ENABLE",
        lsb: 0,
        width: 1,
        doc: "Run the program; while 0 every request completes with an error (clear while installing a program)",
    };
    /// Control.
    pub const CTRL: Register = Register {
        name: "CTRL",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[CTRL_ENABLE],
        doc: "Port control",
    };
    /// Program word address.
    pub const PROG_ADDR: Register = Register {
        name: "PROG_ADDR",
        addr: BASE + 0x10,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Word index into the program image (bits 7:0); PROG_DATA writes advance it",
    };
    /// Program word data.
    pub const PROG_DATA: Register = Register {
        name: "PROG_DATA",
        addr: BASE + 0x14,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Program image word at PROG_ADDR; a write stores it and advances PROG_ADDR",
    };
    /// Telemetry counter select.
    pub const TEL_SEL: Register = Register {
        name: "TEL_SEL",
        addr: BASE + 0x18,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Telemetry counter to read: 0..K stage transactions, K..2K stage bytes, then issued, blocked, denied, errors, mirrored, mirror drops",
    };
    /// Telemetry low word.
    pub const TEL_LO: Register = Register {
        name: "TEL_LO",
        addr: BASE + 0x1C,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Selected counter bits 31:0; reading it latches bits 63:32 into TEL_HI",
    };
    /// Telemetry high word.
    pub const TEL_HI: Register = Register {
        name: "TEL_HI",
        addr: BASE + 0x20,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Selected counter bits 63:32 as latched by the last TEL_LO read",
    };
    /// Clear telemetry.
    pub const TEL_CLEAR: Register = Register {
        name: "TEL_CLEAR",
        addr: BASE + 0x24,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Write 1 to clear every telemetry counter",
    };
    /// Geometry.
    pub const GEOMETRY: Register = Register {
        name: "GEOMETRY",
        addr: BASE + 0x28,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Ports (7:0), stages (15:8), ranges per destination (23:16), tags (31:24)",
    };
    /// Outstanding requests.
    pub const OUTSTANDING: Register = Register {
        name: "OUTSTANDING",
        addr: BASE + 0x2C,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Requests issued and not yet completed by their destination",
    };
    /// The block.
    pub const BLOCK: Block = Block {
        name: "memops",
        type_id: super::block_type::MEMOPS,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "MemOps switch port: program memory, telemetry",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            CTRL,
            PROG_ADDR,
            PROG_DATA,
            TEL_SEL,
            TEL_LO,
            TEL_HI,
            TEL_CLEAR,
            GEOMETRY,
            OUTSTANDING,
        ],
    };
}

/// Accelerator Virtual Memory (`avm`): the shared on-chip pool of named
/// consumers. On the chain; present in the OpenNIC top (`weft_top`), not in
/// the simulated card (see `ID.FEATURES`).
pub mod avm {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0600;
    /// Consumers with their own register group.
    pub const CONSUMERS: usize = 4;
    /// Snapshot words per consumer: requests, grants, stall cycles,
    /// faults, then the 16 latency-histogram buckets.
    pub const SNAP_PER_CONSUMER: u32 = 20;
    /// Snapshot index of the first consumer's page count (one per consumer
    /// after the counters).
    pub const SNAP_PAGES: u32 = SNAP_PER_CONSUMER * CONSUMERS as u32;
    /// Snapshot words in all.
    pub const SNAP_WORDS: u32 = SNAP_PAGES + CONSUMERS as u32;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// `CTRL.MANAGED`.
    pub const CTRL_MANAGED: Field = Field {
        name: "MANAGED",
        lsb: 0,
        width: 1,
        doc: "Arbitrate by priority, then weighted round-robin (0: first come, first served — the unmanaged baseline)",
    };
    /// Control.
    pub const CTRL: Register = Register {
        name: "CTRL",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[CTRL_MANAGED],
        doc: "Pool control",
    };
    /// `CMD.OP`.
    pub const CMD_OP: Field = Field {
        name: "OP",
        lsb: 0,
        width: 2,
        doc: "1 GRANT a physical page to virtual page ARG; 2 RECLAIM up to ARG pages",
    };
    /// `CMD.CONSUMER`.
    pub const CMD_CONSUMER: Field = Field {
        name: "CONSUMER",
        lsb: 4,
        width: 2,
        doc: "Consumer the command acts on",
    };
    /// `CMD.ARG`.
    pub const CMD_ARG: Field = Field {
        name: "ARG",
        lsb: 8,
        width: 8,
        doc: "Virtual page (GRANT) or page count (RECLAIM)",
    };
    /// Allocation command.
    pub const CMD: Register = Register {
        name: "CMD",
        addr: BASE + 0x10,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[CMD_OP, CMD_CONSUMER, CMD_ARG],
        doc: "Start an allocation command; refused with RESULT=BUSY while one runs",
    };
    /// `STATUS.BUSY`.
    pub const STATUS_BUSY: Field = Field {
        name: "BUSY",
        lsb: 0,
        width: 1,
        doc: "A command is running (a granted page is being zeroed, or a reclaim scan)",
    };
    /// `STATUS.RESULT`.
    pub const STATUS_RESULT: Field = Field {
        name: "RESULT",
        lsb: 4,
        width: 3,
        doc: "Last command: 0 OK, 1 QUOTA, 2 FULL, 3 PAGE (mapped or out of range), 4 BUSY, 5 LIMITS (reservation above quota), 6 OP",
    };
    /// `STATUS.PAGE`.
    pub const STATUS_PAGE: Field = Field {
        name: "PAGE",
        lsb: 8,
        width: 8,
        doc: "Physical page of the last successful GRANT",
    };
    /// `STATUS.COUNT`.
    pub const STATUS_COUNT: Field = Field {
        name: "COUNT",
        lsb: 16,
        width: 8,
        doc: "Pages taken by the last RECLAIM",
    };
    /// Command status.
    pub const STATUS: Register = Register {
        name: "STATUS",
        addr: BASE + 0x14,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[STATUS_BUSY, STATUS_RESULT, STATUS_PAGE, STATUS_COUNT],
        doc: "Outcome of the last command",
    };
    /// Take a snapshot.
    pub const SNAP: Register = Register {
        name: "SNAP",
        addr: BASE + 0x18,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Write 1: copy every counter, histogram and page count, and the cycle, into the snapshot in one cycle, and reset SNAP_SEL",
    };
    /// Snapshot word select.
    pub const SNAP_SEL: Register = Register {
        name: "SNAP_SEL",
        addr: BASE + 0x1C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Snapshot word to read (bits 6:0): consumer c's word k at c*20+k (k: 0 requests, 1 grants, 2 stall cycles, 3 faults, 4+b latency bucket b), consumer c's pages at 80+c",
    };
    /// Snapshot word data.
    pub const SNAP_DATA: Register = Register {
        name: "SNAP_DATA",
        addr: BASE + 0x20,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "The selected snapshot word (32-bit counters wrap); reading it advances SNAP_SEL",
    };
    /// Snapshot cycle.
    pub const SNAP_CYCLE: Register = Register {
        name: "SNAP_CYCLE",
        addr: BASE + 0x24,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Bits 31:0 of the block's cycle counter at the last snapshot",
    };
    /// Clear counters.
    pub const CLEAR: Register = Register {
        name: "CLEAR",
        addr: BASE + 0x28,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Write 1 to clear every counter and histogram (not the snapshot)",
    };
    /// Geometry.
    pub const GEOMETRY: Register = Register {
        name: "GEOMETRY",
        addr: BASE + 0x2C,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[],
        doc: "Consumers (7:0), physical pages (15:8), log2 words per page (19:16), virtual pages per consumer (27:20), queue depth (31:28)",
    };
    const fn per(
        c: u32,
        off: u32,
        name: &'static str,
        access: Access,
        fields: &'static [Field],
        doc: &'static str,
    ) -> Register {
        Register {
            name,
            addr: BASE + 0x40 + c * 0x10 + off,
            access,
            value: Value::Live { reset: 0 },
            fields,
            doc,
        }
    }
    /// `Cn_LIMITS.QUOTA`.
    pub const LIMITS_QUOTA: Field = Field {
        name: "QUOTA",
        lsb: 0,
        width: 8,
        doc: "Most pages the consumer may hold",
    };
    /// `Cn_LIMITS.RESERVE`.
    pub const LIMITS_RESERVE: Field = Field {
        name: "RESERVE",
        lsb: 8,
        width: 8,
        doc: "Pages a reclaim never takes; a write with RESERVE above QUOTA is refused (STATUS.RESULT = LIMITS)",
    };
    const fn group(c: u32, names: [&'static str; 4]) -> [Register; 4] {
        [
            per(
                c,
                0x0,
                names[0],
                Access::Rw,
                &[],
                "Arbitration weight (bits 7:0; 0 counts as 1): grants per round-robin turn",
            ),
            per(
                c,
                0x4,
                names[1],
                Access::Rw,
                &[],
                "Arbitration priority (bits 1:0): the highest waiting class is served first",
            ),
            per(
                c,
                0x8,
                names[2],
                Access::Rw,
                &[LIMITS_QUOTA, LIMITS_RESERVE],
                "Page quota and reservation",
            ),
            per(c, 0xC, names[3], Access::Ro, &[], "Pages mapped now"),
        ]
    }
    /// Consumer 0: weight, priority, limits, pages.
    pub const C0: [Register; 4] = group(0, ["C0_WEIGHT", "C0_PRIORITY", "C0_LIMITS", "C0_PAGES"]);
    /// Consumer 1.
    pub const C1: [Register; 4] = group(1, ["C1_WEIGHT", "C1_PRIORITY", "C1_LIMITS", "C1_PAGES"]);
    /// Consumer 2.
    pub const C2: [Register; 4] = group(2, ["C2_WEIGHT", "C2_PRIORITY", "C2_LIMITS", "C2_PAGES"]);
    /// Consumer 3.
    pub const C3: [Register; 4] = group(3, ["C3_WEIGHT", "C3_PRIORITY", "C3_LIMITS", "C3_PAGES"]);
    /// Each consumer's group, by consumer.
    pub const GROUPS: [[Register; 4]; CONSUMERS] = [C0, C1, C2, C3];
    /// The block.
    pub const BLOCK: Block = Block {
        name: "avm",
        type_id: super::block_type::AVM,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "Accelerator Virtual Memory (after NicOS): allocation commands, arbitration, per-consumer limits, observation snapshot",
        regs: &[
            BLK_TYPE, BLK_VERSION, BLK_NEXT, CTRL, CMD, STATUS, SNAP, SNAP_SEL, SNAP_DATA,
            SNAP_CYCLE, CLEAR, GEOMETRY, C0[0], C0[1], C0[2], C0[3], C1[0], C1[1], C1[2], C1[3],
            C2[0], C2[1], C2[2], C2[3], C3[0], C3[1], C3[2], C3[3],
        ],
    };
}

/// The gradient aggregation engine (`grad_agg`, after SwitchML, ATP and
/// DSA). On the chain; present in the OpenNIC top (`weft_top`), not in the
/// simulated card (see `ID.FEATURES`).
pub mod grad {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0500;
    /// Jobs with a priority register (job ids `0..JOBS`; others are malformed).
    pub const JOBS: usize = 16;
    /// Bits of one job's priority.
    pub const PRIO_BITS: u32 = 4;
    /// Largest priority.
    pub const PRIO_MAX: u8 = (1 << PRIO_BITS) - 1;
    /// Jobs per priority register.
    pub const JOBS_PER_PRIO_REG: usize = 32 / PRIO_BITS as usize;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    const fn prio_field(name: &'static str, i: u8) -> Field {
        Field {
            name,
            lsb: 4 * i,
            width: 4,
            doc: "Priority of the job (0 lowest): a higher-priority chunk preempts a lower one's slot",
        }
    }
    /// `PRIO_LO` fields: jobs 0 to 7, four bits each.
    pub const PRIO_LO_FIELDS: [Field; 8] = [
        prio_field("JOB0", 0),
        prio_field("JOB1", 1),
        prio_field("JOB2", 2),
        prio_field("JOB3", 3),
        prio_field("JOB4", 4),
        prio_field("JOB5", 5),
        prio_field("JOB6", 6),
        prio_field("JOB7", 7),
    ];
    /// `PRIO_HI` fields: jobs 8 to 15, four bits each.
    pub const PRIO_HI_FIELDS: [Field; 8] = [
        prio_field("JOB8", 0),
        prio_field("JOB9", 1),
        prio_field("JOB10", 2),
        prio_field("JOB11", 3),
        prio_field("JOB12", 4),
        prio_field("JOB13", 5),
        prio_field("JOB14", 6),
        prio_field("JOB15", 7),
    ];
    /// Priorities of jobs 0 to 7.
    pub const PRIO_LO: Register = Register {
        name: "PRIO_LO",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &PRIO_LO_FIELDS,
        doc: "Priorities of jobs 0 to 7 (4 bits each, job j at bits 4j+3:4j)",
    };
    /// Priorities of jobs 8 to 15.
    pub const PRIO_HI: Register = Register {
        name: "PRIO_HI",
        addr: BASE + 0x10,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &PRIO_HI_FIELDS,
        doc: "Priorities of jobs 8 to 15 (4 bits each, job j at bits 4(j-8)+3:4(j-8))",
    };
    /// The priority register holding `job`'s priority and its field there.
    pub const fn prio_of(job: usize) -> (Register, Field) {
        if job < JOBS_PER_PRIO_REG {
            (PRIO_LO, PRIO_LO_FIELDS[job])
        } else {
            (PRIO_HI, PRIO_HI_FIELDS[job - JOBS_PER_PRIO_REG])
        }
    }
    /// `CMD.FLUSH`.
    pub const CMD_FLUSH: Field = Field {
        name: "FLUSH",
        lsb: 0,
        width: 1,
        doc: "Evict every held slot to the host as EVICT packets (end of a job); input is held off meanwhile",
    };
    /// `CMD.RESET`.
    pub const CMD_RESET: Field = Field {
        name: "RESET",
        lsb: 1,
        width: 1,
        doc: "Clear the counters",
    };
    /// Commands.
    pub const CMD: Register = Register {
        name: "CMD",
        addr: BASE + 0x14,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[CMD_FLUSH, CMD_RESET],
        doc: "Write 1 to start a command; reads 0",
    };
    /// `STATUS.FLUSHING`.
    pub const STATUS_FLUSHING: Field = Field {
        name: "FLUSHING",
        lsb: 0,
        width: 1,
        doc: "A flush is requested or in progress (input is held off)",
    };
    /// Status.
    pub const STATUS: Register = Register {
        name: "STATUS",
        addr: BASE + 0x18,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[STATUS_FLUSHING],
        doc: "Engine status",
    };
    /// `GEOMETRY.LANES`.
    pub const GEOMETRY_LANES: Field = Field {
        name: "LANES",
        lsb: 0,
        width: 8,
        doc: "32-bit value lanes per beat (beat width / 32 bits)",
    };
    /// `GEOMETRY.SLOT_BITS`.
    pub const GEOMETRY_SLOT_BITS: Field = Field {
        name: "SLOT_BITS",
        lsb: 8,
        width: 8,
        doc: "log2 of the aggregator slots",
    };
    /// `GEOMETRY.VALUE_BEATS`.
    pub const GEOMETRY_VALUE_BEATS: Field = Field {
        name: "VALUE_BEATS",
        lsb: 16,
        width: 8,
        doc: "Value beats per chunk (a chunk is LANES x VALUE_BEATS values)",
    };
    /// `GEOMETRY.MAX_WORKERS`.
    pub const GEOMETRY_MAX_WORKERS: Field = Field {
        name: "MAX_WORKERS",
        lsb: 24,
        width: 8,
        doc: "Most workers per job (the width of a slot's worker bitmap)",
    };
    /// Geometry of this build.
    pub const GEOMETRY: Register = Register {
        name: "GEOMETRY",
        addr: BASE + 0x1C,
        access: Access::Ro,
        value: Value::Live { reset: 0 },
        fields: &[
            GEOMETRY_LANES,
            GEOMETRY_SLOT_BITS,
            GEOMETRY_VALUE_BEATS,
            GEOMETRY_MAX_WORKERS,
        ],
        doc: "Build parameters of the engine",
    };
    const C0: [Register; 2] = counter(
        BASE,
        0x20,
        "PKTS_LO",
        "PKTS_HI",
        "Packets in (every packet on the input, malformed ones included)",
    );
    const C1: [Register; 2] = counter(
        BASE,
        0x28,
        "AGGREGATED_LO",
        "AGGREGATED_HI",
        "Packets whose values were summed on the card (claims, adds, single-worker chunks)",
    );
    const C2: [Register; 2] = counter(
        BASE,
        0x30,
        "COMPLETED_LO",
        "COMPLETED_HI",
        "Chunks completed on the card (RESULT packets)",
    );
    const C3: [Register; 2] = counter(
        BASE,
        0x38,
        "PREEMPTED_LO",
        "PREEMPTED_HI",
        "Preemptions: a chunk of a higher-priority job, or a newer chunk of the holder's own job (the holder is a stale claim), took a slot; the partial went out as EVICT",
    );
    const C4: [Register; 2] = counter(
        BASE,
        0x40,
        "FALLBACKS_LO",
        "FALLBACKS_HI",
        "Packets forwarded unchanged to the host (slot held by a job of no lower priority)",
    );
    const C5: [Register; 2] = counter(
        BASE,
        0x48,
        "DUPLICATES_LO",
        "DUPLICATES_HI",
        "Duplicates: the worker's bit was already set in the chunk's slot (not added; answered with a NACK to the workers missing from the slot), or the slot completed the chunk last (a late copy, dropped)",
    );
    const C6: [Register; 2] = counter(
        BASE,
        0x50,
        "MALFORMED_LO",
        "MALFORMED_HI",
        "Malformed packets, dropped whole",
    );
    const C7: [Register; 2] = counter(
        BASE,
        0x58,
        "FLUSHED_LO",
        "FLUSHED_HI",
        "Slots evicted by a flush",
    );
    /// Counters, LO/HI pairs in address order.
    pub const COUNTERS: [Register; 16] = [
        C0[0], C0[1], C1[0], C1[1], C2[0], C2[1], C3[0], C3[1], C4[0], C4[1], C5[0], C5[1], C6[0],
        C6[1], C7[0], C7[1],
    ];
    /// The block.
    pub const BLOCK: Block = Block {
        name: "grad",
        type_id: super::block_type::GRAD_AGG,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "Gradient aggregation (after SwitchML, ATP, DSA): job priorities, flush, geometry, counters",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            PRIO_LO,
            PRIO_HI,
            CMD,
            STATUS,
            GEOMETRY,
            C0[0],
            C0[1],
            C1[0],
            C1[1],
            C2[0],
            C2[1],
            C3[0],
            C3[1],
            C4[0],
            C4[1],
            C5[0],
            C5[1],
            C6[0],
            C6[1],
            C7[0],
            C7[1],
        ],
    };
}

/// The card on the wire (`docs/wire.md`): its MAC and IPv4 address, where
/// it sends records, fallback packets and gradient results, record
/// packing, and its frame counters.
pub mod net {
    use super::*;

    /// Base address of the block.
    pub const BASE: u32 = 0x0700;
    const H: [Register; 3] = header(BASE);
    /// Header: block type.
    pub const BLK_TYPE: Register = H[0];
    /// Header: block version.
    pub const BLK_VERSION: Register = H[1];
    /// Header: next block.
    pub const BLK_NEXT: Register = H[2];
    /// `CTRL.ENABLE`.
    pub const CTRL_ENABLE: Field = Field {
        name: "ENABLE",
        lsb: 0,
        width: 1,
        doc: "Steer frames addressed to the card to its engines (0: pass every frame through)",
    };
    /// Control.
    pub const CTRL: Register = Register {
        name: "CTRL",
        addr: BASE + 0x0C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[CTRL_ENABLE],
        doc: "Engines on the wire on or off",
    };
    const fn rw(addr: u32, name: &'static str, doc: &'static str) -> Register {
        Register {
            name,
            addr,
            access: Access::Rw,
            value: Value::Live { reset: 0 },
            fields: &[],
            doc,
        }
    }
    /// The card's MAC, bytes 0..2 (byte 0 in bits 15:8).
    pub const MAC_HI: Register = rw(
        BASE + 0x10,
        "MAC_HI",
        "Card MAC address, first two bytes (bits 15:0, first byte in 15:8)",
    );
    /// The card's MAC, bytes 2..6 (byte 2 in bits 31:24).
    pub const MAC_LO: Register = rw(
        BASE + 0x14,
        "MAC_LO",
        "Card MAC address, last four bytes (first of them in bits 31:24)",
    );
    /// The card's IPv4 address (first byte in bits 31:24).
    pub const IP: Register = rw(
        BASE + 0x18,
        "IP",
        "Card IPv4 address (first byte in bits 31:24)",
    );
    /// Key-value collector MAC, bytes 0..2.
    pub const KV_MAC_HI: Register = rw(
        BASE + 0x1C,
        "KV_MAC_HI",
        "Key-value collector MAC, first two bytes",
    );
    /// Key-value collector MAC, bytes 2..6.
    pub const KV_MAC_LO: Register = rw(
        BASE + 0x20,
        "KV_MAC_LO",
        "Key-value collector MAC, last four bytes",
    );
    /// Key-value collector IPv4 address.
    pub const KV_IP: Register = rw(BASE + 0x24, "KV_IP", "Key-value collector IPv4 address");
    /// Key-value collector UDP port.
    pub const KV_PORT: Register = rw(
        BASE + 0x28,
        "KV_PORT",
        "Key-value collector UDP port (bits 15:0)",
    );
    /// Gradient fallback MAC, bytes 0..2.
    pub const GRAD_MAC_HI: Register = rw(
        BASE + 0x2C,
        "GRAD_MAC_HI",
        "Gradient host fallback MAC, first two bytes",
    );
    /// Gradient fallback MAC, bytes 2..6.
    pub const GRAD_MAC_LO: Register = rw(
        BASE + 0x30,
        "GRAD_MAC_LO",
        "Gradient host fallback MAC, last four bytes",
    );
    /// Gradient fallback IPv4 address.
    pub const GRAD_IP: Register = rw(
        BASE + 0x34,
        "GRAD_IP",
        "Gradient host fallback IPv4 address",
    );
    /// Gradient fallback UDP port.
    pub const GRAD_PORT: Register = rw(
        BASE + 0x38,
        "GRAD_PORT",
        "Gradient host fallback UDP port (bits 15:0)",
    );
    /// Records per record frame.
    pub const PACK_MAX: Register = Register {
        name: "PACK_MAX",
        addr: BASE + 0x3C,
        access: Access::Rw,
        value: Value::Live {
            reset: crate::wire::KV_DEFAULT_RECORDS as u32,
        },
        fields: &[],
        doc: "Most records in one key-value record frame (bits 10:0; 0 acts as 1, above 1119 as 1119)",
    };
    /// Most cycles a record waits in a partial frame.
    pub const PACK_WAIT: Register = Register {
        name: "PACK_WAIT",
        addr: BASE + 0x40,
        access: Access::Rw,
        value: Value::Live { reset: 1024 },
        fields: &[],
        doc: "Cycles (axis_aclk) after its first record that a partial record frame leaves (bits 19:0)",
    };
    /// Sequence number of the next record frame.
    pub const PACK_SEQ: Register = rw(
        BASE + 0x44,
        "PACK_SEQ",
        "Sequence number of the next record frame (counts up per frame)",
    );
    /// `WT_SEL.WORKER`.
    pub const WT_SEL_WORKER: Field = Field {
        name: "WORKER",
        lsb: 0,
        width: 5,
        doc: "Worker id",
    };
    /// `WT_SEL.JOB`.
    pub const WT_SEL_JOB: Field = Field {
        name: "JOB",
        lsb: 8,
        width: 4,
        doc: "Gradient job id",
    };
    /// Worker table entry selected by `WT_CMD`.
    pub const WT_SEL: Register = Register {
        name: "WT_SEL",
        addr: BASE + 0x48,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[WT_SEL_WORKER, WT_SEL_JOB],
        doc: "Gradient worker table: the entry WT_CMD writes",
    };
    /// `WT_MAC_HI.VALID`.
    pub const WT_VALID: Field = Field {
        name: "VALID",
        lsb: 16,
        width: 1,
        doc: "The entry is a worker: RESULT frames go to it",
    };
    /// `WT_MAC_HI.HOST`.
    pub const WT_HOST: Field = Field {
        name: "HOST",
        lsb: 17,
        width: 1,
        doc: "The worker is on the host port (0: on the wire)",
    };
    /// `WT_MAC_HI.MAC`.
    pub const WT_MAC: Field = Field {
        name: "MAC",
        lsb: 0,
        width: 16,
        doc: "Worker MAC, first two bytes",
    };
    /// Staged worker entry: MAC bytes 0..2 and flags.
    pub const WT_MAC_HI: Register = Register {
        name: "WT_MAC_HI",
        addr: BASE + 0x4C,
        access: Access::Rw,
        value: Value::Live { reset: 0 },
        fields: &[WT_MAC, WT_VALID, WT_HOST],
        doc: "Staged worker entry: MAC first two bytes, VALID, HOST",
    };
    /// Staged worker entry: MAC bytes 2..6.
    pub const WT_MAC_LO: Register = rw(
        BASE + 0x50,
        "WT_MAC_LO",
        "Staged worker entry: MAC last four bytes",
    );
    /// Staged worker entry: IPv4 address.
    pub const WT_IP: Register = rw(BASE + 0x54, "WT_IP", "Staged worker entry: IPv4 address");
    /// Staged worker entry: UDP port.
    pub const WT_PORT: Register = rw(
        BASE + 0x58,
        "WT_PORT",
        "Staged worker entry: UDP port (bits 15:0)",
    );
    /// `WT_CMD.WRITE`.
    pub const WT_CMD_WRITE: Field = Field {
        name: "WRITE",
        lsb: 0,
        width: 1,
        doc: "Write 1: store the staged entry at WT_SEL",
    };
    /// Worker table command.
    pub const WT_CMD: Register = Register {
        name: "WT_CMD",
        addr: BASE + 0x5C,
        access: Access::Wo,
        value: Value::Live { reset: 0 },
        fields: &[WT_CMD_WRITE],
        doc: "Gradient worker table command",
    };
    const C0: [Register; 2] = counter(
        BASE,
        0x60,
        "RX_FRAMES_LO",
        "RX_FRAMES_HI",
        "Frames taken from the network (wire receive)",
    );
    const C1: [Register; 2] = counter(
        BASE,
        0x68,
        "RX_BAD_LO",
        "RX_BAD_HI",
        "Network frames dropped whole: tuser_size out of range or disagreeing with the frame's beats",
    );
    const C2: [Register; 2] = counter(
        BASE,
        0x70,
        "RX_ENGINE_LO",
        "RX_ENGINE_HI",
        "Network frames steered to an engine",
    );
    const C3: [Register; 2] = counter(
        BASE,
        0x78,
        "RX_HOST_LO",
        "RX_HOST_HI",
        "Network frames passed to the host unchanged (malformed ones included)",
    );
    const C4: [Register; 2] = counter(
        BASE,
        0x80,
        "RX_MALFORMED_LO",
        "RX_MALFORMED_HI",
        "Network frames for an engine that failed a header check (passed to the host)",
    );
    const C5: [Register; 2] = counter(
        BASE,
        0x88,
        "H2C_FRAMES_LO",
        "H2C_FRAMES_HI",
        "Frames taken from the host (QDMA H2C)",
    );
    const C6: [Register; 2] = counter(
        BASE,
        0x90,
        "H2C_BAD_LO",
        "H2C_BAD_HI",
        "Host frames dropped whole: tuser_size out of range or disagreeing with the frame's beats",
    );
    const C7: [Register; 2] = counter(
        BASE,
        0x98,
        "H2C_ENGINE_LO",
        "H2C_ENGINE_HI",
        "Host frames steered to an engine",
    );
    const C8: [Register; 2] = counter(
        BASE,
        0xA0,
        "H2C_WIRE_LO",
        "H2C_WIRE_HI",
        "Host frames passed to the network unchanged (malformed ones included)",
    );
    const C9: [Register; 2] = counter(
        BASE,
        0xA8,
        "H2C_MALFORMED_LO",
        "H2C_MALFORMED_HI",
        "Host frames for an engine that failed a header check (passed to the network)",
    );
    const C10: [Register; 2] = counter(
        BASE,
        0xB0,
        "C2H_FRAMES_LO",
        "C2H_FRAMES_HI",
        "Frames sent to the host",
    );
    const C11: [Register; 2] = counter(
        BASE,
        0xB8,
        "TX_FRAMES_LO",
        "TX_FRAMES_HI",
        "Frames sent to the network",
    );
    const C12: [Register; 2] = counter(
        BASE,
        0xC0,
        "KV_ACKS_LO",
        "KV_ACKS_HI",
        "Key-value ack frames sent",
    );
    const C13: [Register; 2] = counter(
        BASE,
        0xC8,
        "KV_RECORD_FRAMES_LO",
        "KV_RECORD_FRAMES_HI",
        "Key-value record frames sent to the collector",
    );
    const C14: [Register; 2] = counter(
        BASE,
        0xD0,
        "GRAD_COPIES_LO",
        "GRAD_COPIES_HI",
        "Gradient RESULT frames sent to workers (one per worker and chunk), NACK frames included (one per worker missing from the slot)",
    );
    const C15: [Register; 2] = counter(
        BASE,
        0xD8,
        "GRAD_NO_WORKER_LO",
        "GRAD_NO_WORKER_HI",
        "Gradient RESULT or NACK copies not sent: the worker table entry is not valid",
    );
    const C16: [Register; 2] = counter(
        BASE,
        0xE0,
        "MEMOPS_REPLIES_LO",
        "MEMOPS_REPLIES_HI",
        "MemOps completion frames sent",
    );
    /// The read-write registers of the block, in the order the RTL stores them.
    pub const RW: [Register; 19] = [
        CTRL,
        MAC_HI,
        MAC_LO,
        IP,
        KV_MAC_HI,
        KV_MAC_LO,
        KV_IP,
        KV_PORT,
        GRAD_MAC_HI,
        GRAD_MAC_LO,
        GRAD_IP,
        GRAD_PORT,
        PACK_MAX,
        PACK_WAIT,
        WT_SEL,
        WT_MAC_HI,
        WT_MAC_LO,
        WT_IP,
        WT_PORT,
    ];
    /// The bits each [`RW`] register keeps (the others read 0).
    pub const RW_MASK: [u32; 19] = [
        0x1, 0xffff, !0, !0, 0xffff, !0, !0, 0xffff, 0xffff, !0, !0, 0xffff, 0x7ff, 0xf_ffff,
        0xf1f, 0x3_ffff, !0, !0, 0xffff,
    ];
    /// Counter names in register order.
    pub const COUNTER_NAMES: [&str; 17] = [
        "RX_FRAMES",
        "RX_BAD",
        "RX_ENGINE",
        "RX_HOST",
        "RX_MALFORMED",
        "H2C_FRAMES",
        "H2C_BAD",
        "H2C_ENGINE",
        "H2C_WIRE",
        "H2C_MALFORMED",
        "C2H_FRAMES",
        "TX_FRAMES",
        "KV_ACKS",
        "KV_RECORD_FRAMES",
        "GRAD_COPIES",
        "GRAD_NO_WORKER",
        "MEMOPS_REPLIES",
    ];
    /// Counters, LO/HI pairs in address order.
    pub const COUNTERS: [Register; 34] = [
        C0[0], C0[1], C1[0], C1[1], C2[0], C2[1], C3[0], C3[1], C4[0], C4[1], C5[0], C5[1], C6[0],
        C6[1], C7[0], C7[1], C8[0], C8[1], C9[0], C9[1], C10[0], C10[1], C11[0], C11[1], C12[0],
        C12[1], C13[0], C13[1], C14[0], C14[1], C15[0], C15[1], C16[0], C16[1],
    ];
    /// The block.
    pub const BLOCK: Block = Block {
        name: "net",
        type_id: super::block_type::NET,
        version: 1,
        base: BASE,
        span: 0x100,
        doc: "The card on the wire: addresses, destinations, record packing, gradient workers, frame counters",
        regs: &[
            BLK_TYPE,
            BLK_VERSION,
            BLK_NEXT,
            CTRL,
            MAC_HI,
            MAC_LO,
            IP,
            KV_MAC_HI,
            KV_MAC_LO,
            KV_IP,
            KV_PORT,
            GRAD_MAC_HI,
            GRAD_MAC_LO,
            GRAD_IP,
            GRAD_PORT,
            PACK_MAX,
            PACK_WAIT,
            PACK_SEQ,
            WT_SEL,
            WT_MAC_HI,
            WT_MAC_LO,
            WT_IP,
            WT_PORT,
            WT_CMD,
            C0[0],
            C0[1],
            C1[0],
            C1[1],
            C2[0],
            C2[1],
            C3[0],
            C3[1],
            C4[0],
            C4[1],
            C5[0],
            C5[1],
            C6[0],
            C6[1],
            C7[0],
            C7[1],
            C8[0],
            C8[1],
            C9[0],
            C9[1],
            C10[0],
            C10[1],
            C11[0],
            C11[1],
            C12[0],
            C12[1],
            C13[0],
            C13[1],
            C14[0],
            C14[1],
            C15[0],
            C15[1],
            C16[0],
            C16[1],
        ],
    };
}

/// AXI4-Lite address width of the control space.
pub const ADDR_BITS: u32 = 16;

/// The register map.
pub const MAP: Map = Map {
    version: (MAP_VERSION_MAJOR << 16) | MAP_VERSION_MINOR,
    addr_bits: ADDR_BITS,
    blocks: &[
        id::BLOCK,
        ctrl::BLOCK,
        kv::BLOCK,
        memops::BLOCK,
        grad::BLOCK,
        avm::BLOCK,
        net::BLOCK,
    ],
};
