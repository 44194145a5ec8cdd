//! The condition variable of the priority-inheritance mutex ([`PiCondvar`]), with
//! **requeue-PI**: waiters move from the condition variable straight onto the PI
//! mutex's kernel queue, so priority inheritance holds across the wake-up.
//!
//! With a plain condition variable ([`Condvar`](super::Condvar), and glibc's
//! `pthread_cond_t` since 2.25) over a [`PiMutex`](super::PiMutex), `notify` wakes
//! the waiters, and each one then calls `FUTEX_LOCK_PI` to take the mutex back; the
//! priority inheritance starts there. That is still bounded: once the woken
//! waiter blocks on the mutex it boosts the owner, and a test with a medium-priority
//! CPU hog measured the same bound for both condition variables. What requeue-PI
//! changes is measured elsewhere:
//!
//! - **the boost happens inside `notify`**: the waiters are PI waiters of the mutex
//!   before `notify` returns, so the notifier (usually the owner) runs boosted from
//!   then on, not only from the moment each woken waiter gets the CPU back and
//!   blocks again;
//! - **no herd on broadcast**: `notify_all` does not wake every waiter only to have
//!   all but one block again on the mutex; they are moved onto the mutex's queue
//!   and `unlock` hands it to them one at a time in priority order (the `locks`
//!   bench has a paired broadcast to 16 waiters).
//!
//! `PiCondvar` uses the kernel's requeue-PI operations, made for this:
//!
//! - `wait` unlocks the mutex and sleeps in `FUTEX_WAIT_REQUEUE_PI` on a sequence
//!   word, naming the mutex's PI futex as the target.
//! - `notify_one` / `notify_all` advance the sequence and call
//!   `FUTEX_CMP_REQUEUE_PI`: the kernel hands the mutex directly to the top waiter
//!   if it is free (the waiter returns owning it), and otherwise **requeues** the
//!   waiters onto the mutex's rt_mutex, where they are PI waiters at once: the
//!   owner (often the notifier itself) is boosted to the highest waiter's priority
//!   before `notify` returns, and `unlock` hands the mutex to them one at a time in
//!   priority order. With no waiter, `notify` makes no syscall.
//! - A waiter whose sleep ended before a requeue (timeout, or the sequence moved
//!   before it slept) relocks the mutex itself with `FUTEX_LOCK_PI`.
//! - **A waiter that holds another `PiMutex` is woken, not requeued.** A
//!   requeue that would close a deadlock cycle (the mutex's owner waits,
//!   directly or through other PI mutexes, for a lock the waiter holds) is
//!   refused by the kernel (EDEADLK), which then leaves that waiter **and every
//!   waiter queued behind it** asleep: nothing but a requeue, a signal or a
//!   timeout ends a `FUTEX_WAIT_REQUEUE_PI` (a `FUTEX_WAKE` of it fails with
//!   EINVAL), so the notify would be lost. Only a waiter that owns a PI futex
//!   can close such a cycle, so a thread that waits while it holds another
//!   [`PiMutex`](super::PiMutex) sleeps in a plain `FUTEX_WAIT` on a second word
//!   instead: `notify` wakes it (after the requeue; `notify_one` only if no
//!   requeue-PI waiter was requeued) and it relocks the mutex itself with
//!   `FUTEX_LOCK_PI`, where a cycle is refused as for `PiMutex::lock` (a panic
//!   out of `wait`) instead of hanging. A waiter that holds a PI futex posixrt
//!   does not know of (a PI `pthread_mutex_t`) may still be refused, and then
//!   sleeps on until its deadline or a later `notify` after the cycle is gone.
//!
//! With tracking on ([`set_tracking`](super::set_tracking)), the waiters a
//! `notify_all` hands over to the mutex (requeued onto it, or failing their
//! sleep and relocking it themselves) are listed as the mutex's waiters, no
//! longer the condvar's, until they own it, so `objects()`, `rtstat` and
//! [`find_deadlocks`](super::find_deadlocks) see them wait for it. So is the
//! one a `notify_one` requeues when it is the condvar's only waiter. Among
//! several, the kernel picks it (the first of the highest priority) without
//! telling user space which it is: the mutex then counts a waiter from the
//! condvar ([`Snapshot::waiter_from_condvar`](super::Snapshot::waiter_from_condvar),
//! no tid) until it owns the mutex, and the condvar keeps listing all of them.
//!
//! A `PiCondvar` serves one [`PiMutex`](super::PiMutex) at a time (the kernel
//! requeues onto one futex): a `wait` with another mutex while threads wait with the
//! first is refused with [`InvalidInput`](crate::ErrorKind::InvalidInput). When no
//! thread waits, the next `wait` may use another mutex (e.g. after the pair moved).
//! Spurious wake-ups are possible, as with `pthread_cond_wait`: wait in a loop.
//!
//! # References
//! - [futex(2)](https://man7.org/linux/man-pages/man2/futex.2.html) (FUTEX_WAIT_REQUEUE_PI, FUTEX_CMP_REQUEUE_PI)
//! - [Documentation/locking/futex-requeue-pi.rst](https://docs.kernel.org/locking/futex-requeue-pi.html)
//! - [pthread_cond_wait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_wait.3p.html)

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lock_api::{MutexGuard, RawMutex};

