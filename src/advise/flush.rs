//! The fsync family (`sync`, `fsync`, `fdatasync`, listing 7.6, and Linux
//! `sync_file_range`): push cached data to stable storage. (The file is `flush`,
//! not `sync`, so that no name means both this and [`crate::sync`].)

use std::fmt;
use std::ops::BitOr;
use std::os::fd::AsFd;

use super::range::check_range;
use crate::{Error, Result};

/// `sync()`: schedules the write-back of every filesystem's modified data and
/// metadata. On Linux it waits for the write-back to finish. It cannot fail.
///
/// # References
///  - [POSIX]
///  - [Linux]
///
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/sync.html
/// [Linux]: https://man7.org/linux/man-pages/man2/sync.2.html
#[inline]
pub fn sync() {
    rustix::fs::sync()
}

/// `fsync(fd)`: returns once the file's data and metadata are on stable storage
/// (all queued I/O to it complete, with file integrity).
///
/// Errors: [`BadFd`](crate::ErrorKind::BadFd) for a closed or O_PATH descriptor;
/// EINVAL ([`InvalidInput`](crate::ErrorKind::InvalidInput)) for a file that cannot
/// be synchronised (a pipe, a socket); EIO if write-back failed (the data may be
/// lost: do not retry blindly); [`OutOfResources`](crate::ErrorKind::OutOfResources)
/// for ENOSPC or EDQUOT, a write-back that found no room or hit a quota, with
/// the same risk (its hint says so).
///
/// # References
///  - [POSIX]
///  - [Linux]
///
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/fsync.html
/// [Linux]: https://man7.org/linux/man-pages/man2/fsync.2.html
pub fn fsync<Fd: AsFd>(fd: Fd) -> Result<()> {
    rustix::fs::fsync(fd).map_err(|e| sync_error("fsync", e))
}

/// `fdatasync(fd)`: like [`fsync`] but with data integrity only (metadata such as
/// the modification time is not flushed unless needed to read the data back).
///
/// # References
///  - [POSIX]
///  - [Linux]
///
/// [POSIX]: https://pubs.opengroup.org/onlinepubs/9799919799/functions/fdatasync.html
/// [Linux]: https://man7.org/linux/man-pages/man2/fdatasync.2.html
pub fn fdatasync<Fd: AsFd>(fd: Fd) -> Result<()> {
    rustix::fs::fdatasync(fd).map_err(|e| sync_error("fdatasync", e))
}

/// What [`sync_file_range`] does with the range (`SYNC_FILE_RANGE_*`); combine
/// them with `|`.
///
/// The usual pattern for writing a large file without letting dirty pages pile
/// up: after writing each chunk, start its write-back with [`WRITE`] (which does
/// not wait, unless the device's queue is full), and wait for an earlier chunk
/// with [`WAIT_BEFORE`] `|` [`WRITE`] `|` [`WAIT_AFTER`] (which writes out
/// whatever of it is still dirty and waits until it is all written), after which
/// its clean pages can be dropped with
/// [`fadvise`](super::fadvise)`(.., Advice::DontNeed)`.
///
/// **Not a durability guarantee.** None of these flags writes the file's
/// metadata (its size, the allocation of new blocks: data written into a hole or
/// past the old end of the file may be lost on a crash), and none flushes the
/// disk's volatile write cache. For data that must survive a crash use
/// [`fdatasync`] or [`fsync`]; `sync_file_range` only controls *when* the
/// write-back happens.
///
/// [`WRITE`]: SyncRangeFlags::WRITE
/// [`WAIT_BEFORE`]: SyncRangeFlags::WAIT_BEFORE
/// [`WAIT_AFTER`]: SyncRangeFlags::WAIT_AFTER
///
/// # References
///  - [Linux](https://man7.org/linux/man-pages/man2/sync_file_range.2.html)
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SyncRangeFlags(u32);

