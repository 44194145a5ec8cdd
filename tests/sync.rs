//! Integration tests of posixrt::sync: the PI boost as the kernel reports it, the
//! ceiling protocol, try/timed/relock behaviour and owner death.
//!
//! Tests that change scheduling are serialised with `SCHED_LOCK` and pin every thread
//! they start to one CPU. No test asserts a duration: waits are bounded polls on
//! states, and the assertions are on priorities, orders and error kinds.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

#[path = "common/child.rs"]
mod child;
#[path = "common/unprivileged.rs"]
mod unprivileged;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common/self_sched.rs"]
mod self_sched;
use self_sched::{have_rt, kernel_prio, self_policy, set_self};

use posixrt::sync::{
    ceiling_mutex, current_tid, CeilingMutex, Condvar, MutexExt, NormalMutex, PiCondvar, PiMutex,
    RawPiMutex, RecursiveMutex, RwLock, Semaphore,
};
use posixrt::{sched, ErrorKind};

static SCHED_LOCK: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SCHED_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

// ---- small raw helpers (scheduling of the test threads) ----

/// The first CPU this process may run on.
fn first_cpu() -> usize {
    sched::CpuSet::allowed()
        .unwrap()
        .iter()
        .next()
        .expect("some CPU")
}

fn pin_self(cpu: usize) {
    sched::set_thread_affinity(sched::Tid::current(), &sched::CpuSet::single(cpu).unwrap())
        .unwrap();
}

/// Starts a thread pinned to `cpu` at SCHED_FIFO `prio`, both applied at creation.
fn spawn_fifo<T: Send + 'static>(
    cpu: usize,
    prio: i32,
    f: impl FnOnce() -> T + Send + 'static,
) -> sched::JoinHandle<T> {
    sched::Builder::new()
        .scheduling(sched::Priority::fifo(prio).unwrap())
        .affinity(sched::CpuSet::single(cpu).unwrap())
        .spawn(f)
        .expect("SCHED_FIFO thread")
}

/// `voluntary_ctxt_switches` of thread `tid` of this process.
fn voluntary_switches(tid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).expect("status");
    s.lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .expect("voluntary_ctxt_switches")
        .trim()
        .parse()
        .expect("count")
}

/// Polls `cond` every millisecond for at most 5 s; returns its last value.
fn poll(mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        if cond() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

// ---- the kernel's prio convention ----

#[test]
fn kernel_reports_fifo_priority_as_minus_one_minus_p() {
    let _g = serial();
    if !have_rt() {
        assert_eq!(set_self(libc::SCHED_FIFO, 10), Err(libc::EPERM));
        return;
    }
    let prio = spawn_fifo(first_cpu(), 10, || kernel_prio(current_tid()))
        .join()
        .unwrap();
    assert_eq!(prio, -11);
}

// ---- priority inheritance ----

#[test]
fn pi_boost_owner_runs_at_waiters_priority() {
    let _g = serial();
    if !have_rt() {
        assert_eq!(set_self(libc::SCHED_FIFO, 10), Err(libc::EPERM));
        return;
    }
    let cpu = first_cpu();
    pin_self(cpu);
    let m = Arc::new(PiMutex::new(Vec::<&'static str>::new()));
    let owner_tid = Arc::new(AtomicU32::new(0));
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let (locked_tx, locked_rx) = mpsc::channel::<()>();

    let owner = {
        let (m, owner_tid) = (m.clone(), owner_tid.clone());
        spawn_fifo(cpu, 10, move || {
            owner_tid.store(current_tid(), Ordering::SeqCst);
            let mut g = m.lock();
            g.push("owner");
            locked_tx.send(()).unwrap();
            // Sleep holding the lock until told to release.
            release_rx.recv().unwrap();
            drop(g);
            kernel_prio(current_tid())
        })
    };
    locked_rx.recv().unwrap();
    let otid = owner_tid.load(Ordering::SeqCst);
    assert_eq!(kernel_prio(otid), -11, "owner before any waiter");
    assert_eq!(unsafe { m.raw() }.owner(), Some(otid));

    let waiter = {
        let m = m.clone();
        spawn_fifo(cpu, 90, move || {
            let mut g = m.lock();
            g.push("waiter");
        })
    };
    // The waiter blocks in FUTEX_LOCK_PI: the kernel sets FUTEX_WAITERS and boosts.
    let boosted = poll(|| kernel_prio(otid) == -91);
    assert!(
        boosted,
        "owner prio is {} while a FIFO-90 thread waits",
        kernel_prio(otid)
    );
    assert!(unsafe { m.raw() }.has_waiters());
    release_tx.send(()).unwrap();
    let after = owner.join().unwrap();
    assert_eq!(after, -11, "owner's priority after unlocking");
    waiter.join().unwrap();
    assert_eq!(*m.lock(), ["owner", "waiter"]);
    assert!(!unsafe { m.raw() }.has_waiters());
}

// ---- priority ceiling ----

#[test]
fn ceiling_raises_while_held_and_restores_nested() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let a = Arc::new(ceiling_mutex(30, ()).unwrap());
    let b = Arc::new(ceiling_mutex(50, ()).unwrap());
    let seen = spawn_fifo(first_cpu(), 10, move || {
        let me = current_tid();
        let mut seen = vec![kernel_prio(me)];
        let ga = a.lock_checked().unwrap();
        seen.push(kernel_prio(me)); // 30
        let gb = b.lock_checked().unwrap();
        seen.push(kernel_prio(me)); // 50
        drop(gb);
        seen.push(kernel_prio(me)); // back to 30
        drop(ga);
        seen.push(kernel_prio(me)); // back to 10
                                    // Out of order: lock a then b, unlock a first: still at b's ceiling.
        let ga = a.lock();
        let gb = b.lock();
        drop(ga);
        seen.push(kernel_prio(me)); // 50
        drop(gb);
        seen.push(kernel_prio(me)); // 10
        assert_eq!(self_policy(), (libc::SCHED_FIFO, 10));
        seen
    })
    .join()
    .unwrap();
    assert_eq!(seen, [-11, -31, -51, -31, -11, -51, -11]);
}

#[test]
fn ceiling_lifts_sched_other_to_fifo_and_restores_policy_and_nice() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let m = ceiling_mutex(20, 7u32).unwrap();
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setpriority on the calling thread (tid) with a valid nice.
            unsafe { libc::setpriority(libc::PRIO_PROCESS, current_tid(), 5) };
            let me = current_tid();
            let before = (self_policy(), kernel_prio(me));
            let g = m.lock_checked().unwrap();
            let inside = (self_policy(), kernel_prio(me), *g);
            drop(g);
            let after = (self_policy(), kernel_prio(me));
            (before, inside, after)
        })
        .join()
        .unwrap()
    });
    assert_eq!(out.0, ((libc::SCHED_OTHER, 0), 25));
    assert_eq!(out.1, ((libc::SCHED_FIFO, 20), -21, 7));
    assert_eq!(out.2, ((libc::SCHED_OTHER, 0), 25));
}

