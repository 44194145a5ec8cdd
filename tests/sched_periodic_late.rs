//! A loop body that runs past its period: `Periodic::wait` is then called after
//! the wake-up was due, sleeps not at all, and the `latency_ns` it reports is
//! the loop's own overrun, not the kernel's wake-up latency. The `Wakeup` must
//! say so, or a control loop that overruns every period by a fraction of it
//! reports `overruns: 0` and a wake-up latency that looks like a kernel problem.

use std::time::Duration;

use posixrt::sched::periodic::Periodic;

fn monotonic_ns() -> i64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

#[test]
fn a_wait_called_after_the_due_time_reports_how_late_it_was_called() {
    let mut timer = Periodic::new(Duration::from_millis(200)).unwrap();
    // Called at once: long before the first wake-up is due, so it sleeps.
    let first = timer.wait().unwrap();
    assert_eq!(first.late_call_ns, 0, "{first:?}");
    // The loop body runs past the next wake-up's due time.
    let due = timer.next_ns();
    while monotonic_ns() <= due {
        std::thread::sleep(Duration::from_millis(1));
    }
    let late = timer.wait().unwrap();
    assert_eq!(late.expected_ns, due);
    assert!(late.late_call_ns > 0, "{late:?}");
    // The call came before the wait returned: part of the latency is the
    // caller's own lateness.
    assert!(late.late_call_ns <= late.latency_ns, "{late:?}");
}

/// The statistics count the wake-ups whose `wait` came late, so a summary
/// shows that the loop, not the kernel, made them late.
#[test]
fn latency_stats_count_the_late_calls() {
    use posixrt::sched::periodic::{LatencyStats, Wakeup};
    let mut stats = LatencyStats::new(10);
    for late_call_ns in [0, 3_000, 0] {
        stats.record(&Wakeup {
            expected_ns: 0,
            latency_ns: 4_000,
            overruns: 0,
            late_call_ns,
        });
    }
    assert_eq!((stats.count(), stats.late_calls()), (3, 1));
}
