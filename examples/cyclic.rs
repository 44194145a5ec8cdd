//! A cyclictest work-alike: one thread wakes every interval on an absolute
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` and records how late it woke up.
//!
//! ```sh
//! cargo run --release --example cyclic -- -p 80 -i 1000 -l 10000
//! cargo run --release --example cyclic -- -p 80 -i 1000 -l 10000 --json
//! ```
//!
//! Compare with `cyclictest -m -p 80 -i 1000 -l 10000 -q`. Like `cyclictest -m` it
//! locks memory (mlockall) and, as cyclictest does by default, holds
//! `/dev/cpu_dma_latency` at 0 and pins the measuring thread to the first CPU this
//! process may use (cyclictest pins thread N to the N-th allowed CPU even without
//! `-a`; an unpinned thread that migrates shows different tails, so compare like
//! with like). Without the privilege for SCHED_FIFO it says so and measures at
//! normal priority.

use std::process::exit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use posixrt::sched::periodic::{LatencyStats, Periodic};
use posixrt::sched::rt::Setup;
use posixrt::sched::{self, Builder, CpuSet, Priority};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const USAGE: &str = "\
usage: cyclic [-p PRIO] [-i INTERVAL_US] [-l LOOPS] [-a CPU | --no-pin] [--json]

Measures timer wake-up latency like cyclictest: one SCHED_FIFO thread sleeps on an
absolute CLOCK_MONOTONIC deadline every INTERVAL_US and records now - deadline.

  -p PRIO         SCHED_FIFO priority of the measuring thread (1..=99, default 80;
                  0 runs it SCHED_OTHER)
  -i INTERVAL_US  period in microseconds (1..=10000000, default 1000)
  -l LOOPS        number of wake-ups (default 10000)
  -a CPU, -c CPU  pin the measuring thread to CPU (default: the first CPU this
                  process may use, as cyclictest does)
  --no-pin        let the measuring thread run on any allowed CPU
  --json          print one JSON object instead of the cyclictest line
  -h, --help      this text

Ctrl-C (SIGINT) or SIGTERM ends the run early; the figures so far are printed.

Output (as cyclictest -q): T: 0 (tid) P:80 I:1000 C: N Min: Act: Avg: Max:  (us,
truncated to whole us as cyclictest does; --json gives exact values, percentiles,
the loop index of the maximum and the page faults taken inside the loop)";

/// The longest period accepted by `-i`, in microseconds (10 s).
const MAX_INTERVAL_US: u64 = 10_000_000;

