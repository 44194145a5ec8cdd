//! Integration tests for `posixrt::sched::rt`: `mlockall` refused by
//! `RLIMIT_MEMLOCK` names the fix that applies to this process.

#[path = "common/caps.rs"]
mod caps;
#[path = "common/memlock.rs"]
mod memlock;
#[path = "common/probe.rs"]
mod probe;

use posixrt::sched::rt::{self, LockFlags};

const PROBE_ENV: &str = "POSIXRT_RT_MEMLOCK_PROBE";

/// Runs only in the children of the test below: `mlockall(MCL_CURRENT |
/// MCL_FUTURE)` under the limits they were given, and prints the refusal.
#[test]
#[ignore = "helper: run by mlockall_beyond_memlock_names_the_fix_that_applies"]
fn memlock_probe() {
    if !memlock::probe_applies(PROBE_ENV, "MEMLOCKPROBE") {
        return;
    }
    let e = rt::lock_memory(LockFlags::default()).expect_err("the address space exceeds 64 KiB");
    println!("MEMLOCKPROBE {:?} | {e}", e.kind());
}

/// The probe's line, run with RLIMIT_MEMLOCK `soft`/`hard` (`None`: the hard
/// limit this process has) and CAP_IPC_LOCK dropped from its bounding set (so
/// that the exec'd binary lacks it even as root; best effort, as it needs
/// CAP_SETPCAP, and a process without it lacks CAP_IPC_LOCK anyway).
fn probe(soft: u64, hard: Option<u64>) -> String {
    // SAFETY: between fork and exec the child only makes async-signal-safe calls.
    let out = unsafe {
        probe::run("memlock_probe", PROBE_ENV, &[], move || {
            let mut lim = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            lim.rlim_cur = soft;
            if let Some(h) = hard {
                lim.rlim_max = h;
            }
            if libc::setrlimit(libc::RLIMIT_MEMLOCK, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_CAPBSET_DROP, 14, 0, 0, 0);
            Ok(())
        })
    };
    probe::line(&out, "MEMLOCKPROBE").to_string()
}

/// Root that lacks CAP_IPC_LOCK (a container, a dropped bounding set) cannot
/// fix the refusal by running as root, which the hint used to tell it: it is
/// told to grant the capability instead. A soft limit below a hard limit that
/// would do is the cheapest fix, and comes first.
#[test]
fn mlockall_beyond_memlock_names_the_fix_that_applies() {
    let root = rustix::process::geteuid().is_root();
    let can_drop = rustix::thread::capabilities(None)
        .is_ok_and(|c| c.effective.contains(rustix::thread::CapabilitySet::SETPCAP));

    let line = probe(64 << 10, Some(64 << 10));
    if line.starts_with("skip") {
        println!("{line}");
        return;
    }
    assert!(line.starts_with("OutOfResources |"), "{line}");
    assert!(
        line.contains("RLIMIT_MEMLOCK is soft 65536, hard 65536"),
        "{line}"
    );
    assert!(!line.contains("hard limit allows"), "{line}");
    if root && can_drop {
        assert!(
            line.contains("runs as root but lacks CAP_IPC_LOCK"),
            "{line}"
        );
        assert!(line.contains("--cap-add IPC_LOCK"), "{line}");
        assert!(!line.contains("run as root"), "{line}");
    } else if !root {
        assert!(line.contains("lacks CAP_IPC_LOCK"), "{line}");
        assert!(
            line.contains("run as root, or `sudo setcap cap_ipc_lock+ep"),
            "{line}"
        );
    }

    // Raising the hard limit needs CAP_SYS_RESOURCE (root may lack it too);
    // without it the probe keeps the hard limit this process has.
    let resource = rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::SYS_RESOURCE)
    });
    let hard = rustix::process::getrlimit(rustix::process::Resource::Memlock).maximum;
    let line = probe(64 << 10, resource.then_some(libc::RLIM_INFINITY));
    assert!(line.starts_with("OutOfResources |"), "{line}");
    let fix = line.split("fix: ").nth(1).unwrap_or_default();
    if resource || hard.is_none() {
        assert!(
            fix.starts_with(
                "the hard limit allows it: raise the soft limit (`ulimit -l unlimited`"
            ),
            "{line}"
        );
    } else {
        // The hard limit (a few MiB) is below the address space of a test
        // binary: raising the soft limit cannot help, so it is not offered.
        assert!(!fix.contains("hard limit allows"), "{line}");
    }
}

const HEAP_PROBE_ENV: &str = "POSIXRT_RT_HEAP_PROBE";

/// Runs only in the child of the test below: future mappings locked, then
/// `RLIMIT_MEMLOCK` lowered to 3 MiB past what is locked (an unprivileged
/// process's 8 MiB default leaves a small program about as much), then the
/// recommended setup's heap step: its line.
#[test]
#[ignore = "helper: run by the_default_heap_prefault_fits_in_memlock"]
fn heap_probe() {
    if !memlock::probe_applies(HEAP_PROBE_ENV, "HEAPPROBE")
        || !memlock::lock_future_mappings("HEAPPROBE")
    {
        return;
    }
    memlock::set_soft_memlock(rt::locked_bytes() + (3 << 20));
    // The heap's free top given back, so the prefault grows it (locked).
    // SAFETY: malloc_trim only returns free memory to the system.
    unsafe { libc::malloc_trim(0) };
    let report = rt::Setup::new()
        .lock_memory(false)
        .prefault_stack(0)
        .cpu_dma_latency(None)
        .timer_slack(None)
        .apply();
    let line = report.to_string();
    let line = line
        .lines()
        .find(|l| l.contains("heap"))
        .unwrap_or("no heap line");
    println!("HEAPPROBE {line}");
}

/// Where memory is locked and `RLIMIT_MEMLOCK` leaves less than the default
/// 8 MiB of heap to prefault (an unprivileged process's default limit is 8
/// MiB), the recommended setup prefaults what fits and says so, instead of
/// failing its heap step with ENOMEM every time.
#[test]
fn the_default_heap_prefault_fits_in_memlock() {
    let Some(line) = memlock::run_without_ipc_lock("heap_probe", HEAP_PROBE_ENV, "HEAPPROBE")
    else {
        return;
    };
    assert!(line.contains("[x]"), "{line}");
    assert!(
        line.contains("KiB of heap (of the 8192 KiB default: RLIMIT_MEMLOCK)"),
        "{line}"
    );
}
