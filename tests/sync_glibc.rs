//! What glibc 2.36's nptl tests check of mutexes, semaphores and rwlocks
//! (`tst-mutex*`, `tst-mutexpi*`, `tst-mutexpp*`, `tst-sem*`, `tst-rwlock*`),
//! asserted of posixrt's equivalents where the API has one (the condvar checks,
//! `tst-cond*`, are in sync_glibc_cond.rs).
//! posixrt's mutexes are error-checking (a relock by the owner is EDEADLK, also
//! for a timed lock), so glibc's default-type expectations (ETIMEDOUT) map to
//! EDEADLK here, as for glibc's `PTHREAD_MUTEX_ERRORCHECK`. Waits are bounded;
//! nothing asserts a duration.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

#[path = "common/waits.rs"]
mod waits;
use waits::{past, poll};

#[path = "common/self_sched.rs"]
mod self_sched;
use self_sched::{have_rt, self_policy, set_self};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use lock_api::{Mutex, RawMutex};
use posixrt::sync::{
    ceiling_mutex, current_tid, Condvar, MutexExt, NormalMutex, PiCondvar, PiMutex,
    RawMutexChecked, RecursiveMutex, RwLock, Semaphore, SEM_VALUE_MAX,
};
use posixrt::ErrorKind;

// ---------------------------------------------------------------- mutexes

/// tst-mutex2 / tst-mutexpi2 / tst-mutex-errorcheck / tst-mutex5: an
/// error-checking mutex. The owner's trylock is busy, its lock and its timed
/// lock (even with a deadline already past) are EDEADLK; another thread's
/// trylock is busy and its timed lock times out; a timed lock of a free mutex
/// with a past deadline takes it.
fn errorcheck<R: RawMutexChecked + Sync>(m: &Mutex<R, u32>) {
    let g = m
        .lock_until_checked(past())
        .expect("free: a past deadline still locks");
    assert!(
        m.try_lock_checked().unwrap().is_none(),
        "the owner's trylock: busy"
    );
    let e = m.lock_checked().map(drop).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::Deadlock, Some(libc::EDEADLK))
    );
    let e = m.lock_until_checked(past()).map(drop).unwrap_err();
    assert_eq!(
        e.errno(),
        Some(libc::EDEADLK),
        "timed relock by the owner: {e}"
    );
    let e = m
        .lock_for_checked(Duration::from_millis(20))
        .map(drop)
        .unwrap_err();
    assert_eq!(
        e.errno(),
        Some(libc::EDEADLK),
        "timed relock by the owner: {e}"
    );
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(m.try_lock_checked().unwrap().is_none(), "held: busy");
            let e = m
                .lock_for_checked(Duration::from_millis(20))
                .map(drop)
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
            let e = m.lock_until_checked(past()).map(drop).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut, "past deadline, held: {e}");
        });
    });
    assert!(
        m.is_locked(),
        "the failed attempts left the owner's lock alone"
    );
    drop(g);
    assert!(!m.is_locked());
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut g = m
                .try_lock_checked()
                .unwrap()
                .expect("free: trylock takes it");
            *g += 1;
        });
    });
    assert_eq!(*m.lock(), 1);
}

#[test]
fn pi_mutex_is_error_checking() {
    errorcheck(&PiMutex::new(0));
}

#[test]
fn normal_mutex_is_error_checking() {
    errorcheck(&NormalMutex::new(0));
}

#[test]
fn ceiling_mutex_is_error_checking() {
    if !have_rt() {
        return;
    }
    // The holder runs at the ceiling: do it in a thread of its own.
    std::thread::spawn(|| errorcheck(&ceiling_mutex(1, 0).unwrap()))
        .join()
        .unwrap();
}

