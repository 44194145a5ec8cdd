//! Tracking of synchronization objects: the run-time switch, the per-object record,
//! the process-wide list of known objects, snapshots ([`Info`], [`Stats`], waiters)
//! and [`find_deadlocks`].
//!
//! # Levels and cost
//!
//! [`set_tracking`] switches tracking for the whole process (the analogue of
//! `td_ta_sync_tracking_enable`):
//!
//! - [`Tracking::Off`]: each lock and unlock adds one relaxed load of a global and a
//!   not-taken branch to the uncontended path. Nothing is recorded.
//! - [`Tracking::Counts`]: an object becomes *known* the first time it is used (it
//!   gets a record, allocated once, off the fast path). Counters are written only by
//!   the thread that holds the lock, with plain relaxed stores inside a sequence
//!   counter (no read-modify-write atomics on the uncontended path beyond the
//!   lock's own CAS). Failed trylocks, waiters, condition variables, semaphores and
//!   read locks (which have no single owner) use `fetch_add`.
//! - [`Tracking::Timing`]: adds wait and hold times. Hold time needs a timestamp at
//!   lock and one at unlock (the TSC on x86-64, `CLOCK_MONOTONIC` elsewhere); wait
//!   times are taken on the contended path only.
//!
//! Statistics count from the moment an object became known (or from
//! [`reset_stats`]).
//!
//! # Records
//!
//! A record is 48 64-bit words in a slab that is never freed (records are recycled
//! when their object is dropped), so a reader never follows a dangling pointer. The
//! lock holder writes its words under a sequence counter (odd while writing); a
//! reader copies the record and retries if the counter moved, so it never sees a
//! torn set of counters.

use std::sync::atomic::{fence, AtomicPtr, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How much the sync objects record (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tracking {
    /// Nothing is recorded; objects are not registered.
    Off = 0,
    /// Objects used are registered; counters are kept.
    Counts = 1,
    /// Counters plus wait and hold times.
    Timing = 2,
}

static LEVEL: AtomicU8 = AtomicU8::new(0);

/// The current tracking level: one relaxed load.
#[inline(always)]
pub(crate) fn level() -> u8 {
    LEVEL.load(Ordering::Relaxed)
}

/// Switches tracking on or off for the whole process (the analogue of Solaris
/// `td_ta_sync_tracking_enable`). Objects used while it is on become known; switching
/// it off keeps the known objects and their statistics but stops updating them.
///
/// # References
/// - [td_sync_get_info(3C_DB)](https://docs.oracle.com/cd/E88353_01/html/E37843/td-sync-get-info-3c-db.html) (`td_ta_sync_tracking_enable`)
pub fn set_tracking(level: Tracking) {
    if level == Tracking::Timing {
        calibrate();
    }
    LEVEL.store(level as u8, Ordering::Relaxed);
    if level != Tracking::Off {
        super::shared::start_publisher();
    }
}

/// The current tracking level.
pub fn tracking() -> Tracking {
    match level() {
        0 => Tracking::Off,
        1 => Tracking::Counts,
        _ => Tracking::Timing,
    }
}

// ---- timestamps ----

/// A cheap timestamp: TSC ticks on x86-64, nanoseconds elsewhere.
#[inline(always)]
pub(crate) fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: RDTSC is available on every x86-64 CPU and has no memory effects.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mono_ns()
    }
}

fn mono_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

/// Picoseconds per tick (1000 when ticks are nanoseconds), 0 until calibrated.
static PS_PER_TICK: AtomicU64 = AtomicU64::new(0);

fn calibrate() {
    if PS_PER_TICK.load(Ordering::Relaxed) != 0 {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let (n0, t0) = (mono_ns(), ticks());
        std::thread::sleep(Duration::from_millis(20));
        let (n1, t1) = (mono_ns(), ticks());
        let ps = ((n1 - n0) as u128 * 1000 / (t1 - t0).max(1) as u128) as u64;
        PS_PER_TICK.store(ps.max(1), Ordering::Relaxed);
    }
    #[cfg(not(target_arch = "x86_64"))]
    PS_PER_TICK.store(1000, Ordering::Relaxed);
}

