//! Integration tests for `posixrt::sched::Builder`: the fair policies glibc's
//! attribute object cannot carry (`SCHED_BATCH`, `SCHED_IDLE`).

#[path = "common/probe.rs"]
mod probe;

use posixrt::sched::{self, Builder, Policy, Priority};
use posixrt::ErrorKind;

const PROBE_ENV: &str = "POSIXRT_SPAWN_FAIR_PROBE";

/// Runs only in the child of the test below, which has no CAP_SYS_NICE and
/// RLIMIT_NICE 0: turns itself SCHED_IDLE, then spawns.
#[test]
#[ignore = "helper: run by an_idle_creator_without_privilege_spawns_idle_threads"]
fn idle_creator_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let cap = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_NICE)
    });
    println!("FAIRPROBE cap {cap}");
    sched::set_current_scheduling(Priority::idle()).unwrap();
    let spawn = |p: Priority| {
        Builder::new()
            .scheduling(p)
            .spawn(sched::current_scheduling)
            .map(|h| h.join().unwrap())
    };
    match spawn(Priority::idle()) {
        Ok(Ok(p)) => println!("FAIRPROBE idle ok {}", p.policy()),
        Ok(Err(e)) => println!("FAIRPROBE idle read {e}"),
        Err(e) => println!("FAIRPROBE idle err {:?} {e}", e.kind()),
    }
    // Leaving SCHED_IDLE for SCHED_BATCH is what the kernel refuses here.
    match spawn(Priority::batch()) {
        Ok(r) => println!("FAIRPROBE batch ok {r:?}"),
        Err(e) => println!("FAIRPROBE batch err {:?} {e}", e.kind()),
    }
}

/// A SCHED_IDLE thread without CAP_SYS_NICE (RLIMIT_NICE 0) may start SCHED_IDLE
/// threads: it is what they inherit. Builder used to create them SCHED_OTHER
/// explicitly and switch them afterwards, and the kernel refuses leaving
/// SCHED_IDLE for SCHED_OTHER there: spawn failed with EPERM. SCHED_BATCH, which
/// does leave SCHED_IDLE, is still refused, with the hint naming RLIMIT_NICE.
#[test]
fn an_idle_creator_without_privilege_spawns_idle_threads() {
    // SAFETY: between fork and exec the child only makes async-signal-safe calls.
    let stdout = unsafe {
        probe::run("idle_creator_probe", PROBE_ENV, &[], || {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_NICE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // CAP_SYS_NICE (23) out of the bounding set: the exec'd binary lacks
            // it even as root (best effort, needs CAP_SETPCAP; a process without
            // that lacks CAP_SYS_NICE too, unless it has file capabilities).
            libc::prctl(libc::PR_CAPBSET_DROP, 23, 0, 0, 0);
            Ok(())
        })
    };
    let line = |what: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(&format!("FAIRPROBE {what} ")).map(|x| x.1))
            .unwrap_or_else(|| panic!("no {what} line: {stdout}"))
            .to_string()
    };
    assert_eq!(line("idle"), format!("ok {}", Policy::Idle), "{stdout}");
    if line("cap") == "true" {
        // CAP_SYS_NICE could not be dropped (no CAP_SETPCAP): leaving
        // SCHED_IDLE is allowed, so there is no refusal to check.
        assert!(line("batch").starts_with("ok "), "{stdout}");
        return;
    }
    let batch = line("batch");
    assert!(
        batch.starts_with(&format!("err {:?}", ErrorKind::PermissionDenied)),
        "{batch}"
    );
    assert!(batch.contains("RLIMIT_NICE"), "{batch}");
}
