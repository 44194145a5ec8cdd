//! The process-wide slot table: which streams exist, which run, what each filters,
//! and the per-thread "inside a record" flags that let a stream be freed safely.
//!
//! A stream owns one of [`TRACE_SYS_MAX`] slots. The recording fast path reads only
//! these statics (and the calling thread's own sub-buffer), never a lock.

use std::sync::atomic::{
    compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering::*,
};
use std::sync::{Mutex, MutexGuard};

use super::ids::{EventId, ID_SPACE};
use super::ring::Padded;
use super::set::WORDS;
use crate::sys::clock;
use crate::sys::pilock::{PiLocked, RawPiLock};
use lock_api::RawMutex as _;

/// Streams that may exist at once in a process (`TRACE_SYS_MAX`).
pub const TRACE_SYS_MAX: usize = 8;

/// One bit per slot whose stream is running (bit `slot`), and one per slot
/// whose UNTIL_FULL stream suspended itself by fullness (bit
/// `SUSPENDED_SHIFT + slot`): events still come to the recorder for that
/// one, which counts them lost, so [`any_running`] stays one load.
pub(super) static RUNNING: AtomicU32 = AtomicU32::new(0);
/// Where the suspended-by-fullness bits of [`RUNNING`] start.
pub(super) const SUSPENDED_SHIFT: u32 = 16;
/// The slot bits of a mask.
pub(super) const SLOT_BITS: u32 = (1 << TRACE_SYS_MAX) - 1;
const _: () = assert!(TRACE_SYS_MAX as u32 <= SUSPENDED_SHIFT);
/// Per slot, the stream's generation ([`gen_of`]): odd while a stream lives in
/// the slot. Slot `s` is at `s + 1`, so the recording fast path finds it by the
/// pass entry (`slot + 1`) masked to 16, as its thread-local arrays; the other
/// entries stay 0. Unpadded: written only when a stream is created or shut down,
/// read by every recording thread (two lines, one scaled load).
pub(super) static GENS_BY_PASS: [AtomicU64; 16] = [const { AtomicU64::new(0) }; 16];

/// The generation of slot `slot`.
#[inline(always)]
pub(super) fn gen_of(slot: usize) -> &'static AtomicU64 {
    &GENS_BY_PASS[(slot & (TRACE_SYS_MAX - 1)) + 1]
}
/// Per slot, the filter: a bit per event id that is not recorded.
pub(super) static FILTERS: [Padded<[AtomicU64; WORDS]>; TRACE_SYS_MAX] =
    [const { Padded([const { AtomicU64::new(0) }; WORDS]) }; TRACE_SYS_MAX];
/// Which slots a stream holds. `PiLocked` (as are [`PASS_LOCK`] and the busy
/// lists), so a forked child can forget a holder it does not have: with a std
/// `Mutex`, a fork while another thread created, started or shut down a stream
/// left the child's first stream waiting for good
/// (`capi/tests/c/trace_fork_first_use.c`).
static SLOT_USED: PiLocked<[bool; TRACE_SYS_MAX]> =
    PiLocked::const_new(RawPiLock::INIT, [false; TRACE_SYS_MAX]);
/// Per event id, which running streams record it: 0 none, `1 + slot` exactly
/// the stream in `slot`, [`PASS_MANY`] several (each one's filter decides). All
/// zero when nothing runs, so the first check of `event()` is one byte load and a
/// branch for both the stopped and the filtered case, and the common case of one
/// stream finds its slot without reading the running mask or the filter.
static PASS: [AtomicU8; ID_SPACE] = [const { AtomicU8::new(0) }; ID_SPACE];
/// The pass table, for the C library's inline test in `<trace.h>` (an entry is
/// nonzero while some running stream records its id).
#[doc(hidden)]
pub const fn pass_table() -> &'static [AtomicU8; ID_SPACE] {
    &PASS
}
/// [`PASS`]: several running streams record the id.
pub(super) const PASS_MANY: u8 = 0xFF;
/// Serializes the updates of [`PASS`].
static PASS_LOCK: PiLocked<()> = PiLocked::const_new(RawPiLock::INIT, ());

/// Set when membarrier is unavailable: writers then pay a full fence.
pub(super) static NEED_FENCE: AtomicBool = AtomicBool::new(false);
/// The pid that owns the streams (0 in a forked child: it records nothing).
pub(super) static PID: AtomicU32 = AtomicU32::new(0);

/// A thread's "inside a record" flag, read by shutdown after a membarrier.
#[repr(align(64))]
pub(super) struct Busy(pub(super) AtomicU32);

