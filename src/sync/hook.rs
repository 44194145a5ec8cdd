//! Trace hooks of the sync objects: named no-op functions the lock kinds call at each
//! event, for the trace facility to fill in later (issue 6, "trace points
//! everywhere"). Each is `#[inline(always)]` and empty, so the call compiles away.
//! They are only reached on paths that already pay for something (contention,
//! tracking on, condvar and semaphore operations), never on the uncontended fast
//! path with tracking off.

#![allow(dead_code, unused_variables)]

/// The result of a lock attempt, as a trace payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LockResult {
    /// Acquired.
    Acquired,
    /// `try_lock` found it held.
    Busy,
    /// A timed lock timed out.
    TimedOut,
    /// Refused with this errno.
    Error(i32),
}

/// A mutex or rwlock was locked (or the attempt failed): object address, owner tid
/// after the attempt, and the result.
#[inline(always)]
pub(crate) fn lock(addr: usize, owner: u32, result: LockResult) {}

/// A trylock on a mutex or rwlock.
#[inline(always)]
pub(crate) fn trylock(addr: usize, owner: u32, result: LockResult) {}

/// A mutex or rwlock was unlocked by `owner`.
#[inline(always)]
pub(crate) fn unlock(addr: usize, owner: u32) {}

/// A thread starts waiting on a condition variable (`timed`: with a deadline).
#[inline(always)]
pub(crate) fn cond_wait(addr: usize, mutex: usize, timed: bool) {}

/// A condition variable was signalled (`broadcast`: all waiters).
#[inline(always)]
pub(crate) fn cond_signal(addr: usize, broadcast: bool) {}

/// A semaphore wait ended with `result`; `value` is the count after it.
#[inline(always)]
pub(crate) fn sem_wait(addr: usize, value: u32, result: LockResult) {}

/// A semaphore was posted; `value` is the count after it.
#[inline(always)]
pub(crate) fn sem_post(addr: usize, value: u32) {}
