//! Trace hooks of the scheduling calls: `sched_change`, `sched_affinity` and
//! `sched_thread_create` system events (payload layouts in
//! [`crate::trace::catalog`]).
//!
//! With no trace stream running each hook is one relaxed load and a branch around
//! the wrapped call; with streams that all filter the event, a bit test more. When
//! a stream records it, the hooks read the thread's state from
//! the kernel before and after the change (`sched_getscheduler`, `sched_getparam`,
//! `sched_getaffinity`: a few hundred nanoseconds), so the event shows what the kernel
//! really applied, old and new, and the call's result.

use super::cpuset::CpuSet;
use super::tid::{gettid, Tid};
use crate::sys::sched as sys;
use crate::trace::catalog as tc;
use crate::trace::EventId;

/// The policy and priority of `tid` as the kernel has them (-1, -1 if unreadable).
/// The policy is the `SCHED_*` value alone: `sched_getscheduler` ORs
/// `SCHED_RESET_ON_FORK` into it for a thread with that flag, which the events'
/// policy fields do not carry.
fn sched_of(tid: i32) -> (i32, i32) {
    let policy = sys::getscheduler(tid).map(|p| p & !libc::SCHED_RESET_ON_FORK);
    match (policy, sys::getparam(tid)) {
        (Ok(p), Ok(v)) => (p, v),
        (Ok(p), Err(_)) => (p, -1),
        _ => (-1, -1),
    }
}

/// CPUs 0–63 of a set as a bit mask.
fn mask(set: &CpuSet) -> u64 {
    set.iter()
        .filter(|&c| c < 64)
        .fold(0u64, |m, c| m | (1u64 << c))
}

fn affinity_of(tid: i32) -> u64 {
    let mut set = CpuSet::new();
    match sys::getaffinity(tid, &mut set.raw) {
        Ok(()) => mask(&set),
        Err(_) => 0,
    }
}

/// The errno of a result (0 for success, EINVAL for a refusal without one).
fn code<R>(r: &crate::Result<R>) -> i32 {
    match r {
        Ok(_) => 0,
        Err(e) => e.errno().unwrap_or(libc::EINVAL),
    }
}

/// The kernel tid for a `sched_*` id (0: the calling thread).
fn who(tid: i32) -> i32 {
    if tid == 0 {
        gettid().as_raw()
    } else {
        tid
    }
}

/// Runs a policy or priority change `f` of thread `tid` (0: the caller) and emits
/// `sched_change` with the state before and after.
#[inline]
pub(crate) fn change<R>(tid: i32, f: impl FnOnce() -> crate::Result<R>) -> crate::Result<R> {
    match crate::trace::system_events::enabled()
        .then(|| tc::recorded(&tc::SCHED_CHANGE))
        .flatten()
    {
        Some(id) => change_traced(who(tid), f, code, id),
        None => f(),
    }
}

/// [`change`] for a raw call that returns the errno (`sched_setattr`).
#[inline]
pub(crate) fn change_raw(tid: i32, f: impl FnOnce() -> Result<(), i32>) -> Result<(), i32> {
    match crate::trace::system_events::enabled()
        .then(|| tc::recorded(&tc::SCHED_CHANGE))
        .flatten()
    {
        Some(id) => change_traced(who(tid), f, |r| r.err().unwrap_or(0), id),
        None => f(),
    }
}

#[cold]
fn change_traced<R>(
    tid: i32,
    f: impl FnOnce() -> R,
    code: impl FnOnce(&R) -> i32,
    id: EventId,
) -> R {
    let old = sched_of(tid);
    let r = f();
    let new = sched_of(tid);
    tc::Packer::<24>::new()
        .i32(tid)
        .i32(old.0)
        .i32(old.1)
        .i32(new.0)
        .i32(new.1)
        .i32(code(&r))
        .emit_id(id);
    r
}

/// Runs an affinity change `f` of thread `tid` and emits `sched_affinity` with the
/// masks before and after.
#[inline]
pub(crate) fn affinity(tid: Tid, f: impl FnOnce() -> crate::Result<()>) -> crate::Result<()> {
    match crate::trace::system_events::enabled()
        .then(|| tc::recorded(&tc::SCHED_AFFINITY))
        .flatten()
    {
        Some(id) => affinity_traced(tid.as_raw(), f, id),
        None => f(),
    }
}

#[cold]
fn affinity_traced(
    tid: i32,
    f: impl FnOnce() -> crate::Result<()>,
    id: EventId,
) -> crate::Result<()> {
    let old = affinity_of(tid);
    let r = f();
    let new = affinity_of(tid);
    tc::Packer::<24>::new()
        .i32(tid)
        .u64(old)
        .u64(new)
        .i32(code(&r))
        .emit_id(id);
    r
}

/// A thread was created (and its attributes applied): emits `sched_thread_create`
/// with the policy, priority and CPUs the kernel gave it.
#[inline]
pub(crate) fn thread_created(tid: Tid) {
    if crate::trace::system_events::enabled() {
        thread_created_traced(tid.as_raw())
    }
}

#[cold]
fn thread_created_traced(tid: i32) {
    let Some(id) = tc::recorded(&tc::SCHED_THREAD_CREATE) else {
        return;
    };
    let (policy, prio) = sched_of(tid);
    tc::Packer::<20>::new()
        .i32(tid)
        .i32(policy)
        .i32(prio)
        .u64(affinity_of(tid))
        .emit_id(id);
}
