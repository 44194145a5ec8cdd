//! Trace hooks of the sync objects: each lock kind calls them at each event, and
//! they emit the `sync_*` system events of the trace facility (payload layouts in
//! [`crate::trace::catalog`]).
//!
//! Each hook is `#[inline(always)]` and is one relaxed load and a predicted branch
//! when no trace stream runs (`trace::system_events::enabled()`); the payload is built in a
//! `#[cold]` out-of-line function, so the lock's fast path keeps its shape. When a
//! stream runs but filters the event, the cold path costs the filter-bit test.
//! Lock and trylock hooks are called after the attempt; unlock hooks before the
//! release, so that in a merged trace an unlock always precedes the next owner's
//! lock.

use crate::trace::catalog as tc;
use crate::trace::system_events::SysEvent;

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

impl LockResult {
    /// The `result` field: 0, or an errno.
    #[inline(always)]
    fn code(self) -> i32 {
        match self {
            LockResult::Acquired => 0,
            LockResult::Busy => libc::EBUSY,
            LockResult::TimedOut => libc::ETIMEDOUT,
            LockResult::Error(e) => e,
        }
    }

    /// From a trylock outcome.
    #[inline(always)]
    pub(crate) fn of_try(ok: bool) -> LockResult {
        if ok {
            LockResult::Acquired
        } else {
            LockResult::Busy
        }
    }

    /// From a checked trylock's result (a refusal keeps its errno).
    #[inline(always)]
    pub(crate) fn of_try_result(r: &crate::Result<bool>) -> LockResult {
        match r {
            Ok(ok) => LockResult::of_try(*ok),
            Err(e) => LockResult::Error(e.errno().unwrap_or(libc::EINVAL)),
        }
    }
}

/// Whether a hook has anything to do: one relaxed load.
#[inline(always)]
fn on() -> bool {
    crate::trace::system_events::enabled()
}

#[inline(always)]
fn tid() -> u32 {
    crate::sys::tid::current()
}

#[cold]
#[inline(never)]
fn emit_lock(ev: &SysEvent, addr: usize, owner: u32, result: LockResult) {
    let Some(id) = tc::recorded(ev) else { return };
    tc::Packer::<20>::new()
        .u64(addr as u64)
        .u32(tid())
        .u32(owner)
        .i32(result.code())
        .emit_id(id)
}

/// A mutex or rwlock write lock was locked (or the attempt failed): object address,
/// owner tid after the attempt, and the result.
#[inline(always)]
pub(crate) fn lock(addr: usize, owner: u32, result: LockResult) {
    if on() {
        emit_lock(&tc::SYNC_LOCK, addr, owner, result)
    }
}

/// A trylock on a mutex or rwlock write lock; `owner` is read only when tracing
/// (the owner's tid after the attempt, 0 if free).
#[inline(always)]
pub(crate) fn trylock(addr: usize, owner: impl FnOnce() -> u32, result: LockResult) {
    if on() {
        emit_lock(&tc::SYNC_TRYLOCK, addr, owner(), result)
    }
}

#[cold]
#[inline(never)]
fn emit_unlock(addr: usize) {
    let Some(id) = tc::recorded(&tc::SYNC_UNLOCK) else {
        return;
    };
    tc::Packer::<16>::new()
        .u64(addr as u64)
        .u32(tid())
        .i32(0)
        .emit_id(id)
}

/// A mutex or rwlock write lock is about to be unlocked by the calling thread.
#[inline(always)]
pub(crate) fn unlock(addr: usize) {
    if on() {
        emit_unlock(addr)
    }
}

/// As [`unlock`], unless `refused()` says the calling thread holds nothing to
/// release (a guard dropped by the unwinding of its own refused relock); it is
/// called only while a stream runs.
#[inline(always)]
pub(crate) fn unlock_unless(addr: usize, refused: impl FnOnce() -> bool) {
    if on() && !refused() {
        emit_unlock(addr)
    }
}