/// tst-mutex3 / tst-mutexpi3: a recursive mutex. The owner locks, locks again
/// and trylocks (count 3); another thread's trylock and timed lock fail while
/// any of the three is held; a timed relock by the owner with a past deadline
/// is a relock, not a timeout; the lock is free after the third unlock.
#[test]
fn recursive_mutex_counts_like_glibc() {
    let m = RecursiveMutex::new(7u32);
    let me = current_tid();
    let a = m.lock();
    let b = m.lock();
    let c = m.try_lock().expect("the owner's trylock relocks");
    assert_eq!((m.recursion(), m.owner()), (3, Some(me)));
    let d = m.lock_until(past()).expect("the owner's timed relock");
    assert_eq!(m.recursion(), 4);
    drop(d);
    let other = |m: &RecursiveMutex<u32>| {
        std::thread::scope(|s| {
            s.spawn(|| {
                assert!(m.try_lock().is_none(), "held by another thread");
                let e = m.lock_for(Duration::from_millis(10)).map(drop).unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut, "{e}");
            });
        })
    };
    other(&m);
    drop(c);
    assert_eq!(m.recursion(), 2);
    other(&m);
    drop(a); // out of order: the count is what matters
    assert_eq!((m.recursion(), m.owner()), (1, Some(me)));
    other(&m);
    assert_eq!(*b, 7);
    drop(b);
    assert_eq!((m.recursion(), m.owner()), (0, None));
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = m.try_lock().expect("free now");
            assert_eq!(m.recursion(), 1);
            drop(g);
        });
    });
}

/// tst-mutex7 / tst-mutexpi7: many threads lock and unlock while the main
/// thread holds the lock at first; every increment is kept.
fn mutex_stress<R: RawMutex + Sync>(m: &Mutex<R, u64>) {
    const THREADS: u64 = 8;
    const ROUNDS: u64 = 2_000;
    let start = Barrier::new(THREADS as usize + 1);
    std::thread::scope(|s| {
        let g = m.lock();
        for _ in 0..THREADS {
            s.spawn(|| {
                start.wait();
                for _ in 0..ROUNDS {
                    *m.lock() += 1;
                }
            });
        }
        start.wait();
        std::thread::sleep(Duration::from_millis(2));
        drop(g);
    });
    assert_eq!(*m.lock(), THREADS * ROUNDS);
    assert!(!m.is_locked());
}

#[test]
fn pi_mutex_stress() {
    mutex_stress(&PiMutex::new(0));
}

#[test]
fn normal_mutex_stress() {
    mutex_stress(&NormalMutex::new(0));
}

/// The calling thread's priority as the kernel has it (glibc's "boosted").
fn kernel_prio() -> i32 {
    self_policy().1
}

/// tst-mutexpp10: nested ceilings at SCHED_FIFO 4 with ceilings 6, 8 and 5:
/// the thread runs at the highest ceiling it holds, whatever the unlock order;
/// set_ceiling returns the old ceiling and leaves the priority; a thread whose
/// priority is above a ceiling gets EINVAL and keeps its priority.
#[test]
fn ceiling_nesting_like_tst_mutexpp10() {
    if !have_rt() {
        let e = ceiling_mutex(6, ())
            .unwrap()
            .lock_checked()
            .map(drop)
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    // The attribute's range (tst-mutexpp10's setprioceiling checks).
    for bad in [0, 100] {
        let e = ceiling_mutex(bad, ()).map(drop).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}: {e}");
    }
    assert!(ceiling_mutex(1, ()).is_ok() && ceiling_mutex(99, ()).is_ok());
    std::thread::spawn(|| {
        set_self(libc::SCHED_FIFO, 4).unwrap();
        let m1 = ceiling_mutex(6, ()).unwrap();
        let m2 = ceiling_mutex(8, ()).unwrap();
        let m3 = ceiling_mutex(5, ()).unwrap();
        assert_eq!(kernel_prio(), 4);
        let g1 = m1.lock_checked().unwrap();
        assert_eq!(kernel_prio(), 6);
        let g2 = m2.try_lock_checked().unwrap().expect("free");
        assert_eq!(kernel_prio(), 8);
        let g3 = m3.lock_checked().unwrap();
        assert_eq!(kernel_prio(), 8);
        drop(g2);
        assert_eq!(kernel_prio(), 6);
        drop(g1);
        assert_eq!(kernel_prio(), 5);
        let g2 = m2.lock_checked().unwrap();
        assert_eq!(kernel_prio(), 8);
        drop(g2);
        assert_eq!(kernel_prio(), 5);
        let raw = |m: &posixrt::sync::CeilingMutex<()>| unsafe { m.raw() }.ceiling();
        assert_eq!((raw(&m1), raw(&m2), raw(&m3)), (6, 8, 5));
        assert_eq!(unsafe { m1.raw() }.set_ceiling(7).unwrap(), 6);
        assert_eq!(raw(&m1), 7);
        assert_eq!(kernel_prio(), 5, "set_ceiling's own lock is undone");
        let e = unsafe { m1.raw() }.set_ceiling(100).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(raw(&m1), 7);
        drop(g3);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 4));
        let g1 = m1.try_lock_checked().unwrap().expect("free");
        assert_eq!(kernel_prio(), 7);
        drop(g1);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 4));
        // Above the ceiling 5: EINVAL, the priority is unchanged.
        set_self(libc::SCHED_FIFO, 8).unwrap();
        let e = m3.lock_checked().map(drop).unwrap_err();
        assert_eq!(
            (e.kind(), e.errno()),
            (ErrorKind::InvalidInput, Some(libc::EINVAL))
        );
        assert!(m3.try_lock_checked().is_err(), "a trylock too");
        assert!(!m3.is_locked());
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 8));
        // At the ceiling exactly: allowed, nothing to raise.
        drop(m2.lock_checked().unwrap());
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 8));
    })
    .join()
    .unwrap();
}

