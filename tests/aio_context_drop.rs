//! A dropped context leaves nothing behind: its threads exit and its fds are
//! closed, on both engines. (Alone in its test binary: other tests' contexts
//! would change the counts.)

#[allow(unused_macros, unused_imports)]
mod common;

use std::time::{Duration, Instant};

use common::threads_named;
use posixrt::aio::{Aio, Backend};

/// The thread pool's threads: its poller (`posixrt-aio-poll`, cut to 15
/// bytes) and its workers (`posixrt-aio-0`, ...).
fn pool_threads() -> usize {
    threads_named("posixrt-aio-pol")
        + (0..10)
            .map(|d| threads_named(&format!("posixrt-aio-{d}")))
            .sum::<usize>()
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Waits up to 10 s for `f` to hold; true if it did.
fn eventually(f: impl Fn() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    f()
}

/// Ten contexts made, used (a read of a file and a read of a pipe left in
/// flight) and dropped, one after another.
fn make_and_drop(b: Backend) {
    let f = std::fs::File::open("/proc/self/exe").unwrap();
    for _ in 0..10 {
        let aio = Aio::builder().backend(b).build().unwrap();
        let mut r = aio.read(&f, 0, vec![0u8; 64]).unwrap();
        assert_eq!(r.wait().unwrap().data()[..4], b"\x7fELF"[..]);
        let (rd, _wr) = rustix::pipe::pipe().unwrap();
        let pending = aio.read(&rd, 0, vec![0u8; 8]).unwrap();
        drop(aio);
        drop(pending);
    }
}

#[test]
fn a_dropped_context_leaves_no_thread_or_fd() {
    let fds = open_fds();
    let mut engines = vec![Backend::Threads];
    if !common::uring::uring_refused() {
        engines.push(Backend::Uring);
    }
    for b in engines {
        make_and_drop(b);
        // The pool's poller used to stay in epoll_wait forever, holding the
        // context (its epoll and eventfd fds with it): 10 threads and 20 fds
        // were left here.
        assert!(
            eventually(|| pool_threads() == 0),
            "{b:?}: {} thread-pool threads left after the contexts were dropped",
            pool_threads()
        );
        assert!(
            eventually(|| open_fds() == fds),
            "{b:?}: {} fds open after the contexts were dropped, {fds} before",
            open_fds()
        );
    }
}
