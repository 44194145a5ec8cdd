//! Integration tests of `posixrt::aio`. Every scenario runs on both backends
//! (io_uring and the thread pool): `both!(name, function)` makes `name::uring` and
//! `name::threads`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use posixrt::aio::{
    Aio, Backend, CancelResult, ListMode, Notify, Op, Request, SigVal, SyncMode, SI_ASYNCIO,
};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::{blocker, ctx, pattern, pipe};

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A scratch file in /tmp, removed when dropped.
struct Scratch {
    file: File,
    path: std::path::PathBuf,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn scratch(append: bool, content: &[u8]) -> Scratch {
    let path = std::env::temp_dir().join(format!(
        "posixrt-aio-test-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = File::create(&path).unwrap();
    f.write_all(content).unwrap();
    drop(f);
    let mut o = OpenOptions::new();
    o.read(true);
    if append {
        o.append(true);
    } else {
        o.write(true);
    }
    let file = o.custom_flags(libc::O_CLOEXEC).open(&path).unwrap();
    Scratch { file, path }
}

// ---------------------------------------------------------------- operations

fn read_write_fsync(b: Backend) {
    let aio = ctx(b);
    assert_eq!(aio.backend().backend(), b);
    let s = scratch(false, &[]);
    let data = pattern(10_000);
    let mut w1 = aio.write(&s.file, 0, data[..6000].to_vec()).unwrap();
    let mut w2 = aio.write(&s.file, 6000, data[6000..].to_vec()).unwrap();
    let mut fs = aio.fsync(&s.file, SyncMode::Sync).unwrap();
    let mut fd = aio.fsync(&s.file, SyncMode::DataSync).unwrap();
    assert_eq!(w1.wait().unwrap().result.unwrap(), 6000);
    assert_eq!(w2.wait().unwrap().result.unwrap(), 4000);
    assert_eq!(fs.wait().unwrap().result.unwrap(), 0);
    assert_eq!(fd.wait().unwrap().result.unwrap(), 0);
    let mut r = aio.read(&s.file, 1234, vec![0u8; 5000]).unwrap();
    aio.suspend([&r], None).unwrap();
    r.error().unwrap();
    let c = r.aio_return().unwrap();
    assert_eq!(*c.result.as_ref().unwrap(), 5000);
    assert_eq!(c.data(), &data[1234..6234]);
    // Read past the end: 0 bytes.
    let mut r = aio.read(&s.file, 20_000, vec![0u8; 10]).unwrap();
    assert_eq!(r.wait().unwrap().result.unwrap(), 0);
    // Box<[u8]> buffers work too.
    let mut r = aio
        .read(&s.file, 0, vec![0u8; 16].into_boxed_slice())
        .unwrap();
    let c = r.wait().unwrap();
    assert_eq!(&c.buf.unwrap()[..], &data[..16]);
}
both!(read_write_fsync_roundtrip, read_write_fsync);

fn aligned_buffers(b: Backend) {
    // posixrt::advise::AlignedBuf (the buffer O_DIRECT needs) is an owned buffer.
    use posixrt::advise::AlignedBuf;
    let aio = ctx(b);
    let data = pattern(8192);
    let s = scratch(false, &data);
    let mut r = aio
        .read(&s.file, 4096, AlignedBuf::new(4096, 4096).unwrap())
        .unwrap();
    let c = r.wait().unwrap();
    let buf = c.buf.unwrap();
    assert_eq!(buf.as_ptr() as usize % 4096, 0);
    assert_eq!(&buf[..], &data[4096..]);
    let mut w = aio
        .write(
            &s.file,
            0,
            AlignedBuf::from_slice(b"aligned!", 512).unwrap(),
        )
        .unwrap();
    assert_eq!(w.wait().unwrap().result.unwrap(), 8);
}
both!(aligned_buf_from_advise, aligned_buffers);

fn fsync_covers_earlier(b: Backend) {
    // An fsync waits for every earlier request on its fd: when it is done, so are they.
    let aio = ctx(b);
    let s = scratch(false, &[]);
    let writes: Vec<_> = (0..32)
        .map(|i| aio.write(&s.file, i * 4096, vec![i as u8; 4096]).unwrap())
        .collect();
    let mut f = aio.fsync(&s.file, SyncMode::DataSync).unwrap();
    f.wait().unwrap().result.unwrap();
    for w in &writes {
        assert!(
            w.is_done(),
            "an earlier write is still running after the fsync"
        );
    }
    for mut w in writes {
        assert_eq!(w.aio_return().unwrap().result.unwrap(), 4096);
    }
}
both!(fsync_covers_earlier_writes, fsync_covers_earlier);

fn return_twice(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, b"hello");
    let mut r = aio.read(&s.file, 0, vec![0u8; 5]).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.data(), b"hello");
    let e = r.aio_return().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyTaken);
    // aio_error still answers after aio_return.
    r.error().unwrap();
    assert_eq!(r.cancel().unwrap(), CancelResult::AllDone);
}
both!(return_taken_twice, return_twice);

fn in_progress_until_done(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    // A read from a pipe (offset ignored), like the examples reading stdin.
    let mut r = aio.read(&rd, 0, vec![0u8; 64]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(r.error().unwrap_err().kind(), ErrorKind::InProgress);
    assert_eq!(r.aio_return().unwrap_err().kind(), ErrorKind::InProgress);
    rustix::io::write(&wr, b"ping\n").unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.data(), b"ping\n");
}
both!(error_in_progress_then_done, in_progress_until_done);

/// A read waiting for a pipe's data completes while the thread that submitted
/// it spins in user space without a system call, and another thread waits for
/// it. On io_uring the kernel posts such a completion through work it queues
/// to the submitting thread; the rings let that work wait for the thread's
/// next entry into the kernel (`IORING_SETUP_COOP_TASKRUN`), which a timer
/// tick gives it. A ring that ran it only in the submitter's own
/// `io_uring_enter` (`IORING_SETUP_DEFER_TASKRUN`) would hold the completion
/// until the spin ends. (The spin is bounded: 10 s.)
fn completes_while_submitter_spins(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let seen = std::sync::atomic::AtomicBool::new(false);
    let (tx, rx) = std::sync::mpsc::channel();
    let spun_until_seen = std::thread::scope(|sc| {
        let spinner = sc.spawn(|| {
            let r = aio.read(&rd, 0, vec![0u8; 5]).unwrap();
            tx.send(r).unwrap();
            let t0 = Instant::now();
            while !seen.load(Ordering::Acquire) {
                if t0.elapsed() > Duration::from_secs(10) {
                    return false;
                }
                std::hint::spin_loop();
            }
            true
        });
        let mut r = rx.recv().unwrap();
        rustix::io::write(&wr, b"hello").unwrap();
        aio.suspend([&r], Some(Duration::from_secs(20))).unwrap();
        seen.store(true, Ordering::Release);
        let c = r.wait().unwrap();
        assert_eq!(c.data(), b"hello");
        spinner.join().unwrap()
    });
    assert!(
        spun_until_seen,
        "the completion waited for the submitting thread to stop spinning"
    );
}
both!(
    completes_while_the_submitter_spins,
    completes_while_submitter_spins
);

