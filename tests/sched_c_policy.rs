//! What C code in the same process reads back (`sched_getscheduler`,
//! `pthread_getschedparam`) after posixrt changed a thread's policy: the plain
//! `SCHED_*` value, unless the thread has `SCHED_RESET_ON_FORK`, which posixrt
//! keeps and which the kernel then ORs into every policy it reports (see the
//! `sched` module docs, "SCHED_RESET_ON_FORK and C callers").
//!
//! They run as root in CI; without CAP_SYS_NICE they use `SCHED_BATCH` instead
//! of `SCHED_FIFO` (the flag behaves the same).

#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

use posixrt::sched::{self, Builder, Policy, Priority};

/// What the calling thread's C code reads: `(sched_getscheduler(0),
/// pthread_getschedparam(pthread_self()) policy, its priority)`.
fn c_views() -> (i32, i32, i32) {
    let mut policy = -1;
    let mut p = libc::sched_param { sched_priority: -1 };
    // SAFETY: both out-pointers are valid and writable; pthread_self is live.
    let r = unsafe { libc::pthread_getschedparam(libc::pthread_self(), &mut policy, &mut p) };
    assert_eq!(r, 0, "pthread_getschedparam");
    // SAFETY: sched_getscheduler takes a plain id and touches no memory.
    let kernel = unsafe { libc::sched_getscheduler(0) };
    assert!(kernel >= 0, "sched_getscheduler");
    (kernel, policy, p.sched_priority)
}

/// The priority the tests set: SCHED_FIFO 10 where allowed, else SCHED_BATCH.
fn target() -> Priority {
    if can_rt() {
        Priority::fifo(10).unwrap()
    } else {
        Priority::batch()
    }
}

/// A thread without the flag: whichever posixrt call changed its policy, C's
/// `sched_getscheduler` returns exactly `SCHED_FIFO` (posixrt never adds the
/// flag), and so does `pthread_getschedparam` after the calls that go through
/// glibc (`set_current_scheduling`, `JoinHandle::set_scheduling`).
#[test]
fn c_callers_read_the_plain_policy_of_a_thread_without_the_flag() {
    let want = target();
    let raw = want.policy().as_raw();
    let own = std::thread::spawn(move || {
        sched::set_current_scheduling(want).unwrap();
        c_views()
    })
    .join()
    .unwrap();
    assert_eq!(own, (raw, raw, want.value()));

    let by_tid = std::thread::spawn(move || {
        sched::set_thread_scheduling(sched::gettid(), want).unwrap();
        // SAFETY: sched_getscheduler takes a plain id and touches no memory.
        unsafe { libc::sched_getscheduler(0) }
    })
    .join()
    .unwrap();
    assert_eq!(by_tid, raw);

    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            rx.recv().unwrap();
            c_views()
        })
        .unwrap();
    h.set_scheduling(want).unwrap();
    tx.send(()).unwrap();
    assert_eq!(h.join().unwrap(), (raw, raw, want.value()));
}

/// A thread with `SCHED_RESET_ON_FORK` (set by its launcher: rtkit, `chrt -R`):
/// posixrt keeps the flag, and the kernel reports it in the policy of
/// `sched_getscheduler` (sched(7)), as it did before posixrt's call; glibc's
/// `pthread_getschedparam` passes on what it set or read. Masking the flag off
/// gives `SCHED_FIFO`, which is what posixrt's own readers return.
#[test]
fn c_callers_read_the_flag_of_a_thread_with_it_and_masking_gives_the_policy() {
    let want = target();
    let raw = want.policy().as_raw();
    let (before, after, ours) = std::thread::spawn(move || {
        let p = libc::sched_param { sched_priority: 0 };
        let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
        // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
        assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
        // SAFETY: as in c_views.
        let before = unsafe { libc::sched_getscheduler(0) };
        sched::set_current_scheduling(want).unwrap();
        let ours = (
            sched::get_scheduler(None).unwrap(),
            sched::current_scheduling().unwrap(),
        );
        (before, c_views(), ours)
    })
    .join()
    .unwrap();
    let flag = libc::SCHED_RESET_ON_FORK;
    // Already there before posixrt's call: the kernel's report, not posixrt's.
    assert_eq!(before, libc::SCHED_OTHER | flag);
    assert_eq!(after, (raw | flag, raw | flag, want.value()));
    assert_eq!(after.0 & !flag, raw);
    assert_eq!(after.1 & !flag, raw);
    assert_eq!(ours, (want.policy(), want));
}

/// A thread created by one with the flag runs `SCHED_OTHER` 0 (the kernel
/// resets it and clears the flag), and `sched_getscheduler` and posixrt say so,
/// whatever glibc's copy of the creator's class (which it hands to the new
/// thread's `pthread_getschedparam`) claims.
#[test]
fn a_thread_created_by_one_with_the_flag_is_reported_as_sched_other() {
    let want = target();
    let (kernel, ours) = std::thread::spawn(move || {
        let p = libc::sched_param { sched_priority: 0 };
        let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
        // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
        assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
        sched::set_current_scheduling(want).unwrap();
        std::thread::spawn(|| {
            // SAFETY: as in c_views.
            let kernel = unsafe { libc::sched_getscheduler(0) };
            (kernel, sched::current_scheduling().unwrap())
        })
        .join()
        .unwrap()
    })
    .join()
    .unwrap();
    assert_eq!(kernel, libc::SCHED_OTHER);
    assert_eq!(ours.policy(), Policy::Other);
}
