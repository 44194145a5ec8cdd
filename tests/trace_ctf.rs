//! The CTF 1.8 export of a trace log, read back by `babeltrace2` (when
//! installed; CI installs it). The Chrome export's tests are in `trace_chrome.rs`.

#[path = "common/export_log.rs"]
mod export_log;

use std::fs::File;
use std::path::{Path, PathBuf};

use export_log::{babeltrace, have_babeltrace, make_log, scratch, SERIAL};

use posixrt::trace::{self, export, system_events as sys, Event, Trace, TraceAttr, TraceLog};

/// Records a log at `path`, one test at a time: `emit` runs between the
/// stream's START and STOP. The log read back and its events.
fn record(path: &Path, emit: impl FnOnce(&Trace)) -> (TraceLog, Vec<Event>) {
    let _g = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(path).unwrap()).unwrap();
    t.start().unwrap();
    emit(&t);
    t.stop().unwrap();
    t.shutdown().unwrap();
    let mut l = TraceLog::open(path).unwrap();
    let evs: Vec<Event> = l.events().collect::<Result<_, _>>().unwrap();
    (l, evs)
}

/// Exports `evs` to CTF in `dir/ctf`: that folder and its metadata file.
fn export_ctf(dir: &Path, l: &TraceLog, evs: &[Event]) -> (PathBuf, String) {
    let out = dir.join("ctf");
    export::write_ctf(l, evs, &out).unwrap();
    let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
    (out, meta)
}

/// The declaration in `meta` of the event whose text holds `needle`.
fn event_decl<'a>(meta: &'a str, needle: &str) -> &'a str {
    meta.split("\nevent {")
        .find(|e| e.contains(needle))
        .unwrap()
}

/// Each of the event names `shown` (as the export spells them) names one
/// event in `meta`, as a TSDL literal, and one line of babeltrace2's output
/// of the trace `out` (when installed).
#[track_caller]
fn assert_each_name_once(meta: &str, out: &Path, shown: &[&str]) {
    for s in shown {
        // As a TSDL literal: each backslash escaped once more.
        let lit = format!("name = \"{}\";", s.replace('\\', "\\\\"));
        assert_eq!(meta.matches(&lit).count(), 1, "{lit} in {meta}");
    }
    let Some(text) = babeltrace(&[], out) else {
        return;
    };
    for s in shown {
        let n = text
            .lines()
            .filter(|l| l.contains(&format!(") {s}: ")))
            .count();
        assert_eq!(n, 1, "{s} in {text}");
    }
}

