//! What glibc 2.36's nptl tests check of mutexes, condvars, semaphores and rwlocks
//! (`tst-mutex*`, `tst-mutexpi*`, `tst-mutexpp*`, `tst-cond*`, `tst-sem*`,
//! `tst-rwlock*`), asserted of posixrt's equivalents where the API has one.
//! posixrt's mutexes are error-checking (a relock by the owner is EDEADLK, also
//! for a timed lock), so glibc's default-type expectations (ETIMEDOUT) map to
//! EDEADLK here, as for glibc's `PTHREAD_MUTEX_ERRORCHECK`. Waits are bounded;
//! nothing asserts a duration.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

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

fn poll(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    cond()
}

fn past() -> Instant {
    Instant::now()
        .checked_sub(Duration::from_secs(1))
        .unwrap_or_else(Instant::now)
}

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

// ---------------------------------------------------------------- condvars

/// tst-cond5 / tst-cond11: a timed wait nobody signals times out (also with a
/// deadline already past) and returns with the mutex held by the waiter.
fn timed_wait_keeps_the_mutex<R: RawMutex + Sync>(m: &Mutex<R, u32>, owner: impl Fn() -> bool) {
    let cv = Condvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(20)), "timed out");
    assert!(owner(), "the mutex is held again");
    assert!(cv.wait_until(&mut g, past()), "a past deadline times out");
    assert!(owner());
    *g += 1;
    assert_eq!(cv.waiters(), 0);
    drop(g);
    assert!(!m.is_locked());
}

#[test]
fn condvar_timed_wait_times_out_holding_the_mutex() {
    let me = current_tid();
    let p = PiMutex::new(0);
    timed_wait_keeps_the_mutex(&p, || unsafe { p.raw() }.owner() == Some(me));
    let n = NormalMutex::new(0);
    timed_wait_keeps_the_mutex(&n, || unsafe { n.raw() }.owner() == Some(me));
}

#[test]
fn pi_condvar_timed_wait_times_out_holding_the_mutex() {
    let me = current_tid();
    let m = PiMutex::new(0);
    let cv = PiCondvar::new();
    let mut g = m.lock();
    assert!(cv.wait_for(&mut g, Duration::from_millis(20)).unwrap());
    assert_eq!(unsafe { m.raw() }.owner(), Some(me));
    assert!(cv.wait_until(&mut g, past()).unwrap());
    assert_eq!(unsafe { m.raw() }.owner(), Some(me));
    assert_eq!(cv.waiters(), 0);
    drop(g);
    assert!(!m.is_locked());
}

/// tst-cond24 (PI mutex, signal per item, untimed and timed waits that must
/// not time out): the producer adds one pending item and signals per round;
/// the consumers take every item, none is lost, no wait times out.
macro_rules! cond24 {
    ($cv:expr, $wait:expr) => {{
        const THREADS: u32 = 5;
        const ITEMS: u32 = 4_000;
        let m = PiMutex::new(0u32);
        let cv = $cv;
        let taken = AtomicU32::new(0);
        let timeouts = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for _ in 0..ITEMS / THREADS {
                        let mut g = m.lock();
                        while *g == 0 {
                            #[allow(clippy::redundant_closure_call)]
                            if ($wait)(&cv, &mut g) {
                                timeouts.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        *g -= 1;
                        taken.fetch_add(1, Ordering::Relaxed);
                    }
                });
            }
            for _ in 0..ITEMS {
                let mut g = m.lock();
                *g += 1;
                cv.notify_one();
                drop(g);
            }
        });
        assert_eq!(taken.load(Ordering::Relaxed), ITEMS);
        assert_eq!(timeouts.load(Ordering::Relaxed), 0, "no wait timed out");
        assert_eq!(*m.lock(), 0);
        assert_eq!(cv.waiters(), 0);
    }};
}

