//! Signals: queueing a signal with a chosen `si_code` to this process
//! (`rt_sigqueueinfo`), the way an AIO completion is reported.
//!
//! # References
//! - [`rt_sigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_sigqueueinfo.2.html)
//! - [`sigqueue`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sigqueue.html)

/// The kernel's `siginfo_t` for a queued signal (`_rt` member of the union).
#[repr(C)]
struct KernelSigInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    _rest: [u8; 128 - 32],
}

/// `rt_sigqueueinfo(getpid(), signo, {si_code: code, si_value: value})`: queues
/// `signo` to this process. A negative `code` (such as `SI_ASYNCIO`) is always
/// allowed towards one's own process, but is subject to `RLIMIT_SIGPENDING`
/// (EAGAIN when the queue is full), even for root.
///
/// Returns the errno of a failed call.
///
/// # References
/// - [`rt_sigqueueinfo(2)`](https://man7.org/linux/man-pages/man2/rt_sigqueueinfo.2.html)
pub(crate) fn queue_to_self(signo: i32, code: i32, value: usize) -> Result<(), i32> {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    let info = KernelSigInfo {
        signo,
        errno: 0,
        code,
        _pad: 0,
        pid,
        uid: rustix::process::getuid().as_raw(),
        value,
        _rest: [0; 96],
    };
    // SAFETY: rt_sigqueueinfo reads a 128-byte siginfo from `info`, which is valid
    // for the call; the other arguments are plain integers.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigqueueinfo,
            pid as libc::pid_t,
            signo,
            &info as *const KernelSigInfo,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN))
    } else {
        Ok(())
    }
}
