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
/// futex `word`. Per errno of `FUTEX_LOCK_PI`:
///
/// - EINTR: a handler ran (the kernel normally restarts the call): retry;
/// - EDEADLK (the caller owns the word already, or waiting would close a cycle
///   of PI futexes), ESRCH (the word names a thread that does not exist: an
///   owner that exited holding the lock, as these words are not robust), EPERM
///   (it names a kernel thread), EINVAL (the word and the kernel's state
///   disagree), EFAULT: final, the lock can never be had; returned (retrying
///   only burned the CPU, a real-time caller's forever);
/// - EAGAIN (the owner is exiting, or the word changed under the kernel): the
///   kernel asks for a retry; a few are immediate, then as below;
/// - ENOMEM (no memory for the kernel's PI state), ENOSYS (a kernel or sandbox
///   without PI futexes) and any other errno: `try_take` (the lock's own
///   user-space take, a CAS from 0 to the caller's tid), then a real sleep that
///   grows to [`MAX_BACKOFF`] ([`backoff`]), so a waiter of any priority lets the
///   owner run; then `FUTEX_LOCK_PI` again.
pub(crate) fn lock_pi_blocking(word: &AtomicU32, try_take: impl Fn() -> bool) -> Result<(), i32> {
    let mut tries = 0u32;
    loop {
        match lock_pi(word, None) {
            Ok(()) => return Ok(()),
            Err(libc::EINTR) => {}
            Err(e @ (libc::EDEADLK | libc::ESRCH | libc::EPERM | libc::EINVAL | libc::EFAULT)) => {
                return Err(e)
            }
            Err(e) => {
                if try_take() {
                    return Ok(());
                }
                if let Some(d) = backoff(e, tries) {
                    super::clock::sleep_nocancel(d);
                }
                tries = tries.saturating_add(1);
            }
        }
    }
}

/// How many EAGAINs in a row [`lock_pi_blocking`] retries without sleeping.
const EAGAIN_NOW: u32 = 8;
/// The longest sleep between two tries of [`lock_pi_blocking`].
pub(crate) const MAX_BACKOFF: std::time::Duration = std::time::Duration::from_millis(1);

/// The sleep before the next try after `tries` failed ones ending with errno
/// `e`: none for the first [`EAGAIN_NOW`] EAGAINs (a retry the kernel asked
/// for), else 1 µs doubling up to [`MAX_BACKOFF`].
fn backoff(e: i32, tries: u32) -> Option<std::time::Duration> {
    if e == libc::EAGAIN && tries < EAGAIN_NOW {
        return None;
    }
    let us = 1u64 << tries.min(10);
    Some(std::time::Duration::from_micros(us).min(MAX_BACKOFF))
}

