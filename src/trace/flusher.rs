//! The flusher thread of a stream with a log, and what makes a log survive the end
//! of its process.
//!
//! Traced threads never write files and never wake anyone (no syscall on the
//! recording path), so the flusher polls: every 2 ms when idle, every 100 µs while
//! a FLUSH stream has work. It writes
//!
//! - when a FLUSH stream's sub-buffer is an eighth full (its writers ask at half,
//!   and drop events once it is full);
//! - at least every [`TraceAttr::flush_interval`](super::TraceAttr::flush_interval)
//!   (100 ms by default) while the stream holds anything unwritten;
//! - when kicked: at process exit (`atexit`) and on a fatal signal.
//!
//! On SIGINT, SIGTERM, SIGSEGV or SIGABRT the signal handler (async-signal-safe:
//! atomics, `futex` wake, `nanosleep`) kicks every flusher and waits up to one
//! second for each to finish a flush that began after the kick, then the signal
//! takes its previous course (see `sys::process_end`). The flusher blocks those
//! signals, so a process-directed signal is never handled on it. The log is then
//! complete up to the signal but has no end record: readers report it as cut
//! ([`ErrorKind::Truncated`](crate::ErrorKind::Truncated)) after its last event.
//! If the signal interrupts a thread inside the trace reader or a flush (holding
//! the locks the flusher needs), or inside the allocator, the wait times out and
//! the log keeps what the previous periodic write left. A program that installs
//! its own handler for one of these signals after creating the stream replaces
//! this one for that signal (a handler installed before is called by it).

