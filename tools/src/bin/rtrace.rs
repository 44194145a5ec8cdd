//! `rtrace`: read posixrt trace logs: dump, statistics, and export to Chrome trace
//! JSON (Perfetto) or CTF 1.8 (babeltrace2, Trace Compass).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use posixrt::trace::export::{chrome_json, payload, write_ctf};
use posixrt::trace::{Event, EventId, TraceLog};

/// Read posixrt trace logs (written by `Trace::create_with_log`).
///
/// A log cut short (a crash, a copy in progress) is read up to its last complete
/// record; rtrace then says where it stopped and exits with status 2.
#[derive(Parser)]
#[command(
    name = "rtrace",
    version,
    about,
    long_about,
    after_help = "Examples:\n  rtrace dump philosophers.trace\n  rtrace stats philosophers.trace\n  rtrace export --format chrome philosophers.trace -o trace.json   # open in ui.perfetto.dev\n  rtrace export --format ctf philosophers.trace -o ctf/ && babeltrace2 ctf/\n\nExit status: 0 ok, 1 error (unreadable or not a log), 2 the log was cut short."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print every event, oldest first: time, pid, tid, name, and the payload
    /// (system events by field, user data as an integer, text or hex).
    Dump {
        /// The log file.
        log: PathBuf,
        /// Print absolute CLOCK_MONOTONIC times instead of times since the first event.
        #[arg(long)]
        absolute: bool,
    },
    /// Counts per event type, time span, events lost and overrun flags.
    Stats {
        /// The log file.
        log: PathBuf,
    },
    /// Convert the log for a viewer.
    Export {
        /// `chrome`: trace-event JSON for Perfetto UI / chrome://tracing (one file);
        /// `ctf`: a CTF 1.8 directory (metadata + stream) for babeltrace2.
        #[arg(long, value_enum)]
        format: Format,
        /// The log file.
        log: PathBuf,
        /// Output: a .json file for chrome, a directory for ctf.
        #[arg(short, long)]
        output: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    /// Chrome trace-event JSON (instant events, process and thread names).
    Chrome,
    /// Common Trace Format 1.8.
    Ctf,
}

struct Loaded {
    log: TraceLog,
    events: Vec<Event>,
    cut: Option<posixrt::Error>,
}

fn load(path: &Path) -> Result<Loaded, String> {
    let mut log = TraceLog::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut events = Vec::new();
    let mut cut = None;
    loop {
        match log.next_event() {
            Ok(Some(e)) => events.push(e),
            Ok(None) => break,
            Err(e) => {
                cut = Some(e);
                break;
            }
        }
    }
    Ok(Loaded { log, events, cut })
}

fn name_of(log: &TraceLog, id: EventId) -> String {
    log.name(id)
        .map(str::to_string)
        .unwrap_or_else(|| format!("event#{}", id.raw()))
}

fn fmt_ts(ns: u128) -> String {
    format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000)
}

/// The errno names a trace point's `result` field shows most often.
fn errno_name(e: i64) -> Option<&'static str> {
    Some(match e as i32 {
        libc::EPERM => "EPERM",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EAGAIN => "EAGAIN",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::EDEADLK => "EDEADLK",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ECANCELED => "ECANCELED",
        libc::EOWNERDEAD => "EOWNERDEAD",
        _ => return None,
    })
}

/// A payload for `dump`: system events by field (a nonzero `result` of a sync or
/// sched event with its errno name, e.g. `result=16(EBUSY)`), then any bytes past
/// the fields (the marker text of `mark_set`) as `text="..."`; user data as
/// [`payload`] prints it.
fn describe(ty: Option<&posixrt::trace::EventType>, e: &Event) -> String {
    let Some(t) = ty.filter(|t| !t.fields.is_empty()) else {
        return payload(ty, e);
    };
    let Some(vals) = posixrt::trace::sys::decode(&t.fields, &e.data) else {
        return payload(ty, e);
    };
    let named = t.name.starts_with("sync_") || t.name.starts_with("sched_");
    let mut out: Vec<String> = vals
        .iter()
        .map(|(n, v)| match (named && *n == "result", v) {
            (true, posixrt::trace::sys::Value::I(c)) if *c != 0 => match errno_name(*c) {
                Some(name) => format!("{n}={c}({name})"),
                None => format!("{n}={c}"),
            },
            _ => format!("{n}={v}"),
        })
        .collect();
    let used: usize = t.fields.iter().map(|f| f.1.size()).sum();
    if let Some(rest) = e.data.get(used..).filter(|r| !r.is_empty()) {
        out.push(format!("text={:?}", String::from_utf8_lossy(rest)));
    }
    out.join(" ")
}

