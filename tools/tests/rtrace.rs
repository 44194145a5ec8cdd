//! The `rtrace` command line: dump, stats, both exports, a bad file and a cut log
//! (names, of streams and of event types: `rtrace_names.rs`).

use std::fs::File;
use std::path::Path;
use std::process::Command;

use posixrt::trace::{self, sys, Trace, TraceAttr};

#[path = "../../tests/common/log_bytes.rs"]
mod log_bytes;
use log_bytes::push_record;

mod common;
use common::{dir, rtrace, serial, stderr, stdout};

/// A small log: START, three user events, one system event with fields, STOP.
fn make_log(p: &Path) {
    static L: [sys::Field; 2] = [
        sys::Field {
            name: "fd",
            ty: sys::FieldType::I32,
        },
        sys::Field {
            name: "len",
            ty: sys::FieldType::U64,
        },
    ];
    let io = sys::register("rtrace_test_io", &L).unwrap();
    let mut a = TraceAttr::new();
    a.set_name("rtrace-test").unwrap();
    let t = Trace::create_with_log(&a, File::create(p).unwrap()).unwrap();
    let req = trace::eventid_open("fork request").unwrap();
    t.start().unwrap();
    for i in 1..=3i32 {
        trace::event(req, &i.to_le_bytes());
    }
    let mut pl = 9i32.to_le_bytes().to_vec();
    pl.extend_from_slice(&4096u64.to_le_bytes());
    sys::emit(io, &pl);
    t.stop().unwrap();
    t.shutdown().unwrap();
}

