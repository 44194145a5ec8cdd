//! The refusals and timeouts glibc's nptl tests provoke (EDEADLK relocks,
//! ETIMEDOUT timed locks and waits, EBUSY trylocks, EINVAL above a ceiling),
//! seen through tracking: each leaves the object's info consistent (owner,
//! recursion, no waiter left behind), counts only what was acquired, and
//! leaves no deadlock cycle behind.
//!
//! Tracking is process-wide: every test takes `serial`.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{past, poll, serial};

#[path = "common/self_sched.rs"]
#[allow(dead_code)]
mod self_sched;
use self_sched::{have_rt, set_self};

use std::time::{Duration, Instant};

use posixrt::sync::{
    self, ceiling_mutex, current_tid, Condvar, MutexExt, NormalMutex, PiCondvar, PiMutex,
    RecursiveMutex, RwLock, Semaphore, Snapshot, Tracking,
};
use posixrt::ErrorKind;

const SHORT: Duration = Duration::from_millis(10);

fn no_waiter(s: &Snapshot) {
    assert_eq!(s.info.waiters, 0, "{s:?}");
    assert!(s.waiters.is_empty(), "{s:?}");
    assert!(!s.info.has_waiters, "{s:?}");
}

fn in_other_thread<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

/// The owner's EDEADLK relocks (untimed and timed) and another thread's EBUSY
/// trylock and ETIMEDOUT timed lock: one acquisition counted, no contention,
/// one failed trylock, one timed wait that timed out (before, a timed-out
/// lock left nothing in the statistics), the owner still named, nobody
/// waiting.
macro_rules! refusals {
    ($m:expr) => {{
        let m = &$m;
        let raw = unsafe { m.raw() };
        raw.set_name("glibc-refusals");
        let me = current_tid();
        let g = m.lock_checked().unwrap();
        assert_eq!(
            m.lock_checked().map(drop).unwrap_err().kind(),
            ErrorKind::Deadlock
        );
        assert_eq!(
            m.lock_until_checked(past()).map(drop).unwrap_err().kind(),
            ErrorKind::Deadlock
        );
        in_other_thread(|| {
            assert!(m.try_lock_checked().unwrap().is_none());
            let e = m.lock_for_checked(SHORT).map(drop).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
        });
        let s = raw.snapshot().expect("known");
        assert_eq!((s.info.locked, s.info.owner), (true, Some(me)), "{s:?}");
        assert_eq!(s.stats.locks, 1, "only the first lock acquired: {s:?}");
        assert_eq!(s.stats.contended, 0, "{s:?}");
        assert_eq!(
            (s.stats.trylocks, s.stats.trylock_failures),
            (1, 1),
            "{s:?}"
        );
        // The other thread's timeout (not the owner's refused relock).
        assert_eq!((s.stats.timed_waits, s.stats.timeouts), (1, 1), "{s:?}");
        no_waiter(&s);
        assert!(sync::find_deadlocks().is_empty());
        drop(g);
        let s = raw.snapshot().expect("known");
        assert_eq!((s.info.locked, s.info.owner), (false, None), "{s:?}");
    }};
}

#[test]
fn pi_mutex_refusals_leave_the_info_consistent() {
    let _g = serial(Tracking::Counts);
    refusals!(PiMutex::new(()));
    sync::set_tracking(Tracking::Off);
}

#[test]
fn normal_mutex_refusals_leave_the_info_consistent() {
    let _g = serial(Tracking::Counts);
    refusals!(NormalMutex::new(()));
    sync::set_tracking(Tracking::Off);
}

