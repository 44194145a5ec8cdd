//! The priority-ceiling mutex ([`CeilingMutex`], [`RawCeilingMutex`]):
//! `PTHREAD_PRIO_PROTECT`, the immediate priority ceiling protocol.
//!
//! While a thread holds a ceiling mutex it runs at least at the mutex's **ceiling**
//! priority, so no thread that also locks the mutex (all of them have priorities at
//! or below the ceiling) can preempt it inside the critical section, and a
//! medium-priority thread cannot either if its priority is below the ceiling.
//!
//! # Design
//!
//! posixrt implements the protocol itself, on its own futex word (owner tid |
//! waiters bit, the word of [`NormalMutex`](super::NormalMutex)) and a per-thread
//! record of the ceilings it holds, instead of wrapping glibc's `PTHREAD_PRIO_PROTECT`
//! pthread mutex:
//!
//! - **lock**: if the thread holds no ceiling mutex yet, one `sched_getattr(0)` reads
//!   its *base* policy and priority (never a cache that could be stale: glibc caches
//!   the priority it read once and misses later `sched_setscheduler` calls). A caller
//!   whose base SCHED_FIFO/SCHED_RR priority is **above** the ceiling gets EINVAL
//!   ([`InvalidInput`](crate::ErrorKind::InvalidInput)), as POSIX requires. If the
//!   ceiling is above the thread's current priority, one `sched_setattr` raises it to
//!   the ceiling *before* the lock is taken (SCHED_RR stays RR; SCHED_OTHER, BATCH and
//!   IDLE threads become SCHED_FIFO at the ceiling, where glibc fails with EINVAL).
//! - **trylock**: the same EINVAL for a caller above the ceiling, also when another
//!   thread holds the mutex (as glibc, which checks the ceiling before the lock
//!   word): the refusal does not depend on who holds the mutex at that moment.
//! - **unlock**: the word is released first, then the priority drops to the highest
//!   ceiling still held, or back to the saved base attributes (policy, priority,
//!   nice, reset-on-fork) when none is left. Ceilings are counted per priority, so
//!   nested locks restore correctly even when unlocked out of order.
//! - **Cost**: a thread already at or above the ceiling pays one syscall per outermost
//!   lock (the `sched_getattr`); a thread below it pays three (read, raise, restore).
//!   Nested locks that need no raise pay none. The CAS fast path is the normal mutex's.
//!   A trylock that finds the mutex held by another thread pays the `sched_getattr`
//!   too (the ceiling check), unless the thread holds a ceiling mutex already or
//!   trusts its cached base ([`cache_ceiling_base`]).
//!   A thread that does not change its own scheduling behind the mutex's back can
//!   opt in to glibc's behaviour with [`cache_ceiling_base`]: the base is read once
//!   and an at-ceiling lock+unlock makes no syscall.
//! - The class the crate gives the thread's AIO requests (io_uring `ioprio`) and
//!   trace events follows each raise and restore: requests submitted under the
//!   lock carry the ceiling. As the raw `sched_setattr` is hidden from glibc's copy
//!   of the class, a thread that was raised once reads its class from the kernel
//!   from then on (one `sched_getattr` per 64 requests, and one after each raise
//!   and restore). So does the way the thread waits for the AIO engine's core
//!   lock: as a real-time waiter (which boosts the holder) while raised.
//! - SCHED_DEADLINE threads already outrank every SCHED_FIFO priority: their
//!   attributes are left alone.
//! - A change of the holder's priority through [`sched`](crate::sched) while it
//!   holds a ceiling mutex (its own, or by tid from another thread) becomes its
//!   base: the next ceiling lock or unlock sees it (one `sched_getattr`), checks
//!   nested locks against it, lifts the thread back to the highest ceiling it
//!   still holds if that is above, and the last unlock leaves the new priority
//!   (POSIX: the holder runs at the higher of its priority and its ceilings).
//!   Until that next lock or unlock the thread runs at the priority it was
//!   given. A raw `sched_setscheduler`/`pthread_setschedparam` outside the crate
//!   is not seen: the last unlock puts the saved base back.
//!
//! Raising to SCHED_FIFO needs CAP_SYS_NICE or RLIMIT_RTPRIO ≥ the ceiling; without
//! it the lock fails with EPERM and a hint ([`MutexExt::lock_checked`](super::MutexExt)),
//! and `lock()` panics (see [`RawMutexChecked`]).
//!
//! # References
//! - [pthread_mutexattr_setprotocol(3p)](https://man7.org/linux/man-pages/man3/pthread_mutexattr_setprotocol.3p.html) (PTHREAD_PRIO_PROTECT)
//! - [pthread_mutex_setprioceiling(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_setprioceiling.3p.html)
//! - [sched_setattr(2)](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lock_api::{GuardNoSend, RawMutex, RawMutexTimed};

