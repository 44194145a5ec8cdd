//! Cost of thread fingerprints.
//!
//! - `mark/update`: a marker update with its timestamp (the ≤ 50 ns goal);
//! - `mark/update_128B`: the same with a maximal 128-byte marker;
//! - `mark/set_same_prefix`: `set` when the kernel name (first 15 bytes) does not
//!   change, so no `prctl`;
//! - `mark/set_new_prefix`: `set` with a changing kernel name (one `prctl` each);
//! - `mark/write_raw_8B`: 8 bytes into the raw block;
//! - `mark/snapshot_1000_threads`: a reader's consistent copy of 1000 marked
//!   threads of one process, joined with their /proc facts (what `tfp` does).
//!
//! Run: `cargo bench --bench mark`.

use std::hint::black_box;
use std::sync::{mpsc, Arc, Barrier};

use criterion::{criterion_group, criterion_main, Criterion};
use posixrt::mark;

fn writer(c: &mut Criterion) {
    let mut g = c.benchmark_group("mark");
    mark::set("bench main thread").unwrap();
    g.bench_function("update", |b| {
        b.iter(|| mark::update(black_box("worker 3: step 17")).unwrap())
    });
    let long = "x".repeat(mark::MARKER_MAX);
    g.bench_function("update_128B", |b| {
        b.iter(|| mark::update(black_box(&long)).unwrap())
    });
    let markers = ["bench thread: step 1", "bench thread: step 2"];
    let mut i = 0usize;
    g.bench_function("set_same_prefix", |b| {
        b.iter(|| {
            i += 1;
            mark::set(black_box(markers[i & 1])).unwrap()
        })
    });
    let markers = ["phase one", "phase two"];
    g.bench_function("set_new_prefix", |b| {
        b.iter(|| {
            i += 1;
            mark::set(black_box(markers[i & 1])).unwrap()
        })
    });
    g.bench_function("write_raw_8B", |b| {
        b.iter(|| mark::write_raw(8, black_box(&[1, 2, 3, 4, 5, 6, 7, 8])).unwrap())
    });
    g.finish();
}

fn reader(c: &mut Criterion) {
    const N: usize = 1000;
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let done_rx = Arc::new(std::sync::Mutex::new(done_rx));
    let ready = Arc::new(Barrier::new(N + 1));
    let mut threads = Vec::with_capacity(N);
    for n in 0..N {
        let rx = done_rx.clone();
        let ready = ready.clone();
        threads.push(
            mark::Builder::new(format!("bench worker {n}"))
                .stack_size(64 * 1024)
                .spawn(move || {
                    mark::write_raw(0, &(n as u64).to_le_bytes()).unwrap();
                    ready.wait();
                    let _ = rx.lock().map(|r| r.recv());
                })
                .unwrap(),
        );
    }
    ready.wait();
    let me = std::process::id() as i32;
    let count = mark::snapshot_pid(me).unwrap().threads().count();
    assert!(count > N, "{count} marked threads listed");
    let mut g = c.benchmark_group("mark");
    g.sample_size(20);
    g.bench_function("snapshot_1000_threads", |b| {
        b.iter(|| black_box(mark::snapshot_pid(me).unwrap()))
    });
    g.finish();
    drop(done_tx);
    for t in threads {
        t.join().unwrap();
    }
}

criterion_group!(benches, writer, reader);
criterion_main!(benches);
