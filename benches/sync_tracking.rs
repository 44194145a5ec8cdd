//! The cost of sync tracking: uncontended lock+unlock of the posixrt mutexes with
//! tracking off, at the counts level and at the timing level, against the same lock
//! before tracking existed (std's futex mutex is the "plain lock" floor of the
//! machine; the posixrt lock with tracking off is the one to compare).
//!
//! Goals (issue 6): off ≤ +0.5 ns, counts ≤ +2 ns, timing ≤ +15 ns.
//!
//! `cargo bench --bench sync_tracking`

use std::hint::black_box;
use std::time::Duration;

use std::sync::atomic::{AtomicU32, Ordering};

use criterion::{criterion_group, criterion_main, Criterion};
use posixrt::sync::{self, NormalMutex, PiMutex, RwLock, Tracking};

/// The posixrt uncontended path with no tracking check at all: CAS 0→tid, CAS
/// tid→0 (the contended path is irrelevant here and omitted). "tracking off" minus
/// this is the cost of the switch.
struct PlainTidLock(AtomicU32);

impl PlainTidLock {
    #[inline]
    fn with(&self, f: impl FnOnce()) {
        let tid = sync::current_tid();
        while self
            .0
            .compare_exchange(0, tid, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        f();
        let _ = self
            .0
            .compare_exchange(tid, 0, Ordering::Release, Ordering::Relaxed);
    }
}

fn levels(c: &mut Criterion) {
    let mut g = c.benchmark_group("sync tracking: uncontended lock+unlock");
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));

    let std_m = std::sync::Mutex::new(0u64);
    g.bench_function("std::sync::Mutex (plain lock)", |b| {
        b.iter(|| *black_box(&std_m).lock().unwrap() += 1)
    });

    let plain = PlainTidLock(AtomicU32::new(0));
    let mut v = 0u64;
    g.bench_function("plain tid CAS lock (no tracking check)", |b| {
        b.iter(|| black_box(&plain).with(|| v += 1))
    });

    for (name, level) in [
        ("off", Tracking::Off),
        ("counts", Tracking::Counts),
        ("timing", Tracking::Timing),
    ] {
        sync::set_tracking(level);
        let n = NormalMutex::new(0u64);
        g.bench_function(format!("NormalMutex, tracking {name}"), |b| {
            b.iter(|| *black_box(&n).lock() += 1)
        });
        let p = PiMutex::new(0u64);
        g.bench_function(format!("PiMutex, tracking {name}"), |b| {
            b.iter(|| *black_box(&p).lock() += 1)
        });
        let l = RwLock::new(0u64);
        g.bench_function(format!("RwLock write, tracking {name}"), |b| {
            b.iter(|| *black_box(&l).write() += 1)
        });
    }
    sync::set_tracking(Tracking::Off);
    g.finish();
}

criterion_group!(benches, levels);
criterion_main!(benches);
