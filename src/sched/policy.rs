//! Scheduling policies and validated priorities.
//!
//! [`Policy`] names the Linux policies; [`Priority`] is a priority value that has been
//! checked against `sched_get_priority_min` / `sched_get_priority_max` of its policy
//! when it was built, so a value that reaches the kernel is always in range.

use std::fmt;
use std::ops::RangeInclusive;

use crate::{Error, Result};

/// A scheduling policy (`SCHED_*`).
///
/// POSIX defines `SCHED_FIFO`, `SCHED_RR`, `SCHED_OTHER` and `SCHED_SPORADIC`; Linux
/// adds `SCHED_BATCH`, `SCHED_IDLE`, `SCHED_DEADLINE` and (6.12+) `SCHED_EXT`, and
/// has no `SCHED_SPORADIC` (see the [`deadline`](super::deadline) module for how
/// it maps).
///
/// # References
///  - [`sched(7)`](https://man7.org/linux/man-pages/man7/sched.7.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Policy {
    /// `SCHED_OTHER`: the default time-sharing policy (CFS/EEVDF); priority is always 0,
    /// the nice value weights it.
    Other,
    /// `SCHED_FIFO`: run until blocked or preempted by a higher priority; priority 1..=99.
    Fifo,
    /// `SCHED_RR`: `SCHED_FIFO` with a time quantum ([`rr_interval`](super::rr_interval)).
    RoundRobin,
    /// `SCHED_BATCH`: like `SCHED_OTHER`, for CPU-bound work that should not preempt.
    Batch,
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
    Idle,
    /// `SCHED_DEADLINE`: EDF with CBS reservations; set with
    /// [`deadline::set`](super::deadline::set), not with a priority.
    Deadline,
    /// `SCHED_EXT` (7, Linux 6.12+ built with `CONFIG_SCHED_CLASS_EXT`): the
    /// thread is scheduled by a sched_ext BPF scheduler while one is loaded, and as
    /// a `SCHED_OTHER` thread (by its nice value) otherwise; priority is always 0.
    /// Usually set by other code (a sched_ext scheduler's loader, `chrt --ext`);
    /// posixrt reports it and can move a thread out of it (or into it). A kernel
    /// without sched_ext refuses it: EINVAL, whose hint says so.
    ///
    /// # References
    ///  - [sched_ext](https://docs.kernel.org/scheduler/sched-ext.html)
    Ext,
}

/// `SCHED_EXT`, which the `libc` crate does not name on every target.
const SCHED_EXT: i32 = 7;

impl Policy {
    /// Every policy, in the order of their `SCHED_*` numbers.
    pub const ALL: [Policy; 7] = [
        Policy::Other,
        Policy::Fifo,
        Policy::RoundRobin,
        Policy::Batch,
        Policy::Idle,
        Policy::Deadline,
        Policy::Ext,
    ];

    /// The `SCHED_*` constant.
    #[inline]
    pub const fn as_raw(self) -> i32 {
        match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::RoundRobin => libc::SCHED_RR,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
            Policy::Deadline => libc::SCHED_DEADLINE,
            Policy::Ext => SCHED_EXT,
        }
    }

    /// The policy for a `SCHED_*` value, ignoring the `SCHED_RESET_ON_FORK` flag that
    /// `sched_getscheduler` may OR into its result. `None` for an unknown value.
    pub const fn from_raw(raw: i32) -> Option<Policy> {
        match raw & !libc::SCHED_RESET_ON_FORK {
            libc::SCHED_OTHER => Some(Policy::Other),
            libc::SCHED_FIFO => Some(Policy::Fifo),
            libc::SCHED_RR => Some(Policy::RoundRobin),
            libc::SCHED_BATCH => Some(Policy::Batch),
            libc::SCHED_IDLE => Some(Policy::Idle),
            libc::SCHED_DEADLINE => Some(Policy::Deadline),
            SCHED_EXT => Some(Policy::Ext),
            _ => None,
        }
    }

    /// The C name, e.g. `"SCHED_FIFO"`.
    pub const fn name(self) -> &'static str {
        match self {
            Policy::Other => "SCHED_OTHER",
            Policy::Fifo => "SCHED_FIFO",
            Policy::RoundRobin => "SCHED_RR",
            Policy::Batch => "SCHED_BATCH",
            Policy::Idle => "SCHED_IDLE",
            Policy::Deadline => "SCHED_DEADLINE",
            Policy::Ext => "SCHED_EXT",
        }
    }

    /// `true` for the fixed-priority real-time policies (`SCHED_FIFO`, `SCHED_RR`),
    /// whose priority is 1..=99 and which need CAP_SYS_NICE or RLIMIT_RTPRIO.
    #[inline]
    pub const fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::RoundRobin)
    }

    /// The lowest priority of this policy.
    ///
    /// # References
    ///  - [`sched_get_priority_min(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_min.2.html)
    #[doc(alias = "sched_get_priority_min")]
    pub fn priority_min(self) -> Result<i32> {
        crate::sys::sched::priority_min(self.as_raw())
            .map_err(|e| Error::from_errno("sched_get_priority_min", e))
    }

    /// The highest priority of this policy.
    ///
    /// # References
    ///  - [`sched_get_priority_max(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_max.2.html)
    #[doc(alias = "sched_get_priority_max")]
    pub fn priority_max(self) -> Result<i32> {
        crate::sys::sched::priority_max(self.as_raw())
            .map_err(|e| Error::from_errno("sched_get_priority_max", e))
    }

    /// `priority_min()..=priority_max()` (1..=99 for FIFO and RR on Linux, 0..=0 for
    /// the others; EINVAL for `SCHED_EXT` on a kernel before 6.12).
    ///
    /// # References
    ///  - [`sched_get_priority_min(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_min.2.html)
    #[doc(alias = "sched_get_priority_min")]
    #[doc(alias = "sched_get_priority_max")]
    pub fn priority_range(self) -> Result<RangeInclusive<i32>> {
        Ok(self.priority_min()?..=self.priority_max()?)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy with a priority that is valid for it.
///
/// Built with [`Priority::new`] (or [`fifo`](Priority::fifo),
/// [`round_robin`](Priority::round_robin), [`other`](Priority::other), ...), which
/// checks the value against `sched_get_priority_min/max(policy)`: an out-of-range value
/// is [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput), never clamped.
/// Values read back from the kernel are also returned as a `Priority`.
///
/// ```
/// use posixrt::sched::{Policy, Priority};
/// use posixrt::ErrorKind;
///
/// let p = Priority::fifo(80)?;
/// assert_eq!((p.policy(), p.value()), (Policy::Fifo, 80));
/// assert_eq!(Priority::fifo(0).unwrap_err().kind(), ErrorKind::InvalidInput);
/// assert_eq!(Priority::new(Policy::Other, 5).unwrap_err().kind(), ErrorKind::InvalidInput);
/// assert_eq!(Priority::other().to_string(), "SCHED_OTHER 0");
/// # Ok::<(), posixrt::Error>(())
/// ```
///
/// # References
///  - [`sched_get_priority_max(2)`](https://man7.org/linux/man-pages/man2/sched_get_priority_max.2.html)
///  - [`sched(7)`](https://man7.org/linux/man-pages/man7/sched.7.html)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Priority {
    policy: Policy,
    value: i32,
}

