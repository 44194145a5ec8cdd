//! A request that needs a copy of its descriptor (every request on the thread
//! engine, and every pipe or socket write on io_uring) holds it until done. Out
//! of descriptors, submitting fails as POSIX says for "system resource
//! limitations": EAGAIN, with the cause and the fix in the error; the requests
//! already queued still complete.
//!
//! One test in this binary: it lowers the process's soft `RLIMIT_NOFILE`, which
//! would starve tests running beside it.

#[path = "common/uring.rs"]
mod uring;

use std::os::fd::AsRawFd;

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;

fn pipe() -> (std::os::fd::OwnedFd, std::os::fd::OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

fn nofile() -> libc::rlimit {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: fills a properly sized struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    l
}

fn set_nofile(l: &libc::rlimit) {
    // SAFETY: reads a properly sized struct; lowering the soft limit, or setting
    // it back, needs no privilege.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, l) }, 0);
}

/// Writes to a full pipe, each held (with its fd copy) until a reader drains
/// it, submitted until the descriptors run out.
fn writes_past_the_limit(b: Backend) {
    let aio = Aio::builder().backend(b).build().expect("AIO context");
    let (rd, wr) = pipe();
    // Full: every later write waits for the reader.
    rustix::fs::fcntl_setfl(&wr, rustix::fs::OFlags::NONBLOCK).unwrap();
    while rustix::io::write(&wr, &[7u8; 4096]).is_ok() {}
    rustix::fs::fcntl_setfl(&wr, rustix::fs::OFlags::empty()).unwrap();
    // Warm up (workers, rings, the fd's kind): the limit is for the copies.
    let mut w = aio.write(&wr, 0, vec![1u8; 1]).expect("first write");
    let saved = nofile();
    // Room for 24 more descriptors above the highest in use now.
    let probe = rustix::io::dup(&rd).unwrap();
    let low = libc::rlimit {
        rlim_cur: probe.as_raw_fd() as libc::rlim_t + 24,
        rlim_max: saved.rlim_max,
    };
    drop(probe);
    set_nofile(&low);
    let mut held = Vec::new();
    let err = loop {
        match aio.write(&wr, 0, vec![2u8; 1]) {
            Ok(r) => held.push(r),
            Err(e) => break e,
        }
        assert!(held.len() < 200, "{b:?}: no limit reached");
    };
    set_nofile(&saved);
    assert!(!held.is_empty(), "{b:?}: some writes were queued first");
    assert_eq!(err.errno(), Some(libc::EAGAIN), "{b:?}: {err}");
    assert_eq!(err.kind(), ErrorKind::OutOfResources, "{b:?}: {err}");
    assert!(
        err.to_string().contains("EMFILE"),
        "{b:?}: the cause is named: {err}"
    );
    assert!(
        err.hint().is_some_and(|h| h.contains("RLIMIT_NOFILE")),
        "{b:?}: {err}"
    );
    // The queued writes are unaffected: a reader drains the pipe, and each
    // writes its byte.
    let reader = std::thread::spawn(move || {
        let mut n = 0usize;
        let mut buf = vec![0u8; 1 << 16];
        while let Ok(k) = rustix::io::read(&rd, &mut buf) {
            if k == 0 {
                break;
            }
            n += k;
        }
        n
    });
    assert_eq!(w.wait().unwrap().result.unwrap(), 1);
    let queued = held.len();
    for mut r in held {
        assert_eq!(r.wait().unwrap().result.unwrap(), 1, "{b:?}");
    }
    drop(aio);
    drop(wr);
    let read = reader.join().unwrap();
    assert_eq!(read % 4096, 1 + queued, "{b:?}: every queued byte arrived");
}

#[test]
fn submitting_out_of_descriptors_is_eagain_with_a_hint() {
    if !uring::uring_refused() {
        writes_past_the_limit(Backend::Uring);
    }
    writes_past_the_limit(Backend::Threads);
}
