//! Event type identifiers and the process-wide table of event names.
//!
//! One id space of [`ID_SPACE`] ids, shared by every stream of the process:
//!
//! | ids | what |
//! |---|---|
//! | 0..=7 | the POSIX system events START, STOP, FILTER, OVERFLOW, RESUME, FLUSH_START, FLUSH_STOP, ERROR |
//! | 8..96 | system events registered by other modules through [`system_events::register`](super::system_events::register) |
//! | 96..128 | system events not associated with a process, registered through [`system_events::register_wopid`](super::system_events::register_wopid) |
//! | 128 | `posix_trace_unnamed_userevent`, given once [`TRACE_USER_EVENT_MAX`] names are taken |
//! | 129..1024 | user events opened by name |

use crate::sys::pilock::{PiLocked, RawPiLock};
use lock_api::RawMutex as _;
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};

use super::schema::{Field, FieldType};

/// A payload field as stored in a type description: its name and type.
pub type FieldDesc = (String, FieldType);

/// Size of the event id space (system and user); a filter is a bitmap of this many bits.
pub const ID_SPACE: usize = 1024;
const _: () = assert!(ID_SPACE / 8 == super::schema::EVENT_SET_BYTES);
/// First user event id.
pub(crate) const USER_BASE: u16 = 128;
/// First id of the registered system events not associated with a process:
/// they have ids of their own, so a set filled with them
/// ([`FillWhat::WithoutPid`](super::FillWhat::WithoutPid)) holds the ones
/// registered after it was filled too.
pub(crate) const WOPID_BASE: u16 = 96;
/// First id of the registered system events (of a process or not).
const SYS_BASE: u16 = 8;
/// `Names::next_sys`, readable without the lock (see [`next_sys_id`]).
static NEXT_SYS: AtomicU16 = AtomicU16::new(SYS_BASE);

/// The id the next registered system event of a process takes (unless another
/// registration comes first): what a trace point that may not register asks a
/// stream's filter about. Async-signal-safe (a load).
pub(super) fn next_sys_id() -> u16 {
    NEXT_SYS.load(Ordering::Relaxed)
}

/// Maximum number of named user event types per process (`TRACE_USER_EVENT_MAX`).
pub const TRACE_USER_EVENT_MAX: usize = ID_SPACE - USER_BASE as usize - 1;
/// Maximum system event types (built-in and registered).
pub const TRACE_SYS_EVENT_MAX: usize = USER_BASE as usize;
/// Maximum length of an event name in bytes (`TRACE_EVENT_NAME_MAX`).
pub const TRACE_EVENT_NAME_MAX: usize = 64;
/// Largest record body a trace log holds (its readers take anything larger for
/// corruption): a system event layout's type record must fit it.
pub const MAX_RECORD: usize = 1 << 20;

/// An event type identifier (`trace_event_id_t`).
///
/// Obtained from [`eventid_open`](super::eventid_open), [`Trace::eventid_open`](super::Trace::eventid_open),
/// [`system_events::register`](super::system_events::register) or the constants below. Ids are process-wide:
/// the same name gives the same id in every stream.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct EventId(pub(crate) u16);

impl EventId {
    /// `POSIX_TRACE_START`: the stream started (payload: none).
    pub const START: EventId = EventId(0);
    /// `POSIX_TRACE_STOP`: the stream stopped (payload: `u32` reason: 0 = `stop()`, 1 = stream full, 2 = log full).
    pub const STOP: EventId = EventId(1);
    /// `POSIX_TRACE_FILTER`: the filter changed (payload: old set, new set, each 128 bytes: a bitmap of [`ID_SPACE`] bits, little-endian `u64` words).
    pub const FILTER: EventId = EventId(2);
    /// `POSIX_TRACE_OVERFLOW`: events were lost (payload: `u64` lost count, `u32` tid of the sub-buffer that lost them).
    pub const OVERFLOW: EventId = EventId(3);
    /// `POSIX_TRACE_RESUME`: recording resumed after an overflow (payload: none).
    pub const RESUME: EventId = EventId(4);
    /// `POSIX_TRACE_FLUSH_START`: a flush to the log began (payload: none).
    pub const FLUSH_START: EventId = EventId(5);
    /// `POSIX_TRACE_FLUSH_STOP`: a flush to the log ended (payload: `u64` events written).
    pub const FLUSH_STOP: EventId = EventId(6);
    /// `POSIX_TRACE_ERROR`: writing the log failed (payload: `i32` errno).
    pub const ERROR: EventId = EventId(7);
    /// `POSIX_TRACE_UNNAMED_USEREVENT`: given when the user event limit is reached.
    pub const UNNAMED_USER: EventId = EventId(USER_BASE);

