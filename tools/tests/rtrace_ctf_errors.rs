//! `rtrace export --format ctf` that cannot write its directory says so in the
//! user's terms: the operation (writing the CTF trace), the directory, the
//! reason and a hint; not the library function or system call that failed
//! (`export::write_ctf failed`, `mkdir failed`).

use std::fs::File;
use std::path::Path;

use posixrt::trace::{self, Trace, TraceAttr};

mod common;
use common::{dir, rtrace, serial, stderr};

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

/// Exit 1 and one line on stderr, in the user's terms, naming `out`.
fn assert_ctf_error(log: &Path, out: &Path, says: &str) {
    let o = rtrace(&[
        "export",
        "--format",
        "ctf",
        log.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
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
