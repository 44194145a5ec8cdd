//! One round of a request on a worker: the transfer (`RWF_NOWAIT` first
//! where it may serve at once, handing the queue on before a call that may
//! wait), a stream's non-blocking attempt, an fsync.

use std::os::fd::BorrowedFd;

use super::super::table::{OpKind, RawOp, MAX_RW};
use crate::sys::io::{self as sio, FdKind, Mode};
use crate::sys::prio::SchedClass;

/// What a worker needs to run one request, copied out of its slot.
pub(super) struct Job {
    pub(super) op: RawOp,
    pub(super) fd: i32,
    pub(super) kind: Option<FdKind>,
    pub(super) nonblock: bool,
    pub(super) class: SchedClass,
    /// Bytes already transferred by earlier rounds (a stream write).
    pub(super) done: i64,
    /// `kind` is what the fd number named last time (a regular file), not
    /// looked at for this request: an ESPIPE says it names a stream now.
    pub(super) assumed: bool,
    /// The fd is (or its number was last seen) `O_DIRECT`: a transfer waits
    /// for the device even with `RWF_NOWAIT`.
    pub(super) direct: bool,
    /// A transfer is tried with `RWF_NOWAIT` first: the file its number names
    /// was not seen to refuse the flag for this kind of transfer.
    pub(super) nowait: bool,
    /// The file refused `RWF_NOWAIT` (EOPNOTSUPP: buffered writes on many
    /// file systems, tmpfs reads): recorded for its number by the worker, so
    /// that later transfers skip the attempt.
    pub(super) refused: std::cell::Cell<bool>,
}

pub(super) enum Outcome {
    /// Final: bytes (including earlier rounds) or `-errno`.
    Done(i64),
    /// Would block: park until ready; `moved` more bytes went through this round.
    Park { moved: usize },
    /// The fd is not what was assumed (see `Job::assumed`): nothing moved.
    Relearn,
    /// The rest, after `moved` more bytes, is a write that only a blocking
    /// `write(2)` can make (a blocking terminal that polled writable): it runs
    /// off the worker (see `blocking`).
    Blocking { moved: usize },
}

/// Reads the kind and `O_NONBLOCK` of the job's fd (a C request's; the C
/// contract keeps it open until the request is done).
pub(super) fn learn_fd(job: &mut Job) {
    job.assumed = false;
    job.kind = sio::kind(borrow(job.fd)).ok();
    let fl = sio::status_flags(borrow(job.fd)).unwrap_or(0);
    job.nonblock = fl & libc::O_NONBLOCK != 0;
    job.direct = fl & libc::O_DIRECT != 0;
}

pub(super) fn borrow<'a>(fd: i32) -> BorrowedFd<'a> {
    // SAFETY: `fd` is the request's own descriptor copy (closed only when the
    // request completes, under the table lock that the caller holds or after
    // this use), or a C request's fd, which the C contract keeps open until the
    // request is done.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn res(r: std::result::Result<usize, i32>) -> i64 {
    match r {
        Ok(n) => n as i64,
        Err(e) => -(e as i64),
    }
}

/// Runs one round of a request; `hand_on` is called before a call that may
/// wait for a device, with true if that call may also block for good (see
/// the worker's `hand_on`).
pub(super) fn run(j: &Job, hand_on: &mut dyn FnMut(bool)) -> Outcome {
    let fd = j.fd;
    match j.op.kind {
        OpKind::Fsync => {
            hand_on(true);
            Outcome::Done(res(sio::fsync(borrow(fd)).map(|_| 0)))
        }
        OpKind::Fdatasync => {
            hand_on(true);
            Outcome::Done(res(sio::fdatasync(borrow(fd)).map(|_| 0)))
        }
        OpKind::Read | OpKind::Write => match j.kind {
            Some(k) if k.is_stream() => stream(j, k, hand_on),
            _ => positioned(j, hand_on),
        },
    }
}

/// The largest transfer tried with `RWF_NOWAIT` while its worker counts as
/// awake: a larger one, even from the page cache, holds its worker long
/// enough that the queue is handed on first.
const QUICK_MAX: usize = 256 << 10;