use super::checked::{deadline_after, lock_failed, timed_outcome, RawMutexChecked};
use super::normal::TidWord;
use super::pi::relock_error;
use super::track::{self, Kind, Snapshot, Track};
use crate::sys::futex::{TID_MASK, WAITERS};
use crate::sys::sched::{self as sys_sched, SchedAttr};
use crate::sys::tid::current as current_tid;
use crate::{Error, Result};

/// The highest SCHED_FIFO priority on Linux (`sched_get_priority_max(SCHED_FIFO)`).
const FIFO_MAX: u32 = 99;
const SCHED_FLAG_RESET_ON_FORK: u64 = 1;

/// A mutex with the priority-ceiling protocol (`PTHREAD_PRIO_PROTECT`), with
/// `lock_api` guards. `CeilingMutex::new(v)` has the ceiling 99 (the highest); build
/// one with another ceiling with [`ceiling_mutex`].
///
/// ```no_run
/// use posixrt::sync::{ceiling_mutex, MutexExt};
///
/// let m = ceiling_mutex(50, 0u64)?;
/// *m.lock_checked()? += 1; // runs at SCHED_FIFO 50 inside (needs CAP_SYS_NICE)
/// # Ok::<(), posixrt::Error>(())
/// ```
#[doc(alias = "PTHREAD_PRIO_PROTECT")]
#[doc(alias = "pthread_mutexattr_setprotocol")]
#[doc(alias = "pthread_mutexattr_setprioceiling")]
pub type CeilingMutex<T> = lock_api::Mutex<RawCeilingMutex, T>;

/// The guard of a [`CeilingMutex`].
pub type CeilingMutexGuard<'a, T> = lock_api::MutexGuard<'a, RawCeilingMutex, T>;

/// A [`CeilingMutex`] with the given ceiling (a SCHED_FIFO priority, 1..=99).
///
/// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) for a ceiling outside the
/// SCHED_FIFO range.
pub fn ceiling_mutex<T>(ceiling: u32, value: T) -> Result<CeilingMutex<T>> {
    Ok(lock_api::Mutex::from_raw(
        RawCeilingMutex::with_ceiling(ceiling)?,
        value,
    ))
}

/// The raw priority-ceiling lock (see the [module docs](self)).
pub struct RawCeilingMutex {
    word: TidWord,
    ceiling: AtomicU32,
    /// The ceiling the current owner raised itself to (written by the owner only).
    held_ceiling: AtomicU32,
    track: Track,
}

fn check_ceiling(ceiling: u32) -> Result<()> {
    if (1..=FIFO_MAX).contains(&ceiling) {
        Ok(())
    } else {
        Err(Error::invalid(
            "pthread_mutexattr_setprioceiling",
            format!("ceiling {ceiling} is outside the SCHED_FIFO range 1..=99"),
        )
        .with_hint("use the highest SCHED_FIFO priority of any thread that locks the mutex"))
    }
}

impl RawCeilingMutex {
    /// A free lock with the ceiling 99.
    pub const fn new() -> RawCeilingMutex {
        RawCeilingMutex {
            word: TidWord::new(),
            ceiling: AtomicU32::new(FIFO_MAX),
            held_ceiling: AtomicU32::new(0),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Info (with the ceiling), statistics and waiters, if known to tracking; lock
    /// state read live from the word.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        s.info.set_live_owner(self.owner());
        s.info.ceiling = Some(self.ceiling());
        Some(s)
    }

    /// Gives the mutex a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::CeilingMutex, self.addr(), name);
        self.track.set_ceiling(self.ceiling());
        self.track.note_held(&|| self.owner().unwrap_or(0));
    }