#[test]
fn ceiling_mutex_refusals_leave_the_info_consistent() {
    let _g = serial(Tracking::Counts);
    if have_rt() {
        in_other_thread(|| refusals!(ceiling_mutex(3, ()).unwrap()));
        // Above the ceiling (EINVAL): nothing acquired, nothing counted.
        in_other_thread(|| {
            set_self(libc::SCHED_FIFO, 5).unwrap();
            let m = ceiling_mutex(3, ()).unwrap();
            let raw = unsafe { m.raw() };
            raw.set_name("glibc-above");
            let e = m.lock_checked().map(drop).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            let s = raw.snapshot().expect("known");
            assert_eq!((s.info.locked, s.stats.locks), (false, 0), "{s:?}");
            assert_eq!(s.info.ceiling, Some(3));
            no_waiter(&s);
        });
    }
    sync::set_tracking(Tracking::Off);
}

/// The time a timed lock waited before it timed out is wait time, for every
/// mutex kind (the owner's own wait time is kept apart: see `Stats`).
#[test]
fn a_timed_out_mutex_lock_adds_its_wait_time() {
    let _g = serial(Tracking::Timing);
    macro_rules! check {
        ($m:expr, $name:expr) => {{
            let m = &$m;
            let raw = unsafe { m.raw() };
            raw.set_name($name);
            let g = m.lock_checked().unwrap();
            in_other_thread(|| {
                let e = m.lock_for_checked(SHORT).map(drop).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut);
            });
            drop(g);
            let s = raw.snapshot().expect("known");
            assert_eq!((s.stats.timed_waits, s.stats.timeouts), (1, 1), "{s:?}");
            assert_eq!((s.stats.locks, s.stats.contended), (1, 0), "{s:?}");
            assert!(s.stats.wait_total > Duration::ZERO, "{s:?}");
            assert!(s.stats.wait_max <= s.stats.wait_total, "{s:?}");
            sync::reset_stats();
            let s = raw.snapshot().expect("known");
            assert_eq!((s.stats.timed_waits, s.stats.timeouts), (0, 0), "{s:?}");
            assert_eq!(s.stats.wait_total, Duration::ZERO, "{s:?}");
        }};
    }
    check!(NormalMutex::new(()), "timed-normal");
    check!(PiMutex::new(()), "timed-pi");
    let m = RecursiveMutex::new(());
    m.set_name("timed-recursive");
    let g = m.lock();
    in_other_thread(|| {
        let e = m.lock_for(SHORT).map(drop).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TimedOut);
    });
    drop(g);
    let s = m.snapshot().expect("known");
    assert_eq!((s.stats.timed_waits, s.stats.timeouts), (1, 1), "{s:?}");
    assert!(s.stats.wait_total > Duration::ZERO, "{s:?}");
    if have_rt() {
        in_other_thread(|| check!(ceiling_mutex(3, ()).unwrap(), "timed-ceiling"));
    }
    sync::set_tracking(Tracking::Off);
}

/// tst-mutex3 seen through tracking: the recursion count follows every lock
/// and unlock; a failed trylock and a timeout of another thread count as such.
#[test]
fn recursive_mutex_counts_in_the_info() {
    let _g = serial(Tracking::Counts);
    let m = RecursiveMutex::new(());
    m.set_name("glibc-recursive");
    let me = current_tid();
    let a = m.lock();
    let b = m.lock();
    let c = m.try_lock().unwrap();
    let s = m.snapshot().unwrap();
    assert_eq!((s.info.recursion, s.info.owner), (3, Some(me)), "{s:?}");
    in_other_thread(|| {
        assert!(m.try_lock().is_none());
        assert_eq!(
            m.lock_for(SHORT).map(drop).unwrap_err().kind(),
            ErrorKind::TimedOut
        );
    });
    let s = m.snapshot().unwrap();
    assert_eq!(s.stats.locks, 3, "{s:?}");
    assert_eq!(
        (s.stats.trylocks, s.stats.trylock_failures),
        (2, 1),
        "{s:?}"
    );
    assert_eq!(s.stats.contended, 0, "{s:?}");
    assert_eq!((s.stats.timed_waits, s.stats.timeouts), (1, 1), "{s:?}");
    no_waiter(&s);
    drop(b);
    assert_eq!(m.snapshot().unwrap().info.recursion, 2);
    drop(c);
    drop(a);
    let s = m.snapshot().unwrap();
    assert_eq!(
        (s.info.recursion, s.info.locked, s.info.owner),
        (0, false, None),
        "{s:?}"
    );
    sync::set_tracking(Tracking::Off);
}

