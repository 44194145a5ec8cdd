//! The io_uring backend: the submission and completion queues are shared under the
//! engine mutex; a thread that waits becomes the *reaper* and blocks in
//! `io_uring_enter` itself, so a synchronous wait costs no thread hand-off.
//!
//! A context may use several rings (one per CPU, at most four, by default).
//! The kernel runs a ring's inline work (a cached read's copy) under that
//! ring's lock, so with one ring two threads that submit at the same time copy
//! one after the other, the second spinning on the lock. A request goes into
//! the ring its thread used last, unless another thread took it since, else a
//! ring no other thread is entering (see [`Ring::pick`]), and a thread enters
//! only the rings it pushed into: a second ring is created only when two
//! threads submit at once, so a program that submits from one thread has one
//! ring. With more than one, a waiter polls the rings'
//! fds instead of entering one ring to wait.
//!
//! Ordering on `O_APPEND` and non-seekable fds is kept by per-fd serialisation in
//! the core (one ordered request in the kernel per fd at a time), not by
//! `IOSQE_IO_LINK`, because links cannot span separate submissions (nor rings).

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use io_uring::{opcode, types};

use super::files::table_size;
pub(crate) use super::shard::MAX_RINGS;
use super::shard::{poll_rings, Shard, INTERNAL};
pub(super) use super::sqe::punted;
use super::sqe::{sqe, sqe_again};
use super::table::{user_data, Core};

/// Entries that go in with the eventfd signalling, after a quiet one whose
/// request went on in the kernel (see `Ring::quiet`).
pub(crate) const QUIET_SKIP: u32 = 64;

/// The rings a context may use unless told otherwise: one per CPU, at most 4.
pub(crate) fn default_rings() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

thread_local! {
    /// The context (its `Ring`'s address) this thread last pushed entries
    /// into, and a bit per ring it pushed into and has not entered since
    /// (while a context has one ring, the bit is noted when the thread takes
    /// that ring and not cleared: `submit_mine` enters the ring then).
    static MINE: Cell<(usize, u8)> = const { Cell::new((0, 0)) };
    /// Test hook: the ring + 1 this thread's requests go into (0: as usual).
    static FORCED: Cell<u8> = const { Cell::new(0) };
}

/// A number that names the calling thread while it lives (the address of a
/// thread-local).
#[inline]
fn thread_token() -> usize {
    MINE.with(|c| c as *const Cell<(usize, u8)> as usize)
}

/// Creates a new ring's file table and installs `files` (slot, fd) in it.
fn install_all(s: &Shard, files: &[(u32, RawFd)]) -> io::Result<()> {
    let sub = s.ring.submitter();
    sub.register_files_sparse(table_size())?;
    for &(slot, fd) in files {
        sub.register_files_update(slot, &[fd])?;
    }
    Ok(())
}

/// What a ring created later is set up with.
#[derive(Default)]
struct Setup {
    efd: Option<RawFd>,
    affinity: Option<libc::cpu_set_t>,
    max_workers: Option<(u32, u32)>,
    /// Rings (a bit each) whose file table exists, and the fds registered in
    /// them by slot (see `files.rs`): installed in rings created later.
    tables: u8,
    files: Vec<(u32, RawFd)>,
}

pub(crate) struct Ring {
    main: Shard,
    /// Rings 1.., created when two threads submit at once.
    extra: Box<[OnceLock<Shard>]>,
    /// Rings this context may use (1..=MAX_RINGS).
    count: u32,
    entries: u32,
    /// Requests the kernel may hold at once, over all rings (each ring's
    /// size); the rest wait in the core's queue.
    pub capacity: u32,
    ext_arg: bool,
    /// More than one ring exists: waits poll the rings' fds.
    many: AtomicBool,
    /// The no-op that tells a reaper asleep in the first ring about a new
    /// ring (see `create`) may wait in the first ring's queue: the next
    /// thread that enters its own rings enters the first one too. (It
    /// belongs to no thread: the creating thread's mask may go to another
    /// context before it enters.)
    main_nop: AtomicBool,
    /// A ring could not be created: no more are tried.
    refused: AtomicBool,
    /// An eventfd is registered (see `quiet`).
    evented: AtomicBool,
    setup: Mutex<Setup>,
}

