//! Placing threads under the server, and the handle that reads their state.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::params::{SporadicParams, CALL};
use super::server::{current, server, Command};
use super::shared::{Shared, Snapshot, SporadicStats};
use super::state::{Level, Replenishment, SporadicState};
use crate::sched::cputime::CpuClock;
use crate::sched::{JoinHandle, Policy, Priority, Tid};
use crate::sys::pilock::{PiLocked, RawPiLock};
use crate::sys::timer as st;
use crate::{Error, ErrorKind, Result};

/// A thread placed under the sporadic server (by [`serve`], [`serve_handle`] or
/// [`Builder::sporadic`](crate::sched::Builder::sporadic)).
///
/// Dropping one that [`serve`] or [`serve_handle`] returned stops serving: the thread
/// keeps the priority it has at that moment. Drop it before the thread ends: the
/// server only notices an ended thread at its next step, and the kernel may give the
/// tid to a new thread. A thread spawned with `Builder::sporadic` is served until its
/// closure returns, whether its `JoinHandle` is kept or not.
pub struct Served {
    shared: Arc<Shared>,
    /// Whether dropping the handle ends the service (not for `Builder::sporadic`,
    /// whose thread leaves the server itself when its closure ends).
    owned: bool,
}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Served")
            .field("tid", &self.shared.tid)
            .field("params", &self.shared.params)
            .field("normal_priority", &self.shared.normal_priority)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// The served thread.
    pub fn tid(&self) -> Tid {
        self.shared.tid
    }

    /// Its sporadic parameters.
    pub fn params(&self) -> SporadicParams {
        self.shared.params
    }

    /// Its normal priority (`sched_priority`).
    pub fn normal_priority(&self) -> i32 {
        self.shared.normal_priority
    }

    /// Whether the server still serves it (false once the thread ended, and in
    /// a forked child that inherited the handle: the server serving the thread
    /// stayed in the parent; there [`last_error`](Self::last_error) says so).
    pub fn is_served(&self) -> bool {
        // The flag is the parent's: no server here clears it.
        !self.shared.gone.load(Ordering::Acquire) && current().is_some()
    }

    /// The level the server has put it at: the priority it runs at. While a
    /// switch is refused (see [`last_error`](Self::last_error)), the level it
    /// still runs at, not the one the rules call for.
    pub fn level(&self) -> Level {
        self.shared.snap.applied()
    }

    /// The available budget now: the budget as of the server's last step minus what
    /// the thread consumed at the normal priority since (read from its CPU clock).
    /// `NotFound` once the thread has ended; `Unsupported` in a forked child that
    /// inherited the handle (the thread and its server stayed in the parent).
    pub fn remaining_budget(&self) -> Result<Duration> {
        if let Some(e) = super::server::inherited() {
            return Err(e);
        }
        let v = self.shared.snap.read(no_server);
        // Read even when the budget is not being spent: it tells an ended thread.
        let cpu = self.shared.clock.now().map_err(|e| {
            if e.errno() == Some(libc::EINVAL) {
                Error::new(
                    ErrorKind::NotFound,
                    "clock_gettime",
                    format!("thread {} has ended", self.shared.tid),
                )
            } else {
                e
            }
        })?;
        if !v.active {
            return Ok(v.capacity);
        }
        Ok(v.capacity.saturating_sub(cpu.saturating_sub(v.cpu_mark)))
    }

    /// The pending replenishments, earliest first (times on `CLOCK_MONOTONIC`).
    pub fn pending_replenishments(&self) -> Vec<Replenishment> {
        self.shared.snap.read(no_server).pending
    }

    /// The server's counters for this thread.
    pub fn stats(&self) -> SporadicStats {
        let s = &self.shared;
        let r = Ordering::Relaxed;
        SporadicStats {
            exhaustions: s.exhaustions.load(r),
            replenishments: s.replenishments.load(r),
            switches: s.switches.load(r),
            max_overrun: Duration::from_nanos(s.max_overrun.load(r)),
            total_overrun: Duration::from_nanos(s.total_overrun.load(r)),
        }
    }

    /// The error of the server's last failed priority switch of this thread (the
    /// server tries that switch again until it holds: 1 ms later, then at doubling
    /// intervals up to 64 ms while it keeps failing), or of
    /// the creation of its timers (then [`is_served`](Self::is_served) is false and
    /// the server has given the thread back the policy and priority it had before
    /// it was served). In a forked child that inherited the handle, `Unsupported`:
    /// the server serving the thread belongs to the parent.
    pub fn last_error(&self) -> Option<Error> {
        if let Some(e) = super::server::inherited() {
            return Some(e);
        }
        let s = &self.shared;
        match s.timer_errno.load(Ordering::Relaxed) {
            // With the hint the call's own error has (EPERM: what is missing,
            // from the privileges and limits as they are now).
            0 => match s.last_errno.load(Ordering::Relaxed) {
                0 => None,
                e => Some(crate::sched::hint::sched_error(
                    "sched_setscheduler",
                    e,
                    Some(s.tid.as_raw()),
                    Some(Policy::Fifo),
                    Some(s.normal_priority),
                )),
            },
            e => Some(timer_error(e)),
        }
    }
}

