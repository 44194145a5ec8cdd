//! The per-thread fast path of `posix_trace_event`: the calling thread finds its
//! own sub-buffer in each running stream through a thread-local cache, and writes
//! there under its "inside a record" flag.
//!
//! A thread's first event in a stream maps its sub-buffer (the one allocation of
//! the path); every later one is loads, a timestamp and stores into memory only
//! this thread writes.
//!
//! A signal handler may record (POSIX lists `posix_trace_event` as
//! async-signal-safe). When it interrupted its own thread inside the recorder
//! (the busy flag set), its event cannot go into the sub-buffer that record is
//! half-way through: it is dropped and counted lost in each stream it was for
//! ([`nested`]), and readers get an OVERFLOW for it.
//!
//! A call that may run in a signal handler and emits system events (the C
//! library's `aio_error`, `aio_return` and `aio_suspend`, whose reaps emit
//! `aio_complete`) runs under [`NoSetup`]: there a thread records only into
//! the streams where it has its sub-buffer already, and counts the event lost
//! in the others, since taking a busy flag (a lock, an allocation) or mapping
//! a sub-buffer (a lock, allocations) could deadlock or corrupt the heap in a
//! handler that interrupted `malloc`. The C submissions set their thread up
//! ahead ([`prepare_thread`]), so a thread that submits and then polls records
//! its completions.

use std::cell::UnsafeCell;
use std::sync::atomic::{compiler_fence, AtomicPtr, AtomicU32, Ordering::*};

use super::ids::{EventId, ID_SPACE};
use super::ring::{small_word, Ring};
use super::slots::{
    filtered, gen_of, give_busy, pass_of, take_busy, writer_fence, Busy, GENS_BY_PASS, NEED_FENCE,
    PASS_MANY, RUNNING, SHARED_BUSY, SLOT_BITS, SUSPENDED_SHIFT, TRACE_SYS_MAX,
};
use super::stream::Stream;

/// Per slot, the live stream (set by create, cleared after its slot is retired).
static SLOTS: [AtomicPtr<Stream>; TRACE_SYS_MAX] =
    [const { AtomicPtr::new(std::ptr::null_mut()) }; TRACE_SYS_MAX];

/// Makes a new stream findable by writers (its generation is stored after this).
pub(super) fn publish(slot: usize, s: *const Stream) {
    SLOTS[slot].store(s.cast_mut(), Release);
}

/// Forgets a retired stream (after [`retire`](super::slots::retire): no writer can
/// reach it any more).
pub(super) fn unpublish(slot: usize) {
    SLOTS[slot].store(std::ptr::null_mut(), Release);
}

/// What a thread caches about one slot: its ring there, the stream, and the
/// generation both belong to.
#[derive(Clone, Copy)]
struct Cached {
    ring: *const Ring,
    stream: *const Stream,
    gen: u64,
}

const EMPTY: Cached = Cached {
    ring: std::ptr::null(),
    stream: std::ptr::null(),
    gen: 0,
};

struct Local {
    /// The ring of [`Cached`] for the fast path, indexed by the pass entry
    /// (`slot + 1`, see [`FAST_LEN`]), in arrays of words so that an entry is one
    /// scaled load.
    fast_ring: [*const Ring; FAST_LEN],
    /// The generation of `fast_ring`, or `u64::MAX` (never a generation) when
    /// writers need a full fence, which the fast path does not pay.
    fast_gen: [u64; FAST_LEN],
    busy: *const Busy,
    slots: [Cached; TRACE_SYS_MAX],
    /// Set while the thread runs a call that may be in a signal handler
    /// ([`NoSetup`]): it then neither takes a busy flag nor maps a sub-buffer.
    no_setup: bool,
}

