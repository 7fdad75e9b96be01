//! The build constants of the card image that this source tree produces.

use weft_regs::{board, BuildInfo, Features};

/// Full git commit hash of the source tree (empty outside a git checkout).
pub const GIT_HASH: &str = env!("WEFT_GIT_HASH");

/// Build info for a card image of this source tree on `board_id`: the
/// commit's hash and time, and the engines built in so far.
pub fn for_board(board_id: u32) -> BuildInfo {
    BuildInfo {
        board_id,
        build_date: env!("WEFT_BUILD_DATE").parse().unwrap_or(0),
        git_hash: env!("WEFT_GIT_HASH32").parse().unwrap_or(0),
        features: Features::CTRL.union(Features::KV_AGG),
    }
}

/// Build info of the simulated card built from this source tree.
pub fn this_build() -> BuildInfo {
    for_board(board::SIM)
}
