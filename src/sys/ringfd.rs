//! `io_uring_enter` through a registered ring index (`IORING_REGISTER_RING_FDS`,
//! Linux 5.18). With it the kernel skips the lookup of the ring's fd (an `fget`
//! and an `fput`) on every enter: about 2% of a 4 KiB cached read at QD1.
//!
//! A registration belongs to one thread: the kernel keeps a table of 16 per
//! task. So each thread registers a ring itself, once it has entered it
//! [`REGISTER_AFTER`] times: a context that is created, used a few times and
//! dropped pays no registration. A thread registers at most [`PER_THREAD`]
//! rings; past that, and on kernels without the feature, it enters by fd.
//!
//! A registration holds a reference to its ring, so a ring's kernel memory
//! outlives its context until every thread that registered it forgets it:
//! - the thread that drops a ring forgets its own registration at once;
//! - another thread does at its next enter of any ring (a global epoch counts
//!   the rings dropped), or when it exits (the kernel drops its table);
//! - a forked child forgets every registration without a call (its task has
//!   none), through the one fork hook.
//!
//! # References
//! - [`io_uring_register(2)`](https://man7.org/linux/man-pages/man2/io_uring_register.2.html),
//!   `IORING_REGISTER_RING_FDS`
//! - [`io_uring_enter(2)`](https://man7.org/linux/man-pages/man2/io_uring_enter.2.html),
//!   `IORING_ENTER_REGISTERED_RING`

use std::cell::RefCell;
use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// Plain enters of a ring by one thread before the thread registers it.
pub(crate) const REGISTER_AFTER: u32 = 16;
/// Rings one thread registers at most (the kernel allows 16 per task; the
/// rest are left to other io_uring users in the process).
pub(crate) const PER_THREAD: usize = 8;

const IORING_REGISTER_RING_FDS: libc::c_uint = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_uint = 21;
const IORING_ENTER_GETEVENTS: libc::c_uint = 1;
const IORING_ENTER_REGISTERED_RING: libc::c_uint = 1 << 4;
const IORING_ENTER_EXT_ARG: libc::c_uint = 1 << 3;

/// Rings dropped (low 32 bits) and forks (high 32 bits): a thread whose table
/// saw another value sweeps it.
static EPOCH: AtomicU64 = AtomicU64::new(0);
const FORK: u64 = 1 << 32;
/// The kernel refused a registration as unknown: no thread tries again.
static UNSUPPORTED: AtomicBool = AtomicBool::new(false);
/// Ring ids (never reused in a process).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);
/// Rings alive at once that threads may register; more are entered by fd.
const LIVE_MAX: usize = 256;
/// The id of each live ring, in the place it claimed (0: free). A thread's
/// table tells a dropped ring by its place no longer holding its id. (Plain
/// atomics, so the per-thread table needs no destructor, and its first use in
/// a thread allocates nothing.)
static LIVE: [AtomicU64; LIVE_MAX] = [const { AtomicU64::new(0) }; LIVE_MAX];

/// Names one ring for the per-thread tables. Dropped before the ring's fd is
/// closed: the dropping thread forgets its own registration then.
pub(crate) struct RingId {
    id: u64,
    fd: RawFd,
    /// Its place in [`LIVE`]; none when every place was taken.
    place: Option<u16>,
}

