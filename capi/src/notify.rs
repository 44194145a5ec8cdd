//! `struct sigevent` → [`Notify`]: SIGEV_NONE, SIGEV_SIGNAL (with signal 0, the
//! null signal, sending nothing), SIGEV_THREAD (a new
//! thread per notification, created with `sigev_notify_attributes`, as glibc
//! does, and tried again later where it cannot be created for the moment,
//! which glibc does not) and SIGEV_THREAD_ID (a queued signal to one thread).

use std::ffi::c_void;
use std::sync::Arc;

use rt::aio::capi::SigEvent;
use rt::aio::{Notify, SigVal};

use crate::debug::debug;
use crate::notify_retry;
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
            let attr = if attr.is_null() {
                None
            } else {
                // SAFETY: a non-null `sigev_notify_attributes` is, by the C
                // contract, a valid initialized attribute object.
                match unsafe { AttrCopy::new(attr) } {
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
            let class = inherits.then(submitter_class);
            // Whatever the attributes: no attribute sets a nice value.
            let nice = submitter_nice();
            Ok(Notify::thread(SigVal(ev.sigev_value), move |v| {
                spawn_notify(f, attr.clone(), class, nice, v)
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
    let tid = rt::sched::gettid().as_raw();
    // The system call, not glibc's `getpriority`: it returns `20 - nice`
    // (1..=40), so -1 is only a failure, without clearing and reading errno
    // (glibc's wrapper returns the nice value, for which -1 is valid).
    // SAFETY: getpriority takes plain integers and reads the nice value of
    // thread `tid` (this one).
    let r = unsafe { libc::syscall(libc::SYS_getpriority, libc::PRIO_PROCESS, tid) };
    if r < 0 {
        return None;
    }
    let nice = 20 - r as i32;
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

struct Call {
    f: NotifyFn,
    value: usize,
    /// The copy of the program's attributes (`None`: detached defaults).
    attr: Option<Arc<AttrCopy>>,
    /// The class the function runs at, for a thread that inherited its
    /// creator's: the submitter's (see [`spawn_notify`]).
    class: Option<Class>,
    /// The nice value the function runs at: the submitter's (see
    /// [`spawn_notify`]).
    nice: Option<i32>,
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
    if let Some(c) = call.class {
        let p = libc::sched_param {
            sched_priority: c.priority,
        };
        // SAFETY: `p` is a valid sched_param the call only reads. A class
        // this thread may not take (SCHED_DEADLINE) leaves it as created.
        unsafe { libc::pthread_setschedparam(libc::pthread_self(), c.policy, &p) };
    }
    if let Some(nice) = call.nice {
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

/// Runs `f(value)` on a new thread made with `attr`, the copy of the
/// program's attributes (or detached defaults). A thread that cannot be
/// created for the moment (EAGAIN) is tried again later by `notify_retry`;
/// after another error the notification is lost (a debug line says so), as
/// glibc loses it at any.
///
/// `class`: the class of the thread that submitted the request, when `attr`
/// lets the new thread inherit its creator's. The creator is whichever thread
/// noticed the completion, often one of the library's, whose class is its own
/// (the thread engine's workers rest at `SCHED_BATCH`); glibc's notification
/// thread inherits from its AIO helper, made by the program's thread: the
/// function runs at the submitter's class instead. `nice`: the nice value of
/// the thread that submitted the request, which a new thread inherits with
/// any attributes; the function runs at it, not at the creator's, likewise.
fn spawn_notify(
    f: NotifyFn,
    attr: Option<Arc<AttrCopy>>,
    class: Option<Class>,
    nice: Option<i32>,
    value: SigVal,
) {
    let call = Box::into_raw(Box::new(Call {
        f,
        value: value.0,
        attr,
        class,
        nice,
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

/// `pthread_create` of a notification thread for the `Box<Call>` at `arg`,
/// with its attributes (or detached defaults), detached either way; the
/// errno if refused (`arg` is then still the caller's).
///
/// # Safety
/// `arg` is a leaked `Box<Call>` that no thread has taken.
unsafe fn create(arg: usize) -> Result<(), i32> {
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
    if attr.joinable() {
        // Nobody joins a notification thread.
        // SAFETY: `tid` was just created joinable, and is detached once.
        unsafe { libc::pthread_detach(tid) };
    }
    Ok(())
}