/// tst-cond5 / tst-cond11 seen through tracking: timed waits that time out are
/// counted as waits, timed waits and timeouts; nobody is left waiting.
#[test]
fn condvar_timeouts_in_the_stats() {
    let _g = serial(Tracking::Counts);
    let m = PiMutex::new(());
    let cv = Condvar::new();
    cv.set_name("glibc-cond");
    let pcv = PiCondvar::new();
    pcv.set_name("glibc-picond");
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, SHORT));
    assert!(cv.wait_until(&mut g, past()));
    assert!(pcv.wait_for(&mut g, SHORT).unwrap());
    assert!(pcv.wait_until(&mut g, past()).unwrap());
    drop(g);
    for s in [cv.snapshot().unwrap(), pcv.snapshot().unwrap()] {
        assert_eq!(
            (s.stats.locks, s.stats.timed_waits, s.stats.timeouts),
            (2, 2, 2),
            "{s:?}"
        );
        no_waiter(&s);
    }
    assert!(!m.is_locked());
    sync::set_tracking(Tracking::Off);
}

/// tst-sem5 / tst-sem13 seen through tracking: after timed-out waits the
/// count is 0 and no waiter is left (glibc checks `nwaiters == 0`).
#[test]
fn semaphore_timeouts_leave_no_waiter() {
    let _g = serial(Tracking::Counts);
    let s = Semaphore::new(1).unwrap();
    s.set_name("glibc-sem");
    s.wait();
    assert_eq!(s.wait_for(SHORT).unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(
        s.wait_until(past()).unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    assert!(!s.try_wait());
    let snap = s.snapshot().unwrap();
    assert_eq!(snap.info.sem_count, Some(0));
    assert_eq!(snap.stats.locks, 1, "one successful wait: {snap:?}");
    assert_eq!(
        (snap.stats.trylocks, snap.stats.trylock_failures),
        (1, 1),
        "{snap:?}"
    );
    no_waiter(&snap);
    sync::set_tracking(Tracking::Off);
}

/// A semaphore's timed waits that time out are counted in its statistics
/// (timed waits, timeouts, their wait time): `rtstat` and `sync_inspect`
/// showed a semaphore that had timed-out waiters as never waited for. A timed
/// wait that gets the count at once, and an untimed one, are not timed
/// waits (that count is of the timed waits that blocked, as `contended`).
/// Neither timeout is an acquisition, so `contended` stays 0.
#[test]
fn semaphore_timeouts_in_the_stats() {
    let _g = serial(Tracking::Timing);
    let s = Semaphore::new(1).unwrap();
    s.set_name("glibc-sem-timed");
    s.wait_for(SHORT).unwrap();
    assert_eq!(s.wait_for(SHORT).unwrap_err().kind(), ErrorKind::TimedOut);
    assert_eq!(
        s.wait_until(past()).unwrap_err().kind(),
        ErrorKind::TimedOut
    );
    s.post().unwrap();
    s.wait();
    let snap = s.snapshot().unwrap();
    let st = &snap.stats;
    assert_eq!(
        (st.locks, st.contended, st.timed_waits, st.timeouts),
        (2, 0, 2, 2),
        "{snap:?}"
    );
    assert!(st.wait_total > Duration::ZERO, "{snap:?}");
    assert!(st.wait_max <= st.wait_total, "{snap:?}");
    no_waiter(&snap);
    sync::reset_stats();
    let st = s.snapshot().unwrap().stats;
    assert_eq!((st.timed_waits, st.timeouts), (0, 0), "{st:?}");
    assert_eq!(st.wait_total, Duration::ZERO, "{st:?}");
    sync::set_tracking(Tracking::Off);
}

/// tst-rwlock15 / tst-rwlock6 seen through tracking: a writer that timed out
/// and readers that timed out leave no waiter; the reader still holding is
/// counted; a refused relock by the writer (EDEADLK) leaves the writer named.
#[test]
fn rwlock_timeouts_and_relock_in_the_info() {
    let _g = serial(Tracking::Counts);
    quiet_expected_panic("posixrt RwLock: pthread_rwlock_");
    let l = RwLock::new(());
    let raw = unsafe { l.raw() };
    raw.set_name("glibc-rwlock");
    let r = l.read();
    in_other_thread(|| assert!(l.try_write_for(SHORT).is_none()));
    let s = raw.snapshot().unwrap();
    assert_eq!((s.info.readers, s.info.write_locked), (1, false), "{s:?}");
    no_waiter(&s);
    drop(r);
    let me = current_tid();
    let w = l.write();
    in_other_thread(|| {
        assert!(l.try_read_for(SHORT).is_none());
        assert!(l.try_write_for(SHORT).is_none());
    });
    let relock = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(l.read())));
    assert!(relock.is_err());
    let s = raw.snapshot().unwrap();
    assert_eq!(
        (s.info.owner, s.info.write_locked, s.info.readers),
        (Some(me), true, 0),
        "{s:?}"
    );
    no_waiter(&s);
    assert!(sync::find_deadlocks().is_empty());
    drop(w);
    let s = raw.snapshot().unwrap();
    assert_eq!((s.info.owner, s.info.locked), (None, false), "{s:?}");
    sync::set_tracking(Tracking::Off);
}

