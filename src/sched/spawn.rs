//! Spawning threads with their scheduling attributes applied at creation: [`Builder`].

use std::any::Any;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::cputime::CpuClock;
use super::deadline::Deadline;
use super::hint::sched_error;
use super::thread as th;
use super::tid::{gettid, Tid};
use super::{CpuSet, Policy, Priority};
use crate::{Error, Result};

/// Builds a thread whose policy, priority, affinity, stack size and name are set **when
/// it is created**.
///
/// [`Builder`] fills a `pthread_attr_t` and calls `pthread_create`, as listing 6.7 of
/// the seed does:
///
/// - policy and priority: `pthread_attr_setinheritsched(PTHREAD_EXPLICIT_SCHED)`,
///   `pthread_attr_setschedpolicy`, `pthread_attr_setschedparam` (without a policy the
///   new thread *inherits* its creator's, the POSIX default);
/// - affinity: `pthread_attr_setaffinity_np`;
/// - stack size: `pthread_attr_setstacksize`.
///
/// The new thread therefore starts life with these attributes; it never changes them
/// itself. Two things a `pthread_attr_t` cannot carry are applied by the **creator**
/// on the new thread, after `pthread_create` and *before the closure runs* (the new
/// thread waits at a gate until the creator opens it):
///
/// - the name (`pthread_setname_np(new_pthread_t, name)`, visible in
///   `/proc/self/task/TID/comm`);
/// - `SCHED_BATCH` / `SCHED_IDLE`, which glibc's attribute object refuses: the
///   thread is created `SCHED_OTHER` (explicitly, not inherited) and the creator calls
///   `sched_setscheduler(tid, ...)`;
/// - `SCHED_DEADLINE` ([`Builder::deadline`]): the creator calls
///   `sched_setattr(tid, ...)`.
///
/// At that gate the new thread also publishes its kernel tid, so
/// [`JoinHandle::tid`] is known when [`Builder::spawn`] returns. If the creator fails
/// to apply something, the closure never runs and `spawn` returns the error.
///
/// ```
/// use posixrt::sched::{self, Builder, CpuSet, Priority};
///
/// let cpu = sched::CpuSet::allowed()?.iter().next().unwrap();
/// let h = Builder::new()
///     .name("worker")
///     .affinity(CpuSet::single(cpu)?)
///     .stack_size(256 * 1024)
///     .scheduling(Priority::other())
///     .spawn(|| (sched::current_name().unwrap(), sched::current_cpu()))?;
/// println!("spawned tid {}", h.tid());
/// let (name, ran_on) = h.join().unwrap();
/// assert_eq!((name.as_str(), ran_on), ("worker", cpu));
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// A real-time thread (needs CAP_SYS_NICE or RLIMIT_RTPRIO; otherwise `spawn` returns
/// `PermissionDenied` with the hint):
///
/// ```no_run
/// use posixrt::sched::{Builder, Priority};
/// let h = Builder::new().name("rt-loop").scheduling(Priority::fifo(80)?).spawn(|| 42)?;
/// assert_eq!(h.join().unwrap(), 42);
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// # References
///  - [`pthread_create(3)`](https://man7.org/linux/man-pages/man3/pthread_create.3.html)
///  - [`pthread_attr_setinheritsched(3)`](https://man7.org/linux/man-pages/man3/pthread_attr_setinheritsched.3.html)
///  - [`pthread_attr_setschedpolicy(3)`](https://man7.org/linux/man-pages/man3/pthread_attr_setschedpolicy.3.html)
///  - [`pthread_attr_setschedparam(3)`](https://man7.org/linux/man-pages/man3/pthread_attr_setschedparam.3.html)
///  - [`pthread_attr_setaffinity_np(3)`](https://man7.org/linux/man-pages/man3/pthread_attr_setaffinity_np.3.html)
///  - [`pthread_attr_setstacksize(3)`](https://man7.org/linux/man-pages/man3/pthread_attr_setstacksize.3.html)
///  - [`pthread_setname_np(3)`](https://man7.org/linux/man-pages/man3/pthread_setname_np.3.html)
#[derive(Debug, Clone, Default)]
#[must_use = "a Builder does nothing until .spawn() is called"]
pub struct Builder {
    name: Option<String>,
    scheduling: Option<Priority>,
    affinity: Option<CpuSet>,
    stack_size: Option<usize>,
    deadline: Option<Deadline>,
    sporadic: Option<(super::sporadic::SporadicParams, i32)>,
}