/// Entries of the fast arrays: indexed by a pass entry masked to this size, so
/// slot `s` is at `s + 1`, and 0 and `PASS_MANY` land on entries that stay empty.
const FAST_LEN: usize = 16;
const _: () =
    assert!(TRACE_SYS_MAX + 1 < FAST_LEN && PASS_MANY as usize & (FAST_LEN - 1) > TRACE_SYS_MAX);

const NO_FAST_RING: [*const Ring; FAST_LEN] = [std::ptr::null(); FAST_LEN];

thread_local! {
    static LOCAL: UnsafeCell<Local> = const {
        UnsafeCell::new(Local {
            fast_ring: NO_FAST_RING,
            fast_gen: [u64::MAX; FAST_LEN],
            busy: std::ptr::null(),
            slots: [EMPTY; TRACE_SYS_MAX],
            no_setup: false,
        })
    };
    static THREAD_EXIT: ThreadExit = const { ThreadExit };
}

/// Marks the thread's sub-buffers orphaned and returns its busy flag to the pool
/// when the thread exits.
struct ThreadExit;

impl Drop for ThreadExit {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|l| {
            // SAFETY: LOCAL is only touched by its own thread, never re-entrantly.
            let l = unsafe { &mut *l.get() };
            if l.busy.is_null() {
                return;
            }
            // SAFETY: `busy` points to a leaked, never-freed `Busy`.
            let b: &'static Busy = unsafe { &*l.busy };
            // Under the busy protocol, so a stream being shut down is not touched.
            b.0.store(1, Relaxed);
            writer_fence();
            for (slot, c) in l.slots.iter().enumerate() {
                if !c.ring.is_null() && gen_of(slot).load(Relaxed) == c.gen {
                    // SAFETY: the generation is live and unchanged since `busy` was
                    // set, so the stream and its rings are alive.
                    unsafe { (*c.ring).orphan.store(true, Release) };
                }
            }
            // Forgotten while the flag is still set: a signal handler's event
            // from here on finds no flag and no ring (and cannot register again).
            l.slots = [EMPTY; TRACE_SYS_MAX];
            l.fast_ring = NO_FAST_RING;
            l.fast_gen = [u64::MAX; FAST_LEN];
            set_busy_ptr(l, std::ptr::null());
            b.0.store(0, Release);
            give_busy(b);
        });
    }
}

/// `posix_trace_event`: records `data` under `id` in every running stream of the
/// process that does not filter `id`. A relaxed load and a branch when none runs.
///
/// Data of at most 8 bytes is packed into a word here, in the caller, where its
/// length is usually a constant and the packing one load, and the thread's
/// [`LOCAL`] is found here too: the recording path then takes four words in
/// registers and calls nothing. (In a library built as position-independent
/// code, a thread-local's address is a call to `__tls_get_addr` as far as the
/// compiler knows, even where the linker turns it into one instruction; made in
/// the recording path, that call would make it save and restore registers.)
#[inline(always)]
pub(crate) fn event(id: EventId, data: &[u8]) {
    let pass = pass_of(id.0);
    if pass != 0 {
        if data.len() <= 8 {
            // `LOCAL` has a constant initialiser and no destructor: always there.
            if let Ok(l) = LOCAL.try_with(UnsafeCell::get) {
                let head = id.0 as u64 | (data.len() as u64) << 16;
                record_word(l, pass, head, small_word(data), record_bytes(data.len()));
            }
        } else {
            record_general(pass, id.0, data);
        }
    }
}

/// The bytes a record of `len <= 8` bytes of data takes (a constant where `len`
/// is, computed in the caller for the recording path).
#[inline(always)]
fn record_bytes(len: usize) -> u64 {
    // 16, plus 8 for 1..=8 bytes, without a branch where `len` is not a constant.
    16 + ((len as u64 + 7) & 8)
}

