//! `struct sigevent` → [`Notify`]: SIGEV_NONE, SIGEV_SIGNAL (with signal 0, the
//! null signal, sending nothing), SIGEV_THREAD (a new
//! thread per notification, created with `sigev_notify_attributes`, as glibc
//! does, at the submitter's class, nice value and CPU set where those do not
//! say otherwise, and tried again later where it cannot be created for the
//! moment, which glibc does not) and SIGEV_THREAD_ID (a queued signal to one
//! thread).

use std::ffi::c_void;
use std::sync::Arc;

use rt::aio::capi::SigEvent;
use rt::aio::{Notify, SigVal};

use crate::debug::debug;
use crate::notify_retry;
use crate::notify_spawn::{self, Creator};
use crate::thread_attr::AttrCopy;

/// Linux's `SIGEV_THREAD_ID`.
pub(crate) const SIGEV_THREAD_ID: i32 = 4;

type NotifyFn = extern "C" fn(libc::sigval);

/// Checks a sigevent and turns it into a notification; `Err(EINVAL)` if invalid.
pub(crate) fn from_sigevent(ev: &SigEvent) -> Result<Notify, i32> {
    match ev.sigev_notify {
        libc::SIGEV_NONE => Ok(Notify::None),
        // Signal 0 is the null signal: nothing to send. A zeroed aiocb (the
        // sigevent never filled in) has it, with sigev_notify 0 = SIGEV_SIGNAL;
        // glibc accepts it, so do we.
        libc::SIGEV_SIGNAL if ev.sigev_signo == 0 => Ok(Notify::None),
        libc::SIGEV_SIGNAL => {
            check_signal(ev.sigev_signo)?;
            Ok(Notify::signal(ev.sigev_signo, SigVal(ev.sigev_value)))
        }
        libc::SIGEV_THREAD => {
            if ev.un[0] == 0 {
                debug(format_args!(
                    "SIGEV_THREAD without sigev_notify_function: EINVAL"
                ));
                return Err(libc::EINVAL);
            }
            // SAFETY: a non-null `sigev_notify_function` is, by the C contract, a
            // function `void (*)(union sigval)`; `union sigval` is one pointer-sized
            // word passed like `libc::sigval`.
            let f: NotifyFn = unsafe { std::mem::transmute::<usize, NotifyFn>(ev.un[0]) };
            let attr = ev.un[1] as *const libc::pthread_attr_t;
            // Copied now: the program may destroy its object once the call
            // returned (see `thread_attr`).
            // Whatever the attributes: no attribute sets a nice value.
            let (submitter, nice) = submitter_sched();
            let attr = if attr.is_null() {
                None
            } else {
                // SAFETY: a non-null `sigev_notify_attributes` is, by the C
                // contract, a valid initialized attribute object.
                match unsafe { copy_attr(attr, submitter) } {
                    Ok(a) => Some(Arc::new(a)),
                    Err(e) => {
                        debug(format_args!(
                            "sigev_notify_attributes could not be copied (errno {e})"
                        ));
                        return Err(if e == libc::ENOMEM { libc::EAGAIN } else { e });
                    }
                }
            };
            let inherits = attr.as_ref().map_or(true, |a| a.inherits_class());
            let class = inherits.then_some(submitter);
            let names_cpus = attr.as_ref().is_some_and(|a| a.names_cpus());
            let cpus = if names_cpus { None } else { own_cpus() };
            let via = creator(submitter, nice);
            let name = own_name();
            Ok(Notify::thread(SigVal(ev.sigev_value), move |v| {
                let sched = Sched {
                    class,
                    nice,
                    cpus,
                    name,
                };
                spawn_notify(f, attr.clone(), sched, via.clone(), v)
            }))
        }
        SIGEV_THREAD_ID => {
            check_signal(ev.sigev_signo)?;
            let tid = ev.un[0] as u32 as i32;
            if tid <= 0 || !thread_exists(tid) {
                debug(format_args!(
                    "SIGEV_THREAD_ID names no thread of this process ({tid}): EINVAL"
                ));
                return Err(libc::EINVAL);
            }
            // Sent by the thread that completes the request, before it lets
            // go of the engine lock, as SIGEV_SIGNAL's: before any waiter
            // can see the request done.
            Ok(Notify::thread_signal(
                tid,
                ev.sigev_signo,
                SigVal(ev.sigev_value),
            ))
        }
        other => {
            debug(format_args!("sigev_notify {other} is not SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD or SIGEV_THREAD_ID: EINVAL"));
            Err(libc::EINVAL)
        }
    }
}

