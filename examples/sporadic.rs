//! POSIX `SCHED_SPORADIC` in user space, side by side with `SCHED_DEADLINE`.
//!
//! A CPU-bound thread with a budget of 2 ms every 10 ms and a CPU-bound competitor
//! at a middle `SCHED_FIFO` priority share one CPU for 2 s:
//!
//! 1. **sporadic**: the served thread runs at priority 50 while it has budget, at 10
//!    once it is spent (the competitor is at 30), under `posixrt::sched::sporadic`;
//!    the server thread is pinned to the same CPU (`--server-cpu` moves it);
//! 2. **deadline**: the same thread as `SCHED_DEADLINE` (runtime 2 ms, period 10 ms).
//!
//! ```sh
//! cargo run --release --example sporadic
//! cargo run --release --example sporadic -- --json
//! ```
//!
//! Every thread stops by itself at the end of the run. Both threads record when they
//! ran (consecutive `CLOCK_MONOTONIC` reads more than 20 us apart mark a
//! preemption) and their CPU time at each resumption, which gives:
//!
//! - `served_share`: the served thread's CPU time over the run's length (at the
//!   low priority it cannot run: the competitor always wants the CPU);
//! - `overrun_p99_us`, `overrun_max_us`: per burst (runs less than 1 ms apart), the
//!   CPU time past the 2 ms budget (left out: the first and last burst, which the
//!   run's edges cut, and bursts right after a stall of 1 ms or more in which
//!   neither thread ran, where a delayed sporadic thread legitimately catches up);
//! - `competitor_share`: the competitor's CPU time over the run's length;
//! - `max_starved_periods`: the most the served thread ran inside one
//!   stretch where the competitor did not run, in periods (0.2 is one budget);
//!   the text output also gives `longest_gap_ms`, the longest such stretch
//!   whoever ran in it.
//!
//! The kernel refuses `SCHED_DEADLINE` to a thread whose affinity is narrower than
//! its root domain (EPERM), so unless the machine has an exclusive cpuset for one CPU
//! the deadline thread runs on any CPU, and the text output says so.

use std::process::exit;
use std::time::Duration;

use posixrt::sched::deadline::Deadline;
use posixrt::sched::sporadic::{self, SporadicParams};
use posixrt::sched::{cputime::CpuClock, Builder, CpuSet, Priority};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const USAGE: &str = "\
usage: sporadic [--seconds S] [-c CPU] [--server-cpu CPU] [--json]

A CPU-bound thread with a 2 ms budget every 10 ms (SCHED_SPORADIC from
posixrt::sched::sporadic: priority 50 with budget, 10 without) and a CPU-bound
SCHED_FIFO 30 competitor on one CPU; then the same thread as SCHED_DEADLINE
(runtime 2 ms, period 10 ms) against the same competitor.

  --seconds S   length of each run (0.1..=10, default 2)
  -c CPU        the CPU to use (default: the last CPU this process may use)
  --server-cpu CPU
                pin the sporadic server thread there (default: the same CPU, where
                it stops the served thread the moment it wakes)
  --json        print one line: {\"sporadic\": {served_share, overrun_p99_us,
                overrun_max_us, competitor_share, max_starved_periods},
                \"deadline\": {the same}}
  -h, --help    this text

Needs CAP_SYS_NICE (or RLIMIT_RTPRIO >= 99) for SCHED_FIFO and SCHED_DEADLINE.";

const BUDGET: Duration = Duration::from_millis(2);
const PERIOD: Duration = Duration::from_millis(10);
const NORMAL: i32 = 50;
const MIDDLE: i32 = 30;
const LOW: i32 = 10;
/// Two clock reads further apart than this mean the thread did not run between.
const GAP_NS: u64 = 20_000;
/// Runs closer than this belong to the same burst.
const BURST_GAP_NS: u64 = 1_000_000;

struct Args {
    seconds: f64,
    cpu: Option<usize>,
    server_cpu: Option<usize>,
    json: bool,
}

fn parse() -> Args {
    let mut a = Args {
        seconds: 2.0,
        cpu: None,
        server_cpu: None,
        json: false,
    };
    let mut it = args::Args::new("sporadic", USAGE);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--json" => a.json = true,
            "--seconds" => a.seconds = it.value_in("--seconds", 0.1..=10.0),
            "--server-cpu" => a.server_cpu = Some(it.value("--server-cpu")),
            "-c" => a.cpu = Some(it.value("-c")),
            _ => it.unknown(&arg),
        }
    }
    a
}

