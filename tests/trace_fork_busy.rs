//! A forked child shuts its own streams down although a thread of the parent
//! was inside the recorder (its busy flag set) at the fork.
//!
//! Shutdown waits for every thread's busy flag to clear; in the child, a flag
//! of a parent thread that was recording at the fork never clears (the thread
//! does not exist there). The test stops a thread exactly there: a global
//! allocator holds it at its first allocation once armed, which is the mapping
//! of its sub-buffer in a second stream, made with its busy flag set.

#[path = "common/child.rs"]
mod child;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::*};

use posixrt::trace::{self, Trace, TraceAttr};

thread_local! {
    /// Set: the thread's next allocation waits for `RELEASE` (once).
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// The armed thread is inside its allocation (inside the recorder).
static HELD: AtomicBool = AtomicBool::new(false);
/// The armed thread may go on.
static RELEASE: AtomicBool = AtomicBool::new(false);

struct HoldingAlloc;

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for HoldingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if ARMED.try_with(|a| a.replace(false)).unwrap_or(false) {
            HELD.store(true, SeqCst);
            while !RELEASE.load(SeqCst) {
                std::thread::yield_now();
            }
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
static ALLOC: HoldingAlloc = HoldingAlloc;

/// Lets the held thread go when dropped.
struct ReleaseOnDrop;

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        RELEASE.store(true, SeqCst);
    }
}

/// In the child: a stream of its own, started and shut down.
fn child_stream() -> posixrt::Result<()> {
    let t = Trace::create(&TraceAttr::new())?;
    t.start()?;
    t.shutdown()
}

#[test]
fn a_child_shuts_down_its_stream_although_a_parent_thread_was_recording() {
    let ev = trace::eventid_open("tfb.event").unwrap();
    let first = Trace::create(&TraceAttr::new()).unwrap();
    first.start().unwrap();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let recorder = std::thread::spawn(move || {
        // Takes the thread's busy flag and its sub-buffer in the first stream.
        trace::event(ev, &[1]);
        ready_tx.send(()).unwrap();
        go_rx.recv().unwrap();
        // Its first event in the second stream maps a sub-buffer, with the busy
        // flag set: the allocator holds the thread there.
        ARMED.with(|a| a.set(true));
        trace::event(ev, &[2]);
        ARMED.with(|a| a.set(false));
    });
    ready_rx.recv().unwrap();
    let second = Trace::create(&TraceAttr::new()).unwrap();
    second.start().unwrap();
    go_tx.send(()).unwrap();
    while !HELD.load(SeqCst) && !recorder.is_finished() {
        std::thread::yield_now();
    }
    assert!(
        HELD.load(SeqCst),
        "the event into the second stream made no allocation to hold it at"
    );
    // The held thread goes on however the wait below ends (a hung child fails
    // it with a panic, and the streams' shutdown waits for that thread).
    let _release = ReleaseOnDrop;
    // SAFETY: the child only creates, starts and shuts down a stream, then
    // `_exit`s; the thread held in the allocator holds no allocator lock.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        let code = if child_stream().is_ok() { 0 } else { 3 };
        // SAFETY: ends the child without the parent's atexit handlers.
        unsafe { libc::_exit(code) }
    }
    let status = child::wait_child(pid);
    drop(_release);
    recorder.join().unwrap();
    first.shutdown().unwrap();
    second.shutdown().unwrap();
    assert!(libc::WIFEXITED(status), "child status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0, "the child's stream failed");
}
