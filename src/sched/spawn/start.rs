//! The new thread's side of `spawn`: the start gate it waits at and the result it
//! leaves behind.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::sched::tid::gettid;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum GateState {
    Wait,
    Run,
    Abort,
}

pub(super) struct Gate {
    pub(super) tid: i32,
    pub(super) state: GateState,
}

pub(super) struct Shared<T> {
    pub(super) gate: Mutex<Gate>,
    pub(super) cv: Condvar,
    pub(super) result: Mutex<Option<std::thread::Result<T>>>,
    pub(super) finished: AtomicBool,
}

pub(super) struct Start<F, T> {
    pub(super) f: F,
    pub(super) shared: Arc<Shared<T>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) extern "C" fn thread_start<F, T>(arg: *mut c_void) -> *mut c_void
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    // SAFETY: `arg` is the Box<Start<F, T>> that `Attr::create` leaked for exactly
    // this thread; ownership passes here once.
    let start = unsafe { Box::from_raw(arg.cast::<Start<F, T>>()) };
    let Start { f, shared } = *start;
    let run = {
        let mut g = lock(&shared.gate);
        g.tid = gettid().as_raw();
        shared.cv.notify_all();
        while g.state == GateState::Wait {
            g = shared.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.state == GateState::Run
    };
    if run {
        let r = catch_unwind(AssertUnwindSafe(f));
        *lock(&shared.result) = Some(r);
    }
    // Under the gate lock: a JoinHandle method that holds it either sees `finished`
    // or knows this thread cannot exit (and its tid cannot become 0) until it is done.
    let g = lock(&shared.gate);
    shared.finished.store(true, Ordering::Release);
    drop(g);
    std::ptr::null_mut()
}
