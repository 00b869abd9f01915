//! Build script: makes the `loaderbench` binary (and this package's tests and benches)
//! find libtorch without LD_LIBRARY_PATH. tch's own rpath does not reach our binaries, so
//! we add the library directory that torch-sys exports (`DEP_TCH_LIBTORCH_LIB`, seen
//! because torch-sys is a direct dependency) as an rpath.

use std::env;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    let lib_dir = env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if !lib_dir.is_empty() && target_os != "windows" {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
    }
}