#[cold]
#[inline(never)]
fn emit_rdlock(addr: usize, is_try: bool, result: LockResult) {
    let Some(id) = tc::recorded(&tc::SYNC_RDLOCK) else {
        return;
    };
    tc::Packer::<20>::new()
        .u64(addr as u64)
        .u32(tid())
        .u32(is_try as u32)
        .i32(result.code())
        .emit_id(id)
}

/// A rwlock read lock (or try: `is_try`) ended with `result`.
#[inline(always)]
pub(crate) fn rdlock(addr: usize, is_try: bool, result: LockResult) {
    if on() {
        emit_rdlock(addr, is_try, result)
    }
}

#[cold]
#[inline(never)]
fn emit_rdunlock(addr: usize) {
    let Some(id) = tc::recorded(&tc::SYNC_RDUNLOCK) else {
        return;
    };
    tc::Packer::<12>::new()
        .u64(addr as u64)
        .u32(tid())
        .emit_id(id)
}

/// A rwlock read lock is about to be released by the calling thread.
#[inline(always)]
pub(crate) fn rdunlock(addr: usize) {
    if on() {
        emit_rdunlock(addr)
    }
}

#[cold]
#[inline(never)]
fn emit_cond_wait(addr: usize, mutex: usize, timed: bool) {
    let Some(id) = tc::recorded(&tc::SYNC_COND_WAIT) else {
        return;
    };
    tc::Packer::<24>::new()
        .u64(addr as u64)
        .u64(mutex as u64)
        .u32(tid())
        .u32(timed as u32)
        .emit_id(id)
}

/// A thread starts waiting on a condition variable (`timed`: with a deadline).
#[inline(always)]
pub(crate) fn cond_wait(addr: usize, mutex: usize, timed: bool) {
    if on() {
        emit_cond_wait(addr, mutex, timed)
    }
}

#[cold]
#[inline(never)]
fn emit_cond_signal(addr: usize, broadcast: bool) {
    let Some(id) = tc::recorded(&tc::SYNC_COND_SIGNAL) else {
        return;
    };
    tc::Packer::<16>::new()
        .u64(addr as u64)
        .u32(tid())
        .u32(broadcast as u32)
        .emit_id(id)
}

/// A condition variable was signalled (`broadcast`: all waiters).
#[inline(always)]
pub(crate) fn cond_signal(addr: usize, broadcast: bool) {
    if on() {
        emit_cond_signal(addr, broadcast)
    }
}

#[cold]
#[inline(never)]
fn emit_sem_wait(addr: usize, value: u32, result: LockResult) {
    let Some(id) = tc::recorded(&tc::SYNC_SEM_WAIT) else {
        return;
    };
    tc::Packer::<20>::new()
        .u64(addr as u64)
        .u32(tid())
        .u32(value)
        .i32(result.code())
        .emit_id(id)
}

/// A semaphore wait ended with `result`; `value` is the count after it.
#[inline(always)]
pub(crate) fn sem_wait(addr: usize, value: u32, result: LockResult) {
    if on() {
        emit_sem_wait(addr, value, result)
    }
}

#[cold]
#[inline(never)]
fn emit_sem_post(addr: usize, value: u32) {
    let Some(id) = tc::recorded(&tc::SYNC_SEM_POST) else {
        return;
    };
    tc::Packer::<16>::new()
        .u64(addr as u64)
        .u32(tid())
        .u32(value)
        .emit_id(id)
}

/// A semaphore was posted; `value` is the count after it.
#[inline(always)]
pub(crate) fn sem_post(addr: usize, value: u32) {
    if on() {
        emit_sem_post(addr, value)
    }
}

/// The address of a `lock_api` mutex's raw lock: the `addr` its lock events carry,
/// so a `sync_cond_wait` names the mutex the way `sync_lock` does.
#[inline(always)]
pub(crate) fn raw_addr<R: lock_api::RawMutex, T: ?Sized>(m: &lock_api::Mutex<R, T>) -> usize {
    // SAFETY: only the address of the raw lock is taken; it is never used to lock or
    // unlock.
    unsafe { m.raw() as *const R as usize }
}
