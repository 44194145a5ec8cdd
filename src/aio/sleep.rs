//! How a thread waiting for requests sleeps when it does not reap a ring
//! itself: on an eventfd of its own, which a completion writes, with a
//! timeout, and woken by a signal handler (EINTR).

use std::cell::Cell;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::Error;

pub(super) fn interrupted(call: &'static str) -> Error {
    Error::from_errno(call, libc::EINTR)
        .with_message("a signal handler ran during the wait; the requests go on")
}

thread_local! {
    /// This thread's eventfd for interruptible waits (made on first use, or
    /// ahead by the thread's first C submission: see [`prepare_wait_fd`]).
    static WAIT_FD: Option<WaitFd> = rustix::event::eventfd(
        0,
        rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK,
    )
    .ok()
    .map(|fd| {
        WAIT_FDS.fetch_add(1, Ordering::Relaxed);
        WAIT_FD_MADE.set(true);
        WaitFd(Arc::new(fd))
    });
    /// True once `WAIT_FD` holds an eventfd. (No destructor: reading it
    /// allocates nothing, unlike the first touch of `WAIT_FD`.)
    static WAIT_FD_MADE: Cell<bool> = const { Cell::new(false) };
}

/// Wait eventfds of live threads: the C engine keeps room for as many in
/// `Core::wait_fds` (see `aio/capi/release.rs`).
pub(super) static WAIT_FDS: AtomicUsize = AtomicUsize::new(0);

/// A thread's wait eventfd, counted in [`WAIT_FDS`] while the thread lives.
struct WaitFd(Arc<OwnedFd>);

impl Drop for WaitFd {
    fn drop(&mut self) {
        WAIT_FDS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Empties the eventfd `f` (a wake-up meant for an earlier wait) and returns
/// a handle to it.
fn drained(f: &WaitFd) -> Arc<OwnedFd> {
    let mut b = [0u8; 8];
    let _ = rustix::io::read(&*f.0, &mut b);
    Arc::clone(&f.0)
}

/// The calling thread's wait eventfd, drained (made now if it has none);
/// None if it could not be made.
pub(super) fn wait_fd() -> Option<Arc<OwnedFd>> {
    WAIT_FD.with(|f| f.as_ref().map(drained))
}

/// [`wait_fd`] for a wait that may run in a signal handler (a C
/// `aio_suspend`): the eventfd only if the thread made it already, else
/// None. Allocates nothing: the first touch of the thread-local allocates
/// (the eventfd's `Arc`, its destructor's registration).
pub(super) fn wait_fd_if_made() -> Option<Arc<OwnedFd>> {
    if !WAIT_FD_MADE.get() {
        return None;
    }
    // (Err while the thread exits, after the value was dropped.)
    WAIT_FD.try_with(|f| f.as_ref().map(drained)).ok().flatten()
}

/// Makes the calling thread's wait eventfd now, in a call that cannot run in
/// a signal handler (a C submission), so that its waits in a handler find it
/// (see [`wait_fd_if_made`]). True if it was made by this call.
pub(super) fn prepare_wait_fd() -> bool {
    if WAIT_FD_MADE.get() {
        return false;
    }
    let _ = WAIT_FD.try_with(|_| ());
    WAIT_FD_MADE.get()
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