#[test]
fn ceiling_refuses_a_caller_above_it() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let m = Arc::new(ceiling_mutex(30, ()).unwrap());
    let m2 = m.clone();
    let (kind, errno, prio_after, held) = spawn_fifo(first_cpu(), 60, move || {
        let e = m2.lock_checked().unwrap_err();
        (
            e.kind(),
            e.errno(),
            kernel_prio(current_tid()),
            m2.is_locked(),
        )
    })
    .join()
    .unwrap();
    assert_eq!(kind, ErrorKind::InvalidInput);
    assert_eq!(errno, Some(libc::EINVAL));
    assert_eq!(prio_after, -61, "a refused caller keeps its priority");
    assert!(!held);
    // At exactly the ceiling it is accepted and nothing changes.
    let m3 = m.clone();
    let at = spawn_fifo(first_cpu(), 30, move || {
        let g = m3.lock_checked().map(|_g| kernel_prio(current_tid()));
        g.unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(at, -31);
}

/// A condvar waiter whose relock of a ceiling mutex is refused (its priority was
/// raised above the ceiling while it slept) panics in `wait`; the unwinding drops its
/// guard, which must not release the mutex that another thread holds by then.
#[test]
fn ceiling_guard_unwound_after_a_refused_relock_leaves_the_owner_alone() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let m = Arc::new(ceiling_mutex(10, 0u32).unwrap());
    let cv = Arc::new(Condvar::new());
    let (m2, cv2) = (m.clone(), cv.clone());
    let (tx, rx) = mpsc::channel();
    let waiter = spawn_fifo(first_cpu(), 5, move || {
        tx.send(current_tid()).unwrap();
        let mut g = m2.lock();
        while *g == 0 {
            cv2.wait(&mut g);
        }
    });
    let waiter_tid = rx.recv().unwrap();
    quiet_expected_panic("posixrt lock failed: pthread_mutex_lock(PRIO_PROTECT)");
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    let mut g = m.lock();
    // Behind the lock's back: the sleeping waiter now runs above the ceiling.
    let p = libc::sched_param { sched_priority: 20 };
    // SAFETY: a valid sched_param for a thread of this process.
    assert_eq!(
        unsafe { libc::sched_setscheduler(waiter_tid as i32, libc::SCHED_FIFO, &p) },
        0
    );
    *g = 1;
    cv.notify_one();
    assert!(waiter.join().is_err(), "the refused relock panics");
    assert_eq!(
        unsafe { m.raw() }.owner(),
        Some(current_tid()),
        "the panicking waiter's guard released a lock it did not hold"
    );
    assert!(m.try_lock().is_none());
    drop(g);
    assert!(!m.is_locked());
}

/// A refused relock undoes its own priority bookkeeping before it panics; the
/// unwound guard must not undo it a second time, or a thread that still holds
/// another ceiling mutex drops below that mutex's ceiling while inside it.
#[test]
fn ceiling_refused_relock_keeps_the_other_held_ceiling() {
    let _g = serial();
    if !have_rt() {
        return;
    }
    let outer = Arc::new(ceiling_mutex(10, ()).unwrap());
    let m = Arc::new(ceiling_mutex(10, 0u32).unwrap());
    let cv = Arc::new(Condvar::new());
    let (outer2, m2, cv2) = (outer.clone(), m.clone(), cv.clone());
    quiet_expected_panic("posixrt lock failed: pthread_mutex_lock(PRIO_PROTECT)");
    let waiter = spawn_fifo(first_cpu(), 8, move || {
        let _outer = outer2.lock();
        let waited = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = m2.lock();
            while *g == 0 {
                cv2.wait(&mut g);
            }
        }));
        // Still inside `outer` (ceiling 10): FIFO 10 is kernel priority -11.
        (waited.is_err(), kernel_prio(current_tid()))
    });
    assert!(poll(|| cv.waiters() == 1 && !m.is_locked()));
    // Below the waiter's base priority 8: its relock is refused.
    assert_eq!(unsafe { m.raw() }.set_ceiling(6).unwrap(), 10);
    cv.notify_one();
    let (refused, prio) = waiter.join().unwrap();
    assert!(
        refused,
        "the relock under ceiling 6 of a FIFO 8 thread is refused"
    );
    assert_eq!(
        prio, -11,
        "the thread fell below the ceiling of the mutex it holds"
    );
    assert!(!m.is_locked() && !outer.is_locked());
}

#[test]
fn ceiling_bad_values_and_set_ceiling() {
    for bad in [0, 100, 1000] {
        let e = ceiling_mutex(bad, ()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(e.hint().is_some());
    }
    let m: CeilingMutex<()> = CeilingMutex::new(());
    assert_eq!(unsafe { m.raw() }.ceiling(), 99);
    let _g = serial();
    if have_rt() {
        let old = std::thread::spawn(move || {
            unsafe { m.raw() }
                .set_ceiling(40)
                .map(|o| (o, unsafe { m.raw() }.ceiling()))
        })
        .join()
        .unwrap()
        .unwrap();
        assert_eq!(old, (99, 40));
    }
}

/// Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0 (a forked child that drops to uid
/// 65534), raising to the ceiling is refused with EPERM and a hint.
fn unprivileged_ceiling_is_refused_with_hint() {
    let m = ceiling_mutex(30, ()).unwrap();
    let r = m.lock_checked().map(drop).unwrap_err();
    assert_eq!(r.kind(), ErrorKind::PermissionDenied);
    assert!(r.hint().unwrap_or("").contains("CAP_SYS_NICE"), "{r}");
    assert!(!m.is_locked());
}

#[test]
fn ceiling_without_privilege_is_eperm_with_hint() {
    let _g = serial();
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child only runs the code below and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: plain syscalls on this (child) process.
        let ok = unsafe {
            libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) == 0
                && (libc::geteuid() != 0 || libc::setresuid(65534, 65534, 65534) == 0)
        };
        let code: u8 = if !ok {
            2
        } else {
            let m = ceiling_mutex(30, ()).unwrap();
            let r = m.lock_checked().map(drop);
            match r {
                Ok(()) => 3,
                Err(e)
                    if e.kind() == ErrorKind::PermissionDenied
                        && e.hint().unwrap_or("").contains("RLIMIT_RTPRIO")
                        && !m.is_locked() =>
                {
                    0
                }
                Err(_) => 4,
            }
        };
        // SAFETY: writing one byte to our pipe, then leaving without unwinding.
        unsafe {
            libc::write(fds[1], &code as *const u8 as *const libc::c_void, 1);
            libc::_exit(0);
        }
    }
    let mut code = 9u8;
    // SAFETY: reading one byte from the pipe; waiting for our child.
    unsafe {
        libc::close(fds[1]);
        libc::read(fds[0], &mut code as *mut u8 as *mut libc::c_void, 1);
        libc::close(fds[0]);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
    }
    assert_eq!(code, 0, "child result code");
}

