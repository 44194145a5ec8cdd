//! `reset_stats` while other threads use the objects: the statistics after a
//! reset count what happened after it, never a mix of before and after (a
//! hold or a wait begun before the reset, a count stored back over the reset
//! by a thread that read it before).
//!
//! Tracking is process-wide: every test holds `serial`. Nothing asserts a
//! duration: waits are bounded polls, and the stress runs a bounded number of
//! rounds within a bounded time.

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use posixrt::sync::{
    objects, reset_stats, Condvar, NormalMutex, PiMutex, RwLock, Semaphore, Snapshot, Stats,
    Tracking,
};

/// A hold begun before the reset and ended after it is not counted: before,
/// its whole time (most of it before the reset) was added to a hold total the
/// reset had zeroed, with no acquisition counted.
#[test]
fn a_hold_across_the_reset_adds_no_hold_time() {
    let _g = serial(Tracking::Timing);
    let n = NormalMutex::new(());
    let p = PiMutex::new(());
    // SAFETY (both raw() calls): the raw locks are only named and read.
    unsafe { n.raw() }.set_name("reset-hold-normal");
    unsafe { p.raw() }.set_name("reset-hold-pi");
    let (gn, gp) = (n.lock(), p.lock());
    reset_stats();
    drop((gn, gp));
    let sn = unsafe { n.raw() }.snapshot().expect("named");
    let sp = unsafe { p.raw() }.snapshot().expect("named");
    for s in [sn, sp] {
        assert_eq!(s.stats.locks, 0, "{:?}", s.info.name);
        assert_eq!(
            (s.stats.hold_total, s.stats.hold_max),
            (Duration::ZERO, Duration::ZERO),
            "a hold begun before the reset: {:?}",
            s.info.name
        );
    }
    // The next hold is counted as usual.
    drop(n.lock());
    let s = unsafe { n.raw() }.snapshot().expect("named");
    assert_eq!(s.stats.locks, 1);
}

/// A condvar wait begun before the reset and ended after it is not counted
/// at its end either (its start was counted before the reset): before, a
/// timeout (or its wait time) showed with no wait counted.
#[test]
fn a_condvar_wait_across_the_reset_is_not_counted_at_its_end() {
    let _g = serial(Tracking::Timing);
    let m = NormalMutex::new(());
    let cv = Condvar::new();
    cv.set_name("reset-cv");
    let cv_snap = || cv.snapshot().expect("named");
    std::thread::scope(|s| {
        // Ended by a notify.
        let t = s.spawn(|| {
            let mut g = m.lock();
            cv.wait_for(&mut g, Duration::from_secs(30))
        });
        assert!(poll(|| cv_snap().info.waiters == 1), "the waiter is listed");
        reset_stats();
        poll(|| {
            cv.notify_one();
            t.is_finished()
        });
        assert!(!t.join().expect("waiter"), "notified, not timed out");
    });
    let st = cv_snap().stats;
    assert_eq!((st.locks, st.timed_waits), (0, 0), "{st:?}");
    assert_eq!(st.wait_total, Duration::ZERO, "{st:?}");
    std::thread::scope(|s| {
        // Ended by its timeout, after the reset.
        let t = s.spawn(|| {
            let mut g = m.lock();
            cv.wait_for(&mut g, Duration::from_millis(300))
        });
        assert!(poll(|| cv_snap().info.waiters == 1), "the waiter is listed");
        reset_stats();
        let timed_out = t.join().expect("waiter");
        let st = cv_snap().stats;
        assert!(
            st.timeouts <= st.timed_waits,
            "a timeout of a wait begun before the reset: {st:?} (timed out: {timed_out})"
        );
    });
}

/// Invariants of one object's statistics at any moment.
fn check(s: &Snapshot) {
    let st: &Stats = &s.stats;
    let name = &s.info.name;
    assert!(st.contended <= st.locks, "{name:?}: {st:?}");
    assert!(st.trylock_failures <= st.trylocks, "{name:?}: {st:?}");
    assert!(st.hold_max <= st.hold_total, "{name:?}: {st:?}");
    assert!(st.wait_max <= st.wait_total, "{name:?}: {st:?}");
    assert!(st.read_contended <= st.read_locks, "{name:?}: {st:?}");
    assert!(st.timeouts <= st.timed_waits, "{name:?}: {st:?}");
    if st.hold_total > Duration::ZERO {
        assert!(st.locks > 0, "hold time with no hold: {name:?}: {st:?}");
    }
    for v in [
        st.locks,
        st.contended,
        st.trylocks,
        st.trylock_failures,
        st.read_locks,
        st.posts,
    ] {
        assert!(v < 1 << 40, "a count wrapped below zero: {name:?}: {st:?}");
    }
}