/// The recording path of up to 8 bytes, out of line: `l` is the calling thread's
/// [`LOCAL`], `head` the record's first word without the thread id (id and
/// length), `word` the data, `bytes` the record's size ([`record_bytes`]).
///
/// Its common case (one stream records the id, the thread's ring there cached, a
/// record that fits) makes no call and needs no stack frame; anything else goes
/// to [`record_word_slow`] before it has written anything.
#[inline(never)]
fn record_word(l: *mut Local, pass: u8, head: u64, word: u64, bytes: u64) {
    record_word_in(l, pass, head, word, bytes)
}

/// [`record_word`] with the calling thread's [`LOCAL`] already found (`l`).
#[inline(always)]
fn record_word_in(l: *mut Local, pass: u8, head: u64, word: u64, bytes: u64) {
    // The fast arrays are indexed by the pass entry itself (`slot + 1`): a
    // `PASS_MANY` entry (several streams) lands on an empty one, which takes
    // `record_word_slow` with the entry as it was.
    record_small_in(l, pass, head, word, bytes);
}

/// One stream, up to 8 bytes, on the calling thread's [`LOCAL`] (`l`): `head` is
/// the record's first word without the thread id (id and length), `word` the data.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn record_small_in(l: *mut Local, pass: u8, head: u64, word: u64, bytes: u64) {
    let at = pass as usize & (FAST_LEN - 1);
    // SAFETY: `l` is the calling thread's LOCAL (from `LOCAL` or a
    // `ThreadRecorder`, which is `!Send`), only touched by its own thread, never
    // re-entrantly (see `record`); this reads a copy of three of its words.
    let (busy, ring, fast_gen) = unsafe { ((*l).busy, (*l).fast_ring[at], (*l).fast_gen[at]) };
    // A cached ring implies a busy flag: `attach_ring` runs after `register_thread`,
    // and `ThreadExit` clears both.
    if ring.is_null() {
        return record_word_slow(pass, head, word);
    }
    debug_assert!(!busy.is_null());
    // SAFETY: `busy` is a leaked `Busy` owned by this thread until it exits.
    let busy = unsafe { &*busy };
    if busy.0.load(Relaxed) != 0 {
        return nested(pass, head as u16, busy);
    }
    busy.0.store(1, Relaxed);
    // The busy protocol of `record_local`, with the fence only a compiler fence:
    // `fast_gen` never matches when writers need a real fence (`attach_ring`), so
    // such a process always takes `record_local`. The generation is checked after
    // `busy` is set, so the cached ring is alive until `busy` is cleared.
    compiler_fence(SeqCst);
    if GENS_BY_PASS[at].load(Relaxed) == fast_gen {
        // SAFETY: the cached generation is live and unchanged since `busy` was
        // set, so the ring is alive until `busy` is cleared.
        let r = unsafe { &*ring };
        if r.put_small(head, word, bytes) {
            busy.0.store(0, Release);
            return;
        }
    }
    busy.0.store(0, Release);
    record_word_slow(pass, head, word)
}

/// Without the TSC the fast path does not run (see `Ring::fast_ok`).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn record_small_in(_: *mut Local, pass: u8, head: u64, word: u64, _: u64) {
    record_word_slow(pass, head, word)
}

/// [`record_word`]'s general case: several streams, or one whose fast path does
/// not take the record (first event of the thread, a new stream in the slot...).
#[cold]
#[inline(never)]
fn record_word_slow(pass: u8, head: u64, word: u64) {
    let bytes = word.to_le_bytes();
    let len = ((head >> 16) as usize).min(8);
    record_general(pass, head as u16, &bytes[..len]);
}

/// The recording path for several streams, or data longer than 8 bytes.
#[inline(never)]
fn record_general(pass: u8, id: u16, data: &[u8]) {
    if pass == PASS_MANY {
        // Several streams: each one's filter decides.
        return record_each(RUNNING.load(Relaxed), id, data);
    }
    record_slow((pass - 1) as usize & (TRACE_SYS_MAX - 1), id, data)
}

