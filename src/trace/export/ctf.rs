//! The CTF 1.8 export (babeltrace2, Trace Compass).

use std::fmt::Write as _;
use std::path::Path;

use super::order::{in_time_order, Scan, BARE, BYTES, CUT, TAIL, USED};
use super::packets::{write_stream, Sink};
use super::{
    clock_offset, ctf_latest_ns, io_err, name_of, replay, schema, shown_bytes, shown_name, Meta,
    Source,
};
use crate::trace::{Event, EventId, TraceLog};
use crate::{Error, Result};

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

/// The name of each id of `used` (sorted) in a CTF export, as [`shown_name`]
/// shows it, except that no two ids share one: a user event whose name is
/// that of a system event the log knows (`eventid_open("posix_trace_start")`)
/// or of an event before it is named `user:NAME`, and a name still taken (a
/// damaged log's, or an id without a name whose `event#N` an event has) gets
/// `#ID` appended. System ids come first: they keep their names.
fn ctf_event_names(log: &Meta, used: &[u16]) -> Vec<String> {
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

/// A TSDL string literal that readers show as `shown` (see [`ctf_name`](super::ctf_name)).
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

/// The clock's offset lines: `offset_s` (whole seconds, negative for a wall
/// clock before 1970) and `offset` (the rest, in ns), or `offset = 0` when
/// the log did not record it (times since boot).
fn clock_offset_tsdl(offset: i128) -> String {
    if offset == 0 {
        return "    offset = 0;\n".into();
    }
    let (s, ns) = (
        offset.div_euclid(1_000_000_000),
        offset.rem_euclid(1_000_000_000),
    );
    format!("    offset_s = {s};\n    offset = {ns};\n")
}

/// Refuses events stamped past [`ctf_latest_ns`], naming the first of them
/// in time order, rather than writing a trace no reader opens.
fn check_times(scan: &Scan, offset: i128) -> Result<()> {
    let latest = ctf_latest_ns(offset);
    let Some((ts, _, id)) = scan.first_late else {
        return Ok(());
    };
    let past = scan.late;
    Err(Error::invalid(
        "export::write_ctf",
        format!(
            "event {} is stamped {} ns, past {latest} ns, the latest time CTF readers \
             (babeltrace2) show for this log: 2^63 - 2 ns (292 years) less its clock's \
             offset to the wall clock ({past} event{} that late)",
            name_of(&scan.meta, id),
            ts,
            if past == 1 { "" } else { "s" }
        ),
    )
    .with_hint(
        "the log is likely damaged (CLOCK_MONOTONIC is far from that): leave out the events \
         stamped that late, or export to Chrome JSON, which shows times from the first event",
    ))
}

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
/// file and one binary stream, `stream_0`, readable by `babeltrace2 DIR`. System events get their payload
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
/// The stream is written packet by packet through a 64 KiB buffer, never
/// whole in memory: a packet ends after the event that brings it to 1 MiB
/// of events (the next packet begins at the next event), except one that
/// counts lost events (below), which stays whole. A log of less than 1 MiB
/// of events that lost none is one packet. Events handed over in time order
/// are written as they come; one that comes before older ones (a flush of
/// one thread ahead of an earlier flush of another) is held, by reference,
/// until the older ones are written.
///
/// The events the log lost are counted in the packets' `events_discarded`,
/// which babeltrace2 reports (`WARNING: Tracer discarded N events between
/// [T1] and [T2]`): each OVERFLOW's count over the gap it ends (from the
/// OVERFLOW to the next event), and the losses the log's status counts beyond
/// them (a log's own: a LOOP log's before its first event, an UNTIL_FULL
/// log's after its last) at the first or last event. A log without its
/// status (cut) has only its OVERFLOW events' counts.
///
/// The clock counts CLOCK_MONOTONIC nanoseconds, as events are stamped, and
/// is offset (`offset_s`, `offset`) by CLOCK_REALTIME minus CLOCK_MONOTONIC
/// when the stream was created ([`TraceAttr::create_time_monotonic`](crate::trace::TraceAttr::create_time_monotonic)),
/// so readers show wall-clock dates; a log that did not record it (written
/// by an older posixrt) gets offset 0: times since boot.
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
/// them as streams), and for an event stamped past what CTF readers show
/// (2^63 - 2 ns: only a damaged or foreign log holds such a time), before
/// anything is written; the errno of creating or reading the directory or
/// writing the files.
pub fn write_ctf(log: &TraceLog, events: &[Event], dir: &Path) -> Result<()> {
    let scan = Scan::of_events(log, events);
    write_with(&scan, dir, &mut |emit| {
        in_time_order(&scan, events.iter(), emit)
    })
}

/// [`write_ctf`] of the events of `log` that `scan` ([`Scan::read`]) read,
/// read again (the log is rewound): the log is read twice and never held,
/// and the export's memory does not grow with the log, but for the events
/// that come early in it (flushed late by a thread, after younger events of
/// others), which are held until their turn. The files are the same as
/// those of [`write_ctf`] given the same events.
///
/// # Errors
/// As [`write_ctf`]; the error of reading the log again (a log read from a
/// pipe cannot rewind: `ESPIPE`), or `Truncated` if it holds fewer events
/// than `scan` read.
pub fn write_ctf_scanned(log: &mut TraceLog, scan: &Scan, dir: &Path) -> Result<()> {
    let mut failed = None;
    let r = write_with(scan, dir, &mut |emit| replay(log, scan, emit, &mut failed));
    match failed {
        Some(e) => Err(e),
        None => r,
    }
}

/// The export of [`write_ctf`], its events handed over by `events`.
fn write_with(scan: &Scan, dir: &Path, events: &mut Source<'_>) -> Result<()> {
    use schema::FieldType as F;
    let log = &scan.meta;
    let offset = clock_offset(log).unwrap_or(0);
    check_times(scan, offset)?;
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
    let pid = log.pid();
    let name = log
        .attr()
        .map(|a| shown_bytes(a.name_bytes()))
        .unwrap_or_default();
    let _ = write!(
        m,
        "\ntrace {{\n    major = 1;\n    minor = 8;\n    byte_order = le;\n    packet.header := struct {{\n        uint32_t magic;\n        uint32_t stream_id;\n    }};\n}};\n\n\
env {{\n    domain = \"posixrt\";\n    tracer_name = \"posixrt-trace\";\n    trace_name = {};\n    pid = {pid};\n}};\n\n\
clock {{\n    name = monotonic;\n    description = \"CLOCK_MONOTONIC\";\n    freq = 1000000000;\n{}    absolute = false;\n}};\n\n\
typealias integer {{ size = 64; align = 8; signed = false; map = clock.monotonic.value; }} := clock_ns_t;\n\n\
stream {{\n    id = 0;\n    packet.context := struct {{\n        uint64_t packet_size;\n        uint64_t content_size;\n        clock_ns_t timestamp_begin;\n        clock_ns_t timestamp_end;\n        uint64_t events_discarded;\n    }};\n    event.header := struct {{\n        uint16_t id;\n        clock_ns_t timestamp;\n    }};\n    event.context := struct {{\n        uint32_t pid;\n        uint32_t tid;\n    }};\n}};\n",
        tsdl_str(&name),
        clock_offset_tsdl(offset)
    );
    // The ids with flag `f` (see `Scan`), sorted.
    let ids_where = |f: u8| -> Vec<u16> {
        (0..=u16::MAX)
            .filter(|&id| scan.flags[usize::from(id)] & f != 0)
            .collect()
    };
    let used = ids_where(USED);
    // Ids whose payloads go on past their fields (`mark_set`'s marker text):
    // those bytes follow the fields as a UTF-8 sequence.
    let tails = ids_where(TAIL);
    // Of those, the ids of which some event's bytes are not text (a NUL, or
    // not UTF-8): a sequence of encoded integers is a string in CTF, which
    // readers end at its first NUL, so these get plain bytes, every one read.
    let bytes = ids_where(BYTES);
    // Ids with fields of which some event was truncated when recorded, or has
    // a payload shorter than its fields (written out with zeros): those get a
    // `truncated` flag after the fields.
    let cut = ids_where(CUT);
    // System ids without fields whose events carry bytes anyway (a type
    // registered without a layout), or were truncated (with no bytes left):
    // those get the user events' layout, which holds both.
    let bare = ids_where(BARE);
    let names = ctf_event_names(log, &used);
    for (id, name) in used.iter().zip(&names) {
        let eid = EventId::from_raw(*id).unwrap_or(EventId::START);
        let ty = log.event_type(eid);
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
    let encode = |e: &Event, out: &mut dyn Sink| {
        out.put(&e.id.raw().to_le_bytes());
        out.put(&(e.timestamp.as_nanos() as u64).to_le_bytes());
        out.put(&e.pid.to_le_bytes());
        out.put(&e.tid.to_le_bytes());
        match log.event_type(e.id).filter(|t| !t.fields.is_empty()) {
            Some(t) => {
                let size: usize = t.fields.iter().map(|f| f.1.size()).sum();
                // The fields, with zeros for those a short payload misses.
                let have = e.data.len().min(size);
                out.put(&e.data[..have]);
                let mut zeros = size - have;
                while zeros > 0 {
                    let n = zeros.min(ZEROS.len());
                    out.put(&ZEROS[..n]);
                    zeros -= n;
                }
                if cut.binary_search(&e.id.raw()).is_ok() {
                    out.put(&[u8::from(e.truncated || e.data.len() < size)]);
                }
                if tails.binary_search(&e.id.raw()).is_ok() {
                    // (A payload is far below 64 KiB: the stream's events are.)
                    let tail = &e.data[have..e.data.len().min(size + usize::from(u16::MAX))];
                    out.put(&(tail.len() as u16).to_le_bytes());
                    out.put(tail);
                }
            }
            None if e.id.is_system() && bare.binary_search(&e.id.raw()).is_err() => {}
            None => {
                // `data_len` is a u16: longer data (only from a damaged or
                // foreign log) is cut and flagged, so the events after it read.
                let data = &e.data[..e.data.len().min(usize::from(u16::MAX))];
                out.put(&[u8::from(e.truncated || data.len() < e.data.len())]);
                out.put(&(data.len() as u16).to_le_bytes());
                out.put(data);
            }
        }
    };
    let (mp, sp) = (dir.join("metadata"), dir.join("stream_0"));
    std::fs::write(&mp, m).map_err(|e| io_err("write", &mp, e))?;
    // Packet by packet, through a bounded buffer: never whole in memory.
    std::fs::File::create(&sp)
        .and_then(|f| write_stream(scan, events, &encode, f))
        .map_err(|e| io_err("write", &sp, e))?;
    Ok(())
}

/// Zeros for the fields a short payload misses.
const ZEROS: [u8; 64] = [0; 64];
