//! One thread's sub-buffer of a stream: a single-writer ring of 8-byte words.
//!
//! Record layout (8-byte aligned, never split across the end of the ring):
//!
//! | word | bits | content |
//! |---|---|---|
//! | 0 | 0..16 | event id (`0xFFFF`: padding up to the end of the ring) |
//! | 0 | 16..30 | data length in bytes |
//! | 0 | 30 | gap: the writer dropped events just before this one (FLUSH, UNTIL_FULL) |
//! | 0 | 31 | truncated |
//! | 0 | 32..64 | tid |
//! | 1 | | raw timestamp (ticks) |
//! | 2.. | | data, zero-padded to a word |
//! | last | | gap records only: the writer's `lost` count when it wrote the record |
//!
//! A gap record carries its own loss count, so that each run of drops is reported
//! with the record that ends it even when several such records are unread.
//!
//! The owner thread is the only writer of records and of `head`; readers (one at a
//! time, under the stream's reader lock) advance `tail` with a CAS. Under the LOOP
//! policy the writer also advances `tail` over the oldest records with a CAS, so a
//! reader validates every copy by its CAS and retries when it lost the race.

use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::*};

use super::seam::{self, Point};
use crate::sys::clock;
use crate::{Error, Result};

pub(crate) const PAD_ID: u16 = 0xFFFF;
/// Data length bits of a record's first word (14 bits: data is at most
/// `MAX_DATA_SIZE_LIMIT`, 4096 bytes).
const LEN_MASK: u64 = 0x3fff;

#[repr(align(64))]
pub(crate) struct Padded<T>(pub(crate) T);

/// [`Ring::room`]: no room.
pub(crate) const NO_ROOM: u8 = 0;
/// [`Ring::room`]: room.
pub(crate) const ROOM: u8 = 1;
/// [`Ring::room`]: room, after a run of dropped events.
pub(crate) const ROOM_AFTER_GAP: u8 = 2;

/// A record copied out of a ring.
pub(crate) struct RawRecord {
    pub(crate) id: u16,
    pub(crate) truncated: bool,
    /// The writer dropped events just before this record: its `lost` count
    /// when it wrote the record (the losses to report before it).
    pub(crate) gap: Option<u64>,
    pub(crate) tid: u32,
    /// The recording thread's `pthread_t` (its ring's [`Ring::thread`]).
    pub(crate) thread: u64,
    pub(crate) ticks: u64,
    pub(crate) data: Vec<u8>,
    /// The ring's loss count as the record was taken. Under the LOOP policy
    /// these are exactly the events lost before the record: a writer
    /// overwrites the oldest records first, and counts them before a reader
    /// can take the record after them ([`Ring::pop`]).
    pub(crate) lost: u64,
}

