//! Registered fds (`Aio::register_fd`): requests on a registered fd use the
//! file the fd named when it was registered (the rings' file table), every
//! ring has it (also one created later), the last guard dropped releases the
//! kernel's reference, and requests in flight keep their file.
//!
//! To see which file a request uses, a test puts another file at the
//! registered fd number (`dup2`): a request through the file table still
//! reads the first one, a request by number reads the second.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::Duration;

use posixrt::aio::{Aio, Backend};
use posixrt::ErrorKind;

#[allow(unused_macros, unused_imports)]
mod common;
use common::{both, ctx, pipe, replace, temp_file, uring};

/// Reads 4 bytes at offset 0 of `fd` through `aio`.
fn read4(aio: &Aio, fd: impl AsFd) -> Vec<u8> {
    try_read4(aio, fd).unwrap()
}

/// [`read4`], its error as a string.
fn try_read4(aio: &Aio, fd: impl AsFd) -> Result<Vec<u8>, String> {
    let e = |e: posixrt::Error| e.to_string();
    let mut r = aio.read(&fd, 0, vec![0u8; 4]).map_err(e)?;
    aio.suspend([&r], Some(Duration::from_secs(10)))
        .map_err(e)?;
    let c = r.aio_return().map_err(e)?;
    match c.result.map_err(e)? {
        4 => Ok(c.buf.unwrap_or_default()),
        n => Err(format!("read {n} bytes")),
    }
}

/// Registers `fd`, leaks the guard (`mem::forget`), puts `new`'s file at the
/// number, and registers the number again.
fn registered_after_a_leak<'a, F: AsFd>(
    aio: &Aio,
    fd: &'a F,
    new: &impl AsRawFd,
) -> posixrt::aio::RegisteredFd<'a> {
    std::mem::forget(aio.register_fd(fd).unwrap());
    replace(&fd.as_fd(), new);
    aio.register_fd(fd).unwrap()
}

fn reads_the_registered_file(b: Backend) {
    let aio = ctx(b);
    let a = temp_file(b"AAAA");
    let other = temp_file(b"BBBB");
    let reg = aio.register_fd(&a).unwrap();
    assert_eq!(reg.fd(), a.as_raw_fd());
    assert_eq!(reg.is_registered(), b == Backend::Uring);
    assert_eq!(read4(&aio, &a), b"AAAA");
    replace(&a, &other);
    // Through the file table on io_uring; by number on the thread engine.
    let want: &[u8] = if b == Backend::Uring {
        b"AAAA"
    } else {
        b"BBBB"
    };
    assert_eq!(read4(&aio, &a), want);
    // A write and an fsync through the table too.
    let mut w = aio.write(&a, 0, b"CCCC".to_vec()).unwrap();
    aio.suspend([&w], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(w.aio_return().unwrap().result.unwrap(), 4);
    let mut s = aio.fsync(&a, posixrt::aio::SyncMode::Sync).unwrap();
    aio.suspend([&s], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(s.aio_return().unwrap().result.unwrap(), 0);
    drop(reg);
    // Unregistered: by number, which names the other file now; the write
    // went there only on the thread engine.
    let want: &[u8] = if b == Backend::Uring {
        b"BBBB"
    } else {
        b"CCCC"
    };
    assert_eq!(read4(&aio, &a), want);
}
both!(registered_fd_reads_its_file, reads_the_registered_file);

/// On io_uring the file a registered fd named is the one read, written and
/// synced; the write shows in the first file, not the one now at the number.
#[test]
fn registered_writes_reach_the_registered_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = temp_file(b"AAAA");
    let keep = a.try_clone().unwrap();
    let other = temp_file(b"BBBB");
    let reg = aio.register_fd(&a).unwrap();
    replace(&a, &other);
    let mut w = aio.write(&a, 0, b"WWWW".to_vec()).unwrap();
    aio.suspend([&w], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(w.aio_return().unwrap().result.unwrap(), 4);
    drop(reg);
    let mut got = vec![0u8; 4];
    let _ = rustix::io::pread(&keep, &mut got, 0).unwrap();
    assert_eq!(&got, b"WWWW");
    let _ = rustix::io::pread(&other, &mut got, 0).unwrap();
    assert_eq!(&got, b"BBBB");
}

/// Registering twice counts two guards: the fd stays in the table until both
/// are dropped.
#[test]
fn the_last_guard_unregisters() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = temp_file(b"AAAA");
    let other = temp_file(b"BBBB");
    let first = aio.register_fd(&a).unwrap();
    let second = aio.register_fd(a.as_fd()).unwrap();
    assert!(second.is_registered());
    drop(first);
    replace(&a, &other);
    assert_eq!(
        read4(&aio, &a),
        b"AAAA",
        "still registered by the second guard"
    );
    drop(second);
    assert_eq!(read4(&aio, &a), b"BBBB");
}

/// A leaked guard keeps its registration: requests by the number still read
/// the registered file after the number is given another file (as when it is
/// closed and reused). Registering the number again then registers the new
/// file, told apart by its identity, and once that guard is dropped the number
/// reads the new file too.
#[test]
fn registering_a_reused_number_registers_its_new_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let a = temp_file(b"AAAA");
    let b = temp_file(b"BBBB");
    std::mem::forget(aio.register_fd(&a).unwrap());
    replace(&a, &b);
    assert_eq!(read4(&aio, &a), b"AAAA", "the leaked registration");
    let reg = aio.register_fd(&a).unwrap();
    assert!(reg.is_registered());
    assert_eq!(read4(&aio, &a), b"BBBB", "registered again");
    drop(reg);
    assert_eq!(read4(&aio, &a), b"BBBB", "by number once unregistered");
    let again = aio.register_fd(&a).unwrap();
    assert_eq!(read4(&aio, &a), b"BBBB", "a third registration");
    drop(again);
}

