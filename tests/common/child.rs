//! Waiting for a forked child without hanging the test run: a child that
//! hangs (a lock held at the fork by a thread that does not exist in it) is
//! killed and its test fails, instead of the run waiting forever.
#![allow(dead_code)]

use std::io::Read;
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

/// Forks; the child runs `checks` and `_exit`s (0, or 1 with the failure's
/// text on a pipe); the parent waits with [`wait_child`] (a hung child is
/// killed and fails the test). The child's wait status and the text it wrote.
///
/// # Safety
///
/// Only the calling thread exists in the child: no other thread may hold, at
/// the fork, a lock that `checks` take.
pub unsafe fn fork_checks(checks: impl FnOnce() -> Result<(), String>) -> (i32, String) {
    let (r, w) = rustix::pipe::pipe().expect("pipe");
    // SAFETY: the child runs `checks`, which the caller vouches for, and
    // `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        drop(r);
        let code = match checks() {
            Ok(()) => 0,
            Err(msg) => {
                let _ = rustix::io::write(&w, msg.as_bytes());
                1
            }
        };
        // SAFETY: ends the child without the parent's atexit handlers or the
        // test harness's destructors.
        unsafe { libc::_exit(code) }
    }
    drop(w);
    let status = wait_child(pid);
    let mut msg = String::new();
    let _ = std::fs::File::from(r).read_to_string(&mut msg);
    (status, msg)
}

/// What a child of [`fork_checks`] that ended with `status` and wrote `msg`
/// reports: nothing if it exited 0, its failure's text if it exited 1, or how
/// it died.
pub fn outcome(status: i32, msg: String) -> Result<(), String> {
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, _) => Err(msg),
        _ => Err(format!("the child died: status {status:#x}")),
    }
}

/// [`fork_checks`] and its [`outcome`]: the failure of `checks` in a forked
/// child, or how the child died.
///
/// # Safety
///
/// As for [`fork_checks`].
pub unsafe fn in_child(checks: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    // SAFETY: the caller's contract is `fork_checks`'s.
    let (status, msg) = unsafe { fork_checks(checks) };
    outcome(status, msg)
}
