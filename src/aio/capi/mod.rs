//! Raw entry points for the C ABI (the `posixrt-capi` crate, `libposixrt.so`):
//! requests on a raw fd and a raw buffer that the C caller owns, whose status is
//! stored into the caller's glibc `struct aiocb` when they complete.
//!
//! Not part of the public API (hidden, no stability promise): the C library is
//! its only user. A C request lives in the same request table and runs on the
//! same engine as a Rust one. The difference is that nobody holds a handle: the
//! completion stores `__return_value` then `__error_code` into the aiocb and the
//! slot is freed at once, so `aio_error` is a load of `__error_code` and a
//! program that never calls `aio_return` leaks nothing. The request's name
//! (`(slot, generation)` as io_uring `user_data`) is kept in `__next_prio`, for
//! `aio_cancel`.
//!
//! Submissions are batched: a request submitted while other C requests are in
//! flight, or after another of the same thread that nothing looked at since
//! (`aio_error`, `aio_return`, a wait), with no notification, goes into the
//! io_uring submission queue without a system call. (A request entered at once
//! is reaped inside its call: a cached read is done when `aio_read` returns.) Whoever looks for a result next (`aio_error`, `aio_suspend`,
//! `aio_cancel`, another submission) enters the ring once for all of them, and a
//! flusher thread does it within `FLUSH_TICK` if nobody does, so a
//! fire-and-forget program still gets its I/O done. A pipelined program (fio's
//! `posixaio` at depth 32, the seed's line counter) then pays one
//! `io_uring_enter` per batch instead of one per request.
//!
//! Waits (`aio_suspend`, `LIO_WAIT`) return EINTR when a signal handler runs
//! (the C library restarts them after `SA_RESTART` handlers, as POSIX says):
//! the waiting thread reaps the ring itself
//! (`Ring::wait`) or sleeps on a futex word
//! bumped after C completions, once their signals were sent.

use std::ffi::{c_int, c_void};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::Arc;
use std::time::Duration;

use rustix::thread::futex::{self, Flags};

use super::backend::BackendInfo;
use super::engine::{Config, Engine, Inner, Kicked};
use super::hook;
use super::notify::Notify;
use super::submit::{Entry, Probes};
use super::table::{user_data, Hold, OpKind, RawOp, NO_LIST};
use crate::sys::prio::SchedClass;
use crate::{Error, ErrorKind, Result};

mod cancel;
mod fds;
mod release;
mod wait;
pub use fds::fsync_refusal;
use fds::{note_stream, own_copy};
pub use wait::CallSignals;

/// Tells memcheck that `len` bytes at `addr` are defined (a no-op natively):
/// for the C library's aiocb tag (see `sys/valgrind.rs`).
pub use crate::sys::valgrind::make_mem_defined;

/// glibc's `struct sigevent` (64 bytes on LP64 targets).
#[doc(hidden)]
#[repr(C)]
#[derive(Clone, Copy)]
pub struct SigEvent {
    /// `sigev_value` (`union sigval`).
    pub sigev_value: usize,
    /// `sigev_signo`.
    pub sigev_signo: c_int,
    /// `sigev_notify`.
    pub sigev_notify: c_int,
    /// The union: `_tid` (SIGEV_THREAD_ID) in the low 32 bits of word 0, or
    /// `_function` (word 0) and `_attribute` (word 1) for SIGEV_THREAD.
    pub un: [usize; 6],
}

/// glibc's `struct aiocb` (and `struct aiocb64`, the same on LP64 targets).
#[doc(hidden)]
#[repr(C)]
pub struct Aiocb {
    pub aio_fildes: c_int,
    pub aio_lio_opcode: c_int,
    pub aio_reqprio: c_int,
    pub aio_buf: *mut c_void,
    pub aio_nbytes: usize,
    pub aio_sigevent: SigEvent,
    /// posixrt: the request's name (io_uring `user_data`) while it runs.
    pub __next_prio: u64,
    pub __abs_prio: c_int,
    pub __policy: c_int,
    /// posixrt: EINPROGRESS, then 0 or the errno (what `aio_error` returns).
    pub __error_code: c_int,
    /// posixrt: bytes transferred, or -1 (what `aio_return` returns).
    pub __return_value: isize,
    pub aio_offset: i64,
    /// posixrt: a tag telling an aiocb it knows from garbage (the capi crate's).
    pub __glibc_reserved: [u64; 4],
}