use super::checked::{deadline_after, lock_failed, RawMutexChecked};
use super::pi::{PiMutexGuard, RawPiMutex};
use super::pi_condvar_handover as handover;
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::futex;
use crate::sys::tid::current as current_tid;
use crate::{Error, Result};

/// A condition variable for [`PiMutex`](super::PiMutex) with requeue-PI (see the
/// [module docs](self)).
///
/// ```
/// use posixrt::sync::{PiCondvar, PiMutex};
///
/// let ready = PiMutex::new(false);
/// let cv = PiCondvar::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let mut g = ready.lock();
///         *g = true;
///         cv.notify_one(); // the waiter is requeued onto `ready`, boosting us
///     });
///     let mut g = ready.lock();
///     while !*g {
///         cv.wait(&mut g)?;
///     }
///     Ok::<(), posixrt::Error>(())
/// })?;
/// # Ok::<(), posixrt::Error>(())
/// ```
pub struct PiCondvar {
    seq: AtomicU32,
    /// Threads in `wait` (requeue-PI and plain sleepers).
    sleepers: AtomicU32,
    /// The word plain sleepers (threads that hold another `PiMutex`) wait on.
    plain_seq: AtomicU32,
    /// Plain sleepers, counted in `sleepers` too.
    plain: AtomicU32,
    /// Address of the PI futex word of the mutex the waiters use (0: none yet).
    mutex: AtomicUsize,
    track: Track,
}

