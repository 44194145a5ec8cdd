//! The calling thread's kernel thread id, cached per thread.
//!
//! The cache is reset in a forked child by the one fork hook ([`super::fork`]):
//! the forking thread's cached tid is the parent's, the child's only thread has a
//! new one. Without the reset a forked child would lock PI futexes with its
//! parent's tid and stamp trace events with it.
//!
//! # References
//! - [`gettid(2)`](https://man7.org/linux/man-pages/man2/gettid.2.html)

use std::cell::Cell;

thread_local! {
    static TID: Cell<u32> = const { Cell::new(0) };
}

/// `gettid()`: the calling thread's kernel thread id (one TLS load after the first
/// call in a thread).
#[inline(always)]
pub(crate) fn current() -> u32 {
    let t = TID.with(Cell::get);
    if t != 0 {
        t
    } else {
        current_slow()
    }
}

#[cold]
#[inline(never)]
fn current_slow() -> u32 {
    // The child handler forgets this cache in a forked child (registering the
    // same function again is a no-op).
    super::fork::on_child(forget);
    let t = rustix::thread::gettid().as_raw_nonzero().get() as u32;
    // A thread being torn down (TLS destroyed) still gets its tid, uncached.
    let _ = TID.try_with(|c| c.set(t));
    t
}

/// Forgets the calling thread's cached tid. Registered with the fork hook, which
/// calls it in the child; async-signal-safe (one TLS store).
fn forget() {
    let _ = TID.try_with(|c| c.set(0));
}

/// `pthread_self()`: the calling thread's `pthread_t` as a number (what
/// `posix_thread_id` holds). A forked child's thread has the forking thread's
/// value, as glibc gives it.
pub(crate) fn pthread_self() -> u64 {
    // SAFETY: pthread_self has no precondition and cannot fail.
    unsafe { libc::pthread_self() as u64 }
}
