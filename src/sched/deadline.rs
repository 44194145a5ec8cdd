//! `SCHED_DEADLINE`: earliest-deadline-first scheduling with CPU reservations, through
//! the raw `sched_setattr` / `sched_getattr` system calls, addressed by **tid**.
//!
//! A deadline thread declares that every `period` it needs `runtime` of CPU, finished
//! within `deadline` of the period's start (`runtime <= deadline <= period`). The
//! kernel admits the reservation only if the sum of `runtime / period` of all deadline
//! tasks stays within the RT bandwidth (`sched_rt_runtime_us / sched_rt_period_us` per
//! CPU of the root domain); otherwise `sched_setattr` fails with EBUSY, which
//! [`set`] reports as [`ErrorKind::Busy`] with the numbers. A
//! thread that overruns its runtime is throttled until its next period.
//!
//! ```no_run
//! use std::time::Duration;
//! use posixrt::sched::{self, deadline::{self, Deadline, DeadlineFlags}};
//!
//! let ms = Duration::from_millis;
//! let dl = Deadline::new(ms(2), ms(8), ms(10))?.with_flags(DeadlineFlags::RESET_ON_FORK);
//! deadline::set(sched::gettid(), &dl)?;     // needs CAP_SYS_NICE
//! let now = deadline::get(sched::gettid())?;
//! assert_eq!(now.deadline_params(), Some(dl));
//! sched::yield_now();                       // ends this period's job early
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! # POSIX `SCHED_SPORADIC` and how it maps
//!
//! POSIX's sporadic server gives a thread a budget it may use at a high priority,
//! replenished a period after it was consumed; Linux has no `SCHED_SPORADIC`.
//!
//! | `sched_param` field | meaning | `SCHED_DEADLINE` |
//! |---|---|---|
//! | `sched_ss_init_budget` | CPU time usable at `sched_priority` | `runtime` |
//! | `sched_ss_repl_period` | consumed budget comes back this long after activation | `period` (and `deadline`, often `= period`) |
//! | `sched_priority` | the priority while budget remains | none: deadline tasks run before every FIFO/RR task, ordered by absolute deadline (EDF) |
//! | `sched_ss_low_priority` | priority to keep running at once the budget is spent | **does not map**: an exhausted deadline task is *throttled* (not run at all) until its next period |
//! | `sched_ss_max_repl` | at most this many pending replenishments (`_POSIX_SS_REPL_MAX` = 4) | **does not map**: CBS refills the whole runtime at each period boundary instead of per-consumption replenishments |
//!
//! So DEADLINE gives the *protection* of a sporadic server (a thread cannot take more
//! than its budget, others keep their guarantees) but not its *background execution*.
//! `DeadlineFlags::RECLAIM` (GRUB) lets a task use bandwidth others left idle, which
//! comes closest to low-priority execution.
//!
//! For the POSIX semantics, [`sporadic`](super::sporadic) is a user-space sporadic
//! server ([`Builder::sporadic`](super::Builder::sporadic),
//! [`sporadic::serve`](super::sporadic::serve)): one top-priority thread per process
//! counts the budget on the served thread's CPU-time clock, arms `CLOCK_MONOTONIC`
//! timers for the replenishments and switches the thread between `sched_priority`
//! and `sched_ss_low_priority` by tid, following POSIX's rules for activation time,
//! replenishment amounts and `max_repl` exactly.
//!
//! | | user-space server ([`sporadic`](super::sporadic)) | `SCHED_DEADLINE` |
//! |---|---|---|
//! | budget counted on | the thread's CPU clock | the thread's runtime |
//! | enforcement | within the server's wake-up latency (tens of us; README figures) | by the kernel, at the tick or hrtick |
//! | after the budget | runs on at `sched_ss_low_priority` | throttled, does not run |
//! | replenishment | per consumed chunk at activation + period, at most `max_repl` pending | whole runtime at each period |
//! | blocking | charged when the thread says so ([`sporadic::blocking`](super::sporadic::blocking)) | seen by the kernel |
//! | exhausted thread goes to | the head of the low list (Linux's rule for a lowered priority; POSIX says tail) | the throttled set |
//! | admission control | none (priorities only) | bandwidth test, EBUSY |
//!
//! What only a kernel could do (see the [`sporadic`](super::sporadic) docs): see a
//! block without being told, enforce with no overrun at all, queue an exhausted
//! thread at the tail of its low-priority list, and keep the policy across `fork`.
//!
//! # References
//!  - [`sched_setattr(2)`](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)
//!  - [`sched(7)`](https://man7.org/linux/man-pages/man7/sched.7.html)
//!  - [Deadline Task Scheduling](https://docs.kernel.org/scheduler/sched-deadline.html)

