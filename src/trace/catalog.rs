//! System events that posixrt's own modules emit, declared in one place so their
//! payload layouts are documented together (and written to every log, so `rtrace`
//! and the CTF export show the fields by name).
//!
//! | event | payload (little-endian, packed) | emitted by |
//! |---|---|---|
//! | `aio_submit` | `req: u64, fd: i32, op: u32, offset: i64, len: u64, prio: i32` (effective priority) | every AIO request entering the engine |
//! | `aio_complete` | `req: u64, fd: i32, op: u32, offset: i64, len: u64, result: i64` (bytes or `-errno`), `prio: i32` | every request reaching its final state |
//! | `aio_cancel` | `req: u64, fd: i32, op: u32, offset: i64, len: u64, outcome: i32` (`AIO_CANCELED` 0, `AIO_NOTCANCELED` 1, `AIO_ALLDONE` 2) | every cancel attempt on a request |
//! | `aio_list_start` | `list: u32, entries: u32, wait: u32` | `lio_listio` start |
//! | `aio_list_end` | `list: u32` | `lio_listio`: every entry final |
//! | `aio_notify_failed` | `signo: i32, errno: i32` | a `SIGEV_SIGNAL` or `SIGEV_THREAD_ID` could not be queued (`RLIMIT_SIGPENDING`; the thread ended) |
//! | `sync_lock` | `addr: hex64, tid: u32, owner: u32, result: i32` | every blocking or timed lock of a mutex (normal, recursive, PI, ceiling) and every write lock of a rwlock |
//! | `sync_trylock` | `addr: hex64, tid: u32, owner: u32, result: i32` | every trylock of those |
//! | `sync_unlock` | `addr: hex64, tid: u32, result: i32` | every unlock of those (recorded before the lock is released) |
//! | `sync_rdlock` | `addr: hex64, tid: u32, try: u32, result: i32` | every read lock of a rwlock (`try` 1 for a try) |
//! | `sync_rdunlock` | `addr: hex64, tid: u32` | every read unlock |
//! | `sync_cond_wait` | `addr: hex64, mutex: hex64, tid: u32, timed: u32` | a thread starts waiting on a condition variable |
//! | `sync_cond_signal` | `addr: hex64, tid: u32, broadcast: u32` | `notify_one` (0), `notify_all` (1) |
//! | `sync_sem_wait` | `addr: hex64, tid: u32, value: u32, result: i32` | a semaphore wait ended (`value` after it) |
//! | `sync_sem_post` | `addr: hex64, tid: u32, value: u32` | a semaphore post (`value` after it) |
//! | `sched_change` | `tid: i32, old_policy: i32, old_prio: i32, new_policy: i32, new_prio: i32, result: i32` | every policy or priority change through `sched` (also `deadline::set`) |
//! | `sched_affinity` | `tid: i32, old_cpus: hex64, new_cpus: hex64, result: i32` | every `set_thread_affinity` (CPUs 0–63 as a bit mask) |
//! | `sched_thread_create` | `tid: i32, policy: i32, prio: i32, cpus: hex64` | every thread made by `sched::Builder`, with the attributes the kernel applied |
//! | `mark_set` | `tid: u32, how: u32, len: u32`, then the marker bytes (at most 128) | every `mark::update` (`how` 0) and `mark::set` (1) that stores its marker, every `mark::clear` (2, empty text) |
//! | `sched_ss_exhausted` | `tid: i32, consumed_ns: u64, overrun_ns: u64, pending: u32` | the sporadic server saw a served thread spend its budget (`consumed` since activation, `overrun` past the budget, replenishments pending after it, including the one it scheduled unless that one was already due and carried out at once) |
//! | `sched_ss_replenished` | `tid: i32, amount_ns: u64, budget_ns: u64, pending: u32` | a replenishment of a served thread was applied (`budget` after it, capped at the initial budget; replenishments still pending after it) |
//! | `sched_ss_switch` | `tid: i32, prio: i32, high: u32, result: i32` | the sporadic server switched a served thread between its normal (`high` 1) and low priority |
//!
//! `op` is 0 read, 1 write, 2 fsync, 3 fdatasync. `result` of the sync events is 0
//! when acquired, else an errno (`EBUSY` for a trylock that found the lock held,
//! `ETIMEDOUT`, `EDEADLK`...); `owner` is the owner's tid after the attempt (0: free).
//! Policies are the `SCHED_*` numbers (0 OTHER, 1 FIFO, 2 RR, 3 BATCH, 5 IDLE,
//! 6 DEADLINE; -1 when the old value could not be read). The marker text of
//! `mark_set` follows the fixed fields: `len` bytes of UTF-8 (decoders that only know
//! the fields ignore it; `rtrace dump` prints it as `text=`). Get an id for a filter
//! with `catalog::AIO_SUBMIT.id()`.
//!
//! ```
//! use posixrt::trace::{catalog, EventSet};
//! let mut quiet = EventSet::empty();
//! quiet.add(catalog::AIO_SUBMIT.id()?); // record completions only
//! # Ok::<(), posixrt::Error>(())
//! ```