impl Builder {
    /// A builder with nothing set: the thread inherits its creator's scheduling and
    /// affinity and gets the default stack size (`RLIMIT_STACK`, usually 8 MiB).
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The thread name; at most 15 bytes and no NUL (checked at `spawn`, never
    /// truncated).
    #[doc(alias = "pthread_setname_np")]
    pub fn name(mut self, name: impl Into<String>) -> Builder {
        self.name = Some(name.into());
        self
    }

    /// Policy and priority, applied with `PTHREAD_EXPLICIT_SCHED`.
    /// `Policy::Deadline` is refused at `spawn` (use [`Builder::deadline`]).
    #[doc(alias = "pthread_attr_setschedpolicy")]
    #[doc(alias = "pthread_attr_setschedparam")]
    #[doc(alias = "pthread_attr_setinheritsched")]
    pub fn scheduling(mut self, priority: Priority) -> Builder {
        self.scheduling = Some(priority);
        self
    }

    /// Makes the thread a `SCHED_DEADLINE` task before its closure runs: the creator
    /// calls `sched_setattr(tid, ...)` at the start gate (a `pthread_attr_t` cannot
    /// carry it). Exclusive with [`scheduling`](Self::scheduling); a DEADLINE thread
    /// must not have a restricted [`affinity`](Self::affinity) (EPERM).
    pub fn deadline(mut self, params: Deadline) -> Builder {
        self.deadline = Some(params);
        self
    }

    /// Makes the thread a POSIX `SCHED_SPORADIC` thread under the user-space sporadic
    /// server ([`sporadic`](super::sporadic)): it is created `SCHED_FIFO` at
    /// `normal_priority` and placed under the server with a full budget before its
    /// closure runs. Exclusive with [`scheduling`](Self::scheduling) and
    /// [`deadline`](Self::deadline). The parameters are checked at `spawn`
    /// ([`SporadicParams::validate`](super::sporadic::SporadicParams::validate)).
    #[doc(alias = "SCHED_SPORADIC")]
    pub fn sporadic(
        mut self,
        params: super::sporadic::SporadicParams,
        normal_priority: i32,
    ) -> Builder {
        self.sporadic = Some((params, normal_priority));
        self
    }

    /// The CPUs the thread may run on (`pthread_attr_setaffinity_np`).
    #[doc(alias = "pthread_attr_setaffinity_np")]
    pub fn affinity(mut self, cpus: CpuSet) -> Builder {
        self.affinity = Some(cpus);
        self
    }

    /// The stack size in bytes; at least `PTHREAD_STACK_MIN` (16 KiB), checked at
    /// `spawn`. glibc rounds it up to whole pages.
    #[doc(alias = "pthread_attr_setstacksize")]
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Creates the thread, which runs `f` once the creator has applied every attribute.
    ///
    /// Errors: a bad name or stack size, or a `Deadline` policy, is `InvalidInput`;
    /// EPERM from `pthread_create` (a real-time policy without privilege) is
    /// `PermissionDenied` with the hint naming CAP_SYS_NICE and RLIMIT_RTPRIO; EAGAIN
    /// (thread limit) is `WouldBlock`.
    ///
    /// # References
    ///  - [`pthread_create(3)`](https://man7.org/linux/man-pages/man3/pthread_create.3.html)
    #[doc(alias = "pthread_create")]
    pub fn spawn<F, T>(self, f: F) -> Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let name = match &self.name {
            Some(n) => Some(check_name(n)?),
            None => None,
        };
        if let Some(size) = self.stack_size {
            if size < libc::PTHREAD_STACK_MIN {
                return Err(Error::invalid(
                    "pthread_attr_setstacksize",
                    format!(
                        "stack size {size} is below PTHREAD_STACK_MIN ({})",
                        libc::PTHREAD_STACK_MIN
                    ),
                ));
            }
        }
        if self.deadline.is_some() && self.scheduling.is_some() {
            return Err(Error::invalid(
                "sched_setattr",
                "a thread gets either a deadline or a policy/priority, not both",
            ));
        }
        let scheduling = match self.sporadic {
            None => self.scheduling,
            Some((params, normal)) => {
                if self.scheduling.is_some() || self.deadline.is_some() {
                    return Err(Error::invalid(
                        "sched_setparam",
                        "a sporadic thread gets its priorities from Builder::sporadic, \
                         not also a policy or a deadline",
                    ));
                }
                params.validate(normal)?;
                Some(Priority::fifo(normal)?)
            }
        };
        let (attr_prio, after_prio) = match scheduling {
            None => (None, None),
            Some(p) => match p.policy() {
                Policy::Fifo | Policy::RoundRobin | Policy::Other => (Some(p), None),
                // glibc's attr refuses these: create SCHED_OTHER explicitly, then switch.
                Policy::Batch | Policy::Idle => (Some(Priority::other()), Some(p)),
                Policy::Deadline => {
                    return Err(Error::invalid(
                        "pthread_attr_setschedpolicy",
                        "SCHED_DEADLINE cannot be set through a pthread attribute",
                    )
                    .with_hint("use Builder::deadline(Deadline::new(runtime, deadline, period)?)"))
                }
            },
        };

        let attr = Attr::new()?;
        if let Some(size) = self.stack_size {
            attr.stack_size(size)?;
        }
        if let Some(p) = attr_prio {
            attr.explicit_sched(p)?;
        }
        if let Some(cpus) = &self.affinity {
            attr.affinity(cpus)?;
        }

        let shared = Arc::new(Shared::<T> {
            gate: Mutex::new(Gate {
                tid: 0,
                state: GateState::Wait,
            }),
            cv: Condvar::new(),
            result: Mutex::new(None),
            finished: AtomicBool::new(false),
        });
        let served = self.sporadic.is_some();
        let f = move || {
            // A served thread leaves the server when its closure ends (or unwinds),
            // before its tid can be reused.
            struct Leave(bool);
            impl Drop for Leave {
                fn drop(&mut self) {
                    if self.0 {
                        super::sporadic::leave_current();
                    }
                }
            }
            let _leave = Leave(served);
            f()
        };
        let start = Box::new(Start {
            f,
            shared: Arc::clone(&shared),
        });
        let native = attr.create(start, attr_prio, self.affinity.as_ref())?;

        // From here the new thread waits at the gate. The guard opens it (Abort) and
        // joins the thread on every way out that does not hand it to a JoinHandle,
        // including a panic, so the thread can neither wait forever nor leak.
        let gate = GateGuard {
            shared: &shared,
            native,
            armed: true,
        };
        // Wait for the tid, apply what the attr could not carry, then open the gate.
        let tid = {
            let mut g = lock(&shared.gate);
            while g.tid == 0 {
                g = shared.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            g.tid
        };
        let tid = Tid::from_raw(tid).ok_or_else(|| {
            Error::new(
                crate::ErrorKind::Other,
                "gettid",
                "new thread reported no tid",
            )
        })?;
        if let Some(name) = &name {
            // SAFETY: `native` is a live, joinable thread we created; `name` is a
            // NUL-terminated string of at most 15 bytes.
            let r = unsafe { libc::pthread_setname_np(native, name.as_ptr()) };
            crate::error::check_pthread("pthread_setname_np", r)?;
        }
        if let Some(p) = after_prio {
            th::set_thread_scheduling(tid, p)?;
        }
        if let Some(dl) = &self.deadline {
            super::deadline::set(tid, dl)?;
        }
        let sporadic = match self.sporadic {
            Some((params, normal)) => Some(super::sporadic::serve_spawned(tid, params, normal)?),
            None => None,
        };
        super::hook::thread_created(tid);
        gate.open();
        Ok(JoinHandle {
            native,
            tid,
            shared,
            sporadic,
        })
    }
}

/// Holds a new thread at its start gate; see [`Builder::spawn`].
struct GateGuard<'a, T> {
    shared: &'a Shared<T>,
    native: libc::pthread_t,
    armed: bool,
}

