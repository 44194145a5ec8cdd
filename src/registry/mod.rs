//! Per-process, shared-memory, seqlock-read registries that other processes read.
//!
//! This is the one mechanism behind [`crate::mark`] (thread fingerprints, kind
//! `"mark"`) and, later, tracked synchronisation objects (kind `"sync"`). A process
//! creates one registry file per kind; its threads claim fixed-size slots and write
//! them under a sequence counter; any process with read access to the file (root,
//! or the same user) lists all registries of a kind with [`scan`] and gets a
//! consistent copy of each live slot.
//!
//! # The file
//!
//! `/dev/shm/posixrt-<KIND>-<PID>-<STARTTIME>`, mode 0600, where `STARTTIME` is
//! field 22 of `/proc/<PID>/stat` (clock ticks since boot at process start), so a
//! recycled pid never matches an old file. It is created under a temporary name,
//! filled in, then renamed, so readers never see a half-written header. It is
//! removed at normal process exit (an `atexit` handler), and by the next [`scan`]
//! or [`Registry::create`] of the same kind once the process is gone (pid missing,
//! start time different, or a zombie). The owner also holds the file open
//! (close-on-exec) with an exclusive `flock` for its whole life, so a reader that
//! can take a shared lock knows the owner is gone even when the pid and start time
//! still match (the process called `exec`); [`scan`] removes such a file too. A
//! child created by `fork` lets go of its inherited reference to that lock at once
//! (a fork handler points its copy of the descriptor at `/dev/null`; the lock is
//! taken on a second, never-mapped open of the file, because an inherited
//! mapping would otherwise keep the locked file description alive), so a child
//! that keeps running cannot keep its parent's stale file alive, and dropping an
//! inherited [`Registry`] in a child never removes the parent's file.
//!
//! All integers are native-endian (readers run on the same machine).
//!
//! | offset | size | header field |
//! |---:|---:|---|
//! | 0 | 8 | magic `b"PRTREG\0\0"` |
//! | 8 | 4 | version (1) |
//! | 12 | 4 | header size (128) |
//! | 16 | 16 | kind, NUL-padded ASCII |
//! | 32 | 4 | pid |
//! | 36 | 4 | reserved (0) |
//! | 40 | 8 | process start time (clock ticks) |
//! | 48 | 4 | slot size in bytes (multiple of 64) |
//! | 52 | 4 | slot count |
//! | 56 | 4 | payload size in bytes (multiple of 8) |
//! | 60 | 4 | high water: slots `0..high_water` have ever been claimed (atomic) |
//! | 64 | 64 | reserved (0) |
//!
//! Slot `i` starts at `128 + i * slot_size`:
//!
//! | offset | size | slot field |
//! |---:|---:|---|
//! | 0 | 4 | sequence counter (atomic; odd while the owner writes) |
//! | 4 | 4 | state: 0 free, 1 reserved (invisible), 2 live |
//! | 8 | 4 | owner tid, or 0 for a slot owned by the process as a whole |
//! | 12 | 4 | reserved (0) |
//! | 16 | 8 | owner thread start time (field 22 of `/proc/<pid>/task/<tid>/stat`) |
//! | 24 | 8 | reserved (0) |
//! | 32 | payload size | payload, written and read as 64-bit words |
//!
//! # Writing and reading (the seqlock)
//!
//! Only the owner writes a slot. A write makes the counter odd (relaxed store, then
//! a release fence), stores the words (relaxed atomics), and makes it even again
//! (release store). A reader loads the counter (relaxed load, acquire fence),
//! retries while it is odd, copies state, owner and payload (relaxed atomic loads),
//! issues an acquire fence and reloads the counter: if it changed, the copy may be
//! torn and the reader retries (yielding the CPU every 64 attempts), for at most
//! [`RETRY_BUDGET`], then reports the slot as busy. This is the seed's "begin and
//! end serial numbers" proposal, made data-race free with atomics (the scheme of
//! Boehm, "Can seqlocks get along with programming language memory models?").
//!
//! Every access to the shared bytes is an atomic of at most 8 bytes, so there is no
//! data race even with a writer in another process. Readers map the file
//! read-only, and Rust defines only *relaxed* atomic loads on read-only memory, so
//! the reader side never uses an acquire load or a read-modify-write: it pairs
//! relaxed loads with acquire fences.
//!
//! If a writer panics inside [`SlotWriter::write`], the counter is still made even
//! (a drop guard), so readers do not treat the slot as busy forever; a slot whose
//! owner died mid-write (odd counter) is made consistent again when it is reclaimed.
//!
//! # Liveness
//!
//! A live slot with a non-zero owner tid is shown only if
//! `/proc/<pid>/task/<tid>/stat` exists, is not a zombie, and has the recorded start
//! time: a thread that vanished without freeing its slot (killed, or exited
//! through a raw `exit` syscall) is never shown as alive, and its slot is reclaimed
//! by the next [`Registry::claim`] that finds the registry full.

#![allow(clippy::len_without_is_empty)]

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::{Error, ErrorKind, Result};

/// The directory registry files live in.
pub const DIR: &str = "/dev/shm";
/// The file magic.
pub const MAGIC: [u8; 8] = *b"PRTREG\0\0";
/// The layout version.
pub const VERSION: u32 = 1;
/// Size of the file header.
pub const HEADER_SIZE: usize = 128;
/// Size of a slot's own header (before the payload).
pub const SLOT_HEADER_SIZE: usize = 32;
/// How many times a reader retries a slot whose copy was torn (see also
/// [`RETRY_BUDGET`]).
pub const MAX_RETRIES: u32 = 1_000_000;
/// How long a reader keeps retrying one slot before reporting it busy.
pub const RETRY_BUDGET: Duration = Duration::from_millis(2);

/// The largest slot a reader accepts (a corrupt or hostile header is refused).
const MAX_SLOT_SIZE: usize = 64 * 1024;
/// The most slots a reader walks in one registry.
const MAX_SLOT_COUNT: u32 = 1 << 20;

const STATE_FREE: u32 = 0;
const STATE_RESERVED: u32 = 1;
const STATE_LIVE: u32 = 2;

