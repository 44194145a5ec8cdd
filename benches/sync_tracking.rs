//! The cost of sync tracking: uncontended lock+unlock of the posixrt mutexes with
//! tracking off, at the counts level and at the timing level, against the same lock
//! before tracking existed (std's futex mutex is the "plain lock" floor of the
//! machine; the posixrt lock with tracking off is the one to compare).
//!
//! Goals (issue 6): off ≤ +0.5 ns, counts ≤ +2 ns, timing ≤ +15 ns.
//!
//! After criterion, a **paired summary** runs the plain lock and the PiMutex and
//! NormalMutex at each level interleaved (31 rounds of 2M iterations, pinned to one
//! CPU; each variant switches the level before its run) and prints the median
//! ns/op and the median per-round differences against the goals, with the load
//! average.
//!
//! `cargo bench --bench sync_tracking` (`PAIRED_ONLY=1` skips criterion).

use std::hint::black_box;
use std::time::Duration;

use std::sync::atomic::{AtomicU32, Ordering};

use criterion::{criterion_group, Criterion};
use posixrt::sync::{self, NormalMutex, PiMutex, RwLock, Tracking};

mod paired;
use paired::{load_average, median, min, paired, pin_to_last_cpu, Variant};

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

fn summary() {
    let cpu = pin_to_last_cpu();
    let plain = PlainTidLock(AtomicU32::new(0));
    let mut v = 0u64;
    let mut f_plain = |n: u64| {
        for _ in 0..n {
            black_box(&plain).with(|| v += 1);
        }
    };
    let pis = [PiMutex::new(0u64), PiMutex::new(0u64), PiMutex::new(0u64)];
    let normals = [
        NormalMutex::new(0u64),
        NormalMutex::new(0u64),
        NormalMutex::new(0u64),
    ];
    let levels = [Tracking::Off, Tracking::Counts, Tracking::Timing];
    // Register the tracked objects once (first use with tracking on).
    for (i, level) in levels.iter().enumerate() {
        sync::set_tracking(*level);
        *pis[i].lock() += 1;
        *normals[i].lock() += 1;
    }
    sync::set_tracking(Tracking::Off);
    let mk_pi = |i: usize| {
        let (m, level) = (&pis[i], levels[i]);
        move |n: u64| {
            sync::set_tracking(level);
            for _ in 0..n {
                *black_box(m).lock() += 1;
            }
        }
    };
    let mk_normal = |i: usize| {
        let (m, level) = (&normals[i], levels[i]);
        move |n: u64| {
            sync::set_tracking(level);
            for _ in 0..n {
                *black_box(m).lock() += 1;
            }
        }
    };
    let (mut p0, mut p1, mut p2) = (mk_pi(0), mk_pi(1), mk_pi(2));
    let (mut n0, mut n1, mut n2) = (mk_normal(0), mk_normal(1), mk_normal(2));
    let mut variants: [Variant<'_>; 7] = [
        ("plain tid CAS lock", &mut f_plain),
        ("PiMutex off", &mut p0),
        ("PiMutex counts", &mut p1),
        ("PiMutex timing", &mut p2),
        ("NormalMutex off", &mut n0),
        ("NormalMutex counts", &mut n1),
        ("NormalMutex timing", &mut n2),
    ];
    let r = paired(31, 2_000_000, &mut variants);
    sync::set_tracking(Tracking::Off);
    println!(
        "\npaired summary: uncontended lock+unlock, pinned to CPU {}, load average {}",
        cpu.map_or("-".into(), |c| c.to_string()),
        load_average()
    );
    for (i, (name, _)) in variants.iter().enumerate() {
        println!(
            "  {:<20} median {:>6.2} ns, min {:>6.2} ns",
            name,
            median(&r[i]),
            min(&r[i])
        );
    }
    let diff = |a: usize, b: usize| {
        let d: Vec<f64> = r[a].iter().zip(&r[b]).map(|(x, y)| x - y).collect();
        median(&d)
    };
    let dmin = |a: usize, b: usize| min(&r[a]) - min(&r[b]);
    for (kind, off) in [("PiMutex", 1), ("NormalMutex", 4)] {
        println!(
            "  {kind}: off - plain {:+.2} ns (goal <= +0.5), counts - off {:+.2} ns (goal <= +2), timing - off {:+.2} ns (goal <= +15): median of per-round differences",
            diff(off, 0),
            diff(off + 1, off),
            diff(off + 2, off)
        );
        println!(
            "  {kind}: off - plain {:+.2} ns, counts - off {:+.2} ns, timing - off {:+.2} ns: differences of the mins",
            dmin(off, 0),
            dmin(off + 1, off),
            dmin(off + 2, off)
        );
    }
}

fn main() {
    if std::env::var_os("PAIRED_ONLY").is_none() {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    // `cargo test --benches` runs benches without `--bench`: skip the long summary.
    if std::env::args().any(|a| a == "--bench") {
        summary();
    }
}