impl<T> GateGuard<'_, T> {
    /// Lets the closure run; the thread now belongs to the caller's JoinHandle.
    fn open(mut self) {
        self.armed = false;
        self.set(GateState::Run);
    }

    fn set(&self, state: GateState) {
        lock(&self.shared.gate).state = state;
        self.shared.cv.notify_all();
    }
}

impl<T> Drop for GateGuard<'_, T> {
    fn drop(&mut self) {
        if self.armed {
            self.set(GateState::Abort);
            // SAFETY: `native` is joinable (created by us, never joined or detached:
            // no JoinHandle owns it while the guard is armed) and is joined once, here.
            // The thread returns promptly: it sees Abort and skips the closure.
            unsafe { libc::pthread_join(self.native, std::ptr::null_mut()) };
        }
    }
}

/// Spawns `f` on a thread built by `builder` (a shorthand for `builder.spawn(f)`).
///
/// # References
///  - [`pthread_create(3)`](https://man7.org/linux/man-pages/man3/pthread_create.3.html)
#[doc(alias = "pthread_create")]
pub fn spawn<F, T>(builder: Builder, f: F) -> Result<JoinHandle<T>>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    builder.spawn(f)
}

fn check_name(name: &str) -> Result<CString> {
    if name.len() > 15 {
        return Err(Error::invalid(
            "pthread_setname_np",
            format!(
                "thread name {name:?} is {} bytes; Linux allows 15",
                name.len()
            ),
        ));
    }
    CString::new(name)
        .map_err(|_| Error::invalid("pthread_setname_np", "thread name contains a NUL byte"))
}

