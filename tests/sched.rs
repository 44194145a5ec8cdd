//! Integration tests for `posixrt::sched`.
//!
//! They run as root in CI. Tests that change scheduling hold `SERIAL` so they do not
//! disturb each other; threads given an RT policy are pinned to one CPU and do not
//! spin. The unprivileged path is tested in a re-executed copy of this binary that
//! runs as uid 65534 with RLIMIT_RTPRIO 0.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use std::sync::{Mutex, MutexGuard};

use posixrt::sched::{self, Builder, CpuSet, JoinHandle, Policy, Priority, Tid};
use posixrt::ErrorKind;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn has_cap(cap: rustix::thread::CapabilitySet) -> bool {
    rustix::thread::capabilities(None)
        .map(|c| c.effective.contains(cap))
        .unwrap_or(false)
}

/// The last CPU we may run on: RT demo threads go there.
fn demo_cpu() -> usize {
    CpuSet::allowed().unwrap().iter().last().unwrap()
}

/// A tid that is not in use: above pid_max.
fn unused_tid() -> Tid {
    let max: i32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    Tid::from_raw(max + 1).unwrap()
}

// ---------- policy and priority ----------

#[test]
fn priority_ranges_match_libc() {
    for p in Policy::ALL {
        // SAFETY: plain int argument.
        let min = unsafe { libc::sched_get_priority_min(p.as_raw()) };
        // SAFETY: plain int argument.
        let max = unsafe { libc::sched_get_priority_max(p.as_raw()) };
        assert_eq!(sched::priority_min(p).unwrap(), min, "{p}");
        assert_eq!(sched::priority_max(p).unwrap(), max, "{p}");
        assert_eq!(p.priority_range().unwrap(), min..=max);
    }
    assert_eq!(Policy::Fifo.priority_range().unwrap(), 1..=99);
}

