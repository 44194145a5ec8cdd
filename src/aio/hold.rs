//! Completions held back while a `lio_listio(LIO_NOWAIT)` call runs.
//!
//! `LIO_NOWAIT` returns at once, and a program may check that no notification
//! of its list was handled before the call returned (the Open POSIX Test
//! Suite's `lio_listio/2-1` does). Small writes complete inside the call:
//! io_uring runs them inline in the call's `io_uring_enter`, and a pool thread
//! takes the first while the call still puts in the others. Their signals,
//! sent by the completion thread or the worker, reached the calling thread
//! before it returned.
//!
//! So the requests of such a call that notify (or whose list does) are *held*:
//! a completion stores the result and leaves the request in flight, with
//! nothing fired or woken (`aio_error` gives EINPROGRESS). The call's last
//! step hands them to the holder thread, which lets go of them once the call
//! is out (it waits at most [`CALL_OUT`]): those done meanwhile complete then,
//! the others when they are done. The calling
//! thread cannot let go itself: it would handle its own signal before it
//! returns, and a worker would signal a request let go of before the call's
//! last instructions ran. They complete as any other request does: status,
//! signal, then waiters (a wait that sees one done has its handler run, as
//! `aio_suspend/6-1` checks). The holder thread blocks every signal, so none
//! is handled there.
//!
//! The limit: a calling thread descheduled in the few instructions between
//! its last step and its return, for longer than the holder thread takes to
//! send a signal, may still handle one before it returns.
//!
//! What is not held: a probe read (settled by its own call), a parked one
//! (thread engine), and one that ends before it was issued (a cancel, or an
//! error at submission). A cancel of a held request that is done finds it
//! out of the kernel: it answers "all done", and the request shows done once
//! it is let go of.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Dropped as a holding call's last step: the holder thread then lets go of
/// its requests.
#[must_use = "the call's requests are let go of when this is dropped"]
pub(crate) struct CallOut(pub(crate) Option<Arc<AtomicBool>>);

impl Drop for CallOut {
    fn drop(&mut self) {
        if let Some(r) = &self.0 {
            r.store(false, Ordering::SeqCst);
        }
    }
}

/// The longest the holder thread waits for a holding call to return: a caller
/// may be descheduled that long on a busy machine (a real-time thread may
/// hold a CPU for 950 ms of each second under the default throttling).
const CALL_OUT: Duration = Duration::from_secs(2);

/// The thread that lets go of held requests once their calls returned. It
/// blocks every signal, so a completion signal it sends is handled by a
/// thread of the program (as with the engine's other threads).
pub(crate) struct Holder {
    sh: Arc<Shared>,
}

struct Shared {
    st: Mutex<Queue>,
    cv: Condvar,
}

/// Lets go of one holding call's requests (see `let_go.rs`).
pub(crate) type LetGo = Box<dyn Fn(Vec<(u32, u32)>) + Send + Sync>;

/// A holding call's requests, and the flag it clears as its last step.
type Call = (Vec<(u32, u32)>, Arc<AtomicBool>);

#[derive(Default)]
struct Queue {
    /// Requests to let go of, per call.
    calls: Vec<Call>,
    /// The context is gone.
    closed: bool,
}

impl Holder {
    /// Starts the thread; `let_go` lets go of one call's requests.
    pub(crate) fn start(let_go: LetGo) -> crate::Result<Holder> {
        let sh = Arc::new(Shared {
            st: Mutex::new(Queue::default()),
            cv: Condvar::new(),
        });
        let mine = Arc::clone(&sh);
        crate::sys::signal::spawn_all_blocked("posixrt-aio-hold".into(), move || {
            run(&mine, &let_go)
        })
        .map_err(|e| {
            crate::Error::from_errno("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN))
                .with_message("starting the thread that completes held AIO requests")
        })?;
        Ok(Holder { sh })
    }

    /// Takes a holding call's requests `ids`: they are let go of once the
    /// returned guard is dropped (the call's last step).
    pub(crate) fn take(&self, ids: Vec<(u32, u32)>) -> CallOut {
        let running = Arc::new(AtomicBool::new(true));
        self.sh
            .st
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .calls
            .push((ids, Arc::clone(&running)));
        self.sh.cv.notify_one();
        CallOut(Some(running))
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.sh.st.lock().unwrap_or_else(|p| p.into_inner()).closed = true;
        self.sh.cv.notify_one();
    }
}

fn run(sh: &Shared, let_go: &LetGo) {
    loop {
        let calls = {
            let mut st = sh.st.lock().unwrap_or_else(|p| p.into_inner());
            while st.calls.is_empty() && !st.closed {
                st = sh.cv.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if st.calls.is_empty() {
                return;
            }
            std::mem::take(&mut st.calls)
        };
        for (ids, running) in calls {
            // A signal sent while its call runs may be handled before it
            // returns: wait for the call out (a caller this thread's wake-up
            // preempted, on its CPU, goes on meanwhile).
            let start = Instant::now();
            let mut n = 0u32;
            while running.load(Ordering::SeqCst) && start.elapsed() < CALL_OUT {
                n += 1;
                if n <= 4 {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            let_go(ids);
        }
    }
}
