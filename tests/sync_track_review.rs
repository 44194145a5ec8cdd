//! Review tests of sync tracking: what `objects()` and the shared registry (what
//! `rtstat` shows) report must be the objects' real state, also across
//! switching tracking off and on again, a fork, and a move.
//!
//! Tracking is process-wide: every test holds `serial`, which sets the level it
//! needs. Nothing asserts a duration.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/child.rs"]
mod child;
#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

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

/// Forks; the child runs `checks` and `_exit`s (0, or 1 with the failure's text
/// on a pipe); the parent waits (a hung child is killed and fails the test) and
/// returns the failure, if any.
fn in_child(checks: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    // SAFETY: the other threads of this process sleep in futex waits and hold
    // no lock the checks take.
    unsafe { child::in_child(checks) }
}

/// The waiters `objects()` lists for the object named `name`: (count, has
/// waiters, tids).
fn listed_waiters(name: &str) -> Option<(u32, bool, Vec<u32>)> {
    objects()
        .into_iter()
        .find(|o| o.info.name.as_deref() == Some(name))
        .map(|o| (o.info.waiters, o.info.has_waiters, o.waiters))
}

/// In a child forked while threads of the parent were blocked on a mutex and
/// a semaphore, nothing waits for them (those threads do not exist there), and
/// `objects()` says so (the child's registry, which `rtstat CHILD` reads, is
/// copied from the same records). Before, the child listed the parent's
/// waiters, tids of threads it does not have.
#[test]
fn a_forked_child_lists_no_waiter_of_the_parent() {
    use posixrt::sync::NormalMutex;
    let _g = serial(Tracking::Counts);
    let m = NormalMutex::new(());
    // SAFETY: the raw lock is only named.
    unsafe { m.raw() }.set_name("review-fork-mutex");
    let s = Semaphore::new(0).expect("semaphore");
    s.set_name("review-fork-sem");
    let held = m.lock();
    let child = std::thread::scope(|scope| {
        scope.spawn(|| drop(m.lock()));
        scope.spawn(|| s.wait());
        let blocked = |name| listed_waiters(name).is_some_and(|w| w.0 == 1);
        assert!(poll(
            || blocked("review-fork-mutex") && blocked("review-fork-sem")
        ));
        let child = in_child(|| {
            for name in ["review-fork-mutex", "review-fork-sem"] {
                let w = listed_waiters(name);
                if w != Some((0, false, Vec::new())) {
                    return Err(format!("{name}: waiters {w:?} in the child"));
                }
            }
            Ok(())
        });
        drop(held);
        s.post().expect("post");
        child
    });
    sync::set_tracking(Tracking::Off);
    child.unwrap();
}

/// An object named while it is held shows its holder in `objects()` and the
/// registry right away (as one first known through a waiter does): naming
/// registers it, and before, the record said free (no owner, no readers)
/// until a waiter or a failed trylock came, or for good if none came. (The
/// ceiling mutex only where this process may take real-time priorities: its
/// holder runs at the ceiling.)
#[test]
fn an_object_named_while_held_shows_its_holder() {
    use posixrt::sync::{ceiling_mutex, current_tid, NormalMutex, PiMutex, RecursiveMutex};
    // Taken before tracking is on, so that naming makes them known.
    let _g = serial(Tracking::Off);
    let me = current_tid();
    let (n, p) = (NormalMutex::new(()), PiMutex::new(()));
    let c = ceiling_mutex(1, ()).expect("ceiling mutex");
    let rec = RecursiveMutex::new(());
    let (l, w) = (RwLock::new(()), RwLock::new(()));
    let held = (n.lock(), p.lock(), rec.lock(), rec.lock());
    let cg = caps::can_rt().then(|| c.lock());
    let (r1, r2) = (l.read(), l.read());
    let wg = w.write();
    sync::set_tracking(Tracking::Counts);
    // SAFETY (all raw() calls): the raw locks are only named.
    unsafe {
        n.raw().set_name("review-named-normal");
        p.raw().set_name("review-named-pi");
        c.raw().set_name("review-named-ceiling");
        l.raw().set_name("review-named-readers");
        w.raw().set_name("review-named-writer");
    }
    rec.set_name("review-named-recursive");
    let owned = vec![(true, Some(me), 0, 0); 2];
    let mut expected = vec![
        ("review-named-normal", owned.clone()),
        ("review-named-pi", owned.clone()),
        ("review-named-recursive", vec![(true, Some(me), 2, 0); 2]),
        ("review-named-readers", vec![(true, None, 0, 2); 2]),
        ("review-named-writer", owned.clone()),
    ];
    if cg.is_some() {
        expected.push(("review-named-ceiling", owned));
    }
    let seen: Vec<_> = expected
        .iter()
        .map(|&(name, _)| {
            let state = listed_and_published(name)
                .map(|o| {
                    (
                        o.info.locked,
                        o.info.owner,
                        o.info.recursion,
                        o.info.readers,
                    )
                })
                .to_vec();
            (name, state)
        })
        .collect();
    drop((held, cg, r1, r2, wg));
    sync::set_tracking(Tracking::Off);
    assert_eq!(seen, expected);
}

