//! `<trace.h>`: the POSIX trace functions for C, over `posixrt::trace`.
//!
//! - [`attr`]: `trace_attr_t` and the `posix_trace_attr_*` functions;
//! - [`stream`]: create, start, stop, shutdown, flush, clear, status, filters;
//! - [`ids`]: event sets and event type ids;
//! - [`read`]: `posix_trace_event`, the getnext family and logs;
//! - [`mutex_interpose`]: `pthread_mutex_lock`/`trylock`/`unlock` emitting the
//!   oc2000 mutex events;
//! - [`signal_interpose`]: `sigqueue`, `kill`, ... and `sigwaitinfo`, ... emitting
//!   the oc2000 signal generation and delivery events;
//! - [`exec_interpose`]: `execve`, `execv`, ... writing every trace log before
//!   the process image is replaced; `exec_variadic`: the same for `execl`,
//!   `execle` and `execlp` (x86_64, Rust 1.88 or later).
//!
//! A `trace_id_t` is a slot of a process-wide table (index + 1 in the low 32 bits, a
//! generation in the high bits), so a stale or made-up id is `EINVAL`, never a
//! dangling pointer. A forked child's table holds no stream of its parent's
//! (their ids are `EINVAL` there, as POSIX says; see [`table_atfork_child`]).
//!
//! Every function that reaches a stream or a log holds cancellation off while it
//! works ([`crate::nocancel`]): creating, flushing and shutting down a stream write
//! and close its log and join its flusher, opening and closing a log read and close
//! it, and whichever call drops the last reference to a stream shut down while in
//! use finishes its log. `posix_trace_getnext_event` and
//! `posix_trace_timedgetnext_event` are cancellation points at entry and while
//! they wait; none of the others is.

mod attr;
mod exec_interpose;
#[cfg(exec_trampolines)]
mod exec_variadic;
mod ids;
mod mutex_interpose;
mod read;
mod signal_interpose;
mod stream;
mod tls;

use std::ffi::{c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicU8};
use std::sync::{Arc, Mutex, MutexGuard};

use rt::trace::{LogWaiter, Trace, TraceLog, ID_SPACE};
use rt::ErrorKind;

/// What a `trace_id_t` names.
pub(crate) enum Obj {
    /// An active stream of this process.
    Stream {
        trace: Trace,
        /// `posix_trace_eventtypelist_getnext_id`'s position: the raw id
        /// the walk goes on from.
        cursor: Mutex<usize>,
        /// Set by `posix_trace_shutdown` (before it stops the stream) when a
        /// call still holds the stream: a read waiting on it then ends with
        /// `EINVAL`, as POSIX says, not as on a stopped stream.
        shut_down: AtomicBool,
    },
    /// A log opened with `posix_trace_open`.
    Log {
        /// Boxed: a log reader is several times larger than a stream handle.
        log: Box<Mutex<TraceLog>>,
        /// A log read from a pipe, a FIFO or a socket: waits for its writer
        /// without `log`'s lock, which the other calls on the log take.
        waiter: Option<LogWaiter>,
        cursor: Mutex<usize>,
    },
}

impl Obj {
    pub(crate) fn cursor(&self) -> &Mutex<usize> {
        match self {
            Obj::Stream { cursor, .. } | Obj::Log { cursor, .. } => cursor,
        }
    }
}

struct Table {
    slots: Vec<Option<Arc<Obj>>>,
    gens: Vec<u32>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    slots: Vec::new(),
    gens: Vec::new(),
});

thread_local! {
    /// The table's lock, held by the forking thread across `fork` (see
    /// [`table_atfork_prepare`]).
    static HELD_FOR_FORK: std::cell::RefCell<Option<MutexGuard<'static, Table>>> =
        const { std::cell::RefCell::new(None) };
}

/// `fork` takes the table's lock first, and gives it back in the parent and
/// in the child, so the child never inherits it taken by a thread it does not
/// have (every call naming a stream or a log then waited for it forever:
/// `trace_fork.c`). The lock is only held for a lookup, never across a call
/// that could wait for the forking thread.
extern "C" fn table_atfork_prepare() {
    let g = lock(&TABLE);
    let _ = HELD_FOR_FORK.try_with(|h| *h.borrow_mut() = Some(g));
}

