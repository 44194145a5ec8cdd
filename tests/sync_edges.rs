//! Edge cases of posixrt::sync: try variants under contention, waits that unwind,
//! and the statistics and waiter lists they leave behind.
//!
//! Tracking is process-wide and scheduling is changed by some tests: every test
//! takes `LOCK`. Waits are bounded polls on states; nothing asserts a duration.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

#[path = "common/tracking.rs"]
mod tracking;
use tracking::{poll, serial};

#[path = "common/self_sched.rs"]
#[allow(dead_code)] // self_policy and set_self: other tests use them
mod self_sched;
use self_sched::have_rt;

use posixrt::sync::{
    self, ceiling_mutex, current_tid, Condvar, NormalMutex, PiCondvar, PiMutex, RecursiveMutex,
    RwLock, Semaphore, Tracking,
};

/// How long the threads of a contention test hammer a lock.
const SPIN: Duration = Duration::from_millis(300);

/// Runs `f` over and over in four threads that start together, each for
/// [`SPIN`].
fn in_four_threads_for_spin(f: impl Fn() + Sync) {
    let start = Barrier::new(4);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                start.wait();
                let end = Instant::now() + SPIN;
                while Instant::now() < end {
                    f();
                }
            });
        }
    });
}

/// Readers only, from several threads at once: nothing holds or waits for the write
/// lock, so every `try_read` must succeed (`pthread_rwlock_tryrdlock` fails only
/// when a writer holds the lock or is waiting for it).
#[test]
fn rwlock_try_read_never_fails_among_readers_alone() {
    let _g = serial(Tracking::Off);
    let l = RwLock::new(0u32);
    let fails = AtomicU32::new(0);
    in_four_threads_for_spin(|| match l.try_read() {
        Some(g) => drop(g),
        None => {
            fails.fetch_add(1, Ordering::Relaxed);
        }
    });
    assert_eq!(
        fails.load(Ordering::Relaxed),
        0,
        "try_read failed without a writer"
    );
}

/// Readers only: no read ever has to sleep, so none is counted as contended.
#[test]
fn rwlock_readers_alone_are_never_counted_contended() {
    let _g = serial(Tracking::Counts);
    let l = RwLock::new(0u32);
    unsafe { l.raw() }.set_name("readers-only");
    let reads = AtomicU32::new(0);
    in_four_threads_for_spin(|| {
        drop(l.read());
        reads.fetch_add(1, Ordering::Relaxed);
    });
    let st = unsafe { l.raw() }.snapshot().expect("known").stats;
    sync::set_tracking(Tracking::Off);
    assert_eq!(st.read_locks, u64::from(reads.load(Ordering::Relaxed)));
    assert_eq!(
        st.read_contended, 0,
        "reads that never slept counted as contended"
    );
}

/// A condvar waiter whose relock is refused panics out of `wait`; the condvar must
/// not go on counting it as a waiter (in `waiters()` and in the tracked info).
#[test]
fn condvar_wait_unwound_by_a_refused_relock_is_no_longer_a_waiter() {
    let _g = serial(Tracking::Counts);
    if !have_rt() {
        sync::set_tracking(Tracking::Off);
        return;
    }
    let m = Arc::new(ceiling_mutex(10, 0u32).unwrap());
    let cv = Arc::new(Condvar::new());
    cv.set_name("refused-relock");
    let (m2, cv2) = (m.clone(), cv.clone());
    let (tx, rx) = mpsc::channel();
    quiet_expected_panic("posixrt lock failed: pthread_mutex_lock(PRIO_PROTECT)");
    let waiter = std::thread::spawn(move || {
        // SAFETY: no arguments; reads the calling thread's policy.
        tx.send((current_tid(), unsafe { libc::sched_getscheduler(0) }))
            .unwrap();
        let mut g = m2.lock();
        while *g == 0 {
            cv2.wait(&mut g);
        }
    });
    let (waiter_tid, base_policy) = rx.recv().unwrap();
    // The wait's unlock frees the word first and restores the waiter's own class
    // after: wait for both, or the restore could undo the change below.
    assert!(poll(|| cv.waiters() == 1
        && !m.is_locked()
        // SAFETY: any tid is accepted; reads its policy.
        && unsafe { libc::sched_getscheduler(waiter_tid as i32) } == base_policy));
    // Behind the lock's back: the sleeping waiter now runs above the ceiling, so its
    // relock is refused (EINVAL) and `wait` panics.
    let p = libc::sched_param { sched_priority: 20 };
    // SAFETY: a valid sched_param for a thread of this process.
    let rc = unsafe { libc::sched_setscheduler(waiter_tid as i32, libc::SCHED_FIFO, &p) };
    assert_eq!(rc, 0);
    *m.lock() = 1;
    cv.notify_one();
    assert!(waiter.join().is_err(), "the refused relock panics");
    let snap = cv.snapshot().expect("known");
    sync::set_tracking(Tracking::Off);
    no_waiter_left(cv.waiters(), &snap);
}

