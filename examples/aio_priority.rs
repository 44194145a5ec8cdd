//! Prioritized I/O on the thread engine (POSIX `_POSIX_PRIORITIZED_IO`): a
//! request runs at its submitter's priority minus `aio_reqprio`, and queued
//! requests are taken highest effective priority first, across submitters.
//!
//! The whole process is pinned to one CPU. A SCHED_OTHER thread queues thousands
//! of 4-byte reads of a pipe that holds the counters 0, 1, 2, ... (so each read
//! gets its issue rank); then a SCHED_FIFO 80 thread submits 50 reads. Every one
//! of them should be issued before any SCHED_OTHER read still queued when they
//! arrived. Then a SCHED_FIFO 80 thread submits a long read with `reqprio` 5, and
//! a SCHED_FIFO 90 sampler reads the workers' policy and priority from
//! `/proc/self/task/<tid>/stat` while it runs: SCHED_FIFO 75 is expected.
//!
//! ```text
//! cargo run --release --example aio_priority -- [--json] [--other N]
//! ```
//!
//! Needs CAP_SYS_NICE (or RLIMIT_RTPRIO >= 90). Prints the figures, or with
//! `--json` one object: `rt_first_fraction` (expected 1.0),
//! `worker_priority_seen` and `worker_priority_expected` (75), the policy seen,
//! and what one worker switch costs (`switch_ns`, a `pthread_setschedparam` to
//! SCHED_FIFO 75 and back, measured on this thread).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend, Op, Request};

#[macro_use]
#[path = "support/out.rs"]
mod out;
#[path = "support/args.rs"]
mod args;

const USAGE: &str = "usage: aio_priority [--json] [--other N]

Saturates the AIO thread engine with SCHED_OTHER reads, then submits from a
SCHED_FIFO 80 thread: reports how many RT requests overtook the queued OTHER ones
(rt_first_fraction, expected 1.0) and the class a worker ran at while serving an RT
request with reqprio 5 (expected SCHED_FIFO 75). Needs CAP_SYS_NICE.

  --other N   SCHED_OTHER requests queued first (100 to 100000, default 5000)
  --json      one JSON object instead of the text";

const RT_REQUESTS: usize = 50;
const RT_PRIO: i32 = 80;
const REQPRIO: i32 = 5;

fn set_class(policy: i32, prio: i32) -> Result<(), String> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: sets the calling thread's own scheduling class.
    match unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &p) } {
        0 => Ok(()),
        e => Err(format!(
            "pthread_setschedparam({} {prio}) failed: {}; hint: this example runs threads up to SCHED_FIFO 90: run as root, or grant CAP_SYS_NICE or RLIMIT_RTPRIO >= 90",
            policy_name(policy),
            out::os_error(&std::io::Error::from_raw_os_error(e))
        )),
    }
}

/// Pins the process to the first CPU it may use (not CPU 0 by number: under
/// `taskset` or in a cpuset without it, that one is refused or overrides the
/// user's choice). Returns that CPU.
fn pin_to_one_cpu() -> Result<usize, String> {
    use posixrt::sched::{set_process_affinity, CpuSet};
    let err = |e: posixrt::Error| format!("sched_setaffinity: {e}");
    let cpu = CpuSet::allowed()
        .map_err(err)?
        .iter()
        .next()
        .ok_or("sched_getaffinity: no CPU allowed")?;
    set_process_affinity(&CpuSet::single(cpu).map_err(err)?).map_err(err)?;
    Ok(cpu)
}

/// `(policy, rt_priority)` of every `posixrt-aio-<n>` worker.
fn worker_classes() -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for t in dir.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let is_worker = comm
            .trim()
            .strip_prefix("posixrt-aio-")
            .is_some_and(|r| r.bytes().all(|c| c.is_ascii_digit()));
        if !is_worker {
            continue;
        }
        let stat = std::fs::read_to_string(t.path().join("stat")).unwrap_or_default();
        let Some(rest) = stat.rfind(')').map(|i| &stat[i + 2..]) else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        // proc(5) fields 40 (rt_priority) and 41 (policy); `rest` starts at 3.
        if let (Some(rp), Some(pol)) = (f.get(37), f.get(38)) {
            out.push((pol.parse().unwrap_or(-1), rp.parse().unwrap_or(-1)));
        }
    }
    out
}

