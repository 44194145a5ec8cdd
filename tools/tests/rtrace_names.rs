//! How `rtrace` shows names it did not choose: a stream's name and an event
//! type's (the traced program's), a file's (the user's), of any bytes, escaped
//! so that one is one line and reads back byte for byte.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Output};

use posixrt::trace::{self, Trace, TraceAttr};

mod common;
use common::{dir, rtrace, serial, stderr, stdout};

fn rtrace_os(args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .args(args)
        .output()
        .unwrap()
}

/// An empty log (START and STOP) at `p`.
fn empty_log(p: &Path) {
    let _g = serial();
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(p).unwrap()).unwrap();
    t.start().unwrap();
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// An event name is the program's choice (`eventid_open` refuses only NUL): one
/// with a newline and an escape sequence (and bidi or zero-width characters
/// that would make it pass for another) must not split a `dump` or `stats` line
/// into a fake event, nor drive the reader's terminal. Both show it escaped, as
/// tfp and rtstat show markers and object names.
#[test]
fn control_characters_in_event_names_are_escaped() {
    let _g = serial();
    let d = dir("names");
    let p = d.join("n.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
    let ev = trace::eventid_open("ev\nFAKE\x1b[2J\u{202e}kcol\u{200b}").unwrap();
    t.start().unwrap();
    trace::event(ev, &7i32.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
    let logs = p.to_str().unwrap();
    for cmd in ["dump", "stats"] {
        let o = rtrace(&[cmd, logs]);
        assert!(o.status.success(), "{cmd}: {o:?}");
        let out = stdout(&o);
        assert!(!out.contains('\x1b'), "{cmd}: raw ESC: {out:?}");
        assert!(
            !out.lines().any(|l| l.starts_with("FAKE")),
            "{cmd}: a name split a line: {out}"
        );
        assert!(
            out.contains("ev\\nFAKE\\u{1b}[2J\\u{202e}kcol\\u{200b}"),
            "{cmd}: {out}"
        );
        assert!(!out.contains(['\u{202e}', '\u{200b}']), "{cmd}: {out:?}");
    }
}

/// A C event name that is not UTF-8 (held as NUL and Latin-1 text) shows in
/// `dump` and `stats` as its bytes, `\xHH` for each byte that is not part of
/// a UTF-8 character, as the dump shows a payload's bytes: not as a NUL and
/// Latin-1 text, and apart from the UTF-8 spelling of the same text and from
/// a UTF-8 name holding the four characters `\xe9` (shown `\\xe9`).
#[test]
fn a_name_of_bytes_shows_as_its_bytes() {
    let _g = serial();
    let d = dir("byte-names");
    let p = d.join("b.trace");
    let t = Trace::create_with_log(&TraceAttr::new(), File::create(&p).unwrap()).unwrap();
    let ids = [
        trace::eventid_open_bytes(b"rt caf\xe9").unwrap(),
        trace::eventid_open_bytes(b"rt caf\xe8").unwrap(),
        trace::eventid_open("rt caf\\xe9").unwrap(),
        trace::eventid_open("rt caf\u{e9}").unwrap(),
    ];
    t.start().unwrap();
    for (i, id) in ids.into_iter().enumerate() {
        trace::event(id, &[i as u8]);
    }
    t.stop().unwrap();
    t.shutdown().unwrap();
    let logs = p.to_str().unwrap();
    let shown = [
        "rt caf\\xe9",
        "rt caf\\xe8",
        "rt caf\\\\xe9",
        "rt caf\u{e9}",
    ];
    for cmd in ["dump", "stats"] {
        let o = rtrace(&[cmd, logs]);
        assert!(o.status.success(), "{cmd}: {o:?}");
        let out = stdout(&o);
        assert!(
            !out.contains('\0') && !out.contains("\\u{0}"),
            "{cmd}: {out:?}"
        );
        let named: Vec<&str> = out
            .lines()
            .filter_map(|l| {
                shown
                    .into_iter()
                    .find(|s| l.ends_with(*s) || l.contains(&format!("{s} ")))
            })
            .collect();
        assert_eq!(named, shown, "{cmd}: {out}");
    }
}

/// The line of `dump` (`# trace NAME of pid ...`) or `stats` (`trace:      NAME
/// (pid ...`) that names the stream, and the name as shown.
fn shown_stream_name<'a>(cmd: &str, out: &'a str) -> &'a str {
    let (prefix, end) = match cmd {
        "dump" => ("# trace ", " of pid "),
        _ => ("trace:      ", " (pid "),
    };
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .unwrap_or_else(|| panic!("{cmd}: no stream name line: {out}"));
    line.rsplit_once(end)
        .unwrap_or_else(|| panic!("{cmd}: {line}"))
        .0
}

