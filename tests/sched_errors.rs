//! Integration tests for `posixrt::sched`: errors that name their real cause.
//!
//! They run as root in CI; what needs CAP_SYS_NICE checks for it and, without it,
//! asserts the documented refusal instead.

use std::sync::{Mutex, MutexGuard};

use posixrt::sched::rt::{self, LockFlags};
use posixrt::ErrorKind;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// `MCL_ONFAULT` alone is not a valid `mlockall` request (the kernel answers
/// EINVAL): it is refused before the call, as bad input, with no talk of
/// RLIMIT_MEMLOCK or CAP_IPC_LOCK, which could not fix it.
#[test]
fn mlockall_with_only_on_fault_is_invalid_input_not_a_limit_problem() {
    let _g = serial();
    let e = rt::lock_memory(LockFlags {
        current: false,
        future: false,
        on_fault: true,
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    let text = e.to_string();
    assert!(text.contains("MCL_ONFAULT"), "{text}");
    assert!(!text.contains("RLIMIT_MEMLOCK"), "{text}");
    assert!(!text.contains("CAP_IPC_LOCK"), "{text}");
    assert_eq!(rt::locked_bytes(), 0, "nothing was locked");
}

// ---------- a SCHED_DEADLINE creator ----------

use std::time::Duration;

use posixrt::sched::deadline::{Deadline, DeadlineFlags};
use posixrt::sched::{self, Builder};

/// A light reservation (2 ms every 100 ms); the thread given it never spins.
fn light(flags: DeadlineFlags) -> Deadline {
    let ms = Duration::from_millis;
    Deadline::new(ms(2), ms(100), ms(100))
        .unwrap()
        .with_flags(flags)
}

/// Runs `f` on a thread made SCHED_DEADLINE with `dl` before it starts, or returns
/// the spawn error (no privilege, or admission control refusing it).
fn on_deadline_thread<T: Send + 'static>(
    dl: Deadline,
    f: impl FnOnce() -> T + Send + Clone + 'static,
) -> posixrt::Result<T> {
    let mut tries = 0;
    loop {
        let f = f.clone();
        match Builder::new().deadline(dl).spawn(move || {
            let policy = sched::current_scheduling().unwrap().policy();
            assert_eq!(policy, sched::Policy::Deadline);
            f()
        }) {
            Ok(h) => return Ok(h.join().unwrap()),
            // Another test's reservation may hold the bandwidth for a moment.
            Err(e) if e.kind() == ErrorKind::Busy && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The kernel refuses to clone a SCHED_DEADLINE thread that lacks
/// SCHED_FLAG_RESET_ON_FORK (EAGAIN). That is not the thread limit nor memory:
/// the error says so and names the fix, which works.
#[test]
fn a_deadline_thread_that_spawns_is_told_about_reset_on_fork() {
    let _g = serial();
    let r = on_deadline_thread(light(DeadlineFlags::NONE), || {
        Builder::new().spawn(|| ()).map(|h| h.join().unwrap())
    });
    let inner = match r {
        Ok(inner) => inner,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            assert!(e.hint().unwrap().contains("CAP_SYS_NICE"), "{e}");
            return;
        }
    };
    let e = inner.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EAGAIN), "{e}");
    let text = e.to_string();
    assert!(text.contains("SCHED_DEADLINE"), "{text}");
    assert!(!text.contains("RLIMIT_NPROC"), "{text}");
    assert!(e.hint().unwrap_or("").contains("RESET_ON_FORK"), "{text}");
    // The fix named: with the flag the same spawn works.
    let ok = on_deadline_thread(light(DeadlineFlags::RESET_ON_FORK), || {
        Builder::new()
            .spawn(|| sched::current_scheduling().unwrap().policy())
            .map(|h| h.join().unwrap())
    })
    .unwrap();
    assert_eq!(ok.unwrap(), sched::Policy::Other);
}

/// Changing only the priority of a SCHED_DEADLINE thread (`sched_setparam`) is
/// refused as bad input whatever the value, with the fix: `deadline::set`, not
/// "pick a value in 0..=0", which is refused too.
#[test]
fn priority_only_calls_on_a_deadline_thread_point_to_deadline_set() {
    let _g = serial();
    let r = on_deadline_thread(light(DeadlineFlags::NONE), || {
        let me = sched::gettid();
        [
            sched::set_thread_priority(me, 5).unwrap_err(),
            sched::set_param(None, 5).unwrap_err(),
            sched::set_param(Some(me), 0).unwrap_err(),
            sched::set_current_priority(5).unwrap_err(),
        ]
    });
    let errors = match r {
        Ok(errors) => errors,
        Err(e) => {
            assert!(!can_rt(), "{e}");
            assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
            return;
        }
    };
    for e in errors {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        let hint = e.hint().unwrap_or("");
        assert!(hint.contains("deadline::set"), "{e}");
        assert!(!hint.contains("0..=0"), "{e}");
    }
}

// ---------- spawn attributes ----------

use posixrt::sched::CpuSet;

/// A stack size no address space can hold is refused as the stack size's fault,
/// also when the builder has a (valid) affinity: the error must not send the user
/// after the CPU set.
#[test]
fn an_impossible_stack_size_is_blamed_on_the_stack_not_the_affinity() {
    let allowed = CpuSet::allowed().unwrap();
    for size in [usize::MAX, usize::MAX - 4096, isize::MAX as usize + 1] {
        for b in [
            Builder::new().stack_size(size),
            Builder::new().stack_size(size).affinity(allowed),
        ] {
            let e = b.spawn(|| ()).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{size:#x}: {e}");
            let text = e.to_string();
            assert!(text.contains("stack size"), "{size:#x}: {text}");
            assert!(!text.contains("affinity"), "{size:#x}: {text}");
        }
    }
    // The affinity itself was fine.
    let ok = Builder::new().affinity(allowed).spawn(|| 7).unwrap();
    assert_eq!(ok.join().unwrap(), 7);
}

// ---------- SCHED_DEADLINE admission control ----------

use posixrt::sched::deadline;

#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

/// CPUs online now (`/sys/devices/system/cpu/online`, a list like `0-3,6`).
fn online_cpus() -> usize {
    let s = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    s.trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum()
}

/// The admission-control hint counts the CPUs of the root domain (every online
/// CPU here), not the CPUs the *calling* thread may run on: a caller pinned to one
/// CPU (as real-time programs often are) must not be told the limit is one CPU's.
#[test]
fn admission_hint_counts_the_root_domain_not_the_callers_affinity() {
    let _g = serial();
    let ms = Duration::from_millis;
    let dl = Deadline::new(ms(9), ms(10), ms(10)).unwrap();
    let all = CpuSet::allowed().unwrap();
    let pinned = CpuSet::single(all.iter().last().unwrap()).unwrap();
    let cpus = online_cpus();
    // Blocked (never spinning) targets with the full affinity a DEADLINE task needs.
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let targets: Vec<_> = (0..=cpus + 1)
        .map(|_| {
            let rx = rx.clone();
            Builder::new()
                .affinity(all)
                .spawn(move || {
                    let _ = rx.recv_timeout(Duration::from_secs(10));
                })
                .unwrap()
        })
        .collect();
    let tids: Vec<_> = targets.iter().map(|h| h.tid()).collect();
    // The caller of deadline::set is pinned to one CPU.
    let first_error = Builder::new()
        .affinity(pinned)
        .spawn(move || tids.iter().find_map(|&t| deadline::set(t, &dl).err()))
        .unwrap()
        .join()
        .unwrap();
    drop(tx);
    for h in targets {
        h.join().unwrap();
    }
    let e = match first_error {
        Some(e) => e,
        None => {
            // Admission control is off (kernel.sched_rt_runtime_us = -1).
            let v = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
            assert_eq!(v.trim(), "-1");
            return;
        }
    };
    if !can_rt() {
        assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
        return;
    }
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    let hint = e.hint().unwrap();
    assert!(hint.contains(&format!("x {cpus} CPUs")), "{hint}");
}

/// Re-parameterising a thread that already is SCHED_DEADLINE asks admission
/// control only for the difference of the two bandwidths: a refusal's hint
/// says what the change adds (0.100 CPU from 0.9 to 1.0), not the new
/// reservation's whole bandwidth, which would overstate what must be freed.
#[test]
fn admission_hint_of_a_re_parameterised_deadline_thread_names_the_difference() {
    let _g = serial();
    if !can_rt() {
        return; // No reservation can be made: nothing to re-parameterise.
    }
    let ms = Duration::from_millis;
    let big = Deadline::new(ms(9), ms(10), ms(10)).unwrap();
    let small = Deadline::new(Duration::from_micros(500), ms(10), ms(10)).unwrap();
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let mut held = Vec::new();
    let mut admitted = Vec::new();
    // Fill the root domain with 0.9 reservations, then with 0.05 ones, until
    // each is refused: less than 0.05 CPU is left free.
    for dl in [big, small] {
        for _ in 0..=4 * online_cpus() + 40 {
            let rx = rx.clone();
            let h = Builder::new()
                .spawn(move || {
                    let _ = rx.recv_timeout(Duration::from_secs(10));
                })
                .unwrap();
            let ok = deadline::set(h.tid(), &dl).is_ok();
            if ok && dl == big {
                admitted.push(h.tid());
            }
            held.push(h);
            if !ok {
                break;
            }
        }
    }
    // 0.9 -> 1.0 adds 0.1 CPU, more than is free.
    let whole = Deadline::new(ms(10), ms(10), ms(10)).unwrap();
    let r = admitted.first().map(|&t| deadline::set(t, &whole));
    drop(tx);
    for h in held {
        h.join().unwrap();
    }
    let e = match r {
        Some(Err(e)) => e,
        other => {
            // Admission control is off (kernel.sched_rt_runtime_us = -1).
            let v = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
            assert_eq!(v.trim(), "-1", "{other:?}");
            return;
        }
    };
    assert_eq!(e.kind(), ErrorKind::Busy, "{e}");
    let hint = e.hint().unwrap();
    assert!(hint.contains("adds 0.100 CPU"), "{hint}");
    assert!(hint.contains("0.900 CPU"), "{hint}");
    assert!(!hint.contains("adds 10000000 / 10000000 ns"), "{hint}");
}

// ---------- spawn under locked memory ----------

/// A stack no machine can back: `pthread_create` fails with EAGAIN.
const HUGE_STACK: usize = 1 << 46;

/// EAGAIN from `pthread_create` blames RLIMIT_MEMLOCK only when that limit
/// applies to the new stack: future mappings are locked (`MCL_FUTURE`) and the
/// process lacks CAP_IPC_LOCK. A page locked with `mlock`, or `mlockall` by a
/// process with CAP_IPC_LOCK, does not make the limit the cause.
#[test]
fn spawn_eagain_blames_memlock_only_when_the_limit_applies() {
    let _g = serial();
    let page = vec![0u8; 4096];
    // SAFETY: `page` is a live allocation of 4096 bytes, unlocked below while alive.
    assert_eq!(unsafe { libc::mlock(page.as_ptr().cast(), page.len()) }, 0);
    assert!(rt::locked_bytes() > 0);
    let e = Builder::new()
        .stack_size(HUGE_STACK)
        .spawn(|| ())
        .unwrap_err();
    // SAFETY: as above.
    unsafe { libc::munlock(page.as_ptr().cast(), page.len()) };
    assert_eq!(e.errno(), Some(libc::EAGAIN), "{e}");
    assert!(!e.to_string().contains("RLIMIT_MEMLOCK"), "mlock only: {e}");

    let ipc_lock = caps::can_lock_memory();
    match rt::lock_memory(LockFlags::default()) {
        Ok(_) => {
            let e = Builder::new()
                .stack_size(HUGE_STACK)
                .spawn(|| ())
                .unwrap_err();
            rt::unlock_memory().unwrap();
            assert_eq!(e.errno(), Some(libc::EAGAIN), "{e}");
            let blames_limit = e.to_string().contains("RLIMIT_MEMLOCK");
            assert_eq!(blames_limit, !ipc_lock, "CAP_IPC_LOCK {ipc_lock}: {e}");
        }
        // Without CAP_IPC_LOCK the whole address space rarely fits the limit.
        Err(e) => {
            assert!(!ipc_lock, "{e}");
            assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
        }
    }
}

// ---------- leaving SCHED_IDLE without privilege ----------

const IDLE_PROBE_ENV: &str = "POSIXRT_SCHED_ERRORS_IDLE_PROBE";

#[test]
#[ignore = "helper: run by a_sched_idle_thread_refused_fifo_is_told_about_rlimit_nice"]
fn idle_probe() {
    if std::env::var_os(IDLE_PROBE_ENV).is_none() {
        return;
    }
    let e = Builder::new()
        .scheduling(sched::Priority::idle())
        .spawn(|| sched::set_current_scheduling(sched::Priority::fifo(10).unwrap()))
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    println!("IDLEPROBE {:?} {e}", e.kind());
}

/// Without CAP_SYS_NICE a SCHED_IDLE thread may switch to SCHED_FIFO only if
/// RLIMIT_NICE allows nice 0, whatever RLIMIT_RTPRIO says. The hint names that
/// limit; when RLIMIT_RTPRIO already allows the priority, it does not send the user
/// to raise RLIMIT_RTPRIO. (Root without CAP_SYS_RESOURCE cannot raise the hard
/// RLIMIT_RTPRIO: the probe gets the soft limit raised to the hard one.)
#[test]
fn a_sched_idle_thread_refused_fifo_is_told_about_rlimit_nice() {
    use std::os::unix::process::CommandExt;
    let root = rustix::process::geteuid().is_root();
    let rt_hard = rustix::process::getrlimit(rustix::process::Resource::Rtprio).maximum;
    // uid 65534 may not reach the build directory (a checkout in a 0700
    // directory): the probe is a world-executable copy of this binary.
    let dir = std::env::temp_dir().join(format!("posixrt-idle-probe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("probe");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    for p in [&dir, &exe] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    }
    let mut cmd = std::process::Command::new(&exe);
    cmd.args(["--exact", "idle_probe", "--ignored", "--nocapture"])
        .env(IDLE_PROBE_ENV, "1");
    // SAFETY: getrlimit, setrlimit, setgroups, setresgid and setresuid are
    // async-signal-safe system calls; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let mut rtprio = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            let nice = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_RTPRIO, &mut rtprio) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            rtprio.rlim_cur = rtprio.rlim_max;
            if libc::setrlimit(libc::RLIMIT_RTPRIO, &rtprio) != 0
                || libc::setrlimit(libc::RLIMIT_NICE, &nice) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // Root gives up its capabilities with its uid.
            if root
                && (libc::setgroups(0, std::ptr::null()) != 0
                    || libc::setresgid(65534, 65534, 65534) != 0
                    || libc::setresuid(65534, 65534, 65534) != 0)
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output();
    let _ = std::fs::remove_dir_all(&dir);
    let out = out.expect("the probe starts");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.contains("IDLEPROBE"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.contains("PermissionDenied") && line.contains("EPERM"),
        "{line}"
    );
    assert!(line.contains("thread is SCHED_IDLE"), "{line}");
    assert!(
        line.contains("RLIMIT_NICE >= 20 (nice 0; soft 0, hard 0)"),
        "{line}"
    );
    assert!(
        line.contains("- nice 0` to /etc/security/limits.conf"),
        "{line}"
    );
    if rt_hard.map_or(true, |h| h >= 10) {
        assert!(
            line.contains("allows SCHED_FIFO priority 10, but"),
            "{line}"
        );
        assert!(!line.contains("rtprio 99` to"), "{line}");
    }
}

// ---------- SCHED_RESET_ON_FORK is kept ----------

/// Whether the calling thread has SCHED_RESET_ON_FORK (`sched_getscheduler`).
fn resets_on_fork() -> bool {
    // SAFETY: sched_getscheduler takes a plain id and touches no memory.
    let p = unsafe { libc::sched_getscheduler(0) };
    assert!(p >= 0);
    p & libc::SCHED_RESET_ON_FORK != 0
}

/// A thread whose launcher set SCHED_RESET_ON_FORK (rtkit does) keeps the flag
/// when posixrt changes its policy: the POSIX calls know nothing of it, so they
/// neither clear it (privileged) nor fail with EPERM for trying to (unprivileged:
/// only a privileged thread may clear it).
#[test]
fn policy_changes_keep_sched_reset_on_fork() {
    let r = Builder::new()
        .spawn(|| {
            let p = libc::sched_param { sched_priority: 0 };
            let policy = libc::SCHED_OTHER | libc::SCHED_RESET_ON_FORK;
            // SAFETY: `p` is a valid sched_param the call only reads; this thread only.
            assert_eq!(unsafe { libc::sched_setscheduler(0, policy, &p) }, 0);
            assert!(resets_on_fork());
            let me = sched::gettid();
            let mut seen = Vec::new();
            sched::set_current_scheduling(sched::Priority::batch()).unwrap();
            seen.push(resets_on_fork());
            sched::set_thread_scheduling(me, sched::Priority::other()).unwrap();
            seen.push(resets_on_fork());
            sched::set_scheduler(None, sched::Priority::batch()).unwrap();
            seen.push(resets_on_fork());
            (seen, sched::current_scheduling().unwrap())
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(r.0, [true, true, true]);
    assert_eq!(r.1, sched::Priority::batch());
}

// ---------- process affinity is all or nothing ----------

/// `set_process_affinity` that fails on one thread (a SCHED_DEADLINE thread may
/// not be narrowed: EBUSY) leaves every thread as it was, instead of a process
/// half moved.
#[test]
fn a_refused_process_affinity_leaves_every_thread_as_it_was() {
    let _g = serial();
    let all = CpuSet::allowed().unwrap();
    let cpu = all.iter().last().unwrap();
    let (tx, rx) = crossbeam_channel::bounded::<()>(0);
    let dl = light(DeadlineFlags::NONE);
    let mut tries = 0;
    let h = loop {
        let rx = rx.clone();
        match Builder::new().deadline(dl).spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        }) {
            Ok(h) => break h,
            Err(e) if e.kind() == ErrorKind::Busy && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => {
                assert!(!can_rt(), "{e}");
                assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
                return;
            }
        }
    };
    let me = sched::gettid();
    let before: Vec<_> = [sched::Tid::process(), me]
        .iter()
        .map(|&t| sched::thread_affinity(t).unwrap())
        .collect();
    let r = sched::set_process_affinity(&CpuSet::single(cpu).unwrap());
    let after: Vec<_> = [sched::Tid::process(), me]
        .iter()
        .map(|&t| sched::thread_affinity(t).unwrap())
        .collect();
    // Put things back whatever happened, before asserting.
    for (t, s) in [sched::Tid::process(), me].iter().zip(&before) {
        let _ = sched::set_thread_affinity(*t, s);
    }
    drop(tx);
    h.join().unwrap();
    let e = r.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EBUSY), "{e}");
    assert_eq!(after, before);
}

// ---------- the checklist reports RLIMIT_RTTIME ----------

/// RLIMIT_RTTIME kills (SIGXCPU, then SIGKILL) a real-time thread that runs that
/// long without blocking: the RT checklist reports it with its values, as it
/// reports RT throttling.
#[test]
fn setup_reports_rlimit_rttime() {
    let _g = serial();
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let old = getrlimit(Resource::Rttime);
    let soft = old.maximum.map_or(500_000, |h| h.min(500_000));
    // Lowering the soft limit needs no privilege; this process runs no RT thread.
    setrlimit(
        Resource::Rttime,
        Rlimit {
            current: Some(soft),
            maximum: old.maximum,
        },
    )
    .unwrap();
    let text = rt::Setup::none().apply().to_string();
    setrlimit(Resource::Rttime, old).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("RLIMIT_RTTIME"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(&format!("soft {soft}")), "{line}");
    assert!(line.contains("SIGXCPU"), "{line}");
}

// ---------- a CPU the machine does not have ----------

/// A CPU set that names a CPU this machine does not have, next to one it has, is
/// refused as bad input: the kernel would drop the absent CPU silently and apply
/// the rest, so the thread would not run where the caller asked.
#[test]
fn an_affinity_naming_an_absent_cpu_is_refused_not_clamped() {
    let _g = serial();
    let me = sched::gettid();
    let allowed = CpuSet::allowed().unwrap();
    let absent = CpuSet::CAPACITY - 1;
    if allowed.contains(absent) {
        return; // a 1024-CPU machine: nothing absent to name
    }
    let mut set = CpuSet::single(allowed.iter().next().unwrap()).unwrap();
    set.insert(absent).unwrap();
    let check = |e: posixrt::Error| {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(e.to_string().contains(&absent.to_string()), "{e}");
    };
    check(sched::set_thread_affinity(me, &set).unwrap_err());
    assert_eq!(sched::thread_affinity(me).unwrap(), allowed, "unchanged");
    check(sched::set_process_affinity(&set).unwrap_err());
    assert_eq!(sched::thread_affinity(me).unwrap(), allowed, "unchanged");
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv_timeout(Duration::from_secs(10));
        })
        .unwrap();
    check(h.set_affinity(&set).unwrap_err());
    assert_eq!(h.affinity().unwrap(), allowed, "unchanged");
    drop(tx);
    h.join().unwrap();
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let r = Builder::new()
        .affinity(set)
        .spawn(move || flag.store(true, std::sync::atomic::Ordering::SeqCst));
    check(r.unwrap_err());
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
}

