//! Request descriptions (the Rust shape of a `struct aiocb`): what to do, on which
//! fd, where, with which buffer, at which priority, and how to notify.

use std::os::fd::{AsFd, AsRawFd, RawFd};

use super::buf::{IoBuf, IoBufMut};
use super::core::{OpKind, RawOp};
use super::fsync::SyncMode;
use super::notify::Notify;
use crate::{Error, Result};

/// Largest `reqprio`: a request may lower its priority by at most this much
/// (`AIO_PRIO_DELTA_MAX`).
pub const AIO_PRIO_DELTA_MAX: i32 = 20;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Io(OpKind),
    Nop,
}

/// One asynchronous operation, ready to submit alone ([`Aio::submit`]) or in a
/// list ([`Aio::lio_listio`]).
///
/// The fields mirror `struct aiocb`: `aio_lio_opcode` (the constructor),
/// `aio_fildes`, `aio_offset`, `aio_buf`/`aio_nbytes` (the owned buffer),
/// `aio_reqprio` and `aio_sigevent`.
///
/// [`Aio::submit`]: super::Aio::submit
/// [`Aio::lio_listio`]: super::Aio::lio_listio
pub struct Op<B> {
    pub(crate) kind: Kind,
    pub(crate) fd: RawFd,
    pub(crate) offset: i64,
    pub(crate) buf: Option<B>,
    ptr_of: fn(&mut B) -> (usize, usize),
    pub(crate) reqprio: i32,
    pub(crate) notify: Notify,
}

fn read_ptr<B: IoBufMut>(b: &mut B) -> (usize, usize) {
    (b.stable_mut_ptr() as usize, b.bytes_len())
}

fn write_ptr<B: IoBuf>(b: &mut B) -> (usize, usize) {
    (b.stable_ptr() as usize, b.bytes_len())
}

fn no_ptr<B>(_: &mut B) -> (usize, usize) {
    (0, 0)
}

impl<B: IoBufMut> Op<B> {
    /// `LIO_READ` / `aio_read`: read `buf.len()` bytes from `fd` at `offset` into
    /// `buf`. On a pipe, socket or terminal the offset is ignored and the read takes
    /// the next bytes.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    pub fn read(fd: impl AsFd, offset: i64, buf: B) -> Op<B> {
        Op {
            kind: Kind::Io(OpKind::Read),
            fd: fd.as_fd().as_raw_fd(),
            offset,
            buf: Some(buf),
            ptr_of: read_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }
}

impl<B: IoBuf> Op<B> {
    /// `LIO_WRITE` / `aio_write`: write `buf` to `fd` at `offset`. On an `O_APPEND`
    /// fd the data goes to the end of the file; on a pipe, socket or terminal the
    /// offset is ignored. Either way writes land in the order they were submitted.
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    pub fn write(fd: impl AsFd, offset: i64, buf: B) -> Op<B> {
        Op {
            kind: Kind::Io(OpKind::Write),
            fd: fd.as_fd().as_raw_fd(),
            offset,
            buf: Some(buf),
            ptr_of: write_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }
}

impl<B> Op<B> {
    /// `LIO_NOP`: an entry `lio_listio` ignores.
    ///
    /// # References
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    pub fn nop() -> Op<B> {
        Op {
            kind: Kind::Nop,
            fd: -1,
            offset: 0,
            buf: None,
            ptr_of: no_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }

    /// `aio_fsync(op, aiocb)`: flush `fd` once every request queued on it before
    /// this one has finished (`O_SYNC` → `fsync`, `O_DSYNC` → `fdatasync`).
    ///
    /// # References
    /// - [`aio_fsync(3)`](https://man7.org/linux/man-pages/man3/aio_fsync.3.html)
    pub fn fsync(fd: impl AsFd, mode: SyncMode) -> Op<B> {
        Op {
            kind: Kind::Io(match mode {
                SyncMode::Sync => OpKind::Fsync,
                SyncMode::DataSync => OpKind::Fdatasync,
            }),
            fd: fd.as_fd().as_raw_fd(),
            offset: 0,
            buf: None,
            ptr_of: no_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }

    /// `aio_reqprio`: lower this request's priority by `delta` (0..=20,
    /// [`AIO_PRIO_DELTA_MAX`]). Out of range is refused with EINVAL at submission.
    /// When more requests are queued than the engine takes at once, they are issued
    /// highest effective priority first (the submitting thread's real-time priority
    /// minus `reqprio`; 0 for `SCHED_OTHER` threads), then in submission order.
    #[must_use]
    pub fn reqprio(mut self, delta: i32) -> Op<B> {
        self.reqprio = delta;
        self
    }

    /// `aio_sigevent`: how to notify when this request is done.
    #[must_use]
    pub fn notify(mut self, notify: Notify) -> Op<B> {
        self.notify = notify;
        self
    }

    /// True for `LIO_NOP`.
    pub fn is_nop(&self) -> bool {
        self.kind == Kind::Nop
    }

    /// Checks the request and computes what the engine needs. Does not consume the
    /// buffer, so a refused request gives nothing to the kernel.
    pub(crate) fn prepare(&mut self, call: &'static str) -> Result<(RawOp, u8)> {
        let Kind::Io(kind) = self.kind else {
            return Err(Error::invalid(call, "LIO_NOP is not a request"));
        };
        if !(0..=AIO_PRIO_DELTA_MAX).contains(&self.reqprio) {
            return Err(Error::invalid(
                call,
                format!("reqprio {} is out of range", self.reqprio),
            )
            .with_hint("aio_reqprio must be in 0..=AIO_PRIO_DELTA_MAX (20); it can only lower a request's priority"));
        }
        self.notify.validate(call)?;
        let (ptr, len) = match self.buf.as_mut() {
            Some(b) => (self.ptr_of)(b),
            None => (0, 0),
        };
        let mut ordered = matches!(kind, OpKind::Fsync | OpKind::Fdatasync);
        if matches!(kind, OpKind::Read | OpKind::Write) {
            if self.offset < 0 {
                return Err(
                    Error::invalid(call, format!("offset {} is negative", self.offset))
                        .with_hint("aio_offset must be >= 0"),
                );
            }
            if len > isize::MAX as usize
                || (self.offset as u64)
                    .checked_add(len as u64)
                    .map_or(true, |e| e > i64::MAX as u64)
            {
                return Err(Error::invalid(
                    call,
                    format!("offset {} + length {len} overflows off_t", self.offset),
                )
                .with_hint("keep aio_offset + aio_nbytes <= i64::MAX"));
            }
            if kind == OpKind::Write {
                ordered = is_stream_or_append(self.fd);
            }
        }
        Ok((
            RawOp {
                kind,
                fd: self.fd,
                offset: self.offset,
                ptr,
                len,
                ordered,
            },
            self.reqprio as u8,
        ))
    }
}

/// True for an `O_APPEND` fd or one that cannot seek (pipe, socket, terminal):
/// writes on it must land in submission order.
fn is_stream_or_append(fd: RawFd) -> bool {
    // SAFETY: fcntl(F_GETFL) on any int is safe; a bad fd gives -1.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return false; // the engine reports EBADF
    }
    if fl & libc::O_APPEND != 0 {
        return true;
    }
    // SAFETY: the fd was valid a moment ago; a closed fd gives EBADF, never UB.
    let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    match rustix::fs::fstat(bfd) {
        Ok(st) => !matches!(
            rustix::fs::FileType::from_raw_mode(st.st_mode),
            rustix::fs::FileType::RegularFile | rustix::fs::FileType::BlockDevice
        ),
        Err(_) => false,
    }
}
