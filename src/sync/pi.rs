//! The priority-inheritance mutex ([`PiMutex`], [`RawPiMutex`]) on Linux PI futexes.
//!
//! The lock word is the kernel's PI futex word: 0 when free, otherwise the owner's
//! thread id, with `FUTEX_WAITERS` (bit 31) set by the kernel while threads are
//! blocked and `FUTEX_OWNER_DIED` (bit 30) set when an owner died holding it.
//!
//! - **Uncontended**: lock is one compare-and-swap 0 → tid, unlock one
//!   compare-and-swap tid → 0, both inline, no syscall, no allocation (and a
//!   thread-local count of the PI mutexes the thread holds, which
//!   [`PiCondvar`](super::PiCondvar) reads).
//! - **Contended**: `FUTEX_LOCK_PI2` (Linux ≥ 5.14; timeouts on CLOCK_MONOTONIC) or,
//!   on older kernels, `FUTEX_LOCK_PI` (whose timeout the kernel measures on
//!   CLOCK_REALTIME, absolute: posixrt converts the monotonic deadline, so a wall
//!   clock step during the wait shifts it). The kernel queues the waiter on an
//!   rt_mutex and **boosts the owner to the highest waiter's priority** until it
//!   unlocks (`FUTEX_UNLOCK_PI` hands the lock to the highest-priority waiter).
//! - **Relock by the owner** is detected before any syscall: [`Deadlock`](crate::ErrorKind::Deadlock).
//! - **Deadlock cycles** across PI mutexes are detected by the kernel when the wait
//!   that would close the cycle starts: that lock fails with EDEADLK
//!   ([`Deadlock`](crate::ErrorKind::Deadlock), the message says it is a cycle), so
//!   with PI mutexes a thread of the cycle gets an error (a panic through `lock()`)
//!   instead of all of them hanging.
//! - **Owner death** (a thread exits holding the lock, e.g. after `mem::forget` of a
//!   guard): when nobody waits yet, the next locker gets ESRCH from the kernel; posixrt
//!   then takes the lock over (marking the word `FUTEX_OWNER_DIED`, as a robust
//!   futex would be), acquires it, and sets a sticky flag, [`RawPiMutex::owner_died`],
//!   that says the protected data may be inconsistent (the analogue of EOWNERDEAD;
//!   clear it with [`RawPiMutex::clear_owner_died`] once repaired). If threads were
//!   already blocked when the owner died, the kernel itself hands the lock to the top
//!   waiter on the owner's exit and the death is not visible. glibc's non-robust PI
//!   mutexes hang forever in the first case. `try_lock` stays one compare-and-swap
//!   and reports such a lock busy (as a non-robust POSIX mutex's trylock does:
//!   asking the kernel on every failed attempt would cost a spinning caller a
//!   syscall each time and make the live owner's unlock a syscall too); a zero
//!   timeout, `try_lock_for(Duration::ZERO)`, asks the kernel and takes it over.
//!
//! # References
//! - [futex(2)](https://man7.org/linux/man-pages/man2/futex.2.html) (FUTEX_LOCK_PI, FUTEX_LOCK_PI2, FUTEX_UNLOCK_PI, FUTEX_TRYLOCK_PI)
//! - [pthread_mutexattr_setprotocol(3p)](https://man7.org/linux/man-pages/man3/pthread_mutexattr_setprotocol.3p.html) (PTHREAD_PRIO_INHERIT)
//! - [Documentation/locking/pi-futex.rst](https://docs.kernel.org/locking/pi-futex.html)

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lock_api::{GuardNoSend, RawMutex, RawMutexTimed};

use super::checked::{deadline_after, lock_failed, timed_outcome, RawMutexChecked};
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::futex::{self, OWNER_DIED, TID_MASK, WAITERS};
use crate::sys::tid::current as current_tid;
use crate::{Error, ErrorKind, Result};

