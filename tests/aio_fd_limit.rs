//! A request that needs a copy of its descriptor (every request on the thread
//! engine, and every pipe or socket write and every transfer of 256 KiB or
//! more on io_uring) holds it until done. Out
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

/// A large read of a regular file (io_uring sends it to the kernel's
/// workers, with a copy of its fd) submitted with every descriptor taken:
/// EAGAIN at submission, as on the thread engine, not a request that ends
/// with EMFILE (which `read(2)` never gives).
fn large_read_out_of_descriptors(b: Backend) {
    let aio = Aio::builder().backend(b).build().expect("AIO context");
    let f = common_file(512 << 10);
    // Warm up (workers, rings).
    let mut r = aio.read(&f, 0, vec![0u8; 4096]).expect("first read");
    assert_eq!(r.wait().unwrap().result.unwrap(), 4096);
    let saved = nofile();
    // The lowest free number: every one below it is taken.
    let probe = rustix::io::dup(&f).unwrap();
    let low = libc::rlimit {
        rlim_cur: probe.as_raw_fd() as libc::rlim_t,
        rlim_max: saved.rlim_max,
    };
    drop(probe);
    set_nofile(&low);
    let got = aio.read(&f, 0, vec![0u8; 256 << 10]);
    set_nofile(&saved);
    let err = match got {
        Ok(mut r) => panic!(
            "{b:?}: submitted, ended with {:?}",
            r.wait().unwrap().result
        ),
        Err(e) => e,
    };
    assert_eq!(err.errno(), Some(libc::EAGAIN), "{b:?}: {err}");
    assert_eq!(err.kind(), ErrorKind::OutOfResources, "{b:?}: {err}");
    // With descriptors again, the same read goes.
    let mut r = aio.read(&f, 0, vec![0u8; 256 << 10]).expect("read");
    assert_eq!(r.wait().unwrap().result.unwrap(), 256 << 10, "{b:?}");
}

/// A small read of a regular file while the rings are full (io_uring holds
/// it back, and copies its fd for later, under the engine lock), submitted
/// with every descriptor taken: EAGAIN, at submission (thread engine) or as
/// the request's error (io_uring), never EMFILE.
fn held_back_read_out_of_descriptors(b: Backend) {
    let aio = Aio::builder()
        .backend(b)
        .entries(4)
        .build()
        .expect("AIO context");
    let f = common_file(4096);
    // Reads that wait for data, as many as the rings take.
    let (rd, wr) = pipe();
    let waiting: Vec<_> = (0..64)
        .map(|_| aio.read(&rd, 0, vec![0u8; 1]).expect("pipe read"))
        .collect();
    let saved = nofile();
    let probe = rustix::io::dup(&f).unwrap();
    let low = libc::rlimit {
        rlim_cur: probe.as_raw_fd() as libc::rlim_t,
        rlim_max: saved.rlim_max,
    };
    drop(probe);
    set_nofile(&low);
    let got = aio.read(&f, 0, vec![0u8; 16]);
    set_nofile(&saved);
    let err = match got {
        Ok(mut r) => {
            // Done at once: it never went to the kernel.
            let e = r.aio_return().expect("done").result.expect_err("no fd");
            assert_eq!(e.errno(), Some(libc::EAGAIN), "{b:?}: {e}");
            None
        }
        Err(e) => Some(e),
    };
    if let Some(e) = err {
        assert_eq!(b, Backend::Threads, "io_uring: {e}");
        assert_eq!(e.errno(), Some(libc::EAGAIN), "{b:?}: {e}");
    }
    rustix::io::write(&wr, &[1u8; 64]).unwrap();
    for mut r in waiting {
        assert_eq!(r.wait().unwrap().result.unwrap(), 1, "{b:?}");
    }
}

/// A regular file of `n` bytes, its name removed at once.
fn common_file(n: usize) -> std::fs::File {
    use std::io::Write;
    let path = std::env::temp_dir().join(format!("posixrt-aio-fdlimit-{}", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(&vec![5u8; n]).unwrap();
    let _ = std::fs::remove_file(&path);
    f
}

#[test]
fn submitting_out_of_descriptors_is_eagain_with_a_hint() {
    if !uring::uring_refused() {
        writes_past_the_limit(Backend::Uring);
        large_read_out_of_descriptors(Backend::Uring);
        held_back_read_out_of_descriptors(Backend::Uring);
    }
    writes_past_the_limit(Backend::Threads);
    large_read_out_of_descriptors(Backend::Threads);
    held_back_read_out_of_descriptors(Backend::Threads);
}
