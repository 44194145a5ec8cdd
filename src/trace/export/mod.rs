//! Exporters for viewers: Chrome trace-event JSON (Perfetto) and CTF 1.8
//! (babeltrace2, Trace Compass), plus readable payloads. Used by the `rtrace` tool.
//!
//! ```no_run
//! use posixrt::trace::{export, TraceLog};
//! let mut log = TraceLog::open("philosophers.trace")?;
//! let events: Vec<_> = log.events().filter_map(Result::ok).collect();
//! let json = std::fs::File::create("out.json").unwrap();
//! export::write_chrome_json(&log, &events, json).unwrap();
//! export::write_ctf(&log, &events, std::path::Path::new("ctf"))?;
//! // Or without holding the events: the log is read twice, once to find
//! // its order (`Scan::read`), once to write in that order.
//! let scan = export::Scan::read(&mut log)?;
//! let json = std::fs::File::create("out2.json").unwrap();
//! export::write_chrome_json_scanned(&mut log, &scan, json).unwrap();
//! export::write_ctf_scanned(&mut log, &scan, std::path::Path::new("ctf2"))?;
//! # Ok::<(), posixrt::Error>(())
//! ```

use std::fmt::Write as _;

use super::schema;
use super::{Event, EventId, EventType, LogStatus, TraceAttr, TraceLog};
use crate::Error;

mod chrome;
mod ctf;
mod order;
mod packets;

pub use chrome::{chrome_json, write_chrome_json, write_chrome_json_scanned};
pub use ctf::{write_ctf, write_ctf_scanned};
pub use order::Scan;

/// What the exports take from the log besides its events: its attributes,
/// process, status and event types (a copy, so the log can be read meanwhile).
pub(super) struct Meta {
    attr: Option<TraceAttr>,
    pid: u32,
    status: Option<LogStatus>,
    /// In id order.
    types: Vec<EventType>,
}

impl Meta {
    fn of(log: &TraceLog) -> Meta {
        Meta {
            attr: log.attr().cloned(),
            pid: log.pid(),
            status: log.status(),
            types: log.event_types().cloned().collect(),
        }
    }

    fn attr(&self) -> Option<&TraceAttr> {
        self.attr.as_ref()
    }

    fn pid(&self) -> u32 {
        self.pid
    }

    fn status(&self) -> Option<LogStatus> {
        self.status
    }

    fn event_types(&self) -> impl Iterator<Item = &EventType> {
        self.types.iter()
    }

    fn event_type(&self, id: EventId) -> Option<&EventType> {
        let i = self
            .types
            .binary_search_by_key(&id.raw(), |t| t.id.raw())
            .ok()?;
        self.types.get(i)
    }

    fn name(&self, id: EventId) -> Option<&str> {
        self.event_type(id).map(|t| t.name.as_str())
    }

    /// The bytes of an id's fields, for a type with fields.
    fn fixed(&self, id: EventId) -> Option<usize> {
        let t = self.event_type(id).filter(|t| !t.fields.is_empty())?;
        Some(t.fields.iter().map(|f| f.1.size()).sum())
    }
}

/// CLOCK_REALTIME minus CLOCK_MONOTONIC when the stream was created (ns),
/// if the log recorded it: the CTF clock's offset, which readers add to
/// event times to show wall-clock dates.
fn clock_offset(log: &Meta) -> Option<i128> {
    let a = log.attr()?;
    let real = a.create_time()?.as_nanos() as i128;
    Some(real - a.create_time_monotonic()?.as_nanos() as i128)
}

/// The latest event time CTF readers show with a clock `offset`:
/// babeltrace2 takes a clock value as signed 64-bit nanoseconds below
/// `i64::MAX`, adds the offset, and refuses the whole trace when the sum
/// passes `i64::MAX`.
fn ctf_latest_ns(offset: i128) -> u128 {
    let max = i64::MAX as i128;
    (max - 1).min(max - offset).max(0) as u128
}

/// The events in time order, each handed to the function given.
type Source<'s> =
    dyn FnMut(&mut dyn FnMut(&Event) -> std::io::Result<()>) -> std::io::Result<()> + 's;

/// Reads the first `scan.events()` events of `log` again (rewound) and hands
/// them to `emit` in time order ([`order::in_time_order`]). A failure to read
/// them (rewinding, or a log that now holds fewer) goes in `failed`, and ends
/// it with an error of kind `Other`.
fn replay(
    log: &mut TraceLog,
    scan: &Scan,
    emit: impl FnMut(&Event) -> std::io::Result<()>,
    failed: &mut Option<Error>,
) -> std::io::Result<()> {
    let gone = || std::io::Error::other("the log could not be read again");
    if let Err(e) = log.rewind() {
        *failed = Some(e);
        return Err(gone());
    }
    let mut read = 0u64;
    let mut stop = None;
    let events = std::iter::from_fn(|| match log.next_event() {
        Ok(Some(e)) => {
            read += 1;
            Some(e)
        }
        Ok(None) => None,
        Err(e) => {
            stop = Some(e);
            None
        }
    });
    order::in_time_order(scan, events, emit)?;
    if read < scan.events() {
        *failed = Some(stop.unwrap_or_else(|| {
            Error::new(
                crate::ErrorKind::Truncated,
                "posix_trace_getnext_event",
                "the log holds fewer events than when it was first read",
            )
        }));
        return Err(gone());
    }
    Ok(())
}

fn io_err(call: &'static str, path: &std::path::Path, e: std::io::Error) -> Error {
    let errno = e.raw_os_error().unwrap_or(libc::EIO);
    let hint = if errno == libc::EEXIST || errno == libc::ENOTDIR {
        "the output path is a file: pass a directory path for the CTF trace"
    } else {
        "check the output directory (exists, writable, space left)"
    };
    Error::from_errno(call, errno)
        .with_message(path.display().to_string())
        .with_hint(hint)
}

