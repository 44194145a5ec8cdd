//! Threads pinned and raised for a test that must hold a CPU (the held-request
//! cancel tests): `#[path = "common/pinning.rs"] mod pinning;`.
#![allow(dead_code)]

/// The tids of this process's threads whose name starts with `prefix`.
pub fn tids_named(prefix: &str) -> Vec<i32> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let c = std::fs::read_to_string(p.join("comm")).ok()?;
            let tid = p.file_name()?.to_str()?.parse().ok()?;
            c.trim_end().starts_with(prefix).then_some(tid)
        })
        .collect()
}

/// Pins thread `tid` (0: the caller) to `cpu`.
pub fn pin(tid: i32, cpu: usize) {
    // SAFETY: an all-zero cpu_set_t is a valid empty set; CPU_SET stays in
    // range (cpu < 2); the call only reads the set.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut s);
        assert_eq!(
            libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &s),
            0,
            "sched_setaffinity({tid})"
        );
    }
}

/// The calling thread's CPU set.
pub fn affinity() -> libc::cpu_set_t {
    // SAFETY: an all-zero cpu_set_t is a valid empty set, which the call fills.
    unsafe {
        let mut s: libc::cpu_set_t = std::mem::zeroed();
        assert_eq!(
            libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut s),
            0
        );
        s
    }
}

/// Gives the calling thread its CPU set `s` back.
pub fn restore(s: &libc::cpu_set_t) {
    // SAFETY: `s` is a valid CPU set the call only reads.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), s) };
}

/// Sets the calling thread's policy and priority.
pub fn set_class(policy: i32, priority: i32) -> i32 {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `p` is a valid sched_param the call only reads.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), policy, &p) }
}