#[test]
fn invalid_priority_for_policy_is_invalid_input() {
    for (policy, bad) in [
        (Policy::Fifo, 0),
        (Policy::Fifo, 100),
        (Policy::RoundRobin, -1),
        (Policy::Other, 1),
        (Policy::Batch, 5),
        (Policy::Idle, -3),
        (Policy::Deadline, 1),
    ] {
        let e = Priority::new(policy, bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{policy} {bad}");
        assert!(e.to_string().contains(policy.name()), "{e}");
    }
    // set_param checks against the target's *current* policy (SCHED_OTHER: only 0).
    let _g = serial();
    // The thread lives until told (a stalled test thread must not find it gone).
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .scheduling(Priority::other())
        .spawn(move || {
            let _ = wait.recv_timeout(std::time::Duration::from_secs(10));
        })
        .unwrap();
    let e = sched::set_thread_priority(h.tid(), 10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = h.set_priority(10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    drop(done);
    h.join().unwrap();
}

// ---------- process-level calls ----------

#[test]
fn process_level_calls_round_trip_on_a_thread() {
    let _g = serial();
    // The process-level calls act on the calling thread with `None`: run them on a
    // dedicated thread so the test harness threads are untouched.
    let cpu = demo_cpu();
    let h = Builder::new()
        .affinity(CpuSet::single(cpu).unwrap())
        .scheduling(Priority::other())
        .spawn(move || -> posixrt::Result<Vec<String>> {
            let mut log = Vec::new();
            assert_eq!(sched::get_scheduler(None)?, Policy::Other);
            assert_eq!(sched::get_param(None)?, 0);
            sched::yield_now();
            if can_rt() {
                sched::set_scheduler(None, Priority::round_robin(50)?)?;
                assert_eq!(sched::get_scheduler(None)?, Policy::RoundRobin);
                assert_eq!(sched::get_param(None)?, 50);
                let q = sched::rr_interval(None)?;
                let ms: u64 = std::fs::read_to_string("/proc/sys/kernel/sched_rr_timeslice_ms")
                    .map(|s| s.trim().parse().unwrap_or(100))
                    .unwrap_or(100);
                assert_eq!(q.as_millis() as u64, ms, "RR quantum");
                sched::set_param(None, 40)?;
                assert_eq!(sched::get_param(None)?, 40);
                // set_param keeps the policy's range: 0 is not a SCHED_RR priority.
                assert_eq!(
                    sched::set_param(None, 0).unwrap_err().kind(),
                    ErrorKind::InvalidInput
                );
                sched::set_scheduler(None, Priority::fifo(30)?)?;
                assert_eq!(sched::rr_interval(None)?, std::time::Duration::ZERO);
                sched::yield_now();
                sched::set_scheduler(None, Priority::other())?;
                log.push("rt".into());
            }
            sched::set_scheduler(None, Priority::batch())?;
            assert_eq!(sched::get_scheduler(None)?, Policy::Batch);
            sched::set_scheduler(None, Priority::other())?;
            assert_eq!(sched::get_scheduler(None)?, Policy::Other);
            log.push("done".into());
            Ok(log)
        })
        .unwrap();
    let log = h.join().unwrap().unwrap();
    assert_eq!(log.last().map(String::as_str), Some("done"));
}

#[test]
fn deadline_priority_is_refused_by_priority_calls() {
    let p = Priority::new(Policy::Deadline, 0).unwrap();
    let e = sched::set_scheduler(None, p).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.hint().unwrap().contains("deadline::set"));
    let e = Builder::new().scheduling(p).spawn(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

// ---------- thread level ----------

#[test]
fn unknown_tid_is_not_found() {
    let t = unused_tid();
    let e = sched::thread_scheduling(t).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains(&t.to_string()), "{e}");
    assert_eq!(
        sched::set_thread_scheduling(t, Priority::other())
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::get_scheduler(Some(t)).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::get_param(Some(t)).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::rr_interval(Some(t)).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::thread_affinity(t).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::set_thread_affinity(t, &CpuSet::single(0).unwrap())
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        sched::kernel_priority(t).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(Tid::from_raw(0).is_none() && Tid::from_raw(-1).is_none());
}

#[test]
fn policy_priority_round_trip_on_a_spawned_thread() {
    let _g = serial();
    let cpu = demo_cpu();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .affinity(CpuSet::single(cpu).unwrap())
        .scheduling(Priority::other())
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            sched::current_scheduling().unwrap()
        })
        .unwrap();
    let tid = h.tid();
    if !can_rt() {
        // Without CAP_SYS_NICE: the documented error, by tid and by handle.
        for e in [
            sched::set_thread_scheduling(tid, Priority::fifo(33).unwrap()).unwrap_err(),
            h.set_scheduling(Priority::round_robin(20).unwrap())
                .unwrap_err(),
        ] {
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            assert!(e.hint().unwrap().contains("RLIMIT_RTPRIO"), "{e}");
        }
        tx.send(()).unwrap();
        assert_eq!(h.join().unwrap(), Priority::other());
        return;
    }
    // By tid (sched_setscheduler / sched_getscheduler on the tid).
    sched::set_thread_scheduling(tid, Priority::fifo(33).unwrap()).unwrap();
    assert_eq!(
        sched::thread_scheduling(tid).unwrap(),
        Priority::fifo(33).unwrap()
    );
    assert_eq!(sched::kernel_priority(tid).unwrap().rt_priority(), Some(33));
    assert_eq!(sched::kernel_priority(tid).unwrap().raw(), -34);
    sched::set_thread_priority(tid, 44).unwrap();
    assert_eq!(sched::get_param(Some(tid)).unwrap(), 44);
    // By handle (pthread_setschedparam / pthread_getschedparam / pthread_setschedprio).
    h.set_scheduling(Priority::round_robin(20).unwrap())
        .unwrap();
    assert_eq!(h.scheduling().unwrap(), Priority::round_robin(20).unwrap());
    assert_eq!(sched::get_scheduler(Some(tid)).unwrap(), Policy::RoundRobin);
    h.set_priority(25).unwrap();
    assert_eq!(
        sched::thread_scheduling(tid).unwrap(),
        Priority::round_robin(25).unwrap()
    );
    assert_eq!(sched::kernel_priority(tid).unwrap().rt_priority(), Some(25));
    tx.send(()).unwrap();
    // The thread saw the last setting from inside.
    assert_eq!(h.join().unwrap(), Priority::round_robin(25).unwrap());
}

#[test]
fn current_thread_calls_round_trip() {
    let _g = serial();
    let h = Builder::new()
        .affinity(CpuSet::single(demo_cpu()).unwrap())
        .spawn(
            || -> posixrt::Result<(Priority, Option<Priority>, Priority)> {
                let start = sched::current_scheduling()?;
                let mut rt = None;
                if can_rt() {
                    sched::set_current_scheduling(Priority::fifo(12)?)?;
                    sched::set_current_priority(14)?;
                    rt = Some(sched::thread_scheduling(sched::gettid())?);
                    assert_eq!(
                        sched::set_current_priority(100).unwrap_err().kind(),
                        ErrorKind::InvalidInput
                    );
                } else {
                    let e = sched::set_current_scheduling(Priority::fifo(12)?).unwrap_err();
                    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
                    assert_eq!(e.call(), "pthread_setschedparam");
                }
                sched::set_current_scheduling(Priority::other())?;
                Ok((start, rt, sched::current_scheduling()?))
            },
        )
        .unwrap();
    let (start, rt, end) = h.join().unwrap().unwrap();
    assert_eq!(start.policy(), Policy::Other);
    let want_rt = can_rt().then(|| Priority::fifo(14).unwrap());
    assert_eq!(rt, want_rt);
    assert_eq!(end, Priority::other());
}

#[test]
fn kernel_priority_of_a_normal_thread_is_20_plus_nice() {
    // A SCHED_OTHER thread of our own, so the check never depends on how the test
    // harness was started; raising the nice value needs no privilege.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .scheduling(Priority::other())
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        })
        .unwrap();
    let pid = rustix::process::Pid::from_raw(h.tid().as_raw()).unwrap();
    let nice = rustix::process::getpriority_process(Some(pid)).unwrap();
    let k = sched::kernel_priority(h.tid()).unwrap();
    assert_eq!(k.raw(), 20 + nice, "{k}");
    assert_eq!(k.nice(), Some(nice));
    assert_eq!(k.rt_priority(), None);
    let more = (nice + 5).min(19);
    rustix::process::setpriority_process(Some(pid), more).unwrap();
    let k = sched::kernel_priority(h.tid()).unwrap();
    assert_eq!((k.raw(), k.nice()), (20 + more, Some(more)), "{k}");
    assert_eq!(k.to_string(), format!("nice {more}"));
    tx.send(()).unwrap();
    h.join().unwrap();
}

#[test]
fn creation_time_attributes_are_visible_as_the_first_action() {
    let _g = serial();
    let cpu = demo_cpu();
    let stack = 256 * 1024;
    let want = if can_rt() {
        Priority::fifo(61).unwrap()
    } else {
        Priority::other()
    };
    let h = Builder::new()
        .name("attrs-probe")
        .scheduling(want)
        .affinity(CpuSet::single(cpu).unwrap())
        .stack_size(stack)
        .spawn(|| {
            // The very first thing the thread does: look at itself.
            let sched_seen = sched::current_scheduling();
            let kernel = sched::kernel_priority(sched::gettid());
            let cpus = sched::thread_affinity(sched::gettid());
            let name = sched::current_name();
            let size = sched::current_stack_size();
            let tid = sched::gettid();
            (sched_seen, kernel, cpus, name, size, tid)
        })
        .unwrap();
    let tid = h.tid();
    let (seen, kernel, cpus, name, size, inner_tid) = h.join().unwrap();
    assert_eq!(inner_tid, tid, "tid known before spawn returned");
    assert_eq!(seen.unwrap(), want);
    if can_rt() {
        assert_eq!(kernel.unwrap().rt_priority(), Some(61));
    }
    assert_eq!(cpus.unwrap(), CpuSet::single(cpu).unwrap());
    assert_eq!(name.unwrap(), "attrs-probe");
    let size = size.unwrap();
    assert!(
        (stack..stack + 64 * 1024).contains(&size),
        "stack size {size}, asked {stack}"
    );
}