fn dump(path: &Path, absolute: bool) -> Result<Option<posixrt::Error>, String> {
    let l = load(path)?;
    let base = if absolute {
        0
    } else {
        // The oldest event, wherever it is in the log: events of different threads
        // can interleave across flushes, so the first one need not be the oldest.
        l.events
            .iter()
            .map(|e| e.timestamp.as_nanos())
            .min()
            .unwrap_or(0)
    };
    if let Some(a) = l.log.attr() {
        println!(
            "# trace {:?} of pid {}, {} events{}",
            a.name(),
            l.log.pid(),
            l.events.len(),
            if l.log.is_complete() {
                ""
            } else {
                " (log not closed)"
            }
        );
    }
    for e in &l.events {
        let ty = l.log.event_type(e.id);
        let p = describe(ty, e);
        println!(
            "{:>20} pid {:<7} tid {:<7} {}{}{}{}",
            fmt_ts(e.timestamp.as_nanos() - base),
            e.pid,
            e.tid,
            name_of(&l.log, e.id),
            if p.is_empty() { "" } else { " " },
            p,
            if e.truncated { " [truncated]" } else { "" }
        );
    }
    Ok(l.cut)
}

fn stats(path: &Path) -> Result<Option<posixrt::Error>, String> {
    let l = load(path)?;
    let mut counts: BTreeMap<u16, u64> = BTreeMap::new();
    let mut overflow_lost = 0u64;
    let mut truncated = 0u64;
    for e in &l.events {
        *counts.entry(e.id.raw()).or_default() += 1;
        if e.id == EventId::OVERFLOW && e.data.len() >= 8 {
            overflow_lost += u64::from_le_bytes(e.data[..8].try_into().unwrap_or([0; 8]));
        }
        truncated += e.truncated as u64;
    }
    println!("log:        {}", path.display());
    if let Some(a) = l.log.attr() {
        println!(
            "trace:      {:?} (pid {}, stream {:?}, log {:?})",
            a.name(),
            l.log.pid(),
            a.stream_full_policy(),
            a.log_full_policy()
        );
    }
    println!("events:     {}", l.events.len());
    let oldest = l.events.iter().map(|e| e.timestamp).min();
    let newest = l.events.iter().map(|e| e.timestamp).max();
    if let (Some(f), Some(last)) = (oldest, newest) {
        println!(
            "time span:  {} .. {} ({:.6} s)",
            fmt_ts(f.as_nanos()),
            fmt_ts(last.as_nanos()),
            (last - f).as_secs_f64()
        );
    }
    let mut tids: Vec<u32> = l.events.iter().map(|e| e.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    println!("threads:    {}", tids.len());
    match l.log.status() {
        Some(s) => {
            println!(
                "lost:       {} in the stream, {} by the log",
                s.stream_lost, s.log_lost
            );
            println!(
                "overrun:    stream {}, log {}; log full: {}",
                yes(s.stream_overrun),
                yes(s.log_overrun),
                yes(s.log_full)
            );
        }
        None => println!("lost:       unknown (no status record: the log was not shut down)"),
    }
    println!("overflow:   {overflow_lost} events reported lost by OVERFLOW events");
    println!("truncated:  {truncated} events with truncated data");
    println!("per type:");
    let mut rows: Vec<(u16, u64)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    for (id, n) in rows {
        let eid = EventId::from_raw(id).unwrap_or(EventId::START);
        println!("  {n:>10}  {:<5} {}", id, name_of(&l.log, eid));
    }
    Ok(l.cut)
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn run(cli: Cli) -> Result<Option<posixrt::Error>, String> {
    match cli.cmd {
        Cmd::Dump { log, absolute } => dump(&log, absolute),
        Cmd::Stats { log } => stats(&log),
        Cmd::Export {
            format,
            log,
            output,
        } => {
            let l = load(&log)?;
            match format {
                Format::Chrome => std::fs::write(&output, chrome_json(&l.log, &l.events))
                    .map_err(|e| format!("{}: {e}", output.display()))?,
                Format::Ctf => write_ctf(&l.log, &l.events, &output).map_err(|e| e.to_string())?,
            }
            eprintln!(
                "rtrace: wrote {} events to {}",
                l.events.len(),
                output.display()
            );
            Ok(l.cut)
        }
    }
}

fn main() -> ExitCode {
    // A closed pipe (`rtrace dump LOG | head`) ends rtrace quietly, as it does any
    // filter, instead of a panic in println!.
    // SAFETY: restores the default disposition of SIGPIPE; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let cli = Cli::parse();
    match run(cli) {
        Ok(None) => ExitCode::SUCCESS,
        Ok(Some(cut)) => {
            eprintln!("rtrace: stopped early: {cut}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("rtrace: {e}");
            ExitCode::FAILURE
        }
    }
}
