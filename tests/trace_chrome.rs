//! The Chrome trace-event JSON export of a trace log (Perfetto UI,
//! chrome://tracing), read back with serde_json: what it accepts, a viewer accepts.

#[path = "common/export_log.rs"]
mod export_log;

use std::fs::File;

use export_log::{make_log, scratch, SERIAL};
use posixrt::trace::{self, export, system_events as sys, Event, Trace, TraceAttr, TraceLog};

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
        ("text_", J::from("\"hi\"")),
        ("truncated_", J::from(true)),
    ] {
        assert_eq!(args.get(k), Some(&v), "{k} in {got:?}");
    }
}

/// Each event goes under its own pid: events of another process in the log
/// (a forked child's, with their own pid and tid) show in that process, which
/// is named, with its threads named there and not in the log's process. An
/// event without a pid (0: a type not associated with a process) goes under
/// the process of its thread, else the log's (viewers take pid 0 for the
/// kernel's idle task).
#[test]
fn chrome_json_puts_each_event_under_its_own_pid() {
    let d = scratch("json-pids");
    let (l, mut evs) = make_log(&d);
    let (me, my_tid) = (std::process::id(), evs[1].tid);
    let (child, child_tid) = (me + 1_000_000, 0x7fff_fff0);
    let of = |pid: u32, tid: u32, value: i32, from: &Event| {
        let mut e = from.clone();
        (e.pid, e.tid, e.data) = (pid, tid, value.to_le_bytes().to_vec());
        e
    };
    evs.push(of(child, child_tid, 101, &evs[1]));
    evs.push(of(0, child_tid, 102, &evs[1]));
    evs.push(of(0, my_tid, 103, &evs[1]));
    evs.push(of(0, 0x7fff_fff1, 104, &evs[1]));
    let text = export::chrome_json(&l, &evs);
    let j: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON: {e}\n{text}"));
    let all = j["traceEvents"].as_array().unwrap();
    let pid_of_value = |v: &str| -> Option<u64> {
        let e = all.iter().find(|e| e["args"]["value"] == v)?;
        e["pid"].as_u64()
    };
    let (me, child) = (u64::from(me), u64::from(child));
    assert_eq!(pid_of_value("7"), Some(me), "{text}");
    assert_eq!(pid_of_value("101"), Some(child), "{text}");
    assert_eq!(pid_of_value("102"), Some(child), "{text}");
    assert_eq!(pid_of_value("103"), Some(me), "{text}");
    assert_eq!(pid_of_value("104"), Some(me), "{text}");
    let inst = all.iter().filter(|e| e["ph"] == "i");
    assert_eq!(inst.clone().count(), evs.len());
    assert!(inst.clone().all(|e| e["pid"] != 0), "{text}");
    assert_eq!(inst.filter(|e| e["pid"] == child).count(), 2, "{text}");
    let meta = |name: &str| -> Vec<(u64, u64)> {
        all.iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name)
            .map(|e| (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap()))
            .collect()
    };
    let procs = meta("process_name");
    assert_eq!(procs, [(me, 0), (child, 0)], "{text}");
    let named = all
        .iter()
        .find(|e| e["name"] == "process_name" && e["pid"] == child)
        .unwrap();
    assert_eq!(
        named["args"]["name"],
        J::from(format!("export \"test\" (pid {child})"))
    );
    let threads = meta("thread_name");
    let ct = u64::from(child_tid);
    assert!(threads.contains(&(child, ct)), "{threads:?}");
    assert!(!threads.contains(&(me, ct)), "{threads:?}");
    assert!(threads.contains(&(me, u64::from(my_tid))), "{threads:?}");
    assert!(threads.iter().all(|&(p, _)| p != 0), "{threads:?}");
}

/// The text past a system event's fields (`mark_set`'s marker) keeps every
/// byte in `args.text`: quoted as the dump shows it, a byte that is not part
/// of a UTF-8 character as `\xHH`, so it differs from U+FFFD and from the
/// four characters `\xff` (which show as `\\xff`).
#[test]
fn chrome_json_text_keeps_bytes_that_are_not_utf8() {
    let d = scratch("json-text-bytes");
    let p = d.join("b.trace");
    let tails: [&[u8]; 3] = [b"a\xffb", "a\u{fffd}b".as_bytes(), b"a\\xffb"];
    {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        static L: [sys::Field; 1] = [sys::Field {
            name: "n",
            ty: sys::FieldType::U8,
        }];
        let k = sys::register("json_test_text_bytes", &L).unwrap();
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        for (i, tail) in tails.iter().enumerate() {
            let mut data = vec![i as u8];
            data.extend_from_slice(tail);
            sys::emit(k, &data);
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
    }
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    let j: J = serde_json::from_str(&export::chrome_json(&l, &evs)).unwrap();
    let texts: Vec<(u64, &str)> = j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "json_test_text_bytes")
        .map(|e| {
            (
                e["args"]["n"].as_u64().unwrap(),
                e["args"]["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        texts,
        [
            (0, r#""a\xffb""#),
            (1, "\"a\u{fffd}b\""),
            (2, r#""a\\xffb""#)
        ]
    );
}

/// A C event name that is not UTF-8 (held as NUL and Latin-1 text) is named
/// in the Chrome export by its bytes, `\xHH` for each byte that is not part
/// of a UTF-8 character, in valid JSON: apart from the name of other bytes,
/// from the UTF-8 spelling of the same text and from a UTF-8 name holding the
/// four characters `\xe9` (whose backslash shows doubled).
#[test]
fn chrome_json_names_a_name_of_bytes_by_its_bytes() {
    let d = scratch("json-byte-names");
    let p = d.join("n.trace");
    {
        let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
        let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
        let ids = [
            trace::eventid_open_bytes(b"json caf\xe9").unwrap(),
            trace::eventid_open_bytes(b"json caf\xe8").unwrap(),
            trace::eventid_open("json caf\\xe9").unwrap(),
            trace::eventid_open("json caf\u{e9}").unwrap(),
        ];
        t.start().unwrap();
        for (i, id) in ids.into_iter().enumerate() {
            trace::event(id, &[i as u8]);
        }
        t.stop().unwrap();
        t.shutdown().unwrap();
    }
    let mut l = TraceLog::open(&p).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    let text = export::chrome_json(&l, &evs);
    let j: J = serde_json::from_str(&text).unwrap_or_else(|e| panic!("invalid JSON: {e}\n{text}"));
    let names: Vec<&str> = j["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .filter(|n| n.contains("json caf"))
        .collect();
    assert_eq!(
        names,
        [
            r"json caf\xe9",
            r"json caf\xe8",
            r"json caf\\xe9",
            "json caf\u{e9}"
        ]
    );
}