/// A signal the program can handle: a standard one but SIGKILL and SIGSTOP,
/// or a real-time one. Not those between (32 and 33 with glibc): glibc's own,
/// whose handlers `sigaction` refuses to install and whose default action
/// ends the process.
fn check_signal(signo: i32) -> Result<(), i32> {
    let usable = (1..=libc::SIGSYS).contains(&signo)
        || (libc::SIGRTMIN()..=libc::SIGRTMAX()).contains(&signo);
    if !usable || signo == libc::SIGKILL || signo == libc::SIGSTOP {
        debug(format_args!("signal number {signo} is not valid: EINVAL"));
        return Err(libc::EINVAL);
    }
    Ok(())
}

/// The copy of the program's attribute object `src` for a submitter at
/// `submitter`: with its priority where the object names a real-time policy
/// and no priority and the submitter has one (see
/// [`AttrCopy::lacks_priority`]); glibc's notification thread, made by a
/// thread at the submitter's class, takes it.
///
/// # Safety
/// As [`AttrCopy::new`]'s.
unsafe fn copy_attr(src: *const libc::pthread_attr_t, submitter: Class) -> Result<AttrCopy, i32> {
    // SAFETY: the caller's contract.
    let mut a = unsafe { AttrCopy::new(src) }?;
    let rt = matches!(submitter.policy, libc::SCHED_FIFO | libc::SCHED_RR);
    if a.lacks_priority() && rt {
        a.set_priority(submitter.priority)?;
    }
    Ok(a)
}

/// The thread that creates the notification threads of a submitter at
/// real-time class `class` and nice value `nice`, where the library's other
/// threads may not take that class (see `notify_spawn`): a thread started at
/// that class by the submitter, the calling thread. `None` where any thread
/// creates them.
fn creator(class: Class, nice: Option<i32>) -> Option<Arc<Creator>> {
    if !notify_spawn::needed(class.policy, class.priority) {
        return None;
    }
    notify_spawn::get(notify_spawn::Key {
        policy: class.policy,
        priority: class.priority,
        nice,
    })
}

fn thread_exists(tid: i32) -> bool {
    // SAFETY: tgkill with signal 0 only checks that the thread exists.
    unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, 0) == 0 }
}

/// A thread's scheduling policy and priority.
#[derive(Clone, Copy)]
struct Class {
    policy: i32,
    priority: i32,
}

/// Linux's `SCHED_DEADLINE`.
const SCHED_DEADLINE: i32 = 6;

/// The kernel's `struct sched_attr`, version 0 (48 bytes), as
/// `sched_getattr` fills it.
#[repr(C)]
#[derive(Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// `SCHED_FLAG_RESET_ON_FORK` of `sched_attr.sched_flags`.
const FLAG_RESET_ON_FORK: u64 = 1;

/// The class and nice value a thread created by the calling thread starts at
/// ([`submitter_class`], [`submitter_nice`]) from one `sched_getattr` (the
/// kernel reports the nice value of the non-real-time policies only: a
/// real-time thread's is read apart), or from the calls those make where it
/// is refused (seccomp).
fn submitter_sched() -> (Class, Option<i32>) {
    let mut a = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: `a` is writable for `size` bytes, which the kernel writes at
    // most; it is about the calling thread.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            0,
            &mut a as *mut SchedAttr,
            size,
            0u32,
        )
    };
    if r != 0 {
        return (submitter_class(), submitter_nice());
    }
    let policy = a.policy as i32;
    let rt = matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE);
    let reset = a.flags & FLAG_RESET_ON_FORK != 0;
    if reset && rt {
        // As submitter_class and submitter_nice: SCHED_OTHER at nice 0.
        let other = Class {
            policy: libc::SCHED_OTHER,
            priority: 0,
        };
        return (other, Some(0));
    }
    let class = Class {
        policy,
        priority: a.priority as i32,
    };
    let nice = if rt { own_nice() } else { Some(a.nice) };
    (class, nice.map(|n| if reset && n < 0 { 0 } else { n }))
}