/// A handle to a thread spawned by [`Builder`]: join it, and reach its native
/// `pthread_t` and kernel tid. Dropping it detaches the thread.
///
/// While the handle lives the `pthread_t` stays valid (even after the thread ends, it
/// stays joinable), so the methods that take it are safe.
///
/// # References
///  - [`pthread_join(3)`](https://man7.org/linux/man-pages/man3/pthread_join.3.html)
///  - [`pthread_detach(3)`](https://man7.org/linux/man-pages/man3/pthread_detach.3.html)
pub struct JoinHandle<T> {
    native: libc::pthread_t,
    tid: Tid,
    shared: Arc<Shared<T>>,
    sporadic: Option<super::sporadic::Served>,
}

impl<T> JoinHandle<T> {
    /// The thread's place under the sporadic server, if it was spawned with
    /// [`Builder::sporadic`].
    pub fn sporadic(&self) -> Option<&super::sporadic::Served> {
        self.sporadic.as_ref()
    }

    /// The sporadic budget it has left now (`None` if it is not a sporadic thread or
    /// has ended); see [`Served::remaining_budget`](super::sporadic::Served::remaining_budget).
    pub fn remaining_budget(&self) -> Option<std::time::Duration> {
        self.sporadic.as_ref()?.remaining_budget().ok()
    }

    /// Its pending sporadic replenishments, earliest first (empty if it is not a
    /// sporadic thread).
    pub fn pending_replenishments(&self) -> Vec<super::sporadic::Replenishment> {
        self.sporadic
            .as_ref()
            .map(|s| s.pending_replenishments())
            .unwrap_or_default()
    }

    /// The kernel thread id (known since `spawn` returned).
    #[inline]
    pub fn tid(&self) -> Tid {
        self.tid
    }

    /// The native `pthread_t`, valid until [`join`](Self::join) or drop.
    #[inline]
    pub fn as_pthread_t(&self) -> libc::pthread_t {
        self.native
    }

    /// The thread's CPU-time clock (`pthread_getcpuclockid`).
    ///
    /// # References
    ///  - [`pthread_getcpuclockid(3)`](https://man7.org/linux/man-pages/man3/pthread_getcpuclockid.3.html)
    #[doc(alias = "pthread_getcpuclockid")]
    pub fn cpu_clock(&self) -> Result<super::cputime::CpuClock> {
        self.while_running("pthread_getcpuclockid", || {
            let mut id: libc::clockid_t = 0;
            // SAFETY: `native` is valid while the handle lives, and the thread is
            // running (see `while_running`); `id` is writable.
            let r = unsafe { libc::pthread_getcpuclockid(self.native, &mut id) };
            crate::error::check_pthread("pthread_getcpuclockid", r)?;
            Ok(super::cputime::CpuClock::from_id(id))
        })
    }

