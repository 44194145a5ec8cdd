//! Under tokio, futures are woken by the runtime's own reactor, with no helper thread.
//!
//! The ring's completion eventfd is registered with the reactor of each tokio runtime
//! that polls a request future (an [`AsyncFd`] on a `dup` of it). The waker given to
//! the reactor is not a task's: it is the registration's ([`Reap`], named weakly: it
//! goes with its context), which, when the eventfd fires, reaps
//! the completion queue in place and wakes the tasks whose requests completed
//! (through the wakers they left in their slots). So a completion reaches its task in
//! the reactor's own turn: no completion thread, no hand-off, no extra syscall when
//! the CQE is already there (a poll reaps first).
//!
//! Arming follows the edge-triggered contract: the registration is re-armed
//! (readiness cleared until the reactor reports `Pending`) *before* the completion
//! queue is reaped, so a completion that lands after the reap still fires.
//!
//! Two helpers serve the batching of `read_async`/`write_async` (see
//! `future/batch.rs`): [`batching_pays`] (other tasks may submit in this turn) and
//! [`at_turn_end`] (a wake-up once the scheduler has run every ready task and
//! polled its driver, when the batch's single `io_uring_enter` is made).
//!
//! A poll outside any tokio runtime (another executor), or where a
//! `current_thread` runtime is only entered (its reactor runs only inside its
//! `block_on`), falls back to the completion thread; a `multi_thread` runtime's
//! workers drive its reactor, so its futures use it wherever they are polled
//! (also in the body of its `block_on`, the `main` of `#[tokio::main]`).
//!
//! A runtime built without its I/O driver (no `enable_io` or `enable_all`) has
//! no reactor to register with, and tokio panics when asked to, with no call
//! that asks first. So the registration is tried with the panic caught, once
//! per thread and runtime (a thread remembers 8), and the completion thread
//! wakes the futures. A panic hook, installed at the first try, keeps that
//! panic off stderr and hands every other panic to the hook it replaced; a
//! hook the program sets later replaces it, and then sees those panics too.
//! A thread that is unwinding does not try (a destructor that polls): the
//! completion thread wakes its future. In a program built with
//! `panic = "abort"` nothing can be caught: a future polled in one of the
//! runtime's tasks aborts, with tokio's message, as tokio's own I/O types do,
//! and one polled elsewhere (a `block_on` body, another executor under
//! `Runtime::enter`) uses the completion thread without asking.
//!
//! Which scheduler polls is told by tokio's `yield_now` (see
//! [`turn_ends_here`]), which runtime by the current handle. A
//! `current_thread` runtime entered (`Runtime::enter`) from inside another
//! runtime's scheduler (a task, or a `block_on` body) is taken for the one
//! that polls: its futures there are never woken. Enter such a runtime only
//! outside any runtime's scheduler, or give the future to a task of it.

use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Wake, Waker};

use tokio::io::unix::AsyncFd;
use tokio::runtime::{Handle, Id};

/// What this module needs of an AIO context (implemented by the engine's
/// `Inner`): it stays a leaf, as the engine's other backends are.
pub(crate) trait Host: Send + Sync {
    /// Reaps the completion queue and wakes whoever's request completed.
    fn reap_now(&self);
    /// The ring's completion eventfd, registered on first use; `None` for an
    /// engine without one.
    fn completion_eventfd(&self) -> Option<&OwnedFd>;
    /// This context's reactor registrations.
    fn reactors(&self) -> &Reactors;
    /// A runtime whose reactor woke this context's futures shut down: a future
    /// another executor still polls (under `Runtime::enter`, on a
    /// `spawn_blocking` thread, in `Handle::block_on`) must be woken by
    /// something else.
    fn reactor_gone(self: Arc<Self>);
}

/// The reactor registrations of one context, one per live runtime that polled it.
#[derive(Default)]
pub(crate) struct Reactors {
    list: Mutex<Vec<(Id, Arc<Reap>)>>,
    /// The token of the last end-of-turn flush scheduled for this context, 0
    /// once it ran (see `future::batch`).
    pub(crate) flush_token: std::sync::atomic::AtomicU64,
}

/// One runtime's registration of the completion eventfd, woken by the
/// reactor (through [`Woken`]) when it fires.
struct Reap {
    inner: Weak<dyn Host>,
    afd: AsyncFd<OwnedFd>,
    /// The waker the reactor keeps: a [`Woken`] of `self`.
    waker: Waker,
    /// The last rearm succeeded: the reactor wakes `self` on the next
    /// completion, and `self`'s wake re-arms before it reaps, so it stays armed
    /// until its runtime shuts down (the reactor then wakes it, the rearm
    /// fails, and the completion thread takes over if a future still waits:
    /// see `Host::reactor_gone`).
    armed: std::sync::atomic::AtomicBool,
}