// ---- try / timed / relock, every kind ----

fn held_elsewhere<M: Sync>(m: &M, lock_in_other: impl Fn(&M) + Sync, check: impl FnOnce(&M)) {
    let locked = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            lock_in_other(m);
            locked.store(true, Ordering::SeqCst);
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        assert!(poll(|| locked.load(Ordering::SeqCst)));
        check(m);
        done.store(true, Ordering::SeqCst);
    });
}

#[test]
fn pi_try_lock_timed_lock_and_relock() {
    let m = PiMutex::new(0);
    held_elsewhere(
        &m,
        |m| std::mem::forget(m.lock()),
        |m| {
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_checked().unwrap().is_none());
            assert!(m.try_lock_for(Duration::from_millis(10)).is_none());
            let e = m.lock_for_checked(Duration::from_millis(10)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            assert!(m.is_locked());
            // The timed wait went through FUTEX_LOCK_PI2 (CLOCK_MONOTONIC) on
            // Linux >= 5.14, and fell back to FUTEX_LOCK_PI (CLOCK_REALTIME) before.
            let release = rustix::system::uname()
                .release()
                .to_string_lossy()
                .into_owned();
            let mut v = release
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|x| x.parse::<u32>().ok());
            let (major, minor) = (v.next().unwrap_or(0), v.next().unwrap_or(0));
            assert_eq!(
                posixrt::sync::has_lock_pi2(),
                (major, minor) >= (5, 14),
                "kernel {release}"
            );
        },
    );
    // The holder exited without unlocking (forgotten guard): owner death is handled.
    let g = m.lock_checked().unwrap();
    assert!(unsafe { m.raw() }.owner_died());
    assert_eq!(unsafe { m.raw() }.owner(), Some(current_tid()));
    // Relock by the owner: Deadlock, not a hang; try_lock on own lock fails.
    let e = m.lock_checked().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Deadlock);
    assert_eq!(e.errno(), Some(libc::EDEADLK));
    assert_eq!(
        m.lock_for_checked(Duration::from_millis(1))
            .unwrap_err()
            .kind(),
        ErrorKind::Deadlock
    );
    assert!(m.try_lock().is_none());
    drop(g);
    unsafe { m.raw() }.clear_owner_died();
    assert!(!m.is_locked());
    assert!(!unsafe { m.raw() }.owner_died());
}

/// Locks `m` in a thread that ends without unlocking it: that thread's id.
fn locked_by_a_thread_that_died<T: Send>(m: &PiMutex<T>) -> u32 {
    std::thread::scope(|s| {
        s.spawn(|| {
            std::mem::forget(m.lock());
            current_tid()
        })
        .join()
        .unwrap()
    })
}

#[test]
fn pi_owner_death_without_waiters_is_reported() {
    let m = PiMutex::new(5);
    let dead = locked_by_a_thread_that_died(&m);
    assert_eq!(unsafe { m.raw() }.owner(), Some(dead));
    assert!(!unsafe { m.raw() }.owner_died());
    let g = m.lock();
    assert_eq!(*g, 5);
    assert!(unsafe { m.raw() }.owner_died());
    assert_eq!(
        unsafe { m.raw() }.word() & 0x4000_0000,
        0,
        "OWNER_DIED bit cleared in the word"
    );
}

/// A dead owner with nobody waiting: `try_lock` stays a pure compare-and-swap and
/// reports the lock busy (as a non-robust POSIX mutex does), while a zero timeout
/// asks the kernel and takes the lock over, with the owner-died mark.
#[test]
fn pi_owner_death_try_lock_busy_zero_timeout_takes_over() {
    let m = PiMutex::new(7);
    let dead = locked_by_a_thread_that_died(&m);
    assert!(m.try_lock().is_none());
    assert!(m.try_lock_checked().unwrap().is_none());
    assert_eq!(unsafe { m.raw() }.owner(), Some(dead));
    let g = m
        .try_lock_for(Duration::ZERO)
        .expect("a zero timeout takes a dead owner's lock over");
    assert_eq!(*g, 7);
    assert!(unsafe { m.raw() }.owner_died());
    assert_eq!(unsafe { m.raw() }.owner(), Some(current_tid()));
    drop(g);
    assert!(m.try_lock().is_some());
}

#[test]
fn pi_lock_panics_on_relock_instead_of_hanging() {
    let m = PiMutex::new(());
    let _g = m.lock();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _again = m.lock();
    }));
    let msg = r.unwrap_err();
    let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        msg.contains("EDEADLK") && msg.contains("lock_checked"),
        "{msg}"
    );
}

#[test]
fn normal_try_lock_timed_lock_and_relock() {
    let m = NormalMutex::new(0);
    held_elsewhere(
        &m,
        |m| std::mem::forget(m.lock()),
        |m| {
            assert!(m.try_lock().is_none());
            assert!(m.try_lock_for(Duration::from_millis(10)).is_none());
            let e = m.lock_for_checked(Duration::from_millis(10)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
        },
    );
    let m = NormalMutex::new(0);
    let g = m.lock();
    assert_eq!(m.lock_checked().unwrap_err().kind(), ErrorKind::Deadlock);
    assert!(m.try_lock().is_none());
    drop(g);
    assert!(m.try_lock().is_some());
}

#[test]
fn ceiling_try_lock_timed_lock_and_relock() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let m = ceiling_mutex(5, 0).unwrap();
    held_elsewhere(
        &m,
        |m| {
            let g = m.lock();
            std::mem::forget(g);
        },
        |m| {
            assert!(m.try_lock().is_none());
            let e = m.lock_for_checked(Duration::from_millis(10)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::TimedOut);
            // A failed timed lock leaves the caller's priority as it was.
            assert_eq!(self_policy(), (libc::SCHED_OTHER, 0));
        },
    );
    let m = ceiling_mutex(5, 0).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let g = m.lock();
            assert_eq!(m.lock_checked().unwrap_err().kind(), ErrorKind::Deadlock);
            assert_eq!(self_policy(), (libc::SCHED_FIFO, 5), "still boosted once");
            drop(g);
            assert_eq!(self_policy(), (libc::SCHED_OTHER, 0));
        });
    });
}

