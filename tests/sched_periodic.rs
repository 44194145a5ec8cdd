//! Integration tests for `posixrt::sched::periodic`: the endless period and
//! wake-ups on the grid.

use std::time::Duration;

use posixrt::sched::periodic::{LatencyStats, Periodic};
use posixrt::ErrorKind;

/// An endless period (`Duration::MAX`, or `i64::MAX` seconds as in the largest C
/// timespec) is valid and means "never": the next wake-up saturates at the end of
/// CLOCK_MONOTONIC, the sleep does not fail and does not return at once (a wrapped,
/// negative timespec would). The old code refused it, and overflowed past 2^62 ns.
#[test]
fn periodic_with_an_endless_interval_never_fires_and_never_panics() {
    for d in [Duration::MAX, Duration::from_secs(i64::MAX as u64)] {
        let t = Periodic::new(d).unwrap();
        assert_eq!(t.next_ns(), i64::MAX, "{d:?}");
        assert_eq!(t.interval(), Duration::from_nanos(i64::MAX as u64));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut t = Periodic::new(Duration::MAX).unwrap();
    assert_eq!(t.wait_unless(&stop).unwrap(), None);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = t.wait().map(|w| w.expected_ns);
        let _ = tx.send(r);
    });
    // Still asleep: it neither failed (EINVAL) nor woke (a time in the past). The
    // thread is left asleep; it ends with the test process.
    assert!(matches!(
        rx.recv_timeout(Duration::from_millis(100)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
    ));
}

#[test]
fn periodic_wakeups_follow_the_grid() {
    assert_eq!(
        Periodic::new(Duration::ZERO).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let interval = Duration::from_millis(2);
    let mut t = Periodic::new(interval).unwrap();
    let first = t.next_ns();
    let mut stats = LatencyStats::new(100);
    let mut prev: Option<posixrt::sched::periodic::Wakeup> = None;
    for _ in 0..10 {
        let w = t.wait().unwrap();
        assert!(w.latency_ns >= 0, "absolute sleep never wakes early");
        assert_eq!((w.expected_ns - first) % 2_000_000, 0, "on the grid");
        assert_eq!(w.overruns, (w.latency_ns / 2_000_000) as u64, "{w:?}");
        if let Some(p) = prev {
            // The grid points the previous wake-up overran are skipped.
            assert_eq!(
                w.expected_ns,
                p.expected_ns + 2_000_000 * (1 + p.overruns as i64)
            );
        }
        prev = Some(w);
        stats.record(&w);
    }
    assert_eq!(stats.count(), 10);
    assert_eq!(stats.histogram().iter().sum::<u64>() + stats.beyond(), 10);
    assert!(stats.min_us() <= stats.avg_us() && stats.avg_us() <= stats.max_us());
    // Stay away for 3.5 periods: the next wake-up reports the periods
    // missed and the timer skips to the next grid point in the future.
    let w0 = t.wait().unwrap();
    std::thread::sleep(Duration::from_millis(7));
    let w = t.wait().unwrap();
    assert_eq!(
        w.expected_ns,
        w0.expected_ns + 2_000_000 * (1 + w0.overruns as i64)
    );
    assert!(w.latency_ns >= 5_000_000, "{w:?}");
    // Missed grid points: every one in (expected, now], i.e. floor(latency / period).
    assert_eq!(w.overruns, (w.latency_ns / 2_000_000) as u64, "{w:?}");
    assert!(w.overruns >= 2, "{w:?}");
    let w2 = t.wait().unwrap();
    assert_eq!(
        w2.expected_ns,
        w.expected_ns + 2_000_000 * (1 + w.overruns as i64)
    );
    stats.record(&w);
    assert!(stats.overruns() >= 2);
    assert!(stats.to_string().starts_with("C:      11 Min:"), "{stats}");
}