use super::sys::{Field, FieldType as T, SysEvent};

const fn f(name: &'static str, ty: T) -> Field {
    Field { name, ty }
}

static SUBMIT_L: [Field; 6] = [
    f("req", T::U64),
    f("fd", T::I32),
    f("op", T::U32),
    f("offset", T::I64),
    f("len", T::U64),
    f("prio", T::I32),
];
static COMPLETE_L: [Field; 7] = [
    f("req", T::U64),
    f("fd", T::I32),
    f("op", T::U32),
    f("offset", T::I64),
    f("len", T::U64),
    f("result", T::I64),
    f("prio", T::I32),
];
static NOTIFY_FAILED_L: [Field; 2] = [f("signo", T::I32), f("errno", T::I32)];
static CANCEL_L: [Field; 6] = [
    f("req", T::U64),
    f("fd", T::I32),
    f("op", T::U32),
    f("offset", T::I64),
    f("len", T::U64),
    f("outcome", T::I32),
];
static LIST_START_L: [Field; 3] = [f("list", T::U32), f("entries", T::U32), f("wait", T::U32)];
static LIST_END_L: [Field; 1] = [f("list", T::U32)];

/// `aio_submit`: a request entered the AIO engine.
pub static AIO_SUBMIT: SysEvent = SysEvent::new("aio_submit", &SUBMIT_L);
/// `aio_complete`: a request reached its final state.
pub static AIO_COMPLETE: SysEvent = SysEvent::new("aio_complete", &COMPLETE_L);
/// `aio_cancel`: a cancel was attempted.
pub static AIO_CANCEL: SysEvent = SysEvent::new("aio_cancel", &CANCEL_L);
/// `aio_list_start`: a `lio_listio` call started.
pub static AIO_LIST_START: SysEvent = SysEvent::new("aio_list_start", &LIST_START_L);
/// `aio_list_end`: every entry of a `lio_listio` call is final.
pub static AIO_LIST_END: SysEvent = SysEvent::new("aio_list_end", &LIST_END_L);
/// `aio_notify_failed`: a `SIGEV_SIGNAL` or `SIGEV_THREAD_ID` notification
/// could not be queued.
pub static AIO_NOTIFY_FAILED: SysEvent = SysEvent::new("aio_notify_failed", &NOTIFY_FAILED_L);