/// The general case for one slot: first event of the thread, a new
/// stream in the slot, a record the fast path does not take.
#[cold]
#[inline(never)]
fn record_slow(slot: usize, id: u16, data: &[u8]) {
    // The pass entry was read before: the slot may hold another stream by now,
    // or its stream may have suspended itself by fullness since.
    let m = RUNNING.load(Relaxed) >> slot;
    if m & (1 | 1 << SUSPENDED_SHIFT) != 0 && !filtered(slot, id) {
        record(slot, id, data, mode_of(m >> SUSPENDED_SHIFT & 1 != 0));
    }
}

/// [`Mode::Lose`] for a stream suspended by fullness, else [`Mode::Event`].
#[inline(always)]
fn mode_of(suspended: bool) -> Mode {
    if suspended {
        Mode::Lose
    } else {
        Mode::Event
    }
}

/// Records into the streams of `mask` (a [`RUNNING`] value) that do not filter
/// `id`; one suspended by fullness counts the event lost.
#[inline(never)]
fn record_each(mask: u32, id: u16, data: &[u8]) {
    if id as usize >= ID_SPACE {
        return;
    }
    let suspended = (mask >> SUSPENDED_SHIFT) & SLOT_BITS;
    let mut slots = (mask | suspended) & SLOT_BITS;
    while slots != 0 {
        let slot = slots.trailing_zeros() as usize;
        slots &= slots - 1;
        if !filtered(slot, id) {
            record(slot, id, data, mode_of(suspended & (1 << slot) != 0));
        }
    }
}

/// Records a control event (START, STOP, FILTER, ERROR...) into one slot's stream
/// from the calling thread, whether it runs or not, unless its filter excludes it.
pub(super) fn control_event(slot: usize, id: EventId, payload: &[u8]) {
    if !filtered(slot, id.0) {
        record(slot, id.0, payload, Mode::Control);
    }
}

/// What [`record`] does with an event.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Records it (the caller saw the stream running).
    Event,
    /// Records it whether the stream runs or not (a control event).
    Control,
    /// Counts it lost: the stream suspended itself by fullness.
    Lose,
}

/// Records into one slot's stream, as `mode` says.
#[inline(always)]
fn record(slot: usize, id: u16, data: &[u8], mode: Mode) -> bool {
    let Ok(l) = LOCAL.try_with(UnsafeCell::get) else {
        return false; // the thread is exiting
    };
    // SAFETY: one word of the calling thread's LOCAL, read through the raw
    // pointer: a signal handler comes here while its thread may hold LOCAL
    // mutably, inside the recorder, and then touches nothing else of it.
    let busy = unsafe { std::ptr::read_volatile(&(*l).busy) };
    if !busy.is_null() {
        // SAFETY: a non-null `busy` is a leaked `Busy` or `REGISTERING`.
        let b = unsafe { &*busy };
        if b.0.load(Relaxed) != 0 {
            count_nested(slot, b);
            return false;
        }
    }
    // SAFETY: LOCAL is only touched by its own thread, and `record` is not
    // re-entered on it past the check above (a signal handler's event while the
    // thread is inside the recorder stops there): it calls no user code, and the
    // one allocation (a thread's first event maps its sub-buffer) does not record
    // events unless a custom global allocator calls `event()`, which the docs of
    // `trace::event` forbid.
    let l = unsafe { &mut *l };
    record_local(l, slot, id, data, mode)
}