extern "C" fn table_atfork_release() {
    let _ = HELD_FOR_FORK.try_with(|h| drop(h.borrow_mut().take()));
}

/// In the child, the parent's streams leave the table before its lock is
/// given back: POSIX makes a stream's id "valid only in the process that made
/// the function call", every call from a child naming it `EINVAL` (the calls
/// that only read the C table's object, such as `posix_trace_get_status`,
/// used to succeed there). Their objects are the parent's: forgotten, never
/// dropped (no allocation or free here, and no shutdown of the parent's
/// stream from the child). Logs opened with `posix_trace_open` stay.
extern "C" fn table_atfork_child() {
    let _ = HELD_FOR_FORK.try_with(|h| {
        if let Some(mut t) = h.borrow_mut().take() {
            for slot in t.slots.iter_mut() {
                if matches!(slot.as_deref(), Some(Obj::Stream { .. })) {
                    std::mem::forget(slot.take());
                }
            }
        }
    });
}

/// Registers the fork handlers at load time, while the process is still
/// single-threaded.
#[used]
#[link_section = ".init_array"]
static TABLE_ATFORK_AT_LOAD: extern "C" fn() = register_table_atfork;

extern "C" fn register_table_atfork() {
    // SAFETY: registers plain functions without arguments; they only take and
    // release the table's lock (a futex, no allocation), the child's also
    // takes the parent's streams out of the table without freeing them.
    unsafe {
        libc::pthread_atfork(
            Some(table_atfork_prepare),
            Some(table_atfork_release),
            Some(table_atfork_child),
        )
    };
    // SAFETY: registers a plain function without arguments, run by `exit`.
    unsafe { libc::atexit(shutdown_at_exit) };
}

/// POSIX: "If the process exits, ... the trace streams that the process had
/// created and that have not yet been shut down, shall be automatically shut
/// down as if an explicit call were made to the posix_trace_shutdown()
/// function": at exit, every stream still in the table is shut down (its log
/// ends as after `posix_trace_shutdown`: STOP, the final flush, the end
/// record; it ended with what the exit's last flush wrote). A stream another
/// thread is still inside a call on is stopped (a read waiting on it ends
/// with `EINVAL`) and freed by that call. Nothing is done if the table's
/// lock is held (a thread inside a lookup: waiting could hang the exit).
/// Registered at load time, it runs after the handlers the program
/// registers later, which may still trace. The streams are shut down on a
/// thread of their own: the exiting thread's recording state is already gone
/// (`exit` runs its thread-local destructors first), so the STOP it recorded
/// was lost (an OVERFLOW in its place).
extern "C" fn shutdown_at_exit() {
    let _nc = crate::nocancel::NoCancel::new();
    let streams: Vec<Arc<Obj>> = match TABLE.try_lock() {
        Ok(mut t) => take_streams(&mut t),
        Err(std::sync::TryLockError::Poisoned(p)) => take_streams(&mut p.into_inner()),
        Err(std::sync::TryLockError::WouldBlock) => return,
    };
    if streams.is_empty() {
        return;
    }
    let shared = Arc::new(Mutex::new(streams));
    let s2 = Arc::clone(&shared);
    let (done, wait) = std::sync::mpsc::channel();
    let helper = std::thread::Builder::new()
        .name("posixrt-trace-exit".into())
        .spawn(move || {
            shutdown_all(&mut lock(&s2));
            let _ = done.send(());
        });
    match helper {
        // Bounded: a log on a pipe nobody reads could block its last write
        // for ever, and the exit with it.
        Ok(_) => {
            let _ = wait.recv_timeout(EXIT_SHUTDOWN_WAIT);
        }
        // No thread: here, losing the STOP.
        Err(_) => shutdown_all(&mut lock(&shared)),
    }
}

