//! The sync registry file deleted under its owner (`rm`, systemd-logind's
//! `RemoveIPC=yes`): the publisher's next round publishes it again, so
//! `rtstat` lists the process again (it never did once the file was gone).
//!
//! Runs in a forked child (its own sync registry, tracking set there).

#[path = "common/held_fork.rs"]
mod held_fork;

use posixrt::sync::shared;

#[path = "common/sync_registry.rs"]
mod sync_registry;
use sync_registry::two_published;

#[test]
fn publish_after_the_file_was_deleted_lists_the_process_again() {
    let r = held_fork::in_child(|| {
        let (a, b, path) = two_published()?;
        std::fs::remove_file(&path).map_err(|e| format!("rm: {e}"))?;
        if shared::read_process(std::process::id()).is_ok_and(|l| !l.is_empty()) {
            return Err("still listed after the rm".into());
        }
        let n = shared::publish().map_err(|e| format!("publish after the rm: {e}"));
        let listed = shared::read_process(std::process::id());
        let back = path.exists();
        let _ = std::fs::remove_file(&path);
        let n = n?;
        let listed = listed.map_err(|e| format!("read_process after the rm: {e}"))?;
        if !back || n < 2 || listed.len() < 2 {
            return Err(format!(
                "after the rm: file back {back}, published {n}, listed {}",
                listed.len()
            ));
        }
        drop((a, b));
        Ok(())
    });
    if let Err(e) = r {
        panic!("{e}");
    }
}
