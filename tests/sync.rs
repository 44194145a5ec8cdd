//! Integration tests of posixrt::sync: the PI boost as the kernel reports it, the
//! ceiling protocol, try/timed/relock behaviour and owner death.
//!
//! Tests that change scheduling are serialised with `SCHED_LOCK` and pin every thread
//! they start to one CPU. No test asserts a duration: waits are bounded polls on
//! states, and the assertions are on priorities, orders and error kinds.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use posixrt::sync::{
    ceiling_mutex, current_tid, CeilingMutex, MutexExt, NormalMutex, PiMutex, RawPiMutex,
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

/// Sets the calling thread's policy with a raw `sched_setscheduler` (behind the
/// locks' back, on purpose).
fn set_self(policy: i32, prio: i32) -> Result<(), i32> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &p) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

fn self_policy() -> (i32, i32) {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = this thread; `p` is writable.
    let pol = unsafe { libc::sched_getscheduler(0) };
    // SAFETY: as above.
    unsafe { libc::sched_getparam(0, &mut p) };
    (pol, p.sched_priority)
}

/// Whether this process may use SCHED_FIFO (tried in a throwaway thread).
fn have_rt() -> bool {
    std::thread::spawn(|| set_self(libc::SCHED_FIFO, 1).is_ok())
        .join()
        .unwrap()
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

/// Field 18 (prio) of /proc/self/task/TID/stat: the effective priority the kernel
/// schedules with; -1 - p for SCHED_FIFO priority p, 20 + nice for SCHED_OTHER.
fn kernel_prio(tid: u32) -> i64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let after = &s[s.rfind(')').expect("comm") + 2..];
    // `after` starts at field 3 (state); field 18 is index 15.
    after
        .split(' ')
        .nth(15)
        .expect("field 18")
        .parse()
        .expect("prio")
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

#[test]
fn pi_owner_death_without_waiters_is_reported() {
    let m = Arc::new(PiMutex::new(5));
    let m2 = m.clone();
    let dead = std::thread::spawn(move || {
        std::mem::forget(m2.lock());
        current_tid()
    })
    .join()
    .unwrap();
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

/// The `priority_inversion` example binary (built by a plain `cargo test`, which
/// compiles the examples), if present.
fn example_binary() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.parent()?.join("examples/priority_inversion");
    p.exists().then_some(p)
}

#[test]
fn priority_inversion_example_prints_listing_6_8_order() {
    let _g = serial();
    let Some(bin) = example_binary() else {
        eprintln!("priority_inversion not built (run plain `cargo test`); nothing to check");
        return;
    };
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
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    if !have_rt() {
        assert!(text.contains("CAP_SYS_NICE"), "{text}");
        return;
    }
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
fn priority_inversion_example_without_privilege_explains_and_exits_0() {
    let _g = serial();
    let Some(bin) = example_binary() else {
        eprintln!("priority_inversion not built (run plain `cargo test`); nothing to check");
        return;
    };
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(&bin);
    cmd.args(["--json", "--runs", "1"]);
    // SAFETY: between fork and exec the child only makes async-signal-safe syscalls.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Drop CAP_SYS_NICE from the bounding set and, as root, become nobody.
            libc::prctl(libc::PR_CAPBSET_DROP, 23, 0, 0, 0);
            if libc::geteuid() == 0 && libc::setresuid(65534, 65534, 65534) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = match cmd.output() {
        Ok(o) => o,
        // uid 65534 may be unable to execute a binary under /root: nothing to check.
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => return,
        Err(e) => panic!("{e}"),
    };
    if out.status.code() == Some(126) {
        return;
    }
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "{\"critical_section_ms\": 50.000, \"blocked_ms\": {\"none\": null, \"inherit\": null, \"protect\": null}}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("EPERM") && err.contains("CAP_SYS_NICE"),
        "{err}"
    );
}
