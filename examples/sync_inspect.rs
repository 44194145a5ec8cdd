//! A small service with contended locks, inspected from inside (and from outside
//! with `rtstat`): the Solaris `td_sync_*` introspection on posixrt's objects.
//!
//! It switches tracking on (timing level), runs producers, consumers, readers and a
//! writer over a mutex-protected queue, a counting semaphore, a condition variable,
//! a reader-writer lock, a PI mutex and a recursive mutex, and then:
//!
//! - prints every known object: info (kind, name, owner, waiters, recursion,
//!   readers, count) and statistics (locks, contended, trylocks, wait and hold
//!   times);
//! - catches threads while they wait and lists the waiters;
//! - makes two helper threads deadlock on two mutexes, finds the cycle with
//!   `find_deadlocks()`, and lets a lock timeout break it;
//! - reads its own objects back through the shared-memory registry, as `rtstat
//!   PID` does from another process; with `--hold-ms N` it keeps the deadlock (and
//!   every object) for N ms so that `rtstat PID` shows them, cycle included.
//!
//! `--json` prints one object: `{"objects": N, "registry_objects": N,
//! "contended_locks": N, "waiters_seen": N, "deadlocks_found": N, "deadlock_broken":
//! BOOL}`, where `waiters_seen` is how many of the service's threads it caught
//! waiting.
//!
//! Usage: `sync_inspect [--json] [--hold-ms N]`

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use posixrt::sync::{
    self, find_deadlocks, objects, Condvar, MutexExt, NormalMutex, PiMutex, RecursiveMutex, RwLock,
    Semaphore, Snapshot, Tracking,
};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

fn show(s: &Snapshot) {
    let (i, st) = (&s.info, &s.stats);
    let name = i.name.as_deref().unwrap_or("-");
    let mut state = match (i.owner, i.sem_count) {
        (_, Some(c)) => format!("count={c}"),
        (Some(o), _) => format!("owner={o}"),
        _ => "free".to_string(),
    };
    if i.recursion > 0 {
        state.push_str(&format!(" recursion={}", i.recursion));
    }
    if i.readers > 0 {
        state.push_str(&format!(" readers={}", i.readers));
    }
    if let Some(c) = i.ceiling {
        state.push_str(&format!(" ceiling={c}"));
    }
    outln!(
        "  {:<16} {:<8} {:<14} waiters={} locks={} contended={} try={}/{} wait={:.3}ms (max {:.3}) hold={:.3}ms (max {:.3}){}",
        i.kind.name(),
        name,
        state,
        i.waiters,
        st.locks,
        st.contended,
        st.trylocks,
        st.trylock_failures,
        st.wait_total.as_secs_f64() * 1e3,
        st.wait_max.as_secs_f64() * 1e3,
        st.hold_total.as_secs_f64() * 1e3,
        st.hold_max.as_secs_f64() * 1e3,
        match i.kind {
            sync::Kind::Semaphore => format!(" posts={} min={} max={}", st.posts, st.min_count, st.max_count),
            sync::Kind::Condvar => format!(" signals={} broadcasts={} timeouts={}", st.signals, st.broadcasts, st.timeouts),
            sync::Kind::RwLock => format!(" reads={} read_contended={}", st.read_locks, st.read_contended),
            _ => String::new(),
        }
    );
}

