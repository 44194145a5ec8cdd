//! Unit tests of the request table.

use super::*;

fn admitted(core: &mut Core, fd: i32, priority: i32) -> u32 {
    let op = RawOp {
        kind: OpKind::Read,
        fd,
        offset: 0,
        ptr: 0,
        len: 0,
        ordered: false,
    };
    let class = SchedClass {
        policy: libc::SCHED_FIFO,
        priority,
    };
    let (idx, _) = core.alloc_as(op, 0, class, &mut Notify::None, NO_LIST);
    core.admit(idx, false);
    idx
}

/// A request cancelled while it waited leaves its entry on top of the
/// ready queue: the class of the one behind it is still found (the pool
/// switches a sleeping worker to it), and `pop_ready` gives that one.
#[test]
fn first_ready_class_looks_past_a_cancelled_request() {
    let mut core = Core::new();
    let high = admitted(&mut core, 3, 60);
    let low = admitted(&mut core, 4, 50);
    assert_eq!(core.first_ready_class().map(|c| c.priority), Some(60));
    core.complete(high, -(libc::ECANCELED as i64));
    assert_eq!(core.ready_len(), 1);
    assert_eq!(
        core.first_ready_class(),
        Some(SchedClass {
            policy: libc::SCHED_FIFO,
            priority: 50
        })
    );
    assert_eq!(core.pop_ready(), Some(low));
    assert_eq!(core.first_ready_class(), None);
    assert_eq!(core.pop_ready(), None);
}

fn placed(core: &mut Core, fd: i32, kind: OpKind) -> u32 {
    let op = RawOp {
        kind,
        fd,
        offset: 0,
        ptr: 0,
        len: 0,
        ordered: matches!(kind, OpKind::Fsync | OpKind::Fdatasync),
    };
    let class = SchedClass {
        policy: libc::SCHED_OTHER,
        priority: 0,
    };
    let (idx, _) = core.alloc_as(op, 0, class, &mut Notify::None, NO_LIST);
    core.admit(idx, false);
    idx
}

/// Issues what is ready (as an engine would).
fn issue_ready(core: &mut Core) -> Vec<u32> {
    std::iter::from_fn(|| core.pop_ready()).collect()
}

/// POSIX aio_fsync: "In the event that any of the queued I/O operations
/// fail, aio_fsync() shall return the error condition defined for read() and
/// write()". A write in flight when the fsync came fails: the fsync, itself
/// successful, reports the write's error; one that failed before it came, a
/// cancelled one, one on another fd and one that came after it do not count.
#[test]
fn fsync_reports_the_error_of_a_write_it_covers() {
    let mut core = Core::new();
    let early = placed(&mut core, 5, OpKind::Write);
    assert_eq!(issue_ready(&mut core), vec![early]);
    core.complete(early, -(libc::ENOSPC as i64));
    let write = placed(&mut core, 5, OpKind::Write);
    let read = placed(&mut core, 5, OpKind::Read);
    let other = placed(&mut core, 6, OpKind::Write);
    assert_eq!(issue_ready(&mut core), vec![write, read, other]);
    let sync = placed(&mut core, 5, OpKind::Fsync);
    let later = placed(&mut core, 5, OpKind::Write);
    assert!(issue_ready(&mut core).is_empty(), "the fsync waits");
    core.complete(other, -(libc::EIO as i64));
    core.complete(read, 10);
    core.complete(write, -(libc::EFBIG as i64));
    // (A write after the fsync need not wait for it.)
    assert_eq!(issue_ready(&mut core), vec![sync, later]);
    core.complete(later, -(libc::EIO as i64));
    core.complete(sync, 0);
    assert_eq!(core.slots[sync as usize].res, -(libc::EFBIG as i64));
    // A second fsync starts clean: what failed was done before it came.
    let sync2 = placed(&mut core, 5, OpKind::Fdatasync);
    assert_eq!(issue_ready(&mut core), vec![sync2]);
    core.complete(sync2, 0);
    assert_eq!(core.slots[sync2 as usize].res, 0);
}

/// The first failure is the one reported; an fsync that failed itself keeps
/// its own error; a cancelled write is not a failed one.
#[test]
fn fsync_reports_the_first_covered_error_and_keeps_its_own() {
    let mut core = Core::new();
    let a = placed(&mut core, 7, OpKind::Write);
    let b = placed(&mut core, 7, OpKind::Write);
    let c = placed(&mut core, 7, OpKind::Write);
    assert_eq!(issue_ready(&mut core), vec![a, b, c]);
    let s1 = placed(&mut core, 7, OpKind::Fsync);
    let s2 = placed(&mut core, 7, OpKind::Fdatasync);
    core.complete(c, -(libc::ECANCELED as i64));
    core.complete(b, -(libc::EIO as i64));
    core.complete(a, -(libc::ENOSPC as i64));
    assert_eq!(issue_ready(&mut core), vec![s1]);
    core.complete(s1, 0);
    assert_eq!(core.slots[s1 as usize].res, -(libc::EIO as i64));
    assert_eq!(issue_ready(&mut core), vec![s2]);
    core.complete(s2, -(libc::EROFS as i64));
    assert_eq!(core.slots[s2 as usize].res, -(libc::EROFS as i64));
}