use std::fmt;
use std::ops::BitOr;
use std::time::Duration;

use super::hint::sched_error;
use super::{Policy, Tid};
use crate::sys::sched::{self as sys, SchedAttr as RawAttr};
use crate::{Error, ErrorKind, Result};

/// `sched_attr.sched_flags` bits relevant to deadline tasks.
///
/// # References
///  - [`sched_setattr(2)`](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct DeadlineFlags(u64);

impl DeadlineFlags {
    /// No flag.
    pub const NONE: DeadlineFlags = DeadlineFlags(0);
    /// `SCHED_FLAG_RESET_ON_FORK`: children start as `SCHED_OTHER` (a deadline task
    /// cannot fork otherwise).
    pub const RESET_ON_FORK: DeadlineFlags = DeadlineFlags(0x01);
    /// `SCHED_FLAG_RECLAIM`: GRUB, may reclaim bandwidth left unused by others.
    pub const RECLAIM: DeadlineFlags = DeadlineFlags(0x02);
    /// `SCHED_FLAG_DL_OVERRUN`: send SIGXCPU when the task overruns its runtime.
    ///
    /// The signal goes to the process, and SIGXCPU's default action ends it
    /// (with a core dump): install a handler for SIGXCPU, or ignore it, before
    /// giving a thread this flag.
    pub const DL_OVERRUN: DeadlineFlags = DeadlineFlags(0x04);

    /// The raw bits.
    #[inline]
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Flags from raw bits; `None` if a bit is not one of the three above.
    pub const fn from_bits(bits: u64) -> Option<DeadlineFlags> {
        if bits & !0x07 == 0 {
            Some(DeadlineFlags(bits))
        } else {
            None
        }
    }

    /// Whether every flag of `other` is set.
    #[inline]
    pub const fn contains(self, other: DeadlineFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl BitOr for DeadlineFlags {
    type Output = DeadlineFlags;
    fn bitor(self, rhs: DeadlineFlags) -> DeadlineFlags {
        DeadlineFlags(self.0 | rhs.0)
    }
}

/// Validated deadline parameters: `0 < runtime <= deadline <= period`, runtime at
/// least 1024 ns, period within `/proc/sys/kernel/sched_deadline_period_{min,max}_us`.
///
/// # References
///  - [`sched_setattr(2)`](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Deadline {
    runtime: Duration,
    deadline: Duration,
    period: Duration,
    flags: DeadlineFlags,
}

impl Deadline {
    /// Checks and builds the parameters. A zero runtime, deadline or period, an order
    /// other than `runtime <= deadline <= period`, a runtime below 1024 ns or a period
    /// outside the kernel's bounds is [`ErrorKind::InvalidInput`].
    pub fn new(runtime: Duration, deadline: Duration, period: Duration) -> Result<Deadline> {
        let call = "sched_setattr";
        for (name, v) in [
            ("runtime", runtime),
            ("deadline", deadline),
            ("period", period),
        ] {
            if v.is_zero() {
                let hint = if name == "period" && !deadline.is_zero() {
                    // sched_setattr's 0: the C code being ported meant this.
                    format!(
                        "sched_setattr takes a zero period as period = deadline; here the \
                         period is asked for explicitly: pass the deadline ({deadline:?}) as \
                         the period"
                    )
                } else {
                    "give runtime, deadline and period, all > 0, with runtime <= deadline \
                     <= period"
                        .to_string()
                };
                return Err(
                    Error::invalid(call, format!("SCHED_DEADLINE {name} is zero")).with_hint(hint),
                );
            }
            if v.as_nanos() >= 1u128 << 63 {
                return Err(Error::invalid(
                    call,
                    format!("SCHED_DEADLINE {name} {v:?} is too large"),
                )
                .with_hint(
                    "the kernel keeps runtime, deadline and period in nanoseconds below 2^63 \
                     (about 292 years); give a shorter one",
                ));
            }
        }
        if runtime.as_nanos() < 1024 {
            return Err(Error::invalid(
                call,
                format!(
                    "SCHED_DEADLINE runtime {runtime:?} is below the kernel minimum of 1024 ns"
                ),
            )
            .with_hint(
                "the kernel counts runtime in units of 1024 ns (DL_SCALE): give a runtime of \
                 at least 1024 ns, with deadline and period at least as long",
            ));
        }
        if !(runtime <= deadline && deadline <= period) {
            return Err(Error::invalid(
                call,
                format!(
                    "SCHED_DEADLINE needs runtime <= deadline <= period; got {runtime:?}, {deadline:?}, {period:?}"
                ),
            )
            .with_hint(
                "the thread needs runtime of CPU within deadline of each period's start: \
                 shorten the runtime or lengthen the deadline so runtime <= deadline, and \
                 give a period at least as long as the deadline (deadline = period is usual)",
            ));
        }
        let (min, max) = period_bounds();
        if period < min || period > max {
            return Err(Error::invalid(
                call,
                format!("SCHED_DEADLINE period {period:?} is outside the kernel's bounds {min:?}..={max:?}"),
            )
            .with_hint("the bounds are /proc/sys/kernel/sched_deadline_period_min_us and _max_us"));
        }
        Ok(Deadline {
            runtime,
            deadline,
            period,
            flags: DeadlineFlags::NONE,
        })
    }

