//! Snapshots of records: [`Info`], [`Stats`], [`Snapshot`], [`objects`].

use std::time::Duration;

use super::level::*;
use super::record::*;
use super::reset::copy_current;
use super::slab::all_records;

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
    /// The name given with `set_name`, if any: its first 32 bytes at most, cut
    /// at a character boundary.
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
    /// Acquisitions (or waits) that found the object taken and entered the
    /// blocking path, listed meanwhile as a waiter (a condvar: every wait). Most
    /// of them slept; one that found the object released by the time it would
    /// have slept (or a PI lock the kernel granted at once, e.g. from a dead
    /// owner) counts too, without sleeping. Not counted: a blocking path that
    /// ended without the object (a timeout, an error).
    pub contended: u64,
    /// Total time spent blocked before acquiring (timing level); a mutex's
    /// and a semaphore's also count their timed waits' time until they timed
    /// out, an rwlock's that of its timed writes that timed out (its reads'
    /// are in [`read_wait_total`](Self::read_wait_total)).
    pub wait_total: Duration,
    /// Longest single wait (timing level), timed-out ones included as in
    /// [`wait_total`](Self::wait_total).
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
    /// Rwlock: read acquisitions that entered the blocking path (a writer held
    /// or waited for the lock), as [`contended`](Self::contended) counts them.
    pub read_contended: u64,
    /// Rwlock: total read wait time (timing level), timed reads that timed
    /// out included.
    pub read_wait_total: Duration,
    /// Condvar: timed waits. Mutex, semaphore and rwlock: timed locks (timed
    /// waits; an rwlock's timed reads and writes) that found it taken and
    /// blocked, as [`contended`](Self::contended) and
    /// [`read_contended`](Self::read_contended) count them, whether they got
    /// it or timed out.
    pub timed_waits: u64,
    /// Condvar, mutex, semaphore and rwlock: timed waits (timed locks, an
    /// rwlock's timed reads and writes) that timed out. Not
    /// [`contended`](Self::contended): nothing was acquired; a mutex's, a
    /// semaphore's or an rwlock writer's time until then is in
    /// [`wait_total`](Self::wait_total) and [`wait_max`](Self::wait_max), an
    /// rwlock reader's in [`read_wait_total`](Self::read_wait_total).
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
    /// Mutexes: the address of the [`PiCondvar`](crate::sync::PiCondvar)
    /// whose `notify_one` moved onto this mutex a waiter it could not tell
    /// (one of those the condvar lists; several were asleep there, and the
    /// kernel does not say which it requeued). Counted in `info.waiters`,
    /// not listed in [`waiters`](Self::waiters). `None` otherwise.
    pub waiter_from_condvar: Option<usize>,
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
    if kind.is_mutex() {
        // Timed locks (`Track::contended_lock`): the time of those that
        // timed out is kept apart from the owner's words.
        stats.timed_waits = w[W_A];
        stats.timeouts = w[W_B];
        stats.wait_total += d(w[W_C]);
        stats.wait_max = stats.wait_max.max(d(w[W_D]));
    }
    match kind {
        Kind::RecursiveMutex => info.recursion = if owner.is_some() { state as u32 } else { 0 },
        Kind::CeilingMutex => info.ceiling = Some((meta >> 16) as u32 & 0xff),
        Kind::RwLock => {
            info.readers = state as u32;
            info.write_locked = owner.is_some();
            info.locked = info.write_locked || info.readers > 0;
            stats.read_locks = w[W_A];
            // Successful read trylocks (`W_TRY` counts the writers').
            stats.trylocks = stats.trylocks.wrapping_add(w[W_D]);
            stats.read_contended = w[W_B];
            stats.read_wait_total = d(w[W_C]);
            // Timed reads and writes (`RawRwLock::timed_out_tracked`): the
            // time of the writes that timed out is kept apart from the
            // owner's words.
            stats.timed_waits = w[W_RW_TIMED];
            stats.timeouts = w[W_RW_TIMEOUTS];
            stats.wait_total += d(w[W_RW_TIMEOUT_WAIT]);
            stats.wait_max = stats.wait_max.max(d(w[W_RW_TIMEOUT_WAIT_MAX]));
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
            stats.timed_waits = w[W_D];
            stats.timeouts = w[W_SEM_TIMEOUTS];
        }
        _ => {}
    }
    let waiter_from_condvar =
        (kind.is_mutex() && w[W_REQUEUED_FROM] != 0).then_some(w[W_REQUEUED_FROM] as usize);
    Some(Snapshot {
        info,
        stats,
        waiters,
        waiter_from_condvar,
    })
}

/// A consistent copy of a live record's words.
pub(crate) fn copy_live(r: &Record) -> Option<[u64; WORDS]> {
    copy_current(r).filter(|w| w[W_META] & META_LIVE != 0)
}

/// A consistent snapshot of one record, if it is live.
pub(crate) fn snapshot(r: &Record) -> Option<Snapshot> {
    snapshot_words(&copy_current(r)?, ps_per_tick())
}

/// Every known (tracked) object of this process: the analogue of Solaris
/// `td_ta_sync_iter`. Each item is a consistent copy taken at iteration time.
#[doc(alias = "td_ta_sync_iter")]
pub fn objects() -> Vec<Snapshot> {
    let all: Vec<&'static Record> = all_records();
    all.into_iter().filter_map(snapshot).collect()
}
