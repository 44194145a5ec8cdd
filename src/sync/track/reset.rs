//! [`reset_stats`] against the threads that write the statistics meanwhile.
//!
//! Two kinds of writers change a record's statistics:
//!
//! - the **owner** of an exclusive lock (a mutex, an rwlock's writer), with
//!   plain loads and stores under the record's sequence counter
//!   ([`OWNER_WORDS`]). A reset cannot store into those words: an owner that
//!   loaded a count before the reset would store it back, plus one, after
//!   it. So a reset only moves [`EPOCH`] on, and the owner words belong to the
//!   epoch noted in the record ([`Record::stats_epoch`]): readers show them as
//!   zero while that epoch is an older one, and the owner's next write zeroes
//!   them first ([`Record::owner_fresh`]). The hold start goes with them, so a
//!   hold begun before the reset adds no hold time.
//! - any thread, with atomic adds (waits, read locks, posts, signals, failed
//!   trylocks). A single add is before or after the reset's store of zero; an
//!   operation that adds to several words (a contended semaphore wait: the
//!   wait, the contention and the wait time) does it as one group
//!   ([`Record::group`]), which the reset waits for, so it never keeps half of
//!   it. A group that ends an interval begun before the reset (a condvar
//!   wait's timeout and wait time) adds nothing: its start was counted before
//!   the reset.
//!
//! Wait times of waits begun before the reset are not added either
//! ([`began_since_reset`]). While a reset runs (odd [`EPOCH`]), readers wait
//! for it, so they never copy a record half reset.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::level::ticks;
use super::record::*;
use super::slab::all_records;

/// The tick at which the last reset began (0: none yet).
static RESET_TICK: AtomicU64 = AtomicU64::new(0);

/// The words an exclusive lock's owner writes with plain stores (a mutex's,
/// an rwlock writer's), reset lazily (see the [module docs](self)).
const OWNER_WORDS: [usize; 8] = [
    W_LOCKS,
    W_CONTENDED,
    W_WAIT_TOTAL,
    W_WAIT_MAX,
    W_HOLD_TOTAL,
    W_HOLD_MAX,
    W_TRY,
    W_ACQ,
];

/// Whether a record of `kind` (its meta word's low byte) has an owner that
/// writes [`OWNER_WORDS`].
fn has_owner_words(kind: u8) -> bool {
    kind != Kind::Condvar as u8 && kind != Kind::Semaphore as u8
}

/// The words any thread adds to with atomics, for a record of `kind`; the
/// reset stores zero into them (see `reset_stats` for the semaphore's lowest
/// count).
fn shared_words(kind: u8) -> &'static [usize] {
    if kind == Kind::Condvar as u8 {
        &[
            W_LOCKS,
            W_CONTENDED,
            W_WAIT_TOTAL,
            W_WAIT_MAX,
            W_A,
            W_B,
            W_C,
            W_D,
        ]
    } else if kind == Kind::Semaphore as u8 {
        &[
            W_LOCKS,
            W_CONTENDED,
            W_WAIT_TOTAL,
            W_WAIT_MAX,
            W_TRY,
            W_TRY_FAIL,
            W_A,
            W_B,
            W_D,
            W_SEM_TIMEOUTS,
        ]
    } else if kind == Kind::RwLock as u8 {
        // Its read locks and failed trylocks, and its timed reads' and
        // writes' timed waits, timeouts and timed-out writes' wait time
        // (`RawRwLock::timed_out_tracked`).
        &[
            W_TRY_FAIL,
            W_A,
            W_B,
            W_C,
            W_D,
            W_RW_TIMED,
            W_RW_TIMEOUTS,
            W_RW_TIMEOUT_WAIT,
            W_RW_TIMEOUT_WAIT_MAX,
        ]
    } else {
        // A mutex: its failed trylocks, and its timed locks' timed waits,
        // timeouts and their wait time (`Track::lock_timed_out`).
        &[W_TRY_FAIL, W_A, W_B, W_C, W_D]
    }
}

/// The epoch an owner's write belongs to: a reset under way counts as done
/// (what the owner writes after it read the odd value is after the reset).
#[inline(always)]
fn owner_epoch() -> u64 {
    EPOCH.load(Ordering::Acquire).wrapping_add(1) & !1
}

/// Whether an interval that began at tick `t0` (a wait) began after the last
/// reset began: only then is its time added.
#[inline]
pub(crate) fn began_since_reset(t0: u64) -> bool {
    t0 >= RESET_TICK.load(Ordering::Relaxed)
}

