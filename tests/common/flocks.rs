//! The `flock`s a process holds: `#[path = "common/flocks.rs"] mod flocks;`.
#![allow(dead_code)]

/// The descriptors through which this process holds a `flock`, with what they
/// name (from `/proc/self/fdinfo`, which lists the locks of each open file
/// description). Safe to call in a forked child (no lock is taken).
pub fn held() -> Vec<String> {
    let mut held = Vec::new();
    for e in std::fs::read_dir("/proc/self/fdinfo")
        .into_iter()
        .flatten()
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        if text
            .lines()
            .any(|l| l.starts_with("lock:") && l.contains("FLOCK"))
        {
            let target =
                std::fs::read_link(format!("/proc/self/fd/{}", e.file_name().to_string_lossy()));
            held.push(format!("fd {:?} -> {target:?}", e.file_name()));
        }
    }
    held
}