// ---- mutual exclusion under contention ----

fn hammer<M: Sync>(m: &M, incr: impl Fn(&M) + Sync, threads: usize, each: usize) {
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..each {
                    incr(m)
                }
            });
        }
    });
}

#[test]
fn contended_counts_are_exact() {
    let pi = PiMutex::new(0usize);
    hammer(&pi, |m| *m.lock() += 1, 4, 20_000);
    assert_eq!(*pi.lock(), 80_000);
    assert!(!unsafe { pi.raw() }.has_waiters());
    let n = NormalMutex::new(0usize);
    hammer(&n, |m| *m.lock() += 1, 4, 20_000);
    assert_eq!(*n.lock(), 80_000);
    let _g = serial();
    if have_rt() {
        let c = ceiling_mutex(3, 0usize).unwrap();
        hammer(&c, |m| *m.lock() += 1, 3, 500);
        assert_eq!(*c.lock(), 1500);
    }
}

/// Unlock by a non-owner is impossible through the guard API: guards are `!Send`
/// (a `compile_fail` doctest on `PiMutex` checks it), and `RawMutex::unlock` is
/// `unsafe` with "held by the current thread" as its contract.
#[test]
fn raw_state_accessors() {
    let r = RawPiMutex::new();
    assert_eq!(r.owner(), None);
    assert!(!r.has_waiters());
    assert_eq!(r.word(), 0);
}

#[test]
fn ceiling_base_cache_is_opt_in_and_refreshable() {
    let _g = serial();
    if !have_rt() {
        return unprivileged_ceiling_is_refused_with_hint();
    }
    let m = Arc::new(ceiling_mutex(30, ()).unwrap());
    let seen = spawn_fifo(first_cpu(), 10, move || {
        let me = current_tid();
        posixrt::sync::cache_ceiling_base(true);
        drop(m.lock());
        let first = kernel_prio(me); // restored to 10
                                     // Change the base behind the cache's back: the stale base (10) comes back
                                     // on unlock, as documented.
        set_self(libc::SCHED_FIFO, 20).unwrap();
        drop(m.lock());
        let stale = kernel_prio(me);
        // After a refresh the new base is read and restored.
        set_self(libc::SCHED_FIFO, 20).unwrap();
        posixrt::sync::refresh_ceiling_base();
        let g = m.lock();
        let inside = kernel_prio(me);
        drop(g);
        let fresh = kernel_prio(me);
        // Without the cache every outermost lock reads the base.
        posixrt::sync::cache_ceiling_base(false);
        set_self(libc::SCHED_FIFO, 25).unwrap();
        drop(m.lock());
        (first, stale, inside, fresh, kernel_prio(me))
    })
    .join()
    .unwrap();
    assert_eq!(seen, (-11, -11, -31, -21, -26));
}

#[test]
fn other_kinds_under_contention_are_exact() {
    use posixrt::sync::{Condvar, RecursiveMutex, RwLock, Semaphore};
    // RwLock: writers increment, readers check the value never goes back.
    let l = RwLock::new(0u64);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    *l.write() += 1;
                }
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut last = 0;
                for _ in 0..5_000 {
                    let v = *l.read();
                    assert!(v >= last);
                    last = v;
                }
            });
        }
    });
    assert_eq!(*l.read(), 15_000);
    assert!(l.try_write_for(Duration::from_millis(1)).is_some());

    // A binary semaphore as a lock around a non-atomic read-modify-write.
    let sem = Semaphore::new(1).unwrap();
    let cell = AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5_000 {
                    sem.wait();
                    let v = cell.load(Ordering::Relaxed);
                    cell.store(v + 1, Ordering::Relaxed);
                    sem.post().unwrap();
                }
            });
        }
    });
    assert_eq!(cell.load(Ordering::Relaxed), 20_000);
    assert_eq!(sem.value(), 1);
    assert!(sem.try_wait());
    assert_eq!(
        sem.wait_for(Duration::from_millis(5)).unwrap_err().kind(),
        ErrorKind::TimedOut
    );

    // Recursive mutex: nested locks from several threads.
    let r = RecursiveMutex::new(std::cell::Cell::new(0u32));
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..3_000 {
                    let a = r.lock();
                    let b = r.lock();
                    b.set(a.get() + 1);
                }
            });
        }
    });
    assert_eq!(r.lock().get(), 9_000);
    assert_eq!(r.recursion(), 0);

    // Condvar ping-pong over a PI mutex: strict alternation.
    let m = PiMutex::new(0u32);
    let cv = Condvar::new();
    std::thread::scope(|s| {
        for me in 0..2u32 {
            let (m, cv) = (&m, &cv);
            s.spawn(move || {
                for _ in 0..2_000 {
                    let mut g = m.lock();
                    while *g % 2 != me {
                        cv.wait(&mut g);
                    }
                    *g += 1;
                    cv.notify_all();
                }
            });
        }
    });
    assert_eq!(*m.lock(), 4_000);
}

/// The `priority_inversion` example binary of this test's profile. A plain `cargo
/// test` builds the examples; `cargo test --test sync` does not, so when it is
/// missing it is built here with the same cargo, profile and target directory.
fn example_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/sync-HASH -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>/deps");
    let bin = profile_dir.join("examples/priority_inversion");
    if !bin.exists() {
        let target_dir = profile_dir.parent().expect("target dir");
        let mut cmd = std::process::Command::new(env!("CARGO"));
        cmd.args(["build", "--quiet", "--example", "priority_inversion"])
            .arg("--manifest-path")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .arg("--target-dir")
            .arg(target_dir);
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some("release") => {
                cmd.arg("--release");
            }
            Some(other) => {
                cmd.args(["--profile", other]);
            }
            None => panic!("unexpected target layout {}", exe.display()),
        }
        let st = cmd.status().expect("run cargo to build the example");
        assert!(
            st.success(),
            "cargo build --example priority_inversion failed"
        );
    }
    assert!(bin.exists(), "{} missing after the build", bin.display());
    bin
}

