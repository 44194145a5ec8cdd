//! `Aio::suspend` ends with EINTR when a signal handler runs at any moment of
//! the call, also while it is awake before its first sleep (it reads the
//! clock for its deadline there): such a handler used to go unseen, and the
//! call slept on until its timeout.
//!
//! This test program defines `clock_gettime` (the whole process's: its own
//! file for that reason), so the first clock read of the call can raise the
//! signal in the calling thread, in the middle of the call. `both!(name, f)`
//! makes `name::uring` and `name::threads`.

use std::cell::Cell;
use std::ffi::c_int;
use std::time::Duration;

use posixrt::aio::Backend;
use posixrt::ErrorKind;

mod common;
#[path = "common/usr1.rs"]
mod usr1;
use common::both;
use common::{ctx, pipe};
use usr1::{install, raise_here};

thread_local! {
    /// The calling thread's next clock read raises SIGUSR1 in it.
    static RAISE: Cell<bool> = const { Cell::new(false) };
}

/// The process's `clock_gettime` (it interposes libc's, which `Instant::now`
/// calls): the system call, then SIGUSR1 if the thread asked for it.
///
/// # Safety
/// As `clock_gettime`: `ts` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clock: libc::clockid_t, ts: *mut libc::timespec) -> c_int {
    // SAFETY: the caller's arguments, passed on to the system call.
    let r = unsafe { libc::syscall(libc::SYS_clock_gettime, clock, ts) };
    if RAISE.try_with(|r| r.replace(false)).unwrap_or(false) {
        raise_here();
    }
    if r == 0 {
        0
    } else {
        -1
    }
}

fn handler_at_first_clock_read_interrupts(b: Backend) {
    install();
    let aio = ctx(b);
    let (rd, _wr) = pipe();
    let r = aio.read(&rd, 0, vec![0u8; 4]).unwrap();
    for round in 0..10 {
        let before = usr1::handled();
        RAISE.with(|r| r.set(true));
        let res = aio.suspend([&r], Some(Duration::from_secs(2)));
        RAISE.with(|r| r.set(false));
        let e = res.expect_err("the read of an empty pipe never completes");
        assert!(usr1::handled() > before, "round {round}: no handler ran");
        assert_eq!(e.kind(), ErrorKind::Interrupted, "round {round}: {e}");
    }
    assert!(r.cancel().is_ok());
}

both!(
    handler_at_first_clock_read,
    handler_at_first_clock_read_interrupts
);
