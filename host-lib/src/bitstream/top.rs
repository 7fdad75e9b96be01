//! What the card's top is, for the bitstream flow.
//!
//! [`opennic_top`] is the one place the OpenNIC top plugs in: weft-hdl's
//! `weft_top` (`weft_hdl::top::WeftTop`), which exposes exactly the 250 MHz
//! box's ports. The wrapper instantiates it ([`super::opennic::wrapper`]),
//! `build` puts its Verilog in the plugin, and `estimate` synthesises it.
//! The build library also takes no top at all (a stub wrapper that refuses
//! synthesis, for dry runs only), which its tests use to check the wrapper
//! against shell checkouts without elaborating weft_top.

/// One Verilog file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// File name (`weft_top.v`).
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The OpenNIC top: its module name and the files that define it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TopSource {
    /// The module the 250 MHz box wrapper instantiates (`weft_top`).
    pub module: String,
    /// The Verilog files (the top and every submodule).
    pub files: Vec<SourceFile>,
}

/// The module name of the OpenNIC top.
pub const OPENNIC_TOP_MODULE: &str = "weft_top";

/// How a build without a top is described (a stub wrapper: dry runs only).
pub const NO_TOP: &str = "none (stub wrapper: dry runs only)";

/// The OpenNIC top for an image built with `build`: `weft_top` (its
/// Verilog holds every submodule).
#[cfg(feature = "sim")]
pub fn opennic_top(build: &weft_regs::BuildInfo) -> TopSource {
    TopSource {
        module: OPENNIC_TOP_MODULE.into(),
        files: vec![SourceFile {
            name: format!("{OPENNIC_TOP_MODULE}.v"),
            text: weft_hdl::emit::top_verilog(build),
        }],
    }
}

/// The Verilog of every block weft-hdl emits today (`weft_<block>.v`, as
/// `weft hdl emit` names them).
#[cfg(feature = "sim")]
pub fn blocks(build: &weft_regs::BuildInfo) -> Vec<(String, SourceFile)> {
    weft_hdl::emit::all(build)
        .into_iter()
        .map(|e| {
            let module = weft_hdl::emit::module_name(e.name);
            (
                e.name.to_string(),
                SourceFile {
                    name: format!("{module}.v"),
                    text: e.verilog,
                },
            )
        })
        .collect()
}

/// The build info of an image for board id `board_id` from this source tree.
#[cfg(feature = "sim")]
pub fn build_info(board_id: u32) -> weft_regs::BuildInfo {
    weft_hdl::build_info::for_board(board_id)
}

/// The full git hash of this source tree (empty outside a checkout).
#[cfg(feature = "sim")]
pub fn git_hash() -> &'static str {
    weft_hdl::build_info::GIT_HASH
}
