//! The reader-writer lock ([`RwLock`], [`RawRwLock`]) on a futex, with `lock_api`
//! guards.
//!
//! The futex word counts readers (bits 0..30) and has a writer bit (bit 30).
//!
//! # Readers and waiting writers
//!
//! `pthread_rwlock_rdlock` says that with the Thread Execution Scheduling option,
//! a reader running `SCHED_FIFO` or `SCHED_RR` "shall not acquire the lock if a
//! writer holds the lock or if writers of higher or equal priority are blocked on
//! the read-write lock; otherwise, the calling thread shall acquire the lock"; for
//! the other policies the choice is the implementation's. This lock does:
//!
//! - **a `SCHED_FIFO`/`SCHED_RR` reader** whose priority is strictly above that of
//!   every waiting writer takes the lock while no writer holds it (in `read`,
//!   `try_read` and the timed reads alike), so a low-priority writer that waits
//!   cannot hold up a real-time reader. A waiting writer's priority is its
//!   `SCHED_FIFO`/`SCHED_RR` priority, 0 for the other policies, and above every
//!   real-time priority for `SCHED_DEADLINE`. Both are the static priorities
//!   the kernel reports (`sched_getattr`, not one lent by priority inheritance),
//!   read once per call: a reader's only when it meets a waiting writer, a
//!   writer's when it has to wait. A real-time writer can thus wait for as long
//!   as higher-priority readers keep the lock read-locked, as POSIX requires.
//!   A real-time reader that read-locks again while it holds a read lock and a
//!   writer of higher or equal priority waits deadlocks (the writer waits for
//!   its first read lock, its second for the writer), as below;
//! - **any other reader** (`SCHED_OTHER`, `SCHED_BATCH`, `SCHED_IDLE`,
//!   `SCHED_DEADLINE`) waits once any writer waits (writers are preferred, which
//!   POSIX leaves to the implementation), so a stream of such readers cannot
//!   starve a writer (a thread of these classes that read-locks recursively
//!   while any writer waits deadlocks, as `lock_api` documents).
//!
//! The uncontended read costs one CAS, as before (no class is read unless a
//! writer holds the lock or waits). Waiting writers of a level above 0 keep it
//! in a list of nodes on their own stacks (real-time readers that wait, in a
//! second list, see below), under a priority-inheriting futex lock taken only
//! by them as they start and stop waiting (also when a wait times out or
//! unwinds; one lock for all the lists of the process, whose holder a forked
//! child forgets), and publish the highest in one word readers read;
//! `SCHED_OTHER` writers only count themselves, as before. In a forked child,
//! the writers of the parent that waited at the fork do not exist: they hold
//! no reader back there (the count and the list are stamped with the fork
//! generation that made them).
//!
//! # Sleeping
//!
//! Sleepers wait in `FUTEX_WAIT_BITSET` on a separate epoch word that every unblocking change advances (so a state that
//! goes free → write-locked → free between a check and the sleep cannot strand a
//! sleeper), and are all woken when it changes in their favour. The writer's tid
//! is kept beside the word for introspection, and to refuse a lock by the writer
//! itself: `write`, `read` and their timed forms from the thread that holds the
//! write lock would wait for that thread forever, so they **panic** with EDEADLK
//! (what `pthread_rwlock_wrlock` and `pthread_rwlock_rdlock` report there; the
//! `lock_api` methods cannot return it), as the mutexes refuse a relock by their
//! owner. `try_write` and `try_read` only fail then.
//!
//! Waking every sleeper leaves the choice of who gets a free lock to the
//! sleepers, which `pthread_rwlock_unlock` gives to the scheduling policy: a
//! woken writer takes the lock only if no waiting writer has a higher level
//! and no waiting `SCHED_FIFO`/`SCHED_RR` reader a higher priority (else it
//! sleeps again), so the highest-priority waiter gets it even when a lower
//! writer wakes first on another CPU. A reader that has to wait therefore
//! reads its class (one `sched_getattr`) and, if real-time, lists itself as
//! the real-time writers do. A writer that arrives while writers or real-time
//! readers wait takes the slow path too, so it does not take a lock that has
//! just become free from a woken waiter of higher priority (`try_write` does:
//! it only fails while the lock is held).
//!
//! # References
//! - [pthread_rwlock_rdlock(3p)](https://man7.org/linux/man-pages/man3/pthread_rwlock_rdlock.3p.html)
//! - [pthread_rwlock_wrlock(3p)](https://man7.org/linux/man-pages/man3/pthread_rwlock_wrlock.3p.html)

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lock_api::{GuardNoSend, RawRwLockTimed};

