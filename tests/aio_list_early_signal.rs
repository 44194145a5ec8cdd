//! `lio_listio(ListMode::Wait)` ends with `Interrupted` (EINTR) when a signal
//! handler runs while it waits (other tests), not for one that ran while it
//! built and submitted its list, before it had to wait (POSIX: EINTR for a
//! signal "delivered while waiting"; glibc alike): those calls make no
//! signal-mask system calls.
//!
//! This test program's global allocator can raise the signal in the calling
//! thread at its next allocation (its own file for that reason): the call's
//! first allocation, as it builds its list. `both!(name, f)` makes
//! `name::uring` and `name::threads`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::time::Duration;

use posixrt::aio::{Backend, ListMode, Notify, Op};

mod common;
#[path = "common/usr1.rs"]
mod usr1;
use common::both;
use common::{ctx, pipe};
use usr1::{install, raise_here};

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

fn handler_at_first_allocation_does_not_interrupt(b: Backend) {
    install();
    let aio = ctx(b);
    let (rd, wr) = pipe();
    let before = usr1::handled();
    let ops = [Some(Op::read(&rd, 0, vec![0u8; 4]))];
    // The read completes once data comes, a while after the call began (if
    // it comes before the call waits, the call returns all the same).
    let writer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        rustix::io::write(&wr, b"data").unwrap();
        wr
    });
    RAISE.with(|r| r.set(true));
    let res = aio.lio_listio(ListMode::Wait, ops, Notify::None);
    RAISE.with(|r| r.set(false));
    let _wr = writer.join().unwrap();
    assert!(usr1::handled() > before, "no handler ran");
    let list = res.expect("a handler run before the wait does not interrupt it");
    assert!(list.is_done());
    let done = list.take_all().expect("completions");
    let c = done[0].as_ref().expect("the read");
    assert_eq!(c.data(), b"data");
}

both!(
    handler_at_first_allocation,
    handler_at_first_allocation_does_not_interrupt
);
