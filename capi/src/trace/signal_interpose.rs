//! The oc2000 signal events `traceSigGeneration` and `traceSigDelivery`, from
//! interposed signal calls (a program linked with `-lposixrt` or run under
//! `LD_PRELOAD=libposixrt.so`). Each call goes to the next definition
//! (`dlsym(RTLD_NEXT)`); only while some stream runs does it record:
//!
//! - `sigqueue`, `kill`, `pthread_kill`, `pthread_sigqueue` with a signal number
//!   (not 0): `traceSigGeneration`, recorded as the call is made (so it precedes
//!   the delivery, even when the call then fails), six 32-bit words: `[0]` the sender's tid, `[1]` the
//!   target pid, `[2]` the signal number, `[3]` the value (`sival_int`, 0 without
//!   one), `[4]` 1 if thread-directed, `[5]` the target's tid (0 for a process, or
//!   for a thread other than the caller: glibc does not tell);
//! - `sigwaitinfo`, `sigtimedwait`, `sigwait` (when they take a signal):
//!   `traceSigDelivery`, three 32-bit words: `[0]` the receiver's tid, `[1]` the
//!   signal number, `[2]` the value (`sival_int`; 0 from `sigwait`).
//!
//! Signals delivered to handlers are not seen (`traceSigCatchFunc` is never
//! recorded), nor signals sent by the kernel (timers) or by glibc internally.
//!
//! `sigwaitinfo`, `sigtimedwait` and `sigwait` are cancellation points (POSIX
//! requires it) and stay so: a cancel acted on inside the next definition
//! unwinds (glibc's forced unwind) through the interposer, which is therefore
//! "C-unwind", calls it through a "C-unwind" pointer and holds only plain
//! values across the call. Nothing here changes the caller's cancellation
//! state (recording an event reaches no cancellation point).

use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

use super::ids::{ext_id, EXT_SIG_DELIVERY, EXT_SIG_GENERATION};

const NAMES: [&CStr; 8] = [
    c"sigqueue",
    c"kill",
    c"pthread_kill",
    c"pthread_sigqueue",
    c"sigwaitinfo",
    c"sigtimedwait",
    c"sigwait",
    c"pthread_kill",
];
const SIGQUEUE: usize = 0;
const KILL: usize = 1;
const PTHREAD_KILL: usize = 2;
const PTHREAD_SIGQUEUE: usize = 3;
const SIGWAITINFO: usize = 4;
const SIGTIMEDWAIT: usize = 5;
const SIGWAIT: usize = 6;
/// glibc's older `pthread_kill` (see [`pthread_kill`]).
#[cfg(glibc_versions)]
const PTHREAD_KILL_COMPAT: usize = 7;

/// The version of each next definition to take (`None`: the default one).
/// glibc has two `pthread_kill`s that behave differently (see [`pthread_kill`]);
/// the other functions here have one behaviour.
#[cfg(glibc_versions)]
const VERSIONS: [Option<&CStr>; 8] = [
    None,
    None,
    Some(c"GLIBC_2.34"),
    None,
    None,
    None,
    None,
    Some(GLIBC_BASE),
];

/// The first version of glibc's symbols on this architecture.
#[cfg(all(glibc_versions, target_arch = "x86_64"))]
const GLIBC_BASE: &CStr = c"GLIBC_2.2.5";
#[cfg(all(glibc_versions, target_arch = "aarch64"))]
const GLIBC_BASE: &CStr = c"GLIBC_2.17";

static REAL: [AtomicPtr<c_void>; 8] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 8];

/// The next definition of function `i` in the version `VERSIONS[i]` names
/// (null if there is none, or no version is named).
#[cfg(glibc_versions)]
fn next_version(i: usize) -> *mut c_void {
    match VERSIONS[i] {
        // SAFETY: dlvsym with RTLD_NEXT and NUL-terminated strings has no
        // other precondition.
        Some(v) => unsafe { libc::dlvsym(libc::RTLD_NEXT, NAMES[i].as_ptr(), v.as_ptr()) },
        None => std::ptr::null_mut(),
    }
}

#[cfg(not(glibc_versions))]
fn next_version(_: usize) -> *mut c_void {
    std::ptr::null_mut()
}

/// The next definition of function `i` (resolved once): the version
/// `VERSIONS[i]` names where the next library has it, else the default one.
fn real(i: usize) -> *mut c_void {
    let p = REAL[i].load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    let mut p = next_version(i);
    if p.is_null() {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other
        // precondition.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[i].as_ptr()) };
    }
    if p.is_null() {
        eprintln!("libposixrt: no next definition of {:?}; aborting", NAMES[i]);
        std::process::abort();
    }
    REAL[i].store(p, Ordering::Release);
    p
}