#[inline(always)]
fn record_local(l: &mut Local, slot: usize, id: u16, data: &[u8], mode: Mode) -> bool {
    if l.busy.is_null() && !register_thread(l) {
        // The thread's clean-up has run (an event from a later thread-local
        // destructor), or it may not take a flag here ([`NoSetup`]): it has
        // none to record with.
        count_unheld(slot);
        return false;
    }
    // SAFETY: `busy` is a leaked `Busy` owned by this thread until it exits.
    let busy = unsafe { &*l.busy };
    busy.0.store(1, Relaxed);
    writer_fence();
    // Checked after `busy` is set: shutdown retires the generation, runs a
    // membarrier, then waits for `busy == 0`, so a stale stream is never touched.
    let gen = gen_of(slot).load(Relaxed);
    let mut done = false;
    if gen & 1 == 1 {
        let mut c = l.slots[slot];
        if c.gen != gen && mode != Mode::Lose {
            c = attach_ring(l, slot, gen);
        }
        if c.gen != gen {
            // A loss of a thread without a sub-buffer in the stream (not
            // worth mapping one for), or an event of a thread that may not
            // map one here ([`NoSetup`]): counted in the stream.
            count_lost(slot);
        } else if !c.ring.is_null() {
            // SAFETY: the slot's generation is live (odd) and unchanged since `busy`
            // was set, so the stream and its rings are alive until `busy` is cleared.
            let (s, r) = unsafe { (&*c.stream, &*c.ring) };
            // A normal event's caller saw the slot running (its pass bit and
            // RUNNING); the generation check above is what makes the write safe.
            match mode {
                Mode::Lose => s.lose(r),
                _ => done = s.write(r, id, data, mode == Mode::Control),
            }
        } else {
            // The thread's sub-buffer could not be mapped (the address space
            // limit): the event is lost, and counted.
            count_lost(slot);
        }
    }
    busy.0.store(0, Release);
    done
}

/// Gives the thread a busy flag, and its clean-up at exit; `false` once that
/// clean-up has run (an event from a later destructor, a pthread key's: the
/// rings it attached were never orphaned, so each such thread kept a whole
/// sub-buffer until the stream shut down, and its busy flag was lost), and
/// under [`NoSetup`] (taking a flag locks and may allocate).
#[cold]
fn register_thread(l: &mut Local) -> bool {
    if l.no_setup {
        return false;
    }
    // Taking a flag locks (and may allocate): a signal handler's event meanwhile
    // finds this one set and is dropped.
    set_busy_ptr(l, &REGISTERING);
    if THREAD_EXIT.try_with(|_| ()).is_err() {
        set_busy_ptr(l, std::ptr::null());
        return false;
    }
    let b = take_busy();
    set_busy_ptr(l, b);
    true
}

/// Stands for the thread's busy flag while [`register_thread`] takes one: set,
/// and never waited for by a shutdown (so it guards no stream).
static REGISTERING: Busy = Busy(AtomicU32::new(1));

/// Stores the thread's busy flag pointer where a signal handler of this thread
/// reads it: a volatile store, which the compiler neither drops nor moves past
/// the calls around it.
#[inline(always)]
fn set_busy_ptr(l: &mut Local, b: *const Busy) {
    // SAFETY: `l.busy` is a valid, aligned field of the thread's LOCAL.
    unsafe { std::ptr::write_volatile(&mut l.busy, b) };
    compiler_fence(SeqCst);
}

/// An event of a signal handler that interrupted its own thread inside the
/// recorder (`busy` set): counted lost in each stream it was for, unrecorded.
#[cold]
#[inline(never)]
fn nested(pass: u8, id: u16, busy: &Busy) {
    // Streams suspended by fullness count it too (in the same count).
    let running = RUNNING.load(Relaxed);
    let live = (running | running >> SUSPENDED_SHIFT) & SLOT_BITS;
    let mask = if pass == PASS_MANY {
        live
    } else {
        1 << ((pass - 1) as usize & (TRACE_SYS_MAX - 1))
    };
    let mut mask = mask & live;
    while mask != 0 {
        let slot = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        if !filtered(slot, id) {
            count_nested(slot, busy);
        }
    }
}

/// Counts one lost event in the stream of `slot`, if one lives there. `busy`,
/// the thread's flag, was set by the record this handler interrupted, before it
/// read any generation: a stream whose generation is live now stays alive until
/// that record ends (see `record_local`).
#[cold]
fn count_nested(slot: usize, busy: &Busy) {
    if std::ptr::eq(busy, &REGISTERING) {
        // The thread is taking its flag: none holds a stream for it yet.
        return count_unheld(slot);
    }
    writer_fence();
    count_lost(slot);
}