/// Every thread's busy flag, and the flags of exited threads ready for reuse. A
/// thread's first trace event takes these, so they are priority-inheriting: an RT
/// thread's first event never waits behind a preempted low-priority thread that
/// is exiting (the hazard of issue 18's tracking registry).
static BUSY_ALL: PiLocked<Vec<&'static Busy>> = PiLocked::const_new(RawPiLock::INIT, Vec::new());
static BUSY_FREE: PiLocked<Vec<&'static Busy>> = PiLocked::const_new(RawPiLock::INIT, Vec::new());
/// The busy count of the threads that have no flag of their own while they
/// count an event lost (a signal handler's, while its thread takes its flag; an
/// event after the thread's clean-up at exit): a counter, not a flag, as any
/// number of them may be inside at once. Shutdown waits for it as for a flag.
pub(super) static SHARED_BUSY: Busy = Busy(AtomicU32::new(0));

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Recomputes `PASS` after a start, stop, filter change or shutdown.
///
/// A stream suspended by fullness takes the ids it does not filter as well,
/// always as [`PASS_MANY`]: its events take the general path, which counts
/// them lost, never the fast path into a sub-buffer with room.
pub(super) fn update_pass() {
    let _g = PASS_LOCK.lock();
    let mask = RUNNING.load(Acquire);
    let suspended = (mask >> SUSPENDED_SHIFT) & SLOT_BITS;
    let mut filters = [[!0u64; WORDS]; TRACE_SYS_MAX];
    for (slot, f) in filters.iter_mut().enumerate() {
        if (mask | suspended) & (1 << slot) != 0 {
            *f = filter_words(slot);
        }
    }
    for (id, p) in PASS.iter().enumerate() {
        let mut v = 0u8;
        for (slot, f) in filters.iter().enumerate() {
            if f[id / 64] >> (id % 64) & 1 == 0 {
                v = if v == 0 && suspended & (1 << slot) == 0 {
                    1 + slot as u8
                } else {
                    PASS_MANY
                };
            }
        }
        p.store(v, Release);
    }
}

/// Marks a slot running or not (no longer suspended by fullness either), and
/// updates the pass table.
pub(super) fn set_running(slot: usize, on: bool) {
    RUNNING.fetch_and(!(1 << (SUSPENDED_SHIFT + slot as u32)), AcqRel);
    if on {
        RUNNING.fetch_or(1 << slot, AcqRel);
    } else {
        RUNNING.fetch_and(!(1 << slot), AcqRel);
    }
    update_pass();
}

/// Marks a slot suspended by fullness (UNTIL_FULL): not running, its events
/// counted lost until [`set_running`].
pub(super) fn suspend_full(slot: usize) {
    RUNNING.fetch_or(1 << (SUSPENDED_SHIFT + slot as u32), AcqRel);
    RUNNING.fetch_and(!(1 << slot), AcqRel);
    update_pass();
}

/// Whether a slot's stream runs.
#[inline]
pub(super) fn is_running(slot: usize) -> bool {
    RUNNING.load(Acquire) & (1 << slot) != 0
}

/// Whether any stream takes events (running, or counting them lost while
/// suspended by fullness): one relaxed load.
#[inline(always)]
pub(crate) fn any_running() -> bool {
    RUNNING.load(Relaxed) != 0
}

/// Whether some running stream records `id`: one relaxed load and a test (lets a
/// trace point skip building a payload that every stream filters).
#[inline(always)]
pub(crate) fn passes(id: EventId) -> bool {
    pass_of(id.0) != 0
}

/// The pass entry of a raw id (`id < ID_SPACE`; the mask keeps the index check away).
#[inline(always)]
pub(super) fn pass_of(id: u16) -> u8 {
    PASS[id as usize & (ID_SPACE - 1)].load(Relaxed)
}

/// Whether slot `slot` filters `id` out.
#[inline]
pub(super) fn filtered(slot: usize, id: u16) -> bool {
    FILTERS[slot].0[(id as usize / 64) & (WORDS - 1)].load(Relaxed) >> (id % 64) & 1 != 0
}

/// The filter bitmap of a slot.
pub(super) fn filter_words(slot: usize) -> [u64; WORDS] {
    let mut w = [0u64; WORDS];
    for (i, f) in FILTERS[slot].0.iter().enumerate() {
        w[i] = f.load(Acquire);
    }
    w
}

/// Replaces the filter of a slot (and updates the pass table).
pub(super) fn set_filter_words(slot: usize, words: &[u64; WORDS]) {
    for (i, w) in FILTERS[slot].0.iter().enumerate() {
        w.store(words[i], Release);
    }
    update_pass();
}

/// Takes a free slot; returns it with the generation a new stream there gets (odd).
pub(super) fn claim() -> Option<(usize, u64)> {
    let mut used = SLOT_USED.lock();
    let i = used.iter().position(|u| !u)?;
    used[i] = true;
    for w in FILTERS[i].0.iter() {
        w.store(0, Relaxed);
    }
    Some((i, gen_of(i).load(Acquire) + 1))
}

