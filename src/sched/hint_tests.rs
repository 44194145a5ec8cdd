//! Unit tests of the scheduling hints (`hint.rs`), beside it to keep that file
//! within 800 lines.

use super::*;

fn facts() -> Facts {
    Facts {
        cap_sys_nice: Some(false),
        euid: 1000,
        rtprio: (Some(0), Some(0)),
        nice: (Some(0), Some(0)),
        exe: "/usr/bin/app".into(),
        user: "alice".into(),
        cgroup_rt_runtime: None,
        rt_runtime_us: Some(950000),
        target_uid: None,
        target_idle: false,
        target_foreign: None,
        affinity_gap: None,
    }
}

fn memlock(euid: u32, limit: (Option<u64>, Option<u64>)) -> MemlockFacts {
    MemlockFacts {
        cap_ipc_lock: Some(false),
        euid,
        limit,
        exe: "/usr/bin/app".into(),
        user: "alice".into(),
    }
}

#[test]
fn mlockall_hint_fits_who_we_are_and_the_limits() {
    let h = mlockall_hint(&memlock(0, (Some(65536), Some(65536))), Some(1 << 20));
    assert!(h.contains("runs as root but lacks CAP_IPC_LOCK"), "{h}");
    assert!(h.contains("--cap-add IPC_LOCK"), "{h}");
    assert!(!h.contains("run as root"), "{h}");
    assert!(!h.contains("soft limit"), "{h}");
    let h = mlockall_hint(&memlock(1000, (Some(65536), None)), Some(1 << 20));
    let fix = h.split("fix: ").nth(1).unwrap();
    assert!(
        fix.starts_with("the hard limit allows it: raise the soft limit (`ulimit -l unlimited`"),
        "{h}"
    );
    assert!(
        h.contains("sudo setcap cap_ipc_lock+ep /usr/bin/app"),
        "{h}"
    );
    assert!(h.contains("`alice - memlock unlimited`"), "{h}");
    let h = mlockall_hint(&memlock(1000, (Some(0), Some(2 << 20))), Some(1 << 20));
    assert!(h.contains("`ulimit -l 2048`"), "{h}");
    // A hard limit below the need: raising the soft one cannot help.
    let h = mlockall_hint(&memlock(1000, (Some(0), Some(4096))), Some(1 << 20));
    assert!(!h.contains("hard limit allows"), "{h}");
}

#[test]
fn a_sched_idle_thread_is_told_about_rlimit_nice() {
    let f = Facts {
        rtprio: (Some(99), Some(99)),
        target_idle: true,
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.contains("allows SCHED_FIFO priority 10, but"), "{h}");
    assert!(
        h.contains("RLIMIT_NICE >= 20 (nice 0; soft 0, hard 0)"),
        "{h}"
    );
    assert!(h.contains("`alice - nice 0`"), "{h}");
    assert!(!h.contains("rtprio 99"), "{h}");
    let f = Facts {
        target_idle: true,
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(
        h.contains("RLIMIT_RTPRIO >= 10, and the thread is SCHED_IDLE"),
        "{h}"
    );
}

#[test]
fn unprivileged_user_gets_setcap_and_limits_conf() {
    let h = rt_hint(&facts(), Some(Policy::Fifo), Some(80));
    assert!(
        h.contains("SCHED_FIFO priority 80 needs CAP_SYS_NICE"),
        "{h}"
    );
    assert!(h.contains("RLIMIT_RTPRIO >= 80"), "{h}");
    assert!(h.contains("(uid 1000) lacks CAP_SYS_NICE"), "{h}");
    assert!(h.contains("soft limit 0, hard limit 0"), "{h}");
    assert!(
        h.contains("sudo setcap cap_sys_nice+ep /usr/bin/app"),
        "{h}"
    );
    assert!(
        h.contains("`alice - rtprio 99` to /etc/security/limits.conf"),
        "{h}"
    );
    // The hard limit is 0: raising the soft limit cannot help, so it is not offered.
    assert!(!h.contains("raise_rtprio_limit"), "{h}");
}

#[test]
fn a_hard_limit_that_allows_it_is_offered_first() {
    let f = Facts {
        rtprio: (Some(0), Some(95)),
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::RoundRobin), Some(50));
    let fix = h.split("fix: ").nth(1).unwrap();
    assert!(
        fix.starts_with(
            "the hard limit allows it: call posixrt::sched::rt::raise_rtprio_limit(50)"
        ),
        "{h}"
    );
    let f = Facts {
        rtprio: (Some(0), None),
        ..facts()
    };
    assert!(rt_hint(&f, Some(Policy::Fifo), Some(99)).contains("raise_rtprio_limit(99)"));
}