use super::checked::deadline_after;
use super::rwlock_writers::{writer_level, ReaderLevel, WaitingCount, WaitingWriter, WriterList};
use super::track::{self, Kind, Snapshot, StateWrite, Track};
use crate::sys::futex;
use crate::sys::prio;
use crate::sys::tid::current as current_tid;

mod stats;

const WRITER: u32 = 1 << 30;
const READERS: u32 = WRITER - 1;

/// A reader-writer lock (see the [module docs](self)).
///
/// ```
/// use posixrt::sync::RwLock;
///
/// let l = RwLock::new(1);
/// {
///     let a = l.read();
///     let b = l.read();
///     assert_eq!(*a + *b, 2);
/// }
/// *l.write() += 1;
/// assert_eq!(*l.read(), 2);
/// ```
#[doc(alias = "pthread_rwlock_t")]
#[doc(alias = "pthread_rwlock_rdlock")]
#[doc(alias = "pthread_rwlock_wrlock")]
#[doc(alias = "pthread_rwlock_unlock")]
pub type RwLock<T> = lock_api::RwLock<RawRwLock, T>;

/// The raw reader-writer lock.
pub struct RawRwLock {
    state: AtomicU32,
    writers_waiting: WaitingCount,
    sleepers: AtomicU32,
    /// The futex word sleepers wait on: advanced by every change that may unblock
    /// them (see [`RawRwLock::sleep_while`]).
    epoch: AtomicU32,
    writer: AtomicU32,
    /// The waiting writers of a level above 0, and the highest level.
    writers: WriterList,
    /// The waiting readers of a level above 0, and the highest level.
    readers_waiting: WriterList,
    track: Track,
}

impl RawRwLock {
    /// A free lock.
    pub const fn new() -> RawRwLock {
        RawRwLock {
            state: AtomicU32::new(0),
            writers_waiting: WaitingCount::new(),
            sleepers: AtomicU32::new(0),
            epoch: AtomicU32::new(0),
            writer: AtomicU32::new(0),
            writers: WriterList::new(),
            readers_waiting: WriterList::new(),
            track: Track::new(),
        }
    }

    #[inline(always)]
    fn addr(&self) -> usize {
        self as *const Self as usize
    }

    /// Readers holding the lock now.
    pub fn readers(&self) -> u32 {
        self.state.load(Ordering::Relaxed) & READERS
    }

    /// The writer's tid, if write-locked.
    pub fn writer(&self) -> Option<u32> {
        if self.state.load(Ordering::Relaxed) & WRITER != 0 {
            match self.writer.load(Ordering::Relaxed) {
                0 => None,
                t => Some(t),
            }
        } else {
            None
        }
    }

    /// Takes a read lock if no writer holds or waits for the lock. A CAS that fails
    /// because another reader changed the count meanwhile is retried: only a writer
    /// may make a reader wait (or a `try_read` fail).
    #[inline]
    fn try_read_fast(&self) -> bool {
        self.add_reader_while(|| self.writers_waiting.is_zero())
    }

    /// Adds a reader while no writer holds the lock, the count has room and
    /// `may_pass` (the waiting writers let this reader in); a CAS that fails
    /// because another reader changed the count is retried.
    #[inline(always)]
    fn add_reader_while(&self, may_pass: impl Fn() -> bool) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & WRITER == 0 && s & READERS < READERS - 1 && may_pass() {
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
        false
    }

    /// Refuses a lock by the thread that holds the write lock: it would wait for
    /// itself forever. Only this thread stores its own tid in `writer` (after
    /// taking the write lock, cleared before releasing it), so reading it back
    /// means this thread holds the write lock.
    #[inline]
    fn refuse_relock_by_writer(&self, tid: u32, call: &'static str) {
        if self.writer.load(Ordering::Relaxed) == tid {
            relock_by_writer(call)
        }
    }

