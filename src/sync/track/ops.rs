//! The lock-side helpers the sync objects call on their [`Track`]: fast and slow
//! acquisitions, unlocks, waiters, tries.

use std::sync::atomic::{fence, Ordering};

use super::level::*;
use super::record::*;
use super::reset::began_since_reset;
use super::slab::Track;
use super::snapshot::{snapshot, Snapshot};

impl Track {
    /// [`snapshot`] of this object's record with `info.address` set; `None` when
    /// it has none or the record is not live.
    pub(crate) fn snapshot_at(&self, addr: usize) -> Option<Snapshot> {
        let mut s = snapshot(self.get()?)?;
        s.info.address = addr;
        Some(s)
    }

    /// The fast-path acquisition report every lock kind makes: the trace hook,
    /// then (only when tracking is on) [`acquired`](Self::acquired). Inlined so the
    /// tracking-off fast path stays one level load and branch.
    #[inline(always)]
    pub(crate) fn on_fast_acquired(&self, kind: Kind, addr: usize, tid: u32) {
        crate::sync::hook::lock(addr, tid, crate::sync::hook::LockResult::Acquired);
        if level() != 0 {
            self.acquired(kind, addr, tid);
        }
    }

    /// `Some(start tick)` after recording that `tid` starts waiting for the object,
    /// when tracking is on; `None` (nothing recorded) when it is off.
    #[inline]
    pub(crate) fn wait_start(&self, kind: Kind, addr: usize, tid: u32) -> Option<u64> {
        (level() != 0).then(|| self.wait_begin(kind, addr, tid))
    }

    /// The contended acquisition of an exclusive lock, shared by the mutex kinds:
    /// records the wait around `inner` (tracking on) and the acquisition after it,
    /// or (`timed`: a timed lock) its timeout, then reports the result to the
    /// trace hook with the owner read by `owner` afterwards.
    #[inline]
    pub(crate) fn contended_lock(
        &self,
        kind: Kind,
        addr: usize,
        tid: u32,
        timed: bool,
        inner: impl FnOnce() -> crate::Result<()>,
        owner: impl Fn() -> u32,
    ) -> crate::Result<()> {
        // A relock by the owner, which `inner` refuses at once, is no wait:
        // listed as a waiter of its own lock, the owner would be a cycle of one
        // thread to `find_deadlocks` (and a waiter to `rtstat`).
        let wait = if level() != 0 && owner() == tid {
            None
        } else {
            self.wait_start(kind, addr, tid)
        };
        if wait.is_some() {
            self.note_owner(&owner, tid);
        }
        let r = inner();
        if let Some(t0) = wait {
            self.wait_end(tid);
            match &r {
                Ok(()) => {
                    self.acquired_after_wait(kind, addr, tid, t0);
                    if timed {
                        self.record(kind, addr).add(W_A, 1);
                    }
                }
                Err(e) if timed && e.kind() == crate::ErrorKind::TimedOut => {
                    self.lock_timed_out(kind, addr, t0)
                }
                Err(_) => {}
            }
        }
        crate::sync::hook::lock(
            addr,
            owner(),
            match &r {
                Ok(()) => crate::sync::hook::LockResult::Acquired,
                Err(e) if e.kind() == crate::ErrorKind::TimedOut => {
                    crate::sync::hook::LockResult::TimedOut
                }
                Err(e) => crate::sync::hook::LockResult::Error(e.errno().unwrap_or(0)),
            },
        );
        r
    }