// Header offsets.
const H_VERSION: usize = 8;
const H_HEADER_SIZE: usize = 12;
const H_KIND: usize = 16;
const H_PID: usize = 32;
const H_START: usize = 40;
const H_SLOT_SIZE: usize = 48;
const H_SLOT_COUNT: usize = 52;
const H_PAYLOAD: usize = 56;
const H_HIGH_WATER: usize = 60;

// Slot offsets.
const S_SEQ: usize = 0;
const S_STATE: usize = 4;
const S_TID: usize = 8;
const S_TSTART: usize = 16;

/// A mapping of a registry file (read-write for the owner, read-only for readers).
struct Mapping {
    base: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain shared memory accessed only through atomics; the
// pointer may move between threads.
unsafe impl Send for Mapping {}
// SAFETY: as above: every access to the mapped bytes is an atomic operation.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn map(file: &File, len: usize, writable: bool) -> Result<Mapping> {
        use rustix::mm::{MapFlags, ProtFlags};
        let prot = if writable {
            ProtFlags::READ | ProtFlags::WRITE
        } else {
            ProtFlags::READ
        };
        // SAFETY: a fresh mapping chosen by the kernel (null hint) of a file we hold
        // open; it aliases no Rust object.
        let p =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, file, 0) }
                .map_err(|e| Error::from_errno("mmap", e.raw_os_error()))?;
        Ok(Mapping {
            base: p.cast(),
            len,
        })
    }

    /// The 32-bit atomic at `off`.
    #[inline]
    fn u32_at(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off % 4 == 0 && off + 4 <= self.len);
        // SAFETY: callers pass offsets inside the mapping (validated against the
        // header) and 4-aligned (the layout is 8-aligned and the base page-aligned);
        // the memory lives as long as `self`; all access to it is atomic (no plain
        // reads or writes, so no data race with writers in other processes), and on
        // a read-only mapping callers only do relaxed loads, the one atomic access
        // Rust defines on read-only memory.
        unsafe { &*self.base.add(off).cast::<AtomicU32>() }
    }

    /// The 64-bit atomic at `off`.
    #[inline]
    fn u64_at(&self, off: usize) -> &AtomicU64 {
        debug_assert!(off % 8 == 0 && off + 8 <= self.len);
        // SAFETY: as in `u32_at`, with 8-byte alignment.
        unsafe { &*self.base.add(off).cast::<AtomicU64>() }
    }

    fn load_bytes(&self, off: usize, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            let w = self
                .u32_at((off + i) & !3)
                .load(Ordering::Relaxed)
                .to_ne_bytes();
            *b = w[(off + i) & 3];
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`len` came from `mmap` and are unmapped once; references
        // into the mapping borrow `self`, so none outlives it.
        let _ = unsafe { rustix::mm::munmap(self.base.cast(), self.len) };
    }
}

/// Geometry of a registry: slot size and count for a payload size.
fn geometry(payload_size: usize, slot_count: u32) -> Result<(usize, usize, usize)> {
    // Readers refuse anything larger, so a writer must not create it.
    if payload_size > MAX_SLOT_SIZE - SLOT_HEADER_SIZE
        || slot_count == 0
        || slot_count > MAX_SLOT_COUNT
    {
        return Err(Error::invalid(
            "registry",
            format!(
                "{slot_count} slots of {payload_size} bytes: want 1 to {MAX_SLOT_COUNT} slots of at most {} bytes",
                MAX_SLOT_SIZE - SLOT_HEADER_SIZE
            ),
        ));
    }
    let payload = payload_size.div_ceil(8) * 8;
    let slot = (SLOT_HEADER_SIZE + payload).div_ceil(64) * 64;
    let total = slot_count as usize * slot + HEADER_SIZE;
    Ok((payload, slot, total))
}

fn kind_bytes(kind: &str) -> Result<[u8; 16]> {
    if kind.is_empty()
        || kind.len() > 15
        || !kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(Error::invalid(
            "registry",
            format!("kind {kind:?} must be 1 to 15 lowercase ASCII letters or digits"),
        ));
    }
    let mut k = [0u8; 16];
    k[..kind.len()].copy_from_slice(kind.as_bytes());
    Ok(k)
}

/// This process's registry of one kind: the writer side.
///
/// Create it once per process and kind (usually kept in a `static`); threads then
/// [`claim`](Registry::claim) slots. Dropping it unmaps and removes the file.
pub struct Registry {
    map: Mapping,
    /// Held open (close-on-exec) with an exclusive `flock` for the process's life:
    /// readers that can take a shared lock know the owner is gone (killed, or
    /// replaced by `exec`, which keeps the pid and start time). A separate open
    /// file description from the one mapped (see [`Registry::create`]).
    lock_file: File,
    path: PathBuf,
    pid: i32,
    starttime: u64,
    slot_size: usize,
    slot_count: u32,
    payload_size: usize,
}