impl SyncRangeFlags {
    /// No flag: the call checks its arguments and does nothing else.
    pub const NONE: SyncRangeFlags = SyncRangeFlags(0);
    /// `SYNC_FILE_RANGE_WAIT_BEFORE`: first wait for the write-back of pages of
    /// the range that is already under way.
    pub const WAIT_BEFORE: SyncRangeFlags = SyncRangeFlags(libc::SYNC_FILE_RANGE_WAIT_BEFORE);
    /// `SYNC_FILE_RANGE_WRITE`: start the write-back of the range's dirty pages
    /// that are not under write-back yet (asynchronous: it does not wait for
    /// them).
    pub const WRITE: SyncRangeFlags = SyncRangeFlags(libc::SYNC_FILE_RANGE_WRITE);
    /// `SYNC_FILE_RANGE_WAIT_AFTER`: then wait for the write-back of the range
    /// to finish.
    pub const WAIT_AFTER: SyncRangeFlags = SyncRangeFlags(libc::SYNC_FILE_RANGE_WAIT_AFTER);
    /// All three: write out every page of the range that was dirty at the call
    /// and wait until it is written (still no metadata, no disk cache flush).
    pub const WRITE_AND_WAIT: SyncRangeFlags = SyncRangeFlags(
        libc::SYNC_FILE_RANGE_WAIT_BEFORE
            | libc::SYNC_FILE_RANGE_WRITE
            | libc::SYNC_FILE_RANGE_WAIT_AFTER,
    );

    /// The raw bits.
    #[inline]
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Flags from raw bits; `None` if a bit is not one of the three above.
    pub const fn from_bits(bits: u32) -> Option<SyncRangeFlags> {
        if bits & !SyncRangeFlags::WRITE_AND_WAIT.0 == 0 {
            Some(SyncRangeFlags(bits))
        } else {
            None
        }
    }

    /// Whether every flag of `other` is set.
    #[inline]
    pub const fn contains(self, other: SyncRangeFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for SyncRangeFlags {
    type Output = SyncRangeFlags;
    fn bitor(self, rhs: SyncRangeFlags) -> SyncRangeFlags {
        SyncRangeFlags(self.0 | rhs.0)
    }
}

impl fmt::Debug for SyncRangeFlags {
    /// The C names joined by `|`, e.g. `SYNC_FILE_RANGE_WRITE|SYNC_FILE_RANGE_WAIT_AFTER`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = [
            (SyncRangeFlags::WAIT_BEFORE, "SYNC_FILE_RANGE_WAIT_BEFORE"),
            (SyncRangeFlags::WRITE, "SYNC_FILE_RANGE_WRITE"),
            (SyncRangeFlags::WAIT_AFTER, "SYNC_FILE_RANGE_WAIT_AFTER"),
        ];
        let set: Vec<&str> = names
            .iter()
            .filter(|(flag, _)| self.contains(*flag))
            .map(|(_, name)| *name)
            .collect();
        if set.is_empty() {
            f.write_str("0")
        } else {
            f.write_str(&set.join("|"))
        }
    }
}

