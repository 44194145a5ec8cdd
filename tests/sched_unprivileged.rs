//! Integration tests for `posixrt::sched` without privilege: a re-executed copy
//! of this binary runs as uid 65534 with RLIMIT_RTPRIO 0, or without
//! CAP_SYS_NICE in its bounding set, and gets PermissionDenied with the hint.

#[path = "common/sched_shared.rs"]
mod shared;
use shared::is_root;
#[path = "common/caps.rs"]
mod caps;
use caps::can_rt;

use posixrt::sched::{self, Builder, Priority};

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