/// A copy of `bin` that any user can execute (mode 0755 in a fresh 0755 directory
/// under the system temp dir): the target directory may sit under a home directory
/// that uid 65534 cannot traverse.
fn world_executable_copy(bin: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("posixrt-sync-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let copy = dir.join("priority_inversion");
    std::fs::copy(bin, &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

#[test]
fn priority_inversion_example_prints_listing_6_8_order() {
    let _g = serial();
    let bin = example_binary();
    let args = [
        "--runs",
        "1",
        "--cs-ms",
        "5",
        "--medium-ms",
        "20",
        "--iterations",
        "1000000",
    ];
    let out = std::process::Command::new(&bin)
        .args(args)
        .output()
        .unwrap();
    if !have_rt() {
        // A refused privilege is a failure: exit 1, the error and its hint on stderr.
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("CAP_SYS_NICE"), "{err}");
        return;
    }
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // Listing 6.8's order of events.
    let expected = [
        "Medium-priority thread before taking the semaphore",
        "High-priority thread before taking the semaphore",
        "Low priority: 68",
        "Medium priority: 83",
        "High priority: 98",
        "Low-priority thread before releasing the semaphore for the medium-priority thread",
        "Medium-priority thread before releasing the semaphore",
        "Low-priority thread before releasing the semaphore for the high-priority thread",
        "High-priority thread after taking the semaphore",
    ];
    let lines: Vec<&str> = text.lines().skip(1).take(expected.len()).collect();
    assert_eq!(lines, expected, "{text}");
    for p in ["none", "inherit", "protect"] {
        assert!(text.contains(&format!("{p} ")), "{text}");
    }
    // --json: exactly one object with the three protocols.
    let out = std::process::Command::new(&bin)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    let json = json.trim();
    assert!(
        json.starts_with("{\"critical_section_ms\": 5.000, \"blocked_ms\": {\"none\": "),
        "{json}"
    );
    assert_eq!(json.lines().count(), 1);
    assert!(!json.contains("null"), "{json}");
}

#[test]
fn priority_inversion_example_without_privilege_explains_and_fails() {
    let _g = serial();
    let bin = world_executable_copy(&example_binary());
    let mut cmd = std::process::Command::new(&bin);
    cmd.args(["--json", "--runs", "1"]);
    unprivileged::without_rt_privilege(&mut cmd);
    let out = cmd.output().expect("run the example without privilege");
    let _ = std::fs::remove_dir_all(bin.parent().unwrap());
    // A refused privilege is a failure: exit 1, nothing on stdout, error and hint on stderr.
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("EPERM") && err.contains("CAP_SYS_NICE"),
        "{err}"
    );
}

// ---- stress: every kind, every acquisition path, exact counts ----
//
// Each test runs a fixed number of operations (a few seconds at most on two busy
// cores) on detached threads and fails instead of hanging if one gets stuck: a lost
// wake-up shows up as a thread that never finishes. Mutual exclusion is checked with
// an "inside" counter that must be 0 on entry, and with a non-atomic
// read-modify-write whose final value must be exact.

/// Runs `body(i)` on `threads` threads; panics if any does not finish within 60 s.
fn stress_run(threads: usize, body: impl Fn(usize) + Send + Sync + 'static) {
    let body = Arc::new(body);
    let start = Arc::new(std::sync::Barrier::new(threads));
    let (tx, rx) = mpsc::channel::<bool>();
    for i in 0..threads {
        let (b, tx, start) = (body.clone(), tx.clone(), start.clone());
        std::thread::spawn(move || {
            start.wait();
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b(i))).is_ok();
            let _ = tx.send(ok);
        });
    }
    drop(tx);
    for _ in 0..threads {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(true) => {}
            Ok(false) => panic!("a stress thread panicked"),
            Err(_) => panic!("a stress thread is stuck after 60 s (lost wake-up?)"),
        }
    }
}

/// Enters a critical section: asserts nobody else is inside.
fn enter(inside: &AtomicU32) {
    assert_eq!(
        inside.fetch_add(1, Ordering::SeqCst),
        0,
        "two threads inside"
    );
}

fn leave(inside: &AtomicU32) {
    inside.fetch_sub(1, Ordering::SeqCst);
}

