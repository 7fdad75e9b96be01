//! The card's identity as `weft status` reports it.

use serde::Serialize;
use weft_driver::CardInfo;

/// One block of the register chain.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct BlockStatus {
    /// Header offset.
    pub base: String,
    /// Block name, or `unknown`.
    pub name: String,
    /// Header type word.
    pub type_id: String,
    /// Header version.
    pub version: u32,
    /// The engine behind the block is built into this image (`ID.FEATURES`);
    /// `false` for a block the map defines but this image leaves out, whose
    /// registers read 0.
    pub present: bool,
}

/// Whether the image with `features` has the engine behind block `name`.
/// Blocks without a feature bit (id, ctrl) count as present.
fn present(name: Option<&str>, features: weft_regs::Features) -> bool {
    use weft_regs::Features as F;
    let need = match name {
        Some("kv") => F::KV_AGG,
        Some("grad") => F::GRAD_AGG,
        Some("avm") => F::AVM,
        Some("memops") => F::MEMOPS,
        Some("net") => F::NET,
        _ => F::empty(),
    };
    features.contains(need)
}

/// What `weft status` prints.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Status {
    /// Device spec.
    pub device: String,
    /// Register-map version `major.minor`.
    pub map_version: String,
    /// Board name (or `unknown (id)`).
    pub board: String,
    /// Build date, Unix seconds.
    pub build_date: u32,
    /// Git hash of the build, 8 hex digits.
    pub git_hash: String,
    /// Engines built in.
    pub features: Vec<String>,
    /// Bytes of register space.
    pub map_span: u32,
    /// The register chain.
    pub blocks: Vec<BlockStatus>,
}

impl Status {
    /// Build from discovered card info.
    pub fn new(device: &str, info: &CardInfo) -> Self {
        Self {
            device: device.to_string(),
            map_version: info.map_version_string(),
            board: info
                .board_name()
                .map_or_else(|| format!("unknown ({})", info.board_id), str::to_string),
            build_date: info.build_date,
            git_hash: format!("{:08x}", info.git_hash),
            features: info
                .features
                .iter_names()
                .map(|(n, _)| n.to_lowercase())
                .collect(),
            map_span: info.map_span,
            blocks: info
                .blocks
                .iter()
                .map(|b| BlockStatus {
                    base: format!("{:#06x}", b.base),
                    name: b.name.unwrap_or("unknown").to_string(),
                    type_id: format!("{:#010x}", b.type_id),
                    version: b.version,
                    present: present(b.name, info.features),
                })
                .collect(),
        }
    }

    /// Human-readable rendering.
    pub fn render(&self) -> String {
        let mut s = format!(
            "device       {}\nmap version  {}\nboard        {}\nbuild date   {} (unix)\ngit hash     {}\nfeatures     {}\nmap span     {:#x} bytes\nblocks\n",
            self.device,
            self.map_version,
            self.board,
            self.build_date,
            self.git_hash,
            self.features.join(", "),
            self.map_span
        );
        for b in &self.blocks {
            s.push_str(&format!(
                "  {}  {:<6} type {} v{}{}\n",
                b.base,
                b.name,
                b.type_id,
                b.version,
                if b.present {
                    ""
                } else {
                    "  (not in this image)"
                }
            ));
        }
        s
    }
}