/// This thread's last armed registration.
struct Last {
    ctx: usize,
    id: Id,
    reap: Weak<Reap>,
    /// The runtime is `multi_thread`: its workers drive its reactor.
    multi: bool,
}

thread_local! {
    static LAST: std::cell::RefCell<Option<Last>> = const { std::cell::RefCell::new(None) };
    /// The last runtimes found here to have no I/O driver, at most
    /// [`NO_IO_KEPT`].
    static NO_IO: std::cell::RefCell<Vec<Id>> = const { std::cell::RefCell::new(Vec::new()) };
    /// Wake-ups, on this thread, of the waker [`turn_ends_here`] polls with.
    static WAKES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// A registration is being tried with its panic kept quiet ([`quietly`]).
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How many runtimes without an I/O driver a thread remembers.
const NO_IO_KEPT: usize = 8;

/// True if runtime `id` was found here to have no I/O driver.
fn no_io(id: Id) -> bool {
    NO_IO.try_with(|n| n.borrow().contains(&id)) == Ok(true)
}

/// Remembers runtime `id` as one without an I/O driver (forgetting the
/// oldest past [`NO_IO_KEPT`]).
fn remember_no_io(id: Id) {
    let _ = NO_IO.try_with(|n| {
        let mut n = n.borrow_mut();
        if n.len() == NO_IO_KEPT {
            n.remove(0);
        }
        n.push(id);
    });
}

/// True if this thread last armed `ctx` for runtime `id`, that registration is
/// still armed, and its reactor runs while the code polled here waits: a
/// `multi_thread` runtime's workers drive it anywhere; a `current_thread`
/// runtime drives it only in its `block_on`, which a poll under
/// `Runtime::enter` by another executor is not (no lock, no reactor call).
/// `turn_end`: called by the scheduler at the end of its turn, where it is not
/// asked (and must not be: that runs inside its deferred wake-ups).
fn armed_here(ctx: usize, id: Id, turn_end: bool) -> bool {
    // `try_with`: a wake-up may be armed while this thread's locals are torn down.
    let multi = LAST
        .try_with(|l| match &*l.borrow() {
            Some(last) if last.ctx == ctx && last.id == id => last
                .reap
                .upgrade()
                .filter(|r| r.armed.load(std::sync::atomic::Ordering::Acquire))
                .map(|_| last.multi),
            _ => None,
        })
        .ok()
        .flatten();
    match multi {
        Some(true) => true,
        Some(false) => turn_end || turn_ends_here(),
        None => false,
    }
}

/// The waker the reactor keeps for a [`Reap`], which it names weakly: the
/// reactor holds it as long as the registration stays armed, and the
/// registration lives in it (its `AsyncFd`). A strong name would keep both
/// for as long as the runtime lives, past their context, its descriptor
/// open; a weak one lets the registration go with the context's list.
struct Woken(Weak<Reap>);

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(reap) = self.0.upgrade() {
            reap.woken();
        }
    }
}

impl Reap {
    /// Clears readiness until the reactor would wake `self` on the next
    /// completion. False if the registration is dead (its runtime shut down).
    ///
    /// Outside the polling task's budget: with it spent, the reactor's
    /// `poll_read_ready` would refuse without registering `self`, and where
    /// no scheduler defers wake-ups (a `multi_thread` runtime's `block_on`)
    /// wake `self` at once, which would rearm again, without end.
    fn rearm(&self) -> bool {
        let mut cx = Context::from_waker(&self.waker);
        let rearm = std::future::poll_fn(|cx| loop {
            match self.afd.poll_read_ready(cx) {
                Poll::Pending => return Poll::Ready(true),
                Poll::Ready(Ok(mut ready)) => ready.clear_ready(),
                Poll::Ready(Err(_)) => return Poll::Ready(false),
            }
        });
        let rearm = std::pin::pin!(tokio::task::coop::unconstrained(rearm));
        // (Unconstrained, the loop always returns `Ready`.)
        let ok = std::future::Future::poll(rearm, &mut cx) == Poll::Ready(true);
        self.armed.store(ok, std::sync::atomic::Ordering::Release);
        ok
    }

    /// The reactor saw a completion (or shut down).
    fn woken(&self) {
        if !self.rearm() {
            // Woken by the reactor's shutdown.
            if let Some(host) = self.inner.upgrade() {
                host.reactor_gone();
            }
            return;
        }
        if let Some(host) = self.inner.upgrade() {
            host.reap_now();
        }
    }
}