/// A thread spawned with `Builder::deadline` and no affinity inherits its
/// creator's: from a pinned creator the kernel refuses SCHED_DEADLINE (EPERM),
/// and the hint says the restriction was inherited and how to lift it.
#[test]
fn a_deadline_spawn_from_a_pinned_creator_names_the_inherited_affinity() {
    let _g = serial();
    let all = CpuSet::allowed().unwrap();
    if all.count() < 2 {
        return; // one CPU: pinning restricts nothing
    }
    let pinned = CpuSet::single(all.iter().last().unwrap()).unwrap();
    let e = Builder::new()
        .affinity(pinned)
        .spawn(move || {
            Builder::new()
                .deadline(light(DeadlineFlags::NONE))
                .spawn(|| ())
                .map(|h| h.join().unwrap())
        })
        .unwrap()
        .join()
        .unwrap()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PermissionDenied, "{e}");
    let hint = e.hint().unwrap();
    assert!(hint.contains("inherited"), "{hint}");
    assert!(hint.contains("Builder::affinity"), "{hint}");
    // The fix named works (with the privilege for SCHED_DEADLINE).
    if can_rt() {
        let ok = Builder::new()
            .affinity(pinned)
            .spawn(move || {
                Builder::new()
                    .deadline(light(DeadlineFlags::NONE))
                    .affinity(all)
                    .spawn(|| ())
                    .map(|h| h.join().unwrap())
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(
            ok.is_ok() || ok.as_ref().unwrap_err().kind() == ErrorKind::Busy,
            "{ok:?}"
        );
    }
}

/// A thread's kernel name is cut at 15 bytes, inside a character if need be (std
/// names threads that way): `kernel_priority` must still read its `stat`.
#[test]
fn kernel_priority_of_a_thread_whose_name_is_cut_inside_a_character() {
    let name = "ааааааааа"; // 18 bytes of Cyrillic: the kernel keeps 15, half an 'а'
    let k = std::thread::Builder::new()
        .name(name.into())
        .spawn(|| posixrt::sched::kernel_priority(posixrt::sched::gettid()))
        .unwrap()
        .join()
        .unwrap();
    let k = k.expect("the stat of a thread with a cut name is read");
    assert!(k.nice().is_some(), "{k}");
}

// ---------- SCHED_DEADLINE parameters ----------

/// Every refusal of `Deadline::new` says how to fix it: the order rule
/// (`runtime <= deadline <= period`), the kernel's 1024 ns runtime floor and the
/// 2^63 ns ceiling carry a hint, as the zero and period-bounds refusals do.
#[test]
fn every_deadline_parameter_refusal_has_a_hint() {
    let ms = Duration::from_millis;
    let huge = Duration::from_nanos(1 << 63);
    let cases = [
        (ms(0), ms(5), ms(10), "zero"),
        (ms(6), ms(5), ms(10), "runtime <= deadline <= period"),
        (ms(1), ms(11), ms(10), "runtime <= deadline <= period"),
        (Duration::from_nanos(1000), ms(5), ms(10), "1024 ns"),
        (ms(1), ms(5), huge, "too large"),
        (ms(1), ms(5), Duration::from_secs(3600), "bounds"),
    ];
    for (r, d, p, says) in cases {
        let e = Deadline::new(r, d, p).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.errno(), Some(libc::EINVAL), "{e}");
        assert!(e.to_string().contains(says), "{e} should say {says:?}");
        assert!(
            e.hint().is_some_and(|h| !h.is_empty()),
            "no hint for {r:?} {d:?} {p:?}: {e}"
        );
    }
}

