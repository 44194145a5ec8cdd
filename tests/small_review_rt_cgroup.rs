//! A real-time policy refused to a thread of ANOTHER process because of RT
//! group scheduling is explained by that thread's cgroup (its cpu.rt_runtime_us),
//! not by the caller's: the kernel checks the target's task group.
//!
//! Needs root (CAP_SYS_NICE, to make a cgroup) and a cgroup v1 `cpu` hierarchy
//! with RT group scheduling (cpu.rt_runtime_us); otherwise the test says so and
//! stops.

use std::path::PathBuf;
use std::process::{Child, Command};

use posixrt::sched::{self, Priority, Tid};

/// A `sleep` child in a new cgroup v1 `cpu` group with no real-time budget
/// (cpu.rt_runtime_us 0); both go on drop.
struct NoBudget {
    child: Child,
    dir: PathBuf,
}

impl NoBudget {
    fn new() -> Option<NoBudget> {
        let root = PathBuf::from("/sys/fs/cgroup/cpu");
        std::fs::read_to_string(root.join("cpu.rt_runtime_us")).ok()?;
        let dir = root.join(format!("posixrt-small-review-rt-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let child = Command::new("sleep").arg("60").spawn().unwrap();
        let c = NoBudget { child, dir };
        std::fs::write(c.dir.join("cpu.rt_runtime_us"), "0").ok()?;
        std::fs::write(c.dir.join("tasks"), c.child.id().to_string()).ok()?;
        Some(c)
    }
}

impl Drop for NoBudget {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn an_rt_policy_refused_to_another_process_names_its_cgroup() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skip: needs root to make a cgroup");
        return;
    }
    let Some(target) = NoBudget::new() else {
        println!("skip: no cgroup v1 cpu hierarchy with RT group scheduling");
        return;
    };
    let tid = Tid::from_raw(target.child.id() as i32).unwrap();
    let e = sched::set_thread_scheduling(tid, Priority::fifo(1).unwrap()).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EPERM), "{e}");
    let hint = e.hint().unwrap_or("");
    let theirs = format!("{}/cpu.rt_runtime_us is 0", target.dir.display());
    assert!(hint.contains(&theirs), "{hint}");
}
