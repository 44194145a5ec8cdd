//! The POSIX trace facility: streams, filters, event types, logs and analysis.
//!
//! Linux has no `<trace.h>`; this module is the whole POSIX trace option as a Rust
//! API, with a recording path near the hardware floor.
//!
//! The links to POSIX in this module go to the 2008 edition (Issue 7), not to the
//! 2024 edition the rest of the crate links: the Trace option was marked
//! obsolescent in 2008 and POSIX.1-2024 (Issue 8) removed it, so Issue 7 is the
//! last edition that specifies these functions. Each item carries its C name as a
//! documentation alias (search the docs for `posix_trace_create`).
//!
//! | POSIX | here |
//! |---|---|
//! | `trace_attr_t`, `posix_trace_attr_*` | [`TraceAttr`] |
//! | `posix_trace_create`, `_create_withlog` | [`Trace::create`], [`Trace::create_with_log`] |
//! | `posix_trace_start`, `_stop`, `_shutdown`, `_flush`, `_clear` | methods of [`Trace`] |
//! | `posix_trace_get_attr`, `_get_status` | [`Trace::attr`], [`Trace::status`] ([`TraceStatus`]) |
//! | `posix_trace_get_filter`, `_set_filter`, `posix_trace_eventset_*` | [`Trace::filter`], [`Trace::set_filter`], [`EventSet`] |
//! | `posix_trace_eventid_open`, `_trid_eventid_open`, `_eventid_get_name`, `_eventid_equal` | [`eventid_open`], [`Trace::eventid_open`], [`Trace::eventid_name`], [`EventId::equal`] |
//! | `posix_trace_eventtypelist_getnext_id`, `_rewind` | [`Trace::event_types`] |
//! | `posix_trace_event` | [`event`] |
//! | `posix_trace_getnext_event`, `_timedgetnext_event`, `_trygetnext_event` | [`Trace::getnext`], [`Trace::timed_getnext`], [`Trace::try_getnext`], [`Trace::events`] |
//! | `posix_trace_open`, `_rewind`, `_close` | [`TraceLog`] |
//! | implementation-defined system events | [`system_events`]: a catalogue other modules register into ([`schema`]: their payload layouts) |
//!
//! ```
//! use posixrt::trace::{self, EventId, Trace, TraceAttr};
//!
//! let t = Trace::create(&TraceAttr::new())?;
//! let grab = trace::eventid_open("fork grab")?;
//! t.start()?;
//! trace::event(grab, &1i32.to_le_bytes());
//! t.stop()?;
//! let ids: Vec<EventId> = t.events().map(|e| e.id).collect();
//! assert_eq!(ids, [EventId::START, grab, EventId::STOP]);
//! # Ok::<(), posixrt::Error>(())
//! ```
//!
//! # Recording
//!
//! [`event`] loads one process-wide word (a bit per event id: whether some running
//! stream records it) and returns if the bit is clear: a load and a branch, inlined
//! into the caller, whether no stream runs or every running one filters the id.
//! Otherwise, per running stream (one running stream needs no filter check), it
//! writes a 16-byte header (id, length, tid, TSC) and the data into the calling
//! thread's own sub-buffer: no lock, no allocation, no syscall, and no cache line
//! written by two threads. A record of up to 8 bytes of data that fits takes a path
//! without a call or a loop. Each thread gets
//! its sub-buffer on its first event (that one call allocates); the sub-buffer of a
//! thread that exited is unmapped once it has been read empty. Readers merge the
//! sub-buffers by timestamp, so events come oldest first.
//!
//! The stream size is per sub-buffer (rounded up to a power of two, plus room for one
//! event of maximum size and a STOP event): while the sum of the maximum sizes of the
//! events a thread records does not exceed the stream size, nothing is lost. LOOP
//! overwrites the oldest events of the recording thread's sub-buffer. Memory: up to
//! [`Trace::sub_buffer_bytes`] (2 MiB for the default 1 MiB stream size) per thread
//! that ever recorded into the stream, until it exits and its sub-buffer is read
//! empty.
//!
//! Timestamps are TSC ticks calibrated against `CLOCK_MONOTONIC` when the TSC is
//! invariant (`constant_tsc` and `nonstop_tsc`), else `CLOCK_MONOTONIC` itself; events
//! carry `CLOCK_MONOTONIC` nanoseconds. The program address is not recorded (0).
//!
//! A stream with a log has a flusher thread that writes the log; traced threads never
//! write files and never wait for it. It writes when a FLUSH stream's sub-buffer is
//! an eighth full, at least every [`TraceAttr::flush_interval`] (100 ms by default)
//! while anything is unwritten, at `shutdown`, at process exit, and on SIGINT,
//! SIGTERM, SIGSEGV and SIGABRT: the signal handler (async-signal-safe) has the
//! flusher write everything, then the signal takes its previous disposition (a
//! handler installed earlier runs; the default action ends the process). A log
//! whose process was killed ends cleanly after its last record, without the end
//! record; readers report it as cut ([`ErrorKind::Truncated`](crate::ErrorKind::Truncated)).
//! `POSIX_TRACE_INHERITED` and tracing another process are refused
//! ([`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported)); a forked child
//! records nothing (`POSIX_TRACE_CLOSE_FOR_CHILD`).
//!
//! # Log file format
//!
//! Version 3 (version 2 lacks kind 7, version 1 kinds 6 and 7; readers take
//! all three, and refuse as corrupt a record of a kind the header's version
//! lacks), all integers little-endian. Events are in time order within each flush
//! (FLUSH_START sits where its timestamp belongs); across flushes an event that was
//! timestamped but not yet visible can come slightly late: see the log module's
//! "Event order" section. `rtrace` and the exports sort by timestamp.
//!
//! - **File header**, 16 bytes: magic `"PXTRLOG\0"`, `u16` version (3), `u16` flags
//!   (0), `u32` CRC-32C of the first 12 bytes.
//! - **Records**, back to back: `u32` body length `n` (1..=1 MiB), `u32` CRC-32C of
//!   the body, then the body: `u8` kind and its fields. Strings are `u16` length +
//!   UTF-8 bytes.
//!   - kind 1, **attributes**: name, genversion, `u64` creation time (ns of
//!     CLOCK_REALTIME), `u64` clock resolution (ns), `u64` stream size, `u32` max data
//!     size, `u8` stream full policy (0 LOOP, 1 UNTIL_FULL, 2 FLUSH), `u8` log full
//!     policy (0 LOOP, 1 UNTIL_FULL, 2 APPEND), `u64` log size, `u8` inherited, `u32` pid,
//!     `u64` timestamp clock read with the creation time (ns of CLOCK_MONOTONIC, 0 if
//!     unknown; absent in logs written before it was added: readers take
//!     the record with or without it, and pass over bytes after the fields they know).
//!   - kind 2, **event type**: `u16` id, `u8` without-pid, name, `u8` field count,
//!     then per field `u8` type code (1 u8, 2 u16, 3 u32, 4 u64, 5 i32, 6 i64,
//!     7 hex u64, 8 event set of 128 bytes) and its name. Written as names are
//!     registered, before any event that uses them, so a cut log keeps its names.
//!   - kind 3, **event**: `u16` id, `u8` flags (bit 0 truncated), `u32` pid, `u32` tid,
//!     `u64` timestamp (ns of CLOCK_MONOTONIC), `u64` program address, `u16` data
//!     length, data.
//!   - kind 4, **status** (at shutdown): `u64` events lost in the stream, `u64` events
//!     lost by the log, `u8` flags (bit 0 stream overrun, bit 1 log overrun, bit 2
//!     log full).
//!   - kind 5, **end**: the log was shut down cleanly.
//!   - kind 6, **compact event** (the log's own events in LOOP logs): `u16` id, `u8` flags (bit 0 truncated, bit 1 without pid), `u32`
//!     tid, `u64` timestamp, data (the rest of the body). The pid is the
//!     attributes' pid (0 with bit 1), the program address 0. 32 bytes in all
//!     for 8 bytes of data, against 46 for kind 3.
//!   - kind 7, **event block** (the log's own events in APPEND and UNTIL_FULL
//!     logs): `u32` tid and
//!     `u64` timestamp of the first event, then events back to back, each: `u16`
//!     id; `u8` flags (bits 0-3 data length 0 to 8, or 15: a `u16` length
//!     follows; bit 4 truncated; bit 5 without pid; bits 6-7 the tid, one of
//!     the last two distinct tids, both the block's first tid at its start:
//!     0 the previous event's, 1 the other one (the two then swap), 2 a `u32`
//!     follows (the previous event's becomes the other one)); the
//!     timestamp minus the previous event's (the block's first timestamp for the
//!     first event) as a zigzag LEB128 varint; the `u32` tid if given; the `u16`
//!     length if given; the data. Pid and program address as in kind 6. 12 or 13
//!     bytes for 8 bytes of data when events are close in time. A block holds
//!     about 32 KiB and is complete before the writer queues anything after it.
//!
//! A reader stops at the first record that is cut (`ErrorKind::Truncated`) or fails
//! its checksum (`ErrorKind::Corrupt`); a log without the end record is reported as
//! truncated after its last event. The log size counts event records and blocks only
//! (an UNTIL_FULL log sets aside the most an event can take in a block). Log LOOP
//! appends, and compacts the file to the newest events within the log size when it
//! would pass twice the log size, at `clear` and at shutdown: a shut-down log holds
//! at most the log size of events; a log read while running (or after a crash) may
//! hold up to twice that, oldest first.