#[test]
fn root_without_the_capability_is_not_told_to_run_as_root() {
    let f = Facts { euid: 0, ..facts() };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.contains("runs as root but lacks CAP_SYS_NICE"), "{h}");
    assert!(h.contains("--cap-add SYS_NICE"), "{h}");
    assert!(!h.contains("run as root"), "{h}");
}

#[test]
fn with_the_capability_the_cgroup_budget_is_named() {
    let f = Facts {
        cap_sys_nice: Some(true),
        cgroup_rt_runtime: Some(("/sys/fs/cgroup/cpu/x/cpu.rt_runtime_us".into(), 0)),
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.contains("has CAP_SYS_NICE"), "{h}");
    assert!(h.contains("cpu/x/cpu.rt_runtime_us is 0"), "{h}");
    assert!(!h.contains("setcap"), "{h}");
    let d = rt_hint(&f, Some(Policy::Deadline), None);
    assert!(d.contains("affinity"), "{d}");
}

/// With CAP_SYS_NICE, SCHED_DEADLINE's EPERM comes from an affinity that
/// does not cover the root domain, or from a root domain with no deadline
/// bandwidth (`sched_rt_runtime_us` 0). RT group scheduling refuses only
/// SCHED_FIFO/RR (`rt_policy`), yet the hint named it and not the bandwidth.
#[test]
fn a_privileged_deadline_refusal_names_affinity_and_bandwidth_not_rt_groups() {
    let f = Facts {
        cap_sys_nice: Some(true),
        rt_runtime_us: Some(0),
        ..facts()
    };
    let d = rt_hint(&f, Some(Policy::Deadline), None);
    assert!(d.contains("affinity"), "{d}");
    assert!(d.contains("sched_rt_runtime_us is 0"), "{d}");
    assert!(!d.contains("RT group"), "{d}");
}

/// With CAP_SYS_NICE and an affinity that leaves out online CPUs, the
/// DEADLINE refusal names the affinity as the cause, not every possible one.
#[test]
fn a_privileged_deadline_refusal_of_a_pinned_thread_names_the_affinity() {
    let f = Facts {
        cap_sys_nice: Some(true),
        affinity_gap: Some(("0".into(), "1-3".into())),
        ..facts()
    };
    let d = rt_hint(&f, Some(Policy::Deadline), None);
    assert!(
        d.contains("affinity is 0, which leaves out CPUs 1-3"),
        "{d}"
    );
    assert!(d.contains("set_thread_affinity"), "{d}");
    assert!(!d.contains("sched_rt_runtime_us"), "{d}");
}

#[test]
fn another_users_thread_is_named() {
    let f = Facts {
        target_uid: Some((4242, 33)),
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.starts_with("thread 4242 belongs to uid 33"), "{h}");
    let h = fair_hint(&f, Policy::Other);
    assert!(
        h.contains("RLIMIT_NICE (soft 0, hard 0: nice down to 20)"),
        "{h}"
    );
    assert!(h.starts_with("thread 4242 belongs to uid 33"), "{h}");
    assert!(!h.contains("RLIMIT_RTPRIO"), "{h}");
}

#[test]
fn errors_carry_hints() {
    let e = sched_error(
        "sched_setscheduler",
        libc::EPERM,
        None,
        Some(Policy::Fifo),
        Some(1),
    );
    assert!(e.hint().unwrap().contains("CAP_SYS_NICE"));
    let e = sched_error("sched_setparam", libc::ESRCH, Some(7), None, None);
    assert!(e.to_string().contains("no thread with tid 7"), "{e}");
    assert!(e.hint().unwrap().contains("exited"));
    let e = sched_error("sched_setaffinity", libc::EINVAL, Some(7), None, None);
    assert!(e.hint().unwrap().contains("online"), "{e}");
    let e = sched_error("sched_setaffinity", libc::EBUSY, Some(7), None, None);
    assert!(e.hint().unwrap().contains("SCHED_DEADLINE"), "{e}");
    let e = sched_error("sched_getaffinity", libc::EINVAL, Some(7), None, None);
    assert!(e.hint().unwrap().contains("1024"), "{e}");
    let e = sched_error(
        "sched_setparam",
        libc::EINVAL,
        Some(7),
        Some(Policy::Fifo),
        Some(5),
    );
    assert!(e.hint().unwrap().contains("1..=99"), "{e}");
}

