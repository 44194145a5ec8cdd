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
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, UNIX_EPOCH};

use clap::Parser;

const PROG: &str = "tfp";
use posixrt::mark::{self, ProcessMarks, Snapshot, ThreadMark};
use posixrt_tools::{printable_marker, printable_quoted_bytes};
use serde::Serialize;

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
        .filter(|p| !kept(p, &args))
        .map(|p| not_named(p, &args))
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
                    .filter_map(|(w, s)| w.refresh(s, &args))
                    .collect();
                (combine(snaps, &args), notes)
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
                print_text(&mut out, &snap, &args)
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

/// The line that starts each --watch refresh of the text listing, after a screen
/// clear on a terminal.
fn refresh_header(out: &mut impl Write, secs: f64, refresh: u64, tty: bool) -> io::Result<()> {
    if tty {
        write!(out, "\x1b[H\x1b[2J")?;
    }
    writeln!(out, "tfp: every {secs}s, refresh {refresh}")
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

/// Set by SIGINT, SIGTERM or SIGHUP during --watch: leave the loop and exit
/// normally, so tfp's own registry file is removed (a signal's default action
/// would leave it for the next reader to clean up). A signal ignored when tfp
/// starts (SIGHUP under `nohup`, SIGINT in a script's background job) stays
/// ignored, as a shell would leave it.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: `old` and `sa` are zero-initialised plain data; the query
        // fills `old`; `sa` is then filled in, and its handler only stores to an
        // atomic, which is async-signal-safe; a null action pointer queries,
        // and a null old-action pointer is allowed.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
            {
                continue;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Sleeps `d` in short steps; false if a stop signal arrived.
fn sleep_unless_stopped(d: Duration) -> bool {
    let step = Duration::from_millis(20);
    let end = std::time::Instant::now() + d;
    loop {
        if STOP.load(Ordering::Relaxed) {
            return false;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep(step.min(end - now));
    }
}

/// The start time of process `pid` if it is running (not gone, not a zombie).
fn running_since(pid: i32) -> Option<u64> {
    let text = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    posixrt::registry::TaskStat::parse(&String::from_utf8_lossy(&text))
        .filter(|st| !posixrt::registry::process_ended(pid, st))
        .map(|st| st.starttime)
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

/// A -p process still running, and what the last refreshes showed of it.
struct Watched {
    pid: i32,
    start: u64,
    seen: Seen,
}

#[derive(Clone, Copy, PartialEq)]
enum Seen {
    /// Listed by the last refresh (or skipped and counted: unreadable, busy).
    Listed,
    /// Not listed by the last refresh, which said nothing of it: a process
    /// that exits removes its registry a moment before it ends, and is said to
    /// have exited at the next refresh instead.
    Missing,
    /// Not listed, and said so.
    Said,
}

impl Watched {
    /// Takes in `snap`, this process's snapshot; returns what to say once the
    /// process is missing from two refreshes in a row (it cleared its marks,
    /// or ran another program, which has no marked thread or whose path the
    /// NAMEs of `args` do not keep); a process listed again is said again
    /// when it goes missing again.
    fn refresh(&mut self, snap: &Snapshot, args: &Args) -> Option<String> {
        let why = match snap.process(self.pid) {
            Some(p) if kept(p, args) => None,
            Some(p) => Some(not_named(p, args)),
            None if snap.unreadable + snap.incompatible + snap.busy + snap.malformed > 0 => None,
            None => Some(format!(
                "process {} has no marked thread now (its marked threads cleared their marks or exited, or it runs another program); tfp lists it again once a thread of it marks itself",
                self.pid
            )),
        };
        let Some(why) = why else {
            self.seen = Seen::Listed;
            return None;
        };
        match self.seen {
            Seen::Listed => {
                self.seen = Seen::Missing;
                None
            }
            Seen::Missing => {
                self.seen = Seen::Said;
                Some(why)
            }
            Seen::Said => None,
        }
    }
}

/// One listing of `snaps` (each process's own, or every process's), with the
/// processes the name filters of `args` keep.
fn combine(snaps: impl IntoIterator<Item = Snapshot>, args: &Args) -> Snapshot {
    let mut all = Snapshot::default();
    for s in snaps {
        all.processes.extend(s.processes);
        all.unreadable += s.unreadable;
        all.incompatible += s.incompatible;
        all.busy += s.busy;
        all.malformed += s.malformed;
    }
    all.processes.retain(|p| kept(p, args));
    all
}

/// Whether the NAMEs of `args` keep process `p` (no NAME keeps every process).
fn kept(p: &ProcessMarks, args: &Args) -> bool {
    args.names.is_empty()
        || args
            .names
            .iter()
            .any(|n| name_matches(&p.exe_bytes, n.as_bytes()))
}

/// Why -p process `p` is not listed although it has marks: its path does not
/// end with any NAME of `args`.
fn not_named(p: &ProcessMarks, args: &Args) -> String {
    let names: Vec<String> = args
        .names
        .iter()
        .map(|n| format!("\"{}\"", printable_quoted_bytes(n.as_bytes())))
        .collect();
    format!(
        "the path of process {} (\"{}\") does not end with {}; hint: give a NAME its path ends with, or no NAME",
        p.pid,
        printable_quoted_bytes(&p.exe_bytes),
        names.join(" or ")
    )
}

/// The pids, each once and in order: `-p 5 -p 5` is one process.
fn distinct(pids: &[i32]) -> Vec<i32> {
    let mut v = pids.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// The seed's rule: the path ends with the name (or equals it). A binary replaced
/// while it runs reads as `/path/prog (deleted)` in /proc; it still matches `prog`.
/// Both are bytes, as paths are.
fn name_matches(path: &[u8], name: &[u8]) -> bool {
    path.ends_with(name)
        || path
            .strip_suffix(b" (deleted)")
            .is_some_and(|p| p.ends_with(name))
}

fn local_time(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as libc::time_t)
        .unwrap_or(0);
    // SAFETY: `tm` is plain data, fully written by localtime_r on success.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r is thread-safe.
    if unsafe { libc::localtime_r(&secs, &mut tm) }.is_null() {
        return "0000 00 00 00:00:00".to_string();
    }
    format!(
        "{:04} {:02} {:02} {:02}:{:02}:{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec
    )
}

fn cpu_secs(t: &ThreadMark) -> f64 {
    (t.sched.user_time + t.sched.system_time).as_secs_f64()
}

fn print_text(out: &mut impl Write, snap: &Snapshot, args: &Args) -> io::Result<()> {
    if args.verbose {
        writeln!(
            out,
            "# TID  yyyy mm dd hh:mm:ss  POLICY RTPRIO NICE CPU(s)  MARKER"
        )?;
    }
    for p in &snap.processes {
        print_process(out, p, args)?;
    }
    if args.verbose {
        let threads: usize = snap.processes.iter().map(|p| p.threads.len()).sum();
        writeln!(
            out,
            "# {} process(es), {} marked thread(s), {} unreadable, {} incompatible, {} busy, {} malformed",
            snap.processes.len(),
            threads,
            snap.unreadable,
            snap.incompatible,
            snap.busy,
            snap.malformed
        )?;
    }
    Ok(())
}

fn print_process(out: &mut impl Write, p: &ProcessMarks, args: &Args) -> io::Result<()> {
    writeln!(
        out,
        "PID {:>9} \"{}\"",
        p.pid,
        printable_quoted_bytes(&p.exe_bytes)
    )?;
    for t in &p.threads {
        writeln!(
            out,
            "TID {:>9} {} {:<5} {:>3} {:>3} {:>8.2} {}",
            t.tid,
            local_time(t.updated),
            t.sched.policy_short(),
            t.sched.rt_priority,
            t.sched.nice,
            cpu_secs(t),
            printable_marker(&t.marker)
        )?;
        if args.verbose {
            writeln!(
                out,
                "          state {} cpu {} user {:.2}s sys {:.2}s kernel name \"{}\"",
                t.sched.state,
                t.sched.last_cpu,
                t.sched.user_time.as_secs_f64(),
                t.sched.system_time.as_secs_f64(),
                printable_quoted_bytes(&kernel_name_bytes(p.pid, t))
            )?;
        }
        if args.block {
            for line in t.raw.chunks(16) {
                write!(out, "          ")?;
                for b in line {
                    write!(out, "{b:02X} ")?;
                }
                writeln!(out)?;
            }
        }
    }
    Ok(())
}

/// The kernel name (comm) of marked thread `t` of process `pid` as the bytes it
/// is: a name need not be UTF-8 (`prctl(PR_SET_NAME)` takes any bytes, and std
/// cuts a thread's name at 15 bytes, inside a character too), and the library's
/// `kernel_name` shows such bytes as U+FFFD, which shows two names alike. Read
/// again from `/proc/<pid>/task/<tid>/comm` only when the text holds U+FFFD, and
/// kept only if it is the name the listing read (not one the thread took since).
fn kernel_name_bytes(pid: i32, t: &ThreadMark) -> std::borrow::Cow<'_, [u8]> {
    let text = &t.sched.kernel_name;
    if !text.contains('\u{fffd}') {
        return std::borrow::Cow::Borrowed(text.as_bytes());
    }
    match std::fs::read(format!("/proc/{pid}/task/{}/comm", t.tid)) {
        Ok(mut b) => {
            if b.last() == Some(&b'\n') {
                b.pop();
            }
            if String::from_utf8_lossy(&b) == *text {
                return std::borrow::Cow::Owned(b);
            }
            std::borrow::Cow::Borrowed(text.as_bytes())
        }
        Err(_) => std::borrow::Cow::Borrowed(text.as_bytes()),
    }
}

/// `--json`: one document, `{"processes": [{"pid", "exe", "threads": [...]}],
/// "unreadable", "incompatible", "busy", "malformed"}` (serde escapes every
/// string, whatever a marker holds). A JSON string holds no byte that is not
/// UTF-8: `exe` and `kernel_name` show each such byte as U+FFFD, and then
/// `exe_bytes` and `kernel_name_bytes` (absent otherwise) carry the bytes as
/// they are, an array of numbers.
#[derive(Serialize)]
struct JsonSnapshot<'a> {
    processes: Vec<JsonProcess<'a>>,
    unreadable: usize,
    incompatible: usize,
    busy: usize,
    malformed: usize,
}

#[derive(Serialize)]
struct JsonProcess<'a> {
    pid: i32,
    exe: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    exe_bytes: Option<&'a [u8]>,
    threads: Vec<JsonThread<'a>>,
}

#[derive(Serialize)]
struct JsonThread<'a> {
    tid: i32,
    marker: &'a str,
    updated_ns: u64,
    time: String,
    raw: String,
    raw_written: bool,
    policy: &'static str,
    rt_priority: u32,
    nice: i32,
    last_cpu: i32,
    user_s: f64,
    system_s: f64,
    state: String,
    kernel_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_name_bytes: Option<Vec<u8>>,
}

