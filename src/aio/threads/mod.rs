//! The thread-pool backend: used when io_uring is refused (or forced with
//! `POSIXRT_AIO_BACKEND=threads`). Same semantics as the io_uring backend.
//!
//! A leaf, like a flavor of crossbeam-channel: it knows the request table, and
//! reaches the context that owns it only through the small [`Host`] trait.
//!
//! - **Workers** take ready requests in priority order (see the table's
//!   effective priority) and run each at the request's effective policy and
//!   priority: a worker switches itself (`pthread_setschedparam`) when the next
//!   request's class differs from its own, and back to its resting class,
//!   `SCHED_BATCH`, before it sleeps; it serves a `SCHED_OTHER` request at
//!   `SCHED_BATCH` too (see [`REST`]). For a real-time request, the thread
//!   that queues it switches a sleeping worker to its class first, with
//!   `sched_setscheduler` (see [`Pool::boost`]). A worker never runs above the class of
//!   the request it serves, so a `SCHED_OTHER` submitter never raises one. A
//!   switch is two system calls at most (measured by the `aio_priority`
//!   example: `switch_ns`).
//! - **Regular files and block devices**: `pread`/`pwrite`/`fsync`/`fdatasync`.
//!   A transfer of up to 256 KiB at an offset is tried first with
//!   `RWF_NOWAIT` (unless the fd is `O_DIRECT`, or its file refused the flag):
//!   what the page cache serves is done at once. Before any call that may
//!   wait (the rest of such a transfer, every other transfer, an fsync) a
//!   worker hands the queue on, waking
//!   sleepers for what the other awake workers will not take. A submission
//!   wakes only that many too ([`Pool::to_wake`]): a run of cached reads is
//!   served by the workers awake, without a wake-up each.
//! - **Pipes, FIFOs, sockets, terminals** (pollable descriptors): the worker makes
//!   one non-blocking attempt (`RWF_NOWAIT`, or `MSG_DONTWAIT` on a socket). On an
//!   `O_NONBLOCK` descriptor EAGAIN is the result, as `read(2)` would give. Else
//!   the request is *parked* in the pool's one epoll set and the worker goes on
//!   with other requests; when the descriptor is ready, the poller thread puts the
//!   request back in the ready queue at its priority. No number of idle
//!   descriptors can exhaust the workers. A terminal refuses `RWF_NOWAIT` and
//!   its `POLLOUT` promises room for a byte or so, so the rest of a write to a
//!   blocking one that polled writable is a plain `write(2)`, which returns
//!   when the terminal took every byte: it runs on a thread of its own, not
//!   on a worker (see `blocking`). A parked request can be cancelled
//!   (`AIO_CANCELED`); a transfer in progress, such a write too, cannot
//!   (`AIO_NOTCANCELED`).
//! - **Datagram socket writes** park too, but their `POLLOUT` lags (unix
//!   datagram `POLLOUT` needs the send queue below a quarter of `SO_SNDBUF`, while
//!   `write(2)` completes as soon as the datagram fits): the poller tries them
//!   again itself, whole or not at all, on `POLLOUT` and on a short timer with
//!   backoff (see `dgram`). A full datagram socket holds no worker.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustix::event::epoll;
use rustix::event::{eventfd, EventfdFlags};

use super::table::{split_user_data, user_data, Core, OpKind, State};
use crate::sys::io::{self as sio, FdKind};
use crate::sys::prio::{self, SchedClass};
use crate::sys::rtlock::{self, RtCond, RtGuard};
use crate::{Error, Result};

mod blocking;
mod dgram;
mod transfer;
use transfer::{borrow, learn_fd, run, Job, Outcome};

/// What the pool needs from the context that owns it.
pub(crate) trait Host: Send + Sync + 'static {
    /// Locks the request table.
    fn table(&self) -> RtGuard<'_, Core>;
    /// Unlocks the table, then wakes waiters and fires notifications.
    fn release(&self, t: RtGuard<'_, Core>);
    /// The pool (None if the context runs another engine).
    fn pool(&self) -> Option<&Pool>;
}

/// epoll data of the pool's wake-up eventfd.
const WAKE: u64 = u64::MAX;

