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
