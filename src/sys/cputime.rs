//! CPU-time clocks: `clock_getcpuclockid` and `clock_gettime` / `clock_getres` on
//! an arbitrary `clockid_t` (rustix has no call for dynamic CPU clock ids).

use std::time::Duration;

fn last_errno() -> i32 {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// `clock_getcpuclockid(pid)`; returns the error number.
///
/// # References
/// - [`clock_getcpuclockid`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/clock_getcpuclockid.html)
pub(crate) fn getcpuclockid(pid: i32) -> Result<libc::clockid_t, i32> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `id` is writable.
    match unsafe { libc::clock_getcpuclockid(pid, &mut id) } {
        0 => Ok(id),
        e => Err(e),
    }
}

/// `clock_gettime(id)`; returns errno on failure.
///
/// # References
/// - [`clock_gettime`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/clock_gettime.html)
pub(crate) fn gettime(id: libc::clockid_t) -> Result<Duration, i32> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable.
    if unsafe { libc::clock_gettime(id, &mut ts) } == -1 {
        return Err(last_errno());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// `clock_getres(id)`; returns errno on failure.
///
/// # References
/// - [`clock_getres`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/clock_getres.html)
pub(crate) fn getres(id: libc::clockid_t) -> Result<Duration, i32> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is writable.
    if unsafe { libc::clock_getres(id, &mut ts) } == -1 {
        return Err(last_errno());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}