/// True if the current tokio runtime's reactor wakes `inner`'s futures already,
/// armed from this thread (no lock, no reactor call).
#[inline]
pub(crate) fn armed<H: Host + 'static>(inner: &Arc<H>) -> bool {
    let ctx = Arc::as_ptr(inner) as *const () as usize;
    Handle::try_current().is_ok_and(|h| armed_here(ctx, h.id(), false))
}

/// Makes sure the current tokio runtime's reactor wakes `inner`'s futures. False
/// when there is no usable runtime here (the caller then starts the completion
/// thread), or when the engine has no eventfd (the thread engine wakes futures
/// from its workers).
///
/// `turn_end`: called at the end of a runtime turn, by the scheduler (the
/// flush of batched submissions): the scheduler polls here. Otherwise it is
/// asked ([`turn_ends_here`], which must not run inside tokio's deferred
/// wake-ups, where that flush runs on a `multi_thread` runtime).
pub(crate) fn arm<H: Host + 'static>(inner: &Arc<H>, turn_end: bool) -> bool {
    let Ok(handle) = Handle::try_current() else {
        return false;
    };
    let id = handle.id();
    let ctx = Arc::as_ptr(inner) as *const () as usize;
    // The common case: armed before, from this thread, and still armed.
    if armed_here(ctx, id, turn_end) {
        return true;
    }
    // A `multi_thread` runtime's workers drive its reactor wherever the future
    // is polled (the body of its `block_on`, a `spawn_blocking` thread, another
    // executor under `Runtime::enter`). A `current_thread` runtime's reactor
    // is driven only by its `block_on`: one merely entered (another executor
    // polls here) may never poll it, and the completion thread wakes such
    // futures.
    let multi = handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread;
    if !turn_end && !multi && !turn_ends_here() {
        return false;
    }
    // A runtime without an I/O driver makes tokio panic here (see the
    // module's docs): found out once per thread and runtime, never asked by a
    // thread already unwinding, and, where a panic aborts, asked only in a
    // task of the runtime (as tokio's own I/O types do).
    if no_io(id) || (cfg!(panic = "abort") && !turn_end && !in_task()) {
        return false;
    }
    match arm_slow(inner, id) {
        Some(reap) => {
            let reap = Arc::downgrade(&reap);
            let last = Last {
                ctx,
                id,
                reap,
                multi,
            };
            let _ = LAST.try_with(|l| *l.borrow_mut() = Some(last));
            true
        }
        None => false,
    }
}

/// [`arm`] through the registration list: the registration of runtime `id`,
/// armed, made if needed.
fn arm_slow<H: Host + 'static>(inner: &Arc<H>, id: Id) -> Option<Arc<Reap>> {
    let reap = {
        let mut list = inner
            .reactors()
            .list
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match list.iter().position(|(i, _)| *i == id) {
            Some(k) => Arc::clone(&list[k].1),
            None => {
                let reap = register(inner, id)?;
                // A runtime id can be reused once its runtime is gone: drop
                // registrations whose runtime shut down while we are here.
                list.retain(|(_, r)| r.rearm());
                list.push((id, Arc::clone(&reap)));
                reap
            }
        }
    };
    if reap.rearm() {
        return Some(reap);
    }
    // The runtime with this id is a new one (the old one shut down): register again.
    let mut list = inner
        .reactors()
        .list
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    list.retain(|(i, _)| *i != id);
    match register(inner, id) {
        Some(reap) if reap.rearm() => {
            list.push((id, Arc::clone(&reap)));
            Some(reap)
        }
        _ => None,
    }
}

/// A new registration of the completion eventfd with the reactor of the
/// current runtime, `id`; `None` (remembered) if it has no I/O driver. Never
/// tried on a thread that is unwinding (a destructor polls): `None`, not
/// remembered, and the completion thread wakes the future.
fn register<H: Host + 'static>(inner: &Arc<H>, id: Id) -> Option<Arc<Reap>> {
    if std::thread::panicking() {
        return None;
    }
    let efd = inner.completion_eventfd()?;
    let dup = efd.try_clone().ok()?;
    let Some(afd) = quietly(|| register_fd(dup)) else {
        remember_no_io(id);
        return None;
    };
    let afd = afd?;
    Some(Arc::new_cyclic(|me| Reap {
        inner: Arc::downgrade(inner) as Weak<dyn Host>,
        afd,
        waker: Waker::from(Arc::new(Woken(Weak::clone(me)))),
        armed: Default::default(),
    }))
}

