//! Request descriptions (the Rust shape of a `struct aiocb`): what to do, on which
//! fd, where, with which buffer, at which priority, and how to notify.

use std::marker::PhantomData;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use super::buf::{IoBuf, IoBufMut};
use super::fsync::SyncMode;
use super::notify::Notify;
use super::table::{OpKind, RawOp};
use crate::sys::io::{self as sio, FdKind};
use crate::{Error, Result};

/// A file descriptor borrowed for `'fd`: `&T` for any `T: AsFd` (`&File`,
/// `&OwnedFd`, `&UnixStream`, `&Stdin`...) or a [`BorrowedFd<'fd>`].
///
/// An [`Op`] keeps the borrow until it is submitted, so the descriptor cannot be
/// closed (and its number reused by another file) between building a request and
/// submitting it.
///
/// # I/O safety
///
/// A submitted request never uses the caller's descriptor *number* after the
/// submitting call returns, so closing the caller's handle early cannot send the
/// I/O to another file:
/// - on io_uring, a request that enters the kernel during the call is bound to
///   the open file there (the kernel holds its own reference);
/// - a request that may start, or resume, after the call returns (held back in
///   a queue, every request of the thread engine, a write to a pipe or socket
///   that may be resumed after a short write) gets its own copy of the
///   descriptor (`F_DUPFD_CLOEXEC`), closed when the request is done.
///
/// Closing the caller's handle early therefore does not stop the I/O: the file
/// stays open until the request completes (cancel it first to stop it).
///
/// An unsubmitted [`Op`] keeps its descriptor borrowed:
///
/// ```compile_fail
/// use posixrt::aio::{Aio, Op};
/// let aio = Aio::new().unwrap();
/// let f = std::fs::File::open("/etc/hostname").unwrap();
/// let op = Op::read(&f, 0, vec![0u8; 4]);
/// drop(f); // error: `f` is still borrowed by `op`
/// aio.submit(op).unwrap();
/// ```
pub trait BorrowFd<'fd> {
    /// The borrowed descriptor.
    fn borrow_fd(self) -> BorrowedFd<'fd>;
}

impl<'fd, T: AsFd + ?Sized> BorrowFd<'fd> for &'fd T {
    #[inline]
    fn borrow_fd(self) -> BorrowedFd<'fd> {
        self.as_fd()
    }
}

impl<'fd> BorrowFd<'fd> for BorrowedFd<'fd> {
    #[inline]
    fn borrow_fd(self) -> BorrowedFd<'fd> {
        self
    }
}

/// A checked request, ready for the engine; still borrows the caller's fd.
pub(crate) struct Prepared<'fd> {
    pub raw: RawOp,
    pub reqprio: u8,
    /// The kind of the fd, if it was looked at.
    pub kind: Option<FdKind>,
    /// The fd is `O_NONBLOCK` (valid when `checked`).
    pub nonblock: bool,
    /// The fd is `O_APPEND` (valid when `checked`).
    pub append: bool,
    /// The fd is `O_DIRECT` (valid when `checked`).
    pub direct: bool,
    /// Kind and flags were looked at.
    pub checked: bool,
    /// The request's own copy of the fd, if one was taken.
    pub own: Option<OwnedFd>,
    pub fd: PhantomData<BorrowedFd<'fd>>,
}

