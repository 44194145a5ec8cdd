//! Review test: the error of a priority switch the sporadic server could not
//! make carries the hint every other scheduling EPERM carries.
//!
//! The server runs under a seccomp filter that fails `sched_setscheduler` with
//! EPERM when the policy carries `SCHED_RESET_ON_FORK` (the crate keeps a
//! thread's flag in its switches); the served thread has the flag, so its
//! demotion fails. Its own binary: no other test may start the server first.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/seccomp.rs"]
mod seccomp;

use std::time::{Duration, Instant};

use caps::{can_serve, wait_for};
use posixrt::sched::cputime::CpuClock;
use posixrt::sched::{self, sporadic, sporadic::SporadicParams, Builder, CpuSet, Priority};
use posixrt::ErrorKind;

const FIFO_RESET_ON_FORK: i32 = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;

/// The module docs: "Every EPERM from a scheduling call is PermissionDenied
/// with a hint that names both [CAP_SYS_NICE and RLIMIT_RTPRIO]". The error
/// `Served::last_error` reports for a refused switch was built from the bare
/// errno: no hint at all.
#[test]
fn a_refused_switch_is_reported_with_its_hint() {
    // One pending replenishment is the most: the first block drops the thread
    // to the low priority (a switch, with no spinning), and the replenishment
    // comes back only after a minute.
    let params = SporadicParams::new(10, Duration::from_secs(60), Duration::from_millis(2), 1);
    if !can_serve(params) {
        return;
    }
    let cpu = CpuSet::allowed().unwrap().iter().last().unwrap();
    seccomp::start_sporadic_server_failing(
        libc::SYS_sched_setscheduler,
        Some(FIFO_RESET_ON_FORK as u32),
        libc::EPERM,
    );
    let h = Builder::new()
        .name("ss-hint")
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            let p = libc::sched_param { sched_priority: 0 };
            // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
            let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
            assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
            let served = sporadic::serve(sched::gettid(), params, 50).unwrap();
            // Some CPU at the normal priority, then a block: its replenishment
            // fills the one slot, so the thread must wake at the low priority.
            let me = CpuClock::current_thread();
            let (c0, t0) = (me.now().unwrap(), Instant::now());
            while me.now().unwrap() < c0 + Duration::from_micros(100)
                && t0.elapsed() < Duration::from_secs(1)
            {
                std::hint::spin_loop();
            }
            sporadic::blocking(|| ());
            let failed = wait_for(Duration::from_secs(5), || served.last_error().is_some());
            let e = served.last_error();
            drop(served);
            let _ = sched::set_current_scheduling(Priority::other());
            (failed, e)
        })
        .unwrap();
    let (failed, e) = h.join().unwrap();
    assert!(failed, "the demotion did not fail");
    let e = e.unwrap();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert!(
        e.hint().is_some_and(|h| h.contains("CAP_SYS_NICE")),
        "no hint: {e}"
    );
}