impl RingId {
    /// Names the ring open on `fd` (which must stay open while this lives).
    pub(crate) fn new(fd: RawFd) -> RingId {
        super::fork::on_child(forked);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let place = LIVE.iter().position(|p| {
            p.compare_exchange(0, id, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        RingId {
            id,
            fd,
            place: place.map(|k| k as u16),
        }
    }

    /// The calling thread's registered index of this ring, if it has one.
    #[cfg(test)]
    fn registered_here(&self) -> Option<u32> {
        TABLE
            .try_with(|t| {
                t.borrow()
                    .slots
                    .iter()
                    .flatten()
                    .find_map(|e| match e.state {
                        State::Registered(i) if e.id == self.id => Some(i),
                        _ => None,
                    })
            })
            .ok()
            .flatten()
    }
}

impl Drop for RingId {
    fn drop(&mut self) {
        if let Some(k) = self.place {
            LIVE[k as usize].store(0, Ordering::Release);
        }
        count_drop();
        let _ = TABLE.try_with(|t| {
            if let Ok(mut t) = t.try_borrow_mut() {
                t.forget(self.id, self.fd);
            }
        });
    }
}

#[derive(Clone, Copy)]
enum State {
    /// Entered this many times by fd.
    Counting(u32),
    /// Entered through this index.
    Registered(u32),
    /// The kernel refused to register it for this thread (its table is
    /// full): entered by fd.
    Refused,
}

#[derive(Clone, Copy)]
struct Entry {
    id: u64,
    /// The ring's place in [`LIVE`].
    place: u16,
    state: State,
}

impl Entry {
    /// False once the ring was dropped.
    fn alive(&self) -> bool {
        LIVE[self.place as usize].load(Ordering::Acquire) == self.id
    }
}

struct Table {
    epoch: u64,
    slots: [Option<Entry>; PER_THREAD],
}

thread_local! {
    static TABLE: RefCell<Table> = const {
        RefCell::new(Table { epoch: 0, slots: [const { None }; PER_THREAD] })
    };
}

impl Table {
    /// The index to enter `ring` through, counting a plain enter (and
    /// registering the ring once it has been entered often enough).
    #[inline]
    fn index(&mut self, ring: &RingId) -> Option<u32> {
        let epoch = EPOCH.load(Ordering::Acquire);
        if epoch != self.epoch {
            self.sweep(epoch, ring.fd);
        }
        let mut free = None;
        for (k, slot) in self.slots.iter_mut().enumerate() {
            match slot {
                Some(e) if e.id == ring.id => {
                    return match e.state {
                        State::Registered(i) => Some(i),
                        State::Refused => None,
                        State::Counting(n) if n + 1 < REGISTER_AFTER => {
                            e.state = State::Counting(n + 1);
                            None
                        }
                        State::Counting(_) => self.register(k, ring),
                    };
                }
                None if free.is_none() => free = Some(k),
                _ => {}
            }
        }
        if let (Some(k), Some(place)) = (free, ring.place) {
            if !UNSUPPORTED.load(Ordering::Relaxed) {
                self.slots[k] = Some(Entry {
                    id: ring.id,
                    place,
                    state: State::Counting(1),
                });
            }
        }
        None
    }

    /// Forgets the registrations of dropped rings (unregistering them; `fd`
    /// names any open ring, which the kernel needs for the call), or every
    /// registration after a fork (the child's task has none).
    #[cold]
    fn sweep(&mut self, epoch: u64, fd: RawFd) {
        let forked = epoch >> 32 != self.epoch >> 32;
        self.epoch = epoch;
        for slot in &mut self.slots {
            if forked {
                *slot = None;
                continue;
            }
            if let Some(e) = slot {
                if !e.alive() {
                    if let State::Registered(i) = e.state {
                        unregister(fd, i);
                    }
                    *slot = None;
                }
            }
        }
    }

    /// Forgets ring `id` (unregistering it through `fd`, its own open fd).
    fn forget(&mut self, id: u64, fd: RawFd) {
        let epoch = EPOCH.load(Ordering::Acquire);
        if epoch >> 32 != self.epoch >> 32 {
            // Forked since the table was filled: none of it is this task's.
            self.sweep(epoch, fd);
            return;
        }
        for slot in &mut self.slots {
            if slot.as_ref().is_some_and(|e| e.id == id) {
                if let Some(State::Registered(i)) = slot.take().map(|e| e.state) {
                    unregister(fd, i);
                }
            }
        }
    }

    /// Registers the ring of slot `k`: its index. The kernel gives an index
    /// that was free there, so any other entry that claims it is stale (a fork
    /// the hook did not see) and would enter the wrong ring: it is dropped.
    #[cold]
    fn register(&mut self, k: usize, ring: &RingId) -> Option<u32> {
        let i = register(ring.fd);
        for (j, slot) in self.slots.iter_mut().enumerate() {
            if let Some(e) = slot {
                if j == k {
                    e.state = i.map_or(State::Refused, State::Registered);
                } else if i.is_some() && matches!(e.state, State::Registered(x) if Some(x) == i) {
                    e.state = State::Refused;
                }
            }
        }
        i
    }

    /// Stops entering ring `id` through its index (the kernel lost it).
    fn refuse(&mut self, id: u64) {
        for e in self.slots.iter_mut().flatten() {
            if e.id == id {
                e.state = State::Refused;
            }
        }
    }
}

/// Counts a dropped ring in the low half of [`EPOCH`], wrapping there: a
/// carry into the high half would read as a fork.
fn count_drop() {
    let _ = EPOCH.fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| {
        Some((e & !0xffff_ffff) | u64::from((e as u32).wrapping_add(1)))
    });
}

/// The fork hook: a child's threads forget their registrations (an atomic add
/// only: async-signal-safe).
fn forked() {
    EPOCH.fetch_add(FORK, Ordering::AcqRel);
}

/// `io_uring_enter` on `ring` (open on `fd`): submits `to_submit` entries and,
/// with `min_complete > 0`, waits until that many completions are posted or
/// `timeout` passes (ETIME then). The calling thread's registered index is
/// used when it has one.
pub(crate) fn enter(
    ring: &RingId,
    to_submit: u32,
    min_complete: u32,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let mut flags = if min_complete > 0 {
        IORING_ENTER_GETEVENTS
    } else {
        0
    };
    let ts: KernelTimespec;
    let arg;
    let (argp, argsz) = match timeout {
        Some(t) => {
            ts = KernelTimespec {
                tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: i64::from(t.subsec_nanos()),
            };
            arg = GetEventsArg {
                sigmask: 0,
                sigmask_sz: 0,
                min_wait_usec: 0,
                ts: &ts as *const KernelTimespec as u64,
            };
            flags |= IORING_ENTER_EXT_ARG;
            (
                &arg as *const GetEventsArg as *const libc::c_void,
                std::mem::size_of::<GetEventsArg>(),
            )
        }
        None => (std::ptr::null(), 0),
    };
    let index = TABLE
        .try_with(|t| t.try_borrow_mut().ok().and_then(|mut t| t.index(ring)))
        .ok()
        .flatten();
    if let Some(i) = index {
        match raw_enter(
            i as RawFd,
            to_submit,
            min_complete,
            flags | IORING_ENTER_REGISTERED_RING,
            argp,
            argsz,
        ) {
            // The kernel does not know the index (EINVAL: this task has no
            // table; EBADF: an empty slot). It should: a task the fork hook
            // missed, or a bug. Enter by fd from now on.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EBADF) | Some(libc::EINVAL)) => {
                let _ = TABLE.try_with(|t| {
                    if let Ok(mut t) = t.try_borrow_mut() {
                        t.refuse(ring.id);
                    }
                });
            }
            r => return r,
        }
    }
    raw_enter(ring.fd, to_submit, min_complete, flags, argp, argsz)
}

/// `struct __kernel_timespec`.
#[repr(C)]
struct KernelTimespec {
    tv_sec: i64,
    tv_nsec: i64,
}

/// `struct io_uring_getevents_arg`.
#[repr(C)]
struct GetEventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

fn raw_enter(
    fd: RawFd,
    to_submit: u32,
    min_complete: u32,
    flags: libc::c_uint,
    arg: *const libc::c_void,
    argsz: usize,
) -> io::Result<usize> {
    // SAFETY: `arg` is null (with `argsz` 0) or points at a live
    // `io_uring_getevents_arg` whose `ts` points at a live timespec, both on
    // the caller's stack for the duration of the call; the kernel reads them
    // only. An fd or index the kernel does not know is an error, not UB.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_enter,
            fd,
            to_submit,
            min_complete,
            flags,
            arg,
            argsz,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r as usize)
    }
}

