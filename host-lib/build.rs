//! Builds `weft_top`'s Verilated model while this crate builds, so the
//! first job on the simulated card does not wait for it
//! (`weft_sim::prebuilt`): the quick model always, the optimised one too
//! with `WEFT_PREBUILD=fast`; `WEFT_PREBUILD=0` skips it. Without
//! Verilator (or the `sim` feature) nothing happens and the card builds its
//! model on first use, as it would anyway. A failed build is a warning,
//! never a failed crate build: the card then builds the model itself and
//! reports the failure where it is used.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for v in [
        "WEFT_PREBUILD",
        "WEFT_VERILATOR",
        "WEFT_CACHE_DIR",
        "XDG_CACHE_HOME",
        "HOME",
        "CXX",
        "PATH",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }
    #[cfg(feature = "sim")]
    prebuild();
}

#[cfg(feature = "sim")]
fn prebuild() {
    let want = std::env::var("WEFT_PREBUILD").unwrap_or_default();
    if want == "0" || weft_sim::verilator::toolchain().is_err() {
        return;
    }
    match weft_sim::prebuilt::prebuild_top(want == "fast", None) {
        Ok(models) => println!("cargo:rustc-env=WEFT_PREBUILT_TOP={}", models.encode()),
        Err(e) => println!("cargo:warning=weft_top's model was not built ahead: {e}"),
    }
}
