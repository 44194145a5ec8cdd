//! Review tests of the POSIX trace facility: edges of the full policies, logs
//! and status flags, against the POSIX text.
//!
//! Streams are process-wide, so the tests serialise on one lock.

use std::fs::File;
use std::sync::{Mutex, MutexGuard};

use posixrt::trace::{Trace, TraceAttr, TRACE_SYS_MAX};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// POSIX `posix_trace_create_withlog`: ENOSPC when "the device corresponding
/// to the argument file_desc does not contain the space required to create
/// this trace log". A log on a device with no space at all (`/dev/full`) is
/// refused at creation, not taken and left to fail at its first flush; and a
/// refused creation holds no stream.
#[test]
fn create_with_log_on_a_full_device_fails_with_enospc() {
    let _g = serial();
    for _ in 0..2 * TRACE_SYS_MAX {
        let f = File::options().write(true).open("/dev/full").unwrap();
        let e = Trace::create_with_log(&TraceAttr::new(), f).unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENOSPC), "{e}");
    }
    let held: Vec<Trace> = (0..TRACE_SYS_MAX)
        .map(|_| Trace::create(&TraceAttr::new()).unwrap())
        .collect();
    drop(held);
}
