//! `tfp --watch -p PID` of a process that goes on running without a marked
//! thread (its threads cleared their marks, or it ran another program): tfp
//! says so once on standard error, as it says an exit, instead of refreshing
//! an empty listing with no word; it lists the process again once a thread of
//! it marks itself, and says it again if the marks go again.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

mod common;
use common::{me, wait_registry};

/// A line tfp wrote: to standard output or standard error.
#[derive(Debug)]
enum Line {
    Out(String),
    Err(String),
}

/// `tfp --no-self --watch 0.05 -p PID`, its lines on a channel.
fn watch(pid: i32) -> (Child, Receiver<Line>) {
    let mut w = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(["--no-self", "--watch", "0.05", "-p", &pid.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let out = BufReader::new(w.stdout.take().unwrap());
    let err = BufReader::new(w.stderr.take().unwrap());
    let t = tx.clone();
    std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            let _ = t.send(Line::Out(l));
        }
    });
    std::thread::spawn(move || {
        for l in err.lines().map_while(Result::ok) {
            let _ = tx.send(Line::Err(l));
        }
    });
    (w, rx)
}

/// The lines up to the first that `stop` accepts (included), within 20 s.
fn until(rx: &Receiver<Line>, what: &str, mut stop: impl FnMut(&Line) -> bool) -> Vec<Line> {
    let mut seen = Vec::new();
    // tfp writes a line at every refresh: the bound is on the whole wait.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        match rx.recv_timeout(end.saturating_duration_since(Instant::now())) {
            Ok(l) => {
                let done = stop(&l);
                seen.push(l);
                if done {
                    return seen;
                }
            }
            Err(_) => panic!("no {what} after: {seen:#?}"),
        }
    }
}

fn is_note(l: &Line, pid: i32) -> bool {
    matches!(l, Line::Err(e) if e.starts_with(&format!("tfp: process {pid} has no marked thread now")))
}

fn lists(l: &Line, marker: &str) -> bool {
    matches!(l, Line::Out(o) if o.starts_with("TID ") && o.ends_with(&format!(" {marker}")))
}

fn notes(lines: &[Line], pid: i32) -> usize {
    lines.iter().filter(|l| is_note(l, pid)).count()
}

/// Ends the watch with SIGTERM (a clean end); its status and remaining lines.
fn stop(mut w: Child, rx: &Receiver<Line>) -> (std::process::ExitStatus, Vec<Line>) {
    // SAFETY: a signal to a child this test started and has not reaped.
    unsafe { libc::kill(w.id() as i32, libc::SIGTERM) };
    let st = w.wait().unwrap();
    let mut rest = Vec::new();
    while let Ok(l) = rx.recv_timeout(Duration::from_secs(5)) {
        rest.push(l);
    }
    (st, rest)
}

#[test]
fn marks_cleared_and_set_again_are_said_and_listed() {
    // One thread of this process, marked and cleared on request.
    let (cmd, todo) = mpsc::channel::<Option<&'static str>>();
    let (done, ack) = mpsc::channel();
    let marker = std::thread::spawn(move || {
        for m in todo {
            match m {
                Some(m) => posixrt::mark::set(m).unwrap(),
                None => posixrt::mark::clear(),
            }
            done.send(()).unwrap();
        }
    });
    let mark = |m| {
        cmd.send(m).unwrap();
        ack.recv().unwrap();
    };
    mark(Some("watched"));
    let pid = me();
    let (w, rx) = watch(pid);
    let mut all = until(&rx, "listing", |l| lists(l, "watched"));
    mark(None);
    all.extend(until(&rx, "note after the marks cleared", |l| {
        is_note(l, pid)
    }));
    mark(Some("again"));
    all.extend(until(&rx, "listing of the new mark", |l| lists(l, "again")));
    mark(None);
    all.extend(until(&rx, "second note", |l| is_note(l, pid)));
    // Said once each time: more empty refreshes add no note.
    let mut headers = 0;
    all.extend(until(&rx, "more refreshes", |l| {
        if matches!(l, Line::Out(o) if o.starts_with("tfp: every ")) {
            headers += 1;
        }
        headers == 5
    }));
    let (st, rest) = stop(w, &rx);
    all.extend(rest);
    drop(cmd);
    marker.join().unwrap();
    assert_eq!(st.code(), Some(0), "{st:?}: {all:#?}");
    assert_eq!(notes(&all, pid), 2, "{all:#?}");
    let errs: Vec<_> = all.iter().filter(|l| matches!(l, Line::Err(_))).collect();
    assert_eq!(errs.len(), 2, "{all:#?}");
    let Line::Err(note) = errs[0] else {
        unreachable!()
    };
    assert!(note.contains("cleared their marks"), "{note}");
    // The help says what happens.
    let h = common::stdout(&common::tfp(&["--help"])).replace(char::is_whitespace, "");
    assert!(h.contains("hasnomarkedthreadnow"), "{h}");
}

/// Run as a child by the next test (TFP_EXEC_HELPER set): marks its thread,
/// waits for a line on standard input, then runs `sleep 60` in its place.
#[test]
fn exec_helper() {
    if std::env::var_os("TFP_EXEC_HELPER").is_none() {
        return;
    }
    use std::os::unix::process::CommandExt;
    posixrt::mark::set("before exec").unwrap();
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
    let e = Command::new("sleep").arg("60").exec();
    panic!("exec sleep: {e}");
}

#[test]
fn a_process_that_runs_another_program_is_said_to_have_no_marked_thread() {
    // Killed however the test ends (`sleep 60` would outlive a failure).
    struct Reaped(Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "exec_helper", "--nocapture", "--test-threads=1"])
        .env("TFP_EXEC_HELPER", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = Reaped(child);
    let pid = child.0.id() as i32;
    wait_registry(pid);
    let (w, rx) = watch(pid);
    let mut all = until(&rx, "listing", |l| lists(l, "before exec"));
    child.0.stdin.take().unwrap().write_all(b"go\n").unwrap();
    all.extend(until(&rx, "note after the exec", |l| is_note(l, pid)));
    // Still running (it is `sleep` now), and then it exits: said too.
    drop(child);
    all.extend(until(
        &rx,
        "exit",
        |l| matches!(l, Line::Err(e) if *e == format!("tfp: process {pid} has exited")),
    ));
    let st = w.wait_with_output().unwrap().status;
    assert_eq!(st.code(), Some(0), "{st:?}: {all:#?}");
    assert_eq!(notes(&all, pid), 1, "{all:#?}");
    let errs = all.iter().filter(|l| matches!(l, Line::Err(_))).count();
    assert_eq!(errs, 2, "{all:#?}");
}