#[test]
fn cond24_condvar_over_pi_mutex() {
    cond24!(Condvar::new(), |cv: &Condvar, g: &mut _| {
        cv.wait(g);
        false
    });
    cond24!(Condvar::new(), |cv: &Condvar, g: &mut _| cv
        .wait_for(g, Duration::from_secs(20)));
}

#[test]
fn cond24_pi_condvar() {
    cond24!(PiCondvar::new(), |cv: &PiCondvar, g: &mut _| {
        cv.wait(g).unwrap();
        false
    });
    cond24!(PiCondvar::new(), |cv: &PiCondvar, g: &mut _| cv
        .wait_for(g, Duration::from_secs(20))
        .unwrap());
}

/// tst-cond20 / tst-cond2: rounds of N waiters all asleep, one broadcast wakes
/// every one of them (each sees the round it waited for).
macro_rules! broadcast_rounds {
    ($cv:expr, $wait:expr) => {{
        const N: u32 = 6;
        const ROUNDS: u32 = 20;
        let m = PiMutex::new((0u32, 0u32)); // (round, waiters that saw it)
        let cv = $cv;
        std::thread::scope(|s| {
            for _ in 0..N {
                s.spawn(|| {
                    for r in 1..=ROUNDS {
                        let mut g = m.lock();
                        while g.0 < r {
                            #[allow(clippy::redundant_closure_call)]
                            ($wait)(&cv, &mut g);
                        }
                        g.1 += 1;
                    }
                });
            }
            for r in 1..=ROUNDS {
                // Everyone done with the round before: all N wait (or are about to).
                assert!(poll(|| m.lock().1 == N * (r - 1) && cv.waiters() == N));
                let mut g = m.lock();
                g.0 = r;
                cv.notify_all();
                drop(g);
            }
        });
        assert_eq!(*m.lock(), (ROUNDS, N * ROUNDS));
        assert_eq!(cv.waiters(), 0);
    }};
}

#[test]
fn broadcast_wakes_every_waiter_condvar() {
    broadcast_rounds!(Condvar::new(), |cv: &Condvar, g: &mut _| cv.wait(g));
}

#[test]
fn broadcast_wakes_every_waiter_pi_condvar() {
    broadcast_rounds!(PiCondvar::new(), |cv: &PiCondvar, g: &mut _| cv
        .wait(g)
        .unwrap());
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

/// tst-cond18: one thread signals a random number of times (or broadcasts,
/// one round in 30) while workers wait for jobs and take them; at the end a
/// broadcast releases everyone. Nothing hangs and every worker ends.
macro_rules! cond18 {
    ($m:expr, $cv:expr, $wait:expr) => {{
        const WORKERS: u32 = 8;
        let m = $m;
        let cv = $cv;
        // (exiting, jobs)
        let end = Instant::now() + Duration::from_millis(300);
        let finished = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..WORKERS {
                s.spawn(|| {
                    let mut g = m.lock();
                    while !g.0 {
                        while g.1 == 0 && !g.0 {
                            #[allow(clippy::redundant_closure_call)]
                            ($wait)(&cv, &mut g);
                        }
                        g.1 = g.1.saturating_sub(1);
                        drop(g);
                        g = m.lock();
                    }
                    drop(g);
                    finished.fetch_add(1, Ordering::SeqCst);
                });
            }
            let mut x: u32 = 0x2545_f491;
            while Instant::now() < end {
                let mut g = m.lock();
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let jobs = x % (WORKERS + 1);
                g.1 = jobs;
                if x % 30 == 0 {
                    cv.notify_all();
                } else {
                    for _ in 0..jobs {
                        cv.notify_one();
                    }
                }
            }
            m.lock().0 = true;
            cv.notify_all();
        });
        assert_eq!(finished.load(Ordering::SeqCst), WORKERS);
        assert_eq!(cv.waiters(), 0);
    }};
}

#[test]
fn cond18_condvar_over_pi_mutex() {
    cond18!(
        PiMutex::new((false, 0u32)),
        Condvar::new(),
        |cv: &Condvar, g: &mut _| cv.wait(g)
    );
}

