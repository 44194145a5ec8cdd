//! Real-time safety of the hot paths, proven: after a warm-up they allocate nothing
//! and (except where noted) enter the kernel for nothing.
//!
//! Every case runs in its own child process (this test binary re-run on the ignored
//! `child_entry` test), so process-wide state (tracking level, running trace
//! streams) of one case never leaks into another, whatever `cargo test` runs in
//! parallel.
//!
//! - **Allocations**: a counting global allocator counts every `alloc`, `realloc`
//!   and `dealloc` made while the path runs, by the measuring thread and by every
//!   other thread but the harness's main thread and the sync tracking publisher
//!   (see [`excluded_thread`]).
//! - **System calls** (x86-64): the measuring thread installs a seccomp filter that
//!   traps every system call except `exit_group` and a `write` to one report fd
//!   (plus the calls a case declares, e.g. `sched_getattr` for a ceiling mutex
//!   without a cached base). A trap prints the syscall number and the calling
//!   address and ends the child; a clean run ends it with [`EXIT_CLEAN`].
//!   `Periodic` waits may make `clock_nanosleep` only, once per wait: the handler
//!   counts it and emulates it by spinning on the vDSO clock to the deadline.
//!
//! Each child warms the path up (first-use set-up: the thread's trace sub-buffer,
//! its tid cache, its mark slot, tracking's record of the object, the AIO fd's
//! order gate), runs it for at least 60 ms, then measures as many steps, and (in
//! allocation mode) checks the path did its work. The `checker_*` tests show the
//! checks fail on an injected allocation, system call or helper-thread allocation.
//!
//! Knobs for a manual look: `POSIXRT_RT_INJECT=alloc|syscall|helper_alloc` makes
//! every case fail; `POSIXRT_RT_WARM=0` (run the child by hand with
//! `POSIXRT_RT_CASE` and `POSIXRT_RT_MODE=alloc|syscalls`) shows a cold first call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::backtrace::Backtrace;
use std::cell::Cell;
use std::process::{Command, Stdio};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use posixrt::aio::{Aio, Backend};
use posixrt::mark;
use posixrt::sched::periodic::Periodic;
use posixrt::sync::{
    self, ceiling_mutex, CeilingMutex, NormalMutex, PiMutex, RawCeilingMutex, RawNormalMutex,
    RawPiMutex, RecursiveMutex, RwLock, Semaphore, Tracking,
};
use posixrt::trace::{self, EventSet, FilterHow, Trace, TraceAttr};

// ---------------------------------------------------------------------------
// The counting allocator
// ---------------------------------------------------------------------------

struct Counting;