impl Registry {
    /// Creates `/dev/shm/posixrt-<kind>-<pid>-<starttime>` (mode 0600) with
    /// `slot_count` slots holding `payload_size` bytes each (rounded up to 8), after
    /// removing files of dead processes of the same kind.
    ///
    /// The file is removed again when the process exits normally, or when this
    /// `Registry` is dropped.
    pub fn create(kind: &str, payload_size: usize, slot_count: u32) -> Result<Registry> {
        let kind_b = kind_bytes(kind)?;
        let (payload, slot, total) = geometry(payload_size, slot_count)?;
        // `after_fork_in_child` makes only async-signal-safe calls.
        crate::sys::fork::on_child(after_fork_in_child);
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let starttime = read_stat(&format!("/proc/{pid}/stat"))
            .map_err(|e| {
                e.with_message("reading this process's start time")
                    .with_hint(PROC_HINT)
            })?
            .starttime;
        let _ = cleanup(kind);

        let name = format!("posixrt-{kind}-{pid}-{starttime}");
        let path = Path::new(DIR).join(&name);
        let tmp = Path::new(DIR).join(format!(".{name}.tmp"));
        let _ = std::fs::remove_file(&tmp);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&tmp)
            .map_err(|e| {
                io_error("open", &e).with_message(format!("creating {}", tmp.display())).with_hint(
                    "posixrt registries live in /dev/shm: mount a tmpfs there (mount -t tmpfs tmpfs /dev/shm)",
                )
            })?;
        let fail = |e: Error| {
            let _ = std::fs::remove_file(&tmp);
            e
        };
        // The lock lives on a second open file description of the same inode, one
        // that is never mapped: a `flock` lasts until the last reference to its
        // description goes, and a mapping is such a reference. If the mapped
        // description held the lock, a forked child (which inherits the mapping)
        // would keep it alive after this process exec'd. Reopening through
        // /proc/self/fd names exactly this inode, whatever happens to the path.
        let lock_file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
            .map_err(|e| {
                fail(io_error("open", &e).with_message("reopening the registry to lock it"))
            })?;
        rustix::fs::flock(
            &lock_file,
            rustix::fs::FlockOperation::NonBlockingLockExclusive,
        )
        .map_err(|e| fail(Error::from_errno("flock", e.raw_os_error())))?;
        // umask can only clear bits, but make the mode exact anyway.
        rustix::fs::fchmod(&file, rustix::fs::Mode::from_raw_mode(0o600))
            .map_err(|e| fail(Error::from_errno("fchmod", e.raw_os_error())))?;
        rustix::fs::ftruncate(&file, total as u64).map_err(|e| {
            fail(
                Error::from_errno("ftruncate", e.raw_os_error())
                    .with_hint("/dev/shm is full or limited; free space there"),
            )
        })?;
        let map = Mapping::map(&file, total, true).map_err(fail)?;
        // Header (the file is fresh: all zero).
        for (i, chunk) in MAGIC.chunks(4).enumerate() {
            map.u32_at(i * 4).store(
                u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
                Ordering::Relaxed,
            );
        }
        map.u32_at(H_VERSION).store(VERSION, Ordering::Relaxed);
        map.u32_at(H_HEADER_SIZE)
            .store(HEADER_SIZE as u32, Ordering::Relaxed);
        for (i, chunk) in kind_b.chunks(4).enumerate() {
            map.u32_at(H_KIND + i * 4).store(
                u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]),
                Ordering::Relaxed,
            );
        }
        map.u32_at(H_PID).store(pid as u32, Ordering::Relaxed);
        map.u64_at(H_START).store(starttime, Ordering::Relaxed);
        map.u32_at(H_SLOT_SIZE)
            .store(slot as u32, Ordering::Relaxed);
        map.u32_at(H_SLOT_COUNT)
            .store(slot_count, Ordering::Relaxed);
        map.u32_at(H_PAYLOAD)
            .store(payload as u32, Ordering::Relaxed);
        map.u32_at(H_HIGH_WATER).store(0, Ordering::Release);
        std::fs::rename(&tmp, &path).map_err(|e| fail(io_error("rename", &e)))?;
        register_exit_unlink(&path, pid);
        track_lock_fd(lock_file.as_raw_fd());
        drop(file); // the mapping keeps the inode; the lock is on `lock_file`
        Ok(Registry {
            map,
            lock_file,
            path,
            pid,
            starttime,
            slot_size: slot,
            slot_count,
            payload_size: payload,
        })
    }

    /// The registry file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pid that created the registry.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// The creating process's start time (clock ticks since boot).
    pub fn starttime(&self) -> u64 {
        self.starttime
    }

    /// The number of slots.
    pub fn slot_count(&self) -> u32 {
        self.slot_count
    }

    /// The payload size of each slot, in bytes (a multiple of 8).
    pub fn payload_size(&self) -> usize {
        self.payload_size
    }

    /// The number of live (claimed and published) slots.
    pub fn live_slots(&self) -> usize {
        let hw = self.high_water();
        (0..hw)
            .filter(|&i| self.state(i).load(Ordering::Acquire) == STATE_LIVE)
            .count()
    }

    fn high_water(&self) -> u32 {
        self.map
            .u32_at(H_HIGH_WATER)
            .load(Ordering::Acquire)
            .min(self.slot_count)
    }

    fn slot_off(&self, i: u32) -> usize {
        HEADER_SIZE + i as usize * self.slot_size
    }

    fn state(&self, i: u32) -> &AtomicU32 {
        self.map.u32_at(self.slot_off(i) + S_STATE)
    }

    /// Claims a free slot for an owner: `tid` and its start time `thread_start`
    /// (see [`current_thread`]), or `tid == 0` for a slot owned by the process.
    ///
    /// The payload starts zeroed and the slot is live (visible to readers) when
    /// this returns. If every slot is taken, slots of threads that no longer exist
    /// are reclaimed; if none is, the error is
    /// [`OutOfResources`](crate::ErrorKind::OutOfResources).
    pub fn claim(&self, tid: i32, thread_start: u64) -> Result<SlotWriter<'_>> {
        let idx = self
            .reserve_free()
            .or_else(|| self.reserve_dead())
            .ok_or_else(|| {
                Error::new(
                    ErrorKind::OutOfResources,
                    "registry",
                    format!(
                        "all {} slots of {} are in use",
                        self.slot_count,
                        self.path.display()
                    ),
                )
                .with_hint("release slots you no longer need (threads that exit release theirs)")
            })?;
        self.map
            .u32_at(H_HIGH_WATER)
            .fetch_max(idx + 1, Ordering::AcqRel);
        let w = SlotWriter {
            reg: self,
            off: self.slot_off(idx),
            index: idx,
        };
        w.begin();
        let base = w.off;
        self.map
            .u32_at(base + S_TID)
            .store(tid as u32, Ordering::Relaxed);
        self.map
            .u64_at(base + S_TSTART)
            .store(thread_start, Ordering::Relaxed);
        for k in 0..self.payload_size / 8 {
            self.map
                .u64_at(base + SLOT_HEADER_SIZE + k * 8)
                .store(0, Ordering::Relaxed);
        }
        self.map
            .u32_at(base + S_STATE)
            .store(STATE_LIVE, Ordering::Relaxed);
        w.end();
        Ok(w)
    }

    fn reserve_free(&self) -> Option<u32> {
        (0..self.slot_count).find(|&i| {
            self.state(i)
                .compare_exchange(
                    STATE_FREE,
                    STATE_RESERVED,
                    Ordering::Acquire,
                    Ordering::Relaxed,
                )
                .is_ok()
        })
    }

    fn reserve_dead(&self) -> Option<u32> {
        (0..self.slot_count).find(|&i| {
            let off = self.slot_off(i);
            let tid = self.map.u32_at(off + S_TID).load(Ordering::Relaxed) as i32;
            let start = self.map.u64_at(off + S_TSTART).load(Ordering::Relaxed);
            tid != 0
                && self.state(i).load(Ordering::Acquire) == STATE_LIVE
                && !thread_alive(self.pid, tid, start)
                && self
                    .state(i)
                    .compare_exchange(
                        STATE_LIVE,
                        STATE_RESERVED,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
        })
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let fd = self.lock_file.as_raw_fd();
        for entry in &LOCK_FDS {
            let _ = entry.compare_exchange(fd, -1, Ordering::Relaxed, Ordering::Relaxed);
        }
        // A forked child's inherited copy must not remove the parent's file.
        if rustix::process::getpid().as_raw_nonzero().get() == self.pid {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("path", &self.path)
            .field("slot_count", &self.slot_count)
            .field("payload_size", &self.payload_size)
            .finish()
    }
}

/// The writer of one claimed slot. Only its owner writes; [`write`](SlotWriter::write)
/// wraps a change in the sequence counter so readers never keep a torn copy.
///
/// Dropping it does **not** free the slot (a thread-local may outlive the moment the
/// owner wants to let go); call [`release`](SlotWriter::release).
pub struct SlotWriter<'r> {
    reg: &'r Registry,
    off: usize,
    index: u32,
}