fn now_ns() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn sleep_until(t: u64) {
    let n = now_ns();
    if t > n {
        std::thread::sleep(Duration::from_nanos(t - n));
    }
}

/// One stretch of running: wall start and end, and the thread's CPU clock at its
/// start.
#[derive(Clone, Copy)]
struct Run {
    start: u64,
    end: u64,
    cpu: u64,
}

/// What a spinning thread saw of its own execution between `start` and `end`.
struct Record {
    runs: Vec<Run>,
    cpu_used: u64,
}

fn cpu_ns(c: &CpuClock) -> u64 {
    c.now().map(|d| d.as_nanos() as u64).unwrap_or(0)
}

/// Spins from now until `end` (wall), recording each stretch it ran.
fn spin_until(end: u64) -> Record {
    let me = CpuClock::current_thread();
    let mut runs = Vec::with_capacity(200_000);
    let cpu0 = cpu_ns(&me);
    let mut run = Run {
        start: now_ns(),
        end: 0,
        cpu: cpu0,
    };
    let mut last = run.start;
    while last < end {
        let t = now_ns();
        if t - last > GAP_NS {
            run.end = last;
            if runs.len() < runs.capacity() {
                runs.push(run);
            }
            run = Run {
                start: t,
                end: 0,
                cpu: cpu_ns(&me),
            };
        }
        last = t;
    }
    run.end = last;
    runs.push(run);
    let cpu1 = cpu_ns(&me);
    runs.push(Run {
        start: u64::MAX,
        end: u64::MAX,
        cpu: cpu1,
    });
    Record {
        runs,
        cpu_used: cpu1 - cpu0,
    }
}

#[derive(Debug, Default)]
struct Figures {
    served_share: f64,
    overrun_p99_us: f64,
    overrun_max_us: f64,
    competitor_share: f64,
    max_starved_periods: f64,
    /// Bursts measured, and bursts left out because a stall preceded them.
    bursts: usize,
    after_stall: usize,
    /// The longest time the competitor did not run, whoever ran instead.
    longest_gap_ms: f64,
}

impl Figures {
    fn json(&self) -> String {
        format!(
            "{{\"served_share\": {:.4}, \"overrun_p99_us\": {:.1}, \"overrun_max_us\": {:.1}, \
             \"competitor_share\": {:.4}, \"max_starved_periods\": {:.3}}}",
            self.served_share,
            self.overrun_p99_us,
            self.overrun_max_us,
            self.competitor_share,
            self.max_starved_periods
        )
    }
}

/// Wall time a thread with these runs ran inside `[from, to]`.
fn ran_within(runs: &[Run], from: u64, to: u64) -> u64 {
    runs.iter()
        .filter(|r| r.start != u64::MAX && r.start < to && r.end > from)
        .map(|r| r.end.min(to) - r.start.max(from))
        .sum()
}

