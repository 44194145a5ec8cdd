//! The NAME and -p filters: which processes a listing keeps.

use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;

use posixrt::mark::{ProcessMarks, Snapshot};
use posixrt_tools::printable_quoted_bytes;

/// One listing of `snaps` (each process's own, or every process's), with the
/// processes the NAMEs `names` keep.
pub fn combine(snaps: impl IntoIterator<Item = Snapshot>, names: &[OsString]) -> Snapshot {
    let mut all = Snapshot::default();
    for s in snaps {
        all.processes.extend(s.processes);
        all.unreadable += s.unreadable;
        all.incompatible += s.incompatible;
        all.busy += s.busy;
        all.malformed += s.malformed;
    }
    all.processes.retain(|p| kept(p, names));
    all
}

/// Whether the NAMEs `names` keep process `p` (no NAME keeps every process).
pub fn kept(p: &ProcessMarks, names: &[OsString]) -> bool {
    names.is_empty()
        || names
            .iter()
            .any(|n| name_matches(&p.exe_bytes, n.as_bytes()))
}

/// Why -p process `p` is not listed although it has marks: its path does not
/// end with any NAME of `names`.
pub fn not_named(p: &ProcessMarks, names: &[OsString]) -> String {
    let names: Vec<String> = names
        .iter()
        .map(|n| format!("\"{}\"", printable_quoted_bytes(n.as_bytes())))
        .collect();
    format!(
        "the path of process {} (\"{}\") does not end with {}; hint: give a NAME its path ends with, or no NAME",
        p.pid,
        printable_quoted_bytes(&p.exe_bytes),
        names.join(" or ")
    )
}

/// The pids, each once and in order: `-p 5 -p 5` is one process.
pub fn distinct(pids: &[i32]) -> Vec<i32> {
    let mut v = pids.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// The seed's rule: the path ends with the name (or equals it). A binary replaced
/// while it runs reads as `/path/prog (deleted)` in /proc; it still matches `prog`.
/// Both are bytes, as paths are.
fn name_matches(path: &[u8], name: &[u8]) -> bool {
    path.ends_with(name)
        || path
            .strip_suffix(b" (deleted)")
            .is_some_and(|p| p.ends_with(name))
}