pub(crate) fn ps_per_tick() -> u64 {
    PS_PER_TICK.load(Ordering::Relaxed)
}

fn ticks_at(t: u64, ps: u64) -> Duration {
    Duration::from_nanos((t as u128 * ps as u128 / 1000) as u64)
}

// ---- records ----

pub(crate) const WORDS: usize = 48;
pub(crate) const W_SEQ: usize = 0;
pub(crate) const W_META: usize = 1;
pub(crate) const W_ADDR: usize = 2;
pub(crate) const W_OWNER: usize = 3;
pub(crate) const W_STATE: usize = 4;
pub(crate) const W_LOCKS: usize = 5;
pub(crate) const W_CONTENDED: usize = 6;
pub(crate) const W_WAIT_TOTAL: usize = 7;
pub(crate) const W_WAIT_MAX: usize = 8;
pub(crate) const W_HOLD_TOTAL: usize = 9;
pub(crate) const W_HOLD_MAX: usize = 10;
pub(crate) const W_TRY: usize = 11;
pub(crate) const W_TRY_FAIL: usize = 12;
pub(crate) const W_A: usize = 13;
pub(crate) const W_B: usize = 14;
pub(crate) const W_C: usize = 15;
pub(crate) const W_D: usize = 16;
pub(crate) const W_E: usize = 17;
pub(crate) const W_ACQ: usize = 18;
pub(crate) const W_WAITERS: usize = 19;
pub(crate) const W_WAITER0: usize = 20;
pub(crate) const W_NAME: usize = 28;
/// The second block of waiter words, after the name.
const W_WAITER8: usize = 32;
/// How many waiter tids a record lists (`info.waiters` counts all of them).
pub(crate) const MAX_WAITER_TIDS: usize = 24;

/// The word of waiter slot `i` (0..MAX_WAITER_TIDS).
#[inline]
const fn waiter_word(i: usize) -> usize {
    if i < 8 {
        W_WAITER0 + i
    } else {
        W_WAITER8 + (i - 8)
    }
}
const NAME_BYTES: usize = 32;

const META_LIVE: u64 = 1 << 8;
const META_SHARED: u64 = 1 << 9;

/// The kind of a synchronization object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// [`NormalMutex`](super::NormalMutex) (`PTHREAD_MUTEX_NORMAL`, no protocol).
    NormalMutex = 1,
    /// [`RecursiveMutex`](super::RecursiveMutex) (`PTHREAD_MUTEX_RECURSIVE`).
    RecursiveMutex = 2,
    /// [`PiMutex`](super::PiMutex) (`PTHREAD_PRIO_INHERIT`).
    PiMutex = 3,
    /// [`CeilingMutex`](super::CeilingMutex) (`PTHREAD_PRIO_PROTECT`).
    CeilingMutex = 4,
    /// [`Condvar`](super::Condvar).
    Condvar = 5,
    /// [`Semaphore`](super::Semaphore).
    Semaphore = 6,
    /// [`RwLock`](super::RwLock).
    RwLock = 7,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::NormalMutex,
            2 => Kind::RecursiveMutex,
            3 => Kind::PiMutex,
            4 => Kind::CeilingMutex,
            5 => Kind::Condvar,
            6 => Kind::Semaphore,
            7 => Kind::RwLock,
            _ => return None,
        })
    }

    /// Whether it is one of the mutex kinds.
    pub fn is_mutex(self) -> bool {
        matches!(
            self,
            Kind::NormalMutex | Kind::RecursiveMutex | Kind::PiMutex | Kind::CeilingMutex
        )
    }

    /// A short lower-case name (`"pi_mutex"`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::NormalMutex => "mutex",
            Kind::RecursiveMutex => "recursive_mutex",
            Kind::PiMutex => "pi_mutex",
            Kind::CeilingMutex => "ceiling_mutex",
            Kind::Condvar => "condvar",
            Kind::Semaphore => "semaphore",
            Kind::RwLock => "rwlock",
        }
    }
}

