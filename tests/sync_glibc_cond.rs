//! What glibc 2.36's nptl condvar tests check (`tst-cond*`), asserted of
//! posixrt's `Condvar` (over each `lock_api` mutex) and `PiCondvar`; the
//! mutex, semaphore and rwlock checks are in sync_glibc.rs. Waits are bounded;
//! nothing asserts a duration.

#[path = "common/waits.rs"]
mod waits;
use waits::{past, poll};

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use lock_api::{Mutex, RawMutex};
use posixrt::sync::{current_tid, Condvar, NormalMutex, PiCondvar, PiMutex};

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
