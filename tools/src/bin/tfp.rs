//! `tfp`: list the thread fingerprints (markers) of every process, as the QNX
//! Cookbook's `tfp` does, with scheduling facts from /proc.
//!
//! ```text
//! PID     12345 "/usr/local/bin/app"
//! TID     12345 2026 11 29 19:10:00 OTHER   0   0     0.01 Main thread sleeping
//! TID     12350 2026 11 29 19:10:02 FIFO   50   0     1.27 worker 1: step 17
//! ```
//!
//! Columns after the time: policy, real-time priority, nice, CPU time (user +
//! system, seconds), marker.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

const PROG: &str = "tfp";
use posixrt::mark::{self, Snapshot};

// The parts of tfp, in `src/bin/tfp/` (only this binary uses them).
#[path = "tfp/filter.rs"]
mod filter;
#[path = "tfp/json.rs"]
mod json;
#[path = "tfp/text.rs"]
mod text;
#[path = "tfp/watch.rs"]
mod watch;

use filter::{combine, distinct, kept, not_named};
use json::print_json;
use text::print_text;
use watch::{
    install_stop_handlers, refresh_header, running_since, sleep_unless_stopped, Seen, Watched,
};

/// List marked threads ("thread fingerprints") of every process, or of the
/// processes whose executable path ends with NAME.
///
/// Each process prints a `PID <pid> "<path>"` line, then one line per marked
/// thread: `TID <tid> <yyyy mm dd hh:mm:ss> <policy> <rt prio> <nice> <cpu s>
/// <marker>` (the time is the marker's last update, local time; control, bidi,
/// zero-width and other invisible characters (soft hyphen, variation selectors,
/// tag characters, line separators) in markers and paths are shown escaped,
/// e.g. `\n`, `\u{202e}`, a backslash as `\\`, a double quote in a quoted path or
/// kernel name, or one that starts a marker, as `\"`, and a byte of a path or
/// kernel name that is not UTF-8 as `\xff`; an empty marker is shown as `""`).
/// Processes whose
/// registry cannot be read (another user's, without root; one of a process in
/// another pid namespace sharing /dev/shm; or a file cut short,
/// e.g. truncated by someone, until its owner repairs it at its next mark or thread exit) are
/// skipped and counted on standard error, as are marked threads that cannot be
/// shown: their marker changed during every read (busy), or their registry slot
/// is malformed (a damaged file); a process named
/// with -p whose registry cannot be read, that has no marked thread that can
/// be shown, or whose path does not end with a NAME given, is an error (exit 1).
#[derive(Parser, Debug)]
#[command(
    name = "tfp",
    version,
    after_help = "Examples:\n  tfp                     every marked thread of every process (tfp lists itself too)\n  tfp -b tfp_hello        the processes whose path ends with tfp_hello, with raw blocks\n  tfp -v -p 12345         one process, with each thread's state, CPU times and kernel name\n  tfp --watch 1           refresh every second until Ctrl-C (add -n N to stop after N)\n  tfp --json | python3 -m json.tool\n\nExit status:\n  0  ok, also when no process matches the NAMEs without -p (the listing is then empty), when every -p process has exited during --watch, and when standard output closed by its reader (tfp | head) ends the listing early\n  1  error: -p names no process (or names a thread of one, or one that has exited), or one whose mark registry cannot be read (another user's, one cut short, another posixrt release's) or that has no marked thread that can be shown, or whose path does not end with a NAME given, /dev/shm cannot be read, or the listing cannot be written\n  2  usage error (bad command line)"
)]
struct Args {
    /// Keep processes whose executable path ends with NAME (any of them).
    // A path is bytes: a NAME need not be UTF-8 either.
    #[arg(value_name = "NAME")]
    names: Vec<std::ffi::OsString>,
    /// Keep only this process (may be repeated). It must have a marked thread
    /// whose registry tfp can read, and with NAMEs a path ending with one of
    /// them (checked at start), or tfp exits 1.
    #[arg(short = 'p', long = "pid", value_name = "PID", allow_negative_numbers = true,
          value_parser = posixrt_tools::parse_pid)]
    pids: Vec<i32>,
    /// Add a hex dump of each thread's 64-byte raw block, 16 bytes a line.
    #[arg(short = 'b', long = "block")]
    block: bool,
    /// Verbose: a column header, and per thread its state, last CPU, user and
    /// system time and kernel name.
    #[arg(short = 'v', long = "verbose")]
    verbose: bool,
    /// Machine-readable JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Refresh every SECS seconds (0.01 to 86400), like top: on a terminal the
    /// screen is cleared before each refresh; otherwise each refresh starts with a
    /// `tfp: ...` line, and with --json each refresh is one JSON document per line.
    /// SIGINT, SIGTERM or SIGHUP ends it cleanly, unless tfp started with that
    /// signal ignored (SIGHUP under `nohup`), which it then keeps ignoring.
    /// With -p, a process that exits is said on standard error
    /// (`tfp: process PID has exited`), and the watch ends (exit 0) once every
    /// -p process has exited; one that runs on without a marked thread tfp can
    /// list (its marks cleared, or it ran another program) is said once too
    /// (`tfp: process PID has no marked thread now ...`), at the second refresh
    /// without it, and listed again once a thread of it marks itself.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_secs)]
    watch: Option<f64>,
    /// With --watch: stop after N refreshes, N at least 1 (default: until
    /// interrupted).
    #[arg(short = 'n', long = "iterations", value_name = "N", requires = "watch",
          allow_negative_numbers = true, value_parser = parse_iterations)]
    iterations: Option<u64>,
    /// Do not mark tfp's own main thread ("Main thread TFP", as in the seed).
    #[arg(long)]
    no_self: bool,
}

