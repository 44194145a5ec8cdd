//! Mutex starvation found with the trace, seed listings 8.24–8.25, on posixrt.
//!
//! A critical section is guarded by a mutex. The first thread locks it with a
//! blocking lock and sleeps inside the critical section; the second tries to enter
//! with `try_lock`, pausing between attempts ("the mutex must come free some day").
//! It never gets in: its retry period is a multiple of the first thread's period,
//! so every attempt lands while the first thread holds the lock. The trace of the
//! mutex system events (`sync_lock`, `sync_trylock`, `sync_unlock`, everything else
//! filtered out as in the listing) shows why: timestamps, result codes, thread and
//! owner, as in listing 8.25.
//!
//! Making it reproducible on Linux: both threads sleep to absolute times
//! (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)`) counted from one shared epoch,
//! so sleep overruns do not accumulate, and run SCHED_FIFO on one CPU, so wakeups
//! are punctual. Thread 1 locks at `epoch + k·period` and unlocks at
//! `epoch + k·period + hold`; thread 2 tries at `epoch + offset + j·multiple·period`
//! with `0 < offset < hold`, a margin of `min(offset, hold − offset)` against
//! jitter. Without the privilege for SCHED_FIFO (or for the pinning) it says so and
//! runs anyway; if jitter ever lets the second thread in, the verdict says so.
//!
//! `--json` prints exactly
//! `{"lock_events": N, "trylock_failures": N, "second_thread_entered": BOOL}`, where
//! `lock_events` counts every traced event on the mutex (lock, trylock, unlock).
//!
//! Usage: `mutex_starvation [--json] [--cycles N] [--period-ms MS] [--hold-ms MS]
//! [--offset-ms MS] [--multiple M]` (defaults: 10 cycles of 20 ms, held 10 ms,
//! attempts 5 ms into each period, multiple 1).

use std::collections::BTreeMap;
use std::sync::Arc;

use posixrt::sched::{self, Builder, CpuSet, Priority};
use posixrt::sync::NormalMutex;
use posixrt::trace::system_events::{self as sys, Value};
use posixrt::trace::{catalog, EventSet, FillWhat, FilterHow, Trace, TraceAttr};
use rustix::thread::clock_nanosleep_absolute;
use rustix::time::{ClockId, Timespec};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

struct Args {
    json: bool,
    cycles: u64,
    period_ns: u64,
    hold_ns: u64,
    offset_ns: u64,
    multiple: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        cycles: 10,
        period_ns: 20_000_000,
        hold_ns: 10_000_000,
        offset_ns: 5_000_000,
        multiple: 1,
    };
    let mut it = args::Args::new(
        "mutex_starvation",
        "usage: mutex_starvation [--json] [--cycles N] [--period-ms MS] [--hold-ms MS] [--offset-ms MS] [--multiple M]

Seed listings 8.24-8.25: thread 1 locks a mutex every period and holds it; thread 2
tries it with try_lock every M periods, OFFSET into the period, and never gets in.
The trace of the mutex events (sync_lock, sync_trylock, sync_unlock) shows why.
Both threads run SCHED_FIFO on one CPU when allowed (else it says so and runs).

  --cycles N        periods to run (a whole number from 1 to 10000, default 10)
  --period-ms MS    thread 1's period (more than 0, at most 60000, default 20)
  --hold-ms MS      how long thread 1 holds the lock (more than 0, at most 60000,
                    default 10)
  --offset-ms MS    when thread 2 tries, into the period (more than 0, at most
                    60000, default 5); offset < hold < period is required
  --multiple M      thread 2 tries every M periods (a whole number from 1 to 1000,
                    default 1)
  --json            one object instead of the trace and verdict:
                    {\"lock_events\": N, \"trylock_failures\": N, \"second_thread_entered\": BOOL}",
    );
    // Bounded so that the schedule's nanoseconds (epoch + j·multiple·period)
    // cannot overflow, and nothing is truncated: a count is a whole number.
    const MAX_MS: f64 = 60_000.0;
    let ns = |ms: f64| (ms * 1e6) as u64;
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--cycles" => a.cycles = it.value_in("--cycles", 1..=10_000),
            "--period-ms" => a.period_ns = ns(it.positive_at_most("--period-ms", MAX_MS)),
            "--hold-ms" => a.hold_ns = ns(it.positive_at_most("--hold-ms", MAX_MS)),
            "--offset-ms" => a.offset_ns = ns(it.positive_at_most("--offset-ms", MAX_MS)),
            "--multiple" => a.multiple = it.value_in("--multiple", 1..=1000),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.hold_ns >= a.period_ns || a.offset_ns >= a.hold_ns {
        return Err(
            "need offset < hold < period: the attempts must land inside the critical section"
                .into(),
        );
    }
    Ok(a)
}

fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Sleeps until `ns` of CLOCK_MONOTONIC (TIMER_ABSTIME), retrying on EINTR.
fn sleep_until(ns: u64) {
    let ts = Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as _,
    };
    while clock_nanosleep_absolute(ClockId::Monotonic, &ts) == Err(rustix::io::Errno::INTR) {}
}

/// What each thread saw, for the verdict.
#[derive(Default)]
struct Seen {
    attempts: u64,
    failures: u64,
    entered: u64,
}

/// Spawns `f` SCHED_FIFO `prio` on `cpu`, or, when refused, as an ordinary thread
/// (noting why in `notes`).
fn spawn<T: Send + 'static>(
    name: &str,
    prio: i32,
    cpu: Option<usize>,
    notes: &mut Vec<String>,
    f: impl FnOnce() -> T + Send + Clone + 'static,
) -> Result<sched::JoinHandle<T>, posixrt::Error> {
    let mut b = Builder::new().name(name).scheduling(Priority::fifo(prio)?);
    if let Some(c) = cpu {
        b = b.affinity(CpuSet::single(c)?);
    }
    match b.spawn(f.clone()) {
        Ok(h) => Ok(h),
        Err(e) => {
            // Pinning needs no privilege: keep it if only the policy was refused.
            let pinned = cpu
                .and_then(|c| CpuSet::single(c).ok())
                .map(|set| Builder::new().name(name).affinity(set));
            let (h, how) = match pinned.map(|b| b.spawn(f.clone())) {
                Some(Ok(h)) => (h, "pinned, SCHED_OTHER"),
                _ => (Builder::new().name(name).spawn(f)?, "unpinned, SCHED_OTHER"),
            };
            notes.push(format!(
                "{name}: SCHED_FIFO {prio} refused ({:?}); running it {how}, so wakeups may \
                 jitter",
                e.kind()
            ));
            Ok(h)
        }
    }
}

