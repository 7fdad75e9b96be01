//! The manifest of built images, `bitstreams/manifest.json`.
//!
//! `weft bitstream build` appends an entry after a successful Vivado run;
//! `weft bitstream list` prints it; `weft bitstream flash` looks an image up
//! by its SHA-256 to check the board it was built for, and compares the
//! running card's ID block with the entry afterwards.

use super::{read, BitstreamError, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Built images, oldest first.
    pub images: Vec<Image>,
}

/// One built image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Image {
    /// Board name (`u55c`).
    pub board: String,
    /// FPGA part.
    pub part: String,
    /// Full git commit hash of the source tree.
    pub git_hash: String,
    /// Register-map version `major.minor`.
    pub map_version: String,
    /// When the image was built, UTC (`YYYY-MM-DDTHH:MM:SSZ`).
    pub build_date: String,
    /// Tool versions (`vivado`, `weft`, ...).
    pub tools: BTreeMap<String, String>,
    /// The top module built (`weft_top`).
    pub top: String,
    /// The bitstream.
    pub bit: ImageFile,
    /// The configuration-flash image.
    pub mcs: ImageFile,
    /// Where the `.mcs` starts in the flash (`0x01002000`).
    pub user_image_offset: String,
    /// Worst setup slack after routing, ns.
    pub wns_ns: f64,
    /// Worst hold slack after routing, ns.
    pub whs_ns: f64,
}

/// A file of an image.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageFile {
    /// Where it was written.
    pub path: String,
    /// SHA-256, lower-case hex.
    pub sha256: String,
}

/// The manifest path: `bitstreams/manifest.json`.
pub fn default_path() -> PathBuf {
    super::bitstreams_dir().join("manifest.json")
}

impl Manifest {
    /// Load and check a manifest.
    pub fn load(path: &Path) -> Result<Manifest> {
        Manifest::parse(&read(path)?, path)
    }

    /// Parse and check manifest JSON; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Manifest> {
        let m: Manifest = serde_json::from_str(text).map_err(|e| BitstreamError::Schema {
            path: path.to_path_buf(),
            location: (e.line() > 0).then(|| format!("{}:{}", e.line(), e.column())),
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_string(),
        })?;
        m.check(path)?;
        Ok(m)
    }

    fn check(&self, path: &Path) -> Result<()> {
        let bad = |field: String, why: String| BitstreamError::Invalid {
            path: path.to_path_buf(),
            field,
            why,
        };
        for (i, im) in self.images.iter().enumerate() {
            for (name, f) in [("bit", &im.bit), ("mcs", &im.mcs)] {
                let ok = f.sha256.len() == 64
                    && f.sha256
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
                if !ok {
                    return Err(bad(
                        format!("images[{i}].{name}.sha256"),
                        format!("{:?} is not 64 lower-case hex digits", f.sha256),
                    ));
                }
            }
            if im.board.is_empty() || !im.board.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(bad(
                    format!("images[{i}].board"),
                    format!("{:?} is not a board name", im.board),
                ));
            }
            let parts: Vec<_> = im.map_version.split('.').collect();
            if parts.len() != 2 || parts.iter().any(|p| p.parse::<u16>().is_err()) {
                return Err(bad(
                    format!("images[{i}].map_version"),
                    format!("{:?} is not major.minor", im.map_version),
                ));
            }
            if !(im.git_hash.len() >= 8 && im.git_hash.bytes().all(|b| b.is_ascii_hexdigit())) {
                return Err(bad(
                    format!("images[{i}].git_hash"),
                    format!("{:?} is not a git commit hash", im.git_hash),
                ));
            }
            let off = im
                .user_image_offset
                .trim_start_matches("0x")
                .trim_start_matches("0X");
            match u64::from_str_radix(off, 16) {
                Ok(v) if v >= super::board::MIN_USER_IMAGE_OFFSET => {}
                _ => {
                    return Err(bad(
                        format!("images[{i}].user_image_offset"),
                        format!(
                            "{:?} is not a hex offset above the golden image",
                            im.user_image_offset
                        ),
                    ))
                }
            }
        }
        Ok(())
    }

    /// Write the manifest (pretty JSON, trailing newline).
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut text =
            serde_json::to_string_pretty(self).unwrap_or_else(|_| "{\"images\":[]}".into());
        text.push('\n');
        super::write(path, text)
    }

    /// The image whose `.bit` or `.mcs` has SHA-256 `sha`.
    pub fn find_by_sha256(&self, sha: &str) -> Option<&Image> {
        self.images
            .iter()
            .rev()
            .find(|im| im.bit.sha256 == sha || im.mcs.sha256 == sha)
    }
}

/// Load the manifest at `path`, append `image`, save it.
pub fn append(path: &Path, image: Image) -> Result<()> {
    let mut m = if path.exists() {
        Manifest::load(path)?
    } else {
        Manifest::default()
    };
    m.images.push(image);
    m.save(path)
}

/// The register-map version this tree builds, `major.minor`.
pub fn map_version() -> String {
    format!(
        "{}.{}",
        weft_regs::MAP_VERSION_MAJOR,
        weft_regs::MAP_VERSION_MINOR
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Image {
        Image {
            board: "u55c".into(),
            part: "xcu55c-fsvh2892-2L-e".into(),
            git_hash: "0123456789abcdef0123456789abcdef01234567".into(),
            map_version: "1.1".into(),
            build_date: "2025-01-01T00:00:00Z".into(),
            tools: [("vivado".to_string(), "2023.2".to_string())].into(),
            top: "weft_top".into(),
            bit: ImageFile {
                path: "a.bit".into(),
                sha256: "a".repeat(64),
            },
            mcs: ImageFile {
                path: "a.mcs".into(),
                sha256: "b".repeat(64),
            },
            user_image_offset: "0x01002000".into(),
            wns_ns: 0.1,
            whs_ns: 0.02,
        }
    }

    #[test]
    fn round_trip_and_lookup() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("manifest.json");
        append(&p, image()).unwrap();
        let m = Manifest::load(&p).unwrap();
        assert_eq!(m.images.len(), 1);
        assert!(m.find_by_sha256(&"b".repeat(64)).is_some());
        assert!(m.find_by_sha256(&"c".repeat(64)).is_none());
    }

    #[test]
    fn errors_name_the_field() {
        let p = Path::new("bitstreams/manifest.json");
        let e = Manifest::parse("{\"images\": [{}]}", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field") && e.contains("board"), "{e}");
        assert!(e.starts_with("bitstreams/manifest.json:1:"), "{e}");
        let e = Manifest::parse("{\"imgs\": []}", p)
            .unwrap_err()
            .to_string();
        assert!(e.contains("imgs"), "{e}");
        let mut m = Manifest::default();
        let mut im = image();
        im.mcs.sha256 = "xyz".into();
        m.images.push(im);
        let text = serde_json::to_string(&m).unwrap();
        let e = Manifest::parse(&text, p).unwrap_err().to_string();
        assert!(e.contains("images[0].mcs.sha256"), "{e}");
        let mut im = image();
        im.user_image_offset = "0x0".into();
        let text = serde_json::to_string(&Manifest { images: vec![im] }).unwrap();
        let e = Manifest::parse(&text, p).unwrap_err().to_string();
        assert!(e.contains("images[0].user_image_offset"), "{e}");
    }
}
