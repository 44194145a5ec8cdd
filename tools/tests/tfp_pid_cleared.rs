//! `tfp -p PID` of a process that uses posixrt's marks but has no marked
//! thread now (each cleared its mark, or the marked threads exited): tfp must
//! say so, not that the process has no mark registry and must mark a thread
//! with posixrt::mark, which sends the user looking for a missing call.
//! (Alone in its binary: the marks are this process's.)

mod common;
use common::{me, tfp};

#[test]
fn a_process_whose_threads_cleared_their_marks_is_not_said_to_have_no_registry() {
    std::thread::spawn(|| {
        posixrt::mark::set("cleared soon").unwrap();
        posixrt::mark::clear();
    })
    .join()
    .unwrap();
    assert!(posixrt::mark::registry_path().is_some_and(|p| p.exists()));
    let p = me().to_string();
    let o = tfp(&["--no-self", "-p", &p]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(
        e.contains(&format!("process {p} has no marked thread")),
        "{e}"
    );
    assert!(!e.contains("no posixrt mark registry"), "{e}");
    assert!(e.contains("cleared"), "{e}");
}
