//! Memory advice that rustix does not wrap the way the crate needs.

/// `posix_madvise(addr, len, POSIX_MADV_DONTNEED)` through glibc, which ignores
/// this advice on Linux (the kernel's `MADV_DONTNEED` would discard data); returns
/// the error number (0 on success).
///
/// # Safety
/// `addr..addr+len` must be a mapping of the caller's (glibc makes no system call
/// for this advice, but the contract is that of `posix_madvise`).
///
/// # References
/// - [`posix_madvise`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/posix_madvise.html)
pub(crate) unsafe fn posix_madvise_dontneed(addr: *mut u8, len: usize) -> i32 {
    // SAFETY: the caller guarantees the range.
    unsafe { libc::posix_madvise(addr.cast(), len, libc::POSIX_MADV_DONTNEED) }
}
