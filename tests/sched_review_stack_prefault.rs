//! Review of `posixrt::sched::rt::prefault_stack` on a locked main-thread stack
//! at the edge of `RLIMIT_MEMLOCK`: the check made before touching must cover
//! every page the touch reaches, not only the bytes asked for.

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;

use posixrt::sched::rt::{self, LockFlags};

#[path = "common/caps.rs"]
mod caps;

const PROBE_ENV: &str = "POSIXRT_STACK_EDGE_PROBE";

/// The probe runs on the main thread (libtest's threads have stacks mapped
/// whole): from the binary's constructors, before `main`, when its variable is
/// set, and exits.
#[used]
#[link_section = ".init_array"]
static MAIN_THREAD_PROBE: extern "C" fn() = main_thread_probe;

extern "C" fn main_thread_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let line = probe();
    let mut out = std::io::stdout();
    let _ = writeln!(out, "STACKEDGE {line}");
    let _ = out.flush();
    // SAFETY: ends the process without running libtest; nothing is left to do.
    unsafe { libc::_exit(0) }
}

/// Locks memory, leaves 64 KiB of `RLIMIT_MEMLOCK` for the stack to grow
/// into, then prefaults ever more of the stack (512 bytes more each time)
/// until `prefault_stack` refuses. Every size it accepts must be touched
/// without passing the limit (the kernel answers that fault with SIGSEGV).
fn probe() -> String {
    if caps::can_lock_memory() {
        return "skip: CAP_IPC_LOCK kept".into();
    }
    // The soft limit as high as the hard one allows, so that locking succeeds.
    let lim = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    let _ = rustix::process::setrlimit(
        rustix::process::Resource::Memlock,
        rustix::process::Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        },
    );
    if let Err(e) = rt::lock_memory(LockFlags::default()) {
        return format!("skip: mlockall refused: {e}");
    }
    let soft = rt::locked_bytes() + (64 << 10);
    if lim.maximum.is_some_and(|h| h < soft) {
        return format!("skip: the hard RLIMIT_MEMLOCK is below {soft}");
    }
    if let Err(e) = rustix::process::setrlimit(
        rustix::process::Resource::Memlock,
        rustix::process::Rlimit {
            current: Some(soft),
            maximum: lim.maximum,
        },
    ) {
        return format!("skip: setrlimit: {e}");
    }
    // Well past the 64 KiB: the refusal must come long before the loop ends.
    for bytes in (4096..(1 << 20)).step_by(512) {
        if let Err(e) = rt::prefault_stack(bytes) {
            return format!("{:?} at {bytes} | {e}", e.kind());
        }
    }
    "never refused".into()
}

/// `prefault_stack` checked the growth down to the address it was asked for,
/// but touches the stack a frame at a time, and the last frame reaches up to a
/// page and its overhead below that address: with the lock at the limit, a
/// size it accepted faulted in one more page and the kernel killed the process
/// with SIGSEGV (the probe died at the first size whose last frame crossed
/// into a new page). The check now covers the pages the last frame reaches.
#[test]
fn prefaulting_up_to_the_memlock_limit_is_refused_before_it_crashes() {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(PROBE_ENV, "1");
    // SAFETY: between fork and exec the child only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(|| {
            // Without CAP_IPC_LOCK (14) in the bounding set, even root's exec'd
            // binary is bound by RLIMIT_MEMLOCK (best effort: needs CAP_SETPCAP).
            libc::prctl(libc::PR_CAPBSET_DROP, 14, 0, 0, 0);
            Ok(())
        })
    };
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the probe died ({:?}): {stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("STACKEDGE "))
        .unwrap_or_else(|| panic!("no probe line: {stdout}"));
    if line.starts_with("skip") {
        println!("{line}");
        return;
    }
    assert!(line.starts_with("OutOfResources at "), "{line}");
    assert!(line.contains("RLIMIT_MEMLOCK"), "{line}");
}
