//! A mark registry file truncated by another process (an admin's
//! `truncate -s 0 /dev/shm/posixrt-*`, a clean-up script) while its owner
//! runs: the owner's mapping then has pages past the end of the file. A
//! thread that was marked before and marks again (a relabel, not a new
//! claim), reads its own mark, clears it or exits must not die of `SIGBUS`,
//! and its next mark is listed again.
//!
//! Each check runs in a forked child, so that a `SIGBUS` fails the test
//! instead of killing the test run. The tests fork: they run one at a time
//! ([`SERIAL`]).

#[path = "common/child.rs"]
mod child;
#[path = "common/small_shm.rs"]
mod small_shm;

use posixrt::mark;

/// Held by each test: a fork while another test's threads hold locks of the
/// crate would leave the child stuck on them.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Forks; the child runs `checks`, removes its mark registry and `_exit`s
/// (0, or 1 with the failure's text on a pipe). The failure, or how the
/// child died.
fn in_child(checks: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // SAFETY: the child marks from its one thread (no other thread of this
    // test binary is inside a mark call: SERIAL, and no other test here
    // marks in the parent).
    let (status, msg) = unsafe {
        child::fork_checks(|| {
            let res = checks();
            child::remove_own_registries("mark");
            res
        })
    };
    if libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGBUS {
        return Err("the child died of SIGBUS".into());
    }
    child::outcome(status, msg)
}

/// Shrinks this process's mark registry file to `len` bytes, as another
/// process would.
fn truncate_registry(len: u64) -> Result<(), String> {
    let path = mark::registry_path().ok_or("no registry")?;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .and_then(|f| f.set_len(len))
        .map_err(|e| format!("truncating {}: {e}", path.display()))
}

/// The markers a reader lists for the calling thread.
fn listed_markers() -> Result<Vec<String>, String> {
    let me = std::process::id() as i32;
    // SAFETY: gettid has no precondition.
    let tid = unsafe { libc::gettid() };
    let snap = mark::snapshot_pid(me).map_err(|e| format!("snapshot: {e}"))?;
    Ok(snap
        .threads()
        .filter(|(_, t)| t.tid == tid)
        .map(|(_, t)| t.marker.clone())
        .collect())
}

fn unwrap(r: Result<(), String>) {
    if let Err(e) = r {
        panic!("{e}");
    }
}

#[test]
fn a_relabel_after_the_file_was_truncated_to_zero_is_listed() {
    unwrap(in_child(|| {
        mark::set("before").map_err(|e| format!("set: {e}"))?;
        truncate_registry(0)?;
        mark::update("after").map_err(|e| format!("update: {e}"))?;
        if mark::current().as_deref() != Some("after") {
            return Err(format!("current() is {:?}", mark::current()));
        }
        let listed = listed_markers()?;
        if listed != ["after"] {
            return Err(format!("listed after the relabel: {listed:?}"));
        }
        Ok(())
    }));
}

#[test]
fn set_and_write_raw_after_the_file_was_truncated_are_listed() {
    unwrap(in_child(|| {
        mark::set("first name").map_err(|e| format!("set: {e}"))?;
        truncate_registry(0)?;
        mark::set("second name").map_err(|e| format!("set: {e}"))?;
        truncate_registry(0)?;
        mark::write_raw(0, &[7; 4]).map_err(|e| format!("write_raw: {e}"))?;
        let mut raw = [0u8; 4];
        mark::read_raw(0, &mut raw).map_err(|e| format!("read_raw: {e}"))?;
        if raw != [7; 4] {
            return Err(format!("read_raw: {raw:?}"));
        }
        let me = std::process::id() as i32;
        let snap = mark::snapshot_pid(me).map_err(|e| format!("snapshot: {e}"))?;
        let shown: Vec<_> = snap.threads().map(|(_, t)| t.raw[..4].to_vec()).collect();
        if shown != [vec![7u8; 4]] {
            return Err(format!("raw blocks listed: {shown:?} ({snap:?})"));
        }
        Ok(())
    }));
}