impl<'r> SlotWriter<'r> {
    /// The slot's index in the registry.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The registry the slot belongs to.
    pub fn registry(&self) -> &'r Registry {
        self.reg
    }

    #[inline]
    fn seq(&self) -> &AtomicU32 {
        self.reg.map.u32_at(self.off + S_SEQ)
    }

    /// Makes the counter odd. `| 1` also repairs a counter left odd by an owner
    /// that died mid-write (a reclaimed slot): the result is odd and differs from
    /// the old value either way.
    #[inline]
    fn begin(&self) {
        let s = self.seq().load(Ordering::Relaxed);
        self.seq().store(s.wrapping_add(1) | 1, Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Makes the (odd) counter even again, publishing the writes.
    #[inline]
    fn end(&self) {
        let s = self.seq().load(Ordering::Relaxed);
        self.seq().store(s.wrapping_add(1), Ordering::Release);
    }

    /// Changes the payload under the sequence counter: readers that overlap the
    /// change retry and see either all of it or none of it.
    ///
    /// If `f` panics, the counter is still closed (made even) while unwinding, so
    /// readers keep reading the slot (they may see the part `f` wrote).
    #[inline]
    pub fn write<R>(&mut self, f: impl FnOnce(&mut Payload<'_>) -> R) -> R {
        /// Closes the write on every exit, unwinding included.
        struct End<'w, 'r>(&'w SlotWriter<'r>);
        impl Drop for End<'_, '_> {
            #[inline]
            fn drop(&mut self) {
                self.0.end();
            }
        }
        self.begin();
        let end = End(self);
        let mut p = Payload {
            map: &end.0.reg.map,
            off: end.0.off + SLOT_HEADER_SIZE,
            len: end.0.reg.payload_size,
        };
        f(&mut p)
    }

    /// Reads the payload (the owner reads its own writes; no retry needed).
    #[inline]
    pub fn read<R>(&self, f: impl FnOnce(&Payload<'_>) -> R) -> R {
        f(&Payload {
            map: &self.reg.map,
            off: self.off + SLOT_HEADER_SIZE,
            len: self.reg.payload_size,
        })
    }

    /// Frees the slot: readers stop showing it at once; another owner may claim it.
    pub fn release(self) {
        self.begin();
        let m = &self.reg.map;
        m.u32_at(self.off + S_STATE)
            .store(STATE_RESERVED, Ordering::Relaxed);
        m.u32_at(self.off + S_TID).store(0, Ordering::Relaxed);
        m.u64_at(self.off + S_TSTART).store(0, Ordering::Relaxed);
        self.end();
        m.u32_at(self.off + S_STATE)
            .store(STATE_FREE, Ordering::Release);
    }
}

/// A slot's payload, as 64-bit words (byte access is built on them).
pub struct Payload<'a> {
    map: &'a Mapping,
    off: usize,
    len: usize,
}

impl Payload<'_> {
    /// The payload size in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Stores word `i` (byte offset `8 * i`).
    ///
    /// # Panics
    /// If the word is outside the payload (a bug in the caller's layout).
    #[inline]
    pub fn store_u64(&mut self, i: usize, v: u64) {
        assert!(i * 8 + 8 <= self.len, "payload word {i} out of range");
        self.map
            .u64_at(self.off + i * 8)
            .store(v, Ordering::Relaxed);
    }

    /// Loads word `i`.
    ///
    /// # Panics
    /// If the word is outside the payload.
    #[inline]
    pub fn load_u64(&self, i: usize) -> u64 {
        assert!(i * 8 + 8 <= self.len, "payload word {i} out of range");
        self.map.u64_at(self.off + i * 8).load(Ordering::Relaxed)
    }

    /// Stores `data` at byte offset `at` (edge words are merged).
    ///
    /// # Panics
    /// If the range is outside the payload.
    pub fn store_bytes(&mut self, at: usize, data: &[u8]) {
        assert!(
            at <= self.len && data.len() <= self.len - at,
            "payload bytes out of range"
        );
        let mut pos = at;
        let mut rest = data;
        while !rest.is_empty() {
            let w = pos / 8;
            let within = pos % 8;
            let n = (8 - within).min(rest.len());
            let v = if within == 0 && n == 8 {
                u64::from_ne_bytes([
                    rest[0], rest[1], rest[2], rest[3], rest[4], rest[5], rest[6], rest[7],
                ])
            } else {
                let mut b = self.load_u64(w).to_ne_bytes();
                b[within..within + n].copy_from_slice(&rest[..n]);
                u64::from_ne_bytes(b)
            };
            self.store_u64(w, v);
            pos += n;
            rest = &rest[n..];
        }
    }

    /// Loads bytes from offset `at` into `out`.
    ///
    /// # Panics
    /// If the range is outside the payload.
    pub fn load_bytes(&self, at: usize, out: &mut [u8]) {
        assert!(
            at <= self.len && out.len() <= self.len - at,
            "payload bytes out of range"
        );
        for (i, b) in out.iter_mut().enumerate() {
            let p = at + i;
            *b = self.load_u64(p / 8).to_ne_bytes()[p % 8];
        }
    }
}

// ---------------------------------------------------------------------------
// /proc helpers

/// Facts about a task (thread) or process from `/proc/.../stat` (see `proc(5)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskStat {
    /// The kernel name (`comm`, field 2), at most 15 bytes.
    pub comm: String,
    /// The state letter (field 3): R, S, D, Z, T, ...
    pub state: char,
    /// User-mode CPU time in clock ticks (field 14).
    pub utime: u64,
    /// Kernel-mode CPU time in clock ticks (field 15).
    pub stime: u64,
    /// Nice value (field 19).
    pub nice: i32,
    /// Start time in clock ticks since boot (field 22).
    pub starttime: u64,
    /// CPU last run on (field 39).
    pub processor: i32,
    /// Real-time priority, 0 for non-real-time policies (field 40).
    pub rt_priority: u32,
    /// Scheduling policy, `SCHED_*` (field 41).
    pub policy: u32,
}

