//! The Chrome trace-event JSON export (Perfetto UI, chrome://tracing).

use std::fmt::Write as _;
use std::io::{self, Write};

use super::order::{in_time_order, Scan};
use super::{
    hex, json_str, key_in, name_of, quoted, replay, schema, shown_bytes, tail_of, user_data, Source,
};
use crate::trace::{Event, TraceLog};

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
/// name of any bytes as [`shown_name`](super::shown_name) writes it: `\xHH` for each byte that is
/// not part of a UTF-8 character, so its bytes can be recovered), every thread
/// `tid N`.
///
/// An event's `name` is its type's name as [`shown_name`](super::shown_name) writes it, as the
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
///
/// Written to `out` as it goes, through a 64 KiB buffer (so a large log's
/// JSON is never whole in memory), and flushed; [`chrome_json`] returns the
/// same text as a `String`.
///
/// # Errors
/// The first error of writing to `out` (a full disk: `ENOSPC`; a reader that
/// closed its pipe: `BrokenPipe`), which ends the export: `out` holds the
/// JSON up to there.
pub fn write_chrome_json(log: &TraceLog, events: &[Event], out: impl Write) -> io::Result<()> {
    let scan = Scan::of_events(log, events);
    buffered(out, |out| {
        write_json(&scan, out, &mut |emit| {
            in_time_order(&scan, events.iter(), emit)
        })
    })
}

/// [`write_chrome_json`] of the events of `log` that `scan` ([`Scan::read`])
/// read, read again (the log is rewound): the log is read twice and never
/// held, and the export's memory does not grow with the log, but for the
/// events that come early in it (flushed late by a thread, after younger
/// events of others), which are held until their turn. The JSON is the same
/// as that of [`write_chrome_json`] given the same events.
///
/// # Errors
/// As [`write_chrome_json`]; the error of reading the log again (a log read
/// from a pipe cannot rewind: `ESPIPE`), or `Truncated` if it holds fewer
/// events than `scan` read.
pub fn write_chrome_json_scanned(
    log: &mut TraceLog,
    scan: &Scan,
    out: impl Write,
) -> io::Result<()> {
    let mut failed = None;
    let r = buffered(out, |out| {
        write_json(scan, out, &mut |emit| replay(log, scan, emit, &mut failed))
    });
    match failed {
        Some(e) => Err(e.into()),
        None => r,
    }
}

/// `write` into `out` through a 64 KiB buffer, flushed.
fn buffered<W: Write>(
    out: W,
    write: impl FnOnce(&mut io::BufWriter<W>) -> io::Result<()>,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(64 << 10, out);
    let r = write(&mut out).and_then(|()| out.flush());
    if r.is_err() {
        // Given up with the export: not written again when `out` drops.
        drop(out.into_parts());
    }
    r
}

/// The JSON of [`write_chrome_json`], into `out`.
fn write_json(scan: &Scan, out: &mut impl Write, events: &mut Source<'_>) -> io::Result<()> {
    let log = &scan.meta;
    let base = scan.first;
    out.write_all(b"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n")?;
    let name = log
        .attr()
        .map(|a| shown_bytes(a.name_bytes()))
        .unwrap_or_default();
    // The log's process first, named even without events, then every other
    // process with events in the log.
    for (i, p) in scan.shown_pids().iter().enumerate() {
        write!(
            out,
            "{}{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{p},\"tid\":0,\"args\":{{\"name\":{}}}}}",
            if i == 0 { "" } else { ",\n" },
            json_str(&format!("{name} (pid {p})"))
        )?;
    }
    // Tid 0 is no thread (an OVERFLOW for losses of no one sub-buffer): its
    // events go on the process, as process-scoped instants. A thread is named
    // in its own process.
    for (p, t) in &scan.shown_threads() {
        write!(
            out,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{p},\"tid\":{t},\"args\":{{\"name\":{}}}}}",
            json_str(&format!("tid {t}"))
        )?;
    }
    events(&mut |e| {
        let pid = scan.shown_pid(e);
        // Integer arithmetic: a double would round spans past 2^53 ns.
        let ns = e.timestamp.as_nanos().saturating_sub(base);
        let ts = format!("{}.{:03}", ns / 1000, ns % 1000);
        let ty = log.event_type(e.id);
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
        write!(
            out,
            ",\n{{\"name\":{},\"cat\":\"{}\",\"ph\":\"i\",\"s\":\"{}\",\"ts\":{ts},\"pid\":{pid},\"tid\":{},\"args\":{{{args}}}}}",
            json_str(&name_of(log, e.id)),
            if e.id.is_system() { "system" } else { "user" },
            if e.tid == 0 { "p" } else { "t" },
            if e.tid == 0 { pid } else { e.tid }
        )
    })?;
    out.write_all(b"\n]}\n")
}

/// The Chrome trace-event JSON of [`write_chrome_json`] as a `String`: the
/// whole text in memory, for small logs and tests.
pub fn chrome_json(log: &TraceLog, events: &[Event]) -> String {
    let mut out = Vec::new();
    // Writing to a Vec fails only where memory runs out, which aborts.
    let _ = write_chrome_json(log, events, &mut out);
    // All of it is text (`str`s written whole).
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
