//! Spawning threads with their scheduling attributes applied at creation: [`Builder`].

mod attr;
mod handle;
mod start;

use std::ffi::CString;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex};

use self::attr::Attr;
use self::start::{lock, Gate, GateState, Shared, Start};
use super::deadline::Deadline;
use super::thread as th;
use super::tid::Tid;
use super::{CpuSet, Policy, Priority};
use crate::{Error, Result};

pub use self::handle::JoinHandle;

/// Builds a thread whose policy, priority, affinity, stack size and name are set **when
/// it is created**.
///
/// [`Builder`] fills a `pthread_attr_t` and calls `pthread_create`, as listing 6.7 of
/// the seed does:
///
/// - policy and priority: `pthread_attr_setinheritsched(PTHREAD_EXPLICIT_SCHED)`,
///   `pthread_attr_setschedpolicy`, `pthread_attr_setschedparam` (without a policy the
///   new thread *inherits* its creator's, the POSIX default; but from a creator with
///   `SCHED_RESET_ON_FORK` the kernel passes on neither a real-time or deadline
///   policy (the thread starts `SCHED_OTHER` at nice 0), nor a negative nice (it
///   becomes 0), nor the flag itself: see [`Builder::new`]);
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
///   thread is created with its creator's fair policy (`SCHED_OTHER` explicitly
///   if the creator is real-time or deadline) and the creator calls
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
    ///
    /// "Inherits" is the kernel's rule: a creator with `SCHED_RESET_ON_FORK` (see
    /// `sched(7)`) passes on neither that flag nor a real-time or deadline policy
    /// (the thread starts `SCHED_OTHER` at nice 0) nor a negative nice value (it
    /// becomes 0). Use [`scheduling`](Self::scheduling) to give the thread its
    /// creator's real-time policy anyway.
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
    #[doc(alias = "sched_setattr")]
    #[doc(alias = "SCHED_DEADLINE")]
    pub fn deadline(mut self, params: Deadline) -> Builder {
        self.deadline = Some(params);
        self
    }

    /// Makes the thread a POSIX `SCHED_SPORADIC` thread under the user-space sporadic
    /// server ([`sporadic`](super::sporadic)): it is created `SCHED_FIFO` at the low
    /// priority, raised to `normal_priority` and placed under the server with a full
    /// budget before its closure runs (a thread the server then cannot take, see
    /// [`serve`](super::sporadic::serve), goes back to the low priority). Exclusive with [`scheduling`](Self::scheduling) and
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

    /// The stack size in bytes; at least `PTHREAD_STACK_MIN` (16 KiB) and at most
    /// `isize::MAX`, checked at `spawn`. glibc rounds it up to whole pages.
    #[doc(alias = "pthread_attr_setstacksize")]
    pub fn stack_size(mut self, bytes: usize) -> Builder {
        self.stack_size = Some(bytes);
        self
    }

    /// Creates the thread, which runs `f` once the creator has applied every attribute.
    ///
    /// Errors: a bad name or stack size, a `Deadline` policy, attributes that
    /// exclude each other, or an affinity that is empty, names a CPU the machine
    /// does not have, online CPUs the cgroup cpuset does not allow (the kernel
    /// would drop them silently) or no CPU the thread may use, is `InvalidInput`;
    /// EPERM from `pthread_create` (a real-time policy without privilege) is
    /// `PermissionDenied` with the hint naming CAP_SYS_NICE and RLIMIT_RTPRIO; EAGAIN
    /// (thread limit, or a `SCHED_DEADLINE` caller without
    /// [`RESET_ON_FORK`](super::deadline::DeadlineFlags::RESET_ON_FORK)) is `WouldBlock`;
    /// a [`deadline`](Self::deadline) refused by admission control is `Busy`, and
    /// one refused for a restricted affinity or privilege is `PermissionDenied`, as
    /// [`deadline::set`](super::deadline::set) reports them.
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
                )
                .with_hint(format!(
                    "give Builder::stack_size at least {} bytes (more if the thread uses \
                     much stack or TLS), or leave it out for the default (RLIMIT_STACK)",
                    libc::PTHREAD_STACK_MIN
                )));
            }
            // glibc refuses a size whose guard and rounding overflow with EINVAL,
            // which `pthread_create` shares with a CPU set it cannot use; no address
            // space holds such a stack anyway, so say so here.
            if size > isize::MAX as usize {
                return Err(Error::invalid(
                    "pthread_attr_setstacksize",
                    format!("stack size {size} is larger than any address space (isize::MAX)"),
                )
                .with_hint("give Builder::stack_size a size the machine can map"));
            }
        }
        if self.deadline.is_some() && self.scheduling.is_some() {
            return Err(Error::invalid(
                "sched_setattr",
                "a thread gets either a deadline or a policy/priority, not both",
            )
            .with_hint(
                "keep Builder::deadline for a SCHED_DEADLINE thread or Builder::scheduling \
                 for any other policy, not both",
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
                    )
                    .with_hint(
                        "drop Builder::scheduling and Builder::deadline: Builder::sporadic \
                         makes the thread SCHED_FIFO at its normal priority, and the server \
                         moves it to sched_ss_low_priority when its budget is spent",
                    ));
                }
                params.validate(normal)?;
                // Created at the low priority; `serve_spawned` raises it to the
                // normal one before it runs. If the server then cannot take it,
                // that is the priority it is given back: never the normal one
                // with nothing enforcing its budget.
                Some(Priority::fifo(params.low_priority)?)
            }
        };
        let (attr_prio, after_prio) = match scheduling {
            None => (None, None),
            Some(p) => match p.policy() {
                Policy::Fifo | Policy::RoundRobin | Policy::Other => (Some(p), None),
                // glibc's attr refuses these: create the thread with a fair policy,
                // then switch it.
                Policy::Batch | Policy::Idle | Policy::Ext => (fair_creation_policy(), Some(p)),
                Policy::Deadline => {
                    return Err(Error::invalid(
                        "pthread_attr_setschedpolicy",
                        "SCHED_DEADLINE cannot be set through a pthread attribute",
                    )
                    .with_hint("use Builder::deadline(Deadline::new(runtime, deadline, period)?)"))
                }
            },
        };

        let mut attr = Attr::new()?;
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
        let native = attr
            .create(start, attr_prio, self.affinity.as_ref(), self.stack_size)
            .map_err(|e| match self.sporadic {
                Some((params, normal)) => sporadic_refusal(e, params.low_priority, normal),
                None => e,
            })?;

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
        if let Some(cpus) = &self.affinity {
            // glibc applied the set with sched_setaffinity: refuse it if the
            // kernel narrowed it to the cpuset (the thread never runs `f`).
            super::affinity::check_applied("pthread_create", tid, cpus, || {})?;
        }
        if let Some(p) = after_prio {
            th::set_thread_scheduling(tid, p)?;
        }
        if let Some(dl) = &self.deadline {
            super::deadline::set(tid, dl)
                .map_err(|e| inherited_affinity_note(e, self.affinity.is_some()))?;
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

/// The attribute a `SCHED_BATCH` or `SCHED_IDLE` thread is created with before
/// the creator switches it: none (inherit) from a creator whose policy is already
/// fair, `SCHED_OTHER` from a real-time or deadline one (so the new thread is
/// never real-time). An explicit `SCHED_OTHER` from a `SCHED_IDLE` creator would
/// make the new thread leave `SCHED_IDLE` on the way, which the kernel refuses
/// without CAP_SYS_NICE unless RLIMIT_NICE allows nice 0: such a creator could
/// not start even a `SCHED_IDLE` thread.
fn fair_creation_policy() -> Option<Priority> {
    let creator = crate::sys::sched::getscheduler(0)
        .ok()
        .and_then(Policy::from_raw);
    match creator {
        Some(Policy::Other | Policy::Batch | Policy::Idle) => None,
        _ => Some(Priority::other()),
    }
}

/// EPERM creating a sporadic thread at its low priority `low`: serving it needs
/// more than that (its normal priority, and the server's top one until the
/// server runs), so a hint naming `low` would name a limit that only moves the
/// refusal on. The hint names the priority the whole setup needs.
fn sporadic_refusal(e: Error, low: i32, normal: i32) -> Error {
    if e.errno() != Some(libc::EPERM) {
        return e;
    }
    let Ok(need) = super::sporadic::needed_priority(normal) else {
        return e;
    };
    let server = if need > normal {
        format!(
            ", and the sporadic server thread (started for the first served thread) \
             runs at {need}"
        )
    } else {
        String::new()
    };
    super::hint::sched_error(
        "pthread_create",
        libc::EPERM,
        None,
        Some(Policy::Fifo),
        Some(need),
    )
    .with_message(format!(
        "the sporadic thread was refused SCHED_FIFO at its low priority {low}; it also \
         runs at its normal priority {normal}{server}"
    ))
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

/// EPERM from `sched_setattr` on a new thread without a Builder affinity: if the
/// creator's own affinity leaves out an online CPU, the thread inherited that
/// restriction, which SCHED_DEADLINE refuses; the hint says so and how to lift it.
fn inherited_affinity_note(e: Error, affinity_given: bool) -> Error {
    if affinity_given || e.errno() != Some(libc::EPERM) {
        return e;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| super::cpuset::parse_cpu_list(&s));
    let (Ok(mine), Some(online)) = (CpuSet::allowed(), online) else {
        return e;
    };
    if online.iter().all(|c| mine.contains(c)) {
        return e;
    }
    let note = format!(
        "the new thread inherited this thread's affinity ({mine}), which leaves out online \
         CPUs; give it Builder::affinity with every online CPU ({online})"
    );
    let hint = match e.hint() {
        Some(h) => format!("{note}; {h}"),
        None => note,
    };
    e.with_hint(hint)
}

fn check_name(name: &str) -> Result<CString> {
    if name.len() > 15 {
        return Err(Error::invalid(
            "pthread_setname_np",
            format!(
                "thread name {name:?} is {} bytes; Linux allows 15",
                name.len()
            ),
        )
        .with_hint(
            "the kernel keeps 15 bytes of a thread's name (TASK_COMM_LEN 16 with the NUL), \
             and posixrt does not cut it: give Builder::name at most 15 bytes",
        ));
    }
    CString::new(name).map_err(|_| {
        Error::invalid("pthread_setname_np", "thread name contains a NUL byte")
            .with_hint("a thread name is a C string: leave the NUL byte out of Builder::name")
    })
}
