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

/// `madvise(MADV_DOFORK)` and/or `madvise(MADV_NORMAL)` over `addr..addr+len`:
/// what a buffer's drop undoes of the advice it was given, so its pages go back
/// to the allocator as they came. Errors are ignored (nothing to do about
/// them in a drop; neither advice changes data).
///
/// # Safety
/// `addr..addr+len` must be page-granular memory of the caller's alone.
pub(crate) unsafe fn undo_advice(addr: *mut u8, len: usize, do_fork: bool, normal: bool) {
    use rustix::mm::Advice;
    for (set, advice) in [(do_fork, Advice::LinuxDoFork), (normal, Advice::Normal)] {
        if set {
            // SAFETY: the caller guarantees the range.
            let _ = unsafe { rustix::mm::madvise(addr.cast(), len, advice) };
        }
    }
}
