//! The exported `aio_*` functions.
//!
//! An aiocb the library knows carries a tag in `__glibc_reserved[0]` (a constant
//! mixed with the aiocb's address and the process's fork generation), written at
//! submission and turned into a second tag by `aio_return` (its status stays
//! readable by `aio_error`, as in glibc); the status is `__error_code` /
//! `__return_value`, as in glibc, so `aio_error` is a load.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, Ordering};

use rt::aio::capi::{self as raw, Aiocb, CEngine, COp, CRequest, CallSignals};
use rt::aio::{Notify, AIO_PRIO_DELTA_MAX};

use crate::debug::debug;
use crate::nocancel::NoCancel;
use crate::notify::from_sigevent;
use crate::restart::handlers_restart;

const MAGIC: u64 = 0x7072_7472_6169_6f63;
/// Mixed into the tag of an aiocb whose result `aio_return` took.
const RETURNED: u64 = 0x7265_7475_726e_6564;

/// Bumped in a forked child: aiocbs tagged before the fork are unknown there.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static ENGINE: AtomicPtr<CEngine> = AtomicPtr::new(std::ptr::null_mut());
static INIT: AtomicBool = AtomicBool::new(false);
/// `aio_init` settings: ring entries and pool threads (0: defaults).
pub(crate) static CFG_ENTRIES: AtomicU32 = AtomicU32::new(0);
pub(crate) static CFG_WORKERS: AtomicU32 = AtomicU32::new(0);

const DEFAULT_ENTRIES: u32 = 256;
const DEFAULT_WORKERS: u32 = 16;
const DEFAULT_MAX: usize = 1 << 20;

