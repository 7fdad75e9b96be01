//! Discovery: read the ID block and walk the self-describing register chain,
//! refusing a card whose map this driver does not speak.

use crate::{Device, Error, RegisterAccess, Result};
use weft_regs::{board, id, Block, Features, MAGIC, MAP, MAP_VERSION_MAJOR, MAP_VERSION_MINOR};

/// One block found on the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockInfo {
    /// Byte address of the block's header.
    pub base: u32,
    /// Header type word.
    pub type_id: u32,
    /// Header version word.
    pub version: u32,
    /// The block's name when this driver knows the type.
    pub name: Option<&'static str>,
}

/// What the ID block and the chain say about a card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardInfo {
    /// `ID.MAGIC`.
    pub magic: u32,
    /// `ID.MAP_VERSION` (major in 31:16, minor in 15:0).
    pub map_version: u32,
    /// `ID.BOARD_ID`.
    pub board_id: u32,
    /// `ID.BUILD_DATE`, Unix seconds.
    pub build_date: u32,
    /// `ID.GIT_HASH`.
    pub git_hash: u32,
    /// `ID.FEATURES`.
    pub features: Features,
    /// `ID.MAP_SPAN`.
    pub map_span: u32,
    /// Blocks in chain order.
    pub blocks: Vec<BlockInfo>,
}

impl CardInfo {
    /// Board name, if known.
    pub fn board_name(&self) -> Option<&'static str> {
        board::name(self.board_id)
    }
    /// `major.minor`.
    pub fn map_version_string(&self) -> String {
        format!("{}.{}", self.map_version >> 16, self.map_version & 0xffff)
    }
}

fn known(type_id: u32) -> Option<&'static Block> {
    MAP.blocks.iter().find(|b| b.type_id == type_id)
}

/// Chains longer than this are treated as malformed (a loop or garbage).
const MAX_BLOCKS: usize = 256;

/// Identify the card behind `dev`: check the magic and map version, then
/// walk the block chain from offset 0.
pub fn identify<D: Device + ?Sized>(dev: &D) -> Result<CardInfo> {
    let name = dev.name();
    let magic = dev.read_reg(&id::MAGIC)?;
    if magic != MAGIC {
        return Err(Error::NotWeft {
            device: name,
            found: magic,
            expected: MAGIC,
        });
    }
    let map_version = dev.read_reg(&id::MAP_VERSION)?;
    let (major, minor) = (map_version >> 16, map_version & 0xffff);
    // Minor versions only add registers, so an older minor is fine; a newer
    // one may have blocks we would misread, and a different major moved things.
    if major != MAP_VERSION_MAJOR || minor > MAP_VERSION_MINOR {
        return Err(Error::MapVersion {
            device: name,
            found_major: major,
            found_minor: minor,
            ours_major: MAP_VERSION_MAJOR,
            ours_minor: MAP_VERSION_MINOR,
        });
    }
    let map_span = dev.read_reg(&id::MAP_SPAN)?;
    if dev.bar_len() < map_span as u64 {
        return Err(Error::WindowTooSmall {
            device: name,
            window: dev.bar_len(),
            map: map_span as u64,
        });
    }
    let mut blocks = vec![];
    let mut at = 0u32;
    loop {
        let chain_err = |why: String| Error::Chain {
            device: dev.name(),
            addr: at,
            why,
        };
        if blocks.len() >= MAX_BLOCKS {
            return Err(chain_err(format!("more than {MAX_BLOCKS} blocks")));
        }
        let type_id = dev.read32(at)?;
        let version = dev.read32(at + 4)?;
        let next = dev.read32(at + 8)?;
        let known = known(type_id);
        if let Some(k) = known {
            if version > k.version {
                return Err(chain_err(format!(
                    "block {} has version {version}, this driver knows up to {}",
                    k.name, k.version
                )));
            }
        }
        blocks.push(BlockInfo {
            base: at,
            type_id,
            version,
            name: known.map(|k| k.name),
        });
        if next == 0 {
            break;
        }
        if next <= at || !next.is_multiple_of(4) || next >= map_span {
            return Err(chain_err(format!("next-block offset {next:#x} is invalid")));
        }
        at = next;
    }
    if blocks[0].type_id != weft_regs::block_type::ID {
        return Err(Error::Chain {
            device: name,
            addr: 0,
            why: "the chain does not start with the ID block".into(),
        });
    }
    Ok(CardInfo {
        magic,
        map_version,
        board_id: dev.read_reg(&id::BOARD_ID)?,
        build_date: dev.read_reg(&id::BUILD_DATE)?,
        git_hash: dev.read_reg(&id::GIT_HASH)?,
        features: Features::from_bits_retain(dev.read_reg(&id::FEATURES)?),
        map_span,
        blocks,
    })
}