    /// Forces the mutex to unlocked and wakes one waiter (Solaris `td_sync_setstate`).
    /// The owner keeps its raised priority until its guard unlocks; that unlock then
    /// releases nothing (not the lock of a later owner).
    ///
    /// # Safety
    /// This breaks mutual exclusion: the owner may still be inside its critical section
    /// when the next thread takes the lock, and the data may be mid-update.
    pub unsafe fn force_unlock(&self) {
        if let Some(r) = self.track.get() {
            r.set(track::W_OWNER, 0);
        }
        self.word.force_unlock();
    }

    /// A free lock with `ceiling` (1..=99), the analogue of
    /// `pthread_mutexattr_setprioceiling`.
    #[doc(alias = "pthread_mutexattr_setprioceiling")]
    pub fn with_ceiling(ceiling: u32) -> Result<RawCeilingMutex> {
        check_ceiling(ceiling)?;
        let m = RawCeilingMutex::new();
        m.ceiling.store(ceiling, Ordering::Relaxed);
        Ok(m)
    }

    /// The priority ceiling (`pthread_mutex_getprioceiling`).
    ///
    /// # References
    /// - [pthread_mutex_getprioceiling(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_getprioceiling.3p.html)
    #[doc(alias = "pthread_mutex_getprioceiling")]
    pub fn ceiling(&self) -> u32 {
        self.ceiling.load(Ordering::Relaxed)
    }

