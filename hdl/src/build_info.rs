//! The build constants of the card image that this source tree produces.

use weft_regs::{board, BuildInfo, Features};

/// Full git commit hash of the source tree (empty outside a git checkout).
pub const GIT_HASH: &str = env!("WEFT_GIT_HASH");

fn build(board_id: u32, features: Features) -> BuildInfo {
    BuildInfo {
        board_id,
        build_date: env!("WEFT_BUILD_DATE").parse().unwrap_or(0),
        git_hash: env!("WEFT_GIT_HASH32").parse().unwrap_or(0),
        features,
    }
}

/// Build info for an Alveo image of this source tree on `board_id`: the
/// commit's hash and time, and the engines of the OpenNIC top (`weft_top`).
pub fn for_board(board_id: u32) -> BuildInfo {
    build(board_id, top_features())
}

/// The engines in `weft_top`.
pub fn top_features() -> Features {
    Features::CTRL
        | Features::KV_AGG
        | Features::GRAD_AGG
        | Features::AVM
        | Features::MEMOPS
        | Features::NET
}

/// Build info of the simulated card built from this source tree (the CSR
/// block and the key-value engine).
pub fn this_build() -> BuildInfo {
    build(board::SIM, Features::CTRL.union(Features::KV_AGG))
}

/// Build info of the OpenNIC top simulated from this source tree.
pub fn top_build() -> BuildInfo {
    build(board::SIM, top_features())
}

/// Build info with the commit's hash and time left out (both 0): what the
/// timing and resource estimates synthesise, so that the same design gives
/// the same netlist at every commit (the ID block's constants would
/// otherwise change a few LUTs of its read decode and every cache key).
pub fn stamp_free() -> BuildInfo {
    BuildInfo {
        build_date: 0,
        git_hash: 0,
        ..this_build()
    }
}