fn counter(r: &mut Request<Vec<u8>>) -> Result<u32, String> {
    let c = r.wait().map_err(|e| e.to_string())?;
    let d = c.data();
    if d.len() != 4 {
        return Err(format!("a pipe read returned {} bytes", d.len()));
    }
    Ok(u32::from_le_bytes([d[0], d[1], d[2], d[3]]))
}

/// Phase 1: the fraction of RT requests issued before the first SCHED_OTHER
/// request that was still queued when they arrived.
fn ordering(aio: &Aio, other: usize, workers: usize) -> Result<f64, String> {
    let total = other + RT_REQUESTS;
    let (rd, wr): (OwnedFd, OwnedFd) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| e.to_string())?;
    let need = (total * 4).next_power_of_two().max(65536);
    rustix::pipe::fcntl_setpipe_size(&wr, need).map_err(|e| format!("F_SETPIPE_SZ: {e}"))?;
    let bytes: Vec<u8> = (0..total as u32).flat_map(u32::to_le_bytes).collect();
    let mut off = 0;
    while off < bytes.len() {
        off += rustix::io::write(&wr, &bytes[off..]).map_err(|e| e.to_string())?;
    }
    let rd = Arc::new(rd);
    // The SCHED_OTHER submitter (this thread): thousands of requests.
    let mut others = Vec::with_capacity(other);
    for _ in 0..other {
        others.push(aio.read(&*rd, 0, vec![0u8; 4]).map_err(|e| e.to_string())?);
    }
    // The SCHED_FIFO 80 submitter. On one CPU it runs alone from here until it
    // waits: it notes how much of the pipe was consumed (the ranks issued before
    // it arrived), then submits its requests.
    let (aio2, rd2) = (aio.clone(), Arc::clone(&rd));
    let rt = std::thread::spawn(move || -> Result<(usize, Vec<u32>), String> {
        set_class(libc::SCHED_FIFO, RT_PRIO)?;
        let left = rustix::io::ioctl_fionread(&*rd2).map_err(|e| e.to_string())? as usize;
        let consumed = total - left / 4;
        let mut mine = Vec::with_capacity(RT_REQUESTS);
        for _ in 0..RT_REQUESTS {
            mine.push(
                aio2.read(&*rd2, 0, vec![0u8; 4])
                    .map_err(|e| e.to_string())?,
            );
        }
        let mut ranks = Vec::with_capacity(RT_REQUESTS);
        for r in &mut mine {
            ranks.push(counter(r)?);
        }
        Ok((consumed, ranks))
    });
    let (consumed, rt_ranks) = rt.join().map_err(|_| "the RT thread panicked")??;
    let mut other_ranks = Vec::with_capacity(other);
    for r in &mut others {
        other_ranks.push(counter(r)?);
    }
    // SCHED_OTHER requests are taken in submission order; at most one per
    // worker was taken but not yet read when the RT thread looked. So request
    // `consumed + workers` and every later one were surely still queued.
    let first_queued = other_ranks
        .iter()
        .skip(consumed + workers)
        .copied()
        .min()
        .unwrap_or(u32::MAX);
    let before = rt_ranks.iter().filter(|&&r| r < first_queued).count();
    drop(wr);
    Ok(before as f64 / RT_REQUESTS as f64)
}

