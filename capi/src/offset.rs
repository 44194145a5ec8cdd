//! The checks of a read's or write's `aio_offset` and `aio_nbytes`.

use crate::debug::debug;

/// The offset to give the engine for a transfer of `len` bytes at `offset` of
/// `fd`, or EINVAL: a negative offset, a length past `SSIZE_MAX`, or an end
/// past `OFF_MAX` on an fd that can seek. An fd that cannot (a pipe, socket or
/// terminal) ignores the offset, as POSIX says and as glibc's requests do
/// (its `pread`/`pwrite` fails with ESPIPE and it calls `read`/`write`): such
/// an end is no error there, and the request goes with offset 0. That `lseek`
/// is made on the refusing path only.
pub(crate) fn checked(fd: i32, offset: i64, len: usize) -> Result<i64, i32> {
    if offset < 0 {
        debug(format_args!("aio_offset {offset} is negative: EINVAL"));
        return Err(libc::EINVAL);
    }
    let past_end = (offset as u64)
        .checked_add(len as u64)
        .map_or(true, |e| e > i64::MAX as u64);
    if len > isize::MAX as usize || (past_end && !cannot_seek(fd)) {
        debug(format_args!(
            "aio_offset {offset} + aio_nbytes {len} overflows: EINVAL"
        ));
        return Err(libc::EINVAL);
    }
    Ok(if past_end { 0 } else { offset })
}

/// True if `fd` is open and cannot seek (ESPIPE).
fn cannot_seek(fd: i32) -> bool {
    // SAFETY: lseek on any int is safe; SEEK_CUR with 0 moves nothing.
    let r = unsafe { libc::lseek(fd, 0, libc::SEEK_CUR) };
    // SAFETY: __errno_location returns the calling thread's errno.
    r < 0 && unsafe { *libc::__errno_location() } == libc::ESPIPE
}
