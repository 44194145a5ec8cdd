//! `ppoll`: waiting for fds with the signal mask the wait should have.
//!
//! A thread that keeps signals blocked while it is awake and lets them
//! through only while it sleeps here sees every handler that runs during its
//! wait as EINTR: one that came while it was awake stays pending, and the
//! sleep ends at once on it. (With `poll` and the signals let through, a
//! handler run between two sleeps goes unseen.)
//!
//! # References
//! - [`ppoll(2)`](https://man7.org/linux/man-pages/man2/ppoll.2.html)
//! - [`pselect`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pselect.html)

use std::io;
use std::time::Duration;

/// `ppoll(fds, t, sigmask)`: waits until one of `fds` is ready, `t` passes
/// (forever without), or a signal handler runs (EINTR, never restarted). With
/// `sigmask`, the thread's mask is that one while it waits. Returns how many
/// fds are ready (0: the timeout).
pub(crate) fn ppoll(
    fds: &mut [libc::pollfd],
    t: Option<Duration>,
    sigmask: Option<&libc::sigset_t>,
) -> io::Result<usize> {
    let ts = t.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as _,
    });
    // SAFETY: `fds` is a live, writable array of `fds.len()` pollfds; the
    // timespec and mask are null or live for the call; the kernel writes only
    // the `revents` fields.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts.as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec),
            sigmask.map_or(std::ptr::null(), |m| m as *const libc::sigset_t),
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
