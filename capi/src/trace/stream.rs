//! Stream life cycle, status, attributes and filters.

use std::ffi::{c_int, c_ulong};
use std::fs::File;
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rt::trace::{FilterHow, Trace, TraceAttr};

use super::attr::{out, CAttr};
use super::ids::{set_ref, CSet};
use super::{errno_of, get, insert, lock, remove, ret, Obj};
use crate::nocancel::NoCancel;

/// `pid` 0 or our own; `ESRCH` for no such process, `ENOSYS` for another one.
fn check_pid(pid: libc::pid_t) -> Result<(), c_int> {
    // SAFETY: getpid has no preconditions.
    if pid == 0 || pid == unsafe { libc::getpid() } {
        return Ok(());
    }
    // SAFETY: signal 0 only checks that the process exists.
    if pid < 0 || unsafe { libc::kill(pid, 0) } != 0 && errno() == libc::ESRCH {
        return Err(libc::ESRCH);
    }
    Err(libc::ENOSYS)
}

fn errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// The Rust attributes (the defaults if `attr` is null).
fn attr_arg(attr: *const CAttr) -> Result<TraceAttr, c_int> {
    // SAFETY: a non-null `trace_attr_t *` points to one (caller's contract).
    match unsafe { attr.as_ref() } {
        None => Ok(TraceAttr::new()),
        Some(a) => a.to_rust(),
    }
}

fn create(pid: libc::pid_t, attr: *const CAttr, log: Option<File>) -> Result<c_ulong, c_int> {
    check_pid(pid)?;
    let a = attr_arg(attr)?;
    let t = match log {
        Some(f) => Trace::create_with_log(&a, f),
        None => Trace::create(&a),
    }
    .map_err(|e| errno_of(&e))?;
    Ok(insert(Obj::Stream {
        trace: t,
        cursor: Mutex::new(0),
        shut_down: AtomicBool::new(false),
    }))
}

/// `attr` may be null (defaults). `EAGAIN` when `TRACE_SYS_MAX` streams exist;
/// `EINVAL` for an uninitialised attribute object or FLUSH without a log.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_create(
    pid: libc::pid_t,
    attr: *const CAttr,
    trid: *mut c_ulong,
) -> c_int {
    let _nc = NoCancel::new();
    if trid.is_null() {
        return libc::EINVAL;
    }
    ret(create(pid, attr, None).and_then(|id| out(trid, id)))
}

/// A duplicate of `fd` (the caller keeps its own), which must be open for writing
/// (`write`) or reading (`!write`); else `EBADF`.
pub(crate) fn dup_fd(fd: c_int, write: bool) -> Result<File, c_int> {
    // SAFETY: F_GETFL on any int is harmless; it fails with EBADF on a non-fd.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 {
        return Err(libc::EBADF);
    }
    let acc = fl & libc::O_ACCMODE;
    if (write && acc == libc::O_RDONLY) || (!write && acc == libc::O_WRONLY) {
        return Err(libc::EBADF);
    }
    // SAFETY: as above; F_DUPFD_CLOEXEC returns a new descriptor we own.
    let d = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if d < 0 {
        return Err(errno());
    }
    // SAFETY: `d` is a fresh descriptor owned by nothing else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(d) }))
}

/// `fildes` must be open for writing (`EBADF`); the log is written from its start.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_create_withlog(
    pid: libc::pid_t,
    attr: *const CAttr,
    fildes: c_int,
    trid: *mut c_ulong,
) -> c_int {
    let _nc = NoCancel::new();
    if trid.is_null() {
        return libc::EINVAL;
    }
    ret(check_pid(pid)
        .and_then(|()| dup_fd(fildes, true))
        .and_then(|f| create(pid, attr, Some(f)))
        .and_then(|id| out(trid, id)))
}

/// Runs `f` on the stream `trid` names (`EINVAL` for a log or a bad id).
fn with_stream<R>(
    trid: c_ulong,
    f: impl FnOnce(&Trace, &Arc<Obj>) -> Result<R, c_int>,
) -> Result<R, c_int> {
    let o = get(trid)?;
    match &*o {
        Obj::Stream { trace, .. } => f(trace, &o),
        Obj::Log { .. } => Err(libc::EINVAL),
    }
}

fn rs(r: rt::Result<()>) -> Result<(), c_int> {
    r.map_err(|e| errno_of(&e))
}

#[no_mangle]
pub extern "C-unwind" fn posix_trace_start(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| rs(t.start())))
}

#[no_mangle]
pub extern "C-unwind" fn posix_trace_stop(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| rs(t.stop())))
}