    /// Changes the ceiling and returns the old one (`pthread_mutex_setprioceiling`):
    /// like POSIX, it locks the mutex to do so (waiting while another thread
    /// holds it), but, as POSIX allows and glibc does, without the protocol:
    /// the caller is neither checked against the old ceiling nor raised, so a
    /// thread above the old ceiling (refused by `lock` with EINVAL), or one
    /// without the privilege to raise itself, can change it.
    ///
    /// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) for a ceiling
    /// outside 1..=99; [`Deadlock`](crate::ErrorKind::Deadlock) if the caller
    /// holds the mutex (as glibc's error-checking kind).
    ///
    /// # References
    /// - [pthread_mutex_setprioceiling(3p)](https://man7.org/linux/man-pages/man3/pthread_mutex_setprioceiling.3p.html)
    #[doc(alias = "pthread_mutex_setprioceiling")]
    pub fn set_ceiling(&self, ceiling: u32) -> Result<u32> {
        const CALL: &str = "pthread_mutex_setprioceiling";
        check_ceiling(ceiling)?;
        let tid = current_tid();
        if self.word.load() & TID_MASK == tid {
            return Err(self.refused(relock_error(CALL)));
        }
        if self.word.try_fast(tid) {
            self.track
                .on_fast_acquired(Kind::CeilingMutex, self.addr(), tid);
        } else {
            let t = (&self.track, Kind::CeilingMutex, self.addr());
            self.word.lock_slow(tid, None, CALL, t)?;
        }
        let old = self.ceiling.swap(ceiling, Ordering::Relaxed);
        // The record (objects(), rtstat) shows the new ceiling at once, not at the
        // next lock.
        self.track.set_ceiling(ceiling);
        // Released as `unlock` does, but with no priority to lower: none was
        // raised.
        let tracked = self.track.on_unlock(self.addr());
        if !self.word.unlock_fast(tid) {
            self.word.unlock_slow();
        }
        self.track.on_released(tracked, tid);
        Ok(old)
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

    fn lock_impl(&self, deadline: Option<Instant>) -> Result<()> {
        let tid = current_tid();
        if self.word.load() & TID_MASK == tid {
            return Err(self.refused(relock_error("pthread_mutex_lock(PRIO_PROTECT)")));
        }
        let ceiling = self.ceiling.load(Ordering::Relaxed);
        raise(ceiling).map_err(|e| self.refused(e))?;
        let r = if self.word.try_fast(tid) {
            super::hook::lock(self.addr(), tid, super::hook::LockResult::Acquired);
            if track::level() != 0 {
                self.track.acquired(Kind::CeilingMutex, self.addr(), tid);
                self.track.set_ceiling(ceiling);
            }
            Ok(())
        } else {
            if track::level() != 0 {
                // The wait may be what makes the mutex known: its record shows the
                // ceiling from the start, as after a fast lock.
                self.track.record(Kind::CeilingMutex, self.addr());
                self.track.set_ceiling(ceiling);
            }
            self.word.lock_slow(
                tid,
                deadline,
                "pthread_mutex_lock(PRIO_PROTECT)",
                (&self.track, Kind::CeilingMutex, self.addr()),
            )
        };
        match r {
            Ok(()) => {
                self.held_ceiling.store(ceiling, Ordering::Relaxed);
                held_again(self.addr());
                Ok(())
            }
            Err(e) => {
                lower(ceiling);
                Err(e)
            }
        }
    }

    /// A lock the protocol refused before trying the word (relock, caller above the
    /// ceiling, no privilege to raise): traced as the other kinds trace a refusal.
    #[cold]
    #[inline(never)]
    fn refused(&self, e: Error) -> Error {
        let code = e.errno().unwrap_or(libc::EINVAL);
        super::hook::lock(
            self.addr(),
            self.word.load() & TID_MASK,
            super::hook::LockResult::Error(code),
        );
        e
    }

    /// A trylock that found the mutex held: report it to the trace hook and to
    /// tracking; returns `false`.
    fn try_busy(&self) -> bool {
        super::hook::trylock(
            self.addr(),
            || self.word.load() & TID_MASK,
            super::hook::LockResult::Busy,
        );
        if track::level() != 0 {
            self.track.try_failed(Kind::CeilingMutex, self.addr(), &|| {
                self.word.load() & TID_MASK
            });
            // The failure may be what made the mutex known: its record shows the
            // ceiling, as after a lock.
            self.track.note_ceiling(self.ceiling());
        }
        false
    }

    fn try_lock_impl(&self) -> Result<bool> {
        let tid = current_tid();
        let ceiling = self.ceiling.load(Ordering::Relaxed);
        let holder = self.word.load() & TID_MASK;
        // Held by another thread: busy, but a caller above the ceiling is
        // refused first, as when the mutex is free (glibc checks the ceiling
        // before the word).
        let checked = if holder != 0 && holder != tid {
            check_not_above(ceiling)
        } else {
            Ok(())
        };
        if holder != 0 && checked.is_ok() {
            return Ok(self.try_busy());
        }
        if let Err(e) = checked.and_then(|()| raise(ceiling)) {
            let code = e.errno().unwrap_or(libc::EINVAL);
            let owner = || self.word.load() & TID_MASK;
            super::hook::trylock(self.addr(), owner, super::hook::LockResult::Error(code));
            return Err(e);
        }
        if self.word.try_fast(tid) {
            super::hook::trylock(self.addr(), || tid, super::hook::LockResult::Acquired);
            self.held_ceiling.store(ceiling, Ordering::Relaxed);
            held_again(self.addr());
            if track::level() != 0 {
                self.track
                    .try_acquired(Kind::CeilingMutex, self.addr(), tid);
                self.track.set_ceiling(ceiling);
            }
            Ok(true)
        } else {
            lower(ceiling);
            Ok(self.try_busy())
        }
    }
}

impl Default for RawCeilingMutex {
    fn default() -> Self {
        RawCeilingMutex::new()
    }
}

impl std::fmt::Debug for RawCeilingMutex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawCeilingMutex")
            .field("owner", &self.owner())
            .field("ceiling", &self.ceiling())
            .finish()
    }
}

// SAFETY: exclusive by the tid word (CAS 0→tid Acquire, release Release); guards are
// !Send, so the owner thread releases and restores its own priority.
unsafe impl RawMutex for RawCeilingMutex {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawCeilingMutex = RawCeilingMutex::new();
    type GuardMarker = GuardNoSend;

    /// Panics when the protocol refuses (caller above the ceiling, no privilege to
    /// raise, relock); use [`MutexExt::lock_checked`](super::MutexExt) to get the error.
    fn lock(&self) {
        match self.lock_impl(None) {
            Ok(()) => {}
            Err(e) => {
                // Its bookkeeping is undone already: the guard that unwinding may
                // drop next (a relock in `unlocked` or a condvar wait) must not
                // undo it again. (Not for a relock of a mutex this thread holds:
                // its guard is a real one.)
                if self.word.load() & TID_MASK != current_tid() {
                    let _ = REFUSED.try_with(|r| r.set(self.addr()));
                }
                lock_failed(e)
            }
        }
    }

    /// `false` when held or when the protocol refuses.
    fn try_lock(&self) -> bool {
        self.try_lock_impl().unwrap_or(false)
    }

