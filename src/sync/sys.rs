//! The raw calls behind `sync`: futex operations, the cached thread id, and the
//! calling thread's scheduling attributes. Everything here is private to the crate.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::Instant;

/// Bit 31 of a PI futex word: threads may be blocked in the kernel (`FUTEX_WAITERS`).
pub(crate) const WAITERS: u32 = 0x8000_0000;
/// Bit 30 of a PI futex word: the owner died without unlocking (`FUTEX_OWNER_DIED`).
pub(crate) const OWNER_DIED: u32 = 0x4000_0000;
/// The owner's thread id in a futex word (`FUTEX_TID_MASK`).
pub(crate) const TID_MASK: u32 = 0x3fff_ffff;

const FUTEX_WAIT_BITSET: libc::c_int = 9;
const FUTEX_WAKE: libc::c_int = 1;
const FUTEX_LOCK_PI: libc::c_int = 6;
const FUTEX_UNLOCK_PI: libc::c_int = 7;
const FUTEX_TRYLOCK_PI: libc::c_int = 8;
const FUTEX_LOCK_PI2: libc::c_int = 13;
const FUTEX_PRIVATE_FLAG: libc::c_int = 128;
const FUTEX_BITSET_MATCH_ANY: u32 = 0xffff_ffff;

/// The calling thread's kernel thread id (see [`crate::sys::tid`]).
pub(crate) use crate::sys::tid::current as current_tid;

/// One futex call; returns the result or the errno.
///
/// # Safety
/// `uaddr` must point to a live, 4-byte aligned futex word for the duration of the
/// call; `timeout` is null or points to a valid timespec.
unsafe fn futex(
    uaddr: *const AtomicU32,
    op: libc::c_int,
    val: u32,
    timeout: *const libc::timespec,
    val3: u32,
) -> Result<libc::c_long, i32> {
    // SAFETY: the caller guarantees `uaddr` and `timeout`; the other arguments are
    // plain values and uaddr2 is unused by the operations used here.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            uaddr,
            op,
            val,
            timeout,
            std::ptr::null::<u32>(),
            val3,
        )
    };
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(r)
    }
}

/// A private futex operation `op` with no timeout and no `val3`, on a word borrowed
/// for the call (so it is live and aligned): the safe form of [`futex`].
fn futex_untimed(word: &AtomicU32, op: libc::c_int, val: u32) -> Result<libc::c_long, i32> {
    // SAFETY: `word` is a live, aligned AtomicU32 for the call; no timeout.
    unsafe { futex(word, op | FUTEX_PRIVATE_FLAG, val, std::ptr::null(), 0) }
}

/// The errno of the failed call just made (EIO if the OS gave none).
fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn ts_add(now: rustix::time::Timespec, d: std::time::Duration) -> libc::timespec {
    let mut sec = now
        .tv_sec
        .saturating_add(d.as_secs().min(i64::MAX as u64) as i64);
    let mut nsec = now.tv_nsec + i64::from(d.subsec_nanos());
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.saturating_add(1);
    }
    libc::timespec {
        tv_sec: sec as libc::time_t,
        tv_nsec: nsec as _,
    }
}

/// An [`Instant`] deadline as an absolute time on `clock`.
fn abs_timespec(deadline: Instant, clock: rustix::time::ClockId) -> libc::timespec {
    let left = deadline.saturating_duration_since(Instant::now());
    ts_add(rustix::time::clock_gettime(clock), left)
}

/// 0 = not probed, 1 = FUTEX_LOCK_PI2 works, 2 = ENOSYS (kernel before 5.14).
static LOCK_PI2: AtomicU8 = AtomicU8::new(0);

/// Whether the kernel has `FUTEX_LOCK_PI2` (Linux 5.14), which takes a
/// CLOCK_MONOTONIC timeout; otherwise `FUTEX_LOCK_PI` with CLOCK_REALTIME is used.
pub(crate) fn has_lock_pi2() -> bool {
    LOCK_PI2.load(Ordering::Relaxed) != 2
}

/// `FUTEX_LOCK_PI2` (or `FUTEX_LOCK_PI`): block until the PI futex is ours, boosting
/// its owner meanwhile. `deadline` is absolute.
pub(crate) fn lock_pi(word: &AtomicU32, deadline: Option<Instant>) -> Result<(), i32> {
    if LOCK_PI2.load(Ordering::Relaxed) != 2 {
        let ts = deadline.map(|d| abs_timespec(d, rustix::time::ClockId::Monotonic));
        let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
        // SAFETY: `word` is a live AtomicU32 borrowed for the call; `tp` is null or
        // points to `ts` on this stack frame.
        match unsafe { futex(word, FUTEX_LOCK_PI2 | FUTEX_PRIVATE_FLAG, 0, tp, 0) } {
            Err(libc::ENOSYS) => LOCK_PI2.store(2, Ordering::Relaxed),
            r => {
                LOCK_PI2.store(1, Ordering::Relaxed);
                return r.map(drop);
            }
        }
    }
    // Before Linux 5.14 FUTEX_LOCK_PI measures its timeout on CLOCK_REALTIME
    // (absolute), whatever the flags say; convert the monotonic deadline.
    let ts = deadline.map(|d| abs_timespec(d, rustix::time::ClockId::Realtime));
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: as above.
    unsafe { futex(word, FUTEX_LOCK_PI | FUTEX_PRIVATE_FLAG, 0, tp, 0) }.map(drop)
}

