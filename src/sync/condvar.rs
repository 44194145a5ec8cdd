//! The condition variable ([`Condvar`]) for the posixrt mutexes: a futex sequence
//! counter.
//!
//! `wait` reads the counter while the mutex is held, unlocks the mutex through its
//! guard (`lock_api::MutexGuard::unlocked`), sleeps in `FUTEX_WAIT_BITSET` while the
//! counter is unchanged (absolute CLOCK_MONOTONIC deadline for timed waits) and
//! relocks. `notify_one` / `notify_all` advance the counter and wake one or all
//! sleepers; with no sleeper they make no syscall. Spurious wake-ups are possible, as
//! with `pthread_cond_wait`: wait in a loop on your predicate.
//!
//! Works with any `lock_api` mutex ([`PiMutex`](super::PiMutex),
//! [`CeilingMutex`](super::CeilingMutex), [`NormalMutex`](super::NormalMutex)); a PI
//! mutex is relocked with `FUTEX_LOCK_PI`, so priority inheritance holds on the way
//! back (but the wake-up itself is not requeued onto the PI futex: use
//! [`PiCondvar`](super::PiCondvar) for that). The
//! [`RecursiveMutex`](super::RecursiveMutex) is not a `lock_api` mutex and cannot
//! be waited with (glibc's tst-cond14 waits with a recursive mutex):
//!
//! ```compile_fail
//! let m = posixrt::sync::RecursiveMutex::new(());
//! let mut g = m.lock();
//! posixrt::sync::Condvar::new().wait(&mut g);
//! ```
//!
//! # References
//! - [pthread_cond_wait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_wait.3p.html)
//! - [pthread_cond_signal(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_signal.3p.html)

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lock_api::{MutexGuard, RawMutex};

use super::checked::deadline_after;
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::futex;
use crate::sys::tid::current as current_tid;

/// A condition variable (see the [module docs](self)).
///
/// ```
/// use posixrt::sync::{Condvar, PiMutex};
///
/// let ready = PiMutex::new(false);
/// let cv = Condvar::new();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         *ready.lock() = true;
///         cv.notify_one();
///     });
///     let mut g = ready.lock();
///     while !*g {
///         cv.wait(&mut g);
///     }
/// });
/// ```
#[doc(alias = "pthread_cond_t")]
pub struct Condvar {
    seq: AtomicU32,
    sleepers: AtomicU32,
    track: Track,
}

impl Condvar {
    /// A condition variable (`pthread_cond_init`).
    #[doc(alias = "pthread_cond_init")]
    pub const fn new() -> Condvar {
        Condvar {
            seq: AtomicU32::new(0),
            sleepers: AtomicU32::new(0),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    fn wait_impl<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Option<Instant>,
    ) -> bool {
        let tid = current_tid();
        let wait = self
            .track
            .cond_wait_start(self.addr(), tid, deadline.is_some());
        super::hook::cond_wait(
            self.addr(),
            super::hook::raw_addr(MutexGuard::mutex(guard)),
            deadline.is_some(),
        );
        let s = self.seq.load(Ordering::Relaxed);
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // Also run when the relock panics (e.g. a ceiling mutex refuses it): the
        // thread is no longer a waiter, whatever happened to the lock.
        let mut done = WaitDone {
            cv: self,
            tid,
            wait,
            timed_out: false,
        };
        MutexGuard::unlocked(guard, || {
            done.timed_out = futex::wait(&self.seq, s, deadline) == Err(libc::ETIMEDOUT);
        });
        done.timed_out
    }

    /// Unlocks the guard's mutex, sleeps until notified, relocks
    /// (`pthread_cond_wait`). Spurious wake-ups are possible.
    ///
    /// # References
    /// - [pthread_cond_wait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_wait.3p.html)
    #[doc(alias = "pthread_cond_wait")]
    pub fn wait<R: RawMutex, T: ?Sized>(&self, guard: &mut MutexGuard<'_, R, T>) {
        self.wait_impl(guard, None);
    }

    /// Like [`wait`](Self::wait) with an absolute deadline (`pthread_cond_timedwait`
    /// on CLOCK_MONOTONIC); returns `true` if it timed out.
    ///
    /// # References
    /// - [pthread_cond_timedwait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_timedwait.3p.html)
    /// - [pthread_cond_clockwait(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_clockwait.3p.html)
    #[doc(alias = "pthread_cond_clockwait")]
    #[doc(alias = "pthread_cond_timedwait")]
    pub fn wait_until<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        deadline: Instant,
    ) -> bool {
        self.wait_impl(guard, Some(deadline))
    }

    /// Like [`wait`](Self::wait) for at most `timeout`; returns `true` if it timed out.
    pub fn wait_for<R: RawMutex, T: ?Sized>(
        &self,
        guard: &mut MutexGuard<'_, R, T>,
        timeout: Duration,
    ) -> bool {
        self.wait_impl(guard, Some(deadline_after(timeout)))
    }

    /// Wakes one waiter (`pthread_cond_signal`); returns whether a sleeping one was
    /// woken. A waiter between its unlock and its sleep is released too (its sleep
    /// returns at once) without being counted.
    ///
    /// The one woken is chosen by the kernel among the threads asleep on the
    /// condvar at the moment of the wake: the highest real-time priority first,
    /// in the order they went to sleep among equals. A waiter asleep when
    /// `notify_one` is called is still asleep then, so it cannot be passed over
    /// for a thread of lower or equal priority. Called without the mutex held, a
    /// thread that starts waiting while `notify_one` runs is asleep at that
    /// moment too and may be the one woken if its priority is higher: a wait
    /// concurrent with the call, which POSIX leaves unordered (hold the mutex
    /// when the choice must be predictable, as pthread_cond_signal(3p) advises).
    ///
    /// # References
    /// - [pthread_cond_signal(3p)](https://man7.org/linux/man-pages/man3/pthread_cond_signal.3p.html)
    #[doc(alias = "pthread_cond_signal")]
    pub fn notify_one(&self) -> bool {
        self.notify(false) > 0
    }

    /// Wakes every waiter (`pthread_cond_broadcast`); returns how many sleeping ones
    /// were woken (waiters not asleep yet are released too, uncounted).
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
        self.seq.fetch_add(1, Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) == 0 {
            return 0;
        }
        futex::wake(&self.seq, if all { i32::MAX as u32 } else { 1 })
    }

    /// How many threads are in `wait` (a snapshot).
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

/// The end of a [`Condvar`] wait, on return or unwinding: the sleeper count and
/// the tracked waiter go.
struct WaitDone<'a> {
    cv: &'a Condvar,
    tid: u32,
    wait: Option<track::CondWait>,
    timed_out: bool,
}

impl Drop for WaitDone<'_> {
    fn drop(&mut self) {
        self.cv.sleepers.fetch_sub(1, Ordering::Relaxed);
        self.cv
            .track
            .cond_wait_done(self.tid, self.wait, self.timed_out);
    }
}

impl Default for Condvar {
    fn default() -> Self {
        Condvar::new()
    }
}

impl std::fmt::Debug for Condvar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condvar")
            .field("waiters", &self.waiters())
            .finish()
    }
}
