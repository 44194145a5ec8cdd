//! The library's one diagnostic channel: silent unless `POSIXRT_AIO_DEBUG` is
//! set. A leaf module (imports nothing from the crate), so that the entry
//! points (`aio`) and the notification code (`notify`) both use it without an
//! import circle between them.

use std::sync::atomic::{AtomicU32, Ordering};

/// Prints a line on stderr if `POSIXRT_AIO_DEBUG` is set (and not empty or `0`).
pub(crate) fn debug(args: std::fmt::Arguments<'_>) {
    static STATE: AtomicU32 = AtomicU32::new(0); // 0 unknown, 1 off, 2 on
    let mut s = STATE.load(Ordering::Relaxed);
    if s == 0 {
        s = match std::env::var_os("POSIXRT_AIO_DEBUG") {
            Some(v) if !v.is_empty() && v != "0" => 2,
            _ => 1,
        };
        STATE.store(s, Ordering::Relaxed);
    }
    if s == 2 {
        eprintln!("libposixrt: {args}");
    }
}
