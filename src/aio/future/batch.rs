//! The flush at the end of a tokio runtime turn: the submissions of one turn
//! enter the ring together (see `should_defer`).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::{Wake, Waker};

use super::super::engine::{Engine, Inner};
use super::super::table::State;
use super::super::tokio_reap;

/// Tokens of scheduled flushes (0 means none).
static TOKENS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The context and token of the last flush this thread scheduled.
    static MINE: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
    /// A context for which batching did not pay, how many more
    /// submissions enter at once without asking again, and the next such
    /// count (doubled each time a wait for the turn's end was for nothing).
    static SOLO: Cell<(usize, u32, u32)> = const { Cell::new((0, 0, 0)) };
    /// Submissions this thread left in the queue since its last flush.
    static BATCH: Cell<u32> = const { Cell::new(0) };
    /// A number that names this thread (0: none taken yet).
    static THREAD: Cell<u64> = const { Cell::new(0) };
}

/// Thread numbers, never reused: unlike thread-local addresses, and unlike
/// kernel tids, which come back once `pid_max` wraps. A flush left behind
/// by a thread that exited, run on a later thread given the same tid, would
/// look like that thread's own and enter only its rings, none of the
/// entries it was scheduled for.
static THREADS: AtomicU64 = AtomicU64::new(1);

/// The number of the calling thread. (While the thread's locals are torn
/// down: a fresh number, which names no flush: one run then enters every
/// ring.)
fn this_thread() -> u64 {
    THREAD
        .try_with(|t| {
            if t.get() == 0 {
                t.set(THREADS.fetch_add(1, Ordering::Relaxed));
            }
            t.get()
        })
        .unwrap_or_else(|_| THREADS.fetch_add(1, Ordering::Relaxed))
}

/// Submissions that enter at once after tokio said no other task may
/// submit (then it is asked again).
const SOLO_SKIP: u32 = 15;
/// The longest run of submissions that enter at once after waits for the
/// turn's end gathered nothing.
const SOLO_MAX: u32 = 1024;

/// Enters the ring of `inner` once, at the end of the turn (when woken), or
/// when the runtime drops it unwoken (shutting down).
///
/// It names its context weakly: the runtime may keep it long after the turn
/// (a `current_thread` runtime's turn-end task, when the `block_on` that
/// scheduled it returned first, runs at that runtime's next `block_on`), and
/// a strong name would keep a dropped context's rings and descriptors open
/// until then. A context gone has nothing left to enter: its last handle
/// cancelled what it had, and a future that waits here borrows a handle.
struct Flush {
    inner: Weak<Inner>,
    token: u64,
    /// The thread that scheduled it (see [`this_thread`]): the entries it
    /// enters are that thread's.
    by: u64,
    done: AtomicBool,
}

impl Flush {
    fn run(&self) {
        if !self.done.swap(true, Ordering::AcqRel) {
            let Some(inner) = self.inner.upgrade() else {
                return;
            };
            // Cleared before entering: an entry queued after this point
            // schedules a flush of its own. (Cleared already by another
            // thread's flush, or by an early one, `flush_early`: the ring
            // is entered all the same, the batch not counted.)
            let mine = inner
                .reactors
                .flush_token
                .compare_exchange(self.token, 0, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
            // Run elsewhere (a `current_thread` runtime driven or dropped
            // on another thread), it enters every ring: the entries waiting
            // are the scheduling thread's, in its rings.
            flush_now(&inner, this_thread() == self.by);
            let n = BATCH.replace(0);
            if mine {
                learn(&inner, n);
            }
        }
    }
}

/// After a flush of `n` queued submissions: one alone gained nothing (it
/// waited for the turn's end, e.g. beside idle tasks), so the next ones enter
/// at once for a while, longer each time; a batch makes waiting pay again.
fn learn(inner: &Arc<Inner>, n: u32) {
    let me = Arc::as_ptr(inner) as usize;
    if n >= 2 {
        SOLO.set((me, 0, 0));
        return;
    }
    let (ctx, _, next) = SOLO.get();
    let run = if ctx == me {
        next.saturating_mul(2).clamp(SOLO_SKIP + 1, SOLO_MAX)
    } else {
        SOLO_SKIP + 1
    };
    SOLO.set((me, run, run));
}

/// Counts a submission left in the queue for this thread's next flush.
#[inline]
pub(super) fn queued() {
    BATCH.with(|b| b.set(b.get().saturating_add(1)));
}

impl Wake for Flush {
    fn wake(self: Arc<Self>) {
        self.run();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.run();
    }
}

impl Drop for Flush {
    fn drop(&mut self) {
        self.run();
    }
}

/// Runs a flush when woken or dropped, if nothing ran it before: on a
/// `current_thread` runtime, a flush waits in the runtime's own task for the
/// turn's end, which does not come if the body of `block_on` returns first
/// (a `select!`, a timeout, more tasks ready than a turn runs): until that
/// runtime runs again, which may be never, the flush's entries would wait,
/// and this thread's next submissions to the context, which join a flush
/// still to come, with them. tokio drops its deferred wake-ups, this among
/// them, as that `block_on` returns (see `tokio_reap::at_turn_end`).
struct Backstop(Arc<Flush>);

impl Wake for Backstop {
    fn wake(self: Arc<Self>) {
        self.0.run();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.run();
    }
}

impl Drop for Backstop {
    fn drop(&mut self) {
        self.0.run();
    }
}

/// The token of a flush this thread scheduled for `inner` that has not
/// run yet (an entry queued now is entered by it), or 0.
#[inline]
fn pending(inner: &Arc<Inner>) -> u64 {
    let (ctx, token) = MINE.get();
    if ctx == Arc::as_ptr(inner) as usize
        && inner.reactors.flush_token.load(Ordering::Acquire) == token
    {
        token
    } else {
        0
    }
}

/// Whether a submission waits for the turn's end (see [`should_defer`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Defer {
    /// It enters at once.
    No,
    /// It joins the flush with this token, scheduled and still to come.
    Join(u64),
    /// It waits for a flush it schedules ([`schedule_flush`]).
    Start,
}