/// EPERM for a real-time policy while RLIMIT_RTPRIO already allows the
/// priority (the audio set-up: `@audio - rtprio 95` in limits.conf) does not
/// come from the limit: with RT group scheduling the thread's cgroup has no
/// real-time budget (a systemd slice), or a security module refused. The hint
/// told such a user they needed CAP_SYS_NICE or RLIMIT_RTPRIO >= 10 and to add
/// `rtprio 99` to limits.conf, which they had.
#[test]
fn a_refusal_the_rtprio_limit_allows_names_the_cgroup_not_the_limit() {
    let f = Facts {
        rtprio: (Some(95), Some(95)),
        cgroup_rt_runtime: Some(("/sys/fs/cgroup/cpu/user.slice/cpu.rt_runtime_us".into(), 0)),
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.contains("allows SCHED_FIFO priority 10"), "{h}");
    assert!(h.contains("user.slice/cpu.rt_runtime_us is 0"), "{h}");
    assert!(!h.contains("rtprio 99"), "{h}");
    assert!(!h.contains("needs CAP_SYS_NICE or RLIMIT_RTPRIO"), "{h}");
    // The cgroup's budget unreadable: the causes are still named.
    let f = Facts {
        cgroup_rt_runtime: None,
        ..f
    };
    let h = rt_hint(&f, Some(Policy::RoundRobin), Some(95));
    assert!(h.contains("allows SCHED_RR priority 95"), "{h}");
    assert!(h.contains("cpu.rt_runtime_us"), "{h}");
    assert!(h.contains("security module"), "{h}");
    // Above the limit, the limit is the cause, as before.
    let h = rt_hint(&f, Some(Policy::Fifo), Some(96));
    assert!(h.contains("RLIMIT_RTPRIO >= 96"), "{h}");
}

/// The kernel checks the *target's* RLIMIT_RTPRIO: for a thread of another
/// process, this process's limit allowing the priority proves nothing, and the
/// hint must not say the limit is not the cause.
#[test]
fn another_processs_thread_is_not_told_the_limit_allows_it() {
    let f = Facts {
        rtprio: (Some(99), Some(99)),
        cgroup_rt_runtime: Some(("/sys/fs/cgroup/cpu/cpu.rt_runtime_us".into(), 950000)),
        target_foreign: Some(4242),
        ..facts()
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(!h.contains("allows SCHED_FIFO priority 10"), "{h}");
    assert!(h.contains("RLIMIT_RTPRIO >= 10"), "{h}");
    assert!(h.contains("its own RLIMIT_RTPRIO"), "{h}");
}

/// `Facts::gather` tells a thread of another process (whose own limit the
/// kernel checks) from this process's threads.
#[test]
fn a_thread_of_another_process_is_told_apart() {
    let mut other = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .unwrap();
    let pid = other.id() as i32;
    let foreign = Facts::gather(Some(pid)).target_foreign;
    let _ = other.kill();
    let _ = other.wait();
    assert_eq!(foreign, Some(pid));
    let (tx, rx) = std::sync::mpsc::channel();
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let t = std::thread::spawn(move || {
        tx.send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
        let _ = wait.recv();
    });
    let sibling = rx.recv().unwrap();
    let ours = Facts::gather(Some(sibling)).target_foreign;
    drop(done);
    t.join().unwrap();
    assert_eq!(ours, None);
    assert_eq!(Facts::gather(None).target_foreign, None);
    let me = rustix::thread::gettid().as_raw_nonzero().get();
    assert_eq!(Facts::gather(Some(me)).target_foreign, None);
}

/// Leaving SCHED_IDLE or lowering the nice value is bounded by the *target's*
/// RLIMIT_NICE (`is_nice_reduction(p, ...)`): for a thread of another process
/// the hint gave this process's limit as the bound.
#[test]
fn another_processs_thread_is_told_its_own_nice_limit_counts() {
    let f = Facts {
        nice: (Some(40), Some(40)),
        target_foreign: Some(4242),
        ..facts()
    };
    let h = fair_hint(&f, Policy::Other);
    assert!(h.contains("/proc/4242/limits"), "{h}");
    assert!(
        !h.contains("soft 40, hard 40: nice down to -20) allows"),
        "{h}"
    );
    let f = Facts {
        target_idle: true,
        ..f
    };
    let h = rt_hint(&f, Some(Policy::Fifo), Some(10));
    assert!(h.contains("/proc/4242/limits"), "{h}");
}