pub(crate) struct Ring {
    pub(crate) head: Padded<AtomicU64>,
    /// Writer-private: last tail seen, events lost, flush requested.
    pub(crate) cached_tail: Padded<AtomicU64>,
    pub(crate) lost: AtomicU64,
    /// Writer side: `head` at the latest loss, stored before `lost` (which
    /// releases it): the losses `lost` counts happened at or before it.
    pub(crate) lost_head: AtomicU64,
    /// Writer side: set while the writer drops events and until it has
    /// counted them in `lost`: under LOOP its oldest records (see
    /// [`Ring::pop`]), under FLUSH and UNTIL_FULL the event that found no
    /// room (see [`Ring::begin_drop`]). A clear waits for it.
    dropping: AtomicBool,
    pub(crate) flush_asked: AtomicBool,
    /// Writer-private, FLUSH policy: the ring overflowed; record again only once
    /// half of it is free.
    pub(crate) draining: AtomicBool,
    /// Writer-private, UNTIL_FULL policy: the writer lost events while the
    /// stream was suspended; its next record carries their count.
    pub(crate) gap_next: AtomicBool,
    pub(crate) tail: Padded<AtomicU64>,
    /// Reader-side bookkeeping: losses already reported as OVERFLOW.
    pub(crate) lost_reported: AtomicU64,
    /// Reader-side bookkeeping: the timestamp (ticks) of the last record a
    /// reader or a flush took, 0 before the first: losses found after it, with
    /// no record after them yet, are stamped with it.
    pub(crate) last_taken: AtomicU64,
    /// Its thread exited: once drained, the buffer can be unmapped.
    pub(crate) orphan: AtomicBool,
    mapped: AtomicBool,
    buf: NonNull<AtomicU64>,
    pub(crate) cap: u64,
    /// Writer fast path: a record goes straight in while the bytes in use (by the
    /// cached tail) stay within this (the room left for control events, or half
    /// the ring for the FLUSH policy, whose writers ask for a flush there).
    soft: u64,
    /// Whether the fast path may run at all: the clock is the TSC, which it reads
    /// directly, and the stream takes 8 bytes of data untruncated.
    fast_ok: bool,
    /// Writer-private: the fast path writes while `head` is below this, that is
    /// while a record of 24 bytes (the most it writes) fits both before the end of
    /// the ring and within `soft` by the cached tail; 0 when `fast_ok` is false.
    /// Recomputed after every slow-path record ([`Self::put`]): a tail that moved
    /// since only makes it conservative, and a fast-path record never passes the
    /// end of the ring, so one compare replaces every check.
    fast_end: AtomicU64,
    /// `cap - 1`.
    mask: u64,
    /// `tid << 32`, the thread id's place in a record's first word.
    w0_tid: u64,
    pub(crate) tid: u32,
    /// The `pthread_t` (`pthread_self()`) of the thread that records into the
    /// ring, read once as the ring is made (0 if unknown): every record of
    /// the ring is that thread's, so none carries it.
    pub(crate) thread: u64,
}

// SAFETY: the buffer is only accessed through atomics; `buf` is owned by the ring.
unsafe impl Send for Ring {}
// SAFETY: as above; all shared state is atomic.
unsafe impl Sync for Ring {}

/// Maps `cap` bytes of zeroed anonymous memory (pages are touched only as used).
fn map(cap: usize) -> Result<NonNull<AtomicU64>> {
    use rustix::mm::{mmap_anonymous, MapFlags, ProtFlags};
    // SAFETY: a fresh anonymous private mapping at a kernel-chosen address does not
    // alias any Rust object; it is unmapped only in `Ring::drop`.
    let p = unsafe {
        mmap_anonymous(
            std::ptr::null_mut(),
            cap,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE | MapFlags::NORESERVE,
        )
    }
    .map_err(|e| {
        Error::from_errno("mmap", e.raw_os_error())
            .with_hint("lower the stream size (TraceAttr::set_stream_size) or raise RLIMIT_AS")
    })?;
    NonNull::new(p.cast::<AtomicU64>()).ok_or_else(|| Error::from_errno("mmap", libc::ENOMEM))
}

impl Drop for Ring {
    fn drop(&mut self) {
        if self.mapped.swap(false, AcqRel) {
            // SAFETY: `buf` was mapped with length `cap` in `Ring::new`, is still
            // mapped (`mapped` was true) and no reference into it outlives the ring.
            let _ = unsafe { rustix::mm::munmap(self.buf.as_ptr().cast(), self.cap as usize) };
        }
    }
}

/// Up to 8 bytes as a little-endian word, zero above their length, without a
/// call (two overlapping loads for 2..8 bytes).
#[inline(always)]
pub(crate) fn small_word(d: &[u8]) -> u64 {
    let n = d.len();
    if n >= 8 {
        u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
    } else if n >= 4 {
        let lo = u32::from_le_bytes([d[0], d[1], d[2], d[3]]) as u64;
        let hi = u32::from_le_bytes([d[n - 4], d[n - 3], d[n - 2], d[n - 1]]) as u64;
        lo | hi << (8 * (n - 4))
    } else if n >= 2 {
        let lo = u16::from_le_bytes([d[0], d[1]]) as u64;
        let hi = u16::from_le_bytes([d[n - 2], d[n - 1]]) as u64;
        lo | hi << (8 * (n - 2))
    } else if n == 1 {
        d[0] as u64
    } else {
        0
    }
}

#[inline(always)]
pub(crate) fn words_for(len: usize) -> u64 {
    2 + len.div_ceil(8) as u64
}