/// `EINVAL` for a stream without a log.
#[no_mangle]
pub extern "C-unwind" fn posix_trace_flush(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| rs(t.flush())))
}

#[no_mangle]
pub extern "C-unwind" fn posix_trace_clear(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| rs(t.clear())))
}

/// How long `posix_trace_shutdown` waits for the other calls on its stream.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(2);

/// Frees the stream (after its log is complete), as POSIX says, before it
/// returns. If another thread is still inside a call on it, the stream is
/// stopped at once and freed once that call returns: a read waiting on it
/// ends with `EINVAL` within a slice of its wait, any other call when its
/// work is done. Past [`SHUTDOWN_WAIT`] (a long flush; or a signal handler
/// that shuts down the stream its own thread is reading, which could wait
/// for ever) it returns 0 and the last call frees the stream.
#[no_mangle]
pub extern "C-unwind" fn posix_trace_shutdown(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    let mut o = match remove(trid, |o| matches!(o, Obj::Stream { .. })) {
        Ok(o) => o,
        Err(e) => return e,
    };
    if let Obj::Stream {
        trace, shut_down, ..
    } = &*o
    {
        if Arc::strong_count(&o) > 1 {
            // Stop recording now. A read waiting on it ends with EINVAL
            // (flagged first: it may wake up to the STOP).
            shut_down.store(true, Ordering::Release);
            let _ = trace.stop();
        }
    }
    let until = Instant::now() + SHUTDOWN_WAIT;
    loop {
        match Arc::try_unwrap(o) {
            Ok(Obj::Stream { trace, .. }) => return ret(rs(trace.shutdown())),
            Ok(Obj::Log { .. }) => return libc::EINVAL,
            Err(_) if Instant::now() >= until => return 0,
            Err(shared) => {
                o = shared;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// For a stream, its attributes; for a log, the attributes it recorded.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_get_attr(trid: c_ulong, attr: *mut CAttr) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).and_then(|o| {
        // The name's bytes as the C attributes gave them, from the stream or
        // from its log.
        let a = match &*o {
            Obj::Stream { trace, .. } => trace.attr(),
            Obj::Log { log, .. } => lock(log).attr().cloned().unwrap_or_default(),
        };
        out(attr, CAttr::from_rust(&a))
    }))
}

/// `struct posix_trace_status_info`.
#[repr(C)]
pub struct CStatus {
    stream_status: c_int,
    full: c_int,
    overrun: c_int,
    flush_status: c_int,
    flush_error: c_int,
    log_overrun: c_int,
    log_full: c_int,
}

/// Reading resets the overrun flags and the flush error, as POSIX says. For a log:
/// suspended, with the flags of its final status record.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_get_status(
    trid: c_ulong,
    statusinfo: *mut CStatus,
) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).and_then(|o| {
        if statusinfo.is_null() {
            return Err(libc::EINVAL);
        }
        let st = match &*o {
            Obj::Stream { trace, .. } => {
                let s = trace.status();
                CStatus {
                    stream_status: if s.running { 0 } else { 1 },
                    full: s.full as c_int,
                    overrun: s.overrun as c_int,
                    flush_status: s.flushing as c_int,
                    flush_error: s.flush_error,
                    log_overrun: s.log_overrun as c_int,
                    log_full: s.log_full as c_int,
                }
            }
            Obj::Log { log, .. } => {
                let s = lock(log).status();
                CStatus {
                    stream_status: 1,
                    full: 0,
                    overrun: s.is_some_and(|s| s.stream_overrun) as c_int,
                    flush_status: 0,
                    flush_error: 0,
                    log_overrun: s.is_some_and(|s| s.log_overrun) as c_int,
                    log_full: s.is_some_and(|s| s.log_full) as c_int,
                }
            }
        };
        out(statusinfo, st)
    }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_get_filter(trid: c_ulong, set: *mut CSet) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| {
        out(set, CSet::from_rust(&t.filter()))
    }))
}

/// `how`: `POSIX_TRACE_SET_EVENTSET` (0), `_ADD_EVENTSET` (1), `_SUB_EVENTSET` (2).
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_set_filter(
    trid: c_ulong,
    set: *const CSet,
    how: c_int,
) -> c_int {
    let _nc = NoCancel::new();
    ret(with_stream(trid, |t, _| {
        let s = set_ref(set)?.to_rust();
        let how = match how {
            0 => FilterHow::Set,
            1 => FilterHow::Add,
            2 => FilterHow::Sub,
            _ => return Err(libc::EINVAL),
        };
        rs(t.set_filter(&s, how))
    }))
}
