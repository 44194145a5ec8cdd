//! `aio_suspend`: the wait for any of a list of requests, bounded by the
//! caller's timeout, interrupted by signal handlers (restarted after
//! `SA_RESTART` ones), and a cancellation point.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use rt::aio::capi::{self as raw, Aiocb, CallSignals};

use crate::aio::{engine_if_started, fail, in_flight, in_lib, signal_sent, InLib};
use crate::debug::debug;
use crate::nocancel::{testcancel, NoCancel};
use crate::restart::handlers_restart;

/// The timeout `t` as a duration (None: none), or EINVAL.
fn timeout_of(t: *const libc::timespec) -> Result<Option<Duration>, i32> {
    if t.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null timespec pointers are valid by the C contract.
    let t = unsafe { *t };
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        debug(format_args!(
            "timeout {{{}, {}}} is not a valid timespec: EINVAL",
            t.tv_sec, t.tv_nsec
        ));
        return Err(libc::EINVAL);
    }
    Ok(Some(Duration::new(t.tv_sec as u64, t.tv_nsec as u32)))
}

/// The call's result if it has nothing to wait for: EINVAL for a bad list, 0
/// for a list with no request, one with a request done (or not a request at
/// all), or no engine yet; None if it waits.
///
/// # Safety
/// As [`aio_suspend`].
unsafe fn settled(list: *const *const Aiocb, nent: c_int) -> Option<c_int> {
    if nent < 0 || (nent > 0 && list.is_null()) {
        return Some(fail(libc::EINVAL));
    }
    // An empty list may be a NULL pointer, of which no slice can be made.
    if nent == 0 {
        return Some(0);
    }
    // SAFETY: `list` is non-null and holds `nent > 0` pointers (contract).
    let cbs = unsafe { std::slice::from_raw_parts(list, nent as usize) };
    let mut any = false;
    for &cb in cbs.iter().filter(|p| !p.is_null()) {
        // SAFETY: non-null entries are valid aiocbs (contract).
        if !unsafe { in_flight(cb) } {
            // Done (or not a request at all): nothing to wait for.
            // SAFETY: as above.
            unsafe { signal_sent(cb) };
            return Some(0);
        }
        any = true;
    }
    if !any || engine_if_started().is_none() {
        return Some(0);
    }
    None
}

/// How often `aio_suspend` looks at the status words when it runs in a signal
/// handler that interrupted the library (and so cannot wait on the engine).
const LOCKLESS_POLL: Duration = Duration::from_micros(100);

/// What one bounded wait of `aio_suspend` came to.
enum Suspend {
    /// The call's result (0, or -1 with errno set).
    Ret(c_int),
    /// `until` passed with every listed request still in flight.
    TimedOut,
    /// A signal handler ran during the wait (EINTR from the engine).
    Interrupted,
}

/// `aio_suspend` until the instant `until()` gives (None: without bound; asked
/// only when the call has to wait): the whole call but the
/// timeout and cancellation handling.
///
/// # Safety
/// As [`aio_suspend`].
unsafe fn suspend_until(
    list: *const *const Aiocb,
    nent: c_int,
    until: impl FnOnce() -> Option<Instant>,
    signals: &mut CallSignals,
) -> Suspend {
    // SAFETY: forwarded contract.
    if let Some(r) = unsafe { settled(list, nent) } {
        return Suspend::Ret(r);
    }
    // SAFETY: `list` holds `nent > 0` pointers (checked by `settled`).
    let cbs = unsafe { std::slice::from_raw_parts(list, nent as usize) };
    let Some(eng) = engine_if_started() else {
        return Suspend::Ret(0);
    };
    // (Asked only for a wait: a request done already costs no clock read.)
    let until = until();
    let any_done = || {
        cbs.iter()
            // SAFETY: as above.
            .any(|&cb| !cb.is_null() && unsafe { raw::error_code(cb) } != libc::EINPROGRESS)
    };
    if in_lib() {
        // A signal handler (aio_suspend is async-signal-safe) that interrupted
        // a library call of this thread, which may hold the engine lock: watch
        // the status words without the lock; other threads, the library's own
        // included, store them.
        loop {
            if any_done() {
                return Suspend::Ret(0);
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                return Suspend::TimedOut;
            }
            std::thread::sleep(LOCKLESS_POLL);
        }
    }
    let _g = InLib::enter();
    let mut done = any_done;
    match eng.wait_blocked(signals, until, &mut done) {
        Ok(true) => Suspend::Ret(0),
        Ok(false) => Suspend::TimedOut,
        // The request a handler's signal reported may be done: then there is
        // nothing to restart (and no handler to look up).
        Err(libc::EINTR) if any_done() => Suspend::Ret(0),
        Err(libc::EINTR) => Suspend::Interrupted,
        Err(e) => Suspend::Ret(fail(e)),
    }
}

