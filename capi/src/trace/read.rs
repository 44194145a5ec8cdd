//! Recording (`posix_trace_event`), reading (the getnext family) and logs
//! (`posix_trace_open`, `_rewind`, `_close`).

use std::ffi::{c_int, c_uint, c_ulong, c_void};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use rt::trace::{Event, EventId, LogWaiter, TraceLog, ID_SPACE, MAX_DATA_SIZE_LIMIT};

use super::attr::out;
use super::ids::{is_mutex_event, to_c, to_c_named};
use super::stream::dup_fd;
use super::{errno_of, get, insert, lock, remove, ret, Obj};
use crate::nocancel::{testcancel, NoCancel};
use crate::restart::handlers_restart;
use rt::aio::capi::CallSignals;

/// First user event id: system ids are not recorded from C.
const USER_BASE: c_uint = 128;

/// `posix_trace_event`: records `data_len` bytes under a user event id in every
/// running stream of the process that does not filter it (the same streams Rust's
/// `trace::event` records into). System ids and unknown ids are ignored.
///
/// No stream records more than [`MAX_DATA_SIZE_LIMIT`] bytes of an event: a
/// longer `data_len` is taken as one byte past that limit, which truncates the
/// record as the whole length would (`POSIX_TRACE_TRUNCATED_RECORD`) and reads
/// no more of the caller's data than is recorded. (A slice of `data_len`
/// bytes was made first, undefined past `isize::MAX`: `trace_limits.c`.)
///
/// `C-unwind`: calls from an `extern "C"` function that the compiler cannot prove
/// never unwind get an abort landing pad, which rules out the tail call into the
/// core; nothing on this path unwinds.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_event(
    event_id: c_uint,
    data_ptr: *const c_void,
    data_len: usize,
) {
    if event_id.wrapping_sub(USER_BASE) < (ID_SPACE as c_uint - USER_BASE) {
        let data: &[u8] = if data_ptr.is_null() || data_len == 0 {
            &[]
        } else {
            let n = data_len.min(MAX_DATA_SIZE_LIMIT + 1);
            // SAFETY: the caller passes `data_len >= n` readable bytes at
            // `data_ptr`, and `n` is small.
            unsafe { std::slice::from_raw_parts(data_ptr.cast::<u8>(), n) }
        };
        if let Some(id) = EventId::from_raw(event_id as u16) {
            super::tls::event(id, data);
        }
    }
}

/// trace.h's inline `posix_trace_event` for data of a size known at compile time
/// and at most 8 bytes: the caller packs the data into `word` (little-endian,
/// the bytes past `data_len` zero), so it travels in a register as Rust's
/// `trace::event` passes it, and hands over the id's entry of
/// `__posixrt_trace_on` it has just tested (`pass`, opaque to it), which the
/// core would otherwise read again. Otherwise the same as `posix_trace_event`.
#[no_mangle]
pub extern "C-unwind" fn __posixrt_trace_event_word(
    event_id: c_uint,
    word: u64,
    data_len: usize,
    pass: u8,
) {
    if event_id.wrapping_sub(USER_BASE) < (ID_SPACE as c_uint - USER_BASE) {
        if let Some(id) = EventId::from_raw(event_id as u16) {
            super::tls::event_word(pass, id, data_len, word);
        }
    }
}

/// `struct posix_trace_event_info`.
#[repr(C)]
pub struct CEventInfo {
    event_id: c_uint,
    pid: libc::pid_t,
    prog_address: *mut c_void,
    truncation: c_int,
    timestamp: libc::timespec,
    thread_id: libc::pthread_t,
}

/// The caller's out-pointers of a getnext call.
struct Outs {
    event: *mut CEventInfo,
    data: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
}

impl Outs {
    fn check(&self) -> Result<(), c_int> {
        if self.event.is_null()
            || self.data_len.is_null()
            || self.unavailable.is_null()
            || (self.data.is_null() && self.num_bytes > 0)
        {
            return Err(libc::EINVAL);
        }
        Ok(())
    }

