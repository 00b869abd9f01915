//! Build script: makes this crate's test binaries find libtorch without LD_LIBRARY_PATH
//! and records which libtorch and tch it was built against.
//!
//! tch's own rpath does not reach our binaries, so we read the library directory that
//! torch-sys exports (`DEP_TCH_LIBTORCH_LIB`, available because torch-sys is a direct
//! dependency) and add it as an rpath. The same directory is passed to the code so
//! that `libtorch_cuda` can be loaded by full path at start-up.

use std::env;
use std::fs;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-env-changed=DEP_TCH_LIBTORCH_LIB");
    println!("cargo:rerun-if-changed=../../Cargo.lock");
    let lib_dir = env::var("DEP_TCH_LIBTORCH_LIB").unwrap_or_default();
    if !lib_dir.is_empty() {
        let target_os = env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
        if target_os != "windows" {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{lib_dir}");
        }
    }
    println!("cargo:rustc-env=LOADERBENCH_LIBTORCH_LIB={lib_dir}");
    println!(
        "cargo:rustc-env=LOADERBENCH_LIBTORCH_VERSION={}",
        libtorch_version(Path::new(&lib_dir))
    );
    println!(
        "cargo:rustc-env=LOADERBENCH_TCH_VERSION={}",
        locked_version("tch").unwrap_or_else(|| "unknown".to_owned())
    );
}

/// The version PyTorch's `version.py` (pip installs) or `build-version` (libtorch zips) states.
fn libtorch_version(lib_dir: &Path) -> String {
    let Some(root) = lib_dir.parent() else {
        return "unknown".to_owned();
    };
    if let Ok(text) = fs::read_to_string(root.join("version.py")) {
        let line = text.lines().find(|l| l.starts_with("__version__"));
        if let Some(version) = line.and_then(|l| l.split('\'').nth(1)) {
            return version.to_owned();
        }
    }
    fs::read_to_string(root.join("build-version"))
        .map(|v| v.trim().to_owned())
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The version of `package` that Cargo.lock pins.
fn locked_version(package: &str) -> Option<String> {
    // The workspace's lock file, two folders up from this crate.
    let lock = fs::read_to_string("../../Cargo.lock").ok()?;
    let name_line = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    lines.find(|l| *l == name_line)?;
    let version = lines.next()?.strip_prefix("version = \"")?;
    Some(version.trim_end_matches('"').to_owned())
}