fn suspend_timeout(b: Backend) {
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let r = aio.read(&rd, 0, vec![0u8; 8]).unwrap();
    let t0 = Instant::now();
    let e = aio
        .suspend([Some(&r), None], Some(Duration::from_millis(50)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TimedOut);
    assert_eq!(e.errno(), Some(libc::EAGAIN));
    assert!(t0.elapsed() >= Duration::from_millis(50));
    assert_eq!(r.error().unwrap_err().kind(), ErrorKind::InProgress);
    assert_eq!(r.cancel().unwrap(), CancelResult::Canceled);
    // An empty list is done at once.
    aio.suspend(Vec::<Option<&Request<Vec<u8>>>>::new(), None)
        .unwrap();
}
both!(suspend_timeout_expires, suspend_timeout);

fn suspend_any(b: Backend) {
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let s = scratch(false, b"abc");
    let blocked = aio.read(&rd, 0, vec![0u8; 8]).unwrap();
    let mut ready = aio.read(&s.file, 0, vec![0u8; 3]).unwrap();
    aio.suspend([&blocked, &ready], None).unwrap();
    assert!(ready.is_done());
    assert!(!blocked.is_done());
    assert_eq!(ready.aio_return().unwrap().data(), b"abc");
    // A taken request counts as done.
    aio.suspend([&blocked, &ready], Some(Duration::from_secs(5)))
        .unwrap();
}
both!(suspend_returns_when_any_done, suspend_any);

// ------------------------------------------------------------------- cancel

fn cancel_blocked_read(b: Backend) {
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let (tx, rx) = std::sync::mpsc::channel();
    let tx = Mutex::new(tx);
    let mut r = aio
        .submit(
            Op::read(&rd, 0, vec![0u8; 8]).notify(Notify::thread(7, move |v| {
                let _ = tx.lock().unwrap().send(v);
            })),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(r.cancel().unwrap(), CancelResult::Canceled);
    assert_eq!(r.error().unwrap_err().kind(), ErrorKind::Canceled);
    let c = r.aio_return().unwrap();
    assert_eq!(c.result.unwrap_err().errno(), Some(libc::ECANCELED));
    assert_eq!(c.buf.unwrap().len(), 8);
    // The cancelled request still notifies.
    assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), SigVal(7));
}
both!(cancel_read_from_empty_pipe, cancel_blocked_read);

fn cancel_everything_on_fd(b: Backend) {
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let s = scratch(false, b"x");
    let reqs: Vec<_> = (0..5)
        .map(|_| aio.read(&rd, 0, vec![0u8; 8]).unwrap())
        .collect();
    let mut other = aio.read(&s.file, 0, vec![0u8; 1]).unwrap();
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(
        aio.cancel_fd(rd.as_raw_fd()).unwrap(),
        CancelResult::Canceled
    );
    for mut r in reqs {
        assert_eq!(r.error().unwrap_err().kind(), ErrorKind::Canceled);
        assert!(r.aio_return().unwrap().result.is_err());
    }
    // The other fd's request was not touched.
    assert_eq!(other.wait().unwrap().result.unwrap(), 1);
    // Nothing left on the fd: all done.
    assert_eq!(
        aio.cancel_fd(rd.as_raw_fd()).unwrap(),
        CancelResult::AllDone
    );
}
both!(cancel_all_on_fd, cancel_everything_on_fd);

fn cancel_wakes_waiter(b: Backend) {
    // A thread waits on a request queued behind a blocked ordered write; another
    // thread cancels it before it reaches the engine: the waiter must wake up.
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let mut w0 = aio.write(&wr, 0, vec![1u8; cap]).unwrap();
    assert_eq!(w0.wait().unwrap().result.unwrap(), cap); // the pipe is now full
    let w1 = aio.write(&wr, 0, vec![2u8; 16]).unwrap(); // blocks in the engine
    let w2 = Arc::new(Mutex::new(aio.write(&wr, 0, vec![3u8; 16]).unwrap())); // queued behind w1
    std::thread::sleep(Duration::from_millis(20));
    let id = w2.lock().unwrap().id();
    let aio2 = aio.clone();
    let waiter = std::thread::spawn(move || aio2.suspend([id], None));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(w2.lock().unwrap().cancel().unwrap(), CancelResult::Canceled);
    // A liveness check, not a timing one: without a wake-up it would never return.
    assert!(
        wait_for(|| waiter.is_finished()),
        "the waiter was not woken by the cancel"
    );
    waiter.join().unwrap().unwrap();
    assert_eq!(w1.cancel().unwrap(), CancelResult::Canceled);
    drop(rd);
}
both!(cancel_of_queued_request_wakes_waiter, cancel_wakes_waiter);

/// A socket `a` (of a connected pair, with its peer) whose send buffer is
/// full: a write to it waits for the peer to read.
fn full_socket() -> (
    std::os::unix::net::UnixStream,
    std::os::unix::net::UnixStream,
) {
    let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
    a.set_nonblocking(true).unwrap();
    while (&a).write(&[0u8; 4096]).is_ok() {}
    a.set_nonblocking(false).unwrap();
    (a, b)
}

fn cancel_opens_gate(b: Backend) {
    // A read waits in the socket's queue behind a write, itself behind a
    // write that waits for room; cancelling the queued write lets the read
    // go: the engine must start it (the thread engine left it ready with
    // every worker asleep). Data for it is there already.
    let aio = ctx(b);
    let (a, mut peer) = full_socket();
    let mut w1 = aio.write(&a, 0, vec![1u8; 4096]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let w2 = aio.write(&a, 0, vec![2u8; 16]).unwrap();
    peer.write_all(b"hello").unwrap();
    let mut r3 = aio.read(&a, 0, vec![0u8; 16]).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    assert!(!r3.is_done(), "the read waits behind the writes");
    assert_eq!(w2.cancel().unwrap(), CancelResult::Canceled);
    // (A liveness bound: without a start the read would wait for ever.)
    aio.suspend([&r3], Some(Duration::from_secs(10))).unwrap();
    let c = r3.wait().unwrap();
    assert_eq!(c.data(), b"hello");
    assert_eq!(w1.cancel().unwrap(), CancelResult::Canceled);
    let _ = w1.wait();
}
both!(
    cancel_of_a_queued_write_starts_the_request_behind_it,
    cancel_opens_gate
);

fn let_go_opens_gate(b: Backend) {
    // Two writes of one LIO_NOWAIT list on a socket, each with a callback:
    // both are held until the call is out; the second waits behind the
    // first, which completes meanwhile: letting go of the first must start
    // the second.
    let aio = ctx(b);
    let (a, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
    for round in 0..20 {
        let ops = vec![
            Some(Op::write(&a, 0, vec![1u8; 16]).notify(Notify::thread(0, |_| {}))),
            Some(Op::write(&a, 0, vec![2u8; 16]).notify(Notify::thread(0, |_| {}))),
        ];
        let list = aio.lio_listio(ListMode::NoWait, ops, Notify::None).unwrap();
        // (A liveness bound: without a start the second write would wait for
        // ever.)
        assert!(
            wait_for(|| list.is_done()),
            "round {round}: the second write was not started"
        );
        drop(list);
    }
}
both!(
    letting_go_of_a_held_write_starts_the_request_behind_it,
    let_go_opens_gate
);

/// The send buffer size of `fd` (`SO_SNDBUF`).
fn send_buffer(fd: &impl AsRawFd) -> usize {
    let mut v: libc::c_int = 0;
    let mut l = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `l` are valid for writes of an int and its length.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&mut v as *mut libc::c_int).cast(),
            &mut l,
        )
    };
    assert_eq!(r, 0, "getsockopt(SO_SNDBUF)");
    v as usize
}

