//! The process's file size limit, for the tests of writes that fail part-way
//! past it (as on a full file system): `#[path = "common/fsize.rs"] mod fsize;`.
//! A binary of its own for each: the limit and SIGXFSZ are the process's.
#![allow(dead_code)]

/// Sets the soft `RLIMIT_FSIZE` to `soft` bytes (at most the hard limit).
pub fn set_fsize(soft: libc::rlim_t) {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain calls with a valid struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_FSIZE, &mut r), 0);
        r.rlim_cur = soft.min(r.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &r), 0);
    }
}

/// Ignores SIGXFSZ: a write past the limit fails with EFBIG instead of
/// killing the process.
pub fn ignore_sigxfsz() {
    // SAFETY: ignoring a signal; no handler runs.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}
