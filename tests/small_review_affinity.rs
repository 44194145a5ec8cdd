//! An affinity refused to a thread of ANOTHER process is explained by that
//! thread's cpuset, not by the caller's: a process in a cpuset of CPU 0 only
//! cannot be given CPU 1, even though the caller's cpuset allows CPU 1.
//!
//! Needs root and a cgroup v1 cpuset hierarchy (to make the target's cpuset);
//! otherwise the test says so and stops.

use std::path::PathBuf;
use std::process::{Child, Command};

use posixrt::sched::{self, CpuSet, Tid};
use posixrt::ErrorKind;

/// A `sleep` child in a new cgroup v1 cpuset that allows `cpu` only; both go on drop.
struct Confined {
    child: Child,
    dir: PathBuf,
}

impl Confined {
    fn new(cpu: usize) -> Option<Confined> {
        let root = PathBuf::from("/sys/fs/cgroup/cpuset");
        let mems = std::fs::read_to_string(root.join("cpuset.effective_mems")).ok()?;
        let dir = root.join(format!("posixrt-small-review-{}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let child = Command::new("sleep").arg("60").spawn().unwrap();
        let c = Confined { child, dir };
        std::fs::write(c.dir.join("cpuset.cpus"), cpu.to_string()).ok()?;
        std::fs::write(c.dir.join("cpuset.mems"), mems.trim()).ok()?;
        std::fs::write(c.dir.join("tasks"), c.child.id().to_string()).ok()?;
        Some(c)
    }

    fn tid(&self) -> Tid {
        Tid::from_raw(self.child.id() as i32).unwrap()
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
fn a_thread_of_another_process_is_refused_by_its_own_cpuset() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        println!("skip: needs root to make a cpuset");
        return;
    }
    let mine = CpuSet::allowed().unwrap();
    let cpus: Vec<usize> = mine.iter().take(2).collect();
    if cpus.len() < 2 {
        println!("skip: needs two CPUs");
        return;
    }
    let Some(target) = Confined::new(cpus[0]) else {
        println!("skip: no writable cgroup v1 cpuset hierarchy");
        return;
    };
    let tid = target.tid();
    let theirs = format!("cpuset of thread {tid}");

    // Both CPUs: the kernel keeps the first only, and posixrt refuses.
    let both = CpuSet::from_cpus(cpus.iter().copied()).unwrap();
    let e = sched::set_thread_affinity(tid, &both).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let text = format!("{e} / {}", e.hint().unwrap_or(""));
    assert!(!text.contains("this process's cpuset"), "{text}");
    assert!(text.contains(&theirs), "{text}");
    assert!(text.contains(&format!("({})", cpus[0])), "{text}");

    // The second CPU alone: EINVAL from the kernel; the hint names the
    // target's cpuset and its CPUs.
    let second = CpuSet::single(cpus[1]).unwrap();
    let e = sched::set_thread_affinity(tid, &second).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
    let hint = e.hint().unwrap_or("");
    assert!(!hint.contains("this process's cpuset"), "{hint}");
    assert!(hint.contains(&theirs), "{hint}");
    assert!(hint.contains(&format!("({})", cpus[0])), "{hint}");
}