fn cancel_leaves_datagram_write(b: Backend) {
    // Writes of half the send buffer each to a datagram socket nobody reads:
    // two fit, the third waits for room, the rest wait behind it (a socket's
    // writes keep their order). A cancel leaves the waiting one in progress,
    // as glibc: a datagram goes whole or not at all, and the thread engine's
    // send cannot be interrupted. io_uring used to cancel it.
    let aio = ctx(b);
    let (tx, rx) = std::os::unix::net::UnixDatagram::pair().unwrap();
    let len = send_buffer(&tx) / 2;
    let mut reqs: Vec<_> = (0..8u8)
        .map(|k| aio.write(&tx, 0, vec![k; len]).unwrap())
        .collect();
    for r in &mut reqs[..2] {
        assert_eq!(r.wait().unwrap().result.unwrap(), len);
    }
    std::thread::sleep(Duration::from_millis(10));
    assert_eq!(reqs[2].error().unwrap_err().kind(), ErrorKind::InProgress);
    assert_eq!(
        aio.cancel_fd(tx.as_raw_fd()).unwrap(),
        CancelResult::NotCanceled
    );
    assert_eq!(reqs[2].error().unwrap_err().kind(), ErrorKind::InProgress);
    for r in &reqs[3..] {
        assert_eq!(r.error().unwrap_err().kind(), ErrorKind::Canceled);
    }
    assert_eq!(reqs[2].cancel().unwrap(), CancelResult::NotCanceled);
    // Room made: it goes whole, after the two before it, and nothing else.
    let mut got = vec![0u8; len + 1];
    for k in 0..2u8 {
        assert_eq!(rx.recv(&mut got).unwrap(), len);
        assert_eq!(got[0], k);
    }
    assert_eq!(reqs[2].wait().unwrap().result.unwrap(), len);
    rx.set_nonblocking(true).unwrap();
    assert_eq!(rx.recv(&mut got).unwrap(), len);
    assert_eq!(got[..len], vec![2u8; len][..]);
    assert_eq!(
        rx.recv(&mut got).unwrap_err().kind(),
        std::io::ErrorKind::WouldBlock
    );
}
both!(
    cancel_leaves_a_datagram_write_in_progress,
    cancel_leaves_datagram_write
);

/// A POSIX request belongs to the process: the thread that submitted it may
/// exit before it completes. (io_uring cancels a task's pending requests when
/// the task exits; the engine issues them again.)
fn outlives_submitter(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let rd = Arc::new(rd);
    let (aio2, rd2) = (aio.clone(), Arc::clone(&rd));
    let mut r = std::thread::spawn(move || aio2.read(&*rd2, 0, vec![0u8; 5]).unwrap())
        .join()
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(r.error().unwrap_err().kind(), ErrorKind::InProgress);
    rustix::io::write(&wr, b"later").unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.result.as_ref().copied().ok(), Some(5), "{:?}", c.result);
    assert_eq!(c.data(), b"later");
    // A full pipe's write, from a thread that exits, ends once read.
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let wr = Arc::new(wr);
    let (aio3, wr3) = (aio.clone(), Arc::clone(&wr));
    let mut w = std::thread::spawn(move || {
        let mut fill = aio3.write(&*wr3, 0, vec![1u8; cap]).unwrap();
        assert_eq!(fill.wait().unwrap().result.unwrap(), cap);
        aio3.write(&*wr3, 0, vec![2u8; 16]).unwrap()
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(w.error().unwrap_err().kind(), ErrorKind::InProgress);
    let mut sink = vec![0u8; cap + 16];
    let mut got = 0;
    while got < cap {
        got += rustix::io::read(&*rd, &mut sink[got..cap]).unwrap();
    }
    assert_eq!(w.wait().unwrap().result.unwrap(), 16);
    assert_eq!(rustix::io::read(&*rd, &mut sink[cap..]).unwrap(), 16);
    assert_eq!(&sink[cap..], &[2u8; 16]);
}
both!(
    a_request_outlives_the_thread_that_submitted_it,
    outlives_submitter
);

fn cancel_done(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, b"done");
    let mut r = aio.read(&s.file, 0, vec![0u8; 4]).unwrap();
    aio.suspend([&r], None).unwrap();
    assert_eq!(r.cancel().unwrap(), CancelResult::AllDone);
    assert_eq!(
        aio.cancel_fd(s.file.as_raw_fd()).unwrap(),
        CancelResult::AllDone
    );
    assert_eq!(r.aio_return().unwrap().data(), b"done");
}
both!(cancel_already_done, cancel_done);

/// `cancel_fd` cancels every request still queued on the fd: here writes
/// queued behind one that waits in a full pipe (a pipe's writes run one at a
/// time, in order), none of which reaches the pipe.
fn cancel_fd_cancels_queued(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    // Nobody reads yet: the first write fills the pipe and waits for room.
    let big = aio.write(&wr, 0, vec![7u8; 1 << 20]).unwrap();
    let small: Vec<_> = (0..8)
        .map(|i| aio.write(&wr, 0, vec![i as u8 + 1; 512]).unwrap())
        .collect();
    let out = aio.cancel_fd(wr.as_raw_fd()).unwrap();
    assert_ne!(out, CancelResult::AllDone);
    for (i, r) in small.iter().enumerate() {
        let e = r.error().expect_err("a queued write ran");
        assert_eq!(e.kind(), ErrorKind::Canceled, "write {i}: {e}");
    }
    // Read until the first write is over (cancelled, cut short, or whole):
    // what reached the pipe is its bytes only.
    rustix::fs::fcntl_setfl(&rd, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let t0 = Instant::now();
    loop {
        let done = big.is_done();
        while let Ok(n) = rustix::io::read(&rd, &mut chunk) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&chunk[..n]);
        }
        if done {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the first write never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(got.len() <= 1 << 20, "{} bytes", got.len());
    assert!(
        got.iter().all(|&x| x == 7),
        "a cancelled write reached the pipe"
    );
}
both!(
    cancel_fd_cancels_the_queued_requests,
    cancel_fd_cancels_queued
);

fn cancel_bad_fd(b: Backend) {
    let aio = ctx(b);
    let e = aio.cancel_fd(100_000).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::BadFd);
    assert!(e.hint().unwrap().contains("100000"));
    // A request on a closed fd fails with EBADF. The fd is the highest one the
    // process may have (the kernel hands out the lowest free number, so the tests
    // running in parallel threads do not reuse it, as they would a just-closed one).
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let raw = lim.current.unwrap_or(1 << 20).min(1 << 20) as i32 - 1;
    // SAFETY: F_GETFD only asks whether `raw` is open.
    assert!(
        unsafe { libc::fcntl(raw, libc::F_GETFD) } < 0,
        "fd {raw} is open"
    );
    // SAFETY: the fd is closed; the engine must report EBADF, not touch memory.
    let bad = unsafe { std::os::fd::BorrowedFd::borrow_raw(raw) };
    let mut r = aio.read(bad, 0, vec![0u8; 4]).unwrap();
    let c = r.wait().unwrap();
    assert_eq!(c.result.unwrap_err().kind(), ErrorKind::BadFd);
}
both!(bad_fd_is_an_error, cancel_bad_fd);