/// One object's record (see the [module docs](self)).
#[repr(C, align(64))]
pub(crate) struct Record {
    pub(crate) w: [AtomicU64; WORDS],
}

impl Record {
    #[inline(always)]
    pub(crate) fn get(&self, i: usize) -> u64 {
        self.w[i].load(Ordering::Relaxed)
    }
    #[inline(always)]
    pub(crate) fn set(&self, i: usize, v: u64) {
        self.w[i].store(v, Ordering::Relaxed)
    }
    #[inline(always)]
    pub(crate) fn bump(&self, i: usize) {
        self.set(i, self.get(i).wrapping_add(1))
    }
    #[inline(always)]
    pub(crate) fn add(&self, i: usize, v: u64) {
        self.w[i].fetch_add(v, Ordering::Relaxed);
    }
    #[inline(always)]
    pub(crate) fn max(&self, i: usize, v: u64) {
        self.w[i].fetch_max(v, Ordering::Relaxed);
    }
    /// Starts an owner-side write (the sequence counter becomes odd).
    #[inline(always)]
    pub(crate) fn begin(&self) -> u64 {
        let s = self.get(W_SEQ);
        self.set(W_SEQ, s.wrapping_add(1));
        fence(Ordering::Release);
        s
    }
    /// Ends an owner-side write.
    #[inline(always)]
    pub(crate) fn end(&self, s: u64) {
        self.w[W_SEQ].store(s.wrapping_add(2), Ordering::Release);
    }