    /// The raw id (stable within a process and recorded in logs).
    #[inline]
    pub fn raw(self) -> u16 {
        self.0
    }

    /// An id from its raw value, if it is inside the id space.
    pub fn from_raw(raw: u16) -> Option<EventId> {
        ((raw as usize) < ID_SPACE).then_some(EventId(raw))
    }

    /// Whether this is a system event (built-in or registered by a module).
    #[inline]
    pub fn is_system(self) -> bool {
        self.0 < USER_BASE
    }

    /// `posix_trace_eventid_equal`: whether two ids denote the same type.
    ///
    /// # References
    /// - [`posix_trace_eventid_equal`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
    #[inline]
    #[doc(alias = "posix_trace_eventid_equal")]
    pub fn equal(self, other: EventId) -> bool {
        self == other
    }
}

/// The description of one event type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventType {
    /// Its id.
    pub id: EventId,
    /// Its name.
    pub name: String,
    /// Payload layout of a system event (empty for user events: opaque bytes).
    pub fields: Vec<FieldDesc>,
    /// A system event not associated with a process (`POSIX_TRACE_WOPID_EVENTS`); recorded with pid 0.
    pub wopid: bool,
}

pub(crate) struct Names {
    pub(crate) types: Vec<Option<EventType>>,
    next_sys: u16,
    next_wopid: u16,
    next_user: u16,
}

/// The name table. Priority-inheriting: a system event's id is registered on its
/// first emission, which can be on an RT thread's path (a lock's trace point).
static NAMES: PiLocked<Option<Names>> = PiLocked::const_new(RawPiLock::INIT, None);
/// In a forked child: forgets a holder of the name table (a parent thread that
/// does not exist there). Async-signal-safe (one atomic store).
pub(super) fn names_reset_in_child() {
    // SAFETY: the child has one thread, which holds nothing.
    unsafe { NAMES.raw() }.reset_in_child();
}

/// Bumped whenever a name is added, so log writers know to write the new names.
pub(crate) static NAMES_GEN: AtomicUsize = AtomicUsize::new(0);

const fn f(name: &'static str, ty: FieldType) -> Field {
    Field { name, ty }
}

pub(crate) static STOP_FIELDS: [Field; 1] = [f("reason", FieldType::U32)];
pub(crate) static FILTER_FIELDS: [Field; 2] =
    [f("old", FieldType::EventSet), f("new", FieldType::EventSet)];
pub(crate) static OVERFLOW_FIELDS: [Field; 2] =
    [f("lost", FieldType::U64), f("tid", FieldType::U32)];
pub(crate) static FLUSH_STOP_FIELDS: [Field; 1] = [f("written", FieldType::U64)];
pub(crate) static ERROR_FIELDS: [Field; 1] = [f("errno", FieldType::I32)];

fn builtin() -> Names {
    let mut types = vec![None; ID_SPACE];
    let sys: [(&str, &[Field], bool); 8] = [
        ("posix_trace_start", &[], false),
        ("posix_trace_stop", &STOP_FIELDS, false),
        ("posix_trace_filter", &FILTER_FIELDS, false),
        ("posix_trace_overflow", &OVERFLOW_FIELDS, true),
        ("posix_trace_resume", &[], true),
        ("posix_trace_flush_start", &[], false),
        ("posix_trace_flush_stop", &FLUSH_STOP_FIELDS, false),
        ("posix_trace_error", &ERROR_FIELDS, true),
    ];
    for (i, (name, fields, wopid)) in sys.iter().enumerate() {
        types[i] = Some(EventType {
            id: EventId(i as u16),
            name: (*name).to_string(),
            fields: fields.iter().map(|f| (f.name.to_string(), f.ty)).collect(),
            wopid: *wopid,
        });
    }
    types[USER_BASE as usize] = Some(EventType {
        id: EventId::UNNAMED_USER,
        name: "posix_trace_unnamed_userevent".to_string(),
        fields: Vec::new(),
        wopid: false,
    });
    Names {
        types,
        next_sys: SYS_BASE,
        next_wopid: WOPID_BASE,
        next_user: USER_BASE + 1,
    }
}

pub(crate) fn names() -> lock_api::MutexGuard<'static, RawPiLock, Option<Names>> {
    let mut g = NAMES.lock();
    if g.is_none() {
        *g = Some(builtin());
    }
    g
}

pub(crate) fn with_names<R>(f: impl FnOnce(&mut Names) -> R) -> R {
    let mut g = names();
    match g.as_mut() {
        Some(n) => f(n),
        None => unreachable!("names() initialises the table"),
    }
}

