//! Forking while another thread is held at a chosen point inside the crate:
//! `#[path = "common/held_fork.rs"] mod held_fork;` (it declares the test
//! crate's global allocator).
//!
//! A thread [`arm`]s itself, then calls into the crate: its next allocation
//! waits there (whatever locks it holds stay held) until [`release`]. The test
//! forks meanwhile; [`in_child`] runs checks in the child and reports them, and
//! a child that hangs is killed after [`child::LIMIT`] and fails the test.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

#[path = "child.rs"]
pub mod child;

thread_local! {
    /// The size of the allocation of the thread that waits for `RELEASE`
    /// (once): [`ANY`], or only one of this size; 0 when not armed.
    static ARMED: Cell<usize> = const { Cell::new(0) };
}

/// [`ARMED`]: the next allocation, whatever its size.
const ANY: usize = usize::MAX;

/// The armed thread is inside its allocation.
static HELD: AtomicBool = AtomicBool::new(false);
/// The armed thread may go on.
static RELEASE: AtomicBool = AtomicBool::new(false);

struct HoldingAlloc;

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for HoldingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let armed = ARMED.try_with(Cell::get).unwrap_or(0);
        if armed != 0 && (armed == ANY || armed == l.size()) {
            let _ = ARMED.try_with(|a| a.set(0));
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

/// The calling thread's next allocation waits for [`release`].
pub fn arm() {
    ARMED.with(|a| a.set(ANY));
}

/// The calling thread's next allocation of `size` bytes waits for
/// [`release`] (to hold it at a later point of a call than its first
/// allocation).
pub fn arm_at(size: usize) {
    ARMED.with(|a| a.set(size));
}

/// Disarms the calling thread (if its call made no allocation).
pub fn disarm() {
    ARMED.with(|a| a.set(0));
}

/// Waits until the armed thread is held, or `gone()` (it finished without
/// allocating); true if it is held.
pub fn wait_held(gone: impl Fn() -> bool) -> bool {
    while !HELD.load(SeqCst) && !gone() {
        std::thread::yield_now();
    }
    HELD.load(SeqCst)
}

/// Lets the held thread go.
pub fn release() {
    RELEASE.store(true, SeqCst);
}

/// Lets the held thread go when dropped (also when the test panics).
pub struct ReleaseOnDrop;

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        release();
    }
}

/// Forks; the child runs `checks` and `_exit`s (0, or 1 with the failure's text
/// on a pipe); the parent waits (a hung child is killed and fails the test)
/// and returns the failure, if any.
pub fn in_child(checks: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    // SAFETY: the thread held in the allocator holds no allocator lock, only
    // the crate's.
    unsafe { child::in_child(checks) }
}