/// A recursive mutex whose holder unlocked some of its levels while tracking
/// was off shows its real recursion count once a waiter (or a failed trylock)
/// shows the holder again with tracking back on: before, the record kept the
/// count of the last tracked lock (3 for a mutex held once).
#[test]
fn a_recursion_count_changed_while_tracking_was_off_is_not_shown_stale() {
    use posixrt::sync::{current_tid, RecursiveMutex};
    let _g = serial(Tracking::Counts);
    let m = RecursiveMutex::new(());
    m.set_name("review-recursion-off");
    let (a, b, c) = (m.lock(), m.lock(), m.lock());
    sync::set_tracking(Tracking::Off);
    drop((b, c));
    sync::set_tracking(Tracking::Counts);
    let shown = || {
        listed_and_published("review-recursion-off")
            .map(|o| (o.info.owner, o.info.recursion))
            .to_vec()
    };
    let me = current_tid();
    let (tried, waited) = std::thread::scope(|s| {
        let tried = s
            .spawn(|| {
                assert!(m.try_lock().is_none());
                shown()
            })
            .join()
            .expect("trylock thread");
        sync::set_tracking(Tracking::Off);
        sync::set_tracking(Tracking::Counts);
        s.spawn(|| drop(m.lock()));
        assert!(poll(
            || listed_waiters("review-recursion-off").is_some_and(|w| w.0 == 1)
        ));
        let waited = shown();
        drop(a);
        (tried, waited)
    });
    sync::set_tracking(Tracking::Off);
    assert_eq!(tried, vec![(Some(me), 1); 2], "after a failed trylock");
    assert_eq!(waited, vec![(Some(me), 1); 2], "with a waiter");
}

/// A record recycled from a dropped object to a new one while `objects()`
/// copies it gives either object's identity, never a mix: a semaphore listed
/// with the condition variable's name, or the reverse. Before, dropping and
/// registering wrote the record outside its sequence counter (and a record
/// of a semaphore or condvar is never written under it otherwise), so a copy
/// taken across the recycle passed as consistent.
#[test]
fn a_record_recycled_while_listed_is_never_a_mix_of_two_objects() {
    use posixrt::sync::{Condvar, Kind};
    use std::sync::atomic::{AtomicBool, Ordering};
    let _g = serial(Tracking::Counts);
    let stop = AtomicBool::new(false);
    let mixed = std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                let sem = Semaphore::new(0).expect("semaphore");
                sem.set_name("review-recycled-sem");
                drop(sem);
                let cv = Condvar::new();
                cv.set_name("review-recycled-cv");
                drop(cv);
            }
        });
        let mut mixed = Vec::new();
        for _ in 0..200_000 {
            for o in objects() {
                let expected = match o.info.kind {
                    Kind::Semaphore => "review-recycled-sem",
                    Kind::Condvar => "review-recycled-cv",
                    _ => continue,
                };
                match o.info.name.as_deref() {
                    Some(n) if n.starts_with("review-recycled") && n != expected => {
                        mixed.push((o.info.kind, n.to_string()))
                    }
                    _ => {}
                }
            }
            if mixed.len() >= 3 {
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
        mixed
    });
    sync::set_tracking(Tracking::Off);
    assert!(
        mixed.is_empty(),
        "listed with another object's name: {mixed:?}"
    );
}

/// `Semaphore::waiters()` in a child forked while threads of the parent
/// sleep in its `wait` counts none of them (they do not exist there), and the
/// child's own sleeper is counted and woken as before. Before, the child
/// counted the parent's sleepers (the count was copied with the memory).
#[test]
fn a_forked_child_counts_no_sleeper_of_the_parent_on_a_semaphore() {
    let _g = serial(Tracking::Off);
    let s = Semaphore::new(0).expect("semaphore");
    let child = std::thread::scope(|scope| {
        scope.spawn(|| s.wait());
        scope.spawn(|| s.wait());
        assert!(poll(|| s.waiters() == 2));
        let child = in_child(|| {
            let n = s.waiters();
            if n != 0 {
                return Err(format!("waiters() = {n} in the child"));
            }
            let value = std::thread::scope(|c| {
                c.spawn(|| s.wait());
                if !poll(|| s.waiters() == 1) {
                    return Err(format!("the child's sleeper: waiters() = {}", s.waiters()));
                }
                s.post().map_err(|e| e.to_string())?;
                Ok(())
            });
            value?;
            match s.waiters() {
                0 => Ok(()),
                n => Err(format!("waiters() = {n} after the child's sleeper left")),
            }
        });
        s.post().expect("post");
        s.post().expect("post");
        child
    });
    child.unwrap();
}

