//! `--json`: the listing as one JSON document.

use std::io::{self, Write};
use std::time::{Duration, UNIX_EPOCH};

use posixrt::mark::Snapshot;
use serde::Serialize;

use super::text::{kernel_name_bytes, local_time};

/// `--json`: one document, `{"processes": [{"pid", "exe", "threads": [...]}],
/// "unreadable", "incompatible", "busy", "malformed"}` (serde escapes every
/// string, whatever a marker holds). A JSON string holds no byte that is not
/// UTF-8: `exe` and `kernel_name` show each such byte as U+FFFD, and then
/// `exe_bytes` and `kernel_name_bytes` (absent otherwise) carry the bytes as
/// they are, an array of numbers.
#[derive(Serialize)]
struct JsonSnapshot<'a> {
    processes: Vec<JsonProcess<'a>>,
    unreadable: usize,
    incompatible: usize,
    busy: usize,
    malformed: usize,
}

#[derive(Serialize)]
struct JsonProcess<'a> {
    pid: i32,
    exe: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    exe_bytes: Option<&'a [u8]>,
    threads: Vec<JsonThread<'a>>,
}

#[derive(Serialize)]
struct JsonThread<'a> {
    tid: i32,
    marker: &'a str,
    updated_ns: u64,
    time: String,
    raw: String,
    raw_written: bool,
    policy: &'static str,
    rt_priority: u32,
    nice: i32,
    last_cpu: i32,
    user_s: f64,
    system_s: f64,
    state: String,
    kernel_name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    kernel_name_bytes: Option<Vec<u8>>,
}

/// `bytes` if they are not UTF-8 (their text shows U+FFFD instead).
fn unless_utf8(bytes: &[u8]) -> Option<&[u8]> {
    std::str::from_utf8(bytes).is_err().then_some(bytes)
}

/// Seconds rounded to milliseconds, as the text listing shows them.
fn secs3(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e3).round() / 1e3
}

pub fn print_json(out: &mut impl Write, snap: &Snapshot) -> io::Result<()> {
    let doc = JsonSnapshot {
        processes: snap
            .processes
            .iter()
            .map(|p| JsonProcess {
                pid: p.pid,
                exe: &p.exe,
                exe_bytes: unless_utf8(&p.exe_bytes),
                threads: p
                    .threads
                    .iter()
                    .map(|t| JsonThread {
                        tid: t.tid,
                        marker: &t.marker,
                        updated_ns: t
                            .updated
                            .duration_since(UNIX_EPOCH)
                            .map_or(0, |d| d.as_nanos() as u64),
                        time: local_time(t.updated),
                        raw: t.raw.iter().map(|b| format!("{b:02x}")).collect(),
                        raw_written: t.raw_written,
                        policy: t.sched.policy_short(),
                        rt_priority: t.sched.rt_priority,
                        nice: t.sched.nice,
                        last_cpu: t.sched.last_cpu,
                        user_s: secs3(t.sched.user_time),
                        system_s: secs3(t.sched.system_time),
                        state: t.sched.state.to_string(),
                        kernel_name: &t.sched.kernel_name,
                        kernel_name_bytes: unless_utf8(&kernel_name_bytes(p.pid, t))
                            .map(<[u8]>::to_vec),
                    })
                    .collect(),
            })
            .collect(),
        unreadable: snap.unreadable,
        incompatible: snap.incompatible,
        busy: snap.busy,
        malformed: snap.malformed,
    };
    serde_json::to_writer(&mut *out, &doc).map_err(io::Error::from)?;
    writeln!(out)
}
