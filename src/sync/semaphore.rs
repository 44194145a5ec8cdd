//! The counting semaphore ([`Semaphore`]): `sem_wait` / `sem_trywait` /
//! `sem_timedwait` / `sem_post` on a futex.
//!
//! The count is the futex word. `wait` decrements it with a CAS when it is positive,
//! otherwise sleeps in `FUTEX_WAIT_BITSET` while it is 0; `post` increments it and
//! wakes one sleeper only if there is one. Semaphores have no owner, so no priority
//! protocol applies (the seed's point about listing 6.7).
//!
//! # References
//! - [sem_wait(3p)](https://man7.org/linux/man-pages/man3/sem_wait.3p.html)
//! - [sem_post(3p)](https://man7.org/linux/man-pages/man3/sem_post.3p.html)
//! - [sem_overview(7)](https://man7.org/linux/man-pages/man7/sem_overview.7.html)

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::checked::deadline_after;
use super::track::{self, Kind, Snapshot, StateWrite, Track};
use super::waiting::WaitingCount;
use crate::sys::futex;
use crate::sys::tid::current as current_tid;
use crate::{Error, Result};

/// `SEM_VALUE_MAX` on Linux.
pub const SEM_VALUE_MAX: u32 = i32::MAX as u32;

/// A counting semaphore (see the [module docs](self)).
///
/// ```
/// use posixrt::sync::Semaphore;
///
/// let s = Semaphore::new(1)?;
/// s.wait();
/// assert!(!s.try_wait());
/// s.post()?;
/// assert_eq!(s.value(), 1);
/// # Ok::<(), posixrt::Error>(())
/// ```
#[doc(alias = "sem_t")]
pub struct Semaphore {
    value: AtomicU32,
    /// Threads of this process asleep in `wait` (a forked child does not
    /// count its parent's, which do not exist there).
    sleepers: WaitingCount,
    track: Track,
}

