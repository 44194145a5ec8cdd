//! Integration test for `posixrt::sched` affinity inside a cgroup cpuset that
//! allows fewer CPUs than the machine has (a container's usual lot).

#[path = "common/probe.rs"]
mod probe;

use std::ffi::CString;

use posixrt::sched::{self, Builder, CpuSet};
use posixrt::ErrorKind;

const PROBE_ENV: &str = "POSIXRT_CPUSET_PROBE";

/// Runs only in the child of the test below, which starts it in a cpuset of one
/// CPU: asks for that CPU and one outside the cpuset, for itself and for a new
/// thread, and prints what it got.
#[test]
#[ignore = "helper: run by an_affinity_the_cpuset_would_narrow_is_refused_not_clamped"]
fn cpuset_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let inside: usize = std::env::var("POSIXRT_CPUSET_INSIDE")
        .unwrap()
        .parse()
        .unwrap();
    let outside: usize = std::env::var("POSIXRT_CPUSET_OUTSIDE")
        .unwrap()
        .parse()
        .unwrap();
    let both = CpuSet::from_cpus([inside, outside]).unwrap();
    let before = sched::thread_affinity(sched::gettid()).unwrap();
    match sched::set_thread_affinity(sched::gettid(), &both) {
        Ok(()) => println!(
            "CPUSET set Ok | now {}",
            sched::thread_affinity(sched::gettid()).unwrap()
        ),
        Err(e) => println!(
            "CPUSET set {:?} | {e} | now {} (before {before})",
            e.kind(),
            sched::thread_affinity(sched::gettid()).unwrap()
        ),
    }
    match Builder::new()
        .affinity(both)
        .spawn(|| sched::thread_affinity(sched::gettid()).unwrap())
    {
        Ok(h) => println!("CPUSET spawn Ok | ran on {}", h.join().unwrap()),
        Err(e) => println!("CPUSET spawn {:?} | {e}", e.kind()),
    }
}

/// A cgroup v1 cpuset made for the test, removed on drop.
struct Cpuset(String);

impl Drop for Cpuset {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The kernel applies only the CPUs a thread's cpuset allows and drops the rest
/// of the requested set without a word: asked for {inside, outside} in a cpuset
/// of {inside}, `set_thread_affinity` and `Builder::affinity` returned Ok with
/// the thread on {inside} alone, the silent narrowing the crate refuses for CPUs
/// the machine does not have. They now refuse it (the thread keeps its mask).
#[test]
fn an_affinity_the_cpuset_would_narrow_is_refused_not_clamped() {
    let root = "/sys/fs/cgroup/cpuset";
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let allowed = CpuSet::allowed().unwrap();
    let mine: Vec<usize> = allowed.iter().collect();
    if !std::path::Path::new(&format!("{root}/tasks")).exists()
        || !rustix::process::geteuid().is_root()
        || mine.len() < 2
        || std::fs::read_to_string("/proc/self/cgroup").map_or(true, |c| {
            !c.lines()
                .any(|l| l.contains(":cpuset:/") && l.ends_with(":/"))
        })
    {
        println!("skip: needs root, two CPUs ({online}) and the top cgroup v1 cpuset");
        return;
    }
    let (inside, outside) = (mine[0], mine[1]);
    let dir = format!("{root}/posixrt-test-{}", std::process::id());
    if std::fs::create_dir(&dir).is_err() {
        println!("skip: cannot make {dir}");
        return;
    }
    let cg = Cpuset(dir);
    let mems = std::fs::read_to_string(format!("{root}/cpuset.mems")).unwrap();
    std::fs::write(format!("{}/cpuset.cpus", cg.0), inside.to_string()).unwrap();
    std::fs::write(format!("{}/cpuset.mems", cg.0), mems.trim()).unwrap();
    let tasks = CString::new(format!("{}/tasks", cg.0)).unwrap();
    let (i, o) = (inside.to_string(), outside.to_string());
    // SAFETY: between fork and exec the child only makes async-signal-safe
    // calls (open, write, close, getpid), formatting the pid by hand.
    let out = unsafe {
        probe::run(
            "cpuset_probe",
            PROBE_ENV,
            &[
                ("POSIXRT_CPUSET_INSIDE", &i),
                ("POSIXRT_CPUSET_OUTSIDE", &o),
            ],
            move || {
                let fd = libc::open(tasks.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let mut buf = [0u8; 16];
                let mut n = buf.len();
                let mut pid = libc::getpid() as u32;
                loop {
                    n -= 1;
                    buf[n] = b'0' + (pid % 10) as u8;
                    pid /= 10;
                    if pid == 0 {
                        break;
                    }
                }
                let w = libc::write(fd, buf[n..].as_ptr().cast(), buf.len() - n);
                libc::close(fd);
                if w < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            },
        )
    };
    drop(cg);
    let set = probe::line(&out, "CPUSET set");
    assert!(
        set.starts_with(&format!("{:?} |", ErrorKind::InvalidInput)),
        "{set}"
    );
    assert!(
        set.contains(&format!("now {inside} ")),
        "kept its mask: {set}"
    );
    assert!(set.contains("cpuset"), "{set}");
    let spawn = probe::line(&out, "CPUSET spawn");
    assert!(
        spawn.starts_with(&format!("{:?} |", ErrorKind::InvalidInput)),
        "{spawn}"
    );
    assert!(spawn.contains("cpuset"), "{spawn}");
}