impl Ring {
    /// `io_uring_setup` of the first ring; up to `rings` in all, the others
    /// created when threads submit at the same time.
    pub(crate) fn new(entries: u32, rings: usize) -> io::Result<Ring> {
        let main = Shard::new(entries, 0)?;
        let ext_arg = main.ring.params().is_feature_ext_arg();
        let capacity = main.ring.params().sq_entries();
        Ok(Ring {
            main,
            extra: (1..rings.clamp(1, MAX_RINGS))
                .map(|_| OnceLock::new())
                .collect(),
            count: rings.clamp(1, MAX_RINGS) as u32,
            entries,
            capacity,
            ext_arg,
            many: AtomicBool::new(false),
            main_nop: AtomicBool::new(false),
            refused: AtomicBool::new(false),
            evented: AtomicBool::new(false),
            setup: Mutex::new(Setup::default()),
        })
    }

    /// Every ring created so far.
    fn all(&self) -> impl Iterator<Item = &Shard> {
        std::iter::once(&self.main).chain(self.extra.iter().filter_map(OnceLock::get))
    }

    /// The ring a request pushed now goes into (under the core lock), marked as
    /// this thread's to enter: the ring this thread pushed into last, unless
    /// another thread did since (so the requests of one call, or of one
    /// runtime turn, enter together, and two threads submitting at once keep
    /// a ring each), else the first ring no other thread's entries wait in (a
    /// thread entering it, or about to), else a new ring, else the first.
    #[inline]
    fn pick(&self) -> &Shard {
        if self.count == 1 {
            return &self.main;
        }
        // One ring so far, free or holding this thread's entries: the common
        // case. (Its bit is noted when the thread takes it: once another ring
        // exists, `submit_mine` enters only the rings this thread pushed
        // into, or every ring if this thread's bits went to another context
        // since.)
        let me = thread_token();
        if !self.many.load(Ordering::Acquire) && FORCED.get() == 0 {
            let owner = self.main.owner.load(Ordering::Relaxed);
            if owner == me {
                return &self.main;
            }
            if !self.main.busy() {
                self.main.owner.store(me, Ordering::Relaxed);
                self.mark(0);
                return &self.main;
            }
        }
        self.pick_among(me)
    }

    #[cold]
    fn pick_among(&self, me: usize) -> &Shard {
        let forced = FORCED.get();
        let s = if forced > 0 {
            self.ring_at(forced as usize - 1)
        } else if let Some(s) = self.all().find(|s| s.owner.load(Ordering::Relaxed) == me) {
            // Entries of this thread wait in it, or it is the ring this
            // thread used last and no other took it since.
            s
        } else if let Some(s) = self.all().find(|s| !s.busy()) {
            s
        } else {
            match self.extra.iter().position(|s| s.get().is_none()) {
                Some(k) => self.ring_at(k + 1),
                None => &self.main,
            }
        };
        s.owner.store(me, Ordering::Relaxed);
        self.mark(s.index);
        s
    }

    /// Notes that this thread pushed into ring `k` and has to enter it. (Bits
    /// of another context are dropped: its next `submit_mine` then enters
    /// every ring with entries waiting.)
    #[inline]
    fn mark(&self, k: u8) {
        let me = self as *const Ring as usize;
        let (ctx, mask) = MINE.get();
        let bit = 1u8 << k;
        if ctx != me || mask & bit == 0 {
            MINE.with(|m| m.set((me, if ctx == me { mask | bit } else { bit })));
        }
    }

    /// Ring `k`, created if need be (the first ring if it cannot be).
    fn ring_at(&self, k: usize) -> &Shard {
        match k {
            0 => &self.main,
            k if k < self.count as usize => match self.extra[k - 1].get() {
                Some(s) => s,
                None => self.create(k).unwrap_or(&self.main),
            },
            _ => &self.main,
        }
    }

    /// Test hook: the calling thread's requests go into ring `k` (created if
    /// need be), or are placed as usual with `None`.
    pub(crate) fn force(&self, k: Option<usize>) {
        FORCED.set(k.map_or(0, |k| k.min(MAX_RINGS - 1) as u8 + 1));
    }

