//! Process-level calls that must stay async-signal-safe or run at exit: pointing a
//! descriptor at `/dev/null` (from the fork child handler), `atexit`, and
//! `unlink` of a ready-made C path.

use std::ffi::CStr;

/// Points descriptor `fd` at `/dev/null`: `open` + `dup3` + `close`. `dup3`
/// replaces it atomically, dropping this process's reference to the open file
/// description `fd` named, while the descriptor number stays open (its owner still
/// closes a valid descriptor). Async-signal-safe (for a fork child handler).
///
/// # References
/// - [`dup3(2)`](https://man7.org/linux/man-pages/man2/dup3.2.html)
/// - [`open`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/open.html)
pub(crate) fn redirect_to_dev_null(fd: i32) {
    let nul = open_dev_null();
    if nul >= 0 {
        point_fd_at(fd, nul);
        // SAFETY: closes only the temporary descriptor just opened;
        // async-signal-safe.
        unsafe { libc::close(nul) };
    }
}

/// Opens `/dev/null` read-only and close-on-exec: the new descriptor, which the
/// caller owns, or -1. Async-signal-safe.
pub(crate) fn open_dev_null() -> i32 {
    // SAFETY: `open` gets a NUL-terminated literal path and plain flags.
    unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
}

/// Makes descriptor `fd` name the open file description `target` names
/// (`dup3`, close-on-exec), atomically dropping this process's reference to
/// the one `fd` named; true on success. Async-signal-safe, and opens nothing
/// (for a fork child handler, whose descriptor table may be full).
///
/// # References
/// - [`dup3(2)`](https://man7.org/linux/man-pages/man2/dup3.2.html)
pub(crate) fn point_fd_at(fd: i32, target: i32) -> bool {
    // SAFETY: `dup3` takes plain integers and touches no memory; it replaces
    // `fd`, a descriptor of this process whose owner still closes it later
    // (it stays open, naming `target`'s file).
    unsafe { libc::dup3(target, fd, libc::O_CLOEXEC) >= 0 }
}

/// `atexit(f)`: runs `f` at normal process exit.
///
/// # References
/// - [`atexit`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/atexit.html)
pub(crate) fn atexit(f: extern "C" fn()) {
    // SAFETY: registers a plain `extern "C"` function with no captured state.
    unsafe { libc::atexit(f) };
}

/// `unlink(path)`, ignoring the result (clean-up at exit), without allocating.
///
/// # References
/// - [`unlink`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/unlink.html)
pub(crate) fn unlink_quietly(path: &CStr) {
    let _ = rustix::fs::unlink(path);
}