// ------------------------------------------------------------------ ordering

fn ordered_append(b: Backend) {
    let aio = ctx(b);
    let s = scratch(true, b"");
    let n = 300;
    let reqs: Vec<_> = (0..n)
        .map(|i| aio.write(&s.file, 0, format!("{i:05}\n")).unwrap())
        .collect();
    for mut r in reqs {
        assert_eq!(r.wait().unwrap().result.unwrap(), 6);
    }
    let mut text = String::new();
    File::open(&s.path)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let want: String = (0..n).map(|i| format!("{i:05}\n")).collect();
    assert_eq!(text, want);
}
both!(ordered_o_append_writes, ordered_append);

fn ordered_pipe(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    // Each write in flight holds a copy of the fd: 2000 need more than a
    // default soft RLIMIT_NOFILE of 1024.
    let n = common::fd_room(2000);
    assert!(
        n >= 200,
        "RLIMIT_NOFILE's hard limit leaves room for {n} writes"
    );
    let reader = std::thread::spawn(move || {
        let mut f = File::from(rd);
        let mut s = String::new();
        f.read_to_string(&mut s).unwrap();
        s
    });
    let reqs: Vec<_> = (0..n)
        .map(|i| aio.write(&wr, 0, format!("{i:06}\n")).unwrap())
        .collect();
    for mut r in reqs {
        r.wait().unwrap().result.unwrap();
    }
    drop(wr);
    let want: String = (0..n).map(|i| format!("{i:06}\n")).collect();
    assert_eq!(reader.join().unwrap(), want);
}
both!(ordered_pipe_writes, ordered_pipe);

// ---------------------------------------------------------------- validation

fn invalid_args(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, b"abc");
    for p in [21, -1, 1000] {
        let e = aio
            .submit(Op::read(&s.file, 0, vec![0u8; 1]).reqprio(p))
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "reqprio {p}");
        assert_eq!(e.errno(), Some(libc::EINVAL));
        assert!(e.hint().unwrap().contains("AIO_PRIO_DELTA_MAX"));
    }
    let mut ok = aio
        .submit(Op::read(&s.file, 0, vec![0u8; 1]).reqprio(20))
        .unwrap();
    ok.wait().unwrap().result.unwrap();
    let e = aio.read(&s.file, -1, vec![0u8; 1]).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL));
    let e = aio.read(&s.file, i64::MAX - 2, vec![0u8; 16]).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL));
    assert!(e.to_string().contains("overflows"));
    let e = aio
        .submit(Op::read(&s.file, 0, vec![0u8; 1]).notify(Notify::signal(0, 1)))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // A list with one bad entry submits nothing.
    let e = aio
        .lio_listio(
            ListMode::Wait,
            [
                Some(Op::read(&s.file, 0, vec![0u8; 1])),
                Some(Op::read(&s.file, 0, vec![0u8; 1]).reqprio(99)),
            ],
            Notify::None,
        )
        .err()
        .unwrap();
    assert_eq!(e.errno(), Some(libc::EINVAL));
}
both!(reqprio_and_offsets_checked, invalid_args);

fn priority_order(b: Backend) {
    // One engine slot, held by a blocked write (see `common::Blocker`); the
    // queued requests must then be issued lowest reqprio first, FIFO within a
    // level.
    let aio = common::one_slot(b);
    let s = scratch(false, &pattern(4096));
    let fd = s.file.as_raw_fd();
    // The order requests complete in is read from the trace (aio_submit and
    // aio_complete of this file's fd), not from SIGEV_THREAD callbacks: those
    // run on a pool, "as if in new threads", in no guaranteed order.
    let t = posixrt::trace::Trace::create(&posixrt::trace::TraceAttr::new()).unwrap();
    t.start().unwrap();
    let Some(blocker) = blocker(&aio) else {
        return;
    };
    let prios = [5, 0, 20, 0, 3, 1];
    let reqs: Vec<_> = prios
        .iter()
        .map(|&p| {
            aio.submit(Op::read(&s.file, 0, vec![0u8; 16]).reqprio(p))
                .unwrap()
        })
        .collect();
    blocker.unblock();
    for mut r in reqs {
        r.wait().unwrap().result.unwrap();
    }
    t.stop().unwrap();
    let mut submitted = Vec::new();
    let mut completed = Vec::new();
    for e in t.events() {
        let Ok(name) = t.eventid_name(e.id) else {
            continue;
        };
        let d = &e.data;
        if d.len() < 12 || i32::from_le_bytes(d[8..12].try_into().unwrap()) != fd {
            continue;
        }
        let req = u64::from_le_bytes(d[..8].try_into().unwrap());
        match name.as_str() {
            "aio_submit" => submitted.push(req),
            "aio_complete" => completed.push(req),
            _ => {}
        }
    }
    t.shutdown().unwrap();
    assert_eq!(submitted.len(), prios.len(), "{submitted:?}");
    let order: Vec<usize> = completed
        .iter()
        .filter_map(|r| submitted.iter().position(|x| x == r))
        .collect();
    assert_eq!(order, vec![1, 3, 5, 4, 0, 2]);
}
both!(issued_in_priority_order, priority_order);

static SCHED: Mutex<()> = Mutex::new(());

fn thread_priority_counts(b: Backend) {
    // POSIX: a request's priority is the submitting thread's minus reqprio. A
    // SCHED_FIFO 10 thread's reqprio-5 request goes before an earlier reqprio-0
    // request of a SCHED_OTHER thread. Both read one byte of a pipe holding
    // 0, 1: each gets its issue rank (the order of notification callbacks,
    // which run on a pool of threads, would not tell it).
    let _g = SCHED.lock().unwrap_or_else(|p| p.into_inner());
    let aio = common::one_slot(b);
    let (rd, wr) = pipe();
    rustix::io::write(&wr, &[0u8, 1]).unwrap();
    let rd = Arc::new(rd);
    let Some(blocker) = blocker(&aio) else {
        return;
    };
    let mut normal = aio.read(&*rd, 0, vec![9u8; 1]).unwrap();
    let (aio2, rd2) = (aio.clone(), Arc::clone(&rd));
    let rt = std::thread::spawn(move || {
        let p = libc::sched_param { sched_priority: 10 };
        // SAFETY: sets this thread's own policy; it only submits and exits.
        let rc = unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &p) };
        let req = aio2
            .submit(Op::read(&*rd2, 0, vec![9u8; 1]).reqprio(5))
            .unwrap();
        (rc, req)
    });
    let (rc, mut rt_req) = rt.join().unwrap();
    blocker.unblock();
    let normal_byte = normal.wait().unwrap().data().to_vec();
    let rt_byte = rt_req.wait().unwrap().data().to_vec();
    if rc != 0 {
        // Without CAP_SYS_NICE the documented error is EPERM; nothing to order then.
        assert_eq!(rc, libc::EPERM);
        return;
    }
    assert_eq!(
        (rt_byte, normal_byte),
        (vec![0], vec![1]),
        "(rt, normal) issue ranks"
    );
}
both!(thread_priority_minus_reqprio, thread_priority_counts);