/// `bytes` if they are not UTF-8 (their text shows U+FFFD instead).
fn unless_utf8(bytes: &[u8]) -> Option<&[u8]> {
    std::str::from_utf8(bytes).is_err().then_some(bytes)
}

/// Seconds rounded to milliseconds, as the text listing shows them.
fn secs3(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e3).round() / 1e3
}

fn print_json(out: &mut impl Write, snap: &Snapshot) -> io::Result<()> {
    let doc = JsonSnapshot {
        processes: snap
            .processes
            .iter()
            .map(|p| JsonProcess {
                pid: p.pid,
                exe: &p.exe,
                exe_bytes: unless_utf8(&p.exe_bytes),
                threads: p
                    .threads
                    .iter()
                    .map(|t| JsonThread {
                        tid: t.tid,
                        marker: &t.marker,
                        updated_ns: t
                            .updated
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_nanos() as u64),
                        time: local_time(t.updated),
                        raw: t.raw.iter().map(|b| format!("{b:02x}")).collect(),
                        raw_written: t.raw_written,
                        policy: t.sched.policy_short(),
                        rt_priority: t.sched.rt_priority,
                        nice: t.sched.nice,
                        last_cpu: t.sched.last_cpu,
                        user_s: secs3(t.sched.user_time),
                        system_s: secs3(t.sched.system_time),
                        state: t.sched.state.to_string(),
                        kernel_name: &t.sched.kernel_name,
                        kernel_name_bytes: unless_utf8(&kernel_name_bytes(p.pid, t))
                            .map(<[u8]>::to_vec),
                    })
                    .collect(),
            })
            .collect(),
        unreadable: snap.unreadable,
        incompatible: snap.incompatible,
        busy: snap.busy,
        malformed: snap.malformed,
    };
    serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
    writeln!(out)
}