    /// Runs `f` (a `pthread_*` call on `native`) while the thread is guaranteed not to
    /// exit, or fails with `NotFound` if its closure has already returned.
    ///
    /// glibc checks a handle's kernel tid and then reads it *again* for the system
    /// call; a thread that exits in between has tid 0 there, and 0 means "the calling
    /// thread": `pthread_setschedparam` on a dying thread could change the *caller's*
    /// policy. Holding the gate lock keeps the thread from passing its exit point.
    fn while_running<R>(&self, call: &'static str, f: impl FnOnce() -> Result<R>) -> Result<R> {
        let _alive = lock(&self.shared.gate);
        if self.shared.finished.load(Ordering::Acquire) {
            return Err(sched_error(
                call,
                libc::ESRCH,
                Some(self.tid.as_raw()),
                None,
                None,
            ));
        }
        f()
    }

    /// Whether the closure has returned (or panicked). From then on the methods that
    /// act on the thread fail with `NotFound`.
    pub fn is_finished(&self) -> bool {
        self.shared.finished.load(Ordering::Acquire)
    }

    /// Policy and priority as the kernel has them (`sched_getattr` on the tid; see
    /// [`current_scheduling`](super::current_scheduling) for why not glibc's cached
    /// `pthread_getschedparam`). Errors with `NotFound` once the thread has ended.
    ///
    /// # References
    ///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
    pub fn scheduling(&self) -> Result<Priority> {
        self.while_running("sched_getattr", || th::thread_scheduling(self.tid))
    }

    /// Sets policy and priority (`pthread_setschedparam`).
    ///
    /// # References
    ///  - [`pthread_setschedparam(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedparam.3.html)
    #[doc(alias = "pthread_setschedparam")]
    pub fn set_scheduling(&self, priority: Priority) -> Result<()> {
        super::hook::change(self.tid.as_raw(), || {
            self.while_running("pthread_setschedparam", || {
                th::pthread_setschedparam(self.native, self.tid, priority)
            })
        })
    }

    /// Changes only the priority, checked against the thread's current policy
    /// (`pthread_setschedprio`).
    ///
    /// # References
    ///  - [`pthread_setschedprio(3)`](https://man7.org/linux/man-pages/man3/pthread_setschedprio.3.html)
    #[doc(alias = "pthread_setschedprio")]
    pub fn set_priority(&self, value: i32) -> Result<()> {
        super::hook::change(self.tid.as_raw(), || {
            self.while_running("pthread_setschedprio", || {
                th::pthread_setschedprio(self.native, self.tid, value)
            })
        })
    }

    /// The thread's CPU affinity (`pthread_getaffinity_np`).
    ///
    /// # References
    ///  - [`pthread_getaffinity_np(3)`](https://man7.org/linux/man-pages/man3/pthread_getaffinity_np.3.html)
    #[doc(alias = "pthread_getaffinity_np")]
    pub fn affinity(&self) -> Result<CpuSet> {
        self.while_running("pthread_getaffinity_np", || {
            let mut raw = *CpuSet::new().as_raw();
            // SAFETY: `native` is valid while the handle lives and the thread is
            // running (see `while_running`); `raw` is writable.
            let r = unsafe {
                libc::pthread_getaffinity_np(
                    self.native,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &mut raw,
                )
            };
            if r != 0 {
                return Err(sched_error(
                    "pthread_getaffinity_np",
                    r,
                    Some(self.tid.as_raw()),
                    None,
                    None,
                ));
            }
            Ok(CpuSet::from_raw(raw))
        })
    }

    /// Sets the thread's CPU affinity (`pthread_setaffinity_np`).
    ///
    /// # References
    ///  - [`pthread_setaffinity_np(3)`](https://man7.org/linux/man-pages/man3/pthread_setaffinity_np.3.html)
    #[doc(alias = "pthread_setaffinity_np")]
    pub fn set_affinity(&self, cpus: &CpuSet) -> Result<()> {
        if cpus.is_empty() {
            return Err(Error::invalid("pthread_setaffinity_np", "empty CPU set"));
        }
        self.while_running("pthread_setaffinity_np", || {
            // SAFETY: `native` is valid while the handle lives and the thread is
            // running (see `while_running`); `cpus` is only read.
            let r = unsafe {
                libc::pthread_setaffinity_np(
                    self.native,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    cpus.as_raw(),
                )
            };
            if r != 0 {
                return Err(sched_error(
                    "pthread_setaffinity_np",
                    r,
                    Some(self.tid.as_raw()),
                    None,
                    None,
                ));
            }
            Ok(())
        })
    }