/// Counts one lost event in the stream of `slot` for a thread that holds no
/// busy flag of its own (a handler's event while its thread takes its flag, or
/// an event after the thread's clean-up at exit): under the shared busy count,
/// which a shutdown waits for as for a thread's flag. Async-signal-safe (atomics).
#[cold]
fn count_unheld(slot: usize) {
    SHARED_BUSY.0.fetch_add(1, Relaxed);
    writer_fence();
    count_lost(slot);
    // Never below 0: a forked child clears the count (its parent's holders do
    // not exist there), and a handler that forked between the add and this
    // goes on here in the child, where a wrapped count would stall every
    // later shutdown.
    let _ = SHARED_BUSY
        .0
        .fetch_update(Release, Relaxed, |n| n.checked_sub(1));
}

/// Counts one lost event in the stream of `slot`, if one lives there; the
/// caller holds a busy flag (or the shared count) set before this reads any
/// generation, so a stream whose generation is live here stays alive.
fn count_lost(slot: usize) {
    let gen = gen_of(slot).load(Acquire);
    if gen & 1 == 0 {
        return;
    }
    let sp = SLOTS[slot].load(Acquire);
    if sp.is_null() || gen_of(slot).load(Acquire) != gen {
        return;
    }
    // SAFETY: the slot's generation is live and unchanged with the thread's busy
    // flag set (see above), and the slot's pointer is that generation's stream.
    unsafe { (*sp).nested_lost.fetch_add(1, Relaxed) };
}

/// Maps the thread's sub-buffer in the stream of `slot` (generation `gen`),
/// with its busy flag set; [`EMPTY`] if it cannot, or may not here
/// ([`NoSetup`]: the stream locks its list of sub-buffers and allocates).
#[cold]
fn attach_ring(l: &mut Local, slot: usize, gen: u64) -> Cached {
    let sp = SLOTS[slot].load(Acquire);
    if sp.is_null() || l.no_setup {
        return EMPTY;
    }
    // SAFETY: as in `record_local`: the generation is live while `busy` is set, and
    // the slot's pointer is cleared only after its generation is retired.
    let s = unsafe { &*sp };
    // (The recording thread: its pthread_t is read once per ring.)
    match s.add_ring(crate::sys::tid::current(), crate::sys::tid::pthread_self()) {
        Some(r) => {
            let c = Cached {
                ring: r,
                stream: sp,
                gen,
            };
            l.slots[slot] = c;
            l.fast_ring[slot + 1] = r;
            l.fast_gen[slot + 1] = if NEED_FENCE.load(Relaxed) {
                u64::MAX
            } else {
                gen
            };
            c
        }
        None => EMPTY,
    }
}

/// While it lives, the calling thread records only into the streams where it
/// has its sub-buffer already: it takes no busy flag and maps no sub-buffer,
/// and an event for a stream where it has none is counted lost there
/// (readers get an OVERFLOW for it, the status an overrun). For calls that
/// may run in a signal handler and emit system events (the reaps of the C
/// library's `aio_error`, `aio_return` and `aio_suspend`). `!Send`: it
/// restores the thread's previous state when dropped.
pub(crate) struct NoSetup {
    was: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl NoSetup {
    /// Starts the section (a thread-local store). Async-signal-safe.
    #[inline]
    pub(crate) fn enter() -> NoSetup {
        NoSetup {
            was: swap_no_setup(true),
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for NoSetup {
    #[inline]
    fn drop(&mut self) {
        swap_no_setup(self.was);
    }
}

/// Sets the calling thread's [`Local::no_setup`] to `on`, returning the old
/// value (`true` while the thread exits: nothing is set up then anyway).
#[inline]
fn swap_no_setup(on: bool) -> bool {
    let Ok(l) = LOCAL.try_with(UnsafeCell::get) else {
        return true;
    };
    // SAFETY: one field of the calling thread's LOCAL, through the raw
    // pointer and volatile, as `record` reads `busy`: this runs outside any
    // record of this thread (a handler's record of this thread meanwhile
    // reads the flag as before or as after the store, both consistent).
    let was = unsafe {
        let f = std::ptr::addr_of_mut!((*l).no_setup);
        let was = std::ptr::read_volatile(f);
        std::ptr::write_volatile(f, on);
        was
    };
    compiler_fence(SeqCst);
    was
}

/// Whether the calling thread is inside a [`NoSetup`] section.
pub(super) fn setup_refused() -> bool {
    // SAFETY: one field of the calling thread's LOCAL, read volatile (see
    // `swap_no_setup`).
    LOCAL
        .try_with(|l| unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*l.get()).no_setup)) })
        .unwrap_or(true)
}