/// Locks `m` by path `i % 4` (lock, try_lock spin, timed lock retry, lock_checked),
/// increments the protected counter non-atomically, and counts try/timeout misses.
fn stress_mutex<R>(m: &'static lock_api::Mutex<R, u64>, threads: usize, each: usize)
where
    R: posixrt::sync::RawMutexChecked
        + lock_api::RawMutexTimed<Duration = Duration>
        + Sync
        + 'static,
{
    let inside: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    stress_run(threads, move |t| {
        for i in 0..each {
            let mut g = match (t + i) % 4 {
                0 => m.lock(),
                1 => loop {
                    if let Some(g) = m.try_lock() {
                        break g;
                    }
                    std::thread::yield_now();
                },
                2 => loop {
                    if let Some(g) = m.try_lock_for(Duration::from_micros(50)) {
                        break g;
                    }
                },
                _ => m.lock_checked().expect("lock_checked"),
            };
            enter(inside);
            let v = *g;
            std::hint::spin_loop();
            *g = v + 1;
            leave(inside);
        }
    });
    assert_eq!(*m.lock(), (threads * each) as u64);
    assert!(!m.is_locked());
}

#[test]
fn stress_pi_mutex() {
    let m: &'static PiMutex<u64> = Box::leak(Box::new(PiMutex::new(0)));
    stress_mutex(m, 4, 20_000);
    // Every kernel waiter was handed the lock and the last unlock cleared the word.
    assert_eq!(unsafe { m.raw() }.word(), 0);
}

#[test]
fn stress_normal_mutex() {
    let m: &'static NormalMutex<u64> = Box::leak(Box::new(NormalMutex::new(0)));
    stress_mutex(m, 4, 20_000);
}

#[test]
fn stress_ceiling_mutex() {
    let _g = serial();
    let m: &'static CeilingMutex<u64> = Box::leak(Box::new(ceiling_mutex(5, 0).unwrap()));
    if !have_rt() {
        let e = m.lock_checked().unwrap_err();
        assert_eq!(e.errno(), Some(libc::EPERM));
        return;
    }
    stress_mutex(m, 3, 1_500);
    // Every thread's priority was restored: a fresh check from SCHED_OTHER threads.
    let (tx, rx) = mpsc::channel();
    stress_run(3, move |_| {
        for _ in 0..200 {
            let g = m.lock();
            assert_eq!(self_policy(), (libc::SCHED_FIFO, 5));
            drop(g);
            assert_eq!(self_policy(), (libc::SCHED_OTHER, 0));
        }
        let _ = tx.clone().send(());
    });
    assert_eq!(rx.try_iter().count(), 3);
}

#[test]
fn stress_recursive_mutex() {
    use posixrt::sync::RecursiveMutex;
    let m: &'static RecursiveMutex<std::cell::Cell<u64>> =
        Box::leak(Box::new(RecursiveMutex::new(std::cell::Cell::new(0))));
    let inside: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    stress_run(4, move |t| {
        for i in 0..10_000 {
            let a = match (t + i) % 3 {
                0 => m.lock(),
                1 => loop {
                    if let Some(g) = m.try_lock() {
                        break g;
                    }
                    std::thread::yield_now();
                },
                _ => loop {
                    if let Ok(g) = m.lock_for(Duration::from_micros(50)) {
                        break g;
                    }
                },
            };
            enter(inside);
            let b = m.try_lock().expect("the owner relocks");
            assert_eq!(m.recursion(), 2);
            b.set(a.get() + 1);
            drop(b);
            assert_eq!(m.recursion(), 1);
            leave(inside);
        }
    });
    assert_eq!(m.lock().get(), 40_000);
    assert_eq!((m.recursion(), m.owner()), (0, None));
}

#[test]
fn stress_rwlock_writers_readers_and_timeouts() {
    use posixrt::sync::RwLock;
    // Writers keep (a, b) equal; readers must never see them differ. Timed reads and
    // writes with tiny timeouts exercise the give-up paths (a writer that times out
    // must let the readers it held back go).
    let l: &'static RwLock<(u64, u64)> = Box::leak(Box::new(RwLock::new((0, 0))));
    let writes: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    stress_run(6, move |t| {
        let end = Instant::now() + Duration::from_millis(1500);
        let mut i = 0u64;
        while Instant::now() < end {
            i += 1;
            if t < 2 {
                let g = if i % 2 == 0 {
                    Some(l.write())
                } else {
                    l.try_write_for(Duration::from_micros(20))
                };
                if let Some(mut g) = g {
                    g.0 += 1;
                    for _ in 0..50 {
                        std::hint::spin_loop();
                    }
                    g.1 = g.0;
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            } else {
                let g = if i % 3 == 0 {
                    l.try_read_for(Duration::from_micros(20))
                } else if i % 3 == 1 {
                    l.try_read()
                } else {
                    Some(l.read())
                };
                if let Some(g) = g {
                    assert_eq!(g.0, g.1, "a reader saw a half-done write");
                }
            }
        }
    });
    let g = l.read();
    assert_eq!(g.0, u64::from(writes.load(Ordering::Relaxed)));
    assert_eq!(g.0, g.1);
    drop(g);
    assert!(l.try_write().is_some());
}

#[test]
fn stress_semaphore_producers_consumers() {
    use posixrt::sync::Semaphore;
    const EACH: u32 = 20_000;
    let sem: &'static Semaphore = Box::leak(Box::new(Semaphore::new(0).unwrap()));
    let taken: &'static AtomicU32 = Box::leak(Box::new(AtomicU32::new(0)));
    stress_run(5, move |t| {
        if t < 2 {
            for _ in 0..EACH {
                sem.post().unwrap();
            }
        } else {
            let mut i = 0u32;
            while taken.load(Ordering::SeqCst) < 2 * EACH {
                i += 1;
                let ok = match i % 3 {
                    0 => sem.try_wait(),
                    1 => sem.wait_for(Duration::from_micros(100)).is_ok(),
                    _ => sem.wait_for(Duration::from_millis(20)).is_ok(),
                };
                if ok {
                    taken.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
    });
    assert_eq!(taken.load(Ordering::SeqCst), 2 * EACH);
    assert_eq!(sem.value(), 0);
    assert_eq!(sem.waiters(), 0);
}

#[test]
fn stress_condvar_bounded_queue_notify_one() {
    use posixrt::sync::Condvar;
    use std::collections::VecDeque;
    // A bounded queue with notify_one on two condvars: a lost wake-up leaves a
    // producer or consumer asleep forever (caught by stress_run's 60 s watchdog).
    const PER_PRODUCER: u64 = 10_000;
    struct Q {
        m: NormalMutex<VecDeque<u64>>,
        not_empty: Condvar,
        not_full: Condvar,
        sum: std::sync::atomic::AtomicU64,
        got: AtomicU32,
    }
    let q: &'static Q = Box::leak(Box::new(Q {
        m: NormalMutex::new(VecDeque::new()),
        not_empty: Condvar::new(),
        not_full: Condvar::new(),
        sum: std::sync::atomic::AtomicU64::new(0),
        got: AtomicU32::new(0),
    }));
    stress_run(4, move |t| {
        if t < 2 {
            for v in 1..=PER_PRODUCER {
                let mut g = q.m.lock();
                while g.len() >= 4 {
                    q.not_full.wait(&mut g);
                }
                g.push_back(v);
                drop(g);
                q.not_empty.notify_one();
            }
        } else {
            for _ in 0..PER_PRODUCER {
                let mut g = q.m.lock();
                while g.is_empty() {
                    // Mix untimed and timed waits; a timeout is just a re-check.
                    if t == 2 {
                        q.not_empty.wait(&mut g);
                    } else {
                        q.not_empty.wait_for(&mut g, Duration::from_micros(200));
                    }
                }
                let v = g.pop_front().expect("non-empty");
                drop(g);
                q.not_full.notify_one();
                q.sum.fetch_add(v, Ordering::Relaxed);
                q.got.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    assert_eq!(q.got.load(Ordering::Relaxed) as u64, 2 * PER_PRODUCER);
    assert_eq!(
        q.sum.load(Ordering::Relaxed),
        2 * (PER_PRODUCER * (PER_PRODUCER + 1) / 2)
    );
    assert!(q.m.lock().is_empty());
    assert_eq!((q.not_empty.waiters(), q.not_full.waiters()), (0, 0));
}

/// Two PI mutexes locked in opposite orders: the kernel walks the PI chain when the
/// second wait would close the cycle and refuses it with EDEADLK, reported as a
/// deadlock (not as a relock); the other thread then gets its lock.
#[test]
fn pi_deadlock_cycle_is_refused_by_the_kernel() {
    let a = PiMutex::new(());
    let b = PiMutex::new(());
    let barrier = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        let first = s.spawn(|| {
            let _ga = a.lock();
            barrier.wait();
            // Blocks in FUTEX_LOCK_PI until the other thread gives up `b`.
            b.lock_checked().map(drop)
        });
        let second = s.spawn(|| {
            let gb = b.lock();
            barrier.wait();
            assert!(
                poll(|| unsafe { b.raw() }.has_waiters()),
                "first never blocked"
            );
            let e = a.lock_checked().map(drop).unwrap_err();
            drop(gb);
            e
        });
        let e = second.join().unwrap();
        assert_eq!(e.kind(), ErrorKind::Deadlock, "{e}");
        assert!(e.to_string().contains("deadlock"), "{e}");
        assert!(first.join().unwrap().is_ok());
    });
    assert!(a.try_lock().is_some() && b.try_lock().is_some());
}

// ---- PiCondvar: requeue-PI ----

#[test]
fn stress_pi_condvar_queue_notify_one_and_all() {
    use posixrt::sync::PiCondvar;
    use std::collections::VecDeque;
    const PER_PRODUCER: u64 = 10_000;
    struct Q {
        m: PiMutex<VecDeque<u64>>,
        not_empty: PiCondvar,
        not_full: PiCondvar,
        sum: std::sync::atomic::AtomicU64,
        got: AtomicU32,
    }
    let q: &'static Q = Box::leak(Box::new(Q {
        m: PiMutex::new(VecDeque::new()),
        not_empty: PiCondvar::new(),
        not_full: PiCondvar::new(),
        sum: std::sync::atomic::AtomicU64::new(0),
        got: AtomicU32::new(0),
    }));
    stress_run(5, move |t| {
        if t < 2 {
            for v in 1..=PER_PRODUCER {
                let mut g = q.m.lock();
                while g.len() >= 4 {
                    q.not_full.wait(&mut g).unwrap();
                }
                g.push_back(v);
                // Notify while holding (requeue onto the held mutex) or after.
                if v % 2 == 0 {
                    q.not_empty.notify_one();
                    drop(g);
                } else {
                    drop(g);
                    q.not_empty.notify_all();
                }
            }
        } else {
            let mut i = 0u64;
            loop {
                let mut g = q.m.lock();
                while g.is_empty() && q.got.load(Ordering::SeqCst) < 2 * PER_PRODUCER as u32 {
                    i += 1;
                    if i % 3 == 0 {
                        q.not_empty.wait(&mut g).unwrap();
                    } else {
                        q.not_empty
                            .wait_for(&mut g, Duration::from_micros(300))
                            .unwrap();
                    }
                }
                let Some(v) = g.pop_front() else {
                    return; // everything was consumed
                };
                let got = q.got.fetch_add(1, Ordering::SeqCst) + 1;
                q.not_full.notify_all();
                if got == 2 * PER_PRODUCER as u32 {
                    // The last item: wake consumers asleep in an untimed wait, or they
                    // would wait for an item that never comes.
                    q.not_empty.notify_all();
                }
                drop(g);
                q.sum.fetch_add(v, Ordering::Relaxed);
            }
        }
    });
    assert_eq!(q.got.load(Ordering::SeqCst) as u64, 2 * PER_PRODUCER);
    assert_eq!(
        q.sum.load(Ordering::Relaxed),
        2 * (PER_PRODUCER * (PER_PRODUCER + 1) / 2)
    );
    assert_eq!(unsafe { q.m.raw() }.word(), 0);
    assert_eq!((q.not_empty.waiters(), q.not_full.waiters()), (0, 0));
}

#[test]
fn pi_condvar_refuses_a_second_mutex_while_waited_on() {
    use posixrt::sync::PiCondvar;
    let (a, b) = (PiMutex::new(false), PiMutex::new(()));
    let cv = PiCondvar::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut g = a.lock();
            while !*g {
                cv.wait(&mut g).unwrap();
            }
        });
        assert!(poll(|| cv.waiters() == 1 && !a.is_locked()));
        let mut gb = b.lock();
        let e = cv.wait(&mut gb).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        // Nothing was unlocked: still ours.
        assert_eq!(unsafe { b.raw() }.owner(), Some(current_tid()));
        drop(gb);
        *a.lock() = true;
        cv.notify_all();
    });
    // Nobody waits any more: the condvar may serve another mutex now.
    let mut gb = b.lock();
    assert!(cv.wait_for(&mut gb, Duration::from_millis(1)).unwrap());
}

