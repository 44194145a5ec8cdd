//! A process whose mark registry file is deleted (`rm`, systemd-logind's
//! `RemoveIPC=yes`) and whose threads then only call `mark::update` (the fast
//! path: no system call) is published again, so `tfp` lists it again.
//!
//! The updating process is a child (this test binary run again), so that
//! nothing but its updates can put its file back, and the parent looks at it
//! as `tfp` does (`mark::snapshot_pid`).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use posixrt::mark;

const CHILD_ENV: &str = "POSIXRT_MARK_DELETED_CHILD";

/// The child side: marks its thread, deletes its own registry file, prints
/// `READY <pid> <tid> <path>`, then only updates its marker (`update <n>`,
/// about 1000 times a second) until its stdin is closed. Ignored in normal
/// runs; the test below runs it in a child process with `--ignored`.
#[test]
#[ignore = "entry point of the child process the other test spawns"]
fn child_process() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    static EOF: AtomicBool = AtomicBool::new(false);
    // Not marked: it only waits for the parent to close stdin.
    std::thread::spawn(|| {
        let _ = std::io::stdin().read_to_end(&mut Vec::new());
        EOF.store(true, Ordering::Relaxed);
    });
    mark::set("before rm").unwrap();
    let path = mark::registry_path().expect("a mark registry");
    std::fs::remove_file(&path).unwrap();
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    println!("READY {} {tid} {}", std::process::id(), path.display());
    let mut n = 0u64;
    while !EOF.load(Ordering::Relaxed) {
        n += 1;
        mark::update(&format!("update {n}")).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Kills and reaps the child if the test fails before it ends it.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_process_that_only_updates_is_listed_again_after_its_registry_file_is_deleted() {
    let mut child = Reaped(
        Command::new(std::env::current_exe().unwrap())
            .args([
                "child_process",
                "--exact",
                "--nocapture",
                "--test-threads=1",
                "--ignored",
            ])
            .env(CHILD_ENV, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the child"),
    );
    let mut out = BufReader::new(child.0.stdout.take().unwrap());
    let mut line = String::new();
    let (pid, tid, path) = loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "child ended before READY"
        );
        if let Some(rest) = line.trim_end().split("READY ").nth(1) {
            let mut w = rest.splitn(3, ' ');
            let pid: i32 = w.next().unwrap().parse().unwrap();
            let tid: i32 = w.next().unwrap().parse().unwrap();
            break (pid, tid, std::path::PathBuf::from(w.next().unwrap()));
        }
    };
    // Listed again with a marker only `update` wrote (a hang guard, not a
    // timing check: the bound is `mark`'s documented delay, far below it).
    let end = Instant::now() + Duration::from_secs(30);
    let marker = loop {
        let snap = mark::snapshot_pid(pid).unwrap();
        let found = snap
            .process(pid)
            .and_then(|p| p.threads.iter().find(|t| t.tid == tid))
            .map(|t| t.marker.clone());
        if let Some(m) = found.filter(|m| m.starts_with("update ")) {
            break m;
        }
        assert!(
            Instant::now() < end,
            "a process that only updates its marks stayed unlisted after its registry file was deleted"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(marker["update ".len()..].parse::<u64>().is_ok(), "{marker}");
    assert!(path.exists(), "published again at {}", path.display());
    // Later updates are listed too (the thread's slot was written again
    // where readers look).
    let n: u64 = marker["update ".len()..].parse().unwrap();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let snap = mark::snapshot_pid(pid).unwrap();
        let later = snap
            .process(pid)
            .and_then(|p| p.threads.iter().find(|t| t.tid == tid))
            .and_then(|t| t.marker.strip_prefix("update ")?.parse::<u64>().ok())
            .is_some_and(|m| m > n);
        if later {
            break;
        }
        assert!(Instant::now() < end, "later updates are not listed");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(child.0.stdin.take());
    assert!(child.0.wait().unwrap().success());
    assert!(!path.exists(), "the child removed its file at exit");
}
