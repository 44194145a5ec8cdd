//! Completion notification: none, a queued real-time signal to the process
//! or to one of its threads, or a callback on a notification thread (`struct
//! sigevent` with `SIGEV_NONE`, `SIGEV_SIGNAL`, `SIGEV_THREAD_ID`,
//! `SIGEV_THREAD`).

use std::fmt;
use std::num::NonZeroI32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::sys::prio::{self, SchedClass};
use crate::{Error, Result};

/// The value carried by a notification (`union sigval`): an integer or a pointer-sized
/// word, chosen by the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[doc(alias = "sigval")]
pub struct SigVal(pub usize);

impl SigVal {
    /// The value as `sival_int`.
    #[inline]
    pub fn int(self) -> i32 {
        self.0 as i32
    }
    /// The value as `sival_ptr`.
    #[inline]
    pub fn ptr(self) -> *mut libc::c_void {
        self.0 as *mut libc::c_void
    }
}

impl From<i32> for SigVal {
    fn from(v: i32) -> SigVal {
        SigVal(v as u32 as usize)
    }
}

impl From<usize> for SigVal {
    fn from(v: usize) -> SigVal {
        SigVal(v)
    }
}

/// A callback for [`Notify::Thread`].
pub type Callback = Arc<dyn Fn(SigVal) + Send + Sync + 'static>;

/// How a request (or a whole `lio_listio` list) tells the program it is done
/// (`aio_sigevent`).
///
/// A cancelled request is done too: it notifies like any other.
///
/// # References
/// - [`sigevent(7)`](https://man7.org/linux/man-pages/man7/sigevent.7.html)
#[derive(Clone, Default)]
#[doc(alias = "sigevent")]
#[doc(alias = "SIGEV_NONE")]
#[doc(alias = "SIGEV_SIGNAL")]
#[doc(alias = "SIGEV_THREAD")]
#[doc(alias = "SIGEV_THREAD_ID")]
pub enum Notify {
    /// `SIGEV_NONE`: no notification; poll with `error`, wait with `suspend`.
    #[default]
    None,
    /// `SIGEV_SIGNAL`: a queued signal `signo` with `si_code == SI_ASYNCIO` and
    /// `si_value == value`, sent to the process like `sigqueue(3)`. It is
    /// generated before [`Aio::suspend`](super::Aio::suspend) or a list's wait
    /// can see the request done, as with glibc; the engine's own threads block
    /// every signal, so its handler runs on a thread of the program.
    Signal {
        /// The signal number, usually `SIGRTMIN() + n`.
        signo: i32,
        /// The value the handler finds in `si_value`.
        value: SigVal,
    },
    /// `SIGEV_THREAD_ID` (Linux): a queued signal `signo` with `si_code ==
    /// SI_ASYNCIO` and `si_value == value`, sent to thread `tid` of this
    /// process only, like `rt_tgsigqueueinfo(2)`. It is generated before
    /// [`Aio::suspend`](super::Aio::suspend) or a list's wait can see the
    /// request done, as [`Notify::Signal`]'s: when thread `tid` itself waits
    /// for the request and sees it done, the handler has run there. `tid`
    /// must name a thread of this process when the request is submitted; a
    /// thread that has ended by the completion gets nothing, and the signal
    /// counts in [`Aio::failed_notifications`](super::Aio::failed_notifications),
    /// unless the kernel gave its id to a newer thread of the process
    /// meanwhile, which then receives it (ids are the kernel's, and reused).
    /// A signal sent to one of the library's own threads (they block every
    /// signal) stays pending there and is not counted.
    ThreadSignal {
        /// The kernel thread id of the thread to signal (`gettid()`, as
        /// `posixrt::sched::gettid().as_raw()` gives it).
        tid: i32,
        /// The signal number, usually `SIGRTMIN() + n`.
        signo: i32,
        /// The value the handler finds in `si_value`.
        value: SigVal,
    },
    /// `SIGEV_THREAD`: `callback(value)` runs as if in a new thread: on one of the
    /// context's notification threads, a pool that grows on demand (up to
    /// [`MAX_NOTIFY_THREADS`]) so a callback that blocks does not delay another.
    /// The callback may submit new requests. It starts with every signal
    /// blocked, like the engine's other threads, so that it never takes a
    /// signal the program waits for with `sigwaitinfo` (unlike a C
    /// `SIGEV_THREAD` function, which glibc, and the C interface, start with
    /// every signal unblocked). It starts at the scheduling class
    /// and nice value of the thread that made the context's first `Thread`
    /// request, whatever an earlier callback on the same thread changed:
    /// those a thread created by that thread would take (Linux keeps a nice
    /// value per thread). That is its own class and nice value, but where
    /// `SCHED_RESET_ON_FORK` resets them, as the kernel does: a real-time or
    /// deadline class becomes `SCHED_OTHER` at nice 0, and a negative nice
    /// value 0, as the C library's `SIGEV_THREAD` functions get. It starts
    /// on that thread's CPU set too (its affinity when it made the request),
    /// and without `SCHED_RESET_ON_FORK`, as a new thread does, whatever an
    /// earlier callback set (clearing the flag needs CAP_SYS_NICE: without
    /// it, a callback after one that set the flag on its thread starts with
    /// it, at the class above all the same).
    /// Lowering a notification thread's nice value needs the privilege to
    /// (CAP_SYS_NICE or `RLIMIT_NICE`): without it, a callback on a thread
    /// started at a higher value (by an engine thread made by a thread at a
    /// higher one, say), or after a callback that raised its own, runs at
    /// that higher value. Its thread's stack is Rust's default for a new
    /// thread (2 MiB, or `RUST_MIN_STACK`), unless the context was built with
    /// [`Builder::notify_stack_size`](super::Builder::notify_stack_size).
    Thread {
        /// The function to call.
        callback: Callback,
        /// Its argument.
        value: SigVal,
    },
}

