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

/// Pins the engine's thread that lets go of held requests to CPU 0, its pool
/// workers to CPU 1, and the calling thread to CPU 0 at SCHED_FIFO 10: that
/// thread cannot run until the caller sleeps. Returns the caller's CPU set
/// before, to give back with [`restore`]; `None` (and the set given back)
/// where SCHED_FIFO is refused (EPERM, without CAP_SYS_NICE): the hold cannot
/// be kept for a cancel to see.
pub fn hold_the_holder() -> Option<libc::cpu_set_t> {
    // (comm keeps 15 bytes of a thread's name: "posixrt-aio-hol".)
    let holder = tids_named("posixrt-aio-hol");
    assert_eq!(holder.len(), 1, "one thread lets go of held requests");
    pin(holder[0], 0);
    for w in tids_named("posixrt-aio-") {
        if w != holder[0] {
            pin(w, 1);
        }
    }
    let cpus = affinity();
    pin(0, 0);
    let rt = set_class(libc::SCHED_FIFO, 10);
    if rt != 0 {
        assert_eq!(rt, libc::EPERM, "SCHED_FIFO refused otherwise");
        restore(&cpus);
        return None;
    }
    Some(cpus)
}

/// After [`hold_the_holder`]: spins on CPU 0 (the holder cannot run there)
/// until the pool worker on CPU 1 has put `want` in the request's buffer at
/// `at`, then 20 ms more for it to mark the request done; at most 900 ms
/// (past that, RT throttling would let the holder run). True if the bytes
/// landed. If not (a loaded machine gave the worker no CPU), the case is
/// unproven: the caller's class and affinity `cpus` are restored, a line
/// says so, and the caller stops.
pub fn spin_until_read(at: *const u8, want: &[u8], cpus: &libc::cpu_set_t) -> bool {
    use std::time::{Duration, Instant};
    let landed = || {
        // (Volatile: the worker writes the buffer from another thread.)
        // SAFETY: the caller's request buffer of `want.len()` bytes, alive
        // until the request is done, only read here.
        (0..want.len()).all(|i| unsafe { std::ptr::read_volatile(at.add(i)) } == want[i])
    };
    let t0 = Instant::now();
    while !landed() && t0.elapsed() < Duration::from_millis(900) {
        std::hint::spin_loop();
    }
    if !landed() {
        assert_eq!(set_class(libc::SCHED_OTHER, 0), 0);
        restore(cpus);
        eprintln!("inconclusive: the worker did not run the read within 900 ms");
        return false;
    }
    let t1 = Instant::now();
    while t1.elapsed() < Duration::from_millis(20) {
        std::hint::spin_loop();
    }
    true
}
