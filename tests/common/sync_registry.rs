//! This process's sync registry file, for the tests that cut or delete it
//! under its owner (`#[path = "common/sync_registry.rs"] mod sync_registry;`).

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
