//! The stream's name in the Chrome and CTF exports: any bytes (as C names a
//! stream, `TraceAttr::set_name_bytes`), shown as the exports show event
//! names (`export::shown_name`): `\xHH` for each byte that is not part of a
//! UTF-8 character, a backslash doubled, so the exact bytes can be recovered
//! and two names never show as one (not U+FFFD for every such byte).

#[path = "common/export_log.rs"]
mod export_log;

use std::fs::File;

use export_log::{babeltrace, scratch};
use posixrt::trace::{export, Trace, TraceAttr, TraceLog};
use serde_json::Value as J;

/// A log of a started and stopped stream named `name`.
fn log_named(dir: &std::path::Path, i: usize, name: &[u8]) -> TraceLog {
    let p = dir.join(format!("n{i}.trace"));
    let mut a = TraceAttr::new();
    a.set_name_bytes(name).unwrap();
    let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
    t.start().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
    TraceLog::open(&p).unwrap()
}

/// The names to export, and the text each shows as.
const NAMES: [(&[u8], &str); 5] = [
    (b"rt caf\xe9", r"rt caf\xe9"),
    (b"rt caf\xe8", r"rt caf\xe8"),
    (b"rt caf\\xe9", r"rt caf\\xe9"),
    ("rt caf\u{fffd}".as_bytes(), "rt caf\u{fffd}"),
    (b"rt \xff\"q\"\n", r#"rt \xff"q"\n"#),
];

#[test]
fn chrome_export_shows_a_stream_name_of_bytes_as_its_bytes() {
    let d = scratch("stream-name-chrome");
    for (i, (name, want)) in NAMES.iter().enumerate() {
        let mut l = log_named(&d, i, name);
        let evs: Vec<_> = l.events().filter_map(Result::ok).collect();
        let j: J = serde_json::from_str(&export::chrome_json(&l, &evs)).unwrap();
        let pname = j["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "process_name")
            .expect("a process_name event");
        let shown = pname["args"]["name"].as_str().unwrap();
        let pid = std::process::id();
        assert_eq!(shown, format!("{want} (pid {pid})"), "{name:?}");
    }
}

#[test]
fn ctf_export_shows_a_stream_name_of_bytes_as_its_bytes() {
    let d = scratch("stream-name-ctf");
    for (i, (name, want)) in NAMES.iter().enumerate() {
        let mut l = log_named(&d, i, name);
        let evs: Vec<_> = l.events().filter_map(Result::ok).collect();
        let out = d.join(format!("ctf{i}"));
        export::write_ctf(&l, &evs, &out).unwrap();
        let meta = std::fs::read_to_string(out.join("metadata")).unwrap();
        // The TSDL literal: a backslash and a double quote escaped once more.
        let lit = want.replace('\\', "\\\\").replace('"', "\\\"");
        assert!(
            meta.contains(&format!("trace_name = \"{lit}\";")),
            "{name:?}: {meta}"
        );
        // As a reader shows it.
        let Some(text) = babeltrace(&["-c", "sink.text.details"], &out) else {
            continue;
        };
        let shown = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("trace_name: "))
            .unwrap_or_else(|| panic!("no trace_name in {text}"));
        assert_eq!(shown, *want, "{name:?}");
    }
}
