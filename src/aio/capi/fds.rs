//! The fd of a C request: the copy a request that outlives its call's hold
//! on the number needs, and what a read's fd is.

use crate::aio::table::{Core, Slot};

/// Gives request `idx` a copy of `fd` of its own; if the copy is refused
/// (`RLIMIT_NOFILE`), ends the request with that error instead.
pub(super) fn own_copy(core: &mut Core, idx: u32, fd: i32) -> std::result::Result<(), i32> {
    // SAFETY: the submitting call, still running, keeps `fd` open (the
    // caller's contract); it is only duplicated.
    let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    match crate::sys::io::dup(bfd) {
        Ok(copy) => {
            core.slots[idx as usize].own_fd = Some(copy);
            Ok(())
        }
        Err(e) => {
            core.complete(idx, -(e as i64));
            core.nudge = true;
            Err(e)
        }
    }
}

/// Notes whether C read `s` on `fd` is on a pipe, socket or terminal (read
/// without an offset) and whether that is `O_NONBLOCK` (read with RWF_NOWAIT).
pub(super) fn note_stream(s: &mut Slot, fd: i32) {
    // SAFETY: the C caller keeps `fd` open while its request runs (as glibc's
    // helper threads need it to); it is only asked about.
    let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    if let Ok(k) = crate::sys::io::kind(bfd) {
        s.fd_kind = Some(k);
        s.nonblock = k.is_stream()
            && crate::sys::io::status_flags(bfd).is_ok_and(|f| f & libc::O_NONBLOCK != 0);
    }
}

/// `aio_fsync`'s checks of `fd`, as the Rust API's: EBADF if it is not open
/// for writing, EINVAL if it cannot be synchronised (a pipe, FIFO, socket,
/// terminal or other character device), in the call itself.
pub fn fsync_refusal(fd: i32) -> Option<i32> {
    // SAFETY: fcntl(F_GETFL) takes any int; a number not open gives EBADF.
    if unsafe { libc::fcntl(fd, libc::F_GETFL) } < 0 {
        return Some(libc::EBADF);
    }
    // SAFETY: open (just asked), and kept open by the C caller for its
    // aio_fsync call; it is only asked about.
    let bfd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    crate::aio::op::sync_refusal(bfd).map(|(e, _)| e)
}
