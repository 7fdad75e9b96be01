//! Captures the source tree's git commit and commit time for the ID block.
//! The commit time (not the wall clock) is the build date, so two builds of
//! one commit emit identical Verilog and share simulator caches.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    Some(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let hash = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let date = git(&["log", "-1", "--format=%ct"]).unwrap_or_default();
    let hash32 = u32::from_str_radix(hash.get(..8).unwrap_or("0"), 16).unwrap_or(0);
    let date: u32 = date.parse().unwrap_or(0);
    println!("cargo:rustc-env=WEFT_GIT_HASH32={hash32}");
    println!("cargo:rustc-env=WEFT_GIT_HASH={hash}");
    println!("cargo:rustc-env=WEFT_BUILD_DATE={date}");
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{r}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
