//! `mark::spawn_named` and `mark::Builder` edge cases: the kernel name a spawned
//! thread gets, and the errors for a marker it refuses.

use posixrt::mark;

/// The calling thread's kernel name (`comm`).
fn comm() -> String {
    std::fs::read_to_string("/proc/thread-self/comm")
        .unwrap()
        .trim_end()
        .to_string()
}

#[test]
fn an_empty_marker_leaves_the_spawned_thread_a_kernel_name() {
    // `set("")` keeps the kernel name rather than leave the thread nameless in ps,
    // top and perf; a thread spawned with an empty marker must keep one too: the
    // name it inherits from the thread that spawned it.
    let seen = std::thread::Builder::new()
        .name("the spawner".into())
        .spawn(|| {
            mark::spawn_named("", || (comm(), mark::current()))
                .unwrap()
                .join()
                .unwrap()
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(seen, ("the spawner".to_string(), Some(String::new())));
}

#[test]
fn a_refused_marker_says_how_to_fix_it() {
    // As `set` does for a marker that is too long: the error carries the fix.
    for (marker, fix) in [
        ("nul\0inside".to_string(), "NUL"),
        ("x".repeat(mark::MARKER_MAX + 1), "shorten"),
    ] {
        let e = mark::spawn_named(&marker, || ()).unwrap_err();
        assert_eq!(e.kind(), posixrt::ErrorKind::InvalidInput, "{e}");
        let hint = e.hint().unwrap_or_else(|| panic!("no hint in {e}"));
        assert!(hint.contains(fix), "{hint}");
    }
}
