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
//! their `_nocancel` calls, and the cancellation points (`aio_suspend`,
//! `posix_trace_getnext_event`, `posix_trace_timedgetnext_event`) act on a
//! cancel only where they say so ([`testcancel`]).
//!
//! The trace functions that reach no cancellation point go without the guard:
//! `posix_trace_event` (its recording path makes no call that is one: it
//! must stay a load and a test when nothing records), the attribute and
//! event-set functions (plain data), `posix_trace_eventid_open` and
//! `posix_trace_eventid_equal`. So do the interposers: `pthread_mutex_lock`
//! and the others must not change the caller's cancellation state (a guard
//! would also make them act on a cancel under `PTHREAD_CANCEL_ASYNCHRONOUS`
//! as the state came back), and the interposed `sigwait`, `sigwaitinfo` and
//! `sigtimedwait` stay the cancellation points POSIX makes them.
//!
//! # References
//! - [`pthread_setcancelstate`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_setcancelstate.html)
//! - [Cancellation points](https://pubs.opengroup.org/onlinepubs/9799919799/functions/V2_chap02.html#tag_16_09_05_02)

use std::ffi::c_int;

extern "C-unwind" {
    // Acts on a pending cancel when it enables cancellation for a thread whose
    // type is asynchronous (a forced unwind through its caller): see
    // `NoCancel`'s drop.
    fn pthread_setcancelstate(state: c_int, old: *mut c_int) -> c_int;
    // A cancellation point: acting on a cancel unwinds (a forced unwind) through
    // its caller, so it is declared "C-unwind" and called only from frames
    // without anything to drop.
    fn pthread_testcancel();
}

/// `PTHREAD_CANCEL_DISABLE` (glibc's value).
const PTHREAD_CANCEL_DISABLE: c_int = 1;

/// Cancellation disabled in the calling thread until dropped; then its
/// previous state is back. A cancel that came meanwhile is acted on at the
/// thread's next cancellation point; or, for a thread whose cancellation type
/// is asynchronous (which POSIX lets call none of these functions, but
/// programs do), by the drop itself, once the library's work is done: the
/// guard is the first value of its entry point, dropped last, and the entry
/// point is "C-unwind", so that the forced unwind crosses nothing to drop and
/// no frame that cannot unwind (it used to abort the process there).
#[must_use = "cancellation is enabled again when the guard is dropped"]
pub(crate) struct NoCancel(c_int);

impl NoCancel {
    pub(crate) fn new() -> NoCancel {
        let mut old: c_int = 0;
        // SAFETY: sets the calling thread's own state; `old` is writable.
        unsafe { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &mut old) };
        NoCancel(old)
    }

    /// True if the caller had cancellation enabled (a cancel can be acted on
    /// once the guard is dropped).
    pub(crate) fn was_enabled(&self) -> bool {
        self.0 != PTHREAD_CANCEL_DISABLE
    }
}

impl Drop for NoCancel {
    fn drop(&mut self) {
        let mut prev: c_int = 0;
        // SAFETY: as above; restores the state read by `new`. (May unwind, for
        // an asynchronous thread with a cancel pending: see the type's docs.)
        unsafe { pthread_setcancelstate(self.0, &mut prev) };
    }
}

/// Acts on a pending `pthread_cancel` of the calling thread (does not return
/// then): the place where a function that is a cancellation point lets it in,
/// outside any [`NoCancel`] and outside the library's work.
///
/// Call it only from an `extern "C-unwind"` function with no live value that
/// has drop glue: the forced unwind then crosses plain frames only.
#[inline]
pub(crate) fn testcancel() {
    // SAFETY: no arguments; the caller's frame has nothing to drop (see above).
    unsafe { pthread_testcancel() };
}
