//! Cancellation held off while the library works.
//!
//! A deferred `pthread_cancel` is acted on at cancellation points, and glibc
//! makes many calls one (`close`, `read`, `write`, `ppoll`...). The engine
//! makes such calls in the middle of its work: dropping a request's fd copy
//! closes it, in whatever thread reaps the completion. A cancel acted on
//! there unwound out of the engine halfway through a completion: the request
//! stayed in progress for good (an io_uring pipe read of a thread cancelled
//! in `aio_suspend`, `aio_cancel_in_wait.c`), and out of a function that
//! cannot unwind (`aio_read`: "C") the process would abort. So every entry
//! point disables cancellation for its work, as glibc's own functions use
//! their `_nocancel` calls, and `aio_suspend`, the one cancellation point,
//! acts on a cancel only where it says so.
//!
//! # References
//! - [`pthread_setcancelstate`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setcancelstate.html)
//! - [Cancellation points](https://pubs.opengroup.org/onlinepubs/9799919799/functions/V2_chap02.html#tag_16_09_05_02)

use std::ffi::c_int;

extern "C" {
    fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
}

/// `PTHREAD_CANCEL_DISABLE` (glibc's value).
const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Cancellation disabled in the calling thread until dropped; then its
/// previous state is back (a pending cancel is acted on at the thread's next
/// cancellation point, not here).
#[must_use = "cancellation is enabled again when the guard is dropped"]
pub(crate) struct NoCancel(c_int);

impl NoCancel {
    pub(crate) fn new() -> NoCancel {
        let mut old: c_int = 0;
        // SAFETY: sets the calling thread's own state; `old` is writable.
        unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
        NoCancel(old)
    }
}

impl Drop for NoCancel {
    fn drop(&mut self) {
        let mut prev: c_int = 0;
        // SAFETY: as above; restores the state read by `new`.
        unsafe { pthread_setcancelstate(self.0, &mut prev) };
    }
}
