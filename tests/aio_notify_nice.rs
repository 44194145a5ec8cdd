//! A `SIGEV_THREAD` callback runs at the nice value of the thread that made
//! the context's first `Thread` request, as a thread that one created would
//! (Linux keeps a nice value per thread, and a new thread takes its
//! creator's): on every notification thread, whichever thread started it, and
//! whatever an earlier callback on the same thread changed. Callbacks used to
//! run at the nice value of the thread that started their notification
//! thread (an engine thread, or a program thread that reaped a completion),
//! and one that raised its own passed it on to the next. Its class follows
//! the same rule: `SCHED_RESET_ON_FORK` makes a real-time submitter's
//! callbacks `SCHED_OTHER` (they used to take the submitter's own class).
//! `both!(name, f)` makes `name::uring` and `name::threads`.

use std::sync::mpsc;
use std::time::Duration;

use posixrt::aio::{Backend, Notify, Op};

mod common;
use common::both;
use common::ctx;

/// The calling thread's kernel id.
fn tid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The calling thread's nice value (Linux keeps one per thread).
fn nice() -> i32 {
    // The system call, which returns `20 - nice` (1..=40): -1 is only a
    // failure. SAFETY: plain integers; reads the nice value of this thread.
    let r = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, tid()) };
    assert!(r > 0, "getpriority: {}", std::io::Error::last_os_error());
    20 - r as i32
}

/// Sets the calling thread's nice value; false if refused (a lower one needs
/// CAP_SYS_NICE or RLIMIT_NICE).
fn set_nice(n: i32) -> bool {
    // SAFETY: plain integers; changes the nice value of this thread only.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, tid() as libc::id_t, n) == 0 }
}

/// Whether this process may lower a thread's nice value to `n`.
fn may_lower_nice_to(n: i32) -> bool {
    use rustix::thread::{capabilities, CapabilitySet};
    let cap = capabilities(None).is_ok_and(|c| c.effective.contains(CapabilitySet::SYS_NICE));
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nice).current;
    cap || lim.is_some_and(|l| l >= (20 - n) as u64)
}

/// What a callback found when it started.
struct Start {
    tid: i32,
    nice: i32,
}

fn callbacks_run_at_the_submitters_nice(b: Backend) {
    let base = nice();
    // Raising the number needs no privilege. The callbacks raise theirs once
    // more, to 19.
    let mine = (base + 7).min(18);
    if mine <= base {
        eprintln!("skipped: the test runs at nice {base}, no room above it");
        return;
    }
    let restores = may_lower_nice_to(mine);
    // The context, and the engine threads it starts, at the test's nice
    // value; the pool is started by the thread at `mine`.
    let aio = ctx(b);
    let f = common::temp_file(&[5u8; 64]);
    let starts = std::thread::scope(|sc| {
        sc.spawn(|| {
            assert!(set_nice(mine), "raising the nice value to {mine}");
            let (tx, rx) = mpsc::channel();
            let mut starts = Vec::new();
            // One at a time: the pool reuses its idle thread.
            for i in 0..10 {
                let tx = tx.clone();
                let n = Notify::thread(i, move |_| {
                    let _ = tx.send(Start {
                        tid: tid(),
                        nice: nice(),
                    });
                    let _ = set_nice(19);
                });
                let mut r = aio
                    .submit(Op::read(&f, i as i64, vec![0u8; 4]).notify(n))
                    .unwrap();
                let s = rx
                    .recv_timeout(Duration::from_secs(10))
                    .unwrap_or_else(|_| panic!("callback {i} did not run"));
                assert_eq!(r.wait().unwrap().data(), &[5u8; 4]);
                starts.push(s);
            }
            starts
        })
        .join()
        .expect("the submitting thread")
    });
    let mut reused = 0;
    for (i, s) in starts.iter().enumerate() {
        let again = starts[..i].iter().any(|e| e.tid == s.tid);
        reused += usize::from(again);
        if again && !restores {
            // Documented: without the privilege to lower it back, a raise
            // stays for the next callbacks on that thread.
            assert_eq!(s.nice, 19, "callback {i}");
        } else {
            assert_eq!(s.nice, mine, "callback {i} ran at another nice value");
        }
    }
    assert!(reused > 0, "no notification thread ran two callbacks");
}
both!(
    callbacks_run_at_the_submitters_nice,
    callbacks_run_at_the_submitters_nice
);

/// The calling thread's nice value, policy (without `SCHED_RESET_ON_FORK`)
/// and priority, the kernel's view.
fn sched_now() -> (i32, i32, i32) {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: both calls are about the calling thread; `p` is writable.
    let policy = unsafe { libc::sched_getscheduler(0) };
    // SAFETY: as above.
    assert_eq!(unsafe { libc::sched_getparam(0, &mut p) }, 0);
    (
        nice(),
        policy & !libc::SCHED_RESET_ON_FORK,
        p.sched_priority,
    )
}

/// SCHED_OTHER's `(policy, priority)`.
const OTHER: (i32, i32) = (libc::SCHED_OTHER, 0);