/// Bytes of a record of `len` data bytes, with the loss count word of a gap record.
#[inline(always)]
fn record_size(len: usize, gap: bool) -> u64 {
    8 * (words_for(len) + gap as u64)
}

impl Ring {
    /// A ring of `cap` bytes for thread `tid`; `soft` and `max_user` set the
    /// writer's fast path (see the fields).
    pub(crate) fn new(cap: usize, tid: u32, soft: u64, max_user: usize) -> Result<Box<Ring>> {
        debug_assert!(cap.is_power_of_two() && cap >= 64);
        let r = Box::new(Ring {
            head: Padded(AtomicU64::new(0)),
            cached_tail: Padded(AtomicU64::new(0)),
            lost: AtomicU64::new(0),
            lost_head: AtomicU64::new(0),
            dropping: AtomicBool::new(false),
            flush_asked: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            gap_next: AtomicBool::new(false),
            tail: Padded(AtomicU64::new(0)),
            lost_reported: AtomicU64::new(0),
            last_taken: AtomicU64::new(0),
            orphan: AtomicBool::new(false),
            mapped: AtomicBool::new(true),
            buf: map(cap)?,
            cap: cap as u64,
            soft,
            fast_ok: clock::uses_tsc() && max_user >= 8,
            fast_end: AtomicU64::new(0),
            mask: cap as u64 - 1,
            w0_tid: (tid as u64) << 32,
            tid,
            thread: 0,
        });
        r.refresh_fast_end(0);
        Ok(r)
    }

    #[inline(always)]
    fn word(&self, pos: u64) -> &AtomicU64 {
        let i = ((pos & (self.cap - 1)) / 8) as usize;
        // SAFETY: `i < cap / 8`, so the word is inside the `cap`-byte mapping. The
        // mapping is live: it is unmapped only by `Drop` (no `&self` left).
        unsafe { &*self.buf.as_ptr().add(i) }
    }

    /// Bytes in use.
    pub(crate) fn used(&self) -> u64 {
        self.head
            .0
            .load(Acquire)
            .wrapping_sub(self.tail.0.load(Acquire))
    }

    /// The length in bytes of the record (or padding) at `pos`, from its first word.
    #[inline]
    fn len_at(&self, pos: u64, w0: u64) -> u64 {
        if w0 as u16 == PAD_ID {
            self.cap - (pos & (self.cap - 1))
        } else {
            record_size(((w0 >> 16) & LEN_MASK) as usize, (w0 >> 30) & 1 != 0)
        }
    }

    /// Reader side: the loss count a gap record (first word `w0`, at `pos`) carries.
    #[inline]
    pub(crate) fn gap_lost(&self, pos: u64, w0: u64) -> u64 {
        let dlen = ((w0 >> 16) & LEN_MASK) as usize;
        self.word(pos + 8 * words_for(dlen)).load(Relaxed)
    }

    /// Writer side: whether `need` more bytes (plus `reserve`) fit.
    #[inline]
    pub(crate) fn has_room(&self, head: u64, need: u64, reserve: u64) -> bool {
        self.room(head, need, reserve) != NO_ROOM
    }

    /// Writer side: [`ROOM`], [`NO_ROOM`], or [`ROOM_AFTER_GAP`] when this record
    /// ends a run of events dropped while the ring was draining (FLUSH policy).
    #[inline]
    pub(crate) fn room(&self, head: u64, need: u64, reserve: u64) -> u8 {
        let limit = self.cap - reserve;
        let ct = self.cached_tail.0.load(Relaxed);
        // While draining, not even a record that fits by the cached tail: it
        // would land after the drops, which only the record ending the run
        // reports (a small event fits where the dropped larger one did not).
        let draining = reserve != 0 && self.draining.load(Relaxed);
        if !draining && head + need - ct <= limit {
            return ROOM;
        }
        let t = self.tail.0.load(Acquire);
        let mut ok = ROOM;
        if draining {
            // Not updating `cached_tail` keeps later events on this slow path.
            if head + need - t > self.cap / 2 {
                return NO_ROOM;
            }
            self.draining.store(false, Relaxed);
            ok = ROOM_AFTER_GAP;
        }
        self.cached_tail.0.store(t, Relaxed);
        if head + need - t <= limit {
            ok
        } else {
            NO_ROOM
        }
    }