/// The class a thread created by the calling thread starts at, as the kernel
/// sees it (a class set with `sched_setscheduler` on the thread's tid too):
/// its own, or `SCHED_OTHER` where `SCHED_RESET_ON_FORK` resets it.
fn submitter_class() -> Class {
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: both calls are about the calling thread; `p` has room.
    let policy = unsafe {
        let policy = libc::sched_getscheduler(0);
        if policy < 0 || libc::sched_getparam(0, &mut p) != 0 {
            return Class {
                policy: libc::SCHED_OTHER,
                priority: 0,
            };
        }
        policy
    };
    let reset = policy & libc::SCHED_RESET_ON_FORK != 0;
    let policy = policy & !libc::SCHED_RESET_ON_FORK;
    if reset && matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE) {
        // The threads it creates start at SCHED_OTHER: so would glibc's
        // helper thread, and the notification thread made from it.
        return Class {
            policy: libc::SCHED_OTHER,
            priority: 0,
        };
    }
    Class {
        policy,
        priority: p.sched_priority,
    }
}

/// The nice value a thread created by the calling thread starts at, as the
/// kernel sees it (Linux keeps one per thread, set with `setpriority` on the
/// thread's tid, and a new thread takes its creator's): its own, or 0 where
/// `SCHED_RESET_ON_FORK` resets it (for a real-time thread, or a negative
/// value). `None` if it cannot be read.
fn submitter_nice() -> Option<i32> {
    let nice = own_nice()?;
    // SAFETY: about the calling thread; no memory is passed.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy >= 0 && policy & libc::SCHED_RESET_ON_FORK != 0 {
        let policy = policy & !libc::SCHED_RESET_ON_FORK;
        if nice < 0 || matches!(policy, libc::SCHED_FIFO | libc::SCHED_RR | SCHED_DEADLINE) {
            return Some(0);
        }
    }
    Some(nice)
}

/// The calling thread's nice value (Linux keeps one per thread); `None` if
/// it cannot be read.
fn own_nice() -> Option<i32> {
    let tid = rt::sched::gettid().as_raw();
    // The system call, not glibc's `getpriority`: it returns `20 - nice`
    // (1..=40), so -1 is only a failure, without clearing and reading errno
    // (glibc's wrapper returns the nice value, for which -1 is valid).
    // SAFETY: getpriority takes plain integers and reads the nice value of
    // thread `tid` (this one).
    let r = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, tid) };
    (r >= 0).then(|| 20 - r as i32)
}

/// The calling thread's CPU set; `None` if it cannot be read (a kernel with
/// more CPUs than `cpu_set_t` names).
fn own_cpus() -> Option<libc::cpu_set_t> {
    // SAFETY: an all-zero cpu_set_t is a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `set` has room for `size` bytes; about the calling thread.
    let r = unsafe { libc::sched_getaffinity(0, size, &mut set) };
    (r == 0).then_some(set)
}

/// The calling thread's name (`PR_GET_NAME`); `None` if it cannot be read.
fn own_name() -> Option<[u8; 16]> {
    let mut name = [0u8; 16];
    // SAFETY: PR_GET_NAME writes at most 16 bytes (NUL included) into `name`,
    // about the calling thread.
    let r = unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr(), 0, 0, 0) };
    (r == 0).then_some(name)
}

/// Where a notification's function runs, taken from its submitter when the
/// request was submitted (see [`spawn_notify`]).
#[derive(Clone, Copy)]
struct Sched {
    /// The class, for a thread that inherits its creator's.
    class: Option<Class>,
    nice: Option<i32>,
    /// The CPU set, where the attributes name none.
    cpus: Option<libc::cpu_set_t>,
    /// The thread's name (`PR_SET_NAME`, 15 bytes and a NUL).
    name: Option<[u8; 16]>,
}

