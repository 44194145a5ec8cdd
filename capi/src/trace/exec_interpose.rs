//! `execve`, `execv`, `execvp`, `execvpe`, `fexecve` and `execveat`, interposed (a program
//! linked with `-lposixrt`, or run under `LD_PRELOAD=libposixrt.so`): each
//! writes every trace log first, then calls the next definition
//! (`dlsym(RTLD_NEXT)`, resolved at load time).
//!
//! POSIX: when a process "invokes a member of the exec family of functions",
//! its trace streams are shut down as by `posix_trace_shutdown`, which
//! flushes them to their logs. The events a stream holds wait for its
//! flusher's next write, which the new image forestalls: they were lost. Here
//! they are written (as at process exit: the log holds every event, but no
//! end record), and the streams are left running, so an exec that fails
//! finds them as they were. Nothing is done when no stream has a log.
//!
//! `execl`, `execle` and `execlp`, variadic, are trampolines in
//! [`super::exec_variadic`] (x86_64, built by Rust 1.88 or later): glibc's go
//! to its own `execve` directly, past this one. Their next definitions are
//! resolved here with the others'.
//!
//! Async-signal-safe, as `execve` is: the flush before it only wakes the
//! flushers and waits for them (atomics, `futex`, `nanosleep`). In a child
//! of `vfork` (which shares its parent's memory) it wakes the parent's
//! flushers, which write the parent's streams.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};

const NAMES: [&CStr; 9] = [
    c"execve",
    c"execv",
    c"execvp",
    c"execvpe",
    c"fexecve",
    c"execl",
    c"execle",
    c"execlp",
    c"execveat",
];
const EXECVE: usize = 0;
const EXECV: usize = 1;
const EXECVP: usize = 2;
const EXECVPE: usize = 3;
const FEXECVE: usize = 4;
#[cfg(exec_trampolines)]
pub(super) const EXECL: usize = 5;
#[cfg(exec_trampolines)]
pub(super) const EXECLE: usize = 6;
#[cfg(exec_trampolines)]
pub(super) const EXECLP: usize = 7;
const EXECVEAT: usize = 8;

static REAL: [AtomicPtr<c_void>; NAMES.len()] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; NAMES.len()];

type Argv = *const *const c_char;

/// Resolves the next definitions at load time, while the process is still
/// single-threaded (a `dlsym` in a child of `vfork`, or in a signal handler,
/// would not be safe).
#[used]
#[link_section = ".init_array"]
static RESOLVE_AT_LOAD: extern "C" fn() = resolve_all;

extern "C" fn resolve_all() {
    for (name, r) in NAMES.iter().zip(&REAL) {
        // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name has no other
        // precondition.
        let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
        r.store(p, Ordering::Release);
    }
}

/// The next definition of function `i`, or `None` (then the call fails with
/// `ENOSYS`). Called before the library's load-time resolution ran (an exec
/// from another library's constructor, which the loader may run first), it
/// is looked up now: `dlsym` is not async-signal-safe, but an exec refused
/// for want of it would be worse.
pub(super) fn real(i: usize) -> Option<*mut c_void> {
    let mut p = REAL[i].load(Ordering::Acquire);
    if p.is_null() {
        // SAFETY: as in `resolve_all`.
        p = unsafe { libc::dlsym(libc::RTLD_NEXT, NAMES[i].as_ptr()) };
        REAL[i].store(p, Ordering::Release);
    }
    (!p.is_null()).then_some(p)
}

/// Sets `errno` to `ENOSYS` and returns -1: no next definition.
pub(super) fn no_next() -> c_int {
    // SAFETY: errno is the calling thread's.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}

/// Calls function `i` (of the two-argument form) after the flush.
fn call2(i: usize, path: *const c_char, argv: Argv) -> c_int {
    rt::trace::flush_before_exec();
    let Some(p) = real(i) else {
        return no_next();
    };
    // SAFETY: `p` is the next definition of `execv` or `execvp`, which take
    // a path and an argument vector; the arguments are the caller's, passed
    // through (the callee checks them as it would without us).
    unsafe {
        let f: unsafe extern "C" fn(*const c_char, Argv) -> c_int = std::mem::transmute(p);
        f(path, argv)
    }
}

/// Calls function `i` (of the three-argument form) after the flush.
fn call3(i: usize, path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    rt::trace::flush_before_exec();
    let Some(p) = real(i) else {
        return no_next();
    };
    // SAFETY: `p` is the next definition of `execve` or `execvpe`, which
    // take a path, an argument vector and an environment; the arguments are
    // the caller's, passed through.
    unsafe {
        let f: unsafe extern "C" fn(*const c_char, Argv, Argv) -> c_int = std::mem::transmute(p);
        f(path, argv, envp)
    }
}

/// `fexecve` after the flush.
fn call_fd(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    rt::trace::flush_before_exec();
    let Some(p) = real(FEXECVE) else {
        return no_next();
    };
    // SAFETY: `p` is the next definition of `fexecve`; the arguments are
    // the caller's, passed through.
    unsafe {
        let f: unsafe extern "C" fn(c_int, Argv, Argv) -> c_int = std::mem::transmute(p);
        f(fd, argv, envp)
    }
}

#[no_mangle]
pub extern "C" fn execve(path: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call3(EXECVE, path, argv, envp)
}

#[no_mangle]
pub extern "C" fn execv(path: *const c_char, argv: Argv) -> c_int {
    call2(EXECV, path, argv)
}

#[no_mangle]
pub extern "C" fn execvp(file: *const c_char, argv: Argv) -> c_int {
    call2(EXECVP, file, argv)
}

#[no_mangle]
pub extern "C" fn execvpe(file: *const c_char, argv: Argv, envp: Argv) -> c_int {
    call3(EXECVPE, file, argv, envp)
}

#[no_mangle]
pub extern "C" fn fexecve(fd: c_int, argv: Argv, envp: Argv) -> c_int {
    call_fd(fd, argv, envp)
}

/// `execveat` (glibc 2.34 and later; where the C library has none, the call
/// fails with `ENOSYS`, as the system call would on a kernel without it).
#[no_mangle]
pub extern "C" fn execveat(
    dirfd: c_int,
    path: *const c_char,
    argv: Argv,
    envp: Argv,
    flags: c_int,
) -> c_int {
    rt::trace::flush_before_exec();
    let Some(p) = real(EXECVEAT) else {
        return no_next();
    };
    // SAFETY: `p` is the next definition of `execveat`; the arguments are
    // the caller's, passed through.
    unsafe {
        let f: unsafe extern "C" fn(c_int, *const c_char, Argv, Argv, c_int) -> c_int =
            std::mem::transmute(p);
        f(dirfd, path, argv, envp, flags)
    }
}