#[test]
fn reading_clearing_and_exiting_after_the_file_was_truncated_survive() {
    unwrap(in_child(|| {
        mark::set("main").map_err(|e| format!("set: {e}"))?;
        let (to_worker, worker_rx) = std::sync::mpsc::channel::<()>();
        let (marked_tx, marked) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            mark::set("worker").map_err(|e| format!("worker set: {e}"))?;
            let _ = marked_tx.send(());
            let _ = worker_rx.recv();
            // The thread exits: its slot is freed by a thread-local destructor.
            Ok::<(), String>(())
        });
        marked.recv().map_err(|e| e.to_string())?;
        truncate_registry(0)?;
        let _ = to_worker.send(());
        worker.join().map_err(|_| "the worker panicked")??;
        let _ = mark::current();
        let mut raw = [0u8; 8];
        mark::read_raw(0, &mut raw).map_err(|e| format!("read_raw: {e}"))?;
        mark::clear();
        mark::set("again").map_err(|e| format!("set: {e}"))?;
        let listed = listed_markers()?;
        if listed != ["again"] {
            return Err(format!("listed after clear and set: {listed:?}"));
        }
        Ok(())
    }));
}

#[test]
fn a_relabel_after_the_file_was_cut_inside_its_first_page_is_listed() {
    // The first page stays mapped (no fault), its bytes past the new end are
    // zeroed: the thread's slot reads as free.
    unwrap(in_child(|| {
        mark::set("before").map_err(|e| format!("set: {e}"))?;
        truncate_registry(64)?;
        mark::update("after").map_err(|e| format!("update: {e}"))?;
        let listed = listed_markers()?;
        if listed != ["after"] {
            return Err(format!("listed after the relabel: {listed:?}"));
        }
        Ok(())
    }));
}

/// Appends to `file` until the file system is full.
fn fill(file: &mut std::fs::File) {
    use std::io::Write;
    let chunk = [1u8; 4096];
    while file.write_all(&chunk).is_ok() {}
}

/// The child's answer where it cannot mount a small `/dev/shm`.
const SKIP: &str = "no private mount namespace for a small /dev/shm here";

#[test]
fn a_relabel_when_the_truncated_file_cannot_be_put_back_fails_and_a_later_one_is_listed() {
    // The truncation freed the file's pages and another file took the room:
    // the relabel says so (OutOfResources, naming the truncation) instead of
    // dying; once there is room again, the next one is listed.
    let r = in_child(|| {
        if !small_shm::small_dev_shm(c"size=256k,mode=1777") {
            return Err(SKIP.to_string());
        }
        mark::set("before").map_err(|e| format!("set: {e}"))?;
        let filler_path = "/dev/shm/filler";
        let mut filler = std::fs::File::create(filler_path).map_err(|e| e.to_string())?;
        fill(&mut filler);
        truncate_registry(0)?;
        fill(&mut filler);
        match mark::update("while full") {
            Err(e)
                if e.kind() == posixrt::ErrorKind::OutOfResources
                    && e.to_string().contains("truncated") => {}
            other => return Err(format!("update on a full /dev/shm: {other:?}")),
        }
        drop(filler);
        std::fs::remove_file(filler_path).map_err(|e| e.to_string())?;
        mark::update("room again").map_err(|e| format!("update: {e}"))?;
        let listed = listed_markers()?;
        if listed != ["room again"] {
            return Err(format!("listed once there is room: {listed:?}"));
        }
        Ok(())
    });
    match r {
        Err(e) if e == SKIP => println!("skip: {e}"),
        r => unwrap(r),
    }
}

#[test]
fn a_fault_outside_the_registry_still_kills_with_sigbus() {
    // The handler that keeps the owner alive must not swallow other faults:
    // a store past the end of another file's mapping kills as before.
    let r = in_child(|| {
        mark::set("marked").map_err(|e| format!("set: {e}"))?;
        let path = format!("/dev/shm/posixrt-test-other-{}", std::process::id());
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(|e| e.to_string())?;
        f.set_len(4096).map_err(|e| e.to_string())?;
        // SAFETY: a fresh shared mapping of the file just made; nothing else
        // refers to it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&f),
                0,
            )
        };
        let _ = std::fs::remove_file(&path);
        if p == libc::MAP_FAILED {
            return Err("mmap".into());
        }
        f.set_len(0).map_err(|e| e.to_string())?;
        // No core file of the expected death.
        let none = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: sets this child's own core size limit from a valid struct.
        unsafe { libc::setrlimit(libc::RLIMIT_CORE, &none) };
        // SAFETY: a store to the mapping, whose page is now past the file's
        // end: it raises SIGBUS, which must end the child.
        unsafe { std::ptr::write_volatile(p.cast::<u8>(), 1) };
        Err("the store past the end of another file went through".into())
    });
    assert_eq!(r, Err("the child died of SIGBUS".to_string()));
}