/// Returns a slot to the free list (after [`retire`]).
pub(super) fn release(slot: usize) {
    SLOT_USED.lock()[slot] = false;
}

/// A busy flag for a thread's first event (reused from exited threads).
#[cold]
pub(super) fn take_busy() -> &'static Busy {
    BUSY_FREE.lock().pop().unwrap_or_else(|| {
        let b: &'static Busy = Box::leak(Box::new(Busy(AtomicU32::new(0))));
        BUSY_ALL.lock().push(b);
        b
    })
}

/// Gives an exited thread's busy flag back.
pub(super) fn give_busy(b: &'static Busy) {
    BUSY_FREE.lock().push(b);
}

/// The writer side of the busy protocol: after setting its busy flag, a writer
/// orders that store before its reads of the generation.
#[inline(always)]
pub(super) fn writer_fence() {
    if NEED_FENCE.load(Relaxed) {
        fence(SeqCst);
    } else {
        compiler_fence(SeqCst);
    }
}

/// Retires a slot's generation and waits until no writer can still touch the
/// stream that lived there: writers check the generation after setting `busy`.
pub(super) fn retire(slot: usize, gen: u64) {
    gen_of(slot).store(gen + 1, Release);
    // The generation store is ordered before the reads of the flags below:
    // by the membarrier (every writer then passes a full barrier), or, where
    // writers pay a full fence themselves, by a full fence here too (one on
    // each side: a fence on the writers' side alone lets this store wait in
    // the store buffer while the flags are read).
    use rustix::thread::{membarrier, MembarrierCommand};
    if NEED_FENCE.load(Relaxed) || membarrier(MembarrierCommand::PrivateExpedited).is_err() {
        fence(SeqCst);
    }
    // A writer inside a record finishes it in nanoseconds, unless it was
    // preempted there: spin briefly, then yield so a preempted writer sharing
    // this CPU gets to run.
    let all = BUSY_ALL.lock();
    for b in all.iter().copied().chain([&SHARED_BUSY]) {
        let mut spins = 0u32;
        while b.0.load(Acquire) != 0 {
            if spins < 1000 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// One-time process setup: the clock, membarrier registration and the fork hook.
///
/// Not a `Once`: a fork while another thread was in here (the clock's
/// calibration takes 2 ms) left the `Once` running for good in the child, and
/// the child's first stream waited for it forever
/// (`capi/tests/c/trace_fork_first_use.c`). Every step is idempotent, so each
/// thread that arrives before the first has finished does them all itself.
pub(super) fn setup_process() {
    static SET_UP: AtomicBool = AtomicBool::new(false);
    if SET_UP.load(Acquire) {
        return;
    }
    clock::init();
    use rustix::thread::{membarrier, MembarrierCommand};
    if membarrier(MembarrierCommand::RegisterPrivateExpedited).is_err() {
        NEED_FENCE.store(true, Relaxed);
    }
    fn child() {
        // POSIX_TRACE_CLOSE_FOR_CHILD: the child records nothing.
        RUNNING.store(0, Relaxed);
        for p in PASS.iter() {
            p.store(0, Relaxed);
        }
        PID.store(0, Relaxed);
        // SAFETY: the child has one thread, which holds nothing; a parent
        // thread that held these locks does not exist here.
        unsafe {
            BUSY_ALL.raw().reset_in_child();
            BUSY_FREE.raw().reset_in_child();
            SLOT_USED.raw().reset_in_child();
            PASS_LOCK.raw().reset_in_child();
        }
        clear_busy_in_child();
        super::ids::names_reset_in_child();
    }
    // `child` is async-signal-safe (atomic stores only).
    crate::sys::fork::on_child(child);
    SET_UP.store(true, Release);
}

/// In a forked child: clears every busy flag and the shared busy count. A
/// thread of the parent that was inside a record at the fork left its flag set
/// (or the shared count raised), and does not exist here to clear it: every
/// shutdown in the child would wait for it forever. The child's one thread is
/// not inside a record (a fork is not made from the recorder), so no flag
/// guards anything here. Async-signal-safe: atomic stores, no lock, no
/// allocation.
fn clear_busy_in_child() {
    // SAFETY: the child has one thread, this one, which holds no guard of
    // `BUSY_ALL` (its lock was just forgotten): nothing changes the list while
    // it is read (in the state the fork left it in, as the child's later
    // `take_busy` finds it).
    let all = unsafe { &*BUSY_ALL.data_ptr() };
    for b in all.iter() {
        b.0.store(0, Relaxed);
    }
    SHARED_BUSY.0.store(0, Relaxed);
}

pub(super) fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}
