//! `SA_RESTART` for the library's waits (`aio_suspend`, `lio_listio(LIO_WAIT)`).
//!
//! POSIX (`sigaction`, `SA_RESTART`): a function specified to fail with
//! [EINTR], interrupted by a handler installed with `SA_RESTART`, "shall
//! restart and shall not fail with [EINTR] unless otherwise specified", and
//! `aio_suspend` and `lio_listio` say nothing otherwise. glibc's waits do so
//! without a timeout (the kernel restarts their futex wait), and so does the
//! thread engine's; the io_uring engine waits in `io_uring_enter`, which the
//! kernel never restarts. The engine reports EINTR in both cases; this module
//! decides whether the call goes on.
//!
//! The library cannot see which handler ran. It restarts when every handler
//! that could have run in this thread (a signal not blocked in the thread, with
//! a handler that is neither `SIG_DFL` nor `SIG_IGN`) was installed with
//! `SA_RESTART`, which is also the case when none could have run (a stop and
//! `SIGCONT`). If one of them lacks `SA_RESTART`, the call returns -1/EINTR, as
//! before: right when that one ran, a spurious EINTR when another did.

/// Whether a wait that ended with EINTR is to go on: every handler that could
/// have interrupted the calling thread has `SA_RESTART`.
///
/// Async-signal-safe (`pthread_sigmask` and `sigaction` only).
pub(crate) fn handlers_restart() -> bool {
    let Some(mask) = thread_mask() else {
        return false;
    };
    (1..=libc::SIGRTMAX()).all(|sig| {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP || is_member(&mask, sig) {
            return true;
        }
        match handler_flags(sig) {
            // glibc keeps its internal signals (32, 33) from `sigaction`.
            None => true,
            Some((h, _)) if h == libc::SIG_DFL || h == libc::SIG_IGN => true,
            Some((_, flags)) => flags & libc::SA_RESTART != 0,
        }
    })
}

/// The calling thread's blocked-signal mask.
fn thread_mask() -> Option<libc::sigset_t> {
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a null new set only reads the mask into `set`, which has room.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), set.as_mut_ptr()) };
    // SAFETY: filled in by a successful `pthread_sigmask`.
    (r == 0).then(|| unsafe { set.assume_init() })
}

fn is_member(set: &libc::sigset_t, sig: i32) -> bool {
    // SAFETY: `set` is an initialised sigset_t; `sig` is in 1..=SIGRTMAX.
    unsafe { libc::sigismember(set, sig) == 1 }
}

/// The handler and flags installed for `sig`, if `sigaction` tells them.
fn handler_flags(sig: i32) -> Option<(libc::sighandler_t, i32)> {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only reads the current one into `old`.
    let r = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    if r != 0 {
        return None;
    }
    // SAFETY: filled in by a successful `sigaction`.
    let old = unsafe { old.assume_init() };
    Some((old.sa_sigaction, old.sa_flags))
}