/// The same for a `PiCondvar` whose relock fails on a deadlock cycle: the waiter
/// holds `n` while the mutex it must take back is held by a thread blocked on `n`.
#[test]
fn pi_condvar_wait_unwound_by_a_deadlocked_relock_is_no_longer_a_waiter() {
    let _g = serial(Tracking::Counts);
    let m = Arc::new(PiMutex::new(0u32));
    let n = Arc::new(PiMutex::new(()));
    let cv = Arc::new(PiCondvar::new());
    cv.set_name("deadlocked-relock");
    let (m2, n2, cv2) = (m.clone(), n.clone(), cv.clone());
    quiet_expected_panic("posixrt lock failed: futex(FUTEX_LOCK_PI)");
    let waiter = std::thread::spawn(move || {
        let _n = n2.lock();
        let mut g = m2.lock();
        // Bounded: whichever way the kernel refuses the cycle, this thread ends up
        // relocking `m` itself, which closes the cycle and is refused.
        while *g == 0 {
            cv2.wait_for(&mut g, Duration::from_secs(2)).unwrap();
        }
    });
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    let (m3, n3) = (m.clone(), n.clone());
    let blocker = std::thread::spawn(move || {
        let mut g = m3.lock();
        *g = 1;
        drop(n3.lock()); // blocks until the waiter unwinds and drops `n`
    });
    assert!(poll(|| unsafe { n.raw() }.has_waiters()));
    cv.notify_one();
    assert!(waiter.join().is_err(), "the deadlocked relock panics");
    blocker.join().unwrap();
    let snap = cv.snapshot().expect("known");
    sync::set_tracking(Tracking::Off);
    no_waiter_left(cv.waiters(), &snap);
}

/// A read lock that would overflow the reader count panics; the reader must not
/// stay counted or listed as a waiter of the lock, nor counted as a contended read.
#[test]
fn rwlock_reader_overflow_panics_without_leaving_a_waiter() {
    const MOST: u32 = (1 << 30) - 2;
    let _g = serial(Tracking::Counts);
    quiet_expected_panic("posixrt RwLock: reader count overflow");
    let l = RwLock::new(());
    let raw = unsafe { l.raw() };
    raw.set_name("overflowed");
    assert_eq!(
        unsafe { raw.force_readers(MOST + 1) }.unwrap_err().kind(),
        posixrt::ErrorKind::InvalidInput
    );
    // SAFETY: no guard of this lock exists; the forced read locks are forced off below.
    unsafe { raw.force_readers(MOST) }.unwrap();
    assert!(l.try_read().is_none(), "the count is full");
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(l.read())));
    let snap = raw.snapshot().expect("known");
    sync::set_tracking(Tracking::Off);
    assert!(r.is_err(), "the overflowing read panics");
    assert_eq!(snap.info.readers, MOST, "the count is unchanged");
    assert_eq!(snap.info.waiters, 0, "tracking still counts the reader");
    assert!(snap.waiters.is_empty(), "tracking still lists the reader");
    assert_eq!(snap.stats.read_contended, 0);
    // SAFETY: as above.
    unsafe { raw.force_unlock() };
    drop(l.write());
    assert_eq!(raw.readers(), 0);
}

