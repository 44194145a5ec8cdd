//! How a thread waiting for requests sleeps when it does not reap a ring
//! itself: on an eventfd of its own, which a completion writes, with a
//! timeout, and woken by a signal handler (EINTR).

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use crate::Error;

pub(super) fn interrupted(call: &'static str) -> Error {
    Error::from_errno(call, libc::EINTR)
        .with_message("a signal handler ran during the wait; the requests go on")
}

thread_local! {
    /// This thread's eventfd for interruptible waits (made on first use).
    static WAIT_FD: Option<Arc<OwnedFd>> = rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
    )
    .ok()
    .map(Arc::new);
}

/// The calling thread's wait eventfd, drained; None if it could not be made.
pub(super) fn wait_fd() -> Option<Arc<OwnedFd>> {
    WAIT_FD.with(|f| {
        f.as_ref().map(|f| {
            let mut b = [0u8; 8];
            let _ = rustix::io::read(&**f, &mut b);
            Arc::clone(f)
        })
    })
}

/// `poll` on the thread's wait eventfd: woken by a completion, the timeout, or
/// a signal handler (EINTR: `poll` is never restarted, whatever SA_RESTART).
pub(super) fn sleep_on(fd: &OwnedFd, t: Option<Duration>) -> std::result::Result<(), i32> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    let ts = t.map(|t| Timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: t.subsec_nanos() as _,
    });
    match poll(&mut fds, ts.as_ref()) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.raw_os_error()),
    }
}
