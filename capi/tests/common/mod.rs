//! Helpers the C-library tests share: `mod common;`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const CRATE: &str = env!("CARGO_MANIFEST_DIR");

/// `target/<profile>`: holds `libposixrt.so` and the tools (built on demand).
pub fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// `cargo build ARGS` in this test's profile.
pub fn cargo_build(args: &[&str]) {
    let dir = target_dir();
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.arg("build").args(args).current_dir(CRATE);
    if dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("run cargo build");
    assert!(st.success(), "cargo build {args:?} failed");
}

/// The directory of `libposixrt.so`, built first (always: a no-op when fresh,
/// and a stale library must never be tested).
pub fn lib_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = target_dir();
        cargo_build(&["-p", "posixrt-capi", "--lib"]);
        assert!(dir.join("libposixrt.so").exists(), "no libposixrt.so");
        dir
    })
}
