/* weft register map 1.1 -- generated from hdl/regs/src/map.rs by weft-regs; do not edit. */
#ifndef WEFT_REGS_H
#define WEFT_REGS_H

#define WEFT_MAP_VERSION 0x00010001u
#define WEFT_MAP_ADDR_BITS 16u

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

/* queue: Host queue engine: H2C and C2H descriptor rings, doorbells, completion rings */
#define WEFT_QUEUE_BASE 0x0400u
#define WEFT_QUEUE_TYPE 0x57460005u
#define WEFT_QUEUE_VERSION 1u
#define WEFT_QUEUE_BLK_TYPE 0x0400u /* RO Block header: what this block is */
#define WEFT_QUEUE_BLK_VERSION 0x0404u /* RO Block header: layout version of this block */
#define WEFT_QUEUE_BLK_NEXT 0x0408u /* RO Block header: byte offset of the next block, 0 at the end of the chain */
#define WEFT_QUEUE_INFO 0x040Cu /* RO Queues, largest ring and protocol version of the engine */
#define WEFT_QUEUE_INFO_H2C_MASK 0x000000FFu
#define WEFT_QUEUE_INFO_H2C_SHIFT 0u
#define WEFT_QUEUE_INFO_C2H_MASK 0x0000FF00u
#define WEFT_QUEUE_INFO_C2H_SHIFT 8u
#define WEFT_QUEUE_INFO_MAX_LOG2_MASK 0x00FF0000u
#define WEFT_QUEUE_INFO_MAX_LOG2_SHIFT 16u
#define WEFT_QUEUE_INFO_PROTOCOL_MASK 0xFF000000u
#define WEFT_QUEUE_INFO_PROTOCOL_SHIFT 24u
#define WEFT_QUEUE_H2C_DESC_LO 0x0410u /* RW Descriptor ring IOVA, bits 31:0 (16-byte aligned) */
#define WEFT_QUEUE_H2C_DESC_HI 0x0414u /* RW Descriptor ring IOVA, bits 63:32 */
#define WEFT_QUEUE_H2C_CPL_LO 0x0418u /* RW Completion ring IOVA, bits 31:0 (16-byte aligned) */
#define WEFT_QUEUE_H2C_CPL_HI 0x041Cu /* RW Completion ring IOVA, bits 63:32 */
#define WEFT_QUEUE_H2C_SIZE 0x0420u /* RW log2 of the entries in both rings (0 to 12); write while disabled */
#define WEFT_QUEUE_H2C_CTRL 0x0424u /* RW Ring control; enabling resets the card's indices to 0 */
#define WEFT_QUEUE_H2C_CTRL_ENABLE_MASK 0x00000001u
#define WEFT_QUEUE_H2C_CTRL_ENABLE_SHIFT 0u
#define WEFT_QUEUE_H2C_CTRL_IRQ_MASK 0x00000002u
#define WEFT_QUEUE_H2C_CTRL_IRQ_SHIFT 1u
#define WEFT_QUEUE_H2C_CTRL_LOOPBACK_MASK 0x00000004u
#define WEFT_QUEUE_H2C_CTRL_LOOPBACK_SHIFT 2u
#define WEFT_QUEUE_H2C_CTRL_VECTOR_MASK 0x0000FF00u
#define WEFT_QUEUE_H2C_CTRL_VECTOR_SHIFT 8u
#define WEFT_QUEUE_H2C_DOORBELL 0x0428u /* WO Doorbell: the host's descriptor producer index (free-running, 32 bits); reads 0 */
#define WEFT_QUEUE_H2C_HEAD 0x042Cu /* RO The card's descriptor consumer index (descriptors fetched) */
#define WEFT_QUEUE_H2C_CPL_TAIL 0x0430u /* RO The card's completion producer index (completions written) */
#define WEFT_QUEUE_H2C_CPL_HEAD 0x0434u /* RW The host's completion consumer index: completions up to here may be overwritten */
#define WEFT_QUEUE_H2C_STATUS 0x0438u /* W1C Errors (write 1 to clear); any error stops the ring until it is re-enabled */
#define WEFT_QUEUE_H2C_STATUS_DMA_FAULT_MASK 0x00000001u
#define WEFT_QUEUE_H2C_STATUS_DMA_FAULT_SHIFT 0u
#define WEFT_QUEUE_H2C_STATUS_BAD_DESC_MASK 0x00000002u
#define WEFT_QUEUE_H2C_STATUS_BAD_DESC_SHIFT 1u
#define WEFT_QUEUE_H2C_STATUS_OVERRUN_MASK 0x00000004u
#define WEFT_QUEUE_H2C_STATUS_OVERRUN_SHIFT 2u
#define WEFT_QUEUE_H2C_STATUS_BAD_CONFIG_MASK 0x00000008u
#define WEFT_QUEUE_H2C_STATUS_BAD_CONFIG_SHIFT 3u
#define WEFT_QUEUE_C2H_DESC_LO 0x0440u /* RW Descriptor ring IOVA, bits 31:0 (16-byte aligned) */
#define WEFT_QUEUE_C2H_DESC_HI 0x0444u /* RW Descriptor ring IOVA, bits 63:32 */
#define WEFT_QUEUE_C2H_CPL_LO 0x0448u /* RW Completion ring IOVA, bits 31:0 (16-byte aligned) */
#define WEFT_QUEUE_C2H_CPL_HI 0x044Cu /* RW Completion ring IOVA, bits 63:32 */
#define WEFT_QUEUE_C2H_SIZE 0x0450u /* RW log2 of the entries in both rings (0 to 12); write while disabled */
#define WEFT_QUEUE_C2H_CTRL 0x0454u /* RW Ring control; enabling resets the card's indices to 0 */
#define WEFT_QUEUE_C2H_CTRL_ENABLE_MASK 0x00000001u
#define WEFT_QUEUE_C2H_CTRL_ENABLE_SHIFT 0u
#define WEFT_QUEUE_C2H_CTRL_IRQ_MASK 0x00000002u
#define WEFT_QUEUE_C2H_CTRL_IRQ_SHIFT 1u
#define WEFT_QUEUE_C2H_CTRL_LOOPBACK_MASK 0x00000004u
#define WEFT_QUEUE_C2H_CTRL_LOOPBACK_SHIFT 2u
#define WEFT_QUEUE_C2H_CTRL_VECTOR_MASK 0x0000FF00u
#define WEFT_QUEUE_C2H_CTRL_VECTOR_SHIFT 8u
#define WEFT_QUEUE_C2H_DOORBELL 0x0458u /* WO Doorbell: the host's descriptor producer index (free-running, 32 bits); reads 0 */
#define WEFT_QUEUE_C2H_HEAD 0x045Cu /* RO The card's descriptor consumer index (descriptors fetched) */
#define WEFT_QUEUE_C2H_CPL_TAIL 0x0460u /* RO The card's completion producer index (completions written) */
#define WEFT_QUEUE_C2H_CPL_HEAD 0x0464u /* RW The host's completion consumer index: completions up to here may be overwritten */
#define WEFT_QUEUE_C2H_STATUS 0x0468u /* W1C Errors (write 1 to clear); any error stops the ring until it is re-enabled */
#define WEFT_QUEUE_C2H_STATUS_DMA_FAULT_MASK 0x00000001u
#define WEFT_QUEUE_C2H_STATUS_DMA_FAULT_SHIFT 0u
#define WEFT_QUEUE_C2H_STATUS_BAD_DESC_MASK 0x00000002u
#define WEFT_QUEUE_C2H_STATUS_BAD_DESC_SHIFT 1u
#define WEFT_QUEUE_C2H_STATUS_OVERRUN_MASK 0x00000004u
#define WEFT_QUEUE_C2H_STATUS_OVERRUN_SHIFT 2u
#define WEFT_QUEUE_C2H_STATUS_BAD_CONFIG_MASK 0x00000008u
#define WEFT_QUEUE_C2H_STATUS_BAD_CONFIG_SHIFT 3u

#endif /* WEFT_REGS_H */
