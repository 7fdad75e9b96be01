/* weft register map 2.0 -- generated from hdl/regs/src/map.rs by weft-regs; do not edit. */
#ifndef WEFT_REGS_H
#define WEFT_REGS_H

#define WEFT_MAP_VERSION 0x00020000u
#define WEFT_MAP_ADDR_BITS 16u
/* On an OpenNIC card: BAR2 + 0x100000 (box 0, AXI4-Lite slave 0); no wstrb (whole-word writes only). */
#define WEFT_OPENNIC_BAR 2u
#define WEFT_OPENNIC_MAP_OFFSET 0x00100000u

/* id: Identifies the card image: magic, map version, board, build, features */
#define WEFT_ID_BASE 0x0000u
#define WEFT_ID_TYPE 0x57460001u
#define WEFT_ID_VERSION 1u
#define WEFT_ID_BLK_TYPE 0x0000u /* RO Block header: what this block is */
#define WEFT_ID_BLK_VERSION 0x0004u /* RO Block header: layout version of this block */
#define WEFT_ID_BLK_NEXT 0x0008u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_ID_MAGIC 0x000Cu /* RO Magic word 0x57454654 (ASCII "WEFT") */
#define WEFT_ID_MAP_VERSION 0x0010u /* RO Register-map version this card implements */
#define WEFT_ID_MAP_VERSION_MAJOR_MASK 0xFFFF0000u
#define WEFT_ID_MAP_VERSION_MAJOR_SHIFT 16u
#define WEFT_ID_MAP_VERSION_MINOR_MASK 0x0000FFFFu
#define WEFT_ID_MAP_VERSION_MINOR_SHIFT 0u
#define WEFT_ID_BOARD_ID 0x0014u /* RO Board the image was built for (0 sim, 1 U55C, 2 U280, 3 U250, 4 U50, 5 U200) */
#define WEFT_ID_BUILD_DATE 0x0018u /* RO Build date as Unix seconds (commit time of the source tree) */
#define WEFT_ID_GIT_HASH 0x001Cu /* RO First 32 bits of the source tree's git commit hash */
#define WEFT_ID_FEATURES 0x0020u /* RO Engines built into this image */
#define WEFT_ID_FEATURES_CTRL_MASK 0x00000001u
#define WEFT_ID_FEATURES_CTRL_SHIFT 0u
#define WEFT_ID_FEATURES_KV_AGG_MASK 0x00000002u
#define WEFT_ID_FEATURES_KV_AGG_SHIFT 1u
#define WEFT_ID_FEATURES_GRAD_AGG_MASK 0x00000004u
#define WEFT_ID_FEATURES_GRAD_AGG_SHIFT 2u
#define WEFT_ID_FEATURES_AVM_MASK 0x00000008u
#define WEFT_ID_FEATURES_AVM_SHIFT 3u
#define WEFT_ID_FEATURES_MEMOPS_MASK 0x00000010u
#define WEFT_ID_FEATURES_MEMOPS_SHIFT 4u
#define WEFT_ID_FEATURES_NET_MASK 0x00000020u
#define WEFT_ID_FEATURES_NET_SHIFT 5u
#define WEFT_ID_MAP_SPAN 0x0024u /* RO Bytes of BAR space the register map occupies */

/* ctrl: Card control: scratch register, 64-bit cycle counter, test interrupt */
#define WEFT_CTRL_BASE 0x0100u
#define WEFT_CTRL_TYPE 0x57460002u
#define WEFT_CTRL_VERSION 1u
#define WEFT_CTRL_BLK_TYPE 0x0100u /* RO Block header: what this block is */
#define WEFT_CTRL_BLK_VERSION 0x0104u /* RO Block header: layout version of this block */
#define WEFT_CTRL_BLK_NEXT 0x0108u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_CTRL_SCRATCH 0x010Cu /* RW Scratch: reads back what was written (byte strobes honoured) */
#define WEFT_CTRL_CYCLE_LO 0x0110u /* RO Free-running cycle counter, bits 31:0; reading it latches bits 63:32 into CYCLE_HI */
#define WEFT_CTRL_CYCLE_HI 0x0114u /* RO Cycle counter bits 63:32 as latched by the last CYCLE_LO read */
#define WEFT_CTRL_IRQ_TEST 0x0118u /* WO Raise a test interrupt (for driver bring-up); reads 0 */
#define WEFT_CTRL_IRQ_TEST_VECTOR0_MASK 0x00000001u
#define WEFT_CTRL_IRQ_TEST_VECTOR0_SHIFT 0u