// ---------------------------------------------------------------- semaphores

/// tst-sem1 / tst-sem15: the initial value is at most SEM_VALUE_MAX (EINVAL);
/// a trywait on 0 fails (EAGAIN) and leaves 0; a post at SEM_VALUE_MAX is
/// EOVERFLOW and leaves the value.
#[test]
fn semaphore_limits() {
    let e = Semaphore::new(SEM_VALUE_MAX + 1).map(drop).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let s = Semaphore::new(1).unwrap();
    assert!(s.try_wait());
    assert!(!s.try_wait(), "0: EAGAIN");
    assert_eq!(s.value(), 0);
    let s = Semaphore::new(SEM_VALUE_MAX).unwrap();
    let e = s.post().unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::InvalidInput, Some(libc::EOVERFLOW))
    );
    assert_eq!(s.value(), SEM_VALUE_MAX);
    assert!(s.try_wait());
    s.post().unwrap();
    assert_eq!(s.value(), SEM_VALUE_MAX);
}

/// tst-sem5 / tst-sem13: a timed wait on 0 times out (also with a past
/// deadline), leaves the value 0 and no waiter counted; with a positive value
/// a past deadline does not matter (POSIX: checked only when it must block).
#[test]
fn semaphore_timed_waits() {
    let s = Semaphore::new(1).unwrap();
    s.wait();
    let e = s.wait_for(Duration::from_millis(20)).unwrap_err();
    assert_eq!(
        (e.kind(), e.errno()),
        (ErrorKind::TimedOut, Some(libc::ETIMEDOUT))
    );
    assert_eq!((s.value(), s.waiters()), (0, 0));
    let e = s.wait_until(past()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    assert_eq!((s.value(), s.waiters()), (0, 0));
    s.post().unwrap();
    s.wait_until(past()).expect("positive: taken at once");
    assert_eq!(s.value(), 0);
}

/// tst-sem2/3: posts from another thread release blocked waiters one each.
#[test]
fn semaphore_posts_release_waiters() {
    let s = Semaphore::new(0).unwrap();
    let done = AtomicU32::new(0);
    std::thread::scope(|sc| {
        for _ in 0..4 {
            sc.spawn(|| {
                s.wait();
                done.fetch_add(1, Ordering::SeqCst);
            });
        }
        assert!(poll(|| s.waiters() == 4));
        for i in 1..=4 {
            s.post().unwrap();
            assert!(poll(|| done.load(Ordering::SeqCst) == i));
        }
    });
    assert_eq!((s.value(), s.waiters()), (0, 0));
}

// ---------------------------------------------------------------- rwlocks

/// tst-rwlock2 / tst-rwlock4: a writer makes every trylock busy (its own too);
/// readers make trywrlock busy and let tryrdlock in.
#[test]
fn rwlock_trylocks() {
    let l = RwLock::new(0u32);
    let w = l.write();
    assert!(
        l.try_read().is_none() && l.try_write().is_none(),
        "the writer's own"
    );
    std::thread::scope(|s| {
        s.spawn(|| assert!(l.try_read().is_none() && l.try_write().is_none()));
    });
    drop(w);
    let r = l.read();
    std::thread::scope(|s| {
        s.spawn(|| {
            assert!(l.try_write().is_none(), "read-locked: trywrlock busy");
            assert!(l.try_read().is_some(), "read-locked: tryrdlock in");
        });
    });
    assert!(l.try_write().is_none());
    drop(r);
    assert!(l.try_write().is_some());
}

/// tst-rwlock6 / tst-rwlock7 / tst-rwlock12: timed locks against a writer
/// held by another thread time out (also with a past deadline); against a free
/// lock they take it at once even with a past deadline.
#[test]
fn rwlock_timed_locks() {
    let l = RwLock::new(0u32);
    assert!(l.try_read_until(past()).is_some());
    assert!(l.try_write_until(past()).is_some());
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (held_tx, held_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let l = &l;
        s.spawn(move || {
            let _w = l.write();
            held_tx.send(()).unwrap();
            rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        let d = Duration::from_millis(20);
        assert!(l.try_read_for(d).is_none());
        assert!(l.try_write_for(d).is_none());
        assert!(l.try_read_until(past()).is_none());
        assert!(l.try_write_until(past()).is_none());
        tx.send(()).unwrap();
    });
    assert!(l.try_write_for(Duration::from_millis(20)).is_some());
}

/// tst-rwlock3 / tst-rwlock6: a read or write lock (timed too) by the writer
/// itself is EDEADLK; posixrt panics with it (documented) and the writer
/// still holds the lock afterwards.
#[test]
fn rwlock_relock_by_the_writer_is_edeadlk() {
    quiet_expected_panic("posixrt RwLock: pthread_rwlock_");
    let l = RwLock::new(0u32);
    let w = l.write();
    let d = Duration::from_millis(20);
    let tries: [&dyn Fn(); 4] = [
        &|| drop(l.read()),
        &|| drop(l.write()),
        &|| drop(l.try_read_for(d)),
        &|| drop(l.try_write_for(d)),
    ];
    for f in tries {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
        let msg = r.expect_err("refused with a panic");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("EDEADLK"), "{msg}");
        assert!(l.is_locked_exclusive(), "still held by the writer");
    }
    drop(w);
    assert!(!l.is_locked());
    assert!(l.try_write().is_some());
}

/// tst-rwlock15: a preferred writer that times out because a reader holds the
/// lock must wake the readers that blocked behind it.
#[test]
fn rwlock_writer_timeout_wakes_the_readers_behind_it() {
    let l = RwLock::new(0u32);
    let r1 = l.read();
    std::thread::scope(|s| {
        let writer = s.spawn(|| l.try_write_for(Duration::from_millis(300)).is_some());
        // The writer waits: a SCHED_OTHER reader now waits behind it.
        assert!(poll(|| l.try_read().is_none()));
        let reader = s.spawn(|| *l.read());
        assert!(!writer.join().unwrap(), "the writer times out (r1 is held)");
        assert_eq!(reader.join().unwrap(), 0, "the reader got in after it");
    });
    drop(r1);
    assert!(!l.is_locked());
}

/// tst-rwlock-pwn / tst-rwlock16 (writer-preferring lock, readers and writers
/// in a loop): nothing stalls, every write is kept.
#[test]
fn rwlock_mixed_loop_does_not_stall() {
    let l = RwLock::new(0u64);
    let writes = AtomicU32::new(0);
    let end = Instant::now() + Duration::from_millis(300);
    std::thread::scope(|s| {
        for t in 0..3u64 {
            let (l, writes) = (&l, &writes);
            s.spawn(move || {
                let mut x = t.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                while Instant::now() < end {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    if x & 1 == 0 {
                        *l.write() += 1;
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        let _ = *l.read();
                    }
                }
            });
        }
    });
    assert_eq!(*l.read(), u64::from(writes.load(Ordering::Relaxed)));
    assert!(!l.is_locked());
}

/// tst-rwlock8/9 with writers preferred: while a writer waits, a new
/// (SCHED_OTHER) reader waits too; once the first reader leaves, the writer
/// goes first, then the reader.
#[test]
fn rwlock_prefers_a_waiting_writer() {
    let l = RwLock::new(Vec::new());
    let r1 = l.read();
    std::thread::scope(|s| {
        let w = s.spawn(|| l.write().push("writer"));
        assert!(poll(|| l.try_read().is_none()), "the writer waits");
        let (checked_tx, checked_rx) = std::sync::mpsc::channel();
        let l = &l;
        let r = s.spawn(move || {
            // r1 is held until this is reported: the writer still waits.
            let timed_out = l.try_read_for(Duration::from_millis(20)).is_none();
            checked_tx.send(()).unwrap();
            let g = l.read();
            (timed_out, g.clone())
        });
        checked_rx.recv().unwrap();
        drop(r1);
        w.join().unwrap();
        let (timed_out, seen) = r.join().unwrap();
        assert!(timed_out, "a reader waits while a writer waits");
        assert_eq!(seen, ["writer"], "the reader came after the writer");
    });
}

/// tst-mutexpp5 nested: at SCHED_FIFO 4 holding a ceiling-6 mutex, a timed
/// lock and a trylock of a ceiling-8 mutex held elsewhere fail (ETIMEDOUT,
/// EBUSY) and leave the thread at 6, the ceiling it still holds; the unlock
/// then restores 4.
#[test]
fn ceiling_failed_nested_locks_keep_the_held_ceiling() {
    if !have_rt() {
        return;
    }
    let m2 = ceiling_mutex(8, ()).unwrap();
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|s| {
        let m2 = &m2;
        s.spawn(move || {
            let _g = m2.lock_checked().unwrap();
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
        });
        held_rx.recv().unwrap();
        let r = s
            .spawn(move || {
                set_self(libc::SCHED_FIFO, 4).unwrap();
                let m1 = ceiling_mutex(6, ()).unwrap();
                let g1 = m1.lock_checked().unwrap();
                assert_eq!(kernel_prio(), 6);
                let e = m2
                    .lock_for_checked(Duration::from_millis(10))
                    .map(drop)
                    .unwrap_err();
                assert_eq!(e.kind(), ErrorKind::TimedOut);
                assert_eq!(self_policy(), (libc::SCHED_FIFO, 6), "after the timeout");
                assert!(m2.try_lock_checked().unwrap().is_none());
                assert_eq!(
                    self_policy(),
                    (libc::SCHED_FIFO, 6),
                    "after the busy trylock"
                );
                drop(g1);
                assert_eq!(self_policy(), (libc::SCHED_FIFO, 4));
            })
            .join();
        // Release the holder first, so that a failure above cannot hang.
        go_tx.send(()).unwrap();
        r.unwrap();
    });
}

