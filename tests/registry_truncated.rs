//! A registry file truncated under its owner by another process (an admin's
//! `truncate -s 0`, a clean-up script): the owner's mapping then has pages
//! past the end of the file, and a store to one of them raises `SIGBUS`.
//! `Registry::claim` checks the file's size and puts the file back to its
//! size (its pages reserved again) before it touches a slot, so the owner
//! and its writers live on; only what the file held is lost.
//!
//! Each check runs in a forked child, so that a `SIGBUS` fails the test
//! instead of killing the test run.

#[path = "common/held_fork.rs"]
mod held_fork;
#[path = "common/small_shm.rs"]
mod small_shm;
use small_shm::small_dev_shm;

use posixrt::registry::{current_thread, scan, Registry};

/// Shrinks the file at `path` to `len` bytes, as another process would.
fn truncate(path: &std::path::Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open the registry file")
        .set_len(len)
        .expect("truncate the registry file");
}

/// In a forked child: a registry of `kind` (slots of `payload` bytes) with
/// two claimed slots (one written), its file truncated to `len` bytes; then a
/// claim, and writes through the slot claimed before the truncation and the
/// new one.
fn claim_and_write_after_truncate_to(kind: &'static str, payload: usize, len: u64) {
    let r = held_fork::in_child(|| {
        let reg = Registry::create(kind, payload, 64).map_err(|e| format!("create: {e}"))?;
        let (tid, start) = current_thread().map_err(|e| e.to_string())?;
        let mut old = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        old.write(|p| p.store_u64(0, 1));
        let _other = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        truncate(reg.path(), len);
        let mut new = reg
            .claim(tid, start)
            .map_err(|e| format!("claim after the truncate: {e}"))?;
        new.write(|p| p.store_u64(0, 2));
        old.write(|p| p.store_u64(1, 3));
        // The file is whole again: a reader sees the slot claimed after the
        // truncation, with what was written to it.
        let s = scan(kind, Some(reg.pid())).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(reg.path());
        if s.processes.len() != 1 || s.unreadable + s.incompatible != 0 {
            return Err(format!("the repaired file is not listed: {s:?}"));
        }
        let slots = &s.processes[0].slots;
        let shown = slots.iter().find(|c| c.index == new.index());
        match shown {
            Some(c) if c.payload[..8] == 2u64.to_ne_bytes() => {}
            _ => return Err(format!("the new slot is not shown: {slots:?}")),
        }
        // The slots wiped by the truncation were not handed out again while
        // their writers still hold them.
        if new.index() == old.index() || new.index() == _other.index() {
            return Err(format!("a held slot ({}) was claimed again", new.index()));
        }
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e} (SIGBUS is {})", libc::SIGBUS);
    }
}

#[test]
fn a_claim_after_the_file_was_truncated_to_zero_repairs_it() {
    claim_and_write_after_truncate_to("regtrunc", 64, 0);
}

#[test]
fn a_claim_after_the_file_was_truncated_below_its_slots_repairs_it() {
    // Slots of 4032 bytes: the first page (the header and most of slot 0)
    // stays, the pages of the other slots are gone.
    claim_and_write_after_truncate_to("regtrunchalf", 4000, 4096);
}

#[test]
fn live_slots_after_the_file_was_truncated_repairs_it() {
    let r = held_fork::in_child(|| {
        let reg = Registry::create("regtrunclive", 64, 8).map_err(|e| format!("create: {e}"))?;
        let (tid, start) = current_thread().map_err(|e| e.to_string())?;
        let _held = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        truncate(reg.path(), 0);
        // The held slot was wiped: it is kept aside, not counted as live.
        let after = reg.live_slots();
        let _new = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        let again = reg.live_slots();
        let _ = std::fs::remove_file(reg.path());
        if (after, again) != (0, 1) {
            return Err(format!("live slots {after} then {again}, want 0 then 1"));
        }
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e} (SIGBUS is {})", libc::SIGBUS);
    }
}

/// Appends to `file` until the file system is full.
fn fill(file: &mut std::fs::File) {
    use std::io::Write;
    let chunk = [1u8; 4096];
    while file.write_all(&chunk).is_ok() {}
}

#[test]
fn a_truncated_file_that_cannot_be_put_back_fails_the_claim() {
    // The truncation freed the file's pages and another file took the room:
    // the claim reports it (OutOfResources, saying the file was truncated)
    // and touches no page past the end.
    let r = held_fork::in_child(|| {
        if !small_dev_shm(c"size=256k,mode=1777") {
            return Err(SKIP.to_string());
        }
        let reg = Registry::create("regtruncfull", 4000, 32).map_err(|e| format!("create: {e}"))?;
        let (tid, start) = current_thread().map_err(|e| e.to_string())?;
        let _held = reg.claim(tid, start).map_err(|e| format!("claim: {e}"))?;
        let mut filler = std::fs::File::create("/dev/shm/filler").map_err(|e| e.to_string())?;
        fill(&mut filler);
        truncate(reg.path(), 0);
        fill(&mut filler);
        match reg.claim(tid, start) {
            Ok(w) => Err(format!("claimed slot {} in a file cut short", w.index())),
            Err(e)
                if e.kind() == posixrt::ErrorKind::OutOfResources
                    && e.to_string().contains("truncated") =>
            {
                Ok(())
            }
            Err(e) => Err(format!("claim: {e} ({:?})", e.kind())),
        }
    });
    match r {
        Err(e) if e == SKIP => println!("skip: {e}"),
        Err(e) => panic!("{e} (SIGBUS is {})", libc::SIGBUS),
        Ok(()) => {}
    }
}

/// The child's answer where it cannot mount a small `/dev/shm`.
const SKIP: &str = "no private mount namespace for a small /dev/shm here";

#[test]
fn a_file_truncated_under_a_reader_is_counted_unreadable() {
    // Shrunk to nothing, into its header, or below its slots: whenever the
    // truncation came (before the scan or during it), the file of a live
    // owner is one that could not be read, never a registry of another
    // layout version (no release of tfp reads it better).
    let reg = Registry::create("regtruncscan", 4000, 4).expect("create");
    let (tid, start) = current_thread().expect("current thread");
    let mut w = reg.claim(tid, start).expect("claim");
    w.write(|p| p.store_u64(0, 1));
    for len in [4096, 100, 0] {
        truncate(reg.path(), len);
        let s = scan("regtruncscan", Some(reg.pid())).expect("scan");
        assert!(s.processes.is_empty(), "{len} bytes: {s:?}");
        assert_eq!(
            (s.unreadable, s.incompatible),
            (1, 0),
            "{len} bytes: (unreadable, incompatible)"
        );
    }
    // The next claim puts the file back: listed again.
    let _w2 = reg.claim(tid, start).expect("claim after the truncate");
    let s = scan("regtruncscan", Some(reg.pid())).expect("scan");
    assert_eq!(
        (s.processes.len(), s.unreadable, s.incompatible),
        (1, 0, 0),
        "{s:?}"
    );
}