/// After a waiter unwound: neither the condvar nor its tracked record counts or
/// lists it.
fn no_waiter_left(waiters: u32, snap: &sync::Snapshot) {
    assert_eq!(waiters, 0, "the unwound waiter is still counted");
    assert_eq!(
        snap.info.waiters, 0,
        "tracking still counts the unwound waiter"
    );
    assert!(
        snap.waiters.is_empty(),
        "tracking still lists the unwound waiter"
    );
}

/// A semaphore's lowest and highest counts include the counts its first tracked
/// operation saw: a wait that takes 3 to 2 has seen 3, posts that take 0 to 2 have
/// seen 0, and naming it sees its count.
#[test]
fn semaphore_count_extremes_include_what_the_first_operations_saw() {
    let _g = serial(Tracking::Counts);
    let taken = Semaphore::new(3).unwrap();
    taken.wait();
    let posted = Semaphore::new(0).unwrap();
    posted.post().unwrap();
    posted.post().unwrap();
    let named = Semaphore::new(5).unwrap();
    named.set_name("named");
    assert!(named.try_wait());
    let stats = |s: &Semaphore| {
        let st = s.snapshot().expect("known").stats;
        (st.min_count, st.max_count)
    };
    let (a, b, c) = (stats(&taken), stats(&posted), stats(&named));
    sync::set_tracking(Tracking::Off);
    assert_eq!(a, (2, 3), "(min, max) of a wait 3 -> 2");
    assert_eq!(b, (0, 2), "(min, max) of posts 0 -> 2");
    assert_eq!(c, (4, 5), "(min, max) of naming at 5, then 5 -> 4");
}

/// `objects()` (and so `rtstat`) shows a ceiling mutex's ceiling as it is after
/// `set_ceiling`, not the one it had when it was last locked.
#[test]
fn objects_show_the_ceiling_set_by_set_ceiling() {
    let _g = serial(Tracking::Counts);
    if !have_rt() {
        sync::set_tracking(Tracking::Off);
        return;
    }
    let m = ceiling_mutex(10, 0u32).unwrap();
    unsafe { m.raw() }.set_name("receiled");
    std::thread::scope(|s| {
        s.spawn(|| {
            *m.lock() += 1;
            assert_eq!(unsafe { m.raw() }.set_ceiling(20).unwrap(), 10);
        });
    });
    let addr = unsafe { m.raw() } as *const _ as usize;
    let listed = sync::objects()
        .into_iter()
        .find(|o| o.info.address == addr)
        .expect("listed");
    let own = unsafe { m.raw() }.snapshot().expect("known");
    sync::set_tracking(Tracking::Off);
    assert_eq!(own.info.ceiling, Some(20));
    assert_eq!(
        listed.info.ceiling,
        Some(20),
        "objects() shows the old ceiling"
    );
}

/// A ceiling mutex that becomes known through a contended lock (tracking switched
/// on while it was held) shows its ceiling in `objects()`, not 0.
#[test]
fn objects_show_the_ceiling_of_a_mutex_first_seen_contended() {
    let _g = serial(Tracking::Off);
    if !have_rt() {
        return;
    }
    let m = ceiling_mutex(10, 0u32).unwrap();
    let addr = unsafe { m.raw() } as *const _ as usize;
    let listed = || {
        sync::objects()
            .into_iter()
            .find(|o| o.info.address == addr)
            .expect("known through the contended lock")
    };
    let waiting = std::thread::scope(|s| {
        let g = m.lock();
        sync::set_tracking(Tracking::Counts);
        let waiter = s.spawn(|| *m.lock() += 1);
        assert!(poll(|| unsafe { m.raw() }.has_waiters()));
        let waiting = listed();
        drop(g);
        waiter.join().unwrap();
        waiting
    });
    let after = listed();
    sync::set_tracking(Tracking::Off);
    assert_eq!((waiting.info.waiters, after.stats.contended), (1, 1));
    assert_eq!(waiting.info.ceiling, Some(10), "objects() lost the ceiling");
    assert_eq!(after.info.ceiling, Some(10), "objects() lost the ceiling");
}