    fn none(&self) -> Result<(), c_int> {
        out(self.data_len, 0)?;
        out(self.unavailable, 1)
    }

    /// Gives the caller event `e` (C id `id`); `thread_of` maps a kernel tid
    /// to the `pthread_t` of a thread that recorded into the stream.
    fn put(
        &self,
        e: &Event,
        id: c_uint,
        thread_of: &dyn Fn(u32) -> Option<u64>,
    ) -> Result<(), c_int> {
        let data = c_data(e, id, thread_of);
        let n = data.len().min(self.num_bytes);
        if n > 0 {
            // SAFETY: `data` has `num_bytes >= n` writable bytes (caller's contract).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.data.cast::<u8>(), n) };
        }
        // POSIX_TRACE_TRUNCATED_READ (2), cut by the reader's buffer,
        // overrides POSIX_TRACE_TRUNCATED_RECORD (1), cut when recorded, as
        // POSIX says of `posix_truncation_status`.
        let truncation = if n < data.len() {
            2
        } else if e.truncated {
            1
        } else {
            0
        };
        out(
            self.event,
            CEventInfo {
                event_id: id,
                pid: e.pid as libc::pid_t,
                prog_address: std::ptr::null_mut(),
                truncation,
                timestamp: libc::timespec {
                    tv_sec: e.timestamp.as_secs() as libc::time_t,
                    tv_nsec: e.timestamp.subsec_nanos() as libc::c_long,
                },
                thread_id: c_thread(e),
            },
        )?;
        out(self.data_len, n)?;
        out(self.unavailable, 0)
    }
}

/// `posix_thread_id`: the recording thread's `pthread_t` (POSIX's type, so
/// `pthread_equal(info.posix_thread_id, pthread_self())` holds for a
/// thread's own events); its kernel tid where the `pthread_t` is not known
/// (a log keeps tids only; OVERFLOW and RESUME, which the library makes up).
fn c_thread(e: &Event) -> libc::pthread_t {
    if e.thread != 0 {
        e.thread as libc::pthread_t
    } else {
        e.tid as libc::pthread_t
    }
}

/// The data a C reader gets: that of a mutex event (`traceMutexLock`...)
/// names the caller and the owner by kernel tid (words 1 and 4, as
/// recorded); read from a stream, they become `pthread_t`s, as
/// `posix_thread_id` is: the caller's is the event's own, an owner's that of
/// the thread with its tid that recorded into the stream (an owner that
/// never did keeps its tid; 0, no owner, stays 0).
fn c_data<'a>(
    e: &'a Event,
    id: c_uint,
    thread_of: &dyn Fn(u32) -> Option<u64>,
) -> std::borrow::Cow<'a, [u8]> {
    if e.thread == 0 || !is_mutex_event(id) || e.data.len() < 40 {
        return std::borrow::Cow::Borrowed(&e.data);
    }
    let mut d = e.data.clone();
    let word = |d: &[u8], i: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&d[8 * i..8 * i + 8]);
        u64::from_le_bytes(w)
    };
    let (caller, owner) = (word(&d, 1), word(&d, 4));
    let owner_thread = if owner == 0 {
        0
    } else if owner == caller {
        e.thread
    } else {
        u32::try_from(owner)
            .ok()
            .and_then(thread_of)
            .unwrap_or(owner)
    };
    if caller == e.tid as u64 {
        d[8..16].copy_from_slice(&e.thread.to_le_bytes());
    }
    d[32..40].copy_from_slice(&owner_thread.to_le_bytes());
    std::borrow::Cow::Owned(d)
}

#[derive(Clone, Copy)]
enum Mode {
    /// Waits while the stream runs and holds no event.
    Block,
    /// Never waits.
    Try,
    /// Waits until this deadline (`TimedOut` then); `None` for no limit.
    Until(Option<Instant>),
}

/// How long a read that waits waits between two looks for a pending cancel.
const CANCEL_SLICE: Duration = Duration::from_millis(20);