pub(crate) struct Pool {
    /// Signalled when requests become ready.
    pub work: RtCond,
    /// Parked requests wait here for readiness (one registration per request, on
    /// the request's own descriptor copy).
    epoll: OwnedFd,
    /// Written to make the poller look at cancels and shutdown.
    wake: OwnedFd,
    workers: usize,
    /// Scheduling switches the workers made (to a request's class or back).
    pub switches: AtomicU64,
    /// Workers asleep for want of work, `(index, tid)`; changed under the
    /// engine lock only (the mutex is never contended).
    idle: std::sync::Mutex<Vec<(u32, i32)>>,
    /// Per worker: the class another thread switched it to while it slept
    /// ([`Pool::boost`]), encoded by [`encode`]; 0 if none.
    boosted: Box<[AtomicU64]>,
    /// The kernel refused a [`Pool::boost`] (EPERM): none is tried again.
    boost_refused: std::sync::atomic::AtomicBool,
    /// Workers awake that will look at the ready queue again without a
    /// wake-up: in an `RWF_NOWAIT` transfer or other work that does not wait
    /// (see `positioned`), or on their way to the queue. Changed under the engine lock only (see
    /// [`Pool::to_wake`]).
    active: std::sync::atomic::AtomicUsize,
    /// Workers asleep on `work` (or about to be: the count they sleep on
    /// read), not back at the lock yet. Changed under the engine lock only.
    asleep: std::sync::atomic::AtomicUsize,
    /// Of those, the ones a wake-up is due to: decided under the engine lock
    /// (see [`Pool::to_wake`]), sent after it is released. Each comes back and
    /// takes ready requests as the awake ones do, so a submission made before
    /// it runs wakes no other worker for those. Decremented by every worker
    /// back from a sleep (never below 0: one woken by another cause takes the
    /// place of one due). Changed under the engine lock only.
    woken: std::sync::atomic::AtomicUsize,
    /// Parked datagram writes, which the poller retries (see `dgram`).
    retries: dgram::Retries,
    /// Threads for writes to blocking terminals (see `blocking`).
    spares: Arc<blocking::Spares>,
}

/// Workers that each have a bit of their own to sleep tagged with.
const TAGS: usize = 32;

/// The bit worker `w` sleeps tagged with (see [`RtCond::wait_tagged`]).
fn tag(w: u32) -> u32 {
    1 << (w % TAGS as u32)
}

/// A class as a non-zero word for [`Pool::boosted`].
fn encode(c: SchedClass) -> u64 {
    (1 << 63) | ((c.policy as u32 as u64) << 32) | c.priority as u32 as u64
}

fn decode(v: u64) -> SchedClass {
    SchedClass {
        policy: (v >> 32) as u32 as i32 & 0x7fff_ffff,
        priority: v as u32 as i32,
    }
}

fn errno_of(e: rustix::io::Errno, call: &'static str) -> Error {
    Error::from_errno(call, e.raw_os_error())
}