    /// Adds a waiter tid to the small waiter table (if there is room) and counts it.
    pub(crate) fn add_waiter(&self, tid: u32) {
        self.add(W_WAITERS, 1);
        for i in 0..MAX_WAITER_TIDS {
            if self.w[waiter_word(i)]
                .compare_exchange(0, tid as u64, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    pub(crate) fn remove_waiter(&self, tid: u32) {
        self.w[W_WAITERS].fetch_sub(1, Ordering::Relaxed);
        for i in 0..MAX_WAITER_TIDS {
            if self.w[waiter_word(i)]
                .compare_exchange(tid as u64, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    fn clear(&self) {
        for w in &self.w {
            w.store(0, Ordering::Relaxed);
        }
    }
}

/// All records ever allocated (never freed), and the free ones.
struct Slab {
    all: Vec<&'static Record>,
    free: Vec<&'static Record>,
}

static SLAB: Mutex<Slab> = Mutex::new(Slab {
    all: Vec::new(),
    free: Vec::new(),
});

fn slab() -> std::sync::MutexGuard<'static, Slab> {
    SLAB.lock().unwrap_or_else(|e| e.into_inner())
}

/// The tracking handle embedded in every sync object: a pointer to its record, null
/// until the object is first used with tracking on.
pub(crate) struct Track {
    rec: AtomicPtr<Record>,
}

impl Track {
    pub(crate) const fn new() -> Track {
        Track {
            rec: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// The record, registering the object on first use.
    #[inline(always)]
    pub(crate) fn record(&self, kind: Kind, addr: usize) -> &'static Record {
        let p = self.rec.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: records are leaked ('static) and never freed.
            return unsafe { &*p };
        }
        self.register(kind, addr)
    }

    /// The record if the object is known.
    #[inline(always)]
    pub(crate) fn get(&self) -> Option<&'static Record> {
        let p = self.rec.load(Ordering::Acquire);
        // SAFETY: records are leaked ('static) and never freed.
        (!p.is_null()).then(|| unsafe { &*p })
    }

    #[cold]
    #[inline(never)]
    fn register(&self, kind: Kind, addr: usize) -> &'static Record {
        let mut s = slab();
        // Another thread may have registered it meanwhile (under the slab lock).
        let p = self.rec.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: as above.
            return unsafe { &*p };
        }
        let r: &'static Record = match s.free.pop() {
            Some(r) => r,
            None => {
                let r: &'static Record = Box::leak(Box::new(Record {
                    w: [const { AtomicU64::new(0) }; WORDS],
                }));
                s.all.push(r);
                r
            }
        };
        r.clear();
        r.set(W_ADDR, addr as u64);
        r.set(W_META, kind as u64 | META_LIVE);
        if kind == Kind::Semaphore {
            r.set(W_C, u64::MAX);
        }
        self.rec
            .store(r as *const Record as *mut Record, Ordering::Release);
        r
    }

    /// Registers the object now (whatever the level) and sets its name.
    pub(crate) fn set_name(&self, kind: Kind, addr: usize, name: &str) {
        let r = self.record(kind, addr);
        let mut buf = [0u8; NAME_BYTES];
        let n = name.len().min(NAME_BYTES);
        buf[..n].copy_from_slice(&name.as_bytes()[..n]);
        let _s = slab();
        for i in 0..NAME_BYTES / 8 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&buf[i * 8..i * 8 + 8]);
            r.set(W_NAME + i, u64::from_ne_bytes(b));
        }
    }

    /// Sets the priority ceiling shown in the info.
    pub(crate) fn set_ceiling(&self, ceiling: u32) {
        if let Some(r) = self.get() {
            let m = r.get(W_META) & 0xffff;
            r.set(W_META, m | (u64::from(ceiling) << 16));
        }
    }

    /// Forgets the object (it is dropped): the record goes back to the slab.
    fn release(&mut self) {
        let p = *self.rec.get_mut();
        if !p.is_null() {
            // SAFETY: records are 'static.
            let r: &'static Record = unsafe { &*p };
            let mut s = slab();
            r.set(W_META, 0);
            s.free.push(r);
            *self.rec.get_mut() = std::ptr::null_mut();
        }
    }
}

impl Drop for Track {
    fn drop(&mut self) {
        self.release();
    }
}

