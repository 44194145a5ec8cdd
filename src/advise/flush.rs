//! The fsync family (`sync`, `fsync`, `fdatasync`, listing 7.6): push cached data
//! to stable storage. (The file is `flush`, not `sync`, so that no name means both
//! this and [`crate::sync`].)

use std::os::fd::AsFd;

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
/// lost: do not retry blindly).
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

fn sync_error(call: &'static str, e: rustix::io::Errno) -> Error {
    let err = Error::from_errno(call, e.raw_os_error());
    match e {
        rustix::io::Errno::BADF => {
            err.with_hint("the descriptor is closed or opened with O_PATH; open the file itself")
        }
        rustix::io::Errno::INVAL | rustix::io::Errno::ROFS => {
            err.with_hint("this kind of file (pipe, socket, special file) cannot be synchronised")
        }
        rustix::io::Errno::IO => err.with_hint(
            "write-back failed and the kernel may have dropped the dirty pages; \
             rewrite the data from your own copy before syncing again",
        ),
        _ => err,
    }
}