#[test]
fn cond18_condvar_over_normal_mutex() {
    cond18!(
        NormalMutex::new((false, 0u32)),
        Condvar::new(),
        |cv: &Condvar, g: &mut _| cv.wait(g)
    );
}

#[test]
fn cond18_pi_condvar() {
    cond18!(
        PiMutex::new((false, 0u32)),
        PiCondvar::new(),
        |cv: &PiCondvar, g: &mut _| cv.wait(g).unwrap()
    );
}

/// tst-cond18 with `PiCondvar` waiters of both kinds: half of the workers hold
/// another `PiMutex` while they wait (woken, not requeued), half do not
/// (requeued); signals and broadcasts reach both, nothing hangs.
#[test]
fn cond18_pi_condvar_mixed_waiters() {
    const WORKERS: u32 = 6;
    let m = PiMutex::new((false, 0u32));
    let cv = PiCondvar::new();
    let others: Vec<PiMutex<()>> = (0..WORKERS).map(|_| PiMutex::new(())).collect();
    let end = Instant::now() + Duration::from_millis(300);
    let finished = AtomicU32::new(0);
    std::thread::scope(|s| {
        for (i, other) in others.iter().enumerate() {
            let (m, cv, finished) = (&m, &cv, &finished);
            s.spawn(move || {
                let _held = (i % 2 == 0).then(|| other.lock());
                let mut g = m.lock();
                while !g.0 {
                    while g.1 == 0 && !g.0 {
                        cv.wait(&mut g).unwrap();
                    }
                    g.1 = g.1.saturating_sub(1);
                    drop(g);
                    g = m.lock();
                }
                drop(g);
                finished.fetch_add(1, Ordering::SeqCst);
            });
        }
        let mut x: u32 = 0x9e37_79b9;
        while Instant::now() < end {
            let mut g = m.lock();
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            g.1 = x % (WORKERS + 1);
            if x % 30 == 0 {
                cv.notify_all();
            } else {
                for _ in 0..g.1 {
                    cv.notify_one();
                }
            }
        }
        m.lock().0 = true;
        cv.notify_all();
    });
    assert_eq!(finished.load(Ordering::SeqCst), WORKERS);
    assert_eq!(cv.waiters(), 0);
}

/// tst-cond10: N threads each wait once (each held the mutex from before its
/// hand-shake with the main thread until its wait released it); the main
/// thread takes and drops the mutex, so all N are in `wait`, then signals N
/// times without the mutex: no signal is lost, all N wake.
macro_rules! cond10 {
    ($cv:expr, $wait:expr) => {{
        const N: usize = 8;
        const ROUNDS: usize = 20;
        let m = PiMutex::new(());
        let cv = $cv;
        for _ in 0..ROUNDS {
            let woken = AtomicU32::new(0);
            let shake = Barrier::new(2);
            std::thread::scope(|s| {
                for _ in 0..N {
                    s.spawn(|| {
                        let mut g = m.lock();
                        shake.wait();
                        #[allow(clippy::redundant_closure_call)]
                        ($wait)(&cv, &mut g);
                        drop(g);
                        woken.fetch_add(1, Ordering::SeqCst);
                    });
                    shake.wait();
                }
                drop(m.lock());
                for _ in 0..N {
                    cv.notify_one();
                }
                assert!(
                    poll(|| woken.load(Ordering::SeqCst) == N as u32),
                    "a signal was lost: {} of {N} woke",
                    woken.load(Ordering::SeqCst)
                );
            });
        }
    }};
}

#[test]
fn cond10_condvar_signals_without_the_mutex() {
    cond10!(Condvar::new(), |cv: &Condvar, g: &mut _| cv.wait(g));
}

#[test]
fn cond10_pi_condvar_signals_without_the_mutex() {
    cond10!(PiCondvar::new(), |cv: &PiCondvar, g: &mut _| cv
        .wait(g)
        .unwrap());
}

