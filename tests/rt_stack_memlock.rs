//! Integration tests for `posixrt::sched::rt::prefault_stack` on the main
//! thread, whose stack mapping grows as it is touched: with that mapping locked
//! (`mlockall(MCL_CURRENT)`), growth counts against `RLIMIT_MEMLOCK`, also at
//! its edge (the check made before touching must cover every page the touch
//! reaches, not only the bytes asked for).

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;

use posixrt::sched::rt::{self, LockFlags};

#[path = "common/caps.rs"]
mod caps;

const PROBE_ENV: &str = "POSIXRT_STACK_MEMLOCK_PROBE";

/// The probe must run on the main thread (libtest runs every test on a thread
/// of its own, whose stack is mapped whole at creation): it runs from the
/// binary's constructors, before `main`, when its variable is set, and exits.
#[used]
#[link_section = ".init_array"]
static MAIN_THREAD_PROBE: extern "C" fn() = main_thread_probe;

extern "C" fn main_thread_probe() {
    if std::env::var_os(PROBE_ENV).is_none() {
        return;
    }
    let line = match std::env::var(PROBE_ENV).as_deref() {
        Ok("edge") => edge_probe(),
        _ => probe(),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "STACKLOCK {line}");
    let _ = out.flush();
    // SAFETY: ends the process without running libtest; nothing is left to do.
    unsafe { libc::_exit(0) }
}

/// Locks the main thread's memory with 2 MiB of `RLIMIT_MEMLOCK` to spare, then
/// prefaults 6 MiB of its stack.
fn probe() -> String {
    if caps::can_lock_memory() {
        return "skip: CAP_IPC_LOCK kept".into();
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let vm_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(u64::MAX / 2048);
    if let Err(skip) = memlock_soft_limit(vm_kib * 1024 + (2 << 20)) {
        return skip;
    }
    if let Err(e) = rt::lock_memory(LockFlags::default()) {
        return format!("skip: mlockall refused: {e}");
    }
    match rt::prefault_stack(6 << 20) {
        Ok(()) => format!("Ok, {} bytes locked", rt::locked_bytes()),
        Err(e) => format!("{:?} | {e}", e.kind()),
    }
}

/// Sets the soft `RLIMIT_MEMLOCK` to `soft` bytes; the probe's skip line if
/// the hard limit is below it or the call fails.
fn memlock_soft_limit(soft: u64) -> Result<(), String> {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    if lim.maximum.is_some_and(|h| h < soft) {
        return Err(format!("skip: the hard RLIMIT_MEMLOCK is below {soft}"));
    }
    rustix::process::setrlimit(
        rustix::process::Resource::Memlock,
        rustix::process::Rlimit {
            current: Some(soft),
            maximum: lim.maximum,
        },
    )
    .map_err(|e| format!("skip: setrlimit: {e}"))
}

/// Locks memory, leaves 64 KiB of `RLIMIT_MEMLOCK` for the stack to grow
/// into, then prefaults ever more of the stack (512 bytes more each time)
/// until `prefault_stack` refuses. Every size it accepts must be touched
/// without passing the limit (the kernel answers that fault with SIGSEGV).
fn edge_probe() -> String {
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
    if let Err(skip) = memlock_soft_limit(rt::locked_bytes() + (64 << 10)) {
        return skip;
    }
    // Well past the 64 KiB: the refusal must come long before the loop ends.
    for bytes in (4096..(1 << 20)).step_by(512) {
        if let Err(e) = rt::prefault_stack(bytes) {
            return format!("{:?} at {bytes} | {e}", e.kind());
        }
    }
    "never refused".into()
}

/// Runs this binary's `which` probe in a child without CAP_IPC_LOCK and
/// gives its line (None: the probe skipped, saying why on stdout).
fn run_probe(which: &str) -> Option<String> {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.env(PROBE_ENV, which);
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
        .find_map(|l| l.strip_prefix("STACKLOCK "))
        .unwrap_or_else(|| panic!("no probe line: {stdout}"));
    if line.starts_with("skip") {
        println!("{line}");
        return None;
    }
    Some(line.to_string())
}

/// Growing the locked main-thread stack beyond `RLIMIT_MEMLOCK` makes the page
/// fault fail, and the kernel kills the process with SIGSEGV: `prefault_stack`
/// (whose docs promise an error, never an overflow) crashed the process it was
/// meant to prepare. It now refuses first, naming the limit and the fix.
#[test]
fn prefaulting_a_locked_main_stack_beyond_memlock_is_an_error_not_a_crash() {
    let Some(line) = run_probe("limit") else {
        return;
    };
    assert!(line.starts_with("OutOfResources |"), "{line}");
    assert!(line.contains("RLIMIT_MEMLOCK"), "{line}");
    assert!(line.contains("fix:"), "{line}");
}

/// `prefault_stack` checked the growth down to the address it was asked for,
/// but touches the stack a frame at a time, and the last frame reaches up to a
/// page and its overhead below that address: with the lock at the limit, a
/// size it accepted faulted in one more page and the kernel killed the process
/// with SIGSEGV (the probe died at the first size whose last frame crossed
/// into a new page). The check now covers the pages the last frame reaches.
#[test]
fn prefaulting_up_to_the_memlock_limit_is_refused_before_it_crashes() {
    let Some(line) = run_probe("edge") else {
        return;
    };
    assert!(line.starts_with("OutOfResources at "), "{line}");
    assert!(line.contains("RLIMIT_MEMLOCK"), "{line}");
}
