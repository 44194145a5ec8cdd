//! What one trace point costs: `posixrt::trace::event` with 8 bytes of data into a
//! running stream, into a stopped stream, filtered out, from two threads at once,
//! and the `tracing` crate with a minimal subscriber as a reference.
//!
//! ```sh
//! cargo run --release --example trace_overhead            # a table with the goals
//! cargo run --release --example trace_overhead -- --json  # one JSON line
//! cargo run --release --example trace_overhead -- --events 200000   # shorter run
//! ```
//!
//! Each figure is the median of several timed batches; the stream is large enough
//! that no batch fills it, and its pages are touched before timing.

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use posixrt::trace::{self, EventId, EventSet, FilterHow, StreamFullPolicy, Trace, TraceAttr};

#[path = "support/args.rs"]
mod args;

struct Args {
    json: bool,
    events: u64,
}

fn args() -> Args {
    let mut a = Args {
        json: false,
        events: 1_000_000,
    };
    let mut it = args::Args::new(
        "trace_overhead",
        "usage: trace_overhead [--json] [--events N (1000..=1000000000, default 1000000)]\n\nMeasures ns per trace event (running, stopped, filtered, two threads) and the tracing crate with a minimal subscriber.",
    );
    while let Some(x) = it.next() {
        match x.as_str() {
            "--json" => a.json = true,
            "--events" => a.events = it.value_in("--events", 1000..=1_000_000_000),
            _ => it.unknown(&x),
        }
    }
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ns per event of `n` calls to `event(id, 8 bytes)`.
#[inline(never)]
fn record_batch(id: EventId, n: u64) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        trace::event(black_box(id), black_box(&i.to_le_bytes()));
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}

mod minimal {
    //! The smallest useful `tracing` subscriber: keeps the last u64 field per thread.
    use std::cell::Cell;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    thread_local! { pub static LAST: Cell<u64> = const { Cell::new(0) }; }

    pub struct Minimal;

    struct V;
    impl Visit for V {
        fn record_u64(&mut self, _f: &Field, v: u64) {
            LAST.with(|l| l.set(v));
        }
        fn record_debug(&mut self, _f: &Field, _v: &dyn std::fmt::Debug) {}
    }

