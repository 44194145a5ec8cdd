//! Real-time process setup: lock memory, prefault stack and heap, hold
//! `/dev/cpu_dma_latency`, set the timer slack, raise `RLIMIT_RTPRIO`, and one
//! [`setup`] call that runs the checklist and reports what it did.
//!
//! A real-time thread must not page-fault or wait for a deep C-state exit in its loop.
//! The usual checklist (the one `cyclictest -m` and the RT wiki follow) is:
//!
//! 1. `mlockall(MCL_CURRENT | MCL_FUTURE)`: no page of the process is swapped out, and
//!    future mappings are locked as they are made ([`lock_memory`]);
//! 2. touch the stack and the heap once, so their pages exist before the loop
//!    ([`prefault_stack`], [`prefault_heap`]);
//! 3. write 0 to `/dev/cpu_dma_latency` and keep it open: CPUs stay out of deep idle
//!    states while the file is open ([`CpuDmaLatency`]);
//! 4. timer slack of 1 ns for `SCHED_OTHER` threads ([`set_timer_slack`]);
//! 5. `RLIMIT_RTPRIO` high enough for the priorities used ([`raise_rtprio_limit`]);
//!    [`Setup`]'s report also shows `RLIMIT_RTTIME`, which kills a real-time thread
//!    that runs too long without blocking.
//!
//! ```
//! use posixrt::sched::rt::{self, Setup};
//!
//! let report = Setup::new()
//!     .lock_memory(false) // keep the doctest light
//!     .prefault_stack(64 * 1024)
//!     .prefault_heap(1 << 20)
//!     .apply();
//! print!("{report}"); // a checklist: [x] done, [ ] failed (with the fix), [-] skipped
//! assert!(report.failures().count() <= 2);
//! // `report` holds the /dev/cpu_dma_latency guard: keep it alive while running.
//! ```

use std::fmt;

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use rustix::thread::CapabilitySet;

mod heap;
mod latency;
mod stack;
pub use heap::prefault_heap;
pub use latency::{set_timer_slack, timer_slack, CpuDmaLatency};
pub use stack::prefault_stack;

use super::hint::{fmt_limit, has_capability, login_name, mlockall_hint, MemlockFacts};
use crate::{Error, ErrorKind, Result};

// ---------------- rlimits ----------------

/// A resource limit: `None` is unlimited (`RLIM_INFINITY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    /// The soft (current) limit.
    pub soft: Option<u64>,
    /// The hard (maximum) limit.
    pub hard: Option<u64>,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "soft {}, hard {}",
            fmt_limit(self.soft),
            fmt_limit(self.hard)
        )
    }
}

fn limit(r: Resource) -> Limit {
    let l = getrlimit(r);
    Limit {
        soft: l.current,
        hard: l.maximum,
    }
}

/// `RLIMIT_RTPRIO`: the highest real-time priority an unprivileged thread may take.
///
/// # References
///  - [`getrlimit(2)`](https://man7.org/linux/man-pages/man2/getrlimit.2.html)
#[doc(alias = "getrlimit")]
#[doc(alias = "RLIMIT_RTPRIO")]
pub fn rtprio_limit() -> Limit {
    limit(Resource::Rtprio)
}

/// `RLIMIT_MEMLOCK`: how many bytes an unprivileged process may lock.
///
/// # References
///  - [`getrlimit(2)`](https://man7.org/linux/man-pages/man2/getrlimit.2.html)
#[doc(alias = "getrlimit")]
#[doc(alias = "RLIMIT_MEMLOCK")]
pub fn memlock_limit() -> Limit {
    limit(Resource::Memlock)
}

