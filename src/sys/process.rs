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
    // SAFETY: `open` gets a NUL-terminated literal path; `dup3` targets `fd`, a
    // descriptor of this process, and keeps it open; `close` closes only the
    // temporary descriptor just opened. All three are async-signal-safe.
    unsafe {
        let nul = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if nul >= 0 {
            libc::dup3(nul, fd, libc::O_CLOEXEC);
            libc::close(nul);
        }
    }
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