/// How long a wait of `aio_suspend` sleeps between two looks for a
/// `pthread_cancel` that came while it slept (nothing wakes a sleep the
/// library made with cancellation disabled).
const CANCEL_SLICE: Duration = Duration::from_millis(20);

/// `aio_suspend`: wait until one of the listed requests is done (NULL entries
/// skipped), the timeout passes (-1/EAGAIN) or a signal handler runs (-1/EINTR;
/// after a handler installed with `SA_RESTART` the wait goes on, until the same
/// deadline, as POSIX says: see [`crate::restart`]).
/// A cancellation point, as POSIX requires: a `pthread_cancel` of the waiting
/// thread is acted upon at entry, when a signal interrupts the wait, and, for
/// a cancel that comes while the thread sleeps, within [`CANCEL_SLICE`] ("the
/// thread shall be awakened and the cancellation request shall be acted
/// upon"; glibc's wait is a cancellable futex wait). The library sleeps with
/// cancellation disabled, so glibc's `pthread_cancel` does not signal the
/// thread: a thread that has cancellation enabled sleeps in slices and looks
/// for a cancel between two, outside the library's work. Signals are
/// blocked from the call's start ([`CallSignals`]) and come through only
/// while it sleeps, or as a slice ends with one due (then: EINTR). (A
/// signal whose handler runs in the microsecond between two slices, while
/// the program's mask is back, goes unseen by the wait, as one that comes
/// just before the call does.)
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_suspend.html>
///
/// # Safety
/// `list` holds `nent` pointers, each null or a valid `struct aiocb`; `timeout`
/// is null or valid.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_suspend(
    list: *const *const Aiocb,
    nent: c_int,
    timeout: *const libc::timespec,
) -> c_int {
    // Only plain values live in this frame (see `testcancel`).
    testcancel();
    let timeout = match timeout_of(timeout) {
        Ok(t) => t,
        Err(e) => return fail(e),
    };
    // A request done already: no signal mask, no clock read.
    // SAFETY: forwarded contract.
    if let Some(r) = unsafe { settled(list, nent) } {
        return r;
    }
    // The deadline, once the first slice has read the clock.
    let mut deadline: Option<Option<Instant>> = None;
    loop {
        let (waited, slice_ended, due) = {
            // Signals are blocked before anything else the wait does, and
            // come through only while the call sleeps: a handler due at any
            // later moment of the call ends it with EINTR. (Let through
            // while awake, one that ran before the first sleep, or between
            // two slices, went unseen: the call slept on.)
            // (Not in a handler that interrupted the library: that call
            // polls, and the interrupted wait may hold the mask.)
            let mut signals = if in_lib() {
                CallSignals::none()
            } else {
                CallSignals::block()
            };
            let deadline = match deadline {
                Some(d) => d,
                None => {
                    rt::aio::capi::interruptible_call_starts();
                    // A timeout too far to represent is no timeout.
                    *deadline.insert(timeout.and_then(|t| Instant::now().checked_add(t)))
                }
            };
            // (Cancellation only where this function acts on it.)
            let nc = NoCancel::new();
            // A thread that can be cancelled sleeps in slices (see above).
            let sliced = std::cell::Cell::new(false);
            let until = || {
                if !nc.was_enabled() {
                    return deadline;
                }
                let (until, s) = slice_of(deadline);
                sliced.set(s);
                until
            };
            // SAFETY: forwarded contract.
            let waited = unsafe { suspend_until(list, nent, until, &mut signals) };
            // A handler due now runs as `signals` is dropped, before `nc`
            // is (cancellation is enabled again last).
            let due = matches!(waited, Suspend::TimedOut) && signals.due();
            drop(signals);
            (waited, sliced.get(), due)
        };
        match waited {
            Suspend::Ret(r) => return r,
            // A slice ended before the deadline: a cancel that came meanwhile
            // is acted on here, else the wait goes on.
            Suspend::TimedOut if slice_ended && !due => testcancel(),
            Suspend::TimedOut if !due => return fail(libc::EAGAIN),
            // A handler ran as the wait ended: it interrupted the call.
            Suspend::TimedOut | Suspend::Interrupted => {
                testcancel();
                if !handlers_restart() {
                    return fail(libc::EINTR);
                }
                // SA_RESTART: wait again, until the same deadline.
            }
        }
    }
}

/// The end of the next slice of a wait until `deadline`, and whether it
/// comes before the deadline.
fn slice_of(deadline: Option<Instant>) -> (Option<Instant>, bool) {
    let Some(end) = Instant::now().checked_add(CANCEL_SLICE) else {
        return (deadline, false);
    };
    match deadline {
        Some(d) if d <= end => (Some(d), false),
        _ => (Some(end), true),
    }
}