/// The point of requeue-PI: a FIFO-90 waiter notified while a FIFO-10 thread holds
/// the mutex is requeued onto the mutex as a PI waiter inside `notify_one`, so the
/// holder runs at 90 when `notify_one` returns, without the waiter having run.
#[test]
fn pi_condvar_requeue_boosts_the_holder_inside_notify() {
    use posixrt::sync::PiCondvar;
    let _g = serial();
    if !have_rt() {
        assert_eq!(set_self(libc::SCHED_FIFO, 10), Err(libc::EPERM));
        return;
    }
    let cpu = first_cpu();
    let shared = Arc::new((PiMutex::new(false), PiCondvar::new()));
    let waiter_tid = Arc::new(AtomicU32::new(0));
    let waiter = {
        let (shared, waiter_tid) = (shared.clone(), waiter_tid.clone());
        spawn_fifo(cpu, 90, move || {
            waiter_tid.store(current_tid(), Ordering::SeqCst);
            let (m, cv) = (&shared.0, &shared.1);
            let mut g = m.lock();
            while !*g {
                cv.wait(&mut g).unwrap();
            }
            kernel_prio(current_tid())
        })
    };
    // The waiter is asleep in FUTEX_WAIT_REQUEUE_PI: counted, mutex free, state S.
    assert!(poll(|| {
        let t = waiter_tid.load(Ordering::SeqCst);
        t != 0
            && shared.1.waiters() == 1
            && !shared.0.is_locked()
            && std::fs::read_to_string(format!("/proc/self/task/{t}/stat"))
                .map(|s| s[s.rfind(')').unwrap() + 2..].starts_with('S'))
                .unwrap_or(false)
    }));
    let wtid = waiter_tid.load(Ordering::SeqCst);
    let holder = {
        let shared = shared.clone();
        spawn_fifo(cpu, 10, move || {
            let (m, cv) = (&shared.0, &shared.1);
            let mut g = m.lock();
            let before = kernel_prio(current_tid());
            let switches = voluntary_switches(wtid);
            *g = true;
            let woke = cv.notify_one();
            // Requeued onto our mutex: boosted now, before we unlock.
            let during = kernel_prio(current_tid());
            let has_waiters = unsafe { m.raw() }.has_waiters();
            // The waiter never ran: a plain wake-up would have run it at once (same
            // CPU, higher priority) to block again in FUTEX_LOCK_PI.
            let not_woken = voluntary_switches(wtid) == switches;
            drop(g);
            let after = kernel_prio(current_tid());
            (before, woke, during, has_waiters, not_woken, after)
        })
    };
    let (before, woke, during, has_waiters, not_woken, after) = holder.join().unwrap();
    assert_eq!((before, woke), (-11, true));
    assert!(not_woken, "the waiter ran between notify_one and unlock");
    assert_eq!(during, -91, "the holder was not boosted inside notify_one");
    assert!(has_waiters);
    assert_eq!(after, -11);
    assert_eq!(waiter.join().unwrap(), -91);
}

