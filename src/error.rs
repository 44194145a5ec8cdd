//! One error type for the whole crate.
//!
//! Every fallible call in posixrt returns [`Result<T>`](crate::Result). An [`Error`]
//! carries:
//!
//! - the **errno** the kernel or libc gave (if any),
//! - the **call** that failed (`"sched_setscheduler"`, `"io_uring_setup"`, ...),
//! - a **kind** you can match on ([`ErrorKind`]),
//! - an optional **hint** that tells the fix, in words a user can act on
//!   ("needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 50; soft limit is 0, hard 0; run as
//!   root, `setcap cap_sys_nice+ep BINARY`, or raise `rtprio` in
//!   /etc/security/limits.conf").
//!
//! It implements [`std::error::Error`] and converts into [`std::io::Error`] (keeping
//! the errno when there is one), so `?` works in functions returning `io::Result`.
//!
//! ```
//! use posixrt::{Error, ErrorKind};
//!
//! let e = Error::from_errno("sched_setscheduler", libc::EPERM)
//!     .with_hint("needs CAP_SYS_NICE");
//! assert_eq!(e.kind(), ErrorKind::PermissionDenied);
//! assert_eq!(e.errno(), Some(libc::EPERM));
//! assert_eq!(e.call(), "sched_setscheduler");
//! assert!(e.to_string().contains("CAP_SYS_NICE"));
//!
//! // Into io::Error: the hint's text survives, and the errno is one downcast away.
//! let io: std::io::Error = e.into();
//! assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
//! let inner = io.get_ref().and_then(|e| e.downcast_ref::<Error>());
//! assert_eq!(inner.and_then(Error::errno), Some(libc::EPERM));
//!
//! // A bare errno error converts to a raw OS error.
//! let bare: std::io::Error = Error::from_errno("close", libc::EBADF).into();
//! assert_eq!(bare.raw_os_error(), Some(libc::EBADF));
//! ```

use std::borrow::Cow;
use std::fmt;
use std::io;

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in a form to match on.
///
/// Derived from the errno when an [`Error`] is built from one; set explicitly for
/// errors that posixrt itself detects (bad input, a request already taken, a cut log).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument is out of range or malformed (EINVAL, or checked before any call).
    InvalidInput,
    /// The caller lacks a privilege or a resource limit forbids it (EPERM, EACCES).
    PermissionDenied,
    /// The target (thread, process, file, object) does not exist (ESRCH, ENOENT).
    NotFound,
    /// The resource is busy, e.g. SCHED_DEADLINE admission control refused (EBUSY).
    Busy,
    /// The operation would block, or a resource is temporarily exhausted (EAGAIN).
    WouldBlock,
    /// A timeout expired (ETIMEDOUT).
    TimedOut,
    /// The operation was interrupted by a signal (EINTR).
    Interrupted,
    /// Not supported by this kernel, filesystem or build (ENOSYS, EOPNOTSUPP, ENOTSUP).
    Unsupported,
    /// Out of memory, room or another resource: memory (ENOMEM, ENOBUFS),
    /// room on a device or in a disk quota (ENOSPC, EDQUOT), file
    /// descriptors (EMFILE, ENFILE). As an [`io::Error`], ENOSPC and EDQUOT
    /// have std's storage kinds (`StorageFull`, `QuotaExceeded`), as a
    /// `std::fs` error of theirs has (see the `From` conversion).
    OutOfResources,
    /// A bad file descriptor (EBADF).
    BadFd,
    /// The request was cancelled (ECANCELED).
    Canceled,
    /// The request is still in progress (EINPROGRESS).
    InProgress,
    /// A value that may be taken once was already taken (e.g. `aio_return` twice).
    AlreadyTaken,
    /// Data ended early: a log cut short, a record cut off.
    Truncated,
    /// Data is malformed: a checksum mismatch, an unknown format version.
    Corrupt,
    /// A deadlock would occur, or the caller already owns the lock (EDEADLK).
    Deadlock,
    /// The object is in a state that does not allow the operation
    /// (e.g. unlocking a mutex the caller does not own: EPERM from a lock is mapped here).
    InvalidState,
    /// Anything else; see [`Error::errno`].
    Other,
}

