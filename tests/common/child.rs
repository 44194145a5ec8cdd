//! Waiting for a forked child without hanging the test run: a child that
//! hangs (a lock held at the fork by a thread that does not exist in it) is
//! killed and its test fails, instead of the run waiting forever.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// How long a forked child of a test may run.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Waits for the forked child `pid` up to [`LIMIT`] and returns its wait
/// status. A child still running then is killed, and the test panics.
pub fn wait_child(pid: i32) -> i32 {
    let end = Instant::now() + LIMIT;
    loop {
        let mut status = 0;
        // SAFETY: polls our own child; `status` is writable.
        let got = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if got == pid {
            return status;
        }
        assert_eq!(
            got,
            0,
            "waitpid({pid}): {}",
            std::io::Error::last_os_error()
        );
        if Instant::now() >= end {
            // SAFETY: kills and reaps our own child, not yet waited for.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            panic!("the forked child {pid} still ran after {LIMIT:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// In a forked child about to `_exit` (without the exit hook that would):
/// removes this process's registry files of `kind` from `/dev/shm`.
pub fn remove_own_registries(kind: &str) {
    let mine = format!("posixrt-{kind}-{}-", std::process::id());
    for e in std::fs::read_dir("/dev/shm")
        .into_iter()
        .flatten()
        .flatten()
    {
        if e.file_name().to_string_lossy().starts_with(&mine) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}
