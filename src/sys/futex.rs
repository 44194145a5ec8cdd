//! Futex operations on private (process-local) futex words, through
//! `rustix::thread::futex`.
//!
//! Every function takes the word as a borrowed `&AtomicU32` (so it is live and
//! aligned for the call), deadlines as an absolute [`Instant`], and returns the
//! errno of a failed call as a plain `i32` (the callers map EINTR, EAGAIN,
//! ETIMEDOUT and EOWNERDEAD to their own states).
//!
//! # References
//! - [`futex(2)`](https://man7.org/linux/man-pages/man2/futex.2.html)
//! - [`futex(7)`](https://man7.org/linux/man-pages/man7/futex.7.html)

use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::time::Instant;

use rustix::thread::futex::{self, Flags, Timespec};
use rustix::time::ClockId;

/// Bit 31 of a PI futex word: threads may be blocked in the kernel (`FUTEX_WAITERS`).
pub(crate) const WAITERS: u32 = 0x8000_0000;
/// Bit 30 of a PI futex word: the owner died without unlocking (`FUTEX_OWNER_DIED`).
pub(crate) const OWNER_DIED: u32 = 0x4000_0000;
/// The owner's thread id in a futex word (`FUTEX_TID_MASK`).
pub(crate) const TID_MASK: u32 = 0x3fff_ffff;

/// `FUTEX_BITSET_MATCH_ANY`: a waiter any wake wakes.
const MATCH_ANY: NonZeroU32 = match NonZeroU32::new(0xffff_ffff) {
    Some(v) => v,
    None => unreachable!(),
};

/// Every operation here is on a futex word private to the process.
const PRIVATE: Flags = Flags::PRIVATE;

fn errno(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

fn ts_add(now: Timespec, d: std::time::Duration) -> Timespec {
    let mut sec = now
        .tv_sec
        .saturating_add(d.as_secs().min(i64::MAX as u64) as i64);
    let mut nsec = now.tv_nsec + i64::from(d.subsec_nanos());
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.saturating_add(1);
    }
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// An [`Instant`] deadline as an absolute time on `clock`.
fn abs_timespec(deadline: Instant, clock: ClockId) -> Timespec {
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

/// `FUTEX_LOCK_PI2` (or `FUTEX_LOCK_PI` before Linux 5.14): block until the PI
/// futex is ours, boosting its owner meanwhile. `deadline` is absolute.
///
/// # References
/// - [`futex(2)`, FUTEX_LOCK_PI2](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn lock_pi(word: &AtomicU32, deadline: Option<Instant>) -> Result<(), i32> {
    if LOCK_PI2.load(Ordering::Relaxed) != 2 {
        let ts = deadline.map(|d| abs_timespec(d, ClockId::Monotonic));
        match futex::lock_pi2(word, PRIVATE, ts.as_ref()) {
            Err(rustix::io::Errno::NOSYS) => LOCK_PI2.store(2, Ordering::Relaxed),
            r => {
                LOCK_PI2.store(1, Ordering::Relaxed);
                return r.map_err(errno);
            }
        }
    }
    // Before Linux 5.14 FUTEX_LOCK_PI measures its timeout on CLOCK_REALTIME
    // (absolute), whatever the flags say; convert the monotonic deadline.
    let ts = deadline.map(|d| abs_timespec(d, ClockId::Realtime));
    futex::lock_pi(word, PRIVATE, ts.as_ref()).map_err(errno)
}

/// Blocks in [`lock_pi`] (no deadline) until the kernel hands the caller the PI
/// futex `word`, retrying on EINTR/EAGAIN. An error the kernel should not give
/// for a private lock the caller does not hold (ENOMEM; ESRCH or EINVAL if the
/// word names a thread that is gone) falls back to polling with `try_take`, the
/// lock's own user-space take (a CAS from 0 to the caller's tid), and a yield.
pub(crate) fn lock_pi_blocking(word: &AtomicU32, try_take: impl Fn() -> bool) {
    loop {
        match lock_pi(word, None) {
            Ok(()) => return,
            Err(libc::EINTR) | Err(libc::EAGAIN) => {}
            Err(_) => {
                if try_take() {
                    return;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// `FUTEX_TRYLOCK_PI`: take the PI futex if free (or left by a dead owner).
///
/// # References
/// - [`futex(2)`, FUTEX_TRYLOCK_PI](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn trylock_pi(word: &AtomicU32) -> Result<(), i32> {
    futex::trylock_pi(word, PRIVATE).map(drop).map_err(errno)
}

/// `FUTEX_UNLOCK_PI`: hand the PI futex to the highest-priority waiter.
///
/// # References
/// - [`futex(2)`, FUTEX_UNLOCK_PI](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn unlock_pi(word: &AtomicU32) -> Result<(), i32> {
    futex::unlock_pi(word, PRIVATE).map_err(errno)
}

/// `FUTEX_WAIT_BITSET` (match any): sleep while `*word == val`, until the absolute
/// CLOCK_MONOTONIC `deadline`.
///
/// # References
/// - [`futex(2)`, FUTEX_WAIT_BITSET](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn wait(word: &AtomicU32, val: u32, deadline: Option<Instant>) -> Result<(), i32> {
    wait_bits(word, val, deadline, MATCH_ANY)
}

/// [`wait`] as a waiter that a [`wake_bits`] wakes only if `bits` shares a
/// bit with its own (a plain [`wake`] wakes it as any other).
///
/// # References
/// - [`futex(2)`, FUTEX_WAIT_BITSET](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn wait_bits(
    word: &AtomicU32,
    val: u32,
    deadline: Option<Instant>,
    bits: NonZeroU32,
) -> Result<(), i32> {
    let ts = deadline.map(|d| abs_timespec(d, ClockId::Monotonic));
    futex::wait_bitset(word, PRIVATE, val, ts.as_ref(), bits).map_err(errno)
}

/// `FUTEX_WAKE_BITSET`: wake up to `n` threads sleeping on `word` whose wait's
/// bits share one with `bits` (every [`wait`]er does), in the order they went
/// to sleep among those of one priority; returns how many woke.
///
/// # References
/// - [`futex(2)`, FUTEX_WAKE_BITSET](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn wake_bits(word: &AtomicU32, n: u32, bits: NonZeroU32) -> u32 {
    // As FUTEX_WAKE: cannot fail on a valid private address.
    futex::wake_bitset(word, PRIVATE, n, bits).map_or(0, |n| n as u32)
}

/// `FUTEX_WAKE`: wake up to `n` threads sleeping on `word`; returns how many woke.
///
/// # References
/// - [`futex(2)`, FUTEX_WAKE](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn wake(word: &AtomicU32, n: u32) -> u32 {
    // FUTEX_WAKE cannot fail on a valid private address.
    futex::wake(word, PRIVATE, n).map_or(0, |n| n as u32)
}