static LOCK_L: [Field; 4] = [
    f("addr", T::Hex64),
    f("tid", T::U32),
    f("owner", T::U32),
    f("result", T::I32),
];
static UNLOCK_L: [Field; 3] = [f("addr", T::Hex64), f("tid", T::U32), f("result", T::I32)];
static RDLOCK_L: [Field; 4] = [
    f("addr", T::Hex64),
    f("tid", T::U32),
    f("try", T::U32),
    f("result", T::I32),
];
static RDUNLOCK_L: [Field; 2] = [f("addr", T::Hex64), f("tid", T::U32)];
static COND_WAIT_L: [Field; 4] = [
    f("addr", T::Hex64),
    f("mutex", T::Hex64),
    f("tid", T::U32),
    f("timed", T::U32),
];
static COND_SIGNAL_L: [Field; 3] = [
    f("addr", T::Hex64),
    f("tid", T::U32),
    f("broadcast", T::U32),
];
static SEM_WAIT_L: [Field; 4] = [
    f("addr", T::Hex64),
    f("tid", T::U32),
    f("value", T::U32),
    f("result", T::I32),
];
static SEM_POST_L: [Field; 3] = [f("addr", T::Hex64), f("tid", T::U32), f("value", T::U32)];
static SCHED_CHANGE_L: [Field; 6] = [
    f("tid", T::I32),
    f("old_policy", T::I32),
    f("old_prio", T::I32),
    f("new_policy", T::I32),
    f("new_prio", T::I32),
    f("result", T::I32),
];
static AFFINITY_L: [Field; 4] = [
    f("tid", T::I32),
    f("old_cpus", T::Hex64),
    f("new_cpus", T::Hex64),
    f("result", T::I32),
];
static THREAD_CREATE_L: [Field; 4] = [
    f("tid", T::I32),
    f("policy", T::I32),
    f("prio", T::I32),
    f("cpus", T::Hex64),
];
static MARK_L: [Field; 3] = [f("tid", T::U32), f("how", T::U32), f("len", T::U32)];

/// `sync_lock`: a blocking or timed lock of a mutex or a rwlock's write lock.
pub static SYNC_LOCK: SysEvent = SysEvent::new("sync_lock", &LOCK_L);
/// `sync_trylock`: a trylock of a mutex or a rwlock's write lock.
pub static SYNC_TRYLOCK: SysEvent = SysEvent::new("sync_trylock", &LOCK_L);
/// `sync_unlock`: an unlock of a mutex or a rwlock's write lock.
pub static SYNC_UNLOCK: SysEvent = SysEvent::new("sync_unlock", &UNLOCK_L);
/// `sync_rdlock`: a read lock (or try) of a rwlock.
pub static SYNC_RDLOCK: SysEvent = SysEvent::new("sync_rdlock", &RDLOCK_L);
/// `sync_rdunlock`: a read unlock of a rwlock.
pub static SYNC_RDUNLOCK: SysEvent = SysEvent::new("sync_rdunlock", &RDUNLOCK_L);
/// `sync_cond_wait`: a thread starts waiting on a condition variable.
pub static SYNC_COND_WAIT: SysEvent = SysEvent::new("sync_cond_wait", &COND_WAIT_L);
/// `sync_cond_signal`: a condition variable was signalled or broadcast.
pub static SYNC_COND_SIGNAL: SysEvent = SysEvent::new("sync_cond_signal", &COND_SIGNAL_L);
/// `sync_sem_wait`: a semaphore wait ended.
pub static SYNC_SEM_WAIT: SysEvent = SysEvent::new("sync_sem_wait", &SEM_WAIT_L);
/// `sync_sem_post`: a semaphore was posted.
pub static SYNC_SEM_POST: SysEvent = SysEvent::new("sync_sem_post", &SEM_POST_L);
/// `sched_change`: a policy or priority change.
pub static SCHED_CHANGE: SysEvent = SysEvent::new("sched_change", &SCHED_CHANGE_L);
/// `sched_affinity`: an affinity change.
pub static SCHED_AFFINITY: SysEvent = SysEvent::new("sched_affinity", &AFFINITY_L);
/// `sched_thread_create`: a thread was created with attributes.
pub static SCHED_THREAD_CREATE: SysEvent = SysEvent::new("sched_thread_create", &THREAD_CREATE_L);
/// `mark_set`: a thread's marker changed (the text follows the fields).
pub static MARK_SET: SysEvent = SysEvent::new("mark_set", &MARK_L);

