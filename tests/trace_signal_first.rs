//! A signal handler's event while its thread takes its busy flag (the thread's
//! very first event) cannot be recorded, and is counted lost.
//!
//! The handler is raised from inside the thread's first registration by a
//! global allocator that sends the signal at its first allocation once armed:
//! taking the busy flag allocates (no thread that recorded has exited in this
//! process, so no flag is there for reuse: one test in this file), so the
//! signal comes exactly there.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering::*};

use posixrt::trace::{self, EventId, Trace, TraceAttr};

#[path = "common/trace_read.rs"]
mod trace_read;
use trace_read::user_ids_and_lost;

thread_local! {
    /// Set: the thread's next allocation raises SIGUSR1 first (once).
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

struct RaisingAlloc;

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for RaisingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if ARMED.try_with(|a| a.replace(false)).unwrap_or(false) {
            // SAFETY: raise has no preconditions; the handler is async-signal-safe.
            unsafe { libc::raise(libc::SIGUSR1) };
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` above, that is from `System`.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: RaisingAlloc = RaisingAlloc;

static HANDLER_ID: AtomicU16 = AtomicU16::new(u16::MAX);
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    HANDLED.fetch_add(1, Relaxed);
    if let Some(id) = EventId::from_raw(HANDLER_ID.load(Relaxed)) {
        trace::event(id, &[7]);
    }
}

fn install_handler() {
    // SAFETY: a zeroed sigaction is valid; the handler only touches atomics and
    // the recorder; the old action is not needed.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
}

#[test]
fn a_handler_event_during_the_first_registration_is_counted_lost() {
    let user = trace::eventid_open("tsf.user").unwrap();
    let handler = trace::eventid_open("tsf.handler").unwrap();
    install_handler();
    let t = Trace::create(&TraceAttr::new()).unwrap();
    t.start().unwrap();
    HANDLER_ID.store(handler.raw(), Relaxed);
    let before = HANDLED.load(Relaxed);
    std::thread::spawn(move || {
        // The first event of this thread takes its busy flag, which allocates:
        // the handler runs there, before the thread has a flag of its own.
        ARMED.with(|a| a.set(true));
        trace::event(user, &[1]);
        ARMED.with(|a| a.set(false));
    })
    .join()
    .unwrap();
    HANDLER_ID.store(u16::MAX, Relaxed);
    t.stop().unwrap();
    let handled = HANDLED.load(Relaxed) - before;
    let overrun = t.status().overrun;
    let (ids, lost) = user_ids_and_lost(&t);
    t.shutdown().unwrap();
    assert_eq!(handled, 1, "the signal came inside the first event");
    assert_eq!(ids, [user], "the handler's event cannot be recorded there");
    assert_eq!(lost, 1, "the handler's dropped event is counted");
    assert!(overrun, "the status reports the loss");
}
