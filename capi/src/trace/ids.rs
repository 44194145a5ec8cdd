//! Event type ids across the C boundary, event sets and the eventid functions.
//!
//! A C `trace_event_id_t` below 1024 is the Rust id itself. The oc2000 extension
//! names (`traceMutexLock`, ...) are fixed C constants from `0x10001` up; they map to
//! system events registered in the process-wide catalogue on first use, so the
//! constants work in filters and compare with `posix_event_id` read back.

use std::ffi::{c_char, c_int, c_uint, c_ulong};
use std::sync::atomic::{AtomicU32, Ordering};

use rt::trace::system_events::{Field, FieldType};
use rt::trace::{EventId, EventSet, FillWhat, ID_SPACE};

use super::attr::{out, out_str};
use super::{get, lock, ret, Obj};
use crate::nocancel::NoCancel;

/// Bytes of an event name buffer, NUL included (`TRACE_EVENT_NAME_MAX` in trace.h).
pub(crate) const C_EVENT_NAME_MAX: usize = 65;
const EXT_BASE: c_uint = 0x10000;

/// The payload of the mutex events: five 64-bit words (see trace.h).
pub(crate) static MUTEX_LAYOUT: [Field; 5] = [
    Field {
        name: "error",
        ty: FieldType::I64,
    },
    Field {
        name: "tid",
        ty: FieldType::U64,
    },
    Field {
        name: "reserved",
        ty: FieldType::U64,
    },
    Field {
        name: "mutex",
        ty: FieldType::Hex64,
    },
    Field {
        name: "owner",
        ty: FieldType::U64,
    },
];

/// The extension names, in C constant order (`EXT_BASE + 1 + index`).
pub(crate) const EXT_NAMES: [&str; 6] = [
    "traceMutexLock",
    "traceMutexTryLock",
    "traceMutexUnlock",
    "traceSigGeneration",
    "traceSigDelivery",
    "traceSigCatchFunc",
];
pub(crate) const EXT_LOCK: usize = 0;
pub(crate) const EXT_TRYLOCK: usize = 1;
pub(crate) const EXT_UNLOCK: usize = 2;
pub(crate) const EXT_SIG_GENERATION: usize = 3;
pub(crate) const EXT_SIG_DELIVERY: usize = 4;

const fn field(name: &'static str) -> Field {
    Field {
        name,
        ty: FieldType::I32,
    }
}

/// `traceSigGeneration`: six 32-bit words (see the signal interposer).
static SIG_GENERATION_LAYOUT: [Field; 6] = [
    field("sender"),
    field("pid"),
    field("signo"),
    field("value"),
    field("thread_directed"),
    field("target"),
];
/// `traceSigDelivery`: three 32-bit words.
static SIG_DELIVERY_LAYOUT: [Field; 3] = [field("receiver"), field("signo"), field("value")];

/// Registered Rust id + 1 of each extension (0: not registered yet).
static EXT_IDS: [AtomicU32; 6] = [const { AtomicU32::new(0) }; 6];

/// The Rust id of extension `i`, registering it on first use.
#[cold]
fn register_ext(i: usize) -> Option<EventId> {
    let layout: &'static [Field] = match i {
        EXT_SIG_GENERATION => &SIG_GENERATION_LAYOUT,
        EXT_SIG_DELIVERY => &SIG_DELIVERY_LAYOUT,
        _ if i <= EXT_UNLOCK => &MUTEX_LAYOUT,
        _ => &[],
    };
    let id = rt::trace::system_events::register(EXT_NAMES[i], layout).ok()?;
    EXT_IDS[i].store(id.raw() as u32 + 1, Ordering::Release);
    Some(id)
}

#[inline]
pub(crate) fn ext_id(i: usize) -> Option<EventId> {
    match EXT_IDS[i].load(Ordering::Acquire) {
        0 => register_ext(i),
        n => EventId::from_raw((n - 1) as u16),
    }
}

/// The Rust id of a C id (`None`: not an id).
pub(crate) fn to_rust(id: c_uint) -> Option<EventId> {
    if (id as usize) < ID_SPACE {
        return EventId::from_raw(id as u16);
    }
    let i = id.checked_sub(EXT_BASE + 1)? as usize;
    if i < EXT_NAMES.len() {
        ext_id(i)
    } else {
        None
    }
}

/// True for the C ids of the mutex events (`traceMutexLock`,
/// `traceMutexTryLock`, `traceMutexUnlock`).
pub(crate) fn is_mutex_event(id: c_uint) -> bool {
    (EXT_BASE + 1 + EXT_LOCK as c_uint..=EXT_BASE + 1 + EXT_UNLOCK as c_uint).contains(&id)
}

/// The C id of a Rust id recorded in this process.
pub(crate) fn to_c(id: EventId) -> c_uint {
    let raw = id.raw() as u32 + 1;
    match EXT_IDS
        .iter()
        .position(|e| e.load(Ordering::Relaxed) == raw)
    {
        Some(i) => EXT_BASE + 1 + i as c_uint,
        None => id.raw() as c_uint,
    }
}

