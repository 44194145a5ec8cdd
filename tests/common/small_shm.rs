//! A private /dev/shm for a forked child: a tmpfs of the size a test asks,
//! in a mount namespace of its own (a user namespace too where that is
//! needed): `#[path = "common/small_shm.rs"] mod small_shm;`.
#![allow(dead_code)]

/// Writes `text` to `path` (for the id maps of a new user namespace).
fn write_file(path: &std::ffi::CStr, text: &str) -> bool {
    // SAFETY: a plain open/write/close of a NUL-terminated path and a buffer
    // valid for its length.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return false;
        }
        let n = libc::write(fd, text.as_ptr().cast(), text.len());
        libc::close(fd);
        n == text.len() as isize
    }
}

/// In a forked child: a private mount namespace with a tmpfs mounted on
/// /dev/shm with `options` (e.g. `c"size=64k,mode=1777"`); false if that
/// cannot be done here.
pub fn small_dev_shm(options: &std::ffi::CStr) -> bool {
    // SAFETY: unshare and mount take plain flags and NUL-terminated strings.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            // Not privileged: a user namespace of our own, mapping our ids.
            let (uid, gid) = (libc::getuid(), libc::getgid());
            if libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) != 0
                || !write_file(c"/proc/self/setgroups", "deny")
                || !write_file(c"/proc/self/uid_map", &format!("{uid} {uid} 1"))
                || !write_file(c"/proc/self/gid_map", &format!("{gid} {gid} 1"))
            {
                return false;
            }
        }
        libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) == 0
            && libc::mount(
                c"tmpfs".as_ptr(),
                c"/dev/shm".as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                options.as_ptr().cast(),
            ) == 0
    }
}