/// An rwlock's timed read and timed write that timed out are timed waits and
/// timeouts, with their wait time (the read's in `read_wait_total`, the
/// write's in `wait_total`); before, they left nothing in the statistics. A
/// timed write that blocked and then got the lock is a timed wait, not a
/// timeout; an untimed one is neither. A reset clears them all.
#[test]
fn rwlock_timeouts_in_the_stats() {
    let _g = serial(Tracking::Timing);
    let l = RwLock::new(());
    let raw = unsafe { l.raw() };
    raw.set_name("glibc-rwlock-timed");
    let w = l.write();
    in_other_thread(|| {
        assert!(l.try_read_for(SHORT).is_none());
        assert!(l.try_write_for(SHORT).is_none());
    });
    let s = raw.snapshot().unwrap();
    let st = &s.stats;
    assert_eq!((st.timed_waits, st.timeouts), (2, 2), "{s:?}");
    assert_eq!(
        (st.locks, st.contended, st.read_locks, st.read_contended),
        (1, 0, 0, 0),
        "timeouts acquire nothing: {s:?}"
    );
    assert!(st.wait_total > Duration::ZERO, "{s:?}");
    assert!(st.wait_max > Duration::ZERO, "{s:?}");
    assert!(st.wait_max <= st.wait_total, "{s:?}");
    assert!(st.read_wait_total > Duration::ZERO, "{s:?}");
    no_waiter(&s);
    std::thread::scope(|sc| {
        let timed = sc.spawn(|| drop(l.try_write_for(Duration::from_secs(600)).unwrap()));
        assert!(poll(|| raw.snapshot().unwrap().info.waiters == 1));
        drop(w);
        timed.join().unwrap();
    });
    let st = raw.snapshot().unwrap().stats;
    assert_eq!(
        (st.locks, st.contended, st.timed_waits, st.timeouts),
        (2, 1, 3, 2),
        "{st:?}"
    );
    sync::reset_stats();
    let st = raw.snapshot().unwrap().stats;
    assert_eq!((st.timed_waits, st.timeouts), (0, 0), "{st:?}");
    assert_eq!(st.wait_total, Duration::ZERO, "{st:?}");
    assert_eq!(st.wait_max, Duration::ZERO, "{st:?}");
    assert_eq!(st.read_wait_total, Duration::ZERO, "{st:?}");
    sync::set_tracking(Tracking::Off);
}

