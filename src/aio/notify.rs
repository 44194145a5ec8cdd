//! Completion notification: none, a queued real-time signal, or a callback on a
//! notification thread (`struct sigevent` with `SIGEV_NONE`, `SIGEV_SIGNAL`,
//! `SIGEV_THREAD`).

use std::fmt;
use std::sync::Arc;

use crate::{Error, Result};

/// The value carried by a notification (`union sigval`): an integer or a pointer-sized
/// word, chosen by the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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
pub enum Notify {
    /// `SIGEV_NONE`: no notification; poll with `error`, wait with `suspend`.
    #[default]
    None,
    /// `SIGEV_SIGNAL`: a queued signal `signo` with `si_code == SI_ASYNCIO` and
    /// `si_value == value`, sent to the process like `sigqueue(3)`.
    Signal {
        /// The signal number, usually `SIGRTMIN() + n`.
        signo: i32,
        /// The value the handler finds in `si_value`.
        value: SigVal,
    },
    /// `SIGEV_THREAD`: `callback(value)` runs on the context's notification thread.
    /// The callback may submit new requests.
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
        Notify::Signal {
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
            _ => Ok(()),
        }
    }

    fn validate_signal(signo: i32, call: &'static str) -> Result<()> {
        if signo <= 0
            || signo > libc::SIGRTMAX()
            || signo == libc::SIGKILL
            || signo == libc::SIGSTOP
        {
            return Err(Error::invalid(call, format!("signal number {signo} is not valid"))
                    .with_hint(format!(
                        "use a real-time signal in SIGRTMIN..=SIGRTMAX ({}..={}) with a handler installed",
                        libc::SIGRTMIN(),
                        libc::SIGRTMAX()
                    )));
        }
        Ok(())
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
            Notify::Thread { value, .. } => f.debug_struct("Thread").field("value", value).finish(),
        }
    }
}

/// `si_code` of an AIO completion signal.
pub const SI_ASYNCIO: i32 = -4;

/// The kernel's `siginfo_t` for a queued signal (`_rt` member of the union).
#[repr(C)]
struct KernelSigInfo {
    signo: i32,
    errno: i32,
    code: i32,
    _pad: i32,
    pid: i32,
    uid: u32,
    value: usize,
    _rest: [u8; 128 - 32],
}

/// Queues `signo` with `value` and `SI_ASYNCIO` to this process.
pub(crate) fn send_signal(signo: i32, value: SigVal) {
    let info = KernelSigInfo {
        signo,
        errno: 0,
        code: SI_ASYNCIO,
        _pad: 0,
        pid: std::process::id() as i32,
        // SAFETY: getuid has no preconditions.
        uid: unsafe { libc::getuid() },
        value: value.0,
        _rest: [0; 96],
    };
    // SAFETY: rt_sigqueueinfo reads a 128-byte siginfo from `info`, which is valid for
    // the call. Sending to our own pid with a negative si_code is always allowed.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigqueueinfo,
            std::process::id() as libc::pid_t,
            signo,
            &info as *const KernelSigInfo,
        );
    }
}

/// A notification due to fire once the engine lock is released.
pub(crate) enum Fire {
    Signal(i32, SigVal),
    Thread(Callback, SigVal),
}

impl Fire {
    pub(crate) fn from_notify(n: Notify) -> Option<Fire> {
        match n {
            Notify::None => None,
            Notify::Signal { signo, value } => Some(Fire::Signal(signo, value)),
            Notify::Thread { callback, value } => Some(Fire::Thread(callback, value)),
        }
    }
}

/// The notification thread: runs `SIGEV_THREAD` callbacks in completion order.
pub(crate) struct Notifier {
    tx: crossbeam_channel::Sender<(Callback, SigVal)>,
}

impl Notifier {
    pub(crate) fn start() -> Result<Notifier> {
        let (tx, rx) = crossbeam_channel::unbounded::<(Callback, SigVal)>();
        std::thread::Builder::new()
            .name("posixrt-aio-notify".into())
            .spawn(move || {
                while let Ok((cb, v)) = rx.recv() {
                    // A panicking callback must not take the notification thread down.
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(v)));
                }
            })
            .map_err(|e| {
                Error::from_errno("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN))
                    .with_message("starting the AIO notification thread")
            })?;
        Ok(Notifier { tx })
    }

    pub(crate) fn post(&self, cb: Callback, v: SigVal) {
        let _ = self.tx.send((cb, v));
    }
}
