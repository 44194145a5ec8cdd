//! The hints attached to scheduling errors: what privilege is missing and how to get it.

use rustix::process::{getrlimit, Resource};
use rustix::thread::CapabilitySet;

use super::Policy;
use crate::Error;

/// `Some(true)` if the calling thread has `cap` in its effective set, `None` if
/// the capability sets cannot be read.
pub(crate) fn has_capability(cap: CapabilitySet) -> Option<bool> {
    rustix::thread::capabilities(None)
        .ok()
        .map(|c| c.effective.contains(cap))
}

/// Formats an rlimit value (`unlimited` for `RLIM_INFINITY`).
pub(crate) fn fmt_limit(v: Option<u64>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "unlimited".to_string(),
    }
}

/// The current RLIMIT_RTPRIO as `(soft, hard)`; `None` means unlimited.
pub(crate) fn rtprio_limit() -> (Option<u64>, Option<u64>) {
    let l = getrlimit(Resource::Rtprio);
    (l.current, l.maximum)
}

/// The fix for EPERM when asking for a real-time policy (or raising a priority).
///
/// Names CAP_SYS_NICE (and whether this process has it), RLIMIT_RTPRIO with its current
/// soft and hard values, and the three ways out.
pub(crate) fn rt_permission_hint(policy: Option<Policy>, priority: Option<i32>) -> String {
    let cap = match has_capability(CapabilitySet::SYS_NICE) {
        Some(true) => "this process has CAP_SYS_NICE",
        Some(false) => "this process lacks CAP_SYS_NICE",
        None => "CAP_SYS_NICE state unknown",
    };
    let (soft, hard) = rtprio_limit();
    if policy == Some(Policy::Deadline) {
        return format!(
            "SCHED_DEADLINE needs CAP_SYS_NICE ({cap}; RLIMIT_RTPRIO does not grant it, \
             soft {} hard {}), and the thread's CPU affinity must cover every CPU of its \
             root domain; run as root or `sudo setcap cap_sys_nice+ep BINARY`, and do not \
             restrict the affinity of a DEADLINE thread",
            fmt_limit(soft),
            fmt_limit(hard)
        );
    }
    let want = match (policy, priority) {
        (Some(p), Some(v)) => format!("{p} priority {v} needs"),
        (Some(p), None) => format!("{p} needs"),
        _ => "real-time scheduling needs".to_string(),
    };
    let need = priority.map_or("N".to_string(), |v| v.to_string());
    format!(
        "{want} CAP_SYS_NICE ({cap}) or RLIMIT_RTPRIO >= {need} (soft limit {}, hard limit {}); \
         fix: run as root or `sudo setcap cap_sys_nice+ep BINARY`, or add \
         `USER - rtprio 99` to /etc/security/limits.conf and log in again, or, when the hard \
         limit allows it, call posixrt::sched::rt::raise_rtprio_limit({need})",
        fmt_limit(soft),
        fmt_limit(hard)
    )
}

/// The error for a failed scheduling call: EPERM gets [`rt_permission_hint`], ESRCH
/// says which id was not found.
pub(crate) fn sched_error(
    call: &'static str,
    errno: i32,
    tid: Option<i32>,
    policy: Option<Policy>,
    priority: Option<i32>,
) -> Error {
    let e = Error::from_errno(call, errno);
    match errno {
        libc::EPERM if call.contains("affinity") => e.with_hint(
            "changing the affinity of a thread owned by another user needs CAP_SYS_NICE; \
             run as that user or as root, or `sudo setcap cap_sys_nice+ep BINARY`",
        ),
        libc::EPERM => e.with_hint(rt_permission_hint(policy, priority)),
        libc::ESRCH => match tid {
            Some(t) => e.with_message(format!("no thread with tid {t}")),
            None => e,
        },
        libc::EINVAL => match (policy, priority) {
            (Some(p), Some(v)) => e.with_message(format!("{p} priority {v} refused")),
            _ => e,
        },
        _ => e,
    }
}

/// [`sched_error`] for the current `errno`.
pub(crate) fn sched_last_error(
    call: &'static str,
    tid: Option<i32>,
    policy: Option<Policy>,
    priority: Option<i32>,
) -> Error {
    let errno = std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO);
    sched_error(call, errno, tid, policy, priority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hint_names_cap_and_rlimit() {
        let h = rt_permission_hint(Some(Policy::Fifo), Some(80));
        assert!(h.contains("CAP_SYS_NICE"), "{h}");
        assert!(h.contains("RLIMIT_RTPRIO >= 80"), "{h}");
        assert!(h.contains("soft limit"), "{h}");
        assert!(h.contains("raise_rtprio_limit(80)"), "{h}");
        let e = sched_error(
            "sched_setscheduler",
            libc::EPERM,
            None,
            Some(Policy::Fifo),
            Some(1),
        );
        assert!(e.hint().unwrap().contains("limits.conf"));
    }
}