/// A name over [`TRACE_EVENT_NAME_MAX`] bytes is ENAMETOOLONG (as POSIX has it
/// for `posix_trace_eventid_open`); an empty one or one with NUL is EINVAL.
fn check_name(call: &'static str, name: &str) -> crate::Result<()> {
    check_name_bytes(call, name.as_bytes())
}

/// [`check_name`] for a name of bytes.
fn check_name_bytes(call: &'static str, name: &[u8]) -> crate::Result<()> {
    let (errno, hint) = if name.len() > TRACE_EVENT_NAME_MAX {
        (
            libc::ENAMETOOLONG,
            "shorten the name (TRACE_EVENT_NAME_MAX)",
        )
    } else if name.is_empty() || name.contains(&0) {
        (
            libc::EINVAL,
            "name the event type: not empty, and without NUL",
        )
    } else {
        return Ok(());
    };
    let name = String::from_utf8_lossy(name);
    Err(crate::Error::from_errno(call, errno)
        .with_message(format!(
            "event name {name:?} must be 1..={TRACE_EVENT_NAME_MAX} bytes without NUL"
        ))
        .with_hint(hint))
}

/// Opens a user event type by name (`posix_trace_eventid_open`).
pub(crate) fn open_user(name: &str) -> crate::Result<EventId> {
    open_user_for("posix_trace_eventid_open", name)
}

/// [`open_user`] for the C function `call` (a stream's
/// `posix_trace_trid_eventid_open`), which a refusal names.
pub(crate) fn open_user_for(call: &'static str, name: &str) -> crate::Result<EventId> {
    check_name(call, name)?;
    Ok(open_checked(name))
}

/// Opens a user event type by a name of bytes (the C API's: POSIX names are
/// byte strings). UTF-8 opens the same type as [`open_user`]; other bytes
/// open the type named by [`name_from_bytes`], checked as bytes (1 to
/// [`TRACE_EVENT_NAME_MAX`] of them, no NUL).
pub(crate) fn open_user_bytes(name: &[u8]) -> crate::Result<EventId> {
    match std::str::from_utf8(name) {
        Ok(s) => open_user(s),
        Err(_) => {
            check_name_bytes("posix_trace_eventid_open", name)?;
            Ok(open_checked(&name_from_bytes(name)))
        }
    }
}

/// A type name for a name of bytes, lossless: UTF-8 as it is; other bytes as
/// NUL followed by each byte read as Latin-1 (the character of the same
/// number, U+0080..=U+00FF above ASCII). No name opened from UTF-8 holds NUL
/// ([`check_name`]), so the two never meet, and [`name_bytes`] gives the bytes
/// back. Such a name reads as NUL and Latin-1 text in logs and exports.
pub(crate) fn name_from_bytes(name: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(name) {
        Ok(s) => s.into(),
        Err(_) => std::iter::once('\0')
            .chain(name.iter().map(|&b| char::from(b)))
            .collect::<String>()
            .into(),
    }
}

/// The bytes of a type name, as given to [`name_from_bytes`].
pub(crate) fn name_bytes(name: &str) -> std::borrow::Cow<'_, [u8]> {
    if let Some(rest) = name.strip_prefix('\0') {
        if let Ok(b) = rest
            .chars()
            .map(u8::try_from)
            .collect::<Result<Vec<u8>, _>>()
        {
            if std::str::from_utf8(&b).is_err() {
                return b.into();
            }
        }
    }
    name.as_bytes().into()
}

/// [`open_user`] past the check of the name.
fn open_checked(name: &str) -> EventId {
    with_names(|n| {
        if let Some(t) = n
            .types
            .iter()
            .flatten()
            .find(|t| !t.id.is_system() && t.name == name)
        {
            return t.id;
        }
        if (n.next_user as usize) >= ID_SPACE {
            return EventId::UNNAMED_USER;
        }
        let id = EventId(n.next_user);
        n.next_user += 1;
        n.types[id.0 as usize] = Some(EventType {
            id,
            name: name.to_string(),
            fields: Vec::new(),
            wopid: false,
        });
        NAMES_GEN.fetch_add(1, Ordering::Release);
        id
    })
}