    /// The same parameters with `flags`.
    #[must_use]
    pub fn with_flags(mut self, flags: DeadlineFlags) -> Deadline {
        self.flags = flags;
        self
    }

    /// CPU time per period.
    #[inline]
    pub fn runtime(&self) -> Duration {
        self.runtime
    }

    /// Relative deadline.
    #[inline]
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    /// Period.
    #[inline]
    pub fn period(&self) -> Duration {
        self.period
    }

    /// Flags.
    #[inline]
    pub fn flags(&self) -> DeadlineFlags {
        self.flags
    }

    /// The CPU share asked for: `runtime / period`.
    pub fn bandwidth(&self) -> f64 {
        self.runtime.as_secs_f64() / self.period.as_secs_f64()
    }
}

impl fmt::Display for Deadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "SCHED_DEADLINE runtime {:?} deadline {:?} period {:?}",
            self.runtime, self.deadline, self.period
        )
    }
}

/// A thread's scheduling attributes as `sched_getattr` reports them.
///
/// # References
///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SchedAttr {
    /// The policy.
    pub policy: Policy,
    /// Raw `sched_flags` (including `SCHED_FLAG_RESET_ON_FORK`, 0x01).
    pub flags: u64,
    /// The nice value (fair policies).
    pub nice: i32,
    /// The static priority (FIFO/RR; 0 otherwise).
    pub priority: u32,
    /// Runtime (deadline tasks; 0 otherwise).
    pub runtime: Duration,
    /// Relative deadline (deadline tasks; 0 otherwise).
    pub deadline: Duration,
    /// Period (deadline tasks; 0 otherwise).
    pub period: Duration,
}

impl SchedAttr {
    /// The deadline parameters if the thread is a `SCHED_DEADLINE` task.
    pub fn deadline_params(&self) -> Option<Deadline> {
        if self.policy != Policy::Deadline {
            return None;
        }
        Some(Deadline {
            runtime: self.runtime,
            deadline: self.deadline,
            period: self.period,
            flags: DeadlineFlags(self.flags & 0x07),
        })
    }
}