/// Far deadlines (glibc's timed calls accept any valid timespec; here an
/// `Instant` 2^40 s ahead, and `Duration::MAX` timeouts): a wait that is then
/// satisfied returns success, not EINVAL or a timeout.
#[test]
fn far_deadlines_are_waited_for() {
    let far = Instant::now() + Duration::from_secs(1 << 40);
    let release_soon = |f: &(dyn Fn() + Sync)| {
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(20));
                f()
            });
        })
    };
    let p = PiMutex::new(());
    let n = NormalMutex::new(());
    let sem = Semaphore::new(0).unwrap();
    let l = RwLock::new(());
    std::thread::scope(|s| {
        let (held_tx, held_rx) = std::sync::mpsc::channel();
        let (p, n, l) = (&p, &n, &l);
        s.spawn(move || {
            let (_a, _b, _c) = (p.lock(), n.lock(), l.write());
            held_tx.send(()).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        });
        held_rx.recv().unwrap();
        drop(p.lock_until_checked(far).expect("PiMutex, far deadline"));
        drop(
            n.lock_for_checked(Duration::MAX)
                .expect("NormalMutex, Duration::MAX"),
        );
        assert!(l.try_write_until(far).is_some(), "RwLock, far deadline");
    });
    release_soon(&|| sem.post().unwrap());
    sem.wait_until(far).expect("Semaphore, far deadline");
    sem.post().unwrap();
    sem.wait_for(Duration::MAX)
        .expect("Semaphore, Duration::MAX");
    let m = PiMutex::new(false);
    let cv = Condvar::new();
    let pcv = PiCondvar::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut g = m.lock();
            while !*g {
                assert!(!cv.wait_until(&mut g, far), "Condvar: no timeout");
            }
            *g = false;
            while !*g {
                assert!(!pcv.wait_for(&mut g, Duration::MAX).unwrap(), "PiCondvar");
            }
        });
        assert!(poll(|| cv.waiters() == 1));
        *m.lock() = true;
        cv.notify_one();
        assert!(poll(|| pcv.waiters() == 1));
        *m.lock() = true;
        pcv.notify_one();
    });
}