/// A ceiling mutex that becomes known through another thread's failed
/// trylock (tst-mutex2's EBUSY; it was locked before tracking was on) shows
/// its ceiling in `objects()` (what `rtstat` publishes), not 0.
#[test]
fn ceiling_known_first_by_a_failed_trylock_shows_its_ceiling() {
    let _g = serial(Tracking::Off);
    if !have_rt() {
        return;
    }
    let m = ceiling_mutex(7, ()).unwrap();
    let addr = unsafe { m.raw() } as *const _ as usize;
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let m = &m;
        s.spawn(move || {
            let _g = m.lock_checked().unwrap();
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        sync::set_tracking(Tracking::Counts);
        assert!(m.try_lock_checked().unwrap().is_none(), "held: EBUSY");
        let known = sync::objects()
            .into_iter()
            .find(|o| o.info.address == addr)
            .expect("known after the failed trylock");
        go_tx.send(()).unwrap();
        assert_eq!(known.info.ceiling, Some(7), "{known:?}");
        assert_eq!(known.stats.trylock_failures, 1);
    });
    sync::set_tracking(Tracking::Off);
}

/// Holds `lock` in another thread from before tracking is switched on, runs
/// `failing_try` (a trylock that finds it held, EBUSY) with tracking on, and
/// returns the known object at `addr` as `objects()` (and so `rtstat`) shows
/// it then, with the holder's tid.
fn known_through_a_failed_try<L: Sync>(
    l: &L,
    addr: usize,
    lock: impl Fn(&L, &dyn Fn()) + Sync,
    failing_try: impl Fn(&L) -> bool,
) -> (Snapshot, u32) {
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let got = std::thread::scope(|s| {
        let lock = &lock;
        s.spawn(move || {
            lock(l, &|| {
                held_tx.send(current_tid()).unwrap();
                go_rx.recv().unwrap();
            })
        });
        let holder = held_rx.recv().unwrap();
        sync::set_tracking(Tracking::Counts);
        assert!(!failing_try(l), "held: the trylock fails");
        let known = sync::objects()
            .into_iter()
            .find(|o| o.info.address == addr)
            .expect("known after the failed trylock");
        go_tx.send(()).unwrap();
        (known, holder)
    });
    let after = sync::objects()
        .into_iter()
        .find(|o| o.info.address == addr)
        .expect("still known");
    assert_eq!(
        (after.info.locked, after.info.owner),
        (false, None),
        "after the unlock: {after:?}"
    );
    sync::set_tracking(Tracking::Off);
    got
}

fn shows_holder((s, holder): (Snapshot, u32)) {
    assert_eq!(
        (s.info.locked, s.info.owner, s.stats.trylock_failures),
        (true, Some(holder), 1),
        "{s:?}"
    );
}

/// A mutex held since before tracking was switched on, made known by another
/// thread's failed trylock: `objects()` shows it locked by its holder (as it
/// does when a blocked locker makes it known), not free.
#[test]
fn mutexes_known_first_by_a_failed_trylock_show_their_holder() {
    let _g = serial(Tracking::Off);
    let p = PiMutex::new(());
    shows_holder(known_through_a_failed_try(
        &p,
        unsafe { p.raw() } as *const _ as usize,
        |m, hold| {
            let _g = m.lock();
            hold()
        },
        |m| m.try_lock().is_some(),
    ));
    let n = NormalMutex::new(());
    shows_holder(known_through_a_failed_try(
        &n,
        unsafe { n.raw() } as *const _ as usize,
        |m, hold| {
            let _g = m.lock();
            hold()
        },
        |m| m.try_lock().is_some(),
    ));
    let r = RecursiveMutex::new(());
    let (s, holder) = known_through_a_failed_try(
        &r,
        &r as *const _ as usize,
        |m, hold| {
            let _a = m.lock();
            let _b = m.lock();
            hold()
        },
        |m| m.try_lock().is_some(),
    );
    shows_holder((s.clone(), holder));
    assert_eq!(s.info.recursion, 2, "{s:?}");
    if have_rt() {
        let c = ceiling_mutex(9, ()).unwrap();
        shows_holder(known_through_a_failed_try(
            &c,
            unsafe { c.raw() } as *const _ as usize,
            |m, hold| {
                let _g = m.lock_checked().unwrap();
                hold()
            },
            |m| m.try_lock().is_some(),
        ));
    }
}