/// `sync_file_range(fd, offset, nbytes, flags)`: starts and/or waits for the
/// write-back of the file's dirty pages in `offset..offset + nbytes`
/// (`nbytes == 0` means to the end of the file), as [`SyncRangeFlags`] says.
///
/// Linux only. It controls when data goes to the device, which spreads the cost
/// of write-back over a long write instead of paying it all at an `fsync`; it is
/// **no durability guarantee**: no metadata is written and the disk's write cache
/// is not flushed (see [`SyncRangeFlags`]; use [`fdatasync`] for that). On tmpfs
/// and other filesystems without write-back it does nothing.
///
/// Errors: [`InvalidInput`](crate::ErrorKind::InvalidInput) for a negative
/// `offset` or `nbytes`, or a range whose end overflows `off_t` (checked before
/// the call); ESPIPE ([`Other`](crate::ErrorKind::Other)) for a pipe, FIFO,
/// socket or character device; [`BadFd`](crate::ErrorKind::BadFd) for a closed
/// or O_PATH descriptor (a read-only one is accepted); EIO if write-back failed;
/// [`OutOfResources`](crate::ErrorKind::OutOfResources) (ENOSPC, EDQUOT, ENOMEM) when
/// write-back found no room (for ENOSPC and EDQUOT, as for EIO, the data may be
/// lost: the hint says to rewrite it).
///
/// ```
/// use std::io::Write;
/// use posixrt::advise::{sync_file_range, SyncRangeFlags};
///
/// let mut f = tempfile_in_tmp()?;
/// f.write_all(&[7u8; 1 << 16])?;
/// // Start the write-back of the first half and wait for it to finish.
/// sync_file_range(&f, 0, 1 << 15, SyncRangeFlags::WRITE | SyncRangeFlags::WAIT_AFTER)?;
/// // Start the write-back of the rest without waiting (0: to the end of the file).
/// sync_file_range(&f, 1 << 15, 0, SyncRangeFlags::WRITE)?;
/// // A negative offset is refused before the call.
/// let e = sync_file_range(&f, -1, 0, SyncRangeFlags::WRITE).unwrap_err();
/// assert_eq!(e.kind(), posixrt::ErrorKind::InvalidInput);
/// # fn tempfile_in_tmp() -> std::io::Result<std::fs::File> {
/// #     let p = std::env::temp_dir().join(format!("posixrt-doc-sfr-{}", std::process::id()));
/// #     let f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p)?;
/// #     std::fs::remove_file(&p)?;
/// #     Ok(f)
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # References
///  - [Linux]
///
/// [Linux]: https://man7.org/linux/man-pages/man2/sync_file_range.2.html
pub fn sync_file_range<Fd: AsFd>(
    fd: Fd,
    offset: i64,
    nbytes: i64,
    flags: SyncRangeFlags,
) -> Result<()> {
    let call = "sync_file_range";
    let (offset, nbytes) = check_range(call, offset, nbytes)?;
    // `check_range` keeps both within off_t.
    let (offset, nbytes) = (offset as i64, nbytes as i64);
    crate::sys::file::sync_file_range(fd.as_fd(), offset, nbytes, flags.bits()).map_err(|errno| {
        let e = rustix::io::Errno::from_raw_os_error(errno);
        sync_error(call, e).with_message(format!("{flags:?} on {offset}+{nbytes}"))
    })
}

fn sync_error(call: &'static str, e: rustix::io::Errno) -> Error {
    let err = Error::from_errno(call, e.raw_os_error());
    match e {
        rustix::io::Errno::BADF => {
            err.with_hint("the descriptor is closed or opened with O_PATH; open the file itself")
        }
        rustix::io::Errno::SPIPE => err.with_hint(
            "sync_file_range applies to regular files, block devices and directories, not to \
             pipes, FIFOs, sockets or character devices",
        ),
        rustix::io::Errno::INVAL | rustix::io::Errno::ROFS => {
            err.with_hint("this kind of file (pipe, socket, special file) cannot be synchronised")
        }
        rustix::io::Errno::IO => err.with_hint(
            "write-back failed and the kernel may have dropped the dirty pages; \
             rewrite the data from your own copy before syncing again",
        ),
        // Reported once, like EIO: the pages that found no room may be dropped,
        // and a later sync succeeds without them.
        rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT => {
            let room = if e == rustix::io::Errno::NOSPC {
                "the filesystem had no room"
            } else {
                "the user's or group's disk quota was exceeded"
            };
            err.with_kind(crate::ErrorKind::OutOfResources)
                .with_hint(format!(
                    "write-back failed: {room} for data written earlier, and the kernel reports \
                 this once and may have dropped those dirty pages, so the data may be lost \
                 (a later sync can succeed without it); free space (or raise the quota), then \
                 rewrite the data from your own copy before syncing again"
                ))
        }
        _ => err,
    }
}
