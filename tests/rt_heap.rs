//! Integration tests for `posixrt::sched::rt::prefault_heap` off the main thread:
//! what glibc does with a block it cannot keep in a thread's own arena.

use std::sync::{Mutex, MutexGuard};

use posixrt::sched::rt;
use posixrt::sched::Builder;
use posixrt::ErrorKind;

/// The resident set is the process's: one test measures it at a time.
fn serial() -> MutexGuard<'static, ()> {
    static M: Mutex<()> = Mutex::new(());
    M.lock().unwrap_or_else(|e| e.into_inner())
}

/// Resident set of this process in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A thread other than the main one allocates from its own glibc arena, whose
/// heaps are at most 64 MiB: a larger block is mapped on its own (whatever
/// `M_MMAP_MAX` says) and unmapped again by `free`. `prefault_heap(100 MiB)`
/// from such a thread returned `Ok` having kept nothing (the process's resident
/// set did not grow). It now says so, with the fix.
#[test]
fn a_heap_prefault_a_thread_arena_cannot_keep_is_refused_not_lost() {
    let _g = serial();
    let h = Builder::new()
        .spawn(|| {
            let before = rss_kib();
            let r = rt::prefault_heap(100 << 20);
            (before, rss_kib(), r)
        })
        .unwrap();
    let (before, after, r) = h.join().unwrap();
    let kept = after.saturating_sub(before);
    match r {
        Ok(()) => assert!(
            kept >= 90 << 10,
            "Ok, but only {kept} KiB of the 100 MiB stayed resident"
        ),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
            assert!(kept < 90 << 10, "refused, yet {kept} KiB stayed: {e}");
            let hint = e.hint().unwrap_or_default();
            assert!(hint.contains("main thread"), "{e}");
        }
    }
}

/// What a thread's arena can keep is still prefaulted from that thread, and stays.
#[test]
fn a_small_heap_prefault_off_the_main_thread_stays_resident() {
    let _g = serial();
    let h = Builder::new()
        .spawn(|| {
            let before = rss_kib();
            let r = rt::prefault_heap(16 << 20);
            (before, rss_kib(), r.map_err(|e| e.to_string()))
        })
        .unwrap();
    let (before, after, r) = h.join().unwrap();
    assert_eq!(r, Ok(()));
    assert!(
        after >= before + (15 << 10),
        "16 MiB prefaulted, RSS {before} -> {after} KiB"
    );
}
