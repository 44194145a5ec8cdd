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

use criterion::{criterion_group, criterion_main, Criterion};
use posixrt::sync::{self, NormalMutex, PiMutex, RwLock, Tracking};

fn levels(c: &mut Criterion) {
    let mut g = c.benchmark_group("sync tracking: uncontended lock+unlock");
    g.warm_up_time(Duration::from_millis(500));
    g.measurement_time(Duration::from_secs(2));

    let std_m = std::sync::Mutex::new(0u64);
    g.bench_function("std::sync::Mutex (plain lock)", |b| {
        b.iter(|| *black_box(&std_m).lock().unwrap() += 1)
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