impl Record {
    /// In an owner's write (between `begin` and `end`): zeroes the owner
    /// words if a reset came since they were last written (see the [module
    /// docs](self)). One load of the epoch and one of the record's.
    #[inline(always)]
    pub(crate) fn owner_fresh(&self) {
        let e = owner_epoch();
        if self.stats_epoch.load(Ordering::Relaxed) != e {
            self.owner_reset(e);
        }
    }

    #[cold]
    #[inline(never)]
    fn owner_reset(&self, e: u64) {
        for i in OWNER_WORDS {
            self.set(i, 0);
        }
        self.stats_epoch.store(e, Ordering::Relaxed);
    }

    /// Notes, for a record just filled by its only writer, that its owner
    /// words are those of the current epoch.
    pub(crate) fn owner_words_current(&self) {
        self.stats_epoch.store(owner_epoch(), Ordering::Relaxed);
    }

    /// Runs `adds`, a group of atomic adds to the record's statistics, as one
    /// against a reset: a reset waits for it to end before zeroing the record,
    /// and it adds nothing while a reset runs, or if a reset came since
    /// `since` (the epoch [`group`](Self::group) returned for the start of
    /// the interval it ends; `None`: it ends none). Returns the epoch it added
    /// in, `None` if it added nothing.
    #[inline]
    pub(crate) fn group(&self, since: Option<u64>, adds: impl FnOnce()) -> Option<u64> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let e = EPOCH.load(Ordering::SeqCst);
        let ok = e & 1 == 0 && since.map_or(true, |s| s == e);
        if ok {
            adds();
        }
        self.busy.fetch_sub(1, Ordering::Release);
        ok.then_some(e)
    }
}

/// A copy of `r`'s words that no reset runs across, with the owner words
/// shown as zero while they belong to an epoch before the last reset.
pub(crate) fn copy_current(r: &Record) -> Option<[u64; WORDS]> {
    for i in 0..20_000u32 {
        let e = EPOCH.load(Ordering::Acquire);
        if e & 1 == 1 {
            pause(i);
            continue;
        }
        let Some((mut w, owner_epoch)) = copy_with_epoch(r) else {
            pause(i);
            continue;
        };
        fence(Ordering::Acquire);
        if EPOCH.load(Ordering::Relaxed) != e {
            continue;
        }
        if has_owner_words(w[W_META] as u8) && owner_epoch != e {
            for i in OWNER_WORDS {
                w[i] = 0;
            }
        }
        return Some(w);
    }
    None
}

/// Waits a little, the `i`-th time: spins, then yields, then sleeps (a
/// real-time thread's yield does not let a lower-priority thread it waits
/// for run on its CPU; a sleep does).
fn pause(i: u32) {
    if i < 64 {
        std::hint::spin_loop();
    } else if i < 1_000 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// Clears the statistics of every known object (the counters restart from 0),
/// also while other threads use the objects: a count an owner wrote before
/// the reset is never stored back after it, and an operation that adds to
/// several counters (a contended wait: the wait, the contention and its time)
/// is counted whole before or whole after. Resets are serialized; a reader
/// waits while one runs.
///
/// A hold or a wait begun before the reset and ended after it adds no time;
/// an acquisition, a wait or a trylock made while the reset runs may be
/// counted before it (and so not at all) or after it.
pub fn reset_stats() {
    let mut tries = 0u32;
    let e = loop {
        let e = EPOCH.load(Ordering::Relaxed);
        if e & 1 == 0 {
            // Before the epoch turns odd: an owner that reads the new epoch
            // starts its holds after this tick.
            RESET_TICK.store(ticks(), Ordering::Relaxed);
            if EPOCH
                .compare_exchange(e, e + 1, Ordering::SeqCst, Ordering::Relaxed)
                .is_ok()
            {
                break e;
            }
        }
        pause(tries);
        tries = tries.saturating_add(1);
    };
    for r in all_records() {
        // With the `SeqCst` of `group`: a group that read the even epoch is
        // counted busy here, and ends before its words are zeroed.
        let mut i = 0;
        while r.busy.load(Ordering::SeqCst) != 0 {
            pause(i);
            i = i.saturating_add(1);
        }
        let kind = r.get(W_META) as u8;
        for &w in shared_words(kind) {
            r.w[w].store(0, Ordering::SeqCst);
        }
        if kind == Kind::Semaphore as u8 {
            // The lowest count seen: none yet.
            r.w[W_C].store(u64::MAX, Ordering::SeqCst);
        }
    }
    EPOCH.store(e + 2, Ordering::SeqCst);
}