/// Whether thread `tid` of this process is blocked in `futex(2)` (its
/// `/proc/self/task/TID/syscall` names the call it sleeps in).
fn in_futex(tid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall"))
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<i64>().ok())
        == Some(libc::SYS_futex)
}

/// tst-cond2 / tst-cond20 counts: with N waiters asleep (each blocked in the
/// kernel on the condvar, the mutex free), a broadcast made under the mutex
/// wakes (or requeues) exactly N, and every waiter returns; a signal with
/// nobody waiting wakes nobody.
macro_rules! broadcast_count {
    ($cv:expr, $wait:expr) => {{
        const N: u32 = 5;
        let m = PiMutex::new(false);
        let cv = $cv;
        assert!(!cv.notify_one(), "nobody waits");
        assert_eq!(cv.notify_all(), 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            for _ in 0..N {
                let tx = tx.clone();
                let (m, cv) = (&m, &cv);
                s.spawn(move || {
                    tx.send(current_tid()).unwrap();
                    let mut g = m.lock();
                    while !*g {
                        #[allow(clippy::redundant_closure_call)]
                        ($wait)(cv, &mut g);
                    }
                });
            }
            let tids: Vec<u32> = (0..N).map(|_| rx.recv().unwrap()).collect();
            assert!(poll(|| cv.waiters() == N
                && !m.is_locked()
                && tids.iter().all(|&t| in_futex(t))));
            let mut g = m.lock();
            *g = true;
            assert_eq!(cv.notify_all(), N, "every sleeper woken or requeued");
            drop(g);
        });
        assert_eq!(cv.waiters(), 0);
        assert!(!cv.notify_one(), "nobody waits any more");
    }};
}

#[test]
fn broadcast_counts_condvar() {
    broadcast_count!(Condvar::new(), |cv: &Condvar, g: &mut _| cv.wait(g));
}

#[test]
fn broadcast_counts_pi_condvar() {
    broadcast_count!(PiCondvar::new(), |cv: &PiCondvar, g: &mut _| cv
        .wait(g)
        .unwrap());
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

/// tst-cond16 / tst-cond17: workers take a flag in turn; each one that drops
/// it broadcasts, before (tst-cond17) or after (tst-cond16) unlocking. Nobody
/// is left waiting, every worker ends.
macro_rules! cond16 {
    ($cv:expr, $wait:expr, $broadcast_locked:expr) => {{
        const WORKERS: u32 = 8;
        let m = PiMutex::new((false, false)); // (taken, exiting)
        let cv = $cv;
        let turns = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..WORKERS {
                s.spawn(|| loop {
                    let mut g = m.lock();
                    while g.0 && !g.1 {
                        #[allow(clippy::redundant_closure_call)]
                        ($wait)(&cv, &mut g);
                    }
                    g.0 = true;
                    drop(g);
                    turns.fetch_add(1, Ordering::Relaxed);
                    let mut g = m.lock();
                    g.0 = false;
                    let exiting = g.1;
                    if $broadcast_locked {
                        cv.notify_all();
                        drop(g);
                    } else {
                        drop(g);
                        cv.notify_all();
                    }
                    if exiting {
                        break;
                    }
                });
            }
            std::thread::sleep(Duration::from_millis(200));
            m.lock().1 = true;
            cv.notify_all();
        });
        assert!(turns.load(Ordering::Relaxed) >= WORKERS);
        assert_eq!(cv.waiters(), 0);
    }};
}

#[test]
fn cond16_17_condvar() {
    cond16!(Condvar::new(), |cv: &Condvar, g: &mut _| cv.wait(g), false);
    cond16!(Condvar::new(), |cv: &Condvar, g: &mut _| cv.wait(g), true);
}

#[test]
fn cond16_17_pi_condvar() {
    cond16!(
        PiCondvar::new(),
        |cv: &PiCondvar, g: &mut _| cv.wait(g).unwrap(),
        false
    );
    cond16!(
        PiCondvar::new(),
        |cv: &PiCondvar, g: &mut _| cv.wait(g).unwrap(),
        true
    );
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