fn figures(served: &Record, competitor: &Record, start: u64, end: u64) -> Figures {
    let len = (end - start) as f64;
    let period = PERIOD.as_nanos() as u64;
    // Bursts of the served thread: runs less than BURST_GAP apart. The sentinel run
    // at the end carries the final CPU clock.
    let runs = &served.runs;
    let last = runs.len() - 1;
    let mut burst_starts = vec![0usize];
    for i in 1..last {
        if runs[i].start - runs[i - 1].end >= BURST_GAP_NS {
            burst_starts.push(i);
        }
    }
    burst_starts.push(last);
    let mut overruns = Vec::new();
    let mut after_stall = 0;
    // The first and the last burst are cut by the run's edges.
    for k in 1..burst_starts.len().saturating_sub(2) {
        let (b, next) = (burst_starts[k], burst_starts[k + 1]);
        // A burst right after a stall (neither thread ran for a millisecond or more:
        // RT throttling, the fair-share server or the hypervisor stopped every RT
        // thread of the CPU) may carry two activations back to back: a thread
        // delayed past activation + period is replenished at once (POSIX), so it
        // catches up. Those are not overruns of one budget.
        let prev_end = runs[b - 1].end;
        let idle = (runs[b].start - prev_end).saturating_sub(ran_within(
            &competitor.runs,
            prev_end,
            runs[b].start,
        ));
        if idle >= BURST_GAP_NS {
            after_stall += 1;
            continue;
        }
        let cpu = runs[next].cpu.saturating_sub(runs[b].cpu);
        overruns.push(cpu.saturating_sub(BUDGET.as_nanos() as u64) as f64 / 1000.0);
    }
    overruns.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if overruns.is_empty() {
            return 0.0;
        }
        let i = ((overruns.len() as f64 * p).ceil() as usize).clamp(1, overruns.len()) - 1;
        overruns[i]
    };
    // The competitor's gaps (edges included): the longest, and the most the served
    // thread ran inside one (what it took from the competitor).
    let mut prev_end = start;
    let mut longest = 0u64;
    let mut starved = 0u64;
    let mut gap = |from: u64, to: u64| {
        longest = longest.max(to.saturating_sub(from));
        starved = starved.max(ran_within(runs, from, to));
    };
    for r in competitor.runs.iter().filter(|r| r.start != u64::MAX) {
        gap(prev_end, r.start);
        prev_end = r.end;
    }
    gap(prev_end, end);
    Figures {
        served_share: served.cpu_used as f64 / len,
        overrun_p99_us: pct(0.99),
        overrun_max_us: overruns.last().copied().unwrap_or(0.0),
        competitor_share: competitor.cpu_used as f64 / len,
        max_starved_periods: starved as f64 / period as f64,
        bursts: overruns.len(),
        after_stall,
        longest_gap_ms: longest as f64 / 1e6,
    }
}

enum Served {
    Sporadic,
    Deadline { pinned: bool },
}

struct Outcome {
    figures: Figures,
    note: String,
}

fn run(cpu: usize, server_cpu: usize, seconds: f64, which: Served) -> posixrt::Result<Outcome> {
    let pin = CpuSet::single(cpu)?;
    let start = now_ns() + 50_000_000;
    let end = start + (seconds * 1e9) as u64;
    let body = move || {
        sleep_until(start);
        spin_until(end)
    };
    // The served thread is made first: should it be refused, no competitor is left
    // spinning.
    let competitor = || {
        Builder::new()
            .name("competitor")
            .affinity(pin)
            .scheduling(Priority::fifo(MIDDLE)?)
            .spawn(body)
    };
    let (served, note, competitor) = match which {
        Served::Sporadic => {
            sporadic::set_server_affinity(&CpuSet::single(server_cpu)?)?;
            let params = SporadicParams::new(LOW, PERIOD, BUDGET, 4);
            let h = Builder::new()
                .name("served")
                .affinity(pin)
                .sporadic(params, NORMAL)
                .spawn(move || {
                    // A declared block: the server charges nothing while it sleeps.
                    sporadic::blocking(|| sleep_until(start));
                    spin_until(end)
                })?;
            let competitor = competitor()?;
            while !h.is_finished() {
                std::thread::sleep(Duration::from_millis(5));
            }
            let note = h.sporadic().map(|s| s.stats()).map_or(String::new(), |st| {
                format!(
                    "the server saw {} exhaustions, {} replenishments, made {} priority \
                     switches; overrun at its steps: max {:?}, mean {:?}",
                    st.exhaustions,
                    st.replenishments,
                    st.switches,
                    st.max_overrun,
                    st.total_overrun / (st.exhaustions.max(1) as u32)
                )
            });
            let r = h.join().map_err(|_| {
                posixrt::Error::new(posixrt::ErrorKind::Other, "join", "served panicked")
            })?;
            (r, note, competitor)
        }
        Served::Deadline { pinned } => {
            let dl = Deadline::new(BUDGET, PERIOD, PERIOD)?;
            // Unpinned: every online CPU, not the affinity this process
            // inherited (under `taskset -c N` one CPU, which the kernel
            // refuses as well).
            let b = Builder::new().name("served").deadline(dl);
            let b = if pinned {
                b.affinity(pin)
            } else {
                b.affinity(online_cpus()?)
            };
            let h = b.spawn(body)?;
            let competitor = competitor()?;
            let r = h.join().map_err(|_| {
                posixrt::Error::new(posixrt::ErrorKind::Other, "join", "served panicked")
            })?;
            let note = if pinned {
                String::new()
            } else {
                format!(
                    "the deadline thread ran on any CPU of {} (SCHED_DEADLINE refuses a \
                     one-CPU affinity outside an exclusive cpuset)",
                    online_cpus()?
                )
            };
            (r, note, competitor)
        }
    };
    let comp = competitor
        .join()
        .map_err(|_| posixrt::Error::new(posixrt::ErrorKind::Other, "join", "panicked"))?;
    Ok(Outcome {
        figures: figures(&served, &comp, start, end),
        note,
    })
}