thread_local! {
    /// This thread is inside a library call that may take the engine lock: a
    /// signal handler calling `aio_error`/`aio_return` must not take it again.
    static IN_LIB: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Marks the calling thread as inside the library for its lifetime.
pub(crate) struct InLib;
impl InLib {
    pub(crate) fn enter() -> InLib {
        IN_LIB.with(|c| c.set(c.get() + 1));
        InLib
    }
}
impl Drop for InLib {
    fn drop(&mut self) {
        IN_LIB.with(|c| c.set(c.get() - 1));
    }
}

/// True if the calling thread is inside a library call: a signal handler
/// interrupted it, and must not take the engine lock.
pub(crate) fn in_lib() -> bool {
    IN_LIB.with(|c| c.get()) > 0
}

/// Reaps finished requests unless this thread is already inside the library
/// (then `aio_error` was called from a signal handler: it reports what is known).
fn poll_if_safe() {
    if in_lib() {
        return;
    }
    if let Some(eng) = engine_if_started() {
        let _g = InLib::enter();
        eng.poll();
    }
}

/// After a lock-free read found `cb` done: if it notifies by `SIGEV_SIGNAL`
/// or `SIGEV_THREAD_ID`, takes the engine lock once (unless this thread is
/// inside the library), so the completion that stored the status, and sends
/// the signal before it releases the lock, is over. The caller then never sees a request done
/// before its signal was generated, as with glibc (whose `aio_error` and
/// `aio_suspend` look under its lock).
///
/// # Safety
/// `cb` points to a `struct aiocb`.
pub(crate) unsafe fn signal_sent(cb: *const Aiocb) {
    // SAFETY: valid by contract.
    let how = unsafe { (*cb).aio_sigevent.sigev_notify };
    let by_signal = how == libc::SIGEV_SIGNAL || how == crate::notify::SIGEV_THREAD_ID;
    if !by_signal || in_lib() {
        return;
    }
    if let Some(eng) = engine_if_started() {
        let _g = InLib::enter();
        let _ = eng.wait(None, &mut || true);
    }
}

fn set_errno(e: i32) {
    // SAFETY: __errno_location returns the calling thread's errno.
    unsafe { *libc::__errno_location() = e };
}

pub(crate) fn fail(e: i32) -> c_int {
    set_errno(e);
    -1
}

fn tag_for(cb: *const Aiocb) -> u64 {
    MAGIC
        ^ (cb as u64).rotate_left(29)
        ^ EPOCH
            .load(Ordering::Relaxed)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// # Safety
/// `cb` points to a `struct aiocb`.
unsafe fn tag_cell<'a>(cb: *const Aiocb) -> &'a AtomicU64 {
    // SAFETY: the caller guarantees `cb` is valid; the field is an aligned u64.
    unsafe { AtomicU64::from_ptr(std::ptr::addr_of!((*cb).__glibc_reserved[0]) as *mut u64) }
}

/// True if the library submitted this aiocb (and `aio_return` has not taken it).
///
/// # Safety
/// `cb` points to a `struct aiocb`.
unsafe fn known(cb: *const Aiocb) -> bool {
    // SAFETY: forwarded contract.
    unsafe { tag_cell(cb) }.load(Ordering::Acquire) == tag_for(cb)
}

/// True if `aio_return` took this aiocb's result (and it was not submitted
/// again since).
///
/// # Safety
/// `cb` points to a `struct aiocb`.
unsafe fn returned(cb: *const Aiocb) -> bool {
    // SAFETY: forwarded contract.
    unsafe { tag_cell(cb) }.load(Ordering::Acquire) == tag_for(cb) ^ RETURNED
}

/// Marks a done aiocb whose result `aio_return` took: the library no longer
/// writes it, and `aio_error` reads its final status again.
///
/// # Safety
/// `cb` points to a `struct aiocb` that is not in flight.
unsafe fn set_returned(cb: *mut Aiocb) {
    // SAFETY: forwarded contract.
    unsafe { tag_cell(cb) }.store(tag_for(cb) ^ RETURNED, Ordering::Release);
}

/// # Safety
/// `cb` points to a `struct aiocb`.
unsafe fn set_tag(cb: *mut Aiocb, on: bool) {
    let v = if on { tag_for(cb) } else { 0 };
    // SAFETY: forwarded contract.
    unsafe { tag_cell(cb) }.store(v, Ordering::Release);
}

/// Stores a final status into an aiocb that never reached the engine (a refused
/// `lio_listio` entry), so `aio_error`/`aio_return` report it.
///
/// # Safety
/// `cb` points to a writable `struct aiocb` not in flight.
unsafe fn set_failed(cb: *mut Aiocb, err: i32) {
    // SAFETY: forwarded contract; the aiocb is not in flight, nothing else writes it.
    unsafe {
        (*cb).__return_value = -1;
        (*cb).__error_code = err;
        set_tag(cb, true);
    }
}

pub(crate) fn engine_if_started() -> Option<&'static CEngine> {
    let p = ENGINE.load(Ordering::Acquire);
    // SAFETY: a non-null ENGINE is a leaked Box that is never freed.
    unsafe { p.as_ref() }
}

extern "C" fn atfork_child() {
    // The parent's engine (its ring, threads and requests) is not ours: leak it.
    ENGINE.store(std::ptr::null_mut(), Ordering::Relaxed);
    INIT.store(false, Ordering::Relaxed);
    EPOCH.fetch_add(1, Ordering::Relaxed);
    CEngine::after_fork_child();
}

/// Registers [`atfork_child`], and the engine's own fork hook, at load time,
/// while the process is still single-threaded. (Both used to be registered by
/// the first request, ours under `INIT` and the engine's under a `Once`: a
/// fork by another thread in between left the child with `INIT` taken, or the
/// `Once` running, by a thread it does not have, and its first request spun
/// or waited for good; `aio_fork_first_use.c`.)
#[used]
#[link_section = ".init_array"]
static ATFORK_AT_LOAD: extern "C" fn() = register_atfork;

extern "C" fn register_atfork() {
    rt::aio::capi::install_fork_hook();
    // SAFETY: `atfork_child` only does atomic stores.
    unsafe { libc::pthread_atfork(None, None, Some(atfork_child)) };
}

fn env_usize(name: &str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Some(n),
        _ => {
            debug(format_args!(
                "{name}={v:?} is not a positive number: ignored"
            ));
            None
        }
    }
}