    /// Writer side: counts `n` events lost at `head` (before the record that
    /// goes there).
    #[inline]
    pub(crate) fn count_lost(&self, head: u64, n: u64) {
        self.lost_head.store(head, Relaxed);
        self.lost.store(self.lost.load(Relaxed) + n, Release);
    }

    /// Reader side: the losses counted so far, if they all happened at or
    /// before `pos` (the end of what the reader took): else a record the
    /// reader has not taken yet was recorded before the latest of them, and
    /// they are reported later, after it.
    #[inline]
    pub(crate) fn lost_upto(&self, pos: u64) -> Option<u64> {
        let lost = self.lost.load(Acquire);
        (self.lost_head.load(Relaxed) <= pos).then_some(lost)
    }

    /// Writer side, FLUSH and UNTIL_FULL policies: the event at `head`
    /// (`need` bytes, `reserve` kept) found no room and is to be dropped.
    /// Tells a clear so (`dropping`), then looks at the tail once more: the
    /// room found ([`ROOM`], [`ROOM_AFTER_GAP`]: record the event, the drop
    /// is off), or [`NO_ROOM`]: drop and count it, then
    /// [`end_drop`](Self::end_drop).
    ///
    /// The flag and the tail are a store then a load on each side, with a
    /// full fence between (the clear moves the tail, then reads the flag): a
    /// clear either sees the flag, and waits for the count (the drop was
    /// before it, its count goes with it), or has moved the tail where the
    /// look here sees it, and the event is recorded in the cleared stream.
    /// Without it, a drop decided on the full sub-buffer before a clear was
    /// counted after it, as a loss of the cleared stream.
    #[cold]
    pub(crate) fn begin_drop(&self, head: u64, need: u64, reserve: u64) -> u8 {
        self.dropping.store(true, Relaxed);
        fence(SeqCst);
        let room = self.room(head, need, reserve);
        if room != NO_ROOM {
            self.dropping.store(false, Relaxed);
        }
        room
    }

    /// Writer side: the drop that [`begin_drop`](Self::begin_drop) began is
    /// counted (and, UNTIL_FULL, the stream suspended).
    #[inline]
    pub(crate) fn end_drop(&self) {
        self.dropping.store(false, Release);
    }

    /// Writer side, LOOP policy: drops the oldest records until `need` bytes fit,
    /// and counts them lost (at `head`). Returns how many events were dropped.
    ///
    /// The drops and their count are one step for readers: `dropping` is set
    /// before the first drop (ordered before it by the tail's CAS) and cleared
    /// once `lost` holds the count, and [`pop`](Self::pop) does not take a
    /// record while it is set.
    pub(crate) fn overwrite_oldest(&self, head: u64, need: u64) -> u64 {
        self.dropping.store(true, Relaxed);
        let mut dropped = 0;
        loop {
            let t = self.tail.0.load(Acquire);
            if head + need - t <= self.cap || t == head {
                self.cached_tail.0.store(t, Relaxed);
                break;
            }
            let w0 = self.word(t).load(Relaxed);
            let len = self.len_at(t, w0);
            if self
                .tail
                .0
                .compare_exchange(t, t + len, AcqRel, Relaxed)
                .is_ok()
                && w0 as u16 != PAD_ID
            {
                dropped += 1;
            }
        }
        if dropped != 0 {
            self.count_lost(head, dropped);
        }
        self.dropping.store(false, Release);
        dropped
    }

    /// Reader side: the loss count once no writer is between dropping records
    /// and counting them. A writer is there for a few instructions, unless it
    /// was preempted: spin briefly, then yield, then sleep, so that a reader of
    /// higher priority on the writer's CPU lets it finish.
    fn settled_lost(&self) -> u64 {
        let mut waits = 0u32;
        while self.dropping.load(Acquire) {
            waits += 1;
            if waits < 100 {
                std::hint::spin_loop();
            } else if waits < 200 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
        }
        self.lost.load(Acquire)
    }

