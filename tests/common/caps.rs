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

/// May this process serve threads sporadically (SCHED_FIFO)? If not, checks
/// that `serve` with `params` is refused as documented (PermissionDenied): the
/// caller has nothing more to test.
#[track_caller]
pub fn can_serve(params: posixrt::sched::sporadic::SporadicParams) -> bool {
    if can_rt() {
        return true;
    }
    let e = posixrt::sched::sporadic::serve(posixrt::sched::gettid(), params, 50).unwrap_err();
    assert_eq!(e.kind(), posixrt::ErrorKind::PermissionDenied, "{e}");
    false
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