// ---- lock-side helpers used by the mutex kinds ----

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
        super::hook::lock(addr, tid, super::hook::LockResult::Acquired);
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
    /// then reports the result to the trace hook with the owner read by `owner`
    /// afterwards.
    #[inline]
    pub(crate) fn contended_lock(
        &self,
        kind: Kind,
        addr: usize,
        tid: u32,
        inner: impl FnOnce() -> crate::Result<()>,
        owner: impl FnOnce() -> u32,
    ) -> crate::Result<()> {
        let wait = self.wait_start(kind, addr, tid);
        let r = inner();
        if let Some(t0) = wait {
            self.wait_end(tid);
            if r.is_ok() {
                self.acquired_after_wait(kind, addr, tid, t0);
            }
        }
        super::hook::lock(
            addr,
            owner(),
            match &r {
                Ok(()) => super::hook::LockResult::Acquired,
                Err(e) if e.kind() == crate::ErrorKind::TimedOut => {
                    super::hook::LockResult::TimedOut
                }
                Err(e) => super::hook::LockResult::Error(e.errno().unwrap_or(0)),
            },
        );
        r
    }

    /// The start of a condition-variable wait by `tid` (either condvar kind): when
    /// tracking is on, counts the wait (and a timed one in `W_A`) and returns
    /// `Some(start tick)` for [`cond_wait_done`](Self::cond_wait_done).
    pub(crate) fn cond_wait_start(&self, addr: usize, tid: u32, timed: bool) -> Option<u64> {
        if level() == 0 {
            return None;
        }
        let r = self.record(Kind::Condvar, addr);
        r.add(W_LOCKS, 1);
        r.add(W_CONTENDED, 1);
        if timed {
            r.add(W_A, 1);
        }
        Some(self.wait_begin(Kind::Condvar, addr, tid))
    }

    /// The end of a condvar wait begun by [`cond_wait_start`](Self::cond_wait_start):
    /// counts a timeout in `W_B` and adds the wait time (timing level).
    pub(crate) fn cond_wait_done(&self, tid: u32, wait: Option<u64>, timed_out: bool) {
        let Some(t0) = wait else { return };
        self.wait_end(tid);
        if let Some(r) = self.get() {
            if timed_out {
                r.add(W_B, 1);
            }
            if t0 != 0 {
                let w = ticks().saturating_sub(t0);
                r.add(W_WAIT_TOTAL, w);
                r.max(W_WAIT_MAX, w);
            }
        }
    }

    /// The unlock report every exclusive lock makes before releasing its word: the
    /// trace hook, then (only when tracking is on) [`releasing`](Self::releasing).
    #[inline(always)]
    pub(crate) fn on_unlock(&self, addr: usize) {
        super::hook::unlock(addr);
        if level() != 0 {
            self.releasing();
        }
    }

    /// After an uncontended acquisition by `tid` (tracking is on).
    #[inline]
    pub(crate) fn acquired(&self, kind: Kind, addr: usize, tid: u32) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.bump(W_LOCKS);
        r.set(W_OWNER, u64::from(tid));
        if level() >= Tracking::Timing as u8 {
            r.set(W_ACQ, ticks());
        }
        r.end(s);
    }

    /// After a trylock by `tid` that acquired the lock.
    #[inline]
    pub(crate) fn try_acquired(&self, kind: Kind, addr: usize, tid: u32) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.bump(W_LOCKS);
        r.bump(W_TRY);
        r.set(W_OWNER, u64::from(tid));
        if level() >= Tracking::Timing as u8 {
            r.set(W_ACQ, ticks());
        }
        r.end(s);
    }

    /// After a trylock that found the lock held (not the owner: an atomic add).
    ///
    /// Only `W_TRY_FAIL` is touched: `W_TRY` (successful trylocks) is written by the
    /// owner with a plain load and store, and a concurrent `fetch_add` on it from a
    /// failing thread could be lost; [`Stats::trylocks`] is the sum of the two.
    #[cold]
    pub(crate) fn try_failed(&self, kind: Kind, addr: usize) {
        let r = self.record(kind, addr);
        r.add(W_TRY_FAIL, 1);
    }

    /// After a contended acquisition by `tid` that waited from `t0` (ticks, 0 if not
    /// timing).
    #[cold]
    pub(crate) fn acquired_after_wait(&self, kind: Kind, addr: usize, tid: u32, t0: u64) {
        let r = self.record(kind, addr);
        let s = r.begin();
        r.bump(W_LOCKS);
        r.bump(W_CONTENDED);
        r.set(W_OWNER, u64::from(tid));
        if t0 != 0 {
            let now = ticks();
            let w = now.saturating_sub(t0);
            r.set(W_WAIT_TOTAL, r.get(W_WAIT_TOTAL).wrapping_add(w));
            if w > r.get(W_WAIT_MAX) {
                r.set(W_WAIT_MAX, w);
            }
            r.set(W_ACQ, now);
        }
        r.end(s);
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
            self.release_timed(r, acq);
        }
    }

    #[inline(never)]
    fn release_timed(&self, r: &Record, acq: u64) {
        let s = r.begin();
        r.set(W_OWNER, 0);
        let h = ticks().saturating_sub(acq);
        r.set(W_HOLD_TOTAL, r.get(W_HOLD_TOTAL).wrapping_add(h));
        if h > r.get(W_HOLD_MAX) {
            r.set(W_HOLD_MAX, h);
        }
        r.set(W_ACQ, 0);
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

// ---- snapshots ----

/// What an object is and what state it is in: the analogue of Solaris
/// `td_syncinfo_t`. Fields that do not apply to a kind are `None`/zero.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Info {
    /// The kind of object.
    pub kind: Kind,
    /// Whether it is process-shared (always `false`: posixrt's objects are
    /// process-private for now).
    pub shared: bool,
    /// Its address when it became known (objects may move while unlocked).
    pub address: usize,
    /// The name given with `set_name`, if any.
    pub name: Option<String>,
    /// Mutexes and rwlocks: held (by a writer, for rwlocks) or not.
    pub locked: bool,
    /// Mutexes and rwlocks: the owner thread's tid (the writer, for rwlocks).
    pub owner: Option<u32>,
    /// Mutexes and rwlocks: the owner's process id (this process).
    pub owner_pid: Option<u32>,
    /// Whether at least one thread is blocked on it.
    pub has_waiters: bool,
    /// How many threads are blocked on it (counted while tracking is on).
    pub waiters: u32,
    /// Recursive mutexes: the recursion count while held.
    pub recursion: u32,
    /// Ceiling mutexes: the priority ceiling.
    pub ceiling: Option<u32>,
    /// Rwlocks: readers currently holding it.
    pub readers: u32,
    /// Rwlocks: held by a writer.
    pub write_locked: bool,
    /// Semaphores: the current count.
    pub sem_count: Option<u32>,
}

