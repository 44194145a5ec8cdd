//! The C engine with several io_uring rings (a test of its own: the C
//! engine's counters are process-wide). A C request submitted while others
//! are in flight is deferred (left in the ring, entered by the next call that
//! looks for results or submits); another thread's submission must then
//! enter it too, even when it sits in another ring.

use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use posixrt::aio::capi::{error_code, Aiocb, CEngine};
use posixrt::aio::Notify;
use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;
use common::c_engine::{aiocb, read, wait_within, HeldRead};

#[test]
fn a_deferred_request_in_another_ring_is_entered_by_another_threads_submission() {
    let hooks = Aio::builder().backend(Backend::Uring).build();
    let Ok(hooks) = hooks else {
        eprintln!("skipped: io_uring is refused here");
        return;
    };
    let engine = CEngine::new(64, 2, 1024).expect("C engine");
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        eprintln!("skipped: one CPU, one ring");
        return;
    }
    // A request that stays in flight, so that the next ones are deferred.
    let held = HeldRead::submit(&engine);
    // This thread's requests go into ring 1: a deferred read of a file. (A
    // first read makes the fd known as a regular file: a read of an fd not
    // yet seen is settled by its own call, never deferred.)
    let f = common::temp_file(b"data");
    let mut cb = aiocb();
    let mut buf = [0u8; 4];
    let r = read(&mut cb, f.as_raw_fd(), &mut buf);
    // SAFETY: as above; waited for at once.
    unsafe { engine.submit(vec![r], None, false) }.expect("submit");
    assert_eq!(wait_within(&engine, &cb, Duration::from_secs(5)), Ok(true));
    buf = [0u8; 4];
    hooks.__use_ring(Some(1));
    let r = read(&mut cb, f.as_raw_fd(), &mut buf);
    // SAFETY: as above.
    unsafe { engine.submit(vec![r], None, false) }.expect("submit");
    hooks.__use_ring(None);
    // Another thread submits a list (never deferred) into ring 0, a read of
    // the same file (no probe to settle, whose reaping would enter every ring).
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut cb2 = aiocb();
            let mut buf2 = [0u8; 4];
            let r = read(&mut cb2, f.as_raw_fd(), &mut buf2);
            // SAFETY: as above; waited below.
            unsafe { engine.submit(vec![r], Some((Notify::None, false)), false) }.expect("submit");
            let done = wait_within(&engine, &cb2, Duration::from_secs(5));
            assert_eq!(done, Ok(true));
        });
    });
    // The deferred read completes without a wait: polling (as aio_error does)
    // reaps it once some thread entered its ring.
    let cbp: *const Aiocb = &*cb;
    let deadline = Instant::now() + Duration::from_secs(2);
    // SAFETY: `cb` lives to the end of the test.
    while unsafe { error_code(cbp) } == libc::EINPROGRESS && Instant::now() < deadline {
        engine.poll();
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: as above.
    assert_eq!(
        unsafe { error_code(cbp) },
        0,
        "the deferred read was never entered"
    );
    assert_eq!(&buf, b"data");
    rustix::io::write(&held.wr, b"done").unwrap();
    assert_eq!(
        wait_within(&engine, &held.cb, Duration::from_secs(5)),
        Ok(true)
    );
}
