//! Exports of a trace log: CTF 1.8 read back by `babeltrace2` (when installed; CI
//! installs it) and Chrome trace-event JSON read back with serde_json.

use std::fs::File;
use std::process::Command;

use posixrt::trace::{self, export, system_events as sys, Event, Trace, TraceAttr, TraceLog};

/// Streams record every event of the process: one test at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Writes a log with user events, a registered system event and START/STOP.
fn make_log(dir: &std::path::Path) -> (TraceLog, Vec<Event>) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    static L: [sys::Field; 3] = [
        sys::Field {
            name: "fd",
            ty: sys::FieldType::I32,
        },
        sys::Field {
            name: "offset",
            ty: sys::FieldType::U64,
        },
        sys::Field {
            name: "result",
            ty: sys::FieldType::I64,
        },
    ];
    let io = sys::register("ctf_test_io", &L).unwrap();
    let p = dir.join("x.trace");
    let mut a = TraceAttr::new();
    a.set_name("export \"test\"").unwrap();
    let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
    let req = trace::eventid_open("fork request").unwrap();
    let note = trace::eventid_open("note").unwrap();
    let mut f = trace::EventSet::empty();
    f.add(trace::EventId::FLUSH_START);
    f.add(trace::EventId::FLUSH_STOP);
    f.add(trace::EventId::FILTER);
    t.set_filter(&f, trace::FilterHow::Set).unwrap();
    t.start().unwrap();
    trace::event(req, &7i32.to_le_bytes());
    trace::event(note, b"say \"hi\" \\ ok");
    let mut p2 = Vec::new();
    p2.extend_from_slice(&5i32.to_le_bytes());
    p2.extend_from_slice(&4096u64.to_le_bytes());
    p2.extend_from_slice(&(-11i64).to_le_bytes());
    sys::emit(io, &p2);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    assert_eq!(evs.len(), 5);
    (l, evs)
}

/// A scratch directory, removed with its contents when dropped.
struct Scratch(std::path::PathBuf);

