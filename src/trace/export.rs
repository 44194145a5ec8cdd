//! Exporters for viewers: Chrome trace-event JSON (Perfetto) and CTF 1.8
//! (babeltrace2, Trace Compass), plus readable payloads. Used by the `rtrace` tool.
//!
//! ```no_run
//! use posixrt::trace::{export, TraceLog};
//! let mut log = TraceLog::open("philosophers.trace")?;
//! let events: Vec<_> = log.events().filter_map(Result::ok).collect();
//! std::fs::write("out.json", export::chrome_json(&log, &events)).unwrap();
//! export::write_ctf(&log, &events, std::path::Path::new("ctf"))?;
//! # Ok::<(), posixrt::Error>(())
//! ```

use std::fmt::Write as _;
use std::path::Path;

use super::schema;
use super::{Event, EventId, EventType, TraceLog};
use crate::{Error, Result};

struct Loaded<'a> {
    log: &'a TraceLog,
    /// The events in non-decreasing timestamp order (stable: equal timestamps keep
    /// their log order).
    events: Vec<&'a Event>,
}

impl<'a> Loaded<'a> {
    /// Sorts the events by timestamp: a log is in time order per flush, but events
    /// of different threads can interleave across flushes, and viewers need time
    /// to go forward (CTF requires it within a stream).
    fn new(log: &'a TraceLog, events: &'a [Event]) -> Loaded<'a> {
        let mut events: Vec<&Event> = events.iter().collect();
        events.sort_by_key(|e| e.timestamp);
        Loaded { log, events }
    }
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
fn name_of(log: &TraceLog, id: EventId) -> String {
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

/// The largest integer magnitude a JavaScript number (an IEEE double) holds
/// exactly: `Number.MAX_SAFE_INTEGER`, 2^53 - 1.
const JS_SAFE: u64 = (1 << 53) - 1;

/// Chrome trace-event JSON (the format Perfetto UI and chrome://tracing open): process
/// and thread name metadata, one instant event (`"ph":"i"`, thread scope; process
/// scope for an OVERFLOW with tid 0) per trace event, with decoded system payloads or user data (hex and readable) as `args`.
/// Events are written oldest first (a stable sort by timestamp), with times relative
/// to the oldest one.
///
/// Each event goes under its own pid (`posix_pid`), so events of another process
/// in the log (a forked child's) show in that process; an event without a pid
/// (pid 0, `POSIX_TRACE_WOPID_EVENTS`) goes under the process of its thread
/// (the pid the log's other events of its tid carry), else the log's. Every
/// process is named after the trace and its pid (`NAME (pid N)`, the stream's
/// name of any bytes as [`shown_name`] writes it: `\xHH` for each byte that is
/// not part of a UTF-8 character, so its bytes can be recovered), every thread
/// `tid N`.
///
/// An event's `name` is its type's name as [`shown_name`] writes it, as the
/// CTF export shows it: a name of bytes that are not UTF-8 (the C API's) with
/// `\xHH` for each such byte (as `rtrace dump` shows them), a control
/// character and a backslash escaped, so that no two names show as one.
///
/// `args` keys are the field names, then `text` and `truncated`; a key that
/// would repeat one before it gets `_` appended (as in the CTF export). The
/// `text` (the bytes past a system event's fields, as `mark_set`'s marker) is
/// [`quoted`] as the dump shows it, in double quotes with `\xHH` for each
/// byte that is not part of a UTF-8 character: every byte string gets its
/// own text.
/// Integer fields are JSON numbers while a viewer (JavaScript) reads them
/// exactly, up to 2^53 - 1 either way; larger ones are written as strings of
/// their decimal digits (`"offset":"18446744073709551615"`), which viewers show
/// as they are instead of rounding. Hex fields and event sets are always strings.
pub fn chrome_json(log: &TraceLog, events: &[Event]) -> String {
    let l = Loaded::new(log, events);
    let pid_of = shown_pids(l.log.pid(), &l.events);
    let base = l.events.first().map_or(0, |e| e.timestamp.as_nanos());
    let mut out = String::from("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
    let name = l
        .log
        .attr()
        .map(|a| shown_bytes(a.name_bytes()))
        .unwrap_or_default();
    // The log's process first, named even without events, then every other
    // process with events in the log.
    let mut pids: Vec<u32> = l.events.iter().map(|e| pid_of(e)).collect();
    pids.sort_unstable();
    pids.dedup();
    pids.retain(|&p| p != l.log.pid());
    pids.insert(0, l.log.pid());
    for (i, p) in pids.iter().enumerate() {
        let _ = write!(
            out,
            "{}{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{p},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            if i == 0 { "" } else { ",\n" },
            json_str(&format!("{name} (pid {p})"))
        );
    }
    // Tid 0 is no thread (an OVERFLOW for losses of no one sub-buffer): its
    // events go on the process, as process-scoped instants. A thread is named
    // in its own process.
    let mut tids: Vec<(u32, u32)> = l
        .events
        .iter()
        .filter(|e| e.tid != 0)
        .map(|e| (pid_of(e), e.tid))
        .collect();
    tids.sort_unstable();
    tids.dedup();
    for (p, t) in &tids {
        let _ = write!(
            out,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{p},\"tid\":{t},\"args\":{{\"name\":{}}}}}",
            json_str(&format!("tid {t}"))
        );
    }
    for e in &l.events {
        let pid = pid_of(e);
        // Integer arithmetic: a double would round spans past 2^53 ns.
        let ns = e.timestamp.as_nanos().saturating_sub(base);
        let ts = format!("{}.{:03}", ns / 1000, ns % 1000);
        let ty = l.log.event_type(e.id);
        let mut args = String::new();
        let mut sep = "";
        // The keys written so far: a JSON object keeps one value per key.
        let mut taken = Vec::new();
        let fields = ty
            .filter(|t| !t.fields.is_empty())
            .and_then(|t| schema::decode(&t.fields, &e.data));
        match fields {
            Some(vals) => {
                for (n, v) in vals {
                    let v = match v {
                        schema::Value::U(x) if x <= JS_SAFE => x.to_string(),
                        schema::Value::I(x) if x.unsigned_abs() <= JS_SAFE => x.to_string(),
                        // Past what a JavaScript number holds exactly: a
                        // string of the same digits, not a rounded number.
                        schema::Value::U(x) => json_str(&x.to_string()),
                        schema::Value::I(x) => json_str(&x.to_string()),
                        other => json_str(&other.to_string()),
                    };
                    let _ = write!(args, "{sep}{}:{v}", json_str(&key_in(n, &mut taken)));
                    sep = ",";
                }
                if let Some(tail) = ty.and_then(|t| tail_of(t, &e.data)) {
                    let _ = write!(
                        args,
                        "{sep}{}:{}",
                        json_str(&key_in("text", &mut taken)),
                        json_str(&quoted(tail))
                    );
                    sep = ",";
                }
            }
            None if !e.data.is_empty() => {
                let _ = write!(
                    args,
                    "\"data\":{},\"value\":{}",
                    json_str(&hex(&e.data)),
                    json_str(&user_data(&e.data))
                );
                sep = ",";
            }
            None => {}
        }
        if e.truncated {
            let key = key_in("truncated", &mut taken);
            let _ = write!(args, "{sep}{}:true", json_str(&key));
        }
        let _ = write!(
            out,
            ",\n{{\"name\":{},\"cat\":\"{}\",\"ph\":\"i\",\"s\":\"{}\",\"ts\":{ts},\"pid\":{pid},\"tid\":{},\"args\":{{{args}}}}}",
            json_str(&name_of(l.log, e.id)),
            if e.id.is_system() { "system" } else { "user" },
            if e.tid == 0 { "p" } else { "t" },
            if e.tid == 0 { pid } else { e.tid }
        );
    }
    out.push_str("\n]}\n");
    out
}

/// The pid each event shows under in the Chrome export: its own (`posix_pid`:
/// events of a forked child or of another process carry theirs). An event
/// without one (pid 0: a type not associated with a process,
/// `POSIX_TRACE_WOPID_EVENTS`) shows under the process of the thread that
/// recorded it, as the other events of that tid give it, else under the log's
/// process (`log_pid`): viewers take pid 0 for the kernel's idle task.
fn shown_pids(log_pid: u32, events: &[&Event]) -> impl Fn(&Event) -> u32 {
    let mut of_tid = std::collections::BTreeMap::new();
    for e in events.iter().filter(|e| e.pid != 0 && e.tid != 0) {
        of_tid.entry(e.tid).or_insert(e.pid);
    }
    move |e: &Event| match e.pid {
        0 => of_tid.get(&e.tid).copied().unwrap_or(log_pid),
        p => p,
    }
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

/// TSDL keywords, and the type names the metadata declares: neither can name a
/// field (babeltrace2 rejects the whole metadata).
#[rustfmt::skip]
const TSDL_RESERVED: &[&str] = &[
    "align", "callsite", "const", "char", "clock", "double", "enum", "env", "event",
    "floating_point", "float", "integer", "int", "long", "short", "signed", "stream",
    "string", "struct", "trace", "typealias", "typedef", "unsigned", "variant", "void",
    "_Bool", "_Complex", "_Imaginary",
    "uint8_t", "uint16_t", "uint32_t", "uint64_t", "int32_t", "int64_t", "hex64_t", "clock_ns_t",
    "utf8_t",
];

/// A CTF identifier from a field name, distinct from those in `taken` (the
/// fields before it in the same structure), which it joins. Distinct as
/// readers name it: CTF 1.8 drops one leading underscore of a field name (so
/// `_a` reads as `a`, and babeltrace2 aborts on a structure holding both).
fn ident_in(s: &str, taken: &mut Vec<String>) -> String {
    let shown = |n: &str| n.strip_prefix('_').unwrap_or(n).to_string();
    let mut o = ident(s);
    if TSDL_RESERVED.contains(&o.as_str()) {
        o.insert(0, '_');
    }
    while taken.contains(&shown(&o)) {
        o.push('_');
    }
    taken.push(shown(&o));
    o
}

/// A CTF identifier from a field name.
fn ident(s: &str) -> String {
    let mut o: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if o.is_empty() || o.starts_with(|c: char| c.is_ascii_digit()) {
        o.insert(0, '_');
    }
    o
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

/// The name of each id of `used` (sorted) in a CTF export, as [`shown_name`]
/// shows it, except that no two ids share one: a user event whose name is
/// that of a system event the log knows (`eventid_open("posix_trace_start")`)
/// or of an event before it is named `user:NAME`, and a name still taken (a
/// damaged log's, or an id without a name whose `event#N` an event has) gets
/// `#ID` appended. System ids come first: they keep their names.
fn ctf_event_names(log: &TraceLog, used: &[u16]) -> Vec<String> {
    let system: std::collections::HashSet<String> = log
        .event_types()
        .filter(|t| t.id.is_system())
        .map(|t| shown_name(&t.name))
        .collect();
    let mut taken = std::collections::HashSet::new();
    used.iter()
        .map(|&id| {
            let eid = EventId::from_raw(id).unwrap_or(EventId::START);
            let user = !eid.is_system();
            let clash = |n: &String, taken: &std::collections::HashSet<String>| {
                taken.contains(n) || (user && system.contains(n))
            };
            let mut n = name_of(log, eid);
            if user && clash(&n, &taken) {
                n.insert_str(0, "user:");
            }
            while clash(&n, &taken) {
                let _ = write!(n, "#{id}");
            }
            taken.insert(n.clone());
            n
        })
        .collect()
}

/// A TSDL string literal that readers show as `shown` (see [`ctf_name`]).
fn tsdl_str(shown: &str) -> String {
    let mut o = String::from("\"");
    for c in shown.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

const CTF_MAGIC: u32 = 0xC1FC_1FC1;

/// The files of a CTF export: a directory holding others is refused, as
/// babeltrace2 reads every file beside `metadata` as a stream.
const CTF_FILES: [&str; 2] = ["metadata", "stream_0"];

/// Refuses a CTF output directory that holds anything but an earlier
/// export's files.
fn check_ctf_dir(dir: &Path) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_err("opendir", dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_err("readdir", dir, e))?;
        let name = entry.file_name();
        if !CTF_FILES.iter().any(|f| name == *f) {
            return Err(Error::invalid(
                "export::write_ctf",
                format!(
                    "{} holds {:?}, which babeltrace2 would read as a CTF stream",
                    dir.display(),
                    name
                ),
            )
            .with_hint("pass a new or empty directory (or one of an earlier CTF export)"));
        }
    }
    Ok(())
}

/// Writes a CTF 1.8 trace into `dir` (made if missing; it must hold nothing
/// but the files of an earlier export, which are replaced): a TSDL `metadata`
/// file and one binary `stream_0` packet, readable by `babeltrace2 DIR`. System events get their payload
/// fields by name, and the bytes past them, where a payload has some (`mark_set`'s
/// marker), as `text_len` and a UTF-8 `text` (a `uint8_t` sequence instead for
/// the ids of which some event's bytes hold a NUL or are not UTF-8: readers end
/// a CTF string at its first NUL), after a `truncated` flag for the
/// ids of which some event was truncated or has a payload shorter than its
/// fields (the missing fields are written as zeros, with the flag set); user events, and system events
/// without fields that carry bytes anyway or were truncated, get `truncated`,
/// `data_len` and a `data` byte sequence.
/// Events are written in non-decreasing timestamp order (a stable sort, whatever the
/// order of `events`), as CTF requires within a stream.
///
/// Event names (and the trace name) show as recorded, but for a control
/// character, which shows as in a Rust string literal (`\n`, `\u{1b}`), a
/// backslash, which shows doubled, and a byte of a name that is not UTF-8
/// (the C API's), which shows as `\xHH` ([`shown_name`]): names that differ
/// stay distinct. A user
/// event named as a system event (`eventid_open("posix_trace_start")`) is
/// named `user:NAME`, so viewers do not take it for the system event (the
/// Chrome export sets its `cat` to `user`); `#ID` is appended to a name
/// still taken, so every id has a name of its own.
///
/// # Errors
/// `InvalidInput` for a directory holding other files (babeltrace2 would read
/// them as streams); the errno of creating or reading the directory or writing
/// the files.
pub fn write_ctf(log: &TraceLog, events: &[Event], dir: &Path) -> Result<()> {
    let l = Loaded::new(log, events);
    use schema::FieldType as F;
    std::fs::create_dir_all(dir).map_err(|e| io_err("mkdir", dir, e))?;
    check_ctf_dir(dir)?;
    let mut m = String::from("/* CTF 1.8 */\n\n");
    for (name, size, signed, base) in [
        ("uint8_t", 8, false, 10),
        ("uint16_t", 16, false, 10),
        ("uint32_t", 32, false, 10),
        ("uint64_t", 64, false, 10),
        ("int32_t", 32, true, 10),
        ("int64_t", 64, true, 10),
        ("hex64_t", 64, false, 16),
    ] {
        let _ = writeln!(m, "typealias integer {{ size = {size}; align = 8; signed = {signed}; base = {base}; }} := {name};");
    }
    m.push_str(
        "typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := utf8_t;\n",
    );
    let pid = l.log.pid();
    let name = l
        .log
        .attr()
        .map(|a| shown_bytes(a.name_bytes()))
        .unwrap_or_default();
    let _ = write!(
        m,
        "\ntrace {{\n    major = 1;\n    minor = 8;\n    byte_order = le;\n    packet.header := struct {{\n        uint32_t magic;\n        uint32_t stream_id;\n    }};\n}};\n\n\
env {{\n    domain = \"posixrt\";\n    tracer_name = \"posixrt-trace\";\n    trace_name = {};\n    pid = {pid};\n}};\n\n\
clock {{\n    name = monotonic;\n    description = \"CLOCK_MONOTONIC\";\n    freq = 1000000000;\n    offset = 0;\n    absolute = false;\n}};\n\n\
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := clock_ns_t;\n\n\
stream {{\n    id = 0;\n    packet.context := struct {{\n        uint64_t packet_size;\n        uint64_t content_size;\n        clock_ns_t timestamp_begin;\n        clock_ns_t timestamp_end;\n    }};\n    event.header := struct {{\n        uint16_t id;\n        clock_ns_t timestamp;\n    }};\n    event.context := struct {{\n        uint32_t pid;\n        uint32_t tid;\n    }};\n}};\n",
        tsdl_str(&name)
    );
    // The ids of the events that `keep` keeps, sorted, each once.
    let ids_where = |keep: &dyn Fn(&Event) -> bool| -> Vec<u16> {
        let mut ids: Vec<u16> = l
            .events
            .iter()
            .filter(|e| keep(e))
            .map(|e| e.id.raw())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    };
    let used = ids_where(&|_| true);
    // Ids whose payloads go on past their fields (`mark_set`'s marker text):
    // those bytes follow the fields as a UTF-8 sequence.
    let fixed = |id: EventId| -> Option<usize> {
        let t = l.log.event_type(id).filter(|t| !t.fields.is_empty())?;
        Some(t.fields.iter().map(|f| f.1.size()).sum())
    };
    let tails = ids_where(&|e| fixed(e.id).is_some_and(|n| e.data.len() > n));
    // Of those, the ids of which some event's bytes are not text (a NUL, or
    // not UTF-8): a sequence of encoded integers is a string in CTF, which
    // readers end at its first NUL, so these get plain bytes, every one read.
    let bytes = ids_where(&|e| {
        let tail = fixed(e.id).and_then(|n| e.data.get(n..)).unwrap_or(&[]);
        tail.contains(&0) || std::str::from_utf8(tail).is_err()
    });
    // Ids with fields of which some event was truncated when recorded, or has
    // a payload shorter than its fields (written out with zeros): those get a
    // `truncated` flag after the fields.
    let short = |e: &Event| fixed(e.id).is_some_and(|n| e.data.len() < n);
    let cut = ids_where(&|e| (e.truncated && fixed(e.id).is_some()) || short(e));
    // System ids without fields whose events carry bytes anyway (a type
    // registered without a layout), or were truncated (with no bytes left):
    // those get the user events' layout, which holds both.
    let bare = ids_where(&|e| {
        e.id.is_system() && fixed(e.id).is_none() && (e.truncated || !e.data.is_empty())
    });
    let names = ctf_event_names(l.log, &used);
    for (id, name) in used.iter().zip(&names) {
        let eid = EventId::from_raw(*id).unwrap_or(EventId::START);
        let ty = l.log.event_type(eid);
        let _ = write!(m, "\nevent {{\n    name = {};\n    id = {id};\n    stream_id = 0;\n    fields := struct {{\n", tsdl_str(name));
        match ty.filter(|t| !t.fields.is_empty()) {
            Some(t) => {
                let mut taken = Vec::new();
                for (n, ft) in &t.fields {
                    let n = &ident_in(n, &mut taken);
                    let decl = match ft {
                        F::U8 => format!("uint8_t {n}"),
                        F::U16 => format!("uint16_t {n}"),
                        F::U32 => format!("uint32_t {n}"),
                        F::U64 => format!("uint64_t {n}"),
                        F::I32 => format!("int32_t {n}"),
                        F::I64 => format!("int64_t {n}"),
                        F::Hex64 => format!("hex64_t {n}"),
                        F::EventSet => format!("uint64_t {n}[{}]", ft.size() / 8),
                    };
                    let _ = writeln!(m, "        {decl};");
                }
                if cut.binary_search(id).is_ok() {
                    let flag = ident_in("truncated", &mut taken);
                    let _ = writeln!(m, "        uint8_t {flag};");
                }
                if tails.binary_search(id).is_ok() {
                    let len = ident_in("text_len", &mut taken);
                    let text = ident_in("text", &mut taken);
                    let ty = if bytes.binary_search(id).is_ok() {
                        "uint8_t"
                    } else {
                        "utf8_t"
                    };
                    let _ = writeln!(m, "        uint16_t {len};\n        {ty} {text}[{len}];");
                }
            }
            None if eid.is_system() && bare.binary_search(id).is_err() => {
                // A payload-less system event: an empty struct.
            }
            None => {
                m.push_str("        uint8_t truncated;\n        uint16_t data_len;\n        uint8_t data[data_len];\n");
            }
        }
        m.push_str("    };\n};\n");
    }
    // One packet holding every event.
    let mut body = Vec::new();
    for e in &l.events {
        body.extend_from_slice(&e.id.raw().to_le_bytes());
        body.extend_from_slice(&(e.timestamp.as_nanos() as u64).to_le_bytes());
        body.extend_from_slice(&e.pid.to_le_bytes());
        body.extend_from_slice(&e.tid.to_le_bytes());
        match l.log.event_type(e.id).filter(|t| !t.fields.is_empty()) {
            Some(t) => {
                let size: usize = t.fields.iter().map(|f| f.1.size()).sum();
                let mut p = e.data.clone();
                p.resize(size.max(p.len()), 0);
                body.extend_from_slice(&p[..size]);
                if cut.binary_search(&e.id.raw()).is_ok() {
                    body.push((e.truncated || e.data.len() < size) as u8);
                }
                if tails.binary_search(&e.id.raw()).is_ok() {
                    // (A payload is far below 64 KiB: the stream's events are.)
                    let tail = &p[size..p.len().min(size + usize::from(u16::MAX))];
                    body.extend_from_slice(&(tail.len() as u16).to_le_bytes());
                    body.extend_from_slice(tail);
                }
            }
            None if e.id.is_system() && bare.binary_search(&e.id.raw()).is_err() => {}
            None => {
                // `data_len` is a u16: longer data (only from a damaged or
                // foreign log) is cut and flagged, so the events after it read.
                let data = &e.data[..e.data.len().min(usize::from(u16::MAX))];
                body.push((e.truncated || data.len() < e.data.len()) as u8);
                body.extend_from_slice(&(data.len() as u16).to_le_bytes());
                body.extend_from_slice(data);
            }
        }
    }
    let first = l
        .events
        .first()
        .map_or(0, |e| e.timestamp.as_nanos() as u64);
    let last = l.events.last().map_or(0, |e| e.timestamp.as_nanos() as u64);
    let header_len = 8 + 32;
    let total_bits = ((header_len + body.len()) * 8) as u64;
    let mut s = Vec::with_capacity(header_len + body.len());
    s.extend_from_slice(&CTF_MAGIC.to_le_bytes());
    s.extend_from_slice(&0u32.to_le_bytes());
    s.extend_from_slice(&total_bits.to_le_bytes());
    s.extend_from_slice(&total_bits.to_le_bytes());
    s.extend_from_slice(&first.to_le_bytes());
    s.extend_from_slice(&last.to_le_bytes());
    s.extend_from_slice(&body);
    let (mp, sp) = (dir.join("metadata"), dir.join("stream_0"));
    std::fs::write(&mp, m).map_err(|e| io_err("write", &mp, e))?;
    std::fs::write(&sp, s).map_err(|e| io_err("write", &sp, e))?;
    Ok(())
}
