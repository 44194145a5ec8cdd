//! Thread ids: the [`Tid`] type, [`gettid`] and the threads of this process.

use std::fmt;
use std::num::NonZeroI32;

use crate::{Error, Result};

/// A kernel thread id (what `gettid()` returns; the pid of a process is the tid of its
/// main thread).
///
/// # References
///  - [`gettid(2)`](https://man7.org/linux/man-pages/man2/gettid.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid(NonZeroI32);

impl Tid {
    /// A tid from a raw value; `None` unless it is positive. Whether such a thread
    /// exists is only known when it is used (ESRCH gives [`ErrorKind::NotFound`](crate::ErrorKind::NotFound)).
    #[inline]
    pub fn from_raw(raw: i32) -> Option<Tid> {
        if raw > 0 {
            NonZeroI32::new(raw).map(Tid)
        } else {
            None
        }
    }

    /// The raw id.
    #[inline]
    pub fn as_raw(self) -> i32 {
        self.0.get()
    }

    /// The calling thread's tid (`gettid`).
    #[inline]
    ///
    /// # References
    ///  - [`gettid(2)`](https://man7.org/linux/man-pages/man2/gettid.2.html)
    #[doc(alias = "gettid")]
    pub fn current() -> Tid {
        gettid()
    }

    /// The process id, i.e. the tid of the main thread (`getpid`).
    #[inline]
    ///
    /// # References
    ///  - [`getpid(2)`](https://man7.org/linux/man-pages/man2/getpid.2.html)
    #[doc(alias = "getpid")]
    pub fn process() -> Tid {
        Tid(rustix::process::getpid().as_raw_nonzero())
    }
}

impl fmt::Display for Tid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The calling thread's kernel thread id.
///
/// # References
///  - [`gettid(2)`](https://man7.org/linux/man-pages/man2/gettid.2.html)
#[inline]
pub fn gettid() -> Tid {
    let raw = crate::sys::tid::current() as i32;
    // A kernel tid is positive; the fallback is never taken.
    Tid(NonZeroI32::new(raw).unwrap_or(rustix::thread::gettid().as_raw_nonzero()))
}

/// The tids of every thread of this process (`/proc/self/task`).
///
/// # References
///  - [`proc_pid_task(5)`](https://man7.org/linux/man-pages/man5/proc_pid_task.5.html)
pub fn process_threads() -> Result<Vec<Tid>> {
    let dir = std::fs::read_dir("/proc/self/task").map_err(|e| io_error("read_dir", e))?;
    let mut tids: Vec<Tid> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse().ok()))
        .filter_map(Tid::from_raw)
        .collect();
    tids.sort();
    Ok(tids)
}

fn io_error(call: &'static str, e: std::io::Error) -> Error {
    Error::from_errno(call, e.raw_os_error().unwrap_or(libc::EIO))
}

/// The hint for a tid that names no thread (ESRCH, or no `/proc` entry).
pub(crate) const NO_THREAD_HINT: &str = "the thread has exited (tids are reused: take them fresh \
     from process_threads() or a JoinHandle), or it is in another PID namespace";

/// The hint for `tid` when it names no thread of this process: when it is a live
/// thread of another process, which one, followed by `elsewhere` (what to use for
/// such a thread); otherwise that it has exited
/// ([`NO_THREAD_HINT`]).
pub(crate) fn not_in_this_process_hint(tid: Tid, elsewhere: &str) -> String {
    match owner(tid) {
        Some((pid, name)) if pid != std::process::id() as i32 => format!(
            "thread {tid} is alive, a thread of process {pid} ({name}), not of this one; \
             {elsewhere}"
        ),
        _ => NO_THREAD_HINT.to_string(),
    }
}

/// The process (`Tgid`) of live thread `tid` and that process's name, if `tid` is
/// a thread visible in this PID namespace.
fn owner(tid: Tid) -> Option<(i32, String)> {
    let pid = thread_group(tid.as_raw())?;
    let name = crate::sys::proc::read_text(&format!("/proc/{pid}/comm"))
        .map(|s| s.trim_end().to_string())
        .unwrap_or_else(|_| "name unknown".into());
    Some((pid, name))
}

/// The process (`Tgid` of `/proc/TID/status`) of thread `tid`, if it is a live
/// thread visible in this PID namespace.
pub(crate) fn thread_group(tid: i32) -> Option<i32> {
    crate::sys::proc::read_text(&format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}