fn main() {
    // A closed pipe (`sync_inspect | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("sync_inspect");
    let mut json = false;
    let mut hold_ms = 0u64;
    let mut args = args::Args::new(
        "sync_inspect",
        "usage: sync_inspect [--json] [--hold-ms N]

A small service (a queue, a semaphore, a condition variable, a reader-writer lock, a
PI mutex, a recursive mutex) with tracking on: prints each object's state and
statistics, the waiters it catches, a deadlock it finds and breaks, and its objects
as read back from the shared registry that `rtstat PID` reads.

  --hold-ms N   keep the objects (and the deadlock) N ms more, for `rtstat PID`
                (0 to 60000, default 0)
  --json        one object instead of the text: {\"objects\": N, \"registry_objects\": N,
                \"contended_locks\": N, \"waiters_seen\": N, \"deadlocks_found\": N,
                \"deadlock_broken\": BOOL}; waiters_seen: the threads caught waiting",
    );
    while let Some(a) = args.next() {
        match a.as_str() {
            "--json" => json = true,
            "--hold-ms" => hold_ms = args.value_in("--hold-ms", 0..=60_000),
            other => args.unknown(other),
        }
    }
    sync::set_tracking(Tracking::Timing);
    let say = |s: String| {
        if !json {
            outln!("{s}");
        }
    };

    // ---- the service ----
    let queue = NormalMutex::new(Vec::<u32>::new());
    let jobs = Semaphore::new(0).expect("semaphore");
    let config = RwLock::new(0u32);
    let totals = PiMutex::new(0u64);
    let log = RecursiveMutex::new(());
    let idle = Condvar::new();
    let idle_flag = NormalMutex::new(false);
    unsafe { queue.raw() }.set_name("queue");
    jobs.set_name("jobs");
    unsafe { config.raw() }.set_name("config");
    unsafe { totals.raw() }.set_name("totals");
    log.set_name("log");
    idle.set_name("idle");
    unsafe { idle_flag.raw() }.set_name("idle_flag");

    let stop = AtomicBool::new(false);
    let waiters_seen = AtomicU32::new(0);
    let per_producer = 2000u32;
    std::thread::scope(|s| {
        for p in 0..2u32 {
            let (queue, jobs, config, log) = (&queue, &jobs, &config, &log);
            s.spawn(move || {
                for n in 0..per_producer {
                    let scale = *config.read();
                    queue.lock().push(p * 1_000_000 + n + scale);
                    jobs.post().expect("post");
                    if n % 500 == 0 {
                        let _a = log.lock();
                        let _b = log.lock(); // a nested log line
                    }
                }
            });
        }
        for _ in 0..2 {
            let (queue, jobs, totals, stop) = (&queue, &jobs, &totals, &stop);
            s.spawn(move || loop {
                if jobs.wait_for(Duration::from_millis(20)).is_err() {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    continue;
                }
                let v = queue.lock().pop().unwrap_or(0);
                *totals.lock() += u64::from(v % 7);
            });
        }
        {
            let (config, stop) = (&config, &stop);
            s.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    *config.write() += 0;
                    std::thread::sleep(Duration::from_micros(200));
                }
            });
        }
        // A waiter on the condition variable, woken at the end.
        {
            let (idle, idle_flag) = (&idle, &idle_flag);
            s.spawn(move || {
                let mut g = idle_flag.lock();
                while !*g {
                    idle.wait_for(&mut g, Duration::from_millis(50));
                }
            });
        }
        // Catch waiters while the service runs: the threads caught waiting
        // (each once), and a line for the first three objects' waiters that
        // differ from what was said before.
        let start = Instant::now();
        let mut caught = std::collections::BTreeSet::new();
        let mut said = std::collections::BTreeSet::new();
        while start.elapsed() < Duration::from_millis(150) {
            for o in objects() {
                if !o.waiters.is_empty() {
                    caught.extend(o.waiters.iter().copied());
                    if said.len() < 3 && said.insert((o.info.address, o.waiters.clone())) {
                        // The owner as the object lines show it: a tid, or none.
                        let owner = o
                            .info
                            .owner
                            .map_or_else(|| "no owner".to_string(), |t| format!("owner {t}"));
                        say(format!(
                            "waiters on {} {:?}: threads {:?} ({owner})",
                            o.info.kind.name(),
                            o.info.name.as_deref().unwrap_or("-"),
                            o.waiters,
                        ));
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        waiters_seen.store(caught.len() as u32, Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        *idle_flag.lock() = true;
        idle.notify_all();
    });

    say("\n== objects after the run (info and statistics)".into());
    let objs = objects();
    if !json {
        for o in &objs {
            show(o);
        }
    }
    let contended: u64 = objs
        .iter()
        .filter(|o| o.info.kind.is_mutex())
        .map(|o| o.stats.contended)
        .sum();

    // ---- a deliberate deadlock ----
    say("\n== two helper threads lock 'left' and 'right' in opposite orders".into());
    let left = NormalMutex::new(());
    let right = NormalMutex::new(());
    unsafe { left.raw() }.set_name("left");
    unsafe { right.raw() }.set_name("right");
    let barrier = Barrier::new(3);
    let mut found = Vec::new();
    let mut broken = false;
    std::thread::scope(|s| {
        let a = s.spawn(|| {
            let _g = left.lock();
            barrier.wait();
            right
                .lock_for_checked(Duration::from_millis(500 + hold_ms))
                .is_ok()
        });
        let b = s.spawn(|| {
            let _g = right.lock();
            barrier.wait();
            left.lock_for_checked(Duration::from_millis(2000 + hold_ms))
                .is_ok()
        });
        barrier.wait();
        let end = Instant::now() + Duration::from_secs(2);
        while found.is_empty() && Instant::now() < end {
            found = find_deadlocks();
            std::thread::sleep(Duration::from_millis(1));
        }
        for d in &found {
            let names: Vec<String> = d
                .locks
                .iter()
                .map(|l| {
                    objects()
                        .into_iter()
                        .find(|o| o.info.address == *l)
                        .and_then(|o| o.info.name)
                        .unwrap_or_else(|| format!("{l:#x}"))
                })
                .collect();
            say(format!(
                "deadlock found: threads {:?} wait for locks {:?} held by the next thread in the cycle",
                d.threads, names
            ));
        }
        if hold_ms > 0 {
            let pid = std::process::id();
            let _ = sync::publish();
            say(format!(
                "holding the deadlock and every object for {hold_ms} ms: run `rtstat {pid}` now"
            ));
            std::thread::sleep(Duration::from_millis(hold_ms));
        }
        let (ra, rb) = (a.join().unwrap_or(false), b.join().unwrap_or(false));
        broken = !ra && rb;
        say(format!(
            "broken by timeout: the first helper gave up ({}), the second then got its lock ({})",
            if ra { "acquired" } else { "timed out" },
            if rb { "acquired" } else { "timed out" }
        ));
    });

    // ---- through the shared registry, as rtstat reads it ----
    let pid = std::process::id();
    let published = sync::publish();
    let from_registry = sync::read_process(pid);
    match (&published, &from_registry) {
        (Ok(_), Ok(r)) => say(format!(
            "\n== the shared registry of pid {pid} shows {} objects (what `rtstat {pid}` reads)",
            r.len()
        )),
        (Err(e), _) | (_, Err(e)) => say(format!("\n== shared registry unavailable: {e}")),
    }
    if hold_ms > 0 {
        say(format!(
            "holding the objects for {hold_ms} ms: rtstat {pid}"
        ));
        std::thread::sleep(Duration::from_millis(hold_ms));
    }
    if json {
        outln!(
            "{{\"objects\": {}, \"registry_objects\": {}, \"contended_locks\": {}, \"waiters_seen\": {}, \"deadlocks_found\": {}, \"deadlock_broken\": {}}}",
            objs.len(),
            from_registry.as_ref().map_or(0, |r| r.len()),
            contended,
            waiters_seen.load(Ordering::Relaxed),
            found.len(),
            broken
        );
    }
}