/// The server's refused `timer_create`, with the hint the call gives.
fn timer_error(errno: i32) -> Error {
    let e = Error::from_errno("timer_create", errno);
    if errno != libc::EAGAIN {
        return e;
    }
    e.with_hint(
        "the kernel refused another timer (RLIMIT_SIGPENDING or memory); serve fewer \
         threads or raise `ulimit -i`",
    )
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.owned {
            unserve(self.shared.tid);
        }
    }
}

/// Takes `tid` off the server.
fn unserve(tid: Tid) {
    // Only a started server has served tids (`serve` takes back its insert when
    // the start fails); a forked child leaves the inherited set and lock alone.
    let Some(s) = current() else { return };
    // The Remove is queued before the set's lock goes: a `serve` of the same
    // tid, which takes that lock to insert it, then queues its Add after this
    // Remove. (Queued once the lock went, the Remove could follow that Add,
    // and the server would take the new entry off.)
    let mut set = served_set();
    set.remove(&tid.as_raw());
    #[cfg(test)]
    tests::between_remove_and_send();
    s.send(Command::Remove(tid));
    drop(set);
}

/// The served tids. Behind a priority-inheriting lock: [`blocking`], on a served
/// real-time thread's path, reads it.
static SERVED: PiLocked<Option<HashSet<i32>>> = PiLocked::new(None);

struct ServedSet(lock_api::MutexGuard<'static, RawPiLock, Option<HashSet<i32>>>);

impl ServedSet {
    fn remove(&mut self, tid: &i32) {
        if let Some(s) = self.0.as_mut() {
            s.remove(tid);
        }
    }
}

/// Whether `tid` is under the server (placed there and not yet taken off).
fn is_served(tid: Tid) -> bool {
    served_set()
        .0
        .as_ref()
        .is_some_and(|s| s.contains(&tid.as_raw()))
}

/// No server runs in this process (a forked child with its parent's handle).
fn no_server() -> bool {
    super::server::current().is_none()
}

fn served_set() -> ServedSet {
    ServedSet(SERVED.lock())
}

/// In a forked child: forgets a holder of the served set (a thread of the
/// parent inside [`serve`] at the fork, which does not exist here; the child
/// would wait for it forever) and the set itself, which that thread may have
/// left half-changed. It held only tids of the parent's threads: a child that
/// inherited the parent's server never reads it, one that starts its own
/// serves none of them. Async-signal-safe: stores only, the old set is leaked,
/// not dropped. Registered before this process first takes the lock.
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing; nothing reads the
    // set before the child goes on, and the old value is overwritten without
    // being read or dropped.
    unsafe {
        SERVED.raw().reset_in_child();
        std::ptr::write(SERVED.data_ptr(), None);
    }
}