/// Counts one event lost in every running stream (and every one suspended by
/// fullness) that does not filter it, for a system event (of a process) that
/// a [`NoSetup`] section may not register (the registry locks and
/// allocates): the filters are asked about the id it would take now.
/// Async-signal-safe.
#[cold]
pub(super) fn count_lost_unregistered() {
    let id = super::ids::next_sys_id();
    if id >= super::ids::WOPID_BASE {
        return; // none left: it could not be registered, nor recorded
    }
    let running = RUNNING.load(Relaxed);
    let mut live = (running | running >> SUSPENDED_SHIFT) & SLOT_BITS;
    while live != 0 {
        let slot = live.trailing_zeros() as usize;
        live &= live - 1;
        if !filtered(slot, id) {
            count_unheld(slot);
        }
    }
}

/// Sets the calling thread up in every stream that lives now (running or
/// not): its busy flag, and its sub-buffer in each, as its first event there
/// would. For calls that may allocate (the C library's submissions), ahead of
/// the [`NoSetup`] calls that may follow on the thread (a signal handler's
/// `aio_error`), so those record instead of counting their events lost.
/// Returns whether some stream lives; a few loads when none does, or when the
/// thread is set up in each.
pub(crate) fn prepare_thread() -> bool {
    // (The thread-local is looked up only once a stream is found: in a
    // shared library that is a call.)
    let mut local = None;
    let mut live = false;
    for slot in 0..TRACE_SYS_MAX {
        let gen = gen_of(slot).load(Relaxed);
        if gen & 1 == 0 {
            continue;
        }
        live = true;
        let l = match local {
            Some(l) => l,
            None => match LOCAL.try_with(UnsafeCell::get) {
                Ok(l) => *local.insert(l),
                Err(_) => return true, // the thread is exiting
            },
        };
        // SAFETY: one word of the calling thread's LOCAL, read through the
        // raw pointer, outside any record of this thread (see `record`).
        if unsafe { std::ptr::read_volatile(std::ptr::addr_of!((*l).slots[slot].gen)) } != gen {
            prepare_slot(l, slot);
        }
    }
    live
}

/// [`prepare_thread`] for one slot whose stream the thread has no sub-buffer
/// in: `record_local`'s protocol, without a record.
#[cold]
#[inline(never)]
fn prepare_slot(l: *mut Local, slot: usize) {
    // SAFETY: as in `record`: one word, read through the raw pointer.
    let busy = unsafe { std::ptr::read_volatile(&(*l).busy) };
    // SAFETY: a non-null `busy` is a leaked `Busy` or `REGISTERING`.
    if !busy.is_null() && unsafe { &*busy }.0.load(Relaxed) != 0 {
        // A signal handler interrupted this thread inside the recorder.
        return;
    }
    // SAFETY: as in `record`: the thread is not inside the recorder, and a
    // handler's record meanwhile stops at the busy flag set below.
    let l = unsafe { &mut *l };
    if l.busy.is_null() && !register_thread(l) {
        return;
    }
    // SAFETY: `busy` is a leaked `Busy` owned by this thread until it exits.
    let busy = unsafe { &*l.busy };
    busy.0.store(1, Relaxed);
    writer_fence();
    // Checked after `busy` is set, as in `record_local`.
    let gen = gen_of(slot).load(Relaxed);
    if gen & 1 == 1 && l.slots[slot].gen != gen {
        attach_ring(l, slot, gen);
    }
    busy.0.store(0, Release);
}

