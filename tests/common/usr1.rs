//! A counting SIGUSR1 handler for the tests that raise the signal inside a
//! call: `#[path = "common/usr1.rs"] mod usr1;`.
#![allow(dead_code)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

/// How many times the handler ran.
pub static HANDLED: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_usr1(_: c_int) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// SIGUSR1 to the calling thread.
pub fn raise_here() {
    // SAFETY: a signal to the calling thread, which is alive.
    unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
}

/// Installs the handler, without SA_RESTART.
pub fn install() {
    // SAFETY: a zeroed sigaction with a plain handler that only bumps an
    // atomic (async-signal-safe), an emptied mask and no flags.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

/// The handler's runs so far.
pub fn handled() -> u32 {
    HANDLED.load(Ordering::Relaxed)
}