impl Info {
    /// Sets the live owner of an exclusive lock read from its word: `owner`,
    /// `locked` (held iff owned) and `owner_pid` (this process when owned).
    pub(crate) fn set_live_owner(&mut self, owner: Option<u32>) {
        self.owner = owner;
        self.locked = owner.is_some();
        self.owner_pid = owner.map(|_| std::process::id());
    }
}

/// Usage statistics since the object became known: the analogue of Solaris
/// `td_syncstats_t`. Which fields apply depends on the kind (see each field).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Mutex: lock acquisitions (including successful trylocks); rwlock: write
    /// acquisitions; condvar: waits; semaphore: successful waits (incl. trywaits).
    pub locks: u64,
    /// Acquisitions (or waits) that had to sleep.
    pub contended: u64,
    /// Total time spent blocked before acquiring (timing level).
    pub wait_total: Duration,
    /// Longest single wait (timing level).
    pub wait_max: Duration,
    /// Mutex and rwlock writer: total time held (timing level).
    pub hold_total: Duration,
    /// Longest single hold (timing level).
    pub hold_max: Duration,
    /// Trylock (trywait) calls.
    pub trylocks: u64,
    /// Trylock (trywait) calls that failed.
    pub trylock_failures: u64,
    /// Rwlock: read acquisitions.
    pub read_locks: u64,
    /// Rwlock: read acquisitions that had to sleep.
    pub read_contended: u64,
    /// Rwlock: total read wait time (timing level).
    pub read_wait_total: Duration,
    /// Condvar: timed waits.
    pub timed_waits: u64,
    /// Condvar: timed waits that timed out.
    pub timeouts: u64,
    /// Condvar: signals.
    pub signals: u64,
    /// Condvar: broadcasts.
    pub broadcasts: u64,
    /// Semaphore: posts.
    pub posts: u64,
    /// Semaphore: the highest count seen.
    pub max_count: u64,
    /// Semaphore: the lowest count seen.
    pub min_count: u64,
}

/// A consistent copy of one known object: info, statistics and waiters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// What it is and its state.
    pub info: Info,
    /// Its statistics.
    pub stats: Stats,
    /// Tids of threads blocked on it (up to 24 are listed; `info.waiters` counts all).
    pub waiters: Vec<u32>,
}