    #[cold]
    #[inline(never)]
    fn read_slow(&self, deadline: Option<Instant>) -> bool {
        let tid = current_tid();
        self.refuse_relock_by_writer(tid, "pthread_rwlock_rdlock");
        let level = ReaderLevel::new();
        if self.read_past_writers(&level) {
            // Not a wait: counted and reported as the fast path's.
            self.read_acquired();
            return true;
        }
        let wait = self.wait_start(tid);
        let node = WaitingWriter::new(level.get());
        let mut listed = self.start_waiting_reader(&node);
        let ok = loop {
            let s = self.state.load(Ordering::Acquire);
            if s & WRITER == 0 && self.passes_waiting_writers(&level) {
                if s & READERS >= READERS - 1 {
                    // Not a waiter any more, even though this read panics.
                    if wait.is_some() {
                        self.track.wait_end(tid);
                    }
                    reader_overflow();
                }
                if self
                    .state
                    .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    break true;
                }
                continue;
            }
            let blocked = || {
                self.state.load(Ordering::SeqCst) & WRITER != 0
                    || !self.passes_waiting_writers(&level)
            };
            if let Err(libc::ETIMEDOUT) = self.sleep_while(blocked, deadline) {
                break false;
            }
        };
        listed.acquired = ok;
        drop(listed);
        if let Some(t0) = wait {
            self.track.wait_end(tid);
            if !ok {
                self.timed_out_tracked(t0, true);
            } else if let Some(r) = self.track.get() {
                // One group against `reset_stats`; a wait begun before a
                // reset adds no time.
                r.group(None, || {
                    r.add(track::W_A, 1);
                    r.add(track::W_B, 1);
                    if deadline.is_some() {
                        r.add(track::W_RW_TIMED, 1);
                    }
                    if t0 != 0 && track::reset::began_since_reset(t0) {
                        r.add(track::W_C, track::ticks().saturating_sub(t0));
                    }
                });
                self.record_readers(r);
            }
        } else if ok {
            self.readers_changed_untracked();
        }
        super::hook::rdlock(
            self.addr(),
            false,
            if ok {
                super::hook::LockResult::Acquired
            } else {
                super::hook::LockResult::TimedOut
            },
        );
        ok
    }

    /// Whether a reader of `level` may go past the writers waiting now: none
    /// waits, or `level` is above all of theirs (`top`). Reads the reader's class
    /// only if a writer waits. `SeqCst`, for [`Self::sleep_while`]; a writer
    /// raises `top` before it counts itself in `writers_waiting`, so a reader that
    /// sees the count sees the level.
    fn passes_waiting_writers(&self, level: &ReaderLevel) -> bool {
        self.writers_waiting.get() == 0 || level.get() > self.writers.top()
    }

    /// Takes a read lock where the fast path did not, if no writer holds the lock
    /// and the reader may go past the waiting ones ([`Self::passes_waiting_writers`]).
    /// As in the fast path, a CAS that fails because another reader changed the
    /// count is retried, and a full count fails.
    #[cold]
    #[inline(never)]
    fn read_past_writers(&self, level: &ReaderLevel) -> bool {
        self.add_reader_while(|| self.passes_waiting_writers(level))
    }

    #[cold]
    #[inline(never)]
    fn write_slow(&self, deadline: Option<Instant>) -> bool {
        let tid = current_tid();
        self.refuse_relock_by_writer(tid, "pthread_rwlock_wrlock");
        let wait = self.wait_start(tid);
        self.readers_waiting.forget_inherited();
        let node = WaitingWriter::new(writer_level(prio::current()));
        let mut waiting = self.start_waiting(&node);
        let ok = loop {
            let s = self.state.load(Ordering::Relaxed);
            if s == 0 && self.writer_may_take(&node) {
                if self
                    .state
                    .compare_exchange_weak(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    break true;
                }
                continue;
            }
            let blocked = || self.state.load(Ordering::SeqCst) != 0 || !self.writer_may_take(&node);
            if let Err(libc::ETIMEDOUT) = self.sleep_while(blocked, deadline) {
                break false;
            }
        };
        waiting.acquired = ok;
        drop(waiting);
        if ok {
            self.writer.store(tid, Ordering::Relaxed);
        }
        if let Some(t0) = wait {
            self.track.wait_end(tid);
            if !ok {
                self.timed_out_tracked(t0, false);
            } else {
                self.track
                    .acquired_after_wait(Kind::RwLock, self.addr(), tid, t0);
                if let (true, Some(r)) = (deadline.is_some(), self.track.get()) {
                    r.add(track::W_RW_TIMED, 1);
                }
            }
        }
        super::hook::lock(
            self.addr(),
            self.writer.load(Ordering::Relaxed),
            if ok {
                super::hook::LockResult::Acquired
            } else {
                super::hook::LockResult::TimedOut
            },
        );
        ok
    }

    /// Whether the waiting writer of `node` may take the free lock: no waiting
    /// writer has a higher level (`pthread_rwlock_unlock`: the scheduling policy
    /// decides who gets a lock that becomes free). Every sleeper is woken when
    /// the lock becomes free, and one woken on another CPU (or before the others
    /// run) would otherwise take it from a higher-priority writer. `SeqCst`, for
    /// [`Self::sleep_while`]: a writer that stops waiting without the lock lowers
    /// `top` before it wakes the sleepers.
    /// The same holds against a waiting real-time reader of a higher level
    /// (which would go past this writer if it waited).
    fn writer_may_take(&self, node: &WaitingWriter) -> bool {
        node.level >= self.writers.top() && node.level >= self.readers_waiting.top()
    }

    /// Lists a reader of `node`'s level above 0 that is about to wait among the
    /// waiting real-time readers (writers of lower level defer to it), until the
    /// returned guard is dropped.
    fn start_waiting_reader<'a>(&'a self, node: &'a WaitingWriter) -> WaitingReader<'a> {
        if node.level != 0 {
            self.readers_waiting.list(node);
        }
        WaitingReader {
            lock: self,
            node,
            acquired: false,
        }
    }

    /// Counts the writer of `node` among the waiting writers, with its level
    /// (listed if above 0), until the returned guard is dropped.
    fn start_waiting<'a>(&'a self, node: &'a WaitingWriter) -> Waiting<'a> {
        if node.level != 0 {
            self.writers.list(node);
        }
        self.writers_waiting.add();
        Waiting {
            lock: self,
            node,
            acquired: false,
        }
    }

    /// Sleeps on the epoch word while `blocked()` holds (checked after announcing the
    /// sleeper and reading the epoch), until woken, a spurious wake-up or `deadline`.
    ///
    /// Lost wake-ups cannot happen: a thread that unblocks others first changes the
    /// state, or (a writer that stops waiting without the lock) `top` and
    /// `writers_waiting` (SeqCst), then reads `sleepers` (SeqCst) and, if any,
    /// advances the epoch before waking. Either it sees this sleeper, and the
    /// epoch this sleeper read is stale by the time the kernel compares it (or the
    /// wake finds it queued), or it does not, and then the SeqCst order puts its
    /// change before the `blocked()` re-check here. Sleeping on the epoch instead of the state word
    /// also avoids the ABA of a state that goes 0 → WRITER → 0 between the check and
    /// the sleep.
    fn sleep_while(
        &self,
        blocked: impl Fn() -> bool,
        deadline: Option<Instant>,
    ) -> Result<(), i32> {
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let e = self.epoch.load(Ordering::SeqCst);
        let r = if blocked() {
            futex::wait(&self.epoch, e, deadline)
        } else {
            Ok(())
        };
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// After a change that may unblock sleepers (SeqCst, see [`Self::sleep_while`]).
    fn wake_all(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            self.epoch.fetch_add(1, Ordering::SeqCst);
            futex::wake(&self.epoch, i32::MAX as u32);
        }
    }

    /// Info (readers, writer), statistics and waiters, if known to tracking; state
    /// read live.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let mut s = self.track.snapshot_at(self.addr())?;
        s.info.readers = self.readers();
        s.info.owner = self.writer();
        s.info.write_locked = self.state.load(Ordering::Relaxed) & WRITER != 0;
        s.info.locked = s.info.write_locked || s.info.readers > 0;
        s.info.owner_pid = s.info.owner.map(|_| std::process::id());
        Some(s)
    }

    /// Test hook, not part of the API: runs `f` with the lock of the list of
    /// real-time waiting writers held (as a writer holds it when it starts or
    /// stops waiting).
    #[doc(hidden)]
    pub fn __with_writer_list_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        self.writers.with_locked(f)
    }

    /// Gives the lock a name shown by introspection (and registers it now).
    pub fn set_name(&self, name: &str) {
        self.track.set_name(Kind::RwLock, self.addr(), name);
        // Held now, by holders that wrote nothing (it was not known then):
        // the record gets them, as from a waiter (`wait_start`).
        self.readers_changed_untracked();
        self.track.note_held(&|| self.writer().unwrap_or(0));
    }

    /// Forces the lock to free (no readers, no writer) and wakes every waiter
    /// (Solaris `td_sync_setstate`).
    ///
    /// # Safety
    /// This breaks the exclusion: existing guards will later unlock a lock they no
    /// longer hold, corrupting the reader count.
    pub unsafe fn force_unlock(&self) {
        self.force_readers_unchecked(0);
    }

    /// Forces the lock to `readers` read locks and no writer, and wakes every
    /// waiter (Solaris `td_sync_setstate` of a read count).
    ///
    /// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) above the most
    /// read locks the lock holds at once, 2^30 - 2.
    ///
    /// # Safety
    /// As [`force_unlock`](Self::force_unlock): existing guards will later unlock
    /// a lock they no longer hold, and no guard releases the read locks forced in.
    pub unsafe fn force_readers(&self, readers: u32) -> crate::Result<()> {
        if readers > READERS - 1 {
            return Err(crate::Error::invalid(
                "force_readers",
                "more than 2^30 - 2 read locks",
            ));
        }
        self.force_readers_unchecked(readers);
        Ok(())
    }

    fn force_readers_unchecked(&self, readers: u32) {
        self.writer.store(0, Ordering::Relaxed);
        self.state.store(readers, Ordering::SeqCst);
        if let Some(r) = self.track.get() {
            r.set(track::W_OWNER, 0);
            r.set(track::W_STATE, u64::from(readers));
        }
        self.epoch.fetch_add(1, Ordering::SeqCst);
        futex::wake(&self.epoch, i32::MAX as u32);
    }
}