// -------------------------------------------------------------- notification

static SIG_SEEN: AtomicUsize = AtomicUsize::new(0);
static SIG_CODE: AtomicUsize = AtomicUsize::new(0);
static SIG_VALUE: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    unsafe {
        SIG_CODE.store((*info).si_code as usize, Ordering::SeqCst);
        SIG_VALUE.store((*info).si_value().sival_ptr as usize, Ordering::SeqCst);
    }
    SIG_SEEN.fetch_add(1, Ordering::SeqCst);
}

fn install(signo: i32) {
    common::install_handler(signo, on_signal);
}

static SIGNAL_TESTS: Mutex<()> = Mutex::new(());

fn wait_for(cond: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

fn signal_notify(b: Backend) {
    let _g = SIGNAL_TESTS.lock().unwrap_or_else(|p| p.into_inner());
    let signo = libc::SIGRTMIN() + 3;
    install(signo);
    let aio = ctx(b);
    let s = scratch(false, b"sig");
    let before = SIG_SEEN.load(Ordering::SeqCst);
    let mut r = aio
        .submit(Op::read(&s.file, 0, vec![0u8; 3]).notify(Notify::signal(signo, 0x5eed_usize)))
        .unwrap();
    assert!(
        wait_for(|| SIG_SEEN.load(Ordering::SeqCst) > before),
        "no signal"
    );
    assert_eq!(SIG_CODE.load(Ordering::SeqCst) as i32, SI_ASYNCIO);
    assert_eq!(SIG_VALUE.load(Ordering::SeqCst), 0x5eed);
    assert_eq!(r.aio_return().unwrap().data(), b"sig");
    // A list notifies once, when all are done.
    let before = SIG_SEEN.load(Ordering::SeqCst);
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            (0..6).map(|i| Some(Op::read(&s.file, i % 3, vec![0u8; 1]))),
            Notify::signal(signo, 0x11_usize),
        )
        .unwrap();
    list.wait_all().unwrap();
    assert!(wait_for(|| SIG_SEEN.load(Ordering::SeqCst) > before));
    assert_eq!(SIG_VALUE.load(Ordering::SeqCst), 0x11);
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(SIG_SEEN.load(Ordering::SeqCst), before + 1);
}
both!(signal_notification, signal_notify);

fn list_notify_once(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, &pattern(8192));
    let (rd, wr) = pipe();
    let fired = Arc::new(AtomicUsize::new(0));
    let f2 = Arc::clone(&fired);
    let mut entries: Vec<Option<Op<Vec<u8>>>> = (0..8)
        .map(|i| Some(Op::read(&s.file, i * 1024, vec![0u8; 1024])))
        .collect();
    entries.push(None);
    entries.push(Some(Op::nop()));
    entries.push(Some(Op::read(&rd, 0, vec![0u8; 4])));
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            entries,
            Notify::thread(42, move |v| {
                assert_eq!(v.int(), 42);
                f2.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    assert!(list.id(8).is_none() && list.id(9).is_none() && list.id(10).is_some());
    assert_eq!(list.len(), 11);
    // Not yet: the pipe read holds the list open.
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(fired.load(Ordering::SeqCst), 0);
    rustix::io::write(&wr, b"done").unwrap();
    list.wait_all().unwrap();
    assert!(wait_for(|| fired.load(Ordering::SeqCst) == 1));
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(fired.load(Ordering::SeqCst), 1);
    let data = pattern(8192);
    let mut reqs = list.into_requests();
    for (i, r) in reqs.iter_mut().take(8).enumerate() {
        let c = r.as_mut().unwrap().aio_return().unwrap();
        assert_eq!(c.data(), &data[i * 1024..(i + 1) * 1024]);
    }
}
both!(list_notification_fires_once, list_notify_once);

/// A list with nothing to submit notifies once, at once (as glibc's does).
fn empty_list_notify(b: Backend) {
    let aio = ctx(b);
    let fired = Arc::new(AtomicUsize::new(0));
    let f2 = Arc::clone(&fired);
    let entries: Vec<Option<Op<Vec<u8>>>> = vec![None, Some(Op::nop()), None];
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            entries,
            Notify::thread(5, move |v| {
                assert_eq!(v.int(), 5);
                f2.fetch_add(1, Ordering::SeqCst);
            }),
        )
        .unwrap();
    assert_eq!(list.len(), 3);
    assert!((0..3).all(|i| list.id(i).is_none()));
    assert!(wait_for(|| fired.load(Ordering::SeqCst) == 1));
    list.wait_all().unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(fired.load(Ordering::SeqCst), 1);
}
both!(an_empty_list_notifies_once, empty_list_notify);

fn list_wait(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, &pattern(4096));
    let w = scratch(false, b"");
    let list = aio
        .lio_listio(
            ListMode::Wait,
            [
                Some(Op::read(&s.file, 0, vec![0u8; 100])),
                Some(Op::write(&w.file, 0, b"written".to_vec())),
                None,
                Some(Op::fsync(&w.file, SyncMode::Sync)),
            ],
            Notify::None,
        )
        .unwrap();
    assert!(list.is_done());
    let mut reqs = list.into_requests();
    assert_eq!(
        reqs[0].as_mut().unwrap().aio_return().unwrap().data(),
        &pattern(4096)[..100]
    );
    assert_eq!(
        reqs[1]
            .as_mut()
            .unwrap()
            .aio_return()
            .unwrap()
            .result
            .unwrap(),
        7
    );
    assert_eq!(
        reqs[3]
            .as_mut()
            .unwrap()
            .aio_return()
            .unwrap()
            .result
            .unwrap(),
        0
    );
    let mut got = [0u8; 7];
    w.file.read_exact_at(&mut got, 0).unwrap();
    assert_eq!(&got, b"written");
}
both!(lio_wait_with_read_write_nop, list_wait);

fn list_take_all_and_drop(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, &pattern(4096));
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            [
                None,
                Some(Op::read(&s.file, 100, vec![0u8; 50])),
                Some(Op::nop()),
            ],
            Notify::None,
        )
        .unwrap();
    aio.suspend(list.ids(), None).unwrap();
    let all = list.take_all().unwrap();
    assert_eq!(all.len(), 3);
    assert!(all[0].is_none() && all[2].is_none());
    assert_eq!(all[1].as_ref().unwrap().data(), &pattern(4096)[100..150]);
    // Dropping a list whose requests cannot finish cancels them and returns.
    let (rd, wr) = pipe();
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            (0..4).map(|_| Some(Op::read(&rd, 0, vec![0u8; 16]))),
            Notify::None,
        )
        .unwrap();
    drop(list);
    assert_nothing_waits_on_pipe(&aio, &rd, &wr, b"after");
}