impl ErrorKind {
    /// The kind that usually goes with an errno.
    pub fn from_errno(errno: i32) -> ErrorKind {
        match errno {
            libc::EINVAL | libc::ERANGE | libc::EOVERFLOW | libc::E2BIG | libc::ENAMETOOLONG => {
                ErrorKind::InvalidInput
            }
            libc::EPERM | libc::EACCES => ErrorKind::PermissionDenied,
            libc::ESRCH | libc::ENOENT | libc::ENODEV | libc::ENXIO => ErrorKind::NotFound,
            libc::EBUSY | libc::EEXIST => ErrorKind::Busy,
            libc::EAGAIN => ErrorKind::WouldBlock,
            libc::ETIMEDOUT => ErrorKind::TimedOut,
            libc::EINTR => ErrorKind::Interrupted,
            libc::ENOSYS | libc::EOPNOTSUPP | libc::EAFNOSUPPORT | libc::EPROTONOSUPPORT => {
                ErrorKind::Unsupported
            }
            libc::ENOMEM
            | libc::ENOSPC
            | libc::EDQUOT
            | libc::EMFILE
            | libc::ENFILE
            | libc::ENOBUFS => ErrorKind::OutOfResources,
            libc::EBADF => ErrorKind::BadFd,
            libc::ECANCELED => ErrorKind::Canceled,
            libc::EINPROGRESS => ErrorKind::InProgress,
            libc::EDEADLK => ErrorKind::Deadlock,
            _ => ErrorKind::Other,
        }
    }

    fn io_kind(self) -> io::ErrorKind {
        match self {
            ErrorKind::InvalidInput => io::ErrorKind::InvalidInput,
            ErrorKind::PermissionDenied => io::ErrorKind::PermissionDenied,
            ErrorKind::NotFound => io::ErrorKind::NotFound,
            ErrorKind::WouldBlock => io::ErrorKind::WouldBlock,
            ErrorKind::TimedOut => io::ErrorKind::TimedOut,
            ErrorKind::Interrupted => io::ErrorKind::Interrupted,
            ErrorKind::Unsupported => io::ErrorKind::Unsupported,
            ErrorKind::OutOfResources => io::ErrorKind::OutOfMemory,
            ErrorKind::Truncated => io::ErrorKind::UnexpectedEof,
            ErrorKind::Corrupt => io::ErrorKind::InvalidData,
            _ => io::ErrorKind::Other,
        }
    }
}

/// The crate's error: errno, failing call, kind and a hint that tells the fix.
///
/// Build one with [`Error::from_errno`], [`Error::last_os_error`] or [`Error::new`],
/// then add a hint with [`Error::with_hint`].
///
/// A bare errno and call (what [`Error::from_errno`] makes, e.g. the EINPROGRESS
/// of a request still running) is held inline; an error with a message, a hint
/// or a kind of its own is boxed. Either way an `Error` is three words, so a
/// `Result` of a small value stays small where it is returned and moved.
#[derive(Clone)]
pub struct Error(Repr);

#[derive(Clone)]
enum Repr {
    /// `errno` from `call`; the kind follows the errno.
    Os {
        errno: i32,
        call: &'static str,
    },
    Full(Box<Full>),
}

#[derive(Clone)]
struct Full {
    kind: ErrorKind,
    errno: Option<i32>,
    call: &'static str,
    message: Option<Cow<'static, str>>,
    hint: Option<Cow<'static, str>>,
}

impl PartialEq for Error {
    /// Equal when kind, errno, call, message and hint are.
    fn eq(&self, o: &Error) -> bool {
        self.kind() == o.kind()
            && self.errno() == o.errno()
            && self.call() == o.call()
            && self.message() == o.message()
            && self.hint() == o.hint()
    }
}

impl Eq for Error {}

impl Error {
    /// An error from an errno returned by `call`; the kind follows the errno.
    pub fn from_errno(call: &'static str, errno: i32) -> Error {
        Error(Repr::Os { errno, call })
    }

    /// An error from the calling thread's current `errno`, after `call` failed.
    pub fn last_os_error(call: &'static str) -> Error {
        let errno = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        Error::from_errno(call, errno)
    }

