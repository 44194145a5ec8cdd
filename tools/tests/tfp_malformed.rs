//! `tfp` says when marked threads could not be shown because their registry
//! slot holds a malformed payload (a marker length over `MARKER_MAX`): the
//! thread is not listed, and a silent omission would read as "not marked".
//! (One test alone in its binary: the marked threads are its own.)

use std::sync::mpsc;

use posixrt::mark::{self, MARKER_MAX};

mod common;
use common::{me, stdout, tfp};

#[path = "../../tests/common/mark_file.rs"]
mod mark_file;
use mark_file::write_marker_len;

/// A thread marked `marker` that stays alive until the sender is dropped.
fn parked(marker: &'static str) -> (std::thread::JoinHandle<()>, i32, mpsc::Sender<()>) {
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let (tid_tx, tid_rx) = mpsc::channel::<i32>();
    let h = std::thread::spawn(move || {
        mark::set(marker).unwrap();
        // SAFETY: gettid has no preconditions.
        tid_tx.send(unsafe { libc::gettid() }).unwrap();
        let _ = stop_rx.recv();
        mark::clear();
    });
    (h, tid_rx.recv().unwrap(), stop_tx)
}

#[test]
fn threads_with_a_malformed_slot_are_counted_not_dropped_silently() {
    let p = me().to_string();
    let (bad, bad_tid, stop_bad) = parked("tfp malformed bad");
    write_marker_len(bad_tid, MARKER_MAX as u32 + 1);
    // Its only marked thread cannot be shown: -p says why, not "no marked thread".
    let only = tfp(&["--no-self", "-p", &p]);
    let (good, good_tid, stop_good) = parked("tfp malformed good");
    let text = tfp(&["--no-self", "-v", "-p", &p]);
    let json = tfp(&["--no-self", "--json", "-p", &p]);
    drop((stop_bad, stop_good));
    bad.join().unwrap();
    good.join().unwrap();

    let e = String::from_utf8_lossy(&only.stderr);
    assert_eq!(only.status.code(), Some(1), "{only:?}");
    assert!(
        e.contains("malformed") && !e.contains("no marked thread"),
        "{e}"
    );

    assert!(text.status.success(), "{text:?}");
    let out = stdout(&text);
    assert!(out.contains(&format!("TID {good_tid:>9} ")), "{out}");
    assert!(!out.contains(&format!("TID {bad_tid:>9} ")), "{out}");
    assert!(
        out.lines()
            .last()
            .unwrap_or_default()
            .ends_with(", 1 malformed"),
        "{out}"
    );
    let e = String::from_utf8_lossy(&text.stderr);
    assert!(e.contains("1 marked thread(s) could not be shown"), "{e}");

    let j: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(j["malformed"].as_u64(), Some(1), "{j}");
}
