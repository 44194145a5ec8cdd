//! A registry name planted by another local user. `/dev/shm` is
//! world-writable and a registry's name is predictable (a pid and a start
//! time, both public in `/proc`), so another user can create a file, a
//! symlink or a FIFO there before the process's first registry of a kind.
//! `Registry::create` never opens such a file for writing and never takes it
//! for another live writer's registry: it replaces it where it may (root),
//! and otherwise fails with `PermissionDenied` naming the file's owner; a
//! file planted at the temporary name it fills before publishing is avoided.
//!
//! Planting another user's file needs root (`chown`); without root each test
//! asserts that `chown` is refused and checks nothing else. The unprivileged
//! side runs in a forked child that gives up root (uid and gid 65534).

#[path = "common/child.rs"]
mod child;

use std::io::Read;
use std::os::unix::fs::{FileExt, MetadataExt};

use posixrt::registry::{current_thread, scan, Registry, TaskStat};
use posixrt::ErrorKind;

/// The user the unprivileged child runs as.
const NOBODY: u32 = 65534;
/// The user who plants files (neither root nor [`NOBODY`]).
const OTHER: u32 = 65533;

/// Held by each test: a fork while another test's thread holds a lock of
/// the crate (creating a registry) would leave the child stuck on it.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start_of(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    TaskStat::parse(&stat).unwrap().starttime
}

/// Gives `path` (not following a symlink) to `uid`; false, after checking
/// that the refusal is the one for a user without root, if not root.
fn give_to(path: &str, uid: u32) -> bool {
    let r = rustix::fs::chownat(
        rustix::fs::CWD,
        path,
        Some(rustix::process::Uid::from_raw(uid)),
        Some(rustix::process::Gid::from_raw(uid)),
        rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
    );
    match r {
        Ok(()) => true,
        Err(e) => {
            assert!(!rustix::process::geteuid().is_root(), "chown as root: {e}");
            assert_eq!(e, rustix::io::Errno::PERM);
            println!("skip: planting another user's file needs root ({e})");
            false
        }
    }
}

