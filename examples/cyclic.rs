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
//! `/dev/cpu_dma_latency` at 0. Without the privilege for SCHED_FIFO it says so and
//! measures at normal priority.

use std::process::exit;
use std::time::Duration;

use posixrt::sched::periodic::{LatencyStats, Periodic};
use posixrt::sched::rt::Setup;
use posixrt::sched::{self, Builder, CpuSet, Priority};

const USAGE: &str = "\
usage: cyclic [-p PRIO] [-i INTERVAL_US] [-l LOOPS] [-c CPU] [--json]

Measures timer wake-up latency like cyclictest: one SCHED_FIFO thread sleeps on an
absolute CLOCK_MONOTONIC deadline every INTERVAL_US and records now - deadline.

  -p PRIO         SCHED_FIFO priority of the measuring thread (1..=99, default 80;
                  0 runs it SCHED_OTHER)
  -i INTERVAL_US  period in microseconds (default 1000)
  -l LOOPS        number of wake-ups (default 10000)
  -c CPU          pin the measuring thread to CPU
  --json          print one JSON object instead of the cyclictest line
  -h, --help      this text

Output (as cyclictest -q): T: 0 (tid) P:80 I:1000 C: N Min: Act: Avg: Max:  (us)";

struct Args {
    prio: i32,
    interval_us: u64,
    loops: u64,
    cpu: Option<usize>,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        prio: 80,
        interval_us: 1000,
        loops: 10000,
        cpu: None,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| -> Result<String, String> {
            it.next().ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                exit(0);
            }
            "--json" => a.json = true,
            "-p" => a.prio = num(&value("-p")?, "-p")?,
            "-i" => a.interval_us = num(&value("-i")?, "-i")?,
            "-l" => a.loops = num(&value("-l")?, "-l")?,
            "-c" => a.cpu = Some(num(&value("-c")?, "-c")?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.interval_us == 0 {
        return Err("-i must be at least 1".into());
    }
    if a.loops == 0 {
        return Err("-l must be at least 1".into());
    }
    Ok(a)
}

fn num<T: std::str::FromStr>(s: &str, name: &str) -> Result<T, String> {
    s.parse()
        .map_err(|_| format!("{name}: {s:?} is not a valid number"))
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("cyclic: {e}\n\n{USAGE}");
            exit(2);
        }
    };
    if let Err(e) = run(args) {
        eprintln!("cyclic: {e}");
        exit(1);
    }
}

fn run(a: Args) -> Result<(), Box<dyn std::error::Error>> {
    // cyclictest -m: mlockall; cyclictest also holds /dev/cpu_dma_latency at 0.
    let setup = Setup::none()
        .lock_memory(true)
        .cpu_dma_latency(Some(0))
        .apply();
    for (what, e) in setup.failures() {
        eprintln!("cyclic: note: {what} failed: {e}");
    }

    let prio = if a.prio == 0 {
        Priority::other()
    } else {
        Priority::fifo(a.prio)?
    };
    // A small stack: with mlockall(MCL_FUTURE) the whole stack is locked, and an
    // unprivileged RLIMIT_MEMLOCK (often 8 MiB) would not fit the default 8 MiB.
    let mut builder = Builder::new().name("cyclic").stack_size(256 * 1024);
    if let Some(cpu) = a.cpu {
        builder = builder.affinity(CpuSet::single(cpu)?);
    }
    let interval = Duration::from_micros(a.interval_us);
    let loops = a.loops;
    let buckets = 10_000; // 1 us buckets up to 10 ms, as cyclictest -h 10000
    let measure = move || -> posixrt::Result<(LatencyStats, Priority)> {
        // Touch the stack this loop uses while memory is locked.
        let _ = posixrt::sched::rt::prefault_stack(64 * 1024);
        // SCHED_OTHER timers are deferred by the timer slack (50 us by default); the
        // kernel ignores it for SCHED_FIFO, so this only matters for the fallback.
        let _ = posixrt::sched::rt::set_timer_slack(1);
        let mut stats = LatencyStats::new(buckets);
        let mut timer = Periodic::new(interval)?;
        for _ in 0..loops {
            let w = timer.wait()?;
            stats.record(&w);
        }
        Ok((stats, sched::current_scheduling()?))
    };
    let handle = match builder.clone().scheduling(prio).spawn(measure) {
        Ok(h) => h,
        Err(e) if e.kind() == posixrt::ErrorKind::PermissionDenied => {
            eprintln!("cyclic: cannot run the measuring thread as {prio}: {e}");
            eprintln!(
                "cyclic: measuring at normal priority (SCHED_OTHER) instead; figures will be worse"
            );
            builder.scheduling(Priority::other()).spawn(measure)?
        }
        Err(e) => return Err(e.into()),
    };
    let tid = handle.tid();
    let (stats, ran_as) = match handle.join() {
        Ok(r) => r?,
        Err(_) => return Err("the measuring thread panicked".into()),
    };

    if a.json {
        let hist: Vec<String> = stats
            .histogram()
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(us, n)| format!("\"{us}\": {n}"))
            .collect();
        println!(
            "{{\"loops\": {}, \"min_us\": {:.3}, \"avg_us\": {:.3}, \"max_us\": {:.3}, \"histogram_us\": {{{}}}, \"beyond_histogram\": {}, \"overruns\": {}, \"policy\": \"{}\", \"priority\": {}, \"interval_us\": {}}}",
            stats.count(),
            stats.min_us(),
            stats.avg_us(),
            stats.max_us(),
            hist.join(", "),
            stats.beyond(),
            stats.overruns(),
            ran_as.policy(),
            ran_as.value(),
            a.interval_us
        );
    } else {
        println!(
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