/// Makes thread `tid` a `SCHED_DEADLINE` task (`sched_setattr(tid, ...)`).
///
/// A `SCHED_RESET_ON_FORK` flag the thread has (rtkit, `chrt -R`) is kept, as every
/// policy change in [`sched`](super) keeps it, whether `params` has
/// [`DeadlineFlags::RESET_ON_FORK`] or not; [`get`] then reports it. (Linux would
/// clear it, and a deadline thread without it cannot create threads.)
///
/// Errors: EBUSY (admission control) is [`ErrorKind::Busy`] with a hint naming the
/// requested bandwidth and the limit (`sched_rt_runtime_us / sched_rt_period_us` ×
/// CPUs); EPERM is `PermissionDenied` naming CAP_SYS_NICE and the affinity rule;
/// EINVAL (the period bounds changed since [`Deadline::new`], or a flag this kernel
/// does not know) is `InvalidInput` naming the bounds as they are now; ESRCH is
/// `NotFound`.
///
/// # References
///  - [`sched_setattr(2)`](https://man7.org/linux/man-pages/man2/sched_setattr.2.html)
#[doc(alias = "sched_setattr")]
pub fn set(tid: Tid, params: &Deadline) -> Result<()> {
    // What the thread has now, for its RESET_ON_FORK flag and, when it is a
    // deadline thread already, the reservation this one replaces (admission
    // control weighs only the difference). Unreadable: `sched_setattr` says why.
    let now = sys::getattr(tid.as_raw()).ok();
    let reset_on_fork = DeadlineFlags::RESET_ON_FORK.bits();
    let attr = RawAttr {
        size: RawAttr::SIZE,
        sched_policy: libc::SCHED_DEADLINE as u32,
        sched_flags: params.flags.bits() | (now.map_or(0, |a| a.sched_flags) & reset_on_fork),
        sched_nice: 0,
        sched_priority: 0,
        sched_runtime: params.runtime.as_nanos() as u64,
        sched_deadline: params.deadline.as_nanos() as u64,
        sched_period: params.period.as_nanos() as u64,
    };
    let r = super::hook::change_raw(tid.as_raw(), || sys::setattr(tid.as_raw(), &attr));
    crate::sys::prio::class_changed(tid.as_raw(), false);
    if let Err(errno) = r {
        return Err(match errno {
            libc::EBUSY => Error::from_errno("sched_setattr", errno)
                .with_message(format!("admission control refused {params} for tid {tid}"))
                .with_hint(admission_hint(params, replaced(now.as_ref()))),
            libc::EINVAL => Error::from_errno("sched_setattr", errno)
                .with_message(format!("the kernel refused {params}"))
                .with_hint(einval_hint(params)),
            _ => sched_error(
                "sched_setattr",
                errno,
                Some(tid.as_raw()),
                Some(Policy::Deadline),
                None,
            ),
        });
    }
    Ok(())
}

/// The reservation (runtime, period) of a thread whose attributes are `now`,
/// if it is a `SCHED_DEADLINE` thread.
fn replaced(now: Option<&RawAttr>) -> Option<(u64, u64)> {
    now.filter(|a| a.sched_policy == libc::SCHED_DEADLINE as u32 && a.sched_period > 0)
        .map(|a| (a.sched_runtime, a.sched_period))
}

/// The scheduling attributes of thread `tid` (`sched_getattr`), for any policy.
///
/// # References
///  - [`sched_getattr(2)`](https://man7.org/linux/man-pages/man2/sched_getattr.2.html)
#[doc(alias = "sched_getattr")]
pub fn get(tid: Tid) -> Result<SchedAttr> {
    let raw = sys::getattr(tid.as_raw())
        .map_err(|e| sched_error("sched_getattr", e, Some(tid.as_raw()), None, None))?;
    let policy = Policy::from_raw(raw.sched_policy as i32).ok_or_else(|| {
        Error::new(
            ErrorKind::Unsupported,
            "sched_getattr",
            format!("unknown policy {}", raw.sched_policy),
        )
    })?;
    Ok(SchedAttr {
        policy,
        flags: raw.sched_flags,
        nice: raw.sched_nice,
        priority: raw.sched_priority,
        runtime: Duration::from_nanos(raw.sched_runtime),
        deadline: Duration::from_nanos(raw.sched_deadline),
        period: Duration::from_nanos(raw.sched_period),
    })
}

