//! The measurement of `aio_peers`: one timed phase of an engine, the medians
//! over the rounds, and the report (a table, or one JSON line).

use crate::cli::Args;
use crate::common::{Engine, QD};

/// The figures of one engine, one per round.
#[derive(Default)]
pub struct Figures {
    p50: Vec<u64>,
    p99: Vec<u64>,
    qd32: Vec<f64>,
    qd32_cpu: Vec<f64>,
}

/// CPU time of the whole process (every thread, the peers' runtime threads and
/// the kernel's io_uring workers included), in seconds.
fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// engine, QD1 p50 ns, QD1 p99 ns, QD32 ops/s, QD32 ops per CPU second.
type Row<'a> = (&'a str, u64, u64, Option<f64>, Option<f64>);

fn median_u(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

fn median_f(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// One timed QD1 phase of `e`: its p50 and p99 go into `f`.
pub fn qd1_round(
    a: &Args,
    e: &mut dyn Engine,
    f: &mut Figures,
    lat: &mut Vec<u64>,
) -> Result<(), String> {
    lat.clear();
    e.qd1(a.ops, lat)?;
    if lat.is_empty() {
        return Err("an engine measured no read".into());
    }
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    f.p50.push(pct(0.50));
    f.p99.push(pct(0.99));
    Ok(())
}

/// One timed QD32 phase of `e` (none for an engine without QD32).
pub fn qd32_round(a: &Args, e: &mut dyn Engine, f: &mut Figures) -> Result<(), String> {
    let cpu = process_cpu_s();
    if let Some(r) = e.qd32(a.qd32_ops)? {
        let cpu = process_cpu_s() - cpu;
        f.qd32.push(r);
        if cpu > 0.0 {
            f.qd32_cpu.push((a.qd32_ops / QD * QD) as f64 / cpu);
        }
    }
    Ok(())
}

/// Prints the medians of `figs` (the figures of the engines `names`) and the
/// ratios between engines: a table, or with `--json` one JSON line.
pub fn print(a: &Args, names: &[&str], figs: &mut [Figures]) {
    let rows: Vec<Row> = names
        .iter()
        .zip(figs.iter_mut())
        .map(|(n, f)| {
            (
                *n,
                median_u(&mut f.p50),
                median_u(&mut f.p99),
                median_f(&mut f.qd32),
                median_f(&mut f.qd32_cpu),
            )
        })
        .collect();
    let get = |n: &str| rows.iter().find(|r| r.0 == n);
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let p50 = |n: &str| get(n).map(|r| r.1 as f64);
    let p99 = |n: &str| get(n).map(|r| r.2 as f64);
    let q32 = |n: &str| get(n).and_then(|r| r.3);
    let q32c = |n: &str| get(n).and_then(|r| r.4);
    let ratios = [
        (
            "await_p50_vs_suspend",
            ratio(p50("posixrt_await"), p50("posixrt_suspend")),
            "<= 1.10",
        ),
        (
            "await_p99_vs_suspend",
            ratio(p99("posixrt_await"), p99("posixrt_suspend")),
            "<= 1.10",
        ),
        (
            "await_qd32_vs_io_uring",
            ratio(q32("posixrt_await"), q32("io_uring")),
            ">= 0.90",
        ),
        (
            "await_p50_vs_monoio",
            ratio(p50("posixrt_await"), p50("monoio")),
            "<= 1.00",
        ),
        (
            "await_p50_vs_tokio_uring",
            ratio(p50("posixrt_await"), p50("tokio_uring")),
            "<= 0.55",
        ),
        (
            "suspend_qd32_vs_io_uring",
            ratio(q32("posixrt_suspend"), q32("io_uring")),
            "",
        ),
        (
            "await_qd32_cpu_vs_io_uring",
            ratio(q32c("posixrt_await"), q32c("io_uring")),
            "",
        ),
        (
            "await_request_qd32_vs_io_uring",
            ratio(q32("posixrt_await_request"), q32("io_uring")),
            "",
        ),
        (
            "await_join_qd32_vs_io_uring",
            ratio(q32("posixrt_await_join"), q32("io_uring")),
            "",
        ),
        (
            "bare_qd32_vs_io_uring",
            ratio(q32("tokio_bare_uring"), q32("io_uring")),
            "",
        ),
        (
            "await_qd32_vs_bare",
            ratio(q32("posixrt_await"), q32("tokio_bare_uring")),
            "",
        ),
        (
            "await_mt_p50_vs_suspend",
            ratio(p50("posixrt_await_mt"), p50("posixrt_suspend")),
            "",
        ),
        (
            "await_mt_p99_vs_suspend",
            ratio(p99("posixrt_await_mt"), p99("posixrt_suspend")),
            "",
        ),
        (
            "await_mt_qd32_vs_bare_mt",
            ratio(q32("posixrt_await_mt"), q32("tokio_bare_uring_mt")),
            "",
        ),
        (
            "await_mt_qd32_cpu_vs_bare_mt",
            ratio(q32c("posixrt_await_mt"), q32c("tokio_bare_uring_mt")),
            "",
        ),
        (
            "bare_join_qd32_vs_io_uring",
            ratio(q32("tokio_bare_uring_join"), q32("io_uring")),
            "",
        ),
        (
            "await_join_qd32_vs_bare_join",
            ratio(q32("posixrt_await_join"), q32("tokio_bare_uring_join")),
            "",
        ),
    ];
    let num = |x: Option<f64>, d: usize| x.map_or("null".to_string(), |x| format!("{x:.d$}"));
    if a.json {
        let mut parts: Vec<String> = rows
            .iter()
            .map(|(n, p50, p99, q, qc)| {
                format!(
                    "\"{n}\": {{\"qd1_p50_ns\": {p50}, \"qd1_p99_ns\": {p99}, \"qd32_ops_per_s\": {}, \"qd32_ops_per_cpu_s\": {}}}",
                    num(*q, 1),
                    num(*qc, 1)
                )
            })
            .collect();
        let rs: Vec<String> = ratios
            .iter()
            .map(|(k, v, _)| format!("\"{k}\": {}", num(*v, 3)))
            .collect();
        parts.push(format!("\"ratios\": {{{}}}", rs.join(", ")));
        parts.push(format!(
            "\"method\": {{\"rounds\": {}, \"qd1_ops\": {}, \"qd32_ops\": {}, \"file_mb\": {}}}",
            a.rounds, a.ops, a.qd32_ops, a.size_mb
        ));
        outln!("{{{}}}", parts.join(", "));
        return;
    }
    outln!(
        "4 KiB random reads of a cached {} MiB file; medians of {} interleaved rounds ({} QD1 ops, {} QD32 ops per engine per round)",
        a.size_mb, a.rounds, a.ops, a.qd32_ops
    );
    outln!();
    outln!(
        "{:>21} {:>10} {:>10} {:>14} {:>16}",
        "engine",
        "QD1 p50",
        "QD1 p99",
        "QD32 ops/s",
        "QD32 ops/CPU-s"
    );
    for (n, p50, p99, q, qc) in &rows {
        let q = q.map_or("-".to_string(), |q| format!("{q:.0}"));
        let qc = qc.map_or("-".to_string(), |q| format!("{q:.0}"));
        outln!("{n:>21} {:>8}ns {:>8}ns {q:>14} {qc:>16}", p50, p99);
    }
    outln!();
    for (k, v, goal) in &ratios {
        let v = v.map_or("n/a".to_string(), |v| format!("{v:.2}"));
        if goal.is_empty() {
            outln!("{k:>30} = {v}");
        } else {
            outln!("{k:>30} = {v} (goal {goal})");
        }
    }
}
