//! `rtrace dump` and `rtrace stats` read a log in a bounded amount of memory:
//! before, they held every event in memory first (about 110 bytes an event,
//! nine times an APPEND log's 12-13 bytes), so a log of a few GB needed tens
//! of GB of memory to be counted or printed.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

use posixrt::trace::{self, LogFullPolicy, StreamFullPolicy, Trace, TraceAttr};

/// The address space rtrace may use: a few times what it needs for a small log
/// (under 16 MB), under half of what the events of the log below take in memory.
const LIMIT: u64 = 32 << 20;

/// Runs `rtrace ARGS` with its address space limited to [`LIMIT`].
fn rtrace_limited(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rtrace"));
    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe, and the closure touches nothing
    // else between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT,
                rlim_max: LIMIT,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    };
    cmd.output().expect("run rtrace")
}

#[test]
fn dump_and_stats_of_a_large_log_fit_in_bounded_memory() {
    let dir = std::env::temp_dir().join(format!("posixrt-tools-review-mem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("large.trace");
    let mut a = TraceAttr::new();
    a.set_stream_full_policy(StreamFullPolicy::Flush);
    a.set_log_full_policy(LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, File::create(&log).unwrap()).unwrap();
    let id = trace::eventid_open("large").unwrap();
    t.start().unwrap();
    for i in 0..800_000u64 {
        trace::event(id, &i.to_le_bytes());
        if i % 10_000 == 0 {
            // Let the flusher keep up (losses only make the log smaller).
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let events = trace::TraceLog::open(&log).unwrap().events().count();
    // The events of the log take more memory than rtrace may use.
    assert!(
        events * 110 > 3 * LIMIT as usize / 2,
        "only {events} events"
    );
    let path = log.to_str().unwrap();
    for cmd in ["stats", "dump"] {
        let o = rtrace_limited(&[cmd, path]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "rtrace {cmd} of {events} events within {LIMIT} bytes: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
