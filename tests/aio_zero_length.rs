//! Reads of no bytes on descriptors the other tests leave out, on both engines:
//! they end as `read(2)` of no bytes does, at once, with the same result on
//! each engine. `both!(name, f)` makes `name::uring` and `name::threads`.

use std::io::{Read, Write};
use std::time::Duration;

use posixrt::aio::{Aio, Backend, Request};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::{ctx, pipe, pty};

/// Waits (bounded) until `req` is done; false if it is still in progress.
fn done_within<B: Send + 'static>(aio: &Aio, req: &Request<B>, t: Duration) -> bool {
    let _ = aio.suspend([req], Some(t));
    req.is_done()
}

/// A read of no bytes on a terminal returns 0 at once, as `read(2)` does, and
/// takes nothing: the line typed next is read whole. (On io_uring it waited
/// for input: the kernel arms a poll for a terminal's read, whatever its
/// length.)
fn terminal(b: Backend) {
    let aio = ctx(b);
    let (mut master, slave) = pty();
    let r = aio.read(&slave, 0, Vec::<u8>::new()).unwrap();
    assert!(
        done_within(&aio, &r, Duration::from_secs(10)),
        "{b:?}: a read of no bytes on a terminal waits for input"
    );
    let mut r = r;
    assert_eq!(r.aio_return().unwrap().result.unwrap(), 0, "{b:?}");
    master.write_all(b"line\n").unwrap();
    let mut line = [0u8; 16];
    let n = std::fs::File::from(slave).read(&mut line).unwrap();
    assert_eq!(&line[..n], b"line\n", "{b:?}");
}
both!(a_zero_byte_read_of_a_terminal_returns_at_once, terminal);

/// A read of no bytes on a descriptor not open for reading fails with EBADF,
/// as `read(2)` does. (The thread engine returned 0 for a pipe's write end:
/// it answered a read of no bytes on a pipe or socket without asking the
/// kernel.)
fn write_only(b: Backend) {
    let aio = ctx(b);
    let (_rd, wr) = pipe();
    let mut r = aio.read(&wr, 0, Vec::<u8>::new()).unwrap();
    assert!(
        done_within(&aio, &r, Duration::from_secs(10)),
        "{b:?}: a read of no bytes on a pipe's write end waits"
    );
    let e = r.aio_return().unwrap().result.unwrap_err();
    assert_eq!(e.errno(), Some(libc::EBADF), "{b:?}: {e}");
    assert_eq!(e.kind(), ErrorKind::BadFd, "{b:?}");
}
both!(
    a_zero_byte_read_of_a_write_only_pipe_end_is_ebadf,
    write_only
);

/// As [`terminal`], for a read that waited for room in the engine (the one
/// io_uring entry, or the one pool thread, held by a blocked write): issued
/// later, it still returns 0 without waiting for input. (On io_uring it went
/// to the kernel from the queue, where the terminal's poll was armed: it
/// waited for a line.)
fn terminal_queued(b: Backend) {
    let aio = common::one_slot(b);
    let (_master, slave) = pty();
    let Some(blocker) = common::blocker(&aio) else {
        return;
    };
    let r = aio.read(&slave, 0, Vec::<u8>::new()).unwrap();
    blocker.unblock();
    assert!(
        done_within(&aio, &r, Duration::from_secs(10)),
        "{b:?}: a queued read of no bytes on a terminal waits for input"
    );
    let mut r = r;
    assert_eq!(r.aio_return().unwrap().result.unwrap(), 0, "{b:?}");
}
both!(
    a_queued_zero_byte_read_of_a_terminal_returns_at_once,
    terminal_queued
);