/// Nothing of `aio` waits on the pipe `rd` any more: `cancel_fd` finds all
/// done, and the next read gets `msg`, written to `wr`.
#[track_caller]
fn assert_nothing_waits_on_pipe(aio: &Aio, rd: &OwnedFd, wr: &OwnedFd, msg: &[u8]) {
    assert_eq!(
        aio.cancel_fd(rd.as_raw_fd()).unwrap(),
        CancelResult::AllDone
    );
    rustix::io::write(wr, msg).unwrap();
    let mut r = aio.read(rd, 0, vec![0u8; msg.len()]).unwrap();
    assert_eq!(r.wait().unwrap().data(), msg);
}
both!(list_take_all_and_drop_in_flight, list_take_all_and_drop);

fn dropped_reads_take_no_later_data(b: Backend) {
    // A dropped request is cancelled. On the thread engine a worker may be in
    // its non-blocking attempt at that moment (the lock released): the drop
    // used to return then, and the attempt, made after the data below was
    // written, took it, so the next read waited forever (about 1 run in 70
    // of `list_take_all_and_drop`). Many rounds make that window likely.
    let aio = ctx(b);
    let (rd, wr) = pipe();
    for round in 0..300u32 {
        let dropped: Vec<_> = (0..8)
            .map(|_| aio.read(&rd, 0, vec![0u8; 16]).unwrap())
            .collect();
        drop(dropped);
        let word = round.to_ne_bytes();
        rustix::io::write(&wr, &word).unwrap();
        let mut r = aio.read(&rd, 0, vec![0u8; 4]).unwrap();
        let _ = aio.suspend([r.id()], Some(Duration::from_secs(5)));
        assert!(
            r.is_done(),
            "round {round}: a dropped read took the data written after the drop"
        );
        assert_eq!(r.wait().unwrap().data(), &word[..], "round {round}");
    }
}
both!(
    dropped_reads_take_no_later_data_in_flight,
    dropped_reads_take_no_later_data
);

fn callback_resubmits(b: Backend) {
    // Listing 7.8's shape: each completion's callback takes the result and submits
    // the next read, until end of file.
    let aio = ctx(b);
    let data = pattern(64 * 1024 + 123);
    let s = Arc::new(scratch(false, &data));
    struct State {
        req: Option<Request<Vec<u8>>>,
        got: Vec<u8>,
        offset: i64,
        done: bool,
    }
    let st = Arc::new(Mutex::new(State {
        req: None,
        got: Vec::new(),
        offset: 0,
        done: false,
    }));
    fn on_done(aio: Aio, s: Arc<Scratch>, st: Arc<Mutex<State>>) -> Notify {
        Notify::thread(0, move |_| {
            let mut g = st.lock().unwrap();
            let mut r = g.req.take().expect("handle stored before the callback");
            let c = r.aio_return().unwrap();
            let n = c.result.unwrap();
            if n == 0 {
                g.done = true;
                return;
            }
            g.got.extend_from_slice(&c.buf.as_ref().unwrap()[..n]);
            g.offset += n as i64;
            let next = aio
                .submit(Op::read(&s.file, g.offset, c.buf.unwrap()).notify(on_done(
                    aio.clone(),
                    Arc::clone(&s),
                    Arc::clone(&st),
                )))
                .unwrap();
            g.req = Some(next);
        })
    }
    {
        let mut g = st.lock().unwrap();
        let first = aio
            .submit(Op::read(&s.file, 0, vec![0u8; 4096]).notify(on_done(
                aio.clone(),
                Arc::clone(&s),
                Arc::clone(&st),
            )))
            .unwrap();
        g.req = Some(first);
    }
    assert!(wait_for(|| st.lock().unwrap().done));
    assert_eq!(st.lock().unwrap().got, data);
}
both!(callback_that_resubmits, callback_resubmits);

// ------------------------------------------------------------------- futures

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(v) => return v,
            Poll::Pending => std::thread::park(),
        }
    }
}

fn futures_any_executor(b: Backend) {
    let aio = ctx(b);
    let s = scratch(false, &pattern(1000));
    let (rd, wr) = pipe();
    let r = aio.read(&s.file, 10, vec![0u8; 10]).unwrap();
    let c = block_on(r.into_future_helper()).unwrap();
    assert_eq!(c.data(), &pattern(1000)[10..20]);
    // A future that must wait for a wake-up.
    let r = aio.read(&rd, 0, vec![0u8; 5]).unwrap();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        rustix::io::write(&wr, b"later").unwrap();
    });
    let c = block_on(r.into_future_helper()).unwrap();
    assert_eq!(c.data(), b"later");
    t.join().unwrap();
    let list = aio
        .lio_listio(
            ListMode::NoWait,
            (0..4).map(|i| Some(Op::read(&s.file, i * 100, vec![0u8; 100]))),
            Notify::None,
        )
        .unwrap();
    let all = block_on(std::future::IntoFuture::into_future(list)).unwrap();
    for (i, c) in all.into_iter().enumerate() {
        assert_eq!(c.unwrap().data(), &pattern(1000)[i * 100..(i + 1) * 100]);
    }
}
both!(futures_on_a_minimal_executor, futures_any_executor);

trait IntoFutureHelper: std::future::IntoFuture + Sized {
    fn into_future_helper(self) -> Self::IntoFuture {
        std::future::IntoFuture::into_future(self)
    }
}
impl<T: std::future::IntoFuture> IntoFutureHelper for T {}