/// The same for a rwlock: write-locked before tracking, a failed try_read or
/// try_write shows the writer; read-locked, a failed try_write shows the
/// reader count.
#[test]
fn rwlock_known_first_by_a_failed_try_shows_its_state() {
    let _g = serial(Tracking::Off);
    for try_read in [true, false] {
        let l = RwLock::new(());
        let (s, holder) = known_through_a_failed_try(
            &l,
            unsafe { l.raw() } as *const _ as usize,
            |l, hold| {
                let _w = l.write();
                hold()
            },
            |l| {
                if try_read {
                    l.try_read().is_some()
                } else {
                    l.try_write().is_some()
                }
            },
        );
        assert_eq!(
            (s.info.write_locked, s.info.owner),
            (true, Some(holder)),
            "try_read {try_read}: {s:?}"
        );
    }
    let l = RwLock::new(());
    let (s, _) = known_through_a_failed_try(
        &l,
        unsafe { l.raw() } as *const _ as usize,
        |l, hold| {
            let _r = l.read();
            hold()
        },
        |l| l.try_write().is_some(),
    );
    assert_eq!((s.info.readers, s.info.locked), (1, true), "{s:?}");
}

/// tst-mutex2's EDEADLK relock, repeated while another thread looks: the
/// owner's refused relock is never a wait, so the owner is never listed as a
/// waiter of its own lock and `find_deadlocks` never reports a "cycle" of one
/// thread (the relock returns at once; nothing is stuck).
#[test]
fn a_refused_relock_is_never_listed_as_a_wait() {
    let _g = serial(Tracking::Counts);
    fn check<M: Sync>(
        m: &M,
        relock: impl Fn(&M) -> bool + Sync,
        waiters: impl Fn(&M) -> u32 + Sync,
    ) {
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (seen_waiter, seen_cycle) = std::thread::scope(|s| {
            let looker = s.spawn(|| {
                let (mut w, mut c) = (0u32, 0u32);
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    w += u32::from(waiters(m) != 0);
                    c += u32::from(!sync::find_deadlocks().is_empty());
                }
                (w, c)
            });
            let end = Instant::now() + Duration::from_millis(400);
            while Instant::now() < end {
                for _ in 0..1000 {
                    assert!(relock(m), "the relock is refused");
                }
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            looker.join().unwrap()
        });
        assert_eq!(
            (seen_waiter, seen_cycle),
            (0, 0),
            "waiter listings, self-cycles"
        );
    }
    let p = PiMutex::new(());
    let g = p.lock();
    check(
        &p,
        |m| m.lock_checked().map(drop).unwrap_err().kind() == ErrorKind::Deadlock,
        |m| unsafe { m.raw() }.snapshot().map_or(0, |s| s.info.waiters),
    );
    drop(g);
    let n = NormalMutex::new(());
    let g = n.lock();
    check(
        &n,
        |m| m.lock_checked().map(drop).unwrap_err().kind() == ErrorKind::Deadlock,
        |m| unsafe { m.raw() }.snapshot().map_or(0, |s| s.info.waiters),
    );
    drop(g);
    sync::set_tracking(Tracking::Off);
}