#[test]
fn dump_stats_export_and_errors() {
    let _g = serial();
    let d = dir("main");
    let log = d.join("t.trace");
    make_log(&log);
    let logs = log.to_str().unwrap();

    let o = rtrace(&["dump", logs]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().filter(|l| !l.starts_with('#')).collect();
    let names: Vec<&str> = lines
        .iter()
        .filter(|l| !l.contains("posix_trace_flush"))
        .map(|l| l.split_whitespace().nth(5).unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "posix_trace_start",
            "fork",
            "fork",
            "fork",
            "rtrace_test_io",
            "posix_trace_stop"
        ],
        "{out}"
    );
    assert!(
        out.contains("fork request 1") && out.contains("fork request 3"),
        "{out}"
    );
    assert!(out.contains("rtrace_test_io fd=9 len=4096"), "{out}");
    assert!(out.contains("posix_trace_stop reason=0"), "{out}");

    let o = rtrace(&["stats", logs]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(
        s.contains("fork request") && s.contains("lost:       0 in the stream, 0 by the log"),
        "{s}"
    );
    assert!(
        s.lines()
            .any(|l| l.trim_start().starts_with("3 ") && l.contains("fork request")),
        "{s}"
    );

    let json = d.join("t.json");
    let o = rtrace(&[
        "export",
        "--format",
        "chrome",
        logs,
        "-o",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let j = std::fs::read_to_string(&json).unwrap();
    assert!(j.starts_with('{') && j.contains("\"traceEvents\"") && j.contains("\"ph\":\"i\""));
    assert_eq!(j.matches("\"name\":\"fork request\"").count(), 3);

    let ctf = d.join("ctf");
    let o = rtrace(&[
        "export",
        "--format",
        "ctf",
        logs,
        "-o",
        ctf.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(std::fs::read_to_string(ctf.join("metadata"))
        .unwrap()
        .starts_with("/* CTF 1.8 */"));

    // Not a log: exit 3 (corrupt) with a message that says so.
    let bad = d.join("bad.trace");
    std::fs::write(&bad, b"hello, world, this is not a trace").unwrap();
    let o = rtrace(&["dump", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    assert!(stderr(&o).contains("not a posixrt trace log"));
    // Missing: exit 1, the name said once.
    let missing = d.join("missing.trace");
    let o = rtrace(&["stats", missing.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("ENOENT"));
    assert_eq!(
        stderr(&o).matches("missing.trace").count(),
        1,
        "{}",
        stderr(&o)
    );

    // A cut log: what is complete is printed, then exit 4 with "cut short".
    let full = std::fs::read(&log).unwrap();
    let cut = d.join("cut.trace");
    std::fs::write(&cut, &full[..full.len() - 30]).unwrap();
    let o = rtrace(&["dump", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    assert!(stdout(&o).contains("fork request 3"));
    assert!(stderr(&o).contains("cut short"), "{}", stderr(&o));
    // An empty file is a log cut short too.
    let empty = d.join("empty.trace");
    std::fs::write(&empty, b"").unwrap();
    let o = rtrace(&["dump", empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));

    // A damaged record (one byte flipped in the last event's data): the events
    // before it are printed, then exit 3 (corrupt).
    let mut damaged = full.clone();
    let at = damaged.len() - 60;
    damaged[at] ^= 0x55;
    let dmg = d.join("damaged.trace");
    std::fs::write(&dmg, &damaged).unwrap();
    let o = rtrace(&["dump", dmg.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(stdout(&o).contains("fork request 1"), "{}", stdout(&o));
    assert!(stderr(&o).contains("corrupt"), "{}", stderr(&o));
}

/// Usage errors exit 2 with one line; `-h` is rtrace's own text, with the exit codes.
#[test]
fn usage_errors_and_help() {
    for bad in [&["dump"][..], &["nosuch"], &["dump", "--bogus", "x"], &[]] {
        let o = rtrace(bad);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {o:?}");
        assert_eq!(stderr(&o).lines().count(), 1, "{bad:?}: {}", stderr(&o));
    }
    // No command: the line names them.
    let e = stderr(&rtrace(&[]));
    assert!(
        e.contains("a command is needed: dump, stats, export"),
        "{e}"
    );
    let o = rtrace(&["-h"]);
    assert!(o.status.success());
    let h = stdout(&o);
    assert!(h.starts_with("Read posixrt trace logs"), "{h}");
    assert!(!h.contains("Command-line tools for posixrt"), "{h}");
    for code in ["2  usage error", "3  corrupt", "4  cut short"] {
        assert!(h.contains(code), "{h}");
    }
}

/// `-o -` writes the Chrome JSON to standard output (no file named `-`); a log can
/// come from a pipe, as `-` or as /dev/stdin.
#[test]
fn stdout_output_and_piped_input() {
    use std::io::Write;
    use std::process::Stdio;
    let _g = serial();
    let d = dir("stdio");
    let log = d.join("t.trace");
    make_log(&log);
    let o = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(["export", "--format", "chrome", "t.trace", "-o", "-"])
        .current_dir(&*d)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    assert!(j["traceEvents"].is_array());
    assert!(!d.join("-").exists(), "a file named '-' was created");
    let o = rtrace(&[
        "export",
        "--format",
        "ctf",
        log.to_str().unwrap(),
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");

    let bytes = std::fs::read(&log).unwrap();
    for name in ["-", "/dev/stdin"] {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rtrace"))
            .args(["stats", name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = c.stdin.take().unwrap();
        let b = bytes.clone();
        let w = std::thread::spawn(move || {
            let _ = input.write_all(&b);
        });
        let o = c.wait_with_output().unwrap();
        w.join().unwrap();
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(
            stdout(&o)
                .lines()
                .any(|l| l.trim_start().starts_with("3 ") && l.contains("fork request")),
            "{name}: {}",
            stdout(&o)
        );
    }
}

#[test]
fn closed_stdout_and_directory_give_clean_exits() {
    let _g = serial();
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let d = dir("pipe");
    // A log long enough to fill a pipe: 20000 events.
    let p = d.join("big.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
    let ev = trace::eventid_open("rtrace_test_many").unwrap();
    t.start().unwrap();
    for i in 0..20_000u64 {
        trace::event(ev, &i.to_le_bytes());
        if i % 5000 == 4999 {
            t.flush().unwrap();
        }
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    // `rtrace dump LOG | head -1`: the reader goes away; rtrace ends quietly
    // with status 0 (as tfp and rtstat do), without a panic message.
    let mut c = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(["dump", p.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = c.stdout.take().unwrap();
    let mut first = [0u8; 64];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let mut err = String::new();
    c.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    let st = c.wait().unwrap();
    assert_eq!(st.signal(), None, "{st:?}");
    assert_eq!(st.code(), Some(0), "{st:?}: {err}");
    assert!(err.is_empty(), "{err}");
    // A directory: a message saying so, exit 1.
    let o = rtrace(&["dump", d.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("is a directory"), "{e}");
}

/// A log written through an explicit flush, with its FLUSH_START/FLUSH_STOP marks:
/// `dump` shows offsets from the oldest event (not everything at zero), `stats` the
/// whole span, and the CTF export reads back in babeltrace2.
#[test]
fn flushed_log_dump_stats_and_ctf_are_in_time_order() {
    let _g = serial();
    let d = dir("flushed");
    let p = d.join("f.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
    let ev = trace::eventid_open("rtrace_test_ordered").unwrap();
    t.start().unwrap();
    for i in 0..4i32 {
        trace::event(ev, &i.to_le_bytes());
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    t.flush().unwrap();
    for i in 4..8i32 {
        trace::event(ev, &i.to_le_bytes());
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let ps = p.to_str().unwrap();

    let o = rtrace(&["dump", ps]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    let rows: Vec<(f64, &str)> = out
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut w = l.split_whitespace();
            let ts = w.next().unwrap().parse::<f64>().unwrap();
            (ts, w.nth(4).unwrap())
        })
        .collect();
    assert!(
        rows.iter().any(|r| r.1 == "posix_trace_flush_start"),
        "{out}"
    );
    // The flush marks carry this process's pid, as the Chrome export shows them.
    let me = std::process::id().to_string();
    for l in out.lines().filter(|l| l.contains("posix_trace_flush")) {
        assert_eq!(l.split_whitespace().nth(2), Some(me.as_str()), "{l}");
    }
    assert_eq!(rows[0].0, 0.0, "{out}");
    let user: Vec<f64> = rows
        .iter()
        .filter(|r| r.1 == "rtrace_test_ordered")
        .map(|r| r.0)
        .collect();
    assert_eq!(user.len(), 8, "{out}");
    // Recorded a millisecond apart: every one after the first has its own offset.
    assert!(user[1..].iter().all(|&x| x > 0.0), "{out}");
    assert!(user.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(rows.windows(2).all(|w| w[0].0 <= w[1].0), "{out}");

    let o = rtrace(&["stats", ps]);
    assert!(o.status.success());
    let s = stdout(&o);
    let span_line = s.lines().find(|l| l.starts_with("time span:")).unwrap();
    let secs: f64 = span_line
        .rsplit('(')
        .next()
        .unwrap()
        .trim_end_matches(" s)")
        .parse()
        .unwrap();
    assert!(secs >= 0.007, "{s}");

    let ctf = d.join("ctf");
    let o = rtrace(&["export", "--format", "ctf", ps, "-o", ctf.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    if Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIP babeltrace2 part: babeltrace2 is not installed");
        return;
    }
    let o = Command::new("babeltrace2").arg(&ctf).output().unwrap();
    assert!(
        o.status.success(),
        "babeltrace2 failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let bt = stdout(&o);
    assert_eq!(bt.matches("rtrace_test_ordered:").count(), 8);
    let flush: Vec<&str> = bt
        .lines()
        .filter(|l| l.contains("posix_trace_flush"))
        .collect();
    assert!(!flush.is_empty(), "{bt}");
    for l in flush {
        assert!(l.contains(&format!("pid = {me}")), "{l}");
    }
}

/// `-o` naming the log itself is refused before anything is written (the log is
/// left whole); a chrome output in a missing directory names that directory.
#[test]
fn export_refuses_its_input_and_names_a_missing_directory() {
    let _g = serial();
    let d = dir("same");
    let log = d.join("t.trace");
    make_log(&log);
    let before = std::fs::read(&log).unwrap();
    let l = log.to_str().unwrap();
    let alias = d.join(".").join("t.trace");
    for out in [l, alias.to_str().unwrap()] {
        let o = rtrace(&["export", "--format", "chrome", l, "-o", out]);
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(stderr(&o).contains("is the log itself"), "{}", stderr(&o));
        assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    }
    assert_eq!(std::fs::read(&log).unwrap(), before, "the log was changed");
    let missing = d.join("no/such/x.json");
    let o = rtrace(&[
        "export",
        "--format",
        "chrome",
        l,
        "-o",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let want = format!(
        "the directory {} does not exist",
        d.join("no/such").display()
    );
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
}

/// The log `log` with the record bodies `extra` framed in before its status
/// record.
fn with_records(log: &[u8], extra: &[Vec<u8>]) -> Vec<u8> {
    let mut out = log[..16].to_vec();
    let mut at = 16;
    while at < log.len() {
        let len = u32::from_le_bytes(log[at..at + 4].try_into().unwrap()) as usize;
        if log[at + 8] == 4 {
            for b in extra {
                push_record(&mut out, b);
            }
        }
        out.extend_from_slice(&log[at..at + 8 + len]);
        at += 8 + len;
    }
    out
}

/// A compact event record (kind 6) of OVERFLOW reporting `lost` events of the
/// sub-buffer of `tid`, recorded by `by`.
fn overflow(by: u32, lost: u64, tid: u32) -> Vec<u8> {
    let mut b = vec![6u8];
    b.extend_from_slice(&3u16.to_le_bytes());
    b.push(2); // without pid
    b.extend_from_slice(&by.to_le_bytes());
    b.extend_from_slice(&1_000u64.to_le_bytes());
    b.extend_from_slice(&lost.to_le_bytes());
    b.extend_from_slice(&tid.to_le_bytes());
    b
}

/// An OVERFLOW with tid 0 (events lost by no one thread's sub-buffer, as a
/// signal handler's nested event) is not a thread: `stats` counts the threads
/// that recorded events.
#[test]
fn stats_does_not_count_tid_0_as_a_thread() {
    let _g = serial();
    let d = dir("tid0");
    let log = d.join("t.trace");
    make_log(&log);
    let crafted = d.join("o.trace");
    let bytes = with_records(&std::fs::read(&log).unwrap(), &[overflow(0, 2, 0)]);
    std::fs::write(&crafted, bytes).unwrap();
    let o = rtrace(&["stats", crafted.to_str().unwrap()]);
    let s = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.contains("overflow:   2 events"), "{s}");
    assert!(s.contains("threads:    1\n"), "{s}");
}

/// A full event record (kind 3) of `id` with `pid`, `tid` and 4 bytes of data.
fn event_of(id: u16, pid: u32, tid: u32) -> Vec<u8> {
    let mut b = vec![3u8];
    b.extend_from_slice(&id.to_le_bytes());
    b.push(0); // not truncated
    b.extend_from_slice(&pid.to_le_bytes());
    b.extend_from_slice(&tid.to_le_bytes());
    b.extend_from_slice(&1_000u64.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes()); // program address
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&7u32.to_le_bytes());
    b
}

/// A thread is its process and its tid: the same tid in another process (a
/// forked child's, or a tid used again) is another thread, while an event
/// without a pid (a type not associated with a process) belongs to the
/// thread of its tid in the process the tid's other events give.
#[test]
fn stats_counts_threads_by_pid_and_tid() {
    let _g = serial();
    let d = dir("pidtid");
    let log = d.join("t.trace");
    make_log(&log);
    let tids: Vec<u32> = posixrt::trace::TraceLog::open(&log)
        .unwrap()
        .events()
        .map(|e| e.unwrap().tid)
        .collect();
    let tid = tids[0];
    assert!(tids.iter().all(|&t| t == tid), "{tids:?}");
    let other_pid = std::process::id() + 1;
    let start = trace::EventId::START.raw();
    let crafted = d.join("o.trace");
    let extra = [event_of(start, other_pid, tid), overflow(tid, 1, tid)];
    std::fs::write(
        &crafted,
        with_records(&std::fs::read(&log).unwrap(), &extra),
    )
    .unwrap();
    let o = rtrace(&["stats", crafted.to_str().unwrap()]);
    let s = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(s.contains("overflow:   1 events"), "{s}");
    assert!(s.contains("threads:    2\n"), "{s}");
}

/// Lost counts that add up past `u64::MAX` (a damaged or crafted log) saturate
/// instead of wrapping to a small count (or panicking).
#[test]
fn stats_overflow_total_saturates() {
    let _g = serial();
    let d = dir("lostsum");
    let log = d.join("t.trace");
    make_log(&log);
    let crafted = d.join("o.trace");
    let extra = [overflow(7, u64::MAX, 7), overflow(7, 3, 7)];
    let bytes = with_records(&std::fs::read(&log).unwrap(), &extra);
    std::fs::write(&crafted, bytes).unwrap();
    let o = rtrace(&["stats", crafted.to_str().unwrap()]);
    let s = stdout(&o);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        s.contains(&format!("overflow:   {} events", u64::MAX)),
        "{s}"
    );
}

/// Standard output that cannot be written (a full disk: /dev/full) is an error,
/// exit 1 with one line naming it, as the help's exit statuses say, not a
/// "failed printing to stdout" panic.
#[test]
fn an_unwritable_stdout_is_an_error_not_a_panic() {
    let _g = serial();
    let d = dir("full");
    let log = d.join("t.trace");
    make_log(&log);
    let logs = log.to_str().unwrap();
    for args in [
        &["dump", logs][..],
        &["stats", logs],
        &["export", "--format", "chrome", logs, "-o", "-"],
    ] {
        let Some(o) = common::run_into_dev_full(env!("CARGO_BIN_EXE_rtrace"), args) else {
            return; // no /dev/full on this system: nothing to write to
        };
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {e}");
        assert!(!e.contains("panicked"), "{args:?}: {e}");
        assert_eq!(e.lines().count(), 1, "{args:?}: {e}");
        assert!(
            e.starts_with("rtrace: standard output: ") && e.contains("No space left"),
            "{args:?}: {e}"
        );
    }
}

/// babeltrace2 reads every file of a CTF directory as a stream: a CTF export
/// into a directory that holds other files (the log itself, with `-o .`) would
/// make a trace that does not open. It is refused (exit 1, naming a stray
/// file, nothing written); a directory of an earlier export is written over.
#[test]
fn ctf_export_refuses_a_directory_with_other_files() {
    let _g = serial();
    let d = dir("ctfmix");
    let log = d.join("t.trace");
    make_log(&log);
    let (l, dd) = (log.to_str().unwrap(), d.to_str().unwrap());
    let o = rtrace(&["export", "--format", "ctf", l, "-o", dd]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(stderr(&o).contains("t.trace"), "{}", stderr(&o));
    assert!(!d.join("metadata").exists() && !d.join("stream_0").exists());
    let out = d.join("ctf");
    for _ in 0..2 {
        let o = rtrace(&["export", "--format", "ctf", l, "-o", out.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["metadata", "stream_0"]);
}

/// The bytes past a system event's fields print as `text="..."`, one way for
/// each byte string: spaces, `=` and quotes stay inside the quotes (escaped
/// where a Rust string literal escapes them), a byte that is not UTF-8 is
/// `\xHH`, unlike the characters `\xff` or U+FFFD; a field named `text` keeps
/// its key and the text's gets `_`. `dump --help` states the rule.
#[test]
fn dump_text_is_unambiguous() {
    static L: [sys::Field; 1] = [sys::Field {
        name: "text",
        ty: sys::FieldType::U32,
    }];
    let tails: [&[u8]; 3] = [
        b"a\" b=1 \\ [truncated]\0\n\xff",
        "a\\\" b=1 \\\\ [truncated]\\0\\n\\xff".as_bytes(),
        "a\" b=1 \\ [truncated]\0\n\u{fffd}".as_bytes(),
    ];
    let d = dir("text");
    let log = d.join("t.trace");
    {
        let _g = serial();
        let ev = sys::register("rtrace_test_text", &L).unwrap();
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&log).unwrap()).unwrap();
        t.start().unwrap();
        for (i, tail) in tails.iter().enumerate() {
            sys::emit(ev, &[&(i as u32).to_le_bytes()[..], tail].concat());
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
    }
    let o = rtrace(&["dump", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let shown: Vec<&str> = out
        .lines()
        .filter_map(|l| Some(&l[l.find("rtrace_test_text ")? + 17..]))
        .collect();
    assert_eq!(
        shown,
        [
            r#"text=0 text_="a\" b=1 \\ [truncated]\0\n\xff""#,
            r#"text=1 text_="a\\\" b=1 \\\\ [truncated]\\0\\n\\xff""#,
            "text=2 text_=\"a\\\" b=1 \\\\ [truncated]\\0\\n\u{fffd}\"",
        ],
        "{out}"
    );
    let o = rtrace(&["dump", "--help"]);
    assert!(o.status.success());
    let h = stdout(&o);
    assert!(h.contains("text=\"...\"") && h.contains("`\\xHH`"), "{h}");
}

/// `dump` names the errno in a sync or sched trace point's nonzero `result`
/// with the library's table (as its error messages do): ENOENT and EOWNERDEAD
/// by name, a number without one bare. (rtrace had a table of its own, of
/// eleven names: `result=2` showed no name.)
#[test]
fn dump_names_result_errnos_as_the_library_does() {
    let _g = serial();
    static F: [sys::Field; 1] = [sys::Field {
        name: "result",
        ty: sys::FieldType::I32,
    }];
    let ty = sys::register("sync_rtrace_errno_test", &F).unwrap();
    let d = dir("errno_names");
    let log = d.join("t.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&log).unwrap()).unwrap();
    t.start().unwrap();
    for r in [libc::EBUSY, libc::ENOENT, libc::EOWNERDEAD, 99_999, 0] {
        sys::emit(ty, &r.to_le_bytes());
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let o = rtrace(&["dump", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = stdout(&o);
    let results: Vec<&str> = out
        .lines()
        .filter(|l| l.contains("sync_rtrace_errno_test"))
        .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("result=")))
        .collect();
    assert_eq!(
        results,
        [
            "result=16(EBUSY)",
            "result=2(ENOENT)",
            "result=130(EOWNERDEAD)",
            "result=99999",
            "result=0"
        ],
        "{out}"
    );
}
