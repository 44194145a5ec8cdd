//! File-descriptor I/O for the AIO thread engine and the checks AIO makes at
//! submission: `pread`/`pwrite`/`read`/`write` on a runtime-owned buffer, their
//! non-blocking forms (`preadv2`/`pwritev2` with `RWF_NOWAIT`, `recv`/`send` with
//! `MSG_DONTWAIT`), `fsync`/`fdatasync`, the kind of a descriptor (`fstat`,
//! `SO_TYPE`), its status flags (`F_GETFL`) and `F_DUPFD_CLOEXEC`.
//!
//! Every function returns the errno of a failed call as a plain `i32`.
//!
//! # References
//! - [`pread(2)`](https://man7.org/linux/man-pages/man2/pread.2.html)
//! - [`preadv2(2)`](https://man7.org/linux/man-pages/man2/preadv2.2.html)
//! - [`fsync(2)`](https://man7.org/linux/man-pages/man2/fsync.2.html)
//! - [`fcntl(2)`](https://man7.org/linux/man-pages/man2/fcntl.2.html)

use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

fn check(r: isize) -> Result<usize, i32> {
    if r < 0 {
        Err(last_errno())
    } else {
        Ok(r as usize)
    }
}

/// What kind of file a descriptor names, as far as AIO cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FdKind {
    /// A regular file: positioned I/O, never blocks on readiness.
    Regular,
    /// A block device.
    Block,
    /// A directory (fsync only).
    Dir,
    /// A datagram socket (`SOCK_DGRAM` / `SOCK_SEQPACKET`): non-seekable, pollable.
    Datagram,
    /// A stream socket: non-seekable, pollable.
    StreamSocket,
    /// A pipe, FIFO, terminal or other character device: non-seekable, pollable.
    Stream,
}

impl FdKind {
    /// True if the offset means nothing (reads and writes take the next bytes).
    pub(crate) fn is_stream(self) -> bool {
        matches!(
            self,
            FdKind::Datagram | FdKind::StreamSocket | FdKind::Stream
        )
    }
}

/// `fstat` (and `getsockopt(SO_TYPE)` for a socket): the kind of `fd`.
///
/// # References
/// - [`fstat(2)`](https://man7.org/linux/man-pages/man2/fstat.2.html)
/// - [`getsockopt(2)`](https://man7.org/linux/man-pages/man2/getsockopt.2.html)
pub(crate) fn kind(fd: BorrowedFd<'_>) -> Result<FdKind, i32> {
    use rustix::fs::FileType as T;
    let st = rustix::fs::fstat(fd).map_err(|e| e.raw_os_error())?;
    Ok(match T::from_raw_mode(st.st_mode) {
        T::RegularFile => FdKind::Regular,
        T::BlockDevice => FdKind::Block,
        T::Directory => FdKind::Dir,
        T::Socket => {
            let mut ty: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: `ty`/`len` are a valid, writable int and its size.
            let r = unsafe {
                libc::getsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(&fd),
                    libc::SOL_SOCKET,
                    libc::SO_TYPE,
                    (&mut ty as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            if r == 0 && (ty == libc::SOCK_DGRAM || ty == libc::SOCK_SEQPACKET) {
                FdKind::Datagram
            } else {
                FdKind::StreamSocket
            }
        }
        _ => FdKind::Stream,
    })
}

/// `fcntl(F_GETFL)`: the file status flags and access mode of `fd`.
///
/// # References
/// - [`fcntl(2)`](https://man7.org/linux/man-pages/man2/fcntl.2.html)
#[inline]
pub(crate) fn status_flags(fd: BorrowedFd<'_>) -> Result<i32, i32> {
    rustix::fs::fcntl_getfl(fd)
        .map(|f| f.bits() as i32)
        .map_err(|e| e.raw_os_error())
}

/// `fcntl(F_GETFD)`: Ok if `fd` is open.
#[inline]
pub(crate) fn is_open(fd: BorrowedFd<'_>) -> bool {
    rustix::io::fcntl_getfd(fd).is_ok()
}

/// `fcntl(F_DUPFD_CLOEXEC, 0)`: a new descriptor for the same open file.
///
/// # References
/// - [`fcntl(2)`](https://man7.org/linux/man-pages/man2/fcntl.2.html)
#[inline]
pub(crate) fn dup(fd: BorrowedFd<'_>) -> Result<OwnedFd, i32> {
    rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| e.raw_os_error())
}

/// Whether `a` and `b` name the same open file description
/// (`kcmp(KCMP_FILE)`): not merely the same inode, which other opens of the
/// file, and every eventfd or timerfd, share. `None` where the kernel has no
/// `kcmp` (built without `CONFIG_KCMP`).
///
/// # References
/// - [`kcmp(2)`](https://man7.org/linux/man-pages/man2/kcmp.2.html)
pub(crate) fn same_file(a: BorrowedFd<'_>, b: BorrowedFd<'_>) -> Option<bool> {
    /// `KCMP_FILE` of `<linux/kcmp.h>`.
    const KCMP_FILE: libc::c_int = 0;
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let (a, b) = (
        a.as_raw_fd() as libc::c_ulong,
        b.as_raw_fd() as libc::c_ulong,
    );
    // SAFETY: kcmp takes five integers and touches no memory of the caller;
    // it only compares what two descriptors of this process name.
    let r = unsafe { libc::syscall(libc::SYS_kcmp, pid, pid, KCMP_FILE, a, b) };
    match r {
        0 => Some(true),
        1..=3 => Some(false),
        _ => None,
    }
}

/// `fsync(fd)`.
pub(crate) fn fsync(fd: BorrowedFd<'_>) -> Result<(), i32> {
    rustix::fs::fsync(fd).map_err(|e| e.raw_os_error())
}

/// `fdatasync(fd)`.
pub(crate) fn fdatasync(fd: BorrowedFd<'_>) -> Result<(), i32> {
    rustix::fs::fdatasync(fd).map_err(|e| e.raw_os_error())
}

/// How a transfer is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `pread`/`pwrite` at the offset (blocking).
    At(i64),
    /// `read`/`write` at the current position (blocking).
    Stream,
    /// `preadv2`/`pwritev2(offset -1, RWF_NOWAIT)`: EAGAIN instead of blocking.
    NoWait,
    /// `preadv2`/`pwritev2` at the offset with `RWF_NOWAIT`: EAGAIN (or a
    /// short count) instead of waiting for the disk, on a buffered file; on an
    /// `O_DIRECT` one the call still waits for the device.
    AtNoWait(i64),
    /// `recv`/`send(MSG_DONTWAIT)` on a socket: EAGAIN instead of blocking.
    SocketNoWait,
}

