//! `pthread_mutex_lock`, `pthread_mutex_trylock` and `pthread_mutex_unlock`,
//! interposed (a program linked with `-lposixrt`, or run under
//! `LD_PRELOAD=libposixrt.so`): each calls the next definition (`dlsym(RTLD_NEXT)`),
//! then, only while some stream runs, records `traceMutexLock` /
//! `traceMutexTryLock` / `traceMutexUnlock` with five 64-bit words: the error code,
//! the caller's tid, 0, the mutex address and the owner's tid (glibc's
//! `__data.__owner`). A stream that filters them records nothing.
//!
//! With no stream running the cost is a load of the cached function pointer, one
//! relaxed load of the running-streams word and a branch.

use std::cell::Cell;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicI32, AtomicPtr, Ordering};

use super::ids::{ext_id, EXT_LOCK, EXT_TRYLOCK, EXT_UNLOCK};

type MutexFn = unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> c_int;

const NAMES: [&CStr; 3] = [
    c"pthread_mutex_lock",
    c"pthread_mutex_trylock",
    c"pthread_mutex_unlock",
];
static REAL: [AtomicPtr<c_void>; 3] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 3];

thread_local! {
    static RESOLVING: Cell<bool> = const { Cell::new(false) };
}

#[cold]
#[inline(never)]
fn resolve(i: usize) -> MutexFn {
    if RESOLVING.with(Cell::get) {
        // `dlsym` locked a mutex through us: there is no next definition to call.
        eprintln!("libposixrt: pthread_mutex_* called from inside dlsym; aborting");
        std::process::abort();
    }
    RESOLVING.with(|r| r.set(true));
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other precondition.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[i].as_ptr()) };
    RESOLVING.with(|r| r.set(false));
    if p.is_null() {
        eprintln!("libposixrt: no next definition of {:?}; aborting", NAMES[i]);
        std::process::abort();
    }
    REAL[i].store(p, Ordering::Release);
    // SAFETY: the next definition of this pthread function has its signature.
    unsafe { std::mem::transmute::<*mut c_void, MutexFn>(p) }
}

/// Resolves the three functions at load time, while the process is still
/// single-threaded.
#[used]
#[link_section = ".init_array"]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve_all;

extern "C" fn resolve_all() {
    for (i, r) in REAL.iter().enumerate() {
        if r.load(Ordering::Acquire).is_null() {
            resolve(i);
        }
    }
}

#[inline(always)]
fn real(i: usize) -> MutexFn {
    let p = REAL[i].load(Ordering::Acquire);
    if p.is_null() {
        return resolve(i);
    }
    // SAFETY: only `resolve` stores here, a pointer to the next definition of
    // this pthread function, which has its signature.
    unsafe { std::mem::transmute::<*mut c_void, MutexFn>(p) }
}

/// The caller's tid: the crate's per-thread cache, which a forked child
/// forgets (a cache of its own here kept the parent's tid in the child).
fn tid() -> u64 {
    rt::sync::current_tid() as u64
}

/// glibc's `__data.__owner` (offset 8 on Linux): the owner's tid, 0 if unlocked.
fn owner(m: *mut libc::pthread_mutex_t) -> u64 {
    // SAFETY: `m` is a live, 4-aligned glibc mutex (the call on it just returned),
    // at least 40 bytes; the field is read atomically as glibc writes it.
    let o = unsafe { (*m.cast::<u8>().add(8).cast::<AtomicI32>()).load(Ordering::Relaxed) };
    o.max(0) as u64
}

#[cold]
#[inline(never)]
fn emit(which: usize, m: *mut libc::pthread_mutex_t, err: c_int) {
    let Some(id) = ext_id(which) else { return };
    // After an unlock the mutex may already be destroyed by another thread: its
    // owner is not read (0).
    let own = if which == EXT_UNLOCK { 0 } else { owner(m) };
    let words = [err as i64 as u64, tid(), 0, m as u64, own];
    let mut p = [0u8; 40];
    for (c, w) in p.chunks_exact_mut(8).zip(words) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    rt::trace::system_events::emit(id, &p);
}

#[inline(always)]
fn call(which: usize, m: *mut libc::pthread_mutex_t) -> c_int {
    let f = real(which);
    // SAFETY: `m` is the caller's mutex, passed through unchanged.
    let r = unsafe { f(m) };
    if rt::trace::system_events::enabled() && !m.is_null() {
        emit(which, m, r);
    }
    r
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut libc::pthread_mutex_t) -> c_int {
    call(EXT_LOCK, m)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut libc::pthread_mutex_t) -> c_int {
    call(EXT_TRYLOCK, m)
}

#[no_mangle]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut libc::pthread_mutex_t) -> c_int {
    call(EXT_UNLOCK, m)
}
