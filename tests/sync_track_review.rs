//! Review tests of sync tracking: what `objects()` and the shared registry (what
//! `rtstat` shows) report must be the objects' real state, also across
//! switching tracking off and on again, a fork, and a move.
//!
//! Tracking is process-wide: every test holds `serial`, which sets the level it
//! needs. Nothing asserts a duration.

#[path = "common/tracking.rs"]
mod tracking;
use tracking::serial;

use posixrt::sync::{self, objects, RwLock, Semaphore, Snapshot, Tracking};

/// The object named `name` as `objects()` lists it and as the shared registry
/// (what `rtstat` reads) holds it after a publish.
fn listed_and_published(name: &str) -> [Snapshot; 2] {
    let find = |v: Vec<Snapshot>, from: &str| {
        v.into_iter()
            .find(|o| o.info.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} not in {from}"))
    };
    sync::publish().expect("publish");
    let published = sync::read_process(std::process::id()).expect("own registry");
    [
        find(objects(), "objects()"),
        find(published, "the registry"),
    ]
}

/// Readers that took or left an RwLock while tracking was off are counted as
/// soon as tracking is back on, in `objects()` and in the registry: before,
/// both kept the count of the last tracked operation until the lock's next
/// tracked use (one reader shown while three held it, then three while none).
#[test]
fn rwlock_readers_are_current_right_after_tracking_is_back_on() {
    let _g = serial(Tracking::Counts);
    let l = RwLock::new(());
    // SAFETY: the raw lock is only named.
    unsafe { l.raw() }.set_name("review-readers-off");
    let r1 = l.read();
    sync::set_tracking(Tracking::Off);
    let (r2, r3) = (l.read(), l.try_read().expect("no writer"));
    sync::set_tracking(Tracking::Counts);
    let held: Vec<_> = listed_and_published("review-readers-off")
        .map(|o| (o.info.readers, o.info.locked))
        .into();
    sync::set_tracking(Tracking::Off);
    drop((r1, r2, r3));
    sync::set_tracking(Tracking::Counts);
    let freed: Vec<_> = listed_and_published("review-readers-off")
        .map(|o| (o.info.readers, o.info.locked))
        .into();
    sync::set_tracking(Tracking::Off);
    assert_eq!(held, [(3, true), (3, true)], "three readers hold it");
    assert_eq!(freed, [(0, false), (0, false)], "no reader holds it");
}

/// A semaphore posted and waited on while tracking was off shows its real
/// count as soon as tracking is back on: before, `objects()` and the registry
/// showed the count of its last tracked operation.
#[test]
fn semaphore_count_is_current_right_after_tracking_is_back_on() {
    let _g = serial(Tracking::Counts);
    let s = Semaphore::new(0).expect("semaphore");
    s.set_name("review-sem-off");
    s.post().expect("post");
    sync::set_tracking(Tracking::Off);
    for _ in 0..3 {
        s.post().expect("post");
    }
    s.wait();
    assert!(s.try_wait());
    sync::set_tracking(Tracking::Counts);
    let counts: Vec<_> = listed_and_published("review-sem-off")
        .map(|o| o.info.sem_count)
        .into();
    sync::set_tracking(Tracking::Off);
    assert_eq!(s.value(), 2);
    assert_eq!(counts, [Some(2), Some(2)]);
}

/// A hold that began while tracking was off is not timed when it ends with
/// tracking back on at the timing level: its start is unknown. Before, the
/// record kept the start of the last hold timed before tracking went off, and
/// the unlock added the time since then (the lock free in between included)
/// as one hold, so hold_max showed a critical section that never was.
#[test]
fn a_hold_begun_while_tracking_was_off_is_not_timed_from_an_older_start() {
    use posixrt::sync::{NormalMutex, PiMutex};
    let _g = serial(Tracking::Timing);
    let n = NormalMutex::new(());
    let p = PiMutex::new(());
    // SAFETY (both raw() calls): the raw locks are only named and read.
    unsafe { n.raw() }.set_name("review-hold-normal");
    unsafe { p.raw() }.set_name("review-hold-pi");
    let (gn, gp) = (n.lock(), p.lock());
    sync::set_tracking(Tracking::Off);
    drop((gn, gp));
    // Locked again while tracking is off, unlocked with it on.
    let (gn, gp) = (n.lock(), p.lock());
    sync::set_tracking(Tracking::Timing);
    sync::reset_stats();
    drop((gn, gp));
    let holds: Vec<_> = listed_and_published("review-hold-normal")
        .into_iter()
        .chain(listed_and_published("review-hold-pi"))
        .map(|o| (o.info.name, o.stats.hold_total, o.stats.hold_max))
        .collect();
    sync::set_tracking(Tracking::Off);
    for (name, total, max) in holds {
        assert_eq!(
            (total, max),
            (std::time::Duration::ZERO, std::time::Duration::ZERO),
            "{name:?}"
        );
    }
}
