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
//!   not-taken branch to the uncontended path. Nothing is recorded but the state
//!   of known rwlocks and semaphores: once a process has known one, the reads,
//!   read unlocks, posts and waits of a known one keep its reader count or
//!   count current in its record (a store between two `SeqCst` fences, as when
//!   tracking is on; those of an unknown one add a load and a branch), so
//!   [`objects`] and `rtstat` show it right as soon as tracking is back on: an
//!   object cannot be reached from its record then (objects move).
//! - [`Tracking::Counts`]: an object becomes *known* the first time it is used (it
//!   gets a record, allocated once, off the fast path). Counters are written only by
//!   the thread that holds the lock, with plain relaxed stores inside a sequence
//!   counter (no read-modify-write atomics on the uncontended path beyond the
//!   lock's own CAS); after releasing an exclusive lock, its owner makes one
//!   `SeqCst` fence and one load (to take back an owner a waiter noted during the
//!   unlock). Failed trylocks, waiters, condition variables, semaphores and
//!   read locks (which have no single owner) use `fetch_add`.
//! - [`Tracking::Timing`]: adds wait and hold times. Hold time needs a timestamp at
//!   lock and one at unlock (the TSC on x86-64, `CLOCK_MONOTONIC` elsewhere); wait
//!   times are taken on the contended path only.
//!
//! Statistics count from the moment an object became known (or from
//! [`reset_stats`], which threads may use the objects across: a hold or a
//! wait begun before it adds no time after it).
//!
//! # Records
//!
//! A record is 48 64-bit words in a slab that is never freed (records are recycled
//! when their object is dropped), so a reader never follows a dangling pointer. The
//! lock holder writes its words under a sequence counter (odd while writing); a
//! reader copies the record and retries if the counter moved, so it never sees a
//! torn set of counters.
//!
//! # Files
//!
//! | file | concern |
//! |---|---|
//! | `level` | the run-time switch and the clock of wait and hold times |
//! | `record` | the record layout (52 words under a sequence counter) |
//! | `slab` | records: allocation and recycling (lock-free but for one `sys::pilock`), the `Track` handle |
//! | `ops` | the lock-side helpers the sync objects call |
//! | `reset` | [`reset_stats`] against the threads writing statistics meanwhile |
//! | `resume` | what switching tracking back on keeps and forgets |
//! | `snapshot` | [`Info`], [`Stats`], [`Snapshot`], [`objects`] |
//! | `deadlock` | [`find_deadlocks`] |

mod deadlock;
pub(crate) mod level;
mod ops;
pub(crate) mod record;
pub(crate) mod reset;
mod resume;
pub(crate) mod slab;
pub(crate) mod snapshot;

pub use deadlock::{find_deadlocks, find_deadlocks_in, Deadlock};
pub(crate) use level::{level, state_write, ticks, StateWrite};
pub use level::{tracking, Tracking};
pub(crate) use ops::CondWait;
pub use record::Kind;
pub(crate) use record::*;
pub use reset::reset_stats;
pub(crate) use slab::Track;
pub use snapshot::{objects, Info, Snapshot, Stats};

/// Switches tracking on or off for the whole process (the analogue of Solaris
/// `td_ta_sync_tracking_enable`). Objects used while it is on become known; switching
/// it off keeps the known objects and their statistics but stops updating them
/// (but for the reader count of a known rwlock and the count of a known
/// semaphore, which stay current: see the [module docs](self)).
///
/// Switching it back on forgets the owners recorded before: they may have
/// unlocked while it was off, unrecorded, and a stale owner would make
/// [`find_deadlocks`] report cycles that do not exist. A lock still held across
/// the switch shows its owner again once a thread waits for it or fails to
/// trylock it, as one first seen while held does. Their holds are not timed
/// either (their start is not known: the hold may have begun while tracking
/// was off). Kept are the owners that were blocked all along, in a wait on a
/// mutex, rwlock or semaphore begun while tracking was on (they released
/// nothing): a deadlock cycle found before stays found.
///
/// Switching it off in a process that publishes its objects for `rtstat`
/// ([`publish`](super::publish)) publishes them once more, marked as the state
/// of the moment tracking went off ([`PublishStatus`](super::PublishStatus)):
/// `rtstat` then says that what it shows is not current.
///
/// # References
/// - [td_sync_get_info(3C_DB)](https://docs.oracle.com/cd/E88353_01/html/E37843/td-sync-get-info-3c-db.html) (`td_ta_sync_tracking_enable`)
#[doc(alias = "td_ta_sync_tracking_enable")]
pub fn set_tracking(level: Tracking) {
    let was = level::level();
    if level != Tracking::Off && was == 0 {
        // Forgets what may have changed unseen, before any owner is recorded
        // again.
        resume::resume(|| level::set_level_and_clock(level));
    } else {
        level::set_level_and_clock(level);
    }
    if level != Tracking::Off {
        super::shared::start_publisher();
    } else if was != 0 {
        super::shared::tracking_stopped();
    }
}
