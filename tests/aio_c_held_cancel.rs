//! The C requests' twin of `aio_held_cancel.rs`: `aio_cancel` of a C request
//! that is done but held (a `lio_listio(LIO_NOWAIT)` list's request with a
//! notification, held until the call is out: see the library's `hold.rs`)
//! answers `AIO_ALLDONE` once it is let go of, on the thread engine as on
//! io_uring. The thread engine answered `AIO_NOTCANCELED` at once, as for a
//! request still running (the Rust cancel's fix had not reached the C one).
//!
//! The engine is the C ABI's (`CEngine`, as `libposixrt.so` runs it), forced
//! to the thread pool with `POSIXRT_AIO_BACKEND` (one test in this binary).
//! To cancel while the request is held, the test thread runs at `SCHED_FIFO`
//! on CPU 0, where the thread that lets go of held requests is pinned too:
//! that thread cannot run until the test thread sleeps. The pool's workers
//! are pinned to CPU 1, where the read completes meanwhile.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use posixrt::aio::capi::{error_code, Aiocb, CEngine};
use posixrt::aio::{Backend, Notify};

#[allow(unused_macros, unused_imports)]
mod common;
use common::c_engine::{aiocb, read_at};
#[path = "common/pinning.rs"]
mod pinning;
use pinning::{hold_the_holder, restore, set_class, spin_until_read};

/// Submits a one-entry `lio_listio(LIO_NOWAIT)` of a 64-byte read of `fd` at
/// `offset` into `buf`, notifying with `notify`, as the C call does; returns
/// the request's name.
fn list_read(
    eng: &CEngine,
    cb: &mut Aiocb,
    fd: i32,
    offset: i64,
    buf: &mut [u8],
    notify: Notify,
) -> u64 {
    cb.aio_fildes = fd;
    cb.aio_offset = offset;
    cb.aio_nbytes = buf.len();
    cb.aio_buf = buf.as_mut_ptr().cast();
    let req = read_at(cb, fd, offset, buf, notify);
    // SAFETY: `cb` and `buf` outlive the request (the test waits for it to be
    // done before either goes).
    let names =
        unsafe { eng.submit(vec![req], Some((Notify::None, false)), false) }.expect("submit");
    // The call's last step.
    drop(eng.end_call(&names));
    names[0]
}

/// Waits (at most 10 s) for `cb`'s status to leave EINPROGRESS; returns it.
fn status(eng: &CEngine, cb: &Aiocb) -> i32 {
    let t0 = Instant::now();
    loop {
        eng.poll();
        // SAFETY: `cb` is a live aiocb.
        let e = unsafe { error_code(cb) };
        if e != libc::EINPROGRESS || t0.elapsed() > Duration::from_secs(10) {
            return e;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn c_cancel_of_a_held_done_request_is_all_done_on_the_thread_engine() {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return;
    }
    // (The only test of this binary: nothing else reads the environment.)
    std::env::set_var("POSIXRT_AIO_BACKEND", "threads");
    let eng = CEngine::new(64, 2, 1024).expect("engine");
    assert_eq!(eng.backend().backend(), Backend::Threads);
    let f = common::disk_temp_file(&common::pattern(4096));
    let fd = f.as_raw_fd();
    let fired = Arc::new(AtomicUsize::new(0));
    let notify = || {
        let fired = Arc::clone(&fired);
        Notify::thread(0, move |_| {
            fired.fetch_add(1, Ordering::SeqCst);
        })
    };
    // A first list starts the thread that lets go of held requests (and the
    // page cache holds the file).
    let mut cb0 = aiocb();
    let mut buf0 = vec![0u8; 64];
    list_read(&eng, &mut cb0, fd, 0, &mut buf0, notify());
    assert_eq!(status(&eng, &cb0), 0);
    let Some(cpus) = hold_the_holder() else {
        return;
    };
    let mut cb = aiocb();
    let mut buf = vec![0u8; 64];
    let name = list_read(&eng, &mut cb, fd, 64, &mut buf, notify());
    // The read completes on CPU 1 and is held: the thread that lets it go
    // cannot run on CPU 0 while this one spins there (see `spin_until_read`).
    let want = &common::pattern(4096)[64..128];
    if !spin_until_read(buf.as_ptr(), want, &cpus) {
        let _ = status(&eng, &cb);
        return;
    }
    // SAFETY: `cb` is a live aiocb.
    let held = unsafe { error_code(&*cb) };
    let out = eng.cancel(name);
    assert_eq!(set_class(libc::SCHED_OTHER, 0), 0);
    restore(&cpus);
    assert_eq!(held, libc::EINPROGRESS, "the read was held when cancelled");
    assert_eq!(out, libc::AIO_ALLDONE, "AIO_ALLDONE, not AIO_NOTCANCELED");
    assert_eq!(status(&eng, &cb), 0, "the read succeeded");
    assert_eq!(cb.__return_value, 64);
    assert_eq!(&buf[..], &common::pattern(4096)[64..128]);
    let t0 = Instant::now();
    while fired.load(Ordering::SeqCst) < 2 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(fired.load(Ordering::SeqCst), 2, "each callback ran once");
}
