//! Integration tests for `posixrt::sched`: policies and priorities, the
//! process- and thread-level calls, and spawned threads' handles.
//!
//! They run as root in CI. Tests that change scheduling hold `serial()` so they do
//! not disturb each other; threads given an RT policy are pinned to one CPU and
//! do not spin. The other topics are in `sched_affinity.rs`,
//! `sched_unprivileged.rs`, `sched_deadline.rs`, `sched_rt_setup.rs` and
//! `sched_periodic.rs`.

#[path = "common/sched_shared.rs"]
mod shared;
use shared::{demo_cpu, ms, serial, unused_tid};
#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;
#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

use posixrt::sched::deadline::Deadline;
use posixrt::sched::{self, Builder, CpuSet, JoinHandle, Policy, Priority, Tid};
use posixrt::ErrorKind;
use std::time::Duration;

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

// ---------- handles ----------

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