/// A writer counted among the waiting ones ([`RawRwLock::start_waiting`]): the
/// drop, on return or unwinding, takes it out again and, unless it got the lock,
/// wakes the readers it may have held back.
struct Waiting<'a> {
    lock: &'a RawRwLock,
    node: &'a WaitingWriter,
    acquired: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.node.level != 0 {
            self.lock.writers.unlist(self.node);
        }
        self.lock.writers_waiting.sub();
        if !self.acquired {
            self.lock.wake_all();
        }
    }
}

/// A real-time reader listed as waiting ([`RawRwLock::start_waiting_reader`]):
/// the drop, on return or unwinding, unlists it and, unless it got the lock,
/// wakes the writers that deferred to it.
struct WaitingReader<'a> {
    lock: &'a RawRwLock,
    node: &'a WaitingWriter,
    acquired: bool,
}

impl Drop for WaitingReader<'_> {
    fn drop(&mut self) {
        if self.node.level != 0 {
            self.lock.readers_waiting.unlist(self.node);
            if !self.acquired {
                self.lock.wake_all();
            }
        }
    }
}

/// A lock by the thread that holds the write lock (see the [module docs](self)).
#[cold]
#[inline(never)]
fn relock_by_writer(call: &'static str) -> ! {
    let e = crate::Error::from_errno(call, libc::EDEADLK)
        .with_message("the calling thread holds this lock for writing")
        .with_hint("drop the write guard before locking again");
    panic!("posixrt RwLock: {e}")
}