/// Registers a system event type (idempotent by name).
pub(crate) fn register_sys(name: &str, fields: &[Field], wopid: bool) -> crate::Result<EventId> {
    check_name("trace::system_events::register", name)?;
    with_names(|n| {
        if let Some(t) = n
            .types
            .iter()
            .flatten()
            .find(|t| t.id.is_system() && t.name == name)
        {
            if t.fields.len() != fields.len()
                || t.fields
                    .iter()
                    .zip(fields)
                    .any(|(a, b)| a.0 != b.name || a.1 != b.ty)
            {
                return Err(crate::Error::invalid(
                    "trace::system_events::register",
                    format!("system event {name:?} already registered with another layout"),
                )
                .with_hint("register each system event name once, with one layout"));
            }
            return Ok(t.id);
        }
        // Each kind from its own range: see `WOPID_BASE`.
        let (next, base, end, what) = if wopid {
            (n.next_wopid, WOPID_BASE, USER_BASE, "without")
        } else {
            (n.next_sys, SYS_BASE, WOPID_BASE, "of")
        };
        if next >= end {
            return Err(crate::Error::new(
                crate::ErrorKind::OutOfResources,
                "trace::system_events::register",
                format!(
                    "all {} ids of registered system events {what} a process are taken",
                    end - base
                ),
            )
            .with_hint("register fewer system event types"));
        }
        let size: usize = fields.iter().map(|f| f.ty.size()).sum();
        if size > super::attr::MAX_SYS_PAYLOAD {
            return Err(crate::Error::invalid(
                "trace::system_events::register",
                format!(
                    "payload of {size} bytes exceeds {} bytes",
                    super::attr::MAX_SYS_PAYLOAD
                ),
            )
            .with_hint("split the event or shrink its fields"));
        }
        check_layout_fits(name, fields)?;
        let id = EventId(next);
        if wopid {
            n.next_wopid += 1;
        } else {
            n.next_sys += 1;
            NEXT_SYS.store(n.next_sys, Ordering::Relaxed);
        }
        n.types[id.0 as usize] = Some(EventType {
            id,
            name: name.to_string(),
            fields: fields.iter().map(|f| (f.name.to_string(), f.ty)).collect(),
            wopid,
        });
        NAMES_GEN.fetch_add(1, Ordering::Release);
        Ok(id)
    })
}

/// A layout a log's type record can hold: it counts the fields in a byte, each
/// name in a `u16`, and must fit one record (`MAX_RECORD`). Refused otherwise,
/// rather than written as a record that reads back without its fields or that
/// stops the reader as corrupt.
fn check_layout_fits(name: &str, fields: &[Field]) -> crate::Result<()> {
    let record = 1 + 2 + 1 + 2 + name.len() + 1;
    let record = record + fields.iter().map(|f| 3 + f.name.len()).sum::<usize>();
    let long = fields.iter().any(|f| f.name.len() > usize::from(u16::MAX));
    if fields.len() <= usize::from(u8::MAX) && !long && record <= MAX_RECORD {
        return Ok(());
    }
    Err(crate::Error::invalid(
        "trace::system_events::register",
        format!(
            "system event {name:?}: a layout of {} fields and {record} bytes of names does \
             not fit a log's type record (at most 255 fields, 1 MiB)",
            fields.len()
        ),
    )
    .with_hint("use fewer fields and short field names"))
}

/// The name of an id (`posix_trace_eventid_get_name`).
pub(crate) fn name_of(id: EventId) -> Option<String> {
    with_names(|n| n.types.get(id.0 as usize)?.as_ref().map(|t| t.name.clone()))
}

/// Every known type, in id order.
pub(crate) fn all_types() -> Vec<EventType> {
    with_names(|n| n.types.iter().flatten().cloned().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A C name that is not UTF-8 gets a type name of its own, losslessly:
    /// the same bytes open the same type, other bytes (the UTF-8 spelling of
    /// the same text included) another one, and the bytes come back. No name
    /// the Rust API takes is such a name (they hold NUL).
    #[test]
    fn byte_names_map_losslessly_apart_from_utf8_names() {
        let latin = b"ids.caf\xe9";
        let name = name_from_bytes(latin);
        assert_eq!(name, "\0ids.caf\u{e9}");
        assert_eq!(&*name_bytes(&name), latin);
        assert_eq!(&*name_bytes("ids.caf\u{e9}"), "ids.caf\u{e9}".as_bytes());
        let a = open_user_bytes(latin).unwrap();
        assert_eq!(open_user_bytes(latin).unwrap(), a);
        assert_eq!(name_of(a).as_deref(), Some(&*name));
        assert_ne!(open_user("ids.caf\u{e9}").unwrap(), a);
        assert_ne!(open_user_bytes(b"ids.caf\xe8").unwrap(), a);
        assert_eq!(
            open_user_bytes(b"ids.utf8").unwrap(),
            open_user("ids.utf8").unwrap()
        );
        assert_eq!(open_user(&name).unwrap_err().errno(), Some(libc::EINVAL));
        assert_eq!(
            open_user_bytes(&[0xff; 65]).unwrap_err().errno(),
            Some(libc::ENAMETOOLONG)
        );
        assert!(open_user_bytes(&[0xff; 64]).is_ok());
    }
}