/// Resolves them at load time, while the process is single-threaded.
#[used]
#[link_section = ".init_array"]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve_all;

extern "C" fn resolve_all() {
    for i in 0..NAMES.len() {
        real(i);
    }
}

fn tid() -> i32 {
    // SAFETY: gettid has no preconditions (called only while a stream runs).
    unsafe { libc::gettid() }
}

/// The payload of `N` 32-bit words, little-endian, on the stack: `kill`,
/// `sigqueue` and `pthread_kill` are async-signal-safe, so their interposers
/// must not allocate (a handler that interrupted `malloc` deadlocked in it).
fn words<const N: usize, const B: usize>(w: [i32; N]) -> [u8; B] {
    let mut p = [0u8; B];
    for (c, x) in p.chunks_exact_mut(4).zip(w) {
        c.copy_from_slice(&x.to_le_bytes());
    }
    p
}

#[cold]
#[inline(never)]
fn generation(pid: i32, sig: c_int, value: i32, thread: Option<bool>) {
    if let Some(id) = ext_id(EXT_SIG_GENERATION) {
        let me = tid();
        let (directed, target) = match thread {
            None => (0, 0),
            Some(is_self) => (1, if is_self { me } else { 0 }),
        };
        rt::trace::system_events::emit(
            id,
            &words::<6, 24>([me, pid, sig, value, directed, target]),
        );
    }
}

#[cold]
#[inline(never)]
fn delivery(sig: c_int, value: i32) {
    if let Some(id) = ext_id(EXT_SIG_DELIVERY) {
        rt::trace::system_events::emit(id, &words::<3, 12>([tid(), sig, value]));
    }
}

fn pid_self() -> i32 {
    // SAFETY: getpid has no preconditions.
    unsafe { libc::getpid() }
}

fn is_self(t: libc::pthread_t) -> bool {
    // SAFETY: pthread_self and pthread_equal have no preconditions.
    unsafe { libc::pthread_equal(t, libc::pthread_self()) != 0 }
}

/// `sival_int` of a `union sigval` passed by value (its first 4 bytes).
fn sival_int(v: libc::sigval) -> i32 {
    v.sival_ptr as usize as u32 as i32
}

/// `sival_int` of a siginfo filled by a wait (`si_value`).
fn info_value(info: *const libc::siginfo_t) -> i32 {
    if info.is_null() {
        return 0;
    }
    // SAFETY: the wait just filled `*info`; `si_value` is valid for queued and
    // kill signals (0 for the latter).
    sival_int(unsafe { (*info).si_value() })
}

