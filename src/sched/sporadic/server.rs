//! The server thread: one per process, at the top `SCHED_FIFO` priority, asleep in
//! `sigwaitinfo`; it steps each served thread's state machine and switches priorities.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::shared::{ns, Shared};
use super::state::{Level, SporadicState, Transition};
use crate::sched::{Builder, CpuSet, Policy, Priority, Tid};
use crate::sys::pilock::PiLocked;
use crate::sys::timer as st;
use crate::trace::catalog as tc;
use crate::{Error, ErrorKind, Result};

pub(super) enum Command {
    Add(Arc<Shared>, SporadicState),
    Remove(Tid),
    Block(Tid, Duration, Duration),
    Wake(Tid, Duration, Duration),
}

pub(super) struct Server {
    tid: Tid,
    signo: i32,
    queue: Arc<Commands>,
    /// The fork generation of the process that started it (see
    /// [`fork::generation`](crate::sys::fork::generation)): a forked child
    /// inherits this record but not the thread.
    generation: u32,
}

/// Commands for the server, behind a priority-inheriting lock. (A lock-free
/// queue whose reader spins until a writer finishes its slot livelocked: the
/// server, at the top priority, spun on a sender preempted by threads of its own
/// priority on the other CPU. Here the server blocks on the lock and lends its
/// priority to the sender holding it.)
type Commands = PiLocked<VecDeque<Command>>;

impl Server {
    /// The server thread's id.
    pub(super) fn tid(&self) -> Tid {
        self.tid
    }

    pub(super) fn send(&self, c: Command) {
        self.queue.lock().push_back(c);
        // The server blocks the signal from its first instruction on: it is
        // never delivered as a default action. A failure means the server is
        // gone; the command is then moot.
        let _ = st::signal_thread(self.tid.as_raw(), self.signo);
    }
}

/// The process's server once started: leaked, published once under
/// [`SERVER_START`] and never changed. (Not a `OnceLock`: a process forked while
/// a thread ran its initialiser would leave it running in the child, where every
/// later start would wait for a thread that does not exist.)
static SERVER: AtomicPtr<Server> = AtomicPtr::new(std::ptr::null_mut());
/// Taken to start the server; reset in a forked child (see
/// [`after_fork_in_child`]).
static SERVER_START: PiLocked<()> = PiLocked::new(());

/// The published server, whichever process started it.
fn published() -> Option<&'static Server> {
    let p = SERVER.load(Ordering::Acquire);
    // SAFETY: a non-null pointer came from `Box::leak` in `server` and is never
    // freed or written again.
    (!p.is_null()).then(|| unsafe { &*p })
}

/// The process's server if it has been started, in this process (not in the
/// parent of a forked child, whose server thread the child does not have).
pub(super) fn current() -> Option<&'static Server> {
    published().filter(|s| s.generation == crate::sys::fork::generation())
}

/// The refusal for a forked child that inherited the record of its parent's
/// server (and not the thread); `None` anywhere else.
pub(super) fn inherited() -> Option<Error> {
    let s = published()?;
    current().is_none().then(|| forked(s))
}

/// In a forked child: forgets a holder of the start lock, a thread of the
/// parent that was starting the server at the fork and does not exist here.
/// The child then finds no server published (the parent's was not yet) and
/// starts its own; a server the parent had published stays the parent's, and
/// the child is refused. Async-signal-safe (one atomic store).
fn after_fork_in_child() {
    // SAFETY: the child has one thread, which holds nothing.
    unsafe { SERVER_START.raw() }.reset_in_child();
}

