//! `LatencyStats` under an address-space limit too tight for its histogram:
//! the allocation failure is a panic `new` documents (and an error from
//! `try_new`), not an abort of the whole process. One test in this binary: it
//! lowers `RLIMIT_AS` for the process while it runs.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

use posixrt::sched::periodic::LatencyStats;
use posixrt::ErrorKind;

/// The process's address space in use (`VmSize`), in bytes.
fn vm_size() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmSize:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

/// Runs `f` with `RLIMIT_AS` at the address space in use plus `room` bytes.
fn with_address_space_room<R>(room: u64, f: impl FnOnce() -> R) -> R {
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain getrlimit/setrlimit calls on valid structs.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_AS, &mut old), 0);
        let low = libc::rlimit {
            rlim_cur: vm_size() + room,
            rlim_max: old.rlim_max,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &low), 0);
    }
    let r = f();
    // SAFETY: as above; restores the limit read before.
    unsafe { assert_eq!(libc::setrlimit(libc::RLIMIT_AS, &old), 0) };
    r
}

#[test]
fn a_histogram_that_cannot_be_allocated_is_not_an_abort() {
    quiet_expected_panic("LatencyStats::new");
    // 4 MiB of room: enough for the panic's own allocations, not for the
    // 8 MB histogram of MAX_BUCKETS.
    let (panicked, err) = with_address_space_room(4 << 20, || {
        // On a thread started under the limit: it cannot map an arena of its
        // own, so the histogram cannot come out of address space the process
        // reserved before.
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(|| {
                let panicked = std::panic::catch_unwind(|| {
                    LatencyStats::new(LatencyStats::MAX_BUCKETS)
                        .histogram()
                        .len()
                });
                let err =
                    LatencyStats::try_new(LatencyStats::MAX_BUCKETS).map(|s| s.histogram().len());
                (panicked, err)
            })
            .expect("a thread with a small stack")
            .join()
            .expect("the panic is caught in the thread")
    });
    let msg = panicked.expect_err("8 MB cannot be allocated under the limit");
    let msg = msg
        .downcast_ref::<String>()
        .map(String::as_str)
        .unwrap_or_default()
        .to_owned();
    assert!(msg.starts_with("LatencyStats::new"), "{msg}");
    assert!(msg.contains("try_new"), "{msg}");
    let e = err.expect_err("try_new: 8 MB cannot be allocated under the limit");
    assert_eq!(e.kind(), ErrorKind::OutOfResources, "{e}");
    assert!(e.to_string().contains("8000000 bytes"), "{e}");
    // Without the limit the same calls succeed.
    assert_eq!(
        LatencyStats::try_new(LatencyStats::MAX_BUCKETS)
            .unwrap()
            .histogram()
            .len(),
        LatencyStats::MAX_BUCKETS
    );
    assert_eq!(
        LatencyStats::new(LatencyStats::MAX_BUCKETS)
            .histogram()
            .len(),
        LatencyStats::MAX_BUCKETS
    );
}
