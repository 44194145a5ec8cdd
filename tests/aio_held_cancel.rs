//! A cancel of a request that is done but held (a `LIO_NOWAIT` list's request
//! with a notification, held until the call is out: see the library's
//! `hold.rs`) answers `AllDone`, and the request shows done once it is let go
//! of, on the thread engine as on io_uring. The thread engine answered
//! `NotCanceled`, as for a request still running.
//!
//! To cancel while the request is held, the test thread runs at `SCHED_FIFO`
//! on CPU 0, where the thread that lets go of held requests is pinned too:
//! that thread cannot run until the test thread sleeps. The engine's pool
//! workers are pinned to CPU 1, where the read completes meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use posixrt::aio::{Backend, CancelResult, ListMode, Notify, Op};

#[allow(unused_macros, unused_imports)]
mod common;
use common::ctx;
#[path = "common/pinning.rs"]
mod pinning;
use pinning::{hold_the_holder, restore, set_class, spin_until_read};

fn cancel_held(b: Backend) {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    let aio = ctx(b);
    let f = common::disk_temp_file(&common::pattern(4096));
    let fired = Arc::new(AtomicUsize::new(0));
    let notify = || {
        let fired = Arc::clone(&fired);
        Notify::thread(0, move |_| {
            fired.fetch_add(1, Ordering::SeqCst);
        })
    };
    // A first list starts the thread that lets go of held requests (and the
    // page cache holds the file).
    let first = aio
        .lio_listio(
            ListMode::NoWait,
            [Some(Op::read(&f, 0, vec![0u8; 64]).notify(notify()))],
            Notify::None,
        )
        .unwrap();
    first.wait_all().unwrap();
    drop(first);
    let Some(cpus) = hold_the_holder() else {
        return;
    };
    let buf = vec![0u8; 64];
    // (The heap buffer stays where it is as the Vec moves into the request.)
    let at = buf.as_ptr() as usize;
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [Some(Op::read(&f, 64, buf).notify(notify()))],
            Notify::None,
        )
        .unwrap();
    // The read completes on CPU 1 and is held: the thread that lets it go
    // cannot run on CPU 0 while this one spins there (see `spin_until_read`).
    let want = &common::pattern(4096)[64..128];
    if !spin_until_read(at as *const u8, want, &cpus) {
        let _ = list.wait_all();
        return;
    }
    let mut reqs = list.into_requests();
    let r = reqs[0].as_mut().unwrap();
    let out = r.cancel();
    assert_eq!(set_class(libc::SCHED_OTHER, 0), 0);
    restore(&cpus);
    assert_eq!(out.unwrap(), CancelResult::AllDone);
    let c = r.wait().unwrap();
    assert_eq!(c.data(), &common::pattern(4096)[64..128]);
    drop(reqs);
    drop(aio);
    // The context's threads end (the next engine's are found by name).
    let t0 = Instant::now();
    while common::threads_named("posixrt-aio-hol") > 0 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(fired.load(Ordering::SeqCst), 2, "each callback ran once");
}
/// The thread engine: io_uring holds such a request without the thread this
/// test pins (its cancel said `AllDone` already).
#[test]
fn cancel_of_a_held_done_request_is_all_done() {
    cancel_held(Backend::Threads);
}