fn copy(r: &Record) -> Option<[u64; WORDS]> {
    for _ in 0..10_000 {
        let s0 = r.w[W_SEQ].load(Ordering::Acquire);
        if s0 & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let mut out = [0u64; WORDS];
        for (o, w) in out.iter_mut().zip(r.w.iter()) {
            *o = w.load(Ordering::Relaxed);
        }
        fence(Ordering::Acquire);
        if r.w[W_SEQ].load(Ordering::Relaxed) == s0 {
            return Some(out);
        }
    }
    None
}

/// A snapshot from a record's words, with timing ticks of `ps` picoseconds.
pub(crate) fn snapshot_words(w: &[u64; WORDS], ps: u64) -> Option<Snapshot> {
    let meta = w[W_META];
    if meta & META_LIVE == 0 {
        return None;
    }
    let kind = Kind::from_u8(meta as u8)?;
    let mut name = Vec::new();
    for i in 0..NAME_BYTES / 8 {
        name.extend_from_slice(&w[W_NAME + i].to_ne_bytes());
    }
    let end = name.iter().position(|&b| b == 0).unwrap_or(NAME_BYTES);
    let name = (end > 0).then(|| String::from_utf8_lossy(&name[..end]).into_owned());
    let owner = (w[W_OWNER] != 0).then_some(w[W_OWNER] as u32);
    let waiters: Vec<u32> = (0..MAX_WAITER_TIDS)
        .map(|i| w[waiter_word(i)] as u32)
        .filter(|&t| t != 0)
        .collect();
    let nwait = w[W_WAITERS] as u32;
    let state = w[W_STATE];
    let d = |t| ticks_at(t, ps);
    let mut info = Info {
        kind,
        shared: meta & META_SHARED != 0,
        address: w[W_ADDR] as usize,
        name,
        locked: owner.is_some(),
        owner,
        owner_pid: owner.map(|_| std::process::id()),
        has_waiters: nwait > 0,
        waiters: nwait,
        recursion: 0,
        ceiling: None,
        readers: 0,
        write_locked: false,
        sem_count: None,
    };
    let mut stats = Stats {
        locks: w[W_LOCKS],
        contended: w[W_CONTENDED],
        wait_total: d(w[W_WAIT_TOTAL]),
        wait_max: d(w[W_WAIT_MAX]),
        hold_total: d(w[W_HOLD_TOTAL]),
        hold_max: d(w[W_HOLD_MAX]),
        trylocks: w[W_TRY].wrapping_add(w[W_TRY_FAIL]),
        trylock_failures: w[W_TRY_FAIL],
        ..Stats::default()
    };
    match kind {
        Kind::RecursiveMutex => info.recursion = if owner.is_some() { state as u32 } else { 0 },
        Kind::CeilingMutex => info.ceiling = Some((meta >> 16) as u32 & 0xff),
        Kind::RwLock => {
            info.readers = state as u32;
            info.write_locked = owner.is_some();
            stats.read_locks = w[W_A];
            stats.read_contended = w[W_B];
            stats.read_wait_total = d(w[W_C]);
        }
        Kind::Condvar => {
            info.locked = false;
            info.owner_pid = None;
            stats.timed_waits = w[W_A];
            stats.timeouts = w[W_B];
            stats.signals = w[W_C];
            stats.broadcasts = w[W_D];
        }
        Kind::Semaphore => {
            info.locked = false;
            info.owner = None;
            info.owner_pid = None;
            info.sem_count = Some(state as u32);
            stats.posts = w[W_A];
            stats.max_count = w[W_B].max(state);
            stats.min_count = if w[W_C] == u64::MAX { state } else { w[W_C] };
        }
        _ => {}
    }
    Some(Snapshot {
        info,
        stats,
        waiters,
    })
}

/// Every record ever allocated.
pub(crate) fn all_records() -> Vec<&'static Record> {
    slab().all.clone()
}

/// A consistent copy of a live record's words.
pub(crate) fn copy_live(r: &Record) -> Option<[u64; WORDS]> {
    copy(r).filter(|w| w[W_META] & META_LIVE != 0)
}