/// Process-wide counting is on.
static ARMED: AtomicBool = AtomicBool::new(false);
/// Allocator calls by any thread while `ARMED`.
static PROCESS_CALLS: AtomicUsize = AtomicUsize::new(0);
/// Where the measuring thread's first counted call came from.
static FIRST: Mutex<Option<(&'static str, usize, Backtrace)>> = Mutex::new(None);
/// Where the first counted call of another thread came from.
static FIRST_OTHER: Mutex<Option<(&'static str, usize, Backtrace)>> = Mutex::new(None);

thread_local! {
    /// This thread is measuring.
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    /// Allocator calls by this thread while `MEASURING`.
    static THREAD_CALLS: Cell<usize> = const { Cell::new(0) };
    /// Inside the recording of a call (the backtrace allocates).
    static IN_HOOK: Cell<bool> = const { Cell::new(false) };
}

fn note(what: &'static str, size: usize) {
    if ARMED.load(Relaxed) && !IN_HOOK.with(Cell::get) && !excluded_thread() {
        let n = PROCESS_CALLS.fetch_add(1, Relaxed);
        if n == 0 && !MEASURING.with(Cell::get) {
            IN_HOOK.with(|h| h.set(true));
            let bt = Backtrace::force_capture();
            if let Ok(mut f) = FIRST_OTHER.lock() {
                *f = Some((what, size, bt));
            }
            IN_HOOK.with(|h| h.set(false));
        }
    }
    let _ = MEASURING.try_with(|m| {
        if !m.get() || IN_HOOK.with(Cell::get) {
            return;
        }
        let n = THREAD_CALLS.with(|c| {
            c.set(c.get() + 1);
            c.get()
        });
        if n == 1 {
            IN_HOOK.with(|h| h.set(true));
            let bt = Backtrace::force_capture();
            if let Ok(mut f) = FIRST.lock() {
                *f = Some((what, size, bt));
            }
            IN_HOOK.with(|h| h.set(false));
        }
    });
}

/// Threads whose allocations are not the hot path's: the process's main thread,
/// where the test harness waits for the test thread (its first wait sets up a
/// channel context), and the sync tracking publisher, which copies the tracked
/// objects to shared memory every 50 ms (`sync::PUBLISH_PERIOD`) off the hot path.
fn excluded_thread() -> bool {
    // SAFETY: gettid and getpid have no arguments; PR_GET_NAME writes at most 16
    // bytes into the 16-byte buffer. Only made while `ARMED`.
    unsafe {
        if libc::gettid() == libc::getpid() {
            return true;
        }
        let mut name = [0u8; 16];
        libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr());
        name.starts_with(b"posixrt-syncpub\0")
    }
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counting
// touches only atomics and const-initialised thread-locals (no allocation), except
// the backtrace of the first counted call, which runs with `IN_HOOK` set so it is
// not counted itself.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note("alloc", layout.size());
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note("alloc_zeroed", layout.size());
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note("realloc", new_size);
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note("dealloc", layout.size());
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---------------------------------------------------------------------------
// The cases
// ---------------------------------------------------------------------------

/// One hot path, set up and warmed up in the child.
struct Case {
    /// One iteration of the measured path.
    step: Box<dyn FnMut()>,
    /// Iterations for warm-up and for the measurement.
    warm: usize,
    runs: usize,
    /// The measured runs last at least about this long (a calibration loop after
    /// the warm-up counts how many steps fit): long enough to span the tracking
    /// publisher's 50 ms period and any other time-driven slow path.
    min_time: Duration,
    /// System calls the path is documented to make (seccomp allows them).
    allowed: &'static [libc::c_long],
    /// Trap `clock_nanosleep`, count it, and emulate it (spin to the deadline).
    count_nanosleep: bool,
    /// Run after the measurement (allocation mode) with the number of steps taken:
    /// the path did its work.
    check: Box<dyn Fn(u64)>,
}

impl Case {
    fn new(step: impl FnMut() + 'static) -> Case {
        Case {
            step: Box::new(step),
            warm: 100,
            runs: 1000,
            min_time: Duration::from_millis(60),
            allowed: &[],
            count_nanosleep: false,
            check: Box::new(|_| ()),
        }
    }
}

const LOCK_KINDS: [&str; 9] = [
    "pi",
    "ceiling_cached",
    "normal",
    "recursive",
    "rwlock_read",
    "rwlock_write",
    "semaphore",
    "ceiling_default",
    "ceiling_raise",
];

/// Moves the calling thread to SCHED_FIFO `prio`; false without the privilege.
fn make_fifo(prio: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: plain syscall on the calling thread with a valid parameter.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// After the runs: every step took the lock (`value` counts them), and tracking saw
/// each one when on and nothing when off.
fn lock_check(
    counts: bool,
    value: impl Fn() -> u64 + 'static,
    snapshot: impl Fn() -> Option<sync::Snapshot> + 'static,
) -> Box<dyn Fn(u64)> {
    Box::new(move |steps| {
        assert_eq!(value(), steps, "every step ran once");
        match snapshot() {
            Some(s) => {
                assert!(counts, "tracking is off, yet the object is known: {s:?}");
                let seen = s.stats.locks + s.stats.read_locks;
                assert!(seen >= steps, "tracking counted {seen} of {steps} steps");
            }
            None => assert!(!counts, "tracking is on, yet the object is unknown"),
        }
    })
}

/// A lock+unlock of a `lock_api` mutex per step.
fn mutex_case<R: lock_api::RawMutex + 'static>(
    m: lock_api::Mutex<R, u64>,
    counts: bool,
    snapshot: fn(&R) -> Option<sync::Snapshot>,
) -> Case {
    let m = Rc::new(m);
    let (step_m, value_m) = (Rc::clone(&m), Rc::clone(&m));
    let mut c = Case::new(move || *step_m.lock() += 1);
    c.check = lock_check(
        counts,
        move || *value_m.lock(),
        // SAFETY: the raw lock is only asked for its snapshot.
        move || snapshot(unsafe { m.raw() }),
    );
    c
}

/// A priority-ceiling mutex of ceiling 1, if this thread may lock it (the raise
/// to SCHED_FIFO needs CAP_SYS_NICE).
fn ceiling_1() -> Option<CeilingMutex<u64>> {
    let m: CeilingMutex<u64> = ceiling_mutex(1, 0).expect("ceiling 1");
    let ok = sync::MutexExt::lock_checked(&m).is_ok();
    ok.then_some(m)
}

/// A lock case; `None` when the case needs a privilege this process lacks.
fn lock_case(kind: &str, level: Tracking) -> Option<Case> {
    sync::set_tracking(level);
    let counts = level != Tracking::Off;
    let case = match kind {
        "pi" => mutex_case(PiMutex::new(0), counts, RawPiMutex::snapshot),
        "normal" => mutex_case(NormalMutex::new(0), counts, RawNormalMutex::snapshot),
        "recursive" => {
            let m = Rc::new(RecursiveMutex::new(Cell::new(0u64)));
            let (step_m, value_m) = (Rc::clone(&m), Rc::clone(&m));
            let mut c = Case::new(move || {
                let outer = step_m.lock();
                let inner = step_m.lock();
                inner.set(inner.get() + 1);
                drop(outer);
            });
            c.check = lock_check(counts, move || value_m.lock().get(), move || m.snapshot());
            c
        }
        "rwlock_read" => {
            let m = Rc::new(RwLock::new(0u64));
            let n = Rc::new(Cell::new(0u64));
            let (step_m, step_n) = (Rc::clone(&m), Rc::clone(&n));
            let mut c = Case::new(move || {
                let g = step_m.read();
                step_n.set(step_n.get() + 1 + *g);
            });
            // SAFETY: the raw lock is only asked for its snapshot.
            c.check = lock_check(
                counts,
                move || n.get(),
                move || unsafe { m.raw() }.snapshot(),
            );
            c
        }
        "rwlock_write" => {
            let m = Rc::new(RwLock::new(0u64));
            let (step_m, value_m) = (Rc::clone(&m), Rc::clone(&m));
            let mut c = Case::new(move || *step_m.write() += 1);
            c.check = lock_check(
                counts,
                move || *value_m.read(),
                // SAFETY: the raw lock is only asked for its snapshot.
                move || unsafe { m.raw() }.snapshot(),
            );
            c
        }
        "semaphore" => {
            let s = Rc::new(Semaphore::new(0).expect("semaphore"));
            let n = Rc::new(Cell::new(0u64));
            let (step_s, step_n) = (Rc::clone(&s), Rc::clone(&n));
            let mut c = Case::new(move || {
                step_s.post().expect("sem_post");
                step_s.wait();
                step_n.set(step_n.get() + 1);
            });
            c.check = lock_check(
                counts,
                {
                    let s = Rc::clone(&s);
                    move || {
                        assert_eq!(s.value(), 0, "every post was taken");
                        n.get()
                    }
                },
                move || s.snapshot(),
            );
            c
        }
        // The thread runs at SCHED_FIFO 1, the mutex's ceiling, with the base cached:
        // the documented syscall-free configuration.
        "ceiling_cached" => {
            if !make_fifo(1) {
                return None;
            }
            sync::cache_ceiling_base(true);
            mutex_case(ceiling_1()?, counts, RawCeilingMutex::snapshot)
        }
        // The default: each outermost lock reads the base (one `sched_getattr`).
        "ceiling_default" => {
            if !make_fifo(1) {
                return None;
            }
            let mut c = mutex_case(ceiling_1()?, counts, RawCeilingMutex::snapshot);
            c.allowed = &[libc::SYS_sched_getattr];
            c
        }
        // A SCHED_OTHER thread: each lock raises it to SCHED_FIFO 1 and each unlock
        // restores it (read, raise, restore: the protocol's three calls).
        "ceiling_raise" => {
            let mut c = mutex_case(ceiling_1()?, counts, RawCeilingMutex::snapshot);
            c.allowed = &[libc::SYS_sched_getattr, libc::SYS_sched_setattr];
            c
        }
        other => panic!("unknown lock kind {other}"),
    };
    Some(case)
}

/// A trace stream running, stopped, or filtering the measured event id; afterwards
/// the stream holds every measured event (running) or none of them.
fn trace_case(which: &str) -> Case {
    let mut attr = TraceAttr::new();
    attr.set_stream_size(1 << 20).expect("stream size");
    let t = Rc::new(Trace::create(&attr).expect("posix_trace_create"));
    let id = trace::eventid_open("rt-safety").expect("eventid_open");
    let other = trace::eventid_open("rt-safety other").expect("eventid_open");
    t.start().expect("posix_trace_start");
    // The thread's sub-buffer is mapped on its first event: part of the set-up.
    trace::event(id, &0u64.to_le_bytes());
    let running = match which {
        "running" => true,
        "stopped" => {
            t.stop().expect("posix_trace_stop");
            false
        }
        "filtered" => {
            let mut set = EventSet::empty();
            set.add(id);
            t.set_filter(&set, FilterHow::Set)
                .expect("posix_trace_set_filter");
            false
        }
        w => panic!("unknown trace case {w}"),
    };
    let mut n = 0u64;
    let step_t = Rc::clone(&t);
    // A running stream holds every event only while they fit: bound by count.
    let min_time = if running {
        Duration::ZERO
    } else {
        Duration::from_millis(60)
    };
    let mut c = Case::new(move || {
        n += 1;
        trace::event(id, &n.to_le_bytes());
        let _ = &step_t;
    });
    c.min_time = min_time;
    let filtered = which == "filtered";
    c.check = Box::new(move |steps| {
        if filtered {
            // The stream was running: another id still records.
            trace::event(other, &[]);
        }
        let _ = t.stop();
        let all: Vec<_> = t.events().collect();
        let ours: Vec<_> = all.iter().filter(|e| e.id == id).collect();
        let want = if running { 1 + steps } else { 1 };
        assert_eq!(ours.len() as u64, want, "events of the measured id");
        let last = ours.last().expect("the set-up event");
        let want_last = if running { steps } else { 0 };
        assert_eq!(last.data, want_last.to_le_bytes());
        let others = all.iter().filter(|e| e.id == other).count();
        assert_eq!(others, usize::from(filtered), "events of the other id");
    });
    c
}

/// The set-up of case `name`, or why it cannot run here.
fn case(name: &str) -> Result<Case, String> {
    Ok(match name {
        "trace_running" => trace_case("running"),
        "trace_stopped" => trace_case("stopped"),
        "trace_filtered" => trace_case("filtered"),
        "mark_update" => {
            let mut i = 0usize;
            const MARKS: [&str; 2] = ["worker: step 17", "worker: a longer marker, step 18"];
            let mut c = Case::new(move || {
                i += 1;
                mark::update(MARKS[i % 2]).expect("mark::update");
            });
            c.check = Box::new(|steps| {
                assert_eq!(mark::current().as_deref(), Some(MARKS[steps as usize % 2]));
            });
            // Documented: one `fstat` per second per process at most, which
            // looks for a registry file deleted under it (`mark::update`).
            c.allowed = &[libc::SYS_fstat];
            c
        }
        // `mark::set` with an unchanged 15-byte prefix: the kernel name is not
        // rewritten, so no `prctl`.
        "mark_set_same_prefix" => {
            let mut i = 0u64;
            let mut text = [0u8; 32];
            text[..15].copy_from_slice(b"worker 3: step ");
            let mut c = Case::new(move || {
                i += 1;
                let n = put_dec(&mut text, 15, i);
                let marker = std::str::from_utf8(&text[..n]).expect("ASCII");
                mark::set(marker).expect("mark::set");
            });
            c.check = Box::new(|steps| {
                let want = format!("worker 3: step {steps}");
                assert_eq!(mark::current().as_deref(), Some(want.as_str()));
            });
            // As for `mark_update`.
            c.allowed = &[libc::SYS_fstat];
            c
        }
        "periodic" => {
            let mut p = Periodic::new(Duration::from_millis(1)).expect("periodic 1 ms");
            // (expected time, overruns) of the previous wake-up, and the count.
            let prev = Rc::new(Cell::new((0i64, 0u64, 0u64)));
            let step_prev = Rc::clone(&prev);
            let mut c = Case::new(move || {
                let w = p.wait().expect("clock_nanosleep");
                assert!(w.latency_ns >= 0, "woke before the deadline: {w:?}");
                let (at, missed, n) = step_prev.get();
                if n > 0 {
                    let next = at + (1 + missed as i64) * 1_000_000;
                    assert_eq!(w.expected_ns, next, "the next period");
                }
                step_prev.set((w.expected_ns, w.overruns, n + 1));
            });
            c.check = Box::new(move |steps| assert_eq!(prev.get().2, steps));
            c.warm = 2;
            c.runs = 5;
            c.min_time = Duration::ZERO;
            c.count_nanosleep = true;
            c
        }
        "aio_read" => {
            let aio = Aio::builder().backend(Backend::Uring).build();
            let aio = match aio {
                Ok(a) => a,
                // A sandbox that refuses io_uring (EPERM from seccomp, ENOSYS).
                Err(e) if matches!(e.errno(), Some(libc::EPERM | libc::ENOSYS)) => {
                    return Err(format!("io_uring is refused here: {e}"));
                }
                Err(e) => panic!("io_uring: {e}"),
            };
            let f = std::fs::File::from(
                rustix::fs::memfd_create("rt-safety", rustix::fs::MemfdFlags::CLOEXEC)
                    .expect("memfd"),
            );
            std::io::Write::write_all(&mut &f, &[7u8; 4096]).expect("write");
            let mut buf = Some(vec![0u8; 4096]);
            let reads = Rc::new(Cell::new(0u64));
            let step_reads = Rc::clone(&reads);
            let mut c = Case::new(move || {
                let mut b = buf.take().expect("the buffer is back");
                b.fill(0);
                let mut r = aio.read(&f, 0, b).expect("aio_read");
                let done = r.wait().expect("aio_suspend");
                assert_eq!(*done.result.as_ref().expect("aio_return"), 4096);
                assert!(done.data().iter().all(|&x| x == 7), "the data was read");
                buf = done.buf;
                step_reads.set(step_reads.get() + 1);
            });
            c.check = Box::new(move |steps| assert_eq!(reads.get(), steps));
            c.warm = 20;
            c.runs = 200;
            c.allowed = &[libc::SYS_io_uring_enter];
            c
        }
        other => {
            let (kind, level) = if let Some(k) = other.strip_suffix("_counts") {
                (k, Tracking::Counts)
            } else if let Some(k) = other.strip_suffix("_timing") {
                (k, Tracking::Timing)
            } else if let Some(k) = other.strip_suffix("_off") {
                (k, Tracking::Off)
            } else {
                panic!("unknown case {other}")
            };
            assert!(LOCK_KINDS.contains(&kind), "unknown case {other}");
            return lock_case(kind, level)
                .ok_or_else(|| "needs CAP_SYS_NICE or RLIMIT_RTPRIO (SCHED_FIFO)".to_string());
        }
    })
}

// ---------------------------------------------------------------------------
// The child
// ---------------------------------------------------------------------------

/// The child's exit status after a measured run without a trap.
const EXIT_CLEAN: i32 = 42;
/// The child's exit status after a trapped system call.
const EXIT_TRAPPED: i32 = 43;
/// The fd the SIGSYS handler reports on (a dup of stderr).
static REPORT_FD: AtomicUsize = AtomicUsize::new(2);
/// Emulate and count `clock_nanosleep` in the handler.
static COUNT_NANOSLEEP: AtomicBool = AtomicBool::new(false);
static NANOSLEEPS: AtomicUsize = AtomicUsize::new(0);

#[test]
#[ignore = "entry point of the child processes started by the other tests"]
fn child_entry() {
    let name = std::env::var("POSIXRT_RT_CASE").expect("run by the parent tests");
    let mode = std::env::var("POSIXRT_RT_MODE").expect("run by the parent tests");
    let mut c = match case(&name) {
        Ok(c) => c,
        Err(why) => {
            println!("SKIP {name}: {why}");
            return;
        }
    };
    // `POSIXRT_RT_WARM` overrides the warm-up (0 shows what a cold first call costs).
    if let Some(w) = std::env::var("POSIXRT_RT_WARM")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.warm = w;
    }
    for _ in 0..c.warm {
        (c.step)();
    }
    let t0 = std::time::Instant::now();
    let mut fit = 0;
    while t0.elapsed() < c.min_time {
        (c.step)();
        fit += 1;
    }
    c.warm += fit;
    c.runs = c.runs.max(fit);
    inject(&mut c);
    match mode.as_str() {
        "alloc" => {
            ARMED.store(true, Relaxed);
            MEASURING.with(|m| m.set(true));
            for _ in 0..c.runs {
                (c.step)();
            }
            MEASURING.with(|m| m.set(false));
            ARMED.store(false, Relaxed);
            (c.check)((c.warm + c.runs) as u64);
            println!("CHECKED the path did its work");
            let thread = THREAD_CALLS.with(Cell::get);
            let process = PROCESS_CALLS.load(Relaxed);
            println!(
                "RESULT {name} runs={} thread_allocs={thread} process_allocs={process}",
                c.runs
            );
            if let Some((what, size, bt)) = FIRST.lock().expect("first").take() {
                println!("FIRST {what} of {size} bytes at:\n{bt}");
            }
            if let Some((what, size, bt)) = FIRST_OTHER.lock().expect("first").take() {
                println!("FIRST_OTHER_THREAD {what} of {size} bytes at:\n{bt}");
            }
        }
        "syscalls" => syscalls(c),
        m => panic!("unknown mode {m}"),
    }
}

/// `POSIXRT_RT_INJECT` adds a fault to each measured step, to show the checks see
/// it: `alloc` (a `Vec::with_capacity(1)`), `syscall` (a `getpid`), or
/// `helper_alloc` (another thread allocates once during the measurement).
fn inject(c: &mut Case) {
    let what = std::env::var("POSIXRT_RT_INJECT").unwrap_or_default();
    let mut step = std::mem::replace(&mut c.step, Box::new(|| ()));
    c.step = match what.as_str() {
        "" => step,
        "alloc" => Box::new(move || {
            step();
            std::hint::black_box(Vec::<u8>::with_capacity(1));
        }),
        "syscall" => Box::new(move || {
            step();
            // SAFETY: getpid has no preconditions.
            std::hint::black_box(unsafe { libc::getpid() });
        }),
        "helper_alloc" => {
            static GO: AtomicBool = AtomicBool::new(false);
            static DONE: AtomicBool = AtomicBool::new(false);
            std::thread::spawn(|| {
                while !GO.load(Relaxed) {
                    std::thread::yield_now();
                }
                std::hint::black_box(Vec::<u8>::with_capacity(1));
                DONE.store(true, Relaxed);
            });
            Box::new(move || {
                step();
                GO.store(true, Relaxed);
                // Yield: both threads may be SCHED_FIFO on one CPU.
                while !DONE.load(Relaxed) {
                    std::thread::yield_now();
                }
            })
        }
        other => panic!("unknown POSIXRT_RT_INJECT={other}"),
    };
}

#[cfg(target_arch = "x86_64")]
fn syscalls(mut c: Case) -> ! {
    // SAFETY: F_DUPFD_CLOEXEC on stderr, no memory involved.
    let fd = unsafe { libc::fcntl(2, libc::F_DUPFD_CLOEXEC, 100) };
    assert!(fd >= 100, "dup of stderr");
    REPORT_FD.store(fd as usize, Relaxed);
    COUNT_NANOSLEEP.store(c.count_nanosleep, Relaxed);
    install_sigsys_handler();
    let runs = c.runs;
    println!("FILTER on");
    install_filter(fd as u32, c.allowed, c.count_nanosleep);
    for _ in 0..runs {
        (c.step)();
    }
    // Still under the filter: report with the allowed `write` and leave.
    let mut buf = [0u8; 64];
    let mut n = put(&mut buf, 0, b"CLEAN nanosleeps=");
    n = put_dec(&mut buf, n, NANOSLEEPS.load(Relaxed) as u64);
    n = put(&mut buf, n, b"\n");
    report_and_exit(&buf[..n], EXIT_CLEAN)
}

#[cfg(not(target_arch = "x86_64"))]
fn syscalls(_c: Case) -> ! {
    println!("SKIP the seccomp check is written for x86-64");
    std::process::exit(EXIT_CLEAN)
}

fn put(buf: &mut [u8], at: usize, s: &[u8]) -> usize {
    let n = s.len().min(buf.len() - at);
    buf[at..at + n].copy_from_slice(&s[..n]);
    at + n
}

fn put_dec(buf: &mut [u8], at: usize, mut v: u64) -> usize {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    put(buf, at, &digits[i..])
}

fn put_hex(buf: &mut [u8], at: usize, v: u64) -> usize {
    let mut digits = [0u8; 16];
    for (i, d) in digits.iter_mut().enumerate() {
        let nib = (v >> (60 - 4 * i)) & 0xf;
        *d = b"0123456789abcdef"[nib as usize];
    }
    put(buf, at, &digits)
}

/// Writes `msg` to the report fd and ends the process: async-signal-safe, and only
/// the two system calls the filter allows.
fn report_and_exit(msg: &[u8], code: i32) -> ! {
    // SAFETY: a write from a live buffer, then exit_group; neither touches memory
    // that another thread could be changing.
    unsafe {
        libc::write(
            REPORT_FD.load(Relaxed) as i32,
            msg.as_ptr().cast(),
            msg.len(),
        );
        libc::syscall(libc::SYS_exit_group, code as libc::c_long);
    }
    unreachable!("exit_group returned")
}

#[cfg(target_arch = "x86_64")]
extern "C" fn on_sigsys(_sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // siginfo_t for SIGSYS: `void *si_call_addr` at byte 16, `int si_syscall` at 24.
    // SAFETY: the kernel passes a valid siginfo_t of a SIGSYS.
    let (addr, nr) = unsafe {
        let p = info.cast::<u8>();
        (
            p.add(16).cast::<u64>().read_unaligned(),
            p.add(24).cast::<i32>().read_unaligned(),
        )
    };
    if nr as libc::c_long == libc::SYS_clock_nanosleep && COUNT_NANOSLEEP.load(Relaxed) {
        // SAFETY: `ctx` is the interrupted thread's ucontext_t.
        unsafe { emulate_nanosleep(ctx.cast()) };
        NANOSLEEPS.fetch_add(1, Relaxed);
        return;
    }
    let mut buf = [0u8; 96];
    let mut n = put(&mut buf, 0, b"TRAP syscall=");
    n = put_dec(&mut buf, n, nr as u64);
    n = put(&mut buf, n, b" addr=0x");
    n = put_hex(&mut buf, n, addr);
    n = put(&mut buf, n, b"\n");
    report_and_exit(&buf[..n], EXIT_TRAPPED)
}

/// `clock_nanosleep(clock, flags, request, remain)` done in user space: spin on the
/// (vDSO) clock until the absolute deadline, return 0.
///
/// # Safety
/// `uc` is the ucontext of a trapped `clock_nanosleep` on x86-64.
#[cfg(target_arch = "x86_64")]
unsafe fn emulate_nanosleep(uc: *mut libc::ucontext_t) {
    // SAFETY: per the contract, the registers hold the syscall's arguments; the
    // request pointer is the caller's live timespec.
    unsafe {
        let g = &mut (*uc).uc_mcontext.gregs;
        let clock = g[libc::REG_RDI as usize] as libc::clockid_t;
        let flags = g[libc::REG_RSI as usize] as i32;
        let req = *(g[libc::REG_RDX as usize] as *const libc::timespec);
        let ok = flags == libc::TIMER_ABSTIME;
        if ok {
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            loop {
                libc::clock_gettime(clock, &mut now);
                if (now.tv_sec, now.tv_nsec) >= (req.tv_sec, req.tv_nsec) {
                    break;
                }
                std::hint::spin_loop();
            }
        }
        g[libc::REG_RAX as usize] = if ok { 0 } else { -(libc::EINVAL as i64) };
    }
}

#[cfg(target_arch = "x86_64")]
fn install_sigsys_handler() {
    // SAFETY: a zeroed sigaction is valid; the handler is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_sigsys as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGSYS, &sa, std::ptr::null_mut()),
            0,
            "sigaction"
        );
    }
}