    impl Subscriber for Minimal {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, e: &Event<'_>) {
            e.record(&mut V);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
}

#[inline(never)]
fn tracing_batch(n: u64) -> f64 {
    let t0 = Instant::now();
    for i in 0..n {
        tracing::event!(tracing::Level::INFO, v = black_box(i));
    }
    t0.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    // `trace_overhead | head` ends quietly instead of a panic in println!.
    // SAFETY: restores the default disposition of SIGPIPE; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let a = args();
    // Errors in plain words on stderr (not Rust's Debug quoting), exit 1.
    if let Err(e) = run(a) {
        eprintln!("trace_overhead: {e}");
        std::process::exit(1);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    let batch = 20_000u64;
    let rounds = (a.events / batch).max(5);
    let ev = trace::eventid_open("overhead")?;
    let other = trace::eventid_open("overhead.filtered")?;

    let mut attr = TraceAttr::new();
    attr.set_stream_size(8 << 20)?; // > pair_batch * 24 bytes: no batch fills it
    attr.set_stream_full_policy(StreamFullPolicy::Loop);
    let t = Arc::new(Trace::create(&attr)?);

    // Stopped: a relaxed load and a branch.
    let stopped = median((0..rounds).map(|_| record_batch(ev, batch)).collect());

    t.start()?;
    // Touch the sub-buffer's pages once (LOOP wraps it), then start clean.
    for _ in 0..4 {
        record_batch(ev, 1 << 16);
    }
    t.clear()?;
    let mut running = Vec::new();
    for _ in 0..rounds {
        running.push(record_batch(ev, batch));
        t.clear()?;
    }
    let running = median(running);

    let mut f = EventSet::empty();
    f.add(other);
    t.set_filter(&f, FilterHow::Set)?;
    let filtered = median((0..rounds).map(|_| record_batch(other, batch)).collect());
    t.clear()?;

    // One thread, then two at once, each with its own sub-buffer (warmed first), in
    // long batches; the wall time spans the first start to the last end, as the
    // threads saw them.
    let pair_batch = 200_000u64;
    let pair_rounds = (rounds / 5).max(5);
    let go = Arc::new(Barrier::new(3));
    let done = Arc::new(Barrier::new(3));
    let hs: Vec<_> = (0..2)
        .map(|k| {
            let (go, done) = (Arc::clone(&go), Arc::clone(&done));
            std::thread::spawn(move || {
                for _ in 0..3 {
                    record_batch(ev, 1 << 18);
                }
                let mut spans = Vec::new();
                for round in 0..2 * pair_rounds {
                    go.wait();
                    // Even rounds: thread 0 alone; odd rounds: both.
                    if round % 2 == 1 || k == 0 {
                        let t0 = Instant::now();
                        record_batch(ev, pair_batch);
                        spans.push((round, t0, Instant::now()));
                    }
                    done.wait();
                }
                spans
            })
        })
        .collect();
    for _ in 0..2 * pair_rounds {
        t.clear()?;
        go.wait();
        done.wait();
    }
    let spans: Vec<_> = hs
        .into_iter()
        .flat_map(|h| h.join().unwrap_or_default())
        .collect();
    let (mut one, mut two) = (Vec::new(), Vec::new());
    // Each thread's own ns/event when alone and when both ran (contention shows as
    // a slower own time; a busy machine shows as spans that do not overlap).
    let own = |odd: bool| {
        median(
            spans
                .iter()
                .filter(|s| (s.0 % 2 == 1) == odd)
                .map(|s| (s.2 - s.1).as_nanos() as f64 / pair_batch as f64)
                .collect(),
        )
    };
    let (own_alone, own_together) = (own(false), own(true));
    for round in 0..2 * pair_rounds {
        let r: Vec<_> = spans.iter().filter(|s| s.0 == round).collect();
        let (Some(start), Some(end)) = (r.iter().map(|s| s.1).min(), r.iter().map(|s| s.2).max())
        else {
            continue;
        };
        let ns = (end - start).as_nanos() as f64;
        if round % 2 == 0 {
            one.push(ns / pair_batch as f64);
        } else {
            two.push(ns / (2 * pair_batch) as f64);
        }
    }
    let pair = median(two);
    let speedup = median(one) / pair;
    t.stop()?;

    let tracing_ns = tracing::subscriber::with_default(minimal::Minimal, || {
        median((0..rounds).map(|_| tracing_batch(batch)).collect())
    });
    black_box(minimal::LAST.with(|l| l.get()));

    if a.json {
        println!(
            "{{\"running_ns\": {running:.2}, \"stopped_ns\": {stopped:.3}, \"filtered_ns\": {filtered:.3}, \"two_thread_speedup\": {speedup:.2}, \"tracing_crate_ns\": {tracing_ns:.2}}}"
        );
    } else {
        println!(
            "trace point cost, median of {rounds} batches of {batch} events (8 bytes of data)"
        );
        println!(
            "clock: {}",
            if trace::clock_is_tsc() {
                "TSC calibrated against CLOCK_MONOTONIC"
            } else {
                "CLOCK_MONOTONIC"
            }
        );
        println!("  running stream     {running:8.2} ns/event   goal <= 15 ns (LTTng-UST: 80 ns)");
        println!("  stopped stream     {stopped:8.3} ns/event   goal <= 1 ns");
        println!("  filtered out       {filtered:8.3} ns/event   goal <= 1 ns");
        println!("  two threads        {pair:8.2} ns/event   speedup {speedup:.2}x   goal >= 1.6x");
        println!("    (each thread's own time: {own_alone:.2} ns/event alone, {own_together:.2} ns/event with the other running)");
        println!(
            "  tracing crate      {tracing_ns:8.2} ns/event   (minimal subscriber, reference)"
        );
    }
    match Arc::try_unwrap(t) {
        Ok(t) => t.shutdown()?,
        Err(_) => unreachable!("threads joined"),
    }
    Ok(())
}
