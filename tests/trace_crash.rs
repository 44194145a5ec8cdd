//! A stream with a log keeps its trace when the process ends without shutting it
//! down: on SIGINT, SIGTERM, SIGSEGV and SIGABRT (the signal handler has the
//! flusher write everything, then the signal takes its previous course) and on
//! `exit`. Each case runs a child (this test binary again, one `child` test) that
//! records events with a flush interval of one hour, so only the end-of-process
//! path can have written them, and reads the child's log afterwards.
//!
//! The log writer uses plain `write(2)` from its flusher thread, not AIO, so the
//! AIO engine does not matter here.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use posixrt::trace::{self, EventId, StreamFullPolicy, Trace, TraceAttr, TraceLog};
use posixrt::ErrorKind;

#[path = "common/signals.rs"]
mod signals;

/// Events each of the child's two threads records.
const PER_THREAD: u32 = 5000;

static HANDLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_term(_sig: i32) {
    HANDLED.store(true, std::sync::atomic::Ordering::SeqCst);
}

fn child_main(mode: &str, log: &Path) -> ! {
    if mode == "handler" {
        // The program's own SIGTERM handler, installed before the trace's.
        // SAFETY: installs a handler that only stores to an atomic.
        unsafe { libc::signal(libc::SIGTERM, on_term as *const () as libc::sighandler_t) };
    }
    let mut a = TraceAttr::new();
    a.set_name("crash").unwrap();
    a.set_stream_size(4 << 20).unwrap();
    a.set_stream_full_policy(StreamFullPolicy::Flush);
    a.set_flush_interval(Duration::from_secs(3600)).unwrap();
    let t = Trace::create_with_log(&a, std::fs::File::create(log).unwrap()).unwrap();
    let id = trace::eventid_open("crash.work").unwrap();
    t.start().unwrap();
    let hs: Vec<_> = (0..2u32)
        .map(|k| {
            std::thread::spawn(move || {
                for i in 0..PER_THREAD {
                    trace::event(id, &(k * PER_THREAD + i).to_le_bytes());
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    // The stream stays running and is never shut down.
    std::mem::forget(t);
    match mode {
        "segv" => {
            // A real fault: a write through a null pointer.
            let p: *mut u32 = std::hint::black_box(std::ptr::null_mut());
            // SAFETY: not safe at all: this crashes the child on purpose.
            unsafe { p.write_volatile(1) };
            unreachable!("the write faults");
        }
        "abort" => std::process::abort(),
        "exit" => std::process::exit(7),
        "handler" => {
            println!("ready");
            while !HANDLED.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            // Without atexit handlers: only the signal hook can have written.
            // SAFETY: ends the process at once, as a crash would.
            unsafe { libc::_exit(3) }
        }
        _ => {
            println!("ready");
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// The child side: runs only when the parent sets `POSIXRT_CRASH_MODE`.
#[test]
fn child() {
    if let (Ok(mode), Ok(log)) = (
        std::env::var("POSIXRT_CRASH_MODE"),
        std::env::var("POSIXRT_CRASH_LOG"),
    ) {
        child_main(&mode, Path::new(&log));
    }
}

/// A log file path in the temp dir, removed when dropped (also when the test
/// fails, or its child had to be killed).
struct TempLog(PathBuf);

impl std::ops::Deref for TempLog {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempLog {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempLog {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn log_path(name: &str) -> TempLog {
    TempLog(std::env::temp_dir().join(format!("posixrt-crash-{}-{name}.trace", std::process::id())))
}

/// How long a child may take to end; then it is killed and the test fails.
const CHILD_LIMIT: Duration = Duration::from_secs(60);

/// Runs the child in `mode`, sends `signal` once it is ready (if any), and returns
/// how it ended.
fn run_child(mode: &str, log: &Path, signal: Option<i32>) -> std::process::ExitStatus {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env("POSIXRT_CRASH_MODE", mode)
        .env("POSIXRT_CRASH_LOG", log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // The signals this test sends end the child, also when this test runs
    // where they are ignored (a background job ignores SIGINT).
    signals::default_action(&mut cmd, &[libc::SIGINT, libc::SIGTERM]);
    let mut c = cmd.spawn().unwrap();
    if let Some(sig) = signal {
        let out = c.stdout.take().unwrap();
        let ready = BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("ready"));
        assert!(ready, "the child did not get ready");
        // SAFETY: sends a signal to our own child process, which is still alive
        // (not yet waited for).
        assert_eq!(unsafe { libc::kill(c.id() as i32, sig) }, 0);
    }
    let t0 = std::time::Instant::now();
    loop {
        if let Some(st) = c.try_wait().unwrap() {
            return st;
        }
        if t0.elapsed() > CHILD_LIMIT {
            let _ = c.kill();
            let st = c.wait().unwrap();
            panic!("the child ({mode}, signal {signal:?}) did not end in {CHILD_LIMIT:?}: killed, {st:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Reads the child's log: every event recorded, in order per thread, then a clean
/// cut (no shutdown record).
fn check_log(log: &Path) {
    let mut l = TraceLog::open(log).unwrap();
    assert_eq!(
        l.attr().map(|a| a.name().to_string()).as_deref(),
        Some("crash")
    );
    let mut seen = vec![Vec::new(); 2];
    let mut start = 0;
    let end = loop {
        match l.next_event() {
            Ok(Some(e)) if e.id == EventId::START => start += 1,
            Ok(Some(e)) if !e.id.is_system() => {
                let v = u32::from_le_bytes(e.data[..4].try_into().unwrap());
                seen[(v / PER_THREAD) as usize].push(v % PER_THREAD);
            }
            Ok(Some(_)) => {}
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    assert_eq!(start, 1);
    for s in &seen {
        assert_eq!(s.len(), PER_THREAD as usize, "every event reached the log");
        assert!(
            s.windows(2).all(|w| w[0] + 1 == w[1]),
            "in order, none lost"
        );
    }
    let end = end.expect("a log not shut down ends with a cut");
    assert_eq!(end.kind(), ErrorKind::Truncated, "{end}");
    assert!(end.to_string().contains("cut cleanly"), "{end}");
    assert!(l.status().is_none(), "no status record: never shut down");
}

fn killed_by(sig: i32, mode: &str) {
    let log = log_path(&format!("{mode}-{sig}"));
    let st = run_child(mode, &log, (mode == "kill").then_some(sig));
    assert_eq!(st.signal(), Some(sig), "{st:?}");
    check_log(&log);
}

#[test]
fn sigint_keeps_the_trace() {
    killed_by(libc::SIGINT, "kill");
}

#[test]
fn sigterm_keeps_the_trace() {
    killed_by(libc::SIGTERM, "kill");
}

#[test]
fn sigsegv_fault_keeps_the_trace() {
    killed_by(libc::SIGSEGV, "segv");
}

#[test]
fn sigabrt_keeps_the_trace() {
    killed_by(libc::SIGABRT, "abort");
}

/// A program that handles SIGTERM itself keeps doing so, and the trace is written
/// before its handler runs.
#[test]
fn an_earlier_handler_still_runs_and_the_trace_is_kept() {
    let log = log_path("handler");
    let st = run_child("handler", &log, Some(libc::SIGTERM));
    assert_eq!(st.code(), Some(3), "the program's handler ran: {st:?}");
    check_log(&log);
}

#[test]
fn exit_without_shutdown_keeps_the_trace() {
    let log = log_path("exit");
    let st = run_child("exit", &log, None);
    assert_eq!(st.code(), Some(7), "{st:?}");
    check_log(&log);
}

#[test]
fn flush_interval_is_checked() {
    let mut a = TraceAttr::new();
    assert_eq!(a.flush_interval(), trace::DEFAULT_FLUSH_INTERVAL);
    assert_eq!(a.flush_interval(), Duration::from_millis(100));
    let e = a.set_flush_interval(Duration::ZERO).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(a.set_flush_interval(Duration::MAX).is_err());
    a.set_flush_interval(Duration::from_millis(5)).unwrap();
    assert_eq!(a.flush_interval(), Duration::from_millis(5));
}

/// Without the end-of-process hooks the periodic write still runs: a stream with a
/// short interval has its events in the log while it is running.
#[test]
fn periodic_write_reaches_the_log_while_running() {
    let log = log_path("periodic");
    let mut a = TraceAttr::new();
    a.set_stream_full_policy(StreamFullPolicy::Flush);
    a.set_flush_interval(Duration::from_millis(10)).unwrap();
    let t = Trace::create_with_log(&a, std::fs::File::create(&log).unwrap()).unwrap();
    let id = trace::eventid_open("crash.periodic").unwrap();
    t.start().unwrap();
    for i in 0..100u32 {
        trace::event(id, &i.to_le_bytes());
    }
    // Poll the file (no shutdown, no explicit flush) for up to 10 s.
    let mut n = 0;
    for _ in 0..1000 {
        // Before the first write the file is empty (a cut header).
        let Ok(mut l) = TraceLog::open(&log) else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        n = std::iter::from_fn(|| l.next_event().ok().flatten())
            .filter(|e| e.id == id)
            .count();
        if n == 100 {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(n, 100);
    t.shutdown().unwrap();
}
