//! A marked thread whose slot holds a malformed payload (a marker length over
//! `MARKER_MAX`: another writer's bytes, a damaged file) cannot be shown, and
//! the snapshot says so (`Snapshot::malformed`) instead of dropping the thread
//! silently. The count is this process's: the tests here run one at a time
//! ([`SERIAL`]), each thread it marks gone before the next starts.

use std::sync::{mpsc, Mutex};

/// Held by each test: the other's marked threads would be counted too.
static SERIAL: Mutex<()> = Mutex::new(());

use posixrt::mark::{self, MARKER_MAX};

#[path = "common/mark_file.rs"]
mod mark_file;
use mark_file::{write_marker_len, write_payload_at};

#[test]
fn a_slot_with_a_marker_longer_than_the_limit_is_counted_as_malformed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id() as i32;
    mark::set("mark_malformed good").unwrap();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let (tid_tx, tid_rx) = mpsc::channel::<i32>();
    let bad = std::thread::spawn(move || {
        mark::set("mark_malformed bad").unwrap();
        tid_tx
            .send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
        let _ = stop_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    let before = mark::snapshot_pid(me).unwrap();
    assert_eq!(before.malformed, 0, "{before:?}");
    assert!(before.threads().any(|(_, t)| t.tid == tid));
    write_marker_len(tid, MARKER_MAX as u32 + 1);
    let after = mark::snapshot_pid(me).unwrap();
    drop(stop_tx);
    bad.join().unwrap();
    assert_eq!(after.malformed, 1, "{after:?}");
    assert!(!after.threads().any(|(_, t)| t.tid == tid), "{after:?}");
    // The other marked thread is still listed.
    assert!(after
        .threads()
        .any(|(_, t)| t.marker == "mark_malformed good"));
    mark::clear();
}

/// A slot claimed but not written yet (a thread's first mark, between the
/// claim, which zeroes the payload, and the store of the marker): no marker,
/// no raw block, no time. It is no marked thread yet: not listed (with an
/// empty marker and a time of 1970), and not malformed either.
#[test]
fn a_slot_claimed_but_not_written_yet_is_not_listed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let me = std::process::id() as i32;
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let (tid_tx, tid_rx) = mpsc::channel::<i32>();
    let t = std::thread::spawn(move || {
        mark::set("mark_malformed claimed").unwrap();
        tid_tx
            .send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
        let _ = stop_rx.recv();
    });
    let tid = tid_rx.recv().unwrap();
    // The payload as the claim leaves it: time, length and flags all zero.
    write_payload_at(tid, 0, &[0u8; 16]);
    let snap = mark::snapshot_pid(me).unwrap();
    drop(stop_tx);
    t.join().unwrap();
    let shown: Vec<_> = snap.threads().filter(|(_, t)| t.tid == tid).collect();
    assert!(shown.is_empty(), "{shown:?}");
    assert_eq!(snap.malformed, 0, "{snap:?}");
}