impl TaskStat {
    /// Parses the text of a `stat` file.
    pub fn parse(text: &str) -> Option<TaskStat> {
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        let rest: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
        // rest[0] is field 3.
        let f = |n: usize| rest.get(n - 3).copied();
        Some(TaskStat {
            comm,
            state: f(3)?.chars().next()?,
            utime: f(14)?.parse().ok()?,
            stime: f(15)?.parse().ok()?,
            nice: f(19)?.parse().ok()?,
            starttime: f(22)?.parse().ok()?,
            processor: f(39)?.parse().ok()?,
            rt_priority: f(40)?.parse().ok()?,
            policy: f(41)?.parse().ok()?,
        })
    }

    /// Whether the task is dead or a zombie.
    pub fn is_dead(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }

    /// User CPU time.
    pub fn user_time(&self) -> Duration {
        ticks(self.utime)
    }

    /// System CPU time.
    pub fn system_time(&self) -> Duration {
        ticks(self.stime)
    }
}

fn ticks(t: u64) -> Duration {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    Duration::from_nanos(t.saturating_mul(1_000_000_000) / hz)
}

fn io_error(call: &'static str, e: &std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(errno) => Error::from_errno(call, errno),
        None => Error::new(ErrorKind::Other, call, e.to_string()),
    }
}

fn read_stat(path: &str) -> Result<TaskStat> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error("read", &e))?;
    TaskStat::parse(&text)
        .ok_or_else(|| Error::new(ErrorKind::Corrupt, "read", format!("cannot parse {path}")))
}

/// The calling thread's tid and start time, as [`Registry::claim`] wants them.
pub fn current_thread() -> Result<(i32, u64)> {
    let tid = crate::sys::tid::current() as i32;
    let st = read_stat("/proc/thread-self/stat").map_err(|e| e.with_hint(PROC_HINT))?;
    Ok((tid, st.starttime))
}

const PROC_HINT: &str =
    "registries name processes and threads by their /proc start time: mount /proc (mount -t proc proc /proc)";

fn thread_alive(pid: i32, tid: i32, start: u64) -> bool {
    matches!(read_stat(&format!("/proc/{pid}/task/{tid}/stat")),
        Ok(st) if st.starttime == start && !st.is_dead())
}

// ---------------------------------------------------------------------------
// Fork generation

static GENERATION: AtomicU32 = AtomicU32::new(0);

/// The descriptors (`-1`: free entry) through which this process holds the
/// `flock` of its registry files, so that a forked child can let go of its
/// inherited references: a `flock` belongs to the open file description, which
/// `fork` shares, so without this a child that outlives its parent's `exec` would
/// keep the parent's stale file looking owned. (More than 8 registries in one
/// process keep working; the extra ones just lack this fork clean-up.)
static LOCK_FDS: [AtomicI32; 8] = [const { AtomicI32::new(-1) }; 8];

fn track_lock_fd(fd: i32) {
    for entry in &LOCK_FDS {
        if entry
            .compare_exchange(-1, fd, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
    }
}

/// Runs in the child of every `fork`, where only async-signal-safe calls are
/// allowed (the parent may be multi-threaded): an atomic increment, and `open`,
/// `dup3` and `close`.
fn after_fork_in_child() {
    GENERATION.fetch_add(1, Ordering::Relaxed);
    for entry in &LOCK_FDS {
        let fd = entry.swap(-1, Ordering::Relaxed);
        if fd >= 0 {
            release_inherited_lock(fd);
        }
    }
}

/// Points the child's copy of a registry descriptor at `/dev/null`. `dup3`
/// replaces it atomically, dropping this process's reference to the registry's
/// open file description (and so to the parent's `flock`), while the descriptor
/// number stays open, so the `File` that owns it still closes a valid descriptor.
fn release_inherited_lock(fd: i32) {
    // SAFETY: `open` gets a NUL-terminated literal path; `dup3` targets `fd`, a
    // descriptor this process owns (the child's copy of a registry `File`), and
    // keeps it open; `close` closes only the temporary descriptor just opened.
    // All three are async-signal-safe, as a fork child handler requires.
    unsafe {
        let nul = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
        if nul >= 0 {
            libc::dup3(nul, fd, libc::O_CLOEXEC);
            libc::close(nul);
        }
    }
}

/// A counter bumped in the child of every `fork` (once a registry was created).
///
/// A forked child inherits the parent's registry mapping and any [`SlotWriter`]
/// kept in thread-local or static storage, but those slots belong to the parent's
/// file: writing them would change the parent's entries. Record the generation
/// with a cached writer and compare before use (one relaxed load); on a mismatch,
/// forget the writer without releasing it and create this process's own
/// [`Registry`].
#[inline]
pub fn generation() -> u32 {
    GENERATION.load(Ordering::Relaxed)
}

// ---------------------------------------------------------------------------
// Exit clean-up

static EXIT_PATHS: Mutex<Vec<(CString, i32)>> = Mutex::new(Vec::new());

extern "C" fn unlink_at_exit() {
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    if let Ok(paths) = EXIT_PATHS.try_lock() {
        for (p, owner) in paths.iter() {
            if *owner == pid {
                // SAFETY: `p` is a valid NUL-terminated path.
                unsafe { libc::unlink(p.as_ptr()) };
            }
        }
    }
}

fn register_exit_unlink(path: &Path, pid: i32) {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return;
    };
    let Ok(mut paths) = EXIT_PATHS.lock() else {
        return;
    };
    if paths.is_empty() {
        // SAFETY: registering a plain `extern "C"` function with no captured state.
        unsafe { libc::atexit(unlink_at_exit) };
    }
    paths.push((c, pid));
}