/// The online CPUs (`/sys/devices/system/cpu/online`, e.g. `0-3,6`): the
/// affinity SCHED_DEADLINE admits outside a cpuset partition.
fn online_cpus() -> posixrt::Result<CpuSet> {
    let bad = || {
        posixrt::Error::new(
            posixrt::ErrorKind::Other,
            "read",
            "/sys/devices/system/cpu/online: not a CPU list",
        )
    };
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").map_err(|_| bad())?;
    let mut cpus = Vec::new();
    for part in text.trim().split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
        cpus.extend(a..=b);
    }
    CpuSet::from_cpus(cpus)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    // A closed pipe (`sporadic | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("sporadic");
    let args = parse();
    let allowed = match CpuSet::allowed() {
        Ok(s) => s,
        Err(e) => {
            errln!("sporadic: {e}");
            exit(1);
        }
    };
    let cpu = match args.cpu {
        Some(c) if allowed.contains(c) => c,
        Some(c) => args::usage_error(
            "sporadic",
            format!("CPU {c} is not one this process may use ({allowed})"),
        ),
        None => allowed.iter().last().unwrap_or(0),
    };
    let server_cpu = match args.server_cpu {
        Some(c) if allowed.contains(c) => c,
        Some(c) => args::usage_error(
            "sporadic",
            format!("CPU {c} is not one this process may use ({allowed})"),
        ),
        None => cpu,
    };
    let load_before = loadavg();
    let sp = match run(cpu, server_cpu, args.seconds, Served::Sporadic) {
        Ok(o) => o,
        Err(e) => {
            errln!("sporadic: the sporadic run failed: {e}");
            exit(1);
        }
    };
    let dl = match run(
        cpu,
        server_cpu,
        args.seconds,
        Served::Deadline { pinned: true },
    ) {
        Ok(o) => o,
        Err(e) if e.kind() == posixrt::ErrorKind::PermissionDenied => {
            match run(
                cpu,
                server_cpu,
                args.seconds,
                Served::Deadline { pinned: false },
            ) {
                Ok(o) => o,
                Err(e) => {
                    errln!("sporadic: the deadline run failed: {e}");
                    exit(1);
                }
            }
        }
        Err(e) => {
            errln!("sporadic: the deadline run failed: {e}");
            exit(1);
        }
    };
    if args.json {
        outln!(
            "{{\"sporadic\": {}, \"deadline\": {}}}",
            sp.figures.json(),
            dl.figures.json()
        );
        return;
    }
    outln!(
        "budget {BUDGET:?} every {PERIOD:?} on CPU {cpu} (server on CPU {server_cpu}), {} s per \
         run, load average {load_before} (before) {} (after)",
        args.seconds,
        loadavg()
    );
    outln!(
        "{:<10} {:>12} {:>14} {:>14} {:>16} {:>19} {:>7} {:>11} {:>14}",
        "",
        "served_share",
        "overrun_p99_us",
        "overrun_max_us",
        "competitor_share",
        "max_starved_periods",
        "bursts",
        "after_stall",
        "longest_gap_ms"
    );
    for (name, o) in [("sporadic", &sp), ("deadline", &dl)] {
        let f = &o.figures;
        outln!(
            "{:<10} {:>12.4} {:>14.1} {:>14.1} {:>16.4} {:>19.3} {:>7} {:>11} {:>14.1}",
            name,
            f.served_share,
            f.overrun_p99_us,
            f.overrun_max_us,
            f.competitor_share,
            f.max_starved_periods,
            f.bursts,
            f.after_stall,
            f.longest_gap_ms
        );
    }
    outln!(
        "after_stall: bursts left out of the overrun figures because every RT thread of \
         the CPU had been stopped for 1 ms or more right before them (RT throttling, the \
         fair-share server, the hypervisor); longest_gap_ms: the longest time the competitor did not run, \
         whoever ran instead (max_starved_periods counts only the served thread's share)"
    );
    for o in [&sp, &dl] {
        if !o.note.is_empty() {
            outln!("note: {}", o.note);
        }
    }
}