impl Notify {
    /// `SIGEV_SIGNAL` with `signo` and `value`.
    pub fn signal(signo: i32, value: impl Into<SigVal>) -> Notify {
        crate::sys::signal::pass_in_waits(signo);
        Notify::Signal {
            signo,
            value: value.into(),
        }
    }

    /// `SIGEV_THREAD_ID` with `signo` and `value`, to thread `tid` of this
    /// process.
    pub fn thread_signal(tid: i32, signo: i32, value: impl Into<SigVal>) -> Notify {
        crate::sys::signal::pass_in_waits(signo);
        Notify::ThreadSignal {
            tid,
            signo,
            value: value.into(),
        }
    }

    /// `SIGEV_THREAD` running `f(value)` on the notification thread.
    pub fn thread(value: impl Into<SigVal>, f: impl Fn(SigVal) + Send + Sync + 'static) -> Notify {
        Notify::Thread {
            callback: Arc::new(f),
            value: value.into(),
        }
    }

    /// `SIGEV_THREAD` with a callback that can be shared by many requests.
    pub fn thread_shared(value: impl Into<SigVal>, callback: Callback) -> Notify {
        Notify::Thread {
            callback,
            value: value.into(),
        }
    }

    #[inline]
    pub(crate) fn is_none(&self) -> bool {
        matches!(self, Notify::None)
    }