// ---------------------------------------------------------------------------
// Reader

/// A consistent copy of one live slot.
#[derive(Debug, Clone)]
pub struct SlotCopy {
    /// The slot index.
    pub index: u32,
    /// The owner tid (0: owned by the process).
    pub tid: i32,
    /// The owner's start time.
    pub thread_start: u64,
    /// The payload bytes.
    pub payload: Vec<u8>,
    /// The owner thread's `/proc/<pid>/task/<tid>/stat` (None for process-owned slots).
    pub task: Option<TaskStat>,
}

/// One process's registry, as read by [`scan`].
#[derive(Debug, Clone)]
pub struct ProcessEntry {
    /// The pid.
    pub pid: i32,
    /// The process start time (clock ticks since boot).
    pub starttime: u64,
    /// The executable (`/proc/<pid>/exe`), or the first word of its command line,
    /// or `"(n/a)"`.
    pub exe: String,
    /// The process's `/proc/<pid>/stat`.
    pub stat: TaskStat,
    /// The live slots whose owners are alive.
    pub slots: Vec<SlotCopy>,
}

/// What [`scan`] found.
#[derive(Debug, Clone, Default)]
pub struct Scan {
    /// Processes with a registry of the kind, by pid.
    pub processes: Vec<ProcessEntry>,
    /// Registries that could not be opened or mapped (permissions), were malformed
    /// or owned by a user the process does not run as, or belong to a process this
    /// reader cannot see (`/proc` with `hidepid`) or to a dead process whose file
    /// only its user or root may remove.
    pub unreadable: usize,
    /// Files of dead processes removed during the scan.
    pub removed: usize,
    /// Slots skipped because they changed on every read for [`RETRY_BUDGET`].
    pub busy: usize,
}

#[derive(Clone, Copy)]
struct FileName {
    pid: i32,
    starttime: u64,
}

fn parse_name(kind: &str, name: &[u8]) -> Option<FileName> {
    let name = std::str::from_utf8(name).ok()?;
    let rest = name
        .strip_prefix("posixrt-")?
        .strip_prefix(kind)?
        .strip_prefix('-')?;
    let (pid, start) = rest.split_once('-')?;
    Some(FileName {
        pid: pid.parse().ok()?,
        starttime: start.parse().ok()?,
    })
}

/// Removes registry files of `kind` whose process is gone; returns how many.
pub fn cleanup(kind: &str) -> Result<usize> {
    let mut removed = 0;
    for_each_file(kind, |path, name| {
        if process_state(name) == Liveness::Dead && std::fs::remove_file(path).is_ok() {
            removed += 1;
        }
    })?;
    Ok(removed)
}

#[derive(PartialEq)]
enum Liveness {
    Alive(TaskStat),
    Dead,
    Unknown,
}

fn process_state(name: &FileName) -> Liveness {
    match read_stat(&format!("/proc/{}/stat", name.pid)) {
        Ok(st) if st.starttime == name.starttime && !st.is_dead() => Liveness::Alive(st),
        Ok(_) => Liveness::Dead,
        Err(e) if e.kind() == ErrorKind::NotFound => Liveness::Dead,
        Err(_) => Liveness::Unknown,
    }
}

fn for_each_file(kind: &str, mut f: impl FnMut(&Path, &FileName)) -> Result<()> {
    let dir = match std::fs::read_dir(DIR) {
        Ok(d) => d,
        // No /dev/shm: nobody can have a registry.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(io_error("opendir", &e).with_message(format!("listing {DIR}")));
        }
    };
    for ent in dir.flatten() {
        let name = ent.file_name();
        if let Some(parsed) = parse_name(kind, name.as_bytes()) {
            f(&ent.path(), &parsed);
        }
    }
    Ok(())
}

/// Lists every process's registry of `kind` (or only `pid`'s), with a consistent
/// copy of each live slot whose owner is alive, and removes files of dead
/// processes on the way. Processes are sorted by pid, slots by index.
pub fn scan(kind: &str, pid: Option<i32>) -> Result<Scan> {
    let kind_b = kind_bytes(kind)?;
    let mut out = Scan::default();
    let mut found = Vec::new();
    for_each_file(kind, |path, name| {
        if pid.map_or(true, |p| p == name.pid) {
            found.push((path.to_path_buf(), *name));
        }
    })?;
    for (path, name) in found {
        match process_state(&name) {
            Liveness::Dead => match std::fs::remove_file(&path) {
                Ok(()) => out.removed += 1,
                // Another user's file in the sticky /dev/shm: either its process
                // is hidden from us (/proc mounted with hidepid) or it is dead and
                // only its user or root may remove it. Either way: skipped.
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => out.unreadable += 1,
                Err(_) => {} // removed meanwhile by another reader
            },
            Liveness::Unknown => out.unreadable += 1,
            Liveness::Alive(stat) => match read_file(&path, &kind_b, &name) {
                FileRead::Stale => {
                    if std::fs::remove_file(&path).is_ok() {
                        out.removed += 1;
                    }
                }
                FileRead::Ok(slots, busy) => {
                    out.busy += busy;
                    out.processes.push(ProcessEntry {
                        pid: name.pid,
                        starttime: name.starttime,
                        exe: process_exe(name.pid),
                        stat,
                        slots,
                    });
                }
                FileRead::Unreadable => out.unreadable += 1,
            },
        }
    }
    out.processes.sort_by_key(|p| p.pid);
    Ok(out)
}

fn process_exe(pid: i32) -> String {
    if let Ok(p) = std::fs::read_link(format!("/proc/{pid}/exe")) {
        return p.to_string_lossy().into_owned();
    }
    if let Ok(c) = std::fs::read(format!("/proc/{pid}/cmdline")) {
        if let Some(first) = c.split(|&b| b == 0).next().filter(|s| !s.is_empty()) {
            return String::from_utf8_lossy(first).into_owned();
        }
    }
    "(n/a)".to_string()
}

