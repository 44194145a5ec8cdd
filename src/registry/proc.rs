//! Thread facts from `/proc`: the start time that names a thread or process, and
//! whether a recorded thread is still alive.

use crate::{Error, ErrorKind, Result};

pub use crate::sys::proc::TaskStat;

pub(crate) fn io_error(call: &'static str, e: &std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(errno) => Error::from_errno(call, errno),
        None => Error::new(ErrorKind::Other, call, e.to_string()),
    }
}

/// Reads and parses a `stat` file (decoded lossily: see `sys::proc::read_text`).
pub(crate) fn read_stat(path: &str) -> Result<TaskStat> {
    let text = crate::sys::proc::read_text(path).map_err(|e| io_error("read", &e))?;
    TaskStat::parse(&text)
        .ok_or_else(|| Error::new(ErrorKind::Corrupt, "read", format!("cannot parse {path}")))
}

/// The calling thread's tid and start time, as [`Registry::claim`](super::Registry::claim) wants them.
pub fn current_thread() -> Result<(i32, u64)> {
    let tid = crate::sys::tid::current() as i32;
    let st = read_stat("/proc/thread-self/stat").map_err(proc_hint)?;
    Ok((tid, st.starttime))
}

/// The hint for EMFILE: the process's descriptor table is full.
pub(crate) const NOFILE_HINT: &str = "this process has as many descriptors open as its limit allows (RLIMIT_NOFILE): close descriptors it no longer needs, or raise the limit (ulimit -n, setrlimit)";

/// Adds the hint for a failed read of a start time from `/proc`: a full
/// descriptor table (EMFILE, ENFILE) or a lack of memory is no missing
/// `/proc`, and mounting it would not help.
pub(crate) fn proc_hint(e: Error) -> Error {
    let hint = match e.errno() {
        Some(libc::EMFILE) => NOFILE_HINT,
        Some(libc::ENFILE) => {
            "the system-wide limit on open files is reached (fs.file-max): close files, or raise it (sysctl fs.file-max)"
        }
        Some(libc::ENOMEM) => "the kernel is out of memory: free memory, then try again",
        _ => "registries name processes and threads by their /proc start time: mount /proc (mount -t proc proc /proc)",
    };
    e.with_hint(hint)
}

/// Whether process `pid`, whose `/proc/PID/stat` reads `st`, has ended: dead,
/// or a zombie with no thread left. A process whose first thread exited while
/// its other threads run (a C `pthread_exit` in `main`) shows its leader as a
/// zombie too: one of its tasks still running keeps it alive.
pub fn process_ended(pid: i32, st: &TaskStat) -> bool {
    if !st.is_dead() {
        return false;
    }
    if st.state != 'Z' {
        return true;
    }
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return true;
    };
    !tasks.flatten().any(|e| {
        e.file_name()
            .to_str()
            .and_then(|t| t.parse::<i32>().ok())
            .is_some_and(|tid| {
                tid != pid
                    && read_stat(&format!("/proc/{pid}/task/{tid}/stat"))
                        .is_ok_and(|t| !t.is_dead())
            })
    })
}

/// Whether thread `tid` of `pid`, started at `start`, is gone for good (no
/// such task, another thread with its tid, or a zombie). An error reading
/// `/proc` other than "not found" (EMFILE, ENOMEM, EACCES) tells nothing:
/// it is returned, and the thread must be taken as alive.
pub(crate) fn thread_gone(pid: i32, tid: i32, start: u64) -> Result<bool> {
    match read_stat(&format!("/proc/{pid}/task/{tid}/stat")) {
        Ok(st) => Ok(st.starttime != start || st.is_dead()),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(true),
        Err(e) => Err(e),
    }
}