/// The process's engine, started on first use.
fn engine() -> Result<&'static CEngine, i32> {
    if let Some(e) = engine_if_started() {
        return Ok(e);
    }
    while INIT
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        std::thread::yield_now();
    }
    if let Some(e) = engine_if_started() {
        INIT.store(false, Ordering::Release);
        return Ok(e);
    }
    let entries = match CFG_ENTRIES.load(Ordering::Relaxed) {
        0 => DEFAULT_ENTRIES,
        n => n,
    };
    let workers = match CFG_WORKERS.load(Ordering::Relaxed) {
        0 => DEFAULT_WORKERS,
        n => n,
    } as usize;
    let max = env_usize("POSIXRT_AIO_MAX").unwrap_or(DEFAULT_MAX);
    let r = match CEngine::new(entries, workers, max) {
        Ok(e) => {
            debug(format_args!("engine: {}", e.backend()));
            let p = Box::into_raw(Box::new(e));
            ENGINE.store(p, Ordering::Release);
            // SAFETY: just leaked; never freed.
            Ok(unsafe { &*p })
        }
        Err(e) => {
            debug(format_args!("no AIO engine: {e}"));
            Err(libc::EAGAIN)
        }
    };
    INIT.store(false, Ordering::Release);
    r
}

/// How a write goes on `fd`: `(ordered, nonblock, blocking stream)`. Ordered
/// for an `O_APPEND` fd or one that cannot seek: writes on it go in order.
/// Nonblock for an `O_NONBLOCK` one that cannot seek: a write that would block
/// there ends with EAGAIN, as glibc's `write(2)` does; else it is a blocking
/// stream, where a write goes on until it is whole. A closed fd, or one not open for
/// writing, is not refused here: the write fails with EBADF as the request's
/// status, as glibc's does (and the request still notifies, which a
/// `lio_listio` list counts on).
fn write_mode(fd: i32) -> (bool, bool, bool) {
    // SAFETY: fcntl(F_GETFL) on any int is safe.
    let fl = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if fl < 0 || fl & libc::O_ACCMODE == libc::O_RDONLY {
        return (false, false, false);
    }
    let append = fl & libc::O_APPEND != 0;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat writes one struct stat.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return (append, false, false);
    }
    // SAFETY: fstat succeeded.
    let mode = unsafe { st.assume_init() }.st_mode & libc::S_IFMT;
    let stream = mode != libc::S_IFREG && mode != libc::S_IFBLK;
    let nonblock = stream && fl & libc::O_NONBLOCK != 0;
    (append || stream, nonblock, stream && !nonblock)
}

/// Reads and checks one read/write aiocb: the request, or the errno.
///
/// # Safety
/// `cb` points to a valid `struct aiocb`.
unsafe fn prepare_rw(cb: *mut Aiocb, op: COp) -> Result<CRequest, i32> {
    // SAFETY: the caller guarantees `cb` is valid; the fields are read by value.
    let (fd, prio, buf, len, offset, ev) = unsafe {
        (
            (*cb).aio_fildes,
            (*cb).aio_reqprio,
            (*cb).aio_buf,
            (*cb).aio_nbytes,
            (*cb).aio_offset,
            (*cb).aio_sigevent,
        )
    };
    if !(0..=AIO_PRIO_DELTA_MAX).contains(&prio) {
        debug(format_args!(
            "aio_reqprio {prio} is not in 0..={AIO_PRIO_DELTA_MAX}: EINVAL"
        ));
        return Err(libc::EINVAL);
    }
    let offset = crate::offset::checked(fd, offset, len)?;
    let (ordered, nonblock, stream) = match op {
        COp::Write => write_mode(fd),
        _ => (false, false, false),
    };
    let notify = from_sigevent(&ev)?;
    Ok(CRequest {
        cb,
        op,
        fd,
        offset,
        buf: buf as *mut u8,
        len,
        reqprio: prio as u8,
        ordered,
        nonblock,
        stream,
        notify,
    })
}

/// [`in_flight`] for an aiocb being submitted, which may come from `malloc`
/// with its private words never written: their value is handled whatever it
/// is, so memcheck is told the tag is defined (see [`raw::make_mem_defined`]).
///
/// # Safety
/// `cb` points to a `struct aiocb`.
unsafe fn in_flight_at_submit(cb: *const Aiocb) -> bool {
    // SAFETY: forwarded contract: the tag word is inside `*cb`.
    let tag = unsafe { std::ptr::addr_of!((*cb).__glibc_reserved[0]) };
    raw::make_mem_defined(tag.cast(), std::mem::size_of::<u64>());
    // SAFETY: forwarded contract.
    unsafe { in_flight(cb) }
}

