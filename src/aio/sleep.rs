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
/// With `sigmask`, the thread's signal mask while it sleeps.
pub(super) fn sleep_on(
    fd: &OwnedFd,
    t: Option<Duration>,
    sigmask: Option<&libc::sigset_t>,
) -> std::result::Result<(), i32> {
    use std::os::fd::AsRawFd;
    let mut fds = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    match crate::sys::poll::ppoll(&mut fds, t, sigmask) {
        Ok(_) => Ok(()),
        Err(e) => Err(e.raw_os_error().unwrap_or(libc::EIO)),
    }
}