#[test]
fn batch_and_idle_are_applied_before_the_closure_runs() {
    let _g = serial();
    for want in [Priority::batch(), Priority::idle()] {
        let h = Builder::new()
            .scheduling(want)
            .spawn(sched::current_scheduling)
            .unwrap();
        assert_eq!(h.join().unwrap().unwrap(), want);
    }
}

#[test]
fn builder_refuses_bad_name_and_stack() {
    let e = Builder::new()
        .name("sixteen-bytes-xx")
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = Builder::new().name("a\0b").spawn(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = Builder::new().stack_size(1024).spawn(|| ()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = Builder::new()
        .affinity(CpuSet::new())
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn join_returns_value_and_propagates_panic() {
    let h = Builder::new().spawn(|| vec![1, 2, 3]).unwrap();
    assert_eq!(h.join().unwrap(), vec![1, 2, 3]);
    // The panic below is expected: keep its message and backtrace out of a passing
    // run (other panics still reach the previous hook).
    quiet_expected_panic("boom 7");
    let h = Builder::new()
        .spawn(|| -> u32 { panic!("boom 7") })
        .unwrap();
    let payload = h.join().unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom 7"));
    // Dropping a handle detaches; the thread still runs to completion.
    let (tx, rx) = std::sync::mpsc::channel();
    drop(Builder::new().spawn(move || tx.send(5).unwrap()).unwrap());
    assert_eq!(rx.recv().unwrap(), 5);
}

// ---------- affinity ----------

#[test]
fn affinity_round_trip() {
    let _g = serial();
    let allowed = CpuSet::allowed().unwrap();
    let cpu = demo_cpu();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
            sched::current_cpu()
        })
        .unwrap();
    assert_eq!(sched::thread_affinity(h.tid()).unwrap(), allowed);
    let one = CpuSet::single(cpu).unwrap();
    sched::set_thread_affinity(h.tid(), &one).unwrap();
    assert_eq!(sched::thread_affinity(h.tid()).unwrap(), one);
    assert_eq!(h.affinity().unwrap(), one);
    h.set_affinity(&allowed).unwrap();
    assert_eq!(h.affinity().unwrap(), allowed);
    h.set_affinity(&one).unwrap();
    tx.send(()).unwrap();
    assert_eq!(h.join().unwrap(), cpu, "ran on the only CPU allowed");
    // Empty and out-of-range sets are refused before any call.
    assert_eq!(
        sched::set_thread_affinity(sched::gettid(), &CpuSet::new())
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    let e = CpuSet::single(CpuSet::CAPACITY).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.hint().unwrap().contains("0..=1023"), "{e}");
    assert_eq!(
        CpuSet::from_cpus([0, CpuSet::CAPACITY + 5])
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
}

#[test]
fn process_affinity_sets_every_thread() {
    let _g = serial();
    let allowed = sched::process_affinity().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(std::time::Duration::from_secs(10));
        })
        .unwrap();
    let one = CpuSet::single(demo_cpu()).unwrap();
    sched::set_process_affinity(&one).unwrap();
    let seen_main = sched::process_affinity().unwrap();
    let seen_thread = sched::thread_affinity(h.tid()).unwrap();
    let seen_me = sched::thread_affinity(sched::gettid()).unwrap();
    sched::set_process_affinity(&allowed).unwrap();
    tx.send(()).unwrap();
    h.join().unwrap();
    assert_eq!((seen_main, seen_thread, seen_me), (one, one, one));
    assert_eq!(sched::process_affinity().unwrap(), allowed);
    assert!(sched::process_threads().unwrap().contains(&sched::gettid()));
}

// ---------- without privilege ----------

const PROBE_ENV: &str = "POSIXRT_SCHED_UNPRIV_PROBE";

/// Runs only inside the unprivileged child started by the test below.
#[test]
#[ignore = "helper: run by unprivileged_fifo_is_permission_denied_with_hint"]
fn unprivileged_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    assert!(!can_rt(), "the probe must run without CAP_SYS_NICE");
    let e = sched::set_scheduler(None, Priority::fifo(10).unwrap()).unwrap_err();
    println!("PROBE set_scheduler: {:?} {}", e.kind(), e);
    let e2 = Builder::new()
        .scheduling(Priority::fifo(10).unwrap())
        .spawn(|| ())
        .unwrap_err();
    println!("PROBE spawn: {:?} {}", e2.kind(), e2);
    let e3 = sched::set_current_scheduling(Priority::round_robin(5).unwrap()).unwrap_err();
    println!("PROBE pthread_setschedparam: {:?} {}", e3.kind(), e3);
    // Leaving SCHED_IDLE is bounded by RLIMIT_NICE (0 here), not by RLIMIT_RTPRIO.
    let fair = Builder::new()
        .scheduling(Priority::idle())
        .spawn(|| sched::set_current_scheduling(Priority::other()))
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    println!("FAIRPROBE: {:?} {}", fair.kind(), fair);
    // Only meaningful for the uid-65534 variant; the parent decides what to check.
    let show = |what: &str, r: Result<String, posixrt::Error>| match r {
        Ok(v) => println!("LIMIT {what}: Ok {v}"),
        Err(e) => println!("LIMIT {what}: {:?} {}", e.kind(), e),
    };
    show(
        "rtprio",
        sched::rt::raise_rtprio_limit(10).map(|l| l.to_string()),
    );
    show(
        "memlock",
        sched::rt::lock_memory(sched::rt::LockFlags::default()).map(|b| b.to_string()),
    );
    show(
        "dma",
        sched::rt::CpuDmaLatency::hold(0).map(|g| g.micros().to_string()),
    );
}

/// `CAP_SYS_NICE` from `<linux/capability.h>`.
const CAP_SYS_NICE: libc::c_ulong = 23;