/// The operation of a C request.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum COp {
    /// `LIO_READ` / `aio_read`.
    Read,
    /// `LIO_WRITE` / `aio_write`.
    Write,
    /// `aio_fsync(O_SYNC)`.
    Fsync,
    /// `aio_fsync(O_DSYNC)`.
    Fdatasync,
}

/// One C request, checked by the caller.
#[doc(hidden)]
pub struct CRequest {
    /// The caller's control block: gets the status.
    pub cb: *mut Aiocb,
    pub op: COp,
    pub fd: i32,
    pub offset: i64,
    pub buf: *mut u8,
    pub len: usize,
    pub reqprio: u8,
    /// Must wait for every earlier request on `fd` (O_APPEND or stream write, fsync).
    pub ordered: bool,
    /// A write to an `O_NONBLOCK` pipe, socket or terminal: ends with EAGAIN
    /// where it would block.
    pub nonblock: bool,
    /// A write to a blocking pipe, socket or terminal: io_uring cuts it short
    /// when the fd fills up, and the rest goes on after the call, so it needs
    /// the completion thread to reap it when nobody calls the library.
    pub stream: bool,
    pub notify: Notify,
}

/// Bumped after C completions (see [`wake_waiters`]) and when a reaper
/// stops; waiters that do not reap sleep on it.
static SEQ: AtomicU32 = AtomicU32::new(0);
/// Threads sleeping on `SEQ`.
static WAITERS: AtomicU32 = AtomicU32::new(0);
/// C requests submitted and not yet done.
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// io_uring: entries were put in the submission queue without entering the
/// kernel (see [`CEngine::submit`]); the next library call, or the flusher
/// thread within [`FLUSH_TICK`], enters it.
static DEFERRED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// This thread submitted C requests since it last looked at one
    /// (`aio_error`, `aio_return`, a wait or a poll; see [`looked`]).
    static SUBMITTED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The `lio_listio(LIO_NOWAIT)` this thread runs holds the completions of
    /// its requests until its last step (see [`CEngine::end_call`]).
    static HELD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The start of a C call that waits interruptibly (`aio_suspend`,
/// `lio_listio(LIO_WAIT)`): from now on, a signal handler that runs while
/// the thread sleeps for the engine's lock ends the wait with EINTR.
pub fn interruptible_call_starts() {
    let _ = crate::sys::rtlock::handler_ran_in_lock();
}

/// Installs the process's fork hook (`crate::sys::fork`) now: the C library
/// calls it as it is loaded, while the process is single-threaded. Made by
/// the first engine instead, under a `Once`, it left a child forked by
/// another thread meanwhile with the `Once` running for good: the child's
/// first request waited on it forever.
#[doc(hidden)]
pub fn install_fork_hook() {
    crate::sys::fork::install();
}

/// The calling thread looks at a request's status (`aio_error`,
/// `aio_return`): its next submission is not one of a pipelined run (see
/// [`CEngine::submit`]).
#[inline]
pub fn looked() {
    let _ = SUBMITTED.try_with(|s| s.set(false));
}
/// The flusher thread: [`FLUSHER_NONE`], [`FLUSHER_RUNNING`] or
/// [`FLUSHER_PARKED`] (a futex word).
static FLUSHER: AtomicU32 = AtomicU32::new(FLUSHER_NONE);
const FLUSHER_NONE: u32 = 0;
const FLUSHER_RUNNING: u32 = 1;
const FLUSHER_PARKED: u32 = 2;
/// The longest a deferred submission waits when the program makes no further
/// library call.
const FLUSH_TICK: Duration = Duration::from_millis(1);
/// The flusher parks after this many ticks with nothing deferred.
const FLUSH_IDLE_TICKS: u32 = 100;

/// The status of a C request's aiocb, as `aio_error` reads it.
///
/// # Safety
/// `cb` points to a live `struct aiocb`.
#[doc(hidden)]
#[inline]
pub unsafe fn error_code(cb: *const Aiocb) -> i32 {
    // SAFETY: the caller guarantees `cb` is valid; the field is an aligned int,
    // written by completions on other threads with release ordering.
    unsafe { AtomicI32::from_ptr(std::ptr::addr_of!((*cb).__error_code) as *mut i32) }
        .load(Ordering::Acquire)
}

/// Stores `res` (bytes, or `-errno`) into the aiocb: the value, then the error
/// code with release ordering, so whoever sees the code sees the value.
///
/// # Safety
/// `cb` points to a live `struct aiocb` that the library may write.
unsafe fn store_status(cb: *mut Aiocb, res: i64) {
    let (err, ret) = if res >= 0 {
        (0, res as isize)
    } else {
        ((-res) as i32, -1)
    };
    // SAFETY: the caller guarantees `cb` is valid and writable; both fields are
    // aligned and only written by the library while the request is in flight.
    unsafe {
        AtomicI64::from_ptr(std::ptr::addr_of_mut!((*cb).__return_value) as *mut i64)
            .store(ret as i64, Ordering::Relaxed);
        AtomicI32::from_ptr(std::ptr::addr_of_mut!((*cb).__error_code))
            .store(err, Ordering::Release);
    }
}

/// Marks the aiocb as in flight under name `ud`.
///
/// # Safety
/// `cb` points to a live `struct aiocb` that the library may write.
unsafe fn store_started(cb: *mut Aiocb, ud: u64) {
    // SAFETY: as in `store_status`.
    unsafe {
        AtomicU64::from_ptr(std::ptr::addr_of_mut!((*cb).__next_prio)).store(ud, Ordering::Relaxed);
        AtomicI64::from_ptr(std::ptr::addr_of_mut!((*cb).__return_value) as *mut i64)
            .store(0, Ordering::Relaxed);
        AtomicI32::from_ptr(std::ptr::addr_of_mut!((*cb).__error_code))
            .store(libc::EINPROGRESS, Ordering::Release);
    }
}

/// Called by the core (lock held) when a C request is done: stores its status
/// into the aiocb. The waiters are woken when the lock is released, after the
/// completion's signal was sent ([`wake_waiters`]).
pub(crate) fn completed(cb: usize, res: i64) {
    // SAFETY: `cb` was recorded by `CEngine::submit`, whose contract keeps the aiocb
    // valid until the request is done; this is that moment, and the slot is freed
    // (or read by the canceller) right after, never touching the aiocb again.
    unsafe { store_status(cb as *mut Aiocb, res) };
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Wakes the C waiters sleeping on `SEQ` (counted in `Core::waiters`): run by
/// the engine's release after completions, once their signals were sent.
fn wake_waiters() {
    SEQ.fetch_add(1, Ordering::Release);
    if WAITERS.load(Ordering::Relaxed) > 0 {
        let _ = futex::wake(&SEQ, Flags::PRIVATE, i32::MAX as u32);
    }
}

/// Enters the ring if a submission was deferred.
#[inline]
fn flush(inner: &Inner) {
    if DEFERRED.load(Ordering::Relaxed) && DEFERRED.swap(false, Ordering::AcqRel) {
        if let Engine::Uring(r) = &inner.engine {
            let _ = r.submit();
        }
    }
}

/// The flusher thread: enters the ring for deferred entries nobody else
/// submitted within a tick; parks (on the `FLUSHER` futex word) when the
/// program stops deferring.
fn flusher(inner: Arc<Inner>) {
    let mut idle = 0;
    loop {
        std::thread::sleep(FLUSH_TICK);
        if DEFERRED.load(Ordering::Relaxed) {
            flush(&inner);
            idle = 0;
            continue;
        }
        idle += 1;
        if idle < FLUSH_IDLE_TICKS {
            continue;
        }
        idle = 0;
        FLUSHER.store(FLUSHER_PARKED, Ordering::SeqCst);
        // A deferral between the check above and the store saw RUNNING and did
        // not wake us: look again before sleeping.
        if DEFERRED.load(Ordering::SeqCst) {
            FLUSHER.store(FLUSHER_RUNNING, Ordering::SeqCst);
            continue;
        }
        while FLUSHER.load(Ordering::SeqCst) == FLUSHER_PARKED {
            let _ = rustix::thread::futex::wait(
                &FLUSHER,
                rustix::thread::futex::Flags::PRIVATE,
                FLUSHER_PARKED,
                None,
            );
        }
    }
}

/// Runs `f` with every blockable signal blocked in the calling thread, so the
/// threads it starts inherit a full mask.
fn with_signals_blocked<T>(f: impl FnOnce() -> T) -> T {
    let _blocked = crate::sys::signal::block_all();
    f()
}

/// The calling thread's class if it is real-time, else `SCHED_OTHER` (a C
/// request of a `SCHED_BATCH` or `SCHED_IDLE` thread is served as one of a
/// `SCHED_OTHER` thread).
fn rt_class() -> SchedClass {
    let c = crate::sys::prio::current();
    if c.is_rt() {
        c
    } else {
        SchedClass::OTHER
    }
}

/// The engine of the C library: one per process (a new one in a forked child).
#[doc(hidden)]
pub struct CEngine {
    inner: Arc<Inner>,
    max: usize,
}

impl CEngine {
    /// Starts an engine: io_uring with `entries` (falling back to `workers` pool
    /// threads as [`Aio::new`](super::Aio::new) does; `POSIXRT_AIO_BACKEND` is
    /// honoured). At most `max` C requests may be in flight at once.
    pub fn new(entries: u32, workers: usize, max: usize) -> Result<CEngine> {
        // The pool's threads inherit the mask: no signal of the program lands on
        // a thread that may hold the engine lock (as glibc's AIO threads).
        let inner = with_signals_blocked(|| {
            Inner::new(&Config {
                backend: None,
                entries,
                rings: super::uring::default_rings(),
                workers,
                // (A C notification runs on a thread of its own, made with
                // the program's attributes.)
                notify_stack: None,
            })
        })?;
        inner.lock().set_aiocb_hook(completed);
        inner.set_wake_hook(wake_waiters);
        // The process-wide engine is never shut down.
        inner.add_user();
        Ok(CEngine { inner, max })
    }

    /// Which engine runs the requests and why.
    pub fn backend(&self) -> &BackendInfo {
        &self.inner.info
    }

    /// Resets the process-wide counters in a forked child (the parent's requests
    /// do not exist there). Call before any new engine is made.
    pub fn after_fork_child() {
        WAITERS.store(0, Ordering::Relaxed);
        LIVE.store(0, Ordering::Relaxed);
        DEFERRED.store(false, Ordering::Relaxed);
        // The parent's flusher thread does not exist here.
        FLUSHER.store(FLUSHER_NONE, Ordering::Relaxed);
    }

    /// Enters the ring for entries whose submission was deferred.
    #[inline]
    fn flush(&self) {
        flush(&self.inner);
    }

    /// Makes sure the flusher runs: started on the first deferral, woken if parked.
    fn wake_flusher(&self) {
        match FLUSHER.load(Ordering::SeqCst) {
            FLUSHER_RUNNING => {}
            FLUSHER_PARKED => {
                if FLUSHER
                    .compare_exchange(
                        FLUSHER_PARKED,
                        FLUSHER_RUNNING,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    let _ = rustix::thread::futex::wake(
                        &FLUSHER,
                        rustix::thread::futex::Flags::PRIVATE,
                        1,
                    );
                }
            }
            _ => {
                if FLUSHER
                    .compare_exchange(
                        FLUSHER_NONE,
                        FLUSHER_RUNNING,
                        Ordering::SeqCst,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    let inner = Arc::clone(&self.inner);
                    let started = with_signals_blocked(|| {
                        std::thread::Builder::new()
                            .name("posixrt-aio-flush".into())
                            .spawn(move || flusher(inner))
                    });
                    if started.is_err() {
                        // No thread: submit at once from now on.
                        FLUSHER.store(FLUSHER_NONE, Ordering::SeqCst);
                        self.flush();
                    }
                }
            }
        }
    }

    /// Submits C requests with one lock and (io_uring) one `io_uring_enter`.
    /// With `list`, they form a `lio_listio` group whose notification fires once,
    /// when the last is done (at once for an empty group). EAGAIN (nothing
    /// submitted) when the requests would exceed the limit given to `new`.
    ///
    /// Returns each request's name. With `keep`, the slots outlive the requests
    /// until [`wait_kept`](CEngine::wait_kept) reads and frees them (so a
    /// `LIO_WAIT` never reads an aiocb a notification may already have freed).
    ///
    /// # Safety
    /// For every request: `cb` points to a valid `struct aiocb` and `buf..buf+len`
    /// to memory valid for the operation (writable for a read); both stay valid,
    /// and the buffer is not accessed by the program, until the request is done
    /// (its `__error_code` is no longer EINPROGRESS).
    pub unsafe fn submit(
        &self,
        reqs: Vec<CRequest>,
        list: Option<(Notify, bool)>,
        keep: bool,
    ) -> Result<Vec<u64>> {
        // This thread's later reaps may run in a signal handler, where the
        // trace points do not set it up (see `hook::signal_safe`).
        hook::prepare_c_submission();
        let uring = matches!(self.inner.engine, Engine::Uring(_));
        let needs_bg = reqs
            .iter()
            .any(|r| !r.notify.is_none() || (uring && r.stream))
            || list.as_ref().is_some_and(|(n, _)| !n.is_none());
        let hold = Hold::needed(list.as_ref().is_some_and(|&(_, wait)| !wait), needs_bg);
        if needs_bg {
            // It starts the completion thread (once) with every signal blocked.
            self.inner.ensure_background()?;
        }
        let inner = &self.inner;
        // The thread engine queues every request at the submitter's class:
        // read it (one system call) before the lock, not while holding it.
        let early = matches!(inner.engine, Engine::Threads(_)).then(rt_class);
        // The thread's wait eventfd, made here (a submission never runs in a
        // signal handler) for its `aio_suspend`, which may (see `release`).
        let fd_made = super::sleep::prepare_wait_fd();
        let mut core = inner.lock();
        if fd_made {
            release::room_for_wait_fds(&mut core);
        }
        let n = reqs.len();
        if LIVE.load(Ordering::Relaxed).saturating_add(n) > self.max {
            drop(core);
            return Err(
                Error::from_errno("aio_read", libc::EAGAIN).with_hint(format!(
                    "more than {} requests in flight (POSIXRT_AIO_MAX)",
                    self.max
                )),
            );
        }
        if core.shutdown {
            drop(core);
            return Err(Error::new(
                ErrorKind::InvalidState,
                "aio_read",
                "the AIO context is shutting down",
            ));
        }
        // As a Rust call's request: another thread's quiet eventfd ends
        // before these go in (see `Inner::end_quiet_before`).
        inner.end_quiet_before(&mut core, Entry::Now);
        let list_id = match list {
            Some((notify, wait)) => {
                let l = core.new_list(n as u32, notify);
                hook::list_start(l, n, wait);
                if n == 0 {
                    core.finish_list(l);
                }
                l
            }
            None => NO_LIST,
        };
        let direct = match &inner.engine {
            Engine::Uring(r) => {
                core.ready_len() == 0
                    && (core.inflight as usize).saturating_add(n) <= r.capacity as usize
            }
            Engine::Threads(_) => false,
        };
        // (io_uring with no room: read under the lock, a rare case.)
        let class = if direct {
            SchedClass::OTHER
        } else {
            early.unwrap_or_else(rt_class)
        };
        // Defer entering the ring when other requests are in flight, or this
        // thread submitted others and has not looked at any since (a pipelined
        // program: it will look for their results, and that call enters the
        // ring), nothing here notifies, and it is not a list (LIO_WAIT waits at
        // once). (The second test keeps such a run batched now that its first
        // request, reaped inside its own call, is no longer in flight.)
        let live_before = LIVE.fetch_add(n, Ordering::Relaxed);
        let run = SUBMITTED.try_with(|s| s.replace(true)).unwrap_or(false);
        let mut defer = (live_before > 0 || run)
            && !needs_bg
            && list_id == NO_LIST
            && matches!(inner.engine, Engine::Uring(_));
        let mut enter = false;
        // Reads of fds not known to be regular files are probes, settled by
        // this call after its enter (see `Inner::settle_probes`): a socket read
        // at an offset is issued again without one, an empty O_NONBLOCK pipe or
        // socket gives EAGAIN, as glibc's pread-then-read does.
        let mut probes = Probes::default();
        let mut names = Vec::with_capacity(n);
        // A request of this call left in the library's queue (io_uring).
        let mut queued = false;
        for r in reqs {
            let kind = match r.op {
                COp::Read => OpKind::Read,
                COp::Write => OpKind::Write,
                COp::Fsync => OpKind::Fsync,
                COp::Fdatasync => OpKind::Fdatasync,
            };
            let raw = RawOp {
                kind,
                // A negative fd (C programs pass -1) is no fd: the engines
                // take fds as `BorrowedFd`, where -1 is not a value. Name one
                // that cannot be open instead, so the kernel says EBADF.
                fd: if r.fd < 0 { i32::MAX } else { r.fd },
                offset: r.offset,
                ptr: r.buf as usize,
                len: r.len,
                ordered: r.ordered,
            };
            let mut notify = r.notify;
            let (idx, gen) = core.alloc_as(raw, r.reqprio, class, &mut notify, list_id);
            let s = &mut core.slots[idx as usize];
            s.aiocb = r.cb as usize;
            s.detached = !keep;
            s.keepers = keep as u8;
            names.push(user_data(idx, gen));
            // SAFETY: the caller guarantees `cb` is valid; the request cannot
            // complete before the lock is released.
            unsafe { store_started(r.cb, user_data(idx, gen)) };
            // A number seen to name a file that refuses RWF_NOWAIT (procfs,
            // sysfs) is looked at again by each read, as a probe.
            let known = core.fd_not_pollable(raw.fd) && core.fd_nowait_for(raw.fd, OpKind::Read);
            let probe = kind == OpKind::Read && !known;
            core.slots[idx as usize].probe = probe;
            core.slots[idx as usize].finite = known;
            // The number may have been closed and reused by a pipe or socket
            // since it was seen: an EAGAIN from RWF_NOWAIT makes the reaper look.
            core.slots[idx as usize].recheck =
                kind == OpKind::Read && known && matches!(inner.engine, Engine::Uring(_));
            if r.nonblock && matches!(inner.engine, Engine::Uring(_)) {
                // Issued with RWF_NOWAIT at offset -1 (see `sqe`).
                let s = &mut core.slots[idx as usize];
                s.nonblock = true;
                s.fd_kind = Some(crate::sys::io::FdKind::Stream);
            }
            // A transfer that goes to the kernel's workers (`IOSQE_ASYNC`:
            // 256 KiB and more) has its fd number looked up when a worker
            // starts it, which may be after this call returned and the
            // program closed the number (POSIX lets it): it names a copy of
            // its own, taken now, while the caller keeps the fd open.
            // So does a write to a pipe, socket or terminal (see
            // `Slot::to_worker`).
            let to_worker = r.op == COp::Write && (r.stream || r.nonblock);
            core.slots[idx as usize].to_worker = to_worker;
            let copy_refused = direct
                && matches!(inner.engine, Engine::Uring(_))
                && (to_worker || super::uring::punted(kind, raw.len, class))
                && own_copy(&mut core, idx, raw.fd).is_err();
            match &inner.engine {
                _ if copy_refused => {}
                Engine::Uring(ring) if direct && ring.push_one(&mut core, idx, gen) => {
                    enter = true;
                    if probe {
                        probes.push((idx, gen, raw.fd));
                    }
                }
                _ => {
                    queued = true;
                    core.slots[idx as usize].probe = false;
                    core.slots[idx as usize].recheck = false;
                    if kind == OpKind::Read && matches!(inner.engine, Engine::Uring(_)) {
                        // Issued after this call: no probe then, so its fd's
                        // kind and flags are asked now.
                        note_stream(&mut core.slots[idx as usize], raw.fd);
                    }
                    core.admit(idx, direct)
                }
            }
            if hold {
                core.hold(idx);
            }
        }
        if needs_bg {
            // Room for these requests' notifications, so that a reap in a
            // signal handler does not allocate for them (see `release`).
            release::room_for_fires(&mut core);
        }
        let mut wake = Kicked::default();
        if core.ready_len() > 0 {
            wake = inner.kick(&mut core);
            enter |= wake.enter;
        }
        if !probes.is_empty() {
            // Settled after this call's own enter.
            defer = false;
            core.probing += 1;
        }
        if enter && defer {
            // Under the lock, after the entries were published: whoever swaps
            // the flag back sees them.
            DEFERRED.store(true, Ordering::SeqCst);
        }
        // With no notification to fire, the call reaps after its enter what
        // completed meanwhile (a cached read completes inline): its aiocb
        // shows it done at once, it needs no fd copy (below), and the entry
        // goes in with the eventfd quiet, so a running completion thread is
        // not woken for it (see `Ring::quiet`). A notification's request is
        // left to the completion thread, which fires it.
        let reap = enter && !defer && !needs_bg;
        if let (true, Engine::Uring(r)) = (reap, &inner.engine) {
            let _ = r.quiet(&mut core);
        }
        inner.release(core);
        inner.wake_workers(wake);
        if enter {
            if defer {
                self.wake_flusher();
            } else if let Engine::Uring(r) = &inner.engine {
                // Deferred entries of other threads may wait in other rings:
                // with the flag cleared nobody else would enter those.
                if DEFERRED.swap(false, Ordering::AcqRel) {
                    let _ = r.submit();
                } else {
                    let _ = r.submit_mine();
                }
                let mut core = None;
                if reap {
                    // Also ends the quiet eventfd, signalling for a request
                    // left in the kernel.
                    let mut c = inner.lock();
                    inner.poll_completions(&mut c);
                    core = Some(c);
                }
                if !probes.is_empty() {
                    if let Some(c) = core.take() {
                        inner.release(c);
                    }
                    inner.settle_probes(&probes);
                }
                // Which requests are still in the kernel is read from their
                // slots, under the lock, never from the aiocbs: a request may
                // be done by now, and its SIGEV_THREAD callback may already
                // have freed its aiocb.
                let core = core.unwrap_or_else(|| inner.lock());
                let ids = names.iter().map(|&ud| super::table::split_user_data(ud));
                inner.release(inner.copy_fds_of_waiting(core, ids));
            }
        }
        if hold {
            HELD.with(|h| h.set(true));
        }
        if queued && !needs_bg && matches!(inner.engine, Engine::Uring(_)) {
            // Nobody may call the library again to issue it.
            inner.ensure_reaper();
        }
        super::exit_wait::watch(&self.inner);
        Ok(names)
    }

    /// The end of a `lio_listio(LIO_NOWAIT)` that submitted `names`: the
    /// completions it held are let go of by another thread once the returned
    /// guard is dropped, as the call's last step, so that no handler of their
    /// signals runs before it returns (see `hold.rs`).
    pub fn end_call(&self, names: &[u64]) -> Option<impl Drop> {
        if !HELD.with(|h| h.replace(false)) {
            return None;
        }
        let ids = names.iter().map(|&ud| super::table::split_user_data(ud));
        Some(self.inner.end_hold(ids))
    }
}

impl std::fmt::Debug for CEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CEngine")
            .field("backend", &self.inner.info)
            .finish()
    }
}