use std::sync::atomic::{AtomicU32, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::attr::StreamFullPolicy;
use super::flush::Marks;
use super::slots::{lock, TRACE_SYS_MAX};
use super::stream::Stream;
use crate::sys::fork::ForkOnce;
use crate::sys::{clock, futex, process, process_end};

/// Slots whose stream has a running flusher.
static LOGGED: AtomicU32 = AtomicU32::new(0);
/// Per slot: the futex word a flusher sleeps on; a kick increments it.
static WAKE: [AtomicU32; TRACE_SYS_MAX] = [const { AtomicU32::new(0) }; TRACE_SYS_MAX];
/// Per slot: the `WAKE` value seen before the flusher's last completed flush.
static DONE: [AtomicU32; TRACE_SYS_MAX] = [const { AtomicU32::new(0) }; TRACE_SYS_MAX];
/// Per slot: the flusher's tid (a fault on the flusher itself must not wait for it).
static FLUSHER_TID: [AtomicU32; TRACE_SYS_MAX] = [const { AtomicU32::new(0) }; TRACE_SYS_MAX];

/// How long a fatal signal waits for the flushers.
const SIGNAL_WAIT: Duration = Duration::from_secs(1);
/// How long process exit waits for the flushers.
const EXIT_WAIT: Duration = Duration::from_secs(2);

/// Wakes a slot's flusher.
fn wake(slot: usize) -> u32 {
    let k = WAKE[slot].fetch_add(1, AcqRel).wrapping_add(1);
    futex::wake(&WAKE[slot], 1);
    k
}

/// Asks a flusher to stop (it exits after its current flush).
pub(super) fn stop(s: &Stream) {
    s.stop_flusher.store(true, Release);
    wake(s.slot);
}

/// Kicks every flusher and waits until each has finished a flush that began after
/// the kick, or `limit` passed. Async-signal-safe: atomics, `futex`, `gettid`,
/// `clock_gettime` and `nanosleep` only.
fn kick_and_wait(limit: Duration) {
    let me = process_end::caller_tid();
    let mask = LOGGED.load(Acquire);
    let mut want = [0u32; TRACE_SYS_MAX];
    let mut wait_for = 0u32;
    for (slot, k) in want.iter_mut().enumerate() {
        if mask & (1 << slot) != 0 && FLUSHER_TID[slot].load(Acquire) != me {
            *k = wake(slot);
            wait_for |= 1 << slot;
        }
    }
    let t0 = clock::mono_ns();
    while wait_for != 0 {
        for (slot, k) in want.iter().enumerate() {
            let bit = 1 << slot;
            let done = DONE[slot].load(Acquire).wrapping_sub(*k) as i32 >= 0;
            if wait_for & bit != 0 && (done || LOGGED.load(Acquire) & bit == 0) {
                wait_for &= !bit;
            }
        }
        if wait_for == 0 || clock::mono_ns().saturating_sub(t0) > limit.as_nanos() as u64 {
            return;
        }
        // (Not a cancellation point: this runs in `exit`'s handlers and in a
        // fatal signal's, neither of which may unwind.)
        crate::sys::clock::sleep_nocancel(Duration::from_millis(1));
    }
}

fn on_fatal_signal() {
    kick_and_wait(SIGNAL_WAIT);
}

extern "C" fn at_exit() {
    kick_and_wait(EXIT_WAIT);
}

/// Writes what every stream with a log holds to its log, as at process exit
/// (waiting up to 2 s for the flushers): for a call that replaces the process
/// image (`execve` and the rest of the family), which would lose the events
/// not yet written. The streams go on as they were (an exec that fails
/// leaves them running). Async-signal-safe, as `execve` is: atomics,
/// `futex`, `clock_gettime` and `nanosleep` only.
pub fn flush_before_exec() {
    kick_and_wait(EXIT_WAIT);
}

/// Installs the exit and fatal-signal hooks and the fork reset (once).
fn install_hooks() {
    // (Repeated in a child forked while its parent ran this: registering the
    // same fork reset again is a no-op, as is the fatal-signal hook's; the
    // child may then run `at_exit` twice, each asking the flushers to write
    // and waiting at most `EXIT_WAIT`.)
    static ONCE: ForkOnce = ForkOnce::new();
    ONCE.call_once(|| {
        fn child() {
            // The parent's flushers do not exist in a forked child.
            LOGGED.store(0, Relaxed);
        }
        crate::sys::fork::on_child(child);
        process::atexit(at_exit);
        process_end::on_fatal_signal(on_fatal_signal);
    });
}

/// Starts a stream's flusher: registered for the exit and signal hooks at once
/// (a signal that comes before the thread runs still waits for its first flush),
/// with the fatal signals blocked from its first instruction.
pub(super) fn spawn(s: &Arc<Stream>) -> std::io::Result<std::thread::JoinHandle<()>> {
    install_hooks();
    let slot = s.slot;
    FLUSHER_TID[slot].store(0, Release);
    DONE[slot].store(WAKE[slot].load(Acquire), Release);
    LOGGED.fetch_or(1 << slot, AcqRel);
    let s2 = Arc::clone(s);
    let h = process_end::spawn_blocked(|| {
        std::thread::Builder::new()
            .name("posixrt-trace-flush".into())
            .spawn(move || run(s2))
    });
    if h.is_err() {
        LOGGED.fetch_and(!(1 << slot), AcqRel);
    }
    h
}

/// The flusher thread's body.
fn run(s: Arc<Stream>) {
    // Writers never wake anyone (no syscall on the recording path): poll. Idle,
    // every 2 ms; while writers keep asking for flushes, every 100 µs, since a
    // sub-buffer fills in well under a millisecond at full recording rate.
    const IDLE: Duration = Duration::from_millis(2);
    const BUSY: Duration = Duration::from_micros(100);
    let slot = s.slot;
    FLUSHER_TID[slot].store(crate::sys::tid::current(), Release);
    // Kicks since `spawn` registered the stream are served by the first pass.
    let mut served = DONE[slot].load(Acquire);
    let interval = s.attr.flush_interval();
    let mut nap = IDLE;
    let mut last = Instant::now();
    loop {
        let k = WAKE[slot].load(Acquire);
        if s.stop_flusher.load(Acquire) {
            break;
        }
        // A FLUSH stream is also written once a sub-buffer holds an eighth of its
        // size, so writers rarely reach the half where they ask (and drop past
        // the end).
        let asked = s.flush_req.swap(false, AcqRel) || s.needs_flush();
        let kicked = k != served;
        let mut due = last.elapsed() >= interval;
        if due && !asked && !kicked && !s.has_unwritten() {
            last = Instant::now(); // nothing to write: the interval starts again
            due = false;
        }
        if asked || kicked || due {
            // A FLUSH stream's flush carries its marks; a periodic or crash-time
            // write of what the stream holds does not.
            let _ = if asked {
                s.flush_now(false)
            } else {
                s.flush_with(Marks::Quiet)
            };
            last = Instant::now();
            served = k;
            DONE[slot].store(k, Release);
            nap = if asked { BUSY } else { IDLE };
        } else {
            nap = (nap * 2).min(IDLE);
        }
        if !s.flush_req.load(Acquire) {
            let deadline = (Instant::now() + nap).min(last + interval);
            let _ = futex::wait(&WAKE[slot], k, Some(deadline));
        }
    }
    LOGGED.fetch_and(!(1 << slot), AcqRel);
}

impl Stream {
    /// A FLUSH stream with a sub-buffer an eighth full. (It holds the reader
    /// lock only for a FLUSH stream, which is never suspended by fullness:
    /// no resume is left to it.)
    fn needs_flush(&self) -> bool {
        if self.policy != StreamFullPolicy::Flush {
            return false;
        }
        let _st = lock(&self.reader);
        let eighth = self.cap as u64 / 8;
        // Not while a failing log holds a full backlog: such a flush takes
        // nothing from the stream, and would be retried every 100 µs (an
        // ERROR event each time); the interval's write retries it.
        self.rings_snapshot().iter().any(|r| r.used() > eighth)
            && !self
                .log
                .as_ref()
                .is_some_and(|l| lock(l).backlog() > super::flush::MAX_BACKLOG)
    }

    /// Whether the stream holds records or log bytes not written yet.
    ///
    /// With none, it resumes an UNTIL_FULL stream read below half: a
    /// `try_getnext` that found the reader lock held here left the resume to
    /// this holder (a flush, which resumes, follows only when it holds some).
    fn has_unwritten(&self) -> bool {
        {
            let st = lock(&self.reader);
            if !st.pending.is_empty() || self.rings_snapshot().iter().any(|r| r.used() > 0) {
                return true;
            }
        }
        self.maybe_resume();
        self.log.as_ref().is_some_and(|l| lock(l).has_pending())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{self, Trace};

    /// A reader that never waits for the reader lock (`try_getnext`) leaves
    /// the resume of an UNTIL_FULL stream it read below half to the lock's
    /// holder: the flusher's look for unwritten records is one, and resumes
    /// the stream itself (it writes nothing then, so no flush does it).
    #[test]
    fn a_look_for_unwritten_records_resumes_a_stream_read_empty() {
        let (log, f) = crate::trace::scratch::Scratch::log("flusher-resume");
        let path = log.path.clone();
        let mut a = crate::trace::scratch::small_attr();
        a.set_stream_full_policy(StreamFullPolicy::UntilFull);
        let t = Trace::create_with_log(&a, f).unwrap();
        let ev = trace::eventid_open("flusher.resume").unwrap();
        t.start().unwrap();
        // The log's preamble written: the log holds nothing unwritten.
        t.flush().unwrap();
        for _ in 0..100_000 {
            if t.s.auto_suspended.load(Acquire) {
                break;
            }
            trace::event(ev, &[0; 8]);
        }
        assert!(t.s.auto_suspended.load(Acquire), "the stream filled");
        // What a try read does when its resume finds the lock held elsewhere:
        // the events are taken, the stream stays suspended.
        {
            let mut st = lock(&t.s.reader);
            while t.s.take(&mut st).is_some() {}
        }
        assert!(t.s.auto_suspended.load(Acquire));
        let unwritten = t.s.has_unwritten();
        let resumed = !t.s.auto_suspended.load(Acquire);
        let running = t.s.running();
        t.stop().unwrap();
        t.shutdown().unwrap();
        std::fs::remove_file(&path).unwrap();
        assert!(!unwritten, "every record was read");
        assert!(resumed, "the holder of the reader lock resumed the stream");
        assert!(running);
    }
}
