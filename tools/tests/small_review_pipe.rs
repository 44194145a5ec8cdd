//! The three tools end alike when the reader of their standard output goes away
//! (`tool | head`, a pager quit early): quietly, with exit status 0, as their
//! `--help` says. (rtstat and rtrace used to die by SIGPIPE, status 141 under
//! `set -o pipefail`, while tfp exited 0.)

use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use posixrt::trace::{self, Trace, TraceAttr};

mod common;
use common::{dir, serial};

#[path = "../../tests/common/signals.rs"]
mod signals;

/// The write end of a pipe whose read end is already closed: the first write
/// to it fails with EPIPE (or raises SIGPIPE).
fn reader_gone() -> Stdio {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both descriptors were just made and are owned here, once each.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(r);
    Stdio::from(w)
}

fn run_into_closed_pipe(exe: &str, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(exe);
    cmd.args(args).stdout(reader_gone()).stderr(Stdio::piped());
    // As a shell starts a pipeline: SIGPIPE at its default action.
    signals::default_action(&mut cmd, &[libc::SIGPIPE]);
    cmd.output().unwrap()
}

fn small_log(p: &std::path::Path) {
    let _g = serial();
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(p).unwrap()).unwrap();
    let ev = trace::eventid_open("small_review_pipe").unwrap();
    t.start().unwrap();
    for i in 0..10u64 {
        trace::event(ev, &i.to_le_bytes());
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
}

#[test]
fn a_closed_stdout_ends_every_tool_with_status_0_as_its_help_says() {
    let d = dir("small-review-pipe");
    let log = d.join("p.trace");
    small_log(&log);
    let log = log.to_str().unwrap();
    let cases: [(&str, Vec<&str>); 7] = [
        (env!("CARGO_BIN_EXE_tfp"), vec![]),
        (env!("CARGO_BIN_EXE_tfp"), vec!["--json"]),
        (env!("CARGO_BIN_EXE_rtstat"), vec![]),
        (env!("CARGO_BIN_EXE_rtstat"), vec!["--json"]),
        (env!("CARGO_BIN_EXE_rtrace"), vec!["dump", log]),
        (env!("CARGO_BIN_EXE_rtrace"), vec!["stats", log]),
        (
            env!("CARGO_BIN_EXE_rtrace"),
            vec!["export", "--format", "chrome", log, "-o", "-"],
        ),
    ];
    for (exe, args) in &cases {
        let o = run_into_closed_pipe(exe, args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.signal(), None, "{exe} {args:?}: {o:?}");
        assert_eq!(o.status.code(), Some(0), "{exe} {args:?}: {e}");
        assert!(!e.contains("panicked"), "{exe} {args:?}: {e}");
        assert!(!e.contains("standard output"), "{exe} {args:?}: {e}");
    }
    // Each --help says so in its exit status list.
    for exe in [
        env!("CARGO_BIN_EXE_tfp"),
        env!("CARGO_BIN_EXE_rtstat"),
        env!("CARGO_BIN_EXE_rtrace"),
    ] {
        let o = Command::new(exe).arg("--help").output().unwrap();
        let h = String::from_utf8_lossy(&o.stdout);
        let status = &h[h.find("Exit status:").expect("an exit status list")..];
        let zero = status
            .lines()
            .find(|l| l.trim_start().starts_with("0 "))
            .unwrap();
        assert!(
            zero.contains("standard output closed by its reader"),
            "{exe}: {status}"
        );
    }
}