    /// Writer side, the fast path: stores and publishes a record of `data` under
    /// `id` if it needs nothing special (at most 8 bytes of data, no padding at
    /// the end of the ring, within the soft limit by the cached tail, the TSC as
    /// the clock). Returns `false`, having written nothing, otherwise. It calls
    /// nothing, so its caller needs no stack frame.
    #[inline(always)]
    pub(crate) fn put_fast(&self, id: u16, data: &[u8]) -> bool {
        let head = id as u64 | (data.len() as u64) << 16;
        let bytes = if data.is_empty() { 16 } else { 24 };
        data.len() <= 8 && self.put_small(head, small_word(data), bytes)
    }

    /// [`put_fast`](Self::put_fast) with the data packed: `head` holds the id and
    /// the length (at most 8) as a record's first word does, `word` the data,
    /// `bytes` the record's size (16 without data, else 24).
    #[inline(always)]
    pub(crate) fn put_small(&self, head: u64, word: u64, bytes: u64) -> bool {
        // Read once: the stores below go through atomics, after which the
        // compiler would read the ring's fields again.
        let (buf, w0_tid) = (self.buf, self.w0_tid);
        let at = self.head.0.load(Relaxed);
        if at >= self.fast_end.load(Relaxed) {
            return false;
        }
        let off = at & self.mask;
        // SAFETY: `off + 24 <= cap` (`fast_end`): the three words are inside the
        // mapping (see `word`), which is live while its writer records. The third
        // is free space for a record without data (the limit counted 24 bytes), so
        // it is stored unconditionally. The timestamp is read last, once `head` and
        // `word` are stored: nothing else is live across `rdtsc` (which writes two
        // registers), so the path needs no saved registers. The head store
        // publishes the three words together.
        unsafe {
            // `off` is a multiple of 8 (records are whole words): a byte offset.
            let p = buf.as_ptr().byte_add(off as usize);
            (*p).store(head | w0_tid, Relaxed);
            (*p.add(2)).store(word, Relaxed);
            (*p.add(1)).store(clock::rdtsc(), Relaxed);
        }
        self.head.0.store(at + bytes, Release);
        true
    }