fn run_probe(as_nobody: bool) -> std::io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.args([
        "--exact",
        "unprivileged_probe",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PROBE_ENV, "1");
    if as_nobody && is_root() {
        cmd.uid(65534).gid(65534);
    }
    // SAFETY: setrlimit and prctl are async-signal-safe system calls; nothing else
    // runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) != 0
                || libc::setrlimit(libc::RLIMIT_NICE, &lim) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            if !as_nobody && libc::prctl(libc::PR_CAPBSET_DROP, CAP_SYS_NICE, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.output()
}

#[test]
fn unprivileged_fifo_is_permission_denied_with_hint() {
    // As uid 65534 (capabilities go with root) when this binary is reachable by that
    // user; otherwise as root with CAP_SYS_NICE dropped from the bounding set, so the
    // exec'd probe cannot regain it. Both with RLIMIT_RTPRIO 0.
    let (out, as_nobody) = match run_probe(true) {
        Ok(o) => (o, true),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            (run_probe(false).unwrap(), false)
        }
        Err(e) => panic!("cannot start the probe: {e}"),
    };
    check_probe(out, as_nobody);
}

#[test]
fn without_cap_sys_nice_in_the_bounding_set_fifo_is_permission_denied() {
    if !is_root() {
        return; // dropping from the bounding set needs CAP_SETPCAP; the uid path covers it
    }
    check_probe(run_probe(false).unwrap(), false);
}

fn check_probe(out: std::process::Output, as_nobody: bool) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains("PROBE ")).collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    for l in lines {
        assert!(l.contains("PermissionDenied"), "{l}");
        assert!(l.contains("EPERM"), "{l}");
        assert!(l.contains("CAP_SYS_NICE"), "{l}");
        assert!(l.contains("lacks CAP_SYS_NICE"), "{l}");
        assert!(l.contains("RLIMIT_RTPRIO"), "{l}");
        assert!(l.contains("soft limit 0, hard limit 0"), "{l}");
        assert!(l.contains("limits.conf"), "{l}");
        // The hard limit is 0: raising the soft limit cannot help and is not offered.
        assert!(!l.contains("raise_rtprio_limit"), "{l}");
        if as_nobody {
            assert!(l.contains("sudo setcap cap_sys_nice+ep"), "{l}");
        } else {
            // Root without the capability is told how to grant it, not to be root.
            assert!(l.contains("runs as root but lacks CAP_SYS_NICE"), "{l}");
            assert!(l.contains("--cap-add SYS_NICE"), "{l}");
        }
    }
    let fair: Vec<&str> = stdout.lines().filter(|l| l.contains("FAIRPROBE")).collect();
    assert_eq!(fair.len(), 1, "{stdout}");
    let l = fair[0];
    assert!(l.contains("PermissionDenied") && l.contains("EPERM"), "{l}");
    assert!(l.contains("switching to SCHED_OTHER was refused"), "{l}");
    assert!(
        l.contains("RLIMIT_NICE (soft 0, hard 0: nice down to 20)"),
        "{l}"
    );
    assert!(!l.contains("RLIMIT_RTPRIO"), "{l}");
    if !as_nobody {
        return; // root keeps CAP_IPC_LOCK and /dev/cpu_dma_latency: no LIMIT checks
    }
    let limits: Vec<&str> = stdout.lines().filter(|l| l.contains("LIMIT ")).collect();
    assert_eq!(limits.len(), 3, "{stdout}");
    assert!(
        limits[0].contains("PermissionDenied") && limits[0].contains("CAP_SYS_RESOURCE"),
        "{}",
        limits[0]
    );
    assert!(
        limits[1].contains("RLIMIT_MEMLOCK") && limits[1].contains("CAP_IPC_LOCK"),
        "{}",
        limits[1]
    );
    assert!(
        limits[2].contains("PermissionDenied") && limits[2].contains("root"),
        "{}",
        limits[2]
    );
}

// ---------- SCHED_DEADLINE ----------

