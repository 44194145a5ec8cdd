//! A registry file deleted under its owner (`rm`, or systemd-logind's
//! `RemoveIPC=yes` when the user's last session ends) is published again:
//! the process must not stay hidden from `tfp` and `rtstat` for good.

use std::time::{Duration, Instant};

use posixrt::registry::{current_thread, scan, Registry};

/// The first payload word of each live slot of this process's registry of
/// `kind`, sorted; `None` if the process is not listed.
fn listed(kind: &str, pid: i32) -> Option<Vec<u64>> {
    let s = scan(kind, Some(pid)).unwrap();
    let p = s.processes.first()?;
    let mut words: Vec<u64> = p
        .slots
        .iter()
        .map(|c| u64::from_ne_bytes(c.payload[..8].try_into().unwrap()))
        .collect();
    words.sort_unstable();
    Some(words)
}

#[test]
fn a_deleted_registry_file_is_published_again_with_its_slots() {
    let reg = Registry::create("regdeleted", 16, 4).unwrap();
    let pid = reg.pid();
    let (tid, start) = current_thread().unwrap();
    let mut w = reg.claim(tid, start).unwrap();
    w.write(|p| p.store_u64(0, 42));
    let mut whole = reg.claim(0, 0).unwrap();
    whole.write(|p| p.store_u64(0, 7));
    let path = reg.path().to_path_buf();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(listed("regdeleted", pid), None, "deleted, not listed");

    assert!(reg.check_size().unwrap(), "the deleted file was put back");
    assert!(path.exists(), "published again at {}", path.display());
    assert_eq!(
        listed("regdeleted", pid),
        Some(vec![7, 42]),
        "the slots were copied into the new file"
    );
    // Its lock is held: a reader does not take the owner for gone.
    let f = std::fs::File::open(&path).unwrap();
    assert_eq!(
        rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockShared),
        Err(rustix::io::Errno::WOULDBLOCK)
    );
    drop(f);

    // Writers learn that their slots may need writing again, and the
    // writes land in the new file (the same mapping address).
    assert!(w.wiped());
    w.reclaim().unwrap();
    w.write(|p| p.store_u64(0, 43));
    whole.write(|p| p.store_u64(0, 8));
    assert_eq!(listed("regdeleted", pid), Some(vec![8, 43]));
    assert!(!reg.check_size().unwrap(), "nothing left to put back");

    // Deleted again: put back again.
    std::fs::remove_file(&path).unwrap();
    let mut late = reg.claim(tid, start).unwrap();
    late.write(|p| p.store_u64(0, 99));
    assert!(path.exists());
    assert_eq!(listed("regdeleted", pid), Some(vec![8, 43, 99]));

    late.release();
    w.release();
    whole.release();
    drop(reg);
    assert!(!path.exists(), "dropping the registry removes the new file");
}

#[test]
fn a_full_registry_deleted_is_published_again_and_its_writers_keep_their_slots() {
    // Every slot is live: a writer that learns its file was replaced finds no
    // free slot to move to, and writes its own again.
    let reg = Registry::create("regdelfull", 16, 1).unwrap();
    let pid = reg.pid();
    let (tid, start) = current_thread().unwrap();
    let mut w = reg.claim(tid, start).unwrap();
    w.write(|p| p.store_u64(0, 5));
    std::fs::remove_file(reg.path()).unwrap();
    assert!(reg.check_size().unwrap());
    assert_eq!(listed("regdelfull", pid), Some(vec![5]));
    assert!(w.wiped());
    w.reclaim().unwrap();
    assert!(!w.wiped());
    w.write(|p| p.store_u64(0, 6));
    assert_eq!(listed("regdelfull", pid), Some(vec![6]));
    w.release();
}