    /// Creates ring `k` (k ≥ 1), set up as the first one is; `None` if the
    /// kernel refuses (no more rings are tried then).
    #[cold]
    fn create(&self, k: usize) -> Option<&Shard> {
        if self.refused.load(Ordering::Relaxed) {
            return None;
        }
        let mut setup = self.setup();
        if let Some(s) = self.extra[k - 1].get() {
            return Some(s);
        }
        let made = Shard::new(self.entries, k as u8).ok().filter(|s| {
            let sub = s.ring.submitter();
            s.ring.params().sq_entries() == self.capacity
                && setup
                    .efd
                    .map_or(true, |fd| sub.register_eventfd(fd).is_ok())
                && setup
                    .affinity
                    .as_ref()
                    .map_or(true, |a| sub.register_iowq_aff(a).is_ok())
                && setup.max_workers.map_or(true, |(b, u)| {
                    sub.register_iowq_max_workers(&mut [b, u]).is_ok()
                })
                && (setup.tables == 0 || install_all(s, &setup.files).is_ok())
        });
        let Some(made) = made else {
            self.refused.store(true, Ordering::Relaxed);
            return None;
        };
        if setup.tables != 0 {
            setup.tables |= 1 << k;
        }
        let _ = self.extra[k - 1].set(made);
        self.many.store(true, Ordering::Release);
        // A reaper sleeping in the first ring's `io_uring_enter` would not see
        // this ring's completions: a no-op there wakes it, and it polls every
        // ring from then on. (Entered with this thread's own entries.)
        let nop = opcode::Nop::new().build().user_data(INTERNAL);
        // SAFETY: `create` runs under the core lock (from `pick`); a no-op
        // refers to no user memory.
        if unsafe { self.main.push(&nop) } {
            self.mark(0);
            self.main_nop.store(true, Ordering::Release);
        }
        self.extra[k - 1].get()
    }

    /// Moves ready requests into a submission queue (up to capacity) and enters
    /// it. Call with the core lock held.
    pub(crate) fn issue(&self, core: &mut Core) -> io::Result<()> {
        if self.push_ready(core) > 0 {
            self.submit_mine()?;
        }
        Ok(())
    }

    /// Moves ready requests into a submission queue (up to capacity) without
    /// entering the kernel; returns how many. Call with the core lock held, then
    /// [`submit_mine`](Ring::submit_mine) after releasing it, so the inline part
    /// of the I/O (a cached read's copy) does not run under the lock.
    pub(crate) fn push_ready(&self, core: &mut Core) -> usize {
        let ring = self.pick();
        let mut pushed = 0;
        {
            // SAFETY: the submission queue is only touched under the core lock,
            // which the caller holds.
            let mut sq = unsafe { ring.ring.submission_shared() };
            while core.inflight < self.capacity && !sq.is_full() {
                let Some(idx) = core.pop_ready() else { break };
                let s = &core.slots[idx as usize];
                let entry = sqe(s).user_data(user_data(idx, s.gen));
                // SAFETY: the buffer (ptr, len) is owned by the runtime until this
                // request completes: its handle holds it or the slot's orphan does,
                // and neither is released before the completion is reaped.
                unsafe {
                    // Cannot fail: checked `is_full` above.
                    let _ = sq.push(&entry);
                }
                pushed += 1;
            }
        }
        ring.count_pushed(pushed as u64);
        pushed
    }

    /// The submission fast path, when the ring has room for every request of a
    /// submission and nothing waits in the priority queue (so order cannot
    /// matter): request `(idx, gen)`, just allocated, goes straight into a
    /// submission queue unless its fd's order gate holds it back. True if it did.
    /// Call with the core lock held, then [`submit_mine`](Ring::submit_mine)
    /// after releasing it.
    #[inline]
    pub(crate) fn push_one(&self, core: &mut Core, idx: u32, gen: u32) -> bool {
        let ring = self.pick();
        {
            // SAFETY: the submission queue is only touched under the core lock,
            // which the caller holds.
            let mut sq = unsafe { ring.ring.submission_shared() };
            if sq.is_full() || !core.issue_now(idx) {
                return false;
            }
            let entry = sqe(&core.slots[idx as usize]).user_data(user_data(idx, gen));
            // SAFETY: as in `push_ready`: the buffer is owned by the runtime until
            // this request's completion is reaped.
            unsafe {
                // Cannot fail: checked `is_full` above.
                let _ = sq.push(&entry);
            }
        }
        ring.count_pushed(1);
        true
    }

