//! A marked thread whose slot changed during every read (a writer mid-write:
//! its sequence counter odd) is skipped as busy: `tfp` must say so, and
//! `tfp -p` of a process whose only marked thread is busy must not say it
//! "has no marked thread (no posixrt mark registry)", which is not so.
//! (One test alone in its binary: the marked threads are its own.)

use std::sync::mpsc;

use posixrt::mark;

mod common;
use common::{me, tfp};

#[path = "../../tests/common/mark_file.rs"]
mod mark_file;
use mark_file::bump_seq;

#[test]
fn busy_threads_are_reported_and_are_not_no_marked_thread() {
    let p = me().to_string();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let (tid_tx, tid_rx) = mpsc::channel::<i32>();
    let t = std::thread::spawn(move || {
        mark::set("tfp busy").unwrap();
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
        mark::clear();
    });
    let tid = tid_rx.recv().unwrap();
    bump_seq(tid, 1); // odd: a write that never ends, as the reader sees it
    let one = tfp(&["--no-self", "-p", &p]);
    let all = tfp(&["--no-self", "--json"]);
    bump_seq(tid, 1); // even again: the thread's own writes work as before
    drop(stop_tx);
    t.join().unwrap();

    let e = String::from_utf8_lossy(&one.stderr);
    assert_eq!(one.status.code(), Some(1), "{one:?}");
    assert!(!e.contains("no marked thread"), "{e}");
    assert!(e.contains("changed during every read"), "{e}");

    assert!(all.status.success(), "{all:?}");
    let j: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert!(j["busy"].as_u64() >= Some(1), "{j}");
    let e = String::from_utf8_lossy(&all.stderr);
    assert!(e.contains("changed during every read"), "{e}");
}
