//! What a C program that did not finish was doing, for the watchdog's failure
//! message: each thread's state, kernel wait channel and system call (from
//! `/proc`), and its user-space stack where `gdb` is installed. A hang seen
//! once in many runs can then be told apart without running it again.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The report for the live process `pid` (call before killing it).
pub fn report(pid: libc::pid_t) -> String {
    let mut out = String::new();
    let tasks = Path::new("/proc").join(pid.to_string()).join("task");
    let mut tids: Vec<u32> = std::fs::read_dir(&tasks)
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    tids.sort_unstable();
    for tid in tids {
        let dir = tasks.join(tid.to_string());
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|e| format!("({f}: {e})"))
        };
        // The state is the field after the parenthesised name.
        let stat = read("stat");
        let state = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .unwrap_or("?")
            .to_string();
        out += &format!(
            "thread {tid} {:?}: state {state}, wchan {}, syscall {}\n",
            read("comm"),
            read("wchan"),
            read("syscall"),
        );
    }
    out += &stacks(pid);
    out
}

/// `gdb`'s backtrace of every thread of `pid`, or why there is none. Bounded
/// to 60 s (gdb stopped after that).
fn stacks(pid: libc::pid_t) -> String {
    let child = Command::new("gdb")
        .args(["-batch", "-nx", "-p", &pid.to_string()])
        .args(["-ex", "thread apply all bt"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return format!("(no stacks: gdb: {e})\n"),
    };
    let t0 = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if t0.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            _ => {
                let _ = child.kill();
                break;
            }
        }
    }
    match child.wait_with_output() {
        Ok(o) => String::from_utf8_lossy(&o.stdout).into_owned(),
        Err(e) => format!("(no stacks: {e})\n"),
    }
}