    /// Enters the rings this thread pushed entries into since it last did (or
    /// every ring with entries waiting, if that is not known): the submitting
    /// call's own entries reach the kernel, and the thread does not wait for
    /// another thread's inline work in another ring. Lock not needed.
    #[inline]
    pub(crate) fn submit_mine(&self) -> io::Result<()> {
        // One ring so far: every entry of this thread is in it (a thread that
        // created another saw `many` set).
        if self.count == 1 || !self.many.load(Ordering::Acquire) {
            return self.main.submit();
        }
        self.submit_mine_many()
    }

    #[cold]
    #[inline(never)]
    fn submit_mine_many(&self) -> io::Result<()> {
        let me = self as *const Ring as usize;
        let (ctx, mut mask) = MINE.get();
        if self.main_nop.load(Ordering::Relaxed) && self.main_nop.swap(false, Ordering::AcqRel) {
            mask |= 1;
        }
        if ctx != me {
            // This thread pushed into another context since: where its
            // entries here wait is not known.
            return self.submit();
        }
        if mask == 0 {
            // Every entry this thread pushed is in the kernel (another
            // thread's entries are that thread's to enter: entering its ring
            // would wait for the kernel's copy of its reads, under the ring's
            // lock, and find nothing to submit).
            return Ok(());
        }
        MINE.set((me, 0));
        let mut res = Ok(());
        let mut failed = 0u8;
        for s in self.all().filter(|s| mask & (1 << s.index) != 0) {
            if let Err(e) = s.submit() {
                failed |= 1 << s.index;
                res = Err(e);
            }
        }
        if failed != 0 {
            // Entered again by the caller's retry.
            MINE.set((me, failed));
        }
        res
    }

    /// Enters every ring holding entries the kernel may not have taken yet (any
    /// thread, lock not needed: the kernel takes only entries published under
    /// the lock). When it returns Ok, every entry pushed before the call is in
    /// the kernel.
    ///
    /// EBUSY (the completion queue overflowed) leaves entries in the SQ ring:
    /// the caller reaps and submits again, since a request must reach the
    /// kernel before the call that submitted it returns (see `BorrowFd`).
    pub(crate) fn submit(&self) -> io::Result<()> {
        let mut res = self.main.submit();
        if self.many.load(Ordering::Acquire) {
            for s in self.extra.iter().filter_map(OnceLock::get) {
                if let Err(e) = s.submit() {
                    res = Err(e);
                }
            }
        }
        res
    }

    /// True if entries wait in a submission queue (not yet taken by the
    /// kernel). Call with the core lock held.
    pub(crate) fn sq_pending(&self) -> bool {
        self.all().any(Shard::sq_pending)
    }

    /// Pushes request `(idx, gen)` again as it now stands (a probe read retried at
    /// offset -1). Call with the core lock held; false if the queue is full.
    pub(crate) fn push_again(&self, core: &mut Core, idx: u32, gen: u32) -> bool {
        let entry = sqe_again(&mut core.slots[idx as usize]).user_data(user_data(idx, gen));
        // SAFETY: under the core lock; the buffer is owned by the runtime until
        // the request completes, as in `push_ready`.
        unsafe { self.pick().push(&entry) }
    }

    /// The result of request `ud` if its completion waits in a completion
    /// queue, consuming nothing (see [`Shard::peek`]). With the core lock held.
    pub(crate) fn peek(&self, ud: u64) -> Option<i32> {
        self.main.peek(ud).or_else(|| {
            self.extra
                .iter()
                .filter_map(OnceLock::get)
                .find_map(|s| s.peek(ud))
        })
    }

    /// Drains the completion queues into the core. Call with the core lock held and
    /// only when no other thread is the reaper (or as the reaper).
    #[inline]
    pub(crate) fn reap(&self, core: &mut Core) -> usize {
        let mut n = 0;
        let mut more = self.main.reap(core, &mut n);
        if self.many.load(Ordering::Acquire) {
            for s in self.extra.iter().filter_map(OnceLock::get) {
                more |= s.reap(core, &mut n);
            }
        }
        if more {
            let _ = self.submit();
        }
        n
    }

