//! The calling thread's scheduling, set and read with raw system calls (behind
//! the locks' back, on purpose), for the tests of the priority protocols:
//! `#[path = "common/self_sched.rs"] mod self_sched;`.

/// Sets the calling thread's policy with a raw `sched_setscheduler`; the errno on
/// failure.
pub fn set_self(policy: i32, prio: i32) -> Result<(), i32> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `p` is a valid sched_param; pid 0 is the calling thread.
    if unsafe { libc::sched_setscheduler(0, policy, &p) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }
}

/// The calling thread's `(policy, priority)`.
pub fn self_policy() -> (i32, i32) {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 = this thread; `p` is writable.
    let pol = unsafe { libc::sched_getscheduler(0) };
    // SAFETY: as above.
    unsafe { libc::sched_getparam(0, &mut p) };
    (pol, p.sched_priority)
}

/// Whether this process may use SCHED_FIFO (tried in a throwaway thread).
pub fn have_rt() -> bool {
    std::thread::spawn(|| set_self(libc::SCHED_FIFO, 1).is_ok())
        .join()
        .unwrap()
}

/// Field 18 (prio) of /proc/self/task/TID/stat: the effective priority the
/// kernel schedules thread `tid` of this process with; -1 - p for SCHED_FIFO
/// priority p, 20 + nice for SCHED_OTHER.
#[allow(dead_code)]
pub fn kernel_prio(tid: u32) -> i64 {
    let s = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    let after = &s[s.rfind(')').expect("comm") + 2..];
    // `after` starts at field 3 (state); field 18 is index 15.
    after
        .split(' ')
        .nth(15)
        .expect("field 18")
        .parse()
        .expect("prio")
}