/// A deadlock found while tracking is on is still found after tracking is
/// switched off and on again, in-process and in the registry: the threads of
/// the cycle are blocked (listed waiters all along), so they cannot have
/// released what they hold while tracking was off. Before, switching back on
/// forgot every owner, and the blocked threads never noted theirs again: the
/// cycle was gone for good while the threads stayed deadlocked. (The cycle
/// is then broken with `force_unlock`.)
#[test]
fn a_deadlock_found_before_tracking_went_off_is_found_after_it_is_back_on() {
    use posixrt::sync::{find_deadlocks, find_deadlocks_in, NormalMutex};
    use std::time::Duration;
    let _g = serial(Tracking::Counts);
    let (a, b) = (NormalMutex::new(()), NormalMutex::new(()));
    // SAFETY (raw() calls): the raw locks are named and read; b is forced
    // unlocked below only to end the deadlock (its holder's guard then
    // unlocks a free lock, which leaves it free).
    unsafe {
        a.raw().set_name("review-cycle-a");
        b.raw().set_name("review-cycle-b");
    }
    let addr = |m: &NormalMutex<()>| unsafe { m.raw() }.snapshot().expect("known").info.address;
    let locks = [addr(&a), addr(&b)];
    let is_ours = |d: &sync::Deadlock| locks.iter().all(|l| d.locks.contains(l));
    let both_hold = std::sync::Barrier::new(2);
    const LONG: Duration = Duration::from_secs(60);
    let (before, after, published) = std::thread::scope(|s| {
        for (first, second) in [(&a, &b), (&b, &a)] {
            let both_hold = &both_hold;
            s.spawn(move || {
                let held = first.lock();
                both_hold.wait();
                drop(second.try_lock_for(LONG));
                drop(held);
            });
        }
        let before = poll(|| find_deadlocks().iter().any(is_ours));
        sync::set_tracking(Tracking::Off);
        sync::set_tracking(Tracking::Counts);
        let after = find_deadlocks().into_iter().filter(is_ours).count();
        sync::publish().expect("publish");
        let shared = sync::read_process(std::process::id()).expect("own registry");
        let published = find_deadlocks_in(&shared)
            .into_iter()
            .filter(is_ours)
            .count();
        // SAFETY: see above.
        unsafe { b.raw().force_unlock() };
        (before, after, published)
    });
    sync::set_tracking(Tracking::Off);
    assert!(before, "the cycle was never found");
    assert_eq!(
        (after, published),
        (1, 1),
        "the cycle after tracking came back on"
    );
}

/// Waiters of a `PiCondvar` that `notify_all` requeued onto the held
/// `PiMutex` wait for the mutex: `objects()`, the registry and the mutex's
/// snapshot list them as its waiters (and no longer as the condvar's) until
/// they own it. Before, the mutex showed no waiter while two threads were
/// queued on it in the kernel, and a cycle through such a waiter was never
/// found.
#[test]
fn pi_condvar_waiters_requeued_onto_the_mutex_are_its_waiters() {
    use posixrt::sync::{current_tid, PiCondvar, PiMutex};
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(false);
    let cv = PiCondvar::new();
    // SAFETY: the raw lock is only named and read.
    unsafe { m.raw() }.set_name("review-requeue-mutex");
    cv.set_name("review-requeue-cv");
    let tids = std::sync::Mutex::new(Vec::new());
    let seen = std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                tids.lock().unwrap().push(current_tid());
                let mut g = m.lock();
                while !*g {
                    cv.wait(&mut g).expect("wait");
                }
            });
        }
        assert!(poll(|| cv.waiters() == 2 && !m.is_locked()));
        let mut g = m.lock();
        *g = true;
        assert_eq!(cv.notify_all(), 2, "both requeued (the mutex is held)");
        let mut expected = tids.lock().unwrap().clone();
        expected.sort_unstable();
        let listed = |name| {
            listed_and_published(name)
                .map(|o| {
                    let mut w = o.waiters;
                    w.sort_unstable();
                    (o.info.waiters, w)
                })
                .to_vec()
        };
        let seen = (
            listed("review-requeue-mutex"),
            listed("review-requeue-cv"),
            unsafe { m.raw() }.snapshot().map(|o| o.info.waiters),
            expected,
        );
        drop(g);
        seen
    });
    let after = listed_waiters("review-requeue-mutex");
    sync::set_tracking(Tracking::Off);
    let (mutex, condvar, snapshot, expected) = seen;
    assert_eq!(mutex, vec![(2, expected); 2], "the mutex's waiters");
    assert_eq!(condvar, vec![(0, Vec::new()); 2], "the condvar's waiters");
    assert_eq!(snapshot, Some(2));
    assert_eq!(after, Some((0, false, Vec::new())), "once they own it");
}