#[test]
fn a_marked_thread_is_listed_again_after_its_registry_file_is_deleted() {
    let pid = std::process::id() as i32;
    let tid = current_thread().unwrap().0;
    posixrt::mark::set("before-rm").unwrap();
    let path = posixrt::mark::registry_path().expect("a mark registry");
    std::fs::remove_file(&path).unwrap();
    let listed = |marker: &str| {
        posixrt::mark::snapshot_pid(pid)
            .is_ok_and(|s| s.threads().any(|(_, t)| t.tid == tid && t.marker == marker))
    };
    assert!(!listed("before-rm"));
    // A later `set` that renames the thread (no new claim) publishes the file
    // again: the check runs at most once per DELETED_CHECK_MS, so marks are
    // made until it did (a hang guard, not a timing check).
    let end = Instant::now() + Duration::from_secs(30);
    let mut n = 0u64;
    loop {
        n += 1;
        // A new kernel-name prefix (the first 15 bytes) each time.
        let marker = format!("{n:08}-after-rm");
        posixrt::mark::set(&marker).unwrap();
        if listed(&marker) {
            break;
        }
        assert!(
            Instant::now() < end,
            "the thread's marks stayed hidden after its registry file was deleted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(path.exists());
    posixrt::mark::clear();
}

#[test]
fn writers_racing_the_replacement_end_up_listed_and_untorn() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};
    // Four threads write their slots (every word the same value) without
    // pause while the file is deleted and published again, round after
    // round: each ends listed with its last value, no slot torn or busy.
    let reg: &'static Registry =
        Box::leak(Box::new(Registry::create("regdelrace", 32, 16).unwrap()));
    let pid = reg.pid();
    let stop: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    // The writers stay alive (readers list live threads only) until scanned.
    let started = Arc::new(Barrier::new(5));
    let written = Arc::new(Barrier::new(5));
    let scanned = Arc::new(Barrier::new(5));
    let writers: Vec<_> = (0..4u64)
        .map(|k| {
            let (started, written, scanned) = (started.clone(), written.clone(), scanned.clone());
            std::thread::spawn(move || {
                let (tid, start) = current_thread().unwrap();
                let mut w = reg.claim(tid, start).unwrap();
                let mut n = 0u64;
                let value = |n: u64| (k << 32) | n;
                started.wait();
                loop {
                    n += 1;
                    w.write(|p| (0..4).for_each(|i| p.store_u64(i, value(n))));
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
                // As `mark` does: a wiped slot is moved, and written again.
                while w.wiped() {
                    w.reclaim().unwrap();
                    w.write(|p| (0..4).for_each(|i| p.store_u64(i, value(n))));
                }
                written.wait();
                scanned.wait();
                w.release();
                value(n)
            })
        })
        .collect();
    started.wait();
    for _ in 0..50 {
        let _ = std::fs::remove_file(reg.path());
        assert!(reg.check_size().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    written.wait();
    let s = scan("regdelrace", Some(pid)).unwrap();
    scanned.wait();
    let mut want: Vec<u64> = writers.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(s.busy, 0, "{s:?}");
    let slots = &s.processes[0].slots;
    assert_eq!(slots.len(), 4, "{s:?}");
    let mut got: Vec<u64> = slots
        .iter()
        .map(|c| {
            let w: Vec<u64> = c
                .payload
                .chunks(8)
                .map(|b| u64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            assert!(w.iter().all(|x| *x == w[0]), "torn slot {w:?}");
            w[0]
        })
        .collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
}

#[path = "common/child.rs"]
mod child;

#[test]
fn a_forked_child_does_not_publish_its_parents_deleted_file() {
    let reg = Registry::create("regdelfork", 8, 2).unwrap();
    let path = reg.path().to_path_buf();
    std::fs::remove_file(&path).unwrap();
    // SAFETY: the child only checks the inherited registry and `_exit`s; no
    // other thread of this test holds a lock it takes.
    let r = unsafe {
        child::in_child(|| match reg.check_size() {
            Ok(false) if !path.exists() => Ok(()),
            other => Err(format!(
                "the child published its parent's file: {other:?}, exists {}",
                path.exists()
            )),
        })
    };
    let _ = std::fs::remove_file(&path);
    r.unwrap();
    assert!(reg.check_size().unwrap(), "the parent publishes it");
    assert!(path.exists());
}
