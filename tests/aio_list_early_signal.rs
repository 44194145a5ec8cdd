//! `lio_listio(ListMode::Wait)` ends with `Interrupted` (EINTR) when a signal
//! handler runs at any moment of the call once it has begun, also while it
//! builds and submits its list, before its first sleep: such a handler used
//! to go unseen, and the call waited for every request.
//!
//! This test program's global allocator can raise the signal in the calling
//! thread at its next allocation (its own file for that reason): the call's
//! first allocation, as it builds its list. `both!(name, f)` makes
//! `name::uring` and `name::threads`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use posixrt::aio::{Backend, ListMode, Notify, Op};
use posixrt::ErrorKind;

mod common;
use common::both;
use common::{ctx, pipe};

thread_local! {
    /// The calling thread's next allocation raises SIGUSR1 in it.
    static RAISE: Cell<bool> = const { Cell::new(false) };
}

/// The system allocator, raising SIGUSR1 first where the thread asked for it.
struct Raising;

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Raising {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if RAISE.try_with(|r| r.replace(false)).unwrap_or(false) {
            raise_here();
        }
        // SAFETY: forwarded (the caller's contract).
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded (the caller's contract).
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Raising = Raising;

static HANDLED: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_usr1(_: c_int) {
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// SIGUSR1 to the calling thread.
fn raise_here() {
    // SAFETY: a signal to the calling thread, which is alive.
    unsafe { libc::pthread_kill(libc::pthread_self(), libc::SIGUSR1) };
}

/// A SIGUSR1 handler without SA_RESTART.
fn install() {
    // SAFETY: a zeroed sigaction with a plain handler that only bumps an
    // atomic (async-signal-safe), an emptied mask and no flags.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

fn handler_at_first_allocation_interrupts(b: Backend) {
    install();
    let aio = ctx(b);
    for round in 0..5 {
        let (rd, wr) = pipe();
        let before = HANDLED.load(Ordering::Relaxed);
        let ops = [Some(Op::read(&rd, 0, vec![0u8; 4]))];
        // A call that missed its signal waits for the read: data after 2 s
        // ends it.
        let returned = Arc::new(AtomicBool::new(false));
        let r2 = Arc::clone(&returned);
        let rescue = std::thread::spawn(move || {
            let t0 = Instant::now();
            while !r2.load(Ordering::Acquire) && t0.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_millis(10));
            }
            if !r2.load(Ordering::Acquire) {
                rustix::io::write(&wr, b"late").unwrap();
            }
            wr
        });
        RAISE.with(|r| r.set(true));
        let res = aio.lio_listio(ListMode::Wait, ops, Notify::None);
        RAISE.with(|r| r.set(false));
        returned.store(true, Ordering::Release);
        let wr = rescue.join().unwrap();
        assert!(
            HANDLED.load(Ordering::Relaxed) > before,
            "round {round}: no handler ran"
        );
        let e = res.err().expect("lio_listio returned without EINTR");
        assert_eq!(e.kind(), ErrorKind::Interrupted, "round {round}: {e}");
        // The read goes on: it takes the data that comes.
        rustix::io::write(&wr, b"data").unwrap();
        let t0 = Instant::now();
        while rustix::io::ioctl_fionread(&rd).unwrap() > 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "round {round}: read still waiting"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

both!(
    handler_at_first_allocation,
    handler_at_first_allocation_interrupts
);