/// Phase 2: the class a worker had while serving a FIFO 80 request with
/// reqprio 5, read from /proc by a FIFO 90 sampler (bounded: 20000 samples).
fn worker_priority(aio: &Aio) -> Result<(i32, i32), String> {
    let src = Arc::new(std::fs::File::open("/dev/urandom").map_err(|e| e.to_string())?);
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new((0i32, 0i32)));
    let sampler = {
        let (stop, seen) = (Arc::clone(&stop), Arc::clone(&seen));
        std::thread::spawn(move || -> Result<(), String> {
            set_class(libc::SCHED_FIFO, 90)?;
            for _ in 0..20_000 {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                for (pol, p) in worker_classes() {
                    let mut s = seen.lock().unwrap_or_else(|p| p.into_inner());
                    if p > s.1 {
                        *s = (pol, p);
                    }
                }
                std::thread::sleep(Duration::from_micros(200));
            }
            Ok(())
        })
    };
    let aio2 = aio.clone();
    let rt = std::thread::spawn(move || -> Result<(), String> {
        set_class(libc::SCHED_FIFO, RT_PRIO)?;
        let mut r = aio2
            .submit(Op::read(&*src, 0, vec![0u8; 32 << 20]).reqprio(REQPRIO))
            .map_err(|e| e.to_string())?;
        r.wait()
            .map_err(|e| e.to_string())?
            .result
            .map_err(|e| e.to_string())?;
        Ok(())
    });
    let r = rt.join().map_err(|_| "the RT thread panicked")?;
    stop.store(true, Ordering::Relaxed);
    sampler.join().map_err(|_| "the sampler panicked")??;
    r?;
    let s = *seen.lock().unwrap_or_else(|p| p.into_inner());
    Ok(s)
}

/// What a worker's switch costs: `pthread_setschedparam` to SCHED_FIFO 75 and
/// back to SCHED_BATCH (its resting class), per switch (half a round trip), on
/// this thread.
fn switch_cost() -> Result<f64, String> {
    const N: u32 = 2000;
    let t0 = Instant::now();
    for _ in 0..N {
        set_class(libc::SCHED_FIFO, RT_PRIO - REQPRIO)?;
        set_class(libc::SCHED_BATCH, 0)?;
    }
    // This thread's own class again.
    set_class(libc::SCHED_OTHER, 0)?;
    Ok(t0.elapsed().as_nanos() as f64 / (2 * N) as f64)
}

fn policy_name(p: i32) -> &'static str {
    match p {
        libc::SCHED_FIFO => "SCHED_FIFO",
        libc::SCHED_RR => "SCHED_RR",
        libc::SCHED_OTHER => "SCHED_OTHER",
        libc::SCHED_BATCH => "SCHED_BATCH",
        _ => "other",
    }
}

fn main() {
    // A closed pipe (`aio_priority | head`) or a full disk on standard output ends
    // the example cleanly, not in a panic (support/out.rs).
    out::init("aio_priority");
    let mut json = false;
    let mut other = 5000usize;
    let mut it = args::Args::new("aio_priority", USAGE);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => json = true,
            "--other" => other = it.value_in("--other", 100..=100_000),
            _ => it.unknown(&a),
        }
    }
    if let Err(e) = run(json, other) {
        errln!("aio_priority: {e}");
        std::process::exit(1);
    }
}

fn run(json: bool, other: usize) -> Result<(), String> {
    pin_to_one_cpu()?;
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .build()
        .map_err(|e| e.to_string())?;
    // The default pool size (Builder::workers).
    let workers = 8;
    let fraction = ordering(&aio, other, workers)?;
    let (pol, seen) = worker_priority(&aio)?;
    let switch_ns = switch_cost()?;
    let expected = RT_PRIO - REQPRIO;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_string();
    if json {
        outln!(
            "{{\"rt_first_fraction\": {fraction:.3}, \"worker_priority_seen\": {seen}, \"worker_priority_expected\": {expected}, \"worker_policy_seen\": \"{}\", \"switch_ns\": {switch_ns:.0}, \"rt_requests\": {RT_REQUESTS}, \"other_requests\": {other}, \"loadavg\": \"{load}\"}}",
            policy_name(pol)
        );
    } else {
        outln!("thread engine, one CPU, {other} SCHED_OTHER reads queued, then {RT_REQUESTS} from SCHED_FIFO {RT_PRIO}");
        outln!(
            "  RT requests issued before the first queued OTHER one: {:.1}%",
            fraction * 100.0
        );
        outln!(
            "  worker class while serving FIFO {RT_PRIO} reqprio {REQPRIO}: {} {seen} (expected SCHED_FIFO {expected})",
            policy_name(pol)
        );
        outln!("  one worker switch (pthread_setschedparam): {switch_ns:.0} ns");
        outln!("  load average: {load}");
    }
    Ok(())
}