    /// An error that posixrt detected itself (no errno), with a message.
    pub fn new(
        kind: ErrorKind,
        call: &'static str,
        message: impl Into<Cow<'static, str>>,
    ) -> Error {
        Error(Repr::Full(Box::new(Full {
            kind,
            errno: None,
            call,
            message: Some(message.into()),
            hint: None,
        })))
    }

    /// Bad input detected before any system call; carries EINVAL so that it maps to
    /// the errno a C caller would see.
    pub fn invalid(call: &'static str, message: impl Into<Cow<'static, str>>) -> Error {
        Error(Repr::Full(Box::new(Full {
            kind: ErrorKind::InvalidInput,
            errno: Some(libc::EINVAL),
            call,
            message: Some(message.into()),
            hint: None,
        })))
    }

    /// The boxed form, to change.
    fn into_full(self) -> Box<Full> {
        match self.0 {
            Repr::Os { errno, call } => Box::new(Full {
                kind: ErrorKind::from_errno(errno),
                errno: Some(errno),
                call,
                message: None,
                hint: None,
            }),
            Repr::Full(f) => f,
        }
    }

    /// Adds (or replaces) the hint that tells the fix.
    #[must_use]
    pub fn with_hint(self, hint: impl Into<Cow<'static, str>>) -> Error {
        let mut f = self.into_full();
        f.hint = Some(hint.into());
        Error(Repr::Full(f))
    }

    /// Adds (or replaces) a message describing what was attempted.
    #[must_use]
    pub fn with_message(self, message: impl Into<Cow<'static, str>>) -> Error {
        let mut f = self.into_full();
        f.message = Some(message.into());
        Error(Repr::Full(f))
    }

    /// Overrides the kind (e.g. EPERM from `pthread_mutex_unlock` is [`ErrorKind::InvalidState`]).
    #[must_use]
    pub fn with_kind(self, kind: ErrorKind) -> Error {
        let mut f = self.into_full();
        f.kind = kind;
        Error(Repr::Full(f))
    }

    /// What went wrong.
    #[inline]
    pub fn kind(&self) -> ErrorKind {
        match &self.0 {
            Repr::Os { errno, .. } => ErrorKind::from_errno(*errno),
            Repr::Full(f) => f.kind,
        }
    }

    /// The errno, if the failure came from (or maps to) one.
    #[inline]
    pub fn errno(&self) -> Option<i32> {
        match &self.0 {
            Repr::Os { errno, .. } => Some(*errno),
            Repr::Full(f) => f.errno,
        }
    }

    /// The call that failed, e.g. `"sched_setscheduler"`.
    #[inline]
    pub fn call(&self) -> &'static str {
        match &self.0 {
            Repr::Os { call, .. } => call,
            Repr::Full(f) => f.call,
        }
    }

    /// The hint that tells the fix, if there is one.
    pub fn hint(&self) -> Option<&str> {
        match &self.0 {
            Repr::Os { .. } => None,
            Repr::Full(f) => f.hint.as_deref(),
        }
    }

    /// The message describing what was attempted, if there is one.
    pub fn message(&self) -> Option<&str> {
        match &self.0 {
            Repr::Os { .. } => None,
            Repr::Full(f) => f.message.as_deref(),
        }
    }
}

/// An `io::Error` as posixrt's errors show an errno: its text, then the
/// errno's name and number (`"Is a directory (EISDIR 21)"`), where Rust's
/// `Display` ends in `"(os error 21)"`. An error without an errno is shown as
/// it is. For programs that report both (the tools, the examples).
///
/// ```
/// let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
/// assert_eq!(posixrt::error::io_error_text(&e), "No space left on device (ENOSPC 28)");
/// ```
pub fn io_error_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(n) => {
            let text = text
                .strip_suffix(&format!(" (os error {n})"))
                .unwrap_or(&text);
            format!("{text} ({} {n})", errno_name(n))
        }
        None => text,
    }
}