/// A stream's name is any bytes (`TraceAttr::set_name_bytes`, as C names it):
/// `dump` and `stats` show the name the log holds byte for byte, as a quoted
/// Rust string literal with `\xHH` for each byte that is not part of a UTF-8
/// character, not the lossy text where every such byte is U+FFFD: two names
/// that differ in such a byte show apart, and apart from a UTF-8 name of the
/// characters `\xe9` (shown `\\xe9`) or of U+FFFD.
#[test]
fn a_stream_name_of_bytes_shows_as_its_bytes() {
    let _g = serial();
    let d = dir("stream-names");
    let names: [&[u8]; 5] = [
        b"rt caf\xe9",
        b"rt caf\xe8",
        b"rt \xff\"q\"\n\xe9\x80",
        b"rt caf\\xe9",
        "rt caf\u{fffd}".as_bytes(),
    ];
    let shown = [
        r#""rt caf\xe9""#,
        r#""rt caf\xe8""#,
        r#""rt \xff\"q\"\n\xe9\x80""#,
        r#""rt caf\\xe9""#,
        "\"rt caf\u{fffd}\"",
    ];
    for (i, (name, want)) in names.iter().zip(shown).enumerate() {
        let p = d.join(format!("s{i}.trace"));
        let mut a = TraceAttr::new();
        a.set_name_bytes(name).unwrap();
        let t = Trace::create_with_log(&a, File::create(&p).unwrap()).unwrap();
        t.start().unwrap();
        t.stop().unwrap();
        t.shutdown().unwrap();
        for cmd in ["dump", "stats"] {
            let o = rtrace(&[cmd, p.to_str().unwrap()]);
            assert!(o.status.success(), "{cmd}: {o:?}");
            let out = stdout(&o);
            assert_eq!(shown_stream_name(cmd, &out), want, "{cmd}: {out}");
        }
    }
}

/// `export -o` naming the log itself is a usage error (exit 2) of one line on
/// standard error, as every message of rtrace is, whatever the path holds: a
/// newline in it must not start a second line, an escape sequence must not
/// reach the terminal.
#[test]
fn the_log_itself_as_output_is_refused_on_one_line() {
    let d = dir("self-out");
    let p = d.join("t\nFAKE\x1b[2J.trace");
    empty_log(&p);
    let ps = p.to_str().unwrap();
    let o = rtrace(&["export", "--format", "chrome", ps, "-o", ps]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(!e.contains('\x1b'), "raw ESC: {e:?}");
    assert!(
        e.contains("t\\nFAKE\\u{1b}[2J.trace is the log itself"),
        "{e}"
    );
}

/// A file name is bytes: `stats` (its `log:` line) and `export` (its `wrote N
/// events to` line) show a path that is not UTF-8 byte for byte, `\xHH` for
/// each byte that is not, as the names in a log show, not with U+FFFD, which
/// names another file (or none).
#[test]
fn a_path_of_bytes_shows_as_its_bytes() {
    let d = dir("byte-paths");
    let p = d.join(OsStr::from_bytes(b"caf\xe9.trace"));
    empty_log(&p);
    let o = rtrace_os(&["stats".as_ref(), p.as_os_str()]);
    assert!(o.status.success(), "{o:?}");
    let out = stdout(&o);
    let line = out.lines().find(|l| l.starts_with("log:")).unwrap_or("");
    assert!(line.ends_with("/caf\\xe9.trace"), "{out}");
    let json = d.join(OsStr::from_bytes(b"out\xe8.json"));
    let o = rtrace_os(&[
        "export".as_ref(),
        "--format".as_ref(),
        "chrome".as_ref(),
        p.as_os_str(),
        "-o".as_ref(),
        json.as_os_str(),
    ]);
    let e = stderr(&o);
    assert!(o.status.success(), "{e}");
    assert!(json.exists());
    assert!(e.trim_end().ends_with("/out\\xe8.json"), "{e}");
}
