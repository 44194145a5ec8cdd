//! Engine choice and the shared context: the request table under one mutex, the
//! backend, the wait loop (where the waiting thread reaps completions itself) and
//! the hand-over of wakers and notifications after the lock is released.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use super::backend::{classify_setup_error, forced_by_env, Backend, BackendInfo};
pub(crate) use super::inherited::inherited_context;
use super::inherited::inherited_context_in;
use super::notify::{send_signals, Fire, Notifier, Notify};
use super::table::{Core, State};
use super::threads::{Host, Pool};
use super::uring::Ring;
use crate::sys::rtlock::{RtCond, RtGuard, RtLocked};
use crate::{Error, Result};

pub(crate) enum Engine {
    Uring(Box<Ring>),
    Threads(Pool),
}

/// The held core lock.
pub(crate) type CoreGuard<'a> = RtGuard<'a, Core>;

thread_local! {
    /// The wakers' list this thread last emptied (see `Inner::release_slow`).
    static SPARE_WAKERS: std::cell::Cell<Vec<std::task::Waker>> =
        const { std::cell::Cell::new(Vec::new()) };
}

/// What [`Inner::kick`] did.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Kicked {
    /// The io_uring submission queue is to be entered once the lock is released.
    pub enter: bool,
    /// The pool's workers are to be woken for this many ready requests once
    /// the lock is released ([`Inner::wake_workers`]).
    pub wake: usize,
    /// The sleeping worker switched to a real-time request's class
    /// (`Pool::boost`): the one to wake for it.
    pub boosted: Option<u32>,
}

impl Kicked {
    /// True if [`Inner::wake_workers`] has a worker to wake: sleepers for
    /// ready requests, or the switched one (also when the workers awake take
    /// every ready request: the switched one sleeps at its new class, off the
    /// idle list, until woken).
    #[inline]
    pub(crate) fn wakes(&self) -> bool {
        self.wake > 0 || self.boosted.is_some()
    }
}

pub(crate) struct Inner {
    /// The request table and queues, taken by every submit, reap and wait, the
    /// pool's workers and the completion thread. Priority-inheriting for a
    /// real-time thread that finds it held (it boosts the holder); the others
    /// sleep apart and may take it as soon as it is free (no convoy).
    core: RtLocked<Core>,
    pub(super) cond: RtCond,
    pub engine: Engine,
    pub info: BackendInfo,
    /// Aio and Request handles alive; at zero the context shuts down.
    users: AtomicUsize,
    notifier: OnceLock<Notifier>,
    /// The stack size of the notifier's threads (`Config::notify_stack`).
    notify_stack: Option<usize>,
    /// Lets go of held requests once their calls returned (see `hold.rs`).
    pub(crate) holder: OnceLock<super::hold::Holder>,
    /// The ring's completion eventfd, once registered.
    efd: OnceLock<OwnedFd>,
    /// Set once the completion thread runs.
    bg: OnceLock<()>,
    /// Per tokio runtime, the reactor registration of the completion eventfd.
    #[cfg(feature = "tokio")]
    pub(crate) reactors: super::tokio_reap::Reactors,
    /// One-time set-up (notifier, eventfd, completion thread).
    pub(crate) init: RtLocked<()>,
    /// `SIGEV_SIGNAL` notifications that could not be queued.
    pub notify_failed: AtomicU64,
    /// Wakes waiters counted in `Core::waiters` that sleep elsewhere than on
    /// `cond` (the C engine's), after the completions' signals were sent.
    wake_hook: OnceLock<fn()>,
    /// `sys::fork::generation()` when made (see [`Inner::inherited`]).
    born: u32,
}

/// Parameters of a new context.
pub(crate) struct Config {
    pub backend: Option<Backend>,
    pub entries: u32,
    /// io_uring: the most rings the context spreads its fds over.
    pub rings: usize,
    pub workers: usize,
    /// The notification threads' stack size (`None`: Rust's default).
    pub notify_stack: Option<usize>,
}

