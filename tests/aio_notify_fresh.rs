//! A `SIGEV_THREAD` callback runs "as if in a new thread": a callback that
//! changes its thread's signal mask, scheduling class or CPU set (it is
//! program code, and may) does not pass the change on to the callbacks that
//! run after it on the same notification thread. Each starts with every
//! signal blocked, at the class of the program's thread that started the pool (see
//! `aio_notify_mask.rs`). They used to start with whatever the previous
//! callback on that thread left. `both!(name, f)` makes `name::uring` and
//! `name::threads`.

use std::sync::mpsc;
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Notify, Op, MAX_NOTIFY_THREADS};

mod common;
use common::both;
use common::ctx;
#[path = "common/caps.rs"]
mod caps;

/// The calling thread's policy (the kernel's view).
fn policy() -> i32 {
    // SAFETY: asks about the calling thread.
    unsafe { libc::sched_getscheduler(0) & !libc::SCHED_RESET_ON_FORK }
}

/// True if the calling thread does not block SIGUSR2.
fn usr2_open() -> bool {
    let mut m = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: a null set only reads the mask into `m`; sigismember reads it.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, std::ptr::null(), m.as_mut_ptr());
        libc::sigismember(m.as_ptr(), libc::SIGUSR2) != 1
    }
}

/// Unblocks SIGUSR2 and moves the calling thread to SCHED_BATCH (allowed
/// without privileges).
fn change_thread() {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: an emptied set with one signal added, then a mask change and a
    // class change of the calling thread only.
    unsafe {
        let mut s = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(s.as_mut_ptr());
        libc::sigaddset(s.as_mut_ptr(), libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, s.as_ptr(), std::ptr::null_mut());
        assert_eq!(
            libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_BATCH, &p),
            0
        );
    }
}

/// Runs callbacks one at a time on `aio` (for reads of `f`, 64 bytes of
/// `byte`), from the calling thread: each records its thread id and
/// `probe()`, then calls `change()` (which changes its thread), then
/// reports. Returns what each found when it started, for at least 20
/// callbacks and until a notification thread has run two of them.
///
/// A callback still running when the next request completes (between its
/// report and its return: preempted on a loaded machine) makes the pool start
/// another thread for the next one; that the reuse comes within a fixed count
/// is a matter of timing. The pool has at most [`MAX_NOTIFY_THREADS`]
/// threads, and one exits only after 10 s idle, so among that many callbacks
/// plus one, one thread runs two of them: the callbacks go on until then.
/// (Each callback also changes its thread before it reports, so that it is
/// about done when the next request completes: a thread is usually reused at
/// once.)
fn one_at_a_time<T: Send + 'static>(
    aio: &Aio,
    f: &std::fs::File,
    byte: u8,
    probe: fn() -> T,
    change: fn(),
) -> Vec<(i32, T)> {
    let (tx, rx) = mpsc::channel();
    let mut starts: Vec<(i32, T)> = Vec::new();
    let mut reused = 0;
    let mut i: usize = 0;
    while i < 20 || (reused == 0 && i <= MAX_NOTIFY_THREADS) {
        let tx = tx.clone();
        let n = Notify::thread(i, move |_| {
            let start = (rustix::thread::gettid().as_raw_nonzero().get(), probe());
            change();
            let _ = tx.send(start);
        });
        let mut r = aio
            .submit(Op::read(f, (i % 60) as i64, vec![0u8; 4]).notify(n))
            .unwrap();
        let s = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("callback {i} did not run"));
        assert_eq!(r.wait().unwrap().data(), &[byte; 4]);
        reused += usize::from(starts.iter().any(|e| e.0 == s.0));
        starts.push(s);
        i += 1;
    }
    assert!(
        reused > 0,
        "no notification thread ran two of {i} callbacks (the pool has at most {MAX_NOTIFY_THREADS})"
    );
    starts
}

/// What a callback finds when it starts: SIGUSR2 unblocked, and its policy.
fn mask_and_policy() -> (bool, i32) {
    (usr2_open(), policy())
}

fn callbacks_start_fresh(b: Backend) {
    assert_eq!(policy(), libc::SCHED_OTHER, "the test runs at SCHED_OTHER");
    let aio = ctx(b);
    let f = common::temp_file(&[3u8; 64]);
    let starts = one_at_a_time(&aio, &f, 3, mask_and_policy, change_thread);
    for (i, &(_, (open, policy))) in starts.iter().enumerate() {
        assert!(!open, "callback {i} started with SIGUSR2 unblocked");
        assert_eq!(
            policy,
            libc::SCHED_OTHER,
            "callback {i} started at another class than the program's"
        );
    }
}
both!(callbacks_start_as_on_a_new_thread, callbacks_start_fresh);

/// The calling thread's CPU set.
fn cpus() -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, which the call fills.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s),
            0
        );
        s
    }
}

/// Pins the calling thread to CPU `cpu`.
fn pin(cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; `cpu` < 2 is in
    // range; the call only reads the set and changes this thread only.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &s),
            0
        );
    }
}

/// True if `s` holds CPU 0 and no other.
fn only_cpu0(s: &libc::cpu_set_t) -> bool {
    // SAFETY: CPU_COUNT and CPU_ISSET only read the set.
    unsafe { libc::CPU_COUNT(s) == 1 && libc::CPU_ISSET(0, s) }
}