#[test]
fn ctf_export_reads_back_in_babeltrace2() {
    let d = scratch("ctf");
    let (l, evs) = make_log(&d);
    let (out, meta) = export_ctf(&d, &l, &evs);
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

/// A log written through flushes (FLUSH_START/FLUSH_STOP kept), exported to CTF, is
/// read by babeltrace2: its muxer refuses a stream whose time goes backwards. Events
/// handed over in any order are exported oldest first.
#[test]
fn ctf_export_of_a_flushed_log_is_time_ordered() {
    let d = scratch("flushed");
    let p = d.join("f.trace");
    let ev = trace::eventid_open("ctf ordered").unwrap();
    let (l, evs) = record(&p, |t| {
        for i in 0..5i32 {
            trace::event(ev, &i.to_le_bytes());
        }
        t.flush().unwrap();
        for i in 5..10i32 {
            trace::event(ev, &i.to_le_bytes());
        }
    });
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

/// Field names that are TSDL keywords or type names (valid by `Field`'s own rule,
/// `[a-z_][a-z0-9_]*`), or that only differ in characters an identifier cannot
/// hold (a log's type records carry any text), still give a metadata file whose
/// identifiers are valid and distinct: babeltrace2 refuses a keyword as a field
/// name and a field name twice in one structure, and with it the whole trace.
#[test]
fn ctf_export_makes_field_names_valid_distinct_identifiers() {
    let d = scratch("ctf-idents");
    let p = d.join("k.trace");
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
    let (l, evs) = record(&p, |_| sys::emit(k, &[1, 2, 3, 4, 5, 6, 7]));
    let (out, meta) = export_ctf(&d, &l, &evs);
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
    static L: [sys::Field; 1] = [sys::Field {
        name: "tid",
        ty: sys::FieldType::U32,
    }];
    let ev = sys::register("ctf_test_tail", &L).unwrap();
    let (l, evs) = record(&d.join("t.trace"), |_| {
        let mut with = 42u32.to_le_bytes().to_vec();
        with.extend_from_slice("worker-7 é".as_bytes());
        sys::emit(ev, &with);
        sys::emit(ev, &43u32.to_le_bytes());
    });
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
    assert_eq!(texts, ["\"worker-7 é\""]);
    let (out, meta) = export_ctf(&d, &l, &evs);
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
    let ev = sys::register("ctf_test_fieldless", &[]).unwrap();
    let (l, evs) = record(&d.join("t.trace"), |_| sys::emit(ev, b"abc"));
    let (out, meta) = export_ctf(&d, &l, &evs);
    let decl = event_decl(&meta, "\"ctf_test_fieldless\"");
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
    let (out, meta) = export_ctf(&d, &l, &evs);
    let decl = event_decl(&meta, "\"posix_trace_start\"");
    assert!(decl.contains("truncated;"), "{meta}");
    second_of_two_is_truncated(&out, "posix_trace_start:", "data_len = 0");
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
    let (out, meta) = export_ctf(&d, &l, &evs);
    let decl = event_decl(&meta, "\"ctf_test_io\"");
    assert!(decl.contains("uint8_t truncated;"), "{meta}");
    second_of_two_is_truncated(&out, "ctf_test_io:", "fd = 5");
}

/// The bytes past a system event's fields that hold a NUL (or are not UTF-8)
/// are all in the CTF export, the ones after the NUL too: a CTF string (a
/// sequence of encoded integers) ends at its first NUL for readers, so such
/// an id's `text` is a plain byte sequence. Ids whose bytes are text keep a
/// UTF-8 `text`.
#[test]
fn ctf_export_keeps_the_bytes_past_a_nul() {
    let d = scratch("ctf-nul");
    let tail = b"ab\0cd\xffz";
    static L: [sys::Field; 1] = [sys::Field {
        name: "tid",
        ty: sys::FieldType::U32,
    }];
    let nul = sys::register("ctf_test_nul", &L).unwrap();
    let text = sys::register("ctf_test_nul_text", &L).unwrap();
    let (l, evs) = record(&d.join("t.trace"), |_| {
        sys::emit(nul, &[&42u32.to_le_bytes()[..], tail].concat());
        sys::emit(text, &[&43u32.to_le_bytes()[..], b"ok"].concat());
    });
    let (out, meta) = export_ctf(&d, &l, &evs);
    let decl = |name: &str| {
        meta.split("\nevent {")
            .find(|e| e.contains(&format!("name = \"{name}\";")))
            .unwrap()
            .to_string()
    };
    assert!(
        decl("ctf_test_nul").contains("uint16_t text_len;\n        uint8_t text[text_len];"),
        "{meta}"
    );
    assert!(
        decl("ctf_test_nul_text").contains("utf8_t text[text_len];"),
        "{meta}"
    );
    // The stream holds the fields, the length and every byte, as declared.
    let stream = std::fs::read(out.join("stream_0")).unwrap();
    let want = [&42u32.to_le_bytes()[..], &7u16.to_le_bytes(), tail].concat();
    assert!(stream.windows(want.len()).any(|w| w == want));
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let line = text.lines().find(|l| l.contains("ctf_test_nul:")).unwrap();
    let shown: Vec<String> = tail
        .iter()
        .enumerate()
        .map(|(i, b)| format!("[{i}] = {b}"))
        .collect();
    assert!(line.contains("text_len = 7"), "{text}");
    for s in &shown {
        assert!(line.contains(s.as_str()), "{s} in {text}");
    }
    let line = text
        .lines()
        .find(|l| l.contains("ctf_test_nul_text:"))
        .unwrap();
    assert!(line.contains("text = \"ok\""), "{text}");
}

/// Event names that differ only in control characters, or in a control
/// character against the text of its escape, stay distinct names in the CTF
/// export: a control character shows as in a Rust string literal (`\n`) and
/// a backslash doubled, so no two names become one (they all became `a_b`).
#[test]
fn ctf_export_keeps_names_that_differ_in_control_characters_distinct() {
    let d = scratch("ctf-control-names");
    let names = ["ctf a\nb", "ctf a\tb", "ctf a\\nb", "ctf a_b"];
    let ids: Vec<_> = names
        .iter()
        .map(|n| trace::eventid_open(n).unwrap())
        .collect();
    let (l, evs) = record(&d.join("n.trace"), |_| {
        for id in &ids {
            trace::event(*id, &[1]);
        }
    });
    let (out, meta) = export_ctf(&d, &l, &evs);
    let shown = ["ctf a\\nb", "ctf a\\tb", "ctf a\\\\nb", "ctf a_b"];
    assert_each_name_once(&meta, &out, &shown);
}

/// A user event opened with a system event's name (`posix_trace_start`)
/// gets a name of its own in the CTF export, `user:posix_trace_start`, as
/// the Chrome export files it under `user`: babeltrace2 showed it as the
/// stream's START. A user event of another name keeps it, even one that
/// names the renamed one (it is named `user:user:...` instead).
#[test]
fn ctf_export_names_a_user_event_apart_from_the_system_event_of_its_name() {
    let d = scratch("ctf-user-sysname");
    let fake = trace::eventid_open("posix_trace_start").unwrap();
    let other = trace::eventid_open("user:posix_trace_start").unwrap();
    let (l, evs) = record(&d.join("u.trace"), |_| {
        trace::event(fake, &[1]);
        trace::event(other, &[2]);
    });
    let (out, meta) = export_ctf(&d, &l, &evs);
    for n in [
        "posix_trace_start",
        "user:posix_trace_start",
        "user:user:posix_trace_start",
    ] {
        let lit = format!("name = \"{n}\";");
        assert_eq!(meta.matches(&lit).count(), 1, "{lit} in {meta}");
    }
    let Some(text) = babeltrace(&[], &out) else {
        return;
    };
    let named = |n: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.contains(&format!(") {n}: ")))
            .collect()
    };
    let start = named("posix_trace_start");
    assert_eq!(start.len(), 1, "only the stream's START: {text}");
    assert!(!start[0].contains("data"), "{text}");
    let fake = named("user:posix_trace_start");
    assert!(fake.len() == 1 && fake[0].contains("[0] = 1"), "{text}");
    let other = named("user:user:posix_trace_start");
    assert!(other.len() == 1 && other[0].contains("[0] = 2"), "{text}");
}

