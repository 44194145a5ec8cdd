//! File calls that rustix does not wrap: `sync_file_range`.
//!
//! Every function returns the errno of a failed call as a plain `i32`.

use std::os::fd::{AsRawFd, BorrowedFd};

/// `sync_file_range(fd, offset, nbytes, flags)` (`SYNC_FILE_RANGE_*` bits);
/// the errno if it failed.
///
/// # References
/// - [`sync_file_range(2)`](https://man7.org/linux/man-pages/man2/sync_file_range.2.html)
pub(crate) fn sync_file_range(
    fd: BorrowedFd<'_>,
    offset: i64,
    nbytes: i64,
    flags: u32,
) -> Result<(), i32> {
    // SAFETY: the call takes plain integers; `fd` is a live descriptor for
    // the duration of the call (borrowed), and no memory is passed.
    let rc = unsafe { libc::sync_file_range(fd.as_raw_fd(), offset, nbytes, flags) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO))
    }
}