    /// Blocks until at least one completion is posted, or `timeout` passes.
    /// Call WITHOUT the core lock, as the reaper. EINTR (a signal handler ran)
    /// is returned: the caller decides (POSIX waits report it, internal waits
    /// go on). With `sigmask`, the thread's signal mask while it sleeps (see
    /// `sys::poll`).
    pub(crate) fn wait(
        &self,
        timeout: Option<Duration>,
        sigmask: Option<&libc::sigset_t>,
    ) -> io::Result<()> {
        if !self.many.load(Ordering::Acquire) {
            return self.main.wait(timeout, self.ext_arg, sigmask);
        }
        self.submit()?;
        poll_rings(self.all(), timeout, sigmask)
    }

    /// Synchronous cancel of one issued request (`IORING_REGISTER_SYNC_CANCEL`),
    /// in each ring until one holds it. A request that is running (a kernel
    /// worker is copying, or a poll wake-up is being handled) is waited for at
    /// most a few milliseconds: ETIME then means it could not be cancelled.
    /// ENOENT: no ring holds it. Call WITHOUT the core lock.
    pub(crate) fn cancel_sync(&self, ud: u64) -> io::Result<()> {
        for s in self.all() {
            let r = s.ring.submitter().register_sync_cancel(
                Some(types::Timespec::new().nsec(20_000_000)),
                types::CancelBuilder::user_data(ud),
            );
            match r {
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => continue,
                // EINVAL: kernels before 6.0; the caller falls back to an
                // async cancel.
                other => return other,
            }
        }
        Err(io::Error::from_raw_os_error(libc::ENOENT))
    }

    /// Posts a no-op completion so that a reaper sleeping in `io_uring_enter`
    /// (or polling the rings) wakes up and looks at the request table again.
    /// Call with the core lock held.
    pub(crate) fn nudge(&self) {
        let e = opcode::Nop::new().build().user_data(INTERNAL);
        // SAFETY: under the core lock; a no-op refers to no user memory.
        if unsafe { self.main.push(&e) } {
            let _ = self.main.submit();
        }
    }

    /// Queues an asynchronous cancel of `ud` in every ring without waiting for
    /// it, entering each ring: what waited in its queue (the request itself,
    /// if not in the kernel yet) is in the kernel when this returns, so the
    /// caller may let go of the request's fd. Call with the core lock held.
    pub(crate) fn cancel_async(&self, ud: u64) {
        let e = opcode::AsyncCancel::new(ud).build().user_data(INTERNAL);
        for s in self.all() {
            // SAFETY: under the core lock; a cancel entry refers to no user memory.
            let mut pushed = unsafe { s.push(&e) };
            if !pushed {
                // A full queue: its entries go in first, making room.
                let _ = s.submit();
                // SAFETY: as above.
                pushed = unsafe { s.push(&e) };
            }
            if pushed {
                let _ = s.submit();
            }
        }
    }

    /// Cancels every issued request and waits for their completions to be posted
    /// (bounded). Call WITHOUT the core lock.
    pub(crate) fn cancel_everything(&self, timeout: Duration) {
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        for s in self.all() {
            let _ = s
                .ring
                .submitter()
                .register_sync_cancel(Some(ts), types::CancelBuilder::any());
        }
    }