impl Pool {
    pub(crate) fn new(workers: usize) -> Result<Pool> {
        let ep =
            epoll::create(epoll::CreateFlags::CLOEXEC).map_err(|e| errno_of(e, "epoll_create1"))?;
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)
            .map_err(|e| errno_of(e, "eventfd"))?;
        epoll::add(
            &ep,
            &wake,
            epoll::EventData::new_u64(WAKE),
            epoll::EventFlags::IN,
        )
        .map_err(|e| errno_of(e, "epoll_ctl"))?;
        Ok(Pool {
            work: RtCond::new(),
            epoll: ep,
            wake,
            workers,
            switches: AtomicU64::new(0),
            idle: std::sync::Mutex::new(Vec::with_capacity(workers)),
            boosted: (0..workers).map(|_| AtomicU64::new(0)).collect(),
            boost_refused: std::sync::atomic::AtomicBool::new(false),
            active: std::sync::atomic::AtomicUsize::new(0),
            asleep: std::sync::atomic::AtomicUsize::new(0),
            woken: std::sync::atomic::AtomicUsize::new(0),
            retries: dgram::Retries::default(),
            spares: Arc::default(),
        })
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<(u32, i32)>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// For a real-time request made ready while a worker sleeps (call with the
    /// engine lock held): switches the first worker that went to sleep to the
    /// request's class `c` from here, so that the wake-up that follows lets it
    /// preempt whatever runs, instead of waiting for its turn at `SCHED_BATCH`
    /// (see [`REST`]). Returns the worker switched, for
    /// [`wake_for`](Pool::wake_for) to wake it and no other: each worker
    /// sleeps tagged with its own bit ([`tag`]), in a pool of at most
    /// [`TAGS`] workers (a larger one shares bits, and is woken whole after a
    /// switch, as a plain futex wake cannot pick one sleeper).
    /// A system call under the engine lock, for
    /// real-time requests only. The process may lack the privilege (a class
    /// set from outside, by `chrt`, with `RLIMIT_RTPRIO` 0): the kernel's
    /// refusal leaves the worker as it was, and no boost is tried again (the
    /// worker switches itself, or stays at `SCHED_BATCH` as before).
    pub(crate) fn boost(&self, c: SchedClass) -> Option<u32> {
        if self.boost_refused.load(Ordering::Relaxed) {
            return None;
        }
        let mut idle = self.idle();
        let &(w, tid) = idle.first()?;
        let p = libc::sched_param {
            sched_priority: c.priority,
        };
        // SAFETY: `p` is a valid sched_param the call only reads. (`tid` names
        // a worker of this pool that sleeps, or has woken and waits for the
        // engine lock the caller holds: it leaves `idle` and reads `boosted`
        // under that lock, before it serves a request.)
        if unsafe { libc::sched_setscheduler(tid, c.policy, &p) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) {
                self.boost_refused.store(true, Ordering::Relaxed);
            }
            return None;
        }
        idle.remove(0);
        self.switches.fetch_add(1, Ordering::Relaxed);
        self.boosted[w as usize].store(encode(c), Ordering::Relaxed);
        Some(w)
    }

    /// [`boost`](Pool::boost) for the request first in the ready queue, if it
    /// is real-time: the worker switched, if one was.
    pub(crate) fn boost_first(&self, core: &mut Core) -> Option<u32> {
        core.first_ready_class()
            .filter(|c| c.is_rt())
            .and_then(|c| self.boost(c))
    }

    pub(crate) fn workers(&self) -> usize {
        self.workers
    }

    /// How many sleeping workers to wake for `ready` requests (call with the
    /// engine lock held): those the awake workers will not take. A worker
    /// awake comes back to the queue as soon as its request is done, without
    /// a wake-up, unless its request may wait: then it hands the queue on
    /// before the call (see `positioned`). So a run of requests that complete
    /// at once (cached reads) is served by the workers awake, as glibc's thread serves one fd's queue, instead of a sleep and
    /// a wake-up per request; requests that wait for a disk still get a
    /// worker each.
    ///
    /// Workers woken already and not back yet count as awake: a program that
    /// submits several requests one call at a time (a loop of `aio_read`)
    /// wakes one worker per request, not one for the first, two for the
    /// second (the first not running yet), and so on. The count returned is
    /// taken as due (see [`Pool::woken`]): the caller must pass it to
    /// [`wake_for`](Pool::wake_for). It is at most the sleepers no wake-up is
    /// due to yet, so each one due comes back: a sleeper is woken by the
    /// futex wake, or, not asleep yet, finds the count it sleeps on moved
    /// and does not sleep.
    #[inline]
    pub(crate) fn to_wake(&self, ready: usize) -> usize {
        let woken = self.woken.load(Ordering::Relaxed);
        let want = ready.saturating_sub(self.active.load(Ordering::Relaxed) + woken);
        if want == 0 {
            return 0;
        }
        let n = want.min(self.asleep.load(Ordering::Relaxed).saturating_sub(woken));
        self.woken.fetch_add(n, Ordering::Relaxed);
        n
    }

    /// One more (or, `false`, one less) worker awake: see [`Pool::to_wake`].
    /// Under the engine lock.
    fn awake(&self, up: bool) {
        if up {
            self.active.fetch_add(1, Ordering::Relaxed);
        } else {
            self.active.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Wakes a sleeping worker for each of `ready` requests (the count
    /// [`to_wake`](Pool::to_wake) gives), at most every worker: `boosted` (the
    /// worker [`boost`](Pool::boost) switched, if any) for the first, others
    /// (as the kernel picks them) for the rest. Called once the engine lock is
    /// released. (Waking all of them for two requests made the rest
    /// contend for the lock, find nothing, and sleep again.) A worker takes
    /// ready requests until none is left before it sleeps, so a request is
    /// never left with every worker asleep. (A switched worker woken already,
    /// which has yet to take the lock, serves the request all the same; the
    /// wake-up due then goes to another sleeper, as `to_wake` counted one.)
    #[inline]
    pub(crate) fn wake_for(&self, mut ready: usize, boosted: Option<u32>) {
        if let Some(w) = boosted {
            if self.workers > TAGS {
                // Two sleepers may share the bit: the other could be woken.
                self.work.notify_all();
                return;
            }
            // Counted only if it woke: the switched worker may be on its way
            // back already (woken for an earlier request, not at the lock
            // yet), and the wake due here must then reach another sleeper.
            if self.work.notify_tagged(tag(w)) {
                ready = ready.saturating_sub(1);
            }
        }
        if ready > 0 {
            self.work.notify_n(ready.min(self.workers) as u32);
        }
    }

    /// A worker about to sleep on `work`, under the engine lock: no longer
    /// awake, and counted asleep (see [`Pool::to_wake`]).
    fn sleep(&self) {
        self.awake(false);
        self.asleep.fetch_add(1, Ordering::Relaxed);
    }

    /// A worker back from its sleep, under the engine lock: awake, and one
    /// fewer due (whether a wake-up was due to it or not).
    fn back(&self) {
        self.asleep.fetch_sub(1, Ordering::Relaxed);
        let due = self.woken.load(Ordering::Relaxed);
        self.woken.store(due.saturating_sub(1), Ordering::Relaxed);
        self.awake(true);
    }

    /// Starts the workers and the poller, and returns once each of them runs;
    /// each holds the context until shutdown. They block every signal
    /// (inherited), as glibc's AIO threads do: no handler runs on them, and
    /// one that sends a completion signal never takes it itself (see
    /// `notify::send_signals`).
    pub(crate) fn spawn<H: Host>(host: &Arc<H>, workers: usize) -> Result<()> {
        use crate::sys::signal::spawn_all_blocked;
        let fail = |e: std::io::Error| {
            Error::from_errno("pthread_create", e.raw_os_error().unwrap_or(libc::EAGAIN))
                .with_message("starting the AIO thread pool")
                .with_hint("raise RLIMIT_NPROC or use fewer AIO worker threads")
        };
        let (up, started) = std::sync::mpsc::channel::<()>();
        let h = Arc::clone(host);
        let u = up.clone();
        spawn_all_blocked("posixrt-aio-poll".into(), move || {
            let _ = u.send(());
            drop(u);
            poller(h)
        })
        .map_err(fail)?;
        for w in 0..workers {
            let h = Arc::clone(host);
            let u = up.clone();
            spawn_all_blocked(format!("posixrt-aio-{w}"), move || {
                let _ = u.send(());
                drop(u);
                worker(h, w as u32)
            })
            .map_err(fail)?;
        }
        // Every thread is past its start when the context is returned: none
        // is still in the thread library's start-up (which takes process-wide
        // locks) when the program goes on, to its real-time phase or a fork.
        drop(up);
        for _ in 0..=workers {
            let _ = started.recv();
        }
        Ok(())
    }

    /// Makes the poller look at cancel requests (`cancel_req` on a parked
    /// request) and at shutdown. `_w` is kept for callers that name a worker.
    pub(crate) fn interrupt(&self, _w: u32) {
        let _ = rustix::io::write(&self.wake, &1u64.to_ne_bytes());
    }
}

fn switch(class: SchedClass, pool: &Pool) -> bool {
    pool.switches.fetch_add(1, Ordering::Relaxed);
    let ok = prio::set_current(class).is_ok();
    // The core lock chooses its waiting path by the waiter's class.
    rtlock::class_changed();
    ok
}

/// The class a worker rests at and serves `SCHED_OTHER` requests at:
/// `SCHED_BATCH`, the same share of the CPU as `SCHED_OTHER` but no wake-up
/// preemption. A submission wakes a worker; at `SCHED_OTHER` the woken worker
/// often took the CPU from the submitter at once, and a program that submits
/// a run of requests before it waits (fio's `posixaio` at depth 32, the seed's
/// listing 7.7) was cut short after each of them. At `SCHED_BATCH` the worker
/// runs on an idle CPU, or when the submitter waits or its time slice ends.
/// Under `LD_PRELOAD` on 2 CPUs, against the library that woke workers under
/// the lock at `SCHED_OTHER`: fio 4 KiB random reads at depth 32 made 1.9x
/// the IOPS (1.3-1.4x glibc's), at depth 1 1.2x, listing 7.7 took 0.55x the
/// time, `stress-ng --aio 1` made 1.7x the signals per second and
/// `stress-ng --aio 2` the same (see capi/README.md). The cost: a request of
/// a `SCHED_OTHER` program that keeps every CPU busy waits for the worker's
/// turn on a CPU, without preempting (typically a time slice, a few
/// milliseconds). A real-time request does not: the thread that queues it
/// (its submitter, or the poller for a pipe or socket that became ready)
/// switches a sleeping worker to the request's class before waking it
/// ([`Pool::boost`]), and the worker preempts what runs. (Without that, a
/// `SCHED_FIFO` submitter's 4 KiB cached reads beside two busy `SCHED_OTHER`
/// loops on 2 CPUs waited 3.8 ms at p90; with it 44-62 µs, p99 60-169 µs,
/// where workers resting at `SCHED_OTHER` gave 30-39 µs and 52-69 µs.)
const REST: SchedClass = SchedClass {
    policy: libc::SCHED_BATCH,
    priority: 0,
};

fn worker<H: Host>(host: Arc<H>, w: u32) {
    let Some(pool) = host.pool() else { return };
    // A worker rests at SCHED_BATCH, whatever the thread that made the context.
    let mut cur = prio::current();
    if cur != REST && switch(REST, pool) {
        cur = REST;
    }
    let mut core = host.table();
    pool.awake(true);
    loop {
        if let Some(idx) = core.pop_ready() {
            let s = &mut core.slots[idx as usize];
            s.worker = w;
            // A transfer on a pollable fd is a non-blocking attempt: a cancel
            // meanwhile is honoured when it would block (see `park`).
            s.interruptible = s.fd_kind.is_some_and(FdKind::is_stream);
            let mut job = Job {
                op: s.op,
                fd: s.io_fd(),
                kind: s.fd_kind,
                nonblock: s.nonblock,
                class: s.class,
                done: s.res,
                assumed: false,
                direct: false,
                nowait: true,
                refused: std::cell::Cell::new(false),
            };
            let fd_number = s.op.fd;
            let mut learn =
                job.kind.is_none() && matches!(job.op.kind, OpKind::Read | OpKind::Write);
            if learn {
                // A C request (the C ABI checks nothing): learn the fd's kind
                // and flags here; its fd stays open until it is done (the C
                // contract). A cancel meanwhile is honoured if it would block.
                s.interruptible = true;
                // A number seen to name a regular file, block device or
                // directory is taken to name one still (no `fstat`, no
                // `F_GETFL`: its flags do not matter there); an ESPIPE says
                // otherwise, before any byte moved.
                if core.fd_not_pollable(fd_number) {
                    job.kind = Some(FdKind::Regular);
                    job.assumed = true;
                    learn = false;
                }
            }
            job.direct = core.fd_direct(fd_number);
            job.nowait = core.fd_nowait_for(fd_number, job.op.kind);
            drop(core);
            if learn {
                learn_fd(&mut job);
            }
            let want = if job.class == SchedClass::OTHER {
                REST
            } else {
                job.class
            };
            if want != cur && switch(want, pool) {
                cur = want;
            }
            // Before a transfer that waits for a device: the queue goes to
            // another worker (see `Pool::to_wake`), once. The request is not
            // interruptible from the first call that may block for good on
            // (`stays`: not one at an offset on a number only assumed to
            // name a regular file, see `positioned`).
            let (mut handed, mut stays) = (false, false);
            let mut hand_on = |blocks: bool| {
                if !handed {
                    handed = true;
                    stays = blocks;
                    hand_on(&*host, pool, idx, blocks);
                } else if blocks && !stays {
                    // (Relearnt: a terminal's read after the assumed call.)
                    stays = true;
                    let mut c = host.table();
                    c.slots[idx as usize].interruptible = false;
                    host.release(c);
                }
            };
            let mut out = run(&job, &mut hand_on);
            if matches!(out, Outcome::Relearn) {
                learn = true;
                learn_fd(&mut job);
                out = run(&job, &mut hand_on);
            }
            let mut c = host.table();
            if handed {
                pool.awake(true);
            }
            if learn || job.assumed {
                let s = &mut c.slots[idx as usize];
                s.fd_kind = job.kind;
                s.nonblock = job.nonblock;
            }
            if learn {
                if let Some(k) = job.kind {
                    c.set_fd_not_pollable(fd_number, !k.is_stream());
                }
                c.set_fd_direct(fd_number, job.direct);
            }
            if job.refused.get() {
                c.set_fd_refuses_nowait(fd_number, job.op.kind);
            }
            let mut blocked = None;
            match out {
                Outcome::Done(res) => c.complete(idx, res),
                Outcome::Park { moved } => park(&mut c, pool, idx, moved),
                // (Learnt, so not again.)
                Outcome::Relearn => c.complete(idx, -(libc::ESPIPE as i64)),
                Outcome::Blocking { moved } => blocked = blocking::rest(&mut c, idx, moved),
            }
            host.release(c);
            if let Some(b) = blocked {
                blocking::start(&host, pool, b, &mut cur);
            }
            core = host.table();
        } else if core.shutdown {
            // The poller stops once nothing is in flight: it learns so from
            // a wake-up (the last worker out gives the one that counts).
            pool.interrupt(w);
            pool.awake(false);
            break;
        } else if cur != REST {
            drop(core);
            if switch(REST, pool) {
                cur = REST;
            }
            core = host.table();
            if cur != REST && core.ready_len() == 0 && !core.shutdown {
                // Could not switch back (refused): sleep anyway, unless
                // work came while the lock was let go.
                pool.sleep();
                pool.work.wait_tagged(&mut core, None, tag(w));
                pool.back();
            }
        } else {
            pool.idle().push((w, crate::sys::tid::current() as i32));
            // The lock taken again on waking reads this thread's class anew:
            // a boost while asleep makes it a real-time waiter (see
            // `rtlock`'s class cache).
            rtlock::class_changed();
            pool.sleep();
            pool.work.wait_tagged(&mut core, None, tag(w));
            pool.back();
            pool.idle().retain(|&(i, _)| i != w);
            let b = pool.boosted[w as usize].swap(0, Ordering::Relaxed);
            if b != 0 {
                // Switched by a real-time submitter while asleep (`Pool::boost`).
                cur = decode(b);
                rtlock::class_changed();
            }
        }
    }
}

/// A worker about to wait for a device hands the queue on: it no longer
/// counts as awake, and sleepers are woken for the ready requests the other
/// awake workers will not take (see [`Pool::to_wake`]). If `stays`, its
/// request `idx` is no longer interruptible: the call that follows may block
/// (a terminal's `write(2)` made here when no thread could be started for it,
/// see `blocking`) and nothing stops it, so a cancel meanwhile reports it not
/// cancelled at once instead of waiting for it. (Not for a call at an offset
/// on an fd number only assumed to name a regular file: a pipe or socket
/// there now fails it with ESPIPE at once, and the request parks; counted
/// not interruptible meanwhile, a pipe read that never completes was
/// reported not cancelled. A regular file there is not stopped either way:
/// a cancel reads the fd's kind, see [`can_stop`].)
fn hand_on<H: Host>(host: &H, pool: &Pool, idx: u32, stays: bool) {
    let mut c = host.table();
    if stays {
        c.slots[idx as usize].interruptible = false;
    }
    pool.awake(false);
    let wake = pool.to_wake(c.ready_len());
    host.release(c);
    pool.wake_for(wake, None);
}

/// True if the issued request in `s` may be stopped by a cancel (it transfers on
/// a pollable fd: a pipe, FIFO, socket or terminal, and is parked or will park
/// when it would block). A C request's fd kind is learnt by its worker without
/// the lock (`interruptible` set meanwhile); until then it is read here. On a
/// regular file or block device (or an fd `fstat` refuses, transferred as on
/// one) the transfer runs to its end: the kernel does not interrupt it. A
/// datagram write is left to run too, parked or not (see
/// `Slot::issued_write_stays`).
pub(crate) fn can_stop(s: &super::table::Slot) -> bool {
    let kind = fd_kind_of(s);
    kind.is_some_and(FdKind::is_stream) && !s.issued_write_stays(|| kind)
}

/// The kind of the issued request's fd: as learnt at submission, or (a C
/// request's, not learnt yet) read now.
pub(crate) fn fd_kind_of(s: &super::table::Slot) -> Option<FdKind> {
    match s.fd_kind {
        Some(k) => Some(k),
        None => sio::kind(borrow(s.op.fd)).ok(),
    }
}

/// Parks request `idx` in the epoll set (or ends it, if cancelled meanwhile).
fn park(core: &mut Core, pool: &Pool, idx: u32, moved: usize) {
    let shutdown = core.shutdown;
    let s = &mut core.slots[idx as usize];
    s.res += moved as i64;
    s.op.ptr += moved;
    s.op.len -= moved;
    if !s.op.ordered && s.fd_kind.map_or(true, |k| !k.is_stream()) {
        s.op.offset += moved as i64;
    }
    if s.cancel_req || shutdown {
        let res = cancelled(s.res);
        core.complete(idx, res);
        return;
    }
    if s.own_fd.is_none() {
        // A C request: its fd stays open until done (the C contract), so a copy
        // can be taken now; each parked request needs its own registration.
        match sio::dup(borrow(s.op.fd)) {
            Ok(f) => s.own_fd = Some(f),
            Err(e) => {
                core.complete(idx, -(e as i64));
                return;
            }
        }
    }
    let ev = if s.op.kind == OpKind::Read {
        epoll::EventFlags::IN
    } else {
        epoll::EventFlags::OUT
    };
    let gen = s.gen;
    let r = epoll::add(
        &pool.epoll,
        borrow(s.io_fd()),
        epoll::EventData::new_u64(user_data(idx, gen)),
        ev | epoll::EventFlags::ONESHOT,
    );
    match r {
        Ok(()) => {
            s.parked = true;
            s.interruptible = true;
            if s.op.kind == OpKind::Write
                && s.fd_kind == Some(FdKind::Datagram)
                && pool.retries.add(user_data(idx, gen))
            {
                // The first: the poller sets its timer.
                pool.interrupt(0);
            }
        }
        Err(e) => core.complete(idx, -(e.raw_os_error() as i64)),
    }
}

/// The result of a parked request cancelled (or stopped by the shutdown):
/// the bytes an earlier round moved, else ECANCELED.
fn cancelled(done: i64) -> i64 {
    if done > 0 {
        done
    } else {
        -(libc::ECANCELED as i64)
    }
}

/// The poller: puts parked requests whose fd became ready back in the ready
/// queue, and ends parked requests that a cancel or the shutdown asked to stop.
fn poller<H: Host>(host: Arc<H>) {
    let Some(pool) = host.pool() else { return };
    let mut events: Vec<epoll::Event> = Vec::with_capacity(64);
    loop {
        events.clear();
        let timeout = pool.retries.timeout();
        match epoll::wait(
            &pool.epoll,
            rustix::buffer::spare_capacity(&mut events),
            timeout.as_ref(),
        ) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        let mut core = host.table();
        let mut woken = false;
        let mut fired = Vec::new();
        for ev in &events {
            let d = ev.data.u64();
            if d == WAKE {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(&pool.wake, &mut b);
                woken = true;
                continue;
            }
            let (idx, gen) = split_user_data(d);
            let parked = core
                .slots
                .get(idx as usize)
                .is_some_and(|s| s.gen == gen && s.state == State::Issued && s.parked);
            if parked && pool.retries.has(d) {
                // A datagram write: tried again below, from here.
                fired.push(d);
            } else if parked {
                let shutdown = core.shutdown;
                let s = &mut core.slots[idx as usize];
                let _ = epoll::delete(&pool.epoll, borrow(s.io_fd()));
                s.interruptible = false;
                if s.cancel_req || shutdown {
                    // A cancel came first: it wins over the readiness.
                    let res = cancelled(s.res);
                    core.complete(idx, res);
                } else {
                    core.requeue(idx);
                }
            }
        }
        if woken || core.shutdown {
            let stop: Vec<u32> = core
                .slots
                .iter()
                .enumerate()
                .filter(|(_, s)| {
                    s.state == State::Issued && s.parked && (s.cancel_req || core.shutdown)
                })
                .map(|(i, _)| i as u32)
                .collect();
            for idx in stop {
                let s = &core.slots[idx as usize];
                let _ = epoll::delete(&pool.epoll, borrow(s.io_fd()));
                let res = if s.res > 0 {
                    s.res
                } else {
                    -(libc::ECANCELED as i64)
                };
                core.complete(idx, res);
            }
        }
        dgram::retry_due(&mut core, pool, &fired);
        // Woken once the lock is released, as a submission wakes them (see
        // `Inner::kick`), a sleeper switched first for a real-time request.
        let ready = core.ready_len();
        let boosted = if ready > 0 {
            pool.boost_first(&mut core)
        } else {
            None
        };
        let stop = core.shutdown && core.inflight == 0;
        let wake = pool.to_wake(ready);
        host.release(core);
        pool.wake_for(wake, boosted);
        if stop {
            pool.work.notify_all();
            return;
        }
    }
}

#[cfg(test)]
mod tests;