use posixrt::sched::cputime::CpuClock;
use posixrt::sched::deadline::{self, Deadline, DeadlineFlags};
use std::time::Duration;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn deadline_bad_input_is_invalid_input() {
    for (r, d, p) in [(0, 5, 10), (1, 0, 10), (1, 5, 0), (6, 5, 10), (1, 11, 10)] {
        let e = Deadline::new(ms(r), ms(d), ms(p)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{r} {d} {p}: {e}");
    }
    let e = Deadline::new(ms(1), ms(5), Duration::ZERO).unwrap_err();
    assert!(e.to_string().contains("period is zero"), "{e}");
    let e = deadline::get(unused_tid()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    let dl = Deadline::new(ms(1), ms(5), ms(10)).unwrap();
    assert_eq!(
        deadline::set(unused_tid(), &dl).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    let e = Builder::new()
        .deadline(dl)
        .scheduling(Priority::other())
        .spawn(|| ())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[test]
fn deadline_set_and_read_back() {
    let _g = serial();
    let dl = Deadline::new(ms(2), ms(8), ms(10))
        .unwrap()
        .with_flags(DeadlineFlags::RESET_ON_FORK);
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
            deadline::get(sched::gettid())
        })
        .unwrap();
    let before = deadline::get(h.tid()).unwrap();
    assert_eq!(before.policy, Policy::Other);
    assert_eq!(before.deadline_params(), None);
    let r = retry_busy(|| deadline::set(h.tid(), &dl));
    if !can_rt() {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        assert!(e.hint().unwrap().contains("CAP_SYS_NICE"));
        tx.send(()).unwrap();
        h.join().unwrap().unwrap();
        return;
    }
    r.unwrap();
    let now = deadline::get(h.tid()).unwrap();
    assert_eq!(now.policy, Policy::Deadline);
    assert_eq!(now.deadline_params(), Some(dl));
    assert_eq!(
        (now.runtime, now.deadline, now.period),
        (ms(2), ms(8), ms(10))
    );
    assert_eq!(
        sched::get_scheduler(Some(h.tid())).unwrap(),
        Policy::Deadline
    );
    assert!(sched::kernel_priority(h.tid()).unwrap().is_deadline());
    assert_eq!(sched::kernel_priority(h.tid()).unwrap().raw(), -101);
    // A DEADLINE thread has no priority to change: refused up front, with the fix.
    for e in [
        sched::set_thread_priority(h.tid(), 0).unwrap_err(),
        sched::set_param(Some(h.tid()), 0).unwrap_err(),
        h.set_priority(0).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.hint().unwrap().contains("deadline::set"), "{e}");
    }
    assert_eq!(
        deadline::get(h.tid()).unwrap().deadline_params(),
        Some(dl),
        "unchanged"
    );
    tx.send(()).unwrap();
    let inside = h.join().unwrap().unwrap();
    assert_eq!(inside.deadline_params(), Some(dl), "seen from inside");

    // At creation, through the builder.
    let h = retry_busy(|| {
        Builder::new()
            .deadline(dl)
            .spawn(|| deadline::get(sched::gettid()).map(|a| a.deadline_params()))
    })
    .unwrap();
    assert_eq!(h.join().unwrap().unwrap(), Some(dl));
}

/// Runs `f` again while admission control says Busy, for at most 2 s. A deadline
/// task that ended keeps its bandwidth until its 0-lag time (up to a period), so a
/// test right after another one's reservations (ours, or another program's on this
/// shared machine) can be refused for a moment; the behaviour under test is not.
fn retry_busy<T>(mut f: impl FnMut() -> posixrt::Result<T>) -> posixrt::Result<T> {
    let t0 = std::time::Instant::now();
    loop {
        match f() {
            Err(e) if e.kind() == ErrorKind::Busy && t0.elapsed() < Duration::from_secs(2) => {
                std::thread::sleep(ms(10));
            }
            r => return r,
        }
    }
}

#[test]
fn deadline_over_admission_is_busy_with_hint() {
    let _g = serial();
    if !can_rt() {
        // Without CAP_SYS_NICE admission control is never reached.
        let e = deadline::set(
            sched::gettid(),
            &Deadline::new(ms(9), ms(10), ms(10)).unwrap(),
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        assert!(
            e.hint()
                .unwrap()
                .contains("SCHED_DEADLINE needs CAP_SYS_NICE"),
            "{e}"
        );
        return;
    }
    // Each reservation asks for 0.9 CPU; the root domain admits at most
    // 0.95 x CPUs, so by the (CPUs + 1)-th one admission control must refuse.
    let cpus = CpuSet::allowed().unwrap().count();
    let dl = Deadline::new(ms(9), ms(10), ms(10)).unwrap();
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let mut handles = Vec::new();
    let mut busy = None;
    for _ in 0..=cpus + 1 {
        let rx = rx.clone();
        let h = Builder::new()
            .spawn(move || {
                let _ = rx.recv_timeout(Duration::from_secs(10));
            })
            .unwrap();
        let r = deadline::set(h.tid(), &dl);
        handles.push(h);
        if let Err(e) = r {
            busy = Some(e);
            break;
        }
    }
    drop(tx);
    for h in handles {
        h.join().unwrap();
    }
    let unlimited = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .map(|v| v.trim() == "-1")
        .unwrap_or(false);
    if unlimited {
        // kernel.sched_rt_runtime_us = -1 turns admission control off.
        assert!(busy.is_none(), "{busy:?}");
        return;
    }
    let e = busy.expect("admission control never refused");
    eprintln!("over-admission: {e}");
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    assert_eq!(e.errno(), Some(libc::EBUSY));
    let hint = e.hint().unwrap();
    assert!(hint.contains("sched_rt_runtime_us"), "{hint}");
    assert!(hint.contains("0.900 CPU"), "{hint}");
}

// ---------- CPU-time clocks ----------

#[test]
fn cpu_clocks_measure_consumed_time() {
    let spin = |d: Duration| {
        let c = CpuClock::current_thread();
        let t0 = c.now().unwrap();
        while c.now().unwrap() - t0 < d {
            std::hint::black_box(0);
        }
    };
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            spin(ms(30));
            let _ = rx.recv_timeout(Duration::from_secs(10));
            CpuClock::current_thread().now().unwrap()
        })
        .unwrap();
    let by_tid = CpuClock::of_thread(h.tid()).unwrap();
    let by_handle = h.cpu_clock().unwrap();
    assert_eq!(by_tid, by_handle, "tid clock id = pthread_getcpuclockid");
    // Wait until the spin is done (bounded: 10 s).
    let t0 = std::time::Instant::now();
    while by_tid.now().unwrap() < ms(30) && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(ms(5));
    }
    let seen = by_tid.now().unwrap();
    assert!(seen >= ms(30), "{seen:?}");
    tx.send(()).unwrap();
    let inside = h.join().unwrap();
    assert!(inside >= seen);
    assert!(CpuClock::current_process().now().unwrap() >= inside);
    assert_eq!(
        CpuClock::of_thread(unused_tid()).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert!(CpuClock::of_process(Tid::process()).unwrap().now().unwrap() >= inside);
}

#[test]
fn budget_counts_cpu_time_until_replenished() {
    use posixrt::sched::cputime::Budget;
    let me = CpuClock::current_thread();
    let e = Budget::new(me, Duration::ZERO).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let mut b = Budget::new(me, ms(3)).unwrap();
    assert_eq!(b.budget(), ms(3));
    assert!(!b.exhausted().unwrap());
    // Spend it (bounded by CPU time, at SCHED_OTHER).
    while !b.exhausted().unwrap() {
        std::hint::black_box(0);
    }
    assert!(b.used().unwrap() >= ms(3));
    assert_eq!(b.remaining().unwrap(), Duration::ZERO);
    b.replenish().unwrap();
    assert!(b.used().unwrap() < ms(3), "{:?}", b.used());
    assert!(b.remaining().unwrap() > Duration::ZERO);
}