static SS_EXHAUSTED_L: [Field; 4] = [
    f("tid", T::I32),
    f("consumed_ns", T::U64),
    f("overrun_ns", T::U64),
    f("pending", T::U32),
];
static SS_REPLENISHED_L: [Field; 4] = [
    f("tid", T::I32),
    f("amount_ns", T::U64),
    f("budget_ns", T::U64),
    f("pending", T::U32),
];
static SS_SWITCH_L: [Field; 4] = [
    f("tid", T::I32),
    f("prio", T::I32),
    f("high", T::U32),
    f("result", T::I32),
];
/// `sched_ss_exhausted`: a sporadic-served thread spent its budget.
pub static SCHED_SS_EXHAUSTED: SysEvent = SysEvent::new("sched_ss_exhausted", &SS_EXHAUSTED_L);
/// `sched_ss_replenished`: a replenishment of a sporadic-served thread was applied.
pub static SCHED_SS_REPLENISHED: SysEvent =
    SysEvent::new("sched_ss_replenished", &SS_REPLENISHED_L);
/// `sched_ss_switch`: the sporadic server switched a thread's priority.
pub static SCHED_SS_SWITCH: SysEvent = SysEvent::new("sched_ss_switch", &SS_SWITCH_L);

/// Packs little-endian fields into a fixed buffer (for the hooks of other modules).
pub(crate) struct Packer<const N: usize> {
    b: [u8; N],
    at: usize,
}

impl<const N: usize> Packer<N> {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        Packer { b: [0u8; N], at: 0 }
    }
    #[inline(always)]
    pub(crate) fn u32(mut self, v: u32) -> Self {
        put(&mut self.b, &mut self.at, &v.to_le_bytes());
        self
    }
    #[inline(always)]
    pub(crate) fn i32(mut self, v: i32) -> Self {
        put(&mut self.b, &mut self.at, &v.to_le_bytes());
        self
    }
    #[inline(always)]
    pub(crate) fn u64(mut self, v: u64) -> Self {
        put(&mut self.b, &mut self.at, &v.to_le_bytes());
        self
    }
    /// Appends as many bytes of `v` as fit.
    #[inline]
    pub(crate) fn bytes(mut self, v: &[u8]) -> Self {
        let n = v.len().min(N - self.at);
        put(&mut self.b, &mut self.at, &v[..n]);
        self
    }
    /// Emits the packed payload under an id from [`recorded`].
    #[inline]
    pub(crate) fn emit_id(&self, id: super::EventId) {
        super::sys::emit(id, &self.b[..self.at]);
    }
}

/// The id of `ev` if some running stream records it (registered on first use), so a
/// trace point builds its payload only then: a stopped or filtering stream costs
/// a load and a bit test after the registration check.
#[inline]
pub(crate) fn recorded(ev: &SysEvent) -> Option<super::EventId> {
    let id = ev.id().ok()?;
    super::slots::passes(id).then_some(id)
}

#[inline(always)]
fn put<const N: usize>(b: &mut [u8; N], at: &mut usize, v: &[u8]) {
    b[*at..*at + v.len()].copy_from_slice(v);
    *at += v.len();
}

fn req_fields<const N: usize>(
    b: &mut [u8; N],
    req: u64,
    fd: i32,
    op: u32,
    offset: i64,
    len: usize,
) -> usize {
    let mut at = 0;
    put(b, &mut at, &req.to_le_bytes());
    put(b, &mut at, &fd.to_le_bytes());
    put(b, &mut at, &op.to_le_bytes());
    put(b, &mut at, &offset.to_le_bytes());
    put(b, &mut at, &(len as u64).to_le_bytes());
    at
}

/// Emits `aio_submit` (a load and a branch when no stream runs).
#[inline(always)]
pub(crate) fn aio_submit(req: u64, fd: i32, op: u32, offset: i64, len: usize, prio: i32) {
    if super::sys::enabled() {
        let mut b = [0u8; 40];
        let mut n = req_fields(&mut b, req, fd, op, offset, len);
        put(&mut b, &mut n, &prio.to_le_bytes());
        AIO_SUBMIT.emit(&b[..n]);
    }
}

