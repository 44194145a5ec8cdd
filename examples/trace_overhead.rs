//! What one trace point costs: `posixrt::trace::event` with 8 bytes of data into a
//! running stream, into a stopped stream, filtered out, from two threads at once,
//! and the `tracing` crate with a minimal subscriber as a reference; the floor
//! (`rdtsc` plus a 24-byte store into a ring, the least a timestamped record can
//! cost), measured in the same run; beside the stopped and filtered figures, the
//! floor of a disabled point (a relaxed byte load and a predicted branch in the
//! same loop), interleaved with them. Disabled points are timed eight in a row
//! per loop iteration (`stopped_ns`, `filtered_ns`, `disabled_floor_ns`): one
//! per iteration times the loop's own branch as well, a cycle or two by where
//! the linker placed the loop (`*_single_ns`, also printed); and the sustained rate of a stream with a log
//! (FLUSH policy, two producer threads at a fixed offered rate for at least 1 s):
//! events that reached the log per second, and events lost.
//!
//! ```sh
//! cargo run --release --example trace_overhead            # a table with the goals
//! cargo run --release --example trace_overhead -- --json  # one JSON line
//! cargo run --release --example trace_overhead -- --events 200000   # shorter run
//! cargo run --release --example trace_overhead -- --flush-rate 20000000 --flush-secs 2
//! ```
//!
//! Each figure is the median of several timed batches; the stream is large enough
//! that no batch fills it, and its pages are touched before timing. Single-thread
//! batches are timed with the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`), so
//! time the thread spends preempted on a shared machine does not count; the
//! two-thread figures and the log rate are wall time.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use posixrt::trace::{
    self, EventId, EventSet, FilterHow, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr, TraceLog,
};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

struct Args {
    json: bool,
    events: u64,
    flush_rate: u64,
    flush_secs: u64,
    flush_dir: std::path::PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        json: false,
        events: 1_000_000,
        flush_rate: 12_000_000,
        flush_secs: 2,
        // tmpfs where there is one: the figure is the tracer's, not the disk's
        // (a disk-backed log runs into the page cache's writeback throttling).
        flush_dir: if std::path::Path::new("/dev/shm").is_dir() {
            "/dev/shm".into()
        } else {
            std::env::temp_dir()
        },
    };
    let mut it = args::Args::new(
        "trace_overhead",
        "usage: trace_overhead [--json] [--events N (1000..=1000000000, default 1000000)] [--flush-rate EVENTS_PER_S (1000..=1000000000, default 12000000)] [--flush-secs S (1..=60, default 2)] [--flush-dir DIR (default /dev/shm, else the temp dir)]\n\nMeasures ns per trace event (running, stopped, filtered, two threads), the floor (rdtsc + a 24-byte store), the tracing crate with a minimal subscriber, and the sustained rate of a stream with a log.",
    );
    while let Some(x) = it.next() {
        match x.as_str() {
            "--json" => a.json = true,
            "--events" => a.events = it.value_in("--events", 1000..=1_000_000_000),
            "--flush-rate" => a.flush_rate = it.value_in("--flush-rate", 1000..=1_000_000_000),
            "--flush-secs" => a.flush_secs = it.value_in("--flush-secs", 1..=60),
            "--flush-dir" => a.flush_dir = it.value::<String>("--flush-dir").into(),
            _ => it.unknown(&x),
        }
    }
    // Checked before the measurements, which take seconds: a wrong directory is a
    // usage error that names it, not an unnamed I/O error at the end of the run.
    match std::fs::metadata(&a.flush_dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => it.fail(format!(
            "--flush-dir {}: not a directory",
            a.flush_dir.display()
        )),
        Err(e) => it.fail(format!(
            "--flush-dir {}: {}",
            a.flush_dir.display(),
            out::os_error(&e)
        )),
    }
    // The logs are made there: a directory that takes no file (no write
    // permission, a read-only or special file system) is found now too.
    let probe = a
        .flush_dir
        .join(format!("trace_overhead-{}.probe", std::process::id()));
    match args::takes_a_file(&probe) {
        Ok(()) => {}
        Err(e) => it.fail(format!(
            "--flush-dir {}: cannot make the logs there: {}",
            a.flush_dir.display(),
            out::os_error(&e)
        )),
    }
    a
}

