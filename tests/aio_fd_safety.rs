//! I/O safety of `posixrt::aio` (issue 10, point 8) on both engines: a request
//! never uses the caller's descriptor number after the submitting call returns,
//! so closing the caller's handle early (and the number being reused by another
//! file) cannot redirect its I/O.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use posixrt::aio::{Aio, Backend};

mod common;
use common::both;

/// Opens memfds until one gets descriptor number `n` (the lowest free one is
/// taken; other tests may race for it, so try a few times).
fn reuse_number(n: i32) -> Option<OwnedFd> {
    let mut keep = Vec::new();
    for _ in 0..256 {
        let f = rustix::fs::memfd_create("intruder", rustix::fs::MemfdFlags::CLOEXEC).ok()?;
        if f.as_raw_fd() == n {
            return Some(f);
        }
        if f.as_raw_fd() > n + 64 {
            return None;
        }
        keep.push(f);
    }
    None
}

fn closing_early_cannot_redirect(b: Backend) {
    let aio = Aio::builder().backend(b).build().unwrap();
    let (rd, wr) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let mut fill = aio.write(&wr, 0, vec![1u8; cap]).unwrap();
    assert_eq!(fill.wait().unwrap().result.unwrap(), cap);
    // w1 blocks (the pipe is full); w2 waits behind it to keep write order, so
    // it starts only after this call has long returned.
    let mut w1 = aio.write(&wr, 0, vec![2u8; 100]).unwrap();
    let mut w2 = aio.write(&wr, 0, b"MARK".to_vec()).unwrap();
    let mut r = aio.read(&rd, 0, vec![0u8; 1]).unwrap();
    r.wait().unwrap().result.unwrap();
    let n = wr.as_raw_fd();
    // The caller closes its handle early, and the number goes to another file.
    drop(wr);
    let intruder = reuse_number(n);
    // Drain the pipe (another thread, while this one waits for the writes, which
    // reaps io_uring completions): every byte submitted must arrive there.
    let want = cap - 1 + 100 + 4;
    let reader = std::thread::spawn(move || {
        let mut rd = std::fs::File::from(rd);
        let mut got = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(5);
        rustix::fs::fcntl_setfl(&rd, rustix::fs::OFlags::NONBLOCK).unwrap();
        let mut buf = vec![0u8; 1 << 16];
        while got.len() < want && Instant::now() < deadline {
            match rd.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
        (rd, got)
    });
    assert_eq!(w1.wait().unwrap().result.unwrap(), 100);
    assert_eq!(w2.wait().unwrap().result.unwrap(), 4);
    let (mut rd, got) = reader.join().unwrap();
    if let Some(f) = &intruder {
        let st = rustix::fs::fstat(f).unwrap();
        assert_eq!(
            st.st_size, 0,
            "a write went to the file that reused the number"
        );
    }
    assert_eq!(got.len(), want, "bytes missing from the pipe");
    assert!(
        got.ends_with(b"MARK"),
        "the last write did not reach the pipe"
    );
    // The pipe's write end was closed by the request when it finished: EOF.
    let mut tail = [0u8; 1];
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match rd.read(&mut tail) {
            Ok(0) => break,
            Ok(_) => panic!("unexpected data"),
            Err(_) => {
                assert!(Instant::now() < deadline, "the request kept the pipe open");
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}
both!(
    closing_the_callers_fd_early_cannot_redirect_io,
    closing_early_cannot_redirect
);

fn queued_read_after_close(b: Backend) {
    // Reads held back (one ring entry / one worker busy) start after the call
    // returned: they must read the original file, not the one reusing its number.
    let aio = common::one_slot(b);
    let Some(hold) = common::blocker(&aio) else {
        return;
    };
    let orig = rustix::fs::memfd_create("orig", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::io::write(&orig, b"original").unwrap();
    let mut r = aio.read(&orig, 0, vec![0u8; 8]).unwrap();
    let n = orig.as_raw_fd();
    drop(orig);
    if let Some(f) = reuse_number(n) {
        rustix::io::write(&f, b"intruder").unwrap();
        // Keep it open until the read is done.
        hold.unblock();
        let c = r.wait().unwrap();
        assert_eq!(c.data(), b"original");
        drop(f);
    } else {
        hold.unblock();
        assert_eq!(r.wait().unwrap().data(), b"original");
    }
}
both!(
    a_queued_read_reads_the_original_file,
    queued_read_after_close
);

fn large_read_then_dup2(b: Backend) {
    // A read of 1 MiB from a SCHED_OTHER thread is the kind io_uring hands to its
    // kernel workers, which could look the descriptor number up only once they
    // start: the number must not matter after the call returned. Moving another
    // file onto it right away must not change the data the read returns.
    let aio = Aio::builder().backend(b).build().unwrap();
    let len = 1 << 20;
    let orig = rustix::fs::memfd_create("orig", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    let other = rustix::fs::memfd_create("other", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::io::write(&orig, &vec![b'o'; len]).unwrap();
    rustix::io::write(&other, &vec![b'x'; len]).unwrap();
    let mut wrong = 0;
    for _ in 0..50 {
        let mut fd = rustix::io::dup(&orig).unwrap();
        let mut r = aio.read(&fd, 0, vec![0u8; len]).unwrap();
        // The caller's number now names the other file.
        rustix::io::dup2(&other, &mut fd).unwrap();
        let c = r.wait().unwrap();
        assert_eq!(c.result.as_ref().copied().unwrap(), len);
        if c.data().iter().any(|&x| x != b'o') {
            wrong += 1;
        }
    }
    assert_eq!(
        wrong, 0,
        "reads returned the data of the file moved onto their fd number"
    );
}
both!(
    a_large_read_reads_the_file_it_was_given,
    large_read_then_dup2
);
