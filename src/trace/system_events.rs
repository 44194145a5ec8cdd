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
//! use posixrt::trace::system_events::{self as sys, Field, FieldType};
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
pub use super::schema::{decode, Field, FieldType, Value};

/// Registers a system event type with a payload layout and returns its process-wide
/// id; registering the same name with the same layout again returns the same id.
///
/// # Errors
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) for a bad name, a layout over
/// 256 bytes, one a log cannot describe (over 255 fields, or field names
/// adding up past 1 MiB), or a name registered with another layout;
/// [`OutOfResources`](crate::ErrorKind::OutOfResources) when the 88 ids of
/// registered events of a process (8..96) are taken.
pub fn register(name: &str, layout: &'static [Field]) -> crate::Result<EventId> {
    ids::register_sys(name, layout, false)
}

/// Like [`register`], for an event not associated with a process
/// (`POSIX_TRACE_WOPID_EVENTS`); it is recorded with pid 0. These events have
/// ids of their own (96..128; [`OutOfResources`](crate::ErrorKind::OutOfResources)
/// when the 32 are taken), so a set filled with
/// [`FillWhat::WithoutPid`](super::FillWhat::WithoutPid) holds the ones
/// registered after it was filled too.
pub fn register_wopid(name: &str, layout: &'static [Field]) -> crate::Result<EventId> {
    ids::register_sys(name, layout, true)
}

/// Records a system event in every running stream that does not filter it.
///
/// A relaxed load and a branch when no stream is running. Payloads longer than the
/// stream's maximum system payload are truncated and flagged.
#[inline]
pub fn emit(id: EventId, payload: &[u8]) {
    super::local::event(id, payload)
}

pub(crate) use super::local::NoSetup;

/// Sets the calling thread up to record in every stream that lives now (see
/// [`NoSetup`]): for a call that may allocate, ahead of the calls on the
/// thread that may run in a signal handler. Returns whether some stream lives.
#[inline]
pub(crate) fn prepare_thread() -> bool {
    super::local::prepare_thread()
}

/// Whether any stream is running, or counting events lost while an UNTIL_FULL
/// stream is suspended (one relaxed load): lets a module skip building a
/// payload nobody records.
#[inline]
pub fn enabled() -> bool {
    super::slots::any_running()
}

/// A system event declared as a `static`: registered on first use, then emitted
/// with one relaxed load and a branch when no stream runs. The way modules declare
/// their trace points.
///
/// ```
/// use posixrt::trace::system_events::{Field, FieldType, SysEvent};
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
        if self.id.load(std::sync::atomic::Ordering::Acquire) == 0 && super::local::setup_refused()
        {
            // Registering locks and allocates, which a call that may run in a
            // signal handler must not (see `NoSetup`): the event is lost.
            return super::local::count_lost_unregistered();
        }
        if let Ok(id) = self.id() {
            emit(id, payload);
        }
    }
}