// ---------- RT setup ----------

use posixrt::sched::rt::{self, CpuDmaLatency, LockFlags, Outcome, Setup};

#[test]
fn rtprio_limit_raise_and_restore() {
    let _g = serial();
    let before = rt::rtprio_limit();
    assert_eq!(
        rt::raise_rtprio_limit(0).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        rt::raise_rtprio_limit(100).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let can_raise_hard = rustix::thread::capabilities(None)
        .unwrap()
        .effective
        .contains(rustix::thread::CapabilitySet::SYS_RESOURCE);
    if before.hard.is_some_and(|h| h < 7) && !can_raise_hard {
        let e = rt::raise_rtprio_limit(7).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied);
        let hint = e.hint().unwrap();
        assert!(
            hint.contains("CAP_SYS_RESOURCE (this process lacks it"),
            "{hint}"
        );
        assert_eq!(rt::rtprio_limit(), before, "unchanged on failure");
        return;
    }
    let after = rt::raise_rtprio_limit(7).unwrap();
    assert!(after.soft.map_or(true, |s| s >= 7), "{after}");
    assert!(after.hard.map_or(true, |h| h >= 7), "{after}");
    assert_eq!(after, rt::rtprio_limit());
    // Restore (lowering is always allowed).
    let lim = libc::rlimit {
        rlim_cur: before.soft.unwrap_or(libc::RLIM_INFINITY),
        rlim_max: before.hard.unwrap_or(libc::RLIM_INFINITY),
    };
    // SAFETY: `lim` is a valid rlimit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &lim) }, 0);
    assert_eq!(rt::rtprio_limit(), before);
}

#[test]
fn memory_lock_and_prefault() {
    let _g = serial();
    assert_eq!(
        rt::lock_memory(LockFlags {
            current: false,
            future: false,
            on_fault: false
        })
        .unwrap_err()
        .kind(),
        ErrorKind::InvalidInput
    );
    if has_cap(rustix::thread::CapabilitySet::IPC_LOCK) {
        let locked = rt::lock_memory(LockFlags::default()).unwrap();
        assert!(locked > 0);
        assert!(rt::locked_bytes() > 0);
        rt::unlock_memory().unwrap();
        assert_eq!(rt::locked_bytes(), 0);
    }
    rt::prefault_heap(1 << 20).unwrap();
    let h = Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            (
                rt::prefault_stack(128 * 1024),
                rt::prefault_stack(512 * 1024).map_err(|e| e.kind()),
            )
        })
        .unwrap();
    let (ok, too_big) = h.join().unwrap();
    ok.unwrap();
    assert_eq!(too_big, Err(ErrorKind::InvalidInput));
}

fn read_dma_latency() -> i32 {
    let v = std::fs::read("/dev/cpu_dma_latency").unwrap();
    i32::from_ne_bytes(v[..4].try_into().unwrap())
}