/* kv: Key-value stream aggregation (after ASK): control, geometry, counters */
#define WEFT_KV_BASE 0x0200u
#define WEFT_KV_TYPE 0x57460003u
#define WEFT_KV_VERSION 1u
#define WEFT_KV_BLK_TYPE 0x0200u /* RO Block header: what this block is */
#define WEFT_KV_BLK_VERSION 0x0204u /* RO Block header: layout version of this block */
#define WEFT_KV_BLK_NEXT 0x0208u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_KV_CTRL 0x020Cu /* RW Engine control */
#define WEFT_KV_CTRL_REPLACE_MASK 0x00000001u
#define WEFT_KV_CTRL_REPLACE_SHIFT 0u
#define WEFT_KV_JOB 0x0210u /* RW Job id the engine aggregates (bits 15:0); packets of other jobs are malformed */
#define WEFT_KV_CMD 0x0214u /* WO Write 1 to start a command; reads 0 */
#define WEFT_KV_CMD_FLUSH_MASK 0x00000001u
#define WEFT_KV_CMD_FLUSH_SHIFT 0u
#define WEFT_KV_CMD_RESET_MASK 0x00000002u
#define WEFT_KV_CMD_RESET_SHIFT 1u
#define WEFT_KV_STATUS 0x0218u /* RO Engine status */
#define WEFT_KV_STATUS_FLUSHING_MASK 0x00000001u
#define WEFT_KV_STATUS_FLUSHING_SHIFT 0u
#define WEFT_KV_GEOMETRY 0x021Cu /* RO Build parameters of the engine */
#define WEFT_KV_GEOMETRY_LANES_MASK 0x000000FFu
#define WEFT_KV_GEOMETRY_LANES_SHIFT 0u
#define WEFT_KV_GEOMETRY_SLOT_BITS_MASK 0x0000FF00u
#define WEFT_KV_GEOMETRY_SLOT_BITS_SHIFT 8u
#define WEFT_KV_GEOMETRY_SENDERS_MASK 0x00FF0000u
#define WEFT_KV_GEOMETRY_SENDERS_SHIFT 16u
#define WEFT_KV_GEOMETRY_WINDOW_MASK 0xFF000000u
#define WEFT_KV_GEOMETRY_WINDOW_SHIFT 24u
#define WEFT_KV_PKTS_LO 0x0220u /* RO Data packets accepted for aggregation (new, in window) */
#define WEFT_KV_PKTS_HI 0x0224u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_TUPLES_IN_LO 0x0228u /* RO Tuples in accepted packets */
#define WEFT_KV_TUPLES_IN_HI 0x022Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_AGGREGATED_LO 0x0230u /* RO Tuples absorbed into a slot on the card */
#define WEFT_KV_AGGREGATED_HI 0x0234u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_SPILLED_LO 0x0238u /* RO Records spilled to the host (rejected newcomers, evictions, overflows) */
#define WEFT_KV_SPILLED_HI 0x023Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_EVICTED_LO 0x0240u /* RO Residents evicted by a newcomer (each also counted as spilled) */
#define WEFT_KV_EVICTED_HI 0x0244u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_OVERFLOWS_LO 0x0248u /* RO Partial sums spilled because the 32-bit accumulator would overflow */
#define WEFT_KV_OVERFLOWS_HI 0x024Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_DUP_PKTS_LO 0x0250u /* RO Duplicate packets: acknowledged again, not aggregated */
#define WEFT_KV_DUP_PKTS_HI 0x0254u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_MALFORMED_LO 0x0258u /* RO Malformed packets, dropped whole */
#define WEFT_KV_MALFORMED_HI 0x025Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_KV_WINDOW_DROPS_LO 0x0260u /* RO Packets ahead of their sender's window, dropped unacknowledged */
#define WEFT_KV_WINDOW_DROPS_HI 0x0264u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */

/* memops: MemOps switch port: program memory, telemetry */
#define WEFT_MEMOPS_BASE 0x0300u
#define WEFT_MEMOPS_TYPE 0x57460004u
#define WEFT_MEMOPS_VERSION 1u
#define WEFT_MEMOPS_BLK_TYPE 0x0300u /* RO Block header: what this block is */
#define WEFT_MEMOPS_BLK_VERSION 0x0304u /* RO Block header: layout version of this block */
#define WEFT_MEMOPS_BLK_NEXT 0x0308u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_MEMOPS_CTRL 0x030Cu /* RW Port control */
#define WEFT_MEMOPS_CTRL_ENABLE_MASK 0x00000001u
#define WEFT_MEMOPS_CTRL_ENABLE_SHIFT 0u
#define WEFT_MEMOPS_PROG_ADDR 0x0310u /* RW Word index into the program image (bits 7:0); PROG_DATA writes advance it */
#define WEFT_MEMOPS_PROG_DATA 0x0314u /* RW Program image word at PROG_ADDR; a write stores it and advances PROG_ADDR */
#define WEFT_MEMOPS_TEL_SEL 0x0318u /* RW Telemetry counter to read: 0..K stage transactions, K..2K stage bytes, then issued, blocked, denied, errors, mirrored, mirror drops */
#define WEFT_MEMOPS_TEL_LO 0x031Cu /* RO Selected counter bits 31:0; reading it latches bits 63:32 into TEL_HI */
#define WEFT_MEMOPS_TEL_HI 0x0320u /* RO Selected counter bits 63:32 as latched by the last TEL_LO read */
#define WEFT_MEMOPS_TEL_CLEAR 0x0324u /* WO Write 1 to clear every telemetry counter */
#define WEFT_MEMOPS_GEOMETRY 0x0328u /* RO Ports (7:0), stages (15:8), ranges per destination (23:16), tags (31:24) */
#define WEFT_MEMOPS_OUTSTANDING 0x032Cu /* RO Requests issued and not yet completed by their destination */

