//! Which engine a context runs on, and why: io_uring, or the thread pool it
//! falls back to when the kernel refuses io_uring (with the reason in words).

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::ffi::OsStrExt;

use crate::{Error, Result};

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

/// The backend that `value`, the value of `POSIXRT_AIO_BACKEND`, forces, and
/// why in words; `None` if it is unset or empty. Any other value, also one
/// that is not UTF-8 (shown with its bytes escaped), is refused with the
/// values it may take: a misspelt choice never silently gives the default.
pub(super) fn forced_by_env(value: Option<&OsStr>) -> Result<Option<(Backend, &'static str)>> {
    let bytes = value.map_or(&b""[..], OsStr::as_bytes);
    match bytes {
        b"" => Ok(None),
        b"threads" => Ok(Some((
            Backend::Threads,
            "forced by POSIXRT_AIO_BACKEND=threads",
        ))),
        b"uring" => Ok(Some((
            Backend::Uring,
            "forced by POSIXRT_AIO_BACKEND=uring",
        ))),
        _ => {
            // As `{:?}` shows a string, but for any bytes.
            let shown = match std::str::from_utf8(bytes) {
                Ok(v) => format!("{v:?}"),
                Err(_) => format!("\"{}\"", bytes.escape_ascii()),
            };
            Err(Error::invalid(
                "posixrt::aio::Aio::new",
                format!("POSIXRT_AIO_BACKEND={shown} is not a backend"),
            )
            .with_hint("set POSIXRT_AIO_BACKEND to `uring` or `threads`, or unset it"))
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Unset and empty give the default; the two names force their engine;
    /// anything else is refused with the hint, a value that is not UTF-8 as
    /// well (it used to be taken as unset), its bytes shown escaped.
    #[test]
    fn the_variable_forces_an_engine_or_is_refused() {
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(forced_by_env(None).unwrap(), None);
        assert_eq!(forced_by_env(Some(OsStr::new(""))).unwrap(), None);
        let forced = |v: &str| forced_by_env(Some(OsStr::new(v))).unwrap().map(|f| f.0);
        assert_eq!(forced("threads"), Some(Backend::Threads));
        assert_eq!(forced("uring"), Some(Backend::Uring));
        for (value, shown) in [
            (&b"io-uring"[..], r#""io-uring""#),
            (b"thr\xffeads", r#""thr\xffeads""#),
            (b"\xc3\x28\"", r#""\xc3(\"""#),
        ] {
            let e = forced_by_env(Some(OsStr::from_bytes(value))).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{e}");
            assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
            let want = format!("POSIXRT_AIO_BACKEND={shown} is not a backend");
            assert_eq!(e.message(), Some(want.as_str()), "{e}");
            assert_eq!(
                e.hint(),
                Some("set POSIXRT_AIO_BACKEND to `uring` or `threads`, or unset it")
            );
        }
    }
}