/// What one slice of a read came to.
enum Slice {
    /// The call's result.
    Done(c_int),
    /// A waiting read's slice ended with the stream running and empty.
    Waiting,
}

/// One slice of a read (at most [`CANCEL_SLICE`] of waiting), with
/// cancellation disabled, as in every entry point: the library's work reaches
/// cancellation points (the wait sleeps; the last user of a stream shut down
/// while it was read finishes its log). A stream shut down while the call
/// waited (gone from the table in a later slice, or flagged during this one)
/// ends the call with `EINVAL`, as POSIX says of `posix_trace_shutdown`.
fn read_slice(trid: c_ulong, o: &Outs, mode: Mode) -> Slice {
    let _nc = NoCancel::new();
    // A stream read that may wait keeps signals blocked but while it naps,
    // so a handler that runs during the call is seen (EINTR; dropped before
    // `_nc`: a handler due runs then). Set by `getnext` once it knows the
    // object is a stream.
    let mut sig = None;
    match getnext(trid, o, mode, &mut sig) {
        Ok(true) => Slice::Done(0),
        // A handler due as the slice ended interrupted the call.
        Ok(false) if sig.as_ref().is_some_and(CallSignals::due) => Slice::Done(libc::EINTR),
        Ok(false) => Slice::Waiting,
        Err(e) => Slice::Done(e),
    }
}

/// `Ok(false)`: the slice ended and the read goes on. A stream read that may
/// wait blocks signals into `sig` (see [`read_slice`]); a log read from a
/// pipe blocks them only while it polls the pipe for its writer (its
/// `LogWaiter`: `EINTR` when a handler ran); it never waits while it reads
/// (it takes in what came, and a record written in parts waits for its rest
/// as for any record: `trace_log_wait.c`).
fn getnext(
    trid: c_ulong,
    o: &Outs,
    mode: Mode,
    sig: &mut Option<CallSignals>,
) -> Result<bool, c_int> {
    o.check()?;
    let obj = get(trid)?;
    let read = match &*obj {
        // POSIX reads active streams without a log only: this one's events
        // belong to its log, and a read would take them from it.
        Obj::Stream { trace, .. } if trace.has_log() => Err(libc::EINVAL),
        Obj::Stream {
            trace, shut_down, ..
        } => {
            let r = match mode {
                Mode::Try => trace.try_getnext(),
                Mode::Block | Mode::Until(_) => {
                    let sig = &*sig.get_or_insert_with(CallSignals::block);
                    let now = Instant::now();
                    let slice_end = now.checked_add(CANCEL_SLICE).unwrap_or(now);
                    let (until, last) = match mode {
                        Mode::Until(Some(d)) if d <= slice_end => (d, true),
                        _ => (slice_end, false),
                    };
                    let mut nap = |d| sig.nap(d);
                    match trace.wait_next_napping(Some(until), &mut nap) {
                        Err(e) if !last && errno_of(&e) == libc::ETIMEDOUT => return Ok(false),
                        r => r,
                    }
                }
            };
            // Shut down while this read ran: EINVAL, whatever it woke up to
            // (nothing, or the STOP the shutdown recorded).
            if shut_down.load(Ordering::Acquire) {
                return Err(libc::EINVAL);
            }
            match r.map_err(|e| errno_of(&e))? {
                Some(e) => o.put(&e, to_c(e.id), &|tid| trace.thread_of(tid)),
                None => o.none(),
            }
        }
        Obj::Log { log, waiter, .. } => {
            if !matches!(mode, Mode::Block) {
                return Err(libc::EINVAL);
            }
            let mut l = lock(log);
            // A log read from a pipe waits for its writer without the log's
            // lock, which the calls on its attributes, status and names
            // take, one slice at a time (a cancel is acted on between two,
            // and a log closed meanwhile is gone from the table at the
            // next: `EINVAL`); the lock only to take in what came, without
            // waiting, and to read once the next event is whole (or the
            // log ends). The first part of a record written in parts is
            // kept, and its rest waited for here, as any record.
            if let Some(w) = waiter {
                if !l.read_available() {
                    drop(l);
                    // POSIX: EINTR, "the call had no effect", when a signal
                    // handler runs meanwhile.
                    return match w.wait_interruptible(CANCEL_SLICE) {
                        Err(e) if e.kind() == rt::ErrorKind::Interrupted => Err(libc::EINTR),
                        _ => Ok(false),
                    };
                }
            }
            match l.next_event() {
                Ok(Some(e)) => {
                    let id = to_c_named(e.id, l.name(e.id));
                    o.put(&e, id, &|_| None)
                }
                Ok(None) => o.none(),
                // A log cut short (its writer still running or crashed) ends
                // after its last complete event.
                Err(e) if e.kind() == rt::ErrorKind::Truncated => o.none(),
                Err(_) => Err(libc::EIO),
            }
        }
    };
    read.map(|()| true)
}