/// A callback starts at the CPU set of the thread that made the context's
/// first `Thread` request (as a thread it created would), whatever an
/// earlier callback on the same notification thread set: each one here
/// moves its thread to CPU 1. The next callback on that thread used to start
/// there.
fn callbacks_start_at_the_submitters_cpus(b: Backend) {
    let all = cpus();
    // SAFETY: CPU_COUNT and CPU_ISSET only read the set.
    if unsafe { !libc::CPU_ISSET(0, &all) || !libc::CPU_ISSET(1, &all) } {
        eprintln!("skipped: the test may not run on both CPU 0 and CPU 1");
        return;
    }
    // The context, and the engine threads it starts, on every CPU.
    let aio = ctx(b);
    let f = common::temp_file(&[4u8; 64]);
    let starts = std::thread::scope(|sc| {
        sc.spawn(|| {
            pin(0);
            one_at_a_time(&aio, &f, 4, || only_cpu0(&cpus()), || pin(1))
        })
        .join()
        .expect("the submitting thread")
    });
    for (i, &(_, on_cpu0)) in starts.iter().enumerate() {
        assert!(on_cpu0, "callback {i} did not start on CPU 0 alone");
    }
}
both!(
    callbacks_start_at_the_submitters_cpu_set,
    callbacks_start_at_the_submitters_cpus
);

/// True if the calling thread has `SCHED_RESET_ON_FORK` (the kernel's view).
fn resets_on_fork() -> bool {
    // SAFETY: asks about the calling thread.
    unsafe { libc::sched_getscheduler(0) & libc::SCHED_RESET_ON_FORK != 0 }
}

/// Moves the calling thread to `policy` (SCHED_OTHER or SCHED_BATCH: allowed
/// without privileges) with `SCHED_RESET_ON_FORK`.
fn with_reset_on_fork(policy: i32) {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
    let r = unsafe { libc::sched_setscheduler(0, policy | libc::SCHED_RESET_ON_FORK, &p) };
    assert_eq!(r, 0, "policy {policy} with SCHED_RESET_ON_FORK set");
}

/// A callback starts without `SCHED_RESET_ON_FORK`, as a new thread does (the
/// kernel clears it in the threads a thread with it creates), whatever an
/// earlier callback on the same notification thread set: each one here sets
/// it, keeping its class. The next callback on that thread used to start
/// with it (the pool put back the class only where it differed), and the
/// threads it created started at SCHED_OTHER nice 0 whatever it asked.
/// Clearing the flag needs CAP_SYS_NICE: without it, it stays, as documented.
fn callbacks_start_without_reset_on_fork(b: Backend) {
    assert!(
        !resets_on_fork(),
        "the test runs without SCHED_RESET_ON_FORK"
    );
    let aio = ctx(b);
    let f = common::temp_file(&[5u8; 64]);
    let starts = one_at_a_time(&aio, &f, 5, resets_on_fork, || {
        with_reset_on_fork(libc::SCHED_OTHER)
    });
    let cleared = caps::can_rt();
    for (i, &(tid, reset)) in starts.iter().enumerate() {
        if cleared || !starts[..i].iter().any(|e| e.0 == tid) {
            assert!(!reset, "callback {i} started with SCHED_RESET_ON_FORK");
        } else {
            assert!(
                reset,
                "callback {i} cleared SCHED_RESET_ON_FORK without CAP_SYS_NICE"
            );
        }
    }
}
both!(
    callbacks_start_without_sched_reset_on_fork,
    callbacks_start_without_reset_on_fork
);

/// The class and `SCHED_RESET_ON_FORK` of the calling thread.
fn policy_and_reset() -> (i32, bool) {
    (policy(), resets_on_fork())
}

/// A callback starts at the program's class after one that moved its thread
/// to another class with `SCHED_RESET_ON_FORK`, also without CAP_SYS_NICE
/// (which clearing the flag needs: then the flag stays, the class does
/// not). Without the privilege, the next callback on that thread used to
/// start at SCHED_BATCH: putting the class back without the flag was
/// refused (EPERM), and nothing else was tried.
fn callbacks_start_at_the_class_whatever_the_flag(b: Backend) {
    assert_eq!(policy(), libc::SCHED_OTHER, "the test runs at SCHED_OTHER");
    let aio = ctx(b);
    let f = common::temp_file(&[7u8; 64]);
    let starts = one_at_a_time(&aio, &f, 7, policy_and_reset, || {
        with_reset_on_fork(libc::SCHED_BATCH)
    });
    let cleared = caps::can_rt();
    for (i, &(tid, (policy, reset))) in starts.iter().enumerate() {
        assert_eq!(
            policy,
            libc::SCHED_OTHER,
            "callback {i} started at another class than the program's"
        );
        let after_one = starts[..i].iter().any(|e| e.0 == tid);
        assert_eq!(
            reset,
            after_one && !cleared,
            "callback {i}: SCHED_RESET_ON_FORK {reset} (CAP_SYS_NICE: {cleared})"
        );
    }
}
both!(
    callbacks_start_at_the_class_after_a_class_with_reset_on_fork,
    callbacks_start_at_the_class_whatever_the_flag
);
