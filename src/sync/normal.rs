//! The normal (no-protocol) mutex ([`NormalMutex`], [`RawNormalMutex`]) on a plain
//! futex, and the lock word shared with the priority-ceiling mutex.
//!
//! The word holds the owner's thread id (so the owner is known and a relock is
//! reported as [`Deadlock`](crate::ErrorKind::Deadlock)) plus a waiters bit. A
//! blocked thread sleeps in `FUTEX_WAIT_BITSET` (absolute CLOCK_MONOTONIC timeout);
//! unlock wakes one sleeper with `FUTEX_WAKE` when the bit is set. The kernel does
//! nothing about priorities here: this is `PTHREAD_PRIO_NONE`, the lock that suffers
//! priority inversion (see the `priority_inversion` example).
//!
//! # References
//! - [futex(2)](https://man7.org/linux/man-pages/man2/futex.2.html) (FUTEX_WAIT_BITSET, FUTEX_WAKE)
//! - [pthread_mutex_lock(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_lock.3p.html)
//! - Ulrich Drepper, *Futexes Are Tricky* (the waiters-bit protocol)

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lock_api::{GuardNoSend, RawMutex, RawMutexTimed};

use super::checked::{deadline_after, lock_failed, timed_outcome, RawMutexChecked};
use super::pi::relock_error;
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::futex::{self, TID_MASK, WAITERS};
use crate::sys::tid::current as current_tid;
use crate::{Error, Result};

/// The futex word of the normal and ceiling mutexes: owner tid | waiters bit.
pub(crate) struct TidWord(AtomicU32);

impl TidWord {
    pub(crate) const fn new() -> TidWord {
        TidWord(AtomicU32::new(0))
    }

    #[inline(always)]
    pub(crate) fn try_fast(&self, tid: u32) -> bool {
        self.0
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline(always)]
    pub(crate) fn unlock_fast(&self, tid: u32) -> bool {
        self.0
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed)
            .is_ok()
    }

    #[inline]
    pub(crate) fn load(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn owner(&self) -> Option<u32> {
        match self.load() & TID_MASK {
            0 => None,
            t => Some(t),
        }
    }

    /// The contended path, with tracking of the wait for the object `(track, kind,
    /// addr)` that owns this word.
    #[cold]
    #[inline(never)]
    pub(crate) fn lock_slow(
        &self,
        tid: u32,
        deadline: Option<Instant>,
        call: &'static str,
        t: (&Track, Kind, usize),
    ) -> Result<()> {
        t.0.contended_lock(
            t.1,
            t.2,
            tid,
            deadline.is_some(),
            || self.lock_slow_inner(tid, deadline, call),
            || self.load() & TID_MASK,
        )
    }

    fn lock_slow_inner(
        &self,
        tid: u32,
        deadline: Option<Instant>,
        call: &'static str,
    ) -> Result<()> {
        loop {
            let cur = self.0.load(Ordering::Relaxed);
            let owner = cur & TID_MASK;
            if owner == 0 {
                // Once we may have slept, take it with the waiters bit: other
                // sleepers may remain, and the next unlock must wake one.
                if self
                    .0
                    .compare_exchange(cur, tid | WAITERS, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    return Ok(());
                }
                continue;
            }
            if owner == tid {
                return Err(relock_error(call));
            }
            if cur & WAITERS == 0
                && self
                    .0
                    .compare_exchange(cur, cur | WAITERS, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
            {
                continue;
            }
            match futex::wait(&self.0, cur | WAITERS, deadline) {
                Ok(()) | Err(libc::EAGAIN) | Err(libc::EINTR) => {}
                Err(libc::ETIMEDOUT) => {
                    return Err(Error::from_errno(
                        "futex(FUTEX_WAIT_BITSET)",
                        libc::ETIMEDOUT,
                    ))
                }
                Err(e) => return Err(Error::from_errno("futex(FUTEX_WAIT_BITSET)", e)),
            }
        }
    }

    /// Forces the word to unlocked and wakes one sleeper.
    pub(crate) fn force_unlock(&self) {
        self.unlock_slow();
        futex::wake(&self.0, 1);
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn unlock_slow(&self) {
        if self.0.swap(0, Ordering::Release) & WAITERS != 0 {
            futex::wake(&self.0, 1);
        }
    }
}

/// A mutex with no priority protocol (`PTHREAD_PRIO_NONE`), with `lock_api` guards.
///
/// ```
/// use posixrt::sync::NormalMutex;
///
/// let m = NormalMutex::new(vec![1]);
/// m.lock().push(2);
/// assert_eq!(m.lock().len(), 2);
/// ```
#[doc(alias = "PTHREAD_MUTEX_NORMAL")]
pub type NormalMutex<T> = lock_api::Mutex<RawNormalMutex, T>;

/// The guard of a [`NormalMutex`].
pub type NormalMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawNormalMutex, T>;

/// The raw normal lock (see the [module docs](self)); its `lock_api` methods panic on
/// a relock by the owner, [`RawMutexChecked`] reports it.
pub struct RawNormalMutex {
    word: TidWord,
    track: Track,
}

impl RawNormalMutex {
    /// A free lock.
    pub const fn new() -> RawNormalMutex {
        RawNormalMutex {
            word: TidWord::new(),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    #[inline(always)]
    fn t(&self) -> (&Track, Kind, usize) {
        (&self.track, Kind::NormalMutex, self.addr())
    }

    /// Info, statistics and waiters, if known to tracking (see
    /// [`set_tracking`](super::set_tracking)); lock state read live from the word.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        s.info.set_live_owner(self.owner());
        Some(s)
    }

    /// Gives the mutex a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::NormalMutex, self.addr(), name);
        self.track.note_held(&|| self.owner().unwrap_or(0));
    }

    /// Forces the mutex to unlocked and wakes one waiter (Solaris `td_sync_setstate`).
    ///
    /// # Safety
    /// This breaks mutual exclusion: the owner's guard still exists and its unlock
    /// will release the lock from whoever holds it next; the data may be mid-update.
    pub unsafe fn force_unlock(&self) {
        if let Some(r) = self.track.get() {
            r.set(track::W_OWNER, 0);
        }
        self.word.force_unlock();
    }

    /// The owner's thread id, if held (a snapshot).
    #[inline]
    pub fn owner(&self) -> Option<u32> {
        self.word.owner()
    }

    /// Whether a thread has announced it sleeps on the lock.
    #[inline]
    pub fn has_waiters(&self) -> bool {
        self.word.load() & WAITERS != 0
    }

    /// The checked lock, untimed or until `deadline`: the CAS fast path, else the
    /// tracked futex wait (errors named after `call`).
    #[inline]
    fn lock_by(&self, deadline: Option<Instant>, call: &'static str) -> Result<()> {
        let tid = current_tid();
        if self.word.try_fast(tid) {
            self.track
                .on_fast_acquired(Kind::NormalMutex, self.addr(), tid);
            return Ok(());
        }
        self.word.lock_slow(tid, deadline, call, self.t())
    }

    /// The contended `lock()`, out of line: keeps the inlined fast path as small as
    /// the PI mutex's (with the four-argument slow call inline, the compiler stopped
    /// inlining `lock()` into callers, which cost a call per lock).
    #[cold]
    #[inline(never)]
    fn lock_contended(&self, tid: u32) {
        if let Err(e) = self
            .word
            .lock_slow(tid, None, "normal_mutex_lock", self.t())
        {
            lock_failed(e)
        }
    }
}

impl Default for RawNormalMutex {
    fn default() -> Self {
        RawNormalMutex::new()
    }
}

impl std::fmt::Debug for RawNormalMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawNormalMutex")
            .field("owner", &self.owner())
            .finish()
    }
}

