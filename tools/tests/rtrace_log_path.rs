//! `rtrace`'s errors about a log name the log, whatever its name.

use std::process::Command;

mod common;
use common::{dir, stderr};

/// `rtrace ARGS` run in `cwd`.
fn rtrace_in(cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rtrace"))
        .current_dir(cwd)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn an_error_names_a_log_whose_name_is_a_word_of_the_message() {
    let d = dir("log-path");
    // Not a log: "trace" is in "posix_trace_open" and "trace log".
    std::fs::write(d.join("trace"), b"garbagegarbagegarbage").unwrap();
    // Cut in its header: "log" is in "log header cut".
    std::fs::write(d.join("log"), b"").unwrap();
    for (name, code) in [("trace", 3), ("log", 4)] {
        for cmd in [
            &["dump", name][..],
            &["stats", name],
            &["export", "--format", "chrome", name, "-o", "o.json"],
        ] {
            let o = rtrace_in(&d, cmd);
            assert_eq!(o.status.code(), Some(code), "{cmd:?}: {}", stderr(&o));
            let err = stderr(&o);
            assert!(
                err.starts_with(&format!("rtrace: {name}: ")),
                "{cmd:?} does not name the log {name:?}: {err}"
            );
        }
    }
}