    /// Waits for the thread (`pthread_join`) and returns the closure's value, or, like
    /// [`std::thread::JoinHandle::join`], `Err(payload)` if it panicked. Should
    /// `pthread_join` itself fail (a thread joining itself: EDEADLK), the `Err` payload
    /// is a [`posixrt::Error`](crate::Error).
    ///
    /// # References
    ///  - [`pthread_join(3)`](https://man7.org/linux/man-pages/man3/pthread_join.3.html)
    #[doc(alias = "pthread_join")]
    pub fn join(self) -> std::thread::Result<T> {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `native` is joinable (never joined or detached: `self` is consumed
        // and its Drop, which detaches, is suppressed).
        let r = unsafe { libc::pthread_join(this.native, std::ptr::null_mut()) };
        // SAFETY: `this.shared` is read out exactly once and `this` is never dropped.
        let shared = unsafe { std::ptr::read(&this.shared) };
        // SAFETY: as above, for the sporadic handle (read once, dropped here).
        drop(unsafe { std::ptr::read(&this.sporadic) });
        if r != 0 {
            // Not joined (EDEADLK: the thread tried to join itself). Detach it so its
            // stack is still freed when it ends, as dropping the handle would.
            // SAFETY: `native` is still joinable and is detached exactly once.
            unsafe { libc::pthread_detach(this.native) };
            let e: Box<dyn Any + Send> = Box::new(
                Error::from_errno("pthread_join", r)
                    .with_hint("a thread cannot join itself; the thread is detached instead"),
            );
            return Err(e);
        }
        let taken = lock(&shared.result).take();
        taken.unwrap_or_else(|| {
            Err(Box::new(Error::new(
                crate::ErrorKind::Other,
                "pthread_join",
                "the thread ended without a result",
            )))
        })
    }
}

impl<T> Drop for JoinHandle<T> {
    fn drop(&mut self) {
        // SAFETY: `native` is joinable and neither joined nor detached before.
        unsafe { libc::pthread_detach(self.native) };
    }
}

impl<T> std::fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinHandle")
            .field("tid", &self.tid)
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

// ---- private machinery ----

#[derive(Clone, Copy, PartialEq, Eq)]
enum GateState {
    Wait,
    Run,
    Abort,
}

struct Gate {
    tid: i32,
    state: GateState,
}

struct Shared<T> {
    gate: Mutex<Gate>,
    cv: Condvar,
    result: Mutex<Option<std::thread::Result<T>>>,
    finished: AtomicBool,
}

struct Start<F, T> {
    f: F,
    shared: Arc<Shared<T>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

extern "C" fn thread_start<F, T>(arg: *mut c_void) -> *mut c_void
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

/// An initialised `pthread_attr_t`, destroyed on drop.
struct Attr(Box<libc::pthread_attr_t>);

impl Attr {
    fn new() -> Result<Attr> {
        // SAFETY: zeroed storage is only used after pthread_attr_init initialises it.
        let mut a: Box<libc::pthread_attr_t> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `a` points to writable storage for a pthread_attr_t.
        let r = unsafe { libc::pthread_attr_init(&mut *a) };
        crate::error::check_pthread("pthread_attr_init", r)?;
        Ok(Attr(a))
    }

    fn ptr(&self) -> *mut libc::pthread_attr_t {
        &*self.0 as *const libc::pthread_attr_t as *mut libc::pthread_attr_t
    }

    fn stack_size(&self, size: usize) -> Result<()> {
        // SAFETY: the attr is initialised.
        let r = unsafe { libc::pthread_attr_setstacksize(self.ptr(), size) };
        crate::error::check_pthread("pthread_attr_setstacksize", r)
    }