/// Emits `aio_complete`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(crate) fn aio_complete(
    req: u64,
    fd: i32,
    op: u32,
    offset: i64,
    len: usize,
    result: i64,
    prio: i32,
) {
    if super::sys::enabled() {
        let mut b = [0u8; 48];
        let mut n = req_fields(&mut b, req, fd, op, offset, len);
        put(&mut b, &mut n, &result.to_le_bytes());
        put(&mut b, &mut n, &prio.to_le_bytes());
        AIO_COMPLETE.emit(&b[..n]);
    }
}

/// Emits `aio_cancel`.
#[inline(always)]
pub(crate) fn aio_cancel(req: u64, fd: i32, op: u32, offset: i64, len: usize, outcome: i32) {
    if super::sys::enabled() {
        let mut b = [0u8; 40];
        let mut n = req_fields(&mut b, req, fd, op, offset, len);
        put(&mut b, &mut n, &outcome.to_le_bytes());
        AIO_CANCEL.emit(&b[..n]);
    }
}

/// Emits `aio_notify_failed`.
#[inline(always)]
pub(crate) fn aio_notify_failed(signo: i32, errno: i32) {
    if super::sys::enabled() {
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&signo.to_le_bytes());
        b[4..].copy_from_slice(&errno.to_le_bytes());
        AIO_NOTIFY_FAILED.emit(&b);
    }
}

/// Emits `aio_list_start`.
#[inline(always)]
pub(crate) fn aio_list_start(list: u32, entries: usize, wait: bool) {
    if super::sys::enabled() {
        let mut b = [0u8; 12];
        let mut n = 0;
        put(&mut b, &mut n, &list.to_le_bytes());
        put(&mut b, &mut n, &(entries as u32).to_le_bytes());
        put(&mut b, &mut n, &(wait as u32).to_le_bytes());
        AIO_LIST_START.emit(&b);
    }
}

/// Emits `aio_list_end`.
#[inline(always)]
pub(crate) fn aio_list_end(list: u32) {
    if super::sys::enabled() {
        AIO_LIST_END.emit(&list.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{sys, Trace, TraceAttr};

    #[test]
    fn aio_payloads_decode_by_layout() {
        let t = Trace::create(&TraceAttr::new()).unwrap();
        t.start().unwrap();
        aio_submit(7, 3, 1, 4096, 512, 75);
        aio_complete(7, 3, 1, 4096, 512, -5, 75);
        aio_cancel(7, 3, 1, 4096, 512, 2);
        aio_list_start(1, 3, true);
        aio_list_end(1);
        t.stop().unwrap();
        let ty = |id| t.event_types().find(|x| x.id == id).unwrap().fields;
        // This thread's only: the stream records the whole process, and
        // other tests' threads (a sync test's lock events) run meanwhile.
        let tid = crate::sys::tid::current();
        let evs: Vec<_> = t
            .events()
            .filter(|e| e.tid == tid && e.id.is_system() && e.id.raw() >= 8)
            .collect();
        let mut got = Vec::new();
        for e in &evs {
            let fields = ty(e.id);
            let v = sys::decode(&fields, &e.data).unwrap();
            got.push((
                t.eventid_name(e.id).unwrap(),
                v.iter()
                    .map(|(n, v)| format!("{n}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ));
        }
        let want = [
            ("aio_submit", "req=7 fd=3 op=1 offset=4096 len=512 prio=75"),
            (
                "aio_complete",
                "req=7 fd=3 op=1 offset=4096 len=512 result=-5 prio=75",
            ),
            (
                "aio_cancel",
                "req=7 fd=3 op=1 offset=4096 len=512 outcome=2",
            ),
            ("aio_list_start", "list=1 entries=3 wait=1"),
            ("aio_list_end", "list=1"),
        ];
        let got: Vec<(&str, &str)> = got.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(got, want);
    }
}
