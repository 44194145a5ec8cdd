//! Review of the three tools as a user sees them: exit statuses that stay the
//! documented ones when standard error cannot be written.

use std::fs::File;
use std::process::{Command, Output, Stdio};

use posixrt::trace::{self, Trace, TraceAttr};

mod common;

/// Runs `exe ARGS` with its standard error on `/dev/full` (a full disk);
/// `None` on a system without `/dev/full`.
fn with_stderr_full(exe: &str, args: &[&str]) -> Option<Output> {
    let full = common::dev_full()?;
    Some(
        Command::new(exe)
            .args(args)
            .stdout(Stdio::null())
            .stderr(full)
            .output()
            .expect("run the tool"),
    )
}

fn tmp_dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "posixrt-tools-review-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A pid no process can have (above any pid_max).
const NO_PID: &str = "2147483647";

/// An unwritable standard error loses the message, but the exit status stays
/// the documented one (1 error, 2 usage, 0 ok): before, rtstat and rtrace
/// panicked in `eprintln!` and exited 101.
#[test]
fn an_unwritable_stderr_keeps_the_documented_exit_status() {
    let rtstat = env!("CARGO_BIN_EXE_rtstat");
    let rtrace = env!("CARGO_BIN_EXE_rtrace");
    let tfp = env!("CARGO_BIN_EXE_tfp");
    let Some(o) = with_stderr_full(rtstat, &[NO_PID]) else {
        return; // no /dev/full on this system
    };
    assert_eq!(o.status.code(), Some(1), "rtstat {NO_PID}: {o:?}");
    let o = with_stderr_full(rtstat, &["--bogus"]).unwrap();
    assert_eq!(o.status.code(), Some(2), "rtstat --bogus: {o:?}");
    let o = with_stderr_full(tfp, &["-p", NO_PID]).unwrap();
    assert_eq!(o.status.code(), Some(1), "tfp -p {NO_PID}: {o:?}");

    let d = tmp_dir("stderr");
    let missing = d.join("missing.trace");
    let o = with_stderr_full(rtrace, &["dump", missing.to_str().unwrap()]).unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "rtrace dump of a missing log: {o:?}"
    );
    // A usage error rtrace finds after parsing.
    let o = with_stderr_full(
        rtrace,
        &[
            "export",
            "--format",
            "ctf",
            missing.to_str().unwrap(),
            "-o",
            "-",
        ],
    )
    .unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "rtrace export --format ctf -o -: {o:?}"
    );

    // A successful export: its "wrote N events" note is lost, the export is not.
    let log = d.join("ok.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&log).unwrap()).unwrap();
    let id = trace::eventid_open("review event").unwrap();
    t.start().unwrap();
    trace::event(id, b"x");
    t.stop().unwrap();
    t.shutdown().unwrap();
    let json = d.join("out.json");
    let o = with_stderr_full(
        rtrace,
        &[
            "export",
            "--format",
            "chrome",
            log.to_str().unwrap(),
            "-o",
            json.to_str().unwrap(),
        ],
    )
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "rtrace export: {o:?}");
    assert!(std::fs::read_to_string(&json)
        .unwrap()
        .contains("review event"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A copy of tfp under a file name that is not UTF-8 (`t\xff\xfep`).
fn non_utf8_tfp(d: &std::path::Path) -> std::path::PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let bin = d.join(std::ffi::OsStr::from_bytes(b"t\xff\xfep"));
    std::fs::copy(env!("CARGO_BIN_EXE_tfp"), &bin).unwrap();
    bin
}

/// A path is bytes: tfp showed each byte that is not UTF-8 as U+FFFD (so
/// `t\xff\xfep` and `t\xfe\xffp` looked the same, and the name shown was
/// no file's), and refused such a NAME as a usage error ("invalid UTF-8"), so
/// that such a process could not be selected by name.
#[test]
fn tfp_shows_and_selects_a_path_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let d = tmp_dir("non-utf8");
    let bin = non_utf8_tfp(&d);
    // Its own listing (tfp marks its main thread), under the name that is no
    // UTF-8, given as NAME.
    let o = common::output_when_free(
        Command::new(&bin).arg(std::ffi::OsStr::from_bytes(b"t\xff\xfep")),
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let text = String::from_utf8(o.stdout).unwrap();
    let shown = format!("\"{}/t\\xff\\xfep\"", d.display());
    assert!(
        text.lines()
            .any(|l| l.starts_with("PID") && l.ends_with(&shown)),
        "no PID line ending with {shown} in:\n{text}"
    );
    assert!(!text.contains('\u{fffd}'), "{text}");
    // A NAME with other bytes does not match it.
    let o = common::output_when_free(
        Command::new(&bin).arg(std::ffi::OsStr::from_bytes(b"t\xfe\xffp")),
    );
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(o.stdout.is_empty(), "{o:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Input that is no trace log, from a pipe that does not end (`yes |
/// rtrace stats -`, or `rtrace dump /dev/urandom`): rtrace copied the whole
/// stream into memory before it looked at the first bytes, so it never
/// answered, and a device such as /dev/zero filled the memory. It now says
/// "not a posixrt trace log" (exit 3) once the first bytes differ from a
/// log's.
#[test]
fn rtrace_refuses_an_endless_stream_that_is_no_log() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    for cmd in ["dump", "stats"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rtrace"))
            .args([cmd, "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Garbage, and the pipe kept open: as from `yes`, the stream has no end.
        let mut input = child.stdin.take().unwrap();
        let _ = input.write_all(&[b'y'; 4096]);
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if t0.elapsed() > Duration::from_secs(20) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(input);
        let Some(status) = status else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("rtrace {cmd} - still reading an endless stream that is no log after 20 s");
        };
        let o = child.wait_with_output().unwrap();
        assert_eq!(status.code(), Some(3), "rtrace {cmd} -: {o:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("not a posixrt trace log"), "{err}");
    }
}

/// `rtrace export --format chrome LOG -o DIR`: a directory is no file to write
/// the JSON to. The message said only "DIR: Is a directory (os error 21)":
/// now it says what to pass instead.
#[test]
fn rtrace_chrome_export_to_a_directory_says_what_to_pass() {
    let d = tmp_dir("export-dir");
    let log = d.join("ok.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&log).unwrap()).unwrap();
    t.start().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    let out = d.join("out");
    std::fs::create_dir(&out).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(["export", "--format", "chrome", log.to_str().unwrap(), "-o"])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("hint:") && err.contains("trace.json"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
