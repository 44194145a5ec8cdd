//! `<trace.h>`: the POSIX trace functions for C, over `posixrt::trace`.
//!
//! - [`attr`]: `trace_attr_t` and the `posix_trace_attr_*` functions;
//! - [`stream`]: create, start, stop, shutdown, flush, clear, status, filters;
//! - [`ids`]: event sets and event type ids;
//! - [`read`]: `posix_trace_event`, the getnext family and logs;
//! - [`mutex_interpose`]: `pthread_mutex_lock`/`trylock`/`unlock` emitting the
//!   oc2000 mutex events;
//! - [`signal_interpose`]: `sigqueue`, `kill`, ... and `sigwaitinfo`, ... emitting
//!   the oc2000 signal generation and delivery events.
//!
//! A `trace_id_t` is a slot of a process-wide table (index + 1 in the low 32 bits, a
//! generation in the high bits), so a stale or made-up id is `EINVAL`, never a
//! dangling pointer.

mod attr;
mod ids;
mod mutex_interpose;
mod read;
mod signal_interpose;
mod stream;

use std::ffi::{c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use rt::trace::{Trace, TraceLog};
use rt::ErrorKind;

/// What a `trace_id_t` names.
pub(crate) enum Obj {
    /// An active stream of this process.
    Stream {
        trace: Trace,
        /// `posix_trace_eventtypelist_getnext_id`'s position.
        cursor: Mutex<usize>,
        /// Started and not stopped through this API (for [`PASS`]).
        started: AtomicBool,
    },
    /// A log opened with `posix_trace_open`.
    Log {
        log: Mutex<TraceLog>,
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

/// trace.h's inline fast path of `posix_trace_event`: bit `id` is set if some
/// stream started through this API (and not stopped through it) does not filter
/// `id`. A superset of what the Rust core records (a stream suspended by
/// UNTIL_FULL stays in it), so the inline test only skips calls that would
/// record nothing; the exported function checks again. Read by C as
/// `volatile const unsigned long long __posixrt_trace_pass[16]`.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static __posixrt_trace_pass: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];

/// Recomputes [`__posixrt_trace_pass`] from the started streams.
pub(crate) fn update_pass() {
    static ONE: Mutex<()> = Mutex::new(());
    let _one = lock(&ONE);
    let streams: Vec<Arc<Obj>> = lock(&TABLE).slots.iter().flatten().cloned().collect();
    let mut pass = [0u64; 16];
    for o in &streams {
        if let Obj::Stream { trace, started, .. } = &**o {
            if started.load(Ordering::Acquire) {
                let f = trace.filter();
                for (i, w) in pass.iter_mut().enumerate() {
                    for b in 0..64 {
                        let id = rt::trace::EventId::from_raw((i * 64 + b) as u16);
                        if id.is_some_and(|id| !f.contains(id)) {
                            *w |= 1 << b;
                        }
                    }
                }
            }
        }
    }
    for (w, p) in __posixrt_trace_pass.iter().zip(pass) {
        w.store(p, Ordering::Release);
    }
}

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
