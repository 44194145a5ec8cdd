//! `LatencyStats` under an address-space limit too tight for its histogram:
//! the allocation failure is a panic `new` documents (and an error from
//! `try_new`), not an abort of the whole process. One test in this binary: it
//! lowers `RLIMIT_AS` for the process while it runs.

#[path = "common/panics.rs"]
mod panics;
use panics::quiet_expected_panic;

#[path = "common/address_space.rs"]
mod address_space;
use address_space::with_address_space_room;

use posixrt::sched::periodic::LatencyStats;
use posixrt::ErrorKind;

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