/// The calling thread's filter: allow `exit_group`, `write` to `report_fd`, the
/// `allowed` calls (and `rt_sigreturn` when the handler returns), trap the rest.
#[cfg(target_arch = "x86_64")]
fn install_filter(report_fd: u32, allowed: &[libc::c_long], handler_returns: bool) {
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const OFF_NR: u32 = 0;
    const OFF_ARCH: u32 = 4;
    const OFF_ARG0: u32 = 16;
    let st = |code, k| libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    };
    let jeq = |k, jt, jf| libc::sock_filter {
        code: JEQ_K,
        jt,
        jf,
        k,
    };
    let mut allow: Vec<u32> = vec![libc::SYS_exit_group as u32];
    allow.extend(allowed.iter().map(|&n| n as u32));
    if handler_returns {
        allow.push(libc::SYS_rt_sigreturn as u32);
    }
    let mut f = vec![
        st(LD_W_ABS, OFF_ARCH),
        jeq(AUDIT_ARCH_X86_64, 1, 0),
        st(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        st(LD_W_ABS, OFF_NR),
    ];
    // Each allowed number jumps to the ALLOW at the end.
    let n = allow.len();
    for (i, &nr) in allow.iter().enumerate() {
        // Skipped to reach ALLOW: the remaining jeqs and the write check (jeq, ld,
        // jeq) and TRAP.
        let to_allow = (n - 1 - i) + 4;
        f.push(jeq(nr, to_allow as u8, 0));
    }
    // write(report_fd, ..) only.
    f.push(jeq(libc::SYS_write as u32, 0, 2));
    f.push(st(LD_W_ABS, OFF_ARG0));
    f.push(jeq(report_fd, 1, 0));
    f.push(st(RET_K, libc::SECCOMP_RET_TRAP));
    f.push(st(RET_K, libc::SECCOMP_RET_ALLOW));
    let prog = libc::sock_fprog {
        len: f.len() as u16,
        filter: f.as_mut_ptr(),
    };
    // SAFETY: prctl and seccomp with a valid program that outlives the calls; the
    // filter binds the calling thread only (no TSYNC).
    unsafe {
        assert_eq!(
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0),
            0,
            "no_new_privs"
        );
        assert_eq!(
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                &prog as *const libc::sock_fprog,
            ),
            0,
            "seccomp"
        );
    }
    // `f` is not freed: the measured path runs next and exits the process.
    std::mem::forget(f);
}

