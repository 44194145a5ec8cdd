//! A reap of the C engine's ring from `aio_error` (`CEngine::poll`, which may
//! run in a signal handler: see `aio/capi/release.rs`) allocates nothing
//! also on its rare paths: a C read of an fd number last seen to name a
//! regular file, now a pipe (`RWF_NOWAIT` says EAGAIN), or a file that
//! refuses `RWF_NOWAIT` (procfs: EOPNOTSUPP), whose numbers the reap marks
//! for the next reads. (A test of its own: a global allocator that counts
//! the calling thread's allocations, and the C engine's process-wide
//! counters.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use posixrt::aio::capi::{error_code, Aiocb, CEngine};
use posixrt::aio::{Aio, Backend};

#[allow(unused_macros, unused_imports)]
mod common;
use common::c_engine::{aiocb, read, wait_within, HeldRead};

thread_local! {
    /// The calling thread's allocations are counted (in [`COUNTED`]).
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static COUNTED: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting the allocations, reallocations and frees
/// made while the calling thread's [`COUNTING`] is set.
struct CountingAlloc;

fn count() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        COUNTED.fetch_add(1, Relaxed);
    }
}

// SAFETY: forwards to `System`, only counting.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        count();
        // SAFETY: `p` came from this allocator, that is from `System`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        count();
        // SAFETY: as in `dealloc`.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Waits (up to 10 s) until `cb` is done; its result (bytes, or -errno).
fn wait_done(engine: &CEngine, cb: &Aiocb) -> i64 {
    let done = wait_within(engine, cb, Duration::from_secs(10));
    assert_eq!(done, Ok(true), "the read did not end");
    // SAFETY: `cb` is a live aiocb; done, so the engine no longer writes it.
    match unsafe { error_code(cb) } {
        0 => cb.__return_value as i64,
        e => -(e as i64),
    }
}

/// Reads `file` once through the engine (its number is then known to name a
/// regular file), then puts `now` in its place under the same number.
fn known_then_replaced(engine: &CEngine, file: &std::fs::File, now: &OwnedFd) {
    let mut cb = aiocb();
    let mut buf = [0u8; 4];
    let r = read(&mut cb, file.as_raw_fd(), &mut buf);
    // SAFETY: the aiocb and the buffer outlive the request (waited for here).
    unsafe { engine.submit(vec![r], None, false) }.expect("submit");
    assert_eq!(wait_done(engine, &cb), 4);
    // SAFETY: both numbers are open; the file's number is reused in place.
    assert!(unsafe { libc::dup2(now.as_raw_fd(), file.as_raw_fd()) } >= 0);
}

#[test]
fn a_reap_that_marks_fd_numbers_allocates_nothing() {
    let hooks = Aio::builder().backend(Backend::Uring).build();
    if let Err(e) = hooks {
        // The thread engine does not reap (its workers complete the reads).
        eprintln!("skipped: io_uring is refused here ({e})");
        return;
    }
    let engine = CEngine::new(64, 2, 1024).expect("C engine");
    // A read that stays in flight, so that the next ones are deferred: left
    // in the ring (the flusher thread enters it), for `poll` to reap.
    let held = HeldRead::submit(&engine);

    // A number that names a pipe now (EAGAIN: a stream), and one that names
    // a procfs file (EOPNOTSUPP: refuses RWF_NOWAIT).
    let to_pipe = common::temp_file(b"data");
    let (pipe_rd, pipe_wr) = common::pipe();
    known_then_replaced(&engine, &to_pipe, &pipe_rd);
    let to_proc = common::temp_file(b"data");
    let proc_file: OwnedFd = std::fs::File::open("/proc/self/stat").unwrap().into();
    known_then_replaced(&engine, &to_proc, &proc_file);

    let mut cbs = [aiocb(), aiocb()];
    let mut bufs = [[0u8; 4]; 2];
    let [pipe_buf, proc_buf] = &mut bufs;
    let [pipe_cb, proc_cb] = &mut cbs;
    let reqs = vec![
        read(pipe_cb, to_pipe.as_raw_fd(), pipe_buf),
        read(proc_cb, to_proc.as_raw_fd(), proc_buf),
    ];
    // SAFETY: the aiocbs and the buffers outlive the requests (waited below).
    unsafe { engine.submit(reqs, None, false) }.expect("submit");
    // (The flusher mostly entered the ring by now; if not, `poll` does.)
    std::thread::sleep(Duration::from_millis(20));
    COUNTING.with(|c| c.set(true));
    engine.poll();
    COUNTING.with(|c| c.set(false));
    assert_eq!(
        COUNTED.load(Relaxed),
        0,
        "allocations, reallocations and frees in aio_error's reap"
    );

    // Both reads go on, and end as read(2) would.
    assert!(wait_done(&engine, &cbs[1]) > 0);
    rustix::io::write(&pipe_wr, b"pipe").unwrap();
    assert_eq!(wait_done(&engine, &cbs[0]), 4);
    assert_eq!(&bufs[0], b"pipe");
    rustix::io::write(&held.wr, b"held").unwrap();
    assert_eq!(wait_done(&engine, &held.cb), 4);
}