enum FileRead {
    Ok(Vec<SlotCopy>, usize),
    /// The owner no longer holds its lock: it exec'd (same pid and start time).
    Stale,
    Unreadable,
}

/// Opens one file, checks that its owner still holds it, maps it read-only,
/// validates it, and copies its live slots.
fn read_file(path: &Path, kind: &[u8; 16], name: &FileName) -> FileRead {
    // O_NONBLOCK: /dev/shm is world-writable, and opening a FIFO planted under a
    // registry name would otherwise block the reader (tfp) forever. Only regular
    // files are read.
    let Ok(file) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    else {
        return FileRead::Unreadable;
    };
    // The file must belong to root or to one of the process's user ids: another
    // user could plant a file under a live process's name (to show made-up marks
    // for it, or to make the reader walk a huge fake registry).
    match rustix::fs::fstat(&file) {
        Ok(st)
            if st.st_mode & libc::S_IFMT == libc::S_IFREG
                && (st.st_uid == 0
                    || process_uids(name.pid).is_some_and(|u| u.contains(&st.st_uid))) => {}
        _ => return FileRead::Unreadable,
    }
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => {} // the owner holds it: alive
        Ok(()) => return FileRead::Stale,
        Err(_) => return FileRead::Unreadable,
    }
    match map_and_copy(&file, kind, name) {
        Some((slots, busy)) => FileRead::Ok(slots, busy),
        None => FileRead::Unreadable,
    }
}

/// The real, effective, saved and filesystem user ids of a process
/// (`/proc/<pid>/status`, line `Uid:`).
fn process_uids(pid: i32) -> Option<[u32; 4]> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = text.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut ids = line.split_whitespace().map(|w| w.parse::<u32>().ok());
    Some([ids.next()??, ids.next()??, ids.next()??, ids.next()??])
}

fn map_and_copy(file: &File, kind: &[u8; 16], name: &FileName) -> Option<(Vec<SlotCopy>, usize)> {
    let len = usize::try_from(rustix::fs::fstat(file.as_fd()).ok()?.st_size).ok()?;
    if len < HEADER_SIZE {
        return None;
    }
    let map = Mapping::map(file, len, false).ok()?;
    let mut magic = [0u8; 8];
    map.load_bytes(0, &mut magic);
    let mut k = [0u8; 16];
    map.load_bytes(H_KIND, &mut k);
    let get = |o| map.u32_at(o).load(Ordering::Relaxed);
    if magic != MAGIC
        || get(H_VERSION) != VERSION
        || get(H_HEADER_SIZE) as usize != HEADER_SIZE
        || &k != kind
        || get(H_PID) as i32 != name.pid
        || map.u64_at(H_START).load(Ordering::Relaxed) != name.starttime
    {
        return None;
    }
    let slot_size = get(H_SLOT_SIZE) as usize;
    let slot_count = get(H_SLOT_COUNT);
    let payload = get(H_PAYLOAD) as usize;
    if slot_size % 64 != 0
        || slot_size > MAX_SLOT_SIZE
        || slot_count > MAX_SLOT_COUNT
        || payload % 8 != 0
        || SLOT_HEADER_SIZE + payload > slot_size
        || (slot_count as usize)
            .checked_mul(slot_size)
            .and_then(|v| v.checked_add(HEADER_SIZE))
            .map_or(true, |need| need > len)
    {
        return None;
    }
    // The reader's mapping is read-only: Rust only defines atomic *relaxed* loads
    // of at most 8 bytes on read-only memory (see `std::sync::atomic`, "Atomic
    // accesses to read-only memory"), so every reader-side acquire is a relaxed
    // load followed by an acquire fence, which orders the same way.
    let hw = map
        .u32_at(H_HIGH_WATER)
        .load(Ordering::Relaxed)
        .min(slot_count);
    fence(Ordering::Acquire);
    let mut slots = Vec::new();
    let mut busy = 0;
    for i in 0..hw {
        let off = HEADER_SIZE + i as usize * slot_size;
        match copy_slot(&map, off, payload) {
            Copied::Live(tid, start, bytes) => {
                let task = if tid == 0 {
                    None
                } else {
                    match read_stat(&format!("/proc/{}/task/{tid}/stat", name.pid)) {
                        Ok(st) if st.starttime == start && !st.is_dead() => Some(st),
                        _ => continue, // the owner thread is gone
                    }
                };
                slots.push(SlotCopy {
                    index: i,
                    tid,
                    thread_start: start,
                    payload: bytes,
                    task,
                });
            }
            Copied::Free => {}
            Copied::Busy => busy += 1,
        }
    }
    Some((slots, busy))
}

enum Copied {
    Live(i32, u64, Vec<u8>),
    Free,
    Busy,
}