// ---------------------------------------------------------------------------
// The parent side
// ---------------------------------------------------------------------------

struct Outcome {
    code: Option<i32>,
    text: String,
}

/// Runs one case in a child; `inject` sets `POSIXRT_RT_INJECT` (else the child
/// inherits the parent's, for a manual check that every test can fail).
fn run_child(name: &str, mode: &str, inject: Option<&str>) -> Outcome {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    if let Some(i) = inject {
        cmd.env("POSIXRT_RT_INJECT", i);
    }
    let child = cmd
        .args([
            "--ignored",
            "--exact",
            "child_entry",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("POSIXRT_RT_CASE", name)
        .env("POSIXRT_RT_MODE", mode)
        .env_remove("POSIXRT_AIO_BACKEND")
        .env("RUST_BACKTRACE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the child");
    let pid = child.id();
    let out = child.wait_with_output().expect("the child's output");
    remove_registry_files(pid);
    Outcome {
        code: out.status.code(),
        text: format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// A child that ends in `exit_group` skips its exit handlers: remove the shared
/// memory registries (`posixrt-<kind>-<pid>-<start>`: marks, sync tracking) it made.
fn remove_registry_files(pid: u32) {
    let Ok(dir) = std::fs::read_dir("/dev/shm") else {
        return;
    };
    let pid = pid.to_string();
    for e in dir.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        let Some(rest) = name.strip_prefix("posixrt-") else {
            continue;
        };
        // <kind>-<pid>-<start>
        if rest.rsplit('-').nth(1) == Some(pid.as_str()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn skipped(o: &Outcome, name: &str) -> bool {
    if o.text.contains("SKIP ") {
        eprintln!("{name}: skipped:\n{}", o.text);
        return true;
    }
    false
}

/// What a child measured in allocation mode.
struct Allocs {
    /// Measured steps.
    runs: usize,
    /// Allocator calls by the measuring thread.
    thread: usize,
    /// Allocator calls by every thread but the excluded ones.
    process: usize,
    /// The child's output.
    text: String,
}

/// The allocator calls the measured runs made; `None` when the case was skipped.
fn alloc_calls(name: &str, inject: Option<&str>) -> Option<Allocs> {
    let o = run_child(name, "alloc", inject);
    if skipped(&o, name) {
        return None;
    }
    assert!(
        o.code == Some(0) && o.text.contains("test result: ok. 1 passed"),
        "{name}: child failed (status {:?}):\n{}",
        o.code,
        o.text
    );
    let line = o
        .text
        .lines()
        .find_map(|l| l.find("RESULT ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("{name}: no RESULT line:\n{}", o.text));
    let field = |key: &str| -> usize {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: no {key} in {line}"))
    };
    assert!(
        o.text.contains("CHECKED"),
        "{name}: no CHECKED line:\n{}",
        o.text
    );
    Some(Allocs {
        runs: field("runs="),
        thread: field("thread_allocs="),
        process: field("process_allocs="),
        text: o.text,
    })
}

/// Zero allocator calls by the measuring thread (and by the process where the case
/// has no helper thread).
fn assert_no_alloc(name: &str) {
    if let Some(a) = alloc_calls(name, None) {
        assert_eq!(
            (a.thread, a.process),
            (0, 0),
            "{name}: the hot path called the allocator (thread, all threads):\n{}",
            a.text
        );
    }
}

/// The measured path ran under the filter without a trap; returns the count of
/// emulated `clock_nanosleep` calls.
fn assert_no_syscall(name: &str) -> usize {
    let o = run_child(name, "syscalls", None);
    if skipped(&o, name) {
        return 0;
    }
    assert!(
        o.text.contains("FILTER on"),
        "{name}: the child did not reach the filter (status {:?}):\n{}",
        o.code,
        o.text
    );
    assert_eq!(
        o.code,
        Some(EXIT_CLEAN),
        "{name}: the hot path made a system call (syscall numbers: \
         /usr/include/asm/unistd_64.h; addresses are in the test binary):\n{}",
        o.text
    );
    let line = o
        .text
        .lines()
        .find_map(|l| l.find("CLEAN ").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("{name}: no CLEAN line:\n{}", o.text));
    line.trim_start_matches("CLEAN nanosleeps=")
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{name}: bad line {line}"))
}

macro_rules! cases {
    ($($alloc:ident, $sys:ident => $name:literal;)*) => {
        $(
            #[test]
            fn $alloc() {
                assert_no_alloc($name);
            }

            #[test]
            fn $sys() {
                assert_eq!(assert_no_syscall($name), 0);
            }
        )*
    };
}

cases! {
    alloc_trace_running, syscalls_trace_running => "trace_running";
    alloc_trace_stopped, syscalls_trace_stopped => "trace_stopped";
    alloc_trace_filtered, syscalls_trace_filtered => "trace_filtered";
    alloc_mark_update, syscalls_mark_update => "mark_update";
    alloc_pi_off, syscalls_pi_off => "pi_off";
    alloc_pi_counts, syscalls_pi_counts => "pi_counts";
    alloc_ceiling_cached_off, syscalls_ceiling_cached_off => "ceiling_cached_off";
    alloc_ceiling_cached_counts, syscalls_ceiling_cached_counts => "ceiling_cached_counts";
    alloc_ceiling_default_off, syscalls_ceiling_default_off => "ceiling_default_off";
    alloc_ceiling_default_counts, syscalls_ceiling_default_counts => "ceiling_default_counts";
    alloc_ceiling_raise_off, syscalls_ceiling_raise_off => "ceiling_raise_off";
    alloc_ceiling_raise_counts, syscalls_ceiling_raise_counts => "ceiling_raise_counts";
    alloc_mark_set_same_prefix, syscalls_mark_set_same_prefix => "mark_set_same_prefix";
    alloc_pi_timing, syscalls_pi_timing => "pi_timing";
    alloc_ceiling_cached_timing, syscalls_ceiling_cached_timing => "ceiling_cached_timing";
    alloc_normal_timing, syscalls_normal_timing => "normal_timing";
    alloc_recursive_timing, syscalls_recursive_timing => "recursive_timing";
    alloc_rwlock_read_timing, syscalls_rwlock_read_timing => "rwlock_read_timing";
    alloc_rwlock_write_timing, syscalls_rwlock_write_timing => "rwlock_write_timing";
    alloc_semaphore_timing, syscalls_semaphore_timing => "semaphore_timing";
    alloc_normal_off, syscalls_normal_off => "normal_off";
    alloc_normal_counts, syscalls_normal_counts => "normal_counts";
    alloc_recursive_off, syscalls_recursive_off => "recursive_off";
    alloc_recursive_counts, syscalls_recursive_counts => "recursive_counts";
    alloc_rwlock_read_off, syscalls_rwlock_read_off => "rwlock_read_off";
    alloc_rwlock_read_counts, syscalls_rwlock_read_counts => "rwlock_read_counts";
    alloc_rwlock_write_off, syscalls_rwlock_write_off => "rwlock_write_off";
    alloc_rwlock_write_counts, syscalls_rwlock_write_counts => "rwlock_write_counts";
    alloc_semaphore_off, syscalls_semaphore_off => "semaphore_off";
    alloc_semaphore_counts, syscalls_semaphore_counts => "semaphore_counts";
}

#[test]
fn alloc_periodic() {
    assert_no_alloc("periodic");
}

/// Each wait is exactly one `clock_nanosleep` (trapped, counted and emulated by
/// spinning to the deadline) and nothing else.
#[test]
fn syscalls_periodic_one_nanosleep_per_wait() {
    assert_eq!(assert_no_syscall("periodic"), 5);
}

#[test]
fn alloc_aio_read_reusing_buffer() {
    assert_no_alloc("aio_read");
}

/// Not required (AIO needs `io_uring_enter`), but shows what else the path calls.
#[test]
fn syscalls_aio_read_only_io_uring_enter() {
    assert_eq!(assert_no_syscall("aio_read"), 0);
}

// ---------------------------------------------------------------------------
// The checks can fail
// ---------------------------------------------------------------------------

/// One `Vec::with_capacity(1)` per step: an alloc and a dealloc each, all seen.
#[test]
fn checker_sees_an_allocation() {
    let a = alloc_calls("normal_off", Some("alloc")).expect("runs");
    assert!(a.runs >= 1000, "{}", a.text);
    assert_eq!(
        (a.thread, a.process),
        (2 * a.runs, 2 * a.runs),
        "{}",
        a.text
    );
}

/// Another thread's allocation during the measurement is seen process-wide.
#[test]
fn checker_sees_a_helper_thread_allocation() {
    let a = alloc_calls("normal_off", Some("helper_alloc")).expect("runs");
    assert_eq!(a.thread, 0, "{}", a.text);
    assert!(a.process >= 1, "{}", a.text);
}

/// A `getpid` in the step traps and names the call.
#[cfg(target_arch = "x86_64")]
#[test]
fn checker_sees_a_syscall() {
    let o = run_child("normal_off", "syscalls", Some("syscall"));
    assert_eq!(o.code, Some(EXIT_TRAPPED), "{}", o.text);
    let want = format!("TRAP syscall={} addr=0x", libc::SYS_getpid);
    assert!(o.text.contains(&want), "{}", o.text);
}

/// The periodic timer's own `clock_nanosleep` is counted, and any other call traps.
#[cfg(target_arch = "x86_64")]
#[test]
fn checker_sees_a_syscall_beside_nanosleep() {
    let o = run_child("periodic", "syscalls", Some("syscall"));
    assert_eq!(o.code, Some(EXIT_TRAPPED), "{}", o.text);
    assert!(
        o.text
            .contains(&format!("TRAP syscall={} ", libc::SYS_getpid)),
        "{}",
        o.text
    );
}