mod analysis;
mod attr;
pub mod catalog;
mod control;
mod crc;
mod event;
pub mod export;
mod flush;
mod flusher;
#[cfg(test)]
mod full_tests;
mod getnext;
mod handle;
mod ids;
mod local;
mod log;
mod log_block;
mod log_pipe;
mod log_read;
mod log_writer;
#[cfg(test)]
mod no_setup_tests;
mod read;
mod ring;
pub mod schema;
#[cfg(test)]
mod scratch;
mod seam;
mod set;
mod slots;
mod status;
mod stream;
pub mod system_events;

/// The old name of [`system_events`], kept while callers move over.
#[doc(hidden)]
pub use system_events as sys;

pub use analysis::TraceLog;
pub use attr::{
    Inheritance, LogFullPolicy, StreamFullPolicy, TraceAttr, DEFAULT_FLUSH_INTERVAL, GEN_VERSION,
    MAX_DATA_SIZE_LIMIT, MAX_SYS_PAYLOAD, MIN_STREAM_SIZE, RECORD_HEADER, TRACE_NAME_MAX,
};
pub use event::{Event, EventInfo};
pub use flusher::flush_before_exec;
pub use handle::Trace;
pub use ids::{
    EventId, EventType, FieldDesc, ID_SPACE, TRACE_EVENT_NAME_MAX, TRACE_SYS_EVENT_MAX,
    TRACE_USER_EVENT_MAX,
};
#[doc(hidden)]
pub use local::ThreadRecorder;
pub use log::{LogStatus, MAGIC as LOG_MAGIC, VERSION as LOG_VERSION};
pub use log_read::LogWaiter;
pub use set::{EventSet, FillWhat, FilterHow};
#[doc(hidden)]
pub use slots::pass_table;
pub use slots::TRACE_SYS_MAX;
pub use status::TraceStatus;