/// A `FUTEX_LOCK_PI` refusal that [`lock_pi_blocking`] returned, for a
/// `lock_api` `lock`, which cannot return it: a panic that names it (as the
/// crate's mutexes refuse a relock by their owner).
#[cold]
#[inline(never)]
pub(crate) fn lock_refused(lock: &'static str, e: i32) -> ! {
    let why = match e {
        libc::EDEADLK => {
            "the calling thread holds this lock already, or waiting would close a cycle of locks"
        }
        libc::ESRCH => "its owner exited without unlocking it",
        _ => "the lock word is corrupted",
    };
    panic!(
        "posixrt {lock}: FUTEX_LOCK_PI refused with {}: {why}",
        crate::error::errno_name(e)
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// How many takes a refused lock may try before the test calls it a
    /// spin (the fixed code tries none: the refusal is final).
    const SPIN: u32 = 1000;

    /// A word the calling thread already owns: FUTEX_LOCK_PI refuses it
    /// (EDEADLK) for good, so waiting on it cannot end.
    #[test]
    fn a_word_the_caller_owns_is_refused_not_spun_on() {
        let word = AtomicU32::new(super::super::tid::current());
        let takes = Cell::new(0u32);
        let r = lock_pi_blocking(&word, || {
            takes.set(takes.get() + 1);
            takes.get() >= SPIN
        });
        assert!(takes.get() < SPIN, "polled {} times", takes.get());
        assert_eq!(r, Err(libc::EDEADLK));
        assert_eq!(word.load(Ordering::Relaxed), super::super::tid::current());
    }

    /// A word left with the tid of a thread that exited (a stale owner):
    /// FUTEX_LOCK_PI finds no such thread (ESRCH) for good.
    #[test]
    fn a_word_owned_by_an_exited_thread_is_refused_not_spun_on() {
        let dead = std::thread::spawn(super::super::tid::current)
            .join()
            .unwrap();
        let word = AtomicU32::new(dead);
        let takes = Cell::new(0u32);
        let r = lock_pi_blocking(&word, || {
            takes.set(takes.get() + 1);
            takes.get() >= SPIN
        });
        assert!(takes.get() < SPIN, "polled {} times", takes.get());
        assert_eq!(r, Err(libc::ESRCH));
        // (The kernel may have set FUTEX_WAITERS before it looked the tid up.)
        let left = word.load(Ordering::Relaxed) & TID_MASK;
        assert_eq!(left, dead, "the stale owner stays");
    }

    /// Between two tries after an error that may pass, a waiter sleeps (a
    /// real-time one would otherwise keep a lower-priority owner off its CPU),
    /// at least 1 µs and at most [`MAX_BACKOFF`]; only the first EAGAINs, which
    /// the kernel asks to retry, are retried at once.
    #[test]
    fn a_passing_error_backs_off_with_a_real_sleep() {
        for e in [libc::ENOMEM, libc::ENOSYS, libc::EBUSY] {
            for tries in [0, 1, 5, 9, 10, 11, 100, u32::MAX] {
                let d = backoff(e, tries).expect("a sleep");
                assert!(
                    d >= std::time::Duration::from_micros(1),
                    "{e} {tries}: {d:?}"
                );
                assert!(d <= MAX_BACKOFF, "{e} {tries}: {d:?}");
            }
            assert_eq!(backoff(e, 100), Some(MAX_BACKOFF));
        }
        let immediate = (0..100).filter(|&t| backoff(libc::EAGAIN, t).is_none());
        assert_eq!(immediate.count() as u32, EAGAIN_NOW);
        assert_eq!(backoff(libc::EAGAIN, 100), Some(MAX_BACKOFF));
    }

    /// A lock the kernel cannot give for now (ENOMEM; ENOSYS, no PI futexes,
    /// takes the same path, but would also change the process's LOCK_PI2
    /// probe) is still had once its holder lets go, by the user-space take.
    #[test]
    fn a_lock_the_kernel_cannot_give_is_taken_when_released() {
        // No such thread: were the filter to miss, the kernel would answer
        // ESRCH and the test fail, not hang.
        let word = AtomicU32::new(TID_MASK);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                fail_lock_pi_with(libc::ENOMEM);
                let me = super::super::tid::current();
                let takes = Cell::new(0u32);
                let r = lock_pi_blocking(&word, || {
                    takes.set(takes.get() + 1);
                    if takes.get() == 3 {
                        // The holder lets go while the waiter polls.
                        word.store(0, Ordering::Release);
                    }
                    word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                });
                (r, takes.get(), me)
            });
            let (r, takes, me) = waiter.join().unwrap();
            assert_eq!(r, Ok(()));
            assert_eq!(takes, 3);
            assert_eq!(word.load(Ordering::Relaxed), me);
        });
    }

    /// Makes FUTEX_LOCK_PI and FUTEX_LOCK_PI2 (private) fail with `errno` in
    /// the calling thread (a seccomp filter, no TSYNC: other threads are not
    /// filtered).
    fn fail_lock_pi_with(errno: i32) {
        const LD_W_ABS: u16 = 0x20;
        const JEQ_K: u16 = 0x15;
        const RET_K: u16 = 0x06;
        let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
        let (lock_pi, lock_pi2) = (6 | 128, 13 | 128);
        let mut filter = [
            op(LD_W_ABS, 0, 0, 0),
            op(JEQ_K, 0, 4, libc::SYS_futex as u32),
            op(LD_W_ABS, 0, 0, 24),
            op(JEQ_K, 1, 0, lock_pi),
            op(JEQ_K, 0, 1, lock_pi2),
            op(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | errno as u32),
            op(RET_K, 0, 0, libc::SECCOMP_RET_ALLOW),
        ];
        let prog = libc::sock_fprog {
            len: filter.len() as u16,
            filter: filter.as_mut_ptr(),
        };
        // SAFETY: prctl and seccomp with a valid program that outlives the
        // calls; no TSYNC, so only this thread is filtered.
        let r = unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0, &prog)
        };
        assert_eq!(r, 0, "seccomp: {}", std::io::Error::last_os_error());
    }
}
