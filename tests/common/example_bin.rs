//! The built examples, for tests that run them:
//! `#[path = "common/example_bin.rs"] mod example_bin;`.

use std::path::PathBuf;
use std::process::Command;

/// Builds the example with this test's profile and returns its path.
pub fn example_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().unwrap().parent().unwrap();
    let bin = profile_dir.join("examples").join(name);
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "--example", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    if cfg!(feature = "tokio") {
        cmd.args(["--features", "tokio"]);
    }
    let status = cmd.status().expect("run cargo build --example");
    assert!(status.success(), "cargo build --example {name}");
    bin
}