// SAFETY: exclusive by the CAS 0→tid (Acquire) / release by CAS or swap (Release);
// guards are !Send, so the owner thread releases.
unsafe impl RawMutex for RawNormalMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawNormalMutex = RawNormalMutex::new();
    type GuardMarker = GuardNoSend;

    #[inline]
    fn lock(&self) {
        let tid = current_tid();
        if self.word.try_fast(tid) {
            self.track
                .on_fast_acquired(Kind::NormalMutex, self.addr(), tid);
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
        let tracked = self.track.on_unlock(self.addr());
        let tid = current_tid();
        if !self.word.unlock_fast(tid) {
            self.word.unlock_slow();
        }
        self.track.on_released(tracked, tid);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.load() & TID_MASK != 0
    }
}

// SAFETY: same exclusivity as `lock`.
unsafe impl RawMutexTimed for RawNormalMutex {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_until(&self, deadline: Instant) -> bool {
        timed_outcome(self.lock_until_checked(deadline))
    }

    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.try_lock_until(deadline_after(timeout))
    }
}

impl RawMutexChecked for RawNormalMutex {
    fn lock_checked(&self) -> Result<()> {
        self.lock_by(None, "normal_mutex_lock")
    }

    #[inline]
    fn try_lock_checked(&self) -> Result<bool> {
        let tid = current_tid();
        let ok = self.word.try_fast(tid);
        super::hook::trylock(
            self.addr(),
            || self.word.load() & TID_MASK,
            super::hook::LockResult::of_try(ok),
        );
        if track::level() != 0 {
            if ok {
                self.track.try_acquired(Kind::NormalMutex, self.addr(), tid);
            } else {
                self.track.try_failed(Kind::NormalMutex, self.addr(), &|| {
                    self.word.load() & TID_MASK
                });
            }
        }
        Ok(ok)
    }

    fn lock_until_checked(&self, deadline: Instant) -> Result<()> {
        self.lock_by(Some(deadline), "normal_mutex_timedlock")
    }
}