// ---- timeouts survive signals (EINTR retries) ----

extern "C" fn ignore_signal(_: libc::c_int) {}

/// Runs `timed()` (which must time out after `wait`) on a thread that receives a
/// stream of SIGUSR2 signals from a handler installed **without** SA_RESTART, so
/// every futex sleep returns EINTR. The wait must neither return early nor succeed.
fn timed_wait_under_signals(wait: Duration, timed: impl Fn() -> bool + Send + Sync) {
    // SAFETY: a handler that does nothing is async-signal-safe; the sigaction is
    // fully initialised (no SA_RESTART on purpose).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = ignore_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = 0;
        assert_eq!(libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut()), 0);
    }
    let done = AtomicBool::new(false);
    let pt = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            // SAFETY: pthread_self has no preconditions.
            pt.store(unsafe { libc::pthread_self() } as u64, Ordering::SeqCst);
            let t0 = Instant::now();
            let got = timed();
            done.store(true, Ordering::SeqCst);
            (got, t0.elapsed())
        });
        while pt.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let pt = pt.load(Ordering::SeqCst) as libc::pthread_t;
        let mut sent = 0;
        while !done.load(Ordering::SeqCst) {
            // SAFETY: the thread is alive until `done` (joined below).
            unsafe { libc::pthread_kill(pt, libc::SIGUSR2) };
            sent += 1;
            std::thread::sleep(Duration::from_millis(2));
        }
        let (got, took) = h.join().unwrap();
        assert!(!got, "acquired a lock that stayed held");
        assert!(
            took >= wait,
            "returned after {took:?} < {wait:?} ({sent} signals)"
        );
        // At least one signal after the first: some landed during the wait
        // (about 30 on a quiet machine; a loaded one may sleep 2 ms much longer).
        assert!(sent >= 2, "only {sent} signals were sent");
    });
}

#[test]
fn timed_waits_retry_after_eintr() {
    use posixrt::sync::{RwLock, Semaphore};
    let wait = Duration::from_millis(60);
    let n = NormalMutex::new(());
    let g = n.lock();
    timed_wait_under_signals(wait, || n.try_lock_for(wait).is_some());
    drop(g);
    let p = PiMutex::new(());
    let g = p.lock();
    timed_wait_under_signals(wait, || p.try_lock_for(wait).is_some());
    drop(g);
    let sem = Semaphore::new(0).unwrap();
    timed_wait_under_signals(wait, || sem.wait_for(wait).is_ok());
    let l = RwLock::new(());
    let g = l.write();
    timed_wait_under_signals(wait, || l.try_read_for(wait).is_some());
    timed_wait_under_signals(wait, || l.try_write_for(wait).is_some());
    drop(g);
}

/// A forked child's thread has a new tid: the cached tid is forgotten at fork, so a
/// PI lock in the child stores the child's tid (not the parent's, which the kernel
/// would treat as a dead owner and let a second locker in).
#[test]
fn forked_child_locks_with_its_own_tid() {
    let m = PiMutex::new(());
    let parent = current_tid();
    // SAFETY: the child only makes raw syscalls, TLS accesses and lock-free atomic
    // operations (no allocation, no locks another thread could hold), then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: gettid has no preconditions.
        let real = unsafe { libc::syscall(libc::SYS_gettid) } as u32;
        let code = if current_tid() != real || real == parent {
            1
        } else {
            let g = m.lock();
            let ok = unsafe { m.raw() }.owner() == Some(real);
            drop(g);
            if ok {
                0
            } else {
                2
            }
        };
        // SAFETY: _exit is async-signal-safe and ends the child here.
        unsafe { libc::_exit(code) };
    }
    let status = child::wait_child(pid);
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    assert_eq!(
        libc::WEXITSTATUS(status),
        0,
        "1: stale cached tid, 2: lock stored the wrong owner"
    );
    assert_eq!(current_tid(), parent);
}

// ---------- endless timeouts ----------

/// `Duration::MAX`, `i64::MAX` seconds (the largest C timespec) and a far `Instant`
/// mean "no limit" on every timed wait: no overflow panic, no wrapped timespec that
/// would time out at once. Each lock is held, a waiter with such a timeout starts,
/// and gets it once the holder lets go.
#[test]
fn endless_timeouts_mean_no_limit_on_every_timed_wait() {
    let far = Instant::now() + Duration::from_secs(i64::MAX as u64 / 4);
    for limit in [Duration::MAX, Duration::from_secs(i64::MAX as u64)] {
        let pi = PiMutex::new(0);
        let normal = NormalMutex::new(0);
        let rec = RecursiveMutex::new(0);
        let rw = RwLock::new(0);
        let sem = Semaphore::new(0).unwrap();
        let g = (pi.lock(), normal.lock(), rec.lock(), rw.write());
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                assert!(pi.try_lock_for(limit).is_some());
                assert!(pi.try_lock_until(far).is_some());
                assert!(normal.try_lock_for(limit).is_some());
                assert!(rec.lock_for(limit).is_ok());
                assert!(rec.lock_until(far).is_ok());
                assert!(rw.try_read_for(limit).is_some());
                assert!(rw.try_write_until(far).is_some());
                sem.wait_for(limit).unwrap();
                sem.wait_until(far).unwrap();
            });
            std::thread::sleep(Duration::from_millis(20));
            drop(g);
            sem.post().unwrap();
            sem.post().unwrap();
            w.join().unwrap();
        });
        // Condition variables: notified, not timed out.
        let m = PiMutex::new(false);
        let cv = PiCondvar::new();
        let nm = NormalMutex::new(false);
        let ncv = Condvar::new();
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut g = m.lock();
                while !*g {
                    assert!(!cv.wait_for(&mut g, limit).unwrap(), "timed out");
                }
                let mut g = nm.lock();
                while !*g {
                    assert!(!ncv.wait_for(&mut g, limit), "timed out");
                }
            });
            std::thread::sleep(Duration::from_millis(20));
            *m.lock() = true;
            cv.notify_all();
            *nm.lock() = true;
            ncv.notify_all();
        });
    }
}