/// Places thread `tid` of this process under the sporadic server: sets it to
/// `SCHED_FIFO` at `normal_priority` with a full budget (its activation is now) and
/// lets the server enforce `params` from then on.
///
/// Errors: parameters that break POSIX's rules are `InvalidInput` with a hint
/// ([`SporadicParams::validate`]); a tid that is not a thread of this process is
/// `NotFound`; a thread already served is `Busy`; no privilege for `SCHED_FIFO` is
/// `PermissionDenied` (CAP_SYS_NICE, RLIMIT_RTPRIO); a `SCHED_DEADLINE` thread is
/// `InvalidInput` (its runtime, deadline and period would be lost to the
/// server's `SCHED_FIFO` switches, and the kernel already budgets it: give it
/// another policy first to serve it); in a forked child of a process
/// that had started the server, which stayed in the parent, `Unsupported`. The
/// server takes the thread after `serve` returns: if it cannot (its timers are
/// refused), it gives the thread back the policy and priority it had before, and
/// the handle's [`is_served`](Served::is_served) turns false with
/// [`last_error`](Served::last_error) saying why.
///
/// # References
///  - [`sched_setscheduler`](https://pubs.opengroup.org/onlinepubs/9799919799/functions/sched_setscheduler.html)
#[doc(alias = "sched_setscheduler")]
#[doc(alias = "SCHED_SPORADIC")]
pub fn serve(tid: Tid, params: SporadicParams, normal_priority: i32) -> Result<Served> {
    params.validate(normal_priority)?;
    // Before the served set's lock is first taken: a child forked while a
    // thread held it forgets the holder.
    crate::sys::fork::on_child(after_fork_in_child);
    if let Some(e) = super::server::inherited() {
        // Before the served set: a child with the parent's server never uses it.
        return Err(e);
    }
    let clock = CpuClock::of_thread(tid)?;
    // The policy and priority given back if the server cannot take the thread.
    let prior = crate::sched::thread_scheduling(tid)?;
    if prior.policy() == Policy::Deadline {
        return Err(refuse_deadline(tid));
    }
    {
        let mut set = served_set();
        let set = set.0.get_or_insert_with(HashSet::new);
        if !set.insert(tid.as_raw()) {
            return Err(Error::new(
                ErrorKind::Busy,
                CALL,
                format!("thread {tid} is already under the sporadic server"),
            )
            .with_hint("drop its Served handle first to change its parameters"));
        }
    }
    let undo = |e: Error| {
        served_set().remove(&tid.as_raw());
        e
    };
    let srv = server().map_err(undo)?;
    if srv.tid() == tid {
        return Err(undo(Error::invalid(
            CALL,
            format!("thread {tid} is the sporadic server itself"),
        )
        .with_hint("serve the threads that do the work: the server enforces their budgets from its own top priority, which it would lose")));
    }
    let normal = Priority::fifo(normal_priority).map_err(undo)?;
    crate::sched::set_thread_scheduling(tid, normal).map_err(undo)?;
    // Switched: a failure from here on gives the thread back its scheduling
    // (unserved, nothing would enforce its budget).
    let undo_switch = |e: Error| {
        let _ = crate::sched::set_thread_scheduling(tid, prior);
        undo(e)
    };
    let state = SporadicState::new(
        params,
        normal_priority,
        st::monotonic_now(),
        clock.now().map_err(undo_switch)?,
    )
    .map_err(undo_switch)?;
    let shared = Arc::new(Shared {
        tid,
        clock,
        params,
        normal_priority,
        prior,
        snap: Snapshot::new(),
        gone: AtomicBool::new(false),
        last_errno: AtomicI32::new(0),
        timer_errno: AtomicI32::new(0),
        exhaustions: AtomicU64::new(0),
        replenishments: AtomicU64::new(0),
        switches: AtomicU64::new(0),
        max_overrun: AtomicU64::new(0),
        total_overrun: AtomicU64::new(0),
    });
    shared.snap.publish(&state);
    srv.send(Command::Add(Arc::clone(&shared), state));
    Ok(Served {
        shared,
        owned: true,
    })
}