/// The symbolic name of an errno (`"EPERM"`), for messages.
pub fn errno_name(errno: i32) -> &'static str {
    match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::ENOEXEC => "ENOEXEC",
        libc::EBADF => "EBADF",
        libc::ECHILD => "ECHILD",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::EDEADLK => "EDEADLK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOLCK => "ENOLCK",
        libc::ENOSYS => "ENOSYS",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ENOBUFS => "ENOBUFS",
        libc::ESTALE => "ESTALE",
        libc::EDQUOT => "EDQUOT",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EINPROGRESS => "EINPROGRESS",
        libc::ECANCELED => "ECANCELED",
        libc::EOWNERDEAD => "EOWNERDEAD",
        libc::ENOTRECOVERABLE => "ENOTRECOVERABLE",
        _ => "errno",
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed", self.call())?;
        if let Some(m) = self.message() {
            write!(f, ": {m}")?;
        }
        if let Some(e) = self.errno() {
            let text = io::Error::from_raw_os_error(e);
            // io::Error's Display appends " (os error N)"; keep only the text.
            let text = text.to_string();
            let text = text.split(" (os error").next().unwrap_or("");
            write!(f, ": {} ({} {})", text, errno_name(e), e)?;
        }
        if let Some(h) = self.hint() {
            write!(f, "; hint: {h}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind())
            .field("errno", &self.errno().map(|e| (e, errno_name(e))))
            .field("call", &self.call())
            .field("message", &self.message())
            .field("hint", &self.hint())
            .finish()
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    /// A bare errno error becomes `io::Error::from_raw_os_error`, so `raw_os_error()`
    /// answers. One with a message or hint is wrapped instead, so its text survives;
    /// the errno is then reachable through `get_ref()` and a downcast to [`Error`].
    /// Either way the kind is std's for the errnos of storage that std names
    /// more precisely than [`ErrorKind`] does (ENOSPC `StorageFull`, EDQUOT
    /// `QuotaExceeded`, EFBIG `FileTooLarge`, ESPIPE `NotSeekable`, EROFS
    /// `ReadOnlyFilesystem`, as the running std names them),
    /// so code matching on a `std::fs` error's kind matches these too.
    fn from(e: Error) -> io::Error {
        match e.errno() {
            Some(errno) if e.hint().is_none() && e.message().is_none() => {
                io::Error::from_raw_os_error(errno)
            }
            Some(
                errno @ (libc::ENOSPC | libc::EDQUOT | libc::EFBIG | libc::ESPIPE | libc::EROFS),
            ) => {
                // Asked of std rather than named: these kinds are newer than
                // the crate's minimum Rust version.
                io::Error::new(io::Error::from_raw_os_error(errno).kind(), e)
            }
            _ => io::Error::new(e.kind().io_kind(), e),
        }
    }
}

impl From<rustix::io::Errno> for Error {
    /// An errno from a rustix call whose name is unknown here; prefer
    /// [`Error::from_errno`] with the call's name.
    fn from(e: rustix::io::Errno) -> Error {
        Error::from_errno("syscall", e.raw_os_error())
    }
}

/// Turns a libc-style return (`-1` and errno) into a [`Result`]. (The raw calls
/// now live in `sys` and return the errno; kept for callers that still get a
/// libc-style return.)
#[inline]
#[allow(dead_code)]
pub(crate) fn check(call: &'static str, ret: libc::c_int) -> Result<libc::c_int> {
    if ret == -1 {
        Err(Error::last_os_error(call))
    } else {
        Ok(ret)
    }
}

/// Turns a pthread-style return (`0` or an errno value) into a [`Result`].
#[inline]
pub(crate) fn check_pthread(call: &'static str, ret: libc::c_int) -> Result<()> {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(call, ret))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_call_errno_and_hint() {
        let e =
            Error::from_errno("sched_setscheduler", libc::EPERM).with_hint("needs CAP_SYS_NICE");
        let s = e.to_string();
        assert!(s.starts_with("sched_setscheduler failed"), "{s}");
        assert!(s.contains("EPERM"), "{s}");
        assert!(s.contains("hint: needs CAP_SYS_NICE"), "{s}");
    }

    #[test]
    fn bare_and_boxed_forms_agree() {
        let bare = Error::from_errno("aio_error", libc::EINPROGRESS);
        assert_eq!(bare.kind(), ErrorKind::InProgress);
        assert_eq!(bare.errno(), Some(libc::EINPROGRESS));
        assert_eq!(bare.call(), "aio_error");
        assert_eq!((bare.message(), bare.hint()), (None, None));
        // Boxed by `with_kind`, with nothing else changed: still equal.
        let boxed = bare.clone().with_kind(ErrorKind::InProgress);
        assert_eq!(boxed, bare);
        assert_eq!(format!("{boxed:?}"), format!("{bare:?}"));
        assert_eq!(boxed.to_string(), bare.to_string());
        // A hint or another kind makes them differ, and keeps errno and call.
        let hinted = bare.clone().with_hint("wait for it");
        assert_ne!(hinted, bare);
        assert_eq!((hinted.errno(), hinted.call()), (bare.errno(), bare.call()));
        assert_eq!(hinted.hint(), Some("wait for it"));
        assert_ne!(bare.clone().with_kind(ErrorKind::Busy), bare);
        assert_eq!(
            bare.clone().with_kind(ErrorKind::Busy).kind(),
            ErrorKind::Busy
        );
    }

    #[test]
    fn a_result_of_a_word_is_three_words() {
        // Results are returned and moved on every AIO request's path.
        let word = std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<Error>(), 3 * word);
        assert_eq!(std::mem::size_of::<Result<usize>>(), 3 * word);
    }

    #[test]
    fn kinds_follow_errno() {
        assert_eq!(ErrorKind::from_errno(libc::ESRCH), ErrorKind::NotFound);
        assert_eq!(ErrorKind::from_errno(libc::EBUSY), ErrorKind::Busy);
        assert_eq!(ErrorKind::from_errno(libc::EINVAL), ErrorKind::InvalidInput);
        assert_eq!(ErrorKind::from_errno(libc::ECANCELED), ErrorKind::Canceled);
    }

    /// A quota is a storage resource as the room on a device is: EDQUOT has
    /// ENOSPC's kind (it was `Other`), and as an `io::Error` std's
    /// `QuotaExceeded`, as ENOSPC is `StorageFull`, with or without a hint.
    #[test]
    fn a_quota_is_a_resource_as_a_full_device_is() {
        for errno in [libc::ENOSPC, libc::EDQUOT] {
            assert_eq!(ErrorKind::from_errno(errno), ErrorKind::OutOfResources);
            let e = Error::from_errno("write", errno);
            assert_eq!(e.kind(), ErrorKind::OutOfResources);
            assert_eq!(e.clone().with_hint("h").kind(), ErrorKind::OutOfResources);
            // (Named through Debug: these kinds are newer than the crate's
            // minimum Rust version.)
            let want = if errno == libc::EDQUOT {
                "QuotaExceeded"
            } else {
                "StorageFull"
            };
            let bare: io::Error = e.clone().into();
            assert_eq!(format!("{:?}", bare.kind()), want);
            assert_eq!(bare.raw_os_error(), Some(errno));
            let hinted: io::Error = e.with_hint("free some room").into();
            assert_eq!(format!("{:?}", hinted.kind()), want);
            assert!(hinted.to_string().contains("free some room"));
        }
    }

    #[test]
    fn io_conversion_keeps_errno_or_text() {
        let plain: io::Error = Error::from_errno("x", libc::EBADF).into();
        assert_eq!(plain.raw_os_error(), Some(libc::EBADF));
        let hinted: io::Error = Error::invalid("x", "bad").with_hint("fix it").into();
        assert_eq!(hinted.kind(), io::ErrorKind::InvalidInput);
        assert!(hinted.to_string().contains("fix it"));
        let inner = hinted.get_ref().and_then(|e| e.downcast_ref::<Error>());
        assert_eq!(inner.and_then(Error::errno), Some(libc::EINVAL));
    }

    #[test]
    fn check_helpers() {
        assert_eq!(check("x", 3), Ok(3));
        assert_eq!(
            check_pthread("y", libc::EAGAIN).map_err(|e| e.kind()),
            Err(ErrorKind::WouldBlock)
        );
    }
}