/// A read that may wait: a cancellation point (POSIX lets these two be one).
/// A pending `pthread_cancel` is acted on at entry, before anything is read,
/// and between slices of the wait, with no event taken and nothing of the
/// library's held; never inside the library's work.
///
/// Only plain values live in this frame (see [`testcancel`]).
fn read_cancellable(trid: c_ulong, o: &Outs, mode: Mode) -> c_int {
    testcancel();
    loop {
        match read_slice(trid, o, mode) {
            // POSIX: EINTR, "the call had no effect"; after a handler with
            // SA_RESTART the read goes on (see `crate::restart`).
            Slice::Done(libc::EINTR) => {
                testcancel();
                if !handlers_restart() {
                    return libc::EINTR;
                }
            }
            Slice::Done(r) => return r,
            Slice::Waiting => testcancel(),
        }
    }
}

/// Blocks while the stream runs and holds no event; `*unavailable = 1` once it is
/// suspended and empty, or at the end of a log. `EINVAL` for an active stream
/// with a log (read its log). `EINTR`, no event taken, when a signal handler
/// runs while it waits (it goes on after handlers installed with
/// `SA_RESTART`), also on a log read from a pipe or FIFO while it waits for
/// the writer. `EINVAL` when the stream is shut down while it waits
/// (POSIX: the waiting thread "is unblocked with the error [EINVAL]"), or
/// the log closed. A cancellation point (see [`read_cancellable`]).
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_getnext_event(
    trid: c_ulong,
    event: *mut CEventInfo,
    data_ptr: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
) -> c_int {
    let o = Outs {
        event,
        data: data_ptr,
        num_bytes,
        data_len,
        unavailable,
    };
    read_cancellable(trid, &o, Mode::Block)
}

/// `abstime` is CLOCK_REALTIME; `ETIMEDOUT` when it passes with no event; `EINVAL`
/// for a log or a bad `abstime`; `EINTR` as `posix_trace_getnext_event`. A cancellation point, as
/// `posix_trace_getnext_event`.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_timedgetnext_event(
    trid: c_ulong,
    event: *mut CEventInfo,
    data_ptr: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
    abstime: *const libc::timespec,
) -> c_int {
    // SAFETY: a non-null timespec pointer points to one (caller's contract).
    let Some(t) = (unsafe { abstime.as_ref() }) else {
        return libc::EINVAL;
    };
    // POSIX makes only a bad tv_nsec EINVAL: a deadline before 1970 is
    // merely past (it was EINVAL).
    if !(0..1_000_000_000).contains(&t.tv_nsec) {
        return libc::EINVAL;
    }
    // On the monotonic clock, as the core does: a deadline in the past polls
    // once, one too far ahead to express means no limit.
    let left = match u64::try_from(t.tv_sec) {
        Ok(s) => (SystemTime::UNIX_EPOCH + Duration::new(s, t.tv_nsec as u32))
            .duration_since(SystemTime::now())
            .unwrap_or_default(),
        Err(_) => Duration::ZERO,
    };
    let o = Outs {
        event,
        data: data_ptr,
        num_bytes,
        data_len,
        unavailable,
    };
    read_cancellable(trid, &o, Mode::Until(Instant::now().checked_add(left)))
}

