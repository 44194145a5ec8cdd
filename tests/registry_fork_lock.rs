//! A child forked while another thread of its parent is inside
//! `Registry::create`, after the registry file was locked: the child must not
//! keep the parent's lock (the fork hook lets go of it), or the parent's file
//! looks owned after the parent `exec`s, for as long as the child lives.
//!
//! The creating thread is held in its allocation of the exit-removal path
//! (a `CString` of the registry path, sized `path.len() + 1`: an allocation of
//! that size made by that thread alone), after the file was locked and
//! published; the test forks then.

#[path = "common/child.rs"]
mod child;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use posixrt::registry::Registry;

thread_local! {
    /// The size of the allocation the thread waits in (0: none).
    static HOLD_AT: Cell<usize> = const { Cell::new(0) };
}

static HELD: AtomicBool = AtomicBool::new(false);
static RELEASE: AtomicBool = AtomicBool::new(false);

struct HoldingAlloc;

// SAFETY: forwards every call to the system allocator unchanged.
unsafe impl GlobalAlloc for HoldingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let at = HOLD_AT.try_with(Cell::get).unwrap_or(0);
        if at != 0 && l.size() == at {
            let _ = HOLD_AT.try_with(|h| h.set(0));
            HELD.store(true, SeqCst);
            while !RELEASE.load(SeqCst) {
                std::thread::yield_now();
            }
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: `p` came from `alloc` above, that is from `System`.
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOC: HoldingAlloc = HoldingAlloc;

/// In the child: the descriptors through which it holds a `flock` (from
/// `/proc/self/fdinfo`, which lists the locks of each open file description).
fn flocks_held() -> Vec<String> {
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

#[test]
fn a_child_forked_inside_create_lets_go_of_the_lock() {
    let kind = "regforklockwin";
    let pid = std::process::id();
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let start: u64 = stat[stat.rfind(')').unwrap() + 2..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap();
    let path = format!("/dev/shm/posixrt-{kind}-{pid}-{start}");
    let creator = std::thread::spawn(move || {
        HOLD_AT.with(|h| h.set(path.len() + 1));
        let r = Registry::create(kind, 8, 1);
        HOLD_AT.with(|h| h.set(0));
        r
    });
    while !HELD.load(SeqCst) && !creator.is_finished() {
        std::thread::yield_now();
    }
    assert!(
        HELD.load(SeqCst),
        "the creating thread never allocated the path"
    );
    let (r, w) = rustix::pipe::pipe().unwrap();
    // SAFETY: the child reads /proc and `_exit`s; the held thread holds no
    // allocator lock (it waits before entering the system allocator).
    let child_pid = unsafe { libc::fork() };
    if child_pid == 0 {
        drop(r);
        let held = flocks_held();
        let _ = rustix::io::write(&w, format!("{held:?}").as_bytes());
        // SAFETY: ends the child without exit handlers or unwinding.
        unsafe { libc::_exit(i32::from(!held.is_empty())) };
    }
    assert!(child_pid > 0, "fork: {}", std::io::Error::last_os_error());
    drop(w);
    RELEASE.store(true, SeqCst);
    let status = child::wait_child(child_pid);
    let mut msg = String::new();
    let _ = std::io::Read::read_to_string(&mut std::fs::File::from(r), &mut msg);
    let reg = creator.join().unwrap().expect("create");
    drop(reg);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "the child holds the parent's registry lock: {msg} (status {status:#x})"
    );
}