#[test]
fn cpu_dma_latency_is_held_while_the_guard_lives() {
    let _g = serial();
    assert_eq!(
        CpuDmaLatency::hold(-1).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    if !std::path::Path::new("/dev/cpu_dma_latency").exists() {
        let e = CpuDmaLatency::hold(0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
        assert!(e.hint().unwrap().contains("PM QoS"), "{e}");
        return;
    }
    if !is_root() {
        let e = CpuDmaLatency::hold(0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        assert!(e.hint().unwrap().contains("root"), "{e}");
        return;
    }
    // The file reads the *aggregate* limit, the minimum over every holder, and other
    // programs on this machine (cyclictest, our `cyclic`) may hold 0 meanwhile. So
    // hold an odd value and check that it shows while it is the lowest, and is gone
    // after the drop.
    const MINE: i32 = 3;
    let before = read_dma_latency();
    let g = CpuDmaLatency::hold(MINE).unwrap();
    assert_eq!(g.micros(), MINE);
    let held = read_dma_latency();
    assert!(held <= MINE, "held {held}, asked {MINE}");
    if before > MINE {
        assert_eq!(held, MINE, "our request is the lowest");
    }
    drop(g);
    let after = read_dma_latency();
    assert_ne!(after, MINE, "released on drop (before {before})");
}

#[test]
fn timer_slack_round_trip() {
    let h = Builder::new()
        .scheduling(Priority::other())
        .spawn(|| {
            let default = rt::timer_slack()?;
            rt::set_timer_slack(1)?;
            let one = rt::timer_slack()?;
            rt::set_timer_slack(0)?;
            Ok::<_, posixrt::Error>((default, one, rt::timer_slack()?))
        })
        .unwrap();
    let (default, one, restored) = h.join().unwrap().unwrap();
    assert_eq!(one, 1);
    assert_eq!(restored, default);
}

#[test]
fn setup_reports_every_step() {
    let _g = serial();
    let h = Builder::new()
        .spawn(|| {
            let report = Setup::new().raise_rtprio(None).apply();
            let text = report.to_string();
            let dma_held = report.cpu_dma_latency().is_some();
            let unlocked = rt::unlock_memory();
            (
                text,
                report.steps().len(),
                report.all_ok(),
                dma_held,
                unlocked,
                report,
            )
        })
        .unwrap();
    let (text, n, all_ok, dma_held, unlocked, report) = h.join().unwrap();
    unlocked.unwrap();
    println!("{text}");
    assert_eq!(n, 8, "{text}");
    assert!(text.starts_with("RT setup checklist:"), "{text}");
    assert!(
        text.contains("[-] raise RLIMIT_RTPRIO: not requested"),
        "{text}"
    );
    assert!(text.contains("RT throttling"), "{text}");
    if is_root() && has_cap(rustix::thread::CapabilitySet::IPC_LOCK) {
        assert!(all_ok, "{text}");
        assert!(
            text.contains("[x] mlockall(MCL_CURRENT|MCL_FUTURE)"),
            "{text}"
        );
        assert!(text.contains("[x] prefault 256 KiB of stack"), "{text}");
        assert!(
            text.contains("[x] hold /dev/cpu_dma_latency at 0 us"),
            "{text}"
        );
        assert!(dma_held);
    } else {
        assert!(report.failures().count() >= 1);
    }
    assert!(report
        .steps()
        .iter()
        .any(|s| matches!(s.outcome, Outcome::Skipped(_))));
    let none = Setup::none().apply();
    assert!(none
        .steps()
        .iter()
        .all(|s| matches!(s.outcome, Outcome::Skipped(_))));
}

// ---------- periodic timer ----------

use posixrt::sched::periodic::{LatencyStats, Periodic};

#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

/// An endless period (`Duration::MAX`, or `i64::MAX` seconds as in the largest C
/// timespec) is valid and means "never": the next wake-up saturates at the end of
/// CLOCK_MONOTONIC, the sleep does not fail and does not return at once (a wrapped,
/// negative timespec would). The old code refused it, and overflowed past 2^62 ns.
#[test]
fn periodic_with_an_endless_interval_never_fires_and_never_panics() {
    for d in [Duration::MAX, Duration::from_secs(i64::MAX as u64)] {
        let t = Periodic::new(d).unwrap();
        assert_eq!(t.next_ns(), i64::MAX, "{d:?}");
        assert_eq!(t.interval(), Duration::from_nanos(i64::MAX as u64));
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let mut t = Periodic::new(Duration::MAX).unwrap();
    assert_eq!(t.wait_unless(&stop).unwrap(), None);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = t.wait().map(|w| w.expected_ns);
        let _ = tx.send(r);
    });
    // Still asleep: it neither failed (EINVAL) nor woke (a time in the past). The
    // thread is left asleep; it ends with the test process.
    assert!(matches!(
        rx.recv_timeout(Duration::from_millis(100)),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
    ));
}

#[test]
fn periodic_wakeups_follow_the_grid() {
    assert_eq!(
        Periodic::new(Duration::ZERO).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let interval = Duration::from_millis(2);
    let mut t = Periodic::new(interval).unwrap();
    let first = t.next_ns();
    let mut stats = LatencyStats::new(100);
    let mut prev: Option<posixrt::sched::periodic::Wakeup> = None;
    for _ in 0..10 {
        let w = t.wait().unwrap();
        assert!(w.latency_ns >= 0, "absolute sleep never wakes early");
        assert_eq!((w.expected_ns - first) % 2_000_000, 0, "on the grid");
        assert_eq!(w.overruns, (w.latency_ns / 2_000_000) as u64, "{w:?}");
        if let Some(p) = prev {
            // The grid points the previous wake-up overran are skipped.
            assert_eq!(
                w.expected_ns,
                p.expected_ns + 2_000_000 * (1 + p.overruns as i64)
            );
        }
        prev = Some(w);
        stats.record(&w);
    }
    assert_eq!(stats.count(), 10);
    assert_eq!(stats.histogram().iter().sum::<u64>() + stats.beyond(), 10);
    assert!(stats.min_us() <= stats.avg_us() && stats.avg_us() <= stats.max_us());
    // Stay away for 3.5 periods: the next wake-up reports the periods
    // missed and the timer skips to the next grid point in the future.
    let w0 = t.wait().unwrap();
    std::thread::sleep(Duration::from_millis(7));
    let w = t.wait().unwrap();
    assert_eq!(
        w.expected_ns,
        w0.expected_ns + 2_000_000 * (1 + w0.overruns as i64)
    );
    assert!(w.latency_ns >= 5_000_000, "{w:?}");
    // Missed grid points: every one in (expected, now], i.e. floor(latency / period).
    assert_eq!(w.overruns, (w.latency_ns / 2_000_000) as u64, "{w:?}");
    assert!(w.overruns >= 2, "{w:?}");
    let w2 = t.wait().unwrap();
    assert_eq!(
        w2.expected_ns,
        w.expected_ns + 2_000_000 * (1 + w.overruns as i64)
    );
    stats.record(&w);
    assert!(stats.overruns() >= 2);
    assert!(stats.to_string().starts_with("C:      11 Min:"), "{stats}");
}

#[test]
fn handle_exposes_pthread_t_tid_and_finished_state() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = sched::spawn(Builder::new().name("handle-probe"), move || {
        let _ = rx.recv_timeout(Duration::from_secs(10));
        // SAFETY: pthread_self has no preconditions.
        (
            unsafe { libc::pthread_self() },
            sched::gettid(),
            Tid::current(),
        )
    })
    .unwrap();
    assert!(!h.is_finished());
    // The native handle names the same thread: ask glibc for its name through it.
    let mut buf = [0 as libc::c_char; 16];
    // SAFETY: the handle keeps the pthread_t valid; `buf` is 16 writable bytes.
    let r = unsafe { libc::pthread_getname_np(h.as_pthread_t(), buf.as_mut_ptr(), 16) };
    assert_eq!(r, 0);
    // SAFETY: NUL-terminated on success.
    let name = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    assert_eq!(name.to_str().unwrap(), "handle-probe");
    let comm = std::fs::read_to_string(format!("/proc/self/task/{}/comm", h.tid())).unwrap();
    assert_eq!(comm.trim(), "handle-probe");
    tx.send(()).unwrap();
    let t0 = std::time::Instant::now();
    while !h.is_finished() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(ms(1));
    }
    assert!(h.is_finished());
    let native = h.as_pthread_t();
    let tid = h.tid();
    let (inner_native, inner_tid, inner_current) = h.join().unwrap();
    assert_eq!((inner_native, inner_tid, inner_current), (native, tid, tid));
    assert_eq!(Tid::process().as_raw() as u32, std::process::id());
}

#[test]
fn spawn_fails_cleanly_when_the_creator_cannot_apply_an_attribute() {
    let _g = serial();
    // SCHED_DEADLINE with a restricted affinity is refused by the kernel (EPERM), and
    // without CAP_SYS_NICE it is refused anyway: either way the closure must never run.
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let r = Builder::new()
        .deadline(Deadline::new(ms(1), ms(10), ms(10)).unwrap())
        .affinity(CpuSet::single(demo_cpu()).unwrap())
        .spawn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    let e = r.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    assert_eq!(e.call(), "sched_setattr");
    assert!(e.hint().unwrap().contains("affinity"), "{e}");
    assert!(
        !ran.load(std::sync::atomic::Ordering::SeqCst),
        "closure ran"
    );
}

#[test]
fn a_thread_joining_itself_gets_deadlock() {
    let (tx, rx) = std::sync::mpsc::channel::<JoinHandle<()>>();
    let (res_tx, res_rx) = std::sync::mpsc::channel();
    let h = Builder::new()
        .spawn(move || {
            let me = rx.recv().unwrap();
            let r = me.join();
            let e = r
                .err()
                .and_then(|p| p.downcast_ref::<posixrt::Error>().cloned());
            res_tx.send(e).unwrap();
        })
        .unwrap();
    tx.send(h).unwrap();
    // The handle is consumed by its own thread, which detaches itself instead of
    // leaking (see JoinHandle::join).
    let e = res_rx
        .recv_timeout(Duration::from_secs(10))
        .unwrap()
        .expect("join of itself must fail with a posixrt::Error payload");
    assert_eq!(e.kind(), ErrorKind::Deadlock, "{e}");
    assert_eq!(e.errno(), Some(libc::EDEADLK));
    assert!(e.hint().unwrap().contains("detached"), "{e}");
}

#[test]
fn affinity_to_a_cpu_that_is_not_usable_says_which_are() {
    // process_affinity_sets_every_thread changes this thread's mask for a moment.
    let _g = serial();
    let possible = std::fs::read_to_string("/sys/devices/system/cpu/possible").unwrap();
    // A CPU number this machine does not have (all machines here have < 1024).
    let absent = CpuSet::CAPACITY - 1;
    let allowed = CpuSet::allowed().unwrap();
    if allowed.contains(absent) {
        return; // a 1024-CPU machine: nothing absent to name
    }
    let set = CpuSet::single(absent).unwrap();
    let e = sched::set_thread_affinity(sched::gettid(), &set).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let hint = e.hint().unwrap();
    assert!(
        hint.contains("online") && hint.contains("allowed"),
        "{hint} ({possible})"
    );
    assert_eq!(
        sched::thread_affinity(sched::gettid()).unwrap(),
        allowed,
        "unchanged"
    );
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let e = Builder::new()
        .affinity(set)
        .spawn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(
        e.to_string().contains(&format!("the affinity {absent}")),
        "{e}"
    );
    assert!(e.hint().unwrap().contains("online"), "{e}");
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

#[test]
fn handle_methods_after_the_closure_returned_are_not_found_and_never_hit_the_caller() {
    let _g = serial();
    // The caller is a thread of our own at SCHED_OTHER; the hazard being tested is
    // glibc re-reading a dying thread's tid as 0 (= the caller) inside
    // pthread_setschedparam, which would turn the *caller* into SCHED_BATCH.
    let caller = Builder::new()
        .scheduling(Priority::other())
        .spawn(|| {
            let mut kinds = Vec::new();
            for _ in 0..50 {
                let h = Builder::new().spawn(|| 7).unwrap();
                let t0 = std::time::Instant::now();
                while !h.is_finished() && t0.elapsed() < Duration::from_secs(10) {
                    std::hint::spin_loop();
                }
                assert!(h.is_finished());
                kinds.push(h.set_scheduling(Priority::batch()).map_err(|e| e.kind()));
                kinds.push(h.set_priority(0).map_err(|e| e.kind()));
                kinds.push(h.scheduling().map(|_| ()).map_err(|e| e.kind()));
                kinds.push(h.affinity().map(|_| ()).map_err(|e| e.kind()));
                kinds.push(
                    h.set_affinity(&CpuSet::allowed().unwrap())
                        .map_err(|e| e.kind()),
                );
                kinds.push(h.cpu_clock().map(|_| ()).map_err(|e| e.kind()));
                assert_eq!(h.join().unwrap(), 7);
            }
            (kinds, sched::current_scheduling().unwrap())
        })
        .unwrap();
    let (kinds, me) = caller.join().unwrap();
    assert!(
        kinds.iter().all(|k| *k == Err(ErrorKind::NotFound)),
        "{kinds:?}"
    );
    assert_eq!(me, Priority::other(), "the caller's own policy was changed");
}

const STACK_PROBE_ENV: &str = "POSIXRT_PREFAULT_STACK_PROBE";

/// Runs only in the child started by the test below: prefaults the most stack
/// `prefault_stack` accepts on an 8 MiB thread (what it reports as left, less its
/// documented 16 KiB margin).
#[test]
#[ignore = "helper: run by prefault_stack_never_overflows_at_the_largest_accepted_size"]
fn prefault_stack_probe() {
    if std::env::var_os(STACK_PROBE_ENV).is_none() {
        return;
    }
    let h = Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            let e = rt::prefault_stack(usize::MAX / 2).unwrap_err();
            let msg = e.to_string();
            let left: usize = msg
                .split("only ")
                .nth(1)
                .and_then(|s| s.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or_else(|| panic!("no size in {msg:?}"));
            let most = left - 16 * 1024;
            println!("PROBE left {left}, asking {most}");
            rt::prefault_stack(most)
        })
        .unwrap();
    h.join().unwrap().unwrap();
    println!("PROBE done");
}

/// `prefault_stack` promises "InvalidInput, never an overflow". The old code
/// recursed one 4 KiB frame per page, and each frame is a page *plus* its return
/// address and alignment: the touched range outgrew the request by tens of KiB on
/// a large stack, more than the 16 KiB margin, and the thread hit its guard page.
#[test]
fn prefault_stack_never_overflows_at_the_largest_accepted_size() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "prefault_stack_probe",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(STACK_PROBE_ENV, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("PROBE done"),
        "the probe died ({:?}): {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}