/// `FUTEX_TRYLOCK_PI`: take the PI futex if free (or left by a dead owner).
pub(crate) fn trylock_pi(word: &AtomicU32) -> Result<(), i32> {
    futex_untimed(word, FUTEX_TRYLOCK_PI, 0).map(drop)
}

/// `FUTEX_UNLOCK_PI`: hand the PI futex to the highest-priority waiter.
pub(crate) fn unlock_pi(word: &AtomicU32) -> Result<(), i32> {
    futex_untimed(word, FUTEX_UNLOCK_PI, 0).map(drop)
}

/// `FUTEX_WAIT_BITSET`: sleep while `*word == val`, until the absolute
/// CLOCK_MONOTONIC `deadline`.
pub(crate) fn wait(word: &AtomicU32, val: u32, deadline: Option<Instant>) -> Result<(), i32> {
    let ts = deadline.map(|d| abs_timespec(d, rustix::time::ClockId::Monotonic));
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: `word` is a live AtomicU32; `tp` is null or points to `ts`.
    unsafe {
        futex(
            word,
            FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
            val,
            tp,
            FUTEX_BITSET_MATCH_ANY,
        )
    }
    .map(drop)
}

/// `FUTEX_WAKE`: wake up to `n` threads sleeping on `word`; returns how many woke.
pub(crate) fn wake(word: &AtomicU32, n: u32) -> u32 {
    // FUTEX_WAKE cannot fail on a valid private address.
    futex_untimed(word, FUTEX_WAKE, n).map_or(0, |n| n as u32)
}

const FUTEX_WAIT_REQUEUE_PI: libc::c_int = 11;
const FUTEX_CMP_REQUEUE_PI: libc::c_int = 12;

/// `FUTEX_WAIT_REQUEUE_PI`: sleep on `cond` while `*cond == val`, to be requeued
/// by [`cmp_requeue_pi`] onto the PI futex `pi` (or handed it directly). `Ok` means
/// the caller now **owns** `pi`; any error (EAGAIN: `cond` changed before the sleep;
/// ETIMEDOUT: the absolute CLOCK_MONOTONIC `deadline` passed) means it does not.
pub(crate) fn wait_requeue_pi(
    cond: &AtomicU32,
    val: u32,
    pi: &AtomicU32,
    deadline: Option<Instant>,
) -> Result<(), i32> {
    let ts = deadline.map(|d| abs_timespec(d, rustix::time::ClockId::Monotonic));
    let tp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const _);
    // SAFETY: `cond` and `pi` are live AtomicU32s borrowed for the call (the kernel
    // keeps only their keys); `tp` is null or points to `ts` on this frame.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            cond as *const AtomicU32,
            FUTEX_WAIT_REQUEUE_PI | FUTEX_PRIVATE_FLAG,
            val,
            tp,
            pi as *const AtomicU32,
            0u32,
        )
    };
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(())
    }
}

/// `FUTEX_CMP_REQUEUE_PI`: if `*cond == expected`, hand the PI futex at `pi` to the
/// top waiter of `cond` if it is free (waking it), and requeue up to `requeue`
/// others (or that one, if `pi` is held) onto `pi`'s kernel queue, where they boost
/// its owner. Returns how many were woken or requeued; EAGAIN if `cond` changed.
pub(crate) fn cmp_requeue_pi(
    cond: &AtomicU32,
    expected: u32,
    pi: *const AtomicU32,
    requeue: u32,
) -> Result<u32, i32> {
    // SAFETY: `cond` is a live AtomicU32. `pi` is passed as an address only: the
    // kernel reads or writes it only after matching it against the key a current
    // FUTEX_WAIT_REQUEUE_PI waiter named (EINVAL otherwise), and faults are caught
    // by the kernel (EFAULT). The timeout argument slot carries the requeue count
    // (val2), as futex(2) specifies for the requeue operations.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            cond as *const AtomicU32,
            FUTEX_CMP_REQUEUE_PI | FUTEX_PRIVATE_FLAG,
            1u32,
            requeue as usize,
            pi,
            expected,
        )
    };
    if r == -1 {
        Err(last_errno())
    } else {
        Ok(r as u32)
    }
}