/// The C id of a Rust id read from a log, whose types are named in `name`.
pub(crate) fn to_c_named(id: EventId, name: Option<&str>) -> c_uint {
    if id.is_system() {
        if let Some(i) = name.and_then(|n| EXT_NAMES.iter().position(|e| *e == n)) {
            return EXT_BASE + 1 + i as c_uint;
        }
    }
    id.raw() as c_uint
}

/// `trace_event_set_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct CSet {
    bits: [u64; ID_SPACE / 64],
}

impl CSet {
    pub(crate) fn to_rust(self) -> EventSet {
        let mut s = EventSet::empty();
        for i in 0..ID_SPACE {
            if self.bits[i / 64] >> (i % 64) & 1 != 0 {
                if let Some(id) = EventId::from_raw(i as u16) {
                    s.add(id);
                }
            }
        }
        s
    }

    pub(crate) fn from_rust(s: &EventSet) -> CSet {
        let mut c = CSet {
            bits: [0; ID_SPACE / 64],
        };
        for id in s.iter() {
            let i = id.raw() as usize;
            c.bits[i / 64] |= 1 << (i % 64);
        }
        c
    }
}

fn set_mut<'a>(p: *mut CSet) -> Result<&'a mut CSet, c_int> {
    // SAFETY: a non-null `trace_event_set_t *` points to one (caller's contract).
    unsafe { p.as_mut() }.ok_or(libc::EINVAL)
}

pub(crate) fn set_ref<'a>(p: *const CSet) -> Result<&'a CSet, c_int> {
    // SAFETY: as in `set_mut`.
    unsafe { p.as_ref() }.ok_or(libc::EINVAL)
}

