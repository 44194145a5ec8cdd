//! Probes that lock memory under `RLIMIT_MEMLOCK` without CAP_IPC_LOCK, run
//! in a child of the test that reads their line. Needs the crate's `caps` and
//! `probe` modules: `#[path = "common/memlock.rs"] mod memlock;`.
#![allow(dead_code)]

use posixrt::sched::rt::{self, LockFlags};

use super::{caps, probe};

/// In a probe: whether it runs, that is, its variable `env` is set (it is
/// in the child) and the process lacks CAP_IPC_LOCK (so that the limit
/// applies; else it prints `TAG skip: ...`).
pub fn probe_applies(env: &str, tag: &str) -> bool {
    if std::env::var_os(env).is_none() {
        return false;
    }
    if caps::can_lock_memory() {
        // CAP_IPC_LOCK could not be dropped (no CAP_SETPCAP): the limit does
        // not apply, and there is no refusal to look at.
        println!("{tag} skip: CAP_IPC_LOCK kept");
        return false;
    }
    true
}

/// In a probe: locks future mappings only (the test binary's own would not
/// fit under a hard limit of 8 MiB, which root without CAP_SYS_RESOURCE
/// cannot raise). False, after printing `TAG skip: ...`, if refused.
pub fn lock_future_mappings(tag: &str) -> bool {
    let future = LockFlags {
        current: false,
        future: true,
        on_fault: false,
    };
    match rt::lock_memory(future) {
        Ok(_) => true,
        Err(e) => {
            println!("{tag} skip: mlockall refused under the hard limit: {e}");
            false
        }
    }
}

/// Lowers the soft `RLIMIT_MEMLOCK` to `soft` bytes, keeping the hard limit.
pub fn set_soft_memlock(soft: u64) {
    let hard = rustix::process::getrlimit(rustix::process::Resource::Memlock).maximum;
    rustix::process::setrlimit(
        rustix::process::Resource::Memlock,
        rustix::process::Rlimit {
            current: Some(soft),
            maximum: hard,
        },
    )
    .expect("lower RLIMIT_MEMLOCK");
}

/// Runs the probe test `name` (variable `env`) with CAP_IPC_LOCK dropped
/// from its bounding set (best effort): its `tag` line, or `None` after
/// printing it when the probe skipped.
pub fn run_without_ipc_lock(name: &str, env: &str, tag: &str) -> Option<String> {
    // SAFETY: between fork and exec the child only makes async-signal-safe calls.
    let out = unsafe {
        probe::run(name, env, &[], || {
            // Drop CAP_IPC_LOCK (14) from the bounding set (best effort).
            libc::prctl(libc::PR_CAPBSET_DROP, 14, 0, 0, 0);
            Ok(())
        })
    };
    let line = probe::line(&out, tag);
    if line.starts_with("skip") {
        println!("{line}");
        return None;
    }
    Some(line.to_string())
}