/// The process's server, started on first use (`SCHED_FIFO` at the top priority).
/// `Unsupported` in a forked child of a process that had started one.
pub(super) fn server() -> Result<&'static Server> {
    if let Some(s) = published() {
        return current().ok_or_else(|| forked(s));
    }
    // Before the lock is first taken: a child forked while a thread holds it
    // forgets the holder. From here a forked child also counts one generation
    // more, and tells the server it inherited from its own.
    crate::sys::fork::on_child(after_fork_in_child);
    let _one = SERVER_START.lock();
    if let Some(s) = published() {
        return current().ok_or_else(|| forked(s));
    }
    let generation = crate::sys::fork::generation();
    let top = Policy::Fifo.priority_max()?;
    let signo = st::server_signal();
    let queue: Arc<Commands> = Arc::new(PiLocked::new(VecDeque::new()));
    let rx = Arc::clone(&queue);
    let (ready_tx, ready_rx) = crossbeam_channel::bounded::<Result<()>>(1);
    let h = Builder::new()
        .name("posixrt-ss")
        .scheduling(Priority::fifo(top)?)
        .stack_size(256 * 1024)
        .spawn(move || {
            // Block the signal before anyone learns this thread's tid.
            let r = st::block_signal(signo);
            let ok = r.is_ok();
            let _ = ready_tx.send(r);
            if ok {
                run(rx, signo);
            }
        })
        .map_err(|e| {
            let hint = format!(
                "the sporadic server thread runs SCHED_FIFO at priority {top}; {}",
                e.hint().unwrap_or("it needs CAP_SYS_NICE or RLIMIT_RTPRIO")
            );
            e.with_hint(hint)
        })?;
    let tid = h.tid();
    match ready_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => {
            return Err(Error::new(
                ErrorKind::Other,
                "pthread_sigmask",
                "the sporadic server thread ended before it was ready",
            ))
        }
    }
    drop(h); // detached: it serves for the life of the process
    let s: &'static Server = Box::leak(Box::new(Server {
        tid,
        signo,
        queue,
        generation,
    }));
    SERVER.store(std::ptr::from_ref(s).cast_mut(), Ordering::Release);
    Ok(s)
}

/// The refusal in a forked child: the server thread stayed in the parent.
fn forked(parent: &Server) -> Error {
    Error::new(
        ErrorKind::Unsupported,
        super::params::CALL,
        format!(
            "the sporadic server (thread {}) belongs to the process this one was forked \
             from; it does not exist here",
            parent.tid
        ),
    )
    .with_hint(
        "a process keeps one sporadic server and cannot start another after fork: serve \
         threads in the process that started the server, or exec a fresh program in the \
         child",
    )
}

/// The server thread's tid, starting it if needed. `Unsupported` in a forked child
/// of a process that had started it (the thread stayed in the parent).
pub fn server_tid() -> Result<Tid> {
    server().map(|s| s.tid)
}

/// Pins the server thread to `cpus` (`sched_setaffinity` on its tid), starting it if
/// needed.
///
/// Where it runs matters for overrun: a top-priority thread preempts whatever runs
/// on the CPU it wakes on, so on the served thread's CPU the served thread stops the
/// moment the server wakes; on another CPU it keeps running until the server's
/// `sched_setscheduler` reaches its CPU (an inter-processor interrupt), and its own
/// wake-up waits for whatever kernel work that CPU is doing. Measured with the
/// `sporadic` example: about 20 us of overrun on the served thread's CPU, up to about
/// 1 ms on a CPU busy with compilers. With several served threads on different CPUs,
/// pin it to the CPU whose thread needs the tightest budget. By default the server
/// inherits the affinity of the thread that started it.
///
/// # References
///  - [`sched_setaffinity(2)`](https://man7.org/linux/man-pages/man2/sched_setaffinity.2.html)
#[doc(alias = "sched_setaffinity")]
pub fn set_server_affinity(cpus: &CpuSet) -> Result<()> {
    crate::sched::set_thread_affinity(server()?.tid, cpus)
}

struct Entry {
    shared: Arc<Shared>,
    state: SporadicState,
    normal: Priority,
    low: Priority,
    cpu_timer: st::ThreadTimer,
    mono_timer: st::ThreadTimer,
    armed_cpu: Option<Duration>,
    armed_mono: Option<Duration>,
    /// The shortest wait before the next look at the CPU clock (see [`step`]).
    floor: Duration,
    /// The CPU clock at the previous step.
    last_cpu: Duration,
    /// The level the thread was last put at (`serve` put it at the normal
    /// one). Differs from the state's while a switch failed: retried after
    /// `retry` until it holds.
    applied: Level,
    /// The wait before the next try of a failed switch: [`RETRY`], doubled
    /// by each try that fails again up to [`RETRY_MAX`] (a refusal that
    /// lasts, such as a lost privilege, does not wake the server every
    /// millisecond), [`RETRY`] again once a switch holds.
    retry: Duration,
}

/// How long after a failed priority switch the server tries again.
const RETRY: Duration = Duration::from_millis(1);
/// The longest wait between two tries of a switch that keeps failing.
const RETRY_MAX: Duration = Duration::from_millis(64);

/// The shortest wait between two looks at a served thread's CPU clock. The server
/// may share the thread's CPU: re-arming for the last few microseconds of budget
/// would wake it before the thread could run again, a loop that starves the very
/// thread it waits for. This floor bounds the overrun it adds.
const PROBE_FLOOR: Duration = Duration::from_micros(10);

