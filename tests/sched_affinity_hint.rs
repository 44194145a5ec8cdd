//! Integration tests for `posixrt::sched` affinity errors: the hint for a set
//! the kernel refuses names the CPUs that are really allowed.

#[path = "common/probe.rs"]
mod probe;
#[path = "common/seccomp.rs"]
mod seccomp;

use posixrt::sched::{self, CpuSet, Tid};
use posixrt::ErrorKind;

const PROBE_ENV: &str = "POSIXRT_AFFINITY_HINT_PROBE";

/// Runs only in the child of the test below: pins the main thread to one CPU,
/// then has `sched_setaffinity` fail with EINVAL on this thread (what the
/// kernel answers for a set with no online CPU of the cpuset).
#[test]
#[ignore = "helper: run by the_einval_hint_names_the_cpuset_not_the_main_threads_mask"]
fn affinity_hint_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let mine = CpuSet::allowed().unwrap();
    let Some(first) = mine.iter().next().filter(|_| mine.count() >= 2) else {
        println!("AFFPROBE skip: one CPU ({mine})");
        return;
    };
    sched::set_thread_affinity(Tid::process(), &CpuSet::single(first).unwrap()).unwrap();
    seccomp::fail_syscall(libc::SYS_sched_setaffinity, None, libc::EINVAL);
    let e = sched::set_thread_affinity(sched::gettid(), &mine).unwrap_err();
    println!(
        "AFFPROBE {mine} | {:?} | {}",
        e.kind(),
        e.hint().unwrap_or("")
    );
}

fn parse_list(list: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in list.split(',') {
        let (a, b): (usize, usize) = match part.split_once('-') {
            Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
            None => (part.parse().ok()?, part.parse().ok()?),
        };
        cpus.extend(a..=b);
    }
    Some(cpus)
}

/// EINVAL from `sched_setaffinity` means no CPU of the set is online and in
/// the thread's cpuset. The hint listed the *main thread's* affinity
/// (`/proc/self/status`) as what the cpuset allows: in a program that pins its
/// main thread (a common real-time setup) it sent the user to that one CPU,
/// when every CPU of the cpuset would do. It now reads the cpuset.
#[test]
fn the_einval_hint_names_the_cpuset_not_the_main_threads_mask() {
    // SAFETY: no set-up between fork and exec.
    let out = unsafe { probe::run("affinity_hint_probe", PROBE_ENV, &[], || Ok(())) };
    let line = probe::line(&out, "AFFPROBE");
    if line.starts_with("skip") {
        println!("{line}");
        return;
    }
    let mut fields = line.splitn(3, " | ");
    let (mine, kind, hint) = (
        fields.next().unwrap(),
        fields.next().unwrap(),
        fields.next().unwrap_or_default(),
    );
    assert_eq!(kind, format!("{:?}", ErrorKind::InvalidInput), "{line}");
    assert!(hint.contains("online"), "{line}");
    assert!(!hint.contains("main thread"), "{line}");
    if let Some((_, rest)) = hint.split_once("cpuset (") {
        let listed = rest.split(')').next().unwrap_or_default();
        let cpuset = parse_list(listed).unwrap_or_else(|| panic!("not a CPU list: {line}"));
        // The probe thread's own CPUs are in its cpuset.
        for c in parse_list(mine).unwrap() {
            assert!(
                cpuset.contains(&c),
                "CPU {c} missing from the cpuset: {line}"
            );
        }
    }
}