impl Mode {
    /// The offset an `RWF_NOWAIT` transfer goes at: the file position (-1)
    /// for [`Mode::NoWait`].
    fn nowait_offset(self) -> i64 {
        match self {
            Mode::AtNoWait(off) => off,
            _ => -1,
        }
    }
}

/// Reads up to `len` bytes into `ptr`.
///
/// # Safety
/// `ptr..ptr+len` is writable memory that nothing else accesses during the call.
pub(crate) unsafe fn read(fd: i32, ptr: *mut u8, len: usize, mode: Mode) -> Result<usize, i32> {
    // SAFETY: the caller guarantees the buffer; the fd is a plain integer to the
    // kernel (a closed one gives EBADF).
    let r = unsafe {
        match mode {
            Mode::At(off) => libc::pread(fd, ptr.cast(), len, off),
            Mode::Stream => libc::read(fd, ptr.cast(), len),
            Mode::NoWait | Mode::AtNoWait(_) => {
                let iov = libc::iovec {
                    iov_base: ptr.cast(),
                    iov_len: len,
                };
                libc::preadv2(fd, &iov, 1, mode.nowait_offset(), libc::RWF_NOWAIT)
            }
            Mode::SocketNoWait => libc::recv(fd, ptr.cast(), len, libc::MSG_DONTWAIT),
        }
    };
    check(r)
}

/// Writes up to `len` bytes from `ptr`.
///
/// # Safety
/// `ptr..ptr+len` is readable memory that nothing writes during the call.
pub(crate) unsafe fn write(fd: i32, ptr: *const u8, len: usize, mode: Mode) -> Result<usize, i32> {
    // SAFETY: as in `read`.
    let r = unsafe {
        match mode {
            Mode::At(off) => libc::pwrite(fd, ptr.cast(), len, off),
            Mode::Stream => libc::write(fd, ptr.cast(), len),
            Mode::NoWait | Mode::AtNoWait(_) => {
                let iov = libc::iovec {
                    iov_base: ptr as *mut libc::c_void,
                    iov_len: len,
                };
                libc::pwritev2(fd, &iov, 1, mode.nowait_offset(), libc::RWF_NOWAIT)
            }
            Mode::SocketNoWait => libc::send(fd, ptr.cast(), len, libc::MSG_DONTWAIT),
        }
    };
    check(r)
}

/// `poll(fd, events, 0)`: true if `fd` is ready now (or in error).
pub(crate) fn ready_now(fd: BorrowedFd<'_>, write: bool) -> bool {
    use rustix::event::{poll, PollFd, PollFlags};
    let ev = if write { PollFlags::OUT } else { PollFlags::IN };
    let mut fds = [PollFd::new(&fd, ev)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    matches!(poll(&mut fds, Some(&zero)), Ok(n) if n > 0)
}