/// How long `exit` waits for the streams to be shut down.
const EXIT_SHUTDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Shuts down the streams `shutdown_at_exit` took (see there).
fn shutdown_all(streams: &mut Vec<Arc<Obj>>) {
    for o in streams.drain(..) {
        match Arc::try_unwrap(o) {
            Ok(Obj::Stream { trace, .. }) => {
                let _ = trace.shutdown();
            }
            Ok(Obj::Log { .. }) => {}
            Err(shared) => {
                if let Obj::Stream {
                    trace, shut_down, ..
                } = &*shared
                {
                    shut_down.store(true, std::sync::atomic::Ordering::Release);
                    let _ = trace.stop();
                }
            }
        }
    }
}

/// Takes the streams out of the table (logs stay).
fn take_streams(t: &mut Table) -> Vec<Arc<Obj>> {
    t.slots
        .iter_mut()
        .filter(|s| matches!(s.as_deref(), Some(Obj::Stream { .. })))
        .filter_map(Option::take)
        .collect()
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Stores an object and returns its `trace_id_t`.
pub(crate) fn insert(o: Obj) -> c_ulong {
    let mut t = lock(&TABLE);
    let i = match t.slots.iter().position(Option::is_none) {
        Some(i) => i,
        None => {
            t.slots.push(None);
            t.gens.push(0);
            t.slots.len() - 1
        }
    };
    t.gens[i] = t.gens[i].wrapping_add(1);
    t.slots[i] = Some(Arc::new(o));
    ((t.gens[i] as c_ulong) << 32) | (i as c_ulong + 1)
}

fn index(trid: c_ulong, t: &Table) -> Option<usize> {
    let i = (trid & 0xffff_ffff) as usize;
    let gen = (trid >> 32) as u32;
    let i = i.checked_sub(1)?;
    (t.gens.get(i) == Some(&gen) && t.slots.get(i).is_some_and(Option::is_some)).then_some(i)
}

/// The object `trid` names, or `EINVAL`.
pub(crate) fn get(trid: c_ulong) -> Result<Arc<Obj>, c_int> {
    let t = lock(&TABLE);
    let i = index(trid, &t).ok_or(libc::EINVAL)?;
    t.slots[i].clone().ok_or(libc::EINVAL)
}

/// Removes `trid` from the table, if `keep` accepts the object (else `EINVAL`).
pub(crate) fn remove(trid: c_ulong, keep: impl Fn(&Obj) -> bool) -> Result<Arc<Obj>, c_int> {
    let mut t = lock(&TABLE);
    let i = index(trid, &t).ok_or(libc::EINVAL)?;
    if !t.slots[i].as_deref().is_some_and(keep) {
        return Err(libc::EINVAL);
    }
    t.slots[i].take().ok_or(libc::EINVAL)
}

/// trace.h's inline fast path of `posix_trace_event`: the core's pass table
/// (entry `id` nonzero while some running stream records `id`, whoever started
/// it, C or Rust), so a call with no stream running or the id filtered out is a
/// byte load and a test, as in Rust's `trace::event`. Read by C as
/// `const volatile unsigned char *const __posixrt_trace_on` (1024 entries).
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static __posixrt_trace_on: &[AtomicU8; ID_SPACE] = rt::trace::pass_table();

/// The errno a C caller gets for a posixrt error.
pub(crate) fn errno_of(e: &rt::Error) -> c_int {
    if let Some(n) = e.errno() {
        return n;
    }
    match e.kind() {
        ErrorKind::OutOfResources => libc::EAGAIN,
        ErrorKind::TimedOut => libc::ETIMEDOUT,
        ErrorKind::BadFd => libc::EBADF,
        ErrorKind::Interrupted => libc::EINTR,
        ErrorKind::PermissionDenied => libc::EPERM,
        ErrorKind::NotFound => libc::ESRCH,
        ErrorKind::Unsupported => libc::ENOSYS,
        _ => libc::EINVAL,
    }
}

/// `Ok(())` → 0, `Err(e)` → e.
pub(crate) fn ret(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e,
    }
}