/// tst-mutexpp10's `pthread_mutex_setprioceiling`, called by a thread whose
/// priority is above the old ceiling: POSIX lets the lock it takes to do so
/// skip the protocol ("need not adhere to the priority protect protocol") and
/// lists no EINVAL for the caller's priority, so raising a ceiling to fit the
/// caller succeeds; the caller's priority is left alone, and a lock under the
/// new ceiling then works.
#[test]
fn set_ceiling_by_a_thread_above_the_old_ceiling() {
    if !have_rt() {
        return;
    }
    std::thread::spawn(|| {
        set_self(libc::SCHED_FIFO, 50).unwrap();
        let m = ceiling_mutex(10, ()).unwrap();
        let raw = unsafe { m.raw() };
        assert_eq!(
            m.lock_checked().map(drop).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "above the ceiling 10"
        );
        assert_eq!(raw.set_ceiling(60).expect("raise the ceiling to fit"), 10);
        assert_eq!(raw.ceiling(), 60);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 50), "left alone");
        let g = m.lock_checked().expect("under the new ceiling");
        assert_eq!(kernel_prio(), 60);
        drop(g);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 50));
        // Lowering it below the caller works the same way.
        assert_eq!(raw.set_ceiling(20).unwrap(), 60);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 50));
        // Still EDEADLK for the holder (as glibc's error-checking kind).
        let m = ceiling_mutex(70, ()).unwrap();
        let g = m.lock_checked().unwrap();
        let e = unsafe { m.raw() }.set_ceiling(80).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Deadlock, "{e}");
        assert_eq!(unsafe { m.raw() }.ceiling(), 70);
        drop(g);
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 50));
    })
    .join()
    .unwrap();
}

