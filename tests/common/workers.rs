//! The thread engine's workers (`posixrt-aio-<n>`) as `/proc` shows them:
//! which sleep, and how often each went to sleep.

use std::time::Duration;

/// The `/proc/self/task/<tid>` directory of every thread of this process
/// whose name `pick`s, with its tid.
pub fn threads_where(pick: impl Fn(&str) -> bool) -> Vec<(u32, std::path::PathBuf)> {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|t| {
            let p = t.path();
            let comm = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
            let tid = t.file_name().to_str()?.parse().ok()?;
            pick(comm.trim()).then_some((tid, p))
        })
        .collect()
}

/// True for the name of a thread-engine worker, `posixrt-aio-<n>`.
pub fn pool_worker(comm: &str) -> bool {
    comm.strip_prefix("posixrt-aio-")
        .is_some_and(|r| r.bytes().all(|c| c.is_ascii_digit()))
}

/// `(tid, voluntary context switches)` of every `posixrt-aio-<n>` thread now,
/// and whether each sleeps in a futex call (`None` where `/proc` does not
/// show a thread's system call).
pub fn pool_threads() -> Vec<(u32, u64, Option<bool>)> {
    threads_where(pool_worker)
        .into_iter()
        .map(|(tid, p)| {
            let status = std::fs::read_to_string(p.join("status")).unwrap_or_default();
            let switches = status
                .lines()
                .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            let in_futex = std::fs::read_to_string(p.join("syscall"))
                .ok()
                .map(|s| s.split_whitespace().next() == Some(&libc::SYS_futex.to_string()));
            (tid, switches, in_futex)
        })
        .collect()
}

/// The workers of a pool started after `before` was taken (`pool_threads`'
/// tids then), once at least `least` of them run and every one sleeps in
/// the kernel, the same in two looks 5 ms apart (a thread seen in its futex
/// call may not have gone to sleep yet: its switch is counted when it does,
/// and a later look would take that for a wake-up); None (and a note) where
/// `/proc` does not show a thread's system call.
pub fn asleep_workers(before: &[u32], least: usize) -> Option<Vec<(u32, u64, Option<bool>)>> {
    let mut mine = Vec::new();
    let mut last: Vec<(u32, u64, Option<bool>)> = Vec::new();
    for _ in 0..2500 {
        mine = pool_threads();
        mine.retain(|t| !before.contains(&t.0));
        mine.sort_unstable();
        if mine.iter().any(|t| t.2.is_none()) {
            eprintln!("skipped: /proc does not show a thread's system call here");
            return None;
        }
        let asleep = mine.len() >= least && mine.iter().all(|t| t.2 == Some(true));
        if asleep && mine == last {
            break;
        }
        last = if asleep { mine.clone() } else { Vec::new() };
        std::thread::sleep(Duration::from_millis(if asleep { 5 } else { 2 }));
    }
    assert!(mine.len() >= least, "the pool's workers: {mine:?}");
    assert!(
        mine.iter().all(|t| t.2 == Some(true)),
        "a worker never slept: {mine:?}"
    );
    Some(mine)
}

/// The tids of `mine` (as `pool_threads` gave them earlier) that went to
/// sleep again since: the workers woken meanwhile.
pub fn woken_since(mine: &[(u32, u64, Option<bool>)]) -> Vec<u32> {
    let after = pool_threads();
    mine.iter()
        .filter(|t| after.iter().any(|a| a.0 == t.0 && a.1 > t.1))
        .map(|t| t.0)
        .collect()
}