/// The calling thread's recording state, for a caller that cannot reach a
/// `thread_local!` cheaply (the C library: a `cdylib` reaches every thread local
/// through `__tls_get_addr`). It caches the pointer where it can read it in one
/// instruction and records with [`ThreadRecorder::event`]. `!Send`: it names
/// the thread that made it, and stays valid as long as that thread runs.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct ThreadRecorder(*mut Local);

impl ThreadRecorder {
    /// The calling thread's recorder (`None` while the thread is exiting).
    #[cold]
    pub fn current() -> Option<ThreadRecorder> {
        LOCAL.try_with(UnsafeCell::get).ok().map(ThreadRecorder)
    }

    /// The pointer to cache (never null).
    pub fn into_raw(self) -> *mut () {
        self.0.cast()
    }

    /// A recorder back from [`into_raw`](Self::into_raw).
    ///
    /// # Safety
    /// `p` came from `into_raw` on the calling thread.
    #[inline(always)]
    pub unsafe fn from_raw(p: *mut ()) -> ThreadRecorder {
        ThreadRecorder(p.cast())
    }

    /// [`event`]: the same pass check and recording, without the thread-local
    /// lookup. Out of line, so it reaches this crate's statics directly (code
    /// inlined into another crate of a shared library reaches each through the
    /// GOT).
    #[inline(never)]
    pub fn event(self, id: EventId, data: &[u8]) {
        let pass = pass_of(id.0);
        if pass != 0 {
            if data.len() <= 8 {
                record_word_in(
                    self.0,
                    pass,
                    id.0 as u64 | (data.len() as u64) << 16,
                    small_word(data),
                    record_bytes(data.len()),
                );
            } else {
                record_general(pass, id.0, data);
            }
        }
    }

    /// [`event`](Self::event) for data of `len <= 8` bytes already packed into
    /// `word` (little-endian, the bytes past `len` zero), with `pass` the id's
    /// entry of [`pass_table`](super::pass_table) as the caller just read it
    /// (what `event` reads first): what a caller that knows its data size at
    /// compile time passes in registers. A `pass` that is not the entry can
    /// record into a running stream that filters the id, nothing worse: the
    /// recording path checks the slot's generation and the thread's ring.
    ///
    /// Inlined into the caller (the C library's one exported entry for it):
    /// one call fewer costs more than the one static (the slot generations)
    /// that the caller then reaches through its GOT.
    #[inline(always)]
    pub fn event_word(self, pass: u8, id: EventId, len: usize, word: u64) {
        if pass != 0 {
            let len = len.min(8);
            let head = id.0 as u64 | (len as u64) << 16;
            record_word_in(self.0, pass, head, word, record_bytes(len));
        }
    }
}

/// Runs `f` as a signal handler that interrupted this thread inside the
/// recorder would: with the thread's busy flag set (the thread has recorded).
#[cfg(test)]
pub(super) fn as_nested(f: impl FnOnce()) {
    let b = LOCAL.with(|l| {
        // SAFETY: this thread's own LOCAL, read outside any record.
        unsafe { (*l.get()).busy }
    });
    assert!(!b.is_null(), "the thread has not recorded yet");
    // SAFETY: a non-null `busy` is a leaked `Busy` owned by this thread.
    let b = unsafe { &*b };
    b.0.store(1, Relaxed);
    f();
    b.0.store(0, Release);
}