/* grad: Gradient aggregation (after SwitchML, ATP, DSA): job priorities, flush, geometry, counters */
#define WEFT_GRAD_BASE 0x0500u
#define WEFT_GRAD_TYPE 0x57460006u
#define WEFT_GRAD_VERSION 1u
#define WEFT_GRAD_BLK_TYPE 0x0500u /* RO Block header: what this block is */
#define WEFT_GRAD_BLK_VERSION 0x0504u /* RO Block header: layout version of this block */
#define WEFT_GRAD_BLK_NEXT 0x0508u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_GRAD_PRIO_LO 0x050Cu /* RW Priorities of jobs 0 to 7 (4 bits each, job j at bits 4j+3:4j) */
#define WEFT_GRAD_PRIO_LO_JOB0_MASK 0x0000000Fu
#define WEFT_GRAD_PRIO_LO_JOB0_SHIFT 0u
#define WEFT_GRAD_PRIO_LO_JOB1_MASK 0x000000F0u
#define WEFT_GRAD_PRIO_LO_JOB1_SHIFT 4u
#define WEFT_GRAD_PRIO_LO_JOB2_MASK 0x00000F00u
#define WEFT_GRAD_PRIO_LO_JOB2_SHIFT 8u
#define WEFT_GRAD_PRIO_LO_JOB3_MASK 0x0000F000u
#define WEFT_GRAD_PRIO_LO_JOB3_SHIFT 12u
#define WEFT_GRAD_PRIO_LO_JOB4_MASK 0x000F0000u
#define WEFT_GRAD_PRIO_LO_JOB4_SHIFT 16u
#define WEFT_GRAD_PRIO_LO_JOB5_MASK 0x00F00000u
#define WEFT_GRAD_PRIO_LO_JOB5_SHIFT 20u
#define WEFT_GRAD_PRIO_LO_JOB6_MASK 0x0F000000u
#define WEFT_GRAD_PRIO_LO_JOB6_SHIFT 24u
#define WEFT_GRAD_PRIO_LO_JOB7_MASK 0xF0000000u
#define WEFT_GRAD_PRIO_LO_JOB7_SHIFT 28u
#define WEFT_GRAD_PRIO_HI 0x0510u /* RW Priorities of jobs 8 to 15 (4 bits each, job j at bits 4(j-8)+3:4(j-8)) */
#define WEFT_GRAD_PRIO_HI_JOB8_MASK 0x0000000Fu
#define WEFT_GRAD_PRIO_HI_JOB8_SHIFT 0u
#define WEFT_GRAD_PRIO_HI_JOB9_MASK 0x000000F0u
#define WEFT_GRAD_PRIO_HI_JOB9_SHIFT 4u
#define WEFT_GRAD_PRIO_HI_JOB10_MASK 0x00000F00u
#define WEFT_GRAD_PRIO_HI_JOB10_SHIFT 8u
#define WEFT_GRAD_PRIO_HI_JOB11_MASK 0x0000F000u
#define WEFT_GRAD_PRIO_HI_JOB11_SHIFT 12u
#define WEFT_GRAD_PRIO_HI_JOB12_MASK 0x000F0000u
#define WEFT_GRAD_PRIO_HI_JOB12_SHIFT 16u
#define WEFT_GRAD_PRIO_HI_JOB13_MASK 0x00F00000u
#define WEFT_GRAD_PRIO_HI_JOB13_SHIFT 20u
#define WEFT_GRAD_PRIO_HI_JOB14_MASK 0x0F000000u
#define WEFT_GRAD_PRIO_HI_JOB14_SHIFT 24u
#define WEFT_GRAD_PRIO_HI_JOB15_MASK 0xF0000000u
#define WEFT_GRAD_PRIO_HI_JOB15_SHIFT 28u
#define WEFT_GRAD_CMD 0x0514u /* WO Write 1 to start a command; reads 0 */
#define WEFT_GRAD_CMD_FLUSH_MASK 0x00000001u
#define WEFT_GRAD_CMD_FLUSH_SHIFT 0u
#define WEFT_GRAD_CMD_RESET_MASK 0x00000002u
#define WEFT_GRAD_CMD_RESET_SHIFT 1u
#define WEFT_GRAD_STATUS 0x0518u /* RO Engine status */
#define WEFT_GRAD_STATUS_FLUSHING_MASK 0x00000001u
#define WEFT_GRAD_STATUS_FLUSHING_SHIFT 0u
#define WEFT_GRAD_GEOMETRY 0x051Cu /* RO Build parameters of the engine */
#define WEFT_GRAD_GEOMETRY_LANES_MASK 0x000000FFu
#define WEFT_GRAD_GEOMETRY_LANES_SHIFT 0u
#define WEFT_GRAD_GEOMETRY_SLOT_BITS_MASK 0x0000FF00u
#define WEFT_GRAD_GEOMETRY_SLOT_BITS_SHIFT 8u
#define WEFT_GRAD_GEOMETRY_VALUE_BEATS_MASK 0x00FF0000u
#define WEFT_GRAD_GEOMETRY_VALUE_BEATS_SHIFT 16u
#define WEFT_GRAD_GEOMETRY_MAX_WORKERS_MASK 0xFF000000u
#define WEFT_GRAD_GEOMETRY_MAX_WORKERS_SHIFT 24u
#define WEFT_GRAD_PKTS_LO 0x0520u /* RO Packets in (every packet on the input, malformed ones included) */
#define WEFT_GRAD_PKTS_HI 0x0524u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_AGGREGATED_LO 0x0528u /* RO Packets whose values were summed on the card (claims, adds, single-worker chunks) */
#define WEFT_GRAD_AGGREGATED_HI 0x052Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_COMPLETED_LO 0x0530u /* RO Chunks completed on the card (RESULT packets) */
#define WEFT_GRAD_COMPLETED_HI 0x0534u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_PREEMPTED_LO 0x0538u /* RO Preemptions: a chunk of a higher-priority job, or a newer chunk of the holder's own job (the holder is a stale claim), took a slot; the partial went out as EVICT */
#define WEFT_GRAD_PREEMPTED_HI 0x053Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_FALLBACKS_LO 0x0540u /* RO Packets forwarded unchanged to the host (slot held by a job of no lower priority) */
#define WEFT_GRAD_FALLBACKS_HI 0x0544u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_DUPLICATES_LO 0x0548u /* RO Duplicates: the worker's bit was already set in the chunk's slot (not added; answered with a NACK to the workers missing from the slot), or the slot completed the chunk last (a late copy, dropped) */
#define WEFT_GRAD_DUPLICATES_HI 0x054Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_MALFORMED_LO 0x0550u /* RO Malformed packets, dropped whole */
#define WEFT_GRAD_MALFORMED_HI 0x0554u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_GRAD_FLUSHED_LO 0x0558u /* RO Slots evicted by a flush */
#define WEFT_GRAD_FLUSHED_HI 0x055Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */

/* avm: Accelerator Virtual Memory (after NicOS): allocation commands, arbitration, per-consumer limits, observation snapshot */
#define WEFT_AVM_BASE 0x0600u
#define WEFT_AVM_TYPE 0x57460007u
#define WEFT_AVM_VERSION 1u
#define WEFT_AVM_BLK_TYPE 0x0600u /* RO Block header: what this block is */
#define WEFT_AVM_BLK_VERSION 0x0604u /* RO Block header: layout version of this block */
#define WEFT_AVM_BLK_NEXT 0x0608u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_AVM_CTRL 0x060Cu /* RW Pool control */
#define WEFT_AVM_CTRL_MANAGED_MASK 0x00000001u
#define WEFT_AVM_CTRL_MANAGED_SHIFT 0u
#define WEFT_AVM_CMD 0x0610u /* WO Start an allocation command; refused with RESULT=BUSY while one runs */
#define WEFT_AVM_CMD_OP_MASK 0x00000003u
#define WEFT_AVM_CMD_OP_SHIFT 0u
#define WEFT_AVM_CMD_CONSUMER_MASK 0x00000030u
#define WEFT_AVM_CMD_CONSUMER_SHIFT 4u
#define WEFT_AVM_CMD_ARG_MASK 0x0000FF00u
#define WEFT_AVM_CMD_ARG_SHIFT 8u
#define WEFT_AVM_STATUS 0x0614u /* RO Outcome of the last command */
#define WEFT_AVM_STATUS_BUSY_MASK 0x00000001u
#define WEFT_AVM_STATUS_BUSY_SHIFT 0u
#define WEFT_AVM_STATUS_RESULT_MASK 0x00000070u
#define WEFT_AVM_STATUS_RESULT_SHIFT 4u
#define WEFT_AVM_STATUS_PAGE_MASK 0x0000FF00u
#define WEFT_AVM_STATUS_PAGE_SHIFT 8u
#define WEFT_AVM_STATUS_COUNT_MASK 0x00FF0000u
#define WEFT_AVM_STATUS_COUNT_SHIFT 16u
#define WEFT_AVM_SNAP 0x0618u /* WO Write 1: copy every counter, histogram and page count, and the cycle, into the snapshot in one cycle, and reset SNAP_SEL */
#define WEFT_AVM_SNAP_SEL 0x061Cu /* RW Snapshot word to read (bits 6:0): consumer c's word k at c*20+k (k: 0 requests, 1 grants, 2 stall cycles, 3 faults, 4+b latency bucket b), consumer c's pages at 80+c */
#define WEFT_AVM_SNAP_DATA 0x0620u /* RO The selected snapshot word (32-bit counters wrap); reading it advances SNAP_SEL */
#define WEFT_AVM_SNAP_CYCLE 0x0624u /* RO Bits 31:0 of the block's cycle counter at the last snapshot */
#define WEFT_AVM_CLEAR 0x0628u /* WO Write 1 to clear every counter and histogram (not the snapshot) */
#define WEFT_AVM_GEOMETRY 0x062Cu /* RO Consumers (7:0), physical pages (15:8), log2 words per page (19:16), virtual pages per consumer (27:20), queue depth (31:28) */
#define WEFT_AVM_C0_WEIGHT 0x0640u /* RW Arbitration weight (bits 7:0; 0 counts as 1): grants per round-robin turn */
#define WEFT_AVM_C0_PRIORITY 0x0644u /* RW Arbitration priority (bits 1:0): the highest waiting class is served first */
#define WEFT_AVM_C0_LIMITS 0x0648u /* RW Page quota and reservation */
#define WEFT_AVM_C0_LIMITS_QUOTA_MASK 0x000000FFu
#define WEFT_AVM_C0_LIMITS_QUOTA_SHIFT 0u
#define WEFT_AVM_C0_LIMITS_RESERVE_MASK 0x0000FF00u
#define WEFT_AVM_C0_LIMITS_RESERVE_SHIFT 8u
#define WEFT_AVM_C0_PAGES 0x064Cu /* RO Pages mapped now */
#define WEFT_AVM_C1_WEIGHT 0x0650u /* RW Arbitration weight (bits 7:0; 0 counts as 1): grants per round-robin turn */
#define WEFT_AVM_C1_PRIORITY 0x0654u /* RW Arbitration priority (bits 1:0): the highest waiting class is served first */
#define WEFT_AVM_C1_LIMITS 0x0658u /* RW Page quota and reservation */
#define WEFT_AVM_C1_LIMITS_QUOTA_MASK 0x000000FFu
#define WEFT_AVM_C1_LIMITS_QUOTA_SHIFT 0u
#define WEFT_AVM_C1_LIMITS_RESERVE_MASK 0x0000FF00u
#define WEFT_AVM_C1_LIMITS_RESERVE_SHIFT 8u
#define WEFT_AVM_C1_PAGES 0x065Cu /* RO Pages mapped now */
#define WEFT_AVM_C2_WEIGHT 0x0660u /* RW Arbitration weight (bits 7:0; 0 counts as 1): grants per round-robin turn */
#define WEFT_AVM_C2_PRIORITY 0x0664u /* RW Arbitration priority (bits 1:0): the highest waiting class is served first */
#define WEFT_AVM_C2_LIMITS 0x0668u /* RW Page quota and reservation */
#define WEFT_AVM_C2_LIMITS_QUOTA_MASK 0x000000FFu
#define WEFT_AVM_C2_LIMITS_QUOTA_SHIFT 0u
#define WEFT_AVM_C2_LIMITS_RESERVE_MASK 0x0000FF00u
#define WEFT_AVM_C2_LIMITS_RESERVE_SHIFT 8u
#define WEFT_AVM_C2_PAGES 0x066Cu /* RO Pages mapped now */
#define WEFT_AVM_C3_WEIGHT 0x0670u /* RW Arbitration weight (bits 7:0; 0 counts as 1): grants per round-robin turn */
#define WEFT_AVM_C3_PRIORITY 0x0674u /* RW Arbitration priority (bits 1:0): the highest waiting class is served first */
#define WEFT_AVM_C3_LIMITS 0x0678u /* RW Page quota and reservation */
#define WEFT_AVM_C3_LIMITS_QUOTA_MASK 0x000000FFu
#define WEFT_AVM_C3_LIMITS_QUOTA_SHIFT 0u
#define WEFT_AVM_C3_LIMITS_RESERVE_MASK 0x0000FF00u
#define WEFT_AVM_C3_LIMITS_RESERVE_SHIFT 8u
#define WEFT_AVM_C3_PAGES 0x067Cu /* RO Pages mapped now */