/// A mutex with the priority-inheritance protocol (`PTHREAD_PRIO_INHERIT`), with
/// `lock_api` guards.
///
/// `lock`, `try_lock`, `try_lock_for`, `try_lock_until` come from `lock_api`; the
/// fallible forms come from [`MutexExt`](super::MutexExt). Guards are not `Send`: a
/// PI futex belongs to the thread that locked it, and only that thread can unlock it,
/// so unlocking by a non-owner cannot be written through the guard API.
///
/// ```
/// use posixrt::sync::PiMutex;
///
/// let m = PiMutex::new(0u32);
/// *m.lock() += 1;
/// assert!(m.try_lock().is_some());
/// assert_eq!(*m.lock(), 1);
/// ```
///
/// Unlocking from a thread that is not the owner cannot be written: the guard cannot
/// move to another thread.
///
/// ```compile_fail
/// let m = posixrt::sync::PiMutex::new(());
/// let g = m.lock();
/// std::thread::scope(|s| {
///     s.spawn(move || drop(g));
/// });
/// ```
#[doc(alias = "PTHREAD_PRIO_INHERIT")]
#[doc(alias = "pthread_mutexattr_setprotocol")]
#[doc(alias = "pthread_mutex_t")]
pub type PiMutex<T> = lock_api::Mutex<RawPiMutex, T>;

/// The guard of a [`PiMutex`].
pub type PiMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawPiMutex, T>;

/// The raw priority-inheritance lock: a PI futex word (see the [module docs](self)).
///
/// The `lock_api` methods panic if the kernel refuses the lock (relock by the owner,
/// or an unexpected errno); [`RawMutexChecked`] returns those as errors instead.
pub struct RawPiMutex {
    word: AtomicU32,
    owner_died: AtomicBool,
    track: Track,
}