#[test]
fn a_locked_file_planted_by_another_user_does_not_block_the_create() {
    // The planter holds the file's exclusive lock, as a live writer of that
    // name would: the file is not a registry of this process's users (no
    // reader would list it), so it must not make the create fail with Busy.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let path = format!("/dev/shm/posixrt-plantlock-{pid}-{}", start_of(pid));
    let _ = std::fs::remove_file(&path);
    let planted = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .unwrap();
    planted.write_all_at(b"made-up marks", 0).unwrap();
    rustix::fs::flock(
        &planted,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    let planted_ino = planted.metadata().unwrap().ino();
    if !give_to(&path, NOBODY) {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let r = Registry::create("plantlock", 8, 1);
    let now = std::fs::symlink_metadata(&path);
    let mut kept = [0u8; 13];
    planted.read_exact_at(&mut kept, 0).unwrap();
    let reg = match r {
        Ok(reg) => reg,
        Err(e) => {
            let _ = std::fs::remove_file(&path);
            panic!("a file planted by another user blocked the create: {e}");
        }
    };
    assert_eq!(&kept, b"made-up marks", "the planted file was written");
    let now = now.unwrap();
    assert_ne!(now.ino(), planted_ino, "the planted file was kept");
    assert_eq!(now.uid(), rustix::process::geteuid().as_raw());
    let (tid, start) = current_thread().unwrap();
    let mut w = reg.claim(tid, start).unwrap();
    w.write(|p| p.store_u64(0, 5));
    let s = scan("plantlock", Some(pid as i32)).unwrap();
    assert_eq!(s.processes.len(), 1, "{s:?}");
    assert_eq!(s.processes[0].slots[0].payload[..8], 5u64.to_ne_bytes());
}

#[test]
fn a_locked_mark_registry_planted_before_the_first_mark_does_not_block_it() {
    // The same through `mark`: the only mark of this test process (each
    // test file is one process) comes after the planting.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let path = format!("/dev/shm/posixrt-mark-{pid}-{}", start_of(pid));
    let _ = std::fs::remove_file(&path);
    let planted = std::fs::File::create(&path).unwrap();
    rustix::fs::flock(
        &planted,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .unwrap();
    if !give_to(&path, NOBODY) {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let r = posixrt::mark::set("after a planted file");
    if let Err(e) = r {
        let _ = std::fs::remove_file(&path);
        panic!("the first mark failed: {e}");
    }
    let snap = posixrt::mark::snapshot_pid(pid as i32).unwrap();
    let listed: Vec<_> = snap.threads().map(|(_, t)| t.marker.clone()).collect();
    assert_eq!(listed, ["after a planted file"], "{snap:?}");
    posixrt::mark::clear();
}

#[test]
fn a_symlink_planted_at_the_name_is_replaced_not_followed() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    let path = format!("/dev/shm/posixrt-plantlink-{pid}-{}", start_of(pid));
    let target = format!("/dev/shm/plantlink-target-{pid}");
    let _ = std::fs::remove_file(&path);
    std::fs::write(&target, b"another user's file").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    if !give_to(&path, NOBODY) || !give_to(&target, NOBODY) {
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(&target);
        return;
    }
    let r = Registry::create("plantlink", 8, 1);
    let now = std::fs::symlink_metadata(&path);
    let kept = std::fs::read(&target);
    let _ = std::fs::remove_file(&target);
    let reg = r.expect("create over a planted symlink");
    assert!(now.unwrap().file_type().is_file(), "the symlink was kept");
    assert_eq!(kept.unwrap(), b"another user's file", "the target changed");
    drop(reg);
}

/// Forks a child that gives up root (uid and gid [`NOBODY`]) and then
/// creates a registry of `kind`; before it does, `plant(child pid, child
/// start time)` runs in the parent. The create's outcome as the child saw
/// it: `Ok(path)` or `Err((kind, text))`.
fn unprivileged_create(
    kind: &'static str,
    plant: impl FnOnce(u32, u64),
) -> Result<String, (ErrorKind, String)> {
    let (go_r, go_w) = rustix::pipe::pipe().unwrap();
    let (msg_r, msg_w) = rustix::pipe::pipe().unwrap();
    // SAFETY: the child waits for the parent, drops root, creates one
    // registry (no other test here runs meanwhile: SERIAL), reports on a pipe
    // and `_exit`s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork: {}", std::io::Error::last_os_error());
    if pid == 0 {
        drop((go_w, msg_r));
        let mut b = [0u8; 1];
        let _ = rustix::io::read(&go_r, &mut b);
        // SAFETY: plain system calls on this child's own credentials.
        let dropped = unsafe {
            libc::setgroups(0, std::ptr::null()) == 0
                && libc::setresgid(NOBODY, NOBODY, NOBODY) == 0
                && libc::setresuid(NOBODY, NOBODY, NOBODY) == 0
        };
        let text = if !dropped {
            "E?:could not give up root".to_string()
        } else {
            match Registry::create(kind, 8, 1) {
                Ok(reg) => format!("OK:{}", reg.path().display()),
                Err(e) => format!("E{:?}:{e}", e.kind()),
            }
        };
        let _ = rustix::io::write(&msg_w, text.as_bytes());
        // SAFETY: ends the child without the harness's destructors (the
        // registry, dropped above, removed its file).
        unsafe { libc::_exit(0) }
    }
    drop((go_r, msg_w));
    plant(pid as u32, start_of(pid as u32));
    let _ = rustix::io::write(&go_w, b"g");
    let status = child::wait_child(pid);
    let mut text = String::new();
    let _ = std::fs::File::from(msg_r).read_to_string(&mut text);
    assert!(
        libc::WIFEXITED(status),
        "the child died: {status:#x} ({text})"
    );
    match text.split_once(':') {
        Some(("OK", path)) => Ok(path.to_string()),
        Some((k, e)) if k == format!("E{:?}", ErrorKind::PermissionDenied) => {
            Err((ErrorKind::PermissionDenied, e.to_string()))
        }
        _ => Err((ErrorKind::Other, text)),
    }
}

/// Whether this test can plant files as another user (root).
fn can_plant(what: &str) -> bool {
    let probe = format!("/dev/shm/plant-probe-{what}-{}", std::process::id());
    std::fs::write(&probe, b"").unwrap();
    let ok = give_to(&probe, OTHER);
    let _ = std::fs::remove_file(&probe);
    ok
}

#[test]
fn a_file_planted_at_the_temporary_name_does_not_block_an_unprivileged_create() {
    // In the sticky /dev/shm an unprivileged user cannot remove another
    // user's file: the create must fill its file under another name.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_plant("tmp") {
        return;
    }
    let planted = std::cell::RefCell::new(String::new());
    let r = unprivileged_create("planttmp", |pid, start| {
        let tmp = format!("/dev/shm/.posixrt-planttmp-{pid}-{start}.tmp");
        std::fs::write(&tmp, b"planted").unwrap();
        assert!(give_to(&tmp, OTHER));
        *planted.borrow_mut() = tmp;
    });
    let kept = std::fs::read(&*planted.borrow());
    let _ = std::fs::remove_file(&*planted.borrow());
    let path = r.expect("a file planted at the temporary name blocked the create");
    assert!(path.contains("/posixrt-planttmp-"), "{path}");
    assert_eq!(kept.unwrap(), b"planted");
}

#[test]
fn a_file_planted_at_the_name_fails_an_unprivileged_create_with_its_owner() {
    // The unprivileged process cannot replace another user's file in the
    // sticky /dev/shm: the error says whose file is in the way.
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_plant("name") {
        return;
    }
    let planted = std::cell::RefCell::new(String::new());
    let r = unprivileged_create("plantname", |pid, start| {
        let path = format!("/dev/shm/posixrt-plantname-{pid}-{start}");
        std::fs::write(&path, b"planted").unwrap();
        assert!(give_to(&path, OTHER));
        *planted.borrow_mut() = path;
    });
    let kept = std::fs::read(&*planted.borrow());
    let _ = std::fs::remove_file(&*planted.borrow());
    match r {
        Err((ErrorKind::PermissionDenied, e)) => {
            assert!(e.contains(&*planted.borrow()), "{e}");
            assert!(e.contains(&format!("uid {OTHER}")), "{e}");
        }
        other => panic!("create over another user's file: {other:?}"),
    }
    assert_eq!(kept.unwrap(), b"planted", "the planted file was written");
}