/// The name of an id as the exports show it ([`shown_name`]), `event#N` for
/// an id the log names not.
fn name_of(log: &Meta, id: EventId) -> String {
    log.name(id)
        .map(shown_name)
        .unwrap_or_else(|| format!("event#{}", id.raw()))
}

/// An event type's name as the exports show it, one text for each name: the
/// bytes it was opened with ([`event_name_bytes`](super::event_name_bytes):
/// a C name that is not UTF-8 is held as NUL and Latin-1 text, which is not
/// its name), UTF-8 characters as they are but for a control character,
/// shown as in a Rust string literal (`\n`, `\t`, `\0`, `\u{1b}`), and a
/// backslash, shown doubled; each byte that is not part of a UTF-8 character
/// as `\xHH` (two lowercase hex digits), as [`quoted`] and `rtrace dump`
/// show bytes. So two names never show as one: the byte `\xe9` shows as
/// `\xe9`, the four characters `\xe9` as `\\xe9`.
pub fn shown_name(name: &str) -> String {
    shown_bytes(&super::ids::name_bytes(name))
}

/// A name of bytes as [`shown_name`] shows it (a stream's name,
/// [`TraceAttr::name_bytes`](super::TraceAttr::name_bytes)).
fn shown_bytes(bytes: &[u8]) -> String {
    let mut o = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        o.push_str(&ctf_name(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(o, "\\x{b:02x}");
        }
    }
    o
}

/// A readable payload: fields of system events, a number, text or hex for user data.
///
/// A system event's payload is `name=value` per field, in layout order, then
/// the bytes past the fields (`mark_set`'s marker), if any, as `text=` and
/// [`quoted`] bytes, all separated by single spaces; a key that would repeat
/// one before it (a field named `text`) gets `_` appended, as in the Chrome
/// export. User data is [`user_data`].
pub fn payload(ty: Option<&EventType>, e: &Event) -> String {
    ty.and_then(|t| field_items(t, &e.data, |_, v| v.to_string()))
        .map_or_else(|| user_data(&e.data), |items| items.join(" "))
}

/// The `key=value` items of a system event's payload as [`payload`] writes
/// them, each value written by `show` (given the field name); `None` for a
/// type without fields or a payload shorter than its fields.
pub fn field_items(
    t: &EventType,
    data: &[u8],
    show: impl Fn(&str, &schema::Value) -> String,
) -> Option<Vec<String>> {
    if t.fields.is_empty() {
        return None;
    }
    let vals = schema::decode(&t.fields, data)?;
    let mut taken = Vec::new();
    let mut items: Vec<String> = vals
        .iter()
        .map(|(n, v)| format!("{}={}", key_in(n, &mut taken), show(n, v)))
        .collect();
    if let Some(tail) = tail_of(t, data) {
        items.push(format!("{}={}", key_in("text", &mut taken), quoted(tail)));
    }
    Some(items)
}

/// Bytes as text in double quotes, one way for each byte string: UTF-8
/// characters as in a Rust string literal (`{:?}`: `\"`, `\\`, `\n`, `\t`,
/// `\0`, other control characters as `\u{7f}`), and each byte that is not
/// part of a UTF-8 character as `\xHH` (two lowercase hex digits), which `{:?}`
/// never writes. So spaces, `=` and quotes inside stay inside, and `\xff` (a
/// byte) differs from `\\xff` (four characters) and from `�` (U+FFFD).
pub fn quoted(d: &[u8]) -> String {
    let mut o = String::with_capacity(d.len() + 2);
    o.push('"');
    for chunk in d.utf8_chunks() {
        let v = format!("{:?}", chunk.valid());
        o.push_str(&v[1..v.len() - 1]);
        for b in chunk.invalid() {
            let _ = write!(o, "\\x{b:02x}");
        }
    }
    o.push('"');
    o
}

/// The bytes of a system event's payload past its fields (`mark_set`'s marker
/// text), if any.
fn tail_of<'a>(t: &EventType, data: &'a [u8]) -> Option<&'a [u8]> {
    let size: usize = t.fields.iter().map(|f| f.1.size()).sum();
    data.get(size..).filter(|tail| !tail.is_empty())
}

/// User data as text: a 4- or 8-byte integer, a printable string, or hex.
pub fn user_data(d: &[u8]) -> String {
    match d.len() {
        0 => String::new(),
        4 => i32::from_le_bytes([d[0], d[1], d[2], d[3]]).to_string(),
        8 => i64::from_le_bytes(d.try_into().unwrap_or([0; 8])).to_string(),
        _ => match std::str::from_utf8(d) {
            Ok(s) if s.chars().all(|c| !c.is_control()) => format!("{s:?}"),
            _ => hex(d),
        },
    }
}

/// Bytes as lowercase hex.
pub fn hex(d: &[u8]) -> String {
    let mut s = String::with_capacity(d.len() * 2);
    for b in d {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Escapes a string for JSON.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// A key of a Chrome event's `args`, distinct from those in `taken` (the
/// keys before it), which it joins: a repeated field name gets `_` appended.
fn key_in(name: &str, taken: &mut Vec<String>) -> String {
    let mut k = name.to_string();
    while taken.contains(&k) {
        k.push('_');
    }
    taken.push(k.clone());
    k
}

/// A name as a CTF reader shows it, one for each name: a control character
/// as in a Rust string literal (`\n`, `\t`, `\0`, `\u{1b}`), a backslash
/// doubled, every other character as it is. (Mapping control characters to
/// one character made names that differ only there one name.)
fn ctf_name(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.extend(c.escape_debug()),
            c => o.push(c),
        }
    }
    o
}
