//! `philosophers --log PATH`: a log that cannot be made is one line naming the
//! path and the errno as the library and the tools name it; an empty PATH is a
//! usage error, not a message about a file with no name.

use std::process::{Command, Output, Stdio};

#[path = "common/example_bin.rs"]
mod example_bin;
use example_bin::example_bin;

fn philosophers(log: &str) -> Output {
    Command::new(example_bin("philosophers"))
        .args(["--rounds", "1", "--log", log])
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null())
        .output()
        .expect("run philosophers")
}

/// A directory as the log: exit 1, "philosophers: DIR: Is a directory (EISDIR
/// 21)". Before, the errno read "(os error 21)", unlike every other message.
#[test]
fn a_log_that_cannot_be_made_names_its_errno_as_the_library_does() {
    let dir = std::env::temp_dir();
    let o = philosophers(dir.to_str().unwrap());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("(EISDIR 21)"), "{err}");
    assert!(err.contains(dir.to_str().unwrap()), "{err}");
}

/// `--log ""`: exit 2 with a usage error. Before: exit 1 with
/// "philosophers: : No such file or directory (os error 2)".
#[test]
fn an_empty_log_path_is_a_usage_error() {
    let o = philosophers("");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("philosophers: --log"), "{err}");
    assert!(o.stdout.is_empty(), "{o:?}");
}