/// # Safety
/// `cb` points to a `struct aiocb`.
pub(crate) unsafe fn in_flight(cb: *const Aiocb) -> bool {
    // SAFETY: forwarded contract.
    unsafe { known(cb) && raw::error_code(cb) == libc::EINPROGRESS }
}

/// Submits one request: 0, or -1 with errno.
///
/// # Safety
/// `cb` is null or points to a valid `struct aiocb` whose buffer stays valid
/// until the request is done.
unsafe fn submit_one(cb: *mut Aiocb, op: Option<COp>, sync_op: c_int) -> c_int {
    let _g = InLib::enter();
    if cb.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: `cb` is valid (caller's contract).
    if unsafe { in_flight_at_submit(cb) } {
        debug(format_args!("aiocb {cb:p} is already in flight: EINVAL"));
        return fail(libc::EINVAL);
    }
    let req = match op {
        // SAFETY: `cb` is valid.
        Some(op) => unsafe { prepare_rw(cb, op) },
        // SAFETY: `cb` is valid.
        None => unsafe { prepare_fsync(cb, sync_op) },
    };
    let req = match req.and_then(|r| engine().map(|e| (r, e))) {
        Ok(r) => r,
        Err(e) => {
            // Refused: the aiocb is no request now. Its old request's status
            // (one done, or returned) must not read as this call's.
            // SAFETY: `cb` is valid and not in flight: the library no longer
            // writes it.
            unsafe { set_tag(cb, false) };
            return fail(e);
        }
    };
    let (req, eng) = req;
    // SAFETY: `cb` is valid; the tag is written before the request can complete.
    unsafe { set_tag(cb, true) };
    // SAFETY: the caller keeps `cb` and its buffer valid until the request is done.
    match unsafe { eng.submit(vec![req], None, false) } {
        Ok(_) => 0,
        Err(e) => {
            // SAFETY: not submitted: the aiocb is ours to untag.
            unsafe { set_tag(cb, false) };
            debug(format_args!("submission refused: {e}"));
            fail(e.errno().unwrap_or(libc::EAGAIN))
        }
    }
}

/// # Safety
/// `cb` points to a valid `struct aiocb`.
unsafe fn prepare_fsync(cb: *mut Aiocb, op: c_int) -> Result<CRequest, i32> {
    let mode = if op == libc::O_SYNC {
        COp::Fsync
    } else if op == libc::O_DSYNC {
        COp::Fdatasync
    } else {
        debug(format_args!(
            "aio_fsync op {op:#x} is neither O_SYNC nor O_DSYNC: EINVAL"
        ));
        return Err(libc::EINVAL);
    };
    // SAFETY: the caller guarantees `cb` is valid.
    let (fd, ev) = unsafe { ((*cb).aio_fildes, (*cb).aio_sigevent) };
    if let Some(e) = raw::fsync_refusal(fd) {
        let why = if e == libc::EBADF {
            "is not open for writing: EBADF"
        } else {
            "cannot be synchronised (not a regular file or block device): EINVAL"
        };
        debug(format_args!("aio_fsync: fd {fd} {why}"));
        return Err(e);
    }
    let notify = from_sigevent(&ev)?;
    Ok(CRequest {
        cb,
        op: mode,
        fd,
        offset: 0,
        buf: std::ptr::null_mut(),
        len: 0,
        reqprio: 0,
        ordered: true,
        nonblock: false,
        stream: false,
        notify,
    })
}

/// `aio_read`: queue a read of `aio_nbytes` bytes at `aio_offset` of
/// `aio_fildes` into `aio_buf` (`aio_lio_opcode` is ignored).
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_read.html>
///
/// # Safety
/// `cb` is null or a valid `struct aiocb`; it and its buffer stay valid until
/// the request is done.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_read(cb: *mut Aiocb) -> c_int {
    let _nc = NoCancel::new();
    // SAFETY: forwarded contract.
    unsafe { submit_one(cb, Some(COp::Read), 0) }
}