    /// A waiter may be the first to see the lock (tracking switched on while it was
    /// held, so its owner wrote nothing): it records the owner it waits for, if the
    /// record names none, and takes that back if the lock changed hands meanwhile
    /// (if the owner was unlocking, between clearing the record and releasing the
    /// word, the owner takes it back: [`released`](Self::released)). So a cycle of
    /// waits begun while tracking is on is found even over locks taken before.
    #[cold]
    pub(crate) fn note_owner(&self, owner: &impl Fn() -> u32, tid: u32) {
        // (`tid` 0: no thread waits, see `note_held`.)
        let Some(r) = self.get() else { return };
        let o = owner();
        if o == 0 || o == tid {
            return;
        }
        let w = &r.w[W_OWNER];
        if w.compare_exchange(0, u64::from(o), Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
        {
            fence(Ordering::SeqCst);
            if owner() != o {
                let _ = w.compare_exchange(u64::from(o), 0, Ordering::SeqCst, Ordering::Relaxed);
            }
        }
    }

    /// After naming an exclusive lock (which registers it): a lock held now,
    /// whose holder wrote nothing (it was not known then), shows its holder
    /// `owner()` reads (0: none), as when a waiter notes it
    /// ([`note_owner`](Self::note_owner), which the naming thread may do for
    /// itself: it waits for nothing). Only while tracking is on, when the
    /// holder's unlock clears it.
    pub(crate) fn note_held(&self, owner: &impl Fn() -> u32) {
        if level() != 0 {
            self.note_owner(owner, 0);
        }
    }

    /// The start of a condition-variable wait by `tid` (either condvar kind): when
    /// tracking is on, counts the wait (and a timed one in `W_A`) and returns
    /// what [`cond_wait_done`](Self::cond_wait_done) needs.
    pub(crate) fn cond_wait_start(&self, addr: usize, tid: u32, timed: bool) -> Option<CondWait> {
        if level() == 0 {
            return None;
        }
        let r = self.record(Kind::Condvar, addr);
        let counted = r.group(None, || {
            r.add(W_LOCKS, 1);
            r.add(W_CONTENDED, 1);
            if timed {
                r.add(W_A, 1);
            }
        });
        Some(CondWait {
            t0: self.wait_begin(Kind::Condvar, addr, tid),
            counted,
        })
    }

    /// The end of a condvar wait begun by [`cond_wait_start`](Self::cond_wait_start):
    /// counts a timeout in `W_B` and adds the wait time (timing level).
    pub(crate) fn cond_wait_done(&self, tid: u32, wait: Option<CondWait>, timed_out: bool) {
        if wait.is_some() {
            self.wait_end(tid);
        }
        self.cond_wait_counted(wait, timed_out);
    }

    /// [`cond_wait_done`](Self::cond_wait_done) for a waiter no longer listed
    /// as the condvar's (a `PiCondvar` waiter handed over to the mutex):
    /// counts the timeout and the wait time only, if its start was counted
    /// after the last [`reset_stats`](super::reset_stats).
    pub(crate) fn cond_wait_counted(&self, wait: Option<CondWait>, timed_out: bool) {
        let Some(CondWait { t0, counted }) = wait else {
            return;
        };
        let (Some(r), Some(e)) = (self.get(), counted) else {
            return;
        };
        r.group(Some(e), || {
            if timed_out {
                r.add(W_B, 1);
            }
            if t0 != 0 {
                let w = ticks().saturating_sub(t0);
                r.add(W_WAIT_TOTAL, w);
                r.max(W_WAIT_MAX, w);
            }
        });
    }

    /// The unlock report every exclusive lock makes before releasing its word: the
    /// trace hook, then (only when tracking is on) [`releasing`](Self::releasing).
    /// Returns whether tracking is on, for [`on_released`](Self::on_released).
    #[inline(always)]
    pub(crate) fn on_unlock(&self, addr: usize) -> bool {
        self.on_unlock_unless(addr, || false)
    }

    /// [`on_unlock`](Self::on_unlock), whose trace event is left out when
    /// `refused()` says the caller releases nothing (read only while tracing).
    #[inline(always)]
    pub(crate) fn on_unlock_unless(&self, addr: usize, refused: impl FnOnce() -> bool) -> bool {
        crate::sync::hook::unlock_unless(addr, refused);
        let tracked = level() != 0;
        if tracked {
            self.releasing();
        }
        tracked
    }

    /// The report every exclusive lock's owner `tid` makes after releasing its
    /// word, with what [`on_unlock`](Self::on_unlock) returned (one level load per
    /// unlock): [`released`](Self::released) when tracking is on.
    #[inline(always)]
    pub(crate) fn on_released(&self, tracked: bool, tid: u32) {
        if tracked {
            self.released(tid);
        }
    }

    /// After the owner `tid` released the lock word (tracking is on): takes back
    /// the owner a waiter's [`note_owner`](Self::note_owner) wrote into the record
    /// during the unlock. Such a waiter read `tid` from the word before the
    /// release and wrote it after [`releasing`](Self::releasing) cleared the
    /// record; it reads the word again after its write, and this reads the record
    /// after the release, each behind a `SeqCst` fence, so one of the two sees the
    /// other and clears the stale owner. (The unlocking thread cannot have taken
    /// the lock again meanwhile, so the record naming it is always stale here.)
    #[inline]
    pub(crate) fn released(&self, tid: u32) {
        fence(Ordering::SeqCst);
        if let Some(r) = self.get() {
            let w = &r.w[W_OWNER];
            if w.load(Ordering::Relaxed) == u64::from(tid) {
                let _ = w.compare_exchange(u64::from(tid), 0, Ordering::SeqCst, Ordering::Relaxed);
            }
        }
    }

    /// After an uncontended acquisition by `tid` (tracking is on).
    #[inline]
    pub(crate) fn acquired(&self, kind: Kind, addr: usize, tid: u32) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.owner_fresh();
        r.bump(W_LOCKS);
        r.set(W_OWNER, u64::from(tid));
        hold_starts(r);
        r.end(s);
    }

