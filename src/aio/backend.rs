//! Which engine a context runs on, and why: io_uring, or the thread pool it
//! falls back to when the kernel refuses io_uring (with the reason in words).

use std::fmt;

use crate::Error;

/// Which engine runs the requests of a context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// io_uring (the default).
    Uring,
    /// A pool of threads doing `pread`/`pwrite` (the fallback).
    Threads,
}

impl Backend {
    /// `"uring"` or `"threads"`, the values `POSIXRT_AIO_BACKEND` accepts.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Uring => "uring",
            Backend::Threads => "threads",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which backend is live and why it was chosen.
#[derive(Debug, Clone)]
pub struct BackendInfo {
    pub(super) backend: Backend,
    pub(super) reason: String,
    pub(super) refused: Option<Error>,
}

impl BackendInfo {
    /// The live backend.
    pub fn backend(&self) -> Backend {
        self.backend
    }
    /// Why this backend was chosen, in words (e.g. "io_uring_setup refused with
    /// EPERM (seccomp filter?): using the thread pool").
    pub fn reason(&self) -> &str {
        &self.reason
    }
    /// The `io_uring_setup` error that made the context fall back, if it did.
    pub fn refused(&self) -> Option<&Error> {
        self.refused.as_ref()
    }
    /// True if io_uring was wanted but refused.
    pub fn is_fallback(&self) -> bool {
        self.refused.is_some()
    }
}

impl fmt::Display for BackendInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.backend, self.reason)
    }
}

/// Explains an `io_uring_setup` errno: whether to fall back, and the hint.
pub(super) fn classify_setup_error(errno: i32) -> (bool, String) {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok());
    match errno {
        libc::ENOSYS => (
            true,
            "the kernel has no io_uring (ENOSYS; CONFIG_IO_URING is off): using the thread pool".into(),
        ),
        libc::EPERM | libc::EACCES => {
            let why = match sysctl {
                Some(2) => "io_uring is disabled by sysctl kernel.io_uring_disabled=2 (set it to 0 to enable)".to_string(),
                Some(1) => "io_uring is limited by sysctl kernel.io_uring_disabled=1 to the group in kernel.io_uring_group (join it, or set the sysctl to 0)".to_string(),
                _ => "io_uring_setup was refused with EPERM (a seccomp filter or LSM policy, e.g. a container runtime default profile; allow io_uring_setup/io_uring_enter/io_uring_register)".to_string(),
            };
            (true, format!("{why}: using the thread pool"))
        }
        libc::EINVAL => (
            true,
            "io_uring_setup rejected the ring parameters (EINVAL; kernel too old?): using the thread pool".into(),
        ),
        libc::ENOMEM => (
            false,
            "io_uring_setup ran out of locked memory: raise RLIMIT_MEMLOCK (ulimit -l) or ask for fewer entries".into(),
        ),
        libc::EMFILE | libc::ENFILE => (
            false,
            "out of file descriptors for the ring: raise RLIMIT_NOFILE (ulimit -n)".into(),
        ),
        _ => (
            false,
            "io_uring_setup failed with a resource error; posixrt does not silently fall back from it (set POSIXRT_AIO_BACKEND=threads to choose the thread pool)".into(),
        ),
    }
}