fn copy_slot(map: &Mapping, off: usize, payload: usize) -> Copied {
    let seq = map.u32_at(off + S_SEQ);
    let mut words = vec![0u64; payload / 8];
    let mut started: Option<std::time::Instant> = None;
    for attempt in 0..MAX_RETRIES {
        if attempt > 0 && attempt % 64 == 0 {
            // A writer rewriting the slot in a tight loop can starve the copy; give
            // it the CPU now and then, and give up after a time budget.
            let t0 = *started.get_or_insert_with(std::time::Instant::now);
            if t0.elapsed() > RETRY_BUDGET {
                break;
            }
            std::thread::yield_now();
        }
        // Relaxed + acquire fence, not an acquire load: see `map_and_copy`.
        let s1 = seq.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        if s1 & 1 == 1 {
            std::hint::spin_loop();
            continue;
        }
        let state = map.u32_at(off + S_STATE).load(Ordering::Relaxed);
        let tid = map.u32_at(off + S_TID).load(Ordering::Relaxed) as i32;
        let start = map.u64_at(off + S_TSTART).load(Ordering::Relaxed);
        if state == STATE_LIVE {
            for (k, w) in words.iter_mut().enumerate() {
                *w = map
                    .u64_at(off + SLOT_HEADER_SIZE + k * 8)
                    .load(Ordering::Relaxed);
            }
        }
        fence(Ordering::Acquire);
        if seq.load(Ordering::Relaxed) != s1 {
            continue;
        }
        if state != STATE_LIVE {
            return Copied::Free;
        }
        let bytes = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        return Copied::Live(tid, start, bytes);
    }
    Copied::Busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parse_handles_parens_in_comm() {
        let t = "123 (a) b) (c) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 20 -5 1 0 98765 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 1 50 1 0 0";
        let st = TaskStat::parse(t).unwrap();
        assert_eq!(st.comm, "a) b) (c");
        assert_eq!(st.state, 'S');
        assert_eq!((st.utime, st.stime), (11, 12));
        assert_eq!(st.nice, -5);
        assert_eq!(st.starttime, 98765);
        assert_eq!((st.processor, st.rt_priority, st.policy), (1, 50, 1));
    }

    #[test]
    fn names_and_kinds() {
        let n = parse_name("mark", b"posixrt-mark-42-1234").unwrap();
        assert_eq!((n.pid, n.starttime), (42, 1234));
        assert!(parse_name("mark", b"posixrt-sync-42-1234").is_none());
        assert!(parse_name("mark", b".posixrt-mark-42-1234.tmp").is_none());
        assert!(kind_bytes("Mark").is_err());
        assert!(kind_bytes("").is_err());
        assert!(kind_bytes("sync").is_ok());
        for (payload, slots) in [(usize::MAX, 1), (MAX_SLOT_SIZE, 1), (8, 0), (8, u32::MAX)] {
            let e = geometry(payload, slots).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{payload} x {slots}");
        }
        assert_eq!(geometry(20, 8).unwrap(), (24, 64, 128 + 8 * 64));
    }

    #[test]
    fn write_scan_release() {
        let reg = Registry::create("regtest", 20, 8).unwrap();
        assert_eq!(reg.payload_size(), 24);
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        w.write(|p| {
            p.store_bytes(3, b"hello world");
            p.store_u64(2, 0xdead_beef);
        });
        let mut p2 = reg.claim(0, 0).unwrap();
        p2.write(|p| p.store_bytes(0, b"process"));
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes.len(), 1);
        let e = &s.processes[0];
        assert_eq!(e.slots.len(), 2);
        assert_eq!(&e.slots[0].payload[3..14], b"hello world");
        assert_eq!(e.slots[0].tid, tid);
        assert!(e.slots[0].task.is_some());
        assert_eq!(&e.slots[1].payload[..7], b"process");
        assert!(e.slots[1].task.is_none());
        w.release();
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes[0].slots.len(), 1);
        // a dead owner (tid that does not exist) is hidden and reclaimable
        let ghost = reg.claim(i32::MAX - 1, 1).unwrap();
        let _ = ghost.index();
        let s = scan("regtest", Some(reg.pid())).unwrap();
        assert_eq!(s.processes[0].slots.len(), 1);
        let mut held = Vec::new();
        while let Ok(w) = reg.claim(tid, start) {
            held.push(w);
            assert!(held.len() <= 8);
        }
        assert_eq!(held.len(), 7, "the ghost's slot was reclaimed");
        let path = reg.path().to_path_buf();
        drop(held);
        drop(reg);
        assert!(!path.exists());
    }

    #[test]
    fn panicking_writer_still_closes_the_counter() {
        let reg = Registry::create("regpanic", 16, 2).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            w.write(|p| {
                p.store_u64(0, 7);
                p.store_u64(5, 1); // out of range: panics mid-write
            })
        }));
        assert!(r.is_err());
        let s = scan("regpanic", Some(reg.pid())).unwrap();
        assert_eq!(s.busy, 0, "the counter was left odd");
        assert_eq!(s.processes[0].slots.len(), 1);
        assert_eq!(s.processes[0].slots[0].payload[..8], 7u64.to_ne_bytes());
    }

    #[test]
    fn reclaimed_slot_with_odd_counter_is_repaired() {
        let reg = Registry::create("regodd", 16, 1).unwrap();
        let ghost = reg.claim(i32::MAX - 1, 1).unwrap();
        ghost.begin(); // its owner "dies" mid-write: the counter stays odd
        let (tid, start) = current_thread().unwrap();
        let mut w = reg
            .claim(tid, start)
            .expect("the dead owner's slot is reclaimed");
        assert_eq!(w.index(), 0);
        w.write(|p| p.store_u64(0, 9));
        let s = scan("regodd", Some(reg.pid())).unwrap();
        assert_eq!(s.busy, 0, "the reclaimed slot's counter is consistent");
        assert_eq!(s.processes[0].slots.len(), 1);
        assert_eq!(s.processes[0].slots[0].payload[..8], 9u64.to_ne_bytes());
    }

    #[test]
    fn a_planted_fifo_does_not_block_the_reader() {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let start = read_stat("/proc/self/stat").unwrap().starttime;
        let path = Path::new(DIR).join(format!("posixrt-fifotest-{pid}-{start}"));
        let _ = std::fs::remove_file(&path);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(scan("fifotest", Some(pid))));
        let got = rx.recv_timeout(Duration::from_secs(20));
        let _ = std::fs::remove_file(&path);
        let s = got.expect("scan blocked on a FIFO").unwrap();
        assert!(s.processes.is_empty());
        assert_eq!(s.unreadable, 1);
    }

    #[test]
    fn a_file_owned_by_another_user_is_not_trusted() {
        let reg = Registry::create("uidtest", 16, 2).unwrap();
        let (tid, start) = current_thread().unwrap();
        let mut w = reg.claim(tid, start).unwrap();
        w.write(|p| p.store_u64(0, 1));
        assert_eq!(scan("uidtest", Some(reg.pid())).unwrap().processes.len(), 1);
        // Hand the file to `nobody`, as if that user had planted it under our name.
        let nobody = Some(rustix::process::Uid::from_raw(65534));
        match rustix::fs::chown(reg.path(), nobody, None) {
            Ok(()) => {
                let s = scan("uidtest", Some(reg.pid())).unwrap();
                assert!(s.processes.is_empty(), "{s:?}");
                assert_eq!(s.unreadable, 1);
            }
            Err(e) => {
                println!("skip: chown needs root ({e})");
                assert_eq!(e, rustix::io::Errno::PERM);
            }
        }
    }
}
