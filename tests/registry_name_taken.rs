//! A registry file at this process's name that another live writer holds
//! (its exclusive `flock`): a process in another pid namespace sharing
//! `/dev/shm` (a container run with the host's IPC namespace, or two
//! containers sharing a volume) that has the same pid (each container's
//! first process is pid 1) and started in the same clock tick. Creating
//! this process's registry must not replace that file: the other process's
//! marks would vanish from every reader, and its exit (which removes the
//! file by name) would then remove this process's registry.

use std::os::unix::fs::FileExt;

use posixrt::registry::{Registry, TaskStat};

#[test]
fn a_live_writers_file_at_our_name_is_not_replaced() {
    let pid = std::process::id();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start = TaskStat::parse(&stat).unwrap().starttime;
    let path = format!("/dev/shm/posixrt-nametaken-{pid}-{start}");
    let _ = std::fs::remove_file(&path);
    let theirs = std::fs::File::create(&path).unwrap();
    theirs
        .write_all_at(b"the other namespace's registry", 0)
        .unwrap();
    rustix::fs::flock(
        &theirs,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    let r = Registry::create("nametaken", 8, 1);
    let mut kept = [0u8; 30];
    let still = std::fs::File::open(&path)
        .and_then(|f| f.read_exact_at(&mut kept, 0))
        .is_ok()
        && &kept == b"the other namespace's registry";
    let _ = std::fs::remove_file(&path);
    let e = r.expect_err("created over a live writer's file");
    assert!(still, "the live writer's file was replaced");
    assert_eq!(e.kind(), posixrt::ErrorKind::Busy, "{e}");
}