    /// After a trylock by `tid` that acquired the lock.
    #[inline]
    pub(crate) fn try_acquired(&self, kind: Kind, addr: usize, tid: u32) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.owner_fresh();
        r.bump(W_LOCKS);
        r.bump(W_TRY);
        r.set(W_OWNER, u64::from(tid));
        hold_starts(r);
        r.end(s);
    }

    /// After a trylock that found the lock held (not the owner: an atomic add).
    ///
    /// Only `W_TRY_FAIL` is touched: `W_TRY` (successful trylocks) is written by the
    /// owner with a plain load and store, and a concurrent `fetch_add` on it from a
    /// failing thread could be lost; [`Stats::trylocks`] is the sum of the two.
    ///
    /// The failure may be what made the object known (tracking switched on
    /// while it was held): the record then names the holder `owner()` reads
    /// (0: none), as a waiter's [`note_owner`](Self::note_owner) does.
    #[cold]
    pub(crate) fn try_failed(&self, kind: Kind, addr: usize, owner: &impl Fn() -> u32) {
        let r = self.record(kind, addr);
        r.add(W_TRY_FAIL, 1);
        self.note_owner(owner, crate::sys::tid::current());
    }

    /// After a contended acquisition by `tid` that waited from `t0` (ticks, 0 if not
    /// timing).
    #[cold]
    pub(crate) fn acquired_after_wait(&self, kind: Kind, addr: usize, tid: u32, t0: u64) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.owner_fresh();
        r.bump(W_LOCKS);
        r.bump(W_CONTENDED);
        r.set(W_OWNER, u64::from(tid));
        if t0 != 0 {
            let now = ticks();
            // (A wait begun before a reset adds no time.)
            if began_since_reset(t0) {
                let w = now.saturating_sub(t0);
                r.set(W_WAIT_TOTAL, r.get(W_WAIT_TOTAL).wrapping_add(w));
                if w > r.get(W_WAIT_MAX) {
                    r.set(W_WAIT_MAX, w);
                }
            }
            r.set(W_ACQ, now);
        } else {
            hold_starts(r);
        }
        r.end(s);
    }

    /// A timed lock of a mutex, whose wait began at tick `t0` (0: not
    /// timed), that timed out: a timed wait (`W_A`), a timeout (`W_B`) and its
    /// wait time (`W_C`, its longest `W_D`), added by a thread that is not
    /// the owner, so apart from the owner's words, in one group against
    /// `reset_stats`.
    #[cold]
    fn lock_timed_out(&self, kind: Kind, addr: usize, t0: u64) {
        let r = self.record(kind, addr);
        r.group(None, || {
            r.add(W_A, 1);
            r.add(W_B, 1);
            if t0 != 0 && began_since_reset(t0) {
                let w = ticks().saturating_sub(t0);
                r.add(W_C, w);
                r.max(W_D, w);
            }
        });
    }

    /// Before the owner releases the lock (tracking is on). At the counts level this
    /// is one store (the owner word, a single atomic word needs no sequence); at the
    /// timing level the hold time is added under the sequence counter.
    #[inline]
    pub(crate) fn releasing(&self) {
        if let Some(r) = self.get() {
            let acq = r.get(W_ACQ);
            if acq == 0 {
                r.set(W_OWNER, 0);
                return;
            }
            self.release_timed(r);
        }
    }

    #[inline(never)]
    fn release_timed(&self, r: &Record) {
        let s = r.begin();
        // A reset since the hold began took its start away with the counts.
        r.owner_fresh();
        r.set(W_OWNER, 0);
        let acq = r.get(W_ACQ);
        if acq != 0 {
            let h = ticks().saturating_sub(acq);
            r.set(W_HOLD_TOTAL, r.get(W_HOLD_TOTAL).wrapping_add(h));
            if h > r.get(W_HOLD_MAX) {
                r.set(W_HOLD_MAX, h);
            }
            r.set(W_ACQ, 0);
        }
        r.end(s);
    }

    /// Sets the state word (recursion count, reader count, semaphore count) while the
    /// caller holds the right to write it.
    #[inline]
    pub(crate) fn set_state(&self, kind: Kind, addr: usize, v: u64) {
        let r = self.record(kind, addr);
        r.set(W_STATE, v);
    }

    /// A waiter starts blocking: count it and list its tid; returns the start time.
    #[cold]
    pub(crate) fn wait_begin(&self, kind: Kind, addr: usize, tid: u32) -> u64 {
        let r = self.record(kind, addr);
        r.add_waiter(tid);
        if level() >= Tracking::Timing as u8 {
            ticks().max(1)
        } else {
            0
        }
    }

    /// A waiter stopped blocking.
    #[cold]
    pub(crate) fn wait_end(&self, tid: u32) {
        if let Some(r) = self.get() {
            r.remove_waiter(tid);
        }
    }
}

/// A tracked condition-variable wait under way ([`Track::cond_wait_start`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct CondWait {
    /// Its start (ticks; 0 below the timing level).
    t0: u64,
    /// The reset epoch its start was counted in (`None`: not counted, a reset
    /// was running).
    counted: Option<u64>,
}

/// A hold begins (in the owner's write of record `r`): its start is kept for the
/// hold time at the timing level. Below it no hold is timed, and a start left by
/// a hold that began at the timing level and ended untracked (tracking off at
/// its unlock) is cleared: the next unlock would otherwise add the time since
/// that start, untracked stretch included, as a hold ([`Track::releasing`]).
#[inline]
fn hold_starts(r: &Record) {
    if level() >= Tracking::Timing as u8 {
        r.set(W_ACQ, ticks());
    } else if r.get(W_ACQ) != 0 {
        r.set(W_ACQ, 0);
    }
}
