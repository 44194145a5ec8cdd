//! A test that runs one of its binary's own ignored "probe" tests in a child
//! (with limits or capabilities set between fork and exec), and reads the
//! lines it tags: `#[path = "common/probe.rs"] mod probe;`.
#![allow(dead_code)]

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Runs the ignored test `probe` of this test binary in a child, with `env`
/// set to 1 (the probe does nothing without it) and the `extra` variables,
/// after `setup` in the child between fork and exec; returns its standard
/// output. Panics if the child failed.
///
/// # Safety
/// `setup` runs between fork and exec: async-signal-safe calls only.
pub unsafe fn run(
    probe: &str,
    env: &str,
    extra: &[(&str, &str)],
    setup: impl FnMut() -> std::io::Result<()> + Send + Sync + 'static,
) -> String {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        probe,
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(env, "1")
    .envs(extra.iter().copied());
    // SAFETY: the caller's contract (async-signal-safe `setup`).
    unsafe { cmd.pre_exec(setup) };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// What follows `tag` and a space on the first line of `out` that has it.
pub fn line<'a>(out: &'a str, tag: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.split_once(&format!("{tag} ")).map(|x| x.1))
        .unwrap_or_else(|| panic!("no {tag} line: {out}"))
}
