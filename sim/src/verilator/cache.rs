//! Where built models live, their keys, and the file locks that serialise
//! builders.

use std::ffi::OsStr;
use std::fs::File;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::VerilatorError;

/// The cache directory used when [`BuildOptions::cache_dir`] is `None`:
/// `$WEFT_CACHE_DIR`, else `$XDG_CACHE_HOME/weft`, else `$HOME/.cache/weft`,
/// else `<temp dir>/weft-cache`. Empty variables count as unset.
///
/// [`BuildOptions::cache_dir`]: super::BuildOptions::cache_dir
pub fn default_cache_dir() -> PathBuf {
    let weft = std::env::var_os("WEFT_CACHE_DIR");
    let xdg = std::env::var_os("XDG_CACHE_HOME");
    let home = std::env::var_os("HOME");
    default_cache_dir_from(weft.as_deref(), xdg.as_deref(), home.as_deref())
        .unwrap_or_else(|| std::env::temp_dir().join("weft-cache"))
}

/// The rule of [`default_cache_dir`] without reading the environment: given
/// the values of `WEFT_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME`, the cache
/// directory, or `None` when all three are unset or empty.
pub fn default_cache_dir_from(
    weft_cache_dir: Option<&OsStr>,
    xdg_cache_home: Option<&OsStr>,
    home: Option<&OsStr>,
) -> Option<PathBuf> {
    let set = |v: Option<&OsStr>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    set(weft_cache_dir)
        .or_else(|| set(xdg_cache_home).map(|x| x.join("weft")))
        .or_else(|| set(home).map(|h| h.join(".cache").join("weft")))
}

/// Incremental SHA-256 over length-prefixed fields (so that field
/// boundaries cannot be confused).
pub(crate) struct KeyHasher(Sha256);

impl KeyHasher {
    pub(crate) fn new(domain: &str) -> Self {
        let mut k = KeyHasher(Sha256::new());
        k.field(domain.as_bytes());
        k
    }

    pub(crate) fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.update((bytes.len() as u64).to_le_bytes());
        self.0.update(bytes);
        self
    }

    pub(crate) fn hex(self) -> String {
        self.0
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

/// An exclusive lock on a file, released on drop.
pub(crate) struct FileLock {
    file: File,
}

impl FileLock {
    /// Block until the lock on `path` (created if needed) is ours.
    pub(crate) fn acquire(path: &Path) -> Result<FileLock, VerilatorError> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(VerilatorError::io(format!(
                "opening lock file {}",
                path.display()
            )))?;
        file.lock()
            .map_err(VerilatorError::io(format!("locking {}", path.display())))?;
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Closing the file would release it too; be explicit.
        let _ = self.file.unlock();
    }
}