impl<'fd> Prepared<'fd> {
    /// A request not looked at yet: `ordered` only for an fsync.
    #[inline(always)]
    pub(crate) fn new(
        kind: OpKind,
        fd: BorrowedFd<'fd>,
        offset: i64,
        ptr: usize,
        len: usize,
        reqprio: u8,
    ) -> Prepared<'fd> {
        Prepared {
            raw: RawOp {
                kind,
                fd: fd.as_raw_fd(),
                offset,
                ptr,
                len,
                ordered: matches!(kind, OpKind::Fsync | OpKind::Fdatasync),
            },
            reqprio,
            kind: None,
            nonblock: false,
            append: false,
            direct: false,
            checked: false,
            own: None,
            fd: PhantomData,
        }
    }

    /// What a read or write needs looked at before it goes to the engine: a
    /// write's fd kind and flags (writes to an `O_APPEND` file, a pipe or a
    /// socket keep their order), and on the thread engine (`threads`), for a
    /// write to a pipe or socket, or for a large transfer, a copy of the fd.
    #[inline(always)]
    pub(crate) fn look(&mut self, call: &'static str, threads: bool) -> Result<()> {
        let kind = self.raw.kind;
        if kind == OpKind::Write || threads {
            // A bad fd is reported by the engine (EBADF as the request's result).
            if self.check().is_ok() {
                let append = self.append;
                let stream = self.kind.is_some_and(FdKind::is_stream);
                if kind == OpKind::Write {
                    self.raw.ordered = append || stream;
                }
                if threads || (kind == OpKind::Write && stream) {
                    // Used after this call returns (see `BorrowFd`).
                    self.own().map_err(|e| copy_refused(call, e))?;
                }
            }
        }
        if !threads && self.own.is_none() && super::sqe::may_punt(kind, self.raw.len) {
            // A large transfer goes to the kernel's workers with a copy of
            // its fd: taken here, so that running out of descriptors fails
            // the call (EAGAIN), as on the thread engine, instead of ending
            // the request with EMFILE. (A bad fd is the engine's to report.)
            if let Err(e @ (libc::EMFILE | libc::ENFILE)) = self.own() {
                return Err(copy_refused(call, e));
            }
        }
        Ok(())
    }

    /// The caller's descriptor, borrowed for as long as `self`.
    #[inline]
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `raw.fd` came from a `BorrowedFd<'fd>` that `self` still
        // borrows (the PhantomData), so it is open for `self`'s life.
        unsafe { BorrowedFd::borrow_raw(self.raw.fd) }
    }

    /// Looks at the fd's kind and flags (if not done yet).
    pub(crate) fn check(&mut self) -> std::result::Result<(), i32> {
        if self.checked {
            return Ok(());
        }
        let fl = sio::status_flags(self.fd())?;
        self.nonblock = fl & libc::O_NONBLOCK != 0;
        self.append = fl & libc::O_APPEND != 0;
        self.direct = fl & libc::O_DIRECT != 0;
        self.kind = Some(sio::kind(self.fd())?);
        self.checked = true;
        Ok(())
    }

    /// Takes a copy of the fd for the request (if it has none yet).
    pub(crate) fn own(&mut self) -> std::result::Result<(), i32> {
        if self.own.is_none() {
            self.own = Some(sio::dup(self.fd())?);
        }
        Ok(())
    }
}

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
#[doc(alias = "aiocb")]
pub struct Op<'fd, B> {
    pub(crate) kind: Kind,
    pub(crate) fd: RawFd,
    pub(crate) borrow: PhantomData<BorrowedFd<'fd>>,
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

