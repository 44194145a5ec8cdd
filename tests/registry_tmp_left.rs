//! A registry is filled in under a temporary name (`.posixrt-<kind>-<pid>-<start>.tmp`,
//! or `.posixrt-<kind>-<pid>-<start>.<random>.tmp`) and then renamed: a process
//! killed in between (a watchdog's SIGKILL at start-up, an OOM kill) leaves that
//! file, with its reserved pages, in `/dev/shm`. Readers never list such names,
//! so the clean-up that removes the registry files of dead processes must
//! remove these too, or they pile up for good.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use posixrt::registry::{cleanup, scan, TaskStat};

/// A pid that names no process now: a child that has exited and been reaped.
fn dead_pid() -> u32 {
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let pid = c.id();
    c.wait().unwrap();
    pid
}

fn my_start() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    TaskStat::parse(&stat).unwrap().starttime
}

/// Plants `/dev/shm/<name>` with its last change `age` ago.
fn plant(name: &str, age: Duration) -> PathBuf {
    let path = PathBuf::from("/dev/shm").join(name);
    let _ = std::fs::remove_file(&path);
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(4096).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
    path
}

const OLD: Duration = Duration::from_secs(3600);

#[test]
fn temporary_files_of_dead_processes_are_removed() {
    let dead = dead_pid();
    let me = std::process::id();
    let start = my_start();
    let gone_fixed = plant(&format!(".posixrt-regtmpa-{dead}-7.tmp"), OLD);
    let gone_random = plant(
        &format!(".posixrt-regtmpa-{dead}-7.0123456789abcdef.tmp"),
        OLD,
    );
    // This live process's own (a create in progress): kept.
    let mine = plant(&format!(".posixrt-regtmpa-{me}-{start}.tmp"), OLD);
    // Not a temporary name of the kind: kept.
    let other = plant(&format!(".posixrt-regtmpb-{dead}-7.tmp"), OLD);
    let odd = plant(&format!(".posixrt-regtmpa-{dead}-7.tmp.bak"), OLD);

    let removed = cleanup("regtmpa").unwrap();
    let left: Vec<bool> = [&gone_fixed, &gone_random, &mine, &other, &odd]
        .iter()
        .map(|p| p.exists())
        .collect();
    for p in [&gone_fixed, &gone_random, &mine, &other, &odd] {
        let _ = std::fs::remove_file(p);
    }
    assert_eq!(
        left,
        [false, false, true, true, true],
        "(dead fixed, dead random, live, other kind, other name) still there"
    );
    assert_eq!(removed, 2);
}

#[test]
fn a_scan_removes_them_too() {
    let dead = dead_pid();
    let gone = plant(&format!(".posixrt-regtmpc-{dead}-7.tmp"), OLD);
    let s = scan("regtmpc", None).unwrap();
    let still = gone.exists();
    let _ = std::fs::remove_file(&gone);
    assert!(!still, "a dead creator's temporary file was left: {s:?}");
    assert_eq!((s.removed, s.unreadable), (1, 0), "{s:?}");
}

#[test]
fn a_locked_or_fresh_temporary_file_is_kept() {
    // Its creator may live in another pid namespace sharing /dev/shm (its pid
    // means nothing here): it holds the file's lock once it took it, and just
    // before that the file is seconds old at most.
    let dead = dead_pid();
    let locked = plant(&format!(".posixrt-regtmpd-{dead}-7.tmp"), OLD);
    let f = std::fs::File::open(&locked).unwrap();
    rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).unwrap();
    let fresh = plant(&format!(".posixrt-regtmpd-{dead}-8.tmp"), Duration::ZERO);
    let removed = cleanup("regtmpd").unwrap();
    let kept = (locked.exists(), fresh.exists());
    drop(f);
    let _ = std::fs::remove_file(&locked);
    let _ = std::fs::remove_file(&fresh);
    assert_eq!(kept, (true, true));
    assert_eq!(removed, 0);
}