struct Call {
    f: NotifyFn,
    value: usize,
    /// The copy of the program's attributes (`None`: detached defaults).
    attr: Option<Arc<AttrCopy>>,
    /// The class, nice value and CPU set the function runs at: the
    /// submitter's (see [`spawn_notify`]).
    sched: Sched,
    /// The thread that creates the function's thread, where it is not the
    /// one that fires the notification (see [`creator`]).
    via: Option<Arc<Creator>>,
}

extern "C" fn trampoline(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Box<Call>` leaked by `spawn_notify` for this thread.
    let call = unsafe { Box::from_raw(arg as *mut Call) };
    // The thread was made by whichever thread reaped the completion (one of the
    // library's, which block every signal, or a program thread): start the
    // program's function with no signal blocked, as glibc does.
    let mut none = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initializes `none`; pthread_sigmask reads it.
    unsafe {
        libc::sigemptyset(none.as_mut_ptr());
        libc::pthread_sigmask(libc::SIG_SETMASK, none.as_ptr(), std::ptr::null_mut());
    }
    if let Some(name) = &call.sched.name {
        // The submitter's name, which a thread it created would have, not
        // that of the library's thread that created this one.
        // SAFETY: `name` is NUL-terminated (PR_GET_NAME wrote at most 15
        // bytes and a NUL); PR_SET_NAME reads it and names this thread.
        unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr(), 0, 0, 0) };
    }
    if let Some(want) = &call.sched.cpus {
        // First: a real-time class taken below never runs on the creator's
        // CPUs. A set this thread may not take (its CPUs gone from the
        // cpuset since) leaves it as created.
        take_cpus(want);
    }
    if let Some(c) = call.sched.class {
        let p = libc::sched_param {
            sched_priority: c.priority,
        };
        // SAFETY: `p` is a valid sched_param the call only reads. A class
        // this thread may not take (SCHED_DEADLINE) leaves it as created.
        unsafe { libc::pthread_setschedparam(libc::pthread_self(), c.policy, &p) };
    }
    if let Some(nice) = call.sched.nice {
        let tid = rt::sched::gettid().as_raw();
        // SAFETY: setpriority changes the nice value of thread `tid` (this
        // one); no memory is passed. A value this thread may not take (lower
        // than its creator's, without CAP_SYS_NICE or RLIMIT_NICE) leaves it
        // as created.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    }
    (call.f)(libc::sigval {
        sival_ptr: call.value as *mut c_void,
    });
    std::ptr::null_mut()
}

/// Moves the calling thread to CPU set `want` where it is elsewhere.
fn take_cpus(want: &libc::cpu_set_t) {
    // SAFETY: CPU_EQUAL only reads the two sets.
    if own_cpus().is_some_and(|now| unsafe { libc::CPU_EQUAL(&now, want) }) {
        return;
    }
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `want` is a valid set of `size` bytes the call only reads; it
    // changes the calling thread only.
    unsafe { libc::sched_setaffinity(0, size, want) };
}

/// Runs `f(value)` on a new thread made with `attr`, the copy of the
/// program's attributes (or detached defaults). A thread that cannot be
/// created for the moment (EAGAIN) is tried again later by `notify_retry`;
/// after another error the notification is lost (a debug line says so), as
/// glibc loses it at any.
///
/// `sched.class`: the class of the thread that submitted the request, when `attr`
/// lets the new thread inherit its creator's. The creator is whichever thread
/// noticed the completion, often one of the library's, whose class is its own
/// (the thread engine's workers rest at `SCHED_BATCH`); glibc's notification
/// thread inherits from its AIO helper, made by the program's thread: the
/// function runs at the submitter's class instead. `sched.nice`: the nice value of
/// the thread that submitted the request, which a new thread inherits with
/// any attributes; the function runs at it, not at the creator's, likewise.
/// `sched.cpus`: the CPU set of the thread that submitted the request, where
/// `attr` names none (which a thread it created would take); the function
/// runs on it, not on the creator's (the notification pool's, that of the
/// first thread that asked for `SIGEV_THREAD`). `sched.name`: the name of
/// the thread that submitted the request, which a new thread takes; the
/// function's thread has it, not the creator's (the library's thread names).
/// The four are read at submission, each time (a C program changes them
/// with glibc's calls, which the library does not see): one
/// `sched_getattr`, one `sched_getaffinity` and one `prctl` for a
/// `SIGEV_THREAD` request, none for the others.
/// `via`: for a submitter at a real-time class that the library's threads
/// may not take (no CAP_SYS_NICE, `RLIMIT_RTPRIO` below its priority; a
/// `capget` and a `getrlimit` at submission, for a real-time submitter only),
/// a thread the submitter started at its class, which creates the thread
/// instead: the thread starts at that class, and keeps it, or takes the
/// attributes' explicit one at or below it, as glibc's would.
fn spawn_notify(
    f: NotifyFn,
    attr: Option<Arc<AttrCopy>>,
    sched: Sched,
    via: Option<Arc<Creator>>,
    value: SigVal,
) {
    let call = Box::into_raw(Box::new(Call {
        f,
        value: value.0,
        attr,
        sched,
        via,
    }));
    // SAFETY: `call` is a leaked `Box<Call>` no thread has taken.
    match unsafe { create(call as usize) } {
        Ok(()) => notify_retry::kick(),
        Err(e) if notify_retry::transient(e) => {
            debug(format_args!(
                "SIGEV_THREAD: pthread_create failed with errno {e}; trying again later"
            ));
            notify_retry::defer(call as usize, create, forget);
        }
        Err(e) => {
            // SAFETY: the thread was not created, so `call` is still ours.
            unsafe { forget(call as usize) };
            debug(format_args!(
                "SIGEV_THREAD: pthread_create failed with errno {e}; notification lost"
            ));
        }
    }
}

/// Frees the `Box<Call>` at `arg` of a notification whose thread was never
/// created.
///
/// # Safety
/// `arg` is a leaked `Box<Call>` that no thread has taken.
unsafe fn forget(arg: usize) {
    // SAFETY: the caller's contract.
    drop(unsafe { Box::from_raw(arg as *mut Call) });
}

/// [`create_here`] on the thread that creates the notification threads of
/// the `Box<Call>` at `arg`'s submitter, where it has one (see [`creator`]),
/// else on the calling thread.
///
/// # Safety
/// `arg` is a leaked `Box<Call>` that no thread has taken.
unsafe fn create(arg: usize) -> Result<(), i32> {
    let call = arg as *mut Call;
    // Kept for the call: the thread created may free its `Call`.
    // SAFETY: `call` is ours until a thread is created (contract).
    let via = unsafe { (*call).via.clone() };
    match via {
        // SAFETY: the contract, passed on.
        Some(c) => unsafe { c.create(arg, create_here) },
        // SAFETY: the contract, passed on.
        None => unsafe { create_here(arg) },
    }
}

/// `pthread_create` of a notification thread for the `Box<Call>` at `arg`,
/// with its attributes (copied detached) or detached defaults; the
/// errno if refused (`arg` is then still the caller's).
///
/// # Safety
/// `arg` is a leaked `Box<Call>` that no thread has taken.
unsafe fn create_here(arg: usize) -> Result<(), i32> {
    let call = arg as *mut Call;
    // The thread frees its `Call`, and with it perhaps the last handle of
    // the attributes, as soon as it runs: this one lasts the call.
    // SAFETY: `call` is ours until a thread is created (contract).
    let attr = unsafe { (*call).attr.clone() };
    let mut tid: libc::pthread_t = 0;
    let Some(attr) = attr else {
        let mut a = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: pthread_attr_init initializes `a`; it is destroyed below.
        unsafe {
            if libc::pthread_attr_init(a.as_mut_ptr()) != 0 {
                return Err(libc::ENOMEM);
            }
            libc::pthread_attr_setdetachstate(a.as_mut_ptr(), libc::PTHREAD_CREATE_DETACHED);
            let r = libc::pthread_create(&mut tid, a.as_ptr(), trampoline, call as *mut c_void);
            libc::pthread_attr_destroy(a.as_mut_ptr());
            if r != 0 {
                return Err(r);
            }
        }
        return Ok(());
    };
    // SAFETY: the copy is a valid attribute object, alive for the call.
    let r =
        unsafe { libc::pthread_create(&mut tid, attr.as_ptr(), trampoline, call as *mut c_void) };
    if r != 0 {
        return Err(r);
    }
    // (Created detached: `tid` may name another thread already, see
    // `thread_attr`.)
    Ok(())
}
