//! `rtstat` without a pid lists every tracked process, each with its objects,
//! reading each process's registry once: it used to scan /dev/shm (reading
//! every registry), then scan it again for each process (reading its registry
//! a second time).

use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::starttime;

const CHILD: &str = "POSIXRT_SMALL_REVIEW_RTSTAT_CHILD";
const N: usize = 20;

/// Run as a child: tracks one named mutex, publishes it, and waits for its
/// standard input to close.
#[test]
fn child_with_one_tracked_mutex() {
    let Ok(name) = std::env::var(CHILD) else {
        return;
    };
    posixrt::sync::set_tracking(posixrt::sync::Tracking::Counts);
    let m = posixrt::sync::NormalMutex::new(0u32);
    // SAFETY: the raw lock is only named, not locked or moved.
    unsafe { m.raw() }.set_name(&name);
    *m.lock() += 1;
    posixrt::sync::publish().unwrap();
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    drop(m);
}

struct Children(Vec<Child>);

impl Drop for Children {
    /// Closes their standard input, so they exit normally and remove their
    /// registries; a child still running after 10 s is killed.
    fn drop(&mut self) {
        for c in &mut self.0 {
            drop(c.stdin.take());
        }
        let t0 = Instant::now();
        for c in &mut self.0 {
            while c.try_wait().ok().flatten().is_none() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn rtstat(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtstat"))
        .args(args)
        .output()
        .unwrap()
}

/// Opens of the files in /dev/shm, by name, while `f` runs (inotify).
fn opens_during(f: impl FnOnce()) -> Vec<String> {
    // SAFETY: no pointer arguments.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    assert!(fd >= 0);
    // SAFETY: the descriptor was just made and is owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a NUL-terminated path.
    let wd =
        unsafe { libc::inotify_add_watch(fd.as_raw_fd(), c"/dev/shm".as_ptr(), libc::IN_OPEN) };
    assert!(wd >= 0);
    f();
    let mut names = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        // SAFETY: `buf` is valid for its length.
        let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n <= 0 {
            break;
        }
        let mut at = 0;
        while at < n as usize {
            // struct inotify_event: wd, mask, cookie, len, then the name.
            let len = u32::from_ne_bytes(buf[at + 12..at + 16].try_into().unwrap()) as usize;
            let name = &buf[at + 16..at + 16 + len];
            let end = name.iter().position(|&b| b == 0).unwrap_or(len);
            names.push(String::from_utf8_lossy(&name[..end]).into_owned());
            at += 16 + len;
        }
    }
    names
}

#[test]
fn every_tracked_process_is_listed_and_its_registry_read_once() {
    let exe = std::env::current_exe().unwrap();
    let mut kids = Children(Vec::new());
    for i in 0..N {
        let c = Command::new(&exe)
            .args(["--exact", "child_with_one_tracked_mutex", "--nocapture"])
            .env(CHILD, format!("small-review-{i}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        kids.0.push(c);
    }
    let pids: Vec<u32> = kids.0.iter().map(Child::id).collect();
    // Each publishes its registry (bounded wait).
    let t0 = Instant::now();
    for &p in &pids {
        while !rtstat(&[&p.to_string()]).status.success() {
            assert!(
                t0.elapsed() < Duration::from_secs(30),
                "{p} never published"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut out = None;
    let opens = opens_during(|| out = Some(rtstat(&["--json"])));
    let o = out.unwrap();
    assert!(o.status.success(), "{o:?}");
    let j: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed = j.as_array().unwrap();
    for (i, &p) in pids.iter().enumerate() {
        let entry = listed
            .iter()
            .find(|e| e["pid"].as_u64() == Some(u64::from(p)))
            .unwrap_or_else(|| panic!("{p} not listed: {j}"));
        let names: Vec<&str> = entry["objects"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["name"].as_str())
            .collect();
        assert_eq!(names, [format!("small-review-{i}")], "{entry}");
        let file = format!("posixrt-sync-{p}-{}", starttime(p));
        let n = opens.iter().filter(|o| **o == file).count();
        assert_eq!(n, 1, "{file} opened {n} times");
    }
}