/// Raises the `RLIMIT_RTPRIO` soft limit to `priority` (1..=99).
///
/// Within the hard limit this needs no privilege. Above it, the hard limit is raised
/// too, which needs `CAP_SYS_RESOURCE`; without it the call fails with
/// `PermissionDenied` and the limits unchanged (it never stops short silently). A soft
/// limit already at or above `priority` is left alone. Returns the limits after.
///
/// # References
///  - [`setrlimit(2)`](https://man7.org/linux/man-pages/man2/setrlimit.2.html)
#[doc(alias = "setrlimit")]
pub fn raise_rtprio_limit(priority: u32) -> Result<Limit> {
    if !(1..=99).contains(&priority) {
        return Err(Error::invalid(
            "setrlimit",
            format!("RLIMIT_RTPRIO {priority} is outside 1..=99"),
        )
        .with_hint(
            "give the highest SCHED_FIFO/SCHED_RR priority the program will use (1..=99); \
             a limit of 99 allows them all",
        ));
    }
    let want = u64::from(priority);
    let now = rtprio_limit();
    if now.soft.map_or(true, |s| s >= want) {
        return Ok(now);
    }
    let hard = match now.hard {
        Some(h) if h < want => Some(want),
        h => h,
    };
    setrlimit(
        Resource::Rtprio,
        Rlimit {
            current: Some(want),
            maximum: hard,
        },
    )
    .map_err(|e| {
        let cap = match has_capability(CapabilitySet::SYS_RESOURCE) {
            Some(true) => "this process has it",
            Some(false) => "this process lacks it",
            None => "state unknown",
        };
        Error::from_errno("setrlimit", e.raw_os_error()).with_hint(format!(
            "RLIMIT_RTPRIO is {now}; raising the hard limit to {priority} needs \
             CAP_SYS_RESOURCE ({cap}; root in a container may lack it), or add \
             `{} - rtprio {priority}` to /etc/security/limits.conf and log in again; \
             CAP_SYS_NICE alone makes the limit irrelevant for real-time policies",
            login_name()
        ))
    })?;
    Ok(rtprio_limit())
}

// ---------------- memory ----------------

/// What [`lock_memory`] locks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LockFlags {
    /// `MCL_CURRENT`: pages mapped now.
    pub current: bool,
    /// `MCL_FUTURE`: pages mapped later (stacks of new threads, heap growth).
    pub future: bool,
    /// `MCL_ONFAULT`: lock pages when first touched instead of populating now; it
    /// qualifies `current`/`future` and is refused alone.
    pub on_fault: bool,
}

impl Default for LockFlags {
    /// `MCL_CURRENT | MCL_FUTURE`, as `cyclictest -m`.
    fn default() -> LockFlags {
        LockFlags {
            current: true,
            future: true,
            on_fault: false,
        }
    }
}

/// Locks the process's memory (`mlockall`), after checking `RLIMIT_MEMLOCK`.
///
/// Without `CAP_IPC_LOCK`, locking more than `RLIMIT_MEMLOCK` bytes fails; this is
/// checked first against the current size of the address space (`VmSize`), and the
/// error ([`ErrorKind::OutOfResources`]) names both numbers and the fix. Returns the
/// bytes locked after the call (`VmLck`). Flags with neither `current` nor `future`
/// are [`ErrorKind::InvalidInput`].
///
/// # References
///  - [`mlockall(2)`](https://man7.org/linux/man-pages/man2/mlockall.2.html)
#[doc(alias = "mlockall")]
pub fn lock_memory(flags: LockFlags) -> Result<u64> {
    use rustix::mm::MlockAllFlags;
    let mut f = MlockAllFlags::empty();
    if flags.current {
        f |= MlockAllFlags::CURRENT;
    }
    if flags.future {
        f |= MlockAllFlags::FUTURE;
    }
    if flags.on_fault {
        f |= MlockAllFlags::ONFAULT;
    }
    if !flags.current && !flags.future {
        // The kernel refuses MCL_ONFAULT alone with EINVAL: bad input, not a limit.
        return Err(Error::invalid(
            "mlockall",
            "no MCL_CURRENT or MCL_FUTURE flag (MCL_ONFAULT only qualifies them)",
        )
        .with_hint("set current or future (or both) in LockFlags"));
    }
    let lim = memlock_limit();
    let privileged = has_capability(CapabilitySet::IPC_LOCK) == Some(true);
    let vm = status_kib("VmSize:").map(|k| k * 1024);
    let hint = |vm: Option<u64>| mlockall_hint(&MemlockFacts::gather(), vm);
    if !privileged && flags.current {
        if let (Some(soft), Some(vm)) = (lim.soft, vm) {
            if vm > soft {
                return Err(Error::new(
                    ErrorKind::OutOfResources,
                    "mlockall",
                    format!("{vm} bytes mapped exceed RLIMIT_MEMLOCK ({soft})"),
                )
                .with_hint(hint(Some(vm))));
            }
        }
    }
    rustix::mm::mlockall(f)
        .map_err(|e| Error::from_errno("mlockall", e.raw_os_error()).with_hint(hint(vm)))?;
    LOCKED_FUTURE.store(flags.future, std::sync::atomic::Ordering::Relaxed);
    Ok(status_kib("VmLck:").unwrap_or(0) * 1024)
}

