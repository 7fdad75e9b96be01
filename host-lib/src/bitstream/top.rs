//! What the card's top is, for the bitstream flow.
//!
//! [`opennic_top`] is the one place the OpenNIC top plugs in: it returns
//! `None` until weft-hdl has `weft_top` (issue 8), the block that exposes
//! exactly the 250 MHz box's ports. When it lands, it returns that block's
//! Verilog and module name, and nothing else in the flow changes: the
//! wrapper instantiates it ([`super::opennic::wrapper`]), `build` stops
//! refusing, and `estimate` synthesises it instead of the card.
//!
//! Until then the top that exists is `weft_hdl::card::Card` (CSR block and
//! `kv_agg` on one clock), emitted as block `card`.

/// One Verilog file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// File name (`weft_card.v`).
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

/// The module name the OpenNIC top will have.
pub const OPENNIC_TOP_MODULE: &str = "weft_top";

/// How the current top is described while `weft_top` does not exist.
pub const CURRENT_TOP: &str = "card (CSR + kv_agg; weft_top not yet built)";

/// The OpenNIC top for an image built with `build`, or `None` while weft-hdl
/// has no `weft_top` (issue 8).
///
/// When `weft_top` lands this becomes, in one place:
///
/// ```ignore
/// Some(TopSource {
///     module: OPENNIC_TOP_MODULE.into(),
///     files: vec![SourceFile {
///         name: "weft_top.v".into(),
///         text: weft_hdl::emit::verilog_of(&weft_hdl::emit::top(build), OPENNIC_TOP_MODULE),
///     }],
/// })
/// ```
#[cfg(feature = "sim")]
pub fn opennic_top(build: &weft_regs::BuildInfo) -> Option<TopSource> {
    let _ = build;
    None
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
