//! Priority inversion, seed listing 6.7/6.8, then the same scenario with a mutex under
//! each POSIX protocol: none, inherit (PI futex), protect (priority ceiling).
//!
//! Part 1 is listing 6.7: the main thread becomes the low-priority thread
//! (SCHED_FIFO max-31), creates a medium (+15) and a high (+30) priority thread, all
//! on one CPU; each waits on its own semaphore; low releases medium's, medium computes
//! (10^8 terms of a series) while high waits for a semaphore that only low can post,
//! and low cannot run until medium is done. The order of events is printed as in
//! listing 6.8.
//!
//! Part 2: low locks a mutex and runs a critical section of `--cs-ms` ms of CPU time;
//! 1 ms later medium wakes and spins for `--medium-ms` ms (wall clock); 2 ms after the
//! lock high wakes and locks the mutex. The high thread's *blocked time* is measured
//! from its release time (the moment it became ready and wanted the lock) to the
//! moment it holds the lock; it is the median of `--runs` runs per protocol:
//!
//! - none (`NormalMutex`): medium keeps low off the CPU, high waits ≈ medium + cs;
//! - inherit (`PiMutex`): the kernel boosts low to high's priority, high waits ≈ cs;
//! - protect (`CeilingMutex`, ceiling = high's priority): low runs at the ceiling from
//!   the lock on, medium never preempts it, high waits ≈ cs (it is kept off the CPU
//!   by the ceiling rather than blocked on the lock).
//!
//! `--json` prints one JSON object:
//! `{"critical_section_ms": F, "blocked_ms": {"none": F, "inherit": F, "protect": F}}`.
//! Without the privilege for SCHED_FIFO (CAP_SYS_NICE or RLIMIT_RTPRIO ≥ 98) the run
//! fails: the error and what it needs go to stderr, nothing (no JSON with empty
//! figures) to stdout, and the exit status is 1.
//!
//! Usage: `priority_inversion [--json] [--runs N] [--cs-ms MS] [--medium-ms MS] [--iterations N]`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use posixrt::sync::{ceiling_mutex, MutexExt, NormalMutex, PiMutex};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

struct Args {
    json: bool,
    runs: usize,
    cs_ms: f64,
    medium_ms: f64,
    iterations: u64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        runs: 3,
        cs_ms: 50.0,
        medium_ms: 300.0,
        iterations: 100_000_000,
    };
    let mut it = args::Args::new("priority_inversion", USAGE);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--runs" => a.runs = it.value_in("--runs", 1..=100),
            // Bounded: the SCHED_FIFO threads spin that long, and starve the CPU.
            "--cs-ms" => a.cs_ms = it.positive_at_most("--cs-ms", 400.0),
            "--medium-ms" => a.medium_ms = it.positive_at_most("--medium-ms", 800.0),
            "--iterations" => a.iterations = it.value_in("--iterations", 1..=100_000_000_000),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

// ---------------------------------------------------------------------------------
// Scheduling helpers.

mod rt {
    use posixrt::sched::{self, Builder, CpuSet, Priority, Tid};

    /// The CPU every thread of the demonstration runs on: the last one allowed.
    pub fn cpu() -> usize {
        CpuSet::allowed()
            .ok()
            .and_then(|s| s.iter().last())
            .unwrap_or(0)
    }

    fn priority_of(prio: i32) -> Result<Priority, String> {
        if prio == 0 {
            Ok(Priority::other())
        } else {
            Priority::fifo(prio).map_err(|e| e.to_string())
        }
    }

    /// Makes the calling thread SCHED_FIFO `prio` (0: SCHED_OTHER) on `cpu`.
    pub fn become_(prio: i32, cpu: usize) -> Result<(), String> {
        let set = CpuSet::single(cpu).map_err(|e| e.to_string())?;
        sched::set_thread_affinity(Tid::current(), &set).map_err(|e| e.to_string())?;
        sched::set_current_scheduling(priority_of(prio)?).map_err(|e| e.to_string())
    }