fn bit(id: c_uint) -> Result<(usize, u64), c_int> {
    let r = to_rust(id).ok_or(libc::EINVAL)?.raw() as usize;
    Ok((r / 64, 1 << (r % 64)))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_empty(set: *mut CSet) -> c_int {
    ret(set_mut(set).map(|s| s.bits = [0; ID_SPACE / 64]))
}

/// `what`: `POSIX_TRACE_WOPID_EVENTS` (0), `_SYSTEM_EVENTS` (1), `_ALL_EVENTS` (2);
/// anything else is `EINVAL`. POSIX has fill initialize the set (it may be
/// the first call on a set that holds garbage, as in listings 8.22 and 8.24):
/// the set holds the types `what` names and nothing else, not them added to
/// what it held.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_fill(set: *mut CSet, what: c_int) -> c_int {
    ret(set_mut(set).and_then(|s| {
        let w = match what {
            0 => FillWhat::WithoutPid,
            1 => FillWhat::System,
            2 => FillWhat::All,
            _ => return Err(libc::EINVAL),
        };
        let mut r = EventSet::empty();
        r.fill(w);
        *s = CSet::from_rust(&r);
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_add(event_id: c_uint, set: *mut CSet) -> c_int {
    ret(set_mut(set).and_then(|s| {
        let (w, b) = bit(event_id)?;
        s.bits[w] |= b;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_del(event_id: c_uint, set: *mut CSet) -> c_int {
    ret(set_mut(set).and_then(|s| {
        let (w, b) = bit(event_id)?;
        s.bits[w] &= !b;
        Ok(())
    }))
}

#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventset_ismember(
    event_id: c_uint,
    set: *const CSet,
    ismember: *mut c_int,
) -> c_int {
    ret(set_ref(set).and_then(|s| {
        let (w, b) = bit(event_id)?;
        out(ismember, (s.bits[w] & b != 0) as c_int)
    }))
}

/// The name's bytes, 1 to 64 of them: `EINVAL` for null or empty,
/// `ENAMETOOLONG` if it does not fit `TRACE_EVENT_NAME_MAX` with its NUL.
/// POSIX names are byte strings: any bytes are a name, UTF-8 or not.
fn name_arg<'a>(p: *const c_char) -> Result<&'a [u8], c_int> {
    if p.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: a non-null name is a NUL-terminated string (caller's contract).
    let b = unsafe { std::ffi::CStr::from_ptr(p) }.to_bytes();
    if b.len() >= C_EVENT_NAME_MAX {
        return Err(libc::ENAMETOOLONG);
    }
    if b.is_empty() {
        return Err(libc::EINVAL);
    }
    Ok(b)
}

/// The user event of a name: POSIX keeps user and system event names apart, so
/// a system event's name (an extension's included) opens a user event of its
/// own, never the system event. A name that is not UTF-8 has a type of its
/// own, named losslessly (`rt::trace::eventid_open_bytes`).
fn open_name(name: *const c_char) -> Result<c_uint, c_int> {
    let n = name_arg(name)?;
    rt::trace::eventid_open_bytes(n)
        .map(to_c)
        .map_err(|e| super::errno_of(&e))
}

/// Past 895 names (`TRACE_USER_EVENT_MAX` less the unnamed event), gives
/// `POSIX_TRACE_UNNAMED_USEREVENT`.
#[no_mangle]
pub unsafe extern "C" fn posix_trace_eventid_open(
    event_name: *const c_char,
    event_id: *mut c_uint,
) -> c_int {
    // The out-pointer is checked first: a call refused for it opens no name.
    if event_id.is_null() {
        return libc::EINVAL;
    }
    ret(open_name(event_name).and_then(|id| out(event_id, id)))
}

/// For a stream, as `posix_trace_eventid_open`; for a log, the id of a name the
/// log holds (`EINVAL` if it holds none): its user event of that name if it has
/// one, else its system event of that name.
#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_trid_eventid_open(
    trid: c_ulong,
    event_name: *const c_char,
    event: *mut c_uint,
) -> c_int {
    let _nc = NoCancel::new();
    if event.is_null() {
        return libc::EINVAL;
    }
    ret(get(trid).and_then(|o| match &*o {
        Obj::Stream { .. } => open_name(event_name).and_then(|id| out(event, id)),
        Obj::Log { log, .. } => {
            let n = rt::trace::event_name_from_bytes(name_arg(event_name)?);
            let l = lock(log);
            let named = || l.event_types().filter(|t| t.name == n);
            let t = named()
                .find(|t| !t.id.is_system())
                .or_else(|| named().next())
                .ok_or(libc::EINVAL)?;
            out(event, to_c_named(t.id, Some(&t.name)))
        }
    }))
}

fn name_in(o: &Obj, id: c_uint) -> Result<String, c_int> {
    match o {
        Obj::Stream { trace, .. } => {
            let r = to_rust(id).ok_or(libc::EINVAL)?;
            trace.eventid_name(r).map_err(|_| libc::EINVAL)
        }
        Obj::Log { log, .. } => {
            let l = lock(log);
            if let Some(i) = id.checked_sub(EXT_BASE + 1) {
                let n = EXT_NAMES.get(i as usize).ok_or(libc::EINVAL)?;
                return l
                    .event_types()
                    .any(|t| t.name == *n)
                    .then(|| n.to_string())
                    .ok_or(libc::EINVAL);
            }
            let r = EventId::from_raw(u16::try_from(id).map_err(|_| libc::EINVAL)?)
                .ok_or(libc::EINVAL)?;
            l.name(r).map(str::to_string).ok_or(libc::EINVAL)
        }
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_eventid_get_name(
    trid: c_ulong,
    event: c_uint,
    event_name: *mut c_char,
) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).and_then(|o| name_in(&o, event)).and_then(|n| {
        out_str(
            event_name,
            &rt::trace::event_name_bytes(&n),
            C_EVENT_NAME_MAX,
        )
    }))
}

/// Non-zero if the two ids denote the same event type (no error result).
#[no_mangle]
pub extern "C" fn posix_trace_eventid_equal(
    trid: c_ulong,
    event1: c_uint,
    event2: c_uint,
) -> c_int {
    let _ = trid;
    match (to_rust(event1), to_rust(event2)) {
        (Some(a), Some(b)) => a.equal(b) as c_int,
        _ => (event1 == event2) as c_int,
    }
}

/// The types a stream (this process's catalogue) or a log knows, in id
/// order: each one's raw id and C id.
fn type_list(o: &Obj) -> Vec<(usize, c_uint)> {
    match o {
        Obj::Stream { trace, .. } => trace
            .event_types()
            .map(|t| (t.id.raw() as usize, to_c(t.id)))
            .collect(),
        Obj::Log { log, .. } => lock(log)
            .event_types()
            .map(|t| (t.id.raw() as usize, to_c_named(t.id, Some(&t.name))))
            .collect(),
    }
}

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_eventtypelist_getnext_id(
    trid: c_ulong,
    event: *mut c_uint,
    unavailable: *mut c_int,
) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).and_then(|o| {
        if event.is_null() || unavailable.is_null() {
            return Err(libc::EINVAL);
        }
        // The cursor is the raw id the walk goes on from, not an index: a
        // type registered while a program walks the list (a system event,
        // on first use) may take an id below it, and an index then gave the
        // previous type again.
        let list = type_list(&o);
        let mut cur = lock(o.cursor());
        match list.iter().find(|(raw, _)| *raw >= *cur) {
            Some(&(raw, id)) => {
                *cur = raw + 1;
                out(event, id)?;
                out(unavailable, 0)
            }
            None => out(unavailable, 1),
        }
    }))
}

#[no_mangle]
pub unsafe extern "C-unwind" fn posix_trace_eventtypelist_rewind(trid: c_ulong) -> c_int {
    let _nc = NoCancel::new();
    ret(get(trid).map(|o| *lock(o.cursor()) = 0))
}