/// `aio_write`: queue a write (in order on an `O_APPEND` or non-seekable fd).
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_write.html>
///
/// # Safety
/// As [`aio_read`].
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_write(cb: *mut Aiocb) -> c_int {
    let _nc = NoCancel::new();
    // SAFETY: forwarded contract.
    unsafe { submit_one(cb, Some(COp::Write), 0) }
}

/// `aio_fsync`: `O_SYNC` (fsync) or `O_DSYNC` (fdatasync) of `aio_fildes`, once
/// every request queued on it before has finished.
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_fsync.html>
///
/// # Safety
/// As [`aio_read`].
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_fsync(op: c_int, cb: *mut Aiocb) -> c_int {
    let _nc = NoCancel::new();
    // SAFETY: forwarded contract.
    unsafe { submit_one(cb, None, op) }
}

/// `aio_error`: EINPROGRESS, 0, or the request's errno (also after `aio_return`
/// took its result, as glibc); -1/EINVAL for an aiocb that is not a submitted
/// request.
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_error.html>
///
/// # Safety
/// `cb` is null or a valid `struct aiocb`.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_error(cb: *const Aiocb) -> c_int {
    let _nc = NoCancel::new();
    if cb.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: valid by contract.
    if !unsafe { known(cb) } {
        // SAFETY: valid by contract.
        if unsafe { returned(cb) } {
            // SAFETY: done; the library no longer writes it.
            return unsafe { raw::error_code(cb) };
        }
        return fail(libc::EINVAL);
    }
    raw::looked();
    // SAFETY: valid by contract.
    let e = unsafe { raw::error_code(cb) };
    if e != libc::EINPROGRESS {
        // SAFETY: valid by contract.
        unsafe { signal_sent(cb) };
        return e;
    }
    poll_if_safe();
    // SAFETY: valid by contract.
    let e = unsafe { raw::error_code(cb) };
    if e != libc::EINPROGRESS {
        // SAFETY: valid by contract.
        unsafe { signal_sent(cb) };
    }
    e
}

/// `aio_return`: the request's result (bytes, or -1 with errno), once; then the
/// aiocb is the program's again (a second call: -1/EINVAL; `aio_error` still
/// gives its status). Before the request is done: 0, and nothing is taken (as
/// glibc).
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_return.html>
///
/// # Safety
/// `cb` is null or a valid `struct aiocb`.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_return(cb: *mut Aiocb) -> isize {
    let _nc = NoCancel::new();
    if cb.is_null() {
        return fail(libc::EINVAL) as isize;
    }
    // SAFETY: valid by contract.
    if !unsafe { known(cb) } {
        return fail(libc::EINVAL) as isize;
    }
    raw::looked();
    // SAFETY: valid by contract.
    let mut e = unsafe { raw::error_code(cb) };
    if e == libc::EINPROGRESS {
        poll_if_safe();
        // SAFETY: valid by contract.
        e = unsafe { raw::error_code(cb) };
        if e == libc::EINPROGRESS {
            // Too early (POSIX: undefined). As glibc: 0, errno untouched, and
            // the request goes on; its result is still to be taken.
            return 0;
        }
    }
    // SAFETY: valid by contract; the request is done, the library no longer
    // writes this aiocb.
    let ret = unsafe { (*cb).__return_value };
    // SAFETY: as above.
    unsafe { set_returned(cb) };
    if e != 0 {
        set_errno(e);
        return -1;
    }
    ret
}