struct Args {
    prio: i32,
    interval_us: u64,
    loops: u64,
    cpu: Option<usize>,
    pin: bool,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        prio: 80,
        interval_us: 1000,
        loops: 10000,
        cpu: None,
        pin: true,
        json: false,
    };
    let mut it = args::Args::new("cyclic", USAGE);
    // What each option takes, for the message when its value is missing or no
    // such number (the checks below say why a number is refused).
    let prio = "a number from 0 to 99";
    let interval = format!("a number from 1 to {MAX_INTERVAL_US}");
    let loops = format!("a number from 1 to {}", u64::MAX);
    let cpu = "a CPU number";
    while let Some(arg) = it.next() {
        let mut value = |name: &str, what: &str| -> Result<String, String> {
            it.next().ok_or_else(|| format!("{name} needs {what}"))
        };
        match arg.as_str() {
            "--json" => a.json = true,
            "--no-pin" => a.pin = false,
            "-p" => a.prio = num(&value("-p", prio)?, "-p", prio)?,
            "-i" => a.interval_us = num(&value("-i", &interval)?, "-i", &interval)?,
            "-l" => a.loops = num(&value("-l", &loops)?, "-l", &loops)?,
            "-a" | "-c" => a.cpu = Some(num(&value(&arg, cpu)?, &arg, cpu)?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if !(0..=99).contains(&a.prio) {
        return Err(format!(
            "-p {}: SCHED_FIFO priorities are 1..=99 (0 for SCHED_OTHER)",
            a.prio
        ));
    }
    if a.interval_us == 0 {
        return Err("-i must be at least 1".into());
    }
    if a.interval_us > MAX_INTERVAL_US {
        return Err(format!(
            "-i {}: the interval may be at most {MAX_INTERVAL_US} us (10 s)",
            a.interval_us
        ));
    }
    Periodic::new(Duration::from_micros(a.interval_us))
        .map_err(|e| format!("-i {}: {e}", a.interval_us))?;
    if a.loops == 0 {
        return Err("-l must be at least 1".into());
    }
    if a.cpu.is_some() && !a.pin {
        return Err("-a/-c and --no-pin exclude each other".into());
    }
    Ok(a)
}

/// `s`, the value of option `name`, as a number; if it is none, an error that
/// says what the option takes (`what`: "a number from 1 to 99").
fn num<T: std::str::FromStr>(s: &str, name: &str, what: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{name}: {s:?} is not {what}"))
}

/// Minor and major page faults of the calling thread so far (`getrusage(RUSAGE_THREAD)`).
fn thread_faults() -> (i64, i64) {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_THREAD names the caller.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } != 0 {
        return (-1, -1);
    }
    (ru.ru_minflt, ru.ru_majflt)
}

struct Measured {
    stats: LatencyStats,
    ran_as: Priority,
    minor_faults: i64,
    major_faults: i64,
}

/// Set by SIGINT/SIGTERM: like cyclictest, stop early and print what was measured.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop(_sig: libc::c_int) {
    // Only an atomic store: async-signal-safe.
    STOP.store(true, Ordering::Relaxed);
}

fn catch_stop_signals() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: an all-zero sigaction is a valid value (empty mask, no flags).
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // SAFETY: `sa` is initialised and names a handler that only does an atomic
        // store; a null old-action pointer is allowed.
        unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
    }
}