/// A number given another open of the same file (same inode, another mode)
/// after its guard was leaked is not the file registered: registering it again
/// registers the write-only open, and a write through it succeeds where the
/// leaked read-only open would refuse it (EBADF).
#[test]
fn a_reused_number_with_another_open_of_the_same_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let path = std::env::temp_dir().join(format!("posixrt-aio-test-{}-modes", std::process::id()));
    std::fs::write(&path, b"AAAA").unwrap();
    let ro = std::fs::File::open(&path).unwrap();
    let wo = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let reg = registered_after_a_leak(&aio, &ro, &wo);
    let mut w = aio.write(&ro, 0, b"BBBB".to_vec()).unwrap();
    aio.suspend([&w], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(w.aio_return().unwrap().result.map_err(|e| e.kind()), Ok(4));
    drop(reg);
}

/// Every eventfd shares one inode: a number given another eventfd after its
/// guard was leaked, registered again, reads the new eventfd's counter.
#[test]
fn a_reused_number_with_another_eventfd() {
    if common::uring::uring_refused() {
        return;
    }
    use rustix::event::{eventfd, EventfdFlags};
    let aio = ctx(Backend::Uring);
    let (e1, e2) = (
        eventfd(1, EventfdFlags::empty()).unwrap(),
        eventfd(2, EventfdFlags::empty()).unwrap(),
    );
    let reg = registered_after_a_leak(&aio, &e1, &e2);
    let mut r = aio.read(&e1, 0, vec![0u8; 8]).unwrap();
    aio.suspend([&r], Some(Duration::from_secs(10))).unwrap();
    let c = r.aio_return().unwrap();
    drop(reg);
    assert_eq!(c.data(), 2u64.to_ne_bytes(), "the new eventfd's counter");
}

/// Dropping the guard releases the rings' reference on the file: once the
/// program closes a pipe's registered write end, a reader sees end of file.
#[test]
fn dropping_the_guard_releases_the_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let (r, w) = pipe();
    let reg = aio.register_fd(&w).unwrap();
    let mut req = aio.write(&w, 0, b"hi".to_vec()).unwrap();
    aio.suspend([&req], Some(Duration::from_secs(10))).unwrap();
    assert_eq!(req.aio_return().unwrap().result.unwrap(), 2);
    drop(reg);
    drop(w);
    rustix::fs::fcntl_setfl(&r, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut buf = [0u8; 8];
    assert_eq!(rustix::io::read(&r, &mut buf).unwrap(), 2);
    // EAGAIN here would mean a ring still holds the write end.
    assert_eq!(rustix::io::read(&r, &mut buf).unwrap(), 0);
}

/// A read waiting in the kernel when its fd is unregistered goes on, on the
/// file it started with.
#[test]
fn a_request_in_flight_keeps_its_file() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let (r, w) = pipe();
    let reg = aio.register_fd(&r).unwrap();
    let mut req = aio.read(&r, 0, vec![0u8; 2]).unwrap();
    assert_eq!(
        aio.suspend([&req], Some(Duration::from_millis(50)))
            .unwrap_err()
            .kind(),
        ErrorKind::TimedOut
    );
    drop(reg);
    // The slot is free; a new registration takes another one.
    let other = temp_file(b"BBBB");
    let _again = aio.register_fd(&other).unwrap();
    rustix::io::write(&w, b"ok").unwrap();
    aio.suspend([&req], Some(Duration::from_secs(10))).unwrap();
    let c = req.aio_return().unwrap();
    assert_eq!(c.result.unwrap(), 2);
    assert_eq!(c.buf.as_deref(), Some(&b"ok"[..]));
}

/// A ring created after the registration has the fd too.
#[test]
fn a_later_ring_has_the_registered_fds() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let a = temp_file(b"AAAA");
    let other = temp_file(b"BBBB");
    let _reg = aio.register_fd(&a).unwrap();
    assert_eq!(aio.rings(), 1);
    let (go, ready) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    // The thread asserts nothing before the barriers (a failure there would
    // leave this one waiting): it returns what it read.
    let (before, after) = std::thread::scope(|s| {
        let t = s.spawn(|| {
            // Creates ring 1, which installs the registered fds.
            aio.__use_ring(Some(1));
            let before = try_read4(&aio, &a);
            ready.wait();
            go.wait();
            (before, try_read4(&aio, &a))
        });
        ready.wait();
        assert_eq!(aio.rings(), 2);
        replace(&a, &other);
        go.wait();
        t.join().unwrap()
    });
    assert_eq!(before.as_deref(), Ok(&b"AAAA"[..]));
    assert_eq!(
        after.as_deref(),
        Ok(&b"AAAA"[..]),
        "ring 1 reads through its table"
    );
    assert_eq!(read4(&aio, &a), b"AAAA");
}

