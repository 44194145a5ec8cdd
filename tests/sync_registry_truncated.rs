//! The sync registry file truncated under its owner by another process (an
//! admin's `truncate -s 0`, a clean-up script): the owner's publisher writes
//! its mapping every period, and a store to a page past the file's new end
//! raises `SIGBUS`. `publish` puts the file back to its size first, so the
//! tracked process lives on; and `read_process` of a file cut short does not
//! blame permissions.
//!
//! Each check runs in a forked child, so that a `SIGBUS` fails the test
//! instead of killing the test run.

#[path = "common/held_fork.rs"]
mod held_fork;

use posixrt::sync::{self, shared, NormalMutex, Tracking};

#[path = "common/sync_registry.rs"]
mod sync_registry;
use sync_registry::{own_registry, two_published};

/// Shrinks the file at `path` to `len` bytes, as another process would.
fn truncate(path: &std::path::Path, len: u64) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| f.set_len(len))
        .map_err(|e| format!("truncate {}: {e}", path.display()))
}

/// In a forked child: two tracked mutexes published, the file truncated to
/// `len`, then a third mutex and one of the first two dropped (its slot is
/// released), and `publish` again: it writes the slots it holds.
fn publish_after_truncate_to(len: u64) {
    let r = held_fork::in_child(|| {
        let (a, b, path) = two_published()?;
        truncate(&path, len)?;
        drop(a);
        let c = NormalMutex::new(3u32);
        drop(c.lock());
        let n = shared::publish().map_err(|e| format!("publish after the truncate: {e}"));
        let listed = shared::read_process(std::process::id());
        let _ = std::fs::remove_file(&path);
        let n = n?;
        let listed = listed.map_err(|e| format!("read_process: {e}"))?;
        if n < 2 || listed.len() < 2 {
            return Err(format!(
                "after the repair: published {n}, listed {}",
                listed.len()
            ));
        }
        drop((b, c));
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e} (SIGBUS is {})", libc::SIGBUS);
    }
}

#[test]
fn publish_after_the_file_was_truncated_to_zero_repairs_it() {
    publish_after_truncate_to(0);
}

#[test]
fn publish_after_the_file_was_truncated_to_its_header_repairs_it() {
    publish_after_truncate_to(100);
}

/// A file cut short is not a permission problem: root reading it is told the
/// file was cut short (and that its owner puts it back), not to run as root.
#[test]
fn read_process_of_a_file_cut_short_names_the_cut() {
    let r = held_fork::in_child(|| {
        sync::set_tracking(Tracking::Counts);
        let a = NormalMutex::new(1u32);
        drop(a.lock());
        shared::publish().map_err(|e| format!("publish: {e}"))?;
        // Stop the publisher from putting it back meanwhile.
        sync::set_tracking(Tracking::Off);
        let path = own_registry()?;
        truncate(&path, 100)?;
        let got = shared::read_process(std::process::id());
        let _ = std::fs::remove_file(&path);
        let e = match got {
            Ok(v) => return Err(format!("read a file cut short: {} objects", v.len())),
            Err(e) => e.to_string(),
        };
        if !e.contains("cut short") {
            return Err(format!("the error does not name the cut: {e}"));
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 && e.contains("run rtstat as") {
            return Err(format!("root is told to run as root: {e}"));
        }
        drop(a);
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}
