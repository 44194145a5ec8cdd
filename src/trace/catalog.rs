//! System events that posixrt's own modules emit, declared in one place so their
//! payload layouts are documented together (and written to every log, so `rtrace`
//! and the CTF export show the fields by name).
//!
//! | event | payload (little-endian, packed) | emitted by |
//! |---|---|---|
//! | `aio_submit` | `req: u64, fd: i32, op: u32, offset: i64, len: u64` | every AIO request entering the engine |
//! | `aio_complete` | `req: u64, fd: i32, op: u32, offset: i64, len: u64, result: i64` (bytes or `-errno`) | every request reaching its final state |
//! | `aio_cancel` | `req: u64, fd: i32, op: u32, offset: i64, len: u64, outcome: i32` (`AIO_CANCELED` 0, `AIO_NOTCANCELED` 1, `AIO_ALLDONE` 2) | every cancel attempt on a request |
//! | `aio_list_start` | `list: u32, entries: u32, wait: u32` | `lio_listio` start |
//! | `aio_list_end` | `list: u32` | `lio_listio`: every entry final |
//!
//! `op` is 0 read, 1 write, 2 fsync, 3 fdatasync. Get an id for a filter with
//! `catalog::AIO_SUBMIT.id()`.
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

static SUBMIT_L: [Field; 5] = [
    f("req", T::U64),
    f("fd", T::I32),
    f("op", T::U32),
    f("offset", T::I64),
    f("len", T::U64),
];
static COMPLETE_L: [Field; 6] = [
    f("req", T::U64),
    f("fd", T::I32),
    f("op", T::U32),
    f("offset", T::I64),
    f("len", T::U64),
    f("result", T::I64),
];
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
pub(crate) fn aio_submit(req: u64, fd: i32, op: u32, offset: i64, len: usize) {
    if super::sys::enabled() {
        let mut b = [0u8; 32];
        let n = req_fields(&mut b, req, fd, op, offset, len);
        AIO_SUBMIT.emit(&b[..n]);
    }
}

/// Emits `aio_complete`.
#[inline(always)]
pub(crate) fn aio_complete(req: u64, fd: i32, op: u32, offset: i64, len: usize, result: i64) {
    if super::sys::enabled() {
        let mut b = [0u8; 40];
        let mut n = req_fields(&mut b, req, fd, op, offset, len);
        put(&mut b, &mut n, &result.to_le_bytes());
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
        aio_submit(7, 3, 1, 4096, 512);
        aio_complete(7, 3, 1, 4096, 512, -5);
        aio_cancel(7, 3, 1, 4096, 512, 2);
        aio_list_start(1, 3, true);
        aio_list_end(1);
        t.stop().unwrap();
        let ty = |id| t.event_types().find(|x| x.id == id).unwrap().fields;
        let evs: Vec<_> = t
            .events()
            .filter(|e| e.id.is_system() && e.id.raw() >= 8)
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
            ("aio_submit", "req=7 fd=3 op=1 offset=4096 len=512"),
            (
                "aio_complete",
                "req=7 fd=3 op=1 offset=4096 len=512 result=-5",
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