    #[inline]
    pub(crate) fn validate(&self, call: &'static str) -> Result<()> {
        match *self {
            Notify::Signal { signo, .. } => Notify::validate_signal(signo, call),
            Notify::ThreadSignal { tid, signo, .. } => {
                Notify::validate_signal(signo, call)?;
                if !crate::sys::signal::is_thread_of_process(tid) {
                    return Err(Error::invalid(
                        call,
                        format!("thread {tid} is not a thread of this process"),
                    )
                    .with_hint("name a live thread of this process by its kernel id (gettid)"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// A signal the program can handle: a standard one but SIGKILL and
    /// SIGSTOP, or a real-time one. Not those between (32 and 33 with glibc):
    /// the C library's own, whose handlers `sigaction` refuses to install and
    /// whose default action ends the process.
    fn validate_signal(signo: i32, call: &'static str) -> Result<()> {
        let (lo, hi) = (libc::SIGRTMIN(), libc::SIGRTMAX());
        let why = if signo == libc::SIGKILL || signo == libc::SIGSTOP {
            format!("signal {signo} ({}) cannot be caught", signal_name(signo))
        } else if signo > libc::SIGSYS && signo < lo {
            format!("signal {signo} is reserved by the C library (its threads' own)")
        } else if !(1..=libc::SIGSYS).contains(&signo) && !(lo..=hi).contains(&signo) {
            format!("signal number {signo} is not valid")
        } else {
            return Ok(());
        };
        Err(Error::invalid(call, why).with_hint(format!(
            "use a signal with a handler installed: SIGUSR1, SIGUSR2, or a real-time signal \
             in SIGRTMIN..=SIGRTMAX ({lo}..={hi}), which are queued and carry the value"
        )))
    }
}

impl fmt::Debug for Notify {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notify::None => f.write_str("None"),
            Notify::Signal { signo, value } => f
                .debug_struct("Signal")
                .field("signo", signo)
                .field("value", value)
                .finish(),
            Notify::ThreadSignal { tid, signo, value } => f
                .debug_struct("ThreadSignal")
                .field("tid", tid)
                .field("signo", signo)
                .field("value", value)
                .finish(),
            Notify::Thread { value, .. } => f.debug_struct("Thread").field("value", value).finish(),
        }
    }
}

/// `si_code` of an AIO completion signal.
pub const SI_ASYNCIO: i32 = -4;

/// Queues `signo` with `value` and `SI_ASYNCIO` to this process
/// (`rt_sigqueueinfo`). Returns the errno when the signal could not be queued
/// (EAGAIN: `RLIMIT_SIGPENDING` reached).
pub(crate) fn send_signal(signo: i32, value: SigVal) -> std::result::Result<(), i32> {
    crate::sys::signal::queue_to_self(signo, SI_ASYNCIO, value.0)
}

/// Completion signals sent by [`send_signals`], process-wide.
static SENT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// `SENT` when this thread last called [`catch_up`].
    static SEEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// For a wait about to return because requests are done (it saw them under
/// the engine lock): if completion signals were sent since this thread last
/// looked, enters the kernel once, so that the handler of one sent to this
/// thread while it ran (spinning for the lock, say: the kernel's kick may still
/// be on its way) has run when the wait returns, as if the thread had slept.
pub(crate) fn catch_up() {
    let sent = SENT.load(Ordering::Relaxed);
    if SEEN.with(|s| s.replace(sent)) != sent {
        crate::sys::signal::handle_pending();
    }
}

/// Sends the `SIGEV_SIGNAL`s and `SIGEV_THREAD_ID`s among `fires` (and
/// removes them), for a caller that holds the engine lock and releases it
/// next: a completion's signal is then generated before any waiter, which
/// looks under the lock, can see the request done (glibc's order: status,
/// signal, waiters). Every signal stays blocked in the calling thread until
/// the returned guard is dropped (after the waiters are woken), so no handler
/// runs here while the lock is held. A signal that cannot be queued
/// (`RLIMIT_SIGPENDING`; for a thread's, the thread has ended) is counted in
/// `failed` and traced, never silently lost.
///
/// The kernel gives a process signal to the main thread when that thread does
/// not block it. When the main thread sends (it reaped the completion) with
/// the signal unblocked but for this call, the signal is queued to it, and its
/// handler runs when the mask is restored, as if it had never been blocked.
/// A thread's signal goes to its thread, whichever thread sends it.
pub(crate) fn send_signals(
    fires: &mut Vec<Fire>,
    failed: &AtomicU64,
) -> Option<crate::sys::signal::AllBlocked> {
    use crate::sys::signal as sig;
    if !fires.iter().any(|f| matches!(f, Fire::Signal(..))) {
        return None;
    }
    let blocked = sig::block_all();
    let main = sig::is_main_thread();
    SENT.fetch_add(1, Ordering::Relaxed);
    fires.retain(|f| match *f {
        Fire::Signal(signo, v, to) => {
            let r = match to {
                Some(tid) => sig::queue_to_thread(tid.get(), signo, SI_ASYNCIO, v.0),
                None if main && !blocked.was_blocked(signo) => {
                    sig::queue_to_this_thread(signo, SI_ASYNCIO, v.0)
                }
                None => send_signal(signo, v),
            };
            if let Err(e) = r {
                failed.fetch_add(1, Ordering::Relaxed);
                super::hook::notify_failed(signo, e);
            }
            false
        }
        Fire::Thread(..) => true,
    });
    Some(blocked)
}

/// A notification due to fire: a signal before the engine lock is released,
/// a callback after.
pub(crate) enum Fire {
    /// A signal number and value, to the process or (`SIGEV_THREAD_ID`) to
    /// the one thread named. One variant for both, so that `send_signals`
    /// tells a batch without signals as cheaply as before.
    Signal(i32, SigVal, Option<NonZeroI32>),
    Thread(Callback, SigVal),
}

impl Fire {
    pub(crate) fn from_notify(n: Notify) -> Option<Fire> {
        match n {
            Notify::None => None,
            Notify::Signal { signo, value } => Some(Fire::Signal(signo, value, None)),
            Notify::ThreadSignal { tid, signo, value } => {
                // (Submission refuses a tid that is not positive. Were one
                // here, its send would fail and be counted, never go to the
                // whole process.)
                let tid = NonZeroI32::new(tid).unwrap_or(NonZeroI32::MIN);
                Some(Fire::Signal(signo, value, Some(tid)))
            }
            Notify::Thread { callback, value } => Some(Fire::Thread(callback, value)),
        }
    }
}

/// Most threads that run `SIGEV_THREAD` callbacks at once, per context.
///
/// Each callback runs "as if in a new thread": a callback that blocks does not
/// delay another's, until this many callbacks block at the same time; then the
/// next ones wait for one of them to return.
pub const MAX_NOTIFY_THREADS: usize = 64;

/// How long an idle notification thread stays before it exits (one always stays).
const IDLE_EXIT: std::time::Duration = std::time::Duration::from_secs(10);

type Job = (Callback, SigVal);

struct PoolState {
    queue: std::collections::VecDeque<Job>,
    /// Threads alive.
    threads: usize,
    /// Threads waiting for a job.
    waiting: usize,
    /// Threads spawned that have not yet looked at the queue: each takes a job
    /// as soon as it runs, so they count as idle (else a burst of posts spawns
    /// a thread per post while the first spawned ones are still starting).
    starting: usize,
    /// The context is gone: threads exit once the queue is empty.
    closed: bool,
}

struct Shared {
    st: std::sync::Mutex<PoolState>,
    /// Threads between a callback and their next look at the queue (reaping):
    /// each takes a queued job without being woken, so they count as idle.
    /// Raised without the lock before the reap, lowered under it when the
    /// thread looks at the queue again (so a poster that counts one sees it
    /// look after the job is queued).
    reaping: std::sync::atomic::AtomicUsize,
    cv: std::sync::Condvar,
    /// Reaps the context's completions (firing their notifications); run by a
    /// notification thread after each callback.
    reap: Reap,
    /// The scheduling class a thread created by the program's thread that
    /// started the pool would take (see [`submitter_class`]): every
    /// notification thread takes it (see [`run`]).
    class: SchedClass,
    /// The nice value a thread created by that thread would take (see
    /// [`submitter_nice`]): every notification thread takes it too. `None`
    /// if it could not be read.
    nice: Option<i32>,
    /// The CPU set of the program's thread that started the pool, which a
    /// thread it created would take: every notification thread takes it
    /// too. `None` if it could not be read.
    cpus: Option<libc::cpu_set_t>,
    /// The threads' stack size (`None`: Rust's default).
    stack: Option<usize>,
}

/// What a notification thread runs after each callback: reap the context's
/// completions, so that the next callbacks become ready on this thread instead
/// of waiting for the completion thread to hand them over.
pub(crate) type Reap = Box<dyn Fn() + Send + Sync>;

/// The notification threads of a context: a pool that grows on demand up to
/// [`MAX_NOTIFY_THREADS`], so a blocked callback never holds up another one.
pub(crate) struct Notifier {
    shared: Arc<Shared>,
    /// `sys::fork::generation()` when started: in a forked child the pool's
    /// threads are its parent's (see its `Drop`).
    born: u32,
}

impl Notifier {
    /// Starts the pool; `reap` is run by a thread after each callback (see
    /// [`Reap`]), with threads of `stack` bytes of stack (`None`: Rust's
    /// default). Called on the program's thread whose request needs it: its
    /// scheduling class and nice value are the pool's.
    pub(crate) fn start(reap: Reap, stack: Option<usize>) -> Result<Notifier> {
        let n = Notifier {
            shared: Arc::new(Shared {
                st: std::sync::Mutex::new(PoolState {
                    queue: std::collections::VecDeque::new(),
                    threads: 1,
                    waiting: 0,
                    starting: 1,
                    closed: false,
                }),
                cv: std::sync::Condvar::new(),
                reaping: std::sync::atomic::AtomicUsize::new(0),
                reap,
                class: submitter_class(),
                nice: submitter_nice(),
                cpus: own_cpus(),
                stack,
            }),
            born: crate::sys::fork::generation(),
        };
        n.spawn()?;
        Ok(n)
    }

    fn spawn(&self) -> Result<()> {
        let sh = Arc::clone(&self.shared);
        // The thread starts with every signal blocked, whichever thread posts
        // (the program's, for the first callback): like the engine's other
        // threads and glibc's AIO helper threads, it never takes a signal
        // that the program blocks in its own threads (to wait for it with
        // `sigwaitinfo` or a signalfd), nor a completion signal. Not
        // `spawn_all_blocked`: a callback is program code, and may change
        // its thread's mask.
        let _blocked = crate::sys::signal::block_all();
        let mut b = std::thread::Builder::new().name("posixrt-aio-notify".into());
        if let Some(size) = self.shared.stack {
            b = b.stack_size(size);
        }
        b.spawn(move || run(sh)).map(drop).map_err(|e| {
            thread_start_error(
                e.raw_os_error().unwrap_or(libc::EAGAIN),
                "starting an AIO notification thread",
                Some(self.shared.stack),
            )
        })
    }

    pub(crate) fn post(&self, cb: Callback, v: SigVal) {
        let mut st = self.shared.st.lock().unwrap_or_else(|p| p.into_inner());
        st.queue.push_back((cb, v));
        // Threads that look at the queue without a wake-up: those starting and
        // those reaping between callbacks (which run no user code before they
        // look, so a blocked callback is never among them). Often the poster
        // itself, reaping the completion its callback's request made.
        let ready = st.starting + self.shared.reaping.load(Ordering::SeqCst);
        let idle = st.waiting + ready;
        let grow = st.queue.len() > idle && st.threads < MAX_NOTIFY_THREADS;
        if grow {
            st.threads += 1;
            st.starting += 1;
        }
        let wake = st.queue.len() > ready;
        drop(st);
        if wake {
            self.shared.cv.notify_one();
        }
        if grow && self.spawn().is_err() {
            // The queued job is run by a thread already there.
            let mut st = self.shared.st.lock().unwrap_or_else(|p| p.into_inner());
            st.threads -= 1;
            st.starting -= 1;
        }
    }
}

impl Drop for Notifier {
    fn drop(&mut self) {
        if crate::sys::fork::generation() != self.born {
            // A forked child's copy of its parent's pool: it has no threads
            // to tell, and one of the parent's may have held the lock at the
            // fork (it would be held forever here).
            return;
        }
        self.shared
            .st
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .closed = true;
        self.shared.cv.notify_all();
    }
}

/// The error of `pthread_create` (`errno`) when starting a thread that
/// notifications need (`what`: a notification thread, the completion thread).
/// EAGAIN gets the hint that tells the fixes: the thread limits, and the
/// stack, whose memory the C library reports as EAGAIN too. `notify_stack`
/// is `Some` for a notification thread, with the context's
/// `Builder::notify_stack_size` (`None`: Rust's default).
pub(crate) fn thread_start_error(
    errno: i32,
    what: &'static str,
    notify_stack: Option<Option<usize>>,
) -> Error {
    let e = Error::from_errno("pthread_create", errno).with_message(what);
    if errno != libc::EAGAIN {
        return e;
    }
    let mut hint = String::from(
        "the thread limit is reached or there is no memory for the thread's stack: \
         raise RLIMIT_NPROC (`ulimit -u`), the sysctl kernel.threads-max or the \
         cgroup's pids.max, or run fewer threads",
    );
    match notify_stack {
        Some(Some(size)) => hint.push_str(&format!(
            "; or ask for a smaller stack (Builder::notify_stack_size, now {size} bytes)"
        )),
        Some(None) => hint.push_str(
            "; or ask for a smaller stack than Rust's default (Builder::notify_stack_size)",
        ),
        None => {}
    }
    if crate::sched::rt::memlock_limits_new_mappings() {
        hint.push_str(
            "; memory is locked (mlockall MCL_FUTURE): the stack must fit in \
             RLIMIT_MEMLOCK (`ulimit -l`), or run with CAP_IPC_LOCK",
        );
    }
    e.with_hint(hint)
}

/// Puts the calling notification thread back as it started after a callback
/// ran on it: every signal blocked, at the pool's class, nice value and CPU
/// set, without `SCHED_RESET_ON_FORK`.
fn fresh_thread(sh: &Shared, flag_stays: &mut bool) {
    block_every_signal();
    take_pool_sched(sh, flag_stays);
}

/// Moves the calling notification thread to the pool's class, nice value and
/// CPU set where it is elsewhere, and clears `SCHED_RESET_ON_FORK` (a new
/// thread never has it: the kernel clears it in the threads made by one that
/// has). The class, nice value and flag come from one `sched_getattr` (see
/// [`OwnSched`]), the CPU set from one `sched_getaffinity`: a callback is
/// program code, which may change any of them by a raw system call, so they
/// are read after each; a change is made only where one differs.
///
/// Clearing the flag needs CAP_SYS_NICE: without it, the class is put back
/// with the flag kept, and `flag_stays` (the thread's, false at its start)
/// is set so that the thread does not try to clear it again.
fn take_pool_sched(sh: &Shared, flag_stays: &mut bool) {
    let now = OwnSched::read();
    if now.class != sh.class || (now.reset_on_fork && !*flag_stays) {
        // pthread_setschedparam without the flag clears it (as the class):
        // glibc's copy of the class stays right.
        match prio::set_current(sh.class) {
            Err(libc::EPERM) if now.reset_on_fork => {
                let keep = SchedClass {
                    policy: sh.class.policy | libc::SCHED_RESET_ON_FORK,
                    ..sh.class
                };
                // (Refused for the flag, not the class, where the class
                // was the pool's already or is taken with the flag kept.)
                if now.class == sh.class || prio::set_current(keep).is_ok() {
                    *flag_stays = true;
                }
            }
            _ => {}
        }
    }
    take_nice(sh.nice, now.nice);
    take_cpus(sh.cpus.as_ref());
}

/// What the kernel says of the calling thread's scheduling.
struct OwnSched {
    class: SchedClass,
    /// Its nice value, where `sched_getattr` gave it (the kernel reports it
    /// for the non-real-time policies only).
    nice: Option<i32>,
    /// `SCHED_RESET_ON_FORK` is set.
    reset_on_fork: bool,
}

impl OwnSched {
    /// One `sched_getattr`; `sched_getscheduler` and `sched_getparam` where
    /// that is refused (seccomp), and then no nice value.
    fn read() -> OwnSched {
        /// `SCHED_FLAG_RESET_ON_FORK` of `sched_attr.sched_flags`.
        const FLAG_RESET_ON_FORK: u64 = 1;
        if let Ok(a) = crate::sys::sched::getattr(0) {
            let policy = a.sched_policy as i32 & !libc::SCHED_RESET_ON_FORK;
            let fair = matches!(
                policy,
                libc::SCHED_OTHER | libc::SCHED_BATCH | libc::SCHED_IDLE
            );
            return OwnSched {
                class: SchedClass {
                    policy,
                    priority: a.sched_priority as i32,
                },
                nice: fair.then_some(a.sched_nice),
                reset_on_fork: a.sched_flags & FLAG_RESET_ON_FORK != 0,
            };
        }
        OwnSched {
            class: prio::current(),
            nice: None,
            reset_on_fork: crate::sys::sched::getscheduler(0)
                .is_ok_and(|p| p & libc::SCHED_RESET_ON_FORK != 0),
        }
    }
}

/// The calling thread's CPU set; `None` if it cannot be read.
fn own_cpus() -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    crate::sys::sched::getaffinity(0, &mut set).ok()?;
    Some(set)
}

/// True if `a` and `b` hold the same CPUs.
fn same_cpus(a: &libc::cpu_set_t, b: &libc::cpu_set_t) -> bool {
    // SAFETY: CPU_EQUAL only reads the two sets.
    unsafe { libc::CPU_EQUAL(a, b) }
}

/// Moves the calling thread to CPU set `cpus` where it is elsewhere. A set
/// it may not take (its CPUs gone from the thread's cpuset since) leaves it
/// as it is, as for the class.
fn take_cpus(cpus: Option<&libc::cpu_set_t>) {
    if let Some(want) = cpus {
        if !own_cpus().is_some_and(|s| same_cpus(&s, want)) {
            let _ = crate::sys::sched::setaffinity(0, want);
        }
    }
}

/// The scheduling class a thread created by the calling thread starts at:
/// its own, or `SCHED_OTHER` where `SCHED_RESET_ON_FORK` resets a real-time
/// or deadline class, as the kernel does (its nice value then starts at 0:
/// [`submitter_nice`]).
fn submitter_class() -> SchedClass {
    let class = prio::current();
    let reset =
        crate::sys::sched::getscheduler(0).is_ok_and(|p| p & libc::SCHED_RESET_ON_FORK != 0);
    if reset && (class.is_rt() || class.policy == libc::SCHED_DEADLINE) {
        SchedClass::OTHER
    } else {
        class
    }
}

/// The nice value a thread created by the calling thread starts at (Linux
/// keeps one per thread, and a new thread takes its creator's): its own, or 0
/// where `SCHED_RESET_ON_FORK` resets it, as the kernel does for a real-time
/// or deadline thread or a negative value. `None` if it cannot be read.
fn submitter_nice() -> Option<i32> {
    let nice = own_nice()?;
    let reset = crate::sys::sched::getscheduler(0).is_ok_and(|p| {
        p & libc::SCHED_RESET_ON_FORK != 0
            && (nice < 0
                || matches!(
                    p & !libc::SCHED_RESET_ON_FORK,
                    libc::SCHED_FIFO | libc::SCHED_RR | libc::SCHED_DEADLINE
                ))
    });
    Some(if reset { 0 } else { nice })
}

/// The calling thread's own id, for the per-thread nice value calls (Linux
/// applies `PRIO_PROCESS` to the one thread a tid names).
fn own_pid() -> Option<rustix::process::Pid> {
    rustix::process::Pid::from_raw(crate::sys::tid::current() as i32)
}

/// The calling thread's nice value (`getpriority` on its tid).
fn own_nice() -> Option<i32> {
    rustix::process::getpriority_process(own_pid()).ok()
}

/// Moves the calling thread to nice value `nice` where it is elsewhere
/// (`now`: its current value if known, else read). A value it may not take
/// (lower than its own, without CAP_SYS_NICE or `RLIMIT_NICE`) leaves it as
/// it is, as for the class.
fn take_nice(nice: Option<i32>, now: Option<i32>) {
    if let Some(n) = nice {
        if now.or_else(own_nice) != Some(n) {
            let _ = rustix::process::setpriority_process(own_pid(), n);
        }
    }
}

/// Blocks every signal in the calling thread, for good (glibc keeps its
/// internal ones).
fn block_every_signal() {
    let mut all = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigfillset initializes `all`; pthread_sigmask reads it and
    // changes only the calling thread's mask.
    unsafe {
        libc::sigfillset(all.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, all.as_ptr(), std::ptr::null_mut());
    }
}

fn run(sh: Arc<Shared>) {
    // A thread takes the class, nice value and CPU set of the thread that
    // starts it: after the first, often an engine thread (a pool worker, at
    // SCHED_BATCH or at a real-time request's class). Every callback runs at
    // the program's class, nice value and CPU set instead, on either engine.
    // Set once a callback left SCHED_RESET_ON_FORK that this thread may not
    // clear (see take_pool_sched).
    let mut flag_stays = false;
    take_pool_sched(&sh, &mut flag_stays);
    let mut st = sh.st.lock().unwrap_or_else(|p| p.into_inner());
    st.starting -= 1;
    loop {
        if let Some((cb, v)) = st.queue.pop_front() {
            drop(st);
            // A panicking callback must not take the notification thread down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(v)));
            // The callback usually submitted the next request: reap it here (a
            // cached read is complete already), so its callback runs on this
            // thread next, without a hand-off through the completion thread.
            // (Counted as idle from here: no program code runs before the
            // thread looks at the queue.)
            sh.reaping.fetch_add(1, Ordering::SeqCst);
            // Each callback runs as if on a new thread: what this one changed
            // in its thread (it is program code) is not the next one's.
            fresh_thread(&sh, &mut flag_stays);
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (sh.reap)()));
            st = sh.st.lock().unwrap_or_else(|p| p.into_inner());
            sh.reaping.fetch_sub(1, Ordering::SeqCst);
            continue;
        }
        if st.closed {
            st.threads -= 1;
            return;
        }
        st.waiting += 1;
        let (g, to) = sh
            .cv
            .wait_timeout(st, IDLE_EXIT)
            .unwrap_or_else(|p| p.into_inner());
        st = g;
        st.waiting -= 1;
        if to.timed_out() && st.queue.is_empty() && st.threads > 1 {
            st.threads -= 1;
            return;
        }
    }
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;

/// The name of SIGKILL or SIGSTOP, for [`Notify::validate_signal`]'s message.
fn signal_name(signo: i32) -> &'static str {
    if signo == libc::SIGKILL {
        "SIGKILL"
    } else {
        "SIGSTOP"
    }
}