/// A consistent snapshot of one record, if it is live.
pub(crate) fn snapshot(r: &Record) -> Option<Snapshot> {
    snapshot_words(&copy(r)?, ps_per_tick())
}

/// Every known (tracked) object of this process: the analogue of Solaris
/// `td_ta_sync_iter`. Each item is a consistent copy taken at iteration time.
pub fn objects() -> Vec<Snapshot> {
    let all: Vec<&'static Record> = slab().all.clone();
    all.into_iter().filter_map(snapshot).collect()
}

/// Clears the statistics of every known object (the counters restart from 0).
pub fn reset_stats() {
    let all: Vec<&'static Record> = slab().all.clone();
    for r in all {
        for i in [
            W_LOCKS,
            W_CONTENDED,
            W_WAIT_TOTAL,
            W_WAIT_MAX,
            W_HOLD_TOTAL,
            W_HOLD_MAX,
            W_TRY,
            W_TRY_FAIL,
            W_A,
            W_B,
            W_D,
            W_E,
        ] {
            r.set(i, 0);
        }
        let c = if r.get(W_META) as u8 == Kind::Semaphore as u8 {
            u64::MAX
        } else {
            0
        };
        r.set(W_C, c);
    }
}

/// A cycle of threads each waiting for a lock held by the next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlock {
    /// The threads of the cycle, in order: `threads[i]` waits for `locks[i]`, which is
    /// held by `threads[(i + 1) % len]`.
    pub threads: Vec<u32>,
    /// The addresses of the locks of the cycle (as in [`Info::address`]).
    pub locks: Vec<usize>,
}

/// Every cycle of threads waiting on mutexes (and rwlock write locks) held by one
/// another, found from the owner and waiter information of the known objects.
///
/// Needs tracking on while the threads block (waiters are recorded only then).
pub fn find_deadlocks() -> Vec<Deadlock> {
    find_deadlocks_in(&objects())
}

/// [`find_deadlocks`] over given snapshots (e.g. read from another process).
pub fn find_deadlocks_in(objects: &[Snapshot]) -> Vec<Deadlock> {
    use std::collections::HashMap;
    // waiter tid -> (lock address, owner tid)
    let mut waits: HashMap<u32, (usize, u32)> = HashMap::new();
    for o in objects {
        if let (true, Some(owner)) = (
            o.info.kind.is_mutex() || o.info.kind == Kind::RwLock,
            o.info.owner,
        ) {
            for &w in &o.waiters {
                waits.insert(w, (o.info.address, owner));
            }
        }
    }
    let mut found: Vec<Deadlock> = Vec::new();
    let mut done: std::collections::HashSet<u32> = std::collections::HashSet::new();
    let mut starts: Vec<u32> = waits.keys().copied().collect();
    starts.sort_unstable();
    for start in starts {
        if done.contains(&start) {
            continue;
        }
        let mut path: Vec<u32> = Vec::new();
        let mut t = start;
        loop {
            if let Some(pos) = path.iter().position(|&p| p == t) {
                let cyc = &path[pos..];
                // Rotate so the smallest tid comes first (one report per cycle).
                let min = cyc
                    .iter()
                    .enumerate()
                    .min_by_key(|(_, &v)| v)
                    .map(|(i, _)| i)
                    .unwrap_or(0);
                let threads: Vec<u32> = cyc[min..].iter().chain(&cyc[..min]).copied().collect();
                let locks = threads.iter().map(|t| waits[t].0).collect();
                let d = Deadlock { threads, locks };
                if !found.contains(&d) {
                    found.push(d);
                }
                break;
            }
            if done.contains(&t) {
                break;
            }
            path.push(t);
            match waits.get(&t) {
                Some(&(_, owner)) => t = owner,
                None => break,
            }
        }
        done.extend(path);
    }
    found
}