impl Priority {
    /// `value` for `policy`, checked against the policy's range.
    ///
    /// `Policy::Deadline` accepts only 0: a DEADLINE thread is described by
    /// [`deadline::Deadline`](super::deadline::Deadline), not a priority.
    pub fn new(policy: Policy, value: i32) -> Result<Priority> {
        let range = policy.priority_range()?;
        if !range.contains(&value) {
            // No call failed: the value is checked here, against the range
            // sched_get_priority_min/max reported.
            return Err(Error::invalid(
                "posixrt::sched::Priority::new",
                format!(
                    "priority {value} is outside {policy}'s range {}..={}",
                    range.start(),
                    range.end()
                ),
            )
            .with_hint(format!(
                "pick a value in {}..={} (sched_get_priority_min/max({policy}))",
                range.start(),
                range.end()
            )));
        }
        Ok(Priority { policy, value })
    }

    /// `SCHED_FIFO` at `value` (1..=99 on Linux).
    #[inline]
    pub fn fifo(value: i32) -> Result<Priority> {
        Priority::new(Policy::Fifo, value)
    }

    /// `SCHED_RR` at `value` (1..=99 on Linux).
    #[inline]
    pub fn round_robin(value: i32) -> Result<Priority> {
        Priority::new(Policy::RoundRobin, value)
    }

    /// `SCHED_OTHER`, priority 0 (always valid).
    #[inline]
    pub const fn other() -> Priority {
        Priority {
            policy: Policy::Other,
            value: 0,
        }
    }

    /// `SCHED_BATCH`, priority 0 (always valid).
    #[inline]
    pub const fn batch() -> Priority {
        Priority {
            policy: Policy::Batch,
            value: 0,
        }
    }

    /// `SCHED_IDLE`, priority 0 (always valid).
    #[inline]
    pub const fn idle() -> Priority {
        Priority {
            policy: Policy::Idle,
            value: 0,
        }
    }

    /// A pair the kernel reported; not re-validated.
    #[inline]
    pub(crate) const fn from_kernel(policy: Policy, value: i32) -> Priority {
        Priority { policy, value }
    }

    /// The policy.
    #[inline]
    pub const fn policy(&self) -> Policy {
        self.policy
    }

    /// The priority value (`sched_param.sched_priority`).
    #[inline]
    pub const fn value(&self) -> i32 {
        self.value
    }

    /// The `sched_param` to hand to libc.
    #[inline]
    pub(crate) fn param(&self) -> libc::sched_param {
        libc::sched_param {
            sched_priority: self.value,
        }
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.policy, self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::from_raw(p.as_raw()), Some(p));
        }
        assert_eq!(
            Policy::from_raw(libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK),
            Some(Policy::Fifo)
        );
        assert_eq!(Policy::from_raw(42), None);
    }

    #[test]
    fn sched_ext_is_read_not_refused() {
        // SCHED_EXT (7, Linux 6.12+): a thread some other code (a sched_ext
        // scheduler's loader, `chrt --ext`) moved there must be readable, and
        // movable back, which reads the former policy first.
        assert_eq!(Policy::from_raw(7).map(Policy::as_raw), Some(7));
        assert_eq!(
            Policy::from_raw(7).map(|p| p.to_string()).as_deref(),
            Some("SCHED_EXT")
        );
        assert_eq!(
            Policy::from_raw(7 | libc::SCHED_RESET_ON_FORK).map(Policy::as_raw),
            Some(7)
        );
        assert!(Policy::from_raw(7).is_some_and(|p| !p.is_realtime()));
    }

    #[test]
    fn ranges() {
        assert_eq!(Policy::Fifo.priority_range().unwrap(), 1..=99);
        assert_eq!(Policy::Other.priority_range().unwrap(), 0..=0);
        assert!(Priority::fifo(99).is_ok());
        assert!(Priority::fifo(100).is_err());
    }
}
