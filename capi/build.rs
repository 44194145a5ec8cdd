//! Where glibc has two versions of `pthread_kill` (x86_64 and aarch64 glibc
//! since 2.34; see `src/trace/signal_interpose.rs`), sets `glibc_versions` and
//! gives the shared library the version nodes of both: the base version
//! (GLIBC_2.2.5 on x86_64, GLIBC_2.17 on aarch64) and GLIBC_2.34.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(glibc_versions)");
    println!("cargo::rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux" || var("CARGO_CFG_TARGET_ENV") != "gnu" {
        return;
    }
    let base = match var("CARGO_CFG_TARGET_ARCH").as_str() {
        "x86_64" => "GLIBC_2.2.5",
        "aarch64" => "GLIBC_2.17",
        _ => return,
    };
    let map = PathBuf::from(var("OUT_DIR")).join("glibc-versions.map");
    let text = format!("{base} {{ }};\nGLIBC_2.34 {{ }} {base};\n");
    if let Err(e) = std::fs::write(&map, text) {
        panic!("write {}: {e}", map.display());
    }
    println!("cargo::rustc-cfg=glibc_versions");
    println!(
        "cargo::rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
}