/// A log of the FLUSH measurements, made in `dir` and unlinked at once: the
/// file to write it, and a second descriptor to read it back. A run that ends
/// any way (a full disk, Ctrl-C, a kill) leaves nothing in `dir`, where the log
/// could be hundreds of MB of /dev/shm.
fn unlinked_log(
    dir: &std::path::Path,
    name: String,
) -> Result<(std::fs::File, std::fs::File), Box<dyn std::error::Error>> {
    let path = dir.join(name);
    let named = |e: std::io::Error| format!("{}: {}", path.display(), out::os_error(&e));
    let file = std::fs::File::create(&path).map_err(named)?;
    let read = std::fs::File::open(&path);
    std::fs::remove_file(&path).map_err(named)?;
    Ok((file, read.map_err(named)?))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// ns per event of `n` calls to `event(id, 8 bytes)`. The id is opaque to the
/// compiler (as an id from `eventid_open` is) but the same for the batch, as at a
/// trace point; the caller builds its 8 bytes of data per event.
#[inline(never)]
fn record_batch(id: EventId, n: u64) -> f64 {
    let id = black_box(id);
    let t0 = thread_cpu_ns();
    for i in 0..n {
        trace::event(id, &i.to_le_bytes());
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

/// As [`record_batch`], with eight trace points in a row per loop iteration:
/// what a disabled point costs in straight-line code, without the loop's own
/// branch (which takes a cycle of its own, or two where the linker happened to
/// place the loop across a 64-byte line). `n` is rounded down to a multiple of 8.
#[inline(never)]
fn record_batch8(id: EventId, n: u64) -> f64 {
    let id = black_box(id);
    let n = n / 8 * 8;
    let t0 = thread_cpu_ns();
    for i in (0..n).step_by(8) {
        trace::event(id, &i.to_le_bytes());
        trace::event(id, &(i + 1).to_le_bytes());
        trace::event(id, &(i + 2).to_le_bytes());
        trace::event(id, &(i + 3).to_le_bytes());
        trace::event(id, &(i + 4).to_le_bytes());
        trace::event(id, &(i + 5).to_le_bytes());
        trace::event(id, &(i + 6).to_le_bytes());
        trace::event(id, &(i + 7).to_le_bytes());
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

/// The pass bytes of [`disabled_floor_batch`]: all 0, as a stopped stream's are.
static FLOOR_PASS: [AtomicU8; 1024] = [const { AtomicU8::new(0) }; 1024];

/// Where [`disabled_floor_batch`] would go if its byte were set (never).
#[inline(never)]
#[cold]
fn floor_taken(i: u64) {
    black_box(i);
}

/// The floor of a disabled point: ns per relaxed load of a byte and a predicted
/// branch on it, in the same loop shape as `record_batch` (what a stopped or
/// filtered `event` is inlined to), so the two show what the hardware gives one
/// load and one branch in this run.
#[inline(never)]
fn disabled_floor_batch(id: EventId, n: u64) -> f64 {
    // Opaque, as the library's pass table is to its caller.
    let pass = black_box(&FLOOR_PASS);
    let at = black_box(id).raw() as usize % pass.len();
    let t0 = thread_cpu_ns();
    for i in 0..n {
        if pass[at].load(Relaxed) != 0 {
            floor_taken(i);
        }
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

/// As [`disabled_floor_batch`], eight loads and branches per iteration (the
/// floor of [`record_batch8`]).
#[inline(never)]
fn disabled_floor_batch8(id: EventId, n: u64) -> f64 {
    let pass = black_box(&FLOOR_PASS);
    let at = black_box(id).raw() as usize % pass.len();
    let n = n / 8 * 8;
    let t0 = thread_cpu_ns();
    for i in (0..n).step_by(8) {
        for k in 0..8 {
            if pass[at].load(Relaxed) != 0 {
                floor_taken(i + k);
            }
        }
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

/// A disabled point's figures: ns per event eight in a row, and one per loop
/// iteration, each beside its floor.
struct Disabled {
    ev8: f64,
    floor8: f64,
    ev1: f64,
    floor1: f64,
}

/// Medians of `rounds` rounds of the four batches of [`Disabled`] in turn,
/// after as many untimed ones (the process has just started: the CPU comes up
/// to speed).
fn disabled_pair(id: EventId, rounds: u64, batch: u64) -> Disabled {
    let round = || {
        (
            record_batch8(id, batch),
            disabled_floor_batch8(id, batch),
            record_batch(id, batch),
            disabled_floor_batch(id, batch),
        )
    };
    for _ in 0..rounds {
        round();
    }
    let all: Vec<_> = (0..rounds).map(|_| round()).collect();
    Disabled {
        ev8: median(all.iter().map(|r| r.0).collect()),
        floor8: median(all.iter().map(|r| r.1).collect()),
        ev1: median(all.iter().map(|r| r.2).collect()),
        floor1: median(all.iter().map(|r| r.3).collect()),
    }
}

/// The clock the trace records: the TSC where there is one.
#[inline(always)]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)] // `_rdtsc` is a safe intrinsic from Rust 1.87 on
    // SAFETY: `rdtsc` has no memory effects and exists on every x86_64 CPU.
    return unsafe { core::arch::x86_64::_rdtsc() };
    #[cfg(not(target_arch = "x86_64"))]
    return std::time::UNIX_EPOCH
        .elapsed()
        .map_or(0, |d| d.as_nanos() as u64);
}

/// The floor: ns per `rdtsc` plus a 24-byte record (header word, timestamp, 8
/// bytes of data) stored with relaxed atomic stores into a ring, as a trace
/// record is, with the same id and data as `record_batch`.
#[inline(never)]
fn floor_batch(ring: &[AtomicU64], n: u64) -> f64 {
    let mask = ring.len() - 1;
    let header = black_box(0x0008_0081u64);
    let mut at = 0usize;
    let t0 = thread_cpu_ns();
    for i in 0..n {
        let t = rdtsc();
        ring[at & mask].store(header, Relaxed);
        ring[(at + 1) & mask].store(t, Relaxed);
        ring[(at + 2) & mask].store(u64::from_le_bytes(i.to_le_bytes()), Relaxed);
        at += 3;
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

/// Sustained logging: a stream with a log and the FLUSH policy, two producers
/// offering `rate` events/s between them for `secs` s (in chunks, sleeping when
/// ahead of schedule, so the flusher gets a CPU). Returns events written to the
/// log per second (first event to the log complete) and events lost.
fn flush_rate(
    rate: u64,
    secs: u64,
    dir: &std::path::Path,
) -> Result<(f64, u64), Box<dyn std::error::Error>> {
    let mut attr = TraceAttr::new();
    attr.set_stream_size(8 << 20)?;
    attr.set_stream_full_policy(StreamFullPolicy::Flush);
    attr.set_log_full_policy(LogFullPolicy::Append);
    let (file, log) = unlinked_log(dir, format!("trace_overhead-{}.trace", std::process::id()))?;
    let t = Trace::create_with_log(&attr, file)?;
    let id = trace::eventid_open("overhead.flush")?;
    t.start()?;
    let per_thread = rate / 2;
    // Chunks of at most 2000 events, at least 100 per second per thread.
    let chunk = (per_thread / 100).clamp(1, 2000);
    let total_chunks = (per_thread * secs).div_ceil(chunk);
    let t0 = Instant::now();
    let hs: Vec<_> = (0..2u64)
        .map(|k| {
            std::thread::spawn(move || {
                for c in 0..total_chunks {
                    let due = Duration::from_secs_f64((c * chunk) as f64 / per_thread as f64);
                    if let Some(wait) = due.checked_sub(t0.elapsed()) {
                        std::thread::sleep(wait);
                    }
                    for i in 0..chunk {
                        trace::event(id, &((k << 48) | (c * chunk + i)).to_le_bytes());
                    }
                }
                total_chunks * chunk
            })
        })
        .collect();
    let mut offered = 0;
    for h in hs {
        offered += h.join().map_err(|_| "a producer panicked")?;
    }
    t.shutdown()?;
    let took = t0.elapsed().as_secs_f64();
    let mut read = TraceLog::from_file(log)?;
    let mut written = 0u64;
    while let Some(e) = read.next_event()? {
        written += (e.id == id) as u64;
    }
    Ok((written as f64 / took, offered - written))
}

/// CPU time of the calling thread, in ns.
fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to fill; the clock id is a constant.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// What one flush costs the thread that runs it, in CPU ns per event: `events`
/// recorded first (UNTIL_FULL stream large enough for all of them, no periodic
/// write), then one `flush()` on this thread, timed by its CPU clock, so a busy
/// machine does not inflate it. 1e9 / this is what a flusher with a CPU of its own
/// writes per second.
fn flush_cpu_ns(events: u64, dir: &std::path::Path) -> Result<f64, Box<dyn std::error::Error>> {
    let mut attr = TraceAttr::new();
    attr.set_stream_size((events as usize * 24).next_power_of_two())?;
    attr.set_stream_full_policy(StreamFullPolicy::UntilFull);
    attr.set_log_full_policy(LogFullPolicy::Append);
    attr.set_flush_interval(Duration::from_secs(3600))?;
    let (file, _log) = unlinked_log(
        dir,
        format!("trace_overhead-cap-{}.trace", std::process::id()),
    )?;
    let t = Trace::create_with_log(&attr, file)?;
    let id = trace::eventid_open("overhead.capacity")?;
    t.start()?;
    for i in 0..events {
        trace::event(id, &i.to_le_bytes());
    }
    let c0 = thread_cpu_ns();
    t.flush()?;
    let ns = (thread_cpu_ns() - c0) as f64 / events as f64;
    t.shutdown()?;
    Ok(ns)
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
    let t0 = thread_cpu_ns();
    for i in 0..n {
        tracing::event!(tracing::Level::INFO, v = black_box(i));
    }
    (thread_cpu_ns() - t0) as f64 / n as f64
}

fn main() {
    // A closed pipe (`trace_overhead | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("trace_overhead");
    let a = args();
    // Errors in plain words on stderr (not Rust's Debug quoting), exit 1.
    if let Err(e) = run(a) {
        errln!("trace_overhead: {e}");
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

    // Stopped: a relaxed load and a branch, beside the same loop with a bare
    // load and branch.
    let st = disabled_pair(ev, rounds, batch);

    // The floor, into a ring as large as the stream's, touched first.
    let ring: Vec<AtomicU64> = (0..(8 << 20) / 8).map(|_| AtomicU64::new(0)).collect();
    // Touch every page of the ring (8 MiB / 24 bytes per record, and more).
    for _ in 0..4 {
        floor_batch(&ring, 1 << 17);
    }

    t.start()?;
    // Touch the sub-buffer's pages once (LOOP wraps it), then start clean.
    // (the sub-buffer is 16 MiB: 2^20 records of 24 bytes wrap it).
    for _ in 0..4 {
        record_batch(ev, 1 << 18);
    }
    t.clear()?;
    // Running and floor interleaved, so both see the same machine.
    let (mut running, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        running.push(record_batch(ev, batch));
        floor.push(floor_batch(&ring, batch));
        t.clear()?;
    }
    let (running, floor) = (median(running), median(floor));
    drop(ring);

    let mut f = EventSet::empty();
    f.add(other);
    t.set_filter(&f, FilterHow::Set)?;
    let fi = disabled_pair(other, rounds, batch);
    let (stopped, filtered) = (st.ev8, fi.ev8);
    let (stopped_floor, filtered_floor) = (st.floor8, fi.floor8);
    let disabled_floor = median(vec![st.floor8, fi.floor8]);
    let (stopped1, filtered1) = (st.ev1, fi.ev1);
    let disabled_floor1 = median(vec![st.floor1, fi.floor1]);
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
    match Arc::try_unwrap(t) {
        Ok(t) => t.shutdown()?,
        Err(_) => unreachable!("threads joined"),
    }
    let (flush_events_per_s, flush_lost) = flush_rate(a.flush_rate, a.flush_secs, &a.flush_dir)?;
    let flush_cpu = flush_cpu_ns(a.events.clamp(100_000, 2_000_000), &a.flush_dir)?;
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "-1".into());

    if a.json {
        outln!(
            "{{\"running_ns\": {running:.2}, \"stopped_ns\": {stopped:.3}, \"filtered_ns\": {filtered:.3}, \"two_thread_speedup\": {speedup:.2}, \"tracing_crate_ns\": {tracing_ns:.2}, \"floor_ns\": {floor:.2}, \"running_over_floor\": {:.3}, \"disabled_floor_ns\": {disabled_floor:.3}, \"stopped_over_disabled_floor\": {:.2}, \"filtered_over_disabled_floor\": {:.2}, \"stopped_single_ns\": {stopped1:.3}, \"filtered_single_ns\": {filtered1:.3}, \"disabled_floor_single_ns\": {disabled_floor1:.3}, \"flush_events_per_s\": {flush_events_per_s:.0}, \"flush_lost\": {flush_lost}, \"flush_offered_per_s\": {}, \"flush_cpu_ns_per_event\": {flush_cpu:.1}, \"flush_dir\": {:?}, \"loadavg_1m\": {load}}}",
            running / floor,
            stopped / stopped_floor,
            filtered / filtered_floor,
            a.flush_rate,
            a.flush_dir.display().to_string()
        );
    } else {
        outln!("trace point cost, median of {rounds} batches of {batch} events (8 bytes of data)");
        outln!(
            "clock: {}",
            if trace::clock_is_tsc() {
                "TSC calibrated against CLOCK_MONOTONIC"
            } else {
                "CLOCK_MONOTONIC"
            }
        );
        outln!(
            "  running stream     {running:8.2} ns/event   {:.2}x the floor, goal <= 1.3x (LTTng-UST: 80 ns)",
            running / floor
        );
        outln!("  floor              {floor:8.2} ns/event   (rdtsc + a 24-byte store into a ring)");
        outln!(
            "  stopped stream     {stopped:8.3} ns/event   {:.2}x a bare load and branch, goal <= 0.5 ns",
            stopped / stopped_floor
        );
        outln!(
            "  filtered out       {filtered:8.3} ns/event   {:.2}x a bare load and branch, goal <= 0.5 ns",
            filtered / filtered_floor
        );
        outln!(
            "  disabled floor     {disabled_floor:8.3} ns/event   (a relaxed byte load and a predicted branch, same loop)"
        );
        outln!(
            "    (stopped and filtered are timed eight points in a row per loop iteration; one per iteration, with the loop's own branch: stopped {stopped1:.3}, filtered {filtered1:.3}, floor {disabled_floor1:.3} ns)"
        );
        outln!("  two threads        {pair:8.2} ns/event   speedup {speedup:.2}x   goal >= 1.6x");
        outln!("    (each thread's own time: {own_alone:.2} ns/event alone, {own_together:.2} ns/event with the other running)");
        outln!("  tracing crate      {tracing_ns:8.2} ns/event   (minimal subscriber, reference)");
        outln!(
            "  log, FLUSH policy  {:8.2} M events/s written, {flush_lost} lost (2 producers offering {:.1} M/s for {} s, log in {})   goal >= 10 M/s, 0 lost",
            flush_events_per_s / 1e6,
            a.flush_rate as f64 / 1e6,
            a.flush_secs,
            a.flush_dir.display()
        );
        outln!(
            "  one flush          {flush_cpu:8.2} CPU ns/event   ({:.1} M events/s for a flusher with a CPU of its own)",
            1e3 / flush_cpu
        );
        outln!("  load average       {load}");
    }
    Ok(())
}