impl RawPiMutex {
    /// A free lock.
    pub const fn new() -> RawPiMutex {
        RawPiMutex {
            word: AtomicU32::new(0),
            owner_died: AtomicBool::new(false),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Info, statistics and waiters, if the mutex is known to tracking (it was used
    /// while [`set_tracking`](super::set_tracking) was on, or named). The lock state
    /// (locked, owner, has-waiters) is read live from the futex word.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        let w = self.word();
        s.info
            .set_live_owner((w & TID_MASK != 0).then_some(w & TID_MASK));
        Some(s)
    }

    /// Gives the mutex a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::PiMutex, self.addr(), name);
        self.track.note_held(&|| self.owner().unwrap_or(0));
    }

    /// Forces the mutex to unlocked, whoever holds it: the analogue of Solaris
    /// `td_sync_setstate`, for debuggers.
    ///
    /// Errors: [`Busy`](crate::ErrorKind::Busy) if threads are blocked in the kernel
    /// (their PI state names the owner; only the owner can hand the lock over).
    ///
    /// # Safety
    /// This breaks mutual exclusion: the owner's guard still exists and will unlock a
    /// lock it no longer holds (a no-op here, or a steal from the next owner), and
    /// the data may be mid-update. Use it only to unstick a program under a debugger.
    #[doc(alias = "td_sync_setstate")]
    pub unsafe fn force_unlock(&self) -> Result<()> {
        let w = self.word();
        if w & WAITERS != 0 {
            return Err(Error::new(
                ErrorKind::Busy,
                "force_unlock",
                "threads are blocked in FUTEX_LOCK_PI on this mutex",
            )
            .with_hint(
                "only the owner can unlock a PI futex with kernel waiters; make it exit or unlock",
            ));
        }
        if self
            .word
            .compare_exchange(w, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
        {
            return Err(Error::new(
                ErrorKind::Busy,
                "force_unlock",
                "the mutex changed meanwhile",
            ));
        }
        if let Some(r) = self.track.get() {
            r.set(track::W_OWNER, 0);
        }
        Ok(())
    }

    /// The owner's thread id, if the lock is held (a snapshot).
    #[inline]
    pub fn owner(&self) -> Option<u32> {
        match self.word.load(Ordering::Relaxed) & TID_MASK {
            0 => None,
            t => Some(t),
        }
    }

    /// Whether the kernel has marked threads as blocked on the lock (`FUTEX_WAITERS`).
    /// The kernel sets the bit on every hand-off to a waiter, so it may stay set after
    /// the last waiter got the lock, until the next unlock; the tracked waiter count
    /// ([`snapshot`](Self::snapshot)) is exact.
    #[inline]
    pub fn has_waiters(&self) -> bool {
        self.word.load(Ordering::Relaxed) & WAITERS != 0
    }

    /// Whether a previous owner died holding the lock (the analogue of EOWNERDEAD):
    /// the data it protects may be half-updated. Sticky until
    /// [`clear_owner_died`](Self::clear_owner_died).
    pub fn owner_died(&self) -> bool {
        self.owner_died.load(Ordering::Relaxed)
    }

    /// Declares the protected data consistent again (the analogue of
    /// `pthread_mutex_consistent`).
    ///
    /// # References
    /// - [pthread_mutex_consistent(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_consistent.3p.html)
    #[doc(alias = "pthread_mutex_consistent")]
    pub fn clear_owner_died(&self) {
        self.owner_died.store(false, Ordering::Relaxed)
    }

    /// The raw futex word (owner tid and kernel bits), for introspection.
    #[inline]
    pub fn word(&self) -> u32 {
        self.word.load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn try_fast(&self, tid: u32) -> bool {
        self.word
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// The PI futex word, for [`PiCondvar`](super::PiCondvar)'s requeue.
    #[inline]
    pub(crate) fn futex_word(&self) -> &AtomicU32 {
        &self.word
    }

    /// The mutex's tracking record (registering it), for a tracked
    /// [`PiCondvar`](super::PiCondvar) wait that may be handed over to it.
    pub(crate) fn track_record(&self) -> &'static track::Record {
        self.track.record(Kind::PiMutex, self.addr())
    }

    /// After `FUTEX_WAIT_REQUEUE_PI` made `tid` the owner: the bookkeeping of a
    /// contended acquisition (owner-died mark, tracking, trace hook).
    pub(crate) fn acquired_by_requeue(&self, tid: u32) {
        held_add();
        self.acquired_from_kernel();
        if track::level() != 0 {
            let t0 = if track::level() >= track::Tracking::Timing as u8 {
                track::ticks().max(1)
            } else {
                0
            };
            self.track
                .acquired_after_wait(Kind::PiMutex, self.addr(), tid, t0);
        }
        super::hook::lock(self.addr(), tid, super::hook::LockResult::Acquired);
    }

    /// After the kernel gave us the lock: clear and record `FUTEX_OWNER_DIED`.
    fn acquired_from_kernel(&self) {
        // The previous owner's FUTEX_UNLOCK_PI (after its Release fence) made the
        // kernel write our tid into the word; pair with it.
        if self.word.load(Ordering::Acquire) & OWNER_DIED != 0 {
            self.word.fetch_and(!OWNER_DIED, Ordering::Relaxed);
            self.owner_died.store(true, Ordering::Relaxed);
        }
    }

    /// The checked lock, untimed or until `deadline`: one CAS when free, else
    /// `FUTEX_LOCK_PI2`.
    #[inline]
    fn lock_by(&self, deadline: Option<Instant>) -> Result<()> {
        let tid = current_tid();
        if self.try_fast(tid) {
            held_add();
            self.track.on_fast_acquired(Kind::PiMutex, self.addr(), tid);
            Ok(())
        } else {
            let r = self.lock_slow(tid, deadline);
            if r.is_ok() {
                held_add();
            }
            r
        }
    }

    /// `RawMutex::lock`'s contended path, out of line with its panic so that `lock`
    /// itself stays small enough to inline (the `Result` and its drop glue would
    /// otherwise be inlined into every locking call site).
    #[cold]
    #[inline(never)]
    fn lock_contended(&self, tid: u32) {
        if let Err(e) = self.lock_slow(tid, None) {
            self.refused_relock(tid);
            lock_failed(e)
        }
        held_add();
        held_again(self.addr());
    }

    /// Before `lock_api`'s `lock` panics with a refusal of this mutex by the
    /// kernel (EDEADLK: a cycle): if that `lock` was a guard's relock (at the end
    /// of a condvar wait), the guard that unwinding drops next does not hold the
    /// lock, and its unlock must not uncount it ([`RawMutex::unlock`]). (Not for
    /// a relock by the owner, whose guard is a real one.)
    #[cold]
    pub(crate) fn refused_relock(&self, tid: u32) {
        if self.word() & TID_MASK != tid {
            let _ = REFUSED.try_with(|r| r.set(self.addr()));
        }
    }

    /// Whether an unlock by `tid` is that of a guard whose relock the kernel
    /// refused ([`refused_relock`](Self::refused_relock)): the word does not
    /// name `tid` (only `tid` itself could make it do so) and the refusal
    /// recorded is this mutex's.
    #[cold]
    fn unlocks_refused_relock(&self, tid: u32) -> bool {
        self.word() & TID_MASK != tid && REFUSED.try_with(Cell::get) == Ok(self.addr())
    }

    #[cold]
    #[inline(never)]
    fn lock_slow(&self, tid: u32, deadline: Option<Instant>) -> Result<()> {
        self.track.contended_lock(
            Kind::PiMutex,
            self.addr(),
            tid,
            deadline.is_some(),
            || self.lock_slow_inner(tid, deadline),
            || self.word() & TID_MASK,
        )
    }

    fn lock_slow_inner(&self, tid: u32, deadline: Option<Instant>) -> Result<()> {
        loop {
            let cur = self.word.load(Ordering::Relaxed);
            if cur & TID_MASK == tid {
                return Err(relock_error("pi_mutex_lock"));
            }
            if cur == 0 {
                if self.try_fast(tid) {
                    return Ok(());
                }
                continue;
            }
            match futex::lock_pi(&self.word, deadline) {
                Ok(()) => {
                    self.acquired_from_kernel();
                    return Ok(());
                }
                Err(libc::EINTR) | Err(libc::EAGAIN) => continue,
                Err(libc::ESRCH) => self.take_over_from_dead(cur),
                Err(libc::ETIMEDOUT) => {
                    return Err(Error::from_errno("futex(FUTEX_LOCK_PI)", libc::ETIMEDOUT))
                }
                // A relock by the owner was caught above, before the syscall: the
                // kernel's EDEADLK here is a cycle it found walking the PI chain
                // (this thread's wait would close a circle of owners and waiters).
                Err(libc::EDEADLK) => {
                    return Err(Error::from_errno("futex(FUTEX_LOCK_PI)", libc::EDEADLK)
                        .with_message(
                            "the kernel found a deadlock: the owner of this mutex waits, directly or through other PI mutexes, for a lock the calling thread holds",
                        )
                        .with_hint(
                            "lock PI mutexes in one global order; posixrt::sync::find_deadlocks (tracking on) lists the cycle of threads and locks",
                        ))
                }
                Err(e) => return Err(Error::from_errno("futex(FUTEX_LOCK_PI)", e)),
            }
        }
    }

    /// The kernel said the tid in the word belongs to no live thread: the owner exited
    /// holding the lock. Clear the tid and set `FUTEX_OWNER_DIED`, as robust-futex
    /// exit handling does; the next `FUTEX_LOCK_PI` then grants the lock.
    fn take_over_from_dead(&self, seen: u32) {
        let now = self.word.load(Ordering::Relaxed);
        if now & TID_MASK == seen & TID_MASK && now & TID_MASK != 0 {
            let _ = self.word.compare_exchange(
                now,
                OWNER_DIED | (now & WAITERS),
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }

    #[cold]
    #[inline(never)]
    fn try_lock_slow(&self, tid: u32) -> Result<bool> {
        let cur = self.word.load(Ordering::Relaxed);
        if cur & TID_MASK != 0 || cur & OWNER_DIED == 0 {
            // Held (by anyone, including us), or freed meanwhile (retry once).
            return Ok(cur == 0 && self.try_fast(tid));
        }
        // Free but marked OWNER_DIED: let the kernel grant it and keep the mark.
        match futex::trylock_pi(&self.word) {
            Ok(()) => {
                self.acquired_from_kernel();
                Ok(true)
            }
            Err(libc::EWOULDBLOCK) | Err(libc::EBUSY) => Ok(false),
            Err(e) => Err(Error::from_errno("futex(FUTEX_TRYLOCK_PI)", e)),
        }
    }

    /// The unlock when the CAS tid → 0 failed: `FUTEX_UNLOCK_PI`. False if the
    /// calling thread does not hold the lock (EPERM) because its last `lock` of
    /// it was refused ([`refused_relock`](Self::refused_relock)): a guard dropped
    /// by the unwinding of its own refused relock (a [`Condvar`](super::Condvar)
    /// or [`PiCondvar`](super::PiCondvar) wait whose relock the kernel refused
    /// with EDEADLK), which was uncounted when the wait unlocked. (A guard whose
    /// lock was forced free was counted: true.)
    #[cold]
    #[inline(never)]
    fn unlock_slow(&self, tid: u32, tracked: bool) -> bool {
        // Waiters are queued in the kernel: it hands the lock to the top waiter and
        // ends the owner's boost. The failed CAS was only a Relaxed load: order the
        // critical section's writes before the kernel's hand-off explicitly.
        std::sync::atomic::fence(Ordering::Release);
        loop {
            match futex::unlock_pi(&self.word) {
                Err(libc::EINTR) | Err(libc::EAGAIN) => continue,
                Err(libc::EPERM) if REFUSED.try_with(|r| r.replace(0)) == Ok(self.addr()) => {
                    // Nothing was released: the record names the owner again
                    // (`on_unlock` cleared it).
                    if tracked {
                        self.track.note_owner(&|| self.word() & TID_MASK, tid);
                    }
                    return false;
                }
                // Any other errno leaves nothing to retry.
                _ => return true,
            }
        }
    }
}

thread_local! {
    /// How many [`RawPiMutex`] locks the calling thread holds (acquired, not yet
    /// unlocked), for [`PiCondvar`](super::PiCondvar): a waiter that holds
    /// another PI mutex could close a deadlock cycle the kernel refuses to
    /// requeue it into.
    static HELD: Cell<u32> = const { Cell::new(0) };
}

thread_local! {
    /// The `RawPiMutex` whose last `lock` by this thread the kernel refused (0:
    /// none): the guard unwinding drops next names it and holds nothing to
    /// uncount (see [`RawPiMutex::refused_relock`]).
    static REFUSED: Cell<usize> = const { Cell::new(0) };
}

/// The mutex at `addr` is held by this thread again through a contended lock:
/// a refusal recorded for it is over. (A fast lock does not look: a refusal
/// outside a condvar wait, with no guard to drop, leaves a mark that only a
/// later unlock of a lock forced free from under this thread could read.)
#[inline]
fn held_again(addr: usize) {
    let _ = REFUSED.try_with(|r| {
        if r.get() == addr {
            r.set(0);
        }
    });
}

/// The calling thread acquired a `RawPiMutex`.
#[inline(always)]
fn held_add() {
    HELD.with(|h| h.set(h.get().wrapping_add(1)));
}

/// The calling thread unlocked a `RawPiMutex`.
#[inline(always)]
fn held_sub() {
    HELD.with(|h| h.set(h.get().wrapping_sub(1)));
}

/// How many `RawPiMutex` locks the calling thread holds (a lock leaked with
/// `mem::forget` stays counted).
#[inline]
pub(crate) fn held_by_current_thread() -> u32 {
    HELD.with(Cell::get)
}

/// The error for a relock by the lock's own owner.
pub(crate) fn relock_error(call: &'static str) -> Error {
    Error::from_errno(call, libc::EDEADLK)
        .with_message("the calling thread already owns this mutex")
        .with_hint("drop the guard before locking again, or use a recursive mutex")
}

impl Default for RawPiMutex {
    fn default() -> Self {
        RawPiMutex::new()
    }
}

impl std::fmt::Debug for RawPiMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawPiMutex")
            .field("owner", &self.owner())
            .field("has_waiters", &self.has_waiters())
            .field("owner_died", &self.owner_died())
            .finish()
    }
}

// SAFETY: the lock is exclusive: the futex word holds at most one owner tid, set by a
// successful CAS 0→tid (Acquire) or by the kernel; unlock is a CAS tid→0 (Release) or
// FUTEX_UNLOCK_PI. Guards are !Send, so a lock is always released by its owner thread.
unsafe impl RawMutex for RawPiMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawPiMutex = RawPiMutex::new();
    type GuardMarker = GuardNoSend;

    /// One CAS when free; `FUTEX_LOCK_PI2` otherwise. Panics on a relock by the owner.
    #[inline]
    fn lock(&self) {
        let tid = current_tid();
        if self.try_fast(tid) {
            held_add();
            self.track.on_fast_acquired(Kind::PiMutex, self.addr(), tid);
        } else {
            self.lock_contended(tid)
        }
    }

    #[inline]
    fn try_lock(&self) -> bool {
        self.try_lock_checked().unwrap_or(false)
    }

    #[inline]
    unsafe fn unlock(&self) {
        let tid = current_tid();
        // A guard dropped by the unwinding of its refused relock releases
        // nothing: no unlock event (the trace would show one after the refusal).
        let tracked = self
            .track
            .on_unlock_unless(self.addr(), || self.unlocks_refused_relock(tid));
        if self
            .word
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_err()
            && !self.unlock_slow(tid, tracked)
        {
            // Not held by this thread: not one of the PI mutexes it holds.
            return;
        }
        held_sub();
        self.track.on_released(tracked, tid);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.load(Ordering::Relaxed) & TID_MASK != 0
    }
}

// SAFETY: timed acquisition has the same exclusivity as `lock`.
unsafe impl RawMutexTimed for RawPiMutex {
    type Duration = Duration;
    type Instant = Instant;

    /// `false` on timeout; panics on other refusals (see [`RawMutexChecked`]).
    fn try_lock_until(&self, deadline: Instant) -> bool {
        timed_outcome(self.lock_until_checked(deadline))
    }

    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.try_lock_until(deadline_after(timeout))
    }
}

impl RawMutexChecked for RawPiMutex {
    #[inline]
    fn lock_checked(&self) -> Result<()> {
        self.lock_by(None)
    }

    #[inline]
    fn try_lock_checked(&self) -> Result<bool> {
        let tid = current_tid();
        let r = if self.try_fast(tid) {
            Ok(true)
        } else {
            self.try_lock_slow(tid)
        };
        if let Ok(true) = r {
            held_add();
        }
        super::hook::trylock(
            self.addr(),
            || self.word() & TID_MASK,
            super::hook::LockResult::of_try_result(&r),
        );
        if track::level() != 0 {
            match r {
                Ok(true) => self.track.try_acquired(Kind::PiMutex, self.addr(), tid),
                Ok(false) => self
                    .track
                    .try_failed(Kind::PiMutex, self.addr(), &|| self.word() & TID_MASK),
                Err(_) => {}
            }
        }
        r
    }

    fn lock_until_checked(&self, deadline: Instant) -> Result<()> {
        self.lock_by(Some(deadline))
    }
}