/// `aio_cancel`: cancel one request (`cb`) or every request on `fd` (`cb` NULL):
/// `AIO_CANCELED`, `AIO_NOTCANCELED`, `AIO_ALLDONE`; -1/EBADF for a bad fd,
/// -1/EINVAL if `cb->aio_fildes != fd`.
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/aio_cancel.html>
///
/// # Safety
/// `cb` is null or a valid `struct aiocb`.
#[no_mangle]
pub unsafe extern "C-unwind" fn aio_cancel(fd: c_int, cb: *mut Aiocb) -> c_int {
    let _nc = NoCancel::new();
    // SAFETY: fcntl(F_GETFD) on any int is safe.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } < 0 {
        return fail(libc::EBADF);
    }
    if !cb.is_null() {
        // SAFETY: valid by contract.
        if unsafe { (*cb).aio_fildes } != fd {
            return fail(libc::EINVAL);
        }
        // SAFETY: valid by contract.
        if !unsafe { in_flight(cb) } {
            return libc::AIO_ALLDONE;
        }
    }
    let Some(eng) = engine_if_started() else {
        return libc::AIO_ALLDONE;
    };
    let _g = InLib::enter();
    if cb.is_null() {
        return eng.cancel_fd(fd);
    }
    // SAFETY: valid by contract; the name was stored at submission.
    let ud = unsafe { AtomicU64::from_ptr(std::ptr::addr_of_mut!((*cb).__next_prio)) }
        .load(Ordering::Relaxed);
    eng.cancel(ud)
}

/// `lio_listio`: submit a list (`LIO_READ`, `LIO_WRITE`, `LIO_NOP`, NULL
/// entries skipped); `LIO_WAIT` waits for all, `LIO_NOWAIT` notifies `sig` once
/// when all are done. An invalid entry gets its own status (EINVAL) and the call
/// returns -1/EIO; the valid entries still run.
///
/// <https://pubs.opengroup.org/onlinepubs/9799919799/functions/lio_listio.html>
///
/// # Safety
/// `list` holds `nent` pointers, each null or a valid `struct aiocb` whose
/// buffer stays valid until its request is done; `sig` is null or valid.
#[no_mangle]
pub unsafe extern "C-unwind" fn lio_listio(
    mode: c_int,
    list: *const *mut Aiocb,
    nent: c_int,
    sig: *const raw::SigEvent,
) -> c_int {
    let _nc = NoCancel::new();
    if mode != libc::LIO_WAIT && mode != libc::LIO_NOWAIT {
        debug(format_args!(
            "lio_listio mode {mode} is neither LIO_WAIT nor LIO_NOWAIT: EINVAL"
        ));
        return fail(libc::EINVAL);
    }
    if nent < 0 || (nent > 0 && list.is_null()) {
        return fail(libc::EINVAL);
    }
    let wait = mode == libc::LIO_WAIT;
    if wait {
        rt::aio::capi::interruptible_call_starts();
    }
    let list_notify = if mode == libc::LIO_NOWAIT && !sig.is_null() {
        // SAFETY: non-null `sig` is valid (contract).
        match from_sigevent(unsafe { &*sig }) {
            Ok(n) => n,
            Err(e) => return fail(e),
        }
    } else {
        Notify::None
    };
    // SAFETY: `list` holds `nent` pointers (contract).
    let cbs: &[*mut Aiocb] = if nent == 0 {
        &[]
    } else {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(list, nent as usize) }
    };
    let mut reqs = Vec::with_capacity(cbs.len());
    let mut refused: Vec<(*mut Aiocb, i32)> = Vec::new();
    let mut busy = 0usize;
    for &cb in cbs.iter().filter(|p| !p.is_null()) {
        // SAFETY: non-null entries are valid (contract).
        let opcode = unsafe { (*cb).aio_lio_opcode };
        let op = match opcode {
            libc::LIO_READ => COp::Read,
            libc::LIO_WRITE => COp::Write,
            libc::LIO_NOP => continue,
            other => {
                debug(format_args!(
                    "aio_lio_opcode {other} is not LIO_READ, LIO_WRITE or LIO_NOP: EINVAL"
                ));
                refused.push((cb, libc::EINVAL));
                continue;
            }
        };
        // SAFETY: valid (contract).
        if unsafe { in_flight_at_submit(cb) } {
            debug(format_args!(
                "aiocb {cb:p} is already in flight: not resubmitted"
            ));
            busy += 1;
            continue;
        }
        // SAFETY: valid (contract).
        match unsafe { prepare_rw(cb, op) } {
            Ok(r) => reqs.push(r),
            Err(e) => refused.push((cb, e)),
        }
    }
    let _g = InLib::enter();
    let cbs_ok: Vec<*mut Aiocb> = reqs.iter().map(|r| r.cb).collect();
    // A list refused whole (no engine, or past the request limit): nothing
    // was submitted, and each entry says why (POSIX: after EAGAIN the
    // program checks each entry's status).
    let refuse_all = |errno: i32| {
        for &cb in &cbs_ok {
            // SAFETY: valid (contract) and not submitted.
            unsafe { set_failed(cb, errno) };
        }
        for &(cb, err) in &refused {
            // SAFETY: as above.
            unsafe { set_failed(cb, err) };
        }
        fail(errno)
    };
    let eng = match engine() {
        Ok(e) => e,
        Err(e) => return refuse_all(e),
    };
    for &cb in &cbs_ok {
        // SAFETY: valid (contract); tagged before the request can complete.
        unsafe { set_tag(cb, true) };
    }
    // SAFETY: the caller keeps the aiocbs and buffers valid until done.
    let names = match unsafe { eng.submit(reqs, Some((list_notify, wait)), wait) } {
        Ok(n) => n,
        Err(e) => {
            debug(format_args!("lio_listio refused: {e}"));
            return refuse_all(e.errno().unwrap_or(libc::EAGAIN));
        }
    };
    for &(cb, err) in &refused {
        // SAFETY: not submitted; each entry reports why.
        unsafe { set_failed(cb, err) };
    }
    let bad = refused.len() + busy;
    if wait {
        // Done already (cached reads complete inside their submission): no
        // signal mask. Otherwise signals are blocked from here, before
        // anything else the wait does, and come through only while it
        // sleeps: a handler due at any later moment ends the wait with EINTR
        // (the requests go on). One that ran while the call submitted its
        // list, before it had to wait, does not (POSIX: EINTR for a signal
        // "delivered while waiting"), as in glibc: blocking them from the
        // call's start made every call two system calls longer. (Not in a
        // handler that interrupted the library: the interrupted wait may
        // hold the mask.)
        let mut signals = if !in_lib() && !eng.kept_done(&names) {
            CallSignals::block()
        } else {
            CallSignals::none()
        };
        let kept = eng.wait_kept_blocked(&mut signals, &names);
        // (A handler due runs now; the restarted wait blocks signals again
        // from its first sleep on.)
        drop(signals);
        let waited = match kept {
            // SAFETY: the submitted aiocbs stay valid until done (contract).
            Err(libc::EINTR) => unsafe { wait_statuses(eng, &cbs_ok) },
            r => r,
        };
        match waited {
            Ok(failed) if failed + bad == 0 => 0,
            Ok(_) => fail(libc::EIO),
            Err(e) => fail(e),
        }
    } else {
        let out = eng.end_call(&names);
        let r = if bad > 0 { fail(libc::EIO) } else { 0 };
        drop((names, cbs_ok, refused, _g));
        // The last step: see `CEngine::end_call`.
        drop(out);
        r
    }
}