/// `Builder` refuses attribute combinations it cannot apply before creating a
/// thread, each with a hint naming the one builder call to keep.
#[test]
fn builder_attribute_combinations_it_refuses_have_a_hint() {
    use posixrt::sched::sporadic::SporadicParams;
    use posixrt::sched::{CpuSet, Priority};
    let ms = Duration::from_millis;
    let dl = light(DeadlineFlags::NONE);
    let ss = SporadicParams::new(10, ms(10), ms(2), 4);
    let refused = [
        Builder::new().deadline(dl).scheduling(Priority::other()),
        Builder::new()
            .sporadic(ss, 50)
            .scheduling(Priority::other()),
        Builder::new().sporadic(ss, 50).deadline(dl),
        Builder::new().affinity(CpuSet::new()),
    ];
    for b in refused {
        let e = b.clone().spawn(|| ()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{b:?}: {e}");
        assert!(
            e.hint().is_some_and(|h| !h.is_empty()),
            "no hint for {b:?}: {e}"
        );
    }
}

/// A periodic timer with a zero interval is refused as bad input, with a hint.
#[test]
fn a_zero_periodic_interval_is_refused_with_a_hint() {
    let e = posixrt::sched::periodic::Periodic::new(Duration::ZERO).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.hint().is_some_and(|h| !h.is_empty()), "no hint: {e}");
}

/// Moving a running thread to an empty CPU set is refused with a hint, as the
/// same set given to `Builder::affinity` is.
#[test]
fn an_empty_cpu_set_for_a_running_thread_is_refused_with_a_hint() {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let h = Builder::new()
        .spawn(move || {
            let _ = rx.recv();
        })
        .unwrap();
    let e = h.set_affinity(&posixrt::sched::CpuSet::new()).unwrap_err();
    tx.send(()).unwrap();
    h.join().unwrap();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(e.hint().is_some_and(|h| !h.is_empty()), "no hint: {e}");
}

/// `set_thread_affinity` and `set_process_affinity` refuse an empty set with the
/// same hint as a thread handle's `set_affinity`.
#[test]
fn an_empty_cpu_set_for_a_thread_or_the_process_is_refused_with_a_hint() {
    let empty = posixrt::sched::CpuSet::new();
    for e in [
        posixrt::sched::set_thread_affinity(posixrt::sched::Tid::current(), &empty).unwrap_err(),
        posixrt::sched::set_process_affinity(&empty).unwrap_err(),
    ] {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert!(
            e.hint().is_some_and(|h| h.contains("at least one CPU")),
            "no hint: {e}"
        );
    }
}
