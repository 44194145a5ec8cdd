//! The calling thread as the thread library knows it: its `pthread_t`, name and
//! stack size.

use std::ffi::CStr;

/// `pthread_self()`: the calling thread's handle (always valid for the caller).
///
/// # References
/// - [`pthread_self`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_self.html)
#[inline]
pub(crate) fn pthread_self() -> libc::pthread_t {
    // SAFETY: pthread_self has no preconditions.
    unsafe { libc::pthread_self() }
}

/// `pthread_getname_np(pthread_self())`; returns the error number.
///
/// # References
/// - [`pthread_getname_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getname_np.3.html)
pub(crate) fn current_name() -> Result<String, i32> {
    let mut buf = [0 as libc::c_char; 16];
    // SAFETY: pthread_self() is valid; `buf` is writable for the 16 bytes we pass.
    let r = unsafe { libc::pthread_getname_np(pthread_self(), buf.as_mut_ptr(), buf.len()) };
    if r != 0 {
        return Err(r);
    }
    // SAFETY: on success the buffer holds a NUL-terminated string within its 16 bytes.
    let s = unsafe { CStr::from_ptr(buf.as_ptr()) };
    Ok(s.to_string_lossy().into_owned())
}

/// `pthread_getattr_np(pthread_self())` + `pthread_attr_getstacksize`; on failure,
/// the failing call and its error number.
///
/// # References
/// - [`pthread_getattr_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getattr_np.3.html)
/// - [`pthread_attr_getstacksize`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/pthread_attr_getstacksize.html)
pub(crate) fn current_stack_size() -> Result<usize, (&'static str, i32)> {
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: pthread_getattr_np initialises `attr` on success; we destroy it below.
    let r = unsafe { libc::pthread_getattr_np(pthread_self(), attr.as_mut_ptr()) };
    if r != 0 {
        return Err(("pthread_getattr_np", r));
    }
    let mut size = 0usize;
    // SAFETY: `attr` was initialised by pthread_getattr_np; `size` is writable.
    let r = unsafe { libc::pthread_attr_getstacksize(attr.as_ptr(), &mut size) };
    // SAFETY: `attr` is initialised and destroyed exactly once.
    unsafe { libc::pthread_attr_destroy(attr.as_mut_ptr()) };
    if r != 0 {
        return Err(("pthread_attr_getstacksize", r));
    }
    Ok(size)
}