    /// Starts a thread with SCHED_FIFO `prio` and affinity `cpu` applied at creation
    /// (PTHREAD_EXPLICIT_SCHED, as listing 6.7 does).
    pub fn spawn<T: Send + 'static>(
        name: &str,
        prio: i32,
        cpu: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<sched::JoinHandle<T>, String> {
        Builder::new()
            .name(name)
            .scheduling(priority_of(prio)?)
            .affinity(CpuSet::single(cpu).map_err(|e| e.to_string())?)
            .spawn(f)
            .map_err(|e| e.to_string())
    }

    /// A thread's priority as `pthread_getschedparam` reports it.
    pub fn priority_of_thread<T>(h: &sched::JoinHandle<T>) -> i32 {
        h.scheduling().map(|p| p.value()).unwrap_or(-1)
    }

    /// The thread's own position in the priority lists of its CPU
    /// (`pthread_getschedparam`).
    pub fn priority() -> i32 {
        sched::current_scheduling().map(|p| p.value()).unwrap_or(-1)
    }

    pub fn max_fifo() -> i32 {
        sched::priority_max(sched::Policy::Fifo).unwrap_or(99)
    }

    /// CLOCK_MONOTONIC now, in nanoseconds.
    pub fn now_ns() -> i64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    /// The calling thread's CPU time, in nanoseconds.
    pub fn cpu_ns() -> i64 {
        let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
        t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    /// Sleeps until the absolute CLOCK_MONOTONIC time `ns` (clock_nanosleep TIMER_ABSTIME).
    pub fn sleep_until(ns: i64) {
        let ts = rustix::time::Timespec {
            tv_sec: ns / 1_000_000_000,
            tv_nsec: ns % 1_000_000_000,
        };
        loop {
            match rustix::thread::clock_nanosleep_absolute(rustix::thread::ClockId::Monotonic, &ts)
            {
                Err(rustix::io::Errno::INTR) => continue,
                _ => return,
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Part 1: listing 6.7.

/// A POSIX unnamed semaphore (`sem_init`, `sem_wait`, `sem_post`), as in the listing.
struct Sem(Box<std::cell::UnsafeCell<libc::sem_t>>);
// SAFETY: sem_t is made for use from several threads; it never moves (boxed).
unsafe impl Sync for Sem {}
// SAFETY: as above.
unsafe impl Send for Sem {}

impl Sem {
    fn new(value: u32) -> Sem {
        // SAFETY: sem_t is plain data until sem_init, which initialises it in place.
        let s = Sem(Box::new(std::cell::UnsafeCell::new(unsafe {
            std::mem::zeroed()
        })));
        // SAFETY: the boxed sem_t does not move; pshared 0.
        assert_eq!(unsafe { libc::sem_init(s.0.get(), 0, value) }, 0);
        s
    }
    fn wait(&self) {
        // SAFETY: initialised in `new`.
        while unsafe { libc::sem_wait(self.0.get()) } != 0 {}
    }
    fn post(&self) {
        // SAFETY: initialised in `new`.
        assert_eq!(unsafe { libc::sem_post(self.0.get()) }, 0);
    }
}

impl Drop for Sem {
    fn drop(&mut self) {
        // SAFETY: initialised, no waiters left.
        unsafe { libc::sem_destroy(self.0.get()) };
    }
}

fn say(quiet: bool, events: &std::sync::Mutex<Vec<String>>, line: String) {
    if !quiet {
        outln!("{line}");
    }
    events.lock().unwrap_or_else(|e| e.into_inner()).push(line);
}

fn listing_6_7(quiet: bool, iterations: u64, cpu: usize) -> Result<Vec<String>, String> {
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sem_mi = Arc::new(Sem::new(0));
    let sem_hi = Arc::new(Sem::new(0));
    let low = rt::max_fifo() - 31;
    rt::become_(low, cpu)?;
    // Printed once the privilege is there: a refused run prints nothing on stdout.
    if !quiet {
        outln!("== Listing 6.7: priority inversion with semaphores (all threads on CPU {cpu})");
    }
    let mi = {
        let (ev, sem_mi) = (events.clone(), sem_mi.clone());
        rt::spawn("medium", low + 15, cpu, move || {
            say(
                quiet,
                &ev,
                "Medium-priority thread before taking the semaphore".into(),
            );
            sem_mi.wait();
            let (mut s, mut d) = (0.0f64, 1.0f64);
            for i in 1..iterations {
                s += d / i as f64;
                d = -d;
            }
            say(
                quiet,
                &ev,
                "Medium-priority thread before releasing the semaphore".into(),
            );
            sem_mi.post();
            (rt::priority(), s)
        })?
    };
    let hi = {
        let (ev, sem_hi) = (events.clone(), sem_hi.clone());
        rt::spawn("high", low + 30, cpu, move || {
            say(
                quiet,
                &ev,
                "High-priority thread before taking the semaphore".into(),
            );
            sem_hi.wait();
            say(
                quiet,
                &ev,
                "High-priority thread after taking the semaphore".into(),
            );
            sem_hi.post();
            rt::priority()
        })?
    };
    say(quiet, &events, format!("Low priority: {}", rt::priority()));
    say(
        quiet,
        &events,
        format!("Medium priority: {}", rt::priority_of_thread(&mi)),
    );
    say(
        quiet,
        &events,
        format!("High priority: {}", rt::priority_of_thread(&hi)),
    );
    say(
        quiet,
        &events,
        "Low-priority thread before releasing the semaphore for the medium-priority thread".into(),
    );
    sem_mi.post();
    say(
        quiet,
        &events,
        "Low-priority thread before releasing the semaphore for the high-priority thread".into(),
    );
    sem_hi.post();
    let (_, s) = mi.join().map_err(|_| "medium thread panicked")?;
    hi.join().map_err(|_| "high thread panicked")?;
    rt::become_(0, cpu)?;
    if !quiet {
        outln!("(series sum computed by the medium thread: {s:.6})");
    }
    let ev = events.lock().unwrap_or_else(|e| e.into_inner()).clone();
    Ok(ev)
}

// ---------------------------------------------------------------------------------
// Part 2: the same scenario with a mutex under each protocol.

#[derive(Clone, Copy, Debug)]
enum Protocol {
    None,
    Inherit,
    Protect,
}

/// One lock+unlock object of either protocol, behind one interface.
trait Lock: Send + Sync {
    fn with(&self, f: &mut dyn FnMut());
}
impl Lock for NormalMutex<()> {
    fn with(&self, f: &mut dyn FnMut()) {
        let _g = self.lock();
        f()
    }
}
impl Lock for PiMutex<()> {
    fn with(&self, f: &mut dyn FnMut()) {
        let _g = self.lock();
        f()
    }
}
impl Lock for posixrt::sync::CeilingMutex<()> {
    fn with(&self, f: &mut dyn FnMut()) {
        let _g = self.lock_checked().expect("ceiling lock");
        f()
    }
}

/// One run; returns the high thread's blocked time in ms.
fn scenario(p: Protocol, cs_ms: f64, medium_ms: f64, cpu: usize) -> Result<f64, String> {
    let low = rt::max_fifo() - 31;
    let (mid, high) = (low + 15, low + 30);
    let lock: Arc<dyn Lock> = match p {
        Protocol::None => Arc::new(NormalMutex::new(())),
        Protocol::Inherit => Arc::new(PiMutex::new(())),
        Protocol::Protect => Arc::new(ceiling_mutex(high as u32, ()).map_err(|e| e.to_string())?),
    };
    // A shared epoch far enough ahead for every thread to be created and asleep.
    let t0 = rt::now_ns() + 20_000_000;
    let (cs_ns, medium_ns) = ((cs_ms * 1e6) as i64, (medium_ms * 1e6) as i64);
    let stop = Arc::new(AtomicBool::new(false));

    let lo = {
        let lock = lock.clone();
        rt::spawn("low", low, cpu, move || {
            rt::sleep_until(t0);
            lock.with(&mut || {
                // The critical section: cs_ms of this thread's CPU time.
                let start = rt::cpu_ns();
                while rt::cpu_ns() - start < cs_ns {
                    std::hint::spin_loop();
                }
            });
        })?
    };
    let md = {
        let stop = stop.clone();
        rt::spawn("medium", mid, cpu, move || {
            rt::sleep_until(t0 + 1_000_000);
            let end = rt::now_ns() + medium_ns;
            while rt::now_ns() < end && !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })?
    };
    let release = t0 + 2_000_000;
    let hi = {
        let lock = lock.clone();
        rt::spawn("high", high, cpu, move || {
            rt::sleep_until(release);
            let mut got = 0;
            lock.with(&mut || got = rt::now_ns());
            got
        })?
    };
    let got = hi.join().map_err(|_| "high thread panicked")?;
    lo.join().map_err(|_| "low thread panicked")?;
    stop.store(true, Ordering::Relaxed);
    md.join().map_err(|_| "medium thread panicked")?;
    Ok((got - release) as f64 / 1e6)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

const USAGE: &str = "\
usage: priority_inversion [--json] [--runs N] [--cs-ms MS] [--medium-ms MS] [--iterations N]

Part 1, seed listing 6.7/6.8: low, medium and high SCHED_FIFO threads on one CPU;
high waits on a semaphore that only low posts, while medium computes. Part 2: the
same inversion with a mutex under each protocol (none, inherit, protect), and how
long the high thread stays blocked. Needs CAP_SYS_NICE (or RLIMIT_RTPRIO >= 98).

  --runs N          runs per protocol in part 2, the median is shown (1 to 100,
                    default 3)
  --cs-ms MS        low's critical section, CPU time (more than 0, at most 400,
                    default 50)
  --medium-ms MS    how long medium spins (more than 0, at most 800, default 300)
  --iterations N    terms of the series medium computes in part 1 (1 to
                    100000000000, default 100000000)
  --json            one object instead of the text: {\"critical_section_ms\": F,
                    \"blocked_ms\": {\"none\": F, \"inherit\": F, \"protect\": F}}";

fn main() {
    // A closed pipe (`priority_inversion | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("priority_inversion");
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => args::usage_error("priority_inversion", e),
    };
    let cpu = rt::cpu();
    let need = rt::max_fifo() - 1;

    if let Err(e) = listing_6_7(args.json, args.iterations, cpu) {
        // A refused privilege is a failed run: the error and the fix on stderr,
        // nothing (no JSON with empty figures) on stdout, exit 1.
        errln!(
            "priority_inversion: cannot run the demonstration: {e}\n\
             hint: it needs SCHED_FIFO up to priority {need}: run as root, \
             give the binary CAP_SYS_NICE (`setcap cap_sys_nice+ep BINARY`), or raise RLIMIT_RTPRIO \
             to {need} (`rtprio` in /etc/security/limits.conf, then `ulimit -r {need}`)."
        );
        std::process::exit(1);
    }

    if !args.json {
        outln!(
            "\n== The same scenario with a mutex: low holds it for a {:.0} ms critical section, \
             medium spins {:.0} ms, high wants the lock (median of {} runs)",
            args.cs_ms,
            args.medium_ms,
            args.runs
        );
    }
    let mut out = Vec::new();
    for p in [Protocol::None, Protocol::Inherit, Protocol::Protect] {
        let mut v = Vec::new();
        for _ in 0..args.runs {
            match scenario(p, args.cs_ms, args.medium_ms, cpu) {
                Ok(ms) => v.push(ms),
                Err(e) => {
                    errln!("protocol {p:?}: {e}");
                    std::process::exit(1);
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let m = median(v.clone());
        if !args.json {
            let what = match p {
                Protocol::None => "none    (NormalMutex, PTHREAD_PRIO_NONE)   ",
                Protocol::Inherit => "inherit (PiMutex, PTHREAD_PRIO_INHERIT)   ",
                Protocol::Protect => "protect (CeilingMutex, PTHREAD_PRIO_PROTECT)",
            };
            outln!(
                "{what}: high blocked {m:7.1} ms = {:4.2} x critical section   (runs: {})",
                m / args.cs_ms,
                v.iter()
                    .map(|x| format!("{x:.1}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        out.push(m);
    }
    if args.json {
        outln!(
            "{{\"critical_section_ms\": {:.3}, \"blocked_ms\": {{\"none\": {:.3}, \"inherit\": {:.3}, \"protect\": {:.3}}}}}",
            args.cs_ms, out[0], out[1], out[2]
        );
    } else {
        outln!(
            "inversion bounded: inherit {:.2}x and protect {:.2}x the critical section; none is {:.1}x inherit",
            out[1] / args.cs_ms,
            out[2] / args.cs_ms,
            out[0] / out[1]
        );
    }
}
