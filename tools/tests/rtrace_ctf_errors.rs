//! `rtrace export --format ctf` that cannot write its directory says so in the
//! user's terms: the operation (writing the CTF trace), the directory, the
//! reason and a hint; not the library function or system call that failed
//! (`export::write_ctf failed`, `mkdir failed`).

use std::fs::File;
use std::path::Path;

use posixrt::trace::{self, Trace, TraceAttr};

mod common;
use common::{dir, rtrace, serial, stderr};
#[path = "../../tests/common/log_bytes.rs"]
mod log_bytes;

fn make_log(p: &Path) {
    let mut a = TraceAttr::new();
    a.set_name("ctf-errors").unwrap();
    let t = Trace::create_with_log(&a, File::create(p).unwrap()).unwrap();
    let ev = trace::eventid_open("step").unwrap();
    t.start().unwrap();
    trace::event(ev, &1i32.to_le_bytes());
    t.stop().unwrap();
    t.shutdown().unwrap();
}

/// `rtrace export --format ctf LOG -o OUT`.
fn export_ctf(log: &Path, out: &Path) -> std::process::Output {
    rtrace(&[
        "export",
        "--format",
        "ctf",
        log.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
}

/// Exit 1 and one line on stderr, in the user's terms, naming `out`.
fn assert_ctf_error(log: &Path, out: &Path, says: &str) {
    let o = export_ctf(log, out);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let start = format!(
        "rtrace: cannot write the CTF trace into {}: ",
        out.display()
    );
    assert!(e.starts_with(&start), "{e}");
    assert!(e.contains(says), "{e}");
    assert!(e.contains("; hint: "), "{e}");
    assert!(!e.contains("::") && !e.contains(" failed"), "{e}");
}

#[test]
fn a_ctf_directory_that_cannot_be_written_is_named_in_user_terms() {
    let _g = serial();
    let d = dir("ctf-errors");
    let log = d.join("t.trace");
    make_log(&log);
    // A directory holding another file (babeltrace2 would read it as a stream).
    assert_ctf_error(&log, &d, "it holds \"t.trace\"");
    // A file, not a directory.
    let file = d.join("plain");
    std::fs::write(&file, "not a directory").unwrap();
    assert_ctf_error(&log, &file, "File exists (EEXIST 17)");
    // Under a file: the directory cannot be made.
    assert_ctf_error(&log, &file.join("ctf"), "Not a directory (ENOTDIR 20)");
    // Nothing was written.
    let mut names: Vec<_> = std::fs::read_dir(&*d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["plain", "t.trace"]);
    assert_eq!(std::fs::read(&file).unwrap(), b"not a directory");
}

/// A log (format 3, built by hand as a damaged or foreign one would be) of
/// one event named `step`, stamped `ns`.
fn log_stamped(p: &Path, ns: u64) {
    let mut b = b"PXTRLOG\0".to_vec();
    b.extend_from_slice(&trace::LOG_VERSION.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    let c = log_bytes::crc32c(&b);
    b.extend_from_slice(&c.to_le_bytes());
    let mut attr = vec![1u8];
    for s in ["late", "posixrt-trace"] {
        attr.extend_from_slice(&(s.len() as u16).to_le_bytes());
        attr.extend_from_slice(s.as_bytes());
    }
    for v in [0u64, 1, 1 << 20] {
        attr.extend_from_slice(&v.to_le_bytes()); // created, resolution, stream size
    }
    attr.extend_from_slice(&64u32.to_le_bytes());
    attr.extend_from_slice(&[0, 2]); // LOOP stream, APPEND log
    attr.extend_from_slice(&(1u64 << 20).to_le_bytes());
    attr.push(0);
    attr.extend_from_slice(&7u32.to_le_bytes());
    log_bytes::push_record(&mut b, &attr);
    let mut ty = vec![2u8]; // the name of id 300
    ty.extend_from_slice(&300u16.to_le_bytes());
    ty.push(0);
    ty.extend_from_slice(&4u16.to_le_bytes());
    ty.extend_from_slice(b"step");
    ty.push(0);
    log_bytes::push_record(&mut b, &ty);
    let mut ev = vec![3u8]; // id, flags, pid, tid, time, address, data
    ev.extend_from_slice(&300u16.to_le_bytes());
    ev.push(0);
    ev.extend_from_slice(&7u32.to_le_bytes());
    ev.extend_from_slice(&7u32.to_le_bytes());
    ev.extend_from_slice(&ns.to_le_bytes());
    ev.extend_from_slice(&0u64.to_le_bytes());
    ev.extend_from_slice(&0u16.to_le_bytes());
    log_bytes::push_record(&mut b, &ev);
    log_bytes::push_record(&mut b, &[5]);
    std::fs::write(p, b).unwrap();
}

/// An event stamped past what CTF readers show (2^63 ns: 292 years of
/// CLOCK_MONOTONIC, so a damaged log) is refused in the user's terms, naming
/// the event and its time, with a hint, and nothing is written; instead of a
/// trace that babeltrace2 then refuses whole.
#[test]
fn a_ctf_export_of_times_readers_cannot_show_says_so() {
    let _g = serial();
    let d = dir("ctf-late");
    let log = d.join("late.trace");
    log_stamped(&log, 1 << 63);
    let out = d.join("ctf");
    assert_ctf_error(&log, &out, "event step is stamped 9223372036854775808 ns");
    let e = stderr(&export_ctf(&log, &out));
    assert!(e.contains("hint: the log is likely damaged"), "{e}");
    assert!(!out.exists());
    // A time readers show is exported.
    log_stamped(&log, 5_000);
    let o = export_ctf(&log, &out);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert!(out.join("metadata").exists());
}