fn run(a: &Args) -> Result<(), Box<dyn std::error::Error>> {
    let m = Arc::new(NormalMutex::new(()));
    // SAFETY: only the address of the raw lock is taken (to pick its events).
    let addr = unsafe { m.raw() } as *const _ as u64;

    // Record only the three mutex events (listing 8.24 filters every other system
    // event; user events are not emitted here).
    let ids = [
        catalog::SYNC_LOCK.id()?,
        catalog::SYNC_TRYLOCK.id()?,
        catalog::SYNC_UNLOCK.id()?,
    ];
    let mut filter = EventSet::empty();
    filter.fill(FillWhat::System);
    for id in ids {
        filter.del(id);
    }
    let mut attr = TraceAttr::new();
    attr.set_name("mutex_starvation")?;
    let t = Trace::create(&attr)?;
    t.set_filter(&filter, FilterHow::Set)?;

    let cpu = CpuSet::allowed().ok().and_then(|s| s.iter().last());
    let mut notes = Vec::new();
    // Start a little ahead so that both threads exist before the first deadline.
    let epoch = now_ns() + 20_000_000;
    let (period, hold, offset, mult, cycles) =
        (a.period_ns, a.hold_ns, a.offset_ns, a.multiple, a.cycles);
    let end = epoch + cycles * period;
    t.start()?;

    let m1 = Arc::clone(&m);
    let t1 = spawn("starve-holder", 20, cpu, &mut notes, move || {
        let mut tid = 0;
        for k in 0..cycles {
            sleep_until(epoch + k * period);
            let g = m1.lock();
            tid = posixrt::sync::current_tid();
            sleep_until(epoch + k * period + hold); // the critical section
            drop(g);
        }
        tid
    })?;
    let m2 = Arc::clone(&m);
    let t2 = spawn("starve-trier", 10, cpu, &mut notes, move || {
        let mut seen = Seen::default();
        let mut j = 0;
        loop {
            let at = epoch + offset + j * mult * period;
            if at >= end {
                break;
            }
            sleep_until(at);
            seen.attempts += 1;
            match m2.try_lock() {
                None => seen.failures += 1,
                Some(g) => {
                    seen.entered += 1;
                    drop(g); // a short critical section
                }
            }
            j += 1;
        }
        (posixrt::sync::current_tid(), seen)
    })?;
    let holder = t1.join().map_err(|_| "holder thread panicked")?;
    let (trier, seen) = t2.join().map_err(|_| "trier thread panicked")?;
    t.stop()?;

    // Read back the events on our mutex, decoded by the layouts the trace carries.
    let types: BTreeMap<u16, _> = t.event_types().map(|ty| (ty.id.raw(), ty)).collect();
    let mut rows = Vec::new();
    for e in t.events() {
        let Some(ty) = types.get(&e.id.raw()) else {
            continue;
        };
        let Some(vals) = sys::decode(&ty.fields, &e.data) else {
            continue;
        };
        let get = |k: &str| vals.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        if get("addr") != Some(Value::Hex(addr)) {
            continue;
        }
        let int = |k: &str| match get(k) {
            Some(Value::U(v)) => v as i64,
            Some(Value::I(v)) => v,
            _ => -1,
        };
        rows.push((
            e.timestamp.as_nanos() as i64 - epoch as i64,
            ty.name.clone(),
            int("result"),
            e.tid,
            int("owner"),
        ));
    }
    let traced_failures = rows
        .iter()
        .filter(|r| r.1 == "sync_trylock" && r.2 != 0)
        .count() as u64;
    let traced_entries = rows
        .iter()
        .filter(|r| r.1 == "sync_trylock" && r.2 == 0)
        .count() as u64;

    if a.json {
        outln!(
            "{{\"lock_events\": {}, \"trylock_failures\": {}, \"second_thread_entered\": {}}}",
            rows.len(),
            traced_failures,
            traced_entries > 0
        );
        for n in &notes {
            errln!("note: {n}");
        }
        return Ok(());
    }

    for n in &notes {
        outln!("note: {n}");
    }
    outln!(
        "thread 1 (tid {holder}) locks every {} ms and holds {} ms; thread 2 (tid {trier}) \
         tries every {} ms, {} ms into the period; {} cycles, {}",
        period as f64 / 1e6,
        hold as f64 / 1e6,
        (mult * period) as f64 / 1e6,
        offset as f64 / 1e6,
        cycles,
        match cpu {
            Some(c) if notes.is_empty() => format!("both SCHED_FIFO on CPU {c}"),
            _ => "without SCHED_FIFO (see the notes above)".to_string(),
        }
    );
    outln!(
        "Events placed in the trace stream for mutex {addr:#x} (time since the first period began):"
    );
    for (ts, name, result, tid, owner) in &rows {
        let (sec, ns) = (ts.div_euclid(1_000_000_000), ts.rem_euclid(1_000_000_000));
        let code = match *result {
            0 => "0".to_string(),
            c if c == i64::from(libc::EBUSY) => format!("{c} (EBUSY)"),
            c => c.to_string(),
        };
        match name.as_str() {
            "sync_lock" => outln!(
                "{sec} s {ns:09} ns  lock attempt:          result {code}, thread {tid}, owner {owner}"
            ),
            "sync_trylock" => outln!(
                "{sec} s {ns:09} ns  trylock attempt:       result {code}, thread {tid}, owner {owner}"
            ),
            _ => outln!("{sec} s {ns:09} ns  unlock:                result {code}, thread {tid}"),
        }
    }
    outln!(
        "(thread 2 itself counted {} attempts, {} failed)",
        seen.attempts,
        seen.failures
    );
    if traced_entries == 0 {
        outln!(
            "verdict: {traced_failures} of {} trylocks failed; the second thread never entered \
             the critical section (starved: every attempt fell while thread {holder} held the \
             mutex)",
            traced_failures + traced_entries
        );
    } else {
        outln!(
            "verdict: {traced_failures} of {} trylocks failed; the second thread entered {} \
             time(s): jitter moved an attempt outside the critical section, so this run did \
             not reproduce the starvation{}",
            traced_failures + traced_entries,
            traced_entries,
            if notes.is_empty() {
                ""
            } else {
                " (expected without SCHED_FIFO on one CPU)"
            }
        );
    }
    Ok(())
}

fn main() {
    // A closed pipe (`mutex_starvation | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("mutex_starvation");
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => args::usage_error("mutex_starvation", e),
    };
    if let Err(e) = run(&a) {
        errln!("mutex_starvation: {e}");
        std::process::exit(1);
    }
}