#[no_mangle]
pub unsafe extern "C" fn sigqueue(pid: libc::pid_t, sig: c_int, value: libc::sigval) -> c_int {
    type F = unsafe extern "C" fn(libc::pid_t, c_int, libc::sigval) -> c_int;
    // SAFETY: the next definition of sigqueue has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(SIGQUEUE)) };
    if sig != 0 && rt::trace::system_events::enabled() {
        generation(pid, sig, sival_int(value), None);
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { f(pid, sig, value) }
}

#[no_mangle]
pub unsafe extern "C" fn kill(pid: libc::pid_t, sig: c_int) -> c_int {
    type F = unsafe extern "C" fn(libc::pid_t, c_int) -> c_int;
    // SAFETY: the next definition of kill has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(KILL)) };
    if sig != 0 && rt::trace::system_events::enabled() {
        generation(pid, sig, 0, None);
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { f(pid, sig) }
}

/// `pthread_kill`, forwarded to the next definition `which` names (the
/// default one or, with glibc's versions, the older one).
///
/// # Safety
/// As `pthread_kill`.
unsafe fn send_to_thread(which: usize, t: libc::pthread_t, sig: c_int) -> c_int {
    type F = unsafe extern "C" fn(libc::pthread_t, c_int) -> c_int;
    // SAFETY: the next definition of pthread_kill has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(which)) };
    if sig != 0 && rt::trace::system_events::enabled() {
        generation(pid_self(), sig, 0, Some(is_self(t)));
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { f(t, sig) }
}

/// `pthread_kill`. glibc has two: the default one (`pthread_kill@@GLIBC_2.34`)
/// returns 0 for a thread that has exited, the older one (the base version,
/// `pthread_kill@GLIBC_2.2.5` on x86_64), which every program built before
/// glibc 2.34 calls, returns ESRCH. Where glibc has both (`glibc_versions`,
/// set by the build script), libposixrt defines both versions too
/// ([`pthread_kill_compat`]), each forwarded to the same version of glibc's,
/// so that such a program gets under `LD_PRELOAD` what glibc gives it.
#[cfg_attr(not(glibc_versions), no_mangle)]
#[cfg_attr(glibc_versions, export_name = "__posixrt_pthread_kill")]
pub unsafe extern "C" fn pthread_kill(t: libc::pthread_t, sig: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { send_to_thread(PTHREAD_KILL, t, sig) }
}

/// glibc's older `pthread_kill` (see [`pthread_kill`]).
#[cfg(glibc_versions)]
#[export_name = "__posixrt_pthread_kill_compat"]
pub unsafe extern "C" fn pthread_kill_compat(t: libc::pthread_t, sig: c_int) -> c_int {
    // SAFETY: the caller's contract.
    unsafe { send_to_thread(PTHREAD_KILL_COMPAT, t, sig) }
}

// The two versions of `pthread_kill` (the version nodes are in the build
// script's version script).
#[cfg(all(glibc_versions, target_arch = "x86_64"))]
std::arch::global_asm!(
    ".symver __posixrt_pthread_kill, pthread_kill@@GLIBC_2.34",
    ".symver __posixrt_pthread_kill_compat, pthread_kill@GLIBC_2.2.5",
);
#[cfg(all(glibc_versions, target_arch = "aarch64"))]
std::arch::global_asm!(
    ".symver __posixrt_pthread_kill, pthread_kill@@GLIBC_2.34",
    ".symver __posixrt_pthread_kill_compat, pthread_kill@GLIBC_2.17",
);

#[no_mangle]
pub unsafe extern "C" fn pthread_sigqueue(
    t: libc::pthread_t,
    sig: c_int,
    value: libc::sigval,
) -> c_int {
    type F = unsafe extern "C" fn(libc::pthread_t, c_int, libc::sigval) -> c_int;
    // SAFETY: the next definition of pthread_sigqueue has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(PTHREAD_SIGQUEUE)) };
    if sig != 0 && rt::trace::system_events::enabled() {
        generation(pid_self(), sig, sival_int(value), Some(is_self(t)));
    }
    // SAFETY: the caller's arguments, passed through.
    unsafe { f(t, sig, value) }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigwaitinfo(
    set: *const libc::sigset_t,
    info: *mut libc::siginfo_t,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const libc::sigset_t, *mut libc::siginfo_t) -> c_int;
    // SAFETY: the next definition of sigwaitinfo has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(SIGWAITINFO)) };
    if !rt::trace::system_events::enabled() || !info.is_null() {
        // SAFETY: the caller's arguments, passed through.
        let r = unsafe { f(set, info) };
        if r > 0 && rt::trace::system_events::enabled() {
            delivery(r, info_value(info));
        }
        return r;
    }
    // No siginfo asked for: take one here to record the value.
    // SAFETY: siginfo_t is plain data; zero is a valid bit pattern.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's set and our own siginfo.
    let r = unsafe { f(set, &mut si) };
    if r > 0 {
        delivery(r, info_value(&si));
    }
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigtimedwait(
    set: *const libc::sigset_t,
    info: *mut libc::siginfo_t,
    timeout: *const libc::timespec,
) -> c_int {
    type F = unsafe extern "C-unwind" fn(
        *const libc::sigset_t,
        *mut libc::siginfo_t,
        *const libc::timespec,
    ) -> c_int;
    // SAFETY: the next definition of sigtimedwait has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(SIGTIMEDWAIT)) };
    if !rt::trace::system_events::enabled() || !info.is_null() {
        // SAFETY: the caller's arguments, passed through.
        let r = unsafe { f(set, info, timeout) };
        if r > 0 && rt::trace::system_events::enabled() {
            delivery(r, info_value(info));
        }
        return r;
    }
    // No siginfo asked for: take one here to record the value (as sigwaitinfo).
    // SAFETY: siginfo_t is plain data; zero is a valid bit pattern.
    let mut si: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: the caller's set and timeout, and our own siginfo.
    let r = unsafe { f(set, &mut si, timeout) };
    if r > 0 {
        delivery(r, info_value(&si));
    }
    r
}

#[no_mangle]
pub unsafe extern "C-unwind" fn sigwait(set: *const libc::sigset_t, sig: *mut c_int) -> c_int {
    type F = unsafe extern "C-unwind" fn(*const libc::sigset_t, *mut c_int) -> c_int;
    // SAFETY: the next definition of sigwait has this signature.
    let f: F = unsafe { std::mem::transmute::<*mut c_void, F>(real(SIGWAIT)) };
    // SAFETY: the caller's arguments, passed through.
    let r = unsafe { f(set, sig) };
    if r == 0 && !sig.is_null() && rt::trace::system_events::enabled() {
        // SAFETY: sigwait stored the signal number there.
        delivery(unsafe { *sig }, 0);
    }
    r
}
