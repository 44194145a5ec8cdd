//! Integration tests for `posixrt::sched`: calls on a thread that has ended.

#[path = "common/caps.rs"]
mod caps;

use std::time::Duration;

use posixrt::sched::cputime::{Budget, CpuClock};
use posixrt::sched::Builder;
use posixrt::ErrorKind;

/// A CPU-time clock outlives its thread: once the thread is gone the kernel
/// answers EINVAL, which is `NotFound` (as `CpuClock::of_thread` and every
/// scheduling call on an ended thread say), not `InvalidInput`: the caller
/// gave nothing invalid.
#[test]
fn the_cpu_clock_of_an_ended_thread_is_not_found() {
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = wait.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    let tid = h.tid();
    let by_handle = h.cpu_clock().unwrap();
    let by_tid = CpuClock::of_thread(tid).unwrap();
    let budget = Budget::new(by_tid, Duration::from_secs(1)).unwrap();
    assert!(by_handle.now().is_ok() && by_tid.resolution().is_ok());
    go.send(()).unwrap();
    h.join().unwrap();
    // The kernel releases the thread's id a moment after pthread_join returns.
    assert!(
        caps::wait_for(Duration::from_secs(10), || by_tid.now().is_err()),
        "the clock of ended thread {tid} still reads"
    );
    for e in [
        by_handle.now().unwrap_err(),
        by_tid.now().unwrap_err(),
        by_tid.resolution().unwrap_err(),
        budget.used().unwrap_err(),
        budget.remaining().unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
        assert!(e.to_string().contains(&format!("the thread {tid} ")), "{e}");
    }
    // The caller's own clocks are never "ended".
    assert!(CpuClock::current_thread().now().is_ok());
    assert!(CpuClock::current_process().now().is_ok());
}