/// What an `RWF_NOWAIT` attempt left to do.
enum Left {
    /// Nothing: the result (the page cache served the whole request, or the
    /// file ended).
    Done(i64),
    /// The rest, after this many bytes, which may wait for the disk (0 also
    /// for an error: the usual call reports it).
    Rest(usize),
    /// The file refused the flag (EOPNOTSUPP): the usual call, which may
    /// wait.
    Refused,
}

/// `RWF_NOWAIT` transfer at the offset (see [`Left`]).
fn without_waiting(j: &Job, ptr: *mut u8, len: usize) -> Left {
    // SAFETY: (ptr, len) is the request's buffer (see `positioned`).
    let r = unsafe {
        match j.op.kind {
            OpKind::Read => sio::read(j.fd, ptr, len, Mode::AtNoWait(j.op.offset)),
            _ => sio::write(j.fd, ptr, len, Mode::AtNoWait(j.op.offset)),
        }
    };
    match r {
        Ok(n) if n == len || (n == 0 && j.op.kind == OpKind::Read) => Left::Done(j.done + n as i64),
        Ok(n) => Left::Rest(n),
        Err(libc::EOPNOTSUPP) => Left::Refused,
        Err(_) => Left::Rest(0),
    }
}

/// A transfer on a regular file or block device (blocking, EINTR retried).
/// A buffered one at an offset, of at most [`QUICK_MAX`] bytes, is tried
/// first without waiting for the disk (`RWF_NOWAIT`); what that leaves, and
/// every other transfer (ordered, `O_DIRECT`, larger, or on a file that
/// refuses the flag: buffered writes on many file systems, tmpfs and FUSE
/// reads), goes after `hand_on`, as it may wait.
fn positioned(j: &Job, hand_on: &mut dyn FnMut(bool)) -> Outcome {
    let mut len = j.op.len.min(MAX_RW);
    let mut ptr = j.op.ptr as *mut u8;
    let mut before = 0i64;
    let mode = if j.op.ordered {
        Mode::Stream
    } else if j.direct || !j.nowait || len == 0 || len > QUICK_MAX {
        Mode::At(j.op.offset)
    } else {
        match without_waiting(j, ptr, len) {
            Left::Done(n) => return Outcome::Done(n),
            Left::Refused => {
                j.refused.set(true);
                Mode::At(j.op.offset)
            }
            Left::Rest(n) => {
                // The rest, from where the page cache stopped.
                before = n as i64;
                len -= n;
                ptr = ptr.wrapping_add(n);
                Mode::At(j.op.offset + before)
            }
        }
    };
    // (A kind assumed from the number's past may be wrong: a pipe or socket
    // there now fails the call with ESPIPE at once, see `Outcome::Relearn`,
    // and the request stays interruptible meanwhile.)
    hand_on(!j.assumed);
    let done = |r: std::result::Result<usize, i32>| {
        // Bytes moved before an error are the result, as for a short transfer.
        if before > 0 && r.is_err() {
            j.done + before
        } else {
            j.done + before + res(r)
        }
    };
    loop {
        // SAFETY: (ptr, len) is the request's buffer, owned by the runtime until
        // the request completes (see the table); nothing else touches it.
        let r = unsafe {
            match j.op.kind {
                OpKind::Read => sio::read(j.fd, ptr, len, mode),
                _ => sio::write(j.fd, ptr, len, mode),
            }
        };
        match r {
            Err(libc::EINTR) => continue,
            Err(libc::ESPIPE) if j.assumed => return Outcome::Relearn,
            Err(libc::ESPIPE) if mode != Mode::Stream => {
                // SAFETY: as above.
                let r = unsafe {
                    match j.op.kind {
                        OpKind::Read => sio::read(j.fd, ptr, len, Mode::Stream),
                        _ => sio::write(j.fd, ptr, len, Mode::Stream),
                    }
                };
                return Outcome::Done(done(r));
            }
            other => return Outcome::Done(done(other)),
        }
    }
}