impl<'fd, B: IoBufMut> Op<'fd, B> {
    /// `LIO_READ` / `aio_read`: read `buf.len()` bytes from `fd` at `offset` into
    /// `buf`. On a pipe, socket or terminal the offset is ignored and the read takes
    /// the next bytes.
    ///
    /// # References
    /// - [`aio_read(3)`](https://man7.org/linux/man-pages/man3/aio_read.3.html)
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    #[doc(alias = "aio_read")]
    pub fn read(fd: impl BorrowFd<'fd>, offset: i64, buf: B) -> Op<'fd, B> {
        Op {
            kind: Kind::Io(OpKind::Read),
            fd: fd.borrow_fd().as_raw_fd(),
            borrow: PhantomData,
            offset,
            buf: Some(buf),
            ptr_of: read_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }
}

impl<'fd, B: IoBuf> Op<'fd, B> {
    /// `LIO_WRITE` / `aio_write`: write `buf` to `fd` at `offset`. On an `O_APPEND`
    /// fd the data goes to the end of the file; on a pipe, socket or terminal the
    /// offset is ignored. Either way writes land in the order they were submitted.
    ///
    /// # References
    /// - [`aio_write(3)`](https://man7.org/linux/man-pages/man3/aio_write.3.html)
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    #[doc(alias = "aio_write")]
    pub fn write(fd: impl BorrowFd<'fd>, offset: i64, buf: B) -> Op<'fd, B> {
        Op {
            kind: Kind::Io(OpKind::Write),
            fd: fd.borrow_fd().as_raw_fd(),
            borrow: PhantomData,
            offset,
            buf: Some(buf),
            ptr_of: write_ptr::<B>,
            reqprio: 0,
            notify: Notify::None,
        }
    }
}

impl<'fd, B> Op<'fd, B> {
    /// `LIO_NOP`: an entry `lio_listio` ignores.
    ///
    /// # References
    /// - [`lio_listio(3)`](https://man7.org/linux/man-pages/man3/lio_listio.3.html)
    #[doc(alias = "LIO_NOP")]
    pub fn nop() -> Op<'fd, B> {
        Op {
            kind: Kind::Nop,
            fd: -1,
            borrow: PhantomData,
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
    ///
    /// Checked at submission, as POSIX says the call itself fails: EBADF if `fd`
    /// is not open for writing, EINVAL if it cannot be synchronised (a pipe,
    /// socket, FIFO or terminal: only regular files, directories and block
    /// devices can). `reqprio` is ignored for an fsync, like every field other
    /// than the fd and the notification.
    #[doc(alias = "aio_fsync")]
    pub fn fsync(fd: impl BorrowFd<'fd>, mode: SyncMode) -> Op<'fd, B> {
        Op {
            kind: Kind::Io(match mode {
                SyncMode::Sync => OpKind::Fsync,
                SyncMode::DataSync => OpKind::Fdatasync,
            }),
            fd: fd.borrow_fd().as_raw_fd(),
            borrow: PhantomData,
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
    /// minus `reqprio`, clamped at the policy's minimum; every real-time request
    /// before every `SCHED_OTHER` one), then lower `reqprio`, then submission
    /// order. The thread engine also runs the request at that policy and
    /// priority. Ignored for [`fsync`](Op::fsync).
    #[must_use]
    #[doc(alias = "aio_reqprio")]
    pub fn reqprio(mut self, delta: i32) -> Op<'fd, B> {
        self.reqprio = delta;
        self
    }

    /// `aio_sigevent`: how to notify when this request is done.
    #[must_use]
    #[doc(alias = "aio_sigevent")]
    pub fn notify(mut self, notify: Notify) -> Op<'fd, B> {
        self.notify = notify;
        self
    }

    /// The descriptor, borrowed for `'fd` (as `self` is).
    #[inline]
    fn borrowed(&self) -> BorrowedFd<'fd> {
        // SAFETY: `self.fd` came from a `BorrowedFd<'fd>` (or is -1, for a
        // `LIO_NOP`, never used as an fd), and `self` keeps that borrow.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    /// True for `LIO_NOP`.
    pub fn is_nop(&self) -> bool {
        self.kind == Kind::Nop
    }

    /// Checks the request and computes what the engine needs. Does not consume the
    /// buffer, so a refused request gives nothing to the kernel.
    ///
    /// `threads`: the thread engine runs it (then the fd is always looked at and
    /// copied). On io_uring a read makes no system call here: the engine settles
    /// it after entering the kernel (see `Inner::settle_probes`).
    #[inline(always)]
    pub(crate) fn prepare(&mut self, call: &'static str, threads: bool) -> Result<Prepared<'fd>> {
        let Kind::Io(kind) = self.kind else {
            return Err(Error::invalid(call, "LIO_NOP is not a request"));
        };
        let sync = matches!(kind, OpKind::Fsync | OpKind::Fdatasync);
        if !sync && !(0..=AIO_PRIO_DELTA_MAX).contains(&self.reqprio) {
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
        let fd = self.borrowed();
        if sync {
            check_sync(fd, call)?;
            return Ok(Prepared::new(kind, fd, 0, 0, 0, 0));
        }
        check_io(call, self.offset, len)?;
        let mut p = Prepared::new(kind, fd, self.offset, ptr, len, self.reqprio as u8);
        p.look(call, threads)?;
        Ok(p)
    }
}

/// The checks of a read or write of `len` bytes at `offset` (EINVAL).
#[inline(always)]
pub(crate) fn check_io(call: &'static str, offset: i64, len: usize) -> Result<()> {
    if offset < 0 {
        return Err(Error::invalid(call, format!("offset {offset} is negative"))
            .with_hint("aio_offset must be >= 0"));
    }
    if len > isize::MAX as usize
        || (offset as u64)
            .checked_add(len as u64)
            .map_or(true, |e| e > i64::MAX as u64)
    {
        return Err(Error::invalid(
            call,
            format!("offset {offset} + length {len} overflows off_t"),
        )
        .with_hint("keep aio_offset + aio_nbytes <= i64::MAX"));
    }
    Ok(())
}

/// The error of a request whose fd could not be copied. Out of descriptors
/// (EMFILE, ENFILE), it was "not queued due to system resource limitations":
/// POSIX's EAGAIN, with the cause in the message.
fn copy_refused(call: &'static str, e: i32) -> Error {
    let what = "F_DUPFD_CLOEXEC: copying the request's descriptor";
    if e == libc::EMFILE || e == libc::ENFILE {
        return Error::from_errno(call, libc::EAGAIN)
            .with_kind(crate::ErrorKind::OutOfResources)
            .with_message(format!("{what}: {}", crate::error::errno_name(e)))
            .with_hint(
                "each request on the thread engine, and each pipe or socket write, holds a copy \
                 of its descriptor until it is done: raise RLIMIT_NOFILE (ulimit -n) or keep \
                 fewer such requests in flight",
            );
    }
    Error::from_errno("fcntl", e).with_message(what)
}

/// `aio_fsync`'s checks: EBADF for a bad fd or one not open for writing, EINVAL
/// for one that cannot be synchronised.
fn check_sync(fd: BorrowedFd<'_>, call: &'static str) -> Result<()> {
    match sync_refusal(fd) {
        None => Ok(()),
        Some((e, hint)) => Err(Error::from_errno(call, e).with_hint(hint)),
    }
}

/// Why `aio_fsync` refuses `fd` in the call (errno and hint), if it does: EBADF
/// for a descriptor not open or not open for writing, EINVAL for one that cannot
/// be synchronised. Shared with the C library's `aio_fsync`.
pub(crate) fn sync_refusal(fd: BorrowedFd<'_>) -> Option<(i32, &'static str)> {
    let Ok(fl) = sio::status_flags(fd) else {
        return Some((libc::EBADF, "aio_fildes is not an open file descriptor"));
    };
    let acc = fl & libc::O_ACCMODE;
    if acc != libc::O_WRONLY && acc != libc::O_RDWR {
        return Some((
            libc::EBADF,
            "aio_fsync needs a descriptor open for writing (O_WRONLY or O_RDWR)",
        ));
    }
    match sio::kind(fd) {
        Ok(k) if can_sync(k) => None,
        Ok(_) => Some((libc::EINVAL, "only regular files and block devices can be synchronised (not a pipe, FIFO, socket, terminal or other character device)")),
        Err(e) => Some((e, "fstat of aio_fildes failed")),
    }
}

/// Whether an fd of kind `k` can be synchronised (`aio_fsync`'s EINVAL
/// otherwise). A directory passes, though no descriptor of one is open for
/// writing (EBADF first).
fn can_sync(k: FdKind) -> bool {
    matches!(k, FdKind::Regular | FdKind::Dir | FdKind::Block)
}