/// `dup` registered with the current runtime's reactor, for readability.
fn register_fd(dup: OwnedFd) -> Option<AsyncFd<OwnedFd>> {
    // SAFETY: `register_with_interest` needs the fd to stay open and the same for
    // the AsyncFd's whole life: the AsyncFd owns `dup` (an `OwnedFd`, whose
    // `as_raw_fd` never changes) and nothing else closes it.
    unsafe { AsyncFd::register_with_interest(dup, tokio::io::Interest::READABLE) }.ok()
}

/// `f()`, or `None` if it panicked, the panic kept off stderr. Installs, once,
/// a panic hook that hands every panic but these to the hook it replaced.
/// Where a panic aborts, the panic is left to speak. Not for a thread already
/// unwinding: a second panic there aborts, and the hook cannot be changed.
fn quietly<T>(f: impl FnOnce() -> T) -> Option<T> {
    if cfg!(panic = "abort") {
        return Some(f());
    }
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.try_with(std::cell::Cell::get).unwrap_or(false) {
                prev(info);
            }
        }));
    });
    let _ = QUIET.try_with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    let _ = QUIET.try_with(|q| q.set(false));
    r
}

/// True when a submission made here may wait for the end of the runtime's turn
/// to enter the kernel together with others: we run inside a tokio runtime that
/// has other tasks, which may submit in the same turn. A lone task (or a
/// `block_on` future) enters at once, as a synchronous caller does, until a
/// submission that waits shows that others join it (see `future/batch.rs`).
pub(crate) fn batching_pays() -> bool {
    Handle::try_current()
        .is_ok_and(|h| h.metrics().num_alive_tasks() > 1 + super::turn_end::tasks_here(&h))
}

/// True inside a tokio task's poll (a runtime turn ends after it), without
/// asking the scheduler (see [`turn_ends_here`]).
#[inline]
pub(crate) fn in_task() -> bool {
    tokio::task::try_id().is_some()
}

/// True if the code running now is polled by a tokio runtime's scheduler (a
/// task, or a `block_on` future), whose turn ends after this poll: there
/// [`at_turn_end`] wakes its waker once the ready tasks ran. False outside one,
/// also where a runtime is only entered (`Runtime::enter`, while another
/// executor polls) or on a `spawn_blocking` thread. tokio's `yield_now` tells
/// (it defers its wake-up inside the scheduler and wakes at once outside), at
/// the cost of one deferred wake-up per turn: its waker is the same for every
/// call on a thread, and the scheduler keeps it once.
pub(crate) fn turn_ends_here() -> bool {
    /// Counts its wake-ups in a thread local: a deferred one runs later on
    /// this thread (the scheduler's), an immediate one now.
    struct Count;
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            let _ = WAKES.try_with(|n| n.set(n.get().wrapping_add(1)));
        }
    }
    thread_local! {
        /// One waker per thread: the scheduler keeps it once per turn.
        static COUNT: Waker = Waker::from(Arc::new(Count));
    }
    COUNT
        .try_with(|w| {
            let before = WAKES.get();
            let y = std::pin::pin!(tokio::task::yield_now());
            let _ = std::future::Future::poll(y, &mut Context::from_waker(w));
            WAKES.get() == before
        })
        .unwrap_or(false)
}

/// Has `w` woken at the end of the current runtime turn: once the scheduler has
/// run every task that is ready now. On a `current_thread` runtime, a task
/// woken now runs after them (its run queue is first in, first out), without
/// a poll of the driver in between (see `turn_end.rs`); elsewhere, tokio's
/// deferred wake (the one `yield_now` uses) runs once the scheduler has run
/// out of ready tasks and polled its driver. Outside a runtime's worker, `w` is woken at once.
///
/// On a `current_thread` runtime, `backstop()` also goes to tokio's deferred
/// wake, whose list lives as long as the `block_on` call: woken after the
/// turn, or dropped when the body of `block_on` returns before the turn's
/// end. Where `w` then waits for the runtime's next `block_on`, which may
/// never come, the backstop's drop does what `w` was to do.
pub(crate) fn at_turn_end(w: &Waker, backstop: impl FnOnce() -> Waker) {
    if let Ok(h) = Handle::try_current() {
        if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            super::turn_end::wake_at_turn_end(&h, w);
            defer(&backstop());
            return;
        }
    }
    defer(w);
}

/// Has `w` woken by tokio's deferred wake (see [`at_turn_end`]), or at once
/// outside a runtime's scheduler.
fn defer(w: &Waker) {
    let mut cx = Context::from_waker(w);
    let y = std::pin::pin!(tokio::task::yield_now());
    let _ = std::future::Future::poll(y, &mut cx);
}