#[cfg(feature = "tokio")]
fn tokio_await(b: Backend) {
    let rt = common::multi_rt();
    let aio = ctx(b);
    let s = Arc::new(scratch(false, &pattern(64 * 1024)));
    rt.block_on(async move {
        let mut tasks = Vec::new();
        for i in 0..16i64 {
            let aio = aio.clone();
            let s = Arc::clone(&s);
            tasks.push(tokio::spawn(async move {
                let c = aio
                    .read(&s.file, i * 4096, vec![0u8; 4096])
                    .unwrap()
                    .await
                    .unwrap();
                assert_eq!(
                    c.data(),
                    &pattern(64 * 1024)[i as usize * 4096..(i as usize + 1) * 4096]
                );
                c.result.unwrap()
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t.await.unwrap();
        }
        assert_eq!(total, 64 * 1024);
        let (rd, wr) = pipe();
        let r = aio.read(&rd, 0, vec![0u8; 3]).unwrap();
        let w = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            rustix::io::write(&wr, b"tok").unwrap();
        });
        assert_eq!(r.await.unwrap().data(), b"tok");
        w.await.unwrap();
    });
}
#[cfg(feature = "tokio")]
both!(awaiting_under_tokio, tokio_await);

// ------------------------------------------------------------------- safety

fn drop_in_flight(b: Backend) {
    let aio = ctx(b);
    let (rd, wr) = pipe();
    for _ in 0..50 {
        let r = aio.read(&rd, 0, vec![0u8; 4096]).unwrap();
        drop(r);
    }
    // Data written now must not land in freed buffers (the requests were cancelled).
    let _ = rustix::io::write(&wr, &[1u8; 100]);
    let s = scratch(false, b"still works");
    let mut r = aio.read(&s.file, 0, vec![0u8; 11]).unwrap();
    assert_eq!(r.wait().unwrap().data(), b"still works");
    // Dropping the whole context with requests in flight returns (bounded).
    let (rd2, _wr2) = pipe();
    let reqs: Vec<_> = (0..10)
        .map(|_| aio.read(&rd2, 0, vec![0u8; 64]).unwrap())
        .collect();
    let t0 = Instant::now();
    drop(reqs);
    drop(aio);
    assert!(t0.elapsed() < Duration::from_secs(30));
}
both!(dropping_handles_and_context_in_flight, drop_in_flight);

// ------------------------------------------------------------------- stress

fn stress(b: Backend) {
    // 100k mixed operations from 2 threads, each also cancelling: every request ends
    // in exactly one final state and none is lost.
    const PER_THREAD: usize = 50_000;
    const BATCH: usize = 100;
    let aio = ctx(b);
    let src = Arc::new(scratch(false, &pattern(1 << 20)));
    let (rd, wr) = pipe();
    let rd = Arc::new(rd);
    let counts = Arc::new([
        AtomicUsize::new(0), // ok
        AtomicUsize::new(0), // cancelled
        AtomicUsize::new(0), // total final
    ]);
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let aio = aio.clone();
            let src = Arc::clone(&src);
            let rd = Arc::clone(&rd);
            let counts = Arc::clone(&counts);
            std::thread::spawn(move || {
                let dst = scratch(false, b"");
                let data = pattern(1 << 20);
                let mut rng = 0x9e3779b97f4a7c15u64 ^ t;
                let mut next = || {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng
                };
                let mut done = 0;
                while done < PER_THREAD {
                    let mut batch = Vec::with_capacity(BATCH);
                    for _ in 0..BATCH {
                        let k = next() % 16;
                        let off = (next() % ((1 << 20) - 512)) as i64;
                        let r = match k {
                            0 => (aio.read(&*rd, 0, vec![0u8; 8]).unwrap(), 0u8, off),
                            1 => (
                                aio.submit(Op::fsync(&dst.file, SyncMode::DataSync))
                                    .unwrap(),
                                1,
                                off,
                            ),
                            2..=5 => (aio.write(&dst.file, off, vec![7u8; 512]).unwrap(), 2, off),
                            _ => (aio.read(&src.file, off, vec![0u8; 512]).unwrap(), 3, off),
                        };
                        batch.push(r);
                    }
                    // Cancel every pipe read and some others.
                    let mut told = Vec::with_capacity(BATCH);
                    for (r, k, _) in &batch {
                        let c = if *k == 0 || next() % 8 == 0 {
                            Some(r.cancel().unwrap())
                        } else {
                            None
                        };
                        if *k == 0 {
                            assert_eq!(c, Some(CancelResult::Canceled), "pipe read not cancelled");
                        }
                        told.push(c);
                    }
                    aio.suspend(batch.iter().map(|(r, _, _)| r), None).unwrap();
                    for ((mut r, k, off), told) in batch.into_iter().zip(told) {
                        let c = r.wait().unwrap();
                        match c.result {
                            Ok(n) => {
                                assert_ne!(k, 0, "a pipe read completed with no data");
                                assert_ne!(told, Some(CancelResult::Canceled));
                                if k == 3 {
                                    assert_eq!(n, 512);
                                    assert_eq!(
                                        c.buf.unwrap(),
                                        &data[off as usize..off as usize + 512]
                                    );
                                }
                                counts[0].fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                assert_eq!(e.kind(), ErrorKind::Canceled, "{e}");
                                assert_eq!(told, Some(CancelResult::Canceled));
                                counts[1].fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        counts[2].fetch_add(1, Ordering::Relaxed);
                        assert_eq!(r.aio_return().unwrap_err().kind(), ErrorKind::AlreadyTaken);
                    }
                    done += BATCH;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    drop(wr);
    let ok = counts[0].load(Ordering::Relaxed);
    let cancelled = counts[1].load(Ordering::Relaxed);
    assert_eq!(counts[2].load(Ordering::Relaxed), 2 * PER_THREAD);
    assert_eq!(ok + cancelled, 2 * PER_THREAD);
    assert!(
        cancelled >= 2 * PER_THREAD / 16 / 2,
        "too few cancels: {cancelled}"
    );
}
both!(stress_100k_mixed_with_cancels, stress);

// ------------------------------------------------- the examples' line counter

#[path = "../examples/support/newlines.rs"]
#[allow(dead_code)]
mod newlines;

#[test]
fn newline_counter_matches_naive_count() {
    let mut x = 12345u64;
    for len in [
        0usize,
        1,
        31,
        32,
        127,
        128,
        129,
        8160,
        32 * 1024 + 77,
        300_000,
    ] {
        let buf: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if x % 5 == 0 {
                    b'\n'
                } else {
                    b'a'
                }
            })
            .collect();
        let naive = buf.iter().filter(|&&b| b == b'\n').count();
        assert_eq!(newlines::count_newlines(&buf), naive, "len {len}");
    }
    // All newlines: the byte lanes must not wrap.
    assert_eq!(newlines::count_newlines(&vec![b'\n'; 100_000]), 100_000);
}

#[test]
fn builder_checks_sizes() {
    let e = Aio::builder().entries(100).build().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.hint().unwrap().contains("power of two"));
    let e = Aio::builder().workers(0).build().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let aio = Aio::builder()
        .backend(Backend::Threads)
        .workers(2)
        .build()
        .unwrap();
    assert!(aio.backend().reason().contains("2 workers"));
    assert!(!aio.backend().is_fallback());
}

fn dropped_future_cancels(b: Backend) {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Poll, Wake, Waker};
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let mut fut = Box::pin(aio.read(&rd, 0, vec![0u8; 8]).unwrap().into_future());
    let mut cx = Context::from_waker(&waker);
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Pending));
    drop(fut);
    // The dropped request no longer waits on the pipe: the next read gets the data.
    assert_nothing_waits_on_pipe(&aio, &rd, &wr, b"fresh");
}
both!(dropping_a_pending_future_cancels, dropped_future_cancels);

fn list_wait_with_failing_entry(b: Backend) {
    // lio_listio(LIO_WAIT) where one entry fails: C returns -1/EIO; here the list
    // comes back (it owns the buffers), `status()` is the EIO and each entry keeps
    // its own aio_error.
    let aio = ctx(b);
    let s = scratch(false, b"0123456789");
    let wonly = OpenOptions::new().write(true).open(&s.path).unwrap();
    let list = aio
        .lio_listio(
            ListMode::Wait,
            [
                Some(Op::read(&s.file, 2, vec![0u8; 3])),
                Some(Op::read(&wonly, 0, vec![0u8; 3])), // EBADF: not open for reading
                None,
                Some(Op::nop()),
            ],
            Notify::None,
        )
        .unwrap();
    let e = list.status().unwrap_err();
    assert_eq!(e.errno(), Some(libc::EIO));
    assert!(e.hint().unwrap().contains("List::error"));
    list.error(0).unwrap();
    assert_eq!(list.error(1).unwrap_err().kind(), ErrorKind::BadFd);
    for i in [2, 3, 99] {
        assert_eq!(list.error(i).unwrap_err().kind(), ErrorKind::InvalidInput);
    }
    let all = list.take_all().unwrap();
    assert_eq!(all[0].as_ref().unwrap().data(), b"234");
    assert_eq!(
        all[1].as_ref().unwrap().result.as_ref().unwrap_err().kind(),
        ErrorKind::BadFd
    );
    // An all-good list reports Ok; a running one InProgress.
    let ok = aio
        .lio_listio(
            ListMode::Wait,
            [Some(Op::read(&s.file, 0, vec![0u8; 1]))],
            Notify::None,
        )
        .unwrap();
    ok.status().unwrap();
    let (rd, wr) = pipe();
    let running = aio
        .lio_listio(
            ListMode::NoWait,
            [Some(Op::read(&rd, 0, vec![0u8; 1]))],
            Notify::None,
        )
        .unwrap();
    assert_eq!(running.status().unwrap_err().kind(), ErrorKind::InProgress);
    assert_eq!(running.error(0).unwrap_err().kind(), ErrorKind::InProgress);
    rustix::io::write(&wr, b"x").unwrap();
    running.wait_all().unwrap();
    running.status().unwrap();
}
both!(lio_wait_reports_failed_entry, list_wait_with_failing_entry);