/// Runs two callbacks of a context whose first `Thread` request comes from a
/// thread that `setup` prepared (it returns the nice value, policy and
/// priority the callbacks should see, or `None` where the test lacks the
/// privilege to prepare it): the first on the pool's first thread, started
/// by that thread, holds it until the second has run on a second
/// notification thread, started by whichever thread reaps its completion
/// (the test's, at its own nice value and class, or an engine thread). Both
/// see the expected nice value and class.
fn pool_threads_at_the_submitters_nice(b: Backend, setup: fn() -> Option<(i32, i32, i32)>) {
    let aio = ctx(b);
    let f = common::temp_file(&[6u8; 64]);
    let (tx, rx) = mpsc::channel();
    let (release, held) = mpsc::channel::<()>();
    let held = std::sync::Mutex::new(held);
    let first = {
        let tx = tx.clone();
        Notify::thread(0, move |_| {
            let _ = tx.send(("first", sched_now()));
            let _ = held.lock().unwrap().recv_timeout(Duration::from_secs(10));
        })
    };
    let submitted = std::thread::scope(|sc| {
        sc.spawn(|| {
            let want = setup()?;
            let r = aio.submit(Op::read(&f, 0, vec![0u8; 4]).notify(first));
            Some((want, r.unwrap()))
        })
        .join()
        .expect("the submitting thread")
    });
    let Some((want, mut r0)) = submitted else {
        return;
    };
    let (which, n) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("first callback");
    assert_eq!((which, n), ("first", want));
    let second = Notify::thread(1, move |_| {
        let _ = tx.send(("second", sched_now()));
    });
    let mut r1 = aio
        .submit(Op::read(&f, 4, vec![0u8; 4]).notify(second))
        .unwrap();
    assert_eq!(r1.wait().unwrap().data(), &[6u8; 4]);
    let got = rx.recv_timeout(Duration::from_secs(10));
    let _ = release.send(());
    assert_eq!(r0.wait().unwrap().data(), &[6u8; 4]);
    let (which, n) = got.expect("second callback");
    assert_eq!(which, "second");
    assert_eq!(
        n, want,
        "the second notification thread's nice value and class"
    );
}

/// A submitter 7 above the test's nice value (no privilege needed), at the
/// test's class (SCHED_OTHER).
fn raised() -> Option<(i32, i32, i32)> {
    let mine = (nice() + 7).min(19);
    if mine <= nice() {
        eprintln!(
            "skipped: the test runs at nice {}, no room above it",
            nice()
        );
        return None;
    }
    assert!(set_nice(mine), "raising the nice value to {mine}");
    Some((mine, OTHER.0, OTHER.1))
}

fn every_pool_thread_takes_a_raised_nice(b: Backend) {
    pool_threads_at_the_submitters_nice(b, raised);
}
both!(every_pool_thread, every_pool_thread_takes_a_raised_nice);

/// Gives the calling thread `policy` at `priority` with
/// `SCHED_RESET_ON_FORK`.
fn reset_on_fork(policy: i32, priority: i32) {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
    let r = unsafe { libc::sched_setscheduler(0, policy | libc::SCHED_RESET_ON_FORK, &p) };
    assert_eq!(r, 0, "{}", std::io::Error::last_os_error());
}

/// A `SCHED_RESET_ON_FORK` submitter at a negative nice value (-3): a thread
/// it created would start at 0. Without the privilege, the documented refusal.
fn negative_reset_on_fork() -> Option<(i32, i32, i32)> {
    if !may_lower_nice_to(-3) {
        assert!(!set_nice(-3), "nice -3 without CAP_SYS_NICE or RLIMIT_NICE");
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EACCES)
        );
        return None;
    }
    assert!(set_nice(-3), "lowering the nice value to -3");
    reset_on_fork(libc::SCHED_OTHER, 0);
    Some((0, OTHER.0, OTHER.1))
}

fn negative_nice_resets_on_fork(b: Backend) {
    pool_threads_at_the_submitters_nice(b, negative_reset_on_fork);
}
both!(
    negative_nice_with_reset_on_fork,
    negative_nice_resets_on_fork
);

/// Makes the calling thread `SCHED_FIFO` 10, pinned to CPU 0 (its callbacks
/// block, never spin; the pin bounds what a mistake could take), at nice 5
/// above the test's; with `SCHED_RESET_ON_FORK` if `reset`. False, after
/// checking the documented refusal, without the privilege for `SCHED_FIFO`.
fn real_time(reset: bool) -> bool {
    assert!(set_nice((nice() + 5).min(19)), "raising the nice value");
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU 0 is in range;
    // the call only reads the set, and pins this thread only.
    unsafe {
        let mut cpus: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut cpus);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &cpus),
            0
        );
    }
    let p = libc::sched_param { sched_priority: 10 };
    // SAFETY: as in `reset_on_fork`: a probe of the privilege, this thread only.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        assert_eq!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EPERM),
            "SCHED_FIFO without CAP_SYS_NICE or RLIMIT_RTPRIO"
        );
        return false;
    }
    if reset {
        reset_on_fork(libc::SCHED_FIFO, 10);
    }
    true
}

/// A `SCHED_FIFO` 10 submitter with `SCHED_RESET_ON_FORK`: a thread it
/// created would start at `SCHED_OTHER` and nice 0, as the callbacks do (and
/// as the C library's `SIGEV_THREAD` functions do). They used to take
/// `SCHED_FIFO` 10, the submitter's own class, with nice 0.
fn real_time_reset_on_fork() -> Option<(i32, i32, i32)> {
    real_time(true).then_some((0, OTHER.0, OTHER.1))
}

fn real_time_resets_on_fork(b: Backend) {
    pool_threads_at_the_submitters_nice(b, real_time_reset_on_fork);
}
both!(real_time_with_reset_on_fork, real_time_resets_on_fork);

/// A `SCHED_FIFO` 10 submitter without `SCHED_RESET_ON_FORK`: a thread it
/// created would start at its class and nice value, as the callbacks do.
fn real_time_inherited() -> Option<(i32, i32, i32)> {
    real_time(false).then(|| (nice(), libc::SCHED_FIFO, 10))
}

fn real_time_passes_on(b: Backend) {
    pool_threads_at_the_submitters_nice(b, real_time_inherited);
}
both!(real_time_without_reset_on_fork, real_time_passes_on);
