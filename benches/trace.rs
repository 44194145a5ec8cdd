//! Criterion benches of a trace point (`posixrt::trace::event`, 8 bytes of data):
//! running stream, stopped, filtered out, two threads at once, and the `tracing`
//! crate with a minimal subscriber as a reference. `examples/trace_overhead --json`
//! prints the same figures in one line.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use posixrt::trace::{self, EventSet, FilterHow, StreamFullPolicy, Trace, TraceAttr};

const BATCH: u64 = 10_000;

fn stream() -> Trace {
    let mut a = TraceAttr::new();
    a.set_stream_size(4 << 20).unwrap_or_else(|e| panic!("{e}"));
    a.set_stream_full_policy(StreamFullPolicy::Loop);
    Trace::create(&a).unwrap_or_else(|e| panic!("{e}"))
}

fn batch(id: trace::EventId, n: u64) {
    for i in 0..n {
        trace::event(black_box(id), black_box(&i.to_le_bytes()));
    }
}

struct Minimal;
impl tracing::Subscriber for Minimal {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, e: &tracing::Event<'_>) {
        struct V;
        impl tracing::field::Visit for V {
            fn record_u64(&mut self, _: &tracing::field::Field, v: u64) {
                black_box(v);
            }
            fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
        }
        e.record(&mut V);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

fn benches(c: &mut Criterion) {
    let ev = trace::eventid_open("bench").unwrap_or_else(|e| panic!("{e}"));
    let other = trace::eventid_open("bench.filtered").unwrap_or_else(|e| panic!("{e}"));
    let t = Arc::new(stream());
    let mut g = c.benchmark_group("trace_event");
    g.throughput(Throughput::Elements(BATCH));

    g.bench_function("stopped", |b| b.iter(|| batch(ev, BATCH)));

    t.start().unwrap_or_else(|e| panic!("{e}"));
    batch(ev, 1 << 18); // touch the sub-buffer
    g.bench_function("running", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                t.clear().unwrap_or_else(|e| panic!("{e}"));
                let t0 = Instant::now();
                batch(ev, BATCH);
                total += t0.elapsed();
            }
            total
        })
    });

    let mut f = EventSet::empty();
    f.add(other);
    t.set_filter(&f, FilterHow::Set)
        .unwrap_or_else(|e| panic!("{e}"));
    g.bench_function("filtered", |b| b.iter(|| batch(other, BATCH)));

    g.throughput(Throughput::Elements(2 * BATCH));
    g.bench_function("two_threads", |b| {
        b.iter_custom(|iters| {
            let go = Arc::new(Barrier::new(2));
            let tt = Arc::clone(&t);
            let g2 = Arc::clone(&go);
            let h = std::thread::spawn(move || {
                batch(ev, 1 << 18);
                let mut spans = Vec::new();
                for _ in 0..iters {
                    g2.wait();
                    let t0 = Instant::now();
                    batch(ev, BATCH);
                    spans.push((t0, Instant::now()));
                    g2.wait();
                }
                drop(tt);
                spans
            });
            let mut mine = Vec::new();
            for _ in 0..iters {
                t.clear().unwrap_or_else(|e| panic!("{e}"));
                go.wait();
                let t0 = Instant::now();
                batch(ev, BATCH);
                mine.push((t0, Instant::now()));
                go.wait();
            }
            let theirs = h.join().unwrap_or_default();
            mine.iter()
                .zip(&theirs)
                .map(|(a, b)| a.1.max(b.1) - a.0.min(b.0))
                .sum()
        })
    });
    g.throughput(Throughput::Elements(BATCH));
    t.stop().unwrap_or_else(|e| panic!("{e}"));

    tracing::subscriber::with_default(Minimal, || {
        g.bench_function("tracing_crate_minimal_subscriber", |b| {
            b.iter(|| {
                for i in 0..BATCH {
                    tracing::event!(tracing::Level::INFO, v = black_box(i));
                }
            })
        });
    });
    g.finish();
}

criterion_group!(trace_benches, benches);
criterion_main!(trace_benches);