    /// The setup of later rings, locked.
    fn setup(&self) -> MutexGuard<'_, Setup> {
        self.setup.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers `fd` to be signalled on every completion, of every ring (also
    /// those created later: `fd` must stay open as long as the context).
    pub(crate) fn register_eventfd(&self, fd: &OwnedFd) -> io::Result<()> {
        let mut setup = self.setup();
        for s in self.all() {
            s.ring.submitter().register_eventfd(fd.as_raw_fd())?;
        }
        setup.efd = Some(fd.as_raw_fd());
        self.evented.store(true, Ordering::Relaxed);
        Ok(())
    }

    /// Before an entry whose caller reaps right after it (under the core
    /// lock): the kernel does not signal the eventfd for completions until
    /// the next reap ([`unquiet`](Ring::unquiet), at the start of
    /// `Inner::poll_completions`). A read that completes inline while its
    /// submitter enters then costs no eventfd signal, which is the kernel's
    /// wake of the tokio reactor or of the completion thread: about 60 ns a
    /// request, once the eventfd is registered.
    ///
    /// Only while every request in flight waits in a submission queue (none
    /// is in the kernel, where it could complete on a worker meanwhile), and
    /// not for [`QUIET_SKIP`] entries after a quiet one whose request was still
    /// in the kernel at its reap (a read not in the page cache): the reap then
    /// signals the eventfd itself, since a completion posted as the quiet ended
    /// may have been neither signalled nor reaped.
    /// True if this call made it quiet.
    pub(crate) fn quiet(&self, core: &mut Core) -> bool {
        // (`ext_arg`: 5.11; the flag needs 5.8, where the completion ring
        // got its flags word: before, that offset is the submission head.)
        if core.efd_quiet || !self.ext_arg || !self.evented.load(Ordering::Relaxed) {
            return false;
        }
        if core.quiet_skip > 0 {
            core.quiet_skip -= 1;
            return false;
        }
        let queued: usize = self.all().map(Shard::sq_len).sum();
        if core.inflight as usize > queued {
            return false;
        }
        self.all().for_each(|s| s.set_eventfd_quiet(true));
        core.efd_quiet = true;
        true
    }

    /// Ends [`quiet`](Ring::quiet), before a reap (under the core lock); true
    /// if it was quiet.
    #[inline]
    pub(crate) fn unquiet(&self, core: &mut Core) -> bool {
        if !core.efd_quiet {
            return false;
        }
        self.all().for_each(|s| s.set_eventfd_quiet(false));
        core.efd_quiet = false;
        true
    }

    /// `IORING_REGISTER_IOWQ_AFF`: the CPUs the rings' kernel workers (io-wq)
    /// may run on.
    pub(crate) fn set_worker_affinity(&self, set: &libc::cpu_set_t) -> io::Result<()> {
        let mut setup = self.setup();
        for s in self.all() {
            s.ring.submitter().register_iowq_aff(set)?;
        }
        setup.affinity = Some(*set);
        Ok(())
    }

    /// `IORING_REGISTER_IOWQ_MAX_WORKERS`: at most `bounded` kernel workers for
    /// bounded work (regular files, block devices) and `unbounded` for unbounded
    /// work (sockets, pipes) per NUMA node (0 leaves a limit unchanged).
    pub(crate) fn set_max_workers(&self, bounded: u32, unbounded: u32) -> io::Result<()> {
        let mut setup = self.setup();
        for s in self.all() {
            s.ring
                .submitter()
                .register_iowq_max_workers(&mut [bounded, unbounded])?;
        }
        setup.max_workers = Some((bounded, unbounded));
        Ok(())
    }

    /// Installs `fd` at `slot` of every ring's file table, creating the tables
    /// first, and in rings created later. With the core lock held; on an
    /// error no ring holds it.
    pub(crate) fn install_file(&self, slot: u32, fd: RawFd) -> io::Result<()> {
        let mut setup = self.setup();
        for s in self.all() {
            if setup.tables & (1 << s.index) == 0 {
                s.ring.submitter().register_files_sparse(table_size())?;
                setup.tables |= 1 << s.index;
            }
        }
        for (n, s) in self.all().enumerate() {
            if let Err(e) = s.ring.submitter().register_files_update(slot, &[fd]) {
                for s in self.all().take(n) {
                    let _ = s.ring.submitter().register_files_update(slot, &[-1]);
                }
                return Err(e);
            }
        }
        setup.files.push((slot, fd));
        Ok(())
    }

    /// Empties `slot` of every ring's file table. With the core lock held,
    /// after the entries that may name it were submitted.
    pub(crate) fn remove_file(&self, slot: u32) -> io::Result<()> {
        let mut setup = self.setup();
        setup.files.retain(|&(s, _)| s != slot);
        let mut res = Ok(());
        for s in self.all() {
            if let Err(e) = s.ring.submitter().register_files_update(slot, &[-1]) {
                res = Err(e);
            }
        }
        res
    }

    /// Rings created so far.
    pub(crate) fn rings(&self) -> usize {
        self.all().count()
    }
}

#[cfg(test)]
#[path = "uring_tests.rs"]
mod tests;