/// Resets while threads lock, trylock, read, write, wait and post: after
/// each reset the counts stay within what was done after it began, and no
/// snapshot (taken right after a reset, or by a thread meanwhile) breaks the
/// invariants.
#[test]
fn resets_under_load_keep_the_statistics_consistent() {
    let _g = serial(Tracking::Timing);
    let m = NormalMutex::new(0u64);
    let p = PiMutex::new(0u64);
    let rw = RwLock::new(0u64);
    let sem = Semaphore::new(1).expect("semaphore");
    unsafe { m.raw() }.set_name("reset-stress-normal");
    unsafe { p.raw() }.set_name("reset-stress-pi");
    unsafe { rw.raw() }.set_name("reset-stress-rw");
    sem.set_name("reset-stress-sem");
    // Acquisitions begun (counted before each lock call) per object.
    let begun = [const { AtomicU64::new(0) }; 4];
    const WORKERS: u64 = 3;
    let stop = AtomicBool::new(false);
    let end = Instant::now() + Duration::from_millis(800);
    /// Stops the threads also when an assertion fails (the scope waits for them).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        let _stop = Stop(&stop);
        for w in 0..WORKERS {
            let (m, p, rw, sem, begun, stop) = (&m, &p, &rw, &sem, &begun, &stop);
            s.spawn(move || {
                let mut i = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    begun[0].fetch_add(1, Ordering::SeqCst);
                    if i % 3 == 0 {
                        if let Some(mut g) = m.try_lock() {
                            *g += 1;
                        }
                    } else {
                        *m.lock() += 1;
                    }
                    begun[1].fetch_add(1, Ordering::SeqCst);
                    *p.lock() += 1;
                    begun[2].fetch_add(1, Ordering::SeqCst);
                    if (i + w) % 4 == 0 {
                        *rw.write() += 1;
                    } else if i % 5 == 0 {
                        let _ = rw.try_read().map(|g| *g);
                    } else {
                        let _ = *rw.read();
                    }
                    begun[3].fetch_add(1, Ordering::SeqCst);
                    if i % 2 == 0 {
                        if sem.try_wait() {
                            let _ = sem.post();
                        }
                    } else if sem.wait_for(Duration::from_secs(5)).is_ok() {
                        let _ = sem.post();
                    }
                }
            });
        }
        // A reader checking every snapshot meanwhile.
        s.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                for o in objects() {
                    if o.info
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with("reset-stress"))
                    {
                        check(&o);
                    }
                }
                std::thread::yield_now();
            }
        });
        let snaps = || {
            [
                unsafe { m.raw() }.snapshot().expect("named"),
                unsafe { p.raw() }.snapshot().expect("named"),
                unsafe { rw.raw() }.snapshot().expect("named"),
                sem.snapshot().expect("named"),
            ]
        };
        let mut rounds = 0;
        while rounds < 2000 && Instant::now() < end {
            rounds += 1;
            let before: Vec<u64> = begun.iter().map(|b| b.load(Ordering::SeqCst)).collect();
            reset_stats();
            for _ in 0..(rounds % 7) {
                std::thread::yield_now();
            }
            let snap = snaps();
            let after: Vec<u64> = begun.iter().map(|b| b.load(Ordering::SeqCst)).collect();
            for (k, o) in snap.iter().enumerate() {
                check(o);
                // Those begun after `before` was read, and those under way then.
                let bound = after[k] - before[k] + WORKERS;
                let st = &o.stats;
                assert!(
                    st.locks + st.read_locks <= bound,
                    "{:?}: {} acquisitions counted, at most {bound} made since the reset: {st:?}",
                    o.info.name,
                    st.locks + st.read_locks
                );
            }
        }
    });
}
