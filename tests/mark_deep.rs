//! Deeper checks of `posixrt::mark`: threads that exit by a panic or by
//! `pthread_exit` free their slot, snapshots of pids with no registry are empty,
//! and a mark from a late thread-local destructor leaves nothing listed.

#[path = "common/panics.rs"]
mod panics;

use posixrt::mark;

fn me() -> i32 {
    std::process::id() as i32
}

fn listed(tid: i32) -> bool {
    mark::snapshot_pid(me())
        .unwrap()
        .threads()
        .any(|(_, t)| t.tid == tid)
}

#[test]
fn a_thread_that_panics_frees_its_slot() {
    panics::quiet_expected_panic("deep: expected panic");
    let (tx, rx) = std::sync::mpsc::channel();
    let t = std::thread::spawn(move || {
        mark::set("deep panicking thread").unwrap();
        tx.send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
        panic!("deep: expected panic");
    });
    let tid = rx.recv().unwrap();
    assert!(t.join().is_err());
    assert!(!listed(tid), "the panicked thread is still listed");
}

extern "C-unwind" fn exits_by_pthread_exit(arg: *mut libc::c_void) -> *mut libc::c_void {
    mark::set("deep pthread_exit thread").unwrap();
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    // SAFETY: arg is the &AtomicI32 the test passed, alive until join.
    let out = unsafe { &*(arg as *const std::sync::atomic::AtomicI32) };
    out.store(tid, std::sync::atomic::Ordering::SeqCst);
    // SAFETY: no Rust frame with a destructor is between here and the thread start.
    unsafe { libc::pthread_exit(std::ptr::null_mut()) }
}

#[test]
fn a_thread_ended_by_pthread_exit_frees_its_slot() {
    let tid = std::sync::atomic::AtomicI32::new(0);
    let mut th: libc::pthread_t = 0;
    let f: extern "C-unwind" fn(*mut libc::c_void) -> *mut libc::c_void = exits_by_pthread_exit;
    // SAFETY: valid out pointer, a start routine of the right ABI shape, and an
    // argument that outlives the thread (joined below).
    let rc = unsafe {
        libc::pthread_create(
            &mut th,
            std::ptr::null(),
            std::mem::transmute::<
                extern "C-unwind" fn(*mut libc::c_void) -> *mut libc::c_void,
                extern "C" fn(*mut libc::c_void) -> *mut libc::c_void,
            >(f),
            &tid as *const _ as *mut libc::c_void,
        )
    };
    assert_eq!(rc, 0);
    // SAFETY: th was created above and is joined once.
    assert_eq!(unsafe { libc::pthread_join(th, std::ptr::null_mut()) }, 0);
    let tid = tid.load(std::sync::atomic::Ordering::SeqCst);
    assert!(tid > 0);
    assert!(!listed(tid), "the pthread_exit'ed thread is still listed");
}

#[test]
fn snapshots_of_pids_without_marks_are_empty() {
    for pid in [0, -1, i32::MIN, i32::MAX, 1] {
        let s = mark::snapshot_pid(pid).unwrap();
        assert!(s.processes.is_empty(), "pid {pid}: {s:?}");
    }
}

struct MarksOnDrop(std::sync::mpsc::Sender<String>);
impl Drop for MarksOnDrop {
    fn drop(&mut self) {
        let r = mark::set("deep from a destructor");
        let _ = self.0.send(format!("{:?}", r.map_err(|e| e.kind())));
    }
}
thread_local! {
    static DTOR: std::cell::RefCell<Option<MarksOnDrop>> = const { std::cell::RefCell::new(None) };
}

#[test]
fn a_mark_from_a_late_destructor_leaves_nothing_listed() {
    let (tx, rx) = std::sync::mpsc::channel();
    let (tidtx, tidrx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        mark::set("deep dtor thread").unwrap();
        DTOR.with(|d| *d.borrow_mut() = Some(MarksOnDrop(tx)));
        tidtx
            .send(rustix::thread::gettid().as_raw_nonzero().get())
            .unwrap();
    })
    .join()
    .unwrap();
    let tid = tidrx.recv().unwrap();
    let _r = rx.recv().unwrap();
    assert!(!listed(tid), "a thread that exited is listed");
}
