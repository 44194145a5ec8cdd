//! Integration tests for `posixrt::sched::Builder` without a policy: the new
//! thread inherits its creator's scheduling as the kernel passes it on, which a
//! creator's `SCHED_RESET_ON_FORK` changes.

#[path = "common/caps.rs"]
mod caps;

use posixrt::sched::{self, deadline, Builder, CpuSet, Policy, Priority};

/// What a thread spawned by `child` from a creator that ran `setup` got:
/// (policy, priority, nice, sched_flags; 0 flags: no `SCHED_FLAG_RESET_ON_FORK`).
fn spawned_by(
    child: Builder,
    setup: impl FnOnce() -> i32 + Send + 'static,
) -> (Policy, u32, i32, u64) {
    // The creator may be SCHED_FIFO: keep it on one CPU (it does not spin).
    let cpu = CpuSet::allowed().unwrap().iter().next().unwrap();
    Builder::new()
        .affinity(CpuSet::single(cpu).unwrap())
        .spawn(move || {
            assert_eq!(setup(), 0, "{}", std::io::Error::last_os_error());
            let child = child
                .spawn(|| deadline::get(sched::gettid()).unwrap())
                .unwrap()
                .join()
                .unwrap();
            (child.policy, child.priority, child.nice, child.flags)
        })
        .unwrap()
        .join()
        .unwrap()
}

/// [`spawned_by`] a default `Builder` (no policy: inherit).
fn spawned_from(setup: impl FnOnce() -> i32 + Send + 'static) -> (Policy, u32, i32, u64) {
    spawned_by(Builder::new(), setup)
}

fn set_scheduler(policy: i32, priority: i32) -> i32 {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid sched_param for the duration of the call.
    unsafe { libc::sched_setscheduler(0, policy, &p) }
}

/// The documented kernel rule: a SCHED_FIFO creator with SCHED_RESET_ON_FORK
/// gives a default Builder's thread SCHED_OTHER at nice 0 and no flag; without
/// the flag, the thread inherits SCHED_FIFO and its priority.
#[test]
fn a_reset_on_fork_creator_passes_on_no_real_time_policy() {
    if !caps::can_rt() {
        let r = set_scheduler(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 10);
        let e = std::io::Error::last_os_error();
        assert_eq!((r, e.raw_os_error()), (-1, Some(libc::EPERM)), "{e}");
        return;
    }
    let got = spawned_from(|| set_scheduler(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 10));
    assert_eq!(got, (Policy::Other, 0, 0, 0));
    let got = spawned_from(|| set_scheduler(libc::SCHED_FIFO, 10));
    assert_eq!((got.0, got.1, got.3), (Policy::Fifo, 10, 0));
    // An explicit policy is applied after the kernel's reset.
    let got = spawned_by(
        Builder::new().scheduling(Priority::fifo(10).unwrap()),
        || set_scheduler(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, 10),
    );
    assert_eq!((got.0, got.1, got.3), (Policy::Fifo, 10, 0));
}

/// A fair creator with SCHED_RESET_ON_FORK keeps its policy for the new thread,
/// but a negative nice value is not passed on.
#[test]
fn a_reset_on_fork_creator_passes_on_no_negative_nice() {
    if !caps::can_rt() {
        return; // a negative nice needs CAP_SYS_NICE too
    }
    let got = spawned_from(|| {
        let tid = sched::gettid().as_raw() as libc::id_t;
        // SAFETY: plain system calls on this thread.
        unsafe {
            if libc::setpriority(libc::PRIO_PROCESS, tid, -5) != 0 {
                return -1;
            }
        }
        set_scheduler(libc::SCHED_BATCH | libc::SCHED_RESET_ON_FORK, 0)
    });
    assert_eq!(got, (Policy::Batch, 0, 0, 0));
    let got = spawned_from(|| {
        let tid = sched::gettid().as_raw() as libc::id_t;
        // SAFETY: a plain system call on this thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid, -5) }
    });
    assert_eq!(got, (Policy::Other, 0, -5, 0));
}