/// The rest of a `LIO_WAIT` that a signal handler interrupted: done if every
/// aiocb of `cbs` has its final status by now; otherwise, after handlers
/// installed with `SA_RESTART` (see [`crate::restart`]), waits until they all
/// have (the requests free their slots themselves once `wait_kept` has
/// returned). Returns how many failed, or `Err(EINTR)`.
///
/// # Safety
/// Each of `cbs` is a valid aiocb of a request of this engine.
unsafe fn wait_statuses(eng: &CEngine, cbs: &[*mut Aiocb]) -> Result<usize, i32> {
    // SAFETY: valid (contract); the status word is written by the engine.
    let status = |cb: *mut Aiocb| unsafe { raw::error_code(cb) };
    let all_done = || cbs.iter().all(|&cb| status(cb) != libc::EINPROGRESS);
    while !all_done() {
        if !handlers_restart() {
            return Err(libc::EINTR);
        }
        match eng.wait(None, &mut || all_done()) {
            Ok(_) | Err(libc::EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(cbs.iter().filter(|&&cb| status(cb) != 0).count())
}

#[allow(dead_code)]
fn _assert_layout() {
    const _: () = assert!(std::mem::size_of::<Aiocb>() == 168);
    const _: () = assert!(std::mem::size_of::<raw::SigEvent>() == 64);
    let _ = std::ptr::null::<c_void>();
}
