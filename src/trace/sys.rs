//! The system event catalogue: other modules register their own system events here.
//!
//! A module registers each event once, with a name and a documented payload layout,
//! and gets a process-wide [`EventId`]; it then emits the payload bytes (the fields,
//! little-endian, packed in order). Emitting costs one relaxed load and a branch when
//! no stream is running. Registered events are system events: they are in
//! `EventSet::fill(FillWhat::System)`, filterable like any other, and logs carry their
//! layouts so `rtrace` prints their fields by name.
//!
//! The events posixrt's own modules emit are listed in [`catalog`](super::catalog).
//!
//! ```
//! use posixrt::trace::sys::{self, Field, FieldType};
//!
//! static LAYOUT: [Field; 2] = [
//!     Field { name: "fd", ty: FieldType::I32 },
//!     Field { name: "len", ty: FieldType::U64 },
//! ];
//! let id = sys::register("mymod_write", &LAYOUT).unwrap();
//! assert!(id.is_system());
//! let mut p = [0u8; 12];
//! p[..4].copy_from_slice(&3i32.to_le_bytes());
//! p[4..].copy_from_slice(&4096u64.to_le_bytes());
//! sys::emit(id, &p); // a no-op unless a stream is running
//! ```

use super::ids::{self, EventId};

/// The type of one payload field (all little-endian, packed without padding).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldType {
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u64` shown in hexadecimal (addresses, handles)
    Hex64,
    /// an event set: 128 bytes, a bitmap of the id space in little-endian `u64` words
    EventSet,
}

impl FieldType {
    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 | FieldType::I32 => 4,
            FieldType::U64 | FieldType::I64 | FieldType::Hex64 => 8,
            FieldType::EventSet => ids::ID_SPACE / 8,
        }
    }

    /// The code stored in logs.
    pub const fn code(self) -> u8 {
        match self {
            FieldType::U8 => 1,
            FieldType::U16 => 2,
            FieldType::U32 => 3,
            FieldType::U64 => 4,
            FieldType::I32 => 5,
            FieldType::I64 => 6,
            FieldType::Hex64 => 7,
            FieldType::EventSet => 8,
        }
    }

    /// The type from its log code.
    pub fn from_code(c: u8) -> Option<FieldType> {
        Some(match c {
            1 => FieldType::U8,
            2 => FieldType::U16,
            3 => FieldType::U32,
            4 => FieldType::U64,
            5 => FieldType::I32,
            6 => FieldType::I64,
            7 => FieldType::Hex64,
            8 => FieldType::EventSet,
            _ => return None,
        })
    }
}

/// One named payload field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Field name (printed by `rtrace`, a CTF field name: `[a-z_][a-z0-9_]*`).
    pub name: &'static str,
    /// Its type.
    pub ty: FieldType,
}

/// A decoded payload value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// An unsigned integer (`U8`..`U64`).
    U(u64),
    /// A signed integer (`I32`, `I64`).
    I(i64),
    /// A hexadecimal integer (`Hex64`).
    Hex(u64),
    /// The ids in an event set.
    Set(Vec<u16>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::U(v) => write!(f, "{v}"),
            Value::I(v) => write!(f, "{v}"),
            Value::Hex(v) => write!(f, "{v:#x}"),
            Value::Set(ids) => {
                write!(f, "{{")?;
                for (i, id) in ids.iter().enumerate() {
                    if i > 0 {
                        write!(f, ",")?;
                    }
                    write!(f, "{id}")?;
                }
                write!(f, "}}")
            }
        }
    }
}

/// Decodes a payload by its layout; `None` if the payload is shorter than the layout.
pub fn decode<'a>(
    fields: &'a [(String, FieldType)],
    payload: &[u8],
) -> Option<Vec<(&'a str, Value)>> {
    let mut out = Vec::with_capacity(fields.len());
    let mut at = 0usize;
    for fl in fields {
        let (name, ty) = (fl.0.as_str(), fl.1);
        let n = ty.size();
        let b = payload.get(at..at + n)?;
        at += n;
        let mut w = [0u8; 8];
        if n <= 8 {
            w[..n].copy_from_slice(b);
        }
        let u = u64::from_le_bytes(w);
        let v = match ty {
            FieldType::U8 | FieldType::U16 | FieldType::U32 | FieldType::U64 => Value::U(u),
            FieldType::I32 => Value::I(u as u32 as i32 as i64),
            FieldType::I64 => Value::I(u as i64),
            FieldType::Hex64 => Value::Hex(u),
            FieldType::EventSet => {
                let mut ids = Vec::new();
                for (wi, c) in b.chunks_exact(8).enumerate() {
                    let mut word = [0u8; 8];
                    word.copy_from_slice(c);
                    let mut x = u64::from_le_bytes(word);
                    while x != 0 {
                        ids.push((wi * 64) as u16 + x.trailing_zeros() as u16);
                        x &= x - 1;
                    }
                }
                Value::Set(ids)
            }
        };
        out.push((name, v));
    }
    Some(out)
}

/// Registers a system event type with a payload layout and returns its process-wide
/// id; registering the same name with the same layout again returns the same id.
///
/// # Errors
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) for a bad name, a layout over
/// 256 bytes, or a name registered with another layout;
/// [`OutOfResources`](crate::ErrorKind::OutOfResources) when the 120 module ids are taken.
pub fn register(name: &str, layout: &'static [Field]) -> crate::Result<EventId> {
    ids::register_sys(name, layout, false)
}

/// Like [`register`], for an event not associated with a process
/// (`POSIX_TRACE_WOPID_EVENTS`); it is recorded with pid 0.
pub fn register_wopid(name: &str, layout: &'static [Field]) -> crate::Result<EventId> {
    ids::register_sys(name, layout, true)
}

/// Records a system event in every running stream that does not filter it.
///
/// A relaxed load and a branch when no stream is running. Payloads longer than the
/// stream's maximum system payload are truncated and flagged.
#[inline]
pub fn emit(id: EventId, payload: &[u8]) {
    super::stream::event(id, payload)
}

/// Whether any stream is running (one relaxed load): lets a module skip building a
/// payload nobody records.
#[inline]
pub fn enabled() -> bool {
    super::stream::any_running()
}

/// A system event declared as a `static`: registered on first use, then emitted
/// with one relaxed load and a branch when no stream runs. The way modules declare
/// their trace points.
///
/// ```
/// use posixrt::trace::sys::{Field, FieldType, SysEvent};
///
/// static LAYOUT: [Field; 1] = [Field { name: "prio", ty: FieldType::I32 }];
/// static SETPRIO: SysEvent = SysEvent::new("doc_setprio", &LAYOUT);
///
/// SETPRIO.emit(&10i32.to_le_bytes()); // nothing runs: a load and a branch
/// assert!(SETPRIO.id().unwrap().is_system());
/// ```
pub struct SysEvent {
    name: &'static str,
    layout: &'static [Field],
    /// The registered id + 1 (0: not registered yet).
    id: std::sync::atomic::AtomicU16,
}

impl SysEvent {
    /// Declares a system event (nothing is registered until first use).
    pub const fn new(name: &'static str, layout: &'static [Field]) -> SysEvent {
        SysEvent {
            name,
            layout,
            id: std::sync::atomic::AtomicU16::new(0),
        }
    }

    /// The event's id, registering it if needed (for filters and for matching
    /// events read back).
    ///
    /// # Errors
    /// As [`register`].
    pub fn id(&self) -> crate::Result<EventId> {
        use std::sync::atomic::Ordering::{Acquire, Release};
        match self.id.load(Acquire) {
            0 => {
                let id = register(self.name, self.layout)?;
                self.id.store(id.raw() + 1, Release);
                Ok(id)
            }
            n => Ok(EventId(n - 1)),
        }
    }

    /// Records the event (the fields packed little-endian, in layout order) in every
    /// running stream that does not filter it.
    #[inline]
    pub fn emit(&self, payload: &[u8]) {
        if enabled() {
            self.emit_slow(payload);
        }
    }

    #[cold]
    fn emit_slow(&self, payload: &[u8]) {
        if let Ok(id) = self.id() {
            emit(id, payload);
        }
    }
}
