//! Privilege checks and polling for the scheduling tests:
//! `#[path = "common/caps.rs"] mod caps;`.
#![allow(dead_code)]

use std::time::{Duration, Instant};

/// May this process use SCHED_FIFO/RR and SCHED_DEADLINE (CAP_SYS_NICE)?
pub fn can_rt() -> bool {
    rustix::thread::capabilities(None)
        .map(|c| {
            c.effective
                .contains(rustix::thread::CapabilitySet::SYS_NICE)
        })
        .unwrap_or(false)
}

/// May this process lock memory beyond `RLIMIT_MEMLOCK` (CAP_IPC_LOCK)?
pub fn can_lock_memory() -> bool {
    rustix::thread::capabilities(None).is_ok_and(|c| {
        c.effective
            .contains(rustix::thread::CapabilitySet::IPC_LOCK)
    })
}

/// Polls `f` every millisecond for at most `limit`; true once it held.
pub fn wait_for(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    f()
}