/// `pthread_mutex_setprioceiling` by a thread that may not raise itself
/// (CAP_SYS_NICE dropped from this thread's sets, RLIMIT_RTPRIO below the
/// ceiling): the lock it takes follows no protocol, so it changes the ceiling
/// although its own lock of the mutex is refused (EPERM).
#[test]
fn set_ceiling_without_the_privilege_to_raise() {
    std::thread::spawn(|| {
        use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
        if let Ok(mut c) = capabilities(None) {
            c.effective.remove(CapabilitySet::SYS_NICE);
            c.permitted.remove(CapabilitySet::SYS_NICE);
            c.inheritable.remove(CapabilitySet::SYS_NICE);
            let _ = set_capabilities(None, c);
        }
        let m = ceiling_mutex(30, ()).unwrap();
        let raw = unsafe { m.raw() };
        match m.lock_checked() {
            Ok(_) => return, // RLIMIT_RTPRIO allows 30 here: nothing to check
            Err(e) => assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}"),
        }
        assert_eq!(raw.set_ceiling(40).expect("no raise needed"), 30);
        assert_eq!(raw.ceiling(), 40);
        assert_eq!(self_policy(), (libc::SCHED_OTHER, 0));
        assert!(!m.is_locked());
    })
    .join()
    .unwrap();
}