#[test]
fn a_thread_exiting_after_the_file_was_truncated_puts_it_back() {
    // The first touch of the truncated file is the exiting thread's release:
    // the file must not stay extended with a zeroed header (which readers
    // count as another layout, incompatible) until some later claim.
    unwrap(in_child(|| {
        mark::set("main").map_err(|e| format!("set: {e}"))?;
        let (marked_tx, marked) = std::sync::mpsc::channel::<()>();
        let (go_tx, go) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::spawn(move || {
            mark::set("worker").map_err(|e| format!("worker set: {e}"))?;
            let _ = marked_tx.send(());
            let _ = go.recv();
            Ok::<(), String>(())
        });
        marked.recv().map_err(|e| e.to_string())?;
        truncate_registry(0)?;
        let _ = go_tx.send(());
        worker.join().map_err(|_| "the worker panicked")??;
        let me = std::process::id() as i32;
        let snap = mark::snapshot_pid(me).map_err(|e| format!("snapshot: {e}"))?;
        // The main thread's mark was wiped: nothing is listed, and nothing
        // is counted as unreadable or of another layout.
        if snap.unreadable + snap.incompatible != 0 || snap.threads().count() != 0 {
            return Err(format!("after the exit: {snap:?}"));
        }
        mark::update("main again").map_err(|e| format!("update: {e}"))?;
        let listed = listed_markers()?;
        if listed != ["main again"] {
            return Err(format!("listed after the relabel: {listed:?}"));
        }
        Ok(())
    }));
}

#[test]
fn a_file_extended_again_before_its_repair_is_not_another_layout() {
    // A read of the thread's own mark is the first touch of the truncated
    // file: the fault handler extends it (zeroed) and nothing writes its
    // header before the next mark. Readers must count it as cut short
    // (unreadable, which tfp explains), not as another posixrt release.
    unwrap(in_child(|| {
        mark::set("main").map_err(|e| format!("set: {e}"))?;
        truncate_registry(0)?;
        let _ = mark::current();
        let me = std::process::id() as i32;
        let snap = mark::snapshot_pid(me).map_err(|e| format!("snapshot: {e}"))?;
        if snap.incompatible != 0 || snap.unreadable != 1 {
            return Err(format!("after a read: {snap:?}"));
        }
        Ok(())
    }));
}

/// The descriptor through which this process writes its mark registry (the
/// one open for writing).
fn registry_data_fd() -> Result<i32, String> {
    let path = mark::registry_path().ok_or("no registry")?;
    for e in std::fs::read_dir("/proc/self/fd").map_err(|e| e.to_string())? {
        let e = e.map_err(|e| e.to_string())?;
        let Ok(fd) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if std::fs::read_link(e.path()).ok().as_deref() != Some(path.as_path()) {
            continue;
        }
        let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}"))
            .map_err(|e| e.to_string())?;
        let flags = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| i32::from_str_radix(f.trim(), 8).ok())
            .ok_or("no flags in fdinfo")?;
        if flags & libc::O_ACCMODE == libc::O_RDWR {
            return Ok(fd);
        }
    }
    Err("the registry's descriptor was not found".into())
}

#[test]
fn a_truncation_after_the_program_reused_the_registrys_descriptor_touches_no_other_file() {
    // A program that closes descriptors it did not open (a daemon's
    // close-everything loop) lets the number of the registry's descriptor
    // name another file. Putting a truncated registry back through it would
    // grow and fill that file (and the store past the registry's end would
    // fault again and again).
    unwrap(in_child(|| {
        mark::set("before").map_err(|e| format!("set: {e}"))?;
        let fd = registry_data_fd()?;
        let victim_path = format!("/dev/shm/posixrt-test-victim-{}", std::process::id());
        let victim = std::fs::File::create(&victim_path).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&victim_path);
        // SAFETY: replaces the registry's descriptor number with the victim,
        // as a program that closed it and opened another file would.
        if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&victim), fd) } != fd {
            return Err("dup2".into());
        }
        truncate_registry(0)?;
        let r = mark::update("after");
        let len = victim.metadata().map_err(|e| e.to_string())?.len();
        if len != 0 {
            return Err(format!(
                "the other file grew to {len} bytes (update: {r:?})"
            ));
        }
        Ok(())
    }));
}