impl Inner {
    pub(crate) fn new(cfg: &Config) -> Result<Arc<Inner>> {
        let forced = match cfg.backend {
            Some(b) => Some((b, "chosen by the program")),
            None => forced_by_env(std::env::var_os("POSIXRT_AIO_BACKEND").as_deref())?,
        };
        let (engine, info) = match forced {
            Some((Backend::Threads, why)) => (
                Engine::Threads(Pool::new(cfg.workers)?),
                BackendInfo {
                    backend: Backend::Threads,
                    reason: format!("thread pool of {} workers, {why}", cfg.workers),
                    refused: None,
                },
            ),
            Some((Backend::Uring, why)) => match Ring::new(cfg.entries, cfg.rings) {
                Ok(r) => (
                    Engine::Uring(Box::new(r)),
                    BackendInfo {
                        backend: Backend::Uring,
                        reason: format!("io_uring, {why}"),
                        refused: None,
                    },
                ),
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    let (_, hint) = classify_setup_error(errno);
                    let hint = hint.replace(": using the thread pool", "");
                    return Err(Error::from_errno("io_uring_setup", errno).with_hint(format!(
                        "{hint}; io_uring was required ({why}), so there is no fallback (set POSIXRT_AIO_BACKEND=threads to use the thread pool)"
                    )));
                }
            },
            None => match Ring::new(cfg.entries, cfg.rings) {
                Ok(r) => (
                    Engine::Uring(Box::new(r)),
                    BackendInfo {
                        backend: Backend::Uring,
                        reason: "io_uring, the default".into(),
                        refused: None,
                    },
                ),
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(libc::EIO);
                    let (fallback, hint) = classify_setup_error(errno);
                    let err = Error::from_errno("io_uring_setup", errno).with_hint(hint.clone());
                    if !fallback {
                        return Err(err);
                    }
                    (
                        Engine::Threads(Pool::new(cfg.workers)?),
                        BackendInfo {
                            backend: Backend::Threads,
                            reason: hint,
                            refused: Some(err),
                        },
                    )
                }
            },
        };
        let workers = match &engine {
            Engine::Threads(p) => p.workers(),
            Engine::Uring(_) => 0,
        };
        crate::sys::fork::install();
        let inner = Arc::new(Inner {
            born: crate::sys::fork::generation(),
            core: RtLocked::new(Core::new()),
            cond: RtCond::new(),
            engine,
            info,
            users: AtomicUsize::new(0),
            notifier: OnceLock::new(),
            notify_stack: cfg.notify_stack,
            holder: OnceLock::new(),
            efd: OnceLock::new(),
            bg: OnceLock::new(),
            #[cfg(feature = "tokio")]
            reactors: Default::default(),
            init: RtLocked::new(()),
            notify_failed: AtomicU64::new(0),
            wake_hook: OnceLock::new(),
        });
        if workers > 0 {
            if let Err(e) = Pool::spawn(&inner, workers) {
                inner.lock().shutdown = true;
                if let Engine::Threads(p) = &inner.engine {
                    p.work.notify_all();
                }
                return Err(e);
            }
        }
        Ok(inner)
    }

    /// True in a forked child for a context its parent made: its rings and
    /// request table are the parent's (the rings' memory is shared with it,
    /// a thread may have held the lock at the fork), so the child neither
    /// submits, reaps, waits, nor cancels through it.
    #[inline]
    pub(crate) fn inherited(&self) -> bool {
        crate::sys::fork::generation() != self.born
    }

    #[inline]
    pub(crate) fn lock(&self) -> CoreGuard<'_> {
        self.core.lock()
    }

    /// The core lock if it is free now (never waits, never reads the clock).
    pub(crate) fn try_lock(&self) -> Option<CoreGuard<'_>> {
        self.core.try_lock()
    }

    /// Runs `f` with the core lock held (a test hook: an inversion test needs a
    /// low-priority thread that holds the lock when it is preempted).
    pub(crate) fn with_core_locked<R>(&self, f: impl FnOnce() -> R) -> R {
        let core = self.lock();
        let r = f();
        drop(core);
        r
    }

    /// Sets [`wake_hook`](Inner::wake_hook) (once).
    pub(crate) fn set_wake_hook(&self, f: fn()) {
        let _ = self.wake_hook.set(f);
    }

    pub(crate) fn add_user(&self) {
        self.users.fetch_add(1, Ordering::Relaxed);
    }

    /// Drops one user; the last one shuts the context down.
    pub(crate) fn drop_user(&self) {
        if self.users.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.shutdown();
        }
    }

    /// Releases the lock, then wakes waiters and fires notifications collected
    /// while it was held.
    #[inline]
    pub(crate) fn release(&self, mut core: CoreGuard<'_>) {
        // Nothing to wake or fire (the common case): just unlock.
        if nothing_to_wake(&mut core) {
            drop(core);
            return;
        }
        self.release_slow(core)
    }

    /// [`release`](Inner::release) with something to wake or fire.
    #[inline(never)]
    fn release_slow(&self, mut core: CoreGuard<'_>) {
        let wake_cond = self.nudge_reaper(&mut core);
        // Interruptible waiters are woken after the lock is released (so they do
        // not wake into a held lock), through shared handles of their eventfds
        // (open while we write, whatever the waiter does meanwhile).
        let fds: Vec<Arc<OwnedFd>> = if core.completed && !core.wait_fds.is_empty() {
            core.wait_fds.clone()
        } else {
            Vec::new()
        };
        core.completed = false;
        let wake_fds = |fds: &[Arc<OwnedFd>]| {
            for fd in fds {
                let _ = rustix::io::write(&**fd, &1u64.to_ne_bytes());
            }
        };
        if core.wakers.is_empty() && core.fires.is_empty() {
            drop(core);
            if wake_cond {
                self.wake_waiters();
            }
            wake_fds(&fds);
            return;
        }
        // (The list goes whole; an emptied one, kept from this thread's last
        // release, takes its place with its room: no allocation per batch.)
        let spare = SPARE_WAKERS.try_with(|s| s.take()).unwrap_or_default();
        let mut wakers = std::mem::replace(&mut core.wakers, spare);
        // Signals go before the lock, so before a waiter (which looks under
        // it) can see their requests done: glibc's order (see `send_signals`).
        let blocked = send_signals(&mut core.fires, &self.notify_failed);
        // The callbacks left go out in a list of their own: the core's keeps
        // its room, so that a reap in a signal handler pushes without
        // allocating (see `capi::release`).
        let fires = if core.fires.is_empty() {
            Vec::new()
        } else {
            take_callbacks(&mut core.fires)
        };
        drop(core);
        if wake_cond {
            self.wake_waiters();
        }
        wake_fds(&fds);
        for w in wakers.drain(..) {
            w.wake();
        }
        let _ = SPARE_WAKERS.try_with(|s| s.set(wakers));
        drop(blocked);
        for f in fires {
            if let Fire::Thread(cb, v) = f {
                match self.notifier.get() {
                    Some(n) => n.post(cb, v),
                    None => cb(v),
                }
            }
        }
    }

    /// The start of a release with something to wake or fire (also
    /// `capi::release`'s): wakes the reaper asleep in the kernel if a
    /// request finished without a completion, and returns whether the
    /// threads counted in `Core::waiters` are to be woken. Inlined, so that
    /// the futures' release costs what it did when it was written out there.
    #[inline(always)]
    pub(crate) fn nudge_reaper(&self, core: &mut Core) -> bool {
        if core.nudge {
            core.nudge = false;
            if core.reaper {
                if let Engine::Uring(r) = &self.engine {
                    r.nudge();
                }
            }
        }
        core.completed && core.waiters > 0
    }

    /// Wakes the completion thread (io_uring, once started): it reaps, and
    /// its release runs the callbacks and wakers a signal handler's release
    /// left in the core (see `capi::release`).
    pub(crate) fn wake_completion_thread(&self) {
        if let Some(efd) = self.efd.get() {
            let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
        }
    }

    /// Wakes the threads counted in `Core::waiters`.
    pub(crate) fn wake_waiters(&self) {
        self.cond.notify_all();
        if let Some(f) = self.wake_hook.get() {
            f();
        }
    }

    /// True if the engine takes `n` more requests at once and none is waiting, so
    /// priority order cannot matter.
    #[inline]
    pub(crate) fn has_room(&self, core: &Core, n: usize) -> bool {
        match &self.engine {
            Engine::Uring(r) => {
                core.ready_len() == 0
                    && (core.inflight as usize).saturating_add(n) <= r.capacity as usize
            }
            Engine::Threads(_) => false,
        }
    }

    /// Hands ready requests to the engine. Call with the lock held.
    ///
    /// io_uring: pushes them to the submission queue; `enter` is true if the
    /// queue must be entered once the lock is released (see
    /// [`Inner::unlock_and_enter`]). Thread engine: `wake` is how many ready
    /// requests the pool's sleeping workers are to be woken for, by
    /// [`Inner::wake_workers`] once the lock is released: a worker woken while
    /// the submitter holds the lock may run at once on the submitter's CPU
    /// and find the lock held by a thread that is not running.
    #[inline]
    pub(crate) fn kick(&self, core: &mut Core) -> Kicked {
        match &self.engine {
            Engine::Uring(r) => Kicked {
                enter: r.push_ready(core) > 0,
                wake: 0,
                boosted: None,
            },
            Engine::Threads(p) => {
                // A real-time request first in line: a sleeping worker takes its
                // class now, so that it runs as soon as it is woken.
                let boosted = p.boost_first(core);
                Kicked {
                    enter: false,
                    wake: p.to_wake(core.ready_len()),
                    boosted,
                }
            }
        }
    }

    /// Wakes the pool's sleeping workers as [`kick`](Inner::kick) said: call
    /// after releasing the lock.
    #[inline(never)]
    pub(crate) fn wake_workers(&self, k: Kicked) {
        if let Engine::Threads(p) = &self.engine {
            p.wake_for(k.wake, k.boosted);
        }
    }

    /// Releases the lock, then enters the rings this thread pushed into if
    /// `enter` (so inline I/O does not run under the lock).
    #[inline]
    pub(crate) fn unlock_and_enter(&self, core: CoreGuard<'_>, enter: bool) {
        self.unlock_and_enter_rings(core, enter, false);
    }

    /// As [`unlock_and_enter`](Inner::unlock_and_enter), entering every ring
    /// that holds entries if `every` (entries another thread pushed: see
    /// `Ring::submit_mine`).
    #[inline]
    pub(crate) fn unlock_and_enter_rings(&self, core: CoreGuard<'_>, enter: bool, every: bool) {
        self.release(core);
        if enter {
            if let Engine::Uring(r) = &self.engine {
                // EBUSY: the completion queue overflowed and the kernel took no
                // entry; make room and try again, so the entries reach the
                // kernel before the submitting call returns.
                for _ in 0..8 {
                    let res = if every { r.submit() } else { r.submit_mine() };
                    if res.is_ok() {
                        break;
                    }
                    let mut core = self.lock();
                    self.poll_completions(&mut core);
                    let pending = r.sq_pending();
                    self.release(core);
                    if !pending {
                        break;
                    }
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Reaps completions without blocking, if no other thread is the reaper.
    #[inline]
    pub(crate) fn poll_completions(&self, core: &mut Core) {
        if self.inherited() {
            return;
        }
        if let Engine::Uring(r) = &self.engine {
            // The end of a quiet eventfd, before the reap (also under a
            // blocking reaper, which drains what was posted).
            let quiet = r.unquiet(core);
            if !core.reaper {
                r.reap(core);
                // Also when this reap found nothing: another path may have
                // reaped the completion that released these (an fsync behind a
                // write on its fd) without issuing them.
                if core.ready_len() > 0 {
                    let _ = r.issue(core);
                }
            }
            if quiet && core.inflight > 0 {
                self.signal_after_quiet(core);
            }
        }
    }

    /// A quiet eventfd ended with requests in the kernel (see `Ring::quiet`):
    /// one of them may have completed just then, its completion posted
    /// without a signal (the kernel read the flag before it was cleared) and
    /// after the reap looked. Signal for it, so that the eventfd's watchers
    /// reap; and leave the eventfd as it is for the next entries, which may go
    /// to the kernel's workers too.
    #[cold]
    pub(crate) fn signal_after_quiet(&self, core: &mut Core) {
        core.quiet_skip = super::uring::QUIET_SKIP;
        if let Some(efd) = self.efd.get() {
            let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
        }
    }

    /// Makes sure completions are noticed with nobody waiting: the notification
    /// thread for callbacks, and for io_uring an eventfd-driven completion thread
    /// (started only when a request asks for a notification or a future waits).
    /// Refused for `call` in a forked child through its parent's context (see
    /// [`Inner::inherited`]), before anything is started or registered.
    #[inline]
    pub(crate) fn prepare_notify(self: &Arc<Inner>, n: &Notify, call: &'static str) -> Result<()> {
        if n.is_none() {
            return Ok(());
        }
        self.prepare_notify_slow(n, call)
    }

    #[inline(never)]
    fn prepare_notify_slow(self: &Arc<Inner>, n: &Notify, call: &'static str) -> Result<()> {
        if self.inherited() {
            // The rings are the parent's (the kernel's instance is shared): a
            // completion eventfd registered here would be the parent's only
            // one, and its own registration would then fail (EBUSY).
            return Err(inherited_context_in(call));
        }
        if let Notify::Signal { signo, .. } | Notify::ThreadSignal { signo, .. } = *n {
            crate::sys::signal::pass_in_waits(signo);
        }
        if matches!(n, Notify::Thread { .. }) && self.notifier.get().is_none() {
            let _g = self.init.lock();
            if self.notifier.get().is_none() {
                let _ = self
                    .notifier
                    .set(Notifier::start(reap_hook(self), self.notify_stack)?);
            }
        }
        self.ensure_background()
    }

    /// The ring's completion eventfd, registered on first use (io_uring only): the
    /// completion thread reads it, and under the `tokio` feature the runtime's
    /// reactor watches it, so a future is woken without a helper thread.
    pub(crate) fn completion_eventfd(&self) -> Result<Option<&OwnedFd>> {
        let Engine::Uring(ring) = &self.engine else {
            return Ok(None);
        };
        if let Some(efd) = self.efd.get() {
            return Ok(Some(efd));
        }
        if self.inherited() {
            // (Nor is the lock taken: a thread of the parent may have held it.)
            return Err(inherited_context_in("io_uring_register"));
        }
        let _g = self.init.lock();
        if let Some(efd) = self.efd.get() {
            return Ok(Some(efd));
        }
        let efd = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)
            .map_err(|e| Error::from_errno("eventfd", e.raw_os_error()))?;
        ring.register_eventfd(&efd).map_err(|e| {
            Error::from_errno("io_uring_register", e.raw_os_error().unwrap_or(libc::EIO))
                .with_message("registering the completion eventfd")
        })?;
        Ok(Some(self.efd.get_or_init(|| efd)))
    }

    /// Starts the completion thread (once) for C requests queued in the
    /// library behind others (an ordered write, a full ring): with no further
    /// call from the program it issues them as the others complete. Woken
    /// once when it starts, for what completed before its eventfd was there.
    #[cold]
    pub(crate) fn ensure_reaper(self: &Arc<Inner>) {
        if self.bg.get().is_none() && self.ensure_background().is_ok() {
            if let Some(efd) = self.efd.get() {
                let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
            }
        }
    }

    /// Starts the completion thread of an io_uring context (once): it reads the
    /// completion eventfd and reaps when no waiter is reaping.
    pub(crate) fn ensure_background(self: &Arc<Inner>) -> Result<()> {
        if self.bg.get().is_some() {
            return Ok(());
        }
        if self.inherited() {
            // A completion thread here would read the parent's eventfd (the
            // file is shared), and take the wake-ups of the parent's thread.
            return Err(inherited_context_in("pthread_create"));
        }
        let Some(efd) = self.completion_eventfd()? else {
            return Ok(());
        };
        let _g = self.init.lock();
        if self.bg.get().is_some() {
            return Ok(());
        }
        let inner = Arc::clone(self);
        let own = efd
            .try_clone()
            .map_err(|e| Error::from_errno("dup", e.raw_os_error().unwrap_or(libc::EMFILE)))?;
        // Every signal blocked, as in the pool's threads.
        crate::sys::signal::spawn_all_blocked("posixrt-aio-complete".into(), move || {
            background(inner, own)
        })
        .map_err(|e| {
            super::notify::thread_start_error(
                e.raw_os_error().unwrap_or(libc::EAGAIN),
                "starting the AIO completion thread",
                None,
            )
        })?;
        let _ = self.bg.set(());
        Ok(())
    }

    /// What a future's poll does so that it is woken: under tokio, the runtime's
    /// reactor watches the completion eventfd (no thread); elsewhere, the
    /// completion thread.
    pub(crate) fn arm_wakeup(self: &Arc<Inner>) -> Result<()> {
        self.arm_wakeup_at(false)
    }

    /// [`arm_wakeup`](Inner::arm_wakeup), from the end of a tokio runtime's
    /// turn when `turn_end` (a flush run by the scheduler: no need to ask
    /// whether the scheduler polls here, and no asking from inside its
    /// deferred wake-ups).
    pub(crate) fn arm_wakeup_at(self: &Arc<Inner>, turn_end: bool) -> Result<()> {
        #[cfg(feature = "tokio")]
        if super::tokio_reap::arm(self, turn_end) {
            return Ok(());
        }
        #[cfg(not(feature = "tokio"))]
        let _ = turn_end;
        self.ensure_background()
    }

    /// Stops the context once no handle is left: cancels what is still running,
    /// waits a bounded time for it, and leaves buffers the kernel may still hold
    /// leaked rather than freed.
    fn shutdown(&self) {
        if self.inherited() {
            // (The parent's requests are the parent's to cancel.)
            return;
        }
        let mut core = self.lock();
        core.shutdown = true;
        for (idx, _) in core.unfinished() {
            core.cancel_unissued(idx);
        }
        let issued: Vec<(u32, u32, bool)> = core
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.state == State::Issued)
            .map(|(i, s)| (i as u32, s.worker, s.interruptible))
            .collect();
        if let Engine::Threads(p) = &self.engine {
            for &(idx, w, intr) in &issued {
                if intr {
                    core.slots[idx as usize].cancel_req = true;
                    p.interrupt(w);
                }
            }
            p.work.notify_all();
            // The poller looks at the shutdown (and stops if nothing is in
            // flight), also with nothing parked.
            p.interrupt(0);
        }
        self.release(core);
        if let Engine::Uring(r) = &self.engine {
            if !issued.is_empty() {
                // Entries still in a submission queue (a forgotten future's,
                // left for a flush that will not come) go into the kernel
                // first: a cancel finds only what the kernel knows.
                let _ = r.submit();
                r.cancel_everything(Duration::from_millis(500));
            }
        }
        let deadline = Instant::now().checked_add(Duration::from_secs(2));
        let _ = self.wait_until(deadline, None, |c| c.inflight == 0);
        if let Some(efd) = self.efd.get() {
            let _ = rustix::io::write(efd, &1u64.to_ne_bytes());
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let core = self.core.get_mut();
        for s in core.slots.iter_mut() {
            if s.state == State::Issued {
                // The kernel or a worker may still write here: leak, never free.
                if let Some(b) = s.orphan.take() {
                    std::mem::forget(b);
                }
            }
        }
    }
}

/// True if a release has nothing to wake or fire (the common case; also
/// `capi::release`'s test): then it only unlocks, after clearing
/// `Core::completed` here.
#[inline(always)]
pub(crate) fn nothing_to_wake(core: &mut Core) -> bool {
    let quiet = !core.nudge
        && core.wakers.is_empty()
        && core.fires.is_empty()
        && !(core.completed && (core.waiters > 0 || !core.wait_fds.is_empty()));
    if quiet {
        core.completed = false;
    }
    quiet
}

/// The callbacks among a release's notifications, moved into a list of their
/// own. Not `mem::take`: the core's list keeps its room.
#[cold]
#[inline(never)]
fn take_callbacks(fires: &mut Vec<Fire>) -> Vec<Fire> {
    let mut out = Vec::with_capacity(fires.len());
    out.append(fires);
    out
}

/// What a notification thread runs after each callback: reap completions
/// (io_uring) and fire their notifications. Holds the context weakly.
fn reap_hook(inner: &Arc<Inner>) -> super::notify::Reap {
    let w = Arc::downgrade(inner);
    Box::new(move || {
        if let Some(i) = w.upgrade() {
            if matches!(i.engine, Engine::Uring(_)) {
                let mut core = i.lock();
                i.poll_completions(&mut core);
                i.release(core);
            }
        }
    })
}

impl Host for Inner {
    #[inline]
    fn table(&self) -> CoreGuard<'_> {
        self.lock()
    }
    #[inline]
    fn release(&self, t: CoreGuard<'_>) {
        Inner::release(self, t)
    }
    #[inline]
    fn pool(&self) -> Option<&Pool> {
        match &self.engine {
            Engine::Threads(p) => Some(p),
            Engine::Uring(_) => None,
        }
    }
}

/// The completion thread of an io_uring context that has notifications or futures:
/// woken by the ring's eventfd, reaps when no waiter is reaping.
fn background(inner: Arc<Inner>, efd: OwnedFd) {
    let mut buf = [0u8; 8];
    loop {
        match rustix::io::read(&efd, &mut buf) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let mut core = inner.lock();
        if core.shutdown && core.inflight == 0 {
            drop(core);
            return;
        }
        inner.poll_completions(&mut core);
        inner.release(core);
        let c = inner.lock();
        let stop = c.shutdown && c.inflight == 0;
        drop(c);
        if stop {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Kicked;

    /// A kick that switched a sleeping worker wakes it even when the workers
    /// awake take every ready request (no sleeper to wake for them): the
    /// switched one is off the idle list, at the request's class, and would
    /// otherwise sleep on.
    #[test]
    fn a_switched_worker_is_woken_even_with_none_to_wake_for() {
        let none = Kicked::default();
        assert!(!none.wakes());
        let ready = Kicked {
            wake: 2,
            ..Kicked::default()
        };
        assert!(ready.wakes());
        let switched = Kicked {
            wake: 0,
            boosted: Some(3),
            ..Kicked::default()
        };
        assert!(switched.wakes());
    }
}
