//! Sync tracking must not cause the priority inversion it exists to diagnose.
//!
//! Three threads pinned to one CPU, with `Tracking::Counts`:
//! - L (SCHED_FIFO 10) creates a `PiCondvar`, notifies it (which registers it with
//!   tracking) and drops it (which releases its record), in a loop;
//! - M (SCHED_FIFO 50) wakes at a set time and hogs the CPU for 300 ms;
//! - H (SCHED_FIFO 90) wakes 2 ms later and calls `notify_one` on a new `PiCondvar`
//!   (its first use registers it).
//!
//! When M wakes, it preempts L wherever L is. If registration took a lock without
//! priority inheritance and L held it, H would wait for M's whole hog (and for L).
//! Registration must stay bounded: H's call takes under 150 ms in each of 20
//! runs. (The bound is coarse on purpose: a blocked H takes about 300 ms, and RT
//! throttling, which stops every real-time thread of the CPU for up to 50 ms of
//! each second, may fall inside a call that was not blocked.)
//!
//! Needs SCHED_FIFO (root or CAP_SYS_NICE / RLIMIT_RTPRIO); without it the test
//! checks the documented refusal and returns.

#[path = "common/fifo.rs"]
mod fifo;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use posixrt::sched::{Builder, CpuSet, Priority};
use posixrt::sync::{self, PiCondvar, Tracking};

const RUNS: usize = 20;
const HOG: Duration = Duration::from_millis(300);
const BOUND: Duration = Duration::from_millis(150);

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// One run; returns how long H's `notify_one` took.
fn one_run(cpu: usize) -> Duration {
    let start = Instant::now() + Duration::from_millis(30);
    let stop = Arc::new(AtomicBool::new(false));
    let on = |prio: i32| {
        Builder::new()
            .affinity(CpuSet::single(cpu).expect("cpu"))
            .scheduling(Priority::fifo(prio).expect("priority"))
    };

    let l_stop = stop.clone();
    let l = on(10)
        .spawn(move || {
            // Bounded: L stops by itself shortly after M's hog (an unpinned
            // SCHED_OTHER main thread may share the CPU and would starve meanwhile),
            // or when told.
            let end = start + HOG + Duration::from_millis(10);
            while !l_stop.load(Ordering::Relaxed) && Instant::now() < end {
                let c = PiCondvar::new();
                c.notify_one();
                drop(c);
            }
        })
        .expect("spawn L");
    let m = on(50)
        .spawn(move || {
            sleep_until(start);
            let end = Instant::now() + HOG;
            while Instant::now() < end {
                std::hint::spin_loop();
            }
        })
        .expect("spawn M");
    let h = on(90)
        .spawn(move || {
            sleep_until(start + Duration::from_millis(2));
            let c = PiCondvar::new();
            let t0 = Instant::now();
            c.notify_one();
            t0.elapsed()
        })
        .expect("spawn H");
    let took = h.join().expect("H");
    m.join().expect("M");
    stop.store(true, Ordering::Relaxed);
    l.join().expect("L");
    took
}

#[test]
fn tracking_registration_does_not_invert_priorities() {
    let Some(cpu) = fifo::fifo_cpu() else {
        return;
    };
    sync::set_tracking(Tracking::Counts);
    let took: Vec<Duration> = (0..RUNS).map(|_| one_run(cpu)).collect();
    sync::set_tracking(Tracking::Off);
    let slow: Vec<_> = took.iter().filter(|d| **d >= BOUND).collect();
    assert!(
        slow.is_empty(),
        "H's notify_one on a new PiCondvar was blocked in {} of {RUNS} runs: {took:?}",
        slow.len()
    );
}