/// More than 2^30 - 2 read locks held at once (e.g. leaked guards): the count would
/// overflow into the writer bit.
#[cold]
#[inline(never)]
fn reader_overflow() -> ! {
    panic!("posixrt RwLock: reader count overflow (2^30 - 2 read locks held at once)")
}

impl Default for RawRwLock {
    fn default() -> Self {
        RawRwLock::new()
    }
}

impl std::fmt::Debug for RawRwLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawRwLock")
            .field("readers", &self.readers())
            .field("writer", &self.writer())
            .finish()
    }
}

// SAFETY: a writer holds WRITER alone (CAS 0→WRITER, Acquire); readers increment the
// count only while WRITER is clear (CAS, Acquire); releases are Release. Guards are
// !Send, so locks are released by the threads that took them.
unsafe impl lock_api::RawRwLock for RawRwLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawRwLock = RawRwLock::new();
    type GuardMarker = GuardNoSend;

    #[inline]
    fn lock_shared(&self) {
        if self.try_read_fast() {
            self.read_acquired();
        } else {
            self.read_slow(None);
        }
    }

    #[inline]
    fn try_lock_shared(&self) -> bool {
        let ok = self.try_read_fast() || self.read_past_writers(&ReaderLevel::new());
        super::hook::rdlock(self.addr(), true, super::hook::LockResult::of_try(ok));
        match track::state_write() {
            StateWrite::Skip => {}
            StateWrite::Track => {
                let r = self.track.record(Kind::RwLock, self.addr());
                if ok {
                    // In `W_D`: `W_TRY` is the writers', which the owner
                    // writes with plain stores (and `reset_stats` leaves to
                    // it). One group against `reset_stats`.
                    r.group(None, || {
                        r.add(track::W_A, 1);
                        r.add(track::W_D, 1);
                    });
                    self.record_readers(r);
                } else {
                    r.add(track::W_TRY_FAIL, 1);
                    // It may be what made the lock known: the record names the writer.
                    self.track
                        .note_owner(&|| self.writer().unwrap_or(0), current_tid());
                }
            }
            StateWrite::Mirror => {
                if ok {
                    self.readers_changed_untracked();
                }
            }
        }
        ok
    }

    #[inline]
    unsafe fn unlock_shared(&self) {
        super::hook::rdunlock(self.addr());
        let prev = self.state.fetch_sub(1, Ordering::SeqCst);
        if prev & READERS == 1 {
            self.wake_all();
        }
        // Tracked or not (`StateWrite::Mirror`): a known lock's record gets
        // the count.
        if track::state_write() != StateWrite::Skip {
            self.readers_changed_untracked();
        }
    }

    #[inline]
    fn lock_exclusive(&self) {
        if !self.try_lock_exclusive_quiet() {
            self.write_slow(None);
        }
    }

    #[inline]
    fn try_lock_exclusive(&self) -> bool {
        let ok = self
            .state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok();
        super::hook::trylock(
            self.addr(),
            || {
                if ok {
                    current_tid()
                } else {
                    self.writer.load(Ordering::Relaxed)
                }
            },
            super::hook::LockResult::of_try(ok),
        );
        if ok {
            let tid = current_tid();
            self.writer.store(tid, Ordering::Relaxed);
            if track::level() != 0 {
                self.track.try_acquired(Kind::RwLock, self.addr(), tid);
            }
        } else if track::level() != 0 {
            self.try_failed_tracked();
        }
        ok
    }

    #[inline]
    unsafe fn unlock_exclusive(&self) {
        let tracked = self.track.on_unlock(self.addr());
        self.writer.store(0, Ordering::Relaxed);
        self.state.store(0, Ordering::SeqCst);
        self.wake_all();
        if tracked {
            self.track.released(current_tid());
        }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }

    #[inline]
    fn is_locked_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }
}

