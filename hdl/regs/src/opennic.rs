//! Where weft's register map sits on a card running AMD's OpenNIC shell.
//!
//! Facts from the shell's sources (open-nic-shell; file names given so they
//! can be checked):
//!
//! * The shell's registers are on **PCIe BAR2** (4 MiB:
//!   `pf0_bar2_size_qdma` in `src/qdma_subsystem/vivado_ip/qdma_no_sriov_*.tcl`);
//!   BAR0 is the QDMA IP's own register space (queues, contexts).
//! * The 250 MHz box (box 0), which holds weft's plugin, owns BAR2
//!   0x100000–0x1FFFFF: `C_BOX0_BASE_ADDR = 32'h100000` in
//!   `src/system_config/system_config_address_map.sv`, a 20-bit window in
//!   `src/system_config/vivado_ip/system_config_axi_crossbar.tcl`. The box
//!   sees offsets 0x00000–0xFFFFF.
//! * Inside the box, weft's plugin puts AXI4-Lite slave 0 at box offset 0
//!   (see `weft::bitstream::box_map`), and slave 0 carries the whole map.
//! * The register bus has **no `wstrb`**: the box's AXI4-Lite ports have
//!   none (`plugin/p2p/p2p_250mhz.sv`), the box crossbar is fed `4'hF`
//!   (`plugin/p2p/box_250mhz/box_250mhz_address_map.v`), and `weft_top`
//!   ties its own strobes to all ones. Every write on a card writes a whole
//!   32-bit word.
//!
//! The map's byte addresses ([`crate::Register::addr`]) are offsets from
//! the map's base; on a card, add [`MAP_OFFSET`] within BAR [`BAR`].

/// The PCIe BAR of the shell's register space (BAR0 is the QDMA IP's).
pub const BAR: u32 = 2;
/// The shell's box weft's plugin lives in: box 0, the 250 MHz box.
pub const BOX: u32 = 0;
/// Byte offset of the 250 MHz box (box 0) in BAR2 (`C_BOX0_BASE_ADDR`).
pub const BOX0_OFFSET: u32 = 0x10_0000;
/// Bytes of BAR2 the 250 MHz box owns: box offsets `0..BOX_BYTES`.
pub const BOX_BYTES: u32 = 1 << 20;
/// The box's AXI4-Lite slave (of `2 * NUM_INTF`) that weft's map answers on.
pub const SLAVE: u32 = 0;
/// Byte offset of slave [`SLAVE`] inside the box: weft's plugin puts it at 0.
pub const SLAVE_BOX_OFFSET: u32 = 0;
/// Byte offset of the map's base (the ID block) in BAR [`BAR`].
pub const MAP_OFFSET: u32 = BOX0_OFFSET + SLAVE_BOX_OFFSET;
/// Whether the card's register bus carries byte write strobes: it does not,
/// so byte-strobed (narrow) writes are not possible on a card.
pub const HAS_WSTRB: bool = false;

const _: () = assert!(
    SLAVE_BOX_OFFSET + (1 << crate::map::ADDR_BITS) <= BOX_BYTES,
    "weft's register map does not fit the OpenNIC 250 MHz box"
);