/// Blocks SIGINT and SIGTERM in the calling thread (`pthread_sigmask`).
fn block_stop_signals() {
    // SAFETY: an all-zero sigset_t is a valid value; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t; a null old-set pointer is allowed.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn main() {
    // A closed pipe (`cyclic | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("cyclic");
    let args = match parse() {
        Ok(a) => a,
        Err(e) => args::usage_error("cyclic", e),
    };
    catch_stop_signals();
    if let Err(e) = run(args) {
        errln!("cyclic: {e}");
        exit(1);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    // As cyclictest: thread 0 on the first CPU this process may use, unless told.
    let allowed = CpuSet::allowed()?;
    let cpu = match (a.pin, a.cpu) {
        (false, _) => None,
        (true, Some(c)) if allowed.contains(c) => Some(c),
        // A bad argument, known only now: a usage error (exit 2).
        (true, Some(c)) => args::usage_error(
            "cyclic",
            format!(
                "-a {c}: this process may run on CPUs {allowed} only (taskset, cgroup cpuset \
                 or offline CPUs); pick one of those"
            ),
        ),
        (true, None) => allowed.iter().next(),
    };
    // cyclictest -m: mlockall; cyclictest also holds /dev/cpu_dma_latency at 0.
    let setup = Setup::none()
        .lock_memory(true)
        .cpu_dma_latency(Some(0))
        .apply();
    for (what, e) in setup.failures() {
        errln!("cyclic: note: {what} failed: {e}");
    }

    let prio = if a.prio == 0 {
        Priority::other()
    } else {
        Priority::fifo(a.prio)?
    };
    // A small stack: with mlockall(MCL_FUTURE) the whole stack is locked, and an
    // unprivileged RLIMIT_MEMLOCK (often 8 MiB) would not fit the default 8 MiB.
    let mut builder = Builder::new().name("cyclic").stack_size(256 * 1024);
    if let Some(cpu) = cpu {
        builder = builder.affinity(CpuSet::single(cpu)?);
    }
    let interval = Duration::from_micros(a.interval_us);
    let loops = a.loops;
    let buckets = 10_000; // 1 us buckets up to 10 ms, as cyclictest -h 10000
    let measure = move || -> posixrt::Result<Measured> {
        // Touch the stack this loop uses while memory is locked.
        let _ = posixrt::sched::rt::prefault_stack(64 * 1024);
        // SCHED_OTHER timers are deferred by the timer slack (50 us by default); the
        // kernel ignores it for SCHED_FIFO, so this only matters for the fallback.
        let _ = posixrt::sched::rt::set_timer_slack(1);
        let mut stats = LatencyStats::new(buckets);
        let mut timer = Periodic::new(interval)?;
        let (minor0, major0) = thread_faults();
        for _ in 0..loops {
            // A SIGINT/SIGTERM interrupts the sleep (EINTR) and sets STOP.
            match timer.wait_unless(&STOP)? {
                Some(w) => stats.record(&w),
                None => break,
            }
        }
        let (minor1, major1) = thread_faults();
        Ok(Measured {
            stats,
            ran_as: sched::current_scheduling()?,
            minor_faults: minor1 - minor0,
            major_faults: major1 - major0,
        })
    };
    let handle = match builder.clone().scheduling(prio).spawn(measure) {
        Ok(h) => h,
        Err(e) if e.kind() == posixrt::ErrorKind::PermissionDenied => {
            errln!("cyclic: cannot run the measuring thread as {prio}: {e}");
            errln!(
                "cyclic: measuring at normal priority (SCHED_OTHER) instead; figures will be worse"
            );
            builder.scheduling(Priority::other()).spawn(measure)?
        }
        Err(e) => return Err(e.into()),
    };
    let tid = handle.tid();
    // Route SIGINT/SIGTERM to the measuring thread, so they interrupt its sleep: block
    // them here (the thread was spawned with them unblocked), and pass on one that
    // arrived before the block.
    block_stop_signals();
    if STOP.load(Ordering::Relaxed) {
        // SAFETY: tgkill with our own pid only reaches a thread of this process; the
        // handler only stores to an atomic.
        unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                libc::getpid(),
                tid.as_raw(),
                libc::SIGTERM,
            )
        };
    }
    let m = match handle.join() {
        Ok(r) => r?,
        Err(_) => return Err("the measuring thread panicked".into()),
    };
    let (stats, ran_as) = (&m.stats, m.ran_as);
    let pct = |q: f64| match stats.percentile_us(q) {
        Some(v) => format!("{v:.0}"),
        None => "null".into(),
    };

    if a.json {
        let hist: Vec<String> = stats
            .histogram()
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(us, n)| format!("\"{us}\": {n}"))
            .collect();
        outln!(
            "{{\"loops\": {}, \"min_us\": {:.3}, \"avg_us\": {:.3}, \"max_us\": {:.3}, \"histogram_us\": {{{}}}, \"beyond_histogram\": {}, \"overruns\": {}, \"p50_us\": {}, \"p99_us\": {}, \"p999_us\": {}, \"max_at_loop\": {}, \"minor_faults_in_loop\": {}, \"major_faults_in_loop\": {}, \"policy\": \"{}\", \"priority\": {}, \"interval_us\": {}, \"cpu\": {}, \"tid\": {}}}",
            stats.count(),
            stats.min_us(),
            stats.avg_us(),
            stats.max_us(),
            hist.join(", "),
            stats.beyond(),
            stats.overruns(),
            pct(0.50),
            pct(0.99),
            pct(0.999),
            stats.max_index(),
            m.minor_faults,
            m.major_faults,
            ran_as.policy(),
            ran_as.value(),
            a.interval_us,
            cpu.map_or("null".to_string(), |c| c.to_string()),
            tid.as_raw()
        );
    } else {
        outln!(
            "T: 0 ({:>5}) P:{:>2} I:{} {}",
            tid.as_raw(),
            ran_as.value(),
            a.interval_us,
            stats
        );
    }
    drop(setup);
    Ok(())
}
