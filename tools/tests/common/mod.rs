//! Helpers the tools' tests share: `mod common;`.
#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::Instant;

/// Runs tool `exe` with `args` and its standard output on `/dev/full` (a full
/// disk); `None` on a system without `/dev/full`.
pub fn run_into_dev_full(exe: &str, args: &[&str]) -> Option<Output> {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .ok()?;
    Some(
        Command::new(exe)
            .args(args)
            .stdout(full)
            .output()
            .expect("run the tool"),
    )
}

/// Runs `tfp ARGS` to its end.
pub fn tfp(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(args)
        .output()
        .expect("run tfp")
}

/// This process's pid.
pub fn me() -> i32 {
    std::process::id() as i32
}

/// A tool's standard output (UTF-8).
pub fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 output")
}

/// Waits (bounded) for `pid`'s mark registry file to appear.
pub fn wait_registry(pid: i32) -> std::path::PathBuf {
    let prefix = format!("posixrt-mark-{pid}-");
    let t0 = Instant::now();
    loop {
        let found = std::fs::read_dir("/dev/shm")
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(&prefix));
        if let Some(e) = found {
            return e.path();
        }
        assert!(
            t0.elapsed().as_secs() < 20,
            "pid {pid} never created its registry"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