    unsafe fn unlock(&self) {
        let tid = current_tid();
        let ceiling = self.held_ceiling.load(Ordering::Relaxed);
        // A guard can be dropped without holding the lock: its relock panicked (the
        // protocol refused it inside `MutexGuard::unlocked` or a condvar wait, e.g. the
        // thread's priority went above the ceiling meanwhile) and unwinding drops it,
        // or the lock was forced free. Then the word is free or names another owner,
        // whose lock must stay held; only the priority bookkeeping is undone.
        if self.word.load() & TID_MASK == tid {
            let tracked = self.track.on_unlock(self.addr());
            if !self.word.unlock_fast(tid) {
                self.word.unlock_slow();
            }
            self.track.on_released(tracked, tid);
        } else if REFUSED.try_with(|r| r.replace(0)) == Ok(self.addr()) {
            // A refused relock: `lock_impl` undid (or never made) the raise, and
            // `held_ceiling` is another owner's. Lowering here would drop a
            // ceiling this thread still holds through another mutex.
            return;
        }
        lower(ceiling);
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.word.load() & TID_MASK != 0
    }
}

// SAFETY: same exclusivity as `lock`.
unsafe impl RawMutexTimed for RawCeilingMutex {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_until(&self, deadline: Instant) -> bool {
        timed_outcome(self.lock_impl(Some(deadline)))
    }

    fn try_lock_for(&self, timeout: Duration) -> bool {
        self.try_lock_until(deadline_after(timeout))
    }
}

impl RawMutexChecked for RawCeilingMutex {
    fn lock_checked(&self) -> Result<()> {
        self.lock_impl(None)
    }

    fn try_lock_checked(&self) -> Result<bool> {
        self.try_lock_impl()
    }

    fn lock_until_checked(&self, deadline: Instant) -> Result<()> {
        self.lock_impl(Some(deadline))
    }
}

