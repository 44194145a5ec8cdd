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
/// fds are ready (0: the timeout). The system call itself, not glibc's
/// wrapper: that one is a cancellation point, and a `pthread_cancel` acted
/// on inside an engine's wait would leave the engine's state half changed.
pub(crate) fn ppoll(
    fds: &mut [libc::pollfd],
    t: Option<Duration>,
    sigmask: Option<&libc::sigset_t>,
) -> io::Result<usize> {
    // (The kernel writes the time left back into it.)
    let mut ts = t.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as _,
    });
    // SAFETY: `fds` is a live, writable array of `fds.len()` pollfds; the
    // timespec is null or live and writable, the mask null or live (of the
    // kernel's size, `_NSIG / 8` = 8 bytes, the start of libc's larger set),
    // for the call; the kernel writes only `revents` and the time left.
    let r = unsafe {
        libc::syscall(
            libc::SYS_ppoll,
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts.as_mut()
                .map_or(std::ptr::null_mut(), |t| t as *mut libc::timespec),
            sigmask.map_or(std::ptr::null(), |m| m as *const libc::sigset_t),
            8usize,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}