impl std::ops::Deref for Scratch {
    type Target = std::path::Path;
    fn deref(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("posixrt-ctf-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

#[test]
fn ctf_export_reads_back_in_babeltrace2() {
    let d = scratch("ctf");
    let (l, evs) = make_log(&d);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(meta.starts_with("/* CTF 1.8 */"));
    assert!(meta.contains("name = \"fork request\";"));
    let stream = std::fs::read(out.join("stream_0")).unwrap();
    assert_eq!(&stream[..4], &0xC1FC_1FC1u32.to_le_bytes());
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    assert!(lines[0].contains("posix_trace_start:"), "{text}");
    assert!(
        lines[1].contains("fork request:")
            && lines[1].contains("data_len = 4")
            && lines[1].contains("[0] = 7"),
        "{text}"
    );
    assert!(
        lines[2].contains("note:") && lines[2].contains("data_len = 13"),
        "{text}"
    );
    assert!(lines[3].contains("ctf_test_io:"), "{text}");
    assert!(
        lines[3].contains("fd = 5")
            && lines[3].contains("offset = 4096")
            && lines[3].contains("result = -11"),
        "{text}"
    );
    assert!(
        lines[4].contains("posix_trace_stop:") && lines[4].contains("reason = 0"),
        "{text}"
    );
    let pid = format!("pid = {}", std::process::id());
    assert!(lines.iter().all(|l| l.contains(&pid)), "{text}");
}

// The Chrome export is read with serde_json: what it accepts, a viewer accepts.
type J = serde_json::Value;

#[test]
fn chrome_json_export_is_valid_trace_event_json() {
    let d = scratch("chrome");
    let (l, evs) = make_log(&d);
    let text = export::chrome_json(&l, &evs);
    let j: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON: {e}\n{text}"));
    let list = match j.get("traceEvents") {
        Some(J::Array(v)) => v,
        other => panic!("no traceEvents array: {other:?}"),
    };
    let pid = std::process::id() as f64;
    let meta: Vec<&J> = list
        .iter()
        .filter(|e| e.get("ph").and_then(J::as_str) == Some("M"))
        .collect();
    let pname = meta
        .iter()
        .find(|e| e.get("name").and_then(J::as_str) == Some("process_name"))
        .unwrap();
    assert_eq!(pname.get("pid").and_then(J::as_f64), Some(pid));
    let shown = pname
        .get("args")
        .and_then(|a| a.get("name"))
        .and_then(J::as_str)
        .unwrap();
    assert!(shown.contains("export \"test\""), "{shown}");
    assert!(meta
        .iter()
        .any(|e| e.get("name").and_then(J::as_str) == Some("thread_name")));
    let inst: Vec<&J> = list
        .iter()
        .filter(|e| e.get("ph").and_then(J::as_str) == Some("i"))
        .collect();
    assert_eq!(inst.len(), evs.len());
    let names: Vec<&str> = inst
        .iter()
        .map(|e| e.get("name").and_then(J::as_str).unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "posix_trace_start",
            "fork request",
            "note",
            "ctf_test_io",
            "posix_trace_stop"
        ]
    );
    let mut last = -1.0;
    for (e, ev) in inst.iter().zip(&evs) {
        assert_eq!(e.get("pid").and_then(J::as_f64), Some(pid));
        assert_eq!(e.get("tid").and_then(J::as_f64), Some(ev.tid as f64));
        assert_eq!(e.get("s").and_then(J::as_str), Some("t"));
        let ts = e.get("ts").and_then(J::as_f64).unwrap();
        assert!(ts >= last);
        last = ts;
    }
    let note = inst[2].get("args").unwrap();
    assert_eq!(
        note.get("value").and_then(J::as_str),
        Some(r#""say \"hi\" \\ ok""#)
    );
    assert_eq!(
        note.get("data").and_then(J::as_str),
        Some(export::hex(b"say \"hi\" \\ ok").as_str())
    );
    assert_eq!(export::json_str("a\tb\"\u{1}"), r#""a\tb\"\u0001""#);
    let io = inst[3].get("args").unwrap();
    assert_eq!(io.get("fd").and_then(J::as_f64), Some(5.0));
    assert_eq!(io.get("offset").and_then(J::as_f64), Some(4096.0));
    assert_eq!(io.get("result").and_then(J::as_f64), Some(-11.0));
    assert_eq!(
        inst[1]
            .get("args")
            .and_then(|a| a.get("value"))
            .and_then(J::as_str),
        Some("7")
    );
}

/// A log written through flushes (FLUSH_START/FLUSH_STOP kept), exported to CTF, is
/// read by babeltrace2: its muxer refuses a stream whose time goes backwards. Events
/// handed over in any order are exported oldest first.
#[test]
fn ctf_export_of_a_flushed_log_is_time_ordered() {
    let d = scratch("flushed");
    let p = d.join("f.trace");
    let (l, evs) = {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        let ev = trace::eventid_open("ctf ordered").unwrap();
        t.start().unwrap();
        for i in 0..5i32 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        for i in 5..10i32 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = TraceLog::open(&p).unwrap();
        let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
        (l, evs)
    };
    assert!(evs.iter().any(|e| e.id == trace::EventId::FLUSH_START));
    let ts_of = |out: &std::path::Path| -> Vec<u64> {
        // The event timestamps as babeltrace2 reads them (`[ns] name: ...`).
        let text = babeltrace(&["--clock-cycles"], out).unwrap_or_default();
        text.lines()
            .map(|l| {
                let n = l.trim_start_matches('[');
                n[..n.find(']').unwrap()].trim().parse::<u64>().unwrap()
            })
            .collect()
    };
    let mut reversed = evs.clone();
    reversed.reverse();
    for (name, list) in [("log order", &evs), ("reversed", &reversed)] {
        let out = d.join(name.replace(' ', "_"));
        export::write_ctf(&l, list, &out).unwrap();
        let meta_ok = std::fs::read_to_string(out.join("metadata")).unwrap();
        assert!(meta_ok.starts_with("/* CTF 1.8 */"));
        if !have_babeltrace() {
            continue;
        }
        let ts = ts_of(&out);
        assert_eq!(ts.len(), evs.len(), "{name}");
        assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{name}: {ts:?}");
        let mut want: Vec<u64> = evs.iter().map(|e| e.timestamp.as_nanos() as u64).collect();
        want.sort_unstable();
        assert_eq!(ts, want, "{name}");
    }
}

/// The Chrome export is oldest first too, with times relative to the oldest event.
#[test]
fn chrome_json_export_is_time_ordered() {
    let d = scratch("chrome-order");
    let (l, mut evs) = make_log(&d);
    evs.reverse();
    let j = export::chrome_json(&l, &evs);
    let ts: Vec<f64> = j
        .lines()
        .filter(|l| l.contains("\"ph\":\"i\""))
        .map(|l| {
            let at = l.find("\"ts\":").unwrap() + 5;
            let rest = &l[at..];
            rest[..rest.find(',').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(ts.len(), evs.len());
    assert_eq!(ts[0], 0.0);
    assert!(ts.windows(2).all(|w| w[0] <= w[1]), "{ts:?}");
    assert!(ts[ts.len() - 1] > 0.0, "{ts:?}");
}

/// Field names that are TSDL keywords or type names (valid by `Field`'s own rule,
/// `[a-z_][a-z0-9_]*`), or that only differ in characters an identifier cannot
/// hold (a log's type records carry any text), still give a metadata file whose
/// identifiers are valid and distinct: babeltrace2 refuses a keyword as a field
/// name and a field name twice in one structure, and with it the whole trace.
#[test]
fn ctf_export_makes_field_names_valid_distinct_identifiers() {
    let d = scratch("ctf-idents");
    let p = d.join("k.trace");
    {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        static K: [sys::Field; 7] = [
            sys::Field {
                name: "event",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "signed",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "uint32_t",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "a-b",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "a b",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "a_b",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "_a_b",
                ty: sys::FieldType::U8,
            },
        ];
        let k = sys::register("ctf_test_keywords", &K).unwrap();
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        sys::emit(k, &[1, 2, 3, 4, 5, 6, 7]);
        t.stop().unwrap();
        t.shutdown().unwrap();
    }
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let at = meta.find("name = \"ctf_test_keywords\"").unwrap();
    let body = &meta[at..];
    let body = &body[body.find("struct {").unwrap() + 8..body.find("};").unwrap()];
    let names: Vec<&str> = body
        .lines()
        .filter_map(|l| l.trim().strip_suffix(';')?.split_whitespace().nth(1))
        .collect();
    assert_eq!(names.len(), 7, "{body}");
    let reserved = ["event", "signed", "uint32_t"];
    assert!(names.iter().all(|n| !reserved.contains(n)), "{names:?}");
    // CTF 1.8 drops one leading underscore of a field name (babeltrace2
    // aborts on a structure where that leaves two alike): distinct after it.
    let mut uniq: Vec<&str> = names
        .iter()
        .map(|n| n.strip_prefix('_').unwrap_or(n))
        .collect();
    uniq.sort_unstable();
    uniq.dedup();
    assert_eq!(uniq.len(), names.len(), "{names:?}");
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let line = text
        .lines()
        .find(|l| l.contains("ctf_test_keywords:"))
        .unwrap();
    for v in ["= 1,", "= 2,", "= 3,", "= 4,", "= 5,", "= 6,", "= 7 "] {
        assert!(line.contains(v), "{line}");
    }
}

/// True if `babeltrace2` runs here (else the caller skips its part, saying so).
fn have_babeltrace() -> bool {
    let ok = Command::new("babeltrace2")
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("SKIP babeltrace2 part: babeltrace2 is not installed (apt-get install babeltrace2; .ci/run installs it)");
    }
    ok
}

/// What `babeltrace2 ARGS DIR` prints, checked to succeed; `None` if it is
/// not installed.
fn babeltrace(args: &[&str], dir: &std::path::Path) -> Option<String> {
    if !have_babeltrace() {
        return None;
    }
    let o = Command::new("babeltrace2")
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "babeltrace2 failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// babeltrace2 (when installed) shows two events named `name` in the CTF trace
/// `dir`: the first not truncated, the second truncated and holding `field`.
fn second_of_two_is_truncated(dir: &std::path::Path, name: &str, field: &str) {
    let Some(text) = babeltrace(&[], dir) else {
        return;
    };
    let evs: Vec<&str> = text.lines().filter(|l| l.contains(name)).collect();
    assert_eq!(evs.len(), 2, "{text}");
    assert!(evs[0].contains("truncated = 0"), "{text}");
    assert!(
        evs[1].contains("truncated = 1") && evs[1].contains(field),
        "{text}"
    );
}

/// A system event whose payload goes on past its fields (as `mark_set`'s marker
/// text) keeps those bytes in the CTF export, as a UTF-8 `text` after the fields;
/// events of the same id without such bytes give an empty one.
#[test]
fn ctf_export_keeps_the_bytes_past_the_fields() {
    let d = scratch("ctf-tail");
    let (l, evs) = {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        static L: [sys::Field; 1] = [sys::Field {
            name: "tid",
            ty: sys::FieldType::U32,
        }];
        let ev = sys::register("ctf_test_tail", &L).unwrap();
        let p = d.join("t.trace");
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        let mut with = 42u32.to_le_bytes().to_vec();
        with.extend_from_slice("worker-7 é".as_bytes());
        sys::emit(ev, &with);
        sys::emit(ev, &43u32.to_le_bytes());
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = TraceLog::open(&p).unwrap();
        let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
        (l, evs)
    };
    // The dump's payload and the Chrome export keep the text too.
    let tail: Vec<&Event> = evs
        .iter()
        .filter(|e| e.data.len() > 4 && e.data[..4] == 42u32.to_le_bytes())
        .collect();
    assert_eq!(tail.len(), 1);
    let shown = export::payload(l.event_type(tail[0].id), tail[0]);
    assert_eq!(shown, "tid=42 text=\"worker-7 é\"");
    let j: serde_json::Value = serde_json::from_str(&export::chrome_json(&l, &evs)).unwrap();
    let texts: Vec<&str> = j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["args"]["text"].as_str())
        .collect();
    assert_eq!(texts, ["worker-7 é"]);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    assert!(meta.contains("utf8_t text[text_len];"), "{meta}");
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("ctf_test_tail:"))
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("tid = 42") && lines[0].contains("text = \"worker-7 é\""),
        "{text}"
    );
    assert!(
        lines[1].contains("tid = 43") && lines[1].contains("text_len = 0"),
        "{text}"
    );
}

/// A system event registered without fields that is emitted with a payload
/// keeps its bytes in the CTF export (as the Chrome export and the dump show
/// them), as `data_len` and `data`; events of other ids without a payload stay
/// empty.
#[test]
fn ctf_export_keeps_the_payload_of_a_fieldless_system_event() {
    let d = scratch("ctf-fieldless");
    let (l, evs) = {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let ev = sys::register("ctf_test_fieldless", &[]).unwrap();
        let p = d.join("t.trace");
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        sys::emit(ev, b"abc");
        t.stop().unwrap();
        t.shutdown().unwrap();
        let mut l = TraceLog::open(&p).unwrap();
        let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
        (l, evs)
    };
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let decl = meta
        .split("\nevent {")
        .find(|e| e.contains("\"ctf_test_fieldless\""))
        .unwrap();
    assert!(decl.contains("uint8_t data[data_len];"), "{meta}");
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let line = text
        .lines()
        .find(|l| l.contains("ctf_test_fieldless:"))
        .unwrap();
    assert!(
        line.contains("data_len = 3") && line.contains("[0] = 97"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.contains("posix_trace_start:") && l.ends_with("{ }")),
        "{text}"
    );
}

/// Data longer than a CTF `data_len` can count (an event read from a damaged or
/// foreign log) is cut to 65535 bytes and flagged truncated, so the events after
/// it still read back.
#[test]
fn ctf_export_cuts_data_longer_than_its_length_field() {
    let d = scratch("ctf-long");
    let (l, mut evs) = make_log(&d);
    let mut long = evs[1].clone();
    long.data = vec![b'x'; 70_000];
    evs.insert(2, long);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 6, "{}", &text[..text.len().min(2000)]);
    assert!(
        lines[2].contains("truncated = 1") && lines[2].contains("data_len = 65535"),
        "{}",
        &lines[2][..lines[2].len().min(200)]
    );
    assert!(lines[5].contains("posix_trace_stop:"), "{}", lines[5]);
}

/// Chrome `ts` values (µs since the oldest event) keep every nanosecond
/// however long the log spans: they are written from the integer count, not
/// through a double that rounds past 2^53 ns.
#[test]
fn chrome_json_times_are_exact() {
    let d = scratch("json-ts");
    let (l, mut evs) = make_log(&d);
    let mut late = evs[1].clone();
    late.timestamp = evs[0].timestamp + std::time::Duration::from_nanos((1 << 55) + 5);
    evs.push(late);
    let j = export::chrome_json(&l, &evs);
    assert!(j.contains("\"ts\":36028797018963.973,"), "{j}");
    let _: J = serde_json::from_str(&j).unwrap();
}

/// An OVERFLOW with tid 0 (losses of no one thread's sub-buffer) is no
/// thread's event: the Chrome export shows it on the process (`"s":"p"`), and
/// names no thread 0.
#[test]
fn chrome_json_puts_a_tid_0_overflow_on_the_process() {
    let d = scratch("json-tid0");
    let (l, mut evs) = make_log(&d);
    let mut ov = evs[1].clone();
    ov.id = trace::EventId::OVERFLOW;
    ov.tid = 0;
    ov.data = [2u64.to_le_bytes().as_slice(), &0u32.to_le_bytes()].concat();
    evs.push(ov);
    let j: J = serde_json::from_str(&export::chrome_json(&l, &evs)).unwrap();
    let all = j["traceEvents"].as_array().unwrap();
    assert!(
        !all.iter()
            .any(|e| e["name"] == "thread_name" && e["tid"] == 0),
        "{j}"
    );
    let o = all
        .iter()
        .find(|e| e["name"] == "posix_trace_overflow")
        .unwrap();
    assert_eq!((&o["s"], &o["args"]["lost"]), (&J::from("p"), &J::from(2)));
    assert_eq!(o["tid"], o["pid"], "{o}");
}

/// A system event whose payload was cut when recorded keeps its truncation
/// flag in the CTF export (the Chrome export and the dump show it), as a
/// `truncated` field after its fields.
#[test]
fn ctf_export_keeps_the_truncation_of_a_system_event() {
    let d = scratch("ctf-cut");
    let (l, mut evs) = make_log(&d);
    let i = evs.iter().position(|e| e.data.len() == 20).unwrap();
    let mut cut = evs[i].clone();
    cut.truncated = true;
    evs.insert(i + 1, cut);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    second_of_two_is_truncated(&out, "ctf_test_io:", "fd = 5");
}

/// Integer fields that a JavaScript number cannot hold exactly (past 2^53 - 1
/// either way) are written as decimal strings, so a viewer shows them exactly
/// instead of rounded; the others stay JSON numbers.
#[test]
fn chrome_json_writes_integers_past_2_pow_53_as_strings() {
    let d = scratch("json-big");
    let (l, mut evs) = make_log(&d);
    let i = evs.iter().position(|e| e.data.len() == 20).unwrap();
    let safe = (1u64 << 53) - 1;
    let mut rows = Vec::new();
    for (offset, result) in [
        (u64::MAX, i64::MIN),
        ((1 << 53) + 1, -(1 << 53) - 1),
        (safe, -(safe as i64)),
    ] {
        let mut e = evs[i].clone();
        e.data = [
            5i32.to_le_bytes().as_slice(),
            &offset.to_le_bytes(),
            &result.to_le_bytes(),
        ]
        .concat();
        rows.push(e);
    }
    evs.extend(rows);
    let text = export::chrome_json(&l, &evs);
    let j: J = serde_json::from_str(&text).unwrap();
    let io: Vec<&J> = j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "ctf_test_io")
        .map(|e| &e["args"])
        .collect();
    assert_eq!(io.len(), 4, "{text}");
    let want = [
        (J::from(4096), J::from(-11)),
        (
            J::from("18446744073709551615"),
            J::from("-9223372036854775808"),
        ),
        (J::from("9007199254740993"), J::from("-9007199254740993")),
        (J::from(safe), J::from(-(safe as i64))),
    ];
    for (a, (off, res)) in io.iter().zip(&want) {
        assert_eq!((&a["offset"], &a["result"]), (off, res), "{text}");
        assert_eq!(a["fd"], J::from(5));
    }
}

/// A system event without fields that was truncated with no data left keeps
/// its truncation flag in the CTF export (as the dump and the Chrome export
/// show it): its id gets the user events' layout, with `truncated = 1`.
#[test]
fn ctf_export_keeps_the_truncation_of_an_empty_fieldless_system_event() {
    let d = scratch("ctf-cut-empty");
    let (l, mut evs) = make_log(&d);
    assert!(evs[0].id == trace::EventId::START && evs[0].data.is_empty());
    let mut cut = evs[0].clone();
    cut.truncated = true;
    evs.insert(1, cut);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let decl = meta
        .split("\nevent {")
        .find(|e| e.contains("\"posix_trace_start\""))
        .unwrap();
    assert!(decl.contains("truncated;"), "{meta}");
    second_of_two_is_truncated(&out, "posix_trace_start:", "data_len = 0");
}

/// Field names that repeat in one layout (`register` takes them), or that are
/// the keys the export adds itself (`text`, `truncated`), still give distinct
/// keys in a Chrome event's `args` (a JSON object keeps one value per key, so a
/// viewer would show one of them): later ones get a `_` appended, as in CTF.
#[test]
fn chrome_json_args_keys_are_distinct() {
    let d = scratch("json-dupkeys");
    let p = d.join("k.trace");
    {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        static K: [sys::Field; 4] = [
            sys::Field {
                name: "a",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "a",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "truncated",
                ty: sys::FieldType::U8,
            },
            sys::Field {
                name: "text",
                ty: sys::FieldType::U8,
            },
        ];
        let k = sys::register("json_test_dupkeys", &K).unwrap();
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        sys::emit(k, &[1, 2, 3, 4, b'h', b'i']);
        t.stop().unwrap();
        t.shutdown().unwrap();
    }
    let mut l = TraceLog::open(&p).unwrap();
    let mut evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    for e in &mut evs {
        e.truncated = true;
    }
    let text = export::chrome_json(&l, &evs);
    let line = text
        .lines()
        .find(|l| l.contains("json_test_dupkeys"))
        .unwrap();
    let j: J = serde_json::from_str(line.trim_end_matches(',')).unwrap();
    let args = j["args"].as_object().unwrap();
    let got: Vec<(&str, &J)> = args.iter().map(|(k, v)| (k.as_str(), v)).collect();
    assert_eq!(args.len(), 6, "{line}");
    for (k, v) in [
        ("a", J::from(1)),
        ("a_", J::from(2)),
        ("truncated", J::from(3)),
        ("text", J::from(4)),
        ("text_", J::from("hi")),
        ("truncated_", J::from(true)),
    ] {
        assert_eq!(args.get(k), Some(&v), "{k} in {got:?}");
    }
}

/// A system event whose payload is shorter than its fields (emitted short, or
/// from a foreign log) has its missing fields written as zeros in CTF, which
/// has no other way to fill the structure: it is flagged `truncated = 1`, so
/// the zeros are not taken for recorded values (the dump and the Chrome export
/// show such a payload as raw bytes).
#[test]
fn ctf_export_flags_a_payload_shorter_than_its_fields() {
    let d = scratch("ctf-short");
    let (l, mut evs) = make_log(&d);
    let i = evs.iter().position(|e| e.data.len() == 20).unwrap();
    let mut short = evs[i].clone();
    short.data.truncate(6);
    assert!(!short.truncated);
    evs.insert(i + 1, short);
    let out = d.join("ctf");
    export::write_ctf(&l, &evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    let decl = meta
        .split("\nevent {")
        .find(|e| e.contains("\"ctf_test_io\""))
        .unwrap();
    assert!(decl.contains("uint8_t truncated;"), "{meta}");
    second_of_two_is_truncated(&out, "ctf_test_io:", "fd = 5");
}