thread_local! {
    /// The mutex whose last `lock` by this thread was refused (0: none): the
    /// guard unwinding drops next names it and holds nothing to lower.
    static REFUSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The mutex at `addr` is held by this thread again (through any lock method): a
/// refusal recorded for it is over, and its guard's unlock must lower again.
#[inline]
fn held_again(addr: usize) {
    let _ = REFUSED.try_with(|r| {
        if r.get() == addr {
            r.set(0);
        }
    });
}

/// The calling thread's ceiling bookkeeping.
struct Tpp {
    /// Ceiling mutexes held (all ceilings).
    held: u32,
    /// How many held mutexes have each ceiling.
    counts: [u32; FIFO_MAX as usize + 1],
    /// Base attributes, read when the first ceiling mutex was locked.
    base_policy: u32,
    base_priority: u32,
    base_nice: i32,
    base_flags: u64,
    /// The priority we raised the thread to (0: not raised).
    boost: u32,
    /// The base fields hold what the kernel last said (set by a read or a restore).
    cached: bool,
    /// The thread promised its base does not change behind our back.
    trust_cache: bool,
    /// [`change_mark`](crate::sys::prio::change_mark) when the base was
    /// read: a change through `sched` since moves it (see [`Tpp::adopt_change`]).
    mark: u64,
}

thread_local! {
    static TPP: RefCell<Tpp> = const {
        RefCell::new(Tpp {
            held: 0,
            counts: [0; FIFO_MAX as usize + 1],
            base_policy: 0,
            base_priority: 0,
            base_nice: 0,
            base_flags: 0,
            boost: 0,
            cached: false,
            trust_cache: false,
            mark: 0,
        })
    };
}

impl Tpp {
    fn base_rt(&self) -> u32 {
        match self.base_policy as i32 {
            libc::SCHED_FIFO | libc::SCHED_RR => self.base_priority,
            _ => 0,
        }
    }

    fn attr(&self, policy: u32, priority: u32, nice: i32) -> SchedAttr {
        SchedAttr {
            size: SchedAttr::SIZE,
            sched_policy: policy,
            sched_priority: priority,
            sched_nice: nice,
            sched_flags: self.base_flags & SCHED_FLAG_RESET_ON_FORK,
            ..SchedAttr::default()
        }
    }

    /// While ceiling mutexes are held: if the thread's class was changed
    /// through `sched` since the base was read (by the thread, or by tid from
    /// another), that change is its new base (POSIX: the holder runs at the
    /// higher of *its* priority and the ceilings it holds), and the thread is
    /// lifted to the highest ceiling it holds if that is above. One
    /// `sched_getattr` then; none otherwise (a raw system call outside the
    /// crate is not seen: the unlock puts the old base back).
    fn adopt_change(&mut self) {
        if self.held == 0 || self.trust_cache {
            return;
        }
        self.reread(false);
    }

    /// [`adopt_change`](Self::adopt_change)'s check, made also with the cache
    /// trusted and without a change through `sched` when `told` (the thread
    /// called [`refresh_ceiling_base`]): the class the kernel reports is the new
    /// base unless it is the one this module set. (A raw change to exactly that
    /// class cannot be told from none.)
    fn reread(&mut self, told: bool) {
        let mark = crate::sys::prio::change_mark();
        if mark == self.mark && !told {
            return;
        }
        let own_moved = mark >> 32 != self.mark >> 32;
        self.mark = mark;
        let Ok(a) = sys_sched::getattr(0) else {
            return;
        };
        let ours = if self.boost != 0 {
            let rt = matches!(a.sched_policy as i32, libc::SCHED_FIFO | libc::SCHED_RR);
            rt && a.sched_priority == self.boost
        } else {
            a.sched_policy == self.base_policy
                && a.sched_priority == self.base_priority
                && a.sched_nice == self.base_nice
        };
        // (A counter moved by a change to a thread whose tid shares it.)
        if ours && !own_moved {
            return;
        }
        self.base_policy = a.sched_policy;
        self.base_priority = a.sched_priority;
        self.base_nice = a.sched_nice;
        self.base_flags = a.sched_flags;
        self.boost = 0;
        if self.base_policy == SCHED_DEADLINE {
            return;
        }
        let top = self.top_held();
        if top > self.base_rt() && self.set_rt(top).is_ok() {
            self.boost = top;
        }
    }

    /// The highest ceiling held (0: none).
    fn top_held(&self) -> u32 {
        (1..=FIFO_MAX as usize)
            .rev()
            .find(|&p| self.counts[p] > 0)
            .unwrap_or(0) as u32
    }

    fn set_rt(&self, priority: u32) -> std::result::Result<(), i32> {
        let policy = if self.base_policy as i32 == libc::SCHED_RR {
            libc::SCHED_RR
        } else {
            libc::SCHED_FIFO
        };
        set_own_attr(&self.attr(policy as u32, priority, 0))
    }
}

/// `sched_setattr(0, attr)`, and, when it changed the class, the news for the
/// thread's class caches: [`current_cached`](crate::sys::prio::current_cached)'s,
/// which gives the class of the thread's io_uring requests and trace events
/// (glibc's copy of the class does not see a raw `sched_setattr`, so the thread
/// reads the kernel's from now on: a system call every 64 cached reads), and the
/// AIO core lock's "real-time waiter?" ([`crate::sys::rtlock::class_changed`]).
fn set_own_attr(attr: &SchedAttr) -> std::result::Result<(), i32> {
    sys_sched::setattr(0, attr)?;
    crate::sys::prio::forget_cached_raw(0);
    crate::sys::rtlock::class_changed();
    Ok(())
}

const SCHED_DEADLINE: u32 = 6;

/// Before locking a mutex with `ceiling`: check the caller against it and raise.
/// Reads the calling thread's base attributes if they are not known (it
/// holds no ceiling mutex, and no cache is trusted: one `sched_getattr`), and
/// refuses a base SCHED_FIFO/SCHED_RR priority above `ceiling` (EINVAL).
fn check_base(t: &mut Tpp, ceiling: u32) -> Result<()> {
    if t.held == 0 && !(t.trust_cache && t.cached) {
        let a = sys_sched::getattr(0).map_err(|e| Error::from_errno("sched_getattr", e))?;
        t.base_policy = a.sched_policy;
        t.base_priority = a.sched_priority;
        t.base_nice = a.sched_nice;
        t.base_flags = a.sched_flags;
        t.boost = 0;
        t.cached = true;
        t.mark = crate::sys::prio::change_mark();
    } else {
        t.adopt_change();
    }
    let base = t.base_rt();
    if t.base_policy != SCHED_DEADLINE && base > ceiling {
        return Err(Error::invalid(
            "pthread_mutex_lock(PRIO_PROTECT)",
            format!("the calling thread's priority {base} is above the mutex's ceiling {ceiling}"),
        )
        .with_hint(
            "set the ceiling (set_ceiling) to at least the highest priority of any thread that locks this mutex",
        ));
    }
    Ok(())
}

/// [`check_base`] alone, for a trylock that finds the mutex held (nothing is
/// raised).
fn check_not_above(ceiling: u32) -> Result<()> {
    TPP.with(|t| check_base(&mut t.borrow_mut(), ceiling))
}

fn raise(ceiling: u32) -> Result<()> {
    TPP.with(|t| {
        let mut t = t.borrow_mut();
        check_base(&mut t, ceiling)?;
        if t.base_policy != SCHED_DEADLINE {
            let base = t.base_rt();
            if ceiling > base.max(t.boost) {
                t.set_rt(ceiling).map_err(|e| raise_error(e, ceiling))?;
                t.boost = ceiling;
            }
        }
        t.counts[ceiling as usize] += 1;
        t.held += 1;
        Ok(())
    })
}

fn raise_error(errno: i32, ceiling: u32) -> Error {
    // The same error and hint as sched's own calls (EPERM: what is missing and the
    // fix, from CAP_SYS_NICE and RLIMIT_RTPRIO as they are now).
    crate::sched::hint::sched_error(
        "sched_setattr",
        errno,
        None,
        Some(crate::sched::Policy::Fifo),
        i32::try_from(ceiling).ok(),
    )
    .with_message(format!("raising the lock holder to the ceiling {ceiling}"))
}

/// Lets the calling thread skip the `sched_getattr` of each outermost ceiling lock:
/// the base policy and priority read once are reused until
/// [`refresh_ceiling_base`] or `cache_ceiling_base(false)`.
///
/// This is what glibc always does (it caches the priority it read once in the thread
/// descriptor). Turn it on only for a thread that does not change its own scheduling
/// while the cache is on, or that calls [`refresh_ceiling_base`] after each change:
/// with a stale base, the ceiling check (EINVAL above the ceiling) and the decision
/// to raise use the old priority, and unlocking restores the old attributes. It cuts
/// the cost of an uncontended lock+unlock by a thread already at or above the ceiling
/// from one syscall to none.
pub fn cache_ceiling_base(enable: bool) {
    TPP.with(|t| {
        let mut t = t.borrow_mut();
        t.trust_cache = enable;
        t.cached = t.held > 0 && t.cached;
    })
}

/// Forgets the calling thread's cached base attributes (see [`cache_ceiling_base`]);
/// the next outermost ceiling lock reads them again.
///
/// While the thread holds ceiling mutexes, the base is read again at once (one
/// `sched_getattr`): a change made since it was read, also a raw
/// `sched_setscheduler` the crate cannot see, becomes the base the last unlock
/// leaves, and the thread is lifted back to the highest ceiling it holds if that
/// is above. (Not refreshed then, the unlock would put the old base back.)
pub fn refresh_ceiling_base() {
    TPP.with(|t| {
        let mut t = t.borrow_mut();
        if t.held == 0 {
            t.cached = false;
        } else {
            t.reread(true);
        }
    })
}

/// After unlocking (or failing to lock) a mutex with `ceiling`: drop to the highest
/// ceiling still held, or restore the base attributes.
fn lower(ceiling: u32) {
    // try_with: during thread exit the TLS may be gone; nothing to restore then.
    let _ = TPP.try_with(|t| {
        let mut t = t.borrow_mut();
        let c = ceiling as usize;
        if t.counts[c] == 0 || t.held == 0 {
            return;
        }
        t.adopt_change();
        t.counts[c] -= 1;
        t.held -= 1;
        if t.boost == 0 {
            return;
        }
        let top = t.top_held();
        if top >= t.boost {
            return;
        }
        // Lowering one's own priority needs no privilege; an error here would leave
        // the thread boosted and cannot be reported through unlock, so it is ignored.
        if top > t.base_rt() {
            let _ = t.set_rt(top);
            t.boost = top;
        } else {
            let base = t.attr(t.base_policy, t.base_priority, t.base_nice);
            let _ = set_own_attr(&base);
            t.boost = 0;
        }
    });
}