// SAFETY: same exclusion as the untimed methods.
unsafe impl RawRwLockTimed for RawRwLock {
    type Duration = Duration;
    type Instant = Instant;

    fn try_lock_shared_for(&self, timeout: Duration) -> bool {
        self.try_lock_shared_until(deadline_after(timeout))
    }

    fn try_lock_shared_until(&self, deadline: Instant) -> bool {
        if self.try_read_fast() {
            self.read_acquired();
            true
        } else {
            self.read_slow(Some(deadline))
        }
    }

    fn try_lock_exclusive_for(&self, timeout: Duration) -> bool {
        self.try_lock_exclusive_until(deadline_after(timeout))
    }

    fn try_lock_exclusive_until(&self, deadline: Instant) -> bool {
        if self.try_lock_exclusive_quiet() {
            true
        } else {
            self.write_slow(Some(deadline))
        }
    }
}

impl RawRwLock {
    /// The write fast path: one CAS 0 → WRITER; on success records the writer and
    /// reports the acquisition. Shared by `lock_exclusive` and `try_lock_exclusive_until`.
    /// Not while writers or real-time readers wait: the lock may have just
    /// become free for one of them to take, which the slow path leaves to them
    /// unless this writer's priority is at least as high (see [`Self::writer_may_take`]).
    #[inline]
    fn try_lock_exclusive_quiet(&self) -> bool {
        if self.writers_waiting.is_zero()
            && self.readers_waiting.is_clear()
            && self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            let tid = current_tid();
            self.writer.store(tid, Ordering::Relaxed);
            self.track.on_fast_acquired(Kind::RwLock, self.addr(), tid);
            true
        } else {
            false
        }
    }
}