/// A transfer on a pollable descriptor: never blocks the worker. What would
/// block parks, a datagram write too (see [`retry`]); the write to a blocking
/// terminal that polled writable is given back as [`Outcome::Blocking`].
fn stream(j: &Job, k: FdKind, hand_on: &mut dyn FnMut(bool)) -> Outcome {
    let write = j.op.kind == OpKind::Write;
    if !write && j.op.len == 0 {
        // read(2) of no bytes returns 0 at once on a pipe, socket or
        // terminal; a recv would wait for data, and take a whole datagram.
        // A `preadv2` of no bytes checks, as read(2) does, that the fd is
        // open for reading (EBADF otherwise), then returns 0 without
        // reaching the file: it never waits.
        // SAFETY: no byte of the buffer is touched (length 0).
        let r = unsafe { sio::read(j.fd, j.op.ptr as *mut u8, 0, Mode::NoWait) };
        return Outcome::Done(j.done + res(r));
    }
    let sock = matches!(k, FdKind::Datagram | FdKind::StreamSocket);
    let mut mode = if sock {
        Mode::SocketNoWait
    } else {
        Mode::NoWait
    };
    let mut moved = 0usize;
    loop {
        let len = (j.op.len - moved).min(MAX_RW);
        let ptr = (j.op.ptr + moved) as *mut u8;
        // SAFETY: (ptr, len) lies in the request's buffer, owned by the runtime
        // until the request completes.
        let r = unsafe {
            if write {
                sio::write(j.fd, ptr, len, mode)
            } else {
                sio::read(j.fd, ptr, len, mode)
            }
        };
        let total = j.done + moved as i64;
        match r {
            Ok(n) => {
                moved += n;
                // A read takes what is there; a write goes on until all is
                // written, as write(2) on a blocking descriptor does.
                if !write || n == 0 || moved >= j.op.len || j.nonblock {
                    return Outcome::Done(j.done + moved as i64);
                }
            }
            Err(libc::EINTR) => {}
            Err(libc::EAGAIN) => {
                if j.nonblock {
                    return Outcome::Done(if total > 0 {
                        total
                    } else {
                        -(libc::EAGAIN as i64)
                    });
                }
                // (A datagram write parks too, with nothing sent: it goes
                // whole or not at all; the poller retries it, see `retry`.)
                return Outcome::Park { moved };
            }
            Err(libc::EOPNOTSUPP) if mode == Mode::NoWait => {
                // No RWF_NOWAIT here (a terminal): on an O_NONBLOCK fd a plain
                // transfer does not block; else transfer once poll says ready.
                let ready = j.nonblock || sio::ready_now(borrow(j.fd), write);
                if ready && write && !j.nonblock {
                    // POLLOUT promises room for a byte or so only: the write
                    // may block until the terminal is read, off the worker.
                    return Outcome::Blocking { moved };
                }
                if ready {
                    // (A read that polled ready returns what is there.)
                    hand_on(true);
                    mode = Mode::Stream;
                    continue;
                }
                return Outcome::Park { moved };
            }
            Err(e) => {
                return Outcome::Done(if total > 0 { total } else { -(e as i64) });
            }
        }
    }
}

/// Tries a parked datagram write again without waiting (`MSG_DONTWAIT`): the
/// datagram goes whole or not at all. `None` if there is still no room (or a
/// signal came), else the result.
///
/// # Safety
///
/// `(ptr, len)` is a parked request's buffer, owned by the runtime until the
/// request completes, and `fd` its descriptor copy: the caller holds the table
/// lock, so neither is let go of meanwhile.
pub(super) unsafe fn retry(fd: i32, ptr: usize, len: usize) -> Option<i64> {
    // SAFETY: as the caller promises.
    let r = unsafe { sio::write(fd, ptr as *const u8, len.min(MAX_RW), Mode::SocketNoWait) };
    match r {
        Err(libc::EAGAIN) | Err(libc::EINTR) => None,
        other => Some(res(other)),
    }
}