/// `posix_trace_event`: records an event with `data` in every running stream of the
/// process that does not filter `id`; data longer than the stream's maximum data
/// size is truncated and flagged.
///
/// When no stream runs, or every running stream filters `id`: one relaxed load and
/// a bit test. Otherwise no lock, no allocation (except a thread's very first event
/// in a stream, which maps its sub-buffer) and no syscall.
///
/// Async-signal-safe once the thread has recorded into the running streams, as
/// POSIX requires: a signal handler's event that interrupted its own thread inside
/// `event` cannot go into the sub-buffer that record is half-way through, so it is
/// dropped and counted lost (the stream's status reports an overrun, readers an
/// OVERFLOW with tid 0), as is one that came while its thread was taking its
/// recording state (the thread's first event), and an event recorded by a
/// thread-local destructor after the recorder's clean-up of its thread. A
/// thread's first event in a stream allocates its sub-buffer: not from a
/// handler, nor from a custom `#[global_allocator]`.
///
/// # References
/// - [`posix_trace_event`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_event.html)
#[inline(always)]
#[doc(alias = "posix_trace_event")]
pub fn event(id: EventId, data: &[u8]) {
    local::event(id, data)
}

/// `posix_trace_eventid_open`: the process-wide id of a user event name; the same
/// name gives the same id. Past [`TRACE_USER_EVENT_MAX`] names it returns
/// [`EventId::UNNAMED_USER`].
///
/// # Errors
/// `InvalidInput` for an empty name, one over [`TRACE_EVENT_NAME_MAX`] bytes
/// (errno `ENAMETOOLONG`), or one with NUL.
///
/// # References
/// - [`posix_trace_eventid_open`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_open.html)
#[doc(alias = "posix_trace_eventid_open")]
pub fn eventid_open(name: &str) -> crate::Result<EventId> {
    ids::open_user(name)
}