/// The table is bounded: past it the error says so, and dropping a guard
/// makes room.
#[test]
fn the_table_is_bounded() {
    if common::uring::uring_refused() {
        return;
    }
    let nofile = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    if nofile.current.is_some_and(|n| n < 2048) {
        eprintln!("skipped: RLIMIT_NOFILE below 2048 makes the table smaller");
        return;
    }
    let aio = ctx(Backend::Uring);
    let f = temp_file(b"AAAA");
    let fds: Vec<OwnedFd> = (0..1024)
        .map(|_| f.as_fd().try_clone_to_owned().unwrap())
        .collect();
    let mut regs: Vec<_> = fds.iter().map(|fd| aio.register_fd(fd).unwrap()).collect();
    let extra = f.as_fd().try_clone_to_owned().unwrap();
    let e = aio.register_fd(&extra).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::OutOfResources);
    assert!(e.to_string().contains("1024"), "{e}");
    regs.truncate(1023);
    let reg = aio.register_fd(&extra).unwrap();
    assert_eq!(read4(&aio, &extra), b"AAAA");
    drop(reg);
}

/// The guard may outlive its context: dropping it then is harmless, and the
/// file is released all the same.
#[test]
fn a_guard_outliving_its_context() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = ctx(Backend::Uring);
    let (r, w) = pipe();
    let reg = aio.register_fd(&w).unwrap();
    drop(aio);
    drop(reg);
    drop(w);
    rustix::fs::fcntl_setfl(&r, rustix::fs::OFlags::NONBLOCK).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(rustix::io::read(&r, &mut buf).unwrap(), 0);
}

/// Threads register and drop the same fd while others read through it, and
/// each thread also registers fds of its own that come and go (so slots are
/// freed and reused): every read gets its file's bytes, none fails.
#[test]
fn registering_while_others_read() {
    if common::uring::uring_refused() {
        return;
    }
    let aio = uring(2);
    let shared = temp_file(b"SHRD");
    std::thread::scope(|s| {
        for k in 0..4u8 {
            let (aio, shared) = (&aio, &shared);
            s.spawn(move || {
                let mine = temp_file(&[b'a' + k; 4]);
                for i in 0..300 {
                    let g1 = (i % 3 == 0).then(|| aio.register_fd(shared).unwrap());
                    let g2 = (i % 2 == 0).then(|| aio.register_fd(&mine).unwrap());
                    let reads: Vec<_> = (0..4)
                        .map(|j| {
                            let fd = if j % 2 == 0 {
                                shared.as_fd()
                            } else {
                                mine.as_fd()
                            };
                            aio.read(fd, 0, vec![0u8; 4]).unwrap()
                        })
                        .collect();
                    drop(g1);
                    for (j, mut r) in reads.into_iter().enumerate() {
                        aio.suspend([&r], Some(Duration::from_secs(10))).unwrap();
                        let c = r.aio_return().unwrap();
                        assert_eq!(c.result.unwrap(), 4, "thread {k} round {i} read {j}");
                        let want = if j % 2 == 0 { *b"SHRD" } else { [b'a' + k; 4] };
                        assert_eq!(c.buf.as_deref(), Some(&want[..]), "thread {k} round {i}");
                    }
                    drop(g2);
                }
            });
        }
    });
}

/// A request issued again after a first attempt uses the fd number, never
/// the slot, which a guard dropped meanwhile may have freed: a socket read at
/// an offset, refused with ESPIPE through the table, is issued again at
/// offset -1 by number, which names another socket here.
#[test]
fn a_request_issued_again_leaves_the_slot() {
    if common::uring::uring_refused() {
        return;
    }
    use std::io::Write;
    use std::os::unix::net::UnixStream;
    let aio = ctx(Backend::Uring);
    let (a, mut a_peer) = UnixStream::pair().unwrap();
    let (b, mut b_peer) = UnixStream::pair().unwrap();
    a_peer.write_all(b"AAAA").unwrap();
    b_peer.write_all(b"BBBB").unwrap();
    let reg = aio.register_fd(&a).unwrap();
    replace(&a, &b);
    let mut r = aio.read(&a, 5, vec![0u8; 4]).unwrap();
    aio.suspend([&r], Some(Duration::from_secs(10))).unwrap();
    let c = r.aio_return().unwrap();
    assert_eq!(c.result.unwrap(), 4);
    assert_eq!(c.buf.as_deref(), Some(&b"BBBB"[..]));
    drop(reg);
}