/// The longest that floor grows to while the thread makes no progress (preempted,
/// or blocked without saying so), so the server does not wake needlessly.
const PROBE_FLOOR_MAX: Duration = Duration::from_millis(1);

fn run(rx: Arc<Commands>, signo: i32) {
    let me = crate::sched::gettid().as_raw();
    let mut entries: HashMap<i32, Entry> = HashMap::new();
    loop {
        loop {
            // The guard goes before the command is handled.
            let next = rx.lock().pop_front();
            let Some(cmd) = next else { break };
            match cmd {
                Command::Add(shared, state) => {
                    let tid = shared.tid.as_raw();
                    match new_entry(Arc::clone(&shared), state, signo, me) {
                        Ok(e) => {
                            entries.insert(tid, e);
                        }
                        Err(e) => {
                            // Timers refused: nothing would enforce the budget of a
                            // thread left at its normal priority. It gets back the
                            // scheduling it had before `serve` (a failure to, but for
                            // an ended thread, is kept as its last switch error); its
                            // handle reports the refusal.
                            let errno = e.errno().unwrap_or(libc::EAGAIN);
                            if let Err(r) =
                                crate::sched::set_thread_scheduling(shared.tid, shared.prior)
                            {
                                let code = r.errno().unwrap_or(libc::EINVAL);
                                if code != libc::ESRCH {
                                    shared.last_errno.store(code, Ordering::Relaxed);
                                }
                            }
                            shared.timer_errno.store(errno, Ordering::Relaxed);
                            shared.gone.store(true, Ordering::Release);
                        }
                    }
                }
                Command::Remove(tid) => {
                    if let Some(e) = entries.remove(&tid.as_raw()) {
                        e.shared.gone.store(true, Ordering::Release);
                    }
                }
                Command::Block(tid, now, cpu) => {
                    if let Some(e) = entries.get_mut(&tid.as_raw()) {
                        let t = e.state.block_counted(now, cpu);
                        apply(e, &t);
                    }
                }
                Command::Wake(tid, now, cpu) => {
                    if let Some(e) = entries.get_mut(&tid.as_raw()) {
                        let t = e.state.wake_counted(now, cpu);
                        apply(e, &t);
                    }
                }
            }
        }
        entries.retain(|_, e| {
            let alive = step(e);
            if !alive {
                e.shared.gone.store(true, Ordering::Release);
            }
            alive
        });
        match st::wait_signal(signo) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => {
                // sigwaitinfo cannot fail otherwise with a valid set; never spin.
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn new_entry(shared: Arc<Shared>, state: SporadicState, signo: i32, me: i32) -> Result<Entry> {
    let cpu_timer = st::ThreadTimer::new(shared.clock.as_raw(), signo, me)?;
    let mono_timer = st::ThreadTimer::new(libc::CLOCK_MONOTONIC, signo, me)?;
    Ok(Entry {
        normal: Priority::fifo(shared.normal_priority)?,
        low: Priority::fifo(shared.params.low_priority)?,
        shared,
        state,
        cpu_timer,
        mono_timer,
        armed_cpu: None,
        armed_mono: None,
        floor: PROBE_FLOOR,
        last_cpu: Duration::ZERO,
        applied: Level::Normal,
        retry: RETRY,
    })
}

/// Brings one entry up to date and re-arms its timers; false if its thread is gone.
fn step(e: &mut Entry) -> bool {
    let now = st::monotonic_now();
    let Ok(cpu) = e.shared.clock.now() else {
        return false;
    };
    let t = e.state.advance_counted(now, cpu);
    if !apply(e, &t) {
        return false;
    }
    // A switch that failed earlier: the thread would otherwise stay at the
    // wrong priority (unenforced at the normal one) until the next switch.
    let level = e.state.level();
    if e.applied != level && !switch(e, level, true) {
        return false;
    }
    let want_cpu = e.state.cpu_deadline();
    let want_cpu = want_cpu.map(clamp_timespec);
    if want_cpu != e.armed_cpu && e.cpu_timer.set_abs(want_cpu).is_ok() {
        e.armed_cpu = want_cpu;
    }
    // The monotonic timer: the next replenishment, or the earliest time the budget
    // can run out (CPU time advances at most one second per second), but no sooner
    // than the floor, which doubles while the thread makes no progress.
    e.floor = if cpu == e.last_cpu {
        (e.floor * 2).min(PROBE_FLOOR_MAX)
    } else {
        PROBE_FLOOR
    };
    e.last_cpu = cpu;
    let probe = e
        .state
        .cpu_deadline()
        .map(|_| now.saturating_add(e.state.remaining(cpu).max(e.floor)));
    let retry = (e.applied != e.state.level()).then(|| now.saturating_add(e.retry));
    let want_mono = [e.state.pending().first().map(|r| r.at), probe, retry]
        .into_iter()
        .flatten()
        .min();
    let want_mono = want_mono.map(clamp_timespec);
    if want_mono != e.armed_mono && e.mono_timer.set_abs(want_mono).is_ok() {
        e.armed_mono = want_mono;
    }
    true
}

/// The latest time a C `timespec` can hold (`i64::MAX` seconds): a time past it
/// (a `Duration::MAX` period or budget) means "never", not a wrapped, negative
/// `tv_sec`.
const TIMESPEC_MAX: Duration = Duration::new(i64::MAX as u64, 999_999_999);

fn clamp_timespec(t: Duration) -> Duration {
    t.min(TIMESPEC_MAX)
}

/// The id of a system event if tracing is on and a stream records it.
#[inline]
fn rec(ev: &crate::trace::system_events::SysEvent) -> Option<crate::trace::EventId> {
    crate::trace::system_events::enabled()
        .then(|| tc::recorded(ev))
        .flatten()
}

/// Puts the thread at `level` (counter, trace event; the errno of a failure
/// is its last error, and the switch is retried by [`step`]); false if the
/// thread is gone. A `retry` that fails again is neither counted nor traced.
fn switch(e: &mut Entry, level: Level, retry: bool) -> bool {
    let tid = e.shared.tid;
    let p = match level {
        Level::Normal => e.normal,
        Level::Low => e.low,
    };
    let r = crate::sched::set_thread_scheduling(tid, p);
    let code = match &r {
        Ok(()) => 0,
        Err(err) => err.errno().unwrap_or(libc::EINVAL),
    };
    if code == 0 {
        e.applied = level;
        e.shared.snap.set_applied(level);
        e.retry = RETRY;
    } else if code != libc::ESRCH {
        e.shared.last_errno.store(code, Ordering::Relaxed);
        if retry {
            e.retry = (e.retry * 2).min(RETRY_MAX);
        }
    }
    if retry && code != 0 {
        return code != libc::ESRCH;
    }
    e.shared.switches.fetch_add(1, Ordering::Relaxed);
    if let Some(id) = rec(&tc::SCHED_SS_SWITCH) {
        tc::Packer::<16>::new()
            .i32(tid.as_raw())
            .i32(p.value())
            .u32((level == Level::Normal) as u32)
            .i32(code)
            .emit_id(id);
    }
    code != libc::ESRCH
}

/// Carries out transitions (priority switches, counters, trace events) and publishes
/// the new state; false if the thread is gone.
fn apply(e: &mut Entry, t: &[(Transition, usize)]) -> bool {
    let tid = e.shared.tid;
    let mut alive = true;
    for &(tr, pending) in t {
        // As of this transition, not after the whole step: one step may carry
        // out several replenishments.
        let pending = u32::try_from(pending).unwrap_or(u32::MAX);
        match tr {
            Transition::Switched(level) => {
                alive &= switch(e, level, false);
            }
            Transition::Exhausted { consumed, overrun } => {
                let s = &e.shared;
                s.exhaustions.fetch_add(1, Ordering::Relaxed);
                s.max_overrun.fetch_max(ns(overrun), Ordering::Relaxed);
                s.total_overrun.fetch_add(ns(overrun), Ordering::Relaxed);
                if let Some(id) = rec(&tc::SCHED_SS_EXHAUSTED) {
                    tc::Packer::<24>::new()
                        .i32(tid.as_raw())
                        .u64(ns(consumed))
                        .u64(ns(overrun))
                        .u32(pending)
                        .emit_id(id);
                }
            }
            Transition::Replenished { amount, budget } => {
                e.shared.replenishments.fetch_add(1, Ordering::Relaxed);
                if let Some(id) = rec(&tc::SCHED_SS_REPLENISHED) {
                    tc::Packer::<24>::new()
                        .i32(tid.as_raw())
                        .u64(ns(amount))
                        .u64(ns(budget))
                        .u32(pending)
                        .emit_id(id);
                }
            }
            Transition::Scheduled(_) => {}
        }
    }
    e.shared.snap.publish(&e.state);
    alive
}