/// The hint for EINVAL on parameters [`Deadline::new`] accepted: the period
/// bounds as the kernel has them now (a sysctl changed since), or a flag this
/// kernel does not know.
fn einval_hint(params: &Deadline) -> String {
    let (min, max) = period_bounds();
    let period = params.period;
    let bounds = if period < min || period > max {
        format!(
            "now {min:?}..={max:?}, which the period {period:?} is outside (they changed \
             since Deadline::new)"
        )
    } else {
        format!("now {min:?}..={max:?}")
    };
    let flags = params.flags;
    let mut named = Vec::new();
    if flags.contains(DeadlineFlags::RECLAIM) {
        named.push("RECLAIM needs Linux 4.13");
    }
    if flags.contains(DeadlineFlags::DL_OVERRUN) {
        named.push("DL_OVERRUN needs Linux 4.16");
    }
    let flags = if named.is_empty() {
        String::new()
    } else {
        format!(
            "; the flags must be known to this kernel ({})",
            named.join(", ")
        )
    };
    format!(
        "the kernel checks the period against /proc/sys/kernel/sched_deadline_period_min_us \
         and sched_deadline_period_max_us, {bounds}{flags}; fix: build the Deadline again \
         with Deadline::new (a period within the bounds), or leave out a flag this kernel \
         lacks"
    )
}

/// The admission-control hint: the request's bandwidth against the limit.
fn admission_hint(params: &Deadline, replaced: Option<(u64, u64)>) -> String {
    let read = |p: &str| -> Option<i64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let runtime_us = read("/proc/sys/kernel/sched_rt_runtime_us");
    let period_us = read("/proc/sys/kernel/sched_rt_period_us");
    // The root domain spans every active CPU (without exclusive cpusets), whatever
    // the calling thread's own affinity or cgroup quota.
    let cpus = online_cpus();
    let limit = match (runtime_us, period_us) {
        (Some(-1), _) => "sched_rt_runtime_us = -1 (no limit)".to_string(),
        (Some(r), Some(p)) if p > 0 => format!(
            "sched_rt_runtime_us / sched_rt_period_us = {r} / {p} = {:.3} per CPU x {cpus} CPUs = {:.3} CPU",
            r as f64 / p as f64,
            r as f64 / p as f64 * cpus as f64
        ),
        _ => "sched_rt_runtime_us / sched_rt_period_us (unreadable)".to_string(),
    };
    let asked = format!(
        "{} / {} ns = {:.3} CPU",
        params.runtime.as_nanos(),
        params.period.as_nanos(),
        params.bandwidth()
    );
    // A deadline thread re-parameterised gives its reservation back as it
    // takes the new one: only the difference must fit.
    let adds = match replaced {
        Some((runtime, period)) => {
            let old = runtime as f64 / period as f64;
            format!(
                "this request replaces the thread's {runtime} / {period} ns = {old:.3} CPU \
                 with {asked}: it adds {:.3} CPU",
                params.bandwidth() - old
            )
        }
        None => format!("this request adds {asked}"),
    };
    format!(
        "admission control: the sum of runtime/period of every SCHED_DEADLINE task in the root \
         domain (plus the kernel's fair-server reservations on 6.12+) must stay within {limit}; \
         {adds}; fix: ask for a smaller runtime or a longer period, end other deadline tasks, \
         or raise kernel.sched_rt_runtime_us"
    )
}

/// How many CPUs are online (`/sys/devices/system/cpu/online`, e.g. `0-3,6`);
/// the calling thread's usable CPUs if that cannot be read.
fn online_cpus() -> usize {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| super::cpuset::parse_cpu_list(&s))
        .map(|set| set.count())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

fn period_bounds() -> (Duration, Duration) {
    let read = |p: &str| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let min = read("/proc/sys/kernel/sched_deadline_period_min_us").unwrap_or(100);
    let max = read("/proc/sys/kernel/sched_deadline_period_max_us").unwrap_or(1 << 22);
    (Duration::from_micros(min), Duration::from_micros(max))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ms = Duration::from_millis;
        assert!(Deadline::new(ms(1), ms(2), ms(3)).is_ok());
        for (r, d, p) in [(0, 2, 3), (1, 0, 3), (1, 2, 0), (3, 2, 3), (1, 4, 3)] {
            let e = Deadline::new(ms(r), ms(d), ms(p)).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{r} {d} {p}");
        }
        assert!(Deadline::new(Duration::from_nanos(500), ms(1), ms(1)).is_err());
        assert!(Deadline::new(ms(1), ms(1), Duration::from_secs(60)).is_err());
        let f = DeadlineFlags::RESET_ON_FORK | DeadlineFlags::RECLAIM;
        assert!(f.contains(DeadlineFlags::RECLAIM) && !f.contains(DeadlineFlags::DL_OVERRUN));
        assert_eq!(DeadlineFlags::from_bits(8), None);
    }
}