    fn explicit_sched(&self, p: Priority) -> Result<()> {
        let param = p.param();
        // SAFETY: the attr is initialised; `param` is only read.
        let r =
            unsafe { libc::pthread_attr_setinheritsched(self.ptr(), libc::PTHREAD_EXPLICIT_SCHED) };
        crate::error::check_pthread("pthread_attr_setinheritsched", r)?;
        // SAFETY: as above.
        let r = unsafe { libc::pthread_attr_setschedpolicy(self.ptr(), p.policy().as_raw()) };
        if r != 0 {
            return Err(sched_error(
                "pthread_attr_setschedpolicy",
                r,
                None,
                Some(p.policy()),
                Some(p.value()),
            ));
        }
        // SAFETY: as above.
        let r = unsafe { libc::pthread_attr_setschedparam(self.ptr(), &param) };
        if r != 0 {
            return Err(sched_error(
                "pthread_attr_setschedparam",
                r,
                None,
                Some(p.policy()),
                Some(p.value()),
            ));
        }
        Ok(())
    }

    fn affinity(&self, cpus: &CpuSet) -> Result<()> {
        if cpus.is_empty() {
            return Err(Error::invalid(
                "pthread_attr_setaffinity_np",
                "empty CPU set",
            ));
        }
        // SAFETY: the attr is initialised; the set is only read (glibc copies it).
        let r = unsafe {
            libc::pthread_attr_setaffinity_np(
                self.ptr(),
                std::mem::size_of::<libc::cpu_set_t>(),
                cpus.as_raw(),
            )
        };
        crate::error::check_pthread("pthread_attr_setaffinity_np", r)
    }

    fn create<F, T>(
        &self,
        start: Box<Start<F, T>>,
        prio: Option<Priority>,
        affinity: Option<&CpuSet>,
    ) -> Result<libc::pthread_t>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let arg = Box::into_raw(start);
        let mut native: libc::pthread_t = 0;
        // SAFETY: the attr is initialised; `thread_start::<F, T>` takes ownership of
        // `arg` (a leaked Box<Start<F, T>>) if and only if creation succeeds.
        let r = unsafe {
            libc::pthread_create(&mut native, self.ptr(), thread_start::<F, T>, arg.cast())
        };
        if r != 0 {
            // SAFETY: creation failed, so no thread took `arg`; reclaim it once.
            drop(unsafe { Box::from_raw(arg) });
            let e = sched_error(
                "pthread_create",
                r,
                None,
                prio.map(|p| p.policy()),
                prio.map(|p| p.value()),
            );
            return Err(match r {
                libc::EINVAL => match affinity {
                    Some(cpus) => e
                        .with_message(format!(
                            "the affinity {cpus} names no CPU the thread may use"
                        ))
                        .with_hint(super::hint::affinity_einval_hint("pthread_create")),
                    None => e.with_message("an attribute (the stack size) was refused"),
                },
                libc::EAGAIN => {
                    let e = e.with_message(
                        "thread limit reached (RLIMIT_NPROC, threads-max) or no memory for the stack",
                    );
                    let locked = super::rt::locked_bytes();
                    if locked > 0 {
                        e.with_hint(format!(
                            "memory is locked ({} KiB, mlockall MCL_FUTURE?): the new stack must \
                             fit in RLIMIT_MEMLOCK ({}); give the thread a smaller \
                             Builder::stack_size, raise memlock in /etc/security/limits.conf, \
                             or run with CAP_IPC_LOCK",
                            locked / 1024,
                            super::rt::memlock_limit()
                        ))
                    } else {
                        e
                    }
                }
                _ => e,
            });
        }
        Ok(native)
    }
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: the attr was initialised by pthread_attr_init and is destroyed once.
        unsafe { libc::pthread_attr_destroy(&mut *self.0) };
    }
}

impl CpuClock {
    /// The CPU clock of a thread spawned by [`Builder`]
    /// (`pthread_getcpuclockid`).
    /// `NotFound` once the thread's closure has returned.
    #[inline]
    #[doc(alias = "pthread_getcpuclockid")]
    pub fn of_handle<T>(handle: &JoinHandle<T>) -> Result<CpuClock> {
        handle.cpu_clock()
    }
}