/// A C event name that is not UTF-8 (held as NUL and Latin-1 text) shows in
/// the CTF export as its bytes, `\xHH` for each byte that is not part of a
/// UTF-8 character: not as the NUL and Latin-1 text, and apart from the
/// name of other bytes, from the UTF-8 spelling of the same text and from a
/// UTF-8 name holding the four characters `\xe9` (shown `\\xe9`).
#[test]
fn ctf_export_shows_a_name_of_bytes_as_its_bytes() {
    let d = scratch("ctf-byte-names");
    let ids = [
        trace::eventid_open_bytes(b"ctf caf\xe9").unwrap(),
        trace::eventid_open_bytes(b"ctf caf\xe8").unwrap(),
        trace::eventid_open("ctf caf\\xe9").unwrap(),
        trace::eventid_open("ctf caf\u{e9}").unwrap(),
    ];
    let (l, evs) = record(&d.join("b.trace"), |_| {
        for id in ids {
            trace::event(id, &[1]);
        }
    });
    let (out, meta) = export_ctf(&d, &l, &evs);
    assert!(!meta.contains('\0'), "{meta:?}");
    let shown = [
        "ctf caf\\xe9",
        "ctf caf\\xe8",
        "ctf caf\\\\xe9",
        "ctf caf\u{e9}",
    ];
    assert_each_name_once(&meta, &out, &shown);
}