fn drop_context_with_pending_pipe_read(b: Backend) {
    // Drop every handle and the context while reads on an empty pipe are pending.
    // Afterwards, data written to the pipe must still be in the pipe: had a read
    // survived the drop, the kernel (or a pool thread) would have consumed it into
    // a buffer the program no longer owns.
    let (rd, wr) = pipe();
    {
        let aio = ctx(b);
        let reqs: Vec<_> = (0..4)
            .map(|_| aio.read(&rd, 0, vec![0u8; 64]).unwrap())
            .collect();
        let list = aio
            .lio_listio(
                ListMode::NoWait,
                (0..4).map(|_| Some(Op::read(&rd, 0, vec![0u8; 64]))),
                Notify::None,
            )
            .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        assert!(reqs.iter().all(|r| !r.is_done()));
        drop(list);
        drop(reqs);
        drop(aio); // the last user: shuts down, bounded
    }
    let canary = b"canary-after-drop";
    assert_eq!(rustix::io::write(&wr, canary).unwrap(), canary.len());
    drop(wr);
    let mut got = Vec::new();
    File::from(rd).read_to_end(&mut got).unwrap();
    assert_eq!(got, canary, "a dropped request consumed pipe data");
}
both!(
    dropping_context_leaves_pipe_data_alone,
    drop_context_with_pending_pipe_read
);

fn fsync_waits_for_blocked_write(b: Backend) {
    // An fsync of a pipe is refused at submission (EINVAL: a pipe cannot be
    // synchronised); a write queued on the pipe is not disturbed by it.
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let mut fill = aio.write(&wr, 0, vec![1u8; cap]).unwrap();
    assert_eq!(fill.wait().unwrap().result.unwrap(), cap);
    let mut w = aio.write(&wr, 0, vec![2u8; 100]).unwrap();
    let e = aio.fsync(&wr, SyncMode::Sync).unwrap_err();
    assert_eq!(e.errno(), Some(libc::EINVAL));
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(w.error().unwrap_err().kind(), ErrorKind::InProgress);
    let mut sink = vec![0u8; cap + 100];
    let mut got = 0;
    while got < cap + 100 {
        got += rustix::io::read(&rd, &mut sink[got..]).unwrap();
    }
    assert_eq!(w.wait().unwrap().result.unwrap(), 100);
}
both!(
    fsync_waits_for_earlier_blocked_write,
    fsync_waits_for_blocked_write
);

fn long_pipe_write_is_whole(b: Backend) {
    // aio_write behaves like write(2) on a blocking fd: a write bigger than the
    // pipe returns every byte once the reader has drained it (io_uring on its own
    // completes such a write short, with what fitted in the pipe).
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let n = cap * 4 + 123;
    let data = pattern(n);
    let mut w = aio.write(&wr, 0, data.clone()).unwrap();
    let reader = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        let mut got = Vec::new();
        File::from(rd).read_to_end(&mut got).unwrap();
        got
    });
    assert_eq!(w.wait().unwrap().result.unwrap(), n);
    drop(wr);
    assert_eq!(reader.join().unwrap(), data);
}
both!(long_pipe_write_is_not_short, long_pipe_write_is_whole);

fn cancel_running_write(b: Backend) {
    // A write bigger than the pipe has started (the pipe is full of its first part)
    // when the cancel comes: it cannot be cancelled (AIO_NOTCANCELED), and its
    // result counts exactly the bytes that went into the pipe.
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let cap = rustix::pipe::fcntl_getpipe_size(&wr).unwrap();
    let mut w = aio.write(&wr, 0, vec![9u8; cap * 4]).unwrap();
    // Started once the pipe holds its first part (at most 10 s on a busy machine).
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while rustix::io::ioctl_fionread(&rd).unwrap() == 0 && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(w.cancel().unwrap(), CancelResult::NotCanceled);
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        File::from(rd).read_to_end(&mut got).unwrap();
        got.len()
    });
    let written = w.wait().unwrap().result.unwrap();
    assert!(
        written >= cap,
        "{written} bytes written, the pipe holds {cap}"
    );
    drop(aio);
    drop(wr);
    assert_eq!(reader.join().unwrap(), written);
}
both!(
    cancel_of_running_write_is_not_canceled,
    cancel_running_write
);

/// Child side of `reads_standard_input`: reads fd 0 to its end with aio reads and
/// prints the byte count and a checksum.
#[test]
#[ignore = "entry point of the child process started by reads_standard_input"]
fn stdin_child() {
    // Only as a child: run by hand (`--ignored`) it would wait on a terminal.
    let b = match std::env::var("POSIXRT_AIO_TEST_BACKEND").as_deref() {
        Ok("threads") => Backend::Threads,
        Ok("uring") => Backend::Uring,
        _ => return,
    };
    let aio = ctx(b);
    let stdin = std::io::stdin();
    let (mut total, mut sum) = (0usize, 0u64);
    let mut buf = vec![0u8; 4096];
    loop {
        let mut r = aio.read(&stdin, 0, buf).unwrap();
        aio.suspend([&r], None).unwrap();
        let c = r.aio_return().unwrap();
        let n = c.result.unwrap();
        buf = c.buf.unwrap();
        if n == 0 {
            break;
        }
        total += n;
        sum = buf[..n]
            .iter()
            .fold(sum, |s, &x| s.wrapping_mul(31).wrapping_add(x as u64));
    }
    println!("STDIN {total} {sum}");
}

fn reads_stdin(b: Backend) {
    // The examples read standard input: a child reads its stdin (a pipe fed in
    // pieces) to the end through aio, on this backend.
    use std::process::{Command, Stdio};
    let data = pattern(300_000);
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "stdin_child", "--nocapture", "-q"])
        .env(
            "POSIXRT_AIO_TEST_BACKEND",
            if b == Backend::Threads {
                "threads"
            } else {
                "uring"
            },
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    for part in data.chunks(70_001) {
        input.write_all(part).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let sum = data
        .iter()
        .fold(0u64, |s, &x| s.wrapping_mul(31).wrapping_add(x as u64));
    assert!(
        text.contains(&format!("STDIN {} {sum}", data.len())),
        "child said: {text}"
    );
}
both!(reads_standard_input, reads_stdin);
