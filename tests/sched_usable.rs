//! Integration tests for `CpuSet::usable`: the CPUs this process may use, which
//! a thread that pinned itself still sees in full (unlike `CpuSet::allowed`, its
//! own mask), and the affinity refusals whose hints name them.

use posixrt::sched::{self, CpuSet};
use posixrt::ErrorKind;

fn read_list(path: &str) -> Option<CpuSet> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.parse().ok())?
}

/// The online CPUs of this process's cgroup cpuset, read here independently of
/// posixrt: cgroup v1's cpuset hierarchy, or v2's nearest `cpuset.cpus.effective`.
fn expected_usable() -> CpuSet {
    let online = read_list("/sys/devices/system/cpu/online").expect("online CPUs");
    let cg = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let mut cpuset = None;
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctl, path) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
        if ctl.split(',').any(|c| c == "cpuset") {
            cpuset = read_list(&format!(
                "/sys/fs/cgroup/cpuset{path}/cpuset.effective_cpus"
            ));
            break;
        }
        if ctl.is_empty() {
            let mut dir = std::path::PathBuf::from(path);
            loop {
                let rel = dir.to_string_lossy().trim_end_matches('/').to_string();
                if let Some(s) = read_list(&format!("/sys/fs/cgroup{rel}/cpuset.cpus.effective")) {
                    cpuset = Some(s);
                    break;
                }
                if !dir.pop() {
                    break;
                }
            }
        }
    }
    match cpuset {
        Some(c) => CpuSet::from_cpus(online.iter().filter(|&x| c.contains(x))).unwrap(),
        None => online,
    }
}

#[test]
fn a_pinned_thread_still_gets_every_usable_cpu() {
    let expected = expected_usable();
    assert!(!expected.is_empty());
    // In a thread of its own, so the pin does not reach the other tests.
    std::thread::spawn(move || {
        let first = expected.iter().next().unwrap();
        let one = CpuSet::single(first).unwrap();
        sched::set_thread_affinity(sched::gettid(), &one).unwrap();
        assert_eq!(
            CpuSet::allowed().unwrap(),
            one,
            "allowed() is the caller's own mask"
        );
        assert_eq!(
            CpuSet::usable().unwrap(),
            expected,
            "usable() is the cpuset's online CPUs, whatever the caller's pin"
        );
    })
    .join()
    .unwrap();
}

#[test]
fn affinity_refusals_name_the_usable_cpus_of_a_pinned_thread() {
    let expected = expected_usable();
    std::thread::spawn(move || {
        let first = expected.iter().next().unwrap();
        sched::set_thread_affinity(sched::gettid(), &CpuSet::single(first).unwrap()).unwrap();
        let list = expected.to_string();

        let e = sched::set_thread_affinity(sched::gettid(), &CpuSet::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        let hint = e.hint().unwrap_or("");
        assert!(hint.contains("CpuSet::usable"), "{hint}");
        assert!(
            hint.contains(&format!("allowed by its cpuset: {list})")),
            "{list} in {hint}"
        );

        let possible = read_list("/sys/devices/system/cpu/possible").unwrap();
        let absent = CpuSet::CAPACITY - 1;
        if !possible.contains(absent) {
            let e = sched::set_thread_affinity(
                sched::gettid(),
                &CpuSet::from_cpus([first, absent]).unwrap(),
            )
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput);
            let hint = e.hint().unwrap_or("");
            assert!(hint.contains("CpuSet::usable"), "{hint}");
            assert!(
                hint.contains(&format!("allowed by its cpuset: {list})")),
                "{list} in {hint}"
            );
        }
    })
    .join()
    .unwrap();
}