    /// Stores `data` from `at`, zero-padded to a word.
    #[inline(always)]
    fn put_data(&self, mut at: u64, data: &[u8]) {
        let mut chunks = data.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.word(at).store(u64::from_le_bytes(w), Relaxed);
            at += 8;
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            w[..rest.len()].copy_from_slice(rest);
            self.word(at).store(u64::from_le_bytes(w), Relaxed);
        }
    }

    /// Writer side: stores a record at `head` (room already checked, for a gap
    /// record by [`need`](Self::need) with `gap` true) and publishes it. `gap`:
    /// the record ends a run of drops, and carries the writer's `lost` count.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)] // the record's fields, on the hot path
    pub(crate) fn put(
        &self,
        mut head: u64,
        id: u16,
        tid: u32,
        ticks: u64,
        data: &[u8],
        trunc: bool,
        gap: Option<u64>,
    ) {
        let len = data.len();
        let bytes = record_size(len, gap.is_some());
        let to_end = self.cap - (head & (self.cap - 1));
        if bytes > to_end {
            self.word(head).store(PAD_ID as u64, Relaxed);
            head += to_end;
        }
        debug_assert!(len as u64 <= LEN_MASK);
        let w0 = id as u64
            | (len as u64) << 16
            | (gap.is_some() as u64) << 30
            | (trunc as u64) << 31
            | (tid as u64) << 32;
        self.word(head).store(w0, Relaxed);
        self.word(head + 8).store(ticks, Relaxed);
        self.put_data(head + 16, data);
        if let Some(lost) = gap {
            self.word(head + 8 * words_for(len)).store(lost, Relaxed);
        }
        self.head.0.store(head + bytes, Release);
        self.refresh_fast_end(head + bytes);
    }

    /// Writer side: sends the next record to the slow path ([`Self::put`]
    /// turns the fast path on again).
    #[inline]
    pub(crate) fn no_fast_path(&self) {
        self.fast_end.store(0, Relaxed);
    }

    /// Writer side: recomputes [`Self::fast_end`] for a writer at `head`: the
    /// first head where 24 bytes no longer fit before the end of the ring or
    /// within `soft` by the cached tail.
    #[inline]
    fn refresh_fast_end(&self, head: u64) {
        let end = if self.fast_ok {
            let lap_end = (head | self.mask) + 1;
            let ct = self.cached_tail.0.load(Relaxed);
            (lap_end - 24).min((ct + self.soft).saturating_sub(24)) + 1
        } else {
            0
        };
        self.fast_end.store(end, Relaxed);
    }

    /// Bytes a record of `len` data bytes needs at `head`, counting padding
    /// (`gap`: a gap record, with its loss count word).
    #[inline(always)]
    pub(crate) fn need(&self, head: u64, len: usize, gap: bool) -> u64 {
        let bytes = record_size(len, gap);
        let to_end = self.cap - (head & (self.cap - 1));
        if bytes > to_end {
            bytes + to_end
        } else {
            bytes
        }
    }

    /// Reader side: the timestamp of the oldest record, skipping padding.
    pub(crate) fn peek_ticks(&self) -> Option<u64> {
        loop {
            let t = self.tail.0.load(Acquire);
            let h = self.head.0.load(Acquire);
            if t == h {
                return None;
            }
            let w0 = self.word(t).load(Relaxed);
            if w0 as u16 == PAD_ID {
                let len = self.len_at(t, w0);
                let _ = self.tail.0.compare_exchange(t, t + len, AcqRel, Relaxed);
                continue;
            }
            let ticks = self.word(t + 8).load(Relaxed);
            if self.tail.0.load(Acquire) == t {
                return Some(ticks);
            }
        }
    }

    /// Reader side: copies and consumes the oldest record, with the ring's loss
    /// count as of its take ([`RawRecord::lost`]).
    pub(crate) fn pop(&self) -> Option<RawRecord> {
        loop {
            let t = self.tail.0.load(Acquire);
            let h = self.head.0.load(Acquire);
            if t == h {
                return None;
            }
            let w0 = self.word(t).load(Relaxed);
            let len = self.len_at(t, w0);
            if len > h - t || len > self.cap {
                // Torn by a concurrent overwrite: the CAS below would fail; retry.
                if self.tail.0.load(Acquire) == t {
                    return None;
                }
                continue;
            }
            if w0 as u16 == PAD_ID {
                let _ = self.tail.0.compare_exchange(t, t + len, AcqRel, Relaxed);
                continue;
            }
            // The losses before this record: every record before it was taken
            // or dropped before `t` was read (the tail only moves forward), and
            // a LOOP writer that dropped one has counted it once `dropping` is
            // clear. A drop after that would be of this record first, and the
            // CAS below would fail.
            let lost = self.settled_lost();
            let dlen = ((w0 >> 16) & LEN_MASK) as usize;
            let ticks = self.word(t + 8).load(Relaxed);
            let mut data = Vec::with_capacity(dlen.next_multiple_of(8));
            let mut at = t + 16;
            while data.len() < dlen {
                data.extend_from_slice(&self.word(at).load(Relaxed).to_le_bytes());
                at += 8;
            }
            data.truncate(dlen);
            // Read before the CAS frees the record's space to the writer.
            let gap = ((w0 >> 30) & 1 != 0).then(|| self.gap_lost(t, w0));
            if self
                .tail
                .0
                .compare_exchange(t, t + len, AcqRel, Relaxed)
                .is_ok()
            {
                return Some(RawRecord {
                    id: w0 as u16,
                    truncated: (w0 >> 31) & 1 != 0,
                    gap,
                    tid: (w0 >> 32) as u32,
                    thread: self.thread,
                    ticks,
                    data,
                    lost,
                });
            }
        }
    }

    /// Reader side, for a stream whose writer never moves the tail (FLUSH and
    /// UNTIL_FULL): the record at `pos` (`tail <= pos < head`, head loaded with
    /// Acquire): its first word, its timestamp and its size in bytes. Padding has
    /// id [`PAD_ID`] and no timestamp.
    #[inline]
    pub(crate) fn at(&self, pos: u64) -> (u64, u64, u64) {
        let w0 = self.word(pos).load(Relaxed);
        let len = self.len_at(pos, w0);
        if w0 as u16 == PAD_ID {
            return (w0, 0, len);
        }
        (w0, self.word(pos + 8).load(Relaxed), len)
    }

    /// Reader side, as [`at`](Self::at): the timestamp of the first record
    /// at or after `pos` (`tail <= pos`), if the writer has published one.
    pub(crate) fn next_ticks(&self, mut pos: u64) -> Option<u64> {
        let head = self.head.0.load(Acquire);
        while pos < head {
            let (w0, ticks, len) = self.at(pos);
            if w0 as u16 != PAD_ID {
                return Some(ticks);
            }
            pos += len;
        }
        None
    }

    /// The data length of a record from its first word.
    #[inline]
    pub(crate) fn data_len(&self, w0: u64) -> usize {
        ((w0 >> 16) & LEN_MASK) as usize
    }

    /// Reader side, as [`at`](Self::at): the first data word of the record at
    /// `pos` (meaningful for as many bytes as its data length, up to 8).
    #[inline]
    pub(crate) fn first_data_word(&self, pos: u64) -> u64 {
        self.word(pos + 16).load(Relaxed)
    }

    /// Reader side: appends the data of the record at `pos` (first word `w0`) to
    /// `out`.
    #[inline]
    pub(crate) fn data_into(&self, pos: u64, w0: u64, out: &mut Vec<u8>) {
        let dlen = ((w0 >> 16) & LEN_MASK) as usize;
        let start = out.len();
        let mut at = pos + 16;
        while out.len() - start < dlen {
            out.extend_from_slice(&self.word(at).load(Relaxed).to_le_bytes());
            at += 8;
        }
        out.truncate(start + dlen);
    }

    /// Reader side, as [`at`](Self::at): frees the records before `pos`.
    #[inline]
    pub(crate) fn set_tail(&self, pos: u64) {
        self.tail.0.store(pos, Release);
    }

    /// Reader side: drops every record, and returns the loss count that holds
    /// every event lost before the clear: a writer that was dropping as the
    /// clear ran has counted its drops by then, so that a reader that takes
    /// this count as reported reports none of them after the clear.
    ///
    /// A LOOP writer that is dropping when the clear moves the tail has set
    /// `dropping` before its first drop, which the tail's CAS orders before
    /// the clear's; its next CAS fails, it finds the ring empty, counts and
    /// clears the flag. A FLUSH or UNTIL_FULL writer about to drop an event
    /// has set it before its last look at the tail ([`begin_drop`](Self::begin_drop)),
    /// which the fence here orders against the flag's load. So the writer
    /// pays nothing for this: the clear waits. What the writer recorded
    /// meanwhile (UNTIL_FULL's STOP after the drop that filled it) came with
    /// the drop, before the clear, and is cleared with it.
    pub(crate) fn clear(&self) -> u64 {
        loop {
            loop {
                let t = self.tail.0.load(Acquire);
                let h = self.head.0.load(Acquire);
                if t == h || self.tail.0.compare_exchange(t, h, AcqRel, Relaxed).is_ok() {
                    break;
                }
            }
            fence(SeqCst);
            if !self.dropping.load(Acquire) {
                return self.lost.load(Acquire);
            }
            seam::at(Point::ClearWaitsForDrop);
            self.settled_lost();
        }
    }

    /// Test support: a LOOP writer partway through
    /// [`overwrite_oldest`](Self::overwrite_oldest): it has dropped the oldest
    /// record (returned: whether there was one) but not counted it yet.
    #[cfg(test)]
    pub(crate) fn drop_oldest_uncounted(&self) -> bool {
        self.dropping.store(true, Relaxed);
        let t = self.tail.0.load(Acquire);
        if t == self.head.0.load(Acquire) {
            return false;
        }
        let len = self.len_at(t, self.word(t).load(Relaxed));
        self.tail
            .0
            .compare_exchange(t, t + len, AcqRel, Relaxed)
            .is_ok()
    }

    /// Test support: the end of [`overwrite_oldest`](Self::overwrite_oldest)
    /// after [`drop_oldest_uncounted`](Self::drop_oldest_uncounted): counts
    /// `n` events lost at the writer's head and clears `dropping`.
    #[cfg(test)]
    pub(crate) fn count_dropped(&self, n: u64) {
        self.count_lost(self.head.0.load(Relaxed), n);
        self.dropping.store(false, Release);
    }
}

#[cfg(test)]
#[path = "ring_tests.rs"]
mod tests;
