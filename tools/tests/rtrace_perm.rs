//! `rtrace`'s messages about files: run by a user who may not read the log or
//! write the output, the message says what to do, as tfp's and rtstat's do; a
//! path it names is shown escaped, on one line.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use posixrt::trace::{self, Trace, TraceAttr};

mod common;

/// A world-traversable scratch directory, removed with its contents on drop.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("rtrace-perm-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    Scratch(d)
}

fn make_log(p: &Path) {
    let mut a = TraceAttr::new();
    a.set_name("rtrace-perm").unwrap();
    let t = Trace::create_with_log(&a, File::create(p).unwrap()).unwrap();
    let id = trace::eventid_open("perm event").unwrap();
    t.start().unwrap();
    trace::event(id, &1u32.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// Runs `rtrace ARGS` as a user without access to `denied`: as root, uid and
/// gid 65534 (`denied` is root's, mode 0600 or 0700); otherwise as this user,
/// with `denied` made mode 0.
fn rtrace_denied(denied: &Path, args: &[&str]) -> std::process::Output {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let mode = match (root, denied.is_dir()) {
        (false, _) => 0o000,
        (true, true) => 0o700,
        (true, false) => 0o600,
    };
    std::fs::set_permissions(denied, std::fs::Permissions::from_mode(mode)).unwrap();
    let exe = common::WorldExecutable::of(env!("CARGO_BIN_EXE_rtrace"));
    let mut cmd = Command::new(&exe.bin);
    cmd.args(args);
    if root {
        common::as_nobody(&mut cmd);
    }
    let out = common::output_when_free(&mut cmd);
    std::fs::set_permissions(denied, std::fs::Permissions::from_mode(0o755)).unwrap();
    out
}

#[test]
fn an_unreadable_log_says_how_to_read_it() {
    let d = scratch("log");
    let log = d.0.join("app.trace");
    make_log(&log);
    let l = log.to_str().unwrap();
    for args in [vec!["dump", l], vec!["stats", l]] {
        let out = rtrace_denied(&log, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Permission denied"), "{args:?}: {err}");
        assert!(err.contains("hint:"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn an_unwritable_output_directory_says_so() {
    let d = scratch("out");
    let log = d.0.join("app.trace");
    make_log(&log);
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out_dir = d.0.join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let json = out_dir.join("t.json");
    let args = [
        "export",
        "--format",
        "chrome",
        log.to_str().unwrap(),
        "-o",
        json.to_str().unwrap(),
    ];
    let out = rtrace_denied(&out_dir, &args);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Permission denied"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    assert!(!json.exists());
}

/// A control character in a path rtrace names (a log that cannot be opened, an
/// export's output) is shown escaped, so each message stays one line.
#[test]
fn a_path_with_a_newline_is_named_on_one_line() {
    let d = scratch("newline");
    let missing = d.0.join("no\nsuch.trace");
    let out = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(["dump", missing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no\\nsuch.trace"), "{err}");

    let log = d.0.join("app.trace");
    make_log(&log);
    let json = d.0.join("out\n.json");
    let out = Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(["export", "--format", "chrome", log.to_str().unwrap()])
        .args(["-o", json.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("out\\n.json"), "{err}");
    assert!(json.exists());
}