/// The refusal to serve a `SCHED_DEADLINE` thread: the server's switches are
/// `sched_setscheduler` calls, which would drop its runtime, deadline and
/// period for good (nothing gives them back when it stops being served), and
/// the kernel already enforces a budget for it.
fn refuse_deadline(tid: Tid) -> Error {
    Error::invalid(
        CALL,
        format!("thread {tid} runs SCHED_DEADLINE; the sporadic server serves SCHED_FIFO, RR and fair threads"),
    )
    .with_hint(
        "SCHED_DEADLINE already gives the thread a kernel-enforced budget (runtime every period); \
         to serve it under the sporadic server instead, give it a fixed-priority or fair policy \
         first (set_thread_scheduling), and deadline::set it back after dropping its Served",
    )
}

/// [`serve`] for a thread spawned with `Builder::sporadic`: it leaves the server when
/// its closure ends, not when the handle is dropped.
pub(crate) fn serve_spawned(
    tid: Tid,
    params: SporadicParams,
    normal_priority: i32,
) -> Result<Served> {
    let mut s = serve(tid, params, normal_priority)?;
    s.owned = false;
    Ok(s)
}

/// [`serve`] for a thread spawned by [`Builder`](crate::sched::Builder).
pub fn serve_handle<T>(
    handle: &JoinHandle<T>,
    params: SporadicParams,
    normal_priority: i32,
) -> Result<Served> {
    if handle.is_finished() {
        return Err(Error::new(
            ErrorKind::NotFound,
            CALL,
            format!("thread {} has ended", handle.tid()),
        ));
    }
    serve(handle.tid(), params, normal_priority)
}

/// Runs `f`, a call that may block, telling the server that the calling thread
/// blocks before it and woke after it, so that POSIX's block rules apply (what it
/// consumed since activation is charged and scheduled for replenishment; waking is a
/// new activation). On a thread that is not served it just runs `f`.
///
/// Calls nest: inside `f`, another `blocking` (a helper that declares its own
/// wait) just runs its call, and the thread counts as blocked until the
/// outermost call returns.
///
/// The server cannot see a block by itself; see the [module docs](super).
pub fn blocking<R>(f: impl FnOnce() -> R) -> R {
    if IN_BLOCKING.get() {
        // Inside an outer call, which told the server of the block and tells it
        // of the wake-up once the whole wait is over.
        return f();
    }
    let Some(srv) = current() else {
        return f();
    };
    let tid = crate::sched::gettid();
    if !is_served(tid) {
        // Every message wakes the top-priority server: none for a thread it does
        // not serve. (A thread served while inside `f` counts as running, as
        // `serve` takes it; one taken off inside `f` sends a `Wake` the server
        // ignores.)
        return f();
    }
    let me = CpuClock::current_thread();
    let stamp = || (st::monotonic_now(), me.now().unwrap_or_default());
    let (now, cpu) = stamp();
    srv.send(Command::Block(tid, now, cpu));
    // The wake-up is sent on every way out of `f`, an unwind included: a thread the
    // server kept as blocked would never have its budget enforced again.
    struct Woke<S: Fn() -> (Duration, Duration)> {
        srv: &'static super::server::Server,
        tid: Tid,
        stamp: S,
    }
    impl<S: Fn() -> (Duration, Duration)> Drop for Woke<S> {
        fn drop(&mut self) {
            IN_BLOCKING.set(false);
            let (now, cpu) = (self.stamp)();
            self.srv.send(Command::Wake(self.tid, now, cpu));
        }
    }
    IN_BLOCKING.set(true);
    let _woke = Woke { srv, tid, stamp };
    f()
}

thread_local! {
    /// The calling thread is inside a [`blocking`] call that told the server it
    /// blocks: a nested call must not tell it the thread woke up.
    static IN_BLOCKING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Stops serving the calling thread if it is served (used when a thread spawned with
/// [`Builder::sporadic`](crate::sched::Builder::sporadic) returns, so the server never acts
/// on a tid the kernel may reuse).
pub(crate) fn leave_current() {
    unserve(crate::sched::gettid());
}

#[cfg(test)]
#[path = "served_tests.rs"]
mod tests;
