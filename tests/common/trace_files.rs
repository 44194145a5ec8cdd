//! The trace tests' lock and scratch logs: `#[path = "common/trace_files.rs"] mod trace_files;`.
//!
//! Streams are process-wide (every running stream records every `event()`
//! call of the process), so the tests of one binary serialise on one lock.
#![allow(dead_code)]

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use posixrt::trace::{Event, TraceLog};

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time (a test that panicked does not poison the others).
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// A scratch path in the temp dir, removed (file or directory) when dropped, so a
/// test run leaves nothing behind.
pub struct TempPath(pub PathBuf);

impl std::ops::Deref for TempPath {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempPath {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0).or_else(|_| std::fs::remove_dir_all(&self.0));
    }
}

/// A scratch path `name` of this test binary and process.
pub fn tmp(name: &str) -> TempPath {
    let crate_name = env!("CARGO_CRATE_NAME");
    let p = std::env::temp_dir().join(format!(
        "posixrt-{crate_name}-{}-{name}",
        std::process::id()
    ));
    TempPath(p)
}

/// A new, empty log file `name` (read and write), removed with its path.
pub fn open_log(name: &str) -> (TempPath, File) {
    let p = tmp(name);
    let f = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&p)
        .unwrap();
    (p, f)
}

/// A pipe: (read end, write end), both close-on-exec.
pub fn pipe() -> (File, File) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 stores.
    let r = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(r, 0, "pipe2: {}", std::io::Error::last_os_error());
    // SAFETY: pipe2 succeeded: both descriptors are open and owned by no one else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    (File::from(rd), File::from(wr))
}

/// The log at `p` and all its events.
pub fn log_events(p: &Path) -> (TraceLog, Vec<Event>) {
    let mut l = TraceLog::open(p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    (l, evs)
}
