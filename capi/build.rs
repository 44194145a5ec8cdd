//! Where glibc has two versions of `pthread_kill` (x86_64 and aarch64 glibc
//! since 2.34; see `src/trace/signal_interpose.rs`), sets `glibc_versions` and
//! gives the shared library the version nodes of both: the base version
//! (GLIBC_2.2.5 on x86_64, GLIBC_2.17 on aarch64) and GLIBC_2.34.
//!
//! On x86_64, when the compiler has naked functions (Rust 1.88; the crate's
//! minimum is older), sets `exec_trampolines`: the `execl`, `execle` and
//! `execlp` trampolines of `src/trace/exec_variadic.rs`.

use std::path::PathBuf;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(glibc_versions)");
    println!("cargo::rustc-check-cfg=cfg(exec_trampolines)");
    println!("cargo::rerun-if-changed=build.rs");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    if var("CARGO_CFG_TARGET_ARCH") == "x86_64" && naked_functions() {
        println!("cargo::rustc-cfg=exec_trampolines");
    }
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

/// True when `$RUSTC` is Rust 1.88 or later (naked functions). Its version
/// line is `rustc 1.95.0 (...)`, or `rustc 1.96.0-nightly (...)`; anything
/// else (no such compiler, another format) is false, and the build goes on
/// without the trampolines.
fn naked_functions() -> bool {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let Ok(out) = std::process::Command::new(rustc).arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text.split_whitespace().nth(1).unwrap_or("");
    let mut parts = version.split(['.', '-']).map(|n| n.parse::<u32>().ok());
    matches!((parts.next(), parts.next()), (Some(Some(1)), Some(Some(minor))) if minor >= 88)
}