/// A recursive mutex first known through a relock (tracking switched on while it
/// was held) is listed by `objects()` as held by its owner, with its recursion.
#[test]
fn objects_show_the_owner_of_a_recursive_mutex_first_seen_relocked() {
    let _g = serial(Tracking::Off);
    let m = RecursiveMutex::new(());
    let outer = m.lock();
    sync::set_tracking(Tracking::Counts);
    let inner = m.lock();
    let addr = &m as *const _ as usize;
    let listed = sync::objects()
        .into_iter()
        .find(|o| o.info.address == addr)
        .expect("known through the relock");
    sync::set_tracking(Tracking::Off);
    drop(inner);
    drop(outer);
    let i = listed.info;
    assert_eq!(
        (i.locked, i.owner, i.recursion),
        (true, Some(current_tid()), 2),
        "objects() shows a held recursive mutex as free"
    );
}

/// How `objects()` lists `l`, held by `guard` (taken before tracking is
/// switched on), once tracking is on and a thread waits on it in `wait`;
/// the guard is then dropped and the waiter ends. Tracking is off again.
#[track_caller]
fn listed_while_a_thread_waits<G>(
    l: &RwLock<u32>,
    guard: G,
    wait: impl FnOnce() + Send,
) -> sync::Snapshot {
    let addr = unsafe { l.raw() } as *const _ as usize;
    let listed = || sync::objects().into_iter().find(|o| o.info.address == addr);
    let waiting = std::thread::scope(|s| {
        sync::set_tracking(Tracking::Counts);
        let waiter = s.spawn(wait);
        assert!(poll(|| listed().is_some_and(|o| o.info.waiters == 1)));
        let waiting = listed().expect("known through the waiter");
        drop(guard);
        waiter.join().unwrap();
        waiting
    });
    sync::set_tracking(Tracking::Off);
    waiting
}

/// An rwlock first known through a blocked writer (tracking switched on while
/// readers held it) is listed with its readers, not as free with a waiter.
#[test]
fn objects_show_the_readers_of_an_rwlock_first_seen_by_a_writer() {
    let _g = serial(Tracking::Off);
    let l = RwLock::new(0u32);
    let i = listed_while_a_thread_waits(&l, l.read(), || *l.write() += 1).info;
    assert_eq!(
        (i.locked, i.readers, i.write_locked),
        (true, 1, false),
        "objects() shows a read-held rwlock as free"
    );
}

/// Two threads that took one mutex each before tracking was switched on, then
/// block on each other's while it is on, form a cycle `find_deadlocks` reports:
/// the waiters name the owners they wait for.
#[test]
fn deadlock_over_mutexes_locked_before_tracking_is_found() {
    let _g = serial(Tracking::Off);
    let (a, b) = (NormalMutex::new(()), NormalMutex::new(()));
    let (ga, gb) = (Barrier::new(3), Barrier::new(3));
    let found = std::thread::scope(|s| {
        let cross = |mine: &'static str| {
            let (first, second) = if mine == "a" { (&a, &b) } else { (&b, &a) };
            let (ga, gb) = (&ga, &gb);
            move || {
                let _held = first.lock();
                ga.wait(); // both hold theirs; tracking goes on
                gb.wait();
                // Bounded: both give up, the cycle is only looked at meanwhile.
                assert!(second.try_lock_for(Duration::from_secs(2)).is_none());
                ga.wait(); // keep holding until both have given up
            }
        };
        s.spawn(cross("a"));
        s.spawn(cross("b"));
        ga.wait();
        sync::set_tracking(Tracking::Counts);
        gb.wait();
        let mut found = Vec::new();
        poll(|| {
            found = sync::find_deadlocks();
            !found.is_empty()
        });
        ga.wait();
        found
    });
    sync::set_tracking(Tracking::Off);
    assert_eq!(found.len(), 1, "the cycle is not found: {found:?}");
    assert_eq!(found[0].threads.len(), 2);
}

