//! This process's sync registry file, for the tests that cut or delete it
//! under its owner (`#[path = "common/sync_registry.rs"] mod sync_registry;`).

use posixrt::sync::{self, shared, NormalMutex, Tracking};

/// This process's sync registry file in `/dev/shm`.
pub fn own_registry() -> Result<std::path::PathBuf, String> {
    let mine = format!("posixrt-sync-{}-", std::process::id());
    std::fs::read_dir("/dev/shm")
        .map_err(|e| format!("/dev/shm: {e}"))?
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with(&mine))
        .map(|e| e.path())
        .ok_or_else(|| format!("no {mine}* in /dev/shm"))
}

/// Two tracked mutexes, each locked once, and published (tracking at
/// counts); with this process's registry file.
pub fn two_published() -> Result<(NormalMutex<u32>, NormalMutex<u32>, std::path::PathBuf), String> {
    sync::set_tracking(Tracking::Counts);
    let a = NormalMutex::new(1u32);
    let b = NormalMutex::new(2u32);
    drop(a.lock());
    drop(b.lock());
    let n = shared::publish().map_err(|e| format!("first publish: {e}"))?;
    if n < 2 {
        return Err(format!("first publish: {n} objects"));
    }
    Ok((a, b, own_registry()?))
}