/* net: The card on the wire: addresses, destinations, record packing, gradient workers, frame counters */
#define WEFT_NET_BASE 0x0700u
#define WEFT_NET_TYPE 0x57460008u
#define WEFT_NET_VERSION 1u
#define WEFT_NET_BLK_TYPE 0x0700u /* RO Block header: what this block is */
#define WEFT_NET_BLK_VERSION 0x0704u /* RO Block header: layout version of this block */
#define WEFT_NET_BLK_NEXT 0x0708u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_NET_CTRL 0x070Cu /* RW Engines on the wire on or off */
#define WEFT_NET_CTRL_ENABLE_MASK 0x00000001u
#define WEFT_NET_CTRL_ENABLE_SHIFT 0u
#define WEFT_NET_MAC_HI 0x0710u /* RW Card MAC address, first two bytes (bits 15:0, first byte in 15:8) */
#define WEFT_NET_MAC_LO 0x0714u /* RW Card MAC address, last four bytes (first of them in bits 31:24) */
#define WEFT_NET_IP 0x0718u /* RW Card IPv4 address (first byte in bits 31:24) */
#define WEFT_NET_KV_MAC_HI 0x071Cu /* RW Key-value collector MAC, first two bytes */
#define WEFT_NET_KV_MAC_LO 0x0720u /* RW Key-value collector MAC, last four bytes */
#define WEFT_NET_KV_IP 0x0724u /* RW Key-value collector IPv4 address */
#define WEFT_NET_KV_PORT 0x0728u /* RW Key-value collector UDP port (bits 15:0) */
#define WEFT_NET_GRAD_MAC_HI 0x072Cu /* RW Gradient host fallback MAC, first two bytes */
#define WEFT_NET_GRAD_MAC_LO 0x0730u /* RW Gradient host fallback MAC, last four bytes */
#define WEFT_NET_GRAD_IP 0x0734u /* RW Gradient host fallback IPv4 address */
#define WEFT_NET_GRAD_PORT 0x0738u /* RW Gradient host fallback UDP port (bits 15:0) */
#define WEFT_NET_PACK_MAX 0x073Cu /* RW Most records in one key-value record frame (bits 10:0; 0 acts as 1, above 1119 as 1119) */
#define WEFT_NET_PACK_WAIT 0x0740u /* RW Cycles (axis_aclk) after its first record that a partial record frame leaves (bits 19:0) */
#define WEFT_NET_PACK_SEQ 0x0744u /* RW Sequence number of the next record frame (counts up per frame) */
#define WEFT_NET_WT_SEL 0x0748u /* RW Gradient worker table: the entry WT_CMD writes */
#define WEFT_NET_WT_SEL_WORKER_MASK 0x0000001Fu
#define WEFT_NET_WT_SEL_WORKER_SHIFT 0u
#define WEFT_NET_WT_SEL_JOB_MASK 0x00000F00u
#define WEFT_NET_WT_SEL_JOB_SHIFT 8u
#define WEFT_NET_WT_MAC_HI 0x074Cu /* RW Staged worker entry: MAC first two bytes, VALID, HOST */
#define WEFT_NET_WT_MAC_HI_MAC_MASK 0x0000FFFFu
#define WEFT_NET_WT_MAC_HI_MAC_SHIFT 0u
#define WEFT_NET_WT_MAC_HI_VALID_MASK 0x00010000u
#define WEFT_NET_WT_MAC_HI_VALID_SHIFT 16u
#define WEFT_NET_WT_MAC_HI_HOST_MASK 0x00020000u
#define WEFT_NET_WT_MAC_HI_HOST_SHIFT 17u
#define WEFT_NET_WT_MAC_LO 0x0750u /* RW Staged worker entry: MAC last four bytes */
#define WEFT_NET_WT_IP 0x0754u /* RW Staged worker entry: IPv4 address */
#define WEFT_NET_WT_PORT 0x0758u /* RW Staged worker entry: UDP port (bits 15:0) */
#define WEFT_NET_WT_CMD 0x075Cu /* WO Gradient worker table command */
#define WEFT_NET_WT_CMD_WRITE_MASK 0x00000001u
#define WEFT_NET_WT_CMD_WRITE_SHIFT 0u
#define WEFT_NET_RX_FRAMES_LO 0x0760u /* RO Frames taken from the network (wire receive) */
#define WEFT_NET_RX_FRAMES_HI 0x0764u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_RX_BAD_LO 0x0768u /* RO Network frames dropped whole: tuser_size out of range or disagreeing with the frame's beats */
#define WEFT_NET_RX_BAD_HI 0x076Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_RX_ENGINE_LO 0x0770u /* RO Network frames steered to an engine */
#define WEFT_NET_RX_ENGINE_HI 0x0774u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_RX_HOST_LO 0x0778u /* RO Network frames passed to the host unchanged (malformed ones included) */
#define WEFT_NET_RX_HOST_HI 0x077Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_RX_MALFORMED_LO 0x0780u /* RO Network frames for an engine that failed a header check (passed to the host) */
#define WEFT_NET_RX_MALFORMED_HI 0x0784u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_H2C_FRAMES_LO 0x0788u /* RO Frames taken from the host (QDMA H2C) */
#define WEFT_NET_H2C_FRAMES_HI 0x078Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_H2C_BAD_LO 0x0790u /* RO Host frames dropped whole: tuser_size out of range or disagreeing with the frame's beats */
#define WEFT_NET_H2C_BAD_HI 0x0794u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_H2C_ENGINE_LO 0x0798u /* RO Host frames steered to an engine */
#define WEFT_NET_H2C_ENGINE_HI 0x079Cu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_H2C_WIRE_LO 0x07A0u /* RO Host frames passed to the network unchanged (malformed ones included) */
#define WEFT_NET_H2C_WIRE_HI 0x07A4u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_H2C_MALFORMED_LO 0x07A8u /* RO Host frames for an engine that failed a header check (passed to the network) */
#define WEFT_NET_H2C_MALFORMED_HI 0x07ACu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_C2H_FRAMES_LO 0x07B0u /* RO Frames sent to the host */
#define WEFT_NET_C2H_FRAMES_HI 0x07B4u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_TX_FRAMES_LO 0x07B8u /* RO Frames sent to the network */
#define WEFT_NET_TX_FRAMES_HI 0x07BCu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_KV_ACKS_LO 0x07C0u /* RO Key-value ack frames sent */
#define WEFT_NET_KV_ACKS_HI 0x07C4u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_KV_RECORD_FRAMES_LO 0x07C8u /* RO Key-value record frames sent to the collector */
#define WEFT_NET_KV_RECORD_FRAMES_HI 0x07CCu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_GRAD_COPIES_LO 0x07D0u /* RO Gradient RESULT frames sent to workers (one per worker and chunk), NACK frames included (one per worker missing from the slot) */
#define WEFT_NET_GRAD_COPIES_HI 0x07D4u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_GRAD_NO_WORKER_LO 0x07D8u /* RO Gradient RESULT or NACK copies not sent: the worker table entry is not valid */
#define WEFT_NET_GRAD_NO_WORKER_HI 0x07DCu /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */
#define WEFT_NET_MEMOPS_REPLIES_LO 0x07E0u /* RO MemOps completion frames sent */
#define WEFT_NET_MEMOPS_REPLIES_HI 0x07E4u /* RO Bits 63:32 of the counter, as latched by the last read of its LO word */

#endif /* WEFT_REGS_H */