/// `FUTEX_WAIT_REQUEUE_PI`: sleep on `cond` while `*cond == val`, to be requeued
/// by [`cmp_requeue_pi`] onto the PI futex `pi` (or handed it directly). `Ok` means
/// the caller now **owns** `pi`; any error (EAGAIN: `cond` changed before the sleep;
/// ETIMEDOUT: the absolute CLOCK_MONOTONIC `deadline` passed) means it does not.
///
/// # References
/// - [`futex(2)`, FUTEX_WAIT_REQUEUE_PI](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn wait_requeue_pi(
    cond: &AtomicU32,
    val: u32,
    pi: &AtomicU32,
    deadline: Option<Instant>,
) -> Result<(), i32> {
    let ts = deadline.map(|d| abs_timespec(d, ClockId::Monotonic));
    futex::wait_requeue_pi(cond, PRIVATE, val, ts.as_ref(), pi).map_err(errno)
}

/// `FUTEX_CMP_REQUEUE_PI`: if `*cond == expected`, hand the PI futex at `pi` to the
/// top waiter of `cond` if it is free (waking it), and requeue up to `requeue`
/// others (or that one, if `pi` is held) onto `pi`'s kernel queue, where they boost
/// its owner. Returns how many were woken or requeued; EAGAIN if `cond` changed.
///
/// `pi` is an address, not a reference: the mutex it names may have been freed if
/// every waiter left meanwhile (the kernel touches it only after matching it
/// against the key a current waiter gave, EINVAL otherwise). rustix's
/// `cmp_requeue_pi` takes `&AtomicU32`, which cannot be formed soundly here, so
/// this one operation is a raw `syscall`.
///
/// # References
/// - [`futex(2)`, FUTEX_CMP_REQUEUE_PI](https://man7.org/linux/man-pages/man2/futex.2.html)
pub(crate) fn cmp_requeue_pi(
    cond: &AtomicU32,
    expected: u32,
    pi: *const AtomicU32,
    requeue: u32,
) -> Result<u32, i32> {
    const FUTEX_CMP_REQUEUE_PI: libc::c_int = 12;
    const FUTEX_PRIVATE_FLAG: libc::c_int = 128;
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
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    } else {
        Ok(r as u32)
    }
}