/// The shortest --watch interval: each refresh reads /proc for every marked
/// thread, so a near-zero interval would be a busy loop.
const MIN_WATCH_SECS: f64 = 0.01;

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && (MIN_WATCH_SECS..=86_400.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from {MIN_WATCH_SECS} to 86400"
        )),
    }
}

fn parse_iterations(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a number of refreshes (1 or more)")),
    }
}

fn main() -> ExitCode {
    // `tfp | head` and `tfp --watch 1 | head`: a write to the closed pipe fails
    // with EPIPE and tfp ends normally, so the atexit handler removes its own
    // registry file (a death by SIGPIPE would leave it in /dev/shm). Every write
    // below handles its error; none panics.
    // SAFETY: sets the disposition of SIGPIPE to ignored; no handler is involved
    // and no other thread exists yet.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let args: Args = posixrt_tools::parse_args(PROG);
    // A pid that names no process is a mistake worth saying, not an empty listing.
    if let Some(why) = args.pids.iter().find_map(|&p| not_a_process(p)) {
        warn(&why);
        return ExitCode::from(1);
    }
    // So is a process whose marks cannot be listed: `-p` asks for that process,
    // and an empty listing would read as "it has no marked thread".
    // Their snapshots are the first listing: read again, a process that exited
    // in between would list as nothing, with exit status 0.
    let (listed, unlisted): (Vec<_>, Vec<_>) = distinct(&args.pids)
        .into_iter()
        .map(listed)
        .partition(Result::is_ok);
    if !unlisted.is_empty() {
        for why in unlisted.into_iter().filter_map(Result::err) {
            warn(&why);
        }
        return ExitCode::from(1);
    }
    // And a -p process that the NAMEs leave out: `-p PID NAME` asks for both.
    let unmatched: Vec<String> = listed
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .flat_map(|s| &s.processes)
        .filter(|p| !kept(p, &args.names))
        .map(|p| not_named(p, &args.names))
        .collect();
    if !unmatched.is_empty() {
        for why in unmatched {
            warn(&why);
        }
        return ExitCode::from(1);
    }
    let mut first: Option<Vec<Snapshot>> =
        (!args.pids.is_empty()).then(|| listed.into_iter().filter_map(Result::ok).collect());
    // The -p processes still running, by pid and start time (a pid reused by a
    // new process is not the one asked for; one gone since it was listed has
    // no start time, and is said to have exited at the next refresh), with
    // what the last refreshes showed of each (all listed at first).
    let mut watched: Vec<Watched> = distinct(&args.pids)
        .into_iter()
        .map(|pid| Watched {
            pid,
            start: running_since(pid).unwrap_or(u64::MAX),
            seen: Seen::Listed,
        })
        .collect();
    // Before the registry file exists, so no stop signal can leave it behind.
    if args.watch.is_some() {
        install_stop_handlers();
    }
    if !args.no_self {
        // The seed's tfp lists itself too; a failure here only loses that line.
        // `update`, not `set`: on the main thread the kernel name is the process
        // name, and `pgrep tfp` / `pkill tfp` must still find a running --watch.
        let _ = mark::update("Main thread TFP");
    }
    let mut out = io::stdout().lock();
    let tty = out.is_terminal();
    let mut iteration = 0u64;
    loop {
        if first.is_none() && !args.pids.is_empty() {
            // A -p process that exited is said once, not shown as an empty
            // listing; with none left, the watch has nothing to show.
            watched.retain(|w| {
                let alive = running_since(w.pid) == Some(w.start);
                if !alive {
                    warn(format_args!("process {} has exited", w.pid));
                }
                alive
            });
            if watched.is_empty() {
                return ExitCode::SUCCESS;
            }
        }
        let pids: Vec<i32> = watched.iter().map(|w| w.pid).collect();
        let (snap, notes) = match first.take().map_or_else(|| take(&args, &pids), Ok) {
            Ok(snaps) => {
                // Said after the listing, on standard error.
                let notes: Vec<String> = watched
                    .iter_mut()
                    .zip(&snaps)
                    .filter_map(|(w, s)| w.refresh(s, &args.names))
                    .collect();
                (combine(snaps, &args.names), notes)
            }
            Err(e) => {
                warn(&e);
                return ExitCode::from(1);
            }
        };
        // With --json every refresh is one JSON line (nothing else on stdout), so
        // `tfp --json --watch 1` is a stream a program can read line by line.
        let r = match (args.watch, args.json) {
            (Some(secs), false) => refresh_header(&mut out, secs, iteration + 1, tty),
            _ => Ok(()),
        };
        let r = r.and_then(|()| {
            if args.json {
                print_json(&mut out, &snap)
            } else {
                print_text(&mut out, &snap, args.verbose, args.block)
            }
        });
        // Every write counts: with --no-self and nothing marked, a --watch
        // refresh is its header line alone.
        match r.and_then(|()| out.flush()) {
            Ok(()) => {}
            // stdout closed (e.g. piped into head): the reader has what it wanted
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
            Err(e) => {
                warn(format_args!(
                    "standard output: {}",
                    posixrt_tools::os_error(&e)
                ));
                return ExitCode::from(1);
            }
        }
        for n in &notes {
            warn(n);
        }
        if snap.unreadable > 0 {
            warn(format_args!(
                "{} process(es) skipped: registry not readable (another user's: run as root or as their user; a process in another pid namespace sharing /dev/shm, e.g. a container's or the host's: run tfp in that namespace; or a file cut short, e.g. truncated by someone: its owner repairs it at its next mark or thread exit)",
                snap.unreadable
            ));
        }
        if snap.incompatible > 0 {
            warn(format_args!(
                "{} process(es) skipped: registry of another layout version (another posixrt release; use its tfp)",
                snap.incompatible
            ));
        }
        if snap.busy > 0 {
            warn(format_args!(
                "{} marked thread(s) skipped: their marker changed during every read (rewritten in a tight loop; try again)",
                snap.busy
            ));
        }
        if snap.malformed > 0 {
            warn(format_args!(
                "{} marked thread(s) could not be shown: their registry slot holds a malformed payload (a damaged registry file)",
                snap.malformed
            ));
        }
        iteration += 1;
        match args.watch {
            Some(secs) if args.iterations.map_or(true, |n| iteration < n) => {
                if !sleep_unless_stopped(Duration::from_secs_f64(secs)) {
                    break;
                }
            }
            _ => break,
        }
    }
    ExitCode::SUCCESS
}