/// Never blocks, and is no cancellation point; `EINVAL` for a log.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_trygetnext_event(
    trid: c_ulong,
    event: *mut CEventInfo,
    data_ptr: *mut c_void,
    num_bytes: usize,
    data_len: *mut usize,
    unavailable: *mut c_int,
) -> c_int {
    let o = Outs {
        event,
        data: data_ptr,
        num_bytes,
        data_len,
        unavailable,
    };
    let _nc = NoCancel::new();
    match getnext(trid, &o, Mode::Try, &mut None) {
        Ok(_) => 0,
        Err(e) => e,
    }
}

/// `EBADF` for a descriptor not open for reading; `EINVAL` for a file that is not
/// a trace log (a directory too). A descriptor that cannot seek (a pipe, a FIFO, a socket) is
/// read once, from where it is, as the log comes (see `TraceLog::from_file`):
/// the open waits for the writer up to the first event, `EINVAL` when the
/// writer closes its end before the header is whole or writes bytes that are
/// not a log's (as soon as they come); `EINTR`, nothing opened, when a
/// signal handler runs while it waits (it goes on after handlers installed
/// with `SA_RESTART`) before any byte of the log came: once it took some
/// from the pipe, which cannot give them back, it goes on after every
/// handler. Not a cancellation point (POSIX lists it among the functions
/// that "may" be one: a cancel acted on once bytes were taken would lose
/// them for every later open; see capi/README.md).
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_open(fildes: c_int, trid: *mut c_ulong) -> c_int {
    let _nc = NoCancel::new();
    if trid.is_null() {
        return libc::EINVAL;
    }
    ret(dup_fd(fildes, false).and_then(|f| {
        let l =
            TraceLog::from_file_waiting(f, &mut wait_for_writer).map_err(|e| match e.kind() {
                rt::ErrorKind::Corrupt | rt::ErrorKind::Truncated => libc::EINVAL,
                // A directory holds no log: POSIX's EINVAL, not the read's
                // EISDIR.
                _ if e.errno() == Some(libc::EISDIR) => libc::EINVAL,
                _ => errno_of(&e),
            })?;
        out(
            trid,
            insert(Obj::Log {
                waiter: l.waiter(),
                log: Box::new(Mutex::new(l)),
                cursor: Mutex::new(0),
            }),
        )
    }))
}

/// `posix_trace_open`'s wait for the writer of a log read from a pipe: as
/// long as it takes, with the program's signal mask (POSIX: EINTR, "the
/// operation was interrupted by a signal"), going on after a handler
/// installed with `SA_RESTART` (see `crate::restart`). A handler that runs
/// while the open is awake between two waits goes unseen, as in
/// `posix_trace_getnext_event`'s wait.
fn wait_for_writer(w: &LogWaiter) -> rt::Result<()> {
    loop {
        match w.wait_interruptible(Duration::from_secs(3600)) {
            Err(e) if e.kind() == rt::ErrorKind::Interrupted && handlers_restart() => {}
            r => return r.map(drop),
        }
    }
}

/// `EINVAL` for an active stream; `ESPIPE` for a log read from a pipe or
/// socket once an event was read (it cannot go back; reading goes on).
#[no_mangle]
pub extern "C-unwind" fn posix_trace_rewind(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).and_then(|o| match &*o {
        Obj::Log { log, .. } => lock(log).rewind().map_err(|e| errno_of(&e)),
        Obj::Stream { .. } => Err(libc::EINVAL),
    }))
}

/// `EINVAL` for an active stream (use `posix_trace_shutdown`).
#[no_mangle]
pub extern "C-unwind" fn posix_trace_close(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(remove(trid, |o| matches!(o, Obj::Log { .. })).map(drop))
}