/// [`eventid_open`] for a name of bytes, which need not be UTF-8 (the C
/// API's `posix_trace_eventid_open`: POSIX names are byte strings). A UTF-8
/// name opens the same type as `eventid_open`; other bytes open a type whose
/// name is NUL followed by the bytes read as Latin-1 (never a name
/// `eventid_open` takes), which [`event_name_bytes`] turns back into them.
///
/// # Errors
/// As `eventid_open`, counting bytes.
#[doc(hidden)]
pub fn eventid_open_bytes(name: &[u8]) -> crate::Result<EventId> {
    ids::open_user_bytes(name)
}

/// The bytes a type name was opened with by [`eventid_open_bytes`] (the
/// name's own bytes for any other name).
#[doc(hidden)]
pub fn event_name_bytes(name: &str) -> std::borrow::Cow<'_, [u8]> {
    ids::name_bytes(name)
}

/// The type name [`eventid_open_bytes`] gives a name of bytes (to find it
/// among a log's types).
#[doc(hidden)]
pub fn event_name_from_bytes(name: &[u8]) -> std::borrow::Cow<'_, str> {
    ids::name_from_bytes(name)
}

/// The name of any event type known to this process.
///
/// A name the C API opened from bytes that are not UTF-8 is held as NUL
/// followed by the bytes read as Latin-1 (no name [`eventid_open`] takes):
/// [`export::shown_name`] shows it as those bytes, `\xHH` for each one that
/// is not part of a UTF-8 character.
///
/// # References
/// - [`posix_trace_eventid_get_name`](https://pubs.opengroup.org/onlinepubs/9699919799.2008edition/functions/posix_trace_eventid_equal.html) (POSIX.1-2008)
#[doc(alias = "posix_trace_eventid_get_name")]
pub fn eventid_name(id: EventId) -> Option<String> {
    ids::name_of(id)
}

/// The raw timestamp clock's reading converted like recorded events (ns of CLOCK_MONOTONIC).
pub fn now() -> std::time::Duration {
    crate::sys::clock::init();
    use crate::sys::clock;
    std::time::Duration::from_nanos(clock::to_ns(clock::ticks()))
}

/// Whether recorded timestamps come from the TSC (else CLOCK_MONOTONIC).
pub fn clock_is_tsc() -> bool {
    crate::sys::clock::uses_tsc()
}