impl PiCondvar {
    /// A condition variable (`pthread_cond_init`).
    #[doc(alias = "pthread_cond_init")]
    pub const fn new() -> PiCondvar {
        PiCondvar {
            seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            plain_seq: AtomicU32::new(0),
            plain: AtomicU32::new(0),
            mutex: AtomicUsize::new(0),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Announces a sleeper and binds the condvar to `word` (the mutex's PI futex).
    fn bind(&self, word: usize) -> Result<()> {
        let n = self.sleepers.fetch_add(1, Ordering::SeqCst) + 1;
        let cur = self.mutex.load(Ordering::SeqCst);
        if cur == word {
            return Ok(());
        }
        // Unbound, or bound to a mutex nobody waits with any more: take it over.
        if (cur == 0 || n == 1)
            && self
                .mutex
                .compare_exchange(cur, word, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        {
            return Ok(());
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        Err(Error::invalid(
            "pthread_cond_wait",
            "this PiCondvar has waiters on another PiMutex",
        )
        .with_hint(
            "use one PiCondvar per PiMutex: the kernel requeues its waiters onto a single mutex",
        ))
    }

    fn wait_impl<T: ?Sized>(
        &self,
        guard: &mut PiMutexGuard<'_, T>,
        deadline: Option<Instant>,
    ) -> Result<bool> {
        // SAFETY: only the raw lock's futex word and its lock/unlock are used below,
        // on behalf of the guard, which holds the lock on entry and on exit.
        let raw: &RawPiMutex = unsafe { MutexGuard::mutex(guard).raw() };
        let word = raw.futex_word();
        self.bind(word as *const AtomicU32 as usize)?;
        let tid = current_tid();
        let wait = self
            .track
            .cond_wait_start(self.addr(), tid, deadline.is_some());
        super::hook::cond_wait(self.addr(), raw as *const _ as usize, deadline.is_some());
        // The guard's mutex is one of the PI mutexes this thread holds: any other
        // could close a cycle the kernel refuses to requeue into (module docs).
        if super::pi::held_by_current_thread() != 1 {
            return Ok(self.wait_plain(raw, tid, wait, deadline));
        }
        let s = self.seq.load(Ordering::Relaxed);
        let mutex_record = wait.map(|_| raw.track_record());
        // SAFETY: the guard proves this thread holds the lock; it is relocked (by
        // the kernel's requeue or below) before the guard is used again.
        unsafe { raw.unlock() };
        // Listed after the unlock (a thread that holds the mutex is never
        // shown waiting for it), before the sleep: a `notify_all` that
        // requeues it lists it as the mutex's waiter (see `handover`).
        if let Some(m) = mutex_record {
            handover::listen(self.addr(), tid, s, m);
        }
        let r = futex::wait_requeue_pi(&self.seq, s, word, deadline);
        let handed = mutex_record.is_some() && handover::leave(self.addr(), tid, r.is_ok());
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        let timed_out = match r {
            Ok(()) => {
                raw.acquired_by_requeue(tid);
                false
            }
            Err(e) => {
                // Not requeued (EAGAIN: notified before we slept; ETIMEDOUT; or a
                // kernel without requeue-PI): take the mutex back ourselves.
                self.relock(raw, tid, wait, handed, e == libc::ETIMEDOUT);
                e == libc::ETIMEDOUT
            }
        };
        self.cond_wait_done(tid, wait, handed, timed_out);
        Ok(timed_out)
    }

    /// The wait of a thread that holds another PI mutex: a plain sleep on
    /// `plain_seq`, then a relock by this thread (see the module docs); returns
    /// whether it timed out. `wait_impl` has bound the condvar and counted this
    /// thread in `sleepers`.
    fn wait_plain(
        &self,
        raw: &RawPiMutex,
        tid: u32,
        wait: Option<track::CondWait>,
        deadline: Option<Instant>,
    ) -> bool {
        // Counted before reading the word (SeqCst): a notify that advances the
        // word after this read sees the count (see `notify`).
        self.plain.fetch_add(1, Ordering::SeqCst);
        let p = self.plain_seq.load(Ordering::SeqCst);
        // SAFETY: the guard proves this thread holds the lock; it is relocked
        // below before the guard is used again.
        unsafe { raw.unlock() };
        let r = futex::wait(&self.plain_seq, p, deadline);
        self.plain.fetch_sub(1, Ordering::SeqCst);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        let timed_out = r == Err(libc::ETIMEDOUT);
        self.relock(raw, tid, wait, false, timed_out);
        self.track.cond_wait_done(tid, wait, timed_out);
        timed_out
    }

    /// The end of the wait for tracking: `handed` (over to the mutex by a
    /// notify) is no longer listed as the condvar's waiter.
    fn cond_wait_done(
        &self,
        tid: u32,
        wait: Option<track::CondWait>,
        handed: bool,
        timed_out: bool,
    ) {
        if handed {
            self.track.cond_wait_counted(wait, timed_out);
        } else {
            self.track.cond_wait_done(tid, wait, timed_out);
        }
    }

    /// Takes the mutex back after a wake-up without a requeue. The guard must
    /// hold the lock when `wait` returns, so a refusal panics, as a relock
    /// through `lock_api` would.
    fn relock(
        &self,
        raw: &RawPiMutex,
        tid: u32,
        wait: Option<track::CondWait>,
        handed: bool,
        timed_out: bool,
    ) {
        if let Err(err) = raw.lock_checked() {
            // Not a waiter any more, even though the relock panics; and the
            // guard unwinding drops holds nothing.
            self.cond_wait_done(tid, wait, handed, timed_out);
            raw.refused_relock(tid);
            lock_failed(err)
        }
    }

    /// Unlocks the guard's mutex, sleeps until notified, and returns owning it again
    /// (`pthread_cond_wait`); when notified while the mutex is held, this thread
    /// waits on the mutex as a PI waiter. Spurious wake-ups are possible.
    ///
    /// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) if other threads wait
    /// on this condvar with another mutex (nothing is unlocked then).
    ///
    /// Panics only if the kernel refuses to give the mutex back after a timeout or
    /// an early wake-up (as `PiMutex::lock` does, e.g. on a deadlock cycle).
    ///
    /// # References
    /// - [pthread_cond_wait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_wait.3p.html)
    #[doc(alias = "pthread_cond_wait")]
    pub fn wait<T: ?Sized>(&self, guard: &mut PiMutexGuard<'_, T>) -> Result<()> {
        self.wait_impl(guard, None).map(drop)
    }

    /// Like [`wait`](Self::wait) with an absolute deadline (`pthread_cond_timedwait`
    /// on CLOCK_MONOTONIC); `Ok(true)` if it timed out.
    ///
    /// # References
    /// - [pthread_cond_timedwait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_timedwait.3p.html)
    #[doc(alias = "pthread_cond_clockwait")]
    #[doc(alias = "pthread_cond_timedwait")]
    pub fn wait_until<T: ?Sized>(
        &self,
        guard: &mut PiMutexGuard<'_, T>,
        deadline: Instant,
    ) -> Result<bool> {
        self.wait_impl(guard, Some(deadline))
    }

    /// Like [`wait`](Self::wait) for at most `timeout`; `Ok(true)` if it timed out.
    pub fn wait_for<T: ?Sized>(
        &self,
        guard: &mut PiMutexGuard<'_, T>,
        timeout: Duration,
    ) -> Result<bool> {
        self.wait_impl(guard, Some(deadline_after(timeout)))
    }

    /// Wakes one waiter, or requeues it onto the mutex if the mutex is held
    /// (`pthread_cond_signal`); returns whether a sleeping waiter was woken or
    /// requeued. A waiter that holds another `PiMutex` is woken only if no
    /// requeue-PI waiter was requeued (see the [module docs](self)). A waiter
    /// between its unlock and its sleep is released too, without being counted.
    ///
    /// # References
    /// - [pthread_cond_signal(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_signal.3p.html)
    #[doc(alias = "pthread_cond_signal")]
    pub fn notify_one(&self) -> bool {
        self.notify(false) > 0
    }

    /// Hands the mutex to the top waiter if it is free and requeues every other
    /// waiter onto the mutex (`pthread_cond_broadcast` without the thundering herd);
    /// returns how many sleeping waiters were woken or requeued (waiters not asleep
    /// yet are released too, uncounted). Waiters that hold another `PiMutex` are
    /// woken and relock the mutex themselves (see the [module docs](self)).
    ///
    /// # References
    /// - [pthread_cond_broadcast(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_broadcast.3p.html)
    #[doc(alias = "pthread_cond_broadcast")]
    pub fn notify_all(&self) -> u32 {
        self.notify(true)
    }

    fn notify(&self, all: bool) -> u32 {
        if track::level() != 0 {
            let r = self.track.record(Kind::Condvar, self.addr());
            r.add(if all { track::W_D } else { track::W_C }, 1);
        }
        super::hook::cond_signal(self.addr(), all);
        let mut s = self.seq.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        // Threads in a requeue-PI wait before the requeue (for `notify_one`).
        let in_wait = self
            .sleepers
            .load(Ordering::SeqCst)
            .saturating_sub(self.plain.load(Ordering::SeqCst));
        let mut n = self.requeue(&mut s, all);
        if n > 0 {
            // Tracked waiters requeued onto the mutex are its waiters now.
            if all {
                handover::notified_all(self.addr(), s, self.track.get());
            } else {
                handover::notified_one(self.addr(), in_wait, self.track.get());
            }
        }
        // Plain sleepers (they hold another PI mutex): woken, they relock
        // themselves. A sleeper counted after this load read the word after
        // `notify` began, like a requeue-PI waiter that reads `seq` after it moved.
        if (all || n == 0) && self.plain.load(Ordering::SeqCst) != 0 {
            self.plain_seq.fetch_add(1, Ordering::SeqCst);
            n += futex::wake(&self.plain_seq, if all { i32::MAX as u32 } else { 1 });
        }
        n
    }

    /// `FUTEX_CMP_REQUEUE_PI` of the requeue-PI sleepers (one, or all) with `seq`
    /// at `s` (left at the value of the last try); how many were woken or
    /// requeued.
    fn requeue(&self, s: &mut u32, all: bool) -> u32 {
        let requeue = if all { i32::MAX as u32 } else { 0 };
        loop {
            let m = self.mutex.load(Ordering::SeqCst);
            if m == 0 {
                return 0;
            }
            // The futex word of the PiMutex the waiters named, as an address only:
            // it may have been freed if they all left meanwhile, but the kernel
            // touches it only after matching it against the key a *current* waiter
            // gave (whose guard keeps the mutex alive), EINVAL otherwise.
            let word = m as *const AtomicU32;
            match futex::cmp_requeue_pi(&self.seq, *s, word, requeue) {
                Ok(n) => return n,
                // Another notify moved the sequence: retry with its value.
                Err(libc::EAGAIN) => *s = self.seq.load(Ordering::SeqCst),
                // EINVAL: a waiter rebound the condvar to another mutex meanwhile
                // (retry with the new one) or no waiter is left; ENOSYS: no
                // requeue-PI in this kernel, and the waiters' own wait failed the
                // same way, so they relock by themselves; EDEADLK: requeueing the
                // next waiter would close a deadlock cycle through a PI futex
                // posixrt does not know of (see the module docs), without a count
                // of the ones requeued before it.
                Err(libc::EINVAL) if self.mutex.load(Ordering::SeqCst) != m => {}
                Err(_) => return 0,
            }
        }
    }

    /// How many threads are in `wait` (a snapshot; a thread requeued onto the mutex
    /// counts until it owns the mutex).
    pub fn waiters(&self) -> u32 {
        self.sleepers.load(Ordering::Relaxed)
    }

    /// Info, statistics and waiters, if known to tracking.
    pub fn snapshot(&self) -> Option<Snapshot> {
        self.track.snapshot_at(self.addr())
    }

    /// Gives the condvar a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::Condvar, self.addr(), name)
    }
}

impl Default for PiCondvar {
    fn default() -> Self {
        PiCondvar::new()
    }
}

impl std::fmt::Debug for PiCondvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PiCondvar")
            .field("waiters", &self.waiters())
            .finish()
    }
}