/// Unlocks all memory (`munlockall`).
///
/// # References
///  - [`munlockall(2)`](https://man7.org/linux/man-pages/man2/munlockall.2.html)
#[doc(alias = "munlockall")]
pub fn unlock_memory() -> Result<()> {
    rustix::mm::munlockall().map_err(|e| Error::from_errno("munlockall", e.raw_os_error()))?;
    LOCKED_FUTURE.store(false, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// Whether [`lock_memory`] last locked future mappings (`MCL_FUTURE`): then every
/// heap growth counts against `RLIMIT_MEMLOCK`.
static LOCKED_FUTURE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Bytes of this process locked in memory now (`VmLck` of `/proc/self/status`).
///
/// # References
///  - [`proc_pid_status(5)`](https://man7.org/linux/man-pages/man5/proc_pid_status.5.html)
pub fn locked_bytes() -> u64 {
    status_kib("VmLck:").unwrap_or(0) * 1024
}

fn status_kib(field: &str) -> Option<u64> {
    let s = crate::sys::proc::read_text("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

const PAGE: usize = 4096;

/// Whether `RLIMIT_MEMLOCK` bounds new mappings (a heap block, a thread's stack):
/// [`lock_memory`] last locked future mappings (`MCL_FUTURE`) and the process lacks
/// `CAP_IPC_LOCK`, which lifts the limit.
pub(crate) fn memlock_limits_new_mappings() -> bool {
    LOCKED_FUTURE.load(std::sync::atomic::Ordering::Relaxed)
        && has_capability(CapabilitySet::IPC_LOCK) != Some(true)
}

/// The default heap prefault `b`, capped where memory is locked to what
/// `RLIMIT_MEMLOCK` leaves (less 1 MiB for the rest of the program), in 64 KiB
/// steps (0: none).
fn default_heap(b: usize) -> usize {
    let soft = memlock_limit().soft;
    match (memlock_limits_new_mappings(), soft, status_kib("VmLck:")) {
        (true, Some(soft), Some(locked)) => {
            let room = soft.saturating_sub(locked * 1024).saturating_sub(1 << 20);
            (b as u64).min(room) as usize & !0xffff
        }
        _ => b,
    }
}

/// A limit in bytes as KiB (`unlimited` for none).
fn kib(v: Option<u64>) -> String {
    v.map_or("unlimited".into(), |b| format!("{} KiB", b / 1024))
}

// ---------------- setup ----------------

/// What [`Setup::apply`] should do. Start from [`Setup::new`] (the recommended
/// checklist) and turn steps off or adjust them.
#[derive(Debug, Clone)]
#[must_use = "a Setup does nothing until .apply()"]
pub struct Setup {
    lock: Option<LockFlags>,
    stack: Option<usize>,
    heap: Option<usize>,
    /// The heap amount came from [`Setup::prefault_heap`], not the default.
    heap_asked: bool,
    dma: Option<i32>,
    slack: Option<u64>,
    rtprio: Option<u32>,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup::new()
    }
}

impl Setup {
    /// The recommended checklist: `mlockall(MCL_CURRENT|MCL_FUTURE)`, prefault 256 KiB of
    /// stack and 8 MiB of heap (less where memory is locked and `RLIMIT_MEMLOCK`
    /// leaves less room, as an unprivileged process's 8 MiB default does: the
    /// report says so), hold `/dev/cpu_dma_latency` at 0, timer slack 1 ns. It
    /// does not touch `RLIMIT_RTPRIO` unless asked ([`raise_rtprio`](Self::raise_rtprio)).
    pub fn new() -> Setup {
        Setup {
            lock: Some(LockFlags::default()),
            stack: Some(256 * 1024),
            heap: Some(8 << 20),
            heap_asked: false,
            dma: Some(0),
            slack: Some(1),
            rtprio: None,
        }
    }

    /// A checklist with every step off.
    pub fn none() -> Setup {
        Setup {
            lock: None,
            stack: None,
            heap: None,
            heap_asked: false,
            dma: None,
            slack: None,
            rtprio: None,
        }
    }

    /// Lock memory with `MCL_CURRENT | MCL_FUTURE` (or not).
    pub fn lock_memory(mut self, on: bool) -> Setup {
        self.lock = on.then(LockFlags::default);
        self
    }

    /// Lock memory with these flags.
    pub fn lock_memory_flags(mut self, flags: LockFlags) -> Setup {
        self.lock = Some(flags);
        self
    }

    /// Prefault this many bytes of the calling thread's stack (0: skip).
    pub fn prefault_stack(mut self, bytes: usize) -> Setup {
        self.stack = (bytes > 0).then_some(bytes);
        self
    }

    /// Prefault this many bytes of heap (0: skip).
    pub fn prefault_heap(mut self, bytes: usize) -> Setup {
        self.heap = (bytes > 0).then_some(bytes);
        self.heap_asked = true;
        self
    }

    /// Hold `/dev/cpu_dma_latency` at `micros` (`None`: skip).
    pub fn cpu_dma_latency(mut self, micros: Option<i32>) -> Setup {
        self.dma = micros;
        self
    }

    /// Set the calling thread's timer slack (`None`: skip).
    pub fn timer_slack(mut self, nanos: Option<u64>) -> Setup {
        self.slack = nanos;
        self
    }

    /// Raise `RLIMIT_RTPRIO` to `priority` (`None`: skip, the default).
    pub fn raise_rtprio(mut self, priority: Option<u32>) -> Setup {
        self.rtprio = priority;
        self
    }

    /// Runs the checklist in order (limits first, then memory, then latency) and
    /// reports each step. A step that fails does not stop the others.
    pub fn apply(self) -> SetupReport {
        let mut r = SetupReport {
            steps: Vec::new(),
            dma: None,
        };
        match self.rtprio {
            None => r.skip(
                "raise RLIMIT_RTPRIO",
                format!("not requested ({})", rtprio_limit()),
            ),
            Some(p) => {
                let what = format!("raise RLIMIT_RTPRIO to {p}");
                match raise_rtprio_limit(p) {
                    Ok(l) => r.done(what, format!("now {l}")),
                    Err(e) => r.fail(what, e),
                }
            }
        }
        match self.lock {
            None => r.skip("mlockall", "not requested".into()),
            Some(f) => {
                let what = format!(
                    "mlockall({})",
                    [
                        (f.current, "MCL_CURRENT"),
                        (f.future, "MCL_FUTURE"),
                        (f.on_fault, "MCL_ONFAULT")
                    ]
                    .iter()
                    .filter(|x| x.0)
                    .map(|x| x.1)
                    .collect::<Vec<_>>()
                    .join("|")
                );
                match lock_memory(f) {
                    Ok(b) => r.done(
                        what,
                        format!(
                            "{} KiB locked, RLIMIT_MEMLOCK soft {}, hard {}",
                            b / 1024,
                            kib(memlock_limit().soft),
                            kib(memlock_limit().hard)
                        ),
                    ),
                    Err(e) => r.fail(what, e),
                }
            }
        }
        match self.stack {
            None => r.skip("prefault stack", "not requested".into()),
            Some(b) => {
                let what = format!("prefault {} KiB of stack", b / 1024);
                match prefault_stack(b) {
                    Ok(()) => r.done(what, "touched".into()),
                    Err(e) => r.fail(what, e),
                }
            }
        }
        match self.heap {
            None => r.skip("prefault heap", "not requested".into()),
            Some(asked) => {
                // The default only: capped where RLIMIT_MEMLOCK leaves less.
                let b = if self.heap_asked {
                    asked
                } else {
                    default_heap(asked)
                };
                let of = if b < asked {
                    format!(" (of the {} KiB default: RLIMIT_MEMLOCK)", asked >> 10)
                } else {
                    String::new()
                };
                let what = format!("prefault {} KiB of heap{of}", b / 1024);
                match (b > 0).then(|| prefault_heap(b)) {
                    None => r.skip("prefault heap", "RLIMIT_MEMLOCK leaves no room".into()),
                    Some(Ok(())) => r.done(what, "touched, M_MMAP_MAX 0, no trim".into()),
                    Some(Err(e)) => r.fail(what, e),
                }
            }
        }
        match self.dma {
            None => r.skip("/dev/cpu_dma_latency", "not requested".into()),
            Some(us) => {
                let what = format!("hold /dev/cpu_dma_latency at {us} us");
                match CpuDmaLatency::hold(us) {
                    Ok(g) => {
                        r.dma = Some(g);
                        r.done(what, "held while this report lives".into())
                    }
                    Err(e) => r.fail(what, e),
                }
            }
        }
        match self.slack {
            None => r.skip("timer slack", "not requested".into()),
            Some(ns) => {
                let what = format!("timer slack {ns} ns (this thread)");
                match set_timer_slack(ns).and_then(|()| timer_slack()) {
                    Ok(v) => r.done(what, format!("now {v} ns")),
                    Err(e) => r.fail(what, e),
                }
            }
        }
        let read = |f: &str| {
            std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into())
        };
        let throttle = read("sched_rt_runtime_us");
        let period = read("sched_rt_period_us");
        r.skip(
            "RT throttling (information)",
            format!("sched_rt_runtime_us = {throttle} of sched_rt_period_us = {period}"),
        );
        r.skip(
            "RLIMIT_RTTIME (information)",
            rttime_note(limit(Resource::Rttime)),
        );
        if let Some(note) = thread_stack_note() {
            r.skip("new threads (information)", note);
        }
        r
    }
}

/// When future mappings are locked under `RLIMIT_MEMLOCK` (no `CAP_IPC_LOCK`)
/// and the room left cannot hold a thread's default stack, what that means and
/// the fix: every spawn with the default stack would fail with EAGAIN.
fn thread_stack_note() -> Option<String> {
    if !memlock_limits_new_mappings() {
        return None;
    }
    let soft = memlock_limit().soft?;
    let room = soft.saturating_sub(locked_bytes());
    // glibc's default thread stack: RLIMIT_STACK, or 2 MiB when it is unlimited.
    let stack = getrlimit(Resource::Stack).current.unwrap_or(2 << 20);
    if room > stack {
        return None;
    }
    Some(format!(
        "memory is locked as it is mapped (MCL_FUTURE) and RLIMIT_MEMLOCK ({}) leaves {} KiB, \
         less than a new thread's default stack ({} KiB, RLIMIT_STACK): spawning one fails \
         with EAGAIN; fix: give Builder::stack_size (or std::thread::Builder::stack_size) \
         well below {} KiB, or {}",
        memlock_limit(),
        room / 1024,
        stack / 1024,
        room / 1024,
        MemlockFacts::gather().fixes(Some(soft.saturating_add(stack)))
    ))
}

/// What `RLIMIT_RTTIME` (microseconds) means for the real-time threads, as the
/// kernel enforces it (`check_thread_timers`): nothing while the soft limit is
/// unlimited; at the soft limit SIGXCPU (whose default action ends the process),
/// again every second, and SIGKILL at the hard limit; SIGKILL at once when the
/// two are equal (systemd's `LimitRTTIME=` sets both).
fn rttime_note(l: Limit) -> String {
    let Some(soft) = l.soft else {
        return "unlimited: a real-time thread may run as long as it likes without blocking".into();
    };
    let what = match l.hard {
        Some(hard) if hard <= soft => "is killed (SIGKILL) with no warning before: the soft \
             limit is the hard one, so there is no signal to handle"
            .to_string(),
        Some(hard) => format!(
            "gets SIGXCPU, which ends the process unless it is handled or ignored (then \
             again every second), and SIGKILL at {hard} us"
        ),
        None => "gets SIGXCPU, which ends the process unless it is handled or ignored \
             (then again every second, without end: the hard limit is unlimited)"
            .to_string(),
    };
    format!(
        "{l} us: a SCHED_FIFO/RR thread that runs {soft} us without blocking {what}; raise \
         it with `prlimit --rttime=unlimited` or LimitRTTIME=infinity for a systemd service"
    )
}

/// Runs the recommended checklist ([`Setup::new`]) and returns its report.
///
/// # References
///  - [`mlockall(2)`](https://man7.org/linux/man-pages/man2/mlockall.2.html)
///  - [`PR_SET_TIMERSLACK(2const)`](https://man7.org/linux/man-pages/man2/PR_SET_TIMERSLACK.2const.html)
///  - [`setrlimit(2)`](https://man7.org/linux/man-pages/man2/setrlimit.2.html)
#[doc(alias = "mlockall")]
pub fn setup() -> SetupReport {
    Setup::new().apply()
}

/// How one step of the checklist ended.
#[derive(Debug)]
pub enum Outcome {
    /// Done; what it did.
    Done(String),
    /// Not done on purpose; why.
    Skipped(String),
    /// Tried and failed; the error carries the fix.
    Failed(Error),
}

/// One step of the checklist.
#[derive(Debug)]
pub struct Step {
    /// What the step is.
    pub what: String,
    /// How it ended.
    pub outcome: Outcome,
}

/// What [`Setup::apply`] did and could not do. `Display` prints a checklist. Holds the
/// `/dev/cpu_dma_latency` guard: keep it alive for as long as the limit should hold.
#[derive(Debug)]
#[must_use = "dropping the report releases /dev/cpu_dma_latency"]
pub struct SetupReport {
    steps: Vec<Step>,
    dma: Option<CpuDmaLatency>,
}

impl SetupReport {
    /// Every step, in the order run.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The steps that failed, with their errors.
    pub fn failures(&self) -> impl Iterator<Item = (&str, &Error)> {
        self.steps.iter().filter_map(|s| match &s.outcome {
            Outcome::Failed(e) => Some((s.what.as_str(), e)),
            _ => None,
        })
    }

    /// Whether no step failed.
    pub fn all_ok(&self) -> bool {
        self.failures().next().is_none()
    }

    /// The `/dev/cpu_dma_latency` guard, if it is held.
    pub fn cpu_dma_latency(&self) -> Option<&CpuDmaLatency> {
        self.dma.as_ref()
    }

    /// Takes the guard out, so the report can be dropped while the limit holds.
    pub fn take_cpu_dma_latency(&mut self) -> Option<CpuDmaLatency> {
        self.dma.take()
    }

    fn done(&mut self, what: String, how: String) {
        self.steps.push(Step {
            what,
            outcome: Outcome::Done(how),
        });
    }

    fn skip(&mut self, what: &str, why: String) {
        self.steps.push(Step {
            what: what.to_string(),
            outcome: Outcome::Skipped(why),
        });
    }

    fn fail(&mut self, what: String, e: Error) {
        self.steps.push(Step {
            what,
            outcome: Outcome::Failed(e),
        });
    }
}

impl fmt::Display for SetupReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "RT setup checklist:")?;
        for s in &self.steps {
            match &s.outcome {
                Outcome::Done(how) => writeln!(f, "  [x] {}: {how}", s.what)?,
                Outcome::Skipped(why) => writeln!(f, "  [-] {}: {why}", s.what)?,
                Outcome::Failed(e) => writeln!(f, "  [ ] {}: {e}", s.what)?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the checklist says about RLIMIT_RTTIME must be what the kernel does
    /// (`check_thread_timers`): SIGKILL first when the soft limit is the hard one
    /// (systemd's `LimitRTTIME=` sets both), and SIGXCPU, whose default action
    /// ends the process, when the soft limit is below it. The note said "gets
    /// SIGXCPU (SIGKILL at the hard limit)" for every limit, so a program that
    /// installed a SIGXCPU handler to survive was killed anyway.
    #[test]
    fn the_rttime_note_says_which_signal_comes_first() {
        let limit = |soft, hard| Limit { soft, hard };
        let same = rttime_note(limit(Some(200_000), Some(200_000)));
        assert!(same.contains("SIGKILL"), "{same}");
        assert!(!same.contains("SIGXCPU"), "{same}");
        let below = rttime_note(limit(Some(200_000), Some(5_000_000)));
        assert!(below.contains("SIGXCPU"), "{below}");
        assert!(below.contains("ends the process"), "{below}");
        assert!(below.contains("SIGKILL at 5000000 us"), "{below}");
        let no_hard = rttime_note(limit(Some(200_000), None));
        assert!(no_hard.contains("SIGXCPU"), "{no_hard}");
        assert!(!no_hard.contains("SIGKILL"), "{no_hard}");
        let none = rttime_note(limit(None, None));
        assert!(none.starts_with("unlimited"), "{none}");
    }
}
