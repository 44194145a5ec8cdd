//! `tfp --watch -p PID` once PID has exited: tfp says so on standard error and
//! the watch ends with status 0, as its --help says, instead of printing empty
//! refreshes for ever as if the process had no marked thread.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;
use common::wait_registry;

#[test]
fn watching_a_process_that_exits_says_so_and_ends() {
    // A marked process: tfp marks its own main thread, and waits here.
    let mut target = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(["--watch", "1000", common::NO_MATCH])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let pid = target.id() as i32;
    wait_registry(pid);
    let mut w = Command::new(env!("CARGO_BIN_EXE_tfp"))
        .args(["--no-self", "--watch", "0.05", "-p", &pid.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let out = BufReader::new(w.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        for l in out.lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    // Listed while it runs.
    let header = format!("PID {pid:>9} ");
    let t0 = Instant::now();
    loop {
        let l = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("tfp --watch printed nothing");
        if l.starts_with(&header) {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "never listed");
    }
    // SAFETY: a signal to the child this test started and has not reaped.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    target.wait().unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(st) = w.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            let _ = w.kill();
            let _ = w.wait();
            panic!("tfp --watch -p {pid} went on after {pid} exited");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    reader.join().unwrap();
    let mut err = String::new();
    w.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}: {err}");
    assert_eq!(err, format!("tfp: process {pid} has exited\n"));
    // The help says what happens.
    let h = common::stdout(&common::tfp(&["--help"]));
    assert!(h.contains("every -p process has exited"), "{h}");
}