/// `io_uring_register(fd, op, &update, 1)`: the number of updates done.
fn rsrc_register(fd: RawFd, op: libc::c_uint, up: &mut RsrcUpdate) -> io::Result<i64> {
    // SAFETY: `up` is a live, exclusive `io_uring_rsrc_update` (the kernel
    // reads it and, for a registration, writes the index back); nr_args is 1.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            fd,
            op,
            up as *mut RsrcUpdate,
            1u32,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Registers the ring open on `fd` for the calling thread: its index.
#[cold]
fn register(fd: RawFd) -> Option<u32> {
    let mut up = RsrcUpdate {
        offset: u32::MAX,
        resv: 0,
        data: fd as u64,
    };
    match rsrc_register(fd, IORING_REGISTER_RING_FDS, &mut up) {
        Ok(1) => Some(up.offset),
        Ok(_) => None,
        Err(e) => {
            // EINVAL: a kernel without the feature (before 5.18).
            if e.raw_os_error() == Some(libc::EINVAL) {
                UNSUPPORTED.store(true, Ordering::Relaxed);
            }
            None
        }
    }
}

/// Forgets the calling thread's registration `index` (`fd`: any open ring).
#[cold]
fn unregister(fd: RawFd, index: u32) {
    let mut up = RsrcUpdate {
        offset: index,
        resv: 0,
        data: 0,
    };
    let _ = rsrc_register(fd, IORING_UNREGISTER_RING_FDS, &mut up);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use io_uring::{opcode, IoUring};
    use std::os::fd::AsRawFd;
    use std::sync::{mpsc, Arc};

    /// A ring and its id, in the order they must drop.
    struct Named {
        id: RingId,
        ring: IoUring,
    }

    /// False (after saying so) where io_uring is refused here (a seccomp
    /// profile, `kernel.io_uring_disabled`): nothing to test then.
    pub(crate) fn uring_allowed() -> bool {
        match IoUring::new(4) {
            Ok(_) => true,
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOSYS)) => {
                eprintln!("skipped: io_uring is refused here ({e})");
                false
            }
            Err(e) => panic!("io_uring_setup: {e}"),
        }
    }

    fn named() -> Named {
        let ring = IoUring::new(4).expect("io_uring_setup");
        Named {
            id: RingId::new(ring.as_raw_fd()),
            ring,
        }
    }

    #[test]
    fn a_thread_registers_a_ring_once_it_has_entered_it_often() {
        if !uring_allowed() {
            return;
        }
        let n = named();
        for k in 1..REGISTER_AFTER {
            enter(&n.id, 0, 0, None).expect("enter by fd");
            assert_eq!(n.id.registered_here(), None, "registered after {k} enters");
        }
        enter(&n.id, 0, 0, None).expect("the enter that registers");
        let i = n.id.registered_here();
        assert!(i.is_some(), "not registered after {REGISTER_AFTER} enters");
        // An entry submitted and waited for through the index completes.
        let nop = opcode::Nop::new().build().user_data(42);
        // SAFETY: a NOP names no memory.
        unsafe { n.ring.submission_shared().push(&nop) }.expect("queue space");
        assert_eq!(enter(&n.id, 1, 1, None).expect("enter by index"), 1);
        // SAFETY: this thread is the only one touching the ring.
        let cqes: Vec<u64> = unsafe { n.ring.completion_shared() }
            .map(|c| c.user_data())
            .collect();
        assert_eq!(cqes, [42]);
        // A timed wait with nothing to complete ends with ETIME.
        let e = enter(&n.id, 0, 1, Some(Duration::from_millis(1))).expect_err("no completion");
        assert_eq!(e.raw_os_error(), Some(libc::ETIME));
        std::thread::scope(|s| {
            s.spawn(|| assert_eq!(n.id.registered_here(), None, "another thread's table"));
        });
        drop(n);
        // Dropping the ring here forgot this thread's registration: a new ring
        // registers again (the kernel's table has room).
        let m = named();
        for _ in 0..REGISTER_AFTER {
            enter(&m.id, 0, 0, None).expect("enter");
        }
        assert!(m.id.registered_here().is_some());
    }

    /// Rings dropped by one thread are unregistered by another that had them
    /// registered, at its next enter: without that its table (8) and then the
    /// kernel's (16) would fill, and the later rings would not be registered.
    #[test]
    fn rings_dropped_elsewhere_are_unregistered_by_each_thread() {
        if !uring_allowed() {
            return;
        }
        let (to_b, rings) = mpsc::channel::<Arc<Named>>();
        let (done, results) = mpsc::channel::<bool>();
        let b = std::thread::spawn(move || {
            for r in rings {
                for _ in 0..REGISTER_AFTER {
                    enter(&r.id, 0, 0, None).expect("enter");
                }
                let registered = r.id.registered_here().is_some();
                drop(r);
                done.send(registered).expect("main waits");
            }
        });
        for round in 0..40 {
            let n = Arc::new(named());
            to_b.send(Arc::clone(&n)).expect("b runs");
            let registered = results.recv().expect("b answers");
            assert!(registered, "round {round}: the ring was not registered");
            // The last reference: the ring is dropped here, not in b.
            assert_eq!(Arc::strong_count(&n), 1);
            drop(n);
        }
        drop(to_b);
        b.join().expect("b");
    }

    /// An entry left from a fork the hook did not see claims an index the
    /// kernel then gives to another ring: registering that ring drops the
    /// stale claim, so no enter goes to the wrong ring.
    #[test]
    fn a_stale_entry_loses_the_index_the_kernel_gives_to_another_ring() {
        if !uring_allowed() {
            return;
        }
        std::thread::spawn(|| {
            // A live ring whose fd this test never enters.
            let stale = named();
            TABLE.with(|t| {
                let mut t = t.borrow_mut();
                t.epoch = EPOCH.load(Ordering::Acquire);
                t.slots[0] = Some(Entry {
                    id: stale.id.id,
                    place: stale.id.place.expect("a place"),
                    state: State::Registered(0),
                });
            });
            assert_eq!(stale.id.registered_here(), Some(0));
            let n = named();
            for _ in 0..REGISTER_AFTER {
                enter(&n.id, 0, 0, None).expect("enter");
            }
            assert_eq!(
                n.id.registered_here(),
                Some(0),
                "a new thread's first index"
            );
            assert_eq!(stale.id.registered_here(), None, "the stale claim survived");
        })
        .join()
        .expect("the test thread");
    }

    /// Dropped rings are counted in the low half of the epoch; when that
    /// count wraps, the high half (forks) stays as it was.
    #[test]
    fn a_drop_count_that_wraps_is_not_taken_for_a_fork() {
        if !uring_allowed() {
            return;
        }
        // Other tests only see the epoch change: they sweep.
        let _ = EPOCH.fetch_update(Ordering::AcqRel, Ordering::Acquire, |e| {
            Some(e | 0xffff_ffff)
        });
        let forks = EPOCH.load(Ordering::Acquire) >> 32;
        drop(named());
        assert_eq!(EPOCH.load(Ordering::Acquire) >> 32, forks);
    }

    /// A forked child's task has no registrations: the fork hook makes its
    /// thread forget the parent's, so an enter by index never names another ring.
    #[test]
    fn a_forked_child_enters_by_fd_and_registers_its_own() {
        if !uring_allowed() {
            return;
        }
        let n = named();
        for _ in 0..REGISTER_AFTER {
            enter(&n.id, 0, 0, None).expect("enter");
        }
        assert!(n.id.registered_here().is_some());
        // SAFETY: the child only makes system calls and small allocations
        // (glibc's malloc is fork-safe), then leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork: {}", io::Error::last_os_error());
        if pid == 0 {
            // The child registers a ring of its own first: it gets the index
            // the parent's thread had for `n`.
            let m = named();
            let mut ok = true;
            for _ in 0..REGISTER_AFTER {
                ok &= enter(&m.id, 0, 0, None).is_ok();
            }
            ok &= m.id.registered_here().is_some();
            // An entry pushed into `n` is submitted by an enter of `n` (not
            // of `m` through a stale index).
            let nop = opcode::Nop::new().build().user_data(7);
            // SAFETY: a NOP names no memory; the child's only thread.
            ok &= unsafe { n.ring.submission_shared().push(&nop) }.is_ok();
            ok &= enter(&n.id, 1, 1, None).is_ok_and(|k| k == 1);
            // SAFETY: as above.
            ok &= unsafe { n.ring.completion_shared() }
                .map(|c| c.user_data())
                .eq([7]);
            // SAFETY: `_exit` ends the child without running the parent's
            // destructors or atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child; `status` is a live int.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        assert_eq!(r, pid);
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
            "child status {status:#x}"
        );
    }
}