/// One `tfp: ...` line on standard error; a closed standard error (EPIPE, now
/// that SIGPIPE is ignored) loses the line instead of panicking as `eprintln!`.
fn warn(msg: impl std::fmt::Display) {
    let _ = writeln!(io::stderr(), "tfp: {msg}");
}

/// Why `pid` names no process, if it does not: no such task, a thread of
/// another process (`/proc/<tid>` exists for every thread, but its marks are
/// listed under its process, so `-p <tid>` would print nothing), or a process
/// that has exited (a zombie still in /proc).
fn not_a_process(pid: i32) -> Option<String> {
    match std::fs::metadata(format!("/proc/{pid}")) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Some(format!("no process with pid {pid}"))
        }
        _ => {} // or hidden from us (hidepid): the listing says so
    }
    posixrt_tools::process_of_thread(pid)
        .map(|t| {
            format!("no process with pid {pid}: {pid} is a thread of process {t} (use -p {t})")
        })
        .or_else(|| posixrt_tools::exited_note(pid))
}

/// The snapshot of `-p pid` (a process), or why it would list nothing: its mark
/// registry cannot be read (another user's, without root; or cut short, e.g.
/// truncated by someone), has a layout this
/// tfp does not know (another posixrt release), lists no marked thread (all
/// cleared their marks or exited), or is absent (no thread of it was marked).
fn listed(pid: i32) -> Result<Snapshot, String> {
    let snap = match mark::snapshot_pid(pid) {
        Ok(s) => s,
        Err(e) => return Err(e.to_string()),
    };
    if snap.process(pid).is_some() {
        Ok(snap)
    } else if snap.unreadable > 0 {
        Err(format!(
            "the mark registry of process {pid} is not readable by this user; hint: the registry file is mode 0600: run tfp as the process's user or as root; or the file was cut short (truncated by someone): its owner repairs it at its next mark or thread exit"
        ))
    } else if snap.incompatible > 0 {
        Err(format!(
            "the mark registry of process {pid} has a layout this tfp does not know; hint: read it with the tfp of the posixrt release the process uses"
        ))
    } else if snap.busy > 0 {
        Err(format!(
            "process {pid} has {} marked thread(s), none of which could be read: their marker changed during every read; hint: try again (a thread rewriting its marker in a tight loop starves readers)",
            snap.busy
        ))
    } else if snap.malformed > 0 {
        Err(format!(
            "process {pid} has {} marked thread(s), none of which can be shown: their registry slots hold a malformed payload; hint: the registry file is damaged (written by something other than posixrt)",
            snap.malformed
        ))
    } else if has_registry(pid) {
        Err(format!(
            "process {pid} has no marked thread now (its mark registry lists none: its marked threads cleared their marks or exited); hint: list it again once a thread of it marks itself"
        ))
    } else {
        Err(format!(
            "process {pid} has no marked thread (no posixrt mark registry); hint: the process must mark a thread with posixrt::mark, and you need to be root or its user"
        ))
    }
}

/// Whether process `pid` has a mark registry that this user can read (one
/// that lists no marked thread, when the snapshot had none).
fn has_registry(pid: i32) -> bool {
    posixrt::registry::scan("mark", Some(pid))
        .is_ok_and(|s| s.processes.iter().any(|p| p.pid == pid))
}

/// Every process's marks, or those of the -p processes (`pids`, those still
/// running) only, one snapshot each (in the order of `pids`): each of them is
/// read on its own, so that the unreadable, incompatible and busy counts are
/// theirs (with two -p as with one), not those of every registry in /dev/shm.
fn take(args: &Args, pids: &[i32]) -> posixrt::Result<Vec<Snapshot>> {
    if args.pids.is_empty() {
        return Ok(vec![mark::snapshot()?]);
    }
    pids.iter().copied().map(mark::snapshot_pid).collect()
}
