//! Shared by the command-line tests.

use std::process::Command;

/// Run the `weft` binary: (success, stdout, stderr).
pub fn weft(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_weft"))
        .args(args)
        .output()
        .expect("run weft");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
