//! POSIX per-process timers delivered to one thread, and the signal wait that
//! receives them: `timer_create` (`SIGEV_THREAD_ID`), `timer_settime`,
//! `timer_delete`, `pthread_sigmask`, `sigwaitinfo`, `tgkill`, and
//! `clock_gettime(CLOCK_MONOTONIC)`.
//!
//! Used by the user-space sporadic server (`sched::sporadic`): its server thread
//! blocks one real-time signal and waits for it; every timer it arms (on a served
//! thread's CPU-time clock or on `CLOCK_MONOTONIC`) sends that signal to it alone.

use std::time::Duration;

use crate::{Error, Result};

/// The signal the sporadic server thread waits for: `SIGRTMAX - 1` (glibc keeps the
/// first real-time signals for itself; user code usually counts up from `SIGRTMIN`).
pub(crate) fn server_signal() -> i32 {
    libc::SIGRTMAX() - 1
}

/// `d` as a `timespec`, its seconds saturated at `time_t`'s largest (a longer
/// duration wrapped to a negative value, which timers refuse with EINVAL).
fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    }
}

/// `clock_gettime(CLOCK_MONOTONIC)` as a duration since the clock's origin (the
/// time base of absolute `CLOCK_MONOTONIC` timers).
pub(crate) fn monotonic_now() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// A POSIX timer (`timer_t`) whose expiry sends a signal to one thread; deleted
/// on drop.
pub(crate) struct ThreadTimer {
    id: libc::timer_t,
}

// SAFETY: a timer_t is a process-wide kernel handle (an integer id in a pointer);
// any thread may arm or delete it.
unsafe impl Send for ThreadTimer {}

impl ThreadTimer {
    /// `timer_create(clock, {SIGEV_THREAD_ID, signo, tid})`: a timer on `clock` (a
    /// CPU-time clock id or `CLOCK_MONOTONIC`) that sends `signo` to thread `tid`
    /// of this process on expiry.
    pub(crate) fn new(clock: libc::clockid_t, signo: i32, tid: i32) -> Result<ThreadTimer> {
        // SAFETY: an all-zero sigevent is a valid value (SIGEV_SIGNAL, no data);
        // the fields that matter are set below.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_THREAD_ID;
        sev.sigev_signo = signo;
        sev.sigev_notify_thread_id = tid;
        let mut id: libc::timer_t = std::ptr::null_mut();
        // SAFETY: `sev` is a valid sigevent that the kernel only reads; `id` is
        // writable.
        let r = unsafe { libc::timer_create(clock, &mut sev, &mut id) };
        if r == -1 {
            let e = Error::last_os_error("timer_create");
            return Err(match e.errno() {
                Some(libc::EAGAIN) => e.with_hint(
                    "the kernel refused another timer (RLIMIT_SIGPENDING or memory); \
                     serve fewer threads or raise `ulimit -i`",
                ),
                Some(libc::EINVAL) => {
                    e.with_message(format!("clock {clock} or thread {tid} is not valid"))
                }
                _ => e,
            });
        }
        Ok(ThreadTimer { id })
    }

    /// Arms the timer to expire once at absolute time `at` on its clock
    /// (`timer_settime(TIMER_ABSTIME)`); `None` disarms it. A time already passed
    /// expires at once.
    pub(crate) fn set_abs(&self, at: Option<Duration>) -> Result<()> {
        let value = match at {
            // A zero it_value disarms: an absolute time of 0 would never arm.
            Some(t) => timespec(t.max(Duration::from_nanos(1))),
            None => timespec(Duration::ZERO),
        };
        let spec = libc::itimerspec {
            it_interval: timespec(Duration::ZERO),
            it_value: value,
        };
        // SAFETY: `id` is a live timer owned by self; `spec` is only read; the old
        // value is not asked for (null).
        let r = unsafe {
            libc::timer_settime(self.id, libc::TIMER_ABSTIME, &spec, std::ptr::null_mut())
        };
        crate::error::check("timer_settime", r).map(drop)
    }
}

impl Drop for ThreadTimer {
    fn drop(&mut self) {
        // SAFETY: `id` is a live timer owned by self, deleted exactly once.
        unsafe { libc::timer_delete(self.id) };
    }
}

/// A signal set holding one signal.
fn one_signal(signo: i32) -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signo);
        set
    }
}

/// Blocks `signo` in the calling thread (`pthread_sigmask(SIG_BLOCK)`), so that it
/// stays pending for [`wait_signal`] instead of running its default action.
pub(crate) fn block_signal(signo: i32) -> Result<()> {
    let set = one_signal(signo);
    // SAFETY: `set` is initialised and only read; the old mask is not asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    crate::error::check_pthread("pthread_sigmask", r)
}

/// Waits until `signo` (blocked by [`block_signal`]) is pending for the calling
/// thread and takes one instance of it (`sigwaitinfo`). Returns early with
/// `Interrupted` if another signal's handler ran.
pub(crate) fn wait_signal(signo: i32) -> Result<()> {
    let set = one_signal(signo);
    // SAFETY: `set` is initialised and only read; a null siginfo is allowed.
    let r = unsafe { libc::sigwaitinfo(&set, std::ptr::null_mut()) };
    crate::error::check("sigwaitinfo", r).map(drop)
}

/// Sends `signo` to thread `tid` of this process (`tgkill`).
pub(crate) fn signal_thread(tid: i32, signo: i32) -> Result<()> {
    // SAFETY: tgkill takes plain integers and touches no memory.
    let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signo) };
    crate::error::check("tgkill", r as libc::c_int).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A duration past `time_t`'s range is the longest timespec, not a
    /// negative one.
    #[test]
    fn a_huge_duration_saturates() {
        let ts = timespec(Duration::MAX);
        assert_eq!(ts.tv_sec, libc::time_t::MAX);
        assert_eq!(ts.tv_nsec, 999_999_999);
        assert_eq!(timespec(Duration::new(5, 7)).tv_sec, 5);
    }
}