/// Enters the ring now if the flush with `token` has not run: a future
/// polled again before the turn's end (by another executor, a `select!`)
/// does not wait for it, and a turn that never ends (a runtime entered but
/// not driven) does not strand its request.
#[inline]
pub(super) fn flush_early(inner: &Arc<Inner>, token: u64) {
    let t = &inner.reactors.flush_token;
    // (A load first: the common case, the flush ran, takes no locked
    // instruction.)
    if t.load(Ordering::Acquire) == token
        && t.compare_exchange(token, 0, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    {
        // The future's entry is this thread's unless its task moved to
        // another thread since it submitted.
        let own = MINE.get() == (Arc::as_ptr(inner) as usize, token);
        flush_now(inner, own);
        learn(inner, BATCH.replace(0));
    }
}

/// True if a submission to `inner` should leave the ring unentered: a flush
/// is already coming, or other submissions may join it this turn.
///
/// The first submission of a thread to a context asks tokio: beside other
/// tasks it waits for the turn's end, in a lone task it enters at once. After
/// that, each run of submissions that entered at once (see [`learn`]) ends
/// with one that waits: other futures of the same task (a `join`, a
/// `FuturesUnordered`, `buffer_unordered`) or other tasks then join it, and
/// a batch makes every submission wait again. A lone read at a time pays
/// that wait once per run, and the runs double up to [`SOLO_MAX`].
///
/// A submission made right after its future yielded to the task's budget
/// (`after_yield`: see `coop::begin`) is the one that waits, whatever is
/// left of the run: that read waited for the runtime's driver already, and
/// a run that ends there costs no other read a wait. Under tokio's budget
/// a task yields at least every 515 requests done, so once the runs are
/// longer than that, a lone task's reads wait only where it yields (a
/// separate wait landed among a loop's slowest reads, about one in a
/// thousand, besides the yields).
#[inline]
pub(super) fn should_defer(inner: &Arc<Inner>, after_yield: bool) -> Defer {
    let token = pending(inner);
    if token != 0 {
        return Defer::Join(token);
    }
    let me = Arc::as_ptr(inner) as usize;
    let (ctx, skip, next) = SOLO.get();
    if ctx == me {
        if skip > 0 && !after_yield {
            SOLO.set((me, skip - 1, next));
            return Defer::No;
        }
        // A batch was the last thing learned (`next` 0), or this
        // submission is the one that tries: where a turn ends (in a task;
        // elsewhere asked, since a runtime may be merely entered, or the
        // thread a blocking one).
        if (next == 0 && tokio_reap::in_task()) || tokio_reap::turn_ends_here() {
            return Defer::Start;
        }
        if skip > 0 {
            // (After a yield where no turn ends: the run goes on.)
            SOLO.set((me, skip - 1, next));
            return Defer::No;
        }
    } else if tokio_reap::batching_pays() && tokio_reap::turn_ends_here() {
        return Defer::Start;
    }
    SOLO.set((me, SOLO_SKIP, next.max(SOLO_SKIP)));
    Defer::No
}

/// Makes sure the submission queue of `inner` is entered at the end of this
/// thread's runtime turn (one flush per turn and context). Returns the
/// token of that flush if it is still to come, or 0 if it ran already
/// (outside a runtime worker, the wake-up runs it at once).
#[cold]
pub(super) fn schedule_flush(inner: &Arc<Inner>) -> u64 {
    let token = pending(inner);
    if token != 0 {
        return token;
    }
    let token = TOKENS.fetch_add(1, Ordering::Relaxed);
    inner.reactors.flush_token.store(token, Ordering::Release);
    MINE.set((Arc::as_ptr(inner) as usize, token));
    let f = Arc::new(Flush {
        inner: Arc::downgrade(inner),
        token,
        by: this_thread(),
        done: AtomicBool::new(false),
    });
    tokio_reap::at_turn_end(&Waker::from(Arc::clone(&f)), || {
        Waker::from(Arc::new(Backstop(f)))
    });
    pending(inner)
}
/// Enters the rings (only this thread's if `own`: the entries waiting were
/// pushed by this thread), reaps what completed inline (waking those
/// tasks), and arms the wake-up source for what did not.
fn flush_now(inner: &Arc<Inner>, own: bool) {
    let Engine::Uring(r) = &inner.engine else {
        return;
    };
    let mut core = inner.lock();
    if r.sq_pending() {
        // Reaped right below.
        let _ = r.quiet(&mut core);
        inner.unlock_and_enter_rings(core, true, !own);
    } else {
        inner.release(core);
    }
    let mut core = inner.lock();
    inner.poll_completions(&mut core);
    let busy = core.inflight > 0;
    inner.release(core);
    if !busy {
        return;
    }
    // Arm first, then look again: a completion that landed in between is
    // reaped here, a later one wakes the reactor.
    let armed = inner.arm_wakeup_at(true).is_ok();
    let mut core = inner.lock();
    inner.poll_completions(&mut core);
    if !armed {
        // Nothing would wake the waiting tasks: wake them now, so that their
        // poll reports the error.
        let core = &mut *core;
        for s in core.slots.iter_mut() {
            if s.state == State::Issued {
                if let Some(w) = s.waker.take() {
                    core.wakers.push(w);
                }
            }
        }
    }
    inner.release(core);
}

#[cfg(test)]
mod tests {
    use super::super::super::context::Aio;
    use super::super::super::notify::Notify;
    use super::super::super::op::Prepared;
    use super::super::super::submit::Entry;
    use super::super::super::table::OpKind;
    use super::*;
    use crate::aio::Backend;
    use std::os::fd::AsFd;

    /// Whether an entry waits in a submission queue of `inner` (io_uring).
    fn sq_waiting(inner: &Inner) -> bool {
        let Engine::Uring(r) = &inner.engine else {
            panic!("an io_uring context");
        };
        let core = inner.lock();
        let pending = r.sq_pending();
        inner.release(core);
        pending
    }

    /// A context of two rings, the second made by this thread's read of a
    /// memfd holding `data` through it (this thread's entries are then all
    /// in the kernel); the memfd.
    fn two_rings(data: &[u8]) -> (Aio, std::fs::File) {
        let aio = Aio::builder()
            .backend(Backend::Uring)
            .rings(2)
            .build()
            .expect("context");
        let file = std::fs::File::from(
            rustix::fs::memfd_create("flush", rustix::fs::MemfdFlags::empty()).expect("memfd"),
        );
        rustix::io::pwrite(&file, data, 0).expect("pwrite");
        aio.__use_ring(Some(1));
        let mut first = aio.read(&file, 0, vec![0u8; data.len()]).expect("read");
        assert_eq!(first.wait().expect("done").data(), data);
        aio.__use_ring(None);
        assert_eq!(aio.rings(), 2);
        (aio, file)
    }

    /// A flush run on a thread other than the one that scheduled it (a
    /// `current_thread` runtime driven or dropped elsewhere) enters the
    /// scheduling thread's ring, though every
    /// entry of the running thread's own is in the kernel already (and it
    /// would enter only its own rings for a flush of its own).
    #[test]
    fn a_flush_run_on_another_thread_enters_the_scheduling_thread_s_ring() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        // This thread reads through a second ring, created for it: its
        // entries are all in the kernel after its call.
        let (aio, file) = two_rings(b"elsewhere");
        // Another thread leaves an entry for its turn's flush.
        let mut buf = vec![0u8; 9];
        let at = buf.as_mut_ptr() as usize;
        let inner = Arc::clone(&aio.inner);
        // (It lives on until the flush ran: a thread's exit enters what it
        // left, see `exit_wait.rs`. It reads the same fd number, which this
        // thread's read showed to name a file: no probe, which would enter
        // at once.)
        let (pushed, (go, go_rx)) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
        std::thread::scope(|s| {
            // (Dropped if an assertion below fails: the other thread then
            // ends, and the scope with it.)
            let go = go;
            let (tx, rx) = (pushed.0, go_rx);
            let (inner, file) = (&inner, &file);
            s.spawn(move || {
                let mut p = Prepared::new(OpKind::Read, file.as_fd(), 0, at, 9, 0);
                p.look("aio_read", false).expect("look");
                let (_, deferred) = inner
                    .submit_one_mailed(&mut p, &mut Notify::None, None, None, Entry::Defer)
                    .expect("submit");
                tx.send((deferred, this_thread())).expect("send");
                let _ = rx.recv();
            });
            let (deferred, by) = pushed.1.recv().expect("the other thread pushed");
            assert!(deferred, "the entry waits for a flush");
            let waiting = || sq_waiting(inner);
            assert!(waiting(), "the other thread's entry waits");
            // Its flush, run here.
            let f = Flush {
                inner: Arc::downgrade(inner),
                token: u64::MAX,
                by,
                done: AtomicBool::new(false),
            };
            f.run();
            assert!(!waiting(), "the flush entered the other thread's entry");
            let _ = go.send(());
        });
        // The read completes into the buffer (reaped by this thread's polls;
        // the buffer is read once nothing is in flight).
        let t0 = std::time::Instant::now();
        loop {
            let mut core = inner.lock();
            inner.poll_completions(&mut core);
            let busy = core.inflight > 0;
            inner.release(core);
            if !busy || t0.elapsed() > std::time::Duration::from_secs(5) {
                assert!(!busy, "the read completed");
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(buf, b"elsewhere");
    }

    /// A flush left behind by a thread that exited, run on a later thread
    /// that the kernel gave the same tid, enters the exited thread's entry:
    /// it is not taken for the running thread's own. Only where tids wrap
    /// soon (`pid_max` at most 65536: about 5 s of thread creation here);
    /// elsewhere the wait for a reused tid would be too long.
    #[test]
    fn a_flush_run_on_a_thread_with_its_exited_thread_s_tid_enters_that_thread_s_ring() {
        if !crate::sys::ringfd::tests::uring_allowed() {
            return;
        }
        let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(u64::MAX);
        if pid_max > 65536 {
            return;
        }
        // The second ring, made now: made later, its no-op in the first ring
        // would have the next thread to enter its own rings enter the first.
        let (aio, file) = two_rings(b"ring one");
        let (rd, wr) = rustix::pipe::pipe().expect("pipe");
        static DATA: [u8; 5] = *b"hello";
        let inner = Arc::clone(&aio.inner);
        // A thread leaves a pipe write for its turn's flush, in the first
        // ring, and exits (its exit does not enter it: the write has a
        // descriptor of its own, see `exit_wait.rs`).
        let (deferred, by, tid) = std::thread::scope(|s| {
            s.spawn(|| {
                let mut p = Prepared::new(
                    OpKind::Write,
                    wr.as_fd(),
                    0,
                    DATA.as_ptr() as usize,
                    DATA.len(),
                    0,
                );
                p.look("aio_write", false).expect("look");
                let (_, deferred) = inner
                    .submit_one_mailed(&mut p, &mut Notify::None, None, None, Entry::Defer)
                    .expect("submit");
                (deferred, this_thread(), crate::sys::tid::current())
            })
            .join()
            .expect("the writer")
        });
        assert!(deferred, "the write waits for a flush");
        let waiting = || sq_waiting(&inner);
        assert!(waiting(), "the exited thread's write waits");
        // Threads come and go until one has that tid: it reads through the
        // second ring (entered at once, so none of its own entries waits),
        // and runs the exited thread's flush.
        let t0 = std::time::Instant::now();
        let ran = loop {
            let got = std::thread::scope(|s| {
                s.spawn(|| {
                    if crate::sys::tid::current() != tid {
                        return false;
                    }
                    aio.__use_ring(Some(1));
                    let _read = aio.read(&file, 0, vec![0u8; 8]).expect("read");
                    aio.__use_ring(None);
                    Flush {
                        inner: Arc::downgrade(&inner),
                        token: u64::MAX,
                        by,
                        done: AtomicBool::new(false),
                    }
                    .run();
                    true
                })
                .join()
                .expect("a thread")
            });
            if got || t0.elapsed() > std::time::Duration::from_secs(120) {
                break got;
            }
        };
        assert!(ran, "no thread got tid {tid} back within 120 s");
        assert!(!waiting(), "the flush entered the exited thread's write");
        let mut got = [0u8; 5];
        assert_eq!(rustix::io::read(&rd, &mut got).expect("read the pipe"), 5);
        assert_eq!(&got, b"hello");
    }
}