/// An rwlock write-locked before tracking was switched on, first known through a
/// blocked reader, is listed with its writer.
#[test]
fn objects_show_the_writer_of_an_rwlock_first_seen_by_a_reader() {
    let _g = serial(Tracking::Off);
    let l = RwLock::new(0u32);
    let i = listed_while_a_thread_waits(&l, l.write(), || {
        let _ = *l.read();
    })
    .info;
    assert_eq!(
        (i.locked, i.write_locked, i.owner),
        (true, true, Some(current_tid())),
        "objects() shows a write-held rwlock as free"
    );
}

/// A lock of an `RwLock` by the thread that holds its write lock (write, read, or
/// their timed forms) would wait for itself forever: it is refused with a panic
/// naming EDEADLK (what `pthread_rwlock_wrlock` and `_rdlock` report there), as the
/// mutex kinds refuse a relock by their owner, and the write guard then unwinds.
#[test]
fn rwlock_relock_by_its_writer_panics_instead_of_hanging() {
    let _g = serial(Tracking::Counts);
    quiet_expected_panic("posixrt RwLock");
    let l = Arc::new(RwLock::new(0u32));
    for how in 0..4 {
        let (tx, rx) = mpsc::channel();
        let l2 = Arc::clone(&l);
        std::thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _w = l2.write();
                let long = Duration::from_secs(3600);
                match how {
                    0 => drop(l2.write()),
                    1 => drop(l2.read()),
                    2 => drop(l2.try_write_for(long)),
                    _ => drop(l2.try_read_for(long)),
                }
            }));
            let msg = r.err().map(|p| {
                p.downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_else(|| "a panic without a message".into())
            });
            let _ = tx.send(msg);
        });
        let msg = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("relock {how} by the writer hangs"));
        let msg = msg.unwrap_or_else(|| panic!("relock {how} by the writer succeeded"));
        assert!(msg.contains("EDEADLK"), "{msg}");
        // Refused before it became a waiter, and the write guard unwound.
        assert!(!l.is_locked());
        let s = unsafe { l.raw() }.snapshot().expect("known");
        assert_eq!((s.info.waiters, s.waiters.len()), (0, 0), "{s:?}");
    }
    // The writer's own try_write and try_read only fail (the lock is busy).
    let _w = l.write();
    assert!(l.try_write().is_none() && l.try_read().is_none());
}

/// A recursive mutex's timed lock gives a `Result` of a guard that can be
/// unwrapped both ways, as the `lock_api` guards' can: the guard is `Debug` (its
/// data's `Debug`), so `unwrap_err` and `{:?}` compile.
#[test]
fn recursive_timed_lock_refusal_unwraps_and_its_guard_prints() {
    let _g = serial(Tracking::Off);
    let m = RecursiveMutex::new(7u32);
    let g = m.lock();
    assert_eq!(format!("{g:?}"), "7");
    std::thread::scope(|s| {
        s.spawn(|| {
            let e = m.lock_for(Duration::ZERO).unwrap_err();
            assert_eq!(e.kind(), posixrt::ErrorKind::TimedOut);
        });
    });
    drop(g);
}

/// A name longer than the record holds (32 bytes) is cut at a character
/// boundary: introspection shows the longest prefix of whole characters that
/// fits, never a character cut in two (U+FFFD). A name that fits is kept.
#[test]
fn a_long_name_is_cut_at_a_character_boundary() {
    let _g = serial(Tracking::Off);
    let name = |s: &Semaphore| s.snapshot().expect("named: known").info.name;
    // 'a' then 20 two-byte characters: 41 bytes, and byte 32 is inside a 'ä'.
    let long = format!("a{}", "ä".repeat(20));
    let cut = Semaphore::new(0).unwrap();
    cut.set_name(&long);
    assert_eq!(name(&cut), Some(format!("a{}", "ä".repeat(15))));
    let fits = Semaphore::new(0).unwrap();
    fits.set_name("ää-named");
    assert_eq!(name(&fits).as_deref(), Some("ää-named"));
}
