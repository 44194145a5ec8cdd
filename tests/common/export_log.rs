//! A trace log to export, scratch directories and `babeltrace2`, for the export
//! tests: `#[path = "common/export_log.rs"] mod export_log;`.
#![allow(dead_code)]

use std::fs::File;
use std::process::Command;

use posixrt::trace::{self, system_events as sys, Event, Trace, TraceAttr, TraceLog};

/// Streams record every event of the process: one test at a time.
pub static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes a log with user events, a registered system event and START/STOP.
pub fn make_log(dir: &std::path::Path) -> (TraceLog, Vec<Event>) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static L: [sys::Field; 3] = [
        sys::Field {
            name: "fd",
            ty: sys::FieldType::I32,
        },
        sys::Field {
            name: "offset",
            ty: sys::FieldType::U64,
        },
        sys::Field {
            name: "result",
            ty: sys::FieldType::I64,
        },
    ];
    let io = sys::register("ctf_test_io", &L).unwrap();
    let p = dir.join("x.trace");
    let mut a = TraceAttr::new();
    a.set_name("export \"test\"").unwrap();
    let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
    let req = trace::eventid_open("fork request").unwrap();
    let note = trace::eventid_open("note").unwrap();
    let mut f = trace::EventSet::empty();
    f.add(trace::EventId::FLUSH_START);
    f.add(trace::EventId::FLUSH_STOP);
    f.add(trace::EventId::FILTER);
    t.set_filter(&f, trace::FilterHow::Set).unwrap();
    t.start().unwrap();
    trace::event(req, &7i32.to_le_bytes());
    trace::event(note, b"say \"hi\" \\ ok");
    let mut p2 = Vec::new();
    p2.extend_from_slice(&5i32.to_le_bytes());
    p2.extend_from_slice(&4096u64.to_le_bytes());
    p2.extend_from_slice(&(-11i64).to_le_bytes());
    sys::emit(io, &p2);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(evs.len(), 5);
    (l, evs)
}

/// A scratch directory, removed with its contents when dropped.
pub struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("posixrt-ctf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// True if `babeltrace2` runs here (else the caller skips its part, saying so).
pub fn have_babeltrace() -> bool {
    let ok = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("SKIP babeltrace2 part: babeltrace2 is not installed (apt-get install babeltrace2; .ci/run installs it)");
    }
    ok
}

/// What `babeltrace2 ARGS DIR` prints, checked to succeed; `None` if it is
/// not installed.
pub fn babeltrace(args: &[&str], dir: &std::path::Path) -> Option<String> {
    if !have_babeltrace() {
        return None;
    }
    let o = Command::new("babeltrace2")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "babeltrace2 failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Records `per` user events from each of `threads` threads into a log at
/// `path` whose stream holds `stream` bytes and flushes when full: 8-byte
/// numbers of the type `names.0`, and text of 3 to 40 bytes every 7th event
/// of the type `names.1`. With a small stream the threads' flushes
/// interleave in time (and some events may be lost: OVERFLOW events).
pub fn record_numbers(
    path: &std::path::Path,
    threads: u64,
    per: u64,
    stream: usize,
    names: (&str, &str),
) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut a = TraceAttr::new();
    a.set_stream_size(stream).unwrap();
    a.set_stream_full_policy(trace::StreamFullPolicy::Flush);
    a.set_log_full_policy(trace::LogFullPolicy::Append);
    let t = Trace::create_with_log(&a, File::create(path).unwrap()).unwrap();
    let num = trace::eventid_open(names.0).unwrap();
    let text = trace::eventid_open(names.1).unwrap();
    t.start().unwrap();
    std::thread::scope(|s| {
        for k in 0..threads {
            s.spawn(move || {
                for i in 0..per {
                    if i % 7 == 0 {
                        let s = format!("k{k} {}", "x".repeat((i % 38) as usize));
                        trace::event(text, s.as_bytes());
                    } else {
                        trace::event(num, &(i * 2 + k).to_le_bytes());
                    }
                }
            });
        }
    });
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// Records `n` user events (see [`record_numbers`]) from two threads into a
/// log at `path`, with a stream large enough to lose none; the log read back
/// and its events (in log order: the two threads' flushes interleave).
pub fn big_log(path: &std::path::Path, n: u64) -> (TraceLog, Vec<Event>) {
    record_numbers(path, 2, n / 2, 16 << 20, ("big number", "big text"));
    let mut l = TraceLog::open(path).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(l.status().map(|s| s.stream_lost + s.log_lost), Some(0));
    (l, evs)
}