/// Groups of `lio_listio` lists still open (not yet finished).
fn open_lists(core: &Core) -> usize {
    core.lists.open_count()
}

/// Signals counted by `count_signal`.
static REFUSED_LIST_SIGNALS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

extern "C" fn count_signal(_: i32) {
    REFUSED_LIST_SIGNALS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

/// `lio_listio` on a context that is shutting down is refused
/// (InvalidState) and leaves no list group open. The group was allocated
/// before the submission was refused and never finished: it stayed open for
/// good, with its notification (and an empty list's notification fired,
/// for a call that failed: a signal to this thread, sent as the lock is
/// released inside the call, has been handled when it returns).
#[test]
fn a_list_refused_at_shutdown_leaves_no_group_open() {
    use crate::aio::{Aio, Backend, ListMode, Op};
    let signo = libc::SIGRTMIN() + 6;
    // SAFETY: installs a handler that only counts; the struct is fully set.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = count_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(signo, &sa, std::ptr::null_mut()), 0);
    }
    let me = crate::sys::tid::current() as i32;
    let f = rustix::fs::memfd_create("lists", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    for backend in [Backend::Threads, Backend::Uring] {
        let aio = match Aio::builder().backend(backend).build() {
            Ok(aio) => aio,
            // (io_uring refused here: the thread engine is tested.)
            Err(_) if backend == Backend::Uring => continue,
            Err(e) => panic!("{backend}: {e}"),
        };
        aio.inner.lock().shutdown = true;
        for mode in [ListMode::NoWait, ListMode::Wait] {
            for n in [1, 3] {
                let ops = (0..n).map(|_| Some(Op::read(&f, 0, vec![0u8; 4])));
                let Err(e) = aio.lio_listio(mode, ops, Notify::thread_signal(me, signo, 1)) else {
                    panic!("{backend} {mode:?}: a list of {n} accepted at shutdown");
                };
                assert_eq!(e.kind(), crate::ErrorKind::InvalidState, "{e}");
            }
        }
        let none = std::iter::empty::<Option<Op<'_, Vec<u8>>>>();
        let Err(e) = aio.lio_listio(ListMode::NoWait, none, Notify::thread_signal(me, signo, 2))
        else {
            panic!("{backend}: an empty list accepted at shutdown");
        };
        assert_eq!(e.kind(), crate::ErrorKind::InvalidState, "{e}");
        let open = open_lists(&aio.inner.lock());
        assert_eq!(open, 0, "{backend}: list groups left open");
        assert_eq!(
            REFUSED_LIST_SIGNALS.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "{backend}: a refused list notified"
        );
    }
}

/// A reap can run where nothing may allocate (a C signal handler calling
/// `aio_error` on a request in progress): the frees it makes must fit in the
/// free list's room, made when the slots were added at submission. 200
/// requests in flight at once, past the 64 slots made at first, then all
/// completed and freed: the free list is never reallocated.
#[test]
fn freeing_every_slot_never_grows_the_free_list() {
    let mut core = Core::new();
    let n = 200;
    let idxs: Vec<u32> = (0..n)
        .map(|i| placed(&mut core, 10 + i, OpKind::Read))
        .collect();
    assert_eq!(issue_ready(&mut core).len(), idxs.len());
    assert_eq!(core.slots.len(), idxs.len(), "one slot each, none free");
    assert!(
        core.free.capacity() >= core.slots.len(),
        "room for {} frees, {} slots",
        core.free.capacity(),
        core.slots.len()
    );
    let (ptr, cap) = (core.free.as_ptr(), core.free.capacity());
    for &idx in &idxs {
        core.complete(idx, 0);
        core.free_slot(idx);
    }
    assert_eq!(core.free.len(), idxs.len());
    assert_eq!((core.free.as_ptr(), core.free.capacity()), (ptr, cap));
}

/// The same for `lio_listio` groups: the last member's completion frees its
/// list's group during a reap (possibly in a signal handler), so the groups'
/// free list has room for every group, made when the group was added. 100
/// lists open at once, then finished: the free list is never reallocated.
#[test]
fn finishing_every_list_never_grows_the_free_list() {
    let mut core = Core::new();
    let lists: Vec<u32> = (0..100).map(|_| core.new_list(1, Notify::None)).collect();
    assert_eq!(open_lists(&core), lists.len());
    let ((ptr, cap, _), groups) = core.lists.free_list_shape();
    assert!(cap >= groups, "room for {cap} frees, {groups} groups");
    for &l in &lists {
        core.finish_list(l);
    }
    assert_eq!(open_lists(&core), 0);
    assert_eq!(core.lists.free_list_shape().0, (ptr, cap, lists.len()));
}