impl Semaphore {
    /// A semaphore with the count `value` (`sem_init`).
    ///
    /// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) above [`SEM_VALUE_MAX`].
    #[doc(alias = "sem_init")]
    pub fn new(value: u32) -> Result<Semaphore> {
        if value > SEM_VALUE_MAX {
            return Err(Error::invalid(
                "sem_init",
                format!("initial value {value} exceeds SEM_VALUE_MAX ({SEM_VALUE_MAX})"),
            ));
        }
        Ok(Semaphore {
            value: AtomicU32::new(value),
            sleepers: WaitingCount::new(),
            track: Track::new(),
        })
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    #[inline]
    fn try_take(&self) -> Option<u32> {
        let mut v = self.value.load(Ordering::Relaxed);
        while v > 0 {
            match self
                .value
                .compare_exchange_weak(v, v - 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return Some(v - 1),
                Err(now) => v = now,
            }
        }
        None
    }

    /// A wait that took the count, `after` it; `timed`: a timed one that
    /// found the count 0 (`contended`).
    fn taken(&self, after: u32, contended: bool, t0: u64, timed: bool) {
        let r = self.track.record(Kind::Semaphore, self.addr());
        if contended || t0 != 0 || timed {
            // One group against `reset_stats` (no contention or wait time
            // kept without its wait); a wait begun before a reset adds no time.
            r.group(None, || {
                r.add(track::W_LOCKS, 1);
                if contended {
                    r.add(track::W_CONTENDED, 1);
                }
                if timed {
                    r.add(track::W_D, 1);
                }
                add_wait_time(r, t0);
            });
        } else {
            r.add(track::W_LOCKS, 1);
        }
        self.taken_counts(r, after);
    }

    /// A timed wait begun at tick `t0` (tracking on) that timed out: a timed
    /// wait, a timeout and its wait time, in one group against `reset_stats`.
    fn timed_out(&self, t0: u64) {
        let r = self.track.record(Kind::Semaphore, self.addr());
        r.group(None, || {
            r.add(track::W_D, 1);
            r.add(track::W_SEM_TIMEOUTS, 1);
            add_wait_time(r, t0);
        });
    }

    /// The counts a successful wait saw, and the count now, into record `r`.
    fn taken_counts(&self, r: &track::Record, after: u32) {
        // This wait saw the count one above `after`.
        note_counts(r, after, after + 1);
        self.record_count(r);
    }

    /// Mirrors the count into the record (see `Record::mirror`).
    fn record_count(&self, r: &track::Record) {
        r.mirror(track::W_STATE, || {
            u64::from(self.value.load(Ordering::Relaxed))
        });
    }

    /// After a change of the count that tracking does not count (it is off, or
    /// was when the wait began): a known semaphore's record still gets the
    /// count, so inspection shows it right once tracking is back on.
    #[cold]
    fn count_changed_untracked(&self) {
        if let Some(r) = self.track.get() {
            self.record_count(r);
        }
    }

    fn wait_impl(&self, deadline: Option<Instant>) -> Result<()> {
        if let Some(after) = self.try_take() {
            match track::state_write() {
                StateWrite::Skip => {}
                StateWrite::Track => self.taken(after, false, 0, false),
                StateWrite::Mirror => self.count_changed_untracked(),
            }
            super::hook::sem_wait(self.addr(), after, super::hook::LockResult::Acquired);
            return Ok(());
        }
        let tid = current_tid();
        let wait = self.track.wait_start(Kind::Semaphore, self.addr(), tid);
        let r = loop {
            if let Some(after) = self.try_take() {
                break Ok(after);
            }
            self.sleepers.add();
            let w = futex::wait(&self.value, 0, deadline);
            self.sleepers.sub();
            if let Err(libc::ETIMEDOUT) = w {
                // A post may have raced with the timeout: take it if it is there.
                break self
                    .try_take()
                    .ok_or_else(|| Error::from_errno("sem_timedwait", libc::ETIMEDOUT));
            }
        };
        if let Some(t0) = wait {
            self.track.wait_end(tid);
            match r {
                Ok(after) => self.taken(after, true, t0, deadline.is_some()),
                Err(_) => self.timed_out(t0),
            }
        } else if r.is_ok() {
            self.count_changed_untracked();
        }
        super::hook::sem_wait(
            self.addr(),
            self.value(),
            if r.is_ok() {
                super::hook::LockResult::Acquired
            } else {
                super::hook::LockResult::TimedOut
            },
        );
        r.map(drop)
    }

    /// Decrements the count, sleeping while it is 0 (`sem_wait`).
    ///
    /// # References
    /// - [sem_wait(3p)](https://man7.org/linux/man-pages/man3/sem_wait.3p.html)
    #[doc(alias = "sem_wait")]
    pub fn wait(&self) {
        let _ = self.wait_impl(None);
    }

    /// Decrements the count if it is positive (`sem_trywait`); `false` if it was 0.
    ///
    /// # References
    /// - [sem_trywait(3p)](https://man7.org/linux/man-pages/man3/sem_trywait.3p.html)
    #[doc(alias = "sem_trywait")]
    pub fn try_wait(&self) -> bool {
        let r = self.try_take();
        super::hook::sem_wait(
            self.addr(),
            r.unwrap_or(0),
            r.map_or(super::hook::LockResult::Error(libc::EAGAIN), |_| {
                super::hook::LockResult::Acquired
            }),
        );
        match track::state_write() {
            StateWrite::Skip => {}
            StateWrite::Track => {
                let rec = self.track.record(Kind::Semaphore, self.addr());
                match r {
                    Some(after) => {
                        // One group against `reset_stats`: no successful
                        // trywait kept without its wait.
                        rec.group(None, || {
                            rec.add(track::W_LOCKS, 1);
                            rec.add(track::W_TRY, 1);
                        });
                        self.taken_counts(rec, after)
                    }
                    None => rec.add(track::W_TRY_FAIL, 1),
                }
            }
            StateWrite::Mirror => {
                if r.is_some() {
                    self.count_changed_untracked();
                }
            }
        }
        r.is_some()
    }

    /// [`wait`](Self::wait) until the absolute `deadline` at most (`sem_timedwait`,
    /// on CLOCK_MONOTONIC like `sem_clockwait`): [`TimedOut`](crate::ErrorKind::TimedOut).
    ///
    /// # References
    /// - [sem_timedwait(3p)](https://man7.org/linux/man-pages/man3/sem_timedwait.3p.html)
    /// - [sem_clockwait(3)](https://man7.org/linux/man-pages/man3/sem_clockwait.3.html)
    #[doc(alias = "sem_clockwait")]
    #[doc(alias = "sem_timedwait")]
    pub fn wait_until(&self, deadline: Instant) -> Result<()> {
        self.wait_impl(Some(deadline))
    }

    /// [`wait`](Self::wait) for `timeout` at most.
    pub fn wait_for(&self, timeout: Duration) -> Result<()> {
        self.wait_until(deadline_after(timeout))
    }

    /// Increments the count and wakes one waiter if any (`sem_post`).
    ///
    /// Errors: `EOVERFLOW` ([`InvalidInput`](crate::ErrorKind::InvalidInput)) at
    /// [`SEM_VALUE_MAX`].
    ///
    /// Like `sem_post`, it may be called from a signal handler (a CAS, a load and
    /// at most one `FUTEX_WAKE`), with one exception: while tracking is on, the
    /// first use of a semaphore registers it (a lock and an allocation), so name it
    /// ([`set_name`](Self::set_name)) or use it once outside the handler first. The
    /// error path allocates: ignore the result in a handler only if the count cannot
    /// reach [`SEM_VALUE_MAX`].
    ///
    /// # References
    /// - [sem_post(3p)](https://man7.org/linux/man-pages/man3/sem_post.3p.html)
    #[doc(alias = "sem_post")]
    pub fn post(&self) -> Result<()> {
        let mut v = self.value.load(Ordering::Relaxed);
        loop {
            if v >= SEM_VALUE_MAX {
                return Err(Error::from_errno("sem_post", libc::EOVERFLOW));
            }
            match self
                .value
                .compare_exchange_weak(v, v + 1, Ordering::SeqCst, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        match track::state_write() {
            StateWrite::Skip => {}
            StateWrite::Track => {
                let r = self.track.record(Kind::Semaphore, self.addr());
                r.add(track::W_A, 1);
                note_counts(r, v, v + 1);
                self.record_count(r);
            }
            StateWrite::Mirror => self.count_changed_untracked(),
        }
        super::hook::sem_post(self.addr(), v + 1);
        if self.sleepers.get() > 0 {
            futex::wake(&self.value, 1);
        }
        Ok(())
    }

    /// The current count (`sem_getvalue`).
    ///
    /// # References
    /// - [sem_getvalue(3p)](https://man7.org/linux/man-pages/man3/sem_getvalue.3p.html)
    #[doc(alias = "sem_getvalue")]
    pub fn value(&self) -> u32 {
        self.value.load(Ordering::Relaxed)
    }

    /// How many threads sleep in `wait` (a snapshot). In a forked child, the
    /// parent's sleepers are not counted: they do not exist there.
    pub fn waiters(&self) -> u32 {
        self.sleepers.get()
    }

    /// Info (with the count), statistics and waiters, if known to tracking.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        s.info.sem_count = Some(self.value());
        Some(s)
    }

    /// Gives the semaphore a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::Semaphore, self.addr(), name);
        let v = self.value();
        self.track
            .set_state(Kind::Semaphore, self.addr(), u64::from(v));
        if let Some(r) = self.track.get() {
            note_counts(r, v, v);
        }
    }

    /// Forces the count to `value` and wakes every waiter (Solaris `td_sync_setstate`).
    ///
    /// # Safety
    /// This breaks the semaphore's accounting: resources it counts may be handed out
    /// twice or never. Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) above
    /// [`SEM_VALUE_MAX`].
    pub unsafe fn force_count(&self, value: u32) -> Result<()> {
        if value > SEM_VALUE_MAX {
            return Err(Error::invalid("force_count", "above SEM_VALUE_MAX"));
        }
        self.value.store(value, Ordering::SeqCst);
        if let Some(r) = self.track.get() {
            r.set(track::W_STATE, u64::from(value));
        }
        futex::wake(&self.value, i32::MAX as u32);
        Ok(())
    }
}

/// Adds the time of a wait begun at tick `t0` (0: not timed) to record `r`,
/// unless it began before the last `reset_stats`.
fn add_wait_time(r: &track::Record, t0: u64) {
    if t0 != 0 && track::reset::began_since_reset(t0) {
        let w = track::ticks().saturating_sub(t0);
        r.add(track::W_WAIT_TOTAL, w);
        r.max(track::W_WAIT_MAX, w);
    }
}

/// Folds the counts an operation saw (`low` ≤ `high`) into the lowest and highest
/// counts of the record (atomics only: `post` may run in a signal handler).
fn note_counts(r: &track::Record, low: u32, high: u32) {
    r.w[track::W_C].fetch_min(u64::from(low), Ordering::Relaxed);
    r.max(track::W_B, u64::from(high));
}

impl std::fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semaphore")
            .field("value", &self.value())
            .field("waiters", &self.waiters())
            .finish()
    }
}
